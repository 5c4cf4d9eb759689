"""graph-canonicalize: algebraic simplification of graph ops.

Each rule is a RewritePattern applied greedily to a fixed point (xDSL's
PatternRewriteWalker + GreedyRewritePatternApplier, which also erases ops left
without users). "Forward" means the op's result is replaced by an existing
value; that needs the exact same type and is never done to a graph output (the
function would then return an input or another output under the output's name).

| rule | rewrite | numeric condition |
|---|---|---|
| identity, dropout | `x` | always (inference dropout is the identity) |
| cast, reshape, flatten, squeeze, unsqueeze, expand to the same type | `x` | same type: same values |
| transpose with the identity perm, tile by ones, pad by zeros | `x` | exact data movement |
| slice of the whole tensor | `x` | every axis is `[0, dim)` with step 1 (a reversing slice keeps the shape but not the data) |
| concat, sum, max, min, mean of one operand | `x` | exact |
| `x + 0`, `0 + x`, `x - 0` | `x` | the constant is ±0 everywhere and broadcasting leaves x's type unchanged; only the sign of a zero can differ: IEEE `(-0) + (+0) = +0` where we return `-0` |
| `x * 1`, `1 * x`, `x / 1`, `x ** 1` | `x` | the constant is exactly 1 everywhere and broadcasting leaves x's type unchanged; exact for every x, NaN and Inf included |
| `x ** 2` | `x * x` | the exponent is exactly 2 everywhere, same type; `x * x` is the correctly rounded square, `pow` may differ from it by one ulp |
| `neg(neg(x))` | `x` | exact (integer negation wraps symmetrically) |
| `transpose(transpose(x, p), q)` | `transpose(x, p∘q)` (or `x`) | exact data movement |
| reshape-like of reshape-like (reshape, flatten, squeeze, unsqueeze) | one `reshape` to the static result shape (or `x`) | exact data movement |
| `matmul(reshape(x), w)`: x `[..., K]` with its leading dims flattened into rows, w 2-D | `reshape(matmul(x, w))` to the flattened result | exact: every output element is the same length-K dot product (core ATen's `nn.Linear` on a 3-D input: view, mm, view) |
| `matmul(reshape(a), reshape(b))`: a `[..., S, K]` and b `[..., K, T]` with their batch dims flattened into one (the same count); one of the two may be a plain 3-D tensor | `reshape(matmul(a, b'))`, b' b with a's batch dims | exact, as above (core ATen's 4-D matmul: expand, view, bmm, view; b's batch dims may differ from a's by how they are split, as a repeated GQA head's; torch.export's `bmm(view(p), v)` with v a transposed 3-D tensor) |
| `op(reshape(y), c)` for add / sub / mul / div: y a matmul's result whose last dim the reshape keeps, c a row (its dims but the last are 1) | `reshape(op(y, c))` | exact: the same elements meet the same row values (a bias added between core ATen's flattening view and the view back; the add then joins the matmul's epilogue) |
| `matmul(a, c)`: c a constant of rank >= 3 whose batch slices are all equal | `matmul(a, c[0, ...])` (the slice broadcasts) | exact: the same operands per batch (a weight expanded per batch and folded) |
| `gather(x, c)` with constant in-range indices `i, i+1, ..., i+n-1` (1-D) or one index (0-D) | `slice` (+ `squeeze` for 0-D) | exact: the same elements |
| `resize(x)` (nearest; float linear / cubic up to 8 taps) | per axis: gathers at constant indices (or reshape / expand / reshape for an integer nearest upsampling), constant-weight `mul` / `add`, `where` for the extrapolation value (passes/graph/decompose_resize.py) | nearest exact (copies); linear / cubic: an f32 sum of 2-8 terms, where the reference sums in f64 |
| `log(exp(x))` | `x` | **fast-math only**: exp overflows to Inf for x > 88.72 (f32) and underflows to 0 for x < -103.97, giving Inf / -Inf, and rounds in between |
| `x * 0`, `0 * x` | splat 0 of the result type | integers always; floats **fast-math only** (`NaN * 0`, `Inf * 0` are NaN, `-1 * 0` is -0) |
| `x - x` | splat 0 | integers always; floats **fast-math only** (NaN, Inf) |
| `x / x` | splat 1 | floats **fast-math only** (`0/0`, `Inf/Inf`, NaN); never for integers (`0/0` is an error) |
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from geir.dialects import graph as g
from geir.ir.shape_only import is_shape_only
from geir.ir.types import is_float
from geir.passes.graph.decompose_resize import ResizeToGathers
from geir.passes.graph.utils import (
    can_forward,
    constant,
    hint,
    merged_loc,
    replace_checked,
    splat,
    static_shape,
)


def forward(op: Operation, to: SSAValue, rewriter: PatternRewriter) -> bool:
    """Replace op's result by `to` if allowed (see `can_forward`)."""
    if not can_forward(op, to):
        return False
    rewriter.replace(op, [], [to])
    return True


