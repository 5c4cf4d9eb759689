"""f16 and bf16 through the stack: element types and weights in the IR, the reference
semantics at the declared dtype, every kernel template against the graph interpreter at the
same dtype and against an f32 reference, and the simulator's dtype rates."""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, ModuleOp
from xdsl.ir import Block, Region

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.dialects import make_context
from geir.ir.text import print_module, parse_module
from geir.runtime.ascend_interpreter import run_ascend_module
from geir.ir.types import (
    BF16,
    array_from_dense,
    dense_from_array,
    is_float,
    is_float_dtype,
    is_low_precision,
    to_dtype,
    to_element_type,
)

RNG = np.random.default_rng(0)
LOW = [np.dtype(np.float16), BF16]
LOW_IDS = ["f16", "bf16"]


def bits(x: np.ndarray) -> np.ndarray:
    """The bytes of an array, to compare NaNs and signed zeros exactly."""
    return np.ascontiguousarray(x).view(np.uint8)


# ---------------------------------------------------------------------------
# Element types and weights (ir/types.py, ir/text.py).
# ---------------------------------------------------------------------------


def test_bf16_is_an_element_type():
    assert to_element_type(ml_dtypes.bfloat16) == BFloat16Type()
    assert to_dtype(BFloat16Type()) == BF16
    assert is_float(BFloat16Type()) and is_float(Float16Type()) and is_float(Float32Type())
    # numpy does not count ml_dtypes' bfloat16 as floating; geir's helper does
    assert not np.issubdtype(BF16, np.floating)
    assert is_float_dtype(BF16) and is_float_dtype(np.float16) and not is_float_dtype(np.int16)
    assert is_low_precision(BF16) and is_low_precision(np.float16) and not is_low_precision(np.float32)


@pytest.mark.parametrize("dtype", LOW, ids=LOW_IDS)
def test_dense_attribute_keeps_the_bits(dtype):
    x = np.array([[1.5, -2.0, np.inf], [np.nan, -0.0, 3.1416]]).astype(dtype)
    attr = dense_from_array(x)
    assert attr.get_type().element_type == to_element_type(dtype)
    np.testing.assert_array_equal(bits(array_from_dense(attr)), bits(x))


def _constants_module(arrays: list[np.ndarray]) -> ModuleOp:
    block = Block()
    ops = [g.ConstantOp.from_array(x) for x in arrays]
    for op in ops:
        block.add_op(op)
    block.add_op(func.ReturnOp(*(op.output for op in ops)))
    fn = func.FuncOp("main", ([], [op.output.type for op in ops]), Region(block))
    return ModuleOp([fn])


@pytest.mark.parametrize("dtype", LOW, ids=LOW_IDS)
def test_weights_round_trip_through_mlir_text(dtype):
    """Large weights print as resource blobs, small ones as literals, splats as one value,
    non-finite ones as hex: each parses back to the same bits."""
    arrays = [
        RNG.standard_normal((8, 8)).astype(dtype),          # a resource blob
        np.array([1.5, -2.0], dtype),                        # a literal
        np.array([np.inf, np.nan, 1.0], dtype),              # non-finite: hex
        np.full(40, 0.1, dtype),                             # a splat
        np.array([-np.inf] * 20, dtype),                     # a non-finite blob
    ]
    text = print_module(_constants_module(arrays))
    assert "dense_resource<" in text and "dense<\"0x" in text
    module = parse_module(text, make_context())
    consts = [op for op in module.walk() if isinstance(op, g.ConstantOp)]
    for op, x in zip(consts, arrays, strict=True):
        y = op.array()
        assert y.dtype == x.dtype and y.shape == x.shape
        np.testing.assert_array_equal(bits(y), bits(x))


# ---------------------------------------------------------------------------
# The ascend dialect at run time (runtime/ascend_*.py): bf16 buffers and conversions.
# ---------------------------------------------------------------------------

PROGRAMS = Path(__file__).resolve().parents[1] / "dialects" / "ascend"


