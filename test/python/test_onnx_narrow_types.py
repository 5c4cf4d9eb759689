"""The narrow element types (docs/precision.md, "Narrow element types"): float8, float6,
float4e2m1, int4 / uint4, int2 / uint2 through Cast, CastLike, QuantizeLinear and
DequantizeLinear, at graph level (the reference semantics) and at O3 (the lowered program on
the modeled device), against onnxruntime where it runs the conversion and onnx's reference
evaluator where it does not (float4 / float6 / float8e8m0 casts; a narrow graph output, which
onnxruntime's Python API cannot return; onnxruntime's float -> int4 Cast rounds where the
reference and the conformance data truncate)."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import geir
from geir.frontend.onnx import import_model
from geir.runtime.interpreter import run_module

RNG = np.random.default_rng(0)
FLOAT8 = [T.FLOAT8E4M3FN, T.FLOAT8E4M3FNUZ, T.FLOAT8E5M2, T.FLOAT8E5M2FNUZ]
# the opset that brought each type (int2 / uint2: 25, float4e2m1: 23, float8e8m0: 24, float6: 28)
OPSET = {T.INT2: 25, T.UINT2: 25, T.FLOAT4E2M1: 23, T.FLOAT8E8M0: 24, T.FLOAT6E2M3: 28, T.FLOAT6E3M2: 28}
NARROW = [*FLOAT8, T.FLOAT8E8M0, T.FLOAT4E2M1, T.FLOAT6E2M3, T.FLOAT6E3M2, T.INT4, T.UINT4, T.INT2, T.UINT2]


def _model(nodes, inputs, outputs, inits=(), opset=21):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=13 if opset >= 28 else 11)


def _floats(n: int = 512) -> np.ndarray:
    """Values over float8's range and past it, the special values, ties of every narrow type."""
    x = RNG.standard_normal(n) * np.logspace(-12, 6, n)
    x[:24] = [0, -0.0, np.inf, -np.inf, np.nan, 1e9, -1e9, 448, 464, -464, 240, 57344, 61440, -61440, 6, 7,
              1.0625, 1.03125, 2.5, -2.5, 0.25, 3.5, 1e-30, -7.5]
    return x.astype(np.float32)


