"""Plumbing shared by geir's command-line tools.

* Input and output: a path or `-` (stdin / stdout).
* Printing options shared by the tools that write MLIR (`--elide-resources`,
  `--no-debuginfo`, `--generic`).
* `verify`: a verifier whose failure is one short message naming the op, its
  location and the rule it breaks (xDSL's own report prints the whole module).
* `run_tool`: every user error becomes `PROG: error: <message>` on stderr and
  exit code 1, without a traceback unless `--debug` is given. Anything else is
  a bug in geir: `PROG: internal error: ...`, exit code 2.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.printer import Printer
from xdsl.utils.exceptions import (
    DiagnosticException,
    MultipleSpansParseError,
    ParseError,
    VerifyException,
)

from geir.errors import GeirError
from geir.ir.locations import describe
from geir.ir.text import source_location

STDIO = "-"
MAX_OP_LINE = 200
"""Characters of an op's printed line shown in a verifier error."""


# ---------------------------------------------------------------------------
# Input and output
# ---------------------------------------------------------------------------


def input_name(path: str | None) -> str:
    return "<stdin>" if path in (None, STDIO) else path


def read_text(path: str | None) -> str:
    """The text of a file, or of stdin for `-`."""
    if path in (None, STDIO):
        return sys.stdin.read()
    with open(path, encoding="utf-8") as f:
        return f.read()


def read_bytes(path: str | None) -> bytes:
    if path in (None, STDIO):
        return sys.stdin.buffer.read()
    with open(path, "rb") as f:
        return f.read()


def write_text(text: str, path: str | None) -> None:
    """Write to a file, or to stdout for `-`."""
    if path in (None, STDIO):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def write_bytes(data: bytes, path: str | None) -> None:
    """Write to a file, or to stdout for `-`."""
    if path in (None, STDIO):
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    with open(path, "wb") as f:
        f.write(data)


def progress_printer(prog: str, stream=None):
    """A `progress(stage, seconds)` callback printing one quiet line per stage, its name when
    it starts and its time when it ends, when `stream` (stderr) is a terminal; else None:
    nothing in logs and pipes."""
    stream = stream or sys.stderr
    if not stream.isatty():
        return None

    def progress(stage: str, seconds: float | None) -> None:
        if seconds is None:
            stream.write(f"{prog}: {stage} ...")
        else:
            stream.write(f" {seconds:.2f} s\n")
        stream.flush()

    return progress


def add_output_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", default=STDIO, metavar="FILE", help="output file (default: stdout)")


def add_print_args(parser: argparse.ArgumentParser) -> None:
    """The options of `geir.ir.text.print_module`."""
    group = parser.add_argument_group("printing")
    group.add_argument(
        "--elide-resources", action="store_true", help="print large constants as dense_resource<__elided__>"
    )
    group.add_argument("--no-debuginfo", action="store_true", help="do not print locations")
    group.add_argument("--generic", action="store_true", help="print ops in the generic form")


def print_options(args: argparse.Namespace) -> dict:
    """Keyword arguments for `print_module` from the options of `add_print_args`."""
    return {"elide": args.elide_resources, "debuginfo": not args.no_debuginfo, "generic": args.generic}


def add_debug_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debug", action="store_true", help="show a Python traceback on errors")


# ---------------------------------------------------------------------------
# Parsing and verification
# ---------------------------------------------------------------------------


def parse_mlir(text: str, name: str, ctx=None, *, verify_it: bool = True) -> ModuleOp:
    """Parse MLIR text and verify it; errors are ParseError or GeirError."""
    from geir.dialects import make_context
    from geir.ir.text import parse_module

    try:
        module = parse_module(text, ctx or make_context(), name)
    except ValueError as e:  # e.g. a resource blob that does not fit its type
        raise GeirError(f"{name}: {e}") from e
    if verify_it:
        verify(module)
    return module


def import_onnx(source, input_shapes=None) -> ModuleOp:
    """The verified graph-dialect module of an ONNX model: a ModelProto, a file
    or `-` (stdin); `input_shapes` for its dynamic input dims."""
    from geir.frontend.onnx import import_model

    if source in (None, STDIO):
        source, name = read_bytes(source), input_name(source)
        empty = not source
    elif isinstance(source, str):
        with open(source, "rb") as f:  # a missing file is "cannot open", whatever the importer says
            empty, name = not f.read(1), source
    else:
        empty = False
    if empty:  # protobuf reads no bytes as an empty model: the importer would talk of opsets
        raise GeirError(f"{name} is empty, not an ONNX model")
    module = import_model(source, input_shapes=input_shapes)
    verify(module)
    return module


