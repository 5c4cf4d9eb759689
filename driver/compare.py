"""Layer-by-layer accuracy comparison against onnxruntime (the engine of `geir-compare`).

The first thing users of an NPU compiler ask when an output is wrong is *which op went
wrong, after which pass*. `compare_model` answers it: onnxruntime runs a copy of the model
in which every node output is a graph output (types from ONNX shape inference, no graph
optimisation, so each tensor is exactly its node's), and every stage of geir runs on the
same inputs with an xDSL interpreter listener that captures what each op produces:

* graph level: each op's result is the ONNX tensor of its node (the location names the
  node; output index = result index). A graph.fusion's results are the values its body
  yields, mapped through the yielded value's defining op. Ops inside a fusion body are
  not materialised by the fused kernel and are not compared.
* ascend level: after each kernel launch, the gm buffers the kernel writes (found by
  walking its body: DMA / vector / reference destinations, through views), mapped through
  the kernel's fused location to the *last* ONNX node (topological order) whose output has
  the buffer's shape, preferring outputs read outside the kernel; a kernel made of a piece of a
  split fusion names the value each output holds (`geir.outputs`).

A location may name several nodes (folding, canonicalisation, fusion); the result is the
tensor of the topologically last one whose output shape matches, so a value that stands
for no ONNX tensor (a weight conversion, a padded copy) is simply not compared. When
several values of a stage map to one tensor, the last executed wins (a trans_data after
its producer, an add after the neg a rewrite inserted). Formatted values
(`#graph.format<...>`) are converted to logical arrays first; gm buffers carry no
encoding, so a buffer whose shape is the NC1HWC0 / FRACTAL_NZ / NHWC storage shape of the
tensor is converted back through `dialects.formats.to_logical`.

Verdicts, per tensor: EQUAL (same dtype, same bytes), CLOSE (allclose at rtol/atol),
SIMILAR (cosine >= 0.99 and SQNR >= 30 dB), DIFFERENT otherwise. The tolerances of CLOSE are
fp32's: a low-precision tensor (f16 / bf16, on either side: geir compiled in a lower precision
than the model, or a model in f16) is EQUAL, SIMILAR or DIFFERENT, judged by cosine and SQNR.
Each comparison carries both dtypes, and the elements that overflowed: inf / NaN in geir's
tensor where onnxruntime's is finite; the summary names the first op that overflowed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

import numpy as np
import onnx
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation, OpResult, SSAValue

from geir.dialects import ascend as a
from geir.dialects import formats
from geir.dialects import graph as g
from geir.errors import GeirError
from geir.ir.locations import loc_names
from geir.ir.types import is_float_dtype
from geir.dialects import attr_names
from geir.runtime.kernel_args import written_args
from geir.runtime.overflow import dtype_name, is_low_precision

MIN_COSINE = 0.99
MIN_SQNR_DB = 30.0
IMPORT_STAGE = "01_import"
QUANTIZE_STAGE = "01_quantize"  # geir.compile(quantize="int8"): calibration and QDQ after the import


class Verdict(IntEnum):
    """How a geir tensor compares with onnxruntime's, best first."""

    EQUAL = 0
    CLOSE = 1
    SIMILAR = 2
    DIFFERENT = 3


@dataclass(frozen=True)
class Thresholds:
    rtol: float = 1e-4
    atol: float = 1e-5
    min_cosine: float = MIN_COSINE
    min_sqnr_db: float = MIN_SQNR_DB

    def describe(self) -> str:
        return (f"EQUAL: same bytes; CLOSE: allclose(rtol={self.rtol:g}, atol={self.atol:g}), not for f16/bf16; "
                f"SIMILAR: cosine >= {self.min_cosine:g} and SQNR >= {self.min_sqnr_db:g} dB; "
                f"DIFFERENT: otherwise")


@dataclass(frozen=True)
class Metrics:
    verdict: Verdict
    max_abs_err: float
    cosine: float
    sqnr_db: float
    overflow: int = 0  # elements inf / NaN in the tensor where the reference is finite
    low_precision: bool = False  # f16 / bf16 on either side, or int8 stages: SIMILAR is as good as it gets


