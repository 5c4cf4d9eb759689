"""The ascend interpreter runs ascend programs on real buffers.

The hand-written programs of test/dialects/ascend (a tiled vector add, a cube
matmul) give exact results; breaking them (a wrong tile index, a missing copy,
overlapping buffers, a missing flag) gives a wrong number or a clear error.
Each vector op is checked against numpy, the DMA transforms against an
independent FRACTAL_NZ reference, and a kernel built with the Python builders
runs like a parsed one.
"""

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    MemRefType,
    UnitAttr,
    f16,
    f32,
)
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

from geir.dialects import ascend as a
from geir.errors import InterpreterError
from geir.ir.text import parse_module, print_module
from geir.runtime import ascend_compiled
from geir.runtime.ascend_interpreter import (
    ascend_input_specs,
    ascend_output_names,
    run_ascend_module,
)
from geir.dialects import graph as g
from geir.reference.graph import reference_of
from geir.dialects import make_context
from geir.runtime.simulator import RepeatedBlock, record

PROGRAMS = Path(__file__).resolve().parents[1] / "dialects" / "ascend"
RNG = np.random.default_rng(0)


def load(name: str) -> str:
    return (PROGRAMS / name).read_text()


def run(text: str, feeds, **kw):
    module = parse_module(text, make_context())
    module.verify()
    return run_ascend_module(module, feeds, **kw)


def edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


# ---------------------------------------------------------------------------
# The hand-written programs.
# ---------------------------------------------------------------------------

X = RNG.standard_normal((64, 256)).astype(np.float16)
Y = RNG.standard_normal((64, 256)).astype(np.float16)
ADD = load("vector_add.mlir")
MATMUL = load("matmul.mlir")


def test_vector_add_is_exact():
    out = run(ADD, {"x": X, "y": Y})
    assert list(out) == ["z"]
    assert out["z"].dtype == np.float16
    np.testing.assert_array_equal(out["z"], X + Y)


def test_vector_add_names():
    module = parse_module(ADD, make_context())
    assert ascend_input_specs(module) == [("x", (64, 256), np.float16), ("y", (64, 256), np.float16)]
    assert ascend_output_names(module) == ["z"]


def test_matmul_is_exact():
    # Small integers: every product and sum is exact in f32.
    a_ = RNG.integers(-4, 5, (32, 32)).astype(np.float16)
    b_ = RNG.integers(-4, 5, (32, 32)).astype(np.float16)
    out = run(MATMUL, {"a": a_, "b": b_})
    np.testing.assert_array_equal(out["c"], a_.astype(np.float32) @ b_.astype(np.float32))


def test_matmul_random_floats():
    a_ = RNG.standard_normal((32, 32)).astype(np.float16)
    b_ = RNG.standard_normal((32, 32)).astype(np.float16)
    out = run(MATMUL, {"a": a_, "b": b_})
    np.testing.assert_allclose(out["c"], a_.astype(np.float32) @ b_.astype(np.float32), rtol=1e-5, atol=1e-5)


class _SlowEvictions(dict):
    """A code cache whose evictions give other threads time to run in the middle of one."""

    def pop(self, *args):
        time.sleep(0.001)
        return super().pop(*args)


def test_kernels_compile_in_threads_while_the_code_cache_evicts(monkeypatch):
    # the ranks of a multi-device run compile their kernels in threads; with the process-wide
    # code cache full, each compile evicts the oldest source, and two must not evict one
    monkeypatch.setattr(ascend_compiled, "_CODE", _SlowEvictions())
    monkeypatch.setattr(ascend_compiled, "_CODE_ENTRIES", 1)
    errors = []

    a_, b_ = X[:32, :32], Y[:32, :32]
    programs = [(ADD, {"x": X, "y": Y}, X + Y), (MATMUL, {"a": a_, "b": b_}, a_.astype(np.float32) @ b_)]

    def modules():  # fresh ones: the compiled code is kept on the kernel op
        return [(parse_module(text, make_context()), feeds, want) for _ in range(4) for text, feeds, want in programs]

    def body(mine):  # parsed outside the threads: xDSL's implicit builder is not thread-safe
        try:
            for module, feeds, want in mine:
                out = run_ascend_module(module, feeds)
                np.testing.assert_allclose(next(iter(out.values())), want, rtol=1e-5, atol=1e-5)
        except Exception as e:  # noqa: BLE001 - reported below, with the thread's error
            errors.append(repr(e))

    threads = [threading.Thread(target=body, args=(modules(),)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# -- the buffers are real: breaking the program breaks the numbers ----------


def test_wrong_tile_index_is_a_wrong_number():
    # Every block uses tile rows of block 0: the rows of block 1 stay unwritten.
    bad = edit(ADD, "%row = arith.addi %base, %i : index", "%row = arith.addi %c0, %i : index")
    z = run(bad, {"x": X, "y": Y})["z"]
    np.testing.assert_array_equal(z[:32], (X + Y)[:32])
    assert np.isnan(z[32:]).all()


def test_wrong_output_tile_is_a_wrong_number():
    bad = edit(ADD, "%zt = memref.subview %z[%row, 0]", "%zt = memref.subview %z[%i, 0]")
    z = run(bad, {"x": X, "y": Y})["z"]
    assert not np.array_equal(z, X + Y)
    assert np.isnan(z[32:]).all()  # nobody wrote them
    np.testing.assert_array_equal(z[:32], (X + Y)[32:])  # block 1 wrote last


def test_missing_copy_is_a_wrong_number():
    bad = edit(ADD, "    ascend.copy %yt, %yu : !tile to !ub\n", "")
    z = run(bad, {"x": X, "y": Y})["z"]
    assert np.isnan(z).all()  # x + never-written ub


def test_missing_cube_copy_is_a_wrong_number():
    bad = edit(MATMUL, "  ascend.copy %ak1, %a0 : memref<32x16xf16, strided<[32, 1], offset: 16>, \"l1\"> to !l0a\n", "")
    a_ = RNG.integers(-4, 5, (32, 32)).astype(np.float16)
    b_ = RNG.integers(-4, 5, (32, 32)).astype(np.float16)
    c = run(bad, {"a": a_, "b": b_})["c"]
    af, bf = a_.astype(np.float32), b_.astype(np.float32)
    # The second step multiplied the stale first K tile of a.
    np.testing.assert_array_equal(c, af[:, :16] @ bf[:16] + af[:, :16] @ bf[16:])


def test_overlapping_buffers_clobber_each_other():
    bad = edit(ADD, "%yu = ascend.alloc {offset = 8192 : i64}", "%yu = ascend.alloc {offset = 0 : i64}")
    z = run(bad, {"x": X, "y": Y})["z"]
    np.testing.assert_array_equal(z, Y + Y)  # y's copy overwrote x in ub


# Each error is raised by both ways of running a kernel, naming the op, the kernel and the block.
BOTH = pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "xdsl"])


# -- the FIX pipe's quantization (fix-quant.mlir) ------------------------------------------

FIX_QUANT = load("fix-quant.mlir")


def _requantized(a_, b_, bias, scale, zero_point):
    """What the program computes, written independently: the scale as the FIX holds it (the
    f32 with its low 13 mantissa bits cleared), half away from zero, saturate, relu."""
    held = (scale.view(np.uint32) & 0xFFFFE000).view(np.float32)
    acc = a_.astype(np.int64) @ b_.astype(np.int64) + bias
    t = acc.astype(np.float32) * held + np.float32(zero_point)
    r = np.floor(np.abs(t) + 0.5) * np.sign(t)
    return np.maximum(np.clip(r, -128, 127), 0).astype(np.int8)


