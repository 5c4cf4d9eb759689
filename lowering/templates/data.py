"""Data-movement kernels: copies, transposes, slices, concat/split, pad, gather, tile.

Everything here is one building block, the tiled *box transfer*: a gm source seen with some
shape is copied to a gm destination through ub, box by box (MTE2 in, MTE3 out), with a
`vtranspose` in between when the dims are permuted. The boxes cover the destination: whole
inner dims, one dim cut into the largest extent that fits (with a tail box for the remainder),
outer dims one at a time; each box is a `memref.subview` of both sides. A slice is a strided
view of the source, concat/split write/read views at offsets along the axis, pad fills the
border boxes with `vdup` and moves the interior, depth_to_space is a transpose of 6-d views.

Views (reshape, flatten, squeeze, unsqueeze, identity, dropout) cost nothing inside a kernel:
a kernel input or output seen through views is the gm buffer reshaped (memref.collapse_shape /
expand_shape of a contiguous buffer). A lone view op is a flat copy.

A chain of views, transposes, slices and split parts (the per-head q/k/v split of a TorchScript
attention) moves nothing until its outputs: each output is composed as a strided view of one
input (offset, shape, strides, as numpy would: `Strided`, `strided_views`), read as one strided
subview and written with one transfer, transposing in ub where the destination order differs
from the source's. A step of the chain may be a reshape numpy would copy, if a later one makes
the view strided again (`Merged`: each dim as runs of size and stride). The attention template
reads q, k, v through the same composition and writes its output through `written_view`
(lowering/templates/attention.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerType, i64
from xdsl.ir import Attribute, BlockArgument, OpResult, Operation, SSAValue

from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.dialects import formats
from geir.dialects.traits import ViewLike
from geir.target import op_info
from geir.lowering.templates.common import (
    KernelBuilder,
    tile_offsets,
    tile_pieces,
    KernelRequest,
    block_elems,
    ceil_div,
    itemsize,
    largest_fitting,
    mark,
    round_up,
    shape_of,
)
from geir.dialects import attr_names

MIN_TILE_BYTES = 16 * 1024
"""Smallest box worth a block of its own: below it, more blocks cost more than they save."""


def slots_of(req: KernelRequest) -> int:
    return 2 if req.double_buffer else 1


def tile_budget(req: KernelRequest, total_bytes: int, slots: int, buffers: int = 1) -> int:
    """Bytes of ub for the buffers of one slot: what fits, but no more than a share of the work
    per vector core (so big tensors spread over the cores) and no less than MIN_TILE_BYTES."""
    fit = req.device.buffer_bytes["ub"] // slots
    share = round_up(ceil_div(total_bytes, req.device.vector_cores), a.BLOCK_BYTES) * buffers
    return max(min(fit, max(share, MIN_TILE_BYTES * buffers)), 0)


def padded_bytes(shape: Sequence[int], elt: Attribute) -> int:
    """Bytes of a ub buffer holding `shape` (innermost dim rounded up to 32-byte blocks)."""
    if not shape:
        return a.BLOCK_BYTES
    return math.prod(shape[:-1]) * round_up(max(shape[-1], 1), block_elems(elt)) * itemsize(elt)


def ub_shape(shape: Sequence[int], elt: Attribute) -> list[int]:
    shape = list(shape) or [1]
    return [*shape[:-1], round_up(max(shape[-1], 1), block_elems(elt))]


def ub_view(kb: KernelBuilder, buf: SSAValue, shape: Sequence[int]) -> SSAValue:
    """The [shape] part of a padded ub buffer (a subview unless the padding is zero)."""
    shape = list(shape) or [1]
    return kb.tile(buf, [0] * len(shape), shape)


# ---------------------------------------------------------------------------
# The box transfer.
# ---------------------------------------------------------------------------


@dataclass
class Transfer:
    """Copy `src` (gm, shape I) to `dst` (gm, shape O) through ub; `perm[j]` is the source dim
    of destination dim j (None: the same order). Dims in `broadcast` are extent 1 in the
    source (it is read again for every index of them: np.tile). `fill` instead of `src`: the
    destination is set to a scalar (vdup), nothing is read."""

    src: SSAValue | None
    dst: SSAValue
    perm: tuple[int, ...] | None = None
    broadcast: frozenset[int] = frozenset()
    fill: SSAValue | None = None

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(self.dst.type.get_shape())

    @property
    def elt(self) -> Attribute:
        return self.dst.type.element_type

    def in_box(self, e: Sequence[int]) -> list[int]:
        """Source box of destination box `e` (in source order)."""
        if self.perm is None:
            return [1 if j in self.broadcast else x for j, x in enumerate(e)]
        box = [1] * len(e)
        for j, p in enumerate(self.perm):
            box[p] = e[j]
        return box

    def bytes(self, e: Sequence[int]) -> int:
        if self.fill is not None:
            return padded_bytes(e, self.elt)
        n = padded_bytes(self.in_box(e), self.elt)
        if self.perm is not None:
            n += padded_bytes(e, self.elt)
        return n

    def plan(self, budget: int) -> list[int]:
        """Box extents: inner dims whole, one dim cut to fit `budget`, outer dims 1."""
        shape = self.out_shape
        e = [1 if j in self.broadcast else x for j, x in enumerate(shape)]
        for j in range(len(shape)):
            if self.bytes(e) <= budget:
                break
            if j in self.broadcast:
                continue
            e[j] = 1
            if self.bytes(e) > budget:
                continue
            e[j] = largest_fitting(1, shape[j], lambda n: self.bytes(e[:j] + [n] + e[j + 1:]) <= budget)
            break
        return e


def _ntiles(shape: Sequence[int], e: Sequence[int], skip: frozenset[int] = frozenset()) -> list[int]:
    return [math.prod(c) for c, _, _ in tile_pieces(shape, e, skip)]


class TransferKernel:
    """Several transfers in one kernel, one after the other, each a tiled pipeline; the kernel's
    block_dim is the most boxes any of them has (capped by the vector cores)."""

    def __init__(self, req: KernelRequest, kb: KernelBuilder, transfers: list[Transfer]):
        self.req, self.kb, self.transfers = req, kb, transfers
        self.slots = slots_of(req)
        total = sum(a.nbytes_of(t.dst.type) for t in transfers)
        self.plans = []
        for t in transfers:
            budget = tile_budget(req, total, self.slots, 1 if t.perm is None else 2)
            self.plans.append(t.plan(budget))
        most = max((n for t, e in zip(transfers, self.plans) for n in _ntiles(t.out_shape, e, t.broadcast)), default=1)
        self.block_dim = max(1, min(req.device.vector_cores, most))
        kb.kernel.block_dim = a.IntegerAttr(self.block_dim, i64)

    def emit(self) -> a.KernelOp:
        for t, e in zip(self.transfers, self.plans):
            with self.kb.scope("ub"):  # transfers run one after the other: they share ub
                self._emit(t, e)
        return self.kb.finish()

    def _buffers(self, t: Transfer, e: Sequence[int], slots: int) -> list[tuple[SSAValue | None, SSAValue]]:
        kb = self.kb
        bufs = []
        for s in range(slots):
            sfx = str(s) if slots > 1 else ""
            inb = None if t.fill is not None else kb.alloc(ub_shape(t.in_box(e), t.elt), t.elt, "ub", "in_ub" + sfx)
            outb = inb if (t.perm is None and t.fill is None) else kb.alloc(ub_shape(e, t.elt), t.elt, "ub", "out_ub" + sfx)
            bufs.append((inb, outb))
        return bufs

    def _emit(self, t: Transfer, e: list[int]) -> None:
        kb = self.kb
        shape = t.out_shape
        pieces = tile_pieces(shape, e, t.broadcast)
        most = max(ceil_div(math.prod(c), min(self.block_dim, math.prod(c))) for c, _, _ in pieces)
        slots = self.slots if most > 1 else 1
        bufs = self._buffers(t, e, slots)
        for i, (counts, ext, cut_offset) in enumerate(pieces):
            n = math.prod(counts)
            per = ceil_div(n, min(self.block_dim, n))
            state: dict[int, tuple] = {}

            def offsets(tile, counts=counts, ext=ext, cut_offset=cut_offset):
                return tile_offsets(kb, tile, counts, ext, shape, cut_offset, t.broadcast)

            def load(tile, s, ext=ext, offsets=offsets):
                off = offsets(tile)
                state[s] = off
                inb, _ = bufs[s]
                if t.fill is not None:
                    return
                box = t.in_box(ext)
                if t.perm is None:
                    src_off = [0 if j in t.broadcast else o for j, o in enumerate(off)]
                else:
                    src_off = [0] * len(off)
                    for j, p in enumerate(t.perm):
                        src_off[p] = off[j]
                kb.copy(kb.tile(t.src, src_off, box), ub_view(kb, inb, box) if box else inb)

            def compute(tile, s, ext=ext):
                inb, outb = bufs[s]
                if t.fill is not None:
                    kb.vec(a.VdupOp, t.fill, ub_view(kb, outb, ext))
                else:
                    kb.vec(a.VtransposeOp, ub_view(kb, inb, t.in_box(ext)), ub_view(kb, outb, ext),
                           perm=DenseArrayBase.from_list(i64, list(t.perm)))

            def store(tile, s, ext=ext):
                _, outb = bufs[s]
                src = ub_view(kb, outb, ext) if ext else outb
                kb.copy(src, kb.tile(t.dst, state[s], ext))

            needs_v = t.perm is not None or t.fill is not None
            kb.pipeline(n, per, load, store, compute if needs_v else None, slots, last_blocks=i > 0)


def transfer_kernel(req: KernelRequest, build) -> a.KernelOp:
    """A kernel of box transfers: `build(kb)` views the arguments and returns the transfers."""
    kb = KernelBuilder(req, "vector", 1)
    transfers = [t for t in build(kb) if math.prod(t.out_shape) > 0]
    if not transfers:
        return mark(kb.finish(), attr_names.TEMPLATE, "data")
    runs = _byte_runs(transfers)
    kernel = mark(TransferKernel(req, kb, transfers).emit(), attr_names.TEMPLATE, "data")
    if runs is not None:
        kernel.attributes[attr_names.BYTE_COPIES] = ArrayAttr([DenseArrayBase.from_list(i64, list(r)) for r in runs])
    return kernel


def _contiguous(value: SSAValue) -> tuple[int, int, int] | None:
    """(argument position, byte offset, bytes) of a view of a kernel argument whose elements
    are one row-major run of the argument's bytes; None otherwise."""
    root = value
    while isinstance(root, OpResult) and isinstance(root.op, a.VIEW_OPS):
        root = root.op.operands[0]
    if not isinstance(root, BlockArgument):
        return None
    t = value.type
    try:
        offset, strides = t.get_offset(), t.get_strides()
    except Exception:  # noqa: BLE001 - a layout without static strides: not a run
        return None
    if not isinstance(offset, int) or any(not isinstance(x, int) for x in strides):
        return None
    expect = 1
    for n, stride in reversed(list(zip(t.get_shape(), strides))):
        if n != 1:
            if stride != expect:
                return None
            expect *= n
    item = itemsize(t.element_type)
    return root.index, offset * item, math.prod(t.get_shape()) * item


