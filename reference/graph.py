"""NumPy reference semantics of every graph-dialect op.

One function per op of the ``graph`` dialect, named after the op (snake_case of
the ONNX operator).  Positional parameters are the op's operands (NumPy arrays,
optional ones default to ``None``); keyword-only parameters are the op's
attributes, using the ONNX attribute names in snake_case.  Attributes arrive
resolved by the importer (``auto_pad`` already turned into explicit ``pads``,
defaults filled in), but every function still carries the ONNX defaults.

Semantics follow ONNX (as implemented by onnxruntime) and results keep ONNX
dtypes: float32 stays float32, integer ops stay integer, comparisons give bool.
Multi-result ops return a tuple.  Results may be views of their inputs
(reshape, transpose, slice, ...); no kernel ever writes into an operand.

f16 and bf16 ops compute in f32 and round once to the result's type, as the device does
(the cube multiplies f16 / bf16 and accumulates in f32, rounding on the way out; a vector
instruction rounds its own result): numpy alone would promote some of them (`bf16 @ bf16`
is f32 in ml_dtypes) and round others at every step (a bf16 sum). The f16 softmaxes, several
vector instructions on the device, round after each of them as their kernels do. The
functions below are written for f32; `_at_operand_precision` wraps each (`REFERENCE`), so
f32 runs them unchanged, bit for bit.

The graph interpreter, the constant folder, import-time evaluation and the lowering's
`ascend.reference` fallback call these functions through ``REFERENCE`` (by op class) at the
end of the module.
"""

from __future__ import annotations

import functools
import math
from functools import reduce as _reduce
from typing import Callable

import ml_dtypes
import numpy as np
from numpy.lib.stride_tricks import as_strided
from xdsl.ir import Operation

from geir.dialects import graph as g
from geir.reference.affine import batch_norm_affine
from geir.reference.collectives import require
from geir.ir.types import is_float_dtype, is_low_precision

# Several ops are named like Python builtins (sum, max, min, abs, round, pow,
# range, slice); keep private handles on the builtins before they are shadowed.
_range, _slice, _max, _min = range, slice, max, min


