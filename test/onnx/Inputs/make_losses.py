"""Write one small ONNX model for import-losses.test: make_losses.py CASE OUT.onnx [CASE OUT.onnx ...]

The loss ops (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) and the optional outputs /
training-mode forms frontend/onnx_training.py imports; test/python/test_onnx_losses.py builds
the same models for numerics."""

import numpy as np
from onnx import TensorProto, helper

from onnx_cases import const, main, vi, model

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def nll(reduction="mean", weight=True, ignore_index=None, x=(2, 3, 4), t_type=I64, opset=13):
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    ins = ["x", "t", "w"] if weight else ["x", "t"]
    out = [] if reduction != "none" else [x[0], *x[2:]]
    return model([helper.make_node("NegativeLogLikelihoodLoss", ins, ["loss"], name="nll", **attrs)],
                 [vi("x", list(x)), vi("t", [x[0], *x[2:]], t_type)], [vi("loss", out)],
                 [const("w", np.array([0.5, 1.0, 2.0], np.float32))] if weight else [], opset)


def sce(log_prob=True, reduction="mean", ignore_index=None):
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    outs = ["loss", "log_prob"] if log_prob else ["loss"]
    return model([helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], outs, name="sce", **attrs)],
                 [vi("x", [4, 5]), vi("t", [4], I64)],
                 [vi("loss", []), *([vi("log_prob", [4, 5])] if log_prob else [])], opset=13)


def layer_norm(stats=True):
    outs = ["y", "mean", "inv"] if stats else ["y"]
    return model([helper.make_node("LayerNormalization", ["x", "s", "b"], outs, name="ln", axis=1)],
                 [vi("x", [2, 3, 4])],
                 [vi("y", [2, 3, 4]), *([vi("mean", [2, 1, 1]), vi("inv", [2, 1, 1])] if stats else [])],
                 [const("s", np.ones((3, 4), np.float32)), const("b", np.zeros((3, 4), np.float32))])


def dropout(training, ratio):
    return model([helper.make_node("Dropout", ["x", "r", "tm"], ["y", "mask"], name="drop")],
                 [vi("x", [2, 3])], [vi("y", [2, 3]), vi("mask", [2, 3], B)],
                 [const("r", np.array(ratio, np.float32)), const("tm", np.array(training))], opset=13)


def batch_norm_training():
    c = 3
    return model([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
                                   name="bn", training_mode=1, momentum=0.8)],
                 [vi("x", [2, c, 4])], [vi("y", [2, c, 4]), vi("rm", [c]), vi("rv", [c])],
                 [const("s", np.ones(c, np.float32)), const("b", np.zeros(c, np.float32)),
                  const("m", np.zeros(c, np.float32)), const("v", np.ones(c, np.float32))], opset=15)


def max_pool_indices(storage_order=0):
    return model([helper.make_node("MaxPool", ["x"], ["y", "i"], name="pool", kernel_shape=[2, 2],
                                   strides=[2, 2], pads=[1, 1, 0, 0], storage_order=storage_order)],
                 [vi("x", [1, 2, 4, 3])], [vi("y", [1, 2, 2, 2]), vi("i", [1, 2, 2, 2], I64)], opset=12)


def conv_transpose(output_shape, auto_pad="NOTSET"):
    return model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="deconv", strides=[3, 2],
                                   output_shape=output_shape, auto_pad=auto_pad)],
                 [vi("x", [1, 1, 3, 3])], [vi("y", [1, 2, *output_shape])],
                 [const("w", np.ones((1, 2, 3, 3), np.float32))])


CASES = {
    "nll_weight_mean_ii": lambda: nll(ignore_index=1),
    "nll_none_negative_ii": lambda: nll("none", weight=False, ignore_index=-1, x=(2, 3)),
    "nll_sum_int32": lambda: nll("sum", t_type=TensorProto.INT32),
    "nll_bad_reduction": lambda: nll("max"),
    "nll_float_target": lambda: nll(t_type=F),
    "sce_log_prob": lambda: sce(),
    "sce_loss_only": lambda: sce(False, "sum", ignore_index=7),
    "layer_norm_stats": lambda: layer_norm(),
    "layer_norm_plain": lambda: layer_norm(False),
    "dropout_mask": lambda: dropout(False, 0.5),
    "dropout_training_ratio0": lambda: dropout(True, 0.0),
    "dropout_training_random": lambda: dropout(True, 0.5),
    "batch_norm_training": batch_norm_training,
    "max_pool_indices": max_pool_indices,
    "max_pool_indices_col": lambda: max_pool_indices(1),
    "conv_transpose_output_shape": lambda: conv_transpose([10, 8]),
    "conv_transpose_output_shape_upper": lambda: conv_transpose([10, 8], "SAME_UPPER"),
}

if __name__ == "__main__":
    main(CASES)
