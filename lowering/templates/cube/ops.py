"""The request's graph ops as the cube template reads them: logical shapes, storage
formats, and which ops are free views of their operand (the bytes keep their order)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from geir.dialects import formats as L
from geir.dialects import graph as g
from geir.dialects.traits import ViewLike


class Unsupported(Exception):
    """The request is not (yet) a cube kernel this template builds: try_build returns None."""


def logical_shape(v: SSAValue) -> tuple[int, ...]:
    """The logical shape (a formatted tensor's origin shape): what the op computes on."""
    t = v.type
    return tuple(L.logical_shape(t)) if L.is_formatted(t) else tuple(t.get_shape())


def storage(v: SSAValue) -> str:
    return L.storage_of(v.type)


def one_use(v: SSAValue) -> bool:
    return sum(1 for _ in v.uses) == 1


def strip_leading_ones(shape: Sequence[int]) -> tuple[int, ...]:
    s = list(shape)
    while s and s[0] == 1:
        s.pop(0)
    return tuple(s)


def perm_of(op: g.TransposeOp) -> tuple[int, ...]:
    return op.permutation()


def is_view(op: Operation) -> bool:
    """A view-like op, except a dropout whose ratio is not known (it may drop); and a
    transpose that moves only size-1 dims (the bytes keep their order)."""
    if op.has_trait(ViewLike):
        return (not isinstance(op, g.DropoutOp) or len(op.operands) == 1
                or g.constant_value_of(op.operands[-1]) is not None)
    if isinstance(op, g.TransposeOp):
        x = logical_shape(op.operands[0])
        moved = [p for p in perm_of(op) if x[p] != 1]
        return moved == sorted(moved)
    return False


def swaps_last_two(op: Operation) -> bool:
    """A transpose of the last two dims only: the cube reads such an operand transposed."""
    return isinstance(op, g.TransposeOp) and op.swaps_last_two()