def _parse(text: str) -> ModuleOp:
    module = parse_module(text, make_context())
    module.verify()
    return module


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "interpreted"])
def test_hand_written_bf16_program(compiled):
    """test/dialects/ascend/bf16.mlir: bf16 x bf16 accumulated in f32, rounded to nearest even
    (relu on the way) by the FIX copy; and the vector kernel's vcast / vmuls in f32 / vcast,
    vcopy, vdup, vbrcb and vtranspose on bf16."""
    module = _parse((PROGRAMS / "bf16.mlir").read_text())
    a_, b_, x = (RNG.standard_normal(s).astype(BF16) for s in ((16, 32), (32, 16), (16, 32)))
    out = run_ascend_module(module, {"a": a_, "b": b_, "x": x}, compiled=compiled)
    assert out["y"].dtype == BF16 and out["t"].dtype == BF16
    product = np.maximum(a_.astype(np.float32) @ b_.astype(np.float32), 0)
    np.testing.assert_array_equal(bits(out["y"]), bits(product.astype(BF16)))
    np.testing.assert_array_equal(bits(out["t"]), bits((x.astype(np.float32) * 2).astype(BF16).T))


_UNWRITTEN = """
ascend.kernel @k(%x: memref<8x16xf32, "gm">, %y: memref<8x16xbf16, "gm">, %z: memref<8x16xbf16, "gm">)
    attributes {block_dim = 1 : i64, core_type = "vector"} {
  %f = ascend.alloc {offset = 0 : i64} : memref<8x16xf32, "ub">
  %h = ascend.alloc {offset = 512 : i64} : memref<8x16xbf16, "ub">
  %u = ascend.alloc {offset = 1024 : i64} : memref<8x16xbf16, "ub">
  ascend.copy %x, %f : memref<8x16xf32, "gm"> to memref<8x16xf32, "ub">
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  ascend.vcast %f, %h : memref<8x16xf32, "ub">, memref<8x16xbf16, "ub">
  ascend.set_flag V -> MTE3 id 0
  ascend.wait_flag V -> MTE3 id 0
  ascend.copy %h, %y : memref<8x16xbf16, "ub"> to memref<8x16xbf16, "gm">
  ascend.copy %u, %z : memref<8x16xbf16, "ub"> to memref<8x16xbf16, "gm">
  ascend.return
}
func.func @main(%x: memref<8x16xf32, "gm"> {onnx.name = "x"}, %y: memref<8x16xbf16, "gm"> {onnx.name = "y", ascend.output},
                %z: memref<8x16xbf16, "gm"> {onnx.name = "z", ascend.output}) {
  %s = ascend.stream 0
  ascend.launch @k on %s(%x, %y, %z) : (memref<8x16xf32, "gm">, memref<8x16xbf16, "gm">, memref<8x16xbf16, "gm">)
  func.return
}
"""


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "interpreted"])
def test_vcast_to_bf16_rounds_to_nearest_even_and_unwritten_bf16_is_nan(compiled):
    x = RNG.standard_normal((8, 16)).astype(np.float32) * 100
    x[0, :6] = [1.00390625, 1.01171875, -1.00390625, np.inf, np.nan, 3.4e38]  # ties to even, specials
    out = run_ascend_module(_parse(_UNWRITTEN), {"x": x}, compiled=compiled)
    np.testing.assert_array_equal(bits(out["y"]), bits(x.astype(BF16)))
    assert np.isnan(out["z"].astype(np.float32)).all()  # ub nobody wrote: 0xFFFF, a bf16 NaN


def test_f16_vreduce_accumulates_in_f32():
    """A sum of f16 along a strided axis: numpy would add in f16 (0.1 * 4096 lands near
    256 after rounding at every step), the model accumulates in f32 as the reference does."""
    from xdsl.dialects.builtin import DenseArrayBase, StringAttr, i64

    from geir.runtime.ascend_semantics import vector_kernel

    src = a.AllocOp.get(a.memref_type([4096, 16], Float16Type(), "ub"))
    dst = a.AllocOp.get(a.memref_type([1, 16], Float16Type(), "ub"))
    op = a.VreduceOp.create(operands=[src.memref, dst.memref],
                            properties={"kind": StringAttr("sum"), "axes": DenseArrayBase.from_list(i64, [0])})
    x = np.full((4096, 16), 0.1, np.float16)
    got = vector_kernel(op)((x, np.empty((1, 16), np.float16))).astype(np.float16)
    np.testing.assert_array_equal(got, np.full((1, 16), x.astype(np.float32).sum(0)[0], np.float16))


