"""The optional outputs and training-mode forms of ONNX normalisation and pooling ops that are
deterministic, spelled out in graph ops (docs/onnx.md, "Optional outputs and training mode").

- LayerNormalization's Mean and InvStdDev: the node becomes its function body (reduce_mean,
  sub, mul, reduce_mean, add, sqrt, reciprocal, in the stash type) when either is used; a
  node whose statistics nobody reads stays one graph.layer_norm.
- BatchNormalization with training_mode=1: the batch statistics (mean and population
  variance over every axis but 1) normalise x through graph.batch_norm, and the running
  statistics are input * momentum + batch * (1 - momentum).
- MaxPool's Indices: the kernel offsets' strided slices of x (padded with -inf) compared
  with graph.max_pool's values, the smallest row-major position among the equal ones (the
  first maximum, as onnx's reference scans) as the flat index into x (row-major, or
  column-major over the spatial dims for storage_order 1).

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


def max_pool_indices(im, x: SSAValue, y: SSAValue, kernel, strides, dilations, pads,
                     storage_order: int) -> SSAValue:
    """MaxPool's Indices output (int64, y's shape): the flat index into x of the first
    maximum of each window, as onnx's reference scans it (kernel rows, then columns: the
    smallest row-major position). Every kernel offset's strided slice of x (padded with
    -inf) is stacked on a new leading axis and compared with y = max_pool(x); where equal,
    the offset's row-major position (a constant; none in the padding) is kept, and the
    minimum over the offsets is the first maximum. For storage_order 1 the constant also
    carries the column-major position: row * plane + column, its remainder by plane."""
    shape = tuple(x.type.get_shape())
    n, c, spatial = shape[0], shape[1], shape[2:]
    out_spatial = tuple(y.type.get_shape()[2:])
    k = len(spatial)
    dt = to_dtype(x.type.element_type)
    begin, end = pads[:k], pads[k:]
    # pad to every window's extent (ceil_mode's last window may reach past the end pad)
    need = [(o - 1) * s + (kk - 1) * d + 1 for o, s, kk, d in zip(out_spatial, strides, kernel, dilations)]
    after = [max(nd - b - sz, e, 0) for nd, b, sz, e in zip(need, begin, spatial, end)]
    padded = x
    if any(begin) or any(after):
        # the padding is never chosen: its positions carry no key (a float x pads with -inf,
        # an integer one with its lowest value, which ties only with a real element)
        low = np.iinfo(dt).min if np.issubdtype(dt, np.integer) else -np.inf
        padded = im.op(g.PadOp, [x, _ints(im, [0, 0, *begin, 0, 0, *after]),
                                 im.constant(np.array(low, dt))], mode="constant")
    plane = math.prod(spatial)
    row_major = [math.prod(spatial[i + 1:]) for i in range(k)]
    col_major = [math.prod(spatial[:i]) for i in range(k)]
    none = np.iinfo(np.int64).max
    windows, keys = [], []
    for offs in itertools.product(*(range(kk) for kk in kernel)):
        starts = [o * d for o, d in zip(offs, dilations)]
        ends = [st + (o - 1) * s + 1 for st, o, s in zip(starts, out_spatial, strides)]
        window = im.op(g.SliceOp, [padded, _ints(im, starts), _ints(im, ends),
                                   _ints(im, list(range(2, 2 + k))), _ints(im, list(strides))])
        windows.append(im.op(g.UnsqueezeOp, [window], axes=(0,)))
        # the input position each output reads at this offset
        row = np.zeros(out_spatial, np.int64)
        col = np.zeros(out_spatial, np.int64)
        inside = np.ones(out_spatial, bool)
        for i in range(k):
            coord = np.arange(out_spatial[i]) * strides[i] + starts[i] - begin[i]
            coord = coord.reshape([out_spatial[i] if j == i else 1 for j in range(k)])
            inside = inside & (coord >= 0) & (coord < spatial[i])
            row = row + coord * row_major[i]
            col = col + coord * col_major[i]
        key = row * plane + col if storage_order else row
        keys.append(np.where(inside, key, none))
    stacked = windows[0] if len(windows) == 1 else im.op(g.ConcatOp, windows, axis=0)
    hit = im.op(g.EqualOp, [stacked, im.op(g.UnsqueezeOp, [y], axes=(0,))])
    key = im.constant(np.stack(keys).reshape(len(keys), 1, 1, *out_spatial))
    first = im.op(g.ReduceMinOp, [im.op(g.WhereOp, [hit, key, im.constant(np.array(none, np.int64))])],
                  axes=(0,), keepdims=0)
    if storage_order:
        first = im.op(g.ModOp, [first, im.constant(np.array(plane, np.int64))])
    offset = (np.arange(n * c, dtype=np.int64) * plane).reshape(n, c, *([1] * k))
    return im.op(g.AddOp, [first, im.constant(offset)])


def i1_like(im, x: SSAValue, elt=None) -> SSAValue:
    """A tensor of x's shape holding true (or 1 of `elt`): Dropout's mask when nothing drops."""
    dt = np.bool_ if elt is None else to_dtype(elt)
    one = im.constant(np.ones((), dt))
    return im.op(g.ExpandOp, [one, _ints(im, list(x.type.get_shape()))])