def compare_arrays(actual: np.ndarray, expected: np.ndarray, th: Thresholds = Thresholds()) -> Metrics:
    """The verdict and metrics of `actual` against the reference `expected` (SQNR is the
    reference's power over the error's, in dB: inf when they agree exactly). A low-precision
    pair (f16 / bf16 on either side) skips CLOSE: fp32 tolerances say nothing about it."""
    x, ref = np.asarray(actual), np.asarray(expected)
    if x.shape != ref.shape:
        return Metrics(Verdict.DIFFERENT, math.inf, math.nan, -math.inf)
    if x.dtype == ref.dtype and np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(ref).tobytes():
        return Metrics(Verdict.EQUAL, 0.0, 1.0, math.inf)
    low = is_low_precision(x.dtype) or is_low_precision(ref.dtype)
    xf, rf = x.astype(np.float64, copy=False), ref.astype(np.float64, copy=False)
    fx, fr = np.isfinite(xf), np.isfinite(rf)
    if not np.array_equal(fx, fr) or not np.array_equal(xf[~fx], rf[~fr], equal_nan=True):
        overflow = int(np.count_nonzero(fr & ~fx))
        return Metrics(Verdict.DIFFERENT, math.inf, math.nan, -math.inf, overflow, low)  # NaN / inf in other places
    xf, rf = xf[fx], rf[fr]
    err = xf - rf
    max_abs = float(np.max(np.abs(err))) if err.size else 0.0
    signal, noise = float(np.dot(rf, rf)), float(np.dot(err, err))
    nx = math.sqrt(float(np.dot(xf, xf)))
    nr = math.sqrt(signal)
    cosine = 1.0 if nx == nr == 0 else (float(np.dot(xf, rf)) / (nx * nr) if nx and nr else 0.0)
    sqnr = math.inf if noise == 0 else (10 * math.log10(signal / noise) if signal else -math.inf)
    if not low and np.allclose(xf, rf, rtol=th.rtol, atol=th.atol):
        verdict = Verdict.CLOSE
    elif cosine >= th.min_cosine and sqnr >= th.min_sqnr_db:
        verdict = Verdict.SIMILAR
    else:
        verdict = Verdict.DIFFERENT
    return Metrics(verdict, max_abs, cosine, sqnr, 0, low)


# ---------------------------------------------------------------------------
# The reference: every node output from onnxruntime.
# ---------------------------------------------------------------------------


def node_key(node: onnx.NodeProto) -> str:
    """How the importer names a node in locations (frontend/onnx.py)."""
    return node.name or f"{node.op_type}:{node.output[0]}"


@dataclass
class Reference:
    """onnxruntime's value of every node output, and the graph's structure."""

    nodes: list[onnx.NodeProto]
    values: dict[str, np.ndarray]
    index: dict[str, list[int]] = field(default_factory=dict)  # node key -> node positions
    consumers: dict[str, set[int]] = field(default_factory=dict)  # tensor -> consuming nodes
    outputs: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for i, node in enumerate(self.nodes):
            self.index.setdefault(node_key(node), []).append(i)
            for name in node.input:
                self.consumers.setdefault(name, set()).add(i)

    def positions(self, names: Iterable[str]) -> list[int]:
        """Positions of the named nodes, topologically last first."""
        return sorted({i for n in names for i in self.index.get(n, ())}, reverse=True)

    def escapes(self, tensor: str, within: set[int]) -> bool:
        """Whether a tensor is read outside a set of nodes (or is a model output)."""
        return tensor in self.outputs or bool(self.consumers.get(tensor, set()) - within)


