"""testing/float16.py: suite models converted to fp16 (and bf16) import, compile at O3 and run
on the modeled device, close to onnxruntime's fp32 outputs on the same inputs.

onnxruntime's CPU provider lacks fp16 kernels for many ops, so the reference is the fp32
model on the low-precision inputs cast back to f32: what is measured is the error of
computing in fp16 / bf16, not of rounding the inputs."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import geir
from geir.lowering.graph_to_ascend import fallback_ops
from geir.testing.float16 import TARGETS, to_low_precision
from geir.testing.suite import backend_cases, light_model, ort_run

COSINE = 0.999


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-300))


# ---------------------------------------------------------------------------
# The conversion.
# ---------------------------------------------------------------------------


def _model() -> onnx.ModelProto:
    """Every kind of float tensor the conversion touches, and integer ones it must not."""
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    idx = numpy_helper.from_array(np.array([1, 0], np.int64), "idx")
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    nodes = [
        helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array([0.5, 1, 2], np.float32))),
        helper.make_node("Constant", [], ["k"], value_float=0.25),
        helper.make_node("Add", ["x", "w"], ["a"]),
        helper.make_node("Mul", ["a", "c"], ["m"]),
        helper.make_node("Mul", ["m", "k"], ["mk"]),
        helper.make_node("Gather", ["mk", "idx"], ["g"], axis=0),
        helper.make_node("Shape", ["g"], ["s"]),
        helper.make_node("ConstantOfShape", ["s"], ["z"], value=numpy_helper.from_array(np.array([1.5], np.float32))),
        helper.make_node("Cast", ["s"], ["sf"], to=TensorProto.FLOAT),
        helper.make_node("Resize", ["x4", "", "scales"], ["r"], mode="nearest"),
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("x4", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("g", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("sf", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 1, 4, 4])],
        [w, idx, scales])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


@pytest.mark.parametrize("dtype", list(TARGETS))
def test_conversion_lowers_float_tensors_and_keeps_the_others(dtype):
    elem, np_dtype = TARGETS[dtype]
    model = _model()
    low = to_low_precision(model, dtype)
    onnx.checker.check_model(low)
    g = low.graph
    assert [v.type.tensor_type.elem_type for v in g.input] == [elem, elem]
    assert [v.type.tensor_type.elem_type for v in g.output] == [elem] * 4
    inits = {t.name: t for t in g.initializer}
    assert inits["w"].data_type == elem and inits["idx"].data_type == TensorProto.INT64
    assert inits["scales"].data_type == TensorProto.FLOAT  # Resize takes its scales in f32
    consts = [n for n in g.node if n.op_type == "Constant"]
    assert [n.attribute[0].name for n in consts] == ["value", "value"]  # value_float became a tensor
    assert all(n.attribute[0].t.data_type == elem for n in consts)
    cos = next(n for n in g.node if n.op_type == "ConstantOfShape")
    assert cos.attribute[0].t.data_type == elem
    assert next(n for n in g.node if n.op_type == "Cast").attribute[0].i == elem
    np.testing.assert_array_equal(numpy_helper.to_array(inits["w"]), np.arange(6).reshape(2, 3).astype(np_dtype))
    assert model.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT  # a copy


def test_unknown_target_is_an_error():
    with pytest.raises(ValueError, match="float16, bfloat16"):
        to_low_precision(_model(), "float8")


# ---------------------------------------------------------------------------
# Suite models: fp16 through the compiler, against onnxruntime in fp32.
# ---------------------------------------------------------------------------


def _compile_run_compare(model32: onnx.ModelProto, dtype: str, inputs: list[np.ndarray] | None = None):
    """Random inputs (a light model: a kernel for every op, no fallback) or the case's."""
    _, np_dtype = TARGETS[dtype]
    cm = geir.compile(to_low_precision(model32, dtype), opt_level=3, precision_mode="must_keep_origin_dtype")  # the model's own type
    if inputs is None:
        assert not fallback_ops(cm.module)
    specs = cm.input_specs()
    assert all(d == np_dtype for _, _, d in specs)
    rng = np.random.default_rng(0)
    if inputs is None:
        inputs = [rng.standard_normal(s) for _, s, _ in specs]
    feeds = {n: np.asarray(x).astype(np_dtype) for (n, _, _), x in zip(specs, inputs)}
    ours = cm.run(feeds)
    theirs = ort_run(model32, {n: v.astype(np.float32) for n, v in feeds.items()})
    for (name, y), ref in zip(ours.items(), theirs, strict=True):
        assert y.dtype == np_dtype and y.shape == ref.shape
        assert cosine(y, ref) >= COSINE, f"{name}: cosine {cosine(y, ref):.6f}"


@pytest.mark.parametrize("name", ["light_squeezenet", "light_resnet50", "light_inception_v1"])
def test_fp16_light_model_matches_onnxruntime_fp32(name):
    _compile_run_compare(light_model(name), "float16")


def test_bf16_light_model_matches_onnxruntime_fp32():
    _compile_run_compare(light_model("light_squeezenet"), "bfloat16")


BACKEND = ["pytorch-converted/test_Conv2d_depthwise_strided", "pytorch-converted/test_Conv2d_groups",
           "pytorch-converted/test_Linear_no_bias", "pytorch-converted/test_LogSoftmax",
           "pytorch-converted/test_MaxPool2d", "pytorch-converted/test_PixelShuffle",
           "pytorch-converted/test_ZeroPad2d", "pytorch-converted/test_ELU"]


@pytest.mark.parametrize("dtype", list(TARGETS))
@pytest.mark.parametrize("name", BACKEND)
def test_low_precision_backend_case_matches_onnxruntime_fp32(name, dtype):
    case = next(c for c in backend_cases() if c.name == name)
    _compile_run_compare(case.model(), dtype, case.inputs())