def _ours(model, feeds, **options) -> list[list[np.ndarray]]:
    """The outputs at graph level and at O3 (must_keep_origin_dtype unless options say)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        graph = list(run_module(import_model(model), feeds).values())
        options.setdefault("precision_mode", "must_keep_origin_dtype")
        o3 = list(geir.compile(model, opt_level=3, **options).run(feeds).values())
    return [graph, o3]


def _reference(model, feeds) -> list[np.ndarray]:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return ReferenceEvaluator(model).run(None, feeds)


def _ort(model, feeds) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, feeds)


def _same(ours: list[list[np.ndarray]], theirs: list[np.ndarray]) -> None:
    """Bit for bit: the same dtype and the same values (NaN where they have NaN)."""
    for level, outs in zip(("graph", "O3"), ours):
        for got, want in zip(outs, theirs):
            assert got.dtype == want.dtype, (level, got.dtype, want.dtype)
            np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32), err_msg=level)


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("to", FLOAT8, ids=T.DataType.Name)
def test_cast_to_float8_matches_onnxruntime(to, saturate):
    """f32 and f16 to float8 and back: saturation, NaN / inf, round to nearest even."""
    nodes = [helper.make_node("Cast", ["x"], ["q"], to=to, saturate=saturate),
             helper.make_node("Cast", ["q"], ["y"], to=T.FLOAT),
             helper.make_node("Cast", ["h"], ["qh"], to=to, saturate=saturate),
             helper.make_node("CastLike", ["qh", "x"], ["yh"])]
    x = _floats()
    model = _model(nodes, [("x", T.FLOAT, [512]), ("h", T.FLOAT16, [512])], [("y", T.FLOAT, [512]), ("yh", T.FLOAT, [512])])
    with np.errstate(over="ignore"):
        feeds = {"x": x, "h": x.astype(np.float16)}
    # e5m2 without saturation: onnxruntime gives NaN where the spec's table (and the reference,
    # and geir) give +-inf for a value past the largest finite one (61440 -> inf)
    oracle = _reference if (to, saturate) == (T.FLOAT8E5M2, 0) else _ort
    _same(_ours(model, feeds), oracle(model, feeds))


@pytest.mark.parametrize("to", [T.INT4, T.UINT4, T.INT2, T.UINT2, T.FLOAT4E2M1, T.FLOAT6E2M3, T.FLOAT6E3M2,
                                T.FLOAT8E8M0], ids=T.DataType.Name)
def test_cast_to_other_narrow_types_matches_the_reference(to):
    x = _floats()
    if to in (T.INT4, T.UINT4, T.INT2, T.UINT2):
        x = np.concatenate([x[:24], (RNG.standard_normal(488) * 4).astype(np.float32)])
    attrs = [{}] if to != T.FLOAT8E8M0 else [
        {"round_mode": m, "saturate": s} for m in ("up", "down", "nearest") for s in (0, 1)]
    for a in attrs:
        model = _model([helper.make_node("Cast", ["x"], ["y"], to=to, **a)], [("x", T.FLOAT, [512])],
                       [("y", to, [512])], opset=OPSET.get(to, 21))
        if to == T.FLOAT8E8M0:
            x = np.abs(x)  # a negative value is undefined in float8e8m0
        _same(_ours(model, {"x": x}), _reference(model, {"x": x}))


def _every_value(t: int) -> np.ndarray:
    """Every bit pattern of a narrow type (ml_dtypes reads a byte's low bits)."""
    dtype = helper.tensor_dtype_to_np_dtype(t)
    bits = {T.INT4: 4, T.UINT4: 4, T.FLOAT4E2M1: 4, T.INT2: 2, T.UINT2: 2, T.FLOAT6E2M3: 6, T.FLOAT6E3M2: 6}.get(t, 8)
    return np.arange(2 ** bits, dtype=np.uint8).view(dtype)


@pytest.mark.parametrize("t", NARROW, ids=T.DataType.Name)
def test_every_narrow_value_widens_exactly(t):
    """A narrow graph input, every value of it, to f32 and f16 (Cast and CastLike)."""
    x = _every_value(t)
    n = x.size
    nodes = [helper.make_node("Cast", ["x"], ["y"], to=T.FLOAT),
             helper.make_node("CastLike", ["x", "like"], ["yh"])]
    model = _model(nodes, [("x", t, [n]), ("like", T.FLOAT16, [1])], [("y", T.FLOAT, [n]), ("yh", T.FLOAT16, [n])],
                   opset=OPSET.get(t, 21))
    feeds = {"x": x, "like": np.zeros(1, np.float16)}
    _same(_ours(model, feeds), _reference(model, feeds))


# QuantizeLinear -> DequantizeLinear: onnxruntime runs int4 / uint4 / float8 (21) and int2 / uint2 (25)
@pytest.mark.parametrize("per_axis", [False, True])
@pytest.mark.parametrize("zt", [T.INT4, T.UINT4, T.INT2, T.UINT2, T.FLOAT8E4M3FN, T.FLOAT8E5M2], ids=T.DataType.Name)
def test_quantize_dequantize_matches_onnxruntime(zt, per_axis):
    dtype = helper.tensor_dtype_to_np_dtype(zt)
    integer = zt in (T.INT4, T.UINT4, T.INT2, T.UINT2)
    x = (RNG.standard_normal((3, 64)) * (4 if integer else 300)).astype(np.float32)
    x[0, :6] = [0.25, 0.75, -0.25, 1e9, -1e9, np.nan if not integer else 0.5]
    scale = np.array([0.5, 0.25, 1.0], np.float32) if per_axis else np.array(0.5, np.float32)
    zp = np.zeros(scale.shape, dtype)
    if integer:
        info = ml_dtypes.iinfo(dtype)
        zp = np.array([info.min + 1, 0, info.max][: zp.size] if per_axis else 1, np.int64).reshape(scale.shape).astype(dtype)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=0),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=0)]
    model = _model(nodes, [("x", T.FLOAT, [3, 64])], [("y", T.FLOAT, [3, 64])],
                   [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zp, "z")], opset=OPSET.get(zt, 21))
    _same(_ours(model, {"x": x}), _ort(model, {"x": x}))


@pytest.mark.parametrize("zt", [T.FLOAT8E4M3FN, T.FLOAT8E4M3FNUZ, T.FLOAT8E5M2, T.FLOAT8E5M2FNUZ, T.FLOAT4E2M1,
                                T.INT4, T.UINT2], ids=T.DataType.Name)
def test_quantize_to_narrow_output_matches_the_reference(zt):
    """The quantized tensor itself (a narrow graph output), float8 without saturation too."""
    x = (_floats(128) * 0.01).reshape(2, 64)
    if zt in (T.INT4, T.UINT2):  # the reference's int32 cast of inf / NaN is undefined: geir saturates
        x = np.nan_to_num(x, nan=0.0, posinf=1e3, neginf=-1e3)
    opset = max(OPSET.get(zt, 21), 23 if zt == T.FLOAT4E2M1 else 21)
    for saturate in ([1, 0] if zt in FLOAT8 else [1]):
        extra = {"saturate": saturate} if zt in FLOAT8 else {}
        model = _model([helper.make_node("QuantizeLinear", ["x", "s"], ["q"], output_dtype=zt, **extra)],
                       [("x", T.FLOAT, [2, 64])], [("q", zt, [2, 64])],
                       [numpy_helper.from_array(np.array(0.03125, np.float32), "s")], opset=opset)
        _same(_ours(model, {"x": x}), _reference(model, {"x": x}))


