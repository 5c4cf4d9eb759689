"""Calibration statistics (driver/calibration.py): the histogram, its exact merge, and the ranges
each method makes of known distributions."""

from __future__ import annotations

import numpy as np
import pytest

from geir.driver.calibration import (
    BINS,
    METHODS,
    CalibrationError,
    TensorStats,
    activation_params,
    threshold,
)
from geir.passes.graph.quantize import weight_params

OUTLIERS = np.array([40.0, -35.0, 30.0, 50.0, -45.0])


def gaussian_with_outliers(n: int = 1_000_000, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(n)
    x[: len(OUTLIERS)] = OUTLIERS
    return x


def test_histogram_counts_every_value_below_a_power_of_two_range():
    x = np.array([0.0, 0.5, -1.0, 3.0, -2.99])
    s = TensorStats.of(x)
    assert (s.count, s.min, s.max, s.hist_range) == (5, -2.99, 3.0, 4.0)
    assert s.hist.sum() == 5 and s.hist.shape == (BINS,)
    assert s.hist[int(3.0 / 4.0 * BINS)] == 1  # 3.0 lands in its bin, not past the end


def test_merge_is_exact_and_order_independent():
    """Shards of very different ranges (the histogram is re-binned when a later batch widens
    it): any order and grouping of the merges gives the stats of all the values at once."""
    rng = np.random.default_rng(1)
    shards = [rng.standard_normal(1000) * scale for scale in (0.001, 1.0, 300.0, 0.02)]
    shards.append(np.maximum(rng.standard_normal(500), 0))
    whole = TensorStats.of(np.concatenate(shards))
    stats = [TensorStats.of(s) for s in shards]
    left = stats[0]
    for s in stats[1:]:
        left = left.merge(s)
    right = stats[-1]
    for s in reversed(stats[:-1]):
        right = s.merge(right)
    paired = stats[3].merge(stats[1]).merge(stats[4].merge(stats[0]).merge(stats[2]))
    assert left == whole and right == whole and paired == whole
    streamed = TensorStats()
    for s in shards:
        streamed.add(s)
    assert streamed == whole


def test_merge_with_nothing_or_zeros():
    x = np.random.default_rng(2).standard_normal(100)
    assert TensorStats().merge(TensorStats.of(x)) == TensorStats.of(x)
    zeros = TensorStats.of(np.zeros(7))
    assert zeros.merge(TensorStats.of(x)) == TensorStats.of(np.concatenate([np.zeros(7), x]))
    assert threshold(zeros, "entropy") == 0 and activation_params(zeros, "entropy").scale == 1.0


def test_minmax_keeps_outliers_the_others_clip_them():
    s = TensorStats.of(gaussian_with_outliers())
    assert threshold(s, "minmax") == 50.0
    for method in ("percentile", "entropy", "mse"):
        t = threshold(s, method)
        assert 3.0 < t < 30.0, (method, t)  # past the Gaussian's bulk, short of every outlier
    # the 99.99th percentile of |N(0, 1)| is 3.89; a bin is 64 / 2048 wide
    assert abs(threshold(s, "percentile") - 3.89) < 64 / BINS + 0.02
    assert threshold(s, "percentile", percentile=99.0) < threshold(s, "percentile")


def test_methods_on_a_uniform_distribution_keep_the_range():
    """Nothing to clip in a uniform distribution: every method ends near its edge."""
    s = TensorStats.of(np.random.default_rng(3).uniform(-1.5, 1.5, 200_000))
    for method in METHODS:
        assert threshold(s, method) == pytest.approx(1.5, rel=0.03), method


def test_mse_threshold_beats_its_neighbours():
    """The mse threshold's quantization error, measured on the values themselves, is no worse
    than that of minmax or of thresholds around it."""
    x = gaussian_with_outliers(200_000, seed=4)
    s = TensorStats.of(x)

    def error(t: float) -> float:
        step = t / 127
        return float(np.mean((x - np.clip(np.rint(x / step), -127, 127) * step) ** 2))

    t = threshold(s, "mse")
    assert error(t) < error(threshold(s, "minmax"))
    assert error(t) <= min(error(t * 0.8), error(t * 1.25)) * 1.01


def test_non_negative_tensors_use_all_256_levels():
    x = np.maximum(np.random.default_rng(5).standard_normal(10_000), 0)
    p = activation_params(TensorStats.of(x), "minmax")
    assert p.zero_point == -128 and p.scale == pytest.approx(x.max() / 255)
    q = activation_params(TensorStats.of(x - 0.01), "minmax")
    assert q.zero_point == 0 and q.scale == pytest.approx((x.max() - 0.01) / 127)


def test_unknown_method_and_bad_percentile():
    s = TensorStats.of(np.ones(3))
    with pytest.raises(CalibrationError, match="unknown calibration method 'kl'; methods: minmax, percentile"):
        threshold(s, "kl")
    with pytest.raises(CalibrationError, match="percentile must be in"):
        threshold(s, "percentile", percentile=0)


def test_non_finite_activations_are_an_error():
    with pytest.raises(CalibrationError, match="non-finite"):
        TensorStats.of(np.array([1.0, np.inf]))


def test_weights_per_output_channel():
    w = np.random.default_rng(6).standard_normal((8, 3, 3, 3)).astype(np.float32)
    w[2] = 0
    w_q, s = weight_params(w, 0)
    assert w_q.dtype == np.int8 and s.shape == (8, 1, 1, 1)
    expected = np.abs(w).max(axis=(1, 2, 3)) / 127
    expected[2] = 1.0
    np.testing.assert_allclose(s.reshape(-1), expected, rtol=1e-6)
    assert np.abs(w_q).reshape(8, -1).max(axis=1).tolist() == [127] * 2 + [0] + [127] * 5
    assert np.max(np.abs(w_q * s - w)) <= s.max() / 2 + 1e-7  # within half a step
    cols_q, cols = weight_params(w.reshape(8, 27).T.copy(), 1)  # a matmul's [K, N]: per column
    assert cols.shape == (8,)
