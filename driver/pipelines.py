"""Named compilation pipelines and their options (GE's switches).

A pipeline is a list of stages; each stage is a named list of passes in
xDSL's pipeline syntax, so `geir-opt -p '<stage passes>'` reproduces any
stage by hand. Stage names are numbered like GE's graph dumps
(`01_import`, `02_simplify`, ...), which is how `--dump-dir` names files.

Every level first sets the precision each op computes in (`precision_mode`, GE's names; the
default is ATC's inference default `force_fp16`, `must_keep_origin_dtype` keeps the model's
types): a choice of numerics, not an optimisation (target/precision.py).

opt levels:
  O0  import only: no simplification, no fusion, ND layout, no reuse, one stream
  O1  + graph simplification (constant/shape folding, canonicalisation, BN folding, CSE/DCE)
  O2  + fusion
  O3  + layout conversion, memory reuse, several streams (the default)

Passes that have not landed yet are left out of the pipeline and listed in
`Pipeline.unavailable`, so a report says what did not run instead of
pretending it did (none at the moment). graph-layout runs after fusion; the
lowering's kernels read and write its NC1HWC0 / FRACTAL_Z / FRACTAL_NZ
storage, and an op no formatted kernel takes runs on plain tensors between
trans_data kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from os import PathLike

from geir.errors import GeirError
from geir.target.precision import DEFAULT_MODE, KeepDtype, MixLists, mode_named


class PipelineError(GeirError):
    pass


@dataclass(frozen=True)
class PipelineOptions:
    device: str = "ascend910b"
    opt_level: int = 3
    fusion: bool | None = None  # None: on from O2
    max_fusion_ops: int = 32
    disable_fusions: tuple[str, ...] = ()  # graph-fuse patterns not to apply (its `disable`)
    layout: bool | None = None  # None: on at O3
    memory_reuse: bool | None = None  # None: on at O3
    memory_strategy: str = "best"
    streams: int | None = None  # None: 1 below O3, else up to 4
    double_buffer: bool | None = None  # None: on from O2
    lower: bool = True  # lower to the ascend dialect
    disable_passes: tuple[str, ...] = ()
    precision_mode: str = DEFAULT_MODE
    keep_dtype: tuple[str, ...] = ()  # op names and OpType::X lines (the API also takes a file's path)
    modify_mixlist: str = ""  # the path of GE's mix-list JSON
    tensor_parallel: int = 1  # devices the matrix products are split over (docs/multi-device.md)
    pipeline_stages: int = 1  # devices the layers are spread over, in a chain (docs/multi-device.md)
    rank: int = 0  # which device's program this is (geir.compile sets it per rank)

    @classmethod
    def from_kwargs(cls, **kwargs) -> PipelineOptions:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise PipelineError(f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        for key in ("disable_passes", "disable_fusions"):
            if key in kwargs:
                kwargs[key] = tuple(kwargs[key])
        for key in ("keep_dtype", "modify_mixlist"):
            if key in kwargs and kwargs[key] is None:
                del kwargs[key]
        keep = kwargs.get("keep_dtype")
        if isinstance(keep, str | PathLike):
            kwargs["keep_dtype"] = KeepDtype.read(keep)
        elif keep is not None:
            kwargs["keep_dtype"] = tuple(keep)
        if "modify_mixlist" in kwargs:
            kwargs["modify_mixlist"] = str(kwargs["modify_mixlist"])
        opts = cls(**kwargs)
        if opts.opt_level not in (0, 1, 2, 3):
            raise PipelineError(f"opt_level must be 0, 1, 2 or 3, got {opts.opt_level}")
        if not isinstance(opts.tensor_parallel, int) or opts.tensor_parallel < 1:
            raise PipelineError(f"tensor_parallel must be a positive number of devices, got {opts.tensor_parallel!r}")
        if not isinstance(opts.pipeline_stages, int) or opts.pipeline_stages < 1:
            raise PipelineError(f"pipeline_stages must be a positive number of devices, got {opts.pipeline_stages!r}")
        if opts.tensor_parallel > 1 and opts.pipeline_stages > 1:
            raise PipelineError("tensor_parallel and pipeline_stages together are not supported yet: choose one")
        if opts.disable_fusions:
            from geir.passes.graph.fuse import PATTERN_NAMES

            unknown = sorted(set(opts.disable_fusions) - set(PATTERN_NAMES))
            if unknown:
                raise PipelineError(f"unknown fusion pattern(s) to disable: {', '.join(unknown)}; "
                                    f"patterns: {', '.join(PATTERN_NAMES)}")
        ranks = opts.tensor_parallel * opts.pipeline_stages
        if not isinstance(opts.rank, int) or not 0 <= opts.rank < ranks:
            raise PipelineError(f"rank {opts.rank!r} is not one of the program's {ranks} ranks")
        # the precision options fail here, before the model is read, with the same messages
        mode = mode_named(opts.precision_mode)
        KeepDtype.parse(opts.keep_dtype)
        if opts.modify_mixlist:
            if mode.policy != "mix":
                raise PipelineError(f"modify_mixlist applies to the allow_mix_precision modes, not '{mode.name}'")
            MixLists.load(opts.modify_mixlist)
        return opts

    def on(self, flag: bool | None, from_level: int) -> bool:
        return self.opt_level >= from_level if flag is None else flag


@dataclass
class Pipeline:
    stages: list[tuple[str, list[str]]] = field(default_factory=list)
    unavailable: list[str] = field(default_factory=list)

    def runs(self, pass_name: str) -> bool:
        """Whether a stage runs the pass (its name, with or without options)."""
        return any(spec.split("{", 1)[0] == pass_name for _, specs in self.stages for spec in specs)


# Decomposed ops become the ops the kernel library has (one row pass each), before graph-fuse
# decides kernels: the fuse stage runs these first, and so do the benchmarks that fuse by hand.
RECOGNIZERS = ("graph-recognize-layer-norm", "graph-recognize-rms-norm", "graph-recognize-rotary",
               "graph-recognize-attention")


def recognizers(opts: PipelineOptions) -> tuple[str, ...]:
    """RECOGNIZERS with the options': must_keep_origin_dtype keeps a softmax the model computes
    in 16 bits out of graph.attention (whose softmax is f32), as ONNX's softmax_precision
    default asks."""
    if not opts.on(opts.fusion, 2):
        return ()
    if opts.precision_mode != "must_keep_origin_dtype":
        return RECOGNIZERS
    return tuple(f"{r}{{keep-precision=true}}" if r == "graph-recognize-attention" else r for r in RECOGNIZERS)


def precision_spec(opts: PipelineOptions) -> str:
    """graph-assign-precision with the options' mode, keep_dtype lines and mix list."""
    args = [f"mode={opts.precision_mode}"]
    if opts.keep_dtype:
        args.append("keep-dtype=" + ",".join(_quoted(line) for line in opts.keep_dtype))
    if opts.modify_mixlist:
        args.append(f"modify-mixlist={_quoted(opts.modify_mixlist)}")
    return "graph-assign-precision{" + " ".join(args) + "}"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build_pipeline(opts: PipelineOptions) -> Pipeline:
    from geir.driver.registry import get_all_passes

    registered = get_all_passes()
    unknown = [p for p in opts.disable_passes if p not in registered]
    if unknown:
        raise PipelineError(f"unknown pass name(s) to disable: {', '.join(unknown)} (see geir-opt --list-passes)")
    pipeline = Pipeline()

    def stage(name: str, *passes: str) -> None:
        chosen = []
        for spec in passes:
            pass_name = spec.split("{", 1)[0]
            if pass_name in opts.disable_passes:
                continue
            if pass_name not in registered:
                pipeline.unavailable.append(pass_name)
                continue
            chosen.append(spec)
        if chosen:
            pipeline.stages.append((f"{len(pipeline.stages) + 2:02d}_{name}", chosen))

    if opts.opt_level >= 1:
        stage("simplify", "graph-simplify")
    if opts.pipeline_stages > 1:  # the layers as the graph has them, priced op by op
        stage("pipeline_stage",
              f"graph-pipeline-stage{{stages={opts.pipeline_stages} stage={opts.rank} device={_quoted(opts.device)}}}")
    if opts.tensor_parallel > 1:  # after the recognisers: attention's heads are split whole
        stage("tensor_parallel", *recognizers(opts),
              f"graph-tensor-parallel{{ranks={opts.tensor_parallel} rank={opts.rank}}}")
    if opts.precision_mode != "must_keep_origin_dtype" or opts.keep_dtype:
        # the recognisers first: a LayerNorm / RMSNorm is one op on the lists, not its pieces
        stage("precision", *recognizers(opts), precision_spec(opts))
    if opts.on(opts.fusion, 2):
        off = f" disable={','.join(opts.disable_fusions)}" if opts.disable_fusions else ""
        stage("fuse", *recognizers(opts), "graph-transpose-into-attention",
              f"graph-fuse{{max-ops={opts.max_fusion_ops}{off}}}")
    if opts.on(opts.layout, 3):
        stage("layout", "graph-layout")
    if opts.lower:
        db = "true" if opts.on(opts.double_buffer, 2) else "false"
        stage("lower", f"convert-graph-to-ascend{{device={_quoted(opts.device)} double-buffer={db}}}")
        reuse = opts.on(opts.memory_reuse, 3)
        if reuse:  # views share their input's bytes: memory reuse, as GE's refs and continuous inputs
            stage("elide_copies", "ascend-elide-copies")
        streams = opts.streams if opts.streams is not None else (4 if opts.opt_level >= 3 else 1)
        if streams > 1:
            stage("streams", f"ascend-assign-streams{{max-streams={streams} device={_quoted(opts.device)}}}", "ascend-insert-events")
        stage(
            "plan_memory",
            f"ascend-plan-memory{{reuse={'true' if reuse else 'false'} strategy={opts.memory_strategy} device={_quoted(opts.device)}}}",
        )
    return pipeline
