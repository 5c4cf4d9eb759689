"""The target: device specs (devices/*.json), the cost model and the kernels' op info."""
