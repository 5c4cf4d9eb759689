"""What each precision mode buys and costs, model by model, on the modeled device.

Every model is compiled at O3 once per precision mode (geir.compile(precision_mode=...)), run
once on the ascend interpreter with the same seeded random inputs and timed by the simulator.
One run, side by side:

- latency us, and x: `must_keep_origin_dtype`'s latency over this mode's;
- peak MiB (inputs/outputs, weights, workspace) and weights MiB, each with x the same way;
- cosine and SQNR (dB) of the outputs against onnxruntime's fp32 outputs on the same inputs
  (all outputs flattened together), and the largest absolute error;
- overflow: kernels whose outputs became inf / NaN from finite inputs (the report's
  `overflow_kernels`, when the runtime reports it);
- ok: cosine at least the mode's bar (target/precision.py, `Mode.min_cosine`), or fp32's
  tolerances for must_keep_origin_dtype.

The summary is the geometric mean over the models of each mode's improvement over
must_keep_origin_dtype. Targets: force_fp16 at least 2x lower latency, weights and peak memory
about halved; allow_mix_precision within 15% of force_fp16's latency.

    python bench/precision.py [--models light_resnet50,transformer1] [--modes force_fp16,...]
                              [--batch N] [--device ascend910b] [--markdown]

Models: the 9 light models of the onnx package (random weights) and TorchScript-exported
transformer blocks (1 and 4 layers, d_model 256, 4 heads, sequence 128), at batch 1 unless
--batch says otherwise. All models and the default modes take about 15 minutes.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

import geir
from geir.driver.compare import compare_arrays
from geir.target.precision import MODES
from geir.testing.suite import ATOL, LIGHT_MODELS, RTOL, light_model, ort_run, with_batch

TRANSFORMERS = {"transformer1": 1, "transformer4": 4}
D_MODEL, HEADS, SEQ = 256, 4, 128
BASE = "must_keep_origin_dtype"
DEFAULT_MODES = (BASE, "force_fp16", "allow_fp32_to_fp16", "allow_mix_precision", "allow_mix_precision_bf16",
                 "allow_fp32_to_bf16")


@dataclass
class Row:
    model: str
    mode: str
    status: str = "ok"
    error: str = ""
    latency_us: float = math.nan
    peak_bytes: int = 0
    weight_bytes: int = 0
    cosine: float = math.nan
    sqnr_db: float = math.nan
    max_err: float = math.nan
    overflow: int | None = None
    ok: bool = False
    compile_s: float = 0.0
    run_s: float = 0.0


def load(name: str, batch: int):
    if name in TRANSFORMERS:
        from geir.testing.transformer import transformer_onnx

        return transformer_onnx(layers=TRANSFORMERS[name], d_model=D_MODEL, heads=HEADS, seq=SEQ, batch=batch)
    if name not in LIGHT_MODELS:
        raise SystemExit(f"unknown model '{name}'; models: {', '.join([*LIGHT_MODELS, *TRANSFORMERS])}")
    model = light_model(name)
    return model if batch == 1 else with_batch(model, batch)


def similarity(ours: list[np.ndarray], ref: list[np.ndarray]) -> tuple[float, float, float]:
    """Cosine, SQNR (dB) and max abs error of all outputs flattened together (geir-compare's
    metrics: NaN / inf must be where the reference has them)."""
    a = np.concatenate([np.asarray(x, np.float64).ravel() for x in ours])
    b = np.concatenate([np.asarray(y, np.float64).ravel() for y in ref])
    m = compare_arrays(a, b)
    return m.cosine, m.sqnr_db, m.max_abs_err


def measure(name: str, model, mode: str, device: str, feeds, reference) -> tuple[Row, dict, list]:
    from geir.runtime.report import build_report
    from geir.runtime.simulator import profile

    row = Row(name, mode)
    try:
        t0 = time.perf_counter()
        cm = geir.compile(model, device=device, precision_mode=mode)
        row.compile_s = time.perf_counter() - t0
        feeds = cm.random_inputs(seed=0) if feeds is None else feeds
        t0 = time.perf_counter()
        outputs, sim = profile(cm.module, feeds, device=device)
        report = build_report(sim, cm.module)
        row.run_s = time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001 - a mode a model cannot take yet: say so, go on
        row.status, row.error = "failed", f"{type(e).__name__}: {' '.join(str(e).split())}"[:200]
        return row, feeds, reference
    if reference is None:
        reference = ort_run(model, feeds)
    ours = list(outputs.values())
    row.latency_us = report["latency_us"]
    row.peak_bytes = report["peak_memory_bytes"]
    row.weight_bytes = report["memory"]["constant_bytes"]
    row.overflow = report.get("overflow_kernels")
    row.cosine, row.sqnr_db, row.max_err = similarity(ours, reference)
    bar = MODES[mode].min_cosine
    if bar is None:
        row.ok = all(x.shape == y.shape and np.allclose(x, y, rtol=RTOL, atol=ATOL) for x, y in zip(ours, reference))
    else:
        row.ok = row.cosine >= bar
    return row, feeds, reference


def _geomean(values: list[float]) -> float:
    values = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else math.nan


def table(rows: list[Row], markdown: bool) -> str:
    base = {r.model: r for r in rows if r.mode == BASE and r.status == "ok"}
    head = ("model", "mode", "latency us", "x", "peak MiB", "x", "weights MiB", "x", "cosine", "SQNR dB",
            "max err", "overflow", "ok")
    lines = []
    for r in rows:
        b = base.get(r.model)
        if r.status != "ok":
            lines.append((r.model, r.mode, f"failed: {r.error}", *[""] * 10))
            continue

        def ratio(x, y):
            return f"{x / y:.2f}" if b and y else "-"

        lines.append((r.model, r.mode, f"{r.latency_us:.1f}", ratio(b.latency_us, r.latency_us) if b else "-",
                      f"{r.peak_bytes / 2**20:.1f}", ratio(b.peak_bytes, r.peak_bytes) if b else "-",
                      f"{r.weight_bytes / 2**20:.1f}", ratio(b.weight_bytes, r.weight_bytes) if b else "-",
                      f"{r.cosine:.6f}", f"{r.sqnr_db:.1f}", f"{r.max_err:.3g}",
                      "-" if r.overflow is None else str(r.overflow), "yes" if r.ok else "NO"))
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(line) + " |" for line in lines]
        return "\n".join(out)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    return "\n".join("  ".join(str(x).ljust(w) for x, w in zip(line, widths)) for line in (head, *lines))


def summary(rows: list[Row]) -> str:
    base = {r.model: r for r in rows if r.mode == BASE and r.status == "ok"}
    modes = list(dict.fromkeys(r.mode for r in rows))
    out = ["geometric mean over the models, must_keep_origin_dtype / mode (higher is better):"]
    means = {}
    for mode in modes:
        if mode == BASE:
            continue
        got = [r for r in rows if r.mode == mode and r.status == "ok" and r.model in base]
        lat = _geomean([base[r.model].latency_us / r.latency_us for r in got])
        peak = _geomean([base[r.model].peak_bytes / r.peak_bytes for r in got])
        weights = _geomean([base[r.model].weight_bytes / r.weight_bytes for r in got if r.weight_bytes])
        means[mode] = lat
        ok = sum(r.ok for r in got)
        out.append(f"  {mode:<26} latency {lat:.2f}x  peak memory {peak:.2f}x  weights {weights:.2f}x  "
                   f"outputs ok {ok}/{len(got)}")
    if "force_fp16" in means:
        f = means["force_fp16"]
        out.append(f"target: force_fp16 latency >= 2x: {f:.2f}x ({'met' if f >= 2 else 'missed'})")
        if "allow_mix_precision" in means:
            gap = f / means["allow_mix_precision"] - 1
            out.append(f"target: allow_mix_precision within 15% of force_fp16 latency: "
                       f"{gap * 100:+.1f}% ({'met' if gap <= 0.15 else 'missed'})")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join([*LIGHT_MODELS, *TRANSFORMERS]))
    p.add_argument("--modes", default=",".join(DEFAULT_MODES))
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--device", default="ascend910b")
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    modes = args.modes.split(",")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise SystemExit(f"unknown mode(s) {', '.join(unknown)}; modes: {', '.join(MODES)}")
    if BASE in modes:
        modes = [BASE] + [m for m in modes if m != BASE]
    rows: list[Row] = []
    for name in args.models.split(","):
        model = load(name, args.batch)
        feeds = reference = None
        for mode in modes:
            row, feeds, reference = measure(name, model, mode, args.device, feeds, reference)
            rows.append(row)
            print(f"  {name} {mode}: " + (f"{row.latency_us:.1f} us, cosine {row.cosine:.6f}"
                                          if row.status == "ok" else row.error)
                  + f" (compile {row.compile_s:.1f} s, run {row.run_s:.1f} s)", file=sys.stderr, flush=True)
    print(table(rows, args.markdown))
    print()
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
