"""What int8 buys against fp16 and fp32, model by model, on the modeled device.

Every model is compiled at O3 three ways, side by side in one run:

- fp32: `precision_mode="must_keep_origin_dtype"`;
- fp16: the default precision mode (`force_fp16`);
- int8: `quantize="int8"`, calibrated by `--method` (entropy by default) on `--samples` seeded
  random inputs, the layers left in float computing in fp16 (the default mode).

Each program runs once on the ascend interpreter with the same seeded random inputs (not the
calibration samples) and is timed by the simulator. Per model and numerics: latency us and x
(fp16's latency over this one), weights MiB and x (fp32's bytes over this one), peak MiB,
the cosine of the outputs to onnxruntime's fp32 outputs, and the int8 contractions and
fallback kernels the program has. The light models carry random weights, and calibration runs
on random inputs: the cosine says how much the int8 numerics move these outputs, not a model's
accuracy (test_quantize_accuracy.py measures that on a trained CNN).

Targets: int8 at least 1.6x faster than fp16 in geomean over the conv models (all light
models: every one is a CNN), weights 4x smaller than fp32. Then the accuracy-driven fallback
search of one model (`--search`, default light_squeezenet): its trade-off table at
`--tolerance`.

    python bench/quantize.py [--models light_resnet50,...] [--batch N] [--method entropy]
                             [--samples 8] [--search light_squeezenet] [--tolerance 0.999] [--timing]

`--timing` times the programs without computing their numbers (`profile(timing=True)`: the
same events, so the same latency), which is what makes batch 8 and up take minutes; the
cosine column is then "-".
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

import geir
from geir.dialects import graph as g
from geir.driver.compare import compare_arrays
from geir.testing.suite import LIGHT_MODELS, light_model, ort_run, with_batch

KINDS = ("fp32", "fp16", "int8")


@dataclass
class Row:
    model: str
    kind: str
    status: str = "ok"
    error: str = ""
    latency_us: float = math.nan
    peak_bytes: int = 0
    weight_bytes: int = 0
    cosine: float = math.nan
    int8_ops: int = 0
    fallback_kernels: int = 0
    compile_s: float = 0.0


def _samples(model, count: int, seed: int = 1) -> dict[str, np.ndarray]:
    cm = geir.compile(model, opt_level=0, lower=False)
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal((count, *shape)).astype(dtype) for n, shape, dtype in cm.input_specs()}


def _options(kind: str, calibration, method: str) -> dict:
    if kind == "fp32":
        return {"precision_mode": "must_keep_origin_dtype"}
    if kind == "int8":
        return {"quantize": "int8", "calibration_data": calibration, "calibration_method": method}
    return {}


def measure(name: str, model, kind: str, feeds, calibration, method: str, device: str, timing: bool = False) -> Row:
    from geir.runtime.report import build_report
    from geir.runtime.simulator import profile

    row = Row(name, kind)
    try:
        t0 = time.perf_counter()
        cm = geir.compile(model, device=device, **_options(kind, calibration, method))
        row.compile_s = time.perf_counter() - t0
        outputs, sim = profile(cm.module, feeds, device=device, timing=timing)
        report = build_report(sim, cm.module)
    except Exception as e:  # noqa: BLE001 - say what failed, go on with the others
        row.status, row.error = "failed", f"{type(e).__name__}: {' '.join(str(e).split())}"[:200]
        return row
    if not timing:  # a timing-only run computes no outputs
        reference = ort_run(model, feeds)
        a = np.concatenate([np.asarray(x, np.float64).ravel() for x in outputs.values()])
        b = np.concatenate([np.asarray(y, np.float64).ravel() for y in reference])
        row.cosine = compare_arrays(a, b).cosine
    row.latency_us = report["latency_us"]
    row.peak_bytes = report["peak_memory_bytes"]
    row.weight_bytes = report["memory"]["constant_bytes"]
    row.fallback_kernels = report["fallback_kernels"]
    simplified = next(m for s, m in cm.stages.items() if s.endswith("simplify"))
    row.int8_ops = sum(1 for op in simplified.walk() if g.is_integer_contraction(op))
    return row


def _geomean(values: list[float]) -> float:
    values = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else math.nan


def table(rows: list[Row]) -> str:
    by = {(r.model, r.kind): r for r in rows if r.status == "ok"}
    head = ("model", "numerics", "latency us", "x fp16", "weights MiB", "x fp32", "peak MiB", "cosine", "int8 ops",
            "fallback kernels")
    lines = []
    for r in rows:
        if r.status != "ok":
            lines.append((r.model, r.kind, f"failed: {r.error}", *[""] * 7))
            continue
        f16, f32 = by.get((r.model, "fp16")), by.get((r.model, "fp32"))
        lines.append((r.model, r.kind, f"{r.latency_us:.1f}", f"{f16.latency_us / r.latency_us:.2f}" if f16 else "-",
                      f"{r.weight_bytes / 2**20:.2f}", f"{f32.weight_bytes / r.weight_bytes:.2f}" if f32 else "-",
                      f"{r.peak_bytes / 2**20:.1f}", "-" if math.isnan(r.cosine) else f"{r.cosine:.6f}",
                      str(r.int8_ops), str(r.fallback_kernels)))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    return "\n".join("  ".join(str(x).ljust(w) for x, w in zip(line, widths)) for line in (head, *lines))


def summary(rows: list[Row]) -> str:
    by = {(r.model, r.kind): r for r in rows if r.status == "ok"}
    models = sorted({m for m, k in by if k == "int8" and (m, "fp16") in by and (m, "fp32") in by})
    speed = _geomean([by[m, "fp16"].latency_us / by[m, "int8"].latency_us for m in models])
    vs32 = _geomean([by[m, "fp32"].latency_us / by[m, "int8"].latency_us for m in models])
    weights = _geomean([by[m, "fp32"].weight_bytes / by[m, "int8"].weight_bytes for m in models])
    return "\n".join([
        f"geometric mean over {len(models)} models (int8 against):",
        f"  fp16 latency {speed:.2f}x, fp32 latency {vs32:.2f}x, fp32 weights {weights:.2f}x",
        f"target: int8 >= 1.6x faster than fp16 on the conv models: {speed:.2f}x ({'met' if speed >= 1.6 else 'missed'})",
        f"target: weights 4x smaller than fp32: {weights:.2f}x ({'met' if weights >= 3.9 else 'missed'})",
    ])


def search(name: str, batch: int, samples: int, method: str, tolerance: float, device: str) -> str:
    model = load(name, batch)
    t0 = time.perf_counter()
    _, calibration = geir.quantize(model, _samples(model, samples), method=method, progress=False,
                                   tolerance=tolerance, device=device)
    seconds = time.perf_counter() - t0
    return f"{name}, {method}, {samples} samples ({seconds:.0f} s):\n" + calibration.search.format()


def load(name: str, batch: int):
    if name not in LIGHT_MODELS:
        raise SystemExit(f"unknown model '{name}'; models: {', '.join(LIGHT_MODELS)}")
    model = light_model(name)
    return model if batch == 1 else with_batch(model, batch)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(LIGHT_MODELS))
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--method", default="entropy")
    p.add_argument("--samples", type=int, default=8, help="calibration samples (seeded random inputs)")
    p.add_argument("--device", default="ascend910b")
    p.add_argument("--search", default="light_squeezenet", help="the model of the fallback search ('' for none)")
    p.add_argument("--tolerance", type=float, default=0.999)
    p.add_argument("--timing", action="store_true",
                   help="timing-only simulation (deployment batches in minutes; no outputs, so no cosine)")
    args = p.parse_args(argv)
    rows: list[Row] = []
    for name in args.models.split(","):
        model = load(name, args.batch)
        feeds = {k: v[0] for k, v in _samples(model, 1, seed=0).items()}
        calibration = _samples(model, args.samples)
        for kind in KINDS:
            row = measure(name, model, kind, feeds, calibration, args.method, args.device, args.timing)
            rows.append(row)
            cosine = "" if math.isnan(row.cosine) else f", cosine {row.cosine:.6f}"
            print(f"  {name} {kind}: " + (f"{row.latency_us:.1f} us{cosine}" if row.status == "ok"
                                          else row.error) + f" (compile {row.compile_s:.1f} s)",
                  file=sys.stderr, flush=True)
    print(table(rows))
    print()
    print(summary(rows))
    if args.search:
        print()
        print(search(args.search, args.batch, args.samples, args.method, args.tolerance, args.device))
    return 0


if __name__ == "__main__":
    sys.exit(main())
