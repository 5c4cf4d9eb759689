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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help="BxHxSxD,... (default %(default)s)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()

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
