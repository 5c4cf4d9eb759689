"""graph-transpose-into-attention: a row permutation moves across a projection, into the
attention's addressing.

The dynamo exporter writes nn.MultiheadAttention sequence-first inside a batch-first model:

    x [B, S, E] -> transpose [S, B, E] -> q/k/v projection -> head views -> attention
      -> head merge [S * B, E] -> output projection -> [S, B, E] -> transpose [B, S, E]

The attention kernel reads q, k, v and writes its result through any chain of views and
transposes (lowering/templates/data.py, `Strided` / `Merged`), but a transpose next to a
projection is a data kernel of its own: the cube kernels read and write their rows in order.
A projection (a matmul by a 2-D weight, a gemm) computes each row alone, so a permutation of
its rows may sit on either side of it:

* `matmul(transpose(x, p), w)` -> `transpose(matmul(x, w), p)`, when p keeps the last axis,
  w is 2-D, and the product reaches nothing but q / k / v operands of graph.attention through
  views, transposes, slices and split parts;
* `transpose(reshape(y), p)` of `y = gemm(a, w, c)` (or a matmul by a 2-D weight) ->
  `reshape(gemm(reshape(transpose(reshape(a), p)), w, c))`, when the reshape only regroups
  y's rows, p keeps the last axis, c (if any) is one row broadcast, and a is an attention's
  result through views and transposes, each the only user of the one before.

Either way every product is the one it was, in another row order. The kernels may tile the
moved product otherwise (another K step), so an f32 sum may differ in its last bit (the
dynamo block in f32: 4.8e-7 at most; in fp16 the same bits). Anywhere else the moved
transpose would be a data kernel on the other side (on the wider side of the q/k/v
projection), so nothing else is rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from geir.dialects import graph as g
from geir.dialects.traits import ViewLike
from geir.passes.graph.utils import constant, hint, is_graph_output, replace_checked, sole_user, static_shape


def _perm(op: g.TransposeOp) -> tuple[int, ...]:
    rank = len(static_shape(op.operands[0].type) or ())
    return tuple(int(p) for p in (op.attrs()["perm"] or reversed(range(rank))))


def _row_permutation(op: Operation) -> tuple[int, ...] | None:
    """The perm of a transpose that keeps the last axis (it permutes whole rows)."""
    if not isinstance(op, g.TransposeOp):
        return None
    perm = _perm(op)
    return perm if perm and perm[-1] == len(perm) - 1 else None


def _reads_through(op: Operation) -> bool:
    return op.has_trait(ViewLike) or isinstance(op, g.TransposeOp | g.SliceOp | g.SplitOp)


def _feeds_attention_only(value: SSAValue) -> bool:
    """Every use of `value`, through views, transposes, slices and split parts, is a q, k or
    v operand of a graph.attention (at least one)."""
    stack, found = [value], False
    while stack:
        v = stack.pop()
        if not v.uses or is_graph_output(v):
            return False
        for use in v.uses:
            op = use.operation
            if isinstance(op, g.AttentionOp) and use.index < 3:
                found = True
            elif _reads_through(op) and use.index == 0:
                stack.extend(op.results)
            else:
                return False
    return found


def _written_by_attention(value: SSAValue) -> bool:
    """`value` is a graph.attention's result through views and transposes, each the only
    user of the one before."""
    while not isinstance(value.owner, g.AttentionOp):
        op = value.owner
        if not isinstance(op, Operation) or len(op.results) != 1 \
                or not (op.has_trait(ViewLike) or isinstance(op, g.TransposeOp)):
            return False
        value = op.operands[0]
        if sole_user(value) is not op or is_graph_output(value):
            return False
    return True


def _projection(op: Operation) -> bool:
    """A gemm without a transposed a, or a matmul by a 2-D b: each row of the result is
    computed from the same row of a alone."""
    if isinstance(op, g.GemmOp):
        return not op.attrs()["trans_a"]
    return isinstance(op, g.MatMulOp) and len(static_shape(op.inputs[1].type) or ()) == 2


class TransposeBeforeProjection(RewritePattern):
    """matmul(transpose(x, p), w) -> transpose(matmul(x, w), p) (the module docstring's rule)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.MatMulOp, rewriter: PatternRewriter) -> None:
        a, w = op.inputs
        t = a.owner
        perm = _row_permutation(t) if isinstance(t, Operation) else None
        if perm is None or not _projection(op) or sole_user(a) is not op or is_graph_output(a):
            return
        if not _feeds_attention_only(op.output):
            return
        product = g.MatMulOp.build_op([t.operands[0], w])
        product.location = op.location
        back = g.TransposeOp.build_op([product.results[0]], perm=perm)
        back.location = t.location
        back.results[0].name_hint = op.output.name_hint
        if replace_checked(op, [product, back], rewriter):
            rewriter.erase(t)


class TransposeAfterProjection(RewritePattern):
    """transpose(reshape(projection(a, ...)), p) -> reshape(projection(reshape(transpose(
    reshape(a), p)), ...)) (the module docstring's rule)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.TransposeOp, rewriter: PatternRewriter) -> None:
        perm = _row_permutation(op)
        if perm is None:
            return
        rows = op.operands[0]
        reshape = rows.owner if isinstance(rows.owner, g.ReshapeOp) else None
        y = reshape.operands[0] if reshape is not None else rows
        proj = y.owner
        if not isinstance(proj, Operation) or not _projection(proj):
            return
        for v, user in ((y, reshape or op), (rows, op)):
            if sole_user(v) is not user or is_graph_output(v):
                return
        a = proj.operands[0]
        ys, rs, a_shape = static_shape(y.type), static_shape(rows.type), static_shape(a.type)
        if ys is None or rs is None or a_shape is None or ys[-1] != rs[-1]:
            return
        if len(proj.operands) > 2:  # a gemm's c: one row for every row
            cs = static_shape(proj.operands[2].type)
            if cs is None or any(d != 1 for d in cs[:-1]):
                return
        if not _written_by_attention(a):
            return
        loc = op.location
        split = (*rs[:-1], a_shape[-1])  # a's rows as the transpose's input has them
        new: list[Operation] = []

        def reshaped(v: SSAValue, shape: tuple[int, ...], name: str | None) -> SSAValue:
            if static_shape(v.type) == shape:
                return v
            target = constant(np.array(shape, np.int64), loc, f"{name}_shape" if name else None)
            view = g.ReshapeOp.build_op([v, target])
            view.location = loc
            view.results[0].name_hint = name
            new.extend([target, view])
            return view.results[0]

        t = g.TransposeOp.build_op([reshaped(a, split, hint(a, "rows"))], perm=perm)
        t.location = loc
        t.results[0].name_hint = hint(a, "permuted")
        new.append(t)
        moved = reshaped(t.results[0], a_shape, hint(a, "permuted_rows"))
        again = type(proj).build_op([moved, *proj.operands[1:]], **proj.attrs())
        again.location = proj.location
        again.results[0].name_hint = y.name_hint
        new.append(again)
        reshaped(again.results[0], static_shape(op.results[0].type), op.results[0].name_hint)
        if replace_checked(op, new, rewriter):
            if reshape is not None:
                rewriter.erase(reshape)
            rewriter.erase(proj)


def transpose_into_attention(module: ModuleOp) -> bool:
    """Apply both rules to a fixed point; True if anything changed."""
    applier = GreedyRewritePatternApplier([TransposeBeforeProjection(), TransposeAfterProjection()])
    return PatternRewriteWalker(applier, apply_recursively=True).rewrite_module(module)


@dataclass(frozen=True)
class TransposeIntoAttentionPass(ModulePass):
    """Row permutations across q/k/v and output projections, into the attention's addressing."""

    name = "graph-transpose-into-attention"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        transpose_into_attention(op)
