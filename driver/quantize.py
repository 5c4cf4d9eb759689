"""INT8 post-training calibration: `geir.quantize(model, calibration_data, ...)`.

    import geir
    qdq, table = geir.quantize("model.onnx", {"x": samples}, method="entropy")
    table.save("model.calib.json")
    cm = geir.compile(qdq, precision_mode="must_keep_origin_dtype")

The float graph (after graph-simplify, the graph the compiler optimises: BatchNorms already in
the convs' weights) runs in the graph interpreter, in its own precision, on every calibration
sample; the statistics of the data input of each quantizable layer (driver/calibration.py)
become its int8 range by `method`, a calibration table (passes/graph/quantize.py has its
format), and graph-quantize's QDQ graph. `geir.compile(model, quantize="int8",
calibration_data=...)` and `geir-compile --quantize int8` do the same as their first stage.

`calibration_data` is one of

* a dict input name -> array with a leading sample axis (`[S, *input_shape]`); for a model of
  batch N, also the rows stacked along the batch axis (`[S * N, *input_shape[1:]]`), run N at
  a time;
* a list of per-sample dicts input name -> array of the input's shape;
* a `.npz` file holding such a dict, or a directory of `.npz` files (shards, in name order).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from collections.abc import Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.ir import SSAValue

from geir.driver.calibration import (
    DEFAULT_METHOD,
    DEFAULT_PERCENTILE,
    CalibrationError,
    TensorStats,
    activation_params,
    check_method,
)
from geir.dialects import graph as g
from geir.passes.graph.quantize import (
    CalibrationTable,
    LayerRange,
    insert_qdq,
    is_quantized,
    quantizable_layers,
    unnamed,
)

Feeds = dict[str, np.ndarray]
InputSpec = tuple[str, tuple[int, ...], np.dtype]


# ---------------------------------------------------------------------------
# Calibration data
# ---------------------------------------------------------------------------


def _npz_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(path.glob("*.npz"))
        if not files:
            raise CalibrationError(f"calibration data: the directory {path} holds no .npz file")
        return files
    if not path.is_file():
        raise CalibrationError(f"calibration data: no such file or directory: {path}")
    if path.suffix != ".npz":
        raise CalibrationError(f"calibration data: {path} is not a .npz file or a directory of them")
    return [path]


def _load_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except (OSError, ValueError) as e:
        raise CalibrationError(f"calibration data: cannot read {path}: {e}") from None


def _check_names(names: Sequence[str], specs: Sequence[InputSpec], where: str) -> None:
    inputs = [n for n, _, _ in specs]
    unknown = [n for n in names if n not in inputs]
    missing = [n for n in inputs if n not in names]
    if unknown or missing:
        parts = []
        if missing:
            parts.append(f"no data for input(s) {', '.join(repr(n) for n in missing)}")
        if unknown:
            parts.append(f"{', '.join(repr(n) for n in unknown)} {'is not an input' if len(unknown) == 1 else 'are not inputs'}")
        raise CalibrationError(f"calibration data{where}: {'; '.join(parts)}; the model's inputs are "
                               f"{', '.join(repr(n) for n in inputs)}")


def _as_input(name: str, value: Any, shape: tuple[int, ...], dtype: np.dtype, where: str) -> np.ndarray:
    value = np.asarray(value)
    if value.shape != shape:
        raise CalibrationError(f"calibration data{where}: input '{name}' has shape {list(value.shape)}, "
                               f"the model's is {list(shape)}")
    if value.dtype != dtype:
        if not np.can_cast(value.dtype, dtype, "same_kind"):
            raise CalibrationError(f"calibration data{where}: input '{name}' has dtype {value.dtype}, "
                                   f"the model's is {dtype}")
        value = value.astype(dtype)
    return value


def _stacked_runs(data: Mapping[str, Any], specs: Sequence[InputSpec], where: str) -> list[Feeds]:
    """The runs of a dict of stacked samples (a leading sample axis, or rows of the batch)."""
    _check_names(list(data), specs, where)
    runs_per_input = {}
    for name, shape, dtype in specs:
        array = np.asarray(data[name])
        if array.shape[1:] == shape:
            runs = list(array)
        elif shape and array.ndim == len(shape) and array.shape[1:] == shape[1:] and shape[0] > 0 \
                and array.shape[0] % shape[0] == 0:
            runs = [array[i: i + shape[0]] for i in range(0, array.shape[0], shape[0])]
        else:
            raise CalibrationError(
                f"calibration data{where}: input '{name}' has shape {list(array.shape)}; give samples of the "
                f"model's input shape {list(shape)} along a leading axis: [S, {', '.join(map(str, shape))}]")
        runs_per_input[name] = [_as_input(name, r, shape, dtype, where) for r in runs]
    counts = {n: len(r) for n, r in runs_per_input.items()}
    if len(set(counts.values())) > 1:
        raise CalibrationError(f"calibration data{where}: the inputs hold different numbers of samples: "
                               + ", ".join(f"'{n}' {c}" for n, c in counts.items()))
    count = next(iter(counts.values()), 0)
    return [{n: runs_per_input[n][i] for n in runs_per_input} for i in range(count)]


def calibration_runs(data: Any, specs: Sequence[InputSpec]) -> Iterator[list[Feeds]]:
    """The model runs of the calibration data, shard by shard (one shard unless a directory of
    .npz files), each checked against the model's inputs."""
    if isinstance(data, str | PathLike):
        for path in _npz_files(Path(data)):
            yield _stacked_runs(_load_npz(path), specs, f" ({path.name})")
    elif isinstance(data, Mapping):
        yield _stacked_runs(data, specs, "")
    elif isinstance(data, Sequence) and not isinstance(data, str | bytes):
        runs = []
        for i, sample in enumerate(data):
            if not isinstance(sample, Mapping):
                raise CalibrationError(f"calibration data: sample {i} is a {type(sample).__name__}, not a dict "
                                       "input name -> array")
            _check_names(list(sample), specs, f" (sample {i})")
            runs.append({n: _as_input(n, sample[n], s, d, f" (sample {i})") for n, s, d in specs})
        yield runs
    else:
        raise CalibrationError(f"calibration data of type {type(data).__name__}: give a dict input name -> samples, a "
                               "list of per-sample dicts, a .npz file or a directory of .npz files")


