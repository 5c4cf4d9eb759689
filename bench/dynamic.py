"""Gears against static compiles, side by side in one run (docs/dynamic-shapes.md).

For each model with dynamic input dims, compiled at O3 with a gear option and, for each gear,
alone with that gear's static input_shape:

- per gear: modeled latency (a timing-only run) and peak memory of the gear's program and of
  the static program (target: latency within 2%), and the compile seconds of each;
- the geared model's device memory (the weights once, the largest gear's workspace) against
  the static programs' summed; the compile time of the N gears against the N static compiles
  (target: no more than N x one).

`--ranges`: each model compiled once for a shape range instead (input_shape with lo~hi over the
batch; the dynamo transformer over its sequence too), and timed at each size against the static
program of that size (target: at most 15% over), with the range program's device memory
(planned for the upper bound) and compile time; `--buckets auto` (or the parts' tops) compiles
each range as range buckets, a range program per part (docs/dynamic-shapes.md).

Models: ResNet-50 (the onnx package's, its batch made a dim_param `N`: its input's and
output's, its classifier's Reshape target [-1, 2048], no intermediate shapes) over batch gears,
the transformer block (hidden 768, 12 heads; torch's dynamo exporter, dynamic batch and
sequence) over (batch, sequence) gears, the same block by the TorchScript exporter
(`transformer_torchscript`, dynamic batch) over batch gears, and a one-layer LLaMA (hidden
1024, its sequence dynamic) over sequence gears; and, asked for by name, one LLaMA-2-7B layer
over sequences up to 4096 at batch 1 (`llama-2-7b-layer`) and at batch 8 (`llama-2-7b-layer-b8`).

    python bench/dynamic.py [--models resnet50,transformer,transformer_torchscript,llama] [--pad | --ranges]
    python bench/dynamic.py --models llama-2-7b-layer,llama-2-7b-layer-b8 --ranges [--buckets auto]
"""

from __future__ import annotations

import argparse
import time

import geir
from geir.driver.dynamic_shapes import describe
from geir.runtime.report import format_bytes, memory_stats


def resnet50() -> tuple[bytes, dict]:
    import numpy as np
    from onnx import numpy_helper

    from geir.testing.models import load_light_model

    model = load_light_model("light_resnet50")
    for vi in (model.graph.input[0], model.graph.output[0]):
        vi.type.tensor_type.shape.dim[0].dim_param = "N"
    del model.graph.value_info[:]  # intermediate shapes at batch 1
    # its classifier's Reshape says [1, 2048]: the batch, made -1 as one does to export it dynamic
    targets = {n.input[1] for n in model.graph.node if n.op_type == "Reshape"}
    for i, t in enumerate(model.graph.initializer):
        if t.name in targets:
            shape = numpy_helper.to_array(t).copy()
            shape[0] = -1
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(shape.astype(np.int64), t.name))
    return model.SerializeToString(), {"input_shape": "gpu_0/data_0:-1,3,224,224",
                                       "dynamic_batch_size": "1,8,16,32"}


def transformer() -> tuple[bytes, dict]:
    from geir.testing.transformer import dynamic_block_onnx

    return dynamic_block_onnx(768, 12), {"input_shape": "x:-1,-1,768", "dynamic_dims": "1,128;8,128;8,512"}


