"""What each optimisation of the pipeline buys, model by model, on the modeled device.

One row per step, each step adding one thing to the one before (geir.compile options):

  O0             opt_level=0: import, lower (no double buffering), plan memory without reuse;
                 no graph simplification, no fusion, ND layout, one stream. Shape arithmetic
                 and constant expressions are still evaluated by the lowering (it cannot build
                 kernels for them), as GE folds them before building kernels.
  +simplify      opt_level=1: graph-simplify (constant / shape folding, canonicalisation,
                 BN folding, CSE / DCE).
  +fusion        opt_level=2, layout=False, memory_reuse=False, streams=1: graph-fuse, and the
                 double-buffered tile loops O2 turns on with it.
  +layout        layout=True: graph-layout (NC1HWC0 / FRACTAL_Z / FRACTAL_NZ, graph.trans_data).
  +memory reuse  memory_reuse=True: ascend-plan-memory reuse=true.
  +streams       streams=4: ascend-assign-streams + ascend-insert-events; with everything
                 before it, this is opt_level=3.

A step that fails to compile or run is left out of the steps after it (their rows say
"without ..."), so one broken pass does not hide what the others do.

Each configuration is compiled, run once on the ascend interpreter with seeded random inputs
and timed by the simulator (runtime.simulator.profile, runtime.report.build_report):

- latency us: modeled end-to-end latency; x: O0's over this row's;
- peak MiB: peak device memory (inputs/outputs, weights, workspace); x: O0's over this row's;
- ws MiB: the workspace alone (the intermediate tensors memory reuse acts on);
- kernels: distinct kernels launched; trans_data: layout-conversion kernels launched (their
  modeled share of kernel time); compile s / run s: compile time, and the functional run
  plus simulation (the bench's own cost); ok: outputs allclose to onnxruntime's on the same
  inputs (the test suite's tolerances, testing.suite.RTOL / ATOL).

Every configuration keeps the model's fp32 (`precision_mode="must_keep_origin_dtype"`), so the
rows show the optimisations alone and `ok` can use fp32 tolerances; what fp16 / bf16 add on top
is bench/precision.py's table. A step whose pass has not landed is "n/a (pass not available)";
a failure is a footnote.
The summary is the geometric mean over the models of each step's improvement over O0; the
last step is all optimisations together (seed: 2.9x latency, 2.3x memory; target >= 3x and
>= 2.5x).

    python bench/pipeline.py [--models light_resnet50,light_squeezenet,transformer1]
                             [--device ascend910b] [--markdown] [--update-docs]

Models: the 9 light models of the onnx package (random weights) and PyTorch-exported
(TorchScript) transformer blocks, 1 and 4 layers, d_model 256, 4 heads, sequence 128.
All models take about 8 minutes (light_resnet50 O0: ~5 s to run and simulate); pick a subset
with --models. `--update-docs` rewrites the generated section of docs/pipeline.md.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import geir
from geir.testing.suite import ATOL, LIGHT_MODELS, RTOL, light_model, ort_run

TRANSFORMERS = {"transformer1": 1, "transformer4": 4}
D_MODEL, HEADS, SEQ = 256, 4, 128
DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "pipeline.md")
BEGIN, END = "<!-- BEGIN bench/pipeline.py (generated) -->", "<!-- END bench/pipeline.py -->"


@dataclass(frozen=True)
class Step:
    name: str
    options: dict[str, Any]  # what the step adds to the options of the steps before it
    adds: str | None  # the pass it adds (n/a when that pass is not registered)
    what: str


STEPS = (
    Step("O0", {"opt_level": 0}, None,
         "opt_level=0: import, lower (no double buffering), plan memory without reuse; "
         "no simplification, no fusion, ND layout, one stream"),
    Step("+simplify", {"opt_level": 1}, "graph-simplify", "opt_level=1: graph-simplify"),
    Step("+fusion", {"opt_level": 2, "layout": False, "memory_reuse": False, "streams": 1}, "graph-fuse",
         "opt_level=2, layout=False, memory_reuse=False, streams=1: graph-fuse, double-buffered tile loops"),
    Step("+layout", {"layout": True}, "graph-layout", "layout=True: graph-layout"),
    Step("+memory reuse", {"memory_reuse": True}, "ascend-plan-memory",
         "memory_reuse=True: ascend-plan-memory reuse=true"),
    Step("+streams", {"streams": 4}, "ascend-assign-streams",
         "streams=4: ascend-assign-streams, ascend-insert-events (all of it is opt_level=3)"),
)


@dataclass
class Row:
    model: str
    step: str
    status: str = "ok"  # ok, n/a, failed
    error: str = ""
    without: tuple[str, ...] = ()  # earlier steps that failed, left out of this configuration
    latency_us: float = math.nan
    peak_bytes: int = 0
    workspace_bytes: int = 0
    kernels: int = 0
    trans_data: int = 0  # layout-conversion kernel launches
    layout_share: float = 0.0  # their share of kernel time
    compile_s: float = 0.0
    run_s: float = 0.0
    matches: bool | None = None
    outputs: dict[str, np.ndarray] = field(default_factory=dict, repr=False)


def load(name: str):
    if name in TRANSFORMERS:
        from geir.testing.transformer import transformer_onnx

        return transformer_onnx(layers=TRANSFORMERS[name], d_model=D_MODEL, heads=HEADS, seq=SEQ)
    if name not in LIGHT_MODELS:
        raise SystemExit(f"unknown model '{name}'; models: {', '.join([*LIGHT_MODELS, *TRANSFORMERS])}")
    return light_model(name)


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}"[:200]


def measure(row: Row, model, options: dict[str, Any], adds: str | None, device: str,
            feeds: dict | None) -> dict | None:
    """Compile with `options`, run once, simulate; fills `row`, returns the feeds used."""
    from geir.runtime.interpreter import random_inputs
    from geir.runtime.report import build_report
    from geir.runtime.simulator import profile

    try:
        t0 = time.perf_counter()
        # fp32 kept: the table is what each optimisation buys (bench/precision.py: fp16's)
        cm = geir.compile(model, device=device, precision_mode="must_keep_origin_dtype", **options)
        row.compile_s = time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001 - a model the pipeline cannot compile yet: say so, go on
        row.status, row.error = "failed", f"compile: {_short(e)}"
        return feeds
    if adds is not None and adds in cm.unavailable:
        row.status = "n/a"
        return feeds
    if feeds is None:
        feeds = random_inputs(cm.stages["01_import"], seed=0)
    try:
        t0 = time.perf_counter()
        row.outputs, sim = profile(cm.module, feeds, device=device)
        report = build_report(sim, cm.module)
        row.run_s = time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001
        row.status, row.error = "failed", f"run: {_short(e)}"
        return feeds
    row.latency_us = report["latency_us"]
    row.peak_bytes = report["peak_memory_bytes"]
    row.workspace_bytes = report["memory"]["workspace_bytes"]
    row.kernels = report["kernel_count"]
    row.trans_data = sum(1 for k in report["kernels"] if k["layout_conversion"])
    row.layout_share = report["layout_conversion_share"]
    return feeds


def _close(ours: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> bool:
    return ours.keys() == ref.keys() and all(
        x.shape == y.shape and np.allclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True) for x, y in
        ((ours[k], ref[k]) for k in ours))


def onnxruntime_outputs(model, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return dict(zip((o.name for o in model.graph.output), ort_run(model, feeds)))


def bench_model(name: str, device: str, log) -> list[Row]:
    """Every step on one model. A step that fails is left out of the later steps' options
    (their rows say so), so one broken pass does not hide what the others do."""
    model = load(name)
    rows: list[Row] = []
    feeds = None
    options: dict[str, Any] = {}
    failed: list[str] = []
    reference = None
    for step in STEPS:
        row = Row(name, step.name, without=tuple(failed))
        trial = {**options, **step.options}
        feeds = measure(row, model, trial, step.adds, device, feeds)
        if row.status == "failed":
            failed.append(step.name)
        else:
            options = trial
        if row.status == "ok":
            if reference is None:
                reference = onnxruntime_outputs(model, feeds)
            row.matches = _close(row.outputs, reference)
        rows.append(row)
        result = (f"{row.latency_us:.1f} us" if row.status == "ok"
                  else row.status + (f": {row.error}" if row.error else ""))
        log(f"  {name} {step.name}: {result} (compile {row.compile_s:.1f} s, run {row.run_s:.1f} s)")
    for row in rows:
        row.outputs = {}
    return rows


# ---------------------------------------------------------------------------
# Tables.
# ---------------------------------------------------------------------------

COLUMNS = ("model", "step", "latency us", "x", "peak MiB", "x", "ws MiB", "kernels", "trans_data", "compile s",
           "run s", "ok", "note")
RIGHT = set(range(2, len(COLUMNS) - 1))


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f}"


def row_cells(row: Row, base: Row, notes: list[str]) -> tuple[str, ...]:
    note = f"without {', '.join(row.without)}" if row.without else ""
    if row.status == "failed":
        notes.append(f"{row.model} {row.step}: {row.error}")
        note = "; ".join(filter(None, (f"failed [{len(notes)}]", note)))
    if row.status != "ok":
        cells = ("n/a (pass not available)",) if row.status == "n/a" else ("-",)
        return (row.model, row.step, *cells, *[""] * (len(COLUMNS) - 4), note)
    ok = base.status == "ok"
    lat_x = f"{base.latency_us / row.latency_us:.2f}" if ok and row.latency_us else ""
    mem_x = f"{base.peak_bytes / row.peak_bytes:.2f}" if ok and row.peak_bytes else ""
    match = "" if row.matches is None else ("yes" if row.matches else "NO")
    return (row.model, row.step, f"{row.latency_us:.1f}", lat_x, _mib(row.peak_bytes), mem_x,
            _mib(row.workspace_bytes), str(row.kernels), f"{row.trans_data} ({row.layout_share:.1%})",
            f"{row.compile_s:.1f}", f"{row.run_s:.1f}", match, note)


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan


def summary(results: dict[str, list[Row]]) -> list[tuple[str, ...]]:
    """Per step: geometric mean over the models of O0 / step for latency, peak and workspace."""
    out = []
    for i, step in enumerate(STEPS[1:], start=1):
        lat, peak, ws, partial = [], [], [], 0
        for rows in results.values():
            base, row = rows[0], rows[i]
            if base.status == row.status == "ok":
                lat.append(base.latency_us / row.latency_us)
                peak.append(base.peak_bytes / row.peak_bytes)
                if row.workspace_bytes:
                    ws.append(base.workspace_bytes / row.workspace_bytes)
                partial += bool(row.without)
        models = f"{len(lat)}" + (f" ({partial} without a failed step)" if partial else "")
        out.append((step.name, f"{geomean(lat):.2f}x" if lat else "n/a", f"{geomean(peak):.2f}x" if peak else "n/a",
                    f"{geomean(ws):.2f}x" if ws else "n/a", models))
    return out


SUMMARY_COLUMNS = ("step (vs O0)", "latency", "peak memory", "workspace", "models")


def text_table(header: tuple[str, ...], rows: list[tuple[str, ...]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]

    def line(r):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    return [line(header), line(tuple("-" * w for w in widths)), *map(line, rows)]


def md_table(header: tuple[str, ...], rows: list[tuple[str, ...]], right: set[int]) -> list[str]:
    align = ["---:" if i in right else "---" for i in range(len(header))]
    return ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |",
            *("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows)]


def render(results: dict[str, list[Row]], device: str, seconds: float, markdown: bool) -> str:
    table = md_table if markdown else text_table
    notes: list[str] = []
    rows = [row_cells(r, rows_[0], notes) for rows_ in results.values() for r in rows_]
    lines = [f"Device {device}, seeded random inputs; every row compiled, run once and simulated in one "
             f"run of `bench/pipeline.py --models {','.join(results)}` ({seconds:.0f} s). "
             f"Steps, each adding to the ones before:", ""]
    lines += [f"- {s.name}: {s.what}" for s in STEPS]
    lines += ["", *table(COLUMNS, rows, RIGHT), ""]
    if notes:
        lines += [*(f"[{i}] {n}" + ("  " if markdown else "") for i, n in enumerate(notes, 1)), ""]
    lines += ["Geometric mean over the models of the improvement over O0 (higher is better; the last row "
              "is every optimisation together; seed: 2.9x latency, 2.3x memory; target: >= 3x, >= 2.5x):", ""]
    lines += table(SUMMARY_COLUMNS, summary(results), {1, 2, 3})
    return "\n".join(lines) + "\n"


def update_docs(text: str, path: str = DOCS) -> None:
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{path} has no generated section ({BEGIN} ... {END})")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{head}{BEGIN}\n{text}{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join([*LIGHT_MODELS, *TRANSFORMERS]),
                   help="comma-separated models (default: the 9 light models, transformer1, transformer4)")
    p.add_argument("--device", default="ascend910b")
    p.add_argument("--markdown", action="store_true", help="print markdown tables")
    p.add_argument("--update-docs", action="store_true", help="also write the markdown into docs/pipeline.md")
    args = p.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    start = time.perf_counter()
    results: dict[str, list[Row]] = {}
    for name in args.models.split(","):
        t0 = time.perf_counter()
        log(f"{name}:")
        results[name] = bench_model(name, args.device, log)
        log(f"  {name}: {time.perf_counter() - t0:.0f} s")
    seconds = time.perf_counter() - start
    print(render(results, args.device, seconds, args.markdown), end="")
    if args.update_docs:
        update_docs(render(results, args.device, seconds, markdown=True))
        log(f"wrote {DOCS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
