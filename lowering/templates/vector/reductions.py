"""Row-template rules for the ops that reduce rows: reduce_*, global pools, softmax,
log_softmax, layer_norm, rms_norm, instance_norm; and batch_norm (scale / shift over
channels). A tile holds whole rows, so every reduction is one `vreduce` over the op's reduced
dims of the canonical space (kept as 1), its statistic broadcast back with `vbrcb`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import ml_dtypes
from xdsl.dialects.builtin import DenseArrayBase, StringAttr, f32, i64
from xdsl.ir import Attribute, Operation, SSAValue

from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.ir.types import to_dtype
from geir.lowering.templates.common import itemsize
from geir.lowering.templates.data import ub_view

if TYPE_CHECKING:
    from geir.lowering.templates.vector.body import Body


def _reduce_into(body: Body, src: SSAValue, op: Operation, kind: str, elt: Attribute,
                 dst: SSAValue | None = None) -> SSAValue:
    """vreduce of src over op's reduced dims (kept as 1) into dst or a temp."""
    dims = sorted(body.row.space.reduced[op])
    shape = list(src.type.get_shape())
    out = [1 if i in dims else x for i, x in enumerate(shape)]
    dst = dst if dst is not None else body.temp(out, elt)
    if dims:
        body.kb.vec(a.VreduceOp, src, dst, kind=StringAttr(kind), axes=DenseArrayBase.from_list(i64, dims))
    elif src is not dst:
        body.kb.vec(a.VcopyOp, src, dst)
    return dst


def _count(body: Body, op: Operation) -> int:
    """Elements of one row of op."""
    return math.prod(body.row.space.shape[i] for i in body.row.space.reduced[op])


# -- reduce_*, global pools ---------------------------------------------------------------------

Step = Callable[["Body", Operation, SSAValue], None]


def _square(body: Body, op: Operation, x: SSAValue, dst: SSAValue) -> None:
    body.kb.vec(a.VmulOp, x, x, dst)


def _abs(body: Body, op: Operation, x: SSAValue, dst: SSAValue) -> None:
    body.kb.vec(a.VabsOp, x, dst)


def _by_count(body: Body, op: Operation, dst: SSAValue) -> None:
    body.kb.vec(a.VmulsOp, dst, body.scalar(1.0 / _count(body, op), dst.type.element_type), dst)


def _sqrt(body: Body, op: Operation, dst: SSAValue) -> None:
    body.kb.vec(a.VsqrtOp, dst, dst)


def _log(body: Body, op: Operation, dst: SSAValue) -> None:
    body.kb.vec(a.VlogOp, dst, dst)


REDUCTIONS: dict[type[Operation], tuple[Callable | None, str, Step | None]] = {
    # graph op -> (map x first, vreduce kind, then on the result)
    g.ReduceSumOp: (None, "sum", None),
    g.ReduceMeanOp: (None, "sum", _by_count),
    g.ReduceMaxOp: (None, "max", None),
    g.ReduceMinOp: (None, "min", None),
    g.ReduceSumSquareOp: (_square, "sum", None),
    g.ReduceL1Op: (_abs, "sum", None),
    g.ReduceL2Op: (_square, "sum", _sqrt),
    g.ReduceLogSumOp: (None, "sum", _log),
    g.GlobalAvgPoolOp: (None, "sum", _by_count),
    g.GlobalMaxPoolOp: (None, "max", None),
}


def _reduce(body: Body, op: Operation) -> None:
    pre, kind, post = REDUCTIONS[type(op)]
    x = op.operands[0]
    elt = body.elt(x)
    xv = body.view(x)
    src = xv
    if pre is not None:
        src = body.temp(list(xv.type.get_shape()), elt)
        pre(body, op, xv, src)
    dst = body.result(op)
    _reduce_into(body, src, op, kind, elt, dst)
    if post is not None:
        post(body, op, dst)


