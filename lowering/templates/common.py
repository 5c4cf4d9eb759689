"""What every kernel builder shares: the request, a small IR builder, tiling helpers.

The lowering (lowering/graph_to_ascend.py) turns each top-level graph op or graph.fusion into
one `KernelRequest` and asks the kernel modules in turn (`cube`, `vector`, `data`, then the
reference fallback) for an `ascend.kernel`; each module exposes `try_build(req) -> KernelOp |
None` (None = "not mine"). The kernel's arguments are gm memrefs with the tensors' shapes:
inputs in order, then outputs.

`KernelBuilder` keeps the boilerplate of a kernel in one place: the arguments, index
constants, on-chip buffers laid out per space (offsets planned in order, capacity checked
against the device), tiles, copies, flags and loops, so that a template reads like the
kernel it emits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DenseArrayBase,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.ir.types import UnsupportedTypeError, is_float_dtype, to_dtype
from geir.errors import GeirError
from geir.target.cost_model import CostModel
from geir.target.device import DeviceSpec


class LoweringError(GeirError):
    """The graph cannot be lowered to the ascend dialect (dynamic shape, unsupported type...)."""


KEY_QUANTUM = 64
"""Positions a shape range's dim is computed in when an attention reads it as keys: a kernel
that takes the extent computes the first ceil(n / KEY_QUANTUM) * KEY_QUANTUM positions, not
the first n, and the attention's key tiles divide it (attention.py). Its last key tile then
reads rows some kernel computed - from the host's zero padding - never rows no kernel wrote,
whose stale bits could be a NaN that a masked score or a zero weight does not cancel. The
quantum bounds the padding rows those kernels compute (up to quantum - 1 per group) against
the attention's key tiles (at most the quantum): 64 keeps the worst overhead of
bench/dynamic.py's ranges at +12.5%, where 128 left the dynamo block's 64 positions at +18.6%
and cost the LLaMAs' sequences 0.2-1.4 points less (docs/dynamic-shapes.md)."""


KEY_QUANTA = " or ".join(map(str, (KEY_QUANTUM >> i for i in range(KEY_QUANTUM.bit_length() - 4))))
"""The quanta `key_quantum` takes, as a message says them ("64 or 32 or 16")."""


KEY_QUANTA_PER_RANGE = 8
"""The least number of key quanta a range's top holds (down to a quantum of 16): a short
range's sizes are few positions, against which a quantum's padding weighs most, and its
attention reads few keys, where small key tiles cost least. LLaMA-2-7B's layer at 8 x 1~256
(quantum 32 for its top of 256, not 64) runs 65 positions at +10.0% over the static program,
not +16.9% (k and v for 96 positions of each batch row, not 128), and 256 at +2.2%, not
+0.2%; at 1 x 1~4096 a quantum of 32 would cost 4096 positions +23% in the attention's key
tiles, and the rule keeps 64 there (docs/dynamic-shapes.md)."""


def key_quantum(count: int) -> int:
    """The quantum a dim of `count` positions that an attention reads as keys is computed in:
    the largest of KEY_QUANTUM, its halves down to 16 that divides it and of which the dim
    holds KEY_QUANTA_PER_RANGE, else the whole dim."""
    q = KEY_QUANTUM
    while q > 16 and q * KEY_QUANTA_PER_RANGE > count:
        q //= 2
    while q >= 16 and count % q:
        q //= 2
    return q if q >= 16 else count


@dataclass(frozen=True)
class Extent:
    """A shape range's dim in a kernel's outputs (the program is compiled at the range's upper
    bound): the outputs' leading axes, flattened to rows, are `groups` runs of `count`
    positions of `inner` rows each, `count` the upper bound, and only the first n positions of
    each run are real, n known at run time (the host's `geir.extent` argument). `groups` is 1
    when the dim leads the outputs (a batch), more when it sits under other axes (a sequence
    under the batch). No real row depends on another row (passes/graph/padded_dims.py proved
    it), so a template that takes the extent runs only the tiles that hold real rows
    (`KernelBuilder.real_rows`, `real_groups`); one that does not computes every row, which is
    as correct and slower. With `quantum` > 1 the first min(count, ceil(n / quantum) *
    quantum) positions are computed (KEY_QUANTUM). `groups` is 0 when the outputs' groups
    differ (grouped-query attention's q, k and v heads): only a template that knows its rows
    from `axes` may take it - the axes the outputs hold the dim at, counted from their ends
    (-2: the last axis but one; 0: interleaved in an axis)."""

    count: int
    inner: int
    lo: int = 1
    """The range's lower bound (a tiling may be chosen for the whole range, not its top)."""
    groups: int = 1
    quantum: int = 1
    axes: frozenset[int] = frozenset()
    priced_from: int = 1
    """The least size a tiling is priced at: a range whose keys some attention reads in quanta
    runs the kernels they come from at a whole quantum at least, so below it the program
    costs about what it does at one quantum, whatever the other kernels' tilings."""

    def sizes(self) -> list[int]:
        """The sizes a tiling is priced at: the range's top first, then its bottom and their
        geometric mean (a tiling for the top alone leaves most cores idle at the bottom)."""
        hi = self.count
        lo = min(hi, ceil_div(max(1, self.lo), self.quantum) * self.quantum)  # the least size computed
        lo = max(lo, min(hi, self.priced_from))
        return list(dict.fromkeys((hi, lo, max(lo, min(hi, round(math.sqrt(lo * hi)))))))


