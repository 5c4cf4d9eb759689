"""A mix block's vector cores (`ascend.sub_block`): the interpreter runs each core's code in
program order, the simulator times it on that core's own V, MTE2 and MTE3, and each core's ub
is its own (the same offsets on two cores do not race). Hand-written kernels; the timings are
worked out from the 910B2 figures as in test_simulator.py."""

import numpy as np
import pytest

from geir.dialects import make_context
from geir.ir.text import parse_module
from geir.runtime.ascend_interpreter import run_ascend_module
from geir.runtime.simulator import SimulationError, profile

CLOCK = 1.8e9
TILE = 16 * 256 * 2              # a 16x256 f16 tile
MTE2 = TILE // 128 + 100         # gm -> ub: 164 cycles
MTE3 = TILE // 64 + 100          # ub -> gm: 228 cycles
VADD = TILE // 256 * 2 + 6       # 70 cycles


def us(cycles: float) -> float:
    return cycles / CLOCK * 1e6


def tile(row: int, flags: str = "set") -> str:
    """z[row:row+16] = x + x for one 16 x 256 tile on the buffers %xu, %zu."""
    mte2_v = ("ascend.set_flag MTE2 -> V id 0\n    ascend.wait_flag MTE2 -> V id 0" if flags == "set" else "")
    return f"""
    %xt{row} = memref.subview %x[{row}, 0] [16, 256] [1, 1] : !gm to !tile
    %zt{row} = memref.subview %z[{row}, 0] [16, 256] [1, 1] : !gm to !tile
    ascend.wait_flag MTE3 -> MTE2 id 0
    ascend.copy %xt{row}, %xu : !tile to !ub
    {mte2_v}
    ascend.vadd %xu, %xu, %zu : !ub
    ascend.set_flag V -> MTE3 id 0
    ascend.wait_flag V -> MTE3 id 0
    ascend.copy %zu, %zt{row} : !ub to !tile
    ascend.set_flag MTE3 -> MTE2 id 0"""


def program(body: str, core: str = "mix") -> str:
    return f"""
!gm = memref<32x256xf16, "gm">
!ub = memref<16x256xf16, "ub">
!tile = memref<16x256xf16, strided<[256, 1], offset: ?>, "gm">
ascend.kernel @k(%x: !gm, %z: !gm) attributes {{core_type = "{core}", block_dim = 1 : i64}} {{
  %xu = ascend.alloc {{offset = 0 : i64}} : !ub
  %zu = ascend.alloc {{offset = 8192 : i64}} : !ub
{body}
  ascend.return
}}
func.func @main(%x: !gm {{onnx.name = "x"}}, %z: !gm {{onnx.name = "z", ascend.output}}) {{
  %s = ascend.stream 0
  ascend.launch @k on %s(%x, %z) : (!gm, !gm)
  func.return
}}
"""


def sub_block(index: int, rows: list[int], flags: str = "set") -> str:
    tiles = "".join(tile(r, flags) for r in rows)
    return f"""  ascend.sub_block {index} {{
    ascend.set_flag MTE3 -> MTE2 id 0{tiles}
    ascend.wait_flag MTE3 -> MTE2 id 0
  }}"""


def run(text: str, **kw):
    module = parse_module(text, make_context())
    module.verify()
    x = np.random.default_rng(0).standard_normal((32, 256)).astype(np.float16)
    outputs, sim = profile(module, {"x": x}, **kw)
    return x, outputs, sim


def test_two_vector_cores_run_side_by_side():
    """Two tiles on one core take both tiles' time; one tile on each core, one tile's."""
    x, one_core, seq = run(program(sub_block(0, [0, 16])), strict=True)
    _, two_cores, par = run(program(sub_block(0, [0]) + "\n" + sub_block(1, [16])), strict=True)
    np.testing.assert_array_equal(one_core["z"], x + x)
    np.testing.assert_array_equal(two_cores["z"], x + x)
    (k1,), (k2,) = seq.kernels, par.kernels
    assert k1.exec_us == pytest.approx(us(2000 + 2 * (MTE2 + VADD + MTE3)))
    assert k2.exec_us == pytest.approx(us(2000 + MTE2 + VADD + MTE3))
    # both cores' work is counted (the report's vector utilisation is over both)
    assert k2.pipe_busy_us["V"] == pytest.approx(2 * us(VADD))
    assert par.races == []  # the same ub offsets on two cores: two ubs