def onnx_reference(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> Reference:
    """Run `model` in onnxruntime with every node output exposed."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise GeirError("comparing needs onnxruntime (pip install onnxruntime)") from None
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - shape inference is only a source of output types
        inferred = model
    graph = inferred.graph
    typed = {v.name: v for v in (*graph.value_info, *graph.output)}
    known = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    del exposed.graph.output[:]
    names: list[str] = []
    for node in model.graph.node:
        for out in node.output:
            if out and out not in known and out not in names:
                names.append(out)
                info = typed.get(out)
                if info is None or not info.type.tensor_type.elem_type:  # untyped: onnxruntime infers it
                    info = onnx.helper.make_empty_tensor_value_info(out)
                exposed.graph.output.append(info)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        session = ort.InferenceSession(exposed.SerializeToString(), so, providers=["CPUExecutionProvider"])
        arrays = session.run(names, dict(feeds))
    except Exception as e:  # noqa: BLE001 - onnxruntime's own error, for the user
        raise GeirError(f"onnxruntime cannot run the model: {e}") from None
    return Reference(list(model.graph.node), dict(zip(names, (np.asarray(x) for x in arrays))),
                     outputs=frozenset(o.name for o in model.graph.output))


# ---------------------------------------------------------------------------
# Results.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """One geir tensor against onnxruntime's."""

    stage: str
    tensor: str
    node: str
    op: str  # what produced it in geir: 'graph.add', 'graph.fusion(graph.relu)', '@k3_conv1'
    order: int  # the ONNX node's position (topological)
    metrics: Metrics
    dtype: str = ""  # geir's element type ("f16", "f32")
    ref_dtype: str = ""  # onnxruntime's

    @property
    def verdict(self) -> Verdict:
        return self.metrics.verdict

    @property
    def beyond_tier(self) -> bool:
        """Worse than its precision allows: beyond CLOSE, or beyond SIMILAR for f16 / bf16."""
        return self.verdict > (Verdict.SIMILAR if self.metrics.low_precision else Verdict.CLOSE)

    @property
    def precision(self) -> str:
        """The dtype, and the reference's where it differs: "f16 vs f32"."""
        return self.dtype if self.dtype == self.ref_dtype else f"{self.dtype} vs {self.ref_dtype}"

    def to_json(self) -> dict[str, Any]:
        m = self.metrics
        return {"tensor": self.tensor, "node": self.node, "op": self.op, "order": self.order,
                "dtype": self.dtype, "ref_dtype": self.ref_dtype, "verdict": self.verdict.name,
                "max_abs_err": _json_float(m.max_abs_err), "cosine": _json_float(m.cosine),
                "sqnr_db": _json_float(m.sqnr_db), "overflow": m.overflow}


@dataclass
class StageResult:
    name: str
    level: str  # "graph" or "ascend"
    comparisons: list[Comparison] = field(default_factory=list)
    unmapped: int = 0  # values that stand for no ONNX tensor
    error: str | None = None  # the stage failed to compile or run
    seconds: float = 0.0
    quantized: bool = False  # int8 ops in this stage or before: judged by the SIMILAR tier

    def counts(self) -> dict[Verdict, int]:
        out = dict.fromkeys(Verdict, 0)
        for c in self.comparisons:
            out[c.verdict] += 1
        return out

    def first(self, at_least: Verdict = Verdict.DIFFERENT) -> Comparison | None:
        return next((c for c in self.comparisons if c.verdict >= at_least), None)

    def first_overflow(self) -> Comparison | None:
        return next((c for c in self.comparisons if c.metrics.overflow), None)

    def first_beyond_tier(self) -> Comparison | None:
        return next((c for c in self.comparisons if c.beyond_tier), None)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "level": self.level, "seconds": self.seconds, "error": self.error,
                "quantized": self.quantized,
                "unmapped": self.unmapped, "counts": {v.name: n for v, n in self.counts().items()},
                "comparisons": [c.to_json() for c in self.comparisons]}


