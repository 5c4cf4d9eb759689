"""geir-opt: run passes on MLIR text.

    geir-opt model.mlir -p 'cse,dce' -o out.mlir
    geir-opt model.mlir -p 'graph-fuse{max-ops=8}' --print-ir-after-change --timing
    geir-opt cases.mlir --split-input-file      # `// -----` separates independent inputs
    geir-opt model.mlir --view-op-graph=g.dot -o /dev/null && dot -Tsvg g.dot -o g.svg

Pipelines use xDSL's syntax (`xdsl.utils.arg_spec.parse_pipeline`) and run in an
`xdsl.passes.PassPipeline`; the passes are those of `geir.driver.registry`. The
module is verified after parsing and, unless `--no-verify-each`, after every pass.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline, get_pass_option_infos
from xdsl.utils.exceptions import DiagnosticException

from geir.errors import GeirError
from geir.driver.registry import build_passes, pass_summary
from geir.tools import common
from geir.dialects import make_context

PROG = "geir-opt"
SPLIT_MARKER = re.compile(r"^// -----[ \t]*$", re.MULTILINE)  # not \s*: it would swallow blank lines


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Run geir passes on MLIR text.")
    p.add_argument("input", nargs="?", default=common.STDIO, help="input .mlir file (default: stdin)")
    p.add_argument("-p", "--passes", default="", metavar="PIPELINE", help="e.g. 'cse,dce' or 'pass{opt=v}'")
    common.add_output_arg(p)
    p.add_argument("--list-passes", action="store_true", help="list the available passes and exit")
    p.add_argument(
        "--split-input-file", action="store_true", help="process each `// -----` chunk of the input on its own"
    )
    p.add_argument(
        "--verify-each",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="verify the module after every pass (default: on)",
    )
    dumps = p.add_argument_group("debugging")
    dumps.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass to stderr")
    dumps.add_argument(
        "--print-ir-after-change", action="store_true", help="print the IR to stderr after every pass that changed it"
    )
    dumps.add_argument("--timing", action="store_true", help="print the wall time of every step to stderr")
    dumps.add_argument(
        "--view-op-graph",
        nargs="?",
        const="-",
        metavar="FILE",
        help="after the pipeline, write the op graph as Graphviz DOT to FILE (default: stderr): "
        "the view-op-graph pass",
    )
    common.add_print_args(p)
    common.add_debug_arg(p)
    return p


# ---------------------------------------------------------------------------
# Passes
# ---------------------------------------------------------------------------


def list_passes(available: dict[str, Callable[[], type[ModulePass]]]) -> str:
    """One line per pass: name, summary (registry.pass_summary), options with defaults."""
    rows = []
    for name in sorted(available):
        cls = available[name]()
        options = " ".join(
            f"{o.name.replace('_', '-')}={o.default_value if o.default_value is not None else f'<{o.expected_type}>'}"
            for o in get_pass_option_infos(cls)
        )
        rows.append((name, pass_summary(name, cls), f"{{{options}}}" if options else ""))
    width = max((len(r[0]) for r in rows), default=0)
    lines = ["Available passes:"]
    lines += [f"  {n.ljust(width)}  {' '.join(x for x in (doc, opts) if x)}".rstrip() for n, doc, opts in rows]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Running a pipeline with dumps, verification and timing
# ---------------------------------------------------------------------------


@dataclass
class Timing:
    """Wall time per step, accumulated over all chunks."""

    rows: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, seconds: float) -> None:
        self.rows[name] = self.rows.get(name, 0.0) + seconds

    @contextmanager
    def step(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

    def report(self) -> str:
        """A table like MLIR's -mlir-timing."""
        total = sum(self.rows.values())
        bar = "===" + "-" * 73 + "==="
        lines = [
            bar,
            "... Execution time report ...".center(len(bar)).rstrip(),
            bar,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]
        for name, t in [*self.rows.items(), ("Total", total)]:
            share = 100.0 * t / total if total else 0.0
            lines.append(f"  {t:9.4f} ({share:5.1f}%)  {name}")
        return "\n".join(lines) + "\n"


