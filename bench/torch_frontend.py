"""The PyTorch frontend against the ONNX one, per torch model (geir.testing.torch_models):
geir.compile of the same module with `torch_frontend="fx"` (traced to ATen + the ATen
importer, the default) and `"onnx"` (the TorchScript exporter + the ONNX importer), side by
side in one run: compile time (capture + import + the pipeline; the fastest of `--repeat`
compiles of each path, taken in turn, as the machine is shared), kernels, modeled latency, and
the largest difference between the two programs' outputs.

    python bench/torch_frontend.py [--models resnet,unet] [--batch 8] [-O 3] [--precision-mode force_fp16] [--repeat N]
    python bench/torch_frontend.py --deploy [--models transformer,llama]   # at deployment sizes
    python bench/torch_frontend.py --train [--models resnet,llama]   # one training step per model

`--deploy` compiles each model at a size it is deployed at (DEPLOY_SIZES: the CNNs at batch
32 of 224 x 224 images (the U-Net 16 of 256 x 256), BERT-base's block at 8 x 512, one
LLaMA-2-7B layer with its embedding and head at 8 x 512) and times the programs without data
(`profile(mode="timing")`), so the outputs column is left out. There the capture's weights
matter: the TorchScript exporter runs the model on real tensors and writes every weight into
the ONNX protobuf; the FX path traces on fake tensors and the importer reads the parameters.

`--train` instead runs one SGD step of each model through torch.compile(backend="geir") with
the profiler on and prints the step's report (driver/torch_backend.py `step_report`): the
forward and backward graphs' modeled latencies, the step's, and samples per second.
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np

import geir
from geir.dialects import ascend as a
from geir.testing.torch_models import TORCH_MODELS, torch_model


DEPLOY_SIZES = {
    "resnet": "batch 32, 3 x 224 x 224", "mobilenet": "batch 32, 3 x 224 x 224", "unet": "batch 16, 3 x 256 x 256",
    "transformer": "BERT-base's block (768, 12 heads), 8 x 512", "llama": "LLaMA-2-7B, one layer, 8 x 512 tokens",
}


def deploy_model(name: str):
    """(module, example inputs) of one of TORCH_MODELS at the size DEPLOY_SIZES names."""
    import dataclasses

    import torch

    if name == "transformer":
        from geir.testing.transformer import block_reference

        return block_reference(768, 12), (torch.randn(8, 512, 768),)
    if name == "llama":
        from geir.models.llama import CONFIGS
        from geir.testing.llama import llama_reference

        config = dataclasses.replace(CONFIGS["llama-2-7b"], layers=1)
        return llama_reference(config, std=0.02), (torch.randint(0, config.vocab, (8, 512)),)
    model, _ = torch_model(name)
    batch, size = (16, 256) if name == "unet" else (32, 224)
    return model, (torch.randn(batch, 3, size, size),)


def compile_once(model, inputs, frontend: str, options: dict):
    t0 = time.perf_counter()
    cm = geir.compile(model, example_inputs=inputs, torch_frontend=frontend, **options)
    return cm, time.perf_counter() - t0


def measure(cm, inputs, timing: bool = False) -> dict:
    feeds = {name: t.numpy() for (name, _, _), t in zip(cm.input_specs(), inputs)}
    outputs, report = cm.profile(feeds, mode="timing") if timing else cm.profile(feeds)
    return {"kernels": sum(isinstance(op, a.KernelOp) for op in cm.module.walk()),
            "latency_us": report["latency_us"], "outputs": list(outputs.values()) if outputs else []}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(TORCH_MODELS))
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("-O", dest="opt_level", type=int, default=3)
    p.add_argument("--precision-mode", default="must_keep_origin_dtype")
    # the paths are within a few percent of each other, this machine's noise on one compile:
    # the fastest of 7 holds still where the fastest of 3 did not
    p.add_argument("--repeat", type=int, help="compiles per path and model, the fastest shown "
                   "(default 7; 2 with --deploy, where one compile takes seconds)")
    p.add_argument("--train", action="store_true", help="one profiled training step per model")
    p.add_argument("--deploy", action="store_true", help="each model at a deployment size (DEPLOY_SIZES)")
    args = p.parse_args()
    if args.repeat is None:
        args.repeat = 2 if args.deploy else 7
    options = {"opt_level": args.opt_level, "precision_mode": args.precision_mode}
    if args.train:
        return train(args.models.split(","), args.batch, options)
    print(("deployment sizes" if args.deploy else f"batch {args.batch}") + f", O{args.opt_level}, {args.precision_mode}")
    # each path's first call in a process sets torch up (seconds, once): timed on its own, so the
    # rows compare the paths, not which model came first
    import torch

    first = [compile_once(torch.nn.Linear(2, 2), (torch.randn(1, 2),), f, options)[1] for f in ("fx", "onnx")]
    print(f"first compile in this process (a Linear): fx {first[0]:.1f} s, onnx {first[1]:.1f} s (once, not in the rows)")
    print("| model | compile s (fx / onnx) | kernels (fx / onnx) | latency us (fx / onnx) | "
          + ("size |" if args.deploy else "max |fx - onnx| |"))
    print("|---|---|---|---|---|")
    for name in args.models.split(","):
        model, inputs = deploy_model(name) if args.deploy else torch_model(name, batch=args.batch)
        rows: dict[str, dict] = {}  # each path's first program, measured and dropped (a 7B layer's is gigabytes)
        seconds: dict[str, list[float]] = {"fx": [], "onnx": []}
        for _ in range(args.repeat):  # in turn, so both paths see the same machine
            for frontend, done in seconds.items():
                cm, t = compile_once(model, inputs, frontend, options)
                done.append(t)
                if frontend not in rows:
                    rows[frontend] = measure(cm, inputs, args.deploy)
                del cm
                gc.collect()
        fx, ox = ({**rows[f], "seconds": min(seconds[f])} for f in ("fx", "onnx"))
        if args.deploy:
            last = DEPLOY_SIZES[name]
        else:
            last = f"{max(float(np.max(np.abs(x.astype(np.float64) - y))) for x, y in zip(fx['outputs'], ox['outputs'])):.2e}"
        print(f"| {name} | {fx['seconds']:.3f} / {ox['seconds']:.3f} | {fx['kernels']} / {ox['kernels']} | "
              f"{fx['latency_us']:.1f} / {ox['latency_us']:.1f} | {last} |", flush=True)
        del rows, model, inputs


def train(names: list[str], batch: int, options: dict) -> None:
    import torch

    from geir.driver.torch_backend import step_report

    print(f"one SGD step, batch {batch}, O{options['opt_level']}, {options['precision_mode']}")
    print("| model | forward us | backward us | step us | samples/s | kernels (fw + bw) |")
    print("|---|---|---|---|---|---|")
    for name in names:
        model, inputs = torch_model(name, batch=batch)
        model.train()
        fn = torch.compile(model, backend="geir", options={**options, "profile": True})
        try:
            out = fn(*inputs)
            out = out[0] if isinstance(out, tuple) else out
            out.float().square().mean().backward()  # a loss touching every output
        except Exception as e:  # an op geir cannot train through yet: its one-line reason
            reason = str(e).split("FxImportError: ")[-1].strip().splitlines()[0]
            print(f"| {name} | not trained: {reason} | | | | |", flush=True)
            torch._dynamo.reset()
            continue
        step = step_report(batch=batch)
        print(f"| {name} | {step['forward']['latency_us']:.1f} | {step['backward']['latency_us']:.1f} | "
              f"{step['latency_us']:.1f} | {step['samples_per_s']:.0f} | {step['kernel_count']} |", flush=True)
        torch._dynamo.reset()


if __name__ == "__main__":
    main()
