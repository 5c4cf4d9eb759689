"""The figures a deployment engineer asks of an LLM on one modeled device.

    progs = geir.models.llama("llama-2-7b", batch=8, seq=512, weights="shape-only",
                              cache="inplace", max_len=4096)
    r = progs.report()                 # compiles and times both programs, without data
    print(format_llm_report(r))

`llm_report(compiled, kind, batch, tokens)` turns one compiled program's profile report
(runtime/report.py) into the LLM's terms: a prefill's latency (the time to the first token)
and its tokens/s; a decode step's ms per token and tokens/s (one token per sequence a step);
the bytes of the weights, the KV cache (the inputs the program updates in place), the
workspace and the peak beside the device's HBM (does it fit?); and the two bounds beside the
latency - the HBM bound (every byte the step must move once: the report's `roofline.hbm_us`)
and the cube bound (its matmul FLOPs at the cube's rate: `roofline.cube_us`). A decode step
is HBM-bound, a prefill cube-bound: `x_bound` is the latency over the larger of the two.

A decode step is timed at the cache's last row (every row valid: the attention kernel reads
all of them under its mask, so the step is the slowest one of a full context).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from geir.errors import GeirError
from geir.runtime.report import format_bytes
from geir.target.device import load_device

KINDS = ("prefill", "decode")


def timing_feeds(compiled, kind: str, position: int | None = None) -> dict[str, np.ndarray]:
    """The integer inputs of a LLaMA program for a timing-only run: token ids 0, and for a
    decode step of a static cache its position at `position` (default: the cache's last row)."""
    feeds = {n: np.zeros(s, d) for n, s, d in compiled.input_specs() if np.dtype(d).kind in "iu"}
    if kind == "decode" and "cache_position" in feeds:
        from geir.runtime.ascend_interpreter import host_args

        last = {h.name: h.max_position for h in host_args(compiled.module) if h.max_position is not None}
        row = last.get("cache_position") if position is None else position
        for name in ("cache_position", "position_ids"):
            if name in feeds and row is not None:
                feeds[name] = np.full(feeds[name].shape, row, feeds[name].dtype)
    return feeds


def llm_report(compiled, kind: str, batch: int, tokens: int, report: Mapping[str, Any] | None = None) -> dict:
    """The LLM figures of one program: `kind` "prefill" (`tokens` per sequence) or "decode"
    (one token per sequence); `report` is its profile report, else it is timed here without
    data (`CompiledModel.profile(mode="timing")` on `timing_feeds`)."""
    if kind not in KINDS:
        raise GeirError(f"llm_report: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if report is None:
        _, report = compiled.profile(timing_feeds(compiled, kind), mode="timing")
    spec = load_device(compiled.options.device)
    mem, roof = report["memory"], report["roofline"]
    latency = report["latency_us"]
    bound = max(roof["hbm_us"], roof["cube_us"])
    out = {
        "program": kind,
        "batch": batch,
        "tokens": tokens if kind == "prefill" else 1,
        "latency_ms": latency / 1e3,
        "tokens_per_s": batch * (tokens if kind == "prefill" else 1) / (latency / 1e6) if latency > 0 else None,
        "hbm_bound_ms": roof["hbm_us"] / 1e3,
        "cube_bound_ms": roof["cube_us"] / 1e3,
        "bound": "hbm" if roof["hbm_us"] >= roof["cube_us"] else "cube",
        "x_bound": latency / bound if bound > 0 else None,
        "kernels": report["kernel_count"],
        "launches": report["launch_count"],
        "weight_bytes": mem["constant_bytes"],
        "kv_cache_bytes": mem["state_bytes"],
        "workspace_bytes": mem["workspace_bytes"],
        "peak_memory_bytes": report["peak_memory_bytes"],
        "hbm_capacity_bytes": spec.hbm_bytes,
        "fits": report["peak_memory_bytes"] <= spec.hbm_bytes,
    }
    if kind == "decode":
        out["ms_per_token"] = out["latency_ms"]
    else:
        out["time_to_first_token_ms"] = out["latency_ms"]
    return out


def format_llm_report(reports: Mapping[str, Mapping[str, Any]]) -> str:
    """`{"prefill": llm_report, "decode": llm_report}` (either) as a table."""
    lines = []
    for kind, r in reports.items():
        head = (f"prefill {r['batch']}x{r['tokens']}: time to first token {r['latency_ms']:.2f} ms"
                if kind == "prefill" else f"decode {r['batch']}x1: {r['ms_per_token']:.2f} ms per token")
        fits = "fits" if r["fits"] else f"does not fit: {format_bytes(r['peak_memory_bytes'] - r['hbm_capacity_bytes'])} over"
        lines += [
            head + f", {r['tokens_per_s']:.0f} tokens/s",
            f"  bounds: hbm {r['hbm_bound_ms']:.3g} ms, cube {r['cube_bound_ms']:.3g} ms -> "
            f"{r['x_bound']:.2f}x the {r['bound']} bound; {r['kernels']} kernels, {r['launches']} launches",
            f"  memory: weights {format_bytes(r['weight_bytes'])}, KV cache {format_bytes(r['kv_cache_bytes'])}, "
            f"workspace {format_bytes(r['workspace_bytes'])}, peak {format_bytes(r['peak_memory_bytes'])} of "
            f"{format_bytes(r['hbm_capacity_bytes'])} ({fits})",
        ]
    return "\n".join(lines)
