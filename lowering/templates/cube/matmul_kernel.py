"""Matmul / gemm / batched matmul kernels: [mt, nt] tiles of the [B, M, N] result, the
operands' tiles staged in l1 as they lie (a transposed operand is transposed on its way to
l0), FRACTAL_NZ operands read as whole fractals."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from xdsl.dialects.builtin import DenseArrayBase, StringAttr, UnitAttr, i64
from xdsl.ir import SSAValue

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.dialects.ascend import FRACTAL
from geir.lowering.templates.common import KernelRequest, ceil_div, round_up
from geir.lowering.templates.cube.kernel import CubeKernel
from geir.lowering.templates.cube.epilogue_buffers import EpilogueBuffers
from geir.lowering.templates.cube.loops import (Index, Real, TileDim, chunks, distribute, first_step_slot, grid_classes,
                                                tile_grid)
from geir.lowering.templates.cube.plan import MatmulPlan, Operand
from geir.lowering.templates.cube.norm_epilogue import NormEpilogue
from geir.lowering.templates.cube.prologue import Prologue
from geir.lowering.templates.cube.tiling import Pricer, Tiling, matmul_range_axis, packing_pays, rows_pack


PANEL = 2
"""Flag id (MTE1 -> MTE2) of the lhs panel a work item of several tiles holds in l1; the
l1 slots take ids 0 and 1."""


def _rows2(op: Operand) -> list[int]:
    """A matmul operand as a 2-D matrix in memory: batches stacked on the rows."""
    b, r, c = op.shape
    return [b * c, r] if op.trans else [b * r, c]


class MatmulKernel(CubeKernel):
    """One product, or several of one lhs (`parts`: each plan with its output's index, the
    kernel's plan their concatenation along N, which the tiling priced): every part's tiles
    are distributed over the blocks together, each written to its own output. `rows`,
    `cols`: the kernel computes only each batch's result rows [first, first + count) and
    columns [first, first + count) (one launch of a matmul split to fit L2,
    tiling.l2_pieces); its buffers and addresses are the whole's."""

    plan: MatmulPlan

    def __init__(self, req: KernelRequest, plan: MatmulPlan, tiling: Tiling, slots: int,
                 buffers: EpilogueBuffers | None, parts: list[tuple[MatmulPlan, int]] | None = None,
                 prologue: Prologue | None = None, norm: NormEpilogue | None = None,
                 rows: tuple[int, int] | None = None, cols: tuple[int, int] | None = None, pricer: Pricer | None = None):
        super().__init__(req, plan, tiling, slots, buffers, prologue, norm, pricer)
        self.parts = parts
        self.rows = rows or (0, plan.rows)
        self.cols = cols or (0, plan.cols)
        self._per, self._offset = 1, 0  # a row group's rows per position, the kernel's first row in it (`_grouped`)

    def build(self) -> a.KernelOp:
        kernel = super().build()
        if (self.rows, self.cols) != ((0, self.plan.rows), (0, self.plan.cols)):
            kernel.attributes[attr_names.L2_BLOCK] = DenseArrayBase.from_list(i64, [*self.rows, *self.cols])
        return kernel

    def _out_views(self) -> list[SSAValue]:
        if not self.parts:
            return super()._out_views()
        views = list(self.kb.outputs)
        for part, i in self.parts:
            views[i] = self._out_view(views[i], part)
        return views

    def _operand_buffers(self) -> None:
        kb, plan, t, elt = self.kb, self.plan, self.t, self.elt
        ins = kb.inputs
        lhs, rhs = plan.lhs, plan.rhs
        a_rows = _rows2(lhs)
        if self.prologue:  # every block's copy of the normalised rows
            a_rows[0] *= kb.kernel.block_count
        self.a2 = ins[lhs.arg] if plan.lhs_nz else kb.view(ins[lhs.arg], a_rows)
        self.b2 = ins[rhs.arg] if plan.rhs_nz else kb.view(ins[rhs.arg], _rows2(rhs))
        if t.group > 1:  # one lhs panel [mt, K] for the item's tiles (tiling._matmul_groups)
            self.l1a = [kb.alloc([t.mt, round_up(plan.k, plan.k_fractal)], elt, "l1", "l1a")]
        else:
            self.l1a = [kb.alloc([t.kl1, t.mt] if lhs.trans else [t.mt, t.kl1], elt, "l1", f"l1a{s}")
                        for s in range(self.slots)]
        self.l1b = [kb.alloc([t.nt, t.kl1] if rhs.trans else [t.kl1, t.nt], elt, "l1", f"l1b{s}")
                    for s in range(self.slots)]
        if plan.partner is not None:  # a gated matmul: the partner's right operand, its product
            p = plan.partner
            self.p2 = ins[p.arg] if plan.rhs_nz else kb.view(ins[p.arg], _rows2(p))
            self.partner_out = kb.scratch([plan.batch * plan.rows, plan.cols], plan.out_elt, "partner")

    def _tiles(self) -> None:
        plan, t = self.plan, self.t
        (r0, nr), (c0, nc) = self.rows, self.cols
        if t.group > 1:
            dims = [TileDim(plan.batch, 1), TileDim(nr, t.mt, r0), TileDim(nc, t.nt * t.group, c0)]
            tile_grid(self.kb, dims, t.blocks, self._item)
            return
        if not self.parts:
            dims = [TileDim(plan.batch, 1), TileDim(nr, t.mt, r0), TileDim(nc, t.nt, c0)]
            self._keyed([(plan, dims, self._real_rows(), self._tile, {})])
            return
        products = []
        for part, i in self.parts:
            rhs = self.kb.inputs[part.rhs.arg]
            b2 = rhs if part.rhs_nz else self.kb.view(rhs, _rows2(part.rhs))
            out = self.out2[i]
            position = 0
            if part.position >= 0:  # a KV cache's heads: the run-time row, read once on the scalar pipe
                position = self.kb.load_index(self.kb.view(self.kb.inputs[part.position], [1]))
            dims = [TileDim(part.batch, 1), TileDim(nr, t.mt, r0), TileDim(part.cols, t.nt)]
            real = self._split_rows(part) if self.kb.req.extent is not None and part.position < 0 else None
            products.append((part, dims, real, self._tile, dict(part=part, b2=b2, out=out, position=position)))
        self._keyed(products)

    def _keyed(self, products: list[tuple[MatmulPlan, list[TileDim], Real | None, Callable, dict]]) -> None:
        """The tiles of the products, (plan, grid, real rows, tile body, its arguments) each,
        distributed together. Where a shape range's rows are groups that tiles can pack
        (`_packings`: r = mt / 2, mt / 4, ... down to r_min), each group's real rows n (run
        time), rounded up to r_min, are its whole tiles of mt rows and then, for each r whose
        bit n holds, a segment of r rows: one class of tiles packing k = mt / r groups'
        segments each, which runs only when the bit is set. n = 80 of tiles of 128: no whole
        tile, a 64-row segment (two groups a tile) and a 16-row one (eight a tile). Branch
        free: every class's tile count is a run-time value, and all of them share the blocks."""
        kb, t = self.kb, self.t
        packings = self._packings([(plan, dims, real) for plan, dims, real, _, _ in products])
        classes = []
        for plan, dims, real, body, args in products:
            tile = functools.partial(body, **args) if args else body
            if not packings:
                classes += grid_classes(kb, dims, tile, real)
                continue
            split, least = real[2], packings[0][1]
            rows = kb.mul(kb.divui(kb.add(real[1], least - 1), least), least)
            whole = kb.sub(rows, kb.remui(rows, t.mt))  # the rows of the groups' whole tiles
            classes += grid_classes(kb, dims, tile, (real[0], whole, split))
            for k, r in packings:
                tiles = plan.batch * split // k
                below = kb.remui(rows, 2 * r)
                runs = kb.mul(kb.divui(below, r), tiles)  # all the segment's tiles when n holds bit r, else none
                classes += grid_classes(kb, [TileDim(tiles, 1), dims[2]], functools.partial(
                    self._packed_tile, k=k, r=r, group=dims[1].extent // split, split=split,
                    skip=kb.sub(rows, below), **args), (0, runs))
        if packings:
            kb.kernel.attributes[attr_names.PACKED_ROWS] = DenseArrayBase.from_list(i64, [r for _, r in packings])
        distribute(kb, t.blocks, classes)

    def _packings(self, products: list[tuple[MatmulPlan, list[TileDim], Real | None]]) -> list[tuple[int, int]]:
        """The packings of a shape range's grouped rows, as (k, r), least r first: tiles of
        mt rows holding r = mt / k rows of each of k consecutive groups, for r = mt / 2,
        mt / 4, ... (whole fractals), each half the one before (`_keyed` adds them up bit by
        bit). A tile inside one group computes all its mt rows however few of them are real: at
        64 of 512 positions of each of 8 batch rows, tiles of 128 computed twice the rows of
        the static program and read the rhs twice as often; past a group's whole tiles the
        same holds for its tail (at 257 of 1024 positions a tile of 256 per group held one real
        row: 16 tiles where the static program's 8 x 257 rows take 9). The groups of a tile lie
        in one batch entry, or are batch entries whose rhs is the same. A plain or a gated
        product packs: its lhs rows are loaded and its result rows (a gated product's staged
        partner rows too) written per group, and nothing else in the kernel addresses rows.
        The halving stops at the first r that the tiling's prices say does not pay
        (`tiling.packing_pays`: fewer tiles and rhs reads, against fewer blocks busy and k lhs
        copies a chunk), or that no size of the range would use (the sizes in key quanta leave
        remainders of whole quanta); the least r kept is the unit a group's rows are rounded
        up to."""
        t, ext = self.t, self.kb.req.extent
        if self.prologue or self.norm or t.group > 1 or any(real is None or len(real) != 3 or real[1] is None
                                                              for _, _, real in products):
            return []
        splits = {real[2] for _, _, real in products}
        groups = {dims[1].extent // real[2] for _, dims, real in products}
        if len(splits) > 1 or len(groups) > 1:
            return []
        for plan, _, _ in products:
            if not rows_pack(plan) or (plan.heads and self.rows != (0, plan.rows)):
                return []
        (split,), (group,) = splits, groups
        unit = max(1, ext.quantum)  # a group computes its positions in key quanta
        # a group's rows per position, and where the kernel's rows start in it: a piece of a
        # matmul over L2 may hold only a part of each group (`_grouped`)
        per, o = self._per, self._offset
        tails = {min(max(min(ext.count, n) * per - o, 0), group) % t.mt
                 for n in range(ceil_div(max(1, ext.lo), unit) * unit, ext.count + unit, unit)} - {0}
        if not tails:
            return []
        step = math.gcd(*tails)
        step &= -step  # every tail is a multiple of this power of two: no bit below it is ever set
        out, k = [], 2
        while (t.mt % k == 0 and t.mt // k % FRACTAL == 0 and t.mt // k >= step and self.pricer is not None
               and all(split % k == 0 or (split == 1 and plan.batch % k == 0 and not any(plan.rhs_batch))
                       for plan, _, _ in products)
               and packing_pays(self.req, self.plan, self.pricer, t, self.plan.batch * split, k)):
            out.append((k, t.mt // k))
            k *= 2
        return sorted(out, key=lambda p: p[1])

    def _packed_tile(self, off: list[Index], size: list[int], k: int, r: int, group: int, split: int,
                     skip: Index, part: MatmulPlan | None = None, b2: SSAValue | None = None,
                     out: SSAValue | None = None, position: Index = 0) -> None:
        """The packed tile of groups q * k .. q * k + k - 1 (`off` = [q, first column]), r
        rows of each from its row `skip` (past its whole tiles and larger segments): the lhs
        loaded and the result written per group, in loops over the k groups (the code is one
        group's, whatever k)."""
        kb, plan = self.kb, part or self.plan
        q, n0 = off
        nv = size[1]
        first = kb.add(self.rows[0], skip)

        def segment(j: Index) -> tuple[Index, Index]:
            """(batch entry, first row in it) of the tile's j-th group."""
            g = kb.add(kb.mul(q, k), j)
            if split == 1:
                return g, first
            return kb.divui(g, split), kb.add(kb.mul(kb.remui(g, split), group), first)

        def lhs_rows(j: Index) -> tuple[Index, Index]:
            b, m0 = segment(j)
            return kb.add(kb.mul(self._batch_index(b, plan.lhs_batch), plan.rows), self.lhs_base), m0

        # the groups share the rhs (`_packings`): the first one's batch of it
        brow = kb.mul(self._batch_index(segment(0)[0], plan.rhs_batch), plan.cols if plan.rhs.trans else plan.k) \
            if any(plan.rhs_batch) else 0
        np_ = round_up(nv, FRACTAL)
        acc = kb.tile(self.l0c, [0, 0], [k * r, np_])
        runs = (k, r, lhs_rows)
        pad = {"pad": UnitAttr()} if np_ != nv else {}
        if plan.partner is not None:  # the partner product first, staged per group (as `_tile` does)
            self._product(acc, self.p2, plan.partner, 0, brow, 0, n0, k * r, nv, segments=runs)
            kb.sync("M", "FIX", 0)
            with kb.loop(0, k, 1) as j:
                b, m0 = segment(j)
                kb.copy(kb.tile(acc, [kb.mul(j, r), 0], [r, np_]),
                        kb.tile(self.partner_out, [kb.add(kb.mul(b, plan.rows), m0), n0], [r, nv]), **pad)
            kb.set_flag("FIX", "M", 0)
        self._product(acc, b2 or self.b2, plan.rhs, 0, brow, 0, n0, k * r, nv, segments=runs)
        props = {"relu": UnitAttr()} if plan.epilogue.fix_relu else {}
        target = self.epilogue.staging if self.epilogue else out or self.out2[0]
        kb.sync("M", "FIX", 0)
        with kb.loop(0, k, 1) as j:
            b, m0 = segment(j)
            piece = kb.tile(acc, [kb.mul(j, r), 0], [r, np_])
            if plan.heads:  # straight to the output, head by head (`_finish_tile`)
                self._fix_heads(piece, b, kb.add(m0, position), n0, r, nv, props, plan, out or self.out2[0])
            else:
                row = kb.add(kb.mul(b, plan.rows), m0)
                kb.copy(piece, kb.tile(target, [row, n0], [r, nv]), **props, **pad)
        kb.set_flag("FIX", "M", self.fix_id)
        if self.epilogue:
            with kb.loop(0, k, 1) as j:
                b, m0 = segment(j)
                row = kb.add(kb.mul(b, plan.rows), m0)
                self._epilogue_passes(row, n0, r, nv, kb.tile(target, [row, n0], [r, nv]))

    def _item(self, off: list[Index], size: list[int]) -> None:
        """A work item of `group` tiles along N sharing the lhs panel in l1: the first tile
        loads the panel with its rhs chunks, once the previous item's last MTE1 read of it
        is done (flag id PANEL); the others read it."""
        kb, t = self.kb, self.t
        b, m0, n0 = off
        rows = [1, size[1], t.nt]
        kb.wait_flag("MTE1", "MTE2", PANEL)
        if len(self.l0cs) > 1:  # every tile emitted, each on the l0c slot of its parity
            for u in range(t.group):
                self.fix_id = u % 2
                self.l0c = self.l0cs[self.fix_id]
                self._tile([b, m0, kb.add(n0, u * t.nt)], rows, panel=u == 0)
        else:
            self._tile([b, m0, n0], rows, panel=True)
            if t.group == 2:
                self._tile([b, m0, kb.add(n0, t.nt)], rows, panel=False)
            else:
                with kb.loop(1, t.group, 1) as u:
                    self._tile([b, m0, kb.add(n0, kb.mul(u, t.nt))], rows, panel=False)
        kb.set_flag("MTE1", "MTE2", PANEL)
        if self.window is not None:  # the item's rows are whole (tiling.py `whole_rows`)
            self._row_window(kb.add(kb.mul(b, self.plan.rows), m0), size[1])

    def _real_rows(self) -> Real | None:
        """With a shape range in the result's rows, the tiles of its real rows only: of the
        batch when the result's leading axes are it, else of the rows they fold into - the
        first of each group of rows when the range's dim is under other axes (a sequence under
        the batch: per batch, or per group of the folded rows)."""
        plan, kb = self.plan, self.kb
        ext = kb.req.extent
        if ext is not None and plan.heads:
            return self._split_rows(plan)
        axis = matmul_range_axis(kb.req, plan)
        if axis is None or not ext.groups:
            return None
        if ext.groups == 1:
            return axis, kb.real_rows(plan.batch if axis == 0 else plan.rows)
        return self._grouped(plan, plan.batch * plan.rows // ext.groups, ext.count)

    def _split_rows(self, plan: MatmulPlan) -> Real | None:
        """The real rows of a product whose result is split into heads ([B, H, S, D] from the
        rows (b, s) of [B, S, N]) or not ([B, S, N]), the range's dim being S in each output
        (Extent.axes): each batch row's first positions. Its outputs' groups may differ (q's
        heads and k's and v's under grouped-query attention), its rows' do not."""
        ext = self.kb.req.extent
        if (not plan.heads and plan.frame != plan.out_shape) or ext.axes != {-2}:
            return None  # the dim is not each output's last row axis
        return self._grouped(plan, ext.count * ext.inner, ext.count)

    def _grouped(self, plan: MatmulPlan, group: int, count: int) -> Real | None:
        """Real = (the rows dim, its real rows per group, groups in the kernel's rows) when
        the rows are groups of `group` rows (`count` positions), each inside a batch entry,
        cut by neither the kernel's piece of the rows nor a tile. A piece of a matmul over L2
        inside one group (tiling.row_ranges: equal parts of each group, when the groups are
        fewer than the pieces; or a batch entry's rows, each one group) holds the group's rows
        from its offset o: its real rows are clamp(real - o, 0, rows), one group of them per
        batch entry."""
        (r0, nr), kb = self.rows, self.kb
        if group % count or plan.rows % group:
            return None
        real = kb.mul(kb.real_positions(), group // count)
        self._per, self._offset = group // count, 0
        if not (nr % group or r0 % group or group % self.t.mt):
            return 1, real, nr // group
        o = r0 % group
        if o + nr <= group and (plan.batch == 1 or plan.rows == group) and not (nr % self.t.mt or r0 % nr):
            self._offset = o
            if o:  # no real row until the positions computed pass o's: the host skips the launch
                quantum = max(1, kb.req.extent.quantum)
                at = len(kb.req.inputs) + len(kb.req.outputs)  # the extent argument (KernelBuilder.real_positions)
                kb.kernel.attributes[attr_names.LIVE_ABOVE] = DenseArrayBase.from_list(
                    i64, [at, o // (group // count) // quantum * quantum])
            return 1, kb.min(kb.sub(kb.max(real, o), o), nr), 1
        return None

    def _tile(self, off: list[Index], size: list[int], part: MatmulPlan | None = None,
              b2: SSAValue | None = None, out: SSAValue | None = None, position: Index = 0,
              panel: bool | None = None) -> None:
        kb, plan = self.kb, part or self.plan
        b, m0, n0 = off
        _, mv, nv = size
        mp, np_ = round_up(mv, FRACTAL), round_up(nv, FRACTAL)
        lhs, rhs = plan.lhs, plan.rhs
        ba = self._batch_index(b, plan.lhs_batch)
        bb = self._batch_index(b, plan.rhs_batch)
        arow = kb.add(kb.mul(ba, plan.k if lhs.trans else plan.rows), self.lhs_base)
        brow = kb.mul(bb, plan.cols if rhs.trans else plan.k)
        acc = kb.tile(self.l0c, [0, 0], [mp, np_])
        row = None
        if plan.partner is not None:  # the partner product first, staged for the epilogue
            row = kb.add(kb.mul(b, plan.rows), m0)
            self._product(acc, self.p2, plan.partner, arow, brow, m0, n0, mv, nv)
            kb.sync("M", "FIX", 0)
            props = {"pad": UnitAttr()} if (mp, np_) != (mv, nv) else {}
            kb.copy(acc, kb.tile(self.partner_out, [row, n0], [mv, nv]), **props)
            kb.set_flag("FIX", "M", 0)
        self._product(acc, b2 or self.b2, rhs, arow, brow, m0, n0, mv, nv, panel)
        if row is None:
            row = kb.add(kb.mul(b, plan.rows), m0)
        self._finish_tile(acc, row, n0, mv, nv, (b, m0), part, out, position)

    def _product(self, acc: SSAValue, b2: SSAValue, rhs: Operand, arow: Index, brow: Index, m0: Index,
                 n0: Index, mv: int, nv: int, panel: bool | None = None,
                 segments: tuple[int, int, Callable[[Index], tuple[Index, Index]]] | None = None) -> None:
        """The [mv, nv] tile at (m0, n0) of lhs x rhs (`b2` its stored matrix) into l0c: K in
        l1 chunks, each in l0 steps. `panel`: the lhs is the item's l1 panel, loaded by this
        tile's chunks (True) or already there (False); None: each chunk loads its own.
        `segments`: the tile's lhs rows are `count` runs of `rows` rows, run j's (base, first
        row) given by `run_of(j)`."""
        kb, plan, t = self.kb, self.plan, self.t
        mp, np_ = round_up(mv, FRACTAL), round_up(nv, FRACTAL)
        lhs = plan.lhs

        def chunk(k0: Index, kc: int, s: int, first: bool) -> None:
            kcp = round_up(kc, plan.k_fractal)
            kb.wait_flag("MTE1", "MTE2", s)
            if segments:  # a packed tile's runs of rows (`_packed_tile`), one after another
                count, rows, run_of = segments
                with kb.loop(0, count, 1) as j:
                    base, m_run = run_of(j)
                    self._to_l1(self.a2, False, base, m_run, k0, rows, kc,
                                kb.tile(self.l1a[s], [kb.mul(j, rows), 0], [rows, kcp]))
            elif panel is None:  # this chunk's own lhs, into the slot
                if lhs.trans:
                    self._to_l1(self.a2, plan.lhs_nz, arow, k0, m0, kc, mv, kb.tile(self.l1a[s], [0, 0], [kcp, mp]))
                else:
                    self._to_l1(self.a2, plan.lhs_nz, arow, m0, k0, mv, kc, kb.tile(self.l1a[s], [0, 0], [mp, kcp]))
            elif panel:  # the item's first tile: this chunk's columns of the panel
                self._to_l1(self.a2, plan.lhs_nz, arow, m0, k0, mv, kc, kb.tile(self.l1a[0], [0, k0], [mp, kcp]))
            if rhs.trans:
                self._to_l1(b2, plan.rhs_nz, brow, n0, k0, nv, kc, kb.tile(self.l1b[s], [0, 0], [np_, kcp]))
            else:
                self._to_l1(b2, plan.rhs_nz, brow, k0, n0, kc, nv, kb.tile(self.l1b[s], [0, 0], [kcp, np_]))
            kb.sync("MTE2", "MTE1", s)

            def step(kk: Index, kt: int, u: int, first_step: bool) -> None:
                kb.wait_flag("M", "MTE1", u)
                a0 = kb.tile(self.l0a[u], [0, 0], [mp, kt])
                b0 = kb.tile(self.l0b[u], [0, 0], [kt, np_])
                if panel is not None:
                    kb.copy(kb.tile(self.l1a[0], [0, kb.add(k0, kk)], [mp, kt]), a0)
                elif lhs.trans:
                    kb.copy(kb.tile(self.l1a[s], [kk, 0], [kt, mp]), a0, transpose=UnitAttr())
                else:
                    kb.copy(kb.tile(self.l1a[s], [0, kk], [mp, kt]), a0)
                if rhs.trans:
                    kb.copy(kb.tile(self.l1b[s], [0, kk], [np_, kt]), b0, transpose=UnitAttr())
                else:
                    kb.copy(kb.tile(self.l1b[s], [kk, 0], [kt, np_]), b0)
                self._mmad(a0, b0, acc, u, first and first_step)

            chunks(kb, kcp, t.kt, self.slots, step, first_step_slot(s, steps, self.slots))
            kb.set_flag("MTE1", "MTE2", s)

        steps = ceil_div(round_up(min(t.kl1, plan.k), plan.k_fractal), t.kt)  # of a full chunk
        chunks(kb, plan.k, t.kl1, self.slots, chunk)

    def _to_l1(self, view: SSAValue, nz: bool, base: Index, r0: Index, c0: Index, rv: int, cv: int,
               dst: SSAValue) -> None:
        """The [rv, cv] tile at (r0, c0) of a stored matrix into l1 (zero-padded to fractals);
        a FRACTAL_NZ one arrives as its whole fractals (`nz2nd`)."""
        kb = self.kb
        rp, cp = round_up(rv, FRACTAL), round_up(cv, FRACTAL)
        if nz:
            src = kb.tile(view, [kb.divui(c0, FRACTAL), kb.divui(r0, FRACTAL), 0, 0],
                          [cp // FRACTAL, rp // FRACTAL, FRACTAL, FRACTAL])
            kb.copy(src, dst, layout=StringAttr("nz2nd"))
        else:
            self._load(kb.tile(view, [kb.add(base, r0), c0], [rv, cv]), dst)

    def _batch_index(self, b: Index, strides: tuple[int, ...]) -> Index:
        """The operand's batch read by batch b of the result."""
        plan, kb = self.plan, self.kb
        if not any(strides):
            return 0
        natural = tuple(math.prod(plan.batch_dims[i + 1:]) for i in range(len(plan.batch_dims)))
        if strides == natural:
            return b
        idx = kb.delinearize(b, plan.batch_dims) if len(plan.batch_dims) > 1 else [b]
        out: Index = 0
        for i, st in zip(idx, strides):
            if st:
                out = kb.add(out, kb.mul(i, st))
        return out