def _reduce_log_sum_exp(body: Body, op: Operation) -> None:
    """m + log(sum(exp(x - m))) with m the row's max: never overflows."""
    kb = body.kb
    x = op.operands[0]
    elt = body.elt(x)
    xv = body.view(x)
    full = list(xv.type.get_shape())
    m = _reduce_into(body, xv, op, "max", elt)
    e = body.temp(full, elt)
    kb.vec(a.VsubOp, xv, body.brcb(m, full), e)
    kb.vec(a.VexpOp, e, e)
    dst = body.result(op)
    _reduce_into(body, e, op, "sum", elt, dst)
    kb.vec(a.VlogOp, dst, dst)
    kb.vec(a.VaddOp, dst, m, dst)


# -- softmax, log_softmax -------------------------------------------------------------------------


def _minus_max(body: Body, op: Operation, safe: bool = False) -> tuple[SSAValue, list[int], Attribute]:
    """d = x - max(x) over the row, in the result's buffer; d, its shape, the element type.
    `safe`: the max clamped to the lowest finite value, so an all -inf row gives d = -inf
    (exp 0), not NaN; a row with a finite element keeps its max."""
    x = op.operands[0]
    elt = body.elt(x)
    xv = body.view(x)
    full = list(xv.type.get_shape())
    m = _reduce_into(body, xv, op, "max", elt)
    if safe:
        body.kb.vec(a.VmaxsOp, m, body.scalar(float(ml_dtypes.finfo(to_dtype(elt)).min), elt), m)
    mb = body.brcb(m, full)
    dst = body.result(op, [x])
    body.kb.vec(a.VsubOp, xv, mb, dst)
    body.drop(mb)  # whole rows must fit ub: at most two row-sized buffers at a time
    return dst, full, elt


def _softmax(body: Body, op: Operation) -> None:
    """exp(d) / sum(exp(d)). safe_softmax (an all -inf row gives 0): d from the clamped max
    and the sum clamped to at least 1 (0 / 1); a row with a finite element sums exp(0) = 1
    or more, so neither clamp changes it."""
    kb = body.kb
    safe = isinstance(op, g.SafeSoftmaxOp)
    dst, full, elt = _minus_max(body, op, safe)
    kb.vec(a.VexpOp, dst, dst)
    s = _reduce_into(body, dst, op, "sum", elt)
    if safe:
        kb.vec(a.VmaxsOp, s, body.scalar(1, elt), s)
    kb.vec(a.VdivOp, dst, body.brcb(s, full), dst)


def _log_softmax(body: Body, op: Operation) -> None:
    """d - log(sum(exp(d)))."""
    kb = body.kb
    dst, full, elt = _minus_max(body, op)
    e = body.temp(full, elt)
    kb.vec(a.VexpOp, dst, e)
    s = _reduce_into(body, e, op, "sum", elt)
    body.drop(e)
    kb.vec(a.VlogOp, s, s)
    kb.vec(a.VsubOp, dst, body.brcb(s, full), dst)


# -- normalisations ------------------------------------------------------------------------------


def _norm(body: Body, op: Operation) -> None:
    """(x - mean) / sqrt(var + eps) * scale + bias over the reduced dims."""
    kb = body.kb
    x = op.operands[0]
    elt = body.elt(x)
    xv = body.view(x)
    full = list(xv.type.get_shape())
    mean = _reduce_into(body, xv, op, "sum", elt)
    kb.vec(a.VmulsOp, mean, body.scalar(1.0 / _count(body, op), elt), mean)
    dst = body.result(op, [x])
    mb = body.brcb(mean, full)
    kb.vec(a.VsubOp, xv, mb, dst)                         # d
    body.drop(mb)  # row-sized temporaries one at a time: whole rows must fit ub
    _by_rms(body, op, dst, dst)
    _scale_shift(body, op, dst)


def _rms_norm(body: Body, op: Operation) -> None:
    """x / sqrt(mean(x * x) + eps) * scale over the reduced dims. A 16-bit x is normalised in
    fp32 and cast back before the scale (the op's stash_type 1)."""
    kb = body.kb
    x = op.operands[0]
    xv = body.view(x)
    if itemsize(body.elt(x)) >= 4:
        dst = body.result(op, [x])
        _by_rms(body, op, xv, dst)
    else:
        xf = body.temp(list(xv.type.get_shape()), f32)
        kb.vec(a.VcastOp, xv, xf)
        _by_rms(body, op, xf, xf)
        dst = body.result(op, [x])
        kb.vec(a.VcastOp, xf, dst)
        body.drop(xf)
    _scale_shift(body, op, dst)


