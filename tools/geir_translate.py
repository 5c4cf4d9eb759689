"""geir-translate: convert between external formats and MLIR.

    geir-translate --import-onnx model.onnx -o model.mlir
    geir-translate --import-onnx model.onnx --elide-resources --no-debuginfo
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from geir.tools import common

PROG = "geir-translate"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Translate models to and from geir's MLIR.")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--import-onnx", action="store_true", help="ONNX model -> graph dialect")
    p.add_argument("input", nargs="?", default=common.STDIO, help="input file (default: stdin)")
    common.add_output_arg(p)
    common.add_print_args(p)
    common.add_debug_arg(p)
    return p


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    from geir.ir.text import print_module

    module = common.import_onnx(args.input)
    common.write_text(print_module(module, **common.print_options(args)), args.output)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_tool(lambda: _main(argv), PROG, argv)


if __name__ == "__main__":
    sys.exit(main())