def _byte_runs(transfers: list[Transfer]) -> list[tuple[int, int, int, int, int]] | None:
    """The (dst, dst_offset, src, src_offset, bytes) runs of transfers that are all plain copies
    between contiguous runs of bytes (no permutation, broadcast or fill); None otherwise."""
    runs = []
    for t in transfers:
        if t.perm is not None or t.broadcast or t.fill is not None or t.src is None:
            return None
        if t.src.type.element_type != t.dst.type.element_type:
            return None
        src, dst = _contiguous(t.src), _contiguous(t.dst)
        if src is None or dst is None or src[2] != dst[2]:
            return None
        runs.append((dst[0], dst[1], src[0], src[1], dst[2]))
    return runs


def _flat(kb: KernelBuilder, value: SSAValue) -> SSAValue:
    return kb.view(value, [max(1, math.prod(value.type.get_shape()))])


def build_copy(req: KernelRequest) -> a.KernelOp:
    """inputs[0] -> outputs[0] (same number of elements): a flat tiled copy."""
    return transfer_kernel(req, lambda kb: [Transfer(_flat(kb, kb.inputs[0]), _flat(kb, kb.outputs[0]))])


# ---------------------------------------------------------------------------
# The ops.
# ---------------------------------------------------------------------------


def _const(value: SSAValue | None) -> np.ndarray | None:
    return None if value is None else g.constant_value_of(value)


