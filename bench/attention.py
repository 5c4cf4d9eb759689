"""Attention at real sizes, O0 (decomposed: batched matmul, softmax, matmul, the score matrix
in HBM) beside O3 (graph-recognize-attention, then the one attention kernel).

For each (batch, heads, sequence, head dim) a causal HF-style attention (q k^T / sqrt(d) +
a triangular mask, softmax, @ v; exported with torch.onnx.export, TorchScript) is compiled
at O0 and O3 (force_fp16, the default) and profiled on the modeled device (ascend910b):

- latency us: the simulator's modeled latency of one run;
- kernels: kernels launched;
- peak MiB: all device memory (inputs, outputs, weights, workspace);
- workspace MiB: the planned intermediates (the fp16 casts of q, k, v and the output, and at
  O3 the kernel's per-block [mq, nk] / [mq, Dv] scratch tiles; at O0 the score matrices);
- scores MiB: what one [B, H, S, S] fp16 score matrix takes: O3's workspace beyond the casts
  is far below it;
- cos: the O3 output against onnxruntime (fp32);
- O0 / O3: the O0 latency over this row's (the attention kernel pipelines its key tiles:
  docs/lowering.md "Attention").

    python bench/attention.py [--sizes 8x8x128x64,8x8x512x96] [--markdown]

`--decode` instead: one decode step's attention (graph.attention, fp16, one query row over a
full cache) at the shapes of real models, each compiled twice in this process and timed
without data - with the template's decode choices (grouped-query packing, keys split in
parts plus a combine kernel; docs/lowering.md "Attention") and with them switched off (one
work item per query head over every key, as before them): latency, kernels, blocks, HBM
bytes moved, and the ratio.

    python bench/attention.py --decode [--decode-sizes 1x5x5x4096x128,...] [--markdown]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

DEFAULT_SIZES = "8x8x128x64,8x8x256x96,8x8x512x64,8x8x512x96"
DECODE_SIZES = {  # B x H x Hkv x L x D: a decode step of each (per device under tensor parallelism)
    "LLaMA-2-13B, tensor parallel 8": "1x5x5x4096x128",
    "LLaMA-2-13B, tensor parallel 4": "1x10x10x4096x128",
    "LLaMA-2-13B": "1x40x40x4096x128",
    "LLaMA-3-8B": "1x32x8x4096x128",
    "LLaMA-3-8B, batch 8": "8x32x8x4096x128",
    "LLaMA-3-8B, tensor parallel 8": "1x4x1x8192x128",
}


def export(path: str, b: int, h: int, s: int, d: int) -> None:
    import torch
    import torch.nn.functional as F

    class Attention(torch.nn.Module):
        def forward(self, q, k, v):
            w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
            w = w + torch.full((s, s), float("-inf")).triu(1)
            return torch.matmul(F.softmax(w, dim=-1), v)

    x = torch.zeros(b, h, s, d)
    torch.onnx.export(Attention().eval(), (x, x, x), path, dynamo=False, opset_version=17)


def decode_rows(sizes: dict[str, str]) -> list[tuple]:
    import geir
    from geir.lowering.templates import attention

    choices = (attention.split_choices, attention.grouped_rows)
    plain = (lambda plan, items, nk, spec: [(1, 0)], lambda plan: 0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec in sizes.items():
            b, h, hkv, l, d = map(int, spec.lower().split("x"))
            q, k, o = f"tensor<{b}x{h}x1x{d}xf16>", f"tensor<{b}x{hkv}x{l}x{d}xf16>", f"tensor<{b}x{h}x1x{d}xf16>"
            path = os.path.join(tmp, f"decode_{spec}.mlir")
            with open(path, "w") as f:
                f.write(f"func.func @main(%q: {q}, %k: {k}, %v: {k}) -> {o} {{\n"
                        f"  %y = graph.attention %q, %k, %v {{scale = {1 / math.sqrt(d)} : f32, causal = 1 : i64}} : "
                        f"({q}, {k}, {k}) -> {o} loc(\"attention\")\n  func.return %y : {o}\n}}\n")
            got = {}
            for label, (splits, grouped) in (("plain", plain), ("decode choices", choices)):
                attention.split_choices, attention.grouped_rows = splits, grouped
                try:
                    _, report = geir.compile(path).profile(mode="timing")
                finally:
                    attention.split_choices, attention.grouped_rows = choices
                kernels = [r for r in report["kernels"] if r["name"].startswith("k0_attention")]
                got[label] = (report["latency_us"], len(kernels), "+".join(str(r["block_dim"]) for r in kernels),
                              sum(r["hbm_bytes"] for r in kernels) / 1e6)
            for label, (us, n, blocks, mb) in got.items():
                rows.append((name, spec, label, us, n, blocks, mb, got["plain"][0] / us))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help="BxHxSxD,... (default %(default)s)")
    ap.add_argument("--decode", action="store_true", help="decode steps with and without the decode choices")
    ap.add_argument("--decode-sizes", default=None, help="BxHxHkvxLxD,... (default: the DECODE_SIZES models)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    if args.decode:
        sizes = dict(DECODE_SIZES) if args.decode_sizes is None else {s: s for s in args.decode_sizes.split(",")}
        head = ("model", "BxHxHkvxLxD", "attention", "latency us", "kernels", "blocks", "HBM MB", "plain / this")
        fmt = "| " + " | ".join(["{}"] * len(head)) + " |" if args.markdown else "  ".join(["{:>16}"] * len(head))
        print(fmt.format(*head))
        if args.markdown:
            print("|" + "---|" * len(head))
        for r in decode_rows(sizes):
            print(fmt.format(*r[:3], f"{r[3]:.1f}", r[4], r[5], f"{r[6]:.1f}", f"{r[7]:.2f}x"), flush=True)
        return

    import onnxruntime as ort

    import geir

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.sizes.split(","):
            b, h, s, d = map(int, spec.lower().split("x"))
            path = os.path.join(tmp, f"attn_{spec}.onnx")
            export(path, b, h, s, d)
            rng = np.random.default_rng(0)
            sess = ort.InferenceSession(path)
            feeds = {i.name: rng.standard_normal((b, h, s, d)).astype(np.float32) for i in sess.get_inputs()}
            want = sess.run(None, feeds)[0].astype(np.float64)
            scores_mib = b * h * s * s * 2 / 2**20
            for level in (0, 3):
                t0 = time.time()
                cm = geir.compile(path, opt_level=level)
                outputs, report = cm.profile(feeds)
                got = np.asarray(next(iter(outputs.values())), np.float64)
                cos = float(np.dot(got.ravel(), want.ravel()) / (np.linalg.norm(got) * np.linalg.norm(want)))
                rows.append((f"{b}x{h}x{s}x{d}", f"O{level}", report["latency_us"], report["kernel_count"],
                             report["peak_memory_bytes"] / 2**20,
                             report["memory"]["workspace_bytes"] / 2**20, scores_mib, cos, time.time() - t0))
    head = ("size BxHxSxD", "level", "latency us", "O0 / O3", "kernels", "peak MiB", "workspace MiB", "scores MiB",
            "cos", "run s")
    o0 = {r[0]: r[2] for r in rows if r[1] == "O0"}
    fmt = "| " + " | ".join(["{}"] * len(head)) + " |" if args.markdown else "  ".join(["{:>13}"] * len(head))
    print(fmt.format(*head))
    if args.markdown:
        print("|" + "---|" * len(head))
    for r in rows:
        print(fmt.format(r[0], r[1], f"{r[2]:.1f}", f"{o0[r[0]] / r[2]:.2f}", r[3], f"{r[4]:.2f}", f"{r[5]:.2f}", f"{r[6]:.2f}", f"{r[7]:.5f}", f"{r[8]:.1f}"))


if __name__ == "__main__":
    main()
