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


XDSL_SUMMARIES = {
    "cse": "Eliminate common subexpressions (xDSL's pass): an op equal to one that dominates it "
    "(same name, operands, properties and attributes, no side effects) is replaced by it.",
    "dce": "Remove the ops without side effects whose results are unused (xDSL's pass).",
}
"""What xDSL's passes do: they have no docstring."""


@cache
def _discovered() -> dict[str, type[ModulePass]]:
    found: dict[str, type[ModulePass]] = {}
    for package_name in _PACKAGES:
        package = importlib.import_module(package_name)
        for info in pkgutil.iter_modules(package.__path__):
            if info.ispkg:  # e.g. lowering/templates: builders, not passes
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


def pass_summary(name: str, cls: type[ModulePass]) -> str:
    """What a pass does in one line: its docstring's first paragraph (a sentence or two,
    wrapped in the source) joined up."""
    if name in XDSL_SUMMARIES:
        return XDSL_SUMMARIES[name]
    doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
    if doc.startswith(cls.__name__ + "("):  # the signature dataclasses write as a docstring
        return ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def build_passes(spec: str, available: dict[str, Callable[[], type[ModulePass]]] | None = None) -> tuple[ModulePass, ...]:
    """The passes of a pipeline spec (xDSL syntax); unknown names and bad options are GeirErrors."""
    from xdsl.utils.arg_spec import parse_pipeline
    from xdsl.utils.exceptions import ArgSpecParseError

    from geir.errors import GeirError

    available = get_all_passes() if available is None else available
    try:
        specs = list(parse_pipeline(spec))
    except ArgSpecParseError as e:  # a BaseException in xDSL
        raise GeirError(str(e)) from None
    for s in specs:
        if s.name not in available:
            raise GeirError(f"unknown pass '{s.name}' (see --list-passes)")
    passes = []
    for s in specs:
        try:
            passes.append(available[s.name]().from_pass_spec(s))
        except (ValueError, TypeError) as e:
            raise GeirError(f"invalid options for pass '{s.name}': {e}") from e
    return tuple(passes)