def _by_rms(body: Body, op: Operation, src: SSAValue, dst: SSAValue) -> None:
    """dst = src / sqrt(mean(src * src) + eps) over the reduced dims: layer_norm's centred row
    by its standard deviation, rms_norm's row by its root mean square."""
    kb = body.kb
    elt = src.type.element_type
    full = list(src.type.get_shape())
    sq = body.temp(full, elt)
    kb.vec(a.VmulOp, src, src, sq)
    ms = _reduce_into(body, sq, op, "sum", elt)
    body.drop(sq)
    kb.vec(a.VmulsOp, ms, body.scalar(1.0 / _count(body, op), elt), ms)
    kb.vec(a.VaddsOp, ms, body.scalar(op.attrs()["epsilon"], elt), ms)
    kb.vec(a.VsqrtOp, ms, ms)
    mb = body.brcb(ms, full)
    kb.vec(a.VdivOp, src, mb, dst)
    body.drop(mb)


def _scale_shift(body: Body, op: Operation, dst: SSAValue) -> None:
    """dst * scale (+ bias), each broadcast over the tile in a temporary given back at once."""
    full = list(dst.type.get_shape())
    for param, combine in zip(op.operands[1:], (a.VmulOp, a.VaddOp)):  # scale, then bias
        p = body.operand(param, full)
        body.kb.vec(combine, dst, p, dst)
        body.drop(p)


def _batch_norm(body: Body, op: Operation) -> None:
    """y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a (as the graph
    kernel folds it), computed on the parameters' tile - once per kernel, in the prologue,
    when the parameters do not depend on the tile."""
    kb = body.kb
    x = op.operands[0]
    pre = body.row.bn_scale_shift.get(op)
    a_, b_ = pre if pre is not None else bn_scale_shift(body, op, keep=False)
    full = body.te(op.results[0])
    xv = body.operand(x, full)
    dst = body.result(op, [x])
    kb.vec(a.VmulOp, xv, body.brcb(a_, full), dst)
    kb.vec(a.VaddOp, dst, body.brcb(b_, full), dst)


def bn_scale_shift(body: Body, op: Operation, keep: bool) -> tuple[SSAValue, SSAValue]:
    """a = scale / sqrt(var + eps), b = bias - mean * a on the parameters' tile; `keep`: in
    buffers that stay (the prologue's), else in temporaries of the current rule."""
    kb = body.kb
    x, scale, bias, mean, var = op.operands
    elt = body.elt(x)
    pshape = body.te(scale)
    sv, bv, mv, vv = (body.operand(p, pshape) for p in (scale, bias, mean, var))

    def buf() -> SSAValue:
        if keep:
            return ub_view(kb, body.pool.get(pshape, elt), pshape)
        return body.temp(pshape, elt)

    a_ = buf()
    kb.vec(a.VaddsOp, vv, body.scalar(op.attrs()["epsilon"], elt), a_)
    kb.vec(a.VsqrtOp, a_, a_)
    kb.vec(a.VdivOp, sv, a_, a_)
    b_ = buf()
    kb.vec(a.VmulOp, mv, a_, b_)
    kb.vec(a.VsubOp, bv, b_, b_)
    return a_, b_


RULES = {
    **dict.fromkeys(REDUCTIONS, _reduce),
    g.ReduceLogSumExpOp: _reduce_log_sum_exp,
    g.SoftmaxOp: _softmax, g.SafeSoftmaxOp: _softmax, g.LogSoftmaxOp: _log_softmax,
    g.LayerNormOp: _norm, g.InstanceNormOp: _norm, g.RmsNormOp: _rms_norm,
    g.BatchNormOp: _batch_norm,
}
"""Graph op class -> its rule."""