def const_is(value: SSAValue, scalar: float) -> bool:
    """The value is a constant equal to `scalar` everywhere (never for NaN)."""
    a = g.constant_value_of(value)
    return a is not None and a.size > 0 and bool(np.all(a == scalar))


def const_ints(value: SSAValue | None) -> tuple[int, ...] | None:
    a = None if value is None else g.constant_value_of(value)
    return None if a is None else tuple(int(v) for v in np.asarray(a).reshape(-1))


def _perm(op: g.TransposeOp) -> tuple[int, ...]:
    rank = len(op.inputs[0].type.get_shape())
    return op.attrs()["perm"] or tuple(reversed(range(rank)))


RESHAPE_LIKE = (g.ReshapeOp, g.FlattenOp, g.SqueezeOp, g.UnsqueezeOp)


class RemoveNoOps(RewritePattern):
    """Ops that return their operand unchanged."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: g.IdentityOp | g.DropoutOp | g.CastOp | g.ReshapeOp | g.FlattenOp | g.SqueezeOp | g.UnsqueezeOp
        | g.ExpandOp | g.TransposeOp | g.TileOp | g.PadOp | g.SliceOp
        | g.ConcatOp | g.SumOp | g.MaxOp | g.MinOp | g.MeanOp,
        rewriter: PatternRewriter,
    ) -> None:
        x = op.inputs[0]
        if isinstance(op, g.ConcatOp | g.SumOp | g.MaxOp | g.MinOp | g.MeanOp):
            if len(op.inputs) == 1:
                forward(op, x, rewriter)
            return
        if isinstance(op, g.TransposeOp):
            if _perm(op) == tuple(range(len(_perm(op)))):
                forward(op, x, rewriter)
            return
        if isinstance(op, g.TileOp):
            reps = const_ints(op.inputs[1])
            if reps is not None and all(r == 1 for r in reps):
                forward(op, x, rewriter)
            return
        if isinstance(op, g.PadOp):
            pads = const_ints(op.inputs[1])
            if pads is not None and not any(pads):
                forward(op, x, rewriter)
            return
        if isinstance(op, g.SliceOp):
            if self._whole(op):
                forward(op, x, rewriter)
            return
        forward(op, x, rewriter)  # identity, dropout; the others only when the type is unchanged

    @staticmethod
    def _whole(op: g.SliceOp) -> bool:
        shape = static_shape(op.inputs[0].type)
        starts, ends = const_ints(op.inputs[1]), const_ints(op.inputs[2])
        if shape is None or starts is None or ends is None:
            return False
        axes = const_ints(op.inputs[3]) if len(op.inputs) > 3 else tuple(range(len(starts)))
        steps = const_ints(op.inputs[4]) if len(op.inputs) > 4 else (1,) * len(starts)
        if axes is None or steps is None or 0 in steps:
            return False
        for s, e, a, st in zip(starts, ends, axes, steps):
            dim = shape[a % len(shape)]
            if range(dim)[slice(s, e, st)] != range(dim):
                return False
        return True


class BinaryIdentity(RewritePattern):
    """x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1, x ** 1."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: g.AddOp | g.SubOp | g.MulOp | g.DivOp | g.PowOp, rewriter: PatternRewriter
    ) -> None:
        lhs, rhs = op.inputs
        neutral = 0 if isinstance(op, g.AddOp | g.SubOp) else 1
        if const_is(rhs, neutral) and forward(op, lhs, rewriter):
            return
        if isinstance(op, g.AddOp | g.MulOp) and const_is(lhs, neutral):
            forward(op, rhs, rewriter)


