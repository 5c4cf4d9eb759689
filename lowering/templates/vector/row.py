"""The row template: one kernel for a chain of elementwise ops, broadcasts, views and
reductions whose reductions keep whole rows (steps 2 and 3 of the package docstring: the
tiling of the canonical space and the tile pipeline)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import nullcontext

from xdsl.ir import Operation, SSAValue

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.dialects import formats
from geir.dialects import graph as g
from geir.dialects.traits import ViewLike
from geir.lowering.templates.common import (
    KernelBuilder,
    KernelRequest,
    ceil_div,
    cut_dim,
    itemsize,
    mark,
    shape_of,
    tile_offsets,
    tile_pieces,
)
from geir.lowering.templates.data import MIN_TILE_BYTES, padded_bytes, slots_of
from geir.lowering.templates.vector.body import Body, BufferPool
from geir.lowering.templates.vector.reductions import bn_scale_shift
from geir.lowering.templates.vector.rules import check_op
from geir.lowering.templates.vector.space import Reject, canonical_space, check_formats, data_operands, scalar_const
from geir.target import op_info

PROLOGUE_FLAG = 2
"""Flag id of the copy-in -> compute of the values computed once before the tile loop."""


class RowKernel:
    """The row template for one request (Reject if it does not fit)."""

    def __init__(self, req: KernelRequest):
        self.req = req
        for op in req.ops:
            if not op_info.ROW.takes(op) or len(op.results) != 1:
                raise Reject
            for v in (*op.operands, *op.results):
                if math.prod(shape_of(v)) == 0 or not op_info.ROW.takes_type(v.type.element_type):
                    raise Reject
            check_op(op)
            check_formats(op)
        for v in (*req.inputs, *req.outputs):
            if math.prod(shape_of(v)) == 0:
                raise Reject
        self.space = canonical_space(req)
        self.rd = frozenset().union(*self.space.reduced.values()) if self.space.reduced else frozenset()
        self._profile: list | None = None
        used = {v for op in req.ops for v in data_operands(op)}
        self.scalars = {v: c for v in req.inputs if (c := scalar_const(v)) is not None}
        self.loaded = [v for v in dict.fromkeys(req.inputs)
                       if (v in used and v not in self.scalars) or v in req.outputs]
        # value -> the value whose buffer it shares (views, an expand to the same shape)
        self.alias: dict[SSAValue, SSAValue] = {}
        for op in req.ops:
            if op.has_trait(ViewLike) or (
                    isinstance(op, g.ExpandOp) and shape_of(op.inputs[0]) == shape_of(op.results[0])):
                src = op.operands[0]
                self.alias[op.results[0]] = self.alias.get(src, src)
        # batch_norm -> its scale and shift, when computed once in the prologue
        self.bn_scale_shift: dict[Operation, tuple[SSAValue, SSAValue]] = {}

    # -- tiling -------------------------------------------------------------------------------

    def tile_ext(self, v: SSAValue, ext: Sequence[int]) -> list[int]:
        d = self.space.dims[v]
        return [x if i in d else 1 for i, x in enumerate(ext)]

    def invariant_set(self, ext: Sequence[int]) -> set[SSAValue]:
        """Values whose tile is the same for every tile: computed once."""
        shape = self.space.shape
        cut = [i for i, (x, y) in enumerate(zip(shape, ext)) if x != y]
        if not cut:  # one tile: nothing to hoist
            return set(self.scalars)
        inv = {v for v in self.loaded if not any(i in self.space.dims[v] for i in cut)}
        inv |= set(self.scalars)
        for op in self.req.ops:
            if all(v in inv for v in op.operands):
                inv.add(op.results[0])
        return inv

    def measure(self, ext: Sequence[int]) -> int:
        """ub bytes the kernel needs with tile extents `ext`: the buffers the body allocates
        with one whole tile (emitted once into a scratch kernel), each sized for `ext`, per
        slot. An upper bound: smaller tiles only let more buffers share a shape, and values
        hoisted out of the loop need one copy instead of one per slot."""
        if self._profile is None:
            cap = {k: 1 << 40 for k in self.req.device.buffer_bytes}
            kb = KernelBuilder(self.req, "vector", 1, capacity=cap)
            pools = self._emit(kb, list(self.space.shape), 1)
            full = self.space.shape
            self._profile = [(tuple(x == f and f > 1 for x, f in zip(shape, full)), elt)
                             for pool in pools for shape, elt in pool.made]
        total = 0
        for mask, elt in self._profile:
            shape = [e if m else 1 for e, m in zip(ext, mask)]
            total += padded_bytes(shape, elt)
        return total * self.slots

    def plan(self) -> list[int]:
        """Tile extents: dims after `p` whole, dim `p` cut to the largest extent that fits
        (and leaves at least min(cores x slots, bytes / MIN_TILE_BYTES) tiles: double-buffered,
        two tiles a core, so one's copies overlap the other's compute), dims before it 1;
        reduced dims are never cut (Reject when a row does not fit)."""
        shape = list(self.space.shape)
        cap = self.req.device.buffer_bytes["ub"]
        largest = max(math.prod(shape_of(v)) * itemsize(v.type.element_type)
                      for v in (*self.req.inputs, *self.req.outputs))
        elems = math.prod(shape)

        def tile_elems(largest: int, elems: int) -> int:
            want_tiles = max(1, min(self.req.device.vector_cores * self.slots, largest // MIN_TILE_BYTES))
            # rounded up: 1024 rows over 48 cores are 47 tiles of 22 rows in one round, not 48
            # of 21 and a 49th that one block runs after its first
            return max(1, ceil_div(elems, want_tiles))

        max_elems = tile_elems(largest, elems)
        ext = ext_ranged = self.req.extent if self._ranged() else None
        if ext is not None:
            # a shape range: tiles small enough to spread its bottom over the cores too, but
            # none under MIN_TILE_BYTES of the largest value
            bottom = tile_elems(largest // ext.count * ext.lo, elems // ext.count * ext.lo)
            least = ceil_div(elems, max(1, largest // MIN_TILE_BYTES))
            max_elems = max(min(max_elems, bottom), least)

        def fits(ext: list[int]) -> bool:
            return self.measure(ext) <= cap

        for p in range(len(shape)):
            ext = [1] * p + shape[p:]
            if math.prod(ext) <= max_elems and fits(ext):
                return ext
            if p in self.rd:
                if fits(ext):
                    return ext
                raise Reject  # a row does not fit ub
            ext = [1] * (p + 1) + shape[p + 1:]
            if not fits(ext):
                continue
            inner = math.prod(shape[p + 1:])
            lo, hi = 1, max(1, min(shape[p], ceil_div(max_elems, inner)))
            while lo < hi:
                mid = (lo + hi + 1) // 2
                ext[p] = mid
                if fits(ext):
                    lo = mid
                else:
                    hi = mid - 1
            if p == 0 and ext_ranged is not None and ext_ranged.groups > 1:
                group = shape[0] // ext_ranged.groups  # a tile inside one group: it runs when its rows are real
                lo = max(d for d in range(1, lo + 1) if group % d == 0)
            ext[p] = lo
            return ext
        raise Reject

    # -- building -------------------------------------------------------------------------------

    def _plan_slots(self) -> list[int]:
        """The tile extents, double-buffered when the request asks for it and whole rows fit
        twice (self.slots)."""
        self.slots = slots_of(self.req)
        try:
            return self.plan()
        except Reject:
            if self.slots == 1:
                raise
            self.slots = 1  # whole rows fit once but not twice: no double buffering
            return self.plan()

    def build(self) -> a.KernelOp:
        ext = self._plan_slots()
        pieces = tile_pieces(self.space.shape, ext)
        n_main = math.prod(pieces[0][0])
        if n_main <= self.req.device.vector_cores:
            self.slots = 1  # one tile per block: nothing to overlap
            ext = self.plan()
            pieces = tile_pieces(self.space.shape, ext)
        # the tail tiles run on the last blocks: on blocks of their own while there are cores
        tiles = sum(math.prod(c) for c, _, _ in pieces)
        block_dim = max(1, min(self.req.device.vector_cores, tiles))
        kb = KernelBuilder(self.req, "vector", block_dim)
        self._emit(kb, ext, self.slots)
        return mark(kb.finish(), attr_names.TEMPLATE, "row")

    def emit_into(self, kb: KernelBuilder, args: dict[SSAValue, SSAValue],
                  outs: dict[SSAValue, tuple[SSAValue, bool]]) -> None:
        """The request's work inside another kernel (a cube kernel's prologue), on every block
        whole: each block runs every tile, so none waits for another. `args` are the gm
        buffers of the request's inputs; `outs` maps each output to (gm buffer, per_block):
        a per-block output's buffer holds one copy per block (block b's at b x the value's
        size), a shared one is stored by block 0 alone."""
        self._emit(kb, self._plan_slots(), self.slots, args=args, outs=outs)

    def _emit(self, kb: KernelBuilder, ext: list[int], slots: int, args: dict[SSAValue, SSAValue] | None = None,
              outs: dict[SSAValue, tuple[SSAValue, bool]] | None = None) -> list[BufferPool]:
        """The kernel with tile extents `ext`: the prologue, then one pipeline per piece of
        the tiling (the main tiles, the tails). Returns the buffer pools it drew from.
        `args`, `outs`: see emit_into (default: the kernel's own arguments, one block a tile)."""
        req, space = self.req, self.space
        inv = self.invariant_set(ext)
        every_block = outs is not None
        arg = args or {v: kb.inputs[i] for i, v in reversed(list(enumerate(req.inputs)))}
        gm = {v: kb.view(arg[v], space.ext(v)) for v in self.loaded}
        if outs is None:
            outs = {v: (kb.outputs[i], False) for i, v in enumerate(req.outputs)}
        many = every_block and kb.kernel.block_count > 1
        first_block = kb.less(kb.block_idx(), 1) if many else None
        stores = []  # (value, gm view, row shift of its dim 0, the guard of a store by block 0 alone)
        for v in req.outputs:
            buf, per_block = outs[v]
            shape = list(space.ext(v))
            copies = kb.kernel.block_count if per_block else 1
            shift = kb.mul(kb.block_idx(), shape[0]) if per_block and many else 0
            stores.append((v, kb.view(buf, [copies * shape[0], *shape[1:]]), shift,
                           first_block if many and not per_block else None))
        pro_pool = BufferPool(kb, "c")
        consts = self._prologue(kb, pro_pool, ext, inv, gm)
        bodies = [BufferPool(kb, f"s{s}b" if slots > 1 else "b", main=list(ext)) for s in range(slots)]
        shape = list(space.shape)
        real = self._real_tiles(kb, ext)
        for i, (counts, pext, cut_off) in enumerate(tile_pieces(shape, ext)):
            n = math.prod(counts)
            per = ceil_div(n, min(kb.kernel.block_count, n))
            load, compute, store = self._tile_steps(kb, bodies, consts, gm, stores, inv, shape, counts, pext, cut_off)
            runs = None
            form = real(counts, pext, cut_off) if real is not None else None
            if form is not None:  # only the tiles holding real rows: the first ones of each group
                groups, per_group, tile, start, inner, rows = form
                live = kb.mul(kb.limited(per_group, tile, start, rows), inner)
                runs = kb.mul(live, groups)
                if groups > 1:
                    def load(t, s, tile_load=load, live=live, stride=per_group * inner):  # the t-th that runs
                        tile_load(kb.group_major(t, live, stride), s)
            kb.pipeline(n, per, load, store, compute, slots, last_blocks=i > 0, runs=runs, every_block=every_block)
        return [pro_pool, *bodies]

    def _tile_steps(self, kb: KernelBuilder, bodies: list[BufferPool], consts: dict[SSAValue, SSAValue],
                    gm: dict[SSAValue, SSAValue], stores: list, inv: set[SSAValue], shape: list[int],
                    counts: list[int], pext: list[int], cut_off: int, row0: int | SSAValue = 0):
        """The pipeline's load (MTE2), compute (V) and store (MTE3) of a piece's tiles, the
        tiles' rows shifted by `row0` along dim 0 (a window's first row)."""
        req, space = self.req, self.space
        var_loads = [v for v in self.loaded if v not in inv]
        var_ops = [op for op in req.ops if op.results[0] not in inv]
        state: dict[int, tuple[Body, list]] = {}

        def load(tile, s):
            off = tile_offsets(kb, tile, counts, pext, shape, cut_off)
            if row0 != 0:
                off[0] = kb.add(off[0], row0)
            bodies[s].ext = list(pext)
            body = Body(self, kb, bodies[s], pext, dict(consts))
            state[s] = (body, off)
            for v in var_loads:
                body.load(v, gm[v], off)

        def compute(tile, s):
            body, _ = state[s]
            body.compute(var_ops, set(req.outputs))
            body.stage_outputs(req.outputs)

        def store(tile, s):
            body, off = state[s]
            for v, dst, shift, guard in stores:
                te = self.tile_ext(v, body.ext)
                o = [x if j in space.dims[v] else 0 for j, x in enumerate(off)]
                o[0] = kb.add(o[0], shift)
                with kb.if_(guard) if guard is not None else nullcontext():
                    kb.copy(body.out_view(v), kb.tile(dst, o, te))
            body.release_all()

        return load, compute, store

    def window(self, kb: KernelBuilder, args: dict[SSAValue, SSAValue], outs: dict[SSAValue, SSAValue],
               rows: int, subs: int = 1) -> RowWindow:
        """The request's work on windows of at most `rows` rows of its space's dim 0, each run
        by one block inside another kernel (a cube kernel's norm epilogue,
        lowering/templates/cube/norm_epilogue.py), split over the block's `subs` vector cores
        (`ascend.sub_block`s: each core's ub holds the same buffers). `args` / `outs`: the gm
        buffers of the inputs and outputs. Emits the tile-invariant values here, once per core;
        Reject if the space's dim 0 is reduced or no tile of whole rows fits ub."""
        space = self.space
        if 0 in self.rd or any(0 not in space.dims[v] for v in self.req.outputs):
            raise Reject  # a window holds whole rows of every output
        ext = self._window_ext(ceil_div(rows, subs))
        inv = self.invariant_set(ext)
        gm = {v: kb.view(args[v], space.ext(v)) for v in self.loaded}
        stores = [(v, kb.view(outs[v], space.ext(v)), 0, None) for v in self.req.outputs]
        consts = []
        for i in range(subs):
            with kb.sub_block(i) if subs > 1 else nullcontext():
                consts.append(self._prologue(kb, BufferPool(kb, f"wc{i}_" if subs > 1 else "wc"), ext, inv, gm))
            if subs > 1 and self.bn_scale_shift:
                raise Reject  # one core's batch-norm scale and shift would be read by every core
        pools = [BufferPool(kb, f"w{s}b", main=list(ext)) for s in range(self.slots)]
        return RowWindow(self, kb, ext, pools, consts, gm, stores, inv)

    def _window_ext(self, rows: int) -> list[int]:
        """Tile extents of a window of `rows` rows: whole rows of the other dims, and half the
        window per tile when two fit ub (one tile's copies overlap the other's compute)."""
        cap = self.req.device.buffer_bytes["ub"]
        rest = list(self.space.shape[1:])
        for slots in ((2, 1) if slots_of(self.req) > 1 and rows > 1 else (1,)):
            self.slots = slots
            hi = ceil_div(rows, slots)
            if self.measure([1, *rest]) > cap:
                continue
            lo = 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if self.measure([mid, *rest]) <= cap:
                    lo = mid
                else:
                    hi = mid - 1
            return [lo, *rest]
        raise Reject  # not one row fits ub

    def _ranged(self) -> bool:
        """A shape range leads the outputs (request.extent) and every output spans the space's
        dim 0 from its own first axis: the first rows of dim 0 are the real ones."""
        return self.req.extent is not None and not any(
            0 not in self.space.dims[v] or formats.storage_of(v.type) == formats.FRACTAL_NZ for v in self.req.outputs)

    def _real_tiles(self, kb: KernelBuilder, ext: list[int]):
        """Which tiles of the tiling `ext` hold real rows (request.extent): a function of a
        piece of it (counts, extents, cut offset) giving (groups, tiles per group along the
        range's dim, their extent, the first one's start, tiles inside each, real rows per
        group) - tiles numbered group-major, the t-th that runs is tile (t / live) * per_group
        * inner + t mod live, live = a group's real tiles times inner - or None when every
        tile of the piece runs. None without a range or when no tile can be skipped. The dim
        is space dim 0 (its first rows, or the first of each group of its rows when the dim is
        under other axes folded into it), or a dim of the space of its own."""
        req, space, shape = self.req, self.space, list(self.space.shape)
        x = req.extent
        if x is None or any(formats.storage_of(v.type) == formats.FRACTAL_NZ for v in req.outputs):
            return None
        whole = frozenset(range(len(shape)))
        axes = set(x.axes)
        if self._ranged() and x.groups == 1:
            rows = kb.real_rows(shape[0])
            return None if rows is None else lambda counts, pext, cut: (
                1, counts[0], pext[0], cut if cut_dim(shape, pext) == 0 else 0, math.prod(counts[1:]), rows)
        if self._ranged() and x.groups and shape[0] % (x.groups * x.count) == 0 and shape[0] // x.groups % ext[0] == 0:
            groups, group, rows = kb.real_groups(shape[0])
            return lambda counts, pext, cut: (groups, group // pext[0], pext[0], 0, math.prod(counts[1:]), rows)
        if len(axes) == 1 and 0 < (k := len(shape) + axes.pop()) < len(shape) and shape[k] == x.count * x.inner and all(
                space.dims[v] == whole and _ends_as(formats.logical_shape(v.type), shape) for v in req.outputs):
            rows = kb.mul(kb.real_positions(), x.inner)  # the dim is space dim k, the dims before it the groups

            def at_k(counts, pext, cut):
                p = cut_dim(shape, pext)
                if p is None or p < k:
                    return None  # a tile holds the whole dim
                return (math.prod(counts[:k]), counts[k], pext[k], cut if p == k else 0, math.prod(counts[k + 1:]),
                        rows)
            return at_k
        return None

    def _prologue(self, kb: KernelBuilder, pool: BufferPool, ext: list[int], inv: set[SSAValue],
                  gm: dict[SSAValue, SSAValue]) -> dict[SSAValue, SSAValue]:
        """Load the tile-invariant inputs and compute the ops on them once, before the tile
        loop; returns their ub views (what every tile's body starts with)."""
        req = self.req
        pro = Body(self, kb, pool, ext, {})
        pro_loads = [v for v in self.loaded if v in inv]
        pro_ops = [op for op in req.ops if op.results[0] in inv]
        self.bn_scale_shift = {}
        if pro_loads or pro_ops:
            for v in pro_loads:
                pro.load(v, gm[v], [0] * len(self.space.shape))
            kb.sync("MTE2", "V", PROLOGUE_FLAG)
            keep = {v for op in req.ops if op.results[0] not in inv for v in op.operands} | set(req.outputs)
            pro.compute(pro_ops, keep)
            # a batch_norm's scale and shift, when its parameters do not depend on the tile
            for op in req.ops:
                if isinstance(op, g.BatchNormOp) and op.results[0] not in inv \
                        and all(p in inv for p in op.operands[1:]):
                    self.bn_scale_shift[op] = bn_scale_shift(pro, op, keep=True)
        return pro.values


class RowWindow:
    """A row template's work emitted into another kernel window by window (RowKernel.window):
    `emit(row0, rows, sub)` runs rows [row0, row0 + rows) of the space's dim 0 on vector core
    `sub` of this block, through the pipeline of the planned tile extents."""

    def __init__(self, row: RowKernel, kb: KernelBuilder, ext: list[int], pools: list[BufferPool],
                 consts: list[dict[SSAValue, SSAValue]], gm: dict[SSAValue, SSAValue], stores: list,
                 inv: set[SSAValue]):
        self.row, self.kb, self.ext, self.pools = row, kb, ext, pools
        self.consts, self.gm, self.stores, self.inv = consts, gm, stores, inv

    @property
    def subs(self) -> int:
        """The vector cores the windows are split over."""
        return len(self.consts)

    def emit(self, row0: int | SSAValue, rows: int, sub: int = 0) -> None:
        kb, row = self.kb, self.row
        shape = [rows, *row.space.shape[1:]]
        ext = [min(self.ext[0], rows), *self.ext[1:]]
        for counts, pext, cut_off in tile_pieces(shape, ext):
            n = math.prod(counts)
            load, compute, store = row._tile_steps(kb, self.pools, self.consts[sub], self.gm, self.stores, self.inv,
                                                   shape, counts, pext, cut_off, row0)
            kb.pipeline(n, n, load, store, compute, row.slots, every_block=True)


def _ends_as(shape: Sequence[int], space: Sequence[int]) -> bool:
    """`shape` is `space` with unit dims before it: its axes counted from the end are the space's."""
    lead = len(shape) - len(space)
    return lead >= 0 and tuple(shape[lead:]) == tuple(space) and all(d == 1 for d in shape[:lead])