def test_a_race_on_one_core_is_still_found():
    """Without the MTE2 -> V flag the vadd may read xu before the copy fills it: a race on
    core 1 as on core 0."""
    _, _, sim = run(program(sub_block(0, [0]) + "\n" + sub_block(1, [16], flags="none")))
    assert [(r.first_pipe, r.second_pipe, r.kind) for r in sim.races] == [("MTE2", "V", "read-after-write")]
    with pytest.raises(SimulationError, match="race"):
        run(program(sub_block(0, [0]) + "\n" + sub_block(1, [16], flags="none")), strict=True)


def test_a_third_vector_core_is_an_error():
    with pytest.raises(SimulationError, match="ascend.sub_block 2, but a ascend910b block has 2 vector cores"):
        run(program(sub_block(0, [0]) + "\n" + sub_block(2, [16])))


def _held(index: int, row: int, step: str) -> str:
    """Core `index` either loads rows row .. row + 16 of x into its %xu ("load") or stores
    z[row ..] = xu + xu from what its %xu holds ("store"): a tile that stays in the core's ub
    between two of its bodies, as an attention kernel's O and statistics do."""
    if step == "load":
        ops = f"""
    %xt = memref.subview %x[{row}, 0] [16, 256] [1, 1] : !gm to !tile
    ascend.copy %xt, %xu : !tile to !ub
    ascend.set_flag MTE2 -> V id 0
    ascend.wait_flag MTE2 -> V id 0"""
    else:
        ops = f"""
    %zt = memref.subview %z[{row}, 0] [16, 256] [1, 1] : !gm to !tile
    ascend.vadd %xu, %xu, %zu : !ub
    ascend.set_flag V -> MTE3 id 0
    ascend.wait_flag V -> MTE3 id 0
    ascend.copy %zu, %zt : !ub to !tile"""
    return f"  ascend.sub_block {index} {{{ops}\n  }}\n"


@pytest.mark.parametrize("compiled", [True, False])
def test_what_a_core_keeps_in_ub_is_its_own(compiled):
    """Each core loads its rows into the same ub buffer, then each adds what its own holds: one
    ub for both would give core 0 core 1's rows."""
    body = _held(0, 0, "load") + _held(1, 16, "load") + _held(0, 0, "store") + _held(1, 16, "store")
    module = parse_module(program(body), make_context())
    module.verify()
    x = np.random.default_rng(1).standard_normal((32, 256)).astype(np.float16)
    out = run_ascend_module(module, {"x": x}, compiled=compiled)
    np.testing.assert_array_equal(out["z"], x + x)


def test_the_second_core_has_trace_tracks_of_its_own():
    """Its V, MTE2 and MTE3 ops overlap the first core's: drawn on one track they would hide
    each other in the Chrome trace."""
    from geir.runtime.trace import chrome_trace

    _, _, sim = run(program(sub_block(0, [0]) + "\n" + sub_block(1, [16])), strict=True)
    names = {e["args"]["name"] for e in chrome_trace(sim)["traceEvents"] if e.get("name") == "thread_name"}
    assert {"stream 0 V", "stream 0 V.aiv1", "stream 0 MTE2.aiv1", "stream 0 MTE3.aiv1"} <= names
    vs = {e["tid"]: e for e in chrome_trace(sim)["traceEvents"] if e.get("ph") == "X" and e["name"].startswith("vadd")}
    assert len(vs) == 2  # one vadd on each core's track, at the same time
    first, second = vs.values()
    assert first["ts"] == second["ts"]
