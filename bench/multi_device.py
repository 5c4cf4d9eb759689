"""Several devices of an Atlas 800T A2, timed without data, side by side in one run
(docs/multi-device.md).

`--seed` (the default): the seeds' experiment - an 8-layer TransformerBlock (hidden 768, FFN
3072, 8 heads, sequence 128, fp16) at batch 8 on one device, against 2 pipeline stages on 2
devices with the batch in 1, 2, 4 and 8 micro-batches, with 2, 4 and 8 micro-batches of 8
(more samples in flight), and against tensor parallel 2:
throughput (samples / s), its ratio to one device, the bubble measured on the simulated
timeline beside the formula's (p - 1) / (m + p - 1), and the share of time in transfers.

`--llama CONFIG` (e.g. llama-2-13b): the LLaMA decoder in fp16 with shape-only weights and an
in-place KV cache, on 1, 2, 4 and 8 devices - tensor parallel: the decode step at batch 1 with
a 4096-row cache (ms / token) and the prefill at 1 x 2048; pipeline stages: the decode step at
batch 8 with a 1024-row cache over 2 x and 4 x stages micro-batches of 8 (tokens / s against
one device's batch 8) - with per-device peak memory, the link time share and the compile and
simulate seconds. `--layers N` keeps N layers (a quick look).

    python bench/multi_device.py
    python bench/multi_device.py --llama llama-2-13b [--layers 4]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import geir
from geir.runtime.report import format_bytes


def _profile(model) -> dict:
    _, report = model.profile(mode="timing")
    return report


def seed_experiment() -> list[dict]:
    from geir.models import transformer_block

    def block(batch: int):
        return transformer_block(batch=batch, seq=128, hidden=768, ffn=3072, heads=8, dtype="f16", layers=8,
                                 weights="shape-only")

    rows = []
    t0 = time.perf_counter()
    one = _profile(geir.compile(block(8)))
    base = 8 / one["latency_us"] * 1e6
    rows.append({"setup": "1 device, batch 8", "latency_us": one["latency_us"], "throughput": base, "ratio": 1.0,
                 "memory": [one["peak_memory_bytes"]], "seconds": time.perf_counter() - t0})
    for m in (1, 2, 4, 8):
        t0 = time.perf_counter()
        dm = geir.compile(block(8 // m), pipeline_stages=2, micro_batches=m)
        r = _profile(dm)
        rows.append({"setup": f"2 stages, {m} micro-batch(es) of {8 // m}", "latency_us": r["latency_us"],
                     "throughput": r["throughput_per_s"], "ratio": r["throughput_per_s"] / base,
                     "bubble": (r["bubble_measured"], r["bubble_formula"]), "link": max(r["link_share"]),
                     "memory": r["peak_memory_bytes"], "seconds": time.perf_counter() - t0})
    for m in (2, 4, 8):  # more samples in flight, each micro-batch at the efficient size
        t0 = time.perf_counter()
        r = _profile(geir.compile(block(8), pipeline_stages=2, micro_batches=m))
        rows.append({"setup": f"2 stages, {m} micro-batches of 8", "latency_us": r["latency_us"],
                     "throughput": r["throughput_per_s"], "ratio": r["throughput_per_s"] / base,
                     "bubble": (r["bubble_measured"], r["bubble_formula"]), "link": max(r["link_share"]),
                     "memory": r["peak_memory_bytes"], "seconds": time.perf_counter() - t0})
    t0 = time.perf_counter()
    r = _profile(geir.compile(block(8), tensor_parallel=2))
    rows.append({"setup": "tensor parallel 2, batch 8", "latency_us": r["latency_us"],
                 "throughput": 8 / r["latency_us"] * 1e6, "ratio": 8 / r["latency_us"] * 1e6 / base,
                 "link": max(r["link_share"]), "memory": r["peak_memory_bytes"], "seconds": time.perf_counter() - t0})
    return rows


def print_seed(rows: list[dict]) -> None:
    print("| setup | latency us | samples/s | vs 1 device | bubble measured / formula | link share | peak memory per device | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        bubble = f"{r['bubble'][0]:.3f} / {r['bubble'][1]:.3f}" if "bubble" in r else ""
        link = f"{r['link']:.3f}" if "link" in r else ""
        mem = ", ".join(format_bytes(b) for b in r["memory"])
        print(f"| {r['setup']} | {r['latency_us']:.0f} | {r['throughput']:.0f} | {r['ratio']:.2f}x | {bubble} | "
              f"{link} | {mem} | {r['seconds']:.0f} |")


def llama_rows(config: str, layers: int | None) -> list[dict]:
    from geir.models import CONFIGS, llama
    from geir.models.llm_report import timing_feeds

    c = CONFIGS[config]
    if layers:
        c = dataclasses.replace(c, layers=layers)
    rows = []

    def run(name: str, kind: str, batch: int, seq: int, micro: int = 1, **options) -> None:
        t0 = time.perf_counter()
        progs = llama(c, batch=batch, seq=1 if kind == "decode" else seq, dtype="f16", weights="shape-only",
                      cache="inplace", max_len=seq)
        model = geir.compile(progs.decode if kind == "decode" else progs.prefill, **options)
        compile_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        first = model.programs[0] if hasattr(model, "programs") else model
        feeds = timing_feeds(first, kind)
        if hasattr(model, "programs"):
            feeds = {**model.random_inputs(floats=False), **feeds}
            if micro > 1:
                import numpy as np

                feeds = {n: np.concatenate([v] * micro) for n, v in feeds.items()}
        _, r = model.profile(feeds, mode="timing")
        memory = r["peak_memory_bytes"] if isinstance(r["peak_memory_bytes"], list) else [r["peak_memory_bytes"]]
        rows.append({"name": name, "kind": kind, "batch": batch * micro, "latency_us": r["latency_us"],
                     "link": max(r.get("link_share", [0.0])), "memory": memory,
                     "bubble": (r["bubble_measured"], r["bubble_formula"]) if "bubble_measured" in r else None,
                     "compile_s": compile_s, "simulate_s": time.perf_counter() - t1})
        print(f"  {name}: {r['latency_us']:.0f} us ({compile_s:.0f} s + {time.perf_counter() - t1:.0f} s)", flush=True)

    for n in (1, 2, 4, 8):
        opts = {"tensor_parallel": n} if n > 1 else {}
        run(f"decode 1x4096, tensor parallel {n}", "decode", 1, 4096, **opts)
    for n in (1, 2, 4, 8):
        opts = {"tensor_parallel": n} if n > 1 else {}
        run(f"prefill 1x2048, tensor parallel {n}", "prefill", 1, 2048, **opts)
    run("decode 8x1024, 1 device", "decode", 8, 1024)
    for p in (2, 4, 8):
        for m in (2 * p, 4 * p):
            run(f"decode 8x1024, {p} stages, {m} micro-batches", "decode", 8, 1024, micro=m,
                pipeline_stages=p, micro_batches=m)
    return rows


def print_llama(rows: list[dict]) -> None:
    base = {}
    for r in rows:
        key = (r["kind"], r["name"].split(",")[0])
        base.setdefault(key, r)
    print("| configuration | latency us | ms/token or tokens/s | vs 1 device | per-device peak memory | link share | bubble measured / formula | compile s | simulate s |")
    print("|---|---|---|---|---|---|---|---|---|")
    one_tput = next((r["batch"] / r["latency_us"] * 1e6 for r in rows if r["name"] == "decode 8x1024, 1 device"), None)
    for r in rows:
        b = base[(r["kind"], r["name"].split(",")[0])]
        if "stages" in r["name"] or r["name"] == "decode 8x1024, 1 device":
            tput = r["batch"] / r["latency_us"] * 1e6
            figure, vs = f"{tput:.0f} tokens/s", f"{tput / one_tput:.2f}x throughput"
        elif r["kind"] == "decode":
            figure, vs = f"{r['latency_us'] / 1000:.2f} ms/token", f"{b['latency_us'] / r['latency_us']:.2f}x faster"
        else:
            figure, vs = f"{r['latency_us'] / 1000:.1f} ms", f"{b['latency_us'] / r['latency_us']:.2f}x faster"
        mem = format_bytes(max(r["memory"]))
        bubble = f"{r['bubble'][0]:.3f} / {r['bubble'][1]:.3f}" if r["bubble"] else ""
        print(f"| {r['name']} | {r['latency_us']:.0f} | {figure} | {vs} | {mem} | {r['link']:.3f} | {bubble} | "
              f"{r['compile_s']:.0f} | {r['simulate_s']:.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama", metavar="CONFIG", help="the LLaMA rows for this config (e.g. llama-2-13b)")
    ap.add_argument("--layers", type=int, default=None, help="keep this many layers (a quick look)")
    args = ap.parse_args()
    if args.llama:
        print_llama(llama_rows(args.llama, args.layers))
    else:
        print_seed(seed_experiment())


if __name__ == "__main__":
    main()