# ---------------------------------------------------------------------------
# Every template kind in f16 and bf16: the ascend interpreter against the graph interpreter
# at the same dtype (within a few units in the last place), and against the same program in
# f32 on the same inputs (cosine).
# ---------------------------------------------------------------------------

KINDS = {
    "cube-matmul": """func.func @main(%a: tensor<64x96xT>, %b: tensor<96x80xT>, %c: tensor<80xT>) -> tensor<64x80xT> {
  %y = graph.matmul %a, %b : (tensor<64x96xT>, tensor<96x80xT>) -> tensor<64x80xT>
  %z = graph.add %y, %c : (tensor<64x80xT>, tensor<80xT>) -> tensor<64x80xT>
  %r = graph.gelu %z {approximate = "tanh"} : (tensor<64x80xT>) -> tensor<64x80xT>
  func.return %r : tensor<64x80xT>
}""",
    "cube-conv": """func.func @main(%x: tensor<1x8x12x12xT>, %w: tensor<16x8x3x3xT>, %b: tensor<16xT>) -> tensor<1x16x12x12xT> {
  %y = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x12x12xT>, tensor<16x8x3x3xT>, tensor<16xT>) -> tensor<1x16x12x12xT>
  %r = graph.sigmoid %y : (tensor<1x16x12x12xT>) -> tensor<1x16x12x12xT>
  func.return %r : tensor<1x16x12x12xT>
}""",
    "depthwise": """func.func @main(%x: tensor<1x40x28x28xT>, %w: tensor<40x1x3x3xT>) -> tensor<1x40x14x14xT> {
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, group = 40 : i64} : (tensor<1x40x28x28xT>, tensor<40x1x3x3xT>) -> tensor<1x40x14x14xT>
  %r = graph.relu %y : (tensor<1x40x14x14xT>) -> tensor<1x40x14x14xT>
  func.return %r : tensor<1x40x14x14xT>
}""",
    "row-elementwise": """func.func @main(%x: tensor<8x200xT>, %y: tensor<200xT>) -> tensor<8x200xT> {
  %a = graph.add %x, %y : (tensor<8x200xT>, tensor<200xT>) -> tensor<8x200xT>
  %b = graph.gelu %a {approximate = "none"} : (tensor<8x200xT>) -> tensor<8x200xT>
  %c = graph.mul %b, %x : (tensor<8x200xT>, tensor<8x200xT>) -> tensor<8x200xT>
  %d = graph.sigmoid %c : (tensor<8x200xT>) -> tensor<8x200xT>
  func.return %d : tensor<8x200xT>
}""",
    "row-softmax": """func.func @main(%x: tensor<4x8x40xT>) -> tensor<4x8x40xT> {
  %y = graph.softmax %x {axis = -1 : i64} : (tensor<4x8x40xT>) -> tensor<4x8x40xT>
  func.return %y : tensor<4x8x40xT>
}""",
    "row-layernorm": """func.func @main(%x: tensor<16x64xT>, %g: tensor<64xT>, %b: tensor<64xT>) -> tensor<16x64xT> {
  %y = graph.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64} : (tensor<16x64xT>, tensor<64xT>, tensor<64xT>) -> tensor<16x64xT>
  func.return %y : tensor<16x64xT>
}""",
    "row-rmsnorm": """func.func @main(%x: tensor<16x64xT>, %g: tensor<64xT>) -> tensor<16x64xT> {
  %y = graph.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : (tensor<16x64xT>, tensor<64xT>) -> tensor<16x64xT>
  func.return %y : tensor<16x64xT>
}""",
    "row-reduction": """func.func @main(%x: tensor<6x10x36xT>) -> tensor<6x1x36xT> {
  %y = graph.reduce_mean %x {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<6x10x36xT>) -> tensor<6x1x36xT>
  func.return %y : tensor<6x1x36xT>
}""",
    "pool-max": """func.func @main(%x: tensor<1x8x14x14xT>) -> tensor<1x8x7x7xT> {
  %y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x14x14xT>) -> tensor<1x8x7x7xT>
  func.return %y : tensor<1x8x7x7xT>
}""",
    "pool-avg": """func.func @main(%x: tensor<1x8x14x14xT>) -> tensor<1x8x7x7xT> {
  %y = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x14x14xT>) -> tensor<1x8x7x7xT>
  func.return %y : tensor<1x8x7x7xT>
}""",
    "lrn": """func.func @main(%x: tensor<1x12x6x6xT>) -> tensor<1x12x6x6xT> {
  %y = graph.lrn %x {size = 5 : i64, alpha = 1.0e-04 : f64, beta = 7.5e-01 : f64, bias = 1.0 : f64} : (tensor<1x12x6x6xT>) -> tensor<1x12x6x6xT>
  func.return %y : tensor<1x12x6x6xT>
}""",
    "data": """func.func @main(%x: tensor<4x24x40xT>, %y: tensor<4x8x40xT>) -> tensor<40x4x32xT> {
  %c = graph.concat %x, %y {axis = 1 : i64} : (tensor<4x24x40xT>, tensor<4x8x40xT>) -> tensor<4x32x40xT>
  %t = graph.transpose %c {perm = array<i64: 2, 0, 1>} : (tensor<4x32x40xT>) -> tensor<40x4x32xT>
  func.return %t : tensor<40x4x32xT>
}""",
    "trans_data": """func.func @main(%x: tensor<1x40x4x4xT>) -> tensor<1x3x4x4x16xT, #graph.format<NC1HWC0, NCHW, [1, 40, 4, 4]>> {
  %y = graph.trans_data %x {src_format = "NCHW", dst_format = "NC1HWC0"} : (tensor<1x40x4x4xT>) -> tensor<1x3x4x4x16xT, #graph.format<NC1HWC0, NCHW, [1, 40, 4, 4]>>
  func.return %y : tensor<1x3x4x4x16xT, #graph.format<NC1HWC0, NCHW, [1, 40, 4, 4]>>
}""",
    "cast": """func.func @main(%x: tensor<8x100xf32>) -> (tensor<8x100xT>, tensor<8x100xf32>) {
  %y = graph.cast %x {to = T} : (tensor<8x100xf32>) -> tensor<8x100xT>
  %z = graph.cast %y {to = f32} : (tensor<8x100xT>) -> tensor<8x100xf32>
  func.return %y, %z : tensor<8x100xT>, tensor<8x100xf32>
}""",
}
TEMPLATE = {"cube-matmul": "matmul", "cube-conv": "conv", "depthwise": "depthwise", "pool-max": "pool",
            "pool-avg": "pool", "lrn": "lrn", "data": "data", "trans_data": "layout"}
