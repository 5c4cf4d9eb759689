"""Layout conversions: `graph.trans_data` kernels that really move the data.

Every storage format (docs/layout.md) is the logical tensor with some dims split into blocks,
zero-padded to whole blocks and permuted: NC1HWC0 splits C into (C1, C0) and moves C0
innermost, FRACTAL_NZ splits [M, K] into (M1, 16) x (K1, C0) and moves K1 outermost,
FRACTAL_Z splits Cout and Cin. So a conversion is a transpose of one *fine* index space F
(the logical dims, the blocked ones split) seen from two sides:

* a side is its gm buffer viewed with G dims (a contiguous reshape); each G dim is a run of
  F dims, outer to inner. On a logical side a G dim holds fewer elements than its F dims
  span (C = 40 of C1 x C0 = 3 x 16): the blocked side's padding.
* a box of F (the destination's dims one at a time, one cut, the rest whole, as the data
  template's boxes) is one strided gm tile per side: one DMA brings the source tile into ub,
  `vtranspose` reorders it into the destination's order, one DMA writes it. When both sides
  lay the box out alike in ub (the pooled [1, C, 1, 1] vector, one column block of an NZ
  matrix) the ub buffer is just re-viewed: DMA in, DMA out. When the two sides are the same
  bytes in the same order (`same_bytes`: a globally pooled NC1HWC0 tensor whose C0 divides C
  and its NCHW) the kernel is a flat copy marked as one (`geir.byte_copies`), which
  ascend-elide-copies turns into a view: no task.
* padding: the source tile is read with `copy {pad}` (zero past the real channels / rows,
  so a blocked destination gets zero padding, even from a blocked source's don't-care
  lanes) and a logical destination written with `copy {pad}` (the padding dropped). A box
  spanning all blocks of a split dim clips at a static length; otherwise the partial last
  block is a piece of its own.

Tiles are spread over the vector cores (`block_dim`) and double-buffered like every other
vector template; each kernel carries the `layout_conversion` attribute so reports can sum
the time spent converting. Pairs outside the 4-D family (NCHW / NHWC / NC1HWC0 / FRACTAL_Z)
and the matrix family (ND / FRACTAL_NZ) stay the reference fallback.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, UnitAttr, i64
from xdsl.ir import Attribute, SSAValue

from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.dialects import formats as L
from geir.lowering.templates.common import (
    KernelBuilder,
    KernelRequest,
    block_elems,
    ceil_div,
    itemsize,
    largest_fitting,
    mark,
    round_up,
    tile_offsets,
    tile_pieces,
)
from geir.lowering.templates.data import build_copy, padded_bytes, slots_of, tile_budget, ub_shape, ub_view
from geir.dialects import attr_names



# ---------------------------------------------------------------------------
# The fine space and its two sides.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """A gm buffer seen as G dims: `groups[i]` are the F dims of G dim i (outer to inner),
    `extent[i]` its extent in the buffer (less than its F dims span on a logical side: C = 40
    of C1 x C0 = 3 x 16)."""

    groups: tuple[tuple[int, ...], ...]
    extent: tuple[int, ...]

    @property
    def order(self) -> tuple[int, ...]:
        return tuple(d for grp in self.groups for d in grp)

    def holding(self, d: int) -> int:
        """The G dim holding F dim d."""
        return next(i for i, grp in enumerate(self.groups) if d in grp)


@dataclass(frozen=True)
class Split:
    """A logical dim of `count` elements split into F dims (outer, inner): the last outer
    block holds `count % inner` of them (if not 0), the rest is padding."""

    outer: int
    inner: int
    count: int


@dataclass(frozen=True)
class Conversion:
    """F extents, the source and destination sides and the splits of one trans_data."""

    ext: tuple[int, ...]
    src: Side
    dst: Side
    splits: tuple[Split, ...]


Spec = list[tuple[tuple[str, ...], int]]
"""A side by F dim names: (names of a G dim, its extent in the buffer) per G dim."""


def _conversion(dims: dict[str, int], src: Spec, dst: Spec, splits: dict[tuple[str, str], int]) -> Conversion:
    """Number the F dims, dropping unit dims (but the outer block dim of a padded split: its
    one block is the partial one)."""
    padded = {o for (o, i), n in splits.items() if n < dims[o] * dims[i]}
    kept = [n for n, e in dims.items() if e > 1 or n in padded]
    index = {n: i for i, n in enumerate(kept)}

    def side(spec: Spec) -> Side:
        groups, extent = [], []
        for names, n in spec:
            grp = tuple(index[x] for x in names if x in index)
            if grp:
                groups.append(grp)
                extent.append(n)
        return Side(tuple(groups), tuple(extent))

    cuts = tuple(Split(index[o], index[i], n) for (o, i), n in splits.items() if o in padded)
    return Conversion(tuple(dims[n] for n in kept), side(src), side(dst), cuts)


def _image_side(fmt: str, dims: dict[str, int], n: int, c: int, hw: int) -> Spec:
    """A 4-D format by F dim names: N (or N1, N0), C (or C1, C0), HW."""
    nn = ("N1", "N0") if "N1" in dims else ("N",)
    cc = ("C1", "C0") if "C1" in dims else ("C",)
    if fmt == L.NCHW:
        return [(nn, n), (cc, c), (("HW",), hw)]
    if fmt == L.NHWC:
        return [(nn, n), (("HW",), hw), (cc, c)]
    if fmt == L.NC1HWC0:
        return [(nn, n), (("C1",), dims["C1"]), (("HW",), hw), (("C0",), dims["C0"])]
    return [(("C1",), dims["C1"]), (("HW",), hw), (nn, dims["N1"] * dims["N0"]), (("C0",), dims["C0"])]  # FRACTAL_Z


def describe(op: g.TransDataOp) -> Conversion | None:
    """The conversion a trans_data performs, or None for a pair without a kernel."""
    kw = op.kernel_kwargs()
    src, dst, origin, shape = kw["src_format"], kw["dst_format"], kw["origin_format"], tuple(kw["shape"])
    c0 = L.c0_of(op.x.type.element_type)
    src_l, dst_l = src in (L.ND, origin), dst in (L.ND, origin)
    if L.FRACTAL_NZ in (src, dst):
        return _matrix(src, dst, shape, c0) if src_l or dst_l or src == dst else None
    if len(shape) != 4 or origin not in (L.NCHW, L.NHWC):
        return None
    fmts = [origin if src_l else src, origin if dst_l else dst]
    if any(f not in L.FOUR_D for f in fmts):
        return None
    n, c, h, w = (shape[i] for i in ((0, 3, 1, 2) if origin == L.NHWC else (0, 1, 2, 3)))
    dims, splits = {}, {}
    if L.FRACTAL_Z in fmts:
        dims |= {"N1": ceil_div(n, L.CUBE_BLOCK), "N0": L.CUBE_BLOCK}
        splits["N1", "N0"] = n
    else:
        dims["N"] = n
    if {L.NC1HWC0, L.FRACTAL_Z} & set(fmts):
        dims |= {"C1": ceil_div(c, c0), "C0": c0}
        splits["C1", "C0"] = c
    else:
        dims["C"] = c
    dims["HW"] = h * w
    return _conversion(dims, *(_image_side(f, dims, n, c, h * w) for f in fmts), splits)


def same_bytes(conv: Conversion) -> bool:
    """Both sides hold the same bytes in the same order: no padded split and, unit dims aside,
    the same dims outer to inner (a global pool's NC1HWC0 [N, C1, 1, 1, C0] and its NCHW
    [N, C, 1, 1] when C0 divides C; NZ with one K block and whole M blocks and its ND)."""
    return not conv.splits and conv.src.order == conv.dst.order


def _matrix(src: str, dst: str, shape: tuple[int, ...], c0: int) -> Conversion:
    """ND [B.., M, K] (a vector [K] is [1, K]) <-> FRACTAL_NZ [B.., K1, M1, 16, C0]."""
    m, k = (1, shape[0]) if len(shape) == 1 else shape[-2:]
    b = math.prod(shape[:-2])
    dims = {"B": b, "M1": ceil_div(m, L.CUBE_BLOCK), "M0": L.CUBE_BLOCK, "K1": ceil_div(k, c0), "C0": c0}
    nd: Spec = [(("B",), b), (("M1", "M0"), m), (("K1", "C0"), k)]
    nz: Spec = [(("B",), b), (("K1",), dims["K1"]), (("M1", "M0"), dims["M1"] * L.CUBE_BLOCK), (("C0",), c0)]
    sides = (nz if src == L.FRACTAL_NZ else nd, nz if dst == L.FRACTAL_NZ else nd)
    return _conversion(dims, *sides, {("M1", "M0"): m, ("K1", "C0"): k})


# ---------------------------------------------------------------------------
# Pieces: the whole blocks and the partial block of each padded split.
# ---------------------------------------------------------------------------


@dataclass
class Piece:
    """A box of F (`lo`, `shape`) in which each G dim of both sides is either whole (its
    tiles are as long as the box) or clipped to a static length (`clip[side][g]`, with the
    F dims inside the block kept whole: `locked`): the partial block of a split. The source
    is read clipped (zero beyond, so a blocked destination gets zero padding even from a
    blocked source's don't-care lanes), a logical destination written clipped."""

    lo: list[int]
    shape: list[int]
    clip: tuple[dict[int, int], dict[int, int]] = field(default_factory=lambda: ({}, {}))
    locked: set[int] = field(default_factory=set)


def _grouped(side: Side, sp: Split) -> bool:
    """The split's blocks are one G dim of the side (a logical dim, or NZ's M1 x 16)."""
    return sp.outer in side.groups[side.holding(sp.inner)]


def _drops(side: Side, sp: Split, ext: Sequence[int]) -> bool:
    """The side is logical in the split's dim: its G dim holds only the `count` real ones."""
    g = side.holding(sp.inner)
    return _grouped(side, sp) and side.extent[g] < math.prod(ext[d] for d in side.groups[g])


