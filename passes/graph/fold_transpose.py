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
* scalars out of matmul / gemm operands: gemm(a * s, b) becomes a gemm with
  alpha * s; matmul(x * s, w / t) with a constant w only it reads becomes
  matmul(x, w * s / t) (one op still computes the matmul's tensor); any other
  matmul(x * s, y / t) becomes matmul(x, y) * (s / t), as XLA's algebraic
  simplifier does for dot. The operand then sits next to the cube op, so a
  transpose before it and the scale after it land in the cube kernel (the
  attention's q * s @ transpose(k) * s). Only a constant with one element
  whose broadcast leaves the operand's type alone (a per-row or per-column
  scale is not a scalar), a mul / div with no other user and no `graph.keep`,
  a div by a non-zero constant, and f32 / f64 (gemm: f32, alpha is an f32
  attribute). Not f16: the scale before the product is what keeps it in the
  f16 range (1/sqrt(sqrt(d)) on each side of QK^T); not integers, whose
  wrapped x * s does not commute with a wider accumulator.

Rewritten ops carry the fused names of every op they replace. The weight
products and the moved scalars differ from the unfused results by rounding only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import Float32Type, Float64Type, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from geir.dialects import graph as g
from geir.ir.types import is_float, is_float_dtype, to_dtype
from geir.passes.graph.utils import (
    channel_vector,
    constant,
    hint,
    located,
    merged_loc,
    replace_checked,
    sole_user,
    static_shape,
)
from geir.dialects import attr_names


def swaps_last_two(value: SSAValue) -> g.TransposeOp | None:
    """The transpose defining `value` if it swaps the last two dims (and nothing else)."""
    t = value.owner
    return t if isinstance(t, g.TransposeOp) and t.swaps_last_two() else None


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
    return -np.inf if is_float_dtype(dtype) else np.iinfo(dtype).min


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




@dataclass(frozen=True)
class ScalarFactor:
    """An operand that is `value` * `factor`, computed by the mul / div `op` by `scale`."""

    value: SSAValue
    factor: float
    op: Operation
    scale: SSAValue


def _one_element(value: SSAValue) -> np.ndarray | None:
    k = g.constant_value_of(value)
    return k if k is not None and k.size == 1 else None


def scalar_factor(operand: SSAValue, user: Operation) -> ScalarFactor | None:
    """`operand` as x * k, k * x or x / k (k a one-element constant, not 0 for a
    div) when only `user` reads it and the broadcast leaves x's type alone."""
    op = operand.owner
    if not isinstance(op, g.MulOp | g.DivOp) or attr_names.KEEP in op.attributes or sole_user(operand) is not user:
        return None
    lhs, rhs = op.inputs
    pairs = ((lhs, rhs), (rhs, lhs)) if isinstance(op, g.MulOp) else ((lhs, rhs),)
    for x, k in pairs:
        array = _one_element(k)
        if array is None or x.type != operand.type:
            continue
        v = float(array.reshape(()))
        if isinstance(op, g.MulOp):
            return ScalarFactor(x, v, op, k)
        return ScalarFactor(x, 1.0 / v, op, k) if v != 0.0 else None
    return None


def _movable(type_: Attribute, gemm: bool) -> bool:
    """f32 (and f64 for matmul; gemm's alpha is an f32 attribute): see the module docstring."""
    if not isinstance(type_, TensorType):
        return False
    elt = type_.element_type
    return isinstance(elt, Float32Type) or (not gemm and isinstance(elt, Float64Type))


class ScalarOutOfMatMul(RewritePattern):
    """matmul / gemm of operands scaled by constants: the scale on the product.

    Into gemm's alpha; into a constant operand only this matmul reads (one op
    still computes the matmul's tensor); else one mul after the product."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.MatMulOp | g.GemmOp, rewriter: PatternRewriter) -> None:
        gemm = isinstance(op, g.GemmOp)
        if not _movable(op.output.type, gemm):
            return
        inputs = list(op.inputs)
        factors: list[ScalarFactor] = []
        for i in (0, 1):
            f = scalar_factor(inputs[i], op)
            if f is not None:
                inputs[i] = f.value
                factors.append(f)
        if not factors:
            return
        scale = math.prod(f.factor for f in factors)
        loc = merged_loc(*(f.op for f in factors), op)
        if gemm:
            attrs = op.attrs()
            attrs["alpha"] *= scale
            new_ops = [located(g.GemmOp.build_op(inputs, **attrs), loc)]
        elif (w := self._weight(inputs, op, factors)) is not None:
            c = constant((g.constant_value_of(inputs[w]) * scale).astype(_dtype(op)), loc, hint(inputs[w], "scaled"))
            inputs[w] = c.output
            new_ops = [c, located(g.MatMulOp.build_op(inputs), loc)]
        else:
            new_ops = self._scaled_product(op, inputs, factors, scale, loc)
        replace_checked(op, new_ops, rewriter)

    @staticmethod
    def _weight(inputs: list[SSAValue], op: Operation, factors: list[ScalarFactor]) -> int | None:
        """The index of a constant operand nothing but `op` and its dropped scales
        reads (the right one first): it is scaled, not copied."""
        readers = {op, *(f.op for f in factors)}
        for i in (1, 0):
            if g.constant_value_of(inputs[i]) is not None and all(u.operation in readers for u in inputs[i].uses):
                return i
        return None

    @staticmethod
    def _scaled_product(
        op: g.MatMulOp, inputs: list[SSAValue], factors: list[ScalarFactor], scale: float, loc: Attribute
    ) -> list[Operation]:
        """matmul(inputs) * scale, the scale a one-element constant of the lowest rank
        among the old scales (at most the product's, so it broadcasts to it unchanged)."""
        product = located(g.MatMulOp.build_op(inputs), loc)
        product.output.name_hint = hint(op.output, "unscaled")
        rank = min(*(len(f.scale.type.get_shape()) for f in factors), len(op.output.type.get_shape()))
        k = constant(np.full((1,) * rank, scale, _dtype(op)), loc, hint(factors[0].scale, "product"))
        return [product, k, located(g.MulOp.build_op([product, k]), loc)]


def _dtype(op: Operation) -> np.dtype:
    return to_dtype(op.results[0].type.element_type)


def fold_transpose(module: ModuleOp) -> bool:
    """Apply every rule to a fixed point; True if anything changed."""
    applier = GreedyRewritePatternApplier(
        [
            GemmTransposeFlags(),
            MatMulTranspose(),
            ScalarOutOfMatMul(),
            PadIntoWindow(),
            ChannelAffineIntoConv(),
        ]
    )
    return PatternRewriteWalker(applier, apply_recursively=True).rewrite_module(module)


@dataclass(frozen=True)
class FoldTransposePass(ModulePass):
    """Transposes into gemm flags / pre-transposed weights, pads and per-channel mul/add
    into convs and pools, scalar operand scales after matmuls / into gemm alpha."""

    name = "graph-fold-transpose"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_transpose(op)
