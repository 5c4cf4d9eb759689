"""graph-recognize-rms-norm: a decomposed RMSNorm becomes one graph.rms_norm.

What the PyTorch exporters write for LLaMA's / T5's RMSNorm
(`x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight`) and its variants:

    ms = ReduceMean(Pow(x, 2) or Mul(x, x), axes=trailing, keepdims=1)
    r  = Sqrt(Add(ms, eps))
    n  = Div(x, r)
       | Mul(x, Reciprocal(r))      torch.rsqrt, dynamo exporter
       | Mul(x, Div(1, r))          torch.rsqrt, TorchScript exporter
       | Mul(x, Pow(Add(ms, eps), -0.5))
    y  = n [* scale]

becomes `graph.rms_norm(x, scale) {axis, epsilon}`, located at every node it replaces (a
missing scale is a constant of ones). The row template computes it in one pass over a row
and the fusion pattern `layernorm` anchors on it (trait Normalization), with the residual Add
before it and elementwise ops after. The formula is the same up to rounding: x * (1 / r)
and x * (ms + eps) ** -0.5 differ from x / r by an ulp or so.

Left alone (each a lit case): axes that are not the trailing ones, keepdims=0, a Pow other
than 2, a missing epsilon, a value inside the chain used elsewhere, returned, or tapped with
`graph.keep` (its tensor would be lost); and the tail of a LayerNorm that
graph-recognize-layer-norm left alone (x = y - mean(y), one of its values needed): as an
rms_norm of x it would no longer fuse with its mean into one reduction kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.ir.types import is_float
from geir.passes.graph.utils import ones_scale, other_operand, replace_chain, scalar_constant, sole_user


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def _centred(x: SSAValue) -> bool:
    """x = Sub(y, ReduceMean(y)): the centred row of a LayerNorm."""
    sub = x.owner
    return isinstance(sub, g.SubOp) and isinstance(mean := sub.operands[1].owner, g.ReduceMeanOp) \
        and mean.operands[0] is sub.operands[0]


def match_rms_norm(mean: g.ReduceMeanOp) -> tuple[list[Operation], dict] | None:
    """The ops of a decomposed RMSNorm around its ReduceMean, in order, and the parts of the
    graph.rms_norm that replaces them; None if the ops do not form one, or if a value inside
    would be lost (another user, a function result, a graph.keep tap)."""
    sq = mean.operands[0].owner
    if not isinstance(sq, g.PowOp | g.MulOp) or sole_user(sq.results[0]) is not mean:
        return None
    x = sq.operands[0]
    if (isinstance(sq, g.PowOp) and scalar_constant(sq.operands[1]) != 2.0) or (
            isinstance(sq, g.MulOp) and sq.operands[1] is not x):
        return None
    if not is_float(x.type.element_type) or not all(d >= 0 for d in _shape(x)) or _centred(x):
        return None
    rank = len(_shape(x))
    a = mean.attrs()
    if not a["axes"] or not a["keepdims"]:
        return None
    axes = sorted(ax % rank for ax in a["axes"])
    if axes != list(range(rank - len(axes), rank)):
        return None
    if attr_names.KEEP in sq.attributes:
        return None
    chain: list[Operation] = [sq, mean]

    def step(op: Operation | None, kind: type[Operation]) -> Operation | None:
        if not isinstance(op, kind) or attr_names.KEEP in chain[-1].attributes:
            return None
        chain.append(op)
        return op

    def user(op: Operation) -> Operation | None:
        return sole_user(op.results[0])

    add = step(user(mean), g.AddOp)
    eps = None if add is None else scalar_constant(other_operand(add, mean.results[0]))
    if eps is None:
        return None
    # n = x / r, or x * (1 / r) with the reciprocal in one of its spellings
    r = user(add)
    if isinstance(r, g.PowOp) and r.operands[0] is add.results[0] and scalar_constant(r.operands[1]) == -0.5:
        inv = step(r, g.PowOp)
        n = None
    else:
        sqrt = step(r, g.SqrtOp)
        nxt = None if sqrt is None else user(sqrt)
        s = None if sqrt is None else sqrt.results[0]
        if isinstance(nxt, g.DivOp) and nxt.operands[0] is x and nxt.operands[1] is s:
            inv, n = None, step(nxt, g.DivOp)
        elif isinstance(nxt, g.ReciprocalOp) or (isinstance(nxt, g.DivOp) and nxt.operands[1] is s
                                                 and scalar_constant(nxt.operands[0]) == 1.0):
            inv, n = step(nxt, type(nxt)), None
        else:
            return None
    if inv is not None:
        n = step(user(inv), g.MulOp)
        if n is None or other_operand(n, inv.results[0]) is not x:
            return None
    if n is None:
        return None
    norm = _shape(x)[rank - len(axes):]
    last = n
    scale = None
    mul = user(n)
    if isinstance(mul, g.MulOp) and attr_names.KEEP not in n.attributes:
        p = other_operand(mul, n.results[0])
        try:
            fits = p.type.element_type == x.type.element_type and len(_shape(p)) <= len(norm) \
                and g.broadcast_shapes(_shape(p), norm) == norm
        except g.ShapeError:
            fits = False
        if fits:
            chain.append(mul)
            scale, last = p, mul
    if last.results[0].type != x.type:
        return None
    return chain, {"x": x, "scale": scale, "axis": rank - len(axes), "epsilon": eps, "norm": norm}


class DecomposedRmsNorm(RewritePattern):
    """Replace a decomposed RMSNorm by graph.rms_norm (the same formula up to rounding)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.ReduceMeanOp, rewriter: PatternRewriter) -> None:
        found = match_rms_norm(op)
        if found is None:
            return
        chain, p = found
        new_ops: list[Operation] = []
        scale = p["scale"]
        if scale is None:
            new_ops.append(ones_scale(p["x"], p["norm"], chain[-1], "rms"))
            scale = new_ops[-1].results[0]
        new_ops.append(g.RmsNormOp.build_op([p["x"], scale], axis=p["axis"], epsilon=p["epsilon"]))
        replace_chain(chain, new_ops, rewriter)


@dataclass(frozen=True)
class RecognizeRmsNorm(ModulePass):
    """Replace decomposed RMSNorms (Pow 2 or Mul, ReduceMean, Add eps, Sqrt, Div - or a
    reciprocal square root and Mul - then Mul scale) by graph.rms_norm."""

    name = "graph-recognize-rms-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(DecomposedRmsNorm(), apply_recursively=False).rewrite_module(op)
