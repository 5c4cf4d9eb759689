"""Row-template rules for the activations made of several vector instructions (the graph
kernel's formula, op for op). Each rule reads x's tile broadcast to the result's first."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, Operation, SSAValue

from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.ir.types import i1

if TYPE_CHECKING:
    from geir.lowering.templates.vector.body import Body


def _x(body: Body, op: Operation) -> tuple[SSAValue, list[int], Attribute]:
    """x's tile (broadcast to the result's), its shape, the element type."""
    r = op.results[0]
    x = body.operand(op.operands[0], body.te(r))
    return x, list(x.type.get_shape()), body.elt(r)


def _inplace(body: Body, op: Operation) -> SSAValue:
    """The result, in x's buffer when x dies here."""
    return body.result(op, [op.operands[0]])


def _softplus_into(body: Body, x: SSAValue, dst: SSAValue, elt: Attribute) -> None:
    """max(x, 0) + log(1 + exp(-|x|)): never overflows."""
    kb = body.kb
    t = body.temp(list(x.type.get_shape()), elt)
    kb.vec(a.VabsOp, x, t)
    kb.vec(a.VmulsOp, t, body.scalar(-1, elt), t)
    kb.vec(a.VexpOp, t, t)
    kb.vec(a.VaddsOp, t, body.scalar(1, elt), t)
    kb.vec(a.VlogOp, t, t)
    kb.vec(a.VreluOp, x, dst)
    kb.vec(a.VaddOp, dst, t, dst)


def _select(body: Body, x: SSAValue, mode: str, threshold: float, yes: SSAValue, no: SSAValue,
            dst: SSAValue) -> None:
    """dst = (x <mode> threshold) ? yes : no."""
    shape = list(x.type.get_shape())
    elt = dst.type.element_type
    m = body.temp(shape, i1)
    body.kb.vec(a.VcmpOp, x, body.dup(threshold, shape, elt), m, mode=StringAttr(mode))
    body.kb.vec(a.VselectOp, m, yes, no, dst)


def _leaky_relu(body: Body, op: Operation) -> None:
    x, _, elt = _x(body, op)
    body.kb.vec(a.VlreluOp, x, body.scalar(op.attrs()["alpha"], elt), _inplace(body, op))


def _softsign(body: Body, op: Operation) -> None:
    x, shape, elt = _x(body, op)
    t = body.temp(shape, elt)
    body.kb.vec(a.VabsOp, x, t)
    body.kb.vec(a.VaddsOp, t, body.scalar(1, elt), t)
    body.kb.vec(a.VdivOp, x, t, _inplace(body, op))


def _clamp01(body: Body, x: SSAValue, alpha: float, beta: float, dst: SSAValue) -> None:
    """dst = max(0, min(1, alpha * x + beta))."""
    kb = body.kb
    elt = dst.type.element_type
    kb.vec(a.VmulsOp, x, body.scalar(alpha, elt), dst)
    kb.vec(a.VaddsOp, dst, body.scalar(beta, elt), dst)
    kb.vec(a.VmaxsOp, dst, body.scalar(0, elt), dst)
    kb.vec(a.VminsOp, dst, body.scalar(1, elt), dst)


def _hard_sigmoid(body: Body, op: Operation) -> None:
    x, _, _ = _x(body, op)
    attrs = op.attrs()
    _clamp01(body, x, attrs["alpha"], attrs["beta"], _inplace(body, op))


def _hard_swish(body: Body, op: Operation) -> None:
    x, shape, elt = _x(body, op)
    t = body.temp(shape, elt)
    _clamp01(body, x, 1 / 6, 0.5, t)
    body.kb.vec(a.VmulOp, x, t, _inplace(body, op))


def _softplus(body: Body, op: Operation) -> None:
    x, _, elt = _x(body, op)
    _softplus_into(body, x, body.result(op), elt)


def _mish(body: Body, op: Operation) -> None:
    """x * tanh(softplus(x))."""
    x, shape, elt = _x(body, op)
    t = body.temp(shape, elt)
    _softplus_into(body, x, t, elt)
    body.kb.vec(a.VtanhOp, t, t)
    body.kb.vec(a.VmulOp, x, t, _inplace(body, op))


