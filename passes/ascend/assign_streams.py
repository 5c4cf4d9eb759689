"""ascend-assign-streams: put independent launches on separate streams, GE-style.

GE's stream allocator gives every node a logical stream by dependency: a node continues the
stream of a producer when it is the next thing that producer's stream would run, and opens a
new stream otherwise, so independent branches (Inception's four towers, a ResNet shortcut)
run side by side on the AI cores while a chain stays on one stream and needs no events.

Dependencies come from the gm bytes each launch touches (`launch_dependencies`): a kernel
argument is *written* when the kernel body copies into it (or stores to it, or it is an
`ascend.reference` output) and *read* otherwise; the host value behind it is a function
argument, an `ascend.constant` or an `ascend.alloc` - with an `offset`, a byte range of the
workspace, so the write-after-read and write-after-write orderings that memory reuse creates
are dependencies too. One walk in program order over a per-buffer interval map of "last
writer / readers since" gives every read-after-write, write-after-read and write-after-write
edge without comparing launches pairwise.

The walk in program order (GE's order; the host order stays a valid serialisation):

* a launch continues the stream of its producer on the longest path (priced by the device
  `CostModel`, `kernel_time_us`) when that stream's last launch is that producer and the
  launch is the producer's heir - the consumer with the longest path to the end of the
  program - or the heir has been placed already; otherwise the next producer is tried;
* else it opens a new stream while there are fewer than `max-streams`;
* else it joins the stream on which it could start first in a list schedule of the
  estimates (ties: a stream whose last launch it depends on, saving an event; then the
  lowest id).

Collectives (`hccl` kernels) then move to one stream of their own, after the compute streams,
in program order: their links work beside the AI cores, as HCCL's stream does.

Streams are numbered from 0 in order of first use. Events the function already has belong
to the old assignment and are erased: run `ascend-insert-events` afterwards.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Block, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass

from geir.dialects import ascend as a
from geir.ir.types import to_dtype
from geir.errors import GeirError
from geir.ir.locations import describe
from geir.target.cost_model import CostModel
from geir.target.device import DEFAULT_DEVICE, load_device
from geir.dialects import attr_names

_VIEWS = a.VIEW_OPS
_LOAD3D = getattr(a, "Load3dOp", None)


class StreamAssignmentError(GeirError):
    """The host program cannot be scheduled on streams (e.g. a launch inside a loop)."""


# ---------------------------------------------------------------------------
# What each launch reads and writes.
# ---------------------------------------------------------------------------


def _uses_through_views(value: SSAValue) -> Iterable[tuple[Operation, int]]:
    """(user, operand index) of every use of `value` and of the views of it."""
    work = [value]
    while work:
        v = work.pop()
        for use in v.uses:
            op = use.operation
            if isinstance(op, _VIEWS) and use.index == 0:
                work.extend(op.results)
            else:
                yield op, use.index


def _use_effect(op: Operation, index: int) -> tuple[bool, bool]:
    """(reads, writes) of a kernel op on its operand `index` (unknown ops: both)."""
    if isinstance(op, a.CopyOp):            # src, dst
        return (index == 0, index == 1)
    if _LOAD3D is not None and isinstance(op, _LOAD3D):   # src, ih, iw, dst, k, oh, ow
        return (index == 0, index == 3)
    if isinstance(op, a.ReferenceOp):
        n = a.int_value(op.num_inputs)
        return (index < n, index >= n)
    if isinstance(op, a.CollectiveOp):
        return (index < op.NUM_INS, index >= op.NUM_INS)
    if isinstance(op, memref.StoreOp):
        return (False, index == 1)
    if isinstance(op, memref.LoadOp):
        return (True, False)
    if isinstance(op, a.VectorOp):
        return (index != len(op.operands) - 1, index == len(op.operands) - 1)
    if isinstance(op, a.MmadOp):
        return (True, index == 2)
    return (True, True)


def kernel_effects(kernel: a.KernelOp) -> tuple[tuple[bool, bool], ...]:
    """(reads, writes) of each argument of `kernel`, from the ops of the body that use it
    (an argument copied into is written)."""
    effects = []
    for arg in kernel.body.block.args:
        reads = writes = False
        if isinstance(arg.type, MemRefType):
            for op, index in _uses_through_views(arg):
                r, w = _use_effect(op, index)
                reads, writes = reads or r, writes or w
        effects.append((reads, writes))
    return tuple(effects)


@dataclass(frozen=True)
class Access:
    """Bytes [lo, hi) of host buffer `key` that a launch reads or writes."""

    key: object          # the root: a function argument, an ascend.alloc / ascend.constant op, or "workspace"
    lo: int
    hi: int
    write: bool
    value: SSAValue      # the launch operand (for messages)


def _view_bytes(t: MemRefType) -> tuple[int, int] | None:
    """[lo, hi) of a view's bytes from the start of its root buffer (the strided layout's
    offset and strides), None when they are not static."""
    try:
        offset, strides = t.get_offset(), t.get_strides()
        item = to_dtype(t.element_type).itemsize
    except Exception:  # noqa: BLE001 - a layout the analysis cannot read: the whole root
        return None
    shape = t.get_shape()
    if not isinstance(offset, int) or offset < 0 or any(not isinstance(x, int) for x in strides):
        return None
    if any(d < 0 for d in shape):
        return None
    if any(d == 0 for d in shape):
        return 0, 0
    last = offset + sum((d - 1) * x for d, x in zip(shape, strides))
    first = offset + sum((d - 1) * x for d, x in zip(shape, strides) if x < 0)
    return first * item, (last + 1) * item


def _root(value: SSAValue, workspace: SSAValue | None) -> tuple[object, int, int]:
    """(buffer key, lo, hi) of the bytes behind a host value: a root buffer, or the hull of a
    view with a static layout (else the whole root)."""
    v = value
    while isinstance(v, OpResult) and isinstance(v.op, _VIEWS) and not isinstance(v.op, a.ViewOp):
        v = v.op.operands[0]
    lo, hi = 0, a.nbytes_of(v.type) if isinstance(v.type, MemRefType) else 0
    if v is not value:
        hull = _view_bytes(value.type)
        if hull is not None:
            lo, hi = max(lo, hull[0]), min(hi, hull[1])
    # ascend.view: the bytes from an offset into its source (itself an identity-layout buffer)
    while isinstance(v, OpResult) and isinstance(v.op, _VIEWS):
        if isinstance(v.op, a.ViewOp):
            lo, hi = lo + v.op.byte_offset, hi + v.op.byte_offset
        v = v.op.operands[0]
    if isinstance(v, OpResult) and isinstance(v.op, a.AllocOp):
        offset = a.int_value(v.op.offset)
        if offset is not None:
            return (workspace if workspace is not None else "workspace"), offset + lo, offset + hi
        return v.op, lo, hi
    if isinstance(v, OpResult):
        return v.op, lo, hi
    return v, lo, hi


def workspace_arg(fn: func.FuncOp) -> SSAValue | None:
    if fn.arg_attrs is None:
        return None
    for arg, attrs in zip(fn.body.block.args, fn.arg_attrs.data):
        if attr_names.WORKSPACE in attrs.data:
            return arg
    return None


def launch_accesses(launch: a.LaunchOp, workspace: SSAValue | None,
                    effects_of: dict[str, tuple[tuple[bool, bool], ...]] | None = None) -> list[Access]:
    """The host bytes a launch reads and writes (`effects_of` caches kernel_effects by symbol)."""
    cache = {} if effects_of is None else effects_of
    name = launch.kernel.root_reference.data
    effects = cache.get(name)
    if effects is None:
        effects = cache[name] = kernel_effects(launch.kernel_op())
    out = []
    for value, (reads, writes) in zip(launch.args, effects):
        if not isinstance(value.type, MemRefType) or not (reads or writes):
            continue
        key, lo, hi = _root(value, workspace)
        if hi > lo:
            out.append(Access(key, lo, hi, writes, value))
    return out


class ByteShadow:
    """For each byte range of one buffer, its last writer and the readers since then.

    Pieces [bounds[i], bounds[i+1]) carry a state; an access splits pieces at its ends (a
    binary search) and visits the pieces it covers, so the cost follows the accesses, not
    the number of launches squared."""

    def __init__(self) -> None:
        self.bounds: list[int] = []
        self.writer: list[int | None] = []
        self.readers: list[tuple[int, ...]] = []

    def _split(self, x: int) -> int:
        i = bisect_left(self.bounds, x)
        if i < len(self.bounds) and self.bounds[i] == x:
            return i
        self.bounds.insert(i, x)
        self.writer.insert(i, self.writer[i - 1] if i else None)
        self.readers.insert(i, self.readers[i - 1] if i else ())
        return i

    def access(self, lo: int, hi: int, who: int, write: bool) -> set[int]:
        """Record an access; returns the earlier accessors it must follow."""
        i, j = self._split(lo), self._split(hi)
        deps: set[int] = set()
        for p in range(i, j):
            w = self.writer[p]
            if w is not None:
                deps.add(w)
            if write:
                deps.update(self.readers[p])
                self.writer[p] = who
                self.readers[p] = ()
            elif not self.readers[p] or self.readers[p][-1] != who:
                self.readers[p] = (*self.readers[p], who)
        deps.discard(who)
        return deps


def host_launches(fn: func.FuncOp) -> list[a.LaunchOp]:
    """The launches of a host function, in program order (all directly in its body)."""
    launches = []
    for op in fn.body.walk():
        if isinstance(op, a.LaunchOp):
            if op.parent_op() is not fn:
                raise StreamAssignmentError(f"{describe(op)}: launches inside loops or other regions cannot be "
                                            f"placed on streams (the host program must be straight-line)")
            launches.append(op)
    return launches


def launch_dependencies(launches: Sequence[a.LaunchOp], workspace: SSAValue | None) -> list[set[int]]:
    """For each launch (by index), the earlier launches it must follow: read-after-write,
    write-after-read and write-after-write over overlapping gm bytes."""
    shadows: dict[object, ByteShadow] = {}
    deps: list[set[int]] = []
    effects: dict[str, tuple[tuple[bool, bool], ...]] = {}
    for i, launch in enumerate(launches):
        mine: set[int] = set()
        accesses = launch_accesses(launch, workspace, effects)
        for acc in sorted(accesses, key=lambda x: x.write):  # reads first: a read-write arg ends written
            shadow = shadows.setdefault(acc.key, ByteShadow())
            mine |= shadow.access(acc.lo, acc.hi, i, acc.write)
        deps.append(mine)
    return deps


# ---------------------------------------------------------------------------
# A static estimate of each kernel's time.
# ---------------------------------------------------------------------------


_ARITH = {
    arith.AddiOp: lambda x, y: x + y, arith.SubiOp: lambda x, y: x - y, arith.MuliOp: lambda x, y: x * y,
    arith.DivUIOp: lambda x, y: x // y, arith.DivSIOp: lambda x, y: int(x / y), arith.FloorDivSIOp: lambda x, y: x // y,
    arith.CeilDivSIOp: lambda x, y: -(-x // y), arith.CeilDivUIOp: lambda x, y: -(-x // y),
    arith.RemUIOp: lambda x, y: x % y, arith.RemSIOp: lambda x, y: int(math.fmod(x, y)),
    arith.MinSIOp: min, arith.MinUIOp: min, arith.MaxSIOp: max, arith.MaxUIOp: max,
}


class _Estimate:
    """Per-pipe cycles of block 0 of a kernel (block_idx = 0): loop trip counts are evaluated
    from constants, block_idx and block_num; a bound it cannot evaluate counts one trip."""

    def __init__(self, cm: CostModel, kernel: a.KernelOp):
        self.cm, self.kernel = cm, kernel
        self.env: dict[SSAValue, int] = {}
        self.cube: Counter = Counter()     # pipe -> cycles at the cube clock
        self.vector = 0.0                  # V cycles at the vector clock
        self.gm_bytes = 0

    def value(self, v: SSAValue) -> int | None:
        if v in self.env:
            return self.env[v]
        if not isinstance(v, OpResult):
            return None
        op = v.op
        out: int | None = None
        if isinstance(op, arith.ConstantOp) and isinstance(op.properties.get("value"), IntegerAttr):
            out = op.properties["value"].value.data
        elif isinstance(op, a.BlockIdxOp):
            out = 0
        elif isinstance(op, a.BlockNumOp):
            out = self.kernel.block_count
        elif isinstance(op, arith.IndexCastOp):
            out = self.value(op.operands[0])
        elif type(op) in _ARITH:
            x, y = (self.value(o) for o in op.operands)
            if x is not None and y is not None:
                try:
                    out = _ARITH[type(op)](x, y)
                except ZeroDivisionError:
                    out = None
        self.env[v] = out
        return out

    def walk(self, block: Block, mult: int) -> None:
        cm = self.cm
        for op in block.ops:
            try:
                if isinstance(op, scf.ForOp):
                    lb, ub, step = self.value(op.lb), self.value(op.ub), self.value(op.step)
                    trips = max(0, -(-(ub - lb) // step)) if None not in (lb, ub, step) and step > 0 else 1
                    if trips:
                        self.walk(op.body.block, mult * trips)
                elif isinstance(op, a.CopyOp):
                    src, dst = op.src_space, op.dst_space
                    self.cube[cm.dma_engine(src, dst)] += mult * cm.dma_cycles(op.nbytes, src, dst)
                    if "gm" in (src, dst):
                        self.gm_bytes += mult * op.nbytes
                elif _LOAD3D is not None and isinstance(op, _LOAD3D):
                    self.cube["MTE1"] += mult * cm.dma_cycles(op.nbytes, op.src_space, op.dst_space)
                elif isinstance(op, a.MmadOp):
                    self.cube["M"] += mult * cm.mmad_cycles(*op.mkn, op.dtype)
                elif isinstance(op, a.VectorOp):
                    self.vector += mult * cm.vector_cycles(op.cost_kind, op.nbytes, op.dtype)
                elif isinstance(op, a.ReferenceOp):
                    nbytes = sum(a.nbytes_of(v.type) for v in op.args)
                    self.cube["MTE2"] += mult * cm.dma_cycles(nbytes, "gm", "ub")
                    self.gm_bytes += mult * nbytes
                else:
                    for region in op.regions:
                        for b in region.blocks:
                            self.walk(b, mult)
            except (ValueError, KeyError):
                continue  # a path or dtype the device does not price: leave it out of the estimate


def kernel_time_us(kernel: a.KernelOp, cm: CostModel) -> float:
    """Estimated time of one launch of `kernel`: launch overhead plus its blocks in waves over
    the cores of its type, each block as long as its busiest pipe, and no faster than its gm
    bytes at the full HBM bandwidth."""
    est = _Estimate(cm, kernel)
    est.walk(kernel.body.block, 1)
    spec = cm.spec
    block_us = max([cm.cycles_to_us(c) for c in est.cube.values()] + [cm.cycles_to_us(est.vector, "vector")])
    n = kernel.block_count
    cores = spec.vector_cores if kernel.core_type.data == "vector" else spec.cube_cores
    waves = -(-n // max(1, min(n, cores)))
    dispatch = cm.cycles_to_us(spec.block_dispatch_cycles)
    exec_us = waves * (block_us + dispatch)
    return cm.launch_overhead_us() + max(exec_us, cm.hbm_time_us(est.gm_bytes * n))


# ---------------------------------------------------------------------------
# The assignment.
# ---------------------------------------------------------------------------


def assign(deps: Sequence[set[int]], cost: Sequence[float], max_streams: int) -> list[int]:
    """The stream of each launch (see the module docstring)."""
    n = len(deps)
    succ: list[list[int]] = [[] for _ in range(n)]
    for i, ds in enumerate(deps):
        for d in ds:
            succ[d].append(i)
    finish = [0.0] * n          # earliest finish with unlimited streams (longest path to the end of i)
    for i in range(n):
        finish[i] = max((finish[d] for d in deps[i]), default=0.0) + cost[i]
    level = [0.0] * n           # longest path from the start of i to the end of the program
    for i in reversed(range(n)):
        level[i] = cost[i] + max((level[s] for s in succ[i]), default=0.0)
    heir = [max(ss, key=lambda s: (level[s], -s)) if ss else -1 for ss in succ]

    stream = [-1] * n
    tail: list[int] = []        # last launch of each stream
    free: list[float] = []      # estimated time each stream's last launch ends
    end = [0.0] * n             # estimated end of each launch in the list schedule
    for i in range(n):
        ready = max((end[d] for d in deps[i]), default=0.0)
        chosen = -1
        for p in sorted(deps[i], key=lambda d: (-finish[d], d)):
            s = stream[p]
            if tail[s] == p and heir[p] <= i:
                chosen = s
                break
        if chosen < 0 and len(tail) < max_streams:
            chosen = len(tail)
            tail.append(-1)
            free.append(0.0)
        elif chosen < 0:
            chosen = min(range(len(tail)), key=lambda s: (max(free[s], ready), tail[s] not in deps[i], s))
        stream[i] = chosen
        end[i] = max(ready, free[chosen]) + cost[i]
        tail[chosen], free[chosen] = i, end[i]
    return stream


def strip_sync(fn: func.FuncOp) -> None:
    """Erase the events (records, waits, handles) of a host function."""
    for op in list(fn.body.block.ops):
        if isinstance(op, (a.EventRecordOp, a.EventWaitOp)):
            op.detach()
            op.erase()
    for op in list(fn.body.block.ops):
        if isinstance(op, a.EventOp) and not op.results[0].uses:
            op.detach()
            op.erase()


def set_streams(fn: func.FuncOp, launches: Sequence[a.LaunchOp], streams: Sequence[int]) -> None:
    """Point every launch at `ascend.stream <its stream>`: one handle per stream (existing
    handles are reused by id), in id order at the top of the function; unused ones erased."""
    block = fn.body.block
    handles: dict[int, a.StreamOp] = {}
    for op in list(block.ops):
        if isinstance(op, a.StreamOp):
            handles.setdefault(a.int_value(op.properties["id"]), op)
    for s in set(streams) - set(handles):
        handles[s] = a.StreamOp.get(s)
        handles[s].results[0].name_hint = f"stream{s}" if s else "stream"
    for launch, s in zip(launches, streams):
        launch.operands[0] = handles[s].results[0]
    for s in sorted(handles, reverse=True):
        op = handles[s]
        if op.parent is not None:
            op.detach()
        if op.results[0].uses:
            block.insert_op_before(op, block.first_op) if block.first_op else block.add_op(op)
        else:
            op.erase()


@dataclass(frozen=True)
class AssignStreams(ModulePass):
    """Give each launch a logical stream: independent branches apart, a chain on one stream,
    the critical path first."""

    name = "ascend-assign-streams"

    max_streams: int = 4
    """The most streams to use (1: everything on stream 0)."""
    device: str = DEFAULT_DEVICE
    """The device whose cost model prices the kernels (the critical path)."""

    def __post_init__(self) -> None:
        if self.max_streams < 1:
            raise ValueError(f"max-streams must be at least 1, got {self.max_streams}")
        load_device(self.device)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cm = CostModel(self.device)
        times: dict[str, float] = {}
        for fn in op.ops:
            if not isinstance(fn, func.FuncOp) or fn.is_declaration:
                continue
            launches = host_launches(fn)
            if not launches:
                continue
            deps = launch_dependencies(launches, workspace_arg(fn))
            cost = []
            for launch in launches:
                name = launch.kernel.root_reference.data
                if name not in times:
                    times[name] = kernel_time_us(launch.kernel_op(), cm)
                cost.append(times[name])
            strip_sync(fn)
            streams = assign(deps, cost, self.max_streams)
            comm = {i for i, launch in enumerate(launches) if launch.kernel_op().core_type.data == a.HCCL}
            if comm and len(comm) < len(launches):  # collectives on a stream of their own, as HCCL's
                own = max(s for i, s in enumerate(streams) if i not in comm) + 1
                for i in comm:
                    streams[i] = own
            set_streams(fn, launches, streams)
