"""Vector kernels: elementwise chains with broadcasting, reductions, softmax, normalisations,
pooling and LRN, all on ub through the vector unit. What each template takes is
target/op_info.py's (ROW, POOL, LRN).

**The row template** (row.py) takes any chain of elementwise ops, broadcasts, views and
reductions (reduce_*, softmax, log_softmax, layer_norm, rms_norm, instance_norm, global
pools, batch_norm as scale/shift) whose reductions all keep whole rows:

1. *Canonical space* (space.py). Every value of the kernel is placed in one iteration space
   S (the shape of its largest value): each of its non-unit dims is one dim of S (numpy
   broadcasting aligns them; a reduction without keepdims or a view keeps the order), so a
   value is S with some dims collapsed to 1. Adjacent dims of S that every value (and every
   reduction) treats alike are merged: an unbroadcast chain is 1-d, a per-channel scale
   on NCHW is [N, C, H*W] with the scale [1, C, 1].
2. *Tiles* (row.py). The tile is S' with the outer dims cut: dims after `p` whole, dim `p`
   cut to the largest extent whose buffers fit ub (measured by emitting the body), dims
   before `p` one at a time; reduced dims are never cut, so each tile holds whole rows.
   Tiles are spread over the vector cores in contiguous ranges, with a tail tile when the
   cut does not divide.
3. *Body* (body.py; the op rules in rules.py, activations.py, reductions.py). Per tile: copy
   in (MTE2) each input's tile, compute (V) each op into ub buffers that are reused as soon
   as a value is dead (in place when possible), copy out (MTE3) each output's tile; `vbrcb`
   broadcasts a smaller operand, `vreduce` reduces over the tile's dims, scalar constants
   become `vadds`/`vmuls`/... operands. Values that do not depend on the tile (a BN scale,
   a LayerNorm gamma) are loaded and computed once before the loop. With double buffering
   every per-tile buffer exists twice (slots 0 and 1, flag ids 0/1).

**Pooling** (pool.py; max, average; 2-d NCHW) moves 8 or 16 channels (32 bytes) to the
innermost dim with `vtranspose`, as the NC1HWC0 layout does on the device, so each window
offset is a strided subview of the padded plane and a window is `kh * kw` `vmax`/`vadd`;
tiles are (channel group, band of output rows); a pool a quantize reads alone quantizes its
result tile before it leaves. On NC1HWC0 tensors the C0 lanes already are
innermost: the rows go into the plane by DMA and the result out by DMA, no transposes.
Global pools on NC1HWC0 are row reductions over H*W that keep the lanes. **LRN** (lrn.py)
squares, sums `size` shifted channel slices, and scales in a [C, H*W] tile (NC1HWC0:
vtransposed to channel rows [C1 * C0, pixels] and back).
"""

from __future__ import annotations

from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.dialects.traits import ViewLike
from geir.lowering.templates.common import KernelRequest
from geir.lowering.templates.vector.lrn import build_lrn
from geir.lowering.templates.vector.pool import PoolGeometry, build_pool
from geir.lowering.templates.vector.row import RowKernel
from geir.lowering.templates.vector.rules import RULES
from geir.lowering.templates.vector.space import Reject
from geir.target import op_info

__all__ = ["RULES", "PoolGeometry", "Reject", "RowKernel", "build_lrn", "build_pool", "try_build"]


def try_build(req: KernelRequest) -> a.KernelOp | None:
    if not req.ops:
        return None
    if op_info.POOL.takes(req.ops[0]) and (len(req.ops) == 1 or isinstance(req.ops[-1], g.QuantizeOp)):
        return build_pool(req)  # a pool, or one quantized on its way out (graph-fuse's pool-quantize)
    if op_info.LRN.takes(req.ops[0]) and (len(req.ops) == 1 or isinstance(req.ops[-1], g.QuantizeOp)):
        return build_lrn(req)  # an LRN, or one quantized on its way out (graph-fuse's lrn-quantize)
    if all(op.has_trait(ViewLike) for op in req.ops):
        return None  # a copy: the data template
    try:
        return RowKernel(req).build()
    except Reject:
        return None