@pytest.mark.parametrize("zt", [T.INT4, T.UINT8, T.FLOAT8E4M3FN], ids=T.DataType.Name)
def test_blocked_quantization_matches_the_reference(zt):
    """block_size 3 along axis 1 of [2, 8] (a short last block), scale a graph input (gathered)
    or a constant (repeated at import), the zero point a constant."""
    dtype = helper.tensor_dtype_to_np_dtype(zt)
    x = (RNG.standard_normal((2, 8)) * 8).astype(np.float32)
    scale = np.array([[0.5, 0.25, 2.0], [1.0, 0.125, 0.75]], np.float32)
    zp = np.array([[1, -2, 0], [3, 0, -1]]).astype(np.float32).astype(dtype) if zt != T.UINT8 else \
        np.array([[1, 2, 0], [3, 0, 9]], np.uint8)
    if zt == T.FLOAT8E4M3FN:
        zp = np.zeros_like(zp)
    for scale_input in (True, False):
        nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1, block_size=3),
                 helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1, block_size=3)]
        inputs = [("x", T.FLOAT, [2, 8])] + ([("s", T.FLOAT, [2, 3])] if scale_input else [])
        inits = [numpy_helper.from_array(zp, "z")] + ([] if scale_input else [numpy_helper.from_array(scale, "s")])
        model = _model(nodes, inputs, [("q", zt, [2, 8]), ("y", T.FLOAT, [2, 8])], inits)
        feeds = {"x": x, **({"s": scale} if scale_input else {})}
        _same(_ours(model, feeds), _reference(model, feeds))


def test_precision_modes_leave_narrow_types_alone():
    """force_fp16 (the default) and allow_mix_precision compute the f32 ops in f16 but move
    no value into or out of a narrow type through f16: f32 -> float8 stays one rounding (x
    rounded to f16 first would round 1.0625 + 2^-20 to the tie 1.0625, then to 1.0), and the
    float8 tensors keep their type."""
    x = np.full(16, 1.0625 + 2.0 ** -20, np.float32)
    x[1:4] = [1e6, -np.inf, np.nan]
    nodes = [helper.make_node("Cast", ["x"], ["q"], to=T.FLOAT8E4M3FN),
             helper.make_node("Cast", ["q"], ["w"], to=T.FLOAT),
             helper.make_node("Relu", ["w"], ["r"]),
             helper.make_node("Mul", ["r", "x"], ["y"])]
    model = _model(nodes, [("x", T.FLOAT, [16])], [("q", T.FLOAT8E4M3FN, [16]), ("y", T.FLOAT, [16])])
    want = _reference(model, {"x": x})
    assert want[0].astype(np.float32)[0] == 1.125
    for mode in ("force_fp16", "allow_mix_precision"):
        compiled = geir.compile(model, opt_level=3, precision_mode=mode)
        with np.errstate(all="ignore"):
            q, _ = compiled.run({"x": x}).values()
        assert q.dtype == want[0].dtype
        np.testing.assert_array_equal(q.astype(np.float32), want[0].astype(np.float32), err_msg=mode)
        text = compiled.mlir(next(s for s in compiled.stage_names if s.endswith("_precision")))
        assert "graph.cast %x {to = f8E4M3FN} : (tensor<16xf32>) -> tensor<16xf8E4M3FN>" in text, text
        assert "graph.cast %q {to = f32} : (tensor<16xf8E4M3FN>) -> tensor<16xf32>" in text, text


def test_narrow_tensors_take_one_byte_per_element_on_the_device():
    """An int4 [64, 64] input is 4096 bytes in device memory (unpacked, as numpy holds it);
    the dequantize runs as a fallback kernel (no template computes int4)."""
    model = _model([helper.make_node("DequantizeLinear", ["w", "s"], ["y"])], [("w", T.INT4, [64, 64])],
                   [("y", T.FLOAT, [64, 64])], [numpy_helper.from_array(np.array(0.5, np.float32), "s")])
    compiled = geir.compile(model, opt_level=3)
    w = (np.arange(64 * 64) % 16 - 8).reshape(64, 64).astype(ml_dtypes.int4)
    outputs, report = compiled.profile({"w": w})
    np.testing.assert_array_equal(outputs["y"], w.astype(np.float32) * 0.5)
    assert report["memory"]["io_bytes"] == 64 * 64 * 1 + 64 * 64 * 4
    assert report["fallback_kernels"] == 1
