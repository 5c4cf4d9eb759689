"""The row template's canonical space: every value of a request placed in one iteration space
(step 1 of the row template, see the package docstring).

S is the shape of the request's largest value; each non-unit dim of a value is one dim of S
(numpy broadcasting aligns them; views and reductions keep the order), so a value is S with
some dims collapsed to 1. Adjacent dims of S that every value and reduction treats alike are
then merged (`canonical_space`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from geir.dialects import formats
from geir.dialects import graph as g
from geir.dialects.traits import ROW_TRAITS, Normalization, Reduction, RowMixing, ViewLike, reduced_axes
from geir.lowering.templates.common import KernelRequest, shape_of


class Reject(Exception):
    """The request does not fit the template (the caller returns None)."""


GLOBAL_POOLS = (g.GlobalAvgPoolOp, g.GlobalMaxPoolOp)
PER_CHANNEL = (g.BatchNormOp, g.InstanceNormOp)
"""Ops whose parameters are [C] vectors along dim 1 of x."""


def scalar_const(v: SSAValue) -> float | int | None:
    """v's value when it is a one-element constant."""
    arr = g.constant_value_of(v)
    if arr is None or arr.size != 1:
        return None
    return arr.reshape(-1)[0].item()


def data_operands(op: Operation) -> tuple[SSAValue, ...]:
    """The operands whose elements the kernel reads (not shapes, exponents, axes...)."""
    if op.has_trait(ViewLike) or isinstance(op, g.ExpandOp) or (
            isinstance(op, g.PowOp) and scalar_const(op.operands[1]) is not None):
        return tuple(op.operands[:1])
    return tuple(op.operands)


def is_blocked(v: SSAValue) -> bool:
    """v is stored NC1HWC0 (of an NCHW origin): channels split into C1 blocks of C0 lanes."""
    t = v.type
    return formats.storage_of(t) == formats.NC1HWC0 and formats.origin_of(t) == formats.NCHW


def row_axes(op: Operation) -> tuple[int, ...]:
    """The axes of op's first operand that a row op reduces (its trait's), in storage: a
    global pool on NC1HWC0 [N, C1, H, W, C0] reduces H and W and keeps the C0 lanes.
    (check_formats lets no other formatted operand of a row op through, so for the others
    the logical axes are the storage axes.)"""
    if isinstance(op, GLOBAL_POOLS) and is_blocked(op.operands[0]):
        return (2, 3)
    return reduced_axes(op)


def check_formats(op: Operation) -> None:
    """Reject formatted operands the row template would misread: it works on storage arrays,
    which is right for elementwise ops (their operands share one format) and for global pools
    on NC1HWC0 (H, W reduced, the lanes kept); a per-channel parameter [C] of a batch_norm
    does not line up with [C1, C0] lanes."""
    kind = getattr(op, "LAYOUT", "nd")  # the dialect's format-rule kind
    formatted = [v for v in (*op.operands, *op.results) if formats.is_formatted(v.type)]
    if not formatted or kind == "elementwise":
        return
    if isinstance(op, GLOBAL_POOLS) and all(map(is_blocked, formatted)):
        return
    raise Reject


@dataclass
class Space:
    """Values placed in the canonical shape `shape`: `dims[v]` is the set of canonical dims v
    spans (the others are 1 for it), `reduced[op]` the dims op reduces."""

    shape: tuple[int, ...]
    dims: dict[SSAValue, frozenset[int]]
    reduced: dict[Operation, frozenset[int]]

    def ext(self, v: SSAValue) -> list[int]:
        d = self.dims[v]
        return [x if i in d else 1 for i, x in enumerate(self.shape)]


def canonical_space(req: KernelRequest) -> Space:
    """The request's values placed in one space, its alike dims merged (Reject if a value
    cannot be placed)."""
    return _collapse(_Placer(req).place())


