"""geir-compare: find the first op where geir's numbers leave onnxruntime's.

    geir-compare model.onnx                          # every stage, seeded random inputs
    geir-compare model.onnx --input x=x.npy -O 2 --stages simplify,lower
    geir-compare model.onnx --show diverging --rtol 1e-3
    geir-compare model.onnx --layout off --disable-pass graph-fuse      # bisect
    geir-compare model.onnx --json compare.json                          # also as JSON
    geir-compare model.onnx --program model.om         # a compiled program instead of the stages
    geir-compare model.onnx --quantize int8 --calibration-data calib.npz   # int8 against fp32

onnxruntime runs the model with every node output exposed; each stage of geir's pipeline
runs on the same inputs and every tensor it produces is mapped back to its ONNX node and
judged EQUAL / CLOSE / SIMILAR / DIFFERENT (driver/compare.py says how; f16 / bf16
tensors by cosine and SQNR, not fp32 tolerances); each row shows the tensor's dtype. The
table ends with per-stage counts and the first divergence: the first stage with a DIFFERENT
tensor and, in it, the first such node in topological order; and, if any tensor overflowed
(inf / NaN where onnxruntime's is finite), the first op that did. Divergence is a finding,
not an error: the exit code is 0 unless the input is bad (1). With --quantize int8 the float
model is the reference of the int8 program: its stages are judged by the SIMILAR tier, and the
summary names the layer that lost the most SQNR to int8.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from geir.tools import common

PROG = "geir-compare"
PROGRAM_STAGE = "program"
"""The stage name of a program given with --program."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG,
                                description="Compare every stage of geir with onnxruntime, tensor by tensor.")
    p.add_argument("model", help="an ONNX model (.onnx)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="an input's value (repeatable; others get seeded random data)")
    p.add_argument("--seed", type=int, default=0, help="seed of random inputs (default: 0)")
    p.add_argument("-O", dest="opt_level", type=int, choices=range(4), default=3, metavar="{0,1,2,3}",
                   help="optimisation level, as geir-compile (default: 3)")
    p.add_argument("--device", default="ascend910b", help="device name or device .json file (default: ascend910b)")
    p.add_argument("--stages", metavar="A,B", help="stages to compare, e.g. simplify,lower (default: all)")
    p.add_argument("--program", metavar="FILE",
                   help="compare this program (an .om or MLIR written by geir-compile, e.g. of the model "
                        "in another precision) instead of compiling the model; compile options do not apply")
    g = p.add_argument_group("GE switches (override the -O level, as geir-compile; to bisect)")
    g.add_argument("--fusion", type=_on_off, metavar="on|off")
    g.add_argument("--layout", type=_on_off, metavar="on|off")
    g.add_argument("--memory-reuse", type=_on_off, metavar="on|off")
    g.add_argument("--streams", type=int, metavar="N")
    g.add_argument("--disable-pass", action="append", default=[], metavar="NAME", help="leave a pass out (repeatable)")
    g.add_argument("--disable-fusion", action="append", default=[], metavar="PATTERN",
                   help="a graph-fuse pattern not to apply, e.g. norm-prologue (repeatable)")
    g.add_argument("--precision-mode", default=None, metavar="MODE",
                   help="GE's precision mode, as geir-compile (default: force_fp16; must_keep_origin_dtype for fp32)")
    q = p.add_argument_group("int8 (as geir-compile; docs/quantization.md)")
    q.add_argument("--quantize", metavar="int8", help="compile the model calibrated in int8 and compare it with "
                   "the float model")
    q.add_argument("--calibration-data", metavar="DIR|FILE.npz", help="samples of the model's inputs")
    q.add_argument("--calibration-method", default=None, metavar="METHOD", help="minmax, percentile, entropy, mse")
    p.add_argument("--rtol", type=float, default=1e-4, help="CLOSE: relative tolerance (default: 1e-4)")
    p.add_argument("--atol", type=float, default=1e-5, help="CLOSE: absolute tolerance (default: 1e-5)")
    p.add_argument("--show", choices=("all", "diverging"), default="all",
                   help="table rows: every tensor, or only those worse than CLOSE (than SIMILAR for "
                        "f16/bf16) (default: all)")
    p.add_argument("--json", metavar="FILE.json", help="also write every comparison as JSON (`-`: stdout, no table)")
    common.add_debug_arg(p)
    return p


def _on_off(text: str) -> bool:
    if text in ("on", "true", "1"):
        return True
    if text in ("off", "false", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected on/off, got '{text}'")


def _names(text: str | None) -> list[str]:
    return [s.strip() for s in (text or "").split(",") if s.strip()]


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    from geir.errors import GeirError
    from geir.driver.compare import compare_model, select_stages, stage_names
    from geir.runtime.interpreter import input_specs
    from geir.tools.geir_run import make_feeds

    if args.rtol < 0 or args.atol < 0:
        raise GeirError("--rtol and --atol must be >= 0")
    options = {"fusion": args.fusion, "layout": args.layout, "memory_reuse": args.memory_reuse,
               "streams": args.streams, "disable_passes": args.disable_pass,
               "disable_fusions": args.disable_fusion}
    if args.precision_mode is not None:
        options["precision_mode"] = args.precision_mode
    if args.quantize or args.calibration_data:
        options.update(quantize=args.quantize, calibration_data=args.calibration_data,
                       calibration_method=args.calibration_method)
    stages = _names(args.stages)
    program = None
    if args.program:
        if stages:
            raise GeirError("--stages selects stages geir compiles; --program compares one program")
        from geir.driver.om import is_geared

        program = {PROGRAM_STAGE: None if is_geared(args.program) else common.load_module(args.program)}
    else:
        select_stages(stage_names(args.device, args.opt_level, **options), stages)  # bad names before any work
    _require_onnx(args.model)
    shapes = _dynamic_input_shapes(args.model, args.input)
    if shapes:
        options["input_shapes"] = shapes
    module = common.import_onnx(args.model, shapes)  # the importer's errors for a bad file
    feeds, _ = make_feeds(input_specs(module), args.input, args.seed)
    if program is not None and program[PROGRAM_STAGE] is None:  # a geared program: the gear of these inputs
        program = {PROGRAM_STAGE: _gear(args.program, {n: v.shape for n, v in feeds.items()})}
    if program is not None:
        _check_range_sizes(program[PROGRAM_STAGE], feeds)
    report = compare_model(args.model, feeds, stages or None, compiled=program, device=args.device,
                           opt_level=args.opt_level, rtol=args.rtol, atol=args.atol, raise_errors=args.debug,
                           **options)
    if args.json:
        common.write_text(json.dumps(report.to_json(), indent=2) + "\n", args.json)
    if args.json != common.STDIO:
        common.write_text(report.format(args.show), common.STDIO)
    return 0


def _check_range_sizes(module, feeds) -> None:
    """A shape-range program is compared tensor by tensor at its ranges' tops: at another size
    its tensors hold padding rows that onnxruntime's do not (only its outputs are cropped)."""
    from geir.errors import GeirError
    from geir.runtime.interpreter import module_ranges

    for r in module_ranges(module):
        sizes = {feeds[n].shape[a] for n, a in r.positions if n in feeds}
        if sizes and sizes != {r.hi}:
            raise GeirError(f"--program is a shape-range program: geir-compare compares its tensors at the range's "
                            f"top, {r.describe()} = {r.hi}, not {min(sizes)} (at other sizes they hold padding rows); "
                            f"give inputs at the top, or leave out --program to compare the model compiled at "
                            f"these shapes (geir-run runs the program at any size)")


def _dynamic_input_shapes(path: str, given: list[str]) -> dict[str, tuple[int, ...]]:
    """For a model whose inputs have dynamic dims, the shapes of the --input arrays given for
    them (the shapes to compile and compare at); an error naming an input left without one."""
    import onnx

    from geir.errors import GeirError
    from geir.tools.geir_run import load_npy

    if path == common.STDIO or not path.endswith(".onnx"):
        return {}
    try:
        graph = onnx.load(path, load_external_data=False).graph
    except Exception:  # not a model: the importer says so
        return {}
    inits = {t.name for t in graph.initializer}
    dynamic = [vi.name for vi in graph.input if vi.name not in inits and any(
        not d.HasField("dim_value") for d in vi.type.tensor_type.shape.dim)]
    if not dynamic:
        return {}
    files = dict(item.partition("=")[::2] for item in given)
    missing = [n for n in dynamic if not files.get(n)]
    if missing:
        raise GeirError(f"input '{missing[0]}' has dynamic dims: give its value (--input {missing[0]}=FILE.npy), "
                        f"whose shape is the one compared")
    return {n: tuple(load_npy(files[n]).shape) for n in dynamic}


def _gear(path: str, shapes: dict) -> object:
    """The program of a geared offline model that these input shapes select."""
    from geir.driver.om import load_om
    from geir.errors import GeirError
    from geir.runtime.ascend_interpreter import gear_of

    programs = load_om(path)[1]
    i = gear_of(programs, shapes)
    if i is None:
        raise GeirError(f"input shapes {shapes} match no gear of {path}")
    return programs[i]


def _require_onnx(path: str) -> None:
    """The model is what onnxruntime runs: a program (MLIR text, an offline model) is a
    comparison's --program, not its model."""
    from geir.driver.om import is_om
    from geir.errors import GeirError

    if path == common.STDIO:
        return
    kind = "an offline model" if is_om(path) else "MLIR text" if path.endswith(".mlir") else None
    if kind:
        raise GeirError(f"{path} is {kind}: geir-compare takes an ONNX model, which onnxruntime runs as the "
                        f"reference; to compare a compiled program with it: {PROG} MODEL.onnx --program {path}")


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_tool(lambda: _main(argv), PROG, argv)


if __name__ == "__main__":
    sys.exit(main())
