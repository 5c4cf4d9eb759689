"""The profile report: what a simulated run cost, next to what it physically had to cost.

``build_report(sim, module)`` turns a ``SimResult`` (runtime/simulator.py) and the ascend
program into a JSON-ready dict with stable keys (docs/report.md documents each key, its unit
and how it is computed); ``format_report`` prints it as a table for humans (``geir-run
--profile``). Ratios use msprof's names (``aic_mac_ratio``, ``aiv_vec_ratio``, ...) so numbers
can be read against a real profile.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from geir.dialects import ascend as a
from geir.passes.ascend.plan_memory import gm_lower_bound
from geir.runtime.ascend_interpreter import host_args, host_function
from geir.runtime.ascend_machine import element_name
from geir.runtime.kernel_args import written_args
from geir.target.cost_model import CostModel
from geir.runtime.overflow import LaunchOverflow, by_kernel, overflow_summary
from geir.runtime.simulator import KernelRecord, SimResult

REPORT_VERSION = 1

UNIT_RATIOS: Mapping[str, tuple[str, str]] = {
    "aic_mac_ratio": ("aic", "M"),
    "aic_mte1_ratio": ("aic", "MTE1"),
    "aic_mte2_ratio": ("aic", "MTE2"),
    "aic_fixpipe_ratio": ("aic", "FIX"),
    "aic_scalar_ratio": ("aic", "S"),
    "aiv_vec_ratio": ("aiv", "V"),
    "aiv_mte2_ratio": ("aiv", "MTE2"),
    "aiv_mte3_ratio": ("aiv", "MTE3"),
    "aiv_scalar_ratio": ("aiv", "S"),
}
"""msprof ratio name -> (unit, pipe): busy time of the pipe on that unit / the unit's core time."""

# ---------------------------------------------------------------------------
# Pieces.
# ---------------------------------------------------------------------------


def _core_time(k: KernelRecord, unit: str) -> float:
    """Microseconds x cores of one unit kind the kernel held (0 if it has none of that unit)."""
    has = k.core_type in (("cube", "mix") if unit == "aic" else ("vector", "mix"))
    return k.exec_us * k.cores if has else 0.0


def unit_ratios(kernels: list[KernelRecord]) -> dict[str, float]:
    """Each msprof ratio over the given kernels: sum of the pipe's busy time on the unit /
    sum of (exec time x cores) of the kernels that have the unit."""
    time = {u: sum(_core_time(k, u) for k in kernels) for u in ("aic", "aiv")}
    busy: Counter = Counter()
    for k in kernels:
        busy.update(k.unit_busy_us)
    return {name: (busy[f"{unit}.{pipe}"] / time[unit] if time[unit] > 0 else 0.0)
            for name, (unit, pipe) in UNIT_RATIOS.items()}


def memory_stats(module: ModuleOp) -> dict[str, int]:
    """Device memory of the host program (bytes): inputs/outputs (an output that updates an input
    in place, a KV cache, counted once; `state_bytes` says how much of `io_bytes` such inputs
    are), constants, the workspace,
    gm ``ascend.alloc`` intermediates, and the figures built from them.

    The lower bound is ascend-plan-memory's (`gm_lower_bound`: the most bytes live at once,
    lifetimes from stream order and events, views and in-place outputs sharing their input's
    bytes), computed from the IR whether or not the program carries a plan, so no plan - the
    one it carries, another strategy's, none - is below it."""
    f = host_function(module)
    io = workspace = state = 0
    hargs = host_args(module)
    for h in hargs:
        n = a.nbytes_of(h.type)
        if h.role == "workspace":
            workspace += n
        elif h.updates is None:  # an input updated in place is one buffer, counted as the input
            io += n
        else:
            state += a.nbytes_of(hargs[h.updates].type)
    consts = sum(a.nbytes_of(op.results[0].type) for op in f.walk() if isinstance(op, a.ConstantOp))
    allocs = [op for op in f.walk() if isinstance(op, a.AllocOp) and op.space == "gm"]
    allocs_total = sum(op.nbytes for op in allocs)
    unplanned = sum(op.nbytes for op in allocs if op.offset is None)
    planned_any = any(op.offset is not None for op in allocs)
    intermediates = gm_lower_bound(f) if allocs else 0
    opaque = 0 if planned_any else workspace   # a workspace no alloc is planned into
    return {
        "io_bytes": io,
        "state_bytes": state,
        "constant_bytes": consts,
        "workspace_bytes": workspace,
        "intermediate_bytes": allocs_total,
        "peak_memory_bytes": io + consts + workspace + unplanned,
        "no_reuse_memory_bytes": io + consts + allocs_total + opaque,
        "memory_lower_bound_bytes": io + consts + intermediates + opaque,
    }


