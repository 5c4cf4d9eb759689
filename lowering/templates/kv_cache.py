"""The KV-cache write kernel: graph.kv_cache_write as a few box copies at a run-time row.

The cache [A, L, B] (A the dims before the written axis, B those after it, flattened) gets the
update [A, n, B] at rows position .. position + n - 1. Each block reads the position once on
the scalar pipe (memref.load from gm, as the gather kernel reads its indices) and copies its
boxes of the update gm -> ub -> gm to that row offset of the cache: n rows move, the other
L - n stay where they are. The lowering passes the cache's own buffer as the result when the
cache is a function argument updated in place (attr_names.UPDATES), so a decode step never
copies the cache; otherwise it copies the cache into the result first.

The update may be a rotation's result (graph-fuse's `cache-write`: a decoder's K, rotated on
its way into the cache): the kernel then reads the rotation's input and rotates each box in
ub - rot = [-x2, x1] of the row's halves (vmuls, vcopy), x * cos + rot * sin with cos / sin
rows broadcast over the box (vbrcb) - before the store, so the rotated rows never pass
through gm on their own. It takes the halves form on whole rows of the last axis (the written
axis the one before it), cos / sin of one row or one per written row, halves on 32-byte
blocks in a type the vector unit computes in (f16, f32).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from xdsl.dialects.builtin import f16, f32
from xdsl.ir import SSAValue

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.lowering.templates.common import (
    KernelBuilder,
    KernelRequest,
    LoweringError,
    block_elems,
    ceil_div,
    itemsize,
    mark,
    shape_of,
    tile_offsets,
    tile_pieces,
)
from geir.lowering.templates.data import Transfer, box_buffers, slots_of, tile_budget, ub_view


def try_build(req: KernelRequest) -> a.KernelOp | None:
    """The request of one kv_cache_write whose inputs are (update, position) and whose output
    is the cache's buffer (the lowering's `cache_write` request), or of a rotation and the
    write of its result (a `cache-write` fusion); None for anything else."""
    if len(req.ops) in (2, 3) and isinstance(req.ops[-1], g.KvCacheWriteOp):
        return _rotated(req, req.ops[:-1], req.ops[-1])
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
    _boxes(kb, src, dst, kb.load_index(pos_buf), pieces, bufs)
    return mark(kb.finish(), attr_names.TEMPLATE, "kv_cache")


def _boxes(kb: KernelBuilder, src: SSAValue, dst: SSAValue, pos: SSAValue, pieces: list, bufs: list,
           loaded: Callable | None = None, compute: Callable | None = None) -> None:
    """The boxes of the update [A, n, B] (tile_pieces), each gm -> ub (then `loaded(s, at,
    ext)`, `compute(s, ext)`) -> the cache [A, L, B] at row pos + its row offset."""
    shape = list(src.type.get_shape())
    for i, (counts, ext, cut) in enumerate(pieces):
        tiles = math.prod(counts)
        per = ceil_div(tiles, min(kb.kernel.block_count, tiles))
        at = {}

        def load(t, s, counts=counts, ext=ext, cut=cut):
            at[s] = tile_offsets(kb, t, counts, ext, shape, cut)
            kb.copy(kb.tile(src, at[s], ext), ub_view(kb, bufs[s], ext))
            if loaded:
                loaded(s, at[s], ext)

        def store(t, s, ext=ext):
            oa, oq, ob = at[s]
            kb.copy(ub_view(kb, bufs[s], ext), kb.tile(dst, [oa, kb.add(pos, oq), ob], ext))

        step = (lambda t, s, ext=ext: compute(s, ext)) if compute else None
        kb.pipeline(tiles, per, load, store, step, len(bufs), last_blocks=i > 0)


def _rotated(req: KernelRequest, rots: list[g.GraphOp], op: g.KvCacheWriteOp) -> a.KernelOp | None:
    """A rotation whose result is the write's update, rotated box by box in ub (module doc);
    with it, another rotation by the same angles whose result is an output (a decoder's q),
    rotated in the same kernel first."""
    rot = next((r for r in rots if r.results[0] is op.operands[1]), None)
    other = next((r for r in rots if r is not rot), None)
    written = [op.results[0], *([other.results[0]] if other else [])]
    if not isinstance(rot, g.RotaryEmbeddingOp) or len(req.outputs) != len(written) or set(req.outputs) != set(written):
        return None
    x, cos, sin = rot.operands
    if rot.attrs()["interleaved"] or any(v not in req.inputs for v in (x, cos, sin, op.operands[2])):
        return None
    if other is not None and (not isinstance(other, g.RotaryEmbeddingOp) or other.attrs()["interleaved"]
                              or list(other.operands[1:]) != [cos, sin] or other.operands[0] not in req.inputs
                              or shape_of(other.operands[0])[-2:] != shape_of(x)[-2:]):
        return None  # q: the same angles over rows of the same length and count
    cache, update = shape_of(op.operands[0]), shape_of(x)
    axis = op.attrs()["axis"] % len(cache)
    elt = x.type.element_type
    A, L, n, D = math.prod(cache[:axis]), cache[axis], update[axis], update[-1]
    rows = math.prod(shape_of(cos)) // D
    # the halves start on 32-byte blocks in the compute type: f16 ones that do not (a head dim
    # of 16, 48, ...) are rotated in f32, as the row template's rule does
    ct = elt if elt in (f16, f32) and D % (2 * block_elems(elt)) == 0 else f32
    if axis != len(cache) - 2 or A * n == 0 or elt not in (f16, f32) or D % (2 * block_elems(ct)):
        return None  # whole rows of the last axis, halves on 32-byte blocks
    if shape_of(sin) != shape_of(cos) or shape_of(cos)[-1] != D or rows not in (1, n) or \
            math.prod(shape_of(cos)[:-2]) != 1:
        return None  # one angle row, or one per written row, for every box
    try:
        return _rotated_kernel(req, op, x, cos, sin, ct, (A, L, n, D), rows, other)
    except LoweringError:  # the buffers do not fit after all: the fusion runs in pieces
        return None


def _rotated_kernel(req: KernelRequest, op: g.KvCacheWriteOp, x, cos, sin, ct, dims, rows: int,
                    other: g.GraphOp | None) -> a.KernelOp | None:
    A, L, n, D = dims
    elt = x.type.element_type
    kb = KernelBuilder(req, "vector", 1)
    arg = {v: kb.inputs[req.inputs.index(v)] for v in (x, cos, sin, op.operands[2])}
    src = kb.view(arg[x], [A, n, D])
    trig = [kb.view(arg[v], [1, rows, D]) for v in (cos, sin)]
    dst = kb.view(kb.outputs[req.outputs.index(op.results[0])], [A, L, D])
    q_boxes = None  # the other rotation's [Aq, n, D] rows, to its output at their own rows
    if other is not None:
        aq = math.prod(shape_of(other.operands[0])[:-2])
        q_boxes = (kb.view(kb.inputs[req.inputs.index(other.operands[0])], [aq, n, D]),
                   kb.view(kb.outputs[req.outputs.index(other.results[0])], [aq, n, D]))
    slots = slots_of(req)
    # a slot holds the box, three work tiles and two angle rows in the compute type (and the
    # box widened to it): the box gets that share of the slot's budget
    units = 1 + 5 * itemsize(ct) // itemsize(elt) + (itemsize(ct) // itemsize(elt) if ct != elt else 0)
    e = Transfer(src, src).plan(tile_budget(req, a.nbytes_of(src.type), slots, units) // units)
    if e[2] != D:
        return None
    pieces = tile_pieces([A, n, D], e)
    q_pieces = tile_pieces(list(q_boxes[0].type.get_shape()), e) if q_boxes else []
    bufs = box_buffers(kb, req, pieces + q_pieces, e, elt, slots)
    names = ("rot", "cos_box", "sin_box") + (("wide",) if ct != elt else ())
    work = [[kb.alloc(list(e), ct, "ub", f"{name}{s}") for name in names] for s in range(len(bufs))]
    rows_in = [[kb.alloc([1, e[1], D], elt, "ub", f"{n}{s}") for n in ("cos_row", "sin_row")] for s in range(len(bufs))]
    rows_ct = rows_in if ct == elt else \
        [[kb.alloc([1, e[1], D], ct, "ub", f"{n}_f{s}") for n in ("cos_row", "sin_row")] for s in range(len(bufs))]
    half = D // 2

    def load_rows(s, at, ext):  # the angle rows of the box's written rows (or the one row)
        size = [1, ext[1] if rows > 1 else 1, D]
        for g_, r in zip(trig, rows_in[s]):
            kb.copy(kb.tile(g_, [0, at[1] if rows > 1 else 0, 0], size), kb.tile(r, [0, 0, 0], size))

    def rotate(s, ext):
        xe = ub_view(kb, bufs[s], ext)
        rot, cs, sn, *wide = (ub_view(kb, b, ext) for b in work[s])
        xv = wide[0] if wide else xe
        if wide:
            kb.vec(a.VcastOp, xe, xv)
        size = [1, ext[1] if rows > 1 else 1, D]
        for r, rc, b in zip(rows_in[s], rows_ct[s], (cs, sn)):  # the angle rows over the box
            if rc is not r:
                kb.vec(a.VcastOp, kb.tile(r, [0, 0, 0], size), kb.tile(rc, [0, 0, 0], size))
            kb.vec(a.VbrcbOp, kb.tile(rc, [0, 0, 0], size), b)
        part = [*ext[:2], half]
        kb.vec(a.VmulsOp, kb.tile(xv, [0, 0, half], part), kb.scalar(-1.0, ct), kb.tile(rot, [0, 0, 0], part))
        kb.vec(a.VcopyOp, kb.tile(xv, [0, 0, 0], part), kb.tile(rot, [0, 0, half], part))
        kb.vec(a.VmulOp, rot, sn, rot)
        kb.vec(a.VmulOp, xv, cs, xv)
        kb.vec(a.VaddOp, xv, rot, xv)
        if wide:
            kb.vec(a.VcastOp, xv, xe)

    if q_boxes:
        _boxes(kb, *q_boxes, 0, q_pieces, bufs, load_rows, rotate)
    _boxes(kb, src, dst, kb.load_index(kb.view(arg[op.operands[2]], [1])), pieces, bufs, load_rows, rotate)
    return mark(kb.finish(), attr_names.TEMPLATE, "kv_cache")
