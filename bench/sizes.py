"""The seed's TransformerBlock compiled at the sizes users deploy, from small to 7B-13B-layer scale.

One row per (batch, sequence, hidden, heads): the block (post-LN multi-head attention, GELU
FFN of 4 x hidden; testing/transformer.py `block_onnx`, built directly as ONNX so any size
can be made in seconds - weights past 2 GB go to an external data file) is compiled at O3
on the modeled device:

- compile s: geir.compile (import to the last stage), one run; per-op so growth is visible;
- kernels: kernels launched; workspace GiB / peak GiB: the planned workspace and all device
  memory (workspace, weights, inputs and outputs);
- latency us / per token us / bound x: the simulator's modeled latency of one run, per token
  (batch x sequence), and over the roofline bound - only where the functional run that the
  simulator times is affordable (at most --max-macs multiply-accumulates: the interpreter
  computes every tile in numpy); larger sizes show "not timed" (a timing-only simulation
  is what they need);
- a size whose memory plan does not fit the device's HBM is a row saying so (the score
  matrices of an unfused attention: batch x heads x sequence^2 floats).

    python bench/sizes.py [--sizes 8x128x768x8,32x2048x4096x32] [--max-macs 3e11] [--markdown]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time

import numpy as np
import onnx

import geir
from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.errors import GeirError
from geir.testing.transformer import block_onnx

SIZES = (  # batch, sequence, hidden, heads
    (1, 128, 768, 8),
    (8, 128, 768, 8),      # the seed's example input
    (2, 512, 768, 8),
    (8, 512, 1024, 16),
    (32, 512, 1024, 16),
    (32, 2048, 4096, 32),
    (64, 2048, 4096, 32),
    (8, 4096, 4096, 32),
    (32, 4096, 4096, 32),
    (32, 2048, 8192, 64),
    (64, 4096, 8192, 64),
)
EXTERNAL_BYTES = 1 << 30
"""Weights above this are written as external data (protobuf's limit is 2 GB)."""


def macs(b: int, s: int, d: int) -> int:
    return b * s * 12 * d * d + 2 * b * s * s * d  # projections + FFN, then QK^T and PV


def row(size: tuple[int, int, int, int], max_macs: float) -> dict:
    b, s, d, h = size
    out = {"size": f"{b} x {s} x {d}", "heads": h, "weights GiB": 12 * d * d * 4 / 2**30}
    with tempfile.TemporaryDirectory() as tmp:
        big = 12 * d * d * 4 > EXTERNAL_BYTES
        model = block_onnx(b, s, d, h, weights_file=os.path.join(tmp, "weights.bin") if big else None)
        source = model
        if big:
            source = os.path.join(tmp, "model.onnx")
            onnx.save(model, source)
        t0 = time.perf_counter()
        try:
            cm = geir.compile(source, opt_level=3)
        except GeirError as e:
            out["compile s"] = time.perf_counter() - t0
            out["error"] = str(e)
            return out
        out["compile s"] = time.perf_counter() - t0
        out["ops"] = len([op for op in model.graph.node])
        module = cm.module
        host = next(f for f in module.ops if f.attributes.get(attr_names.WORKSPACE_SIZE) is not None)
        out["kernels"] = sum(1 for op in host.walk() if isinstance(op, a.LaunchOp))
        out["workspace GiB"] = host.attributes[attr_names.WORKSPACE_SIZE].value.data / 2**30
        if macs(b, s, d) > max_macs:
            out["timed"] = False
            return out
        x = np.random.default_rng(0).standard_normal((b, s, d)).astype(np.float32)
        t0 = time.perf_counter()
        _, report = cm.profile({"x": x})
        out["run s"] = time.perf_counter() - t0
        out["timed"] = True
        out["latency us"] = report["latency_us"]
        out["per token us"] = report["latency_us"] / (b * s)
        out["bound x"] = report["roofline_ratio"]
        out["peak GiB"] = report["peak_memory_bytes"] / 2**30
    return out


def table(rows: list[dict], markdown: bool) -> str:
    head = ["size (b x s x d)", "heads", "weights GiB", "compile s", "ms / op", "kernels", "workspace GiB",
            "latency us", "per token us", "bound x"]
    lines = []
    sep = " | " if markdown else "  "
    if markdown:
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    else:
        lines.append(sep.join(f"{h:>14}" for h in head))
    notes = []
    for r in rows:
        if "error" in r:
            cells = [r["size"], str(r["heads"]), f"{r['weights GiB']:.2f}", f"{r['compile s']:.1f}", "", "",
                     "does not fit", "", "", ""]
            notes.append(f"{r['size']}: {r['error']}")
        else:
            timed = r["timed"]
            cells = [r["size"], str(r["heads"]), f"{r['weights GiB']:.2f}", f"{r['compile s']:.1f}",
                     f"{1e3 * r['compile s'] / r['ops']:.0f}",
                     str(r["kernels"]), f"{r['workspace GiB']:.2f}",
                     f"{r['latency us']:.0f}" if timed else "not timed",
                     f"{r['per token us']:.4f}" if timed else "",
                     f"{r['bound x']:.2f}" if timed else ""]
        lines.append(("| " + " | ".join(cells) + " |") if markdown else sep.join(f"{c:>14}" for c in cells))
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", help="comma-separated BxSxDxH (default: the table in the docstring)")
    p.add_argument("--max-macs", type=float, default=3e11,
                   help="time (run + simulate) only sizes of at most this many MACs (default 3e11)")
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    sizes = SIZES if not args.sizes else [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    rows = []
    for size in sizes:
        r = row(size, args.max_macs)
        gc.collect()  # the last size's IR holds cycles; hidden 8192 holds ~10 GB while compiling
        rows.append(r)
        state = r.get("error", "timed" if r.get("timed") else "compiled")
        print(f"{r['size']}: {state[:120]} ({r['compile s']:.1f} s)", file=sys.stderr, flush=True)
    print(table(rows, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
