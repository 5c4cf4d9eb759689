"""The ONNX loss ops (frontend/onnx_losses.py) and the optional outputs / deterministic training
forms (frontend/onnx_training.py) against onnxruntime (the ONNX reference evaluator where
onnxruntime lacks the form): the graph interpreter on the imported model, and a few at O3
on the modeled device, one at a realistic size (batch 32 x 1000 classes)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import geir
from geir.dialects import graph as g
from geir.errors import OnnxImportError
from geir.frontend.onnx import import_model
from geir.runtime.interpreter import run_module

F, I64 = TensorProto.FLOAT, TensorProto.INT64
RNG = np.random.default_rng(11)


def _model(nodes, inputs, outputs, inits=(), opset=17):
    m = helper.make_model(helper.make_graph(nodes, "t", inputs, outputs, list(inits)),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def _ort(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def _graph(model, feeds):
    return list(run_module(import_model(model), feeds).values())


def _o3(model, feeds):
    cm = geir.compile(model, opt_level=3, precision_mode="must_keep_origin_dtype")
    return list(cm.run(feeds).values())


def _check(got, ref, rtol=1e-5, atol=1e-6):
    assert len(got) == len(ref)
    for a, b in zip(got, ref):
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------
# NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
# ---------------------------------------------------------------------------


def _loss_model(op, shape, reduction, weight, ignore_index, log_prob=False, t_type=I64):
    n, c, rest = shape[0], shape[1], list(shape[2:])
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    ins = ["x", "t", "w"] if weight else ["x", "t"]
    outs = ["loss", "log_prob"] if log_prob else ["loss"]
    out_shape = [n, *rest] if reduction == "none" else []
    inits = [numpy_helper.from_array(RNG.uniform(0.2, 2.0, c).astype(np.float32), "w")] if weight else []
    return _model([helper.make_node(op, ins, outs, **attrs)],
                  [_vi("x", list(shape)), _vi("t", [n, *rest], t_type)],
                  [_vi("loss", out_shape), *([_vi("log_prob", list(shape))] if log_prob else [])], inits, opset=13)


def _labels(shape, ignore_index, dtype=np.int64):
    n, c, rest = shape[0], shape[1], shape[2:]
    t = RNG.integers(0, c, (n, *rest)).astype(dtype)
    if ignore_index is not None:
        t.flat[::3] = ignore_index  # every third label ignored
    return t


@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4, 2)])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weight", [False, True])
@pytest.mark.parametrize("ignore_index", [None, 2, -5, 9])
def test_losses_match_onnxruntime(op, shape, reduction, weight, ignore_index):
    m = _loss_model(op, shape, reduction, weight, ignore_index, log_prob=op.startswith("Softmax"))
    x = RNG.standard_normal(shape).astype(np.float32)
    if op.startswith("Negative"):
        x = np.log(np.exp(x) / np.exp(x).sum(1, keepdims=True)).astype(np.float32)
    feeds = {"x": x, "t": _labels(shape, ignore_index)}
    _check(_graph(m, feeds), _ort(m, feeds))


def test_int32_labels_and_a_weighted_mean_over_the_counted_targets():
    """The mean divides by the summed weights of the non-ignored targets, not their number."""
    shape = (6, 3)
    m = _loss_model("NegativeLogLikelihoodLoss", shape, "mean", True, 0, t_type=TensorProto.INT32)
    feeds = {"x": RNG.standard_normal(shape).astype(np.float32), "t": np.array([0, 1, 2, 2, 0, 1], np.int32)}
    w = numpy_helper.to_array(m.graph.initializer[0])
    counted = np.array([1, 2, 2, 1])
    want = -(feeds["x"][[1, 2, 3, 5], counted] * w[counted]).sum() / w[counted].sum()
    got = _graph(m, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    _check([got], _ort(m, feeds))


@pytest.mark.parametrize("reduction,weight,ignore_index", [("mean", True, 3), ("none", False, -1), ("sum", True, None)])
def test_losses_at_o3(reduction, weight, ignore_index):
    shape = (3, 5, 4)
    for op in ("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"):
        m = _loss_model(op, shape, reduction, weight, ignore_index, log_prob=op.startswith("Softmax"))
        feeds = {"x": RNG.standard_normal(shape).astype(np.float32), "t": _labels(shape, ignore_index)}
        _check(_o3(m, feeds), _ort(m, feeds), rtol=1e-5, atol=1e-5)


def test_softmax_cross_entropy_realistic_size_at_o3():
    """A classifier's loss: batch 32 x 1000 classes, class weights, ignore_index -100 (PyTorch's)."""
    shape = (32, 1000)
    m = _loss_model("SoftmaxCrossEntropyLoss", shape, "mean", True, -100, log_prob=True)
    feeds = {"x": (4 * RNG.standard_normal(shape)).astype(np.float32), "t": _labels(shape, -100)}
    _check(_o3(m, feeds), _ort(m, feeds), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# Optional outputs and training mode
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_layer_norm_mean_and_inv_std_dev(axis):
    shape = (2, 3, 5)
    a = axis % 3
    m = _model([helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv"], axis=axis, epsilon=1e-3)],
               [_vi("x", list(shape))],
               [_vi("y", list(shape)), _vi("mean", [*shape[:a], *[1] * (3 - a)]), _vi("inv", [*shape[:a], *[1] * (3 - a)])],
               [numpy_helper.from_array(RNG.standard_normal(shape[a:]).astype(np.float32), "s"),
                numpy_helper.from_array(RNG.standard_normal(shape[a:]).astype(np.float32), "b")])
    feeds = {"x": (3 + 2 * RNG.standard_normal(shape)).astype(np.float32)}
    ref = _ort(m, feeds)
    _check(_graph(m, feeds), ref, atol=1e-5)
    if axis == -1:
        _check(_o3(m, feeds), ref, atol=1e-5)


def test_layer_norm_without_statistics_stays_one_op():
    m = _model([helper.make_node("LayerNormalization", ["x", "s"], ["y", "", "inv"])],
               [_vi("x", [2, 4])], [_vi("y", [2, 4])], [numpy_helper.from_array(np.ones(4, np.float32), "s")])
    ops = [type(op) for op in import_model(m).walk() if isinstance(op, g.GraphOp)]
    assert g.LayerNormOp in ops and g.ReduceMeanOp not in ops  # 'inv' is named but read by nobody


def test_batch_norm_training_mode():
    c = 3
    m = _model([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
                                 training_mode=1, momentum=0.7, epsilon=1e-3)],
               [_vi("x", [4, c, 2, 3])], [_vi("y", [4, c, 2, 3]), _vi("rm", [c]), _vi("rv", [c])],
               [numpy_helper.from_array(RNG.standard_normal(c).astype(np.float32), n) for n in ("s", "b", "m")]
               + [numpy_helper.from_array(RNG.uniform(0.5, 2, c).astype(np.float32), "v")], opset=15)
    feeds = {"x": (1 + 2 * RNG.standard_normal((4, c, 2, 3))).astype(np.float32)}
    ref = [np.asarray(r) for r in ReferenceEvaluator(m).run(None, feeds)]
    _check(_graph(m, feeds), ref, atol=1e-5)
    _check(_o3(m, feeds), ref, atol=1e-5)


def _max_pool(shape, storage_order=0, **attrs):
    return _model([helper.make_node("MaxPool", ["x"], ["y", "i"], storage_order=storage_order, **attrs)],
               [_vi("x", list(shape))], [_vi("y", None), _vi("i", None, I64)], opset=12)


@pytest.mark.parametrize("shape,attrs", [
    ((2, 3, 6, 5), {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}),
    ((1, 2, 7, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 2, 8, 6), {"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [1, 1, 1, 1]}),
    ((2, 2, 9), {"kernel_shape": [4], "strides": [2], "pads": [2, 1]}),
    ((1, 2, 4, 5, 4), {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2], "pads": [0, 1, 0, 0, 1, 1]}),
])
@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices(shape, attrs, storage_order):
    """Ties (small integers) keep the first maximum in scan order, as onnxruntime does."""
    m = _max_pool(shape, storage_order, **attrs)
    feeds = {"x": RNG.integers(-3, 3, shape).astype(np.float32)}
    _check(_graph(m, feeds), _ort(m, feeds), rtol=0, atol=0)


def test_max_pool_indices_int8_padding_never_chosen():
    """An integer x pads with its lowest value, which a real element at that value still beats."""
    m = _model([helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
               [_vi("x", [1, 2, 4, 4], TensorProto.INT8)], [_vi("y", None, TensorProto.INT8), _vi("i", None, I64)], opset=12)
    feeds = {"x": RNG.integers(-128, -125, (1, 2, 4, 4)).astype(np.int8)}
    _check(_graph(m, feeds), _ort(m, feeds), rtol=0, atol=0)


def test_max_pool_indices_at_o3():
    m = _max_pool((2, 3, 6, 5), 1, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    feeds = {"x": RNG.integers(-3, 3, (2, 3, 6, 5)).astype(np.float32)}
    _check(_o3(m, feeds), _ort(m, feeds), rtol=0, atol=0)


@pytest.mark.parametrize("training,ratio", [(False, 0.5), (True, 0.0)])
def test_dropout_mask_when_nothing_drops(training, ratio):
    m = _model([helper.make_node("Dropout", ["x", "r", "tm"], ["y", "mask"])],
               [_vi("x", [3, 4])], [_vi("y", [3, 4]), _vi("mask", [3, 4], TensorProto.BOOL)],
               [numpy_helper.from_array(np.array(ratio, np.float32), "r"),
                numpy_helper.from_array(np.array(training), "tm")], opset=13)
    feeds = {"x": RNG.standard_normal((3, 4)).astype(np.float32)}
    ref = _ort(m, feeds)
    _check(_graph(m, feeds), ref, rtol=0, atol=0)
    _check(_o3(m, feeds), ref, rtol=0, atol=0)


@pytest.mark.parametrize("output_shape", [[10, 8], [11, 8]])
def test_conv_transpose_output_shape_past_the_inputs_reach(output_shape):
    """output_shape past the natural size [9, 7]: zeros (plus the bias) at the end, as onnxruntime."""
    m = _model([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[3, 2], output_shape=output_shape)],
               [_vi("x", [1, 2, 3, 3])], [_vi("y", [1, 3, *output_shape])],
               [numpy_helper.from_array(RNG.standard_normal((2, 3, 3, 3)).astype(np.float32), "w"),
                numpy_helper.from_array(RNG.standard_normal(3).astype(np.float32), "b")])
    feeds = {"x": RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)}
    ref = _ort(m, feeds)
    _check(_graph(m, feeds), ref, atol=1e-5)
    _check(_o3(m, feeds), ref, atol=1e-5)


@pytest.mark.parametrize("output_shape,auto_pad,message", [
    ([14, 8], "NOTSET", r"output_shape \[14, 8\] is larger than the convolution can produce "
                        r"\(dim 0 needs 5 more, output padding 5 not below its stride 3\)"),
    ([10, 8], "SAME_UPPER", r"output_shape \[10, 8\] is larger than the convolution can produce "
                            r"\(dim 0 needs 1 more with auto_pad SAME_UPPER\)"),
])
def test_conv_transpose_output_shape_out_of_reach_is_an_error(output_shape, auto_pad, message):
    m = _model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct", strides=[3, 2],
                                 output_shape=output_shape, auto_pad=auto_pad)],
               [_vi("x", [1, 2, 3, 3])], [_vi("y", [1, 3, *output_shape])],
               [numpy_helper.from_array(np.ones((2, 3, 3, 3), np.float32), "w")])
    with pytest.raises(OnnxImportError, match=r"^node 'ct' \(ConvTranspose, opset 17\): " + message):
        import_model(m)