"""The template each kind's kernel comes from (the row template for the others)."""
ULPS = 2
"""Units in the last place of the dtype a kernel may be off the graph interpreter, relative to
|value| + the largest |value|: f16 vector instructions round each result where the reference
rounds once per op; bf16 kernels compute a fusion in f32 and round once per output."""


def _text(kind: str, dtype: str) -> str:
    return KINDS[kind].replace("xT>", f"x{dtype}>").replace("xT,", f"x{dtype},").replace("to = T", f"to = {dtype}")


def _lowered(text: str, fuse: bool = True) -> tuple[ModuleOp, ModuleOp]:
    """(the graph program, the same lowered: graph-fuse, then convert-graph-to-ascend)."""
    from xdsl.context import Context

    from geir.driver.registry import get_all_passes
    from geir.lowering.graph_to_ascend import ConvertGraphToAscend, fallback_ops

    graph, program = _parse(text), _parse(text)
    if fuse:
        get_all_passes()["graph-fuse"]()().apply(Context(), program)
    ConvertGraphToAscend().apply(Context(), program)
    program.verify()
    assert not fallback_ops(program)
    return graph, program


@pytest.mark.parametrize("dtype", LOW_IDS)
@pytest.mark.parametrize("kind", list(KINDS))
def test_template_kind_matches_the_graph_at_its_dtype_and_f32(kind, dtype):
    from geir.runtime.interpreter import random_inputs, run_module

    graph, program = _lowered(_text(kind, dtype))
    kernels = [k for k in program.ops if isinstance(k, a.KernelOp)]
    assert TEMPLATE.get(kind, "row") in {k.attributes[attr_names.TEMPLATE].data for k in kernels}
    feeds = random_inputs(graph, seed=1)
    want = run_module(graph, feeds)
    got = run_ascend_module(program, feeds)
    f32 = run_module(_parse(_text(kind, "f32")),
                     {n: v.astype(np.float32) if is_low_precision(v.dtype) else v for n, v in feeds.items()})
    ulp = {"f16": 2.0 ** -10, "bf16": 2.0 ** -7}[dtype]
    for name, w in want.items():
        y = got[name]
        assert y.dtype == w.dtype
        wf, yf = w.astype(np.float64), y.astype(np.float64)
        err = np.abs(yf - wf)
        bound = ULPS * ulp * (np.abs(wf) + np.abs(wf).max())
        assert (err <= bound).all(), f"{name}: {err.max():.3g} off the graph interpreter (bound {bound.max():.3g})"
        r = f32[name].astype(np.float64).ravel()
        cos = float(yf.ravel() @ r / (np.linalg.norm(yf) * np.linalg.norm(r)))
        assert cos >= 0.999, f"{name}: cosine {cos:.6f} with the f32 program"