def _critical_path_us(kernels: list[KernelRecord]) -> float:
    """Longest chain of kernel lower bounds along stream order and events."""
    best: dict[int, float] = {}
    for k in sorted(kernels, key=lambda k: k.launch):
        best[k.launch] = k.lower_bound_us + max((best.get(d, 0.0) for d in k.deps), default=0.0)
    return max(best.values(), default=0.0)


def _fusion_rate(kernels: list[KernelRecord]) -> tuple[float, int, int]:
    """(1 - kernels / ONNX nodes they run, kernels, nodes) over distinct kernel symbols; a kernel
    without node names counts as one node."""
    nodes: set[str] = set()
    symbols: dict[str, tuple[str, ...]] = {}
    for k in kernels:
        symbols[k.name] = k.nodes or (f"@{k.name}",)
    for names in symbols.values():
        nodes.update(names)
    if not nodes:
        return 0.0, 0, 0
    return max(0.0, 1.0 - len(symbols) / len(nodes)), len(symbols), len(nodes)


def kernel_dtypes(module: ModuleOp) -> dict[str, dict[str, list[str]]]:
    """Per kernel, the element types of the buffers it reads and of those it writes: the
    precision it computes in (the cube accumulates in f32 whatever it reads)."""
    out = {}
    for k in module.ops:
        if isinstance(k, a.KernelOp):
            args = k.body.block.args
            written = set(written_args(k))
            out[k.sym_name.data] = {
                "reads": sorted({element_name(v.type) for i, v in enumerate(args) if i not in written}),
                "writes": sorted({element_name(args[i].type) for i in written}),
            }
    return out


def _kernel_entry(k: KernelRecord, dtypes: Mapping[str, dict[str, list[str]]]) -> dict[str, Any]:
    entry = {
        "name": k.name,
        "nodes": list(k.nodes),
        "dtypes": dtypes.get(k.name, {"reads": [], "writes": []}),
        "launch": k.launch,
        "stream": k.stream,
        "core_type": k.core_type,
        "block_dim": k.block_dim,
        "cores": k.cores,
        "waves": k.waves,
        "start_us": k.start_us,
        "exec_start_us": k.exec_start_us,
        "end_us": k.end_us,
        "time_us": k.time_us,
        "launch_us": k.launch_us,
        "bound": k.bound,
        "bound_pipe": k.bound_pipe,
        "lower_bound_us": k.lower_bound_us,
        "hbm_bytes": k.hbm_bytes,
        "l2_hit_bytes": k.l2_hit_bytes,
        "footprint_bytes": k.footprint_bytes,
        "cube_flops": sum(k.flops.values()),
        "pipe_busy_us": {p: k.pipe_busy_us[p] for p in a.PIPES if p in k.pipe_busy_us},
        "fallback": k.fallback,
        "layout_conversion": k.layout_conversion,
    }
    if k.collective is not None:
        c = k.collective
        entry["collective"] = {"kind": c.kind, "ranks": list(c.ranks), "bytes": c.nbytes, "algorithm": c.algorithm}
    entry.update(unit_ratios([k]))
    return entry


# ---------------------------------------------------------------------------
# The report.
# ---------------------------------------------------------------------------


