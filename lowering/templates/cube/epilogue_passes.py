"""Emitting the epilogue: passes of [rows, cols] over a result tile in ub.

MTE2 brings the raw tile (staged in gm by the FIX copy; the 910B has no l0c -> ub path) and
the side operands into ub, the vector unit broadcasts the compact sides (`vbrcb`) and runs
the program, MTE3 stores the outputs. On an NC1HWC0 result with whole C0 blocks of
channels (`EpilogueBuffers.blocked`) the tiles are [rows / C0, cols, C0], as the result is
stored; otherwise rows [channels or M, pixels or N].

A bf16 kernel's program runs in f32 (common.compute_type: the vector unit has no bf16
arithmetic): what MTE2 brings lands in bf16 staging tiles that the vector unit converts
first (`vcast`), and each output is converted back into a staging tile that MTE3 stores.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import StringAttr, UnitAttr
from xdsl.ir import Attribute, SSAValue

from geir.dialects import ascend as a
from geir.dialects import formats as L
from geir.lowering.templates.common import KernelBuilder, block_elems, ceil_div, row_elems
from geir.ir.types import is_float
from geir.lowering.templates.cube.epilogue_buffers import EpilogueBuffers, epilogue_compute_type, stored_type
from geir.lowering.templates.cube.loops import Index, chunks
from geir.lowering.templates.cube.plan import PARTNER_ARG, CubePlan


def gm_tile(kb: KernelBuilder, view: SSAValue, row: Index, col: Index, rows: int, cols: int,
            c0: int | None = None) -> SSAValue:
    """The [rows, cols] tile at (row, col) of a [B * R, C] gm view, or, given its `c0`, of a
    [B * C1, C, C0] NC1HWC0 one: its [ceil(rows / C0), cols, C0] blocks (row is a multiple
    of C0)."""
    if c0 is None:
        return kb.tile(view, [row, col], [rows, cols])
    return kb.tile(view, [kb.divui(row, c0), col, 0], [ceil_div(rows, c0), cols, c0])


class EpiloguePasses:
    """The epilogue of one kernel: its ub tiles and gm views (allocated when made) and the
    code of each pass.

    `out2` are the outputs as [B * R, C] (NC1HWC0: [B * C1, C, C0]), `R` the rows per batch
    (channels padded to C0 in an NC1HWC0 result), `er` the rows of a pass, `cols_max` the
    columns of the widest tile."""

    def __init__(self, kb: KernelBuilder, plan: CubePlan, buffers: EpilogueBuffers, out2: list[SSAValue],
                 R: int, er: int, cols_max: int, partner: SSAValue | None = None):
        self.kb, self.plan, self.buffers, self.out2 = kb, plan, buffers, out2
        self.R, self.er, self.cols_max = R, er, cols_max
        self.celt = epilogue_compute_type(plan)
        self.converts = any(t != self.celt for t in buffers.stored_types())
        self.c0 = L.c0_of(plan.elt)
        self.sides = plan.epilogue.sides
        # a gated matmul's partner product is read from the kernel's own scratch (`partner`)
        self.side2 = {v: kb.view(partner if self.sides[v].arg == PARTNER_ARG else kb.inputs[self.sides[v].arg],
                                 self._side_shape(v)) for v in buffers.sides}
        self.compact: dict[object, SSAValue] = {}
        self.flag = 0  # the id of the passes' flags (after_fix)
        self._alloc_tiles()
        # FIX stages the raw tile in an output of its type, or in a gm buffer of the kernel's
        # own (an int8 product's i32 tile on its way to a float or int8 output); a vector
        # kernel's raw tile is in ub already
        out = out2[buffers.staging]
        staged = stored_type(plan, plan.epilogue.result)  # i32, or the f16 the FIX pipe dequantized to
        self.own_staging = buffers.staged and out.type.element_type != staged
        self.staging = kb.scratch([plan.batch * R, plan.cols], staged, "acc") if self.own_staging else out

    def _side_shape(self, v: object) -> list[int]:
        """A side's gm view as [B * R or 1, C or 1] (NC1HWC0 ones: [B * C1, C or 1, C0])."""
        plan, side = self.plan, self.sides[v]
        sb, sr, sc = side.spans
        if side.blocked and (sc or self.buffers.blocked):  # [N, C1, H, W, C0] as [B * C1, C or 1, C0]
            return [(plan.batch if sb else 1) * self.R // self.c0, plan.cols if sc else 1, self.c0]
        if side.blocked:  # [N, C1, 1, 1, C0]: padded channels in order
            return [(plan.batch if sb else 1) * self.R, 1]
        return [(plan.batch if sb else 1) * (plan.rows if sr else 1), plan.cols if sc else 1]

    def _alloc_tiles(self) -> None:
        """The pool of [er, ecp] ub tiles (blocked: [er / C0, cols, C0]) and the compact
        tiles of the sides broadcast over rows or columns, in the compute type; converting,
        a staging tile in the stored type per value loaded (`stage_in`) and per output
        stored (`stage_out`)."""
        kb, buffers, celt, er, c0 = self.kb, self.buffers, self.celt, self.er, self.c0
        plan = self.plan

        def elt_of(key: object) -> Attribute:
            return stored_type(plan, key)
        self.stage_in: dict[object, SSAValue] = {}
        self.stage_out: dict[int, SSAValue] = {}
        loaded = ([self.plan.epilogue.result] if buffers.needs_raw and buffers.staged else []) + list(buffers.sides)
        if buffers.blocked:
            full = [er // c0, self.cols_max, c0]
            self.pool = [kb.alloc(full, celt, "ub", f"v{i}") for i in range(buffers.pool)]
            for v in buffers.sides:
                if not self.sides[v].spans[2]:
                    self.compact[v] = kb.alloc([er // c0, 1, c0], celt, "ub", f"s{len(self.compact)}")
            if self.converts:
                for key in loaded:
                    shape = list(self.compact[key].type.get_shape()) if key in self.compact else full
                    self.stage_in[key] = kb.alloc(shape, elt_of(key), "ub", f"in{len(self.stage_in)}")
                for i, _ in buffers.stores:
                    self.stage_out[i] = kb.alloc(full, plan.output_types[i], "ub", f"out{i}")
            return
        ecp = row_elems(self.cols_max, celt)
        self.pool = [kb.alloc([er, ecp], celt, "ub", f"v{i}") for i in range(buffers.pool)]
        for v in buffers.sides:
            spans = self.sides[v].spans
            if spans[1] and spans[2]:
                continue
            shape = [er if spans[1] else 1, ecp if spans[2] else block_elems(celt)]
            self.compact[v] = kb.alloc(shape, celt, "ub", f"s{len(self.compact)}")
        if self.converts:  # a staging tile per value whose stored type is not the compute type
            for key in loaded:
                elt = elt_of(key)
                if elt == celt:
                    continue
                spans = self.sides[key].spans if key in self.sides else (True, True, True)
                shape = [er if spans[1] else 1, row_elems(self.cols_max, elt) if spans[2] else block_elems(elt)]
                self.stage_in[key] = kb.alloc(shape, elt, "ub", f"in{len(self.stage_in)}")
            for i, _ in buffers.stores:
                elt = plan.output_types[i]
                if elt != celt:
                    self.stage_out[i] = kb.alloc([er, row_elems(self.cols_max, elt)], elt, "ub", f"out{i}")


    def after_fix(self, row: Index, col: Index, mv: int, nv: int, staged: SSAValue | None, flag: int = 0) -> None:
        """The passes over a tile of mv x nv at (row, col) that FIX wrote to `staged` (None: a
        part of that tile), their flags of id `flag` (one per vector core: `ascend.sub_block`)."""
        self.flag = flag
        kb = self.kb
        er = min(self.er, mv)
        b = kb.divui(row, self.R) if any(self.sides[v].spans[0] for v in self.buffers.sides) else 0
        r0 = kb.remui(row, self.R) if self.plan.batch > 1 else row

        def chunk(rr: Index, erv: int, _s: int, _first: bool) -> None:
            self.run(kb.add(row, rr), b, kb.add(r0, rr), col, erv, nv, staged if erv == mv else None)

        chunks(kb, mv, er, 1, chunk)

    def run(self, grow: Index, b: Index, r: Index, col: Index, rows: int, cols: int,
            staged: SSAValue | None, load: Callable[[], None] | None = None,
            compute: Callable[[SSAValue], None] | None = None) -> None:
        """One [rows, cols] pass at row `grow` of the outputs (batch b, row r of the batch):
        MTE2 brings the staged tile (`staged`, if the FIX copy's view covers it) and the side
        operands into ub, V runs the epilogue, MTE3 stores the outputs. A vector kernel passes
        `load` (its own MTE2 copies) and `compute` (which writes the raw result into the tile
        it is given) instead of a staged tile."""
        if self.buffers.blocked:
            self._blocked_pass(grow, b, r, col, rows, cols, staged)
            return
        kb, plan, buffers = self.kb, self.plan, self.buffers
        blocked_out = plan.out_blocked
        out_tiles: dict[int, SSAValue] = {}

        def out_tile(i: int) -> SSAValue:
            if i not in out_tiles:
                out_tiles[i] = staged if staged is not None and i == buffers.staging and not self.own_staging else \
                    gm_tile(kb, self.out2[i], grow, col, rows, cols, self.c0 if blocked_out else None)
            return out_tiles[i]

        def staged_tile() -> SSAValue:
            if self.own_staging:
                return staged if staged is not None else gm_tile(kb, self.staging, grow, col, rows, cols)
            return out_tile(buffers.staging)

        ecp = row_elems(cols, self.celt)
        tiles = [kb.tile(buf, [0, 0], [rows, ecp]) for buf in self.pool]
        self.casts: list[tuple[SSAValue, SSAValue]] = []  # staged loads to convert first

        def tile_of(key: object) -> SSAValue:
            return tiles[buffers.where[key]]

        kb.wait_flag("MTE3", "MTE2", self.flag)
        if load is not None:
            load()
        elif buffers.needs_raw:
            raw = plan.epilogue.result
            self._fill(staged_tile(), self._landing(raw, tile_of(raw), [rows, ecp]), rows, cols, blocked_out)
        compact = self._load_sides(b, r, col, rows, cols, tile_of)
        kb.sync("MTE2", "V", self.flag)
        if compute is not None:
            compute(self.pool[buffers.where[plan.epilogue.result]])
        self._vector_program(tile_of, compact)
        stored = {i: self._leaving(i, tile_of(key)) for i, key in buffers.stores}
        kb.sync("V", "MTE3", self.flag)
        for i, key in buffers.stores:
            props = {"layout": StringAttr("nd2nc1hwc0")} if blocked_out else {}
            if cols != ecp:
                props["pad"] = UnitAttr()
            kb.copy(stored[i], out_tile(i), **props)
        kb.set_flag("MTE3", "MTE2", self.flag)

    def _landing(self, key: object, tile: SSAValue, shape: list[int]) -> SSAValue:
        """Where MTE2 writes the value of `key` whose compute tile is `tile`: the tile itself,
        or (converting) the `shape` part of its staging tile, whose conversion into `tile`
        the vector program starts with."""
        if key not in self.stage_in:
            return tile
        stage = self.kb.tile(self.stage_in[key], [0] * len(shape), shape)
        self.casts.append((stage, tile))
        return stage

    def _leaving(self, i: int, tile: SSAValue) -> SSAValue:
        """What MTE3 stores as output i: its compute tile, or (converting) the tile converted
        into its staging tile."""
        if i not in self.stage_out:
            return tile
        shape = list(tile.type.get_shape())
        stage = self.kb.tile(self.stage_out[i], [0] * len(shape), shape)
        # float -> integer: the values are integers already (a quantize's), rint keeps them
        props = {} if is_float(stage.type.element_type) or not is_float(tile.type.element_type) else \
            {"round": StringAttr("rint")}
        self.kb.vec(a.VcastOp, tile, stage, **props)
        return stage

    def _fill(self, src: SSAValue, dst: SSAValue, rows: int, cols: int, blocked: bool = False) -> None:
        """gm -> ub; an NC1HWC0 tile arrives as [channels, pixels] rows."""
        props = {"layout": StringAttr("nc1hwc02nd")} if blocked else {}
        shape = [rows, cols] if blocked else src.type.get_shape()
        if list(shape) != list(dst.type.get_shape()):
            props["pad"] = UnitAttr()
        self.kb.copy(src, dst, **props)

    def _load_sides(self, b: Index, r: Index, col: Index, rows: int, cols: int,
                    tile_of: Callable[[object], SSAValue]) -> dict[object, SSAValue]:
        """MTE2 of the sides of a row pass: whole tiles, or compact ones to broadcast (returned)."""
        kb, plan, celt = self.kb, self.plan, self.celt
        ecp = row_elems(cols, celt)
        compact = {}
        for v in self.buffers.sides:
            side = self.sides[v]
            sb, sr, sc = side.spans
            view = self.side2[v]
            srow = kb.add(kb.mul(b, (self.R if side.blocked else plan.rows) if sr else 1) if sb else 0, r if sr else 0)
            if side.blocked and sc:
                dst = self._landing(v, tile_of(v), [rows, ecp])
                self._fill(gm_tile(kb, view, srow, col, rows, cols, self.c0), dst, rows, cols, True)
                continue
            src = kb.tile(view, [srow, col if sc else 0], [rows if sr else 1, cols if sc else 1])
            if sr and sc:
                self._fill(src, self._landing(v, tile_of(v), [rows, ecp]), rows, cols)
            else:
                shape = [rows if sr else 1, ecp if sc else block_elems(celt)]
                dst = kb.tile(self.compact[v], [0, 0], shape)
                self._fill(src, self._landing(v, dst, shape), rows, cols)
                compact[v] = kb.tile(dst, [0, 0], [shape[0], ecp if sc else 1])
        return compact

    def _vector_program(self, tile_of: Callable[[object], SSAValue], compact: dict[object, SSAValue]) -> None:
        """V: broadcast the compact sides over their tiles, then the epilogue instructions."""
        kb = self.kb
        for stage, tile in self.casts:
            kb.vec(a.VcastOp, stage, tile)
        for v, src in compact.items():
            kb.vec(a.VbrcbOp, src, tile_of(v))
        for ins in self.plan.epilogue.instrs:
            operands = [tile_of(s) for s in ins.srcs]
            if ins.scalar is not None:
                operands.insert(1, kb.scalar(ins.scalar, self.celt))
            kb.vec(ins.op, *operands, tile_of(ins.dst))

    def _blocked_pass(self, grow: Index, b: Index, r: Index, col: Index, rows: int, cols: int,
                      staged: SSAValue | None) -> None:
        """`run` on NC1HWC0 tiles [rows / C0, cols, C0]: the staged result and NC1HWC0 sides
        are copied as they lie, per-channel sides arrive as [rows / C0, 1, C0] (re-laid out
        by the copy if stored as plain vectors) and are broadcast over the pixels; the
        outputs are stored as they lie."""
        kb, plan, buffers, c0 = self.kb, self.plan, self.buffers, self.c0
        rb = rows // c0
        full = [rb, cols, c0]
        tiles = [kb.tile(buf, [0, 0, 0], full) for buf in self.pool]
        self.casts = []

        def tile_of(key: object) -> SSAValue:
            return tiles[buffers.where[key]]

        def out_tile(i: int) -> SSAValue:
            if staged is not None and i == buffers.staging:
                return staged
            return gm_tile(kb, self.out2[i], grow, col, rows, cols, c0)

        kb.wait_flag("MTE3", "MTE2", self.flag)
        if buffers.needs_raw:
            raw = plan.epilogue.result
            kb.copy(out_tile(buffers.staging), self._landing(raw, tile_of(raw), full))
        compact = {}
        for v in buffers.sides:
            side = self.sides[v]
            sb, _, sc = side.spans
            view = self.side2[v]
            srow = kb.add(kb.mul(b, self.R if side.blocked else plan.rows) if sb else 0, r)
            if sc:
                kb.copy(gm_tile(kb, view, srow, col, rows, cols, self.c0), self._landing(v, tile_of(v), full))
                continue
            dst = compact[v] = kb.tile(self.compact[v], [0, 0, 0], [rb, 1, c0])
            land = self._landing(v, dst, [rb, 1, c0])
            if side.blocked:
                kb.copy(kb.tile(view, [kb.divui(srow, c0), 0, 0], [rb, 1, c0]), land)
            else:
                kb.copy(kb.tile(view, [srow, 0], [rows, 1]), land, layout=StringAttr("nd2nc1hwc0"))
        kb.sync("MTE2", "V", self.flag)
        self._vector_program(tile_of, compact)
        stored = {i: self._leaving(i, tile_of(key)) for i, key in buffers.stores}
        kb.sync("V", "MTE3", self.flag)
        for i, key in buffers.stores:
            kb.copy(stored[i], out_tile(i))
        kb.set_flag("MTE3", "MTE2", self.flag)
