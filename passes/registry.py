"""Every pass geir-opt can run, by name (lazy imports keep start-up fast)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _xdsl(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        import importlib

        return getattr(importlib.import_module(module), cls)

    return load


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    passes: dict[str, Callable[[], type[ModulePass]]] = {
        # Generic xDSL passes that work on any dialect with Pure ops.
        "cse": _xdsl("xdsl.transforms.common_subexpression_elimination", "CommonSubexpressionElimination"),
        "dce": _xdsl("xdsl.transforms.dead_code_elimination", "DeadCodeElimination"),
    }
    return passes