def _collapse_perm(shape: Sequence[int], perm: Sequence[int]) -> tuple[list[int], list[int]]:
    """Drop size-1 dims and merge source dims that stay adjacent and in order: (source shape,
    perm) of the smallest equivalent transpose."""
    keep = [d for d in range(len(shape)) if shape[d] != 1]
    out_dims = [p for p in perm if shape[p] != 1]
    groups: list[list[int]] = []
    for p in out_dims:
        if groups and groups[-1][-1] + 1 == p:
            groups[-1].append(p)
        else:
            groups.append([p])
    order = sorted(range(len(groups)), key=lambda i: groups[i][0])
    src_shape = [math.prod(shape[d] for d in groups[i]) for i in order]
    rank_of = {gi: r for r, gi in enumerate(order)}
    new_perm = [rank_of[i] for i in range(len(groups))]
    del keep
    return src_shape, new_perm


def _transfer_transpose(kb: KernelBuilder, src: SSAValue, dst: SSAValue, perm: Sequence[int]) -> list[Transfer]:
    shape = list(src.type.get_shape())
    src_shape, p = _collapse_perm(shape, perm)
    if not src_shape:
        return [Transfer(_flat(kb, src), _flat(kb, dst))]
    out_shape = [src_shape[i] for i in p]
    s = kb.view(src, src_shape)
    d = kb.view(dst, out_shape)
    if p == sorted(p):
        return [Transfer(s, d)]
    return [Transfer(s, d, tuple(p))]


def _storage_axis(t: Attribute, axis: int) -> int:
    """The storage dim of logical axis `axis` of a tensor type: a concat of formatted tensors
    (graph-layout allows NC1HWC0 along whole C1 blocks, N, H, W; FRACTAL_NZ along batch axes;
    NCHW / NHWC storage along any axis) moves the same dim of the storage arrays."""
    axis %= max(len(formats.logical_shape(t)), 1)
    storage = formats.storage_of(t)
    if storage not in (formats.NCHW, formats.NHWC, formats.NC1HWC0):
        return axis
    logical = formats.NHWC if formats.origin_of(t) == formats.NHWC else formats.NCHW
    stored = formats.NHWC if storage == formats.NHWC else formats.NCHW  # NC1HWC0: C as C1
    return stored.index(logical[axis])


def _slice_params(op: g.SliceOp) -> tuple[list[int], list[int], list[int]] | None:
    params = _slice_box(op)
    if params is None:
        return None
    out, strides = params[1], params[2]
    if out and strides[-1] != 1 and out[-1] > 1:
        return None  # DMA moves rows: a strided innermost dim needs a gather
    return params


def _slice_box(op: g.SliceOp) -> tuple[list[int], list[int], list[int]] | None:
    """(offsets, sizes, steps) per input dim of a slice with constant parameters and positive
    steps; None otherwise."""
    x = shape_of(op.inputs[0])
    starts, ends = _const(op.inputs[1]), _const(op.inputs[2])
    axes = _const(op.inputs[3]) if len(op.inputs) > 3 else None
    steps = _const(op.inputs[4]) if len(op.inputs) > 4 else None
    if starts is None or ends is None or (len(op.inputs) > 3 and axes is None) or (len(op.inputs) > 4 and steps is None):
        return None
    out = shape_of(op.output)
    offs, strides = [0] * len(x), [1] * len(x)
    rank = len(x)
    axes_l = [int(v) % rank for v in axes.reshape(-1)] if axes is not None else list(range(len(starts.reshape(-1))))
    steps_l = [int(v) for v in steps.reshape(-1)] if steps is not None else [1] * len(axes_l)
    for ax, s, st in zip(axes_l, starts.reshape(-1), steps_l):
        dim = x[ax]
        s = int(s)
        s = s + dim if s < 0 else s
        s = min(max(s, 0), dim) if st > 0 else min(max(s, 0), dim - 1)
        if st <= 0:
            return None
        offs[ax], strides[ax] = s, st
    return offs, list(out), strides


