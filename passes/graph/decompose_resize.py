"""graph.resize as the ops the kernel library has (a rule of graph-canonicalize, so from O1).

Resize is separable (dialects/graph.py `resize_taps`): each resized axis is a weighted sum of
a few taps, each tap a gather of whole rows along the axis at constant indices. So

* nearest is one gather per axis (the tap whose weight is 1), and an integer upsampling
  whose indices are each pixel repeated r times is a broadcast instead: reshape to [.., n, 1],
  expand to [.., n, r], reshape to [.., n * r] (the vector template);
* an integer upsampling by r whose taps have the same weights for every output of a phase
  (half_pixel, pytorch_half_pixel or asymmetric linear / cubic 2x, ...) is, per phase, a
  weighted sum of shifted copies of x (slices with the edge row repeated), the r phases
  stacked on a new axis and merged (concat, reshape): no gather;
* other linear and cubic (antialias too, up to 8 taps) are, per axis, sum_k gather_k * w_k with
  w_k a constant [n_out, 1, ..] (vector mul / add);
* tf_crop_and_resize's outputs outside the input are a prefix and a suffix of each axis:
  splat constants of the extrapolation value concatenated around the resized interior;
* the last axis is resized between two transposes, so each gather still moves whole rows
  (the gather template copies one row per index: on the last axis a row is one element).

Float results differ from the reference's float64 sum by the rounding of a 2- to 8-term f32
sum (nearest is exact: a copy). Integer linear / cubic (rounded and saturated by onnx) and
wider kernels keep graph.resize, which lowers to the reference fallback kernel.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from geir.dialects import graph as g
from geir.ir.types import is_float, tensor, to_dtype
from geir.passes.graph.utils import constant, hint, replace_checked, splat, static_shape

MAX_TAPS = 8
"""Widest per-axis kernel decomposed (an antialiased downsampling by s has about 4 / s taps)."""


class ResizeToGathers(RewritePattern):
    """graph.resize -> gathers (or a broadcast), constant-weight muls and adds, per axis."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.ResizeOp, rewriter: PatternRewriter) -> None:
        x = op.inputs[0]
        shape = static_shape(x.type)
        if shape is None or 0 in shape or 0 in op.attrs()["sizes"]:
            return
        attrs = op.attrs()
        plans = {axis: g.resize_taps(attrs, shape, axis) for axis in range(len(shape))}
        plans = {axis: p for axis, p in plans.items() if p is not None}
        if not plans:
            return
        exact = attrs["mode"] == "nearest"
        if not exact and (not is_float(x.type.element_type) or any(p[1].shape[1] > MAX_TAPS for p in plans.values())):
            return
        builder = _Builder(op)
        value = x
        try:
            for axis, (idx, coeffs, mask) in plans.items():
                value = builder.axis(value, axis, idx, coeffs, mask, attrs["extrapolation_value"])
        except _Keep:
            return
        replace_checked(op, builder.ops, rewriter)


class _Keep(Exception):
    """A form the decomposition does not take: graph.resize stays (the fallback kernel)."""


