"""A normalisation run over the rows a matmul kernel computes (graph-fuse's norm epilogue).

A post-LN transformer's out-projection is followed by the residual Add and a LayerNorm over
the hidden dim, which is the product's N. As a kernel of its own, the Add + LayerNorm costs a
launch and a round trip of the product through HBM. Here it is the matmul kernel's epilogue:

- each work item computes whole rows of the product ([mt, N]: every N tile of its rows,
  sharing the lhs panel in l1, tiling.py `whole_rows`);
- FIX stages them in a gm scratch (the 910B has no l0c -> ub path);
- the block's vector unit runs the row template's code over those rows (vector/row.py,
  `RowKernel.window`) while the cube goes on with the next item.

The blocks cannot wait for each other, so rows are the unit: every item reads the whole right
operand, which graph-fuse accepts only where that costs less than the launch and the round
trip it saves (passes/graph/fuse.py, `norm_epilogues`): an out-projection (K = N = hidden),
not an FFN's down projection (K = 4 x hidden).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from xdsl.ir import SSAValue

from geir.dialects import graph as g
from geir.dialects.traits import Normalization, ViewLike
from geir.ir.types import is_float
from geir.lowering.templates.common import KernelBuilder, KernelRequest, ceil_div, itemsize, vector_cores_per_block
from geir.lowering.templates.vector import Reject, RowKernel
from geir.lowering.templates.vector.row import RowWindow
from geir.target import op_info


@dataclass
class NormEpilogue:
    """The split of a request: the kernel's own request (`req`), the product alone (`cube`,
    whose one output is the product) and the row template of the ops after it (`row`, which
    reads the product as one of its inputs)."""

    req: KernelRequest
    cube: KernelRequest
    row: RowKernel
    product: SSAValue

    def setup(self, kb: KernelBuilder, rows: int) -> RowWindow:
        """At the kernel's entry: a gm scratch for the product becomes the cube part's output
        and the row part's tile-invariant values are computed; then the builder's inputs and
        outputs are the cube request's. Returns what emits a window of at most `rows` rows."""
        args = {v: x for v, x in reversed(list(zip(self.req.inputs, kb.inputs)))}
        outs = dict(zip(self.req.outputs, kb.outputs))
        scratch = kb.scratch(list(self.product.type.get_shape()), self.product.type.element_type, "product")
        args[self.product] = scratch
        window = self.row.window(kb, args, outs, rows, self.subs)
        kb.inputs = [args[v] for v in self.cube.inputs]
        kb.outputs = [scratch]
        return window

    @property
    def subs(self) -> int:
        """The vector cores of a block that share a window's rows (`ascend.sub_block`s)."""
        return vector_cores_per_block(self.req.device)

    def window_cycles(self, rows: int) -> int:
        """Cube-clock cycles of the vector cores' work on `rows` rows, as the tilings price it:
        each core's share of the row part's loads, its ops' vector passes in f32 and its stores,
        one after another."""
        cost, spec = self.req.cost, self.req.device
        rows = ceil_div(rows, self.subs)
        n = self.row.space.shape[-1]
        loads = sum(itemsize(v.type.element_type) for v in self.row.loaded if 0 in self.row.space.dims[v])
        stores = sum(itemsize(v.type.element_type) for v in dict.fromkeys(self.row.req.outputs))
        nbytes = rows * n * 4
        vec = 0
        for op in self.row.req.ops:
            if op.has_trait(ViewLike):
                continue
            for cls, k in op_info.VECTOR_PASSES.get(type(op), (("binary", 1),)):
                vec += k * cost.vector_cycles(cls, nbytes, "f32")
        return (cost.dma_cycles(rows * n * loads, "gm", "ub") + cost.dma_cycles(rows * n * stores, "ub", "gm")
                + math.ceil(vec * spec.cube_clock_hz / spec.vector_clock_hz))


def split(req: KernelRequest) -> NormEpilogue | None:
    """The norm epilogue of a request whose ops are one float matmul (with views of its
    inputs before it) and, after it, row-template ops with a normalisation over the product's
    last dim, reading the product and the request's inputs; None otherwise."""
    cubes = [i for i, op in enumerate(req.ops) if op_info.CUBE.takes(op)]
    if len(cubes) != 1:
        return None
    i = cubes[0]
    mm = req.ops[i]
    product = mm.results[0]
    pre, rest = req.ops[: i + 1], req.ops[i + 1:]
    if not isinstance(mm, g.MatMulOp) or not is_float(product.type.element_type) or product in req.outputs \
            or not any(op.has_trait(Normalization) for op in rest):
        return None
    inside_pre, inside_rest = set(pre), set(rest)
    if any(u.operation not in inside_rest for u in product.uses) or any(
            u.operation not in inside_pre for op in pre[:-1] for r in op.results for u in r.uses):
        return None  # the row part reads the product alone of the cube side
    cube_inputs = list(dict.fromkeys(v for op in pre for v in op.operands if v.owner not in inside_pre))
    row_inputs = list(dict.fromkeys(v for op in rest for v in op.operands if v.owner not in inside_rest))
    if any(v not in req.inputs for v in cube_inputs) or any(v is not product and v not in req.inputs
                                                            for v in row_inputs):
        return None
    if any(v.owner in inside_pre for v in req.outputs):
        return None
    row_req = replace(req, ops=rest, inputs=row_inputs, outputs=list(req.outputs), kind="vector")
    try:
        row = RowKernel(row_req)
    except Reject:
        return None
    space = row.space
    shape = list(product.type.get_shape())
    # the space is the product's rows x its N, in order, and only N is reduced
    if len(space.shape) != 2 or space.shape[1] != shape[-1] or space.shape[0] != math.prod(shape[:-1]) \
            or space.dims.get(product) != frozenset({0, 1}) or row.rd != frozenset({1}):
        return None
    cube = replace(req, ops=pre, inputs=cube_inputs, outputs=[product])
    return NormEpilogue(req, cube, row, product)
