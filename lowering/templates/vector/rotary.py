"""The row template's rule for graph.rotary_embedding (RoPE): y = x * cos + rotate(x) * sin
on a tile that holds whole rows (the op's trait, RowMixing, makes the row template keep the
last axis whole).

rotate(x) of the halves form is two instructions on the halves of the row, as subviews of
the tile: rot[..., :d/2] = -x[..., d/2:] (vmuls by -1) and rot[..., d/2:] = x[..., :d/2]
(vcopy). A half must start on a 32-byte block: when d/2 elements of the compute type do not
fill whole blocks (a 16-bit head dim of 16, 48, ...) the rule computes in f32 (x, cos and
sin converted in, the result converted back: d/2 f32 elements fill blocks whenever d/2 is a
multiple of 8). Otherwise, and for the interleaved form (even / odd elements would need
strided vector operands, which the vector unit's instructions do not take), the rule
rejects the op and it runs in its own fallback kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import f32
from xdsl.ir import Operation

from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.ir.types import to_dtype
from geir.lowering.templates.vector.space import Reject

if TYPE_CHECKING:
    from geir.lowering.templates.vector.body import Body


def _aligned(half: int, elt) -> bool:
    return half * to_dtype(elt).itemsize % a.BLOCK_BYTES == 0


def check(op: Operation) -> None:
    """Reject what the rule cannot emit: the interleaved form, halves off a block boundary
    even in f32."""
    half = op.operands[0].type.get_shape()[-1] // 2
    if op.attrs()["interleaved"] or not _aligned(half, f32):
        raise Reject


def _rotary(body: Body, op: Operation) -> None:
    kb = body.kb
    x, cos, sin = op.operands
    full = body.te(op.results[0])
    half = full[-1] // 2
    if not _aligned(half, body.elt(x)):
        _rotary_in_f32(body, op, full)
        return
    elt = body.elt(x)
    lead = [0] * (len(full) - 1)
    xv = body.view(x)

    def halves(buf):
        sizes = [*full[:-1], half]
        return kb.tile(buf, [*lead, 0], sizes), kb.tile(buf, [*lead, half], sizes)

    rot = body.temp(full, elt)
    x1, x2 = halves(xv)
    r1, r2 = halves(rot)
    kb.vec(a.VmulsOp, x2, body.scalar(-1.0, elt), r1)
    kb.vec(a.VcopyOp, x1, r2)
    s = body.operand(sin, full)
    kb.vec(a.VmulOp, rot, s, rot)
    body.drop(s)
    c = body.operand(cos, full)
    dst = body.result(op, [x])  # x is read only where it is written from here on
    kb.vec(a.VmulOp, xv, c, dst)
    body.drop(c)
    kb.vec(a.VaddOp, dst, rot, dst)


def _rotary_in_f32(body: Body, op: Operation, full: list[int]) -> None:
    """The rotation of 16-bit halves that do not fill 32-byte blocks, computed in f32."""
    kb = body.kb
    x, cos, sin = op.operands
    half, lead = full[-1] // 2, [0] * (len(full) - 1)
    sizes = [*full[:-1], half]

    def widened(v) -> object:
        w = body.temp(full, f32)
        kb.vec(a.VcastOp, body.operand(v, full), w)
        return w

    xf, rot = widened(x), body.temp(full, f32)
    kb.vec(a.VmulsOp, kb.tile(xf, [*lead, half], sizes), body.scalar(-1.0, f32), kb.tile(rot, [*lead, 0], sizes))
    kb.vec(a.VcopyOp, kb.tile(xf, [*lead, 0], sizes), kb.tile(rot, [*lead, half], sizes))
    for param, target in ((sin, rot), (cos, xf)):
        p = widened(param)
        kb.vec(a.VmulOp, target, p, target)
        body.drop(p)
    kb.vec(a.VaddOp, xf, rot, xf)
    kb.vec(a.VcastOp, xf, body.result(op, []))


RULES = {g.RotaryEmbeddingOp: _rotary}
"""Graph op class -> its rule."""
