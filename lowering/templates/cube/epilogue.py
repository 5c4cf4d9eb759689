"""The epilogue of a cube kernel: the fusion's ops after the cube op (bias, activations,
residual add, scale, batch norm, views) as vector instructions on [rows, cols] tiles of the
[B, R, C] result.

Values of the program are keys: the cube result (its SSA value), a graph value read from gm
(a `Side`, broadcast over the result), a `Temp` living in a ub tile, or a `Scalar` known at
compile time (the immediate of a scalar-form instruction). Which graph op becomes which
instructions is `_TRANSLATIONS`, keyed by op class.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import IntegerType, f16, f32
from xdsl.ir import Attribute, Operation, SSAValue

from geir.dialects import ascend as a
from geir.dialects import formats as L
from geir.dialects import graph as g
from geir.ir.types import is_float, to_dtype
from geir.lowering.templates.cube.fix_quant import FixQuant
from geir.lowering.templates.cube.ops import (
    Unsupported,
    is_view,
    logical_shape,
    storage,
    strip_leading_ones,
)


@dataclass
class Side:
    """An epilogue operand from gm, broadcast over the [B, R, C] result: which of the three
    axes it spans (the others are 1); `blocked` if it is stored NC1HWC0 (rows are then its
    padded channels)."""

    arg: int
    spans: tuple[bool, bool, bool]
    blocked: bool = False


class Temp:
    """A value of the epilogue that lives in a ub tile (named after its graph value)."""

    def __init__(self, value: SSAValue | None):
        self.value = value

    def __repr__(self) -> str:
        return f"%{self.value.name_hint}" if self.value is not None and self.value.name_hint else f"tmp{id(self) % 1000}"


@dataclass(frozen=True)
class Scalar:
    """An operand known at compile time."""

    value: float


def scalar_of(key: object) -> float | None:
    return key.value if isinstance(key, Scalar) else None


@dataclass
class Instr:
    """One vector instruction of the epilogue on [rows, cols] ub tiles: `srcs` are value keys,
    `scalar` the immediate of the scalar forms (vadds, vmuls, ...)."""

    op: type[a.VectorOp]
    dst: object
    srcs: tuple
    scalar: float | None = None

    def renamed(self, old: object, new: object) -> Instr:
        return Instr(self.op, new if self.dst is old else self.dst,
                     tuple(new if s is old else s for s in self.srcs), self.scalar)


@dataclass
class Epilogue:
    """The vector program on the cube result `result`: its instructions, the side operands it
    reads, which key each kernel output holds, and whether a relu rides on the FIX copy."""

    result: SSAValue
    instrs: list[Instr] = field(default_factory=list)
    sides: dict[object, Side] = field(default_factory=dict)
    outputs: list[tuple[int, object]] = field(default_factory=list)  # (output index, value key)
    fix_relu: bool = False
    compute: Attribute | None = None  # the type the program computes in (None: the result's)
    fix: FixQuant | None = None  # the FIX pipe's quantization computes it all (fix_quant.py)

    @property
    def has_work(self) -> bool:
        """Anything for the vector unit: instructions, or outputs other than the raw result."""
        return bool(self.instrs) or len(self.outputs) > 1 or any(key is not self.result for _, key in self.outputs)


@dataclass(frozen=True)
class ResultFrame:
    """The cube result as the epilogue broadcasts over it: its element type and shape, the
    dims of `shape` that make up each of the [B, R, C] axes (None when a 1-D matmul operand
    dropped a dim: only scalars broadcast simply then), and whether NC1HWC0 sides may be
    read (a convolution's rows are its channels)."""

    elt: Attribute
    shape: tuple[int, ...]
    axes: tuple[Sequence[int], Sequence[int], Sequence[int]] | None
    channel_rows: bool


class EpilogueBuilder:
    """Translates the ops after the cube op into `epilogue`, or raises Unsupported.

    `index` maps the kernel inputs to their argument numbers; `used` collects the request's
    ops this kernel computes (shared with the prologue analysis)."""

    def __init__(self, epilogue: Epilogue, frame: ResultFrame, index: dict[SSAValue, int],
                 used: set[Operation]):
        self.epilogue = epilogue
        self.frame = frame
        self.index = index
        self.used = used
        self.inside: set[Operation] = set()  # the ops `translate` was given (their users are in the kernel)
        # an int8 product's i32 result may be dequantized, activated, requantized: values of
        # several types, all computed in f32 (exact for the int8 and int32 values involved
        # below 2^24) or, with no float value, in i32
        self.integer = not is_float(frame.elt)
        # what the ops after the cube op read as the cube result (a bias or a gemm's alpha /
        # beta already applied to it)
        self.cube_value: object = epilogue.result

    def emit(self, ins: Instr) -> None:
        self.epilogue.instrs.append(ins)

    # -- what the cube op itself adds ------------------------------------------------------

    def add_bias(self, bias: SSAValue) -> None:
        """A convolution's bias: an add over the rows."""
        self.epilogue.sides[bias] = Side(self.input_index(bias), (False, True, False))
        tmp = Temp(None)
        self.emit(Instr(a.VaddOp, tmp, (self.epilogue.result, bias)))
        self.cube_value = tmp

    def gemm_scale(self, alpha: float, beta: float, c: SSAValue | None) -> None:
        """alpha * (a @ b) + beta * c on the raw product."""
        raw: object = self.epilogue.result
        if alpha != 1.0:
            t = Temp(None)
            self.emit(Instr(a.VmulsOp, t, (raw,), alpha))
            raw = t
        if c is not None and beta != 0.0:
            ck = self.operand(c, {}, True)
            if beta != 1.0:
                if scalar_of(ck) is not None:
                    ck = Scalar(scalar_of(ck) * beta)
                else:
                    t = Temp(None)
                    self.emit(Instr(a.VmulsOp, t, (ck,), beta))
                    ck = t
            t = Temp(None)
            self.binary(a.VaddOp, t, raw, ck)
            raw = t
        self.cube_value = raw

    def input_index(self, v: SSAValue) -> int:
        if v not in self.index:
            raise Unsupported
        return self.index[v]

    # -- the ops after the cube op ---------------------------------------------------------

    def translate(self, ops: Sequence[Operation], outputs: Sequence[SSAValue], start: SSAValue | None = None) -> None:
        """The ops after the cube op, in order, then the kernel outputs they produce. With
        `start`, the raw tile holds that value (what the FIX pipe made of the cube result:
        fix_quant.fix_dequantize_prefix) and the ops before it are done."""
        result = self.epilogue.result
        self.inside = set(ops)
        main: dict[SSAValue, object] = {result: self.cube_value} if start is None else {start: self.cube_value}
        numel = math.prod(self.frame.shape)
        canon = strip_leading_ones(self.frame.shape)
        done: list[Operation] = []
        for op in ops:
            if op in self.used:
                continue
            done.append(op)
            if not any(v in main for v in op.operands):
                raise Unsupported  # side computations stay out of cube kernels
            if len(op.results) != 1:
                raise Unsupported
            res = op.results[0]
            if not self._takes_type(op, res.type.element_type) or math.prod(logical_shape(res)) != numel:
                raise Unsupported
            if storage(res) != storage(result):
                raise Unsupported
            same_frame = strip_leading_ones(logical_shape(res)) == canon
            self.used.add(op)
            main[res] = self._translate(op, main, same_frame)
        self._outputs(main, outputs)
        if self.integer and start is not None and self._half_program(done):
            self._multiply_by_known_scales()
            self.epilogue.compute = f16
        elif self.integer:  # a requantize multiplies by an f32 scale, a known one too
            floats = [v for v in (*main, *self.epilogue.sides) if is_float(v.type.element_type)]
            requantizes = any(isinstance(op, g.RequantizeOp) for op in ops)
            self.epilogue.compute = f32 if floats or requantizes else self.frame.elt

    def _half_program(self, ops: Sequence[Operation]) -> bool:
        """Whether the vector program after the FIX's f16 dequantization computes in f16: each
        op an f16 one of the graph (a residual add, a relu), a cast, or a quantize by a known
        per-tensor scale and zero point; an f32 value only a cast of an f16 one that quantizes
        read (exact in f16); every side read f16 but those scales. So the AIV computes what
        the graph does in the graph's own type, and quantizes as its quant instructions do on
        half data (x times 1 / scale, rint, + zero point, saturate: AscendQuant): the graph's
        quantize divides in f32, so a value this close to a rounding boundary
        (under 1% of them) lands one step away (docs/quantization.md "Kernels")."""
        scales = set()
        for op in ops:
            if is_view(op):  # its value is its operand's
                continue
            if isinstance(op, g.QuantizeOp):
                scale, zp = (g.constant_value_of(v) for v in op.operands[1:])
                if scale is None or scale.size != 1 or zp is None or zp.size != 1:
                    return False
                scales.add(op.operands[1])
                continue
            if not all(is_float(v.type.element_type) for v in (*op.operands, *op.results)):
                return False
            res = op.results[0]
            if res.type.element_type != f16 and not (
                    isinstance(op, g.CastOp) and op.operands[0].type.element_type == f16
                    and all(isinstance(u.operation, g.QuantizeOp | g.CastOp) for u in res.uses if u.operation in self.inside)):
                return False
        return all(v in scales or v.type.element_type == f16 for v in self.epilogue.sides)

    def _multiply_by_known_scales(self) -> None:
        """A quantize's `vdiv` by its scale's tile becomes `vmuls` by 1 / scale (in f16 the
        tile would be the rounded scale anyway); the scale is then no side."""
        epi = self.epilogue
        for i, ins in enumerate(epi.instrs):
            if ins.op is a.VdivOp and len(ins.srcs) == 2 and ins.srcs[1] in epi.sides:
                known = g.constant_value_of(ins.srcs[1])
                if known is not None and known.size == 1:
                    epi.instrs[i] = Instr(a.VmulsOp, ins.dst, (ins.srcs[0],), 1.0 / float(known.reshape(-1)[0]))
        read = {s for ins in epi.instrs for s in ins.srcs}
        for v in [v for v in epi.sides if v not in read and not any(key is v for _, key in epi.outputs)]:
            del epi.sides[v]

    def _takes_type(self, op: Operation, elt: Attribute) -> bool:
        """The result type of an epilogue op: the cube result's; on an int8 product also f32 /
        f16 values and the integer results of exact ops (the f32 program computes them exactly)."""
        if elt == self.frame.elt and not self.integer:
            return True
        if not self.integer:
            return False
        if is_float(elt):
            return elt in (f32, f16)
        return elt in (*EPILOGUE_INTEGERS, self.frame.elt) and (is_view(op) or type(op) in EXACT_INTEGER_OPS)

    def _outputs(self, main: dict[SSAValue, object], outputs: Sequence[SSAValue]) -> None:
        for v in outputs:
            if v not in main:
                raise Unsupported
        self.epilogue.outputs.extend((i, main[v]) for i, v in enumerate(outputs))

    def fold_relu_into_fix(self) -> None:
        """A relu applied to the result alone, before anything else, rides on the FIX pipe."""
        epi, raw = self.epilogue, self.epilogue.result
        first = epi.instrs[0] if epi.instrs else None
        if (first is not None and first.op == a.VreluOp and first.srcs == (raw,)
                and not any(key is raw for _, key in epi.outputs)
                and not any(raw in ins.srcs for ins in epi.instrs[1:])):
            epi.fix_relu = True
            epi.instrs.pop(0)
            dst = first.dst
            epi.instrs = [ins.renamed(dst, raw) for ins in epi.instrs]
            epi.outputs = [(i, raw if key is dst else key) for i, key in epi.outputs]

    def _translate(self, op: Operation, main: dict[SSAValue, object], same_frame: bool) -> object:
        """The key of the op's result; instructions for it appended to the epilogue."""
        if is_view(op):
            return main[op.operands[0]]
        translation = _TRANSLATIONS.get(type(op))
        if translation is None:
            raise Unsupported
        res_shape = logical_shape(op.results[0])
        if isinstance(op, g.QuantizeOp):  # the scale is divided by: a tile, not an immediate
            x, scale, zp = op.operands
            ops = [self.operand(x, main, same_frame), self.side(scale, main, same_frame),
                   self.operand(zp, main, same_frame)]
        elif isinstance(op, g.BatchNormOp):  # per-channel parameters: [C] along axis 1
            per_channel = (res_shape[1],) + (1,) * (len(res_shape) - 2)
            ops = [self.operand(v, main, same_frame, per_channel if i else None) for i, v in enumerate(op.operands)]
        else:
            ops = [self.operand(v, main, same_frame) for v in op.operands]
        return translation(self, op, ops, Temp(op.results[0]))

    # -- operands ----------------------------------------------------------------------------

    def operand(self, v: SSAValue, main: dict[SSAValue, object], same_frame: bool,
                shape: tuple[int, ...] | None = None) -> object:
        """The key of an operand: a main value, a known scalar, or a broadcast Side."""
        if v in main:
            return main[v]
        known = g.constant_value_of(v)
        if known is not None and known.size == 1:
            return Scalar(float(np.asarray(known).reshape(-1)[0]))
        sides = self.epilogue.sides
        if v not in self.index or not self._side_type(v.type.element_type):
            raise Unsupported
        if v in sides:
            return v
        spans = self._spans(shape or logical_shape(v), same_frame)
        blocked = storage(v) == L.NC1HWC0
        if blocked and (shape is not None or not spans[1] or not self.frame.channel_rows):
            raise Unsupported  # NC1HWC0 sides span the channels (graph-layout's elementwise rule)
        if storage(v) not in (L.ND, L.NC1HWC0):
            raise Unsupported
        sides[v] = Side(self.index[v], spans, blocked)
        return v

    def _side_type(self, elt: Attribute) -> bool:
        """A side of this type is read: the result's, or on an int8 product a float or an
        integer of the quantized types (converted as it lands in ub)."""
        return elt == self.frame.elt or (self.integer and elt in (f32, f16, *EPILOGUE_INTEGERS))

    def side(self, v: SSAValue, main: dict[SSAValue, object], same_frame: bool) -> object:
        """v as a Side even when it is a known scalar (a quantize divides by its scale)."""
        key = self.operand(v, main, same_frame)
        if scalar_of(key) is None:
            return key
        if v not in self.index or not self._side_type(v.type.element_type):
            raise Unsupported
        self.epilogue.sides[v] = Side(self.index[v], (False, False, False))
        return v

    def _spans(self, side: tuple[int, ...], same_frame: bool) -> tuple[bool, bool, bool]:
        """Which of the result's [B, R, C] axes a side operand spans (it is 1 along the others)."""
        if math.prod(side) == 1:
            return (False, False, False)
        out, axes = self.frame.shape, self.frame.axes
        if axes is None:
            raise Unsupported
        side = tuple(side)
        while len(side) > len(out) and side[0] == 1:
            side = side[1:]
        if not same_frame or len(side) > len(out):
            raise Unsupported
        side = (1,) * (len(out) - len(side)) + side
        spans = []
        for dims in axes:
            big = [d for d in dims if out[d] > 1]
            full = [side[d] == out[d] for d in big]
            if any(full) and not all(full):
                raise Unsupported
            if any(side[d] not in (1, out[d]) for d in dims):
                raise Unsupported
            spans.append(bool(big) and all(full))
        return tuple(spans)  # type: ignore[return-value]

    # -- instructions --------------------------------------------------------------------------

    def binary(self, vop: type[a.VectorOp], dst: object, lhs: object, rhs: object) -> None:
        """dst = lhs `vop` rhs, in a scalar form when one side is a known scalar."""
        ls, rs = scalar_of(lhs), scalar_of(rhs)
        if ls is not None and rs is not None:
            raise Unsupported
        commutes = vop in a.SCALAR_FORMS  # add, mul, max, min
        if ls is not None and commutes:
            lhs, rhs, ls, rs = rhs, lhs, rs, ls
        if rs is not None:
            if vop is a.VsubOp:
                self.emit(Instr(a.VaddsOp, dst, (lhs,), -rs))
            elif vop is a.VdivOp:
                if rs == 0:
                    raise Unsupported
                self.emit(Instr(a.VmulsOp, dst, (lhs,), 1.0 / rs))
            else:
                self.emit(Instr(a.SCALAR_FORMS[vop], dst, (lhs,), rs))
        elif ls is not None:  # s - x, s / x
            if vop is a.VsubOp:
                self.emit(Instr(a.VmulsOp, dst, (rhs,), -1.0))
                self.emit(Instr(a.VaddsOp, dst, (dst,), ls))
            else:
                self.emit(Instr(a.VrecOp, dst, (rhs,)))
                self.emit(Instr(a.VmulsOp, dst, (dst,), ls))
        else:
            self.emit(Instr(vop, dst, (lhs, rhs)))


# ---------------------------------------------------------------------------
# Translations: (builder, op, operand keys, result temp) -> the key of the op's result.
# ---------------------------------------------------------------------------

Translation = Callable[[EpilogueBuilder, Operation, list, Temp], object]

UNARY: dict[type[Operation], type[a.VectorOp]] = {
    g.ReluOp: a.VreluOp, g.SigmoidOp: a.VsigmoidOp, g.TanhOp: a.VtanhOp, g.ErfOp: a.VerfOp, g.ExpOp: a.VexpOp,
    g.LogOp: a.VlogOp, g.SqrtOp: a.VsqrtOp, g.ReciprocalOp: a.VrecOp, g.NegOp: a.VnegOp, g.AbsOp: a.VabsOp,
    g.FloorOp: a.VfloorOp, g.CeilOp: a.VceilOp, g.RoundOp: a.VroundOp, g.SinOp: a.VsinOp, g.CosOp: a.VcosOp,
    g.SignOp: a.VsignOp,
}

# max and min are variadic graph ops; the epilogue takes their first two operands
BINARY: dict[type[Operation], type[a.VectorOp]] = {
    g.AddOp: a.VaddOp, g.SubOp: a.VsubOp, g.MulOp: a.VmulOp, g.DivOp: a.VdivOp, g.MaxOp: a.VmaxOp,
    g.MinOp: a.VminOp,
}


def _unary(vop: type[a.VectorOp]) -> Translation:
    def translate(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
        b.emit(Instr(vop, dst, (ops[0],)))
        return dst
    return translate


def _binary(vop: type[a.VectorOp]) -> Translation:
    def translate(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
        b.binary(vop, dst, ops[0], ops[1])
        return dst
    return translate


def _leaky_relu(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
    b.emit(Instr(a.VlreluOp, dst, (ops[0],), op.attrs()["alpha"]))
    return dst


def _sum_or_mean(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
    mean = isinstance(op, g.MeanOp)
    acc = ops[0]
    for i, o in enumerate(ops[1:]):
        t = dst if i == len(ops) - 2 and not mean else Temp(None)
        b.binary(a.VaddOp, t, acc, o)
        acc = t
    if mean:
        b.emit(Instr(a.VmulsOp, dst, (acc,), 1.0 / len(ops)))
    elif len(ops) == 1:
        return acc
    return dst


def _pow(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
    """Exponents 1, 2 and 0.5 only."""
    p = scalar_of(ops[1])
    if p not in (1.0, 2.0, 0.5):
        raise Unsupported
    if p == 1.0:
        return ops[0]
    b.emit(Instr(a.VmulOp, dst, (ops[0], ops[0])) if p == 2.0 else Instr(a.VsqrtOp, dst, (ops[0],)))
    return dst


def _clip(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
    """Known bounds only; an empty bound is absent."""
    x = cur = ops[0]
    for bound, vop in zip(op.operands[1:], (a.VmaxsOp, a.VminsOp)):
        known = g.constant_value_of(bound)
        if known is None:
            raise Unsupported
        if known.size == 0:
            continue
        b.emit(Instr(vop, dst, (cur,), float(known.reshape(-1)[0])))
        cur = dst
    return x if cur is x else dst


def _gelu(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
    """0.5 x (1 + erf(x / sqrt 2)), or with tanh(sqrt(2 / pi) (x + 0.044715 x^3))."""
    x = ops[0]
    t = Temp(None)
    if op.attrs()["approximate"] == "tanh":
        b.emit(Instr(a.VmulOp, t, (x, x)))
        b.emit(Instr(a.VmulOp, t, (t, x)))
        b.emit(Instr(a.VmulsOp, t, (t,), 0.044715))
        b.emit(Instr(a.VaddOp, t, (t, x)))
        b.emit(Instr(a.VmulsOp, t, (t,), math.sqrt(2 / math.pi)))
        b.emit(Instr(a.VtanhOp, t, (t,)))
    else:
        b.emit(Instr(a.VmulsOp, t, (x,), 1 / math.sqrt(2)))
        b.emit(Instr(a.VerfOp, t, (t,)))
    b.emit(Instr(a.VaddsOp, t, (t,), 1.0))
    b.emit(Instr(a.VmulOp, t, (t, x)))
    b.emit(Instr(a.VmulsOp, dst, (t,), 0.5))
    return dst


def _hard_sigmoid_into(b: EpilogueBuilder, t: object, x: object, alpha: float, beta: float) -> None:
    b.emit(Instr(a.VmulsOp, t, (x,), alpha))
    b.emit(Instr(a.VaddsOp, t, (t,), beta))
    b.emit(Instr(a.VmaxsOp, t, (t,), 0.0))
    b.emit(Instr(a.VminsOp, t, (t,), 1.0))


def _hard_sigmoid(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
    attrs = op.attrs()
    _hard_sigmoid_into(b, dst, ops[0], attrs["alpha"], attrs["beta"])
    return dst


def _hard_swish(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
    t = Temp(None)
    _hard_sigmoid_into(b, t, ops[0], 1 / 6, 0.5)
    b.emit(Instr(a.VmulOp, dst, (t, ops[0])))
    return dst


def _prelu(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
    """relu(x) + slope * min(x, 0)."""
    x, slope = ops
    t, u = Temp(None), Temp(None)
    b.emit(Instr(a.VminsOp, t, (x,), 0.0))
    b.binary(a.VmulOp, t, t, slope)
    b.emit(Instr(a.VreluOp, u, (x,)))
    b.emit(Instr(a.VaddOp, dst, (u, t)))
    return dst


def _batch_norm(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
    """(x - mean) / sqrt(var + epsilon) * scale + bias."""
    x, scale, bias, mean, var = ops
    t, u = Temp(None), Temp(None)
    b.binary(a.VsubOp, t, x, mean)
    b.binary(a.VaddOp, u, var, Scalar(op.attrs()["epsilon"]))
    b.emit(Instr(a.VsqrtOp, u, (u,)))
    b.emit(Instr(a.VdivOp, t, (t, u)))
    b.binary(a.VmulOp, t, t, scale)
    b.binary(a.VaddOp, dst, t, bias)
    return dst


def _dequantize(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
    """(x - zero point) * scale, in f32 (reference/graph.py dequantize)."""
    x, scale, *zp = ops
    if zp and scalar_of(zp[0]) != 0.0:
        t = Temp(None)
        b.binary(a.VsubOp, t, x, zp[0])
        x = t
    b.binary(a.VmulOp, dst, x, scale)
    return dst


def _quantize(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
    """saturate(rint(x / scale) + zero point): vdiv by the scale's tile (x * (1 / scale) is
    not always the f32 quotient), vround (half to even), + zero point, clamp; the value is
    then an integer of the result's range, which the store's vcast converts exactly.

    Two passes fewer where that is exact: a relu just before (its only reader) is the
    clamp's lower bound max(lo, zero point) - rint(max(x, 0) / s) = max(rint(x / s), 0) for a
    known scale s > 0 - and with a zero point of 0 a result only stored needs no vround: the
    store's vcast rounds half to even itself, and clamping to integer bounds before rounding
    gives what clamping after does."""
    x, scale, zp = ops
    lo, hi = _integer_range(op.results[0].type.element_type)
    relu = _only_relu_before(b, op, x, zp)
    if relu is not None:
        b.epilogue.instrs.remove(relu)
        x = relu.srcs[0]
        lo = max(lo, int(scalar_of(zp)))
    b.emit(Instr(a.VdivOp, dst, (x, scale)))
    stored_only = not any(use.operation in b.inside for use in op.results[0].uses)
    floor = relu is None and _relu_before(op) and _known_positive(op, zp)
    return _to_integers(b, dst, zp, lo, hi, rounds=scalar_of(zp) != 0.0 or not stored_only, floored=floor)


def _to_integers(b: EpilogueBuilder, dst: Temp, zp: object, lo: int, hi: int, rounds: bool = True,
                 floored: bool = False) -> Temp:
    """dst -> [rint] + zero point, clamped to [lo, hi]: a quantized value in f32. `floored`:
    dst is a non-negative value over a positive scale, so the value is at least the zero point
    (itself at least lo) and the lower clamp is left out."""
    if rounds:
        b.emit(Instr(a.VroundOp, dst, (dst,)))
    if scalar_of(zp) != 0.0:
        b.binary(a.VaddOp, dst, dst, zp)
    if not floored:
        b.emit(Instr(a.VmaxsOp, dst, (dst,), float(lo)))
    b.emit(Instr(a.VminsOp, dst, (dst,), float(hi)))
    return dst


def _requantize(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
    """saturate(rint(acc * scale) + zero point), in f32 (graph.requantize): the vector form,
    where the FIX pipe does not take the epilogue (fix_quant.py)."""
    x, scale, zp = ops
    if storage(op.results[0]) != L.ND:
        raise Unsupported  # int8 NC1HWC0 blocks hold 32 channels, the i32 tile's 16: the FIX pipe's job
    lo, hi = _integer_range(op.results[0].type.element_type)
    b.binary(a.VmulOp, dst, x, scale)
    return _to_integers(b, dst, zp, lo, hi)


def _only_relu_before(b: EpilogueBuilder, op: g.QuantizeOp, x: object, zp: object) -> Instr | None:
    """The vrelu computing the quantize's input `x` when the quantize alone reads it (through
    f32 / f16 casts, which the epilogue skips: `_float_cast`), the scale is known and positive
    and the zero point `zp` one known scalar; else None."""
    src = op.operands[0]
    while isinstance(src.owner, g.CastOp) and len(list(src.uses)) == 1 and is_float(src.type.element_type):
        src = src.owner.operands[0]
    if not isinstance(src.owner, g.ReluOp) or len(list(src.uses)) != 1 or scalar_of(x) is not None:
        return None
    if not _known_positive(op, zp):
        return None
    return next((ins for ins in reversed(b.epilogue.instrs) if ins.dst is x and ins.op is a.VreluOp), None)


def _relu_before(op: g.QuantizeOp) -> bool:
    """Whether the quantize's input is a relu's result, through f32 / f16 casts (the relu may
    have other readers: a residual block's f16 output beside its requantized one)."""
    src = op.operands[0]
    while isinstance(src.owner, g.CastOp) and is_float(src.type.element_type):
        src = src.owner.operands[0]
    return isinstance(src.owner, g.ReluOp)


def _known_positive(op: g.QuantizeOp, zp: object) -> bool:
    """A known scale > 0 and one known zero point: x >= 0 then quantizes to >= zero point."""
    scale = g.constant_value_of(op.operands[1])
    return scale is not None and bool(np.all(np.asarray(scale) > 0)) and scalar_of(zp) is not None


def _float_cast(b: EpilogueBuilder, op: Operation, ops: list, dst: Temp) -> object:
    """A cast between f32 and f16 in an int8 product's epilogue: nothing. The program computes
    in f32 whatever its values' types (the dequantized value of a force_fp16 model is cast to
    f16 for the ops after it and back for the requantize); skipping the f16 rounding is more
    precise than the graph and moves a requantized value by at most one step, where it lies
    on a rounding boundary (docs/quantization.md)."""
    src, dst_t = op.operands[0].type.element_type, op.results[0].type.element_type
    if not (b.integer and is_float(src) and is_float(dst_t)):
        raise Unsupported
    return ops[0]


def _integer_range(elt: Attribute) -> tuple[int, int]:
    info = np.iinfo(to_dtype(elt))
    return int(info.min), int(info.max)


EPILOGUE_INTEGERS = (IntegerType(8), IntegerType(32))
"""Integer types an int8 product's epilogue reads and writes besides f32 / f16: int8 (a
requantized result, a zero point) and int32 (the accumulator, a bias)."""

EXACT_INTEGER_OPS = frozenset({g.QuantizeOp, g.RequantizeOp, g.AddOp, g.SubOp, g.ReluOp, g.MaxOp, g.MinOp, g.ClipOp})
"""Ops with an integer result an int8 product's epilogue takes. In an i32 program (no float
value) they are exact; in an f32 one (with a dequantize) a quantize is exact and an i32
add is exact while its values stay below 2^24 in magnitude."""

_TRANSLATIONS: dict[type[Operation], Translation] = {
    **{op: _unary(vop) for op, vop in UNARY.items()},
    **{op: _binary(vop) for op, vop in BINARY.items()},
    g.LeakyReluOp: _leaky_relu,
    g.SumOp: _sum_or_mean,
    g.MeanOp: _sum_or_mean,
    g.PowOp: _pow,
    g.ClipOp: _clip,
    g.GeluOp: _gelu,
    g.HardSigmoidOp: _hard_sigmoid,
    g.HardSwishOp: _hard_swish,
    g.PReluOp: _prelu,
    g.BatchNormOp: _batch_norm,
    g.DequantizeOp: _dequantize,
    g.QuantizeOp: _quantize,
    g.RequantizeOp: _requantize,
    g.CastOp: _float_cast,
}