@dataclass
class CompareReport:
    model: str
    stages: list[StageResult]
    thresholds: Thresholds
    tensors: int  # ONNX node outputs onnxruntime produced
    node_inputs: dict[int, tuple[str, ...]] = field(default_factory=dict)  # node position -> its input tensors
    producers: dict[str, int] = field(default_factory=dict)  # tensor -> the position of its node
    model_inputs: frozenset[str] = frozenset()

    def most_lost(self) -> tuple[Comparison, float] | None:
        """In the quantized stage that shows the most tensors (the latest of those: fused kernels
        materialise fewer), the layer whose output lost the most SQNR relative to its inputs'
        (the best of them; a model input counts as exact), and the dB it lost."""
        quantized = [(len(s.comparisons), i) for i, s in enumerate(self.stages) if s.quantized and s.comparisons]
        if not quantized:
            return None
        stage = self.stages[max(quantized)[1]]
        sqnr = {c.tensor: c.metrics.sqnr_db for c in stage.comparisons}
        memo: dict[str, float | None] = {}

        def before(tensor: str) -> float | None:
            """The SQNR a tensor arrives with: its own if compared, a model input's inf, else
            the best of what its node read (through values the stage does not materialise, a
            fused relu's); None for weights."""
            if tensor in sqnr:
                return sqnr[tensor]
            if tensor in self.model_inputs:
                return math.inf
            if tensor not in memo:
                memo[tensor] = None
                pos = self.producers.get(tensor)
                got = [] if pos is None else [b for b in map(before, self.node_inputs.get(pos, ())) if b is not None]
                memo[tensor] = max(got) if got else None
            return memo[tensor]

        best: tuple[Comparison, float] | None = None
        for c in stage.comparisons:
            inputs = [b for b in map(before, self.node_inputs.get(c.order, ())) if b is not None]
            lost = (max(inputs) if inputs else math.inf) - c.metrics.sqnr_db
            if math.isinf(lost) and math.isinf(c.metrics.sqnr_db):
                continue  # exact where its inputs were: nothing lost
            if best is None or (math.isfinite(lost) and (not math.isfinite(best[1]) or lost > best[1])) or (
                    math.isinf(lost) and math.isinf(best[1]) and c.metrics.sqnr_db < best[0].metrics.sqnr_db):
                best = (c, lost)
        return best

    def first_divergence(self, at_least: Verdict = Verdict.DIFFERENT) -> Comparison | None:
        """The first stage (pipeline order) with a tensor at least this bad, and in it the
        first such tensor in topological order: where the numbers went wrong."""
        for stage in self.stages:
            first = stage.first(at_least)
            if first is not None:
                return first
        return None

    def first_overflow(self) -> Comparison | None:
        """The first stage with a tensor that overflowed (inf / NaN where onnxruntime's is
        finite), and in it the first such tensor in topological order."""
        return next((c for c in map(StageResult.first_overflow, self.stages) if c is not None), None)

    def first_beyond_tier(self) -> Comparison | None:
        """As first_divergence, for the first tensor worse than its precision allows (an fp32
        tensor only SIMILAR, any DIFFERENT one)."""
        return next((c for c in map(StageResult.first_beyond_tier, self.stages) if c is not None), None)

    def format(self, show: str = "all") -> str:
        """The table (every row, or only rows worse than CLOSE: "diverging"; SIMILAR is as good
        as f16 / bf16 get), per-stage counts, the first divergence and the first overflow."""
        return format_report(self, show)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready: every stage with its comparisons, and the summary's findings (non-finite
        numbers as the strings "inf", "-inf", "nan")."""
        first, overflow, lost = self.first_divergence(), self.first_overflow(), self.most_lost()
        th = self.thresholds
        return {"model": self.model, "tensors": self.tensors,
                "thresholds": {"rtol": th.rtol, "atol": th.atol, "min_cosine": th.min_cosine,
                               "min_sqnr_db": th.min_sqnr_db},
                "stages": [s.to_json() for s in self.stages],
                "first_divergence": None if first is None else {"stage": first.stage, **first.to_json()},
                "first_overflow": None if overflow is None else {"stage": overflow.stage, **overflow.to_json()},
                "most_lost": None if lost is None else {"stage": lost[0].stage, "sqnr_lost_db": _json_float(lost[1]),
                                                        **lost[0].to_json()}}


# ---------------------------------------------------------------------------
# Mapping geir values to ONNX tensors.
# ---------------------------------------------------------------------------

_STORAGES = ((formats.NC1HWC0, formats.NCHW), (formats.FRACTAL_NZ, formats.ND), (formats.NHWC, formats.NCHW))


def _as_logical(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """A gm buffer seen as a tensor of logical `shape`: itself, or converted from the
    storage format whose shape it has; None if neither."""
    if array.shape == shape:
        return array
    if not shape:
        return None
    for storage, origin in _STORAGES:
        if storage != formats.FRACTAL_NZ and len(shape) != 4:
            continue
        try:
            phys = formats.physical_shape(storage, origin, shape, formats.c0_of(array.dtype))
        except (ValueError, TypeError):
            continue
        if phys == array.shape:
            return formats.to_logical(array, storage, origin, shape)
    return None


class _Collector:
    """Compares values as a stage runs and keeps the last comparison per tensor."""

    def __init__(self, ref: Reference, stage: StageResult, th: Thresholds):
        self.ref, self.stage, self.th = ref, stage, th
        self.found: dict[str, Comparison] = {}

    def add(self, tensor: str, pos: int, op: str, value: np.ndarray) -> None:
        node = node_key(self.ref.nodes[pos])
        ref = self.ref.values[tensor]
        if (value.dtype.kind in "iub") != (ref.dtype.kind in "iub"):
            # a quantized (integer) value standing for a float tensor: its scale is not known here
            self.stage.unmapped += 1
            return
        metrics = compare_arrays(value, ref, self.th)
        if self.stage.quantized and not metrics.low_precision:
            metrics = replace(metrics, low_precision=True)
        self.found[tensor] = Comparison(self.stage.name, tensor, node, op, pos, metrics,
                                        dtype_name(value.dtype), dtype_name(ref.dtype))

    def graph_value(self, names: list[str], index: int, value: np.ndarray, op: str, count: bool = True) -> None:
        """A graph-level value: output `index` of the last named node with its shape.
        (`count`: whether a value that maps to nothing counts as unmapped; not weights.)"""
        for pos in self.ref.positions(names):
            outs = self.ref.nodes[pos].output
            t = outs[index] if index < len(outs) else ""
            ref = self.ref.values.get(t)
            if ref is not None and ref.shape == value.shape:
                self.add(t, pos, op, value)
                return
        self.stage.unmapped += count

    def kernel_value(self, names: list[str], index: int, value: np.ndarray, op: str) -> None:
        """A buffer that holds output `index` of the last named node with its shape (maybe in a
        storage format)."""
        for pos in self.ref.positions(names):
            outs = self.ref.nodes[pos].output
            t = outs[index] if index < len(outs) else ""
            logical = _as_logical(value, self.ref.values[t].shape) if t in self.ref.values else None
            if logical is not None:
                self.add(t, pos, op, logical)
                return
        self.stage.unmapped += 1

    def kernel_outputs(self, names: list[str], values: Sequence[np.ndarray], op: str) -> None:
        """The buffers a kernel wrote: the last named nodes' outputs with their shapes,
        outputs read outside the kernel first, one tensor per buffer."""
        positions = self.ref.positions(names)
        within = set(positions)
        candidates = [(t, pos) for pos in positions for t in self.ref.nodes[pos].output if t in self.ref.values]
        ranked = ([c for c in candidates if self.ref.escapes(c[0], within)]
                  + [c for c in candidates if not self.ref.escapes(c[0], within)])
        taken: set[str] = set()
        for value in values:
            for t, pos in ranked:
                if t in taken:
                    continue
                logical = _as_logical(value, self.ref.values[t].shape)
                if logical is not None:
                    taken.add(t)
                    self.add(t, pos, op, logical)
                    break
            else:
                self.stage.unmapped += 1

    def finish(self) -> None:
        self.stage.comparisons = sorted(self.found.values(), key=lambda c: (c.order, c.tensor))


class GraphListener(Interpreter.Listener):
    """Captures the results of the top-level ops of a graph function."""

    def __init__(self, collector: _Collector):
        self.c = collector

    def did_interpret_op(self, op: Operation, results: tuple) -> None:
        if not results or not isinstance(op.parent_op(), func.FuncOp):
            return
        if isinstance(op, g.FusionOp):
            for r, v, x in zip(op.results, op.yield_op().values, results):
                if isinstance(v, OpResult):
                    self._value(v, r, x, f"{op.name}({v.op.name})")
            return
        for r, x in zip(op.results, results):
            self._value(r, r, x, op.name)

    def _value(self, v: OpResult, r: SSAValue, x: Any, label: str) -> None:
        """`x`, the value of `r` (which is `v`, or the fusion result `v` is yielded as)."""
        if not isinstance(r.type, TensorType) or not isinstance(x, np.ndarray):
            return
        at = v.op
        index, names = g.node_output(v)
        if names:
            self.c.graph_value(names, index, formats.logical_array(x, r.type), label, not isinstance(at, g.ConstantOp))
        elif not isinstance(at, g.ConstantOp):
            self.c.stage.unmapped += 1


class AscendListener(Interpreter.Listener):
    """After each kernel launch, compares the gm buffers the kernel wrote."""

    def __init__(self, collector: _Collector):
        self.c = collector
        self._args: tuple = ()
        self._written: dict[str, list[int]] = {}
        # an elided concat's buffer (ascend-elide-copies): its producers still to run, its array
        self._pending: dict[SSAValue, int] | None = None
        self._elided: dict[SSAValue, np.ndarray] = {}

    def _written_by(self, kernel: Operation) -> list[int]:
        name = kernel.sym_name.data
        if name not in self._written:
            self._written[name] = written_args(kernel)
        return self._written[name]

    def _count_producers(self, host: Operation) -> dict[SSAValue, int]:
        """Per elided concat buffer of the host, how many launches write it through views."""
        count = {op.results[0]: 0 for op in host.walk()
                 if isinstance(op, a.AllocOp | a.ViewOp) and attr_names.ELIDED in op.attributes}
        if count:
            for launch in host.walk():
                if isinstance(launch, a.LaunchOp):
                    for m in self._marked(launch, self._written_by(launch.kernel_op())):
                        count[m] += 1
        return count

    @staticmethod
    def _marked(launch: a.LaunchOp, written: list[int]) -> set[SSAValue]:
        """The elided concat buffers a launch writes into (a concat of a concat: both)."""
        out = set()
        for i in written:
            v = launch.args[i]
            while True:
                if isinstance(v, OpResult) and attr_names.ELIDED in v.op.attributes:
                    out.add(v)
                if not (isinstance(v, OpResult) and isinstance(v.op, a.ViewOp)):
                    break
                v = v.op.source
        return out

    def will_interpret_op(self, op: Operation, args: tuple) -> None:
        if isinstance(op, a.LaunchOp):
            self._args = args[1:]
            if self._pending is None:
                self._pending = self._count_producers(op.parent_op())

    def did_interpret_op(self, op: Operation, results: tuple) -> None:
        if isinstance(op, a.AllocOp | a.ViewOp) and attr_names.ELIDED in op.attributes and results:
            self._elided[op.results[0]] = results[0]
        if not isinstance(op, a.LaunchOp):
            return
        kernel = op.kernel_op()
        name = kernel.sym_name.data
        names = loc_names(kernel.location)
        written = [i for i in self._written_by(kernel) if isinstance(self._args[i], np.ndarray)]
        tags = kernel.attributes.get(attr_names.OUTPUTS)
        if tags is not None:  # a piece of a split fusion: each output says which value it holds
            scratch = kernel.attributes.get(attr_names.SCRATCH)  # after the outputs
            first = len(self._args) - len(tags.data) - (scratch.value.data if scratch else 0)
            for i in written:
                if i >= first:
                    index, *nodes = tags.data[i - first].data
                    self.c.kernel_value([n.data for n in nodes], index.value.data, self._args[i], f"@{name}")
            written = [i for i in written if i < first]
        values = [self._args[i] for i in written]
        if names:
            self.c.kernel_outputs(names, values, f"@{name}")
        else:
            self.c.stage.unmapped += len(values)
        self._check_elided(op)

    def _check_elided(self, launch: a.LaunchOp) -> None:
        """An elided concat's buffer is its tensor once the last of its producers has run."""
        if not self._pending:
            return
        for m in self._marked(launch, self._written[launch.kernel.root_reference.data]):
            self._pending[m] -= 1
            if self._pending[m] == 0 and m in self._elided:
                names = loc_names(m.owner.location)
                if names:
                    label = f"@{m.owner.attributes[attr_names.ELIDED].data} (no task)"
                    self.c.kernel_outputs(names, [self._elided[m]], label)


