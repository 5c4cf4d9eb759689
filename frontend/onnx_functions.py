"""ONNX ops defined by a function, expanded at import when geir has no converter of its own.

Many newer ONNX ops are specified as a function of older ones: the schema holds a body
(`OpSchema.function_body`) or builds one from the node's attributes and input types
(`get_context_dependent_function`, e.g. LinearAttention, CausalConvWithState,
FlexAttention). That body is the op's definition, so converting it node by node is exact
(onnxruntime runs such ops the same way). The body's nodes are converted at the body's own
opset, its attribute references (`ref_attr_name`) resolved against the node's attributes
and the body's defaults, a missing optional input left missing; its names are local to it.
Ops with a converter (frontend/onnx.py) never come here: a converter may map an op onto one
graph op with its own kernel.

Converters take the importer (frontend/onnx.py) and use its public methods only.
"""

from __future__ import annotations

import copy

import numpy as np
import onnx
from onnx import defs

from geir.frontend.onnx_control_flow import inline
from geir.ir.types import to_dtype

PREVIEW_DOMAIN = "ai.onnx.preview"
"""Where onnx puts ops still being specified (FlexAttention); default-domain functions."""


def _schema(node: onnx.NodeProto, opset: int):
    try:
        if node.domain in ("", "ai.onnx"):
            return defs.get_schema(node.op_type, opset, "")
        if node.domain == PREVIEW_DOMAIN:
            return defs.get_schema(node.op_type, PREVIEW_DOMAIN)
    except defs.SchemaError:
        return None
    return None


def has_function(node: onnx.NodeProto, opset: int) -> bool:
    """Whether the node's op (at `opset`) is defined by a function geir can expand."""
    schema = _schema(node, opset)
    return schema is not None and (schema.has_function or schema.has_context_dependent_function)


def missing_required_input(node: onnx.NodeProto, opset: int) -> str | None:
    """"'B' (#1)" when the node leaves out an input its schema requires (onnx's checker is not
    run on every model), else None; a converter can then take its required inputs as given."""
    schema = _schema(node, opset)
    if schema is None:
        return None
    for i, formal in enumerate(schema.inputs):
        if formal.option == defs.OpSchema.FormalParameterOption.Single and (i >= len(node.input) or not node.input[i]):
            return f"'{formal.name}' (#{i})"
    return None


def _type_proto(value) -> onnx.TypeProto:
    if value is None:
        return onnx.TypeProto()
    elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(to_dtype(value.type.element_type)))
    return onnx.helper.make_tensor_type_proto(elem, list(value.type.get_shape()))


def _function(im, node: onnx.NodeProto, ins) -> onnx.FunctionProto:
    schema = _schema(node, im.opset)
    if schema.has_function:
        return schema.function_body
    body = schema.get_context_dependent_function(
        node.SerializeToString(), [_type_proto(v).SerializeToString() for v in ins])
    fn = onnx.FunctionProto()
    fn.ParseFromString(body)
    return fn


def _resolve(fn: onnx.FunctionProto, node: onnx.NodeProto, bound: set[str], schema) -> list[onnx.NodeProto]:
    """The body's nodes with attribute references replaced by the node's attributes (or the
    body's or the schema's defaults; dropped when none has one), unbound inputs made missing
    (''), and each named after the node (errors and locations name the model's node)."""
    given = {a.name: a for a in node.attribute}
    given.update({a.name: a for a in fn.attribute_proto if a.name not in given})
    for name, attr in schema.attributes.items():
        if name not in given and attr.default_value.name:
            given[name] = attr.default_value
    nodes = []
    for inner in fn.node:
        inner = copy.deepcopy(inner)
        attrs = []
        for a in inner.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name not in given:
                    continue
                value = copy.deepcopy(given[a.ref_attr_name])
                value.name = a.name
                a = value
            attrs.append(a)
        del inner.attribute[:]
        inner.attribute.extend(attrs)
        inner.input[:] = [n if n in bound or n not in fn.input else "" for n in inner.input]
        inner.name = node.name or node.output[0]
        nodes.append(inner)
    return nodes


def expand_function(im, ins, attrs):
    """The node's function body converted in its place."""
    node = im.node
    fn = _function(im, node, ins)
    bound = {name for name, v in zip(fn.input, ins) if v is not None}
    body = onnx.helper.make_graph(
        _resolve(fn, node, bound, _schema(node, im.opset)), fn.name or node.op_type,
        [onnx.helper.make_value_info(name, onnx.TypeProto()) for name in fn.input],
        [onnx.helper.make_value_info(name, onnx.TypeProto()) for name in fn.output])
    opset = next((o.version for o in fn.opset_import if o.domain in ("", "ai.onnx")), im.opset)
    outer_opset, outer_types = im.opset, im.onnx_types
    im.opset, im.onnx_types = opset, {}  # the body's opset; its names are its own
    try:
        args = list(ins) + [None] * (len(fn.input) - len(ins))
        return inline(im, body, args[:len(fn.input)])
    finally:
        im.opset, im.onnx_types = outer_opset, outer_types