def mergeable(conv: Conversion, sp: Split) -> bool:
    """The split's partial block can share a box with the whole ones when that box spans
    all the blocks (the source tile is then `count` long, or its padding lanes are dropped
    by a logical destination anyway)."""
    return _grouped(conv.src, sp) or _drops(conv.dst, sp, conv.ext)


def _pieces(conv: Conversion, merged: frozenset[int] = frozenset()) -> list[Piece]:
    """The pieces of F: each split not in `merged` cuts its outer dim into the whole blocks
    and the partial one; a merged split leaves one piece whose boxes must span all its
    blocks (then its tiles are clipped to `count`)."""
    ext = conv.ext
    cuts = [{0, e} for e in ext]
    for i, sp in enumerate(conv.splits):
        if i not in merged:
            q, r = divmod(sp.count, ext[sp.inner])
            cuts[sp.outer] |= {q, q + (r > 0)}
    ranges = [list(itertools.pairwise(sorted(c))) for c in cuts]
    out = []
    for box in itertools.product(*ranges):
        p = Piece([lo for lo, _ in box], [hi - lo for lo, hi in box])
        for i, sp in enumerate(conv.splits):
            q, r = divmod(sp.count, ext[sp.inner])
            if i in merged:
                n = sp.count
            elif box[sp.outer][0] == q:
                n = r  # (the outer dim has ceil(count / inner) blocks: the last has data)
            else:
                continue
            p.locked.add(sp.inner)
            if _grouped(conv.src, sp) or i not in merged:
                p.clip[0][conv.src.holding(sp.inner)] = n  # read the real ones, zero beyond
            if _drops(conv.dst, sp, ext):
                p.clip[1][conv.dst.holding(sp.inner)] = n  # write the real ones
        out.append(p)
    return out


