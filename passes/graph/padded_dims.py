"""Which values of a graph function hold a dim of its inputs row by row, so that padding
that dim (zero rows appended) or leaving its last rows unwritten changes no real row.

`carry` follows the dim from the inputs through every op as one axis of each value, whose
first n * inner indices are the real rows (`Carried`), and stops at the first op that mixes
rows along it (a reduction, softmax or normalisation over it, a contraction over it, a
convolution or pool window across it, a slice, gather, concat or pad along it, a view that
interleaves it, an operand that is not constant along it) or that it has no rule for: that
op's `PaddingError` says why. An attention whose keys hold it is exact only if its kernel masks
the padded keys: a shape range's does (with the run-time size), so `carry` collects such
attentions when asked to (`masked`) and refuses them otherwise. Shapes are logical (a formatted value's axes, not its storage),
and a fusion is followed through its body, so the analysis holds before and after fusion
and layout. Two users: pad-to-gear and shape ranges (driver/gear_padding.py), and the
lowering, whose kernels then compute only the real rows of a shape range
(lowering/graph_to_ascend.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from geir.dialects import formats as L
from geir.dialects import graph as g
from geir.dialects.traits import Elementwise, Normalization, Reduction, RowMixing, RowSoftmax, ViewLike
from geir.errors import GeirError
from geir.ir.locations import loc_names


class PaddingError(GeirError):
    """Padding a dim would change the real rows' results: the op that mixes them."""


@dataclass(frozen=True)
class Carried:
    """A value's axis holding the padded dim: it splits as [outer, G, inner] (G the dim's
    size), index i belonging to row (i // inner) % G. A view may interleave the dim with
    others this way (nn.MultiheadAttention's [S * B] rows); rows stay rows."""

    axis: int
    inner: int = 1
    outer: int = 1

    def crop(self, value, size: int):
        """value with only the first `size` rows of the dim along the axis."""
        import numpy as np

        shape = value.shape
        g_ = shape[self.axis] // (self.outer * self.inner)
        split = value.reshape(shape[:self.axis] + (self.outer, g_, self.inner) + shape[self.axis + 1:])
        kept = np.take(split, np.arange(size), axis=self.axis + 1)
        return kept.reshape(shape[:self.axis] + (self.outer * size * self.inner,) + shape[self.axis + 1:])


def _name(op: Operation) -> str:
    names = loc_names(op.location)
    return f"'{op.name}'" + (f" at {names[0]}" if names else "")


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(L.logical_shape(v.type))  # a formatted value's NC1HWC0 / NZ storage is not its axes


def _constant(v: SSAValue) -> bool:
    return g.constant_value_of(v) is not None


def _through(op: Operation, where: dict[SSAValue, Carried], masked: list | None) -> list[Carried | None]:
    """Where op's results carry the dim, given its carried operands."""
    ins = [where.get(v) for v in op.operands]
    c = next(x for x in ins if x is not None)
    if isinstance(op, g.FusionOp):
        return _fusion(op, where, masked)
    if isinstance(op, g.TransDataOp):  # the logical tensor is unchanged
        return [c]
    if op.has_trait(ViewLike):
        return [_view(_shape(op.operands[0]), _shape(op.results[0]), c)]
    if isinstance(op, g.ExpandOp):  # the carried axis has its size already: it is not broadcast
        return [Carried(c.axis + len(_shape(op.results[0])) - len(_shape(op.operands[0])), c.inner, c.outer)]
    if isinstance(op, g.BatchNormOp):  # per-channel parameters: the batch and spatial rows carry
        if ins[0] is None or c.axis == 1 or any(x is not None for x in ins[1:]):
            raise PaddingError("normalises per channel along it")
        return [c]
    if isinstance(op, g.TransposeOp):
        return [Carried(list(op.attrs()["perm"]).index(c.axis), c.inner, c.outer)]
    if op.has_trait(Elementwise):
        return [_elementwise(op, ins)]
    if isinstance(op, g.MatMulOp | g.GemmOp):
        return [_matmul(op, ins)]
    if isinstance(op, g.AttentionOp) and not (c.axis == 0 and all(x is not None for x in ins[:3])):
        return [_attention_sequence(op, ins, masked)]
    if isinstance(op, g.ConvOp | g.ConvTransposeOp | g.MaxPoolOp | g.AvgPoolOp | g.AttentionOp):
        # the batch rows are independent (an attention's: of q, k and v alike)
        if ins[0] is None or any(x is not None and x != ins[0] for x in ins) or c.axis != 0 or any(
                x is None and i < (3 if isinstance(op, g.AttentionOp) else 1) for i, x in enumerate(ins)):
            raise PaddingError("mixes rows along it (only the batch of every data operand may be padded)")
        if isinstance(op, g.AttentionOp) and len(ins) > 3 and ins[3] is None and _shape(op.operands[3])[0] != 1:
            raise PaddingError("takes a mask that is not broadcast along it")
        return [c]
    if op.has_trait(Reduction) or op.has_trait(RowSoftmax) or op.has_trait(Normalization) or op.has_trait(RowMixing):
        return [_row_op(op, ins)]
    if isinstance(op, g.ConcatOp | g.SplitOp):
        axis = op.attrs()["axis"] % len(_shape(op.operands[0]))
        if axis == c.axis or any(x != c for x, v in zip(ins, op.operands) if not _constant(v)):
            raise PaddingError("joins or splits along it")
        if isinstance(op, g.ConcatOp) and any(x is None for x in ins):
            raise PaddingError("joins a tensor that does not hold it")
        return [c] * len(op.results)
    if isinstance(op, g.SliceOp | g.PadOp | g.GatherOp):
        return [_select(op, ins, c)]
    raise PaddingError("has no padding rule")