@dataclass
class Runner:
    """Parses, verifies, transforms and prints one module at a time."""

    args: argparse.Namespace
    passes: tuple[ModulePass, ...]
    timing: Timing = field(default_factory=Timing)

    def print(self, module: ModuleOp) -> str:
        from geir.ir.text import print_module

        return print_module(module, **common.print_options(self.args))

    def process(self, text: str, name: str) -> str:
        """The printed result of the pipeline on MLIR text."""
        from geir.dialects import make_context

        ctx = make_context()
        with self.timing.step("parse"):
            module = common.parse_mlir(text, name, ctx, verify_it=False)
        with self.timing.step("verify"):
            common.verify(module)
        self.run_pipeline(ctx, module)
        with self.timing.step("print"):
            return self.print(module)

    def run_pipeline(self, ctx, module: ModuleOp) -> None:
        dumps = self.args.print_ir_after_all or self.args.print_ir_after_change
        last_text = self.print(module) if dumps and self.passes else None
        current: ModulePass | None = None
        start = time.perf_counter()

        def callback(prev: ModulePass | None, module: ModuleOp, next_: ModulePass | None) -> None:
            nonlocal current, start, last_text
            if prev is not None:
                self.timing.add(str(prev), time.perf_counter() - start)
                if dumps:  # before verifying: the dump shows what a pass broke
                    last_text = self.dump(prev, module, last_text)
                if self.args.verify_each:
                    with self.timing.step("verify"):
                        common.verify(module, after=str(prev))
            current, start = next_, time.perf_counter()

        try:
            PassPipeline(self.passes, callback).apply(ctx, module)
        except DiagnosticException as e:  # PassFailedException and other diagnostics
            raise GeirError(f"pass '{current}' failed: {e}") from e

    def dump(self, prev: ModulePass, module: ModuleOp, last_text: str | None) -> str:
        """Print the IR to stderr after `prev` (if it changed, for --print-ir-after-change)."""
        text = self.print(module)
        if self.args.print_ir_after_all or text != last_text:
            sys.stdout.flush()
            sys.stderr.write(f"// -----// IR Dump After {prev} //----- //\n{text}\n")
            sys.stderr.flush()
        return text


def split_chunks(text: str) -> list[str]:
    """The `// -----` chunks of a file, each padded with newlines so that
    error messages give line numbers in the whole file."""
    chunks, line = [], 0
    for chunk in SPLIT_MARKER.split(text):
        chunks.append("\n" * line + chunk)
        line += chunk.count("\n")
    return chunks


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    from geir.driver.registry import get_all_passes

    available = get_all_passes()
    if args.list_passes:
        common.write_text(list_passes(available), args.output)
        return 0
    passes = build_passes(args.passes, available)
    if args.view_op_graph:
        passes += (available["view-op-graph"]()(output=args.view_op_graph),)
    runner = Runner(args, passes)
    name = common.input_name(args.input)
    text = common.read_text(args.input)
    chunks = split_chunks(text) if args.split_input_file else [text]

    status, outputs = 0, []

    def emit(text: str) -> None:
        outputs.append(text)
        if args.output == common.STDIO:  # as it comes, in order with the errors
            common.write_text(text, common.STDIO)

    for i, chunk in enumerate(chunks):
        if i:
            emit("// -----\n")
        try:
            emit(runner.process(chunk, name))
        except Exception as e:
            if not args.split_input_file or args.debug or common.error_message(e) is None:
                raise
            status = common.report_error(PROG, e)  # go on with the next chunk
    if args.output != common.STDIO:
        common.write_text("".join(outputs), args.output)
    if args.timing:
        sys.stdout.flush()
        sys.stderr.write(runner.timing.report())
    return status


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_tool(lambda: _main(argv), PROG, argv)


if __name__ == "__main__":
    sys.exit(main())
