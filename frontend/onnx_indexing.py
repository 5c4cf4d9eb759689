"""The ONNX indexing operators (docs/graph.md, "Indexing ops").

- ScatterElements (and opset 9's Scatter, the same op), ScatterND, GatherND, TopK, Einsum,
  ReverseSequence and TensorScatter map to their graph ops (graph.scatter_elements, ...),
  which lower to the reference fallback kernel; a TensorScatter that is one position per
  step (no write_indices, or a batch of 1, mode linear) is graph.kv_cache_write, whose
  template updates a returned cache argument in place; GatherND with constant indices is a
  graph.gather; Einsum of one or two float operands without diagonals or broadcasting is
  reduce_sum / transpose / reshape / matmul.
- OneHot is equal / where on a constant range (elementwise kernels); EyeLike is a constant.
- The ops whose result shape depends on values are folded when those values are constants
  and rejected otherwise: TopK's k, OneHot's depth, Compress's condition (then a
  graph.gather at the kept positions), NonZero and Unique of a constant.

Converters take the importer (frontend/onnx.py) and use its public methods only.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from geir.dialects import graph as g
from geir.ir.types import is_float, to_dtype, to_element_type


def _reject(im, attrs: dict, allowed: set[str]) -> None:
    unknown = sorted(set(attrs) - allowed)
    if unknown:
        raise im.error(f"attribute(s) {unknown} are not supported")


def _str(v) -> str:
    return v.decode() if isinstance(v, bytes) else v


def _scalar_int(im, value: SSAValue, what: str) -> int:
    known = np.asarray(im.require_const(value, what))
    if known.size != 1:
        raise im.error(f"{what} must hold one value, got shape {list(known.shape)}")
    return int(known.reshape(-1)[0])


def _check_indices(im, indices: SSAValue, sizes, what: str = "indices") -> None:
    """Constant indices outside [-size, size) are an error now, not at run time."""
    known = im.const_value(indices)
    if known is None:
        return
    known = np.asarray(known, np.int64)
    sizes = np.broadcast_to(sizes, known.shape)
    bad = (known < -sizes) | (known >= sizes)
    if np.any(bad):
        value, size = int(known[bad].reshape(-1)[0]), int(sizes[bad].reshape(-1)[0])
        raise im.error(f"{what} hold {value}, out of bounds for a dim of size {size} (-{size} to {size - 1})")


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def _scatter_elements(im, ins, attrs):
    _reject(im, attrs, {"axis", "reduction"})
    data, indices, updates = ins
    axis = attrs.get("axis", 0)
    rank = len(_shape(data))
    if -rank <= axis < rank:
        _check_indices(im, indices, _shape(data)[axis])
    return im.build(g.ScatterElementsOp, [data, indices, updates], axis=axis,
                    reduction=_str(attrs.get("reduction", "none")))


def _scatter_nd(im, ins, attrs):
    _reject(im, attrs, {"reduction"})
    data, indices, updates = ins
    k = _shape(indices)[-1] if _shape(indices) else 0
    if 1 <= k <= len(_shape(data)):
        _check_indices(im, indices, np.array(_shape(data)[:k]))
    return im.build(g.ScatterNdOp, [data, indices, updates], reduction=_str(attrs.get("reduction", "none")))


def _gather_nd(im, ins, attrs):
    _reject(im, attrs, {"batch_dims"})
    data, indices = ins
    b = attrs.get("batch_dims", 0)
    k = _shape(indices)[-1] if _shape(indices) else 0
    shape = _shape(data)
    if 1 <= k and b + k <= len(shape) and b < len(_shape(indices)) and shape[:b] == _shape(indices)[:b]:
        _check_indices(im, indices, np.array(shape[b:b + k]))
        known = im.const_value(indices)
        if known is not None:
            # constant indices: one graph.gather of data's rows at their linear positions
            # (the gather template), data seen as [batch * rows, rest...]
            index = np.asarray(known, np.int64)
            dims = np.array(shape[b:b + k])
            index = np.where(index < 0, index + dims, index)
            rows = int(np.prod(dims))
            linear = np.ravel_multi_index(tuple(np.moveaxis(index, -1, 0)), tuple(dims)) if index.size else \
                np.zeros(index.shape[:-1], np.int64)
            batch = int(np.prod(shape[:b]))
            linear = linear + (np.arange(batch) * rows).reshape(shape[:b] + (1,) * (linear.ndim - b))
            flat = im.op(g.ReshapeOp, [data, im.constant(np.array([batch * rows, *shape[b + k:]], np.int64))])
            return im.build(g.GatherOp, [flat, im.constant(linear.astype(np.int64))], axis=0)
    return im.build(g.GatherNdOp, [data, indices], batch_dims=b)


def _top_k(im, ins, attrs):
    _reject(im, attrs, {"axis", "k", "largest", "sorted"})
    if im.opset < 10:
        k = attrs["k"]
    else:
        # the result shape is k: a run-time k has no static shape
        k = _scalar_int(im, ins[1], "k (TopK's result shape)")
    return im.build(g.TopKOp, [ins[0]], n_results=2, k=k, axis=attrs.get("axis", -1),
                    largest=attrs.get("largest", 1), sorted=attrs.get("sorted", 1))


def _einsum(im, ins, attrs):
    """One or two float operands without diagonals or broadcast label dims: reduce_sum,
    transpose, reshape and one (batched) matmul, which have kernels; any other form (a
    repeated label in a term, three operands, integers, broadcasting) is graph.einsum."""
    _reject(im, attrs, {"equation"})
    equation = _str(attrs["equation"])
    xs = list(ins)
    # the shape inference's checks (and errors) first
    try:
        (result_type,) = g.EinsumOp.infer([x.type for x in xs], {"equation": equation}, [None] * len(xs))
        terms, out = g.einsum_terms(equation, [len(_shape(x)) for x in xs])
    except g.ShapeError as e:
        raise im.error(str(e)) from None
    floats = is_float(xs[0].type.element_type)
    plan = _einsum_plan(terms, out, [_shape(x) for x in xs]) if floats and len(xs) <= 2 else None
    if plan is None:
        return im.build(g.EinsumOp, xs, equation=equation)
    y = plan(im, xs)
    assert y.type == result_type
    return [y]


def _labels(term: str) -> list:
    """A term's labels, each ellipsis dim its own label numbered from the right (numpy aligns
    '...' dims to the right across operands)."""
    n, labels = term.count("."), []
    for c in term:
        labels.append(("...", n - 1 - sum(1 for lab in labels if isinstance(lab, tuple))) if c == "." else c)
    return labels


def _einsum_plan(terms: list[str], out: str, shapes: list[tuple[int, ...]]):
    """A function building the decomposition, or None if the form needs graph.einsum."""
    ins = [_labels(t) for t in terms]
    result = _labels(out)
    sizes: dict = {}
    for labels, shape in zip(ins, shapes):
        if len(set(labels)) != len(labels):
            return None  # a diagonal
        for lab, d in zip(labels, shape):
            if sizes.setdefault(lab, d) != d:
                return None  # a broadcast (size-1) label dim
    if any(lab not in sizes for lab in result):
        return None

    def reduce(im, x, labels, keep):
        axes = tuple(i for i, lab in enumerate(labels) if lab not in keep)
        if not axes:
            return x, labels
        y = im.op(g.ReduceSumOp, [x], axes=axes, keepdims=0)
        return y, [lab for lab in labels if lab in keep]

    def transpose(im, x, labels, order):
        perm = tuple(labels.index(lab) for lab in order)
        return x if perm == tuple(range(len(perm))) else im.op(g.TransposeOp, [x], perm=perm)

    def reshape(im, x, dims):
        dims = tuple(int(d) for d in dims)
        if tuple(_shape(x)) == dims:
            return x
        return im.op(g.ReshapeOp, [x, im.constant(np.array(dims, np.int64))])

    def build(im, xs):
        if len(xs) == 1:
            y, labels = reduce(im, xs[0], ins[0], set(result))
            y = transpose(im, y, labels, result)
            return y if y is not xs[0] else im.op(g.IdentityOp, [y])
        (a, la), (b, lb) = (reduce(im, x, labels, set(result) | set(other))
                            for x, labels, other in ((xs[0], ins[0], ins[1]), (xs[1], ins[1], ins[0])))
        batch = [lab for lab in la if lab in lb and lab in result]
        summed = [lab for lab in la if lab in lb and lab not in result]
        left = [lab for lab in la if lab not in lb]
        right = [lab for lab in lb if lab not in la]
        count = lambda labs: int(np.prod([sizes[lab] for lab in labs], dtype=np.int64))  # noqa: E731
        lead = [count(batch)] if batch else []
        a = reshape(im, transpose(im, a, la, batch + left + summed), lead + [count(left), count(summed)])
        b = reshape(im, transpose(im, b, lb, batch + summed + right), lead + [count(summed), count(right)])
        y = im.op(g.MatMulOp, [a, b])
        order = batch + left + right
        y = reshape(im, y, [sizes[lab] for lab in order])
        return transpose(im, y, order, result)

    return build


def _reverse_sequence(im, ins, attrs):
    _reject(im, attrs, {"batch_axis", "time_axis"})
    return im.build(g.ReverseSequenceOp, list(ins), batch_axis=attrs.get("batch_axis", 1),
                    time_axis=attrs.get("time_axis", 0))


def _tensor_scatter(im, ins, attrs):
    _reject(im, attrs, {"axis", "mode"})
    cache, update, positions = (list(ins) + [None])[:3]
    axis, mode = attrs.get("axis", -2), _str(attrs.get("mode", "linear"))
    batch = _shape(cache)[0] if _shape(cache) else 0
    rank = len(_shape(cache))
    if mode == "linear" and (positions is None or batch == 1) and -rank <= axis < rank and axis % rank:
        # one write position for the whole cache: graph.kv_cache_write (updated in place when
        # the cache is an argument returned as this result)
        if positions is None:
            positions = im.constant(np.zeros(1, np.int64))
        return im.build(g.KvCacheWriteOp, [cache, update, positions], axis=axis)
    inputs = [cache, update] if positions is None else [cache, update, positions]
    return im.build(g.TensorScatterOp, inputs, axis=axis, mode=mode)


def _one_hot(im, ins, attrs):
    """values[1] where the index (negative ones count from depth's end) equals its position
    along `axis`, else values[0]: equal against a constant range, then where."""
    _reject(im, attrs, {"axis"})
    indices, depth_value, values = ins
    depth = _scalar_int(im, depth_value, "depth (OneHot's result shape)")
    if depth < 0:
        raise im.error(f"depth {depth} must not be negative")
    if _shape(values) != (2,):
        raise im.error(f"values must be [off, on] (shape [2]), got {list(_shape(values))}")
    rank = len(_shape(indices))
    axis = attrs.get("axis", -1)
    if not -rank - 1 <= axis <= rank:
        raise im.error(f"axis {axis} is out of range for an output of rank {rank + 1}")
    axis %= rank + 1
    dt = to_dtype(indices.type.element_type)
    zero, size = im.constant(np.array(0, dt)), im.constant(np.array(depth, dt))
    wrapped = im.op(g.WhereOp, [im.op(g.LessOp, [indices, zero]), im.op(g.AddOp, [indices, size]), indices])
    column = im.op(g.UnsqueezeOp, [wrapped], axes=(axis,))
    positions = np.arange(depth).astype(dt).reshape([depth if i == axis else 1 for i in range(rank + 1)])
    hit = im.op(g.EqualOp, [column, im.constant(positions)])
    off = im.op(g.GatherOp, [values, im.constant(np.array(0, np.int64))], axis=0)
    on = im.op(g.GatherOp, [values, im.constant(np.array(1, np.int64))], axis=0)
    return im.build(g.WhereOp, [hit, on, off])


def _eye_like(im, ins, attrs):
    """A constant: only the input's shape is read."""
    _reject(im, attrs, {"dtype", "k"})
    shape = _shape(ins[0])
    if len(shape) != 2:
        raise im.error(f"the input must be 2-D, got shape {list(shape)}")
    if "dtype" in attrs:
        import onnx

        try:
            dt = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(attrs["dtype"]))
            to_element_type(dt)
        except Exception:  # noqa: BLE001 - any unknown type is the same error
            raise im.error(f"dtype {onnx.TensorProto.DataType.Name(attrs['dtype'])} is not supported") from None
    else:
        dt = to_dtype(ins[0].type.element_type)
    return [im.constant(np.eye(shape[0], shape[1], attrs.get("k", 0), dtype=dt))]


