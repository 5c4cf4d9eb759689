"""Device specs (target/devices/*.json, target/device.py) and the cost model (target/cost_model.py).

Expected numbers are worked out by hand from the published figures (docs/hardware.md) and
the assumptions stated in the device files, never by calling the code under test."""

import json
import math

import pytest

from geir.target.cost_model import CostModel
from geir.target.device import (
    DEFAULT_DEVICE,
    DEVICES_DIR,
    DeviceFileError,
    DeviceSpec,
    UnknownDeviceError,
    list_devices,
    load_device,
)

# Figures of ascend910b.json used below.
CLOCK_910B = 1.8e9          # INI
MTE2_STARTUP = 100          # dma_startup_cycles, assumption
MTE1_STARTUP = 20           # dma_startup_cycles, assumption
VEC_STARTUP = 6             # PTO cce cost model head
MMAD_STARTUP = 0            # assumption: no fixed cost per mmad


@pytest.fixture(scope="module")
def cm() -> CostModel:
    return CostModel(load_device("ascend910b"))


def test_both_devices_load():
    assert list_devices() == ["ascend310p", "ascend910b"]
    assert DEFAULT_DEVICE == "ascend910b"
    b = load_device("ascend910b")
    assert (b.cube_cores, b.vector_cores, b.vector_per_cube) == (24, 48, 2)
    assert b.split_cube_vector and b.cube_clock_hz == 1.8e9
    assert b.buffer_bytes == {"l1": 512 << 10, "l0a": 64 << 10, "l0b": 64 << 10,
                              "l0c": 128 << 10, "ub": 192 << 10, "bt": 1 << 10, "fb": 7 << 10}
    assert "CATLASS" in b.sources["buffer_bytes.fb"] and b.dma_bytes_per_cycle["l1", "fb"] == 128
    assert b.l2_bytes == 192 << 20 and b.hbm_bytes == 64 << 30 and b.hbm_bytes_per_s == 1.6e12
    assert b.l2_bytes_per_s == 4.59e12 and "GEMMCT" in b.sources["l2_bytes_per_s"]
    assert b.dma_bytes_per_cycle["gm", "ub"] == 128 and b.flag_ids_per_core == 8
    assert "KPP" in b.sources["dma_bytes_per_cycle.gm->ub"]
    assert "INI" in b.sources["cube_cores"]
    p = load_device("ascend310p")
    assert (p.cube_cores, p.vector_cores, p.vector_per_cube) == (8, 15, 1)
    assert not p.split_cube_vector
    assert (p.cube_clock_hz, p.vector_clock_hz) == (1.06e9, 1.0e9)
    assert p.buffer_bytes["l1"] == 1 << 20 and p.buffer_bytes["l0c"] == 256 << 10
    assert "assumption" in p.sources["dma_bytes_per_cycle.gm->ub"]
    assert load_device("ascend910b") == b
    assert CostModel().spec.name == DEFAULT_DEVICE


def test_every_figure_has_unit_and_source():
    for path in DEVICES_DIR.glob("*.json"):
        for key, raw in json.loads(path.read_text()).items():
            if key.startswith("_"):
                continue
            figures = [raw] if "value" in raw else raw.values()
            for fig in figures:
                assert {"value", "unit", "source"} <= fig.keys(), (path.name, key)


def test_unknown_device_lists_known_ones():
    with pytest.raises(UnknownDeviceError, match="ascend310p, ascend910b") as e:
        load_device("ascend999")
    assert isinstance(e.value, ValueError)


def _device_dict() -> dict:
    return json.loads((DEVICES_DIR / "ascend910b.json").read_text())


def test_user_device_file(tmp_path):
    data = _device_dict()
    data["name"]["value"] = "mychip"
    data["cube_cores"] = {"value": 4, "unit": "cores", "source": "my datasheet"}
    path = tmp_path / "mychip.json"
    path.write_text(json.dumps(data))
    spec = load_device(str(path))
    assert isinstance(spec, DeviceSpec)
    assert spec.name == "mychip" and spec.cube_cores == 4
    assert spec.sources["cube_cores"] == "my datasheet"
    assert load_device(path) == spec


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.pop("cube_cores"), "missing field 'cube_cores'"),
    (lambda d: d["cube_cores"].update(value="many"), "'cube_cores': value must be an integer"),
    (lambda d: d["hbm_bytes"].pop("source"), "'hbm_bytes' has no 'source'"),
    (lambda d: d["buffer_bytes"].pop("ub"), "'buffer_bytes' lacks ub"),
])
def test_malformed_file(tmp_path, edit, message):
    data = _device_dict()
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DeviceFileError, match=message):
        load_device(str(path))


