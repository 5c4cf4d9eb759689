"""ascend-plan-memory: place every buffer of an ascend program - gm buffers in one workspace,
on-chip buffers in their spaces - reusing bytes whose contents are dead.

**gm (the workspace).** Each gm `ascend.alloc` of a host program is a tensor between kernels.
Its lifetime is the launches that touch it (check_memory.py: stream order plus events, so with
several streams a buffer lives until every user on every stream is done). Graph inputs and
outputs are host arguments, outside the workspace. A buffer marked `exclusive`, or used by a
host op other than a launch, lives for the whole program. In place: an elementwise vector
kernel may write its output over a same-typed input that dies at it (marked `inplace`); the
two become one buffer. Then a strategy (memory_strategies.py) gives offsets, 512-byte aligned,
and the pass writes them into the IR:

    %r3 = ascend.alloc {offset = 1024 : i64, live = array<i64: 3, 7>} : memref<...>

`live` is the first and last launch (host program order). The workspace argument is resized to
the peak, and the host function records `ascend.workspace_size` and `ascend.memory_plan`
(strategy, lower bound, bytes without reuse). `reuse=false` lays buffers out one after the
other in program order (GE without memory reuse).

**On chip.** Inside each `ascend.kernel`, buffers of each space (ub, l1, l0a, l0b, l0c) get
offsets over their lifetimes in the kernel (spans of top-level ops, shared only when flags
order the pipes - see check_memory.py), aligned to 32 bytes (ub, l1) or 512 (l0*): GE's
assigners, and `best`'s search only if their plan does not fit (any plan that fits will
do). Double buffers are separate allocs, so they never share. A kernel whose buffers cannot
fit is an error naming the kernel, the space, the bytes needed and available. On-chip reuse
is part of making a kernel fit, so `reuse` and `strategy` only govern gm.

The pass is idempotent: it recomputes everything from the IR.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from geir.dialects import ascend as a
from geir.passes.ascend.check_memory import GmBuffer, KernelFlow, Lifetimes, MemoryPlanError, Schedule, arg_access, chip_conflicts, conflicts, elementwise, gm_buffers, host_functions, inplace_pairs, kib, lifetimes, live_bound, schedule, workspace_arg
from geir.passes.ascend.memory_strategies import (
    STRATEGIES,
    Plan,
    Problem,
    adjacency,
    best,
    clique_bound,
    ge,
    interval_bound,
    solve,
)
from geir.target.device import DEFAULT_DEVICE, load_device
from geir.dialects import attr_names



# ---------------------------------------------------------------------------
# gm: the host program.
# ---------------------------------------------------------------------------


@dataclass
class HostMemory:
    """The gm planning problem of one host function: buffers, in-place groups (each
    group is one item to place), and the Problem over the groups."""

    sched: Schedule
    buffers: list[GmBuffer]
    groups: list[list[int]]       # buffer indices; the first is the group's original buffer
    inplace: set[int]             # buffers written in place over their group's bytes
    problem: Problem
    lower_bound: int              # bytes no plan goes below (gm_lower_bound)

    @property
    def no_reuse_bytes(self) -> int:
        return sum(b.size for b in self.buffers)


def _inplace_groups(sched: Schedule, bufs: list[GmBuffer]) -> tuple[list[list[int]], set[int]]:
    """Chains of buffers an elementwise kernel writes over its dying input, in launch order."""
    of_value = {b.op.memref: i for i, b in enumerate(bufs)}
    group = list(range(len(bufs)))
    members = {i: [i] for i in range(len(bufs))}
    touches = {i: set(b.launches.tolist()) for i, b in enumerate(bufs)}
    inplace: set[int] = set()
    access = cache(arg_access)
    for k, (launch, kernel) in enumerate(zip(sched.launches, sched.kernels)):
        if kernel is None or not elementwise(kernel):
            continue
        pairs = set(inplace_pairs(launch, access(kernel)))
        taken: set[int] = set()
        for i, j in sorted(pairs, key=lambda p: (p[1], p[0])):
            src, dst = of_value.get(launch.args[i]), of_value.get(launch.args[j])
            if src is None or dst is None or dst in inplace or group[src] in taken:
                continue
            s, d = bufs[src], bufs[dst]
            if s.exclusive or d.exclusive or d.args.get(k) != [j] or d.size != s.size:
                continue
            if not all((p, j) in pairs for p in s.args.get(k, [])):
                continue
            g = group[src]
            if dst == g or group[dst] != dst or len(members[dst]) > 1:
                continue
            if any(x != k and not sched.hb(x, k) for x in touches[g]):  # the group dies at k
                continue
            if any(x != k and not sched.hb(k, x) for x in d.launches.tolist()):  # dst is born at k
                continue
            members[g].extend(members.pop(dst))
            touches[g] |= touches.pop(dst)
            group[dst] = g
            inplace.add(dst)
            taken.add(g)
    return [members[g] for g in sorted(members)], inplace


def host_memory(host: func.FuncOp, inplace: bool = True) -> HostMemory:
    """Analyse the gm buffers of a host function into a planning problem."""
    sched = schedule(host)
    bufs = gm_buffers(host, sched)
    if inplace:
        groups, marked = _inplace_groups(sched, bufs)
    else:
        groups, marked = [[i] for i in range(len(bufs))], set()
    touches = [np.unique(np.concatenate([bufs[i].launches for i in g])) if g else np.zeros(0, np.int64)
               for g in groups]
    life = lifetimes(sched, touches)
    sizes = np.array([max(bufs[i].size for i in g) for g in groups], dtype=np.int64)
    edges = conflicts(sched, life)
    unused = life.first < 0
    starts = np.where(unused, 0, life.first)
    ends = np.where(unused, 0, life.last)
    neighbours = adjacency(len(groups), edges)
    problem = Problem(sizes, neighbours, starts, ends, _most_live(sched, life, sizes, neighbours))
    # the bound on plans counts each buffer's own bytes: the highest buffer of a plan needs no
    # padding to the alignment (the checker asks offset + bytes <= the workspace)
    nbytes = np.array([max(bufs[i].op.nbytes for i in g) for g in groups], dtype=np.int64)
    return HostMemory(sched, bufs, groups, marked, problem, _most_live(sched, life, nbytes, neighbours))


def _most_live(sched: Schedule, life: Lifetimes, sizes: np.ndarray, neighbours: tuple[np.ndarray, ...]) -> int:
    """The most bytes live at one launch; with several streams, also the heaviest clique of
    conflicting buffers (concurrent buffers are live together without a common launch)."""
    bound = live_bound(sched, life, sizes)
    if sched.streams > 1:
        bound = clique_bound(sizes, neighbours, bound)
    return bound


def gm_lower_bound(host: func.FuncOp) -> int:
    """Bytes no placement of the host's gm buffers goes below: the most bytes the program
    holds at once - each buffer's own bytes, an in-place group (and a view) once, several
    streams' concurrent buffers together - whatever a planner chose or whether it ran. What
    `ascend.memory_plan` records as `lower_bound` and the profile report counts."""
    return host_memory(host, inplace=True).lower_bound


def plan_host(host: func.FuncOp, strategy: str = "best", reuse: bool = True, inplace: bool = True) -> Plan:
    """Plan the workspace of one host function and write the plan into the IR."""
    mem = host_memory(host, inplace=inplace and reuse)
    p = mem.problem
    # the bound no plan beats shares in-place pairs even when this plan does not
    bound = mem.lower_bound if inplace and reuse else gm_lower_bound(host)
    plan = solve(p, strategy) if reuse else _sequential(mem)
    offsets = [0] * len(mem.buffers)
    for g, off in zip(mem.groups, plan.offsets):
        for i in g:
            offsets[i] = off
    n = len(mem.sched)
    for i, b in enumerate(mem.buffers):
        op = b.op
        op.properties["offset"] = IntegerAttr(offsets[i], i64)
        op.attributes.pop(attr_names.LIVE, None)
        op.attributes.pop(attr_names.INPLACE, None)
        if b.exclusive:
            op.attributes[attr_names.LIVE] = DenseArrayBase.from_list(i64, [0, max(n - 1, 0)])
        elif len(b.launches):
            op.attributes[attr_names.LIVE] = DenseArrayBase.from_list(i64, [int(b.launches.min()), int(b.launches.max())])
        if i in mem.inplace:
            op.attributes[attr_names.INPLACE] = UnitAttr()
    size = plan.peak
    _set_workspace(host, size, bool(mem.buffers))
    host.attributes[attr_names.WORKSPACE_SIZE] = IntegerAttr(size, i64)
    host.attributes[attr_names.MEMORY_PLAN] = DictionaryAttr({
        "strategy": StringAttr(strategy if reuse else "none"),
        "lower_bound": IntegerAttr(bound, i64),
        "no_reuse": IntegerAttr(mem.no_reuse_bytes, i64),
    })
    return plan


def _sequential(mem: HostMemory) -> Plan:
    """No reuse: every buffer its own bytes, in the order the allocs appear."""
    off, cur = [], 0
    for g in mem.groups:
        off.append(cur)
        cur += max(mem.buffers[i].size for i in g)
    return Plan(off, cur, "none")


def _set_workspace(host: func.FuncOp, size: int, needed: bool) -> None:
    """Resize the {ascend.workspace} argument to `size` bytes (adding it if gm buffers need one)."""
    ws = workspace_arg(host)
    t = a.memref_type([size], IntegerType(8), "gm")
    block = host.body.block
    if ws is None:
        if not needed:
            return
        ws = block.insert_arg(t, len(block.args))
        ws.name_hint = "workspace"
        attrs = list(host.arg_attrs.data) if host.arg_attrs is not None else []
        attrs += [DictionaryAttr({})] * (len(block.args) - 1 - len(attrs))
        attrs.append(DictionaryAttr({attr_names.WORKSPACE: UnitAttr()}))
        host.arg_attrs = ArrayAttr(attrs)
    elif ws.type != t:
        Rewriter.replace_value_with_new_type(ws, t)
    outputs = host.function_type.outputs.data
    host.properties["function_type"] = FunctionType.from_lists(list(block.arg_types), list(outputs))


# ---------------------------------------------------------------------------
# On chip: each kernel.
# ---------------------------------------------------------------------------


def plan_kernel(kernel: a.KernelOp, capacity: dict[str, int], device: str = "") -> None:
    """Offsets for the on-chip buffers of one kernel, per space: GE's assigners, and the
    search of `best` only when their plan does not fit (any plan that fits is as good);
    an error naming the kernel, the space and the bytes if none does."""
    flow = KernelFlow(kernel)
    by_space: dict[str, list] = {}
    for b in flow.buffers():
        by_space.setdefault(b.op.space, []).append(b)
    for space, bufs in by_space.items():
        sizes = np.array([b.size for b in bufs], dtype=np.int64)
        starts = np.array([b.start for b in bufs], dtype=np.int64)
        ends = np.array([b.end for b in bufs], dtype=np.int64)
        p = Problem.from_conflicts(sizes, starts, ends, chip_conflicts(flow, bufs), interval_bound(sizes, starts, ends))
        cap = capacity.get(space, 0)
        plan = ge(p)
        if plan.peak > cap:  # search only to make the kernel fit
            plan = best(p, enough=cap)
        if plan.peak > cap:
            name = kernel.sym_name.data
            on = f" on {device}" if device else ""
            raise MemoryPlanError(
                f"kernel '{name}' needs {kib(plan.peak)} of {space}, the device has {kib(cap)} "
                f"({plan.peak} > {cap} bytes{on}; {len(bufs)} buffers, at least {kib(p.bound)} live at once): "
                f"use smaller tiles")
        for b, off in zip(bufs, plan.offsets):
            b.op.properties["offset"] = IntegerAttr(off, i64)


# ---------------------------------------------------------------------------
# The pass.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanMemory(ModulePass):
    """Give every gm buffer an offset in the workspace (reusing dead bytes) and every on-chip
    buffer an offset in its space; write offsets, lifetimes and sizes into the IR."""

    name = "ascend-plan-memory"

    reuse: bool = True
    """Reuse the bytes of dead gm buffers; false lays them out one after the other."""
    strategy: str = "best"
    """How gm offsets are chosen: best-fit | greedy-size | ge | best (memory_strategies.py)."""
    device: str = DEFAULT_DEVICE
    """The device whose on-chip buffer sizes bound the kernels' plans."""
    inplace: bool = True
    """Let elementwise kernels write over an input that dies at them."""

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise MemoryPlanError(f"unknown strategy '{self.strategy}' for ascend-plan-memory; "
                                  f"known: {', '.join(STRATEGIES)}")
        load_device(self.device)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        spec = load_device(self.device)
        capacity = dict(spec.buffer_bytes)
        for kernel in op.ops:
            if isinstance(kernel, a.KernelOp):
                plan_kernel(kernel, capacity, self.device)
        for host in host_functions(op):
            plan_host(host, self.strategy, self.reuse, self.inplace)
            check_device_memory(host, spec.hbm_bytes, self.device)


