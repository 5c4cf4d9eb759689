"""graph-fold-shapes: make shape computations static.

Exporters (TorchScript above all) compute reshape targets at run time:
Shape -> Gather/Slice -> Unsqueeze -> Concat -> Reshape, with Cast, Range and
arithmetic mixed in. With static tensor types graph.shape and graph.size are
known at compile time; this pass gives them as constant values to the constant
folder (graph-fold-constants' machinery, same walk and `max-bytes` limit),
which then folds the whole chain, so the reshape targets become constants.
It therefore folds everything graph-fold-constants folds, plus the shapes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from geir.dialects import graph as g
from geir.passes.graph.fold_constants import DEFAULT_MAX_BYTES, fold_constants
from geir.passes.graph.utils import static_shape


def shape_source(op: Operation) -> tuple[np.ndarray, ...] | None:
    """The value of graph.shape / graph.size of a tensor with a static type."""
    if isinstance(op, g.ShapeOp | g.SizeOp):
        shape = static_shape(op.inputs[0].type)
        if shape is None:
            return None
        if isinstance(op, g.SizeOp):
            return (np.array(math.prod(shape), dtype=np.int64),)
        attrs = op.attrs()
        return (np.array(shape[attrs["start"] : attrs["end"]], dtype=np.int64),)
    return None


def fold_shapes(module: ModuleOp, max_bytes: int = DEFAULT_MAX_BYTES) -> bool:
    return fold_constants(module, max_bytes, shape_source)


@dataclass(frozen=True)
class FoldShapesPass(ModulePass):
    """Shape/Size of static tensors become constants; the shape arithmetic on them folds."""

    name = "graph-fold-shapes"

    max_bytes: int = DEFAULT_MAX_BYTES
    """Largest folded result in bytes (as graph-fold-constants)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_shapes(op, self.max_bytes)
