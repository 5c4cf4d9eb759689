"""graph-fuse: group graph ops into `graph.fusion` kernels, priced by the device cost model.

GE fuses ops so that intermediates stay on chip and fewer kernels are launched. This pass does
the same in four steps:

1. Decomposed LayerNorms and RMSNorms become one `graph.layer_norm` / `graph.rms_norm`,
   located at every node they replace (graph-recognize-layer-norm, graph-recognize-rms-norm,
   run before this pass): the kernel library's normalisations are one pass over a row.
2. Every op gets a role (cube, elementwise, reduce, ...). Each pattern of `PATTERNS` - a seed at
   an anchor op (the anchor itself, a matched attention chain, or graph.attention with the
   views its operands are read through and its result is written through) plus the roles it may absorb
   as cube prologue, epilogue and side inputs - gives one candidate per anchor, grown greedily.
2. Each candidate is priced with `target.cost_model.CostModel`: separate kernels minus one fused
   kernel (launches saved, intermediates that no longer go through HBM) and checked against a
   minimal tile model (UB for the vector part, L0C for the cube accumulator). Candidates are
   taken greedily, highest benefit first; one that lost ops to a taken group is regrown.
3. Each group becomes a `graph.fusion` (block arguments for external operands, small constants
   cloned in, `graph.yield` for every value used outside or tapped with `graph.keep`).
4. Before that, a normalisation group whose norm only one cube group's matmuls read joins
   it as the kernel's prologue where that pays (`norm_prologues`: a decode step's rows), and
   one that reads a lone matmul's product over its rows joins it as the kernel's epilogue
   where that pays (`norm_epilogues`: a post-LN block's out-projection).

Legality: no op is ever cloned (a producer with users outside the group is either left outside
or yielded), and a group must be convex - no path may leave it and come back - which is checked
with ancestor/descendant bitsets of the graph in which taken groups are contracted.
docs/passes.md documents the patterns, the cost and tile models and the options.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsTerminator

from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.dialects.traits import (
    DataMovement,
    Elementwise,
    Normalization,
    RowMixing,
    Reduction,
    RowSoftmax,
    ViewLike,
    reduced_axes,
)
from geir.ir.locations import fused_loc, loc_names
from geir.ir.text import LITERAL_LIMIT
from geir.ir.types import i1, is_float, is_narrow, to_dtype
from geir.target import op_info
from geir.target.cost_model import CostModel
from geir.target.device import DEFAULT_DEVICE, dtype_name


# ---------------------------------------------------------------------------
# Roles: what an op is to a fused kernel.
# ---------------------------------------------------------------------------


class Role(Enum):
    CUBE = "cube"              # conv, matmul, gemm: the cube unit
    ELEMENTWISE = "elementwise"  # unary/binary/broadcast ops, inference batch_norm
    REDUCE = "reduce"          # reductions over some axes (reduce_*, global pools, instance_norm)
    SOFTMAX = "softmax"        # softmax / log_softmax: a row reduction and its epilogue
    NORM = "norm"              # layer_norm, rms_norm (Normalization), rotary_embedding (RowMixing): whole rows
    VIEW = "view"              # same bytes, other shape: reshape, squeeze, identity, dropout, ...
    MOVE = "move"              # data movement: transpose, slice/gather by constants, concat, pad
    CHANNEL_CONCAT = "channel-concat"  # concat of NCHW tensors along whole C0 blocks of channels
    ATTENTION = "attention"    # graph.attention: the attention kernel (cube and vector, its own tiling)
    OPAQUE = "opaque"          # never fused: pooling windows, lrn, integer/shape arithmetic, ...


C0 = 16
"""Channels per NC1HWC0 block (2- and 4-byte types): a channel concat of whole blocks is free."""


def _static(t) -> bool:
    return isinstance(t, TensorType) and all(d >= 0 for d in t.get_shape())


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def _numel(v: SSAValue) -> int:
    return math.prod(_shape(v))


def _itemsize(v: SSAValue) -> int:
    return to_dtype(v.type.element_type).itemsize


def _nbytes(v: SSAValue) -> int:
    return _numel(v) * _itemsize(v)


def _constant_operands(op: Operation, start: int) -> bool:
    return all(g.constant_value_of(v) is not None for v in op.operands[start:])


def _trivial_transpose(op: g.TransposeOp) -> bool:
    """A transpose that only moves size-1 dims keeps the element order: a view."""
    x = _shape(op.inputs[0])
    perm = op.attrs()["perm"] or tuple(reversed(range(len(x))))
    moved = [p for p in perm if x[p] != 1]
    return moved == sorted(moved)


def _cube_reads_through(op: Operation) -> bool:
    """A data movement a matmul's cube kernel reads its operand through: a transpose of the
    last two dims (the operand loaded transposed; lowering/templates/cube/plan.py `resolve`).
    Any other transpose, slice or concat before a matmul would be split off again by the
    lowering, and taken from a kernel that does read it (an attention writing its heads
    merged)."""
    return isinstance(op, g.TransposeOp) and op.swaps_last_two()


def role_of(op: Operation) -> Role:
    """The role of an op; float (or i1) tensors of static shape only - integer ops are shape
    arithmetic that belongs on the host, and dynamic shapes have no tile model yet."""
    if not isinstance(op, g.GraphOp):
        return Role.OPAQUE
    if not all(_static(v.type) for v in (*op.operands, *op.results)):
        return Role.OPAQUE
    if any(is_narrow(v.type.element_type) for v in (*op.operands, *op.results)):
        return Role.OPAQUE  # float8 / int4 ...: no template takes them, the fallback kernel runs it
    if not all(is_float(r.type.element_type) or r.type.element_type == i1 for r in op.results) \
            and not _int8_kernel_op(op):
        return Role.OPAQUE
    # A role says what the op is to a kernel, so only ops some template takes get one.
    if op_info.CUBE.takes(op):
        return Role.CUBE
    if op_info.ATTENTION.takes(op):
        return Role.ATTENTION
    if op.has_trait(ViewLike) or (isinstance(op, g.TransposeOp) and _trivial_transpose(op)):
        return Role.VIEW
    if isinstance(op, g.ConcatOp):
        shapes = [_shape(v) for v in op.operands]
        aligned = op.attrs()["axis"] % len(shapes[0]) == 1 and all(s[1] % C0 == 0 for s in shapes)
        return Role.CHANNEL_CONCAT if len(shapes[0]) >= 3 and aligned else Role.MOVE
    if op.has_trait(DataMovement) and op_info.DATA.takes(op):
        return Role.MOVE if _constant_operands(op, 1) else Role.OPAQUE
    if not op_info.ROW.takes(op):
        return Role.OPAQUE
    if op.has_trait(RowSoftmax):
        return Role.SOFTMAX
    if op.has_trait(Normalization) or op.has_trait(RowMixing):
        return Role.NORM
    if op.has_trait(Reduction):
        return Role.REDUCE
    if op.has_trait(Elementwise):
        return Role.ELEMENTWISE
    return Role.OPAQUE


def _int8_kernel_op(op: Operation) -> bool:
    """An op with integer results that an int8 kernel computes: a contraction of signed int8
    operands (the cube; uint8 ones run the fallback), a quantize / requantize (row, cube
    epilogue), a relu of int8 values (graph-fold-qdq's relu after a requantize at zero
    point 0: exact in the epilogue's f32 and on the vector unit) or a concat of int8 values."""
    if isinstance(op, g.QuantizeOp | g.RequantizeOp):
        return True
    if isinstance(op, g.ReluOp):
        return op.operands[0].type.element_type == g.INT8_TYPES[0]
    if isinstance(op, g.ConcatOp):  # an int8 conv reads a channel concat's operands as its segments
        return all(v.type.element_type == g.INT8_TYPES[0] for v in op.operands)
    return g.is_integer_contraction(op) and all(
        v.type.element_type == g.INT8_TYPES[0] for v in op.operands[:2])


def reduced_row(op: Operation) -> tuple[tuple[int, int], ...]:
    """(axis - rank, extent) of each reduced axis: the row a kernel must hold whole."""
    x = _shape(op.operands[0])
    rank = len(x)
    return tuple((ax - rank, x[ax]) for ax in reduced_axes(op))


# ---------------------------------------------------------------------------
# The pattern table.
# ---------------------------------------------------------------------------

R = Role
_EW = frozenset({R.VIEW, R.ELEMENTWISE})


@dataclass(frozen=True)
class Pattern:
    """An anchored fusion pattern.

    A candidate starts from `seed(planner, anchor)` (default: the anchor alone) at every op with
    a role in `anchors` (and a name in `ops`, if given) and grows by absorbing
    - `feed`: producers of a cube op's operands (its prologue), recursively;
    - `epilogue`: consumers of the cube op / main ops;
    - `side`: producers of the other operands of absorbed ops, when all their users are in.
    """

    name: str
    anchors: frozenset[Role]
    feed: frozenset[Role] = frozenset()
    epilogue: frozenset[Role] = frozenset()
    side: frozenset[Role] = frozenset()
    ops: frozenset[type[Operation]] | None = None
    seed: Callable[[_Planner, int], list[int] | None] | None = None
    side_outputs: bool = False
    """True: a `side` producer may also have users outside the group - the kernel writes its
    result as an output too. The residual Add before a pre-norm (LLaMA's h = x + attn(x),
    read by the norm and by the next residual) joins the norm's kernel, which writes h and
    the normalised h (CANN's AddRmsNorm): one kernel and one read of h fewer."""
    feed_move: Callable[[Operation], bool] | None = None
    """Of `feed`'s R.MOVE producers, the ones the kernel reads through (None: all)."""
    gated: bool = False
    """True: a second matmul of the anchor's lhs whose product only the group reads joins as
    the anchor's partner (SwiGLU's silu(x W_gate) * (x W_up): one kernel computes both
    products, tile by tile, and the epilogue combines them)."""
    epilogue_reads: bool = True
    """False: an epilogue op that reads a whole second tensor from outside and feeds a
    normalisation is left out - that residual Add belongs to the LayerNorm / RMSNorm after it
    (its Add+Norm kernel). Other such reads join: SwiGLU's silu(x W_gate) * (x W_up) is the up
    projection's epilogue, reading the gate kernel's output."""


def _attention_seed(plan: _Planner, anchor: int) -> list[int] | None:
    """MatMul(Q, K^T) -> [scale Mul/Div] -> [mask Add] -> Softmax(last axis) -> MatMul(., V),
    views allowed in between; the anchor is the second matmul."""
    chain: list[int] = []
    j = plan.through_views(plan.ops[anchor].operands[0], chain)
    if j is None or not isinstance(plan.ops[j], (g.SoftmaxOp, g.SafeSoftmaxOp)):
        return None
    sm = plan.ops[j]
    if sm.attrs()["axis"] % len(_shape(sm.operands[0])) != len(_shape(sm.operands[0])) - 1:
        return None
    rest = _score_path(plan, sm.operands[0], anchor, 0)
    return None if rest is None else [*chain, j, *rest, anchor]


def _score_path(plan: _Planner, value: SSAValue, anchor: int, depth: int) -> list[int] | None:
    """Ops from a softmax input back to the Q.K^T matmul: views, a scalar scale, a mask add."""
    path: list[int] = []
    j = plan.through_views(value, path)
    if j is None or j == anchor:
        return None
    op = plan.ops[j]
    if isinstance(op, g.MatMulOp) and plan.role[j] is R.CUBE:
        return [*path, j]
    if depth >= 3 or plan.role[j] is not R.ELEMENTWISE or not isinstance(op, g.AddOp | g.MulOp | g.DivOp):
        return None
    for i in (0, 1):
        other = op.operands[1 - i]
        if not isinstance(op, g.AddOp) and (_numel(other) != 1 or (isinstance(op, g.DivOp) and i == 1)):
            continue
        rest = _score_path(plan, op.operands[i], anchor, depth + 1)
        if rest is not None:
            return [*path, j, *rest]
    return None


def _reads_through(plan: _Planner, op: Operation) -> bool:
    """A view, transpose, constant slice or split part: the attention kernel reads through it."""
    return plan.role[plan.index[op]] in (R.VIEW, R.MOVE) and (
        op.has_trait(ViewLike) or isinstance(op, g.TransposeOp | g.SliceOp | g.SplitOp))


def _attention_op_seed(plan: _Planner, anchor: int) -> list[int] | None:
    """graph.attention with the ops its q, k, v are read through - views, transposes, constant
    slices, split parts, each used only inside the group (a split when all its parts' users are
    in) - and the graph.causal_mask it alone reads as its mask, and the transposes and views
    its result is written through, each the only user of
    the one before. The template checks the composed views (docs/lowering.md "Attention"):
    if it cannot take them, the lowering splits the fusion and the pieces run separately."""
    members = {anchor}
    changed = True
    while changed:  # producers join once all their users are in (a split after its parts)
        changed = False
        for m in sorted(members):
            operands = plan.ops[m].operands[:3] if m == anchor else plan.ops[m].operands[:1]
            for v in operands:
                j = plan.producer(v)
                if j is None or j in members or plan.taken >> j & 1 or plan.escapes[j]:
                    continue
                if _reads_through(plan, plan.ops[j]) and all(u in members for u in plan.users[j]):
                    members.add(j)
                    changed = True
    mask = plan.ops[anchor].operands[3] if len(plan.ops[anchor].operands) > 3 else None
    j = None if mask is None else plan.producer(mask)
    # a causal_mask the attention alone reads: the kernel computes its band from the position
    if j is not None and isinstance(plan.ops[j], g.CausalMaskOp) and plan.users[j] == [anchor] \
            and not (plan.taken >> j & 1 or plan.escapes[j]):
        members.add(j)
    last = anchor
    while not plan.escapes[last] and len(plan.users[last]) == 1:
        j = plan.users[last][0]
        nxt = plan.ops[j]
        if plan.taken >> j & 1 or not (isinstance(nxt, g.TransposeOp) or nxt.has_trait(ViewLike)) \
                or plan.role[j] not in (R.VIEW, R.MOVE) or len(nxt.results) != 1:
            break
        members.add(j)
        last = j
    return sorted(members)


def _head_split_chain(plan: _Planner, j: int) -> list[int] | None:
    """The views and the last transpose after matmul j that split its result into heads
    ([.., S, H * D] -> [.., H, S, D], the cube kernel's head split), each the only user of
    the one before, and the KV-cache write of the heads if that is their one user (a
    decoder's V: the kernel writes the heads at the position's rows of the cache); None if
    the result goes anywhere else."""
    chain, last = [], j
    while not plan.escapes[last] and len(plan.users[last]) == 1:
        u = plan.users[last][0]
        op = plan.ops[u]
        if plan.taken >> u & 1 or plan.role[u] not in (R.VIEW, R.MOVE) or len(op.results) != 1:
            return None
        chain.append(u)
        if isinstance(op, g.TransposeOp):
            w = plan.users[u][0] if not plan.escapes[u] and len(plan.users[u]) == 1 else None
            if w is not None and not plan.taken >> w & 1 and isinstance(plan.ops[w], g.KvCacheWriteOp) \
                    and plan.ops[w].operands[1] is op.results[0]:
                chain.append(w)
            return chain
        if not op.has_trait(ViewLike):
            return None
        last = u
    return None


def _projections_seed(plan: _Planner, anchor: int) -> list[int] | None:
    """The anchor matmul and every later float matmul of the same lhs, each with the views and
    transpose that split its result into heads (LLaMA's q / k / v projections): one cube
    kernel computes them all, each product written head by head to its own output (V's into
    its cache)."""
    op = plan.ops[anchor]
    if not isinstance(op, g.MatMulOp) or not is_float(op.results[0].type.element_type):
        return None
    chain = _head_split_chain(plan, anchor)
    if chain is None:
        return None
    members = [anchor, *chain]
    for use in op.operands[0].uses:
        j = plan.index.get(use.operation)
        if j is None or j <= anchor or plan.taken >> j & 1 or plan.role[j] is not R.CUBE:
            continue
        other = plan.ops[j]
        elt = other.results[0].type.element_type
        if not isinstance(other, g.MatMulOp) or use.index != 0 or elt != op.results[0].type.element_type:
            continue
        rest = _head_split_chain(plan, j)
        if rest is not None:
            members += [j, *rest]
    return members if len(members) > len(chain) + 1 else None


def _cache_write_seed(plan: _Planner, anchor: int) -> list[int] | None:
    """A KV-cache write and the rotation that computes its update, when nothing else reads the
    rotated rows (a decoder's K: the kv_cache template rotates the rows on their way into the
    cache); with them, a rotation by the same angles of rows of the same length (the
    decoder's q, CANN's ApplyRotaryPosEmb of q and k): one kernel rotates both."""
    j = plan.producer(plan.ops[anchor].operands[1])
    if j is None or plan.taken >> j & 1 or plan.escapes[j] or plan.users[j] != [anchor]:
        return None
    rot = plan.ops[j]
    if not isinstance(rot, g.RotaryEmbeddingOp):
        return None
    for use in rot.operands[1].uses:
        i = plan.index.get(use.operation)
        other = use.operation
        if i is None or i == j or plan.taken >> i & 1 or not isinstance(other, g.RotaryEmbeddingOp) \
                or use.index != 1 or other.operands[2] is not rot.operands[2] \
                or other.attrs()["interleaved"] != rot.attrs()["interleaved"] \
                or _shape(other.operands[0])[-2:] != _shape(rot.operands[0])[-2:]:
            continue
        members = sorted([i, j, anchor])
        if plan.convex(members):  # the layer's own q: another layer's lies on a path through it
            return members
    return [j, anchor]


def _quantized_result_seed(plan: _Planner, anchor: int) -> list[int] | None:
    """A pool or an LRN and a quantize that reads it (through float casts and views -
    reshapes, which keep a plain tensor's bytes in their order, each read by the next alone),
    by one known scale and zero point: the template quantizes its result tile on the way out
    (lowering/templates/vector/pool.py, lrn.py), so the float map is not written and read
    again by a kernel of its own (Inception's max pool after an LRN and its average-pool
    branches, the max pools of AlexNet and ZFNet after theirs, a global average pool flattened
    for the classifier, Inception-v1's first LRN before a conv). A pool's float result may have
    other readers (Inception-v2's stem pool, read by a module's convs in int8 and its pool
    branch in float; a max pool in a concat also read in float): the kernel writes both."""
    chains = [c for c in (_quantize_chain(plan, u) for u in plan.users[anchor]) if c is not None]
    if len(chains) != 1:  # the one reader that starts a quantize chain; the others read the float map
        return None
    known = [g.constant_value_of(v) for v in plan.ops[chains[0][-1]].operands[1:]]
    return [anchor, *chains[0]] if all(k is not None and k.size == 1 for k in known) else None


def _quantize_chain(plan: _Planner, j: int) -> list[int] | None:
    """Op j and its readers down to a quantize, if j is one or a float cast / view whose one
    reader starts such a chain (nothing in it escapes); else None."""
    chain = [j]
    while not isinstance(plan.ops[j], g.QuantizeOp):
        op = plan.ops[j]
        is_cast = isinstance(op, g.CastOp) and is_float(op.results[0].type.element_type)
        if not (is_cast or op.has_trait(ViewLike)) or plan.escapes[j] or len(plan.users[j]) != 1:
            return None
        j = plan.users[j][0]
        chain.append(j)
    return chain


PATTERNS: tuple[Pattern, ...] = (
    Pattern("attention", frozenset({R.CUBE}), ops=frozenset({g.MatMulOp}), seed=_attention_seed,
            feed=frozenset({R.VIEW, R.MOVE, R.ELEMENTWISE}), epilogue=frozenset({R.VIEW, R.MOVE, R.ELEMENTWISE}),
            side=_EW),
    # the same name: graph.attention (graph-recognize-attention's) and the views around it
    Pattern("attention", frozenset({R.ATTENTION}), ops=frozenset({g.AttentionOp}), seed=_attention_op_seed),
    Pattern("projections", frozenset({R.CUBE}), ops=frozenset({g.MatMulOp}), seed=_projections_seed),
    Pattern("cache-write", frozenset({R.OPAQUE}), ops=frozenset({g.KvCacheWriteOp}), seed=_cache_write_seed),
    Pattern("pool-quantize", frozenset({R.OPAQUE}), ops=frozenset({g.MaxPoolOp, g.AvgPoolOp}),
            seed=_quantized_result_seed),
    Pattern("lrn-quantize", frozenset({R.OPAQUE}), ops=frozenset({g.LrnOp}), seed=_quantized_result_seed),
    Pattern("conv-epilogue", frozenset({R.CUBE}), ops=frozenset({g.ConvOp}),
            feed=frozenset({R.VIEW, R.CHANNEL_CONCAT}), epilogue=_EW, side=_EW),
    Pattern("matmul-epilogue", frozenset({R.CUBE}), ops=frozenset({g.MatMulOp, g.GemmOp}),
            feed=frozenset({R.VIEW, R.MOVE}), epilogue=frozenset({R.VIEW, R.MOVE, R.ELEMENTWISE, R.SOFTMAX}),
            side=_EW, epilogue_reads=False, gated=True, feed_move=_cube_reads_through),
    Pattern("layernorm", frozenset({R.NORM}), epilogue=_EW, side=_EW, side_outputs=True),
    Pattern("reduction", frozenset({R.REDUCE, R.SOFTMAX}), epilogue=frozenset({*_EW, R.REDUCE, R.SOFTMAX}),
            side=frozenset({*_EW, R.REDUCE, R.SOFTMAX})),
    Pattern("elementwise", frozenset({R.ELEMENTWISE}), epilogue=_EW, side=_EW),
    Pattern("data", frozenset({R.MOVE, R.CHANNEL_CONCAT}), epilogue=frozenset({R.VIEW, R.MOVE}),
            side=frozenset({R.VIEW, R.MOVE})),
)
NORM_PROLOGUE = "norm-prologue"
"""Step 4's name (FusePass.disable): a normalisation group joins the matmul kernel it feeds."""
NORM_EPILOGUE = "norm-epilogue"
"""Step 5's name (FusePass.disable): a normalisation group joins the matmul kernel it reads."""
PATTERN_NAMES = (*dict.fromkeys(p.name for p in PATTERNS), NORM_PROLOGUE, NORM_EPILOGUE)


def fusion_kind(roles: Sequence[Role]) -> str:
    """cube (+ views / addressing), cube+vector, vector, or data (movement only)."""
    kinds = set(roles)
    if R.ATTENTION in kinds:
        return "cube+vector"
    if R.CUBE in kinds:
        return "cube" if kinds <= {R.CUBE, R.VIEW, R.CHANNEL_CONCAT} else "cube+vector"
    if kinds & {R.ELEMENTWISE, R.REDUCE, R.SOFTMAX, R.NORM}:
        return "vector"
    return "data"


# ---------------------------------------------------------------------------
# Cost and tile models.
# ---------------------------------------------------------------------------

_COMPARE = (g.EqualOp, g.LessOp, g.LessOrEqualOp, g.GreaterOp, g.GreaterOrEqualOp)


def _device_dtype(v: SSAValue, cube: bool = False) -> str:
    if is_narrow(v.type.element_type):
        return "i8"  # float8 / int4 ...: one byte per element (docs/precision.md), priced as bytes
    name = dtype_name(to_dtype(v.type.element_type))
    if cube:
        return name if name in op_info.CUBE.dtypes else "f32"
    return {"f64": "f32", "i1": "i8", "u8": "i8", "i64": "i32", "u64": "i32", "u32": "i32",
            "u16": "i16"}.get(name, name)


@dataclass
class Work:
    """What one op asks of the device: cube MACs and vector bytes per (class, dtype)."""

    macs: int = 0
    cube_dtype: str = "f32"
    vector: dict[tuple[str, str], int] = field(default_factory=dict)

    def add_vector(self, cls: str, dtype: str, nbytes: int) -> None:
        self.vector[cls, dtype] = self.vector.get((cls, dtype), 0) + nbytes


def op_work(op: Operation, role: Role, standalone: bool = False) -> Work:
    """The op's work; a view costs nothing inside a kernel and a copy on its own."""
    w = Work()
    if role is R.CUBE:
        # the cube's rate is its operands' (int8 accumulates in an i32 result)
        w.cube_dtype = _device_dtype(op.operands[0] if g.is_integer_contraction(op) else op.results[0], cube=True)
        out = _shape(op.results[0])
        if isinstance(op, g.ConvOp):
            k = _shape(op.operands[1])
            w.macs = math.prod(out) * math.prod(k[1:])
        elif isinstance(op, g.ConvTransposeOp):
            k = _shape(op.operands[1])
            w.macs = math.prod(_shape(op.operands[0])) * math.prod(k[1:])
        elif isinstance(op, g.GemmOp):
            a = _shape(op.operands[0])
            w.macs = math.prod(out) * (a[0] if op.attrs()["trans_a"] else a[1])
        else:
            w.macs = math.prod(out) * _shape(op.operands[0])[-1]
        return w
    values = [*op.operands, *op.results]
    if not values or not all(_static(v.type) for v in values):
        return w
    big = max(values, key=_nbytes)
    # quantize / dequantize / requantize compute in f32 whatever they read or write
    dtype = "f32" if isinstance(op, g.QuantizeOp | g.DequantizeOp | g.RequantizeOp) else _device_dtype(op.results[0] if op.results else big)
    if role in (R.VIEW, R.CHANNEL_CONCAT):
        if standalone:
            w.add_vector("copy", dtype, _nbytes(big))
        return w
    passes = op_info.VECTOR_PASSES.get(type(op))
    if passes is None:
        if role in (R.OPAQUE, R.ATTENTION):
            passes = (("unary", 1),)  # pooling, lrn, gathers, attention...: one pass, for program totals
        elif role is R.REDUCE:
            passes = (("reduce", 1),)
        elif role is R.MOVE:
            passes = (("copy", 1),)
        elif isinstance(op, _COMPARE):
            passes = (("compare", 1),)
        else:
            passes = (("binary" if len(op.operands) > 1 else "unary", max(len(op.operands) - 1, 1)),)
    nbytes = _nbytes(big)
    if type(op) in op_info.VECTOR_IN_F32 and _itemsize(big) == 2:
        dtype, nbytes = "f32", _numel(big) * 4
        w.add_vector("cast", "f32", 2 * nbytes)
    for cls, n in passes:
        w.add_vector(cls, dtype, n * nbytes)
    return w


@dataclass(frozen=True)
class Estimate:
    """A candidate's price: microseconds saved, HBM bytes saved, launches saved."""

    benefit_us: float
    hbm_bytes_saved: int
    launches_saved: int
    fused_us: float


def _vector_bytes(works: Sequence[Work]) -> dict[tuple[str, str], int]:
    """The vector bytes of several ops' work, summed per (class, dtype)."""
    vector: dict[tuple[str, str], int] = {}
    for w in works:
        for key, n in w.vector.items():
            vector[key] = vector.get(key, 0) + n
    return vector


class Costs:
    """Prices kernels with the device's CostModel and checks the minimal tile model."""

    VECTOR_TILE_BYTES = 16 * 1024
    """Bytes of the largest tensor per vector core before a kernel is split over more cores."""

    def __init__(self, device: str = DEFAULT_DEVICE):
        self.model = CostModel(device)
        spec = self.model.spec
        self.ub = spec.buffer_bytes["ub"]
        self.l0c = spec.buffer_bytes["l0c"]
        self.l1 = spec.buffer_bytes["l1"]
        self.repeat = spec.vector_repeat_bytes

    def kernel_us(self, works: Sequence[Work], reads: int, writes: int, largest: int, cube_out: int) -> float:
        spec = self.model.spec
        macs = sum(w.macs for w in works)
        vector = _vector_bytes(works)
        if macs:
            block_dim = self.cube_blocks(cube_out)
            dtype = next(w.cube_dtype for w in works if w.macs)
        else:
            block_dim = max(1, min(spec.vector_cores, -(-largest // self.VECTOR_TILE_BYTES)))
            dtype = "f32"
        return self.model.kernel_estimate(
            cube_macs=macs, cube_dtype=dtype, vector_bytes=vector, hbm_read_bytes=reads,
            hbm_write_bytes=writes, block_dim=block_dim,
        ).total_us

    def prologue_us(self, works: Sequence[Work], reads: int, writes: int, blocks: int) -> float:
        """Vector work that each of a cube kernel's `blocks` runs whole before its tiles (a norm
        prologue): the work and its copies on one core, without a launch of its own, and no
        less than HBM moving every block's bytes."""
        vector = _vector_bytes(works)
        est = self.model.kernel_estimate(vector_bytes=vector, hbm_read_bytes=reads, hbm_write_bytes=writes,
                                         block_dim=1)
        return max(est.total_us - est.launch_us, self.model.hbm_time_us(blocks * (reads + writes)))

    def norm_epilogue_us(self, mm_work: Work, lhs: int, rhs: int, rows: int, norm_works: Sequence[Work],
                         reads: int, writes: int) -> float:
        """A matmul kernel whose work items each compute whole rows of the product and normalise
        them (a norm epilogue): `rows` rows over the cube cores, every item reading its rows of
        the lhs (`lhs` bytes in all) and the whole rhs (`rhs` bytes, again from L2 after the
        first), then its block's share of the norm's work on its vector unit, `reads` / `writes`
        the bytes the norm moves (the staged product included).

        Items are at least one per block and at most `norm_epilogue_rows` rows each, so the rhs
        is read once per item: where the rows outnumber what one wave of items holds (an FFN's
        down projection with K = 4 x hidden at sequence 512), the re-reads decide."""
        model = self.model
        blocks = max(1, min(model.spec.cube_cores, -(-rows // C0)))
        items = max(blocks, -(-rows // self.norm_epilogue_rows(lhs // rows if rows else lhs)))
        mm = model.kernel_estimate(cube_macs=mm_work.macs, cube_dtype=mm_work.cube_dtype, block_dim=blocks)
        moved = lhs + items * rhs
        hit = model.l2_hit_fraction(moved, lhs + rhs, lhs + rhs)
        vector = _vector_bytes(norm_works)
        vec = model.kernel_estimate(vector_bytes=vector, hbm_read_bytes=reads, hbm_write_bytes=writes,
                                    block_dim=blocks)
        return mm.launch_us + max(mm.cube_us, model.gm_time_us(moved, 0, hit)) + vec.total_us - vec.launch_us

    def norm_epilogue_rows(self, row_bytes: int) -> int:
        """The most rows a norm epilogue's work item holds: its lhs panel ([rows, K], `row_bytes`
        a row) is kept whole in L1 while the rhs streams past it, and is given half of L1 (an
        assumption: the other half double-buffers the rhs chunks); whole fractals of rows."""
        return max(C0, self.l1 // 2 // max(1, row_bytes) // C0 * C0)

    def cube_blocks(self, cube_out: int) -> int:
        """The blocks of a cube kernel with `cube_out` result elements (as kernel_us takes)."""
        return max(1, min(self.model.spec.cube_cores, -(-cube_out // (C0 * C0))))

    def fits(self, ops: Sequence[Operation], roles: Sequence[Role]) -> str | None:
        """None if a minimal tile of the fused kernel fits on chip, else why not.

        Tile model: a vector kernel processes its iteration space in tiles; every reduction in it
        must reduce the same row (axes and extents), which is held whole, so the minimal tile is
        one row (at least one 256-byte repeat). Each distinct tensor the vector part touches gets
        its own single-buffered UB tile of min(its size, the minimal tile) elements, 32-byte
        aligned, and they must fit in UB together. A cube op's fp32 accumulator tile is one
        16x16 fractal, or 16 whole rows when a reduction in the kernel consumes its output;
        it must fit in L0C."""
        rows = {reduced_row(op) for op, r in zip(ops, roles) if r in (R.REDUCE, R.SOFTMAX, R.NORM)}
        if len(rows) > 1:
            return "reductions over different rows"
        row = math.prod(e for _, e in next(iter(rows))) if rows else 1
        members = set(ops)
        alias: dict[SSAValue, SSAValue] = {}
        for op, r in zip(ops, roles):
            if r is R.VIEW:
                src = op.operands[0]
                for res in op.results:
                    alias[res] = alias.get(src, src)
        seen: set[SSAValue] = set()
        ub = 0
        for op, r in zip(ops, roles):
            if r in (R.CUBE, R.VIEW, R.ATTENTION):  # attention: the template's own tiling
                continue
            for v in (*op.operands, *op.results):
                v = alias.get(v, v)
                if v in seen:
                    continue
                seen.add(v)
                item = _itemsize(v)
                tile = min(_numel(v), max(row, -(-self.repeat // item)))
                ub += -(-tile * item // 32) * 32
        if ub > self.ub:
            return f"UB: a minimal tile needs {ub} bytes, UB has {self.ub}"
        if R.CUBE in roles:
            upstream: dict[Operation, set[Operation]] = {}
            for op, r in zip(ops, roles):
                ups = set().union(*(upstream.get(v.owner, set()) for v in op.operands if v.owner in members))
                if r is R.CUBE:
                    ups = ups | {op}
                upstream[op] = ups
            for op, r in zip(ops, roles):
                if r in (R.REDUCE, R.SOFTMAX, R.NORM) and upstream[op]:
                    acc = C0 * -(-row // C0) * C0 * 4
                    if acc > self.l0c:
                        return (f"L0C: a {C0}-row accumulator tile of {row}-element rows needs {acc} bytes, "
                                f"L0C has {self.l0c}")
        return None


# ---------------------------------------------------------------------------
# The planner: candidates, growth, convexity, greedy selection.
# ---------------------------------------------------------------------------


def _bits(x: int) -> Iterator[int]:
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


@dataclass
class Candidate:
    """A group of ops (indices into the planner's ops, in block order) and its price."""

    pattern: Pattern
    anchor: int
    members: list[int]
    estimate: Estimate
    kind: str
    prologue: bool = False  # a normalisation group joined it (norm_prologues)
    epilogue: bool = False  # it joined the matmul it reads (norm_epilogues)


class _Planner:
    """The ops of one block as a DAG (constants left out: they are sources and are cloned or
    passed in), with transitive descendant / ancestor sets as int bitsets. Taking a group
    contracts it: every ancestor of the group then reaches all its descendants, and so on,
    so a later candidate that would close a cycle through it is not convex."""

    def __init__(self, block: Block, patterns: Sequence[Pattern], max_ops: int, costs: Costs):
        self.patterns = patterns
        self.max_ops = max_ops
        self.costs = costs
        self.ops = [op for op in block.ops if not isinstance(op, g.ConstantOp) and not op.has_trait(IsTerminator)]
        self.index = {op: i for i, op in enumerate(self.ops)}
        self.role = [role_of(op) for op in self.ops]
        n = len(self.ops)
        self.users: list[list[int]] = [[] for _ in range(n)]
        self.escapes = [False] * n  # used by something that is not a node (func.return, ...)
        for i, op in enumerate(self.ops):
            for r in op.results:
                for use in r.uses:
                    user = block.find_ancestor_op_in_block(use.operation)
                    j = self.index.get(user)
                    if j is None:
                        self.escapes[i] = True
                    elif j not in self.users[i]:
                        self.users[i].append(j)
            if attr_names.KEEP in op.attributes:
                self.escapes[i] = True
        self.desc = [0] * n
        for i in range(n - 1, -1, -1):
            d = 0
            for j in self.users[i]:
                d |= (1 << j) | self.desc[j]
            self.desc[i] = d
        self.anc = [0] * n
        for i, op in enumerate(self.ops):
            a = 0
            for j in self.preds(i):
                a |= (1 << j) | self.anc[j]
            self.anc[i] = a
        self.taken = 0
        self.single = [self._single_us(i) for i in range(n)]

    # -- graph queries ------------------------------------------------------

    def producer(self, value: SSAValue) -> int | None:
        return self.index.get(value.owner) if isinstance(value.owner, Operation) else None

    def preds(self, i: int) -> list[int]:
        out = []
        for v in self.ops[i].operands:
            j = self.producer(v)
            if j is not None and j not in out:
                out.append(j)
        return out

    def through_views(self, value: SSAValue, path: list[int]) -> int | None:
        """The first non-view producer above `value`; the views passed are appended to path."""
        j = self.producer(value)
        while j is not None and self.role[j] is R.VIEW and not self.taken >> j & 1:
            path.append(j)
            j = self.producer(self.ops[j].operands[0])
        return None if j is None or self.taken >> j & 1 else j

    # -- growth -------------------------------------------------------------

    def build(self, pattern: Pattern, anchor: int) -> Candidate | None:
        if self.taken >> anchor & 1 or self.role[anchor] not in pattern.anchors:
            return None
        if pattern.ops is not None and type(self.ops[anchor]) not in pattern.ops:
            return None
        seed = pattern.seed(self, anchor) if pattern.seed else [anchor]
        if not seed or len(set(seed)) > self.max_ops or any(self.taken >> j & 1 for j in seed):
            return None
        members = sorted(set(seed))
        mask = sum(1 << j for j in members)
        desc = anc = 0
        for j in members:
            desc |= self.desc[j]
            anc |= self.anc[j]
        if desc & anc & ~mask or self._misfit(members):
            return None
        stage = {j: ("cube" if self.role[j] is R.CUBE else "main") for j in members}
        members, mask = self._grow(pattern, members, mask, desc, anc, stage)
        names = sum(max(1, len(loc_names(self.ops[j].location))) for j in members)
        if names < 2:
            return None
        if len(members) == 1 and self.role[members[0]] is not R.NORM:
            return None  # only a recognised normalisation (several nodes already) stands alone
        est = self.estimate(members)
        if est.benefit_us < -1e-9:  # zero is fine: views tidied into a kernel, a lone norm
            return None
        return Candidate(pattern, anchor, members, est, fusion_kind([self.role[j] for j in members]))

    def _grow(self, pattern, members, mask, desc, anc, stage):
        changed = True
        while changed:
            changed = False
            for m in list(members):
                if stage[m] == "partner":
                    continue  # its lhs is the anchor's, its right operand a weight
                feeding = stage[m] in ("cube", "feed")
                rules = pattern.feed if feeding else pattern.side
                for j in self.preds(m):
                    if mask >> j & 1 or self.taken >> j & 1:
                        continue
                    if pattern.gated and not feeding and self._partner(stage, mask, j):
                        if self._fits_with(members, mask, desc, anc, j):
                            members, mask, desc, anc = self._add(members, mask, desc, anc, j)
                            stage[j] = "partner"
                            changed = True
                        continue
                    if self.role[j] not in rules or (feeding and self.role[j] is R.MOVE and pattern.feed_move
                                                     and not pattern.feed_move(self.ops[j])):
                        continue
                    if not feeding and self.dequantizes_product(j):
                        continue  # its own contraction's epilogue (the FIX pipe), not a side input here
                    if not (pattern.side_outputs and not feeding) and (
                            self.escapes[j] or any(not mask >> u & 1 for u in self.users[j] if u != m)):
                        continue  # all users in, or the producer would be needed twice
                    if self._fits_with(members, mask, desc, anc, j):
                        members, mask, desc, anc = self._add(members, mask, desc, anc, j)
                        stage[j] = "feed" if feeding else "main"
                        changed = True
                if stage[m] == "feed":
                    continue
                for u in self.users[m]:
                    if mask >> u & 1 or self.taken >> u & 1 or self.role[u] not in pattern.epilogue:
                        continue
                    others = [x for x in self.users[m] if x != u]
                    if self.role[u] is R.VIEW and (self.escapes[m] or any(not mask >> x & 1 for x in others)):
                        continue  # the kernel would write the same bytes twice: leave the alias out
                    if not pattern.epilogue_reads and self._reads_tensor(u, mask) and self._feeds_norm(u):
                        continue
                    if self._fits_with(members, mask, desc, anc, u):
                        members, mask, desc, anc = self._add(members, mask, desc, anc, u)
                        stage[u] = "main"
                        changed = True
        return members, mask

    def dequantizes_product(self, j: int) -> bool:
        """Whether op j dequantizes the int32 accumulator of an int8 contraction, directly or
        through float casts after the dequantize. Such a chain belongs to its contraction's
        kernel: the FIX pipe dequantizes on the way out of L0C and the kernel writes 2-byte
        values. Taken as another group's side input instead, the contraction would write its
        int32 accumulator (4 bytes an element) and the group's vector unit would dequantize it:
        a ResNet projection shortcut's conv beside the conv that adds it."""
        op = self.ops[j]
        while isinstance(op, g.CastOp) and is_float(op.operands[0].type.element_type):
            k = self.producer(op.operands[0])
            if k is None:
                return False
            op = self.ops[k]
        if not isinstance(op, g.DequantizeOp):
            return False
        k = self.producer(op.operands[0])
        return k is not None and self.role[k] is R.CUBE and not is_float(self.ops[k].results[0].type.element_type)

    def _partner(self, stage: dict[int, str], mask: int, j: int) -> bool:
        """Whether op j can join as the group's gated partner: a float matmul of the same lhs
        value as the group's one cube op, with a right operand and a result of the same types,
        read by one op of the group (the template's rule: the partner's product has one use)."""
        cubes = [k for k, s in stage.items() if s in ("cube", "partner")]
        if self.role[j] is not R.CUBE or len(cubes) != 1 or self.escapes[j] or len(self.users[j]) != 1:
            return False
        main, op = self.ops[cubes[0]], self.ops[j]
        if not (isinstance(main, g.MatMulOp) and isinstance(op, g.MatMulOp)) or op.operands[0] is not main.operands[0]:
            return False
        if op.operands[1].type != main.operands[1].type or op.results[0].type != main.results[0].type:
            return False
        return is_float(op.results[0].type.element_type) and all(mask >> u & 1 for u in self.users[j])

    def _reads_tensor(self, u: int, mask: int) -> bool:
        """Whether op u reads, from outside the group, a tensor as large as its result."""
        op = self.ops[u]
        size = max(_numel(r) for r in op.results)
        for v in op.operands:
            j = self.producer(v)
            if (j is None or not mask >> j & 1) and not _small_constant(v) and _numel(v) >= size:
                return True
        return False

    def _feeds_norm(self, u: int) -> bool:
        """Whether a result of op u reaches a normalisation, directly or through views."""
        seen, todo = set(), [u]
        while todo:
            i = todo.pop()
            for r in self.ops[i].results:
                for use in r.uses:
                    j = self.index.get(use.operation)
                    if j is None or j in seen:
                        continue
                    seen.add(j)
                    if self.role[j] is R.NORM:
                        return True
                    if self.role[j] is R.VIEW:
                        todo.append(j)
        return False

    def _add(self, members, mask, desc, anc, j):
        return sorted([*members, j]), mask | 1 << j, desc | self.desc[j], anc | self.anc[j]

    def _fits_with(self, members, mask, desc, anc, j) -> bool:
        if len(members) >= self.max_ops:
            return False
        mask |= 1 << j
        if (desc | self.desc[j]) & (anc | self.anc[j]) & ~mask:
            return False  # a path would leave the group and come back
        return self._misfit(sorted([*members, j])) is None

    def _misfit(self, members: list[int]) -> str | None:
        return self.costs.fits([self.ops[j] for j in members], [self.role[j] for j in members])

    def convex(self, members: list[int]) -> bool:
        mask = desc = anc = 0
        for j in members:
            mask |= 1 << j
            desc |= self.desc[j]
            anc |= self.anc[j]
        return not (desc & anc & ~mask)

    def take(self, members: list[int]) -> None:
        mask = desc = anc = 0
        for j in members:
            mask |= 1 << j
            desc |= self.desc[j]
            anc |= self.anc[j]
        desc |= mask
        anc |= mask
        for x in _bits(anc):
            self.desc[x] |= desc
        for x in _bits(desc):
            self.anc[x] |= anc
        self.taken |= mask

    # -- pricing ------------------------------------------------------------

    def _single_us(self, i: int) -> float:
        op, role = self.ops[i], self.role[i]
        values = [*op.operands, *op.results]
        if role is R.VIEW or not values or not all(_static(v.type) for v in values):
            return 0.0  # a view on its own is an alias, not a kernel
        reads = _read_bytes(op.operands)
        writes = sum(_nbytes(r) for r in op.results)
        largest = max(_nbytes(v) for v in (*op.operands, *op.results))
        cube_out = _numel(op.results[0]) if role is R.CUBE else 0
        return self.costs.kernel_us([op_work(op, role, standalone=True)], reads, writes, largest, cube_out)

    def outputs(self, members: Sequence[int]) -> list[SSAValue]:
        """Results that leave the group: used outside, returned or tapped with graph.keep."""
        inside = {self.ops[j] for j in members}
        out = []
        for j in members:
            op = self.ops[j]
            for r in op.results:
                if attr_names.KEEP in op.attributes or any(
                    op.parent_block().find_ancestor_op_in_block(u.operation) not in inside for u in r.uses
                ):
                    out.append(r)
        return out

    def inputs(self, members: Sequence[int]) -> list[SSAValue]:
        inside = {self.ops[j] for j in members}
        return list(dict.fromkeys(v for j in members for v in self.ops[j].operands if v.owner not in inside))

    def handoff(self, members: list[int]) -> int:
        """Bytes that cross between the cube and the vector side inside the group. Without an
        on-chip path between L0C/L1 and UB (910B: separate AIC and AIV cores) they go through a
        GM workspace, so fusing saves their launch but not their traffic."""
        paths = self.costs.model.spec.dma_bytes_per_cycle
        if ("l0c", "ub") in paths and ("ub", "l1") in paths:
            return 0
        inside = {self.ops[j]: j for j in members}
        side: dict[int, bool | None] = {}  # True: cube side
        crossing: set[SSAValue] = set()
        for j in members:
            op, role = self.ops[j], self.role[j]
            sources = [inside[v.owner] for v in op.operands if v.owner in inside]
            if role is R.VIEW:  # an alias: on the side of what it views
                side[j] = side[sources[0]] if sources else None
                continue
            side[j] = role is R.CUBE
            for v in op.operands:
                if v.owner in inside and side[inside[v.owner]] not in (None, side[j]):
                    crossing.add(v)
        return sum(_nbytes(v) for v in crossing)

    def estimate(self, members: list[int]) -> Estimate:
        ops = [self.ops[j] for j in members]
        handoff = self.handoff(members)
        reads = _read_bytes(self.inputs(members)) + handoff
        writes = sum(_nbytes(v) for v in self.outputs(members)) + handoff
        works = [op_work(op, self.role[j]) for j, op in zip(members, ops)]
        largest = max((_nbytes(v) for op in ops for v in (*op.operands, *op.results) if _static(v.type)), default=0)
        cube_out = max((_numel(op.results[0]) for j, op in zip(members, ops) if self.role[j] is R.CUBE), default=0)
        fused = self.costs.kernel_us(works, reads, writes, largest, cube_out)
        separate = sum(self.single[j] for j in members)
        traffic = sum(
            _read_bytes(op.operands) + sum(_nbytes(r) for r in op.results)
            for j, op in zip(members, ops) if self.role[j] is not R.VIEW
        )
        kernels = sum(1 for j in members if self.role[j] is not R.VIEW)
        return Estimate(separate - fused, traffic - reads - writes, max(kernels - 1, 0), fused)

    # -- selection ----------------------------------------------------------

    def plan(self) -> list[Candidate]:
        """Lazy greedy: pop the best candidate; take it if still disjoint and convex, else regrow
        it from its anchor against what is taken now (it can only shrink) and push it back."""
        heap: list[tuple[float, int, int, int, Candidate]] = []
        seen: set[tuple[int, ...]] = set()
        counter = 0

        def push(c: Candidate | None) -> None:
            nonlocal counter
            if c is None:
                return
            key = tuple(c.members)
            if key in seen:
                return
            seen.add(key)
            counter += 1
            heapq.heappush(heap, (-c.estimate.benefit_us, -len(c.members), c.anchor, counter, c))

        for i in range(len(self.ops)):
            for p in self.patterns:
                push(self.build(p, i))
        chosen: list[Candidate] = []
        while heap:
            c = heapq.heappop(heap)[-1]
            if any(self.taken >> j & 1 for j in c.members) or not self.convex(c.members):
                seen.discard(tuple(c.members))
                push(self.build(c.pattern, c.anchor))
                continue
            self.take(c.members)
            chosen.append(c)
        return chosen


# ---------------------------------------------------------------------------
# Materialisation: a group of ops becomes a graph.fusion.
# ---------------------------------------------------------------------------


def _small_constant(v: SSAValue) -> bool:
    """Shape operands, scalars, eps: cloned into a fusion body as immediates."""
    return isinstance(v.owner, g.ConstantOp) and _numel(v) <= LITERAL_LIMIT


def _read_bytes(values: Sequence[SSAValue]) -> int:
    return sum(_nbytes(v) for v in dict.fromkeys(values) if not _small_constant(v))


def build_fusion(block: Block, ops: Sequence[Operation], outputs: Sequence[SSAValue], kind: str,
                 pattern: str) -> g.FusionOp:
    """Move `ops` (in block order) into a new graph.fusion placed after the last of them."""
    inside = set(ops)
    body = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    operands: list[SSAValue] = []
    for op in ops:
        for v in op.operands:
            if v.owner in inside or v in mapping:
                continue
            if _small_constant(v):
                clone = v.owner.clone()
                body.add_op(clone)
                mapping[v] = clone.results[0]
            else:
                mapping[v] = body.insert_arg(v.type, len(body.args))
                operands.append(v)
    fusion = g.FusionOp.create(
        operands=operands,
        result_types=[v.type for v in outputs],
        properties={"kind": StringAttr(kind)},
        attributes={attr_names.PATTERN: StringAttr(pattern)},
        regions=[Region(body)],
    )
    fusion.location = fused_loc(n for op in ops for n in loc_names(op.location))
    block.insert_op_after(fusion, ops[-1])
    for v, res in zip(outputs, fusion.results):
        v.replace_uses_with_if(res, lambda use: block.find_ancestor_op_in_block(use.operation) not in inside)
        res.name_hint = v.name_hint
    for v, inner in mapping.items():
        v.replace_uses_with_if(inner, lambda use: use.operation in inside)
    for op in ops:
        op.detach()
        body.add_op(op)
    body.add_op(g.YieldOp(*outputs))
    for v in mapping:
        if isinstance(v.owner, g.ConstantOp) and not v.uses:
            v.owner.detach()
            v.owner.erase()
    return fusion


def restore_order(block: Block) -> None:
    """Stable topological sort of a block whose ops were grouped: users of a fusion that sat
    between its members move after it (convexity guarantees that this is possible)."""
    ops = [op for op in block.ops if not op.has_trait(IsTerminator)]
    pos = {op: i for i, op in enumerate(ops)}

    def deps(op: Operation) -> list[Operation]:
        return [v.owner for v in op.operands if isinstance(v.owner, Operation) and v.owner in pos]

    if all(pos[d] < pos[op] for op in ops for d in deps(op)):
        return
    indegree = {op: len(set(deps(op))) for op in ops}
    users: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op in ops:
        for d in set(deps(op)):
            users[d].append(op)
    ready = [(pos[op], op) for op in ops if not indegree[op]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, op = heapq.heappop(ready)
        order.append(op)
        for u in users[op]:
            indegree[u] -= 1
            if not indegree[u]:
                heapq.heappush(ready, (pos[u], u))
    assert len(order) == len(ops), "graph-fuse made a cycle"
    anchor = block.last_op if block.last_op is not None and block.last_op.has_trait(IsTerminator) else None
    for op in order:
        op.detach()
        if anchor is None:
            block.add_op(op)
        else:
            block.insert_op_before(op, anchor)


# ---------------------------------------------------------------------------
# The pass.
# ---------------------------------------------------------------------------


def modeled_us(block: Block, costs: Costs) -> float:
    """The cost model's total kernel time of a block run op by op: each op one kernel (views
    free), each graph.fusion one kernel priced like the candidate that formed it."""
    planner = _Planner(block, (), 1, costs)
    total = 0.0
    for i, op in enumerate(planner.ops):
        if isinstance(op, g.FusionOp):
            inner = _Planner(op.body.block, (), 1, costs)
            total += inner.estimate(list(range(len(inner.ops)))).fused_us
        else:
            total += planner.single[i]
    return total


def single_op_us(block: Block, costs: Costs) -> dict[Operation, float]:
    """The cost model's time of each op of `block` run as a kernel of its own (views: free;
    constants and the terminator: not listed): what graph-pipeline-stage balances stages by."""
    planner = _Planner(block, (), 1, costs)
    return dict(zip(planner.ops, planner.single))


def norm_prologues(planner: _Planner, chosen: list[Candidate]) -> list[Candidate]:
    """Step 4: a normalisation group (the `layernorm` pattern's: ops ending in a norm, such as
    LLaMA's residual Add + RMSNorm) whose norm only the matmuls of one cube group read, as
    their lhs, joins that group as the kernel's prologue (lowering/templates/cube/prologue.py).
    Every block of the cube kernel then normalises every row itself - no block can wait for
    another - so the group joins only where that repeated work costs less than the launch it
    saves: a decode step's few rows, not a prefill's thousands."""
    patterns = {p.name: p for p in PATTERNS}
    group = {j: c for c in chosen for j in c.members}
    out = list(chosen)

    def of(j: int, pattern: str) -> Candidate:  # an op's group, or the op alone
        if j in group:
            return group[j]
        return Candidate(patterns[pattern], j, [j], Estimate(0.0, 0, 0, planner.single[j]),
                         fusion_kind([planner.role[j]]))

    for last, norm in enumerate(planner.ops):
        if planner.role[last] is not R.NORM or not norm.has_trait(Normalization) or planner.escapes[last] \
                or not planner.users[last]:
            continue
        n = of(last, "layernorm")
        if n.pattern.name != "layernorm" or n.members[-1] != last or any(
                planner.role[j] not in (R.NORM, R.ELEMENTWISE, R.VIEW) for j in n.members):
            continue
        lhs = norm.results[0]
        c = of(planner.users[last][0], "matmul-epilogue")
        if c.pattern.name not in ("projections", "matmul-epilogue") or any(
                of(j, "matmul-epilogue").members != c.members for j in planner.users[last]) or any(
                not isinstance(u.operation, g.MatMulOp) or u.index != 0 for u in lhs.uses):
            continue
        inside_c = {planner.ops[j] for j in c.members}
        if any(u.operation in inside_c for j in n.members[:-1] for r in planner.ops[j].results for u in r.uses):
            continue  # the kernel's cube side reads the normalised rows only
        members = sorted(n.members + c.members)
        if not planner.convex(members):
            continue
        ops = [planner.ops[j] for j in n.members]
        works = [op_work(op, planner.role[j]) for j, op in zip(n.members, ops)]
        reads = _read_bytes(planner.inputs(n.members))
        writes = sum(_nbytes(v) for v in planner.outputs(n.members))
        cube_out = max(_numel(planner.ops[j].results[0]) for j in c.members if planner.role[j] is R.CUBE)
        saved = n.estimate.fused_us - planner.costs.prologue_us(works, reads, writes,
                                                                planner.costs.cube_blocks(cube_out))
        if saved <= 0:
            continue
        est = c.estimate
        merged = Candidate(c.pattern, c.anchor, members,
                           Estimate(est.benefit_us + saved, est.hbm_bytes_saved, est.launches_saved + 1,
                                    est.fused_us + n.estimate.fused_us - saved), "cube+vector", prologue=True)
        out = [x for x in out if x is not n and x is not c] + [merged]
        for j in members:
            group[j] = merged
    return out


def norm_epilogues(planner: _Planner, chosen: list[Candidate]) -> list[Candidate]:
    """Step 5: a normalisation group (the `layernorm` pattern's: a post-LN transformer's
    residual Add + LayerNorm) that reads the product of one float matmul, normalising rows
    that are the product's N, joins the matmul's kernel as its epilogue
    (lowering/templates/cube/norm_epilogue.py): each block computes whole rows of the product
    and its vector unit normalises them. Every work item then reads the whole rhs, so the group
    joins only where the fused kernel's estimate (`Costs.norm_epilogue_us`) is below the two
    kernels': an out-projection (K = N = hidden), not an FFN's down projection (K = 4 x hidden)."""
    patterns = {p.name: p for p in PATTERNS}
    group = {j: c for c in chosen for j in c.members}
    out = list(chosen)
    for n in chosen:
        last = n.members[-1]
        norm = planner.ops[last]
        if n.pattern.name != "layernorm" or n.prologue or planner.role[last] is not R.NORM \
                or not norm.has_trait(Normalization) or any(
                planner.role[j] not in (R.NORM, R.ELEMENTWISE, R.VIEW) for j in n.members):
            continue
        row = reduced_row(norm)
        for v in planner.inputs(n.members):
            i = planner.producer(v)
            if i is None or not isinstance(planner.ops[i], g.MatMulOp) or planner.escapes[i] \
                    or not is_float(v.type.element_type) or i in group and group[i].members != [i]:
                continue  # a matmul alone: one that took an epilogue already is left as it is
            mm = planner.ops[i]
            if any(j not in n.members for j in planner.users[i]) or row != ((-1, _shape(v)[-1]),) \
                    or _shape(norm.operands[0]) != _shape(v):
                continue  # the norm group reads the product alone, over its rows
            members = sorted(n.members + [i])
            if not planner.convex(members):
                continue
            works = [op_work(planner.ops[j], planner.role[j]) for j in n.members]
            reads = _read_bytes(planner.inputs(n.members))
            writes = sum(_nbytes(x) for x in planner.outputs(n.members))
            fused = planner.costs.norm_epilogue_us(op_work(mm, R.CUBE), _nbytes(mm.operands[0]),
                                                   _nbytes(mm.operands[1]), _numel(v) // _shape(v)[-1],
                                                   works, reads, writes)
            separate = planner.single[i] + n.estimate.fused_us
            if fused >= separate:
                continue
            est = n.estimate
            merged = Candidate(patterns["layernorm"], i, members,
                               Estimate(est.benefit_us + separate - fused, est.hbm_bytes_saved + 2 * _nbytes(v),
                                        est.launches_saved + 1, fused), "cube+vector", epilogue=True)
            out = [x for x in out if x is not n] + [merged]
            break
    return out


def fuse_block(block: Block, patterns: Sequence[Pattern], max_ops: int, costs: Costs,
               prologues: bool = True, epilogues: bool = True) -> list[g.FusionOp]:
    planner = _Planner(block, patterns, max_ops, costs)
    chosen = planner.plan()
    if prologues:
        chosen = norm_prologues(planner, chosen)
    if epilogues:
        chosen = norm_epilogues(planner, chosen)
    groups = [(c, [planner.ops[j] for j in c.members], planner.outputs(c.members)) for c in chosen]
    fusions = [build_fusion(block, ops, outs, c.kind,
                            NORM_PROLOGUE if c.prologue else NORM_EPILOGUE if c.epilogue else c.pattern.name)
               for c, ops, outs in groups]
    restore_order(block)
    return fusions


@dataclass(frozen=True)
class FusePass(ModulePass):
    """Group ops into graph.fusion kernels by patterns, priced by the device cost model."""

    name = "graph-fuse"

    max_ops: int = 32
    """The most ops in one fusion (GE's max_fusion_ops)."""
    disable: tuple[str, ...] = ()
    """Patterns not to apply: attention, projections, cache-write, pool-quantize, lrn-quantize,
    conv-epilogue, matmul-epilogue, layernorm, reduction, elementwise, data, norm-prologue,
    norm-epilogue."""
    device: str = DEFAULT_DEVICE
    """The device whose cost model prices the candidates."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.disable) - set(PATTERN_NAMES))
        if unknown:
            raise ValueError(
                f"unknown pattern(s) {', '.join(unknown)} in disable; patterns: {', '.join(PATTERN_NAMES)}"
            )
        if self.max_ops < 1:
            raise ValueError(f"max-ops must be at least 1, got {self.max_ops}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [p for p in PATTERNS if p.name not in self.disable]
        costs = Costs(self.device)
        for f in [f for f in op.walk() if isinstance(f, func.FuncOp)]:
            if f.body.blocks:
                fuse_block(f.body.blocks[0], patterns, self.max_ops, costs, NORM_PROLOGUE not in self.disable,
                           NORM_EPILOGUE not in self.disable)
