"""What graph-layout leaves to run: per model, the graph.trans_data ops left at run time (weights
are converted at compile time and not counted), their bytes, and the modeled share of time spent
in layout conversion.

For each model, after graph-simplify + graph-fuse + graph-layout, all from this one run:
- blocked: values stored NC1HWC0 / FRACTAL_Z / FRACTAL_NZ (results and fusion block arguments);
- trans_data: run-time conversions, as kernels of their own + steps inside fused kernels;
- MB: bytes they read and write;
- conv us: their modeled time (a kernel: with its launch; inside a fused kernel: without) plus
  the re-layouts inside cube kernels that read or write a format other than their native one;
- share: conv us / (the fused program's modeled time + conv us), the program time being
  graph-fuse's cost model over the fused module (each fusion one kernel, formats not priced);
- ND us: the same conversions if every activation stayed ND (every conv / matmul re-laying out
  its operands and result in-kernel, weights still converted at compile time) - what the
  chosen formats save;
- conv x: the convolutions' modeled kernel time with ND activations over that with NC1HWC0
  activations (FRACTAL_Z weights in both), the cost model's counterpart of GE's "Conv2D 2.3x
  from NC1HWC0";
- ms: graph-layout's compile time.

    python bench/layout.py [--models light_resnet50,transformer1] [--device ascend910b]
"""

from __future__ import annotations

import argparse
import time

from xdsl.context import Context

from geir.dialects import formats as L
from geir.dialects import graph as g
from geir.frontend.onnx import import_model
from geir.passes.graph.fuse import Costs, FusePass, modeled_us
from geir.driver.pipelines import RECOGNIZERS
from geir.driver.registry import get_all_passes
from geir.passes.graph.layout import LayoutCosts, LayoutPass, cube_type, layout_report
from geir.target import op_info
from geir.target.op_info import native_formats
from geir.passes.graph.simplify import SimplifyPass
from geir.testing.suite import LIGHT_MODELS

TRANSFORMERS = ("transformer1", "transformer2")


def load(name: str):
    if name.startswith("transformer"):
        from geir.testing.transformer import transformer_onnx

        return transformer_onnx(int(name.removeprefix("transformer") or 1))
    from geir.testing.suite import light_model

    return light_model(name)


def main_block(module):
    return next(iter(module.body.block.ops)).body.block


def nd_costs(module, device: str) -> tuple[float, float, float]:
    """Before graph-layout: the in-kernel re-layouts if every activation stayed ND (constant
    weights still blocked), and the modeled time of the convolutions with ND activations
    and with their native formats."""
    costs = LayoutCosts(device)
    relayout = conv_nd = conv_native = 0.0
    for op in module.walk():
        if not op_info.CUBE.takes(op):
            continue
        values = [*op.operands, op.results[0]]
        if not all(cube_type(L.logical_type(v.type)) for v in values):
            continue
        natives = native_formats(op)
        formats = tuple(n if isinstance(v.owner, g.ConstantOp) or (isinstance(op.parent_op(), g.FusionOp)
                                                                     and _const_arg(v)) else L.ND
                        for v, n in zip(values, natives))
        relayout += costs.penalty_us(op, formats, natives)
        if op.LAYOUT == "conv" and natives[0] == L.NC1HWC0:
            conv_nd += costs.anchor_us(op, formats, natives)
            conv_native += costs.anchor_us(op, natives, natives)
    return relayout, conv_nd, conv_native


def _const_arg(v) -> bool:
    from xdsl.ir import BlockArgument

    if not isinstance(v, BlockArgument):
        return False
    fusion = v.block.parent_op()
    return isinstance(fusion.operands[v.index].owner, g.ConstantOp)


def blocked_values(module) -> int:
    n = 0
    for op in module.walk():
        vals = list(op.results)
        if isinstance(op, g.FusionOp):
            vals += list(op.body.block.args)
        n += sum(L.storage_of(v.type) in L.BLOCKED_FORMATS for v in vals)
    return n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join((*LIGHT_MODELS, *TRANSFORMERS)))
    p.add_argument("--device", default="ascend910b")
    args = p.parse_args()
    ctx = Context()
    costs = Costs(args.device)
    head = (f"{'model':<20} {'blocked':>7} {'trans_data':>11} {'MB':>7} {'conv us':>8} {'program us':>10} "
            f"{'share':>6} {'ND us':>8} {'conv x':>6} {'ms':>6}")
    print(head)
    print("-" * len(head))
    for name in args.models.split(","):
        module = import_model(load(name))
        SimplifyPass().apply(ctx, module)
        for recognizer in RECOGNIZERS:  # the fuse stage: decomposed ops first
            get_all_passes()[recognizer]()().apply(ctx, module)
        FusePass(device=args.device).apply(ctx, module)
        program = modeled_us(main_block(module), costs)
        nd, conv_nd, conv_native = nd_costs(module, args.device)
        t0 = time.perf_counter()
        LayoutPass(device=args.device).apply(ctx, module)
        ms = (time.perf_counter() - t0) * 1e3
        module.verify()
        r = layout_report(module, args.device)
        share = r.conversion_us / (program + r.conversion_us) if program else 0.0
        ratio = f"{conv_nd / conv_native:.2f}" if conv_native else "-"
        td = f"{r.standalone} + {r.in_kernel}"
        print(f"{name:<20} {blocked_values(module):>7} {td:>11} {r.trans_data_bytes / 1e6:>7.2f} "
              f"{r.conversion_us:>8.1f} {program:>10.1f} {share:>6.1%} {nd:>8.1f} {ratio:>6} {ms:>6.0f}")


if __name__ == "__main__":
    main()
