"""Build a graph-dialect program in Python: GE's `ge::Graph` / `OpDesc` / `AddOp` /
`AddDataEdge`, done as Python does it.

    from geir.frontend.builder import GraphBuilder   # also geir.GraphBuilder
    b = GraphBuilder("main")
    x = b.input("x", (8, 128, 768), "f16")
    w = b.weight("l0.wq", array)                        # numpy array -> graph.constant
    y = b.matmul(x, w, name="l0/q_proj")                # one method per graph op class
    b.output("y", y)
    module = b.finish()                                 # a verified ModuleOp, func.func @main

Every op is created by one method, `GraphBuilder.build`: the dialect infers the result types
from the operand types, the attributes and the operands' known values (a reshape target, slice
bounds), and any error is a `GraphBuildError` naming the node. The ONNX importer
(frontend/onnx.py) is a GraphBuilder: its converters call the same `build`, and it adds only
what ONNX needs (onnx's inferred types to check against, the opset, the freeze hint).

The op methods are made from the graph dialect's op classes, not written one by one: the
method of `graph.rms_norm` is `b.rms_norm(x, scale, epsilon=1e-6, name=...)`, operands
positional (a variadic op such as concat takes any number), attributes as keywords with the
dialect's names and defaults, `name` the node's name (its location; made up when not given).
An operand may also be a number (a 0-d constant of the first tensor operand's element type), a
numpy array (a constant as it is) or a list / tuple of ints (an i64 constant: shapes, axes,
slice bounds).

Weights: `b.weight(name, array)` holds the array's bytes; `b.weight(name, shape=..., dtype=...)`
without data is a **shape-only placeholder**: a `graph.constant` whose value is a splat of 0
(MLIR's splat dense attribute: one element stored for the whole tensor) marked with
`geir.placeholder = "<name>"` (the name keeps CSE from merging two placeholders). It holds no bytes, prints as `dense<0.0>`, and compiles through the graph
passes and the lowering like any weight; running it computes with zeros (documented, not an
error), so it is for compiling and timing a model's shape (docs/builder.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.errors import GeirError, GraphBuildError
from geir.ir.locations import name_loc
from geir.ir.types import BF16, UnsupportedTypeError, tensor, to_dtype, to_element_type
from geir.target.device import MAX_TENSOR_BYTES

KNOWN_LIMIT = 4096
"""Largest result (elements) evaluated while building, so later ops can infer shapes from it."""

DTYPE_NAMES = {
    "f16": "float16", "fp16": "float16", "half": "float16", "f32": "float32", "fp32": "float32",
    "float": "float32", "f64": "float64", "bf16": "bfloat16", "i64": "int64", "i32": "int32",
    "i16": "int16", "i8": "int8", "u8": "uint8", "i1": "bool",
}
"""Short element-type names `parse_dtype` takes besides numpy's (`"float16"`, `np.int64`)."""


def parse_dtype(spec: Any) -> np.dtype:
    """The numpy dtype of an element-type name ("f16", "bf16", "float32", np.int64, an MLIR
    element type); a GraphBuildError for one geir has no element type for."""
    if isinstance(spec, str):
        name = DTYPE_NAMES.get(spec.lower(), spec)
        if name == "bfloat16":
            return BF16
        try:
            spec = np.dtype(name)
        except TypeError:
            raise GraphBuildError(f"unknown element type '{spec}'; use numpy's names or "
                                  f"{', '.join(DTYPE_NAMES)}") from None
    try:
        dt = to_dtype(spec) if isinstance(spec, Attribute) else np.dtype(spec)
        to_element_type(dt)
        return dt
    except (UnsupportedTypeError, TypeError):
        shown = spec.__name__ if isinstance(spec, type) else spec
        raise GraphBuildError(f"element type {shown} is not supported") from None


_HINT_BAD = re.compile(r"[^A-Za-z0-9_$.-]")


def value_hint(name: str) -> str:
    """An SSA name hint for a model name (MLIR's `%name` takes letters, digits, `_$.-`)."""
    h = _HINT_BAD.sub("_", name)
    if not h or h[0].isdigit():
        h = "v" + h
    return h