def _split_like(kb: KernelBuilder, whole: SSAValue, parts: list[SSAValue], axis: int, into: bool) -> list[Transfer]:
    """concat (into=True: parts -> whole) or split (whole -> parts) along `axis`, as 2-d views
    [outer, extent * inner]."""
    shape = list(whole.type.get_shape())
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    w = kb.view(whole, [outer, shape[axis] * inner])
    transfers, offset = [], 0
    for part in parts:
        n = part.type.get_shape()[axis]
        if n:
            pv = kb.view(part, [outer, n * inner])
            region = kb.tile(w, [0, offset * inner], [outer, n * inner])
            transfers.append(Transfer(pv, region) if into else Transfer(region, pv))
        offset += n
    return transfers


def _pad_transfers(kb: KernelBuilder, op: g.PadOp, x: SSAValue, y: SSAValue) -> list[Transfer] | None:
    if op.attrs()["mode"] != "constant":
        return None
    xs = shape_of(op.inputs[0])
    rank = len(xs)
    pads = _const(op.inputs[1])
    cv = _const(op.inputs[2]) if len(op.inputs) > 2 else None
    axes = _const(op.inputs[3]) if len(op.inputs) > 3 else None
    if pads is None or (len(op.inputs) > 2 and cv is None) or (len(op.inputs) > 3 and axes is None):
        return None
    pads = [int(v) for v in pads.reshape(-1)]
    axes_l = [int(v) % rank for v in axes.reshape(-1)] if axes is not None else list(range(rank))
    k = len(axes_l)
    begin, end = [0] * rank, [0] * rank
    for j, ax in enumerate(axes_l):
        begin[ax], end[ax] = pads[j], pads[j + k]
    if any(v < 0 for v in (*begin, *end)):
        return None  # cropping pads
    elt = y.type.element_type
    value = 0 if cv is None or cv.size == 0 else cv.reshape(-1)[0].item()
    if elt == IntegerType(1):
        return None
    ys = shape_of(op.output)
    transfers = []
    fill = kb.scalar(value, elt)
    for d in range(rank):
        for lo, n in ((0, begin[d]), (begin[d] + xs[d], end[d])):
            if n <= 0:
                continue
            offs = [begin[i] if i < d else 0 for i in range(rank)]
            sizes = [xs[i] if i < d else ys[i] for i in range(rank)]
            offs[d], sizes[d] = lo, n
            if math.prod(sizes):
                transfers.append(Transfer(None, kb.tile(y, offs, sizes), fill=fill))
    if math.prod(xs):
        transfers.append(Transfer(x, kb.tile(y, begin, list(xs))))
    return transfers


def box_buffers(kb: KernelBuilder, req: KernelRequest, pieces: list, e: Sequence[int], elt: Attribute,
                slots: int) -> list[SSAValue]:
    """The kernel's blocks (one per box, up to the vector cores) and the ub buffers of a box
    pipeline over `pieces` (tile_pieces) of extents `e`: `slots` of them, one when every box
    has a block of its own (nothing to overlap)."""
    most = max(math.prod(c) for c, _, _ in pieces)
    kb.kernel.block_dim = a.IntegerAttr(max(1, min(req.device.vector_cores, most)), i64)
    if most <= kb.kernel.block_count:
        slots = 1
    return [kb.alloc(ub_shape(e, elt), elt, "ub", f"row_ub{s}" if slots > 1 else "row_ub") for s in range(slots)]


def _gather_kernel(req: KernelRequest, op: g.GatherOp) -> a.KernelOp | None:
    """data [A, N, B], indices [Q] -> out [A, Q, B]: per box of (a, q, b) one index read on the
    scalar pipe (memref.load from gm, negative indices wrapped), then a box copy."""
    data_t, idx_t = op.inputs[0].type, op.inputs[1].type
    ds = list(data_t.get_shape())
    axis = op.attrs()["axis"] % len(ds)
    A, N, B = math.prod(ds[:axis]), ds[axis], math.prod(ds[axis + 1:])
    Q = math.prod(idx_t.get_shape())
    if not isinstance(idx_t.element_type, IntegerType) or A * Q * B == 0:
        return None
    kb = KernelBuilder(req, "vector", 1)
    data = kb.view(kb.inputs[req.inputs.index(op.inputs[0])], [A, N, B])
    idx = _flat(kb, kb.inputs[req.inputs.index(op.inputs[1])])
    out = kb.view(kb.outputs[0], [A, Q, B])
    elt = data_t.element_type
    slots = slots_of(req)
    budget = tile_budget(req, a.nbytes_of(out.type), slots)
    t = Transfer(data, out)
    e = t.plan(budget)
    if Q > 1:
        e[0], e[1] = 1, 1
    pieces = tile_pieces([A, Q, B], e)
    bufs = box_buffers(kb, req, pieces, e, elt, slots)
    # a shape range's dim in the indices (an embedding's token ids): the first rows of each
    # group run, one index a box (the indices are the caller's, padded with 0s)
    real = kb.real_groups(Q) if req.extent is not None and A == 1 and Q > 1 else None
    for i, (counts, ext, cut) in enumerate(pieces):
        n = math.prod(counts)
        per = ceil_div(n, min(kb.kernel.block_count, n))
        state = {}

        def offsets(tile, counts=counts, ext=ext, cut=cut):
            return tile_offsets(kb, tile, counts, ext, [A, Q, B], cut)

        def load(tile, s, ext=ext, offsets=offsets):
            oa, oq, ob = offsets(tile)
            raw = kb.load_index(idx, oq)
            neg = kb.emit(arith.CmpiOp(raw, kb.index(0), "slt")).result
            wrapped = kb.emit(arith.AddiOp(raw, kb.index(N))).result
            row = kb.emit(arith.SelectOp(neg, wrapped, raw)).result
            state[s] = (oa, oq, ob)
            kb.copy(kb.tile(data, [oa, row, ob], ext), ub_view(kb, bufs[s], ext))

        def store(tile, s, ext=ext):
            oa, oq, ob = state[s]
            kb.copy(ub_view(kb, bufs[s], ext), kb.tile(out, [oa, oq, ob], ext))

        runs = None
        if real is not None:
            groups, group, rows = real
            live = kb.mul(kb.min(rows, group), counts[2])  # a group's boxes that run

            def load(tile, s, box_load=load, live=live, stride=group * counts[2]):  # the tile-th that runs
                box_load(kb.group_major(tile, live, stride), s)
            runs = kb.mul(live, groups)
        kb.pipeline(n, per, load, store, None, slots, last_blocks=i > 0, runs=runs)
    return mark(kb.finish(), attr_names.TEMPLATE, "gather")


