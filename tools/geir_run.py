"""geir-run: execute a model in the interpreter and summarise the run.

    geir-run                                  # light_resnet50 with random weights
    geir-run model.onnx --input x=x.npy --output out.npz
    geir-run model.mlir --seed 3
    geir-run kernel.mlir --profile --report report.json --trace trace.json   # ascend IR

Inputs not given with `--input` get seeded random data of the right shape and type.
`--profile` (ascend-level IR) also times the run on the modeled device and prints the
report table (docs/report.md); `--report`/`--trace` write it as JSON / a Chrome trace.
`--timing-only` (implies `--profile`) times the program without data: nothing is moved or
computed, so there are no outputs, and float inputs need no values - the way to time a
program with shape-only weights, or one too large to run here.
On ascend-level IR every kernel launch is checked for overflow (runtime/overflow.py): a run
that turned finite numbers into inf / NaN gets one line naming the first such kernel, its ONNX
node and the precision modes that avoid it.
On a terminal, a line on stderr shows each step (load, run) and its time.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import zipfile
from collections.abc import Sequence

import numpy as np

from geir.errors import GeirError
from geir.ir.types import is_float_dtype
from geir.tools import common

PROG = "geir-run"
NPY_MAGIC = b"\x93NUMPY"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Run a model in geir's interpreter.")
    p.add_argument(
        "model",
        nargs="?",
        help="a .onnx or .mlir file, `-` for MLIR on stdin (default: the onnx package's "
        "light_resnet50 with seeded random weights)",
    )
    p.add_argument(
        "--input", action="append", default=[], metavar="NAME=FILE.npy", help="an input's value (repeatable)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of random inputs and default weights (default: 0)")
    p.add_argument("--output", metavar="FILE.npz", help="save the outputs")
    p.add_argument("--gear", type=int, metavar="I",
                   help="of a geared offline model, the gear to run when no --input decides it (default: 0)")
    add_profile_args(p)
    common.add_debug_arg(p)
    return p


# ---------------------------------------------------------------------------
# Profiling (ascend-level IR): the simulator, the report and the trace
# ---------------------------------------------------------------------------


def add_profile_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("profiling (ascend-level IR)")
    g.add_argument("--profile", action="store_true",
                   help="time the run on the modeled device and print the report table")
    g.add_argument("--report", metavar="FILE.json", help="write the profile report as JSON (implies --profile)")
    g.add_argument("--trace", metavar="FILE.json", help="write a Chrome/Perfetto trace (implies --profile)")
    g.add_argument("--device", default=None, metavar="NAME",
                   help="modeled device: a name (ascend910b, ascend310p) or a .json file (default: ascend910b)")
    g.add_argument("--strict", action="store_true", help="with --profile: a pipe race is an error")
    g.add_argument("--timing-only", action="store_true",
                   help="time without data (implies --profile): no outputs; shape-only weights welcome")


def wants_profile(args) -> bool:
    return bool(args.profile or args.report or args.trace or args.timing_only)


def device_spec(args):
    """The --device spec (default ascend910b); a bad name or file is a user error."""
    from geir.target.device import DEFAULT_DEVICE, DeviceFileError, UnknownDeviceError, load_device

    try:
        return load_device(args.device or DEFAULT_DEVICE)
    except (UnknownDeviceError, DeviceFileError) as e:
        raise GeirError(str(e)) from None


def run_profiled(module, feeds, args):
    """Run with the trace hook, simulate; write the report/trace; (outputs, report table,
    the overflow line or None)."""
    from geir.runtime.report import build_report, format_report, write_report
    from geir.runtime.simulator import profile
    from geir.runtime.trace import write_trace

    outputs, sim = profile(module, feeds, device=device_spec(args), strict=args.strict, timing=args.timing_only)
    report = build_report(sim, module)
    if args.report:
        write_report(report, args.report)
    if args.trace:
        write_trace(sim, args.trace)
    return outputs or {}, format_report(report), report["overflow_summary"]


def run_watched(module, feeds, args):
    """Run on the ascend interpreter with the overflow check: (outputs, the overflow line or None)."""
    from geir.runtime.ascend_interpreter import run_ascend_module
    from geir.runtime.overflow import by_kernel, overflow_summary

    launches: list = []
    outputs = run_ascend_module(module, feeds, device=device_spec(args), overflow=launches)
    return outputs, overflow_summary(by_kernel(launches))


# ---------------------------------------------------------------------------
# Model and inputs
# ---------------------------------------------------------------------------


def load(path: str | None, seed: int, given: list[str] = (), gear: int | None = None):
    """(module, description) of the model to run; of a geared model (an `ascend.gears` op
    over one program per gear, from an offline model or MLIR text), the gear the `--input`
    arrays' shapes select, or `gear`."""
    if path is None:
        from geir.testing.models import DEFAULT_MODEL, load_light_model

        model = load_light_model(DEFAULT_MODEL, seed)
        return common.import_onnx(model), f"{DEFAULT_MODEL} (onnx package, random weights, seed {seed})"
    from geir.driver.om import gear_programs, load_om

    if path.endswith(".om"):
        open(path, "rb").close()  # a missing file is "cannot open"
        _, module, _, _ = load_om(path)
        programs = module if isinstance(module, list) else None
    else:
        module = common.load_module(path)
        programs = gear_programs(module)
    if programs is None:
        if gear is not None:
            raise GeirError(f"--gear: {path} is not a geared model")
        return module, common.input_name(path)
    from geir.runtime.ascend_interpreter import ascend_input_specs, gear_of
    from geir.runtime.interpreter import module_ranges

    def shown_of(program) -> str:  # a range bucket's ranged dims as lo~hi, its extents left out
        ranges = module_ranges(program)
        ranged = {p: r for r in ranges for p in r.positions}
        return ";".join(f"{n}:" + ",".join(f"{ranged[n, i].lo}~{ranged[n, i].hi}" if (n, i) in ranged else str(d)
                                           for i, d in enumerate(s))
                        for n, s, _ in ascend_input_specs(program) if n not in {r.name for r in ranges})

    shown = [shown_of(p) for p in programs]
    kind = "bucket" if module_ranges(programs[0]) else "gear"
    if gear is None:
        shapes = {}
        for item in given:
            name, _, file = item.partition("=")
            if name and file:
                shapes[name] = load_npy(file).shape
        gear = gear_of(programs, shapes)
        if gear is None:
            raise GeirError(f"input shapes {';'.join(f'{n}:' + ','.join(map(str, s)) for n, s in shapes.items())} "
                            f"match no {kind} of {path} ({' | '.join(shown)})")
    elif not 0 <= gear < len(programs):
        raise GeirError(f"--gear {gear}: {path} has {kind}s 0 to {len(programs) - 1}")
    return programs[gear], f"{common.input_name(path)} {kind} {gear} ({shown[gear]})"


