"""The ONNX elementwise, integer and scan operators not covered by frontend/onnx.py
(docs/onnx.md "Elementwise, integer and scan ops").

- Acos, Acosh, Asin, Asinh, Atan, Atanh, Tan, Cosh, Sinh, IsNaN, IsInf, the Bitwise family,
  BitShift, BitCast, CumSum and CumProd map 1:1 onto graph ops (CumSum's / CumProd's axis is
  an input that must be a constant: freeze it when it is a graph input).
- Swish and SwiGLU become x * sigmoid(alpha * x) (times B) in mul / sigmoid, which have kernels.
- Hardmax becomes an arg_max compared with an iota of the axis, cast to x's type (opsets
  before 13 first coerce x to 2-D at `axis`, as the old schema says).
- Trilu of a constant folds; of a runtime tensor it is a where with the triangle's mask
  constant (np.triu / np.tril of ones over the last two dims), so it runs on kernels.
- BlackmanWindow, HammingWindow, HannWindow of a constant size are a constant (computed in
  double precision as the ONNX reference does, then converted to output_datatype).

Converters take the importer (frontend/onnx.py) and use its public methods only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from geir.dialects import graph as g
from geir.ir.types import to_dtype, to_element_type


def _reject(im, attrs: dict[str, Any], allowed: set[str] = frozenset()) -> None:
    unknown = sorted(set(attrs) - set(allowed))
    if unknown:
        raise im.error(f"attribute(s) {unknown} are not supported")


def _dtype(im, elem_type: int, what: str) -> np.dtype:
    import onnx

    try:
        dt = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
        to_element_type(dt)
        return dt
    except Exception:  # noqa: BLE001 - any unknown type is the same error
        try:
            name = onnx.TensorProto.DataType.Name(elem_type)
        except ValueError:
            name = str(elem_type)
        raise im.error(f"{what} {name} is not supported") from None


def _scalar(im, value: float, like: SSAValue) -> SSAValue:
    """A 0-d constant of `like`'s element type."""
    return im.constant(np.array(value, to_dtype(like.type.element_type)))


def _decode(v):
    return v.decode() if isinstance(v, bytes) else v


def _simple(cls, allowed: tuple[str, ...] = ()):
    def convert(im, ins, attrs):
        _reject(im, attrs, set(allowed))
        return im.build(cls, list(ins), **{k: attrs[k] for k in allowed if k in attrs})

    return convert


def _swish_of(im, a: SSAValue, alpha: float) -> SSAValue:
    """a * sigmoid(alpha * a) as intermediate ops."""
    z = a if alpha == 1.0 else im.op(g.MulOp, [a, _scalar(im, alpha, a)])
    return im.op(g.MulOp, [a, im.op(g.SigmoidOp, [z])])


def _swish(im, ins, attrs):
    _reject(im, attrs, {"alpha"})
    x = ins[0]
    alpha = float(attrs.get("alpha", 1.0))
    z = x if alpha == 1.0 else im.op(g.MulOp, [x, _scalar(im, alpha, x)])
    return im.build(g.MulOp, [x, im.op(g.SigmoidOp, [z])])


def _swiglu(im, ins, attrs):
    _reject(im, attrs, {"alpha"})
    a, b = ins
    if a.type.get_shape() != b.type.get_shape():
        raise im.error(f"A {list(a.type.get_shape())} and B {list(b.type.get_shape())} must have one shape "
                       f"(SwiGLU does not broadcast)")
    return im.build(g.MulOp, [_swish_of(im, a, float(attrs.get("alpha", 1.0))), b])


def _bit_shift(im, ins, attrs):
    _reject(im, attrs, {"direction"})
    direction = _decode(attrs.get("direction", ""))
    if direction not in ("LEFT", "RIGHT"):
        raise im.error(f"direction must be LEFT or RIGHT, got {direction!r}")
    return im.build(g.BitShiftOp, list(ins), direction=direction)


def _bitcast(im, ins, attrs):
    _reject(im, attrs, {"to"})
    if "to" not in attrs:
        raise im.error("attribute 'to' is required")
    return im.build(g.BitCastOp, [ins[0]], to=_dtype(im, attrs["to"], "target type"))


def _is_inf(im, ins, attrs):
    _reject(im, attrs, {"detect_positive", "detect_negative"})
    return im.build(g.IsInfOp, [ins[0]], detect_positive=attrs.get("detect_positive", 1),
                    detect_negative=attrs.get("detect_negative", 1))


def _cumulative(cls):
    def convert(im, ins, attrs):
        _reject(im, attrs, {"exclusive", "reverse"})
        x, axis = ins
        a = np.asarray(im.require_const(axis, "axis"))
        if a.size != 1:
            raise im.error(f"axis must hold one value, got shape {list(a.shape)}")
        return im.build(cls, [x], axis=int(a.reshape(-1)[0]), exclusive=attrs.get("exclusive", 0),
                        reverse=attrs.get("reverse", 0))

    return convert


