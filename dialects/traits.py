"""Op families of the graph dialect, as traits on the op classes.

A pass or template asks `op.has_trait(ViewLike)`, never a list of op names: a new op joins a
family by declaring the trait (MLIR's ViewLikeOpInterface, ElementwiseMappable). What a
kernel template takes is not a family but a fact about the target: target/op_info.py.

| trait | meaning | ops |
|---|---|---|
| ViewLike | the result is the operand's bytes seen with another shape | reshape, flatten, squeeze, unsqueeze, identity, dropout |
| Elementwise | result[i] depends only on the operands at i (numpy broadcasting, or per channel for batch_norm) | unary, binary and variadic arithmetic, compare, logic, where, clip, cast, pow, prelu, batch_norm, expand |
| Contraction | a sum of products over a reduced axis: the cube unit's work | conv, conv_transpose, matmul, gemm |
| Reduction | reduces `reduced_axes(op)` (kept as 1 or dropped) | reduce_*, arg_max, arg_min, global pools, instance_norm |
| RowSoftmax | a row reduction mapped back over the row: exp(x - max) / sum | softmax, log_softmax |
| Normalization | normalises each row over its trailing axes with statistics of the row | layer_norm, rms_norm |
| RowMixing | each result element combines elements of its own row (the last axis), nothing is reduced | rotary_embedding |
| DataMovement | moves or selects elements, computes nothing (a scatter's reduction combines them) | transpose, slice, gather, gather_elements, pad, tile, concat, split, depth_to_space, space_to_depth, kv_cache_write, scatter_elements, scatter_nd, gather_nd, reverse_sequence, tensor_scatter |
| ShapeComputation | the result depends only on the operands' shapes | shape, size |
| ValueGenerator | the result is generated from small operands (a fill, a range) | constant_of_shape, range |
| Collective | exchanges data with other device ranks: not pure (never folded, merged or erased) | all_reduce, all_gather, reduce_scatter, all_to_all, send, recv |
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation
from xdsl.traits import OpTrait


@dataclass(frozen=True)
class ViewLike(OpTrait):
    """The result holds the operand's bytes in the same order, seen with another shape."""


@dataclass(frozen=True)
class Elementwise(OpTrait):
    """Each result element depends only on the operand elements at the same index (after
    broadcasting the operands to the result's shape)."""


@dataclass(frozen=True)
class Contraction(OpTrait):
    """Sums products over a reduced axis (matrix products, convolutions)."""


@dataclass(frozen=True)
class Reduction(OpTrait):
    """Reduces some axes of its first operand (`reduced_axes`), keeping them as 1 or not."""


@dataclass(frozen=True)
class RowSoftmax(OpTrait):
    """Softmax over one axis: a row reduction whose result is mapped back over the row."""


@dataclass(frozen=True)
class Normalization(OpTrait):
    """Normalises rows (the trailing axes from `axis`) with statistics of each row."""


@dataclass(frozen=True)
class RowMixing(OpTrait):
    """Each result element combines elements of its own row (the last axis) with parameters
    broadcast to the operand (a rotation of the row's halves): a kernel holds whole rows, as
    for a normalisation, but nothing is reduced."""


ROW_TRAITS = (Reduction, RowSoftmax, Normalization, RowMixing)
"""Families whose ops need whole rows: each op says which axes (`reduced_axes`)."""


def reduced_axes(op: Operation) -> tuple[int, ...]:
    """The axes of the first operand an op of a ROW_TRAITS family reduces (or, RowMixing,
    mixes), normalised and sorted (the whole row a kernel must hold)."""
    return op.reduced_axes()  # type: ignore[attr-defined]


@dataclass(frozen=True)
class DataMovement(OpTrait):
    """Moves, repeats or selects elements; computes no new values."""


@dataclass(frozen=True)
class ShapeComputation(OpTrait):
    """The result depends only on the operands' shapes, never on their values."""


@dataclass(frozen=True)
class ValueGenerator(OpTrait):
    """The result is generated from small operands (a fill value, a range's bounds)."""


@dataclass(frozen=True)
class Collective(OpTrait):
    """Exchanges data with the other ranks of a multi-device program: the result depends on
    what they hold, so the op is not pure and runs only with its ranks."""