def test_malformed_dma_path_and_json(tmp_path):
    data = _device_dict()
    data["dma_bytes_per_cycle"]["gm->l0c"] = {"value": 1, "unit": "B/cycle", "source": "x"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DeviceFileError, match="dma_bytes_per_cycle.gm->l0c.*not a DMA path"):
        load_device(str(path))
    path.write_text("{ not json")
    with pytest.raises(DeviceFileError, match="cannot read"):
        load_device(str(path))
    with pytest.raises(DeviceFileError, match="no such device file"):
        load_device(str(tmp_path / "missing.json"))


def test_mmad_cycles(cm):
    # One 16x16x16 fp16 fractal per cycle; fp32 at quarter rate.
    assert cm.mmad_cycles(16, 16, 16, "f16") == 1 + MMAD_STARTUP
    assert cm.mmad_cycles(16, 16, 16, "fp32") == 4 + MMAD_STARTUP
    assert cm.mmad_cycles(16, 16, 16, "bf16") == 1 + MMAD_STARTUP
    # int8 steps are 16x32x16: k=32 is one fractal, k=16 pads to one.
    assert cm.mmad_cycles(16, 32, 16, "int8") == 1 + MMAD_STARTUP
    assert cm.mmad_cycles(16, 16, 16, "i8") == 1 + MMAD_STARTUP
    # Ragged shapes pad up to fractals: 2 x 4 x 3 = 24.
    assert cm.mmad_cycles(17, 64, 40, "f16") == 24 + MMAD_STARTUP
    assert cm.mmad_cycles(128, 128, 128, "f16") == 8 * 8 * 8 + MMAD_STARTUP
    with pytest.raises(ValueError, match="no dtype 'i32'"):
        cm.mmad_cycles(16, 16, 16, "i32")


def test_dma_cycles(cm):
    assert cm.dma_cycles(64 << 10, "gm", "ub") == 65536 // 128 + MTE2_STARTUP   # 612
    assert cm.dma_cycles(64 << 10, "gm", "l1") == 65536 // 256 + MTE2_STARTUP   # 356
    assert cm.dma_cycles(100, "gm", "l1") == 1 + MTE2_STARTUP                    # ceil(100/256)
    assert cm.dma_cycles(32 << 10, "l1", "l0b") == 32768 // 128 + MTE1_STARTUP
    assert cm.dma_cycles(0, "gm", "ub") == 0


def test_relayout_moves_whole_blocks_per_short_run(cm):
    """A re-laying copy moves a 32-byte DMA block per contiguous run shorter than a block."""
    assert cm.dma_block_bytes() == 32
    assert cm.dma_bytes(100) == 100 and cm.dma_bytes(100, 64) == 100 and cm.dma_bytes(0, 4) == 0
    assert cm.dma_bytes(1024, 4) == 256 * 32   # fp32 element runs: 8x the bytes
    assert cm.dma_bytes(1024, 2) == 512 * 32   # fp16: 16x
    assert cm.dma_bytes(1024, 32) == 1024      # runs of a block: nothing extra


def test_copy_relayout_runs():
    """ascend.copy's contiguous runs: an ND feature-map box into l1 and rows to / from NC1HWC0
    blocks move an element per run; a matrix's ND2NZ moves fractal rows; copies that keep
    the layout (gm -> ub, an NC1HWC0 box as it lies, l0c written as blocks) none."""
    from xdsl.dialects.builtin import f16, f32
    from xdsl.ir import Block

    from geir.dialects import ascend as a

    def copy(src, dst, elt=f32, **props):
        block = Block(arg_types=[a.memref_type(src[1], elt, src[0]), a.memref_type(dst[1], elt, dst[0])])
        op = a.CopyOp.get(*block.args, **props)
        block.add_op(op)
        return op.relayout

    assert copy(("gm", [8, 5, 16]), ("l1", [8, 5, 16])) == (8 * 5 * 16 * 4, 4)
    assert copy(("gm", [32, 64]), ("l1", [32, 64]), f16) == (32 * 64 * 2, 32)
    assert copy(("gm", [32, 8]), ("l1", [32, 8])) == (32 * 8 * 4, 32)   # a narrow matrix: its rows
    assert copy(("gm", [16, 7]), ("ub", [1, 7, 16]), layout="nd2nc1hwc0") == (16 * 7 * 4, 4)
    assert copy(("gm", [32, 64]), ("ub", [32, 64])) is None
    assert copy(("gm", [2, 3, 8, 16]), ("l1", [2, 3, 8, 16]), layout="nc1hwc0") is None
    assert copy(("l0c", [16, 16]), ("gm", [1, 16, 16]), layout="nd2nc1hwc0") is None