@BOTH
def test_fix_requantizes_the_accumulator_with_the_bias_table(compiled):
    a_ = RNG.integers(-128, 128, (32, 64)).astype(np.int8)
    b_ = RNG.integers(-128, 128, (64, 32)).astype(np.int8)
    bias = RNG.integers(-5000, 5000, 32).astype(np.int32)
    scale = (RNG.uniform(0.5, 2.0, 32) / 300).astype(np.float32)
    out = run(FIX_QUANT, {"a": a_, "b": b_, "bias": bias, "scale": scale}, compiled=compiled)["c"]
    want = _requantized(a_, b_, bias, scale, 3)
    np.testing.assert_array_equal(out, want)
    assert 0 < (want == 0).mean() < 1 and (want == 127).any()  # relu and saturation both bite


@BOTH
def test_fix_quantization_ties_round_away_from_zero(compiled):
    # a x b = 0, bias +-1..: acc * 0.5 lands on halves, which the FIX rounds away from zero
    a_ = np.zeros((32, 64), np.int8)
    b_ = np.zeros((64, 32), np.int8)
    bias = np.arange(-16, 16, dtype=np.int32) * 2 + 1
    scale = np.full(32, 0.5, np.float32)
    text = edit(FIX_QUANT, "{relu, quant_axis = 1 : i64, zero_point = 3 : i64} : memref<32x32xi32, \"l0c\"> to !out",
                "{quant_axis = 1 : i64} : memref<32x32xi32, \"l0c\"> to !out")
    out = run(text, {"a": a_, "b": b_, "bias": bias, "scale": scale}, compiled=compiled)["c"]
    halves = bias * 0.5
    np.testing.assert_array_equal(out[0], (np.sign(halves) * np.ceil(np.abs(halves))).astype(np.int8))


def test_fix_reads_a_scale_as_a_19_bit_float():
    # 0.1001 and the f32 just below the next 19-bit value read as the same scale
    lo = np.float32(0.1001)
    held = (np.array([lo]).view(np.uint32) & 0xFFFFE000).view(np.float32)[0]
    hi = np.nextafter((np.array([held]).view(np.uint32) + 0x2000).view(np.float32)[0], np.float32(0))
    acc = next(n for n in range(900, 1270) if round(n * float(held)) != round(n * float(hi)))
    a_ = np.ones((32, 64), np.int8)
    b_ = np.ones((64, 32), np.int8)
    bias = np.full(32, acc - 64, np.int32)
    scale = np.array([lo, hi] * 16, np.float32)
    text = edit(FIX_QUANT, "{relu, quant_axis = 1 : i64, zero_point = 3 : i64} : memref<32x32xi32, \"l0c\"> to !out",
                "{quant_axis = 1 : i64} : memref<32x32xi32, \"l0c\"> to !out")
    out = run(text, {"a": a_, "b": b_, "bias": bias, "scale": scale})["c"]
    assert out[0, 0] == out[0, 1] == np.int8(round(acc * float(held)))
    assert round(acc * float(hi)) != out[0, 1]  # the full f32 scale would give another number



@BOTH
def test_out_of_bounds_tile_is_an_error(compiled):
    bad = edit(ADD, "core_type = \"vector\", block_dim = 2", "core_type = \"vector\", block_dim = 3")
    with pytest.raises(InterpreterError, match=r"in @add block 2: tile \[64, 0\] of size \[16, 256\] is out of bounds of \[64, 256\]"):
        run(bad, {"x": X, "y": Y}, compiled=compiled)


def test_a_probed_block_raises_the_error_its_full_run_would():
    """Timing only: block 1 repeats block 0 and is only probed; block 2's probe finds the tile
    out of bounds and raises the interpreter's error (runtime/simulator.py Recorder.repeated)."""
    bad = edit(ADD, "core_type = \"vector\", block_dim = 2", "core_type = \"vector\", block_dim = 3")
    module = parse_module(bad, make_context())
    with pytest.raises(InterpreterError, match=r"in @add block 2: tile \[64, 0\] of size \[16, 256\] is out of bounds of \[64, 256\]"):
        record(module, {"x": X, "y": Y}, timing=True, compact=True)
    _, records = record(parse_module(ADD, make_context()), {"x": X, "y": Y}, timing=True, compact=True)
    assert [r.block for r in records if isinstance(r, RepeatedBlock)] == [1]


# -- flags -------------------------------------------------------------------


def test_wait_without_set_fails_the_verifier():
    bad = edit(ADD, "    ascend.set_flag MTE2 -> V id 0\n", "")
    with pytest.raises(VerifyException, match="wait_flag' MTE2 -> V id 0 has no ascend.set_flag"):
        parse_module(bad, make_context()).verify()


@BOTH
def test_flag_never_set_again_deadlocks(compiled):
    # The first iteration consumes the flag set before the loop; the second waits forever.
    bad = edit(ADD, "    ascend.set_flag MTE3 -> MTE2 id 0\n  }", "  }")
    with pytest.raises(InterpreterError, match="wait_flag.* in @add block 0: MTE2 waits for flag MTE3 -> MTE2 id 0, "
                                               "which is not set"):
        run(bad, {"x": X, "y": Y}, compiled=compiled)


@BOTH
def test_flag_left_set_is_an_error(compiled):
    bad = edit(ADD, "  ascend.wait_flag MTE3 -> MTE2 id 0\n  // CHECK: ascend.return", "  // CHECK: ascend.return")
    with pytest.raises(InterpreterError, match="@add block 0 ended with flags set but never waited for: MTE3 -> MTE2 id 0"):
        run(bad, {"x": X, "y": Y}, compiled=compiled)


# -- trace -------------------------------------------------------------------


def test_trace_records_pipes_bytes_and_blocks():
    trace = []
    run(ADD, {"x": X, "y": Y}, trace=trace)
    launch, *ops = trace
    assert launch.name == "ascend.launch" and launch.detail == {"core_type": "vector", "block_dim": 2}
    copies_in = [e for e in ops if e.name == "ascend.copy" and e.pipe == "MTE2"]
    copies_out = [e for e in ops if e.name == "ascend.copy" and e.pipe == "MTE3"]
    adds = [e for e in ops if e.name == "ascend.vadd"]
    assert len(copies_in) == 8 and len(copies_out) == 4 and len(adds) == 4
    assert {e.nbytes for e in copies_in + copies_out + adds} == {16 * 256 * 2}
    assert adds[0].detail == {"kind": "binary"} and adds[0].dtype == "f16" and adds[0].shape == (16, 256)
    assert [e.block for e in adds] == [0, 0, 1, 1]
    assert {(e.kernel, e.launch, e.stream) for e in ops} == {("add", 0, 0)}
    assert copies_in[0].detail == {"src": "gm", "dst": "ub", "transform": None}


def test_trace_callback_and_cube_pipes():
    seen = []
    run(MATMUL, {"a": np.ones((32, 32), np.float16), "b": np.ones((32, 32), np.float16)}, trace=seen.append)
    pipes = [(e.name, e.pipe) for e in seen if e.name in ("ascend.copy", "ascend.mmad")]
    assert pipes == [("ascend.copy", "MTE2")] * 2 + [("ascend.copy", "MTE1")] * 2 + [("ascend.mmad", "M")] + [
        ("ascend.copy", "MTE1")
    ] * 2 + [("ascend.mmad", "M"), ("ascend.copy", "FIX")]
    mmads = [e for e in seen if e.name == "ascend.mmad"]
    assert [e.detail for e in mmads] == [{"m": 32, "k": 16, "n": 32, "init": True}, {"m": 32, "k": 16, "n": 32, "init": False}]
    fix = seen[-1]
    assert fix.detail == {"src": "l0c", "dst": "gm", "transform": "nz2nd"} and fix.nbytes == 32 * 32 * 4


