"""Accuracy-driven fallback: which layers stay in float so that an int8 model meets a tolerance.

`search_fallback` starts from a calibrated float graph and its calibration table:

1. **Sensitivity.** For each quantizable layer, the cosine of the model's outputs with only that
   layer quantized, against the float model's, over the evaluation samples (all outputs and
   samples flattened together). Runs are QDQ graphs in the graph interpreter: the int8 numerics
   up to a rounding where a value lies on a boundary (graph-fold-qdq keeps them).
2. **Cost.** The modeled latency each layer saves in int8: its kernels' time in the program with
   every layer in float minus in the program with every layer in int8 (the simulator's report,
   kernels attributed to layers by the node names they carry).
3. **Candidates.** Two orders of falling back: the most sensitive layer first (what TPU-MLIR's
   qtable search and AMCT's accuracy-based fallback do), and the most accuracy per microsecond
   lost first (sensitivity loss over the latency the layer saves). Along each order, the layers
   are put back in float one at a time until the outputs' cosine meets the tolerance; the
   shortest prefix that meets it is that order's candidate.
4. **Choice.** Among the candidates that meet the tolerance, the lowest modeled latency (then
   the fewest layers in float). Every layer in float always meets it (cosine 1), so there is
   always an answer; without a pricing function the fewest layers win.

The trade-off table (`FallbackSearch.format()`) lists every candidate evaluated: layers in
float, cosine, tolerance met, modeled latency.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from geir.passes.graph.quantize import CalibrationTable, insert_qdq, quantizable_layers

Feeds = dict[str, np.ndarray]


@dataclass(frozen=True)
class Candidate:
    """A fallback set: the layers kept in float, the outputs' cosine to the float model, the
    modeled latency (us; NaN until measured) and which search proposed it."""

    float_layers: tuple[str, ...]
    cosine: float
    strategy: str
    latency_us: float = math.nan

    def meets(self, tolerance: float) -> bool:
        return self.cosine >= tolerance


@dataclass
class FallbackSearch:
    tolerance: float
    sensitivity: dict[str, float]          # layer -> outputs' cosine with only it in int8
    saving_us: dict[str, float]            # layer -> modeled latency its int8 form saves
    candidates: list[Candidate] = field(default_factory=list)
    chosen: Candidate | None = None

    def format(self) -> str:
        lines = [f"int8 fallback search: output cosine >= {self.tolerance:g}", "",
                 f"{'strategy':<18} {'layers in float':>15} {'cosine':>9} {'met':>4} {'latency us':>11}  float layers"]
        for c in self.candidates:
            mark = "*" if c is self.chosen else " "
            latency = "-" if math.isnan(c.latency_us) else f"{c.latency_us:.1f}"
            names = ", ".join(c.float_layers) if c.float_layers else "(none)"
            lines.append(f"{mark}{c.strategy:<17} {len(c.float_layers):>15} {c.cosine:>9.6f} "
                         f"{'yes' if c.meets(self.tolerance) else 'no':>4} {latency:>11}  {names}")
        if self.chosen is not None:
            lines += ["", f"chosen (*): {len(self.chosen.float_layers)} layer(s) in float, cosine "
                      f"{self.chosen.cosine:.6f}" + ("" if math.isnan(self.chosen.latency_us)
                                                     else f", {self.chosen.latency_us:.1f} us modeled")]
        sens = sorted(self.sensitivity.items(), key=lambda kv: kv[1])[:5]
        if sens:
            lines.append("most sensitive: " + ", ".join(f"{n} {c:.6f}" for n, c in sens))
        return "\n".join(lines) + "\n"


def cosine(outputs: Sequence[np.ndarray], reference: Sequence[np.ndarray]) -> float:
    """Cosine of all outputs flattened together against the reference's (1 when both are zero)."""
    a = np.concatenate([np.asarray(x, np.float64).ravel() for x in outputs])
    b = np.concatenate([np.asarray(x, np.float64).ravel() for x in reference])
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return float(np.dot(a, b) / (na * nb))


def _run_all(module: ModuleOp, feeds: Sequence[Feeds]) -> list[np.ndarray]:
    from geir.runtime.interpreter import run_module

    outs: list[np.ndarray] = []
    with np.errstate(all="ignore"):
        for f in feeds:
            outs.extend(run_module(module, f).values())
    return outs


