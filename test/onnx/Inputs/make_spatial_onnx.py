"""Write one small ONNX model for import-resize.test: make_spatial_onnx.py CASE OUT.onnx"""

import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def model(nodes, inputs, outputs, inits=(), opset=19):
    g = helper.make_graph(nodes, "test", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def resize(inputs, out_shape, inits, opset=19, x_shape=(1, 1, 2, 4), extra_inputs=(), **attrs):
    return model([helper.make_node("Resize", inputs, ["y"], name="rs", **attrs)],
                 [vi("x", list(x_shape)), *extra_inputs], [vi("y", out_shape)], inits, opset)


SCALES = [const("scales", np.array([1, 1, 2, 2], np.float32))]
CASES = {
    "nearest_scales": lambda: resize(["x", "", "scales"], [1, 1, 4, 8], SCALES, mode="nearest"),
    "linear_sizes_align": lambda: resize(["x", "", "", "sizes"], [1, 1, 3, 6], [const("sizes", np.array([1, 1, 3, 6], np.int64))],
                                         mode="linear", coordinate_transformation_mode="align_corners"),
    "cubic_axes_antialias": lambda: resize(["x", "", "scales"], [1, 1, 2, 2], [const("scales", np.array([0.5], np.float32))],
                                           mode="cubic", axes=[3], antialias=1, cubic_coeff_a=-0.5),
    "crop_and_resize": lambda: resize(["x", "roi", "", "sizes"], [1, 1, 3, 3],
                                      [const("roi", np.array([0, 0, 0.2, 0.2, 1, 1, 0.8, 0.9], np.float32)),
                                       const("sizes", np.array([1, 1, 3, 3], np.int64))],
                                      mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                                      extrapolation_value=10.0),
    "not_larger": lambda: resize(["x", "", "", "sizes"], [1, 1, 3, 6], [const("sizes", np.array([3, 7], np.int64))],
                                 axes=[2, 3], keep_aspect_ratio_policy="not_larger"),
    "opset10": lambda: resize(["x", "scales"], [1, 1, 4, 8], SCALES, opset=10, mode="linear"),
    "upsample7": lambda: model([helper.make_node("Upsample", ["x"], ["y"], name="up", scales=[1.0, 1.0, 2.0, 3.0])],
                               [vi("x", [1, 1, 2, 4])], [vi("y", [1, 1, 4, 12])], opset=7),
    # rejected forms
    "runtime_scales": lambda: resize(["x", "", "scales"], [1, 1, 4, 8], [], extra_inputs=[vi("scales", [4])]),
    "scales_and_sizes": lambda: resize(["x", "", "scales", "sizes"], [1, 1, 4, 8],
                                       SCALES + [const("sizes", np.array([1, 1, 4, 8], np.int64))]),
    "opset10_nearest_down": lambda: resize(["x", "scales"], [1, 1, 1, 2], [const("scales", np.array([1, 1, 0.5, 0.5], np.float32))],
                                           opset=10, mode="nearest"),
    "bad_mode": lambda: resize(["x", "", "scales"], [1, 1, 4, 8], SCALES, mode="area"),
    "crop_no_roi": lambda: resize(["x", "", "scales"], [1, 1, 4, 8], SCALES, coordinate_transformation_mode="tf_crop_and_resize"),
    "grid_sample": lambda: model([helper.make_node("GridSample", ["x", "grid"], ["y"], name="gs", mode="cubic",
                                                   padding_mode="reflection")],
                                 [vi("x", [1, 2, 4, 4]), vi("grid", [1, 3, 5, 2])], [vi("y", [1, 2, 3, 5])], opset=20),
    "group_norm18_channel_scale": lambda: model(
        [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=2)],
        [vi("x", [1, 4, 3, 3])], [vi("y", [1, 4, 3, 3])], [const("s", np.ones(4, np.float32)), const("b", np.zeros(4, np.float32))],
        opset=18),
}

if __name__ == "__main__":
    save(CASES[sys.argv[1]](), sys.argv[2])
