"""The ONNX quantized operators, imported into graph.quantize / graph.dequantize and the int8
contractions (docs/quantization.md).

QuantizeLinear and DequantizeLinear map 1:1, their per-axis 1-D parameters reshaped to
broadcast along the axis. The integer ops (ConvInteger, MatMulInteger and the QLinear ones
built on them) subtract zero points before multiplying; the cube multiplies stored integers, so
a constant weight's zero point is folded into the weights and the input's into an int32 bias
(a conv pads with `offset_x`, the input zero point, so the padding adds nothing). What cannot
be written so is imported exactly on int32 values. DynamicQuantizeLinear becomes the
reductions and arithmetic its definition spells out.

Converters take the importer (frontend/onnx.py) and use its public methods only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from geir.dialects import graph as g
from geir.ir.types import to_dtype, to_element_type

_I32 = np.dtype(np.int32)


def _param(im, value: SSAValue | None, x_rank: int, axis: int) -> SSAValue | None:
    """A quantization parameter shaped to broadcast to x: a scalar stays, a 1-D per-axis one
    is laid along `axis` ([1, C, 1, 1]); a one-element 1-D one becomes a scalar."""
    if value is None:
        return None
    shape = value.type.get_shape()
    if len(shape) == 0:
        return value
    if len(shape) != 1:
        raise im.error(f"a quantization parameter of shape {list(shape)} without block_size: per tensor "
                       f"or per axis, it is a scalar or 1-D")
    target = [1] * x_rank
    if shape[0] == 1:
        target = []
    else:
        target[axis % x_rank] = shape[0]
    known = im.const_value(value)
    if known is not None:
        return im.constant(np.asarray(known).reshape(target))
    return im.op(g.ReshapeOp, [value, im.constant(np.array(target, np.int64))])


def _blocked(im, value: SSAValue | None, x_shape: tuple[int, ...], axis: int, block: int,
             what: str) -> SSAValue | None:
    """A blocked quantization parameter (opset 21 block_size: x's rank, `axis` cut into blocks
    of `block` elements, the last one possibly short) repeated along `axis` to x's shape: a
    constant at import, else a graph.gather of block index i // block for each i."""
    if value is None:
        return None
    shape = tuple(value.type.get_shape())
    rank = len(x_shape)
    a = axis % rank if -rank <= axis < rank else None
    want = None if a is None else (*x_shape[:a], -(-x_shape[a] // block), *x_shape[a + 1:])
    if block < 0 or want is None or shape != want:
        raise im.error(f"blocked quantization: {what} of shape {list(shape)} does not block x of shape "
                       f"{list(x_shape)} along axis {axis} by block_size {block} (expected "
                       f"{list(want) if want else '?'})")
    index = np.arange(x_shape[a], dtype=np.int64) // block
    known = im.const_value(value)
    if known is not None:
        return im.constant(np.take(np.asarray(known), index, axis=a))
    return im.op(g.GatherOp, [value, im.constant(index)], axis=a)


def _params(im, x: SSAValue, scale: SSAValue, zp: SSAValue | None, attrs: dict[str, Any]):
    """scale and zero point shaped to broadcast to x: per tensor, per axis or blocked."""
    shape = tuple(x.type.get_shape())
    axis = attrs.get("axis", 1)
    block = attrs.get("block_size", 0)
    if block:
        return (_blocked(im, scale, shape, axis, block, "scale"),
                _blocked(im, zp, shape, axis, block, "zero point"))
    return _param(im, scale, len(shape), axis), _param(im, zp, len(shape), axis)


def _reject(im, attrs: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(attrs) - allowed)
    if unknown:
        raise im.error(f"attribute(s) {unknown} are not supported")


def _quantize_linear(im, ins, attrs):
    _reject(im, attrs, {"axis", "saturate", "block_size", "output_dtype", "precision"})
    x, scale, zp = (list(ins) + [None])[:3]
    precision = attrs.get("precision", 0)
    if precision and _onnx_elt(im, precision) not in (scale.type.element_type, to_element_type(np.float32)):
        raise im.error("a division precision other than the scale's type or float32 is not supported")
    if zp is None:
        dtype = attrs.get("output_dtype", 0)
        elt = to_element_type(np.uint8) if not dtype else _onnx_elt(im, dtype)
        zp = im.constant(np.zeros((), to_dtype(elt)))
        scale = _params(im, x, scale, None, attrs)[0]
    else:
        scale, zp = _params(im, x, scale, zp, attrs)
    # saturate (opset 19) changes only a float8 result; graph.quantize keeps it there alone
    extra = {"saturate": 0} if not attrs.get("saturate", 1) and zp.type.element_type in g.SATURATING_TYPES else {}
    return im.build(g.QuantizeOp, [x, scale, zp], **extra)


def _dequantize_linear(im, ins, attrs):
    _reject(im, attrs, {"axis", "block_size", "output_dtype"})
    x, scale, zp = (list(ins) + [None])[:3]
    scale_x, zp_x = _params(im, x, scale, zp, attrs)
    inputs = [x, scale_x] if zp is None else [x, scale_x, zp_x]
    out = attrs.get("output_dtype", 0)
    if out and _onnx_elt(im, out) != scale.type.element_type:  # opset 23: an output type of its own
        return im.build(g.CastOp, [im.op(g.DequantizeOp, inputs)], to=_onnx_elt(im, out))
    return im.build(g.DequantizeOp, inputs)


def _onnx_elt(im, elem_type: int):
    import onnx

    try:
        return to_element_type(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except Exception:  # noqa: BLE001 - any unknown type is the same error
        raise im.error(f"element type {onnx.TensorProto.DataType.Name(elem_type)} is not supported") from None


# ---------------------------------------------------------------------------
# Integer contractions
# ---------------------------------------------------------------------------


def _zero_point(im, value: SSAValue | None) -> np.ndarray | None:
    """A zero point known at import (0 if absent), or None when it is not a constant."""
    if value is None:
        return np.zeros((), np.int64)
    known = im.const_value(value)
    return None if known is None else np.asarray(known, np.int64)


def _folded_weights(w: np.ndarray, zw: np.ndarray, axis: int) -> np.ndarray | None:
    """w - zw as int8 (zw per tensor or per `axis` of w), or None if a difference leaves int8."""
    z = zw if zw.ndim == 0 else zw.reshape([-1 if i == axis else 1 for i in range(w.ndim)])
    d = w.astype(np.int64) - z
    if d.min(initial=0) < -128 or d.max(initial=0) > 127:
        return None
    return d.astype(np.int8)


def _int32(im, array: np.ndarray) -> np.ndarray:
    if array.size and (array.min() < np.iinfo(_I32).min or array.max() > np.iinfo(_I32).max):
        raise im.error("the folded int32 bias overflows int32")
    return array.astype(_I32)


def _widened(im, x: SSAValue, zp: SSAValue | None, x_rank: int, axis: int) -> SSAValue:
    """x - zp on int32 values: the exact form of an integer operand."""
    wide = im.op(g.CastOp, [x], to=to_element_type(_I32))
    if zp is None:
        return wide
    z = _param(im, zp, x_rank, axis)
    return im.op(g.SubOp, [wide, im.op(g.CastOp, [z], to=to_element_type(_I32))])


def _emitter(im, final: bool):
    """How a converter builds its ops: the node's own result through im.build (typed against
    onnx's), intermediates through im.op."""
    return (lambda cls, ins, **kw: im.build(cls, ins, **kw)[0]) if final else im.op


def conv_integer(im, x, w, zx, zw, bias: SSAValue | None, attrs, final: bool = False) -> SSAValue:
    """sum((x - zx)(w - zw)) + bias as int32: the int8 conv with offset_x and the zero point's
    share in the bias when it can be (zx a constant scalar, w constant with zw folding into
    int8), else on int32 values. `final`: the result is the node's output."""
    emit = _emitter(im, final)
    conv_attrs = im.conv_attrs(attrs, x, w)
    zx_v, zw_v = _zero_point(im, zx), _zero_point(im, zw)
    w_c = im.const_value(w)
    if zx_v is not None and zx_v.size == 1 and w_c is not None and zw_v is not None:
        wq = _folded_weights(np.asarray(w_c), zw_v.reshape(-1) if zw_v.size > 1 else zw_v.reshape(()), 0)
        if wq is not None:
            z = int(zx_v.reshape(()))
            total = np.zeros(wq.shape[0], np.int64) if bias is None else np.asarray(im.require_const(bias, "bias"), np.int64)
            total = total - z * wq.reshape(wq.shape[0], -1).sum(axis=1, dtype=np.int64)
            inputs = [x, im.constant(wq)]
            if bias is not None or z:
                inputs.append(im.constant(_int32(im, total)))
            return emit(g.ConvOp, inputs, **conv_attrs, **({"offset_x": z} if z else {}))
    rank = len(x.type.get_shape())
    inputs = [_widened(im, x, zx, rank, 1), _widened(im, w, zw, rank, 0)]
    if bias is None:
        return emit(g.ConvOp, inputs, **conv_attrs)
    return emit(g.AddOp, [im.op(g.ConvOp, inputs, **conv_attrs), _param(im, bias, rank, 1)])


def matmul_integer(im, a, b, za, zb, final: bool = False) -> SSAValue:
    """(a - za) @ (b - zb) as int32: the int8 matmul plus an int32 column correction when za is
    a constant scalar and b a constant 2-D matrix whose zero point folds into int8."""
    emit = _emitter(im, final)
    za_v, zb_v = _zero_point(im, za), _zero_point(im, zb)
    b_c = im.const_value(b)
    if za_v is not None and za_v.size == 1 and b_c is not None and np.ndim(b_c) == 2 and zb_v is not None:
        bq = _folded_weights(np.asarray(b_c), zb_v.reshape(-1) if zb_v.size > 1 else zb_v.reshape(()), 1)
        if bq is not None:
            z = int(za_v.reshape(()))
            if not z:
                return emit(g.MatMulOp, [a, im.constant(bq)])
            correction = _int32(im, -z * bq.sum(axis=0, dtype=np.int64))
            return emit(g.AddOp, [im.op(g.MatMulOp, [a, im.constant(bq)]), im.constant(correction)])
    ra, rb = len(a.type.get_shape()), len(b.type.get_shape())
    return emit(g.MatMulOp, [_widened(im, a, za, ra, ra - 1), _widened(im, b, zb, rb, rb - 1)])


def _scale_product(im, s1: SSAValue, s2: SSAValue, rank: int, axis: int) -> SSAValue:
    """s1 * s2 (the accumulator's scale), shaped along the result's channel axis."""
    a = im.require_const(s1, "the input scale")
    b = im.require_const(s2, "the weight scale")
    product = (np.asarray(a, np.float32) * np.asarray(b, np.float32)).reshape(-1)
    return _param(im, im.constant(product if product.size > 1 else product.reshape(())), rank, axis)


def _conv_integer(im, ins, attrs):
    x, w, zx, zw = (list(ins) + [None, None])[:4]
    return [conv_integer(im, x, w, zx, zw, None, attrs, final=True)]


def _matmul_integer(im, ins, attrs):
    _reject(im, attrs, set())
    a, b, za, zb = (list(ins) + [None, None])[:4]
    return [matmul_integer(im, a, b, za, zb, final=True)]


def _qlinear_conv(im, ins, attrs):
    x, xs, xz, w, ws, wz, ys, yz = ins[:8]
    bias = ins[8] if len(ins) > 8 else None
    acc = conv_integer(im, x, w, xz, wz, bias, attrs)
    rank = len(x.type.get_shape())
    y = im.op(g.DequantizeOp, [acc, _scale_product(im, xs, ws, rank, 1)])
    return im.build(g.QuantizeOp, [y, _param(im, ys, rank, 1), _param(im, yz, rank, 1)])


def _qlinear_matmul(im, ins, attrs):
    _reject(im, attrs, set())
    a, as_, az, b, bs, bz, ys, yz = ins
    acc = matmul_integer(im, a, b, az, bz)
    rank = len(acc.type.get_shape())
    y = im.op(g.DequantizeOp, [acc, _scale_product(im, as_, bs, rank, rank - 1)])
    return im.build(g.QuantizeOp, [y, _param(im, ys, rank, rank - 1), _param(im, yz, rank, rank - 1)])


def _dynamic_quantize_linear(im, ins, attrs):
    """uint8 with the range [min(x, 0), max(x, 0)] over 256 levels (the ONNX definition):
    scale = (max - min) / 255, zero point = round(clip(-min / scale, 0, 255))."""
    _reject(im, attrs, set())
    (x,) = ins
    f = to_dtype(x.type.element_type)
    zero = im.constant(np.zeros((), f))
    lo = im.op(g.MinOp, [im.op(g.ReduceMinOp, [x], keepdims=0), zero])
    hi = im.op(g.MaxOp, [im.op(g.ReduceMaxOp, [x], keepdims=0), zero])
    scale = im.op(g.DivOp, [im.op(g.SubOp, [hi, lo]), im.constant(np.array(255, f))])
    shifted = im.op(g.DivOp, [im.op(g.NegOp, [lo]), scale])
    clipped = im.op(g.ClipOp, [shifted, zero, im.constant(np.array(255, f))])
    zp = im.op(g.CastOp, [im.op(g.RoundOp, [clipped])], to=to_element_type(np.uint8))
    y = im.build(g.QuantizeOp, [x, scale, zp])[0]
    return [y, scale, zp]


QUANTIZED_CONVERTERS = {
    "QuantizeLinear": _quantize_linear,
    "DequantizeLinear": _dequantize_linear,
    "ConvInteger": _conv_integer,
    "MatMulInteger": _matmul_integer,
    "QLinearConv": _qlinear_conv,
    "QLinearMatMul": _qlinear_matmul,
    "DynamicQuantizeLinear": _dynamic_quantize_linear,
}
"""ONNX op type -> converter, merged into frontend/onnx.py's CONVERTERS."""


# ---------------------------------------------------------------------------
# onnxruntime's contrib ops (com.microsoft) in the QOperator format: each is defined as
# dequantize the inputs, the float op, quantize the output, and is imported as exactly that;
# graph-fold-qdq makes QGemm int8 like a QDQ gemm.
# ---------------------------------------------------------------------------


def _dq(im, x: SSAValue, scale: SSAValue, zp: SSAValue | None, axis: int = 1) -> SSAValue:
    rank = len(x.type.get_shape())
    inputs = [x, _param(im, scale, rank, axis)]
    if zp is not None:
        inputs.append(_param(im, zp, rank, axis))
    return im.op(g.DequantizeOp, inputs)


def _q_output(im, y: SSAValue, scale: SSAValue, zp: SSAValue | None) -> list[SSAValue]:
    rank = len(y.type.get_shape())
    if zp is None:
        zp = im.constant(np.zeros((), np.uint8))
    return im.build(g.QuantizeOp, [y, _param(im, scale, rank, 1), _param(im, zp, rank, 1)])


def _qgemm(im, ins, attrs):
    """QGemm: alpha * A' B' + C (C int32 at scale sa * sb), quantized to y (or float out when
    y's scale is absent)."""
    _reject(im, attrs, {"alpha", "transA", "transB"})
    a, sa, za, b, sb, zb = ins[:6]
    c = ins[6] if len(ins) > 6 else None
    ys = ins[7] if len(ins) > 7 else None
    yz = ins[8] if len(ins) > 8 else None
    trans_b = attrs.get("transB", 0)
    gemm_attrs = {"alpha": attrs.get("alpha", 1.0), "trans_a": attrs.get("transA", 0), "trans_b": trans_b}
    inputs = [_dq(im, a, sa, za), _dq(im, b, sb, zb, 0 if trans_b else 1)]
    if c is not None:
        c_scale = im.constant(np.asarray(im.require_const(sa, "the A scale"), np.float32)
                              * np.asarray(im.require_const(sb, "the B scale"), np.float32))
        inputs.append(_dq(im, c, c_scale, None, len(c.type.get_shape()) - 1))
    if ys is None:
        return im.build(g.GemmOp, inputs, **gemm_attrs)
    return _q_output(im, im.op(g.GemmOp, inputs, **gemm_attrs), ys, yz)


def _qlinear(cls: type[g.GraphOp], arity: int, allowed: set[str] = frozenset(), **fixed: Any):
    """QLinear<Op>: `arity` (x, scale, zero point) triples, then y's scale and zero point."""

    def convert(im, ins, attrs):
        _reject(im, attrs, set(allowed))
        xs = [_dq(im, *ins[3 * i:3 * i + 3]) for i in range(arity)]
        ys, yz = ins[3 * arity], ins[3 * arity + 1] if len(ins) > 3 * arity + 1 else None
        kwargs = {**fixed, **{k: v for k, v in attrs.items() if k in allowed}}
        return _q_output(im, im.op(cls, xs, **kwargs), ys, yz)

    return convert


def _qlinear_concat(im, ins, attrs):
    """QLinearConcat: y's scale and zero point first, then (x, scale, zero point) triples."""
    _reject(im, attrs, {"axis"})
    ys, yz = ins[0], ins[1]
    xs = [_dq(im, *ins[i:i + 3]) for i in range(2, len(ins), 3)]
    return _q_output(im, im.op(g.ConcatOp, xs, axis=attrs["axis"]), ys, yz)


def _qlinear_global_average_pool(im, ins, attrs):
    _reject(im, attrs, {"channels_last"})
    if attrs.get("channels_last", 0):
        raise im.error("channels_last is not supported")
    x, xs, xz, ys, yz = ins
    return _q_output(im, im.op(g.GlobalAvgPoolOp, [_dq(im, x, xs, xz)]), ys, yz)


def _qlinear_average_pool(im, ins, attrs):
    if attrs.pop("channels_last", 0):
        raise im.error("channels_last is not supported")
    x, xs, xz, ys, yz = (list(ins) + [None])[:5]
    y = im.op(g.AvgPoolOp, [_dq(im, x, xs, xz)], **im.pool_attrs(g.AvgPoolOp, attrs, x))
    return _q_output(im, y, ys, yz)


CONTRIB_CONVERTERS = {
    "QLinearAveragePool": _qlinear_average_pool,
    "QGemm": _qgemm,
    "QLinearAdd": _qlinear(g.AddOp, 2),
    "QLinearMul": _qlinear(g.MulOp, 2),
    "QLinearSigmoid": _qlinear(g.SigmoidOp, 1),
    "QLinearLeakyRelu": _qlinear(g.LeakyReluOp, 1, {"alpha"}),
    "QLinearConcat": _qlinear_concat,
    "QLinearGlobalAveragePool": _qlinear_global_average_pool,
}
"""com.microsoft op type -> converter (onnxruntime's quantized contrib ops)."""
