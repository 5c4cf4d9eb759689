"""Convolution kernels: [Cout, pixels] tiles of the NCHW (or NC1HWC0) result.

The feature-map box of a tile sits in l1 and `ascend.load3d` (img2col on MTE1) expands the
windows into the [K, pixels] tile of l0b; the weights [M, C/g, kh, kw] are the [M, K] left
matrix as they lie in gm. The output [Cout, pixels] tile is then a contiguous NCHW slab,
which is why the im2col goes to l0b rather than l0a. With FRACTAL_Z weights the box is
NC1HWC0 and K runs over (c1, kh, kw, c0).

A pointwise window over an ND feature map (`ConvPlan.matrix_fm`) needs no img2col: the
tile's pixels are one run of each channel's [H * W] row, so l1 holds the [K, pixels]
matrix (copied as a matmul operand is) and MTE1 moves its [kt, pixels] steps to l0b.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue

from geir.dialects import ascend as a
from geir.dialects.ascend import FRACTAL
from geir.lowering.templates.common import ceil_div, round_up, row_elems
from geir.lowering.templates.cube.kernel import CubeKernel
from geir.lowering.templates.cube.loops import Index, TileDim, chunks, clamp_start, first_step_slot, tile_grid
from geir.lowering.templates.cube.plan import ConvPlan
from geir.lowering.templates.cube.tiling import conv_range_images


class ConvKernel(CubeKernel):
    plan: ConvPlan

    def _operand_buffers(self) -> None:
        kb, plan, t, elt, c0 = self.kb, self.plan, self.t, self.elt, self.c0
        geo, ins = plan.geometry, kb.inputs
        rows, cols = plan.box(t.ohs, t.owt)
        if plan.x_blocked:  # [N, C1, H, W, C0] as [N * C1, H, W, C0]
            self.fm2 = [kb.view(ins[sg.arg], [geo.n * ceil_div(sg.count, c0), geo.h, geo.w, c0])
                        for sg in plan.segments]
        elif plan.matrix_fm:  # [N, C, H, W] as [N * C, H * W]: an image is the [K, pixels] matrix
            self.fm2 = [kb.view(ins[sg.arg], [geo.n * sg.count, geo.h * geo.w]) for sg in plan.segments]
        else:
            self.fm2 = [kb.view(ins[sg.arg], [geo.n * sg.count, geo.h, geo.w]) for sg in plan.segments]
        # FRACTAL_Z [C1 * kh * kw, N1, 16, C0] is the fractal (NZ) form of the [Cout, K] matrix
        self.w2 = ins[plan.weight] if plan.w_fz else kb.view(ins[plan.weight], [geo.m, plan.k])
        self.l1a = [kb.alloc([t.mt, t.kl1], elt, "l1", f"l1w{s}") for s in range(self.slots)]
        fm_shape = ([t.cc, rows, cols, c0] if plan.w_fz else
                    [round_up(t.cc, plan.k_fractal), row_elems(round_up(t.ohs * t.owt, FRACTAL), elt)] if plan.matrix_fm else
                    [t.cc, rows, row_elems(cols, elt)])
        self.l1b = [kb.alloc(fm_shape, elt, "l1", f"l1fm{s}") for s in range(self.slots)]

    def _tiles(self) -> None:
        geo, t = self.plan.geometry, self.t
        dims = [TileDim(geo.n * geo.group, 1), TileDim(geo.mg, t.mt), TileDim(geo.oh, t.ohs), TileDim(geo.ow, t.owt)]
        tile_grid(self.kb, dims, t.blocks, self._tile, self._real_images())

    def _real_images(self) -> tuple[int, Index | None] | None:
        """With a shape range in the batch, the (image, group) tiles of the real images only."""
        geo = self.plan.geometry
        if not conv_range_images(self.kb.req, self.plan):
            return None
        return 0, self.kb.real_rows(geo.n * geo.group)

    def _tile(self, off: list[Index], size: list[int]) -> None:
        """One output tile: image and group ng, channels from m0, pixels from (oh0, ow0)."""
        kb, plan = self.kb, self.plan
        geo = plan.geometry
        ng, m0, oh0, ow0 = off
        _, mv, ohs, owt = size
        npix = ohs * owt
        mp, np_ = round_up(mv, FRACTAL), round_up(npix, FRACTAL)
        n = kb.divui(ng, geo.group)
        gi = kb.remui(ng, geo.group)
        rows, cols = plan.box(ohs, owt)
        if plan.samples_box:  # the box in the sampled image's coordinates: the output's
            ih, iw = clamp_start(kb, oh0, 0, rows, geo.oh), clamp_start(kb, ow0, 0, cols, geo.ow)
        else:
            ih = clamp_start(kb, kb.mul(oh0, geo.sh), geo.pt, rows, geo.h)
            iw = clamp_start(kb, kb.mul(ow0, geo.sw), geo.pl, cols, geo.w)
        wrow = kb.add(kb.mul(gi, geo.mg), m0)
        acc = kb.tile(self.l0c, [0, 0], [mp, np_])
        window = _Window(ih, iw, oh0, ow0, ohs, owt)
        self._tile_params(m0 if plan.w_fz else wrow, mp)
        if plan.w_fz:
            self._segments_fz(n, m0, window, mv, acc)
            row = kb.add(kb.mul(n, self.R), m0)
        else:
            self._segments(n, gi, wrow, window, mv, acc)
            row = kb.add(kb.mul(n, self.R), wrow)  # R: channels, padded to C0 in an NC1HWC0 result
        col = kb.add(kb.mul(oh0, geo.ow), ow0)
        self._finish_tile(acc, row, col, mv, npix)

    def _segments(self, n: Index, gi: Index, wrow: Index, window: _Window, mv: int, acc: SSAValue) -> None:
        """K over the channels of each input segment, in l1 chunks of cc channels."""
        kb, plan, t = self.kb, self.plan, self.t
        geo = plan.geometry
        khw = geo.khw
        npix = window.ohs * window.owt
        mp, np_ = round_up(mv, FRACTAL), round_up(npix, FRACTAL)
        rows, cols = plan.box(window.ohs, window.owt)
        first_chunk = [True]
        for seg_i, seg in enumerate(plan.segments):
            fm2 = self.fm2[seg_i]
            # the segment's channels of this group: [cstart, cstart + count) of the input
            count = geo.cg if len(plan.segments) == 1 else seg.count
            cbase = kb.mul(gi, geo.cg) if len(plan.segments) == 1 else 0
            fm_row = kb.add(kb.mul(n, seg.count), cbase)
            wcol0 = seg.start * khw

            def chunk(c0: Index, cc: int, s: int, first: bool, fm2=fm2, fm_row=fm_row, wcol0=wcol0) -> None:
                first = first and first_chunk[0]
                kc = round_up(cc * khw, plan.k_fractal)
                kb.wait_flag("MTE1", "MTE2", s)
                if plan.matrix_fm:  # the tile's pixels are one run of the image (whole rows, or part of one)
                    pixels = kb.add(kb.mul(window.oh0, geo.w), window.ow0)
                    box = kb.tile(fm2, [kb.add(fm_row, c0), pixels], [cc, npix])
                    self._load(box, kb.tile(self.l1b[s], [0, 0], [kc, np_]))
                else:
                    box = kb.tile(fm2, [kb.add(fm_row, c0), window.ih, window.iw], [cc, rows, cols])
                    self._load(box, self.l1b[s])
                wsrc = kb.tile(self.w2, [wrow, kb.add(kb.mul(c0, khw), wcol0)], [mv, cc * khw])
                self._load(wsrc, kb.tile(self.l1a[s], [0, 0], [mp, kc]))
                kb.sync("MTE2", "MTE1", s)

                def step(kk: Index, kt: int, u: int, first_step: bool) -> None:
                    kb.wait_flag("M", "MTE1", u)
                    a0 = kb.tile(self.l0a[u], [0, 0], [mp, kt])
                    b0 = kb.tile(self.l0b[u], [0, 0], [kt, np_])
                    kb.copy(kb.tile(self.l1a[s], [0, kk], [mp, kt]), a0)
                    if plan.matrix_fm:
                        kb.copy(kb.tile(self.l1b[s], [kk, 0], [kt, np_]), b0)
                    else:
                        self._load3d(self.l1b[s], window, b0, kk, cc)
                    self._mmad(a0, b0, acc, u, first and first_step)

                chunks(kb, kc, t.kt, self.slots, step, first_step_slot(s, steps, self.slots))
                kb.set_flag("MTE1", "MTE2", s)

            steps = ceil_div(round_up(min(t.cc, count) * khw, plan.k_fractal), t.kt)  # of a full chunk
            chunks(kb, count, t.cc, self.slots, chunk)
            first_chunk[0] = False

    def _segments_fz(self, n: Index, m0: Index, window: _Window, mv: int, acc: SSAValue) -> None:
        """K over the C0 blocks of each segment with FRACTAL_Z weights: the l1 box is NC1HWC0
        [blocks, rows, cols, C0] (copied as is from an NC1HWC0 input, or re-laid out from an
        NCHW one by the copy), K runs over (c1, kh, kw, c0) and the weights come as fractals
        (`nz2nd`)."""
        kb, plan, t, c0 = self.kb, self.plan, self.t, self.c0
        geo = plan.geometry
        rows, cols = plan.box(window.ohs, window.owt)
        khw = geo.khw
        mp, np_ = round_up(mv, FRACTAL), round_up(window.ohs * window.owt, FRACTAL)
        first_chunk = [True]
        m1 = kb.divui(m0, FRACTAL)
        for seg_i, seg in enumerate(plan.segments):
            fm2 = self.fm2[seg_i]
            blocks = ceil_div(seg.count, c0)
            seg_b0 = seg.start // c0

            def chunk(b0: Index, nb: int, s: int, first: bool, fm2=fm2, seg=seg, seg_b0=seg_b0) -> None:
                first = first and first_chunk[0]
                kc = nb * khw * c0
                # the real channels of the chunk, when it is known which chunk this is
                channels = min(nb * c0, seg.count - b0 * c0) if isinstance(b0, int) else nb * c0
                kb.wait_flag("MTE1", "MTE2", s)
                box = kb.tile(self.l1b[s], [0, 0, 0, 0], [nb, rows, cols, c0])
                if plan.samples_box:  # every sh-th row, every sw-th pixel
                    src = kb.tile(fm2, [kb.add(kb.mul(n, blocks), b0), kb.mul(window.ih, geo.sh),
                                        kb.mul(window.iw, geo.sw), 0], [nb, rows, cols, c0], [1, geo.sh, geo.sw, 1])
                    kb.copy(src, box, layout=StringAttr("nc1hwc0"))
                elif plan.x_blocked:
                    src = kb.tile(fm2, [kb.add(kb.mul(n, blocks), b0), window.ih, window.iw, 0], [nb, rows, cols, c0])
                    kb.copy(src, box, layout=StringAttr("nc1hwc0"))
                else:  # all channels of an NCHW input in one box (the tiling sees to it)
                    src = kb.tile(fm2, [kb.mul(n, seg.count), window.ih, window.iw], [seg.count, rows, cols])
                    kb.copy(src, box, layout=StringAttr("nd2nc1hwc0"))
                wsrc = kb.tile(self.w2, [kb.mul(kb.add(b0, seg_b0), khw), m1, 0, 0],
                               [nb * khw, mp // FRACTAL, FRACTAL, c0])
                kb.copy(wsrc, kb.tile(self.l1a[s], [0, 0], [mp, kc]), layout=StringAttr("nz2nd"))
                kb.sync("MTE2", "MTE1", s)

                def step(kk: Index, kt: int, u: int, first_step: bool) -> None:
                    kb.wait_flag("M", "MTE1", u)
                    a0 = kb.tile(self.l0a[u], [0, 0], [mp, kt])
                    b0_ = kb.tile(self.l0b[u], [0, 0], [kt, np_])
                    kb.copy(kb.tile(self.l1a[s], [0, kk], [mp, kt]), a0)
                    self._load3d(box, window, b0_, kk, channels)
                    self._mmad(a0, b0_, acc, u, first and first_step)

                chunks(kb, kc, t.kt, self.slots, step, first_step_slot(s, steps, self.slots))
                kb.set_flag("MTE1", "MTE2", s)

            steps = ceil_div(min(t.cc, blocks) * khw * c0, t.kt)  # of a full chunk
            chunks(kb, blocks, t.cc, self.slots, chunk)
            first_chunk[0] = False

    def _load3d(self, box: SSAValue, window: _Window, dst: SSAValue, kk: Index, channels: int) -> None:
        """img2col of the l1 box (origin ih, iw) into the l0b tile: K rows from kk, the
        ohs x owt output pixels at (oh0, ow0)."""
        kb, geo, w = self.kb, self.plan.geometry, window
        if self.plan.samples_box:  # the sampled pixels are a stride-1 image of the output's size
            image, strides, pads = (geo.oh, geo.ow), (1, 1), (0, 0, 0, 0)
        else:
            image, strides, pads = (geo.h, geo.w), (geo.sh, geo.sw), (geo.pt, geo.pl, geo.pb, geo.pr)
        kb.emit(a.Load3dOp.get(
            box, [kb.index(w.ih), kb.index(w.iw)], dst, [kb.index(kk), kb.index(w.oh0), kb.index(w.ow0)],
            image=image, kernel=(geo.kh, geo.kw), strides=strides, dilations=(geo.dh, geo.dw), pads=pads,
            out=(w.ohs, w.owt), channels=channels, pad_value=self.plan.pad_value))


@dataclass(frozen=True, eq=False)
class _Window:
    """The output pixels of a tile, ohs x owt from (oh0, ow0), and the origin (ih, iw) of
    the input box they read."""

    ih: Index
    iw: Index
    oh0: Index
    ow0: Index
    ohs: int
    owt: int
