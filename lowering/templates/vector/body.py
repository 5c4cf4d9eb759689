"""The row template's tile body: the vector ops of one tile (or of the prologue) on ub buffers
drawn from a pool that reuses them by shape as soon as a value is dead."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.ir import Attribute, Operation, SSAValue

from geir.dialects import ascend as a
from geir.lowering.templates.common import KernelBuilder, compute_type
from geir.lowering.templates.data import ub_shape, ub_view
from geir.lowering.templates.vector.rules import emit_op

if TYPE_CHECKING:
    from geir.lowering.templates.vector.row import RowKernel


@dataclass
class BufferPool:
    """ub buffers of one slot, reused by shape once their value is dead."""

    kb: KernelBuilder
    tag: str
    free: dict[tuple, list[SSAValue]] = field(default_factory=dict)
    count: int = 0

    made: list[tuple[tuple[int, ...], Attribute]] = field(default_factory=list)
    main: list[int] | None = None   # tile extents the buffers are sized for
    ext: list[int] | None = None    # tile extents of the tiles being emitted (a tail's are smaller)

    def get(self, shape: Sequence[int], elt: Attribute) -> SSAValue:
        """A buffer that holds `shape` (a tile of the current extents): sized for the main
        tiles, so the tail tiles reuse the main tiles' buffers through subviews."""
        if self.main is not None and self.ext is not None:
            shape = [m if x == e else x for x, e, m in zip(shape, self.ext, self.main)]
        key = (tuple(ub_shape(shape, elt)), elt)
        bufs = self.free.get(key)
        if bufs:
            return bufs.pop()
        self.count += 1
        self.made.append((tuple(shape), elt))
        return self.kb.alloc(list(key[0]), elt, "ub", f"{self.tag}{self.count}")

    def put(self, buf: SSAValue) -> None:
        t = buf.type
        self.free.setdefault((tuple(t.get_shape()), t.element_type), []).append(buf)


