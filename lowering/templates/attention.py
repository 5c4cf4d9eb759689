"""The attention kernel: graph.attention as one `mix` kernel, the FlashAttention idea.

Per work item - a (batch, head, query tile) of `mq` rows, distributed over the AI cores - the
kernel walks the key tiles of `nk` keys:

    S   = Q_t K_j^T                      cube: l1 -> l0a (Q, once) / l0b (K^T), mmad into l0c
    S   = S * scale + mask (+ causal)    vector, f32
    m'  = max(m, rowmax S); a = exp(m - m'); P = exp(S - m'); l = l * a + rowsum P; m = m'
    O   = O * a + P V_j                  cube for P V_j (P rounded to the input type), vector for O
    out = O / l

O, m and l stay in ub (f32) for the whole query tile; the score matrix exists only as one
[mq, nk] tile at a time. The 910B model has no l0c -> ub or ub -> l1 path (the cube and the
vector unit are separate cores that exchange data through gm), so the tile crosses through
gm as the cube epilogue's does: FIX writes S (f32) into a per-block scratch tile, MTE2 brings
it into ub; MTE3 writes P into a per-block scratch tile that MTE2 brings into l1; FIX writes
P V_j (f32) into a third one for the vector unit. The scratch is the kernel's own
(`geir.scratch`): blocks x [mq, nk] (S, P) and blocks x [mq, Dv] (P V), never [S, L].

K and V tiles are loaded into l1 ahead of their use: the loop over key tiles alternates two
l1 slots and prefetches tile j + 1 while tile j computes; the first (partial) tile and the
at most two causal diagonal tiles have slots of their own, loaded when the work item starts.

Causal attention (query i sees keys j <= i + L - S): key tiles no query of the tile sees are
skipped; tiles every query sees need no mask; the diagonal ones add a band computed on the
vector unit from a `c - r` tile (built once per block) and the tile's static diagonal
offset. Static offsets need the query tile to equal the key tile (`mq == nk`) when there is
more than one query tile; the key tiles are then [0, L mod nk) first and whole tiles after.

Limits (the op then runs the reference fallback): a mask whose last dim is not L, element
types other than f16 / bf16 / f32, head dims whose tiles do not fit the buffers.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import StringAttr, UnitAttr, f32
from xdsl.ir import Attribute, SSAValue

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.dialects import formats as L
from geir.dialects import graph as g
from geir.lowering.templates.common import (
    KernelBuilder,
    KernelRequest,
    LoweringError,
    ceil_div,
    itemsize,
    round_up,
    row_elems,
    shape_of,
)
from geir.lowering.templates.cube.loops import Index, distribute
from geir.target import op_info
from geir.target.device import dtype_name
from geir.ir.types import to_dtype

FRACTAL = a.FRACTAL
NEG = -1.0e30
"""What a masked score becomes (finite: a tile whose scores are all masked gives exp(0) = 1
and is wiped out by the next tile's rescale exp(NEG - m) = 0, never NaN)."""

TILE_CHOICES = (128, 64, 32, 16)
KEY_CHOICES = (256, 128, 64, 32, 16)

# flag ids: 0..4 the K/V slots (MTE2 -> MTE1 arrived, MTE1 -> MTE2 free), 6 the hand-offs
LOOP_SLOTS, FIRST_SLOT, DIAG_SLOTS, CHAIN = (0, 1), 2, (3, 4), 6


@dataclass(frozen=True)
class AttentionPlan:
    """What the kernel computes: shapes, element type, scale, causal, the mask's broadcast."""

    B: int
    H: int
    Hkv: int
    S: int
    L: int
    D: int
    Dv: int
    elt: Attribute
    scale: float
    causal: bool
    args: tuple[int, ...]  # kernel argument of q, k, v (and the mask)
    mask: tuple[int, int, int] | None  # (batch extent, head extent, row extent) of the mask, 1 or full

    @property
    def off(self) -> int:
        """Query i sees keys j <= i + off (causal)."""
        return self.L - self.S


def plan_request(req: KernelRequest) -> AttentionPlan | None:
    if len(req.ops) != 1 or not isinstance(req.ops[0], g.AttentionOp) or len(req.outputs) != 1:
        return None
    op = req.ops[0]
    if any(L.is_formatted(v.type) for v in (*op.operands, *op.results)):
        return None
    elt = op.q.type.element_type
    if not op_info.ATTENTION.takes_type(elt):
        return None
    B, H, S, D = shape_of(op.q)
    _, Hkv, Lk, _ = shape_of(op.k)
    Dv = shape_of(op.v)[3]
    mask = None
    if op.mask is not None:
        m = (1,) * (4 - len(shape_of(op.mask))) + shape_of(op.mask)
        if m[3] != Lk:  # a mask broadcast along the keys: not tiled yet
            return None
        mask = (m[0], m[1], m[2])
    attrs = op.attrs()
    try:
        args = tuple(req.inputs.index(v) for v in op.operands)
    except ValueError:
        return None
    return AttentionPlan(B, H, Hkv, S, Lk, D, Dv, elt, float(attrs["scale"]), bool(attrs["causal"]), args, mask)


@dataclass(frozen=True)
class AttentionTiling:
    mq: int      # query rows of a work item
    nk: int      # keys of a tile
    blocks: int
    estimate_us: float


def _buffers(plan: AttentionPlan, mq: int, nk: int) -> dict[str, int]:
    """Bytes each space needs for a tiling (the kernel allocates exactly these)."""
    e = itemsize(plan.elt)
    mqp, nkp = round_up(mq, FRACTAL), round_up(nk, FRACTAL)
    dp, dvp = round_up(plan.D, FRACTAL), round_up(plan.Dv, FRACTAL)
    wide = max(row_elems(nk, f32), row_elems(plan.Dv, f32))
    ub = 2 * mq * wide * 4 + mq * row_elems(plan.Dv, f32) * 4 + 5 * mq * 32
    if plan.elt != f32:
        ub += mq * max(row_elems(nk, plan.elt), row_elems(plan.Dv, plan.elt)) * e
    if plan.mask is not None and plan.mask[2] == 1:
        ub += row_elems(nk, f32) * 4 + (row_elems(nk, plan.elt) * e if plan.elt != f32 else 0)
    if plan.causal:
        ub += mq * row_elems(nk, f32) * 4
    slots = 5 if plan.causal else 3
    return {
        "l1": (mqp * dp + slots * nkp * (dp + dvp) + mqp * nkp) * e,
        "l0a": (mqp * dp + mqp * nkp) * e,
        "l0b": (dp * nkp + nkp * dvp) * e,
        "l0c": (mqp * nkp + mqp * dvp) * 4,
        "ub": ub,
    }


def attention_tiling(req: KernelRequest, plan: AttentionPlan) -> AttentionTiling | None:
    """The cheapest (mq, nk) whose buffers fit, priced with the cost model: a key tile is a
    chain of cube, FIX, DMA and vector steps, one after the other (the K / V loads overlap
    it); work items go to the cube cores in waves."""
    cost, spec = req.cost, req.device
    dt = dtype_name(to_dtype(plan.elt))
    e = itemsize(plan.elt)
    best: AttentionTiling | None = None
    for c in TILE_CHOICES:
        mq = min(c, plan.S)
        for kc in KEY_CHOICES:
            nk = min(kc, plan.L)
            if plan.causal and plan.S > mq and mq != nk:
                continue
            need = _buffers(plan, mq, nk)
            if any(need[s] > spec.buffer_bytes[s] for s in need):
                continue
            mqp, nkp = round_up(mq, FRACTAL), round_up(nk, FRACTAL)
            dp, dvp = round_up(plan.D, FRACTAL), round_up(plan.Dv, FRACTAL)
            s_bytes, o_bytes = mq * nk * 4, mq * plan.Dv * 4
            tile = (cost.mmad_cycles(mqp, dp, nkp, dt) + cost.mmad_cycles(mqp, nkp, dvp, dt)
                    + cost.dma_cycles(s_bytes, "l0c", "gm") + cost.dma_cycles(s_bytes, "gm", "ub")
                    + cost.dma_cycles(mq * nk * e, "ub", "gm") + cost.dma_cycles(mq * nk * e, "gm", "l1")
                    + cost.dma_cycles(mqp * nkp * e, "l1", "l0a") + cost.dma_cycles(nkp * dvp * e, "l1", "l0b")
                    + cost.dma_cycles(nkp * dp * e, "l1", "l0b")
                    + cost.dma_cycles(o_bytes, "l0c", "gm") + cost.dma_cycles(o_bytes, "gm", "ub")
                    + 8 * cost.vector_cycles("binary", s_bytes, "f32") + 3 * cost.vector_cycles("binary", o_bytes, "f32"))
            tiles_per_item = ceil_div(plan.L, nk)
            if plan.causal:  # about half the tiles of a square causal attention are skipped
                tiles_per_item = max(1, ceil_div(tiles_per_item * (plan.off + plan.S / 2 + nk), plan.L))
            items = plan.B * plan.H * ceil_div(plan.S, mq)
            blocks = max(1, min(items, spec.cube_cores))
            waves = ceil_div(items, blocks)
            us = cost.cycles_to_us(waves * (tile * tiles_per_item + spec.block_dispatch_cycles))
            if best is None or us < best.estimate_us:
                best = AttentionTiling(mq, nk, blocks, us)
    return best


class AttentionKernel:
    """Emits the kernel of a plan with a tiling."""

    def __init__(self, req: KernelRequest, plan: AttentionPlan, t: AttentionTiling):
        self.req, self.plan, self.t = req, plan, t

    # -- buffers -----------------------------------------------------------------------------

    def build(self) -> a.KernelOp:
        plan, t = self.plan, self.t
        kb = self.kb = KernelBuilder(self.req, "mix", t.blocks)
        elt, mq, nk = plan.elt, t.mq, t.nk
        self.wide = elt != f32  # P and the output pass through a tile of the input type
        mqp, nkp = round_up(mq, FRACTAL), round_up(nk, FRACTAL)
        dp, dvp = round_up(plan.D, FRACTAL), round_up(plan.Dv, FRACTAL)
        ins = kb.inputs
        self.q2 = kb.view(ins[plan.args[0]], [plan.B * plan.H * plan.S, plan.D])
        self.k2 = kb.view(ins[plan.args[1]], [plan.B * plan.Hkv * plan.L, plan.D])
        self.v2 = kb.view(ins[plan.args[2]], [plan.B * plan.Hkv * plan.L, plan.Dv])
        self.o2 = kb.view(kb.outputs[0], [plan.B * plan.H * plan.S, plan.Dv])
        if plan.mask is not None:
            mb, mh, ms = plan.mask
            self.m2 = kb.view(ins[plan.args[3]], [mb * mh * ms, plan.L])
        # l1: Q, the K / V slots, P
        self.q1 = kb.alloc([mqp, dp], elt, "l1", "q1")
        slots = (*LOOP_SLOTS, FIRST_SLOT, *(DIAG_SLOTS if plan.causal else ()))
        self.k1 = {s: kb.alloc([nkp, dp], elt, "l1", f"k1s{s}") for s in slots}
        self.v1 = {s: kb.alloc([nkp, dvp], elt, "l1", f"v1s{s}") for s in slots}
        self.p1 = kb.alloc([mqp, nkp], elt, "l1", "p1")
        self.q0 = kb.alloc([mqp, dp], elt, "l0a", "q0")
        self.p0 = kb.alloc([mqp, nkp], elt, "l0a", "p0")
        self.kt0 = kb.alloc([dp, nkp], elt, "l0b", "kt0")
        self.v0 = kb.alloc([nkp, dvp], elt, "l0b", "v0")
        self.sc = kb.alloc([mqp, nkp], f32, "l0c", "sc")
        self.pvc = kb.alloc([mqp, dvp], f32, "l0c", "pvc")
        # ub (f32): the scores, a temporary, O, the row statistics; the input type's tile
        wide = max(row_elems(nk, f32), row_elems(plan.Dv, f32))
        self.s = kb.alloc([mq, wide], f32, "ub", "s")
        self.tmp = kb.alloc([mq, wide], f32, "ub", "t")
        self.o = kb.alloc([mq, row_elems(plan.Dv, f32)], f32, "ub", "o")
        self.m, self.l, self.mt, self.al, self.rs = (
            kb.alloc([mq, 8], f32, "ub", n) for n in ("m", "l", "mt", "alpha", "rsum"))
        if self.wide:
            self.pe = kb.alloc([mq, max(row_elems(nk, elt), row_elems(plan.Dv, elt))], elt, "ub", "pe")
        if plan.mask is not None and plan.mask[2] == 1:
            self.mrow = kb.alloc([1, row_elems(nk, f32)], f32, "ub", "mrow")
            if self.wide:
                self.mrow_e = kb.alloc([1, row_elems(nk, elt)], elt, "ub", "mrow_e")
        self.dm = kb.alloc([mq, row_elems(nk, f32)], f32, "ub", "dm") if plan.causal else None
        # gm scratch of the kernel's own, one tile per block: S, P, P V
        rows = t.blocks * mq
        self.sg = kb.scratch([rows, nk], f32, "s_ws")
        self.pg = kb.scratch([rows, nk], elt, "p_ws")
        self.og = kb.scratch([rows, plan.Dv], f32, "pv_ws")
        self.row0 = kb.mul(kb.block_idx(), mq) if t.blocks > 1 else 0

        for s in slots:
            kb.set_flag("MTE1", "MTE2", s)
        if self.dm is not None:
            self._diff_tile()
        nq_full, q_rem = divmod(plan.S, mq)
        bh = plan.B * plan.H
        classes = []
        if nq_full:
            # query tile outer: round-robin over the blocks then gives each block every causal
            # query tile about equally often (head outer gave block k only tiles k mod nq)
            classes.append(([nq_full, bh], lambda idx: self._item(idx[1], idx[0], mq)))
        if q_rem:
            classes.append(([bh, 1], lambda idx: self._item(idx[0], nq_full, q_rem)))
        distribute(kb, t.blocks, classes)
        for s in slots:
            kb.wait_flag("MTE1", "MTE2", s)
        kernel = kb.finish()
        kernel.attributes[attr_names.TEMPLATE] = StringAttr("attention")
        return kernel

    def _diff_tile(self) -> None:
        """dm[r, c] = c - r: eight scalar stores, then doubling along the row and down the rows."""
        kb, dm = self.kb, self.dm
        mq, width = dm.type.get_shape()
        for c in range(8):
            kb.emit(memref.StoreOp.get(kb.scalar(float(c), f32), dm, [kb.index(0), kb.index(c)]))
        kb.sync("S", "V", CHAIN)
        w = 8
        while w < width:
            n = min(w, width - w)
            kb.vec(a.VaddsOp, kb.tile(dm, [0, 0], [1, n]), kb.scalar(float(w), f32), kb.tile(dm, [0, w], [1, n]))
            kb.barrier("V")
            w += n
        h = 1
        while h < mq:
            n = min(h, mq - h)
            kb.vec(a.VaddsOp, kb.tile(dm, [0, 0], [n, width]), kb.scalar(float(-h), f32),
                   kb.tile(dm, [h, 0], [n, width]))
            kb.barrier("V")
            h += n

    # -- one work item -----------------------------------------------------------------------

    def _item(self, bh: Index, qi: Index, mv: int) -> None:
        """The query tile qi (rows q0 = qi * mq, mv of them) of head bh = b * H + h."""
        kb, plan, t = self.kb, self.plan, self.t
        mq, nk = t.mq, t.nk
        mvp = round_up(mv, FRACTAL)
        dp = round_up(plan.D, FRACTAL)
        self.bh, self.mv = bh, mv
        self.q0_row = kb.mul(qi, mq)
        self.kv_base = kb.mul(kb.divui(bh, plan.H // plan.Hkv), plan.L)
        if plan.mask is not None:
            mb, mh, ms = plan.mask
            b, h = kb.divui(bh, plan.H), kb.remui(bh, plan.H)
            mrow = kb.add(kb.mul(b if mb > 1 else 0, mh), h if mh > 1 else 0)
            self.mask_row = kb.mul(mrow, ms)
        # Q: gm -> l1 -> l0a, once per work item
        qrow = kb.add(kb.mul(bh, plan.S), self.q0_row)
        self._load(kb.tile(self.q2, [qrow, 0], [mv, plan.D]), kb.tile(self.q1, [0, 0], [mvp, dp]))
        kb.sync("MTE2", "MTE1", CHAIN)
        kb.copy(kb.tile(self.q1, [0, 0], [mvp, dp]), kb.tile(self.q0, [0, 0], [mvp, dp]))
        kb.sync("MTE1", "M", CHAIN)
        # the key tiles: [0, rem) first, then whole ones; causal: visible, then diagonal
        n_full, rem = divmod(plan.L, nk)
        first = rem if rem else 0
        n_vis, diags = self._causal_split(qi, mv, n_full, rem)
        # prefetch: the first tile, loop tile 0, the diagonal tiles
        if rem:
            self._load_kv(0, rem, FIRST_SLOT)
        self._guarded(self._lt(0, n_vis), lambda: self._load_kv(first, nk, LOOP_SLOTS[0]))
        for (j, _d, cond), slot in zip(diags, DIAG_SLOTS):
            self._guarded(cond, lambda j=j, slot=slot: self._load_kv(kb.add(first, kb.mul(j, nk)), nk, slot))
        # the row statistics and O
        kb.vec(a.VdupOp, kb.scalar(NEG, f32), self.m)
        kb.vec(a.VdupOp, kb.scalar(0.0, f32), self.l)
        kb.vec(a.VdupOp, kb.scalar(0.0, f32), self.o)
        if rem:
            for cond, d in self._first_band(qi, rem):
                self._guarded(cond, lambda d=d: self._tile(0, rem, FIRST_SLOT, d))
        self._loop(first, n_vis)
        for (j, d, cond), slot in zip(diags, DIAG_SLOTS):
            self._guarded(cond, lambda j=j, d=d, slot=slot: self._tile(kb.add(first, kb.mul(j, nk)), nk, slot, d))
        # out = O / l
        dv = plan.Dv
        kb.vec(a.VbrcbOp, self._rows(self.l, 1), kb.tile(self.s, [0, 0], [mv, dv]))
        ov = kb.tile(self.o, [0, 0], [mv, dv])
        kb.vec(a.VdivOp, ov, kb.tile(self.s, [0, 0], [mv, dv]), ov)
        src = ov
        if self.wide:
            src = kb.tile(self.pe, [0, 0], [mv, dv])
            kb.vec(a.VcastOp, ov, src)
        kb.sync("V", "MTE3", CHAIN)
        kb.copy(src, kb.tile(self.o2, [qrow, 0], [mv, dv]))
        kb.sync("MTE3", "V", CHAIN)

    def _causal_split(self, qi: Index, mv: int, n_full: int, rem: int):
        """How many whole key tiles every query of the tile sees (loop without a band), and the
        diagonal tiles after them as (tile index, static band offset d, condition)."""
        plan, kb, nk = self.plan, self.kb, self.t.nk
        if not plan.causal:
            return n_full, []
        # whole tile j (keys rem + j*nk ..) against query rows q0 = qi*nk ..: the key - query
        # offset d_j = off - rem + (qi - j) * nk; visible iff d_j >= nk - 1, i.e. j <= qi - c1
        c1 = ceil_div(nk - 1 - plan.off + rem, nk)
        if c1 <= 0:
            n_vis = kb.min(kb.add(qi, 1 - c1), n_full)
        else:
            n_vis = kb.min(kb.sub(self._max(kb.add(qi, 1), c1), c1), n_full)
        e = plan.off - rem + c1 * nk
        diags = []
        for tt in (1, 2):
            d = e - tt * nk
            if d < -(mv - 1):  # no query of the tile sees a key of it
                break
            if isinstance(qi, int):
                j = qi + tt - c1
                if 0 <= j < n_full:
                    diags.append((j, d, True))
                continue
            # j = qi + tt - c1, a tile only when 0 <= j < n_full
            j = kb.add(qi, tt - c1) if tt >= c1 else kb.sub(self._max(kb.add(qi, tt), c1), c1)
            diags.append((j, d, self._and(self._ge(kb.add(qi, tt), c1), self._lt(kb.add(qi, tt), n_full + c1))))
        return n_vis, diags

    def _first_band(self, qi: Index, rem: int):
        """The causal band of the first tile [0, rem) (key 0, which every query sees, is in it,
        so it always runs): [] when every query sees the whole tile, else the (condition, d)
        variants - a runtime query tile index needs the band only for the first query tile."""
        plan = self.plan
        if not plan.causal or plan.off >= rem - 1:
            return [(True, None)]
        if isinstance(qi, int):  # d = off + q0
            d = plan.off + qi * self.t.mq
            return [(True, None if d >= rem - 1 else d)]
        return [(self._eq(qi, 0), plan.off), (self._cmp(qi, 0, "ne", None), None)]

    # -- the loop over key tiles ---------------------------------------------------------------

    def _loop(self, k_start: int, n: Index) -> None:
        """Whole key tiles 0 .. n-1 (keys k_start + j * nk), two at a time on slots 0 / 1, each
        prefetching the next."""
        kb, nk = self.kb, self.t.nk
        if isinstance(n, int) and n <= 0:
            return

        def k0(j: Index) -> Index:
            return kb.add(k_start, kb.mul(j, nk))

        with kb.loop(0, n, 2, "j") as j:
            j1, j2 = kb.add(j, 1), kb.add(j, 2)
            self._guarded(self._lt(j1, n), lambda: self._load_kv(k0(j1), nk, LOOP_SLOTS[1]))
            self._tile(k0(j), nk, LOOP_SLOTS[0], None)

            def second() -> None:
                self._guarded(self._lt(j2, n), lambda: self._load_kv(k0(j2), nk, LOOP_SLOTS[0]))
                self._tile(k0(j1), nk, LOOP_SLOTS[1], None)

            self._guarded(self._lt(j1, n), second)

    def _load_kv(self, k0: Index, nv: int, slot: int) -> None:
        """K and V rows k0 .. k0 + nv of the work item's kv head into l1 slot `slot`."""
        kb, plan = self.kb, self.plan
        nvp = round_up(nv, FRACTAL)
        row = kb.add(self.kv_base, k0)
        kb.wait_flag("MTE1", "MTE2", slot)
        self._load(kb.tile(self.k2, [row, 0], [nv, plan.D]),
                   kb.tile(self.k1[slot], [0, 0], [nvp, round_up(plan.D, FRACTAL)]))
        self._load(kb.tile(self.v2, [row, 0], [nv, plan.Dv]),
                   kb.tile(self.v1[slot], [0, 0], [nvp, round_up(plan.Dv, FRACTAL)]))
        kb.set_flag("MTE2", "MTE1", slot)

    def _tile(self, k0: Index, nv: int, slot: int, d: int | None) -> None:
        """One key tile: scores on the cube, the online softmax on the vector unit, P V on the
        cube, O rescaled and accumulated on the vector unit. `d`: the causal band's offset
        (key c of the tile is masked for query r when c - r > d), None for no band."""
        kb, plan = self.kb, self.plan
        mv, mvp, nvp = self.mv, round_up(self.mv, FRACTAL), round_up(nv, FRACTAL)
        dp, dvp, dv = round_up(plan.D, FRACTAL), round_up(plan.Dv, FRACTAL), plan.Dv
        # S = Q K^T (cube), through the scratch tile into ub
        kb.wait_flag("MTE2", "MTE1", slot)
        kt = kb.tile(self.kt0, [0, 0], [dp, nvp])
        kb.copy(kb.tile(self.k1[slot], [0, 0], [nvp, dp]), kt, transpose=UnitAttr())
        s = kb.tile(self.s, [0, 0], [mv, nv])
        tmp = kb.tile(self.tmp, [0, 0], [mv, nv])
        self._product(kb.tile(self.q0, [0, 0], [mvp, dp]), kt, kb.tile(self.sc, [0, 0], [mvp, nvp]),
                      kb.tile(self.sg, [self.row0, 0], [mv, nv]), s)
        if plan.mask is not None:
            self._load_mask(k0, nv, tmp)
        kb.sync("MTE2", "V", CHAIN)
        # scale, mask, causal band; masked scores clamp to NEG (a -inf mask too)
        kb.vec(a.VmulsOp, s, kb.scalar(plan.scale, f32), s)
        if plan.mask is not None:
            if plan.mask[2] == 1:
                if self.wide:
                    kb.vec(a.VcastOp, kb.tile(self.mrow_e, [0, 0], [1, nv]), kb.tile(self.mrow, [0, 0], [1, nv]))
                kb.vec(a.VbrcbOp, kb.tile(self.mrow, [0, 0], [1, nv]), tmp)
            elif self.wide:
                kb.vec(a.VcastOp, kb.tile(self.pe, [0, 0], [mv, nv]), tmp)
            kb.vec(a.VaddOp, s, tmp, s)
        if d is not None:
            dm = kb.tile(self.dm, [0, 0], [mv, nv])
            kb.vec(a.VaddsOp, dm, kb.scalar(float(-d), f32), tmp)   # c - r - d
            kb.vec(a.VminsOp, tmp, kb.scalar(1.0, f32), tmp)
            kb.vec(a.VmaxsOp, tmp, kb.scalar(0.0, f32), tmp)          # 1 where masked
            kb.vec(a.VmulsOp, tmp, kb.scalar(NEG, f32), tmp)
            kb.vec(a.VaddOp, s, tmp, s)
        if plan.mask is not None or d is not None:
            kb.vec(a.VmaxsOp, s, kb.scalar(NEG, f32), s)
        # online softmax
        m, mt, al, l, rs = (self._rows(x, 1) for x in (self.m, self.mt, self.al, self.l, self.rs))
        kb.vec(a.VreduceOp, s, mt, kind=StringAttr("max"))
        kb.vec(a.VmaxOp, m, mt, mt)                      # m' = max(m, rowmax)
        kb.vec(a.VsubOp, m, mt, al)
        kb.vec(a.VexpOp, al, al)                         # a = exp(m - m')
        kb.vec(a.VcopyOp, mt, m)
        kb.vec(a.VbrcbOp, m, tmp)
        kb.vec(a.VsubOp, s, tmp, s)
        kb.vec(a.VexpOp, s, s)                           # P = exp(S - m')
        kb.vec(a.VreduceOp, s, rs, kind=StringAttr("sum"))
        kb.vec(a.VmulOp, l, al, l)
        kb.vec(a.VaddOp, l, rs, l)                       # l = l * a + rowsum P
        p = s
        if self.wide:  # P in the input type for the cube
            p = kb.tile(self.pe, [0, 0], [mv, nv])
            kb.vec(a.VcastOp, s, p)
        # P -> scratch -> l1 -> l0a; V -> l0b; P V on the cube
        kb.sync("V", "MTE3", CHAIN)
        pg = kb.tile(self.pg, [self.row0, 0], [mv, nv])
        kb.copy(p, pg)
        kb.sync("MTE3", "MTE2", CHAIN)
        p1 = kb.tile(self.p1, [0, 0], [mvp, nvp])
        self._load(pg, p1)
        kb.sync("MTE2", "MTE1", CHAIN)
        p0 = kb.tile(self.p0, [0, 0], [mvp, nvp])
        v0 = kb.tile(self.v0, [0, 0], [nvp, dvp])
        kb.copy(p1, p0)
        kb.copy(kb.tile(self.v1[slot], [0, 0], [nvp, dvp]), v0)
        kb.set_flag("MTE1", "MTE2", slot)                # the slot is free for the next load
        pv = kb.tile(self.tmp, [0, 0], [mv, dv])
        self._product(p0, v0, kb.tile(self.pvc, [0, 0], [mvp, dvp]), kb.tile(self.og, [self.row0, 0], [mv, dv]), pv)
        kb.sync("MTE2", "V", CHAIN)
        # O = O * a + P V
        ab = kb.tile(self.s, [0, 0], [mv, dv])
        ov = kb.tile(self.o, [0, 0], [mv, dv])
        kb.vec(a.VbrcbOp, al, ab)
        kb.vec(a.VmulOp, ov, ab, ov)
        kb.vec(a.VaddOp, ov, pv, ov)

    def _load_mask(self, k0: Index, nv: int, tmp: SSAValue) -> None:
        """The mask's tile (MTE2): [mv, nv] into the temporary (through the input type's tile
        when it is not f32), or its one row [1, nv] (broadcast over the queries later)."""
        kb, plan, mv = self.kb, self.plan, self.mv
        if plan.mask[2] == 1:
            src = kb.tile(self.m2, [self.mask_row, k0], [1, nv])
            kb.copy(src, kb.tile(self.mrow_e if self.wide else self.mrow, [0, 0], [1, nv]))
            return
        src = kb.tile(self.m2, [kb.add(self.mask_row, self.q0_row), k0], [mv, nv])
        kb.copy(src, kb.tile(self.pe, [0, 0], [mv, nv]) if self.wide else tmp)

    # -- helpers -------------------------------------------------------------------------------

    def _rows(self, stat: SSAValue, cols: int) -> SSAValue:
        return self.kb.tile(stat, [0, 0], [self.mv, cols])

    def _load(self, src: SSAValue, dst: SSAValue) -> None:
        """A copy between tiles of different static shapes pads (gm -> l1: zeros past the source)
        or crops (l0c -> gm: the leading part)."""
        if src.type.get_shape() == dst.type.get_shape():
            self.kb.copy(src, dst)
        else:
            self.kb.copy(src, dst, pad=UnitAttr())

    def _product(self, lhs: SSAValue, rhs: SSAValue, acc: SSAValue, scratch: SSAValue, dst: SSAValue) -> None:
        """acc = lhs x rhs on the cube (operands in l0), FIX -> the block's scratch tile (the
        valid part), MTE2 -> `dst` in ub: the cube -> vector hand-off through gm."""
        kb = self.kb
        kb.sync("MTE1", "M", CHAIN)
        kb.emit(a.MmadOp.get(lhs, rhs, acc, init=True))
        kb.sync("M", "FIX", CHAIN)
        self._load(acc, scratch)
        kb.sync("FIX", "MTE2", CHAIN)
        kb.copy(scratch, dst)

    def _max(self, x: Index, y: Index) -> Index:
        if isinstance(x, int) and isinstance(y, int):
            return max(x, y)
        return self.kb.emit(arith.MaxUIOp(self.kb.index(x), self.kb.index(y))).result

    def _cmp(self, x: Index, y: Index, pred: str, fold) -> bool | SSAValue:
        if isinstance(x, int) and isinstance(y, int):
            return fold(x, y)
        return self.kb.emit(arith.CmpiOp(self.kb.index(x), self.kb.index(y), pred)).result

    def _lt(self, x: Index, y: Index) -> bool | SSAValue:
        return self._cmp(x, y, "ult", lambda p, q: p < q)

    def _ge(self, x: Index, y: Index) -> bool | SSAValue:
        if isinstance(y, int) and y <= 0:
            return True
        return self._cmp(x, y, "uge", lambda p, q: p >= q)

    def _eq(self, x: Index, y: Index) -> bool | SSAValue:
        return self._cmp(x, y, "eq", lambda p, q: p == q)

    def _and(self, x: bool | SSAValue, y: bool | SSAValue) -> bool | SSAValue:
        if isinstance(x, bool):
            return y if x else False
        if isinstance(y, bool):
            return x if y else False
        return self.kb.emit(arith.AndIOp(x, y)).result

    def _guarded(self, cond: bool | SSAValue, body) -> None:
        if cond is True:
            body()
        elif cond is not False:
            with self.kb.if_(cond):
                body()


def try_build(req: KernelRequest) -> a.KernelOp | None:
    """An attention kernel for a request that is one graph.attention; None otherwise."""
    plan = plan_request(req)
    if plan is None:
        return None
    tiling = attention_tiling(req, plan)
    if tiling is None:
        return None
    try:
        return AttentionKernel(req, plan, tiling).build()
    except LoweringError:
        return None
