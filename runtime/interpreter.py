"""The reference interpreter: runs graph-dialect programs with numpy.

Built on xDSL's interpreter framework: every graph op dispatches to its numpy
function in `reference.graph` with the op's attributes as keyword arguments;
func.func / func.return come from xDSL's own implementations. The values are
numpy arrays, checked against the declared result types so that a kernel
that disagrees with the dialect's shape inference is an error, not a wrong
number further down.

A value of a formatted type (`#graph.format<NC1HWC0, ...>`) is its storage
array: graph.trans_data really reorders data, elementwise ops run on storage
arrays (padded channels hold whatever the op makes of zeros; converting back
drops them), every other op gets logical arrays (docs/layout.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Operation

from geir.dialects import graph as g
from geir.dialects import formats
from geir.ir.types import is_float_dtype, to_dtype
from geir.errors import InterpreterError
from geir.ir.locations import describe
from geir.reference.graph import REFERENCE, reference_of
from geir.dialects import attr_names
from geir.runtime.shape_ranges import Range, bind, ranges_of


@register_impls
class GraphFunctions(InterpreterFunctions):
    """The graph ops: each with a numpy kernel in reference/graph.py runs it
    (`run_reference`, registered for every class of `REFERENCE` by `_impls`);
    graph.constant, graph.fusion and graph.yield have their own impls."""

    @impl(g.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: g.ConstantOp, args):
        try:
            return (np.asarray(op.array()),)  # a shape-only weight computes as the zeros it is here
        except ValueError as e:
            raise InterpreterError(f"{describe(op)}: {e}") from None

    @impl(g.FusionOp)
    def run_fusion(self, interpreter: Interpreter, op: g.FusionOp, args):
        return interpreter.run_ssacfg_region(op.body, args, op.name)

    @impl_terminator(g.YieldOp)
    def run_yield(self, interpreter: Interpreter, op: g.YieldOp, args):
        return ReturnedValues(args), ()

    def run_reference(self, interpreter: Interpreter, op: g.GraphOp, args: tuple[Any, ...]):
        """The op's reference kernel on its operands, with the op's attributes as keyword
        arguments. Values are storage arrays: elementwise ops and trans_data run on them
        directly; any other op with a format encoding gets logical arrays and its results
        are stored back in their formats (dialects/formats.py)."""
        logical = op.LAYOUT not in ("elementwise", "trans_data") and _has_formats(op)
        if logical:
            args = tuple(formats.logical_array(a, v.type) for a, v in zip(args, op.operands))
        try:
            out = reference_of(op)(*args, **op.kernel_kwargs())
        except Exception as e:  # a numpy error inside a kernel
            raise InterpreterError(f"{describe(op)} failed: {type(e).__name__}: {e}") from e
        outs = out if isinstance(out, tuple) else (out,)
        if logical:
            return tuple(
                formats.physical_array(_conform(op, i, o, formats.logical_type(r.type)), r.type)
                for i, (o, r) in enumerate(zip(outs, op.results))
            )
        return tuple(_conform(op, i, o) for i, o in enumerate(outs))

    @classmethod
    def _impls(cls):
        """The `@impl` methods above, and `impl(op_type)(run_reference)` for every other
        graph op class with a reference kernel: what xDSL's Interpreter registers."""
        own = dict(super()._impls())
        return [*own.items(), *((t, impl(t)(cls.run_reference)) for t in REFERENCE if t not in own)]


def _has_formats(op: Operation) -> bool:
    return any(formats.is_formatted(v.type) for v in (*op.operands, *op.results))


def _conform(op: Operation, index: int, value: np.ndarray, t: TensorType | None = None) -> np.ndarray:
    t = op.results[index].type if t is None else t
    assert isinstance(t, TensorType)
    value = np.asarray(value)
    shape = tuple(t.get_shape())
    if value.shape != shape:
        raise InterpreterError(
            f"{describe(op)} produced shape {list(value.shape)} for result #{index}, type says {list(shape)}"
        )
    dtype = to_dtype(t.element_type)
    return value if value.dtype == dtype else value.astype(dtype)


def make_interpreter(module: ModuleOp, listeners: tuple = ()) -> Interpreter:
    interpreter = Interpreter(module, listeners=listeners)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(GraphFunctions())
    return interpreter


# ---------------------------------------------------------------------------
# Named inputs and outputs
# ---------------------------------------------------------------------------


def main_function(module: ModuleOp) -> func.FuncOp:
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    for f in funcs:
        if f.sym_name.data == "main":
            return f
    if len(funcs) == 1:
        return funcs[0]
    raise InterpreterError("the module has no func.func @main to run")


