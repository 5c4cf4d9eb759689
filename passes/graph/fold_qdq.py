"""graph-fold-qdq: dequantize -> conv / matmul / gemm into the int8 contraction.

A quantized model arrives as quantize -> dequantize pairs around float ops (ONNX QDQ, or the
pairs geir's calibration inserts). A contraction whose input and weights are dequantizes

    conv(dequantize(xq, sx, zx), dequantize(wq, sw, zw), b)

computes on the integers: it becomes

    dequantize(conv(xq, wq - zw, b'){offset_x = zx}, sx * sw)

with the weights' zero point folded into them (when the difference fits int8) and the input's
share in the int32 bias (b' = bq - zx * sum(w) per output channel; the padding holds zx, so it
adds nothing). A float bias per output channel is rounded into the int32 bias at the
accumulator's scale sx * sw, as quantize_static writes it: half an accumulator step off at
most, and the epilogue is left with the dequantize alone. The contraction then runs on the
cube in int8 and the dequantize (and whatever follows it, up to the next quantize) is its
epilogue. Conditions, each one a reason to leave
the op in float (still correct: its dequantizes stay): the input's parameters are per tensor
constants, the weights are an int8 / uint8 constant with parameters per tensor or per output
channel, a bias is a float constant or a dequantize of an int32 one at scale sx * sw.

Before that, uint8 becomes int8 (`RetypeUint8`): quantize(x, s, z) in uint8 minus 128 is
quantize(x, s, z - 128) in int8, the saturation range shifted with it, so a uint8 quantize whose
users are dequantizes, or integer contractions reading it as their input, is retyped and its
users adjusted (their zero point or offset_x shifted, the contraction's int32 bias raised by
128 * sum(w)). The cube multiplies int8 by int8.

A per-tensor quantize of a concat moves onto the concat's operands (`QuantizeConcatOperands`),
so each requantizes in its producer's kernel and the concat moves int8 (a concat read in float
too stays for those readers beside the int8 one); a quantize of a max
pool moves before the pool (`QuantizeMaxPoolInput`: both are monotone, so they commute
exactly), so the pool moves int8.

The int32 accumulator's way back to int8 (`FoldRequantize`): a quantize of a dequantized
accumulator, through f32 <-> f16 casts and at most one relu, each value read by the next op only,

    quantize([relu](dequantize(acc, s)), s_y, zp)  =>  requantize(acc, s / s_y, zp)

one multiply by an f32 scale per tensor or per channel, round, + zp, saturate: what the FIX pipe
does on the way out of L0C. s is a constant, the dequantize has no zero point, s_y is a positive
per-tensor constant and zp a per-tensor one. A relu commutes into the integers (s_y > 0):
quantize(relu(x)) = max(quantize(x), zp), which saturation already gives at the type's minimum
zp (-128, uint8 0: the relu goes) and a graph.relu on the int8 result gives at zp = 0; at another
zp the chain is left alone.

The requantize's scale is the f32 nearest s / s_y that the FIX pipe holds exactly: its
quantization stage reads a scale as a 19-bit float (10 mantissa bits; docs/ascend.md), so the
int8 kernels then compute what the graph computes (up to a rounding tie, which the FIX rounds
away from zero), and the scale moves by at most 2^-11 of itself.

Numerics: the integer products are exact; the float op summed products of rounded values, so
results differ from before by float rounding, and by at most half an accumulator step where a
float bias was rounded into the int32 one. A requantize drops the f16 roundings of the casts
and replaces x * s / s_y (two f32 roundings) by one multiply by the FIX-held s / s_y: an int8
result may move by one quantization step where its value lies within 2^-11 (relative) of a
rounding boundary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, f16, f32
from xdsl.ir import Attribute, OpResult, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from geir.dialects import attr_names
from geir.dialects.ascend import fix_scale_nearest
from geir.dialects import graph as g
from geir.ir.types import is_float, to_dtype
from geir.passes.graph.utils import constant, hint, merged_loc, replace_checked
from geir.target import op_info

_INT32 = np.iinfo(np.int32)
_I8, _U8 = g.INT8_TYPES


def _const(v: SSAValue | None) -> np.ndarray | None:
    return None if v is None else g.constant_value_of(v)


def _per_tensor(dq: g.DequantizeOp) -> tuple[float, int] | None:
    """(scale, zero point) of a dequantize whose parameters are one-element constants."""
    s = _const(dq.inputs[1])
    z = _const(dq.inputs[2]) if len(dq.inputs) > 2 else np.zeros((), np.int64)
    if s is None or z is None or s.size != 1 or z.size != 1:
        return None
    return float(s.reshape(())), int(z.reshape(()))


def _along(param: np.ndarray, shape: tuple[int, ...], axis: int) -> np.ndarray | None:
    """A parameter broadcast against `shape` as its vector along `axis` (length shape[axis]),
    or None if it varies along another axis or does not broadcast."""
    try:
        full = np.broadcast_to(param, shape)
    except ValueError:
        return None
    index = tuple(slice(None) if i == axis else 0 for i in range(len(shape)))
    vector = full[index]
    if not np.array_equal(full, np.broadcast_to(vector.reshape([-1 if i == axis else 1 for i in range(len(shape))]), shape)):
        return None
    return np.ascontiguousarray(vector)


@dataclass(frozen=True)
class _Weights:
    """The int8 weights of a contraction, their per-output-channel scale and the sum of each
    output channel's weights (the zero point's share)."""

    values: np.ndarray
    scale: np.ndarray
    sums: np.ndarray


def _weights(dq: g.DequantizeOp, axis: int) -> _Weights | None:
    w = _const(dq.inputs[0])
    s = _const(dq.inputs[1])
    z = _const(dq.inputs[2]) if len(dq.inputs) > 2 else np.zeros((), np.int64)
    if w is None or s is None or z is None or dq.inputs[0].type.element_type not in g.INT8_TYPES:
        return None
    scale = _along(np.asarray(s, np.float32), w.shape, axis)
    zero = _along(np.asarray(z, np.int64), w.shape, axis)
    if scale is None or zero is None:
        return None
    d = w.astype(np.int64) - zero.reshape([-1 if i == axis else 1 for i in range(w.ndim)])
    if d.size and (d.min() < -128 or d.max() > 127):
        return None
    moved = np.moveaxis(d, axis, 0)
    return _Weights(d.astype(np.int8), scale, moved.reshape(moved.shape[0], -1).sum(axis=1))


def _out_axis(op: Operation) -> int | None:
    """The weight axis that becomes the result's channel / column axis."""
    if isinstance(op, g.ConvOp):
        return 0
    if isinstance(op, g.GemmOp):
        return 0 if op.attrs()["trans_b"] else 1
    if isinstance(op, g.MatMulOp) and len(op.inputs[1].type.get_shape()) == 2:
        return 1
    return None


