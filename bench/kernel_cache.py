"""The lowering's kernel cache (lowering/kernel_cache.py), side by side: a LLaMA prefill compiled
with every layer's kernels built by the templates, then with the layers after the first taking
clones of the first's. Prints each compile's seconds and stage seconds, the ratio, how many
kernels are clones, and whether the two programs print the same (they must).

    python bench/kernel_cache.py [--config llama-2-7b] [--layers 2,8] [--shape 8x4096]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import geir
from geir.dialects import ascend as a
from geir.lowering import kernel_cache
from geir.models import CONFIGS, llama


def _compile(model, cached: bool):
    build = kernel_cache.KernelCache.build
    if not cached:
        kernel_cache.KernelCache.build = lambda self, req, builder: builder(req)
    try:
        t0 = time.perf_counter()
        cm = geir.compile(model)
        return cm, time.perf_counter() - t0
    finally:
        kernel_cache.KernelCache.build = build


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default="llama-2-7b")
    p.add_argument("--layers", default="2,8", help="layer counts, comma-separated")
    p.add_argument("--shape", default="8x4096", help="BATCHxSEQ of the prefill")
    args = p.parse_args()
    batch, seq = (int(x) for x in args.shape.split("x"))
    print(f"{args.config} prefill {batch}x{seq}, fp16, shape-only weights")
    print(f"{'layers':>6} {'built s':>8} {'cached s':>9} {'ratio':>6} {'clones':>7} {'same':>5}  stages (built -> cached)")
    def model(layers: int):  # a fresh graph for each compile: nothing carried from the last one
        cfg = dataclasses.replace(CONFIGS[args.config], layers=layers)
        return llama(cfg, batch=batch, seq=seq, dtype="f16", weights="shape-only", cache="inplace",
                     max_len=seq).prefill

    _compile(model(1), cached=True)  # imports and first-use costs, outside the table
    for layers in (int(x) for x in args.layers.split(",")):
        built, tb = _compile(model(layers), cached=False)
        cached, tc = _compile(model(layers), cached=True)
        kernels = [k for k in cached.module.ops if isinstance(k, a.KernelOp)]
        clones = sum(kernel_cache.clone_of(k) is not None for k in kernels)
        same = str(built.module) == str(cached.module)
        stages = ", ".join(f"{n}: {built.compile_seconds[n]:.1f} -> {cached.compile_seconds[n]:.1f}"
                           for n in built.compile_seconds if built.compile_seconds[n] >= 0.5)
        print(f"{layers:>6} {tb:>8.1f} {tc:>9.1f} {tb / tc:>6.2f} {clones:>3}/{len(kernels):<3} {str(same):>5}  {stages}",
              flush=True)


if __name__ == "__main__":
    main()