def _quiet(fn):
    """Silence NumPy floating-point warnings: ONNX yields inf/nan silently."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return wrapper


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _norm_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < _max(rank, 1):
        raise ValueError(f"axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _norm_axes(axes, rank: int) -> tuple[int, ...]:
    return tuple(_norm_axis(int(a), rank) for a in axes)


def _ints(v) -> list[int]:
    """Small attribute/shape vector (list, tuple or int64 array) -> list of int."""
    return [int(e) for e in np.asarray(v).reshape(-1)]


def _scalar(v):
    """A 0-d view of a scalar operand given as a 0-d or 1-element array."""
    return np.asarray(v).reshape(())


def _spatial_attrs(nd, kernel, pads, strides, dilations):
    pads = _ints(pads) if pads is not None else [0] * (2 * nd)
    strides = _ints(strides) if strides is not None else [1] * nd
    dilations = _ints(dilations) if dilations is not None else [1] * nd
    if len(pads) != 2 * nd or len(strides) != nd or len(dilations) != nd:
        raise ValueError("pads/strides/dilations do not match the spatial rank")
    return _ints(kernel), pads[:nd], pads[nd:], strides, dilations


def _pad_spatial(x: np.ndarray, begin, end, value) -> np.ndarray:
    """Pad the spatial axes (2..) of an N x C x ... tensor with a constant."""
    if not any(begin) and not any(end):
        return x
    shape = x.shape[:2] + tuple(n + b + e for n, b, e in zip(x.shape[2:], begin, end))
    out = np.full(shape, value, dtype=x.dtype)
    out[(_slice(None), _slice(None)) + tuple(_slice(b, b + n) for b, n in zip(begin, x.shape[2:]))] = x
    return out


def _windows(xp: np.ndarray, kernel, strides, dilations, out_shape) -> np.ndarray:
    """Read-only view (N, C, *kernel, *out) of the sliding windows of padded xp."""
    sp = xp.strides[2:]
    return as_strided(
        xp,
        shape=xp.shape[:2] + tuple(kernel) + tuple(out_shape),
        strides=xp.strides[:2]
        + tuple(s * d for s, d in zip(sp, dilations))
        + tuple(s * st for s, st in zip(sp, strides)),
        writeable=False,
    )


def _window_slices(kernel):
    """Index tuples selecting one kernel offset of a _windows view."""
    head = (_slice(None), _slice(None))
    return [head + off for off in np.ndindex(*kernel)]


# ---------------------------------------------------------------------------
# Elementwise unary
# ---------------------------------------------------------------------------

# W. J. Cody-style Chebyshev expansion of erfc (Numerical Recipes 3rd ed.,
# Erf::erfccheb); relative error ~1e-14 in float64 for z >= 0.
_ERFC_COF = np.array([
    -1.3026537197817094, 6.4196979235649026e-1, 1.9476473204185836e-2,
    -9.561514786808631e-3, -9.46595344482036e-4, 3.66839497852761e-4,
    4.2523324806907e-5, -2.0278578112534e-5, -1.624290004647e-6,
    1.303655835580e-6, 1.5626441722e-8, -8.5238095915e-8, 6.529054439e-9,
    5.059343495e-9, -9.91364156e-10, -2.27365122e-10, 9.6467911e-11,
    2.394038e-12, -6.886027e-12, 8.94487e-13, 3.13092e-13, -1.12708e-13,
    3.81e-16, 7.106e-15, -1.523e-15, -9.4e-17, 1.21e-16, -2.8e-17,
])
# Maclaurin series of erf(x)/x in x^2, used for |x| < 0.5 where 1 - erfc(x)
# would lose relative precision.
_ERF_TAYLOR = np.array(
    [2.0 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in _range(14)]
)


def _erfc_pos(z: np.ndarray) -> np.ndarray:
    t = 2.0 / (2.0 + z)
    ty = 4.0 * t - 2.0
    d = np.zeros_like(z)
    dd = np.zeros_like(z)
    for c in _ERFC_COF[:0:-1]:
        d, dd = ty * d - dd + c, d
    return t * np.exp(-z * z + 0.5 * (_ERFC_COF[0] + ty * d) - dd)


def _erf_f64(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    z = np.abs(x)
    out = np.empty_like(x)
    small = z < 0.5
    xs = x[small]
    x2 = xs * xs
    acc = np.full_like(xs, _ERF_TAYLOR[-1])
    for c in _ERF_TAYLOR[-2::-1]:
        acc = acc * x2 + c
    out[small] = xs * acc
    big = ~small
    out[big] = np.copysign(1.0 - _erfc_pos(z[big]), x[big])
    return out


def relu(x):
    return np.maximum(x, 0)


def sigmoid(x):
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def tanh(x):
    return np.tanh(x)


def erf(x):
    return _erf_f64(x).astype(x.dtype, copy=False)


@_quiet
def exp(x):
    return np.exp(x)


@_quiet
def log(x):
    return np.log(x)


@_quiet
def sqrt(x):
    return np.sqrt(x)


@_quiet
def reciprocal(x):
    return np.reciprocal(x)


def neg(x):
    return np.negative(x)


def abs(x):  # noqa: A001 - op name
    return np.abs(x)


def logical_not(x):
    return np.logical_not(x)


def sign(x):
    return np.sign(x)


def floor(x):
    return np.floor(x)


def ceil(x):
    return np.ceil(x)


def round(x):  # noqa: A001 - op name; ONNX rounds half to even, like NumPy
    return np.round(x)


def sin(x):
    return np.sin(x)


def cos(x):
    return np.cos(x)


def softplus(x):
    return np.logaddexp(0, x)


def softsign(x):
    return x / (1 + np.abs(x))


def identity(x):
    return x


def leaky_relu(x, *, alpha=0.01):
    return np.where(x >= 0, x, x * alpha)


@_quiet
def elu(x, *, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(x))


@_quiet
def selu(x, *, alpha=1.67326319217681884765625, gamma=1.05070102214813232421875):
    return gamma * np.where(x > 0, x, alpha * np.expm1(x))


def hard_sigmoid(x, *, alpha=0.2, beta=0.5):
    return np.clip(x * alpha + beta, 0, 1)


def hard_swish(x):
    return x * np.clip(x * (1 / 6) + 0.5, 0, 1)


def gelu(x, *, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)))
    xd = np.asarray(x, dtype=np.float64)
    return (0.5 * xd * (1 + _erf_f64(xd * (1 / math.sqrt(2))))).astype(x.dtype, copy=False)


def shrink(x, *, bias=0.0, lambd=0.5):
    return np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0)).astype(x.dtype, copy=False)


@_quiet
def celu(x, *, alpha=1.0):
    return np.maximum(x, 0) + np.minimum(0, alpha * np.expm1(x / alpha))


def mish(x):
    return x * np.tanh(np.logaddexp(0, x))


def thresholded_relu(x, *, alpha=1.0):
    return np.where(x > alpha, x, 0).astype(x.dtype, copy=False)


# ---------------------------------------------------------------------------
# Elementwise, integer and scan ops (Acos ... Sinh, IsNaN / IsInf, Bitwise*, BitShift,
# BitCast, CumSum / CumProd)
# ---------------------------------------------------------------------------

@_quiet
def acos(x):
    return np.arccos(x)


@_quiet
def acosh(x):
    return np.arccosh(x)


@_quiet
def asin(x):
    return np.arcsin(x)


def asinh(x):
    return np.arcsinh(x)


def atan(x):
    return np.arctan(x)


@_quiet
def atanh(x):
    return np.arctanh(x)


@_quiet
def tan(x):
    return np.tan(x)


@_quiet
def cosh(x):
    return np.cosh(x)


@_quiet
def sinh(x):
    return np.sinh(x)


def is_nan(x):
    return np.isnan(x)


def is_inf(x, *, detect_positive=1, detect_negative=1):
    pos = np.isposinf(x) if detect_positive else np.zeros(x.shape, bool)
    neg = np.isneginf(x) if detect_negative else np.zeros(x.shape, bool)
    return pos | neg


def bitwise_and(lhs, rhs):
    return np.bitwise_and(lhs, rhs)


def bitwise_or(lhs, rhs):
    return np.bitwise_or(lhs, rhs)


def bitwise_xor(lhs, rhs):
    return np.bitwise_xor(lhs, rhs)


def bitwise_not(x):
    return np.invert(x)


def bit_shift(lhs, rhs, *, direction="RIGHT"):
    """Shifts within the element type: a left shift of the unsigned bits (wrapping, bits past
    the top dropped), an arithmetic right shift for signed types; a shift amount outside
    [0, width) gives 0, or -1 for a right shift of a negative value (ONNX BitShift-28)."""
    dt = lhs.dtype
    bits = dt.itemsize * 8
    x, y = np.broadcast_arrays(lhs, rhs)
    y = y.astype(np.int64) if dt.kind == "i" else y.astype(np.uint64)
    valid = (y >= 0) & (y < bits)
    amount = np.where(valid, y, 0).astype(np.uint64)
    unsigned = x.astype(dt).view(np.dtype(f"u{dt.itemsize}"))
    if direction == "LEFT":
        out = np.left_shift(unsigned.astype(np.uint64), amount)
        out = out.astype(unsigned.dtype).view(dt)
        return np.where(valid, out, np.zeros((), dt)).astype(dt, copy=False)
    if dt.kind == "u":
        out = np.right_shift(unsigned.astype(np.uint64), amount).astype(dt)
        return np.where(valid, out, np.zeros((), dt)).astype(dt, copy=False)
    out = np.right_shift(x.astype(np.int64), amount.astype(np.int64)).astype(dt)
    fill = np.where(x < 0, np.array(-1, dt), np.array(0, dt))
    return np.where(valid, out, fill).astype(dt, copy=False)


def bitcast(x, *, to):
    return np.array(x, order="C").view(np.dtype(to))  # the host is little endian, as ONNX says


def _cumulative(fn, identity, x, axis, exclusive, reverse):
    axis = axis % x.ndim
    if reverse:
        x = np.flip(x, axis)
    out = fn(x, axis=axis, dtype=x.dtype)
    if exclusive:
        first = np.full_like(np.take(out, [0], axis=axis), identity)
        out = np.concatenate([first, np.take(out, np.arange(x.shape[axis] - 1), axis=axis)], axis=axis)
    if reverse:
        out = np.flip(out, axis)
    return np.ascontiguousarray(out)


@_quiet
def cum_sum(x, *, axis=0, exclusive=0, reverse=0):
    return _cumulative(np.cumsum, 0, x, axis, exclusive, reverse)


@_quiet
def cum_prod(x, *, axis=0, exclusive=0, reverse=0):
    return _cumulative(np.cumprod, 1, x, axis, exclusive, reverse)


# ---------------------------------------------------------------------------
# Elementwise binary (NumPy broadcasting == ONNX multidirectional broadcasting)
# ---------------------------------------------------------------------------


def add(a, b):
    return np.add(a, b)


def sub(a, b):
    return np.subtract(a, b)


def mul(a, b):
    return np.multiply(a, b)


@_quiet
def div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        # ONNX (C++) integer division truncates toward zero; NumPy floors.
        q = np.floor_divide(a, b)
        fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        return (q + fix).astype(a.dtype, copy=False)
    return np.divide(a, b)


@_quiet
def pow(a, b):  # noqa: A001 - op name
    # The result has the base's dtype whatever the exponent's dtype.
    if np.issubdtype(a.dtype, np.floating):
        return np.power(a, b.astype(a.dtype, copy=False))
    if np.issubdtype(b.dtype, np.integer) and not np.any(b < 0):
        return np.power(a, b.astype(a.dtype, copy=False))
    return np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


@_quiet
def mod(a, b, *, fmod=0):
    # fmod=0: sign of the divisor (Python/NumPy %); fmod=1: sign of the dividend.
    return np.fmod(a, b) if fmod else np.mod(a, b)


def equal(a, b):
    return np.equal(a, b)


def less(a, b):
    return np.less(a, b)


def greater(a, b):
    return np.greater(a, b)


def less_or_equal(a, b):
    return np.less_equal(a, b)


def greater_or_equal(a, b):
    return np.greater_equal(a, b)


def logical_and(a, b):
    return np.logical_and(a, b)


def logical_or(a, b):
    return np.logical_or(a, b)


def logical_xor(a, b):
    return np.logical_xor(a, b)


def prelu(x, slope):
    return np.where(x < 0, x * slope, x)


# ---------------------------------------------------------------------------
# Variadic, selection, casting
# ---------------------------------------------------------------------------


def sum(*xs):  # noqa: A001 - op name
    return _reduce(np.add, xs) if len(xs) > 1 else xs[0]


def mean(*xs):
    return (sum(*xs) / len(xs)).astype(xs[0].dtype, copy=False)


def max(*xs):  # noqa: A001 - op name
    return _reduce(np.maximum, xs) if len(xs) > 1 else xs[0]


def min(*xs):  # noqa: A001 - op name
    return _reduce(np.minimum, xs) if len(xs) > 1 else xs[0]


def where(cond, x, y):
    return np.where(cond, x, y)


def clip(x, min=None, max=None):  # noqa: A002 - ONNX operand names
    # Apply min then max, so min > max gives max everywhere (as ONNX).
    if min is not None and np.size(min):
        x = np.maximum(x, _scalar(min))
    if max is not None and np.size(max):
        x = np.minimum(x, _scalar(max))
    return x


@_quiet
def cast(x, *, to, saturate=None, round_mode=None):
    # One rounding from any float type to any other: f16 <-> bf16 goes through f32, which
    # holds both exactly.
    x = np.asarray(x)
    to = np.dtype(to)
    if to in _SATURATING_FLOAT8 and saturate in (None, 1):
        # ONNX: out of range, infinities included, becomes the largest finite value (NaN stays)
        info = ml_dtypes.finfo(to)
        return np.clip(x, info.min, info.max).astype(to)
    if to == _E8M0:
        return _to_e8m0(x, saturate in (None, 1), round_mode or "up")
    if is_low_precision(x.dtype) and is_low_precision(to) and x.dtype != to:
        x = x.astype(np.float32)
    # the rest as ml_dtypes converts (ONNX's reference): float8 without saturate gives NaN
    # (e5m2: inf) out of range; to float4e2m1 saturates; to int4 / int2 truncates
    return x.astype(to)


_SATURATING_FLOAT8 = frozenset(np.dtype(t) for t in (
    ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz))
_E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)


def _to_e8m0(x, saturate: bool, mode: str) -> np.ndarray:
    """float8e8m0 (a biased power-of-two exponent) from float32's exponent bits: NaN / inf give
    NaN (0xFF); "up" rounds a non-power of two up, "nearest" to nearest (ties up), "down"
    truncates; saturate keeps the top finite exponent from rounding to NaN (ONNX Cast 24)."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    exp = ((bits >> 23) & 0xFF).astype(np.uint16)
    special = exp == 0xFF
    if mode == "nearest":
        g, r, s = (bits & 0x400000) > 0, (bits & 0x200000) > 0, (bits & 0x1FFFFF) > 0
        up = g & (r | s | (exp > 0))
    elif mode == "up":
        up = (bits & 0x7FFFFF) > 0
    else:
        up = np.zeros(bits.shape, bool)
    up &= ~special
    if saturate:
        up &= exp != 0xFE
    exp = np.where(special, 0xFF, exp + up).astype(np.uint8)
    return exp.view(_E8M0)