@dataclass
class AbsorbingValues(RewritePattern):
    """x * 0 -> 0, x - x -> 0, x / x -> 1 (floats: fast-math only)."""

    fast_math: bool = False

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.MulOp | g.SubOp | g.DivOp, rewriter: PatternRewriter) -> None:
        lhs, rhs = op.inputs
        t = op.output.type
        floating = is_float(t.element_type)
        if floating and not self.fast_math:
            return
        if isinstance(op, g.MulOp) and (const_is(lhs, 0) or const_is(rhs, 0)):
            rewriter.replace(op, splat(0, t, op.location))
        elif isinstance(op, g.SubOp) and lhs is rhs:
            rewriter.replace(op, splat(0, t, op.location))
        elif isinstance(op, g.DivOp) and lhs is rhs and floating:
            rewriter.replace(op, splat(1, t, op.location))


class SquareToMul(RewritePattern):
    """x ** 2 -> x * x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.PowOp, rewriter: PatternRewriter) -> None:
        x = op.inputs[0]
        if const_is(op.inputs[1], 2) and op.output.type == x.type:
            mul = g.MulOp.build_op([x, x])
            mul.location = op.location
            replace_checked(op, [mul], rewriter)


@dataclass
class CancelInverses(RewritePattern):
    """neg(neg(x)) -> x; log(exp(x)) -> x (fast-math only)."""

    fast_math: bool = False

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.NegOp | g.LogOp, rewriter: PatternRewriter) -> None:
        inner = op.inputs[0].owner
        if isinstance(op, g.NegOp) and isinstance(inner, g.NegOp):
            forward(op, inner.inputs[0], rewriter)
        elif isinstance(op, g.LogOp) and isinstance(inner, g.ExpOp) and self.fast_math:
            forward(op, inner.inputs[0], rewriter)


class ComposeTransposes(RewritePattern):
    """transpose(transpose(x, p), q) -> transpose(x, p∘q), or x for the identity."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.inputs[0].owner
        if not isinstance(inner, g.TransposeOp):
            return
        p, q = _perm(inner), _perm(op)
        perm = tuple(p[i] for i in q)
        x = inner.inputs[0]
        if perm == tuple(range(len(perm))) and forward(op, x, rewriter):
            return
        new = g.TransposeOp.build_op([x], perm=perm)
        new.location = merged_loc(inner, op)
        replace_checked(op, [new], rewriter)


class ComposeReshapes(RewritePattern):
    """A reshape-like op of a reshape-like op: one reshape to the static result shape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: g.ReshapeOp | g.FlattenOp | g.SqueezeOp | g.UnsqueezeOp, rewriter: PatternRewriter
    ) -> None:
        inner = op.inputs[0].owner
        if not isinstance(inner, RESHAPE_LIKE):
            return
        x = inner.inputs[0]
        if forward(op, x, rewriter):
            return
        shape = static_shape(op.output.type)
        if shape is None:
            return
        loc = merged_loc(inner, op)
        target = constant(np.array(shape, dtype=np.int64), loc, hint(op.output, "shape"))
        new = g.ReshapeOp.build_op([x, target], allowzero=int(0 in shape))
        new.location = loc
        replace_checked(op, [target, new], rewriter)


def _flattened(v: SSAValue, keep: int) -> SSAValue | None:
    """The value a reshape-like op flattened into `v` when it merged only leading dims: its
    last `keep` dims are v's and it has more dims than v; else None."""
    op = v.owner
    if not isinstance(op, RESHAPE_LIKE):
        return None
    x = op.inputs[0]
    xs, vs = static_shape(x.type), static_shape(v.type)
    if xs is None or vs is None or len(xs) <= len(vs) or xs[len(xs) - keep:] != vs[len(vs) - keep:]:
        return None
    return x