class Body:
    """The vector ops of one tile (or of the prologue) on the buffers of one pool; the op
    rules (rules.py) emit through it.

    A value lives in ub in its compute type (`elt`): a bf16 one in f32. It is copied in as it
    is stored, into a staging buffer that `compute` converts first (`staged`), and converted
    back into one that the store copies out (`stage_outputs`)."""

    def __init__(self, row: RowKernel, kb: KernelBuilder, pool: BufferPool, ext: Sequence[int],
                 values: dict[SSAValue, SSAValue]):
        self.row, self.kb, self.pool, self.ext = row, kb, pool, list(ext)
        self.values = values           # graph value -> ub view (this tile)
        self.owned: dict[SSAValue, SSAValue] = {}  # graph value -> ub buffer it owns
        self.scratch: list[SSAValue] = []          # temporaries of the op rule being emitted
        self.temps: dict[SSAValue, SSAValue] = {}  # a temporary's view -> its buffer
        self.dying: set[SSAValue] = set()          # operands whose last use is that op
        self.staged: list[tuple[SSAValue, SSAValue, SSAValue]] = []  # (staging buffer, its view, value view)
        self.out_views: dict[SSAValue, SSAValue] = {}  # output -> the view its store copies
        self.out_bufs: list[SSAValue] = []              # the staging buffers of those

    # -- buffers --------------------------------------------------------------------------------

    def te(self, v: SSAValue) -> list[int]:
        """v's extents in this tile."""
        return self.row.tile_ext(v, self.ext)

    @staticmethod
    def elt(v: SSAValue) -> Attribute:
        """The element type v is computed in (common.compute_type)."""
        return compute_type(v.type.element_type)

    def view(self, v: SSAValue) -> SSAValue:
        v = self.row.alias.get(v, v)
        view = self.values.get(v)
        if view is None and v in self.row.scalars:  # a constant operand no rule folded
            return self.dup(self.row.scalars[v], self.te(v), self.elt(v))
        return self.values[v]

    def _new(self, shape: Sequence[int], elt: Attribute) -> tuple[SSAValue, SSAValue]:
        buf = self.pool.get(shape, elt)
        return buf, ub_view(self.kb, buf, shape)

    def define(self, v: SSAValue, elt: Attribute | None = None) -> SSAValue:
        """A new buffer for value v (of its tile shape), in its compute type."""
        buf, view = self._new(self.te(v), elt or self.elt(v))
        self.owned[v] = buf
        self.values[v] = view
        return view

    def temp(self, shape: Sequence[int], elt: Attribute) -> SSAValue:
        """A temporary of the current op rule (back to the pool when the rule is done, or
        earlier with `drop`)."""
        buf, view = self._new(shape, elt)
        self.scratch.append(buf)
        self.temps[view] = buf
        return view

    def drop(self, view: SSAValue) -> None:
        """Give a temporary of the current rule back to the pool now: the rule's later
        temporaries reuse its bytes (the vector pipe runs in order). Not a temporary: kept."""
        buf = self.temps.pop(view, None)
        if buf is not None and buf in self.scratch:
            self.scratch.remove(buf)
            self.pool.put(buf)

    def release(self, v: SSAValue) -> None:
        buf = self.owned.pop(v, None)
        if buf is not None:
            self.pool.put(buf)

    def release_all(self) -> None:
        for v in list(self.owned):
            self.release(v)
        for buf in self.out_bufs:
            self.pool.put(buf)
        self.out_bufs, self.out_views = [], {}

    def load(self, v: SSAValue, gm: SSAValue, off: Sequence[int | SSAValue]) -> None:
        """MTE2: v's tile into its buffer, or into a staging buffer of its stored type that
        `compute` converts first."""
        te = self.te(v)
        view = self.define(v)
        o = [x if j in self.row.space.dims[v] else 0 for j, x in enumerate(off)]
        stored = v.type.element_type
        if stored != self.elt(v):
            buf, stage = self._new(te, stored)
            self.staged.append((buf, stage, view))
            view = stage
        self.kb.copy(self.kb.tile(gm, o, te), view)

    def stage_outputs(self, outputs: Sequence[SSAValue]) -> None:
        """V: convert each output computed in another type than it is stored in into a
        staging buffer (`out_views`), the one rounding of its value."""
        for v in dict.fromkeys(outputs):
            stored = v.type.element_type
            if stored == self.elt(v):
                continue
            buf, view = self._new(self.te(v), stored)
            self.kb.vec(a.VcastOp, self.view(v), view)
            self.out_bufs.append(buf)
            self.out_views[v] = view

    def out_view(self, v: SSAValue) -> SSAValue:
        """What the store of output v copies out."""
        return self.out_views.get(v) or self.view(v)

    # -- compute -------------------------------------------------------------------------------

    def compute(self, ops: list[Operation], keep: set[SSAValue]) -> None:
        """Emit `ops` (after converting the staged loads); a value's buffer is reused after
        its last use unless it is in `keep`."""
        for buf, stage, view in self.staged:
            self.kb.vec(a.VcastOp, stage, view)
            self.pool.put(buf)
        self.staged = []
        alias = self.row.alias
        root = lambda v: alias.get(v, v)  # noqa: E731
        last: dict[SSAValue, int] = {}
        for i, op in enumerate(ops):
            for v in op.operands:
                last[root(v)] = i
        keep_roots = {root(v) for v in keep}
        for i, op in enumerate(ops):
            if op.results[0] in alias:
                continue
            self.dying = {v for v in (root(x) for x in op.operands)
                          if last.get(v) == i and v not in keep_roots and v in self.owned}
            self.scratch, self.temps = [], {}
            emit_op(self, op)
            for buf in self.scratch:
                self.pool.put(buf)
            for v in dict.fromkeys(root(x) for x in op.operands):  # operand order: reproducible
                if v in self.dying:
                    self.release(v)
            r = op.results[0]
            if r not in last and r not in keep_roots:
                self.release(r)  # dead on arrival
        self.dying, self.scratch, self.temps = set(), [], {}

    # -- helpers for the op rules -------------------------------------------------------------

    def operand(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        """v's tile as a buffer of `shape` (broadcast with vbrcb if v is smaller)."""
        view = self.view(v)
        if list(view.type.get_shape()) == list(shape):
            return view
        tmp = self.temp(shape, view.type.element_type)
        self.kb.vec(a.VbrcbOp, view, tmp)
        return tmp

    def operand_or_dup(self, v: SSAValue, shape: Sequence[int], elt: Attribute) -> SSAValue:
        """v's tile as a buffer of `shape`; a constant scalar operand vdup'ed as `elt`."""
        if v in self.row.scalars:
            return self.dup(self.row.scalars[v], shape, elt)
        return self.operand(v, shape)

    def result(self, op: Operation, inplace: Sequence[SSAValue] = ()) -> SSAValue:
        """The destination of op: the buffer of a dying operand in `inplace` with the same tile
        (the rule reads it only elementwise-aligned with its writes), else a new buffer."""
        r = op.results[0]
        alias = self.row.alias
        te = self.te(r)
        elt = self.elt(r)
        for v in (alias.get(x, x) for x in inplace):
            buf = self.owned.get(v)
            if v in self.dying and buf is not None and buf.type.element_type == elt \
                    and list(self.values[v].type.get_shape()) == te:
                del self.owned[v]
                self.dying.discard(v)
                self.owned[r] = buf
                self.values[r] = self.values[v]
                return self.values[r]
        return self.define(r)

    def scalar(self, value: float | int, elt: Attribute) -> SSAValue:
        return self.kb.scalar(value, elt)

    def dup(self, value: float | int, shape: Sequence[int], elt: Attribute) -> SSAValue:
        tmp = self.temp(shape, elt)
        self.kb.vec(a.VdupOp, self.scalar(value, elt), tmp)
        return tmp

    def brcb(self, t: SSAValue, shape: Sequence[int]) -> SSAValue:
        """t (a statistic of the row) broadcast to `shape` in a temporary, unless it has it."""
        if list(t.type.get_shape()) == list(shape):
            return t
        b = self.temp(shape, t.type.element_type)
        self.kb.vec(a.VbrcbOp, t, b)
        return b
