"""An exported ONNX LLaMA compiled without its weights (geir.compile(path, weights=False)).

The torch reference (testing/llama.py, Hugging Face's module names and math) at LLaMA-2-7B's
shapes with a few layers, in fp16, is exported with the TorchScript exporter (its prefill:
input_ids -> logits) and saved with its weights in an external data file, which is then
deleted. The model is compiled at O3 with `weights=False` (every weight a shape-only
placeholder, no tensor read) and timed without data; beside it, the same configuration built
with geir.models.llama's shape-only weights. Each step runs in its own process, so the peak
RSS printed is that step's: compiling must not hold the weights' bytes.

    python bench/onnx_no_weights.py                  # 2 layers, prefill 1x512
    python bench/onnx_no_weights.py --layers 4 --seq 1024
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def _config(layers: int):
    from geir.models import CONFIGS

    return dataclasses.replace(CONFIGS["llama-2-7b"], layers=layers)


def export(path: str, layers: int, seq: int) -> dict:
    import onnx
    import torch

    from geir.testing.llama import export_onnx, llama_reference

    t0 = time.perf_counter()
    model = llama_reference(_config(layers), std=0.02).half()
    with torch.no_grad():
        proto = export_onnx(model, batch=1, seq=seq)
    onnx.save(proto, path, save_as_external_data=True, location=os.path.basename(path) + ".data")
    data = path + ".data"
    size = os.path.getsize(data)
    os.remove(data)  # what the compile below must do without
    return {"export_s": time.perf_counter() - t0, "weights_bytes": size, "nodes": len(proto.graph.node)}


def compile_onnx(path: str) -> dict:
    import geir

    t0 = time.perf_counter()
    cm = geir.compile(path, weights=False)
    compile_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    _, r = cm.profile(mode="timing")
    return _row("ONNX, weights=False", cm, r, compile_s, time.perf_counter() - t1)


def compile_builder(layers: int, seq: int) -> dict:
    import geir

    t0 = time.perf_counter()
    progs = geir.models.llama(_config(layers), batch=1, seq=seq, weights="shape-only", dtype="f16")
    cm = geir.compile(progs.prefill)
    compile_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    _, r = cm.profile(mode="timing")
    return _row("geir.models.llama, shape-only", cm, r, compile_s, time.perf_counter() - t1)


def _row(source: str, cm, r: dict, compile_s: float, simulate_s: float) -> dict:
    return {"source": source, "shape_only": cm.shape_only, "latency_us": r["latency_us"],
            "kernels": r["kernel_count"], "weight_bytes": r["memory"]["constant_bytes"],
            "peak_bytes": r["peak_memory_bytes"], "compile_s": compile_s, "simulate_s": simulate_s,
            "rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 2**30}


def _in_process(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--step", nargs="+", help=argparse.SUPPRESS)  # one step, in a child process
    args = p.parse_args()
    if args.step:
        kind, *rest = args.step
        out = {"export": lambda: export(rest[0], args.layers, args.seq), "onnx": lambda: compile_onnx(rest[0]),
               "builder": lambda: compile_builder(args.layers, args.seq)}[kind]()
        print(json.dumps(out))
        return
    common = ["--layers", str(args.layers), "--seq", str(args.seq)]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "llama.onnx")
        exported = _in_process(*common, "--step", "export", path)
        rows = [_in_process(*common, "--step", "onnx", path), _in_process(*common, "--step", "builder")]
    print(f"LLaMA-2-7B shapes, {args.layers} layers, fp16, prefill 1x{args.seq}, O3, timed without data")
    print(f"exported: {exported['nodes']} ONNX nodes, {exported['weights_bytes'] / 2**30:.2f} GiB of weights in "
          f"external data (deleted before compiling), {exported['export_s']:.0f} s\n")
    header = ["source", "latency us", "kernels", "weights GiB", "peak GiB", "compile s", "simulate s", "RSS GiB"]
    cells = [[r["source"], f"{r['latency_us']:.0f}", str(r["kernels"]), f"{r['weight_bytes'] / 2**30:.2f}",
              f"{r['peak_bytes'] / 2**30:.2f}", f"{r['compile_s']:.0f}", f"{r['simulate_s']:.0f}",
              f"{r['rss_gib']:.2f}"] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(header, *cells)]
    for line in (header, *cells):
        print("  ".join(c.rjust(w) for c, w in zip(line, widths)))
    print(f"\nlatency ONNX / builder: {rows[0]['latency_us'] / rows[1]['latency_us']:.3f}")


if __name__ == "__main__":
    main()
