"""What graph-fuse does to the light models and the TorchScript transformer blocks, beside
onnxruntime's optimised graph.

For each model, all from this one run:
- ops: graph ops other than graph.constant in the imported module;
- ort: nodes of onnxruntime's optimised model (ORT_ENABLE_EXTENDED, saved with
  optimized_model_filepath, CPU provider);
- for graph-fuse on the raw import and for graph-simplify then graph-fuse (when graph-simplify
  is registered): in = ops entering graph-fuse, kernels = fusions + ops left outside (constants
  not counted), rate = share of the ops entering graph-fuse that end inside a multi-op fusion;
- modeled us: the device cost model's total kernel time op by op (each op a kernel) and after
  simplify + fuse (each fusion a kernel), and their ratio.
The last column says whether the kernels are fewer than onnxruntime's nodes.

    python bench/fusion.py [--models light_resnet50,transformer1] [--device ascend910b] [--no-ort]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from xdsl.context import Context

from geir.dialects import graph as g
from geir.frontend.onnx import import_model
from geir.passes.graph.fuse import Costs, FusePass, modeled_us
from geir.driver.pipelines import RECOGNIZERS
from geir.driver.registry import get_all_passes
from geir.testing.suite import LIGHT_MODELS, light_model

TRANSFORMERS = ("transformer1", "transformer2")


def load(name: str):
    if name.startswith("transformer"):
        from geir.testing.transformer import transformer_onnx

        return transformer_onnx(int(name.removeprefix("transformer") or 1))
    return light_model(name)


def ort_nodes(model) -> int:
    import onnx
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    with tempfile.TemporaryDirectory() as d:
        so.optimized_model_filepath = os.path.join(d, "optimized.onnx")
        ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return len(onnx.load(so.optimized_model_filepath, load_external_data=False).graph.node)


def main_block(module):
    return next(iter(module.body.block.ops)).body.block


def ops_of(module) -> int:
    return sum(1 for op in main_block(module).ops if isinstance(op, g.GraphOp | g.FusionOp))


def fused(module, pipeline: list[str], ctx: Context, fuse: FusePass) -> tuple[int, int, float]:
    """(ops entering graph-fuse, kernels after it, fusion rate)."""
    passes = get_all_passes()
    for name in pipeline:
        passes[name]()().apply(ctx, module)
    for name in RECOGNIZERS:  # the fuse stage: decomposed ops first
        passes[name]()().apply(ctx, module)
    ops_in = ops_of(module)
    fuse.apply(ctx, module)
    module.verify()
    block = main_block(module)
    kernels = ops_of(module)
    outside = sum(1 for op in block.ops if isinstance(op, g.GraphOp))
    return ops_in, kernels, (ops_in - outside) / ops_in if ops_in else 0.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join((*LIGHT_MODELS, *TRANSFORMERS)))
    p.add_argument("--device", default="ascend910b")
    p.add_argument("--no-ort", action="store_true", help="skip onnxruntime's node counts")
    args = p.parse_args()
    ctx = Context()
    costs = Costs(args.device)
    fuse = FusePass(device=args.device)
    simplify = "graph-simplify" in get_all_passes()
    header = (f"{'model':<20} {'ops':>5} {'ort':>5} | {'fuse: in':>8} {'kernels':>7} {'rate':>5} |"
              f" {'simplify+fuse: in':>17} {'kernels':>7} {'rate':>5} | {'modeled us: ops':>15} {'-> fused':>9}"
              f" {'ratio':>6} | {'< ort':>5} {'s':>5}")
    print(header)
    print("-" * len(header))
    for name in args.models.split(","):
        t = time.perf_counter()
        model = load(name)
        module = import_model(model)
        ops0 = ops_of(module)
        before_us = modeled_us(main_block(module), costs)
        ort = None if args.no_ort else ort_nodes(model)
        raw_in, raw_k, raw_rate = fused(module.clone(), [], ctx, fuse)
        best = module.clone()
        s_in, s_k, s_rate = fused(best, ["graph-simplify"] if simplify else [], ctx, fuse)
        after_us = modeled_us(main_block(best), costs)
        kernels = min(raw_k, s_k)
        verdict = "-" if ort is None else ("yes" if kernels < ort else "NO")
        print(f"{name:<20} {ops0:>5} {ort if ort is not None else '-':>5} | {raw_in:>8} {raw_k:>7} {raw_rate:>5.0%} |"
              f" {s_in:>17} {s_k:>7} {s_rate:>5.0%} | {before_us:>15.1f} {after_us:>9.1f}"
              f" {before_us / after_us:>6.2f} | {verdict:>5} {time.perf_counter() - t:>5.1f}")
    if not simplify:
        print("(graph-simplify is not registered: the simplify+fuse columns are graph-fuse alone)")


if __name__ == "__main__":
    main()