def transformer_torchscript() -> tuple[bytes, dict]:
    """The same block by the TorchScript exporter, whose dynamic axis is the batch alone (it bakes
    nn.MultiheadAttention's sequence length into a Reshape)."""
    import io
    import warnings

    import torch

    from geir.testing.transformer import block_reference

    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(block_reference(768, 12), (torch.randn(2, 128, 768),), f, dynamo=False, opset_version=17,
                          input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    return f.getvalue(), {"input_shape": "x:-1,128,768", "dynamic_batch_size": "1,8"}


def _llama(config, gears: str, batch: int = 1) -> tuple[bytes, dict]:
    from geir.testing.llama import export_onnx, llama_reference

    proto = export_onnx(llama_reference(config, seed=0, std=0.02), batch=batch, seq=64, dynamic_seq=True)
    return proto.SerializeToString(), {"input_shape": f"input_ids:{batch},-1", "dynamic_dims": gears}


def llama() -> tuple[bytes, dict]:
    """A one-layer LLaMA of hidden 1024 (8 heads, SwiGLU 2816, vocab 1024; RoPE, causal),
    its sequence dynamic (the TorchScript exporter), over sequence gears at batch 1."""
    import dataclasses

    from geir.models import CONFIGS

    return _llama(dataclasses.replace(CONFIGS["tiny"], layers=1, hidden=1024, heads=8, kv_heads=8, ffn=2816,
                                      vocab=1024, max_seq=2048), "128;512;2048")


def llama_2_7b_layer() -> tuple[bytes, dict]:
    """One LLaMA-2-7B layer (its vocabulary cut to 1024), the sequence dynamic up to 4096: a
    deployment size (not in the default list: the export and each run take minutes)."""
    import dataclasses

    from geir.models import CONFIGS

    return _llama(dataclasses.replace(CONFIGS["llama-2-7b"], layers=1, vocab=1024, max_seq=4096), "256;1024;4096")


def llama_2_7b_layer_b8() -> tuple[bytes, dict]:
    """The same layer at batch 8: its sequence sits under the batch, and at 8 x 4096 rows its
    projections and SwiGLU split over L2 (minutes, like the batch-1 layer)."""
    import dataclasses

    from geir.models import CONFIGS

    return _llama(dataclasses.replace(CONFIGS["llama-2-7b"], layers=1, vocab=1024, max_seq=4096), "256;1024;4096", 8)


MODELS = {"resnet50": resnet50, "transformer": transformer, "transformer_torchscript": transformer_torchscript,
          "llama": llama, "llama-2-7b-layer": llama_2_7b_layer, "llama-2-7b-layer-b8": llama_2_7b_layer_b8}
DEFAULT = ("resnet50", "transformer", "transformer_torchscript", "llama")
RANGES = {"resnet50": [("gpu_0/data_0:1~32,3,224,224", "gpu_0/data_0:{},3,224,224", (1, 2, 8, 16, 32))],
          "transformer": [("x:1~8,128,768", "x:{},128,768", (1, 2, 4, 8)),
                          ("x:8,1~512,768", "x:8,{},768", (64, 128, 256, 512))],
          "transformer_torchscript": [("x:1~8,128,768", "x:{},128,768", (1, 2, 4, 8))],
          "llama": [("input_ids:1,1~2048", "input_ids:1,{}", (128, 512, 2048))],
          "llama-2-7b-layer": [("input_ids:1,1~4096", "input_ids:1,{}", (256, 1024, 4096))],
          "llama-2-7b-layer-b8": [("input_ids:8,1~4096", "input_ids:8,{}", (16, 64, 65, 256, 257, 1024, 1025, 4096))]}
"""Per model: its ranges, each with the static input_shape of a size and the sizes timed."""


def ranges(name: str, data: bytes, text: str, static_text: str, sizes: tuple[int, ...],
           buckets: str | None = None) -> None:
    """The range program (with `buckets`: the range buckets) at each size against the static
    program of that size."""
    import numpy as np

    from geir.driver.range_buckets import RangeBuckets

    t0 = time.perf_counter()
    cm = geir.compile(data, input_shape=text, **({"range_buckets": buckets} if buckets else {}))
    range_s = time.perf_counter() - t0
    (dim,) = cm.dims
    parts = [b.ranges() for b in cm.buckets] if isinstance(cm, RangeBuckets) else [cm.ranges()]
    print(f"\n{name}: range {cm.ranges()} compiled in {range_s:.1f} s"
          + (f" as {len(parts)} buckets: {' | '.join(parts)}" if len(parts) > 1 else ""))
    print("| size | latency us (range / static) | overhead | peak memory (range / static) | compile s (static) |")
    print("|---|---|---|---|---|")
    overheads = []
    for size in sizes:
        t0 = time.perf_counter()
        static = geir.compile(data, input_shape=static_text.format(size))
        seconds = time.perf_counter() - t0
        feeds = {n: np.zeros([size if (n, i) in dim.positions else d for i, d in enumerate(shape)], dt)
                 for n, shape, dt in cm.input_specs()}
        _, rr = cm.profile(feeds, mode="timing")
        _, rs = static.profile(mode="timing")
        overheads.append(rr["latency_us"] / rs["latency_us"])
        print(f"| {size} | {rr['latency_us']:.1f} / {rs['latency_us']:.1f} | {100 * (overheads[-1] - 1):+.1f}% | "
              f"{format_bytes(rr['peak_memory_bytes'])} / {format_bytes(rs['peak_memory_bytes'])} | {seconds:.1f} |",
              flush=True)
    if len(parts) > 1:
        mem = cm.memory()
        print(f"device memory: {format_bytes(mem['peak_memory_bytes'])} (weights {format_bytes(mem['constant_bytes'])} "
              f"once, the largest bucket's workspace) vs {format_bytes(mem['separate_models_bytes'])} as separate programs")
    print(f"largest overhead {100 * (max(overheads) - 1):+.1f}% (target <= +15%); the range's compile {range_s:.1f} s")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(DEFAULT), help=f"of {', '.join(MODELS)}")
    p.add_argument("--pad", action="store_true", help="compile the gears with pad_to_gear (the padding analysis)")
    p.add_argument("--ranges", action="store_true", help="a shape range per model instead of gears")
    p.add_argument("--buckets", metavar="auto|T,T,...", help="with --ranges: compile each range as range buckets")
    args = p.parse_args()
    for name in args.models.split(","):
        data, options = MODELS[name]()
        if args.ranges:
            for spec in RANGES[name]:
                ranges(name, data, *spec, buckets=args.buckets)
            continue
        t0 = time.perf_counter()
        geared = geir.compile(data, pad_to_gear=args.pad, **options)
        geared_s = time.perf_counter() - t0
        print(f"\n{name}: {len(geared.gears)} gears ({geared.plan.option}), compiled in {geared_s:.1f} s")
        print("| gear | latency us (gear / static) | ratio | peak memory (gear / static) | compile s (gear / static) |")
        print("|---|---|---|---|---|")
        static_s, static_peak = 0.0, 0
        for gear, program in zip(geared.gears, geared.programs):
            t0 = time.perf_counter()
            static = geir.compile(data, input_shape=describe(gear))
            seconds = time.perf_counter() - t0
            static_s += seconds
            _, rg = program.profile(mode="timing")
            _, rs = static.profile(mode="timing")
            static_peak += memory_stats(static.module)["peak_memory_bytes"]
            print(f"| {describe(gear)} | {rg['latency_us']:.1f} / {rs['latency_us']:.1f} | "
                  f"{rg['latency_us'] / rs['latency_us']:.4f} | {format_bytes(rg['peak_memory_bytes'])} / "
                  f"{format_bytes(rs['peak_memory_bytes'])} | {geared.compile_seconds[describe(gear)]:.1f} / "
                  f"{seconds:.1f} |", flush=True)
        mem = geared.memory()
        print(f"device memory: geared {format_bytes(mem['peak_memory_bytes'])} (weights "
              f"{format_bytes(mem['constant_bytes'])} once, workspace {format_bytes(mem['workspace_bytes'])}, "
              f"the largest gear's) vs {format_bytes(static_peak)} for the static programs together")
        print(f"compile: {geared_s:.1f} s for the gears vs {static_s:.1f} s for the static compiles "
              f"({geared_s / static_s:.2f}x)")
        if args.pad:
            print(f"padded dims: {[d for d in geared.padding]}; refused: {list(geared.unpadded.values())}")


if __name__ == "__main__":
    main()
