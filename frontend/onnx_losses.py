"""The ONNX loss operators, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, imported
as the graph ops their definitions spell out (docs/onnx.md, "Losses").

The input is [N, C] or [N, C, d1, ...] and the labels a runtime integer tensor [N] or
[N, d1, ...]. The picked log-probability x[n, t[n, d], d] is a one-hot sum: the labels
(with an ignored one replaced by -1, which matches no class) are compared with the class
iota laid along axis 1, and `where(onehot, x, 0)` is summed over the classes, so a label
outside [0, C) never reads out of bounds, and a -inf log-probability of another class is
never multiplied. The per-element weight weight[t] is the same one-hot sum over the
weights (0 for an ignored label); without weights it is 1 for a counted label.

    loss[n, d] = -x[n, t, d] * w[n, d]
    none: loss;  sum: sum(loss);  mean: sum(loss) / sum(w)

which is the spec's mean: with weights it divides by the sum of the weights of the
non-ignored targets, without them by the number of those targets. SoftmaxCrossEntropyLoss
is NegativeLogLikelihoodLoss of log_softmax(scores, axis=1), whose optional second output
is that log_softmax.

Converters take the importer (frontend/onnx.py) and use its public methods only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from geir.dialects import graph as g
from geir.ir.types import is_float_dtype, to_dtype

_REDUCTIONS = ("none", "sum", "mean")


def _attrs(im, attrs: dict[str, Any]) -> tuple[str, int | None]:
    unknown = sorted(set(attrs) - {"reduction", "ignore_index"})
    if unknown:
        raise im.error(f"attribute(s) {unknown} are not supported")
    reduction = attrs.get("reduction", b"mean")
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    if reduction not in _REDUCTIONS:
        raise im.error(f"reduction '{reduction}' is not one of {list(_REDUCTIONS)}")
    return reduction, attrs.get("ignore_index")


def _check(im, x: SSAValue, labels: SSAValue, weight: SSAValue | None) -> None:
    xs, ts = list(x.type.get_shape()), list(labels.type.get_shape())
    if not is_float_dtype(to_dtype(x.type.element_type)):
        raise im.error(f"the input must be a float tensor, got {x.type}")
    if len(xs) < 2:
        raise im.error(f"the input must be [N, C] or [N, C, d1, ...], got shape {xs}")
    if to_dtype(labels.type.element_type) not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise im.error(f"the target must be an integer tensor (int32 or int64), got {labels.type}")
    if ts != [xs[0], *xs[2:]]:
        raise im.error(f"the target shape {ts} is not the input's {xs} without the class dim")
    if weight is not None and list(weight.type.get_shape()) != [xs[1]]:
        raise im.error(f"the weight must have shape [{xs[1]}], got {list(weight.type.get_shape())}")


def nll_loss(im, x: SSAValue, labels: SSAValue, weight: SSAValue | None, reduction: str,
             ignore_index: int | None) -> SSAValue:
    """NegativeLogLikelihoodLoss of log-probabilities x [N, C, ...] at labels [N, ...]."""
    _check(im, x, labels, weight)
    shape = list(x.type.get_shape())
    c, rank = shape[1], len(shape)
    dt = to_dtype(x.type.element_type)
    lt = to_dtype(labels.type.element_type)
    zero = im.constant(np.array(0, dt))
    # labels == ignore_index, where it matters: a class's index (relabelled -1, which picks
    # none) or the count of an unweighted mean; a label outside [0, C) picks none by itself
    ignored = None
    relabel = ignore_index is not None and 0 <= ignore_index < c
    counts = weight is None and reduction == "mean"
    if ignore_index is not None and np.iinfo(lt).min <= ignore_index <= np.iinfo(lt).max and (relabel or counts):
        ignored = im.op(g.EqualOp, [labels, im.constant(np.array(ignore_index, lt))])
        if relabel:
            labels = im.op(g.WhereOp, [ignored, im.constant(np.array(-1, lt)), labels])
    classes = im.constant(np.arange(c, dtype=lt).reshape([1, c] + [1] * (rank - 2)))
    onehot = im.op(g.EqualOp, [im.op(g.UnsqueezeOp, [labels], axes=(1,)), classes])

    def pick(values: SSAValue) -> SSAValue:  # values[n, t[n, d], d], 0 for no class
        return im.op(g.ReduceSumOp, [im.op(g.WhereOp, [onehot, values, zero])], axes=(1,), keepdims=0)

    picked = pick(x)
    w = None
    if weight is not None:
        w = pick(im.op(g.ReshapeOp, [weight, im.constant(np.array([1, c] + [1] * (rank - 2), np.int64))]))
        picked = im.op(g.MulOp, [picked, w])
    elif ignored is not None:  # an unweighted mean: 1 for each counted label
        w = im.op(g.CastOp, [im.op(g.LogicalNotOp, [ignored])], to=x.type.element_type)
    loss = im.op(g.NegOp, [picked])
    if reduction == "none":
        return loss
    total = im.op(g.ReduceSumOp, [loss], keepdims=0)
    if reduction == "sum":
        return total
    if w is None:  # every label counts with weight 1
        return im.op(g.DivOp, [total, im.constant(np.array(np.prod(shape) // c, dt))])
    return im.op(g.DivOp, [total, im.op(g.ReduceSumOp, [w], keepdims=0)])


def _inputs(im, ins) -> tuple[SSAValue, SSAValue, SSAValue | None]:
    ins = list(ins) + [None]
    if len(ins) < 3 or ins[0] is None or ins[1] is None:
        raise im.error("the input and the target are required")
    return ins[0], ins[1], ins[2]


def _negative_log_likelihood_loss(im, ins, attrs):
    reduction, ignore_index = _attrs(im, attrs)
    x, labels, weight = _inputs(im, ins)
    return [nll_loss(im, x, labels, weight, reduction, ignore_index)]


def _softmax_cross_entropy_loss(im, ins, attrs):
    reduction, ignore_index = _attrs(im, attrs)
    x, labels, weight = _inputs(im, ins)
    _check(im, x, labels, weight)
    log_prob = im.op(g.LogSoftmaxOp, [x], axis=1)
    return [nll_loss(im, log_prob, labels, weight, reduction, ignore_index), log_prob]


LOSSES_CONVERTERS = {
    "NegativeLogLikelihoodLoss": _negative_log_likelihood_loss,
    "SoftmaxCrossEntropyLoss": _softmax_cross_entropy_loss,
}