def load_module(path: str | None) -> ModuleOp:
    """A verified module from a `.onnx` file (imported), an `.om` offline model or MLIR text."""
    if path not in (None, STDIO) and path.endswith(".onnx"):
        return import_onnx(path)
    if path not in (None, STDIO) and path.endswith(".om"):
        from geir.driver.dynamic_shapes import describe
        from geir.driver.om import load_om

        open(path, "rb").close()  # a missing file is "cannot open"
        from geir.driver.om import om_ranks

        ranks = om_ranks(path)
        if ranks is not None:
            raise GeirError(f"{path} holds {ranks['count']} ranks' programs ({ranks['kind']}): run them together with "
                            f"geir-run")
        _, module, _, gears = load_om(path)
        if gears is None:
            return module
        listed = " | ".join(describe(g) for g in gears["shapes"])
        raise GeirError(f"{path} holds {len(module)} gears ({listed}): run one with geir-run (the gear its "
                        f"--input shapes select, or --gear I)")
    return parse_mlir(read_text(path), input_name(path))


def verify(module: Operation, after: str | None = None) -> None:
    """Verify `module`; on failure raise GeirError naming the failing op.

    `after` names the pass that produced the IR, for the message."""
    context = f"pass '{after}' produced invalid IR: " if after else ""
    # Each op's own verifier first, innermost ops first (xDSL's order): its
    # error can then name the op without xDSL printing the whole module.
    for op in module.walk(region_first=True):
        try:
            op.verify_()
        except VerifyException as e:
            # where it is in the text it was parsed from (after a pass that may no longer hold)
            where = None if after else source_location(op)
            raise GeirError(context + (f"{where}: " if where else "") + op_error(op, str(e))) from e
    # Structural rules (terminators, parents); their messages name the op.
    try:
        module.verify()
    except VerifyException as e:
        raise GeirError(context + str(e)) from e


def op_error(op: Operation, message: str) -> str:
    """`'graph.add' at "node": <message>` and the op's printed line."""
    prefix = f"'{op.name}'"
    if message.startswith(prefix):
        message = message[len(prefix) :].lstrip(":").lstrip()
    return f"{describe(op)}: {message}\n  note: see current operation: {op_line(op)}"


def op_line(op: Operation) -> str:
    """The first line of the op printed on its own, in the generic form (like MLIR:
    a custom printer may rely on what the verifier just found broken)."""
    out = io.StringIO()
    Printer(stream=out, print_debuginfo=False, print_generic_format=True).print_op(op)
    line = out.getvalue().strip().splitlines()[0] if out.getvalue().strip() else op.name
    return line if len(line) <= MAX_OP_LINE else line[: MAX_OP_LINE - 3] + "..."


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


def error_message(exc: BaseException) -> str | None:
    """The user-facing message of an input error, or None for a bug."""
    if isinstance(exc, ParseError):
        return parse_error_message(exc)
    if isinstance(exc, GeirError):
        return str(exc)
    if isinstance(exc, DiagnosticException):
        # xDSL attaches a print of the whole module as notes: leave it out.
        return str(exc)
    if isinstance(exc, FileNotFoundError | IsADirectoryError | PermissionError | NotADirectoryError):
        return f"cannot open '{exc.filename}': {exc.strerror}"
    if _is_onnx_decode_error(exc):
        return f"not a valid ONNX model: {exc}".rstrip(": ")
    if isinstance(exc, UnicodeDecodeError):
        return f"input is not UTF-8 text: {exc}"
    return None


def parse_error_message(exc: ParseError) -> str:
    """`file:line:col: message`, then the source line with a caret under the error."""
    context = exc.span.print_with_context().rstrip("\n").split("\n")[1:]
    text = f"{exc.span.get_location()}: {exc.msg}" + "".join(f"\n  {line}".rstrip() for line in context)
    if isinstance(exc, MultipleSpansParseError):  # the spans it refers to
        text += "\n" + str(exc)[len(exc.span.print_with_context(exc.msg)) :].rstrip()
    return text.rstrip()


def _is_onnx_decode_error(exc: BaseException) -> bool:
    try:
        from google.protobuf.message import DecodeError
    except ImportError:  # pragma: no cover - protobuf comes with onnx
        return False
    if isinstance(exc, DecodeError):
        return True
    try:
        from onnx.checker import ValidationError
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, ValidationError)


def report_error(prog: str, exc: BaseException) -> int:
    """Print the error the way the tools do and return the exit code."""
    sys.stdout.flush()  # keep stdout and stderr in order when they share a pipe
    message = error_message(exc)
    if message is None:
        print(
            f"{prog}: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)",
            file=sys.stderr,
        )
        return 2
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 1


def wants_debug(argv: Sequence[str] | None) -> bool:
    return "--debug" in (sys.argv[1:] if argv is None else argv)


def run_tool(main_fn: Callable[[], int | None], prog: str, argv: Sequence[str] | None = None) -> int:
    """Run a tool's body; turn errors into one message and an exit code."""
    debug = wants_debug(argv)
    try:
        return main_fn() or 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `geir-opt ... | head`: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except Exception as e:
        if debug:
            raise
        return report_error(prog, e)
