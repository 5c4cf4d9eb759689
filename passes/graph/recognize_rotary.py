"""graph-recognize-rotary: a decomposed rotary position embedding becomes one
graph.rotary_embedding.

What the PyTorch exporters write for HF LLaMA's `apply_rotary_pos_emb`
(`q * cos + rotate_half(q) * sin`), both the TorchScript and the dynamo exporter:

    x1  = Slice(x, 0 : d/2, last axis)           the halves (interleaved 0)
    x2  = Slice(x, d/2 : d, last axis)
    rot = Concat(Neg(x2), x1, axis=-1)
    y   = Add(Mul(x, cos), Mul(rot, sin))        either operand order of each Add / Mul

and GPT-J's `rotate_every_two` (interleaved 1): the even and odd elements sliced with step 2,
each unsqueezed at the end, concatenated there and reshaped back to x's shape
(`torch.stack((-x2, x1), -1).flatten(-2)`):

    rot = Reshape(Concat(Unsqueeze(Neg(Slice(x, 1::2)), -1), Unsqueeze(Slice(x, 0::2), -1), axis=-1))

becomes `graph.rotary_embedding(x, cos, sin) {interleaved}`, located at every node it
replaces. cos and sin are kept as they are (the op takes one angle per element), so the
result is exactly what the chain computed.

Left alone (each a lit case): halves split anywhere but the middle, swapped halves
(concat(x1, -x2): a rotation the other way), the negation on the wrong half, a slice of
another axis or of another tensor, a cos / sin that would broadcast x to a larger shape, and
a value inside the chain used elsewhere, returned, or tapped with `graph.keep` (its tensor
would be lost).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.ir.types import is_float
from geir.passes.graph.utils import is_graph_output, replace_chain, sole_user


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def _inner(v: SSAValue, chain: list[Operation]) -> bool:
    """v may be folded into the op: one use, by the op being recognised, not returned."""
    op = v.owner
    return isinstance(op, Operation) and sole_user(v) is not None and not is_graph_output(v) \
        and attr_names.KEEP not in op.attributes and op not in chain


def last_axis_slice(op: Operation) -> tuple[SSAValue, range] | None:
    """(x, the indices it keeps) of a graph.slice of x's last axis alone, by constants."""
    if not isinstance(op, g.SliceOp):
        return None
    x = op.operands[0]
    consts = [g.constant_value_of(v) for v in op.operands[1:]]
    if any(c is None for c in consts):
        return None
    rank = len(_shape(x))
    starts, ends = (int(v) for v in consts[0].reshape(-1)), (int(v) for v in consts[1].reshape(-1))
    starts, ends = list(starts), list(ends)
    axes = [int(v) for v in consts[2].reshape(-1)] if len(consts) > 2 else list(range(len(starts)))
    steps = [int(v) for v in consts[3].reshape(-1)] if len(consts) > 3 else [1] * len(starts)
    if len(starts) != 1 or len(axes) != 1 or axes[0] % rank != rank - 1 or steps[0] == 0:
        return None
    return x, range(_shape(x)[-1])[slice(starts[0], ends[0], steps[0])]


def _concat_last(op: Operation | None) -> tuple[SSAValue, SSAValue] | None:
    if not isinstance(op, g.ConcatOp) or len(op.operands) != 2:
        return None
    if op.attrs()["axis"] % len(_shape(op.results[0])) != len(_shape(op.results[0])) - 1:
        return None
    return op.operands[0], op.operands[1]


def _rotation(rot: SSAValue) -> tuple[SSAValue, int, list[Operation]] | None:
    """(x, interleaved, the ops) when `rot` is rotate_half(x) or rotate_every_two(x)."""
    op = rot.owner
    chain: list[Operation] = []
    interleaved = 0
    if not _inner(rot, chain):
        return None
    if isinstance(op, g.ReshapeOp):  # rotate_every_two: stack(-odd, even).flatten(-2)
        interleaved = 1
        chain.append(op)
        if not _inner(op.operands[0], chain):
            return None
        op = op.operands[0].owner
    parts = _concat_last(op)
    if parts is None:
        return None
    chain.append(op)
    neg_in, kept = parts
    if interleaved:
        lifted = []
        for v in parts:
            u = v.owner
            if not (_inner(v, chain) and isinstance(u, g.UnsqueezeOp)):
                return None
            chain.append(u)
            lifted.append(u.operands[0])
        neg_in, kept = lifted
        if _shape(neg_in) + (1,) != _shape(parts[0]):  # unsqueezed at the end
            return None
    neg = neg_in.owner
    if not (_inner(neg_in, chain) and isinstance(neg, g.NegOp)):
        return None
    chain.append(neg)
    second, first = neg.operands[0], kept
    if not (_inner(second, chain) and _inner(first, chain)):
        return None
    s2, s1 = last_axis_slice(second.owner), last_axis_slice(first.owner)
    if s1 is None or s2 is None or s1[0] is not s2[0]:
        return None
    x = s1[0]
    d = _shape(x)[-1] if _shape(x) else 0
    if d % 2 or not is_float(x.type.element_type):
        return None
    want = (range(0, d, 2), range(1, d, 2)) if interleaved else (range(0, d // 2), range(d // 2, d))
    if (s1[1], s2[1]) != want:
        return None
    if interleaved and _shape(rot) != _shape(x):
        return None
    chain += [second.owner, first.owner]
    return x, interleaved, chain


def _product(v: SSAValue, chain: list[Operation]) -> tuple[SSAValue, SSAValue] | None:
    """(a, b) of v = Mul(a, b), when the Mul may be folded."""
    op = v.owner
    if not (isinstance(op, g.MulOp) and len(op.operands) == 2 and _inner(v, chain)):
        return None
    return op.operands[0], op.operands[1]


def match_rotary(add: g.AddOp) -> tuple[list[Operation], dict] | None:
    """The ops of a decomposed rotary embedding ending in `add`, in order, and the parts of
    the graph.rotary_embedding that replaces them; None if they do not form one."""
    if len(add.operands) != 2:
        return None
    for p, q in (add.operands, tuple(reversed(add.operands))):
        rotated, direct = _product(q, []), _product(p, [])
        if rotated is None or direct is None:
            continue
        for rot, sin in (rotated, tuple(reversed(rotated))):
            found = _rotation(rot)
            if found is None:
                continue
            x, interleaved, inner = found
            for xx, cos in (direct, tuple(reversed(direct))):
                if xx is not x or _shape(add.results[0]) != _shape(x):
                    continue
                if any(sole_user(v) is None for v in (p, q)):
                    continue
                # each op after its operands' producers (x is read by the slices and the
                # direct product: it stays)
                ops = [*reversed(inner), q.owner, p.owner, add]
                return ops, {"x": x, "cos": cos, "sin": sin, "interleaved": interleaved}
    return None


@dataclass
class _RotaryPattern(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.AddOp, rewriter: PatternRewriter) -> None:
        found = match_rotary(op)
        if found is None:
            return
        chain, parts = found
        try:
            new = g.RotaryEmbeddingOp.build_op([parts["x"], parts["cos"], parts["sin"]],
                                              interleaved=parts["interleaved"])
        except (g.ShapeError, ValueError):
            return  # cos / sin of another type or shape than the op takes
        replace_chain(chain, [new], rewriter)


@dataclass(frozen=True)
class RecognizeRotaryPass(ModulePass):
    """graph-recognize-rotary: slice / neg / concat / mul / add rotations -> graph.rotary_embedding."""

    name = "graph-recognize-rotary"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_RotaryPattern(), apply_recursively=False).rewrite_module(op)