def name_attrs(names: Iterable[str]) -> ArrayAttr[DictionaryAttr]:
    """Argument or result attributes naming each tensor (`onnx.name`): how the runtime feeds
    inputs and returns outputs by name."""
    return ArrayAttr([DictionaryAttr({attr_names.ONNX_NAME: StringAttr(n)}) for n in names])


def size_text(nbytes: int) -> str:
    """Bytes in the largest binary unit that keeps the number at least 1 (3.55 PiB)."""
    for unit, size in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20),
                       ("KiB", 2**10)):
        if nbytes >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{nbytes} bytes"


def is_placeholder(op: Operation) -> bool:
    """Whether `op` is a shape-only placeholder weight (`GraphBuilder.weight` without data)."""
    return isinstance(op, g.ConstantOp) and op.placeholder_name is not None


class GraphBuilder:
    """A function under construction: inputs, weights, ops, outputs, then `finish()`.

    Subclasses (the ONNX importer) change how errors read (`error_type`, `here`), where an
    op is located (`default_location`) and what result types they take when the dialect
    cannot infer one (`declared` of `build`)."""

    error_type: type[GeirError] = GraphBuildError

    def __init__(self, name: str = "main"):
        self.name = name
        self.block = Block()
        self.inputs: list[str] = []
        self.outputs: dict[str, SSAValue] = {}
        self.names: set[str] = set()  # inputs, weights and nodes: one namespace
        self.known: dict[SSAValue, np.ndarray] = {}  # small values known while building
        self.node_name: str | None = None  # the node being built, for errors
        self.node_op: str | None = None  # its op's name
        self._counter = 0
        self._module: ModuleOp | None = None  # once finished

    # -- errors and names ----------------------------------------------------------------

    @property
    def here(self) -> str:
        if not self.node_name:
            return f"graph '{self.name}'"
        return f"node '{self.node_name}'" + (f" ({self.node_op})" if self.node_op else "")

    def error(self, msg: str) -> GeirError:
        return self.error_type(f"{self.here}: {msg}")

    def claim(self, name: str, what: str) -> str:
        """Reserve a name for an input, weight or node; a second use is an error."""
        if self._module is not None:
            raise self.error_type(f"graph '{self.name}' is finished; start a new GraphBuilder to add the "
                                  f"{what} '{name}'")
        if not isinstance(name, str) or not name:
            raise self.error_type(f"graph '{self.name}': a {what} needs a non-empty name, got {name!r}")
        if name in self.names:
            raise self.error_type(f"graph '{self.name}': {what} name '{name}' is already used")
        self.names.add(name)
        return name

    def fresh_name(self, cls: type[g.GraphOp]) -> str:
        """A node name not used yet: `<op>_<n>`."""
        while True:
            self._counter += 1
            candidate = f"{method_name(cls)}_{self._counter}"
            if candidate not in self.names:
                return candidate

    def default_location(self) -> str:
        """Where an op is located when `build` is not given a name."""
        return self.node_name or "?"

    # -- the core ------------------------------------------------------------------------

    def build(self, cls: type[g.GraphOp], inputs: Sequence[SSAValue], n_results: int | None = 1, *,
              name: str | None = None, declared: Sequence[TensorType | None] | None = None,
              **attrs: Any) -> list[SSAValue]:
        """Create one op of class `cls` and return its results: the one place ops are made.

        The dialect infers the result types (`cls.infer`, with the operands' known values);
        when it cannot (a shape that depends on a runtime value) the `declared` types are
        taken - the importer's onnx-inferred ones - else it is an error. `n_results` is for
        a variadic op (split) when the types are declared; None takes the inferred count.
        `name` names the node: the op's location and, for errors, `here`."""
        if name is not None:
            self.node_name = self.claim(name, "node")
        self.node_op = cls.name
        if self._module is not None:
            raise self.error("the graph is finished; start a new GraphBuilder")
        for i, v in enumerate(inputs):
            self.check_value(v, f"operand #{i} of {cls.name}")
        try:
            props = cls.attrs_to_props(attrs)
            py = cls.props_to_py(props)
            types = cls.infer([v.type for v in inputs], py, [self.const_value(v) for v in inputs])
        except (g.ShapeError, ValueError) as e:
            raise self.error(str(e)) from None
        if types is None:
            want = n_results if n_results is not None else len(declared or ())
            if declared is None or any(t is None for t in declared) or len(declared) != want:
                raise self.error("the result shape depends on values geir cannot fold; no static shape"
                                 + self.unknown_shape_hint(inputs))
            types = list(declared)
        self.check_size(types, self.result_names(len(types)) if declared is not None else [])
        op = cls.create(operands=list(inputs), result_types=list(types), properties=props)
        self.append(op, name)
        self.evaluate(op)
        return list(op.results)

    def result_names(self, n: int) -> list[str]:
        """How errors name the results of the node being built (the importer: its outputs)."""
        return []

    def unknown_shape_hint(self, inputs: Sequence[SSAValue]) -> str:
        """What an error about a result shape that depends on unknown values adds (the
        importer: which graph input to freeze)."""
        return ""

    def append(self, op: Operation, loc: str | None = None) -> Operation:
        """Add a built op at the end of the function, located at `loc` (default: the node)."""
        op.location = name_loc(loc if loc is not None else self.default_location())
        self.block.add_op(op)
        return op

    def check_value(self, value: Any, what: str) -> SSAValue:
        """`value` if it is a tensor of this builder's function, else a clear error."""
        if not isinstance(value, SSAValue):
            raise self.error(f"{what} is a {type(value).__name__}, not a value of this graph")
        block = value.block if isinstance(value, BlockArgument) else value.owner.parent_block()
        if block is not self.block:
            raise self.error(f"{what} ({value.name_hint or 'unnamed'}: {value.type}) belongs to another "
                             f"graph; values cannot cross builders")
        return value

    def check_size(self, types: Sequence[TensorType], names: Sequence[str]) -> None:
        """Reject a result above MAX_TENSOR_BYTES from its shape, before anything - the
        interpreter, constant folding, the lowering's evaluation of ConstantOfShape, Range,
        Expand or Tile of constants - tries to allocate it."""
        for i, t in enumerate(types):
            elements = math.prod(t.get_shape())
            nbytes = elements * np.dtype(to_dtype(t.element_type)).itemsize
            if nbytes > MAX_TENSOR_BYTES:
                what = f"output '{names[i]}'" if i < len(names) else "an intermediate result"
                raise self.error(f"{what} would hold {elements} elements of {t.element_type} "
                                 f"({size_text(nbytes)}), more than geir's tensor limit MAX_TENSOR_BYTES = "
                                 f"{size_text(MAX_TENSOR_BYTES)} (the device memory of the largest modeled device)")

    def const_value(self, value: SSAValue | None) -> np.ndarray | None:
        """The value if it is known while building (a constant, or shape arithmetic on them)."""
        if value is None:
            return None
        known = self.known.get(value)
        return known if known is not None else g.constant_value_of(value)

    def evaluate(self, op: g.GraphOp) -> None:
        """Record small results computable now: exporters compute reshape and slice
        parameters with Shape/Gather/Concat on static shapes, and the dialect needs those
        values to infer result types. The ops stay in the IR (graph-fold-shapes removes
        them)."""
        if isinstance(op, g.ShapeOp):
            dims = op.inputs[0].type.get_shape()
            a = op.attrs()
            self.known[op.output] = np.array(dims[slice(a["start"], a["end"])], np.int64)
            return
        if isinstance(op, g.SizeOp):
            self.known[op.output] = np.array(math.prod(op.inputs[0].type.get_shape()), np.int64)
            return
        if len(op.results) != 1 or math.prod(op.results[0].type.get_shape()) > KNOWN_LIMIT:
            return
        args = [self.const_value(v) for v in op.inputs]
        if any(a is None for a in args):
            return
        from geir.reference.graph import reference_of

        self.known[op.output] = np.asarray(reference_of(op)(*args, **op.kernel_kwargs()))

    # -- inputs, weights, constants, outputs -----------------------------------------------

    def input(self, name: str, shape: Sequence[int], dtype: Any = "f32") -> SSAValue:
        """A function argument named `name` (fed by that name) of `shape` and element type."""
        self.claim(name, "input")
        shape = self._shape(shape, f"input '{name}'")
        arg = self.block.insert_arg(tensor(shape, to_element_type(parse_dtype(dtype))), len(self.block.args))
        arg.name_hint = value_hint(name)
        self.inputs.append(name)
        return arg

    def weight(self, name: str, array: Any = None, *, shape: Sequence[int] | None = None,
               dtype: Any = None) -> SSAValue:
        """A named weight: `array`'s bytes (cast to `dtype` if given), or without data a
        shape-only placeholder of `shape` and `dtype` (a splat of 0 marked `geir.placeholder`:
        no bytes held; a run computes with zeros)."""
        self.claim(name, "weight")
        if array is None:
            if shape is None or dtype is None:
                raise self.error_type(f"graph '{self.name}': weight '{name}' needs an array, or shape= and "
                                      f"dtype= for a shape-only placeholder")
            return self.placeholder(name, self._shape(shape, f"weight '{name}'"), parse_dtype(dtype))
        if shape is not None and tuple(np.shape(array)) != tuple(shape):
            raise self.error_type(f"graph '{self.name}': weight '{name}' has shape {list(np.shape(array))}, "
                                  f"not the shape {list(shape)} given")
        return self.constant(array, name=name, dtype=dtype, loc=name)

    def placeholder(self, name: str, shape: tuple[int, ...], dt: np.dtype) -> SSAValue:
        t = tensor(shape, to_element_type(dt))
        self.check_size([t], [name])
        op = g.ConstantOp.placeholder(name, t)
        op.output.name_hint = value_hint(name)
        self.append(op, name)
        return op.output

    def constant(self, array: Any, *, name: str | None = None, dtype: Any = None,
                 loc: str | None = None) -> SSAValue:
        """A graph.constant holding `array` (cast to `dtype` if given); `name` hints its SSA
        name, `loc` locates it (default: the node being built)."""
        try:
            array = np.asarray(array, dtype=parse_dtype(dtype) if dtype is not None else None)
            to_element_type(array.dtype)
        except (UnsupportedTypeError, TypeError, ValueError) as e:
            what = f"weight '{name}'" if name else "a constant"
            raise self.error(f"{what}: {e}") from None
        op = g.ConstantOp.from_array(array)
        if name:
            op.output.name_hint = value_hint(name)
        self.append(op, loc)
        return op.output

    def output(self, name: str, value: SSAValue) -> None:
        """Make `value` the function result named `name` (results keep the order of calls)."""
        self.node_name = None
        if name in self.outputs:
            raise self.error_type(f"graph '{self.name}': output name '{name}' is already used")
        if self._module is not None:
            raise self.error("the graph is finished; start a new GraphBuilder")
        self.check_value(value, f"output '{name}'")
        self.outputs[name] = value

    def finish(self, outputs: Sequence[str] | None = None, *, verify: bool = True) -> ModuleOp:
        """The verified module holding `func.func @<name>`; `outputs` lists the result names
        the function must have (an error names any never set). Once finished, the builder
        returns the same module and takes no more ops. `verify=False` leaves the module-wide
        verification to a caller that runs it anyway (geir.compile verifies every stage):
        each op's result types were inferred and checked as it was built."""
        self.node_name = None
        missing = [n for n in (outputs or ()) if n not in self.outputs]
        if missing:
            raise self.error_type(f"graph '{self.name}': output(s) {missing} were never set (b.output(name, value))")
        if not self.outputs:
            raise self.error_type(f"graph '{self.name}' has no outputs: set them with b.output(name, value)")
        if self._module is not None:
            return self._module
        values = list(self.outputs.values())
        module = self.module(self.inputs, list(self.outputs), values)
        try:
            if verify:
                module.verify()
        except VerifyException as e:
            raise self.error_type(f"graph '{self.name}' does not verify: {e}") from None
        self._module = module
        return module

    def module(self, input_names: Sequence[str], output_names: Sequence[str], values: Sequence[SSAValue]) -> ModuleOp:
        """Close the block with func.return and wrap it in a module."""
        self.block.add_op(func.ReturnOp(*values))
        fn = func.FuncOp(
            self.name,
            ([a.type for a in self.block.args], [v.type for v in values]),
            Region(self.block),
            arg_attrs=name_attrs(input_names),
            res_attrs=name_attrs(output_names),
        )
        return ModuleOp([fn])

    # -- conveniences ------------------------------------------------------------------------

    def linear(self, x: SSAValue, w: SSAValue, b: SSAValue | None = None, *, name: str | None = None) -> SSAValue:
        """x @ w (+ b): a matmul, and an add for the bias located at `name`/bias."""
        y = self.matmul(x, w, name=name)
        return y if b is None else self.add(y, b, name=f"{name}/bias" if name else None)

    def operand(self, value: Any, like: SSAValue | None) -> SSAValue:
        """An op method's operand: a value, or a constant made from a number (the element type
        of `like`), a numpy array, or a list / tuple of ints (i64)."""
        if isinstance(value, SSAValue):
            return value
        if isinstance(value, np.ndarray | np.generic):
            return self.constant(value)
        if isinstance(value, list | tuple) and all(isinstance(v, int | np.integer) for v in value):
            return self.constant(np.array(value, np.int64))
        if isinstance(value, int | float) and not isinstance(value, bool):
            dt = to_dtype(like.type.element_type) if like is not None else np.dtype(np.float32)
            return self.constant(np.array(value, dt))
        raise self.error(f"operand {value!r} is a {type(value).__name__}: give a value of this graph, "
                         f"a number, a numpy array or a list of ints")

    def _shape(self, shape: Any, what: str) -> tuple[int, ...]:
        try:
            dims = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise self.error_type(f"graph '{self.name}': {what} has shape {shape!r}; a shape is a sequence of ints") from None
        if any(d < 0 for d in dims):
            raise self.error_type(f"graph '{self.name}': {what} has a negative dimension in {list(dims)}")
        return dims