def _compress(im, ins, attrs):
    """A graph.gather at the positions where the constant condition holds (a run-time
    condition would make the result shape depend on its values)."""
    _reject(im, attrs, {"axis"})
    x, condition = ins
    cond = np.asarray(im.require_const(condition, "condition (Compress's result shape depends on it)"))
    if cond.ndim != 1:
        raise im.error(f"condition must be 1-D, got shape {list(cond.shape)}")
    if "axis" in attrs:
        rank = len(_shape(x))
        if not -rank <= attrs["axis"] < rank:
            raise im.error(f"axis {attrs['axis']} is out of range for rank {rank}")
        axis = attrs["axis"] % rank
    else:
        axis = 0
        size = int(np.prod(_shape(x)))
        x = im.op(g.ReshapeOp, [x, im.constant(np.array([size], np.int64))])
    kept = np.flatnonzero(cond.astype(bool)).astype(np.int64)
    if kept.size and kept[-1] >= _shape(x)[axis]:
        raise im.error(f"condition selects position {int(kept[-1])}, past the size {_shape(x)[axis]} of axis {axis}")
    return im.build(g.GatherOp, [x, im.constant(kept)], axis=axis)


def _non_zero(im, ins, attrs):
    _reject(im, attrs, set())
    x = np.asarray(im.require_const(ins[0], "the input (NonZero's result shape depends on its values)"))
    return [im.constant(np.array(np.nonzero(x), np.int64).reshape(x.ndim, -1))]