def make_feeds(specs, given: list[str], seed: int, ranged: set | None = None
               ) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Feeds for every input: from `NAME=FILE.npy` or seeded random; and where each came from.
    `ranged`: the (input, axis) dims of a shape-range program, where a given array may have any
    size (the runtime checks it is in the range; a random one takes the upper bound)."""
    wanted = {name: (tuple(shape), np.dtype(dtype)) for name, shape, dtype in specs}
    feeds, origin = {}, {}
    for item in given:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise GeirError(f"--input expects NAME=FILE.npy, got '{item}'")
        if name not in wanted:
            raise GeirError(f"the model has no input '{name}' (inputs: {', '.join(wanted) or 'none'})")
        array = load_npy(path)
        shape, dtype = wanted[name]
        if ranged and array.ndim == len(shape):  # a ranged dim may take any size in its range
            shape = tuple(array.shape[i] if (name, i) in ranged else d for i, d in enumerate(shape))
        if array.shape != shape or array.dtype != dtype:
            raise GeirError(
                f"input '{name}': {path} holds {_shape(array.shape)} {array.dtype}, "
                f"the model expects {_shape(shape)} {dtype}"
            )
        feeds[name], origin[name] = array, path
    rng = np.random.default_rng(seed)
    for name, (shape, dtype) in wanted.items():
        if name not in feeds:
            feeds[name], origin[name] = random_array(rng, shape, dtype), f"random (seed {seed})"
    return feeds, origin


def load_npy(path: str) -> np.ndarray:
    with open(path, "rb") as f:  # a missing file is "cannot open"
        if f.read(len(NPY_MAGIC)) != NPY_MAGIC:  # else numpy talks of pickled data
            raise GeirError(f"{path} is not a .npy file (write arrays with numpy.save)")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError) as e:
        if isinstance(e, FileNotFoundError | IsADirectoryError | PermissionError):
            raise
        raise GeirError(f"cannot read '{path}' as a .npy array: {e}") from e


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 10, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------


def op_counts(module) -> list[tuple[str, int]]:
    """(op name, count) of every op but the module, most frequent first."""
    counts = collections.Counter(op.name for op in module.walk() if op is not module)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def table(rows: list[Sequence[str]], right: Sequence[int] = (), indent: str = "  ") -> list[str]:
    """Rows as aligned columns; columns listed in `right` are right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))] if rows else []
    out = []
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        out.append((indent + "  ".join(cells)).rstrip())
    return out