class _Builder:
    def __init__(self, op: g.ResizeOp):
        self.op, self.loc, self.out = op, op.location, op.output
        self.dtype = to_dtype(op.inputs[0].type.element_type)
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        op.location = self.loc
        self.ops.append(op)
        return op.results[0]

    def const(self, array: np.ndarray, what: str) -> SSAValue:
        return self.add(constant(np.asarray(array), self.loc, hint(self.out, what)))

    def build(self, cls: type[g.GraphOp], inputs: list[SSAValue], **attrs) -> SSAValue:
        return self.add(cls.build_op(inputs, **attrs))

    def axis(self, x: SSAValue, axis: int, idx: np.ndarray, coeffs: np.ndarray, mask: np.ndarray | None,
             extrapolation: float) -> SSAValue:
        shape = list(x.type.get_shape())
        rank = len(shape)
        if mask is not None:
            return self.extrapolate(x, axis, idx, coeffs, mask, extrapolation)
        if axis == rank - 1 and rank > 1 and not self.repeats(idx, coeffs, mask, shape[axis]):
            # the last axis: a row there is one element; resize rows of the transposed tensor
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            t = self.build(g.TransposeOp, [x], perm=perm)
            t = self.axis(t, rank - 2, idx, coeffs, mask, extrapolation)
            return self.build(g.TransposeOp, [t], perm=perm)
        live = [k for k in range(coeffs.shape[1]) if np.any(coeffs[:, k] != 0)]
        picked = _copied(idx, coeffs, mask)
        if picked is not None:
            if self.repeats(idx, coeffs, mask, shape[axis]):
                return self.repeat(x, axis, len(picked) // shape[axis])
            return self.gather(x, axis, picked)
        phases = _phases(idx, coeffs, mask, shape[axis])
        if phases is not None:
            return self.interleave(x, axis, phases)
        total = None
        for k in live:
            term = self.gather(x, axis, idx[:, k])
            weights = coeffs[:, k]
            if not np.all(weights == 1):
                w = weights.astype(self.dtype).reshape((-1,) + (1,) * (rank - axis - 1))
                term = self.build(g.MulOp, [term, self.const(w, "resize_weights")])
            total = term if total is None else self.build(g.AddOp, [total, term])
        return total

    def extrapolate(self, x: SSAValue, axis: int, idx: np.ndarray, coeffs: np.ndarray, mask: np.ndarray,
                    extrapolation: float) -> SSAValue:
        """tf_crop_and_resize: the outputs whose coordinate leaves the input are a prefix and a
        suffix of the axis (the coordinate grows with the index): the extrapolation value
        there, concatenated around the resized interior."""
        n_out = len(mask)
        lo = int(np.argmin(mask)) if not mask.all() else n_out
        hi = int(np.argmin(mask[::-1])) if not mask.all() else 0
        if mask[lo:n_out - hi].any():
            raise _Keep()
        shape = list(x.type.get_shape())
        elt = x.type.element_type

        def fill(n: int) -> SSAValue:
            return self.add(splat(extrapolation, tensor(shape[:axis] + [n] + shape[axis + 1:], elt), self.loc))

        if lo == n_out:
            return fill(n_out)
        parts = ([fill(lo)] if lo else []) + [self.axis(x, axis, idx[lo:n_out - hi], coeffs[lo:n_out - hi], None,
                                                        extrapolation)] + ([fill(hi)] if hi else [])
        return parts[0] if len(parts) == 1 else self.build(g.ConcatOp, parts, axis=axis)

    def interleave(self, x: SSAValue, axis: int, phases: list[list[tuple[int, float]]]) -> SSAValue:
        """Output index m * r + p is phase p's sum of weight * x[clip(m + shift)]: each phase a
        weighted sum of shifted copies of x, the phases stacked on a new axis after `axis`
        and merged into it."""
        shape = list(x.type.get_shape())
        shifted: dict[int, SSAValue] = {}
        parts = []
        for terms in phases:
            total = None
            for shift, weight in terms:
                if shift not in shifted:
                    shifted[shift] = self.shift(x, axis, shift)
                term = shifted[shift]
                if weight != 1:
                    term = self.build(g.MulOp, [term, self.const(np.array(weight, self.dtype), "resize_weight")])
                total = term if total is None else self.build(g.AddOp, [total, term])
            parts.append(self.build(g.UnsqueezeOp, [total], axes=(axis + 1,)))
        stacked = self.build(g.ConcatOp, parts, axis=axis + 1)
        out = shape[:axis] + [shape[axis] * len(phases)] + shape[axis + 1:]
        return self.build(g.ReshapeOp, [stacked, self.const(np.array(out, np.int64), "shape")])

    def shift(self, x: SSAValue, axis: int, s: int) -> SSAValue:
        """y[m] = x[clip(m + s, 0, n - 1)] along axis: a slice with the edge row repeated."""
        n = x.type.get_shape()[axis]
        if s == 0:
            return x
        if s < 0:
            pieces = [(0, 1)] * (-s) + [(0, n + s)]
        else:
            pieces = [(s, n)] + [(n - 1, n)] * s
        values = [self.slice(x, axis, lo, hi) for lo, hi in pieces]
        return self.build(g.ConcatOp, values, axis=axis)

    def slice(self, x: SSAValue, axis: int, lo: int, hi: int) -> SSAValue:
        ints = lambda v: self.const(np.array([v], np.int64), "slice")  # noqa: E731
        return self.build(g.SliceOp, [x, ints(lo), ints(hi), ints(axis)])

    def gather(self, x: SSAValue, axis: int, indices: np.ndarray) -> SSAValue:
        ids = self.const(np.asarray(indices, np.int64), "resize_indices")
        return self.build(g.GatherOp, [x, ids], axis=axis)

    @staticmethod
    def repeats(idx: np.ndarray, coeffs: np.ndarray, mask: np.ndarray | None, n: int) -> bool:
        """Whether the axis is each input pixel repeated r > 1 times (a broadcast)."""
        picked = _copied(idx, coeffs, mask)
        if picked is None or not n or len(picked) % n or len(picked) == n:
            return False
        return bool(np.array_equal(picked, np.repeat(np.arange(n), len(picked) // n)))

    def repeat(self, x: SSAValue, axis: int, r: int) -> SSAValue:
        shape = list(x.type.get_shape())
        if r == 1:
            return x
        inner = shape[: axis + 1] + [1] + shape[axis + 1:]
        wide = shape[: axis + 1] + [r] + shape[axis + 1:]
        out = shape[:axis] + [shape[axis] * r] + shape[axis + 1:]
        v = self.build(g.ReshapeOp, [x, self.const(np.array(inner, np.int64), "shape")])
        v = self.build(g.ExpandOp, [v, self.const(np.array(wide, np.int64), "shape")])
        return self.build(g.ReshapeOp, [v, self.const(np.array(out, np.int64), "shape")])


def _copied(idx: np.ndarray, coeffs: np.ndarray, mask: np.ndarray | None) -> np.ndarray | None:
    """The input index each output copies, when every output has one tap of weight 1 and
    the others 0 (nearest; linear at integer coordinates); else None."""
    if mask is not None or not np.all((coeffs == 0) | (coeffs == 1)) or not np.all(coeffs.sum(axis=1) == 1):
        return None
    return idx[np.arange(len(idx)), np.argmax(coeffs, axis=1)]


def _phases(idx: np.ndarray, coeffs: np.ndarray, mask: np.ndarray | None, n: int
            ) -> list[list[tuple[int, float]]] | None:
    """An integer upsampling by r whose output m * r + p is, for every m, the same weights on
    x[clip(m + shift_k)]: per phase p its (shift, weight) terms; else None."""
    n_out = len(idx)
    if mask is not None or n < 2 or n_out % n or n_out == n:
        return None
    r = n_out // n
    m = np.arange(n)
    phases = []
    for p in range(r):
        rows_i, rows_c = idx[p::r], coeffs[p::r]
        terms: dict[int, float] = {}
        for k in range(coeffs.shape[1]):
            w = rows_c[:, k]
            if not np.all(w == w[0]):
                return None
            if w[0] == 0:
                continue
            inner = rows_i[:, k] - m
            # the shift is what the interior rows read; clamped at the edges
            shift = int(np.median(inner))
            if abs(shift) >= n or not np.array_equal(rows_i[:, k], np.clip(m + shift, 0, n - 1)):
                return None
            terms[shift] = terms.get(shift, 0.0) + float(w[0])
        phases.append(sorted(terms.items()))
    return phases
