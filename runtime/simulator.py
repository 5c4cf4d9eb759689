"""The device simulator: times one functional run of an ascend program.

The ascend interpreter is the source of truth for *what* executes (loop trip counts, tiles,
which bytes each op touches); it reports one ``TraceEvent`` per executed op. The simulator
replays those events on a model of the device to say *when* each op runs. Every duration comes
from the one ``CostModel`` (target/cost_model.py), so the compiler and the simulator agree.

The model, level by level (docs/report.md lists each rule with the figure it uses):

* **Pipes of one block.** Each op occupies its pipe (MTE2, MTE1, M, V, MTE3, FIX, S) for the
  cost model's time; ops on one pipe run in program order; an op on another pipe starts as
  soon as its pipe is free *and* the flags allow: ``wait_flag src -> dst`` holds the dst pipe
  until the matching ``set_flag`` has executed on the src pipe (after the src pipe's earlier
  ops); ``pipe_barrier ALL`` drains every pipe (``pipe_barrier P`` adds nothing: a pipe is in
  order already). The scalar unit issues instructions in order, so nothing after a scalar op
  (or a ``wait_flag`` to S) starts before it ends. Pipes run ahead wherever no flag holds them
  back: two ops on different pipes touching overlapping bytes of one on-chip buffer (at least
  one writing) with no flag/barrier chain ordering them are a **race** (a ``Race`` record;
  ``strict=True`` raises). Happens-before is tracked with one vector clock per pipe. A mix
  block's AIC and AIV each have their own MTE2 (``LANES``): gm -> ub on the AIV's, the rest on
  the AIC's; a flag from / to MTE2 belongs to the engine of the copy before / after it.
* **Blocks of a kernel.** Blocks run on ``min(block_dim, pool)`` cores of the kernel's type
  (cube: AIC; vector: AIV; mix: one AIC + ``vector_per_cube`` AIV each; on a chip without the
  cube/vector split a cube kernel's AI cores take their vector units too), in waves when there
  are more blocks than cores (list scheduling, each block preceded by ``block_dispatch_cycles``).
  Blocks with the same op sequence are simulated once (a representative block per distinct
  trace; races are looked for in that block).
* **Re-laying copies.** DMA moves whole 32-byte blocks: a copy that re-lays data out in
  runs shorter than a block (an ND feature map interleaved into the C0 lanes the cube reads)
  moves a block per run, at the engine and on HBM (``CostModel.dma_bytes``,
  ``ascend.copy``'s ``relayout``).
* **HBM and L2.** Inside a kernel, a DMA to or from gm runs at no more than its core's share of
  the bandwidth (``CostModel.gm_cycles``: bandwidth / concurrent blocks that move gm bytes; a
  block with nothing to do takes no share). Blocks that finish early leave their share to the
  others: each block is timed again at the mean number of movers running beside it (one
  refinement of the schedule: a last partial wave, or blocks of unequal work). A share of the kernel's
  gm reads, and of its writes, hits L2 (``CostModel.l2_hit_fraction``: what the kernel reads or
  writes again, while its footprint fits in L2) and moves at ``l2_bytes_per_s``; the rest at
  ``hbm_bytes_per_s``. The DMAs to and from the kernel's own scratch (hand-off tiles written
  and read back) have shares of their own, at the scratch's reuse distance
  (``CostModel.scratch_reuse_bytes``) instead of the footprint. Between kernels: a kernel demands
  its HBM bytes / its time; when the running kernels together demand more than the bandwidth,
  each gets a max-min fair share and progresses at share / demand of its own speed.
* **Streams.** Per stream a FIFO of launches, event records and event waits. A launch spends
  ``launch_overhead_us`` on its stream, then waits (FIFO) until enough cores are free, then
  runs its blocks; a record completes when its stream reaches it; a wait holds its stream
  until the latest record of that event before it (in host program order) has completed.
* **Races between streams.** Before timing, every run is checked: two kernels on different
  streams touching overlapping gm bytes (at least one writing) that neither stream order nor
  events order raise ``StreamRaceError`` naming both kernels and the buffer (``stream_races``;
  docs/streams.md).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from xdsl.dialects import memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.ir import BlockArgument, Dialect, Operation, OpResult, SSAValue

from geir.dialects import ascend as a
from geir.errors import GeirError
from geir.ir.collector import collector_paused
from geir.ir.locations import describe, loc_names
from geir.passes.ascend.check_memory import arg_access, sends
from geir.runtime.ascend_interpreter import run_ascend_module
from geir.runtime.ascend_machine import TraceEvent, address, byte_extent, planned_offset
from geir.runtime.overflow import LaunchOverflow
from geir.target.cost_model import CostModel
from geir.target.device import DeviceSpec, load_device
from geir.target.server import Collectives, ServerSpec, load_server
from geir.reference.collectives import run_ranks
from geir.dialects import attr_names

PIPES = a.PIPES
_PIPE_INDEX = {p: i for i, p in enumerate(PIPES)}
_S = _PIPE_INDEX["S"]
DMA_PIPES = ("MTE1", "MTE2", "MTE3", "FIX")
BOUND_OF_PIPE = {"M": "cube", "V": "vector", "S": "scalar", **{p: "dma" for p in DMA_PIPES}}
SCALAR_CYCLES = 1
"""Cycles of one scalar memref.load/store on the S pipe (an assumption: no published figure)."""
_MAX_ROWS = 1 << 16
"""An access made of more rows than this is treated as its whole extent (conservative)."""
_EPS = 1e-9
DEFAULT_SERVER = "atlas800t_a2"
_INTERNED = 1 << 17
"""Distinct (view, write) Accesses a Recorder keeps to share (beyond it starts over)."""


class SimulationError(GeirError):
    """The run cannot be timed (a race with ``strict``, streams that never finish)."""


# ---------------------------------------------------------------------------
# Recording a run: trace events plus the bytes each op touches.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Access:
    """Bytes one op touches in one buffer: [lo, hi), or rows ``starts[i] .. starts[i] + run``
    (absolute addresses of the run's numpy buffers; sorted) when ``starts`` is not None."""

    space: str
    root: Operation | None     # the ascend.alloc the operand is a view of
    write: bool
    lo: int
    hi: int
    starts: np.ndarray | None
    run: int
    rel: int                   # lo as an offset into the space (or the alloc), for messages

    def overlaps(self, other: Access) -> bool:
        if self.hi <= other.lo or other.hi <= self.lo:
            return False
        if self.starts is None and other.starts is None:
            return True
        sa, la = (self.starts, self.run) if self.starts is not None else (np.array([self.lo]), self.hi - self.lo)
        sb, lb = (other.starts, other.run) if other.starts is not None else (np.array([other.lo]), other.hi - other.lo)
        # For every row of b, the row of a starting last before b's row ends is the one
        # that reaches furthest (rows of a have one length).
        i = np.searchsorted(sa, sb + lb, "left") - 1
        ok = i >= 0
        return bool(np.any(sa[i[ok]] + la > sb[ok]))


@dataclass(slots=True, eq=False)
class Recorded:
    """One trace event and the accesses of its op (empty for flags, host ops, or a trace
    recorded without the listener). Not frozen: a run records millions of them, and a
    frozen dataclass's constructor costs three times as much; nothing changes one after
    its block is closed (`Recorder.close` gives it its accesses)."""

    event: TraceEvent
    accesses: tuple[Access, ...] = ()
    args: tuple[tuple[str, int, int], ...] = ()   # a launch: (name, lo, hi) of its gm arguments
    io: tuple[tuple[int, int], ...] = ()          # a launch: [lo, hi) of its arguments that are graph
                                                  # inputs, outputs or constants (or views of them)
    scratch: tuple[tuple[int, int], ...] = ()     # a launch: [lo, hi) of its kernel's own scratch


@dataclass(frozen=True)
class RepeatedBlock:
    """A block of a compacted recording (`Recorder(compact=True)`) whose events are, op for op
    and byte count for byte count, those of an earlier block (`records`): the simulator times
    it as that block (it would find it equal and time it once anyway); what is its own is the
    gm bytes it reads and writes, as sorted disjoint [start, end) segments."""

    launch: int
    block: int
    records: list[Recorded] | ProgrammedBlock  # the earlier block's (a programmed recording's: its entry)
    reads: tuple[np.ndarray, np.ndarray]
    writes: tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True, eq=False)
class ProgrammedBlock:
    """A block of a programmed recording (`Recorder(device=...)`) whose events no earlier block
    had: its replay program, worked out when the block ended (`_BlockReplay.program`), stands
    for its events, which are not kept - a recording of millions of events keeps a few bytes
    an event. The program depends on the device (gm bytes of re-laying copies, the vector
    cores of a block): it is timed on that device only. `key` is the events' `block_key`; the
    gm bytes the block reads and writes are sorted disjoint [start, end) segments."""

    launch: int
    block: int
    program: _BlockProgram
    key: bytes
    device: str
    reads: tuple[np.ndarray, np.ndarray]
    writes: tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class RunBoundary:
    """Between two runs of a program recorded one after the other (a pipeline stage's
    micro-batches): the next run starts when every stream of the device has finished the last
    one, as a model execution does after the previous one returned - except the sends that
    end a stream of the last run (a stage's activations on their way to the next stage). They
    stay in flight while the next run computes, and a kernel of the next run that writes what
    they read waits for them (`_Sim.parse`)."""

    index: int


Record = Recorded | RepeatedBlock | ProgrammedBlock


_VIEW_OPS = a.VIEW_OPS
_REFERENCE = getattr(a, "ReferenceOp", None)   # the lowering's fallback (whole gm buffers)
_DMA_OPS = tuple(t for t in (a.CopyOp, getattr(a, "Load3dOp", None)) if t)   # src -> dst on an MTE/FIX engine
_ACCESSING = (*_DMA_OPS, a.MmadOp, a.VectorOp, memref.LoadOp, memref.StoreOp, a.CollectiveOp,
              *((_REFERENCE,) if _REFERENCE else ()))


_ROW_SHAPES: dict[tuple, tuple[int, int, np.ndarray | None, int]] = {}
"""(shape, strides, itemsize) -> `_rows` of such a view at address 0: tiles repeat a few
shapes thousands of times."""


def _rows(x: np.ndarray, base: int | None = None) -> tuple[int, int, np.ndarray | None, int]:
    """(lo, hi, row starts or None, row length) of the bytes of a numpy view (`base`: its
    address, when known)."""
    key = (x.shape, x.strides, x.itemsize)
    rel = _ROW_SHAPES.get(key)
    if rel is None:
        if len(_ROW_SHAPES) > 4096:
            _ROW_SHAPES.clear()
        rel = _ROW_SHAPES[key] = _rows_at(x.shape, x.strides, x.itemsize)
    if base is None:
        base = address(x)
    lo, hi, starts, run = rel
    return base + lo, base + hi, None if starts is None else starts + base, run


def _rows_at(shape: tuple[int, ...], strides: tuple[int, ...], item: int) -> tuple[int, int, np.ndarray | None, int]:
    """`_rows` of a view at address 0."""
    dims = [(n, s) for n, s in zip(shape, strides) if n != 1]
    lo = sum((n - 1) * s for n, s in dims if s < 0)
    hi = sum((n - 1) * s for n, s in dims if s > 0) + item
    run = item
    while dims and dims[-1][1] == run:
        run *= dims.pop()[0]
    if not dims:
        return lo, hi, None, run
    if math.prod(n for n, _ in dims) > _MAX_ROWS:
        return lo, hi, None, hi - lo
    starts = np.zeros(1, np.int64)
    for n, s in dims:
        starts = (starts[:, None] + np.arange(n, dtype=np.int64) * s).ravel()
    starts.sort()
    return lo, hi, starts, run


def block_key(records: Sequence[Recorded]) -> bytes:
    """What a block is timed by: its ops, in order, with their byte counts (blocks with equal
    keys are timed once; a compact recording keeps one of them) - (id(op), bytes) per event
    as two int64s: 16 bytes an event, hashed once (a tuple of pairs took 72 and was hashed by
    walking it at every lookup)."""
    n = len(records)
    out = np.empty((n, 2), np.int64)
    out[:, 0] = np.fromiter((id(r.event.op) for r in records), np.int64, n)
    out[:, 1] = np.fromiter((r.event.nbytes for r in records), np.int64, n)
    return out.tobytes()


def pairs_key(pairs: Sequence[tuple[int, int]]) -> bytes:
    """`block_key` of the events whose (id(op), bytes) pairs these are (a block's probe)."""
    return np.fromiter(itertools.chain.from_iterable(pairs), np.int64, 2 * len(pairs)).tobytes()


_KEY_BYTES = 16
"""Bytes of a `block_key` per event."""


class BlockRecords(list):
    """One block's records as `Recorder.close` kept them, with their `block_key` (the
    simulator would otherwise walk every event again to make it)."""

    __slots__ = ("key",)


class _Spans:
    """[start, end) byte spans gathered one at a time, merged into `_segments` at the end."""

    __slots__ = ("lo", "hi", "starts", "bases", "runs")

    def __init__(self) -> None:
        self.lo: list[int] = []
        self.hi: list[int] = []
        self.starts: list[np.ndarray] = []  # rows of strided views, relative to their address
        self.bases: list[int] = []
        self.runs: list[int] = []

    def add(self, lo: int, hi: int) -> None:
        self.lo.append(lo)
        self.hi.append(hi)

    def rows(self, starts: np.ndarray, base: int, run: int) -> None:
        self.starts.append(starts)
        self.bases.append(base)
        self.runs.append(run)

    def segments(self) -> tuple[np.ndarray, np.ndarray]:
        s, e = np.array(self.lo, np.int64), np.array(self.hi, np.int64)
        if self.starts:
            counts = np.fromiter((len(x) for x in self.starts), np.int64, len(self.starts))
            rs = np.concatenate(self.starts) + np.repeat(np.array(self.bases, np.int64), counts)
            s = np.concatenate((s, rs))
            e = np.concatenate((e, rs + np.repeat(np.array(self.runs, np.int64), counts)))
        if not len(s):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        return _merged(s, e)


