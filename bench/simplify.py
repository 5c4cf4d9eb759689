"""What graph-simplify removes: op counts before / after on the light models
and the TorchScript transformer, and the Shape/Gather/Concat ops left.

"ops" counts graph ops other than graph.constant (the work a device would
launch); constants are counted apart. All rows come from this one run.

    python bench/simplify.py [--fast-math] [--models light_resnet50,transformer]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from geir.dialects import graph as g
from geir.frontend.onnx import import_model
from geir.passes.graph.simplify import simplify
from geir.testing.suite import LIGHT_MODELS, light_model

SHAPE_OPS = (g.ShapeOp, g.GatherOp, g.ConcatOp)
GRAPH_OPS = frozenset(g.Graph.operations)


def counts(module) -> tuple[int, int, int]:
    """(ops, constants, Shape/Gather/Concat) of a module."""
    c = Counter(type(op) for op in module.walk() if type(op) in GRAPH_OPS)
    constants = c.pop(g.ConstantOp, 0)
    return sum(c.values()), constants, sum(c[t] for t in SHAPE_OPS)


def load(name: str):
    if name == "transformer":
        from geir.testing.transformer import transformer_onnx

        return transformer_onnx(1)
    return light_model(name)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fast-math", action="store_true")
    p.add_argument("--models", default=",".join((*LIGHT_MODELS, "transformer")))
    args = p.parse_args()
    header = f"{'model':<22} {'ops':>5} {'->':>2} {'ops':<5} {'ratio':>6} {'consts':>6} {'->':>2} {'consts':<6}"
    header += f" {'shape/gather/concat':>19} {'rounds':>6} {'time s':>7}"
    print(header)
    print("-" * len(header))
    for name in args.models.split(","):
        module = import_model(load(name))
        ops0, consts0, sgc0 = counts(module)
        t = time.perf_counter()
        rounds = simplify(module, fast_math=args.fast_math)
        dt = time.perf_counter() - t
        module.verify()
        ops1, consts1, sgc1 = counts(module)
        print(
            f"{name:<22} {ops0:>5} {'->':>2} {ops1:<5} {ops1 / ops0:>6.2f} {consts0:>6} {'->':>2} {consts1:<6}"
            f" {f'{sgc0} -> {sgc1}':>19} {rounds:>6} {dt:>7.2f}"
        )


if __name__ == "__main__":
    main()
