"""Small helpers shared by the graph rewrites (no passes here).

They encode the rules every graph pass follows: a function result is never
forwarded to another value, a merged op carries the names of everything it
replaced, new constants are numpy arrays at the location of what they replace.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FunctionType,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.ir.shape_only import is_shape_only
from geir.ir.types import dense_bytes, tensor_of, to_dtype
from geir.ir.locations import fused_loc, loc_names


def is_graph_output(value: SSAValue) -> bool:
    """Whether the value is returned by its function (a graph output)."""
    return any(isinstance(use.operation, func.ReturnOp) for use in value.uses)


def can_forward(op: Operation, to: SSAValue) -> bool:
    """Whether `op`'s only result may be replaced by the existing value `to`.

    Needs the exact same type, and the result must not be a graph output:
    forwarding would make the output alias an input or another output and drop
    the node that produced it."""
    return (
        len(op.results) == 1
        and op.results[0].type == to.type
        and not is_graph_output(op.results[0])
    )


def replace_checked(op: Operation, new_ops: list[Operation], rewriter: PatternRewriter) -> bool:
    """Replace op by `new_ops`, the last of which gives op's result; only if
    its type is exactly op's (a rewrite never changes a value's type)."""
    if new_ops[-1].results[0].type != op.results[0].type:
        return False
    rewriter.replace(op, new_ops, [new_ops[-1].results[0]])
    return True


def merged_loc(*ops: Operation) -> Attribute:
    """The location of an op that replaces `ops`: all their node names, fused."""
    names = [n for op in ops for n in loc_names(op.location)]
    return fused_loc(names) if names else ops[0].location


def located(op: Operation, loc: Attribute) -> Operation:
    op.location = loc
    return op


def hint(value: SSAValue, suffix: str) -> str | None:
    """A name for a value derived from `value` ("conv1_w" -> "conv1_w_folded", once)."""
    name = value.name_hint
    if not name or name.endswith(f"_{suffix}"):
        return name
    return f"{name}_{suffix}"


def constant(array: np.ndarray, loc: Attribute, name: str | None = None) -> g.ConstantOp:
    """A graph.constant holding the array, at `loc`, its value named `name`.

    Builds the attribute itself: `dense_from_array` goes through
    np.ascontiguousarray, which turns a 0-d array into shape [1]. An array computed from
    shape-only weights (ir/shape_only.py) gives a shape-only weight named after them."""
    if is_shape_only(array):  # computed from shape-only weights: one itself, holding no bytes
        op = g.ConstantOp.placeholder("+".join(array.sources) + f"/{name or 'value'}", tensor_of(array))
        op.output.name_hint = name
        return located(op, loc)
    array = np.asarray(array)
    attr = DenseIntOrFPElementsAttr(tensor_of(array), BytesAttr(dense_bytes(array)))
    op = g.ConstantOp.create(properties={"value": attr}, result_types=[attr.get_type()])
    op.output.name_hint = name
    return located(op, loc)


def splat(value: float | int, type_: TensorType, loc: Attribute) -> g.ConstantOp:
    """A graph.constant of `type_` filled with one value, stored as a single element."""
    one = np.asarray(value, dtype=to_dtype(type_.element_type)).reshape(1)
    attr = DenseIntOrFPElementsAttr(type_, BytesAttr(one.tobytes()))
    return located(g.ConstantOp.create(properties={"value": attr}, result_types=[type_]), loc)


def static_shape(type_: Attribute) -> tuple[int, ...] | None:
    """The shape of a ranked tensor type with no dynamic dims, else None."""
    if not isinstance(type_, TensorType):
        return None
    shape = tuple(type_.get_shape())
    return shape if all(d >= 0 for d in shape) else None


def nbytes(type_: TensorType) -> int:
    shape = static_shape(type_)
    assert shape is not None
    return math.prod(shape) * to_dtype(type_.element_type).itemsize


def sole_user(value: SSAValue) -> Operation | None:
    """The one op using the value (once), else None."""
    uses = list(value.uses)
    return uses[0].operation if len(uses) == 1 else None


def channel_vector(array: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray | None:
    """The per-channel (axis 1) values of a constant broadcast against `out_shape`.

    None unless broadcasting the constant leaves `out_shape` unchanged and it
    is constant along every other axis ([C,1,1], [1,C,1,1], [1], ...)."""
    if len(out_shape) < 2 or array.ndim > len(out_shape):
        return None
    aligned = (1,) * (len(out_shape) - array.ndim) + array.shape
    channels = out_shape[1]
    if any(d != 1 for i, d in enumerate(aligned) if i != 1) or aligned[1] not in (1, channels):
        return None
    return np.broadcast_to(array.reshape(aligned[1]), (channels,))


def per_channel_shape(channels: int, rank: int) -> tuple[int, ...]:
    """[C, 1, ..., 1]: a per-channel vector broadcast over axis 1 of a rank-`rank` tensor."""
    return (channels,) + (1,) * (rank - 2)


def scalar_constant(v: SSAValue | None) -> float | None:
    """The value of a one-element constant (an exponent, an eps), else None."""
    c = None if v is None else g.constant_value_of(v)
    return float(np.asarray(c).reshape(-1)[0]) if c is not None and c.size == 1 else None


def other_operand(op: Operation, v: SSAValue) -> SSAValue | None:
    """The operand of a binary op that is not `v` (None if v is not an operand)."""
    a, b = op.operands
    return b if a is v else a if b is v else None


def replace_chain(chain: list[Operation], new_ops: list[Operation], rewriter: PatternRewriter) -> None:
    """Replace a recognised chain of ops (in order; only the last one's result is used
    outside it) by `new_ops`, the last of which computes that result: inserted before the
    last op, located at every node of the chain, keeping its name and a graph.keep tap; the
    chain's constants (exponents, eps) go unless used elsewhere."""
    last, new = chain[-1], new_ops[-1]
    new.location = fused_loc(n for o in chain for n in loc_names(o.location))
    if attr_names.KEEP in last.attributes:
        new.attributes[attr_names.KEEP] = UnitAttr()
    rewriter.insert(new_ops, InsertPoint.before(last))
    rewriter.replace_all_uses_with(last.results[0], new.results[0])
    new.results[0].name_hint = last.results[0].name_hint
    constants = {v.owner for o in chain for v in o.operands if isinstance(v.owner, g.ConstantOp)}
    for dead in reversed(chain):
        rewriter.erase(dead)
    for c in constants:
        if not c.output.uses:
            rewriter.erase(c)


