"""The value of a shape-only weight: zeros that remember they stand for unknown numbers.

A placeholder weight (frontend/builder.py `GraphBuilder.weight(name, shape=, dtype=)`, or an
ONNX model imported with `weights=False`) has a shape and an element type but no bytes.
The graph passes that compute new weights from old ones - batch-norm folding into a conv,
a transposed or scaled matmul weight, the precision pass's cast to float16 - read it through
`graph.ConstantOp.array()`, which gives a `ShapeOnly` array: a broadcast view of one zero.

numpy arithmetic on a `ShapeOnly` operand gives another without computing (an elementwise
ufunc is evaluated on one element for the result's dtype; the shape is the broadcast shape),
as do `astype`, views and reshapes; any other numpy function (matmul, concatenate, a
reduction) computes on the zeros and marks its result. So a pass needs no test of its own: `passes/graph/utils.constant` makes a
`ShapeOnly` result a placeholder again, named after the weights it came from, and no
weight bytes are ever held. Decisions a pass takes on a constant's *values* (is this mask
causal?) see zeros: such a pass asks `is_shape_only` first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


class ShapeOnly(np.ndarray):
    """Zeros of a weight's shape and dtype, one element held; `sources` names the
    placeholder weights the value was computed from."""

    sources: tuple[str, ...]

    @staticmethod
    def of(shape: Sequence[int], dtype: Any, sources: Iterable[str]) -> ShapeOnly:
        z = np.broadcast_to(np.zeros((), dtype), tuple(shape)).view(ShapeOnly)
        z.sources = tuple(dict.fromkeys(sources))
        return z

    def __array_finalize__(self, obj: Any) -> None:
        self.sources = getattr(obj, "sources", ())

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> ShapeOnly:  # type: ignore[override]
        return ShapeOnly.of(self.shape, dtype, self.sources)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if kwargs.get("out") is not None:
            raise ValueError(f"a shape-only weight ({', '.join(_sources(inputs))}) cannot be written in place")
        sources = _sources(inputs)
        if method == "__call__" and ufunc.signature is None and "where" not in kwargs:  # elementwise
            shape = np.broadcast_shapes(*(np.shape(x) for x in inputs))
            one = ufunc(*(_one(x) for x in inputs), **kwargs)
            results = one if isinstance(one, tuple) else (one,)
            wrapped = tuple(ShapeOnly.of(shape, np.asarray(r).dtype, sources) for r in results)
            return wrapped if isinstance(one, tuple) else wrapped[0]
        return _mark(getattr(ufunc, method)(*(_plain(x) for x in inputs), **kwargs), sources)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        sources = _sources(args) + _sources(kwargs.values())
        return _mark(func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()}), sources)


def is_shape_only(array: Any) -> bool:
    return isinstance(array, ShapeOnly)


def _sources(values: Iterable[Any]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        if isinstance(v, ShapeOnly):
            out += v.sources
        elif isinstance(v, list | tuple):
            out += _sources(v)
    return tuple(dict.fromkeys(out))


def _plain(x: Any) -> Any:
    """`x` with every ShapeOnly in it (lists and tuples too) as a plain ndarray view."""
    if isinstance(x, ShapeOnly):
        return x.view(np.ndarray)
    if isinstance(x, list | tuple):
        return type(x)(_plain(v) for v in x)
    return x


def _one(x: Any) -> Any:
    """One element of an array operand (for the dtype a ufunc gives), a scalar as it is."""
    if isinstance(x, np.ndarray):
        return x.view(np.ndarray).reshape(-1)[:1]
    return x


def _mark(result: Any, sources: tuple[str, ...]) -> Any:
    """A computed result as ShapeOnly: its numbers are those of unknown weights."""
    if isinstance(result, tuple):
        return tuple(_mark(r, sources) for r in result)
    if isinstance(result, np.ndarray | np.generic):
        return ShapeOnly.of(np.shape(result), result.dtype, sources)
    return result