def quantize(x, scale, zero_point, *, saturate=None):
    """ONNX QuantizeLinear: x / scale in float32, rounded half to even, plus the zero point,
    saturated to its type. To a float8 / float4 type: x / scale + zero_point cast to it (as
    graph.cast: saturate, absent 1, applies to float8)."""
    with np.errstate(all="ignore"):
        q = np.asarray(x, np.float32) / np.asarray(scale, np.float32)
    if zero_point.dtype.kind not in "iu" and zero_point.dtype not in _NARROW_INT:
        return cast(q + zero_point.astype(np.float32), to=zero_point.dtype, saturate=saturate)
    info = ml_dtypes.iinfo(zero_point.dtype)
    q = np.clip(np.nan_to_num(np.rint(q)) + zero_point.astype(np.float32), info.min, info.max)
    return q.astype(zero_point.dtype)


_NARROW_INT = frozenset(np.dtype(t) for t in (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2))


def dequantize(x, scale, zero_point=None):
    """ONNX DequantizeLinear: (x - zero_point) * scale, in float32, then the scale's type (a
    float8 / float4 x is widened exactly to float32)."""
    x = np.asarray(x)
    if x.dtype.kind in "iu" or x.dtype in _NARROW_INT:
        q = np.asarray(x, np.int64)
        if zero_point is not None:
            q = q - np.asarray(zero_point, np.int64)
        q = q.astype(np.float32)
    else:
        q = x.astype(np.float32)
        if zero_point is not None:
            q = q - np.asarray(zero_point).astype(np.float32)
    y = q * np.asarray(scale, np.float32)
    return y.astype(scale.dtype, copy=False)


def requantize(acc, scale, zero_point):
    """graph.requantize: t = f32(acc) * scale (one f32 multiply), then
    saturate(round_half_even(t) + zero_point) in the zero point's type - quantize(dequantize(acc,
    scale), 1.0, zero_point) exactly."""
    with np.errstate(all="ignore"):
        t = np.asarray(acc).astype(np.float32) * np.asarray(scale, np.float32)
    info = np.iinfo(zero_point.dtype)
    q = np.clip(np.nan_to_num(np.rint(t)) + zero_point.astype(np.float32), info.min, info.max)
    return q.astype(zero_point.dtype)


# ---------------------------------------------------------------------------
# Convolution
# ---------------------------------------------------------------------------


def _integer(fn):
    """An int8 / uint8 contraction gives the exact int32 result. It runs in float64 (BLAS; numpy
    has no fast integer matmul), exact while a sum stays below 2^53: |x w| <= 2^16, so for any
    K below 2^37."""

    @functools.wraps(fn)
    def kernel(*operands, **attrs):
        if operands[0].dtype.kind not in "iu":
            return fn(*operands, **attrs)
        return fn(*(np.asarray(v, np.float64) for v in operands), **attrs).astype(np.int32)

    return kernel