class Recorder(Interpreter.Listener):
    """Both the interpreter's trace sink and an interpreter listener: the listener sees each
    op's operand values (numpy views) just before the op reports its trace event, so every
    recorded event carries the exact bytes it reads and writes.

        rec = Recorder()
        run_ascend_module(module, feeds, trace=rec, listeners=(rec,))
        rec.close()
        rec.records   # list[Recorded] (and RepeatedBlock when compact)

    `compact`: a block whose events repeat an earlier block's (the same ops with the same byte
    counts, in order - what the simulator times a block by) is kept as a `RepeatedBlock`: the
    recording holds the distinct blocks, not every event of a long run. In a timing-only run
    a block is first probed (`repeated`): one whose probe foresees an earlier block's events
    does not run in full at all.

    `device` (compact too): a programmed recording - each distinct block is kept as a
    `ProgrammedBlock`, its replay program worked out when it ends, its events dropped; the
    recording is then timed on that device only (`simulate`).
    """

    LISTENS_TO = frozenset((*_ACCESSING, a.LaunchOp, a.AllocOp))
    """The ops whose interpretation it needs to see (ascend_compiled.listened_ops)."""

    def __init__(self, compact: bool = False, device: DeviceSpec | None = None) -> None:
        self.records: list[Record] = []
        self.compact = compact or device is not None
        self.device = device
        # what a `_BlockReplay` takes of its simulator, for a programmed recording's blocks
        self.cm = CostModel(device) if device is not None else None
        self.facts: dict[int, tuple] = {}
        self._core_types: dict[int, str] = {}  # launch -> its kernel's core type
        self._block: tuple[int, int] | None = None  # (launch, block) of the events since _start
        self._start = 0
        self._blocks: dict[tuple, list[Recorded]] = {}
        self._pending: tuple[Operation, tuple] | None = None
        self._raw: list[tuple[int, tuple]] = []  # compact: (record index, operand values) of the block's ops
        self._launch_args: tuple[tuple[str, int, int], ...] = ()
        self._launch_io: tuple[tuple[int, int], ...] = ()
        self._launch_scratch: tuple[tuple[int, int], ...] = ()
        # keyed by id: xDSL hashes ops and values in Python, and these are looked up per event
        self._alloc_base: dict[int, int] = {}  # id(ascend.alloc) -> the address of its buffer
        self._values: dict[int, tuple[str, Operation | None]] = {}  # id(value) -> (space, root alloc)
        self._plans: dict[int, tuple] = {}  # id(op) -> `_plan`
        self._gm_plans: dict[int, tuple | None] = {}  # id(op) -> its plan's gm operands (index, written)
        self._kinds: dict[type, Any] = {}
        self._probe_key: tuple | None = None  # the key a probe foresaw for the block being recorded
        self._interned: dict[tuple, Access] = {}  # see _access

    # Interpreter.Listener
    def will_interpret_op(self, op: Operation, args: tuple) -> None:
        kind = self._kinds.get(type(op), False)  # `_kind`, inlined: called per op of a run
        if kind is False:
            kind = self._kind(op)
        if kind is _ACCESSING:
            self._pending = (op, args)
        elif kind is a.LaunchOp:  # its buffers, to name them in stream-race messages
            self._launch_args = _launch_args(op, args[1:])
            self._launch_io = _io_ranges(op, args[1:])
            self._launch_scratch = _scratch_ranges(op, args[1:])

    def did_interpret_op(self, op: Operation, results: tuple) -> None:
        if not results:
            return
        kind = self._kinds.get(type(op), False)
        if kind is False:
            kind = self._kind(op)
        if kind is a.AllocOp and isinstance(results[0], np.ndarray):
            self._alloc_base[id(op)] = address(results[0])

    def _kind(self, op: Operation) -> Any:
        """What the listener does with ops of this class: _ACCESSING, a.LaunchOp, a.AllocOp
        or None (isinstance on op classes is an ABC check: decided once per class)."""
        kind = self._kinds.get(type(op), False)
        if kind is False:
            kind = self._kinds[type(op)] = next((k for k in (_ACCESSING, a.LaunchOp, a.AllocOp) if isinstance(op, k)),
                                                None)
        return kind

    # trace sink
    def __call__(self, event: TraceEvent) -> None:
        pending, self._pending = self._pending, None
        accesses: tuple[Access, ...] = ()
        if self.compact:  # a block's events end where another block's (or a host op) begin
            current = self._block
            if event.pipe != "host" and event.block is not None:
                if current is None or current[1] != event.block or current[0] != event.launch:
                    self.close()
                    self._block, self._start = (event.launch, event.block), len(self.records)
            elif current is not None:
                self.close()
                self._block, self._start = None, len(self.records)
        if pending is not None and pending[0] is event.op and event.kernel is not None:
            if self._block is not None:  # decided at the block's end: all of them, or its gm bytes
                self._raw.append((len(self.records), pending[1]))
            else:
                accesses = tuple(self._accesses(event.op, pending[1]))
        if event.pipe == "host" and isinstance(event.op, a.LaunchOp | a.KernelOp):
            self._core_types[event.launch] = event.detail.get("core_type", "vector")
        if event.pipe == "host" and isinstance(event.op, a.LaunchOp):
            args, self._launch_args = self._launch_args, ()
            io, self._launch_io = self._launch_io, ()
            scratch, self._launch_scratch = self._launch_scratch, ()
            self.records.append(Recorded(event, accesses, args, io, scratch))
            return
        self.records.append(Recorded(event, accesses))

    def repeated(self, launch: int, block: int, pairs: Sequence[tuple[int, int]],
                 gm: list[tuple[Operation, tuple]]) -> bool:
        """A probed block (a timing-only run, `run_ascend_module`'s `repeats`): its events'
        (id(op), bytes) pairs (`pairs_key`) and the (op, operands) of its ops touching gm.
        When an earlier block had that key it is kept as a `RepeatedBlock` (True); else it
        runs in full (False) and its recording is checked against the probe's key when it
        ends."""
        self.close()
        if not pairs:  # no event: nothing to record
            return True
        key = pairs_key(pairs)
        first = self._blocks.get(key)
        if first is None:
            self._probe_key = key
            return False
        reads, writes = self._gm_segments(gm)
        self.records.append(RepeatedBlock(launch, block, first, reads, writes))
        return True

    def _gm_segments(self, raw: Iterable[tuple[Operation, tuple]]) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """The gm bytes (op, operands) pairs read and write, as `_segments` (what a repeated
        block keeps: `_accesses`' gm rows, without making an Access of each). A block of a
        long tile loop has hundreds of thousands of them: spans are gathered as ints, and a
        strided view's row starts (`_ROW_SHAPES`, relative to its address) are shifted in
        one numpy operation per side at the end."""
        sides = (_Spans(), _Spans())
        plans, ndarray, shapes = self._gm_plans, np.ndarray, _ROW_SHAPES
        for op, args in raw:
            plan = plans.get(id(op), False)
            if plan is False:
                full = self._plan(op)
                plan = plans[id(op)] = None if full is None else tuple(
                    (i, w) for v, i, w in full if self._space(v) == "gm")
            if plan is None:  # memref.load / store: one element
                for acc in self._accesses(op, args, gm_only=True):
                    sides[acc.write].add(acc.lo, acc.hi)
                continue
            for i, w in plan:
                x = args[i]
                if isinstance(x, ndarray) and x.size:
                    key = (x.shape, x.strides, x.itemsize)
                    rel = shapes.get(key)
                    if rel is None:
                        rel = _rows(x, 0)
                    lo, hi, starts, run = rel
                    base = address(x)
                    if starts is None:
                        sides[w].add(base + lo, base + hi)
                    else:
                        sides[w].rows(starts, base, run)
        return sides[0].segments(), sides[1].segments()

    def close(self) -> None:
        """End the block being recorded (compact: keep it, or keep a RepeatedBlock for it).
        A block's accesses are worked out here: every one for a new block (its races are
        looked for), only the gm ones for a repeat (its own bytes; the on-chip ones, most of
        a cube kernel's, would be its first block's again)."""
        block, self._block = self._block, None
        raw, self._raw = self._raw, []
        if block is None:
            return
        recs = BlockRecords(self.records[self._start:])
        key = recs.key = block_key(recs)
        probed, self._probe_key = self._probe_key, None
        if probed is not None and probed != key:  # the probe's code and the block's disagree: a bug
            raise SimulationError(f"launch {block[0]} block {block[1]}: its probe foresaw "
                                  f"{len(probed) // _KEY_BYTES} events, the block reported "
                                  f"{len(key) // _KEY_BYTES} others")
        first = self._blocks.get(key)
        if first is None:
            for i, args in raw:
                r = self.records[i]
                r.accesses = tuple(self._accesses(r.event.op, args))
            core_type = self._core_types.get(block[0], "vector")
            if self.device is None or core_type == a.HCCL:  # a collective's event is its timing
                self._blocks[key] = recs
                return
            # programmed: the program stands for the events (on-chip races found now), the
            # block's own gm bytes are kept as a repeat's are
            program = _BlockReplay(self, core_type, None).program(recs)
            reads, writes = self._gm_segments((self.records[i].event.op, args) for i, args in raw)
            del self.records[self._start:], recs
            entry = self._blocks[key] = ProgrammedBlock(block[0], block[1], program, key, self.device.name,
                                                        reads, writes)
            self.records.append(entry)
            return
        reads, writes = self._gm_segments((self.records[i].event.op, args) for i, args in raw)
        del self.records[self._start:]
        self.records.append(RepeatedBlock(block[0], block[1], first, reads, writes))

    def _value(self, value: SSAValue) -> tuple[str, Operation | None]:
        """(space, the ascend.alloc it is a view of) of an operand."""
        known = self._values.get(id(value))
        if known is None:
            known = self._values[id(value)] = (a.space_of(value.type) or "gm", _root_alloc(value))
        return known

    def _space(self, value: SSAValue) -> str:
        return self._value(value)[0]

    def _access(self, value: SSAValue, x: Any, write: bool, index: Sequence[int] | None = None) -> Access | None:
        if not isinstance(x, np.ndarray):
            return None
        space, root = self._value(value)
        base = self._alloc_base.get(id(root)) if root is not None else None
        if index is not None:  # one element (scalar load/store)
            lo = address(x) + sum(i * s for i, s in zip(index, x.strides))
            lo, hi, starts, run = lo, lo + x.itemsize, None, x.itemsize
        else:
            if x.size == 0:
                return None
            # A tile loop touches a few views thousands of times: one Access each (and one
            # array of row starts), not one per op.
            at = address(x)
            key = (id(value), write, at, x.shape, x.strides, base)
            acc = self._interned.get(key)
            if acc is not None:
                return acc
            if len(self._interned) > _INTERNED:
                self._interned.clear()
            lo, hi, starts, run = _rows(x, at)
        rel = lo - base + (planned_offset(root) or 0) if base is not None else 0
        acc = Access(space, root, write, lo, hi, starts, run, rel)
        if index is None:
            self._interned[key] = acc
        return acc

    def _plan(self, op: Operation) -> tuple[tuple[SSAValue, int, bool], ...] | None:
        """(operand, argument index, written) of each buffer the op touches as a whole; None
        for a scalar memref.load / store (one element). Decoded once per op."""
        if isinstance(op, _DMA_OPS):  # a FIX copy's quant vector (operand 2) is read too
            return ((op.src, 0, False), (op.dst, 1, True), *((v, 2, False) for v in op.operands[2:]))
        if isinstance(op, a.MmadOp):  # c written; a, b and a bias read
            return tuple((v, i, i == 2) for i, v in enumerate(op.operands))
        if isinstance(op, a.VectorOp):
            last = len(op.operands) - 1
            return tuple((v, i, i == last) for i, v in enumerate(op.operands) if i not in op.SCALARS)
        if (_REFERENCE is not None and isinstance(op, _REFERENCE)) or isinstance(op, a.CollectiveOp):
            n = len(op.ins)
            return tuple((v, i, i >= n) for i, v in enumerate(op.operands))
        return None

    def _accesses(self, op: Operation, args: tuple, gm_only: bool = False) -> Iterable[Access]:
        plan = self._plans.get(id(op), False)
        if plan is False:
            plan = self._plans[id(op)] = self._plan(op)
        if plan is not None:
            items = [(v, args[i], w) for v, i, w in plan if not gm_only or self._space(v) == "gm"]
        else:  # memref.load / store: one element
            store = isinstance(op, memref.StoreOp)
            arr, idx = (args[1], args[2:]) if store else (args[0], args[1:])
            index = [int(getattr(getattr(i, "value", None), "data", i)) for i in idx]
            value = op.operands[1 if store else 0]
            if gm_only and self._space(value) != "gm":
                return []
            acc = self._access(value, arr, store, index)
            return [acc] if acc is not None else []
        out = [self._access(v, x, w) for v, x, w in items]
        return [acc for acc in out if acc is not None]


def record(module: ModuleOp, feeds: Mapping[str, np.ndarray], *, device: str | DeviceSpec = "ascend910b",
           overflow: list | None = None, timing: bool = False, memo: bool | dict = True,
           compact: bool = False, programs: bool = False,
           first_launch: int = 0) -> tuple[dict[str, np.ndarray] | None, list[Record]]:
    """Run the program on the interpreter, recording every op with the bytes it touches
    (`overflow`, `timing`, `memo`: as ``run_ascend_module``'s; a timing-only run has no outputs;
    `compact`: repeated blocks as `RepeatedBlock`s; `programs`: distinct blocks as
    `ProgrammedBlock`s too, timed on `device` only; see `Recorder`)."""
    spec = load_device(device) if isinstance(device, str) else device
    rec = Recorder(compact, spec if programs else None)
    compact = rec.compact
    # A recording makes millions of long-lived objects (records, accesses, programs) and few
    # cycles: the collector's full passes over them took a third of a long prefill's run
    with collector_paused():
        outputs = run_ascend_module(module, feeds, device=device, trace=rec, listeners=(rec,), overflow=overflow,
                                    timing=timing, memo=memo, repeats=rec.repeated if compact else None,
                                    first_launch=first_launch)
        rec.close()
    return outputs, rec.records


# ---------------------------------------------------------------------------
# Results.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Race:
    """Two ops on different pipes of one block touch overlapping bytes of an on-chip buffer
    (at least one writes) and no flag, barrier or pipe order makes one wait for the other."""

    kernel: str
    launch: int
    block: int
    first: str            # describe() of the earlier op in program order
    first_pipe: str
    second: str
    second_pipe: str
    buffer: str           # e.g. "%xu (ub bytes [0, 8192))"
    kind: str             # "read-after-write" | "write-after-read" | "write-after-write"
    count: int = 1        # how often the pair raced in the representative block

    def __str__(self) -> str:
        return (f"race in @{self.kernel} (launch {self.launch}, block {self.block}): {self.first} on "
                f"{self.first_pipe} and {self.second} on {self.second_pipe} both touch {self.buffer} "
                f"({self.kind}) with no flag ordering them")


@dataclass(frozen=True)
class OpSpan:
    """One op of a simulated block: its pipe and time relative to the block start (us)."""

    pipe: str
    start_us: float
    end_us: float
    name: str
    nbytes: int