def test_a_copy_into_gm_moves_the_elements_it_writes():
    """FIX writes mSize x nSize of an l0c tile (one row of a decode step's 16-row fractal),
    at the wider of the two types; other copies move their larger side."""
    def buf(shape, elt, space):
        return a.AllocOp.get(MemRefType(elt, shape, memory_space=StringAttr(space)))

    l0c, row16, row32 = buf([16, 128], f32, "l0c"), buf([1, 128], f16, "gm"), buf([1, 128], f32, "gm")
    assert a.CopyOp.get(l0c, row16, pad=True).nbytes == 128 * 4
    assert a.CopyOp.get(l0c, row32, pad=True).nbytes == 128 * 4
    ub, gm = buf([1, 64], f16, "ub"), buf([1, 64], f16, "gm")
    assert a.CopyOp.get(ub, gm).nbytes == 64 * 2
    gm_tile, l1 = buf([1, 128], f16, "gm"), buf([16, 128], f16, "l1")
    assert a.CopyOp.get(gm_tile, l1, pad=True).nbytes == 16 * 128 * 2  # a padded read fills its destination


# ---------------------------------------------------------------------------
# Vector ops against numpy.
# ---------------------------------------------------------------------------

VECTOR = """
!gm = memref<16x32xf32, "gm">
!ub = memref<16x32xf32, "ub">
!out = memref<{out}, "gm">
!uout = memref<{out}, "ub">
ascend.kernel @k(%x: !gm, %y: !gm, %z: !out) attributes {{block_dim = 1 : i64, core_type = "vector"}} {{
  %a = ascend.alloc : !ub
  %b = ascend.alloc : !ub
  %c = ascend.alloc : !uout
  %m = ascend.alloc : memref<16x32xi1, "ub">
  %k = ascend.alloc : memref<16x32xi32, "ub">
  %r = ascend.alloc : memref<16x8xf32, "ub">
  %r1 = memref.subview %r[0, 0] [16, 1] [1, 1] : memref<16x8xf32, "ub"> to memref<16x1xf32, strided<[8, 1]>, "ub">
  %s = arith.constant 0.5 : f32
  ascend.copy %x, %a : !gm to !ub
  ascend.copy %y, %b : !gm to !ub
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  {body}
  ascend.set_flag V -> MTE3 id 0
  ascend.wait_flag V -> MTE3 id 0
  ascend.copy %c, %z : !uout to !out
  ascend.return
}}
func.func @main(%x: !gm {{onnx.name = "x"}}, %y: !gm {{onnx.name = "y"}}, %z: !out {{onnx.name = "z", ascend.output}}) {{
  %st = ascend.stream 0
  ascend.launch @k on %st(%x, %y, %z) : (!gm, !gm, !out)
  func.return
}}
"""

VX = RNG.uniform(0.1, 2.0, (16, 32)).astype(np.float32) * RNG.choice([-1, 1], (16, 32)).astype(np.float32)
VY = RNG.standard_normal((16, 32)).astype(np.float32)
POS = np.abs(VX)

UNARY = {
    "vexp": (VX, np.exp), "vlog": (POS, np.log), "vsqrt": (POS, np.sqrt),
    "vrsqrt": (POS, lambda x: 1 / np.sqrt(x)), "vrec": (VX, lambda x: 1 / x), "vabs": (VX, np.abs),
    "vneg": (VX, np.negative), "vrelu": (VX, lambda x: np.maximum(x, 0)), "vtanh": (VX, np.tanh),
    "vsigmoid": (VX, reference_of(g.SigmoidOp)), "verf": (VX, reference_of(g.ErfOp)), "vsin": (VX, np.sin),
    "vcos": (VX, np.cos), "vfloor": (VX, np.floor), "vceil": (VX, np.ceil), "vround": (VX * 3, np.round),
    "vsign": (VX, np.sign), "vcopy": (VX, lambda x: x),
}
BINARY = {"vadd": np.add, "vsub": np.subtract, "vmul": np.multiply, "vdiv": np.divide,
          "vmax": np.maximum, "vmin": np.minimum}
SCALAR = {"vadds": lambda x: x + 0.5, "vmuls": lambda x: x * 0.5, "vmaxs": lambda x: np.maximum(x, 0.5),
          "vmins": lambda x: np.minimum(x, 0.5), "vlrelu": lambda x: np.where(x >= 0, x, 0.5 * x)}


