"""The KV-cache write kernel: graph.kv_cache_write as a few box copies at a run-time row.

The cache [A, L, B] (A the dims before the written axis, B those after it, flattened) gets the
update [A, n, B] at rows position .. position + n - 1. Each block reads the position once on
the scalar pipe (memref.load from gm, as the gather kernel reads its indices) and copies its
boxes of the update gm -> ub -> gm to that row offset of the cache: n rows move, the other
L - n stay where they are. The lowering passes the cache's own buffer as the result when the
cache is a function argument updated in place (attr_names.UPDATES), so a decode step never
copies the cache; otherwise it copies the cache into the result first.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.lowering.templates.common import (
    KernelBuilder,
    KernelRequest,
    ceil_div,
    mark,
    shape_of,
    tile_offsets,
    tile_pieces,
)
from geir.lowering.templates.data import Transfer, box_buffers, slots_of, tile_budget, ub_view


def try_build(req: KernelRequest) -> a.KernelOp | None:
    """The request of one kv_cache_write whose inputs are (update, position) and whose output
    is the cache's buffer (the lowering's `cache_write` request); None for anything else."""
    if len(req.ops) != 1 or not isinstance(op := req.ops[0], g.KvCacheWriteOp):
        return None
    if req.inputs != list(op.operands[1:]) or req.outputs != [op.results[0]]:
        return None
    cache, update = shape_of(op.operands[0]), shape_of(op.operands[1])
    axis = op.attrs()["axis"] % len(cache)
    A, L, B, n = math.prod(cache[:axis]), cache[axis], math.prod(cache[axis + 1:]), update[axis]
    if A * n * B == 0:
        return None
    kb = KernelBuilder(req, "vector", 1)
    src = kb.view(kb.inputs[0], [A, n, B])
    pos_buf = kb.view(kb.inputs[1], [1])
    dst = kb.view(kb.outputs[0], [A, L, B])
    elt = op.operands[1].type.element_type
    slots = slots_of(req)
    e = Transfer(src, src).plan(tile_budget(req, a.nbytes_of(src.type), slots))
    pieces = tile_pieces([A, n, B], e)
    bufs = box_buffers(kb, req, pieces, e, elt, slots)
    raw = kb.emit(memref.LoadOp.get(pos_buf, [kb.index(0)])).results[0]
    pos = raw if raw.type == IndexType() else kb.emit(arith.IndexCastOp(raw, IndexType())).result
    for i, (counts, ext, cut) in enumerate(pieces):
        tiles = math.prod(counts)
        per = ceil_div(tiles, min(kb.kernel.block_count, tiles))
        at = {}

        def load(t, s, counts=counts, ext=ext, cut=cut):
            at[s] = tile_offsets(kb, t, counts, ext, [A, n, B], cut)
            kb.copy(kb.tile(src, at[s], ext), ub_view(kb, bufs[s], ext))

        def store(t, s, ext=ext):
            oa, oq, ob = at[s]
            kb.copy(ub_view(kb, bufs[s], ext), kb.tile(dst, [oa, kb.add(pos, oq), ob], ext))

        kb.pipeline(tiles, per, load, store, None, slots, last_blocks=i > 0)
    return mark(kb.finish(), attr_names.TEMPLATE, "kv_cache")
