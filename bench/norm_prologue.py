"""graph-fuse's norm prologues, on and off, side by side in one run.

A LLaMA layer's Add + RMSNorm runs inside the projection kernel after it (every block
normalises every row itself: docs/passes.md "Norm prologues") where the fusion pass's cost rule
says that costs less than the launch it saves. This compiles one layer of a LLaMA config
(shape-only weights, fp16, O3) with the prologues and with `disable_fusions=("norm-prologue",)`
at several row counts - decode steps at batch B, prefills of S rows - and times both without
data: latency, kernels, and off / on (above 1: the prologues are faster). Where the rule
declines, both columns are the same program.

    python bench/norm_prologue.py [--config llama-2-7b] [--decode 1,8] [--prefill 8,16,32,64]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import geir
from geir.models import CONFIGS, llama
from geir.models.llm_report import timing_feeds


def timed(module, kind: str, **options) -> tuple[float, int]:
    cm = geir.compile(module, **options)
    _, report = cm.profile(timing_feeds(cm, kind), mode="timing")
    return report["latency_us"], report["kernel_count"]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default="llama-2-7b")
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--decode", default="1,8", help="batches of the decode steps (cache 1024 rows)")
    p.add_argument("--prefill", default="8,16,32,64", help="rows of the batch-1 prefills")
    args = p.parse_args(argv)
    c = dataclasses.replace(CONFIGS[args.config], layers=args.layers)
    cases = [("decode", int(b), 1) for b in args.decode.split(",") if b]
    cases += [("prefill", 1, int(s)) for s in args.prefill.split(",") if s]
    t0 = time.perf_counter()
    print(f"{args.config}, {args.layers} layer(s), fp16, O3, timed without data\n")
    print("| program | latency us, prologues | kernels | latency us, off | kernels | off / on |")
    print("|---|---|---|---|---|---|")
    for kind, batch, seq in cases:
        progs = llama(c, batch=batch, seq=seq, dtype="f16", weights="shape-only", cache="inplace",
                      max_len=max(1024, seq) if kind == "decode" else max(64, seq))
        module = progs.decode if kind == "decode" else progs.prefill
        on, k_on = timed(module, kind)
        off, k_off = timed(module, kind, disable_fusions=("norm-prologue",))
        name = f"decode {batch}x1024" if kind == "decode" else f"prefill 1x{seq}"
        print(f"| {name} | {on:.1f} | {k_on} | {off:.1f} | {k_off} | {off / on:.3f} |", flush=True)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
