"""graph-infer-symbolic-shapes: every tensor's shape in the symbols of the model's dynamic
dims, each proven for every size in their ranges.

The symbols are the extent arguments' (`<symbol>.extent`, `geir.extent`, `geir.range`); the
rules, op family by op family, are dialects/symbolic_shapes.py's. The pass runs them over
each function in order - the shape arithmetic exporters emit followed by value, what no
symbol reaches evaluated with the reference kernels - and writes the result: every dim that
holds a symbol becomes `?` in the types, and each op with such a result carries `geir.dims`
(one list per result, an int or the expression per dim). An op whose shapes are not proven
for every size in the ranges is an error naming it and the dims. Where a type was static (a
graph imported at the ranges' tops), it must be the inferred shape at the tops.

graph-bind-symbols (passes/graph/bind_symbols.py) gives every symbol its range's top again:
the static program the lowering takes. A function without extent arguments is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, FunctionType, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from geir.dialects import attr_names, formats
from geir.dialects.symbolic_shapes import (
    Analysis,
    Ranges,
    Shape,
    SymbolicShapeError,
    argument_shapes,
    dims_attr,
    dims_text,
    function_symbols,
)
from geir.ir import symbolic as sy
from geir.ir.locations import describe as describe_op
from geir.ir.symbolic import Sym
from geir.passes.graph.fold_constants import run_reference


def _typed(t: Attribute, shape: Shape) -> Attribute:
    """`t` with `?` at the symbolic dims of `shape` and its sizes elsewhere."""
    logical = formats.logical_type(t)
    if logical is not t or not isinstance(t, TensorType):  # a formatted type keeps its own shape
        return t
    return TensorType(t.element_type, [DYNAMIC_INDEX if isinstance(d, Sym) else d for d in shape], t.encoding)


def _check_declared(op: Operation, r: SSAValue, shape: Shape, ranges: Ranges) -> None:
    declared = formats.logical_type(r.type).get_shape()
    if len(declared) != len(shape):
        raise SymbolicShapeError(f"{describe_op(op)}: result of rank {len(declared)}, but the operands imply "
                                 f"{dims_text(shape)}")
    top = {s: hi for s, (_, hi) in ranges.items()}
    for i, (d, s) in enumerate(zip(declared, shape)):
        if d == DYNAMIC_INDEX:
            continue
        if (sy.evaluate(s, top) if isinstance(s, Sym) else s) != d:
            raise SymbolicShapeError(f"{describe_op(op)}: result dim {i} is {d}, but the operands imply {s}")


def retype_value(a: Analysis | None, v: SSAValue, t: Attribute) -> SSAValue:
    """`v` with type `t` (a new value replacing it, the analysis' entries moved along)."""
    if v.type == t:
        return v
    new = Rewriter.replace_value_with_new_type(v, t)
    if a is not None:
        for table in (a.shapes, a.values):
            if v in table:
                table[new] = table.pop(v)
    return new


def update_signature(fn: func.FuncOp) -> None:
    """The function type from its arguments and returned values."""
    block = fn.body.block
    ret = block.last_op
    outputs = [v.type for v in ret.operands] if isinstance(ret, func.ReturnOp) else list(fn.function_type.outputs)
    fn.function_type = FunctionType.from_lists(list(block.arg_types), outputs)


def infer_function(fn: func.FuncOp, retype: bool = True) -> Analysis:
    """The analysis of `fn` (SymbolicShapeError on an op it refuses); with `retype`, the
    types and `geir.dims` written (see the module docstring)."""
    symbols = function_symbols(fn)
    a = Analysis(symbols.ranges, fold=run_reference)
    a.shapes.update(argument_shapes(fn, symbols))
    if retype:
        for arg in list(fn.body.block.args):
            if arg in a.shapes:
                retype_value(a, arg, _typed(arg.type, a.shapes[arg]))
    for op in list(fn.body.block.ops):  # an op with regions (control flow, a fusion) is one op here
        if isinstance(op, func.ReturnOp):
            continue
        shapes = a.run_op(op)
        for r, s in zip(op.results, shapes):
            _check_declared(op, r, s, a.ranges)
        if retype:
            if any(isinstance(d, Sym) for s in shapes for d in s):
                op.attributes[attr_names.DIMS] = dims_attr(shapes)
            else:
                op.attributes.pop(attr_names.DIMS, None)
            for r, s in zip(list(op.results), shapes):
                retype_value(a, r, _typed(r.type, s))
    if retype:
        update_signature(fn)
    return a


def infer_symbolic_shapes(module: ModuleOp, retype: bool = True) -> None:
    for fn in module.walk():
        if isinstance(fn, func.FuncOp) and not fn.is_declaration and function_symbols(fn).ranges:
            infer_function(fn, retype)


@dataclass(frozen=True)
class InferSymbolicShapesPass(ModulePass):
    """Infer every shape in the symbols of the model's dynamic dims (their extent arguments),
    proving each dim an op expects equal for every size in the ranges; `?` types and
    `geir.dims` mark the symbolic dims."""

    name = "graph-infer-symbolic-shapes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        infer_symbolic_shapes(op)
