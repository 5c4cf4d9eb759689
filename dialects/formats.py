"""Tensor formats: the `#graph.format<...>` encoding, shape functions, numpy converters
and the format rules of the graph ops.

GE keeps two descriptions of every tensor: the *origin* format and shape (what the model
means: NCHW [1, 64, 56, 56]) and the *storage* format and shape (how the bytes lie in
device memory: NC1HWC0 [1, 4, 56, 56, 16]). geir writes the storage shape as the tensor's
shape and the rest as its encoding:

    tensor<1x4x56x56x16xf16, #graph.format<NC1HWC0, NCHW, [1, 64, 56, 56]>>

A tensor without the encoding is plain: its shape is its logical shape (format ND, or the
NCHW/NHWC the model means). Shape inference and verification of every graph op work on
the *logical* type (`logical_type`); `check_op` says which encodings an op accepts.

Storage formats (docs/layout.md gives each with its GE source):

* NCHW, NHWC      4-D, a transpose of the origin order
* NC1HWC0         NCHW [N, C, H, W] -> [N, ceil(C/C0), H, W, C0], channels zero-padded
* FRACTAL_Z       conv weights [Cout, Cin, kh, kw] -> [ceil(Cin/C0)*kh*kw, ceil(Cout/16), 16, C0]
* FRACTAL_NZ      matrices [..., M, N] -> [..., ceil(N/C0), ceil(M/16), 16, C0]; a vector [N]
                  is the matrix [1, N]

C0 is 16 for 2- and 4-byte element types and 32 for 1-byte ones (GE's
GetCubeSizeByDataType); the 16 of FRACTAL_Z's Cout and FRACTAL_NZ's M is the cube's
fractal height, the same for every type. Padding is zero when data is converted to a
blocked format and dropped when it is converted back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr, TensorType
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from geir.ir.types import to_dtype

ND = "ND"
NCHW, NHWC = "NCHW", "NHWC"
NC1HWC0, FRACTAL_Z, FRACTAL_NZ = "NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ"

STORAGE_FORMATS = (NCHW, NHWC, NC1HWC0, FRACTAL_Z, FRACTAL_NZ)
"""Formats a `#graph.format` encoding may name as storage."""
FORMATS = (ND, *STORAGE_FORMATS)
"""Every format graph.trans_data converts between."""
ORIGIN_FORMATS = (ND, NCHW, NHWC)
"""What a logical shape may mean: generic, or a 4-D image tensor in one of two orders."""
BLOCKED_FORMATS = (NC1HWC0, FRACTAL_Z, FRACTAL_NZ)
FOUR_D = (NCHW, NHWC, NC1HWC0, FRACTAL_Z)

CUBE_BLOCK = 16
"""The cube's fractal height: FRACTAL_Z's Cout block and FRACTAL_NZ's M block, every type."""


def c0_of(element: Any) -> int:
    """C0 of an element type or numpy dtype: 32 for 1-byte types, else 16 (GE)."""
    itemsize = np.dtype(element).itemsize if not isinstance(element, Attribute) else to_dtype(element).itemsize
    return 32 if itemsize == 1 else 16


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------------------
# The encoding attribute.
# ---------------------------------------------------------------------------


