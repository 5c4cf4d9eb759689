"""The import graph of geir's own sources: which package imports which, read from the code.

    python -m geir.tools.import_graph                # print the package graph and any cycle
    python -m geir.tools.import_graph --update-docs  # rewrite the generated part of docs/architecture.md

Every import that runs counts, function-level ones included (imports under `if TYPE_CHECKING:`
are for annotations and do not), and so does a module named by a string
(`importlib.import_module("geir.passes.graph")`, the pass registry's discovery), so the graph
is what can run, not only what the file header says. A package is a top-level directory of
the repository (`passes`, `lowering`, ...); a top-level module (`api.py`, `errors.py`) is its
own package. test/ and bench/ are users of the package, not part of it.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = {"test", "bench", "docs", "__pycache__", "Output", ".git", ".ci"}
DOCS = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- BEGIN tools/import_graph.py (generated) -->", "<!-- END tools/import_graph.py -->"

LAYERS = (
    ("errors", "the error types every layer raises"),
    ("ir", "IR helpers that know no geir dialect: locations, element types, symbolic dims (polynomials of named sizes), MLIR text with resource blobs, the binary form offline models load, the garbage collector paused while large structures are built"),
    ("dialects", "the graph and ascend dialects, their formats, op families (traits), symbolic shapes and their verifier, attribute names"),
    ("target", "the device specs, the cost model, op info (what each kernel template takes)"),
    ("reference", "the numpy semantics of every graph op"),
    ("frontend", "models into the graph dialect: the graph builder, the ONNX and core-ATen (PyTorch FX) importers built on it"),
    ("passes", "rewrites within one dialect: passes/graph, passes/ascend"),
    ("lowering", "graph -> ascend: bufferization and the kernel templates"),
    ("runtime", "the interpreters, the simulator, the report and trace"),
    ("driver", "pass registry, pipelines, compile, int8 calibration, offline models, the graph as ONNX, compare, the torch.compile backend"),
    ("api", "geir.compile / geir.load / geir.quantize"),
    ("models", "model builders on the graph builder: LLaMA prefill / decode and their LLM report, the TransformerBlock"),
    ("testing", "the model suite the tests and benchmarks share; the fuzzers and their oracles"),
    ("tools", "the command-line tools"),
)
"""The packages from the bottom up, with what each holds: a package imports only packages
listed before it (data flows frontend -> passes -> lowering -> runtime)."""


def sources() -> Iterator[Path]:
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if not SKIP & set(rel.parts):
            yield path


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(["geir", *parts])


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """geir modules `path` imports (resolved to modules that exist), at any depth, and geir
    modules it names in strings."""
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()

    def add(name: str) -> None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            out.add(name)

    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("geir"):
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("geir"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                add(full if full in known else node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in known:  # a module named in full, to be imported by name
                out.add(node.value)
    return out


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of `tree` but those under `if TYPE_CHECKING:` (imports for annotations
    only, which never run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def module_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in sources()}
    known = set(paths)
    return {m: imported_modules(p, known) - {m} for m, p in paths.items()}


def package_graph(modules: dict[str, set[str]] | None = None) -> dict[str, set[str]]:
    modules = module_graph() if modules is None else modules
    graph: dict[str, set[str]] = {}
    for m, deps in modules.items():
        src = package_of(m)
        graph.setdefault(src, set()).update(package_of(d) for d in deps if package_of(d) != src)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def render(graph: dict[str, set[str]]) -> str:
    """The package graph as a markdown table, bottom layer first."""
    order = [name for name, _ in LAYERS]
    rank = {name: i for i, name in enumerate(order)}
    rows = ["| package | holds | imports |", "|---|---|---|"]
    for name, what in LAYERS:
        deps = sorted(graph.get(name, set()), key=lambda d: rank.get(d, len(order)))
        rows.append(f"| `{name}` | {what} | {', '.join(f'`{d}`' for d in deps) or '-'} |")
    return "\n".join(rows)


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports of a package listed later in LAYERS (against the data flow)."""
    rank = {name: i for i, (name, _) in enumerate(LAYERS)}
    return sorted((a, b) for a, deps in graph.items() for b in deps
                  if a in rank and b in rank and rank[b] > rank[a])


def update_docs(graph: dict[str, set[str]]) -> None:
    text = DOCS.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOCS.write_text(f"{head}{BEGIN}\n{render(graph)}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--update-docs", action="store_true", help=f"rewrite the generated table in {DOCS.name}")
    args = p.parse_args(argv)
    graph = package_graph()
    print(render(graph))
    problems = [f"cycle between packages: {' <-> '.join(c)}" for c in cycles(graph)]
    problems += [f"{a} imports {b}, a later layer" for a, b in upward(graph)]
    for line in problems:
        print(line, file=sys.stderr)
    if args.update_docs:
        update_docs(graph)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
