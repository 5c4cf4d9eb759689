"""Depthwise convolution on the vector unit.

A depthwise convolution (group == C, one channel per group) has two kernels: the cube one
(one output channel per group, padded to a 16-row fractal: the cube spends a 16 x 16
fractal on each channel's 1 x 9 product) and this one; the cost model prices both and the
cheaper is built - this one for all but the smallest layers. A bf16 one moves its box and
weights in bf16 and multiplies and adds them in f32 (common.compute_type).

An int8 one (int8 operands, an i32 result) moves its box and weights in their types
and multiplies and adds in f32, which is exact: every product is at most 2^15 in magnitude
and a window's sum of them stays far below 2^24 (`exact_in_f32`). The sum is converted to
i32, the conv's i32 bias added in i32, and the biased sum converted to f32 once, as the
graph's requantize and dequantize do (f32(acc) * scale); the rest of the epilogue runs as
vector instructions in f32 (the plan built without the FIX pipe's quantization:
plan_request(vector=True)). So the result is the graph's own, where the cube's FIX pipe
reads the scale as a 19-bit float and rounds ties away from zero. The padding holds the
input's zero point (`offset_x`), as the cube's does.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, StringAttr, UnitAttr, f32, i32, i64
from xdsl.ir import Attribute, SSAValue

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.ir.types import to_dtype
from geir.lowering.templates.common import (
    KernelBuilder,
    KernelRequest,
    block_elems,
    ceil_div,
    compute_type,
    itemsize,
    round_up,
    row_elems,
)
from geir.lowering.templates.cube.epilogue_buffers import EpilogueBuffers, epilogue_compute_type
from geir.lowering.templates.cube.epilogue_passes import EpiloguePasses
from geir.lowering.templates.cube.loops import Index, distribute
from geir.lowering.templates.cube.plan import ConvGeometry, ConvPlan, CubePlan
from geir.target.device import dtype_name


def is_depthwise(plan: CubePlan) -> bool:
    return isinstance(plan, ConvPlan) and plan.is_depthwise


def kernel_compute_type(plan: ConvPlan) -> Attribute:
    """What the kernel multiplies and adds in: f32 for int8 operands, else the operands'
    compute type."""
    return f32 if plan.integer else compute_type(plan.elt)


F32_EXACT = 1 << 24
"""Integers of magnitude up to this are exact in f32."""


def exact_in_f32(plan: ConvPlan) -> bool:
    """Whether an int8 depthwise plan (plan_request(vector=True)) computes exactly on the
    vector unit: plain (ND) feature maps, an f32 epilogue with no FIX stage, and a window
    whose sum of products stays below 2^24 whatever the values (the bias is added in i32)."""
    if plan.epilogue.fix is not None or plan.x_blocked or plan.out_blocked or epilogue_compute_type(plan) != f32:
        return False
    conv = plan.cube

    def magnitude(v: SSAValue) -> int:
        info = np.iinfo(to_dtype(v.type.element_type))
        return max(-int(info.min), int(info.max))

    return plan.geometry.khw * magnitude(conv.operands[0]) * magnitude(conv.operands[1]) < F32_EXACT


@dataclass(frozen=True)
class RowTiles:
    """Output rows [t * ohs, ...) of tiles t_start .. t_start + count - 1, which all read
    `rows` input rows starting `off` rows into their window (the rest is padding)."""

    t_start: int
    count: int
    ohv: int
    rows: int
    off: int


def row_tiles(geo: ConvGeometry, ohs: int) -> list[RowTiles]:
    """The output-row tiles grouped by how their window meets the image's top and bottom
    (interior tiles form one group: one loop)."""
    window = geo.window_rows(ohs)
    groups: list[RowTiles] = []
    for t in range(ceil_div(geo.oh, ohs)):
        ohv = min(ohs, geo.oh - t * ohs)
        y0 = t * ohs * geo.sh - geo.pt
        lo, hi = max(0, y0), min(geo.h, y0 + geo.window_rows(ohv))
        key = (ohv, max(0, hi - lo), lo - y0)
        last = groups[-1] if groups else None
        if last is not None and (last.ohv, last.rows, last.off) == key and last.t_start + last.count == t:
            groups[-1] = RowTiles(last.t_start, last.count + 1, *key)
        else:
            groups.append(RowTiles(t, 1, *key))
    assert all(gr.rows <= window for gr in groups)
    return groups


@dataclass(frozen=True)
class DepthwiseTiling:
    ct: int          # channels per tile (a whole number of 32-byte blocks)
    ohs: int         # output rows per tile
    blocks: int
    estimate_us: float


def _ub_bytes(geo: ConvGeometry, ct: int, ohs: int, elt: Attribute, celt: Attribute, buffers: EpilogueBuffers) -> int:
    """ub of a tile: the box, the padded transposed box, the weights (as loaded and
    transposed), acc / tmp / wb in the compute type (with the box and the weights converted
    to it when that is not `elt`) and the epilogue's tiles, + 2 KiB."""
    isz, csz = itemsize(elt), itemsize(celt)
    window = geo.window_rows(ohs)
    wp = round_up(geo.w, max(1, 32 // isz))
    pix = ohs * geo.ow
    stored = ct * window * wp + window * geo.padded_width * ct + ct * round_up(geo.khw, 32 // isz) + geo.khw * ct
    computed = 3 * pix * ct + (buffers.pool + len(buffers.sides)) * ct * round_up(pix, max(1, 32 // csz))
    if buffers.plan.bias is not None:  # the i32 sum, the broadcast bias, the bias as loaded
        computed += 2 * pix * ct + ct
    if celt != elt:
        computed += window * geo.padded_width * ct + geo.khw * ct
        stored += (len(buffers.sides) + len(buffers.stores)) * ct * round_up(pix, max(1, 32 // isz))
    return isz * stored + csz * computed + 2048


def depthwise_tiling(req: KernelRequest, plan: ConvPlan, buffers: EpilogueBuffers) -> DepthwiseTiling | None:
    """Channels x output rows per tile for the vector kernel, priced like the cube's."""
    geo, spec = plan.geometry, req.device
    blk = block_elems(plan.elt)
    best: DepthwiseTiling | None = None
    for ct in (blk, 2 * blk, 4 * blk, 8 * blk):
        if ct > round_up(geo.c, blk) and ct != blk:
            break
        for ohs in range(1, geo.oh + 1):
            if _ub_bytes(geo, ct, ohs, plan.elt, kernel_compute_type(plan), buffers) > spec.buffer_bytes["ub"]:
                break
            us = _price(req, plan, buffers, ct, ohs)
            if best is None or us < best.estimate_us:
                tiles = geo.n * ceil_div(geo.c, ct) * ceil_div(geo.oh, ohs)
                best = DepthwiseTiling(ct, ohs, min(tiles, spec.vector_cores), us)
    return best


def _price(req: KernelRequest, plan: ConvPlan, buffers: EpilogueBuffers, ct: int, ohs: int) -> float:
    """Microseconds of the kernel with tiles of ct channels x ohs output rows."""
    geo, cost, spec = plan.geometry, req.cost, req.device
    celt = kernel_compute_type(plan)
    isz, dtype, khw = itemsize(plan.elt), dtype_name(to_dtype(plan.elt)), geo.khw
    csz, cdtype = itemsize(celt), dtype_name(to_dtype(celt))
    sides, stores = len(buffers.sides), len(buffers.stores)
    window = geo.window_rows(ohs)
    pix = ohs * geo.ow
    tile = pix * ct * isz
    wide = window * geo.padded_width * ct * isz
    ctile = pix * ct * csz
    vec = (cost.vector_cycles("dup", wide, dtype) + cost.vector_cycles("transpose", wide, dtype)
           + cost.vector_cycles("transpose", ctile, cdtype)
           + khw * (cost.vector_cycles("broadcast", ctile, cdtype) + 2 * cost.vector_cycles("binary", ctile, cdtype))
           + sum(cost.vector_cycles(ins.op.COST_KIND, ctile, cdtype) for ins in plan.epilogue.instrs)
           + (cost.vector_cycles("unary", ctile, cdtype) if plan.epilogue.fix_relu else 0))
    if plan.bias is not None:  # to i32, + the broadcast bias, back to f32
        vec += (2 * cost.vector_cycles("cast", ctile, cdtype) + cost.vector_cycles("broadcast", ctile, cdtype)
                + cost.vector_cycles("binary", ctile, cdtype))
    if cdtype != dtype:  # the box and the weights converted, each side and output too
        vec += (cost.vector_cycles("cast", wide * csz // isz, cdtype)
                + (sides + stores) * cost.vector_cycles("cast", ctile, cdtype))
    mte = (cost.dma_cycles(ct * window * geo.w * isz, "gm", "ub") + cost.dma_cycles(ct * khw * isz, "gm", "ub")
           + sides * cost.dma_cycles(tile, "gm", "ub") + stores * cost.dma_cycles(tile, "ub", "gm")
           + (cost.dma_cycles(ct * 4, "gm", "ub") if plan.bias is not None else 0))
    tiles = geo.n * ceil_div(geo.c, ct) * ceil_div(geo.oh, ohs)
    waves = ceil_div(tiles, min(tiles, spec.vector_cores))
    hbm = tiles * (ct * window * geo.w + ct * khw + (sides + stores) * pix * ct) * isz
    us = max(cost.cycles_to_us(waves * (vec + mte), "vector"), cost.hbm_time_us(hbm))
    return us + cost.cycles_to_us(waves * spec.block_dispatch_cycles, "vector")


def _perm(*dims: int) -> Attribute:
    return DenseArrayBase.from_list(i64, list(dims))


class DepthwiseKernel:
    """Depthwise convolution as multiply-adds on the vector unit: per tile of ct channels
    and ohs output rows, the input rows come into ub as [C, rows, W], `vtranspose` makes them
    channel-innermost inside a zeroed, padded [rows, W + pads, C] box, and every tap is one
    strided view of that box (rows on 32-byte blocks whatever the shift), times the tap's
    weights broadcast over the pixels, accumulated; the [pixels, C] sum is transposed back to
    the [C, pixels] tile of the NCHW result, where the fusion's epilogue runs as in the cube
    kernels."""

    def __init__(self, req: KernelRequest, plan: ConvPlan, tiling: DepthwiseTiling, buffers: EpilogueBuffers):
        self.req, self.plan, self.t, self.buffers = req, plan, tiling, buffers
        self.geo = plan.geometry
        self.elt = plan.elt

    def build(self) -> a.KernelOp:
        plan, t, geo = self.plan, self.t, self.geo
        kb = self.kb = KernelBuilder(self.req, "vector", t.blocks)
        ohs = t.ohs
        self.x3 = kb.view(kb.inputs[plan.segments[0].arg], [geo.n * geo.c, geo.h, geo.w])
        self.w3 = kb.view(kb.inputs[plan.weight], [geo.c, 1, geo.khw])
        self.b3 = kb.view(kb.inputs[plan.bias], [1, 1, geo.c]) if plan.bias is not None else None
        out2 = [kb.view(o, [plan.batch * plan.rows, plan.cols]) for o in kb.outputs]
        self.epilogue = EpiloguePasses(kb, plan, self.buffers, out2, plan.rows, t.ct, ohs * geo.ow)
        self._alloc_ub()
        kb.set_flag("MTE3", "MTE2", 0)
        chans = [(geo.c // t.ct, t.ct, 0)] if geo.c >= t.ct else []
        if geo.c % t.ct:
            chans.append((1, geo.c % t.ct, (geo.c // t.ct) * t.ct))
        classes = []
        for (count, ctv, cbase), rt in itertools.product(chans, row_tiles(geo, ohs)):
            def run(idx: list[Index], ctv=ctv, cbase=cbase, rt=rt) -> None:
                self._tile(idx, ctv, cbase, rt)

            classes.append(([geo.n, count, rt.count], run))
        distribute(kb, t.blocks, classes)
        kb.wait_flag("MTE3", "MTE2", 0)
        kernel = kb.finish()
        kernel.attributes[attr_names.TEMPLATE] = StringAttr("depthwise")
        return kernel

    def _alloc_ub(self) -> None:
        kb, t, geo, elt = self.kb, self.t, self.geo, self.elt
        celt = kernel_compute_type(self.plan)
        ct, ohs, ow = t.ct, t.ohs, geo.ow
        window = geo.window_rows(ohs)
        self.box = kb.alloc([ct, window, row_elems(geo.w, elt)], elt, "ub", "box")
        self.xt = kb.alloc([window, geo.padded_width, ct], elt, "ub", "xt")
        self.acc = kb.alloc([ohs * ow, ct], celt, "ub", "acc")
        self.tmp = kb.alloc([ohs, ow, ct], celt, "ub", "tmp")
        self.wb = kb.alloc([ohs, ow, ct], celt, "ub", "wb")
        self.wl = kb.alloc([ct, 1, row_elems(geo.khw, elt)], elt, "ub", "wl")
        self.wt = kb.alloc([geo.khw, 1, ct], elt, "ub", "wt")
        # the box and the weights in the compute type, when that is not elt
        self.xtf = kb.alloc([window, geo.padded_width, ct], celt, "ub", "xtf") if celt != elt else self.xt
        self.wtf = kb.alloc([geo.khw, 1, ct], celt, "ub", "wtf") if celt != elt else self.wt
        self.acc3 = kb.view(self.acc, [ohs, ow, ct])
        if self.b3 is not None:  # an int8 conv's i32 bias, added in i32
            self.bl = kb.alloc([1, 1, ct], i32, "ub", "bias")
            self.bb = kb.alloc([ohs, ow, ct], i32, "ub", "bb")
            self.acci = kb.alloc([ohs, ow, ct], i32, "ub", "acci")
        self.zero = kb.scalar(self.plan.pad_value, elt)  # an int8 map pads with its zero point

    def _tile(self, idx: list[Index], ctv: int, cbase: int, rt: RowTiles) -> None:
        """Image n, channel tile ci (ctv channels from cbase + ci * ct), row tile j of `rt`."""
        kb, geo, ct, ohs = self.kb, self.geo, self.t.ct, self.t.ohs
        n, ci, j = idx
        c0 = kb.add(kb.mul(ci, ct), cbase)
        tile_row = kb.add(j, rt.t_start)
        oh0 = kb.mul(tile_row, ohs)
        # first input row held: t * ohs * sh - pt + off (>= 0 by construction)
        y = kb.add(kb.mul(j, ohs * geo.sh), rt.t_start * ohs * geo.sh - geo.pt + rt.off)
        row = kb.add(kb.mul(n, geo.c), c0)

        def load() -> None:
            self._load(row, y, c0, ctv, rt)

        def compute(raw: SSAValue) -> None:
            self._compute(raw, rt)

        r = kb.add(kb.mul(n, geo.m), c0) if geo.n > 1 else c0
        self.epilogue.run(r, n, c0, kb.mul(oh0, geo.ow), ctv, rt.ohv * geo.ow, None, load, compute)

    def _load(self, row: Index, y: Index, c0: Index, ctv: int, rt: RowTiles) -> None:
        """MTE2: the input rows the tile reads and the channels' weights."""
        kb, geo = self.kb, self.geo
        if rt.rows:
            self._copy_padded(kb.tile(self.x3, [row, y, 0], [ctv, rt.rows, geo.w]), self.box)
        self._copy_padded(kb.tile(self.w3, [c0, 0, 0], [ctv, 1, geo.khw]), self.wl)
        if self.b3 is not None:
            self._copy_padded(kb.tile(self.b3, [0, 0, c0], [1, 1, ctv]), self.bl)

    def _copy_padded(self, src: SSAValue, dst: SSAValue) -> None:
        if tuple(src.type.get_shape()) != tuple(dst.type.get_shape()):
            self.kb.copy(src, dst, pad=UnitAttr())
        else:
            self.kb.copy(src, dst)

    def _compute(self, raw: SSAValue, rt: RowTiles) -> None:
        """V: the padded channel-innermost box, a multiply-add per tap, the sum transposed
        into the raw tile [C, pixels]."""
        kb, geo, ct, ohs = self.kb, self.geo, self.t.ct, self.t.ohs
        ow = geo.ow
        kb.vec(a.VdupOp, self.zero, self.xt)
        if rt.rows:
            src = kb.tile(self.box, [0, 0, 0], [ct, rt.rows, geo.w])
            dst = kb.tile(self.xt, [rt.off, geo.pl, 0], [rt.rows, geo.w, ct])
            kb.vec(a.VtransposeOp, src, dst, perm=_perm(1, 2, 0))
        kb.vec(a.VtransposeOp, kb.tile(self.wl, [0, 0, 0], [ct, 1, geo.khw]), self.wt, perm=_perm(2, 1, 0))
        if self.xtf is not self.xt:
            kb.vec(a.VcastOp, self.xt, self.xtf)
            kb.vec(a.VcastOp, self.wt, self.wtf)
        for tap in range(geo.khw):
            kh, kw = divmod(tap, geo.kw)
            xv = kb.tile(self.xtf, [kh * geo.dh, kw * geo.dw, 0], [ohs, ow, ct], [geo.sh, geo.sw, 1])
            kb.vec(a.VbrcbOp, kb.tile(self.wtf, [tap, 0, 0], [1, 1, ct]), self.wb)
            if tap == 0:
                kb.vec(a.VmulOp, xv, self.wb, self.acc3)
            else:
                kb.vec(a.VmulOp, xv, self.wb, self.tmp)
                kb.vec(a.VaddOp, self.acc3, self.tmp, self.acc3)
        if self.b3 is not None:  # the exact sum to i32, + the bias, to f32 once (graph.requantize's f32(acc))
            kb.vec(a.VcastOp, self.acc3, self.acci, round=StringAttr("rint"))
            kb.vec(a.VbrcbOp, self.bl, self.bb)
            kb.vec(a.VaddOp, self.acci, self.bb, self.acci)
            kb.vec(a.VcastOp, self.acci, self.acc3)
        out = kb.tile(raw, [0, 0], [ct, ohs * ow])
        kb.vec(a.VtransposeOp, self.acc, out)
        if self.plan.epilogue.fix_relu:  # no FIX copy here to ride on
            kb.vec(a.VreluOp, out, out)