@irdl_attr_definition
class FormatAttr(ParametrizedAttribute):
    """`#graph.format<NC1HWC0, NCHW, [1, 64, 56, 56]>`: storage format, origin format and
    origin (logical) shape of a tensor whose shape is the storage shape."""

    name = "graph.format"

    storage: StringAttr
    origin: StringAttr
    shape: ArrayAttr[IntAttr]

    def __init__(self, storage: str, origin: str, shape: Sequence[int]):
        super().__init__(StringAttr(storage), StringAttr(origin), ArrayAttr([IntAttr(int(d)) for d in shape]))

    @property
    def logical_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    def print_parameters(self, printer: Printer) -> None:
        dims = ", ".join(str(d) for d in self.logical_shape)
        printer.print_string(f"<{self.storage.data}, {self.origin.data}, [{dims}]>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            storage = parser.parse_identifier()
            parser.parse_punctuation(",")
            origin = parser.parse_identifier()
            parser.parse_punctuation(",")
            dims = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        return [StringAttr(storage), StringAttr(origin), ArrayAttr([IntAttr(d) for d in dims])]

    def verify(self) -> None:
        storage, origin, shape = self.storage.data, self.origin.data, self.logical_shape
        if storage not in STORAGE_FORMATS:
            raise VerifyException(f"#graph.format: unknown storage format '{storage}'; formats: {', '.join(STORAGE_FORMATS)}")
        if origin not in ORIGIN_FORMATS:
            raise VerifyException(f"#graph.format: unknown origin format '{origin}'; origins: {', '.join(ORIGIN_FORMATS)}")
        if storage == origin:
            raise VerifyException(f"#graph.format: storage {storage} equals the origin: use a plain tensor")
        if any(d < 0 for d in shape):
            raise VerifyException("#graph.format: the origin shape must be static")
        if storage in FOUR_D and len(shape) != 4:
            raise VerifyException(f"#graph.format: {storage} needs a 4-D origin shape, got {list(shape)}")
        if storage == FRACTAL_NZ and not shape:
            raise VerifyException("#graph.format: FRACTAL_NZ needs an origin shape of rank >= 1")


# ---------------------------------------------------------------------------
# Shapes and types.
# ---------------------------------------------------------------------------


def _nchw_perm(origin: str) -> tuple[int, int, int, int]:
    """Positions of N, C, H, W in a 4-D logical shape of this origin (ND reads as NCHW)."""
    return (0, 3, 1, 2) if origin == NHWC else (0, 1, 2, 3)


def physical_shape(storage: str, origin: str, shape: Sequence[int], c0: int) -> tuple[int, ...]:
    """The storage shape of a logical `shape` (in `origin` order) stored as `storage`."""
    shape = tuple(shape)
    if storage in (ND, origin):
        return shape
    if storage in FOUR_D:
        n, c, h, w = (shape[i] for i in _nchw_perm(origin))
        if storage == NCHW:
            return (n, c, h, w)
        if storage == NHWC:
            return (n, h, w, c)
        if storage == NC1HWC0:
            return (n, _ceil(c, c0), h, w, c0)
        # FRACTAL_Z: the weight's N is Cout, its C is Cin.
        return (_ceil(c, c0) * h * w, _ceil(n, CUBE_BLOCK), CUBE_BLOCK, c0)
    if storage == FRACTAL_NZ:
        m, k = (1, shape[0]) if len(shape) == 1 else shape[-2:]
        return (*shape[:-2], _ceil(k, c0), _ceil(m, CUBE_BLOCK), CUBE_BLOCK, c0)
    raise ValueError(f"unknown format '{storage}'")


def format_attr(t: Attribute) -> FormatAttr | None:
    """The encoding of a formatted tensor type, else None."""
    if isinstance(t, TensorType) and isinstance(t.encoding, FormatAttr):
        return t.encoding
    return None


def is_formatted(t: Attribute) -> bool:
    return format_attr(t) is not None


def storage_of(t: Attribute) -> str:
    """The storage format of a tensor type: ND for a plain tensor."""
    f = format_attr(t)
    return f.storage.data if f is not None else ND


def origin_of(t: Attribute) -> str:
    f = format_attr(t)
    return f.origin.data if f is not None else ND


def logical_type(t: Attribute) -> Attribute:
    """The plain tensor type a formatted type stands for (any other type unchanged)."""
    f = format_attr(t)
    if f is None:
        return t
    return TensorType(t.element_type, f.logical_shape)


def logical_shape(t: TensorType) -> tuple[int, ...]:
    f = format_attr(t)
    return f.logical_shape if f is not None else tuple(t.get_shape())


def format_type(logical: TensorType, storage: str, origin: str = ND) -> TensorType:
    """`logical` stored as `storage`; plain if the storage is ND or the origin itself."""
    assert not is_formatted(logical), "format_type takes a plain (logical) tensor type"
    shape = tuple(logical.get_shape())
    if storage in (ND, origin):
        return logical
    if storage in FOUR_D and origin == ND:
        origin = NCHW  # ONNX's convention for 4-D tensors
    phys = physical_shape(storage, origin, shape, c0_of(logical.element_type))
    return TensorType(logical.element_type, phys, FormatAttr(storage, origin, shape))


def check_type(t: Attribute) -> str | None:
    """Why a formatted tensor type is inconsistent (storage shape, element type), or None."""
    f = format_attr(t)
    if f is None:
        return None
    try:
        f.verify()
    except VerifyException as e:
        return str(e)
    try:
        want = physical_shape(f.storage.data, f.origin.data, f.logical_shape, c0_of(t.element_type))
    except Exception as e:  # noqa: BLE001 - an unsupported element type
        return f"type {t}: {e}"
    if tuple(t.get_shape()) != want:
        return f"type {t} should have the storage shape {list(want)}"
    return None


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


# ---------------------------------------------------------------------------
# numpy: logical <-> physical.
# ---------------------------------------------------------------------------


def to_physical(array: np.ndarray, storage: str, origin: str = ND) -> np.ndarray:
    """The storage array of a logical array: reordered, padding zero-filled."""
    a = np.asarray(array)
    if storage in (ND, origin):
        return a
    if storage in FOUR_D:
        if a.ndim != 4:
            raise ValueError(f"{storage} needs a 4-D array, got shape {list(a.shape)}")
        x = a.transpose(_nchw_perm(origin))  # N, C, H, W
        n, c, h, w = x.shape
        if storage == NCHW:
            return np.ascontiguousarray(x)
        if storage == NHWC:
            return np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        c0 = c0_of(a.dtype)
        c1 = _ceil(c, c0)
        if storage == NC1HWC0:
            return to_c0_blocks(x, c0, axis=1)
        n1 = _ceil(n, CUBE_BLOCK)
        padded = _pad_axis(_pad_axis(x, 0, n1 * CUBE_BLOCK), 1, c1 * c0)
        blocks = padded.reshape(n1, CUBE_BLOCK, c1, c0, h, w).transpose(2, 4, 5, 0, 1, 3)
        return np.ascontiguousarray(blocks.reshape(c1 * h * w, n1, CUBE_BLOCK, c0))
    if storage == FRACTAL_NZ:
        if a.ndim == 0:
            raise ValueError("FRACTAL_NZ needs an array of rank >= 1")
        x = a.reshape(1, -1) if a.ndim == 1 else a
        return np.ascontiguousarray(to_nz(x, c0_of(a.dtype)))
    raise ValueError(f"unknown format '{storage}'")


def to_logical(array: np.ndarray, storage: str, origin: str, shape: Sequence[int]) -> np.ndarray:
    """The logical array (of `shape`, in `origin` order) of a storage array: padding dropped."""
    a = np.asarray(array)
    shape = tuple(shape)
    if storage in (ND, origin):
        return a
    if storage in FOUR_D:
        perm = _nchw_perm(origin)
        n, c, h, w = (shape[i] for i in perm)
        if storage == NCHW:
            nchw = a
        elif storage == NHWC:
            nchw = a.transpose(0, 3, 1, 2)
        elif storage == NC1HWC0:
            nchw = from_c0_blocks(a, c, axis=1)
        else:
            _, n1, n0, c0 = a.shape
            c1 = a.shape[0] // (h * w)
            nchw = a.reshape(c1, h, w, n1, n0, c0).transpose(3, 4, 0, 5, 1, 2).reshape(n1 * n0, c1 * c0, h, w)[:n, :c]
        return np.ascontiguousarray(nchw.transpose(np.argsort(perm)))
    if storage == FRACTAL_NZ:
        m, k = (1, shape[0]) if len(shape) == 1 else shape[-2:]
        return np.ascontiguousarray(from_nz(a, m, k).reshape(shape))
    raise ValueError(f"unknown format '{storage}'")


def _pad_axis(x: np.ndarray, axis: int, size: int) -> np.ndarray:
    extra = size - x.shape[axis]
    if extra == 0:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, extra)
    return np.pad(x, widths)