@dataclass
class BlockSim:
    """The timeline of one (representative) block."""

    time_us: float
    busy_us: dict[str, float]            # per pipe
    unit_busy_us: dict[str, float]       # "aic.M", "aiv.MTE2", ... (msprof's units)
    op_spans: list[OpSpan] | None        # None: worked out when first asked for (`spans`)
    gm_bytes: int                        # bytes moved to or from gm by DMA
    flops: dict[str, int]                # cube FLOPs (2 m k n) per dtype
    races: list[Race]
    reference_ops: int = 0               # ascend.reference fallbacks executed
    spans_of: Callable[[], list[OpSpan]] | None = field(default=None, repr=False, compare=False)

    @property
    def spans(self) -> list[OpSpan]:
        """Its ops' spans: only the timeline's blocks (each kernel's first core) need them."""
        if self.op_spans is None:
            self.op_spans = self.spans_of() if self.spans_of is not None else []
        return self.op_spans


@dataclass(frozen=True)
class Collective:
    """The collective of an hccl launch as the simulator meets it with the other ranks: the
    k-th collective a rank runs among a group meets the k-th of each other member (a send
    and a receive: the k-th from one rank to the other)."""

    kind: str                   # all_reduce | all_gather | reduce_scatter | all_to_all | send | recv
    ranks: tuple[int, ...]      # the group (a send / recv: both ends, sender first)
    nbytes: int                 # per rank, as target/server.py prices it
    key: tuple                  # equal on every member of one meeting
    algorithm: str = ""         # what priced it, once the ranks met ("mesh one-shot", ...)


@dataclass
class KernelRecord:
    """One launch as the simulator timed it. Times are microseconds from the start of the run."""

    name: str                   # the kernel symbol
    launch: int                 # index of the launch in host program order
    stream: int
    nodes: tuple[str, ...]      # fused ONNX node names (the kernel's location)
    core_type: str
    block_dim: int
    cores: int                  # blocks running at once (cores of the kernel's type taken)
    cube_cores: int             # AIC taken from the pool
    vector_cores: int           # AIV taken from the pool
    waves: int
    start_us: float             # the stream reached the launch
    exec_start_us: float        # cores granted, blocks start
    end_us: float
    standalone_exec_us: float   # exec time without other kernels competing for HBM
    launch_us: float            # launch overhead + waves x block dispatch
    bound: str                  # "cube" | "vector" | "dma" | "scalar" | "launch"
    bound_pipe: str             # the busiest pipe of the critical core (or "launch")
    pipe_busy_us: dict[str, float]        # summed over all blocks
    unit_busy_us: dict[str, float]        # "aic.M", ... summed over all blocks
    critical_busy_us: dict[str, float]    # per pipe, on the core that finishes last
    hbm_bytes: int              # gm bytes the kernel's DMA moves to or from HBM (all blocks; not L2 hits)
    footprint_bytes: int        # distinct gm bytes the kernel touches
    flops: dict[str, int]       # cube FLOPs per dtype
    lower_bound_us: float       # max(cube work, vector work, footprint at HBM bandwidth but what L2 holds from earlier launches at L2's)
    deps: tuple[int, ...]       # launches this one waits for (stream order and events)
    l2_hit_bytes: int = 0       # gm bytes the kernel's DMA read from or wrote to L2 (CostModel.l2_hit_fraction)
    fallback: bool = False      # holds an ascend.reference (not a hardware kernel)
    layout_conversion: bool = False   # a graph.trans_data kernel (see attr_names.LAYOUT_CONVERSION)
    core0: list[tuple[float, BlockSim]] = field(default_factory=list, repr=False)
    collective: Collective | None = None  # an hccl kernel: what it exchanges, with which ranks

    @property
    def display_name(self) -> str:
        return ", ".join(self.nodes) if self.nodes else self.name

    @property
    def time_us(self) -> float:
        return self.end_us - self.start_us

    @property
    def exec_us(self) -> float:
        return self.end_us - self.exec_start_us


@dataclass(frozen=True)
class Span:
    """A timeline entry for the trace. ``track`` is "stream" (kernels, their launch phase,
    event records and waits) or "pipe" (ops of the first core of each kernel)."""

    track: str
    stream: int
    pipe: str | None
    name: str
    start_us: float
    end_us: float
    category: str
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class SimResult:
    device: DeviceSpec
    latency_us: float
    kernels: list[KernelRecord]
    pipe_busy_us: dict[str, float]
    races: list[Race]
    timeline_of: Callable[[], list[Span]] = field(repr=False, compare=False)  # see `timeline`
    streams: tuple[int, ...] = ()
    overflow: list[LaunchOverflow] = field(default_factory=list)  # from the run (runtime/overflow.py)
    io_bytes_touched: int | None = None  # distinct bytes of graph inputs, outputs and constants the
                                         # kernels touch (None: plain trace events, no bytes)
    rank: int = 0                        # the device of a multi-device run
    _timeline: list[Span] | None = field(default=None, repr=False, compare=False)

    @property
    def timeline(self) -> list[Span]:
        """Every span, by start: kernels, launches, events and (of each kernel's first core)
        ops. Made when first asked for: a prefill at 8 x 4096 has millions of op spans per
        attention launch, and a report does not need them."""
        if self._timeline is None:
            self._timeline = self.timeline_of()
        return self._timeline


# ---------------------------------------------------------------------------
# One block: pipes, flags, races.
# ---------------------------------------------------------------------------


def _join(into: list[int], other: Sequence[int]) -> None:
    for i, v in enumerate(other):
        if v > into[i]:
            into[i] = v


_OP, _SET, _WAIT, _BARRIER = range(4)


@dataclass
class _BlockProgram:
    """One block's events as the timing needs them, worked out once per `block_key`: what
    happens at each event does not depend on how long anything takes - which lane an op
    occupies, which set_flag a wait_flag waits for, where a barrier drains the pipes, and the
    races (happens-before is the flags' and the pipes' order) - so the block is timed again
    at another bandwidth share or L2 hit rate (`_BlockReplay.time`) without redoing it.

    `events`: per event (kind, lane, x, busy slot, unit slot) with x the op's duration class
    (`classes`, one per (op, bytes): its first event) or a flag's queue (one per flag key: a
    wait_flag takes the earliest set_flag of its key not yet taken). The tuples are shared
    between equal events: a block of a long tile loop has millions of events and a few
    hundred distinct ones."""

    events: list[tuple[int, int, int, int, int]]
    classes: list[TraceEvent]  # the first event of each duration class (the timeline's spans name theirs)
    flags: int              # flag keys (queues)
    pipes: list[str]        # busy slot -> pipe
    units: list[str]        # unit slot -> "aic.M", ...
    races: list[Race]
    gm_bytes: int
    flops: dict[str, int]
    references: int
    reads: int              # gm bytes its DMA reads (a re-laying copy's whole blocks)
    writes: int             # gm bytes its DMA writes
    scratch_reads: int      # of them, the bytes read from and written to the kernel's own scratch
    scratch_writes: int
    on_scratch: list[bool]  # per duration class: a DMA whose gm side is the kernel's own scratch


class _BlockReplay:
    """Replays one block's events; see the module docstring for the rules."""

    def __init__(self, sim: _Sim, core_type: str, blocks: float | None,
                 hit: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)):
        """`blocks`: the blocks moving gm data at once (None: no bandwidth limit); `hit`: the
        shares of the kernel's gm reads and of its gm writes L2 serves
        (`CostModel.l2_hit_fraction`), then those of its reads and writes of its own scratch."""
        self.cm, self.blocks, self.hit = sim.cm, blocks, hit
        self.facts = sim.facts
        self.scalar_unit = "aiv" if core_type == "vector" else "aic"

    def duration(self, ev: TraceEvent, on_scratch: bool = False) -> float:
        op, cm = ev.op, self.cm
        if _is_dma(ev):  # ascend.copy, ascend.load3d: the engine of the (src, dst) path
            src, dst = ev.detail["src"], ev.detail["dst"]
            moved = _moved_bytes(cm, ev)
            cycles = cm.dma_cycles(moved, src, dst)
            if self.blocks is not None and "gm" in (src, dst) and moved > 0:
                startup = cm.spec.dma_startup_cycles[cm.dma_engine(src, dst)]
                hit = self.hit[(src != "gm") + 2 * on_scratch]
                cycles = max(cycles, math.ceil(cm.gm_cycles(_gm_side_bytes(cm, ev), self.blocks, hit)) + startup)
            return cm.cycles_to_us(cycles)
        if isinstance(op, a.MmadOp):
            d = ev.detail
            return cm.cycles_to_us(cm.mmad_cycles(d["m"], d["k"], d["n"], ev.dtype))
        if ev.pipe == "V":
            return cm.cycles_to_us(cm.vector_cycles(ev.detail.get("kind", "unary"), ev.nbytes, ev.dtype), "vector")
        if "op" in ev.detail:  # ascend.reference: one pass over its gm data at the MTE2 rate
            if ev.nbytes <= 0:
                return 0.0
            cycles = cm.dma_cycles(ev.nbytes, "gm", "ub")
            if self.blocks is not None:
                cycles = max(cycles, math.ceil(cm.gm_cycles(ev.nbytes, self.blocks)) + cm.spec.dma_startup_cycles["MTE2"])
            return cm.cycles_to_us(cycles)
        return cm.cycles_to_us(SCALAR_CYCLES)

    def unit(self, ev: TraceEvent) -> str:
        p = ev.pipe
        if p in ("M", "MTE1", "FIX"):
            return "aic"
        if p in ("V", "MTE3"):
            return "aiv"
        if p == "MTE2":
            return "aiv" if ev.detail.get("dst") == "ub" else "aic"
        return self.scalar_unit

    def program(self, records: Sequence[Recorded]) -> _BlockProgram:
        """The block's `_BlockProgram`: lanes, flag pairs, and the races found on the way.

        Millions of events of a few hundred ops: what an op's events have in common (its
        kind, flag key, lane, vector core) is worked out once per op (`_op_facts`), what
        they have per byte count (duration class, busy and unit slots, gm bytes, FLOPs)
        once per class."""
        n = len(LANES)
        facts = self.facts
        lanes = _lanes(records, facts, self.cm)
        vc = [[0] * n for _ in range(n)]
        issue_vc = [0] * n
        joined: list[list[int] | None] = [None] * n  # the issue clock each lane last took in
        flags: dict[tuple, deque] = defaultdict(deque)  # key -> vector clocks of the sets not waited for
        queues: dict[tuple, int] = {}  # flag key -> its queue
        shared: dict[tuple, tuple] = {}  # equal flag event tuples, one object
        flops: Counter = Counter()
        events: list[tuple[int, int, int, int, int]] = []
        # (id(op), bytes) -> (its event tuple, gm bytes, gm bytes read, written, FLOPs dtype, FLOPs, reference)
        classes: dict[tuple, tuple] = {}
        reps: list[TraceEvent] = []
        pipes: dict[str, int] = {}
        units: dict[str, int] = {}
        gm_bytes = references = reads = writes = scratch_reads = scratch_writes = 0
        on_scratch: list[bool] = []
        # per space, per lane: the latest access of each range (and the lane's latest epoch, so
        # a lane whose every access happens-before the new one is passed over at once)
        history: dict[object, dict[int, dict[tuple, tuple[Access, int, Operation]]]] = defaultdict(dict)
        latest: dict[object, dict[int, int]] = defaultdict(dict)
        races: dict[tuple, list] = {}
        first = records[0].event if records else None
        for rec, lane in zip(records, lanes):
            ev = rec.event
            op = ev.op
            kind, _, key, sub, _ = facts[id(op)]
            if kind == _SET:
                if joined[lane] is not issue_vc:
                    _join(vc[lane], issue_vc)
                    joined[lane] = issue_vc
                flags[key].append(list(vc[lane]))
                t = (_SET, lane, queues.setdefault(key, len(queues)), 0, 0)
                events.append(shared.setdefault(t, t))
                continue
            if kind == _WAIT:
                queue = flags[key]
                if not queue:
                    raise SimulationError(f"{describe(op)} in @{ev.kernel} block {ev.block}: waits for a flag "
                                          f"that was never set (the trace is not of one run)")
                _join(vc[lane], queue.popleft())
                if lane == _S:
                    issue_vc = list(vc[lane])
                t = (_WAIT, lane, queues[key], 0, 0)
                events.append(shared.setdefault(t, t))
                continue
            if kind == _BARRIER:
                allvc = [max(col) for col in zip(*vc)]
                vc = [list(allvc) for _ in range(n)]
                issue_vc = list(allvc)
                joined = [None] * n
                events.append((_BARRIER, 0, 0, 0, 0))
                continue
            if kind != _OP:
                continue
            p = lane
            ckey = (id(op), ev.nbytes)
            cls = classes.get(ckey)
            if cls is None:
                cls = classes[ckey] = self._class(ev, p, len(reps), pipes, units)
                reps.append(ev)
                on_scratch.append(cls[-1])
            t, moved, rd, wr, fdt, fl, ref, scratch = cls
            events.append(t)
            mine = vc[p]
            if joined[p] is not issue_vc:
                _join(mine, issue_vc)
                joined[p] = issue_vc
            mine[p] += 1
            epoch = mine[p]
            if p == _S:
                issue_vc = list(mine)
            gm_bytes += moved
            reads += rd
            writes += wr
            if scratch:
                scratch_reads += rd
                scratch_writes += wr
            if fl:
                flops[fdt] += fl
            references += ref
            for acc in rec.accesses:
                if acc.space not in a.ON_CHIP:
                    continue
                # buffers of two spaces never overlap; each vector core has its own ub
                space = (acc.space, sub) if acc.space == "ub" else acc.space
                lanes_seen, last = history[space], latest[space]
                for q, seen in lanes_seen.items():
                    if q == p or mine[q] >= last[q]:
                        continue
                    for old, qe, old_op in seen.values():
                        if mine[q] >= qe or not (old.write or acc.write) or not old.overlaps(acc):
                            continue
                        what = ("write-after-write" if old.write and acc.write else
                                "read-after-write" if old.write else "write-after-read")
                        rkey = (old_op, op, old.root, what)
                        if rkey in races:
                            races[rkey][-1] += 1
                        else:
                            races[rkey] = [old_op, LANE_PIPES[q], op, ev.pipe, old, acc, what, 1]
                mine_seen = lanes_seen.get(p)
                if mine_seen is None:
                    mine_seen = lanes_seen[p] = {}
                mine_seen[(acc.write, acc.lo, acc.hi, acc.root)] = (acc, epoch, op)
                last[p] = epoch
        out_races = [
            Race(first.kernel or "", first.launch or 0, first.block or 0, describe(o1), p1, describe(o2), p2,
                 _buffer_name(acc1, acc2), kind, count)
            for o1, p1, o2, p2, acc1, acc2, kind, count in races.values()
        ] if first is not None else []
        return _BlockProgram(events, reps, len(queues), list(pipes), list(units), out_races, gm_bytes,
                             dict(flops), references, reads, writes, scratch_reads, scratch_writes, on_scratch)

    def _class(self, ev: TraceEvent, lane: int, index: int, pipes: dict[str, int], units: dict[str, int]) -> tuple:
        """A duration class's part of its events: (the event tuple, gm bytes, gm bytes read,
        gm bytes written, FLOPs dtype, FLOPs, reference ops, whether its gm side is the
        kernel's own scratch) - every event of an (op, bytes)."""
        unit = f"{self.unit(ev)}.{ev.pipe}"
        t = (_OP, lane, index, pipes.setdefault(ev.pipe, len(pipes)), units.setdefault(unit, len(units)))
        moved = rd = wr = fl = ref = 0
        fdt = ""
        scratch = False
        if _is_dma(ev):
            src, dst = ev.detail["src"], ev.detail["dst"]
            if "gm" in (src, dst):
                moved = _gm_side_bytes(self.cm, ev)
                scratch = _on_scratch(ev.op.operands[0 if src == "gm" else 1])
            if src == "gm":  # the L2 rule's traffic: what the engine moves (`_moved_bytes`)
                rd = _moved_bytes(self.cm, ev)
            elif dst == "gm":
                wr = _moved_bytes(self.cm, ev)
        elif isinstance(ev.op, a.MmadOp):
            d = ev.detail
            fdt, fl = ev.dtype, 2 * d["m"] * d["k"] * d["n"]
        elif "op" in ev.detail:
            moved, ref = ev.nbytes, 1
        return t, moved, rd, wr, fdt, fl, ref, scratch

    def time(self, prog: _BlockProgram) -> BlockSim:
        """The block timed at this replay's share and hit rate (`clock`)."""
        dur = [self.duration(ev, s) for ev, s in zip(prog.classes, prog.on_scratch)]
        end, busy, unit_busy = clock(prog, dur)
        return BlockSim(end, dict(zip(prog.pipes, busy)), dict(zip(prog.units, unit_busy)), None, prog.gm_bytes,
                        dict(prog.flops), prog.races, prog.references, spans_of=lambda: _spans(prog, dur))


