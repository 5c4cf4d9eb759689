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
(`geir.scratch`): blocks x 2 x [mq, nk] (S, P) and blocks x 2 x [mq, Dv] (P V), never [S, L].

A key tile may hold more keys than l0a / l0b do (`AttentionTiling.nk0`): K and V then come
into l1 a whole tile per DMA and the cube takes the tile in steps of nk0 keys - each step's
scores into its columns of the l0c S tile, P V accumulated over the steps - so a decode
step's long cache pays the DMA start-ups of each hand-off once per tile of 256 keys, not 64.

The vector side runs on the block's vector cores side by side (`ascend.sub_block`, the 910B's
two AIVs; `vector_shares`): each takes a share of the item's query rows - its rows of S, P and
O, the statistics, its own ub - and the AIC sets its flags once per core and waits for each
core's (`_per_aiv`).

The key tiles of an item run as a five-stage software pipeline (`_pipeline`): K load;
scores (MTE1, M, FIX); softmax (S and V in, vector, P out); P V (P in, MTE1, M, FIX); O update.
Iteration i runs stage s on tile i - s, oldest first, so the cube computes tile j + 1's scores
and tile j - 1's P V while the vector unit runs tile j's softmax. Every buffer a tile holds
between stages has two slots (the tile's parity) with flag ids of their own: `ready` flags
from producer to consumer, `free` flags back, set once per kernel (`_credits`).

Causal attention (query i sees keys j <= i + L - S): key tiles no query of the tile sees are
skipped; tiles every query sees need no mask; the diagonal ones (two when mq == nk, more
when one query tile spans several key tiles) add a band computed on the vector unit from a
`c - r` tile (built once per block) and the tile's static diagonal offset. Static offsets need the query tile to equal the key tile (`mq == nk`) when there is
more than one query tile; the key tiles are then [0, L mod nk) first and whole tiles after.
Causal at a run-time position (the mask a graph.causal_mask fused into the kernel: a static
KV cache's prefill, query i at cache row position + i) reads the position once and counts the
tiles per item at run time (`_position_split`); its band's offset is a run-time value. It
takes whole key tiles and mq <= nk, so the band is at most two tiles.

A decode step (one query row) of grouped-query attention may take a kv head's query heads as
one item's rows (`grouped_rows`: K and V read once per kv head). When the items leave cube
cores idle, the keys may be split into parts, an item each, whose O / l and log-sum-exp a
second, vector kernel combines (`split_choices`, `CombineKernel`: flash decoding; the two are
a `KernelChain`). The tiling prices both against the plain kernel.

Limits (the op then runs the reference fallback): a mask whose last dim is not L, element
types other than f16 / bf16 / f32, head dims whose tiles do not fit the buffers.
"""

from __future__ import annotations

import dataclasses
import math
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import StringAttr, UnitAttr, f32, i64
from xdsl.ir import Attribute, SSAValue

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.dialects import formats as L
from geir.dialects import graph as g
from geir.dialects.traits import ViewLike
from geir.lowering.templates.common import (
    KernelBuilder,
    KernelChain,
    KernelRequest,
    LoweringError,
    ceil_div,
    itemsize,
    key_quantum,
    round_up,
    row_elems,
    row_shares,
    shape_of,
    vector_cores_per_block,
)
from geir.lowering.templates.cube.loops import Index, distribute
from geir.lowering.templates.data import Strided, strided_views, written_view
from geir.target import op_info
from geir.target.device import dtype_name
from geir.ir.types import to_dtype

FRACTAL = a.FRACTAL
NEG = -1.0e30
"""What a masked score becomes (finite: a tile whose scores are all masked gives exp(0) = 1
and is wiped out by the next tile's rescale exp(NEG - m) = 0, never NaN)."""

TILE_CHOICES = (128, 64, 32, 16)
KEY_CHOICES = (256, 128, 64, 32, 16)

STAGES = 5
"""The software pipeline over key tiles: K load, scores, softmax, P V, O update."""
SLOTS = (0, 1)
# flag ids per pipe pair, + the slot: the K tile and the S hand-off (0, 1), the V tile and the
# P V hand-off (2, 3), P in l1 (4, 5); P V in ub (5) and the mask tile (4) between MTE2 and V;
# 6 the once-per-item syncs (Q, O's first tile, the output); 7 the per-item buffers' credits
# (`F_ITEM`)
F_K, F_V, F_P, F_MASK, F_PV, CHAIN, F_ITEM = 0, 2, 4, 4, 5, 6, 7
# What one work item leaves for the next (so items follow each other without a barrier) on
# F_ITEM: q1 once its copy to l0a is done (MTE1 -> MTE2), q0 once the item's last mmad has read
# it (M -> MTE1), and on each vector core O and the row statistics once MTE3 has stored the
# item's result (MTE3 -> V).


@dataclass(frozen=True)
class Rows:
    """How the kernel addresses q, k, v or the output: element (b, h, s, d) is element
    [row + s, col + d] of kernel argument `arg` (an input; the output for `out`) seen as
    [numel / width, width], where row and col split offset + b * batch + h * head (or
    (b * heads + h) * head when `merged`) into whole rows and a column term by term (no carry
    into the next row: `rows_of` checks the last head). The rows
    of one head are `width` apart - any stride, DMA moves rows - and d is contiguous. A
    contiguous [B, H, S, D] operand has width D, head stride S * D, column 0."""

    arg: int
    numel: int
    width: int
    offset: int
    batch: int
    head: int
    heads: int

    @property
    def merged(self) -> bool:
        """b and h step the address as one index b * heads + h does (a contiguous operand)."""
        return self.batch == self.heads * self.head


def rows_of(view: Strided, numel: int) -> Rows | None:
    """The `Rows` of a [B, H, S, D] strided view of an argument of `numel` elements; None when
    d is strided (DMA moves rows) or a head's column would carry into the next row."""
    B, H, S, D = view.shape
    tb, th, ts, td = view.strides
    if D > 1 and td != 1:
        return None
    width = ts if S > 1 else D
    if width < D or numel % width:
        return None
    rows = Rows(view.arg, numel, width, view.offset, tb, th, H)
    top = [(B * H - 1, th)] if rows.merged else [(B - 1, tb), (H - 1, th)]  # the last head, as `_at`
    col = view.offset % width + sum(n * (t % width) for n, t in top)
    row = view.offset // width + sum(n * (t // width) for n, t in top)
    if col + D > width or (row + S - 1) * width + col + D > numel:
        return None
    return rows


@dataclass(frozen=True)
class AttentionPlan:
    """What the kernel computes: shapes, element type, scale, causal, the mask's broadcast,
    and how q, k, v and the output are addressed (`Rows`: through views, transposes, slices
    and split parts of the kernel's arguments)."""

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
    q: Rows
    k: Rows
    v: Rows
    out: Rows
    mask_arg: int | None  # kernel argument of the mask
    mask: tuple[int, int, int] | None  # (batch extent, head extent, row extent) of the mask, 1 or full
    position_arg: int | None = None  # causal at a run-time position: the kernel argument holding it
    position_offset: int = 0  # ... query i then sees keys j <= i + position + position_offset

    @property
    def off(self) -> int:
        """Query i sees keys j <= i + off (causal; at a run-time position, the offset of a full
        cache's last rows, which the tiling prices)."""
        return self.L - self.S


def _consumers(op: g.AttentionOp, ops: list) -> list | None:
    """The ops of the request after the attention: a chain of transposes and views, each the
    only user of the one before (its result is written through them); None otherwise."""
    chain, value = [], op.results[0]
    rest = set(ops)
    while True:
        users = {u.operation for u in value.uses}
        inside = users & rest
        if not inside:
            return chain
        if len(users) != 1:
            return None
        nxt = inside.pop()
        if not (isinstance(nxt, g.TransposeOp) or nxt.has_trait(ViewLike)):
            return None
        chain.append(nxt)
        value = nxt.results[0]


def plan_request(req: KernelRequest) -> AttentionPlan | None:
    """The plan of a request that is one graph.attention, optionally with the views,
    transposes, constant slices and split parts its q, k, v are read through and the
    transposes and views its result is written through (graph-fuse's attention fusion)."""
    found = [op for op in req.ops if isinstance(op, g.AttentionOp)]
    if len(found) != 1 or len(req.outputs) != 1:
        return None
    op = found[0]
    if any(L.is_formatted(v.type) for v in (*op.operands, *op.results)):
        return None
    elt = op.q.type.element_type
    if not op_info.ATTENTION.takes_type(elt):
        return None
    at = req.ops.index(op)
    after = _consumers(op, req.ops[at + 1:])
    if after is None or len(req.ops) != at + 1 + len(after):
        return None
    if (after[-1].results[0] if after else op.results[0]) is not req.outputs[0]:
        return None
    position = op.mask.owner if op.mask is not None and isinstance(op.mask.owner, g.CausalMaskOp) else None
    if position is not None and (position not in req.ops or position.operands[0] not in req.inputs):
        return None
    views = strided_views(req.inputs, [o for o in req.ops[:at] if o is not position])
    if views is None or any(v not in views for v in op.operands[:3 if position else 4]):
        return None
    B, H, S, D = shape_of(op.q)
    _, Hkv, Lk, _ = shape_of(op.k)
    Dv = shape_of(op.v)[3]
    mask, mask_arg = None, None
    if position is not None:  # the band at a run-time position, computed in the kernel
        if op.attrs()["causal"] or position.attrs()["offset"] < 0:  # a row that could see no key
            return None
    elif op.mask is not None:
        m = (1,) * (4 - len(shape_of(op.mask))) + shape_of(op.mask)
        if m[3] != Lk:  # a mask broadcast along the keys: not tiled yet
            return None
        if op.mask not in req.inputs:
            return None  # the mask is read as it is
        mask, mask_arg = (m[0], m[1], m[2]), req.inputs.index(op.mask)
    numel = [math.prod(shape_of(v)) for v in req.inputs]
    qkv = [rows_of(views[v], numel[views[v].arg]) for v in (op.q, op.k, op.v)]
    out_view = written_view(0, after) if after else Strided.of(0, shape_of(op.results[0]))
    out = None if out_view is None else rows_of(out_view, math.prod(shape_of(req.outputs[0])))
    if any(r is None for r in (*qkv, out)):
        return None
    attrs = op.attrs()
    # one query row sees every key (j <= 0 + L - 1): causal or not, the same attention
    causal = (bool(attrs["causal"]) and S > 1) or position is not None
    return AttentionPlan(B, H, Hkv, S, Lk, D, Dv, elt, float(attrs["scale"]), causal, *qkv, out, mask_arg, mask,
                         None if position is None else req.inputs.index(position.operands[0]),
                         0 if position is None else position.attrs()["offset"])


@dataclass(frozen=True)
class AttentionTiling:
    mq: int      # query rows of a work item
    nk: int      # keys of a tile
    blocks: int
    estimate_us: float
    splits: int = 1   # flash decoding: the keys in this many parts, a work item each
    chunk: int = 0    # keys of every part but the last (whole key tiles)
    grouped: bool = False  # a work item is a kv head's query heads, one row each (`grouped_rows`)
    nk0: int = 0      # keys of a cube step (l0a / l0b hold [mq, nk0] / [nk0, D]); 0: nk
    subs: int = 1     # vector cores of a block an item's rows are shared over (`vector_shares`)

    @property
    def step(self) -> int:
        return self.nk0 or self.nk

    def parts(self, L: int) -> list[tuple[int, int, int]]:
        """(first part, parts, keys of each) of the parts of equal size: [(0, 1, L)] unsplit."""
        if self.splits == 1:
            return [(0, 1, L)]
        return [(0, self.splits - 1, self.chunk), (self.splits - 1, 1, L - (self.splits - 1) * self.chunk)]


def _buffers(plan: AttentionPlan, mq: int, nk: int, nk0: int | None = None, keys: bool = False,
             subs: int = 1) -> dict[str, int]:
    """Bytes each space needs for a tiling (the kernel allocates exactly these): l1 and l0c
    hold a key tile of nk, l0a / l0b a cube step of nk0 keys, each of the `subs` vector cores'
    ub its share of the mq rows."""
    e = itemsize(plan.elt)
    rows = ceil_div(mq, subs)
    mqp, nkp = round_up(mq, FRACTAL), round_up(nk, FRACTAL)
    n0p = round_up(nk0 or nk, FRACTAL)
    dp, dvp = round_up(plan.D, FRACTAL), round_up(plan.Dv, FRACTAL)
    wide = max(row_elems(nk, f32), row_elems(plan.Dv, f32))
    n = len(SLOTS)
    ub = (n * rows * row_elems(nk, f32) + rows * wide + 2 * rows * row_elems(plan.Dv, f32)) * 4 + (4 + n) * rows * 32
    if plan.elt != f32:
        ub += n * rows * max(row_elems(nk, plan.elt), row_elems(plan.Dv, plan.elt)) * e
    if plan.mask is not None and plan.mask[2] == 1:
        ub += row_elems(nk, f32) * 4 + (row_elems(nk, plan.elt) * e if plan.elt != f32 else 0)
    elif plan.mask is not None:
        ub += rows * row_elems(nk, plan.elt) * e
    if plan.causal:
        ub += rows * row_elems(nk, f32) * 4
    if keys:  # a shape range's padded keys: the column indices and the mask row
        ub += 2 * row_elems(nk, f32) * 4
    return {
        "l1": (mqp * dp + n * (nkp * (dp + dvp) + mqp * nkp)) * e,
        "l0a": (mqp * dp + n * mqp * n0p) * e,
        "l0b": n * (dp * n0p + n0p * dvp) * e,
        "l0c": n * (mqp * nkp + mqp * dvp) * 4,
        "ub": ub,
    }


def attention_tiling(req: KernelRequest, plan: AttentionPlan) -> AttentionTiling | None:
    """The cheapest (mq, nk) whose buffers fit, priced with the cost model. The key tiles of
    a work item are a software pipeline: a tile costs its busiest pipe (the AIC's MTE2 carries
    K, V and P, the AIV's S and P V, at no more than the block's share of the bandwidth: what
    is read or written again at L2's, by the simulator's rule; V the softmax and the O update;
    FIX, MTE3, M, MTE1 the rest), and an item adds one tile's whole chain (the pipeline's fill
    and drain) but for its first K and V loads and its last O update, which overlap the
    items beside it. Work items go to the blocks in waves; the block count is
    priced too (`block_choices`)."""
    spec = req.device
    best: AttentionTiling | None = None
    rows = [(min(c, plan.S), False) for c in TILE_CHOICES]
    if grouped_rows(plan):
        rows.append((grouped_rows(plan), True))
    keys = [min(kc, plan.L) for kc in KEY_CHOICES]
    if req.key_extent and any(skips_keys(plan, nk) for nk in keys):  # see skips_keys
        keys = [nk for nk in keys if skips_keys(plan, nk)]
    for mq, grouped in dict.fromkeys(rows):
        for nk in dict.fromkeys(keys):
            if plan.causal and plan.S > mq and mq != nk:
                continue
            if plan.position_arg is not None and (plan.L % nk or mq > nk):  # whole key tiles, a band of two
                continue
            subs = vector_shares(plan, mq, grouped, spec)
            nk0 = next((n0 for n0 in _steps(nk) if all(
                v <= spec.buffer_bytes[s] for s, v in _buffers(plan, mq, nk, n0, bool(req.key_extent), subs).items())),
                       None)
            if nk0 is None:
                continue
            items = plan.B * (plan.Hkv if grouped else plan.H * ceil_div(plan.S, mq))
            for splits, chunk in split_choices(plan, items, nk, spec) if not req.key_extent else [(1, 0)]:
                extra = 0.0 if splits == 1 else _combine_us(req, plan, splits)
                for blocks in block_choices(items * splits, spec.cube_cores):
                    us = _estimate_us(req, plan, mq, nk, items * splits, blocks, chunk or plan.L, nk0, subs) + extra
                    if best is None or us < best.estimate_us:
                        best = AttentionTiling(mq, nk, blocks, us, splits, chunk, grouped, nk0 if nk0 < nk else 0,
                                               subs)
    return best


def skips_keys(plan: AttentionPlan, nk: int) -> bool:
    """Whether an attention with a shape range's keys runs only the key tiles holding a real
    key, with key tiles of nk: they must divide the keys and the quantum the dim's other
    kernels compute it in (common.key_quantum), so that its last tile reads only rows some
    kernel computed."""
    return plan.L % nk == 0 and key_quantum(plan.L) % nk == 0


def _steps(nk: int) -> list[int]:
    """Cube steps of a key tile to try, largest first: the whole tile, or whole fractals that
    divide it (l0a / l0b are what limit a step; l1 takes the tile in one DMA per operand)."""
    return [nk] + [n0 for n0 in KEY_CHOICES if n0 < nk and nk % n0 == 0]


def vector_shares(plan: AttentionPlan, mq: int, grouped: bool, spec) -> int:
    """The vector cores of a block that share each work item's query rows (`ascend.sub_block`
    i: its rows of S, P and O and their row statistics, in its own ub): every one of the
    block's AIVs when every item - the whole tiles of mq rows and the last, partial one (a
    grouped decode step's: its query heads) - has rows for each; else one (a decode step's
    single query row)."""
    cores = vector_cores_per_block(spec)
    rows = {mq} if grouped else {mq, plan.S % mq or mq}
    return cores if cores > 1 and all(len(row_shares(r, cores)) == cores for r in rows) else 1


def grouped_rows(plan: AttentionPlan) -> int:
    """Query heads that share a kv head, taken as the rows of one work item so that its K and
    V are read once, not once per query head (grouped-query attention's decode step, as
    Ascend's incremental flash attention does): H / Hkv when there is one query row, the
    heads' rows of q and of the output follow each other (head
    stride = row width), and any mask is the same for every head; else 0."""
    g = plan.H // plan.Hkv
    if g < 2 or plan.S != 1 or g > TILE_CHOICES[0]:
        return 0
    if plan.mask is not None and plan.mask[1] != 1:
        return 0
    if any(r.head != r.width for r in (plan.q, plan.out)):
        return 0
    return g


def split_choices(plan: AttentionPlan, items: int, nk: int, spec) -> list[tuple[int, int]]:
    """(parts, keys per part) worth pricing: unsplit, and - when the work items leave cube
    cores idle (a decode step's few heads: one item per head) and nothing is causal - the
    keys in 2 .. cores // items parts of whole key tiles, each part a work item of its own,
    whose results a second kernel combines (flash decoding). A part's f32 results start on a
    32-byte block of the combine's rows, so Dv is a multiple of 8."""
    out = [(1, 0)]
    if plan.causal or items >= spec.cube_cores or plan.Dv % 8:
        return out
    for splits in range(2, spec.cube_cores // items + 1):
        chunk = ceil_div(ceil_div(plan.L, splits), nk) * nk
        if (splits - 1) * chunk < plan.L and combine_rows(plan, splits, spec):  # every part has keys
            out.append((splits, chunk))
    return out


def _combine_us(req: KernelRequest, plan: AttentionPlan, splits: int) -> float:
    """The combine kernel of a split: its launch (overhead and block dispatch), and its parts
    read and its output written at the HBM bandwidth (each query row: `splits` rows of Dv and
    a block of log-sum-exp)."""
    cost = req.cost
    rows = plan.B * plan.H * plan.S
    nbytes = rows * splits * (plan.Dv + 8) * 4 + rows * plan.Dv * itemsize(plan.elt)
    return cost.launch_overhead_us() + cost.cycles_to_us(req.device.block_dispatch_cycles) + cost.hbm_time_us(nbytes)


def block_choices(items: int, cores: int) -> list[int]:
    """Block counts worth pricing for `items` equal work items: for the fewest waves and the
    next three, the fewest blocks that many waves need (32 items on 24 cores: 24 blocks, 8 of
    them carrying two, or 16 of two). Fewer blocks of equal work can win when the work is not
    bound by the bandwidth: a last partial round leaves cores idle."""
    least = ceil_div(items, max(1, min(items, cores)))
    return sorted({ceil_div(items, w) for w in range(least, least + 4)}, reverse=True)


def _estimate_us(req: KernelRequest, plan: AttentionPlan, mq: int, nk: int, items: int, blocks: int,
                 keys: int, nk0: int | None = None, subs: int = 1) -> float:
    """The kernel's time for work items of `keys` keys each (cube steps of nk0 keys), the
    vector side's rows shared by `subs` vector cores (each with its own V, MTE2 and MTE3)."""
    cost, spec = req.cost, req.device
    dt = dtype_name(to_dtype(plan.elt))
    e = itemsize(plan.elt)
    mqp = round_up(mq, FRACTAL)
    dp, dvp = round_up(plan.D, FRACTAL), round_up(plan.Dv, FRACTAL)
    s_bytes, o_bytes, p_bytes = mq * nk * 4, mq * plan.Dv * 4, mq * nk * e
    nq = ceil_div(plan.S, mq)
    tiles_per_item = ceil_div(keys, nk)
    if plan.causal:  # query tile q sees the keys up to its last row + off
        seen = sum(min(tiles_per_item, ceil_div(min(plan.S, (q + 1) * mq) + plan.off, nk)) for q in range(nq))
        tiles_per_item = max(1, ceil_div(seen, nq))
    # the simulator's L2 rule (CostModel.l2_hit_fraction): K and V read again per query tile;
    # the S / P / P V hand-offs written and read back through the blocks' scratch, at its
    # reuse distance (CostModel.scratch_reuse_bytes)
    tiles = items * tiles_per_item
    q_bytes, out_bytes = plan.B * plan.H * plan.S * plan.D * e, plan.B * plan.H * plan.S * plan.Dv * e
    kv_bytes = plan.B * plan.Hkv * plan.L * (plan.D + plan.Dv) * e
    scratch = blocks * len(SLOTS) * (s_bytes + p_bytes + o_bytes)
    footprint = q_bytes + kv_bytes + out_bytes + scratch
    kv_reads, handed = tiles * nk * (plan.D + plan.Dv) * e, tiles * (s_bytes + p_bytes + o_bytes)
    distance = cost.scratch_reuse_bytes(scratch, 2 * handed, q_bytes + kv_reads + 2 * handed + out_bytes, footprint)
    hit = {"kv": cost.l2_hit_fraction(kv_reads, kv_bytes, footprint),
           "in": cost.l2_hit_fraction(handed, 0, distance),
           "out": cost.l2_hit_fraction(handed, scratch, distance)}

    steps = ceil_div(nk, nk0 or nk)
    n0p = round_up(ceil_div(nk, steps), FRACTAL)
    share = ceil_div(mq, subs)  # an AIV's rows (the simulator runs the AIVs side by side)
    s_share, o_share, p_share = share * nk * 4, share * plan.Dv * 4, share * nk * e

    def per_item(movers: int) -> int:
        """An item's pipeline of key tiles, `movers` blocks sharing the bandwidth."""
        def gm(nbytes: int, src: str, dst: str, h: str) -> int:
            return max(cost.dma_cycles(nbytes, src, dst),
                       math.ceil(cost.gm_cycles(nbytes, movers, hit[h])) + cost.dma_cycles(0, src, dst))

        kv = gm(nk * plan.D * e, "gm", "l1", "kv") + gm(nk * plan.Dv * e, "gm", "l1", "kv")
        o_fix, o_in = gm(o_bytes, "l0c", "gm", "out"), gm(o_share, "gm", "ub", "in")
        o_vec = 3 * cost.vector_cycles("binary", o_share, "f32")
        pipes = {  # the AIC's MTE2 brings K, V and P into l1, each AIV's its rows of S and P V into ub
            "MTE2": kv + gm(p_bytes, "gm", "l1", "in"),
            "MTE2.aiv": gm(s_share, "gm", "ub", "in") + o_in,
            "FIX": gm(s_bytes, "l0c", "gm", "out") + o_fix,
            "MTE3": gm(p_share, "ub", "gm", "out"),
            "MTE1": steps * (cost.dma_cycles(mqp * n0p * e, "l1", "l0a") + cost.dma_cycles(n0p * dvp * e, "l1", "l0b")
                             + cost.dma_cycles(n0p * dp * e, "l1", "l0b")),
            "M": steps * (cost.mmad_cycles(mqp, dp, n0p, dt) + cost.mmad_cycles(mqp, n0p, dvp, dt)),
            "V": 10 * cost.vector_cycles("binary", s_share, "f32") + o_vec,
        }
        tile, chain = max(pipes.values()), sum(pipes.values())
        # no barrier between items: an item's K and V loads run while the item before it
        # finishes, and its last P V update beside the next item's first scores, so only a
        # block's first item waits for its loads and its last for its update
        update = o_fix + o_in + o_vec
        return chain - kv - update + tile * (tiles_per_item - 1), kv + update

    # items go to the blocks in rounds; a last partial round moves at its blocks' larger share
    shares = cost.wave_shares(items, blocks)
    priced = {movers: per_item(movers) for _, movers in shares}
    cycles = sum(rounds * priced[movers][0] for rounds, movers in shares) + priced[shares[0][1]][1]
    return cost.cycles_to_us(cycles + spec.block_dispatch_cycles)


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
        # q, k, v and the output as [rows, width] views of their arguments (one per argument
        # and width: q, k and v split from one qkv tensor share it)
        bases: dict[tuple[bool, int, int], SSAValue] = {}

        def base(r: Rows, out: bool = False) -> SSAValue:
            key = (out, r.arg, r.width)
            if key not in bases:
                bases[key] = kb.view((kb.outputs if out else ins)[r.arg], [r.numel // r.width, r.width])
            return bases[key]

        self.q2, self.k2, self.v2 = base(plan.q), base(plan.k), base(plan.v)
        self.o2 = base(plan.out, out=True)
        if plan.mask is not None:
            mb, mh, ms = plan.mask
            self.m2 = kb.view(ins[plan.mask_arg], [mb * mh * ms, plan.L])
        # two slots (a tile's parity) of every buffer a tile holds between pipeline stages
        self.q1 = kb.alloc([mqp, dp], elt, "l1", "q1")
        self.k1 = [kb.alloc([nkp, dp], elt, "l1", f"k1s{x}") for x in SLOTS]
        self.v1 = [kb.alloc([nkp, dvp], elt, "l1", f"v1s{x}") for x in SLOTS]
        self.p1 = [kb.alloc([mqp, nkp], elt, "l1", f"p1s{x}") for x in SLOTS]
        self.q0 = kb.alloc([mqp, dp], elt, "l0a", "q0")
        n0p = round_up(t.step, FRACTAL)
        self.p0 = [kb.alloc([mqp, n0p], elt, "l0a", f"p0s{x}") for x in SLOTS]
        self.kt0 = [kb.alloc([dp, n0p], elt, "l0b", f"kt0s{x}") for x in SLOTS]
        self.v0 = [kb.alloc([n0p, dvp], elt, "l0b", f"v0s{x}") for x in SLOTS]
        self.sc = [kb.alloc([mqp, nkp], f32, "l0c", f"scs{x}") for x in SLOTS]
        self.pvc = [kb.alloc([mqp, dvp], f32, "l0c", f"pvcs{x}") for x in SLOTS]
        # ub (f32), each vector core's for its share of the item's rows: the scores, a
        # temporary, P V, O, the row statistics; P in the input type
        wide = max(row_elems(nk, f32), row_elems(plan.Dv, f32))
        rows = ceil_div(mq, t.subs)
        self.s = [kb.alloc([rows, row_elems(nk, f32)], f32, "ub", f"ss{x}") for x in SLOTS]
        self.tmp = kb.alloc([rows, wide], f32, "ub", "t")
        self.pv = kb.alloc([rows, row_elems(plan.Dv, f32)], f32, "ub", "pv")
        self.o = kb.alloc([rows, row_elems(plan.Dv, f32)], f32, "ub", "o")
        self.m, self.l, self.mt, self.rs = (kb.alloc([rows, 8], f32, "ub", n) for n in ("m", "l", "mt", "rsum"))
        self.al = [kb.alloc([rows, 8], f32, "ub", f"alphas{x}") for x in SLOTS]
        if self.wide:
            pw = max(row_elems(nk, elt), row_elems(plan.Dv, elt))
            self.pe = [kb.alloc([rows, pw], elt, "ub", f"pes{x}") for x in SLOTS]
        if plan.mask is not None and plan.mask[2] == 1:
            self.mrow = kb.alloc([1, row_elems(nk, f32)], f32, "ub", "mrow")
            if self.wide:
                self.mrow_e = kb.alloc([1, row_elems(nk, elt)], elt, "ub", "mrow_e")
        elif plan.mask is not None:
            self.mk = kb.alloc([rows, row_elems(nk, elt)], elt, "ub", "mk")
        self.dm = kb.alloc([rows, row_elems(nk, f32)], f32, "ub", "dm") if plan.causal else None
        # causal at a run-time position: query i sees keys j <= i + off, off read once
        self.off = None
        if plan.position_arg is not None:
            self.off = kb.add(kb.load_index(ins[plan.position_arg]), plan.position_offset)
        # a shape range's keys: key c of a tile is padded when c >= n - k0 (`_key_mask`); the
        # tiles past the real keys do not run (`skips_keys`), nor the query tiles past the
        # positions the dim's other kernels compute (n rounded up to its quantum: rows they read)
        self.keys = kb.real_keys() if self.req.key_extent else None
        self.key_tiles = self.computed = None
        if self.keys is not None:
            if skips_keys(plan, t.nk) and plan.L > t.nk:
                self.key_tiles = kb.divui(kb.add(self.keys, t.nk - 1), t.nk)
            q = key_quantum(plan.L)
            if q < plan.S:
                self.computed = kb.min(kb.mul(kb.divui(kb.add(self.keys, q - 1), q), q), plan.S)
        if self.keys is not None:
            self.kcol = kb.alloc([1, row_elems(nk, f32)], f32, "ub", "kcol")
            self.krow = kb.alloc([1, row_elems(nk, f32)], f32, "ub", "krow")
        if t.splits > 1:  # the chain's shared buffers (scratch first): each part's O and lse
            rows_out = plan.B * plan.H * plan.S
            self.o_part = kb.scratch([rows_out, t.splits * plan.Dv], f32, "o_part")
            self.lse_part = kb.scratch([rows_out, t.splits * 8], f32, "lse_part")
        # gm scratch of the kernel's own, two slots per block: S, P, P V
        rows = t.blocks * 2 * mq
        self.sg = kb.scratch([rows, nk], f32, "s_ws")
        self.pg = kb.scratch([rows, nk], elt, "p_ws")
        self.og = kb.scratch([rows, plan.Dv], f32, "pv_ws")
        base = kb.mul(kb.block_idx(), 2 * mq) if t.blocks > 1 else 0
        self.ws_row = [kb.add(base, x * mq) for x in SLOTS]
        self.s_free = "V" if self.wide else "MTE3"

        # the item's query rows are shared over the block's vector cores (`vector_shares`)
        self.subs = t.subs
        self.shares = row_shares(mq, self.subs)
        aic, aiv, to_aiv, to_aic = self._credits()
        for f in aic:
            kb.set_flag(*f)
        for f in to_aiv:
            self._per_aiv(kb.set_flag, *f)

        def start(r0: int, n: int) -> None:
            for f in aiv + to_aic:
                kb.set_flag(*f)
            if self.dm is not None:
                self._diff_tile()
            if self.keys is not None:
                self._column_row(self.kcol)
        self._aivs(start)
        nq_full, q_rem = divmod(plan.S, mq)
        bh = plan.B * plan.H
        classes = []
        group = plan.H // plan.Hkv
        real = self._real_batches()
        def item(bh: Index, qi: Index, mv: int, part: tuple[Index, int] | None = None) -> None:
            if self.req.key_extent == "queries" and self.computed is not None:  # a query tile past the computed rows
                self._guarded(kb.less(kb.mul(qi, mq), self.computed), lambda: self._item(bh, qi, mv, part))
            else:
                self._item(bh, qi, mv, part)
        for first, count, keys in t.parts(plan.L):  # a part of the keys: (index, keys)
            def part(i: Index, first=first, keys=keys) -> tuple[Index, int] | None:
                return None if t.splits == 1 else (kb.add(first, i), keys)

            def limit(per_batch: int) -> tuple[Index, ...]:
                return () if real is None else (kb.mul(real, per_batch),)

            if t.grouped:  # kv head i of a batch row: query heads i * group .. as the rows
                classes.append(([plan.B * plan.Hkv, count],
                                lambda idx, part=part: item(kb.mul(idx[0], group), 0, mq, part(idx[1])),
                                *limit(plan.Hkv * count)))
                continue
            if nq_full and real is not None:  # batch outer: the real items come first
                classes.append(([bh, nq_full, count], lambda idx, part=part: item(idx[0], idx[1], mq, part(idx[2])),
                                *limit(plan.H * nq_full * count)))
            elif nq_full:
                # query tile outer: round-robin over the blocks then gives each block every causal
                # query tile about equally often (head outer gave block k only tiles k mod nq)
                classes.append(([nq_full, bh, count], lambda idx, part=part: item(idx[1], idx[0], mq, part(idx[2]))))
            if q_rem:
                classes.append(([bh, count], lambda idx, part=part: item(idx[0], nq_full, q_rem, part(idx[1])),
                                *limit(plan.H * count)))
        distribute(kb, t.blocks, classes)
        self.shares = row_shares(mq, self.subs)
        for f in aic:
            kb.wait_flag(*f)
        for f in to_aic:
            self._per_aiv(kb.wait_flag, *f)

        def end(r0: int, n: int) -> None:
            for f in aiv + to_aiv:
                kb.wait_flag(*f)
        self._aivs(end)
        kernel = kb.finish()
        kernel.attributes[attr_names.TEMPLATE] = StringAttr("attention")
        return kernel

    def _aivs(self, body: Callable[[int, int], None]) -> None:
        """body(r0, n) on each vector core the item's rows are shared over (`ascend.sub_block`
        i when there are several): the core's rows r0 .. r0 + n of the item, held in rows
        0 .. n of its own ub. Index values it computes stay in its region."""
        for i, (r0, n) in enumerate(self.shares):
            with self.kb.sub_block(i) if self.subs > 1 else nullcontext():
                body(r0, n)

    def _per_aiv(self, flag: Callable[[str, str, int], object], src: str, dst: str, ident: int) -> None:
        """A flag between the AIC and the vector cores, once per core sharing the item's rows:
        the AIC sets one for each core, or waits for each core's."""
        for _ in self.shares:
            flag(src, dst, ident)

    def _real_batches(self) -> Index | None:
        """How many batch rows are real at run time, when a shape range's dim is the batch
        (request.extent): its groups of output rows are the batch rows, b outermost. None
        otherwise, or with the keys split (the combine kernel would read every part)."""
        plan, ext = self.plan, self.req.extent
        if ext is None or self.t.splits > 1 or ext.count != plan.B or plan.B == 1:
            return None
        out = plan.out
        if out.offset or out.batch * plan.B != out.numel:
            return None
        return self.kb.real_rows(plan.B)

    def _credits(self) -> tuple[list, list, list, list]:
        """The `free` flags of every slot and of the per-item buffers, set once before the work
        items (each use waits for one and sets it again when the buffer may be refilled) and
        waited for at the end: the AIC's own, each vector core's own, the AIC's to each vector
        core (P's scratch read: MTE3 may write it again) and each core's to the AIC (S's and
        P V's scratch read: FIX may write them again)."""
        aic, aiv, to_aiv, to_aic = [], [], [], []
        for x in SLOTS:
            aic += [("MTE1", "MTE2", F_K + x), ("M", "MTE1", F_K + x), ("FIX", "M", F_K + x),
                    ("MTE1", "MTE2", F_V + x), ("MTE1", "MTE2", F_P + x), ("M", "MTE1", F_V + x),
                    ("FIX", "M", F_V + x)]
            aiv.append((self.s_free, "MTE2", F_K + x))
            if self.wide:
                aiv.append(("MTE3", "V", F_K + x))
            to_aiv.append(("MTE2", "MTE3", F_K + x))
            to_aic += [("MTE2", "FIX", F_K + x), ("MTE2", "FIX", F_V + x)]
        aic += [("MTE1", "MTE2", F_ITEM), ("M", "MTE1", F_ITEM)]
        aiv += [("MTE3", "V", F_ITEM), ("V", "MTE2", F_PV)]
        if self.plan.mask is not None:
            aiv.append(("V", "MTE2", F_MASK))
        return aic, aiv, to_aiv, to_aic

    def _column_row(self, row: SSAValue) -> None:
        """row[0, c] = c: eight scalar stores, then doubling along the row."""
        kb = self.kb
        width = row.type.get_shape()[1]
        for c in range(8):
            kb.emit(memref.StoreOp.get(kb.scalar(float(c), f32), row, [kb.index(0), kb.index(c)]))
        kb.sync("S", "V", CHAIN)
        w = 8
        while w < width:
            n = min(w, width - w)
            kb.vec(a.VaddsOp, kb.tile(row, [0, 0], [1, n]), kb.scalar(float(w), f32), kb.tile(row, [0, w], [1, n]))
            kb.barrier("V")
            w += n

    def _key_mask(self, s: SSAValue, tmp: SSAValue, k0: Index, nv: int) -> None:
        """The padded keys of the tile from key k0 (a shape range's, n real): key c is masked
        when c + k0 + 1 - n >= 1, s += NEG * clamp(c + k0 + 1 - n, 0, 1) on every row."""
        kb = self.kb
        row = kb.tile(self.krow, [0, 0], [1, nv])
        shift = kb.emit(arith.SIToFPOp(kb.emit(arith.IndexCastOp(kb.sub(kb.add(k0, 1), self.keys), i64)).result,
                                       f32)).result
        kb.vec(a.VaddsOp, kb.tile(self.kcol, [0, 0], [1, nv]), shift, row)
        kb.vec(a.VminsOp, row, kb.scalar(1.0, f32), row)
        kb.vec(a.VmaxsOp, row, kb.scalar(0.0, f32), row)          # 1 where padded
        kb.vec(a.VmulsOp, row, kb.scalar(NEG, f32), row)
        kb.vec(a.VbrcbOp, row, tmp)
        kb.vec(a.VaddOp, s, tmp, s)

    def _diff_tile(self) -> None:
        """dm[r, c] = c - r: the first row's column indices, then doubling down the rows."""
        kb, dm = self.kb, self.dm
        mq, width = dm.type.get_shape()
        self._column_row(dm)
        h = 1
        while h < mq:
            n = min(h, mq - h)
            kb.vec(a.VaddsOp, kb.tile(dm, [0, 0], [n, width]), kb.scalar(float(-h), f32),
                   kb.tile(dm, [h, 0], [n, width]))
            kb.barrier("V")
            h += n

    # -- one work item -----------------------------------------------------------------------

    def _item(self, bh: Index, qi: Index, mv: int, part: tuple[Index, int] | None = None) -> None:
        """The query tile qi (rows q0 = qi * mq, mv of them) of head bh = b * H + h: over every
        key, or over part p = (index, keys) of a split's (keys from index * chunk on)."""
        kb, plan, t = self.kb, self.plan, self.t
        mq, nk = t.mq, t.nk
        mvp = round_up(mv, FRACTAL)
        dp = round_up(plan.D, FRACTAL)
        self.bh, self.mv = bh, mv
        self.shares = row_shares(mv, self.subs)
        self.q0_row = kb.mul(qi, mq)
        self.heads: dict[tuple, tuple[Index, Index]] = {}
        self.b_h: tuple[Index, Index] | None = None
        q_at = self._at(plan.q, bh)
        self.k_at, self.v_at = (self._at(r, bh, plan.H // plan.Hkv) for r in (plan.k, plan.v))
        if plan.mask is not None:
            mb, mh, ms = plan.mask
            b, h = kb.divui(bh, plan.H), kb.remui(bh, plan.H)
            mrow = kb.add(kb.mul(b if mb > 1 else 0, mh), h if mh > 1 else 0)
            self.mask_row = kb.mul(mrow, ms)
        # Q: gm -> l1 -> l0a, once per work item (into buffers the previous item has left)
        qrow = kb.add(q_at[0], self.q0_row)
        kb.wait_flag("MTE1", "MTE2", F_ITEM)
        self._load(kb.tile(self.q2, [qrow, q_at[1]], [mv, plan.D]), kb.tile(self.q1, [0, 0], [mvp, dp]))
        kb.sync("MTE2", "MTE1", CHAIN)
        kb.wait_flag("M", "MTE1", F_ITEM)
        kb.copy(kb.tile(self.q1, [0, 0], [mvp, dp]), kb.tile(self.q0, [0, 0], [mvp, dp]))
        kb.set_flag("MTE1", "MTE2", F_ITEM)
        kb.sync("MTE1", "M", CHAIN)
        # the key tiles: [0, rem) first, then whole ones; causal: visible, then diagonal
        base = 0 if part is None else kb.mul(part[0], t.chunk)
        n_full, rem = divmod(plan.L if part is None else part[1], nk)
        first = kb.add(base, rem)
        if self.off is not None:  # the band's tiles [n_vis, n_run) at a run-time position
            n_vis, n_run = self._position_split(mv, n_full)
            diags = []
        else:
            n_vis, diags = self._causal_split(qi, mv, n_full, rem)
            n_run = n_vis
            for _j, _d, cond in diags:
                n_run = kb.add(n_run, self._count(cond))
        if self.key_tiles is not None:  # only the tiles holding a real key (rem is 0)
            n_run = kb.min(n_run, self.key_tiles)
        # the row statistics and O; O is the first tile's P V itself (`_update`) when that
        # tile's update runs unconditionally (a static count of tiles)
        self.o_fresh = bool(rem) or (isinstance(n_run, int) and n_run > 0)

        def init(r0: int, n: int) -> None:
            kb.wait_flag("MTE3", "V", F_ITEM)
            kb.vec(a.VdupOp, kb.scalar(NEG, f32), self._rows(self.m, 8, n))
            kb.vec(a.VdupOp, kb.scalar(0.0, f32), self._rows(self.l, 8, n))
            if not self.o_fresh:
                kb.vec(a.VdupOp, kb.scalar(0.0, f32), kb.tile(self.o, [0, 0], [n, self.o.type.get_shape()[1]]))
        self._aivs(init)
        if rem:
            self._pipeline(lambda j: base, 1, rem, lambda j: [(c, d) for c, d in self._first_band(qi, rem) if d is not None])

        def bands(j: Index) -> list:
            if self.off is not None:  # key c of tile j is seen by row r when c - r <= q0 + off - j * nk
                return [(self._ge(j, n_vis), kb.sub(kb.add(self.q0_row, self.off), kb.mul(j, nk)))]
            return [(self._and(cond, self._eq(j, jd)), d) for jd, d, cond in diags]

        self._pipeline(lambda j: kb.add(first, kb.mul(j, nk)), n_run, nk, bands)
        if part is not None:
            row = kb.add(kb.mul(bh, plan.S), self.q0_row)
            col = kb.mul(part[0], plan.Dv), kb.mul(part[0], 8)
            self._aivs(lambda r0, n: self._write_part(kb.add(row, r0), col, n))
            kb.set_flag("M", "MTE1", F_ITEM)
            return
        # out = O / l
        o_at = self._at(plan.out, bh)
        row = kb.add(o_at[0], self.q0_row)
        self._aivs(lambda r0, n: self._write_out(kb.add(row, r0), o_at[1], n))
        # Q's l0a buffer (after the item's mmads) to the next item: no barrier, so its Q and
        # first key tiles load while this item's last tiles finish
        kb.set_flag("M", "MTE1", F_ITEM)

    def _write_out(self, row: Index, col: Index, n: int) -> None:
        """A vector core's n rows of out = O / l (in the output's type) to the output's rows
        from `row`; then O and the statistics go to the next item (MTE3 -> V F_ITEM)."""
        kb, dv = self.kb, self.plan.Dv
        lb = kb.tile(self.tmp, [0, 0], [n, dv])
        kb.vec(a.VbrcbOp, self._rows(self.l, 1, n), lb)
        ov = kb.tile(self.o, [0, 0], [n, dv])
        kb.vec(a.VdivOp, ov, lb, ov)
        src = ov
        if self.wide:
            src = kb.tile(self.pe[0], [0, 0], [n, dv])
            kb.wait_flag("MTE3", "V", F_K)
            kb.vec(a.VcastOp, ov, src)
        kb.sync("V", "MTE3", CHAIN)
        kb.copy(src, kb.tile(self.o2, [row, col], [n, dv]))
        if self.wide:
            kb.set_flag("MTE3", "V", F_K)
        kb.set_flag("MTE3", "V", F_ITEM)

    def _write_part(self, row: Index, cols: tuple[Index, Index], n: int) -> None:
        """A vector core's n rows of a part's results into the chain's shared buffers, from
        row (b * H + h) * S + q: O / l (f32) at columns p * Dv .., and the log-sum-exp m + ln l
        in the 32-byte block at columns 8p .. 8p + 7 (a vector tile starts on a block)."""
        kb, dv = self.kb, self.plan.Dv
        lb = kb.tile(self.tmp, [0, 0], [n, dv])
        kb.vec(a.VbrcbOp, self._rows(self.l, 1, n), lb)
        ov = kb.tile(self.o, [0, 0], [n, dv])
        kb.vec(a.VdivOp, ov, lb, ov)
        lse = self._rows(self.rs, 1, n)
        kb.vec(a.VlogOp, self._rows(self.l, 1, n), lse)
        kb.vec(a.VaddOp, self._rows(self.m, 1, n), lse, lse)
        block = self._rows(self.mt, 8, n)
        kb.vec(a.VbrcbOp, lse, block)
        kb.sync("V", "MTE3", CHAIN)
        kb.copy(ov, kb.tile(self.o_part, [row, cols[0]], [n, dv]))
        kb.copy(block, kb.tile(self.lse_part, [row, cols[1]], [n, 8]))
        kb.set_flag("MTE3", "V", F_ITEM)

    def _count(self, cond: bool | SSAValue) -> Index:
        if isinstance(cond, bool):
            return int(cond)
        kb = self.kb
        return kb.emit(arith.SelectOp(cond, kb.index(1), kb.index(0))).result

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
        for tt in range(1, 2 + ceil_div(mv - 1, nk)):  # two when mq == nk
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

    def _position_split(self, mv: int, n_full: int) -> tuple[Index, Index]:
        """At a run-time position (query q0 + r sees keys up to q0 + r + off; whole key tiles):
        the tiles every row of the item sees, and the tiles any row sees - the band between
        them is at most two tiles, as mv <= nk."""
        kb, nk = self.kb, self.t.nk
        first = kb.add(self.q0_row, self.off)  # the first row's last key
        n_vis = kb.min(kb.divui(kb.add(first, 1), nk), n_full)
        n_run = kb.min(kb.divui(kb.add(first, mv + nk - 1), nk), n_full)
        return n_vis, n_run

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

    # -- the software pipeline over key tiles ------------------------------------------------

    def _pipeline(self, k0: Callable[[Index], Index], n: Index, nv: int, bands: Callable[[Index], list]) -> None:
        """Key tiles 0 .. n-1 (keys k0(j) .. + nv) as a software pipeline of STAGES stages:
        iteration i runs stage s on tile i - s, the stages in reverse order (the oldest tile's
        step first), so the cube computes tile j + 1's scores while the vector unit runs tile
        j's softmax and the cube tile j - 1's P V. Every buffer a tile uses between stages has
        two slots (the tile's parity) with a flag id each; static n is unrolled, runtime n is
        an `scf.for` over pairs of iterations with each stage guarded by 0 <= i - s < n."""
        kb = self.kb

        def iteration(i: Index, r: int) -> None:
            for st in reversed(range(STAGES)):
                j = kb.sub(i, st)
                if isinstance(j, int) and j < 0:
                    continue
                cond = self._lt(j, n) if isinstance(i, int) else self._lt(i, kb.add(n, st))
                self._guarded(cond, lambda st=st, j=j: self._stage(st, j, (r - st) % 2, k0, nv, bands))

        if isinstance(n, int):
            for i in range(n + STAGES - 1):
                iteration(i, i % 2)
            return
        # the fill statically (each flag's first set comes before its waits in the text), then
        # pairs of iterations so every slot index is static
        for i in range(STAGES - 1):
            iteration(i, i % 2)
        with kb.loop(STAGES - 1, kb.add(n, STAGES - 1), 2, "i") as i0:
            for r in (0, 1):
                iteration(kb.add(i0, r), (STAGES - 1 + r) % 2)

    def _stage(self, st: int, j: Index, x: int, k0, nv: int, bands) -> None:
        if st == 0:
            self._load_k(k0(j), nv, x)
        elif st == 1:
            self._scores(nv, x)
        elif st == 2:
            self._softmax(k0(j), nv, x, bands(j))
        elif st == 3:
            self._pv(nv, x)
        else:
            self._update(x)

    def _load_k(self, k0: Index, nv: int, x: int) -> None:
        """Stage 0 (MTE2): K rows k0 .. k0 + nv of the item's kv head into l1 slot x."""
        kb, plan = self.kb, self.plan
        kb.wait_flag("MTE1", "MTE2", F_K + x)
        self._load(kb.tile(self.k2, [kb.add(self.k_at[0], k0), self.k_at[1]], [nv, plan.D]),
                   kb.tile(self.k1[x], [0, 0], [round_up(nv, FRACTAL), round_up(plan.D, FRACTAL)]))
        kb.set_flag("MTE2", "MTE1", F_K + x)

    def _steps_of(self, nv: int) -> list[tuple[int, int]]:
        """(first key, keys) of each cube step of a tile of nv keys."""
        step = self.t.step
        return [(c, min(step, nv - c)) for c in range(0, nv, step)]

    def _scores(self, nv: int, x: int) -> None:
        """Stage 1 (cube): per cube step, K^T into l0b (MTE1) and its columns of S = Q K^T into
        l0c (M); then FIX into the block's scratch tile of slot x."""
        kb, plan = self.kb, self.plan
        mvp, nvp, dp = round_up(self.mv, FRACTAL), round_up(nv, FRACTAL), round_up(plan.D, FRACTAL)
        kb.wait_flag("MTE2", "MTE1", F_K + x)
        steps = self._steps_of(nv)
        for i, (c0, cw) in enumerate(steps):
            cwp = round_up(cw, FRACTAL)
            kt = kb.tile(self.kt0[x], [0, 0], [dp, cwp])
            kb.wait_flag("M", "MTE1", F_K + x)
            kb.copy(kb.tile(self.k1[x], [c0, 0], [cwp, dp]), kt, transpose=UnitAttr())
            if i == len(steps) - 1:
                kb.set_flag("MTE1", "MTE2", F_K + x)
            kb.set_flag("MTE1", "M", F_K + x)
            self._step(kb.tile(self.q0, [0, 0], [mvp, dp]), kt, kb.tile(self.sc[x], [0, c0], [mvp, cwp]),
                       F_K + x, first=i == 0, init=True)
        self._fix(kb.tile(self.sc[x], [0, 0], [mvp, nvp]), kb.tile(self.sg, [self.ws_row[x], 0], [self.mv, nv]),
                  F_K + x)

    def _step(self, lhs: SSAValue, rhs: SSAValue, acc: SSAValue, f: int, first: bool, init: bool) -> None:
        """acc (+)= lhs x rhs (M, once MTE1 has loaded the operands and, on a tile's first
        step, FIX has emptied the accumulator)."""
        kb = self.kb
        kb.wait_flag("MTE1", "M", f)
        if first:
            kb.wait_flag("FIX", "M", f)
        kb.emit(a.MmadOp.get(lhs, rhs, acc, init=init))
        kb.set_flag("M", "MTE1", f)

    def _fix(self, acc: SSAValue, scratch: SSAValue, f: int) -> None:
        """FIX writes the valid part of acc into a scratch tile (once M is done with it and
        every vector core's MTE2 has read its rows of the scratch's last content), and tells
        each vector core."""
        kb = self.kb
        kb.set_flag("M", "FIX", f)
        kb.wait_flag("M", "FIX", f)
        self._per_aiv(kb.wait_flag, "MTE2", "FIX", f)
        self._load(acc, scratch)
        kb.set_flag("FIX", "M", f)
        self._per_aiv(kb.set_flag, "FIX", "MTE2", f)

    def _softmax(self, k0: Index, nv: int, x: int, bands: list) -> None:
        """Stage 2: V into l1 slot x (the AIC's MTE2); on each vector core, its rows of S from
        the scratch into ub slot x (MTE2), scale, mask, band and the online softmax (V), its
        rows of P to the scratch (MTE3)."""
        kb, plan = self.kb, self.plan
        kb.wait_flag("MTE1", "MTE2", F_V + x)
        self._load(kb.tile(self.v2, [kb.add(self.v_at[0], k0), self.v_at[1]], [nv, plan.Dv]),
                   kb.tile(self.v1[x], [0, 0], [round_up(nv, FRACTAL), round_up(plan.Dv, FRACTAL)]))
        kb.set_flag("MTE2", "MTE1", F_V + x)
        self._aivs(lambda r0, n: self._softmax_rows(k0, nv, x, bands, r0, n))

    def _softmax_rows(self, k0: Index, nv: int, x: int, bands: list, r0: int, n: int) -> None:
        """Stage 2 on one vector core: rows r0 .. r0 + n of the item."""
        kb, plan = self.kb, self.plan
        s = kb.tile(self.s[x], [0, 0], [n, nv])
        tmp = kb.tile(self.tmp, [0, 0], [n, nv])
        kb.wait_flag(self.s_free, "MTE2", F_K + x)
        kb.wait_flag("FIX", "MTE2", F_K + x)
        kb.copy(kb.tile(self.sg, [kb.add(self.ws_row[x], r0), 0], [n, nv]), s)
        kb.set_flag("MTE2", "FIX", F_K + x)
        kb.set_flag("MTE2", "V", F_K + x)
        if plan.mask is not None:
            kb.wait_flag("V", "MTE2", F_MASK)
            self._load_mask(k0, nv, r0, n)
            kb.set_flag("MTE2", "V", F_MASK)
        kb.wait_flag("MTE2", "V", F_K + x)
        # scale, mask, causal band; masked scores clamp to NEG (a -inf mask too)
        kb.vec(a.VmulsOp, s, kb.scalar(plan.scale, f32), s)
        if plan.mask is not None:
            kb.wait_flag("MTE2", "V", F_MASK)
            if plan.mask[2] == 1:
                if self.wide:
                    kb.vec(a.VcastOp, kb.tile(self.mrow_e, [0, 0], [1, nv]), kb.tile(self.mrow, [0, 0], [1, nv]))
                kb.vec(a.VbrcbOp, kb.tile(self.mrow, [0, 0], [1, nv]), tmp)
            elif self.wide:
                kb.vec(a.VcastOp, kb.tile(self.mk, [0, 0], [n, nv]), tmp)
            else:
                tmp = kb.tile(self.mk, [0, 0], [n, nv])
            kb.vec(a.VaddOp, s, tmp, s)
            kb.set_flag("V", "MTE2", F_MASK)
            tmp = kb.tile(self.tmp, [0, 0], [n, nv])
        for cond, d in bands:  # the band of rows r0 ..: c - (r + r0) - d
            self._guarded(cond, lambda d=d: self._band(s, tmp, nv, kb.add(d, r0)))
        if self.keys is not None:  # a tile that holds a padded key
            self._guarded(kb.less(self.keys, kb.add(k0, nv)), lambda: self._key_mask(s, tmp, k0, nv))
        if plan.mask is not None or bands or self.keys is not None:
            kb.vec(a.VmaxsOp, s, kb.scalar(NEG, f32), s)
        # online softmax
        m, mt, l, rs = (self._rows(v, 1, n) for v in (self.m, self.mt, self.l, self.rs))
        al = self._rows(self.al[x], 1, n)
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
            p = kb.tile(self.pe[x], [0, 0], [n, nv])
            kb.wait_flag("MTE3", "V", F_K + x)
            kb.vec(a.VcastOp, s, p)
            kb.set_flag("V", "MTE2", F_K + x)            # s is free again
        kb.set_flag("V", "MTE3", F_K + x)
        kb.wait_flag("V", "MTE3", F_K + x)
        kb.wait_flag("MTE2", "MTE3", F_K + x)
        kb.copy(p, kb.tile(self.pg, [kb.add(self.ws_row[x], r0), 0], [n, nv]))
        kb.set_flag("MTE3", "V" if self.wide else "MTE2", F_K + x)   # pe (f32: s) is free again
        kb.set_flag("MTE3", "MTE2", F_V + x)

    def _band(self, s: SSAValue, tmp: SSAValue, nv: int, d: Index) -> None:
        """Key c of the tile is masked for query r (of the core's rows, as the tile s is) when
        c - r > d: s += NEG * clamp(c - r - d, 0, 1). d static, or run-time (a position)."""
        kb = self.kb
        dm = kb.tile(self.dm, [0, 0], [s.type.get_shape()[0], nv])
        if isinstance(d, int):
            shift = kb.scalar(float(-d), f32)
        else:
            neg = kb.sub(0, d)
            shift = kb.emit(arith.SIToFPOp(kb.emit(arith.IndexCastOp(kb.index(neg), i64)).result, f32)).result
        kb.vec(a.VaddsOp, dm, shift, tmp)   # c - r - d
        kb.vec(a.VminsOp, tmp, kb.scalar(1.0, f32), tmp)
        kb.vec(a.VmaxsOp, tmp, kb.scalar(0.0, f32), tmp)          # 1 where masked
        kb.vec(a.VmulsOp, tmp, kb.scalar(NEG, f32), tmp)
        kb.vec(a.VaddOp, s, tmp, s)

    def _pv(self, nv: int, x: int) -> None:
        """Stage 3 (cube): P from the scratch into l1 (MTE2), P and V into l0 (MTE1), P V (M),
        FIX into the scratch tile of slot x."""
        kb, plan = self.kb, self.plan
        mv, mvp, nvp, dvp = self.mv, round_up(self.mv, FRACTAL), round_up(nv, FRACTAL), round_up(plan.Dv, FRACTAL)
        p1 = kb.tile(self.p1[x], [0, 0], [mvp, nvp])
        self._per_aiv(kb.wait_flag, "MTE3", "MTE2", F_V + x)   # every core's rows of P
        kb.wait_flag("MTE1", "MTE2", F_P + x)
        self._load(kb.tile(self.pg, [self.ws_row[x], 0], [mv, nv]), p1)
        self._per_aiv(kb.set_flag, "MTE2", "MTE3", F_K + x)
        kb.set_flag("MTE2", "MTE1", F_P + x)
        acc = kb.tile(self.pvc[x], [0, 0], [mvp, dvp])
        kb.wait_flag("MTE2", "MTE1", F_P + x)
        kb.wait_flag("MTE2", "MTE1", F_V + x)
        steps = self._steps_of(nv)
        for i, (c0, cw) in enumerate(steps):  # P V accumulated over the cube steps
            cwp = round_up(cw, FRACTAL)
            p0 = kb.tile(self.p0[x], [0, 0], [mvp, cwp])
            v0 = kb.tile(self.v0[x], [0, 0], [cwp, dvp])
            kb.wait_flag("M", "MTE1", F_V + x)
            kb.copy(kb.tile(self.p1[x], [0, c0], [mvp, cwp]), p0)
            kb.copy(kb.tile(self.v1[x], [c0, 0], [cwp, dvp]), v0)
            if i == len(steps) - 1:
                kb.set_flag("MTE1", "MTE2", F_P + x)
                kb.set_flag("MTE1", "MTE2", F_V + x)
            kb.set_flag("MTE1", "M", F_V + x)
            self._step(p0, v0, acc, F_V + x, first=i == 0, init=i == 0)
        self._fix(acc, kb.tile(self.og, [self.ws_row[x], 0], [mv, plan.Dv]), F_V + x)

    def _update(self, x: int) -> None:
        """Stage 4, on each vector core: its rows of P V from the scratch into ub (MTE2),
        O = O * a + P V (V). The item's first tile's P V goes straight into O (`o_fresh`: O
        holds nothing to rescale yet), once the vector unit is done with the previous item's O."""
        if self.o_fresh:
            self.o_fresh = False
            self._aivs(lambda r0, n: self._first_update(x, r0, n))
            return
        self._aivs(lambda r0, n: self._update_rows(x, r0, n))

    def _update_rows(self, x: int, r0: int, n: int) -> None:
        kb, dv = self.kb, self.plan.Dv
        pv = kb.tile(self.pv, [0, 0], [n, dv])
        kb.wait_flag("FIX", "MTE2", F_V + x)
        kb.wait_flag("V", "MTE2", F_PV)
        kb.copy(kb.tile(self.og, [kb.add(self.ws_row[x], r0), 0], [n, dv]), pv)
        kb.set_flag("MTE2", "FIX", F_V + x)
        kb.set_flag("MTE2", "V", F_PV)
        ab = kb.tile(self.tmp, [0, 0], [n, dv])
        ov = kb.tile(self.o, [0, 0], [n, dv])
        kb.vec(a.VbrcbOp, self._rows(self.al[x], 1, n), ab)
        kb.wait_flag("MTE2", "V", F_PV)
        kb.vec(a.VmulOp, ov, ab, ov)
        kb.vec(a.VaddOp, ov, pv, ov)
        kb.set_flag("V", "MTE2", F_PV)

    def _first_update(self, x: int, r0: int, n: int) -> None:
        """Stage 4 of the item's first tile on one vector core: its rows of P V are O (O holds
        nothing to rescale yet), copied from the scratch straight into O once the vector unit
        is done with the previous item's O."""
        kb, dv = self.kb, self.plan.Dv
        kb.wait_flag("FIX", "MTE2", F_V + x)
        kb.sync("V", "MTE2", CHAIN)
        kb.copy(kb.tile(self.og, [kb.add(self.ws_row[x], r0), 0], [n, dv]), kb.tile(self.o, [0, 0], [n, dv]))
        kb.set_flag("MTE2", "FIX", F_V + x)
        kb.sync("MTE2", "V", CHAIN)

    def _load_mask(self, k0: Index, nv: int, r0: int, n: int) -> None:
        """A vector core's mask tile (MTE2): its rows r0 .. r0 + n of the item's [mv, nv] (in
        the mask's type), or the mask's one row [1, nv] (broadcast over the queries later)."""
        kb, plan = self.kb, self.plan
        if plan.mask[2] == 1:
            src = kb.tile(self.m2, [self.mask_row, k0], [1, nv])
            kb.copy(src, kb.tile(self.mrow_e if self.wide else self.mrow, [0, 0], [1, nv]))
            return
        src = kb.tile(self.m2, [kb.add(kb.add(self.mask_row, self.q0_row), r0), k0], [n, nv])
        kb.copy(src, kb.tile(self.mk, [0, 0], [n, nv]))

    # -- helpers -------------------------------------------------------------------------------

    def _at(self, r: Rows, bh: Index, group: int = 1) -> tuple[Index, Index]:
        """(first row, column) of r's head for work item head bh = b * H + h (its head h //
        group: a kv head serves `group` query heads); equal addressing is computed once."""
        key = (r.width, r.offset, r.batch, r.head, r.heads, group)
        if key in self.heads:
            return self.heads[key]
        kb, w = self.kb, r.width
        if r.merged:  # one index b * heads + h
            terms = [(kb.divui(bh, group), r.head)]
        else:
            if self.b_h is None:  # b and h of the item, once
                self.b_h = (kb.divui(bh, self.plan.H), kb.remui(bh, self.plan.H))
            b, h = self.b_h
            terms = [(b, r.batch), (kb.divui(h, group), r.head)]
        row, col = r.offset // w, r.offset % w
        for index, stride in terms:
            row = kb.add(row, kb.mul(index, stride // w))
            col = kb.add(col, kb.mul(index, stride % w))
        self.heads[key] = (row, col)
        return row, col

    def _rows(self, stat: SSAValue, cols: int, n: int) -> SSAValue:
        """The first `cols` columns of a vector core's n rows of a row statistic."""
        return self.kb.tile(stat, [0, 0], [n, cols])

    def _load(self, src: SSAValue, dst: SSAValue) -> None:
        """A copy between tiles of different static shapes pads (gm -> l1: zeros past the source)
        or crops (l0c -> gm: the leading part)."""
        if src.type.get_shape() == dst.type.get_shape():
            self.kb.copy(src, dst)
        else:
            self.kb.copy(src, dst, pad=UnitAttr())

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


class CombineKernel(AttentionKernel):
    """Flash decoding's second kernel, after the attention kernel of a split tiling: per query
    row, the parts' results weighed by w_p = exp(lse_p - max lse), out = sum_p w_p O_p / sum_p
    w_p, in the output's type and written where the output is (the plan's `out` rows). A
    vector kernel; a work item is a head's tile of query rows."""

    def build(self) -> a.KernelOp:
        plan, t = self.plan, self.t
        parts, dv, elt = t.splits, plan.Dv, plan.elt
        req = dataclasses.replace(self.req, name=f"{self.req.name}_combine")
        mr = self.mr = combine_rows(plan, parts, req.device)
        bh = plan.B * plan.H
        nq_full, q_rem = divmod(plan.S, mr)
        items = bh * ceil_div(plan.S, mr)
        kb = self.kb = KernelBuilder(req, "vector", min(items, req.device.vector_cores))
        r = plan.out
        self.o2 = kb.view(kb.outputs[r.arg], [r.numel // r.width, r.width])
        rows_out = bh * plan.S
        self.o_part = kb.scratch([rows_out, parts * dv], f32, "o_part")    # the chain's shared buffers
        self.lse_part = kb.scratch([rows_out, parts * 8], f32, "lse_part")
        self.parts_u = kb.alloc([mr, parts * dv], f32, "ub", "parts")
        self.lse_u, self.w = (kb.alloc([mr, parts * 8], f32, "ub", n) for n in ("lse", "w"))
        self.mx, self.den = (kb.alloc([mr, 8], f32, "ub", n) for n in ("mx", "den"))
        self.acc, self.tmp = (kb.alloc([mr, row_elems(dv, f32)], f32, "ub", n) for n in ("acc", "t"))
        self.oe = kb.alloc([mr, row_elems(dv, elt)], elt, "ub", "oe") if elt != f32 else None
        classes = []
        if nq_full:
            classes.append(([nq_full, bh], lambda idx: self._combine(idx[1], idx[0], mr)))
        if q_rem:
            classes.append(([bh, 1], lambda idx: self._combine(idx[0], nq_full, q_rem)))
        distribute(kb, min(items, req.device.vector_cores), classes)
        kernel = kb.finish()
        kernel.attributes[attr_names.TEMPLATE] = StringAttr("attention")
        return kernel

    def _combine(self, bh: Index, qi: Index, mv: int) -> None:
        kb, plan, parts, dv = self.kb, self.plan, self.t.splits, self.plan.Dv
        self.mv, self.heads, self.b_h = mv, {}, None
        q0 = kb.mul(qi, self.mr)
        row = kb.add(kb.mul(bh, plan.S), q0)
        kb.copy(kb.tile(self.lse_part, [row, 0], [mv, parts * 8]), kb.tile(self.lse_u, [0, 0], [mv, parts * 8]))
        kb.copy(kb.tile(self.o_part, [row, 0], [mv, parts * dv]), kb.tile(self.parts_u, [0, 0], [mv, parts * dv]))
        kb.sync("MTE2", "V", CHAIN)
        # each part's log-sum-exp fills a block of its row: whole blocks all the way
        lse = [kb.tile(self.lse_u, [0, 8 * p], [mv, 8]) for p in range(parts)]
        w = [kb.tile(self.w, [0, 8 * p], [mv, 8]) for p in range(parts)]
        mx, den = self._rows(self.mx, 8, mv), self._rows(self.den, 8, mv)
        kb.vec(a.VcopyOp, lse[0], mx)
        for p in range(1, parts):
            kb.vec(a.VmaxOp, mx, lse[p], mx)
        for p in range(parts):
            kb.vec(a.VsubOp, lse[p], mx, w[p])
            kb.vec(a.VexpOp, w[p], w[p])                 # w_p = exp(lse_p - max lse)
        kb.vec(a.VcopyOp, w[0], den)
        for p in range(1, parts):
            kb.vec(a.VaddOp, den, w[p], den)
        den = self._rows(self.den, 1, mv)
        acc, tmp = kb.tile(self.acc, [0, 0], [mv, dv]), kb.tile(self.tmp, [0, 0], [mv, dv])
        for p in range(parts):
            kb.vec(a.VbrcbOp, kb.tile(self.w, [0, 8 * p], [mv, 1]), tmp)
            o_p = kb.tile(self.parts_u, [0, p * dv], [mv, dv])
            if p == 0:
                kb.vec(a.VmulOp, o_p, tmp, acc)
            else:
                kb.vec(a.VmulOp, o_p, tmp, tmp)
                kb.vec(a.VaddOp, acc, tmp, acc)
        kb.vec(a.VbrcbOp, den, tmp)
        kb.vec(a.VdivOp, acc, tmp, acc)
        src = acc
        if self.oe is not None:
            src = kb.tile(self.oe, [0, 0], [mv, dv])
            kb.vec(a.VcastOp, acc, src)
        kb.sync("V", "MTE3", CHAIN)
        o_at = self._at(plan.out, bh)
        kb.copy(src, kb.tile(self.o2, [kb.add(o_at[0], q0), o_at[1]], [mv, dv]))
        kb.barrier("ALL")  # the next item reuses every buffer


def combine_rows(plan: AttentionPlan, parts: int, spec) -> int:
    """Query rows a combine work item takes: as many as ub holds (its parts, log-sum-exps,
    weights, statistics, the sum and a temporary, the output in its type), at most 64 and
    S; 0 when not even one fits."""
    per_row = (parts * plan.Dv + 2 * parts * 8 + 16 + 2 * row_elems(plan.Dv, f32)) * 4
    if plan.elt != f32:
        per_row += row_elems(plan.Dv, plan.elt) * itemsize(plan.elt)
    return min(plan.S, 64, spec.buffer_bytes["ub"] // per_row)


def try_build(req: KernelRequest) -> a.KernelOp | KernelChain | None:
    """An attention kernel for a request that is one graph.attention (with the views of its
    operands and result, `plan_request`) - or, for a split tiling, the chain of it and its
    combine kernel; None otherwise."""
    plan = plan_request(req)
    if plan is None:
        return None
    tiling = attention_tiling(req, plan)
    if tiling is None:
        return None
    try:
        kernel = AttentionKernel(req, plan, tiling).build()
        if tiling.splits == 1:
            return kernel
        return KernelChain((kernel, CombineKernel(req, plan, tiling).build()), shared=2)
    except LoweringError:
        return None