@pytest.mark.parametrize("dtype", LOW_IDS)
@pytest.mark.parametrize("op", ["softmax", "safe_softmax", "log_softmax"])
def test_softmax_kernels_equal_the_graph_interpreter_bit_for_bit(op, dtype):
    """The softmaxes are several vector instructions: in f16 each rounds its result (x - max,
    exp, the f32-accumulated sum, the division), in bf16 the row is computed in f32 and
    rounded once. The reference computes them the same way, so no ulp is allowed (ONNX's
    reference, numpy in f16, rounds the f16 steps alike: test_onnx_conformance)."""
    from geir.runtime.interpreter import random_inputs, run_module

    text = f"""func.func @main(%x: tensor<4x8x40x{dtype}>) -> tensor<4x8x40x{dtype}> {{
  %y = graph.{op} %x {{axis = -1 : i64}} : (tensor<4x8x40x{dtype}>) -> tensor<4x8x40x{dtype}>
  func.return %y : tensor<4x8x40x{dtype}>
}}"""
    graph, program = _lowered(text)
    feeds = random_inputs(graph, seed=1)
    want, got = run_module(graph, feeds), run_ascend_module(program, feeds)
    for name, w in want.items():
        np.testing.assert_array_equal(got[name].astype(np.float64), w.astype(np.float64), err_msg=name)


# ---------------------------------------------------------------------------
# Tiles are sized in bytes.
# ---------------------------------------------------------------------------


def _kernel_allocs(text: str) -> dict[str, list[tuple[int, ...]]]:
    """Shapes of the on-chip buffers of the lowered program, by memory space."""
    _, program = _lowered(text, fuse=False)
    shapes: dict[str, list[tuple[int, ...]]] = {}
    for op in program.walk():
        if isinstance(op, a.AllocOp) and op.space != "gm":
            shapes.setdefault(op.space, []).append(tuple(op.memref.type.get_shape()))
    return shapes


