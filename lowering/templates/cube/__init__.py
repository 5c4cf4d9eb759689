"""Cube kernels: matmul / gemm / batched matmul and 2-D convolution, with a vector epilogue.

The unit of work is an output tile [Mt, Nt] of a [B, R, C] result (matmul: batch x M x N;
convolution: image x output channels x output pixels), run through the cube pipeline
gm -> l1 -> l0a / l0b -> l0c -> gm; a fusion's elementwise epilogue runs on the vector unit
of a `mix` kernel over the tile FIX staged in gm. Modules, in the order try_build uses them:

- ops.py: how the request's graph ops read (shapes, storage formats, views);
- plan.py: what the kernel computes (MatmulPlan / ConvPlan), the request analysis;
- epilogue.py: the ops after the cube op as vector instructions;
- epilogue_buffers.py: the epilogue's values on ub tiles, rows per pass;
- tiling.py: tile sizes, priced with the CostModel;
- prologue.py: a normalisation of the lhs run first in the kernel (graph-fuse's norm prologue);
- norm_epilogue.py: a normalisation of whole rows of the product run after them (graph-fuse's
  norm epilogue);
- kernel.py, matmul_kernel.py, conv_kernel.py, with loops.py and epilogue_passes.py: the
  `ascend.kernel`;
- depthwise.py: depthwise convolution on the vector unit, when the cost model prefers it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

from geir.dialects import ascend as a
from geir.dialects import formats as L
from geir.dialects import attr_names
from geir.lowering.templates.common import KernelChain, KernelRequest, LoweringError
from geir.lowering.templates.cube.conv_kernel import ConvKernel
from geir.lowering.templates.cube.depthwise import DepthwiseKernel, depthwise_tiling, exact_in_f32, is_depthwise
from geir.lowering.templates.cube.epilogue_buffers import EpilogueBuffers
from geir.lowering.templates.cube.kernel import CubeKernel
from geir.lowering.templates.cube.matmul_kernel import MatmulKernel
from geir.lowering.templates.cube.plan import ConvPlan, CubePlan, MatmulPlan, plan_projections, plan_request
from geir.lowering.templates.cube.norm_epilogue import NormEpilogue
from geir.lowering.templates.cube.norm_epilogue import split as split_norm_epilogue
from geir.lowering.templates.cube.prologue import Prologue
from geir.lowering.templates.cube.prologue import split as split_prologue
from geir.lowering.templates.vector import Reject
from geir.lowering.templates.cube.tiling import (EpilogueCost, Pricer, Tiling, chain_us, conv_tiling, l2_pieces,
                                                 matmul_footprint, matmul_tiling, row_ranges, tile_cols)

__all__ = ["try_build", "plan_request", "conv_tiling", "matmul_tiling", "is_depthwise"]


def try_build(req: KernelRequest) -> a.KernelOp | KernelChain | None:
    """A cube kernel for a request whose ops are one conv / matmul / gemm with views on its
    inputs and an elementwise epilogue, or several matmuls of one lhs (projections); a
    matmul's lhs may be normalised first, in the same kernel (its prologue, prologue.py).
    None for anything else."""
    pro = split_prologue(req)
    if pro is not None:
        return _build(pro.cube, pro)
    norm = split_norm_epilogue(req)
    if norm is not None:
        return _build_norm_epilogue(norm)
    return _build(req, None)


def _build_norm_epilogue(norm: NormEpilogue) -> a.KernelOp | None:
    """A matmul kernel whose work items are whole rows of the product, each normalised by
    the vector unit after it (norm_epilogue.py)."""
    req = norm.cube
    plan = plan_request(req)
    if not isinstance(plan, MatmulPlan) or plan.epilogue.has_work or plan.heads or plan.partner is not None \
            or plan.out_nz or plan.out_blocked or plan.part_cols:
        return None
    slots = 2 if req.double_buffer else 1
    pricer = Pricer(req.cost, plan.elt, slots, None, plan.out_elt, window=norm.window_cycles)
    tiling = matmul_tiling(req, plan, pricer)
    if tiling is None or (tiling.group == 1 and tiling.nt < plan.cols):
        return None
    try:
        return MatmulKernel(req, plan, tiling, slots, None, norm=norm).build()
    except (LoweringError, Reject):
        return None


def _build(req: KernelRequest, pro: Prologue | None) -> a.KernelOp | KernelChain | None:
    plan = plan_request(req)
    if plan is None:
        return _projections(req, pro)
    if pro is not None and (not isinstance(plan, MatmulPlan) or plan.lhs.trans or plan.lhs_nz
                            or req.inputs[plan.lhs.arg] is not pro.lhs):
        return None  # the prologue's rows are the lhs of a matmul, as stored
    # an epilogue on a FRACTAL_NZ result: not yet (op_info.cube_takes says so of the graph
    # ops; the plan knows exactly, e.g. a gemm's alpha)
    if plan is None or (plan.out_nz and plan.epilogue.has_work):
        return None
    slots = 2 if req.double_buffer else 1
    buffers = EpilogueBuffers(plan) if plan.epilogue.has_work else None
    # no lhs panel under a prologue: its lhs is each block's own copy (prologue.py)
    pricer = Pricer(req.cost, plan.elt, slots, EpilogueCost.of(buffers) if buffers else None, plan.out_elt,
                    groups=pro is None, fix=plan.epilogue.fix)
    tiling = matmul_tiling(req, plan, pricer) if isinstance(plan, MatmulPlan) else conv_tiling(req, plan, pricer)
    try:
        if is_depthwise(plan) and pro is None:
            vector = _vector_depthwise(req, plan, tiling)
            if vector is not None:
                return vector
        if tiling is None:
            return None
        if buffers is not None:
            tiling = _with_epilogue_rows(req, plan, tiling, buffers)
            if tiling is None:
                return None
        if pro is not None:
            return MatmulKernel(req, plan, tiling, slots, buffers, prologue=pro).build()
        pieces = _l2_pieces(req, plan, pricer, tiling, slots, buffers)
        if pieces is not None:
            return pieces
        return _kernel_class(plan)(req, plan, tiling, slots, buffers, pricer=pricer).build()
    except (LoweringError, Reject):  # a buffer plan that does not fit after all: not a kernel of ours
        return None


def _vector_depthwise(req: KernelRequest, plan: ConvPlan, cube: Tiling | None) -> a.KernelOp | None:
    """The vector unit's depthwise kernel (depthwise.py) where it prices below the cube's
    tiling `cube`; an int8 one with the plan whose epilogue is all vector instructions and
    whose bias the kernel adds itself (plan_request(vector=True)), where that is exact."""
    vplan = plan_request(req, vector=True) if plan.integer else plan
    if not isinstance(vplan, ConvPlan) or (vplan.integer and not exact_in_f32(vplan)):
        return None
    buffers = EpilogueBuffers(vplan, staged=False)
    tiling = depthwise_tiling(req, vplan, buffers)
    if tiling is None or (cube is not None and cube.estimate_us <= tiling.estimate_us):
        return None
    return DepthwiseKernel(req, vplan, tiling, buffers).build()


def _l2_pieces(req: KernelRequest, plan: CubePlan, pricer: Pricer, whole: Tiling, slots: int,
               buffers: EpilogueBuffers | None) -> KernelChain | None:
    """A matmul over L2 as kernels over blocks of its result (ranges of rows times ranges of
    columns), launched in order (tiling.l2_pieces); None when one kernel is cheaper or the
    plan cannot be split (a head-split or blocked result: its tiles are not plain ranges). A
    shape range's pieces each run the real rows of their own range: its row ranges are whole
    groups of positions where the groups allow, else equal parts of each group
    (tiling.row_ranges, matmul_kernel.py `_grouped`); a piece that cut groups would run all of
    its rows."""
    if not isinstance(plan, MatmulPlan) or plan.heads or plan.part_cols or plan.out_nz or plan.out_blocked:
        return None

    def tiling(part: MatmulPlan) -> Tiling | None:
        t = matmul_tiling(req, part, pricer)
        return _with_epilogue_rows(req, part, t, buffers) if t is not None and buffers is not None else t

    pieces = l2_pieces(req, plan, pricer, whole, tiling)
    if pieces is None:
        return None
    flat = _unfolded(req, plan) if len({rows for rows, _, _ in pieces}) > 1 else None
    if flat is not None:  # ranges of rows: the same positions of every batch row instead
        buffers = EpilogueBuffers(flat) if flat.epilogue.has_work else None
        unfolded = l2_pieces(req, flat, pricer, whole, tiling)
        if unfolded is not None:
            plan, pieces = flat, unfolded
        else:
            buffers = EpilogueBuffers(plan) if plan.epilogue.has_work else None
    try:
        kernels = tuple(MatmulKernel(replace(req, name=f"{req.name}_n{i}"), plan, t, slots, buffers, rows=rows,
                                     cols=cols, pricer=pricer).build() for i, (rows, cols, t) in enumerate(pieces))
    except (LoweringError, Reject):  # a range's buffers do not fit after all: the whole kernel
        return None
    # every piece's scratch (a gated matmul's partner, a staged result) has the whole
    # result's shape, each piece writing its own columns: the chain's, allocated once
    count = kernels[0].attributes.get(attr_names.SCRATCH)
    return KernelChain(kernels, shared=count.value.data if count else 0)


def _unfolded(req: KernelRequest, plan: MatmulPlan) -> MatmulPlan | None:
    """A shape range's folded plan (a batch of left matrices times one right one, as one tall
    matrix) whose row groups are its batch entries - a sequence under the batch -, planned
    again unfolded: its L2 row ranges are then the same rows of every batch entry, not whole
    batch entries. At 64 of 4096 positions of 8 batch rows, pieces of whole entries each
    read all the weights for their 64 real rows (8 reads); pieces of the same rows of every
    entry leave the real rows to the first piece, and the others have none to run (one read).
    Only where the folded plan's pieces are ranges of rows: column ranges alone are the same
    either way, and the batched plan's pricing differs."""
    ext = req.extent
    if ext is None or ext.groups < 2 or plan.batch != 1 or plan.frame != plan.out_shape or len(plan.frame) < 3 \
            or math.prod(plan.frame[:-2]) != ext.groups:
        return None
    flat = plan_request(req, fold=False)
    if not isinstance(flat, MatmulPlan) or flat.batch != ext.groups or any(flat.rhs_batch):
        return None
    return flat


