"""Chrome / Perfetto trace of a simulated run (``geir-run --trace trace.json``).

The Trace Event Format's JSON object form: ``{"traceEvents": [...]}`` with "X" (complete)
events for kernels, their launch phase, event waits and pipe ops, "i" (instant) events for
event records, and "M" metadata events naming the process (the device) and the threads: one
track per stream (kernels, named by their fused ONNX nodes) and, under it, one track per pipe
of that stream's kernels (the ops of each kernel's first core; a mix block's second AIV on
tracks of its own: `V.aiv1`, ...). A multi-device run has one
process per device (`chrome_trace_ranks`). Timestamps are microseconds.
Open it in https://ui.perfetto.dev or chrome://tracing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from geir.runtime.simulator import SimResult

PID = 0
PIPE_TRACKS = ("MTE2", "MTE1", "M", "V", "MTE3", "FIX", "S", "MTE2.aiv1", "V.aiv1", "MTE3.aiv1")
"""Pipe tracks under each stream, in data-flow order; then a mix block's second AIV's
(`ascend.sub_block 1`), whose ops overlap the first AIV's."""
_TIDS_PER_STREAM = 16


def stream_tid(stream: int) -> int:
    return stream * _TIDS_PER_STREAM


def pipe_tid(stream: int, pipe: str) -> int:
    return stream * _TIDS_PER_STREAM + 1 + PIPE_TRACKS.index(pipe)


def _ts(x: float) -> float:
    return round(x, 6)


def _process(sim: SimResult, pid: int, label: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The metadata and the events of one device's timeline, as process `pid`."""
    spec = sim.device
    meta: list[dict[str, Any]] = [
        {"ph": "M", "pid": pid, "name": "process_name", "args": {"name": f"{label}{spec.name} ({spec.soc_version})"}},
        {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}},
    ]
    tracks: dict[int, str] = {}
    body: list[dict[str, Any]] = []
    for sp in sim.timeline:
        if sp.track == "pipe" and sp.pipe in PIPE_TRACKS:
            tid = pipe_tid(sp.stream, sp.pipe)
            tracks.setdefault(tid, f"stream {sp.stream} {sp.pipe}")
        else:
            tid = stream_tid(sp.stream)
        tracks.setdefault(stream_tid(sp.stream), f"stream {sp.stream}")
        event = {"name": sp.name, "cat": sp.category, "pid": pid, "tid": tid, "ts": _ts(sp.start_us),
                 "args": dict(sp.args)}
        if sp.end_us > sp.start_us:
            event.update(ph="X", dur=_ts(sp.end_us - sp.start_us))
        else:
            event.update(ph="i", s="t")
        body.append(event)
    for tid in sorted(tracks):
        meta.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": tracks[tid]}})
        meta.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
    return meta, body


def chrome_trace(sim: SimResult) -> dict[str, Any]:
    """The trace as a JSON-ready dict."""
    meta, body = _process(sim, PID, "")
    return {
        "traceEvents": meta + body,
        "displayTimeUnit": "ns",
        "otherData": {"device": sim.device.name, "latency_us": sim.latency_us, "modeled": True},
    }


def chrome_trace_ranks(sims: Sequence[SimResult]) -> dict[str, Any]:
    """The trace of a multi-device run: one process per device (pid = rank), on one clock."""
    meta: list[dict[str, Any]] = []
    body: list[dict[str, Any]] = []
    for sim in sims:
        m, b = _process(sim, sim.rank, f"rank {sim.rank}: ")
        meta += m
        body += b
    return {
        "traceEvents": meta + body,
        "displayTimeUnit": "ns",
        "otherData": {"device": sims[0].device.name if sims else "", "ranks": len(sims),
                      "latency_us": max((s.latency_us for s in sims), default=0.0), "modeled": True},
    }


def write_trace_ranks(sims: Sequence[SimResult], path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(chrome_trace_ranks(sims), f)
        f.write("\n")


def write_trace(sim: SimResult, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(chrome_trace(sim), f)
        f.write("\n")


__all__ = ["PIPE_TRACKS", "chrome_trace", "chrome_trace_ranks", "pipe_tid", "stream_tid", "write_trace",
           "write_trace_ranks"]
