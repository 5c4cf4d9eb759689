"""A normalisation run inside the matmul kernel that reads it (graph-fuse's norm prologue).

A decoder's RMSNorm (and the residual Add before it) feeds the projections after it. Decoding,
those are a few rows: as a kernel of its own the norm costs a launch for well under a
microsecond of work. Here the norm is the matmul kernel's prologue: the row template's code
(vector/row.py), emitted into the cube kernel before its tile loop, on every block whole.

The cube cores cannot read what another core's vector unit leaves in ub (the 910B has no
ub -> l1 path) and the blocks of a kernel cannot wait for each other, so each block
normalises every row itself and writes it to its own copy in a gm scratch
(`[blocks x rows, K]`); its cube tiles read the lhs from that copy. A shared output (the
residual sum, read by the next layer) is stored by block 0 alone. The work is repeated on
every block, which graph-fuse accepts only where that costs less than the launch it saves:
a few rows, not a prefill (passes/graph/fuse.py, `norm_prologue`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from xdsl.ir import SSAValue

from geir.dialects import graph as g
from geir.dialects.traits import Normalization, ViewLike
from geir.lowering.templates.common import KernelBuilder, KernelRequest
from geir.lowering.templates.cube.loops import Index
from geir.lowering.templates.vector import Reject, RowKernel
from geir.target import op_info


@dataclass
class Prologue:
    """The split of a request: the kernel's own request (`req`, whose arguments the kernel
    has), the row template for the ops before the matmul (`row`, its request `row.req`) and
    the cube request of the rest (`cube`), which reads the normalised rows `lhs` as one more
    input (its last)."""

    req: KernelRequest
    row: RowKernel
    cube: KernelRequest
    lhs: SSAValue
    views: dict[SSAValue, SSAValue]  # a view of an input the row part reads -> that input

    def emit(self, kb: KernelBuilder) -> Index:
        """The prologue's code at the kernel's entry; then the builder's inputs and outputs are
        the cube request's (the lhs: the blocks' copies, as [blocks x rows, K]). Returns the
        first row of this block's copy."""
        blocks = kb.kernel.block_count
        args = {v: a for v, a in reversed(list(zip(self.req.inputs, kb.inputs)))}
        for v, src in self.views.items():  # the input's gm bytes seen in the view's shape
            args[v] = kb.view(args[src], v.type.get_shape())
        outs = dict(zip(self.req.outputs, kb.outputs))
        size = math.prod(self.lhs.type.get_shape())
        scratch = kb.scratch([blocks * size], self.lhs.type.element_type, "normed")
        with kb.scope("ub"):
            self.row.emit_into(kb, {v: args[v] for v in self.row.req.inputs},
                               {v: (scratch, True) if v is self.lhs else (outs[v], False)
                                for v in self.row.req.outputs})
        # the next phase reuses ub, and the cube reads the copy the vector unit stored
        kb.barrier("ALL")
        kb.inputs = [scratch if v is self.lhs else args[v] for v in self.cube.inputs]
        kb.outputs = [outs[v] for v in self.cube.outputs]
        rows = size // self.lhs.type.get_shape()[-1]
        return kb.mul(kb.block_idx(), rows) if blocks > 1 else 0


def split(req: KernelRequest) -> Prologue | None:
    """The prologue of a request whose ops before its first cube op are row-template ops
    ending in a normalisation that only the cube ops read, as their lhs; None otherwise."""
    first = next((i for i, op in enumerate(req.ops) if op_info.CUBE.takes(op)), None)
    if not first:
        return None
    pre, rest = req.ops[:first], req.ops[first:]
    views = {}
    while len(pre) > 1 and pre[0].has_trait(ViewLike) and pre[0].operands[0] in req.inputs \
            and all(g.constant_value_of(v) is not None for v in pre[0].operands[1:]) \
            and all(u.operation in pre for u in pre[0].results[0].uses):
        # a reshape of an input (the 2-D product of the FX path's o_proj): the row part reads
        # the input's bytes in the view's shape (the row template's canonical space takes
        # a view of what it computes, not of what it loads)
        views[pre[0].results[0]] = pre[0].operands[0]
        pre = pre[1:]
    last = pre[-1]
    if not last.has_trait(Normalization) or len(last.results) != 1:
        return None
    lhs = last.results[0]
    if lhs in req.outputs or not lhs.uses or any(
            not isinstance(u.operation, g.MatMulOp) or u.index != 0 or u.operation not in rest for u in lhs.uses):
        return None
    inside = set(pre)
    if any(u.operation in rest for op in pre[:-1] for r in op.results for u in r.uses):
        return None  # the cube side reads only the normalised rows
    if any(op_info.CUBE.takes(op) for op in pre):
        return None
    pre_outs = [v for v in req.outputs if v.owner in inside]
    row_inputs = list(dict.fromkeys(v for op in pre for v in op.operands if v.owner not in inside))
    if any(v not in req.inputs and v not in views for v in row_inputs):
        return None
    if any(v in req.outputs for v in views):
        return None
    # every block normalises every row (its own copy): a shape range's extent is the cube's
    row = replace(req, ops=pre, inputs=row_inputs, outputs=[*pre_outs, lhs], kind="vector", extent=None)
    cube = replace(req, ops=rest, inputs=[*req.inputs, lhs], outputs=[v for v in req.outputs if v not in pre_outs])
    try:
        return Prologue(req, RowKernel(row), cube, lhs, views)
    except Reject:
        return None
