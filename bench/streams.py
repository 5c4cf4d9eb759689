"""Modeled latency on one stream and on several, beside the critical-path lower bound.

For each model, all from this one run: compile it with the default (O3) pipeline up to the
lowering once, then for each stream count N run `ascend-assign-streams{max-streams=N}`,
`ascend-insert-events` (N > 1) and the memory-planning stage, and simulate the program on the
modeled device (every run is checked for races between streams). Columns:

- launches, and for one stream: the modeled latency (us);
- best: the stream count with the lowest latency, its latency, the streams it used and its
  events (waits), and the speed-up over one stream;
- critical path: the longest chain of data dependencies (read-after-write between launches of
  the unplanned program, so without the orderings memory reuse adds), each kernel weighted by
  its time on one stream (launch overhead + its blocks, alone on the device) - what unlimited
  streams, cores and HBM bandwidth could reach; best / bound is how close the best count gets;
- s: seconds of the streams + events passes for the best count, and of the whole row.

    python bench/streams.py [--models light_inception_v1,...] [--streams 1,2,3,4,6,8]
                            [--device ascend910b] [--no-reuse] [--no-layout]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from xdsl.passes import PassPipeline

from geir.dialects import ascend as a
from geir.dialects import make_context
from geir.frontend.onnx import import_model
from geir.driver.pipelines import PipelineOptions, build_pipeline
from geir.passes.ascend.assign_streams import host_launches, launch_dependencies, workspace_arg
from geir.driver.registry import build_passes, get_all_passes
from geir.runtime.ascend_interpreter import ascend_input_specs
from geir.runtime.simulator import profile
from geir.testing.suite import light_model

MODELS = ("light_inception_v1", "light_inception_v2", "light_densenet121", "light_resnet50")


def apply(module, specs: list[str]) -> float:
    """Run the passes; returns their seconds (verification not counted)."""
    if not specs:
        return 0.0
    t = time.perf_counter()
    PassPipeline(build_passes(",".join(specs), get_all_passes())).apply(make_context(), module)
    seconds = time.perf_counter() - t
    module.verify()
    return seconds


def host(module):
    from xdsl.dialects import func

    return next(op for op in module.ops if isinstance(op, func.FuncOp) and host_launches(op))


def critical_path_us(lowered, times: dict[int, float]) -> float:
    """Longest chain of dependencies of the unplanned program, weighted by kernel times."""
    fn = host(lowered)
    deps = launch_dependencies(host_launches(fn), workspace_arg(fn))
    finish = []
    for i, ds in enumerate(deps):
        finish.append(max((finish[d] for d in ds), default=0.0) + times[i])
    return max(finish, default=0.0)


def bench(name: str, counts: list[int], device: str, reuse: bool, layout: bool) -> dict:
    t0 = time.perf_counter()
    opts = PipelineOptions(device=device, streams=1, memory_reuse=reuse, layout=layout)
    stages = build_pipeline(opts).stages
    # everything before streams: the lowering, and the copy elision that runs with reuse
    lower = max(i for i, (s, _) in enumerate(stages) if s.endswith(("_lower", "_elide_copies")))
    module = import_model(light_model(name))
    for _, specs in stages[: lower + 1]:
        apply(module, specs)
    after = [specs for _, specs in stages[lower + 1:]]   # memory planning (one stream: no streams stage)
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(s).astype(d) for n, s, d in ascend_input_specs(module)}
    runs = {}
    for n in counts:
        m = module.clone()
        sync = apply(m, [f"ascend-assign-streams{{max-streams={n}}}", "ascend-insert-events"] if n > 1 else [])
        for specs in after:
            apply(m, specs)
        _, sim = profile(m, feeds, device=device)
        waits = sum(1 for op in host(m).body.block.ops if isinstance(op, a.EventWaitOp))
        runs[n] = (sim, waits, sync)
    one = runs[counts[0]][0]
    times = {k.launch: k.time_us for k in one.kernels}
    bound = critical_path_us(module, times)
    best = min(counts, key=lambda n: (runs[n][0].latency_us, n))
    sim, waits, sync = runs[best]
    return {"model": name, "launches": len(one.kernels), "one_us": one.latency_us, "best": best,
            "best_us": sim.latency_us, "streams": len(sim.streams), "waits": waits, "bound_us": bound,
            "sync_s": sync, "seconds": time.perf_counter() - t0,
            "all_us": {n: runs[n][0].latency_us for n in counts}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--streams", default="1,2,3,4,6,8", help="stream counts to try (the first is the baseline)")
    p.add_argument("--device", default="ascend910b")
    p.add_argument("--no-reuse", action="store_true", help="plan memory without reuse")
    p.add_argument("--no-layout", action="store_true", help="leave graph-layout out (ND tensors)")
    args = p.parse_args()
    counts = [int(x) for x in args.streams.split(",")]
    header = (f"{'model':<20} {'launches':>8} {'1 stream us':>11} | {'best N':>6} {'us':>8} {'streams':>7}"
              f" {'waits':>5} {'speed-up':>8} | {'crit. path us':>13} {'best/bound':>10} | {'sync s':>6} {'s':>5}")
    print(header)
    print("-" * len(header))
    rows = []
    for name in args.models.split(","):
        r = bench(name, counts, args.device, not args.no_reuse, not args.no_layout)
        rows.append(r)
        print(f"{r['model']:<20} {r['launches']:>8} {r['one_us']:>11.1f} | {r['best']:>6} {r['best_us']:>8.1f}"
              f" {r['streams']:>7} {r['waits']:>5} {r['one_us'] / r['best_us']:>8.2f} | {r['bound_us']:>13.1f}"
              f" {r['best_us'] / r['bound_us']:>10.2f} | {r['sync_s']:>6.2f} {r['seconds']:>5.0f}", flush=True)
    print()
    print("latency (us) by stream count: " + "; ".join(
        f"{r['model']}: " + ", ".join(f"{n}: {us:.0f}" for n, us in r["all_us"].items()) for r in rows))


if __name__ == "__main__":
    main()
