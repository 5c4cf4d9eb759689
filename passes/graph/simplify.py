"""graph-simplify: GE's graph optimisations before fusion, to a fixed point.

One round runs graph-fold-shapes (which is the constant folder with static
shapes as a source), graph-canonicalize, graph-fold-batchnorm,
graph-fold-transpose, graph-fold-qdq (int8 contractions from quantized models),
then xDSL's cse and dce. Rounds repeat while the module
changes: a pass reports a change when it rewrote something, cse and dce when
they removed ops. One rule can enable another (a folded reshape target lets
reshapes compose, a folded BatchNorm lets a per-channel mul reach a conv), so
a second round is common; `max-rounds` (default 8) caps them, and a module
still changing after that is returned as it is, valid, just not at a fixed
point.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import cse
from xdsl.transforms.dead_code_elimination import dce

from geir.passes.graph.canonicalize import canonicalize
from geir.passes.graph.fold_batchnorm import fold_batchnorm
from geir.passes.graph.fold_constants import DEFAULT_MAX_BYTES
from geir.passes.graph.fold_qdq import fold_qdq
from geir.passes.graph.fold_shapes import fold_shapes
from geir.passes.graph.fold_transpose import fold_transpose


def _count(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk())


def simplify(
    module: ModuleOp, fast_math: bool = False, max_bytes: int = DEFAULT_MAX_BYTES, max_rounds: int = 8
) -> int:
    """Run rounds until nothing changes; returns the number of rounds that changed the module."""
    for round_ in range(max_rounds):
        changed = fold_shapes(module, max_bytes)
        changed |= canonicalize(module, fast_math)
        changed |= fold_batchnorm(module)
        changed |= fold_transpose(module)
        changed |= fold_qdq(module)
        before = _count(module)
        cse(module)
        dce(module)
        if not changed and _count(module) == before:
            return round_
    return max_rounds


@dataclass(frozen=True)
class SimplifyPass(ModulePass):
    """fold-shapes/constants, canonicalize, fold-batchnorm, fold-transpose, fold-qdq, cse, dce to a fixed point."""

    name = "graph-simplify"

    fast_math: bool = False
    """Forwarded to graph-canonicalize: also the rules that change NaN / Inf results."""

    max_bytes: int = DEFAULT_MAX_BYTES
    """Forwarded to the constant folder: largest folded result in bytes."""

    max_rounds: int = 8
    """At most this many rounds of the whole pipeline."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        simplify(op, self.fast_math, self.max_bytes, self.max_rounds)
