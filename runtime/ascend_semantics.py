"""What each ascend op computes, in numpy: copies, vector instructions, im2col.

The semantics both ways of running a kernel share (op by op, runtime/ascend_interpreter.py;
compiled, runtime/ascend_compiled.py): each function takes the op and its operand arrays and
gives the value its destination gets, with the op's attributes decoded once where a kernel
runs the op many times (`vector_kernel`, `Load3dGeometry`). Re-laying copies convert with
dialects/formats.py, the one format library; vector instructions compute what the graph
ops' reference kernels do (reference/graph.py).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from geir.dialects import ascend as a
from geir.dialects import formats
from geir.dialects import graph as g
from geir.errors import InterpreterError
from geir.ir.locations import describe
from geir.ir.types import is_float_dtype, is_low_precision
from geir.reference.graph import reference_of
from geir.runtime.ascend_machine import int_value, scalar_value


# ---------------------------------------------------------------------------
# ascend.copy
# ---------------------------------------------------------------------------


def copy_layout(op: a.CopyOp) -> str | None:
    """The copy's `layout` (a.LAYOUTS: "nd2nz", "nz2nd", ...), or None."""
    return None if op.layout is None else op.layout.data


def fix_quantize(op: a.CopyOp, src: np.ndarray, quant: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """An i32 l0c tile through the FIX pipe's quantization stage: times the scale (one, or
    one per row / column: `quant_axis`), then to f16 (saturated to its range) or to an 8-bit
    integer (plus `zero_point`, rounded half away from zero, saturated), then relu."""
    axis = int_value(op.quant_axis)
    scale = a.fix_scale(quant)
    scale = scale.reshape(()) if axis is None else scale.reshape((-1, 1) if axis == 0 else (1, -1))
    t = src.astype(np.float32) * scale
    if np.issubdtype(dtype, np.integer):
        t = t + np.float32(int_value(op.zero_point) or 0)
        t = np.sign(t) * np.floor(np.abs(t) + np.float32(0.5))
        info = np.iinfo(dtype)
        t = np.clip(t, info.min, info.max)
    else:
        big = np.finfo(dtype).max
        t = np.clip(t, -big, big)
    if op.relu is not None:
        t = np.maximum(t, 0)
    return t.astype(dtype)


def copy_data(op: a.CopyOp, src: np.ndarray, dst_shape: tuple[int, ...], quant: np.ndarray | None = None,
              dtype: np.dtype | None = None) -> np.ndarray:
    """What `ascend.copy` writes into a destination of `dst_shape`: the source quantized
    (`quant`, to `dtype`), transposed, re-laid out, relu'd, padded or cropped as the op says."""
    data = src
    if quant is not None:
        data = fix_quantize(op, data, quant, dtype)
    if op.transpose is not None:
        data = np.swapaxes(data, -1, -2)
    layout = copy_layout(op)
    if layout == "nd2nz":
        data = formats.to_nz(data, a.fractal_c0(op.dst.type.element_type))
    elif layout == "nz2nd":
        data = formats.from_nz(data, *dst_shape[-2:])
    elif layout == "nd2nc1hwc0":
        data = formats.to_c0_blocks(data, dst_shape[-1])
    elif layout == "nc1hwc02nd":
        data = formats.from_c0_blocks(data, dst_shape[0])
    if op.relu is not None and quant is None:
        data = np.maximum(data, 0)
    if op.pad is not None and data.shape != tuple(dst_shape):
        data = formats.pad_or_crop(data, dst_shape)
    return data


# ---------------------------------------------------------------------------
# Vector instructions (numpy, in the element type).
#
# Each computes in at least f32 and is rounded once to its destination's type when written
# (the reference kernels compute f16 in f32: reference/graph.py), so an f16 instruction rounds
# its own result, as the device's does. The verifier keeps bf16 to the instructions that move
# elements and to vcast (ascend.BF16_VECTOR_OPS); a vcast f32 -> bf16 rounds to nearest even.
# ---------------------------------------------------------------------------


def _logic(bool_fn, int_fn):
    return lambda *xs: bool_fn(*xs) if xs[0].dtype == np.bool_ else int_fn(*xs)


def _rsqrt(x):
    return reference_of(g.ReciprocalOp)(reference_of(g.SqrtOp)(x))


_UNARY: dict[type[a.VectorOp], Callable] = {
    a.VexpOp: reference_of(g.ExpOp), a.VlogOp: reference_of(g.LogOp), a.VsqrtOp: reference_of(g.SqrtOp), a.VrsqrtOp: _rsqrt,
    a.VrecOp: reference_of(g.ReciprocalOp), a.VabsOp: reference_of(g.AbsOp), a.VnegOp: reference_of(g.NegOp),
    a.VreluOp: reference_of(g.ReluOp), a.VtanhOp: reference_of(g.TanhOp), a.VsigmoidOp: reference_of(g.SigmoidOp),
    a.VerfOp: reference_of(g.ErfOp), a.VsinOp: reference_of(g.SinOp), a.VcosOp: reference_of(g.CosOp),
    a.VfloorOp: reference_of(g.FloorOp), a.VceilOp: reference_of(g.CeilOp), a.VroundOp: reference_of(g.RoundOp),
    a.VsignOp: reference_of(g.SignOp), a.VnotOp: _logic(np.logical_not, np.invert), a.VcopyOp: lambda x: x,
}
_BINARY: dict[type[a.VectorOp], Callable] = {
    a.VaddOp: reference_of(g.AddOp), a.VsubOp: reference_of(g.SubOp), a.VmulOp: reference_of(g.MulOp), a.VdivOp: reference_of(g.DivOp),
    a.VmaxOp: reference_of(g.MaxOp), a.VminOp: reference_of(g.MinOp),
    a.VandOp: _logic(np.logical_and, np.bitwise_and), a.VorOp: _logic(np.logical_or, np.bitwise_or),
}
_SCALAR: dict[type[a.VectorOp], Callable] = {
    a.VaddsOp: np.add,
    a.VmulsOp: np.multiply,
    a.VmaxsOp: np.maximum,
    a.VminsOp: np.minimum,
    a.VlreluOp: lambda x, s: np.where(x >= 0, x, x * s),
}
_COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal}


