"""The row template's rule for graph.rotary_embedding (RoPE): y = x * cos + rotate(x) * sin
on a tile that holds whole rows (the op's trait, RowMixing, makes the row template keep the
last axis whole).

rotate(x) of the halves form is two instructions on the halves of the row, as subviews of
the tile: rot[..., :d/2] = -x[..., d/2:] (vmuls by -1) and rot[..., d/2:] = x[..., :d/2]
(vcopy). A half must start on a 32-byte block (d/2 elements of the compute type), else the
rule rejects the op and it runs in its own fallback kernel. The interleaved form (even / odd
elements) would need strided vector operands, which the vector unit's instructions do not
take: rejected too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Operation

from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.ir.types import to_dtype
from geir.lowering.templates.common import compute_type
from geir.lowering.templates.vector.space import Reject

if TYPE_CHECKING:
    from geir.lowering.templates.vector.body import Body


def check(op: Operation) -> None:
    """Reject what the rule cannot emit: the interleaved form, halves off a block boundary."""
    x = op.operands[0]
    half = x.type.get_shape()[-1] // 2
    item = to_dtype(compute_type(x.type.element_type)).itemsize
    if op.attrs()["interleaved"] or (half * item) % a.BLOCK_BYTES:
        raise Reject


def _rotary(body: Body, op: Operation) -> None:
    kb = body.kb
    x, cos, sin = op.operands
    full = body.te(op.results[0])
    elt = body.elt(x)
    half = full[-1] // 2
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


RULES = {g.RotaryEmbeddingOp: _rotary}
"""Graph op class -> its rule."""
