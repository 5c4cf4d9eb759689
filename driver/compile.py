"""Compiling a model: `geir.compile(model, ...)` and `geir.load(path)` (re-exported by geir.api).

    import geir
    cm = geir.compile("model.onnx", device="ascend910b", opt_level=3)
    outputs = cm.run({"x": x})
    print(cm.mlir("03_fuse"))

`model` is an onnx.ModelProto, a path, ONNX bytes, a torch.nn.Module with
`example_inputs` (captured by torch.export and imported from core ATen, frontend/fx.py;
`torch_frontend="onnx"` exports it to ONNX instead; torch is optional), graph-level
MLIR (a ModuleOp or a `.mlir` file), or a GraphBuilder (geir.GraphBuilder, geir.models).
Options mirror GE's switches and are checked: an unknown one is an error.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp

from geir.ir.types import is_float_dtype
from geir.errors import GeirError
from geir.driver import compile_cache
from geir.driver.dynamic_shapes import GEAR_OPTIONS, plan_shapes
from geir.driver.model_import import exported_input_shape, exported_program, import_graph
from geir.driver.pipelines import PipelineOptions, build_pipeline
from geir.driver.stages import Stages
from geir.dialects import make_context
from geir.dialects.ascend import is_ascend_module


PROFILE_MODES = ("full", "timing")
"""CompiledModel.profile's modes: run the numbers and time them, or time without data."""