def _projections(req: KernelRequest, pro: Prologue | None = None) -> a.KernelOp | KernelChain | None:
    """One kernel for several products of one lhs (plan_projections), tiled as their
    concatenation along N: each part's tiles hold whole heads or lie in one, as a head split's;
    over L2, a chain of kernels of groups of them (`_l2_groups`)."""
    parts = plan_projections(req)
    if parts is None or (pro is not None and any(p.lhs.trans or p.lhs_nz or req.inputs[p.lhs.arg] is not pro.lhs
                                                 for p, _ in parts)):
        return None
    slots = 2 if req.double_buffer else 1
    plan = _concatenated(parts)
    pricer = Pricer(req.cost, plan.elt, slots, None, plan.out_elt)
    tiling = matmul_tiling(req, plan, pricer)
    if tiling is None:
        return None
    groups = _l2_groups(req, parts, plan, pricer, tiling) if pro is None else None
    if groups is not None:
        try:  # each group's kernel writes its own parts' outputs; none has scratch
            return KernelChain(tuple(MatmulKernel(replace(req, name=f"{req.name}_n{i}"), _concatenated(group), t, slots,
                                                  None, group, rows=rows, pricer=pricer).build()
                                     for i, (rows, group, t) in enumerate(groups)), 0)
        except (LoweringError, Reject):  # a group's buffers do not fit after all: one kernel
            pass
    try:
        return MatmulKernel(req, plan, tiling, slots, None, parts, pro, pricer=pricer).build()
    except (LoweringError, Reject):
        return None