def _names(attrs, count: int, prefix: str, values=()) -> list[str]:
    """By `onnx.name`, else by the SSA name of `values[i]` (`%x` is "x", as a user reading
    the IR calls it), else `<prefix><i>`."""
    onnx_names = []
    for i in range(count):
        a = attrs.data[i].data.get(attr_names.ONNX_NAME) if attrs is not None and i < len(attrs.data) else None
        onnx_names.append(a.data if isinstance(a, StringAttr) else None)
    hints = [v.name_hint for v in values] if values else [None] * count
    names = [name or hint or f"{prefix}{i}" for i, (name, hint) in enumerate(zip(onnx_names, hints))]
    if len(set(names)) < len(names):  # a hint equal to another name: numbers, as before
        names = [name or f"{prefix}{i}" for i, name in enumerate(onnx_names)]
    return names


def input_specs(module: ModuleOp) -> list[tuple[str, tuple[int, ...], np.dtype]]:
    """(name, shape, dtype) of each graph input, in order."""
    f = main_function(module)
    types = f.function_type.inputs.data
    names = _names(f.arg_attrs, len(types), "input", f.args)
    return [(n, tuple(t.get_shape()), to_dtype(t.element_type)) for n, t in zip(names, types)]


def output_names(module: ModuleOp) -> list[str]:
    f = main_function(module)
    return _names(f.res_attrs, len(f.function_type.outputs.data), "output")


def module_ranges(module: ModuleOp) -> list[Range]:
    """The shape ranges of a module's main function, graph-level or a host program
    (runtime/shape_ranges.py): their extent inputs are the runtime's, never fed."""
    f = main_function(module)
    if f.arg_attrs is None:
        return []
    return ranges_of(_names(f.arg_attrs, len(f.function_type.inputs.data), "input", f.args), list(f.arg_attrs.data))


def random_inputs(module: ModuleOp, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random data for every input (floats ~N(0,1), ints small, bools fair); a shape
    range's extent is left to the runtime."""
    rng = np.random.default_rng(seed)
    feeds = {}
    extents = {r.name for r in module_ranges(module)}
    for name, shape, dtype in input_specs(module):
        if name in extents:
            continue
        if any(d < 0 for d in shape):
            raise InterpreterError(f"input '{name}' has a dynamic shape {list(shape)}; give its value explicitly")
        if is_float_dtype(dtype):
            feeds[name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_:
            feeds[name] = rng.random(shape) < 0.5
        else:
            feeds[name] = rng.integers(0, 4, shape).astype(dtype)
    return feeds


def run_module(
    module: ModuleOp, feeds: Mapping[str, np.ndarray], listeners: tuple = ()
) -> dict[str, np.ndarray]:
    """Run `main` on named inputs; returns the outputs by name. A graph-level shape-range
    program runs at its ranges' tops (the runtime fills the extents): only the lowered program
    crops its outputs to smaller sizes (runtime/shape_ranges.py)."""
    specs = input_specs(module)
    f = main_function(module)
    ranges = module_ranges(module)
    if ranges:
        feeds, sizes = bind(ranges, {n: s for n, s, _ in specs}, feeds)
        for r in ranges:
            if sizes[r.name] != r.hi:
                raise InterpreterError(f"a graph-level shape-range program runs at its ranges' tops: {r.describe()} "
                                       f"is {sizes[r.name]}, not {r.hi} (the lowered program takes any size)")
    missing = [n for n, _, _ in specs if n not in feeds]
    if missing:
        raise InterpreterError(f"missing input(s): {', '.join(missing)}")
    unknown = set(feeds) - {n for n, _, _ in specs}
    if unknown:
        raise InterpreterError(f"unknown input(s): {', '.join(sorted(unknown))}; inputs are {[n for n, _, _ in specs]}")
    args = []
    for name, shape, dtype in specs:
        value = np.asarray(feeds[name])
        if value.shape != shape:
            raise InterpreterError(f"input '{name}' has shape {list(value.shape)}, the model expects {list(shape)}")
        if value.dtype != dtype:
            if not np.can_cast(value.dtype, dtype, "same_kind"):
                raise InterpreterError(f"input '{name}' has dtype {value.dtype}, the model expects {dtype}")
            value = value.astype(dtype)
        args.append(value)
    interpreter = make_interpreter(module, listeners)
    results = interpreter.call_op(f.sym_name.data, tuple(args))
    return dict(zip(output_names(module), (np.asarray(r) for r in results)))
