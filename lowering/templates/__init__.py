"""Kernel templates of the graph -> ascend lowering.

Each module exposes `try_build(req: KernelRequest) -> KernelOp | KernelChain | None` (None = "not
mine"; a chain: several kernels launched in order, `common.KernelChain`);
`build_kernel` asks `collective`, `cube`, `trans_data`, `attention`, `vector`, `kv_cache` and `data` in that order.
`common` holds the request, the builder and the tiling helpers; `reference` the fallback for
what no template handles yet.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from geir.dialects import ascend as a
from geir.lowering.templates.common import KernelChain, KernelRequest

BUILDERS = ("collective", "cube", "trans_data", "attention", "vector", "kv_cache", "data")


def _builders() -> list[Callable[[KernelRequest], a.KernelOp | KernelChain | None]]:
    found = []
    for name in BUILDERS:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:  # a template module not written yet
            if e.name != f"{__name__}.{name}":
                raise
            continue
        if hasattr(module, "try_build"):  # a template module being written
            found.append(module.try_build)
    return found


def build_kernel(req: KernelRequest) -> a.KernelOp | KernelChain | None:
    """The first template that builds the request, else None."""
    for try_build in _builders():
        kernel = try_build(req)
        if kernel is not None:
            return kernel
    return None
