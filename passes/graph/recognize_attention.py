"""graph-recognize-attention: a decomposed scaled dot-product attention becomes graph.attention.

What the PyTorch exporters write for `F.scaled_dot_product_attention` and for the explicit
Hugging Face form `softmax(q @ k.transpose(-1, -2) / sqrt(d) + mask) @ v`, after
graph-simplify (which turns TorchScript's sqrt(scale) on Q and on K^T into one Mul after the
product, the dynamo exporter's Shape arithmetic into constants, and Trilu / Where masks of
constants into one constant):

    kt = Transpose(k, perm [0, 1, 3, 2])                  TorchScript, HF
       | Reshape(Transpose(Reshape(k, [B*H, L, D]), [0, 2, 1]), [B, H, D, L])   dynamo
       | Reshape(Transpose(k', [1, 2, 0]), [B, H, D, L])  dynamo, nn.MultiheadAttention (k' [L, B*H, D])
    s  = MatMul([Mul(]q[, c)], [Mul(]kt[, c)])
    s  = s * c | s / c                                    the scale (one-element constants)
    s  = s + mask ...                                     additive masks, either order
       | Where(tril, s, -big)                             a causal Where of a constant condition
    p  = Softmax(s, axis=-1)  [between Cast to f32 and Cast back: HF's softmax(dtype=float32)]
    o  = MatMul(p, v)

with k and v possibly repeated for grouped-query attention (HF's repeat_kv:
Reshape(Expand(Unsqueeze(kv, 2), [B, Hkv, n, L, D]), [B, Hkv*n, L, D])). It becomes
`graph.attention(q, k, v[, mask]) {scale, causal}`, located at every node it replaces: a
constant additive mask whose entries are 0 where key j <= query i + (L - S) and at most
-1e4 (or -inf) elsewhere, broadcast over batch and heads, is `causal = 1`; the mask of a
static KV cache at a run-time position, Where(LessOrEqual(j + ck, i + cq + position), 0,
fill) with S > 1, becomes a graph.causal_mask of the attention's own (so that graph-fuse puts
it in the attention's kernel, which computes the band from the position); any other mask
(a padding mask, a bias, a non-causal constant) is the `mask` operand - at most one.

PyTorch's safe softmax (`graph.safe_softmax`: a row that is -inf throughout gives 0, not
NaN; scaled_dot_product_attention's, in torch.export's graphs) is taken for the Softmax when
nothing masks the scores: a row is then -inf throughout only if q or k hold infinities. With
a mask or a causal band it is left alone (a fully masked row would differ).

K^T may also be one Transpose of another layout (nn.MultiheadAttention's heads [B, S, H, D]
transposed by (0, 2, 3, 1)): k is then a new Transpose without the last swap.

Left alone (each a lit case): softmax over another axis, a MatMul whose right operand is no
transpose, a Where whose condition is not the causal triangle, a score or
probability used elsewhere, returned or tapped (`graph.keep`), two runtime masks, ranks
other than 4. The repeat_kv ops are kept when the repeated k / v has other users (the op
then reads the repeated tensor, Hkv = H). With `keep-precision` (must_keep_origin_dtype's), a
softmax in f16 / bf16 too: graph.attention's softmax is f32, the model's is not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.dialects.traits import ViewLike
from geir.ir.locations import fused_loc, loc_names
from geir.ir.types import is_float, is_low_precision, to_dtype
from geir.passes.graph.fold_constants import value_of
from geir.passes.graph.utils import constant, hint, is_graph_output, replace_chain, scalar_constant, sole_user

MASKED = -1.0e4
"""A causal constant masks an entry with a value at most this (-inf, finfo.min, -1e9...)."""


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def _inner(v: SSAValue) -> bool:
    """`v` may vanish into the op: used once, not returned, not tapped."""
    op = v.owner
    return (isinstance(op, Operation) and sole_user(v) is not None and not is_graph_output(v)
            and attr_names.KEEP not in op.attributes)


def _scalar_mul(v: SSAValue, chain: list[Operation]) -> tuple[SSAValue, float]:
    """v = Mul(x, c) or Mul(c, x) or Div(x, c) of a one-element constant c, peeled: (x, factor)."""
    op = v.owner
    if isinstance(op, g.MulOp | g.DivOp) and _inner(v) and _shape(v) == _shape(op.operands[0]):
        c = scalar_constant(op.operands[1])
        if c is not None and c != 0.0:
            chain.append(op)
            return op.operands[0], (c if isinstance(op, g.MulOp) else 1.0 / c)
    if isinstance(op, g.MulOp) and _inner(v) and _shape(v) == _shape(op.operands[1]):
        c = scalar_constant(op.operands[0])
        if c is not None:
            chain.append(op)
            return op.operands[1], c
    return v, 1.0


def _key_of(kt: SSAValue, chain: list[Operation], prelude: list[Operation]) -> tuple[SSAValue, int, list[Operation]] | None:
    """k of kt = k^T (its last two dims swapped), in the exporters' spellings, as (k, n, the
    ops of a repeat_kv already peeled: n > 1 when the dynamo exporter merged it into the
    transpose's reshape); None if the value is not k^T. A k the graph does not hold (k^T
    transposed from another layout) is made by a new op appended to `prelude`."""
    op = kt.owner
    if not _inner(kt):
        return None
    if isinstance(op, g.TransposeOp) and op.attrs()["perm"] == (0, 1, 3, 2):
        chain.append(op)
        return op.operands[0], 1, []
    if isinstance(op, g.TransposeOp) and len(perm := op.attrs()["perm"] or ()) == 4:
        # K^T straight from the heads' reshape (nn.MultiheadAttention's [B, S, H, D] ->
        # [B, H, D, S], perm (0, 2, 3, 1)): k is the same transpose without the last swap
        k_op = g.TransposeOp.build_op([op.operands[0]], perm=(*perm[:2], perm[3], perm[2]))
        k_op.location = op.location
        chain.append(op)
        prelude.append(k_op)
        return k_op.results[0], 1, []
    if not isinstance(op, g.ReshapeOp) or len(_shape(kt)) != 4:
        return None
    # dynamo: [B, H, L, D] -> [B*H, L, D] -> [B*H, D, L] -> [B, H, D, L]
    t = op.operands[0].owner
    b, h, d, l = _shape(kt)
    if (isinstance(t, g.TransposeOp) and t.attrs()["perm"] == (1, 2, 0) and _inner(t.results[0])
            and _shape(t.operands[0]) == (l, b * h, d)):
        # dynamo's nn.MultiheadAttention, sequence first: [L, B*H, D] -> [B*H, D, L] ->
        # [B, H, D, L]; k is [L, B*H, D] -> [B*H, L, D] -> [B, H, L, D], two new ops
        k_t = g.TransposeOp.build_op([t.operands[0]], perm=(1, 0, 2))
        shape = constant(np.array((b, h, l, d), np.int64), op.location, hint(kt, "k_shape"))
        k_r = g.ReshapeOp.build_op([k_t.results[0], shape])
        k_t.location = t.location
        k_r.location = op.location
        k_t.results[0].name_hint, k_r.results[0].name_hint = hint(t.results[0], "k"), hint(kt, "k")
        chain.extend([t, op])
        prelude.extend([k_t, shape, k_r])
        return k_r.results[0], 1, []
    if not (isinstance(t, g.TransposeOp) and t.attrs()["perm"] == (0, 2, 1) and _inner(t.results[0])):
        return None
    r = t.operands[0].owner
    if not (isinstance(r, g.ReshapeOp) and _inner(r.results[0])):
        return None
    k = r.operands[0]
    if _shape(r.results[0]) != (b * h, l, d):
        return None
    if _shape(k) == (b, h, l, d):
        chain.extend([r, t, op])
        return k, 1, []
    # the repeat_kv's Expand read straight by the reshape: [B, Hkv, n, L, D] -> [B*H, L, D]
    e = k.owner
    u = e.operands[0].owner if isinstance(e, g.ExpandOp) else None
    if not (isinstance(u, g.UnsqueezeOp) and u.attrs()["axes"] in ((2,), (-3,)) and _inner(k)
            and _inner(u.results[0])):
        return None
    kv = u.operands[0]
    n = _shape(k)[2]
    if len(_shape(kv)) != 4 or _shape(k) != (b, h // n, n, l, d) or _shape(kv) != (b, h // n, l, d):
        return None
    chain.extend([r, t, op])
    return kv, n, [u, e]


def _repeated(x: SSAValue) -> tuple[SSAValue, int, list[Operation]] | None:
    """x = repeat_kv(kv, n) (Unsqueeze axis 2, Expand, Reshape): (kv, n, its ops)."""
    r = x.owner
    if not isinstance(r, g.ReshapeOp) or sole_user(x) is None or is_graph_output(x):
        return None
    e = r.operands[0].owner
    if not isinstance(e, g.ExpandOp) or sole_user(e.results[0]) is None:
        return None
    u = e.operands[0].owner
    if not isinstance(u, g.UnsqueezeOp) or sole_user(u.results[0]) is None or u.attrs()["axes"] not in ((2,), (-3,)):
        return None
    kv = u.operands[0]
    if len(_shape(kv)) != 4:
        return None
    b, hkv, l, d = _shape(kv)
    n = _shape(e.results[0])[2]
    if _shape(e.results[0]) != (b, hkv, n, l, d) or _shape(x) != (b, hkv * n, l, d):
        return None
    if any(attr_names.KEEP in o.attributes for o in (u, e, r)):
        return None
    return kv, n, [u, e, r]


def _leads_to_product(v: SSAValue, scores: tuple[int, ...]) -> bool:
    """The score side of an Add: the scores' shape, produced by the chain's ops."""
    return _shape(v) == scores and isinstance(v.owner, g.MatMulOp | g.MulOp | g.DivOp | g.AddOp | g.WhereOp) \
        and g.constant_value_of(v) is None


def _causal(mask: np.ndarray, scores: tuple[int, ...]) -> bool:
    """A constant additive mask that is the causal triangle (key j <= query i + L - S)."""
    if mask.ndim > 4 or any(d != 1 for d in mask.shape[:-2]):
        return False
    s, l = scores[-2:]
    m = np.broadcast_to(mask.reshape(mask.shape[-2:]) if mask.ndim >= 2 else mask, (s, l))
    keep = np.tril(np.ones((s, l), bool), l - s)
    return bool(np.all(m[keep] == 0) and np.all(m[~keep] <= MASKED))


MASK_ELEMENTS = 1 << 26
"""The largest mask computed to test it for the causal triangle (4096 x 4096 is 1 << 24)."""


def _causal_mask(mask: SSAValue, c: np.ndarray | None, scores: tuple[int, ...], seen: dict[tuple, bool]) -> bool:
    """`mask` (its value c when a constant) is the causal triangle. A long sequence's mask is
    too large to fold (fold_constants' max_bytes), so its value is computed here from the
    constants it depends on; `seen` keeps the answer per mask and scores, as every layer of
    a decoder tests the one mask."""
    if c is not None:
        return _causal(np.asarray(c, np.float64), scores)
    key = (mask, scores)
    if key not in seen:
        whole = value_of(mask, MASK_ELEMENTS) if math.prod(_shape(mask)) <= MASK_ELEMENTS else None
        seen[key] = whole is not None and _causal(np.asarray(whole, np.float64), scores)
    return seen[key]


def _arange_along(c: np.ndarray | None, shape: tuple[int, int], axis: int) -> int | None:
    """k when the constant c, broadcast to `shape`, is index + k along `axis` (the same in
    every position of the other axis); else None. Compares c's own values, never [S, L]."""
    if c is None or not np.issubdtype(c.dtype, np.integer) or c.ndim > 2:
        return None
    c2 = c.reshape((1,) * (2 - c.ndim) + c.shape)
    if any(d not in (1, n) for d, n in zip(c2.shape, shape)) or c2.shape[axis] != shape[axis]:
        return None
    line = np.take(c2, 0, axis=1 - axis)
    if c2.shape[1 - axis] > 1 and not (c2 == np.expand_dims(line, 1 - axis)).all():
        return None
    k = int(line[0])
    return k if np.array_equal(line.astype(np.int64), np.arange(shape[axis], dtype=np.int64) + k) else None


def _position_mask(mask: SSAValue, scores: tuple[int, ...]) -> tuple[SSAValue, SSAValue, int] | None:
    """(position, fill, offset) of a mask that is the causal band at a run-time position -
    Where(LessOrEqual(j + ck, i + cq + position), 0, fill), through views that add leading
    ones (a static KV cache's mask: query i at row position + i sees rows up to it) - with
    fill at most MASKED; else None."""
    sq, lk = scores[-2:]
    v = mask
    while isinstance(v.owner, g.GraphOp) and v.owner.has_trait(ViewLike) \
            and math.prod(_shape(v.owner.operands[0])) == sq * lk:
        v = v.owner.operands[0]
    where = v.owner
    if not isinstance(where, g.WhereOp) or _shape(v)[-2:] != (sq, lk) or math.prod(_shape(v)) != sq * lk:
        return None
    cond, zero, fill = where.operands
    if scalar_constant(zero) != 0 or (f := scalar_constant(fill)) is None or f > MASKED \
            or fill.type.element_type != mask.type.element_type:
        return None
    cmp = cond.owner
    if isinstance(cmp, g.LessOrEqualOp):
        keys, queries = cmp.operands
    elif isinstance(cmp, g.GreaterOrEqualOp):
        queries, keys = cmp.operands
    else:
        return None
    ck = _arange_along(g.constant_value_of(keys), (sq, lk), 1)
    add = queries.owner
    if ck is None or not isinstance(add, g.AddOp):
        return None
    for rows, position in (add.operands, reversed(add.operands)):
        cq = _arange_along(g.constant_value_of(rows), (sq, lk), 0)
        if cq is not None and g.constant_value_of(position) is None and math.prod(_shape(position)) == 1 \
                and isinstance(position.type.element_type, IntegerType):
            return position, fill, cq - ck
    return None


def match_attention(pv: g.MatMulOp, order: dict[Operation, int] | None = None, keep_precision: bool = False,
                    causal_masks: dict[tuple, bool] | None = None) -> tuple[list[Operation], dict] | None:
    """The ops of a decomposed attention ending in the MatMul(P, v), and the parts of the
    graph.attention that replaces them; None if they do not form one or a value inside
    would be lost. `order`: the position of every op of the block (computed once per pass:
    per match it would make the pass quadratic in the layers). `keep_precision`: a softmax
    in f16 / bf16 is no match (graph.attention's is f32). `causal_masks`: the masks too large
    to fold already computed and tested, kept across the matches of one pass."""
    chain: list[Operation] = [pv]
    p = pv.operands[0]
    if len(_shape(p)) != 4 or not is_float(p.type.element_type) or not _inner(p):
        return None
    elt = p.type.element_type
    cast_back = p.owner
    if isinstance(cast_back, g.CastOp):  # Cast(Softmax(Cast(s, f32)), elt)
        chain.append(cast_back)
        p = cast_back.operands[0]
        if not _inner(p):
            return None
    sm = p.owner
    if not isinstance(sm, g.SoftmaxOp | g.SafeSoftmaxOp) or sm.attrs()["axis"] % 4 != 3:
        return None
    if keep_precision and not isinstance(cast_back, g.CastOp) and is_low_precision(to_dtype(elt)):
        return None
    chain.append(sm)
    s = sm.operands[0]
    if isinstance(cast_back, g.CastOp):
        up = s.owner
        if not isinstance(up, g.CastOp) or not _inner(s) or up.operands[0].type.element_type != elt:
            return None
        chain.append(up)
        s = up.operands[0]
    scores = _shape(s)
    masks: list[SSAValue] = []
    position_mask = None
    causal = False
    scale = 1.0
    while _inner(s):
        op = s.owner
        if isinstance(op, g.AddOp) and _shape(op.results[0]) == scores:
            lhs, rhs = op.operands
            # the score side is the one that leads to the product (has the scores' shape and is
            # not a constant); the other is the mask
            side, mask = (lhs, rhs) if _leads_to_product(lhs, scores) else (rhs, lhs)
            if _shape(side) != scores:
                return None
            chain.append(op)
            c = g.constant_value_of(mask)
            if _causal_mask(mask, c, scores, {} if causal_masks is None else causal_masks):
                causal = True
            else:
                masks.append(mask)
                if c is None and scores[-2] > 1:  # one query row sees every valid key: the mask's row is all
                    position_mask = _position_mask(mask, scores)
            s = side
        elif isinstance(op, g.WhereOp):
            cond, then, other = op.operands
            c, fill = g.constant_value_of(cond), scalar_constant(other)
            sq, lk = scores[-2:]
            if c is None or fill is None or fill > MASKED or _shape(then) != scores:
                return None
            if c.ndim > 4 or any(d != 1 for d in c.shape[:-2]) or not np.array_equal(
                    np.broadcast_to(c.reshape(c.shape[-2:]) if c.ndim >= 2 else c, (sq, lk)),
                    np.tril(np.ones((sq, lk), bool), lk - sq)):
                return None
            chain.append(op)
            causal, s = True, then
        elif isinstance(op, g.MulOp | g.DivOp):
            x, f = _scalar_mul(s, chain)
            if x is s:
                return None
            scale *= f
            s = x
        else:
            break
    qk = s.owner
    if not isinstance(qk, g.MatMulOp) or not _inner(s) or len(masks) > 1:
        return None
    if isinstance(sm, g.SafeSoftmaxOp) and (masks or causal):  # a masked row could be -inf throughout
        return None
    chain.append(qk)
    q, fq = _scalar_mul(qk.operands[0], chain)
    kt, fk = _scalar_mul(qk.operands[1], chain)
    prelude: list[Operation] = []
    key = _key_of(kt, chain, prelude)
    if key is None:
        return None
    k, n, k_ops = key
    scale *= fq * fk
    v = pv.operands[1]
    if any(len(_shape(x)) != 4 for x in (q, k, v)):
        return None
    rv = _repeated(v)
    if n == 1:
        rk = _repeated(k)
        if rk is not None and rv is not None and rk[1] == rv[1]:
            k, n, k_ops = rk
    if n > 1:
        if rv is None or rv[1] != n:
            return None
        v = rv[0]
        chain.extend(k_ops + rv[2])
    operands = [q, k, v, *masks]
    if any(x.type.element_type != elt for x in operands):
        return None
    try:
        g.AttentionOp.infer([x.type for x in operands], {"scale": scale, "causal": int(causal)}, [None] * len(operands))
    except g.ShapeError:
        return None
    if order is None:
        block = pv.parent_block()
        order = {op: i for i, op in enumerate(block.ops)} if block is not None else {}
    if any(op not in order for op in chain):
        return None
    chain = sorted(set(chain), key=order.__getitem__)
    if pv.results[0].type != g.AttentionOp.infer([x.type for x in operands], {"scale": scale, "causal": int(causal)},
                                                [None] * len(operands))[0]:
        return None
    return chain, {"operands": operands, "scale": float(np.float32(scale)), "causal": int(causal),
                   "prelude": prelude, "position_mask": position_mask}


@dataclass
class DecomposedAttention(RewritePattern):
    """Replace a decomposed attention by graph.attention (the same formula up to rounding)."""

    order: dict[Operation, int]
    """Program order of the ops when the pass started (ops it creates are in no chain)."""
    keep_precision: bool = False
    masks: list[SSAValue] = field(default_factory=list)
    """The position masks replaced by a graph.causal_mask (their ops go once unused)."""
    causal_masks: dict[tuple, bool] = field(default_factory=dict)
    """Masks computed to test them (match_attention's `causal_masks`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.MatMulOp, rewriter: PatternRewriter) -> None:
        found = match_attention(op, self.order, self.keep_precision, self.causal_masks)
        if found is None:
            return
        chain, p = found
        operands, made = p["operands"], []
        if p["position_mask"] is not None:  # the attention's own (fusion takes a mask with one user)
            position, fill, offset = p["position_mask"]
            sq, lk = _shape(operands[0])[2], _shape(operands[1])[2]
            made = [g.CausalMaskOp.build_op([position, fill], queries=sq, keys=lk, offset=offset)]
            # located at the attention's nodes first (the kernel they form is named after its
            # first node), then the mask's
            made[0].location = fused_loc(n for o in (*chain, operands[3].owner) for n in loc_names(o.location))
            made[0].results[0].name_hint = operands[3].name_hint
            self.masks.append(operands[3])
            operands = [*operands[:3], made[0].results[0]]
        new = g.AttentionOp.build_op(operands, scale=p["scale"], causal=p["causal"])
        replace_chain(chain, [*p["prelude"], *made, new], rewriter)


@dataclass(frozen=True)
class RecognizeAttention(ModulePass):
    """Replace decomposed attentions (MatMul q k^T, scale, masks, Softmax, MatMul v; k / v
    repeated for GQA) by graph.attention."""

    name = "graph-recognize-attention"

    keep_precision: bool = False
    """Leave a softmax the model computes in f16 / bf16 alone: graph.attention computes its
    softmax in f32 (must_keep_origin_dtype sets it)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        order = {o: i for i, o in enumerate(op.walk())}
        pattern = DecomposedAttention(order, self.keep_precision)
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
        _erase_unused(pattern.masks)


def _erase_unused(values: list[SSAValue]) -> None:
    """The graph ops that computed `values`, and what only they used, once nothing uses them."""
    work = [v.owner for v in values]
    while work:
        o = work.pop()
        if not isinstance(o, g.GraphOp) or o.parent is None or any(r.uses for r in o.results):
            continue
        work.extend(v.owner for v in o.operands)
        o.detach()
        o.erase()