class _Placer:
    """Places every value of the request in the canonical space (Reject if one cannot be):
    `pos[v][j]` is the dim of S that dim j of v lies on (None for a unit dim)."""

    def __init__(self, req: KernelRequest):
        self.req = req
        values = [*req.inputs, *(r for op in req.ops for r in op.results)]
        big = max(values, key=lambda v: (math.prod(shape_of(v)), len(shape_of(v))))
        self.shape = shape_of(big)
        self.n = len(self.shape)
        self.pos: dict[SSAValue, tuple[int | None, ...]] = {}
        self.reduced: dict[Operation, frozenset[int]] = {}

    # -- positions ------------------------------------------------------------------------------

    def _check(self, v: SSAValue, pos: Sequence[int | None]) -> tuple[int | None, ...]:
        shape = shape_of(v)
        last = -1
        for extent, p in zip(shape, pos):
            if p is None:
                if extent != 1:
                    raise Reject
                continue
            if p <= last or self.shape[p] != extent:
                raise Reject
            last = p
        return tuple(pos)

    def _default(self, shape: Sequence[int]) -> list[int | None]:
        r = len(shape)
        if r > self.n:
            if any(x != 1 for x in shape[: r - self.n]):
                raise Reject
            return [None] * (r - self.n) + self._default(shape[r - self.n:])
        return [None if x == 1 else self.n - r + j for j, x in enumerate(shape)]

    def assign(self, v: SSAValue, pos: Sequence[int | None]) -> None:
        if v in self.pos:
            if tuple(p for p, x in zip(self.pos[v], shape_of(v)) if x != 1) != tuple(
                    p for p, x in zip(pos, shape_of(v)) if x != 1):
                raise Reject
            return
        self.pos[v] = self._check(v, pos)

    def get(self, v: SSAValue) -> tuple[int | None, ...]:
        if v not in self.pos:
            self.assign(v, self._default(shape_of(v)))
        return self.pos[v]

    def broadcast(self, result: SSAValue, operands: Sequence[SSAValue]) -> None:
        """numpy broadcasting: operands right-aligned with the result."""
        out = shape_of(result)
        r = len(out)
        pos: list[int | None] = [None] * r
        for v in operands:
            if v not in self.pos:
                continue
            s = shape_of(v)
            for jj, (x, p) in enumerate(zip(s, self.pos[v])):
                j = jj + r - len(s)
                if x != 1:
                    if pos[j] is None:
                        pos[j] = p
                    elif pos[j] != p:
                        raise Reject
        default = self._default(out)
        pos = [p if p is not None else default[j] for j, p in enumerate(pos)]
        self.assign(result, pos)
        for v in operands:
            if v not in self.pos:
                s = shape_of(v)
                self.assign(v, [None if x == 1 else pos[jj + r - len(s)] for jj, x in enumerate(s)])

    # -- ops ------------------------------------------------------------------------------------

    def place(self) -> Space:
        for op in self.req.ops:
            self._place_op(op)
        used = {v for op in self.req.ops for v in data_operands(op)}
        for v in (*self.req.inputs, *self.req.outputs):
            if v in used or v in self.req.outputs:
                self.get(v)
        dims = {v: frozenset(p for p in pos if p is not None) for v, pos in self.pos.items()}
        return Space(tuple(self.shape), dims, self.reduced)

    def _place_op(self, op: Operation) -> None:
        if op.has_trait(ViewLike):  # before Elementwise: identity is both
            self._view(op)
        elif isinstance(op, PER_CHANNEL):
            self._per_channel(op)
        elif any(op.has_trait(t) for t in ROW_TRAITS):
            self._row(op)
        elif isinstance(op, (g.ExpandOp, g.PowOp)):  # the shape / a constant exponent: not placed
            self.broadcast(op.results[0], list(data_operands(op)))
        elif isinstance(op, g.ClipOp):  # each bound broadcast on its own
            self.broadcast(op.results[0], [op.operands[0]])
            for p in op.operands[1:]:
                self.broadcast(op.results[0], [p])
        else:
            ins = [v for v in op.operands if v in self.pos] or list(op.operands[:1])
            for v in ins:
                self.get(v)
            self.broadcast(op.results[0], list(op.operands))

    def _view(self, op: Operation) -> None:
        """The result's non-unit dims are the operand's, in order."""
        x, y = op.operands[0], op.results[0]
        src = [p for p, e in zip(self.get(x), shape_of(x)) if e != 1]
        it = iter(src)
        self.assign(y, [None if e == 1 else next(it, None) for e in shape_of(y)])

    def _per_channel(self, op: Operation) -> None:
        x = op.operands[0]
        self.broadcast(op.results[0], [x])
        c = self.pos[x][1] if len(shape_of(x)) > 1 else None
        for p in op.operands[1:]:
            self.assign(p, [c if e != 1 else None for e in shape_of(p)])
        if op.has_trait(Reduction):  # instance_norm: statistics over the spatial dims
            self.reduced[op] = frozenset(p for i in row_axes(op) if (p := self.pos[x][i]) is not None)

    def _row(self, op: Operation) -> None:
        """Reductions keep their axes as 1 (or drop them: keepdims=0); softmax and layer_norm
        map the row back over x's dims."""
        x = op.operands[0]
        px = self.get(x)
        axes = row_axes(op)
        self.reduced[op] = frozenset(px[i] for i in axes if px[i] is not None)
        if op.has_trait(Reduction) and axes and not op.attrs().get("keepdims", 1):
            self.assign(op.results[0], [p for i, p in enumerate(px) if i not in axes])
        elif op.has_trait(Reduction):
            self.assign(op.results[0], [None if i in axes else p for i, p in enumerate(px)])
        else:
            self.assign(op.results[0], px)
        if op.has_trait(Normalization) or op.has_trait(RowMixing):  # parameters broadcast to x
            r = len(px)
            for p in op.operands[1:]:
                s = shape_of(p)
                self.assign(p, [None if e == 1 else px[j + r - len(s)] for j, e in enumerate(s)])


def _collapse(space: Space) -> Space:
    """Merge adjacent canonical dims every value and reduction treats alike; drop unit dims."""
    values = list(space.dims)
    reds = list(space.reduced.items())
    keep = [i for i, x in enumerate(space.shape) if x != 1]

    def sig(i: int) -> tuple:
        return (tuple(i in space.dims[v] for v in values), tuple(i in r for _, r in reds))

    groups: list[list[int]] = []
    for i in keep:
        if groups and sig(groups[-1][-1]) == sig(i):
            groups[-1].append(i)
        else:
            groups.append([i])
    if not groups:
        return Space((1,), {v: frozenset() for v in values}, {op: frozenset() for op, _ in reds})
    new_of = {i: k for k, grp in enumerate(groups) for i in grp}
    shape = tuple(math.prod(space.shape[i] for i in grp) for grp in groups)
    dims = {v: frozenset(new_of[i] for i in d if i in new_of) for v, d in space.dims.items()}
    reduced = {op: frozenset(new_of[i] for i in r if i in new_of) for op, r in reds}
    return Space(shape, dims, reduced)