def _wide_sum(x, axis, keepdims):
    """A sum of f16 accumulated in f32 (rounded once when written): numpy would add f16 in
    f16 along a strided axis and in f32 along a contiguous one; the model does the latter
    everywhere, as the reference's reduce_sum does."""
    if is_low_precision(x.dtype):
        x = x.astype(np.float32)
    return np.add.reduce(x, axis=axis, keepdims=keepdims)


def _extreme_reduce(ufunc, identity):
    """max / min: over an empty set (a zero-size reduced axis) the identity, as ONNX 18
    defines it (-inf / inf, the integer minimum / maximum, False / True)."""

    def reduce(x, axis, keepdims):
        if x.size:
            return ufunc.reduce(x, axis=axis, keepdims=keepdims)
        return ufunc.reduce(x, axis=axis, keepdims=keepdims, initial=identity(x.dtype))

    return reduce


def _bound(dtype, low: bool):
    if dtype == np.bool_:
        return not low
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return info.min if low else info.max
    return -np.inf if low else np.inf


_REDUCE = {"sum": _wide_sum,
           "max": _extreme_reduce(np.maximum, lambda dt: _bound(dt, True)),
           "min": _extreme_reduce(np.minimum, lambda dt: _bound(dt, False))}
_ROUND = {"rint": np.rint, "round": lambda x: np.trunc(x + np.copysign(0.5, x)),
          "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc}


def vector_kernel(op: a.VectorOp) -> Callable[[tuple], np.ndarray]:
    """`op`'s semantics as a function of its operands (srcs..., dst) giving the value written
    to dst (before the cast to dst's element type); the op's attributes are decoded here, once."""
    kind = type(op)
    if kind in _UNARY:
        f1 = _UNARY[kind]
        return lambda args: f1(args[0])
    if kind in _BINARY:
        f2 = _BINARY[kind]
        return lambda args: f2(args[0], args[1])
    if kind in _SCALAR:
        fs = _SCALAR[kind]
        return lambda args: fs(args[0], np.asarray(scalar_value(args[1]), dtype=args[0].dtype))
    if isinstance(op, a.VdupOp):
        return lambda args: np.asarray(scalar_value(args[0]), dtype=args[-1].dtype)
    if isinstance(op, a.VcmpOp):
        fc = _COMPARE[op.mode.data]
        return lambda args: fc(args[0], args[1])
    if isinstance(op, a.VselectOp):
        return lambda args: np.where(args[0], args[1], args[2])
    if isinstance(op, a.VcastOp):
        mode = op.round.data if op.round is not None else "trunc"

        def cast(args):
            x = args[0]
            if is_float_dtype(x.dtype) and np.issubdtype(args[-1].dtype, np.integer):
                x = _ROUND[mode](x)
            return x

        return cast
    if isinstance(op, a.VreduceOp):
        fr, axes = _REDUCE[op.kind.data], op.reduce_axes()
        return lambda args: fr(args[0], axis=axes, keepdims=True)
    if isinstance(op, a.VbrcbOp):
        return lambda args: np.broadcast_to(args[0], args[-1].shape)
    if isinstance(op, a.VtransposeOp):
        perm = op.permutation()
        return lambda args: np.transpose(args[0], perm)

    def missing(args):
        raise InterpreterError(f"{describe(op)} has no implementation")

    return missing


# ---------------------------------------------------------------------------
# img2col (ascend.load3d), added for convolution (lowering/templates/cube/conv_kernel.py).
# ---------------------------------------------------------------------------


class Load3dOutside(Exception):
    """An im2col entry outside the l1 box: (row i, pixel j, image row, image column)."""

    def message(self, k: int, ih: int, iw: int, box: tuple[int, ...]) -> str:
        i, j, y, x = self.args
        return (f"im2col entry [{k + i}, pixel {j}] reads image row {y}, column {x}, outside the l1 box "
                f"of rows {ih}..{ih + box[1] - 1}, columns {iw}..{iw + box[2] - 1}")


@dataclass(frozen=True, eq=False)
class Im2col:
    """How one im2col tile of `shape` (the destination's layout: l0b [K, N], l0a [N, K]) is
    gathered: `take` indexes the box flattened from `base`, which is a whole number of channel
    blocks (channels of a [C, H, W] box, C1 blocks of an NC1HWC0 one) from its start (None:
    every entry is zero); then the rows `zero_rows`, columns `zero_cols` and flat entries
    `zeros` are zero (padding, channels past `channels`, pixels past `out`; None: none).
    `span` box elements from `base` are read; `clean`: the gather is all of it (nothing to
    zero). `padding`: the flat entries in the image's padding (they hold the op's pad value
    where it is not zero; None: none). `outside`: (row, pixel, box row, box column) of the
    first entry outside the box instead (the tile raises Load3dOutside)."""

    take: np.ndarray | None
    shape: tuple[int, int]
    zero_rows: slice | np.ndarray | None = None
    zero_cols: slice | np.ndarray | None = None
    zeros: np.ndarray | None = None
    span: int = 0
    outside: tuple[int, int, int, int] | None = None
    clean: bool = False
    padding: np.ndarray | None = None

    @classmethod
    def of(cls, take: np.ndarray, valid: np.ndarray, span: int, padding: np.ndarray) -> Im2col:
        """Zeros where not `valid`: whole rows and columns as such (a channel past `channels`,
        a pixel past `out`), the rest (the padding) entry by entry; `padding` marks the
        entries in the image's padding."""
        pads = np.flatnonzero(padding) if padding.any() else None
        if not valid.any():
            return cls(None, valid.shape, padding=pads)
        rows, cols = ~valid.any(1), ~valid.any(0)
        rest = ~(valid | rows[:, None] | cols[None, :])
        return cls(take, valid.shape, _index_or_slice(rows), _index_or_slice(cols),
                   np.flatnonzero(rest) if rest.any() else None, span, clean=bool(valid.all()), padding=pads)

    @property
    def nbytes(self) -> int:
        parts = (self.take, self.zero_rows, self.zero_cols, self.zeros, self.padding)
        return sum(x.nbytes for x in parts if isinstance(x, np.ndarray))

    def into(self, src: np.ndarray, dst: np.ndarray, pad_value: int = 0) -> None:
        """Gathers the tile from the flat box `src` into `dst`, the padding holding
        `pad_value`; numpy's ValueError or TypeError if it cannot (read-only, another type):
        the caller then writes `tile(src, pad_value)`."""
        self._gather(src, dst)
        if pad_value and self.padding is not None:
            if dst.flags.c_contiguous:
                dst.reshape(-1)[self.padding] = pad_value
            else:
                dst.put(self.padding, pad_value)

    def _gather(self, src: np.ndarray, dst: np.ndarray) -> None:
        if self.take is None:
            dst.fill(0)
            return
        src.take(self.take, out=dst, mode="clip")  # every index is in bounds: clip never clips
        if self.clean:
            return
        if self.zero_rows is not None:
            dst[self.zero_rows] = 0
        if self.zero_cols is not None:
            dst[:, self.zero_cols] = 0
        if self.zeros is not None:
            if dst.flags.c_contiguous:
                dst.reshape(-1)[self.zeros] = 0
            else:
                dst.put(self.zeros, 0)

    def tile(self, src: np.ndarray, pad_value: int = 0) -> np.ndarray:
        """The gathered tile as a new array."""
        tile = np.empty(self.shape, src.dtype)
        self.into(src, tile, pad_value)
        return tile


def _index_or_slice(mask: np.ndarray) -> slice | np.ndarray | None:
    """The positions where `mask` holds: None, a slice when they are evenly spaced (numpy
    assigns through a slice faster), else an index array."""
    at = np.flatnonzero(mask)
    if at.size == 0:
        return None
    step = int(at[1] - at[0]) if at.size > 1 else 1
    if step > 0 and (at.size == 1 or (np.diff(at) == step).all()):
        return slice(int(at[0]), int(at[-1]) + 1, step)
    return at


class Load3dGeometry:
    """An op's im2col geometry decoded once, with the gathers of its tiles: by box-relative
    key (`gathers`, the index arrays, see `gather`) and by call (`calls`: the integers and
    shapes of a call -> `plan`'s (base, gather), so a repeated call is one dict hit). One per
    op, or shared by the load3d ops of a compiled kernel with one geometry; both tables are
    bounded (the oldest entries go first)."""

    ENTRIES = 128
    """Gathers kept: a network's tile loops need a few dozen a geometry (edges, phases)."""
    CALLS = 4096
    """Calls remembered."""

    def __init__(self, op: a.Load3dOp):
        self.kh, self.kw = op.geometry("kernel")
        self.sh, self.sw = op.geometry("strides")
        self.dh, self.dw = op.geometry("dilations")
        self.top, self.left, _, _ = op.geometry("pads")
        self.oht, self.owt = op.geometry("out")
        self.h, self.w = op.geometry("image")
        self.channels = int_value(op.channels)
        self.transposed = op.dst_space != "l0b"  # l0a holds the tile's transpose
        self.gathers: dict[tuple, Im2col] = {}
        self.calls: dict[tuple, tuple[int, Im2col]] = {}

    @property
    def nbytes(self) -> int:
        """Bytes of the index arrays held."""
        return sum(g.nbytes for g in self.gathers.values())

    def remember(self, call: tuple, planned: tuple[int, Im2col]) -> tuple[int, Im2col]:
        if len(self.calls) >= self.CALLS:
            del self.calls[next(iter(self.calls))]
        self.calls[call] = planned
        return planned

    @staticmethod
    def key_of(op: a.Load3dOp) -> tuple:
        """What the gathers depend on besides the integers and shapes of a call."""
        return (op.dst_space, *(op.geometry(name) for name, _, _ in a.Load3dOp.GEOMETRY), int_value(op.channels))

    def gather(self, shape: tuple[int, ...], ih: int, iw: int, k: int, oh: int, ow: int,
               rows: int, cols: int) -> tuple[int, Im2col]:
        """(base, gather) of the [rows, cols] tile at (k, oh, ow) of a box of `shape` at (ih, iw).

        The index depends on the integers only through box-relative quantities: the phase
        of k in its channel block (whole blocks are `base`), the tile's first window row and
        column relative to the box origin, and where the image's edges cut the windows
        (clamped to the windows' extent, so all interior tiles share one key)."""
        c0n = shape[3] if len(shape) == 4 else 1
        period = self.kh * self.kw * c0n
        first, phase = divmod(k, period)
        blocks = (phase + rows - 1) // period + 1  # channel blocks the rows touch
        channels = min(max(self.channels - first * c0n, 0), blocks * c0n)
        pixels = max(min(cols, self.oht * self.owt), 1)  # those past `out` are zeros anyway
        ty = ((pixels - 1) // self.owt) * self.sh + (self.kh - 1) * self.dh + 1  # window rows spanned
        tx = (min(pixels, self.owt) - 1) * self.sw + (self.kw - 1) * self.dw + 1
        ylo, yhi = _clamp_edge(self.top - oh * self.sh, self.h + self.top - oh * self.sh, ty)
        xlo, xhi = _clamp_edge(self.left - ow * self.sw, self.w + self.left - ow * self.sw, tx)
        ry, rx = oh * self.sh - self.top - ih, ow * self.sw - self.left - iw
        key = (shape, phase, rows, cols, channels, ry, ylo, yhi, rx, xlo, xhi)
        found = self.gathers.get(key)
        if found is None:
            if len(self.gathers) >= self.ENTRIES:
                del self.gathers[next(iter(self.gathers))]
            found = self.gathers[key] = self._index(shape, phase, rows, cols, channels, ry, (ylo, yhi), rx, (xlo, xhi))
        step = shape[1] * shape[2] * c0n  # box elements of one channel block
        return first * step, found

    def _index(self, shape: tuple[int, ...], phase: int, rows: int, cols: int, channels: int,
               ry: int, ys: tuple[int, int], rx: int, xs: tuple[int, int]) -> Im2col:
        """The gather of a tile whose rows start at `phase` of the first channel block, its
        first window at box row ry, column rx; window offsets in [ys) x [xs) lie in the image."""
        kk = phase + np.arange(rows)
        if len(shape) == 4:  # NC1HWC0 box: K = (c1, kh, kw, c0)
            c0n = shape[3]
            c1, rest, c0 = kk // (self.kh * self.kw * c0n), kk // c0n, kk % c0n
            kh, kw = rest // self.kw % self.kh, rest % self.kw
            c = c1 * c0n + c0
        else:
            c, kh, kw = kk // (self.kh * self.kw), kk // self.kw % self.kh, kk % self.kw
        j = np.arange(cols)
        ty = ((j // self.owt) * self.sh)[None, :] + (kh * self.dh)[:, None]
        tx = ((j % self.owt) * self.sw)[None, :] + (kw * self.dw)[:, None]
        valid = (c < channels)[:, None] & (j < self.oht * self.owt)[None, :]
        inside = (ty >= ys[0]) & (ty < ys[1]) & (tx >= xs[0]) & (tx < xs[1])
        padding = valid & ~inside
        valid &= inside
        by, bx = ry + ty, rx + tx
        outside = valid & ((by < 0) | (by >= shape[1]) | (bx < 0) | (bx >= shape[2]))
        if outside.any():
            i, jj = map(int, np.argwhere(outside)[0])
            return Im2col(None, (rows, cols), outside=(i, jj, int(by[i, jj]), int(bx[i, jj])))
        if len(shape) == 4:
            flat = ((c1[:, None] * shape[1] + by) * shape[2] + bx) * shape[3] + c0[:, None]
        else:
            flat = (c[:, None] * shape[1] + by) * shape[2] + bx
        take = np.where(valid, flat, 0).astype(np.intp)
        span = int(take.max(initial=-1)) + 1 if valid.any() else 0
        if self.transposed:
            take, valid, padding = np.ascontiguousarray(take.T), valid.T, padding.T
        return Im2col.of(take, valid, span, padding)


def _clamp_edge(lo: int, hi: int, extent: int) -> tuple[int, int]:
    """The window offsets [lo, hi) inside the image, clamped to [0, extent]: offsets outside
    the windows' extent make no difference."""
    lo, hi = min(max(lo, 0), extent), min(max(hi, 0), extent)
    return (lo, hi) if lo < hi else (0, 0)


def load3d_plan(geometry: Load3dGeometry, shape: tuple[int, ...], ih: int, iw: int, k: int, oh: int, ow: int,
                dst_shape: tuple[int, ...]) -> tuple[int, Im2col]:
    """(base, gather) of the tile loaded from an l1 box of `shape` at (ih, iw) into a
    destination of `dst_shape`: the tile is `gather.tile(box.reshape(-1)[base:])`.
    Load3dOutside if an entry needed lies outside the box."""
    call = (ih, iw, k, oh, ow, shape, dst_shape)  # as the compiled load3d looks it up
    planned = geometry.calls.get(call)
    if planned is not None:
        return planned
    rows, cols = dst_shape[::-1] if geometry.transposed else dst_shape
    base, g = geometry.gather(shape, ih, iw, k, oh, ow, rows, cols)
    if g.outside is not None:
        i, j, by, bx = g.outside
        raise Load3dOutside(i, j, by + ih, bx + iw)
    if base + g.span > math.prod(shape):  # not for a verified op: channels <= the box's
        raise ValueError(f"the im2col tile at K row {k} reads past the l1 box {list(shape)}")
    return geometry.remember(call, (base, g))


def load3d_geometry(op: a.Load3dOp) -> Load3dGeometry:
    """The op's geometry and gathers, kept as long as the op (weakly held)."""
    geometry = _LOAD3D_CACHE.get(op)
    if geometry is None:
        geometry = _LOAD3D_CACHE[op] = Load3dGeometry(op)
    return geometry


def load3d_tile(op: a.Load3dOp, fm: np.ndarray, ih: int, iw: int, k: int, oh: int, ow: int,
                rows: int, cols: int) -> np.ndarray:
    """The [rows K, cols pixels] im2col tile `op` gathers from the l1 box `fm` (origin ih, iw),
    K rows from k, pixels from (oh, ow). A 3-D box [C, Hs, Ws] orders K as (c, kh, kw); a 4-D
    NC1HWC0 box [C1, Hs, Ws, C0] as (c1, kh, kw, c0), the FRACTAL_Z order. Padding, channels
    >= `channels` and pixels past the `out` window are zero (the padding: the op's pad value); Load3dOutside if an entry needed
    lies outside the box."""
    geometry = load3d_geometry(op)
    base, g = load3d_plan(geometry, fm.shape, ih, iw, k, oh, ow, (cols, rows) if geometry.transposed else (rows, cols))
    tile = g.tile(fm.reshape(-1)[base:], op.padding_value)
    return tile.T if geometry.transposed else tile


_LOAD3D_CACHE: weakref.WeakKeyDictionary[a.Load3dOp, Load3dGeometry] = weakref.WeakKeyDictionary()