def clock(prog: _BlockProgram, dur: list[float], spans: list[OpSpan] | None = None
          ) -> tuple[float, list[float], list[float]]:
    """Times a block's program with these durations (per duration class), by the rules of the
    module docstring: every pipe in program order, each op from when its pipe is free and the
    scalar unit has issued it, each wait_flag holding its pipe until its set_flag's time, a
    barrier draining them all. Returns the block's end and the busy time per busy and unit
    slot; appends each op's span to `spans` when given."""
    n = len(LANES)
    free = [0.0] * n
    issue_t = 0.0
    queues = [deque() for _ in range(prog.flags)]
    busy = [0.0] * len(prog.pipes)
    unit_busy = [0.0] * len(prog.units)
    classes = prog.classes
    for kind, p, x, bs, us in prog.events:
        if kind == _OP:
            d = dur[x]
            start = free[p] if free[p] > issue_t else issue_t
            end = start + d
            free[p] = end
            busy[bs] += d
            unit_busy[us] += d
            if p == _S:
                issue_t = end
            if spans is not None:  # a class's events share op, pipe and bytes
                ev = classes[x]
                spans.append(OpSpan(LANES[p] if p > _AIV_MTE2 else ev.pipe, start, end, _op_label(ev), ev.nbytes))
        elif kind == _SET:
            queues[x].append(free[p] if free[p] > issue_t else issue_t)
        elif kind == _WAIT:
            t = queues[x].popleft()
            if t > free[p]:
                free[p] = t
            if p == _S and free[p] > issue_t:
                issue_t = free[p]
        else:
            t = max(max(free), issue_t)
            free = [t] * n
            issue_t = t
    return max(max(free), issue_t), busy, unit_busy


def _spans(prog: _BlockProgram, dur: list[float]) -> list[OpSpan]:
    """The block's ops as `clock` times them, one span each (the timeline's first core)."""
    out: list[OpSpan] = []
    clock(prog, dur, out)
    return out


SUB_BLOCKS = 2
"""Vector cores of a mix block the replay has lanes for (`ascend.sub_block` 0 and 1: the 910B's
AIVs per AIC)."""
LANES = (*PIPES, "MTE2.aiv", "V.aiv1", "MTE3.aiv1", "MTE2.aiv1")
"""The timelines of one block: the ISA's pipes, and a second MTE2 - in a mix block the AIC and
the AIV each have their own (gm -> l1 / l0 on the AIC's, gm -> ub on the AIV's) - then the V,
MTE3 and MTE2 of a mix block's second AIV (the ops of `ascend.sub_block 1`)."""
LANE_PIPES = (*PIPES, "MTE2", "V", "MTE3", "MTE2")
"""The ISA pipe of each lane (what races and reports name)."""
_AIV_MTE2 = len(PIPES)
_SECOND_AIV = {_PIPE_INDEX["V"]: _AIV_MTE2 + 1, _PIPE_INDEX["MTE3"]: _AIV_MTE2 + 2, _AIV_MTE2: _AIV_MTE2 + 3}
"""A vector core's lane -> the second AIV's."""


def sub_block_of(op: Operation, cache: dict[Operation, int]) -> int:
    """The vector core an op runs on: the index of the `ascend.sub_block` it is in, else 0."""
    sub = cache.get(op)
    if sub is None:
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, a.SubBlockOp | a.KernelOp):
            parent = parent.parent_op()
        sub = cache[op] = parent.sub_index if isinstance(parent, a.SubBlockOp) else 0
    return sub


_SKIP = 4  # an op the replay has no lane for, a barrier of one pipe


def _op_facts(ev: TraceEvent, subs: dict[Operation, int], cm: CostModel) -> tuple:
    """What every event of `ev`'s op has in common (an op's pipe, detail and place never
    change): (kind, its ISA lane - a set's src pipe, a wait's dst pipe, an op's pipe -,
    a flag's key, the vector core it runs on, its MTE2 role). The MTE2 role (see `_lanes`):
    of a flag, whether it is from / to MTE2; of an op on MTE2, the lane it runs on (the
    AIV's for a gm -> ub copy or a reference op, else the AIC's); None otherwise."""
    op = ev.op
    sub = sub_block_of(op, subs) if ev.pipe != "host" else 0
    if sub and (sub >= SUB_BLOCKS or sub >= cm.spec.vector_per_cube):
        raise SimulationError(f"{describe(op)} in @{ev.kernel}: ascend.sub_block {sub}, but a "
                              f"{cm.spec.name} block has {min(SUB_BLOCKS, cm.spec.vector_per_cube)} "
                              f"vector cores")
    if isinstance(op, a.SetFlagOp):
        key = op.key
        return _SET, _PIPE_INDEX[key[0]], key, sub, key[0] == "MTE2"
    if isinstance(op, a.WaitFlagOp):
        key = op.key
        return _WAIT, _PIPE_INDEX[key[1]], key, sub, key[1] == "MTE2"
    role = None
    if ev.pipe == "MTE2":
        role = _AIV_MTE2 if _is_dma(ev) and ev.detail["dst"] == "ub" or "op" in ev.detail else _PIPE_INDEX["MTE2"]
    if isinstance(op, a.PipeBarrierOp):
        return (_BARRIER if ev.detail.get("pipe", ev.pipe) == "ALL" else _SKIP), -1, None, sub, role
    lane = _PIPE_INDEX.get(ev.pipe)
    if lane is None:
        return _SKIP, -1, None, sub, role
    return _OP, role if role is not None else lane, None, sub, role


def _lanes(records: Sequence[Recorded], facts: dict[int, tuple], cm: CostModel) -> list[int]:
    """The lane of every record (`facts` gains its ops' `_op_facts`, by id: xDSL hashes an
    op in Python). A mix block's AIC and AIV each have an MTE2: the AIV's runs its gm -> ub
    copies (and reference ops), a set_flag from MTE2 after one (it signals the copies before
    it), a wait_flag to MTE2 before one (it holds the copy after it). The ops of
    `ascend.sub_block 1` run on the second AIV's lanes."""
    out = [0] * len(records)
    subs: dict[Operation, int] = {}
    last = None  # the lane of the latest op on MTE2
    pending: list[int] = []  # wait_flags to MTE2 not yet followed by an op on MTE2
    for i, rec in enumerate(records):
        ev = rec.event
        f = facts.get(id(ev.op))
        if f is None:
            f = facts[id(ev.op)] = _op_facts(ev, subs, cm)
        kind, lane, _, sub, role = f
        if kind == _SET:
            if role and last == _AIV_MTE2:
                lane = _AIV_MTE2
        elif kind == _WAIT:
            if role:
                pending.append(i)
        elif role is not None:
            last = role
            if role == _AIV_MTE2:
                for w in pending:
                    out[w] = _SECOND_AIV[_AIV_MTE2] if facts[id(records[w].event.op)][3] else _AIV_MTE2
            pending.clear()
        out[i] = _SECOND_AIV.get(lane, lane) if sub else lane
    return out


def _is_dma(ev: TraceEvent) -> bool:
    return ev.pipe in DMA_PIPES and "src" in ev.detail and "dst" in ev.detail


def _moved_bytes(cm: CostModel, ev: TraceEvent) -> int:
    """Bytes a DMA op moves: a re-laying copy (ascend.CopyOp.relayout) moves whole DMA
    blocks per contiguous run of its plain side."""
    relayout = ev.op.relayout if isinstance(ev.op, a.CopyOp) else None
    if relayout is None:
        return ev.nbytes
    return max(ev.nbytes, cm.dma_bytes(*relayout))


_MNEMONICS: dict[type[Operation], str] = {op: Dialect.split_name(op.name)[1] for op in a.Ascend.operations}
"""An ascend op's name without its dialect's ("copy", "vadd", ...), as spans are labelled."""


def _gm_side_bytes(cm: CostModel, ev: TraceEvent) -> int:
    """Bytes a DMA op moves through L2 / HBM: a copy's gm side (ascend.CopyOp.gm_bytes: a
    FIX copy quantizing i32 to int8 writes a quarter of the l0c bytes its engine reads), or
    what a re-laying copy or a load3d moves."""
    op = ev.op
    if isinstance(op, a.CopyOp) and op.quant is not None and op.relayout is None:
        return op.gm_bytes
    return _moved_bytes(cm, ev)


def _op_label(ev: TraceEvent) -> str:
    op = ev.op
    name = _MNEMONICS.get(type(op), op.name)
    if _is_dma(ev):
        return f"{name} {ev.detail['src']}->{ev.detail['dst']}"
    if isinstance(op, a.MmadOp):
        d = ev.detail
        return f"mmad {d['m']}x{d['k']}x{d['n']}"
    if "op" in ev.detail:
        return f"reference {ev.detail['op']}"
    return name


def _buffer_name(x: Access, y: Access) -> str:
    """The buffer both accesses touch and the overlapping byte range (offsets in the space
    for a planned buffer, in the buffer for an unplanned one)."""
    root = x.root or y.root
    hint = root.results[0].name_hint if root is not None else None
    lo, hi = max(x.lo, y.lo), min(x.hi, y.hi)
    rel = x.rel + (lo - x.lo)
    return f"{'%' + hint + ' ' if hint else ''}({x.space} bytes [{rel}, {rel + hi - lo}))"


# ---------------------------------------------------------------------------
# Kernels, streams and the device.
# ---------------------------------------------------------------------------


@dataclass
class _Launch:
    index: int
    op: Operation
    kernel: a.KernelOp | None
    name: str
    stream: int
    core_type: str
    block_dim: int
    blocks: dict[int, list[Recorded]] = field(default_factory=dict)
    deps: frozenset[int] = frozenset()
    scratch: tuple[tuple[int, int], ...] = ()  # [lo, hi) of its kernel's own scratch (`Recorded.scratch`)


@dataclass
class _Task:
    kind: str                       # "launch" | "record" | "wait"
    stream: int
    launch: _Launch | None = None
    event: int | None = None
    record: _Task | None = None     # for a wait: the record it waits for
    done_at: float | None = None    # for a record: when its stream reached it
    arrived: float | None = None    # for a wait: when its stream reached it


@dataclass
class _Running:
    rec: KernelRecord
    phase: str                      # "launch" | "exec"
    remaining: float                # standalone microseconds left
    demand: float                   # bytes/us of HBM in the exec phase
    rank: int = 0                   # the device it runs on