# ---------------------------------------------------------------------------
# Running the stages.
# ---------------------------------------------------------------------------


def compare_stage(name: str, module: ModuleOp, feeds: Mapping[str, np.ndarray], ref: Reference,
                  th: Thresholds = Thresholds(), *, device: str = "ascend910b",
                  raise_errors: bool = False, quantized: bool = False) -> StageResult:
    """Run one stage's program on `feeds` and compare every value it produces (`quantized`:
    an int8 stage, or one after it, judged by the SIMILAR tier)."""
    from geir.runtime.ascend_interpreter import run_ascend_module
    from geir.runtime.interpreter import run_module

    ascend = a.is_ascend_module(module)
    stage = StageResult(name, "ascend" if ascend else "graph", quantized=quantized or is_quantized(module))
    collector = _Collector(ref, stage, th)
    t0 = time.perf_counter()
    try:
        if ascend:
            run_ascend_module(module, feeds, device=device, listeners=(AscendListener(collector),))
        else:
            with np.errstate(all="ignore"):  # an overflow is a finding of the comparison, not a warning
                run_module(module, feeds, listeners=(GraphListener(collector),))
    except Exception as e:
        if raise_errors:
            raise
        stage.error = f"run failed: {error_text(e)}"
    stage.seconds = time.perf_counter() - t0
    collector.finish()  # what ran before a failure is still compared
    return stage