def _split_batch(v: SSAValue, shape: tuple[int, ...], loc, ops: list[Operation]) -> SSAValue:
    """v reshaped to `shape` at `loc`; the ops are appended to `ops`."""
    target = constant(np.array(shape, np.int64), loc, hint(v, "shape"))
    op = g.ReshapeOp.build_op([v, target])
    op.location = loc
    ops += [target, op]
    return op.output


class UnflattenMatmul(RewritePattern):
    """A matmul of operands whose batch dims were flattened by reshapes: the matmul of the
    unflattened operands, reshaped to the flattened result (rules in the module docstring).
    Later rules compose that reshape with its users', so the batched matmul meets the
    reshape / transpose after it (the cube kernel's head split) and the attention
    recogniser sees the 4-D form the ONNX exporters write."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.MatMulOp, rewriter: PatternRewriter) -> None:
        a, b = op.inputs
        shape_a, shape_b, out = static_shape(a.type), static_shape(b.type), static_shape(op.output.type)
        if shape_a is None or shape_b is None or out is None:
            return
        ops: list[Operation] = []
        if len(shape_a) == 2 and len(shape_b) == 2:  # rows = flattened leading dims
            x = _flattened(a, 1)
            if x is None:
                return
            lhs, rhs = x, b
        elif len(shape_a) == 3 and len(shape_b) == 3 and shape_a[0] == shape_b[0]:
            # one batch dim = flattened batch dims; one operand may be a plain 3-D tensor,
            # split like the other (torch.export's bmm of probabilities and a transposed V)
            x, z = _flattened(a, 2), _flattened(b, 2)
            if x is None and z is None:
                return
            lead = tuple(static_shape((x if x is not None else z).type)[:-2])
            lhs = x if x is not None else _split_batch(a, lead + shape_a[1:], op.location, ops)
            if z is None:
                rhs = _split_batch(b, lead + shape_b[1:], op.location, ops)
            elif tuple(static_shape(z.type)[:-2]) != lead:  # b's batch dims split otherwise
                rhs = _split_batch(z, lead + shape_b[1:], b.owner.location, ops)
            else:
                rhs = z
        else:
            return
        mm = g.MatMulOp.build_op([lhs, rhs])
        mm.location = merged_loc(op, a.owner)
        target = constant(np.array(out, np.int64), op.location, hint(op.output, "shape"))
        back = g.ReshapeOp.build_op([mm, target])
        back.location = op.location
        replace_checked(op, [*ops, mm, target, back], rewriter)


class RowOpThroughReshape(RewritePattern):
    """op(reshape(y), row) -> reshape(op(y, row)) for a matmul's y (rule in the module docstring)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.AddOp | g.SubOp | g.MulOp | g.DivOp, rewriter: PatternRewriter) -> None:
        lhs, rhs = op.inputs
        for side, (r, c) in enumerate(((lhs, rhs), (rhs, lhs))):
            reshape = r.owner
            if not isinstance(reshape, RESHAPE_LIKE) or not isinstance(reshape.inputs[0].owner, g.MatMulOp):
                continue
            y = reshape.inputs[0]
            ys, rs, cs = static_shape(y.type), static_shape(r.type), static_shape(c.type)
            if ys is None or rs is None or cs is None or not ys or not rs or ys[-1] != rs[-1]:
                continue
            if any(d != 1 for d in cs[:-1]) or (cs and cs[-1] not in (1, rs[-1])) or len(cs) > len(ys):
                continue
            if static_shape(op.output.type) != rs:
                continue
            new = type(op).build_op([y, c] if side == 0 else [c, y])
            new.location = op.location
            target = constant(np.array(rs, np.int64), op.location, hint(op.output, "shape"))
            back = g.ReshapeOp.build_op([new, target])
            back.location = op.location
            if replace_checked(op, [new, target, back], rewriter):
                return


