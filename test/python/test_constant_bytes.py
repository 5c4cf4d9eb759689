"""The bytes a constant stores (ir/types.py dense_bytes, c_order) and the splat test of
graph-fold-constants (is_splat): the fast paths give what the plain numpy forms give."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from geir.ir import types
from geir.ir.types import TRANSPOSE_TILE, c_order, dense_bytes
from geir.passes.graph.fold_constants import is_splat

RNG = np.random.default_rng(0)
BIG = 3 * TRANSPOSE_TILE + 5  # tiles with ragged edges on both axes


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.int64])
@pytest.mark.parametrize("view", ["transpose", "swap_last_two", "strided", "contiguous", "broadcast_row"])
def test_dense_bytes_are_the_c_order_bytes_of_any_view(dtype, view):
    base = (RNG.standard_normal((2, BIG, BIG + 7)) * 50).astype(dtype)
    x = {"transpose": base[0].T, "swap_last_two": np.swapaxes(base, -1, -2), "strided": base[:, ::2, ::3],
         "contiguous": base, "broadcast_row": np.broadcast_to(base[0, :1], (BIG, BIG + 7))}[view]
    assert dense_bytes(x) == np.ascontiguousarray(x).tobytes()


def test_a_transposed_weight_is_copied_in_tiles(monkeypatch):
    """The transposed view takes the tiled copy (the large case a folded linear weight makes);
    a C-ordered array and a small transpose do not."""
    w = RNG.standard_normal((BIG, 2 * BIG)).astype(np.float32)
    copies = []
    real_empty = np.empty
    monkeypatch.setattr(types.np, "empty", lambda *a, **k: copies.append(a[0]) or real_empty(*a, **k))
    assert np.array_equal(c_order(w.T), w.T) and copies == [(2 * BIG, BIG)]
    c_order(w)
    c_order(w[:8, :8].T)
    assert copies == [(2 * BIG, BIG)]


def test_c_order_keeps_zero_d_arrays():
    x = np.asarray(np.float32(3.5))
    assert c_order(x).shape == () and dense_bytes(x) == x.tobytes()


@pytest.mark.parametrize("where", [1, 17, 4095, -1])
def test_one_differing_element_is_not_a_splat(where):
    """Wherever the one different element sits (sampled or not), the array is no splat."""
    x = np.full(4096, 0.25, np.float32)
    x[where] = -0.25
    assert not is_splat(x) and not is_splat(x.reshape(64, 64).T)


def test_splats():
    assert is_splat(np.full((64, 65), -0.0, np.float32))
    assert not is_splat(np.array([0.0, -0.0], np.float32))  # the same value, other bits
    assert not is_splat(np.ones(1, np.float32))
