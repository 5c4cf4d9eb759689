"""Chrome / Perfetto trace of a simulated run (``geir-run --trace trace.json``).

The Trace Event Format's JSON object form: ``{"traceEvents": [...]}`` with "X" (complete)
events for kernels, their launch phase, event waits and pipe ops, "i" (instant) events for
event records, and "M" metadata events naming the process (the device) and the threads: one
track per stream (kernels, named by their fused ONNX nodes) and, under it, one track per pipe
of that stream's kernels (the ops of each kernel's first core). Timestamps are microseconds.
Open it in https://ui.perfetto.dev or chrome://tracing.
"""

from __future__ import annotations

import json
from typing import Any

from geir.runtime.simulator import SimResult

PID = 0
PIPE_TRACKS = ("MTE2", "MTE1", "M", "V", "MTE3", "FIX", "S")
"""Pipe tracks under each stream, in data-flow order."""
_TIDS_PER_STREAM = 16


def stream_tid(stream: int) -> int:
    return stream * _TIDS_PER_STREAM


def pipe_tid(stream: int, pipe: str) -> int:
    return stream * _TIDS_PER_STREAM + 1 + PIPE_TRACKS.index(pipe)


def _ts(x: float) -> float:
    return round(x, 6)


def chrome_trace(sim: SimResult) -> dict[str, Any]:
    """The trace as a JSON-ready dict."""
    spec = sim.device
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": PID, "name": "process_name", "args": {"name": f"{spec.name} ({spec.soc_version})"}},
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
        event = {"name": sp.name, "cat": sp.category, "pid": PID, "tid": tid, "ts": _ts(sp.start_us),
                 "args": dict(sp.args)}
        if sp.end_us > sp.start_us:
            event.update(ph="X", dur=_ts(sp.end_us - sp.start_us))
        else:
            event.update(ph="i", s="t")
        body.append(event)
    for tid in sorted(tracks):
        events.append({"ph": "M", "pid": PID, "tid": tid, "name": "thread_name", "args": {"name": tracks[tid]}})
        events.append({"ph": "M", "pid": PID, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
    return {
        "traceEvents": events + body,
        "displayTimeUnit": "ns",
        "otherData": {"device": spec.name, "latency_us": sim.latency_us, "modeled": True},
    }


def write_trace(sim: SimResult, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(chrome_trace(sim), f)
        f.write("\n")


__all__ = ["PIPE_TRACKS", "chrome_trace", "pipe_tid", "stream_tid", "write_trace"]
