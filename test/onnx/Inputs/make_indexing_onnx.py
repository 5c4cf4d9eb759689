"""Write small ONNX models for import-indexing.test: make_indexing_onnx.py CASE OUT.onnx [CASE OUT.onnx ...]"""

from functools import partial

import numpy as np
from onnx import TensorProto, helper

from onnx_cases import const, main, vi, model as _model

model = partial(_model, opset=18)

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


CASES = {
    "scatter_nd_cache": lambda: model(
        [helper.make_node("ScatterND", ["cache", "rows", "new"], ["y"], name="write")],
        [vi("cache", [8, 16, 4]), vi("rows", [2, 1], I64), vi("new", [2, 16, 4])], [vi("y", [8, 16, 4])],
    ),
    "scatter_elements_max": lambda: model(
        [helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="se", axis=1, reduction="max")],
        [vi("x", [2, 5]), vi("i", [2, 2], I64), vi("u", [2, 2])], [vi("y", [2, 5])],
    ),
    "scatter_opset9": lambda: model(
        [helper.make_node("Scatter", ["x", "i", "u"], ["y"], name="sc", axis=0)],
        [vi("x", [3, 3]), vi("i", [2, 3], I64), vi("u", [2, 3])], [vi("y", [3, 3])], opset=9,
    ),
    "gather_nd_batch": lambda: model(
        [helper.make_node("GatherND", ["x", "i"], ["y"], name="gnd", batch_dims=1)],
        [vi("x", [2, 3, 4]), vi("i", [2, 1], I64)], [vi("y", [2, 4])], opset=13,
    ),
    "gather_nd_out_of_bounds": lambda: model(
        [helper.make_node("GatherND", ["x", "i"], ["y"], name="gnd")],
        [vi("x", [2, 3])], [vi("y", [1, 3])], [const("i", np.array([[5]], np.int64))], opset=13,
    ),
    "top_k_const": lambda: model(
        [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=-1, largest=1)],
        [vi("x", [3, 10])], [vi("v", [3, 4]), vi("i", [3, 4], I64)], [const("k", np.array([4], np.int64))], opset=24,
    ),
    "top_k_runtime": lambda: model(
        [helper.make_node("Abs", ["kin"], ["k"], name="abs"),
         helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk")],
        [vi("x", [3, 10]), vi("kin", [1], I64)], [vi("v", [3, None]), vi("i", [3, None], I64)], opset=24,
    ),
    "top_k_graph_input": lambda: model(
        [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk")],
        [vi("x", [3, 10]), vi("k", [1], I64)], [vi("v", [3, None]), vi("i", [3, None], I64)], opset=24,
    ),
    "einsum_bmm": lambda: model(
        [helper.make_node("Einsum", ["a", "b"], ["y"], name="es", equation="bij, bjk -> bik")],
        [vi("a", [5, 2, 3]), vi("b", [5, 3, 4])], [vi("y", [5, 2, 4])], opset=28,
    ),
    "einsum_diagonal": lambda: model(
        [helper.make_node("Einsum", ["a"], ["y"], name="es", equation="...ii->...i")],
        [vi("a", [2, 3, 3])], [vi("y", [2, 3])], opset=28,
    ),
    "one_hot": lambda: model(
        [helper.make_node("OneHot", ["i", "depth", "values"], ["y"], name="oh", axis=1)],
        [vi("i", [3], I64)], [vi("y", [3, 4])],
        [const("depth", np.array(4, np.int64)), const("values", np.array([0, 1], np.float32))], opset=28,
    ),
    "eye_like": lambda: model(
        [helper.make_node("EyeLike", ["x"], ["y"], name="eye", k=1, dtype=F)],
        [vi("x", [2, 3], TensorProto.INT32)], [vi("y", [2, 3])], opset=22,
    ),
    "compress_const": lambda: model(
        [helper.make_node("Compress", ["x", "c"], ["y"], name="cmp", axis=1)],
        [vi("x", [3, 4])], [vi("y", [3, 2])], [const("c", np.array([True, False, True, False]))], opset=28,
    ),
    "compress_runtime": lambda: model(
        [helper.make_node("Not", ["cin"], ["c"], name="not"),
         helper.make_node("Compress", ["x", "c"], ["y"], name="cmp", axis=1)],
        [vi("x", [3, 4]), vi("cin", [4], B)], [vi("y", [3, None])], opset=28,
    ),
    "non_zero_runtime": lambda: model(
        [helper.make_node("NonZero", ["x"], ["y"], name="nz")],
        [vi("x", [3, 4])], [vi("y", [2, None], I64)], opset=13,
    ),
    "unique_const": lambda: model(
        [helper.make_node("Unique", ["x"], ["y", "first", "inverse", "counts"], name="uq", sorted=0)],
        [], [vi("y", [3]), vi("first", [3], I64), vi("inverse", [5], I64), vi("counts", [3], I64)],
        [const("x", np.array([2, 1, 2, 3, 1], np.float32))], opset=28,
    ),
    "reverse_sequence": lambda: model(
        [helper.make_node("ReverseSequence", ["x", "lens"], ["y"], name="rev", batch_axis=0, time_axis=1)],
        [vi("x", [2, 4]), vi("lens", [2], I64)], [vi("y", [2, 4])], opset=28,
    ),
    "tensor_scatter_batch": lambda: model(
        [helper.make_node("TensorScatter", ["past", "new", "pos"], ["present"], name="ts", mode="circular")],
        [vi("past", [2, 1, 8, 4]), vi("new", [2, 1, 1, 4]), vi("pos", [2], I64)], [vi("present", [2, 1, 8, 4])],
        opset=24,
    ),
    "tensor_scatter_one": lambda: model(
        [helper.make_node("TensorScatter", ["past", "new", "pos"], ["present"], name="ts")],
        [vi("past", [1, 2, 8, 4]), vi("new", [1, 2, 1, 4]), vi("pos", [1], I64)], [vi("present", [1, 2, 8, 4])],
        opset=24,
    ),
    "reduce_max_empty": lambda: model(
        [helper.make_node("ReduceMax", ["x", "axes"], ["y"], name="max", keepdims=1)],
        [vi("x", [2, 0, 4])], [vi("y", [2, 1, 4])], [const("axes", np.array([1], np.int64))],
    ),
}

if __name__ == "__main__":
    main(CASES)
