"""Cube kernels: matmul / gemm / batched matmul and 2-D convolution, with a vector epilogue.

The unit of work is an output tile [Mt, Nt] of a [B, R, C] result (matmul: batch x M x N;
convolution: image x output channels x output pixels). Each tile runs the Da Vinci cube
pipeline

    gm --MTE2--> l1 --MTE1--> l0a / l0b --M (mmad)--> l0c --FIX--> gm

over K in two levels: chunks of `kl1` staged in l1 (double-buffered), and steps of `kt` moved
to l0a/l0b (double-buffered) and accumulated in l0c (the first step initialises it). A
convolution keeps its feature-map box in l1 and expands the windows with `ascend.load3d`
(img2col on MTE1) into the [K, pixels] tile of l0b; the weights [M, C/g, kh, kw] are the
[M, K] left matrix as they lie in gm. The output [Cout, pixels] tile is then a contiguous
NCHW slab, which is why the im2col goes to l0b rather than l0a.

Edge tiles: gm -> l1 copies `pad` a partial tile with zeros to whole fractals and the FIX
copy writes back only the valid part; tiles of every static size class get their own loop
(`_grid`), so all shapes stay static.

A fusion's epilogue (bias, activations, residual add, scale, batch norm, views) runs on the
vector unit of a `mix` kernel: the FIX pipe stages the tile in its gm output, MTE2 brings it
into ub with the side operands (broadcast with `vbrcb`), the vector ops run in ub and MTE3
writes the results - the 910B route, which has no l0c -> ub path. A relu right after the
cube rides on the FIX pipe instead.

Tile sizes are chosen with the device's CostModel: every candidate that fits l1/l0a/l0b/l0c
(with the ping-pong buffers when double buffering), with the l1 chunk of K as large as fits
or cut into 2-4 chunks, is priced per tile as a pipeline of its chunks - the first load, then
max(load, MTE1/M) per further chunk, then the last compute; their sum when single-buffered -
+ FIX + epilogue, MTE2 at no more than the block's share of HBM, times the waves of tiles
over the cube cores, bounded below by the HBM time of all bytes moved; the cheapest wins.

Depthwise convolution has two kernels: the cube one (one output channel per group, padded to
a 16-row fractal) and a vector one (`_DepthwiseKernel`: channel-innermost boxes in ub, one
multiply-add per tap); the cost model prices both and the cheaper is built - the vector one
for all but the smallest layers.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import StringAttr, UnitAttr, f32
from xdsl.ir import Attribute, Operation, SSAValue

from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.dialects import formats as L
from geir.ir.types import is_float, to_dtype
from geir.lowering.templates.common import (
    KernelBuilder,
    KernelRequest,
    LoweringError,
    block_elems,
    ceil_div,
    itemsize,
    round_up,
    row_elems,
)
from geir.target.cost_model import CostModel
from geir.target.device import dtype_name
from geir.dialects import attr_names

F = a.FRACTAL
CUBE_OPS = frozenset({"graph.conv", "graph.matmul", "graph.gemm"})
VIEW_OPS = frozenset({"graph.reshape", "graph.flatten", "graph.squeeze", "graph.unsqueeze",
                      "graph.identity", "graph.dropout"})

# ---------------------------------------------------------------------------
# What the fusion computes: the cube op, its prologue (views, transposes, a channel concat)
# and its epilogue (elementwise ops on the result, as vector instructions).
# ---------------------------------------------------------------------------


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


@dataclass
class Side:
    """An epilogue operand from gm, broadcast over the [B, R, C] result: which of the three
    axes it spans (the others are 1); `blocked` if it is stored NC1HWC0 (rows are then its
    padded channels)."""

    arg: int
    spans: tuple[bool, bool, bool]
    blocked: bool = False


@dataclass
class Instr:
    """One vector instruction of the epilogue on [rows, cols] ub tiles: `op` is the vector op
    name; `srcs` are value keys (graph values, Side objects or temporaries), `scalar` the
    immediate of the scalar forms (vadds, vmuls, ...)."""

    op: str
    dst: object
    srcs: tuple
    scalar: float | None = None


@dataclass
class Plan:
    """What a cube kernel computes, independent of tiling: the result as [B, R, C] (batch x
    rows x columns), where each operand comes from, and the epilogue program."""

    kind: str                      # "matmul" | "conv"
    cube: Operation
    elt: Attribute                 # element type of operands and result
    batch: int                     # B of the [B, R, C] result
    rows: int                      # R
    cols: int                      # C
    out_shape: tuple[int, ...]     # the cube op's result shape
    frame: tuple[int, ...] = ()    # out_shape with the dims a 1-D matmul operand drops
    # matmul
    lhs: Operand | None = None
    rhs: Operand | None = None
    lhs_batch: tuple[int, ...] = ()  # per result batch index: strides of the lhs/rhs batch (0: broadcast)
    rhs_batch: tuple[int, ...] = ()
    batch_dims: tuple[int, ...] = ()
    k: int = 0
    # conv
    segments: tuple[Segment, ...] = ()
    weight: int = -1
    conv: dict = field(default_factory=dict)
    # storage formats (graph-layout): NC1HWC0 feature map / result, FRACTAL_Z weights
    x_blocked: bool = False
    w_fz: bool = False
    out_blocked: bool = False
    lhs_nz: bool = False           # FRACTAL_NZ [K1, M1, 16, C0] of the stored matrix
    rhs_nz: bool = False
    out_nz: bool = False
    # epilogue
    instrs: list[Instr] = field(default_factory=list)
    sides: dict[object, Side] = field(default_factory=dict)
    result: SSAValue | None = None               # key of the cube result
    outputs: list[tuple[int, object]] = field(default_factory=list)  # (output index, value key)
    fix_relu: bool = False
    alias: dict[SSAValue, object] = field(default_factory=dict)  # graph value -> epilogue key

    @property
    def has_epilogue(self) -> bool:
        return bool(self.instrs) or len(self.outputs) > 1 or any(key is not self.result for _, key in self.outputs)


class _Unsupported(Exception):
    """The request is not (yet) a cube kernel this module builds: try_build returns None."""


def _shape(v: SSAValue) -> tuple[int, ...]:
    """The logical shape (a formatted tensor's origin shape): what the op computes on."""
    t = v.type
    return tuple(L.logical_shape(t)) if L.is_formatted(t) else tuple(t.get_shape())


def _storage(v: SSAValue) -> str:
    return L.storage_of(v.type)


def _one_use(v: SSAValue) -> bool:
    return sum(1 for _ in v.uses) == 1


def _strip(shape: Sequence[int]) -> tuple[int, ...]:
    s = list(shape)
    while s and s[0] == 1:
        s.pop(0)
    return tuple(s)


def _is_view(op: Operation) -> bool:
    if op.name in VIEW_OPS:
        return op.name != "graph.dropout" or len(op.operands) == 1 or g.constant_value_of(op.operands[-1]) is not None
    if op.name == "graph.transpose":
        x = _shape(op.operands[0])
        perm = op.attrs()["perm"] or tuple(reversed(range(len(x))))
        moved = [p for p in perm if x[p] != 1]
        return moved == sorted(moved)
    return False


def _swaps_last_two(op: Operation) -> bool:
    if op.name != "graph.transpose":
        return False
    rank = len(_shape(op.operands[0]))
    perm = op.attrs()["perm"] or tuple(reversed(range(rank)))
    return rank >= 2 and tuple(perm) == (*range(rank - 2), rank - 1, rank - 2)


class _Analysis:
    """Builds the Plan of a request, or raises _Unsupported."""

    def __init__(self, req: KernelRequest):
        self.req = req
        self.index = {v: i for i, v in enumerate(req.inputs)}
        cubes = [op for op in req.ops if op.name in CUBE_OPS]
        if len(cubes) != 1:
            raise _Unsupported
        self.cube = cubes[0]
        self.position = req.ops.index(self.cube)
        self.used: set[Operation] = {self.cube}

    # -- prologue ---------------------------------------------------------------------

    def _producer(self, v: SSAValue) -> Operation | None:
        owner = v.owner
        return owner if isinstance(owner, Operation) and owner in self.req.ops else None

    def resolve(self, v: SSAValue, allow_trans: bool = False) -> Operand:
        """Follow views (and one last-two-dims transpose) back to a kernel input."""
        shape = _shape(v)
        trans = False
        while True:
            if v in self.index:
                return Operand(self.index[v], shape, trans)
            op = self._producer(v)
            if op is None or op in self.used or not _one_use(v):
                raise _Unsupported
            if _is_view(op):
                pass
            elif allow_trans and not trans and _swaps_last_two(op):
                trans = True
                shape = (*shape[:-2], shape[-1], shape[-2])
            else:
                raise _Unsupported
            self.used.add(op)
            v = op.operands[0]

    # -- the cube op ------------------------------------------------------------------

    def plan(self) -> Plan:
        op = self.cube
        elt = op.results[0].type.element_type
        if not is_float(elt) or dtype_name(to_dtype(elt)) not in ("f16", "f32"):
            raise _Unsupported
        if any(v.type.element_type != elt for v in op.operands):
            raise _Unsupported
        plan = self._conv(op, elt) if op.name == "graph.conv" else self._matmul(op, elt)
        plan.result = op.results[0]
        self._epilogue(plan)
        leftover = [o for o in self.req.ops if o not in self.used]
        if leftover:
            raise _Unsupported
        return plan

    def _matmul(self, op: Operation, elt: Attribute) -> Plan:
        plan = self._matmul_plan(op, elt)
        nz = [_storage(v) == L.FRACTAL_NZ for v in op.operands[:2]]
        plan.lhs_nz, plan.rhs_nz = nz
        plan.out_nz = _storage(op.results[0]) == L.FRACTAL_NZ
        others = [v for v in (*op.operands[2:],) if _storage(v) != L.ND]
        if any(_storage(v) not in (L.ND, L.FRACTAL_NZ) for v in (*op.operands, *op.results)) or others:
            raise _Unsupported
        if any(nz) or plan.out_nz:
            # fractal operands are read whole-fractal at (row, col) of the stored matrix: one
            # matrix (no batch), not reached through views
            for flag, operand, v in ((nz[0], plan.lhs, op.operands[0]), (nz[1], plan.rhs, op.operands[1])):
                if flag and (len(_shape(v)) != 2 or self.req.inputs[operand.arg] is not v):
                    raise _Unsupported
            if plan.batch != 1 or (plan.out_nz and (len(plan.out_shape) != 2 or plan.frame != plan.out_shape)):
                raise _Unsupported
        return plan

    def _matmul_plan(self, op: Operation, elt: Attribute) -> Plan:
        out = _shape(op.results[0])
        if op.name == "graph.gemm":
            attrs = op.attrs()
            lhs = self.resolve(op.operands[0])
            rhs = self.resolve(op.operands[1])
            lhs = Operand(lhs.arg, lhs.shape, bool(attrs["trans_a"]))
            rhs = Operand(rhs.arg, rhs.shape, bool(attrs["trans_b"]))
            m, n = out
            k = lhs.shape[0] if lhs.trans else lhs.shape[1]
            lhs, rhs = Operand(lhs.arg, (1, m, k), lhs.trans), Operand(rhs.arg, (1, k, n), rhs.trans)
            plan = Plan("matmul", op, elt, 1, m, n, out, out, lhs=lhs, rhs=rhs, k=k)
            self._gemm_epilogue(plan, op, attrs)
            return plan
        lhs = self.resolve(op.operands[0], allow_trans=True)
        rhs = self.resolve(op.operands[1], allow_trans=True)
        ls, rs = list(_shape(op.operands[0])), list(_shape(op.operands[1]))
        # 1-D promotion (numpy): [K] is [1, K] on the left, [K, 1] on the right.
        if len(ls) == 1:
            if lhs.trans:
                raise _Unsupported
            ls = [1, ls[0]]
            lhs = Operand(lhs.arg, tuple(ls))
        if len(rs) == 1:
            if rhs.trans:
                raise _Unsupported
            rs = [rs[0], 1]
            rhs = Operand(rhs.arg, tuple(rs))
        m, k, n = ls[-2], ls[-1], rs[-1]
        batch = g.broadcast_shapes(ls[:-2], rs[:-2])
        lb = [1] * (len(batch) - len(ls[:-2])) + ls[:-2]
        rb = [1] * (len(batch) - len(rs[:-2])) + rs[:-2]

        def strides(dims: list[int]) -> tuple[int, ...]:
            out, acc = [], 1
            for full, d in zip(reversed(batch), reversed(dims)):
                out.append(acc if d == full and full > 1 else 0)
                acc *= d
            return tuple(reversed(out))

        lhs_b, rhs_b = strides(lb), strides(rb)
        nb = math.prod(batch)
        plan = Plan("matmul", op, elt, nb, m, n, out, (*batch, m, n), lhs=Operand(lhs.arg, (math.prod(lb), *ls[-2:]), lhs.trans),
                    rhs=Operand(rhs.arg, (math.prod(rb), *rs[-2:]), rhs.trans), lhs_batch=lhs_b,
                    rhs_batch=rhs_b, batch_dims=tuple(batch), k=k)
        # A batch of left matrices times one right matrix is one tall matrix.
        if nb > 1 and not any(rhs_b) and all(s > 0 for s, d in zip(lhs_b, batch) if d > 1) and not lhs.trans:
            plan.batch, plan.rows = 1, nb * m
            plan.lhs = Operand(lhs.arg, (1, nb * m, k))
            plan.lhs_batch = plan.rhs_batch = ()
            plan.batch_dims = ()
        return plan

    def _conv(self, op: Operation, elt: Attribute) -> Plan:
        x, w = _shape(op.operands[0]), _shape(op.operands[1])
        if len(x) not in (3, 4):
            raise _Unsupported
        attrs = op.attrs()
        nd = len(x) - 2
        kernel = tuple(w[2:])
        pads = tuple(attrs["pads"] or (0,) * (2 * nd))
        strides = tuple(attrs["strides"] or (1,) * nd)
        dil = tuple(attrs["dilations"] or (1,) * nd)
        out = _shape(op.results[0])
        if nd == 1:  # a 1-D convolution is a 2-D one of height 1
            x, w, kernel = (x[0], x[1], 1, x[2]), (w[0], w[1], 1, w[2]), (1, kernel[0])
            pads, strides, dil = (0, pads[0], 0, pads[1]), (1, strides[0]), (1, dil[0])
            oh, ow = 1, out[2]
        else:
            pads = (pads[0], pads[1], pads[2], pads[3])  # ONNX: begins then ends
            oh, ow = out[2], out[3]
        group = attrs["group"]
        n, c, h, wd = x
        mo = w[0]
        segments = self._segments(op.operands[0], x, group)
        weight = self.resolve(op.operands[1]).arg
        x_blocked = _storage(op.operands[0]) == L.NC1HWC0
        w_fz = _storage(op.operands[1]) == L.FRACTAL_Z
        out_blocked = _storage(op.results[0]) == L.NC1HWC0
        c0 = L.c0_of(elt)
        if (x_blocked or w_fz) and (nd != 2 or group != 1 or not w_fz):
            raise _Unsupported  # an NC1HWC0 box needs FRACTAL_Z (K order (c1, kh, kw, c0)) weights
        if w_fz and len(segments) > 1 and (not x_blocked or any(sg.count % c0 for sg in segments)):
            raise _Unsupported
        if out_blocked and group != 1:
            raise _Unsupported
        geometry = dict(n=n, c=c, h=h, w=wd, m=mo, group=group, cg=c // group, mg=mo // group,
                        kh=kernel[0], kw=kernel[1], sh=strides[0], sw=strides[1], dh=dil[0], dw=dil[1],
                        pt=pads[0], pl=pads[1], pb=pads[2], pr=pads[3], oh=oh, ow=ow)
        plan = Plan("conv", op, elt, n, mo, oh * ow, out, out, segments=segments, weight=weight, conv=geometry,
                    k=(c // group) * kernel[0] * kernel[1], x_blocked=x_blocked, w_fz=w_fz,
                    out_blocked=out_blocked)
        if len(op.operands) > 2:  # the bias: an epilogue add over the rows
            bias = op.operands[2]
            side = Side(self._input(bias), (False, True, False))
            plan.sides[bias] = side
            tmp = _Temp(None)
            plan.instrs.append(Instr(a.VaddOp, tmp, (op.results[0], bias)))
            plan.alias[op.results[0]] = tmp
        return plan

    def _gemm_epilogue(self, plan: Plan, op: Operation, attrs: dict) -> None:
        """alpha * (a @ b) + beta * c as epilogue instructions on the raw product."""
        raw: object = op.results[0]
        alpha, beta = attrs["alpha"], attrs["beta"]
        if alpha != 1.0:
            t = _Temp(None)
            plan.instrs.append(Instr(a.VmulsOp, t, (raw,), alpha))
            raw = t
        if len(op.operands) > 2 and beta != 0.0:
            self.plan_ = plan
            c = self._operand(op.operands[2], {}, plan.out_shape, True)
            if beta != 1.0:
                if _scalar_of(c) is not None:
                    c = ("scalar", _scalar_of(c) * beta)
                else:
                    t = _Temp(None)
                    plan.instrs.append(Instr(a.VmulsOp, t, (c,), beta))
                    c = t
            t = _Temp(None)
            self._binary("add", t, raw, c)
            raw = t
        if raw is not op.results[0]:
            plan.alias[op.results[0]] = raw

    def _segments(self, v: SSAValue, x: tuple[int, ...], group: int) -> tuple[Segment, ...]:
        op = self._producer(v)
        if op is not None and op.name == "graph.concat" and _one_use(v):
            axis = op.attrs()["axis"] % len(x)
            if axis != 1 or group != 1:
                raise _Unsupported
            self.used.add(op)
            segs, start = [], 0
            for part in op.operands:
                count = _shape(part)[1]
                segs.append(Segment(self.resolve(part).arg, start, count))
                start += count
            return tuple(segs)
        return (Segment(self.resolve(v).arg, 0, x[1]),)

    def _input(self, v: SSAValue) -> int:
        if v not in self.index:
            raise _Unsupported
        return self.index[v]

    # -- epilogue -----------------------------------------------------------------------

    def _epilogue(self, plan: Plan) -> None:
        """Translate the ops after the cube op into vector instructions on result tiles."""
        cube_out = plan.result
        alias = plan.alias
        main: dict[SSAValue, object] = {cube_out: alias.get(cube_out, cube_out)}
        numel = math.prod(plan.out_shape)
        canon = _strip(plan.out_shape)
        self.plan_ = plan
        for op in self.req.ops[self.position + 1:]:
            if op in self.used:
                continue
            if not any(v in main for v in op.operands):
                raise _Unsupported  # side computations stay out of cube kernels
            if len(op.results) != 1:
                raise _Unsupported
            res = op.results[0]
            if res.type.element_type != plan.elt or math.prod(_shape(res)) != numel:
                raise _Unsupported
            if _storage(res) != _storage(cube_out):
                raise _Unsupported
            same_frame = _strip(_shape(res)) == canon
            self.used.add(op)
            main[res] = self._translate(op, main, same_frame)
        for v in self.req.ops[: self.position]:
            if v not in self.used:
                raise _Unsupported
        for i, v in enumerate(self.req.outputs):
            if v not in main:
                raise _Unsupported
            plan.outputs.append((i, main[v]))
        # A relu applied to the result alone, before anything else, rides on the FIX pipe.
        first = plan.instrs[0] if plan.instrs else None
        if (first is not None and first.op == a.VreluOp and first.srcs == (cube_out,)
                and not any(key is cube_out for _, key in plan.outputs)
                and not any(cube_out in ins.srcs for ins in plan.instrs[1:])):
            plan.fix_relu = True
            plan.instrs.pop(0)
            dst = first.dst
            plan.instrs = [_rename(ins, dst, cube_out) for ins in plan.instrs]
            plan.outputs = [(i, cube_out if key is dst else key) for i, key in plan.outputs]

    def _operand(self, v: SSAValue, main: dict, res_shape: tuple[int, ...], same_frame: bool,
                 shape: tuple[int, ...] | None = None) -> object:
        """The key of an operand: a main value, a known scalar, or a broadcast Side."""
        if v in main:
            return main[v]
        plan = self.plan_
        known = g.constant_value_of(v)
        if known is not None and known.size == 1:
            return ("scalar", float(np.asarray(known).reshape(-1)[0]))
        if v not in self.index or v.type.element_type != plan.elt:
            raise _Unsupported
        if v in plan.sides:
            return v
        spans = self._spans(shape or _shape(v), res_shape, same_frame)
        blocked = _storage(v) == L.NC1HWC0
        if blocked and (shape is not None or not spans[1] or plan.kind != "conv"):
            raise _Unsupported  # NC1HWC0 sides span the channels (graph-layout's elementwise rule)
        if _storage(v) not in (L.ND, L.NC1HWC0):
            raise _Unsupported
        plan.sides[v] = Side(self.index[v], spans, blocked)
        return v

    def _spans(self, side: tuple[int, ...], res: tuple[int, ...], same_frame: bool) -> tuple[bool, bool, bool]:
        """Which of the result's [B, R, C] axes a side operand spans (it is 1 along the others)."""
        plan = self.plan_
        if math.prod(side) == 1:
            return (False, False, False)
        out = plan.out_shape
        if plan.frame != out:
            raise _Unsupported  # a 1-D matmul operand dropped a dim: only scalars broadcast simply
        side = tuple(side)
        while len(side) > len(out) and side[0] == 1:
            side = side[1:]
        if not same_frame or len(side) > len(out):
            raise _Unsupported
        side = (1,) * (len(out) - len(side)) + side
        if plan.kind == "conv":
            groups = [[0], [1], list(range(2, len(out)))]
        else:
            groups = [list(range(len(out) - 2)), [len(out) - 2], [len(out) - 1]]
            if plan.batch == 1 and len(out) > 2:  # batches folded into the rows
                groups = [[], list(range(len(out) - 1)), [len(out) - 1]]
        spans = []
        for dims in groups:
            big = [d for d in dims if out[d] > 1]
            full = [side[d] == out[d] for d in big]
            if any(full) and not all(full):
                raise _Unsupported
            if any(side[d] not in (1, out[d]) for d in dims):
                raise _Unsupported
            spans.append(bool(big) and all(full))
        return tuple(spans)  # type: ignore[return-value]

    def _translate(self, op: Operation, main: dict, same_frame: bool) -> object:
        plan = self.plan_
        name = op.name.removeprefix("graph.")
        res_shape = _shape(op.results[0])
        if _is_view(op):
            return main[op.operands[0]]
        if name == "batch_norm":  # per-channel parameters: [C] along axis 1
            per_channel = (res_shape[1],) + (1,) * (len(res_shape) - 2)
            ops = [self._operand(v, main, res_shape, same_frame, per_channel if i else None)
                   for i, v in enumerate(op.operands)]
        else:
            ops = [self._operand(v, main, res_shape, same_frame) for v in op.operands]
        emit = plan.instrs.append
        dst = _Temp(op.results[0])
        unary = {"relu": a.VreluOp, "sigmoid": a.VsigmoidOp, "tanh": a.VtanhOp, "erf": a.VerfOp, "exp": a.VexpOp,
                 "log": a.VlogOp, "sqrt": a.VsqrtOp, "reciprocal": a.VrecOp, "neg": a.VnegOp, "abs": a.VabsOp,
                 "floor": a.VfloorOp, "ceil": a.VceilOp, "round": a.VroundOp, "sin": a.VsinOp, "cos": a.VcosOp,
                 "sign": a.VsignOp}
        attrs = op.attrs()
        if name in unary and len(ops) == 1:
            emit(Instr(unary[name], dst, (ops[0],)))
        elif name == "leaky_relu":
            emit(Instr(a.VlreluOp, dst, (ops[0],), attrs["alpha"]))
        elif name in ("add", "sub", "mul", "div", "max", "min"):
            self._binary(name, dst, ops[0], ops[1])
        elif name in ("sum", "max", "min", "mean") and len(ops) >= 1:
            base = {"sum": "add", "mean": "add"}.get(name, name)
            acc = ops[0]
            for i, o in enumerate(ops[1:]):
                t = dst if i == len(ops) - 2 and name != "mean" else _Temp(None)
                self._binary(base, t, acc, o)
                acc = t
            if name == "mean":
                emit(Instr(a.VmulsOp, dst, (acc,), 1.0 / len(ops)))
            elif len(ops) == 1:
                return acc
        elif name == "pow" and _scalar_of(ops[1]) in (1.0, 2.0, 0.5):
            p = _scalar_of(ops[1])
            if p == 1.0:
                return ops[0]
            emit(Instr(a.VmulOp, dst, (ops[0], ops[0])) if p == 2.0 else Instr(a.VsqrtOp, dst, (ops[0],)))
        elif name == "clip":
            x, cur = ops[0], ops[0]
            for bound, vop in zip(op.operands[1:], (a.VmaxsOp, a.VminsOp)):
                known = g.constant_value_of(bound)
                if known is None:
                    raise _Unsupported
                if known.size == 0:
                    continue
                emit(Instr(vop, dst, (cur,), float(known.reshape(-1)[0])))
                cur = dst
            if cur is x:
                return x
        elif name == "gelu":
            x = ops[0]
            if attrs["approximate"] == "tanh":
                t = _Temp(None)
                emit(Instr(a.VmulOp, t, (x, x)))
                emit(Instr(a.VmulOp, t, (t, x)))
                emit(Instr(a.VmulsOp, t, (t,), 0.044715))
                emit(Instr(a.VaddOp, t, (t, x)))
                emit(Instr(a.VmulsOp, t, (t,), math.sqrt(2 / math.pi)))
                emit(Instr(a.VtanhOp, t, (t,)))
            else:
                t = _Temp(None)
                emit(Instr(a.VmulsOp, t, (x,), 1 / math.sqrt(2)))
                emit(Instr(a.VerfOp, t, (t,)))
            emit(Instr(a.VaddsOp, t, (t,), 1.0))
            emit(Instr(a.VmulOp, t, (t, x)))
            emit(Instr(a.VmulsOp, dst, (t,), 0.5))
        elif name == "hard_sigmoid" or name == "hard_swish":
            alpha, beta = (attrs["alpha"], attrs["beta"]) if name == "hard_sigmoid" else (1 / 6, 0.5)
            t = dst if name == "hard_sigmoid" else _Temp(None)
            emit(Instr(a.VmulsOp, t, (ops[0],), alpha))
            emit(Instr(a.VaddsOp, t, (t,), beta))
            emit(Instr(a.VmaxsOp, t, (t,), 0.0))
            emit(Instr(a.VminsOp, t, (t,), 1.0))
            if name == "hard_swish":
                emit(Instr(a.VmulOp, dst, (t, ops[0])))
        elif name == "prelu":
            x, slope = ops
            t, u = _Temp(None), _Temp(None)
            emit(Instr(a.VminsOp, t, (x,), 0.0))
            self._binary("mul", t, t, slope)
            emit(Instr(a.VreluOp, u, (x,)))
            emit(Instr(a.VaddOp, dst, (u, t)))
        elif name == "batch_norm":
            x, scale, bias, mean, var = ops
            t, u = _Temp(None), _Temp(None)
            self._binary("sub", t, x, mean)
            self._binary("add", u, var, ("scalar", attrs["epsilon"]))
            emit(Instr(a.VsqrtOp, u, (u,)))
            emit(Instr(a.VdivOp, t, (t, u)))
            self._binary("mul", t, t, scale)
            self._binary("add", dst, t, bias)
        else:
            raise _Unsupported
        return dst

    def _binary(self, name: str, dst: object, lhs: object, rhs: object) -> None:
        emit = self.plan_.instrs.append
        ls, rs = _scalar_of(lhs), _scalar_of(rhs)
        if ls is not None and rs is not None:
            raise _Unsupported
        commutes = name in ("add", "mul", "max", "min")
        if ls is not None and commutes:
            lhs, rhs, ls, rs = rhs, lhs, rs, ls
        if rs is not None:
            if name == "div" and rs == 0:
                raise _Unsupported
            vop, imm = {"add": (a.VaddsOp, rs), "sub": (a.VaddsOp, -rs), "mul": (a.VmulsOp, rs),
                        "div": (a.VmulsOp, 1.0 / rs if rs else 0.0), "max": (a.VmaxsOp, rs),
                        "min": (a.VminsOp, rs)}[name]
            emit(Instr(vop, dst, (lhs,), imm))
        elif ls is not None:  # s - x, s / x
            if name == "sub":
                emit(Instr(a.VmulsOp, dst, (rhs,), -1.0))
                emit(Instr(a.VaddsOp, dst, (dst,), ls))
            else:
                emit(Instr(a.VrecOp, dst, (rhs,)))
                emit(Instr(a.VmulsOp, dst, (dst,), ls))
        else:
            emit(Instr({"add": a.VaddOp, "sub": a.VsubOp, "mul": a.VmulOp, "div": a.VdivOp, "max": a.VmaxOp,
                        "min": a.VminOp}[name], dst, (lhs, rhs)))


class _Temp:
    """A value of the epilogue that lives in a ub tile (named after its graph value)."""

    def __init__(self, value: SSAValue | None):
        self.value = value

    def __repr__(self) -> str:
        return f"%{self.value.name_hint}" if self.value is not None and self.value.name_hint else f"tmp{id(self) % 1000}"


def _scalar_of(key: object) -> float | None:
    return key[1] if isinstance(key, tuple) and key and key[0] == "scalar" else None


def _rename(ins: Instr, old: object, new: object) -> Instr:
    return Instr(ins.op, new if ins.dst is old else ins.dst, tuple(new if s is old else s for s in ins.srcs), ins.scalar)


def plan_request(req: KernelRequest) -> Plan | None:
    """The cube plan of a request, or None when this module does not build it. Storage
    formats: a convolution reads NC1HWC0 or NCHW feature maps, FRACTAL_Z or plain weights and
    writes NC1HWC0 or NCHW (the analysis checks the combinations); matmuls read ND."""
    if not req.ops or not any(op.name in CUBE_OPS for op in req.ops):
        return None
    try:
        return _Analysis(req).plan()
    except _Unsupported:
        return None


# ---------------------------------------------------------------------------
# Tiling, priced with the cost model.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Tiling:
    """Tile sizes of a cube kernel. Matmul: [mt, nt] output tiles; convolution: mt output
    channels x (ohs rows x owt columns) output pixels, cc input channels per l1 chunk. Both:
    kt rows of K per l0 step, kl1 per l1 chunk; er rows per epilogue pass."""

    mt: int
    nt: int
    kt: int
    kl1: int
    blocks: int
    tiles: int
    estimate_us: float
    ohs: int = 0
    owt: int = 0
    cc: int = 0
    er: int = 0


MT_CHOICES = (16, 32, 48, 64, 96, 128, 192, 256)
KT_CHOICES = (16, 32, 48, 64, 96, 128, 256)


def _choices(extent: int, choices: Sequence[int] = MT_CHOICES) -> list[int]:
    """Multiples of 16 to try for a dim of `extent` (the whole dim when it is small)."""
    whole = round_up(extent, F)
    out = sorted({c for c in choices if c < whole} | ({whole} if whole <= max(choices) else set()))
    return out or [F]


class _Pricer:
    """Prices one tile of a candidate with the device's cost model (cube-clock cycles)."""

    def __init__(self, cost: CostModel, elt: Attribute, slots: int, epilogue: _EpilogueShape | None):
        self.cost = cost
        self.isz = itemsize(elt)
        self.dtype = dtype_name(to_dtype(elt))
        self.slots = slots
        self.epilogue = epilogue
        self.spec = cost.spec

    def dma(self, nbytes: int, src: str, dst: str) -> int:
        return self.cost.dma_cycles(int(nbytes), src, dst)

    def tile(self, mte2: int, mte1: int, cube: int, mp: int, nv: int, mv: int, chunks: int = 1,
             blocks: int = 1, gm_bytes: int = 0) -> int:
        """One output tile: its K chunks through l1, then FIX and the epilogue.

        Double-buffered, chunk i + 1 loads (MTE2) while chunk i computes (MTE1 and the cube,
        themselves overlapped through l0): a pipeline of `chunks` stages, so a tile of one
        chunk overlaps nothing - each tile starts on slot 0 and FIX waits for its cube.
        Single-buffered, everything runs in turn. MTE2 runs at no more than the block's share
        of HBM (`blocks` loading at once, `gm_bytes` per tile)."""
        fix = self.dma(mv * nv * self.isz, "l0c", "gm")
        epi = self.epilogue.cycles(self, mv, nv) if self.epilogue else 0
        if gm_bytes:
            share = self.spec.hbm_bytes_per_s / self.spec.cube_clock_hz / max(1, blocks)
            mte2 = max(mte2, math.ceil(gm_bytes / share))
        if self.slots > 1:
            load, compute = mte2 / chunks, max(mte1, cube) / chunks
            body = int(load + (chunks - 1) * max(load, compute) + compute)
        else:
            body = mte2 + mte1 + cube
        return body + fix + epi

    def blocks(self, tiles: int) -> int:
        """Blocks of a kernel of `tiles` tiles: one per cube core at most."""
        return max(1, min(tiles, self.spec.cube_cores))

    def total_us(self, tile_cycles: int, tiles: int, hbm_bytes: int) -> float:
        waves = ceil_div(tiles, self.blocks(tiles))
        us = max(self.cost.cycles_to_us(tile_cycles * waves), self.cost.hbm_time_us(hbm_bytes))
        return us + self.cost.cycles_to_us(waves * self.spec.block_dispatch_cycles)


@dataclass
class _EpilogueShape:
    """What the epilogue costs per tile: vector instructions over the tile, side loads."""

    instrs: list[str]
    sides: int
    stores: int
    isz: int

    def cycles(self, p: _Pricer, rows: int, cols: int) -> int:
        nbytes = rows * round_up(cols, max(1, 32 // self.isz)) * self.isz
        mte2 = p.dma(rows * cols * self.isz, "gm", "ub") * (1 + self.sides)
        mte3 = p.dma(rows * cols * self.isz, "ub", "gm") * self.stores
        vec = sum(p.cost.vector_cycles(op.COST_KIND, nbytes, p.dtype) for op in self.instrs)
        return mte2 + mte3 + int(vec * p.spec.cube_clock_hz / p.spec.vector_clock_hz)


def _fits(req: KernelRequest, **spaces: int) -> bool:
    return all(nbytes <= req.device.buffer_bytes[s] for s, nbytes in spaces.items())


def _matmul_tiling(req: KernelRequest, plan: Plan, pricer: _Pricer) -> Tiling | None:
    isz, slots = pricer.isz, pricer.slots
    m, n, k, nb = plan.rows, plan.cols, plan.k, plan.batch
    kp = round_up(k, F)
    best: Tiling | None = None
    best_key: tuple = ()
    for mt, nt in itertools.product(_choices(m), _choices(n)):
        if not _fits(req, l0c=mt * nt * 4):
            continue
        for kt in _choices(k, KT_CHOICES):
            if not _fits(req, l0a=slots * mt * kt * isz, l0b=slots * kt * nt * isz):
                continue
            room = req.device.buffer_bytes["l1"] // (slots * (mt + nt) * isz)
            most = min(kp, room // kt * kt)
            if most < kt:
                continue
            tm, tn = ceil_div(m, mt), ceil_div(n, nt)
            tiles = nb * tm * tn
            blocks = pricer.blocks(tiles)
            hbm = tiles * (mt + nt) * kp * isz + nb * m * n * isz
            steps = ceil_div(kp, kt)
            mte1 = steps * (pricer.dma(mt * kt * isz, "l1", "l0a") + pricer.dma(kt * nt * isz, "l1", "l0b"))
            cube = steps * req.cost.mmad_cycles(mt, kt, nt, pricer.dtype)
            for kl1 in _per_chunk(kp, most, slots, kt):
                chunks = ceil_div(kp, kl1)
                mte2 = chunks * (pricer.dma(mt * kl1 * isz, "gm", "l1") + pricer.dma(kl1 * nt * isz, "gm", "l1"))
                cycles = pricer.tile(mte2, mte1, cube, mt, min(n, nt), min(m, mt), chunks, blocks,
                                     (mt + nt) * kp * isz)
                us = pricer.total_us(cycles, tiles, hbm)
                key = (round(us, 6), tiles * steps)  # ties: fewer instructions
                if best is None or key < best_key:
                    best, best_key = Tiling(mt, nt, kt, kl1, blocks, tiles, us), key
    return best


def _conv_box(geo: dict, ohs: int, owt: int) -> tuple[int, int]:
    """Rows and columns of the input a tile of ohs x owt output pixels reads."""
    rows = min(geo["h"], (ohs - 1) * geo["sh"] + (geo["kh"] - 1) * geo["dh"] + 1)
    cols = min(geo["w"], (owt - 1) * geo["sw"] + (geo["kw"] - 1) * geo["dw"] + 1)
    return rows, cols


def _conv_tiling(req: KernelRequest, plan: Plan, pricer: _Pricer) -> Tiling | None:
    geo = plan.conv
    oh, ow = geo["oh"], geo["ow"]
    pixel_tiles = [(r, ow) for r in range(1, oh + 1) if oh % r == 0 or r * ow <= 256 or r == oh]
    pixel_tiles = [t for t in pixel_tiles if round_up(t[0] * t[1], F) <= 1024]
    split_rows = [(1, c) for c in range(F, min(ow, 512) + 1, F)]
    if not pixel_tiles:  # rows too long for l0: split each row
        pixel_tiles = split_rows
    best = _conv_candidates(req, plan, pricer, pixel_tiles)
    if best is None and pixel_tiles is not split_rows:  # a whole row's box does not fit l1
        best = _conv_candidates(req, plan, pricer, split_rows)
    return best


def _conv_candidates(req: KernelRequest, plan: Plan, pricer: _Pricer,
                     pixel_tiles: list[tuple[int, int]]) -> Tiling | None:
    """The cheapest conv tiling whose output tiles are `pixel_tiles` (rows x columns)."""
    geo = plan.conv
    isz, slots = pricer.isz, pricer.slots
    khw = geo["kh"] * geo["kw"]
    oh, ow, mg, cg = geo["oh"], geo["ow"], geo["mg"], geo["cg"]
    best: Tiling | None = None
    best_key: tuple = ()
    images = geo["n"] * geo["group"]
    # The l1 chunk counts channels, or C0-channel blocks with FRACTAL_Z weights (the box is
    # then NC1HWC0 and K runs over whole blocks).
    c0 = L.c0_of(plan.elt) if plan.w_fz else 1
    units, unit_k = ceil_div(cg, c0), khw * c0
    for mt, (ohs, owt) in itertools.product(_choices(mg), pixel_tiles):
        npix = ohs * owt
        np_ = round_up(npix, F)
        if not _fits(req, l0c=mt * np_ * 4):
            continue
        rows, cols = _conv_box(geo, ohs, owt)
        box = rows * (cols * c0 if plan.w_fz else row_elems(cols, plan.elt)) * isz  # one unit of the l1 box
        for kt in KT_CHOICES:
            if kt > round_up(units * unit_k, F) and kt != KT_CHOICES[0]:
                break
            if not _fits(req, l0a=slots * mt * kt * isz, l0b=slots * kt * np_ * isz):
                continue
            # units per l1 chunk: at most what fits (the box plus the weights of the chunk);
            # fewer give more chunks, whose loads overlap the cube when double-buffered
            most = min(units, req.device.buffer_bytes["l1"] // (slots * (box + mt * unit_k * isz + 64)))
            while most > 0 and slots * (most * box + mt * round_up(most * unit_k, F) * isz) > req.device.buffer_bytes["l1"]:
                most -= 1
            if most < 1 or (plan.w_fz and not plan.x_blocked and most < units):
                continue  # an NCHW box is re-laid out to NC1HWC0 by one copy: all its channels
            # an NCHW box is interleaved into C0 lanes by its copy (ascend.CopyOp.relayout)
            fm_run = None if plan.x_blocked else isz
            tiles = images * ceil_div(mg, mt) * ceil_div(oh, ohs) * ceil_div(ow, owt)
            blocks = pricer.blocks(tiles)
            hbm = (tiles * (req.cost.dma_bytes(cg * rows * cols * isz, fm_run) + mt * units * unit_k * isz)
                   + geo["n"] * geo["m"] * oh * ow * isz)
            for cc in _per_chunk(units, most, slots if (plan.x_blocked or not plan.w_fz) else 1):
                kc = round_up(cc * unit_k, F)
                chunks = ceil_div(units, cc)
                steps = chunks * ceil_div(kc, kt)
                fm_bytes = cc * c0 * rows * cols * isz
                if fm_run:
                    fm_bytes = max(fm_bytes, req.cost.dma_bytes(min(cc * c0, cg) * rows * cols * isz, fm_run))
                w_bytes = mt * cc * unit_k * isz
                mte2 = chunks * (pricer.dma(fm_bytes, "gm", "l1") + pricer.dma(w_bytes, "gm", "l1"))
                mte1 = steps * (pricer.dma(mt * kt * isz, "l1", "l0a") + pricer.dma(kt * np_ * isz, "l1", "l0b"))
                cube = steps * req.cost.mmad_cycles(mt, kt, np_, pricer.dtype)
                cycles = pricer.tile(mte2, mte1, cube, mt, npix, min(mg, mt), chunks, blocks,
                                     chunks * (fm_bytes + w_bytes))
                us = pricer.total_us(cycles, tiles, hbm)
                key = (round(us, 6), tiles * steps)  # ties: fewer instructions
                if best is None or key < best_key:
                    best, best_key = Tiling(mt, np_, kt, kc, blocks, tiles, us, ohs=ohs, owt=owt, cc=cc), key
    return best


def _per_chunk(total: int, most: int, slots: int, unit: int = 1) -> list[int]:
    """Sizes of the l1 chunk to price (multiples of `unit`): the most that fit and, when
    double-buffered, smaller ones so that 2, 3 or 4 chunks pipeline their loads behind
    the cube."""
    out = {most}
    if slots > 1:
        for n in (2, 3, 4):
            size = round_up(ceil_div(total, n), unit)
            if size < most:
                out.add(size)
    return sorted(out, reverse=True)


# ---------------------------------------------------------------------------
# Emission helpers.
# ---------------------------------------------------------------------------

Index = int | SSAValue


def _max(kb: KernelBuilder, x: Index, y: Index) -> Index:
    cx, cy = kb._const_of(x), kb._const_of(y)
    if cx is not None and cy is not None:
        return max(cx, cy)
    return kb.emit(arith.MaxUIOp(kb.index(x), kb.index(y))).result


def _clamp_start(kb: KernelBuilder, pos: Index, before: int, size: int, extent: int) -> Index:
    """clamp(pos - before, 0, extent - size) for pos >= 0: where a box of `size` that must
    cover [pos - before, ...) ∩ [0, extent) starts."""
    return kb.min(kb.sub(_max(kb, pos, before), before), extent - size)


def _chunks(kb: KernelBuilder, extent: int, step: int, slots: int,
            body: Callable[[Index, int, int, bool], None]) -> None:
    """body(offset, size, slot, first) over [0, extent) in chunks of `step`: the first chunk
    on its own (it initialises the accumulator), the full ones in a loop unrolled by `slots`
    (slot i % slots, so each ping-pong buffer keeps static flag ids), the remainder last."""
    full, rem = divmod(extent, step)
    if full == 0:
        body(0, rem, 0, True)
        return
    body(0, step, 0, True)
    rest = full - 1  # chunks 1 .. full-1
    groups, left = divmod(rest, slots)
    if groups == 1:
        for u in range(slots):
            body((1 + u) * step, step, (1 + u) % slots, False)
    elif groups > 1:
        with kb.loop(step, step + groups * slots * step, slots * step) as i:
            for u in range(slots):
                body(kb.add(i, u * step), step, (1 + u) % slots, False)
    for u in range(left):
        j = 1 + groups * slots + u
        body(j * step, step, j % slots, False)
    if rem:
        body(full * step, rem, full % slots, False)


@dataclass(frozen=True)
class _Dim:
    extent: int
    tile: int


def _distribute(kb: KernelBuilder, blocks: int,
                classes: Sequence[tuple[Sequence[int], Callable[[list[Index]], None]]]) -> None:
    """Run `body(index)` for every multi-index of each class's grid `counts`, the item t of the
    whole sequence on block t % blocks: a loop per class, its lower bound shifted by the
    class's position in the sequence so the blocks stay balanced."""
    base = 0
    for counts, body in classes:
        count = math.prod(counts)
        if count == 0:
            continue

        def index(i: Index, counts=counts) -> list[Index]:
            live = [c for c in counts if c > 1]
            parts = iter(kb.delinearize(i, live) if len(live) > 1 else [i] * len(live))
            return [next(parts) if c > 1 else 0 for c in counts]

        if blocks == 1 and count == 1:
            body(index(0))
        elif blocks == 1:
            with kb.loop(0, count, 1) as i:
                body(index(i))
        else:
            shift = (blocks - base % blocks) % blocks
            start = kb.remui(kb.add(kb.block_idx(), shift), blocks) if shift else kb.block_idx()
            with kb.loop(start, count, blocks) as i:
                body(index(i))
        base += count


def _grid(kb: KernelBuilder, dims: Sequence[_Dim], blocks: int,
          body: Callable[[list[Index], list[int]], None]) -> None:
    """Every tile of the grid `dims`, grouped by static size class (full tiles / the remainder,
    per dim), distributed over the blocks."""
    per_dim = []
    for d in dims:
        full, rem = divmod(d.extent, d.tile)
        opts = []
        if full:
            opts.append((full, d.tile, 0))
        if rem:
            opts.append((1, rem, full * d.tile))
        per_dim.append(opts)
    classes = []
    for cls in itertools.product(*per_dim):
        def run(idx: list[Index], cls=cls) -> None:
            body([kb.add(off, kb.mul(j, d.tile)) for j, d, (_, _, off) in zip(idx, dims, cls)],
                 [size for _, size, _ in cls])

        classes.append(([c for c, _, _ in cls], run))
    _distribute(kb, blocks, classes)


# ---------------------------------------------------------------------------
# The epilogue: ub buffers and the vector program of one pass over [rows, cols].
# ---------------------------------------------------------------------------


class _Epilogue:
    """Schedules the epilogue's values onto a pool of [er, ecp] ub tiles (a value's tile is
    reused once its last reader ran; outputs keep theirs until they are stored)."""

    def __init__(self, plan: Plan, staged: bool = True):
        self.plan = plan
        instrs = plan.instrs
        # Stage the raw tile in an output that is the raw result, else in the first output
        # (`staged`: the cube's FIX copy; a vector kernel has the raw tile in ub already).
        raw_outs = [i for i, key in plan.outputs if key is plan.result]
        self.staging = raw_outs[0] if raw_outs else plan.outputs[0][0]
        stores = [(i, key) for i, key in plan.outputs
                  if not (staged and i == self.staging and key is plan.result)]
        self.stores = stores
        used = {s for ins in instrs for s in ins.srcs} | {key for _, key in stores}
        self.needs_raw = plan.result in used or not staged
        self.sides = [v for v in plan.sides if v in used]
        last: dict[object, float] = {}
        for i, ins in enumerate(instrs):
            for s in ins.srcs:
                last[s] = i
        for _, key in stores:
            last[key] = math.inf
        self.where: dict[object, int] = {}
        holders: dict[int, set] = {}
        free: list[int] = []
        self.pool = 0

        def acquire(key: object) -> None:
            if free:
                slot = free.pop()
            else:
                slot, self.pool = self.pool, self.pool + 1
            self.where[key] = slot
            holders[slot] = {key}

        if self.needs_raw:
            acquire(plan.result)
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

    def shape(self) -> _EpilogueShape:
        isz = itemsize(self.plan.elt)
        return _EpilogueShape([ins.op for ins in self.plan.instrs], len(self.sides) + int(self.needs_raw),
                              len(self.stores), isz)

    @property
    def blocked(self) -> bool:
        """The passes run on NC1HWC0 tiles [rows / C0, cols, C0] in ub, as the result is
        stored: no re-layout between gm and ub. Needs whole C0 blocks of channels (padding
        lanes would compute f(0), not keep the zeros NC1HWC0 promises) and sides that are
        NC1HWC0 tensors or per-channel vectors."""
        plan = self.plan
        if not (plan.out_blocked and plan.kind == "conv" and plan.rows % L.c0_of(plan.elt) == 0):
            return False
        for v in self.sides:
            side = plan.sides[v]
            _, sr, sc = side.spans
            if not sr or (sc and not side.blocked):
                return False
        return True

    def rows(self, req: KernelRequest, mt: int, cols: int) -> int:
        """Rows of one pass: as many as the pool and the side tiles leave room for in ub."""
        elt = self.plan.elt
        isz, blk, ecp = itemsize(elt), block_elems(elt), row_elems(cols, elt)
        spans = [self.plan.sides[v].spans for v in self.sides]
        if self.blocked:  # [rows / C0, cols, C0] tiles, per-channel sides [rows / C0, 1, C0]
            per_row = (self.pool * cols + sum(1 for s in spans if not s[2])) * isz
            room = (req.device.buffer_bytes["ub"] - 1024) // per_row
            return max(0, min(mt, room))
        per_row = (self.pool * ecp + blk * sum(1 for s in spans if s[1] and not s[2])) * isz
        fixed = sum(ecp if s[2] else blk for s in spans if not s[1]) * isz + 1024
        room = (req.device.buffer_bytes["ub"] - fixed) // per_row
        return max(0, min(mt, room))


# ---------------------------------------------------------------------------
# The kernel.
# ---------------------------------------------------------------------------

# Flag ids: per ping-pong slot for l1 (MTE2 <-> MTE1) and l0a/l0b (MTE1 <-> M); l0c and the
# epilogue use id 0.


class _CubeKernel:
    def __init__(self, req: KernelRequest, plan: Plan, tiling: Tiling, slots: int, epilogue: _Epilogue | None):
        self.req, self.plan, self.t, self.slots, self.epi = req, plan, tiling, slots, epilogue
        self.elt = plan.elt
        self.c0 = L.c0_of(plan.elt)
        self.R = plan.rows

    # -- setup ----------------------------------------------------------------------------

    def build(self) -> a.KernelOp:
        plan, t = self.plan, self.t
        kb = self.kb = KernelBuilder(self.req, "mix" if self.epi else "cube", t.blocks)
        ins, outs = kb.inputs, kb.outputs
        elt, slots = self.elt, self.slots
        if plan.kind == "matmul":
            lhs, rhs = plan.lhs, plan.rhs
            self.a2 = ins[lhs.arg] if plan.lhs_nz else kb.view(ins[lhs.arg], _rows2(lhs))
            self.b2 = ins[rhs.arg] if plan.rhs_nz else kb.view(ins[rhs.arg], _rows2(rhs))
            self.l1a = [kb.alloc([t.kl1, t.mt] if lhs.trans else [t.mt, t.kl1], elt, "l1", f"l1a{s}") for s in range(slots)]
            self.l1b = [kb.alloc([t.nt, t.kl1] if rhs.trans else [t.kl1, t.nt], elt, "l1", f"l1b{s}") for s in range(slots)]
        else:
            geo = plan.conv
            rows, cols = _conv_box(geo, t.ohs, t.owt)
            self.box = (rows, cols)
            c0 = self.c0
            if plan.x_blocked:  # [N, C1, H, W, C0] as [N * C1, H, W, C0]
                self.fm2 = [kb.view(ins[sg.arg], [geo["n"] * ceil_div(sg.count, c0), geo["h"], geo["w"], c0])
                            for sg in plan.segments]
            else:
                self.fm2 = [kb.view(ins[sg.arg], [geo["n"] * sg.count, geo["h"], geo["w"]]) for sg in plan.segments]
            # FRACTAL_Z [C1 * kh * kw, N1, 16, C0] is the fractal (NZ) form of the [Cout, K] matrix
            self.w2 = ins[plan.weight] if plan.w_fz else kb.view(ins[plan.weight], [geo["m"], plan.k])
            self.l1a = [kb.alloc([t.mt, t.kl1], elt, "l1", f"l1w{s}") for s in range(slots)]
            fm_shape = [t.cc, rows, cols, c0] if plan.w_fz else [t.cc, rows, row_elems(cols, elt)]
            self.l1b = [kb.alloc(fm_shape, elt, "l1", f"l1fm{s}") for s in range(slots)]
        self.l0a = [kb.alloc([t.mt, t.kt], elt, "l0a", f"l0a{s}") for s in range(slots)]
        self.l0b = [kb.alloc([t.kt, t.nt], elt, "l0b", f"l0b{s}") for s in range(slots)]
        self.l0c = kb.alloc([t.mt, t.nt], f32, "l0c", "l0c")
        # Outputs as [B * R, C]; NC1HWC0 ones as [B * C1, C, C0], R counting padded channels.
        self.R = round_up(plan.rows, self.c0) if plan.out_blocked else plan.rows
        self.out2 = [o if plan.out_nz else
                     kb.view(o, [plan.batch * self.R // self.c0, plan.cols, self.c0] if plan.out_blocked
                             else [plan.batch * plan.rows, plan.cols]) for o in outs]
        if self.epi:
            self._epilogue_buffers()
        for s in range(slots):
            kb.set_flag("MTE1", "MTE2", s)
            kb.set_flag("M", "MTE1", s)
        kb.set_flag("FIX", "M", 0)
        if self.epi:
            kb.set_flag("MTE3", "MTE2", 0)
        if plan.kind == "matmul":
            dims = [_Dim(plan.batch, 1), _Dim(plan.rows, t.mt), _Dim(plan.cols, t.nt)]
            _grid(kb, dims, t.blocks, self._matmul_tile)
        else:
            geo = plan.conv
            dims = [_Dim(geo["n"] * geo["group"], 1), _Dim(geo["mg"], t.mt), _Dim(geo["oh"], t.ohs),
                    _Dim(geo["ow"], t.owt)]
            _grid(kb, dims, t.blocks, self._conv_tile)
        for s in range(slots):
            kb.wait_flag("MTE1", "MTE2", s)
            kb.wait_flag("M", "MTE1", s)
        kb.wait_flag("FIX", "M", 0)
        if self.epi:
            kb.wait_flag("MTE3", "MTE2", 0)
        kernel = kb.finish()
        kernel.attributes[attr_names.TEMPLATE] = StringAttr(plan.kind)
        return kernel

    def _epilogue_buffers(self) -> None:
        """The pool of [er, ecp] ub tiles (blocked: [er / C0, cols, C0]), the compact tiles
        of broadcast sides and the gm views of the sides as [B * R or 1, C or 1]."""
        kb, epi, t, elt, plan = self.kb, self.epi, self.t, self.elt, self.plan
        self.side2 = {}
        c0 = self.c0
        for v in epi.sides:
            side = plan.sides[v]
            sb, sr, sc = side.spans
            if side.blocked and (sc or epi.blocked):  # [N, C1, H, W, C0] as [B * C1, C or 1, C0]
                shape = [(plan.batch if sb else 1) * self.R // c0, plan.cols if sc else 1, c0]
            elif side.blocked:  # [N, C1, 1, 1, C0]: padded channels in order
                shape = [(plan.batch if sb else 1) * self.R, 1]
            else:
                shape = [(plan.batch if sb else 1) * (plan.rows if sr else 1), plan.cols if sc else 1]
            self.side2[v] = kb.view(kb.inputs[side.arg], shape)
        blk = block_elems(elt)
        ecp = row_elems(self.cols_max, elt)
        er = t.er
        self.compact = {}
        if epi.blocked:
            self.pool = [kb.alloc([er // c0, self.cols_max, c0], elt, "ub", f"v{i}") for i in range(epi.pool)]
            for v in epi.sides:
                if not plan.sides[v].spans[2]:
                    self.compact[v] = kb.alloc([er // c0, 1, c0], elt, "ub", f"s{len(self.compact)}")
            return
        self.pool = [kb.alloc([er, ecp], elt, "ub", f"v{i}") for i in range(epi.pool)]
        for v in epi.sides:
            spans = self.plan.sides[v].spans
            if spans[1] and spans[2]:
                continue
            shape = [er if spans[1] else 1, ecp if spans[2] else blk]
            self.compact[v] = kb.alloc(shape, elt, "ub", f"s{len(self.compact)}")

    @property
    def cols_max(self) -> int:
        t = self.t
        return min(self.plan.cols, t.nt) if self.plan.kind == "matmul" else t.ohs * t.owt

    # -- matmul -----------------------------------------------------------------------------

    def _matmul_tile(self, off: list[Index], size: list[int]) -> None:
        kb, plan, t = self.kb, self.plan, self.t
        b, m0, n0 = off
        _, mv, nv = size
        mp, np_ = round_up(mv, F), round_up(nv, F)
        lhs, rhs = plan.lhs, plan.rhs
        ba = self._batch_index(b, plan.lhs_batch)
        bb = self._batch_index(b, plan.rhs_batch)
        arow = kb.mul(ba, plan.k if lhs.trans else plan.rows)
        brow = kb.mul(bb, plan.cols if rhs.trans else plan.k)
        acc = kb.tile(self.l0c, [0, 0], [mp, np_])

        def load(view: SSAValue, nz: bool, base: Index, r0: Index, c0: Index, rv: int, cv: int, dst: SSAValue) -> None:
            """The [rv, cv] tile at (r0, c0) of a stored matrix into l1 (zero-padded to
            fractals); a FRACTAL_NZ one arrives as its whole fractals (`nz2nd`)."""
            rp, cp = round_up(rv, F), round_up(cv, F)
            if nz:
                src = kb.tile(view, [kb.divui(c0, F), kb.divui(r0, F), 0, 0], [cp // F, rp // F, F, F])
                kb.copy(src, dst, layout=StringAttr("nz2nd"))
            else:
                self._load(kb.tile(view, [kb.add(base, r0), c0], [rv, cv]), dst)

        def chunk(k0: Index, kc: int, s: int, first: bool) -> None:
            kcp = round_up(kc, F)
            kb.wait_flag("MTE1", "MTE2", s)
            if lhs.trans:
                load(self.a2, plan.lhs_nz, arow, k0, m0, kc, mv, kb.tile(self.l1a[s], [0, 0], [kcp, mp]))
            else:
                load(self.a2, plan.lhs_nz, arow, m0, k0, mv, kc, kb.tile(self.l1a[s], [0, 0], [mp, kcp]))
            if rhs.trans:
                load(self.b2, plan.rhs_nz, brow, n0, k0, nv, kc, kb.tile(self.l1b[s], [0, 0], [np_, kcp]))
            else:
                load(self.b2, plan.rhs_nz, brow, k0, n0, kc, nv, kb.tile(self.l1b[s], [0, 0], [kcp, np_]))
            kb.sync("MTE2", "MTE1", s)

            def step(kk: Index, kt: int, u: int, first_step: bool) -> None:
                kb.wait_flag("M", "MTE1", u)
                a0 = kb.tile(self.l0a[u], [0, 0], [mp, kt])
                b0 = kb.tile(self.l0b[u], [0, 0], [kt, np_])
                if lhs.trans:
                    kb.copy(kb.tile(self.l1a[s], [kk, 0], [kt, mp]), a0, transpose=UnitAttr())
                else:
                    kb.copy(kb.tile(self.l1a[s], [0, kk], [mp, kt]), a0)
                if rhs.trans:
                    kb.copy(kb.tile(self.l1b[s], [0, kk], [np_, kt]), b0, transpose=UnitAttr())
                else:
                    kb.copy(kb.tile(self.l1b[s], [kk, 0], [kt, np_]), b0)
                self._mmad(a0, b0, acc, u, first and first_step)

            _chunks(kb, kcp, t.kt, self.slots, step)
            kb.set_flag("MTE1", "MTE2", s)

        _chunks(kb, plan.k, t.kl1, self.slots, chunk)
        row = kb.add(kb.mul(b, plan.rows), m0)
        self._finish_tile(acc, row, n0, mv, nv)

    def _batch_index(self, b: Index, strides: tuple[int, ...]) -> Index:
        plan, kb = self.plan, self.kb
        if not any(strides):
            return 0
        natural = tuple(math.prod(plan.batch_dims[i + 1:]) for i in range(len(plan.batch_dims)))
        if strides == natural:
            return b
        idx = kb.delinearize(b, plan.batch_dims) if len(plan.batch_dims) > 1 else [b]
        out: Index = 0
        for i, st in zip(idx, strides):
            if st:
                out = kb.add(out, kb.mul(i, st))
        return out

    # -- convolution ------------------------------------------------------------------------

    def _conv_tile(self, off: list[Index], size: list[int]) -> None:
        kb, plan, t = self.kb, self.plan, self.t
        geo = plan.conv
        ng, m0, oh0, ow0 = off
        _, mv, ohs, owt = size
        npix = ohs * owt
        mp, np_ = round_up(mv, F), round_up(npix, F)
        n = kb.divui(ng, geo["group"])
        gi = kb.remui(ng, geo["group"])
        rows, cols = _conv_box(geo, ohs, owt)
        ih = _clamp_start(kb, kb.mul(oh0, geo["sh"]), geo["pt"], rows, geo["h"])
        iw = _clamp_start(kb, kb.mul(ow0, geo["sw"]), geo["pl"], cols, geo["w"])
        wrow = kb.add(kb.mul(gi, geo["mg"]), m0)
        acc = kb.tile(self.l0c, [0, 0], [mp, np_])
        khw = geo["kh"] * geo["kw"]
        first_chunk = [True]
        if plan.w_fz:
            self._conv_tile_fz(n, m0, oh0, ow0, ih, iw, mv, ohs, owt, acc)
            return

        for seg_i, seg in enumerate(plan.segments):
            fm2 = self.fm2[seg_i]
            # the segment's channels of this group: [cstart, cstart + count) of the input
            count = geo["cg"] if len(plan.segments) == 1 else seg.count
            cbase = kb.mul(gi, geo["cg"]) if len(plan.segments) == 1 else 0
            fm_row = kb.add(kb.mul(n, seg.count), cbase)
            wcol0 = seg.start * khw

            def chunk(c0: Index, cc: int, s: int, first: bool, fm2=fm2, fm_row=fm_row, wcol0=wcol0) -> None:
                first = first and first_chunk[0]
                kc = round_up(cc * khw, F)
                kb.wait_flag("MTE1", "MTE2", s)
                box = kb.tile(fm2, [kb.add(fm_row, c0), ih, iw], [cc, rows, cols])
                self._load(box, self.l1b[s])
                wsrc = kb.tile(self.w2, [wrow, kb.add(kb.mul(c0, khw), wcol0)], [mv, cc * khw])
                self._load(wsrc, kb.tile(self.l1a[s], [0, 0], [mp, kc]))
                kb.sync("MTE2", "MTE1", s)

                def step(kk: Index, kt: int, u: int, first_step: bool) -> None:
                    kb.wait_flag("M", "MTE1", u)
                    a0 = kb.tile(self.l0a[u], [0, 0], [mp, kt])
                    b0 = kb.tile(self.l0b[u], [0, 0], [kt, np_])
                    kb.copy(kb.tile(self.l1a[s], [0, kk], [mp, kt]), a0)
                    self._load3d(self.l1b[s], ih, iw, b0, kk, oh0, ow0, ohs, owt, cc)
                    self._mmad(a0, b0, acc, u, first and first_step)

                _chunks(kb, kc, t.kt, self.slots, step)
                kb.set_flag("MTE1", "MTE2", s)

            _chunks(kb, count, t.cc, self.slots, chunk)
            first_chunk[0] = False
        row = kb.add(kb.mul(n, self.R), wrow)  # R: channels, padded to C0 in an NC1HWC0 result
        col = kb.add(kb.mul(oh0, geo["ow"]), ow0)
        self._finish_tile(acc, row, col, mv, npix)

    def _conv_tile_fz(self, n: Index, m0: Index, oh0: Index, ow0: Index, ih: Index, iw: Index,
                      mv: int, ohs: int, owt: int, acc: SSAValue) -> None:
        """A convolution tile with FRACTAL_Z weights: the l1 box is NC1HWC0 [blocks, rows,
        cols, C0] (copied as is from an NC1HWC0 input, or re-laid out from an NCHW one by the
        copy), K runs over (c1, kh, kw, c0) and the weights come as fractals (`nz2nd`)."""
        kb, plan, t, c0 = self.kb, self.plan, self.t, self.c0
        geo = plan.conv
        rows, cols = _conv_box(geo, ohs, owt)
        khw = geo["kh"] * geo["kw"]
        mp, npix = round_up(mv, F), ohs * owt
        first_chunk = [True]
        m1 = kb.divui(m0, F)
        for seg_i, seg in enumerate(plan.segments):
            fm2 = self.fm2[seg_i]
            blocks = ceil_div(seg.count, c0)
            seg_b0 = seg.start // c0

            def chunk(b0: Index, nb: int, s: int, first: bool, fm2=fm2, seg=seg, seg_b0=seg_b0) -> None:
                first = first and first_chunk[0]
                kc = nb * khw * c0
                start = kb._const_of(b0)
                channels = min(nb * c0, seg.count - start * c0) if start is not None else nb * c0
                kb.wait_flag("MTE1", "MTE2", s)
                box = kb.tile(self.l1b[s], [0, 0, 0, 0], [nb, rows, cols, c0])
                if plan.x_blocked:
                    src = kb.tile(fm2, [kb.add(kb.mul(n, blocks), b0), ih, iw, 0], [nb, rows, cols, c0])
                    kb.copy(src, box, layout=StringAttr("nc1hwc0"))
                else:  # all channels of an NCHW input in one box (the tiling sees to it)
                    src = kb.tile(fm2, [kb.mul(n, seg.count), ih, iw], [seg.count, rows, cols])
                    kb.copy(src, box, layout=StringAttr("nd2nc1hwc0"))
                wsrc = kb.tile(self.w2, [kb.mul(kb.add(b0, seg_b0), khw), m1, 0, 0], [nb * khw, mp // F, F, c0])
                kb.copy(wsrc, kb.tile(self.l1a[s], [0, 0], [mp, kc]), layout=StringAttr("nz2nd"))
                kb.sync("MTE2", "MTE1", s)

                def step(kk: Index, kt: int, u: int, first_step: bool) -> None:
                    kb.wait_flag("M", "MTE1", u)
                    a0 = kb.tile(self.l0a[u], [0, 0], [mp, kt])
                    b0_ = kb.tile(self.l0b[u], [0, 0], [kt, round_up(npix, F)])
                    kb.copy(kb.tile(self.l1a[s], [0, kk], [mp, kt]), a0)
                    self._load3d(box, ih, iw, b0_, kk, oh0, ow0, ohs, owt, channels)
                    self._mmad(a0, b0_, acc, u, first and first_step)

                _chunks(kb, kc, t.kt, self.slots, step)
                kb.set_flag("MTE1", "MTE2", s)

            _chunks(kb, blocks, t.cc, self.slots, chunk)
            first_chunk[0] = False
        row = kb.add(kb.mul(n, self.R), m0)
        col = kb.add(kb.mul(oh0, geo["ow"]), ow0)
        self._finish_tile(acc, row, col, mv, npix)

    # -- shared -----------------------------------------------------------------------------

    def _load3d(self, box: SSAValue, ih: Index, iw: Index, dst: SSAValue, kk: Index, oh0: Index, ow0: Index,
                ohs: int, owt: int, channels: int) -> None:
        """img2col of the l1 box (origin ih, iw) into the l0b tile: K rows from kk, the
        ohs x owt output pixels at (oh0, ow0)."""
        kb, geo = self.kb, self.plan.conv
        kb.emit(a.Load3dOp.get(
            box, [kb.index(ih), kb.index(iw)], dst, [kb.index(kk), kb.index(oh0), kb.index(ow0)],
            image=(geo["h"], geo["w"]), kernel=(geo["kh"], geo["kw"]), strides=(geo["sh"], geo["sw"]),
            dilations=(geo["dh"], geo["dw"]), pads=(geo["pt"], geo["pl"], geo["pb"], geo["pr"]),
            out=(ohs, owt), channels=channels))

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
            kb.wait_flag("FIX", "M", 0)  # the previous tile has left l0c
        kb.emit(a.MmadOp.get(a0, b0, acc, init=first))
        kb.set_flag("M", "MTE1", u)

    def _finish_tile(self, acc: SSAValue, row: Index, col: Index, mv: int, nv: int) -> None:
        """FIX: l0c -> gm (the valid part); then the epilogue over the staged tile."""
        kb, plan = self.kb, self.plan
        staging = self.out2[self.epi.staging if self.epi else 0]
        kb.sync("M", "FIX", 0)
        props = {"relu": UnitAttr()} if plan.fix_relu else {}
        if plan.out_blocked:  # the FIX pipe writes the fractal rows as NC1HWC0 blocks
            dst = self._gm_tile(staging, row, col, mv, nv, True)
            props["layout"] = StringAttr("nd2nc1hwc0")
            if tuple(acc.type.get_shape())[1] != nv:
                props["pad"] = UnitAttr()
        elif plan.out_nz:  # whole fractals, as l0c holds them (the padding lanes: don't care)
            mp, np_ = acc.type.get_shape()
            dst = kb.tile(staging, [kb.divui(col, F), kb.divui(row, F), 0, 0], [np_ // F, mp // F, F, F])
            props["layout"] = StringAttr("nd2nz")
        else:
            dst = kb.tile(staging, [row, col], [mv, nv])
            if tuple(acc.type.get_shape()) != (mv, nv):
                props["pad"] = UnitAttr()
        kb.copy(acc, dst, **props)
        kb.set_flag("FIX", "M", 0)
        if not self.epi:
            return
        kb.sync("FIX", "MTE2", 0)
        er = min(self.t.er, mv)
        b = kb.divui(row, self.R) if any(self.plan.sides[v].spans[0] for v in self.epi.sides) else 0
        r0 = kb.remui(row, self.R) if plan.batch > 1 else row

        def chunk(rr: Index, erv: int, _s: int, _first: bool) -> None:
            self._epilogue_pass(kb.add(row, rr), b, kb.add(r0, rr), col, erv, nv, dst if erv == mv else None)

        _chunks(kb, mv, er, 1, chunk)

    def _gm_tile(self, view: SSAValue, row: Index, col: Index, rows: int, cols: int, blocked: bool) -> SSAValue:
        """The [rows, cols] tile at (row, col) of a [B * R, C] gm view, or of a [B * C1, C, C0]
        NC1HWC0 one: its [ceil(rows / C0), cols, C0] blocks (row is a multiple of C0)."""
        if not blocked:
            return self.kb.tile(view, [row, col], [rows, cols])
        c0 = self.c0
        return self.kb.tile(view, [self.kb.divui(row, c0), col, 0], [ceil_div(rows, c0), cols, c0])

    def _epilogue_pass(self, grow: Index, b: Index, r: Index, col: Index, rows: int, cols: int,
                       staged: SSAValue | None, load: Callable[[], None] | None = None,
                       compute: Callable[[SSAValue], None] | None = None) -> None:
        """One [rows, cols] pass: MTE2 brings the staged tile (`staged`, if the FIX copy's
        view covers it) and the side operands into ub, V runs the epilogue, MTE3 stores the
        outputs. A vector kernel passes `load` (its own MTE2 copies) and `compute` (which
        writes the raw result into the tile it is given) instead of a staged tile."""
        kb, plan, epi, elt = self.kb, self.plan, self.epi, self.elt
        if epi.blocked:
            self._blocked_pass(grow, b, r, col, rows, cols, staged)
            return
        out_tiles: dict[int, SSAValue] = {}

        blocked_out = plan.out_blocked

        def out_tile(i: int) -> SSAValue:
            if i not in out_tiles:
                out_tiles[i] = staged if staged is not None and i == epi.staging else \
                    self._gm_tile(self.out2[i], grow, col, rows, cols, blocked_out)
            return out_tiles[i]

        ecp = row_elems(cols, elt)
        tiles = [kb.tile(buf, [0, 0], [rows, ecp]) for buf in self.pool]

        def tile_of(key: object) -> SSAValue:
            return tiles[epi.where[key]]

        def fill(src: SSAValue, dst: SSAValue, blocked: bool = False) -> None:
            """gm -> ub; an NC1HWC0 tile arrives as [channels, pixels] rows."""
            props = {"layout": StringAttr("nc1hwc02nd")} if blocked else {}
            shape = [rows, cols] if blocked else src.type.get_shape()
            if list(shape) != list(dst.type.get_shape()):
                props["pad"] = UnitAttr()
            kb.copy(src, dst, **props)

        kb.wait_flag("MTE3", "MTE2", 0)
        if load is not None:
            load()
        elif epi.needs_raw:
            fill(out_tile(epi.staging), tile_of(plan.result), blocked_out)
        compact = {}
        for v in epi.sides:
            side = plan.sides[v]
            sb, sr, sc = side.spans
            view = self.side2[v]
            srow = kb.add(kb.mul(b, (self.R if side.blocked else plan.rows) if sr else 1) if sb else 0, r if sr else 0)
            if side.blocked and sc:
                fill(self._gm_tile(view, srow, col, rows, cols, True), tile_of(v), True)
                continue
            src = kb.tile(view, [srow, col if sc else 0], [rows if sr else 1, cols if sc else 1])
            if sr and sc:
                fill(src, tile_of(v))
            else:
                buf = self.compact[v]
                shape = [rows if sr else 1, ecp if sc else block_elems(elt)]
                dst = kb.tile(buf, [0, 0], shape)
                fill(src, dst)
                compact[v] = kb.tile(dst, [0, 0], [shape[0], ecp if sc else 1])
        kb.sync("MTE2", "V", 0)
        if compute is not None:
            compute(self.pool[epi.where[plan.result]])
        self._vector_program(tile_of, compact)
        kb.sync("V", "MTE3", 0)
        for i, key in epi.stores:
            dst = out_tile(i)
            src = tile_of(key)
            props = {"layout": StringAttr("nd2nc1hwc0")} if blocked_out else {}
            if cols != ecp:
                props["pad"] = UnitAttr()
            kb.copy(src, dst, **props)
        kb.set_flag("MTE3", "MTE2", 0)

    def _vector_program(self, tile_of: Callable[[object], SSAValue], compact: dict) -> None:
        """V: broadcast the compact sides over their tiles, then the epilogue instructions."""
        kb = self.kb
        for v, src in compact.items():
            kb.vec(a.VbrcbOp, src, tile_of(v))
        for ins in self.plan.instrs:
            operands = [tile_of(s) for s in ins.srcs]
            if ins.scalar is not None:
                operands.insert(1, kb.scalar(ins.scalar, self.elt))
            kb.vec(ins.op, *operands, tile_of(ins.dst))

    def _blocked_pass(self, grow: Index, b: Index, r: Index, col: Index, rows: int, cols: int,
                      staged: SSAValue | None) -> None:
        """`_epilogue_pass` on NC1HWC0 tiles [rows / C0, cols, C0] (`_Epilogue.blocked`): the
        staged result and NC1HWC0 sides are copied as they lie, per-channel sides arrive as
        [rows / C0, 1, C0] (re-laid out by the copy if stored as plain vectors) and are
        broadcast over the pixels; the outputs are stored as they lie."""
        kb, plan, epi, c0 = self.kb, self.plan, self.epi, self.c0
        rb = rows // c0
        tiles = [kb.tile(buf, [0, 0, 0], [rb, cols, c0]) for buf in self.pool]

        def tile_of(key: object) -> SSAValue:
            return tiles[epi.where[key]]

        def out_tile(i: int) -> SSAValue:
            if staged is not None and i == epi.staging:
                return staged
            return self._gm_tile(self.out2[i], grow, col, rows, cols, True)

        kb.wait_flag("MTE3", "MTE2", 0)
        if epi.needs_raw:
            kb.copy(out_tile(epi.staging), tile_of(plan.result))
        compact = {}
        for v in epi.sides:
            side = plan.sides[v]
            sb, _, sc = side.spans
            view = self.side2[v]
            srow = kb.add(kb.mul(b, self.R if side.blocked else plan.rows) if sb else 0, r)
            if sc:
                kb.copy(self._gm_tile(view, srow, col, rows, cols, True), tile_of(v))
                continue
            dst = compact[v] = kb.tile(self.compact[v], [0, 0, 0], [rb, 1, c0])
            if side.blocked:
                kb.copy(kb.tile(view, [kb.divui(srow, c0), 0, 0], [rb, 1, c0]), dst)
            else:
                kb.copy(kb.tile(view, [srow, 0], [rows, 1]), dst, layout=StringAttr("nd2nc1hwc0"))
        kb.sync("MTE2", "V", 0)
        self._vector_program(tile_of, compact)
        kb.sync("V", "MTE3", 0)
        for i, key in epi.stores:
            kb.copy(tile_of(key), out_tile(i))
        kb.set_flag("MTE3", "MTE2", 0)


# ---------------------------------------------------------------------------
# Depthwise convolution on the vector unit.
# ---------------------------------------------------------------------------


def _is_depthwise(plan: Plan) -> bool:
    geo = plan.conv
    return plan.kind == "conv" and geo["group"] == geo["c"] > 1 and geo["cg"] == 1 and geo["mg"] == 1 \
        and len(plan.segments) == 1


@dataclass(frozen=True)
class _RowTiles:
    """Output rows [t * ohs, ...) of tiles t_start .. t_start + count - 1, which all read
    `rows` input rows starting `off` rows into their window (the rest is padding)."""

    t_start: int
    count: int
    ohv: int
    rows: int
    off: int


def _row_tiles(geo: dict, ohs: int) -> list[_RowTiles]:
    """The output-row tiles grouped by how their window meets the image's top and bottom
    (interior tiles form one group: one loop)."""
    window = (ohs - 1) * geo["sh"] + (geo["kh"] - 1) * geo["dh"] + 1
    groups: list[_RowTiles] = []
    for t in range(ceil_div(geo["oh"], ohs)):
        ohv = min(ohs, geo["oh"] - t * ohs)
        y0 = t * ohs * geo["sh"] - geo["pt"]
        span = (ohv - 1) * geo["sh"] + (geo["kh"] - 1) * geo["dh"] + 1
        lo, hi = max(0, y0), min(geo["h"], y0 + span)
        key = (ohv, max(0, hi - lo), lo - y0)
        last = groups[-1] if groups else None
        if last is not None and (last.ohv, last.rows, last.off) == key and last.t_start + last.count == t:
            groups[-1] = _RowTiles(last.t_start, last.count + 1, *key)
        else:
            groups.append(_RowTiles(t, 1, *key))
    assert all(gr.rows <= window for gr in groups)
    return groups


@dataclass(frozen=True)
class _DwTiling:
    ct: int          # channels per tile (a whole number of 32-byte blocks)
    ohs: int         # output rows per tile
    blocks: int
    estimate_us: float


def _depthwise_bytes(geo: dict, ct: int, ohs: int, isz: int, pool: int, sides: int) -> int:
    window = (ohs - 1) * geo["sh"] + (geo["kh"] - 1) * geo["dh"] + 1
    wp = round_up(geo["w"], max(1, 32 // isz))
    wide = geo["w"] + geo["pl"] + geo["pr"]
    khw = geo["kh"] * geo["kw"]
    pix = ohs * geo["ow"]
    ecp = round_up(pix, max(1, 32 // isz))
    return isz * (ct * window * wp + window * wide * ct + 3 * pix * ct + ct * round_up(khw, 32 // isz)
                  + khw * ct + (pool + sides) * ct * ecp) + 2048


def _depthwise_tiling(req: KernelRequest, plan: Plan, epi: _Epilogue) -> _DwTiling | None:
    """Channels x output rows per tile for the vector kernel, priced like the cube's."""
    geo, cost, spec = plan.conv, req.cost, req.device
    isz, blk = itemsize(plan.elt), block_elems(plan.elt)
    dtype = dtype_name(to_dtype(plan.elt))
    khw = geo["kh"] * geo["kw"]
    best: _DwTiling | None = None
    for ct in (blk, 2 * blk, 4 * blk, 8 * blk):
        if ct > round_up(geo["c"], blk) and ct != blk:
            break
        for ohs in range(1, geo["oh"] + 1):
            if _depthwise_bytes(geo, ct, ohs, isz, epi.pool, len(epi.sides)) > spec.buffer_bytes["ub"]:
                break
            window = (ohs - 1) * geo["sh"] + (geo["kh"] - 1) * geo["dh"] + 1
            pix = ohs * geo["ow"]
            tile = pix * ct * isz
            wide = window * (geo["w"] + geo["pl"] + geo["pr"]) * ct * isz
            vec = (cost.vector_cycles("dup", wide, dtype) + cost.vector_cycles("transpose", wide, dtype)
                   + cost.vector_cycles("transpose", tile, dtype)
                   + khw * (cost.vector_cycles("broadcast", tile, dtype) + 2 * cost.vector_cycles("binary", tile, dtype))
                   + sum(cost.vector_cycles(ins.op.COST_KIND, tile, dtype) for ins in plan.instrs))
            mte = (cost.dma_cycles(ct * window * geo["w"] * isz, "gm", "ub") + cost.dma_cycles(ct * khw * isz, "gm", "ub")
                   + len(epi.sides) * cost.dma_cycles(tile, "gm", "ub") + len(epi.stores) * cost.dma_cycles(tile, "ub", "gm"))
            tiles = geo["n"] * ceil_div(geo["c"], ct) * ceil_div(geo["oh"], ohs)
            blocks = min(tiles, spec.vector_cores)
            waves = ceil_div(tiles, blocks)
            hbm = tiles * (ct * window * geo["w"] + ct * khw + (len(epi.sides) + len(epi.stores)) * pix * ct) * isz
            us = max(cost.cycles_to_us(waves * (vec + mte), "vector"), cost.hbm_time_us(hbm))
            us += cost.cycles_to_us(waves * spec.block_dispatch_cycles, "vector")
            if best is None or us < best.estimate_us:
                best = _DwTiling(ct, ohs, blocks, us)
    return best


class _DepthwiseKernel(_CubeKernel):
    """Depthwise convolution as multiply-adds on the vector unit: per tile of ct channels
    and ohs output rows, the input rows come into ub as [C, rows, W], `vtranspose` makes them
    channel-innermost inside a zeroed, padded [rows, W + pads, C] box, and every tap is one
    strided view of that box (rows on 32-byte blocks whatever the shift), times the tap's
    weights broadcast over the pixels, accumulated; the [pixels, C] sum is transposed back to
    the [C, pixels] tile of the NCHW result, where the fusion's epilogue runs as in the cube
    kernels. The cube would spend a 16 x 16 fractal on each channel's 1 x 9 product."""

    def __init__(self, req: KernelRequest, plan: Plan, tiling: _DwTiling, epilogue: _Epilogue):
        geo = plan.conv
        t = Tiling(tiling.ct, tiling.ohs * geo["ow"], 0, 0, tiling.blocks, 0, tiling.estimate_us,
                   ohs=tiling.ohs, owt=geo["ow"], er=tiling.ct)
        super().__init__(req, plan, t, 1, epilogue)

    def build(self) -> a.KernelOp:
        plan, t, elt = self.plan, self.t, self.elt
        geo = plan.conv
        kb = self.kb = KernelBuilder(self.req, "vector", t.blocks)
        ct, ohs, ow = t.mt, t.ohs, geo["ow"]
        khw = geo["kh"] * geo["kw"]
        window = (ohs - 1) * geo["sh"] + (geo["kh"] - 1) * geo["dh"] + 1
        wide = geo["w"] + geo["pl"] + geo["pr"]
        x3 = kb.view(kb.inputs[plan.segments[0].arg], [geo["n"] * geo["c"], geo["h"], geo["w"]])
        w3 = kb.view(kb.inputs[plan.weight], [geo["c"], 1, khw])
        self.out2 = [kb.view(o, [plan.batch * plan.rows, plan.cols]) for o in kb.outputs]
        self._epilogue_buffers()
        box = kb.alloc([ct, window, row_elems(geo["w"], elt)], elt, "ub", "box")
        xt = kb.alloc([window, wide, ct], elt, "ub", "xt")
        acc = kb.alloc([ohs * ow, ct], elt, "ub", "acc")
        tmp = kb.alloc([ohs, ow, ct], elt, "ub", "tmp")
        wb = kb.alloc([ohs, ow, ct], elt, "ub", "wb")
        wl = kb.alloc([ct, 1, row_elems(khw, elt)], elt, "ub", "wl")
        wt = kb.alloc([khw, 1, ct], elt, "ub", "wt")
        acc3 = kb.view(acc, [ohs, ow, ct])
        zero = kb.scalar(0.0, elt)
        kb.set_flag("MTE3", "MTE2", 0)
        chans = [(geo["c"] // ct, ct, 0)] if geo["c"] >= ct else []
        if geo["c"] % ct:
            chans.append((1, geo["c"] % ct, (geo["c"] // ct) * ct))
        classes = []
        for (count, ctv, cbase), rt in itertools.product(chans, _row_tiles(geo, ohs)):
            def run(idx: list[Index], ctv=ctv, cbase=cbase, rt=rt) -> None:
                n, ci, j = idx
                c0 = kb.add(kb.mul(ci, ct), cbase)
                tile_row = kb.add(j, rt.t_start)
                oh0 = kb.mul(tile_row, ohs)
                # first input row held: t * ohs * sh - pt + off (>= 0 by construction)
                y = kb.add(kb.mul(j, ohs * geo["sh"]), rt.t_start * ohs * geo["sh"] - geo["pt"] + rt.off)
                row = kb.add(kb.mul(n, geo["c"]), c0)

                def load() -> None:
                    if rt.rows:
                        src = kb.tile(x3, [row, y, 0], [ctv, rt.rows, geo["w"]])
                        kb.copy(src, box, pad=UnitAttr()) if tuple(src.type.get_shape()) != tuple(
                            box.type.get_shape()) else kb.copy(src, box)
                    wsrc = kb.tile(w3, [c0, 0, 0], [ctv, 1, khw])
                    kb.copy(wsrc, wl, pad=UnitAttr()) if tuple(wsrc.type.get_shape()) != tuple(
                        wl.type.get_shape()) else kb.copy(wsrc, wl)

                def compute(raw: SSAValue) -> None:
                    kb.vec(a.VdupOp, zero, xt)
                    if rt.rows:
                        src = kb.tile(box, [0, 0, 0], [ct, rt.rows, geo["w"]])
                        dst = kb.tile(xt, [rt.off, geo["pl"], 0], [rt.rows, geo["w"], ct])
                        kb.vec(a.VtransposeOp, src, dst, perm=_perm(1, 2, 0))
                    kb.vec(a.VtransposeOp, kb.tile(wl, [0, 0, 0], [ct, 1, khw]), wt, perm=_perm(2, 1, 0))
                    for tap in range(khw):
                        kh, kw = divmod(tap, geo["kw"])
                        xv = kb.tile(xt, [kh * geo["dh"], kw * geo["dw"], 0], [ohs, ow, ct], [geo["sh"], geo["sw"], 1])
                        kb.vec(a.VbrcbOp, kb.tile(wt, [tap, 0, 0], [1, 1, ct]), wb)
                        if tap == 0:
                            kb.vec(a.VmulOp, xv, wb, acc3)
                        else:
                            kb.vec(a.VmulOp, xv, wb, tmp)
                            kb.vec(a.VaddOp, acc3, tmp, acc3)
                    kb.vec(a.VtransposeOp, acc, kb.tile(raw, [0, 0], [ct, ohs * ow]))

                r = kb.add(kb.mul(n, geo["m"]), c0) if geo["n"] > 1 else c0
                self._epilogue_pass(r, n, c0, kb.mul(oh0, ow), ctv, rt.ohv * ow, None, load, compute)

            classes.append(([geo["n"], count, rt.count], run))
        _distribute(kb, t.blocks, classes)
        kb.wait_flag("MTE3", "MTE2", 0)
        kernel = kb.finish()
        kernel.attributes[attr_names.TEMPLATE] = StringAttr("depthwise")
        return kernel


def _perm(*dims: int) -> Attribute:
    from xdsl.dialects.builtin import DenseArrayBase, i64

    return DenseArrayBase.from_list(i64, list(dims))


def _rows2(op: Operand) -> list[int]:
    """A matmul operand as a 2-D matrix in memory: batches stacked on the rows."""
    b, r, c = op.shape
    return [b * c, r] if op.trans else [b * r, c]


# ---------------------------------------------------------------------------
# Entry point.
# ---------------------------------------------------------------------------


def try_build(req: KernelRequest) -> a.KernelOp | None:
    """A cube kernel for a request whose ops are one conv / matmul / gemm with views on its
    inputs and an elementwise epilogue; None for anything else."""
    plan = plan_request(req)
    if plan is None or (plan.out_nz and plan.has_epilogue):
        return None  # an epilogue on a FRACTAL_NZ result: not yet
    slots = 2 if req.double_buffer else 1
    epi = _Epilogue(plan) if plan.has_epilogue else None
    pricer = _Pricer(req.cost, plan.elt, slots, epi.shape() if epi else None)
    tiling = _matmul_tiling(req, plan, pricer) if plan.kind == "matmul" else _conv_tiling(req, plan, pricer)
    try:
        if _is_depthwise(plan):
            vepi = _Epilogue(plan, staged=False)
            vector = _depthwise_tiling(req, plan, vepi)
            if vector is not None and (tiling is None or vector.estimate_us < tiling.estimate_us):
                return _DepthwiseKernel(req, plan, vector, vepi).build()
        if tiling is None:
            return None
        kernel = _CubeKernel(req, plan, tiling, slots, epi)
        if epi is not None:
            er = epi.rows(req, tiling.mt, kernel.cols_max)
            if plan.out_blocked or any(side.blocked for side in plan.sides.values()):
                er = er // kernel.c0 * kernel.c0  # passes over whole NC1HWC0 blocks
            if er < 1:
                return None
            kernel.t = Tiling(**{**tiling.__dict__, "er": er})
        return kernel.build()
    except LoweringError:  # a buffer plan that does not fit after all: not a kernel of ours
        return None
