"""The epilogue's ub tiles: which tile of a pool holds each value of the program, and how
many rows of the result one pass over ub takes."""

from __future__ import annotations

import math

from xdsl.ir import Attribute

from geir.dialects import formats as L
from geir.lowering.templates.common import KernelRequest, block_elems, compute_type, itemsize, row_elems
from geir.lowering.templates.cube.plan import ConvPlan, CubePlan

UB_RESERVE = 1024
"""Bytes of ub an epilogue pass leaves free."""


def epilogue_compute_type(plan: CubePlan) -> Attribute:
    """What the epilogue's ub tiles hold: the compute type of the result (f32 for bf16), or
    what the builder chose for an int8 product's values (f32 with a dequantize, else i32)."""
    return plan.epilogue.compute or compute_type(plan.elt)


def stored_type(plan: CubePlan, key: object) -> Attribute:
    """The gm element type of an epilogue value: the cube result's, or a side's own."""
    if key is plan.epilogue.result or not hasattr(key, "type"):  # the FIX pipe may have dequantized it
        return plan.epilogue.fix.out if plan.epilogue.fix else plan.out_elt
    return key.type.element_type


class EpilogueBuffers:
    """Schedules the epilogue's values onto a pool of [er, ecp] ub tiles (a value's tile is
    reused once its last reader ran; outputs keep theirs until they are stored).

    `staged`: the cube's FIX copy stages the raw tile in an output (the raw result's own
    output if it has one), from which the pass loads it; a vector kernel has the raw tile
    in ub already."""

    def __init__(self, plan: CubePlan, staged: bool = True):
        self.plan = plan
        self.staged = staged
        epi = plan.epilogue
        raw_outs = [i for i, key in epi.outputs if key is epi.result]
        self.staging = raw_outs[0] if raw_outs else epi.outputs[0][0]
        self.stores = [(i, key) for i, key in epi.outputs
                       if not (staged and i == self.staging and key is epi.result)]
        used = {s for ins in epi.instrs for s in ins.srcs} | {key for _, key in self.stores}
        self.needs_raw = epi.result in used or not staged
        self.sides = [v for v in epi.sides if v in used]
        self.where: dict[object, int] = {}
        self.pool = 0
        self._assign_tiles()

    def _assign_tiles(self) -> None:
        """`where` and `pool`: the raw result and the sides first, then each instruction's
        destination, in a tile freed by one of its dying sources if they held nothing else."""
        instrs = self.plan.epilogue.instrs
        last: dict[object, float] = {}
        for i, ins in enumerate(instrs):
            for s in ins.srcs:
                last[s] = i
        for _, key in self.stores:
            last[key] = math.inf
        holders: dict[int, set] = {}
        free: list[int] = []

        def acquire(key: object) -> None:
            if free:
                slot = free.pop()
            else:
                slot, self.pool = self.pool, self.pool + 1
            self.where[key] = slot
            holders[slot] = {key}

        if self.needs_raw:
            acquire(self.plan.epilogue.result)
        for v in self.sides:
            acquire(v)
        for i, ins in enumerate(instrs):
            dying = [s for s in dict.fromkeys(ins.srcs)
                     if s in self.where and s is not ins.dst and last.get(s) == i]
            if ins.dst not in self.where:
                reuse = [self.where[s] for s in dying if holders[self.where[s]] <= set(dying)]
                if reuse:
                    self.where[ins.dst] = reuse[0]
                    holders[reuse[0]].add(ins.dst)
                else:
                    acquire(ins.dst)
            for s in dying:
                slot = self.where[s]
                holders[slot].discard(s)
                if not holders[slot]:
                    free.append(slot)
        self.pool = max(self.pool, 1)

    @property
    def blocked(self) -> bool:
        """The passes run on NC1HWC0 tiles [rows / C0, cols, C0] in ub, as the result is
        stored: no re-layout between gm and ub. Needs whole C0 blocks of channels (padding
        lanes would compute f(0), not keep the zeros NC1HWC0 promises) and sides that are
        NC1HWC0 tensors or per-channel vectors."""
        plan = self.plan
        if not (isinstance(plan, ConvPlan) and plan.out_blocked and plan.rows % L.c0_of(plan.elt) == 0):
            return False
        for v in self.sides:
            side = plan.epilogue.sides[v]
            _, sr, sc = side.spans
            if not sr or (sc and not side.blocked):
                return False
        return True

    def rows(self, req: KernelRequest, mt: int, cols: int) -> int:
        """Rows of one pass: as many as the pool and the side tiles leave room for in ub
        (in the compute type), with the staging tiles of a converting epilogue (in the
        stored type: epilogue_passes.py)."""
        celt = epilogue_compute_type(self.plan)
        per_row, fixed = self._bytes(celt, cols, compute=True)
        if any(t != celt for t in self.stored_types()):
            stage_row, stage_fixed = self._bytes(self.widest_stored(), cols, compute=False)
            per_row, fixed = per_row + stage_row, fixed + stage_fixed
        room = (req.device.buffer_bytes["ub"] - fixed - UB_RESERVE) // per_row
        return max(0, min(mt, room))

    def stored_types(self) -> list[Attribute]:
        """The gm types of the values loaded (the raw result, the sides) and of the outputs."""
        plan = self.plan
        loaded = [stored_type(plan, plan.epilogue.result)] if self.needs_raw and self.staged else []
        return [*loaded, *(stored_type(plan, v) for v in self.sides),
                *(plan.output_types[i] for i, _ in self.stores)]

    def widest_stored(self) -> Attribute:
        return max(self.stored_types(), key=itemsize, default=self.plan.out_elt)

    def _bytes(self, t: Attribute, cols: int, compute: bool) -> tuple[int, int]:
        """(bytes per row of a pass, bytes whatever the rows) of the compute tiles (the pool
        and the compact sides) or of the staging tiles (the values loaded, the outputs: each
        counted in the widest stored type)."""
        isz, blk, ecp = itemsize(t), block_elems(t), row_elems(cols, t)
        spans = [self.plan.epilogue.sides[v].spans for v in self.sides]
        if compute:
            tiles, compact = self.pool, spans
        else:  # the raw result and the full sides, the outputs; the compact sides
            tiles = int(self.needs_raw and self.staged) + len(self.stores) + sum(1 for s in spans if s[1] and s[2])
            compact = [s for s in spans if not (s[1] and s[2])]
        if self.blocked:  # [rows / C0, cols, C0] tiles, per-channel sides [rows / C0, 1, C0]
            return (tiles * cols + sum(1 for s in compact if not s[2])) * isz, 0
        per_row = (tiles * ecp + blk * sum(1 for s in compact if s[1] and not s[2])) * isz
        return per_row, sum(ecp if s[2] else blk for s in compact if not s[1]) * isz