def _hardmax(im, ins, attrs):
    _reject(im, attrs, {"axis"})
    x = ins[0]
    shape = tuple(x.type.get_shape())
    rank = len(shape)
    if rank == 0:
        raise im.error("input must have rank >= 1")
    old = im.opset < 13
    axis = attrs.get("axis", 1 if old else -1)
    if not -rank <= axis < rank:
        raise im.error(f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    if 0 in shape:  # nothing to compute
        return im.build(g.IdentityOp, [x])
    v = x
    if old:  # coerced to 2-D: [prod(shape[:axis]), prod(shape[axis:])], hardmax along the second
        flat = (int(np.prod(shape[:axis], dtype=np.int64)), int(np.prod(shape[axis:], dtype=np.int64)))
        v = im.op(g.ReshapeOp, [x, im.constant(np.array(flat, np.int64))])
        axis = 1
    vshape = tuple(v.type.get_shape())
    index = im.op(g.ArgMaxOp, [v], axis=axis, keepdims=1, select_last_index=0)
    iota_shape = [1] * len(vshape)
    iota_shape[axis] = vshape[axis]
    iota = im.constant(np.arange(vshape[axis], dtype=np.int64).reshape(iota_shape))
    hit = im.op(g.EqualOp, [index, iota])
    if not old:
        return im.build(g.CastOp, [hit], to=to_dtype(x.type.element_type))
    y = im.op(g.CastOp, [hit], to=to_dtype(x.type.element_type))
    return im.build(g.ReshapeOp, [y, im.constant(np.array(shape, np.int64))])


def _trilu(im, ins, attrs):
    """The triangle (upper, default, or lower) above / below diagonal k of the last two dims:
    folded when x is a constant (PyTorch's causal masks), else where(mask, x, 0) with the
    mask a constant."""
    _reject(im, attrs, {"upper"})
    x = ins[0]
    shape = tuple(x.type.get_shape())
    if len(shape) < 2:
        raise im.error(f"input must have rank >= 2, got shape {list(shape)}")
    k = 0
    if len(ins) > 1 and ins[1] is not None:
        kv = np.asarray(im.require_const(ins[1], "k"))
        if kv.size != 1:
            raise im.error(f"k must hold one value, got shape {list(kv.shape)}")
        k = int(kv.reshape(-1)[0])
    upper = attrs.get("upper", 1)
    tri = np.triu if upper else np.tril
    known = im.const_value(x)
    if known is not None:
        return [im.constant(tri(known, k))]
    mask = tri(np.ones(shape[-2:], bool), k)
    if mask.all():
        return im.build(g.IdentityOp, [x])
    return im.build(g.WhereOp, [im.constant(mask), x, _scalar(im, 0, x)])


def _window(kind: str):
    def convert(im, ins, attrs):
        _reject(im, attrs, {"periodic", "output_datatype"})
        size = np.asarray(im.require_const(ins[0], "size"))
        if size.size != 1:
            raise im.error(f"size must be a scalar, got shape {list(size.shape)}")
        n = int(size.reshape(-1)[0])
        if n < 0:
            raise im.error(f"size must not be negative, got {n}")
        dt = _dtype(im, attrs.get("output_datatype", 1), "output_datatype")
        periodic = attrs.get("periodic", 1)
        ni = np.arange(n, dtype=np.float64)
        period = float(n if periodic else n - 1)
        with np.errstate(all="ignore"):
            if kind == "blackman":
                y = 0.42 - 0.5 * np.cos(2 * np.pi * ni / period) + 0.08 * np.cos(4 * np.pi * ni / period)
            elif kind == "hamming":
                alpha = 25.0 / 46.0
                y = alpha - (1 - alpha) * np.cos(2 * np.pi * ni / period)
            else:
                y = np.sin(np.pi * ni / period) ** 2
        return [im.constant(y.astype(dt))]

    return convert


ELEMENTWISE_CONVERTERS = {
    "Acos": _simple(g.AcosOp), "Acosh": _simple(g.AcoshOp), "Asin": _simple(g.AsinOp),
    "Asinh": _simple(g.AsinhOp), "Atan": _simple(g.AtanOp), "Atanh": _simple(g.AtanhOp),
    "Tan": _simple(g.TanOp), "Cosh": _simple(g.CoshOp), "Sinh": _simple(g.SinhOp),
    "IsNaN": _simple(g.IsNanOp), "IsInf": _is_inf,
    "Swish": _swish, "SwiGLU": _swiglu,
    "BitwiseAnd": _simple(g.BitwiseAndOp), "BitwiseOr": _simple(g.BitwiseOrOp),
    "BitwiseXor": _simple(g.BitwiseXorOp), "BitwiseNot": _simple(g.BitwiseNotOp),
    "BitShift": _bit_shift, "BitCast": _bitcast,
    "CumSum": _cumulative(g.CumSumOp), "CumProd": _cumulative(g.CumProdOp),
    "Hardmax": _hardmax, "Trilu": _trilu,
    "BlackmanWindow": _window("blackman"), "HammingWindow": _window("hamming"), "HannWindow": _window("hann"),
}
"""ONNX op type -> converter, merged into frontend/onnx.py's CONVERTERS."""