def summary(description, module, origin, feeds, outputs, times, overflow: str | None = None) -> str:
    counts = op_counts(module)
    lines = [f"model: {description}", "", f"ops ({sum(n for _, n in counts)}):"]
    lines += table([(name, str(n)) for name, n in counts], right=(1,))
    lines += ["", "inputs:"]
    lines += table([(name, _shape(a.shape), str(a.dtype), origin[name]) for name, a in feeds.items()])
    lines += ["", "outputs:" if outputs else "outputs: none (a timing-only run computes nothing)"]
    rows = [("name", "shape", "dtype", "min", "max", "mean")]
    rows += [(name, _shape(a.shape), str(a.dtype), *_stats(a)) for name, a in outputs.items()]
    lines += table(rows, right=(3, 4, 5))
    bad = {name: int(a.size - np.isfinite(a).sum()) for name, a in outputs.items() if _is_float(a)}
    lines += [f"  warning: {name} has {n} non-finite values" for name, n in bad.items() if n]
    if overflow:
        lines += ["", overflow]
    lines += ["", "time:"]
    lines += table([(step, f"{t:.3f} s") for step, t in times.items()], right=(1,))
    return "\n".join(lines) + "\n"


def _shape(shape: Sequence[int]) -> str:
    return "x".join(map(str, shape)) if len(shape) else "scalar"


def _is_float(a: np.ndarray) -> bool:
    return is_float_dtype(a.dtype)  # bf16 too, which numpy does not count as floating


def _stats(a: np.ndarray) -> tuple[str, str, str]:
    if a.size == 0:
        return ("-", "-", "-")
    v = a.astype(np.float64)
    finite = v[np.isfinite(v)] if _is_float(a) else v.reshape(-1)
    if finite.size == 0:
        return ("nan", "nan", "nan")
    return tuple(f"{x:.6g}" for x in (finite.min(), finite.max(), finite.mean()))


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    from geir.runtime.interpreter import input_specs, run_module

    import geir.frontend.onnx  # noqa: F401 - keep Python's imports out of the timings
    import geir.testing.models  # noqa: F401

    if args.device:
        device_spec(args)  # a bad name is an error before loading, which may take seconds
    progress = common.progress_printer(PROG) or (lambda step, seconds: None)  # a line a step on a terminal
    if args.model and args.model.endswith(".om"):
        from geir.driver.om import om_ranks

        open(args.model, "rb").close()  # a missing file is "cannot open"
        if om_ranks(args.model) is not None:
            return _run_ranks(args, progress)
    load_step = "import" if _is_onnx(args.model) else "parse"
    progress(load_step, None)
    start = time.perf_counter()
    module, description = load(args.model, args.seed, args.input, args.gear)
    import_time = time.perf_counter() - start
    progress(load_step, import_time)
    from geir.dialects.ascend import is_ascend_module
    from geir.runtime.ascend_interpreter import ascend_input_specs
    from geir.runtime.interpreter import module_ranges

    ascend = is_ascend_module(module)  # hardware-level IR runs on the ascend interpreter
    if (wants_profile(args) or args.device or args.strict) and not ascend:
        raise GeirError("--profile, --report, --trace, --timing-only, --device and --strict need ascend-level IR "
                        "(a module with ascend.kernel ops)")
    if args.timing_only and args.output:
        raise GeirError("--timing-only computes no outputs: drop --output (or --timing-only)")
    specs = ascend_input_specs(module) if ascend else input_specs(module)
    ranges = module_ranges(module)  # a shape-range program: the runtime fills the extents
    specs = [s for s in specs if s[0] not in {r.name for r in ranges}]
    if args.timing_only:  # float values do not matter without data; integers may steer addresses
        given = {item.partition("=")[0] for item in args.input}
        specs = [s for s in specs if not is_float_dtype(s[2]) or s[0] in given]
    feeds, origin = make_feeds(specs, args.input, args.seed, {p for r in ranges for p in r.positions})
    step = ("simulate (timing only)" if args.timing_only else
            "interpret + simulate" if ascend and wants_profile(args) else "interpret")
    progress(step, None)
    start = time.perf_counter()
    profile_text = overflow = None
    if ascend and wants_profile(args):
        outputs, profile_text, overflow = run_profiled(module, feeds, args)
    elif ascend:
        outputs, overflow = run_watched(module, feeds, args)
    else:
        outputs = run_module(module, feeds)
    run_time = time.perf_counter() - start
    progress(step, run_time)
    if args.output:
        save_npz(args.output, outputs)
    times = {load_step: import_time, step: run_time}
    text = summary(description, module, origin, feeds, outputs, times, overflow)
    if profile_text is not None:
        text += "\n" + profile_text
    common.write_text(text, common.STDIO)
    return 0


