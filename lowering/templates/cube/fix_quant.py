"""An int8 convolution's epilogue done by the cube core alone: the FIX pipe's quantization.

The epilogue of an int8 x int8 -> i32 convolution is often exactly what the 910B's FIX pipe
computes on its way out of l0c (Ascend C Fixpipe's quantPre): requantize the accumulator
to int8 (VREQ8 / REQ8) or dequantize it to f16 (VDEQF16 / DEQF16), with a relu. The
conv's i32 bias initialises l0c from the bias table (bt) with the first mmad of a tile,
and the scales sit in the fixpipe buffer (fb). Such a kernel needs no vector epilogue: no i32
tile staged in gm and read back, no vector passes, no AIV.

`fix_quant_stage` recognises the epilogues the FIX computes whole:

    conv -> requantize(acc, scale, zero_point) [-> relu]                   (int8 out)
    conv -> dequantize(acc, scale) with f32 -> f16 casts and one relu       (f16 out)

with views anywhere, one output, a scale from gm (one, or one per output channel) and a
constant zero point; `fix_dequantize_prefix` the start of a longer one, dequantize -> cast to
f16, after which a vector epilogue goes on from the f16 tile FIX staged in gm.

The FIX pipe reads a scale as a 19-bit float and rounds half away from zero (ascend.CopyOp).
A requantize's scale is one it holds exactly (graph-fold-qdq picks it so), so the int8 result
is the graph's but for a rounding tie; a dequantize's scale (s_x * s_w) is read truncated, so
the f16 result may differ from the graph's in its last bit (docs/quantization.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import IntegerType, f16, f32
from xdsl.ir import Attribute, Operation, SSAValue

from geir.dialects import graph as g
from geir.ir.types import is_float
from geir.lowering.templates.cube.ops import is_view, logical_shape, storage
from geir.target.device import DeviceSpec

@dataclass(frozen=True)
class FixQuant:
    """The epilogue as the FIX pipe's quantization stage: kernel inputs `scale` (f32, one or
    one per output channel: `per_channel`) and `bias` (the conv's i32 bias, or None), the
    type FIX writes (`out`: f16, i8 or ui8), the requantized result's `zero_point` and a
    relu on the result."""

    scale: int
    per_channel: bool
    out: Attribute
    zero_point: int | None
    relu: bool
    bias: int | None
    channels: int


def params_rows(fix: FixQuant) -> int:
    """Elements of each l1 parameter vector: the channels, padded so that any tile's rows
    (starting at a multiple of 16, whole fractals of rows) lie inside."""
    return -(-fix.channels // 16) * 16 if fix.per_channel else 8


def fix_params_bytes(fix: FixQuant) -> int:
    """l1 bytes the kernel keeps its scales (and bias) in: 4-byte elements."""
    return params_rows(fix) * 4 * (2 if fix.bias is not None else 1)


def fix_quant_stage(cube: Operation, ops: Sequence[Operation], outputs: Sequence[SSAValue],
                    index: dict[SSAValue, int], device: DeviceSpec) -> FixQuant | None:
    """The FIX stage computing `ops` (the request's ops after the int8 conv `cube`, whose one
    output is `outputs[0]`), or None."""
    if not isinstance(cube, g.ConvOp) or len(outputs) != 1 or storage(outputs[0]) != storage(cube.results[0]):
        return None  # an NC1HWC0 result is written blocked by the FIX copy (op_info.fix_requantized)
    if not device.fix_quantizes:  # no bias table / fixpipe buffer: the vector epilogue
        return None
    chain = _chain(cube.results[0], ops, outputs[0])
    if chain is None:
        return None
    work = [op for op in chain if not is_view(op)]
    if not work:
        return None
    first, rest = work[0], work[1:]
    relus = [op for op in rest if isinstance(op, g.ReluOp)]
    if len(relus) > 1:
        return None
    out = outputs[0].type.element_type
    if isinstance(first, g.RequantizeOp):
        if any(not isinstance(op, g.ReluOp) for op in rest) or not (isinstance(out, IntegerType) and out.width.data == 8):
            return None
        zp = g.constant_value_of(first.operands[2])
        if zp is None or zp.size != 1:
            return None
        zero_point = int(np.asarray(zp).reshape(-1)[0])
    elif isinstance(first, g.DequantizeOp):
        if len(first.operands) > 2:
            zp = g.constant_value_of(first.operands[2])
            if zp is None or np.any(zp != 0):
                return None
        if out != f16 or any(not (isinstance(op, g.ReluOp) or _float_cast(op)) for op in rest):
            return None
        zero_point = None
    else:
        return None
    return _stage(cube, first.operands[1], index, out, zero_point, bool(relus))


def fix_dequantize_prefix(cube: Operation, ops: Sequence[Operation], index: dict[SSAValue, int],
                          device: DeviceSpec) -> tuple[FixQuant, SSAValue] | None:
    """When the FIX pipe cannot compute a whole int8 conv epilogue, its start may still be
    the FIX's: `dequantize(acc, scale)` (no zero point) cast to f16 - the bias through the bias
    table, the scale through the fixpipe buffer, the f16 value staged in gm for the vector
    epilogue to go on from (a residual add, a relu, a requantize: ResNet's block ends). The
    stage and the f16 value the vector program starts from, or None."""
    if not isinstance(cube, g.ConvOp) or len(ops) < 3 or not device.fix_quantizes:
        return None
    dq, cast = ops[0], ops[1]
    acc = cube.results[0]
    if not (isinstance(dq, g.DequantizeOp) and dq.operands[0] is acc and sum(1 for _ in acc.uses) == 1):
        return None
    if len(dq.operands) > 2:
        zp = g.constant_value_of(dq.operands[2])
        if zp is None or np.any(zp != 0):
            return None
    if not (_float_cast(cast) and cast.operands[0] is dq.results[0] and sum(1 for _ in dq.results[0].uses) == 1
            and cast.results[0].type.element_type == f16):
        return None
    stage = _stage(cube, dq.operands[1], index, f16, None, False)
    return None if stage is None else (stage, cast.results[0])


def _stage(cube: Operation, scale: SSAValue, index: dict[SSAValue, int], out: Attribute,
           zero_point: int | None, relu: bool) -> FixQuant | None:
    """The stage with `scale` - a kernel input the FIX reads from gm through l1 and fb: one
    f32, or one per output channel - and the conv's bias (an input too), or None."""
    acc = cube.results[0]
    channels = logical_shape(acc)[1]
    bias = None
    if len(cube.operands) > 2:
        if cube.operands[2] not in index:
            return None
        bias = index[cube.operands[2]]
    if scale not in index or scale.type.element_type != f32:
        return None
    per_channel = math.prod(logical_shape(scale)) != 1
    if per_channel and not _along_channels(logical_shape(scale), len(logical_shape(acc)), channels):
        return None
    group = cube.attrs().get("group") or 1
    if (per_channel or bias is not None) and group > 1 and (channels // group) % 16:
        # a tile's rows start at group * (channels / group) + a multiple of 16: its slice of
        # the l1 parameter vectors must start on a 32-byte block for MTE1 (params_rows), so
        # a group of another width (ShuffleNet's 28 channels) keeps the vector epilogue
        return None
    return FixQuant(index[scale], per_channel, out, zero_point, relu, bias, channels)


def _chain(value: SSAValue, ops: Sequence[Operation], output: SSAValue) -> list[Operation] | None:
    """`ops` when they are one line from `value` to `output`: each op reads the value before
    it (its first operand) and nothing else of the chain reads it."""
    chain = []
    for op in ops:
        if len(op.results) != 1 or op.operands[0] is not value or sum(1 for _ in value.uses) != 1:
            return None
        chain.append(op)
        value = op.results[0]
    return chain if value is output else None


def _float_cast(op: Operation) -> bool:
    return isinstance(op, g.CastOp) and all(is_float(v.type.element_type) for v in (op.operands[0], op.results[0]))


def _along_channels(shape: tuple[int, ...], rank: int, channels: int) -> bool:
    """A per-channel parameter: [C] broadcast along axis 1 of a rank-`rank` result ([1, C, 1, 1],
    [C, 1, 1])."""
    full = (1,) * (rank - len(shape)) + tuple(shape)
    return len(full) == rank and full[1] == channels and all(d == 1 for i, d in enumerate(full) if i != 1)
