"""Are the report's bounds bounds? Every suite model compiled at O3 and profiled, each bound of
its report beside the figure it bounds (runtime/report.py, `check_bounds`):

- peak / mem bound: `peak_memory_bytes / memory_lower_bound_bytes` (>= 1);
- latency / roofline: `latency_us / roofline_bound_us` (>= 1);
- kernel min: the smallest `time_us / lower_bound_us` over the model's kernels (>= 1);
- broken: the bounds `check_bounds` finds broken (0 everywhere is the claim).

The minimum of each ratio over all models is printed last. One run, side by side.

    python bench/bounds.py [--models light|backend|all] [--batch N] [--precision MODE]

The light models take a few minutes; the backend cases (~240) about ten.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import geir
from geir.errors import GeirError
from geir.runtime.report import check_bounds
from geir.testing.suite import LIGHT_MODELS, backend_cases, light_model, with_batch


def _models(which: str, batch: int):
    if which in ("light", "all"):
        for name in LIGHT_MODELS:
            model = light_model(name)
            yield name, with_batch(model, batch) if batch != 1 else model
    if which in ("backend", "all"):
        for case in backend_cases():
            yield case.name, case.model_path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", choices=("light", "backend", "all"), default="light")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--precision", default="force_fp16")
    a = p.parse_args(argv)
    rows, broken_total, skipped = [], 0, []
    t0 = time.perf_counter()
    print(f"{'model':48s} {'peak/mem bound':>14s} {'latency/roofline':>16s} {'kernel min':>10s} {'broken':>6s}")
    for name, model in _models(a.models, a.batch):
        try:
            _, r = geir.compile(model, opt_level=3, precision_mode=a.precision).profile()
        except GeirError as e:
            skipped.append(f"{name}: {e}")
            continue
        broken = check_bounds(r)
        mem = r["peak_memory_bytes"] / r["memory_lower_bound_bytes"] if r["memory_lower_bound_bytes"] else math.inf
        lat = r["latency_us"] / r["roofline_bound_us"] if r["roofline_bound_us"] else math.inf
        kmin = min((k["time_us"] / k["lower_bound_us"] for k in r["kernels"] if k["lower_bound_us"] > 0),
                   default=math.inf)
        rows.append((mem, lat, kmin))
        broken_total += len(broken)
        print(f"{name:48s} {mem:14.3f} {lat:16.2f} {kmin:10.2f} {len(broken):6d}", flush=True)
        for b in broken:
            print(f"    broken: {b}")
    if rows:
        print(f"\n{len(rows)} models in {time.perf_counter() - t0:.0f} s; minimum peak/mem bound "
              f"{min(r[0] for r in rows):.3f}, latency/roofline {min(r[1] for r in rows):.2f}, "
              f"kernel time/lower bound {min(r[2] for r in rows):.2f}; broken bounds: {broken_total}")
    for s in skipped:
        print(f"  not compiled: {s}")
    return 1 if broken_total else 0


if __name__ == "__main__":
    sys.exit(main())
