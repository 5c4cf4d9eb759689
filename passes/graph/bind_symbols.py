"""graph-bind-symbols: every symbolic dim at its range's top, the static program the lowering
takes.

graph-infer-symbolic-shapes leaves `?` at the dims that hold a symbol and their expressions in
`geir.dims`; this pass evaluates each expression with every symbol at the top of its range
(GE's upper-bound plan: memory for the largest size) and drops the annotations. The extent
arguments stay: the kernels take the actual size from them at run time.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType
from xdsl.passes import ModulePass

from geir.dialects import attr_names, formats
from geir.dialects.symbolic_shapes import argument_shapes, function_symbols, shapes_of_attr
from geir.ir import symbolic as sy
from geir.passes.graph.symbolic_shapes import retype_value, update_signature


def _bound(t, shape, top):
    """`t` with each `?` at its dim's value at the tops (a formatted or static type as it is)."""
    if not isinstance(t, TensorType) or formats.logical_type(t) is not t or DYNAMIC_INDEX not in t.get_shape():
        return t
    return TensorType(t.element_type, [sy.evaluate(d, top) for d in shape], t.encoding)


def bind_function(fn: func.FuncOp) -> None:
    symbols = function_symbols(fn)
    top = {s: hi for s, (_, hi) in symbols.ranges.items()}
    for arg, shape in argument_shapes(fn, symbols).items():
        retype_value(None, arg, _bound(arg.type, shape, top))
    for op in fn.body.walk():
        attr = op.attributes.pop(attr_names.DIMS, None)
        if attr is not None:
            for r, shape in zip(list(op.results), shapes_of_attr(attr)):
                retype_value(None, r, _bound(r.type, shape, top))
    update_signature(fn)


@dataclass(frozen=True)
class BindSymbolsPass(ModulePass):
    """Give every symbolic dim its range's top (GE's upper-bound plan) and drop `geir.dims`."""

    name = "graph-bind-symbols"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        bind_symbols(op)


def bind_symbols(module: ModuleOp) -> None:
    for fn in module.walk():
        if isinstance(fn, func.FuncOp) and not fn.is_declaration:
            bind_function(fn)
