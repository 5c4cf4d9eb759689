"""Vector kernels: elementwise chains with broadcasting, reductions, softmax, normalisations,
pooling and LRN, all on ub through the vector unit.

**The row template** (`RowKernel`) takes any chain of elementwise ops, broadcasts, views and
reductions (reduce_*, softmax, log_softmax, layer_norm, instance_norm, global pools,
batch_norm as scale/shift) whose reductions all keep whole rows:

1. *Canonical space.* Every value of the kernel is placed in one iteration space S (the shape
   of its largest value): each of its non-unit dims is one dim of S (numpy broadcasting
   aligns them; a reduction without keepdims or a view keeps the order), so a value is S
   with some dims collapsed to 1. Adjacent dims of S that every value (and every
   reduction) treats alike are merged: an unbroadcast chain is 1-d, a per-channel scale
   on NCHW is [N, C, H*W] with the scale [1, C, 1].
2. *Tiles.* The tile is S' with the outer dims cut: dims after `p` whole, dim `p` cut to the
   largest extent whose buffers fit ub (measured by emitting the body), dims before `p` one
   at a time; reduced dims are never cut, so each tile holds whole rows. Tiles are spread
   over the vector cores in contiguous ranges, with a tail tile when the cut does not divide.
3. *Body.* Per tile: copy in (MTE2) each input's tile, compute (V) each op into ub buffers
   that are reused as soon as a value is dead (in place when possible), copy out (MTE3) each
   output's tile; `vbrcb` broadcasts a smaller operand, `vreduce` reduces over the tile's
   dims, scalar constants become `vadds`/`vmuls`/... operands. Values that do not depend on
   the tile (a BN scale, a LayerNorm gamma) are loaded and computed once before the loop.
   With double buffering every per-tile buffer exists twice (slots 0 and 1, flag ids 0/1).

**Pooling** (max, average; 2-d NCHW) moves 8 or 16 channels (32 bytes) to the innermost dim
with `vtranspose`, as the NC1HWC0 layout does on the device, so each window offset is a
strided subview of the padded plane and a window is `kh * kw` `vmax`/`vadd`; tiles are
(channel group, band of output rows). On NC1HWC0 tensors the C0 lanes already are innermost:
the rows go into the plane by DMA and the result out by DMA, no transposes. Global pools on
NC1HWC0 are row reductions over H*W that keep the lanes. **LRN** squares, sums `size`
shifted channel slices, and scales in a [C, H*W] tile (NC1HWC0: vtransposed to channel rows
[C1 * C0, pixels] and back).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, StringAttr, i64
from xdsl.ir import Attribute, Operation, SSAValue

from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.dialects import formats
from geir.ir.types import i1, is_float
from geir.lowering.templates.common import (
    KernelBuilder,
    KernelRequest,
    LoweringError,
    block_elems,
    ceil_div,
    itemsize,
    mark,
    round_up,
    shape_of,
    tile_offsets,
    tile_pieces,
)
from geir.lowering.templates.data import MIN_TILE_BYTES, padded_bytes, slots_of, ub_shape, ub_view

VIEW_OPS = frozenset({"graph.reshape", "graph.flatten", "graph.squeeze", "graph.unsqueeze", "graph.identity", "graph.dropout"})  # until the vector split lands

# ---------------------------------------------------------------------------
# Op classes.
# ---------------------------------------------------------------------------

UNARY = {  # graph op -> vector op
    "graph.relu": a.VreluOp, "graph.sigmoid": a.VsigmoidOp, "graph.tanh": a.VtanhOp, "graph.erf": a.VerfOp,
    "graph.exp": a.VexpOp, "graph.log": a.VlogOp, "graph.sqrt": a.VsqrtOp, "graph.reciprocal": a.VrecOp,
    "graph.neg": a.VnegOp, "graph.abs": a.VabsOp, "graph.sign": a.VsignOp, "graph.floor": a.VfloorOp,
    "graph.ceil": a.VceilOp, "graph.round": a.VroundOp, "graph.sin": a.VsinOp, "graph.cos": a.VcosOp,
    "graph.logical_not": a.VnotOp,
}
COMPOSITE_UNARY = frozenset({
    "graph.softplus", "graph.softsign", "graph.leaky_relu", "graph.elu", "graph.selu", "graph.celu",
    "graph.hard_sigmoid", "graph.hard_swish", "graph.gelu", "graph.shrink", "graph.mish",
    "graph.thresholded_relu", "graph.cast",
})
BINARY = {
    "graph.add": a.VaddOp, "graph.sub": a.VsubOp, "graph.mul": a.VmulOp, "graph.div": a.VdivOp,
    "graph.logical_and": a.VandOp, "graph.logical_or": a.VorOp, "graph.max": a.VmaxOp, "graph.min": a.VminOp,
    "graph.sum": a.VaddOp,
}
COMPARE = {"graph.equal": "eq", "graph.less": "lt", "graph.greater": "gt", "graph.less_or_equal": "le",
           "graph.greater_or_equal": "ge", "graph.logical_xor": "ne"}
ELEMENTWISE = frozenset({*UNARY, *COMPOSITE_UNARY, *BINARY, *COMPARE, "graph.mean", "graph.where",
                         "graph.clip", "graph.prelu", "graph.pow", "graph.expand", "graph.batch_norm"})
REDUCE = {  # graph op -> (vreduce kind, pre, post)
    "graph.reduce_sum": "sum", "graph.reduce_mean": "sum", "graph.reduce_max": "max",
    "graph.reduce_min": "min", "graph.reduce_sum_square": "sum", "graph.reduce_l1": "sum",
    "graph.reduce_l2": "sum", "graph.reduce_log_sum": "sum", "graph.reduce_log_sum_exp": "max",
}
ROW_OPS = frozenset({"graph.softmax", "graph.log_softmax", "graph.layer_norm", "graph.instance_norm",
                     "graph.global_avg_pool", "graph.global_max_pool"})
SUPPORTED = ELEMENTWISE | set(REDUCE) | ROW_OPS | VIEW_OPS
PROLOGUE_FLAG = 2
"""Flag id of the copy-in -> compute of the values computed once before the tile loop."""


def data_operands(op: Operation) -> tuple[SSAValue, ...]:
    """The operands whose elements the kernel reads (not shapes, exponents, axes...)."""
    if op.name in VIEW_OPS or op.name == "graph.expand" or (
            op.name == "graph.pow" and _scalar_const(op.operands[1]) is not None):
        return tuple(op.operands[:1])
    return tuple(op.operands)


class Reject(Exception):
    """The request does not fit the template (the caller returns None)."""


def _const(v: SSAValue) -> np.ndarray | None:
    return g.constant_value_of(v)


def _scalar_const(v: SSAValue) -> float | int | None:
    arr = _const(v)
    if arr is None or arr.size != 1:
        return None
    return arr.reshape(-1)[0].item()


# ---------------------------------------------------------------------------
# 1. The canonical space.
# ---------------------------------------------------------------------------


@dataclass
class Space:
    """Values placed in the canonical shape `shape`: `dims[v]` is the set of canonical dims v
    spans (the others are 1 for it), `reduced[op]` the dims op reduces."""

    shape: tuple[int, ...]
    dims: dict[SSAValue, frozenset[int]]
    reduced: dict[Operation, frozenset[int]]

    def ext(self, v: SSAValue) -> list[int]:
        d = self.dims[v]
        return [x if i in d else 1 for i, x in enumerate(self.shape)]


def _reduce_axes(op: Operation, rank: int) -> list[int]:
    name = op.name
    if name in ("graph.softmax", "graph.log_softmax"):
        return [op.attrs()["axis"] % rank]
    if name == "graph.layer_norm":
        return list(range(op.attrs()["axis"] % rank, rank))
    if name in ("graph.global_avg_pool", "graph.global_max_pool") and _blocked(op.operands[0]):
        return [2, 3]  # [N, C1, H, W, C0]: H and W; the C0 lanes stay
    if name in ("graph.instance_norm", "graph.global_avg_pool", "graph.global_max_pool"):
        return list(range(2, rank))
    attrs = op.attrs()
    axes = attrs["axes"]
    if axes is None or len(axes) == 0:
        return [] if attrs["noop_with_empty_axes"] else list(range(rank))
    return sorted({int(x) % rank for x in axes})


def _blocked(v: SSAValue) -> bool:
    """v is stored NC1HWC0 (of an NCHW origin): channels split into C1 blocks of C0 lanes."""
    t = v.type
    return formats.storage_of(t) == formats.NC1HWC0 and formats.origin_of(t) == formats.NCHW


def _check_formats(op: Operation) -> None:
    """Reject formatted operands the row template would misread: it works on storage arrays,
    which is right for elementwise ops (their operands share one format) and for global pools
    on NC1HWC0 (H, W reduced, the lanes kept); a per-channel parameter [C] of a batch_norm
    does not line up with [C1, C0] lanes."""
    kind = getattr(op, "LAYOUT", "nd")
    formatted = [v for v in (*op.operands, *op.results) if formats.is_formatted(v.type)]
    if not formatted or kind == "elementwise":
        return
    if op.name in ("graph.global_avg_pool", "graph.global_max_pool") and all(map(_blocked, formatted)):
        return
    raise Reject


class _Placer:
    """Places every value of the request in the canonical space (Reject if one cannot be)."""

    def __init__(self, req: KernelRequest):
        self.req = req
        values = [*req.inputs, *(r for op in req.ops for r in op.results)]
        big = max(values, key=lambda v: (math.prod(shape_of(v)), len(shape_of(v))))
        self.shape = shape_of(big)
        self.n = len(self.shape)
        self.pos: dict[SSAValue, tuple[int | None, ...]] = {}
        self.reduced: dict[Operation, frozenset[int]] = {}

    def _check(self, v: SSAValue, pos: Sequence[int | None]) -> tuple[int | None, ...]:
        shape = shape_of(v)
        last = -1
        for extent, p in zip(shape, pos):
            if p is None:
                if extent != 1:
                    raise Reject
                continue
            if p <= last or self.shape[p] != extent:
                raise Reject
            last = p
        return tuple(pos)

    def _default(self, shape: Sequence[int]) -> list[int | None]:
        r = len(shape)
        if r > self.n:
            if any(x != 1 for x in shape[: r - self.n]):
                raise Reject
            return [None] * (r - self.n) + self._default(shape[r - self.n:])
        return [None if x == 1 else self.n - r + j for j, x in enumerate(shape)]

    def assign(self, v: SSAValue, pos: Sequence[int | None]) -> None:
        if v in self.pos:
            if tuple(p for p, x in zip(self.pos[v], shape_of(v)) if x != 1) != tuple(
                    p for p, x in zip(pos, shape_of(v)) if x != 1):
                raise Reject
            return
        self.pos[v] = self._check(v, pos)

    def get(self, v: SSAValue) -> tuple[int | None, ...]:
        if v not in self.pos:
            self.assign(v, self._default(shape_of(v)))
        return self.pos[v]

    def broadcast(self, result: SSAValue, operands: Sequence[SSAValue]) -> None:
        """numpy broadcasting: operands right-aligned with the result."""
        out = shape_of(result)
        r = len(out)
        pos: list[int | None] = [None] * r
        for v in operands:
            if v not in self.pos:
                continue
            s = shape_of(v)
            for jj, (x, p) in enumerate(zip(s, self.pos[v])):
                j = jj + r - len(s)
                if x != 1:
                    if pos[j] is None:
                        pos[j] = p
                    elif pos[j] != p:
                        raise Reject
        default = self._default(out)
        pos = [p if p is not None else default[j] for j, p in enumerate(pos)]
        self.assign(result, pos)
        for v in operands:
            if v not in self.pos:
                s = shape_of(v)
                self.assign(v, [None if x == 1 else pos[jj + r - len(s)] for jj, x in enumerate(s)])

    def place(self) -> Space:
        for op in self.req.ops:
            name = op.name
            if name in VIEW_OPS:
                x, y = op.operands[0], op.results[0]
                src = [p for p, e in zip(self.get(x), shape_of(x)) if e != 1]
                it = iter(src)
                self.assign(y, [None if e == 1 else next(it, None) for e in shape_of(y)])
            elif name == "graph.batch_norm":
                x = op.operands[0]
                self.broadcast(op.results[0], [x])
                c = self.pos[x][1] if len(shape_of(x)) > 1 else None
                for p in op.operands[1:]:
                    self.assign(p, [c if e != 1 else None for e in shape_of(p)])
            elif name == "graph.instance_norm":
                x = op.operands[0]
                self.broadcast(op.results[0], [x])
                c = self.pos[x][1]
                for p in op.operands[1:]:
                    self.assign(p, [c if e != 1 else None for e in shape_of(p)])
                self.reduced[op] = frozenset(p for i in range(2, len(shape_of(x)))
                                             if (p := self.pos[x][i]) is not None)
            elif name in REDUCE or name in ROW_OPS:
                x = op.operands[0]
                px = self.get(x)
                axes = _reduce_axes(op, len(px))
                self.reduced[op] = frozenset(px[i] for i in axes if px[i] is not None)
                if name in REDUCE and not op.attrs()["keepdims"] and axes:
                    self.assign(op.results[0], [p for i, p in enumerate(px) if i not in axes])
                elif name in REDUCE or name.startswith("graph.global"):
                    self.assign(op.results[0], [None if i in axes else p for i, p in enumerate(px)])
                else:
                    self.assign(op.results[0], px)
                if name == "graph.layer_norm":
                    for p in op.operands[1:]:
                        s = shape_of(p)
                        r = len(px)
                        self.assign(p, [None if e == 1 else px[j + r - len(s)] for j, e in enumerate(s)])
            elif name == "graph.expand":
                self.broadcast(op.results[0], [op.operands[0]])
            elif name == "graph.pow":
                self.broadcast(op.results[0], list(data_operands(op)))
            elif name == "graph.clip":
                self.broadcast(op.results[0], [op.operands[0]])
                for p in op.operands[1:]:
                    self.broadcast(op.results[0], [p])
            else:
                ins = [v for v in op.operands if v in self.pos] or list(op.operands[:1])
                for v in ins:
                    self.get(v)
                self.broadcast(op.results[0], list(op.operands))
        used = {v for op in self.req.ops for v in data_operands(op)}
        for v in (*self.req.inputs, *self.req.outputs):
            if v in used or v in self.req.outputs:
                self.get(v)
        dims = {v: frozenset(p for p in pos if p is not None) for v, pos in self.pos.items()}
        return Space(tuple(self.shape), dims, self.reduced)


def _collapse(space: Space) -> Space:
    """Merge adjacent canonical dims every value and reduction treats alike; drop unit dims."""
    values = list(space.dims)
    reds = list(space.reduced.items())
    keep = [i for i, x in enumerate(space.shape) if x != 1]

    def sig(i: int) -> tuple:
        return (tuple(i in space.dims[v] for v in values), tuple(i in r for _, r in reds))

    groups: list[list[int]] = []
    for i in keep:
        if groups and sig(groups[-1][-1]) == sig(i):
            groups[-1].append(i)
        else:
            groups.append([i])
    if not groups:
        return Space((1,), {v: frozenset() for v in values}, {op: frozenset() for op, _ in reds})
    new_of = {i: k for k, grp in enumerate(groups) for i in grp}
    shape = tuple(math.prod(space.shape[i] for i in grp) for grp in groups)
    dims = {v: frozenset(new_of[i] for i in d if i in new_of) for v, d in space.dims.items()}
    reduced = {op: frozenset(new_of[i] for i in r if i in new_of) for op, r in reds}
    return Space(shape, dims, reduced)


# ---------------------------------------------------------------------------
# 2-3. Tiles and the body.
# ---------------------------------------------------------------------------


@dataclass
class _Pool:
    """ub buffers of one slot, reused by shape once their value is dead."""

    kb: KernelBuilder
    tag: str
    free: dict[tuple, list[SSAValue]] = field(default_factory=dict)
    count: int = 0

    made: list[tuple[tuple[int, ...], Attribute]] = field(default_factory=list)
    main: list[int] | None = None   # tile extents the buffers are sized for
    ext: list[int] | None = None    # tile extents of the tiles being emitted (a tail's are smaller)

    def get(self, shape: Sequence[int], elt: Attribute) -> SSAValue:
        """A buffer that holds `shape` (a tile of the current extents): sized for the main
        tiles, so the tail tiles reuse the main tiles' buffers through subviews."""
        if self.main is not None and self.ext is not None:
            shape = [m if x == e else x for x, e, m in zip(shape, self.ext, self.main)]
        key = (tuple(ub_shape(shape, elt)), elt)
        bufs = self.free.get(key)
        if bufs:
            return bufs.pop()
        self.count += 1
        self.made.append((tuple(shape), elt))
        return self.kb.alloc(list(key[0]), elt, "ub", f"{self.tag}{self.count}")

    def put(self, buf: SSAValue) -> None:
        t = buf.type
        self.free.setdefault((tuple(t.get_shape()), t.element_type), []).append(buf)