def _op_method(cls: type[g.GraphOp]):
    """The builder method of one graph op class: operands positional (numbers, arrays and
    int lists made constants), attributes as keywords, `name` the node's name."""
    lo, hi = cls.arity()

    def method(self: GraphBuilder, *operands: Any, name: str | None = None, **attrs: Any):
        self.node_name = self.claim(name if name is not None else self.fresh_name(cls), "node")
        if len(operands) < lo or (hi is not None and len(operands) > hi):
            want = f"{lo}" if lo == hi else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
            raise self.error(f"{cls.name} takes {want} operand(s), got {len(operands)}")
        like = next((v for v in operands if isinstance(v, SSAValue)), None)
        results = self.build(cls, [self.operand(v, like) for v in operands], None, **attrs)
        for r in results:
            r.name_hint = value_hint(self.node_name)
        return results[0] if cls.NUM_RESULTS == 1 else results

    method.__name__ = method_name(cls)
    method.__doc__ = f"`{cls.name}` ({', '.join(cls.OPERANDS) or '*operands'}): {cls.__doc__ or ''}".strip()
    return method


def method_name(cls: type[g.GraphOp]) -> str:
    """The builder method of an op class: the op's name without the dialect (`rms_norm`)."""
    return cls.name.partition(".")[2]


OP_METHODS: dict[str, type[g.GraphOp]] = {}
"""Builder method name -> the graph op class it builds (every GraphOp of the dialect)."""
for _cls in g.OPS.values():
    if isinstance(_cls, type) and issubclass(_cls, g.GraphOp):
        if hasattr(GraphBuilder, method_name(_cls)):
            raise TypeError(f"GraphBuilder.{method_name(_cls)} would hide the method of {_cls.name}")
        OP_METHODS[method_name(_cls)] = _cls
        setattr(GraphBuilder, method_name(_cls), _op_method(_cls))
