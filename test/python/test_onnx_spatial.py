"""The spatial ONNX ops (frontend/onnx_spatial.py): Resize / Upsample through graph.resize, at
the graph level (the op's reference semantics) and at O3 (the decomposition into gathers,
shifted slices and broadcasts: kernels, no fallback), against onnxruntime; the others at the
graph level. docs/graph.md ("Spatial ops") describes them."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import geir
from geir.dialects import graph as g
from geir.frontend.onnx import import_model
from geir.runtime.interpreter import run_module

RNG = np.random.default_rng(11)


def _model(node, inputs, out_shape, inits=(), opset=19):
    graph = helper.make_graph([node], "s", [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(a.shape))
                                            for n, a in inputs.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m


def _ort(model, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def _resize(x_shape, out_shape, *, sizes=True, scales=None, opset=19, **attrs):
    if sizes:
        inputs, init = ["x", "", "", "sizes"], numpy_helper.from_array(np.array(out_shape, np.int64), "sizes")
    else:
        inputs = ["x", "scales"] if opset < 11 else ["x", "", "scales"]
        init = numpy_helper.from_array(np.array(scales, np.float32), "scales")
    node = helper.make_node("Resize", inputs, ["y"], name="rs", **attrs)
    return _model(node, {"x": np.zeros(x_shape, np.float32)}, out_shape, [init], opset)


CASES = [
    ("nearest", "half_pixel", "round_prefer_floor", [1, 2, 10, 14]),
    ("nearest", "asymmetric", "floor", [1, 2, 10, 21]),
    ("nearest", "align_corners", "round_prefer_ceil", [1, 2, 3, 9]),
    ("nearest", "pytorch_half_pixel", "ceil", [1, 2, 2, 4]),
    ("linear", "half_pixel", None, [1, 2, 10, 14]),
    ("linear", "pytorch_half_pixel", None, [1, 2, 3, 1]),
    ("linear", "align_corners", None, [1, 2, 8, 11]),
    ("linear", "asymmetric", None, [1, 2, 15, 14]),
    ("linear", "half_pixel_symmetric", None, [1, 2, 7, 9]),
    ("cubic", "half_pixel", None, [1, 2, 10, 14]),
    ("cubic", "asymmetric", None, [1, 2, 4, 5]),
]


def _case_model(mode, ctm, nearest_mode, out):
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
    if nearest_mode:
        attrs["nearest_mode"] = nearest_mode
    return _resize([1, 2, 5, 7], out, **attrs)


@pytest.mark.parametrize("mode,ctm,nearest_mode,out", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3][2]}x{c[3][3]}" for c in CASES])
def test_resize_graph_level_matches_onnxruntime(mode, ctm, nearest_mode, out):
    m = _case_model(mode, ctm, nearest_mode, out)
    x = RNG.standard_normal((1, 2, 5, 7)).astype(np.float32)
    got = next(iter(run_module(import_model(m), {"x": x}).values()))
    np.testing.assert_allclose(got, _ort(m, {"x": x}), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("index", [0, 1, 4, 6, 9])
def test_resize_o3_runs_kernels_and_matches_onnxruntime(index):
    m = _case_model(*CASES[index])
    x = RNG.standard_normal((1, 2, 5, 7)).astype(np.float32)
    compiled = geir.compile(m, opt_level=3, precision_mode="must_keep_origin_dtype")
    assert compiled.report["fallback_kernels"] == 0
    got = next(iter(compiled.run({"x": x}).values()))
    np.testing.assert_allclose(got, _ort(m, {"x": x}), rtol=1e-5, atol=1e-6)


def test_resize_antialias_and_axes_and_crop():
    x = RNG.standard_normal((1, 1, 8, 9)).astype(np.float32)
    for m in (_resize([1, 1, 8, 9], [1, 1, 3, 4], mode="linear", antialias=1),
              _resize([1, 1, 8, 9], [1, 1, 8, 3], sizes=False, scales=[0.4], axes=[3], mode="cubic", antialias=1)):
        got = next(iter(run_module(import_model(m), {"x": x}).values()))
        np.testing.assert_allclose(got, _ort(m, {"x": x}), rtol=1e-5, atol=1e-6)
    roi = numpy_helper.from_array(np.array([0.1, 0.2, 0.9, 1.3], np.float32), "roi")
    sizes = numpy_helper.from_array(np.array([5, 6], np.int64), "sizes")
    node = helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode="linear", axes=[2, 3],
                            coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-3.0)
    m = _model(node, {"x": x}, [1, 1, 5, 6], [roi, sizes])
    want = _ort(m, {"x": x})
    assert np.any(want == -3.0)
    got = next(iter(run_module(import_model(m), {"x": x}).values()))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    compiled = geir.compile(m, opt_level=3, precision_mode="must_keep_origin_dtype")
    assert compiled.report["fallback_kernels"] == 0
    np.testing.assert_allclose(next(iter(compiled.run({"x": x}).values())), want, rtol=1e-5, atol=1e-6)


def test_upsample_and_opset10_are_asymmetric():
    x = RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)
    up = helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")
    m = _model(up, {"x": x}, [1, 2, 6, 12], [numpy_helper.from_array(np.array([1, 1, 2, 3], np.float32), "scales")], opset=9)
    np.testing.assert_array_equal(next(iter(run_module(import_model(m), {"x": x}).values())),
                                  np.repeat(np.repeat(x, 2, axis=2), 3, axis=3))
    m10 = _resize([1, 2, 3, 4], [1, 2, 6, 8], sizes=False, scales=[1, 1, 2, 2], opset=10, mode="linear")
    got = next(iter(run_module(import_model(m10), {"x": x}).values()))
    np.testing.assert_allclose(got, _ort(m10, {"x": x}), rtol=1e-5, atol=1e-6)


def test_canonicalize_leaves_no_resize_for_float_kernels():
    module = import_model(_case_model(*CASES[4]))
    from geir.passes.graph.canonicalize import canonicalize

    canonicalize(module)
    names = {op.name for op in module.walk()}
    assert g.ResizeOp.name not in names and g.GatherOp.name not in names  # 2x half_pixel: shifted slices


@pytest.mark.parametrize("mode,shape", [("nearest", (8, 256, 64, 64)), ("linear", (2, 256, 64, 64))])
def test_resize_feature_map_2x_at_o3(mode, shape):
    """A deployment-size feature map upsampled 2x (an FPN / U-Net decoder): kernels only
    (nearest: one broadcast; linear: shifted slices and vector mul / add)."""
    out = [shape[0], shape[1], shape[2] * 2, shape[3] * 2]
    m = _resize(list(shape), out, mode=mode)
    x = RNG.standard_normal(shape).astype(np.float32)
    compiled = geir.compile(m, opt_level=3, precision_mode="must_keep_origin_dtype")
    assert compiled.report["fallback_kernels"] == 0
    got = next(iter(compiled.run({"x": x}).values()))
    want = _ort(m, {"x": x})
    if mode == "nearest":
        assert np.array_equal(got, want)  # copies
    else:
        assert got.shape == want.shape and float(np.abs(got - want).max()) <= 1e-5


# ---------------------------------------------------------------------------
# The other spatial ops at the graph level.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample(mode, padding_mode):
    """Against onnx's reference evaluator, which the conformance data follow: onnxruntime
    1.32 differs from it by up to 0.3 for cubic with border padding (it reads the taps of a
    clamped coordinate differently); elsewhere all three agree to 2e-6."""
    x = RNG.standard_normal((2, 3, 5, 6)).astype(np.float32)
    grid = (RNG.standard_normal((2, 4, 7, 2)) * 0.8).astype(np.float32)
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding_mode, align_corners=0)
    m = _model(node, {"x": x, "grid": grid}, [2, 3, 4, 7], opset=20)
    got = next(iter(run_module(import_model(m), {"x": x, "grid": grid}).values()))
    want = ReferenceEvaluator(m).run(None, {"x": x, "grid": grid})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("node,shape,out,opset,inits", [
    (helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3, epsilon=1e-3), (2, 6, 4, 5), [2, 6, 4, 5], 21,
     [numpy_helper.from_array(RNG.standard_normal(6).astype(np.float32), n) for n in ("s", "b")]),
    (helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3), (2, 6, 4, 5), [2, 6, 4, 5], 18,
     [numpy_helper.from_array(RNG.standard_normal(3).astype(np.float32), n) for n in ("s", "b")]),
    (helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], p=3), (1, 2, 7, 7), [1, 2, 4, 4], 18, []),
    (helper.make_node("LpNormalization", ["x"], ["y"], axis=1, p=1), (2, 3, 4), [2, 3, 4], 17, []),
    (helper.make_node("MeanVarianceNormalization", ["x"], ["y"]), (2, 3, 4, 5), [2, 3, 4, 5], 13, []),
    (helper.make_node("CenterCropPad", ["x", "shape"], ["y"], axes=[1, 2]), (2, 7, 4), [2, 4, 7], 18,
     [numpy_helper.from_array(np.array([4, 7], np.int64), "shape")]),
], ids=["group_norm21", "group_norm18", "lp_pool", "lp_norm", "mvn", "center_crop_pad"])
def test_decomposed_ops(node, shape, out, opset, inits):
    x = RNG.standard_normal(shape).astype(np.float32)
    m = _model(node, {"x": x}, out, inits, opset)
    module = import_model(m)
    got = next(iter(run_module(module, {"x": x}).values()))
    np.testing.assert_allclose(got, _ort(m, {"x": x}), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode,ctm", [("avg", "half_pixel"), ("max", "output_half_pixel")])
def test_roi_align(mode, ctm):
    x = RNG.standard_normal((2, 3, 9, 11)).astype(np.float32)
    rois = np.array([[0.5, 1.0, 6.2, 7.9], [3, 2, 4, 3], [-2, -1, 12, 10.5]], np.float32)
    b = np.array([1, 0, 1], np.int64)
    node = helper.make_node("RoiAlign", ["x", "rois", "b"], ["y"], mode=mode, coordinate_transformation_mode=ctm,
                            output_height=3, output_width=4, sampling_ratio=0, spatial_scale=0.8)
    m = _model(node, {"x": x, "rois": rois}, [3, 3, 3, 4], [numpy_helper.from_array(b, "b")], opset=16)
    got = next(iter(run_module(import_model(m), {"x": x, "rois": rois}).values()))
    np.testing.assert_allclose(got, _ort(m, {"x": x, "rois": rois}), rtol=1e-4, atol=1e-5)


def test_deform_conv_groups_mask_bias():
    x = RNG.standard_normal((2, 4, 6, 5)).astype(np.float32)
    w = RNG.standard_normal((6, 2, 3, 2)).astype(np.float32)
    offset = (RNG.standard_normal((2, 2 * 3 * 2 * 2, 3, 2)) * 1.5).astype(np.float32)
    mask = RNG.uniform(size=(2, 2 * 3 * 2, 3, 2)).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    node = helper.make_node("DeformConv", ["x", "w", "offset", "b", "mask"], ["y"], group=2, offset_group=2,
                            pads=[1, 0, 0, 1], strides=[2, 2], dilations=[1, 2])
    feeds = {"x": x, "w": w, "offset": offset, "b": b, "mask": mask}
    m = _model(node, feeds, [2, 6, 3, 2], opset=19)
    got = next(iter(run_module(import_model(m), feeds).values()))
    np.testing.assert_allclose(got, ReferenceEvaluator(m).run(None, feeds)[0], rtol=1e-4, atol=1e-4)