# ---------------------------------------------------------------------------
# Boxes: which fit ub and are one strided tile per side.
# ---------------------------------------------------------------------------


def _g_box(side: Side, e: Sequence[int]) -> list[int]:
    return [math.prod(e[d] for d in grp) for grp in side.groups]


def _contiguous(side: Side, e: Sequence[int], ext: Sequence[int], elt: Attribute) -> bool:
    """Each G dim's box is one range (its F dims: 1s, one cut, then whole), and the ub buffer
    can be re-viewed per F dim: an innermost G dim split in two keeps 32-byte rows."""
    for grp in side.groups:
        es = [e[d] for d in grp]
        first = next((i for i, x in enumerate(es) if x != 1), len(es))
        if any(es[i] != ext[grp[i]] for i in range(first + 1, len(es))):
            return False
    last = side.groups[-1]
    outer = math.prod(e[d] for d in last[:-1])
    return outer == 1 or (e[last[-1]] * itemsize(elt)) % a.BLOCK_BYTES == 0


@dataclass
class _Plan:
    conv: Conversion
    elt: Attribute

    def transposes(self, e: Sequence[int]) -> bool:
        return _runs(self.conv, e, self.elt)[2]

    def bytes(self, e: Sequence[int]) -> int:
        n = padded_bytes(_g_box(self.conv.src, e), self.elt)
        if self.transposes(e):
            n += padded_bytes(_g_box(self.conv.dst, e), self.elt)
        return n

    def ok(self, e: Sequence[int], piece: Piece) -> bool:
        ext = self.conv.ext
        if any(e[d] != piece.shape[d] for d in piece.locked):
            return False
        return all(_contiguous(s, e, ext, self.elt) for s in (self.conv.src, self.conv.dst))

    def box(self, piece: Piece, budget: int) -> list[int] | None:
        """Box extents: the destination's dims in order are taken one at a time until the
        rest fits `budget`; the dim where that happens is cut to the largest extent that
        fits (the data template's rule, keeping each side's tiles contiguous)."""
        e = list(piece.shape)
        order = [d for d in self.conv.dst.order if d not in piece.locked]
        if self.ok(e, piece) and self.bytes(e) <= budget:
            return e
        for d in order:
            e[d] = 1
            if not self.ok(e, piece) or self.bytes(e) > budget:
                continue
            if piece.shape[d] > 2:
                e[d] = 2
                if self.ok(e, piece):
                    e[d] = largest_fitting(1, piece.shape[d] - 1,
                                           lambda n: self.bytes(e[:d] + [n] + e[d + 1:]) <= budget)
                else:
                    e[d] = 1
            return e
        return e if self.ok(e, piece) and self.bytes(e) <= budget else None


