"""What a cube kernel computes, independent of tiling: the request analysis.

A request is one cube op (op_info.CUBE: conv / matmul / gemm) with views on its inputs
(`resolve`: views, a transpose of the last two dims of a matmul operand, a channel concat
feeding a convolution) and an elementwise epilogue (epilogue.py). The result is seen as
[B, R, C]: matmul batch x M x N, convolution image x output channels x output pixels.

Storage formats (graph-layout): the combinations a kernel takes are op_info's
(`cube_formats`, `cube_takes`); the checks here are what the emitter adds to them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import ClassVar

from xdsl.ir import Attribute, Operation, SSAValue

from geir.dialects import formats as L
from geir.dialects import graph as g
from geir.dialects.ascend import FRACTAL
from geir.ir.types import is_float, to_dtype
from geir.lowering.templates.common import KernelRequest
from geir.lowering.templates.cube.epilogue import Epilogue, EpilogueBuilder, ResultFrame
from geir.lowering.templates.cube.fix_quant import fix_dequantize_prefix, fix_quant_stage
from geir.lowering.templates.cube.ops import (
    Unsupported,
    is_view,
    logical_shape,
    one_use,
    perm_of,
    storage,
    swaps_last_two,
)
from geir.target import op_info
from geir.target.device import dtype_name

KERNEL_DTYPES = frozenset(op_info.CUBE.dtypes)
"""Operand element types the cube kernels are built for: f16, bf16, f32 (the result in the
operands' type) and i8 (signed int8 x int8, the result the i32 accumulator)."""

INT8_K_FRACTAL = 32
"""K of an int8 fractal: the cube multiplies 16x32 by 32x16 int8 fractals (ascend.mmad)."""

PARTNER_ARG = -1
"""The epilogue side `arg` of a gated matmul's partner product: the kernel computes it into a
gm scratch of its own (MatmulPlan.partner), it is no kernel input."""


@dataclass(frozen=True)
class Operand:
    """A cube operand read from a kernel input: `arg` is the input index, `shape` the shape the
    cube op sees (views are free), `trans` whether the last two dims arrive swapped."""

    arg: int
    shape: tuple[int, ...]
    trans: bool = False


@dataclass(frozen=True)
class Segment:
    """Channels [start, start + count) of a convolution input, read from kernel input `arg`
    (viewed as [N, count, H, W]); several segments when the input is a channel concat."""

    arg: int
    start: int
    count: int


@dataclass(frozen=True)
class ConvGeometry:
    """A 2-D convolution (a 1-D one has h = 1): input [n, c, h, w], weights [m, c / group,
    kh, kw], strides sh / sw, dilations dh / dw, pads top / left / bottom / right, output
    [n, m, oh, ow]."""

    n: int
    c: int
    h: int
    w: int
    m: int
    group: int
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    pt: int
    pl: int
    pb: int
    pr: int
    oh: int
    ow: int

    @property
    def cg(self) -> int:
        """Input channels per group."""
        return self.c // self.group

    @property
    def mg(self) -> int:
        """Output channels per group."""
        return self.m // self.group

    @property
    def khw(self) -> int:
        return self.kh * self.kw

    @property
    def padded_width(self) -> int:
        return self.w + self.pl + self.pr

    def window_rows(self, ohs: int) -> int:
        """Input rows (padding included) that ohs output rows read."""
        return (ohs - 1) * self.sh + (self.kh - 1) * self.dh + 1

    def window_cols(self, ows: int) -> int:
        return (ows - 1) * self.sw + (self.kw - 1) * self.dw + 1

    def box(self, ohs: int, owt: int) -> tuple[int, int]:
        """Rows and columns of the input a tile of ohs x owt output pixels reads."""
        return min(self.h, self.window_rows(ohs)), min(self.w, self.window_cols(owt))


@dataclass(kw_only=True)
class CubePlan:
    """The result as [B, R, C] (batch x rows x columns) and its epilogue."""

    TEMPLATE: ClassVar[str]        # the kernel's `template` attribute

    cube: Operation
    elt: Attribute                 # element type of the operands (and of a float result)
    out_elt: Attribute             # element type of the cube op's result (i32 for int8)
    batch: int                     # B of the [B, R, C] result
    rows: int                      # R
    cols: int                      # C
    k: int                         # the reduced extent
    out_shape: tuple[int, ...]     # the cube op's result shape
    frame: tuple[int, ...]         # out_shape with the dims a 1-D matmul operand drops
    out_format: str                # storage of the result
    epilogue: Epilogue
    output_types: tuple[Attribute, ...] = ()  # element types of the kernel's outputs
    heads: int = 0                 # > 0: the result is written split into this many heads
    cache_rows: int = 0
    """A head-split result written into a KV cache [.., H, cache_rows, D] at the run-time row
    held by input `position` (a decoder's V): row (b * H + h) * cache_rows + position + s."""
    position: int = -1

    @property
    def integer(self) -> bool:
        """An int8 x int8 product accumulated and returned in i32."""
        return self.out_elt != self.elt

    @property
    def k_fractal(self) -> int:
        """K granularity of l0a / l0b and of the mmad: 32 for int8, 16 otherwise."""
        return INT8_K_FRACTAL if self.integer else FRACTAL

    @property
    def out_blocked(self) -> bool:
        return self.out_format == L.NC1HWC0

    @property
    def out_nz(self) -> bool:
        return self.out_format == L.FRACTAL_NZ

    @property
    def head_size(self) -> int:
        """D of a head-split result: the columns of each head."""
        return self.cols // self.heads

    def result_frame(self) -> ResultFrame:
        axes = self._axes() if self.frame == self.out_shape else None
        return ResultFrame(self.out_elt, self.out_shape, axes, isinstance(self, ConvPlan))

    def _axes(self) -> tuple[list[int], list[int], list[int]]:
        """The dims of out_shape that make up the B, R and C axes."""
        raise NotImplementedError


@dataclass(kw_only=True)
class MatmulPlan(CubePlan):
    """[B, M, K] x [B, K, N]; a batch of the result reads the operands' batches at
    `lhs_batch` / `rhs_batch` strides per dim of `batch_dims` (0: broadcast)."""

    TEMPLATE: ClassVar[str] = "matmul"

    lhs: Operand
    rhs: Operand
    lhs_batch: tuple[int, ...] = ()
    rhs_batch: tuple[int, ...] = ()
    batch_dims: tuple[int, ...] = ()
    lhs_nz: bool = False           # FRACTAL_NZ [K1, M1, 16, C0] of the stored matrix
    rhs_nz: bool = False
    part_cols: tuple[int, ...] = ()
    """Several products in one kernel (plan_projections): the columns of each part, whose
    tiles the kernel grids separately (the tiling counts them so)."""
    partner: Operand | None = None
    """A gated matmul (SwiGLU's silu(x W_gate) * (x W_up)): the right operand of a second
    product of the same lhs, computed tile by tile in the same kernel before the main one and
    read by the epilogue as the side PARTNER_ARG."""

    def _axes(self) -> tuple[list[int], list[int], list[int]]:
        rank = len(self.out_shape)
        if self.batch == 1 and rank > 2:  # batches folded into the rows
            return [], list(range(rank - 1)), [rank - 1]
        return list(range(rank - 2)), [rank - 2], [rank - 1]


@dataclass(kw_only=True)
class ConvPlan(CubePlan):
    """A convolution of the input `segments` with the weights of input `weight`; NC1HWC0
    feature map (`x_blocked`), FRACTAL_Z weights (`w_fz`)."""

    TEMPLATE: ClassVar[str] = "conv"

    geometry: ConvGeometry
    segments: tuple[Segment, ...]
    weight: int
    x_blocked: bool = False
    w_fz: bool = False
    pad_value: int = 0             # what the padding holds: an int8 conv's offset_x
    bias: int | None = None        # input of an i32 bias the kernel adds itself (plan_request(vector=True))

    @property
    def matrix_fm(self) -> bool:
        """An ND feature map read as the [K, pixels] matrix it is (a pointwise window), not
        a box expanded by load3d: its copy into l1 is the engine's ND2NZ of whole rows,
        where a box would be interleaved into C0 lanes one element at a time."""
        return op_info.pointwise(self.cube) and not self.x_blocked and not self.w_fz

    @property
    def samples_box(self) -> bool:
        """A strided pointwise window over an NC1HWC0 map (ResNet's projection shortcuts): an
        output pixel reads one input pixel, so the box copy takes only those pixels (a
        block-strided DMA: each pixel's C0 channels are one 32-byte block) and load3d reads
        them as a stride-1 image of the output's size. The window's box would carry sh x sw
        times the bytes the tile needs."""
        geo = self.geometry
        return (self.x_blocked and self.w_fz and geo.kh == geo.kw == 1 and (geo.sh, geo.sw) != (1, 1)
                and geo.pt == geo.pl == geo.pb == geo.pr == 0)

    def box(self, ohs: int, owt: int) -> tuple[int, int]:
        """Rows and columns of the l1 box of a tile of ohs x owt output pixels."""
        return (ohs, owt) if self.samples_box else self.geometry.box(ohs, owt)

    def _axes(self) -> tuple[list[int], list[int], list[int]]:
        return [0], [1], list(range(2, len(self.out_shape)))

    @property
    def is_depthwise(self) -> bool:
        geo = self.geometry
        return geo.group == geo.c > 1 and geo.cg == 1 and geo.mg == 1 and len(self.segments) == 1


def plan_projections(req: KernelRequest) -> list[tuple[MatmulPlan, int]] | None:
    """A request of several matmuls of one lhs, each followed only by the views (and the head
    split) that lead to its own output (graph-fuse's "projections": LLaMA's q / k / v): the
    plan of each product, with its output's index, or None. The products share the lhs, M, K,
    batch and types, and their heads have one size, so one tiling serves them all."""
    cubes = [op for op in req.ops if op_info.CUBE.takes(op)]
    if len(cubes) < 2 or not all(isinstance(c, g.MatMulOp) for c in cubes):
        return None
    inside, covered, parts = set(req.ops), set(), []
    for c in cubes:
        ops, v = [c], c.results[0]
        while v not in req.outputs:
            uses = list(v.uses)
            if len(uses) != 1 or uses[0].operation not in inside or len(uses[0].operation.results) != 1:
                return None
            ops.append(uses[0].operation)
            v = ops[-1].results[0]
        if any(u.operation in inside for u in v.uses):
            return None
        write = ops.pop() if isinstance(ops[-1], g.KvCacheWriteOp) else None
        plan = plan_request(replace(req, ops=ops, outputs=[ops[-1].results[0]]))
        if not isinstance(plan, MatmulPlan) or plan.epilogue.has_work or plan.partner is not None:
            return None
        if write is not None and not _into_cache(req, plan, write, ops[-1].results[0]):
            return None
        parts.append((plan, req.outputs.index(v)))
        covered.update(ops)
        covered.update([write] if write else [])
    d = next((p.head_size for p, _ in parts if p.heads), 0)
    for p, _ in parts:  # one row of one sequence split into heads or not: the same bytes
        if not p.heads and d and _one_row(p) and p.cols % d == 0:
            p.heads = p.cols // d
    first = parts[0][0]
    same = ("lhs", "batch", "rows", "k", "elt", "out_format", "lhs_nz", "rhs_nz", "lhs_batch", "batch_dims")
    if covered != inside or len({i for _, i in parts}) != len(parts) or first.out_nz:
        return None
    for p, _ in parts:
        if any(getattr(p, f) != getattr(first, f) for f in same) or p.rhs.shape[0] != first.rhs.shape[0] \
                or p.rhs.trans != first.rhs.trans or bool(p.heads) != bool(first.heads) \
                or (p.heads and p.head_size != first.head_size):
            return None
    return parts


def _one_row(plan: MatmulPlan) -> bool:
    """A product of one row of one sequence (a decode step at batch 1): [1, N]."""
    return plan.batch == 1 and plan.rows == 1 and not plan.out_nz and not plan.out_blocked


def _into_cache(req: KernelRequest, plan: MatmulPlan, write: g.KvCacheWriteOp, heads: SSAValue) -> bool:
    """Whether a head-split part can write its heads into the cache of `write` (the update is
    the heads [B, H, S, D], written along S, the position a kernel input): then the plan says
    where (`cache_rows`, `position`)."""
    cache, position = write.operands[0], write.operands[2]
    shape = logical_shape(cache)
    if not plan.heads and _one_row(plan) and len(shape) == 4 and plan.cols == shape[1] * shape[3] \
            and shape[3] % FRACTAL == 0:
        plan.heads = shape[1]  # one row of one sequence: its heads are a head split's
    if not plan.heads or write.operands[1] is not heads or position not in req.inputs or len(shape) != 4 \
            or write.attrs()["axis"] % 4 != 2 or storage(cache) != L.ND \
            or (shape[0], shape[1], shape[3]) != (plan.batch, plan.heads, plan.head_size):
        return False
    plan.cache_rows, plan.position = shape[2], req.inputs.index(position)
    return True


def plan_request(req: KernelRequest, fold: bool = True, vector: bool = False) -> CubePlan | None:
    """The cube plan of a request, or None when this template does not build it; `fold`
    off: a batch of left matrices times one right one keeps its batch (`_batched_matmul`);
    `vector`: the plan of a vector kernel computing an int8 convolution (depthwise.py) - its
    epilogue all vector instructions, none of it the FIX pipe's quantization, and the i32 bias
    the kernel's own (`ConvPlan.bias`), not an epilogue add."""
    if not req.ops or not any(op_info.CUBE.takes(op) for op in req.ops):
        return None
    try:
        return _Analysis(req).plan(fold, vector)
    except Unsupported:
        return None


class _Analysis:
    """Builds the plan of a request, or raises Unsupported."""

    def __init__(self, req: KernelRequest):
        self.req = req
        self.index = {v: i for i, v in enumerate(req.inputs)}
        cubes = [op for op in req.ops if op_info.CUBE.takes(op)]
        self.partner: Operation | None = None
        if len(cubes) == 2:
            self.cube, self.partner = _gated_pair(req.ops, cubes)
        elif len(cubes) == 1:
            self.cube = cubes[0]
        else:
            raise Unsupported
        self.position = req.ops.index(self.cube)
        self.used: set[Operation] = {self.cube}

    def plan(self, fold: bool = True, vector: bool = False) -> CubePlan:
        op = self.cube
        elt, out_elt = _element_types(op)
        self._check_formats(op)
        ops, outputs = self.req.ops[self.position + 1:], self.req.outputs
        if self.partner is not None:
            ops = [o for o in ops if o is not self.partner]
        split = None if isinstance(op, g.ConvOp) or self.partner else self._head_split(op)
        if split is not None:  # the transpose is the kernel's output pattern, not epilogue work
            transpose, heads = split
            ops, outputs = ops[:-1], [transpose.operands[0]]
            self.used.add(transpose)
        plan = self._conv(op, elt, out_elt) if isinstance(op, g.ConvOp) else self._matmul(op, elt, out_elt, fold=fold and split is None)
        if self.partner is not None:
            self._add_partner(plan)
        if split is not None:
            plan.heads = heads
            x = logical_shape(transpose.operands[0])
            if plan.rows != x[-3] or plan.batch * plan.rows != math.prod(x[:-2]):
                raise Unsupported  # the rows of one batch of the result are not one sequence
        integer_conv = plan.integer and isinstance(plan, ConvPlan) and not vector
        fix = fix_quant_stage(op, ops, outputs, self.index, self.req.device) if integer_conv else None
        prefix = fix_dequantize_prefix(op, ops, self.index, self.req.device) if integer_conv and not fix else None
        if fix is not None:  # the FIX pipe computes the whole epilogue (fix_quant.py)
            plan.epilogue.fix = fix
            plan.epilogue.outputs = [(0, plan.epilogue.result)]
            self.used.update(ops)
        else:
            builder = EpilogueBuilder(plan.epilogue, plan.result_frame(), self.index, self.used)
            start = None
            if prefix is not None:  # FIX dequantizes (its bias from bt): the vector epilogue goes on in f16
                plan.epilogue.fix, start = prefix
                self.used.update(ops[:2])
            elif isinstance(op, g.GemmOp):
                attrs = op.attrs()
                builder.gemm_scale(attrs["alpha"], attrs["beta"], op.operands[2] if len(op.operands) > 2 else None)
            elif isinstance(op, g.ConvOp) and len(op.operands) > 2 and vector and plan.integer:
                plan.bias = builder.input_index(op.operands[2])
            elif isinstance(op, g.ConvOp) and len(op.operands) > 2:
                builder.add_bias(op.operands[2])
            builder.translate(ops, outputs, start)
        if any(o not in self.used for o in self.req.ops):
            raise Unsupported  # ops before the cube op that are not its prologue, or left over
        if fix is None and prefix is None:
            builder.fold_relu_into_fix()
        if split is not None and plan.epilogue.has_work:
            raise Unsupported  # the epilogue passes write [B * R, C] tiles
        plan.output_types = tuple(v.type.element_type for v in self.req.outputs)
        return plan

    def _head_split(self, op: Operation) -> tuple[Operation, int] | None:
        """The request's last op when it splits the matmul result into heads - a transpose of
        [..., S, H, D] to [..., H, S, D], reached through views only, the kernel's one output -
        and H; the kernel then writes each head's [rows, D] tile where the transpose puts it
        (what the attention of a decoder reads), so no data kernel moves the result again."""
        last = self.req.ops[-1]
        if not isinstance(last, g.TransposeOp) or list(self.req.outputs) != [last.results[0]]:
            return None
        between = self.req.ops[self.position + 1:-1]
        if not all(is_view(o) for o in between) or storage(last.results[0]) != L.ND or storage(op.results[0]) != L.ND:
            return None
        x = logical_shape(last.operands[0])
        n = len(x)
        if n < 3 or perm_of(last) != (*range(n - 3), n - 2, n - 3, n - 1) or x[-3] == 1 or x[-2] == 1:
            return None
        heads, d = x[-2], x[-1]
        if d % FRACTAL or logical_shape(op.results[0])[-1] != heads * d:
            return None  # a head's columns are whole fractals of the accumulator
        return last, heads

    def _add_partner(self, plan: CubePlan) -> None:
        """The partner product of a gated matmul: the same lhs value, a right operand of the
        same shape, storage and transposition, one right matrix (no batch of them); its result
        becomes the epilogue side PARTNER_ARG."""
        p, op = self.partner, self.cube
        if not isinstance(plan, MatmulPlan) or plan.integer or plan.lhs_nz or plan.out_nz or any(plan.rhs_batch):
            raise Unsupported
        if p.operands[0] is not op.operands[0] or p.results[0].type != op.results[0].type:
            raise Unsupported
        w, pw = op.operands[1], p.operands[1]
        if logical_shape(pw) != logical_shape(w) or storage(pw) != storage(w):
            raise Unsupported
        self._check_formats(p)
        self.used.add(p)
        rhs = self.resolve(p.operands[1], allow_trans=True)
        if rhs.trans != plan.rhs.trans or (plan.rhs_nz and self.req.inputs[rhs.arg] is not p.operands[1]):
            raise Unsupported
        plan.partner = Operand(rhs.arg, plan.rhs.shape, rhs.trans)
        self.index[p.results[0]] = PARTNER_ARG

    @staticmethod
    def _check_formats(op: Operation) -> None:
        formats = tuple(storage(v) for v in (*op.operands, op.results[0]))
        if any(f not in op_info.cube_formats(op, i) for i, f in enumerate(formats)):
            raise Unsupported
        if not op_info.cube_takes(op, formats):
            raise Unsupported

    # -- the prologue -----------------------------------------------------------------------

    def _producer(self, v: SSAValue) -> Operation | None:
        owner = v.owner
        return owner if isinstance(owner, Operation) and owner in self.req.ops else None

    def resolve(self, v: SSAValue, allow_trans: bool = False) -> Operand:
        """Follow views (and one last-two-dims transpose) back to a kernel input."""
        shape = logical_shape(v)
        trans = False
        while True:
            if v in self.index:
                return Operand(self.index[v], shape, trans)
            op = self._producer(v)
            if op is None or op in self.used or not one_use(v):
                raise Unsupported
            if is_view(op):
                pass
            elif allow_trans and not trans and swaps_last_two(op) and logical_shape(v)[-2:] == shape[-2:]:
                # (the views between it and the operand regroup batch dims only: a reshape
                # that moves a transposed dim into the batch is no transposed read)
                trans = True
                shape = (*shape[:-2], shape[-1], shape[-2])
            else:
                raise Unsupported
            self.used.add(op)
            v = op.operands[0]

    def _segments(self, v: SSAValue, x: tuple[int, ...], group: int) -> tuple[Segment, ...]:
        """The input's channels by kernel input: one segment, or one per part of a concat."""
        op = self._producer(v)
        if isinstance(op, g.ConcatOp) and one_use(v):
            axis = op.attrs()["axis"] % len(x)
            if axis != 1 or group != 1:
                raise Unsupported
            self.used.add(op)
            segs, start = [], 0
            for part in op.operands:
                count = logical_shape(part)[1]
                segs.append(Segment(self.resolve(part).arg, start, count))
                start += count
            return tuple(segs)
        return (Segment(self.resolve(v).arg, 0, x[1]),)

    # -- matmul and gemm --------------------------------------------------------------------

    def _matmul(self, op: Operation, elt: Attribute, out_elt: Attribute, fold: bool = True) -> MatmulPlan:
        common = self._matmul_common(op, elt, out_elt)
        plan = self._gemm(op, common) if isinstance(op, g.GemmOp) else self._batched_matmul(op, common, fold)
        if plan.lhs_nz or plan.rhs_nz or plan.out_nz:
            # fractal operands are read whole-fractal at (row, col) of the stored matrix: one
            # matrix (no batch), not reached through views
            for flag, operand, v in ((plan.lhs_nz, plan.lhs, op.operands[0]), (plan.rhs_nz, plan.rhs, op.operands[1])):
                if flag and (len(logical_shape(v)) != 2 or self.req.inputs[operand.arg] is not v):
                    raise Unsupported
            # one right matrix broadcast over the batches is one matrix too (the head split
            # keeps batches unfolded): its fractals are read at (row, col) whatever the batch
            if ((plan.lhs_nz or plan.out_nz) and plan.batch != 1) or (plan.rhs_nz and any(plan.rhs_batch)) or (
                    plan.out_nz and (len(plan.out_shape) != 2 or plan.frame != plan.out_shape)):
                raise Unsupported
        return plan

    def _matmul_common(self, op: Operation, elt: Attribute, out_elt: Attribute) -> dict:
        """The MatmulPlan fields both forms share."""
        return dict(cube=op, elt=elt, out_elt=out_elt, out_shape=logical_shape(op.results[0]), out_format=storage(op.results[0]),
                    epilogue=Epilogue(op.results[0]), lhs_nz=storage(op.operands[0]) == L.FRACTAL_NZ,
                    rhs_nz=storage(op.operands[1]) == L.FRACTAL_NZ)

    def _gemm(self, op: Operation, common: dict) -> MatmulPlan:
        attrs = op.attrs()
        lhs = self.resolve(op.operands[0])
        rhs = self.resolve(op.operands[1])
        m, n = common["out_shape"]
        trans_a, trans_b = bool(attrs["trans_a"]), bool(attrs["trans_b"])
        k = lhs.shape[0] if trans_a else lhs.shape[1]
        return MatmulPlan(**common, batch=1, rows=m, cols=n, k=k, frame=common["out_shape"],
                          lhs=Operand(lhs.arg, (1, m, k), trans_a), rhs=Operand(rhs.arg, (1, k, n), trans_b))

    def _batched_matmul(self, op: Operation, common: dict, fold: bool = True) -> MatmulPlan:
        """numpy's matmul: 1-D operands promoted, batch dims broadcast; a batch of left
        matrices times one right one is one tall matrix unless `fold` is off."""
        lhs = self.resolve(op.operands[0], allow_trans=True)
        rhs = self.resolve(op.operands[1], allow_trans=True)
        ls, rs = list(logical_shape(op.operands[0])), list(logical_shape(op.operands[1]))
        # 1-D promotion (numpy): [K] is [1, K] on the left, [K, 1] on the right.
        if len(ls) == 1:
            if lhs.trans:
                raise Unsupported
            ls = [1, ls[0]]
        if len(rs) == 1:
            if rhs.trans:
                raise Unsupported
            rs = [rs[0], 1]
        m, k, n = ls[-2], ls[-1], rs[-1]
        batch = g.broadcast_shapes(ls[:-2], rs[:-2])
        lb = [1] * (len(batch) - len(ls[:-2])) + ls[:-2]
        rb = [1] * (len(batch) - len(rs[:-2])) + rs[:-2]
        lhs_b, rhs_b = _batch_strides(batch, lb), _batch_strides(batch, rb)
        nb = math.prod(batch)
        frame = (*batch, m, n)
        # A batch of left matrices times one right matrix is one tall matrix.
        if fold and nb > 1 and not any(rhs_b) and all(s > 0 for s, d in zip(lhs_b, batch) if d > 1) and not lhs.trans:
            return MatmulPlan(**common, batch=1, rows=nb * m, cols=n, k=k, frame=frame,
                              lhs=Operand(lhs.arg, (1, nb * m, k)),
                              rhs=Operand(rhs.arg, (math.prod(rb), *rs[-2:]), rhs.trans))
        return MatmulPlan(**common, batch=nb, rows=m, cols=n, k=k, frame=frame,
                          lhs=Operand(lhs.arg, (math.prod(lb), *ls[-2:]), lhs.trans),
                          rhs=Operand(rhs.arg, (math.prod(rb), *rs[-2:]), rhs.trans),
                          lhs_batch=lhs_b, rhs_batch=rhs_b, batch_dims=tuple(batch))

    # -- convolution ------------------------------------------------------------------------

    def _conv(self, op: Operation, elt: Attribute, out_elt: Attribute) -> ConvPlan:
        x, w = logical_shape(op.operands[0]), logical_shape(op.operands[1])
        if len(x) not in (3, 4):
            raise Unsupported
        out = logical_shape(op.results[0])
        geo = _conv_geometry(op.attrs(), x, w, out)
        segments = self._segments(op.operands[0], x, geo.group)
        weight = self.resolve(op.operands[1]).arg
        x_blocked = storage(op.operands[0]) == L.NC1HWC0
        w_fz = storage(op.operands[1]) == L.FRACTAL_Z
        # a FRACTAL_Z chunk is whole C0 blocks: a concat's parts must be too, and blocked
        if w_fz and len(segments) > 1 and (not x_blocked or any(sg.count % L.c0_of(elt) for sg in segments)):
            raise Unsupported
        return ConvPlan(cube=op, elt=elt, out_elt=out_elt, batch=geo.n, rows=geo.m, cols=geo.oh * geo.ow,
                        k=geo.cg * geo.khw, out_shape=out, frame=out, out_format=storage(op.results[0]),
                        epilogue=Epilogue(op.results[0]), geometry=geo, segments=segments, weight=weight,
                        x_blocked=x_blocked, w_fz=w_fz, pad_value=op.attrs().get("offset_x") or 0)


def _gated_pair(ops: list[Operation], cubes: list[Operation]) -> tuple[Operation, Operation]:
    """(main, partner) of a request with two matmuls of one lhs whose products an epilogue op
    combines: the partner's result has one use, an op the main result also reaches (silu(g) *
    u: u is the partner), or Unsupported."""
    inside = set(ops)
    for main, partner in (cubes, cubes[::-1]):
        if not all(isinstance(c, g.MatMulOp) for c in cubes) or partner.operands[0] is not main.operands[0]:
            raise Unsupported
        uses = list(partner.results[0].uses)
        if len(uses) != 1 or uses[0].operation not in inside:
            continue
        seen, todo = set(), [main]
        while todo:  # does the main product reach the partner's user inside the request?
            for r in todo.pop().results:
                for u in r.uses:
                    if u.operation in inside and u.operation not in seen:
                        seen.add(u.operation)
                        todo.append(u.operation)
        if uses[0].operation in seen:
            return main, partner
    raise Unsupported


def _element_types(op: Operation) -> tuple[Attribute, Attribute]:
    """(operand, result) element types of a cube op the kernels take, or Unsupported: float
    operands and result of one type, or int8 operands with the i32 result (uint8: not taken,
    graph-fold-qdq retypes uint8 activations to int8 and the fallback runs what is left)."""
    out = op.results[0].type.element_type
    elt = op.operands[0].type.element_type
    if any(v.type.element_type != elt for v in op.operands[:2]):
        raise Unsupported
    if is_float(elt):
        if out != elt or any(v.type.element_type != elt for v in op.operands[2:]):
            raise Unsupported
    elif not (elt == g.INT8_TYPES[0] and out == g.ACC_TYPE):  # signed int8 x int8 -> i32
        raise Unsupported
    if dtype_name(to_dtype(elt)) not in KERNEL_DTYPES:
        raise Unsupported
    return elt, out


def _batch_strides(batch: list[int], dims: list[int]) -> tuple[int, ...]:
    """Per result batch dim: the stride of an operand's batch along it (0: broadcast)."""
    out, acc = [], 1
    for full, d in zip(reversed(batch), reversed(dims)):
        out.append(acc if d == full and full > 1 else 0)
        acc *= d
    return tuple(reversed(out))


def _conv_geometry(attrs: dict, x: tuple[int, ...], w: tuple[int, ...], out: tuple[int, ...]) -> ConvGeometry:
    nd = len(x) - 2
    kernel = tuple(w[2:])
    pads = tuple(attrs["pads"] or (0,) * (2 * nd))
    strides = tuple(attrs["strides"] or (1,) * nd)
    dil = tuple(attrs["dilations"] or (1,) * nd)
    if nd == 1:  # a 1-D convolution is a 2-D one of height 1
        x, w, kernel = (x[0], x[1], 1, x[2]), (w[0], w[1], 1, w[2]), (1, kernel[0])
        pads, strides, dil = (0, pads[0], 0, pads[1]), (1, strides[0]), (1, dil[0])
        oh, ow = 1, out[2]
    else:  # ONNX pads: begins then ends
        oh, ow = out[2], out[3]
    return ConvGeometry(n=x[0], c=x[1], h=x[2], w=x[3], m=w[0], group=attrs["group"], kh=kernel[0], kw=kernel[1],
                        sh=strides[0], sw=strides[1], dh=dil[0], dw=dil[1], pt=pads[0], pl=pads[1], pb=pads[2],
                        pr=pads[3], oh=oh, ow=ow)
