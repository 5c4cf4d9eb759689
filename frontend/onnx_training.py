"""The optional outputs and training-mode forms of ONNX normalisation and pooling ops that are
deterministic, spelled out in graph ops (docs/onnx.md, "Optional outputs and training mode").

- LayerNormalization's Mean and InvStdDev: the node becomes its function body (reduce_mean,
  sub, mul, reduce_mean, add, sqrt, reciprocal, in the stash type) when either is used; a
  node whose statistics nobody reads stays one graph.layer_norm.
- BatchNormalization with training_mode=1: the batch statistics (mean and population
  variance over every axis but 1) normalise x through graph.batch_norm, and the running
  statistics are input * momentum + batch * (1 - momentum).
- MaxPool's Indices: the running maximum over the kernel's positions (strided slices of x
  padded with -inf), keeping the first position of the maximum, and each position's flat
  index into x (row-major, or column-major over the spatial dims for storage_order 1)
  as a constant; the values come from graph.max_pool as before.

Converters take the importer (frontend/onnx.py) and use its public methods only.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from xdsl.ir import SSAValue

from geir.dialects import graph as g
from geir.ir.types import to_dtype


def outputs_used(im, first: int = 1) -> bool:
    """Whether some output of the node from `first` on is read by a node or the graph."""
    return any(n and n in im.used for n in im.node.output[first:])


def _ints(im, values) -> SSAValue:
    return im.constant(np.array(values, np.int64))


def layer_norm_with_stats(im, x: SSAValue, scale: SSAValue, bias: SSAValue | None, axis: int,
                          epsilon: float, stash) -> list[SSAValue]:
    """LayerNormalization's function body: Y, Mean and InvStdDev (the latter two in `stash`)."""
    shape = x.type.get_shape()
    rank = len(shape)
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        raise im.error(f"axis {axis} is out of range for rank {rank}")
    axes = tuple(range(a, rank))
    elt = x.type.element_type
    xs = x if elt == stash else im.op(g.CastOp, [x], to=stash)
    mean = im.op(g.ReduceMeanOp, [xs], axes=axes, keepdims=1)
    d = im.op(g.SubOp, [xs, mean])
    var = im.op(g.ReduceMeanOp, [im.op(g.MulOp, [d, d])], axes=axes, keepdims=1)
    eps = im.constant(np.array(epsilon, to_dtype(stash)))
    inv = im.op(g.ReciprocalOp, [im.op(g.SqrtOp, [im.op(g.AddOp, [var, eps])])])
    normalized = im.op(g.MulOp, [d, inv])
    if elt != stash:
        normalized = im.op(g.CastOp, [normalized], to=elt)
    y = im.op(g.MulOp, [normalized, scale])
    if bias is not None:
        y = im.op(g.AddOp, [y, bias])
    return [y, mean, inv]


def batch_norm_training(im, ins: list[SSAValue], epsilon: float, momentum: float) -> list[SSAValue]:
    """BatchNormalization in training mode: Y from the batch statistics, and the running
    mean and variance updated with `momentum`."""
    x, scale, bias, mean, var = ins
    rank = len(x.type.get_shape())
    if rank < 2:
        raise im.error("the input must have rank >= 2")
    axes = (0, *range(2, rank))
    batch_mean = im.op(g.ReduceMeanOp, [x], axes=axes, keepdims=1)
    d = im.op(g.SubOp, [x, batch_mean])
    batch_var = im.op(g.ReduceMeanOp, [im.op(g.MulOp, [d, d])], axes=axes, keepdims=0)
    batch_mean = im.op(g.SqueezeOp, [batch_mean], axes=axes)
    y = im.op(g.BatchNormOp, [x, scale, bias, batch_mean, batch_var], epsilon=epsilon)

    def running(stat: SSAValue, batch: SSAValue) -> SSAValue:
        elt = stat.type.element_type
        if batch.type.element_type != elt:
            batch = im.op(g.CastOp, [batch], to=elt)
        m = im.constant(np.array(momentum, to_dtype(elt)))
        rest = im.constant(np.array(1 - momentum, to_dtype(elt)))
        return im.op(g.AddOp, [im.op(g.MulOp, [stat, m]), im.op(g.MulOp, [batch, rest])])

    return [y, running(mean, batch_mean), running(var, batch_var)]