def _run_ranks(args, progress) -> int:
    """A multi-device offline model (driver/distributed.py): the ranks run together on their
    devices of the server; --profile reports each device and the whole, --trace writes one
    process per device."""
    import geir

    if args.gear is not None or args.device or args.strict:
        raise GeirError("--gear, --device and --strict do not apply to a multi-device model (its devices are "
                        "the server's)")
    progress("load", None)
    start = time.perf_counter()
    dm = geir.load(args.model)
    times = {"load": time.perf_counter() - start}
    progress("load", times["load"])
    specs = dm.input_specs()
    if dm.kind == "pipeline" and dm.micro_batches > 1:  # a run: every micro-batch along axis 0
        specs = [(n, (s[0] * dm.micro_batches, *s[1:]) if s else s, d) for n, s, d in specs]
    if args.timing_only:
        given = {item.partition("=")[0] for item in args.input}
        specs = [s for s in specs if not is_float_dtype(s[2]) or s[0] in given]
    feeds, origin = make_feeds(specs, args.input, args.seed)
    step = "simulate (timing only)" if args.timing_only else "run"
    progress(step, None)
    start = time.perf_counter()
    if wants_profile(args):
        outputs, report = dm.profile(feeds, mode="timing" if args.timing_only else "full")
        if args.trace:
            dm.write_trace(args.trace)
        if args.report:
            import json

            with open(args.report, "w", encoding="utf-8") as f:
                json.dump(report, f, indent=2, default=float)
    else:
        outputs, report = dm.run(feeds), None
    times[step] = time.perf_counter() - start
    progress(step, times[step])
    if args.output and outputs is not None:
        save_npz(args.output, outputs)
    lines = [f"{args.model}: {dm.ranks} ranks ({dm.kind}) on {dm.server}"]
    for name, value in (outputs or {}).items():
        lines.append(f"  output {name}: {list(value.shape)} {value.dtype}")
    if report is not None:
        lines.append(f"latency {report['latency_us']:.3f} us (the last device to finish)")
        for r, rep in enumerate(report["ranks"]):
            lines.append(f"  rank {r}: {rep['latency_us']:.3f} us, collectives {report['collective_us'][r]:.3f} us "
                         f"({report['link_share'][r]:.1%}), peak memory {rep['peak_memory_bytes']} bytes")
        if dm.kind == "pipeline":
            lines.append(f"  {report['micro_batches']} micro-batches: {report['throughput_per_s']:.1f} samples/s, "
                         f"bubble {report['bubble_measured']:.3f} measured, {report['bubble_formula']:.3f} by the "
                         f"formula")
    lines.append(", ".join(f"{k} {v:.2f} s" for k, v in times.items()))
    common.write_text("\n".join(lines) + "\n", common.STDIO)
    return 0


def save_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    """Like np.savez, for any array names (np.savez reserves `file`) and exactly this path."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, a in arrays.items():
            with z.open(name + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(a), allow_pickle=False)


def _is_onnx(path: str | None) -> bool:
    return path is None or os.path.splitext(path)[1] == ".onnx"


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_tool(lambda: _main(argv), PROG, argv)


if __name__ == "__main__":
    sys.exit(main())
