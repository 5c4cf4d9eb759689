"""The row template's op rules: `RULES` maps each graph op class the row template takes
(target/op_info.py ROW; views excepted: they share their operand's buffer) to the function
that emits its vector ops into a tile body. This module has the elementwise families;
activations.py the activations made of several instructions, reductions.py the reductions,
softmax and the normalisations, quantization.py quantize, dequantize and requantize.

A rule reads its operands' tiles with `body.operand` (broadcast to the result's tile when
smaller), writes `body.result(op, inplace)` (a dying operand's buffer when it may), and
folds one-element constant operands into scalar instructions (`vadds`, `vmuls`, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue

from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.ir.types import i1, is_float
from geir.lowering.templates.common import LoweringError, shape_of
from geir.lowering.templates.vector import activations, quantization, reductions, rotary
from geir.lowering.templates.vector.space import Reject, scalar_const

if TYPE_CHECKING:
    from geir.lowering.templates.vector.body import Body

Rule = Callable[["Body", Operation], None]

UNARY: dict[type[Operation], type[a.VectorOp]] = {
    g.ReluOp: a.VreluOp, g.SigmoidOp: a.VsigmoidOp, g.TanhOp: a.VtanhOp, g.ErfOp: a.VerfOp,
    g.ExpOp: a.VexpOp, g.LogOp: a.VlogOp, g.SqrtOp: a.VsqrtOp, g.ReciprocalOp: a.VrecOp,
    g.NegOp: a.VnegOp, g.AbsOp: a.VabsOp, g.SignOp: a.VsignOp, g.FloorOp: a.VfloorOp,
    g.CeilOp: a.VceilOp, g.RoundOp: a.VroundOp, g.SinOp: a.VsinOp, g.CosOp: a.VcosOp,
    g.LogicalNotOp: a.VnotOp,
}
BINARY: dict[type[Operation], type[a.VectorOp]] = {  # variadic ops fold pairwise
    g.AddOp: a.VaddOp, g.SubOp: a.VsubOp, g.MulOp: a.VmulOp, g.DivOp: a.VdivOp,
    g.LogicalAndOp: a.VandOp, g.LogicalOrOp: a.VorOp, g.MaxOp: a.VmaxOp, g.MinOp: a.VminOp,
    g.SumOp: a.VaddOp, g.MeanOp: a.VaddOp,
}
COMPARE: dict[type[Operation], str] = {  # graph op -> vcmp mode
    g.EqualOp: "eq", g.LessOp: "lt", g.GreaterOp: "gt", g.LessOrEqualOp: "le",
    g.GreaterOrEqualOp: "ge", g.LogicalXorOp: "ne",
}


def emit_op(body: Body, op: Operation) -> None:
    """Emit the vector ops of graph op `op` into `body`."""
    rule = RULES.get(type(op))
    if rule is None:
        raise LoweringError(f"no vector rule for {op.name}")
    rule(body, op)


FLOAT_ONLY = frozenset({g.MeanOp, g.PowOp, *activations.RULES})
"""Ops whose rules compute in floating point (a mean's 1/n, the exp/log formulas)."""


def check_op(op: Operation) -> None:
    """Reject ops whose operands the rules cannot take: integer results of the float-only
    rules, a tensor exponent of another element type, clip bounds that are not scalars."""
    elt = op.results[0].type.element_type
    if type(op) in FLOAT_ONLY and not is_float(elt):
        raise Reject
    if isinstance(op, g.PowOp) and scalar_const(op.operands[1]) is None \
            and op.operands[1].type.element_type != elt:
        raise Reject
    if isinstance(op, g.ClipOp) and any(math.prod(shape_of(v)) != 1 for v in op.operands[1:]):
        raise Reject
    if type(op) in quantization.RULES:
        quantization.check(op)
    if type(op) in rotary.RULES:
        rotary.check(op)


# ---------------------------------------------------------------------------
# Elementwise families.
# ---------------------------------------------------------------------------


def _operand(body: Body, op: Operation, v: SSAValue) -> SSAValue:
    """v's tile broadcast to op's result tile."""
    return body.operand(v, body.te(op.results[0]))


def _unary(body: Body, op: Operation) -> None:
    x = op.operands[0]
    body.kb.vec(UNARY[type(op)], _operand(body, op, x), body.result(op, [x]))


def _binary(body: Body, op: Operation) -> SSAValue:
    """A chain of the op's instruction over its operands; constant scalar operands folded
    into the scalar form of the instruction when it has one."""
    kb, scalars = body.kb, body.row.scalars
    shape = body.te(op.results[0])
    elt = body.elt(op.results[0])
    instr = BINARY[type(op)]
    consts = [v for v in op.operands if v in scalars]
    tensors = [v for v in op.operands if v not in scalars]
    if not tensors:
        raise LoweringError(f"{op.name}: constant operands only (should have been folded)")
    if consts and a.SCALAR_FORMS.get(instr) is None:
        tensors = list(op.operands)
        consts = []
    srcs = [body.operand_or_dup(v, shape, elt) for v in tensors]
    dst = body.result(op, tensors if len(srcs) <= 2 else [])
    if len(srcs) == 1:
        if srcs[0] is not dst:
            kb.vec(a.VcopyOp, srcs[0], dst)
    else:
        kb.vec(instr, srcs[0], srcs[1], dst)
        for src in srcs[2:]:
            kb.vec(instr, dst, src, dst)
    for c in consts:
        kb.vec(a.SCALAR_FORMS[instr], dst, body.scalar(scalars[c], elt), dst)
    return dst


def _mean(body: Body, op: Operation) -> None:
    dst = _binary(body, op)
    elt = body.elt(op.results[0])
    body.kb.vec(a.VmulsOp, dst, body.scalar(1.0 / len(op.operands), elt), dst)


def _sub_div(body: Body, op: Operation) -> None:
    """sub / div with one constant scalar side: x - c = x + (-c), x / c = x * (1/c) (float,
    c != 0), c - x = -x + c, c / x on a vdup of c; otherwise the binary rule."""
    kb, scalars = body.kb, body.row.scalars
    x, y = op.operands
    if (x in scalars) == (y in scalars):
        _binary(body, op)
        return
    shape = body.te(op.results[0])
    elt = body.elt(op.results[0])
    sub = isinstance(op, g.SubOp)
    if y in scalars:
        c = scalars[y]
        src = _operand(body, op, x)
        dst = body.result(op, [x])
        if sub:
            kb.vec(a.VaddsOp, src, body.scalar(-c, elt), dst)
        elif is_float(elt) and c != 0:
            kb.vec(a.VmulsOp, src, body.scalar(1.0 / c, elt), dst)
        else:
            kb.vec(a.VdivOp, src, body.dup(c, shape, elt), dst)
    else:
        c = scalars[x]
        src = _operand(body, op, y)
        dst = body.result(op, [y])
        if sub:
            kb.vec(a.VmulsOp, src, body.scalar(-1, elt), dst)
            kb.vec(a.VaddsOp, dst, body.scalar(c, elt), dst)
        else:
            kb.vec(a.VdivOp, body.dup(c, shape, elt), src, dst)


def _compare(body: Body, op: Operation) -> None:
    x, y = op.operands
    shape = body.te(op.results[0])
    et = body.elt(x)
    lhs = body.operand_or_dup(x, shape, et)
    rhs = body.operand_or_dup(y, shape, et)
    body.kb.vec(a.VcmpOp, lhs, rhs, body.result(op), mode=StringAttr(COMPARE[type(op)]))


def _where(body: Body, op: Operation) -> None:
    c, x, y = op.operands
    shape = body.te(op.results[0])
    elt = body.elt(op.results[0])
    cv = body.operand_or_dup(c, shape, i1)
    xv = body.operand_or_dup(x, shape, elt)
    yv = body.operand_or_dup(y, shape, elt)
    body.kb.vec(a.VselectOp, cv, xv, yv, body.result(op, [x, y]))


def _clip(body: Body, op: Operation) -> None:
    """max with the lower bound, then min with the upper (check_op: scalar bounds)."""
    kb, scalars = body.kb, body.row.scalars
    elt = body.elt(op.results[0])
    x0 = op.operands[0]
    x = _operand(body, op, x0)
    dst = body.result(op, [x0])
    cur = x
    for v, form in zip(op.operands[1:], (a.VmaxOp, a.VminOp)):
        if math.prod(shape_of(v)) == 0:
            continue
        if v in scalars:
            kb.vec(a.SCALAR_FORMS[form], cur, body.scalar(scalars[v], elt), dst)
        else:
            kb.vec(form, cur, _operand(body, op, v), dst)
        cur = dst
    if cur is not dst:
        kb.vec(a.VcopyOp, x, dst)


def _prelu(body: Body, op: Operation) -> None:
    """vlrelu with a scalar slope; else x < 0 ? x * slope : x."""
    kb, scalars = body.kb, body.row.scalars
    shape = body.te(op.results[0])
    elt = body.elt(op.results[0])
    x, slope = op.operands
    xv = _operand(body, op, x)
    if slope in scalars:
        kb.vec(a.VlreluOp, xv, body.scalar(scalars[slope], elt), body.result(op, [x]))
        return
    t = body.temp(shape, elt)
    kb.vec(a.VmulOp, xv, _operand(body, op, slope), t)
    m = body.temp(shape, i1)
    kb.vec(a.VcmpOp, xv, body.dup(0, shape, elt), m, mode=StringAttr("lt"))
    kb.vec(a.VselectOp, m, t, xv, body.result(op, [x]))


def _expand(body: Body, op: Operation) -> None:
    """A copy of the broadcast operand (an expand to its own shape is an alias, never here)."""
    x0 = op.operands[0]
    x = _operand(body, op, x0)
    dst = body.result(op, [x0])
    if x is not dst:
        body.kb.vec(a.VcopyOp, x, dst)


def _cast(body: Body, op: Operation) -> None:
    """One vcast to the result's type. A result computed in another type than it is stored
    in (bf16, computed in f32) is rounded to its stored type and converted back - the cast's
    one rounding - from f32: vcast converts bf16 to and from f32 only."""
    kb, r = body.kb, op.results[0]
    src = _operand(body, op, op.operands[0])
    stored, elt = r.type.element_type, body.elt(r)
    dst = body.result(op)
    if stored == elt:
        kb.vec(a.VcastOp, src, dst)
        return
    shape = list(src.type.get_shape())
    if src.type.element_type != elt:
        wide = body.temp(shape, elt)
        kb.vec(a.VcastOp, src, wide)
        src = wide
    narrow = body.temp(shape, stored)
    kb.vec(a.VcastOp, src, narrow)
    kb.vec(a.VcastOp, narrow, dst)


def _pow(body: Body, op: Operation) -> None:
    x0, y0 = op.operands
    c = scalar_const(y0)
    if c is None:
        _pow_tensor(body, op, _operand(body, op, x0), _operand(body, op, y0))
    else:
        _pow_scalar(body, op, _operand(body, op, x0), float(c))


def _pow_scalar(body: Body, op: Operation, x: SSAValue, c: float) -> None:
    """x ** c: one instruction for the common exponents, else exp(c * log x)."""
    kb = body.kb
    elt = body.elt(op.results[0])
    dst = body.result(op, [op.operands[0]])
    if c == 1:
        if x is not dst:
            kb.vec(a.VcopyOp, x, dst)
    elif c == 2:
        kb.vec(a.VmulOp, x, x, dst)
    elif c == 0.5:
        kb.vec(a.VsqrtOp, x, dst)
    elif c == -1:
        kb.vec(a.VrecOp, x, dst)
    elif c == 3:
        t = body.temp(list(x.type.get_shape()), elt)
        kb.vec(a.VmulOp, x, x, t)
        kb.vec(a.VmulOp, t, x, dst)
    elif c == 0:
        kb.vec(a.VdupOp, body.scalar(1, elt), dst)
    else:
        # exp(c * log x): NaN for x < 0, as powf for a non-integer exponent
        kb.vec(a.VlogOp, x, dst)
        kb.vec(a.VmulsOp, dst, body.scalar(c, elt), dst)
        kb.vec(a.VexpOp, dst, dst)


def _pow_tensor(body: Body, op: Operation, x: SSAValue, y: SSAValue) -> None:
    """x ** y elementwise: exp(y * log|x|), negated for a negative base and an odd integer
    exponent, NaN for a negative base and a non-integer one, 1 for y = 0 (as powf)."""
    kb = body.kb
    elt = body.elt(op.results[0])
    shape = list(x.type.get_shape())
    S = lambda v: body.scalar(v, elt)  # noqa: E731
    r = body.temp(shape, elt)
    kb.vec(a.VabsOp, x, r)
    kb.vec(a.VlogOp, r, r)
    kb.vec(a.VmulOp, r, y, r)
    kb.vec(a.VexpOp, r, r)                                   # |x| ** y
    t = body.temp(shape, elt)
    is_int, odd, neg = (body.temp(shape, i1) for _ in range(3))
    kb.vec(a.VfloorOp, y, t)
    kb.vec(a.VcmpOp, t, y, is_int, mode=StringAttr("eq"))    # y integral
    kb.vec(a.VmulsOp, y, S(0.5), t)
    u = body.temp(shape, elt)
    kb.vec(a.VfloorOp, t, u)
    kb.vec(a.VcmpOp, u, t, odd, mode=StringAttr("ne"))       # y / 2 not integral: odd
    kb.vec(a.VnegOp, r, t)
    kb.vec(a.VselectOp, odd, t, r, t)                        # (-1) ** y * |x| ** y
    kb.vec(a.VdupOp, S(math.nan), u)
    kb.vec(a.VselectOp, is_int, t, u, t)
    kb.vec(a.VcmpOp, x, body.dup(0, shape, elt), neg, mode=StringAttr("lt"))
    dst = body.result(op, [op.operands[0]])
    kb.vec(a.VselectOp, neg, t, r, dst)
    kb.vec(a.VcmpOp, y, body.dup(0, shape, elt), neg, mode=StringAttr("eq"))
    kb.vec(a.VselectOp, neg, body.dup(1, shape, elt), dst, dst)


# ---------------------------------------------------------------------------
# Integer bitwise ops and float tests (frontend/onnx_elementwise.py): the bitwise ones on
# vand / vor / vnot (signed integer types: the vector unit takes no unsigned ones), xor as
# (a | b) & ~(a & b); IsNaN as x != x, IsInf as compares with +-inf.
# ---------------------------------------------------------------------------

UNARY[g.BitwiseNotOp] = a.VnotOp
BINARY.update({g.BitwiseAndOp: a.VandOp, g.BitwiseOrOp: a.VorOp})


def _bitwise_xor(body: Body, op: Operation) -> None:
    kb = body.kb
    shape = body.te(op.results[0])
    elt = body.elt(op.results[0])
    x, y = (body.operand_or_dup(v, shape, elt) for v in op.operands)
    t = body.temp(shape, elt)
    kb.vec(a.VandOp, x, y, t)
    kb.vec(a.VnotOp, t, t)
    dst = body.result(op, list(op.operands))
    kb.vec(a.VorOp, x, y, dst)
    kb.vec(a.VandOp, dst, t, dst)


def _is_nan(body: Body, op: Operation) -> None:
    x = _operand(body, op, op.operands[0])
    body.kb.vec(a.VcmpOp, x, x, body.result(op), mode=StringAttr("ne"))


def _is_inf(body: Body, op: Operation) -> None:
    """x == +inf, x == -inf, or'ed as the attributes ask (neither: x == NaN, never true)."""
    kb = body.kb
    x0 = op.operands[0]
    x = _operand(body, op, x0)
    shape, elt = body.te(op.results[0]), body.elt(x0)
    attrs = op.attrs()
    targets = [v for v, on in ((math.inf, attrs["detect_positive"]), (-math.inf, attrs["detect_negative"])) if on]
    dst = body.result(op)
    kb.vec(a.VcmpOp, x, body.dup(targets[0] if targets else math.nan, shape, elt), dst, mode=StringAttr("eq"))
    if len(targets) == 2:
        m = body.temp(shape, i1)
        kb.vec(a.VcmpOp, x, body.dup(targets[1], shape, elt), m, mode=StringAttr("eq"))
        kb.vec(a.VorOp, dst, m, dst)


_BITS_AND_TESTS: dict[type[Operation], Rule] = {
    g.BitwiseXorOp: _bitwise_xor, g.IsNanOp: _is_nan, g.IsInfOp: _is_inf,
}


RULES: dict[type[Operation], Rule] = {
    **dict.fromkeys(UNARY, _unary),
    **dict.fromkeys(BINARY, _binary),
    g.MeanOp: _mean,                        # the sum's rule, then 1/n
    g.SubOp: _sub_div, g.DivOp: _sub_div,   # a constant side first
    **dict.fromkeys(COMPARE, _compare),
    g.WhereOp: _where, g.ClipOp: _clip, g.PReluOp: _prelu, g.PowOp: _pow,
    g.ExpandOp: _expand, g.CastOp: _cast,
    **activations.RULES,
    **reductions.RULES,
    **quantization.RULES,
    **rotary.RULES,
    **_BITS_AND_TESTS,
}
"""Graph op class -> the function that emits its vector ops (every class of op_info.ROW but
the views)."""
