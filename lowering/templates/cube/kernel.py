"""The cube kernel: what matmul and convolution kernels share.

Each output tile runs the Da Vinci cube pipeline

    gm --MTE2--> l1 --MTE1--> l0a / l0b --M (mmad)--> l0c --FIX--> gm

over K in two levels: chunks of `kl1` staged in l1 (double-buffered), and steps of `kt`
moved to l0a / l0b (double-buffered) and accumulated in l0c (the first step initialises
it). Edge tiles: gm -> l1 copies `pad` a partial tile with zeros to whole fractals and the
FIX copy writes back only the valid part. With an epilogue the kernel is `mix`: the FIX copy
stages the tile in its gm output and the epilogue passes (epilogue_passes.py) follow.

Flag ids: per ping-pong slot for l1 (MTE2 <-> MTE1) and l0a / l0b (MTE1 <-> M); per l0c
slot (FIX -> M: one, or two for a matmul's work items of several tiles); the epilogue id 0.
"""

from __future__ import annotations

from contextlib import nullcontext

from xdsl.dialects.builtin import StringAttr, UnitAttr, f32, i32
from xdsl.ir import SSAValue

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.dialects import formats as L
from geir.dialects.ascend import FRACTAL
from geir.lowering.templates.common import (
    KernelBuilder,
    KernelRequest,
    round_up,
    row_shares,
    vector_cores_per_block,
)
from geir.lowering.templates.cube.epilogue_buffers import EpilogueBuffers
from geir.lowering.templates.cube.epilogue_passes import EpiloguePasses, gm_tile
from geir.lowering.templates.cube.fix_quant import params_rows
from geir.lowering.templates.cube.loops import Index
from geir.lowering.templates.cube.plan import CubePlan
from geir.lowering.templates.cube.norm_epilogue import NormEpilogue
from geir.lowering.templates.cube.prologue import Prologue
from geir.lowering.templates.cube.tiling import Pricer, Tiling, l0c_slots, tile_cols
from geir.lowering.templates.vector.row import RowWindow


FIX_BIAS_ID = 3
"""Flag id of the FIX stage's parameters: MTE2 -> MTE1 (loaded into l1), M -> MTE1 (bt read)."""