def _attention_sequence(op: g.AttentionOp, ins: list[Carried | None], masked: list | None) -> Carried | None:
    """The dim as q's query rows and / or k's and v's keys (axis 2 of [B, H, S, D], whole):
    a query row is computed alone, but every real query attends to every key, so padded keys
    are exact only when the kernel masks them (`masked` collects the attentions that must,
    each with whether its query rows hold the dim too; None: nothing may, as in pad-to-gear's
    programs, which have no run-time size)."""
    q, k, v = ins[:3]
    seq = Carried(2)
    if len(ins) > 3 and ins[3] is not None:
        raise PaddingError("takes a mask that holds it")
    if any(x is not None and x != seq for x in (q, k, v)) or (k is None) != (v is None):
        raise PaddingError("mixes rows along it (a sequence is taken whole as q's rows and k's and v's keys)")
    if k is not None:
        if masked is None:
            raise PaddingError("attends across it (a padded key would join the real queries' softmax)")
        if len(ins) > 3:
            raise PaddingError("attends across it with a mask (the padded keys' mask entries are not known)")
        masked.append((op, q is not None))
    return q


def _view(src: tuple[int, ...], dst: tuple[int, ...], c: Carried) -> Carried:
    """The axis of `dst` the dim lies in whole. In row-major order the dim is a digit of place
    value P = inner * (elements after src's axis) and range G; it lies in dst's axis k when
    k's stride (the elements after it) divides P and k's extent holds G * P."""
    g_ = src[c.axis] // (c.outer * c.inner)
    place = c.inner * math.prod(src[c.axis + 1:])
    for k in range(len(dst)):
        stride = math.prod(dst[k + 1:])
        if place % stride == 0 and (stride * dst[k]) % (g_ * place) == 0:
            return Carried(k, place // stride, stride * dst[k] // (g_ * place))
    raise PaddingError(f"reshapes {list(src)} to {list(dst)}, splitting it across dims")


def _aligned(v: SSAValue, rank: int, axis: int) -> int | None:
    """The axis of v (right-aligned broadcasting to `rank`) under the result's `axis`."""
    k = axis - (rank - len(_shape(v)))
    return k if k >= 0 else None


def _elementwise(op: Operation, ins: list[Carried | None]) -> Carried:
    rank = len(_shape(op.results[0]))
    out = None
    for v, x in zip(op.operands, ins):
        if x is not None:
            at = Carried(x.axis + rank - len(_shape(v)), x.inner, x.outer)
            if out is not None and at != out:
                raise PaddingError("combines it with itself along other axes")
            out = at
    for v, x in zip(op.operands, ins):
        k = _aligned(v, rank, out.axis)
        if x is None and k is not None and _shape(v)[k] != 1:
            raise PaddingError("combines it with a tensor that varies along it but does not hold it")
    return out


def _matmul(op: Operation, ins: list[Carried | None]) -> Carried:
    """a [.., M, K] x b [.., K, N] (+ c): the batch, a's M and b's N carry; K mixes. An
    operand that does not hold the dim must not vary along the result's axis."""
    a, b = op.operands[:2]
    ra, rb, rank = len(_shape(a)), len(_shape(b)), len(_shape(op.results[0]))
    gemm = isinstance(op, g.GemmOp)
    m_a = ra - 1 if gemm and op.attrs()["trans_a"] else ra - 2
    n_b = rb - 2 if gemm and op.attrs()["trans_b"] else rb - 1
    out = []
    for v, x, rows, cols in ((a, ins[0], m_a, None), (b, ins[1], None, n_b)):
        if x is None:
            continue
        if x.axis == rows:
            out.append(Carried(rank - 2, x.inner, x.outer))
        elif x.axis == cols:
            out.append(Carried(rank - 1, x.inner, x.outer))
        elif x.axis < len(_shape(v)) - 2:
            out.append(Carried(x.axis + rank - len(_shape(v)), x.inner, x.outer))
        else:
            raise PaddingError("contracts over it")
    if len(op.operands) > 2 and ins[2] is not None:
        out.append(Carried(ins[2].axis + rank - len(_shape(op.operands[2])), ins[2].inner, ins[2].outer))
    if any(x != out[0] for x in out):
        raise PaddingError("meets it along two axes (its rows would meet padded columns)")
    axis = out[0].axis
    for i, (v, x) in enumerate(zip(op.operands, ins)):
        if x is not None:
            continue
        if i < 2 and axis >= rank - 2:
            continue  # a's rows do not depend on b's batch-free columns, nor b's columns on a's rows
        k = _aligned(v, rank, axis)
        if k is not None and _shape(v)[k] != 1:
            raise PaddingError("combines it with a tensor that varies along it but does not hold it")
    return out[0]


def _row_op(op: Operation, ins: list[Carried | None]) -> Carried:
    x = _shape(op.operands[0])
    axes = set(op.reduced_axes())  # every row-trait op says which axes its rows span
    c = ins[0]
    if c is None or c.axis in axes or any(i is not None for i in ins[1:]):
        raise PaddingError("reduces or normalises over it")
    out = _shape(op.results[0])
    if len(out) == len(x):
        return c
    return Carried(c.axis - sum(1 for a in axes if a < c.axis), c.inner, c.outer)  # reduced axes dropped


def _select(op: Operation, ins: list[Carried | None], c: Carried) -> Carried:
    """A slice, pad or gather that leaves the axis whole; or a lookup - a gather of a table
    that does not hold the dim, at indices that do - whose indices are the caller's (padded
    with zeros, so a padded row looks up row 0: an embedding's token ids)."""
    if isinstance(op, g.GatherOp) and ins[0] is None and ins[1] is not None:
        if not _an_input(op.operands[1]):
            raise PaddingError("selects with it (indices some op computed: a padded row's could be any value)")
        axis = op.attrs()["axis"] % len(_shape(op.operands[0]))
        return Carried(axis + ins[1].axis, ins[1].inner, ins[1].outer)
    if ins[0] is None or any(x is not None for x in ins[1:]):
        raise PaddingError("selects with it")
    rank = len(_shape(op.operands[0]))
    if isinstance(op, g.GatherOp):
        axis = op.attrs()["axis"] % rank
        if axis == c.axis:
            raise PaddingError("gathers along it")
        idx = len(_shape(op.operands[1]))
        return c if axis > c.axis else Carried(c.axis + idx - 1, c.inner, c.outer)
    src, dst = _shape(op.operands[0]), _shape(op.results[0])
    if src[c.axis] != dst[c.axis] or (isinstance(op, g.SliceOp) and not _slice_keeps(op, c.axis)):
        raise PaddingError("slices or pads along it")
    return c


def _an_input(v: SSAValue) -> bool:
    """`v` is an argument of the function (through fusion bodies): what the host pads."""
    while isinstance(v, BlockArgument):
        parent = v.owner.parent_op()
        if not isinstance(parent, g.FusionOp):
            return isinstance(parent, func.FuncOp)
        v = parent.inputs[v.index]
    return False


def _slice_keeps(op: g.SliceOp, axis: int) -> bool:
    """The slice takes the whole axis, in order."""
    rank = len(_shape(op.operands[0]))
    values = [g.constant_value_of(v) for v in op.operands[1:]]
    if any(v is None for v in values):
        return False
    starts, ends = values[0], values[1]
    axes = [int(a) % rank for a in (values[2] if len(values) > 2 else range(len(starts)))]
    steps = values[3] if len(values) > 3 else [1] * len(axes)
    return all(not (a == axis) or (int(s) == 0 and int(st) == 1 and int(e) >= _shape(op.operands[0])[axis])
               for a, s, e, st in zip(axes, starts, ends, steps))


def carry(block: Block, seeds: dict[SSAValue, Carried], masked: list | None = None) -> dict[SSAValue, Carried]:
    """Where each value of `block` (up to its terminator) holds the dim the `seeds` hold; a
    PaddingError naming the first op that mixes its rows. `masked`: a list to collect the
    attentions whose keys hold the dim, as (op, whether its query rows do too) - exact only if
    their kernel masks the padded keys, which a shape range's kernel does with the run-time
    size; None refuses them."""
    where = dict(seeds)
    for op in block.ops:
        if op is block.last_op:
            break
        if not any(v in where for v in op.operands):
            continue
        try:
            out = _through(op, where, masked)
        except PaddingError as e:
            if isinstance(op, g.FusionOp):  # the body's op is named already
                raise
            raise PaddingError(f"{_name(op)} {e}") from None
        for r, x in zip(op.results, out):
            if x is not None:
                where[r] = x
    return where


def _fusion(op: g.FusionOp, where: dict[SSAValue, Carried], masked: list | None) -> list[Carried | None]:
    block = op.body.block
    inner = carry(block, {arg: where[v] for arg, v in zip(block.args, op.inputs) if v in where}, masked)
    where.update(inner)  # the body's values too: a kernel's outputs are those a fusion yields
    return [inner.get(v) for v in op.yield_op().values]
