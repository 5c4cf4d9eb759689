"""graph-fold-transpose: fold cheap neighbours into the attributes and weights of cube ops.

A separate Transpose, Pad or per-channel Mul/Add is a whole pass over memory
on the device; the cube op next to it can do the same work for free:

* gemm(transpose(a)) / gemm(.., transpose(b)) of a 2-D transpose: flip
  `trans_a` / `trans_b` and read the transpose's input.
* matmul with an operand that swaps its last two dims: a constant is
  pre-transposed (the transposed weight becomes the constant); with 2-D
  operands the matmul becomes a gemm with the transpose flags.
* pad (mode constant, spatial dims only, non-negative) into the pads of the
  following conv (pad value 0), avg_pool (value 0, count_include_pad=1) or
  max_pool (value -inf, or the integer minimum). Not with ceil_mode: the
  output-size rule of ceil_mode depends on where the padding ends, so an
  explicit pad and the window's own pads differ there.
* mul / add by a per-channel constant ([C,1,1], [1,C,1,1], a scalar) into the
  preceding conv when the conv result has no other user and its weight and
  bias are constants: w * s, b * s (mul) or b + t (add).

Rewritten ops carry the fused names of every op they replace. The weight
products differ from the unfused results by rounding only.
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
from geir.dialects.types import is_float, to_dtype
from geir.passes.graph.utils import (
    channel_vector,
    constant,
    hint,
    merged_loc,
    replace_checked,
    sole_user,
    static_shape,
)


def swaps_last_two(value: SSAValue) -> g.TransposeOp | None:
    """The transpose defining `value` if it swaps the last two dims (and nothing else)."""
    t = value.owner
    if not isinstance(t, g.TransposeOp):
        return None
    rank = len(t.inputs[0].type.get_shape())
    perm = t.attrs()["perm"] or tuple(reversed(range(rank)))
    want = (*range(rank - 2), rank - 1, rank - 2)
    return t if rank >= 2 and tuple(perm) == want else None


class GemmTransposeFlags(RewritePattern):
    """gemm of a transposed matrix: flip the trans flag instead."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.GemmOp, rewriter: PatternRewriter) -> None:
        attrs = op.attrs()
        inputs = list(op.inputs)
        absorbed: list[Operation] = []
        for i, flag in ((0, "trans_a"), (1, "trans_b")):
            t = swaps_last_two(inputs[i])
            if t is not None:
                inputs[i] = t.inputs[0]
                attrs[flag] = 1 - attrs[flag]
                absorbed.append(t)
        if not absorbed:
            return
        new = g.GemmOp.build_op(inputs, **attrs)
        new.location = merged_loc(*absorbed, op)
        replace_checked(op, [new], rewriter)