class CubeKernel:
    """Builds the kernel of a plan with a tiling; subclasses allocate and load the operands
    (`_operand_buffers`) and walk the output tiles (`_tiles`)."""

    def __init__(self, req: KernelRequest, plan: CubePlan, tiling: Tiling, slots: int,
                 buffers: EpilogueBuffers | None, prologue: Prologue | None = None, norm: NormEpilogue | None = None,
                 pricer: Pricer | None = None):
        self.req, self.plan, self.t, self.slots, self.buffers = req, plan, tiling, slots, buffers
        self.pricer = pricer  # the tiling's prices, for choices the kernel makes (matmul tiling keys)
        self.prologue = prologue  # a norm before the product, run first (prologue.py)
        self.norm = norm  # a norm over the rows of each work item, after it (norm_epilogue.py)
        self.window: RowWindow | None = None
        self.lhs_base: Index = 0  # the first row of this block's copy of a prologue's lhs
        self.elt = plan.elt
        self.c0 = L.c0_of(plan.elt)
        # rows per batch of the outputs: channels padded to C0 in an NC1HWC0 result
        self.R = round_up(plan.rows, self.c0) if plan.out_blocked else plan.rows
        self.partner_out: SSAValue | None = None  # a gated matmul's partner product (gm scratch)

    def build(self) -> a.KernelOp:
        plan, t, elt, slots = self.plan, self.t, self.elt, self.slots
        pro, norm = self.prologue, self.norm
        own = pro.req if pro else norm.req if norm else self.req
        kb = self.kb = KernelBuilder(own, "mix" if self.buffers or pro or norm else "cube", t.blocks)
        if pro:
            self.lhs_base = pro.emit(kb)
        if norm:
            self.window = norm.setup(kb, t.mt)
        self._operand_buffers()
        self.l0a = [kb.alloc([t.mt, t.kt], elt, "l0a", f"l0a{s}") for s in range(slots)]
        self.l0b = [kb.alloc([t.kt, t.nt], elt, "l0b", f"l0b{s}") for s in range(slots)]
        # l0c accumulates in f32 (float operands) or in the i32 result (int8 operands); a
        # matmul's work items of several tiles take two l0c slots where they fit, so FIX
        # drains one tile while the cube fills the next (tiling.l0c_slots)
        acc_elt = plan.out_elt if plan.integer else f32
        n_acc = l0c_slots(self.req, t)
        self.l0cs = [kb.alloc([t.mt, t.nt], acc_elt, "l0c", f"l0c{c}" if n_acc > 1 else "l0c") for c in range(n_acc)]
        self.l0c = self.l0cs[0]
        self.fix_id = 0  # the flag id (FIX <-> M) of the l0c slot the current tile uses
        self.out2 = self._out_views()
        self.fix = plan.epilogue.fix
        if self.fix:
            self._fix_params()
        self.epilogue = None
        self.epilogue_cores = 0  # the vector cores the epilogue's passes are split over
        if self.buffers:
            self.epilogue = EpiloguePasses(kb, plan, self.buffers, self.out2, self.R, t.er, tile_cols(plan, t),
                                           self.partner_out)
            self.epilogue_cores = vector_cores_per_block(self.req.device)
        for s in range(slots):
            kb.set_flag("MTE1", "MTE2", s)
            kb.set_flag("M", "MTE1", s)
        if t.group > 1:  # the lhs panel of a matmul's work items (matmul_kernel.PANEL)
            kb.set_flag("MTE1", "MTE2", 2)
        for c in range(len(self.l0cs)):
            kb.set_flag("FIX", "M", c)
        for i in range(self.epilogue_cores):  # each vector core's credit for its passes
            with kb.sub_block(i) if self.epilogue_cores > 1 else nullcontext():
                kb.set_flag("MTE3", "MTE2", i)
        self._tiles()
        for s in range(slots):
            kb.wait_flag("MTE1", "MTE2", s)
            kb.wait_flag("M", "MTE1", s)
        if t.group > 1:
            kb.wait_flag("MTE1", "MTE2", 2)
        for c in range(len(self.l0cs)):
            kb.wait_flag("FIX", "M", c)
        for i in range(self.epilogue_cores):
            with kb.sub_block(i) if self.epilogue_cores > 1 else nullcontext():
                kb.wait_flag("MTE3", "MTE2", i)
        if self.fix:
            kb.wait_flag("M", "MTE1", FIX_BIAS_ID)
            if self.fix.per_channel:
                kb.wait_flag("FIX", "MTE1", 0)
        kernel = kb.finish()
        kernel.attributes[attr_names.TEMPLATE] = StringAttr(plan.TEMPLATE)
        return kernel

    def _fix_params(self) -> None:
        """The FIX stage's scales (and the conv's bias) for every channel into l1, once: a tile
        then moves its rows of them into fb (and bt) on MTE1 (`_tile_params`). One scale for
        all goes into fb here. Flags: M -> MTE1 FIX_BIAS_ID (the tile's first mmad has read bt),
        FIX -> MTE1 0 (the tile's FIX copy has read fb)."""
        kb, fix, mt = self.kb, self.fix, self.t.mt
        rows = params_rows(fix)
        n = fix.channels if fix.per_channel else 1
        self.scale_l1 = kb.alloc([rows], f32, "l1", "scale_l1")
        scales = kb.inputs[fix.scale]  # [C] in channel order (NC1HWC0: zero-padded to whole C0 blocks)
        n = max(n, a.nbytes_of(scales.type) // 4)
        kb.copy(kb.view(scales, [n]), kb.tile(self.scale_l1, [0], [n]))
        self.quant = kb.alloc([mt if fix.per_channel else 8], f32, "fb", "quant")
        self.bias_l1 = self.bt = None
        if fix.bias is not None:
            self.bias_l1 = kb.alloc([rows], i32, "l1", "bias_l1")
            kb.copy(kb.view(kb.inputs[fix.bias], [fix.channels]), kb.tile(self.bias_l1, [0], [fix.channels]))
            self.bt = kb.alloc([mt], i32, "bt", "bias")
        kb.sync("MTE2", "MTE1", FIX_BIAS_ID)
        if not fix.per_channel:
            self.tile_quant = kb.tile(self.quant, [0], [1])
            kb.copy(kb.tile(self.scale_l1, [0], [1]), self.tile_quant)
        else:
            kb.set_flag("FIX", "MTE1", 0)
        kb.set_flag("M", "MTE1", FIX_BIAS_ID)
        self.tile_bias = None

    def _tile_params(self, channel: Index, mp: int) -> None:
        """A tile's rows of the bias into bt and of the scales into fb (MTE1), once the tile
        before has read them."""
        if not self.fix:
            return
        kb = self.kb
        kb.wait_flag("M", "MTE1", FIX_BIAS_ID)
        if self.bt is not None:
            self.tile_bias = kb.tile(self.bt, [0], [mp])
            kb.copy(kb.tile(self.bias_l1, [channel], [mp]), self.tile_bias)
        if self.fix.per_channel:
            kb.wait_flag("FIX", "MTE1", 0)
            self.tile_quant = kb.tile(self.quant, [0], [mp])
            kb.copy(kb.tile(self.scale_l1, [channel], [mp]), self.tile_quant)

    def _row_window(self, row: Index, rows: int) -> None:
        """A norm epilogue's window: the vector cores' work on the `rows` whole rows from `row`
        that the FIX copies before staged, split between the block's vector cores (each told by
        a flag of its own that FIX is done)."""
        kb, window = self.kb, self.window
        for i, (r0, n) in enumerate(row_shares(rows, window.subs)):
            kb.set_flag("FIX", "MTE2", 0)
            with kb.sub_block(i) if window.subs > 1 else nullcontext():
                kb.wait_flag("FIX", "MTE2", 0)
                window.emit(kb.add(row, r0), n, i)

    def _out_views(self) -> list[SSAValue]:
        return [self._out_view(o, self.plan) for o in self.kb.outputs]

    def _out_view(self, out: SSAValue, plan: CubePlan) -> SSAValue:
        """An output as [B * R, C]; NC1HWC0 as [B * C1, C, C0]; head-split as [B * H * R, D]
        (head h of batch b: rows (b * H + h) * R ...); FRACTAL_NZ as it is."""
        if plan.out_nz:
            return out
        rows = plan.cache_rows or plan.rows  # a KV cache's rows per head
        return self.kb.view(out, [plan.batch * self.R // self.c0, plan.cols, self.c0] if plan.out_blocked
                            else [plan.batch * plan.heads * rows, plan.head_size] if plan.heads
                            else [plan.batch * plan.rows, plan.cols])

    def _operand_buffers(self) -> None:
        """The gm views of the operands and the l1 buffers (`l1a`, `l1b`, one per slot)."""
        raise NotImplementedError

    def _tiles(self) -> None:
        """Every output tile."""
        raise NotImplementedError

    def _load(self, src: SSAValue, dst: SSAValue) -> None:
        """gm -> l1 (MTE2), zero-padding an edge tile to the buffer."""
        if src.type.get_shape() == dst.type.get_shape():
            self.kb.copy(src, dst)
        else:
            self.kb.copy(src, dst, pad=UnitAttr())

    def _mmad(self, a0: SSAValue, b0: SSAValue, acc: SSAValue, u: int, first: bool) -> None:
        kb = self.kb
        kb.sync("MTE1", "M", u)
        if first:
            kb.wait_flag("FIX", "M", self.fix_id)  # the tile before in this l0c slot has left it
        if first and self.fix:  # the bias table initialises l0c (or zero, without a bias)
            kb.emit(a.MmadOp.get(a0, b0, acc, init=True, bias=self.tile_bias,
                                 bias_axis=0 if self.tile_bias is not None else None))
            kb.set_flag("M", "MTE1", FIX_BIAS_ID)
        else:
            kb.emit(a.MmadOp.get(a0, b0, acc, init=first))
        kb.set_flag("M", "MTE1", u)

    def _finish_tile(self, acc: SSAValue, row: Index, col: Index, mv: int, nv: int,
                     batch_row: tuple[Index, Index] | None = None, part: CubePlan | None = None,
                     out: SSAValue | None = None, position: Index = 0) -> None:
        """FIX: l0c -> gm (the valid part); then the epilogue over the staged tile. A
        head-split result needs the tile's batch and first row within it (`batch_row`). One
        of several products (`part`, no epilogue) goes to its own output `out`, a KV cache's
        heads at row `position` of each head."""
        kb, plan = self.kb, part or self.plan
        staging = self.epilogue.staging if self.epilogue else out or self.out2[0]
        kb.sync("M", "FIX", 0)
        props = {"relu": UnitAttr()} if plan.epilogue.fix_relu else {}
        if plan.heads:  # no epilogue work (plan.py): straight to the output, head by head
            self._fix_heads(acc, batch_row[0], self.kb.add(batch_row[1], position), col, mv, nv, props, plan, staging)
            kb.set_flag("FIX", "M", self.fix_id)
            return
        if plan.out_blocked:  # the FIX pipe writes the fractal rows as NC1HWC0 blocks
            dst = gm_tile(kb, staging, row, col, mv, nv, self.c0)
            props["layout"] = StringAttr("nd2nc1hwc0")
            if tuple(acc.type.get_shape())[1] != nv:
                props["pad"] = UnitAttr()
        elif plan.out_nz:  # whole fractals, as l0c holds them (the padding lanes: don't care)
            mp, np_ = acc.type.get_shape()
            dst = kb.tile(staging, [kb.divui(col, FRACTAL), kb.divui(row, FRACTAL), 0, 0],
                          [np_ // FRACTAL, mp // FRACTAL, FRACTAL, FRACTAL])
            props["layout"] = StringAttr("nd2nz")
        else:
            dst = kb.tile(staging, [row, col], [mv, nv])
            if tuple(acc.type.get_shape()) != (mv, nv):
                props["pad"] = UnitAttr()
        if self.fix:  # the FIX pipe quantizes (fix_quant.py)
            fix = self.fix
            kb.emit(a.CopyOp.get(acc, dst, quant=self.tile_quant, quant_axis=0 if fix.per_channel else None,
                                 zero_point=fix.zero_point, relu=fix.relu, pad="pad" in props,
                                 layout=props["layout"].data if "layout" in props else None))
            if fix.per_channel:
                kb.set_flag("FIX", "MTE1", 0)
        else:
            kb.copy(acc, dst, **props)
        kb.set_flag("FIX", "M", self.fix_id)
        if self.window is not None and self.t.group == 1:  # the tile holds whole rows
            self._row_window(row, mv)
        if not self.epilogue:
            return
        self._epilogue_passes(row, col, mv, nv, dst)

    def _epilogue_passes(self, row: Index, col: Index, mv: int, nv: int, staged: SSAValue) -> None:
        """The epilogue over the [mv, nv] tile FIX staged: its rows split between the block's
        vector cores (each told by a flag of its own that FIX is done; an NC1HWC0 tile's rows in
        whole C0 blocks), each core's passes on its own flag id."""
        kb, cores = self.kb, self.epilogue_cores
        unit = self.c0 if self.plan.out_blocked or self.epilogue.buffers.blocked else 1
        for i, (r0, n) in enumerate(row_shares(mv, cores, unit)):
            kb.set_flag("FIX", "MTE2", 0)
            with kb.sub_block(i) if cores > 1 else nullcontext():
                kb.wait_flag("FIX", "MTE2", 0)
                self.epilogue.after_fix(kb.add(row, r0), col, n, nv, staged if n == mv else None, flag=i)

    def _fix_heads(self, acc: SSAValue, b: Index, m0: Index, col: Index, mv: int, nv: int, props: dict,
                   plan: CubePlan, out: SSAValue) -> None:
        """The [mv, nv] tile of a head-split result, a FIX copy per head it covers: the tile's
        columns are whole heads or lie in one head (the tiling takes nt a multiple or a
        divisor of D), each piece [mv, w] to the head's rows of the [B * H * R, D] output."""
        kb = self.kb
        d = plan.head_size
        w = min(self.t.nt, d)
        mp = acc.type.get_shape()[0]
        if mp != mv:
            props = {**props, "pad": UnitAttr()}
        for i in range(nv // w):
            c = kb.add(col, i * w)
            head = kb.add(kb.mul(b, plan.heads), kb.divui(c, d))
            rows = plan.cache_rows or plan.rows
            dst = kb.tile(out, [kb.add(kb.mul(head, rows), m0), kb.remui(c, d)], [mv, w])
            kb.copy(kb.tile(acc, [0, i * w], [mp, w]), dst, **props)