def run_vector(body: str, x=VX, y=VY, out="16x32xf32", **kw):
    return run(VECTOR.format(body=body, out=out), {"x": x, "y": y}, **kw)["z"]


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    x, ref = UNARY[name]
    np.testing.assert_allclose(run_vector(f"ascend.{name} %a, %c : !ub", x=x), ref(x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name):
    np.testing.assert_array_equal(run_vector(f"ascend.{name} %a, %b, %c : !ub"), BINARY[name](VX, VY))


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_with_scalar(name):
    np.testing.assert_array_equal(run_vector(f"ascend.{name} %a, %s, %c : !ub, f32, !ub"), SCALAR[name](VX))


def test_dup():
    np.testing.assert_array_equal(run_vector("ascend.vdup %s, %c : f32, !ub"), np.full((16, 32), 0.5, np.float32))


@pytest.mark.parametrize("mode,fn", [("lt", np.less), ("ge", np.greater_equal), ("eq", np.equal)])
def test_compare_select_and_logic(mode, fn):
    body = f"""ascend.vcmp %a, %b, %m {{mode = "{mode}"}} : !ub, !ub, memref<16x32xi1, "ub">
  ascend.vnot %m, %m : memref<16x32xi1, "ub">
  ascend.vor %m, %m, %m : memref<16x32xi1, "ub">
  ascend.vselect %m, %a, %b, %c : memref<16x32xi1, "ub">, !ub, !ub, !ub"""
    y = np.where(RNG.random((16, 32)) < 0.3, VX, VY)
    np.testing.assert_array_equal(run_vector(body, y=y), np.where(~fn(VX, y), VX, y))


@pytest.mark.parametrize("kind,fn", [("sum", np.sum), ("max", np.max), ("min", np.min)])
def test_reduce_and_broadcast(kind, fn):
    body = f"""ascend.vreduce %a, %r1 {{kind = "{kind}", axes = array<i64: 1>}} : !ub, memref<16x1xf32, strided<[8, 1]>, "ub">
  ascend.vbrcb %r1, %c : memref<16x1xf32, strided<[8, 1]>, "ub">, !ub"""
    want = np.broadcast_to(fn(VX, axis=1, keepdims=True), (16, 32))
    np.testing.assert_allclose(run_vector(body), want, rtol=1e-6)


@pytest.mark.parametrize("mode,fn", [(None, np.trunc), ("floor", np.floor), ("rint", np.rint)])
def test_cast(mode, fn):
    attr = f' {{round = "{mode}"}}' if mode else ""
    body = f"""ascend.vcast %a, %k{attr} : !ub, memref<16x32xi32, "ub">
  ascend.vcast %k, %c : memref<16x32xi32, "ub">, !ub"""
    np.testing.assert_array_equal(run_vector(body, x=VX * 4), fn(VX * 4))


def test_transpose():
    got = run_vector("ascend.vtranspose %a, %c : !ub, !uout", out="32x16xf32")
    np.testing.assert_array_equal(got, VX.T)


@BOTH
def test_unaligned_ub_tile_is_an_error(compiled):
    body = """%t = memref.subview %a[0, 4] [16, 8] [1, 1] : !ub to memref<16x8xf32, strided<[32, 1], offset: 4>, "ub">
  ascend.vcopy %t, %t : memref<16x8xf32, strided<[32, 1], offset: 4>, "ub">"""
    with pytest.raises(InterpreterError, match="in @k block 0: the ub tile starts at byte 16, not on a 32-byte block"):
        run_vector(body, compiled=compiled)


LOOP_TILE = """%c{lo} = arith.constant {lo} : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  scf.for %j = %c{lo} to %c32 step %c8 {{
    %t = memref.subview %a[0, %j] [16, 8] [1, 1] : !ub to memref<16x8xf32, strided<[32, 1], offset: ?>, "ub">
    ascend.vmuls %t, %s, %t : memref<16x8xf32, strided<[32, 1], offset: ?>, "ub">, f32, memref<16x8xf32, strided<[32, 1], offset: ?>, "ub">
  }}
  ascend.vcopy %a, %c : !ub"""


@BOTH
def test_unaligned_ub_tile_at_a_loop_offset_is_an_error(compiled):
    """The same check when the offset comes from a loop (the compiled path's inline guard):
    columns 0, 8, 16, 24 start on blocks; 4, 12, ... (byte 16) do not."""
    want = VX.copy()
    want[:, :] *= 0.5
    np.testing.assert_array_equal(run_vector(LOOP_TILE.format(lo=0), compiled=compiled), want)
    with pytest.raises(InterpreterError, match="in @k block 0: the ub tile starts at byte 16, not on a 32-byte block"):
        run_vector(LOOP_TILE.format(lo=4), compiled=compiled)


# ---------------------------------------------------------------------------
# DMA transforms on the cube path, against an independent NZ reference.
# ---------------------------------------------------------------------------

CUBE = """
!nz = memref<2x2x16x16xf16, "gm">
!nd = memref<32x32xf16, "gm">
!l1 = memref<32x32xf16, "l1">
ascend.kernel @k(%a: !nz, %b: !nd, %c: !nd, %d: memref<2x2x16x16xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a1 = ascend.alloc : !l1
  %b1 = ascend.alloc : !l1
  %a0 = ascend.alloc : memref<32x32xf16, "l0a">
  %b0 = ascend.alloc : memref<32x32xf16, "l0b">
  %c0 = ascend.alloc : memref<32x32xf32, "l0c">
  ascend.copy %a, %a1 {layout = "nz2nd"} : !nz to !l1
  ascend.copy %b, %b1 : !nd to !l1
  ascend.set_flag MTE2 -> MTE1 id 0
  ascend.wait_flag MTE2 -> MTE1 id 0
  ascend.copy %a1, %a0 : !l1 to memref<32x32xf16, "l0a">
  ascend.copy %b1, %b0 {transpose} : !l1 to memref<32x32xf16, "l0b">
  ascend.set_flag MTE1 -> M id 0
  ascend.wait_flag MTE1 -> M id 0
  ascend.mmad %a0, %b0, %c0 {init} : memref<32x32xf16, "l0a">, memref<32x32xf16, "l0b">, memref<32x32xf32, "l0c">
  ascend.set_flag M -> FIX id 0
  ascend.wait_flag M -> FIX id 0
  ascend.copy %c0, %c {relu} : memref<32x32xf32, "l0c"> to !nd
  ascend.copy %c0, %d {layout = "nd2nz"} : memref<32x32xf32, "l0c"> to memref<2x2x16x16xf32, "gm">
  ascend.return
}
func.func @main(%a: !nz {onnx.name = "a"}, %b: !nd {onnx.name = "b"}, %c: !nd {onnx.name = "c", ascend.output},
                %d: memref<2x2x16x16xf32, "gm"> {onnx.name = "d", ascend.output}) {
  %s = ascend.stream 0
  ascend.launch @k on %s(%a, %b, %c, %d) : (!nz, !nd, !nd, memref<2x2x16x16xf32, "gm">)
  func.return
}
"""


def nz_of(m: np.ndarray) -> np.ndarray:
    """FRACTAL_NZ [N1, M1, 16, 16] of an [M, N] matrix, element by element."""
    rows, cols = m.shape
    out = np.zeros((cols // 16, rows // 16, 16, 16), m.dtype)
    for i in range(rows):
        for j in range(cols):
            out[j // 16, i // 16, i % 16, j % 16] = m[i, j]
    return out


def test_fractal_layouts_transpose_relu_and_fix_cast():
    a_ = RNG.integers(-4, 5, (32, 32)).astype(np.float16)
    b_ = RNG.integers(-4, 5, (32, 32)).astype(np.float16)
    out = run(CUBE, {"a": nz_of(a_), "b": b_})
    product = a_.astype(np.float32) @ b_.astype(np.float32).T
    np.testing.assert_array_equal(out["c"], np.maximum(product, 0).astype(np.float16))
    np.testing.assert_array_equal(out["d"], nz_of(product))


@BOTH
def test_cube_tile_off_the_fractal_grid_is_an_error(compiled):
    bad = edit(MATMUL, "%ak1 = memref.subview %a1[0, 16] [32, 16] [1, 1] : !l1 to memref<32x16xf16, strided<[32, 1], offset: 16>",
               "%ak1 = memref.subview %a1[0, 8] [32, 16] [1, 1] : !l1 to memref<32x16xf16, strided<[32, 1], offset: 8>")
    bad = bad.replace("memref<32x16xf16, strided<[32, 1], offset: 16>", "memref<32x16xf16, strided<[32, 1], offset: 8>")
    with pytest.raises(InterpreterError, match="in @matmul block 0: a l1 tile at \\[0, 8\\] of size \\[32, 16\\] is not made "
                                               "of whole 16x16 fractals"):
        run(bad, {"a": np.ones((32, 32), np.float16), "b": np.ones((32, 32), np.float16)}, compiled=compiled)


# ---------------------------------------------------------------------------
# Host programs: streams, events, workspace, constants; device limits.
# ---------------------------------------------------------------------------

HOST = """
!gm = memref<16x32xf32, "gm">
!ub = memref<16x32xf32, "ub">
ascend.kernel @add(%x: !gm, %y: !gm, %z: !gm) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc {offset = 0 : i64} : !ub
  %b = ascend.alloc {offset = 2048 : i64} : !ub
  ascend.copy %x, %a : !gm to !ub
  ascend.copy %y, %b : !gm to !ub
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  ascend.vadd %a, %b, %a : !ub
  ascend.set_flag V -> MTE3 id 0
  ascend.wait_flag V -> MTE3 id 0
  ascend.copy %a, %z : !ub to !gm
  ascend.return
}
func.func @main(%x: !gm {onnx.name = "x"}, %z: !gm {onnx.name = "z", ascend.output},
                %ws: memref<4096xi8, "gm"> {ascend.workspace}) {
  %w = ascend.constant dense<2.500000e-01> : tensor<16x32xf32>
  %t = ascend.alloc {offset = 2048 : i64} : !gm
  %s0 = ascend.stream 0
  %s1 = ascend.stream 1
  %e = ascend.event 0
  ascend.launch @add on %s0(%x, %w, %t) : (!gm, !gm, !gm)
  ascend.event_record %e on %s0
  ascend.event_wait %e on %s1
  ascend.launch @add on %s1(%t, %t, %z) : (!gm, !gm, !gm)
  func.return
}
"""


def test_streams_events_workspace_and_constants():
    x = RNG.standard_normal((16, 32)).astype(np.float32)
    trace = []
    out = run(HOST, {"x": x}, trace=trace)
    np.testing.assert_array_equal(out["z"], (x + np.float32(0.25)) * 2)
    host = [(e.name, e.stream, e.detail.get("event")) for e in trace if e.pipe == "host"]
    assert host == [("ascend.launch", 0, None), ("ascend.event_record", 0, 0), ("ascend.event_wait", 1, 0),
                    ("ascend.launch", 1, None)]
    assert [e.launch for e in trace if e.name == "ascend.vadd"] == [0, 1]


def test_event_waited_before_recorded_is_an_error():
    bad = edit(HOST, "  ascend.event_record %e on %s0\n", "")
    with pytest.raises(InterpreterError, match="waits for event 0, which no stream has recorded"):
        run(bad, {"x": np.zeros((16, 32), np.float32)})


@BOTH
def test_workspace_too_small_is_an_error(compiled):
    bad = HOST.replace("4096xi8", "2048xi8")
    with pytest.raises(InterpreterError, match=r"\[2048, 4096\) is outside the 2048-byte workspace"):
        run(bad, {"x": np.zeros((16, 32), np.float32)}, compiled=compiled)


@BOTH
def test_writing_a_constant_is_an_error(compiled):
    bad = edit(HOST, "ascend.launch @add on %s1(%t, %t, %z)", "ascend.launch @add on %s1(%t, %t, %w)")
    with pytest.raises(InterpreterError, match="ascend.copy.* in @add block 0: cannot write its destination"):
        run(bad, {"x": np.zeros((16, 32), np.float32)}, compiled=compiled)


@BOTH
def test_buffer_beyond_the_device_is_an_error(compiled):
    bad = edit(HOST, "%b = ascend.alloc {offset = 2048 : i64} : !ub", "%b = ascend.alloc {offset = 196608 : i64} : !ub")
    with pytest.raises(InterpreterError, match="in @add block 0: ub bytes \\[196608, 198656\\) exceed the 196608-byte ub of ascend910b"):
        run(bad, {"x": np.zeros((16, 32), np.float32)}, compiled=compiled)


@BOTH
def test_dma_path_missing_on_the_device_is_an_error(compiled):
    text = """
    ascend.kernel @k(%x: memref<16x16xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "mix"} {
      %l = ascend.alloc : memref<16x16xf16, "l1">
      %u = ascend.alloc : memref<16x16xf16, "ub">
      ascend.copy %l, %u : memref<16x16xf16, "l1"> to memref<16x16xf16, "ub">
      ascend.return
    }
    func.func @main(%x: memref<16x16xf16, "gm"> {onnx.name = "x"}) {
      %s = ascend.stream 0
      ascend.launch @k on %s(%x) : (memref<16x16xf16, "gm">)
      func.return
    }
    """
    with pytest.raises(InterpreterError, match="in @k block 0: .*no DMA path l1->ub on ascend910b"):
        run(text, {"x": np.zeros((16, 16), np.float16)}, compiled=compiled)


def test_bad_feeds():
    with pytest.raises(InterpreterError, match="missing input"):
        run(ADD, {"x": X})
    with pytest.raises(InterpreterError, match="has shape"):
        run(ADD, {"x": X[:1], "y": Y})


# ---------------------------------------------------------------------------
# The Python builders make the same programs.
# ---------------------------------------------------------------------------


def build_scale_kernel() -> ModuleOp:
    """z = 2 * x for a 32x64 f16 tensor, one 16-row tile per block."""
    gm = a.memref_type([32, 64], f16, "gm")
    ub = a.memref_type([16, 64], f16, "ub")
    kernel = a.KernelOp.get("scale", [gm, gm], "vector", 2)
    x, z = kernel.body.block.args
    c16 = arith.ConstantOp(IntegerAttr(16, IndexType()))
    two = arith.ConstantOp(FloatAttr(2.0, f16))
    block = a.BlockIdxOp.get()
    row = arith.MuliOp(block, c16)
    buf = a.AllocOp.get(ub, offset=0)
    xt = a.subview(x, [row.result, 0], [16, 64])
    zt = a.subview(z, [row.result, 0], [16, 64])
    kernel.body.block.add_ops([
        c16, two, block, row, buf, xt, zt,
        a.CopyOp.get(xt, buf),
        a.SetFlagOp.get("MTE2", "V", 0), a.WaitFlagOp.get("MTE2", "V", 0),
        a.VmulsOp.get(buf, two, buf),
        a.SetFlagOp.get("V", "MTE3", 0), a.WaitFlagOp.get("V", "MTE3", 0),
        a.CopyOp.get(buf, zt),
        a.ReturnOp(),
    ])
    host = func.FuncOp("main", ([gm, gm], []), Region(Block(arg_types=[gm, gm])))
    host.arg_attrs = ArrayAttr([
        DictionaryAttr({"onnx.name": StringAttr("x")}),
        DictionaryAttr({"onnx.name": StringAttr("z"), "ascend.output": UnitAttr()}),
    ])
    stream = a.StreamOp.get(0)
    hx, hz = host.body.block.args
    host.body.block.add_ops([stream, a.LaunchOp.get("scale", stream, [hx, hz]), func.ReturnOp()])
    return ModuleOp([kernel, host])


def test_builders():
    module = build_scale_kernel()
    module.verify()
    x = RNG.standard_normal((32, 64)).astype(np.float16)
    np.testing.assert_array_equal(run_ascend_module(module, {"x": x})["z"], x * np.float16(2))
    # and the printed program parses back to the same text
    text = print_module(module)
    assert print_module(parse_module(text, make_context())) == text
    copy = next(op for op in module.walk() if isinstance(op, a.CopyOp))
    assert (copy.pipe, copy.nbytes, copy.src_space, copy.dst_space) == ("MTE2", 2048, "gm", "ub")


def test_every_op_has_an_interpreter_impl():
    """Each ascend op class has its own registered impl (vector instructions included), and
    every graph op class one at graph level (a reference kernel, or its own)."""
    from xdsl.dialects.builtin import ModuleOp

    from geir.runtime.ascend_interpreter import make_ascend_interpreter
    from geir.runtime.interpreter import make_interpreter

    impls = make_ascend_interpreter(ModuleOp([]))._impls
    registered = set(impls._impl_dict) | set(impls._callable_impl_dict)
    assert [op for op in a.Ascend.operations if op not in registered] == []
    graph = set(make_interpreter(ModuleOp([]))._impls._impl_dict)
    assert [op for op in g.OPS.values() if op not in graph] == []


# ---------------------------------------------------------------------------
# Compiled kernels (runtime/ascend_compiled.py) against xDSL's interpreter.
# ---------------------------------------------------------------------------


def small_convnet():
    """conv 3x3 + relu, max pool, strided conv, sigmoid, global average pool, gemm: load3d,
    mmad, DMA transforms and vector ops in a few lowered kernels."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)

    def weight(name, shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], name="conv2"),
        helper.make_node("Sigmoid", ["c2"], ["s2"], name="sigmoid"),
        helper.make_node("GlobalAveragePool", ["s2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1, name="fc"),
    ]
    graph = helper.make_graph(
        nodes, "small_convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [weight("w1", (8, 3, 3, 3)), weight("b1", (8,)), weight("w2", (16, 8, 3, 3)), weight("w3", (10, 16)),
         weight("b3", (10,))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _program(name: str):
    if name == "convnet":
        import geir

        compiled = geir.compile(small_convnet(), opt_level=2, precision_mode="must_keep_origin_dtype")
        return compiled.module, compiled.random_inputs(seed=0)
    text, feeds = {
        "add": (ADD, {"x": X, "y": Y}),
        "matmul": (MATMUL, {"a": RNG.standard_normal((32, 32)).astype(np.float16),
                            "b": RNG.standard_normal((32, 32)).astype(np.float16)}),
        "cube": (CUBE, {"a": RNG.standard_normal((2, 2, 16, 16)).astype(np.float16),
                        "b": RNG.standard_normal((32, 32)).astype(np.float16)}),
        "host": (HOST, {"x": RNG.standard_normal((16, 32)).astype(np.float32)}),
        "reduce": (VECTOR.format(out="16x32xf32", body="""ascend.vreduce %a, %r1 {kind = "max", axes = array<i64: 1>} : !ub, memref<16x1xf32, strided<[8, 1]>, "ub">
  ascend.vbrcb %r1, %c : memref<16x1xf32, strided<[8, 1]>, "ub">, !ub"""), {"x": VX, "y": VY}),
    }[name]
    return parse_module(text, make_context()), feeds


def _events(trace) -> list[tuple]:
    return [(e.op, e.pipe, e.kernel, e.block, e.launch, e.stream, e.nbytes, tuple(e.shape), e.dtype, dict(e.detail))
            for e in trace]


@pytest.mark.parametrize("name", ["add", "matmul", "cube", "host", "reduce", "convnet"])
def test_compiled_kernels_run_as_the_interpreter_does(name):
    """Same outputs (bit for bit, NaN poison included) and the same trace, event for event."""
    from geir.runtime.ascend_compiled import compile_kernel

    module, feeds = _program(name)
    assert all(compile_kernel(k) is not None for k in module.ops if isinstance(k, a.KernelOp))
    runs = {}
    for compiled in (True, False):
        trace = []
        runs[compiled] = run_ascend_module(module, feeds, trace=trace, compiled=compiled), _events(trace)
    (ours, ours_trace), (xdsl, xdsl_trace) = runs[True], runs[False]
    assert list(ours) == list(xdsl)
    for k in ours:
        np.testing.assert_array_equal(ours[k], xdsl[k])
    assert len(ours_trace) > 0 and ours_trace == xdsl_trace
    if name == "convnet":
        from geir.testing.suite import assert_close, ort_run

        assert_close(ours["y"], ort_run(small_convnet(), feeds)[0], "small_convnet")


class _OpLog:
    """An interpreter listener writing down which op it is told about, and when."""

    def __init__(self):
        self.seen = []

    def will_interpret_op(self, op, args):
        self.seen.append(("will", op, len(args)))

    def did_interpret_op(self, op, results):
        self.seen.append(("did", op, len(results)))


def test_compiled_kernels_tell_listeners_what_the_interpreter_does():
    module = parse_module(MATMUL, make_context())
    logs = []
    for compiled in (True, False):
        log = _OpLog()
        run_ascend_module(module, {"a": np.ones((32, 32), np.float16), "b": np.ones((32, 32), np.float16)},
                          listeners=(log,), compiled=compiled)
        logs.append(log.seen)
    assert len(logs[0]) > 20 and logs[0] == logs[1]


def test_a_kernel_rewritten_in_place_is_compiled_again():
    module = parse_module(ADD, make_context())
    np.testing.assert_array_equal(run_ascend_module(module, {"x": X, "y": Y})["z"], X + Y)
    yu = next(op for op in module.walk() if isinstance(op, a.AllocOp) and op.memref.name_hint == "yu")
    yu.properties["offset"] = IntegerAttr(0, 64)  # now y's tile lands on x's
    np.testing.assert_array_equal(run_ascend_module(module, {"x": X, "y": Y})["z"], Y + Y)


def test_ops_without_a_compiled_form_run_through_the_interpreter():
    """i32 arithmetic and index_cast (no inline form) run as the interpreter's impls, their
    values converted on the way in and out."""
    from geir.runtime.ascend_compiled import compile_kernel

    text = edit(ADD, "%c32 = arith.constant 32 : index",
                "%h = arith.constant 16 : i32\n  %w = arith.addi %h, %h : i32\n  %c32 = arith.index_cast %w : i32 to index")
    module = parse_module(text, make_context())
    assert compile_kernel(next(op for op in module.ops if isinstance(op, a.KernelOp))) is not None
    for compiled in (True, False):
        np.testing.assert_array_equal(run_ascend_module(module, {"x": X, "y": Y}, compiled=compiled)["z"], X + Y)


def test_a_kernel_without_a_compiled_form_runs_on_the_interpreter():
    """scf.while has no compiled form: the whole kernel runs op by op on xDSL's interpreter."""
    from geir.runtime.ascend_compiled import compile_kernel

    text = edit(ADD, "  scf.for %i = %c0 to %c32 step %c16 {\n",
                "  %end = scf.while (%i = %c0) : (index) -> index {\n"
                "    %more = arith.cmpi ult, %i, %c32 : index\n"
                "    scf.condition(%more) %i : index\n"
                "  } do {\n"
                "  ^bb0(%i: index):\n")
    text = edit(text, "    ascend.set_flag MTE3 -> MTE2 id 0\n  }",
                "    ascend.set_flag MTE3 -> MTE2 id 0\n    %next = arith.addi %i, %c16 : index\n    scf.yield %next : index\n  }")
    module = parse_module(text, make_context())
    module.verify()
    assert compile_kernel(next(op for op in module.ops if isinstance(op, a.KernelOp))) is None
    np.testing.assert_array_equal(run_ascend_module(module, {"x": X, "y": Y})["z"], X + Y)


# ---------------------------------------------------------------------------
# load3d (img2col): the cached box-relative gathers against a direct im2col.
# ---------------------------------------------------------------------------


def load3d_op(box, dst, *, space="l0b", **geometry):
    """A verified `ascend.load3d` (in a cube kernel) of an f32 l1 box of shape `box` into an
    l0 tile `dst`."""
    from xdsl.dialects.builtin import f32

    kernel = a.KernelOp.get("im2col", [], core_type="cube", block_dim=1)
    fm, d = a.AllocOp.get(a.memref_type(box, f32, "l1"), offset=0), a.AllocOp.get(a.memref_type(dst, f32, space), offset=0)
    zero = arith.ConstantOp.from_int_and_width(0, IndexType())  # the integers come with each call
    op = a.Load3dOp.get(fm, [zero, zero], d, [zero, zero, zero], **geometry)
    kernel.body.block.add_ops([fm, d, zero, op, a.ReturnOp()])
    kernel.verify()
    return op


def im2col_reference(fm, ih, iw, k, oh, ow, rows, cols, *, image, kernel, strides, dilations, pads, out, channels):
    """The [rows, cols] im2col tile entry by entry, as the op's documentation defines it, or
    (row, pixel, image row, image column) of the first entry outside the box."""
    (h, w), (kh_, kw_), (sh, sw), (dh, dw), (top, left, _, _) = image, kernel, strides, dilations, pads
    tile = np.zeros((rows, cols), fm.dtype)
    for i in range(rows):
        if fm.ndim == 4:
            c0n = fm.shape[3]
            c1, rem = divmod(k + i, kh_ * kw_ * c0n)
            window, c0 = divmod(rem, c0n)
            c = c1 * c0n + c0
        else:
            c, window = divmod(k + i, kh_ * kw_)
        kh, kw = divmod(window, kw_)
        for j in range(cols):
            py, px = divmod(j, out[1])
            y, x = (oh + py) * sh - top + kh * dh, (ow + px) * sw - left + kw * dw
            if c >= channels or j >= out[0] * out[1] or not (0 <= y < h and 0 <= x < w):
                continue
            by, bx = y - ih, x - iw
            if not (0 <= by < fm.shape[1] and 0 <= bx < fm.shape[2]):
                return i, j, y, x
            tile[i, j] = fm[c // c0n, by, bx, c % c0n] if fm.ndim == 4 else fm[c, by, bx]
    return tile


# (box, tile [rows, cols], geometry, calls (ih, iw, k, oh, ow))
LOAD3D_CASES = {
    # 3x3 pad 1 over a box wider than the image (its columns past the image are zeros)
    "pad": ((3, 4, 8), (32, 16), dict(image=(6, 7), kernel=(3, 3), strides=(1, 1), dilations=(1, 1),
                                      pads=(1, 1, 1, 1), out=(2, 7), channels=3),
            [(0, 0, 0, 0, 0), (1, 0, 0, 2, 0), (2, 0, 0, 4, 0), (2, 0, 16, 4, 0), (1, 0, 5, 2, 0)]),
    # stride 2, a 3x2 kernel, uneven pads, tiles of part of a row (ow > 0)
    "stride 2": ((5, 5, 8), (48, 32), dict(image=(9, 8), kernel=(3, 2), strides=(2, 2), dilations=(1, 1),
                                          pads=(1, 0, 2, 1), out=(2, 2), channels=5),
                 [(0, 0, 0, 0, 0), (0, 0, 6, 0, 2), (1, 0, 13, 1, 2), (3, 0, 0, 2, 0), (4, 0, 7, 3, 2),
                  (4, 0, 24, 3, 0)]),
    # dilation 2 with pad 2: windows reach past the image on every side
    "dilation": ((2, 7, 8), (32, 32), dict(image=(7, 7), kernel=(3, 3), strides=(1, 1), dilations=(2, 2),
                                          pads=(2, 2, 2, 2), out=(3, 7), channels=2),
                 [(0, 0, 0, 0, 0), (0, 0, 9, 3, 0), (0, 0, 16, 4, 0)]),
    # a box reaching past the image's last row: tiles at one box-relative offset, cut by the
    # image's edge at different rows (its rows past the image hold data, which reads as zero)
    "box past the image": ((2, 6, 8), (32, 16), dict(image=(5, 6), kernel=(3, 3), strides=(1, 1),
                                                    dilations=(1, 1), pads=(1, 1, 1, 1), out=(2, 6), channels=2),
                           [(0, 0, 0, 1, 0), (1, 0, 0, 2, 0), (2, 0, 0, 3, 0), (2, 0, 16, 3, 0)]),
    # the same past the last column, with tiles of two pixels of a row
    "box past the image's side": ((2, 4, 8), (32, 16), dict(image=(4, 5), kernel=(3, 3), strides=(1, 1),
                                                           dilations=(1, 1), pads=(1, 1, 1, 1), out=(1, 2),
                                                           channels=2),
                                  [(0, 0, 0, 0, 0), (0, 0, 0, 1, 1), (0, 1, 0, 1, 2), (0, 2, 0, 1, 3)]),
    # interior tiles at different offsets into a box larger than their windows
    "offsets": ((2, 6, 8), (32, 16), dict(image=(12, 12), kernel=(3, 3), strides=(1, 1), dilations=(1, 1),
                                         pads=(1, 1, 1, 1), out=(2, 4), channels=2),
                [(3, 1, 0, 4, 2), (2, 1, 0, 4, 2), (3, 2, 0, 4, 4), (6, 4, 0, 8, 6)]),
    # an NC1HWC0 box: K = (c1, kh, kw, c0), 20 channels (the second block is partial)
    "nc1hwc0": ((2, 4, 6, 16), (64, 16), dict(image=(5, 6), kernel=(3, 3), strides=(1, 1), dilations=(1, 1),
                                             pads=(1, 1, 1, 1), out=(2, 6), channels=20),
                [(0, 0, 0, 0, 0), (0, 0, 64, 0, 0), (1, 0, 136, 2, 0), (1, 0, 240, 3, 0), (1, 0, 0, 3, 0)]),
}


def _load3d_calls(name, space):
    box, (rows, cols), geometry, calls = LOAD3D_CASES[name]
    dst = (rows, cols) if space == "l0b" else (cols, rows)
    op = load3d_op(box, dst, space=space, **geometry)
    fm = RNG.uniform(1, 2, box).astype(np.float32)  # no zeros: a wrong zero shows
    return op, fm, geometry, rows, cols, calls


@pytest.mark.parametrize("space", ["l0b", "l0a"])
@pytest.mark.parametrize("name", list(LOAD3D_CASES))
def test_load3d_gathers_what_a_direct_im2col_does(name, space):
    """Every tile, from `load3d_tile` and from the compiled load3d writing into a NaN-filled
    buffer, equals the direct im2col bit for bit (l0a holds its transpose)."""
    from types import SimpleNamespace

    from geir.runtime.ascend_compiled import _load3d_fn
    from geir.runtime.ascend_semantics import Load3dGeometry, load3d_tile

    op, fm, geometry, rows, cols, calls = _load3d_calls(name, space)
    compiled = _load3d_fn(op, Load3dGeometry(op))
    for ih, iw, k, oh, ow in calls:
        want = im2col_reference(fm, ih, iw, k, oh, ow, rows, cols, **geometry)
        assert isinstance(want, np.ndarray), (ih, iw, k, oh, ow)
        np.testing.assert_array_equal(load3d_tile(op, fm, ih, iw, k, oh, ow, rows, cols), want)
        dst = np.full((rows, cols) if space == "l0b" else (cols, rows), np.nan, np.float32)
        compiled(SimpleNamespace(trace=None, timing=False), None, fm, ih, iw, dst, k, oh, ow)
        np.testing.assert_array_equal(dst, want if space == "l0b" else want.T)


def test_load3d_tiles_of_one_shape_share_their_gather():
    """The index depends on box-relative geometry only: the interior tiles of a tall image
    (each box at its own origin) share one gather, the top and bottom edges get their own."""
    from geir.runtime.ascend_semantics import Load3dGeometry, load3d_plan

    geometry = dict(image=(40, 6), kernel=(3, 3), strides=(1, 1), dilations=(1, 1), pads=(1, 1, 1, 1),
                    out=(2, 6), channels=4)
    op = load3d_op((4, 4, 8), (48, 16), **geometry)
    fm = RNG.uniform(1, 2, (4, 4, 8)).astype(np.float32)
    table = Load3dGeometry(op)
    for oh in range(0, 40, 2):
        ih = min(max(oh - 1, 0), 36)
        base, g = load3d_plan(table, fm.shape, ih, 0, 0, oh, 0, (48, 16))
        want = im2col_reference(fm, ih, 0, 0, oh, 0, 48, 16, **geometry)
        np.testing.assert_array_equal(g.tile(fm.reshape(-1)[base:]), want)
    assert len(table.calls) == 20 and len(table.gathers) == 3


def test_load3d_tiles_a_channel_block_apart_share_their_gather():
    """K rows further by a whole channel block (kernel windows x C0) read the same pattern from
    a base one block further into the box; so does the next output row from a box one row
    down. Rows where the channels run out (20 of 32) need a gather of their own."""
    from geir.runtime.ascend_semantics import Load3dGeometry, load3d_plan

    tables = {}
    for channels in (32, 20):
        geometry = dict(image=(4, 6), kernel=(3, 3), strides=(1, 1), dilations=(1, 1), pads=(1, 1, 1, 1),
                        out=(1, 6), channels=channels)
        op = load3d_op((2, 4, 8, 16), (64, 16), **geometry)
        fm = RNG.uniform(1, 2, (2, 4, 8, 16)).astype(np.float32)
        table = tables[channels] = Load3dGeometry(op)
        calls = [(0, 0, 16, 1, 0), (0, 0, 160, 1, 0), (1, 0, 16, 2, 0)]
        plans = [load3d_plan(table, fm.shape, *call, (64, 16)) for call in calls]
        for call, (base, g) in zip(calls, plans):
            want = im2col_reference(fm, *call, 64, 16, **geometry)
            np.testing.assert_array_equal(g.tile(fm.reshape(-1)[base:]), want)
        assert [base for base, _ in plans] == [0, 4 * 8 * 16, 0]
        assert plans[2][1] is plans[0][1]
    assert len(tables[32].gathers) == 1 and len(tables[20].gathers) == 2


@pytest.mark.parametrize("compiled", [True, False])
def test_load3d_outside_the_box_names_the_entry(compiled):
    """A box one row short: the first entry needing the missing row is the one reported (as
    the direct im2col finds it), by the compiled load3d as the interpreter's error."""
    from types import SimpleNamespace

    from geir.runtime.ascend_compiled import _load3d_fn
    from geir.runtime.ascend_semantics import Load3dGeometry, Load3dOutside, load3d_tile

    box, (rows, cols), geometry, _ = LOAD3D_CASES["nc1hwc0"]
    short = (box[0], 3, *box[2:])
    op = load3d_op(short, (rows, cols), **geometry)
    fm = RNG.uniform(1, 2, short).astype(np.float32)
    call = (1, 0, 96, 2, 0)  # K rows of kh = 2: output row 3 reads image row 4, past the box's 1..3
    want = im2col_reference(fm, *call, rows, cols, **geometry)
    assert isinstance(want, tuple)
    assert isinstance(im2col_reference(fm, 1, 0, 0, 2, 0, rows, cols, **geometry), np.ndarray)  # kh < 2 fits
    if not compiled:
        with pytest.raises(Load3dOutside) as e:
            load3d_tile(op, fm, *call, rows, cols)
        assert e.value.args == want
        return
    run = SimpleNamespace(trace=None, block=None, timing=False)
    ih, iw, k, oh, ow = call
    with pytest.raises(InterpreterError, match=rf"im2col entry \[{k + want[0]}, pixel {want[1]}\] reads image row "
                                               rf"{want[2]}, column {want[3]}, outside the l1 box of rows 1..3"):
        _load3d_fn(op, Load3dGeometry(op))(run, None, fm, ih, iw, np.zeros((rows, cols), np.float32), k, oh, ow)


def test_copy_pad_writes_the_source_and_zeroes_the_rest():
    """The compiled `copy {pad}` fills a poisoned destination as copy_data's zero-extension."""
    from types import SimpleNamespace

    from xdsl.dialects.builtin import f32

    from geir.runtime.ascend_compiled import _copy_fn
    from geir.runtime.ascend_semantics import copy_data

    block = Block(arg_types=[a.memref_type([3, 5, 6], f32, "gm"), a.memref_type([4, 5, 8], f32, "l1")])
    op = a.CopyOp.get(*block.args, pad=True)
    block.add_op(op)
    src = RNG.uniform(1, 2, (3, 5, 6)).astype(np.float32)
    dst = np.full((4, 5, 8), np.nan, np.float32)
    _copy_fn(op)(SimpleNamespace(trace=None, timing=False, checked_paths={("gm", "l1")}), None, src, dst)
    np.testing.assert_array_equal(dst, copy_data(op, src, dst.shape))
    assert (dst[:3, :, :6] == src).all() and not dst[3].any() and not dst[:, :, 6:].any()


@pytest.mark.parametrize("case", [
    # (layout, src shape, dst shape, src/dst spaces, src/dst types, pad, relu)
    ("nz2nd", (3, 2, 16, 16), (32, 48), ("gm", "l1"), ("f32", "f32"), False, False),
    ("nd2nc1hwc0", (48, 16), (3, 16, 16), ("l0c", "gm"), ("f32", "f32"), False, False),
    ("nd2nc1hwc0", (48, 16), (3, 10, 16), ("l0c", "gm"), ("f32", "f16"), True, True),  # cropped, relu'd
    ("nd2nc1hwc0", (32, 16), (3, 16, 16), ("l0c", "gm"), ("f32", "f32"), True, False),  # a block of zeros
])
def test_blocked_copies_written_in_place_match_copy_data(case):
    """The compiled fast paths for FRACTAL weights into l1 and l0c rows out as NC1HWC0 blocks
    write what copy_data computes, also into a strided destination view."""
    from types import SimpleNamespace

    from xdsl.dialects.builtin import f16, f32

    from geir.runtime.ascend_compiled import _copy_fn
    from geir.runtime.ascend_semantics import copy_data

    layout, sshape, dshape, (ss, ds), (st, dt), pad, relu = case
    types = {"f32": f32, "f16": f16}
    block = Block(arg_types=[a.memref_type(sshape, types[st], ss), a.memref_type(dshape, types[dt], ds)])
    op = a.CopyOp.get(*block.args, layout=layout, pad=pad, relu=relu)
    block.add_op(op)
    src = RNG.uniform(-2, 2, sshape).astype(np.float32)
    outer = np.full((*dshape[:-1], dshape[-1] + 16), np.nan, np.float16 if dt == "f16" else np.float32)
    dst = outer[..., 8:8 + dshape[-1]]  # a strided view, as a tile of a larger buffer
    _copy_fn(op)(SimpleNamespace(trace=None, timing=False, checked_paths={(ss, ds)}), None, src, dst)
    np.testing.assert_array_equal(dst, copy_data(op, src, dst.shape).astype(dst.dtype))
    assert np.isnan(outer[..., :8]).all() and np.isnan(outer[..., 8 + dshape[-1]:]).all()


def test_a_finished_program_frees_its_compiled_kernels_and_gathers():
    """The compiled code and load3d index arrays live on the kernel ops: nothing global keeps
    them once the program is gone."""
    import gc
    import weakref

    import geir
    from geir.runtime.ascend_compiled import held_bytes
    from geir.runtime.ascend_semantics import Load3dGeometry

    compiled = geir.compile(small_convnet(), opt_level=2, precision_mode="must_keep_origin_dtype")
    compiled.run(compiled.random_inputs(seed=0))
    assert held_bytes(compiled.module) > 0
    kernels = [weakref.ref(op) for op in compiled.module.walk() if isinstance(op, a.KernelOp)]
    tables = [weakref.ref(x) for x in gc.get_objects() if isinstance(x, Load3dGeometry)]
    assert kernels and tables
    del compiled
    gc.collect()
    assert not any(r() for r in kernels) and not any(r() for r in tables)
