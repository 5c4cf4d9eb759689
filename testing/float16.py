"""An ONNX model converted to fp16 or bf16, for the tests of the low-precision paths.

`to_low_precision(model, "float16" | "bfloat16")` gives a copy of an fp32 model in which every
float32 tensor is of the target type: the graph's inputs, outputs and value_info, the
initializers, the values of Constant and ConstantOfShape nodes and of the `dtype` attributes of
value generators, and the targets of Cast nodes. Integer and bool tensors - shapes, indices,
masks - are left as they are, and so are the tensors an op takes in float32 whatever its data
type (Resize's scales). Subgraphs (If, Loop, Scan) are converted too.

This is a test helper: the graph pass that turns fp32 graphs into mixed-precision ones (GE's
precision modes) works on the graph dialect and decides op by op; this converts everything.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TARGETS = {
    "float16": (TensorProto.FLOAT16, np.dtype(np.float16)),
    "bfloat16": (TensorProto.BFLOAT16, np.dtype(ml_dtypes.bfloat16)),
}

KEEP_FLOAT32: dict[str, tuple[int, ...]] = {"Resize": (2,), "Upsample": (1,)}
"""Inputs (by position) an op takes as float32 whatever its data type: left alone."""


def to_low_precision(model: onnx.ModelProto, dtype: str = "float16") -> onnx.ModelProto:
    """A copy of `model` with its float32 tensors in `dtype` ("float16" or "bfloat16")."""
    if dtype not in TARGETS:
        raise ValueError(f"dtype must be one of {', '.join(TARGETS)}, got {dtype!r}")
    m = onnx.ModelProto()
    m.CopyFrom(model)
    _Converter(*TARGETS[dtype]).graph(m.graph)
    return m


class _Converter:
    def __init__(self, elem: int, np_dtype: np.dtype):
        self.elem, self.np_dtype = elem, np_dtype

    def graph(self, graph: onnx.GraphProto) -> None:
        keep = {n.input[i] for n in graph.node for i in KEEP_FLOAT32.get(n.op_type, ()) if i < len(n.input)}
        for vi in (*graph.input, *graph.output, *graph.value_info):
            if vi.name not in keep:
                self.value_info(vi)
        for i, t in enumerate(graph.initializer):
            if t.name not in keep:
                graph.initializer[i].CopyFrom(self.tensor(t))
        for node in graph.node:
            self.node(node, keep)

    def value_info(self, vi: onnx.ValueInfoProto) -> None:
        tt = vi.type.tensor_type
        if vi.type.HasField("tensor_type") and tt.elem_type == TensorProto.FLOAT:
            tt.elem_type = self.elem

    def tensor(self, t: onnx.TensorProto) -> onnx.TensorProto:
        if t.data_type != TensorProto.FLOAT:
            return t
        return numpy_helper.from_array(numpy_helper.to_array(t).astype(self.np_dtype), t.name)

    def node(self, node: onnx.NodeProto, keep: set[str]) -> None:
        for i, a in enumerate(node.attribute):
            if a.type == onnx.AttributeProto.TENSOR and not any(o in keep for o in node.output):
                a.t.CopyFrom(self.tensor(a.t))
            elif a.type == onnx.AttributeProto.GRAPH:
                self.graph(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    self.graph(sub)
            elif a.name in ("to", "dtype") and a.type == onnx.AttributeProto.INT and a.i == TensorProto.FLOAT:
                a.i = self.elem
        if node.op_type == "Constant":  # value_float(s): a float32 literal, as a tensor of the type
            for i, a in enumerate(node.attribute):
                if a.name in ("value_float", "value_floats"):
                    value = np.array(a.f if a.name == "value_float" else list(a.floats), self.np_dtype)
                    node.attribute[i].CopyFrom(helper.make_attribute("value", numpy_helper.from_array(value)))
