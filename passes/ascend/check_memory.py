"""ascend-check-memory: prove a memory plan safe - and the lifetime rules plans are made by.

A plan is the `offset` of every `ascend.alloc`: gm buffers are views into the host's
`{ascend.workspace}` argument, on-chip buffers are per block in their space. It is safe when

* every buffer lies inside its space (the workspace argument; the device's l1/l0a/l0b/l0c/ub);
* no two buffers that are live at the same time share a byte.

**gm lifetimes** come from the host program: a buffer is touched by the launches that pass
it (or a view of it). Launches on one stream run in order; `event_record` / `event_wait`
order launches across streams (a wait pairs with the latest record of the event before it).
`Schedule` turns that into vector clocks, so `x hb y` (x happens before y) is one compare.
Two buffers conflict unless every launch of one happens before every launch of the other;
on one stream that is plain interval overlap. A buffer marked `exclusive`, used by a host
op other than a launch, or read by a send (`ascend.send`: a pipeline stage's activations,
still in flight when the next micro-batch's run starts; docs/multi-device.md) lives for the
whole program. One overlap is legal: `inplace` - an
elementwise vector kernel writing its output over an input that dies at it (same type, the
input read-only and the output write-only in the kernel; tiles read each element before
writing the same index).

**On-chip lifetimes** are spans of a kernel's top-level ops (a loop counts as one op, so a
buffer used in a loop lives for all of it). Two buffers with disjoint spans may still not
share bytes unless the pipes that touched the first are ordered before the pipes that touch
the second: the same pipe (in order), the scalar pipe, or a flag chain after the pipe's last
access to the first buffer (a `set_flag` issued by an ordered pipe and a top-level
`wait_flag` of that flag; `pipe_barrier ALL`). This assumes the lowering's flag discipline -
a flag is waited for before it is set again - so a wait pairs with the latest set.

The analysis here is what ascend-plan-memory plans against; the checker recomputes it
from the IR and compares it with the offsets the IR holds.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from geir.dialects import ascend as a
from geir.errors import GeirError
from geir.ir.locations import describe, loc_names
from geir.target.device import DEFAULT_DEVICE, load_device
from geir.dialects import attr_names

ELEMENTWISE_TEMPLATES = frozenset({"row", "eltwise"})
"""Kernel templates whose tiles read each element before writing the same index."""
VIEW_OPS = a.VIEW_OPS


class MemoryPlanError(GeirError):
    """A memory plan is unsafe, or no plan fits (a kernel's buffers exceed the device)."""


def kib(n: int) -> str:
    return f"{n / 1024:g} KiB" if n % 1024 == 0 or n >= 10 * 1024 else f"{n} bytes"


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "an unnamed buffer"


def _label(op: a.AllocOp) -> str:
    names = loc_names(op.location)
    return _name(op.memref) + (f' at "{", ".join(names)}"' if names else "")


def views_of(value: SSAValue) -> Iterator[tuple[Operation, SSAValue]]:
    """(user, the value it uses) for every non-view user of `value` and of its views."""
    stack = [value]
    while stack:
        v = stack.pop()
        for use in v.uses:
            if isinstance(use.operation, VIEW_OPS):
                stack.extend(use.operation.results)
            else:
                yield use.operation, v


def host_functions(module: ModuleOp) -> list[func.FuncOp]:
    """Functions of the module that are host programs (they launch kernels or hold gm allocs)."""
    out = []
    for f in module.ops:
        if isinstance(f, func.FuncOp) and not f.is_declaration:
            if any(isinstance(op, a.LaunchOp | a.AllocOp) for op in f.body.walk()):
                out.append(f)
    return out


def workspace_arg(host: func.FuncOp) -> BlockArgument | None:
    attrs = host.arg_attrs.data if host.arg_attrs is not None else ()
    for i, d in enumerate(attrs):
        if isinstance(d.data.get(attr_names.WORKSPACE), UnitAttr):
            return host.body.block.args[i]
    return None


# ---------------------------------------------------------------------------
# The host schedule: launches, streams, events, happens-before.
# ---------------------------------------------------------------------------


def _key(value: SSAValue) -> object:
    """Streams and events by number when created by ascend.stream/event, else by value."""
    owner = value.owner
    if isinstance(owner, a.StreamOp | a.EventOp):
        return (type(owner), a.int_value(owner.properties["id"]))
    return value


@dataclass
class Schedule:
    """The launches of a host program in order, with vector clocks: `clock[i, s]` is the
    last launch (index on stream s) that finishes before launch i starts (-1: none)."""

    launches: list[a.LaunchOp]
    stream: np.ndarray
    seq: np.ndarray
    clock: np.ndarray
    per_stream: list[np.ndarray]
    kernels: list[a.KernelOp | None]  # the kernel of each launch (one symbol table walk)

    @property
    def streams(self) -> int:
        return len(self.per_stream)

    def __len__(self) -> int:
        return len(self.launches)

    def hb(self, x: int, y: int) -> bool:
        """Launch x finishes before launch y starts."""
        return x != y and self.clock[y, self.stream[x]] >= self.seq[x]

    @cached_property
    def index(self) -> dict[a.LaunchOp, int]:
        return {op: i for i, op in enumerate(self.launches)}


def schedule(host: func.FuncOp) -> Schedule:
    launches: list[a.LaunchOp] = []
    streams: dict[object, int] = {}
    stream_of: list[int] = []
    seq: list[int] = []
    clocks: list[list[int]] = []     # per stream: the clock of its next launch
    recorded: dict[object, list[int]] = {}
    rows: list[list[int]] = []

    def sid(value: SSAValue) -> int:
        k = _key(value)
        if k not in streams:
            streams[k] = len(streams)
            for c in clocks:
                c.append(-1)
            clocks.append([-1] * len(streams))
        return streams[k]

    for op in host.body.walk():
        if isinstance(op, a.LaunchOp | a.EventRecordOp | a.EventWaitOp) and op.parent_block() is not host.body.block:
            raise MemoryPlanError(f"{describe(op)} is nested in a region; memory planning needs a straight-line "
                                  f"host program")
        if isinstance(op, a.LaunchOp):
            s = sid(op.stream)
            launches.append(op)
            stream_of.append(s)
            seq.append(clocks[s][s] + 1)
            rows.append(list(clocks[s]))
            clocks[s][s] += 1
        elif isinstance(op, a.EventRecordOp):
            s = sid(op.stream)
            recorded[_key(op.event)] = list(clocks[s])
        elif isinstance(op, a.EventWaitOp):
            s = sid(op.stream)
            got = recorded.get(_key(op.event))
            if got is not None:
                clocks[s] = [max(x, got[i]) if i < len(got) else x for i, x in enumerate(clocks[s])]
    n, k = len(launches), len(streams)
    clock = np.full((n, max(k, 1)), -1, dtype=np.int64)
    for i, row in enumerate(rows):
        clock[i, : len(row)] = row
    stream = np.asarray(stream_of, dtype=np.int64)
    per_stream = [np.flatnonzero(stream == s) for s in range(k)]
    module = host.parent_op()
    table = {op.sym_name.data: op for op in module.ops if isinstance(op, a.KernelOp)} if module is not None else {}
    kernels = [table.get(op.kernel.root_reference.data) for op in launches]
    return Schedule(launches, stream, np.asarray(seq, dtype=np.int64), clock, per_stream, kernels)


@dataclass
class Lifetimes:
    """Per buffer (a set of launches): first/last launch index per stream (`firsts` is
    `n_s` / `lasts` -1 where untouched), the first launch each stream may run after it is
    dead (`dead`, `n_s` if never), its first and last launch in host order."""

    firsts: np.ndarray
    lasts: np.ndarray
    dead: np.ndarray
    first: np.ndarray
    last: np.ndarray

    def before(self, i: int, j: int) -> bool:
        """Every launch of buffer i happens before every launch of buffer j."""
        return bool((self.firsts[j] >= self.dead[i]).all())


def lifetimes(sched: Schedule, touches: Sequence[np.ndarray]) -> Lifetimes:
    """Lifetimes of buffers touched by the given launch index arrays (empty: never live)."""
    n, k = len(touches), max(sched.streams, 1)
    counts = np.array([len(ps) for ps in sched.per_stream] or [0], dtype=np.int64)
    firsts = np.tile(counts, (n, 1))
    lasts = np.full((n, k), -1, dtype=np.int64)
    first = np.full(n, -1, dtype=np.int64)
    last = np.full(n, -1, dtype=np.int64)
    for b, ls in enumerate(touches):
        if not len(ls):
            continue
        first[b], last[b] = ls.min(), ls.max()
        st, sq = sched.stream[ls], sched.seq[ls]
        np.minimum.at(firsts[b], st, sq)
        np.maximum.at(lasts[b], st, sq)
    # dead[b, t]: the first launch on stream t whose clock covers every last launch of b
    # (clock columns never decrease along a stream, so one binary search per column).
    dead = np.zeros((n, k), dtype=np.int64)
    for t, ps in enumerate(sched.per_stream):
        c = sched.clock[ps]
        for s in range(k):
            dead[:, t] = np.maximum(dead[:, t], np.searchsorted(c[:, s], lasts[:, s], side="left"))
    return Lifetimes(firsts, lasts, dead, first, last)


def conflicts(sched: Schedule, life: Lifetimes) -> np.ndarray:
    """Pairs (i, j) of buffers whose lifetimes meet: neither happens entirely before the
    other. One sweep in host order: a buffer leaves the active set once every stream has
    issued its `dead` launch (later buffers start after it on every stream)."""
    n = len(life.first)
    k = sched.streams
    end_pos = [int(ps[-1]) + 1 if len(ps) else 0 for ps in sched.per_stream]

    def retire(b: int) -> int:
        pos = 0
        for t, ps in enumerate(sched.per_stream):
            d = int(life.dead[b, t])
            pos = max(pos, int(ps[d]) if d < len(ps) else end_pos[t])
        return pos

    order = [b for b in np.lexsort((np.arange(n), life.first)).tolist() if life.first[b] >= 0]
    heap: list[tuple[int, int]] = []
    active: set[int] = set()
    edges: list[tuple[int, int]] = []
    for c in order:
        start = int(life.first[c])
        while heap and heap[0][0] <= start:
            active.discard(heapq.heappop(heap)[1])
        if active:
            cand = np.fromiter(active, dtype=np.int64, count=len(active))
            before = (life.firsts[c][None, :k] >= life.dead[cand][:, :k]).all(axis=1)
            edges.extend((int(b), c) for b in cand[~before])
        active.add(c)
        heapq.heappush(heap, (retire(c), c))
    return np.asarray(edges, dtype=np.int64).reshape(-1, 2)


def live_bound(sched: Schedule, life: Lifetimes, sizes: np.ndarray) -> int:
    """The most bytes live at one launch: buffers with a launch at or before it and one at
    or after it (happens-before; on one stream, interval containment). Such buffers pairwise
    conflict, so no plan needs less."""
    n, m = len(sizes), len(sched)
    if not n or not m:
        return 0
    own, seq = sched.stream, sched.seq
    incl = sched.clock.copy()
    incl[np.arange(m), own] = seq  # a launch is at or after itself
    started = np.zeros((n, m), dtype=bool)
    ending = np.zeros((n, m), dtype=bool)
    for s, ps in enumerate(sched.per_stream):
        if not len(ps):
            continue
        started |= life.firsts[:, s][:, None] <= incl[None, :, s]
        has = life.lasts[:, s] >= 0
        lastclock = sched.clock[ps[np.clip(life.lasts[:, s], 0, len(ps) - 1)]]  # [n, k]
        same = (own[None, :] == s) & (seq[None, :] <= life.lasts[:, s][:, None])
        other = (own[None, :] != s) & (lastclock[:, own] >= seq[None, :])
        ending |= has[:, None] & (same | other)
    live = (started & ending).astype(np.int64)
    return int((live.T @ np.asarray(sizes, dtype=np.int64)).max())


# ---------------------------------------------------------------------------
# gm buffers of a host program.
# ---------------------------------------------------------------------------


@dataclass
class GmBuffer:
    op: a.AllocOp
    size: int                   # bytes rounded to the gm alignment
    launches: np.ndarray        # indices of the launches that touch it
    exclusive: str | None       # why it may share with nothing, or None
    args: dict[int, list[int]] = field(default_factory=dict)  # launch -> argument positions


def gm_buffers(host: func.FuncOp, sched: Schedule) -> list[GmBuffer]:
    align = a.OFFSET_ALIGN["gm"]
    out = []
    sends: dict[str, bool] = {}  # kernel symbol -> it sends (one symbol lookup per kernel)
    for op in host.body.walk():
        if not isinstance(op, a.AllocOp) or op.space != "gm":
            continue
        args: dict[int, list[int]] = {}
        exclusive = "it is marked exclusive" if attr_names.EXCLUSIVE in op.attributes else None
        for user, v in views_of(op.memref):
            if isinstance(user, a.LaunchOp) and user in sched.index:
                i = sched.index[user]
                args.setdefault(i, []).extend(k for k, x in enumerate(user.args) if x is v)
                if exclusive is None and _sends(user, sends):
                    exclusive = f"{describe(user)} sends it, and the next run may start while it is in flight"
            elif exclusive is None:
                exclusive = f"the host uses it in {describe(user)}"
        size = -(-op.nbytes // align) * align
        launches = np.asarray(sorted(args), dtype=np.int64)
        if exclusive is not None:
            launches = np.arange(len(sched), dtype=np.int64)
        out.append(GmBuffer(op, size, launches, exclusive, args))
    return out


def sends(kernel: a.KernelOp) -> bool:
    """An hccl kernel that sends a buffer to another rank (`ascend.send`)."""
    return kernel.core_type.data == a.HCCL and any(isinstance(op, a.SendOp) for op in kernel.walk())


def _sends(launch: a.LaunchOp, known: dict[str, bool]) -> bool:
    name = launch.kernel.string_value()
    if name not in known:
        known[name] = sends(launch.kernel_op())
    return known[name]


# ---------------------------------------------------------------------------
# In place: elementwise kernels.
# ---------------------------------------------------------------------------


def arg_access(kernel: a.KernelOp) -> list[tuple[bool, bool]]:
    """(read, written) per kernel argument, from the ops that use it or its views."""
    block = kernel.body.block
    out = []
    for arg in block.args:
        read = written = False
        for user, v in views_of(arg):
            if isinstance(user, a.CopyOp):
                read |= user.src is v
                written |= user.dst is v
            elif isinstance(user, a.ReferenceOp):
                read |= any(x is v for x in user.ins)
                written |= any(x is v for x in user.outs)
            elif isinstance(user, memref.LoadOp):
                read = True
            else:
                read = written = True
        out.append((read, written))
    return out


def elementwise(kernel: a.KernelOp) -> bool:
    """A vector kernel of a template that tiles elementwise (reads before writing each index)."""
    t = kernel.attributes.get(attr_names.TEMPLATE)
    return (kernel.core_type.data == "vector" and attr_names.FALLBACK not in kernel.attributes
            and isinstance(t, StringAttr) and t.data in ELEMENTWISE_TEMPLATES)


def inplace_pairs(launch: a.LaunchOp, access: list[tuple[bool, bool]]) -> list[tuple[int, int]]:
    """(input arg, output arg) positions of a launch that may share bytes: same type, the
    input only read and the output only written."""
    args = launch.args
    ins = [i for i, (r, w) in enumerate(access) if r and not w]
    outs = [j for j, (r, w) in enumerate(access) if w and not r]
    return [(i, j) for j in outs for i in ins if args[i].type == args[j].type
            and isinstance(args[i].type, MemRefType) and args[i] is not args[j]]


# ---------------------------------------------------------------------------
# On-chip buffers of a kernel.
# ---------------------------------------------------------------------------


def _pipe(op: Operation) -> str:
    if isinstance(op, a.VectorOp):
        return "V"
    if isinstance(op, memref.LoadOp | memref.StoreOp):
        return "S"
    pipe = getattr(op, "pipe", None)
    return pipe if isinstance(pipe, str) else "?"


@dataclass
class ChipBuffer:
    op: a.AllocOp
    size: int                    # bytes rounded to the space's alignment
    start: int                   # top-level span (indices of the kernel body's ops)
    end: int
    first_top: dict[str, int]    # pipe -> top-level op of its first access
    last_access: dict[str, int]  # pipe -> walk index of its last access

    @property
    def pipes(self) -> set[str]:
        return set(self.first_top)


class KernelFlow:
    """The top-level ops of a kernel and the pipe orderings their flags establish."""

    def __init__(self, kernel: a.KernelOp):
        self.kernel = kernel
        self.top: list[Operation] = list(kernel.body.block.ops)
        self.walk_index: dict[Operation, int] = {}
        self.top_of: dict[Operation, int] = {}
        self.top_at: list[int] = []  # walk index -> top-level op
        for t, top in enumerate(self.top):
            for op in top.walk():
                self.walk_index[op] = len(self.walk_index)
                self.top_of[op] = t
                self.top_at.append(t)
        self._reach_cache: dict[tuple[int, str], dict[str, int]] = {}

    def buffers(self) -> list[ChipBuffer]:
        out = []
        for op in self.kernel.body.walk():
            if not isinstance(op, a.AllocOp) or op.space == "gm":
                continue
            align = a.OFFSET_ALIGN[op.space]
            first: dict[str, int] = {}
            last: dict[str, int] = {}
            start = end = self.top_of[op]
            used = False
            for user, _ in views_of(op.memref):
                p, t = _pipe(user), self.top_of[user]
                first[p] = min(first.get(p, t), t)
                last[p] = max(last.get(p, -1), self.walk_index[user])
                start, end = (t, t) if not used else (min(start, t), max(end, t))
                used = True
            out.append(ChipBuffer(op, -(-op.nbytes // align) * align, start, end, first, last))
        return out

    def ordered(self, x: ChipBuffer, y: ChipBuffer) -> bool:
        """Every pipe that touched x is done with it before that pipe, or any other, first
        touches y (x's span ends before y's starts)."""
        if x.end >= y.start:
            return False
        for p1 in x.pipes:
            if p1 == "S":  # the scalar unit finishes before it issues anything later
                continue
            reach = self._reach(x, p1)
            if any(reach.get(p2, len(self.top)) >= t for p2, t in y.first_top.items()):
                return False
        return True

    def _reach(self, x: ChipBuffer, p1: str) -> dict[str, int]:
        """For each pipe, the top-level op from which it is ordered after p1's accesses to x.

        The scan starts just after p1's last access to x: in the rest of its top-level op
        (the tail of the last iteration of a loop, outside any scf.if), then the following
        top-level ops. A set_flag carries the order if its pipe is already ordered (p1
        itself: it is issued after the access); a wait_flag of a carrying flag orders its
        dst pipe (all pipes if it is S); so does pipe_barrier ALL. A set nested in a later
        region may or may not run: it only cancels a carrying flag; a nested wait is not
        relied on."""
        key = (id(x), p1)
        if key in self._reach_cache:
            return self._reach_cache[key]
        pipes = (*a.PIPES, "?")
        after = x.last_access[p1]
        start = self.top_at[after]
        reach: dict[str, int] = {p1: start}
        carrying: dict[tuple[str, str, int], bool] = {}

        def step(op: Operation, t: int) -> None:
            if isinstance(op, a.SetFlagOp):
                src = op.key[0]
                carrying[op.key] = src in reach and (src != p1 or self.walk_index[op] > after)
            elif isinstance(op, a.WaitFlagOp) and carrying.get(op.key):
                for p in (pipes if op.key[1] == "S" else (op.key[1],)):
                    reach.setdefault(p, t)
            elif isinstance(op, a.PipeBarrierOp) and op.pipe.data == "ALL":
                for p in pipes:
                    reach.setdefault(p, t)

        first = self.top[start]
        for op in first.walk():
            if (op is not first and isinstance(op, a.SetFlagOp | a.WaitFlagOp | a.PipeBarrierOp)
                    and self.walk_index[op] > after
                    and not any(isinstance(q, scf.IfOp) for q in _ancestors(op.parent_op(), first))):
                step(op, start)
        for t in range(start + 1, len(self.top)):
            if len(reach) == len(pipes):
                break
            top = self.top[t]
            if isinstance(top, a.SetFlagOp | a.WaitFlagOp | a.PipeBarrierOp):
                step(top, t)
            elif top.regions:
                for op in top.walk():
                    if isinstance(op, a.SetFlagOp) and op.key[0] not in reach:
                        carrying[op.key] = False
        self._reach_cache[key] = reach
        return reach


def _ancestors(op: Operation | None, stop: Operation) -> Iterator[Operation]:
    while op is not None and op is not stop:
        yield op
        op = op.parent_op()


def chip_conflicts(flow: KernelFlow, bufs: Sequence[ChipBuffer]) -> np.ndarray:
    """Pairs of on-chip buffers (of one space) that may not share bytes."""
    edges = []
    order = sorted(range(len(bufs)), key=lambda i: (bufs[i].start, i))
    for ii, i in enumerate(order):
        for j in order[ii + 1:]:
            x, y = bufs[i], bufs[j]
            if not flow.ordered(x, y):
                edges.append((i, j))
    return np.asarray(edges, dtype=np.int64).reshape(-1, 2)


# ---------------------------------------------------------------------------
# The checker.
# ---------------------------------------------------------------------------


def _overlap(o1: int, s1: int, o2: int, s2: int) -> bool:
    return o1 < o2 + s2 and o2 < o1 + s1


def _check_host(host: func.FuncOp) -> None:
    sched = schedule(host)
    bufs = gm_buffers(host, sched)
    ws = workspace_arg(host)
    ws_size = a.nbytes_of(ws.type) if ws is not None else 0
    planned = [b for b in bufs if b.op.offset is not None]
    for b in planned:
        off = a.int_value(b.op.offset)
        if ws is None:
            raise MemoryPlanError(f"gm buffer {_label(b.op)} has offset {off} but @{host.sym_name.data} has no "
                                  f"{{{attr_names.WORKSPACE}}} argument")
        if off + b.op.nbytes > ws_size:
            raise MemoryPlanError(f"gm buffer {_label(b.op)} at [{off}, {off + b.op.nbytes}) lies outside the "
                                  f"{ws_size}-byte workspace")
    life = lifetimes(sched, [b.launches for b in planned])
    for i, j in conflicts(sched, life).tolist():
        x, y = planned[i], planned[j]
        ox, oy = a.int_value(x.op.offset), a.int_value(y.op.offset)
        if not _overlap(ox, x.op.nbytes, oy, y.op.nbytes):
            continue
        if _inplace_ok(sched, life, x, y, i, j) or _inplace_ok(sched, life, y, x, j, i):
            continue
        lo, hi = max(ox, oy), min(ox + x.op.nbytes, oy + y.op.nbytes)
        raise MemoryPlanError(
            f"gm buffers {_label(x.op)} and {_label(y.op)} are live at the same time "
            f"({_span(sched, x)} and {_span(sched, y)}) and share bytes [{lo}, {hi}) of the workspace")


def _span(sched: Schedule, b: GmBuffer) -> str:
    if b.exclusive:
        return "the whole program"
    if not len(b.launches):
        return "no launch"
    span = f"launches {int(b.launches.min())}..{int(b.launches.max())}"
    if sched.streams > 1:
        streams = sorted({int(s) for s in sched.stream[b.launches]})
        span += f" on stream{'s' if len(streams) > 1 else ''} {', '.join(map(str, streams))}"
    return span


def _inplace_ok(sched: Schedule, life: Lifetimes, src: GmBuffer, dst: GmBuffer, i: int, j: int) -> bool:
    """dst (marked inplace) takes src's bytes at one launch k: src dies at k, dst is born at
    k, the kernel is elementwise and passes src as a read-only input and dst as a
    write-only output of the same type, at the same offset."""
    if attr_names.INPLACE not in dst.op.attributes or src.exclusive or dst.exclusive:
        return False
    if a.int_value(src.op.offset) != a.int_value(dst.op.offset) or src.op.memref.type != dst.op.memref.type:
        return False
    k = int(life.first[j])
    if k not in src.args or k not in dst.args:
        return False
    if any(not sched.hb(x, k) for x in src.launches.tolist() if x != k):
        return False
    if any(not sched.hb(k, x) for x in dst.launches.tolist() if x != k):
        return False
    launch, kernel = sched.launches[k], sched.kernels[k]
    if kernel is None or not elementwise(kernel):
        return False
    pairs = set(inplace_pairs(launch, arg_access(kernel)))
    return all((p, q) in pairs for p in src.args[k] for q in dst.args[k])


def _check_kernel(kernel: a.KernelOp, capacity: dict[str, int], device: str) -> None:
    flow = KernelFlow(kernel)
    by_space: dict[str, list[ChipBuffer]] = {}
    for b in flow.buffers():
        by_space.setdefault(b.op.space, []).append(b)
    name = kernel.sym_name.data
    for space, bufs in by_space.items():
        cap = capacity.get(space, 0)
        planned = [b for b in bufs if b.op.offset is not None]
        unplanned = sum(b.size for b in bufs if b.op.offset is None)
        top = max((a.int_value(b.op.offset) + b.op.nbytes for b in planned), default=0)
        if top + unplanned > cap:
            raise MemoryPlanError(f"kernel '{name}' needs {kib(top + unplanned)} of {space}, the device has "
                                  f"{kib(cap)} ({top + unplanned} > {cap} bytes on {device})")
        for i, j in chip_conflicts(flow, planned).tolist():
            x, y = planned[i], planned[j]
            ox, oy = a.int_value(x.op.offset), a.int_value(y.op.offset)
            if _overlap(ox, x.op.nbytes, oy, y.op.nbytes):
                raise MemoryPlanError(
                    f"kernel '{name}': {space} buffers {_label(x.op)} and {_label(y.op)} are live at the same time "
                    f"and overlap at [{max(ox, oy)}, {min(ox + x.op.nbytes, oy + y.op.nbytes)})")


def check_memory_plan(module: ModuleOp, device: str = DEFAULT_DEVICE) -> None:
    """Raise MemoryPlanError naming both buffers if two live buffers overlap, or naming the
    buffer (kernel, space) that lies outside its space."""
    capacity = dict(load_device(device).buffer_bytes)
    for host in host_functions(module):
        _check_host(host)
    for op in module.ops:
        if isinstance(op, a.KernelOp):
            _check_kernel(op, capacity, device)


@dataclass(frozen=True)
class CheckMemory(ModulePass):
    """Verify the memory plan of an ascend program (see check_memory_plan); changes nothing."""

    name = "ascend-check-memory"

    device: str = DEFAULT_DEVICE

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_memory_plan(op, self.device)
