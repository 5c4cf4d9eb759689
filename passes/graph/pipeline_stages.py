"""graph-pipeline-stage: one stage of a model cut into `stages` contiguous pieces, one per device.

Pipeline parallelism runs the layers of a model on several devices in a chain: stage s runs
its layers on micro-batch m while stage s + 1 runs its own on micro-batch m - 1. GE marks
stage levels and cuts the graph there; geir chooses the cuts itself (`plan_stages`):

* **Where it may cut.** Ops are in program order (the SSA order is a topological one). A cut
  before op i sends the values that cross it: defined before i (by a non-constant op) and used
  at or after i. A value only returned does not cross (its stage returns it); a constant does not
  (each stage that uses one holds its own copy); a function argument does not (every stage is
  given the inputs). Cuts that send at most `max-values` tensors are the candidates - between
  the layers of a transformer one tensor, the hidden state, crosses.
* **What it minimises.** The slowest stage: the sum of its ops' kernel times (graph-fuse's cost
  model, each op as a kernel of its own), plus the transfer of what it receives and what it
  sends (target/server.py's point-to-point time over one link). A dynamic programme over the
  candidate cuts finds the partition whose slowest stage is fastest among those whose every
  stage fits the device's memory: its weights, plus the largest two tensors it holds at once
  (an estimate: the planner's real figure comes after lowering). No partition that fits is one
  error naming the stage that needs the most memory in the fastest partition, and by how much.
* **The stage's program.** Ops of stage s, the constants they use, a `graph.recv` from stage
  s - 1 for each tensor crossing its first cut and a `graph.send` to stage s + 1 for each
  crossing its last (in the order they were defined: both sides agree); it takes the
  function's inputs it reads and returns the results it computes, under their names. A tensor
  used two stages later is received and sent on by the stages between.

    geir-opt model.mlir -p 'graph-pipeline-stage{stages=2 stage=0}'
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from geir.dialects import graph as g
from geir.errors import GeirError
from geir.ir.types import to_dtype
from geir.passes.graph.fuse import Costs, single_op_us
from geir.passes.graph.utils import entry_attrs, set_signature
from geir.target.device import DEFAULT_DEVICE, load_device
from geir.target.server import Collectives, load_server


class PipelineStageError(GeirError):
    """A model that cannot be cut as asked (too few places to cut, no partition that fits)."""


def _nbytes(v: SSAValue) -> int:
    t = v.type
    return int(np.prod(t.get_shape())) * np.dtype(to_dtype(t.element_type)).itemsize


@dataclass(frozen=True)
class StagePlan:
    """Where a function is cut: stage s runs ops[cuts[s]:cuts[s + 1]] (indices into the
    function's non-constant ops), with its modeled time and memory."""

    cuts: tuple[int, ...]
    stage_us: tuple[float, ...]
    stage_bytes: tuple[int, ...]
    sends: tuple[tuple[SSAValue, ...], ...]   # per cut between stages: what crosses it


def _ops(fn: func.FuncOp) -> list[Operation]:
    return [op for op in fn.body.block.ops if not isinstance(op, g.ConstantOp | func.ReturnOp)]


def crossing(ops: list[Operation]) -> list[list[SSAValue]]:
    """For each cut position i (0..len(ops)): the values defined by ops[:i] used by ops[i:]
    (a returned value crosses only if a later op uses it too: the return is not among `ops`),
    in definition order."""
    index = {op: i for i, op in enumerate(ops)}
    last_use: dict[SSAValue, int] = {}
    for i, op in enumerate(ops):
        for v in op.operands:
            if isinstance(v.owner, Operation) and v.owner in index:
                last_use[v] = i
    out: list[list[SSAValue]] = [[] for _ in range(len(ops) + 1)]
    for v, last in last_use.items():
        for i in range(index[v.owner] + 1, last + 1):
            out[i].append(v)
    for vals in out:
        vals.sort(key=lambda v: (index[v.owner], v.index if hasattr(v, "index") else 0))
    return out


def plan_stages(fn: func.FuncOp, stages: int, device: str = DEFAULT_DEVICE, server: str = "atlas800t_a2",
                max_values: int = 4) -> StagePlan:
    """The cuts of `fn` into `stages` stages (module docstring)."""
    ops = _ops(fn)
    cross = crossing(ops)
    candidates = [i for i in range(1, len(ops)) if 0 < len(cross[i]) <= max_values]
    if stages > len(candidates) + 1:
        raise PipelineStageError(
            f"pipeline_stages={stages} needs {stages - 1} cut(s), but the graph has {len(candidates)} place(s) to "
            f"cut (where at most {max_values} tensors cross, between its layers): use at most "
            f"{len(candidates) + 1} stages")
    spec = load_device(device)
    times = single_op_us(fn.body.block, Costs(device))
    link = Collectives(load_server(server), 2)
    prefix = np.concatenate([[0.0], np.cumsum([times.get(op, 0.0) for op in ops])])
    weights = np.concatenate([[0], np.cumsum([sum(_nbytes(v) for v in op.operands if isinstance(v.owner, g.ConstantOp))
                                              for op in ops])])
    largest = [max([_nbytes(r) for r in op.results] + [0]) for op in ops]
    sent = {i: sum(_nbytes(v) for v in cross[i]) for i in candidates}
    transfer = {i: link.send_us(n) for i, n in sent.items()}
    points = [0, *candidates, len(ops)]

    def stage_cost(a: int, b: int) -> float:
        return float(prefix[b] - prefix[a]) + transfer.get(a, 0.0) + transfer.get(b, 0.0)

    def stage_bytes(a: int, b: int, top2: int) -> int:
        """Its weights, the two largest tensors it makes (`top2`), what it receives and sends."""
        return int(weights[b] - weights[a]) + top2 + sent.get(a, 0) + sent.get(b, 0)

    cuts = _partition(points, stages, stage_cost, stage_bytes, largest, spec.hbm_bytes)
    if cuts is None:  # the fastest partition ignoring memory, and its stage that overflows most
        fastest = _partition(points, stages, stage_cost, stage_bytes, largest, None)
        need = [stage_bytes(a, b, _top2(largest[a:b])) for a, b in zip(fastest, fastest[1:])]
        worst = max(range(stages), key=need.__getitem__)
        raise PipelineStageError(
            f"no partition into {stages} stages fits the device's {_size(spec.hbm_bytes)}: stage {worst} of the "
            f"fastest one needs {_size(need[worst])} (weights and activations), "
            f"{_size(need[worst] - spec.hbm_bytes)} too much; use more stages or tensor parallelism")
    return StagePlan(
        cuts, tuple(stage_cost(a, b) for a, b in zip(cuts, cuts[1:])),
        tuple(stage_bytes(a, b, _top2(largest[a:b])) for a, b in zip(cuts, cuts[1:])),
        tuple(tuple(cross[c]) for c in cuts[1:-1]))


def _top2(sizes: list[int]) -> int:
    return sum(sorted(sizes, reverse=True)[:2])


def _partition(points: list[int], stages: int, cost, nbytes, largest: list[int],
               capacity: int | None) -> tuple[int, ...] | None:
    """The cuts (among `points`, the first and last included) of `stages` stages whose slowest
    `cost(a, b)` is least among those whose every stage's `nbytes(a, b, top2)` is within
    `capacity` (None: any); None if none fits. best[k][j]: the least slowest stage of k stages
    covering points[0]..points[j]. Each stage's two largest tensors are kept as j grows, so a
    step costs O(1) and the programme O(stages x cuts x ops)."""
    inf = float("inf")
    n = len(points)
    best = [[inf] * n for _ in range(stages + 1)]
    back = [[-1] * n for _ in range(stages + 1)]
    best[0][0] = 0.0
    for k in range(1, stages + 1):
        for i in range(n - 1):
            if best[k - 1][i] == inf:
                continue
            first = second = 0
            for j in range(i + 1, n):
                for x in largest[points[j - 1]:points[j]]:
                    if x > first:
                        first, second = x, first
                    elif x > second:
                        second = x
                a, b = points[i], points[j]
                if capacity is not None and nbytes(a, b, first + second) > capacity:
                    continue  # (a later cut may fit again: what crosses it differs)
                c = max(best[k - 1][i], cost(a, b))
                if c < best[k][j]:
                    best[k][j], back[k][j] = c, i
    if best[stages][n - 1] == inf:
        return None
    idx = [n - 1]
    for k in range(stages, 0, -1):
        idx.append(back[k][idx[-1]])
    return tuple(points[i] for i in reversed(idx))


def _size(n: int) -> str:
    return f"{n / (1 << 30):.2f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.2f} MiB"


# ---------------------------------------------------------------------------
# The rewrite: stage `stage`'s program.
# ---------------------------------------------------------------------------


def keep_stage(fn: func.FuncOp, plan: StagePlan, stage: int) -> None:
    block = fn.body.block
    ops = _ops(fn)
    lo, hi = plan.cuts[stage], plan.cuts[stage + 1]
    mine = set(ops[lo:hi])
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    incoming = list(plan.sends[stage - 1]) if stage > 0 else []
    outgoing = list(plan.sends[stage]) if stage < len(plan.cuts) - 2 else []
    first = ops[lo]
    received: dict[SSAValue, SSAValue] = {}
    for v in incoming:  # received at the top of the stage, in the order they were sent
        r = g.RecvOp.build_op([], [v.type], peer=stage - 1)
        r.location = v.owner.location
        r.results[0].name_hint = v.name_hint
        block.insert_op_before(r, first)
        received[v] = r.results[0]
    for v, r in received.items():
        for use in list(v.uses):
            if use.operation in mine or use.operation is ret:
                use.operation.operands[use.index] = r
    for v in outgoing:  # sent after the stage's last op
        s = g.SendOp.build_op([received.get(v, v)], [], peer=stage + 1)
        s.location = v.owner.location if isinstance(v.owner, Operation) else fn.location
        block.insert_op_before(s, ret)
    # the function's results this stage computes (a received one is the earlier stage's)
    keep = [i for i, v in enumerate(ret.operands)
            if v.owner in mine or (isinstance(v.owner, g.ConstantOp) and stage == len(plan.cuts) - 2)
            or (v in fn.body.block.args and stage == len(plan.cuts) - 2)]
    attrs = entry_attrs(fn.res_attrs, len(ret.operands))
    values = [ret.operands[i] for i in keep]
    new_ret = func.ReturnOp(*values)
    new_ret.location = ret.location
    block.insert_op_before(new_ret, ret)
    ret.detach()
    ret.erase()
    kept = [attrs[i] for i in keep]
    for op in reversed(list(block.ops)):  # the other stages' ops, then the constants no one uses
        if op is new_ret or isinstance(op, g.SendOp | g.RecvOp) or op in mine:
            continue
        if isinstance(op, g.ConstantOp) and any(r.uses for r in op.results):
            continue
        for r in op.results:
            for use in list(r.uses):  # users are other stages' ops, erased before (reverse order)
                raise PipelineStageError(f"internal: {op.name} still used by {use.operation.name}")
        op.detach()
        op.erase()
    # the inputs the stage reads (the caller gives each stage its own)
    arg_attrs = entry_attrs(fn.arg_attrs, len(block.args))
    kept_args = [d for arg, d in zip(block.args, arg_attrs) if arg.uses]
    for arg in [arg for arg in block.args if not arg.uses]:
        block.erase_arg(arg)
    set_signature(fn, kept_args, kept)


@dataclass(frozen=True)
class PipelineStage(ModulePass):
    """Keep stage `stage` of the function cut into `stages` pipeline stages (module docstring)."""

    name = "graph-pipeline-stage"

    stages: int = 2
    """Devices the layers are spread over, in a chain."""
    stage: int = 0
    """Which stage's program this is (0 .. stages - 1); stage s runs on device rank s."""
    device: str = DEFAULT_DEVICE
    """Whose cost model prices the ops and whose memory bounds a stage."""
    max_values: int = 4
    """Tensors that may cross a cut."""

    def __post_init__(self) -> None:
        if self.stages < 1:
            raise PipelineStageError(f"pipeline stages must be at least 1, got {self.stages}")
        if not 0 <= self.stage < self.stages:
            raise PipelineStageError(f"stage {self.stage} is not one of 0..{self.stages - 1}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.stages == 1:
            return
        fns = [f for f in op.ops if isinstance(f, func.FuncOp) and not f.is_declaration]
        for fn in fns:
            keep_stage(fn, plan_stages(fn, self.stages, self.device, max_values=self.max_values), self.stage)
