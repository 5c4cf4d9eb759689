"""geir-translate: convert between external formats and MLIR.

    geir-translate --import-onnx model.onnx -o model.mlir
    geir-translate --import-onnx model.onnx --elide-resources --no-debuginfo
    geir-translate --export-onnx fused.mlir -o fused.onnx     # to look at in Netron
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
    mode.add_argument("--export-onnx", action="store_true",
                      help="graph-level MLIR -> ONNX for viewers such as Netron (a node per op or fusion, "
                      "named by its ONNX nodes; not runnable: the ops are geir's)")
    p.add_argument("input", nargs="?", default=common.STDIO, help="input file (default: stdin)")
    common.add_output_arg(p)
    common.add_print_args(p)
    common.add_debug_arg(p)
    return p


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    from geir.ir.text import print_module

    if args.export_onnx:
        from geir.driver.graph_onnx import graph_onnx

        module = common.parse_mlir(common.read_text(args.input), common.input_name(args.input))
        common.write_bytes(graph_onnx(module).SerializeToString(), args.output)
        return 0
    module = common.import_onnx(args.input)
    common.write_text(print_module(module, **common.print_options(args)), args.output)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_tool(lambda: _main(argv), PROG, argv)


if __name__ == "__main__":
    sys.exit(main())
