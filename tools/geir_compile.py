"""geir-compile: compile a model into an offline model file.

    geir-compile                       # the quick-start job: ResNet-50 compiled, run, profiled
    geir-compile model.onnx -o model.om --device ascend910b -O3
    geir-compile model.onnx --run      # compile, run on the modeled device, check against onnxruntime
    geir-compile model.onnx -o model.om -O2 --disable-pass graph-fuse --dump-dir dumps/
    geir-compile fused.mlir -o model.om            # graph-level MLIR, e.g. from geir-opt
    geir-compile model.onnx -o model.om --streams 1 --memory-strategy greedy-size
    geir-compile model.onnx -o model.om --export-graph model.graph.onnx   # open it in Netron
    geir-compile model.onnx -o model.om --quantize int8 --calibration-data calib/   # int8, calibrated

The .om file holds the ascend program, its weights and its memory plan
(driver/om.py); `geir-run model.om` runs it. `--dump-dir` writes the IR after
every stage, named by stage (01_import.mlir, 02_simplify.mlir, ...) as GE's
DUMP_GE_GRAPH does; `--print-ir-after-change` prints a stage's IR only when it
differs from the previous one.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from geir.driver.calibration import DEFAULT_METHOD, DEFAULT_PERCENTILE, METHODS
from geir.errors import GeirError
from geir.target.precision import DEFAULT_MODE, MODES, mode_named
from geir.tools import common

PROG = "geir-compile"


def _on_off(text: str) -> bool:
    if text in ("on", "true", "1"):
        return True
    if text in ("off", "false", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected on/off, got '{text}'")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Compile an ONNX model (or graph-level MLIR) into a "
                                "geir offline model (.om). On a terminal, a line per stage shows its time.")
    p.add_argument("model", nargs="?", help="the .onnx model, or graph-level .mlir (`-` for MLIR on stdin) "
                   "(default: light ResNet-50 from the onnx package, seeded random weights, compiled, run and "
                   "profiled: the quick-start job)")
    p.add_argument("-o", "--output", metavar="FILE.om", help="the offline model to write")
    p.add_argument("--run", action="store_true",
                   help="run the compiled model on the modeled device (seeded random inputs), print the "
                   "report table and check the outputs against onnxruntime (or geir's reference interpreter)")
    p.add_argument("--device", default="ascend910b", help="device name or device .json file (default: ascend910b)")
    p.add_argument("-O", dest="opt_level", type=int, choices=range(4), default=3, metavar="{0,1,2,3}",
                   help="optimisation level (default 3)")
    p.add_argument("--freeze", action="append", default=[], metavar="NAME=V[,V...]|NAME=FILE.npy",
                   help="make graph input NAME a constant with these values (its element type; repeatable): "
                   "for reduction axes or split sizes given as inputs")
    p.add_argument("--no-weights", action="store_true",
                   help="import the ONNX model's weights as shape-only placeholders, reading none (its external "
                   "data may be absent): the offline model holds no weights and is timed, not run "
                   "(--run, or geir-run FILE.om --timing-only)")
    g = p.add_argument_group("GE switches (override the -O level)")
    g.add_argument("--fusion", type=_on_off, metavar="on|off")
    g.add_argument("--max-fusion-ops", type=int, default=32)
    g.add_argument("--layout", type=_on_off, metavar="on|off")
    g.add_argument("--memory-reuse", type=_on_off, metavar="on|off")
    g.add_argument("--memory-strategy", default="best")
    g.add_argument("--streams", type=int, metavar="N")
    g.add_argument("--disable-pass", action="append", default=[], metavar="NAME", help="leave a pass out (repeatable)")
    g.add_argument("--disable-fusion", action="append", default=[], metavar="PATTERN",
                   help="a graph-fuse pattern not to apply, e.g. norm-prologue (repeatable)")
    s = p.add_argument_group("dynamic shapes (ATC's names; docs/dynamic-shapes.md)")
    s.add_argument("--input-shape", metavar="NAME:D,D,...[;NAME:...]",
                   help="sizes of the inputs' dims; -1 where a gear option sets them; lo~hi: a shape range (one "
                        "program for every size in it)")
    s.add_argument("--dynamic-batch-size", metavar="B,B,...", help="gears: one program per batch size")
    s.add_argument("--dynamic-image-size", metavar="H,W;H,W;...", help="gears: one program per image size")
    s.add_argument("--dynamic-dims", metavar="D,D;D,D;...", help="gears: sizes of all -1 dims, per gear")
    s.add_argument("--pad-to-gear", action="store_true",
                   help="an input between gears runs on the next larger gear, padded, its outputs cropped "
                        "(for the dims geir proves pad exactly)")
    s.add_argument("--range-buckets", metavar="auto|[DIM:]T,T,...",
                   help="a shape range compiled as several range programs, cut after each top T (auto: at "
                        "hi/4, hi/16, ... down to 256); the inputs' sizes pick one at run time")
    m = p.add_argument_group("several devices (docs/multi-device.md)")
    m.add_argument("--tensor-parallel", type=int, metavar="N", help="split the matrix products over N devices")
    m.add_argument("--pipeline-stages", type=int, metavar="P", help="cut the layers into P stages on P devices")
    m.add_argument("--micro-batches", type=int, metavar="M",
                   help="with --pipeline-stages: a run is M micro-batches of the model's batch")
    m.add_argument("--server", metavar="NAME", help="the server the devices are in (default: atlas800t_a2)")
    q = p.add_argument_group("precision (GE's names; docs/precision.md)")
    q.add_argument("--precision-mode", default=DEFAULT_MODE, metavar="MODE",
                   help=f"the type each op computes in: {', '.join(MODES)} (default: {DEFAULT_MODE}, "
                   "ATC's inference default; must_keep_origin_dtype keeps the model's fp32)")
    q.add_argument("--keep-dtype", metavar="FILE", help="ops kept at their original type: a node name or OpType::X per line")
    q.add_argument("--modify-mixlist", metavar="FILE.json",
                   help='edits of the allow_mix_precision lists: {"black-list": {"to-add": [...], "to-remove": [...]}, ...}')
    c = p.add_argument_group("int8 quantization (docs/quantization.md, Calibration)")
    c.add_argument("--quantize", metavar="int8", help="calibrate the float model on --calibration-data and "
                   "compile it in int8 (quantize / dequantize around each conv, gemm and matmul)")
    c.add_argument("--calibration-data", metavar="DIR|FILE.npz",
                   help="samples of the model's inputs: a .npz file (input name -> [S, *input shape]) or a "
                   "directory of them (shards)")
    c.add_argument("--calibration-method", default=DEFAULT_METHOD, metavar="METHOD",
                   help=f"how a range is chosen: {', '.join(METHODS)} (default: {DEFAULT_METHOD})")
    c.add_argument("--calibration-percentile", type=float, default=DEFAULT_PERCENTILE, metavar="P",
                   help=f"the percentile method's percentile (default: {DEFAULT_PERCENTILE})")
    c.add_argument("--calibration-table", metavar="FILE.json", help="write the calibration table")
    c.add_argument("--quantize-skip", action="append", default=[], metavar="NAME",
                   help="a layer (node name) kept in float (repeatable)")
    c.add_argument("--tolerance", type=float, metavar="COS",
                   help="accuracy-driven fallback: keep the layers in float (chosen by sensitivity and modeled "
                   "latency) that bring the outputs' cosine to the float model to at least COS; prints the trade-off")
    d = p.add_argument_group("debugging")
    d.add_argument("--dump-dir", metavar="DIR", help="write the IR after every stage into DIR")
    d.add_argument("--dump-weights", action="store_true", help="keep weights in dumps (default: elided)")
    d.add_argument("--print-ir-after-change", action="store_true", help="print a stage's IR when it changed")
    d.add_argument("--export-graph", metavar="FILE.onnx",
                   help="write the compiled graph as ONNX for a viewer such as Netron: a node per kernel, "
                   "named by the ONNX nodes it fuses")
    common.add_debug_arg(p)
    return p


def _main(argv: Sequence[str] | None) -> int:
    import geir

    args = build_parser().parse_args(argv)
    if args.model is None:
        from geir.testing.models import DEFAULT_MODEL, load_light_model

        model, args.run = load_light_model(DEFAULT_MODEL), True
        print(f"model: {DEFAULT_MODEL} (onnx package, seeded random weights)")
    elif args.model == common.STDIO or args.model.endswith(".mlir"):
        # graph-level MLIR, verified with the tools' messages (file:line:col)
        model = common.parse_mlir(common.read_text(args.model), common.input_name(args.model))
    elif not os.path.isfile(args.model):
        raise FileNotFoundError(2, "No such file or directory", args.model)
    else:
        model = args.model
    if args.output is None and not args.run and not args.export_graph:
        raise GeirError("give -o FILE.om (or --run to compile and run without writing)")
    freeze = dict(parse_freeze(f) for f in args.freeze)
    compiled = geir.compile(
        model,
        device=args.device,
        opt_level=args.opt_level,
        fusion=args.fusion,
        max_fusion_ops=args.max_fusion_ops,
        layout=args.layout,
        memory_reuse=args.memory_reuse,
        memory_strategy=args.memory_strategy,
        streams=args.streams,
        disable_passes=args.disable_pass,
        disable_fusions=args.disable_fusion,
        precision_mode=args.precision_mode,
        keep_dtype=args.keep_dtype,
        modify_mixlist=args.modify_mixlist,
        progress=common.progress_printer(PROG),
        keep_stages=bool(args.dump_dir or args.print_ir_after_change),  # every stage printed
        freeze=freeze,
        weights=not args.no_weights,
        input_shape=args.input_shape,
        dynamic_batch_size=args.dynamic_batch_size,
        dynamic_image_size=args.dynamic_image_size,
        dynamic_dims=args.dynamic_dims,
        pad_to_gear=args.pad_to_gear,
        range_buckets=args.range_buckets,
        **_quantize_options(args),
        **_device_options(args),
    )
    if args.dump_dir or args.print_ir_after_change:
        _dump(compiled, args)
    if args.output:
        compiled.save(args.output)
    if args.export_graph:
        compiled.export_graph(args.export_graph)
    from geir.driver.distributed import DistributedModel
    from geir.driver.dynamic_shapes import describe
    from geir.driver.gears import GearedModel
    from geir.driver.range_buckets import RangeBuckets
    from geir.driver.shape_ranges import RangeModel

    if isinstance(compiled, DistributedModel):
        shared = all(p is compiled.programs[0] for p in compiled.programs)  # shape-only weights: one program
        for i, program in enumerate(compiled.programs[:1] if shared else compiled.programs):
            print(f"rank {i}{' (every rank: shape-only weights)' if shared and compiled.ranks > 1 else ''}:")
            print(_summary(program))
        if args.output:
            print(f"wrote {args.output} ({os.path.getsize(args.output) / 2**20:.1f} MiB)")
        if args.run:
            print(_run_distributed(compiled))
        return 0
    if isinstance(compiled, RangeBuckets):
        return _print_buckets(compiled, args, model, freeze)
    programs = compiled.programs if isinstance(compiled, GearedModel) else [compiled]
    for i, program in enumerate(programs):
        if len(programs) > 1:
            print(f"gear {i}: {describe(compiled.gears[i])}")
        print(_summary(program))
    if len(programs) > 1:
        from geir.runtime.report import format_bytes

        mem = compiled.memory()
        print(f"{len(programs)} gears ({compiled.plan.option}): weights {format_bytes(mem['constant_bytes'])} once, "
              f"workspace {format_bytes(mem['workspace_bytes'])} (the largest gear's), peak memory "
              f"{format_bytes(mem['peak_memory_bytes'])} ({format_bytes(mem['separate_models_bytes'])} as "
              f"separate models)")
        for why in compiled.unpadded.values():
            print(f"not padded: {why}")
    if isinstance(compiled, RangeModel):
        print(_range_summary(compiled))
    if args.output:
        print(f"wrote {args.output} ({os.path.getsize(args.output) / 2**20:.1f} MiB)")
    if args.run:
        for program in programs:
            print(_run_and_check(program, model, freeze))
    return 0


def parse_freeze(text: str) -> tuple[str, "np.ndarray"]:
    """`NAME=1,2` (numbers, the input's element type applied at import) or `NAME=FILE.npy`."""
    import numpy as np

    name, sep, values = text.partition("=")
    if not sep or not name or not values:
        raise GeirError(f"--freeze {text}: expected NAME=V[,V...] or NAME=FILE.npy")
    if values.endswith(".npy"):
        return name, np.load(values)
    try:
        numbers = [float(v) if any(c in v.lower() for c in ".en") else int(v) for v in values.split(",")]
    except ValueError:
        raise GeirError(f"--freeze {text}: '{values}' is not a comma-separated list of numbers") from None
    return name, np.array(numbers)


def _device_options(args) -> dict:
    out = {k: v for k, v in (("tensor_parallel", args.tensor_parallel), ("pipeline_stages", args.pipeline_stages),
                             ("micro_batches", args.micro_batches), ("server", args.server)) if v is not None}
    return out


def _run_distributed(dm) -> str:
    """Run and time the ranks together on seeded random inputs (timing only with shape-only
    weights); a line per device and the whole."""
    from geir.runtime.report import format_bytes

    timing = dm.programs[0].shape_only
    feeds = dm.random_inputs(seed=0, floats=not timing)
    if dm.kind == "pipeline" and dm.micro_batches > 1:
        import numpy as np

        feeds = {n: np.concatenate([v] * dm.micro_batches) for n, v in feeds.items()}
    outputs, report = dm.profile(feeds, mode="timing" if timing else "full")
    lines = ["", f"{dm.ranks} devices of {dm.server} ({dm.kind}): latency {report['latency_us']:.3f} us"]
    for r, (rep, coll) in enumerate(zip(report["ranks"], report["collective_us"])):
        lines.append(f"  rank {r}: {rep['latency_us']:.3f} us, peak memory {format_bytes(rep['peak_memory_bytes'])}, "
                     f"collectives {coll:.3f} us ({report['link_share'][r]:.1%})")
    if dm.kind == "pipeline":
        lines.append(f"  {report['micro_batches']} micro-batches: {report['throughput_per_s']:.1f} samples/s, bubble "
                     f"{report['bubble_measured']:.3f} measured, {report['bubble_formula']:.3f} by the formula")
    if timing:
        lines.append("shape-only weights: timed without data, no output check")
        return "\n".join(lines)
    import numpy as np

    from geir.runtime.interpreter import run_module

    graph = dm.programs[0].stages["01_import"]  # the whole model, before it was split
    parts = dm.micro_batch_inputs(feeds) if dm.kind == "pipeline" else [feeds]
    runs = [run_module(graph, p) for p in parts]
    mode = mode_named(dm.options.precision_mode)
    lines.append(f"output check against one device (geir's reference interpreter; precision mode {mode.name}):")
    for name, ours in outputs.items():
        theirs = np.concatenate([r[name] for r in runs]) if len(runs) > 1 else runs[0][name]
        a, b = ours.astype(np.float64).ravel(), np.asarray(theirs, np.float64).ravel()
        cos = cosine(a, b)
        ok = np.allclose(ours, theirs, rtol=1e-4, atol=1e-5) if mode.min_cosine is None else cos >= mode.min_cosine
        lines.append(f"  {name}: {'OK' if ok else 'MISMATCH'} (cosine {cos:.6f}, max abs err "
                     f"{float(np.max(np.abs(a - b), initial=0.0)):.3g})")
    return "\n".join(lines)


def _quantize_options(args) -> dict:
    if not args.quantize:
        if args.calibration_data or args.calibration_table or args.quantize_skip or args.tolerance is not None:
            raise GeirError("--calibration-data, --calibration-table, --quantize-skip and --tolerance go with "
                            "--quantize int8")
        return {}
    return {"quantize": args.quantize, "calibration_data": args.calibration_data,
            "calibration_method": args.calibration_method, "calibration_percentile": args.calibration_percentile,
            "quantize_skip": args.quantize_skip, "calibration_table": args.calibration_table,
            "quantize_tolerance": args.tolerance, "quantize_report": print if args.tolerance is not None else None}


def cosine(a, b) -> float:
    """Cosine similarity of two flat arrays; 1 when both are zero (nothing differs)."""
    import numpy as np

    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return float(np.dot(a, b) / (na * nb))


def _print_buckets(compiled, args, model, freeze: dict) -> int:
    """Range buckets: each bucket's program and range, then the memory they share."""
    from geir.runtime.report import format_bytes

    for i, bucket in enumerate(compiled.buckets):
        print(f"bucket {i}: {bucket.ranges()}")
        print(_summary(bucket))
        print(_range_summary(bucket))
    mem = compiled.memory()
    print(f"{len(compiled.buckets)} range buckets of {compiled.ranges()}: weights {format_bytes(mem['constant_bytes'])} "
          f"once, workspace {format_bytes(mem['workspace_bytes'])} (the largest bucket's), peak memory "
          f"{format_bytes(mem['peak_memory_bytes'])} ({format_bytes(mem['separate_models_bytes'])} as separate models)")
    if args.output:
        print(f"wrote {args.output} ({os.path.getsize(args.output) / 2**20:.1f} MiB)")
    if args.run:
        for bucket in compiled.buckets:
            print(_run_and_check(bucket, model, freeze))
    return 0


def _range_summary(compiled) -> str:
    """A shape-range program: its ranges and the kernels that run the real rows only."""
    from geir.dialects import attr_names
    from geir.dialects.ascend import KernelOp

    kernels = [op for op in compiled.module.walk() if isinstance(op, KernelOp)]
    taking = sum(attr_names.EXTENT in k.attributes for k in kernels)
    masking = sum(attr_names.KEY_EXTENT in k.attributes for k in kernels)
    keys = f"; {masking} attention kernel{'s mask' if masking > 1 else ' masks'} the padded keys" if masking else ""
    why = "".join(f"\n  {k.sym_name.data}: every row: {k.attributes[attr_names.ALL_ROWS].data}"
                  for k in kernels if attr_names.ALL_ROWS in k.attributes)
    return (f"shape range {compiled.ranges()}: one program, memory planned for the upper bound; {taking} of "
            f"{len(kernels)} kernels run only the real rows, the others every row{keys}{why}")


def _run_and_check(compiled, model, freeze: dict) -> str:
    """Profile on seeded random inputs; compare the outputs with onnxruntime, or with
    geir's reference interpreter when onnxruntime is not installed; an int8 model with the
    graph interpreter on its QDQ graph (the int8 numerics)."""
    from xdsl.dialects.builtin import ModuleOp

    if compiled.shape_only:  # no numbers to check: the report of a timing-only run
        from geir.runtime.report import format_report

        _, report = compiled.profile(compiled.random_inputs(seed=0, floats=False), mode="timing")
        return "\n" + format_report(report) + "\n\nshape-only weights: timed without data, no output check"
    feeds = compiled.random_inputs(seed=0)
    outputs, report = compiled.profile(feeds)
    if "01_quantize" in compiled.stages:  # the int8 numerics: the QDQ graph, not the float model
        from geir.runtime.interpreter import run_module

        reference = list(run_module(compiled.stages["01_quantize"], feeds).values())
        return _check_lines(compiled, report, outputs, reference, "geir's reference interpreter on the QDQ graph")
    try:
        from geir.testing.suite import ort_run
        from geir.frontend.onnx import load_model

        if isinstance(model, ModuleOp):  # compiled from MLIR: no ONNX model to run
            raise ImportError
        proto = load_model(model)
        if freeze:  # onnxruntime runs the model geir compiled: those inputs are constants
            from geir.frontend.onnx import freeze_inputs

            proto = freeze_inputs(proto, freeze)
        reference, what = ort_run(proto, feeds), "onnxruntime"
    except ImportError:
        from geir.runtime.interpreter import run_module

        reference, what = list(run_module(compiled.stages["01_import"], feeds).values()), "geir's reference interpreter"
    return _check_lines(compiled, report, outputs, reference, what)


def _check_lines(compiled, report, outputs, reference, what: str) -> str:
    import numpy as np

    from geir.runtime.report import format_report

    mode = mode_named(compiled.options.precision_mode)
    metric = "rtol 1e-4, atol 1e-5" if mode.min_cosine is None else f"cosine >= {mode.min_cosine}"
    lines = ["", format_report(report), "",
             f"output check against {what} ({metric}; precision mode {mode.name}):"]
    for (name, ours), theirs in zip(outputs.items(), reference):
        same = ours.shape == theirs.shape
        a, b = ours.astype(np.float64).ravel(), np.asarray(theirs, np.float64).ravel()
        err = float(np.max(np.abs(a - b), initial=0.0)) if same else float("nan")
        cos = cosine(a, b) if same else float("nan")
        if mode.min_cosine is None:
            ok = same and np.allclose(ours, theirs, rtol=1e-4, atol=1e-5)
        else:
            ok = same and cos >= mode.min_cosine
        lines.append(f"  {name}: {'OK' if ok else 'MISMATCH'} (cosine {cos:.6f}, max abs err {err:.3g})")
    return "\n".join(lines)


def _dump(compiled, args) -> None:
    from geir.ir.text import print_module

    if args.dump_dir:
        os.makedirs(args.dump_dir, exist_ok=True)
    previous = None
    for name, module in compiled.stages.items():
        text = print_module(module, elide=not args.dump_weights)
        if args.dump_dir:
            with open(os.path.join(args.dump_dir, f"{name}.mlir"), "w") as f:
                f.write(text)
        if args.print_ir_after_change and text != previous:
            print(f"// -----// IR Dump After {name} //----- //", file=sys.stderr)
            print(text, file=sys.stderr)
        previous = text


def _summary(compiled) -> str:
    from geir.dialects import ascend as a

    kernels = sum(1 for op in compiled.module.walk() if isinstance(op, a.KernelOp))
    launches = sum(1 for op in compiled.module.walk() if isinstance(op, a.LaunchOp))
    lines = [f"compiled for {compiled.options.device} at O{compiled.options.opt_level}: {kernels} kernels, {launches} launches"]
    lines.append("stages:")
    for name, seconds in compiled.compile_seconds.items():
        lines.append(f"  {name:<16} {seconds:8.3f} s")
    if compiled.unavailable:
        lines.append(f"not available yet: {', '.join(sorted(set(compiled.unavailable)))}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_tool(lambda: _main(argv), PROG, argv)


if __name__ == "__main__":
    sys.exit(main())