def _concatenated(parts: list[tuple[MatmulPlan, int]]) -> MatmulPlan:
    """The plan the tiling prices for several products of one lhs: their concatenation along N."""
    first = parts[0][0]
    return replace(first, cols=sum(p.cols for p, _ in parts), heads=sum(p.heads for p, _ in parts),
                   part_cols=tuple(p.cols for p, _ in parts))


def _l2_groups(req: KernelRequest, parts: list[tuple[MatmulPlan, int]], plan: MatmulPlan, pricer: Pricer,
               whole: Tiling) -> list[tuple[tuple[int, int], list[tuple[MatmulPlan, int]], Tiling]] | None:
    """Several products (`plan` their concatenation) over L2 as launches of consecutive
    groups of them, each group one kernel (tiling.l2_pieces' rule with whole products for
    ranges: a product's columns are its own right operand's), for each range of the rows
    when the lhs is itself large (tiling.row_ranges; row ranges outer): [((first row, rows),
    group, tiling)], the cheapest split, or None when one kernel is cheapest."""
    if matmul_footprint(plan, pricer.isz, pricer.out_isz) <= req.device.l2_bytes:
        return None
    best, best_us = None, whole.estimate_us
    for rows in row_ranges(req, plan, pricer.isz):
        for cuts in itertools.product((False, True), repeat=len(parts) - 1):
            if not any(cuts) and len(rows) == 1:
                continue
            groups, start = [], 0
            for i, cut in enumerate((*cuts, True)):
                if cut:
                    groups.append(parts[start:i + 1])
                    start = i + 1
            priced = {(w, g): matmul_tiling(req, replace(_concatenated(groups[g]), rows=w), pricer)
                      for w in {w for _, w in rows} for g in range(len(groups))}
            if any(t is None for t in priced.values()):
                continue
            pieces = [(r, groups[g], priced[r[1], g]) for r in rows for g in range(len(groups))]
            us = chain_us(req.cost, [t for _, _, t in pieces])
            if us < best_us:
                best, best_us = pieces, us
    return best


def _with_epilogue_rows(req: KernelRequest, plan: CubePlan, tiling: Tiling, buffers: EpilogueBuffers) -> Tiling | None:
    """The tiling with the rows of an epilogue pass, or None if not one row fits ub."""
    er = buffers.rows(req, tiling.mt, tile_cols(plan, tiling))
    if plan.out_blocked or any(side.blocked for side in plan.epilogue.sides.values()):
        c0 = L.c0_of(plan.elt)
        er = er // c0 * c0  # passes over whole NC1HWC0 blocks
    return replace(tiling, er=er) if er >= 1 else None


def _kernel_class(plan: CubePlan) -> type[CubeKernel]:
    return ConvKernel if isinstance(plan, ConvPlan) else MatmulKernel
