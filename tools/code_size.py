"""The longest files and functions of the package (test/ and bench/ left out), to see where
code piles up.

    python -m geir.tools.code_size [--top 10]
"""

from __future__ import annotations

import argparse
import ast

from geir.tools.import_graph import ROOT, sources


def measure() -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(lines, file) and (lines, file:function), longest first."""
    files, functions = [], []
    for path in sources():
        rel = str(path.relative_to(ROOT))
        text = path.read_text()
        files.append((text.count("\n"), rel))
        for node in ast.walk(ast.parse(text, rel)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append((node.end_lineno - node.lineno + 1, f"{rel}:{node.name}"))
    return sorted(files, reverse=True), sorted(functions, reverse=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--top", type=int, default=10)
    args = p.parse_args(argv)
    files, functions = measure()
    print("files:", "; ".join(f"{name} {n}" for n, name in files[:args.top]))
    print("functions:", "; ".join(f"{name} {n}" for n, name in functions[:args.top]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