def build_report(sim: SimResult, module: ModuleOp) -> dict[str, Any]:
    """The report dict (JSON-ready; keys in docs/report.md)."""
    cm = CostModel(sim.device)
    kernels = sim.kernels
    dtypes = kernel_dtypes(module)
    mem = memory_stats(module)
    flops: Counter = Counter()
    for k in kernels:
        flops.update(k.flops)
    cube_us = float(sum(n / cm.peak_cube_flops(dtype) * 1e6 for dtype, n in flops.items()))
    # what the kernels touched of inputs, outputs and weights: an unused input, or the rows of
    # an embedding table a Gather does not read, never crosses HBM (plain trace events: unknown)
    compulsory = sim.io_bytes_touched or 0
    hbm_us = cm.hbm_time_us(compulsory)
    critical = _critical_path_us(kernels)
    roofline = max(cube_us, hbm_us, critical)
    kernel_time = sum(k.time_us for k in kernels)
    layout_time = sum(k.time_us for k in kernels if k.layout_conversion)
    fusion, n_kernels, n_nodes = _fusion_rate(kernels)
    resident = mem["io_bytes"] + mem["constant_bytes"]
    intermediates = mem["no_reuse_memory_bytes"] - resident
    used = mem["peak_memory_bytes"] - resident
    report: dict[str, Any] = {
        "report_version": REPORT_VERSION,
        "device": sim.device.name,
        "latency_us": sim.latency_us,
        "roofline_bound_us": roofline,
        "roofline_ratio": sim.latency_us / roofline if roofline > 0 else None,
        "roofline": {
            "cube_us": cube_us,
            "hbm_us": hbm_us,
            "critical_path_us": critical,
            "cube_flops": int(sum(flops.values())),
            "compulsory_hbm_bytes": compulsory,
        },
        "peak_memory_bytes": mem["peak_memory_bytes"],
        "memory_lower_bound_bytes": mem["memory_lower_bound_bytes"],
        "no_reuse_memory_bytes": mem["no_reuse_memory_bytes"],
        "memory": mem,
        "hbm_bytes": sum(k.hbm_bytes for k in kernels),
        "l2_hit_bytes": sum(k.l2_hit_bytes for k in kernels),
        "memory_reuse_rate": max(0.0, 1.0 - used / intermediates) if intermediates > 0 else 0.0,
        "fusion_rate": fusion,
        "kernel_count": n_kernels,
        "node_count": n_nodes,
        "launch_count": len(kernels),
        "layout_conversion_share": layout_time / kernel_time if kernel_time > 0 else 0.0,
        "stream_concurrency": kernel_time / sim.latency_us if sim.latency_us > 0 else 0.0,
        "streams": len(sim.streams),
        **unit_ratios(kernels),
        "pipe_busy_us": {p: sim.pipe_busy_us[p] for p in a.PIPES if p in sim.pipe_busy_us},
        "precision": dict(sorted(Counter(w for k in kernels for w in dtypes.get(k.name, {}).get("writes", [])).items())),
        "kernels": [_kernel_entry(k, dtypes) for k in kernels],
        "fallback_kernels": sum(1 for k in kernels if k.fallback),
        "race_count": len(sim.races),
        "races": [
            {"kernel": r.kernel, "launch": r.launch, "block": r.block, "first": r.first,
             "first_pipe": r.first_pipe, "second": r.second, "second_pipe": r.second_pipe,
             "buffer": r.buffer, "kind": r.kind, "count": r.count}
            for r in sim.races
        ],
        **overflow_keys(sim.overflow),
    }
    return report


BOUNDS: Mapping[str, str] = {
    "roofline_bound_us": "latency_us",
    "roofline.cube_us": "latency_us",
    "roofline.hbm_us": "latency_us",
    "roofline.critical_path_us": "latency_us",
    "memory_lower_bound_bytes": "peak_memory_bytes",
    "memory.memory_lower_bound_bytes": "memory.peak_memory_bytes",
    "kernels[].lower_bound_us": "kernels[].time_us",
}
"""Each lower bound of the report -> the measured figure it may not exceed (`a.b`: key b of
object a; `kernels[].k`: key k of every kernel entry against the same entry's figure)."""


def _get(report: Mapping[str, Any], path: str) -> Any:
    for key in path.split("."):
        report = report[key]
    return report


def check_bounds(report: Mapping[str, Any]) -> list[str]:
    """The bounds the report states that its own figures break, one line each (empty when
    every bound holds). A bound above what the run measured is a bound that over-counts:
    a defect of the bound, never of the run."""
    broken = []
    for bound, figure in BOUNDS.items():
        if bound.startswith("kernels[]."):
            b, f = bound.removeprefix("kernels[]."), figure.removeprefix("kernels[].")
            pairs = [(f"kernel @{k['name']} (launch {k['launch']}) {b}", k[b], f, k[f]) for k in report["kernels"]]
        else:
            pairs = [(bound, _get(report, bound), figure, _get(report, figure))]
        broken += [f"{name} = {value:g} > {fname} = {fvalue:g}" for name, value, fname, fvalue in pairs
                   if value > fvalue]
    return broken


