"""The pool template: max_pool / avg_pool (1-d, 2-d; NCHW or NC1HWC0) with the channels
innermost, one strided window view per kernel offset.

A tile is (`gt` channel groups of `cg` lanes, a band of output rows) and works on a padded
plane [gt, rows, Wp, c0] with the channels innermost, the layout NC1HWC0 stores (and
Ascend's pooling kernels use):

* NCHW: the lanes are groups of `cg` <= c0 channels (c0 = 32 bytes of them); copy the input
  rows in, vdup the plane with the pad value and vtranspose the rows into it; vtranspose the
  result back before copying it out;
* NC1HWC0: a group is one (n, c1) slab of C0 lanes, already innermost: one DMA writes the
  input rows into the plane's interior, vdup fills only its padding border, and the result
  tile is copied out as it is (the padded lanes are pooled as don't-care data).

Then one vmax / vadd per kernel offset of the strided window view
`plane[:, i*dh::sh, j*dw::sw, :]`; for an average, the same sums over a 0/1 mask plane give
the divisor. A bf16 pool builds its plane in bf16 (copies, vdup and vtranspose move bits),
converts it to f32 for the windows (the vector unit has no bf16 vmax / vadd) and the result
back to bf16 before it leaves; an int8 max pool (graph-fold-qdq moves a quantize before a max
pool) does the same in f16, which holds every int8 value exactly, its padding the type's
minimum.

A pool whose one reader quantizes it (graph-fuse's "pool-quantize": an f16 / f32 pool, NCHW,
then float casts and a quantize by one known scale and zero point) quantizes its result tile
before it leaves, as the graph does: in f32 (the f16 result converted exactly), `vdiv` by the
scale's tile, `vround` (half to even), `+ zero point` and the clamp to the type's range; the
integers go back to the pool's type (exact: every int8 value is an f16 one), are transposed as
the result would be, and a `vcast {round = "rint"}` makes them int8. So the kernel's int8
result is the graph's bit for bit; the quantize works on the pooled tile, a quarter of the
plane or less. Where the float map has other readers too (`_Plan.keep`: the fusion's outputs
are the pool's result and the quantized one), the kernel writes both: the transposed result
tile is stored as it is and quantized from there, in f32, into the int8 tile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, StringAttr, f16, f32, i64
from xdsl.ir import Attribute, Operation, SSAValue

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.dialects import formats
from geir.dialects import graph as g
from geir.ir.types import is_float, to_dtype
from geir.lowering.templates.common import (
    KernelBuilder,
    KernelRequest,
    block_elems,
    ceil_div,
    compute_type,
    itemsize,
    mark,
    round_up,
    shape_of,
)
from geir.lowering.templates.data import MIN_TILE_BYTES, slots_of, ub_view
from geir.lowering.templates.vector.quantization import Quantize, quantized_outputs
from geir.target import op_info


@dataclass(frozen=True)
class PoolGeometry:
    """A pool's 2-d geometry (a 1-d pool is H = 1) on its logical shapes, and how its
    channels are stored: plain NCHW, or NC1HWC0 (`blocked`: the C0 lanes already innermost,
    `nc` then counts N * C1 * C0 lanes, padding included)."""

    nc: int          # channels of all images (N * C)
    h: int
    w: int
    oh: int
    ow: int
    kh: int          # kernel
    kw: int
    sh: int          # strides
    sw: int
    dh: int          # dilations
    dw: int
    pt: int          # pads: top, left, bottom, right
    pl: int
    pb: int
    pr: int
    wp: int          # width of the padded plane (the windows may read past the right pad)
    blocked: bool

    @classmethod
    def of(cls, op: Operation) -> PoolGeometry | None:
        """The geometry of a pool op; None for what the template does not take (3-d pools,
        formats other than NC1HWC0 of an NCHW origin)."""
        t = op.inputs[0].type
        blocked = formats.storage_of(t) == formats.NC1HWC0
        if formats.is_formatted(t) and not (blocked and formats.origin_of(t) == formats.NCHW):
            return None
        x = list(formats.logical_shape(t))
        y = list(formats.logical_shape(op.results[0].type))
        nd = len(x) - 2
        if nd not in (1, 2):
            return None
        attrs = op.attrs()
        k = list(attrs["kernel_shape"])
        pads = list(attrs["pads"] or [0] * (2 * nd))
        strides = list(attrs["strides"] or [1] * nd)
        dil = list(attrs["dilations"] or [1] * nd)
        if nd == 1:  # a 1-d pool is a 2-d one with H = 1
            x, y = [x[0], x[1], 1, x[2]], [y[0], y[1], 1, y[2]]
            k, strides, dil = [1, *k], [1, *strides], [1, *dil]
            pads = [0, pads[0], 0, pads[1]]
        n, c, h, w = x
        if blocked:
            c1, c0 = shape_of(op.inputs[0])[1], shape_of(op.inputs[0])[4]
            c = c1 * c0
        oh, ow = y[2], y[3]
        pt, pl, pb, pr = pads[0], pads[1], pads[2], pads[3]
        wp = max(pl + w + pr, (ow - 1) * strides[1] + (k[1] - 1) * dil[1] + 1)
        return cls(nc=n * c, h=h, w=w, oh=oh, ow=ow, kh=k[0], kw=k[1], sh=strides[0], sw=strides[1],
                   dh=dil[0], dw=dil[1], pt=pt, pl=pl, pb=pb, pr=pr, wp=wp, blocked=blocked)

    def span(self, rows: int) -> int:
        """Plane rows the windows of `rows` output rows read."""
        return (rows - 1) * self.sh + (self.kh - 1) * self.dh + 1

    def bands(self, toh: int, include_pad: bool) -> list[Band]:
        """The bands of `toh` output rows, runs of alike ones merged (one loop each)."""
        bands: list[Band] = []
        for b in range(ceil_div(self.oh, toh)):
            rows = min(toh, self.oh - b * toh)
            span = self.span(rows)
            top = b * toh * self.sh                 # padded row of the band's first window row
            lo, hi = max(0, top - self.pt), min(self.h, top - self.pt + span)
            plane_row = lo + self.pt - top
            if include_pad:
                mask = (max(0, -top), min(span, self.h + self.pt + self.pb - top))
            else:
                mask = (plane_row, plane_row + hi - lo)
            sig = (rows, hi - lo, plane_row, mask)
            prev = bands[-1] if bands else None
            if prev is not None and (prev.rows, prev.in_rows, prev.plane_row, prev.mask) == sig \
                    and prev.in_lo + prev.count * toh * self.sh == lo:
                bands[-1] = Band(prev.first, prev.count + 1, rows, hi - lo, prev.in_lo, plane_row, mask)
            else:
                bands.append(Band(b, 1, rows, hi - lo, lo, plane_row, mask))
        return bands


@dataclass(frozen=True)
class Band:
    """A run of bands of output rows that share one geometry (so one loop covers them)."""

    first: int       # index of the first band
    count: int       # bands in the run
    rows: int        # output rows per band
    in_rows: int     # input rows read per band
    in_lo: int       # first input row of the first band
    plane_row: int   # plane row the first input row goes to
    mask: tuple[int, int]  # plane rows [lo, hi) counted by an average


@dataclass(frozen=True)
class _Plan:
    """What the tiling and the emission share: the geometry, the op, the lanes."""

    geom: PoolGeometry
    elt: Attribute      # as stored
    celt: Attribute     # as computed (common.compute_type)
    is_max: bool
    include_pad: bool   # an average counts the padding in its divisor
    c0: int             # lanes of a plane row
    cg: int             # channels in a group (c0 when blocked)
    quant: Quantize | None = None  # the result quantized before it leaves (NCHW only)
    keep: bool = False             # the float result is written too (other readers)

    @classmethod
    def of(cls, op: Operation, geom: PoolGeometry, quant: Quantize | None = None, keep: bool = False) -> _Plan:
        elt = op.inputs[0].type.element_type
        is_max = isinstance(op, g.MaxPoolOp)
        include_pad = not is_max and bool(op.attrs().get("count_include_pad", 0))
        c0 = formats.c0_of(elt) if geom.blocked else block_elems(elt)
        cg = c0 if geom.blocked else max(d for d in range(1, c0 + 1) if geom.nc % d == 0)
        # int8 windows compare in f16, which holds every int8 exactly (no int8 vmax)
        celt = compute_type(elt) if is_float(elt) else f16
        return cls(geom, elt, celt, is_max, include_pad, c0, cg, quant, keep)

    @property
    def groups(self) -> int:
        return self.geom.nc // self.cg

    @property
    def wpad(self) -> int:  # an NCHW input row in ub
        return round_up(self.geom.w, self.c0)

    @property
    def opad(self) -> int:  # an NCHW output row in ub
        return round_up(self.geom.ow, self.c0)

    @property
    def qpad(self) -> int:  # a quantized NCHW output row in ub
        return round_up(self.geom.ow, block_elems(self.quant.elt)) if self.quant else 0

    @property
    def qwide(self) -> bool:  # the quantize converts the result to f32 first
        return self.quant is not None and (self.celt != f32 or self.keep)

    def qbox(self, gt: int, toh: int) -> list[int]:
        """The f32 tiles the quantize computes in: the result's [gt, toh, OW, c0], or when the
        float result is kept, the transposed [gt, c0, toh, opad] it quantizes from."""
        return [gt, self.c0, toh, self.opad] if self.keep else [gt, toh, self.geom.ow, self.c0]

    @property
    def converts(self) -> bool:
        """Computed in another type than stored: the plane and the result are converted."""
        return self.celt != self.elt

    def need(self, gt: int, toh: int) -> int:
        """ub bytes of one slot for tiles of `gt` groups x `toh` output rows."""
        G, c0 = self.geom, self.c0
        span = G.span(toh)
        stored = span * G.wp * c0                                      # plane
        computed = toh * G.ow * c0                                     # acc
        if not G.blocked:
            stored += c0 * span * self.wpad + c0 * toh * self.opad     # rows in, rows out
        if self.converts:
            computed += span * G.wp * c0                               # the plane converted
            stored += toh * G.ow * c0                                  # the result converted
        n = gt * (stored * itemsize(self.elt) + computed * itemsize(self.celt))
        if self.quant:
            n += gt * c0 * toh * self.qpad * itemsize(self.quant.elt)  # the result quantized
            n += (1 + self.qwide) * math.prod(self.qbox(gt, toh)) * itemsize(f32)  # the f32 result, the scale
        if not self.is_max:
            n += (span * G.wp * c0 + toh * G.ow * c0 * (1 + gt)) * itemsize(self.celt)  # mask, counts
        return n


def _choose_tiles(req: KernelRequest, plan: _Plan) -> tuple[int, int, int] | None:
    """(slots, groups per tile, output rows per tile): all output rows and as many groups as
    fit (double-buffered if it can be), but enough tiles for the cores; else bands of rows of
    one group. None when one output row of a group does not fit ub."""
    G, groups = plan.geom, plan.groups
    cap = req.device.buffer_bytes["ub"]
    want = min(req.device.vector_cores, max(1, G.nc * G.oh * G.ow * itemsize(plan.elt) // MIN_TILE_BYTES))
    choice = None
    for slots in ((2, 1) if slots_of(req) > 1 else (1,)):
        room = cap // slots
        if plan.need(1, G.oh) <= room:
            gt = 1
            while gt < groups and plan.need(gt + 1, G.oh) <= room and ceil_div(groups, gt + 1) >= want:
                gt += 1
            choice = (slots, gt, G.oh)
        else:
            toh = G.oh
            while toh > 1 and plan.need(1, toh) > room:
                toh = toh // 2 if toh > 16 else toh - 1
            if plan.need(1, toh) <= room:
                choice = (slots, 1, toh)
        if choice:
            break
    if choice is None:
        return None
    slots, gt, toh = choice
    if gt == 1 and groups * ceil_div(G.oh, toh) < want:  # bands short enough for the cores
        toh = max(1, min(toh, ceil_div(G.oh, ceil_div(want, groups))))
    return slots, gt, toh


def build_pool(req: KernelRequest) -> a.KernelOp | None:
    """The pool kernel of a request of one max_pool / avg_pool (see the module docstring),
    or None if the template does not take it."""
    op, *rest = req.ops
    written = quantized_outputs(op, rest, req.outputs)
    if req.inputs[0] is not op.inputs[0] or written is None:
        return None
    quant, keep, result = written
    geom = PoolGeometry.of(op)
    if geom is None:
        return None
    elt = op.inputs[0].type.element_type
    if not op_info.POOL.takes_type(elt) or geom.nc * geom.oh * geom.ow == 0:
        return None
    if not is_float(elt) and not isinstance(op, g.MaxPoolOp):
        return None  # an integer average rounds: only the maximum is exact in f16
    if quant is not None and (geom.blocked or compute_type(elt) != elt):
        return None  # the quantized result leaves NCHW, computed in the pool's own type
    plan = _Plan.of(op, geom, quant, keep)
    tiles = _choose_tiles(req, plan)
    if tiles is None:
        return None  # one output row of a channel group does not fit ub
    slots, gt, toh = tiles
    groups = plan.groups
    bands = geom.bands(toh, plan.include_pad)
    # (first group, tiles of groups, groups per tile): the main tiles, a tail of the rest
    gpieces = [(0, groups // gt, gt)] + ([(groups // gt * gt, 1, groups % gt)] if groups % gt else [])
    pieces = [_Piece(*gp, band) for gp in gpieces for band in bands]
    most = max(p.ntiles_g * p.band.count for p in pieces)
    if most <= 1:
        slots = 1
    kb = KernelBuilder(req, "vector", max(1, min(req.device.vector_cores, most)))
    emitter = _PoolKernel(kb, plan, slots, gt, toh, result)
    for index, piece in enumerate(pieces):
        emitter.pipeline(piece, last_blocks=index % 2 == 1)
    return mark(kb.finish(), attr_names.TEMPLATE, "pool")


@dataclass(frozen=True)
class _Piece:
    """Tiles of `n` groups each, from group `g0` on (`ntiles_g` of them), x a run of bands."""

    g0: int
    ntiles_g: int
    n: int
    band: Band


@dataclass(frozen=True)
class _Buffers:
    """The ub buffers of one slot (NCHW only: xin, out; averages only: mask, cnt, cntb)."""

    xin: SSAValue | None    # [gt, c0, span, wpad] input rows as they lie in gm
    plane: SSAValue         # [gt, span, Wp, c0] the padded plane, channels innermost
    acc: SSAValue           # [gt, toh, OW, c0] the result
    out: SSAValue | None    # [gt, c0, toh, opad] the result transposed back
    planef: SSAValue | None  # the plane and the result in the compute type (bf16: f32)
    accb: SSAValue | None    # and the result converted back (`_Plan.converts` only)
    outq: SSAValue | None    # [gt, c0, toh, qpad] the result transposed back, quantized
    accf: SSAValue | None    # the result in f32, quantized (`_Plan.qbox`: not f32 already, or kept)
    scale: SSAValue | None   # the quantize's scale (f32, `_Plan.qbox`)
    mask: SSAValue | None   # [1, span, Wp, c0] 1 where a window counts
    cnt: SSAValue | None    # [1, toh, OW, c0] the divisors
    cntb: SSAValue | None   # [gt, toh, OW, c0] the divisors broadcast to the groups


_PERM_IN = [0, 2, 3, 1]    # [n, cg, rows, w] -> [n, rows, w, cg]
_PERM_OUT = [0, 3, 1, 2]   # and back


class _PoolKernel:
    """The pool kernel's gm views and ub buffers; `pipeline` emits the tiles of one piece."""

    def __init__(self, kb: KernelBuilder, plan: _Plan, slots: int, gt: int, toh: int, result: int = 0):
        """`result`: the output the pool (quantized, if it is) writes; a kept float result is the other."""
        G, c0, elt, celt = plan.geom, plan.c0, plan.elt, plan.celt
        self.kb, self.plan, self.G, self.toh = kb, plan, G, toh
        groups = plan.groups
        if G.blocked:  # [N, C1, H, W, C0] -> one [H, W, C0] slab per group
            self.x = kb.view(kb.inputs[0], [groups, G.h, G.w, c0])
            self.y = kb.view(kb.outputs[0], [groups, G.oh, G.ow, c0])
        else:
            self.x = kb.view(kb.inputs[0], [groups, plan.cg, G.h, G.w])
            self.y = kb.view(kb.outputs[result], [groups, plan.cg, G.oh, G.ow])
            # the float result, when it is kept beside the quantized one
            self.yf = kb.view(kb.outputs[1 - result], [groups, plan.cg, G.oh, G.ow]) if plan.keep else None
        lowest = -math.inf if is_float(elt) else int(np.iinfo(to_dtype(elt)).min)
        self.fill = kb.scalar(lowest if plan.is_max else 0.0, elt)
        self.slots = slots
        span = G.span(toh)
        avg = not plan.is_max
        self.bufs: list[_Buffers] = []
        for s in range(slots):
            sfx = str(s) if slots > 1 else ""
            conv = plan.converts
            self.bufs.append(_Buffers(
                xin=None if G.blocked else kb.alloc([gt, c0, span, plan.wpad], elt, "ub", "rows" + sfx),
                plane=kb.alloc([gt, span, G.wp, c0], elt, "ub", "plane" + sfx),
                acc=kb.alloc([gt, toh, G.ow, c0], celt, "ub", "acc" + sfx),
                out=None if G.blocked else kb.alloc([gt, c0, toh, plan.opad], elt, "ub", "out" + sfx),
                planef=kb.alloc([gt, span, G.wp, c0], celt, "ub", "planef" + sfx) if conv else None,
                accb=kb.alloc([gt, toh, G.ow, c0], elt, "ub", "accb" + sfx) if conv else None,
                outq=kb.alloc([gt, c0, toh, plan.qpad], plan.quant.elt, "ub", "outq" + sfx) if plan.quant else None,
                accf=kb.alloc(plan.qbox(gt, toh), f32, "ub", "accf" + sfx) if plan.qwide else None,
                scale=kb.alloc(plan.qbox(gt, toh), f32, "ub", "qscale" + sfx) if plan.quant else None,
                mask=kb.alloc([1, span, G.wp, c0], celt, "ub", "mask" + sfx) if avg else None,
                cnt=kb.alloc([1, toh, G.ow, c0], celt, "ub", "cnt" + sfx) if avg else None,
                cntb=kb.alloc([gt, toh, G.ow, c0], celt, "ub", "cntb" + sfx) if avg else None,
            ))
        self.state: dict[int, tuple] = {}
        # groups are [N, channel groups] flattened: the real images' are the first ones
        self.real = kb.real_rows(groups)

    def pipeline(self, piece: _Piece, last_blocks: bool) -> None:
        kb = self.kb
        count = piece.ntiles_g * piece.band.count
        per = ceil_div(count, min(kb.kernel.block_count, count))
        self.state = {}
        runs = None
        if self.real is not None:  # a shape range's batch: the tiles of the real images' groups
            runs = kb.mul(kb.limited(piece.ntiles_g, piece.n, piece.g0, self.real), piece.band.count)
        kb.pipeline(count, per, lambda t, s: self._load(piece, t, s), lambda t, s: self._store(piece, s),
                    lambda t, s: self._compute(piece, s), self.slots, last_blocks=last_blocks, runs=runs)

    def _interior(self, piece: _Piece) -> list[int]:
        """Where a tile's input rows go in the plane."""
        return [piece.n, piece.band.in_rows, self.G.w, self.plan.cg]

    def _load(self, piece: _Piece, t: int | SSAValue, s: int) -> None:
        kb, G, band, n, cg = self.kb, self.G, piece.band, piece.n, self.plan.cg
        g_, b_ = kb.delinearize(t, [piece.ntiles_g, band.count])
        grp = kb.add(kb.mul(g_, n), piece.g0)
        in_lo = kb.add(kb.mul(b_, self.toh * G.sh), band.in_lo)
        oh0 = kb.mul(kb.add(b_, band.first), self.toh)
        self.state[s] = (grp, oh0)
        if not band.in_rows:
            return
        if G.blocked:
            interior = self._interior(piece)
            kb.copy(kb.tile(self.x, [grp, in_lo, 0, 0], interior),
                    kb.tile(self.bufs[s].plane, [0, band.plane_row, G.pl, 0], interior))
        else:
            kb.copy(kb.tile(self.x, [grp, 0, in_lo, 0], [n, cg, band.in_rows, G.w]),
                    ub_view(kb, self.bufs[s].xin, [n, cg, band.in_rows, G.w]))

    def _compute(self, piece: _Piece, s: int) -> None:
        kb, G, plan, band, n = self.kb, self.G, self.plan, piece.band, piece.n
        b = self.bufs[s]
        plane = kb.tile(b.plane, [0, 0, 0, 0], [n, G.span(band.rows), G.wp, plan.cg])
        if G.blocked:
            _fill_border(kb, plane, self.fill, (band.plane_row, band.plane_row + band.in_rows),
                         (G.pl, G.pl + G.w))
        else:
            kb.vec(a.VdupOp, self.fill, plane)
            if band.in_rows:
                kb.vec(a.VtransposeOp, ub_view(kb, b.xin, [n, plan.cg, band.in_rows, G.w]),
                       kb.tile(plane, [0, band.plane_row, G.pl, 0], self._interior(piece)),
                       perm=DenseArrayBase.from_list(i64, _PERM_IN))
        if plan.converts:
            wide = kb.tile(b.planef, [0, 0, 0, 0], [n, G.span(band.rows), G.wp, plan.cg])
            kb.vec(a.VcastOp, plane, wide)
            plane = wide
        box = [n, band.rows, G.ow, plan.cg]
        acc = kb.tile(b.acc, [0, 0, 0, 0], box)
        self._windows(plane, n, band.rows, acc, a.VmaxOp if plan.is_max else a.VaddOp)
        if not plan.is_max:
            kb.vec(a.VdivOp, acc, self._counts(piece, b), acc)
        if plan.quant and not plan.keep:
            self._quantize(acc, b, box)
        if plan.converts:
            narrow = kb.tile(b.accb, [0, 0, 0, 0], box)
            kb.vec(a.VcastOp, acc, narrow)
            acc = narrow
        if not G.blocked:
            out = ub_view(kb, b.out, [n, plan.cg, band.rows, G.ow])
            kb.vec(a.VtransposeOp, acc, out, perm=DenseArrayBase.from_list(i64, _PERM_OUT))
            if plan.keep:  # the float tile stays for its store: quantize a copy in f32
                qbox = [n, plan.cg, band.rows, G.ow]
                out = self._quantize(out, b, qbox)
            if plan.quant:  # an integer in range already: rint converts it exactly
                kb.vec(a.VcastOp, out, ub_view(kb, b.outq, [n, plan.cg, band.rows, G.ow]), round=StringAttr("rint"))

    def _quantize(self, acc: SSAValue, b: _Buffers, box: list[int]) -> SSAValue:
        """acc -> rint(acc / scale) + zero point, clamped to the quantized type's range, in f32:
        the tile holding the integers - acc, converted back to its type, or (the float result
        kept) the f32 tile, acc left as it was."""
        kb, q = self.kb, self.plan.quant
        wide = kb.tile(b.accf, [0, 0, 0, 0], box) if self.plan.qwide else acc
        scale = kb.tile(b.scale, [0, 0, 0, 0], box)
        if wide is not acc:  # an f32 result kept: a copy to quantize
            kb.vec(a.VcastOp if acc.type.element_type != f32 else a.VcopyOp, acc, wide)
        q.emit(kb, wide, scale)
        if self.plan.keep:
            return wide
        if wide is not acc:
            kb.vec(a.VcastOp, wide, acc)
        return acc

    def _counts(self, piece: _Piece, b: _Buffers) -> SSAValue:
        """An average's divisors: the window sums of a plane of 1 where the window counts (the
        input, and the padding with count_include_pad), 0 elsewhere, broadcast to the groups."""
        kb, G, plan, band, n = self.kb, self.G, self.plan, piece.band, piece.n
        cg, elt = plan.cg, plan.celt
        mask = kb.tile(b.mask, [0, 0, 0, 0], [1, G.span(band.rows), G.wp, cg])
        kb.vec(a.VdupOp, kb.scalar(0.0, elt), mask)
        lo, hi = band.mask
        c_lo, c_hi = (0, G.pl + G.w + G.pr) if plan.include_pad else (G.pl, G.pl + G.w)
        if hi > lo:
            kb.vec(a.VdupOp, kb.scalar(1.0, elt), kb.tile(mask, [0, lo, c_lo, 0], [1, hi - lo, c_hi - c_lo, cg]))
        cnt = kb.tile(b.cnt, [0, 0, 0, 0], [1, band.rows, G.ow, cg])
        self._windows(mask, 1, band.rows, cnt, a.VaddOp)
        if n > 1:
            cntb = kb.tile(b.cntb, [0, 0, 0, 0], [n, band.rows, G.ow, cg])
            kb.vec(a.VbrcbOp, cnt, cntb)
            cnt = cntb
        return cnt

    def _windows(self, plane: SSAValue, n: int, rows: int, dst: SSAValue, combine: type[a.VectorOp]) -> None:
        """dst = combine over the kernel offsets of the strided window views of `plane`."""
        kb, G = self.kb, self.G
        for i in range(G.kh):
            for j in range(G.kw):
                win = kb.tile(plane, [0, i * G.dh, j * G.dw, 0], [n, rows, G.ow, self.plan.cg],
                              [1, G.sh, G.sw, 1])
                if i == 0 and j == 0:
                    kb.vec(a.VcopyOp, win, dst)
                else:
                    kb.vec(combine, dst, win, dst)

    def _store(self, piece: _Piece, s: int) -> None:
        kb, G, n, rows = self.kb, self.G, piece.n, piece.band.rows
        grp, oh0 = self.state[s]
        if G.blocked:
            box = [n, rows, G.ow, self.plan.cg]
            result = self.bufs[s].accb if self.plan.converts else self.bufs[s].acc
            kb.copy(kb.tile(result, [0, 0, 0, 0], box), kb.tile(self.y, [grp, oh0, 0, 0], box))
        else:
            box = [n, self.plan.cg, rows, G.ow]
            result = self.bufs[s].outq if self.plan.quant else self.bufs[s].out
            kb.copy(ub_view(kb, result, box), kb.tile(self.y, [grp, 0, oh0, 0], box))
            if self.plan.keep:
                kb.copy(ub_view(kb, self.bufs[s].out, box), kb.tile(self.yf, [grp, 0, oh0, 0], box))


def _fill_border(kb: KernelBuilder, plane: SSAValue, fill: SSAValue, rows: tuple[int, int],
                 cols: tuple[int, int]) -> None:
    """vdup `fill` on the plane [n, span, Wp, lanes] outside rows x cols, the part the DMA
    wrote (up to four strided boxes: the top and bottom padding rows, the left and right
    padding columns of the rows in between)."""
    n, span, wp, lanes = plane.type.get_shape()
    (r0, r1), (c0, c1) = rows, cols
    if r1 <= r0:
        r0 = r1 = span
    boxes = [((0, 0), (r0, wp)), ((r1, 0), (span - r1, wp)), ((r0, 0), (r1 - r0, c0)),
             ((r0, c1), (r1 - r0, wp - c1))]
    for (top, left), (nr, nc) in boxes:
        if nr > 0 and nc > 0:
            kb.vec(a.VdupOp, fill, kb.tile(plane, [0, top, left, 0], [n, nr, nc, lanes]))
