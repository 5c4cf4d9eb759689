"""Element types and tensor types shared by geir's dialects.

One table maps MLIR element types to numpy dtypes; everything that moves data
between the IR and numpy (import, constants, the interpreter) goes through it.
"""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float4E2M1FNType,
    Float6E2M3FNType,
    Float6E3M2FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute

i1 = IntegerType(1)
_NARROW_FLOATS: list[tuple[Attribute, np.dtype]] = [
    (Float8E4M3FNType(), np.dtype(ml_dtypes.float8_e4m3fn)),
    (Float8E4M3FNUZType(), np.dtype(ml_dtypes.float8_e4m3fnuz)),
    (Float8E5M2Type(), np.dtype(ml_dtypes.float8_e5m2)),
    (Float8E5M2FNUZType(), np.dtype(ml_dtypes.float8_e5m2fnuz)),
    (Float8E8M0FNUType(), np.dtype(ml_dtypes.float8_e8m0fnu)),
    (Float4E2M1FNType(), np.dtype(ml_dtypes.float4_e2m1fn)),
    (Float6E2M3FNType(), np.dtype(ml_dtypes.float6_e2m3fn)),
    (Float6E3M2FNType(), np.dtype(ml_dtypes.float6_e3m2fn)),
]
_NARROW_INTS: list[tuple[Attribute, np.dtype]] = [
    (IntegerType(4), np.dtype(ml_dtypes.int4)),
    (IntegerType(4, Signedness.UNSIGNED), np.dtype(ml_dtypes.uint4)),
    (IntegerType(2), np.dtype(ml_dtypes.int2)),
    (IntegerType(2, Signedness.UNSIGNED), np.dtype(ml_dtypes.uint2)),
]
_NARROW_TYPES = _NARROW_FLOATS + _NARROW_INTS
_ELEMENT_TO_DTYPE: list[tuple[Attribute, np.dtype]] = [
    (Float32Type(), np.dtype(np.float32)),
    (Float16Type(), np.dtype(np.float16)),
    (BFloat16Type(), np.dtype(ml_dtypes.bfloat16)),
    (Float64Type(), np.dtype(np.float64)),
    (IntegerType(64), np.dtype(np.int64)),
    (IntegerType(32), np.dtype(np.int32)),
    (IntegerType(16), np.dtype(np.int16)),
    (IntegerType(8), np.dtype(np.int8)),
    (IntegerType(8, Signedness.UNSIGNED), np.dtype(np.uint8)),
    (IntegerType(16, Signedness.UNSIGNED), np.dtype(np.uint16)),
    (IntegerType(32, Signedness.UNSIGNED), np.dtype(np.uint32)),
    (IntegerType(64, Signedness.UNSIGNED), np.dtype(np.uint64)),
    (i1, np.dtype(np.bool_)),
    # The narrow storage types (docs/precision.md, "Narrow element types"): ONNX's float8,
    # float6, float4 and 4- / 2-bit integers, ml_dtypes' numpy types. geir stores and moves them and
    # converts to and from them (graph.cast / quantize / dequantize); it computes nothing in
    # them. Each takes one byte per element, unpacked, as numpy holds it.
    *_NARROW_TYPES,
]
_BY_ELEMENT = {e: d for e, d in _ELEMENT_TO_DTYPE}
_BY_DTYPE = {d: e for e, d in _ELEMENT_TO_DTYPE}


class UnsupportedTypeError(ValueError):
    pass


def to_dtype(element_type: Attribute) -> np.dtype:
    try:
        return _BY_ELEMENT[element_type]
    except KeyError:
        raise UnsupportedTypeError(f"element type {element_type} is not supported") from None


def to_element_type(dtype: np.dtype | type) -> Attribute:
    try:
        return _BY_DTYPE[np.dtype(dtype)]
    except KeyError:
        raise UnsupportedTypeError(f"numpy dtype {np.dtype(dtype)} is not supported") from None


NARROW_FLOAT_TYPES = tuple(e for e, _ in _NARROW_FLOATS)
"""float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e8m0fnu), float6 (e2m3fn, e3m2fn) and float4e2m1:
storage types only."""
NARROW_INT_TYPES = tuple(e for e, _ in _NARROW_INTS)
"""int4, uint4, int2, uint2: storage types only."""
NARROW_TYPES = NARROW_FLOAT_TYPES + NARROW_INT_TYPES


def is_narrow(element_type: Attribute) -> bool:
    """A float8 / float4 / 4- or 2-bit integer element type: stored and converted, never
    computed in (no `is_float`, no f16 / bf16 precision rewrites)."""
    return element_type in NARROW_TYPES


def is_narrow_dtype(dtype: np.dtype | type) -> bool:
    return np.dtype(dtype) in _NARROW_DTYPES