@dataclass
class KernelRequest:
    """One kernel to build: the graph ops it computes and the gm buffers it reads and writes.

    `ops` holds no graph.constant: every constant the ops read is one of `inputs` (the host
    passes an ascend.constant buffer), and `g.constant_value_of(v)` still gives its array, so
    a template may fold a scalar instead of reading it, or decide by a vector's values (a
    per-channel scale, a slice's starts) - never by a weight's (two dims above 1 and more than
    lowering/kernel_cache.py's SMALL_ELEMENTS): requests whose weights differ share a kernel. An output may also be an input, and
    a value may appear twice in `outputs` (a kernel writes every argument it is given).
    """

    name: str                       # kernel symbol, e.g. "k3_conv1"
    ops: list[Operation]            # the graph ops of the kernel in order (a single op, or a fusion's body ops without the yield)
    inputs: list[SSAValue]          # graph values read from outside (block args of the fusion or operands of the single op), in kernel-arg order
    outputs: list[SSAValue]         # graph values produced for outside use, in kernel-arg order
    kind: str                       # "cube" | "vector" | "cube+vector" | "data"
    device: DeviceSpec
    cost: CostModel
    double_buffer: bool
    location: Attribute             # fused location of the original nodes (copy it onto the kernel op)
    extent: Extent | None = None    # a shape range's dim in the outputs' rows: a template may compute only the real ones
    key_extent: str | None = None   # "keys": a shape range's dim is its attention's keys (the template must mask the
                                    # padded ones); "queries": its query rows too (their tiles may be skipped)
    tilings: dict[tuple, Any] | None = None  # the lowering run's tilings by what they depend on, shared by its requests

    @property
    def arg_types(self) -> list[MemRefType]:
        """gm memref types of the kernel arguments: inputs, then outputs."""
        return [gm_type(v) for v in (*self.inputs, *self.outputs)]


@dataclass(frozen=True)
class KernelChain:
    """Kernels that compute one request together, launched one after another on its stream
    (a template's answer when one kernel cannot: its blocks cannot wait for each other, so a
    result that needs every block's part - flash decoding's combine of the key splits - is the
    next kernel's work). Each kernel takes the request's inputs and outputs, then its scratch
    (`geir.scratch`), whose first `shared` buffers are the chain's: the same types in every
    kernel, allocated once and passed to each, where an earlier kernel leaves what a later
    one reads."""

    kernels: tuple[a.KernelOp, ...]
    shared: int


# --- types -------------------------------------------------------------------------------------


def tensor_of(value: SSAValue) -> TensorType:
    t = value.type
    if not isinstance(t, TensorType):
        raise LoweringError(f"expected a tensor value, got {t}")
    return t


def shape_of(value: SSAValue) -> tuple[int, ...]:
    return tuple(tensor_of(value).get_shape())


def gm_type(value: SSAValue) -> MemRefType:
    """The gm memref of a graph tensor value (static shape, supported element type)."""
    t = tensor_of(value)
    if any(d < 0 for d in t.get_shape()):
        raise LoweringError(f"dynamic shape {t} cannot be lowered to ascend yet (shapes must be static)")
    try:
        to_dtype(t.element_type)
    except UnsupportedTypeError as e:
        raise LoweringError(str(e)) from None
    return a.memref_type(t.get_shape(), t.element_type, "gm")


def itemsize(elt: Attribute) -> int:
    return to_dtype(elt).itemsize


def compute_type(elt: Attribute) -> Attribute:
    """The element type the vector unit computes `elt` in: f32 for bf16, which the 910B's
    vector unit only moves and converts (ascend.BF16_VECTOR_OPS); `elt` itself otherwise.
    A template loads bf16 into ub, converts it with vcast, computes in f32 and converts the
    results back before storing them: one rounding per result, not per instruction."""
    return f32 if isinstance(elt, BFloat16Type) else elt