def _op_transfers(kb: KernelBuilder, req: KernelRequest, op: Operation, ins: list[SSAValue],
                  outs: list[SSAValue]) -> list[Transfer] | None:
    """The transfers of one data op on gm buffers `ins` / `outs` (graph operand / result order;
    None for operands that are not read)."""
    if op.has_trait(ViewLike) or isinstance(op, g.ExpandOp) and shape_of(op.inputs[0]) == shape_of(op.results[0]):
        return [Transfer(_flat(kb, ins[0]), _flat(kb, outs[0]))]
    if isinstance(op, g.TransposeOp):
        perm = op.attrs()["perm"] or tuple(reversed(range(len(shape_of(op.inputs[0])))))
        return _transfer_transpose(kb, ins[0], outs[0], [int(p) for p in perm])
    if isinstance(op, g.SliceOp):
        params = _slice_params(op)
        if params is None:
            return None
        offs, sizes, strides = params
        if not math.prod(sizes):
            return []
        return [Transfer(kb.tile(ins[0], offs, sizes, strides), outs[0])]
    if isinstance(op, g.ConcatOp):
        axis = _storage_axis(op.results[0].type, op.attrs()["axis"])
        return _split_like(kb, outs[0], ins, axis, into=True)
    if isinstance(op, g.SplitOp):
        axis = op.attrs()["axis"] % len(shape_of(op.inputs[0]))
        return _split_like(kb, ins[0], outs, axis, into=False)
    if isinstance(op, g.PadOp):
        return _pad_transfers(kb, op, ins[0], outs[0])
    if isinstance(op, g.DepthToSpaceOp | g.SpaceToDepthOp):
        n, c, h, w = shape_of(op.inputs[0])
        b = op.attrs()["blocksize"]
        if isinstance(op, g.DepthToSpaceOp):
            if op.attrs()["mode"] == "DCR":
                view, perm = [n, b, b, c // (b * b), h, w], [0, 3, 4, 1, 5, 2]
            else:
                view, perm = [n, c // (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3]
        else:
            view, perm = [n, c, h // b, b, w // b, b], [0, 3, 5, 1, 2, 4]
        src = kb.view(ins[0], view)
        dst = kb.view(outs[0], [view[p] for p in perm])
        return _transfer_transpose(kb, src, dst, perm)
    if isinstance(op, g.TileOp):
        reps = _const(op.inputs[1])
        if reps is None:
            return None
        xs = shape_of(op.inputs[0])
        reps = [int(r) for r in reps.reshape(-1)]
        inter = [v for pair in zip(reps, xs) for v in pair]
        src = kb.view(ins[0], [v for x in xs for v in (1, x)])
        dst = kb.view(outs[0], inter)
        return [Transfer(src, dst, broadcast=frozenset(range(0, len(inter), 2)))]
    return None


# ---------------------------------------------------------------------------
# Chains of views, transposes and slices: one strided transfer per output.
# ---------------------------------------------------------------------------


def _chains(op: Operation) -> bool:
    """A view, transpose, slice, split or same-shape expand: composes into strided views."""
    return op.has_trait(ViewLike) or isinstance(op, g.TransposeOp | g.SliceOp | g.SplitOp | g.ExpandOp)


@dataclass(frozen=True)
class Strided:
    """A value as a strided view of kernel input `arg`: its element (i_0, i_1, ...) is element
    `offset + sum(i_k * strides[k])` of the input's row-major buffer (as numpy's views are),
    so a chain of views, transposes and slices is composed without moving anything."""

    arg: int
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @staticmethod
    def of(arg: int, shape: Sequence[int]) -> Strided:
        strides = [1] * len(shape)
        for k in reversed(range(len(shape) - 1)):
            strides[k] = strides[k + 1] * shape[k + 1]
        return Strided(arg, 0, tuple(shape), tuple(strides))

    def transpose(self, perm: Sequence[int]) -> Strided:
        return Strided(self.arg, self.offset, tuple(self.shape[p] for p in perm),
                       tuple(self.strides[p] for p in perm))

    def slice(self, offsets: Sequence[int], sizes: Sequence[int], steps: Sequence[int]) -> Strided:
        offset = self.offset + sum(o * t for o, t in zip(offsets, self.strides))
        return Strided(self.arg, offset, tuple(sizes), tuple(t * s for t, s in zip(self.strides, steps)))

    def reshape(self, shape: Sequence[int]) -> Strided | Merged | None:
        """The same elements seen with `shape`: a strided view where numpy would reshape
        without a copy (each group of old dims that becomes a group of new dims is contiguous
        in itself, numpy's _attempt_nocopy_reshape), else a `Merged` one when the new dims
        are made of whole runs of the old ones; None otherwise."""
        view = self._nocopy_reshape(shape)
        return view if view is not None else Merged.of(self).reshape(shape)

    def _nocopy_reshape(self, shape: Sequence[int]) -> Strided | None:
        old = [(n, t) for n, t in zip(self.shape, self.strides) if n != 1]
        new = list(shape)
        strides = [0] * len(new)
        oi = ni = 0
        while oi < len(old) and ni < len(new):
            oj, nj = oi + 1, ni + 1
            po, pn = old[oi][0], new[ni]
            while po != pn:
                if pn < po:
                    pn *= new[nj]
                    nj += 1
                else:
                    po *= old[oj][0]
                    oj += 1
            if any(old[k][1] != old[k + 1][0] * old[k + 1][1] for k in range(oi, oj - 1)):
                return None  # the group's dims are not one run: numpy would copy
            strides[nj - 1] = old[oj - 1][1]
            for k in range(nj - 1, ni, -1):
                strides[k - 1] = strides[k] * new[k]
            oi, ni = oj, nj
        for k in range(ni, len(new)):
            strides[k] = strides[ni - 1] if ni else 1  # trailing extent-1 dims
        return Strided(self.arg, self.offset, tuple(new), tuple(strides))


Run = tuple[int, int]
"""(size, stride): indices 0 .. size - 1 of one dim, `stride` elements apart."""


@dataclass(frozen=True)
class Merged:
    """A value as a view of kernel input `arg` that no single stride per dim describes: a
    reshape merged dims that are not one run of the input (numpy would copy). Each dim is its
    runs, outermost first - element (i_0, i_1, ...) is `offset` plus, per dim, i_k's digits in
    the runs' sizes times their strides. A later reshape that splits such a dim back along its
    runs gives a `Strided` view again: the dynamo exporter's sequence-first attention sees
    [S, B, 3E] as [S, B * H, D] (b and h are not one stride apart) and then as [B, H, S, D]."""

    arg: int
    offset: int
    dims: tuple[tuple[Run, ...], ...]

    @staticmethod
    def of(view: Strided) -> Merged:
        return Merged(view.arg, view.offset, tuple(((n, t),) for n, t in zip(view.shape, view.strides)))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(math.prod(n for n, _ in runs) for runs in self.dims)

    def transpose(self, perm: Sequence[int]) -> Merged:
        return Merged(self.arg, self.offset, tuple(self.dims[p] for p in perm))

    def slice(self, offsets: Sequence[int], sizes: Sequence[int], steps: Sequence[int]) -> Strided | Merged | None:
        """Whole dims, or whole blocks of a dim's outermost run (step 1); None otherwise."""
        offset, dims = self.offset, []
        for runs, o, n, step in zip(self.dims, offsets, sizes, steps):
            if len(runs) == 1:
                (_, t), = runs
                offset += o * t
                dims.append(((n, t * step),))
                continue
            inner = math.prod(m for m, _ in runs[1:])
            if step != 1 and n > 1 or o % inner or n % inner:
                return None
            offset += o // inner * runs[0][1]
            dims.append(_joined([r for r in ((n // inner, runs[0][1]), *runs[1:]) if r[0] != 1]))
        return Merged(self.arg, offset, tuple(dims)).strided()

    def reshape(self, shape: Sequence[int]) -> Strided | Merged | None:
        """The new dims made of the old dims' runs in order, a run split where a new dim
        ends inside it; None when a new dim's size is not a product of whole (or split) runs."""
        runs = [r for dim in self.dims for r in dim if r[0] != 1]
        dims: list[tuple[Run, ...]] = []
        for m in shape:
            took: list[Run] = []
            while m > 1:
                if not runs:
                    return None
                n, t = runs[0]
                if n <= m:
                    if m % n:
                        return None
                    took.append(runs.pop(0))
                    m //= n
                else:
                    if n % m:
                        return None
                    took.append((m, t * (n // m)))
                    runs[0] = (n // m, t)
                    m = 1
            dims.append(_joined(took))
        return Merged(self.arg, self.offset, tuple(dims)).strided()

    def strided(self) -> Strided | Merged:
        """The same view as a `Strided` one when every dim is one run (an extent-1 dim is
        given the stride it would have contiguous with the dim after it)."""
        if any(len(runs) > 1 for runs in self.dims):
            return self
        shape = self.shape
        strides = [runs[0][1] if runs else 1 for runs in self.dims]
        for k in reversed(range(len(shape))):
            if shape[k] == 1:
                strides[k] = strides[k + 1] * shape[k + 1] if k + 1 < len(shape) else 1
        return Strided(self.arg, self.offset, shape, tuple(strides))


def _joined(runs: list[Run]) -> tuple[Run, ...]:
    """`runs` with each run one stride after the next merged into it: ((1, 1),) for none."""
    out: list[Run] = []
    for n, t in runs:
        if out and out[-1][1] == n * t:
            out[-1] = (out[-1][0] * n, t)
        else:
            out.append((n, t))
    return tuple(out) or ((1, 1),)


def _plain(value: SSAValue) -> bool:
    return not formats.is_formatted(value.type) and math.prod(shape_of(value)) > 0


def strided_views(inputs: Sequence[SSAValue], ops: Sequence[Operation]) -> dict[SSAValue, Strided] | None:
    """Every input and every result of `ops` (in order: views, transposes, constant slices,
    split parts, same-shape expands, each reading an input or an earlier result) that is a
    strided view of one input (`Strided.arg` is its position in `inputs`); a result that is
    only `Merged` is left out (a later reshape may make it strided again). None if an op is
    something else or a reshape no runs describe."""
    views: dict[SSAValue, Strided | Merged] = {}
    for i, v in enumerate(inputs):
        views.setdefault(v, Strided.of(i, shape_of(v)))
    for op in ops:
        if not _chains(op) or not op.operands or not op.results:
            return None
        x = op.operands[0]
        if x not in views or not _plain(x) or not all(_plain(y) for y in op.results):
            return None
        if isinstance(op, g.SplitOp):  # each part: a slice along the axis
            rank = len(shape_of(x))
            axis, start = op.attrs()["axis"] % rank, 0
            for y in op.results:
                offsets = [0] * rank
                offsets[axis] = start
                part = views[x].slice(offsets, shape_of(y), [1] * rank)
                if part is None:
                    return None
                views[y] = part
                start += shape_of(y)[axis]
            continue
        if len(op.results) != 1:
            return None
        y = op.results[0]
        if isinstance(op, g.TransposeOp):
            perm = op.attrs()["perm"] or tuple(reversed(range(len(shape_of(x)))))
            view = views[x].transpose([int(p) for p in perm])
        elif isinstance(op, g.SliceOp):
            box = _slice_box(op)
            view = None if box is None else views[x].slice(*box)
        elif isinstance(op, g.ExpandOp) and shape_of(x) != shape_of(y):
            return None  # a broadcast: the vector template
        else:
            view = views[x].reshape(shape_of(y))
        if view is None:
            return None
        views[y] = view
    # a Merged value is a step of a chain, not something a transfer or the attention reads
    return {v: view for v, view in views.items() if isinstance(view, Strided)}


def written_view(arg: int, ops: Sequence[Operation]) -> Strided | None:
    """A chain of views and transposes (`ops` in order, each reading the previous result)
    whose last result is kernel output `arg`: its first operand as a strided view of that
    output's buffer (what writing it through the chain means); None for any other op, a
    reshape no runs describe, or a first operand that is only `Merged`."""
    if not ops:
        return None
    view: Strided | Merged | None = Strided.of(arg, shape_of(ops[-1].results[0]))
    for op in reversed(ops):
        if len(op.operands) < 1 or len(op.results) != 1 or not _plain(op.operands[0]):
            return None
        x = op.operands[0]
        if isinstance(op, g.TransposeOp):
            perm = [int(p) for p in (op.attrs()["perm"] or tuple(reversed(range(len(shape_of(x))))))]
            view = view.transpose([perm.index(k) for k in range(len(perm))])
        elif op.has_trait(ViewLike):
            view = view.reshape(shape_of(x))
        else:
            return None
        if view is None:
            return None
    return view if isinstance(view, Strided) else None


def _chain_views(req: KernelRequest) -> list[Strided] | None:
    """Each output of a request of views, transposes, constant slices, splits and same-shape
    expands as a strided view of one kernel input; None if an op is something else or a
    reshape would need a copy."""
    views = strided_views(req.inputs, req.ops)
    if views is None or any(v not in views for v in req.outputs):
        return None
    return [views[v] for v in req.outputs]


@dataclass(frozen=True)
class StridedSource:
    """How a transfer reads a `Strided` view: the input viewed as the row-major `base` shape,
    its subview at `offsets` of `sizes` every `steps` (dims by decreasing stride), moved to a
    destination of `dst_shape` with `perm` (None: the same order)."""

    base: tuple[int, ...]
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    steps: tuple[int, ...]
    dst_shape: tuple[int, ...]
    perm: tuple[int, ...] | None


def _strided_source(view: Strided, numel: int) -> StridedSource | None:
    """The transfer of `view` out of an input of `numel` elements; None when DMA cannot read
    it as rows (the innermost source dim strided) or it is no subview of a row-major shape."""
    dims = [k for k, n in enumerate(view.shape) if n != 1]
    if not dims:
        return StridedSource((numel,), (view.offset,), (1,), (1,), (1,), None)
    strides = [view.strides[k] for k in dims]
    if len(set(strides)) != len(strides) or min(strides) <= 0:
        return None  # overlapping elements: not a view these ops make
    rank = {k: r for r, k in enumerate(sorted(dims, key=lambda k: -view.strides[k]))}
    # Destination dims that stay adjacent, in order and contiguous in the source are one dim.
    groups = [[dims[0]]]
    for k in dims[1:]:
        p = groups[-1][-1]
        if rank[k] == rank[p] + 1 and view.strides[p] == view.strides[k] * view.shape[k]:
            groups[-1].append(k)
        else:
            groups.append([k])
    extent = [math.prod(view.shape[k] for k in grp) for grp in groups]
    stride = [view.strides[grp[-1]] for grp in groups]
    order = sorted(range(len(groups)), key=lambda j: -stride[j])  # source dims, outermost first
    t, e = [stride[j] for j in order], [extent[j] for j in order]
    if t[-1] != 1:
        return None  # DMA moves rows: the innermost source dim must be contiguous
    # A row-major base shape whose dim i has element stride inner[i] (dividing t[i]), so the
    # view is its subview with steps t[i] / inner[i].
    inner = [1] * len(t)
    for i in reversed(range(len(t) - 1)):
        inner[i] = math.gcd(t[i], numel)
        if inner[i] % inner[i + 1]:
            return None
    base = [numel // inner[0], *(inner[i - 1] // inner[i] for i in range(1, len(t)))]
    steps = [ti // n for ti, n in zip(t, inner)]
    offsets, rest = [], view.offset
    for n in inner:
        offsets.append(rest // n)
        rest %= n
    if any(o + (n - 1) * s >= b for o, n, s, b in zip(offsets, e, steps, base)):
        return None
    position = {j: i for i, j in enumerate(order)}
    perm = tuple(position[j] for j in range(len(groups)))
    return StridedSource(tuple(base), tuple(offsets), tuple(e), tuple(steps), tuple(extent),
                         None if perm == tuple(sorted(perm)) else perm)


def _chain_kernel(req: KernelRequest) -> a.KernelOp | None:
    """Views, transposes and slices whose every output is a strided view of one input: one
    kernel, one (transposing, if the order changes) transfer per output."""
    views = _chain_views(req)
    if views is None:
        return None
    sources = [_strided_source(v, math.prod(shape_of(req.inputs[v.arg]))) for v in views]
    if any(s is None for s in sources):
        return None

    def build(kb: KernelBuilder) -> list[Transfer]:
        transfers, bases = [], {}
        for view, src, out in zip(views, sources, kb.outputs):
            key = (view.arg, src.base)
            if key not in bases:
                bases[key] = kb.view(kb.inputs[view.arg], src.base)
            base = bases[key]
            steps = None if all(s == 1 for s in src.steps) else src.steps
            read = kb.tile(base, list(src.offsets), list(src.sizes), steps)
            transfers.append(Transfer(read, kb.view(out, src.dst_shape), src.perm))
        return transfers

    return transfer_kernel(req, build)


# ---------------------------------------------------------------------------
# Entry point.
# ---------------------------------------------------------------------------




def _through_views(req: KernelRequest) -> tuple[Operation | None, dict[SSAValue, SSAValue]] | None:
    """The one non-view op of the request and, for every value, the kernel value it is a view
    of (kernel inputs, and the move op's results); None if the ops are not views around at
    most one op."""
    movers = [op for op in req.ops if not op.has_trait(ViewLike)]
    if len(movers) > 1:
        return None
    root: dict[SSAValue, SSAValue] = {v: v for v in req.inputs}
    for op in req.ops:
        if op.has_trait(ViewLike):
            src = root.get(op.operands[0])
            if src is None:
                return None
            root[op.results[0]] = src
        else:
            for r in op.results:
                root[r] = r
    return (movers[0] if movers else None), root


def try_build(req: KernelRequest) -> a.KernelOp | None:
    if not req.ops or not all(op_info.DATA.takes(op) for op in req.ops):
        return None
    kernel = _single_mover_kernel(req)
    return kernel if kernel is not None else _chain_kernel(req)


def _single_mover_kernel(req: KernelRequest) -> a.KernelOp | None:
    """Views around at most one moving op (any data op)."""
    found = _through_views(req)
    if found is None:
        return None
    mover, root = found
    if any(v not in root for v in req.outputs):
        return None
    if mover is None:
        # Views only: each output is a copy of the input it views.
        if any(root[v] not in req.inputs for v in req.outputs):
            return None

        def copies(kb: KernelBuilder) -> list[Transfer]:
            return [Transfer(_flat(kb, kb.inputs[req.inputs.index(root[v])]), _flat(kb, out))
                    for v, out in zip(req.outputs, kb.outputs)]

        return transfer_kernel(req, copies)
    if isinstance(mover, g.GatherOp):
        if len(req.ops) != 1 or req.inputs[:2] != list(mover.operands[:2]) and set(mover.operands) - set(req.inputs):
            return None
        return _gather_kernel(req, mover)
    if isinstance(mover, g.ExpandOp) and shape_of(mover.inputs[0]) != shape_of(mover.results[0]):
        return None  # a broadcast: the vector template
    # Every output must be one of the mover's results (through views), each result at most once.
    roots = [root[v] for v in req.outputs]
    if any(r not in mover.results for r in roots) or len(set(roots)) != len(roots):
        return None
    if any(root.get(v) not in req.inputs for v in mover.operands[:1]):
        return None

    def build(kb: KernelBuilder) -> list[Transfer] | None:
        ins = []
        for i, v in enumerate(mover.operands):
            src = root.get(v)
            ins.append(kb.view(kb.inputs[req.inputs.index(src)], shape_of(v)) if src in req.inputs and (i == 0 or isinstance(mover, g.ConcatOp)) else None)
        outs = []
        for r in mover.results:
            if r in roots:
                outs.append(kb.view(kb.outputs[roots.index(r)], shape_of(r)))
            else:
                outs.append(None)
        if any(o is None for o in outs):
            return None  # a result nobody reads outside: not worth a special case
        return _op_transfers(kb, req, mover, ins, outs)

    kb_probe = KernelBuilder(req, "vector", 1)
    if build(kb_probe) is None:
        return None
    return transfer_kernel(req, build)
