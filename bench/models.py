"""The model builders (geir.models) compiled at O3 on the modeled device, beside the seed's
TransformerBlock imported from ONNX.

One row per program:

- block onnx: testing/transformer.py `block_onnx` (the seed's TransformerBlock as ONNX nodes,
  GELU as its erf form), imported; block builder / block shape-only: geir.models.transformer_block
  with random weights / placeholder weights (no bytes: the same kernels and timing);
- llama <config> prefill / decode: geir.models.llama with placeholder weights ("shape-only"),
  `--layers` layers of that config (a whole 7B model's functional run is minutes of numpy);
- compile s: geir.compile; kernels: distinct kernels launched (report `kernel_count`);
  latency us: the simulator's modeled latency of one run on seeded random inputs;
  constant MiB: the bytes the final program's constants store (placeholders: ~0).

Every row is f16 in the default precision mode (force_fp16).

    python bench/models.py [--batch 8 --seq 128] [--llama tiny,llama-7b] [--layers 1] [--markdown]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import geir
from geir.dialects import ascend as a
from geir.models import CONFIGS
from geir.testing.transformer import block_onnx


def _row(name: str, model, **options) -> dict:
    t0 = time.perf_counter()
    cm = geir.compile(model, opt_level=3, **options)
    compile_s = time.perf_counter() - t0
    report = cm.report
    stored = sum(len(op.value.data.data) for op in cm.module.walk()
                 if isinstance(op, a.ConstantOp) and hasattr(op.value, "data"))
    return {"program": name, "compile s": f"{compile_s:.1f}", "kernels": report["kernel_count"],
            "latency us": f"{report['latency_us']:.1f}", "constant MiB": f"{stored / 2**20:.2f}"}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--llama", default="tiny", help="comma-separated configs (geir.models.CONFIGS)")
    p.add_argument("--layers", type=int, default=1, help="layers of each LLaMA config to build")
    p.add_argument("--llama-seq", type=int, default=32)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    b, s, h, heads = args.batch, args.seq, args.hidden, args.heads
    rows = [
        _row(f"block onnx {b}x{s}x{h}", block_onnx(b, s, h, heads)),
        _row(f"block builder {b}x{s}x{h}", geir.models.transformer_block(b, s, h, 4 * h, heads)),
        _row(f"block shape-only {b}x{s}x{h}",
             geir.models.transformer_block(b, s, h, 4 * h, heads, weights="shape-only")),
    ]
    for name in filter(None, args.llama.split(",")):
        config = dataclasses.replace(CONFIGS[name], layers=args.layers)
        progs = geir.models.llama(config, batch=1, seq=args.llama_seq, weights="shape-only")
        rows.append(_row(f"llama {name} x{args.layers} prefill 1x{args.llama_seq}", progs.prefill))
        rows.append(_row(f"llama {name} x{args.layers} decode past {args.llama_seq}", progs.decode))
    keys = list(rows[0])
    if args.markdown:
        print("| " + " | ".join(keys) + " |")
        print("|" + "---|" * len(keys))
        for r in rows:
            print("| " + " | ".join(str(r[k]) for k in keys) + " |")
    else:
        widths = [max(len(k), *(len(str(r[k])) for r in rows)) for k in keys]
        print("  ".join(k.ljust(w) for k, w in zip(keys, widths)))
        for r in rows:
            print("  ".join(str(r[k]).ljust(w) for k, w in zip(keys, widths)))


if __name__ == "__main__":
    main()