def test_dma_engines(cm):
    expected = {("gm", "ub"): "MTE2", ("gm", "l1"): "MTE2", ("l1", "l0a"): "MTE1",
                ("l1", "l0b"): "MTE1", ("l0c", "gm"): "FIX", ("l0c", "l1"): "FIX",
                ("ub", "gm"): "MTE3"}
    for (src, dst), engine in expected.items():
        assert cm.dma_engine(src, dst) == engine
    for src, dst in [("gm", "l0c"), ("ub", "l0a"), ("l0a", "l0b"), ("ub", "ub"), ("l0a", "gm")]:
        with pytest.raises(ValueError, match=f"no DMA path {src}->{dst}"):
            cm.dma_engine(src, dst)
        with pytest.raises(ValueError):
            cm.dma_cycles(512, src, dst)
    with pytest.raises(ValueError, match="unknown memory space 'hbm'"):
        cm.dma_engine("hbm", "ub")


def test_vector_cycles(cm):
    # 32 KiB fp16 add: 32768 / 256 = 128 repeats; binary fp16 128 B/cycle -> 256/128 = 2 cycles
    # per repeat; plus 6 cycles start-up.
    assert cm.vector_cycles("binary", 32 << 10, "f16") == 128 * (256 // 128) + VEC_STARTUP
    # unary fp16 at 256 B/cycle: 1 cycle per repeat.
    assert cm.vector_cycles("unary", 32 << 10, "float16") == 128 * 1 + VEC_STARTUP
    # a partial repeat is a whole repeat.
    assert cm.vector_cycles("binary", 100, "f32") == 1 * 2 + VEC_STARTUP
    assert cm.vector_cycles("reduce", 32 << 10, "f16") == 128 * 2 + VEC_STARTUP
    assert cm.vector_cycles("cast", 32 << 10, "f32") == 128 * 1 + VEC_STARTUP
    with pytest.raises(ValueError, match="unknown vector op kind 'frobnicate'"):
        cm.vector_cycles("frobnicate", 256, "f16")
    # a bool is one byte: i8's rate (torch's safe softmax runs logical ops on i1 masks)
    assert cm.vector_cycles("unary", 32 << 10, "i1") == cm.vector_cycles("unary", 32 << 10, "i8")


def test_time_conversions(cm):
    assert cm.cycles_to_us(1800) == pytest.approx(1.0)
    assert cm.cycles_to_us(CLOCK_910B) == pytest.approx(1e6)
    assert cm.hbm_time_us(1_600_000) == pytest.approx(1.0)          # 1.6 TB/s
    assert cm.launch_overhead_us() == 5.9
    p = CostModel("ascend310p")
    assert p.cycles_to_us(1060) == pytest.approx(1.0)
    assert p.cycles_to_us(1000, "vector") == pytest.approx(1.0)


def test_peak_fp16_tflops():
    spec = load_device("ascend910b")
    # 24 cores x 16*16*16 MACs/cycle x 2 flops x 1.8 GHz
    peak = spec.cube_cores * 16 * 16 * 16 * 2 * spec.cube_clock_hz
    assert peak / 1e12 == pytest.approx(353.9, abs=0.1)
    assert CostModel(spec).peak_cube_flops("f16") / 1e12 == pytest.approx(353.9, abs=0.1)
    assert CostModel(spec).peak_cube_flops("i8") == pytest.approx(2 * peak)
    assert CostModel("ascend310p").peak_cube_flops() / 1e12 == pytest.approx(69.5, abs=0.1)


def test_kernel_estimate(cm):
    # Tiny vector kernel: launch dominated (5.9 us + 2000 cycles dispatch).
    small = cm.kernel_estimate(vector_bytes={"binary": 4096}, hbm_read_bytes=8192,
                               hbm_write_bytes=4096, block_dim=1)
    assert small.bound == "launch"
    assert small.launch_us == pytest.approx(5.9 + 2000 / 1.8e3)
    # 1 GiB streamed over all 48 vector cores: HBM bound at 1.6 TB/s.
    big = cm.kernel_estimate(vector_bytes={"binary": 1 << 29}, hbm_read_bytes=1 << 30,
                             hbm_write_bytes=1 << 29, block_dim=48)
    assert big.bound == "dma"
    assert big.dma_us == pytest.approx((3 << 29) / 1.6e12 * 1e6)
    assert big.total_us == pytest.approx(big.dma_us + big.launch_us)
    # A large fp16 matmul over all 24 cube cores: cube bound, close to peak.
    m = k = n = 8192
    mm = cm.kernel_estimate(cube_macs=m * k * n, hbm_read_bytes=2 * (m * k + k * n),
                            hbm_write_bytes=2 * m * n, block_dim=24)
    assert mm.bound == "cube"
    assert mm.cube_us == pytest.approx(2 * m * k * n / 353.894e12 * 1e6, rel=1e-3)
    # Fusing two elementwise ops saves one HBM round trip and one launch.
    n_bytes = 64 << 20
    one = cm.kernel_estimate(vector_bytes={"binary": n_bytes}, hbm_read_bytes=2 * n_bytes,
                             hbm_write_bytes=n_bytes, block_dim=48)
    fused = cm.kernel_estimate(vector_bytes={"binary": 2 * n_bytes},
                               hbm_read_bytes=3 * n_bytes, hbm_write_bytes=n_bytes, block_dim=48)
    assert fused.total_us < 2 * one.total_us


def test_l2_hit_fraction(cm):
    """What a kernel reads again hits L2 while its footprint fits, a share L2 / footprint
    of it beyond; first reads never hit."""
    mib = 1 << 20
    assert cm.l2_hit_fraction(0, 0, 0) == 0.0
    assert cm.l2_hit_fraction(10 * mib, 10 * mib, 20 * mib) == 0.0          # each byte read once
    assert cm.l2_hit_fraction(40 * mib, 10 * mib, 20 * mib) == pytest.approx(0.75)
    # a footprint of twice L2 keeps half of what is read again
    assert cm.l2_hit_fraction(40 * mib, 10 * mib, 384 * mib) == pytest.approx(0.75 * 0.5)


def test_scratch_reuse_bytes(cm):
    """A scratch byte is touched again after the kernel moved scratch / (its share of the
    traffic) bytes, never more than the footprint; with no scratch traffic the footprint."""
    mib = 1 << 20
    assert cm.scratch_reuse_bytes(4 * mib, 100 * mib, 400 * mib, 1024 * mib) == pytest.approx(16 * mib)
    assert cm.scratch_reuse_bytes(4 * mib, 1 * mib, 400 * mib, 1024 * mib) == 1024 * mib
    assert cm.scratch_reuse_bytes(0, 0, 400 * mib, 1024 * mib) == 1024 * mib
    # the hand-offs of a 1 GiB footprint: all of their re-reads hit, against a sixth before
    distance = cm.scratch_reuse_bytes(4 * mib, 100 * mib, 400 * mib, 1024 * mib)
    assert cm.l2_hit_fraction(50 * mib, 0, distance) == 1.0
    assert cm.l2_hit_fraction(50 * mib, 0, 1024 * mib) == pytest.approx(192 / 1024)


def test_gm_cycles_and_time(cm):
    """Hits move at the L2 bandwidth, misses and writes at HBM's; each of `blocks` blocks gets
    its share of both."""
    hbm, l2, clock = 1.6e12, 4.59e12, 1.8e9
    assert cm.gm_cycles(1 << 20, 24) == pytest.approx((1 << 20) / (hbm / clock / 24))
    assert cm.gm_cycles(1 << 20, 24, hit=1.0) == pytest.approx((1 << 20) / (l2 / clock / 24))
    assert cm.gm_cycles(1000, 1, hit=0.5) == pytest.approx(500 / (hbm / clock) + 500 / (l2 / clock))
    assert cm.gm_time_us(1e6, 1e6, hit=0.5) == pytest.approx(1.5e6 / hbm * 1e6 + 0.5e6 / l2 * 1e6)


def test_roofline_bound(cm):
    assert cm.roofline_bound_us(353.894e12, 0) == pytest.approx(1e6, rel=1e-4)
    assert cm.roofline_bound_us(0, 1_600_000) == pytest.approx(1.0)
    assert math.isclose(cm.roofline_bound_us(1e6, 1_600_000), 1.0)
