"""Tile sizes of the cube kernels, priced with the device's CostModel.

Every candidate that fits l1 / l0a / l0b / l0c (with the ping-pong buffers when double
buffering), with the l1 chunk of K as large as fits or cut into 2-4 chunks, is priced per
tile as a pipeline of its chunks - the first load, then max(load, MTE1/M) per further chunk,
then the last compute; their sum when single-buffered - + FIX + epilogue, MTE2 at no more
than the block's share of HBM, times the waves of tiles over the cube cores, bounded below
by the HBM time of all bytes moved; the cheapest wins (ties: fewer instructions).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.ir import Attribute

from geir.dialects import formats as L
from geir.dialects.ascend import FRACTAL
from geir.ir.types import to_dtype
from geir.lowering.templates.common import KernelRequest, ceil_div, itemsize, round_up, row_elems, vector_cores_per_block
from geir.lowering.templates.cube.epilogue_buffers import epilogue_compute_type, stored_type
from geir.lowering.templates.cube.fix_quant import FixQuant, fix_params_bytes
from geir.lowering.templates.cube.plan import ConvPlan, CubePlan, MatmulPlan
from geir.target.cost_model import CostModel
from geir.target.device import dtype_name

if TYPE_CHECKING:
    from geir.lowering.templates.cube.epilogue_buffers import EpilogueBuffers


@dataclass(frozen=True)
class Tiling:
    """Tile sizes of a cube kernel. Matmul: [mt, nt] output tiles; convolution: mt output
    channels x (ohs rows x owt columns) output pixels, cc input channels per l1 chunk. Both:
    kt rows of K per l0 step, kl1 per l1 chunk; er rows per epilogue pass."""

    mt: int
    nt: int
    kt: int
    kl1: int
    blocks: int
    tiles: int
    estimate_us: float
    ohs: int = 0
    owt: int = 0
    cc: int = 0
    er: int = 0
    group: int = 1
    """Matmul: output tiles along N per work item, which share one [mt, K] panel of the lhs
    held in l1 (loaded once per item, not once per tile); 1: every tile loads its own."""


def tile_cols(plan: CubePlan, t: Tiling) -> int:
    """Columns of the widest output tile (what an epilogue pass holds per row)."""
    return min(plan.cols, t.nt) if isinstance(plan, MatmulPlan) else t.ohs * t.owt


ACC_BYTES = 4
"""Bytes of an l0c element whatever the operands': f16, bf16 and f32 accumulate in f32
(ascend.MMAD_TYPES), so l0c holds half as many f16 / bf16 elements as l0a / l0b hold."""

MT_CHOICES = (16, 32, 48, 64, 96, 128, 192, 256)
KT_CHOICES = (16, 32, 48, 64, 96, 128, 256)


def _choices(extent: int, choices: Sequence[int] = MT_CHOICES, unit: int = FRACTAL) -> list[int]:
    """Multiples of `unit` (16, or an int8 K's 32) to try for a dim of `extent` (the whole
    dim when it is small)."""
    whole = round_up(extent, unit)
    out = sorted({c for c in choices if c < whole and c % unit == 0} | ({whole} if whole <= max(choices) else set()))
    return out or [unit]


@dataclass
class EpilogueCost:
    """What the epilogue costs per tile: vector instructions over the tile (in the compute
    type, with a vcast per value loaded or stored in another type), the loads (the staged
    result and the sides) and the stores, each in its own element type's bytes."""

    instrs: list[type]
    loads: list[int]    # itemsize of each value loaded (the staged result first)
    stores: list[int]   # itemsize of each output stored
    converted: int      # values loaded or stored in another type than the compute type
    celt: Attribute

    @classmethod
    def of(cls, buffers: EpilogueBuffers) -> EpilogueCost:
        plan = buffers.plan
        celt = epilogue_compute_type(plan)
        loads = ([stored_type(plan, plan.epilogue.result)] if buffers.needs_raw else []) + \
            [stored_type(plan, v) for v in buffers.sides]
        stores = [plan.output_types[i] for i, _ in buffers.stores]
        return cls([ins.op for ins in plan.epilogue.instrs], [itemsize(t) for t in loads],
                   [itemsize(t) for t in stores], sum(t != celt for t in (*loads, *stores)), celt)

    def cycles(self, p: Pricer, rows: int, cols: int) -> int:
        csz, cdtype = itemsize(self.celt), dtype_name(to_dtype(self.celt))
        nbytes = rows * round_up(cols, max(1, 32 // csz)) * csz
        staged = self.loads[0] if self.loads else p.out_isz  # what FIX wrote, read back
        mte2 = p.dma(rows * cols * staged, "gm", "ub") + sum(p.dma(rows * cols * n, "gm", "ub") for n in self.loads)
        mte3 = sum(p.dma(rows * cols * n, "ub", "gm") for n in self.stores)
        vec = sum(p.cost.vector_cycles(op.COST_KIND, nbytes, cdtype) for op in self.instrs)
        vec += self.converted * p.cost.vector_cycles("cast", nbytes, cdtype)
        return mte2 + mte3 + int(vec * p.spec.cube_clock_hz / p.spec.vector_clock_hz)


class Pricer:
    """Prices one tile of a candidate with the device's cost model (cube-clock cycles)."""

    def __init__(self, cost: CostModel, elt: Attribute, slots: int, epilogue: EpilogueCost | None,
                 out_elt: Attribute | None = None, groups: bool = True, fix: FixQuant | None = None,
                 window: Callable[[int], int] | None = None):
        self.cost = cost
        # a norm epilogue (norm_epilogue.py): work items of whole rows, each followed by the
        # vector unit's `window(rows)` cycles, which overlap the block's next item
        self.window = window
        self.isz = itemsize(elt)
        self.out_isz = itemsize(fix.out if fix else out_elt or elt)  # what FIX writes: an int8 product's i32
        # ... reading l0c's i32 when it quantizes (its engine time: ascend.CopyOp.nbytes)
        self.fix_isz = itemsize(out_elt or elt) if fix else self.out_isz
        # the FIX stage's scales (and bias) stay in l1 for the whole kernel; a tile's rows of
        # them fit the fixpipe buffer (and the bias table)
        spec = cost.spec
        self.params_l1 = fix_params_bytes(fix) if fix else 0
        self.max_rows = (min(spec.buffer_bytes["fb"], spec.buffer_bytes["bt"] if fix.bias is not None else 1 << 30)
                         // ACC_BYTES if fix else 1 << 30)
        self.dtype = dtype_name(to_dtype(elt))
        self.slots = slots
        self.epilogue = epilogue
        self.spec = cost.spec
        self.groups = groups  # matmul tiles may share an l1-resident lhs panel (`_matmul_groups`)
        # (rows, cols) -> FIX + epilogue cycles: a conv prices ~1,000 candidates, each at one or two shares
        self._after_cycles: dict[tuple[int, int], tuple[int, int]] = {}

    def dma(self, nbytes: int, src: str, dst: str) -> int:
        return self.cost.dma_cycles(int(nbytes), src, dst)

    def tile(self, mte2: int, mte1: int, cube: int, mp: int, nv: int, mv: int, chunks: int = 1,
             blocks: int = 1, gm_bytes: int = 0, hit: float = 0.0, fix_overlap: bool = False) -> int:
        """One output tile: its K chunks through l1, then FIX; the epilogue's passes run on
        the AIV beside the next tile's (its own MTE2, V, MTE3), so a tile takes the longer of
        the AIC's work and the epilogue (`drain` adds the last tile's epilogue). With two l0c
        slots (`fix_overlap`) FIX drains a tile while the cube fills the next.

        Double-buffered, chunk i + 1 loads (MTE2) while chunk i computes (MTE1 and the cube,
        themselves overlapped through l0): a pipeline of `chunks` stages, so a tile of one
        chunk overlaps nothing - each tile starts on slot 0 and FIX waits for its cube.
        Single-buffered, everything runs in turn. MTE2 runs at no more than the block's share
        of the bandwidth (`blocks` loading at once, `gm_bytes` per tile, a share `hit` of
        them from L2: `CostModel.gm_cycles`)."""
        fix, epi = self._after(mv, nv)
        if gm_bytes:
            mte2 = max(mte2, math.ceil(self.cost.gm_cycles(gm_bytes, blocks, hit)))
        if self.slots > 1:
            load, compute = mte2 / chunks, max(mte1, cube) / chunks
            body = int(load + (chunks - 1) * max(load, compute) + compute)
        else:
            body = mte2 + mte1 + cube
        return max(body, fix, epi) if fix_overlap else max(body + fix, epi)

    def _after(self, mv: int, nv: int) -> tuple[int, int]:
        """(FIX, epilogue) cycles of an [mv, nv] tile; the epilogue's rows are split between
        the block's vector cores (kernel.py `_epilogue_passes`)."""
        after = self._after_cycles.get((mv, nv))
        if after is None:
            fix = self.dma(mv * nv * self.fix_isz, "l0c", "gm")
            rows = ceil_div(mv, vector_cores_per_block(self.spec))
            after = self._after_cycles[mv, nv] = (fix, self.epilogue.cycles(self, rows, nv) if self.epilogue else 0)
        return after

    def drain(self, mv: int, nv: int) -> int:
        """What the last tile's epilogue adds after the AIC's work ends."""
        return self._after(mv, nv)[1]

    def blocks(self, tiles: int) -> int:
        """Blocks of a kernel of `tiles` tiles: one per cube core at most."""
        return max(1, min(tiles, self.spec.cube_cores))

    def total_us(self, tile_cycles: Callable[[int], int], tiles: int, read_bytes: int, write_bytes: int = 0,
                 hit: float = 0.0, drain: int = 0) -> float:
        """`tiles` tiles over the blocks, `tile_cycles(movers)` each: the full rounds at every
        block's share of the bandwidth, a last partial round at its own blocks' larger share
        (`CostModel.wave_shares`), then the last tile's `drain`, bounded below by the HBM
        time of all the bytes."""
        blocks = self.blocks(tiles)
        cycles = drain + sum(rounds * tile_cycles(movers) for rounds, movers in self.cost.wave_shares(tiles, blocks))
        us = max(self.cost.cycles_to_us(cycles), self.cost.gm_time_us(read_bytes, write_bytes, hit))
        return us + self.cost.cycles_to_us(ceil_div(tiles, blocks) * self.spec.block_dispatch_cycles)

    def l2_hit(self, read_bytes: int, distinct_read_bytes: int, write_bytes: int) -> float:
        """The simulator's L2 rule (`CostModel.l2_hit_fraction`) for a candidate tiling."""
        return self.cost.l2_hit_fraction(read_bytes, distinct_read_bytes, distinct_read_bytes + write_bytes)


def _fits(req: KernelRequest, **spaces: int) -> bool:
    return all(nbytes <= req.device.buffer_bytes[s] for s, nbytes in spaces.items())


def per_chunk(total: int, most: int, slots: int, unit: int = 1) -> list[int]:
    """Sizes of the l1 chunk to price (multiples of `unit`): the most that fit and, when
    double-buffered, smaller ones so that 2, 3 or 4 chunks pipeline their loads behind
    the cube."""
    out = {most}
    if slots > 1:
        for n in (2, 3, 4):
            size = round_up(ceil_div(total, n), unit)
            if size < most:
                out.add(size)
    return sorted(out, reverse=True)


class _Cheapest:
    """The cheapest tiling offered; ties go to fewer instructions (l0 steps).

    Of a shape range's kernel, each tiling is also priced at the range's other sizes
    (`Extent.sizes`): the choice is the one whose worst ratio to the cheapest tiling at each
    size is least (then the cheapest at the top), so no size runs far from its own best."""

    def __init__(self) -> None:
        self.best: Tiling | None = None
        self.key: tuple = ()
        self.ranged: list[tuple[Tiling, int, list[float]]] = []

    def offer(self, tiling: Tiling, instructions: int, at_sizes: Sequence[float] = ()) -> None:
        if len(at_sizes) > 1:
            self.ranged.append((tiling, instructions, list(at_sizes)))
        key = (round(tiling.estimate_us, 6), instructions)
        if self.best is None or key < self.key:
            self.best, self.key = tiling, key

    @property
    def choice(self) -> Tiling | None:
        if not self.ranged:
            return self.best
        least = [min(us[i] for _, _, us in self.ranged) for i in range(len(self.ranged[0][2]))]
        return min(self.ranged, key=lambda o: (round(max(u / b for u, b in zip(o[2], least)), 4),
                                               round(o[0].estimate_us, 6), o[1]))[0]


def range_units(req: KernelRequest, extent: int) -> list[int]:
    """`extent` - the tile grid's dim that holds a shape range's dim - at each size the tiling
    is priced at (the top first); [extent] without a range."""
    ext = req.extent
    if ext is None or extent % ext.count:
        return [extent]
    return [extent // ext.count * s for s in ext.sizes()]


def matmul_range_axis(req: KernelRequest, plan: MatmulPlan) -> int | None:
    """The tile grid's dim (0: the batch, 1: the rows) whose first tiles hold a shape range's
    real rows - the first of each group when the range's dim is under other axes (the rows) -
    or None (no range, or a result whose rows are not the outputs')."""
    if req.extent is None or plan.heads or plan.frame != plan.out_shape \
            or any(L.logical_shape(v.type) != plan.out_shape for v in req.outputs):
        return None
    return 0 if plan.batch > 1 and req.extent.groups == 1 else 1


def conv_range_images(req: KernelRequest, plan: ConvPlan) -> bool:
    """A shape range leads the convolution's result (its batch holds the dim)."""
    return req.extent is not None and all(L.logical_shape(v.type)[:1] == (plan.geometry.n,) for v in req.outputs)


# ---------------------------------------------------------------------------
# Matmul: [mt, nt] output tiles, kt rows of K per l0 step, kl1 per l1 chunk.
# ---------------------------------------------------------------------------


def matmul_tiling(req: KernelRequest, plan: MatmulPlan, pricer: Pricer) -> Tiling | None:
    """The cheapest tiling of a matmul (tiles of mt x nt, kt per cube step, kl1 per l1 chunk).

    A lowering run keeps each choice (`req.tilings`) by what it depends on, as conv_tiling
    does: a decoder repeats its layers' matmuls, and a matmul over L2 prices up to dozens of
    block shapes (l2_pieces). A norm epilogue's tiling (`pricer.window`) is not kept."""
    if req.tilings is None or pricer.window is not None:
        return _matmul_tiling(req, plan, pricer)
    ext, epi = req.extent, pricer.epilogue
    key = ("matmul", plan.batch, plan.rows, plan.cols, plan.k, plan.elt, plan.out_elt, plan.heads, plan.part_cols,
           plan.partner is not None, plan.lhs.trans, plan.lhs_nz, plan.out_shape, plan.frame,
           pricer.isz, pricer.out_isz, pricer.fix_isz, pricer.params_l1, pricer.max_rows, pricer.dtype, pricer.slots,
           pricer.groups,
           None if epi is None else (tuple(epi.instrs), tuple(epi.loads), tuple(epi.stores), epi.converted, epi.celt),
           None if ext is None else (ext.count, tuple(ext.sizes()), matmul_range_axis(req, plan)))
    if key not in req.tilings:
        req.tilings[key] = _matmul_tiling(req, plan, pricer)
    return req.tilings[key]


def _matmul_tiling(req: KernelRequest, plan: MatmulPlan, pricer: Pricer) -> Tiling | None:
    isz, slots = pricer.isz, pricer.slots
    m, n, k, nb = plan.rows, plan.cols, plan.k, plan.batch
    kf = plan.k_fractal
    kp = round_up(k, kf)
    cheapest = _Cheapest()
    # l1 rows are whole 32-byte blocks: an int8 operand's [K, N] (or transposed [K, M]) tile
    # needs 32 columns
    mn = 32 // isz if isz < 2 else FRACTAL
    # a gated matmul runs two products per tile (the partner's staged by one more FIX)
    pairs = 2 if plan.partner is not None else 1
    axis = matmul_range_axis(req, plan)  # a shape range: priced at its sizes too
    shapes = [(nb, m)] if axis is None else \
        [(s, m) for s in range_units(req, nb)] if axis == 0 else [(nb, s) for s in range_units(req, m)]
    whole = pricer.window is not None
    mts = _choices(m, unit=mn)
    group = req.extent.count * req.extent.inner if axis == 1 else 0  # rows of one group of the range's dim
    # whole groups are priced with each group's own tiles: priced packed (`_row_tiles`, which
    # leaves a packed tile's per-group loads unpriced), LLaMA-2-7B's SwiGLU at 8 x 1~256 took
    # tiles of 256 rows and ran 65 positions at +28.7% over the static program, not +16.9%
    packs = False
    if axis == 1 and req.extent.groups > 1 and m % group == 0:
        # the range's dim under other axes: a tile inside one group of rows runs when the
        # group's real rows reach it, so the groups (of this kernel's rows: a piece of a matmul
        # over L2 holds some of them) are priced as the batch
        split = m // group
        mts = [mt for mt in mts if group % mt == 0] or mts
        shapes = [(nb * split, rows // split) for _, rows in shapes]
    elif axis == 1 and req.extent.groups > 1:
        # a piece of a group's rows (tiling.row_ranges): its tiles skip past the real rows when
        # they divide it (matmul_kernel `_grouped`); priced at the range's sizes as the group's
        # first piece (its rows the first real ones; l2_pieces prices every piece's shape
        # once), the groups' tails packed
        mts = [mt for mt in mts if m % mt == 0] or mts
        shapes = [(nb, min(m, rows)) for rows in range_units(req, group)]
        packs = not whole and rows_pack(plan)
    elif req.extent is not None and (plan.heads or plan.part_cols) and req.extent.axes == {-2}:
        group = req.extent.count * req.extent.inner  # a head split's rows: each batch row's positions
        if m % group == 0:
            mts = [mt for mt in mts if group % mt == 0] or mts
    for mt, nt in itertools.product(mts, _choices(n, unit=mn)):
        if not _fits(req, l0c=mt * nt * ACC_BYTES):
            continue
        if whole and nt < n and (n % nt or n // nt > GROUP_MAX):
            continue  # a norm epilogue's items are whole rows: one tile, or a group of them
        if plan.heads and nt % plan.head_size and plan.head_size % nt:
            continue  # a head-split result's tiles hold whole heads or lie in one
        for kt in _choices(k, KT_CHOICES, kf):
            if not _fits(req, l0a=slots * mt * kt * isz, l0b=slots * kt * nt * isz):
                continue
            room = req.device.buffer_bytes["l1"] // (slots * (mt + nt) * isz)
            most = min(kp, room // kt * kt)
            if most < kt:
                continue
            steps = pairs * ceil_div(kp, kt)
            mte1, cube = _l0_cycles(req, pricer, mt, nt, kt, steps)
            for kl1 in per_chunk(kp, most, slots, kt):
                if whole and nt < n:
                    break  # a group of tiles per item (_matmul_groups)
                chunks = pairs * ceil_div(kp, kl1)
                mte2 = _l1_cycles(pricer, mt, nt, kl1, chunks)
                top = shapes[0][1]
                # the whole result first, then a range's other sizes
                priced = [_shape_us(plan, pricer, (mt, nt, mte2, mte1, cube, chunks), nb_s, m_s, top, packs)
                          for nb_s, m_s in shapes]
                us, tiles, blocks = priced[0]
                cheapest.offer(Tiling(mt, nt, kt, kl1, blocks, tiles, us), tiles * steps, [p[0] for p in priced])
            if pricer.groups and pairs == 1 and axis is None and not (plan.part_cols or plan.lhs.trans or plan.lhs_nz):
                _matmul_groups(req, plan, pricer, cheapest, mt, nt, kt, steps, mte1, cube)
    return cheapest.choice


L2_PIECES_MAX = 32
"""Most launches a matmul is split into to fit L2 (`l2_pieces`)."""


def matmul_footprint(plan: MatmulPlan, isz: int, out_isz: int, rows: int | None = None, cols: int | None = None) -> int:
    """The gm bytes a matmul kernel over `rows` x `cols` of each batch's result touches (the
    whole result when None): those rows of the lhs, those columns of the right operand(s),
    that block of the result(s) - what `CostModel.l2_hit_fraction` compares with L2."""
    m = plan.rows if rows is None else rows
    n = plan.cols if cols is None else cols
    pairs = 2 if plan.partner is not None else 1
    kp = round_up(plan.k, plan.k_fractal)
    return plan.batch * ((m + pairs * n) * kp * isz + pairs * m * n * out_isz)


def _ranges(extent: int, count: int, unit: int) -> list[tuple[int, int]]:
    """`count` ranges of equal width (whole `unit`s) over [0, extent), the last one the rest."""
    width = round_up(ceil_div(extent, count), unit)
    return [(c0, min(width, extent - c0)) for c0 in range(0, extent, width)]


def row_ranges(req: KernelRequest, plan: MatmulPlan, isz: int) -> list[list[tuple[int, int]]]:
    """The splits of a matmul's rows worth pricing over L2, as (first row, rows) ranges: the
    whole; and where the lhs is itself large, the fewest ranges whose lhs rows take at most
    half of L2 (the other half for the columns' operands), and one more (whole fractals).
    A shape range's rows in groups (a sequence under the batch) are split into whole groups
    where the groups allow, else into equal parts of each group: a launch over a range that
    cuts a group computes all its rows, at every size (matmul_kernel.py `_grouped`)."""
    kp = round_up(plan.k, plan.k_fractal)
    least = ceil_div(2 * plan.batch * plan.rows * kp * isz, req.device.l2_bytes)
    splits = [[(0, plan.rows)]]
    if least <= 1:
        return splits
    counts = [least, least + 1]
    ext = req.extent
    if ext is not None and ext.groups > 1 and plan.batch * plan.rows % ext.groups == 0:
        group = plan.batch * plan.rows // ext.groups
        groups = plan.rows // group if plan.rows % group == 0 else 0
        whole = [c for c in range(least, groups + 1) if groups % c == 0]
        parts = [groups * q for q in range(ceil_div(least, groups or 1), group // FRACTAL + 1)
                 if groups and group % q == 0 and group // q % FRACTAL == 0]
        if whole or parts:
            return splits + [[(i * plan.rows // c, plan.rows // c) for i in range(c)]
                             for c in (whole or parts)[:2] if c <= L2_PIECES_MAX]
    for nr in counts:
        rows = _ranges(plan.rows, nr, FRACTAL)
        if len(rows) == nr <= L2_PIECES_MAX:
            splits.append(rows)
    return splits


def chain_us(cost: CostModel, tilings: Sequence[Tiling]) -> float:
    """Kernels launched one after another on a stream: their estimates and a launch for each
    after the first (what a split over L2 costs beside one kernel's estimate)."""
    return sum(t.estimate_us for t in tilings) + (len(tilings) - 1) * cost.launch_overhead_us()


def l2_pieces(req: KernelRequest, plan: MatmulPlan, pricer: Pricer, whole: Tiling,
              tiling: Callable[[MatmulPlan], Tiling | None]) -> list[tuple[tuple[int, int], tuple[int, int], Tiling]] | None:
    """A matmul whose gm footprint is over L2 as launches over blocks of its result - ranges
    of its rows times ranges of its columns, one launch after another, each with a footprint
    L2 holds: [((first row, rows), (first column, columns), tiling)], row ranges outer; or
    None when one launch is cheapest.

    Over L2, a kernel that reads its operands again per output tile finds only a share of
    them there (`CostModel.l2_hit_fraction`); a launch over a block of the result reads only
    its rows of the lhs and its columns of the right operand(s), so its re-reads hit. Column
    ranges alone serve a small lhs (a prefill of 2048 rows); a lhs itself over L2 (8 x 4096
    rows of 4096) needs row ranges too. This is Ascend C's "L2 cache tiling" for matmuls
    whose operands exceed L2. Each block shape is priced with its own tiling (`tiling(plan
    of that shape)`) plus a launch per extra block; of the splits into up to L2_PIECES_MAX
    blocks, the least total wins."""
    spec, cost = req.device, req.cost
    isz, out_isz = pricer.isz, pricer.out_isz
    if matmul_footprint(plan, isz, out_isz) <= spec.l2_bytes:
        return None
    unit = 32 // isz if isz < 2 else FRACTAL  # the rhs is read in whole fractals
    best, best_us = None, whole.estimate_us
    priced: dict[tuple[int, int], Tiling | None] = {}
    for rows in row_ranges(req, plan, isz):
        nr = len(rows)
        for nc in range(1, L2_PIECES_MAX // nr + 1):
            if nr * nc == 1:
                continue
            cols = _ranges(plan.cols, nc, unit)
            if len(cols) < nc:
                break
            blocks = [(r, c) for r in rows for c in cols]
            for shape in {(r[1], c[1]) for r, c in blocks} - priced.keys():
                priced[shape] = tiling(dataclasses.replace(plan, rows=shape[0], cols=shape[1]))
            if any(priced[(r[1], c[1])] is None for r, c in blocks):
                continue
            us = chain_us(cost, [priced[(r[1], c[1])] for r, c in blocks])
            if us < best_us:
                best, best_us = [(r, c, priced[(r[1], c[1])]) for r, c in blocks], us
            if matmul_footprint(plan, isz, out_isz, rows[0][1], cols[0][1]) <= spec.l2_bytes:
                break  # more column ranges only add launches and lhs re-reads
    return best


def _two_accumulators(req: KernelRequest, mt: int, nt: int) -> bool:
    return _fits(req, l0c=2 * mt * nt * ACC_BYTES)


def l0c_slots(req: KernelRequest, t: Tiling) -> int:
    """l0c slots of a cube kernel: two for a matmul's work items of several tiles when two
    [mt, nt] accumulators fit, else one."""
    return 2 if t.group > 1 and _two_accumulators(req, t.mt, t.nt) else 1


GROUP_MAX = 8
"""Most output tiles a work item holds along N (each one's code is emitted once per item)."""


def _matmul_groups(req: KernelRequest, plan: MatmulPlan, pricer: Pricer, cheapest: _Cheapest, mt: int, nt: int,
                   kt: int, steps: int, mte1: int, cube: int) -> None:
    """Offers work items of g tiles along N that share the lhs panel [mt, K], held whole in
    l1 beside the rhs chunks: the panel is read once per item instead of once per tile (what
    Ascend's matmul tiling does with a depth of A covering K). The first tile of an item loads
    the panel chunk by chunk with its own rhs chunks; the others load only theirs."""
    isz, slots = pricer.isz, pricer.slots
    m, n, nb = plan.rows, plan.cols, plan.batch
    kp = round_up(plan.k, plan.k_fractal)
    if n % nt or n // nt < 2:
        return
    panel = mt * kp * isz
    room = (req.device.buffer_bytes["l1"] - panel) // (slots * nt * isz)
    most = min(kp, room // kt * kt)
    if most < kt:
        return
    n_tiles = n // nt
    tiles = nb * ceil_div(m, mt) * n_tiles
    mv, writes = min(m, mt), nb * m * n * pricer.out_isz
    a_load = pricer.dma(mt * kp * isz, "gm", "l1")
    fix_overlap = _two_accumulators(req, mt, nt)  # the kernel's l0c_slots
    whole = pricer.window is not None
    for g in range(2, min(n_tiles, GROUP_MAX) + 1):
        if n_tiles % g or (whole and g != n_tiles):
            continue
        items = tiles // g
        reads = (tiles * nt + items * mt) * kp * isz
        hit = pricer.l2_hit(reads, nb * (m + n) * kp * isz, writes)
        for kl1 in per_chunk(kp, most, slots, kt):
            chunks = ceil_div(kp, kl1)
            b_load = chunks * pricer.dma(kl1 * nt * isz, "gm", "l1")

            def item(movers: int, chunks=chunks, b_load=b_load, g=g, hit=hit) -> int:
                first = pricer.tile(a_load + b_load, mte1, cube, mt, nt, mv, chunks, movers, (mt + nt) * kp * isz, hit,
                                    fix_overlap)
                rest = pricer.tile(b_load, mte1, cube, mt, nt, mv, chunks, movers, nt * kp * isz, hit, fix_overlap)
                return first + (g - 1) * rest

            drain = pricer.drain(mv, nt)
            if whole:
                item, drain = _with_window(pricer, item, mv), drain + pricer.window(mv)
            us = pricer.total_us(item, items, reads, writes, hit, drain)
            cheapest.offer(Tiling(mt, nt, kt, kl1, pricer.blocks(items), tiles, us, group=g), tiles * steps)


def _with_window(pricer: Pricer, cycles: Callable[[int], int], rows: int) -> Callable[[int], int]:
    """A work item's cycles with a norm epilogue's window after it: the vector unit's work on
    the item's rows runs beside the cube's next item, so an item takes the longer of the two
    (the last window is the drain)."""
    window = pricer.window(rows)
    return lambda movers: max(cycles(movers), window)


def _l0_cycles(req: KernelRequest, pricer: Pricer, mt: int, nt: int, kt: int, steps: int) -> tuple[int, int]:
    """MTE1 and cube cycles of a matmul tile's `steps` l0 steps."""
    mte1 = steps * (pricer.dma(mt * kt * pricer.isz, "l1", "l0a") + pricer.dma(kt * nt * pricer.isz, "l1", "l0b"))
    return mte1, steps * req.cost.mmad_cycles(mt, kt, nt, pricer.dtype)


def _l1_cycles(pricer: Pricer, mt: int, nt: int, kl1: int, chunks: int, segments: int = 1) -> int:
    """MTE2 cycles of a matmul tile's `chunks` l1 chunks, its lhs rows in `segments` copies (a
    packed tile: matmul_kernel.py `_packings`)."""
    isz = pricer.isz
    return chunks * (segments * pricer.dma(mt // segments * kl1 * isz, "gm", "l1") + pricer.dma(kl1 * nt * isz, "gm", "l1"))


def rows_pack(plan: MatmulPlan) -> bool:
    """Whether a product's tiles may hold rows of several groups (matmul_kernel.py
    `_packings`): its lhs rows are loaded and its result rows written per group, and nothing
    else addresses rows - no transposed or fractal lhs, no fractal or blocked result, no
    epilogue on the FIX pipe."""
    return not (plan.lhs.trans or plan.lhs_nz or plan.out_nz or plan.out_blocked or plan.epilogue.fix)


def _row_tiles(groups: int, rows: int, mt: int, packs: bool) -> int:
    """Tiles along the result's rows of `groups` groups of `rows` rows: each group's own, or,
    where a shape range's groups pack (matmul_kernel.py `_packings`), each group's whole
    tiles and then the groups' tails (whole fractals) sharing tiles."""
    if not packs or rows % mt == 0:
        return groups * ceil_div(rows, mt)
    return groups * (rows // mt) + ceil_div(groups * round_up(rows % mt, FRACTAL), mt)


def _shape_us(plan: MatmulPlan, pricer: Pricer, tile: tuple[int, int, int, int, int, int], nb_s: int, m_s: int,
              top: int, packs: bool = False) -> tuple[float, int, int]:
    """(estimate, tiles, blocks) of a matmul over `nb_s` groups of `m_s` rows in tiles of a
    tiling (`tile`: mt, nt and a tile's mte2, mte1, cube cycles and l1 chunks) chosen for
    groups of up to `top` rows: a size runs whole tiles of min(top, mt) rows, or with `packs`
    (`_row_tiles`) each group's rows in whole fractals."""
    mt, nt, mte2, mte1, cube, chunks = tile
    n, isz, kp = plan.cols, pricer.isz, round_up(plan.k, plan.k_fractal)
    pairs = 2 if plan.partner is not None else 1
    partner_fix = (pairs - 1) * pricer.dma(min(plan.rows, mt) * min(n, nt) * pricer.out_isz, "l0c", "gm")
    tiles = _row_tiles(nb_s, m_s, mt, packs) * sum(ceil_div(c, nt) for c in plan.part_cols or (n,))
    m_run = min(top, round_up(m_s, FRACTAL) if packs else ceil_div(m_s, mt) * mt)
    rows = min(top, mt)
    reads, writes = pairs * tiles * (mt + nt) * kp * isz, pairs * nb_s * m_run * n * pricer.out_isz
    hit = pricer.l2_hit(reads, nb_s * (m_run + pairs * n) * kp * isz, writes)
    cycles = functools.partial(_matmul_tile, pricer, mte2, mte1, cube, mt, min(n, nt), rows,
                               chunks, pairs * (mt + nt) * kp * isz, hit, partner_fix)
    drain = pricer.drain(rows, min(n, nt))
    if pricer.window is not None:
        cycles, drain = _with_window(pricer, cycles, rows), drain + pricer.window(rows)
    return pricer.total_us(cycles, tiles, reads, writes, hit, drain), tiles, pricer.blocks(tiles)


def packing_pays(req: KernelRequest, plan: MatmulPlan, pricer: Pricer, t: Tiling, groups: int, k: int) -> bool:
    """Whether tiles packing the first r = mt / k rows of k groups (matmul_kernel.py
    `_packings`) are cheaper than tiles inside one group when each of `groups` groups has r
    real rows: fewer tiles and rhs reads, against fewer blocks busy and k lhs copies a chunk."""
    kp = round_up(plan.k, plan.k_fractal)
    mte1, cube = _l0_cycles(req, pricer, t.mt, t.nt, t.kt, ceil_div(kp, t.kt))
    chunks = ceil_div(kp, t.kl1)
    whole = (t.mt, t.nt, _l1_cycles(pricer, t.mt, t.nt, t.kl1, chunks), mte1, cube, chunks)
    packed = (t.mt, t.nt, _l1_cycles(pricer, t.mt, t.nt, t.kl1, chunks, k), mte1, cube, chunks)
    return (_shape_us(plan, pricer, packed, groups // k, t.mt, t.mt)[0]
            < _shape_us(plan, pricer, whole, groups, t.mt // k, t.mt)[0])


def _matmul_tile(pricer: Pricer, mte2: int, mte1: int, cube: int, mt: int, nv: int, mv: int, chunks: int,
                 gm_bytes: int, hit: float, partner_fix: int, movers: int) -> int:
    return pricer.tile(mte2, mte1, cube, mt, nv, mv, chunks, movers, gm_bytes, hit) + partner_fix


# ---------------------------------------------------------------------------
# Convolution: mt output channels x ohs x owt output pixels, cc channels (or C0 blocks) per
# l1 chunk.
# ---------------------------------------------------------------------------


def conv_tiling(req: KernelRequest, plan: ConvPlan, pricer: Pricer) -> Tiling | None:
    """Output tiles of whole rows (a divisor of the height, or up to 256 pixels), at most
    1024 pixels; rows split into 16-column pieces when no whole row fits l0 or l1.

    A lowering run keeps each choice (`req.tilings`) by what it depends on - the geometry, the
    types, the buffers, the epilogue's cost, a shape range's sizes: a network repeats its conv
    shapes (ResNet-50: 53 convs of 25 shapes), and each shape prices ~1,000 candidates."""
    if req.tilings is None:
        return _conv_tiling(req, plan, pricer)
    ext, epi = req.extent, pricer.epilogue
    key = ("conv", plan.geometry, plan.elt, plan.w_fz, plan.x_blocked, plan.k_fractal,
           pricer.isz, pricer.out_isz, pricer.fix_isz, pricer.params_l1, pricer.max_rows, pricer.dtype, pricer.slots,
           None if epi is None else (tuple(epi.instrs), tuple(epi.loads), tuple(epi.stores), epi.converted, epi.celt),
           None if ext is None else (ext.count, tuple(ext.sizes())), conv_range_images(req, plan))
    if key not in req.tilings:
        req.tilings[key] = _conv_tiling(req, plan, pricer)
    return req.tilings[key]


def _conv_tiling(req: KernelRequest, plan: ConvPlan, pricer: Pricer) -> Tiling | None:
    geo = plan.geometry
    oh, ow = geo.oh, geo.ow
    pixel_tiles = [(r, ow) for r in range(1, oh + 1) if oh % r == 0 or r * ow <= 256 or r == oh]
    pixel_tiles = [t for t in pixel_tiles if round_up(t[0] * t[1], FRACTAL) <= 1024]
    split_rows = [(1, c) for c in range(FRACTAL, min(ow, 512) + 1, FRACTAL)]
    if not pixel_tiles:  # rows too long for l0: split each row
        pixel_tiles = split_rows
    best = _conv_candidates(req, plan, pricer, pixel_tiles)
    if best is None and pixel_tiles is not split_rows:  # a whole row's box does not fit l1
        best = _conv_candidates(req, plan, pricer, split_rows)
    return best


def _conv_candidates(req: KernelRequest, plan: ConvPlan, pricer: Pricer,
                     pixel_tiles: list[tuple[int, int]]) -> Tiling | None:
    """The cheapest conv tiling whose output tiles are `pixel_tiles` (rows x columns)."""
    geo = plan.geometry
    isz, slots = pricer.isz, pricer.slots
    cheapest = _Cheapest()
    # The l1 chunk counts channels, or C0-channel blocks with FRACTAL_Z weights (the box is
    # then NC1HWC0 and K runs over whole blocks).
    c0 = L.c0_of(plan.elt) if plan.w_fz else 1
    units, unit_k = ceil_div(geo.cg, c0), geo.khw * c0
    for mt, (ohs, owt) in itertools.product(_choices(geo.mg), pixel_tiles):
        np_ = round_up(ohs * owt, FRACTAL)
        if not _fits(req, l0c=mt * np_ * ACC_BYTES) or mt > pricer.max_rows:
            continue
        if plan.out_blocked and mt % L.c0_of(plan.elt) and mt < geo.mg:
            continue  # NC1HWC0 rows are written in whole C0 blocks (int8: 32 channels)
        rows, cols = plan.box(ohs, owt)
        box = (row_elems(np_, plan.elt) if plan.matrix_fm else rows * (cols * c0 if plan.w_fz else row_elems(cols, plan.elt))) * isz  # one unit of the l1 box
        for kt in (c for c in KT_CHOICES if c % plan.k_fractal == 0):
            if kt > round_up(units * unit_k, plan.k_fractal) and kt != plan.k_fractal:
                break
            if not _fits(req, l0a=slots * mt * kt * isz, l0b=slots * kt * np_ * isz):
                continue
            most = _l1_units(req, units, unit_k, box, mt, isz, slots, plan.k_fractal,
                             plan.k_fractal if plan.matrix_fm else 1, pricer.params_l1)
            if most < 1 or (plan.w_fz and not plan.x_blocked and most < units):
                continue  # an NCHW box is re-laid out to NC1HWC0 by one copy: all its channels
            _price_conv_chunks(req, plan, pricer, cheapest, mt, ohs, owt, kt, most)
    return cheapest.choice


def _l1_units(req: KernelRequest, units: int, unit_k: int, box: int, mt: int, isz: int, slots: int,
              kf: int = FRACTAL, box_units: int = 1, reserved: int = 0) -> int:
    """Units (channels or C0 blocks) per l1 chunk: at most what fits, the box plus the
    weights of the chunk, beside `reserved` bytes; fewer give more chunks, whose loads overlap
    the cube when double-buffered. A box held as a [K, pixels] matrix has its units rounded
    up to `box_units` rows (whole K fractals)."""
    l1 = req.device.buffer_bytes["l1"] - reserved
    most = min(units, l1 // (slots * (box + mt * unit_k * isz + 64)))
    while most > 0 and slots * (round_up(most, box_units) * box + mt * round_up(most * unit_k, kf) * isz) > l1:
        most -= 1
    return most


def _price_conv_chunks(req: KernelRequest, plan: ConvPlan, pricer: Pricer, cheapest: _Cheapest,
                       mt: int, ohs: int, owt: int, kt: int, most: int) -> None:
    """Offers the tiling of each l1 chunk size up to `most` units for these tile sizes."""
    geo, isz, slots = plan.geometry, pricer.isz, pricer.slots
    c0 = L.c0_of(plan.elt) if plan.w_fz else 1
    units, unit_k = ceil_div(geo.cg, c0), geo.khw * c0
    npix = ohs * owt
    np_ = round_up(npix, FRACTAL)
    rows, cols = plan.box(ohs, owt)
    # an NCHW box is interleaved into C0 lanes by its copy (ascend.CopyOp.relayout); a
    # pointwise window's [K, pixels] matrix is copied in whole rows
    fm_run = None if plan.x_blocked or plan.matrix_fm else isz
    per_image = geo.group * ceil_div(geo.mg, mt) * ceil_div(geo.oh, ohs) * ceil_div(geo.ow, owt)
    pixels = geo.oh * geo.ow if plan.samples_box else geo.h * geo.w  # the input pixels read
    priced_at = []  # per batch priced at (the whole first, then a shape range's other sizes)
    for n in (range_units(req, geo.n) if conv_range_images(req, plan) else [geo.n]):
        tiles = n * per_image
        reads = tiles * (req.cost.dma_bytes(geo.cg * rows * cols * isz, fm_run) + mt * units * unit_k * isz)
        writes = n * geo.m * geo.oh * geo.ow * pricer.out_isz
        distinct = (n * geo.c * pixels + geo.m * units * unit_k) * isz
        priced_at.append((tiles, pricer.blocks(tiles), reads, writes, pricer.l2_hit(reads, distinct, writes)))
    for cc in per_chunk(units, most, slots if (plan.x_blocked or not plan.w_fz) else 1):
        kc = round_up(cc * unit_k, plan.k_fractal)
        chunks = ceil_div(units, cc)
        steps = chunks * ceil_div(kc, kt)
        fm_bytes = cc * c0 * rows * cols * isz
        if fm_run:
            fm_bytes = max(fm_bytes, req.cost.dma_bytes(min(cc * c0, geo.cg) * rows * cols * isz, fm_run))
        w_bytes = mt * cc * unit_k * isz
        mte2 = chunks * (pricer.dma(fm_bytes, "gm", "l1") + pricer.dma(w_bytes, "gm", "l1"))
        mte1 = steps * (pricer.dma(mt * kt * isz, "l1", "l0a") + pricer.dma(kt * np_ * isz, "l1", "l0b"))
        cube = steps * req.cost.mmad_cycles(mt, kt, np_, pricer.dtype)
        at = [pricer.total_us(functools.partial(pricer.tile, mte2, mte1, cube, mt, npix, min(geo.mg, mt), chunks,
                                                gm_bytes=chunks * (fm_bytes + w_bytes), hit=hit), tiles, reads, writes, hit,
                                    pricer.drain(min(geo.mg, mt), npix))
              for tiles, blocks, reads, writes, hit in priced_at]
        tiles, blocks = priced_at[0][:2]
        cheapest.offer(Tiling(mt, np_, kt, kc, blocks, tiles, at[0], ohs=ohs, owt=owt, cc=cc), tiles * steps, at)
