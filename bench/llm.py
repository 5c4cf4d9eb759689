"""LLM decoders on the modeled device: the seed's TransformerBlock step by step, the tiny
LLaMA's kernels per layer, and a decode step against its HBM bound.

1. The seed's TransformerBlock (post-LN MHA + GELU MLP, hidden 768, FFN 3072, 8 heads) on an
   input of (8, 128, 768) in fp16 (geir.models.transformer_block, random weights), compiled at
   each step of bench/pipeline.py (O0, +simplify, +fusion, +layout, +memory reuse, +streams =
   O3): modeled latency, peak memory, kernels; the attention kernel's share of kernel time at
   O3; and how many [B, H, S, S] score matrices the program holds in HBM (gm buffers whose
   last two dims are S x S: O0 writes them, the attention kernel never does).
2. The tiny LLaMA (geir.models.llama "tiny": hidden 64, GQA 4:2) at O3: kernels per layer,
   measured as (kernels of 4 layers - kernels of 2 layers) / 2, and one layer's kernels by
   the nodes they compute.
3. A decode step (one token per sequence, a static cache of `--max-len` rows updated in place,
   `--past` rows valid) of each `--decode` config with `--layers` layers: modeled latency
   beside its HBM bound - the bytes a step must read (every weight once, the valid K / V rows)
   over the HBM bandwidth (of the embedding table only the token's row) - and the bound if
   all max_len cache rows are read (the attention kernel reads the whole static cache under
   its position mask). Placeholder weights
   ("shape-only": the same kernels and timing, no bytes stored).
4. The TransformerBlock at deployment sizes (batch 8 / 16, sequence 512), O3, timing-only:
   graph-fuse's norm epilogues as chosen beside none (`disable_fusions=("norm-epilogue",)`),
   with the epilogues taken: the estimate must take the out-projection's and decline the
   down projection's.

Every program is f16 in the default precision mode (force_fp16).

    python bench/llm.py [--decode tiny,llama-7b] [--layers 1] [--past 512 --max-len 1024] [--markdown]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time

import numpy as np

import geir
from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.models import CONFIGS
from geir.target.device import load_device

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline import STEPS  # noqa: E402 - the steps bench/pipeline.py defines

BATCH, SEQ, HIDDEN, FFN, HEADS = 8, 128, 768, 3072, 8


def table(header: list[str], rows: list[list], markdown: bool) -> str:
    cells = [[str(c) for c in r] for r in rows]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cells])
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return "\n".join([fmt.format(*header), *(fmt.format(*r) for r in cells)])


def templates(cm) -> dict[str, str]:
    return {k.sym_name.data: k.attributes[attr_names.TEMPLATE].data for k in cm.module.ops
            if isinstance(k, a.KernelOp) and attr_names.TEMPLATE in k.attributes}


def score_matrices(cm, s: int) -> int:
    """gm buffers of the host program whose last two dims are s x s."""
    return sum(1 for op in cm.module.walk() if isinstance(op, a.AllocOp) and op.space == "gm"
               and tuple(op.results[0].type.get_shape()[-2:]) == (s, s))


def block_steps(markdown: bool) -> str:
    model = geir.models.transformer_block(BATCH, SEQ, HIDDEN, FFN, HEADS, dtype="f16")
    rows, options, base = [], {}, None
    for step in STEPS:
        options = {**options, **step.options}
        t0 = time.perf_counter()
        cm = geir.compile(model, **options)
        compile_s = time.perf_counter() - t0
        _, r = cm.profile()
        base = base or r
        kinds = templates(cm)
        attention = sum(k["time_us"] for k in r["kernels"] if kinds.get(k["name"]) == "attention")
        total = sum(k["time_us"] for k in r["kernels"])
        rows.append([step.name, f"{r['latency_us']:.1f}", f"{base['latency_us'] / r['latency_us']:.2f}",
                     f"{r['peak_memory_bytes'] / 2**20:.1f}", f"{base['peak_memory_bytes'] / r['peak_memory_bytes']:.2f}",
                     r["kernel_count"], score_matrices(cm, SEQ), f"{attention / total:.0%}" if attention else "-",
                     f"{compile_s:.1f}"])
    header = ["step", "latency us", "x O0", "peak MiB", "x O0", "kernels", f"{SEQ}x{SEQ} buffers",
              "attention share", "compile s"]
    one = BATCH * HEADS * SEQ * SEQ * 2 / 2**20
    return (f"TransformerBlock {BATCH}x{SEQ}x{HIDDEN} (FFN {FFN}, {HEADS} heads), fp16; one score matrix "
            f"[{BATCH}, {HEADS}, {SEQ}, {SEQ}] f16 = {one:.1f} MiB\n\n" + table(header, rows, markdown))


def kernels_per_layer(markdown: bool) -> str:
    counts, names = {}, []
    for layers in (2, 4):
        config = dataclasses.replace(CONFIGS["tiny"], layers=layers)
        progs = geir.models.llama(config, batch=1, seq=32, dtype="f16", cache="inplace", max_len=64)
        for kind, module in (("prefill", progs.prefill), ("decode", progs.decode)):
            cm = geir.compile(module, opt_level=3)
            _, r = cm.profile()
            counts[kind, layers] = r["kernel_count"]
            if layers == 2 and kind == "prefill":
                kinds = templates(cm)
                names = [(k["name"], kinds.get(k["name"], "?"), ", ".join(n.rsplit("/", 2)[-2] + "/" + n.rsplit("/", 1)[-1]
                                                                         for n in k["nodes"][:4]))
                         for k in r["kernels"] if any("layers.1/" in n for n in k["nodes"])]
    rows = [[kind, counts[kind, 2], counts[kind, 4], (counts[kind, 4] - counts[kind, 2]) / 2]
            for kind in ("prefill", "decode")]
    text = "Tiny LLaMA (hidden 64, 4 heads, 2 kv heads), O3, fp16: kernels per layer\n\n"
    text += table(["program", "kernels, 2 layers", "kernels, 4 layers", "per layer"], rows, markdown)
    text += "\n\nLayer 1 of the 2-layer prefill:\n\n" + table(["kernel", "template", "nodes"], [list(n) for n in names],
                                                              markdown)
    return text


DEPLOYMENT_BLOCKS = [(8, 512, 768, 3072, 12), (16, 512, 1024, 4096, 16)]


def norm_epilogues(markdown: bool) -> str:
    rows = []
    for b, s, h, f, heads in DEPLOYMENT_BLOCKS:
        model = geir.models.transformer_block(b, s, h, f, heads, dtype="f16")
        chosen, none = (geir.compile(model, opt_level=3, disable_fusions=off)
                        for off in ((), ("norm-epilogue",)))
        _, rc = chosen.profile(mode="timing")
        _, rn = none.profile(mode="timing")
        # a norm epilogue: a matmul kernel holding nodes that are a row kernel's without them
        rowed = {n for k in rn["kernels"] if templates(none).get(k["name"]) == "row" for n in k["nodes"]}
        taken = [k["name"] for k in rc["kernels"]
                 if templates(chosen).get(k["name"]) == "matmul" and rowed & set(k["nodes"])]
        rows.append([f"{b}x{s}x{h} (FFN {f}, {heads} heads)", f"{rc['latency_us']:.1f}", f"{rn['latency_us']:.1f}",
                     f"{rn['latency_us'] / rc['latency_us']:.3f}", rc["kernel_count"], rn["kernel_count"],
                     ", ".join(taken) or "-"])
    return ("TransformerBlock at deployment sizes, O3, fp16, timing-only: norm epilogues as graph-fuse "
            "chooses them vs none\n\n" + table(["block", "chosen us", "none us", "none / chosen", "kernels",
                                                 "kernels (none)", "norm-epilogue kernels"], rows, markdown))


def decode_bound(configs: list[str], layers: int, past: int, max_len: int, markdown: bool) -> str:
    spec = load_device("ascend910b")
    rows = []
    asked = (past, max_len)
    for name in configs:
        c = dataclasses.replace(CONFIGS[name], layers=layers) if layers else CONFIGS[name]
        max_len = min(asked[1], c.max_seq)
        past = min(asked[0], max_len - 1)
        progs = geir.models.llama(c, batch=1, seq=1, dtype="f16", weights="shape-only", cache="inplace",
                                  max_len=max_len)
        t0 = time.perf_counter()
        cm = geir.compile(progs.decode, opt_level=3)
        compile_s = time.perf_counter() - t0
        feeds = cm.random_inputs(floats=False)
        feeds["cache_position"] = np.array([past])
        feeds["position_ids"] = np.array([[past]])
        _, r = cm.profile(feeds, mode="timing")
        # every weight is read once, but of the embedding table only the token's row
        weights = sum(math.prod(op.results[0].type.get_shape()) * 2 for op in progs.decode.walk()
                      if isinstance(op, g.ConstantOp) and math.prod(op.results[0].type.get_shape()) >= c.hidden
                      and not all(isinstance(u.operation, g.GatherOp) for u in op.results[0].uses))
        row_bytes = 2 * c.layers * c.kv_heads * c.head_dim * 2  # K and V, f16
        bound_valid = (weights + row_bytes * (past + 1)) / spec.hbm_bytes_per_s * 1e6
        bound_all = (weights + row_bytes * max_len) / spec.hbm_bytes_per_s * 1e6
        rows.append([f"{name} ({c.layers} layer{'s' if c.layers > 1 else ''}, {past} / {max_len} rows)", f"{weights / 2**20:.1f}",
                     f"{row_bytes * max_len / 2**20:.2f}", f"{r['latency_us']:.1f}", f"{bound_valid:.1f}",
                     f"{r['latency_us'] / bound_valid:.1f}", f"{bound_all:.1f}", r["kernel_count"], f"{compile_s:.1f}"])
    header = ["decode", "weights MiB", "cache MiB", "latency us", "HBM bound us", "x bound", "bound, all rows us",
              "kernels", "compile s"]
    return (f"One decode step, batch 1, a static cache (valid / all rows), fp16, O3 "
            f"(HBM {spec.hbm_bytes_per_s / 1e12:.1f} TB/s)\n\n" + table(header, rows, markdown))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--decode", default="tiny,llama-7b", help="configs of the decode rows (geir.models.CONFIGS)")
    p.add_argument("--layers", type=int, default=1, help="layers of each decode config (0: all)")
    p.add_argument("--past", type=int, default=512)
    p.add_argument("--max-len", type=int, default=1024)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    print(block_steps(args.markdown), end="\n\n")
    print(kernels_per_layer(args.markdown), end="\n\n")
    print(decode_bound([n for n in args.decode.split(",") if n], args.layers, args.past, args.max_len, args.markdown),
          end="\n\n")
    print(norm_epilogues(args.markdown))
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
