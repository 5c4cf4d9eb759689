"""graph-recognize-layer-norm: a decomposed LayerNorm becomes one graph.layer_norm.

What the TorchScript exporter writes for `torch.nn.LayerNorm` below opset 17:

    mean = ReduceMean(x, axes=trailing, keepdims=1)
    d    = Sub(x, mean)
    var  = ReduceMean(Pow(d, 2) or Mul(d, d), same axes)
    y    = Div(d, Sqrt(Add(var, eps)))  [* gamma]  [+ beta]

becomes `graph.layer_norm(x, gamma, beta) {axis, epsilon}`, located at every node it replaces
(a missing gamma is a constant of ones). The kernel library's LayerNorm is one pass over a
row, and the fusion pattern `layernorm` anchors on it. The formula is the same, so results
agree within fp32 rounding.

Left alone (each a lit case): axes that are not the trailing ones, keepdims=0, a Pow other
than 2, a missing epsilon, a value inside the chain used elsewhere, returned, or tapped with
`graph.keep` (its tensor would be lost).
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
from geir.passes.graph.utils import ones_scale, other_operand, replace_chain, scalar_constant


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def _sole_user(op: Operation) -> Operation | None:
    uses = list(op.results[0].uses) if len(op.results) == 1 else []
    return uses[0].operation if len(uses) == 1 else None


def match_layer_norm(mean: g.ReduceMeanOp) -> tuple[list[Operation], dict] | None:
    """The ops of a decomposed LayerNorm starting at its first ReduceMean, and the parts of the
    graph.layer_norm that replaces them; None if the ops do not form one, or if a value inside
    would be lost (another user, a function result, a graph.keep tap)."""
    x = mean.operands[0]
    if not is_float(x.type.element_type) or not all(d >= 0 for d in _shape(x)):
        return None
    rank = len(_shape(x))
    a = mean.attrs()
    if not a["axes"] or not a["keepdims"]:
        return None
    axes = sorted(ax % rank for ax in a["axes"])
    if axes != list(range(rank - len(axes), rank)):
        return None
    chain: list[Operation] = [mean]

    def step(op: Operation | None, kind: type[Operation]) -> Operation | None:
        if not isinstance(op, kind) or attr_names.KEEP in chain[-1].attributes:
            return None
        chain.append(op)
        return op

    sub = step(_sole_user(mean), g.SubOp)
    if sub is None or sub.operands[0] is not x or sub.operands[1] is not mean.results[0]:
        return None
    d = sub.results[0]
    users = {u.operation for u in d.uses}
    if len(users) != 2 or attr_names.KEEP in sub.attributes:
        return None
    sq = next((u for u in users if isinstance(u, g.PowOp | g.MulOp) and u.operands[0] is d), None)
    if sq is None or (isinstance(sq, g.PowOp) and scalar_constant(sq.operands[1]) != 2.0) or (
            isinstance(sq, g.MulOp) and sq.operands[1] is not d):
        return None
    chain.append(sq)
    var = step(_sole_user(sq), g.ReduceMeanOp)
    if var is None or var.operands[0] is not sq.results[0] or var.attrs() != a:
        return None
    add = step(_sole_user(var), g.AddOp)
    eps = None if add is None else scalar_constant(other_operand(add, var.results[0]))
    sqrt = step(_sole_user(add), g.SqrtOp) if eps is not None else None
    div = step(_sole_user(sqrt), g.DivOp) if sqrt is not None else None
    if div is None or div.operands[0] is not d or div.operands[1] is not sqrt.results[0] or div not in users:
        return None
    norm = _shape(x)[rank - len(axes):]

    def param(op: Operation | None, kind: type[Operation], prev: Operation) -> SSAValue | None:
        if not isinstance(op, kind) or attr_names.KEEP in prev.attributes:
            return None
        p = other_operand(op, prev.results[0])
        if p is None or p.type.element_type != x.type.element_type or len(_shape(p)) > len(norm):
            return None
        try:
            if g.broadcast_shapes(_shape(p), norm) != norm:
                return None
        except g.ShapeError:
            return None
        chain.append(op)
        return p

    last = div
    gamma = param(_sole_user(div), g.MulOp, div)
    if gamma is not None:
        last = chain[-1]
    beta = param(_sole_user(last), g.AddOp, last)
    if beta is not None:
        last = chain[-1]
    if last.results[0].type != x.type:
        return None
    return chain, {"x": x, "gamma": gamma, "beta": beta, "axis": rank - len(axes), "epsilon": eps, "norm": norm}


class DecomposedLayerNorm(RewritePattern):
    """Replace a decomposed LayerNorm by graph.layer_norm (same formula: within fp32 rounding)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.ReduceMeanOp, rewriter: PatternRewriter) -> None:
        found = match_layer_norm(op)
        if found is None:
            return
        chain, p = found
        new_ops: list[Operation] = []
        gamma = p["gamma"]
        if gamma is None:
            new_ops.append(ones_scale(p["x"], p["norm"], chain[-1], "ln"))
            gamma = new_ops[-1].results[0]
        inputs = [p["x"], gamma] + ([p["beta"]] if p["beta"] is not None else [])
        new_ops.append(g.LayerNormOp.build_op(inputs, axis=p["axis"], epsilon=p["epsilon"]))
        replace_chain(chain, new_ops, rewriter)


@dataclass(frozen=True)
class RecognizeLayerNorm(ModulePass):
    """Replace decomposed LayerNorms (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div,
    Mul gamma, Add beta) by graph.layer_norm."""

    name = "graph-recognize-layer-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(DecomposedLayerNorm(), apply_recursively=False).rewrite_module(op)