def max_pool_indices(im, x: SSAValue, kernel, strides, dilations, pads, out_spatial,
                     storage_order: int) -> SSAValue:
    """MaxPool's Indices output [N, C, *out_spatial] (int64): the flat index into x of the
    first maximum of each window; padding is -inf and never chosen over an element."""
    shape = tuple(x.type.get_shape())
    n, c, spatial = shape[0], shape[1], shape[2:]
    k = len(spatial)
    dt = to_dtype(x.type.element_type)
    begin, end = pads[:k], pads[k:]
    # pad to every window's extent (ceil_mode's last window may reach past the end pad)
    need = [(o - 1) * s + (kk - 1) * d + 1 for o, s, kk, d in zip(out_spatial, strides, kernel, dilations)]
    after = [max(nd - b - sz, e, 0) for nd, b, sz, e in zip(need, begin, spatial, end)]
    padded = x
    if any(begin) or any(after):
        padded = im.op(g.PadOp, [x, _ints(im, [0, 0, *begin, 0, 0, *after]),
                                 im.constant(np.array(-np.inf, dt))], mode="constant")
    # the flat index of each spatial position, over the spatial dims
    if storage_order:
        strides_x = [math.prod(spatial[:i]) for i in range(k)]  # column-major
    else:
        strides_x = [math.prod(spatial[i + 1:]) for i in range(k)]
    best = index = None
    for offs in itertools.product(*(range(kk) for kk in kernel)):
        starts = [o * d for o, d in zip(offs, dilations)]
        ends = [st + (o - 1) * s + 1 for st, o, s in zip(starts, out_spatial, strides)]
        window = im.op(g.SliceOp, [padded, _ints(im, starts), _ints(im, ends),
                                   _ints(im, list(range(2, 2 + k))), _ints(im, list(strides))])
        # the input position each output reads at this kernel offset, or -1 in the padding
        pos = np.zeros((1, 1, *out_spatial), np.int64)
        inside = np.ones((1, 1, *out_spatial), bool)
        for i in range(k):
            coord = np.arange(out_spatial[i]) * strides[i] + starts[i] - begin[i]
            view = [1, 1] + [1] * k
            view[2 + i] = out_spatial[i]
            coord = coord.reshape(view)
            inside = inside & (coord >= 0) & (coord < spatial[i])
            pos = pos + coord * strides_x[i]
        here = im.constant(np.where(inside, pos, -1).astype(np.int64))
        if best is None:
            best, index = window, im.op(g.ExpandOp, [here, _ints(im, [n, c, *out_spatial])])
            continue
        take = im.op(g.GreaterOp, [window, best])
        if not inside.all():  # the first element of a window over padding beats -inf padding
            take = im.op(g.LogicalOrOp, [take, im.op(g.LogicalAndOp, [
                im.constant(inside), im.op(g.LessOp, [index, im.constant(np.array(0, np.int64))])])])
        best = im.op(g.WhereOp, [take, window, best])
        index = im.op(g.WhereOp, [take, here, index])
    plane = math.prod(spatial)
    offset = (np.arange(n * c, dtype=np.int64) * plane).reshape(n, c, *([1] * k))
    return im.op(g.AddOp, [index, im.constant(offset)])


def i1_like(im, x: SSAValue, elt=None) -> SSAValue:
    """A tensor of x's shape holding true (or 1 of `elt`): Dropout's mask when nothing drops."""
    dt = np.bool_ if elt is None else to_dtype(elt)
    one = im.constant(np.ones((), dt))
    return im.op(g.ExpandOp, [one, _ints(im, list(x.type.get_shape()))])

