"""Row-template rules for graph.quantize, graph.dequantize and graph.requantize, op for op as
reference/graph.py computes them (in f32):

    quantize:   vdiv(x, scale) -> vround (half to even) -> + zero point -> clamp to the
                zero point type's range -> vcast (exact: the values are integers in range)
    dequantize: vcast(x) to f32 -> - zero point -> * scale -> vcast to the scale's type
    requantize: vcast(acc) to f32 -> * scale -> vround -> + zero point -> clamp -> vcast

The scale of a quantize is divided by, not multiplied by its reciprocal: x * (1 / s) is not
always the f32 x / s the reference rounds. Integer operands are converted with vcast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects.builtin import StringAttr, f32
from xdsl.ir import Attribute, Operation, SSAValue

from geir.dialects import ascend as a
from geir.dialects import formats
from geir.dialects import graph as g
from geir.dialects.traits import ViewLike
from geir.ir.types import is_float, to_dtype
from geir.lowering.templates.vector.space import Reject

if TYPE_CHECKING:
    from geir.lowering.templates.common import KernelBuilder
    from geir.lowering.templates.vector.body import Body


def integer_range(elt) -> tuple[int, int]:
    """The values of an integer element type (a quantize's saturation bounds)."""
    info = np.iinfo(to_dtype(elt))
    return int(info.min), int(info.max)


@dataclass(frozen=True)
class Quantize:
    """A quantize of a vector template's own result (a pool's, an LRN's: graph-fuse's
    pool-quantize and lrn-quantize): rint(x / `scale`) + `zero_point`, clamped to [`lo`,
    `hi`], stored as `elt`."""

    scale: float
    zero_point: float
    lo: int
    hi: int
    elt: Attribute

    @classmethod
    def of(cls, op: Operation, ops: Sequence[Operation]) -> Quantize | None:
        """The quantize `ops` (float casts and views, then a quantize by one known scale > 0 and
        zero point) make of op's result, or None. A view (a reshape) keeps the NCHW result's
        bytes in their order, so the kernel writes the quantized result as op's shape."""
        *casts, q = ops
        value = op.results[0]
        for c in casts:
            if c.operands[0] is not value or not (
                    c.has_trait(ViewLike) or isinstance(c, g.CastOp) and is_float(c.results[0].type.element_type)):
                return None
            value = c.results[0]
        if not isinstance(q, g.QuantizeOp) or q.operands[0] is not value:
            return None
        scale, zp = (g.constant_value_of(v) for v in q.operands[1:])
        elt = q.results[0].type.element_type
        if scale is None or zp is None or scale.size != 1 or zp.size != 1 or not float(scale.reshape(-1)[0]) > 0:
            return None
        if is_float(elt) or to_dtype(elt).itemsize != 1:
            return None
        return cls(float(scale.reshape(-1)[0]), float(zp.reshape(-1)[0]), *integer_range(elt), elt)

    def emit(self, kb: KernelBuilder, wide: SSAValue, scale: SSAValue) -> None:
        """The f32 tile `wide` -> its quantized values, in place: `vdiv` by `scale` (an f32 tile
        of wide's shape, filled here), `vround` (half to even), + zero point, the clamp - the
        graph's quantize, so a `vcast {round = "rint"}` then converts them exactly."""
        kb.vec(a.VdupOp, kb.scalar(self.scale, f32), scale)
        kb.vec(a.VdivOp, wide, scale, wide)
        kb.vec(a.VroundOp, wide, wide)
        if self.zero_point:
            kb.vec(a.VaddsOp, wide, kb.scalar(self.zero_point, f32), wide)
        kb.vec(a.VmaxsOp, wide, kb.scalar(float(self.lo), f32), wide)
        kb.vec(a.VminsOp, wide, kb.scalar(float(self.hi), f32), wide)


def quantized_outputs(op: Operation, rest: Sequence[Operation],
                      outputs: Sequence[SSAValue]) -> tuple[Quantize | None, bool, int] | None:
    """How a template computing `op`, then `rest` (nothing, or the quantize of op's result:
    `Quantize.of`), writes the request's `outputs`: (the quantize or None, whether op's float
    result is written too, the index of the output op's - quantized - result goes to); None
    when the outputs are not those (one, or the quantized result beside op's own, both plain)."""
    keep = bool(rest) and len(outputs) == 2 and op.results[0] in outputs
    if len(outputs) != 1 + keep:
        return None
    if not rest:
        return None, False, 0
    quant = Quantize.of(op, rest)
    if quant is None or rest[-1].results[0] not in outputs or any(formats.is_formatted(v.type) for v in outputs):
        return None
    return quant, keep, list(outputs).index(rest[-1].results[0])


def check(op: Operation) -> None:
    """What the rules take: f32 / f16 floats, integer quantized values."""
    if isinstance(op, g.QuantizeOp) and not is_float(op.operands[0].type.element_type):
        raise Reject
    if isinstance(op, g.DequantizeOp) and not is_float(op.results[0].type.element_type):
        raise Reject
    if isinstance(op, g.RequantizeOp) and (op.operands[0].type.element_type != g.ACC_TYPE
                                           or formats.is_formatted(op.results[0].type)):
        raise Reject  # blocked, the i32 and int8 arrays have different C0: the int8 conv's FIX pipe writes it


def _in_f32(body: Body, v: SSAValue, shape: list[int]) -> SSAValue:
    """v's tile broadcast to `shape`, as f32 (a constant scalar vdup'ed)."""
    if v in body.row.scalars:
        return body.dup(body.row.scalars[v], shape, f32)
    t = body.operand(v, shape)
    if t.type.element_type == f32:
        return t
    w = body.temp(shape, f32)
    body.kb.vec(a.VcastOp, t, w)
    return w


def _plus_zero_point(body: Body, t: SSAValue, zp: SSAValue, shape: list[int], subtract: bool) -> None:
    """t += zp (or t -= zp) in f32; a constant zero point as an immediate (none if zero)."""
    kb = body.kb
    if zp in body.row.scalars:
        z = float(body.row.scalars[zp])
        if z:
            kb.vec(a.VaddsOp, t, body.scalar(-z if subtract else z, f32), t)
        return
    zt = _in_f32(body, zp, shape)
    kb.vec(a.VsubOp if subtract else a.VaddOp, t, zt, t)


def _store(body: Body, op: Operation, t: SSAValue, rounding: str | None) -> None:
    """The f32 tile t into the op's result (converted when its type is another)."""
    dst = body.result(op)
    if dst.type.element_type == f32:
        body.kb.vec(a.VcopyOp, t, dst)
    else:
        props = {"round": StringAttr(rounding)} if rounding else {}
        body.kb.vec(a.VcastOp, t, dst, **props)


def _times_scale(body: Body, t: SSAValue, scale: SSAValue, shape: list[int]) -> None:
    """t *= scale in f32; a constant scalar scale as an immediate."""
    if scale in body.row.scalars:
        body.kb.vec(a.VmulsOp, t, body.scalar(float(body.row.scalars[scale]), f32), t)
    else:
        body.kb.vec(a.VmulOp, t, _in_f32(body, scale, shape), t)


def _round_to_integers(body: Body, op: Operation, t: SSAValue, zp: SSAValue, shape: list[int]) -> None:
    """round_half_even(t) + zp, saturated to the result type and stored (the store's rint
    cast is exact: the values are integers in range)."""
    kb = body.kb
    kb.vec(a.VroundOp, t, t)
    _plus_zero_point(body, t, zp, shape, subtract=False)
    lo, hi = integer_range(op.results[0].type.element_type)
    kb.vec(a.VmaxsOp, t, body.scalar(lo, f32), t)
    kb.vec(a.VminsOp, t, body.scalar(hi, f32), t)
    _store(body, op, t, "rint")


def quantize(body: Body, op: Operation) -> None:
    x, scale, zp = op.operands
    shape = body.te(op.results[0])
    t = body.temp(shape, f32)
    body.kb.vec(a.VdivOp, _in_f32(body, x, shape), _in_f32(body, scale, shape), t)
    _round_to_integers(body, op, t, zp, shape)


def requantize(body: Body, op: Operation) -> None:
    """One f32 multiply by the scale (the reference's t = f32(acc) * scale), then as quantize."""
    acc, scale, zp = op.operands
    shape = body.te(op.results[0])
    t = body.temp(shape, f32)
    body.kb.vec(a.VcastOp, body.operand(acc, shape), t)
    _times_scale(body, t, scale, shape)
    _round_to_integers(body, op, t, zp, shape)


def dequantize(body: Body, op: Operation) -> None:
    kb = body.kb
    x, scale, *zp = op.operands
    shape = body.te(op.results[0])
    t = body.temp(shape, f32)
    kb.vec(a.VcastOp, body.operand(x, shape), t)
    if zp:
        _plus_zero_point(body, t, zp[0], shape, subtract=True)
    _times_scale(body, t, scale, shape)
    _store(body, op, t, None)


RULES = {g.QuantizeOp: quantize, g.DequantizeOp: dequantize, g.RequantizeOp: requantize}
