"""Write small ONNX models for import-resize.test: make_spatial_onnx.py CASE OUT.onnx [CASE OUT.onnx ...]"""

from functools import partial

import numpy as np
from onnx import TensorProto, helper

from onnx_cases import const, main, vi, model as _model

model = partial(_model, opset=19, min_ir=9)

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def resize(inputs, out_shape, inits, opset=19, x_shape=(1, 1, 2, 4), extra_inputs=(), **attrs):
    return model([helper.make_node("Resize", inputs, ["y"], name="rs", **attrs)],
                 [vi("x", list(x_shape)), *extra_inputs], [vi("y", out_shape)], inits, opset=opset)


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
    main(CASES)
