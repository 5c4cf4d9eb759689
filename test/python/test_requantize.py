"""graph.requantize and the fold that makes it (graph-fold-qdq's FoldRequantize): the reference
semantics against the formula written out element by element (one f32 multiply, half to even,
the zero point, saturation at both ends), and the fold on small int8 models, whose int8 outputs
move by at most one quantization step and only where a value lies near a rounding boundary
(the scale is the one the FIX pipe holds: 2^-11 of itself away at most)."""

from __future__ import annotations

import numpy as np
import pytest

import geir
from geir.dialects import graph as g
from geir.dialects import make_context
from geir.ir.locations import loc_names
from geir.ir.text import parse_module
from geir.passes.graph.fold_qdq import fold_qdq
from geir.reference.graph import dequantize, quantize, requantize
from geir.runtime.interpreter import run_module


def _formula(acc: np.ndarray, scale: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    """The docstring's semantics one element at a time: t = f32(acc) * scale rounded once to f32
    (the f64 product of two f32 values is exact), Python's round (half to even), + zero point,
    clamped to the zero point type's range."""
    info = np.iinfo(zero_point.dtype)
    scale = np.broadcast_to(scale, acc.shape)
    out = np.empty(acc.shape, zero_point.dtype)
    for i in np.ndindex(acc.shape):
        t = float(np.float32(np.float64(np.float32(acc[i])) * np.float64(scale[i])))
        out[i] = min(max(round(t) + int(zero_point), info.min), info.max)
    return out


@pytest.mark.parametrize("zp", [np.int8(0), np.int8(-128), np.int8(7), np.uint8(0), np.uint8(128)])
def test_reference_is_the_formula(zp):
    rng = np.random.default_rng(5)
    acc = np.concatenate([
        rng.integers(-3000, 3000, 200),
        [1, 3, 5, -1, -3, -5, 0, 2**31 - 1, -2**31, 10**6, -10**6, 255, 256, 257],
    ]).astype(np.int32).reshape(2, 107)
    for scale in (np.float32(0.5), np.float32(0.0371), rng.uniform(0.01, 0.2, (2, 1)).astype(np.float32)):
        got = requantize(acc, scale, zp)
        assert got.dtype == zp.dtype
        np.testing.assert_array_equal(got, _formula(acc, scale, zp))
        # quantize(dequantize(acc, scale), 1.0, zero_point), exactly
        np.testing.assert_array_equal(got, quantize(dequantize(acc, np.asarray(scale)), np.float32(1.0), zp))


def test_reference_ties_to_even_and_saturates_both_ends():
    acc = np.array([1, 3, 5, -1, -3, -5, 10**6, -10**6], np.int32)
    half = np.float32(0.5)  # t = 0.5, 1.5, 2.5, -0.5, -1.5, -2.5: ties
    np.testing.assert_array_equal(requantize(acc, half, np.int8(0)), [0, 2, 2, 0, -2, -2, 127, -128])
    np.testing.assert_array_equal(requantize(acc, half, np.int8(-128)), [-128, -126, -126, -128, -128, -128, 127, -128])
    np.testing.assert_array_equal(requantize(acc, half, np.uint8(3)), [3, 5, 5, 3, 1, 1, 255, 0])


def test_one_multiply_moves_a_rounding_boundary_by_one_step():
    """Why the fold is within one step and not exact: acc * s / s_y rounds twice in f32, the
    requantize's acc * f32(s / s_y) once; where the exact value is a tie (3 * 0.7 / 0.6 = 3.5)
    the two may round to neighbouring integers."""
    s, sy = np.float32(0.7), np.float32(0.6)
    acc = np.arange(-20000, 20000, dtype=np.int32)
    two = quantize(dequantize(acc, np.asarray(s)), sy, np.int8(0)).astype(np.int64)
    one = requantize(acc, np.float32(np.float64(s) / np.float64(sy)), np.int8(0)).astype(np.int64)
    at3 = int(np.flatnonzero(acc == 3)[0])
    assert (two[at3], one[at3]) == (3, 4)
    assert np.abs(one - two).max() == 1
    assert (one != two).mean() < 0.01


def _conv_model(zero_point: int, relu: bool, scale: float) -> str:
    """x -> quantize -> dequantize -> conv (per-channel int8 weights) -> [relu] -> quantize:
    the int8 conv and the requantization graph-fold-qdq makes of it."""
    rng = np.random.default_rng(2)
    w = rng.integers(-127, 128, (8, 4, 3, 3))
    sw = rng.uniform(0.002, 0.02, (8, 1, 1, 1))

    def dense(a):
        return np.array2string(np.asarray(a), separator=", ", threshold=10**9).replace("\n", "")

    act = """  %r = graph.relu %y : (tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32> loc("relu")
""" if relu else ""
    last = "%r" if relu else "%y"
    return f"""func.func @main(%x: tensor<2x4x6x6xf32> {{onnx.name = "x"}}) -> tensor<2x8x6x6xi8> {{
  %sx = graph.constant dense<0.0173> : tensor<f32> loc("sx")
  %zx = graph.constant dense<0> : tensor<i8> loc("zx")
  %q = graph.quantize %x, %sx, %zx : (tensor<2x4x6x6xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4x6x6xi8> loc("q")
  %xd = graph.dequantize %q, %sx, %zx : (tensor<2x4x6x6xi8>, tensor<f32>, tensor<i8>) -> tensor<2x4x6x6xf32> loc("dq")
  %wq = graph.constant dense<{dense(w)}> : tensor<8x4x3x3xi8> loc("wq")
  %sw = graph.constant dense<{dense(sw)}> : tensor<8x1x1x1xf32> loc("sw")
  %wd = graph.dequantize %wq, %sw : (tensor<8x4x3x3xi8>, tensor<8x1x1x1xf32>) -> tensor<8x4x3x3xf32> loc("wdq")
  %y = graph.conv %xd, %wd {{pads = array<i64: 1, 1, 1, 1>}} : (tensor<2x4x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x6x6xf32> loc("conv")
{act}  %sy = graph.constant dense<{scale}> : tensor<f32> loc("sy")
  %zy = graph.constant dense<{zero_point}> : tensor<i8> loc("zy")
  %out = graph.quantize {last}, %sy, %zy : (tensor<2x8x6x6xf32>, tensor<f32>, tensor<i8>) -> tensor<2x8x6x6xi8> loc("next")
  func.return %out : tensor<2x8x6x6xi8>
}}
"""


@pytest.mark.parametrize("zero_point,relu", [(3, False), (-128, True), (0, True)])
def test_fold_keeps_int8_outputs_within_one_step(zero_point, relu):
    text = _conv_model(zero_point, relu, 0.0291)
    before = parse_module(text, make_context())
    after = before.clone()
    assert fold_qdq(after)
    after.verify()
    ops = [op for op in after.walk() if isinstance(op, g.GraphOp)]
    assert sum(isinstance(op, g.RequantizeOp) for op in ops) == 1
    assert not any(isinstance(op, g.QuantizeOp) and isinstance(op.inputs[0].owner, g.DequantizeOp | g.ReluOp)
                   for op in ops)
    assert not any(isinstance(op, g.DequantizeOp) and op.inputs[0].type.element_type == g.ACC_TYPE for op in ops)
    # the relu goes into saturation at zero point -128 and stays, on int8, at 0
    assert sum(isinstance(op, g.ReluOp) for op in ops) == (zero_point == 0)
    rng = np.random.default_rng(9)
    feeds = {"x": rng.standard_normal((2, 4, 6, 6)).astype(np.float32)}
    want = run_module(before, feeds)["output0"].astype(np.int64)
    got = run_module(after, feeds)["output0"].astype(np.int64)
    assert np.abs(got - want).max() <= 1
    # one multiply by the FIX-held scale (2^-11 of it away at most): values near a boundary move
    assert (got != want).mean() <= 0.03
    assert np.unique(want).size > 20  # the values span the int8 range, not a saturated few


def test_fold_runs_before_the_precision_casts():
    """In the pipeline graph-fold-qdq (graph-simplify) runs before graph-assign-precision puts
    f16 casts around the relu, so a calibrated conv -> relu -> conv is conv -> requantize in
    one fusion of 04_fuse, no dequantize / quantize between."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def init(name, shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Conv", ["r", "w1", "b1"], ["y"], name="conv1", pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes, "two_convs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 8, 8))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 8, 8, 8))],
        [init("w", (16, 3, 3, 3)), init("b", (16,)), init("w1", (8, 16, 3, 3)), init("b1", (8,))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    samples = rng.standard_normal((4, 1, 3, 8, 8)).astype(np.float32)
    cm = geir.compile(model, quantize="int8", calibration_data={"x": samples}, lower=False)
    (first,) = [f for f in cm.stages["04_fuse"].walk() if isinstance(f, g.FusionOp)
                and any(isinstance(op, g.ConvOp) and loc_names(op.location) == ["conv"] for op in f.body.walk())]
    inner = [op.name for op in first.body.block.ops if not isinstance(op, g.ConstantOp | g.YieldOp)]
    assert inner == ["graph.conv", "graph.requantize"], inner