class BroadcastConstantOperand(RewritePattern):
    """matmul(a, c) with c's batch slices all equal -> matmul(a, c[0, ...])."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.MatMulOp, rewriter: PatternRewriter) -> None:
        a, b = op.inputs
        c = g.constant_value_of(b)
        if c is None or c.ndim < 3 or is_shape_only(c) or int(np.prod(c.shape[:-2])) <= 1:
            return
        first = c.reshape(-1, *c.shape[-2:])
        if not np.array_equal(first, np.broadcast_to(first[:1], first.shape)):
            return
        w = constant(np.ascontiguousarray(first[0]), b.owner.location, hint(b, "slice"))
        new = g.MatMulOp.build_op([a, w])
        new.location = op.location
        replace_checked(op, [w, new], rewriter)


class GatherToSlice(RewritePattern):
    """gather of a constant run of consecutive indices -> slice (+ squeeze for a 0-D index)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.GatherOp, rewriter: PatternRewriter) -> None:
        data, indices = op.inputs
        idx = g.constant_value_of(indices)
        shape = static_shape(data.type)
        if idx is None or shape is None or idx.ndim > 1 or idx.size == 0:
            return
        axis = op.attrs()["axis"] % len(shape)
        dim = shape[axis]
        flat = idx.reshape(-1).astype(np.int64)
        flat = np.where(flat < 0, flat + dim, flat)
        start = int(flat[0])
        if not (0 <= start and start + flat.size <= dim and np.array_equal(flat, np.arange(start, start + flat.size))):
            return
        loc, out = op.location, op.output
        ops: list[Operation] = [
            constant(np.array([start], np.int64), loc, hint(out, "starts")),
            constant(np.array([start + flat.size], np.int64), loc, hint(out, "ends")),
            constant(np.array([axis], np.int64), loc, hint(out, "axes")),
        ]
        ops.append(g.SliceOp.build_op([data, *ops]))
        if idx.ndim == 0:
            ops[-1].output.name_hint = hint(out, "slice")
            ops.append(g.SqueezeOp.build_op([ops[-1]], axes=(axis,)))
        for o in ops[3:]:
            o.location = loc
        replace_checked(op, ops, rewriter)


def patterns(fast_math: bool = False) -> list[RewritePattern]:
    return [
        RemoveNoOps(),
        BinaryIdentity(),
        AbsorbingValues(fast_math),
        SquareToMul(),
        CancelInverses(fast_math),
        ComposeTransposes(),
        ComposeReshapes(),
        UnflattenMatmul(),
        RowOpThroughReshape(),
        BroadcastConstantOperand(),
        GatherToSlice(),
        ResizeToGathers(),
    ]


def canonicalize(module: ModuleOp, fast_math: bool = False) -> bool:
    """Apply every rule to a fixed point; True if anything changed."""
    walker = PatternRewriteWalker(GreedyRewritePatternApplier(patterns(fast_math)), apply_recursively=True)
    return walker.rewrite_module(module)


@dataclass(frozen=True)
class CanonicalizePass(ModulePass):
    """Algebraic simplification (rules and their numeric conditions in the module docstring)."""

    name = "graph-canonicalize"

    fast_math: bool = False
    """Also apply the rules that change results for NaN / Inf / large inputs."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        canonicalize(op, self.fast_math)