def overflow_keys(launches: list[LaunchOverflow]) -> dict[str, Any]:
    """`overflow_kernels`, `overflow` (one entry per kernel, launch order) and `overflow_summary`
    (one line, or null) from the launches the run found overflowing (runtime/overflow.py)."""
    entries = by_kernel(launches)
    return {"overflow_kernels": len(entries), "overflow": entries, "overflow_summary": overflow_summary(entries)}


def write_report(report: Mapping[str, Any], path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
        f.write("\n")


# ---------------------------------------------------------------------------
# The table.
# ---------------------------------------------------------------------------


def format_bytes(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _us(x: float) -> str:
    return f"{x:.3f} us"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _table(rows: list[tuple[str, ...]], right: tuple[int, ...] = ()) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.rjust(w) if i in right else c.ljust(w)
                             for i, (c, w) in enumerate(zip(r, widths))).rstrip() for r in rows]


def format_report(report: Mapping[str, Any], top: int = 10) -> str:
    """The report as a readable table: latency beside its lower bound, memory beside its
    bounds, the slowest kernels with their bound and ONNX nodes, the unit ratios."""
    r, roof, mem = report, report["roofline"], report["memory"]
    ratio = f"{r['roofline_ratio']:.1f}x the bound" if r["roofline_ratio"] is not None else "no bound"
    lines = [f"profile on {r['device']} (modeled):"]
    lines += _table([
        ("latency", _us(r["latency_us"]), ratio),
        ("roofline bound", _us(r["roofline_bound_us"]),
         f"cube {_us(roof['cube_us'])}, hbm {_us(roof['hbm_us'])}, critical path {_us(roof['critical_path_us'])}"),
        ("peak memory", format_bytes(r["peak_memory_bytes"]),
         f"lower bound {format_bytes(r['memory_lower_bound_bytes'])}, without reuse {format_bytes(r['no_reuse_memory_bytes'])}"),
        ("memory reuse", _pct(r["memory_reuse_rate"]), f"workspace {format_bytes(mem['workspace_bytes'])}"),
        ("fusion rate", _pct(r["fusion_rate"]),
         f"{r['kernel_count']} kernels for {r['node_count']} nodes, {r['launch_count']} launches"),
        ("layout conversion", _pct(r["layout_conversion_share"]), "of kernel time"),
        ("stream concurrency", f"{r['stream_concurrency']:.2f}", f"{r['streams']} streams"),
    ], right=(1,))
    kernels = sorted(r["kernels"], key=lambda k: -k["time_us"])
    shown = kernels[:top]
    total = sum(k["time_us"] for k in kernels) or 1.0
    lines += ["", f"kernels (top {len(shown)} of {len(kernels)} by time):"]
    rows = [("kernel", "stream", "time", "share", "bound", "blocks", "lower bound", "onnx nodes")]
    rows += [(f"@{k['name']}", str(k["stream"]), _us(k["time_us"]), _pct(k["time_us"] / total),
              k["bound"] + ("" if k["bound"] in ("launch",) else f" ({k['bound_pipe']})"),
              str(k["block_dim"]), _us(k["lower_bound_us"]), ", ".join(k["nodes"]) or "-")
             for k in shown]
    lines += _table(rows, right=(1, 2, 3, 5, 6))
    lines += ["", "unit ratios (busy / core time):"]
    lines += _table([(name, f"{r[name]:.3f}") for name in UNIT_RATIOS], right=(1,))
    if r["race_count"]:
        lines += ["", f"races ({r['race_count']}):"]
        lines += [f"  @{x['kernel']}: {x['first']} on {x['first_pipe']} / {x['second']} on "
                  f"{x['second_pipe']}, {x['buffer']}, {x['kind']}" for x in r["races"]]
    if r["overflow_kernels"]:
        lines += ["", f"overflow ({r['overflow_kernels']} kernel{'s' if r['overflow_kernels'] > 1 else ''}):"]
        lines += [f"  @{x['kernel']} ({', '.join(x['nodes']) or '-'}): {x['overflowed']} inf/NaN, "
                  f"{x['saturated']} saturated, {x['dtype']}" for x in r["overflow"]]
    if r["fallback_kernels"]:
        lines += ["", f"warning: {r['fallback_kernels']} kernel(s) run a reference fallback, not hardware ops"]
    return "\n".join(lines) + "\n"


__all__ = ["BOUNDS", "REPORT_VERSION", "UNIT_RATIOS", "build_report", "check_bounds", "format_report", "memory_stats", "overflow_keys",
           "unit_ratios", "write_report"]
