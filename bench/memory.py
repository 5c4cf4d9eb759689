"""Workspace memory of compiled models under each ascend-plan-memory strategy.

Each model is compiled by the named pipeline (geir.compile, memory planning disabled) and its
host program's gm buffers are planned by every strategy side by side, in this one run:

- buffers: gm allocs (intermediate tensors) of the host program, and how many run in place;
- no reuse: every buffer its own bytes (reuse=false, GE without memory reuse);
- best-fit, greedy-size, ge, best: the peak workspace of each strategy (memory_strategies.py),
  every plan checked for overlaps;
- bound: the lower bound - the largest total of bytes live at one moment (over the
  in-place groups; with several streams, also the heaviest clique of conflicting buffers);
- best/bound: how far the best plan is above it; x: no reuse / best; ms: the time of `best`.

Models: the light models of the onnx package, one TorchScript transformer block and a stack of
24 (d_model 256, 4 heads, sequence 128).

    python bench/memory.py [--models light_resnet50,transformer1,transformer24]
                           [--opt-level 3] [--streams N] [--no-inplace]
"""

from __future__ import annotations

import argparse
import sys
import time

import geir
from geir.passes.ascend import memory_strategies as ms
from geir.passes.ascend.check_memory import host_functions
from geir.passes.ascend.plan_memory import host_memory
from geir.testing.suite import LIGHT_MODELS, light_model

TRANSFORMERS = {"transformer1": 1, "transformer24": 24}
D_MODEL, HEADS, SEQ = 256, 4, 128


def load(name: str):
    if name in TRANSFORMERS:
        from geir.testing.transformer import transformer_onnx

        return transformer_onnx(layers=TRANSFORMERS[name], d_model=D_MODEL, heads=HEADS, seq=SEQ)
    return light_model(name)


def compile_host(name: str, opt_level: int, streams: int | None):
    options = {"disable_passes": ["ascend-plan-memory"]}
    if streams is not None:
        options["streams"] = streams
    # fp32 kept: the strategies compared on the model's own tensors (fp16 halves them all alike)
    cm = geir.compile(load(name), opt_level=opt_level, precision_mode="must_keep_origin_dtype", **options)
    hosts = host_functions(cm.module)
    if not hosts:
        raise RuntimeError(f"{name}: no host program (stages {cm.stage_names})")
    return hosts[0]


def mib(n: int) -> str:
    return f"{n / 2**20:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join([*LIGHT_MODELS, *TRANSFORMERS]))
    ap.add_argument("--opt-level", type=int, default=3)
    ap.add_argument("--streams", type=int, default=None, help="streams (default: the opt level's)")
    ap.add_argument("--no-inplace", action="store_true", help="plan without in-place reuse")
    args = ap.parse_args(argv)

    cols = ["model", "buffers", "inplace", "no reuse", *ms.STRATEGIES, "bound", "best/bound", "x", "ms"]
    print(f"workspace MiB per strategy, opt level {args.opt_level}"
          + (f", {args.streams} streams" if args.streams else ""))
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    worst = 0.0
    for name in args.models.split(","):
        try:
            host = compile_host(name, args.opt_level, args.streams)
        except Exception as e:  # a model the pipeline cannot compile yet: say so, go on
            print(f"| {name} | {type(e).__name__}: {str(e).splitlines()[0][:100]} |")
            continue
        mem = host_memory(host, inplace=not args.no_inplace)
        p = mem.problem
        peaks, seconds = {}, 0.0
        for s in ms.STRATEGIES:
            t0 = time.perf_counter()
            plan = ms.solve(p, s)
            if s == "best":
                seconds = time.perf_counter() - t0
            ms.check(p, plan.offsets)
            peaks[s] = plan.peak
        over = peaks["best"] / p.bound - 1 if p.bound else 0.0
        worst = max(worst, over)
        row = [name, str(len(mem.buffers)), str(len(mem.inplace)), mib(mem.no_reuse_bytes),
               *(mib(peaks[s]) for s in ms.STRATEGIES), mib(p.bound), f"{100 * over:+.1f}%",
               f"{mem.no_reuse_bytes / max(peaks['best'], 1):.1f}", f"{1000 * seconds:.0f}"]
        print("| " + " | ".join(row) + " |")
        sys.stdout.flush()
    print(f"\nbest is at most {100 * worst:.1f}% above the lower bound on every model")
    return 0


if __name__ == "__main__":
    sys.exit(main())
