"""LLaMA-2 7B and 13B on one modeled 910B, fp16, O3, timed without data.

Each configuration is built with shape-only weights (geir.models.llama, weights="shape-only":
no bytes), compiled, and profiled in timing-only mode (CompiledModel.profile(mode="timing"):
the interpreter walks every launch, tile and block and reports the same events as a full run,
moving and computing nothing; a launch whose kernel and arguments match an earlier one - the
same kernel of the next layer - replays it). Every configuration runs in its own process, so
the peak RSS is its own.

Per configuration: the LLM report (models/llm_report.py): modeled latency, peak device memory
(and whether it fits the device's HBM), kernels, the bound beside the latency - a decode
step's HBM bound (every byte it must move once: every weight, of the embedding table only the
tokens' rows, the whole static cache, which the attention kernel reads under its mask; the step
is timed at the cache's last row, every row valid), a prefill's cube bound (its matmul FLOPs at
the cube's fp16 rate) - and the wall time and peak RSS of compiling and simulating here.

    python bench/llm_scale.py                          # 7B and 13B: decode b1, b8 (cache 4096), prefill 1x2048, 8x4096
    python bench/llm_scale.py --configs llama-2-7b --prefill 8x4096 --decode "" --markdown
    python bench/llm_scale.py --layers 2               # quick: two layers of each
    python bench/llm_scale.py --ablation --markdown    # LLaMA-2-7B, one layer, step by step

`--scaling`: compile and simulation time and peak RSS of the LLaMA-2-7B decode step (cache
4096) at 2, 8, 32 and 80 layers: the pipeline should stay near linear in the layers.

`--ablation`: one layer of LLaMA-2-7B (decode 1x4096, prefill 1x512) at each step of
bench/pipeline.py (O0, +simplify, +fusion, +layout, +memory reuse, +streams = O3), as
docs/pipeline.md's table: per-layer latency and kernels are (2 layers - 1 layer), so the
embedding and the LM head are left out; peak memory is the 1-layer program's.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import time



def one(config: str, kind: str, batch: int, seq: int, layers: int, options: dict | None = None) -> dict:
    """Compile and time one configuration in this process (`options`: geir.compile's, O3 if
    none); its figures as a dict (models/llm_report.py's, plus the wall time and peak RSS)."""
    import geir
    from geir.models import CONFIGS
    from geir.models.llm_report import llm_report, timing_feeds

    c = CONFIGS[config]
    if layers:
        c = dataclasses.replace(c, layers=layers)
    t0 = time.perf_counter()
    progs = geir.models.llama(c, batch=batch, seq=1 if kind == "decode" else seq, dtype="f16",
                              weights="shape-only", cache="inplace", max_len=seq)
    cm = geir.compile(progs.decode if kind == "decode" else progs.prefill, **(options or {"opt_level": 3}))
    compile_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    _, report = cm.profile(timing_feeds(cm, kind), mode="timing")  # a decode step at the cache's last row
    simulate_s = time.perf_counter() - t1
    r = llm_report(cm, kind, batch, seq, report)
    return {
        **r, "config": f"{config} ({c.layers} layers)", "program": f"{kind} {batch}x{seq}",
        "latency_us": report["latency_us"],
        "compile_s": compile_s, "simulate_s": simulate_s,
        "rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 2**30,
    }


def table(rows: list[dict], markdown: bool) -> str:
    header = ["config", "program", "latency us", "bound us", "x bound", "ms/token", "tokens/s", "peak GiB (fits?)",
              "kernels", "compile s", "simulate s", "RSS GiB"]
    cells = []
    for r in rows:
        if "error" in r:
            cells.append([r["config"], r["program"], r["error"], *[""] * (len(header) - 3)])
            continue
        peak, hbm = r["peak_memory_bytes"] / 2**30, r["hbm_capacity_bytes"] / 2**30
        fits = "yes" if r["fits"] else f"no, {peak - hbm:.1f} over"
        bound = r[f"{r['bound']}_bound_ms"] * 1e3
        cells.append([r["config"], r["program"], f"{r['latency_us']:.0f}", f"{bound:.0f} ({r['bound']})",
                      f"{r['x_bound']:.2f}", f"{r['ms_per_token']:.2f}" if "ms_per_token" in r else "",
                      f"{r['tokens_per_s']:.0f}", f"{peak:.1f} ({fits})", r["kernels"],
                      f"{r['compile_s']:.0f}", f"{r['simulate_s']:.0f}", f"{r['rss_gib']:.2f}"])
    return _grid(header, cells, markdown)


def run_one(config: str, kind: str, shape: str, layers: int, options: dict | None = None) -> dict:
    """`one` in a process of its own (its own peak RSS); an error row if it fails."""
    batch, seq = shape.split("x")
    cmd = [sys.executable, __file__, "--one", config, kind, batch, seq, "--layers", str(layers)]
    if options is not None:
        cmd += ["--options", json.dumps(options)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    print(f"  {config} {kind} {shape} {layers or 'all'} layers {options or ''}: done", file=sys.stderr, flush=True)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        return {"config": config, "program": f"{kind} {shape}", "error": last[:120]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def ablation(markdown: bool) -> str:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from pipeline import STEPS  # the steps bench/pipeline.py defines

    out = []
    for kind, shape in (("decode", "1x4096"), ("prefill", "1x512")):
        rows, options = [], {}
        for step in STEPS:
            options = {**options, **step.options}
            one_layer, two = (run_one("llama-2-7b", kind, shape, n, options) for n in (1, 2))
            if "error" in one_layer or "error" in two:
                rows.append([step.name, (one_layer.get("error") or two.get("error"))[:80], "", "", ""])
                continue
            rows.append([step.name, f"{two['latency_us'] - one_layer['latency_us']:.1f}",
                         f"{two['kernels'] - one_layer['kernels']}", f"{one_layer['peak_memory_bytes'] / 2**20:.0f}",
                         f"{one_layer['simulate_s'] + two['simulate_s']:.0f}"])
        header = ["step", "latency / layer us", "kernels / layer", "peak MiB (1 layer)", "simulate s"]
        out.append(f"LLaMA-2-7B {kind} {shape}, fp16, per layer\n\n" + _grid(header, rows, markdown))
    return "\n\n".join(out)


def scaling(markdown: bool) -> str:
    rows = []
    for layers in (2, 8, 32, 80):
        r = run_one("llama-2-7b", "decode", "1x4096", layers)
        if "error" in r:
            rows.append([layers, r["error"][:80], "", "", "", ""])
            continue
        rows.append([layers, r["kernels"], f"{r['compile_s']:.1f}", f"{r['compile_s'] / layers:.2f}",
                     f"{r['simulate_s']:.1f}", f"{r['rss_gib']:.2f}"])
    header = ["layers", "kernels", "compile s", "compile s / layer", "simulate s", "RSS GiB"]
    return "LLaMA-2-7B decode 1x4096, fp16, O3: compile and timing-only simulation\n\n" + _grid(header, rows, markdown)


def _grid(header: list[str], rows: list[list], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(map(str, r)) + " |" for r in rows])
    widths = [max(len(h), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return "\n".join([fmt.format(*header), *(fmt.format(*map(str, r)) for r in rows)])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--configs", default="llama-2-7b,llama-2-13b")
    p.add_argument("--decode", default="1x4096,8x4096", help="BATCHxCACHE of each decode step")
    p.add_argument("--prefill", default="1x2048,8x4096", help="BATCHxSEQ of each prefill (8x4096: the seeds' shape)")
    p.add_argument("--layers", type=int, default=0, help="layers of each config (0: all)")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--ablation", action="store_true", help="LLaMA-2-7B per layer, step by step (see above)")
    p.add_argument("--scaling", action="store_true", help="LLaMA-2-7B decode at 2, 8, 32, 80 layers (see above)")
    p.add_argument("--one", nargs=4, metavar=("CONFIG", "KIND", "BATCH", "SEQ"), help=argparse.SUPPRESS)
    p.add_argument("--options", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        config, kind, batch, seq = args.one
        options = json.loads(args.options) if args.options else None
        print(json.dumps(one(config, kind, int(batch), int(seq), args.layers, options)))
        return
    t0 = time.perf_counter()
    if args.ablation or args.scaling:
        print(ablation(args.markdown) if args.ablation else scaling(args.markdown))
        print(f"\n({time.perf_counter() - t0:.0f} s)")
        return
    rows = [run_one(config, kind, shape, args.layers)
            for config in filter(None, args.configs.split(","))
            for kind, shapes in (("decode", args.decode), ("prefill", args.prefill))
            for shape in filter(None, shapes.split(","))]
    print("LLaMA-2 on one modeled 910B (fp16, O3, shape-only weights, timing-only simulation)\n")
    print(table(rows, args.markdown))
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