def error_text(e: BaseException) -> str:
    """A GeirError's message, or for anything else (a bug in geir) what the tools print."""
    return str(e) if isinstance(e, GeirError) else f"internal error: {type(e).__name__}: {e}"


def compile_stages(model: onnx.ModelProto, device: str = "ascend910b", opt_level: int = 3, *,
                   until: str | None = None, **options) -> tuple[dict[str, ModuleOp], tuple[str, str] | None]:
    """geir.compile's stages (up to `until`), stopping at - not raising on - a stage that
    fails: (stages, (failed stage, error) or None). Bad options and models raise."""
    from xdsl.passes import PassPipeline

    from geir.dialects import make_context
    from geir.frontend.onnx import import_model
    from geir.driver.quantize import QuantizeOptions
    from geir.driver.registry import build_passes, get_all_passes

    options = dict(options)
    quantize = QuantizeOptions.take(options)
    shapes = options.pop("input_shapes", None)  # static shapes for the model's dynamic input dims
    pipeline = _pipeline(device, opt_level, **options)
    module = import_model(model, input_shapes=shapes)
    module.verify()
    stages = {IMPORT_STAGE: module.clone()}
    if quantize is not None and until != IMPORT_STAGE:  # geir.compile's first stage (driver/compile.py)
        try:
            module = quantize.apply(module)
            module.verify()
        except GeirError as e:
            return stages, (QUANTIZE_STAGE, error_text(e))
        stages[QUANTIZE_STAGE] = module.clone()
    ctx, registry = make_context(), get_all_passes()
    for name, specs in pipeline.stages:
        if until is not None and until in stages:
            break
        try:
            PassPipeline(build_passes(",".join(specs), registry)).apply(ctx, module)
            module.verify()
        except Exception as e:  # noqa: BLE001 - reported as the stage's failure
            return stages, (name, error_text(e))
        stages[name] = module.clone()
    return stages, None


