"""Print `name: close` or `name: DIFFERENT (max err)` for each array of two .npz files."""

import sys

import numpy as np

a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
for name in sorted(b.files):
    x, y = a[name], b[name]
    ok = x.shape == y.shape and np.allclose(x, y, rtol=1e-4, atol=1e-5)
    print(f"{name}: close" if ok else f"{name}: DIFFERENT ({np.max(np.abs(x - y)) if x.shape == y.shape else 'shape'})")