def gib(n: int) -> str:
    if n >= 2**30:
        return f"{n / 2**30:.1f} GiB"
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else kib(n)


def check_device_memory(host: func.FuncOp, hbm_bytes: int, device: str = "") -> None:
    """The planned program must fit the device's HBM: its workspace, its weights and
    constants, and its inputs and outputs are all resident while it runs. An output that
    updates an input in place (`ascend.updates`: a static KV cache) is that input's bytes,
    counted once."""
    ws = host.attributes.get(attr_names.WORKSPACE_SIZE)
    workspace = ws.value.data if ws is not None else 0
    weights = sum(a.nbytes_of(c.results[0].type) for c in host.walk() if isinstance(c, a.ConstantOp))
    ws_arg = workspace_arg(host)
    attrs = host.arg_attrs.data if host.arg_attrs is not None else ()
    in_place = {i for i, d in enumerate(attrs) if attr_names.UPDATES in d.data}
    io = sum(a.nbytes_of(arg.type) for arg in host.body.block.args if arg is not ws_arg and arg.index not in in_place)
    total = workspace + weights + io
    if total > hbm_bytes:
        on = f"the {device}" if device else "the device"
        raise MemoryPlanError(
            f"@{host.sym_name.data} needs {gib(total)} of device memory (workspace {gib(workspace)}, "
            f"weights and constants {gib(weights)}, inputs and outputs {gib(io)}), {on} has "
            f"{gib(hbm_bytes)}: compile for a smaller batch or sequence")