def test_cube_tiles_hold_twice_the_elements_of_f32_in_2_byte_types():
    """K = 4096: the l1 chunk of K and the l0 step are limited by bytes; a 2-byte operand's
    are twice as long as f32's, the f32 accumulator is the same (N = 256: at 128 the
    f16 tiling takes smaller tiles over more blocks, its re-reads hitting L2)."""
    mm = """func.func @main(%a: tensor<128x4096xT>, %b: tensor<4096x256xT>) -> tensor<128x256xT> {
  %y = graph.matmul %a, %b : (tensor<128x4096xT>, tensor<4096x256xT>) -> tensor<128x256xT>
  func.return %y : tensor<128x256xT>
}"""
    f32 = _kernel_allocs(mm.replace("xT>", "xf32>").replace("xT,", "xf32,"))
    for dtype in LOW_IDS:
        low = _kernel_allocs(mm.replace("xT>", f"x{dtype}>").replace("xT,", f"x{dtype},"))
        for space in ("l1", "l0a"):
            (m32, k32), (m, k) = f32[space][0], low[space][0]
            assert m == m32 and k == 2 * k32, (space, f32[space][0], low[space][0])
        assert low["l0c"] == f32["l0c"]


def test_row_tiles_take_bytes():
    """An elementwise kernel limited by ub: f16 tiles hold twice f32's elements; bf16 ones
    keep an f32 buffer and a bf16 staging buffer per value, so 2/3 of f32's."""
    add = """func.func @main(%x: tensor<48x65536xT>, %y: tensor<48x65536xT>) -> tensor<48x65536xT> {
  %z = graph.add %x, %y : (tensor<48x65536xT>, tensor<48x65536xT>) -> tensor<48x65536xT>
  func.return %z : tensor<48x65536xT>
}"""
    tile = {t: max(math.prod(s) for s in _kernel_allocs(add.replace("xT", f"x{t}"))["ub"])
            for t in ("f32", "f16", "bf16")}
    assert tile["f16"] == 2 * tile["f32"]
    assert tile["bf16"] * 3 == tile["f32"] * 2


# ---------------------------------------------------------------------------
# The simulator prices each instruction at its dtype's rate (target/devices/*.json).
# ---------------------------------------------------------------------------

MATMUL = """func.func @main(%a: tensor<128x512xT>, %b: tensor<512x256xT>) -> tensor<128x256xT> {
  %y = graph.matmul %a, %b : (tensor<128x512xT>, tensor<512x256xT>) -> tensor<128x256xT>
  func.return %y : tensor<128x256xT>
}"""


def _profiled(text: str, device=None):
    from geir.runtime.interpreter import random_inputs
    from geir.runtime.simulator import record, simulate

    graph, program = _lowered(text, fuse=False)
    _, records = record(program, random_inputs(graph, seed=2))
    return records, simulate(records, **({"device": device} if device is not None else {}))


def test_mmad_events_carry_their_dtype_and_f32_costs_four_times_f16():
    busy, flops = {}, {}
    for dtype in ("f32", "f16", "bf16"):
        records, sim = _profiled(MATMUL.replace("xT", f"x{dtype}"))
        mmads = [r.event for r in records if isinstance(r.event.op, a.MmadOp)]
        assert mmads and {ev.dtype for ev in mmads} == {dtype}
        (k,) = sim.kernels
        busy[dtype], flops[dtype] = k.pipe_busy_us["M"], k.flops
    # the same fractals (128 / 16 x 512 / 16 x 256 / 16) at 1, 1 and 1/4 a cycle
    assert busy["f16"] == pytest.approx(8 * 32 * 16 / 1.8e9 * 1e6)
    assert busy["bf16"] == pytest.approx(busy["f16"])
    assert busy["f32"] == pytest.approx(4 * busy["f16"])
    assert flops == {d: {d: 2 * 128 * 512 * 256} for d in ("f32", "f16", "bf16")}


