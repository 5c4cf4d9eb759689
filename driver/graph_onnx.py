"""A compiled model's graph as an ONNX file for graph viewers (Netron).

The graph-level IR just before lowering (after fusion and layout) becomes one ONNX node per
kernel: a graph.fusion is a node whose type lists its ops (`conv+relu`) and whose name lists
the ONNX nodes it fuses; an op left alone is a node of its own type. Nodes are in the `ai.geir`
domain (they are geir's ops, not ONNX's: the file is for looking at, not for running). Every
edge carries its shape and dtype; a formatted tensor (NC1HWC0, FRACTAL_Z, FRACTAL_NZ) has
its storage shape, the format in its doc string. Weights are initializers (in their storage
layout), or graph inputs when their bytes were elided. onnx.checker accepts the file.

    geir-compile model.onnx -o model.om --export-graph model.graph.onnx
    geir-translate --export-onnx fused.mlir -o fused.onnx
    geir.compile("model.onnx").export_graph("model.graph.onnx")
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    ShapedType,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue

from geir.dialects import attr_names, formats
from geir.dialects import graph as g
from geir.errors import GeirError
from geir.ir.locations import loc_names
from geir.ir.types import to_dtype
from geir.dialects.ascend import is_ascend_module

DOMAIN = "ai.geir"
"""The nodes' domain: geir's ops, not ONNX's."""
OPSETS = (helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1))


def graph_onnx(module: ModuleOp, name: str = "graph") -> onnx.ModelProto:
    """The ONNX model of a graph-level module's `@main` (kernels as nodes), checked."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    main = next((f for f in funcs if f.sym_name.data == "main"), funcs[0] if len(funcs) == 1 else None)
    if main is None:
        raise GeirError("the graph export needs a module with a func.func @main")
    if is_ascend_module(module):
        raise GeirError("the graph export needs graph-level IR (the stages before lowering), not an ascend program")
    model = helper.make_model(_Export(main).graph(name), opset_imports=list(OPSETS), producer_name="geir graph export")
    onnx.checker.check_model(model)
    return model


class _Export:
    def __init__(self, main: func.FuncOp) -> None:
        self.main = main
        self.names: dict[SSAValue, str] = {}
        self.taken: set[str] = set()
        self.nodes: list[onnx.NodeProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.value_info: list[onnx.ValueInfoProto] = []

    def graph(self, name: str) -> onnx.GraphProto:
        f = self.main
        for i, arg in enumerate(f.args):
            self.inputs.append(_value_info(self.name(arg, _attr_name(f.arg_attrs, i)), arg.type))
        ret = f.body.block.last_op
        outputs = list(ret.operands) if isinstance(ret, func.ReturnOp) else []
        out_names = [_attr_name(f.res_attrs, i) or f"output{i}" for i in range(len(outputs))]
        for value, out in zip(outputs, out_names):  # a result takes its output's name
            if value not in self.names and not isinstance(value.owner, g.ConstantOp) and out not in self.taken:
                self.name(value, out)
        for op in f.body.block.ops:
            if not isinstance(op, func.ReturnOp):
                self.op(op)
        graph_outputs = []
        for value, out in zip(outputs, out_names):
            if self.names[value] != out:  # an input, a weight or a value returned twice
                self.nodes.append(helper.make_node("Identity", [self.names[value]], [self.name_new(out)], name=out))
            graph_outputs.append(_value_info(out, value.type))
        return helper.make_graph(self.nodes, name, self.inputs, graph_outputs, self.initializers,
                                 value_info=self.value_info)

    def name(self, value: SSAValue, wanted: str | None = None) -> str:
        if value not in self.names:
            self.names[value] = self.name_new(wanted or value.name_hint or f"t{len(self.names)}")
        return self.names[value]

    def name_new(self, wanted: str) -> str:
        name, n = wanted, 0
        while name in self.taken:
            n += 1
            name = f"{wanted}_{n}"
        self.taken.add(name)
        return name

    def op(self, op: Operation) -> None:
        if isinstance(op, g.ConstantOp):
            self.constant(op)
            return
        inputs = [self.names[v] for v in op.operands]
        outputs = [self.name(r) for r in op.results]
        nodes = loc_names(op.location)
        if isinstance(op, g.FusionOp):
            inner = [o for o in op.inner_ops() if not isinstance(o, g.ConstantOp)]
            op_type = _fused_type([_short(o) for o in inner])
            attrs = {"kind": op.kind.data, "ops": [o.name for o in inner], "onnx_nodes": nodes}
        else:
            op_type, attrs = _short(op), {k: v for k, a in op.properties.items() if (v := _attribute(a)) is not None}
        node_name = ", ".join(nodes) if nodes else f"{op_type}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=node_name, domain=DOMAIN, **attrs))
        self.value_info += [_value_info(self.names[r], r.type) for r in op.results]

    def constant(self, op: g.ConstantOp) -> None:
        name = self.name(op.output, ", ".join(loc_names(op.location)) or None)
        array = op.array_or_none()
        if array is None:  # elided bytes: an input of that type, so the graph still shows it
            self.inputs.append(_value_info(name, op.output.type))
            return
        tensor = numpy_helper.from_array(np.ascontiguousarray(array).reshape(op.output.type.get_shape()), name)
        tensor.doc_string = _format_note(op.output.type)
        self.initializers.append(tensor)


MAX_TYPE_OPS = 4
"""Ops spelled out in a fusion node's type; the `ops` attribute lists them all."""


def _fused_type(ops: list[str]) -> str:
    """`conv+relu`; for a long fusion its first and last ops and the count."""
    if len(ops) <= MAX_TYPE_OPS:
        return "+".join(ops) or "fusion"
    return f"{ops[0]}+{ops[1]}+...+{ops[-1]} ({len(ops)} ops)"


def _attr_name(attrs, i: int) -> str | None:
    if attrs is None or i >= len(attrs.data):
        return None
    a = attrs.data[i].data.get(attr_names.ONNX_NAME)
    return a.data if isinstance(a, StringAttr) else None


def _short(op: Operation) -> str:
    """`conv` for graph.conv: the op's name in its dialect."""
    return op.name.split(".", 1)[-1]


def _attribute(a: Attribute):
    """An op property as an ONNX attribute value (ints, floats, strings and lists of them),
    None for anything else."""
    if isinstance(a, IntegerAttr):
        return int(a.value.data)
    if isinstance(a, FloatAttr):
        return float(a.value.data)
    if isinstance(a, StringAttr):
        return a.data
    if isinstance(a, DenseArrayBase):
        return list(a.get_values())
    if isinstance(a, ArrayAttr) and a.data and all(isinstance(x, IntegerAttr) for x in a.data):
        return [int(x.value.data) for x in a.data]
    return None


def _value_info(name: str, t: Attribute) -> onnx.ValueInfoProto:
    if not isinstance(t, ShapedType):
        return helper.make_value_info(name, onnx.TypeProto())
    elem = helper.np_dtype_to_tensor_dtype(to_dtype(t.element_type))
    info = helper.make_tensor_value_info(name, elem, [d if d >= 0 else None for d in t.get_shape()])
    info.doc_string = _format_note(t)
    return info


def _format_note(t: Attribute) -> str:
    """`NC1HWC0 of NCHW [1, 64, 56, 56]` for a formatted tensor, else empty."""
    f = formats.format_attr(t)
    if f is None:
        return ""
    return f"{f.storage.data} of {f.origin.data} {list(f.logical_shape)}"