def _pad_of(side: Side, e: Sequence[int], elt: Attribute) -> int:
    """The ub extent of the side's last F dim in a buffer holding the side's G box (its last
    G dim rounded up to 32 bytes)."""
    last = side.groups[-1]
    outer = math.prod(e[d] for d in last[:-1])
    return round_up(outer * e[last[-1]], block_elems(elt)) // outer


def _strides(side: Side, e: Sequence[int], elt: Attribute) -> tuple[dict[int, int], int]:
    """Element strides of the F dims in a ub buffer holding the side's G box, and its size."""
    strides, n = {}, 1
    for d in reversed(side.order):
        strides[d] = n
        n *= _pad_of(side, e, elt) if d == side.order[-1] else e[d]
    return strides, n


def _runs(conv: Conversion, e: Sequence[int], elt: Attribute) -> tuple[list[list[int]], list[list[int]], bool]:
    """The box's F dims as runs in source and destination order - unit dims dropped (but
    each side's last dim, which carries its row padding), a whole dim merged into the run
    before it if they are adjacent in both orders and no padding lies between them - and
    whether a vtranspose is needed: not when both buffers would lay the box out alike (one
    ub buffer, seen with either side's dims)."""
    (ss, sn), (ds, dn) = _strides(conv.src, e, elt), _strides(conv.dst, e, elt)
    lasts = {conv.src.order[-1], conv.dst.order[-1]}
    padded = {s.order[-1] for s in (conv.src, conv.dst) if _pad_of(s, e, elt) != e[s.order[-1]]}
    keep = [d for d in conv.dst.order if e[d] > 1 or d in lasts]
    src_pos = {d: i for i, d in enumerate(x for x in conv.src.order if x in keep)}
    runs: list[list[int]] = []
    for d in keep:
        if runs and src_pos[d] == src_pos[runs[-1][-1]] + 1 and d not in padded and e[d] == conv.ext[d]:
            runs[-1].append(d)
        else:
            runs.append([d])
    src_runs = sorted(runs, key=lambda r: src_pos[r[0]])
    same = sn == dn and all(ss[d] == ds[d] for d in range(len(e)) if e[d] > 1)
    return src_runs, runs, not same


