"""ascend-insert-events: one event for every cross-stream dependency that needs one.

Launches on one stream run in order; between streams only events order them. A launch that
must follow a launch on another stream (it reads what that one wrote, or overwrites what it
read or wrote - the write-after-read and write-after-write orderings memory reuse creates
count as much as data flow; `launch_dependencies` finds all three over gm bytes) gets an
`ascend.event_record` right after the producer and an `ascend.event_wait` right before
itself.

Redundant waits are left out, as GE's stream allocator removes redundant events: one walk in
program order keeps a vector clock per stream (for each stream, how many of its launches are
known to be done before this point) and a snapshot of it after each launch. A dependency is
already satisfied when the consumer's clock covers the producer; of several producers on one
stream only the last needs a wait; and a wait whose producer another wait of the same launch
already covers (through the other stream's own events) is dropped. Each producer records one
event, however many streams wait for it. Event ids are then renumbered from 0 in program
order, as GE does.

Existing events are erased first and derived again from the data, so the pass is idempotent
and may be run again after anything that changes streams or buffers (e.g. memory planning).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from geir.dialects import ascend as a
from geir.ir.locations import describe
from geir.passes.ascend.assign_streams import (
    StreamAssignmentError,
    host_launches,
    launch_dependencies,
    strip_sync,
    workspace_arg,
)


def stream_id(launch: a.LaunchOp) -> int:
    owner = launch.stream.owner
    if not isinstance(owner, a.StreamOp):
        raise StreamAssignmentError(f"{describe(launch)}: its stream is not defined by an ascend.stream in the "
                                    f"host function, so its id is unknown")
    return a.int_value(owner.properties["id"])


def needed_waits(deps: Sequence[set[int]], streams: Sequence[int]) -> list[list[int]]:
    """For each launch, the producers (launch indices, on other streams) it must wait for;
    every other dependency is implied by stream order or by these waits."""
    ids = {s: k for k, s in enumerate(sorted(set(streams)))}
    n = len(ids)
    clock = {s: [0] * n for s in ids}            # per stream: launches of each stream done before its tail
    seq = [0] * len(deps)                        # position of each launch on its stream
    snap: list[list[int]] = [[] for _ in deps]  # the clock of a launch's stream right after it
    waits: list[list[int]] = []
    for i, ds in enumerate(deps):
        s = streams[i]
        mine = clock[s]
        last: dict[int, int] = {}                # other stream -> its last producer of i
        for d in ds:
            t = streams[d]
            if t != s and d > last.get(t, -1):
                last[t] = d
        todo = [d for t, d in last.items() if mine[ids[t]] <= seq[d]]
        keep = [d for d in todo
                if not any(e != d and snap[e][ids[streams[d]]] > seq[d] for e in todo)]
        for d in sorted(keep):
            mine[:] = [max(x, y) for x, y in zip(mine, snap[d])]
        waits.append(sorted(keep))
        k = ids[s]
        seq[i] = mine[k]
        mine[k] += 1
        snap[i] = list(mine)
    return waits


def place_events(fn: func.FuncOp, launches: Sequence[a.LaunchOp], waits: Sequence[Sequence[int]]) -> int:
    """Insert a record after each waited-for producer and the waits before each consumer;
    events are numbered from 0 in program order. Returns the number of events."""
    block = fn.body.block
    producers = sorted({d for ws in waits for d in ws})
    number = {d: k for k, d in enumerate(producers)}
    events = [a.EventOp.get(k) for k in range(len(producers))]
    anchor = next((op for op in block.ops if not isinstance(op, a.StreamOp)), None)
    for k, ev in enumerate(events):
        ev.results[0].name_hint = f"event{k}"
        block.insert_op_before(ev, anchor) if anchor is not None else block.add_op(ev)
    for d in producers:
        launch = launches[d]
        block.insert_op_after(a.EventRecordOp.get(events[number[d]], launch.stream), launch)
    for i, ws in enumerate(waits):
        launch = launches[i]
        for d in sorted(ws, key=number.__getitem__):
            block.insert_op_before(a.EventWaitOp.get(events[number[d]], launch.stream), launch)
    return len(events)


@dataclass(frozen=True)
class InsertEvents(ModulePass):
    """Add an event for every cross-stream dependency, redundant waits removed, ids from 0.

    Dependencies are read-after-write, write-after-read and write-after-write over gm bytes."""

    name = "ascend-insert-events"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if not isinstance(fn, func.FuncOp) or fn.is_declaration:
                continue
            launches = host_launches(fn)
            strip_sync(fn)
            if not launches:
                continue
            deps = launch_dependencies(launches, workspace_arg(fn))
            place_events(fn, launches, needed_waits(deps, [stream_id(l) for l in launches]))
