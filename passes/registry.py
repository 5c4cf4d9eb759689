"""Every pass geir-opt can run, by name.

Passes are discovered: each module under passes/graph, passes/ascend and
lowering/ that defines an xDSL `ModulePass` subclass with a `name` registers
it, so adding a pass is adding one file. xDSL's generic cse and dce are
registered too.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from functools import cache

from xdsl.passes import ModulePass

_PACKAGES = ("geir.passes.graph", "geir.passes.ascend", "geir.lowering")


def _xdsl(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    return lambda: getattr(importlib.import_module(module), cls)


@cache
def _discovered() -> dict[str, type[ModulePass]]:
    found: dict[str, type[ModulePass]] = {}
    for package_name in _PACKAGES:
        package = importlib.import_module(package_name)
        for info in pkgutil.iter_modules(package.__path__):
            if info.ispkg:  # e.g. lowering/kernels: builders, not passes
                continue
            module = importlib.import_module(f"{package_name}.{info.name}")
            for _, obj in inspect.getmembers(module, inspect.isclass):
                if (
                    issubclass(obj, ModulePass)
                    and obj.__module__ == module.__name__
                    and isinstance(getattr(obj, "name", None), str)
                ):
                    if obj.name in found and found[obj.name] is not obj:
                        raise RuntimeError(f"two passes are named '{obj.name}'")
                    found[obj.name] = obj
    return found


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    passes: dict[str, Callable[[], type[ModulePass]]] = {
        "cse": _xdsl("xdsl.transforms.common_subexpression_elimination", "CommonSubexpressionElimination"),
        "dce": _xdsl("xdsl.transforms.dead_code_elimination", "DeadCodeElimination"),
    }
    for name, cls in _discovered().items():
        passes[name] = lambda cls=cls: cls
    return passes