def block_elems(elt: Attribute) -> int:
    """Elements of one 32-byte block (the ub row granule)."""
    return max(1, a.BLOCK_BYTES // itemsize(elt))


def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def ceil_div(n: int, m: int) -> int:
    return -(-n // m)


def row_elems(n: int, elt: Attribute) -> int:
    """`n` rounded up to whole 32-byte blocks of `elt` (a ub row holding n elements)."""
    return round_up(max(n, 1), block_elems(elt))


def largest_fitting(lo: int, hi: int, fits: Callable[[int], bool]) -> int:
    """The largest n in [lo, hi] with fits(n), given fits(lo) and that fits is monotone
    (a box extent cut to a byte budget)."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def cut_dim(shape: Sequence[int], ext: Sequence[int], skip: frozenset[int] = frozenset()) -> int | None:
    """The dim a tile cuts partway (the last whose extent is not whole, not counting the
    dims in `skip`, which are always one at a time), or None."""
    return next((j for j in reversed(range(len(shape))) if ext[j] != shape[j] and j not in skip), None)


def tile_pieces(shape: Sequence[int], ext: Sequence[int], skip: frozenset[int] = frozenset()
                ) -> list[tuple[list[int], list[int], int]]:
    """Tiles of extents `ext` (dims before the cut dim 1, after it whole) covering `shape`:
    (tile counts per dim, extents, offset of the first tile along the cut dim) of the main
    tiles and, when the cut does not divide its dim, of the tail tiles."""
    q = cut_dim(shape, ext, skip)
    counts = [x // y for x, y in zip(shape, ext)]
    out = [(counts, list(ext), 0)]
    if q is not None and shape[q] % ext[q]:
        tail_counts, tail_ext = list(counts), list(ext)
        tail_counts[q] = 1
        tail_ext[q] = shape[q] % ext[q]
        out.append((tail_counts, tail_ext, counts[q] * ext[q]))
    return out


def tile_offsets(kb: KernelBuilder, t: int | SSAValue, counts: Sequence[int], ext: Sequence[int],
                 shape: Sequence[int], start: int, skip: frozenset[int] = frozenset()) -> list[int | SSAValue]:
    """Element offsets of tile t of a piece of `tile_pieces`."""
    idx = kb.delinearize(t, counts)
    off = [kb.mul(x, y) for x, y in zip(idx, ext)]
    if start:
        q = cut_dim(shape, ext, skip)
        off[q] = kb.add(off[q], start)
    return off


def vector_cores_per_block(spec: DeviceSpec) -> int:
    """The vector cores of a mix kernel's block (`ascend.sub_block` 0 ..): the 910B's AIVs per
    AIC; one where the cube and vector units are one core."""
    return spec.vector_per_cube if spec.split_cube_vector else 1


def row_shares(rows: int, cores: int, unit: int = 1) -> list[tuple[int, int]]:
    """(first row, rows) of each vector core's share of `rows` rows: equal shares rounded up to
    whole `unit`s, the last core taking what is left (fewer cores when the rows run out)."""
    per = round_up(ceil_div(rows, cores), unit)
    return [(r0, min(per, rows - r0)) for r0 in range(0, rows, per)]


# --- the builder -------------------------------------------------------------------------------


class KernelBuilder:
    """Builds one `ascend.kernel`: arguments from the request, an insertion point that loops
    move, buffers with offsets planned in order per space, index constants hoisted to the
    kernel entry.

        kb = KernelBuilder(req, "vector", block_dim=8)
        x, z = kb.inputs[0], kb.outputs[0]
        xu = kb.alloc([16, 256], f16, "ub", "xu")
        with kb.loop(0, 64, 16) as i:
            kb.copy(kb.tile(x, [i, 0], [16, 256]), xu)
            ...
        return kb.finish()
    """

    def __init__(self, req: KernelRequest, core_type: str, block_dim: int = 1, *,
                 arg_names: Sequence[str] | None = None, capacity: dict[str, int] | None = None):
        self.req = req
        self.device = req.device
        self.capacity = dict(capacity) if capacity is not None else dict(req.device.buffer_bytes)
        self.kernel = a.KernelOp.get(req.name, req.arg_types, core_type, block_dim)
        self.kernel.location = req.location
        self.block: Block = self.kernel.body.block
        self.args: list[SSAValue] = list(self.block.args)
        self.inputs = self.args[: len(req.inputs)]
        self.outputs = self.args[len(req.inputs):]
        names = arg_names or ([v.name_hint or f"in{i}" for i, v in enumerate(req.inputs)]
                              + [v.name_hint or f"out{i}" for i, v in enumerate(req.outputs)])
        for arg, n in zip(self.args, names):
            arg.name_hint = n
        self._builder = Builder(InsertPoint.at_end(self.block))
        self._const_ip: Operation | None = None
        self._consts: dict[tuple[int, Attribute], SSAValue] = {}
        self._offsets: dict[str, int] = {}
        self._phase_done = False  # a scope() phase has ended: the next one starts with a barrier
        self._block_idx: SSAValue | None = None
        self._extent: SSAValue | None = None  # n of request.extent, once loaded
        self._keys: SSAValue | None = None  # n of request.key_extent, once loaded

    # insertion ----------------------------------------------------------------------------

    def emit(self, op: Operation) -> Operation:
        self._builder.insert(op)
        return op

    def _emit_at_entry(self, op: Operation) -> None:
        if self._const_ip is None:
            if self.block.first_op is None:
                self.block.add_op(op)
            else:
                self.block.insert_op_before(op, self.block.first_op)
        else:
            self.block.insert_op_after(op, self._const_ip)
        self._const_ip = op

    def index(self, value: int | SSAValue) -> SSAValue:
        """An index SSA value (constants are created once, at the kernel entry)."""
        if isinstance(value, SSAValue):
            return value
        key = (int(value), IndexType())
        if key not in self._consts:
            op = arith.ConstantOp(IntegerAttr(int(value), IndexType()))
            op.result.name_hint = f"c{value}" if value >= 0 else f"cm{-value}"
            self._emit_at_entry(op)
            self._consts[key] = op.result
        return self._consts[key]

    def load_index(self, buf: SSAValue, at: int | SSAValue = 0) -> SSAValue:
        """Element `at` of a 1-D integer gm buffer read on the scalar pipe (memref.load), as
        an index: a KV-cache position, a gather's index."""
        raw = self.emit(memref.LoadOp.get(buf, [self.index(at)])).results[0]
        return raw if raw.type == IndexType() else self.emit(arith.IndexCastOp(raw, IndexType())).result

    def scalar(self, value: float | int, elt: Attribute) -> SSAValue:
        """A scalar constant of element type `elt` (operand of vadds/vmuls/vdup...)."""
        dtype = to_dtype(elt)
        if is_float_dtype(dtype):
            from xdsl.dialects.builtin import FloatAttr

            v = float(value)
            attr = FloatAttr(v, elt)
            key = (("f", v), elt)
        else:
            v = int(value)
            attr = IntegerAttr(v, elt)
            key = (("i", v), elt)
        if key not in self._consts:
            op = arith.ConstantOp(attr)
            self._emit_at_entry(op)
            self._consts[key] = op.result
        return self._consts[key]

    def block_idx(self) -> SSAValue:
        if self._block_idx is None:
            op = a.BlockIdxOp.get()
            op.results[0].name_hint = "block"
            self._emit_at_entry(op)
            self._block_idx = op.results[0]
        return self._block_idx

    # index arithmetic (folds constants) ---------------------------------------------------

    @staticmethod
    def _const_of(v: int | SSAValue) -> int | None:
        if isinstance(v, int):
            return v
        if isinstance(v.owner, arith.ConstantOp) and isinstance(v.owner.value, IntegerAttr):
            return v.owner.value.value.data
        return None

    def add(self, x: int | SSAValue, y: int | SSAValue) -> int | SSAValue:
        cx, cy = self._const_of(x), self._const_of(y)
        if cx is not None and cy is not None:
            return cx + cy
        if cx == 0:
            return y
        if cy == 0:
            return x
        return self.emit(arith.AddiOp(self.index(x), self.index(y))).result

    def sub(self, x: int | SSAValue, y: int | SSAValue) -> int | SSAValue:
        cx, cy = self._const_of(x), self._const_of(y)
        if cx is not None and cy is not None:
            return cx - cy
        if cy == 0:
            return x
        return self.emit(arith.SubiOp(self.index(x), self.index(y))).result

    def mul(self, x: int | SSAValue, y: int | SSAValue) -> int | SSAValue:
        cx, cy = self._const_of(x), self._const_of(y)
        if cx is not None and cy is not None:
            return cx * cy
        if cx == 1:
            return y
        if cy == 1:
            return x
        if cx == 0 or cy == 0:
            return 0
        return self.emit(arith.MuliOp(self.index(x), self.index(y))).result

    def max(self, x: int | SSAValue, y: int | SSAValue) -> int | SSAValue:
        if isinstance(x, int) and isinstance(y, int):
            return max(x, y)
        return self.emit(arith.MaxUIOp(self.index(x), self.index(y))).result

    def min(self, x: int | SSAValue, y: int | SSAValue) -> int | SSAValue:
        cx, cy = self._const_of(x), self._const_of(y)
        if cx is not None and cy is not None:
            return min(cx, cy)
        return self.emit(arith.MinUIOp(self.index(x), self.index(y))).result

    def divui(self, x: int | SSAValue, y: int | SSAValue) -> int | SSAValue:
        cx, cy = self._const_of(x), self._const_of(y)
        if cx is not None and cy is not None:
            return cx // cy
        if cy == 1:
            return x
        return self.emit(arith.DivUIOp(self.index(x), self.index(y))).result

    def remui(self, x: int | SSAValue, y: int | SSAValue) -> int | SSAValue:
        cx, cy = self._const_of(x), self._const_of(y)
        if cx is not None and cy is not None:
            return cx % cy
        if cy == 1:
            return 0
        return self.emit(arith.RemUIOp(self.index(x), self.index(y))).result

    # buffers and tiles --------------------------------------------------------------------

    def alloc(self, shape: Sequence[int], elt: Attribute, space: str, name: str | None = None) -> SSAValue:
        """An on-chip buffer; offsets are laid out in allocation order, aligned per space, and
        the total must fit the device's buffer (a LoweringError otherwise — a template bug:
        templates size their tiles from `budget`)."""
        t = a.memref_type(shape, elt, space)
        off = self._offsets.get(space, 0)
        off = round_up(off, a.OFFSET_ALIGN[space])
        end = off + a.nbytes_of(t)
        cap = self.capacity[space]
        if end > cap:
            raise LoweringError(
                f"kernel @{self.req.name}: {space} buffers need {end} bytes, the {self.device.name} "
                f"has {cap} (tile too large)")
        self._offsets[space] = end
        op = a.AllocOp.get(t, offset=off)
        if name:
            op.memref.name_hint = name
        self._emit_at_entry(op)
        return op.memref

    @contextmanager
    def scope(self, space: str = "ub") -> Iterator[None]:
        """Buffers allocated inside reuse their bytes afterwards: for phases of a kernel that
        run one after the other. A phase after another starts with `pipe_barrier ALL`, so no
        pipe touches the shared bytes before every pipe is done with the previous phase (a
        pipeline's own drain orders only MTE2 after MTE3: the next phase's first vector op
        would otherwise race the last store out of the same bytes)."""
        if self._phase_done:
            self.barrier("ALL")
        saved = self._offsets.get(space, 0)
        try:
            yield
        finally:
            self._offsets[space] = saved
            self._phase_done = True

    def used(self, space: str) -> int:
        return self._offsets.get(space, 0)

    def budget(self, space: str) -> int:
        """Bytes of `space` still free."""
        return self.capacity[space] - round_up(self.used(space), a.OFFSET_ALIGN[space])

    def tile(self, source: SSAValue, offsets: Sequence[int | SSAValue], sizes: Sequence[int],
             strides: Sequence[int] | None = None, *, reduce_rank: bool = False) -> SSAValue:
        """A `memref.subview` tile; returns `source` itself for the whole-buffer tile."""
        t = source.type
        assert isinstance(t, MemRefType)
        if (strides is None and list(sizes) == list(t.get_shape())
                and all(self._const_of(o) == 0 for o in offsets)):
            return source
        offs = [o if isinstance(o, int) else o for o in offsets]
        consts = [self._const_of(o) for o in offs]
        offs = [c if c is not None else o for c, o in zip(consts, offs)]
        op = self.emit(a.subview(source, offs, sizes, strides, reduce_rank=reduce_rank))
        return op.results[0]

    # data movement and sync ---------------------------------------------------------------

    def copy(self, src: SSAValue, dst: SSAValue, **props: Attribute) -> a.CopyOp:
        op = a.CopyOp.get(src, dst)
        for k, v in props.items():
            op.properties[k] = v
        return self.emit(op)

    def set_flag(self, src: str, dst: str, ident: int = 0) -> None:
        self.emit(a.SetFlagOp.get(src, dst, ident))

    def wait_flag(self, src: str, dst: str, ident: int = 0) -> None:
        self.emit(a.WaitFlagOp.get(src, dst, ident))

    def sync(self, src: str, dst: str, ident: int = 0) -> None:
        """`dst` waits for the work `src` has queued so far (set + wait)."""
        self.set_flag(src, dst, ident)
        self.wait_flag(src, dst, ident)

    def barrier(self, pipe: str) -> None:
        self.emit(a.PipeBarrierOp.get(pipe))

    def vec(self, cls: type[a.VectorOp], *operands: SSAValue, **props: Attribute) -> Operation:
        """A vector instruction (a.VaddOp, a.VexpOp, ...) with sources first, destination last."""
        op = cls.create(operands=list(operands), properties=dict(props))
        return self.emit(op)

    # loops ----------------------------------------------------------------------------------

    @contextmanager
    def if_(self, cond: SSAValue) -> Iterator[None]:
        """`scf.if %cond { ... }`: the body is built inside the `with`."""
        body = Block()
        self.emit(scf.IfOp(cond, [], Region(body)))
        outer = self._builder
        self._builder = Builder(InsertPoint.at_end(body))
        try:
            yield
        finally:
            self._builder.insert(scf.YieldOp())
            self._builder = outer

    @contextmanager
    def sub_block(self, index: int) -> Iterator[None]:
        """`ascend.sub_block index { ... }`: what one vector core of a mix block runs."""
        op = self.emit(a.SubBlockOp.get(index))
        outer = self._builder
        self._builder = Builder(InsertPoint.at_end(op.body.block))
        try:
            yield
        finally:
            self._builder = outer
            if op.body.block.first_op is None:  # nothing for this core to do
                op.detach()
                op.erase()

    def less(self, x: int | SSAValue, y: int | SSAValue) -> SSAValue:
        return self.emit(arith.CmpiOp(self.index(x), self.index(y), "ult")).result

    def real_rows(self, rows: int) -> SSAValue | None:
        """How many of an extent of `rows` - the outputs' axis 0, or a flattening of it with
        the axes after it - are real at run time (request.extent), the real rows being the
        first ones: rows / count * n. None without an extent, with several groups (see
        real_groups), or if `rows` is not a whole number of positions."""
        ext = self.req.extent
        if ext is None or ext.groups != 1 or rows % ext.count:
            return None
        return self.mul(self.real_positions(), rows // ext.count)

    def real_groups(self, rows: int) -> tuple[int, int, SSAValue] | None:
        """(groups, rows per group, real rows per group) of an extent of `rows` - a flattening
        of the outputs' leading axes through the range's dim, or further - whose real rows are
        the first of each group (request.extent). None without an extent, or if `rows` is not
        a whole number of groups of positions."""
        ext = self.req.extent
        if ext is None or not ext.groups or rows % (ext.groups * ext.count):
            return None
        return ext.groups, rows // ext.groups, self.mul(self.real_positions(), rows // (ext.groups * ext.count))

    def real_positions(self) -> SSAValue:
        """The positions of the range's dim a kernel computes: n, or n rounded up to the
        extent's quantum (at most its count). n is read once at the kernel's entry from its
        extent argument (a `memref<1xi64>` after the outputs, before any scratch; the kernel
        is marked `geir.extent` so the host passes it)."""
        ext = self.req.extent
        assert ext is not None
        if self._extent is None:
            at = len(self.req.inputs) + len(self.req.outputs)
            arg = self.block.insert_arg(a.memref_type([1], i64, "gm"), at)
            arg.name_hint = "extent"
            self.args.insert(at, arg)
            self.kernel.properties["function_type"] = FunctionType.from_lists(list(self.block.arg_types), [])
            self.kernel.attributes[attr_names.EXTENT] = UnitAttr()
            c0 = self.index(0)
            load = memref.LoadOp.get(arg, [c0])
            cast = arith.IndexCastOp(load.results[0], IndexType())
            self._emit_at_entry(load)
            self._emit_at_entry(cast)
            self._extent = cast.result
            self._extent.name_hint = "n"
            if ext.quantum > 1:  # min(ceil(n / q) * q, count), at the entry like n
                less, q, top = (self.index(c) for c in (ext.quantum - 1, ext.quantum, ext.count))
                n = self._extent
                for make in (lambda x: arith.AddiOp(x, less), lambda x: arith.DivUIOp(x, q),
                             lambda x: arith.MuliOp(x, q), lambda x: arith.MinUIOp(x, top)):
                    op = make(n)
                    self._emit_at_entry(op)
                    n = op.result
                n.name_hint = "n_computed"
                self._extent = n
        return self._extent

    def real_keys(self) -> SSAValue:
        """How many of an attention's keys are real at run time (request.key_extent): n read
        once at the kernel's entry from its key extent argument (a `memref<1xi64>` after the
        outputs and the row extent's; the kernel is marked `geir.key_extent`)."""
        if self._keys is None:
            at = len(self.req.inputs) + len(self.req.outputs) + (self._extent is not None)
            arg = self.block.insert_arg(a.memref_type([1], i64, "gm"), at)
            arg.name_hint = "keys"
            self.args.insert(at, arg)
            self.kernel.properties["function_type"] = FunctionType.from_lists(list(self.block.arg_types), [])
            self.kernel.attributes[attr_names.KEY_EXTENT] = UnitAttr()
            load = memref.LoadOp.get(arg, [self.index(0)])
            cast = arith.IndexCastOp(load.results[0], IndexType())
            self._emit_at_entry(load)
            self._emit_at_entry(cast)
            self._keys = cast.result
            self._keys.name_hint = "n_keys"
        return self._keys

    def limited(self, count: int, tile: int, start: int, real: int | SSAValue | None) -> int | SSAValue:
        """How many of `count` tiles of `tile` rows from row `start` hold a real row, of
        `real` real rows (None: all of them)."""
        if real is None:
            return count
        past = real if start == 0 else self.sub(self.max(real, start), start)
        return self.min(self.divui(self.add(past, tile - 1), tile), count)

    def group_major(self, i: int | SSAValue, live: int | SSAValue, stride: int) -> int | SSAValue:
        """The index of the i-th tile that runs when each group of `stride` tiles runs its
        first `live` (a shape range's real rows under other axes): (i / live) * stride +
        i mod live."""
        return self.add(self.mul(self.divui(i, live), stride), self.remui(i, live))

    def delinearize(self, t: int | SSAValue, dims: Sequence[int]) -> list[int | SSAValue]:
        """The multi-index of linear index `t` over `dims` (row-major)."""
        out: list[int | SSAValue] = []
        for i in range(len(dims)):
            if dims[i] == 1:
                out.append(0)
                continue
            inner = math.prod(dims[i + 1:])
            q = self.divui(t, inner)
            out.append(self.remui(q, dims[i]) if i else q)
        return out

    # views --------------------------------------------------------------------------------

    def view(self, source: SSAValue, shape: Sequence[int]) -> SSAValue:
        """`source` (contiguous, identity layout) seen with another shape of the same size:
        memref.collapse_shape to the coarsest common shape, then memref.expand_shape."""
        t = source.type
        assert isinstance(t, MemRefType)
        old, new = tuple(t.get_shape()), tuple(shape)
        if old == new:
            return source
        assert math.prod(old) == math.prod(new), f"cannot view {old} as {new}"
        ga, gb = _common_groups(old, new)
        mid = tuple(math.prod(old[i] for i in grp) for grp in ga)
        value = source
        if mid != old:
            mt = a.memref_type(mid, t.element_type, a.space_of(t))
            value = self.emit(memref.CollapseShapeOp.create(
                operands=[value], result_types=[mt], properties={"reassociation": _reassociation(ga)})).results[0]
        if new != mid:
            nt = a.memref_type(new, t.element_type, a.space_of(t))
            value = self.emit(memref.ExpandShapeOp.create(
                operands=[value], result_types=[nt],
                properties={"reassociation": _reassociation(gb),
                            "static_output_shape": DenseArrayBase.from_list(i64, list(new))})).results[0]
        return value

    # the tile pipeline ----------------------------------------------------------------------

    def pipeline(self, n_tiles: int, per_block: int, load: Callable[[int | SSAValue, int], None],
                 store: Callable[[int | SSAValue, int], None],
                 compute: Callable[[int | SSAValue, int], None] | None = None, slots: int = 1,
                 last_blocks: bool = False, runs: SSAValue | None = None, every_block: bool = False) -> None:
        """Tiles 0..n_tiles-1, `per_block` consecutive ones per block, each `load` (MTE2) ->
        `compute` (V) -> `store` (MTE3) on the buffers of slot `tile % slots`, with the flags
        that order them: a slot is refilled once its previous tile has left (MTE3 -> MTE2),
        computed once loaded (MTE2 -> V), stored once computed (V -> MTE3). With two slots
        the copies of one tile overlap the compute of the other (double buffering); each slot
        has its own flag ids, set before the loop and waited for after it so the counts balance.

        The tiles go to the first blocks of the kernel (`last_blocks`: the last ones, which a
        main pipeline leaves the least work); blocks without tiles skip the pipeline. `runs`:
        only tiles 0..runs-1 run (a run-time count: a shape range's real rows), shared over
        the blocks alike. `every_block`: every block runs every tile (work each block needs
        whole and no block can wait for: a cube kernel's prologue,
        lowering/templates/cube/prologue.py).
        """
        if n_tiles <= 0:
            return
        mid = "V" if compute is not None else "MTE3"
        per_block = n_tiles if every_block else max(1, min(per_block, n_tiles))
        blocks = ceil_div(n_tiles, per_block)
        total = self.kernel.block_count
        assert blocks <= total, f"{blocks} blocks of tiles in a kernel of {total}"
        first = total - blocks if last_blocks else 0
        slots = max(1, min(slots, per_block))

        def one(t: int | SSAValue, s: int) -> None:
            self.wait_flag("MTE3", "MTE2", s)
            load(t, s)
            self.sync("MTE2", mid, s)
            if compute is not None:
                compute(t, s)
                self.sync("V", "MTE3", s)
            store(t, s)
            self.set_flag("MTE3", "MTE2", s)

        def body() -> None:
            for s in range(slots):
                self.set_flag("MTE3", "MTE2", s)
            if per_block == 1:
                t = 0 if blocks == 1 else self.sub(self.block_idx(), first)
                if runs is None:
                    one(t, 0)
                else:
                    with self.if_(self.less(t, runs)):
                        one(t, 0)
            else:
                block = self.sub(self.block_idx(), first)
                share = per_block
                if runs is not None and blocks > 1:  # the tiles that run, shared over the blocks alike
                    share = self.divui(self.add(runs, blocks - 1), blocks)
                start = 0 if blocks == 1 else self.mul(block, share)
                exact = n_tiles % per_block == 0 and runs is None
                limit = n_tiles if runs is None else runs
                end = limit if blocks == 1 else (self.add(start, per_block) if exact
                                                 else self.min(self.add(start, share), limit))
                guard = not (exact and per_block % slots == 0)
                with self.loop(start, end, slots, "t") as t:
                    one(t, 0)
                    for s in range(1, slots):
                        ts = self.add(t, s)
                        if guard:
                            with self.if_(self.less(ts, end)):
                                one(ts, s)
                        else:
                            one(ts, s)
            for s in range(slots):
                self.wait_flag("MTE3", "MTE2", s)

        if blocks == total or every_block:
            body()
        else:
            b = self.block_idx()
            cond = self.emit(arith.CmpiOp(b, self.index(first), "uge")).result if first else self.less(b, blocks)
            with self.if_(cond):
                body()


    # loops ----------------------------------------------------------------------------------

    @contextmanager
    def loop(self, lb: int | SSAValue, ub: int | SSAValue, step: int | SSAValue, name: str | None = None) -> Iterator[SSAValue]:
        """`scf.for %iv = lb to ub step step { ... }`: the body is built inside the `with`."""
        body = Block(arg_types=[IndexType()])
        for_op = scf.ForOp(self.index(lb), self.index(ub), self.index(step), [], body)
        self.emit(for_op)
        iv = body.args[0]
        if name:
            iv.name_hint = name
        outer = self._builder
        self._builder = Builder(InsertPoint.at_end(body))
        try:
            yield iv
        finally:
            self._builder.insert(scf.YieldOp())
            self._builder = outer

    def scratch(self, shape: Sequence[int], elt: Attribute, name: str) -> SSAValue:
        """A gm buffer of the kernel's own (an argument after the outputs, counted in the
        kernel's `geir.scratch`; the host allocates it for the launch): where a mix kernel's
        cube stages a tile whose type no output has."""
        t = a.memref_type(shape, elt, "gm")
        arg = self.block.insert_arg(t, len(self.block.args))
        arg.name_hint = name
        self.args.append(arg)
        self.kernel.properties["function_type"] = FunctionType.from_lists(list(self.block.arg_types), [])
        count = self.kernel.attributes.get(attr_names.SCRATCH)
        self.kernel.attributes[attr_names.SCRATCH] = IntegerAttr((count.value.data if count else 0) + 1, i64)
        return arg

    # done -----------------------------------------------------------------------------------

    def finish(self, **attrs: Attribute) -> a.KernelOp:
        """Terminates the body and returns the kernel (extra attributes, e.g. `fallback`)."""
        self._builder.insert(a.ReturnOp())
        for k, v in attrs.items():
            self.kernel.attributes[k] = v
        return self.kernel


def _common_groups(a_shape: Sequence[int], b_shape: Sequence[int]) -> tuple[list[list[int]], list[list[int]]]:
    """Groups of dims of two shapes of the same size with equal products (the coarsest)."""
    if not a_shape or not b_shape:
        return [], []
    ga: list[list[int]] = []
    gb: list[list[int]] = []
    i = j = 0
    while i < len(a_shape) and j < len(b_shape):
        ca, cb = [i], [j]
        pa, pb = a_shape[i], b_shape[j]
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb:
                ca.append(i)
                pa *= a_shape[i]
                i += 1
            else:
                cb.append(j)
                pb *= b_shape[j]
                j += 1
        ga.append(ca)
        gb.append(cb)
    ga[-1].extend(range(i, len(a_shape)))
    gb[-1].extend(range(j, len(b_shape)))
    return ga, gb


def _reassociation(groups: list[list[int]]) -> ArrayAttr:
    return ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in grp]) for grp in groups])


def mark(kernel: a.KernelOp, key: str, value: str | None = None) -> a.KernelOp:
    """Tag a kernel (`fallback`, `template = "eltwise"`) so reports can count kernels by kind."""
    kernel.attributes[key] = UnitAttr() if value is None else StringAttr(value)
    return kernel


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)