def _pipeline(device: str, opt_level: int, **options):
    from geir.driver.pipelines import PipelineOptions, build_pipeline
    from geir.driver.quantize import QuantizeOptions
    from geir.target.device import load_device

    options = dict(options)
    QuantizeOptions.take(options)  # checked; a stage of its own, before the pipeline's
    opts = PipelineOptions.from_kwargs(device=device, opt_level=opt_level, **options)
    load_device(opts.device)  # an unknown device is an error before any work
    return build_pipeline(opts)


def stage_names(device: str = "ascend910b", opt_level: int = 3, **options) -> list[str]:
    """The stages geir.compile makes with these options (without compiling)."""
    options.pop("input_shapes", None)
    first = [IMPORT_STAGE, QUANTIZE_STAGE] if options.get("quantize") else [IMPORT_STAGE]
    return [*first, *(name for name, _ in _pipeline(device, opt_level, **options).stages)]


def select_stages(names: Sequence[str], wanted: Sequence[str] | None) -> list[str]:
    """Stages by full name (`02_simplify`) or short name (`simplify`), in pipeline order."""
    if not wanted:
        return list(names)
    chosen = set()
    for w in wanted:
        match = [s for s in names if w in (s, s.split("_", 1)[-1])]
        if not match:
            raise GeirError(f"no stage '{w}'; stages are {', '.join(names)}")
        chosen.update(match)
    return [s for s in names if s in chosen]


def compare_model(
    model: Any,
    feeds: Mapping[str, np.ndarray] | None = None,
    stages: Sequence[str] | None = None,
    *,
    compiled: Mapping[str, ModuleOp] | None = None,
    device: str = "ascend910b",
    opt_level: int = 3,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    seed: int = 0,
    raise_errors: bool = False,
    reference: Reference | None = None,
    **options,
) -> CompareReport:
    """Compare every stage of geir (or `stages`) with onnxruntime, tensor by tensor.

    `model`: an onnx.ModelProto, a path or bytes. `feeds`: inputs by name (default: seeded
    random). `compiled`: stage name -> module to compare instead of compiling (a
    CompiledModel's `stages`, possibly edited). Other keywords are geir.compile options.
    A stage that fails to compile or run is reported in its StageResult.error (later
    stages are not compiled); `raise_errors` raises instead. `reference`: onnxruntime's
    values on these feeds, when the caller already has them (onnx_reference)."""
    proto, label = _load(model)
    failed: tuple[str, str] | None = None
    if compiled is None:
        selected = select_stages(stage_names(device, opt_level, **options), stages)
        modules, failed = compile_stages(proto, device, opt_level, until=selected[-1], **options)
        if failed and raise_errors:
            raise GeirError(f"stage {failed[0]} failed to compile: {failed[1]}")
    else:
        modules = dict(compiled)
        selected = select_stages(list(modules), stages)
    if feeds is None:
        feeds = _random_feeds(next(iter(modules.values())), seed)
    th = Thresholds(rtol, atol)
    ref = reference if reference is not None else onnx_reference(proto, feeds)
    results = []
    quantized = False
    for name in modules:  # a stage after an int8 one computes on what int8 left
        quantized = quantized or is_quantized(modules[name])
        if name in selected:
            results.append(compare_stage(name, modules[name], feeds, ref, th, device=device,
                                         raise_errors=raise_errors, quantized=quantized))
    for name in selected:
        if name in modules:
            continue
        if failed and name == failed[0]:
            results.append(StageResult(name, "-", error=f"compile failed: {failed[1]}"))
        else:
            results.append(StageResult(name, "-", error="not compiled: an earlier stage failed"))
    inputs = {i: tuple(n.input) for i, n in enumerate(ref.nodes)}
    producers = {t: i for i, n in enumerate(ref.nodes) for t in n.output}
    initializers = {t.name for t in proto.graph.initializer}
    data = frozenset(v.name for v in proto.graph.input if v.name not in initializers)
    return CompareReport(label, results, th, len(ref.values), inputs, producers, data)


def is_quantized(module: ModuleOp) -> bool:
    """A graph-level module with quantize or requantize ops (an ascend one has none left to show)."""
    return any(isinstance(op, g.QuantizeOp | g.RequantizeOp) for op in module.walk())