@dataclass
class CompiledModel:
    """A compiled model: the IR after every stage, the options, and a runner."""

    options: PipelineOptions
    stages: Mapping[str, ModuleOp]
    """The IR after every stage, in order (driver/stages.py: lowered ones built on first look)."""
    compile_seconds: dict[str, float] = field(default_factory=dict)
    unavailable: list[str] = field(default_factory=list)
    cache_hit: bool = False
    """Loaded from the compile cache (driver/compile_cache.py): its last stage, "cached", is the
    final program, after the imported graph when the key needed the import."""
    _last_report: dict[str, Any] | None = None

    def __post_init__(self):
        if not isinstance(self.stages, Stages):
            self.stages = Stages.of(self.stages)

    @property
    def module(self) -> ModuleOp:
        """The final program."""
        return self.stages[self.stage_names[-1]]

    @property
    def stage_names(self) -> list[str]:
        return list(self.stages)

    def mlir(self, stage: str | None = None, *, elide: bool = True) -> str:
        """The IR after a stage (default: the last), weights elided unless asked."""
        from geir.ir.text import print_module

        if stage is None:
            module = self.module
        else:
            matches = [s for s in self.stages if s == stage or s.split("_", 1)[-1] == stage]
            if not matches:
                raise GeirError(f"no stage '{stage}'; stages are {', '.join(self.stages)}")
            module = self.stages[matches[0]]
        return print_module(module, elide=elide)

    def input_specs(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        from geir.runtime.ascend_interpreter import ascend_input_specs
        from geir.runtime.interpreter import input_specs

        m = self.module
        return ascend_input_specs(m) if is_ascend_module(m) else input_specs(m)

    def output_names(self) -> list[str]:
        from geir.runtime.ascend_interpreter import ascend_output_names
        from geir.runtime.interpreter import output_names

        m = self.module
        return ascend_output_names(m) if is_ascend_module(m) else output_names(m)

    def random_inputs(self, seed: int = 0, *, floats: bool = True) -> dict[str, np.ndarray]:
        """Seeded random values of every input (`floats=False`: of the integer inputs only); a
        shape range's at its upper bound, its extent left to the runtime."""
        from geir.runtime.ascend_interpreter import host_args
        from geir.runtime.interpreter import module_ranges

        rng = np.random.default_rng(seed)
        # integers in [0, 4), and a KV-cache position no further than its cache holds
        high = {h.name: min(4, h.max_position + 1) for h in host_args(self.module)
                if h.max_position is not None} if is_ascend_module(self.module) else {}
        extents = {r.name for r in module_ranges(self.module)}
        return {n: rng.standard_normal(s).astype(d) if is_float_dtype(d) else rng.integers(0, high.get(n, 4), s).astype(d)
                for n, s, d in self.input_specs() if (floats or not is_float_dtype(d)) and n not in extents}

    def profile(self, feeds: Mapping[str, np.ndarray] | None = None, *,
                mode: str = "full") -> tuple[dict[str, np.ndarray] | None, dict[str, Any]]:
        """Run on the modeled device: (outputs, report) — docs/report.md lists the keys.
        `mode="timing"`: a timing-only run - the same control flow, trace and report, no data
        moved or computed, no outputs (None); a launch like an earlier one is not run again.
        The way to time a model with shape-only weights, or one too large to run here."""
        from geir.target.device import load_device
        from geir.runtime.report import build_report
        from geir.runtime.simulator import profile

        if mode not in PROFILE_MODES:
            raise GeirError(f"profile mode {mode!r}: expected one of {', '.join(PROFILE_MODES)}")
        if not is_ascend_module(self.module):
            raise GeirError("the report needs a lowered program (compile with lower=True)")
        if feeds is None:  # timing only: float values do not matter, integers may steer addresses
            feeds = self.random_inputs(floats=mode == "full")
        outputs, sim = profile(self.module, feeds, device=load_device(self.options.device), timing=mode == "timing")
        self._last_report = build_report(sim, self.module)
        return outputs, self._last_report

    @property
    def report(self) -> dict[str, Any]:
        """The modeled-device report of the last profile() (a run on seeded random inputs if
        none; timing only for a program with shape-only weights)."""
        if self._last_report is None:
            self.profile(mode="timing" if self.shape_only else "full")
        return self._last_report

    @property
    def shape_only(self) -> bool:
        """The program has shape-only weights (placeholders): it can be timed, not run."""
        from geir.dialects import attr_names

        return any(attr_names.PLACEHOLDER in op.attributes for op in self.module.walk())

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run the final program on named inputs; returns outputs by name."""
        from geir.runtime.ascend_interpreter import run_ascend_module
        from geir.runtime.interpreter import run_module

        m = self.module
        if is_ascend_module(m):
            return run_ascend_module(m, dict(feeds))  # refuses shape-only weights itself
        if self.shape_only:
            raise GeirError("the program has shape-only weights: they have no numbers to compute with; "
                            "compile it (lower=True) and time it without data: profile(mode=\"timing\")")
        return run_module(m, dict(feeds))

    def graph_module(self) -> ModuleOp:
        """The last graph-level stage: the graph the kernels are made of (fused, formatted)."""
        for name in reversed(self.stage_names):
            if not self.stages.is_lowered(name):
                return self.stages[name]
        raise GeirError("no graph-level stage: an offline model holds only the program; compile the model instead")

    def export_graph(self, path: str | Path) -> None:
        """Write the graph as ONNX for a viewer (Netron): a node per kernel, named by the ONNX
        nodes it fuses (driver/graph_onnx.py)."""
        from geir.driver.graph_onnx import graph_onnx

        onnx.save(graph_onnx(self.graph_module(), Path(path).stem), str(path))

    def save(self, path: str | Path) -> None:
        """Write the program: an offline model file for `.om` (driver/om.py), else MLIR text
        with the weights as resource blobs."""
        from geir.ir.text import print_module
        from geir.driver.om import save_om

        if Path(path).suffix == ".om":
            save_om(self, path)
        else:
            Path(path).write_text(print_module(self.module))


Progress = Callable[[str, "float | None"], None]
"""Called with a stage's name when it starts (None) and with its seconds when it ends."""


def compile(  # noqa: A001
    model: Any, device: str = "ascend910b", opt_level: int = 3, *, example_inputs=None,
    progress: Progress | None = None, keep_stages: bool = False, **options
) -> CompiledModel:
    """Import and compile a model with GE-style options (see driver/pipelines.py). `model` may
    also be graph-level MLIR: a ModuleOp or a `.mlir` file (its first stage is the parsed
    module). `progress` hears of every stage (geir-compile prints a line on a terminal).
    `quantize="int8"` with `calibration_data=...` calibrates the float model first
    (driver/quantize.py, QuantizeOptions). `freeze={"axes": [1]}` makes those graph inputs
    constants before import (frontend/onnx.py freeze_inputs): a reduction's axes or a
    Split's sizes given as inputs must be constants for static shapes. `weights=False`
    imports an ONNX model's weights as shape-only placeholders, reading none (its external
    data may be absent): the program is timed with `profile(mode="timing")`. `keep_stages=True`
    copies every stage's IR as it finishes (else lowered stages are rebuilt when first looked
    at: driver/stages.py). `cache_dir=` (or $GEIR_CACHE_DIR) keeps each final program on disk
    under a key of the model (an ONNX model's bytes, else the imported graph), the options and
    the versions, and loads it instead of compiling again (driver/compile_cache.py); not with
    keep_stages or quantize. ATC's `input_shape` gives an ONNX model's dynamic dims sizes;
    with a gear option (`dynamic_batch_size`, `dynamic_image_size`, `dynamic_dims`) the result
    is a GearedModel, one program per gear (driver/dynamic_shapes.py, driver/gears.py)."""
    from geir.dialects import make_context
    from geir.driver.registry import get_all_passes
    from geir.driver.quantize import QuantizeOptions
    from geir.target.device import load_device

    server = options.pop("server", None)
    micro_batches = options.pop("micro_batches", None)
    if (options.get("tensor_parallel", 1) != 1 or options.get("pipeline_stages", 1) != 1) and "rank" not in options:
        return _compile_ranks(model, device, opt_level, example_inputs, progress, keep_stages, options, server,
                              micro_batches)
    if server is not None or micro_batches is not None:
        raise GeirError("server= and micro_batches= are for a multi-device model: give tensor_parallel or "
                        "pipeline_stages too")
    if exported_program(model) and not any(options.get(k) for k in ("input_shape", *GEAR_OPTIONS)):
        # a torch.export.Dim is a shape range, from its min to its max (None: all dims static)
        options["input_shape"] = exported_input_shape(model)
    plan = plan_shapes(**{k: options.pop(k, None) for k in ("input_shape", *GEAR_OPTIONS)})
    pad_to_gear = options.pop("pad_to_gear", False)
    buckets = options.pop("range_buckets", None)
    if buckets not in (None, "") and (plan is None or not plan.ranged):
        raise GeirError("range_buckets cuts a shape range into parts: give input_shape a range lo~hi "
                        "(e.g. input_shape=\"input_ids:8,1~4096\")")
    if plan is not None and plan.geared:
        return _compile_gears(model, plan, device, opt_level, example_inputs, progress, keep_stages, options,
                              pad_to_gear)
    if plan is not None and plan.ranged:
        return _compile_ranges(model, plan, device, opt_level, example_inputs, progress, keep_stages, options,
                               buckets or None)
    if pad_to_gear:
        raise GeirError("pad_to_gear pads an input to the next larger gear: give gears (dynamic_batch_size, "
                        "dynamic_image_size or dynamic_dims)")
    input_shapes = plan.gears[0] if plan is not None else None  # a static input_shape
    extents = options.pop("_range_dims", None)  # shape ranges: their extent arguments (driver/shape_ranges.py)
    quantize = QuantizeOptions.take(options)
    freeze = options.pop("freeze", None)  # graph inputs made constants at import, not a pipeline option
    weights = options.pop("weights", True)  # False: shape-only weights at import, not a pipeline option
    torch_frontend = options.pop("torch_frontend", "fx")  # how a torch.nn.Module is imported
    cache = compile_cache.cache_dir(options.pop("cache_dir", None))  # driver/compile_cache.py; $GEIR_CACHE_DIR
    if quantize is not None and not weights:
        raise GeirError("int8 calibration runs the float model, which needs its weights: drop weights=False "
                        "(--no-weights) or the quantization")
    opts = PipelineOptions.from_kwargs(device=device, opt_level=opt_level, **options)
    spec = load_device(opts.device)  # an unknown device is an error before any work
    if keep_stages or quantize is not None or extents:  # every stage asked for; calibration data outside the key
        cache = None
    entry = None
    if cache is not None and freeze is None:  # an ONNX model or a torch module: a hit skips the import
        t0 = time.perf_counter()
        raw = compile_cache.source_key(model, {"weights": weights, "input_shapes": input_shapes,
                                               "torch_frontend": torch_frontend}, example_inputs)
        if raw is not None:
            entry = compile_cache.key(raw, dataclasses.asdict(opts), spec)
            cached = _from_cache(cache, entry, opts, t0, {}, {})
            if cached is not None:
                return cached
    pipeline = build_pipeline(opts)
    stages = Stages(keep_all=keep_stages)
    seconds: dict[str, float] = {}

    verified_kernels = False

    def stage(name: str, run: Callable[[], ModuleOp], replay=None, last: bool = True) -> ModuleOp:
        nonlocal verified_kernels

        if progress:
            progress(name, None)
        t0 = time.perf_counter()
        module = run()
        lowered = is_ascend_module(module)
        if lowered and verified_kernels:
            verify_host(module, allocs=last)
        elif lowered:
            verify_lowered(module)
            verified_kernels = True
        else:
            module.verify()
        stages.add(name, module, replay, lowered=lowered)
        seconds[name] = time.perf_counter() - t0
        if progress:
            progress(name, seconds[name])
        return module

    def imported() -> ModuleOp:
        from geir.driver.shape_ranges import add_extent_args

        # verified below, as every stage is (not twice); a torch module's batch norms folded
        # into their convs as they are read where graph-simplify would fold them
        module = import_graph(model, example_inputs, freeze, weights, torch_frontend, input_shapes, verify=False,
                              fold_batch_norm=pipeline.runs("graph-simplify"))
        return add_extent_args(module, extents) if extents else module

    module = stage("01_import", imported)
    if extents and "graph-infer-symbolic-shapes" not in opts.disable_passes:
        # shape ranges: every shape proven in the ranges' symbols, then planned for their tops
        from geir.dialects.symbolic_shapes import SymbolicShapeError
        from geir.passes.graph.bind_symbols import bind_symbols
        from geir.passes.graph.symbolic_shapes import infer_symbolic_shapes

        try:
            module = stage("01_symbolic_shapes", lambda: infer_symbolic_shapes(module) or module)
        except SymbolicShapeError as e:
            raise GeirError(f"shape range: {e}; give the sizes as gears (dynamic_batch_size, dynamic_dims), or "
                            f"export the model with the dim symbolic there") from None
        module = stage("01_bind_symbols", lambda: bind_symbols(module) or module)
    if quantize is not None:  # a choice of numerics, at every -O level (docs/quantization.md)
        # a fallback search prices its candidates with these very options (int8 layers aside)
        latency_of = default_latency_of(device, opt_level, **options) if quantize.tolerance is not None else None
        module = stage("01_quantize", lambda: quantize.apply(module, progress=progress is not None,
                                                             latency_of=latency_of))
    if cache is not None and entry is None:  # any other model: keyed by the imported graph
        t0 = time.perf_counter()
        entry = compile_cache.key(module, dataclasses.asdict(opts), spec)
        cached = _from_cache(cache, entry, opts, t0, {list(stages)[-1]: module}, seconds)
        if cached is not None:
            return cached
    ctx = make_context()
    registry = get_all_passes()
    for i, (name, specs) in enumerate(pipeline.stages):
        stage(name, lambda specs=specs: _apply(ctx, module, registry, specs),
              lambda m, specs=specs: _apply(ctx, m, registry, specs), last=i == len(pipeline.stages) - 1)
    stages.finish(module)
    if entry is not None:
        compile_cache.store(cache, entry, module, pipeline.unavailable)
    return CompiledModel(opts, stages, seconds, pipeline.unavailable)


def _compile_ranges(model, plan, device: str, opt_level: int, example_inputs, progress, keep_stages: bool,
                    options: dict, buckets: str | None = None):
    """A RangeModel: the model compiled once at its ranges' upper bounds, with an extent
    argument per ranged dim (driver/shape_ranges.py). Each dim is proven to pad exactly on the
    simplified graph, or refused naming the op that mixes its rows. With `buckets` (the
    range_buckets option), RangeBuckets: a RangeModel per part of one dim's range
    (driver/range_buckets.py)."""
    from geir.driver.range_buckets import RangeBuckets, bucket_tops, split_dims
    from geir.driver.model_import import export_with_ranges, exported_dim_params, torch_module
    from geir.driver.shape_ranges import onnx_dim_params, range_dims

    if any(k in options for k in ("quantize", "calibration_data", "pad_to_gear")):
        raise GeirError("shape ranges with int8 calibration or pad_to_gear are not supported: give one static "
                        "input_shape, or gears")
    if isinstance(model, str | Path) and Path(model).suffix != ".mlir":
        model = Path(model).read_bytes()  # read once: dim_params, then the import
    if torch_module(model) and options.get("torch_frontend", "fx") == "fx":
        model = export_with_ranges(model, example_inputs, plan.ranges)  # a Dim per range
    dim_params = options.pop("_dim_params", None)  # a graph-level module's (the torch backend's symbols)
    if dim_params is None:
        dim_params = exported_dim_params(model) if exported_program(model) else onnx_dim_params(model)
    dims = range_dims(plan, dim_params)
    index, tops = bucket_tops(buckets, dims) if buckets is not None else (0, [])
    if not tops:
        return _range_program(model, plan, dims, device, opt_level, example_inputs, progress, keep_stages, options)
    programs, seconds = [], []
    for part in split_dims(dims, index, tops):
        t0 = time.perf_counter()
        programs.append(_range_program(model, plan, part, device, opt_level, example_inputs, progress, keep_stages,
                                       options))
        seconds.append(time.perf_counter() - t0)
    return RangeBuckets(programs, buckets, seconds)


def _range_program(model, plan, dims, device: str, opt_level: int, example_inputs, progress, keep_stages: bool,
                   options: dict):
    """The RangeModel of `dims`, compiled at their tops."""
    from geir.driver.dynamic_shapes import describe
    from geir.driver.gear_padding import padding_plan
    from geir.driver.shape_ranges import RangeModel, mark_crops
    from geir.runtime.interpreter import input_specs

    upper = {n: list(s) for n, s in plan.gears[0].items()}
    for dim in dims:
        for n, a in dim.positions:
            upper[n][a] = dim.hi
    program = compile(model, device, opt_level, example_inputs=example_inputs, progress=progress,
                      keep_stages=keep_stages, input_shape=describe({n: tuple(s) for n, s in upper.items()}),
                      _range_dims=dims, **options)
    graph = _recognised(_simplified(program), program.options)
    names = [n for n, _, _ in input_specs(graph)]
    crops, refused = {}, []
    for dim in dims:
        pads, why = padding_plan(graph, names, program.output_names(), [dim.positions], masked_keys=True)
        if why:
            refused.append(f"shape range {dim.describe()}: {next(iter(why.values()))}; give its sizes as gears "
                           f"(dynamic_batch_size, dynamic_dims) instead")
        else:
            crops[dim] = pads[dim.positions]
    if refused:
        raise GeirError("; ".join(refused))
    if is_ascend_module(program.module):
        mark_crops(program.module, dims, crops)
    return RangeModel(program, dims)


def _compile_gears(model, plan, device: str, opt_level: int, example_inputs, progress, keep_stages: bool,
                   options: dict, pad_to_gear: bool = False):
    """A GearedModel: the model compiled once per gear of `plan`, each with the gear's shapes
    as a static input_shape (driver/gears.py). `pad_to_gear`: each dim is proven to pad
    exactly, or refused, on the simplified graph of the gear where it is largest
    (driver/gear_padding.py); none padding is an error."""
    from geir.driver.dynamic_shapes import describe
    from geir.driver.gear_padding import dims_of, padding_plan
    from geir.driver.gears import GearedModel
    from geir.runtime.interpreter import input_specs

    if options.get("quantize"):
        raise GeirError("int8 calibration with gears is not supported: calibrate one shape (input_shape) at a time")
    if isinstance(model, str | Path) and Path(model).suffix == ".onnx" and Path(model).is_file():
        model = Path(model).read_bytes()  # read once, imported per gear
    programs, seconds = [], {}
    for gear in plan.gears:
        t0 = time.perf_counter()
        programs.append(compile(model, device, opt_level, example_inputs=example_inputs, progress=progress,
                                keep_stages=keep_stages, input_shape=describe(gear), **options))
        seconds[describe(gear)] = time.perf_counter() - t0
    padding, refused = None, {}
    if pad_to_gear:
        padding = {}
        for dim in dims_of(plan.gears, plan.dynamic):
            # each dim on the gear where it is largest: a size of 1 would not tell its axis apart
            name, axis = dim[0]
            program = programs[max(range(len(plan.gears)), key=lambda i: plan.gears[i][name][axis])]
            graph = _simplified(program)
            names = [n for n, _, _ in input_specs(graph)]
            pads, why = padding_plan(graph, names, program.output_names(), [dim])
            padding.update(pads)
            refused.update(why)
        if not padding:  # nothing pads: say why for each dim
            raise GeirError("; ".join(refused.values()))
    return GearedModel(plan, programs, seconds, padding, refused)


def _simplified(program) -> ModuleOp:
    """A program's graph as simplified (a dynamo export's Shape arithmetic folded), not yet
    fused: where the padding analysis proves a dim (pad-to-gear, shape ranges)."""
    return program.stages[next((n for n in program.stage_names if n.endswith("_simplify")), program.stage_names[0])]


def _recognised(graph: ModuleOp, options) -> ModuleOp:
    """A copy of `graph` with the recognisers run (as the fuse stage runs them): a shape
    range's proof sees graph.attention, whose padded keys its kernel masks, not the score
    product and softmax that would mix the sequence's rows."""
    from geir.driver.pipelines import recognizers
    from geir.driver.registry import get_all_passes

    return _apply(make_context(), graph.clone(), get_all_passes(), list(recognizers(options)))


def verify_lowered(module: ModuleOp) -> None:
    """Verify a program just lowered: everything, but the bodies of kernels the lowering
    cloned from one it built for an identical request (lowering/kernel_cache.py) when that
    kernel is in the module too: a clone equals that kernel op for op, and that kernel is
    verified here."""
    from geir.lowering.kernel_cache import clone_of, origin

    module.verify(verify_nested_ops=False)
    verified = {origin(op) for op in module.ops if clone_of(op) is None} - {None}
    for op in module.ops:
        op.verify(verify_nested_ops=clone_of(op) not in verified)


def verify_host(module: ModuleOp, allocs: bool = False) -> None:
    """Verify a lowered program's host functions, not its kernels: the stages after the
    lowering (elide-copies, streams, memory planning) change the host, and of a kernel only its
    buffers' offsets (ascend-plan-memory), so each verifies the host, and the last one the
    kernels' `ascend.alloc`s too (`allocs`). The kernels are verified whole once, after the
    lowering: they are most of the ops (ResNet-50: 16k; DenseNet-121 at batch 8: 165k), and
    verifying them again at the end took ResNet-50's compile 0.5 s of 4."""
    from geir.dialects import ascend as a

    for op in module.ops:
        if not isinstance(op, a.KernelOp):
            op.verify()
        elif allocs:
            for inner in op.walk():
                if isinstance(inner, a.AllocOp):
                    inner.verify()


def _compile_ranks(model, device: str, opt_level: int, example_inputs, progress, keep_stages: bool,
                   options: dict, server: str | None, micro_batches: int | None):
    """A DistributedModel: the model imported once, then compiled once per rank (a
    tensor-parallel share, or a pipeline stage), each keeping its part (driver/distributed.py)."""
    from geir.driver.distributed import DEFAULT_SERVER, DistributedModel, check_ranks

    ranks = options.get("tensor_parallel", 1) * options.get("pipeline_stages", 1)
    kind = "pipeline" if options.get("pipeline_stages", 1) > 1 else "tensor"
    if micro_batches is not None and (kind != "pipeline" or not isinstance(micro_batches, int) or micro_batches < 1):
        raise GeirError(f"micro_batches={micro_batches!r}: a positive number of micro-batches, with pipeline_stages")
    from geir.driver.quantize import QuantizeOptions

    shapes = {k: options.pop(k, None) for k in ("input_shape", *GEAR_OPTIONS)}
    if (any(shapes.values()) or options.pop("pad_to_gear", False) or options.pop("range_buckets", None)
            or QuantizeOptions.take(options) is not None):
        raise GeirError(f"{'pipeline_stages' if kind == 'pipeline' else 'tensor_parallel'} with gears, input_shape "
                        f"or quantize is not supported yet")
    freeze, weights = options.pop("freeze", None), options.pop("weights", True)
    torch_frontend = options.pop("torch_frontend", "fx")
    options.pop("cache_dir", None)  # each rank's program is cached on its own key
    folds = build_pipeline(PipelineOptions.from_kwargs(device=device, opt_level=opt_level, **options)).runs(
        "graph-simplify")  # bad options before any work; what import_graph may fold, as compile's
    server = server or DEFAULT_SERVER
    check_ranks(ranks, server, "pipeline_stages" if kind == "pipeline" else "tensor_parallel")
    t0 = time.perf_counter()
    imported = import_graph(model, example_inputs, freeze, weights, torch_frontend, None, verify=False,
                            fold_batch_norm=folds)  # each rank's compile verifies it
    seconds = {"import": time.perf_counter() - t0}
    programs = []
    from geir.dialects import attr_names

    # With shape-only weights the tensor-parallel ranks' programs differ only in which weights
    # they hold, none of which exist: rank 0's program is every rank's (timing only).
    symmetric = kind == "tensor" and any(attr_names.PLACEHOLDER in op.attributes for op in imported.walk())
    for r in range(1 if symmetric else ranks):
        t0 = time.perf_counter()
        programs.append(compile(imported.clone(), device, opt_level, progress=progress, keep_stages=keep_stages,
                                rank=r, **options))
        seconds[f"rank {r}"] = time.perf_counter() - t0
    programs *= ranks if symmetric else 1
    return DistributedModel(programs, server, seconds, kind=kind, micro_batches=micro_batches or 1)


def _from_cache(cache, entry: str, opts: PipelineOptions, t0: float, stages: dict[str, ModuleOp],
                seconds: dict[str, float]) -> CompiledModel | None:
    """The CompiledModel of a cache entry (its last stage "cached", timed from t0: the key and
    the load), or None on a miss."""
    hit = compile_cache.load(cache, entry)
    if hit is None:
        return None
    program, unavailable = hit
    return CompiledModel(opts, {**stages, "cached": program}, {**seconds, "cached": time.perf_counter() - t0},
                         unavailable, cache_hit=True)


def default_latency_of(device: str = "ascend910b", opt_level: int = 3, **options):
    """What prices an int8 fallback candidate (driver/sensitivity.py): the QDQ module compiled
    with these options, its modeled-device report."""

    def latency_of(module: ModuleOp):
        return compile(module, device=device, opt_level=opt_level, **options).report

    return latency_of


def _apply(ctx, module: ModuleOp, registry, specs: list[str]) -> ModuleOp:
    from xdsl.passes import PassPipeline

    from geir.driver.registry import build_passes

    PassPipeline(build_passes(",".join(specs), registry)).apply(ctx, module)
    return module


def load(path: str | Path) -> CompiledModel:
    """Load a program written by CompiledModel.save (an .om file or MLIR text)."""
    from geir.ir.text import parse_module
    from geir.driver.om import is_om, load_om

    if is_om(path):
        from geir.driver.om import om_ranks

        options, module, unavailable, gears = load_om(path)
        ranks = om_ranks(path)
        if ranks is not None:
            from geir.driver.distributed import DistributedModel

            return DistributedModel.from_manifest(ranks, [CompiledModel(options, {"loaded": m}, unavailable=unavailable)
                                                          for m in module])
        if gears is not None and gears.get("option") == "range_buckets":
            from geir.driver.range_buckets import RangeBuckets

            return RangeBuckets.from_manifest(gears, [CompiledModel(options, {"loaded": m}, unavailable=unavailable)
                                                      for m in module])
        if gears is not None:
            from geir.driver.gears import GearedModel

            return GearedModel.from_manifest(gears, [CompiledModel(options, {"loaded": m}, unavailable=unavailable)
                                                     for m in module])
        return CompiledModel(options, {"loaded": module}, unavailable=unavailable)

    from geir.frontend.onnx import existing_file

    if existing_file(path) is None:
        raise GeirError(f"no such file: {str(path)[:200]}")
    module = parse_module(Path(path).read_text(), make_context(), name=str(path))
    module.verify()
    return CompiledModel(PipelineOptions(), {"loaded": module})
