"""The package's structure, read from its sources (docs/architecture.md): facts about ops are
not restated as op-name strings outside dialects/, modules use each other's public names only,
and imports follow the data flow without cycles."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from geir.dialects.ascend import Ascend
from geir.dialects.graph import Graph
from geir.tools import import_graph as ig

ROOT = ig.ROOT
OP_NAME = re.compile(r"^(graph|ascend)\.[a-z_0-9]+$")
SHORT_NAMES = {op.name.split(".", 1)[1] for op in (*Graph.operations, *Ascend.operations)}


def _sources(include_bench: bool = True) -> list[Path]:
    """The package's sources and the benchmarks (users, but held to the same rule); not the tests,
    whose IR strings name ops on purpose, and not dialects/, which declares the names."""
    paths = list(ig.sources())
    if include_bench:
        paths += sorted((ROOT / "bench").glob("*.py"))
    return [p for p in paths if p.relative_to(ROOT).parts[0] != "dialects"]


def _trees() -> list[tuple[str, ast.AST]]:
    return [(str(p.relative_to(ROOT)), ast.parse(p.read_text(), str(p))) for p in _sources()]


def test_no_op_name_strings_outside_dialects():
    found = [f"{rel}:{node.lineno}: {node.value!r}" for rel, tree in _trees() for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and OP_NAME.match(node.value)]
    assert not found, "dispatch on op classes or traits, not names:\n" + "\n".join(found)


def _string_elements(node: ast.AST) -> list[str] | None:
    if isinstance(node, (ast.Set, ast.Tuple, ast.List)) and len(node.elts) >= 2:
        if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            return [e.value for e in node.elts]
    return None


def test_no_op_name_sets_outside_dialects():
    """A collection of bare op names ({"relu", "sigmoid"}) is an op family restated: it belongs in
    a trait or in target/op_info.py."""
    found = []
    for rel, tree in _trees():
        for node in ast.walk(tree):
            names = _string_elements(node)
            if names and len(set(names)) > 1 and all(n in SHORT_NAMES for n in names):
                found.append(f"{rel}:{node.lineno}: {names}")
    assert not found, "op families belong in traits or op info:\n" + "\n".join(found)


def test_the_checks_catch_what_they_look_for():
    """The two checks above on a snippet that breaks both (so they cannot pass vacuously)."""
    tree = ast.parse('VIEW = {"reshape", "flatten", "squeeze"}\nif op.name == "graph.relu": pass\n')
    assert any(OP_NAME.match(n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant))
    assert any((names := _string_elements(n)) and all(x in SHORT_NAMES for x in names) for n in ast.walk(tree))


def test_no_private_names_used_across_modules():
    """`from geir.x import _helper` or `module._helper` from another module: a helper two modules
    need is public, in the module that owns the fact."""
    found = []
    for rel, tree in _trees():
        aliases = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("geir"):
                for alias in node.names:
                    if alias.name.startswith("_"):
                        found.append(f"{rel}:{node.lineno}: from {node.module} import {alias.name}")
                    aliases.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                aliases.update(a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("geir"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                found.append(f"{rel}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not found, "\n".join(found)


@pytest.fixture(scope="module")
def modules() -> dict[str, set[str]]:
    return ig.module_graph()


def test_the_import_graph_sees_function_level_and_named_imports(modules):
    # driver/registry.py discovers the pass modules by name; driver/compile.py imports inside functions
    assert any(d.startswith("geir.passes") for d in modules["geir.driver.registry"])
    assert ig.package_of("geir.lowering.templates.cube.plan") == "lowering"


def test_no_cycle_between_packages(modules):
    graph = ig.package_graph(modules)
    assert ig.cycles(graph) == []
    assert ig.upward(graph) == [], "a package imports one after it in docs/architecture.md's table"


def test_compiler_layers_do_not_import_the_runtime(modules):
    graph = ig.package_graph(modules)
    for package in ("dialects", "target", "reference", "frontend", "passes", "lowering"):
        assert "runtime" not in graph.get(package, set()), package
        assert "driver" not in graph.get(package, set()), package


def test_no_cycle_between_modules(modules):
    assert ig.cycles(modules) == []


def test_cycles_are_found():
    assert ig.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert ig.upward({"dialects": {"runtime"}}) == [("dialects", "runtime")]


def test_the_architecture_page_shows_the_graph_as_it_is(modules):
    text = ig.DOCS.read_text()
    assert ig.render(ig.package_graph(modules)) in text, (
        "docs/architecture.md is stale: run python -m geir.tools.import_graph --update-docs")
    listed = {name for name, _ in ig.LAYERS}
    assert set(ig.package_graph(modules)) - {"__init__"} <= listed


def test_no_file_refers_outside_the_repository():
    """The product stands on its own: docs/ holds what a reader needs."""
    outside = re.compile(r"\.\./shared|DESIGN\.md|ascend-hardware\.md|STYLE\.md")
    found = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if not path.is_file() or {".git", "Output", "__pycache__"} & set(rel.parts) or ".egg-info" in str(rel):
            continue
        if path.suffix not in {".py", ".md", ".json", ".toml", ".cfg", ".mlir", ".test", ".txt", ""}:
            continue
        if path == Path(__file__):
            continue
        text = path.read_text(errors="replace")
        found += [f"{rel}: {m.group(0)}" for m in outside.finditer(text)]
    assert not found, "\n".join(found)