def _alpha_expm1(body: Body, x: SSAValue, elt: Attribute, alpha: float,
                 x_scale: float | None = None) -> SSAValue:
    """alpha * (exp(x_scale * x) - 1) in a temporary."""
    kb = body.kb
    t = body.temp(list(x.type.get_shape()), elt)
    if x_scale is not None:
        kb.vec(a.VmulsOp, x, body.scalar(x_scale, elt), t)
        kb.vec(a.VexpOp, t, t)
    else:
        kb.vec(a.VexpOp, x, t)
    kb.vec(a.VaddsOp, t, body.scalar(-1, elt), t)
    kb.vec(a.VmulsOp, t, body.scalar(alpha, elt), t)
    return t


def _elu(body: Body, op: Operation) -> None:
    """x > 0 ? x : alpha * (exp(x) - 1); selu scales that by gamma."""
    x, _, elt = _x(body, op)
    t = _alpha_expm1(body, x, elt, op.attrs()["alpha"])
    dst = body.result(op)
    _select(body, x, "gt", 0, x, t, dst)
    if isinstance(op, g.SeluOp):
        body.kb.vec(a.VmulsOp, dst, body.scalar(op.attrs()["gamma"], elt), dst)


def _celu(body: Body, op: Operation) -> None:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    kb = body.kb
    x, _, elt = _x(body, op)
    alpha = op.attrs()["alpha"]
    t = _alpha_expm1(body, x, elt, alpha, x_scale=1 / alpha)
    dst = body.result(op)
    kb.vec(a.VminsOp, t, body.scalar(0, elt), t)
    kb.vec(a.VreluOp, x, dst)
    kb.vec(a.VaddOp, dst, t, dst)


def _gelu(body: Body, op: Operation) -> None:
    """0.5 * x * (1 + erf(x / sqrt 2)), or with tanh(sqrt(2/pi) * (x + 0.044715 x^3))."""
    kb = body.kb
    x, shape, elt = _x(body, op)
    S = lambda v: body.scalar(v, elt)  # noqa: E731
    t = body.temp(shape, elt)
    if op.attrs()["approximate"] == "tanh":
        kb.vec(a.VmulOp, x, x, t)
        kb.vec(a.VmulOp, t, x, t)
        kb.vec(a.VmulsOp, t, S(0.044715), t)
        kb.vec(a.VaddOp, t, x, t)
        kb.vec(a.VmulsOp, t, S(math.sqrt(2 / math.pi)), t)
        kb.vec(a.VtanhOp, t, t)
    else:
        kb.vec(a.VmulsOp, x, S(1 / math.sqrt(2)), t)
        kb.vec(a.VerfOp, t, t)
    kb.vec(a.VaddsOp, t, S(1), t)
    dst = _inplace(body, op)
    kb.vec(a.VmulOp, x, t, dst)
    kb.vec(a.VmulsOp, dst, S(0.5), dst)


def _shrink(body: Body, op: Operation) -> None:
    """x - bias above lambd, x + bias below -lambd, 0 between."""
    x, shape, elt = _x(body, op)
    attrs = op.attrs()
    lambd, bias = attrs["lambd"], attrs["bias"]
    lo, hi = body.temp(shape, elt), body.temp(shape, elt)
    body.kb.vec(a.VaddsOp, x, body.scalar(bias, elt), lo)
    body.kb.vec(a.VaddsOp, x, body.scalar(-bias, elt), hi)
    dst = body.result(op)
    _select(body, x, "gt", lambd, hi, body.dup(0, shape, elt), dst)
    _select(body, x, "lt", -lambd, lo, dst, dst)


def _thresholded_relu(body: Body, op: Operation) -> None:
    x, shape, elt = _x(body, op)
    _select(body, x, "gt", op.attrs()["alpha"], x, body.dup(0, shape, elt), body.result(op))


RULES = {
    g.LeakyReluOp: _leaky_relu, g.SoftsignOp: _softsign, g.HardSigmoidOp: _hard_sigmoid,
    g.HardSwishOp: _hard_swish, g.SoftplusOp: _softplus, g.MishOp: _mish, g.EluOp: _elu,
    g.SeluOp: _elu, g.CeluOp: _celu, g.GeluOp: _gelu, g.ShrinkOp: _shrink,
    g.ThresholdedReluOp: _thresholded_relu,
}
"""Graph op class -> its rule."""
