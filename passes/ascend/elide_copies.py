"""ascend-elide-copies: kernels that only move bytes unchanged become views - no task, no copy.

A reshape, a contiguous slice or a concat along an outer axis copies bytes without changing
them. The lowering marks such kernels (`geir.byte_copies`: which contiguous runs of which
argument go where); this pass removes their launches and lets the buffers share bytes, as
GE's memory assigner does (a reshape's output is a *ref* of its input; a concat whose inputs
get *continuous memory* is a no-task op):

* **view** - an output that is one run of one input: the output buffer becomes
  `ascend.view %input[offset]` (a reshape, squeeze, flatten; a slice or gather of whole
  outer rows; q, k, v out of one qkv tensor);
* **place** - an output made of whole inputs (a concat, or a view whose output cannot be
  replaced, such as a graph output): each input buffer becomes `ascend.view %output[offset]`,
  so its producer writes straight into the output. Chains nest: DenseNet's concat of a
  concat puts every layer's features in the block's last buffer. The output's alloc keeps
  the elided kernel's name (`geir.elided`) and location: geir-compare checks it as that
  kernel's output once its last producer has run.

A kernel is elided only if every output qualifies. The rules keep the values: before memory
planning each gm buffer is written once, by its producer, so a buffer that becomes a view
must be written only by the elided launch (view) or only by launches before it (place), be
a plain `ascend.alloc` (not a graph input or output, a weight, or already a view) when it
is replaced, and offsets must be whole 32-byte DMA blocks. The reasoning is in program
order, so the pass runs on one stream before ascend-assign-streams (a host with events is
left alone) and before ascend-plan-memory (a planned host is left alone; the plan then sees
the views' lifetimes: a view's launches are its root buffer's). Weights and shape constants
only the elided launches read and kernels no launch uses are erased.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import BlockArgument, OpResult, SSAValue
from xdsl.passes import ModulePass

from geir.dialects import ascend as a
from geir.passes.ascend.assign_streams import kernel_effects
from geir.passes.ascend.check_memory import host_functions, views_of
from geir.dialects import attr_names


def _plain_alloc(value: SSAValue) -> a.AllocOp | None:
    """The shareable gm alloc `value` is, if it is one (its offset, if any, is the lowering's
    one-after-the-other layout: the host has no memory plan yet)."""
    if isinstance(value, OpResult) and isinstance(value.op, a.AllocOp):
        op = value.op
        if op.space == "gm" and attr_names.EXCLUSIVE not in op.attributes:
            return op
    return None


@dataclass
class _Host:
    fn: func.FuncOp
    kernels: dict[str, a.KernelOp]

    def __post_init__(self) -> None:
        self.launches = [op for op in self.fn.body.block.ops if isinstance(op, a.LaunchOp)]
        self.order = {launch: i for i, launch in enumerate(self.launches)}
        self.effects: dict[str, tuple[tuple[bool, bool], ...]] = {}

    def kernel(self, launch: a.LaunchOp) -> a.KernelOp | None:
        return self.kernels.get(launch.kernel.root_reference.data)

    def written(self, launch: a.LaunchOp) -> list[bool]:
        name = launch.kernel.root_reference.data
        if name not in self.effects:
            kernel = self.kernels.get(name)
            self.effects[name] = kernel_effects(kernel) if kernel is not None else ()
        effects = self.effects[name]
        return [effects[i][1] if i < len(effects) else True for i in range(len(launch.args))]

    def writers(self, buffer: SSAValue) -> set[a.LaunchOp] | None:
        """The launches that write `buffer` or a view of it; None if a host op other than a
        launch uses it (its bytes are not ours to share)."""
        out: set[a.LaunchOp] = set()
        for user, v in views_of(buffer):
            if not isinstance(user, a.LaunchOp) or user not in self.order:
                return None
            written = self.written(user)
            if any(x is v and written[k] for k, x in enumerate(user.args)):
                out.add(user)
        return out

    # -- one launch ----------------------------------------------------------------------------

    def plan(self, launch: a.LaunchOp) -> list[tuple] | None:
        """The rewrites that replace `launch`, or None if it must stay."""
        kernel = self.kernel(launch)
        runs = a.byte_copies(kernel) if kernel is not None else None
        if not runs:
            return None
        args = launch.args
        written = {k for k, w in enumerate(self.written(launch)) if w}
        by_dst: dict[int, list[tuple[int, int, int, int]]] = {}
        for dst, dst_off, src, src_off, n in runs:
            if not (0 <= dst < len(args) and 0 <= src < len(args)) or src in written:
                return None
            by_dst.setdefault(dst, []).append((dst_off, src, src_off, n))
        if set(by_dst) != written:
            return None
        me = self.order[launch]
        claimed: set[SSAValue] = set()
        steps: list[tuple] = []
        for dst, pieces in by_dst.items():
            out = args[dst]
            if not _covers(pieces, a.nbytes_of(out.type)):
                return None
            step = self._view(launch, out, pieces) or self._place(me, launch, out, pieces, claimed)
            if step is None:
                return None
            steps.append(step)
        return steps

    def _view(self, launch: a.LaunchOp, out: SSAValue, pieces) -> tuple | None:
        """`out` becomes a view of the one input it copies."""
        if len(pieces) != 1 or _plain_alloc(out) is None or self.writers(out) != {launch}:
            return None
        _, src, src_off, _ = pieces[0]
        if src_off % a.BLOCK_BYTES:
            return None
        return ("view", out, launch.args[src], src_off)

    def _place(self, me: int, launch: a.LaunchOp, out: SSAValue, pieces, claimed: set[SSAValue]) -> tuple | None:
        """Each input `out` is made of becomes a view of `out` at its offset."""
        if not (_plain_alloc(out) is not None or isinstance(out, BlockArgument)):
            return None
        if self.writers(out) != {launch}:
            return None
        placed = []
        for dst_off, src, src_off, n in pieces:
            value = launch.args[src]
            if src_off or n != a.nbytes_of(value.type) or dst_off % a.BLOCK_BYTES or value in claimed:
                return None
            if _plain_alloc(value) is None:
                return None
            producers = self.writers(value)
            if producers is None or any(self.order[p] >= me for p in producers):
                return None
            claimed.add(value)
            placed.append((value, dst_off))
        return ("place", out, placed)

    # -- rewriting -----------------------------------------------------------------------------

    def apply(self, launch: a.LaunchOp, steps: list[tuple]) -> None:
        block = self.fn.body.block
        kernel = self.kernel(launch)
        for step in steps:
            if step[0] == "view":
                _, out, src, offset = step
                view = a.ViewOp.get(src, out.type, offset)
                view.memref.name_hint = out.name_hint
                block.insert_op_before(view, launch)
                alloc = out.op
                out.replace_all_uses_with(view.memref)
                alloc.detach()
                alloc.erase()
            else:
                _, out, placed = step
                if isinstance(out, OpResult):  # before every producer: first in the host
                    alloc = out.op
                    alloc.detach()
                    block.insert_op_before(alloc, block.first_op)
                    # what the elided kernel wrote, for geir-compare
                    alloc.attributes[attr_names.ELIDED] = StringAttr(kernel.sym_name.data)
                    alloc.location = kernel.location
                for value, offset in placed:
                    old = value.op
                    view = a.ViewOp.get(out, value.type, offset)
                    view.memref.name_hint = value.name_hint
                    if attr_names.ELIDED in old.attributes:  # an inner concat's buffer: still its tensor
                        view.attributes[attr_names.ELIDED] = old.attributes[attr_names.ELIDED]
                        view.location = old.location
                    block.insert_op_before(view, old)
                    value.replace_all_uses_with(view.memref)
                    old.detach()
                    old.erase()
        # once each: a launch may pass one constant twice (CSE merged starts and axes)
        operands = list(dict.fromkeys(launch.operands))
        launch.detach()
        launch.erase()
        for v in operands:  # a shape constant or weight only the elided launch read
            if isinstance(v, OpResult) and isinstance(v.op, a.ConstantOp) and not v.uses:
                v.op.detach()
                v.op.erase()


def _covers(pieces: list[tuple[int, int, int, int]], nbytes: int) -> bool:
    """The runs [dst_off, dst_off + n) tile [0, nbytes) exactly."""
    at = 0
    for dst_off, _, _, n in sorted(pieces):
        if dst_off != at:
            return False
        at += n
    return at == nbytes


def _unplanned_one_stream(fn: func.FuncOp) -> bool:
    if attr_names.MEMORY_PLAN in fn.attributes:
        return False
    streams = set()
    for op in fn.body.block.ops:
        if isinstance(op, a.EventRecordOp | a.EventWaitOp):
            return False
        if isinstance(op, a.LaunchOp):
            streams.add(op.stream)
    return len(streams) <= 1


@dataclass(frozen=True)
class ElideCopies(ModulePass):
    """Remove the launches of kernels that only move bytes unchanged (reshapes, contiguous
    slices, concats along an outer axis): their buffers become views of each other."""

    name = "ascend-elide-copies"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernels = {k.sym_name.data: k for k in op.ops if isinstance(k, a.KernelOp)}
        for fn in host_functions(op):
            if not _unplanned_one_stream(fn):
                continue
            host = _Host(fn, kernels)
            for launch in list(host.launches):
                steps = host.plan(launch)
                if steps is not None:
                    host.apply(launch, steps)
        used = {l.kernel.root_reference.data for l in op.walk() if isinstance(l, a.LaunchOp)}
        for name, kernel in kernels.items():
            if name not in used and a.byte_copies(kernel) is not None:
                kernel.detach()
                kernel.erase()