def is_narrow_float_dtype(dtype: np.dtype | type) -> bool:
    """float8 / float6 / float4 (ml_dtypes: numpy counts none of them as floating)."""
    return np.dtype(dtype) in _NARROW_FLOAT_DTYPES


def is_float(element_type: Attribute) -> bool:
    return isinstance(element_type, Float16Type | BFloat16Type | Float32Type | Float64Type)


BF16 = np.dtype(ml_dtypes.bfloat16)
"""bfloat16 as numpy sees it: ml_dtypes' extension type (kind "V", so `np.issubdtype(...,
np.floating)` is False for it - ask `is_float_dtype`)."""

_NARROW_DTYPES = frozenset(d for _, d in _NARROW_TYPES)
_NARROW_FLOAT_DTYPES = frozenset(d for _, d in _NARROW_FLOATS)
_SIGNED_NARROW_INTS = frozenset(np.dtype(t) for t in (ml_dtypes.int4, ml_dtypes.int2))
_FLOAT_DTYPES = frozenset(d for e, d in _ELEMENT_TO_DTYPE if is_float(e))


def is_float_dtype(dtype: np.dtype | type) -> bool:
    """A floating-point numpy dtype geir has an element type for, bfloat16 included."""
    return np.dtype(dtype) in _FLOAT_DTYPES


def is_low_precision(dtype: np.dtype | type) -> bool:
    """f16 or bf16: computed in f32 and rounded once to the result (reference/graph.py)."""
    return np.dtype(dtype).itemsize == 2 and is_float_dtype(dtype)


def tensor(shape: Sequence[int], element_type: Attribute) -> TensorType:
    return TensorType(element_type, list(shape))


def tensor_of(array: np.ndarray) -> TensorType:
    return TensorType(to_element_type(array.dtype), list(array.shape))


def shape_of(t: Attribute) -> tuple[int, ...]:
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def nbytes_of(t: TensorType) -> int:
    return int(np.prod(t.get_shape(), dtype=np.int64)) * to_dtype(t.element_type).itemsize


def dense_bytes(array: np.ndarray) -> bytes:
    """The bytes a dense attribute stores for `array`: one element for a splat view (every
    stride 0, as np.broadcast_to and `array_from_dense` of a splat make: a shape-only
    placeholder weight stays one element through the passes), else every element in C order."""
    array = np.asarray(array)
    if array.dtype in _SIGNED_NARROW_INTS:
        # int4 / int2 sign-extended to the byte (ml_dtypes keeps the low bits only; it reads
        # both), as xDSL reads and writes a signed i4 / i2 element: the text shows -8, not 8
        array = array.astype(np.int8)
    if array.size > 1 and not any(array.strides):
        return array.reshape(-1)[:1].tobytes()
    return c_order(array).tobytes()


TRANSPOSE_TILE = 64
"""Edge of the tiles a transposed view is copied in: two 64 x 64 fp32 tiles (32 KiB) stay in a
core's cache, where numpy's own copy of a 4096 x 11008 weight's transpose misses on every read
(measured 0.27 s against 0.09 s tiled)."""


def c_order(array: np.ndarray) -> np.ndarray:
    """`array` in C order: as it is when already so; a view whose last axis is strided (a
    folded transpose of a weight) copied tile by tile over its last two axes."""
    if array.flags.c_contiguous or array.ndim < 2 or array.strides[-1] == array.itemsize \
            or array.shape[-1] * array.shape[-2] < 4 * TRANSPOSE_TILE * TRANSPOSE_TILE:
        return np.ascontiguousarray(array) if array.ndim else array.copy()
    out = np.empty(array.shape, array.dtype)
    rows, cols = array.shape[-2:]
    for i in range(0, rows, TRANSPOSE_TILE):
        for j in range(0, cols, TRANSPOSE_TILE):
            out[..., i:i + TRANSPOSE_TILE, j:j + TRANSPOSE_TILE] = array[..., i:i + TRANSPOSE_TILE, j:j + TRANSPOSE_TILE]
    return out


def dense_from_array(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """A dense attribute holding the array's bytes (one copy, never a Python list; a splat
    view stays one element)."""
    # Not np.ascontiguousarray: it turns a 0-d array into a 1-d one.
    array = np.asarray(array)
    return DenseIntOrFPElementsAttr(tensor_of(array), BytesAttr(dense_bytes(array)))


def array_from_dense(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """A read-only numpy view of a dense attribute's bytes."""
    t = attr.get_type()
    dtype = to_dtype(t.element_type)
    shape = tuple(t.get_shape())
    data = attr.data.data
    count = int(np.prod(shape, dtype=np.int64))
    flat = np.frombuffer(data, dtype=dtype)
    if flat.size == 1 and count != 1:  # splat
        return np.broadcast_to(flat, shape)
    return flat.reshape(shape)