def ones_scale(x: SSAValue, shape: tuple[int, ...], at: Operation, default: str) -> g.ConstantOp:
    """A constant of ones of x's element type and `shape` at `at`'s location, named after its
    result (the scale of a recognised normalisation that has none)."""
    ones = g.ConstantOp.from_array(np.ones(shape, dtype=to_dtype(x.type.element_type)))
    ones.location = at.location
    ones.output.name_hint = f"{at.results[0].name_hint or default}_scale"
    return ones


def entry_attrs(attrs: ArrayAttr | None, count: int) -> list[DictionaryAttr]:
    """A function's argument or result attributes, one dictionary per entry (empty ones when
    the function stores none)."""
    return list(attrs.data) if attrs is not None else [DictionaryAttr({}) for _ in range(count)]


def set_signature(fn: func.FuncOp, arg_attrs: Sequence[DictionaryAttr], res_attrs: Sequence[DictionaryAttr]) -> None:
    """After a rewrite changed a function's arguments or returned values: its type from its
    block arguments and its return's operands, with these attributes (none stored when every
    dictionary is empty)."""
    block = fn.body.block
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    fn.arg_attrs = ArrayAttr(list(arg_attrs)) if any(d.data for d in arg_attrs) else None
    fn.res_attrs = ArrayAttr(list(res_attrs)) if any(d.data for d in res_attrs) else None
    fn.function_type = FunctionType.from_lists([arg.type for arg in block.args], [v.type for v in ret.operands])
