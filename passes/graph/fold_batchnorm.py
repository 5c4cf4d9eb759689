"""graph-fold-batchnorm: inference BatchNorm into the weights before it.

At inference BatchNorm is a per-channel affine map y = x * a + c with
a = scale / sqrt(var + eps) and c = bias - mean * a. It disappears into the
op that feeds it when that op's result has no other user and its weights are
constants (phase 1):

* conv(x, w, b) -> bn:  conv(x, w * a[:, None, ...], (b - mean) * a + bias)
* gemm(a, b, c) -> bn:  the columns of op(b) scaled by a, the new c is
  beta * c * a + c_bn (beta becomes 1)
* matmul(x, w) -> bn with 2-D x and w: gemm(x, w * a, c_bn)
* bn -> mul / add by a per-channel constant (Caffe's BatchNorm + Scale): the
  constant goes into the BatchNorm's scale and bias.

Every BatchNorm left (its producer has other users or non-constant weights)
becomes mul + add by constant [C, 1, ..., 1] tensors (phase 2), which later
passes can fold or fuse like any elementwise op. BatchNorm parameters must be
constants in every case. The rewritten ops carry the fused names of both.

Numerics: the same arithmetic as the reference kernel in another order, so
results differ by rounding only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from geir.dialects import graph as g
from geir.reference.affine import batch_norm_affine, conv_weights_with_affine
from geir.passes.graph.utils import (
    channel_vector,
    constant,
    hint,
    merged_loc,
    replace_checked,
    per_channel_shape,
    sole_user,
    static_shape,
)


def affine(bn: g.BatchNormOp) -> tuple[np.ndarray, np.ndarray] | None:
    """(a, c) with bn(x) = x * a + c per channel, if all parameters are constants."""
    params = [g.constant_value_of(v) for v in bn.inputs[1:]]
    if any(p is None for p in params):
        return None
    return batch_norm_affine(*params, bn.attrs()["epsilon"])


class FoldIntoConv(RewritePattern):
    """conv -> batch_norm: scale the filters, shift the bias."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: g.BatchNormOp, rewriter: PatternRewriter) -> None:
        conv = bn.inputs[0].owner
        if not isinstance(conv, g.ConvOp) or sole_user(conv.output) is not bn:
            return
        ac = affine(bn)
        w = g.constant_value_of(conv.inputs[1])
        b = g.constant_value_of(conv.inputs[2]) if len(conv.inputs) > 2 else None
        if ac is None or w is None or (len(conv.inputs) > 2 and b is None):
            return
        folded = conv_weights_with_affine(w, b, *ac)
        if folded is None:
            return
        loc = merged_loc(conv, bn)
        w2 = constant(folded[0], loc, hint(conv.inputs[1], "folded"))
        name = hint(conv.inputs[2], "folded") if len(conv.inputs) > 2 else hint(conv.output, "bias")
        b2 = constant(folded[1], loc, name)
        new = g.ConvOp.build_op([conv.inputs[0], w2, b2], **conv.attrs())
        new.location = loc
        replace_checked(bn, [w2, b2, new], rewriter)


class FoldIntoGemm(RewritePattern):
    """gemm / 2-D matmul with constant weights -> batch_norm: scale the weight columns."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: g.BatchNormOp, rewriter: PatternRewriter) -> None:
        prod = bn.inputs[0].owner
        if not isinstance(prod, g.GemmOp | g.MatMulOp) or sole_user(prod.output) is not bn:
            return
        ac = affine(bn)
        w = g.constant_value_of(prod.inputs[1])
        if ac is None or w is None or w.ndim != 2:
            return
        a, c = ac
        loc = merged_loc(prod, bn)
        if isinstance(prod, g.MatMulOp):
            if len(prod.inputs[0].type.get_shape()) != 2:
                return
            attrs = {}
            w2, c2 = w * a, c
        else:
            attrs = prod.attrs()
            w2 = w * (a[:, None] if attrs["trans_b"] else a)
            bias = g.constant_value_of(prod.inputs[2]) if len(prod.inputs) > 2 else None
            if len(prod.inputs) > 2 and bias is None:
                return
            has_c = bias is not None and attrs["beta"] != 0.0
            c2 = (np.asarray(attrs["beta"], bias.dtype) * bias * a + c) if has_c else c
            attrs["beta"] = 1.0
        w_op = constant(w2, loc, hint(prod.inputs[1], "folded"))
        name = hint(prod.inputs[2], "folded") if len(prod.inputs) > 2 else hint(prod.output, "bias")
        c_op = constant(c2, loc, name)
        new = g.GemmOp.build_op([prod.inputs[0], w_op, c_op], **attrs)
        new.location = loc
        replace_checked(bn, [w_op, c_op, new], rewriter)


class AbsorbScale(RewritePattern):
    """batch_norm -> mul / add by a per-channel constant: into the BatchNorm's scale and bias."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.MulOp | g.AddOp, rewriter: PatternRewriter) -> None:
        lhs, rhs = op.inputs
        for bn, k in ((lhs.owner, rhs), (rhs.owner, lhs)):
            if isinstance(bn, g.BatchNormOp) and sole_user(bn.output) is op:
                break
        else:
            return
        k = g.constant_value_of(k)
        shape = static_shape(bn.output.type)
        params = [g.constant_value_of(v) for v in bn.inputs[1:]]
        if k is None or shape is None or op.output.type != bn.output.type or any(p is None for p in params):
            return
        vec = channel_vector(k, shape)
        if vec is None:
            return
        scale, bias, mean, var = params
        if isinstance(op, g.MulOp):
            scale, bias = scale * vec, bias * vec
        else:
            bias = bias + vec
        loc = merged_loc(bn, op)
        s_op = constant(scale, loc, hint(bn.inputs[1], "folded"))
        b_op = constant(bias, loc, hint(bn.inputs[2], "folded"))
        new = g.BatchNormOp.build_op([bn.inputs[0], s_op, b_op, bn.inputs[3], bn.inputs[4]], **bn.attrs())
        new.location = loc
        replace_checked(op, [s_op, b_op, new], rewriter)


class BatchNormToAffine(RewritePattern):
    """A standalone batch_norm: mul + add by constant per-channel tensors."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: g.BatchNormOp, rewriter: PatternRewriter) -> None:
        ac = affine(bn)
        if ac is None:
            return
        a, c = ac
        shape = per_channel_shape(len(a), len(bn.output.type.get_shape()))
        loc = bn.location
        a_op = constant(a.reshape(shape), loc, hint(bn.output, "scale"))
        c_op = constant(c.reshape(shape), loc, hint(bn.output, "shift"))
        mul = g.MulOp.build_op([bn.inputs[0], a_op])
        mul.output.name_hint = hint(bn.output, "scaled")
        add = g.AddOp.build_op([mul, c_op])
        mul.location = add.location = loc
        replace_checked(bn, [a_op, c_op, mul, add], rewriter)


def fold_batchnorm(module: ModuleOp) -> bool:
    """Both phases to a fixed point; True if anything changed."""
    changed = PatternRewriteWalker(
        GreedyRewritePatternApplier([FoldIntoConv(), FoldIntoGemm(), AbsorbScale()]), apply_recursively=True
    ).rewrite_module(module)
    changed |= PatternRewriteWalker(
        GreedyRewritePatternApplier([BatchNormToAffine()]), apply_recursively=True
    ).rewrite_module(module)
    return changed


@dataclass(frozen=True)
class FoldBatchNormPass(ModulePass):
    """Inference BatchNorm into a preceding conv/gemm/matmul, else mul + add."""

    name = "graph-fold-batchnorm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_batchnorm(op)