def _unique(im, ins, attrs):
    """The four outputs of Unique of a constant (onnx's reference semantics): the unique
    values or slices along `axis` (sorted, or in order of first occurrence), the index of
    each's first occurrence, each input element's (slice's) index in them, their counts."""
    _reject(im, attrs, {"axis", "sorted"})
    x = np.asarray(im.require_const(ins[0], "the input (Unique's result shape depends on its values)"))
    axis = attrs.get("axis")
    if axis is not None and not -x.ndim <= axis < x.ndim:
        raise im.error(f"axis {axis} is out of range for rank {x.ndim}")
    y, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                          axis=axis)
    if not attrs.get("sorted", 1):
        order = np.argsort(first, kind="stable")
        rank_of = np.empty_like(order)
        rank_of[order] = np.arange(len(order))
        first, inverse, counts = first[order], rank_of[inverse.reshape(-1)], counts[order]
        y = np.take(x.reshape(-1) if axis is None else x, first, axis=0 if axis is None else axis)
    outs = [y, first, inverse.reshape(-1), counts]
    n = max(1, len(im.node.output))
    return [im.constant(np.asarray(o) if i == 0 else np.asarray(o, np.int64)) for i, o in enumerate(outs[:n])]


INDEXING_CONVERTERS = {
    "ScatterElements": _scatter_elements,
    "Scatter": _scatter_elements,
    "ScatterND": _scatter_nd,
    "GatherND": _gather_nd,
    "TopK": _top_k,
    "Einsum": _einsum,
    "ReverseSequence": _reverse_sequence,
    "TensorScatter": _tensor_scatter,
    "OneHot": _one_hot,
    "EyeLike": _eye_like,
    "Compress": _compress,
    "NonZero": _non_zero,
    "Unique": _unique,
}
"""ONNX op type -> converter (the indexing ops)."""