def _layer_times(report: Mapping, layers: Sequence[str]) -> dict[str, float]:
    """Each layer's share of the modeled kernel time: a kernel's time split evenly over the
    layers among the nodes it carries."""
    wanted = set(layers)
    times = dict.fromkeys(layers, 0.0)
    for k in report.get("kernels", ()):
        mine = [n for n in k.get("nodes", ()) if n in wanted]
        for n in mine:
            times[n] += k["time_us"] / len(mine)
    return times


LatencyOf = Callable[[ModuleOp], Mapping]
"""Compiles a QDQ graph module and returns the simulator's report (latency_us, kernels)."""


def search_fallback(module: ModuleOp, table: CalibrationTable, feeds: Sequence[Feeds], tolerance: float, *,
                    skip: Sequence[str] = (), latency_of: LatencyOf | None = None,
                    progress: Callable[[str], None] | None = None) -> FallbackSearch:
    """The fallback search on a calibrated float graph-level `module` (left unchanged); `feeds`
    are the evaluation samples, `skip` layers that stay float whatever the search says,
    `latency_of` what prices a candidate (None: no latency, the fewest layers win)."""
    if not 0 < tolerance <= 1:
        raise ValueError(f"tolerance {tolerance} is a cosine: give a value in (0, 1]")
    say = progress or (lambda _: None)
    layers = [l.name for l in quantizable_layers(module) if l.name in table.layers and l.name not in skip]
    reference = _run_all(module, feeds)
    cache: dict[frozenset[str], float] = {}

    def variant(float_layers: Sequence[str]) -> ModuleOp:
        m = module.clone()
        insert_qdq(m, table, tuple(skip) + tuple(float_layers))
        return m

    def cos(float_layers: Sequence[str]) -> float:
        key = frozenset(float_layers)
        if key not in cache:
            cache[key] = cosine(_run_all(variant(float_layers), feeds), reference)
        return cache[key]

    sensitivity = {}
    for i, name in enumerate(layers):
        say(f"sensitivity {i + 1}/{len(layers)}: {name}")
        sensitivity[name] = cos([l for l in layers if l != name])
    saving = dict.fromkeys(layers, 0.0)
    reports: dict[frozenset[str], Mapping] = {}

    def report(float_layers: Sequence[str]) -> Mapping:
        key = frozenset(float_layers)
        if key not in reports:
            reports[key] = latency_of(variant(float_layers))
        return reports[key]

    if latency_of is not None:
        say("pricing every layer in int8 and in float")
        in_int8, in_float = _layer_times(report(()), layers), _layer_times(report(layers), layers)
        saving = {n: in_float[n] - in_int8[n] for n in layers}
    search = FallbackSearch(tolerance, sensitivity, saving)

    def loss(name: str) -> float:
        return 1.0 - sensitivity[name]

    orders = {
        "sensitivity": sorted(layers, key=lambda n: (sensitivity[n], n)),
        "cost": sorted(layers, key=lambda n: (-loss(n) / max(saving[n], 1e-3), n)),
    }
    if latency_of is None:
        del orders["cost"]
    seen: dict[frozenset[str], Candidate] = {}
    for strategy, order in orders.items():
        for k in range(len(order) + 1):
            chosen = tuple(order[:k])
            c = Candidate(chosen, cos(chosen), strategy)
            say(f"{strategy}: {k} layer(s) in float, cosine {c.cosine:.6f}")
            if c.meets(tolerance) or k == len(order):
                key = frozenset(chosen)
                same = seen.get(key)
                seen[key] = c if same is None else replace(same, strategy=f"{same.strategy}+{strategy}")
                break
    if frozenset() not in seen:  # the all-int8 program, for the table
        seen[frozenset()] = Candidate((), cos(()), "all int8")
    candidates = list(seen.values())
    if latency_of is not None:
        candidates = [Candidate(c.float_layers, c.cosine, c.strategy, float(report(c.float_layers)["latency_us"]))
                      for c in candidates]
    search.candidates = sorted(candidates, key=lambda c: (len(c.float_layers), c.strategy))
    search.chosen = min((c for c in search.candidates if c.meets(tolerance)), key=lambda c: (c.latency_us if not math.isnan(c.latency_us) else 0.0,
                                             len(c.float_layers)))
    return search