class MatMulTranspose(RewritePattern):
    """matmul of an operand transposed in its last two dims."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.MatMulOp, rewriter: PatternRewriter) -> None:
        inputs = list(op.inputs)
        flags = [0, 0]
        absorbed: list[Operation] = []
        consts: list[Operation] = []
        for i in (0, 1):
            t = swaps_last_two(inputs[i])
            if t is None:
                continue
            w = g.constant_value_of(t.inputs[0])
            if w is not None:
                c = constant(np.swapaxes(w, -1, -2), t.location, hint(t.inputs[0], "t"))
                consts.append(c)
                inputs[i] = c.output
                absorbed.append(t)
            elif all(len(v.type.get_shape()) == 2 for v in op.inputs):
                inputs[i] = t.inputs[0]
                flags[i] = 1
                absorbed.append(t)
        if not absorbed:
            return
        if any(flags):
            new = g.GemmOp.build_op(inputs, trans_a=flags[0], trans_b=flags[1])
        else:
            new = g.MatMulOp.build_op(inputs)
        new.location = merged_loc(*absorbed, op)
        replace_checked(op, [*consts, new], rewriter)


def _lowest(dtype: np.dtype) -> float | int:
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


class PadIntoWindow(RewritePattern):
    """pad -> conv / avg_pool / max_pool: into the window op's pads."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.ConvOp | g.AvgPoolOp | g.MaxPoolOp, rewriter: PatternRewriter) -> None:
        pad = op.inputs[0].owner
        if not isinstance(pad, g.PadOp) or pad.attrs()["mode"] != "constant":
            return
        attrs = op.attrs()
        if isinstance(op, g.AvgPoolOp | g.MaxPoolOp) and attrs["ceil_mode"]:
            return
        if isinstance(op, g.AvgPoolOp) and not attrs["count_include_pad"]:
            return
        x = pad.inputs[0]
        shape = static_shape(x.type)
        widths = self._widths(pad, len(shape)) if shape is not None else None
        if widths is None or any(widths[0][:2]) or any(widths[1][:2]):
            return
        value = self._value(pad)
        want = _lowest(to_dtype(x.type.element_type)) if isinstance(op, g.MaxPoolOp) else 0
        if value is None or value != want:
            return
        n = len(shape) - 2
        old = attrs["pads"] or (0,) * (2 * n)
        attrs["pads"] = tuple(o + p for o, p in zip(old, (*widths[0][2:], *widths[1][2:])))
        new = type(op).build_op([x, *op.inputs[1:]], **attrs)
        new.location = merged_loc(pad, op)
        replace_checked(op, [new], rewriter)

    @staticmethod
    def _widths(pad: g.PadOp, rank: int) -> tuple[list[int], list[int]] | None:
        """(begin, end) per dim, if the pads (and axes) are constants and non-negative."""
        pads = g.constant_value_of(pad.inputs[1])
        axes = g.constant_value_of(pad.inputs[3]) if len(pad.inputs) > 3 else np.arange(rank)
        if pads is None or axes is None:
            return None
        pads, axes = [int(v) for v in pads.reshape(-1)], [int(a) % rank for a in axes.reshape(-1)]
        if len(pads) != 2 * len(axes) or any(p < 0 for p in pads):
            return None
        begin, end = [0] * rank, [0] * rank
        for i, a in enumerate(axes):
            begin[a], end[a] = pads[i], pads[i + len(axes)]
        return begin, end

    @staticmethod
    def _value(pad: g.PadOp) -> float | None:
        if len(pad.inputs) < 3:
            return 0
        v = g.constant_value_of(pad.inputs[2])
        if v is None:
            return None
        return 0 if v.size == 0 else v.reshape(-1)[0].item()


class ChannelAffineIntoConv(RewritePattern):
    """conv -> mul / add by a per-channel constant: into the conv's weight and bias."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.MulOp | g.AddOp, rewriter: PatternRewriter) -> None:
        lhs, rhs = op.inputs
        for conv, k in ((lhs.owner, rhs), (rhs.owner, lhs)):
            if isinstance(conv, g.ConvOp) and sole_user(conv.output) is op:
                break
        else:
            return
        k = g.constant_value_of(k)
        w = g.constant_value_of(conv.inputs[1])
        shape = static_shape(conv.output.type)
        if k is None or w is None or shape is None or op.output.type != conv.output.type:
            return
        b = g.constant_value_of(conv.inputs[2]) if len(conv.inputs) > 2 else np.zeros(w.shape[0], w.dtype)
        vec = channel_vector(k, shape)
        if b is None or vec is None or not is_float(conv.output.type.element_type):
            return
        if isinstance(op, g.MulOp):
            w, b = w * vec.reshape((-1,) + (1,) * (w.ndim - 1)), b * vec
        else:
            b = b + vec
        loc = merged_loc(conv, op)
        w_op = constant(w, loc, hint(conv.inputs[1], "folded"))
        name = hint(conv.inputs[2], "folded") if len(conv.inputs) > 2 else hint(conv.output, "bias")
        b_op = constant(b, loc, name)
        new = g.ConvOp.build_op([conv.inputs[0], w_op, b_op], **conv.attrs())
        new.location = loc
        replace_checked(op, [w_op, b_op, new], rewriter)


def fold_transpose(module: ModuleOp) -> bool:
    """Apply every rule to a fixed point; True if anything changed."""
    applier = GreedyRewritePatternApplier(
        [GemmTransposeFlags(), MatMulTranspose(), PadIntoWindow(), ChannelAffineIntoConv()]
    )
    return PatternRewriteWalker(applier, apply_recursively=True).rewrite_module(module)


@dataclass(frozen=True)
class FoldTransposePass(ModulePass):
    """Transposes into gemm flags / pre-transposed weights, pads and per-channel mul/add into convs and pools."""

    name = "graph-fold-transpose"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_transpose(op)