def physical_array(array: np.ndarray, t: TensorType) -> np.ndarray:
    """The storage array of a logical array for the (possibly formatted) type `t`."""
    f = format_attr(t)
    return array if f is None else to_physical(array, f.storage.data, f.origin.data)


def logical_array(array: np.ndarray, t: TensorType) -> np.ndarray:
    """The logical array of a storage array of the (possibly formatted) type `t`."""
    f = format_attr(t)
    return array if f is None else to_logical(array, f.storage.data, f.origin.data, f.logical_shape)


# ---------------------------------------------------------------------------
# numpy: blocks of one tile (the ascend kernels' copies).
#
# A kernel converts tile by tile: a matrix tile [.., M, N] to and from FRACTAL_NZ blocks
# [.., N1, M1, 16, C0]; a channels-first tile [C, *R] (channels at `axis` 0, no batch) to
# and from its NC1HWC0 slab [C1, *R, C0]. C0 is given (the destination's: a FIX copy may
# convert the element type), and a conversion may write through a view of its destination
# (`nz_view`, `c0_lanes`, `c0_blocks_into`) instead of making a new array.
# ---------------------------------------------------------------------------


def nz_view(matrix: np.ndarray, c0: int) -> np.ndarray:
    """The FRACTAL_NZ blocks [.., N1, M1, 16, C0] of a matrix [.., M1 * 16, N1 * C0] of whole
    fractals, as a view: reading it reads the matrix, writing it writes the matrix."""
    *batch, m, n = matrix.shape
    *outer, sm, sn = matrix.strides
    shape = (*batch, n // c0, m // CUBE_BLOCK, CUBE_BLOCK, c0)
    return np.lib.stride_tricks.as_strided(matrix, shape, (*outer, c0 * sn, CUBE_BLOCK * sm, sm, sn))


def to_nz(matrix: np.ndarray, c0: int) -> np.ndarray:
    """The FRACTAL_NZ blocks [.., N1, M1, 16, C0] of a matrix [.., M, N] (rank >= 2),
    zero-padded to whole fractals (a view of the padded matrix)."""
    m, n = matrix.shape[-2:]
    padded = _pad_axis(_pad_axis(matrix, -2, _ceil(m, CUBE_BLOCK) * CUBE_BLOCK), -1, _ceil(n, c0) * c0)
    return nz_view(padded, c0)


def from_nz(blocks: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """The matrix [.., rows, cols] of FRACTAL_NZ blocks [.., N1, M1, 16, C0]: the padding
    past `rows` and `cols` dropped."""
    *batch, n1, m1, m0, c0 = blocks.shape
    matrix = np.empty((*batch, m1 * m0, n1 * c0), blocks.dtype)
    nz_view(matrix, c0)[...] = blocks
    return matrix[..., :rows, :cols]


def c0_lanes(blocked: np.ndarray, axis: int = 0) -> np.ndarray:
    """The view [.., C1, C0, ..] of C0-lane blocks [.., C1, .., C0] (C1 at `axis`): channel c
    is lane c % C0 of block c // C0 (NC1HWC0 is NCHW's channels so blocked, at axis 1)."""
    return np.moveaxis(blocked, -1, axis + 1)


def c0_blocks_into(x: np.ndarray, blocked: np.ndarray, axis: int = 0) -> None:
    """Writes the channels of `x` (along `axis`) into the C0-lane blocks `blocked`
    [.., C1, .., C0] in place, the lanes past x's channels zero. x's other axes may be longer
    than blocked's (their leading part is written), its channels at most C1 * C0."""
    lanes = c0_lanes(blocked, axis)
    c1, c0, rest = lanes.shape[axis], lanes.shape[axis + 1], lanes.shape[axis + 2:]
    lead = (slice(None),) * axis
    rows = min(x.shape[axis], c1 * c0)
    if x.shape[axis:] != (rows, *rest):
        x = x[(*lead, slice(0, rows), *map(slice, rest))]
    full = rows // c0
    if full:
        lanes[(*lead, slice(0, full))] = x[(*lead, slice(0, full * c0))].reshape(
            *x.shape[:axis], full, c0, *x.shape[axis + 1:])
    if rows > full * c0 or full < c1:
        tail = lanes[(*lead, full)]
        tail[(*lead, slice(0, rows - full * c0))] = x[(*lead, slice(full * c0, None))]
        tail[(*lead, slice(rows - full * c0, None))] = 0
        if full + 1 < c1:
            lanes[(*lead, slice(full + 1, None))] = 0


def to_c0_blocks(x: np.ndarray, c0: int, axis: int = 0) -> np.ndarray:
    """The channels of `x` (along `axis`) as blocks of C0 lanes: [.., C, ..] ->
    [.., ceil(C / C0), .., C0], zero-padded (a channels-first tile [C, *R] -> its NC1HWC0 slab
    [C1, *R, C0]; NCHW -> NC1HWC0 at axis 1)."""
    shape = x.shape
    blocked = np.empty((*shape[:axis], _ceil(shape[axis], c0), *shape[axis + 1:], c0), x.dtype)
    c0_blocks_into(x, blocked, axis)
    return blocked


def from_c0_blocks(blocked: np.ndarray, channels: int, axis: int = 0) -> np.ndarray:
    """The reverse of `to_c0_blocks`: [.., C1, .., C0] -> [.., channels, ..], the padding
    lanes dropped."""
    lanes = c0_lanes(blocked, axis)
    merged = lanes.reshape(*lanes.shape[:axis], -1, *lanes.shape[axis + 2:])
    return merged[(*(slice(None),) * axis, slice(0, channels))]


def pad_or_crop(tile: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """A tile brought to `shape` (same rank): the leading part of a larger tile (a view), or
    a smaller one zero-extended (the edge tiles of a padded copy)."""
    if all(s >= d for s, d in zip(tile.shape, shape)):
        return tile[tuple(slice(0, d) for d in shape)]
    out = np.zeros(shape, tile.dtype)
    out[tuple(slice(0, s) for s in tile.shape)] = tile
    return out


def pad_slices(src: Sequence[int], dst: Sequence[int]) -> tuple[tuple[slice, ...], tuple[tuple[slice, ...], ...]] | None:
    """`pad_or_crop` of a tile of shape `src` into a destination of shape `dst` in place:
    (the destination's leading part the tile fills, the slabs of the rest, which are zero);
    None unless the tile is no larger than the destination. Slab d: the part past the tile
    along axis d, within its extent along the axes before."""
    if len(src) != len(dst) or any(s > d for s, d in zip(src, dst)):
        return None
    head = tuple(slice(0, s) for s in src)
    zero = tuple(head[:d] + (slice(s, None),) for d, (s, n) in enumerate(zip(src, dst)) if s < n)
    return head, zero


# ---------------------------------------------------------------------------
# Which formats an op accepts.
#
# Every GraphOp has a LAYOUT kind (set in dialects/graph.py):
#   "nd"           plain operands and results only (the default)
#   "elementwise"  runs on storage arrays: every non-scalar operand and the result share one
#                  format; plain operands must be scalars (one element)
#   "propagate"    operand 0 and the result share one format (NC1HWC0 or plain); other
#                  operands plain (pooling, batch_norm, lrn: per-channel ops over H, W)
#   "concat"       all operands and the result share one format
#   "conv", "matmul", "gemm"   each operand / result in its own set of formats
#   "trans_data"   checked by the op itself
# ---------------------------------------------------------------------------


def blocked_axes(storage: str, rank: int, origin: str = ND) -> tuple[int, ...]:
    """Logical axes a format tiles or merges: an operand may broadcast only over the others."""
    if storage == NC1HWC0:
        return (_nchw_perm(origin)[1],)
    if storage == FRACTAL_Z:
        return tuple(range(rank))
    if storage == FRACTAL_NZ:
        return tuple(range(max(rank - 2, 0), rank))
    return ()


def is_scalar(t: Attribute) -> bool:
    return isinstance(t, TensorType) and not is_formatted(t) and numel(t.get_shape()) == 1


def elementwise_fits(storage: str, result: TensorType, operands: Sequence[TensorType], origin: str = ND) -> str | None:
    """Why an elementwise op with this logical result cannot run on `storage` arrays of
    its non-scalar (logical, plain) `operands`, or None. A constant of lower rank is first
    aligned to the result's rank (leading 1s)."""
    r = tuple(result.get_shape())
    rank = len(r)
    if storage in FOUR_D and rank != 4:
        return f"{storage} needs 4-D tensors"
    if storage == FRACTAL_NZ and rank < 1:
        return "FRACTAL_NZ needs rank >= 1"
    c0 = c0_of(result.element_type)
    blocked = blocked_axes(storage, rank, origin)
    for t in operands:
        s = tuple(t.get_shape())
        if len(s) > rank:
            return f"operand {list(s)} has a higher rank than the result"
        s = (1,) * (rank - len(s)) + s
        if c0_of(t.element_type) != c0:
            return f"{t.element_type} and {result.element_type} have different C0"
        for a in blocked:
            if s[a] != r[a]:
                return f"operand {list(s)} broadcasts over axis {a}, which {storage} blocks"
    return None


PROPAGATE_FORMATS = (NC1HWC0,)
CONV_FORMATS = {"x": (ND, NC1HWC0), "w": (ND, FRACTAL_Z), "b": (ND,), "result": (ND, NC1HWC0)}
MATMUL_FORMATS = (ND, FRACTAL_NZ)


def slot_formats(op, index: int | None) -> tuple[str, ...]:
    """Formats operand `index` (None: the result) of a conv / matmul / gemm may have."""
    kind = op.LAYOUT
    if kind == "conv":
        if index is None:
            return CONV_FORMATS["result"]
        if index == 1:
            return CONV_FORMATS["w"] if op.attrs()["group"] == 1 else (ND,)
        return CONV_FORMATS["x"] if index == 0 else (ND,)
    if kind in ("matmul", "gemm"):
        return MATMUL_FORMATS if index is None or index < 2 else (ND,)
    return (ND,)


def check_op(op) -> str | None:
    """Why the formats of a graph op's operands and results are not ones it accepts."""
    ins = [v.type for v in op.operands]
    outs = [r.type for r in op.results]
    for i, t in enumerate(ins):
        if (err := check_type(t)) is not None:
            return f"operand #{i}: {err}"
    for i, t in enumerate(outs):
        if (err := check_type(t)) is not None:
            return f"result #{i}: {err}"
    kind = op.LAYOUT
    if kind == "trans_data":
        return None  # the op's own verifier
    if not any(map(is_formatted, ins + outs)):
        return None
    hint = "; convert with graph.trans_data first"
    if kind == "nd":
        bad = next((f"operand #{i}" for i, t in enumerate(ins) if is_formatted(t)), None) or "its result"
        return f"takes plain tensors only, but {bad} has a format encoding{hint}"
    if kind in ("elementwise", "propagate", "concat"):
        return _check_shared(op, kind, ins, outs, hint)
    if kind == "requantize":
        return _check_requantize(ins, outs, hint)
    slots = [(f"operand #{i}", t, slot_formats(op, i)) for i, t in enumerate(ins)]
    slots.append(("the result", outs[0], slot_formats(op, None)))
    for what, t, allowed in slots:
        if storage_of(t) not in allowed:
            return f"{what} is {storage_of(t)}; it may be {' or '.join(allowed)}{hint}"
        if storage_of(t) in FOUR_D and origin_of(t) != NCHW:
            return f"{what} must have origin NCHW"
    return None


def _check_shared(op, kind: str, ins: list, outs: list, hint: str) -> str | None:
    tied = list(range(len(ins))) if kind != "propagate" else [0]
    if kind == "elementwise":
        tied = [i for i, t in enumerate(ins) if not is_scalar(t)]
    encodings = {(storage_of(ins[i]), origin_of(ins[i])) for i in tied}
    if len(encodings) != 1:
        formats = ", ".join(sorted(f"{s}" for s, _ in encodings))
        return f"operands must share one format, got {formats}{hint}"
    ((storage, origin),) = encodings
    if storage == ND:
        return f"its operands are plain but its result has a format encoding{hint}"
    for i, t in enumerate(ins):
        if i not in tied and is_formatted(t):
            return f"operand #{i} must be plain (a per-channel parameter)"
    if kind == "propagate" and storage not in PROPAGATE_FORMATS:
        return f"runs on plain or NC1HWC0 tensors, not {storage}"
    for i, r in enumerate(outs):
        want = format_type(logical_type(r), storage, origin)
        if r != want:
            return f"result #{i} must be {want}: the format of its operands"
    result = logical_type(outs[0])
    if kind == "elementwise":
        return _prefix(elementwise_fits(storage, result, [logical_type(ins[i]) for i in tied], origin))
    if kind == "concat":
        return _prefix(concat_fits(storage, [logical_type(t) for t in ins], op.attrs()["axis"]))
    return None


def _check_requantize(ins: list, outs: list, hint: str) -> str | None:
    """graph.requantize works per logical element: its accumulator and its int8 result share
    a storage format, each with its own C0 (16 for i32, 32 for int8); a per-channel scale is
    plain or in that format too; the zero point is a plain scalar."""
    acc, scale, zp = ins
    storage, origin = storage_of(acc), origin_of(acc)
    if storage not in (ND, NC1HWC0):
        return f"runs on plain or NC1HWC0 tensors, not {storage}{hint}"
    want = format_type(logical_type(outs[0]), storage, origin)
    if outs[0] != want:
        return f"result must be {want}: the format of its accumulator{hint}"
    if is_formatted(scale) and (is_scalar(logical_type(scale)) or storage_of(scale) != storage):
        return f"a per-channel scale is plain or {storage}{hint}"
    if is_formatted(zp):
        return f"the zero point must be plain{hint}"
    return None


def _prefix(err: str | None) -> str | None:
    return None if err is None else f"cannot run on its operands' format: {err}"


def concat_fits(storage: str, operands: Sequence[TensorType], axis: int) -> str | None:
    """Why a concat of these logical operands cannot run on `storage` arrays, or None:
    every block of the result must lie in one operand."""
    rank = len(operands[0].get_shape())
    axis %= max(rank, 1)
    if storage == NC1HWC0:
        if rank != 4:
            return "NC1HWC0 needs 4-D tensors"
        c0 = c0_of(operands[0].element_type)
        if axis == 1 and any(t.get_shape()[1] % c0 for t in operands):
            return f"a concat along C needs channel counts that are multiples of C0 = {c0}"
        return None
    if storage == FRACTAL_NZ:
        return None if axis < rank - 2 else "FRACTAL_NZ concatenates along batch axes only"
    return None if storage in (NCHW, NHWC) else f"cannot concatenate {storage} tensors"


def result_types(
    op_cls, operand_types: Sequence[Attribute], attrs: dict[str, Any], logical_results: Sequence[TensorType]
) -> list[Attribute]:
    """The declared result types of an op built on these operands: an op that shares its
    operands' format (elementwise, propagate, concat) gives its results that format, a
    trans_data its destination format."""
    kind = getattr(op_cls, "LAYOUT", "nd")
    if kind == "trans_data":
        return [trans_data_type(operand_types[0], attrs["src_format"], attrs["dst_format"])]
    if kind not in ("elementwise", "propagate", "concat"):
        return list(logical_results)
    src = next((t for t in operand_types if is_formatted(t)), None)
    if src is None:
        return list(logical_results)
    return [format_type(r, storage_of(src), origin_of(src)) for r in logical_results]


# ---------------------------------------------------------------------------
# graph.trans_data
# ---------------------------------------------------------------------------


def trans_origin(t: TensorType, src: str, dst: str) -> str:
    """The origin format of a trans_data operand: its encoding's, else the plain format it
    is read as (NCHW/NHWC), else NCHW for a 4-D tensor going to a 4-D format, else ND."""
    f = format_attr(t)
    if f is not None:
        return f.origin.data
    if src in (NCHW, NHWC):
        return src
    return NCHW if dst in FOUR_D and len(t.get_shape()) == 4 else ND


def trans_data_error(t: TensorType, src: str, dst: str) -> str | None:
    """Why `t` cannot be converted from `src` to `dst`, or None."""
    for what, fmt in (("src_format", src), ("dst_format", dst)):
        if fmt not in FORMATS:
            return f"{what} '{fmt}' is not a format; formats: {', '.join(FORMATS)}"
    storage = storage_of(t)
    if is_formatted(t):
        if src != storage:
            return f"src_format is {src} but the operand is stored as {storage}"
    elif src not in (ND, NCHW, NHWC):
        return f"src_format is {src} but the operand is a plain tensor"
    shape = logical_shape(t)
    for fmt in (src, dst):
        if fmt in FOUR_D and len(shape) != 4:
            return f"{fmt} needs a 4-D tensor, got {list(shape)}"
        if fmt == FRACTAL_NZ and not shape:
            return "FRACTAL_NZ needs a tensor of rank >= 1"
    if any(d < 0 for d in shape) and (is_formatted(t) or dst not in (ND, trans_origin(t, src, dst))):
        return "a dynamic shape cannot be converted"
    return None


def trans_data_type(t: TensorType, src: str, dst: str) -> TensorType:
    """The result type of converting `t` from `src` to `dst` (the logical shape is kept)."""
    err = trans_data_error(t, src, dst)
    if err is not None:
        raise ValueError(err)
    return format_type(logical_type(t), dst, trans_origin(t, src, dst))