class RowKernel:
    """The row template for one request (see the module docstring)."""

    def __init__(self, req: KernelRequest):
        self.req = req
        for op in req.ops:
            if op.name not in SUPPORTED or len(op.results) != 1:
                raise Reject
            for v in (*op.operands, *op.results):
                if math.prod(shape_of(v)) == 0:
                    raise Reject
            _check_op(op)
            _check_formats(op)
        for v in (*req.inputs, *req.outputs):
            if math.prod(shape_of(v)) == 0:
                raise Reject
        self.space = _collapse(_Placer(req).place())
        self.rd = frozenset().union(*self.space.reduced.values()) if self.space.reduced else frozenset()
        self._profile: list | None = None
        used = {v for op in req.ops for v in data_operands(op)}
        self.scalars = {v: c for v in req.inputs if (c := _scalar_const(v)) is not None}
        self.loaded = [v for v in dict.fromkeys(req.inputs)
                       if (v in used and v not in self.scalars) or v in req.outputs]
        # value -> the value whose buffer it shares (views, identity)
        self.alias: dict[SSAValue, SSAValue] = {}
        for op in req.ops:
            if op.name in VIEW_OPS or (op.name == "graph.expand" and shape_of(op.inputs[0]) == shape_of(op.results[0])):
                src = op.operands[0]
                self.alias[op.results[0]] = self.alias.get(src, src)

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
        shape = list(self.space.shape)
        cap = self.req.device.buffer_bytes["ub"]
        largest = max(math.prod(shape_of(v)) * itemsize(v.type.element_type)
                      for v in (*self.req.inputs, *self.req.outputs))
        want_tiles = max(1, min(self.req.device.vector_cores, largest // MIN_TILE_BYTES))
        max_elems = max(1, math.prod(shape) // want_tiles)

        def fits(ext: list[int]) -> bool:
            return self.measure(ext) <= cap

        k = len(shape)
        for p in range(k):
            ext = [1] * p + shape[p:]
            if math.prod(ext) <= max_elems and fits(ext):
                return ext
            if p in self.rd:
                ext = [1] * p + shape[p:]
                if fits(ext):
                    return ext
                raise Reject  # a row does not fit ub
            ext = [1] * (p + 1) + shape[p + 1:]
            if not fits(ext):
                continue
            inner = math.prod(shape[p + 1:])
            lo, hi = 1, max(1, min(shape[p], max_elems // inner))
            while lo < hi:
                mid = (lo + hi + 1) // 2
                ext[p] = mid
                if fits(ext):
                    lo = mid
                else:
                    hi = mid - 1
            ext[p] = lo
            return ext
        raise Reject

    # -- building -------------------------------------------------------------------------------

    def build(self) -> a.KernelOp:
        self.slots = slots_of(self.req)
        try:
            ext = self.plan()
        except Reject:
            if self.slots == 1:
                raise
            self.slots = 1  # whole rows fit once but not twice: no double buffering
            ext = self.plan()
        pieces = tile_pieces(self.space.shape, ext)
        n_main = math.prod(pieces[0][0])
        if n_main <= self.req.device.vector_cores:
            self.slots = 1  # one tile per block: nothing to overlap
            ext = self.plan()
            pieces = tile_pieces(self.space.shape, ext)
        most = max(math.prod(c) for c, _, _ in pieces)
        block_dim = max(1, min(self.req.device.vector_cores, most))
        kb = KernelBuilder(self.req, "vector", block_dim)
        self._emit(kb, ext, self.slots)
        return mark(kb.finish(), "template", "row")

    def _emit(self, kb: KernelBuilder, ext: list[int], slots: int) -> list[_Pool]:
        req, space = self.req, self.space
        shape = list(space.shape)
        inv = self.invariant_set(ext)
        arg = {v: kb.inputs[i] for i, v in reversed(list(enumerate(req.inputs)))}
        gm = {v: kb.view(arg[v], space.ext(v)) for v in self.loaded}
        outs = [(v, kb.view(kb.outputs[i], space.ext(v))) for i, v in enumerate(req.outputs)]

        # Prologue: tile-invariant inputs and the ops on them, once.
        pro_pool = _Pool(kb, "c")
        pro = _Body(self, kb, pro_pool, ext, {})
        pro_loads = [v for v in self.loaded if v in inv]
        pro_ops = [op for op in req.ops if op.results[0] in inv]
        self.bn_scale_shift = {}
        if pro_loads or pro_ops:
            for v in pro_loads:
                pro.load(v, gm[v], [0] * len(shape))
            kb.sync("MTE2", "V", PROLOGUE_FLAG)
            keep = {v for op in req.ops if op.results[0] not in inv for v in op.operands} | set(req.outputs)
            pro.compute(pro_ops, keep)
            # a batch_norm's scale and shift, when its parameters do not depend on the tile
            for op in req.ops:
                if op.name == "graph.batch_norm" and op.results[0] not in inv \
                        and all(p in inv for p in op.operands[1:]):
                    self.bn_scale_shift[op] = _bn_scale_shift(pro, op, keep=True)
        consts = pro.values

        pieces = tile_pieces(shape, ext)
        bodies = [_Pool(kb, f"s{s}b" if slots > 1 else "b", main=list(ext)) for s in range(slots)]
        var_loads = [v for v in self.loaded if v not in inv]
        var_ops = [op for op in req.ops if op.results[0] not in inv]
        for i, (counts, pext, cut_off) in enumerate(pieces):
            n = math.prod(counts)
            per = ceil_div(n, min(kb.kernel.block_count, n))
            state: dict[int, tuple[_Body, list]] = {}

            def load(tile, s, counts=counts, pext=pext, cut_off=cut_off):
                off = tile_offsets(kb, tile, counts, pext, shape, cut_off)
                bodies[s].ext = list(pext)
                body = _Body(self, kb, bodies[s], pext, dict(consts))
                state[s] = (body, off)
                for v in var_loads:
                    body.load(v, gm[v], off)

            def compute(tile, s):
                body, _ = state[s]
                body.compute(var_ops, set(req.outputs))

            def store(tile, s):
                body, off = state[s]
                for v, dst in outs:
                    te = self.tile_ext(v, body.ext)
                    o = [x if j in space.dims[v] else 0 for j, x in enumerate(off)]
                    kb.copy(body.view(v), kb.tile(dst, o, te))
                body.release_all()

            kb.pipeline(n, per, load, store, compute, slots, last_blocks=i > 0)
        return [pro_pool, *bodies]


def _check_op(op: Operation) -> None:
    """Reject ops whose operands the template cannot take (non-constant pow exponents...)."""
    name = op.name
    if name == "graph.pow":
        elt = op.results[0].type.element_type
        if not is_float(elt) or (_scalar_const(op.operands[1]) is None
                                 and op.operands[1].type.element_type != elt):
            raise Reject
    elif name == "graph.mean" and not is_float(op.results[0].type.element_type):
        raise Reject
    elif name in COMPOSITE_UNARY and name != "graph.cast" and not is_float(op.results[0].type.element_type):
        raise Reject
    elif name == "graph.clip":
        for v in op.operands[1:]:
            if math.prod(shape_of(v)) != 1:
                raise Reject
    elif name == "graph.reduce_log_sum_exp":
        pass


class _Body:
    """The vector ops of one tile (or of the prologue) on the buffers of one pool."""

    def __init__(self, row: RowKernel, kb: KernelBuilder, pool: _Pool, ext: Sequence[int],
                 values: dict[SSAValue, SSAValue]):
        self.row, self.kb, self.pool, self.ext = row, kb, pool, list(ext)
        self.values = values           # graph value -> ub view (this tile)
        self.owned: dict[SSAValue, SSAValue] = {}  # graph value -> ub buffer it owns
        self.scratch: list[SSAValue] = []          # temporaries of the op rule being emitted
        self.temps: dict[SSAValue, SSAValue] = {}  # a temporary's view -> its buffer
        self.dying: set[SSAValue] = set()          # operands whose last use is that op

    # -- buffers --------------------------------------------------------------------------------

    def te(self, v: SSAValue) -> list[int]:
        return self.row.tile_ext(v, self.ext)

    def view(self, v: SSAValue) -> SSAValue:
        v = self.row.alias.get(v, v)
        view = self.values.get(v)
        if view is None and v in self.row.scalars:  # a constant operand no rule folded
            return self.dup(self.row.scalars[v], self.te(v), v.type.element_type)
        return self.values[v]

    def _new(self, shape: Sequence[int], elt: Attribute) -> tuple[SSAValue, SSAValue]:
        buf = self.pool.get(shape, elt)
        return buf, ub_view(self.kb, buf, shape)

    def define(self, v: SSAValue, elt: Attribute | None = None) -> SSAValue:
        """A new buffer for value v (of its tile shape)."""
        buf, view = self._new(self.te(v), elt or v.type.element_type)
        self.owned[v] = buf
        self.values[v] = view
        return view

    def temp(self, shape: Sequence[int], elt: Attribute) -> SSAValue:
        """A temporary of the current op rule (back to the pool when the rule is done, or
        earlier with `drop`)."""
        buf, view = self._new(shape, elt)
        self.scratch.append(buf)
        self.temps[view] = buf
        return view

    def drop(self, view: SSAValue) -> None:
        """Give a temporary of the current rule back to the pool now: the rule's later
        temporaries reuse its bytes (the vector pipe runs in order). Not a temporary: kept."""
        buf = self.temps.pop(view, None)
        if buf is not None and buf in self.scratch:
            self.scratch.remove(buf)
            self.pool.put(buf)

    def release(self, v: SSAValue) -> None:
        buf = self.owned.pop(v, None)
        if buf is not None:
            self.pool.put(buf)

    def release_all(self) -> None:
        for v in list(self.owned):
            self.release(v)

    def load(self, v: SSAValue, gm: SSAValue, off: Sequence[int | SSAValue]) -> None:
        te = self.te(v)
        view = self.define(v)
        o = [x if j in self.row.space.dims[v] else 0 for j, x in enumerate(off)]
        self.kb.copy(self.kb.tile(gm, o, te), view)

    # -- compute -------------------------------------------------------------------------------

    def compute(self, ops: list[Operation], keep: set[SSAValue]) -> None:
        """Emit `ops`; a value's buffer is reused after its last use unless it is in `keep`."""
        alias = self.row.alias
        root = lambda v: alias.get(v, v)  # noqa: E731
        last: dict[SSAValue, int] = {}
        for i, op in enumerate(ops):
            for v in op.operands:
                last[root(v)] = i
        keep_roots = {root(v) for v in keep}
        for i, op in enumerate(ops):
            if op.results[0] in alias:
                continue
            self.dying = {v for v in (root(x) for x in op.operands)
                          if last.get(v) == i and v not in keep_roots and v in self.owned}
            self.scratch, self.temps = [], {}
            emit_op(self, op)
            for buf in self.scratch:
                self.pool.put(buf)
            for v in dict.fromkeys(root(x) for x in op.operands):  # operand order: reproducible
                if v in self.dying:
                    self.release(v)
            r = op.results[0]
            if r not in last and r not in keep_roots:
                self.release(r)  # dead on arrival
        self.dying, self.scratch, self.temps = set(), [], {}

    # -- helpers for the op rules -------------------------------------------------------------

    def operand(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        """v's tile as a buffer of `shape` (broadcast with vbrcb if v is smaller)."""
        view = self.view(v)
        if list(view.type.get_shape()) == list(shape):
            return view
        tmp = self.temp(shape, v.type.element_type)
        self.kb.vec(a.VbrcbOp, view, tmp)
        return tmp

    def result(self, op: Operation, inplace: Sequence[SSAValue] = ()) -> SSAValue:
        """The destination of op: the buffer of a dying operand in `inplace` with the same tile
        (the rule reads it only elementwise-aligned with its writes), else a new buffer."""
        r = op.results[0]
        alias = self.row.alias
        te = self.te(r)
        elt = r.type.element_type
        for v in (alias.get(x, x) for x in inplace):
            buf = self.owned.get(v)
            if v in self.dying and buf is not None and buf.type.element_type == elt \
                    and list(self.values[v].type.get_shape()) == te:
                del self.owned[v]
                self.dying.discard(v)
                self.owned[r] = buf
                self.values[r] = self.values[v]
                return self.values[r]
        return self.define(r)

    def scalar(self, value: float | int, elt: Attribute) -> SSAValue:
        return self.kb.scalar(value, elt)

    def dup(self, value: float | int, shape: Sequence[int], elt: Attribute) -> SSAValue:
        tmp = self.temp(shape, elt)
        self.kb.vec(a.VdupOp, self.scalar(value, elt), tmp)
        return tmp


# ---------------------------------------------------------------------------
# The op rules: each emits the vector ops of one graph op into `body`.
# ---------------------------------------------------------------------------


def emit_op(body: _Body, op: Operation) -> None:
    kb = body.kb
    name = op.name
    r = op.results[0]
    shape = body.te(r)
    elt = r.type.element_type
    scalars = body.row.scalars
    x0 = op.operands[0]

    def opnd(v: SSAValue) -> SSAValue:
        return body.operand(v, shape)

    if name in UNARY:
        x = opnd(x0)
        kb.vec(UNARY[name], x, body.result(op, [x0]))
    elif name in ("graph.sub", "graph.div") and (op.operands[0] in scalars) != (op.operands[1] in scalars):
        x, y = op.operands
        if y in scalars:
            c = scalars[y]
            src = opnd(x)
            dst = body.result(op, [x])
            if name == "graph.sub":
                kb.vec(a.VaddsOp, src, body.scalar(-c, elt), dst)
            elif is_float(elt) and c != 0:
                kb.vec(a.VmulsOp, src, body.scalar(1.0 / c, elt), dst)
            else:
                kb.vec(a.VdivOp, src, body.dup(c, shape, elt), dst)
        else:
            c = scalars[x]
            src = opnd(y)
            dst = body.result(op, [y])
            if name == "graph.sub":
                kb.vec(a.VmulsOp, src, body.scalar(-1, elt), dst)
                kb.vec(a.VaddsOp, dst, body.scalar(c, elt), dst)
            else:
                kb.vec(a.VdivOp, body.dup(c, shape, elt), src, dst)
    elif name in BINARY or name == "graph.mean":
        vname = BINARY.get(name, a.VaddOp)
        consts = [v for v in op.operands if v in scalars]
        tensors = [v for v in op.operands if v not in scalars]
        if not tensors:
            raise LoweringError(f"{op.name}: constant operands only (should have been folded)")
        if consts and a.SCALAR_FORMS.get(vname) is None:
            tensors = list(op.operands)
            consts = []
        srcs = [opnd(v) if v not in scalars else body.dup(scalars[v], shape, elt) for v in tensors]
        dst = body.result(op, tensors if len(srcs) <= 2 else [])
        if len(srcs) == 1:
            if srcs[0] is not dst:
                kb.vec(a.VcopyOp, srcs[0], dst)
        else:
            kb.vec(vname, srcs[0], srcs[1], dst)
            for src in srcs[2:]:
                kb.vec(vname, dst, src, dst)
        for c in consts:
            kb.vec(a.SCALAR_FORMS[vname], dst, body.scalar(scalars[c], elt), dst)
        if name == "graph.mean":
            kb.vec(a.VmulsOp, dst, body.scalar(1.0 / len(op.operands), elt), dst)
    elif name in COMPARE:
        x, y = op.operands
        et = x.type.element_type
        lhs = opnd(x) if x not in scalars else body.dup(scalars[x], shape, et)
        rhs = opnd(y) if y not in scalars else body.dup(scalars[y], shape, et)
        kb.vec(a.VcmpOp, lhs, rhs, body.result(op), mode=StringAttr(COMPARE[name]))
    elif name == "graph.where":
        c, x, y = op.operands
        cv = opnd(c) if c not in scalars else body.dup(scalars[c], shape, i1)
        xv = opnd(x) if x not in scalars else body.dup(scalars[x], shape, elt)
        yv = opnd(y) if y not in scalars else body.dup(scalars[y], shape, elt)
        kb.vec(a.VselectOp, cv, xv, yv, body.result(op, [x, y]))
    elif name == "graph.clip":
        x = opnd(x0)
        dst = body.result(op, [x0])
        cur = x
        for v, form in zip(op.operands[1:], (a.VmaxOp, a.VminOp)):  # the lower bound, then the upper
            if math.prod(shape_of(v)) == 0:
                continue
            if v in scalars:
                kb.vec(a.SCALAR_FORMS[form], cur, body.scalar(scalars[v], elt), dst)
            else:
                kb.vec(form, cur, opnd(v), dst)
            cur = dst
        if cur is not dst:
            kb.vec(a.VcopyOp, x, dst)
    elif name == "graph.prelu":
        x, slope = op.operands
        xv = opnd(x)
        if slope in scalars:
            kb.vec(a.VlreluOp, xv, body.scalar(scalars[slope], elt), body.result(op, [x]))
        else:
            t = body.temp(shape, elt)
            kb.vec(a.VmulOp, xv, opnd(slope), t)
            m = body.temp(shape, i1)
            kb.vec(a.VcmpOp, xv, body.dup(0, shape, elt), m, mode=StringAttr("lt"))
            kb.vec(a.VselectOp, m, t, xv, body.result(op, [x]))
    elif name == "graph.pow" and _scalar_const(op.operands[1]) is None:
        _emit_pow_tensor(body, op, opnd(x0), opnd(op.operands[1]))
    elif name == "graph.pow":
        _emit_pow(body, op, opnd(x0))
    elif name == "graph.expand":
        x = opnd(x0)
        dst = body.result(op, [x0])
        if x is not dst:
            kb.vec(a.VcopyOp, x, dst)
    elif name == "graph.cast":
        kb.vec(a.VcastOp, opnd(x0), body.result(op))
    elif name in COMPOSITE_UNARY:
        _emit_composite(body, op, opnd(x0))
    elif name == "graph.batch_norm":
        _emit_batch_norm(body, op)
    elif name in REDUCE or name in ("graph.global_avg_pool", "graph.global_max_pool"):
        _emit_reduce(body, op)
    elif name in ("graph.softmax", "graph.log_softmax"):
        _emit_softmax(body, op)
    elif name in ("graph.layer_norm", "graph.instance_norm"):
        _emit_norm(body, op)
    else:
        raise LoweringError(f"no vector rule for {name}")


def _reduce_into(body: _Body, src: SSAValue, op: Operation, kind: str, elt: Attribute,
                 dst: SSAValue | None = None) -> SSAValue:
    """vreduce of src over op's reduced dims (kept as 1) into dst or a temp."""
    dims = sorted(body.row.space.reduced[op])
    shape = list(src.type.get_shape())
    out = [1 if i in dims else x for i, x in enumerate(shape)]
    dst = dst if dst is not None else body.temp(out, elt)
    if dims:
        body.kb.vec(a.VreduceOp, src, dst, kind=StringAttr(kind), axes=DenseArrayBase.from_list(i64, dims))
    elif src is not dst:
        body.kb.vec(a.VcopyOp, src, dst)
    return dst


def _count(body: _Body, op: Operation) -> int:
    return math.prod(body.row.space.shape[i] for i in body.row.space.reduced[op])


def _brcb(body: _Body, t: SSAValue, shape: Sequence[int]) -> SSAValue:
    if list(t.type.get_shape()) == list(shape):
        return t
    b = body.temp(shape, t.type.element_type)
    body.kb.vec(a.VbrcbOp, t, b)
    return b


def _emit_reduce(body: _Body, op: Operation) -> None:
    kb = body.kb
    name = op.name
    x = op.operands[0]
    elt = x.type.element_type
    xv = body.view(x)
    full = list(xv.type.get_shape())
    src = xv
    if name in ("graph.reduce_sum_square", "graph.reduce_l2"):
        src = body.temp(full, elt)
        kb.vec(a.VmulOp, xv, xv, src)
    elif name == "graph.reduce_l1":
        src = body.temp(full, elt)
        kb.vec(a.VabsOp, xv, src)
    if name == "graph.reduce_log_sum_exp":
        m = _reduce_into(body, xv, op, "max", elt)
        e = body.temp(full, elt)
        kb.vec(a.VsubOp, xv, _brcb(body, m, full), e)
        kb.vec(a.VexpOp, e, e)
        dst = body.result(op)
        _reduce_into(body, e, op, "sum", elt, dst)
        kb.vec(a.VlogOp, dst, dst)
        kb.vec(a.VaddOp, dst, m, dst)
        return
    kind = "max" if name in ("graph.reduce_max", "graph.global_max_pool") else (
        "min" if name == "graph.reduce_min" else "sum")
    dst = body.result(op)
    _reduce_into(body, src, op, kind, elt, dst)
    if name in ("graph.reduce_mean", "graph.global_avg_pool"):
        kb.vec(a.VmulsOp, dst, body.scalar(1.0 / _count(body, op), elt), dst)
    elif name == "graph.reduce_l2":
        kb.vec(a.VsqrtOp, dst, dst)
    elif name == "graph.reduce_log_sum":
        kb.vec(a.VlogOp, dst, dst)


def _emit_softmax(body: _Body, op: Operation) -> None:
    kb = body.kb
    x = op.operands[0]
    elt = x.type.element_type
    xv = body.view(x)
    full = list(xv.type.get_shape())
    m = _reduce_into(body, xv, op, "max", elt)
    mb = _brcb(body, m, full)
    dst = body.result(op, [x])
    kb.vec(a.VsubOp, xv, mb, dst)                         # d = x - max
    body.drop(mb)  # whole rows must fit ub: at most two row-sized buffers at a time
    if op.name == "graph.softmax":
        kb.vec(a.VexpOp, dst, dst)                        # e = exp(d)
        s = _reduce_into(body, dst, op, "sum", elt)
        kb.vec(a.VdivOp, dst, _brcb(body, s, full), dst)  # e / sum(e)
    else:
        e = body.temp(full, elt)
        kb.vec(a.VexpOp, dst, e)
        s = _reduce_into(body, e, op, "sum", elt)
        body.drop(e)
        kb.vec(a.VlogOp, s, s)
        kb.vec(a.VsubOp, dst, _brcb(body, s, full), dst)  # d - log(sum(exp(d)))


def _emit_norm(body: _Body, op: Operation) -> None:
    """(x - mean) / sqrt(var + eps) * scale + bias over the reduced dims."""
    kb = body.kb
    x = op.operands[0]
    elt = x.type.element_type
    xv = body.view(x)
    full = list(xv.type.get_shape())
    inv_n = 1.0 / _count(body, op)
    mean = _reduce_into(body, xv, op, "sum", elt)
    kb.vec(a.VmulsOp, mean, body.scalar(inv_n, elt), mean)
    dst = body.result(op, [x])
    mb = _brcb(body, mean, full)
    kb.vec(a.VsubOp, xv, mb, dst)                         # d
    body.drop(mb)  # row-sized temporaries one at a time: whole rows must fit ub
    sq = body.temp(full, elt)
    kb.vec(a.VmulOp, dst, dst, sq)
    var = _reduce_into(body, sq, op, "sum", elt)
    body.drop(sq)
    kb.vec(a.VmulsOp, var, body.scalar(inv_n, elt), var)
    kb.vec(a.VaddsOp, var, body.scalar(op.attrs()["epsilon"], elt), var)
    kb.vec(a.VsqrtOp, var, var)
    vb = _brcb(body, var, full)
    kb.vec(a.VdivOp, dst, vb, dst)
    body.drop(vb)
    for param, combine in zip(op.operands[1:], (a.VmulOp, a.VaddOp)):  # scale, then bias
        p = body.operand(param, full)
        kb.vec(combine, dst, p, dst)
        body.drop(p)


def _emit_batch_norm(body: _Body, op: Operation) -> None:
    """y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a (as the graph
    kernel folds it), computed on the parameters' tile - once per kernel, in the prologue,
    when the parameters do not depend on the tile."""
    kb = body.kb
    x = op.operands[0]
    pre = getattr(body.row, "bn_scale_shift", {}).get(op)
    a_, b_ = pre if pre is not None else _bn_scale_shift(body, op, keep=False)
    full = body.te(op.results[0])
    xv = body.operand(x, full)
    dst = body.result(op, [x])
    kb.vec(a.VmulOp, xv, _brcb(body, a_, full), dst)
    kb.vec(a.VaddOp, dst, _brcb(body, b_, full), dst)


def _bn_scale_shift(body: _Body, op: Operation, keep: bool) -> tuple[SSAValue, SSAValue]:
    """a = scale / sqrt(var + eps), b = bias - mean * a on the parameters' tile; `keep`: in
    buffers that stay (the prologue's), else in temporaries of the current rule."""
    kb = body.kb
    x, scale, bias, mean, var = op.operands
    elt = x.type.element_type
    pshape = body.te(scale)
    sv, bv, mv, vv = (body.operand(p, pshape) for p in (scale, bias, mean, var))

    def buf() -> SSAValue:
        if keep:
            return ub_view(kb, body.pool.get(pshape, elt), pshape)
        return body.temp(pshape, elt)

    a_ = buf()
    kb.vec(a.VaddsOp, vv, body.scalar(op.attrs()["epsilon"], elt), a_)
    kb.vec(a.VsqrtOp, a_, a_)
    kb.vec(a.VdivOp, sv, a_, a_)
    b_ = buf()
    kb.vec(a.VmulOp, mv, a_, b_)
    kb.vec(a.VsubOp, bv, b_, b_)
    return a_, b_


def _emit_pow(body: _Body, op: Operation, x: SSAValue) -> None:
    kb = body.kb
    elt = op.results[0].type.element_type
    c = float(_scalar_const(op.operands[1]))
    dst = body.result(op, [op.operands[0]])
    if c == 1:
        if x is not dst:
            kb.vec(a.VcopyOp, x, dst)
    elif c == 2:
        kb.vec(a.VmulOp, x, x, dst)
    elif c == 0.5:
        kb.vec(a.VsqrtOp, x, dst)
    elif c == -1:
        kb.vec(a.VrecOp, x, dst)
    elif c == 3:
        t = body.temp(list(x.type.get_shape()), elt)
        kb.vec(a.VmulOp, x, x, t)
        kb.vec(a.VmulOp, t, x, dst)
    elif c == 0:
        kb.vec(a.VdupOp, body.scalar(1, elt), dst)
    else:
        # exp(c * log x): NaN for x < 0, as powf for a non-integer exponent
        kb.vec(a.VlogOp, x, dst)
        kb.vec(a.VmulsOp, dst, body.scalar(c, elt), dst)
        kb.vec(a.VexpOp, dst, dst)


def _emit_pow_tensor(body: _Body, op: Operation, x: SSAValue, y: SSAValue) -> None:
    """x ** y elementwise: exp(y * log|x|), negated for a negative base and an odd integer
    exponent, NaN for a negative base and a non-integer one, 1 for y = 0 (as powf)."""
    kb = body.kb
    elt = op.results[0].type.element_type
    shape = list(x.type.get_shape())
    S = lambda v: body.scalar(v, elt)  # noqa: E731
    r = body.temp(shape, elt)
    kb.vec(a.VabsOp, x, r)
    kb.vec(a.VlogOp, r, r)
    kb.vec(a.VmulOp, r, y, r)
    kb.vec(a.VexpOp, r, r)                                   # |x| ** y
    t = body.temp(shape, elt)
    is_int, odd, neg = (body.temp(shape, i1) for _ in range(3))
    kb.vec(a.VfloorOp, y, t)
    kb.vec(a.VcmpOp, t, y, is_int, mode=StringAttr("eq"))    # y integral
    kb.vec(a.VmulsOp, y, S(0.5), t)
    u = body.temp(shape, elt)
    kb.vec(a.VfloorOp, t, u)
    kb.vec(a.VcmpOp, u, t, odd, mode=StringAttr("ne"))       # y / 2 not integral: odd
    kb.vec(a.VnegOp, r, t)
    kb.vec(a.VselectOp, odd, t, r, t)                        # (-1) ** y * |x| ** y
    kb.vec(a.VdupOp, S(math.nan), u)
    kb.vec(a.VselectOp, is_int, t, u, t)
    kb.vec(a.VcmpOp, x, body.dup(0, shape, elt), neg, mode=StringAttr("lt"))
    dst = body.result(op, [op.operands[0]])
    kb.vec(a.VselectOp, neg, t, r, dst)
    kb.vec(a.VcmpOp, y, body.dup(0, shape, elt), neg, mode=StringAttr("eq"))
    kb.vec(a.VselectOp, neg, body.dup(1, shape, elt), dst, dst)


def _emit_composite(body: _Body, op: Operation, x: SSAValue) -> None:
    """Activations made of several vector ops (the graph kernel's formula, op for op)."""
    kb = body.kb
    name = op.name
    elt = op.results[0].type.element_type
    shape = list(x.type.get_shape())
    attrs = op.attrs()
    x0 = op.operands[0]
    S = lambda v: body.scalar(v, elt)  # noqa: E731

    def tmp() -> SSAValue:
        return body.temp(shape, elt)

    def softplus(src: SSAValue, dst: SSAValue) -> None:
        # max(x, 0) + log(1 + exp(-|x|)): never overflows
        t = tmp()
        kb.vec(a.VabsOp, src, t)
        kb.vec(a.VmulsOp, t, S(-1), t)
        kb.vec(a.VexpOp, t, t)
        kb.vec(a.VaddsOp, t, S(1), t)
        kb.vec(a.VlogOp, t, t)
        kb.vec(a.VreluOp, src, dst)
        kb.vec(a.VaddOp, dst, t, dst)

    def select(mode: str, threshold: float, yes: SSAValue, no: SSAValue, dst: SSAValue) -> None:
        m = body.temp(shape, i1)
        kb.vec(a.VcmpOp, x, body.dup(threshold, shape, elt), m, mode=StringAttr(mode))
        kb.vec(a.VselectOp, m, yes, no, dst)

    if name == "graph.leaky_relu":
        kb.vec(a.VlreluOp, x, S(attrs["alpha"]), body.result(op, [x0]))
    elif name == "graph.softsign":
        t = tmp()
        kb.vec(a.VabsOp, x, t)
        kb.vec(a.VaddsOp, t, S(1), t)
        kb.vec(a.VdivOp, x, t, body.result(op, [x0]))
    elif name in ("graph.hard_sigmoid", "graph.hard_swish"):
        alpha, beta = (attrs["alpha"], attrs["beta"]) if name == "graph.hard_sigmoid" else (1 / 6, 0.5)
        t = tmp() if name == "graph.hard_swish" else body.result(op, [x0])
        kb.vec(a.VmulsOp, x, S(alpha), t)
        kb.vec(a.VaddsOp, t, S(beta), t)
        kb.vec(a.VmaxsOp, t, S(0), t)
        kb.vec(a.VminsOp, t, S(1), t)
        if name == "graph.hard_swish":
            kb.vec(a.VmulOp, x, t, body.result(op, [x0]))
    elif name == "graph.softplus":
        softplus(x, body.result(op))
    elif name == "graph.mish":
        t = tmp()
        softplus(x, t)
        kb.vec(a.VtanhOp, t, t)
        kb.vec(a.VmulOp, x, t, body.result(op, [x0]))
    elif name in ("graph.elu", "graph.selu", "graph.celu"):
        alpha = attrs["alpha"]
        t = tmp()
        if name == "graph.celu":
            kb.vec(a.VmulsOp, x, S(1 / alpha), t)
            kb.vec(a.VexpOp, t, t)
        else:
            kb.vec(a.VexpOp, x, t)
        kb.vec(a.VaddsOp, t, S(-1), t)
        kb.vec(a.VmulsOp, t, S(alpha), t)
        dst = body.result(op)
        if name == "graph.celu":
            kb.vec(a.VminsOp, t, S(0), t)
            kb.vec(a.VreluOp, x, dst)
            kb.vec(a.VaddOp, dst, t, dst)
        else:
            select("gt", 0, x, t, dst)
            if name == "graph.selu":
                kb.vec(a.VmulsOp, dst, S(attrs["gamma"]), dst)
    elif name == "graph.gelu":
        t = tmp()
        if attrs["approximate"] == "tanh":
            kb.vec(a.VmulOp, x, x, t)
            kb.vec(a.VmulOp, t, x, t)
            kb.vec(a.VmulsOp, t, S(0.044715), t)
            kb.vec(a.VaddOp, t, x, t)
            kb.vec(a.VmulsOp, t, S(math.sqrt(2 / math.pi)), t)
            kb.vec(a.VtanhOp, t, t)
        else:
            kb.vec(a.VmulsOp, x, S(1 / math.sqrt(2)), t)
            kb.vec(a.VerfOp, t, t)
        kb.vec(a.VaddsOp, t, S(1), t)
        dst = body.result(op, [x0])
        kb.vec(a.VmulOp, x, t, dst)
        kb.vec(a.VmulsOp, dst, S(0.5), dst)
    elif name == "graph.shrink":
        lambd, bias = attrs["lambd"], attrs["bias"]
        lo, hi = tmp(), tmp()
        kb.vec(a.VaddsOp, x, S(bias), lo)
        kb.vec(a.VaddsOp, x, S(-bias), hi)
        dst = body.result(op)
        select("gt", lambd, hi, body.dup(0, shape, elt), dst)
        select("lt", -lambd, lo, dst, dst)
    elif name == "graph.thresholded_relu":
        select("gt", attrs["alpha"], x, body.dup(0, shape, elt), body.result(op))
    else:
        raise LoweringError(f"no vector rule for {name}")


# ---------------------------------------------------------------------------
# Pooling: channels innermost, one strided window view per kernel offset.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Band:
    """A run of bands of output rows that share one geometry (so one loop covers them)."""

    first: int       # index of the first band
    count: int       # bands in the run
    rows: int        # output rows per band
    in_rows: int     # input rows read per band
    in_lo: int       # first input row of the first band
    plane_row: int   # plane row the first input row goes to
    mask: tuple[int, int]  # plane rows [lo, hi) counted by an average


def _pool_bands(oh: int, toh: int, h: int, sh: int, kh: int, dh: int, pt: int, pb: int,
                include_pad: bool) -> list[_Band]:
    bands: list[_Band] = []
    for b in range(ceil_div(oh, toh)):
        rows = min(toh, oh - b * toh)
        span = (rows - 1) * sh + (kh - 1) * dh + 1
        top = b * toh * sh                      # padded row of the band's first window row
        lo, hi = max(0, top - pt), min(h, top - pt + span)
        plane_row = lo + pt - top
        if include_pad:
            mask = (max(0, -top), min(span, h + pt + pb - top))
        else:
            mask = (plane_row, plane_row + hi - lo)
        sig = (rows, hi - lo, plane_row, mask)
        prev = bands[-1] if bands else None
        if prev is not None and (prev.rows, prev.in_rows, prev.plane_row, prev.mask) == sig \
                and prev.in_lo + prev.count * toh * sh == lo:
            bands[-1] = _Band(prev.first, prev.count + 1, rows, hi - lo, prev.in_lo, plane_row, mask)
        else:
            bands.append(_Band(b, 1, rows, hi - lo, lo, plane_row, mask))
    return bands


def _pool_geometry(op: Operation) -> dict | None:
    """The pool's 2-d geometry (a 1-d pool is H = 1) on its logical shapes, and how the
    channels are stored: plain NCHW, or NC1HWC0 (`blocked`: the C0 lanes already innermost,
    `nc` then counts N * C1 * C0 lanes, padding included)."""
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
    return dict(nc=n * c, h=h, w=w, oh=oh, ow=ow, kh=k[0], kw=k[1], sh=strides[0], sw=strides[1],
                dh=dil[0], dw=dil[1], pt=pt, pl=pl, pb=pb, pr=pr, wp=wp, blocked=blocked)


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


def build_pool(req: KernelRequest) -> a.KernelOp | None:
    """max_pool / avg_pool (1-d, 2-d; NCHW or NC1HWC0). A tile is (`gt` channel groups of
    `cg` lanes, a band of output rows) and works on a padded plane [gt, rows, Wp, c0] with
    the channels innermost, the layout NC1HWC0 stores (and Ascend's pooling kernels use):

    * NCHW: the lanes are groups of `cg` <= c0 channels (c0 = 32 bytes of them); copy the
      input rows in, vdup the plane with the pad value and vtranspose the rows into it;
      vtranspose the result back before copying it out;
    * NC1HWC0: a group is one (n, c1) slab of C0 lanes, already innermost: one DMA writes
      the input rows into the plane's interior, vdup fills only its padding border, and the
      result tile is copied out as it is (the padded lanes are pooled as don't-care data).

    Then one vmax / vadd per kernel offset of the strided window view
    `plane[:, i*dh::sh, j*dw::sw, :]`; for an average, the same sums over a 0/1 mask plane
    give the divisor."""
    (op,) = req.ops
    if req.inputs[0] is not op.inputs[0] or len(req.outputs) != 1:
        return None
    G = _pool_geometry(op)
    if G is None:
        return None
    elt = op.inputs[0].type.element_type
    if not is_float(elt) or G["nc"] * G["oh"] * G["ow"] == 0:
        return None
    blocked = G["blocked"]
    is_max = op.name == "graph.max_pool"
    include_pad = not is_max and bool(op.attrs().get("count_include_pad", 0))
    c0 = formats.c0_of(elt) if blocked else block_elems(elt)
    cg = c0 if blocked else max(d for d in range(1, c0 + 1) if G["nc"] % d == 0)
    groups = G["nc"] // cg
    item = itemsize(elt)
    wpad = round_up(G["w"], c0)
    opad = round_up(G["ow"], c0)

    def span_of(rows: int) -> int:
        return (rows - 1) * G["sh"] + (G["kh"] - 1) * G["dh"] + 1

    def need(gt: int, toh: int) -> int:
        span = span_of(toh)
        per_group = span * G["wp"] * c0 + toh * G["ow"] * c0            # plane, acc
        if not blocked:
            per_group += c0 * span * wpad + c0 * toh * opad             # rows in, rows out
        n = gt * per_group
        if not is_max:
            n += span * G["wp"] * c0 + toh * G["ow"] * c0 * (1 + gt)    # mask, counts
        return n * item

    cap = req.device.buffer_bytes["ub"]
    want = min(req.device.vector_cores, max(1, G["nc"] * G["oh"] * G["ow"] * item // MIN_TILE_BYTES))
    choice = None
    for slots in ((2, 1) if slots_of(req) > 1 else (1,)):
        room = cap // slots
        if need(1, G["oh"]) <= room:
            gt = 1
            while gt < groups and need(gt + 1, G["oh"]) <= room and ceil_div(groups, gt + 1) >= want:
                gt += 1
            choice = (slots, gt, G["oh"])
        else:
            toh = G["oh"]
            while toh > 1 and need(1, toh) > room:
                toh = toh // 2 if toh > 16 else toh - 1
            if need(1, toh) <= room:
                choice = (slots, 1, toh)
        if choice:
            break
    if choice is None:
        return None  # one output row of a channel group does not fit ub
    slots, gt, toh = choice
    if gt == 1 and groups * ceil_div(G["oh"], toh) < want:
        toh = max(1, min(toh, ceil_div(G["oh"], ceil_div(want, groups))))
    span = span_of(toh)
    bands = _pool_bands(G["oh"], toh, G["h"], G["sh"], G["kh"], G["dh"], G["pt"], G["pb"], include_pad)
    gpieces = [(0, groups // gt, gt)] + ([(groups // gt * gt, 1, groups % gt)] if groups % gt else [])
    pieces = [(gp, band) for gp in gpieces for band in bands]
    most = max(gp[1] * band.count for gp, band in pieces)
    if most <= 1:
        slots = 1
    kb = KernelBuilder(req, "vector", max(1, min(req.device.vector_cores, most)))
    if blocked:  # [N, C1, H, W, C0] -> one [H, W, C0] slab per group
        x = kb.view(kb.inputs[0], [groups, G["h"], G["w"], c0])
        y = kb.view(kb.outputs[0], [groups, G["oh"], G["ow"], c0])
    else:
        x = kb.view(kb.inputs[0], [groups, cg, G["h"], G["w"]])
        y = kb.view(kb.outputs[0], [groups, cg, G["oh"], G["ow"]])
    fill = kb.scalar(-math.inf if is_max else 0.0, elt)
    bufs = []
    for s in range(slots):
        sfx = str(s) if slots > 1 else ""
        bufs.append(dict(
            xin=None if blocked else kb.alloc([gt, c0, span, wpad], elt, "ub", "rows" + sfx),
            plane=kb.alloc([gt, span, G["wp"], c0], elt, "ub", "plane" + sfx),
            acc=kb.alloc([gt, toh, G["ow"], c0], elt, "ub", "acc" + sfx),
            out=None if blocked else kb.alloc([gt, c0, toh, opad], elt, "ub", "out" + sfx),
            mask=None if is_max else kb.alloc([1, span, G["wp"], c0], elt, "ub", "mask" + sfx),
            cnt=None if is_max else kb.alloc([1, toh, G["ow"], c0], elt, "ub", "cnt" + sfx),
            cntb=None if is_max else kb.alloc([gt, toh, G["ow"], c0], elt, "ub", "cntb" + sfx),
        ))
    perm_in = DenseArrayBase.from_list(i64, [0, 2, 3, 1])
    perm_out = DenseArrayBase.from_list(i64, [0, 3, 1, 2])

    def windows(plane: SSAValue, n: int, rows: int, dst: SSAValue, combine: str) -> None:
        for i in range(G["kh"]):
            for j in range(G["kw"]):
                win = kb.tile(plane, [0, i * G["dh"], j * G["dw"], 0], [n, rows, G["ow"], cg], [1, G["sh"], G["sw"], 1])
                if i == 0 and j == 0:
                    kb.vec(a.VcopyOp, win, dst)
                else:
                    kb.vec(combine, dst, win, dst)

    for index, ((g0, ntiles_g, n), band) in enumerate(pieces):
        count = ntiles_g * band.count
        per = ceil_div(count, min(kb.kernel.block_count, count))
        rows, in_rows = band.rows, band.in_rows
        band_span = span_of(rows)
        interior = [n, in_rows, G["w"], cg]  # where the input rows go in the plane
        state: dict[int, tuple] = {}

        def load(t, s, ntiles_g=ntiles_g, band=band, g0=g0, n=n, in_rows=in_rows, interior=interior):
            g_, b_ = kb.delinearize(t, [ntiles_g, band.count])
            grp = kb.add(kb.mul(g_, n), g0)
            in_lo = kb.add(kb.mul(b_, toh * G["sh"]), band.in_lo)
            oh0 = kb.mul(kb.add(b_, band.first), toh)
            state[s] = (grp, oh0)
            if not in_rows:
                return
            if blocked:
                kb.copy(kb.tile(x, [grp, in_lo, 0, 0], interior),
                        kb.tile(bufs[s]["plane"], [0, band.plane_row, G["pl"], 0], interior))
            else:
                kb.copy(kb.tile(x, [grp, 0, in_lo, 0], [n, cg, in_rows, G["w"]]),
                        ub_view(kb, bufs[s]["xin"], [n, cg, in_rows, G["w"]]))

        def compute(t, s, band=band, n=n, rows=rows, in_rows=in_rows, band_span=band_span, interior=interior):
            b = bufs[s]
            plane = kb.tile(b["plane"], [0, 0, 0, 0], [n, band_span, G["wp"], cg])
            if blocked:
                _fill_border(kb, plane, fill, (band.plane_row, band.plane_row + in_rows),
                             (G["pl"], G["pl"] + G["w"]))
            else:
                kb.vec(a.VdupOp, fill, plane)
                if in_rows:
                    kb.vec(a.VtransposeOp, ub_view(kb, b["xin"], [n, cg, in_rows, G["w"]]),
                           kb.tile(plane, [0, band.plane_row, G["pl"], 0], interior), perm=perm_in)
            acc = kb.tile(b["acc"], [0, 0, 0, 0], [n, rows, G["ow"], cg])
            windows(plane, n, rows, acc, a.VmaxOp if is_max else a.VaddOp)
            if not is_max:
                mask = kb.tile(b["mask"], [0, 0, 0, 0], [1, band_span, G["wp"], cg])
                kb.vec(a.VdupOp, kb.scalar(0.0, elt), mask)
                lo, hi = band.mask
                c_lo, c_hi = (0, G["pl"] + G["w"] + G["pr"]) if include_pad else (G["pl"], G["pl"] + G["w"])
                if hi > lo:
                    kb.vec(a.VdupOp, kb.scalar(1.0, elt), kb.tile(mask, [0, lo, c_lo, 0], [1, hi - lo, c_hi - c_lo, cg]))
                cnt = kb.tile(b["cnt"], [0, 0, 0, 0], [1, rows, G["ow"], cg])
                windows(mask, 1, rows, cnt, a.VaddOp)
                if n > 1:
                    cntb = kb.tile(b["cntb"], [0, 0, 0, 0], [n, rows, G["ow"], cg])
                    kb.vec(a.VbrcbOp, cnt, cntb)
                    cnt = cntb
                kb.vec(a.VdivOp, acc, cnt, acc)
            if not blocked:
                kb.vec(a.VtransposeOp, acc, ub_view(kb, b["out"], [n, cg, rows, G["ow"]]), perm=perm_out)

        def store(t, s, n=n, rows=rows):
            grp, oh0 = state[s]
            if blocked:
                box = [n, rows, G["ow"], cg]
                kb.copy(kb.tile(bufs[s]["acc"], [0, 0, 0, 0], box), kb.tile(y, [grp, oh0, 0, 0], box))
            else:
                kb.copy(ub_view(kb, bufs[s]["out"], [n, cg, rows, G["ow"]]),
                        kb.tile(y, [grp, 0, oh0, 0], [n, cg, rows, G["ow"]]))

        kb.pipeline(count, per, load, store, compute, slots, last_blocks=index % 2 == 1)
    return mark(kb.finish(), "template", "pool")


def build_lrn(req: KernelRequest) -> a.KernelOp | None:
    """x / (bias + alpha/size * sum of x^2 over `size` neighbouring channels) ** beta, per tile
    [C, tr] of one image: the squares go into a zero-padded [C + size - 1, tr] buffer and the
    window sum is `size` vadds of row-shifted views of it. On NC1HWC0 the tile [C1, tr, C0]
    is vtransposed to [C1 * C0, tr] first (channels as rows; the squares of the padding lanes
    are left zero, as ONNX's out-of-range channels) and back before it is stored."""
    (op,) = req.ops
    t = op.inputs[0].type
    xs = formats.logical_shape(t)
    elt = t.element_type
    blocked = formats.storage_of(t) == formats.NC1HWC0
    if formats.is_formatted(t) and not (blocked and formats.origin_of(t) == formats.NCHW):
        return None
    if len(xs) < 3 or not is_float(elt) or math.prod(xs) == 0 or req.inputs[0] is not op.inputs[0]:
        return None
    attrs = op.attrs()
    size = attrs["size"]
    lo = (size - 1) // 2
    n, c, r = xs[0], xs[1], math.prod(xs[2:])
    c1, c0 = (shape_of(op.inputs[0])[1], shape_of(op.inputs[0])[4]) if blocked else (c, 1)
    cp = c1 * c0  # rows of a tile: the channels, padding lanes included
    item = itemsize(elt)
    slots = slots_of(req)
    cap = req.device.buffer_bytes["ub"]

    def need(tr: int) -> int:
        lanes = c1 * tr * c0 if blocked else 0
        return ((3 * cp + size - 1) * round_up(tr, block_elems(elt)) + lanes) * item

    tr = r
    while tr > 1 and need(tr) * slots > cap:
        tr = max(1, tr // 2)
    if need(tr) * slots > cap:
        return None
    want = min(req.device.vector_cores, max(1, n * cp * r * item // MIN_TILE_BYTES))
    if n * ceil_div(r, tr) < want:
        tr = max(block_elems(elt), ceil_div(r, ceil_div(want, n)))
        tr = min(tr, r)
    shape = [n, r]
    ext = [1, tr]
    pieces = tile_pieces(shape, ext)
    if max(math.prod(cn) for cn, _, _ in pieces) <= 1:
        slots = 1
    kb = KernelBuilder(req, "vector", max(1, min(req.device.vector_cores, max(math.prod(cn) for cn, _, _ in pieces))))
    if blocked:
        x = kb.view(kb.inputs[0], [n, c1, r, c0])
        y = kb.view(kb.outputs[0], [n, c1, r, c0])
    else:
        x = kb.view(kb.inputs[0], [n, c, r])
        y = kb.view(kb.outputs[0], [n, c, r])
    trp = round_up(tr, block_elems(elt))
    sfx = [str(s) if slots > 1 else "" for s in range(slots)]
    bufs = [dict(x=kb.alloc([cp, trp], elt, "ub", f"x{sfx[s]}"),
                 sq=kb.alloc([cp + size - 1, trp], elt, "ub", f"sq{sfx[s]}"),
                 acc=kb.alloc([cp, trp], elt, "ub", f"acc{sfx[s]}"),
                 lanes=kb.alloc([1, c1, tr, c0], elt, "ub", f"lanes{sfx[s]}") if blocked else None)
            for s in range(slots)]
    to_rows = DenseArrayBase.from_list(i64, [0, 1, 3, 2])
    S = lambda v: kb.scalar(v, elt)  # noqa: E731

    def rows_view(buf: SSAValue, w: int) -> SSAValue:
        """The [1, C, w] channel rows of a [C, trp] buffer ([1, C1, C0, w] when blocked): the
        image's [1, C, w] box of gm without a rank-reducing subview (C or w may be 1)."""
        if blocked:
            return kb.tile(kb.view(buf, [1, c1, c0, trp]), [0, 0, 0, 0], [1, c1, c0, w])
        return kb.tile(kb.view(buf, [1, c, trp]), [0, 0, 0], [1, c, w])

    def lanes_view(s: int, w: int) -> SSAValue:
        return kb.tile(bufs[s]["lanes"], [0, 0, 0, 0], [1, c1, w, c0])

    for index, (counts, pext, start) in enumerate(pieces):
        n_t = math.prod(counts)
        per = ceil_div(n_t, min(kb.kernel.block_count, n_t))
        w = pext[1]
        state: dict[int, list] = {}

        def load(t, s, counts=counts, pext=pext, start=start, w=w):
            off = tile_offsets(kb, t, counts, pext, shape, start)
            state[s] = off
            if blocked:
                kb.copy(kb.tile(x, [off[0], 0, off[1], 0], [1, c1, w, c0]), lanes_view(s, w))
            else:
                kb.copy(kb.tile(x, [off[0], 0, off[1]], [1, c, w]), rows_view(bufs[s]["x"], w))

        def compute(t, s, w=w):
            b = bufs[s]
            if blocked:
                kb.vec(a.VtransposeOp, lanes_view(s, w), rows_view(b["x"], w), perm=to_rows)
            xv = ub_view(kb, b["x"], [cp, w])
            sq = kb.tile(b["sq"], [0, 0], [cp + size - 1, w])
            acc = ub_view(kb, b["acc"], [cp, w])
            real = ub_view(kb, b["x"], [c, w])
            kb.vec(a.VdupOp, S(0.0), sq)
            kb.vec(a.VmulOp, real, real, kb.tile(sq, [lo, 0], [c, w]))
            kb.vec(a.VcopyOp, kb.tile(sq, [0, 0], [cp, w]), acc)
            for j in range(1, size):
                kb.vec(a.VaddOp, acc, kb.tile(sq, [j, 0], [cp, w]), acc)
            kb.vec(a.VmulsOp, acc, S(attrs["alpha"] / size), acc)
            kb.vec(a.VaddsOp, acc, S(attrs["bias"]), acc)
            kb.vec(a.VlogOp, acc, acc)                      # (..) ** beta = exp(beta * log(..))
            kb.vec(a.VmulsOp, acc, S(attrs["beta"]), acc)
            kb.vec(a.VexpOp, acc, acc)
            kb.vec(a.VdivOp, xv, acc, acc)
            if blocked:
                kb.vec(a.VtransposeOp, rows_view(b["acc"], w), lanes_view(s, w), perm=to_rows)

        def store(t, s, w=w):
            off = state[s]
            if blocked:
                kb.copy(lanes_view(s, w), kb.tile(y, [off[0], 0, off[1], 0], [1, c1, w, c0]))
            else:
                kb.copy(rows_view(bufs[s]["acc"], w), kb.tile(y, [off[0], 0, off[1]], [1, c, w]))

        kb.pipeline(n_t, per, load, store, compute, slots, last_blocks=index > 0)
    return mark(kb.finish(), "template", "lrn")


# ---------------------------------------------------------------------------
# Entry point.
# ---------------------------------------------------------------------------


POOL_BUILDERS: dict[str, Callable[[KernelRequest], a.KernelOp | None]] = {
    "graph.max_pool": build_pool, "graph.avg_pool": build_pool, "graph.lrn": build_lrn,
}


def try_build(req: KernelRequest) -> a.KernelOp | None:
    if not req.ops:
        return None
    if len(req.ops) == 1 and req.ops[0].name in POOL_BUILDERS:
        return POOL_BUILDERS[req.ops[0].name](req)
    if all(op.name in VIEW_OPS for op in req.ops):
        return None  # a copy: the data template
    try:
        return RowKernel(req).build()
    except Reject:
        return None