@_integer
def conv(x, w, b=None, *, pads=None, strides=None, dilations=None, group=1, kernel_shape=None, offset_x=None):
    nd = x.ndim - 2
    kernel, pb, pe, st, dl = _spatial_attrs(nd, w.shape[2:], pads, strides, dilations)
    n, c = x.shape[:2]
    m = w.shape[0]
    out_sp = [
        (i + b0 + e0 - d * (k - 1) - 1) // s + 1
        for i, b0, e0, d, k, s in zip(x.shape[2:], pb, pe, dl, kernel, st)
    ]
    win = _windows(_pad_spatial(x, pb, pe, offset_x or 0), kernel, st, dl, out_sp)
    ksize, length = math.prod(kernel), math.prod(out_sp)

    if group > 1 and group == c and w.shape[1] == 1:
        # Depthwise: accumulate one multiply per kernel offset instead of a
        # batched matmul of (mult x K) @ (K x L) per channel (much faster).
        mult = m // c
        wr = w.reshape(c, mult, ksize)
        y = None
        for kidx, idx in enumerate(_window_slices(kernel)):
            term = win[idx][:, :, None] * wr[:, :, kidx].reshape((c, mult) + (1,) * nd)
            y = term if y is None else np.add(y, term, out=y)
        y = y.reshape((n, m) + tuple(out_sp))
    else:
        # im2col: the reshape copies the strided window view into columns.
        cols = win.reshape(n, group, (c // group) * ksize, length)
        wm = w.reshape(group, m // group, (c // group) * ksize)
        y = np.matmul(wm, cols).reshape((n, m) + tuple(out_sp))
    if b is not None:
        y += b.reshape((m,) + (1,) * nd)
    return y


def conv_transpose(
    x,
    w,
    b=None,
    *,
    pads=None,
    strides=None,
    dilations=None,
    group=1,
    output_padding=None,
    kernel_shape=None,
    output_shape=None,
):
    nd = x.ndim - 2
    kernel, pb, pe, st, dl = _spatial_attrs(nd, w.shape[2:], pads, strides, dilations)
    outpad = _ints(output_padding) if output_padding is not None else [0] * nd
    n, c = x.shape[:2]
    in_sp = x.shape[2:]
    mg = w.shape[1]
    m = mg * group
    # Un-cropped output extent: every input position scatters a full
    # (dilated) kernel footprint; output_padding extends the end.
    full = [s * (i - 1) + d * (k - 1) + 1 + op for i, s, d, k, op in zip(in_sp, st, dl, kernel, outpad)]
    if output_shape is not None:
        # Pads derived from output_shape; the odd extra goes at the beginning
        # (ONNX rule for auto_pad NOTSET, as onnxruntime does).
        target = _ints(output_shape)[-nd:]
        total = [_max(0, f - t) for f, t in zip(full, target)]
        pb, pe = [t - t // 2 for t in total], [t // 2 for t in total]

    # cols[n, o, k..., i...] = sum_c w[c, o, k...] * x[n, c, i...], per group.
    cg = c // group
    wm = w.reshape(group, cg, mg * math.prod(kernel)).transpose(0, 2, 1)
    cols = np.matmul(wm, x.reshape(n, group, cg, -1)).reshape((n, m) + tuple(kernel) + tuple(in_sp))

    y = np.zeros((n, m) + tuple(full), dtype=np.result_type(x, w))
    for off in np.ndindex(*kernel):
        dst = tuple(_slice(o * d, o * d + s * (i - 1) + 1, s) for o, d, s, i in zip(off, dl, st, in_sp))
        y[(_slice(None), _slice(None)) + dst] += cols[(_slice(None), _slice(None)) + off]
    y = y[(_slice(None), _slice(None)) + tuple(_slice(b0, f - e0) for b0, e0, f in zip(pb, pe, full))]
    if b is not None:
        y = y + b.reshape((m,) + (1,) * nd)
    return y


# ---------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------


def _pool_geometry(in_sp, kernel, pb, pe, st, dl, ceil_mode):
    """Output spatial shape and the extra end padding ceil_mode windows need."""
    out, extra = [], []
    for i, k, b0, e0, s, d in zip(in_sp, kernel, pb, pe, st, dl):
        span = i + b0 + e0 - d * (k - 1) - 1
        o = (-(-span // s) if ceil_mode else span // s) + 1
        # ONNX/onnxruntime: with ceil_mode a window that would start in the end
        # padding (or beyond) is dropped.
        if ceil_mode and (o - 1) * s >= i + b0:
            o -= 1
        out.append(o)
        extra.append(_max(0, (o - 1) * s + d * (k - 1) + 1 - (i + b0 + e0)))
    return out, extra


def max_pool(
    x,
    *,
    kernel_shape,
    pads=None,
    strides=None,
    dilations=None,
    ceil_mode=0,
    storage_order=0,
):
    nd = x.ndim - 2
    kernel, pb, pe, st, dl = _spatial_attrs(nd, kernel_shape, pads, strides, dilations)
    out_sp, extra = _pool_geometry(x.shape[2:], kernel, pb, pe, st, dl, ceil_mode)
    lowest = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    xp = _pad_spatial(x, pb, [e + x0 for e, x0 in zip(pe, extra)], lowest)
    win = _windows(xp, kernel, st, dl, out_sp)
    idx = _window_slices(kernel)
    y = win[idx[0]].copy()
    for i in idx[1:]:
        np.maximum(y, win[i], out=y)
    return y


def avg_pool(
    x,
    *,
    kernel_shape,
    pads=None,
    strides=None,
    dilations=None,
    ceil_mode=0,
    count_include_pad=0,
):
    nd = x.ndim - 2
    kernel, pb, pe, st, dl = _spatial_attrs(nd, kernel_shape, pads, strides, dilations)
    in_sp = x.shape[2:]
    out_sp, extra = _pool_geometry(in_sp, kernel, pb, pe, st, dl, ceil_mode)
    tail = [e + x0 for e, x0 in zip(pe, extra)]
    win = _windows(_pad_spatial(x, pb, tail, 0), kernel, st, dl, out_sp)
    idx = _window_slices(kernel)
    y = win[idx[0]].copy()
    for i in idx[1:]:
        np.add(y, win[i], out=y)

    # Divisor per output position: the window elements that lie in the input
    # (count_include_pad=0) or in the explicitly padded input
    # (count_include_pad=1); the extra ceil_mode padding is never counted.
    ones = np.ones((1, 1) + tuple(in_sp), dtype=x.dtype)
    if count_include_pad:
        ones = _pad_spatial(ones, pb, pe, 1)
        mask = _pad_spatial(ones, [0] * nd, extra, 0)
    else:
        mask = _pad_spatial(ones, pb, tail, 0)
    mwin = _windows(mask, kernel, st, dl, out_sp)
    cnt = mwin[idx[0]].copy()
    for i in idx[1:]:
        np.add(cnt, mwin[i], out=cnt)
    y /= cnt
    return y


def global_avg_pool(x):
    return x.mean(axis=tuple(_range(2, x.ndim)), keepdims=True)


def global_max_pool(x):
    return x.max(axis=tuple(_range(2, x.ndim)), keepdims=True)


# ---------------------------------------------------------------------------
# Normalisation and softmax
# ---------------------------------------------------------------------------


def _per_channel(v, ndim):
    return v.reshape((-1,) + (1,) * (ndim - 2))


def batch_norm(x, scale, bias, mean, var, *, epsilon=1e-5, momentum=0.9, training_mode=0):
    # Inference mode: fold into one multiply-add.
    a, c = batch_norm_affine(scale, bias, mean, var, epsilon)
    return x * _per_channel(a, x.ndim) + _per_channel(c, x.ndim)


def instance_norm(x, scale, bias, *, epsilon=1e-5):
    axes = tuple(_range(2, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    d = x - mu
    var = (d * d).mean(axis=axes, keepdims=True)
    return d / np.sqrt(var + epsilon) * _per_channel(scale, x.ndim) + _per_channel(bias, x.ndim)


def layer_norm(x, scale, bias=None, *, axis=-1, epsilon=1e-5, stash_type=1):
    axes = tuple(_range(_norm_axis(axis, x.ndim), x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    d = x - mu
    var = (d * d).mean(axis=axes, keepdims=True)
    y = d / np.sqrt(var + epsilon) * scale
    return y + bias if bias is not None else y


def rms_norm(x, scale, *, axis=-1, epsilon=1e-5):
    # ONNX stash_type 1: the statistics in (at least) fp32, the normalised x back in x's type
    axes = tuple(_range(_norm_axis(axis, x.ndim), x.ndim))
    s = x.astype(np.promote_types(x.dtype, np.float32), copy=False)
    ms = (s * s).mean(axis=axes, keepdims=True)
    return (s / np.sqrt(ms + epsilon)).astype(x.dtype, copy=False) * scale


def rotary_embedding(x, cos, sin, *, interleaved=0):
    if interleaved:
        rot = np.stack((-x[..., 1::2], x[..., 0::2]), axis=-1).reshape(x.shape)
    else:
        half = x.shape[-1] // 2
        rot = np.concatenate((-x[..., half:], x[..., :half]), axis=-1)
    return (x * cos + rot * sin).astype(x.dtype, copy=False)


class CachePositionError(ValueError):
    """A KV-cache write whose rows would pass the cache's end (a run-time value)."""


def kv_cache_write(cache, update, position, *, axis=-2):
    axis = _norm_axis(axis, cache.ndim)
    pos, n, limit = int(np.asarray(position).reshape(-1)[0]), update.shape[axis], cache.shape[axis]
    if not 0 <= pos <= limit - n:
        raise CachePositionError(f"cache position {pos} with {n} new row(s) passes the cache's maximum "
                                 f"length {limit} (positions 0 to {limit - n} fit)")
    out = cache.copy()
    index = [np.s_[:]] * cache.ndim
    index[axis] = np.s_[pos:pos + n]  # (`slice` here is graph.slice's semantics)
    out[tuple(index)] = update
    return out


def lrn(x, *, size, alpha=1e-4, beta=0.75, bias=1.0):
    # Window over channels c - floor((size-1)/2) .. c + ceil((size-1)/2).
    c = x.shape[1]
    lo = (size - 1) // 2
    sq = x * x
    pad = [(0, 0)] * x.ndim
    pad[1] = (lo, size - 1 - lo)
    sqp = np.pad(sq, pad)
    acc = sqp[:, 0:c].copy()
    for j in _range(1, size):
        acc += sqp[:, j : j + c]
    return x / (bias + (alpha / size) * acc) ** beta


def _vector_steps(dtype):
    """(widen, r) for an op of several vector instructions: f16 is computed in f16, each
    instruction rounding its result (`r` rounds a step's f32 value to f16 and back); bf16 in
    f32 (the vector unit only moves and converts bf16: ascend.BF16_VECTOR_OPS), so rounded
    once, by the caller; other types as they are."""
    if not is_low_precision(dtype):
        return lambda x: x, lambda v: v
    if dtype != np.float16:
        return lambda x: x.astype(np.float32), lambda v: v
    return lambda x: x.astype(np.float32), lambda v: v.astype(dtype).astype(np.float32)


@_quiet
def softmax(x, *, axis=-1):
    # in f16 each step rounded as the vector kernel does: x - max, exp, the sum (accumulated
    # in f32), the division (ONNX's reference, numpy in f16, agrees)
    widen, r = _vector_steps(x.dtype)
    w = widen(x)
    e = r(np.exp(r(w - w.max(axis=axis, keepdims=True))))
    return r(e / r(e.sum(axis=axis, keepdims=True))).astype(x.dtype, copy=False)


@_quiet
def safe_softmax(x, *, axis=-1):
    return np.where(np.all(x == -np.inf, axis=axis, keepdims=True), np.zeros((), x.dtype), softmax(x, axis=axis))


@_quiet
def log_softmax(x, *, axis=-1):
    widen, r = _vector_steps(x.dtype)
    w = widen(x)
    s = r(w - w.max(axis=axis, keepdims=True))
    return r(s - r(np.log(r(r(np.exp(s)).sum(axis=axis, keepdims=True))))).astype(x.dtype, copy=False)


@_quiet
def attention(q, k, v, mask=None, *, scale, causal=0):
    # q [B, H, S, D], k / v [B, Hkv, L, D / Dv]; kv head h // (H / Hkv) serves query head h.
    # (16-bit operands arrive in f32: the scores and the softmax are computed in fp32.)
    group = q.shape[1] // k.shape[1]
    if group > 1:
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * np.float32(scale)
    if mask is not None:
        s = s + mask
    if causal:
        sq, lk = s.shape[-2:]
        s = np.where(np.tril(np.ones((sq, lk), bool), lk - sq), s, -np.inf)
    return np.matmul(softmax(s, axis=-1), v)


def causal_mask(position, fill, *, queries, keys, offset=0):
    off = int(np.asarray(position).reshape(-1)[0]) + offset
    seen = np.arange(keys)[None, :] <= np.arange(queries)[:, None] + off
    return np.where(seen, np.zeros((), fill.dtype), fill.reshape(())).reshape(1, 1, queries, keys)


# ---------------------------------------------------------------------------
# Matrix products
# ---------------------------------------------------------------------------


@_integer
def matmul(a, b):
    return np.matmul(a, b)


@_integer
def gemm(a, b, c=None, *, alpha=1.0, beta=1.0, trans_a=0, trans_b=0):
    y = np.matmul(a.T if trans_a else a, b.T if trans_b else b)
    if alpha != 1.0:
        y *= alpha
    if c is not None and beta != 0.0:
        y = y + (c if beta == 1.0 else beta * c)
    return y


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------


def _reduce_axes(x, axes, noop_with_empty_axes):
    """None or () means all axes, or no reduction at all (ONNX: the result is
    the input) when noop_with_empty_axes is set."""
    if axes is None or len(axes) == 0:
        return () if noop_with_empty_axes else None
    return _norm_axes(axes, x.ndim)


def _reduction(name, fn):
    def kernel(x, *, axes=None, keepdims=1, noop_with_empty_axes=0):
        ax = _reduce_axes(x, axes, noop_with_empty_axes)
        if ax == ():
            return x
        with np.errstate(all="ignore"):
            y = fn(x, ax, bool(keepdims))
        return np.asarray(y).astype(x.dtype, copy=False)

    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def _lowest(dtype) -> object:
    """The identity of max over `dtype` (ONNX 18: the max of an empty set): -inf, the
    integer minimum, False."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return False
    return np.iinfo(dtype).min if np.issubdtype(dtype, np.integer) else -np.inf


def _highest(dtype) -> object:
    """The identity of min over `dtype`: inf, the integer maximum, True."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return True
    return np.iinfo(dtype).max if np.issubdtype(dtype, np.integer) else np.inf


def _reduce_max(x, ax, kd):
    """max over `ax`; over an empty set (a zero-size reduced axis) the identity (ONNX 18+)."""
    return np.max(x, axis=ax, keepdims=kd, initial=_lowest(x.dtype)) if x.size == 0 else np.max(x, axis=ax, keepdims=kd)


def _reduce_min(x, ax, kd):
    return np.min(x, axis=ax, keepdims=kd, initial=_highest(x.dtype)) if x.size == 0 else np.min(x, axis=ax, keepdims=kd)


def _log_sum_exp(x, ax, kd):
    m = _reduce_max(x, ax, True)  # an empty set: -inf, then log(0) = -inf
    m = np.where(np.isfinite(m), m, 0)  # all -inf (or inf) slices: no shift
    y = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
    return y if kd else np.squeeze(y, axis=ax)


reduce_sum = _reduction("reduce_sum", lambda x, ax, kd: np.sum(x, axis=ax, keepdims=kd))
reduce_mean = _reduction("reduce_mean", lambda x, ax, kd: np.mean(x, axis=ax, keepdims=kd))
reduce_max = _reduction("reduce_max", _reduce_max)
reduce_min = _reduction("reduce_min", _reduce_min)
reduce_prod = _reduction("reduce_prod", lambda x, ax, kd: np.prod(x, axis=ax, keepdims=kd))
reduce_l1 = _reduction("reduce_l1", lambda x, ax, kd: np.sum(np.abs(x), axis=ax, keepdims=kd))
reduce_l2 = _reduction("reduce_l2", lambda x, ax, kd: np.sqrt(np.sum(x * x, axis=ax, keepdims=kd)))
reduce_sum_square = _reduction("reduce_sum_square", lambda x, ax, kd: np.sum(x * x, axis=ax, keepdims=kd))
reduce_log_sum = _reduction("reduce_log_sum", lambda x, ax, kd: np.log(np.sum(x, axis=ax, keepdims=kd)))
reduce_log_sum_exp = _reduction("reduce_log_sum_exp", _log_sum_exp)


def _arg(fn, x, axis, keepdims, select_last_index):
    axis = _norm_axis(axis, x.ndim)
    if select_last_index:
        i = x.shape[axis] - 1 - fn(np.flip(x, axis=axis), axis=axis)
    else:
        i = fn(x, axis=axis)
    i = np.asarray(i, dtype=np.int64)
    return np.expand_dims(i, axis) if keepdims else i


def arg_max(x, *, axis=0, keepdims=1, select_last_index=0):
    return _arg(np.argmax, x, axis, keepdims, select_last_index)


def arg_min(x, *, axis=0, keepdims=1, select_last_index=0):
    return _arg(np.argmin, x, axis, keepdims, select_last_index)


# ---------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------


def concat(*xs, axis):
    return np.concatenate(xs, axis=axis)


def split(x, split=None, *, axis=0, num_outputs=None):
    axis = _norm_axis(axis, x.ndim)
    dim = x.shape[axis]
    if split is not None and np.size(split):
        sizes = _ints(split)
    elif num_outputs:
        # ONNX 18: chunks of ceil(dim / n); the last one takes the remainder.
        chunk = -(-dim // num_outputs)
        sizes = [chunk] * (num_outputs - 1) + [dim - chunk * (num_outputs - 1)]
    else:
        raise ValueError("split needs a 'split' operand or num_outputs")
    if int(np.sum(sizes)) != dim or any(s < 0 for s in sizes):
        raise ValueError(f"split sizes {sizes} do not cover dimension {dim}")
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


def slice(data, starts, ends, axes=None, steps=None):  # noqa: A001 - op name
    starts, ends = _ints(starts), _ints(ends)
    axes = _norm_axes(_ints(axes), data.ndim) if axes is not None else tuple(_range(len(starts)))
    steps = _ints(steps) if steps is not None else [1] * len(starts)
    idx = [_slice(None)] * data.ndim
    for ax, s, e, st in zip(axes, starts, ends, steps):
        dim = data.shape[ax]
        if st == 0:
            raise ValueError("slice step cannot be 0")
        s = s + dim if s < 0 else s
        e = e + dim if e < 0 else e
        # Clamp like ONNX; INT64_MIN/MAX sentinels fall out of the clamping.
        if st > 0:
            s, e = _min(_max(s, 0), dim), _min(_max(e, 0), dim)
        else:
            s, e = _min(_max(s, 0), dim - 1), _min(_max(e, -1), dim - 1)
        idx[ax] = _slice(s, None if e < 0 else e, st)
    return data[tuple(idx)]


def gather(data, indices, *, axis=0):
    return np.take(data, indices, axis=_norm_axis(axis, data.ndim))


def gather_elements(data, indices, *, axis=0):
    axis = _norm_axis(axis, data.ndim)
    indices = np.where(indices < 0, indices + data.shape[axis], indices)
    return np.take_along_axis(data, indices, axis=axis)


# -- Indexing: scatter, gather_nd, top_k, einsum, reverse_sequence, tensor_scatter ----------


def _in_bounds(index: np.ndarray, size, what: str) -> np.ndarray:
    """`index` with negative entries counted from the end; an entry outside [-size, size) is
    an error (ONNX: out-of-bounds indices are an error)."""
    index = np.asarray(index, np.int64)
    bad = (index < -size) | (index >= size)
    if np.any(bad):
        raise IndexError(f"{what} {int(index[bad].reshape(-1)[0])} is out of bounds for size "
                         f"{int(np.broadcast_to(size, index.shape)[bad].reshape(-1)[0])}")
    return np.where(index < 0, index + size, index)


_SCATTER_UFUNCS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _scatter_rows(out: np.ndarray, rows: np.ndarray, updates: np.ndarray, reduction: str) -> None:
    """out[rows[i]] = updates[i] (or combined by `reduction`), in the order of i: with
    reduction none a repeated row keeps its last update."""
    if reduction == "none":
        # the last occurrence of each row: first occurrences of the reversed list
        _, first = np.unique(rows[::-1], return_index=True)
        keep = len(rows) - 1 - first
        out[rows[keep]] = updates[keep]
    elif _SCATTER_UFUNCS[reduction] in (np.maximum, np.minimum) or not is_low_precision(out.dtype):
        _SCATTER_UFUNCS[reduction].at(out, rows, updates)  # bool: add is or, mul is and
    else:  # f16 / bf16 add, mul: in f32, each element rounded once
        wide = out.astype(np.float32)
        _SCATTER_UFUNCS[reduction].at(wide, rows, updates.astype(np.float32))
        out[...] = wide


def scatter_elements(data, indices, updates, *, axis=0, reduction="none"):
    axis = _norm_axis(axis, data.ndim)
    index = _in_bounds(indices, data.shape[axis], "index")
    grid = list(np.indices(index.shape, sparse=True))
    grid[axis] = index
    flat = np.ravel_multi_index(tuple(np.broadcast_arrays(*grid)), data.shape).reshape(-1)
    out = data.copy().reshape(-1)
    _scatter_rows(out, flat, updates.reshape(-1), reduction)
    return out.reshape(data.shape)


def scatter_nd(data, indices, updates, *, reduction="none"):
    k = indices.shape[-1]
    index = _in_bounds(indices.reshape(-1, k), np.array(data.shape[:k]), "index")
    rows = np.ravel_multi_index(tuple(index.T), data.shape[:k]) if k else np.zeros(len(index), np.int64)
    out = data.copy().reshape(math.prod(data.shape[:k]), -1)
    _scatter_rows(out, rows, updates.reshape(len(rows), -1), reduction)
    return out.reshape(data.shape)


def gather_nd(data, indices, *, batch_dims=0):
    b, k = batch_dims, indices.shape[-1]
    batch = math.prod(data.shape[:b])
    index = _in_bounds(indices.reshape(batch, -1, k), np.array(data.shape[b:b + k]), "index")
    x = data.reshape(batch, *data.shape[b:])
    picked = x[(np.arange(batch)[:, None], *(index[..., j] for j in _range(k)))]
    return picked.reshape(*indices.shape[:-1], *data.shape[b + k:])


def top_k(x, *, k, axis=-1, largest=1, sorted=1):  # noqa: A002 - ONNX attribute name
    axis = _norm_axis(axis, x.ndim)
    n = x.shape[axis]
    if largest:
        # descending with equal values in index order: a stable ascending sort of the
        # reversed axis, read backwards
        order = np.flip(n - 1 - np.argsort(np.flip(x, axis=axis), axis=axis, kind="stable"), axis=axis)
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    index = np.take(order, np.arange(k), axis=axis).astype(np.int64)
    return np.take_along_axis(x, index, axis=axis), index


def einsum(*xs, equation):
    # (f16 / bf16 operands come in as f32 and the result is rounded once: REFERENCE's wrapper)
    y = np.einsum(equation.replace(" ", ""), *xs)
    return np.asarray(y).astype(np.result_type(*[x.dtype for x in xs]), copy=False)


def reverse_sequence(x, sequence_lens, *, batch_axis=1, time_axis=0):
    out = x.copy()
    lens = np.asarray(sequence_lens, np.int64).reshape(-1)
    for b, n in enumerate(lens.tolist()):
        if not 0 <= n <= x.shape[time_axis]:
            raise IndexError(f"sequence length {n} is outside 0 to {x.shape[time_axis]}")
        index = [_slice(None)] * x.ndim
        index[batch_axis] = b
        index[time_axis] = _slice(0, n)
        source = list(index)
        source[time_axis] = _slice(n - 1, None, -1) if n else _slice(0, 0)
        out[tuple(index)] = x[tuple(source)]
    return out


def tensor_scatter(cache, update, write_indices=None, *, axis=-2, mode="linear"):
    axis = _norm_axis(axis, cache.ndim)
    limit, n = cache.shape[axis], update.shape[axis]
    starts = np.zeros(cache.shape[0], np.int64) if write_indices is None else np.asarray(write_indices, np.int64)
    out = cache.copy()
    for b, start in enumerate(starts.reshape(-1).tolist()):
        rows = np.arange(start, start + n)
        if mode == "circular":
            rows %= limit
        elif n and not (0 <= start and start + n <= limit):
            raise CachePositionError(f"write index {start} with {n} new row(s) passes the cache's maximum "
                                     f"length {limit} (batch entry {b})")
        # b drops dim 0, so the row axis is axis - 1 in both views
        np.moveaxis(out[b], axis - 1, 0)[rows] = np.moveaxis(update[b], axis - 1, 0)
    return out


def reshape(data, shape, *, allowzero=0):
    shape = _ints(shape)
    if not allowzero:
        shape = [data.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return data.reshape(shape)


def flatten(x, *, axis=1):
    axis = axis + x.ndim if axis < 0 else axis
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


def squeeze(x, *, axes=None):
    if axes is None or len(axes) == 0:
        return np.squeeze(x)
    return np.squeeze(x, axis=_norm_axes(axes, x.ndim))


def unsqueeze(x, *, axes):
    return np.expand_dims(x, _norm_axes(axes, x.ndim + len(axes)))


def transpose(x, *, perm=None):
    return np.transpose(x, None if perm is None else _ints(perm))


def expand(x, shape):
    out = np.broadcast_shapes(x.shape, tuple(_ints(shape)))
    return np.broadcast_to(x, out).copy()


def tile(x, repeats):
    return np.tile(x, tuple(_ints(repeats)))


def pad(x, pads, constant_value=None, axes=None, *, mode="constant"):
    pads = _ints(pads)
    axes = _norm_axes(_ints(axes), x.ndim) if axes is not None else tuple(_range(x.ndim))
    k = len(axes)
    if len(pads) != 2 * k:
        raise ValueError("pads must have 2 entries per padded axis")
    width = [[0, 0] for _ in _range(x.ndim)]
    for j, ax in enumerate(axes):
        width[ax] = [pads[j], pads[j + k]]
    # Negative pads crop.
    crop = tuple(_slice(-_min(b, 0), x.shape[i] + _min(e, 0)) for i, (b, e) in enumerate(width))
    x = x[crop]
    width = [(_max(b, 0), _max(e, 0)) for b, e in width]
    if mode == "constant":
        cv = 0 if constant_value is None or not np.size(constant_value) else _scalar(constant_value)
        return np.pad(x, width, mode="constant", constant_values=cv)
    if mode in ("reflect", "edge", "wrap"):
        return np.pad(x, width, mode=mode)
    raise ValueError(f"unsupported pad mode {mode!r}")


def shape(x, *, start=0, end=None):
    return np.array(x.shape[start:end], dtype=np.int64)


def size(x):
    return np.array(x.size, dtype=np.int64)


def constant_of_shape(shape, *, value=None):
    dims = tuple(_ints(shape))
    if value is None:
        return np.zeros(dims, dtype=np.float32)
    value = np.asarray(value)
    return np.full(dims, value.reshape(-1)[0], dtype=value.dtype)


def range(start, limit, delta):  # noqa: A001 - op name
    start, limit, delta = _scalar(start), _scalar(limit), _scalar(delta)
    dtype = start.dtype
    if np.issubdtype(dtype, np.integer):
        s, l, d = int(start), int(limit), int(delta)
        n = _max(-(-(l - s) // d), 0)
    else:
        n = _max(math.ceil((float(limit) - float(start)) / float(delta)), 0)
    return (start + np.arange(n, dtype=dtype) * delta).astype(dtype, copy=False)


def depth_to_space(x, *, blocksize, mode="DCR"):
    n, c, h, w = x.shape
    b = blocksize
    if mode == "DCR":
        t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // (b * b), h * b, w * b)


def space_to_depth(x, *, blocksize):
    n, c, h, w = x.shape
    b = blocksize
    t = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return t.reshape(n, c * b * b, h // b, w // b)


# -- Resize ------------------------------------------------------------------


def resize(x, **attrs):
    """graph.resize: per axis, the weighted sum of its taps (g.resize_taps) in float64, then
    the extrapolation value where a tf_crop_and_resize coordinate leaves the input; cast back
    as onnx does (integers rounded and saturated)."""
    attrs = {**g.ResizeOp.props_to_py(g.ResizeOp.attrs_to_props(attrs))}
    out = x.astype(np.float64)
    for axis in _range(x.ndim):
        taps = g.resize_taps(attrs, x.shape, axis)
        if taps is None:
            continue
        idx, coeffs, mask = taps
        picked = np.take(out, idx, axis=axis)
        out = (picked * coeffs.reshape((1,) * axis + coeffs.shape + (1,) * (x.ndim - axis - 1))).sum(axis=axis + 1)
        if mask is not None:
            out = np.where(mask.reshape((1,) * axis + (-1,) + (1,) * (x.ndim - axis - 1)),
                           attrs["extrapolation_value"], out)
    if np.issubdtype(x.dtype, np.integer):
        info = np.iinfo(x.dtype)
        out = np.clip(np.round(out), info.min, info.max)
    return out.astype(x.dtype)


def _reflect(v, lo, hi):
    """Fold coordinates outside [lo, hi] back in, as often as needed (GridSample)."""
    span = hi - lo
    if span <= 0:
        return np.full_like(v, lo)
    below, above = v < lo, v > hi
    dist = np.where(below, lo - v, v - hi)
    n = np.trunc(dist / span)
    rem = dist - n * span
    even = n % 2 == 0
    return np.where(below, np.where(even, lo + rem, hi - rem), np.where(above, np.where(even, hi - rem, lo + rem), v))


@_quiet
def grid_sample(x, grid, *, mode="linear", padding_mode="zeros", align_corners=0):
    n, c, dims = x.shape[0], x.shape[1], x.shape[2:]
    r = len(dims)
    g32 = grid.astype(np.float32).reshape(n, -1, r)
    per_dim = []  # (indices [N, P, T], weights [N, P, T]) of each spatial dim
    for d, size in enumerate(dims):
        v = g32[..., r - 1 - d]
        if align_corners:
            pos = (v + np.float32(1)) / np.float32(2) * np.float32(size - 1)
            lo, hi = 0.0, size - 1.0
        else:
            pos = ((v + np.float32(1)) * np.float32(size) - np.float32(1)) / np.float32(2)
            lo, hi = -0.5, size - 0.5
        pos = pos.astype(np.float64)
        if mode == "nearest":
            pos = np.rint(pos)
        outside = (pos < lo) | (pos > hi)
        if padding_mode == "border":
            pos = np.where(outside, np.clip(pos, 0, size - 1), pos)
        elif padding_mode == "reflection":
            pos = np.where(outside, _reflect(pos, lo, hi), pos)
        if mode == "nearest":
            idx, w = np.trunc(pos)[..., None].astype(np.int64), np.ones(pos.shape + (1,))
        else:
            base = np.floor(pos)
            t = pos - base
            if mode == "linear":
                idx, w = base[..., None] + np.arange(2), np.stack([1 - t, t], axis=-1)
            else:
                a = -0.75
                w = np.stack([((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
                              ((a + 2) * t - (a + 3)) * t * t + 1,
                              ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
                              ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a], axis=-1)
                idx = base[..., None] + np.arange(-1, 3)
            idx = idx.astype(np.int64)
        if padding_mode == "zeros":
            w = np.where((idx >= 0) & (idx < size), w, 0.0)
        elif padding_mode == "reflection":
            idx = np.trunc(_reflect(idx.astype(np.float64), lo, hi)).astype(np.int64)
        per_dim.append((np.clip(idx, 0, size - 1), w))
    flat = x.reshape(n, c, -1).astype(np.float64)
    strides = [int(np.prod(dims[d + 1:])) for d in _range(r)]
    out = np.zeros((n, c, g32.shape[1]))
    for taps in np.ndindex(*(w.shape[-1] for _, w in per_dim)):
        where_, weight = 0, 1.0
        for d, k in enumerate(taps):
            idx, w = per_dim[d]
            where_ = where_ + idx[..., k] * strides[d]
            weight = weight * w[..., k]
        picked = np.take_along_axis(flat, np.broadcast_to(where_[:, None, :], (n, c, where_.shape[1])), axis=2)
        out += weight[:, None, :] * picked
    return out.reshape((n, c, *grid.shape[1:-1])).astype(x.dtype)


def max_unpool(x, indices, *, kernel_shape, strides=None, pads=None, output_shape=None):
    attrs = {"kernel_shape": kernel_shape, "strides": strides, "pads": pads}
    inferred = g.unpool_shape(x.shape, attrs)
    y = np.zeros(int(np.prod(inferred)), x.dtype)
    flat = indices.reshape(-1).astype(np.int64)
    inside = (flat >= 0) & (flat < y.size)  # an index outside the unpooled tensor writes nothing
    y[flat[inside]] = x.reshape(-1)[inside]
    out = np.zeros(output_shape or inferred, x.dtype)
    out[tuple(_slice(0, d) for d in inferred)] = y.reshape(inferred)
    return out


def _roi_axis(start, size, bins, grid, length):
    """One axis of RoiAlign's samples: per (bin, sample) the low / high pixel, the weight of
    the high one and whether the sample is inside [-1, length]."""
    pos = start + np.arange(bins)[:, None] * (size / bins) + (np.arange(grid)[None, :] + 0.5) * (size / bins) / grid
    inside = (pos >= -1.0) & (pos <= length)
    pos = np.maximum(pos, 0.0)
    low = np.trunc(pos).astype(np.int64)
    edge = low >= length - 1
    low = np.where(edge, length - 1, low)
    high = np.where(edge, length - 1, low + 1)
    frac = np.where(edge, 0.0, pos - low)
    return low, high, frac, inside


@_quiet
def roi_align(x, rois, batch_indices, *, mode="avg", output_height=1, output_width=1, sampling_ratio=0,
              spatial_scale=1.0, coordinate_transformation_mode="half_pixel"):
    _, c, h, w = x.shape
    oh, ow = output_height, output_width
    half = coordinate_transformation_mode == "half_pixel"
    out = np.zeros((rois.shape[0], c, oh, ow))
    for r in _range(rois.shape[0]):
        x1, y1, x2, y2 = (float(v) * spatial_scale - (0.5 if half else 0.0) for v in rois[r])
        rw, rh = x2 - x1, y2 - y1
        if not half:
            rw, rh = _max(rw, 1.0), _max(rh, 1.0)
        gh = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rh / oh))
        gw = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rw / ow))
        if gh <= 0 or gw <= 0:
            continue
        ylo, yhi, ly, yin = _roi_axis(y1, rh, oh, gh, h)
        xlo, xhi, lx, xin = _roi_axis(x1, rw, ow, gw, w)
        plane = x[int(batch_indices[r])].astype(np.float64)  # [C, H, W]
        ok = (yin[:, :, None, None] & xin[None, None, :, :]).astype(np.float64)  # [oh, gh, ow, gw]
        hy, hx = 1.0 - ly, 1.0 - lx
        corners = [(ylo, xlo, hy, hx), (ylo, xhi, hy, lx), (yhi, xlo, ly, hx), (yhi, xhi, ly, lx)]
        terms = []
        for yi, xi, wy, wx in corners:
            v = plane[:, yi[:, :, None, None], xi[None, None, :, :]]  # [C, oh, gh, ow, gw]
            terms.append(v * (wy[:, :, None, None] * wx[None, None, :, :] * ok))
        if mode == "avg":
            out[r] = (terms[0] + terms[1] + terms[2] + terms[3]).sum(axis=(2, 4)) / _max(gh * gw, 1)
        else:
            out[r] = np.maximum.reduce(terms).max(axis=(2, 4))
    return out.astype(x.dtype)


@_quiet
def deform_conv(x, w, offset, b=None, mask=None, *, group=1, offset_group=1, pads=None, strides=None,
                dilations=None):
    n, ic, ih, iw = x.shape
    oc, icg, kh, kw = w.shape
    oh, ow = offset.shape[2:]
    pads = pads or (0, 0, 0, 0)
    sh, sw = strides or (1, 1)
    dh, dw = dilations or (1, 1)
    og, per_og = offset_group, ic // offset_group
    off = offset.astype(np.float64).reshape(n, og, kh, kw, 2, oh, ow)
    m = np.ones((n, og, kh, kw, oh, ow)) if mask is None else mask.astype(np.float64).reshape(n, og, kh, kw, oh, ow)
    ys = (-pads[0] + np.arange(oh) * sh)[:, None] + 0 * np.arange(ow)[None, :]
    xs = (-pads[1] + np.arange(ow) * sw)[None, :] + 0 * np.arange(oh)[:, None]
    y = ys[None, None, None, None] + (np.arange(kh) * dh)[None, None, :, None, None, None] + off[:, :, :, :, 0]
    xq = xs[None, None, None, None] + (np.arange(kw) * dw)[None, None, None, :, None, None] + off[:, :, :, :, 1]
    flat = x.astype(np.float64).reshape(n, ic, ih * iw)
    cols = np.zeros((n, ic, kh, kw, oh, ow))
    y0, x0 = np.floor(y), np.floor(xq)
    for cy in (0, 1):
        for cx in (0, 1):
            yi, xi = y0 + cy, x0 + cx
            weight = (1 - np.abs(y - yi)) * (1 - np.abs(xq - xi)) * ((yi >= 0) & (yi < ih) & (xi >= 0) & (xi < iw))
            at = (np.clip(yi, 0, ih - 1) * iw + np.clip(xi, 0, iw - 1)).astype(np.int64)  # [n, og, kh, kw, oh, ow]
            for gi in _range(og):
                chans = flat[:, gi * per_og:(gi + 1) * per_og]
                idx = np.broadcast_to(at[:, gi].reshape(n, 1, -1), (n, per_og, at[:, gi].size // n))
                vals = np.take_along_axis(chans, idx, axis=2).reshape(n, per_og, kh, kw, oh, ow)
                cols[:, gi * per_og:(gi + 1) * per_og] += vals * (weight[:, gi] * m[:, gi])[:, None]
    out = np.zeros((n, oc, oh, ow))
    ocg = oc // group
    for gi in _range(group):
        out[:, gi * ocg:(gi + 1) * ocg] = np.einsum("nckhij,ockh->noij", cols[:, gi * icg:(gi + 1) * icg],
                                                   w[gi * ocg:(gi + 1) * ocg].astype(np.float64))
    if b is not None:
        out += b.astype(np.float64).reshape(1, -1, 1, 1)
    return out.astype(x.dtype)


def col2im(x, *, image_shape, block_shape, strides=None, pads=None, dilations=None):
    attrs = {"image_shape": image_shape, "block_shape": block_shape, "strides": strides, "pads": pads,
             "dilations": dilations}
    r = len(image_shape)
    strides, dilations = strides or (1,) * r, dilations or (1,) * r
    pads = pads or (0,) * (2 * r)
    blocks = g.col2im_blocks(attrs)
    n, rows = x.shape[0], x.shape[1]
    c = rows // int(np.prod(block_shape))
    padded = np.zeros((n, c, *(image_shape[i] + pads[i] + pads[r + i] for i in _range(r))), x.dtype)
    cols = x.reshape(n, c, *block_shape, *blocks)
    for k in np.ndindex(*block_shape):
        for b in np.ndindex(*blocks):
            at = tuple(b[i] * strides[i] + k[i] * dilations[i] for i in _range(r))
            padded[(_slice(None), _slice(None), *at)] += cols[(_slice(None), _slice(None), *k, *b)]
    return padded[(_slice(None), _slice(None), *(_slice(pads[i], pads[i] + image_shape[i]) for i in _range(r)))]


def dropout(x, ratio=None, training_mode=None, *, seed=None):
    return x


# ---------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------


def trans_data(x, *, src_format, dst_format, origin_format=None, shape=None):
    """Reorder `x` from `src_format` to `dst_format` (dialects/formats.py): blocked channels
    are zero-padded, padding is dropped on the way back. `origin_format` and `shape` are
    the logical tensor's (given by the interpreter from the types); for a plain operand
    they default to `src_format` (if NCHW/NHWC) and `x.shape`."""
    from geir.dialects import formats

    origin = origin_format or (src_format if src_format in (formats.NCHW, formats.NHWC) else formats.ND)
    if origin == formats.ND and x.ndim == 4 and dst_format in formats.FOUR_D:
        origin = formats.NCHW
    if shape is None:
        if src_format not in (formats.ND, origin):
            raise ValueError(f"converting from {src_format} needs the logical shape")
        shape = x.shape
    logical = formats.to_logical(x, src_format, origin, shape)
    return formats.to_physical(logical, dst_format, origin)


# ---------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------

def _as_array(fn):
    # NumPy ufuncs return scalars, not 0-d arrays, for 0-d operands; every
    # kernel must return ndarrays (or a tuple of them).
    @functools.wraps(fn)
    def kernel(*args, **kwargs):
        r = fn(*args, **kwargs)
        return r if isinstance(r, (np.ndarray, tuple)) else np.asarray(r)

    return kernel


def _at_operand_precision(fn):
    """`fn` computing an f16 / bf16 op in f32: the op's type is its first float operand's
    (ONNX's type constraints: the other float operands have it too, but for an exponent);
    when that is f16 or bf16, every f16 / bf16 operand goes in as f32 and every float result
    comes back rounded once to that type. Other ops call `fn` as they are."""

    @functools.wraps(fn)
    def kernel(*args, **kwargs):
        target = next((np.asarray(a).dtype for a in args if a is not None and is_float_dtype(np.asarray(a).dtype)), None)
        if target is None or not is_low_precision(target):
            return fn(*args, **kwargs)
        wide = [np.asarray(a).astype(np.float32) if a is not None and is_low_precision(np.asarray(a).dtype) else a
                for a in args]
        out = fn(*wide, **kwargs)

        def narrow(r):
            r = np.asarray(r)
            return r.astype(target) if is_float_dtype(r.dtype) and r.dtype != target else r

        return tuple(map(narrow, out)) if isinstance(out, tuple) else narrow(out)

    return kernel


_OWN_TYPES = frozenset({g.CastOp, g.ShapeOp, g.SizeOp, g.BitCastOp})
# Indexing ops that copy or select values, computing none: exact in their own type, and not
# widened (an f16 KV cache scattered into is not copied to f32 and back). Scatter add / mul
# widen themselves (_scatter_rows). The softmaxes round at each vector step (_vector_steps).
_OWN_TYPES |= {g.ScatterElementsOp, g.ScatterNdOp, g.GatherNdOp, g.TopKOp, g.ReverseSequenceOp, g.TensorScatterOp}
_OWN_TYPES |= {g.SoftmaxOp, g.SafeSoftmaxOp, g.LogSoftmaxOp}
"""Ops whose result type is not their operand's, or that round in steps: they keep their own rule."""

# -- collectives between device ranks (reference/collectives.py) ---------------------------


def all_reduce(x, *, ranks, reduction="sum"):
    comm, rank = require(g.AllReduceOp.name)
    return comm.all_reduce(rank, np.asarray(x), ranks, reduction)


def all_gather(x, *, ranks, axis=0):
    comm, rank = require(g.AllGatherOp.name)
    return comm.all_gather(rank, np.asarray(x), ranks, axis % np.ndim(x))


def reduce_scatter(x, *, ranks, axis=0, reduction="sum"):
    comm, rank = require(g.ReduceScatterOp.name)
    return comm.reduce_scatter(rank, np.asarray(x), ranks, axis % np.ndim(x), reduction)


def send(x, *, peer):
    comm, rank = require(g.SendOp.name)
    comm.send(rank, np.asarray(x), peer)
    return ()


def recv(*, peer):
    comm, rank = require(g.RecvOp.name)
    return comm.recv(rank, peer)


def all_to_all(x, *, ranks, split_axis=0, concat_axis=0):
    comm, rank = require(g.AllToAllOp.name)
    return comm.all_to_all(rank, np.asarray(x), ranks, split_axis % np.ndim(x), concat_axis % np.ndim(x))


REFERENCE: dict[type[g.GraphOp], Callable] = {
    op_type: _as_array(fn if op_type in _OWN_TYPES else _at_operand_precision(fn))
    for op_type, fn in {
        g.ReluOp: relu,
        g.SigmoidOp: sigmoid,
        g.TanhOp: tanh,
        g.ErfOp: erf,
        g.ExpOp: exp,
        g.LogOp: log,
        g.SqrtOp: sqrt,
        g.ReciprocalOp: reciprocal,
        g.NegOp: neg,
        g.AbsOp: abs,
        g.LogicalNotOp: logical_not,
        g.SignOp: sign,
        g.FloorOp: floor,
        g.CeilOp: ceil,
        g.RoundOp: round,
        g.SinOp: sin,
        g.CosOp: cos,
        g.SoftplusOp: softplus,
        g.SoftsignOp: softsign,
        g.IdentityOp: identity,
        g.LeakyReluOp: leaky_relu,
        g.EluOp: elu,
        g.SeluOp: selu,
        g.HardSigmoidOp: hard_sigmoid,
        g.HardSwishOp: hard_swish,
        g.GeluOp: gelu,
        g.ShrinkOp: shrink,
        g.CeluOp: celu,
        g.MishOp: mish,
        g.ThresholdedReluOp: thresholded_relu,
        # elementwise, integer and scan ops
        g.AcosOp: acos, g.AcoshOp: acosh, g.AsinOp: asin, g.AsinhOp: asinh, g.AtanOp: atan,
        g.AtanhOp: atanh, g.TanOp: tan, g.CoshOp: cosh, g.SinhOp: sinh,
        g.IsNanOp: is_nan, g.IsInfOp: is_inf,
        g.BitwiseAndOp: bitwise_and, g.BitwiseOrOp: bitwise_or, g.BitwiseXorOp: bitwise_xor,
        g.BitwiseNotOp: bitwise_not, g.BitShiftOp: bit_shift, g.BitCastOp: bitcast,
        g.CumSumOp: cum_sum, g.CumProdOp: cum_prod,
        g.AddOp: add,
        g.SubOp: sub,
        g.MulOp: mul,
        g.DivOp: div,
        g.PowOp: pow,
        g.ModOp: mod,
        g.EqualOp: equal,
        g.LessOp: less,
        g.GreaterOp: greater,
        g.LessOrEqualOp: less_or_equal,
        g.GreaterOrEqualOp: greater_or_equal,
        g.LogicalAndOp: logical_and,
        g.LogicalOrOp: logical_or,
        g.LogicalXorOp: logical_xor,
        g.PReluOp: prelu,
        g.CastOp: cast,
        g.QuantizeOp: quantize,
        g.DequantizeOp: dequantize,
        g.RequantizeOp: requantize,
        g.SumOp: sum,
        g.MeanOp: mean,
        g.MaxOp: max,
        g.MinOp: min,
        g.WhereOp: where,
        g.ClipOp: clip,
        g.ConvOp: conv,
        g.ConvTransposeOp: conv_transpose,
        g.MaxPoolOp: max_pool,
        g.AvgPoolOp: avg_pool,
        g.GlobalAvgPoolOp: global_avg_pool,
        g.GlobalMaxPoolOp: global_max_pool,
        g.BatchNormOp: batch_norm,
        g.InstanceNormOp: instance_norm,
        g.LayerNormOp: layer_norm,
        g.RmsNormOp: rms_norm,
        g.RotaryEmbeddingOp: rotary_embedding,
        g.KvCacheWriteOp: kv_cache_write,
        g.LrnOp: lrn,
        g.SoftmaxOp: softmax,
        g.SafeSoftmaxOp: safe_softmax,
        g.AllReduceOp: all_reduce,
        g.AllGatherOp: all_gather,
        g.ReduceScatterOp: reduce_scatter,
        g.AllToAllOp: all_to_all,
        g.SendOp: send,
        g.RecvOp: recv,
        g.LogSoftmaxOp: log_softmax,
        g.MatMulOp: matmul,
        g.GemmOp: gemm,
        g.AttentionOp: attention,
        g.CausalMaskOp: causal_mask,
        g.ReduceSumOp: reduce_sum,
        g.ReduceMeanOp: reduce_mean,
        g.ReduceMaxOp: reduce_max,
        g.ReduceMinOp: reduce_min,
        g.ReduceProdOp: reduce_prod,
        g.ReduceL1Op: reduce_l1,
        g.ReduceL2Op: reduce_l2,
        g.ReduceSumSquareOp: reduce_sum_square,
        g.ReduceLogSumOp: reduce_log_sum,
        g.ReduceLogSumExpOp: reduce_log_sum_exp,
        g.ArgMaxOp: arg_max,
        g.ArgMinOp: arg_min,
        g.ConcatOp: concat,
        g.SplitOp: split,
        g.SliceOp: slice,
        g.GatherOp: gather,
        g.GatherElementsOp: gather_elements,
        # indexing
        g.ScatterElementsOp: scatter_elements,
        g.ScatterNdOp: scatter_nd,
        g.GatherNdOp: gather_nd,
        g.TopKOp: top_k,
        g.EinsumOp: einsum,
        g.ReverseSequenceOp: reverse_sequence,
        g.TensorScatterOp: tensor_scatter,
        g.ReshapeOp: reshape,
        g.FlattenOp: flatten,
        g.SqueezeOp: squeeze,
        g.UnsqueezeOp: unsqueeze,
        g.TransposeOp: transpose,
        g.ExpandOp: expand,
        g.TileOp: tile,
        g.PadOp: pad,
        g.ShapeOp: shape,
        g.SizeOp: size,
        g.ConstantOfShapeOp: constant_of_shape,
        g.RangeOp: range,
        g.DepthToSpaceOp: depth_to_space,
        g.SpaceToDepthOp: space_to_depth,
        g.ResizeOp: resize,
        g.GridSampleOp: grid_sample,
        g.MaxUnpoolOp: max_unpool,
        g.Col2ImOp: col2im,
        g.RoiAlignOp: roi_align,
        g.DeformConvOp: deform_conv,
        g.DropoutOp: dropout,
        g.TransDataOp: trans_data,
    }.items()
}
"""The reference semantics of each graph op, by op class."""


def reference_of(op: Operation | type[Operation]) -> Callable:
    """The numpy function computing `op` (an op or its class): operands in, results out."""
    kind = op if isinstance(op, type) else type(op)
    fn = REFERENCE.get(kind)
    if fn is None:
        raise KeyError(f"{kind.name} has no reference semantics")
    return fn