def test_vector_events_are_priced_at_their_dtype(tmp_path):
    """A device whose f32 and bf16 vector rates differ from f16's: the time of each kernel's
    vector instructions follows the dtypes its events carry - f16 instructions in f16, a bf16
    kernel's arithmetic and its conversions in f32, its moves of bits in bf16."""
    import json

    from geir.target.cost_model import CostModel
    from geir.target.device import DEVICES_DIR, load_device

    data = json.loads((DEVICES_DIR / "ascend910b.json").read_text())
    for cls in ("binary", "unary"):
        rates = data["vector_bytes_per_cycle"][cls]["value"]
        rates["f32"], rates["bf16"] = rates["f16"] / 2, rates["f16"] / 4
    path = tmp_path / "slow_f32.json"
    path.write_text(json.dumps(data))
    spec = load_device(path)
    cost = CostModel(spec)
    softmax = KINDS["row-softmax"]
    for dtype, computed in (("f16", {"f16"}), ("bf16", {"f32"}), ("f32", {"f32"})):
        records, sim = _profiled(softmax.replace("xT", f"x{dtype}"), device=spec)
        vector = [r.event for r in records if isinstance(r.event.op, a.VectorOp)]
        kinds = {type(ev.op) for ev in vector}
        assert {ev.dtype for ev in vector if type(ev.op) not in a.BF16_VECTOR_OPS} == computed
        if dtype == "bf16":
            assert a.VcastOp in kinds and {ev.dtype for ev in vector if isinstance(ev.op, a.VcastOp)} == {"f32"}
        want = sum(cost.vector_cycles(ev.detail["kind"], ev.nbytes, ev.dtype) for ev in vector) / spec.vector_clock_hz
        (k,) = sim.kernels
        assert k.pipe_busy_us["V"] == pytest.approx(want * 1e6)


def test_fp16_matmul_model_is_faster_than_fp32_on_the_simulator():
    """An MLP of three [1024, 2048] x [2048, 2048] products at O3: the cube runs 2-byte
    operands at four times the f32 rate and their tiles move half the bytes."""
    import onnx
    from onnx import helper, numpy_helper

    import geir
    from geir.testing.float16 import to_low_precision

    rng = np.random.default_rng(0)
    n, d = 1024, 2048
    ws = [numpy_helper.from_array((rng.standard_normal((d, d)) / 45).astype(np.float32), f"w{i}") for i in range(3)]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["h0"]), helper.make_node("Relu", ["h0"], ["r0"]),
             helper.make_node("MatMul", ["r0", "w1"], ["h1"]), helper.make_node("Relu", ["h1"], ["r1"]),
             helper.make_node("MatMul", ["r1", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [n, d])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [n, d])], ws)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.standard_normal((n, d)).astype(np.float32)
    latency = {}
    for dtype, m in (("f32", model), ("f16", to_low_precision(model, "float16"))):
        cm = geir.compile(m, opt_level=3, precision_mode="must_keep_origin_dtype")  # each at its own type
        _, report = cm.profile({"x": x.astype(np.float16 if dtype == "f16" else np.float32)})
        latency[dtype] = report["latency_us"]
    assert latency["f16"] < 0.6 * latency["f32"], latency


# ---------------------------------------------------------------------------
# The offline model keeps bf16 weights (driver/om.py).
# ---------------------------------------------------------------------------


def test_offline_model_keeps_bf16_weights(tmp_path):
    import json
    import zipfile

    import geir
    from geir.testing.float16 import to_low_precision
    from geir.testing.suite import light_model

    cm = geir.compile(to_low_precision(light_model("light_squeezenet"), "bfloat16"), opt_level=2,
                      precision_mode="must_keep_origin_dtype")  # force_fp16 would make it f16
    path = tmp_path / "model.om"
    cm.save(path)
    with zipfile.ZipFile(path) as z:
        manifest = json.loads(z.read("manifest.json"))
        program = z.read("program.mlir").decode()
    assert {i["dtype"] for i in manifest["inputs"]} == {"bfloat16"}
    assert "ascend.constant dense_resource<" in program and manifest["weights"]
    loaded = geir.load(path)
    weights = {op.results[0].name_hint: op.value for op in cm.module.walk() if isinstance(op, a.ConstantOp)}
    reloaded = {op.results[0].name_hint: op.value for op in loaded.module.walk() if isinstance(op, a.ConstantOp)}
    assert weights and weights.keys() == reloaded.keys()
    assert any(str(v.get_type().element_type) == "bf16" for v in weights.values())
    for name, value in weights.items():
        assert reloaded[name].data.data == value.data.data, name
    (n, shape, dtype), = cm.input_specs()
    feeds = {n: RNG.standard_normal(shape).astype(dtype)}
    a_, b_ = cm.run(feeds), loaded.run(feeds)
    for k in a_:
        np.testing.assert_array_equal(bits(a_[k]), bits(b_[k]))
