"""Import an ONNX model into the graph dialect.

The model becomes one `func.func @main` whose arguments are the graph inputs
and whose results are the graph outputs (each named by an `onnx.name` argument
or result attribute). Initializers become `graph.constant`s holding the
tensor's bytes, every op is located at its node name, and result types come
from the dialect's own shape inference, checked against onnx's.

Opsets 6 to 28 are supported (6 for the PyTorch-converted test models; its
legacy `broadcast`/`axis` binary-op attributes are rewritten to numpy
broadcasting): attributes that later opsets turned into inputs
(Slice starts, Pad pads, Clip bounds, Split sizes, reduction and squeeze axes)
are normalised here to the newest form, so the dialect sees one semantics.

What opsets 22 to 28 changed in the converted ops is one table, `OPSET_CHANGES`
(frontend/onnx_opsets.py): mostly element types (bfloat16, float8, float4, int2, float6),
which `_element_type` takes or rejects by name; a new attribute is checked against the
values geir honours before the converter runs (`check_opset_changes`), so a model using
one geir cannot honour is one error naming the node, op type, opset and attribute.
test_import.py checks the table lists every schema version of every converted op.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, BlockArgument, SSAValue

from geir.dialects import graph as g
from geir.ir.shape_only import is_shape_only
from geir.ir.types import UnsupportedTypeError, i1, is_float_dtype, tensor, to_dtype, to_element_type
from geir.errors import OnnxImportError
from geir.frontend.builder import GraphBuilder, value_hint
from geir.frontend.onnx_control_flow import CONTROL_FLOW_CONVERTERS
from geir.frontend.onnx_elementwise import ELEMENTWISE_CONVERTERS
from geir.frontend.onnx_functions import expand_function, has_function, missing_required_input
from geir.frontend.onnx_indexing import INDEXING_CONVERTERS
from geir.frontend.onnx_losses import LOSSES_CONVERTERS
from geir.frontend.onnx_narrow import cast_options
from geir.frontend.onnx_opsets import check_opset_changes
from geir.frontend.onnx_quantized import CONTRIB_CONVERTERS, QUANTIZED_CONVERTERS
from geir.frontend.onnx_rnn import RNN_CONVERTERS
from geir.frontend.onnx_spatial import SPATIAL_CONVERTERS
from geir.frontend.onnx_training import (batch_norm_training, i1_like, layer_norm_with_stats, max_pool_indices,
                                         outputs_used)

MIN_OPSET, MAX_OPSET = 6, 28  # 28: the newest opset OPSET_CHANGES has been checked against
SHAPE_INPUT_LIMIT = 16
"""A graph input of at most this many elements that a result shape depends on is named in the
error, with how to freeze it (a size, a bound); a larger one is data, not a shape parameter."""


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------


def existing_file(model: str | Path) -> Path | None:
    """`model` as the path of a file that exists; None for any other string (one too long to
    be a path, MLIR text say, raises OSError in the check)."""
    try:
        path = Path(model)
        return path if path.is_file() else None
    except OSError:
        return None


def _no_such_file(model: str | Path) -> OnnxImportError:
    text = str(model)
    if "\n" in text or len(text) > 200:
        return OnnxImportError(f"no such file: {text[:40]!r}... is no path (MLIR text: give geir.compile the "
                               "ModuleOp geir.ir.text.parse_module reads from it)")
    return OnnxImportError(f"no such file: {text}")


def load_model(model: onnx.ModelProto | str | Path | bytes) -> onnx.ModelProto:
    """An onnx.ModelProto from a proto, a path (external data beside it) or bytes."""
    if isinstance(model, onnx.ModelProto):
        return model
    try:
        if isinstance(model, bytes):
            proto, what = onnx.load_model_from_string(model), "the bytes are"  # b"" too: an empty model
        else:
            path = existing_file(model)
            if path is None:
                raise _no_such_file(model)
            proto, what = onnx.load(str(path)), f"{path} is"  # external data files are read from beside the model
        if not proto.graph.node and not proto.graph.output:
            raise OnnxImportError(f"{what} not an ONNX model (no graph)")
        return proto
    except OnnxImportError:
        raise
    except Exception as e:  # protobuf's DecodeError and friends
        raise OnnxImportError(f"{model} is not a valid ONNX model: {e}") from None


def import_model(model: onnx.ModelProto | str | Path | bytes, *, check_shapes: bool = True,
                 freeze: Mapping[str, Any] | None = None, weights: bool = True,
                 input_shapes: Mapping[str, Sequence[int]] | None = None) -> ModuleOp:
    """Import an ONNX model into a module holding `func.func @main`.

    `input_shapes` gives named graph inputs static shapes: their dynamic dims (a `dim_param`
    such as `batch`, or none) take the sizes given, their static ones must equal them
    (driver/dynamic_shapes.py: ATC's input_shape and gears).

    `freeze` maps graph input names to values: those inputs become constants first
    (`freeze_inputs`), for a model that gives reduction axes or split sizes as inputs.

    `weights=False` imports the weights as shape-only placeholders (frontend/builder.py): no
    bytes are read, so a model whose external data is absent compiles and is timed
    (`CompiledModel.profile(mode="timing")`). A weight is an initializer that is not
    shape data (`is_weight`); shape data is read as always.

    A model file's external data is read tensor by tensor as the importer reaches it, not
    into the proto first: shape inference serialises the proto, which protobuf limits to
    2 GB, and a 13B model's weights are far more."""
    base_dir = None
    if isinstance(model, str | Path) and existing_file(model) is not None:
        base_dir = str(Path(model).resolve().parent)
        model = _load_without_external_data(Path(model))
    proto = load_model(model)
    if freeze:
        proto = freeze_inputs(proto, freeze)
    opset = _default_opset(proto)
    check_graph(proto.graph, opset)
    inputs = _shaped_inputs(proto.graph, input_shapes or {})
    try:
        inferred = onnx.shape_inference.infer_shapes(_shape_skeleton(proto, inputs), data_prop=True)
    except Exception as e:
        raise OnnxImportError(f"onnx shape inference failed: {e}") from None
    _check_supported(proto.graph, opset)
    importer = _Importer(opset, _value_types(inferred.graph), check_shapes, base_dir, weights)
    return importer.run(proto.graph, inputs)


def _shaped_inputs(graph: onnx.GraphProto, shapes: Mapping[str, Sequence[int]]) -> list[onnx.ValueInfoProto]:
    """The graph's inputs (initializers aside), those named in `shapes` with the shape given."""
    inits = {t.name for t in graph.initializer}
    inputs = [vi for vi in graph.input if vi.name not in inits]
    by_name = {vi.name: vi for vi in inputs}
    unknown = [n for n in shapes if n not in by_name]
    if unknown:
        raise OnnxImportError(f"input_shape names '{unknown[0]}', which is not a graph input; the inputs are "
                              f"{', '.join(sorted(by_name))}")
    out = []
    for vi in inputs:
        if vi.name not in shapes:
            out.append(vi)
            continue
        shape = [int(d) for d in shapes[vi.name]]
        declared = vi.type.tensor_type.shape.dim
        if vi.type.tensor_type.HasField("shape") and len(declared) != len(shape):
            raise OnnxImportError(f"input_shape gives '{vi.name}' {len(shape)} dims; the model's has {len(declared)}")
        for i, (d, size) in enumerate(zip(declared, shape)):
            if d.HasField("dim_value") and d.dim_value != size:
                raise OnnxImportError(f"input_shape gives '{vi.name}' dim {i} size {size}; the model fixes it "
                                      f"at {d.dim_value}")
        out.append(onnx.helper.make_tensor_value_info(vi.name, vi.type.tensor_type.elem_type, shape))
    return out


def freeze_inputs(proto: onnx.ModelProto, values: Mapping[str, Any]) -> onnx.ModelProto:
    """A copy of the model whose named graph inputs are initializers holding `values`.

    geir needs static shapes, so an input that decides one - a reduction's axes, Split's
    sizes, a Reshape target - must be a constant; a model that leaves it to the caller is
    compiled for one value of it. Each value takes the input's element type, and its
    declared shape when the element counts agree (`--freeze axes=1` fills an input of
    shape [1] or a scalar)."""
    frozen = onnx.ModelProto()
    frozen.CopyFrom(proto)
    graph = frozen.graph
    initialized = {t.name for t in graph.initializer}
    inputs = {vi.name: vi for vi in graph.input if vi.name not in initialized}
    for name, value in values.items():
        if name not in inputs:
            raise OnnxImportError(f"freeze: '{name}' is not a graph input; the inputs are {sorted(inputs)}")
        graph.initializer.append(numpy_helper.from_array(_frozen_value(inputs[name], value), name))
        graph.input.remove(inputs[name])
    frozen.ir_version = max(frozen.ir_version, 4)  # from IR 4 an initializer need not be an input
    return frozen


def _frozen_value(vi: onnx.ValueInfoProto, value: Any) -> np.ndarray:
    tt = vi.type.tensor_type
    what = f"freeze: graph input '{vi.name}'"
    dtype = to_dtype(_element_type(tt.elem_type, what))
    try:
        array = np.asarray(value).astype(dtype)
    except (TypeError, ValueError) as e:
        raise OnnxImportError(f"{what}: {e}") from None
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
    if tt.HasField("shape") and None not in dims and list(array.shape) != dims:
        if array.size != math.prod(dims):
            raise OnnxImportError(f"{what} has shape {dims}; the value given has shape {list(array.shape)}")
        array = array.reshape(dims)
    return array


def _load_without_external_data(path: Path) -> onnx.ModelProto:
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as e:  # protobuf's DecodeError and friends
        raise OnnxImportError(f"{path} is not a valid ONNX model: {e}") from None
    if not proto.graph.node and not proto.graph.output:
        raise OnnxImportError(f"{path} is not an ONNX model (no graph)")
    return proto


def _default_opset(proto: onnx.ModelProto) -> int:
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx"):
            if not MIN_OPSET <= imp.version <= MAX_OPSET:
                raise OnnxImportError(
                    f"opset {imp.version} is not supported (geir imports opsets {MIN_OPSET} to {MAX_OPSET})"
                )
            return imp.version
    raise OnnxImportError("the model imports no default-domain opset")


def _where(node: onnx.NodeProto, opset: int) -> str:
    """How errors name a node: its name (else its first output), op type and opset."""
    return f"node '{node.name or node.output[0]}' ({node.op_type}, opset {opset})"


def check_graph(graph: onnx.GraphProto, opset: int) -> None:
    """Reject a graph that is not a dataflow graph in order, naming the node and the value:
    every value has one producer (a node, a graph input or an initializer), and every node
    input is produced before the node - by no node (a missing value), by the node itself
    or a node depending on it (a cycle), or by a later node (ONNX lists nodes in
    topological order)."""
    sources = {i.name: "a graph input" for i in graph.input}
    sources.update((t.name, "an initializer") for t in graph.initializer)
    producer: dict[str, int] = {}
    for i, node in enumerate(graph.node):
        for name in filter(None, node.output):
            if name in producer:
                first = graph.node[producer[name]]
                raise OnnxImportError(f"{_where(node, opset)}: output '{name}' is already written by node "
                                      f"'{first.name or first.output[0]}' ({first.op_type}); an ONNX value has "
                                      f"one producer")
            if name in sources:
                raise OnnxImportError(f"{_where(node, opset)}: output '{name}' is already {sources[name]}; an "
                                      f"ONNX value has one producer")
            producer[name] = i
    for i, node in enumerate(graph.node):
        for name in filter(None, node.input):
            if name in sources or producer.get(name, len(graph.node)) < i:
                continue
            if name not in producer:
                raise OnnxImportError(f"{_where(node, opset)}: input '{name}' is produced by no node and is "
                                      f"no graph input or initializer")
            cycle = _cycle_through(graph, producer, i, name)
            if cycle:
                raise OnnxImportError(f"{_where(node, opset)}: input '{name}' depends on the node's own output: "
                                      f"the graph has a cycle {cycle}")
            later = graph.node[producer[name]]
            raise OnnxImportError(f"{_where(node, opset)}: input '{name}' is written by node "
                                  f"'{later.name or later.output[0]}' ({later.op_type}), which comes after it; "
                                  f"ONNX lists nodes in topological order")


def _cycle_through(graph: onnx.GraphProto, producer: dict[str, int], start: int, value: str) -> str | None:
    """'a' -> 'x' -> 'b' -> 'y' -> 'a' (nodes and the values between them) if `value`, an
    input of node `start`, depends on that node's outputs, else None: a backward search
    from the value's producer through the producers of its inputs."""
    parent: dict[int, tuple[str, int]] = {producer[value]: (value, start)}  # node -> (value it feeds, consumer)
    stack = [producer[value]]
    while stack:
        n = stack.pop()
        if n == start:
            break
        for name in filter(None, graph.node[n].input):
            p = producer.get(name)
            if p is not None and p not in parent:
                parent[p] = (name, n)
                stack.append(p)
    if start not in parent:
        return None
    path, n = [start], start
    while True:  # follow the values forward from the start node back to itself
        value_fed, n = parent[n]
        path += [value_fed, n]
        if n == start:
            break
    label = lambda k: graph.node[k].name or graph.node[k].output[0]  # noqa: E731
    return " -> ".join(f"'{label(x)}'" if j % 2 == 0 else f"'{x}'" for j, x in enumerate(path))


def _check_supported(graph: onnx.GraphProto, opset: int) -> None:
    bad = [
        f"node '{n.name or n.output[0]}' ({n.op_type}, opset {opset}{', domain ' + n.domain if n.domain else ''})"
        for n in graph.node
        if converter_of(n, opset) is None
    ]
    if bad:
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise OnnxImportError(f"unsupported ONNX operator: {'; '.join(bad[:3])}{more}")


SHAPE_DATA_MAX_ELEMENTS = 1024
"""An initializer of at most this many elements may be shape data (a Reshape target, Slice
starts, Resize scales): shape inference sees its values, a shape-only import reads it."""


def is_weight(t: onnx.TensorProto) -> bool:
    """Whether a shape-only import makes the initializer a placeholder without reading it: it
    is larger than shape data can be. A smaller one is read if its bytes are there (inline,
    or in an external data file present), else it is a placeholder too."""
    return math.prod(t.dims) > SHAPE_DATA_MAX_ELEMENTS


def _shape_skeleton(proto: onnx.ModelProto, inputs: Sequence[onnx.ValueInfoProto] | None = None
                    ) -> onnx.ModelProto:
    """The model for onnx shape inference: its large initializers as typed graph inputs, its
    other inputs `inputs` when given (shapes set by input_shape).

    Shape inference serialises the model and copies every initializer (VGG-19: 548 MB, 5 of
    the 7 s its import took); a weight's values never decide a shape, its type does."""
    graph = proto.graph
    declared = [vi for vi in graph.input if vi.name not in {t.name for t in graph.initializer}]
    same_inputs = inputs is None or all(a is b for a, b in zip(inputs, declared))
    if same_inputs and all(math.prod(t.dims) <= SHAPE_DATA_MAX_ELEMENTS for t in graph.initializer):
        return proto
    skeleton = onnx.ModelProto()
    for field, value in proto.ListFields():
        if field.name != "graph":
            _copy_field(skeleton, field, value)
    for field, value in graph.ListFields():
        if field.name not in ("initializer", "input"):
            _copy_field(skeleton.graph, field, value)
    shaped = {vi.name: vi for vi in inputs or ()}
    skeleton.graph.input.extend(shaped.get(vi.name, vi) for vi in graph.input)
    declared = {vi.name for vi in graph.input}
    for t in graph.initializer:
        if math.prod(t.dims) <= SHAPE_DATA_MAX_ELEMENTS:
            skeleton.graph.initializer.append(t)
        elif t.name not in declared:
            skeleton.graph.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    return skeleton


def _copy_field(message, field, value) -> None:
    repeated = getattr(field, "is_repeated", None)  # protobuf 5's upb; older ones have label only
    if repeated is None:
        repeated = field.label == field.LABEL_REPEATED
    if repeated:
        getattr(message, field.name).extend(value)
    elif field.message_type is not None:
        getattr(message, field.name).CopyFrom(value)
    else:
        setattr(message, field.name, value)


def _value_types(graph: onnx.GraphProto) -> dict[str, onnx.TypeProto]:
    types = {}
    for vi in [*graph.input, *graph.value_info, *graph.output]:
        if vi.type.HasField("tensor_type"):
            types[vi.name] = vi.type
    return types


def onnx_tensor_type(tp: onnx.TypeProto, what: str) -> TensorType:
    tt = tp.tensor_type
    dims = []
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            sym = d.dim_param or "?"
            raise OnnxImportError(f"{what} has a dynamic dimension '{sym}'; geir compiles static shapes: give it "
                                  f"one with input_shape, or several with a gear option (docs/dynamic-shapes.md)")
        dims.append(d.dim_value)
    negative = [d for d in dims if d < 0]
    if negative:
        raise OnnxImportError(f"{what} has a negative dimension {negative[0]} in its shape {dims}; a dimension "
                              f"is a size, 0 or more")
    return tensor(dims, _element_type(tt.elem_type, what))


def _check_array_type(array: np.ndarray, what: str) -> None:
    """An OnnxImportError naming `what` if geir has no element type for the array's dtype."""
    try:
        to_element_type(array.dtype)
    except UnsupportedTypeError:
        try:
            name = onnx.TensorProto.DataType.Name(onnx.helper.np_dtype_to_tensor_dtype(array.dtype))
        except (KeyError, TypeError, ValueError):
            name = str(array.dtype)
        raise OnnxImportError(f"{what} has unsupported element type {name}") from None


def _element_type(elem_type: int, what: str):
    try:
        return to_element_type(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (UnsupportedTypeError, KeyError, TypeError):
        name = onnx.TensorProto.DataType.Name(elem_type)
        raise OnnxImportError(f"{what} has unsupported element type {name}") from None


# ---------------------------------------------------------------------------
# The importer
# ---------------------------------------------------------------------------


class _Importer(GraphBuilder):
    """The ONNX importer: a GraphBuilder whose converters build through its core (`build`),
    plus what ONNX needs - the opset, onnx's inferred types to check results against (or to
    take where geir cannot infer), the node being converted for errors and locations."""

    error_type = OnnxImportError

    def __init__(self, opset: int, onnx_types: dict[str, onnx.TypeProto], check_shapes: bool,
                 base_dir: str | None = None, weights: bool = True):
        super().__init__("main")
        self.opset = opset
        self.onnx_types = onnx_types
        self.check_shapes = check_shapes
        self.base_dir = base_dir  # where a model file's external data lies
        self.weights = weights  # False: weights are shape-only placeholders
        self.values: dict[str, SSAValue] = {}
        self.node: onnx.NodeProto | None = None
        self.used: set[str] = set()  # names some node or the graph reads

    def run(self, graph: onnx.GraphProto, inputs: Sequence[onnx.ValueInfoProto] | None = None) -> ModuleOp:
        """`inputs`: the graph's inputs (initializers aside) with their shapes set, if any were."""
        inits = {t.name: t for t in graph.initializer}
        self.used = {n for node in graph.node for n in node.input} | {o.name for o in graph.output}
        if inputs is None:
            inputs = [i for i in graph.input if i.name not in inits]
        arg_types = [onnx_tensor_type(i.type, f"graph input '{i.name}'") for i in inputs]
        self.block = Block(arg_types=arg_types)
        for i, arg in zip(inputs, self.block.args):
            arg.name_hint = value_hint(i.name)
            self.values[i.name] = arg
        for name, t in inits.items():
            if not self.weights and (is_weight(t) or not _readable(t, self.base_dir)):
                dt = to_dtype(_element_type(t.data_type, f"initializer '{name}'"))
                self.values[name] = self.placeholder(name, tuple(t.dims), dt)
                continue
            array = _tensor_array(t, self.base_dir)
            _check_array_type(array, f"initializer '{name}'")
            self.values[name] = self.constant(array, name=name, loc=name)
        for node in graph.node:
            self.node = node
            self.convert(node)
        outs = []
        for o in graph.output:
            if o.name not in self.values:
                raise OnnxImportError(f"graph output '{o.name}' is not produced by any node")
            outs.append(self.values[o.name])
        return self.module([i.name for i in inputs], [o.name for o in graph.output], outs)

    # -- helpers used by converters ----------------------------------------

    @property
    def here(self) -> str:
        return _where(self.node, self.opset)

    def default_location(self) -> str:
        return _node_name(self.node)

    def result_names(self, n: int) -> list[str]:
        return list(self.node.output[:n]) if self.node is not None else []

    def require_const(self, value: SSAValue | None, what: str) -> np.ndarray:
        c = self.const_value(value)
        if c is None:
            raise self.error(f"{what} must be a constant{self._freeze_hint(value)}")
        if is_shape_only(c):  # an initializer imported without its values (weights=False)
            raise self.error(f"{what} must be a constant: it is computed from {', '.join(map(repr, c.sources))}, "
                             f"imported without its values (weights=False) because its bytes are not in the "
                             f"model; keep them there (onnx.save's size_threshold) or import with weights")
        return c

    def _freeze_hint(self, value: SSAValue | None) -> str:
        """How to make a graph input a constant, when `value` is one."""
        if not isinstance(value, BlockArgument):
            return ""
        name = next((n for n, v in self.values.items() if v is value), None)
        if name is None:
            return ""
        return (f"; it is graph input '{name}': freeze it to a value "
                f"(geir.compile(..., freeze={{'{name}': ...}}), geir-compile --freeze {name}=...)")

    def unknown_shape_hint(self, inputs: Sequence[SSAValue]) -> str:
        """A small graph input the unknown operands are computed from (a window's size, a
        range's bounds feed shapes through arithmetic), and how to freeze it."""
        stack = [v for v in inputs if self.const_value(v) is None]
        seen: set[SSAValue] = set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if isinstance(v, BlockArgument):
                hint = self._freeze_hint(v)
                if hint and math.prod(v.type.get_shape()) <= SHAPE_INPUT_LIMIT:
                    return f": it comes from a graph input, which must be a constant{hint}"
                continue
            stack.extend(o for o in v.owner.operands if self.const_value(o) is None)
        return ""

    def build(self, cls: type[g.GraphOp], inputs: list[SSAValue], n_results: int = 1, **attrs: Any) -> list[SSAValue]:
        """The node's op, through the builder's core: result types from the dialect (onnx's
        where geir cannot infer one), checked against onnx's."""
        names = self.result_names(n_results)
        onnx_types = [self._onnx_type(n) for n in names]
        results = super().build(cls, inputs, n_results, declared=onnx_types, **attrs)
        if self.check_shapes:
            for name, r, theirs in zip(names, results, onnx_types):
                if theirs is not None and theirs != r.type:
                    raise self.error(f"output '{name}': geir infers {r.type}, onnx infers {theirs}")
        return results

    def op(self, cls: type[g.GraphOp], inputs: list[SSAValue], **attrs: Any) -> SSAValue:
        """An intermediate op of a node that expands to several (its result is not one of the
        node's outputs, so there is no onnx type to check it against)."""
        return GraphBuilder.build(self, cls, inputs, **attrs)[0]

    def conv_attrs(self, attrs: dict[str, Any], x: SSAValue, w: SSAValue) -> dict[str, Any]:
        """A Conv-like node's group, strides, dilations and explicit pads (auto_pad resolved)."""
        kernel = tuple(w.type.get_shape()[2:])
        if "kernel_shape" in attrs and tuple(attrs["kernel_shape"]) != kernel:
            raise self.error(f"kernel_shape {attrs['kernel_shape']} differs from the weight's {list(kernel)}")
        return {"group": attrs.get("group", 1), **_spatial_attrs(self, attrs, x, kernel)}

    def pool_attrs(self, cls: type[g.GraphOp], attrs: dict[str, Any], x: SSAValue) -> dict[str, Any]:
        """A MaxPool / AveragePool-like node's attributes (auto_pad resolved)."""
        kernel = tuple(attrs["kernel_shape"])
        extra = {"ceil_mode": attrs.get("ceil_mode", 0)}
        if cls is g.AvgPoolOp:
            extra["count_include_pad"] = attrs.get("count_include_pad", 0)
        return {"kernel_shape": kernel, **_spatial_attrs(self, attrs, x, kernel), **extra}

    def _onnx_type(self, name: str) -> TensorType | None:
        tp = self.onnx_types.get(name)
        if tp is None or not tp.tensor_type.HasField("shape"):
            return None  # onnx could not infer this one
        try:
            return onnx_tensor_type(tp, f"value '{name}'")
        except OnnxImportError:
            return None

    def convert(self, node: onnx.NodeProto) -> None:
        inputs = [self.values.get(n) if n else None for n in node.input]
        for n, v in zip(node.input, inputs):
            if n and v is None:
                raise self.error(f"input '{n}' is not defined")
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.domain in ("", "ai.onnx"):
            check_opset_changes(node.op_type, self.opset, attrs, self.error)
        converter = converter_of(node, self.opset)
        if converter is None:  # a subgraph's node (the graph's own are checked up front)
            domain = f", domain {node.domain}" if node.domain else ""
            raise OnnxImportError(f"unsupported ONNX operator: node '{node.name or node.output[0]}' "
                                  f"({node.op_type}, opset {self.opset}{domain})")
        missing = missing_required_input(node, self.opset)
        if missing:
            raise self.error(f"the required input {missing} is missing")
        results = converter(self, inputs, attrs)
        for name, value in zip(node.output, results):
            if name:
                if value.name_hint is None:
                    value.name_hint = value_hint(name)
                self.values[name] = value
        used_extra = [n for n in node.output[len(results) :] if n in self.used]
        if used_extra:
            raise self.error(f"optional output(s) {used_extra} are not supported")


def _readable(t: onnx.TensorProto, base_dir: str | None) -> bool:
    """Whether the initializer's bytes are at hand: inline, or in an external file present."""
    if t.data_location != onnx.TensorProto.EXTERNAL:
        return True
    location = next((e.value for e in t.external_data if e.key == "location"), None)
    return location is not None and (Path(base_dir or "") / location).is_file()


def _tensor_array(t: onnx.TensorProto, base_dir: str | None = None) -> np.ndarray:
    """The initializer's values; external data is read from beside the model file."""
    try:
        return numpy_helper.to_array(t, base_dir or "")
    except Exception as e:
        hint = (" (without its weights, a model compiles shape-only and is timed: weights=False, geir-compile "
                "--no-weights)" if t.data_location == onnx.TensorProto.EXTERNAL else "")
        raise OnnxImportError(f"initializer '{t.name}' cannot be read: {e}{hint}") from None


def _node_name(node: onnx.NodeProto | None) -> str:
    if node is None:
        return "?"
    return node.name or f"{node.op_type}:{node.output[0]}"


# ---------------------------------------------------------------------------
# Converters: one per ONNX op type.
# ---------------------------------------------------------------------------

Converter = Callable[[_Importer, list, dict], list[SSAValue]]
CONVERTERS: dict[str, Converter] = {}


def converts(*op_types: str):
    def register(fn: Converter) -> Converter:
        for t in op_types:
            CONVERTERS[t] = fn
        return fn

    return register


def _simple(op_type: str, cls: type[g.GraphOp], attr_map: dict[str, str] | None = None, max_inputs: int | None = None):
    """An ONNX op that maps 1:1, attributes renamed by attr_map (ONNX -> graph)."""
    attr_map = attr_map or {}

    def convert(im: _Importer, ins, attrs):
        kwargs = {}
        for key, value in attrs.items():
            if key not in attr_map:
                raise im.error(f"attribute '{key}' is not supported")
            if attr_map[key]:
                kwargs[attr_map[key]] = _decode(value)
        inputs = ins[:max_inputs] if max_inputs is not None else ins
        _no_gaps(im, inputs)
        return im.build(cls, inputs, **kwargs)

    CONVERTERS[op_type] = convert


def _decode(v):
    return v.decode() if isinstance(v, bytes) else v


def _no_gaps(im: _Importer, inputs: list) -> None:
    while inputs and inputs[-1] is None:
        inputs.pop()
    if any(v is None for v in inputs):
        raise im.error("an optional input is missing in the middle; not supported for this op")


for _t, _c in [
    ("Relu", g.ReluOp), ("Sigmoid", g.SigmoidOp), ("Tanh", g.TanhOp), ("Erf", g.ErfOp), ("Exp", g.ExpOp),
    ("Log", g.LogOp), ("Sqrt", g.SqrtOp), ("Reciprocal", g.ReciprocalOp), ("Neg", g.NegOp), ("Abs", g.AbsOp),
    ("Sign", g.SignOp), ("Floor", g.FloorOp), ("Ceil", g.CeilOp), ("Round", g.RoundOp), ("Sin", g.SinOp),
    ("Cos", g.CosOp), ("Softplus", g.SoftplusOp), ("Softsign", g.SoftsignOp), ("Identity", g.IdentityOp),
    ("HardSwish", g.HardSwishOp), ("Mish", g.MishOp), ("Not", g.LogicalNotOp),
    ("Where", g.WhereOp), ("MatMul", g.MatMulOp),
    ("Sum", g.SumOp), ("Mean", g.MeanOp), ("Max", g.MaxOp), ("Min", g.MinOp), ("Size", g.SizeOp),
    ("GlobalAveragePool", g.GlobalAvgPoolOp), ("GlobalMaxPool", g.GlobalMaxPoolOp),
    ("Expand", g.ExpandOp), ("Tile", g.TileOp),
]:
    _simple(_t, _c)

def _binary(cls):
    def convert(im: _Importer, ins, attrs):
        lhs, rhs = ins
        if attrs.get("broadcast", 0):
            # Opset < 7: rhs is aligned with lhs starting at `axis` (default: trailing).
            lr, rr = len(lhs.type.get_shape()), len(rhs.type.get_shape())
            axis = attrs.get("axis", lr - rr) % max(lr, 1)
            trailing = lr - axis - rr
            if trailing > 0:
                rhs = _reshape(im, rhs, (*rhs.type.get_shape(), *([1] * trailing)))
        unknown = set(attrs) - {"broadcast", "axis"}
        if unknown:
            raise im.error(f"attribute(s) {sorted(unknown)} are not supported")
        return im.build(cls, [lhs, rhs])

    return convert


for _t, _c in [
    ("Add", g.AddOp), ("Sub", g.SubOp), ("Mul", g.MulOp), ("Div", g.DivOp), ("Pow", g.PowOp),
    ("Equal", g.EqualOp), ("Less", g.LessOp), ("Greater", g.GreaterOp), ("LessOrEqual", g.LessOrEqualOp),
    ("GreaterOrEqual", g.GreaterOrEqualOp), ("And", g.LogicalAndOp), ("Or", g.LogicalOrOp),
    ("Xor", g.LogicalXorOp),
]:
    CONVERTERS[_t] = _binary(_c)

_simple("LeakyRelu", g.LeakyReluOp, {"alpha": "alpha"})
_simple("Elu", g.EluOp, {"alpha": "alpha"})
_simple("Celu", g.CeluOp, {"alpha": "alpha"})
_simple("ThresholdedRelu", g.ThresholdedReluOp, {"alpha": "alpha"})
_simple("Selu", g.SeluOp, {"alpha": "alpha", "gamma": "gamma"})
_simple("HardSigmoid", g.HardSigmoidOp, {"alpha": "alpha", "beta": "beta"})
_simple("Gelu", g.GeluOp, {"approximate": "approximate"})
_simple("Shrink", g.ShrinkOp, {"bias": "bias", "lambd": "lambd"})
_simple("Mod", g.ModOp, {"fmod": "fmod"})
_simple("LRN", g.LrnOp, {"size": "size", "alpha": "alpha", "beta": "beta", "bias": "bias"})
_simple("InstanceNormalization", g.InstanceNormOp, {"epsilon": "epsilon"})
_simple("Gather", g.GatherOp, {"axis": "axis"})
_simple("GatherElements", g.GatherElementsOp, {"axis": "axis"})
_simple("Transpose", g.TransposeOp, {"perm": "perm"})
_simple("Concat", g.ConcatOp, {"axis": "axis"})
_simple("Flatten", g.FlattenOp, {"axis": "axis"})
_simple("DepthToSpace", g.DepthToSpaceOp, {"blocksize": "blocksize", "mode": "mode"})
_simple("Shape", g.ShapeOp, {"start": "start", "end": "end"})
_simple("ArgMax", g.ArgMaxOp, {"axis": "axis", "keepdims": "keepdims", "select_last_index": "select_last_index"})
_simple("ArgMin", g.ArgMinOp, {"axis": "axis", "keepdims": "keepdims", "select_last_index": "select_last_index"})
_simple("Gemm", g.GemmOp, {"alpha": "alpha", "beta": "beta", "transA": "trans_a", "transB": "trans_b", "broadcast": None})


@converts("PRelu")
def _prelu(im: _Importer, ins, attrs):
    x, slope = ins
    xs, ss = x.type.get_shape(), slope.type.get_shape()
    if im.opset < 7 and len(ss) == 1 and len(xs) > 2 and ss[0] == xs[1] != xs[-1]:
        # Opset 6 broadcasts a 1-D slope along the channel axis.
        slope = _reshape(im, slope, (ss[0], *([1] * (len(xs) - 2))))
    return im.build(g.PReluOp, [x, slope])


@converts("SpaceToDepth")
def _space_to_depth(im: _Importer, ins, attrs):
    unknown = set(attrs) - {"blocksize", "mode"}
    if unknown:
        raise im.error(f"attribute(s) {sorted(unknown)} are not supported")
    x, b = ins[0], attrs.get("blocksize", 0)
    if _decode(attrs.get("mode", "DCR")) == "DCR":
        return im.build(g.SpaceToDepthOp, [x], blocksize=b)
    # CRD (opset 28) orders a channel's b*b block entries together: y[n, c*b*b + i*b + j, h, w]
    # = x[n, c, h*b + i, w*b + j], the inverse of DepthToSpace's CRD; graph.space_to_depth
    # has DCR only, so the node becomes reshape, transpose, reshape.
    shape = x.type.get_shape()
    if len(shape) != 4 or b < 1 or shape[2] % b or shape[3] % b:
        raise im.error(f"input shape {list(shape)} is not rank 4 with spatial dims divisible by blocksize {b}")
    n, c, h, w = shape
    blocks = _reshape(im, x, (n, c, h // b, b, w // b, b))
    moved = im.op(g.TransposeOp, [blocks], perm=(0, 1, 3, 5, 2, 4))
    return im.build(g.ReshapeOp, [moved, im.constant(np.array((n, c * b * b, h // b, w // b), np.int64))])


@converts("Range")
def _range(im: _Importer, ins, attrs):
    elt = ins[0].type.element_type
    if im.opset < 27 or not (is_float_dtype(to_dtype(elt)) and np.dtype(to_dtype(elt)).itemsize == 2):
        return im.build(g.RangeOp, ins)
    # float16 / bfloat16 from opset 27: start, limit and delta in float32, the result cast
    # back (stash_type 1, the only value check_opset_changes lets through): each value is
    # start + i * delta rounded once, where float16 would round i * delta and then the sum.
    f32 = to_element_type(np.dtype(np.float32))
    known = [im.const_value(v) for v in ins]
    if all(k is not None for k in known):
        wide = im.op(g.RangeOp, [im.constant(np.asarray(k, np.float32)) for k in known])
    else:  # runtime bounds: the length is onnx's inferred one, as im.build takes it for Range
        declared = im._onnx_type(im.node.output[0])
        if declared is None:
            raise im.error("the result shape depends on values geir cannot fold; no static shape")
        op = g.RangeOp.create(operands=[im.op(g.CastOp, [v], to=f32) for v in ins],
                              result_types=[tensor(declared.get_shape(), f32)])
        im.append(op)
        wide = op.results[0]
    return im.build(g.CastOp, [wide], to=elt)


@converts("Constant")
def _constant(im: _Importer, ins, attrs):
    if len(attrs) != 1:
        raise im.error("expects exactly one value attribute")
    (key, v), = attrs.items()
    if key == "value":
        array = numpy_helper.to_array(v)
    elif key == "value_float":
        array = np.array(v, np.float32)
    elif key == "value_floats":
        array = np.array(v, np.float32)
    elif key == "value_int":
        array = np.array(v, np.int64)
    elif key == "value_ints":
        array = np.array(v, np.int64)
    else:
        raise im.error(f"constant attribute '{key}' is not supported")
    _check_array_type(array, im.here)
    return [im.constant(array)]


@converts("ConstantOfShape")
def _constant_of_shape(im: _Importer, ins, attrs):
    value = numpy_helper.to_array(attrs["value"]).reshape(1) if "value" in attrs else np.zeros(1, np.float32)
    _check_array_type(value, f"{im.here}: value")
    return im.build(g.ConstantOfShapeOp, ins, value=value)


@converts("Cast")
def _cast(im: _Importer, ins, attrs):
    to = _element_type(attrs["to"], im.here)
    return im.build(g.CastOp, ins, to=to, **cast_options(to, attrs))


@converts("CastLike")
def _cast_like(im: _Importer, ins, attrs):
    """Cast to the element type of the second input (whose values are not read)."""
    x, like = ins
    to = like.type.element_type
    return im.build(g.CastOp, [x], to=to, **cast_options(to, attrs))


@converts("Dropout")
def _dropout(im: _Importer, ins, attrs):
    # Inference: the identity. Opset 12's training_mode input decides that, so it must be
    # known: a runtime one could ask for random dropout, which the identity would silently
    # not do. In training mode with ratio 0 nothing is dropped (scale 1): the identity too.
    # The mask is then all true (1s of x's type before opset 10), built only when it is read.
    training = ins[2] if len(ins) > 2 else None
    if training is not None and bool(im.require_const(training, "training_mode")):
        ratio = ins[1] if len(ins) > 1 else None
        if ratio is None or float(im.require_const(ratio, "ratio")) != 0:
            raise im.error("training mode (random dropout) is not supported")
    y = im.build(g.DropoutOp, [ins[0]])
    if outputs_used(im):
        return [*y, i1_like(im, ins[0], None if im.opset >= 10 else ins[0].type.element_type)]
    return y


@converts("Clip")
def _clip(im: _Importer, ins, attrs):
    x = ins[0]
    lo, hi = (ins + [None, None])[1:3]
    if im.opset < 11:
        dt = to_dtype(x.type.element_type)
        lo = im.constant(np.array(attrs.get("min", -np.inf), dt)) if "min" in attrs else None
        hi = im.constant(np.array(attrs.get("max", np.inf), dt)) if "max" in attrs else None
    if lo is None and hi is not None:
        lo = im.constant(_extreme(x, low=True))
    return im.build(g.ClipOp, [v for v in (x, lo, hi) if v is not None])


def _extreme(x: SSAValue, low: bool) -> np.ndarray:
    dt = to_dtype(x.type.element_type)
    if is_float_dtype(dt):
        return np.array(-np.inf if low else np.inf, dt)
    info = np.iinfo(dt)
    return np.array(info.min if low else info.max, dt)


def _spatial_attrs(im: _Importer, attrs, x: SSAValue, kernel: tuple[int, ...], transposed=False) -> dict:
    """strides/dilations/pads with auto_pad resolved to explicit pads."""
    n = len(kernel)
    strides = tuple(attrs.get("strides", [1] * n))
    dilations = tuple(attrs.get("dilations", [1] * n))
    pads = tuple(attrs.get("pads", [0] * (2 * n)))
    auto = _decode(attrs.get("auto_pad", "NOTSET"))
    if auto in ("SAME_UPPER", "SAME_LOWER") and not transposed:
        spatial = x.type.get_shape()[2:]
        begin, end = [], []
        for size, k, s, d in zip(spatial, kernel, strides, dilations):
            out = -(-size // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            small, big = total // 2, total - total // 2
            begin.append(small if auto == "SAME_UPPER" else big)
            end.append(big if auto == "SAME_UPPER" else small)
        pads = (*begin, *end)
    elif auto == "VALID":
        pads = (0,) * (2 * n)
    elif auto not in ("NOTSET", "SAME_UPPER", "SAME_LOWER"):
        raise im.error(f"auto_pad '{auto}' is not supported")
    return {"strides": strides, "dilations": dilations, "pads": pads}


@converts("Conv")
def _conv(im: _Importer, ins, attrs):
    _no_gaps(im, ins)
    return im.build(g.ConvOp, ins, **im.conv_attrs(attrs, ins[0], ins[1]))


@converts("ConvTranspose")
def _conv_transpose(im: _Importer, ins, attrs):
    _no_gaps(im, ins)
    x, w = ins[0], ins[1]
    kernel = tuple(w.type.get_shape()[2:])
    n = len(kernel)
    sp = _spatial_attrs(im, attrs, x, kernel, transposed=True)
    out_pad = tuple(attrs.get("output_padding", [0] * n))
    auto = _decode(attrs.get("auto_pad", "NOTSET"))
    if "output_shape" in attrs or auto in ("SAME_UPPER", "SAME_LOWER"):
        in_sp = x.type.get_shape()[2:]
        target = list(attrs["output_shape"])[-n:] if "output_shape" in attrs else [s * st for s, st in zip(in_sp, sp["strides"])]
        begin, end, extra = [], [], list(out_pad)
        for i in range(n):
            total = sp["strides"][i] * (in_sp[i] - 1) + out_pad[i] + (kernel[i] - 1) * sp["dilations"][i] + 1 - target[i]
            if total < 0:
                # An output_shape past the last input's reach: without auto_pad, onnx's
                # reference and onnxruntime both add the rows at the end (zeros plus the
                # bias), output padding, which the spec keeps below the stride. With SAME_*
                # they disagree (the reference pads before the start, onnxruntime after).
                if auto != "NOTSET" or extra[i] - total >= sp["strides"][i]:
                    raise im.error(f"output_shape {target} is larger than the convolution can produce "
                                   f"(dim {i} needs {-total} more" + (f" with auto_pad {auto})" if auto != "NOTSET"
                                   else f", output padding {extra[i] - total} not below its stride {sp['strides'][i]})"))
                extra[i] -= total
                begin.append(0)
                end.append(0)
                continue
            small, big = total // 2, total - total // 2
            # ONNX: SAME_UPPER puts the odd element at the end, otherwise at the start.
            upper = auto == "SAME_UPPER"
            begin.append(small if upper else big)
            end.append(big if upper else small)
        sp["pads"] = (*begin, *end)
        out_pad = tuple(extra)
    return im.build(g.ConvTransposeOp, ins, group=attrs.get("group", 1), output_padding=out_pad, **sp)


def _pool(cls):
    def convert(im: _Importer, ins, attrs):
        pool = im.pool_attrs(cls, attrs, ins[0])
        y = im.build(cls, [ins[0]], **pool)
        if cls is g.MaxPoolOp and outputs_used(im):  # Indices (onnx_training.py)
            return [*y, max_pool_indices(im, ins[0], y[0], pool["kernel_shape"], pool["strides"],
                                         pool["dilations"], pool["pads"], attrs.get("storage_order", 0))]
        return y

    return convert


CONVERTERS["MaxPool"] = _pool(g.MaxPoolOp)
CONVERTERS["AveragePool"] = _pool(g.AvgPoolOp)


@converts("BatchNormalization")
def _batch_norm(im: _Importer, ins, attrs):
    if not attrs.get("spatial", 1):
        raise im.error("spatial=0 (per-activation statistics) is not supported")
    if attrs.get("training_mode", 0):  # opset 14: batch statistics, running ones updated
        return batch_norm_training(im, ins[:5], attrs.get("epsilon", 1e-5), attrs.get("momentum", 0.9))
    if not attrs.get("is_test", 1):
        raise im.error("training mode (is_test=0) is not supported")
    return im.build(g.BatchNormOp, ins[:5], epsilon=attrs.get("epsilon", 1e-5))


@converts("LayerNormalization")
def _layer_norm(im: _Importer, ins, attrs):
    if attrs.get("stash_type", 1) != 1:
        raise im.error("stash_type other than float32 is not supported")
    if outputs_used(im):  # Mean / InvStdDev: the function body (onnx_training.py)
        bias = ins[2] if len(ins) > 2 else None
        return layer_norm_with_stats(im, ins[0], ins[1], bias, attrs.get("axis", -1), attrs.get("epsilon", 1e-5),
                                     to_element_type(np.float32))
    inputs = [v for v in ins if v is not None]
    return im.build(g.LayerNormOp, inputs, axis=attrs.get("axis", -1), epsilon=attrs.get("epsilon", 1e-5))


@converts("RMSNormalization")
def _rms_norm(im: _Importer, ins, attrs):
    if im.opset < 23:
        raise im.error("RMSNormalization exists from opset 23 on")
    if attrs.get("stash_type", 1) != 1:
        raise im.error("stash_type other than float32 is not supported")
    if len(ins) < 2 or ins[1] is None:
        raise im.error("the scale input is required")
    return im.build(g.RmsNormOp, ins[:2], axis=attrs.get("axis", -1), epsilon=attrs.get("epsilon", 1e-5))


@converts("RotaryEmbedding")
def _rotary_embedding(im: _Importer, ins, attrs):
    """RotaryEmbedding (opset 23) onto graph.rotary_embedding. The caches hold each angle
    once ([positions or B x S, r/2]); the op takes one angle per element, so they are
    gathered at position_ids, widened to r (halves: concat(c, c); interleaved: each angle
    twice in a row) and given a heads axis. A rotary_embedding_dim r below the head size
    rotates x[..., :r] and keeps the rest; a 3-D x [B, S, heads * D] is seen as
    [B, S, heads, D] and reshaped back."""
    if im.opset < 23:
        raise im.error("RotaryEmbedding exists from opset 23 on")
    x, cos, sin = ins[:3]
    if x is None or cos is None or sin is None:
        raise im.error("the input and both caches are required")
    positions = ins[3] if len(ins) > 3 else None
    shape = tuple(x.type.get_shape())
    interleaved = attrs.get("interleaved", 0)
    heads = attrs.get("num_heads", 0)
    if len(shape) == 3:
        if not heads or shape[2] % heads:
            raise im.error(f"a 3-D input needs num_heads dividing its hidden size {shape[2]}, got {heads}")
        x = _reshape(im, x, (shape[0], shape[1], heads, shape[2] // heads))
        heads_axis = 2   # x is [B, S, heads, D]
    elif len(shape) == 4:
        heads_axis = 1   # x is [B, heads, S, D]
    else:
        raise im.error(f"the input must be 3-D or 4-D, got shape {list(shape)}")
    d = x.type.get_shape()[-1]
    r = attrs.get("rotary_embedding_dim", 0) or d
    if r % 2 or r > d:
        raise im.error(f"rotary_embedding_dim {r} must be even and at most the head size {d}")

    def angles(cache: SSAValue) -> SSAValue:
        if positions is not None:
            cache = im.op(g.GatherOp, [cache, positions], axis=0)
        if cache.type.get_shape()[-1] != r // 2:
            raise im.error(f"a cache's last dim is {cache.type.get_shape()[-1]}, not rotary_embedding_dim / 2 = {r // 2}")
        if interleaved:
            pair = im.op(g.UnsqueezeOp, [cache], axes=(-1,))
            cache = _reshape(im, im.op(g.ConcatOp, [pair, pair], axis=-1), (*cache.type.get_shape()[:-1], r))
        else:
            cache = im.op(g.ConcatOp, [cache, cache], axis=-1)
        return im.op(g.UnsqueezeOp, [cache], axes=(heads_axis,))

    rotated = x
    if r < d:
        rotated = _last_axis_slice(im, x, 0, r)
    y = im.op(g.RotaryEmbeddingOp, [rotated, angles(cos), angles(sin)], interleaved=interleaved)
    if r < d:
        y = im.op(g.ConcatOp, [y, _last_axis_slice(im, x, r, d)], axis=-1)
    if len(shape) == 3:
        y = _reshape(im, y, shape)
    return [y]


@converts("Attention")
def _attention(im: _Importer, ins, attrs):
    """Attention (opset 23) as the graph ops of its function body: q * sqrt(scale) and
    k * sqrt(scale), the past concatenated, K / V heads repeated for grouped-query attention,
    q k^T, the softcap, the masks (a boolean one as 0 / -inf, one shorter than the keys padded
    with -inf, the causal one aligned to the past), softmax (in `softmax_precision`), a fully
    masked row's probabilities 0, then @ v; 3-D inputs split into heads and merged back.
    graph-recognize-attention makes the common forms one graph.attention at O2 / O3."""
    if im.opset < 23:
        raise im.error("Attention exists from opset 23 on")
    q, k, v, mask, past_k, past_v, nonpad = (list(ins) + [None] * 7)[:7]
    left, right = attrs.get("left_window_size", -1), attrs.get("right_window_size", -1)
    if left < -1 or right < -1:
        raise im.error(f"a window size must be -1 or >= 0, got left {left}, right {right}")
    if (past_k is None) != (past_v is None):
        raise im.error("past_key and past_value must be given together")
    if nonpad is not None and im.opset < 24:
        raise im.error("the nonpad_kv_seqlen input exists from opset 24 on")
    if nonpad is not None and past_k is not None:
        raise im.error("nonpad_kv_seqlen cannot be combined with past_key / past_value")
    rank = len(q.type.get_shape())
    if rank not in (3, 4) or any(len(x.type.get_shape()) != rank for x in (k, v)):
        raise im.error(f"q, k and v must all be 3-D or all 4-D, got {q.type}, {k.type}, {v.type}")
    dt = to_dtype(q.type.element_type)
    if rank == 3:
        hq, hkv = attrs.get("q_num_heads", 0), attrs.get("kv_num_heads", 0)
        if not hq or not hkv:
            raise im.error("3-D inputs need q_num_heads and kv_num_heads")

        def heads(x: SSAValue, n: int) -> SSAValue:
            b_, s_, hidden = x.type.get_shape()
            if hidden % n:
                raise im.error(f"{n} heads do not divide the hidden size {hidden}")
            r = _reshape(im, x, (b_, s_, n, hidden // n))
            return im.op(g.TransposeOp, [r], perm=(0, 2, 1, 3))

        q, k, v = heads(q, hq), heads(k, hkv), heads(v, hkv)
    b, hq, s, d = q.type.get_shape()
    hkv = k.type.get_shape()[1]
    if hq % hkv or v.type.get_shape()[1] != hkv:
        raise im.error(f"the kv heads ({hkv}) must divide the query heads ({hq}) and match v's")
    scale = attrs.get("scale") or 1.0 / math.sqrt(d)
    root = im.constant(np.array(np.sqrt(scale), dt))
    present_k = k if past_k is None else im.op(g.ConcatOp, [past_k, k], axis=2)
    present_v = v if past_v is None else im.op(g.ConcatOp, [past_v, v], axis=2)
    keys = present_k.type.get_shape()[2]
    past = 0 if past_k is None else past_k.type.get_shape()[2]
    neg_inf, zero = im.constant(np.array(-np.inf, dt)), im.constant(np.array(0, dt))

    bias = None
    if mask is not None:
        short = keys - mask.type.get_shape()[-1]
        boolean = mask.type.element_type == i1
        if short > 0:
            pad = np.full((*mask.type.get_shape()[:-1], short), False if boolean else -np.inf,
                          np.bool_ if boolean else dt)
            mask = im.op(g.ConcatOp, [mask, im.constant(pad)], axis=-1)
        bias = im.op(g.WhereOp, [mask, zero, neg_inf]) if boolean else mask
    causal = attrs.get("is_causal", 0)
    # The causal frontier and the window are aligned to each query's absolute position: the
    # past's length, or with a static cache (nonpad_kv_seqlen) its valid length - s per batch.
    if nonpad is None:
        pos = np.arange(s)[:, None] + past - np.arange(keys)[None, :]  # query pos - key index
        allowed = _window_allowed(pos, causal, left, right)
        if allowed is not None:
            term = im.constant(np.where(allowed, 0, -np.inf).astype(dt))
            bias = term if bias is None else im.op(g.AddOp, [bias, term])
    else:
        bias = _valid_length_bias(im, bias, nonpad, (b, s, keys), causal, left, right, dt)

    def repeat(x: SSAValue) -> SSAValue:  # [h0, h0, h1, h1, ...] as the reference repeats them
        n = hq // hkv
        if n == 1:
            return x
        _, _, t, e = x.type.get_shape()
        u = im.op(g.UnsqueezeOp, [x], axes=(2,))
        u = im.op(g.ExpandOp, [u, im.constant(np.array([b, hkv, n, t, e], np.int64))])
        return _reshape(im, u, (b, hq, t, e))

    kt = im.op(g.TransposeOp, [im.op(g.MulOp, [repeat(present_k), root])], perm=(0, 1, 3, 2))
    qk = im.op(g.MatMulOp, [im.op(g.MulOp, [q, root]), kt])
    softcap = attrs.get("softcap", 0.0)
    if softcap > 0:
        cap = im.constant(np.array(softcap, dt))
        qk = im.op(g.MulOp, [im.op(g.TanhOp, [im.op(g.DivOp, [qk, cap])]), cap])
    mode = attrs.get("qk_matmul_output_mode", 0)
    qk_out = qk
    x = qk if bias is None else im.op(g.AddOp, [qk, bias])
    if mode == 2:
        qk_out = x
    precision = attrs.get("softmax_precision")
    if precision is not None:
        x = im.op(g.CastOp, [x], to=_element_type(precision, "softmax_precision"))
    probs = im.op(g.SoftmaxOp, [x], axis=-1)
    if bias is not None:
        known = im.const_value(bias)
        if known is None or np.isneginf(np.max(known, axis=-1)).any():
            # a row with no key to attend: probabilities 0 (softmax alone would be NaN)
            none = im.op(g.EqualOp, [im.op(g.ReduceMaxOp, [bias], axes=(-1,), keepdims=1), neg_inf])
            probs = im.op(g.WhereOp, [none, im.constant(np.array(0, to_dtype(probs.type.element_type))), probs])
    if mode == 3:
        qk_out = probs
    if probs.type.element_type != q.type.element_type:
        probs = im.op(g.CastOp, [probs], to=q.type.element_type)
    if qk_out.type.element_type != q.type.element_type:
        qk_out = im.op(g.CastOp, [qk_out], to=q.type.element_type)
    y = im.op(g.MatMulOp, [probs, repeat(present_v)])
    if rank == 3:
        y = _reshape(im, im.op(g.TransposeOp, [y], perm=(0, 2, 1, 3)), (b, s, hq * y.type.get_shape()[-1]))
    return [y, present_k, present_v, qk_out][:max(1, len(im.node.output))]


def _window_allowed(pos, causal: int, left: int, right: int):
    """Which keys a query may attend, from `pos` = query position - key index (numpy ints or
    booleans of the same shape); None when everything is allowed."""
    allowed = None
    for ok in (pos >= 0 if causal else None, pos <= left if left >= 0 else None,
               -pos <= right if right >= 0 else None):
        if ok is not None:
            allowed = ok if allowed is None else allowed & ok
    return allowed


def _valid_length_bias(im: _Importer, bias, nonpad: SSAValue, dims, causal: int, left: int, right: int, dt):
    """Attention's masks for a static cache with per-batch valid lengths `nonpad` [B]: keys at
    or past the length are padding; query i sits at position length - s + i, which aligns the
    causal frontier and the window (built in the graph: the lengths are a runtime input)."""
    b, s, keys = dims
    if nonpad.type.get_shape() != (b,):
        raise im.error(f"nonpad_kv_seqlen must have shape [{b}], got {list(nonpad.type.get_shape())}")
    if nonpad.type.element_type != to_element_type(np.dtype(np.int64)):
        raise im.error(f"nonpad_kv_seqlen must be int64, got {nonpad.type.element_type}")
    i64 = lambda a: im.constant(np.asarray(a, np.int64))  # noqa: E731
    lengths = _reshape(im, nonpad, (b, 1, 1))
    key = i64(np.arange(keys)[None, None, :])
    allowed = im.op(g.LessOp, [key, lengths])  # [B, 1, keys]: the padding mask
    if causal or left >= 0 or right >= 0:  # query position - key index: [B, s, keys]
        pos = im.op(g.SubOp, [im.op(g.AddOp, [lengths, i64(np.arange(s)[None, :, None] - s)]), key])
        for ok in (im.op(g.GreaterOrEqualOp, [pos, i64(0)]) if causal else None,
                   im.op(g.LessOrEqualOp, [pos, i64(left)]) if left >= 0 else None,
                   im.op(g.LessOrEqualOp, [im.op(g.NegOp, [pos]), i64(right)]) if right >= 0 else None):
            if ok is not None:
                allowed = im.op(g.LogicalAndOp, [allowed, ok])
    term = im.op(g.WhereOp, [allowed, im.constant(np.array(0, dt)), im.constant(np.array(-np.inf, dt))])
    term = _reshape(im, term, (b, 1, *term.type.get_shape()[1:]))
    return term if bias is None else im.op(g.AddOp, [bias, term])


def _last_axis_slice(im: _Importer, x: SSAValue, start: int, end: int) -> SSAValue:
    ints = lambda v: im.constant(np.array([v], np.int64))  # noqa: E731
    return im.op(g.SliceOp, [x, ints(start), ints(end), ints(-1)])


def _softmax(cls):
    def convert(im: _Importer, ins, attrs):
        x = ins[0]
        shape = x.type.get_shape()
        rank = len(shape)
        if im.opset >= 13:
            return im.build(cls, [x], axis=attrs.get("axis", -1))
        # Before opset 13 the input is coerced to 2-D at `axis` (default 1).
        axis = attrs.get("axis", 1) % max(rank, 1)
        if axis == rank - 1:
            return im.build(cls, [x], axis=-1)
        flat = (math.prod(shape[:axis]), math.prod(shape[axis:]))
        two_d = _reshape(im, x, flat)
        y = cls.build_op([two_d], axis=1)
        im.append(y)
        return [_reshape(im, y.results[0], shape)]

    return convert


def _reshape(im: _Importer, x: SSAValue, shape) -> SSAValue:
    target = im.constant(np.array(shape, np.int64))
    op = g.ReshapeOp.build_op([x, target])
    im.append(op)
    return op.output


CONVERTERS["Softmax"] = _softmax(g.SoftmaxOp)
CONVERTERS["LogSoftmax"] = _softmax(g.LogSoftmaxOp)


_REDUCTIONS = {
    "ReduceSum": g.ReduceSumOp, "ReduceMean": g.ReduceMeanOp, "ReduceMax": g.ReduceMaxOp,
    "ReduceMin": g.ReduceMinOp, "ReduceProd": g.ReduceProdOp, "ReduceL1": g.ReduceL1Op,
    "ReduceL2": g.ReduceL2Op, "ReduceSumSquare": g.ReduceSumSquareOp, "ReduceLogSum": g.ReduceLogSumOp,
    "ReduceLogSumExp": g.ReduceLogSumExpOp,
}


def _reduction(cls):
    def convert(im: _Importer, ins, attrs):
        axes = attrs.get("axes")
        if len(ins) > 1 and ins[1] is not None:
            axes = [int(a) for a in im.require_const(ins[1], "axes")]
        noop = attrs.get("noop_with_empty_axes", 0)
        return im.build(cls, [ins[0]], axes=tuple(axes) if axes else None, keepdims=attrs.get("keepdims", 1),
                        noop_with_empty_axes=noop)

    return convert


for _t, _c in _REDUCTIONS.items():
    CONVERTERS[_t] = _reduction(_c)


def _axes(im: _Importer, ins, attrs) -> tuple[int, ...] | None:
    if len(ins) > 1 and ins[1] is not None:
        return tuple(int(a) for a in np.asarray(im.require_const(ins[1], "axes")).reshape(-1))
    return tuple(attrs["axes"]) if "axes" in attrs else None


@converts("Squeeze")
def _squeeze(im: _Importer, ins, attrs):
    return im.build(g.SqueezeOp, [ins[0]], axes=_axes(im, ins, attrs))


@converts("Unsqueeze")
def _unsqueeze(im: _Importer, ins, attrs):
    axes = _axes(im, ins, attrs)
    if axes is None:
        raise im.error("axes are required")
    return im.build(g.UnsqueezeOp, [ins[0]], axes=axes)


@converts("Reshape")
def _reshape_op(im: _Importer, ins, attrs):
    return im.build(g.ReshapeOp, ins[:2], allowzero=attrs.get("allowzero", 0))


@converts("Split")
def _split(im: _Importer, ins, attrs):
    x = ins[0]
    n = len(im.node.output)
    axis = attrs.get("axis", 0)
    dim = x.type.get_shape()[axis]
    if len(ins) > 1 and ins[1] is not None:
        sizes = im.require_const(ins[1], "split")
    elif "split" in attrs:
        sizes = np.array(attrs["split"], np.int64)
    else:
        parts = attrs.get("num_outputs", n)
        chunk = -(-dim // parts)
        sizes = np.array([min(chunk, dim - i * chunk) for i in range(parts)], np.int64)
    split = im.constant(np.asarray(sizes, np.int64))
    return im.build(g.SplitOp, [x, split], n_results=len(sizes), axis=axis)


@converts("Slice")
def _slice(im: _Importer, ins, attrs):
    if im.opset < 10:
        starts, ends = attrs["starts"], attrs["ends"]
        axes = attrs.get("axes", list(range(len(starts))))
        ins = [ins[0], *(im.constant(np.array(v, np.int64)) for v in (starts, ends, axes))]
    else:
        ins = list(ins)
        if len(ins) > 4 and ins[4] is not None and ins[3] is None:
            n = len(im.require_const(ins[1], "starts"))
            ins[3] = im.constant(np.arange(n, dtype=np.int64))
        _no_gaps(im, ins)
    return im.build(g.SliceOp, ins)


@converts("Pad")
def _pad(im: _Importer, ins, attrs):
    mode = _decode(attrs.get("mode", "constant"))
    x = ins[0]
    if im.opset < 11:
        pads = im.constant(np.array(attrs["pads"], np.int64))
        from geir.ir.types import to_dtype

        value = im.constant(np.array(attrs.get("value", 0.0), to_dtype(x.type.element_type)))
        ins = [x, pads, value]
    else:
        ins = list(ins)
        if len(ins) > 3 and ins[3] is not None and ins[2] is None:
            from geir.ir.types import to_dtype

            ins[2] = im.constant(np.array(0, to_dtype(x.type.element_type)))
        _no_gaps(im, ins)
    return im.build(g.PadOp, ins, mode=mode)


CONVERTERS.update(QUANTIZED_CONVERTERS)
CONVERTERS.update(CONTROL_FLOW_CONVERTERS)
CONVERTERS.update(ELEMENTWISE_CONVERTERS)
CONVERTERS.update(SPATIAL_CONVERTERS)
CONVERTERS.update(INDEXING_CONVERTERS)
CONVERTERS.update(LOSSES_CONVERTERS)
CONVERTERS.update(RNN_CONVERTERS)


def converter_of(node: onnx.NodeProto, opset: int) -> Converter | None:
    """The converter of a node: the default domain's, or onnxruntime's quantized contrib ops
    (com.microsoft: what its quantizer writes in the QOperator format); else, for an op onnx
    defines by a function (at `opset`), the expansion of that function."""
    converter = None
    if node.domain in ("", "ai.onnx"):
        converter = CONVERTERS.get(node.op_type)
    elif node.domain == "com.microsoft":
        converter = CONTRIB_CONVERTERS.get(node.op_type)
    if converter is None and has_function(node, opset):
        return expand_function
    return converter