class _Sim:
    def __init__(self, spec: DeviceSpec, strict: bool, rank: int = 0, shared: tuple[dict, dict, dict] | None = None):
        self.spec, self.cm, self.strict, self.rank = spec, CostModel(spec), strict, rank
        self.collectives: Counter = Counter()  # meetings so far per group (Collective.key)
        # block timings, shared by the ranks of one device type (`shared`): a block key says it all
        self.cache: dict[tuple, BlockSim] = shared[0] if shared else {}
        # id(a block's records) -> (them, their block key's number): a key is a tuple of every
        # event, hashed by walking them all, so the caches are keyed by its number
        self.keys: dict[int, tuple[list[Recorded], int]] = shared[1] if shared else {}
        self.numbers: dict[tuple, int] = shared[2] if shared else {}  # block_key -> its number
        self.programs: dict[tuple, _BlockProgram] = {}  # (block key number, core type) -> what timing it replays
        self.facts: dict[int, tuple] = {}  # id(op) -> what its events have in common (`_op_facts`)
        self.reported: set[int] = set()
        self.races: list[Race] = []
        self.arg_access: dict[a.KernelOp, list[tuple[bool, bool]]] = {}  # check_memory.arg_access per kernel
        self.resident: dict[int, int] = {}  # launch -> gm bytes it reads that L2 holds from earlier launches

    # -- the trace -------------------------------------------------------------------------

    def parse(self, records: Sequence[Record]) -> tuple[list[_Launch], dict[int, list[_Task]], list[int]]:
        launches: dict[int, _Launch] = {}
        tasks: dict[int, list[_Task]] = defaultdict(list)
        last_record: dict[int, _Task] = {}
        frontier: dict[int, frozenset[int]] = defaultdict(frozenset)
        record_deps: dict[int, frozenset[int]] = {}
        run_start: dict[int, int] = defaultdict(int)  # stream -> index of its current run's first task
        in_flight: list[tuple[list[_Launch], _Task, dict[int, int]]] = []  # a boundary's trailing sends
        for rec in records:
            if isinstance(rec, RepeatedBlock | ProgrammedBlock):
                if isinstance(rec, ProgrammedBlock) and rec.device != self.spec.name:
                    raise SimulationError(f"a recording programmed for {rec.device} is timed on {rec.device} only "
                                          f"(asked for {self.spec.name}): record it again")
                if rec.launch in launches:
                    launches[rec.launch].blocks[rec.block] = rec.records if isinstance(rec, RepeatedBlock) else rec
                continue
            if isinstance(rec, RunBoundary):
                fresh = []
                for stream in list(tasks):
                    queue = tasks[stream]
                    tail = _trailing_sends(tasks, stream, run_start)
                    queue.insert(tail, _Task("barrier", stream, event=rec.index))
                    sends = [t.launch for t in queue[tail + 1:] if t.kind == "launch"]
                    if sends:  # done when the stream has sent them all
                        done = _Task("record", stream, event=f"run {rec.index - 1} sent")
                        queue.append(done)
                        record_deps[id(done)] = frozenset(l.index for l in sends)
                        fresh.append((sends, done))
                for stream in list(tasks):
                    run_start[stream] = len(tasks[stream])
                in_flight += [(sends, done, dict(run_start)) for sends, done in fresh]
                continue
            ev = rec.event
            if ev.pipe == "host":
                stream = ev.stream if ev.stream is not None else 0
                if isinstance(ev.op, (a.LaunchOp, a.KernelOp)):
                    kernel = ev.op.kernel_op() if isinstance(ev.op, a.LaunchOp) else ev.op
                    launch = _Launch(ev.launch, ev.op, kernel, ev.kernel or "", stream,
                                     ev.detail.get("core_type", "vector"), int(ev.detail.get("block_dim", 1)),
                                     deps=frontier[stream], scratch=rec.scratch)
                    launches[ev.launch] = launch
                    frontier[stream] = frozenset({ev.launch})
                    first = ev.detail.get("replays")
                    if first is not None:  # a memoised launch: the first one's blocks (runtime/launch_memo.py)
                        launch.blocks = launches[first].blocks
                    tasks[stream].append(_Task("launch", stream, launch=launch))
                elif isinstance(ev.op, a.EventRecordOp):
                    task = _Task("record", stream, event=ev.detail.get("event"))
                    last_record[task.event] = task
                    record_deps[id(task)] = frontier[stream]
                    tasks[stream].append(task)
                elif isinstance(ev.op, a.EventWaitOp):
                    rtask = last_record.get(ev.detail.get("event"))
                    tasks[stream].append(_Task("wait", stream, event=ev.detail.get("event"), record=rtask))
                    if rtask is not None:
                        frontier[stream] = frontier[stream] | record_deps[id(rtask)]
                continue
            launch = launches.get(ev.launch)
            if launch is None:
                continue
            launch.blocks.setdefault(ev.block or 0, []).append(rec)
        for sends, done, starts in reversed(in_flight):  # the last first: a wait shifts what follows
            self._wait_for_sends(sends, done, starts, tasks, record_deps)
        io = [r for rec in records if isinstance(rec, Recorded) for r in rec.io]
        timed_bytes = any(isinstance(rec, RepeatedBlock | ProgrammedBlock) or (isinstance(rec, Recorded) and rec.accesses)
                          for rec in records)
        every = [seg for rw in self.segments.values() for seg in rw if len(seg[0])]
        self.io_bytes_touched = sum(_bytes_within(_merged_segments(clipped(seg, lo, hi) for seg in every), io)
                                    for lo, hi in address_windows(every)) if timed_bytes else None
        return [launches[k] for k in sorted(launches)], tasks, sorted(tasks)

    def _wait_for_sends(self, sends: list[_Launch], done: _Task, starts: dict[int, int],
                        tasks: dict[int, list[_Task]], record_deps: dict[int, frozenset[int]]) -> None:
        """The next run's first launch on each other stream that writes gm bytes the in-flight
        `sends` read waits for them (`done`); the launches after it on that stream follow it, and
        a later run starts after the sends' stream has passed its boundary."""
        sent = set().union(*(_sent_buffers(l) for l in sends))
        for stream, queue in tasks.items():
            if stream == done.stream:
                continue  # the sends' own stream keeps its order
            for i in range(starts.get(stream, 0), len(queue)):
                task = queue[i]
                if task.kind == "barrier":
                    break
                if task.kind == "launch" and _written_buffers(task.launch, self.arg_access) & sent:
                    queue.insert(i, _Task("wait", stream, event=done.event, record=done))
                    task.launch.deps = task.launch.deps | record_deps[id(done)]
                    break

    # -- one kernel ------------------------------------------------------------------------

    def cores(self, launch: _Launch) -> tuple[int, int, int]:
        """(blocks at once, AIC taken, AIV taken)."""
        spec = self.spec
        if launch.core_type == "vector":
            c = min(launch.block_dim, spec.vector_cores)
            return c, 0, c
        per = spec.vector_per_cube
        limit = spec.cube_cores
        takes_vector = launch.core_type == "mix" or not spec.split_cube_vector
        if takes_vector:
            limit = min(limit, spec.vector_cores // per)
        c = min(launch.block_dim, limit)
        return c, c, c * per if takes_vector else 0

    def block_key(self, records: list[Recorded] | ProgrammedBlock) -> int:
        """The number of the records' `block_key` (equal keys, one number)."""
        known = self.keys.get(id(records))  # a repeated block's records are its first block's list
        if known is None or known[0] is not records:
            key = getattr(records, "key", None)  # the recorder's (BlockRecords, ProgrammedBlock)
            if key is None:
                key = block_key(records)
            known = self.keys[id(records)] = (records, self.numbers.setdefault(key, len(self.numbers)))
        return known[1]

    def program(self, launch: _Launch, records: list[Recorded] | ProgrammedBlock) -> _BlockProgram:
        """The block's `_BlockProgram`, worked out once per block key and core type (a
        programmed recording's block has it)."""
        if isinstance(records, ProgrammedBlock):
            return records.program
        key = (self.block_key(records), launch.core_type)
        prog = self.programs.get(key)
        if prog is None:
            prog = self.programs[key] = _BlockReplay(self, launch.core_type, None).program(records)
        return prog

    def block(self, launch: _Launch, records: list[Recorded], blocks: float, hit: tuple[float, float]) -> BlockSim:
        key = (self.block_key(records), blocks, hit, launch.core_type)
        sim = self.cache.get(key)
        if sim is None:
            sim = self.cache[key] = _BlockReplay(self, launch.core_type, blocks, hit).time(self.program(launch, records))
        return sim

    def gm_traffic(self, launch: _Launch, records: list[Recorded]) -> tuple[int, int]:
        """Bytes one block's DMA reads from gm and writes to gm (a re-laying copy's whole blocks)."""
        prog = self.program(launch, records)
        return prog.reads, prog.writes

    def l2_hit(self, launch: _Launch, footprint: int) -> tuple[tuple[float, float, float, float], int]:
        """The shares of the launch's gm reads and writes L2 serves, then of its reads and
        writes of its own scratch (`CostModel.l2_hit_fraction` of their bytes, their distinct
        bytes and the gm `footprint`, for the scratch `CostModel.scratch_reuse_bytes` of the
        scratch bytes it touches), and the bytes L2 serves. A first read of a byte an earlier
        launch left in L2 hits (`l2_resident_reads`). A read of a scratch byte the kernel wrote
        is no first touch (a hand-off); of one it did not write, it is (a chain's last kernel
        reading what the others staged: what other kernels left in its scratch is not counted)."""
        reads = writes = s_reads = s_writes = 0
        for recs in launch.blocks.values():
            prog = self.program(launch, recs)
            reads, writes = reads + prog.reads, writes + prog.writes
            s_reads, s_writes = s_reads + prog.scratch_reads, s_writes + prog.scratch_writes
        rw = self.segments.get(launch.index)
        if not (reads or writes) or not rw:
            return (0.0, 0.0, 0.0, 0.0), 0
        r_seg, w_seg = rw
        r_s, w_s = (_merged_segments(clipped(seg, lo, hi) for lo, hi in launch.scratch) for seg in rw)
        s_read_distinct, s_write_distinct = _size(r_s), _size(w_s)
        s_touched = _size(_merged_segments([r_s, w_s]))
        cm = self.cm
        distance = cm.scratch_reuse_bytes(s_touched, s_reads + s_writes, reads + writes, footprint)
        hit = (cm.l2_hit_fraction(reads - s_reads, _size(r_seg) - s_read_distinct, footprint,
                                  self.resident.get(launch.index, 0)),
               cm.l2_hit_fraction(writes - s_writes, _size(w_seg) - s_write_distinct, footprint),
               cm.l2_hit_fraction(s_reads, s_touched - s_write_distinct, distance),
               cm.l2_hit_fraction(s_writes, s_write_distinct, distance))
        served = (reads - s_reads) * hit[0] + (writes - s_writes) * hit[1] + s_reads * hit[2] + s_writes * hit[3]
        return hit, round(served)

    def collective(self, launch: _Launch) -> KernelRecord:
        """An hccl launch: no core, no block replay; its time is set when its ranks meet."""
        ev = next((r.event for r in launch.blocks.get(0, ()) if r.event.pipe == a.HCCL_PIPE), None)
        if ev is None:
            raise SimulationError(f"hccl launch @{launch.name} recorded no collective (the trace is not of one run)")
        kind, group = ev.detail["collective"], tuple(ev.detail["ranks"])
        if kind in a.POINT_TO_POINT:
            ranks = (self.rank, group[0]) if kind == a.SendOp.KIND else (group[0], self.rank)
            series: tuple = ("p2p", *ranks, kind)
        else:
            ranks, series = group, ("group", group)
        n = self.collectives[series]
        self.collectives[series] += 1
        key = (*series[:-1], n) if kind in a.POINT_TO_POINT else (*series, n)
        kernel = launch.kernel
        nodes = tuple(dict.fromkeys(loc_names(kernel.location) if kernel is not None else ()))
        return KernelRecord(
            name=launch.name, launch=launch.index, stream=launch.stream, nodes=nodes, core_type=a.HCCL,
            block_dim=1, cores=0, cube_cores=0, vector_cores=0, waves=1, start_us=0.0, exec_start_us=0.0,
            end_us=0.0, standalone_exec_us=0.0, launch_us=self.cm.launch_overhead_us(), bound="link",
            bound_pipe=a.HCCL_PIPE, pipe_busy_us={}, unit_busy_us={}, critical_busy_us={}, hbm_bytes=0,
            footprint_bytes=ev.nbytes, flops={}, lower_bound_us=0.0, deps=tuple(sorted(launch.deps)),
            collective=Collective(kind, ranks, ev.nbytes, key))

    def kernel(self, launch: _Launch) -> KernelRecord:
        if launch.core_type == a.HCCL:
            return self.collective(launch)
        spec, cm = self.spec, self.cm
        c, cube, vec = self.cores(launch)
        touched = _size(_merged_segments(self.segments.get(launch.index, ())))
        hit, l2_hits = self.l2_hit(launch, touched)
        dispatch = cm.cycles_to_us(spec.block_dispatch_cycles)
        # the blocks that move gm bytes share the bandwidth; one with no tile to run (a shape
        # range's smaller size) takes none
        movers = {b for b, recs in launch.blocks.items() if any(self.gm_traffic(launch, recs))}
        share = max(1, min(c, len(movers)))
        sims = {b: self.block(launch, recs, share, hit) for b, recs in sorted(launch.blocks.items())}
        per_core, finish, spans = _place(launch.block_dim, sims, c, dispatch)
        # a block that runs while others have finished moves its bytes at a larger share:
        # re-time each mover at the mean number of movers running beside it
        shares = mean_concurrency({b: spans[b] for b in movers})
        if any(n < share - 0.005 for n in shares.values()):
            sims = {b: self.block(launch, recs, shares[b], hit) if b in shares else sims[b]
                    for b, recs in sorted(launch.blocks.items())}
            per_core, finish, spans = _place(launch.block_dim, sims, c, dispatch)
        makespan = max(finish, default=0.0)
        waves = -(-launch.block_dim // c)
        critical = max(range(c), key=lambda i: finish[i]) if c else 0
        crit_busy: Counter = Counter()
        for _, sim in per_core[critical]:
            crit_busy.update(sim.busy_us)
        busy: Counter = Counter()
        unit: Counter = Counter()
        flops: Counter = Counter()
        gm_bytes = references = 0
        for b in range(launch.block_dim):
            sim = sims.get(b)
            if sim is None:
                continue
            busy.update(sim.busy_us)
            unit.update(sim.unit_busy_us)
            flops.update(sim.flops)
            gm_bytes += sim.gm_bytes
            references += sim.reference_ops
        for sim in sims.values():  # each distinct block once, over all launches (and shares)
            if id(sim.races) not in self.reported:
                self.reported.add(id(sim.races))
                self.races.extend(sim.races)
        launch_us = cm.launch_overhead_us() + waves * dispatch
        top_pipe = max(crit_busy, key=crit_busy.__getitem__, default=None)
        top = crit_busy[top_pipe] if top_pipe else 0.0
        bound, bound_pipe = ("launch", "launch") if launch_us >= top or top_pipe is None else (
            BOUND_OF_PIPE[top_pipe], top_pipe)
        footprint = touched or gm_bytes
        resident = min(self.resident.get(launch.index, 0), footprint)
        lower = max(  # a mix block's AIVs share its vector work (ascend.sub_block)
            busy.get("M", 0.0) / max(cube or c, 1),
            busy.get("V", 0.0) / max(vec or c, 1),
            cm.gm_time_us(footprint, hit=resident / footprint if footprint else 0.0),
        )
        kernel = launch.kernel
        nodes = tuple(dict.fromkeys(loc_names(kernel.location) if kernel is not None else ())) or tuple(
            dict.fromkeys(loc_names(launch.op.location)))
        fallback = references > 0 or (kernel is not None and attr_names.FALLBACK in kernel.attributes)
        layout = kernel is not None and attr_names.LAYOUT_CONVERSION in kernel.attributes
        return KernelRecord(
            name=launch.name, launch=launch.index, stream=launch.stream, nodes=nodes,
            core_type=launch.core_type, block_dim=launch.block_dim, cores=c, cube_cores=cube,
            vector_cores=vec, waves=waves, start_us=0.0, exec_start_us=0.0, end_us=0.0,
            standalone_exec_us=makespan, launch_us=launch_us, bound=bound, bound_pipe=bound_pipe,
            pipe_busy_us=dict(busy), unit_busy_us=dict(unit), critical_busy_us=dict(crit_busy),
            hbm_bytes=gm_bytes - l2_hits, l2_hit_bytes=l2_hits, footprint_bytes=footprint, flops=dict(flops),
            lower_bound_us=lower,
            deps=tuple(sorted(launch.deps)), fallback=fallback, layout_conversion=layout, core0=per_core[0],
        )

    # -- streams and the device --------------------------------------------------------------

    def prepare(self, records: Sequence[Record], checked: dict | None = None) -> _RankPlan:
        """Parse and time each launch of one rank's run (its streams are scheduled by
        `_schedule`, with the other ranks' when there are several). `checked`: the gm segments
        of a recording another rank already checked for races (the same list: the same run)."""
        if checked is not None:
            self.segments = checked
        else:
            self.segments = launch_segments(records)
            for run in _runs(records):  # runs are ordered by their boundaries: each checked alone
                check_stream_races(run, self.segments)
        launches, tasks, streams = self.parse(records)
        self.resident = l2_resident_reads(launches, self.segments, self.spec.l2_bytes)
        recs = {l.index: self.kernel(l) for l in launches}
        if self.races and self.strict:
            raise SimulationError("\n".join(map(str, self.races)))
        return _RankPlan(self.rank, launches, tasks, streams, recs)

    def result(self, plan: _RankPlan) -> SimResult:
        kernels = [plan.recs[l.index] for l in plan.launches]
        events = plan.timeline
        latency = max([k.end_us for k in kernels] + [sp.end_us for sp in events], default=0.0)

        launch_us = self.cm.launch_overhead_us()

        def timeline() -> list[Span]:  # holds the kernels, not the simulator (nor its records)
            out = [*events, *kernel_spans(kernels, launch_us)]
            out.sort(key=lambda sp: (sp.start_us, sp.track != "stream"))
            return out

        pipe_busy: Counter = Counter()
        for k in kernels:
            pipe_busy.update(k.pipe_busy_us)
        return SimResult(self.spec, latency, kernels, dict(pipe_busy), self.races, timeline, tuple(plan.streams),
                         io_bytes_touched=self.io_bytes_touched, rank=self.rank)

    def run(self, records: Sequence[Record]) -> SimResult:
        plan = self.prepare(records)
        _schedule([plan], self.spec, None)
        return self.result(plan)


def kernel_spans(kernels: Iterable[KernelRecord], lo: float) -> Iterable[Span]:
    """Each kernel's spans on the timeline: the kernel, its launch phase (`lo` us) and its first
    core's ops."""
    for k in kernels:
        args = {"kernel": k.name, "launch": k.launch, "bound": k.bound, "block_dim": k.block_dim,
                "cores": k.cores, "hbm_bytes": k.hbm_bytes, "l2_hit_bytes": k.l2_hit_bytes, "launch_us": k.launch_us,
                "nodes": list(k.nodes)}
        yield Span("stream", k.stream, None, k.display_name, k.start_us, k.end_us, "kernel", args)
        if lo > 0:
            yield Span("stream", k.stream, None, "launch", k.start_us, k.start_us + lo, "launch", {})
        stretch = k.exec_us / k.standalone_exec_us if k.standalone_exec_us > 0 else 1.0
        for begin, sim in k.core0:
            base = k.exec_start_us + begin * stretch
            for sp in sim.spans:
                yield Span("pipe", k.stream, sp.pipe, sp.name, base + sp.start_us * stretch,
                           base + sp.end_us * stretch, "op", {"bytes": sp.nbytes, "kernel": k.name})


def _place(block_dim: int, sims: Mapping[int, BlockSim], cores: int, dispatch: float
           ) -> tuple[dict[int, list[tuple[float, BlockSim]]], list[float], dict[int, tuple[float, float]]]:
    """List-schedules a kernel's blocks, in order, on its `cores`, each preceded by `dispatch`
    us: per core its (start, block) pairs, each core's finish, each block's (start, end)."""
    heap = [(0.0, core) for core in range(cores)]
    per_core: dict[int, list[tuple[float, BlockSim]]] = defaultdict(list)
    finish = [0.0] * cores
    spans: dict[int, tuple[float, float]] = {}
    for b in range(block_dim):
        sim = sims.get(b) or BlockSim(0.0, {}, {}, [], 0, {}, [])
        t, core = heapq.heappop(heap)
        per_core[core].append((t + dispatch, sim))
        finish[core] = t + dispatch + sim.time_us
        spans[b] = (t + dispatch, finish[core])
        heapq.heappush(heap, (finish[core], core))
    return per_core, finish, spans


def mean_concurrency(spans: Mapping[int, tuple[float, float]]) -> dict[int, float]:
    """For each block's (start, end), the time-weighted mean of the blocks running at once
    over it (itself included), to 0.01: the share of the bandwidth it moved its bytes at."""
    if not spans:
        return {}
    starts = np.array([s for s, _ in spans.values()])
    ends = np.array([e for _, e in spans.values()])
    points = np.unique(np.concatenate([starts, ends]))
    running = (np.searchsorted(np.sort(starts), points, side="right")
               - np.searchsorted(np.sort(ends), points, side="right"))[:-1]
    area = np.concatenate([[0.0], np.cumsum(running * np.diff(points))])  # its integral up to each point
    out = {}
    for b, (s, e) in spans.items():
        if e - s <= 0:
            out[b] = 1.0
            continue
        mean = (area[np.searchsorted(points, e)] - area[np.searchsorted(points, s)]) / (e - s)
        out[b] = max(1.0, round(float(mean), 2))
    return out


def _trailing_sends(tasks: dict[int, list[_Task]], stream: int, run_start: dict[int, int]) -> int:
    """Where the sends that end `stream`'s current run begin (with the event waits and records
    among them), or the end of its queue: when the run does not end in a send, or when
    another stream of the run waits for an event recorded among them (that stream could not
    finish the run while they were in flight)."""
    queue = tasks[stream]
    i = end = len(queue)
    while i > run_start[stream] and queue[i - 1].kind in ("launch", "wait", "record"):
        if queue[i - 1].kind == "launch" and not _is_send(queue[i - 1].launch):
            break
        i -= 1
    while i < end and queue[i].kind != "launch":  # it starts at its first send
        i += 1
    recorded = {id(t) for t in queue[i:] if t.kind == "record"}
    if recorded and any(t.kind == "wait" and id(t.record) in recorded
                        for st, q in tasks.items() if st != stream for t in q[run_start[st]:]):
        return end
    return i


def _is_send(launch: _Launch) -> bool:
    """An hccl launch of a send whose buffers are the workspace's (gm allocs: ascend-plan-memory
    keeps what a send reads apart from every other buffer), so the next run can tell which of
    its launches would overwrite them. A run's inputs are the host's to refill: a send of one
    is not let run on."""
    return (isinstance(launch.op, a.LaunchOp) and launch.kernel is not None and sends(launch.kernel)
            and all(_root_alloc(v) is not None for v in launch.op.args))


def _root_alloc(value: SSAValue) -> a.AllocOp | None:
    """The `ascend.alloc` a value is a view of, or None (a function argument, a constant)."""
    while isinstance(value, OpResult) and isinstance(value.op, _VIEW_OPS):
        value = value.op.operands[0]
    return value.op if isinstance(value, OpResult) and isinstance(value.op, a.AllocOp) else None


def _sent_buffers(launch: _Launch) -> set[a.AllocOp]:
    return {_root_alloc(v) for v in launch.op.args}


def _written_buffers(launch: _Launch, access: dict[a.KernelOp, list[tuple[bool, bool]]]) -> set[a.AllocOp]:
    """The gm allocs a launch writes (an argument its kernel writes through, or a view of one);
    `access`: `arg_access` per kernel, filled as kernels are met."""
    if not isinstance(launch.op, a.LaunchOp) or launch.kernel is None:
        return set()
    if launch.kernel not in access:
        access[launch.kernel] = arg_access(launch.kernel)
    return {r for v, (_, written) in zip(launch.op.args, access[launch.kernel])
            if written and (r := _root_alloc(v)) is not None}


def _runs(records: Sequence[Record | RunBoundary]) -> list[list[Record]]:
    runs: list[list[Record]] = [[]]
    for rec in records:
        if isinstance(rec, RunBoundary):
            runs.append([])
        else:
            runs[-1].append(rec)
    return runs


@dataclass
class _RankPlan:
    """One rank's launches and stream tasks, scheduled by `_schedule`."""

    rank: int
    launches: list[_Launch]
    tasks: dict[int, list[_Task]]
    streams: list[int]
    recs: dict[int, KernelRecord]
    timeline: list[Span] = field(default_factory=list)


def _schedule(plans: Sequence[_RankPlan], spec: DeviceSpec,
              price: Callable[[Collective], tuple[float, str]] | None) -> None:
    """Run every rank's streams on its own device (cores, HBM) in one clock: sets each
    kernel's start / exec start / end and fills each plan's timeline. A collective starts
    when every member's stream has reached it (`Collective.key`) and takes `price(it)`'s time
    on each member (its algorithm is written on the record); it takes no AI core and no HBM
    share (its reduction's bytes are in its price)."""
    cm = CostModel(spec)
    bw = spec.hbm_bytes_per_s / 1e6  # bytes per us, per device
    lo = cm.launch_overhead_us()
    by_rank = {p.rank: p for p in plans}
    free_cube = {p.rank: spec.cube_cores for p in plans}
    free_vec = {p.rank: spec.vector_cores for p in plans}
    head = {(p.rank, s): 0 for p in plans for s in p.streams}
    busy_stream = {(p.rank, s): False for p in plans for s in p.streams}
    core_queue: dict[int, deque[KernelRecord]] = {p.rank: deque() for p in plans}
    running: list[_Running] = []
    meetings: dict[tuple, list[tuple[int, KernelRecord]]] = {}
    barriers: dict[tuple[int, int], set[int]] = {}
    barrier_streams: Counter = Counter()  # (rank, run boundary) -> streams that stop at it
    for p in plans:
        for s in p.streams:
            for task in p.tasks[s]:
                if task.kind == "barrier":
                    barrier_streams[p.rank, task.event] += 1
    t = 0.0

    def advance_streams() -> bool:
        moved = False
        for p in plans:
            for s in p.streams:
                tasks = p.tasks[s]
                while not busy_stream[p.rank, s] and head[p.rank, s] < len(tasks):
                    task = tasks[head[p.rank, s]]
                    if task.kind == "record":
                        task.done_at = t
                        p.timeline.append(Span("stream", s, None, f"record event {task.event}", t, t, "event",
                                               {"event": task.event}))
                    elif task.kind == "wait":
                        if task.arrived is None:
                            task.arrived = t
                        r = task.record
                        if r is not None and r.done_at is None:
                            break
                        if t > task.arrived + _EPS:
                            p.timeline.append(Span("stream", s, None, f"wait event {task.event}", task.arrived, t,
                                                   "event", {"event": task.event}))
                    elif task.kind == "barrier":  # the end of a run: every stream of the device
                        waiting = barriers.setdefault((p.rank, task.event), set())
                        waiting.add(s)
                        if len(waiting) < barrier_streams[p.rank, task.event]:
                            break
                    else:
                        rec = p.recs[task.launch.index]
                        rec.start_us = t
                        busy_stream[p.rank, s] = True
                        if lo > 0:
                            running.append(_Running(rec, "launch", lo, 0.0, p.rank))
                        else:
                            ready(rec, p.rank)
                    head[p.rank, s] += 1
                    moved = True
        return moved

    def ready(rec: KernelRecord, rank: int) -> None:
        """A launch past its launch phase: to the core queue, or to its collective's meeting."""
        c = rec.collective
        if c is None:
            core_queue[rank].append(rec)
            return
        if len(c.ranks) > 1 and price is None:
            raise SimulationError(f"@{rec.name} is a {c.kind} among ranks {list(c.ranks)}: simulate the ranks "
                                  f"together (a multi-device model's profile), one device cannot time it")
        missing = [m for m in c.ranks if m not in by_rank]
        if missing and len(c.ranks) > 1:
            raise SimulationError(f"@{rec.name} ({c.kind} among ranks {list(c.ranks)}) on rank {rank}: rank(s) "
                                  f"{missing} are not in this run")
        if c.kind in a.POINT_TO_POINT and len(c.ranks) > 1:
            p2p_ready(rec, rank)
            return
        arrived = meetings.setdefault(c.key, [])
        arrived.append((rank, rec))
        if len(arrived) < len(set(c.ranks)):
            return
        del meetings[c.key]
        kinds = {(r.collective.kind, r.collective.nbytes) for _, r in arrived}
        if len({k for k, _ in kinds} - set(a.POINT_TO_POINT)) > 1 or len({n for _, n in kinds}) > 1:
            raise SimulationError(f"the ranks of {c.kind} #{c.key[-1]} among {list(c.ranks)} disagree: "
                                  + ", ".join(f"rank {m}: {r.collective.kind} of {r.collective.nbytes} bytes"
                                              for m, r in arrived))
        cost, algorithm = price(c) if price is not None and len(c.ranks) > 1 else (0.0, "")
        for m, r in arrived:
            start(r, m, cost, algorithm)

    def grant_cores() -> bool:
        moved = False
        for p in plans:
            queue = core_queue[p.rank]
            while queue:
                rec = queue[0]
                if rec.cube_cores > free_cube[p.rank] or rec.vector_cores > free_vec[p.rank]:
                    break
                queue.popleft()
                free_cube[p.rank] -= rec.cube_cores
                free_vec[p.rank] -= rec.vector_cores
                rec.exec_start_us = t
                moved = True
                if rec.standalone_exec_us <= 0:
                    finish(rec, p.rank)
                else:
                    demand = rec.hbm_bytes / rec.standalone_exec_us
                    running.append(_Running(rec, "exec", rec.standalone_exec_us, demand, p.rank))
        return moved

    def start(rec: KernelRecord, rank: int, cost: float, algorithm: str) -> None:
        """A collective's exec phase: `cost` us on its rank, priced by `algorithm`."""
        rec.collective = replace(rec.collective, algorithm=algorithm)
        rec.exec_start_us = t
        rec.standalone_exec_us = rec.lower_bound_us = cost
        if cost <= 0:
            finish(rec, rank)
        else:
            running.append(_Running(rec, "exec", cost, 0.0, rank))

    # Point to point: a send is buffered (docs/multi-device.md). Its transfer starts when it is
    # launched and the receiver's staging buffer for the link is free (the link's previous
    # message received); the receive then copies the arrived bytes out of staging - waiting
    # for them if they have not arrived.
    arrived_at: dict[tuple, KernelRecord] = {}                 # message key -> its send, arrived
    posted: dict[tuple, tuple[int, KernelRecord]] = {}         # receives waiting for their message
    received: Counter = Counter()                              # (sender, receiver) -> messages received
    held: dict[tuple, list[tuple[int, KernelRecord]]] = defaultdict(list)  # sends waiting for staging

    def p2p_ready(rec: KernelRecord, rank: int) -> None:
        c = rec.collective
        link = c.ranks  # (sender, receiver)
        if c.kind == a.SendOp.KIND:
            if received[link] < c.key[-1]:
                held[link].append((rank, rec))
            else:
                start(rec, rank, *price(c))
            return
        if c.key in arrived_at:
            copy_out(rec, rank)
        else:
            posted[c.key] = (rank, rec)

    def copy_out(rec: KernelRecord, rank: int) -> None:
        send = arrived_at.pop(rec.collective.key)
        if send.collective.nbytes != rec.collective.nbytes:
            raise SimulationError(f"the ranks of send / recv #{rec.collective.key[-1]} between {list(rec.collective.ranks)} "
                                  f"disagree: a send of {send.collective.nbytes} bytes, a recv of {rec.collective.nbytes}")
        start(rec, rank, 2 * rec.collective.nbytes / bw, "staging copy")  # read from staging, write out

    def finish(rec: KernelRecord, rank: int) -> None:
        rec.end_us = t
        free_cube[rank] += rec.cube_cores
        free_vec[rank] += rec.vector_cores
        busy_stream[rank, rec.stream] = False
        c = rec.collective
        if c is None or c.kind not in a.POINT_TO_POINT or len(c.ranks) < 2:
            return
        if c.kind == a.SendOp.KIND:
            arrived_at[c.key] = rec
            if c.key in posted:
                r, recv = posted.pop(c.key)
                copy_out(recv, r)
        else:
            received[c.ranks] += 1
            waiting = held[c.ranks]
            while waiting and waiting[0][1].collective.key[-1] <= received[c.ranks]:
                r, send = waiting.pop(0)
                start(send, r, *price(send.collective))

    while True:
        while advance_streams() | grant_cores():
            pass
        if not running:
            stuck = [f"{'rank %d ' % p.rank if len(plans) > 1 else ''}stream {s}: {p.tasks[s][head[p.rank, s]].kind}"
                     for p in plans for s in p.streams if head[p.rank, s] < len(p.tasks[s])]
            stuck += [f"rank {m}: @{r.name} waits for the other ranks of its {r.collective.kind}"
                      for waiting in meetings.values() for m, r in waiting]
            stuck += [f"rank {m}: @{r.name} waits for its message from rank {r.collective.ranks[0]}"
                      for m, r in posted.values()]
            stuck += [f"rank {m}: @{r.name} waits for rank {r.collective.ranks[1]} to receive its earlier message"
                      for waiting in held.values() for m, r in waiting]
            if stuck or any(core_queue.values()):
                raise SimulationError("the streams cannot finish (" + "; ".join(stuck) + ")")
            break
        rates = [0.0] * len(running)
        for p in plans:  # each device's HBM shared among its own kernels
            mine = [i for i, r in enumerate(running) if r.rank == p.rank]
            shares = _fair_rates([running[i].demand if running[i].phase == "exec" else 0.0 for i in mine], bw)
            for i, rate in zip(mine, shares):
                rates[i] = rate
        dt = min(r.remaining / rate for r, rate in zip(running, rates))
        t += dt
        still: list[_Running] = []
        launched: list[_Running] = []
        n = len(running)
        for r, rate in zip(running[:n], rates):
            r.remaining -= rate * dt
            if r.remaining > _EPS * max(1.0, t):
                still.append(r)
            elif r.phase == "launch":
                launched.append(r)
            else:
                finish(r.rec, r.rank)
        running[:] = still + running[n:]  # and what a finish started (a receive whose message arrived)
        for r in launched:  # after the update: a collective that meets starts running
            ready(r.rec, r.rank)


def _fair_rates(demands: Sequence[float], bw: float) -> list[float]:
    """Max-min fair shares of ``bw`` among ``demands``: each rate is share / demand (1 when the
    demand is met)."""
    if sum(demands) <= bw:
        return [1.0] * len(demands)
    rates = [1.0] * len(demands)
    order = sorted(range(len(demands)), key=demands.__getitem__)
    left, n = bw, len(order)
    for i, k in enumerate(order):
        d = demands[k]
        give = min(d, left / (n - i))
        left -= give
        if d > 0:
            rates[k] = give / d
    return rates


def launch_segments(records: Sequence[Record]) -> dict[int, tuple[tuple[np.ndarray, np.ndarray], ...]]:
    """The gm bytes each launch reads and writes: launch -> (reads, writes), each as sorted,
    disjoint [start, end) segments. A memoised launch (``replays`` in its event) has the bytes
    of the launch it replays, moved to where its arguments are (``moves``)."""
    gm: dict[int, tuple[list[Access], list[Access]]] = {}
    repeated: dict[int, tuple[list, list]] = defaultdict(lambda: ([], []))
    replays: dict[int, tuple[int, tuple]] = {}
    for rec in records:
        if isinstance(rec, RepeatedBlock | ProgrammedBlock):
            repeated[rec.launch][0].append(rec.reads)
            repeated[rec.launch][1].append(rec.writes)
            continue
        if isinstance(rec, RunBoundary):
            continue
        ev = rec.event
        if ev.pipe == "host":
            if isinstance(ev.op, (a.LaunchOp, a.KernelOp)):
                gm[ev.launch] = ([], [])
                if "replays" in ev.detail:
                    replays[ev.launch] = (ev.detail["replays"], ev.detail.get("moves", ()))
            continue
        lists = gm.get(ev.launch)
        if lists is not None:
            for acc in rec.accesses:
                if acc.space == "gm":
                    lists[acc.write].append(acc)
    out = {i: (_merged_segments([_segments(reads), *repeated[i][0]]), _merged_segments([_segments(writes), *repeated[i][1]]))
           for i, (reads, writes) in gm.items() if i not in replays}
    for i, (first, moved) in replays.items():
        out[i] = tuple(_moved(seg, moved) for seg in out[first])
    return out


def l2_resident_reads(launches: Sequence[_Launch], segments: Mapping[int, tuple[tuple[np.ndarray, np.ndarray], ...]],
                      l2_bytes: int) -> dict[int, int]:
    """Per launch, the distinct gm bytes it reads (outside its own scratch) that an earlier
    launch left in L2. A byte is left there when its last touch (a read or a write: L2
    allocates on both) on some stream was by a launch P that finished before this one started
    (stream order and events) and P's footprint plus those of the launches between the two in
    host order add up to at most `l2_bytes`: an LRU keeps a byte while fewer than its capacity
    in distinct bytes are touched after it. The sum counts a byte two launches touch twice, and
    a touch by a launch running beside this one leaves nothing: both err towards HBM."""
    order = [l for l in launches if l.index in segments]
    if not order:
        return {}
    pos = {l.index: k for k, l in enumerate(order)}
    streams = sorted({l.stream for l in order})
    col = np.array([streams.index(l.stream) for l in order], np.int64)
    seq = np.zeros(len(order), np.int64)  # a launch's place on its stream
    clock = np.zeros((len(order), len(streams)), np.int64)  # per stream, how many of its launches precede
    count = [0] * len(streams)
    for k, l in enumerate(order):
        seq[k] = count[col[k]]
        count[col[k]] += 1
        for d in l.deps:
            j = pos.get(d)
            if j is not None:
                np.maximum(clock[k], clock[j], out=clock[k])
                clock[k, col[j]] = max(clock[k, col[j]], seq[j] + 1)
    touched = [_merged_segments(segments[l.index]) for l in order]
    before = np.cumsum([0] + [_size(t) for t in touched])  # footprint of the launches before each
    resident = np.zeros(len(order), np.int64)
    every = [seg for l, t in zip(order, touched) for seg in (segments[l.index][0], t) if len(seg[0])]
    for lo, hi in address_windows(every):
        part = [(clipped(segments[l.index][0], lo, hi), clipped(t, lo, hi)) for l, t in zip(order, touched)]
        ends = [x for r, t in part for x in (*r, *t) if len(x)]
        if not ends:
            continue
        bounds = np.unique(np.concatenate(ends))
        # piece x stream -> position of the piece's last toucher on that stream: a launch
        # beside the reader may have touched it last, and one before it on another stream too
        last = np.full((max(len(bounds) - 1, 0), len(streams)), -1, np.int64)
        for k, (l, (reads, mine)) in enumerate(zip(order, part)):
            if not len(mine[0]):
                continue
            for seg, sign in ((reads, 1), *((clipped(reads, s_lo, s_hi), -1) for s_lo, s_hi in l.scratch)):
                p = _pieces(bounds, *seg)
                if not len(p):
                    continue
                t = last[p]
                was = np.maximum(t, 0)
                kept = ((t >= 0) & (seq[was] < clock[k, col[was]]) & (before[k] - before[was] <= l2_bytes)).any(axis=1)
                resident[k] += sign * int((bounds[p + 1] - bounds[p])[kept].sum())
            last[_pieces(bounds, *mine), col[k]] = k
    return {l.index: int(n) for l, n in zip(order, resident) if n}


def _moved(seg: tuple[np.ndarray, np.ndarray], moves: Sequence[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Segments with the bytes inside each (lo, hi, new lo) moved by new lo - lo; bytes outside
    every [lo, hi) stay."""
    s, e = seg
    if not len(s) or not moves:
        return seg
    lo = np.array([m[0] for m in moves], np.int64)
    hi = np.array([m[1] for m in moves], np.int64)
    out_s, out_e = [], []
    for x, y, new in moves:
        cs, ce = np.maximum(s, x), np.minimum(e, y)
        keep = ce > cs
        out_s.append(cs[keep] + (new - x))
        out_e.append(ce[keep] + (new - x))
    ms, me = _merged(lo, hi)
    big = np.iinfo(np.int64).max
    for x, y in zip(np.concatenate([[-big], me]).tolist(), np.concatenate([ms, [big]]).tolist()):
        cs, ce = np.maximum(s, x), np.minimum(e, y)
        keep = ce > cs
        out_s.append(cs[keep])
        out_e.append(ce[keep])
    return _merged_segments([(np.concatenate(out_s), np.concatenate(out_e))])


WINDOW_ENDS = 1 << 22
"""Segments per window of gm addresses (`address_windows`): what the whole-run passes over
every launch's segments (stream races, the graph's bytes touched) hold at once. Two 7B layers
at 8 x 4096 have 1.6 million segments (each row of a weight's column range is one), the 13B's
40 layers tens of millions: merged and sorted whole, they took ~2 GB beside the recording."""


def address_windows(segs: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[tuple[int, int]]:
    """[lo, hi) windows covering every gm address, cut where about `WINDOW_ENDS` of the
    segments `segs` (each sorted, disjoint) fall between two cuts (chosen from a sample of
    their starts); one window when they are fewer."""
    total = sum(len(seg[0]) for seg in segs)
    every = [(0, np.iinfo(np.int64).max)]
    if total <= WINDOW_ENDS:
        return every
    k = -(-total // WINDOW_ENDS)
    step = max(1, total // (64 * k))
    sample = np.sort(np.concatenate([seg[0][::step] for seg in segs if len(seg[0])]))
    cuts = np.unique(sample[(np.arange(1, k) * len(sample)) // k]).tolist()
    edges = [every[0][0], *cuts, every[0][1]]
    return list(zip(edges[:-1], edges[1:]))


def _size(seg: tuple[np.ndarray, np.ndarray]) -> int:
    """Bytes of sorted, disjoint segments."""
    return int((seg[1] - seg[0]).sum())


def clipped(seg: tuple[np.ndarray, np.ndarray], lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The part of sorted, disjoint segments inside [lo, hi)."""
    s, e = seg
    first, last = np.searchsorted(e, lo, "right"), np.searchsorted(s, hi, "left")
    return np.maximum(s[first:last], lo), np.minimum(e[first:last], hi)


def _merged_segments(segs: Iterable[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The union of several sets of segments, as sorted, disjoint segments."""
    segs = [seg for seg in segs if len(seg[0])]
    if not segs:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return _merged(np.concatenate([seg[0] for seg in segs]), np.concatenate([seg[1] for seg in segs]))


# ---------------------------------------------------------------------------
# Races between kernels on different streams (multi-stream scheduling, issue 9).
# ---------------------------------------------------------------------------


class StreamRaceError(SimulationError):
    """Two kernels on different streams touch overlapping gm bytes, at least one writing, and
    neither stream order nor an event orders them."""


@dataclass(frozen=True)
class StreamRace:
    first: str            # "@k1 (launch 3, stream 0)": the earlier launch in host order
    second: str
    kind: str             # "read-after-write" | "write-after-read" | "write-after-write"
    buffer: str           # e.g. "%b bytes [0, 1024)"

    def __str__(self) -> str:
        return (f"race between {self.first} and {self.second}: both touch {self.buffer} ({self.kind}) "
                f"and no event orders them; run ascend-insert-events after changing streams or buffers")


def _io_ranges(op: a.LaunchOp, arrays: Sequence[Any]) -> tuple[tuple[int, int], ...]:
    """[lo, hi) of the launch's arguments that are (views of) graph inputs, outputs or
    constants: host function arguments other than the workspace, and ascend.constant results."""
    out = []
    for value, x in zip(op.args, arrays):
        while isinstance(value, OpResult) and isinstance(value.op, _VIEW_OPS):
            value = value.op.operands[0]
        graph_arg = isinstance(value, BlockArgument) and not _is_workspace(value)
        if (graph_arg or isinstance(value, OpResult) and isinstance(value.op, a.ConstantOp)) \
                and isinstance(x, np.ndarray) and x.size:
            lo, hi = byte_extent(x)
            out.append((lo, hi))
    return tuple(out)


def _is_workspace(arg: BlockArgument) -> bool:
    host = arg.owner.parent_op()
    attrs = getattr(host, "arg_attrs", None)
    if attrs is None or arg.index >= len(attrs.data):
        return False
    return attr_names.WORKSPACE in attrs.data[arg.index].data


def _scratch_ranges(op: a.LaunchOp, arrays: Sequence[Any]) -> tuple[tuple[int, int], ...]:
    """[lo, hi) of the launch's arguments that are its kernel's own scratch (`geir.scratch`:
    the last ones)."""
    count = op.kernel_op().attributes.get(attr_names.SCRATCH)
    if count is None:
        return ()
    n = count.value.data
    return tuple(byte_extent(x) for x in arrays[len(arrays) - n:] if isinstance(x, np.ndarray) and x.size)


def _on_scratch(value: SSAValue) -> bool:
    """Whether a kernel's gm operand is (a view of) one of its own scratch arguments."""
    while isinstance(value, OpResult) and isinstance(value.op, _VIEW_OPS):
        value = value.op.operands[0]
    if not isinstance(value, BlockArgument):
        return False
    kernel = value.owner.parent_op()
    count = kernel.attributes.get(attr_names.SCRATCH) if isinstance(kernel, a.KernelOp) else None
    return count is not None and value.index >= len(value.owner.args) - count.value.data


def _launch_args(op: a.LaunchOp, arrays: Sequence[Any]) -> tuple[tuple[str, int, int], ...]:
    out = []
    for value, x in zip(op.args, arrays):
        if isinstance(x, np.ndarray) and x.size:
            lo, hi = byte_extent(x)
            out.append((value.name_hint or "?", lo, hi))
    return tuple(out)


def _bytes_within(segments: tuple[np.ndarray, np.ndarray], ranges: Sequence[tuple[int, int]]) -> int:
    """Bytes of the (sorted, disjoint) segments that lie inside the union of the [lo, hi) ranges."""
    s, e = segments
    if not len(s) or not ranges:
        return 0
    lo, hi = _merged(np.array([r[0] for r in ranges], np.int64), np.array([r[1] for r in ranges], np.int64))
    total = 0
    for a_lo, a_hi in zip(lo.tolist(), hi.tolist()):
        first, last = np.searchsorted(e, a_lo, "right"), np.searchsorted(s, a_hi, "left")
        total += int((np.minimum(e[first:last], a_hi) - np.maximum(s[first:last], a_lo)).sum())
    return total


def _merged(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[s, e) intervals as sorted, disjoint segments."""
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    new = np.empty(len(s), bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    return s[first], np.maximum.reduceat(e, first)


def _segments(accesses: Sequence[Access]) -> tuple[np.ndarray, np.ndarray]:
    """The bytes the accesses cover as sorted, disjoint [start, end) segments."""
    return _row_segments([(acc.lo, acc.hi, acc.starts, acc.run) for acc in accesses])


def _row_segments(rows: Sequence[tuple[int, int, np.ndarray | None, int]]) -> tuple[np.ndarray, np.ndarray]:
    """`_segments` of `_rows` results."""
    if not rows:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    starts, ends = [], []
    for lo, hi, rs, run in rows:
        s = rs if rs is not None else np.array([lo], np.int64)
        starts.append(s)
        ends.append(s + (run if rs is not None else hi - lo))
    return _merged(np.concatenate(starts), np.concatenate(ends))


def _pieces(bounds: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Indices of the elementary pieces [bounds[p], bounds[p+1]) the segments cover."""
    ps, pe = np.searchsorted(bounds, s), np.searchsorted(bounds, e)
    n = pe - ps
    total = int(n.sum())
    if total == 0:
        return np.empty(0, np.int64)
    return np.arange(total) - np.repeat(np.cumsum(n) - n, n) + np.repeat(ps, n)


def stream_races(records: Sequence[Record],
                 segments: Mapping[int, tuple[tuple[np.ndarray, np.ndarray], ...]] | None = None) -> list[StreamRace]:
    """The unordered conflicting pairs of kernels of a recorded run (at most one per pair).

    Happens-before is stream order plus events (a wait follows the latest record of its event
    before it in host order, as the simulator runs it), as one vector clock per stream. gm
    bytes are cut into elementary pieces at every segment end, a window of addresses at a
    time (`address_windows`); walking the launches in host
    order (a serialisation of happens-before), each piece keeps its last writer and, per
    stream, its last reader - earlier readers on a stream are ordered before the last one -
    so each launch is checked against what it must follow in a few numpy operations.
    `segments`: ``launch_segments(records)`` when the caller has them."""
    order: list[int] = []
    stream: dict[int, int] = {}
    vc_of: dict[int, dict[int, int]] = {}
    name: dict[int, str] = {}
    args: dict[int, tuple] = {}
    clock: dict[int, dict[int, int]] = defaultdict(dict)
    recorded: dict[Any, dict[int, int]] = {}
    for rec in records:
        if isinstance(rec, RepeatedBlock | ProgrammedBlock):
            continue
        ev = rec.event
        if ev.pipe == "host":
            s = ev.stream if ev.stream is not None else 0
            if isinstance(ev.op, (a.LaunchOp, a.KernelOp)):
                mine = clock[s]
                order.append(ev.launch)
                stream[ev.launch], vc_of[ev.launch] = s, dict(mine)
                name[ev.launch], args[ev.launch] = ev.kernel or "?", rec.args
                mine[s] = mine.get(s, 0) + 1
            elif isinstance(ev.op, a.EventRecordOp):
                recorded[ev.detail.get("event")] = dict(clock[s])
            elif isinstance(ev.op, a.EventWaitOp):
                snap = recorded.get(ev.detail.get("event"), {})
                mine = clock[s]
                for t, n in snap.items():
                    if n > mine.get(t, 0):
                        mine[t] = n
    if len(set(stream.values())) < 2:
        return []
    streams = sorted(set(stream.values()))
    every = launch_segments(records) if segments is None else segments
    segs = {i: every[i] for i in order if i in every and any(len(seg[0]) for seg in every[i])}
    races: list[StreamRace] = []
    seen: set[tuple[int, int]] = set()

    def report(x: int, y: int, kind: str, lo: int, hi: int) -> None:
        if (x, y) in seen:
            return
        seen.add((x, y))
        where = next(((nm, alo) for nm, alo, ahi in args.get(y, ()) + args.get(x, ()) if alo <= lo < ahi), None)
        buf = (f"%{where[0]} bytes [{lo - where[1]}, {hi - where[1]})" if where else f"gm bytes [{lo:#x}, {hi:#x})")
        races.append(StreamRace(f"@{name[x]} (launch {x}, stream {stream[x]})",
                                f"@{name[y]} (launch {y}, stream {stream[y]})", kind, buf))

    # each window of addresses alone: a piece never crosses a window's edge
    for lo, hi in address_windows([seg for rw in segs.values() for seg in rw]):
        part = {i: tuple(clipped(seg, lo, hi) for seg in rw) for i, rw in segs.items()}
        part = {i: rw for i, rw in part.items() if any(len(seg[0]) for seg in rw)}
        if part:
            _window_races(order, stream, vc_of, streams, part, report)
    return races


def _window_races(order: Sequence[int], stream: Mapping[int, int], vc_of: Mapping[int, Mapping[int, int]],
                  streams: Sequence[int], segs: Mapping[int, tuple[tuple[np.ndarray, np.ndarray], ...]],
                  report: Callable[[int, int, str, int, int], None]) -> None:
    """`stream_races`' walk over the launches for the gm bytes of `segs` (one window)."""
    col = {s: k for k, s in enumerate(streams)}
    bounds = np.unique(np.concatenate([x for rw in segs.values() for seg in rw for x in seg]))
    n = max(len(bounds) - 1, 0)
    w_launch = np.full(n, -1, np.int64)
    w_col = np.zeros(n, np.int64)
    w_seq = np.zeros(n, np.int64)
    r_seq = np.full((n, len(streams)), -1, np.int64)
    on_stream: dict[int, list[int]] = defaultdict(list)   # stream column -> its launches in order
    empty = ((np.empty(0, np.int64),) * 2,) * 2

    def piece(p: int) -> tuple[int, int]:
        return int(bounds[p]), int(bounds[p + 1])

    for i in order:
        c = col[stream[i]]
        if i not in segs:
            on_stream[c].append(i)
            continue
        vc = np.array([vc_of[i].get(s, 0) for s in streams], np.int64)
        seq = int(vc_of[i].get(stream[i], 0))
        (rs, re_), (ws, we) = segs.get(i, empty)
        reads, writes = _pieces(bounds, rs, re_), _pieces(bounds, ws, we)
        for idx, kind in ((reads, "read-after-write"), (writes, "write-after-write")):
            if not len(idx):
                continue
            wl = w_launch[idx]
            bad = (wl >= 0) & (w_col[idx] != c) & (w_seq[idx] >= vc[w_col[idx]])
            for p in np.flatnonzero(bad)[:1]:
                report(int(wl[p]), i, kind, *piece(int(idx[p])))
        if len(writes):
            r = r_seq[writes]
            bad = (r >= vc[None, :]) & (r >= 0)
            bad[:, c] = False
            for p, t in zip(*np.nonzero(bad)):
                report(on_stream[int(t)][int(r[p, t])], i, "write-after-read", *piece(int(writes[p])))
                break
            w_launch[writes], w_col[writes], w_seq[writes] = i, c, seq
            r_seq[writes] = -1
        if len(reads):
            r_seq[reads, c] = seq
        on_stream[c].append(i)


def check_stream_races(records: Sequence[Record],
                       segments: Mapping[int, tuple[tuple[np.ndarray, np.ndarray], ...]] | None = None) -> None:
    """Raise StreamRaceError naming both kernels of every race between streams."""
    races = stream_races(records, segments)
    if races:
        raise StreamRaceError("\n".join(map(str, races)))


# ---------------------------------------------------------------------------
# Entry points.
# ---------------------------------------------------------------------------


def simulate(records: Sequence[Record | TraceEvent], *, device: str | DeviceSpec = "ascend910b",
             strict: bool = False) -> SimResult:
    """Time a recorded run. ``records`` come from ``record`` (with the bytes each op touches:
    races and gm footprints are found) or are plain TraceEvents (no race detection).
    ``strict`` raises SimulationError on a race."""
    spec = load_device(device) if isinstance(device, str) else device
    recs = [r if isinstance(r, Recorded | RepeatedBlock | ProgrammedBlock) else Recorded(r) for r in records]
    return _Sim(spec, strict).run(recs)


def simulate_ranks(records: Sequence[Sequence[Record]], *, server: str | ServerSpec = DEFAULT_SERVER,
                   strict: bool = False, algorithm: str = "auto") -> list[SimResult]:
    """Time the recorded runs of a multi-device program's ranks (rank i: `records[i]`) on one
    clock: each rank on its own device of `server`, a collective when all its ranks reach it,
    priced by the server's link model (`algorithm`: target/server.py's). One SimResult per
    rank, its times from the common start."""
    server = load_server(server) if isinstance(server, str) else server
    if not 1 <= len(records) <= server.devices:
        raise SimulationError(f"{len(records)} ranks on {server.name}: it has {server.devices} devices")
    shared: tuple[dict, dict, dict] = ({}, {}, {})
    sims = [_Sim(server.device, strict, rank, shared) for rank in range(len(records))]
    plans, checked = [], {}
    for sim, recs in zip(sims, records):
        seen = checked.get(id(recs))  # ranks that recorded one run together (a symmetric program)
        plans.append(sim.prepare(recs if seen else [r if isinstance(r, Recorded | RepeatedBlock | ProgrammedBlock | RunBoundary)
                                                    else Recorded(r) for r in recs], seen))
        checked.setdefault(id(recs), sim.segments)
    priced: dict[int, Collectives] = {}

    def price(c: Collective) -> tuple[float, str]:
        p = len(c.ranks) if c.kind not in a.POINT_TO_POINT else 2
        if p not in priced:
            priced[p] = Collectives(server, p, algorithm)
        return priced[p].cost_us(c.kind, c.nbytes), priced[p].algorithm_of(c.kind, c.nbytes)

    _schedule(plans, server.device, price)
    return [sim.result(plan) for sim, plan in zip(sims, plans)]


def profile_ranks(modules: Sequence[ModuleOp],
                  feeds: Sequence[Mapping[str, np.ndarray] | Sequence[Mapping[str, np.ndarray]]], *,
                  server: str | ServerSpec = DEFAULT_SERVER, strict: bool = False, timing: bool = False,
                  memo: bool = True, algorithm: str = "auto"
                  ) -> tuple[list[dict[str, np.ndarray] | None], list[SimResult]]:
    """Run a multi-device program's ranks together (rank i: `modules[i]` on `feeds[i]`, each on
    its own thread, exchanging real data at its collectives) and time them (`simulate_ranks`);
    the outputs and the SimResult of each rank. A list of feeds runs the rank's program once per
    entry, in order, each run after the last has finished (`RunBoundary`): its outputs are a
    list too."""
    server = load_server(server) if isinstance(server, str) else server
    if len(feeds) != len(modules):
        raise SimulationError(f"{len(modules)} rank programs but {len(feeds)} sets of inputs")

    def one(rank: int):
        overflow: list[LaunchOverflow] = []
        runs = feeds[rank] if isinstance(feeds[rank], Sequence) else [feeds[rank]]
        outputs, records, first = [], [], 0
        seen: dict | bool = {} if memo else False  # a later run replays the earlier runs' launches
        for i, run in enumerate(runs):
            if i:
                records.append(RunBoundary(i))
            out, recs = record(modules[rank], run, device=server.device, overflow=overflow, timing=timing,
                               memo=seen, compact=True, programs=True, first_launch=first)
            first += sum(1 for r in recs if isinstance(r, Recorded) and r.event.pipe == "host"
                         and isinstance(r.event.op, a.LaunchOp | a.KernelOp))
            outputs.append(out)
            records.extend(recs)
        return (outputs if isinstance(feeds[rank], Sequence) else outputs[0]), records, overflow

    if timing and all(m is modules[0] for m in modules) and all(f is feeds[0] for f in feeds):
        # the same program on the same inputs, timed without data: every rank records the same
        # events (a tensor-parallel program with shape-only weights), so one recording serves all
        first = one(0)
        runs = [first] * len(modules)
    else:
        runs = run_ranks(len(modules), one)
    sims = simulate_ranks([r[1] for r in runs], server=server, strict=strict, algorithm=algorithm)
    for sim, run in zip(sims, runs):
        sim.overflow = run[2]
    return [r[0] for r in runs], sims


def profile(module: ModuleOp, feeds: Mapping[str, np.ndarray], *, device: str | DeviceSpec = "ascend910b",
            strict: bool = False, timing: bool = False,
            memo: bool = True) -> tuple[dict[str, np.ndarray] | None, SimResult]:
    """Run the program (outputs as ``run_ascend_module``) and time it; the result also holds
    the launches whose outputs overflowed (`SimResult.overflow`). `timing`: a timing-only run
    (no data, no outputs: None; the same events, so the same timing), `memo`: launches like an
    earlier one are not run again (runtime/launch_memo.py)."""
    spec = load_device(device) if isinstance(device, str) else device
    overflow: list[LaunchOverflow] = []
    outputs, records = record(module, feeds, device=spec, overflow=overflow, timing=timing, memo=memo, compact=True,
                              programs=True)
    sim = simulate(records, device=spec, strict=strict)
    sim.overflow = overflow
    return outputs, sim


__all__ = [
    "Access", "BlockSim", "KernelRecord", "block_key", "OpSpan", "Race", "Recorded", "Recorder", "RepeatedBlock", "SimResult",
    "SimulationError", "Span", "StreamRace", "StreamRaceError", "check_stream_races", "profile", "profile_ranks",
    "record", "simulate", "simulate_ranks", "stream_races", "Collective", "RunBoundary",
]
