"""A per-channel affine map y = x * a + c in numpy: what an inference batch norm is
(`batch_norm_affine`), and that map folded into the weights and bias of the conv before it
(`conv_weights_with_affine`). The reference batch norm (reference/graph.py), the
graph-fold-batchnorm pass and the FX importer's fold of a conv -> batch norm pair
(frontend/fx.py `FxImporter.batch_norm_fold`) all compute them here: one arithmetic, so a
folded program is the unfolded one up to the conv's rounding."""

from __future__ import annotations

import numpy as np


def batch_norm_affine(scale: np.ndarray, bias: np.ndarray, mean: np.ndarray, var: np.ndarray,
                      epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """(a, c) with batch_norm(x) = x * a + c per channel: a = scale / sqrt(var + eps),
    c = bias - mean * a, in the parameters' dtype."""
    with np.errstate(all="ignore"):  # a zero variance with eps 0: inf, as the batch norm gives
        a = scale / np.sqrt(var + np.asarray(epsilon, var.dtype))
        return a, bias - mean * a


def conv_weights_with_affine(w: np.ndarray, b: np.ndarray | None, a: np.ndarray,
                             c: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """A conv's weights [O, ...] and bias (None: zeros) with y * a + c per output channel
    folded in; None where that would change their dtype (a map of another precision)."""
    b = b if b is not None else np.zeros(w.shape[0], w.dtype)
    w2, b2 = w * a.reshape((-1,) + (1,) * (w.ndim - 1)), b * a + c
    return (w2, b2) if w2.dtype == w.dtype and b2.dtype == b.dtype else None