def _result_param(vector: np.ndarray, op: Operation) -> np.ndarray:
    """A per-output-channel vector shaped to broadcast against the contraction's result."""
    if vector.size == 1:
        return vector.reshape(())
    rank = len(op.results[0].type.get_shape())
    return vector.reshape([-1 if i == 1 else 1 for i in range(rank)]) if isinstance(op, g.ConvOp) else vector


class FoldContraction(RewritePattern):
    """conv / matmul / gemm on dequantized int8 input and weights: the int8 contraction and a
    dequantize of its int32 result."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.ConvOp | g.MatMulOp | g.GemmOp) or not is_float(op.results[0].type.element_type):
            return
        x_dq, w_dq = op.inputs[0].owner, op.inputs[1].owner
        if not isinstance(x_dq, g.DequantizeOp) or not isinstance(w_dq, g.DequantizeOp):
            return
        if x_dq.inputs[0].type.element_type not in g.INT8_TYPES:
            return
        axis = _out_axis(op)
        x_params = _per_tensor(x_dq)
        weights = _weights(w_dq, axis) if axis is not None else None
        if x_params is None or weights is None:
            return
        sx, zx = x_params
        attrs = op.attrs()
        alpha = attrs.get("alpha", 1.0) if isinstance(op, g.GemmOp) else 1.0
        acc_scale = (np.float32(sx) * weights.scale * np.float32(alpha)).astype(np.float32)  # alpha: a gemm's
        int_bias, float_bias = self._bias(op, acc_scale, alpha)
        if int_bias is False:
            return
        total = (np.zeros(weights.sums.shape, np.int64) if int_bias is None else int_bias) - zx * weights.sums
        if total.min(initial=0) < _INT32.min or total.max(initial=0) > _INT32.max:
            return
        out_elt = op.results[0].type.element_type
        f = to_dtype(out_elt)
        loc = op.location
        new: list[Operation] = [w := constant(weights.values, loc, hint(op.inputs[1], "int8"))]
        inputs: list[SSAValue] = [x_dq.inputs[0], w.output]
        needs_bias = int_bias is not None or zx != 0
        int_attrs = {k: v for k, v in attrs.items() if k not in ("alpha", "beta")}
        if needs_bias and not isinstance(op, g.MatMulOp):
            new.append(b := constant(total.astype(np.int32), loc, hint(op.results[0], "bias_int32")))
            inputs.append(b.output)
        if isinstance(op, g.ConvOp) and zx:
            int_attrs["offset_x"] = zx
        new.append(acc_op := type(op).build_op(inputs, **int_attrs))
        acc = acc_op.results[0]
        if isinstance(op, g.MatMulOp) and needs_bias:
            new.append(b := constant(total.astype(np.int32), loc, hint(op.results[0], "bias_int32")))
            new.append(add := g.AddOp.build_op([acc, b.output]))
            acc = add.output
        new.append(s := constant(_result_param(acc_scale.astype(f), op), loc,
                                 hint(op.results[0], "scale")))
        new.append(dq := g.DequantizeOp.build_op([acc, s.output]))
        if float_bias is not None:
            new.append(c := constant(float_bias.astype(f), loc, hint(op.results[0], "bias")))
            new.append(g.AddOp.build_op([dq.output, c.output]))
        for o in new:
            o.location = loc
        new[-1].results[0].name_hint = op.results[0].name_hint
        replace_checked(op, new, rewriter)

    @staticmethod
    def _bias(op: Operation, acc_scale: np.ndarray, alpha: float):
        """(int32 bias, float bias) of the contraction: an int32 constant dequantized at the
        accumulator's scale goes into the int8 op, and so does a per-channel float constant,
        rounded to that scale; another float constant (a gemm's [M, N] c) is added after the
        dequantize; (False, None) when neither (the op is left alone)."""
        if isinstance(op, g.MatMulOp) or len(op.inputs) < 3:
            return None, None
        b = op.inputs[2]
        beta = op.attrs().get("beta", 1.0) if isinstance(op, g.GemmOp) else 1.0
        owner = b.owner
        if (isinstance(owner, g.DequantizeOp) and beta == 1.0 and alpha == 1.0
                and owner.inputs[0].type.element_type == g.ACC_TYPE):
            q = _const(owner.inputs[0])
            s = _const(owner.inputs[1])
            z = _const(owner.inputs[2]) if len(owner.inputs) > 2 else np.zeros((), np.int64)
            if q is not None and s is not None and z is not None and not z.any() and q.ndim <= 1 and (
                    q.size in (1, acc_scale.size)):
                if np.allclose(np.broadcast_to(s.reshape(-1), acc_scale.shape), acc_scale, rtol=1e-6, atol=0):
                    return np.broadcast_to(q.reshape(-1), acc_scale.shape).astype(np.int64), None
        value = _const(b)
        if value is None:
            return False, None
        value = np.asarray(value) * np.asarray(beta, value.dtype)
        if value.ndim <= 1 and value.size in (1, acc_scale.size):
            # per output channel: into the int32 bias at the accumulator's scale (what
            # quantize_static writes), half an accumulator step off at most
            with np.errstate(all="ignore"):
                q = np.rint(np.broadcast_to(value.reshape(-1), acc_scale.shape).astype(np.float64) / acc_scale)
            if np.all(np.isfinite(q)) and np.abs(q).max(initial=0) < 2**31 - 2**24:
                return q.astype(np.int64), None
        if isinstance(op, g.ConvOp):
            value = value.reshape([-1 if i == 1 else 1 for i in range(len(op.results[0].type.get_shape()))])
        return None, value


class RetypeUint8(RewritePattern):
    """A uint8 quantize (or requantize) read only by dequantizes and integer contractions (as
    their input): int8 with the zero point moved by -128."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.QuantizeOp | g.RequantizeOp) or op.output.type.element_type != _U8:
            return
        zp = _const(op.inputs[2])
        users = [use.operation for use in op.output.uses]
        if zp is None or not users or not all(self._adjustable(u, op.output) for u in users):
            return
        loc = op.location
        z8 = constant((zp.astype(np.int16) - 128).astype(np.int8), loc, hint(op.inputs[2], "int8"))
        q8 = type(op).build_op([op.inputs[0], op.inputs[1], z8.output])
        q8.location = loc
        q8.output.name_hint = op.output.name_hint
        rewriter.insert([z8, q8], InsertPoint.before(op))
        for user in users:
            ops = self._retyped(user, q8.output)
            rewriter.replace(user, ops, [ops[-1].results[0]])
        rewriter.erase(op)

    @staticmethod
    def _adjustable(user: Operation, value: SSAValue) -> bool:
        if isinstance(user, g.DequantizeOp):
            return user.inputs[0] is value and len(user.inputs) == 3 and _const(user.inputs[2]) is not None
        if isinstance(user, g.ConvOp | g.GemmOp | g.MatMulOp) and g.is_integer_contraction(user):
            uses = [i for i, v in enumerate(user.inputs) if v is value]
            if uses != [0] or _out_axis(user) is None or _const(user.inputs[1]) is None:
                return False
            return len(user.inputs) < 3 or _const(user.inputs[2]) is not None
        return False

    @staticmethod
    def _retyped(user: Operation, new: SSAValue) -> list[Operation]:
        loc = user.location
        if isinstance(user, g.DequantizeOp):
            zp = _const(user.inputs[2]).astype(np.int16) - 128
            z = constant(zp.astype(np.int8), loc, hint(user.inputs[2], "int8"))
            dq = g.DequantizeOp.build_op([new, user.inputs[1], z.output])
            dq.location = loc
            dq.output.name_hint = user.output.name_hint
            return [z, dq]
        # sum(x_u8 w) = sum(x_s8 w) + 128 sum(w): the bias takes the difference
        w = _const(user.inputs[1]).astype(np.int64)
        axis = _out_axis(user)
        moved = np.moveaxis(w, axis, 0)
        sums = 128 * moved.reshape(moved.shape[0], -1).sum(axis=1)
        ops: list[Operation] = []
        attrs = user.attrs()
        if isinstance(user, g.ConvOp) and attrs.get("offset_x") is not None:
            attrs["offset_x"] = attrs["offset_x"] - 128
        elif isinstance(user, g.ConvOp):
            attrs["offset_x"] = -128  # the uint8 padding was 0
        if isinstance(user, g.MatMulOp):
            ops.append(mm := g.MatMulOp.build_op([new, user.inputs[1]]))
            ops.append(b := constant(sums.astype(np.int32), loc, hint(user.results[0], "bias_int32")))
            ops.append(g.AddOp.build_op([mm.output, b.output]))
        else:
            old_bias = _const(user.inputs[2]).astype(np.int64) if len(user.inputs) > 2 else 0
            total = np.broadcast_to(old_bias, sums.shape) + sums if np.ndim(old_bias) <= 1 else old_bias + sums
            ops.append(b := constant(total.astype(np.int32), loc, hint(user.results[0], "bias_int32")))
            ops.append(type(user).build_op([new, user.inputs[1], b.output], **attrs))
        for o in ops:
            o.location = loc
        ops[-1].results[0].name_hint = user.results[0].name_hint
        return ops


class QuantizeConcatOperands(RewritePattern):
    """quantize(concat(x1, .., xn), s, z) -> concat(quantize(x1, s, z), .., quantize(xn, s, z))
    for per-tensor s and z and a concat read by nothing else.

    Quantizing is elementwise with one scale, so it commutes with a concat exactly. Moved to
    the concat's operands, each quantize joins the kernel that produces its operand (an int8
    conv's epilogue requantizes), the concat moves int8 - where an output buffer lays the
    operands side by side, it moves nothing - and the quantize kernel of its own is gone
    (SqueezeNet's fire modules). A concat read in float too (Inception-v2's, whose average
    pool branch reads it) stays for those readers, and the int8 concat is a second one: its
    producers write both (an epilogue with two outputs), so the float concat is no longer read
    back and quantized by a kernel of its own on the way into the 1x1 convs. That needs every
    operand made by a kernel that can take the quantize: a function argument or a constant
    would get a quantize kernel of its own, one per operand where there was one."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.QuantizeOp) or op.attrs().get("saturate") is not None:
            return
        cat = op.inputs[0].owner
        if not isinstance(cat, g.ConcatOp):
            return
        if not cat.results[0].has_one_use() and any(
                not isinstance(x, OpResult) or isinstance(x.owner, g.ConstantOp) for x in cat.inputs):
            return
        scale, zero = op.inputs[1], op.inputs[2]
        if any(_const(v) is None or _const(v).size != 1 for v in (scale, zero)):
            return
        new: list[Operation] = []
        parts = []
        for x in cat.inputs:
            new.append(q := g.QuantizeOp.build_op([x, scale, zero]))
            q.location = x.owner.location if isinstance(x.owner, Operation) else op.location
            if x.name_hint:
                q.results[0].name_hint = f"{x.name_hint}_q"
            parts.append(q.results[0])
        new.append(joined := g.ConcatOp.build_op(parts, **cat.attrs()))
        joined.location = cat.location
        joined.results[0].name_hint = op.results[0].name_hint
        replace_checked(op, new, rewriter)


_CHAIN_FLOATS = (f32, f16)


def _per_tensor_equal(s: np.ndarray | None, z: np.ndarray | None, scale: SSAValue, zero: SSAValue) -> bool:
    """Whether the known per-tensor parameters (s, z) are the constants scale and zero."""
    qs, qz = _const(scale), _const(zero)
    return (s is not None and z is not None and qs is not None and qz is not None and s.size == 1 and z.size == 1
            and np.float32(s.reshape(())) == np.float32(qs.reshape(())) and int(z.reshape(())) == int(qz.reshape(())))


def _same_params(dq: g.DequantizeOp, scale: SSAValue, zero: SSAValue) -> bool:
    """A per-tensor dequantize of an int8 value at exactly this quantize's scale and zero point."""
    z = _const(dq.inputs[2]) if len(dq.inputs) > 2 else np.zeros((), np.int8)
    return (dq.inputs[0].type.element_type == zero.type.element_type and dq.inputs[0].type.element_type in g.INT8_TYPES
            and _per_tensor_equal(_const(dq.inputs[1]), z, scale, zero))


def _quantized_alike(x: SSAValue, cast: g.CastOp | None, scale: SSAValue, zero: SSAValue) -> bool:
    """Whether another reader of x already quantizes it (through the same float cast) at this
    scale and zero point: moved before the pool, the quantize is that one again (CSE), and
    the pool reads the int8 tensor the other layers read (Inception's pool branch, calibrated
    at its input's parameters: driver/quantize.py `share_max_pool_params`)."""
    for use in x.uses:
        user = use.operation
        if cast is None:
            readers = [user]
        elif isinstance(user, g.CastOp) and user.attrs() == cast.attrs():
            readers = [u.operation for u in user.results[0].uses]
        else:
            continue
        for q in readers:
            if isinstance(q, g.QuantizeOp) and q.attrs().get("saturate") is None \
                    and q.output.type.element_type == zero.type.element_type \
                    and _per_tensor_equal(_const(q.inputs[1]), _const(q.inputs[2]), scale, zero):
                return True
    return False


class QuantizeMaxPoolInput(RewritePattern):
    """quantize([cast](max_pool(x)), s, z) -> max_pool(quantize([cast](x), s, z)) for a
    positive per-tensor s and z, the max pool (and cast) read by nothing else.

    Quantizing is monotone (x / s rounded, + z, saturated; s > 0), and so is a float cast: the
    maximum of the quantized window is the quantized maximum, exactly, and a padded position
    holds the type's minimum, which never wins where -inf did not. Moved before the pool, the
    quantize meets the dequantized accumulator of the conv that feeds it and folds into that
    conv's requantize (`FoldRequantize`, on the FIX pipe): VGG's and ResNet's pools then move
    int8, and the quantize kernel after each pool is gone. Only where it folds so (the pool
    reads such a chain, or a concat only it reads, whose operands take the quantize in turn)
    or where x is quantized so already (`_quantized_alike`): elsewhere the quantize would just
    change places."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.QuantizeOp) or op.attrs().get("saturate") is not None:
            return
        scale, zero = op.inputs[1], op.inputs[2]
        s, z = _const(scale), _const(zero)
        if s is None or z is None or s.size != 1 or z.size != 1 or not (np.isfinite(s).all() and (s > 0).all()):
            return
        v, cast = op.inputs[0], None
        if isinstance(v.owner, g.CastOp) and v.has_one_use() and v.type.element_type in _CHAIN_FLOATS \
                and v.owner.inputs[0].type.element_type in _CHAIN_FLOATS:
            cast, v = v.owner, v.owner.inputs[0]
        pool = v.owner
        if not isinstance(pool, g.MaxPoolOp) or not v.has_one_use() or attr_names.KEEP in pool.attributes:
            return
        if not op_info.POOL.takes_type(op.output.type.element_type):
            return  # a pool kernel of this integer type (uint8: the reference's)
        x = pool.inputs[0]
        new: list[Operation] = []
        if isinstance(x.owner, g.DequantizeOp) and _same_params(x.owner, scale, zero):
            # quantize(max_pool(dequantize(xq))) at xq's own parameters is max_pool(xq): the
            # round trip gives xq back (onnxruntime's QDQ models quantize a max pool so)
            pooled = x.owner.inputs[0]
        else:
            chain = FoldRequantize.chain(x)
            folds = chain is not None and chain[0].inputs[0].type.element_type == g.ACC_TYPE
            if not folds and not (isinstance(x.owner, g.ConcatOp) and x.has_one_use()) \
                    and not _quantized_alike(x, cast, scale, zero):
                return  # the quantize would only change places
            pooled = x
            if cast is not None:
                new.append(c := g.CastOp.build_op([pooled], **cast.attrs()))
                c.location = cast.location
                pooled = c.results[0]
            new.append(q := g.QuantizeOp.build_op([pooled, scale, zero]))
            q.location = op.location
            q.results[0].name_hint = hint(x, "q")
            pooled = q.results[0]
        new.append(p := g.MaxPoolOp.build_op([pooled], **pool.attrs()))
        p.location = pool.location
        p.results[0].name_hint = op.output.name_hint
        if attr_names.KEEP in op.attributes:  # a tapped value stays tapped on the op that now makes it
            p.attributes[attr_names.KEEP] = op.attributes[attr_names.KEEP]
        if replace_checked(op, new, rewriter):
            for dead in (cast, pool, x.owner):
                if isinstance(dead, Operation) and dead.parent is not None and not any(r.uses for r in dead.results):
                    rewriter.erase(dead)


_MOVES = (g.ReshapeOp, g.TransposeOp, g.FlattenOp, g.SqueezeOp, g.UnsqueezeOp, g.IdentityOp)
"""Ops that only move or relabel elements (no padding, no new values): a per-tensor quantize
commutes with them exactly."""


class QuantizeDataMovement(RewritePattern):
    """quantize(m_k(..m_1(x)), s, z) -> m_k(..m_1(quantize(x, s, z))) for a per-tensor s and z
    and reshapes / transposes m_i each read by the next op only (ShuffleNet's channel shuffle:
    reshape, transpose, reshape). Quantizing one element at a time with one scale commutes
    with moving the elements, exactly. Only where the quantize then folds into the conv that
    makes x (`FoldRequantize`: x a dequantized accumulator): the shuffle then moves int8
    bytes and the quantize kernel after it is gone; elsewhere it would only change places."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.QuantizeOp) or op.attrs().get("saturate") is not None:
            return
        scale, zero = op.inputs[1], op.inputs[2]
        s, z = _const(scale), _const(zero)
        if s is None or z is None or s.size != 1 or z.size != 1:
            return
        moves: list[Operation] = []
        x = op.inputs[0]
        while isinstance(x.owner, _MOVES) and x.has_one_use() and attr_names.KEEP not in x.owner.attributes:
            moves.append(x.owner)
            x = x.owner.operands[0]
        if not moves:
            return
        if FoldRequantize.plan(x, scale, zero, op.output.type.element_type) is None:
            return  # the quantize would only change places
        new: list[Operation] = [q := g.QuantizeOp.build_op([x, scale, zero])]
        q.location = op.location
        q.results[0].name_hint = hint(x, "q")
        value = q.results[0]
        for m in reversed(moves):
            new.append(moved := type(m).build_op([value, *m.operands[1:]], **m.attrs()))
            moved.location = m.location
            value = moved.results[0]
            value.name_hint = hint(m.results[0], "q")
        value.name_hint = op.output.name_hint
        if attr_names.KEEP in op.attributes:  # a tapped value stays tapped on the op that now makes it
            new[-1].attributes[attr_names.KEEP] = op.attributes[attr_names.KEEP]
        if replace_checked(op, new, rewriter):
            for dead in moves:
                if dead.parent is not None and not any(r.uses for r in dead.results):
                    rewriter.erase(dead)


class FoldRequantize(RewritePattern):
    """quantize(x, s_y, zp) with x a dequantized int32 accumulator (through f32 <-> f16 casts
    and at most one relu, each value read by the next op only): requantize(acc, s / s_y, zp),
    and a graph.relu on it for a relu at zp = 0 (the module docstring)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.QuantizeOp) or op.attrs().get("saturate") is not None:
            return
        planned = self.plan(op.inputs[0], op.inputs[1], op.inputs[2], op.output.type.element_type)
        if planned is None:
            return
        chain, scale, keep_relu = planned
        acc, relu = chain[0].inputs[0], next((o for o in chain if isinstance(o, g.ReluOp)), None)
        loc = merged_loc(*(o for o in (*chain, op) if not (keep_relu and o is relu)))
        new: list[Operation] = [c := constant(scale, loc, hint(op.output, "scale"))]
        new.append(rq := g.RequantizeOp.build_op([acc, c.output, op.inputs[2]]))
        rq.location = loc
        if keep_relu:
            rq.output.name_hint = hint(op.output, "pre_relu")
            new.append(r := g.ReluOp.build_op([rq.output]))
            r.location = relu.location
        if attr_names.KEEP in op.attributes:
            new[-1].attributes[attr_names.KEEP] = op.attributes[attr_names.KEEP]
        new[-1].results[0].name_hint = op.output.name_hint
        if replace_checked(op, new, rewriter):
            for dead in reversed(chain):
                rewriter.erase(dead)

    @classmethod
    def plan(cls, x: SSAValue, scale: SSAValue, zero: SSAValue, out: Attribute
             ) -> tuple[list[Operation], np.ndarray, bool] | None:
        """How quantize(x, scale, zero) -> `out` folds: (the chain x comes from, the
        requantize's scale, whether a graph.relu stays after it), or None if it does not."""
        sy, zp = _const(scale), _const(zero)
        if out not in g.INT8_TYPES or sy is None or zp is None or sy.size != 1 or zp.size != 1:
            return None
        sy = np.float32(sy.reshape(()))
        if not (np.isfinite(sy) and sy > 0):
            return None
        chain = cls.chain(x)
        if chain is None:
            return None
        dq, relu = chain[0], next((o for o in chain if isinstance(o, g.ReluOp)), None)
        acc, s = dq.inputs[0], _const(dq.inputs[1])
        z = _const(dq.inputs[2]) if len(dq.inputs) > 2 else np.zeros((), np.int32)
        if acc.type.element_type != g.ACC_TYPE or s is None or z is None or z.any():
            return None
        if sum(d != 1 for d in s.shape) > 1:  # per tensor, or per channel along one axis
            return None
        with np.errstate(all="ignore"):  # a scale the FIX pipe holds exactly (10 mantissa bits)
            requant = fix_scale_nearest((s.astype(np.float64) / np.float64(sy)).astype(np.float32))
        if not np.all(np.isfinite(requant)):
            return None
        zero_point = int(zp.reshape(()))
        keep_relu = relu is not None and zero_point != np.iinfo(to_dtype(out)).min
        if keep_relu and zero_point != 0:
            return None  # max(quantize(x), zp) is neither saturation nor a relu
        return chain, requant, keep_relu

    @staticmethod
    def chain(v: SSAValue) -> list[Operation] | None:
        """The dequantize, casts and relu x comes from, in program order; None if another op
        is on the way, a value is read elsewhere (or tapped), or there are two relus."""
        chain: list[Operation] = []
        while True:
            owner = v.owner
            if not isinstance(owner, Operation) or not v.has_one_use() or attr_names.KEEP in owner.attributes \
                    or v.type.element_type not in _CHAIN_FLOATS:
                return None
            chain.append(owner)
            if isinstance(owner, g.DequantizeOp):
                return chain[::-1]
            if isinstance(owner, g.ReluOp) and not any(isinstance(o, g.ReluOp) for o in chain[:-1]):
                v = owner.inputs[0]
            elif isinstance(owner, g.CastOp) and owner.inputs[0].type.element_type in _CHAIN_FLOATS:
                v = owner.inputs[0]
            else:
                return None


def fold_qdq(module: ModuleOp) -> bool:
    """uint8 to int8, quantizes onto a concat's operands, then every contraction and
    requantization that folds; True if anything changed."""
    return PatternRewriteWalker(
        GreedyRewritePatternApplier([RetypeUint8(), QuantizeConcatOperands(), QuantizeMaxPoolInput(),
                                     QuantizeDataMovement(), FoldContraction(), FoldRequantize()]),
        apply_recursively=True,
    ).rewrite_module(module)


@dataclass(frozen=True)
class FoldQdqPass(ModulePass):
    """dequantize -> conv / matmul / gemm into int8 contractions with a dequantize epilogue,
    dequantize -> quantize of their accumulators into requantizes."""

    name = "graph-fold-qdq"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_qdq(op)
