"""Calibration statistics of a tensor, and the ranges the methods make of them.

`TensorStats` holds what calibration measures of one activation over every sample: the count,
min, max and a histogram of |x| (2048 bins, as TensorRT's). Stats **merge**: calibration may
run in shards and `a.merge(b)` equals the stats of both shards' samples, **exactly** and in any
order. That is what the histogram's range is chosen for: it is the power of two just above
max|x| (`2**e` with max|x| < 2**e), so the bins of two ranges nest (one bin of range 2R is two
bins of range R, also at the floats' level: x * 2048 / R is exact when R is a power of two) and a
histogram re-binned to a wider range is the histogram that range would have given. The counts
are integers, the min and max are exact, so no sum depends on the order.

A method turns stats into a threshold T, the largest |x| the int8 range represents:

* `minmax`: T = max|x| (keeps every outlier);
* `percentile`: the upper edge of the bin where the cumulative count reaches p% of the
  elements (99.99 by default), at most max|x|;
* `entropy`: TensorRT's search: for each candidate i (from the number of levels to 2048 bins),
  the reference P = hist[:i] with the outliers hist[i:] added to its last bin, and Q = hist[:i]
  merged into as many levels and spread back over its non-zero bins; T = the upper edge of the
  bin i with the least KL(P || Q) (the widest of equals). Bin 0 counts as bin 1 does, so the
  zeros of a ReLU do not decide the range;
* `mse`: the bin edge T minimising the expected squared quantization error of the histogram
  (its bin centres, rounded to the grid of step T / levels, clipped at T).

A non-negative tensor (min >= 0, e.g. after a ReLU) takes [0, T] on all 256 int8 levels: scale
T / 255 and zero point -128; any other tensor [-T, T] symmetric: scale T / 127, zero point 0.
The entropy search uses 128 levels for a signed tensor (TensorRT's) and 256 for a non-negative
one, the mse search the quantizer's own 127 / 255 steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from geir.errors import GeirError

BINS = 2048
METHODS = ("minmax", "percentile", "entropy", "mse")
DEFAULT_METHOD = "entropy"
DEFAULT_PERCENTILE = 99.99


class CalibrationError(GeirError):
    pass


def check_method(method: str, percentile: float = DEFAULT_PERCENTILE) -> None:
    if method not in METHODS:
        raise CalibrationError(f"unknown calibration method '{method}'; methods: {', '.join(METHODS)}")
    if not 0 < percentile <= 100:
        raise CalibrationError(f"the percentile must be in (0, 100], got {percentile}")


def _range_above(amax: float) -> float:
    """The power of two just above amax (strictly: amax lands in a bin, not on the end)."""
    _, e = np.frexp(amax)  # amax = m * 2**e, 0.5 <= m < 1
    return float(np.ldexp(1.0, int(e)))


def _rebinned(hist: np.ndarray, factor: int) -> np.ndarray:
    """A histogram over a range `factor` (a power of two) times wider: bins sum in groups."""
    if factor == 1:
        return hist
    if factor >= BINS:
        out = np.zeros(BINS, np.int64)
        out[0] = hist.sum()
        return out
    out = np.zeros(BINS, np.int64)
    out[: BINS // factor] = hist.reshape(BINS // factor, factor).sum(axis=1)
    return out


@dataclass
class TensorStats:
    """count, min, max and a 2048-bin histogram of |x| over [0, hist_range)."""

    count: int = 0
    min: float = np.inf
    max: float = -np.inf
    hist_range: float = 0.0  # a power of two; 0 while every value seen is 0
    hist: np.ndarray = field(default_factory=lambda: np.zeros(BINS, np.int64))

    def add(self, x: np.ndarray) -> TensorStats:
        """Take in one batch of values (in place; returns self)."""
        self.merge(TensorStats.of(x), into_self=True)
        return self

    @classmethod
    def of(cls, x: np.ndarray) -> TensorStats:
        a = np.asarray(x, np.float64).ravel()
        if a.size and not np.isfinite(a).all():
            raise CalibrationError("calibration met a non-finite value (inf or NaN) in an activation")
        if a.size == 0:
            return cls()
        a_abs = np.abs(a)
        amax = float(a_abs.max())
        rng = _range_above(amax) if amax > 0 else 0.0
        hist = np.zeros(BINS, np.int64)
        if rng > 0:
            idx = np.minimum((a_abs * (BINS / rng)).astype(np.int64), BINS - 1)
            hist = np.bincount(idx, minlength=BINS).astype(np.int64)
        else:
            hist[0] = a.size
        return cls(a.size, float(a.min()), float(a.max()), rng, hist)

    def merge(self, other: TensorStats, into_self: bool = False) -> TensorStats:
        """The stats of both sets of values: exact and order-independent (module docstring)."""
        rng = max(self.hist_range, other.hist_range)

        def at(s: TensorStats) -> np.ndarray:
            if s.hist_range == 0:  # only zeros (or nothing): all in bin 0 at any range
                return s.hist
            return _rebinned(s.hist, int(rng / s.hist_range))

        merged = TensorStats(self.count + other.count, min(self.min, other.min), max(self.max, other.max),
                             rng, at(self) + at(other))
        if into_self:
            self.__dict__.update(merged.__dict__)
            return self
        return merged

    @property
    def amax(self) -> float:
        return max(abs(self.min), abs(self.max)) if self.count else 0.0

    @property
    def non_negative(self) -> bool:
        return self.count > 0 and self.min >= 0

    def __eq__(self, other) -> bool:
        return (isinstance(other, TensorStats) and (self.count, self.min, self.max, self.hist_range)
                == (other.count, other.min, other.max, other.hist_range) and np.array_equal(self.hist, other.hist))


def threshold(stats: TensorStats, method: str, percentile: float = DEFAULT_PERCENTILE) -> float:
    """T: the largest |x| the int8 range represents, by `method` (module docstring)."""
    check_method(method, percentile)
    amax = stats.amax
    if amax == 0 or method == "minmax":
        return amax
    width = stats.hist_range / BINS
    if method == "percentile":
        cdf = np.cumsum(stats.hist)
        i = int(np.searchsorted(cdf, cdf[-1] * percentile / 100.0))
        return min((i + 1) * width, amax)
    if method == "entropy":
        return min(_entropy_bins(stats.hist, 256 if stats.non_negative else 128) * width, amax)
    return min(_mse_bins(stats.hist, 255 if stats.non_negative else 127) * width, amax)


def _entropy_bins(hist: np.ndarray, levels: int) -> int:
    """TensorRT's KL search: the number of bins i kept whose quantization to `levels` levels
    loses the least information about the whole distribution."""
    hist = hist.astype(np.float64)
    # A ReLU's zeros are exact at any threshold; left in, their spike in bin 0 would dominate the
    # divergence. Bin 0 counts as its neighbour does (pytorch-quantization's rule).
    hist[0] = hist[1]
    if not hist.any():
        return 1
    top = int(np.nonzero(hist)[0].max()) + 1
    if top <= levels:  # fewer occupied bins than levels: nothing to gain by clipping
        return top
    suffix = np.cumsum(hist[::-1])[::-1]  # suffix[i] = hist[i:].sum()
    best, best_kl = top, np.inf
    for i in range(levels, top + 1):
        p = hist[:i].copy()
        if i < BINS:
            p[-1] += suffix[i]
        nonzero = hist[:i] != 0
        starts = (np.arange(levels) * i) // levels
        sums = np.add.reduceat(hist[:i], starts)
        counts = np.add.reduceat(nonzero.astype(np.float64), starts)
        lengths = np.diff(np.append(starts, i))
        q = np.repeat(np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0), lengths) * nonzero
        kl = _kl(p, q)
        if kl <= best_kl:  # ties: the widest range
            best, best_kl = i, kl
    return best


def _kl(p: np.ndarray, q: np.ndarray, eps: float = 1e-4) -> float:
    """KL(P || Q) of two unnormalised histograms, Q's empty bins where P has mass smoothed
    with eps (as TensorRT / MXNet do) so that the divergence stays finite."""
    p = p / p.sum()
    q = np.where((q == 0) & (p > 0), eps * q.sum() if q.sum() else eps, q)
    q = q / q.sum()
    m = p > 0
    return float(np.sum(p[m] * np.log(p[m] / q[m])))


def _mse_bins(hist: np.ndarray, steps: int) -> int:
    """The number of bins i whose upper edge, as T, minimises the histogram's squared error
    quantizing to `steps` steps of T / steps (values above T clip to T)."""
    occupied = np.nonzero(hist)[0]
    counts = hist[occupied].astype(np.float64)
    centres = occupied + 0.5  # in units of one bin
    top = int(occupied.max()) + 1
    best, best_err = top, np.inf
    for chunk in np.array_split(np.arange(1, top + 1), max(1, top // 256)):
        t = chunk[:, None].astype(np.float64)
        step = t / steps
        q = np.minimum(np.rint(centres[None, :] / step), steps) * step
        err = ((centres[None, :] - q) ** 2 * counts[None, :]).sum(axis=1)
        k = int(np.argmin(err))
        if err[k] < best_err:
            best, best_err = int(chunk[k]), float(err[k])
    return best


@dataclass(frozen=True)
class QuantParams:
    """An activation's int8 parameters: [0, T] or [-T, T] on the int8 grid."""

    scale: float
    zero_point: int
    threshold: float


def activation_params(stats: TensorStats, method: str, percentile: float = DEFAULT_PERCENTILE) -> QuantParams:
    t = threshold(stats, method, percentile)
    if stats.non_negative:
        scale, zero = t / 255.0, -128
    else:
        scale, zero = t / 127.0, 0
    # a tensor of zeros: any scale represents it exactly; 1 keeps the division finite
    return QuantParams(float(np.float32(scale)) if scale > 0 else 1.0, zero, t)