def _random_feeds(module: ModuleOp, seed: int) -> dict[str, np.ndarray]:
    from geir.runtime.ascend_interpreter import ascend_input_specs
    from geir.runtime.interpreter import module_ranges, random_inputs

    if not a.is_ascend_module(module):
        return random_inputs(module, seed)
    rng = np.random.default_rng(seed)
    extents = {r.name for r in module_ranges(module)}  # the runtime's to fill
    return {n: rng.standard_normal(shape).astype(dtype) if is_float_dtype(dtype)
            else rng.integers(0, 4, shape).astype(dtype) for n, shape, dtype in ascend_input_specs(module)
            if n not in extents}


def _load(model: Any) -> tuple[onnx.ModelProto, str]:
    if isinstance(model, onnx.ModelProto):
        return model, model.graph.name or "model"
    if isinstance(model, bytes):
        return onnx.load_from_string(model), "model"
    return onnx.load(str(model)), str(model)


# ---------------------------------------------------------------------------
# The table.
# ---------------------------------------------------------------------------


def _json_float(x: float) -> float | str:
    return x if math.isfinite(x) else _num(x, "")


def _num(x: float, fmt: str) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return format(x, fmt)


def format_report(report: CompareReport, show: str = "all") -> str:
    header = ("stage", "tensor", "ONNX node", "geir op", "dtype", "verdict", "max abs err", "cosine", "SQNR dB")
    rows = []
    for stage in report.stages:
        for c in stage.comparisons:
            if show == "all" or c.beyond_tier:
                m = c.metrics
                rows.append((c.stage, c.tensor, c.node, c.op, c.precision, c.verdict.name,
                             _num(m.max_abs_err, ".3g"), _num(m.cosine, ".6f"), _num(m.sqnr_db, ".1f")))
    lines = [f"model: {report.model}", f"verdicts: {report.thresholds.describe()}", ""]
    if rows:
        widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
        right = {6, 7, 8}

        def line(r):
            cells = (c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
            return "  ".join(cells).rstrip()

        lines += [line(header), line(tuple("-" * w for w in widths)), *map(line, rows), ""]
    elif show != "all":
        lines += ["every compared tensor is EQUAL or CLOSE (SIMILAR for f16 / bf16 and int8 stages)", ""]
    lines.append(f"stages ({report.tensors} ONNX tensors from onnxruntime):")
    for stage in report.stages:
        n = len(stage.comparisons)
        counts = ", ".join(f"{k} {v.name}" for v, k in stage.counts().items() if k)
        extra = f"; {stage.unmapped} values stand for no ONNX tensor" if stage.unmapped else ""
        where = f"{stage.level}, {stage.seconds:.1f} s" if stage.level != "-" else "not run"
        lines.append(f"  {stage.name} ({where}): {n} tensor{'' if n == 1 else 's'}"
                     f"{': ' + counts if counts else ''}{extra}")
        if stage.error:
            lines.append(f"    error: {stage.error}")
    first = report.first_divergence()
    drift = report.first_beyond_tier()
    if first is not None:
        lines.append(f"first divergence: {_where(first)}")
    else:
        lines.append("first divergence: none (no tensor is DIFFERENT)")
    if drift is not None and drift is not first:
        lines.append(f"first tensor beyond CLOSE: {_where(drift)}")
    overflow = report.first_overflow()
    if overflow is not None:
        lines.append(f"first overflow: stage {overflow.stage}, node '{overflow.node}' (tensor '{overflow.tensor}', "
                     f"{overflow.op}, {overflow.dtype}): {overflow.metrics.overflow} inf/NaN where onnxruntime's "
                     f"{overflow.ref_dtype} is finite")
    lost = report.most_lost()
    if lost is not None:
        c, db = lost
        lines.append(f"lost most to int8: node '{c.node}' (tensor '{c.tensor}', {c.op}) in stage {c.stage}: SQNR "
                     f"{_num(c.metrics.sqnr_db, '.1f')} dB, {_num(db, '.1f')} dB below its best input")
    failed = [s.name for s in report.stages if s.error]
    if failed:
        lines.append(f"stages that failed: {', '.join(failed)} (compared up to the failure)")
    return "\n".join(lines) + "\n"


def _where(c: Comparison) -> str:
    m = c.metrics
    return (f"stage {c.stage}, node '{c.node}' (tensor '{c.tensor}', {c.op}, {c.precision}): {c.verdict.name}, "
            f"max abs err {_num(m.max_abs_err, '.3g')}, cosine {_num(m.cosine, '.6f')}, "
            f"SQNR {_num(m.sqnr_db, '.1f')} dB" + (f", {m.overflow} overflowed" if m.overflow else ""))
