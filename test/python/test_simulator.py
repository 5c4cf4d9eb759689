"""The simulator, the report and the trace (runtime/simulator.py, report.py, trace.py).

Tiny ascend programs whose timelines are worked out by hand here: each op's cycles come from
the cost model's formulas with the 910B2 figures written out below (docs/device.md), and the
expected schedule is derived from the rules in docs/report.md, not read back from the
simulator."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from geir.ir.text import parse_module
from geir.runtime.ascend_interpreter import ascend_input_specs
from geir.target.device import load_device
from geir.runtime.report import UNIT_RATIOS, build_report, format_report
from geir.runtime.simulator import SimulationError, profile, record, simulate
from geir.runtime.trace import chrome_trace, write_trace
from geir.dialects import make_context

PROGRAMS = Path(__file__).resolve().parents[1] / "dialects" / "ascend"

# 910B2 figures (ascend910b.json) used by the hand-computed timelines.
CLOCK = 1.8e9                    # cube and vector clock
LAUNCH_US = 5.9                  # launch_overhead_us
DISPATCH = 2000                  # block_dispatch_cycles
TILE = 16 * 256 * 2              # a 16x256 f16 tile, 8192 bytes
MTE2 = TILE // 128 + 100         # gm->ub 128 B/cycle + 100 start-up = 164
MTE3 = TILE // 64 + 100          # ub->gm 64 B/cycle + 100 start-up = 228
VADD = TILE // 256 * 2 + 6       # binary: 2 cycles per 256-byte repeat + 6 = 70
VMULS = TILE // 256 * 1 + 6      # unary f16: 1 cycle per repeat + 6 = 38


def us(cycles: float) -> float:
    return cycles / CLOCK * 1e6


def feeds_for(module, seed=0):
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(s).astype(d) for n, s, d in ascend_input_specs(module)}


def run(text: str, **kw):
    module = parse_module(text, make_context())
    outputs, sim = profile(module, feeds_for(module), **kw)
    return module, outputs, sim


TYPES = """
!gm = memref<{rows}x256xf16, "gm">
!ub = memref<16x256xf16, "ub">
!tile = memref<16x256xf16, strided<[256, 1], offset: ?>, "gm">
"""


def add_kernel(name: str, tiles: int = 1, flags: bool = True, block_dim: int = 1, loc: str = "",
               attrs: str = "", x_rows: int | None = None, x_at: str = "%row",
               z_rows: int | None = None, z_at: str = "%row") -> str:
    """z = x + x over `tiles` 16x256 tiles per block, single-buffered: copy in (MTE2), vadd (V),
    copy out (MTE3). Without `flags` the MTE2 -> V flag is missing. Tile i of a block reads x
    and writes z at row `x_at` / `z_at` (default: the block's own rows; `%i` is the tile's row
    within the block), of `x_rows` / `z_rows` rows (default: every block's tiles)."""
    rows = 16 * tiles * block_dim
    x_rows, z_rows = x_rows or rows, z_rows or rows
    mte2_v = "ascend.set_flag MTE2 -> V id 0\n    ascend.wait_flag MTE2 -> V id 0" if flags else ""
    return f"""
ascend.kernel @{name}(%x: memref<{x_rows}x256xf16, "gm">, %z: memref<{z_rows}x256xf16, "gm">)
    attributes {{core_type = "vector", block_dim = {block_dim} : i64{attrs}}} {{
  %block = ascend.block_idx
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %cn = arith.constant {16 * tiles} : index
  %base = arith.muli %block, %cn : index
  %xu = ascend.alloc {{offset = 0 : i64}} : !ub
  %zu = ascend.alloc {{offset = 8192 : i64}} : !ub
  ascend.set_flag MTE3 -> MTE2 id 0
  scf.for %i = %c0 to %cn step %c16 {{
    %row = arith.addi %base, %i : index
    %xt = memref.subview %x[{x_at}, 0] [16, 256] [1, 1] : memref<{x_rows}x256xf16, "gm"> to !tile
    %zt = memref.subview %z[{z_at}, 0] [16, 256] [1, 1] : memref<{z_rows}x256xf16, "gm"> to !tile
    ascend.wait_flag MTE3 -> MTE2 id 0
    ascend.copy %xt, %xu : !tile to !ub
    {mte2_v}
    ascend.vadd %xu, %xu, %zu : !ub
    ascend.set_flag V -> MTE3 id 0
    ascend.wait_flag V -> MTE3 id 0
    ascend.copy %zu, %zt : !ub to !tile
    ascend.set_flag MTE3 -> MTE2 id 0
  }}
  ascend.wait_flag MTE3 -> MTE2 id 0
  ascend.return
}} {loc}
"""


def launch_program(name: str, kernel: str, x_rows: int, z_rows: int) -> str:
    """@main launching the add-kernel `kernel` (@name) once on x [x_rows, 256] into z [z_rows, 256]."""
    gx, gz = f"memref<{x_rows}x256xf16, \"gm\">", f"memref<{z_rows}x256xf16, \"gm\">"
    return TYPES.format(rows=x_rows) + kernel + f"""
func.func @main(%x: {gx} {{onnx.name = "x"}}, %z: {gz} {{onnx.name = "z", ascend.output}}) {{
  %s = ascend.stream 0
  ascend.launch @{name} on %s(%x, %z) : ({gx}, {gz})
  func.return
}}
"""


def one_kernel_program(tiles=1, flags=True, block_dim=1, loc="") -> str:
    rows = 16 * tiles * block_dim
    return launch_program("add", add_kernel("add", tiles, flags, block_dim, loc), rows, rows)


# ---------------------------------------------------------------------------
# (1) One kernel: copy, vadd, copy in sequence.
# ---------------------------------------------------------------------------


def test_one_vector_kernel_is_launch_plus_sum():
    module, outputs, sim = run(one_kernel_program())
    x = feeds_for(module)["x"]
    np.testing.assert_array_equal(outputs["z"], x + x)
    # flags chain MTE2 -> V -> MTE3: nothing overlaps
    assert sim.latency_us == pytest.approx(LAUNCH_US + us(DISPATCH + MTE2 + VADD + MTE3))
    (k,) = sim.kernels
    assert (k.name, k.stream, k.block_dim, k.cores, k.waves) == ("add", 0, 1, 1, 1)
    assert k.start_us == 0 and k.exec_start_us == pytest.approx(LAUNCH_US)
    assert k.pipe_busy_us == pytest.approx({"MTE2": us(MTE2), "V": us(VADD), "MTE3": us(MTE3)})
    assert k.bound == "launch"          # 7 us of launch against 0.26 us of DMA
    assert k.hbm_bytes == 2 * TILE and k.footprint_bytes == 2 * TILE
    spans = {sp.pipe: (sp.start_us, sp.end_us) for _, block in k.core0 for sp in block.spans}
    assert spans["V"][0] == pytest.approx(spans["MTE2"][1])   # V starts when the copy is in
    assert spans["MTE3"][0] == pytest.approx(spans["V"][1])
    assert sim.races == []


def test_plain_trace_events_time_the_same():
    """The simulator also takes the interpreter's plain TraceEvents (then without races)."""
    from geir.runtime.ascend_interpreter import run_ascend_module

    module = parse_module(one_kernel_program(tiles=2), make_context())
    events = []
    run_ascend_module(module, feeds_for(module), trace=events)
    _, recs = record(module, feeds_for(module))
    assert simulate(events).latency_us == pytest.approx(simulate(recs).latency_us)


def test_blocks_run_in_waves_and_share_hbm():
    """96 blocks on 48 AIV cores: two waves; the 48 concurrent blocks share the HBM bandwidth,
    so each block's gm copies run at 1.6 TB/s / 48 instead of the engine's rate."""
    _, _, sim = run(one_kernel_program(block_dim=96))
    (k,) = sim.kernels
    assert (k.cores, k.waves, k.vector_cores, k.cube_cores) == (48, 2, 48, 0)
    share = 1.6e12 / CLOCK / 48                 # bytes per cycle per block, < 128 and < 64
    mte2 = math.ceil(TILE / share) + 100
    mte3 = math.ceil(TILE / share) + 100
    block = DISPATCH + mte2 + VADD + mte3
    assert k.exec_us == pytest.approx(us(2 * block))
    assert sim.latency_us == pytest.approx(LAUNCH_US + us(2 * block))
    assert k.launch_us == pytest.approx(LAUNCH_US + us(2 * DISPATCH))
    # whole-run HBM traffic never beats the bandwidth
    assert k.hbm_bytes / (k.exec_us * 1e-6) <= 1.6e12 * (1 + 1e-9)


def test_a_last_partial_wave_moves_at_its_own_share():
    """72 blocks on 48 AIV cores: the first wave's 48 blocks share the bandwidth, the second
    wave's 24 run alone, so they share it among 24: each block is timed at the mean number
    of blocks moving gm bytes beside it (not at the 48 the kernel can hold at once)."""
    _, _, sim = run(one_kernel_program(block_dim=72))
    (k,) = sim.kernels
    assert (k.cores, k.waves) == (48, 2)

    def block(movers: int) -> int:
        share = 1.6e12 / CLOCK / movers        # bytes per cycle per block, < 128 and < 64
        return DISPATCH + 2 * (math.ceil(TILE / share) + 100) + VADD

    assert k.exec_us == pytest.approx(us(block(48) + block(24)))
    assert k.exec_us < us(2 * block(48))


def test_a_tile_every_block_reads_hits_l2():
    """48 blocks each read the same 16x256 tile of x and write their own tile of z. The first
    read of x's bytes comes from HBM, the other 47 from L2 (the footprint fits in 192 MiB):
    each block's copy in moves 1/48 of its bytes at its share of HBM and 47/48 at its share
    of L2's 4.59 TB/s (CostModel.l2_hit_fraction, gm_cycles). The writes go to HBM."""
    blocks = 48
    text = launch_program("bcast", add_kernel("bcast", block_dim=blocks, x_rows=16, x_at="%i"), 16, 16 * blocks)
    module, outputs, sim = run(text)
    x = feeds_for(module)["x"]
    np.testing.assert_array_equal(outputs["z"], np.tile(x + x, (blocks, 1)))
    (k,) = sim.kernels
    hit = (blocks - 1) / blocks
    assert k.l2_hit_bytes == round(blocks * TILE * hit)
    assert k.hbm_bytes == TILE + blocks * TILE       # x once, z written
    hbm, l2 = 1.6e12 / CLOCK / blocks, 4.59e12 / CLOCK / blocks   # bytes per cycle per block
    mte2 = math.ceil(TILE * (1 - hit) / hbm + TILE * hit / l2) + 100
    mte3 = math.ceil(TILE / hbm) + 100
    assert k.pipe_busy_us["MTE2"] == pytest.approx(blocks * us(mte2))
    assert k.exec_us == pytest.approx(us(DISPATCH + mte2 + VADD + mte3))
    report = build_report(sim, module)
    assert report["l2_hit_bytes"] == k.l2_hit_bytes and report["kernels"][0]["l2_hit_bytes"] == k.l2_hit_bytes
    assert report["hbm_bytes"] == k.hbm_bytes


def test_a_tile_written_again_hits_l2():
    """One block writes its four sums to the same tile of z (a scratch reused per tile): the
    first write is priced at HBM (its write-back), the three others hit L2."""
    text = launch_program("again", add_kernel("again", tiles=4, z_rows=16, z_at="0"), 64, 16)
    module, outputs, sim = run(text)
    x = feeds_for(module)["x"]
    np.testing.assert_array_equal(outputs["z"], (x + x)[48:])
    (k,) = sim.kernels
    assert k.l2_hit_bytes == 3 * TILE and k.hbm_bytes == 4 * TILE + TILE


def handoff_program(tiles: int, scratch: bool, written: bool = True) -> str:
    """z = x + x over `tiles` 16x256 tiles, each sum handed off through one gm tile %w (written
    by MTE3, read back by MTE2, then copied out): %w is the kernel's own scratch
    (`geir.scratch`) or, without `scratch`, a second output. Not `written`: the kernel only
    reads %w (what an earlier kernel staged there), z = %w per tile."""
    rows = 16 * tiles
    gm, w = f'memref<{rows}x256xf16, "gm">', 'memref<16x256xf16, "gm">'
    attr = ", geir.scratch = 1 : i64" if scratch else ""
    kernel = f"""
ascend.kernel @handoff(%x: {gm}, %z: {gm}, %w: {w})
    attributes {{core_type = "vector", block_dim = 1 : i64{attr}}} {{
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %cn = arith.constant {rows} : index
  %xu = ascend.alloc {{offset = 0 : i64}} : !ub
  %zu = ascend.alloc {{offset = 8192 : i64}} : !ub
  scf.for %i = %c0 to %cn step %c16 {{
    %xt = memref.subview %x[%i, 0] [16, 256] [1, 1] : {gm} to !tile
    %zt = memref.subview %z[%i, 0] [16, 256] [1, 1] : {gm} to !tile
    ascend.copy %xt, %xu : !tile to !ub
    ascend.pipe_barrier ALL
    ascend.vadd %xu, %xu, %zu : !ub
    ascend.pipe_barrier ALL
    {"ascend.copy %zu, %w : !ub to " + w if written else ""}
    ascend.pipe_barrier ALL
    ascend.copy %w, %xu : {w} to !ub
    ascend.pipe_barrier ALL
    ascend.copy %xu, %zt : !ub to !tile
    ascend.pipe_barrier ALL
  }}
  ascend.return
}}
"""
    host_w = f"  %w = ascend.alloc : {w}\n" if scratch else ""
    w_arg = "" if scratch else f', %w: {w} {{onnx.name = "w", ascend.output}}'
    return TYPES.format(rows=rows) + kernel + f"""
func.func @main(%x: {gm} {{onnx.name = "x"}}, %z: {gm} {{onnx.name = "z", ascend.output}}{w_arg}) {{
  %s = ascend.stream 0
{host_w}  ascend.launch @handoff on %s(%x, %z, %w) : ({gm}, {gm}, {w})
  func.return
}}
"""


def test_a_scratch_hand_off_hits_l2_at_its_reuse_distance():
    """A kernel's footprint (64 tiles of x, 64 of z, the hand-off tile: 129 tiles) over an L2
    of 8 tiles: x and z are touched once each, and the hand-off tile is written and read back
    64 times. As the kernel's own scratch, the bytes moved between two touches of it are its
    1 tile x 256 tiles of traffic / 128 of scratch traffic = 2 tiles (CostModel.scratch_reuse_bytes),
    under L2: every read of it and every write but the first hit, and HBM moves the footprint
    once. As a plain output, the footprint decides: only 8/129 of its 126 re-touches hit."""
    import dataclasses

    device = dataclasses.replace(load_device("ascend910b"), l2_bytes=8 * TILE)
    module, outputs, sim = run(handoff_program(64, scratch=True), device=device)
    x = feeds_for(module)["x"]
    np.testing.assert_array_equal(outputs["z"], x + x)
    (k,) = sim.kernels
    assert k.footprint_bytes == 129 * TILE
    assert k.l2_hit_bytes == 127 * TILE and k.hbm_bytes == 129 * TILE
    _, _, plain = run(handoff_program(64, scratch=False), device=device)
    (p,) = plain.kernels
    assert p.footprint_bytes == 129 * TILE
    assert p.l2_hit_bytes == round(126 * TILE * 8 / 129)


def test_a_scratch_read_the_kernel_did_not_write_is_a_first_touch():
    """A kernel that only reads its scratch tile (a chain's last kernel reading what the others
    staged there): its first read of each byte comes from HBM (what other kernels left in a
    kernel's scratch is not counted), the 63 re-reads hit at the scratch's reuse distance (1 tile x 192
    tiles of traffic / 64 of scratch = 3 tiles, under L2's 8)."""
    import dataclasses

    device = dataclasses.replace(load_device("ascend910b"), l2_bytes=8 * TILE)
    _, _, sim = run(handoff_program(64, scratch=True, written=False), device=device, timing=True)
    (k,) = sim.kernels
    assert k.footprint_bytes == 129 * TILE
    assert k.l2_hit_bytes == 63 * TILE and k.hbm_bytes == 129 * TILE


def test_a_kernel_that_reads_each_byte_once_hits_nothing():
    _, _, sim = run(one_kernel_program(tiles=4, block_dim=8))
    (k,) = sim.kernels
    assert k.l2_hit_bytes == 0 and k.hbm_bytes == 2 * 8 * 4 * TILE


def chain_program(tiles: int, streams: int = 1, event: bool = False, between: int = 0) -> str:
    """@p: t = x + x, then @q: z = t + t (each `tiles` tiles, one block), t a buffer of @main.
    With `between` > 0, @r (a kernel of `between` tiles of its own buffers) runs between them.
    With two `streams`, @q reads x instead (@p's input), on stream 1; with `event`, after
    stream 1 waits for the event stream 0 records after @p."""
    rows = 16 * tiles
    gm = f'memref<{rows}x256xf16, "gm">'
    text = TYPES.format(rows=rows) + add_kernel("p", tiles) + add_kernel("q", tiles)
    host = ""
    if between:
        gb = f'memref<{16 * between}x256xf16, "gm">'
        text += add_kernel("r", between)
        host = (f"  %u = ascend.alloc : {gb}\n  %v = ascend.alloc : {gb}\n"
                f"  ascend.launch @r on %s0(%u, %v) : ({gb}, {gb})\n")
    q_in, q_stream = ("%x", "%s1") if streams == 2 else ("%t", "%s0")
    sync = "  ascend.event_record %e on %s0\n  ascend.event_wait %e on %s1\n" if event else ""
    return text + f"""
func.func @main(%x: {gm} {{onnx.name = "x"}}, %z: {gm} {{onnx.name = "z", ascend.output}}) {{
  %s0 = ascend.stream 0
  %s1 = ascend.stream 1
  %e = ascend.event 0
  %t = ascend.alloc : {gm}
  ascend.launch @p on %s0(%x, %t) : ({gm}, {gm})
{host}{sync}  ascend.launch @q on {q_stream}({q_in}, %z) : ({gm}, {gm})
  func.return
}}
"""


def test_what_the_last_kernel_wrote_is_read_from_l2():
    """@q reads the 4 tiles @p wrote just before it: L2 allocates on writes, and @p's
    footprint (8 tiles) fits, so each of @q's reads hits L2; HBM moves only @q's writes. The
    kernel's lower bound prices those bytes at L2 speed too, so no bound the report states
    breaks. With L2 one tile short of @p's footprint, the LRU has evicted them: no hit."""
    import dataclasses

    from geir.runtime.report import check_bounds

    module, outputs, sim = run(chain_program(4))
    x = feeds_for(module)["x"]
    np.testing.assert_array_equal(outputs["z"], (x + x) * 2)
    p, q = sim.kernels
    assert p.l2_hit_bytes == 0 and p.hbm_bytes == 8 * TILE
    assert q.l2_hit_bytes == 4 * TILE and q.hbm_bytes == 4 * TILE
    assert check_bounds(build_report(sim, module)) == []
    small = dataclasses.replace(load_device("ascend910b"), l2_bytes=8 * TILE - 1)
    _, _, cold = run(chain_program(4), device=small)
    assert [k.l2_hit_bytes for k in cold.kernels] == [0, 0]


def test_a_kernel_between_that_fills_l2_evicts_what_the_producer_wrote():
    """@r (4 tiles in, 4 out) runs between @p and @q: @p's 8 tiles and @r's 8 fit an L2 of 16
    tiles, so @q still hits; an L2 of 15 tiles holds less than what was touched since @p
    wrote t (the sum of the footprints: a byte touched twice counts twice), so @q misses."""
    import dataclasses

    device = load_device("ascend910b")
    _, _, fits = run(chain_program(4, between=4), device=dataclasses.replace(device, l2_bytes=16 * TILE))
    assert {k.name: k.l2_hit_bytes for k in fits.kernels} == {"p": 0, "r": 0, "q": 4 * TILE}
    _, _, over = run(chain_program(4, between=4), device=dataclasses.replace(device, l2_bytes=15 * TILE))
    assert {k.name: k.l2_hit_bytes for k in over.kernels} == {"p": 0, "r": 0, "q": 0}


def test_a_kernel_on_another_stream_leaves_l2_only_once_an_event_orders_it():
    """@p (stream 0) and @q (stream 1) both read x. Unordered they run side by side and each
    reads x from HBM; once stream 1 waits for @p's event, @q finds x in L2."""
    _, _, side = run(chain_program(4, streams=2))
    assert [k.l2_hit_bytes for k in side.kernels] == [0, 0]
    _, _, ordered = run(chain_program(4, streams=2, event=True))
    assert {k.name: k.l2_hit_bytes for k in ordered.kernels} == {"p": 0, "q": 4 * TILE}


# ---------------------------------------------------------------------------
# (2) Two streams and an event.
# ---------------------------------------------------------------------------


def two_stream_program(loc: str = "") -> str:
    """@long (4 tiles) on stream 0 and @short (1 tile) on stream 1 run at once; stream 1 then
    waits for the event stream 0 records after @long, and runs @tail on @long's output."""
    g4, g1 = "memref<64x256xf16, \"gm\">", "memref<16x256xf16, \"gm\">"
    text = TYPES.format(rows=16)
    text += add_kernel("long", tiles=4, loc=loc)
    text += add_kernel("short", tiles=1)
    text += add_kernel("tail", tiles=4)
    return text + f"""
func.func @main(%x: {g4} {{onnx.name = "x"}}, %y: {g1} {{onnx.name = "y"}},
                %a: {g4} {{onnx.name = "a", ascend.output}}, %b: {g1} {{onnx.name = "b", ascend.output}},
                %c: {g4} {{onnx.name = "c", ascend.output}}) {{
  %s0 = ascend.stream 0
  %s1 = ascend.stream 1
  %e = ascend.event 0
  ascend.launch @long on %s0(%x, %a) : ({g4}, {g4})
  ascend.event_record %e on %s0
  ascend.launch @short on %s1(%y, %b) : ({g1}, {g1})
  ascend.event_wait %e on %s1
  ascend.launch @tail on %s1(%a, %c) : ({g4}, {g4})
  func.return
}}
"""


def test_two_streams_overlap_and_the_event_orders_them():
    module, outputs, sim = run(two_stream_program())
    feeds = feeds_for(module)
    np.testing.assert_array_equal(outputs["c"], (feeds["x"] + feeds["x"]) * 2)
    k = {r.name: r for r in sim.kernels}
    tile = MTE2 + VADD + MTE3            # single-buffered: tiles run back to back
    long_t = LAUNCH_US + us(DISPATCH + 4 * tile)
    short_t = LAUNCH_US + us(DISPATCH + tile)
    # the independent kernels start together on their streams and overlap
    assert k["long"].start_us == 0 and k["short"].start_us == 0
    assert k["long"].end_us == pytest.approx(long_t)
    assert k["short"].end_us == pytest.approx(short_t)
    # the waiting kernel starts when the recorded one ends, not when its own stream is free
    assert k["tail"].start_us == pytest.approx(k["long"].end_us)
    assert k["tail"].start_us > k["short"].end_us
    assert sim.latency_us == pytest.approx(2 * long_t)
    assert sim.latency_us < sum(r.time_us for r in sim.kernels)
    assert k["tail"].deps == (0, 1)     # @long through the event, @short through stream 1
    waits = [sp for sp in sim.timeline if sp.name == "wait event 0"]
    assert len(waits) == 1 and waits[0].start_us == pytest.approx(short_t)
    report = build_report(sim, module)
    # streams busy: long + short + tail over the latency
    assert report["stream_concurrency"] == pytest.approx((2 * long_t + short_t) / (2 * long_t))
    # the critical path follows the event: @long then @tail
    crit = report["roofline"]["critical_path_us"]
    assert crit == pytest.approx(k["long"].lower_bound_us + k["tail"].lower_bound_us)


def test_concurrent_kernels_share_hbm():
    """Two DMA-heavy 24-block kernels on two streams: together they demand more than the HBM
    bandwidth, so each progresses at its fair share and both take longer than alone."""
    gm = "memref<6144x256xf16, \"gm\">"
    text = TYPES.format(rows=6144) + add_kernel("p", tiles=16, block_dim=24) + add_kernel("q", tiles=16, block_dim=24)
    alone = text + f"""
func.func @main(%x: {gm} {{onnx.name = "x"}}, %z: {gm} {{onnx.name = "z", ascend.output}}) {{
  %s = ascend.stream 0
  ascend.launch @p on %s(%x, %z) : ({gm}, {gm})
  func.return
}}
"""
    both = text + f"""
func.func @main(%x: {gm} {{onnx.name = "x"}}, %z: {gm} {{onnx.name = "z", ascend.output}},
                %w: {gm} {{onnx.name = "w", ascend.output}}) {{
  %s0 = ascend.stream 0
  %s1 = ascend.stream 1
  ascend.launch @p on %s0(%x, %z) : ({gm}, {gm})
  ascend.launch @q on %s1(%x, %w) : ({gm}, {gm})
  func.return
}}
"""
    _, _, one = run(alone)
    _, _, two = run(both)
    (p1,) = one.kernels
    p2, q2 = two.kernels
    demand = p1.hbm_bytes / (p1.exec_us * 1e-6)
    assert 0.5 * 1.6e12 < demand <= 1.6e12 * (1 + 1e-9)   # alone, one kernel nearly fills HBM
    # together: the two (identical) kernels split the bandwidth, so each slows to 1.6 TB/s / 2
    assert p2.exec_us == pytest.approx(q2.exec_us)
    assert p2.exec_us == pytest.approx(p1.exec_us * 2 * demand / 1.6e12)
    assert (p2.hbm_bytes + q2.hbm_bytes) / (p2.exec_us * 1e-6) == pytest.approx(1.6e12)


# ---------------------------------------------------------------------------
# (3) Double buffering.
# ---------------------------------------------------------------------------


def scale_program(double: bool, tiles: int = 4) -> str:
    """z = 2x over `tiles` 16x256 tiles: copy in, vmuls in place, copy out. Single-buffered:
    one ub buffer, flags id 0. Double-buffered: ping/pong buffers with flags id 0 / id 1."""
    rows = 16 * tiles
    gm = f"memref<{rows}x256xf16, \"gm\">"

    def stage(buf: str, ident: int, off: str) -> str:
        return f"""
    %r{ident} = arith.addi %i, {off} : index
    %xt{ident} = memref.subview %x[%r{ident}, 0] [16, 256] [1, 1] : {gm} to !tile
    %zt{ident} = memref.subview %z[%r{ident}, 0] [16, 256] [1, 1] : {gm} to !tile
    ascend.wait_flag MTE3 -> MTE2 id {ident}
    ascend.copy %xt{ident}, {buf} : !tile to !ub
    ascend.set_flag MTE2 -> V id {ident}
    ascend.wait_flag MTE2 -> V id {ident}
    ascend.vmuls {buf}, %two, {buf} : !ub, f16, !ub
    ascend.set_flag V -> MTE3 id {ident}
    ascend.wait_flag V -> MTE3 id {ident}
    ascend.copy {buf}, %zt{ident} : !ub to !tile
    ascend.set_flag MTE3 -> MTE2 id {ident}"""

    if double:
        body = stage("%ping", 0, "%c0") + stage("%pong", 1, "%c16")
        step, ids = 32, (0, 1)
    else:
        body = stage("%ping", 0, "%c0")
        step, ids = 16, (0,)
    sets = "\n".join(f"  ascend.set_flag MTE3 -> MTE2 id {i}" for i in ids)
    waits = "\n".join(f"  ascend.wait_flag MTE3 -> MTE2 id {i}" for i in ids)
    return TYPES.format(rows=rows) + f"""
ascend.kernel @scale(%x: {gm}, %z: {gm}) attributes {{core_type = "vector", block_dim = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %step = arith.constant {step} : index
  %n = arith.constant {rows} : index
  %two = arith.constant 2.0 : f16
  %ping = ascend.alloc {{offset = 0 : i64}} : !ub
  %pong = ascend.alloc {{offset = 8192 : i64}} : !ub
{sets}
  scf.for %i = %c0 to %n step %step {{{body}
  }}
{waits}
  ascend.return
}}
func.func @main(%x: {gm} {{onnx.name = "x"}}, %z: {gm} {{onnx.name = "z", ascend.output}}) {{
  %s = ascend.stream 0
  ascend.launch @scale on %s(%x, %z) : ({gm}, {gm})
  func.return
}}
"""


def pipe_spans(sim, pipe):
    (k,) = sim.kernels
    return [sp for _, block in k.core0 for sp in block.spans if sp.pipe == pipe]


def test_double_buffering_overlaps_mte2_with_v():
    m1, out1, single = run(scale_program(double=False))
    m2, out2, double = run(scale_program(double=True))
    x = feeds_for(m1)["x"]
    np.testing.assert_array_equal(out1["z"], x * np.float16(2))
    np.testing.assert_array_equal(out2["z"], x * np.float16(2))
    # single-buffered: every tile waits for the previous tile to leave ub
    assert single.latency_us == pytest.approx(LAUNCH_US + us(DISPATCH + 4 * (MTE2 + VMULS + MTE3)))
    # double-buffered: MTE3 (228 cycles a tile) is the bottleneck once the pipeline is full:
    # first tile in (164) and scaled (38), then four tiles out back to back
    assert MTE3 > MTE2 > VMULS
    assert double.latency_us == pytest.approx(LAUNCH_US + us(DISPATCH + MTE2 + VMULS + 4 * MTE3))
    assert double.latency_us < single.latency_us
    # the timeline: the copy-in of tile 1 (pong) runs while V scales tile 0 (ping)
    mte2, v = pipe_spans(double, "MTE2"), pipe_spans(double, "V")
    assert mte2[1].start_us < v[0].end_us and v[0].start_us < mte2[1].end_us
    assert mte2[1].start_us == pytest.approx(mte2[0].end_us)   # back to back on MTE2
    # and none of that in the single-buffered loop
    mte2, v = pipe_spans(single, "MTE2"), pipe_spans(single, "V")
    assert mte2[1].start_us >= v[0].end_us
    assert single.races == [] and double.races == []


# ---------------------------------------------------------------------------
# (4) A missing flag is a race.
# ---------------------------------------------------------------------------


def test_missing_flag_is_a_race():
    module, _, sim = run(one_kernel_program(flags=False))
    (race,) = sim.races
    assert race.kernel == "add" and race.block == 0
    assert "ascend.copy" in race.first and race.first_pipe == "MTE2"
    assert "ascend.vadd" in race.second and race.second_pipe == "V"
    assert race.kind == "read-after-write"
    assert race.buffer == "%xu (ub bytes [0, 8192))"
    assert "no flag ordering them" in str(race)
    # without the flag, V runs ahead of the copy: the vadd starts at 0 with the copy
    (k,) = sim.kernels
    starts = {sp.pipe: sp.start_us for _, b in k.core0 for sp in b.spans}
    assert starts["V"] == starts["MTE2"] == 0
    report = build_report(sim, module)
    assert report["race_count"] == 1 and report["races"][0]["buffer"] == race.buffer
    assert "races (1):" in format_report(report)
    with pytest.raises(SimulationError, match="race in @add"):
        profile(module, feeds_for(module), strict=True)


def test_tiles_of_one_buffer_that_do_not_overlap_do_not_race():
    """Two halves of one ub buffer, filled by MTE2 and read by V with no flag between the
    copy of the second half and the vadd of the first: the bytes are disjoint, no race; the
    vadd of the second half, with no flag either, races with its copy."""
    text = """
!gm = memref<16x256xf16, "gm">
!ub = memref<16x256xf16, "ub">
!half = memref<16x128xf16, strided<[256, 1], offset: ?>, "ub">
!ghalf = memref<16x128xf16, strided<[256, 1], offset: ?>, "gm">
ascend.kernel @k(%x: !gm, %z: !gm) attributes {core_type = "vector", block_dim = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %buf = ascend.alloc {offset = 0 : i64} : !ub
  %out = ascend.alloc {offset = 8192 : i64} : !ub
  %x0 = memref.subview %x[0, %c0] [16, 128] [1, 1] : !gm to !ghalf
  %x1 = memref.subview %x[0, %c128] [16, 128] [1, 1] : !gm to !ghalf
  %b0 = memref.subview %buf[0, %c0] [16, 128] [1, 1] : !ub to !half
  %b1 = memref.subview %buf[0, %c128] [16, 128] [1, 1] : !ub to !half
  %o0 = memref.subview %out[0, %c0] [16, 128] [1, 1] : !ub to !half
  %o1 = memref.subview %out[0, %c128] [16, 128] [1, 1] : !ub to !half
  ascend.copy %x0, %b0 : !ghalf to !half
  ascend.set_flag MTE2 -> V id 0
  ascend.copy %x1, %b1 : !ghalf to !half
  ascend.wait_flag MTE2 -> V id 0
  ascend.vadd %b0, %b0, %o0 : !half
  ascend.vadd %b1, %b1, %o1 : !half
  ascend.set_flag V -> MTE3 id 0
  ascend.wait_flag V -> MTE3 id 0
  ascend.copy %out, %z : !ub to !gm
  ascend.return
}
func.func @main(%x: !gm {onnx.name = "x"}, %z: !gm {onnx.name = "z", ascend.output}) {
  %s = ascend.stream 0
  ascend.launch @k on %s(%x, %z) : (!gm, !gm)
  func.return
}
"""
    _, _, sim = run(text)
    (race,) = sim.races
    assert race.buffer.startswith("%buf (ub bytes [256, ")   # row 0 of the second half
    assert "ascend.vadd" in race.second


# ---------------------------------------------------------------------------
# (5) The trace.
# ---------------------------------------------------------------------------


def test_chrome_trace_loads_with_tracks_and_events(tmp_path):
    module, _, sim = run(two_stream_program(loc='loc(fused["Add_0", "Relu_1"])'))
    path = tmp_path / "trace.json"
    write_trace(sim, str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert trace == json.loads(json.dumps(chrome_trace(sim)))
    for e in events:
        assert e["ph"] in ("M", "X", "i") and e["pid"] == 0
        if e["ph"] == "X":
            assert e["dur"] >= 0 and e["ts"] >= 0 and isinstance(e["tid"], int)
    meta = {(e["name"], e.get("tid")): e["args"] for e in events if e["ph"] == "M"}
    assert meta["process_name", None]["name"] == "ascend910b (Ascend910B2)"
    threads = {tid: args["name"] for (name, tid), args in meta.items() if name == "thread_name"}
    assert {"stream 0", "stream 1", "stream 0 MTE2", "stream 0 V", "stream 0 MTE3",
            "stream 1 MTE2", "stream 1 V", "stream 1 MTE3"} == set(threads.values())
    by_name = {v: k for k, v in threads.items()}
    kernels = [e for e in events if e.get("cat") == "kernel"]
    # kernels are named by their fused ONNX nodes (or their symbol without a location)
    assert sorted(e["name"] for e in kernels) == ["Add_0, Relu_1", "short", "tail"]
    long_ = next(e for e in kernels if e["name"] == "Add_0, Relu_1")
    assert long_["tid"] == by_name["stream 0"] and long_["args"]["bound"] == "launch"
    assert long_["args"]["nodes"] == ["Add_0", "Relu_1"] and long_["args"]["hbm_bytes"] == 8 * TILE
    assert long_["dur"] == pytest.approx(sim.kernels[0].time_us, abs=1e-5)
    # pipe tracks hold the ops of the kernels' first core, inside their kernel
    copies = [e for e in events if e["ph"] == "X" and e["tid"] == by_name["stream 0 MTE2"]]
    assert len(copies) == 4 and all(e["args"]["bytes"] == TILE for e in copies)
    assert all(long_["ts"] <= e["ts"] and e["ts"] + e["dur"] <= long_["ts"] + long_["dur"] + 1e-5 for e in copies)
    assert any(e["ph"] == "i" and e["name"] == "record event 0" for e in events)
    assert any(e["ph"] == "X" and e["name"] == "wait event 0" for e in events)


# ---------------------------------------------------------------------------
# (6) The report.
# ---------------------------------------------------------------------------

REPORT_KEYS = {
    "latency_us": float, "roofline_bound_us": float, "peak_memory_bytes": int,
    "memory_lower_bound_bytes": int, "no_reuse_memory_bytes": int, "kernels": list,
    "fusion_rate": float, "memory_reuse_rate": float, "layout_conversion_share": float,
    "stream_concurrency": float, **{name: float for name in UNIT_RATIOS},
}
KERNEL_KEYS = {"name": str, "nodes": list, "stream": int, "start_us": float, "end_us": float,
               "time_us": float, "bound": str, "block_dim": int, "lower_bound_us": float,
               "hbm_bytes": int, "pipe_busy_us": dict}


def test_report_keys_and_types(tmp_path):
    module = parse_module((PROGRAMS / "matmul.mlir").read_text(), make_context())
    _, sim = profile(module, feeds_for(module))
    report = json.loads(json.dumps(build_report(sim, module)))   # JSON-clean
    for key, kind in REPORT_KEYS.items():
        assert isinstance(report[key], kind), key
    for entry in report["kernels"]:
        for key, kind in KERNEL_KEYS.items():
            assert isinstance(entry[key], kind), key
        assert entry["bound"] in ("cube", "vector", "dma", "scalar", "launch")
    # matmul.mlir: 32x32x32 f16 = 65536 FLOPs; I/O 2 x 2 KiB f16 in + 4 KiB f32 out
    assert report["roofline"]["cube_flops"] == 2 * 32 * 32 * 32
    assert report["peak_memory_bytes"] == report["no_reuse_memory_bytes"] == 8192
    assert report["roofline"]["hbm_us"] == pytest.approx(8192 / 1.6e12 * 1e6)
    assert report["roofline_bound_us"] == max(report["roofline"][k] for k in ("cube_us", "hbm_us", "critical_path_us"))
    assert report["latency_us"] >= report["roofline_bound_us"]
    assert report["aiv_vec_ratio"] == 0.0 and 0 < report["aic_mac_ratio"] < 1
    assert report["fusion_rate"] == 0.0 and report["layout_conversion_share"] == 0.0
    text = format_report(report)
    for word in ("latency", "roofline bound", "peak memory", "@matmul", "aic_mac_ratio"):
        assert word in text


def test_memory_keys_from_the_workspace_plan():
    """Three 8 KiB gm intermediates planned into a 16 KiB workspace: a live a second time
    while b is live, c reusing a's slot. The lower bound is the planner's: two buffers live at once."""
    gm = "memref<16x256xf16, \"gm\">"
    text = TYPES.format(rows=16) + add_kernel("add") + f"""
func.func @main(%x: {gm} {{onnx.name = "x"}}, %z: {gm} {{onnx.name = "z", ascend.output}},
                %ws: memref<16384xi8, "gm"> {{ascend.workspace}}) {{
  %s = ascend.stream 0
  %a = ascend.alloc {{offset = 0 : i64}} : {gm}
  %b = ascend.alloc {{offset = 8192 : i64}} : {gm}
  %c = ascend.alloc {{offset = 0 : i64}} : {gm}
  ascend.launch @add on %s(%x, %a) : ({gm}, {gm})
  ascend.launch @add on %s(%a, %b) : ({gm}, {gm})
  ascend.launch @add on %s(%b, %c) : ({gm}, {gm})
  ascend.launch @add on %s(%c, %z) : ({gm}, {gm})
  func.return
}}
"""
    module, outputs, sim = run(text)
    np.testing.assert_array_equal(outputs["z"], feeds_for(module)["x"] * 16)
    report = build_report(sim, module)
    io = 2 * TILE
    assert report["peak_memory_bytes"] == io + 16384
    assert report["no_reuse_memory_bytes"] == io + 3 * TILE
    assert report["memory_lower_bound_bytes"] == io + 2 * TILE
    assert report["memory_reuse_rate"] == pytest.approx(1 - 2 / 3)
    assert report["fusion_rate"] == 0.0 and report["launch_count"] == 4 and report["kernel_count"] == 1
    assert sim.latency_us == pytest.approx(4 * (LAUNCH_US + us(DISPATCH + MTE2 + VADD + MTE3)))


def test_fusion_rate_counts_nodes_per_kernel():
    module, _, sim = run(one_kernel_program(loc='loc(fused["Add_0", "Relu_1", "Mul_2", "Sub_3"])'))
    report = build_report(sim, module)
    assert report["fusion_rate"] == pytest.approx(1 - 1 / 4)
    assert report["kernels"][0]["nodes"] == ["Add_0", "Relu_1", "Mul_2", "Sub_3"]


def test_layout_conversion_share():
    """Two equal kernels, one marked as a layout conversion (graph.trans_data's lowering)."""
    gm = "memref<16x256xf16, \"gm\">"
    text = TYPES.format(rows=16) + add_kernel("add") + add_kernel("to_nz", attrs=", layout_conversion") + f"""
func.func @main(%x: {gm} {{onnx.name = "x"}}, %y: {gm} {{onnx.name = "y", ascend.output}},
                %z: {gm} {{onnx.name = "z", ascend.output}}) {{
  %s = ascend.stream 0
  ascend.launch @to_nz on %s(%x, %y) : ({gm}, {gm})
  ascend.launch @add on %s(%y, %z) : ({gm}, {gm})
  func.return
}}
"""
    module, _, sim = run(text)
    report = build_report(sim, module)
    assert [k["layout_conversion"] for k in report["kernels"]] == [True, False]
    assert report["layout_conversion_share"] == pytest.approx(0.5)
    assert report["fusion_rate"] == 0.0 and report["kernel_count"] == 2


def test_shipped_programs_and_the_other_device():
    for name in ("vector_add", "matmul"):
        module = parse_module((PROGRAMS / f"{name}.mlir").read_text(), make_context())
        for device in ("ascend910b", "ascend310p"):
            _, sim = profile(module, feeds_for(module), device=device)
            report = build_report(sim, module)
            assert sim.races == [] and report["latency_us"] > report["roofline_bound_us"] > 0
    spec = load_device("ascend310p")
    module = parse_module((PROGRAMS / "matmul.mlir").read_text(), make_context())
    _, sim = profile(module, feeds_for(module), device=spec)
    (k,) = sim.kernels
    assert (k.cube_cores, k.vector_cores) == (1, 1)   # 310P: an AI core holds both units