# ---------------------------------------------------------------------------
# Collecting statistics
# ---------------------------------------------------------------------------


class _Collector(Interpreter.Listener):
    """Takes in the data input of each layer it watches as the interpreter reaches the layer."""

    def __init__(self, layers: Mapping[int, str]):
        self.layers = layers  # id(op) -> layer name
        self.stats = {name: TensorStats() for name in layers.values()}

    def will_interpret_op(self, op, args) -> None:
        name = self.layers.get(id(op))
        if name is not None:
            self.stats[name].add(args[0])

    def did_interpret_op(self, op, results) -> None:
        pass


class ProgressBar:
    """` label [#####.....] i/n` drawn on stderr when it is a terminal (and enabled), from
    where the cursor stands and redrawn there (the terminal saves the position: a stage line
    of geir-compile stays whole), erased when done. Nothing in logs and pipes."""

    WIDTH = 30
    SAVE, RESTORE, CLEAR = "\0337", "\0338", "\033[K"

    def __init__(self, label: str, total: int, enabled: bool = True, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = enabled and getattr(self.stream, "isatty", lambda: False)()
        self.label, self.total = label, total
        if self.enabled:
            self.stream.write(self.SAVE)

    def update(self, done: int) -> None:
        if self.enabled:
            filled = self.WIDTH * done // max(self.total, 1)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            self.stream.write(f"{self.RESTORE} {self.label} [{bar}] {done}/{self.total}{self.CLEAR}")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write(self.RESTORE + self.CLEAR)
            self.stream.flush()


def collect_stats(module: ModuleOp, data: Any, skip: Sequence[str] = (), progress: bool = True
                  ) -> dict[str, TensorStats]:
    """The statistics of the data input of every quantizable layer not in `skip`, over every
    calibration run (merged shard by shard)."""
    from geir.runtime.interpreter import input_specs, run_module

    specs = input_specs(module)
    watched = {id(layer.op): layer.name for layer in quantizable_layers(module) if layer.name not in skip}
    shards = list(calibration_runs(data, specs))
    total = sum(len(runs) for runs in shards)
    if total == 0:
        raise CalibrationError("the calibration set is empty: no sample to measure the activations on")
    stats = {name: TensorStats() for name in watched.values()}
    bar = ProgressBar("calibrating", total, progress)
    done = 0
    try:
        for runs in shards:
            collector = _Collector(watched)
            for feeds in runs:
                run_module(module, feeds, listeners=(collector,))
                done += 1
                bar.update(done)
            stats = {name: stats[name].merge(collector.stats[name]) for name in stats}
    finally:
        bar.close()
    return stats


# ---------------------------------------------------------------------------
# The API
# ---------------------------------------------------------------------------


QUANTIZE_TYPES = ("int8",)


@dataclass(frozen=True)
class QuantizeOptions:
    """geir.compile's quantization options: `quantize="int8"` with `calibration_data` (and
    `calibration_method`, `calibration_percentile`, `quantize_skip`, `calibration_table`, the
    path to write the table to) make its first stage after the import calibrate and insert QDQ."""

    calibration_data: Any
    method: str = DEFAULT_METHOD
    percentile: float = DEFAULT_PERCENTILE
    skip: tuple[str, ...] = ()
    table: str | None = None
    tolerance: float | None = None  # the outputs' cosine an accuracy-driven fallback must meet
    report: Any = None  # hears the fallback search's trade-off table (a str)

    KEYS = ("quantize", "calibration_data", "calibration_method", "calibration_percentile", "quantize_skip",
            "calibration_table", "quantize_tolerance", "quantize_report")

    @classmethod
    def take(cls, options: dict[str, Any]) -> QuantizeOptions | None:
        """Removes the quantization keys from `options`; None when not quantizing. Checked here,
        before the model is read."""
        mine = {k: options.pop(k) for k in cls.KEYS if k in options}
        kind = mine.pop("quantize", None)
        if not kind:
            given = sorted(k for k, v in mine.items() if v is not None)
            if given:
                raise CalibrationError(f"{', '.join(given)} given without quantize=\"int8\"")
            return None
        if kind not in QUANTIZE_TYPES:
            raise CalibrationError(f"quantize: unknown type '{kind}'; geir quantizes to {', '.join(QUANTIZE_TYPES)}")
        if mine.get("calibration_data") is None:
            raise CalibrationError("quantize=\"int8\" needs calibration_data (samples of the model's inputs)")
        opts = cls(mine["calibration_data"], mine.get("calibration_method") or DEFAULT_METHOD,
                   DEFAULT_PERCENTILE if mine.get("calibration_percentile") is None else mine["calibration_percentile"], tuple(mine.get("quantize_skip") or ()),
                   None if mine.get("calibration_table") is None else str(mine["calibration_table"]),
                   mine.get("quantize_tolerance"), mine.get("quantize_report"))
        check_method(opts.method, opts.percentile)
        check_tolerance(opts.tolerance)
        return opts

    def apply(self, module: ModuleOp, progress: bool = False, latency_of=None) -> ModuleOp:
        module, table = quantize_module(module, self.calibration_data, self.method, self.percentile, self.skip,
                                        progress, tolerance=self.tolerance, latency_of=latency_of)
        if self.table is not None:
            table.save(self.table)
        if table.search is not None and self.report is not None:
            self.report(table.search.format())
        return module


EVAL_SAMPLES = 8
"""Calibration samples the fallback search evaluates each candidate on (the first ones)."""


def check_tolerance(tolerance: float | None) -> None:
    if tolerance is not None and not 0 < tolerance <= 1:
        raise CalibrationError(f"tolerance {tolerance}: the outputs' cosine to the float model, in (0, 1]")


def _input_names(module: ModuleOp) -> dict[str, str]:
    """Each quantizable layer's data input, by its SSA name (for the table's readers)."""
    return {layer.name: layer.op.operands[0].name_hint or "" for layer in quantizable_layers(module)}


def share_max_pool_params(module: ModuleOp, layers: dict[str, LayerRange]) -> dict[str, LayerRange]:
    """A layer whose data input is max_pool(x) takes the parameters of a layer that reads x
    itself (the table notes it: `"shares": that layer`), as onnxruntime's QDQ quantizer shares
    a max pool's parameters with its input. The pool's values are some of x's, so x's range
    holds them; and graph-fold-qdq then moves the pool's quantize before it, where it is the
    quantize the other layer has already (Inception's pool branch beside the 1x1 convs of the
    same concat): the pool runs in int8 on the tensor those convs read, and the concat, read in
    int8 only, is written by its producers' requantizing epilogues."""
    first_reader: dict[SSAValue, str] = {}
    for layer in quantizable_layers(module):
        if layer.name in layers:
            first_reader.setdefault(layer.op.operands[0], layer.name)
    shared = dict(layers)
    for layer in quantizable_layers(module):
        pool = layer.op.operands[0].owner
        if layer.name not in layers or not isinstance(pool, g.MaxPoolOp):
            continue
        other = first_reader.get(pool.operands[0])
        if other is not None:
            r = layers[other]
            shared[layer.name] = LayerRange(r.scale, r.zero_point, {**layers[layer.name].info, "shares": other})
    return shared


def quantize_module(module: ModuleOp, calibration_data: Any, method: str = DEFAULT_METHOD,
                    percentile: float = DEFAULT_PERCENTILE, skip: Sequence[str] = (), progress: bool = True, *,
                    tolerance: float | None = None, latency_of=None) -> tuple[ModuleOp, CalibrationTable]:
    """Calibrate a graph-level float module in place (it is simplified first) and insert QDQ.
    With a `tolerance` (the outputs' cosine to the float model), the layers an accuracy-driven
    search keeps in float (driver/sensitivity.py, priced by `latency_of`: a QDQ module -> the
    simulator's report) are skipped and named in the table."""
    from geir.passes.graph.simplify import simplify

    check_method(method, percentile)
    skip = tuple(skip)
    if is_quantized(module):
        raise CalibrationError("the model is already quantized (it has quantize / dequantize ops); calibrate its "
                               "float version, or compile it without --quantize")
    simplify(module)
    unknown = unnamed(module, skip)
    if unknown:  # before the runs, not after
        raise CalibrationError(f"skip: no op of the graph is named {', '.join(repr(n) for n in unknown)}")
    stats = collect_stats(module, calibration_data, skip, progress)
    inputs = _input_names(module)
    layers = {}
    for name, s in stats.items():
        p = activation_params(s, method, percentile)
        layers[name] = LayerRange(p.scale, p.zero_point, {"input": inputs[name], "min": s.min, "max": s.max,
                                                          "threshold": p.threshold})
    layers = share_max_pool_params(module, layers)
    table = CalibrationTable(method, layers, percentile if method == "percentile" else None)
    if tolerance is not None:
        check_tolerance(tolerance)
        search = _fallback(module, table, calibration_data, tolerance, skip, progress, latency_of)
        table = replace(table, float_layers=search.chosen.float_layers, search=search)
        skip = skip + search.chosen.float_layers
    insert_qdq(module, table, skip)
    module.verify()
    return module, table


def _fallback(module: ModuleOp, table: CalibrationTable, calibration_data: Any, tolerance: float,
              skip: tuple[str, ...], progress: bool, latency_of):
    from geir.driver.sensitivity import search_fallback
    from geir.runtime.interpreter import input_specs

    specs = input_specs(module)
    feeds = [f for runs in calibration_runs(calibration_data, specs) for f in runs][:EVAL_SAMPLES]
    line = ProgressBar("fallback search", 1, progress)
    try:
        return search_fallback(module, table, feeds, tolerance, skip=skip, latency_of=latency_of,
                               progress=lambda text: line.enabled and line.stream.write(
                                   f"{line.RESTORE} fallback search: {text}{line.CLEAR}"))
    finally:
        line.close()


def quantize(model: Any, calibration_data: Any, method: str = DEFAULT_METHOD, percentile: float = DEFAULT_PERCENTILE,
             skip: Sequence[str] = (), progress: bool = True, *, table: str | PathLike | None = None,
             example_inputs=None, tolerance: float | None = None, latency_of=None
             ) -> tuple[ModuleOp, CalibrationTable]:
    """Calibrate `model` (anything geir.compile takes) on `calibration_data` (module docstring)
    and return its QDQ graph module, which geir.compile takes, and the calibration table
    (written to `table` when given). `skip`: node names of layers kept in float; `progress`: a
    progress bar over the samples on stderr when it is a terminal. `tolerance`: the cosine of
    the outputs to the float model's that an accuracy-driven fallback must meet (layers kept in
    float, chosen by sensitivity and by the modeled latency `latency_of` gives: driver/sensitivity.py;
    geir.quantize prices on a device); the table names them (`float_layers`) and holds the search
    (`table.search.format()`: the trade-off)."""
    from geir.driver.model_import import import_graph

    check_method(method, percentile)
    module, calibration = quantize_module(import_graph(model, example_inputs), calibration_data, method, percentile,
                                          skip, progress, tolerance=tolerance, latency_of=latency_of)
    if table is not None:
        calibration.save(table)
    return module, calibration