# ---------------------------------------------------------------------------
# The kernel.
# ---------------------------------------------------------------------------


class LayoutKernel:
    """The tiled conversion of one trans_data (see the module docstring)."""

    def __init__(self, req: KernelRequest, conv: Conversion):
        self.req, self.conv = req, conv
        self.elt = req.inputs[0].type.element_type
        self.plan = _Plan(conv, self.elt)
        self.slots = slots_of(req)

    def build(self) -> a.KernelOp | None:
        conv = self.conv
        total = a.nbytes_of(self.req.arg_types[1])
        permuted = conv.src.order != conv.dst.order
        budget = tile_budget(self.req, total, self.slots, 2 if permuted else 1)
        merged = frozenset(i for i, sp in enumerate(conv.splits) if mergeable(conv, sp))
        while True:
            work = [(piece, self.plan.box(piece, budget)) for piece in _pieces(conv, merged)]
            if any(e is None for _, e in work):
                return None
            split = {i for i in merged for piece, e in work
                     if e[conv.splits[i].outer] != piece.shape[conv.splits[i].outer]}
            if not split:
                break
            merged -= split  # the boxes do not span all blocks: the partial one on its own
        order = conv.dst.order
        most = max(math.prod(c) for piece, e in work
                   for c, _, _ in tile_pieces([piece.shape[d] for d in order], [e[d] for d in order]))
        kb = KernelBuilder(self.req, "vector", 1)
        kb.kernel.block_dim = IntegerAttr(max(1, min(self.req.device.vector_cores, most)), i64)
        src = kb.view(kb.inputs[0], list(conv.src.extent))
        dst = kb.view(kb.outputs[0], list(conv.dst.extent))
        index = 0
        for piece, e in work:
            with kb.scope("ub"):  # pieces run one after the other: they share ub
                index = self._emit(kb, src, dst, piece, e, index)
        return kb.finish()

    # -- one piece -------------------------------------------------------------------------

    def _g_tile(self, side: Side, clip: dict[int, int], off: Sequence[int | SSAValue], e: Sequence[int],
                kb: KernelBuilder) -> tuple[list[int | SSAValue], list[int], list[int]]:
        """(offsets, clipped sizes, box sizes) of the side's gm tile of the F box at `off`."""
        ext = self.conv.ext
        offs, sizes = [], []
        for grp in side.groups:
            o: int | SSAValue = 0
            for i, d in enumerate(grp):
                o = kb.add(o, kb.mul(off[d], math.prod(ext[x] for x in grp[i + 1:])))
            offs.append(o)
            sizes.append(math.prod(e[d] for d in grp))
        return offs, [clip.get(i, s) for i, s in enumerate(sizes)], sizes

    def _run_view(self, kb: KernelBuilder, buf: SSAValue, side: Side, runs: list[list[int]],
                  e: Sequence[int], box: Sequence[int]) -> SSAValue:
        """`box` (e, or a tail box inside it) of a ub buffer laid out as `side`'s G box of e,
        seen as `runs`."""
        last = side.order[-1]
        pad = _pad_of(side, e, self.elt)
        full = [math.prod(pad if d == last else e[d] for d in r) for r in runs]
        sizes = [math.prod(box[d] for d in r) for r in runs]
        return kb.tile(kb.view(buf, full), [0] * len(runs), sizes)

    def _emit(self, kb: KernelBuilder, src: SSAValue, dst: SSAValue, piece: Piece, e: list[int],
              index: int) -> int:
        conv, elt = self.conv, self.elt
        order = conv.dst.order
        shape_o = [piece.shape[d] for d in order]
        src_runs, dst_runs, transpose = _runs(conv, e, elt)
        parts = tile_pieces(shape_o, [e[d] for d in order])
        most = max(ceil_div(math.prod(c), min(kb.kernel.block_count, math.prod(c))) for c, _, _ in parts)
        slots = self.slots if most > 1 else 1
        sb, db = _g_box(conv.src, e), _g_box(conv.dst, e)
        bufs = []
        for s in range(slots):
            sfx = str(s) if slots > 1 else ""
            inb = kb.alloc(ub_shape(sb, elt), elt, "ub", "in_ub" + sfx)
            if transpose:
                outb = kb.alloc(ub_shape(db, elt), elt, "ub", "out_ub" + sfx)
            else:  # the same bytes seen with the destination's G dims
                outb = kb.view(inb, ub_shape(db, elt))
            bufs.append((inb, outb))
        perm = DenseArrayBase.from_list(i64, [src_runs.index(r) for r in dst_runs])
        for counts, pext, start in parts:
            n = math.prod(counts)
            per = ceil_div(n, min(kb.kernel.block_count, n))
            state: dict[int, list] = {}
            box = [0] * len(e)
            for d, x in zip(order, pext):
                box[d] = x

            def load(t, s, counts=counts, pext=pext, start=start, box=box):
                o = tile_offsets(kb, t, counts, pext, shape_o, start)
                off = [0] * len(box)
                for d, x in zip(order, o):
                    off[d] = kb.add(x, piece.lo[d])
                state[s] = off
                offs, sizes, full = self._g_tile(conv.src, piece.clip[0], off, box, kb)
                kb.copy(kb.tile(src, offs, sizes), ub_view(kb, bufs[s][0], full), **_pad(sizes, full))

            def compute(t, s, box=box):
                inb, outb = bufs[s]
                kb.vec(a.VtransposeOp, self._run_view(kb, inb, conv.src, src_runs, e, box),
                       self._run_view(kb, outb, conv.dst, dst_runs, e, box), perm=perm)

            def store(t, s, box=box):
                offs, sizes, full = self._g_tile(conv.dst, piece.clip[1], state[s], box, kb)
                kb.copy(ub_view(kb, bufs[s][1], full), kb.tile(dst, offs, sizes), **_pad(full, sizes))

            kb.pipeline(n, per, load, store, compute if transpose else None, slots,
                        last_blocks=index % 2 == 1)
            index += 1
        return index


def _pad(src: Sequence[int], dst: Sequence[int]) -> dict[str, Attribute]:
    return {"pad": UnitAttr()} if list(src) != list(dst) else {}


# ---------------------------------------------------------------------------
# Entry point.
# ---------------------------------------------------------------------------


def build_trans_data(req: KernelRequest) -> a.KernelOp:
    """A trans_data kernel: between two plain layouts of the same bytes (ND and its origin, or
    one plain storage format) a flat copy; a pair `describe` knows: the tiled conversion;
    anything else: the reference fallback (which is given the logical shape)."""
    (op,) = req.ops
    kw = op.kernel_kwargs()
    if {kw["src_format"], kw["dst_format"]} <= {L.ND, kw["origin_format"]} or (
            kw["src_format"] == kw["dst_format"] and kw["src_format"] not in L.BLOCKED_FORMATS):
        kernel = mark(build_copy(req), attr_names.TEMPLATE, "layout")
    elif (conv := describe(op)) is not None and same_bytes(conv):
        kernel = mark(build_copy(req), attr_names.TEMPLATE, "layout")  # ascend-elide-copies makes it a view
    else:
        kernel = LayoutKernel(req, conv).build() if conv is not None else None
        if kernel is None:
            from geir.lowering.graph_to_ascend import reference_kernel  # the lowering imports us

            kernel = reference_kernel(req)
        else:
            mark(kernel, attr_names.TEMPLATE, "layout")
    kernel.attributes[attr_names.LAYOUT_CONVERSION] = UnitAttr()
    return kernel


def try_build(req: KernelRequest) -> a.KernelOp | None:
    if len(req.ops) != 1 or not isinstance(req.ops[0], g.TransDataOp):
        return None
    op = req.ops[0]
    if req.inputs != [op.x] or req.outputs != [op.output] or any(d == 0 for d in req.arg_types[0].get_shape()):
        return None
    return build_trans_data(req)
