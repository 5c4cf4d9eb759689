"""The ascend interpreter: runs ascend programs with numpy on real buffers.

Built on xDSL's interpreter: func, arith and scf run on xDSL's own
implementations; memrefs and ascend ops run here. Kernel bodies normally run
as Python compiled from them once (runtime/ascend_compiled.py), which calls
the functions here for every check that fails, so both ways give the same
results, errors and trace. Decisions:

* A memref value is a numpy array; a `memref.subview` is a numpy *view*, so a
  tile aliases its buffer exactly as on the device. (xDSL's memref
  implementations use ShapedArray and are not registered.)
* Each block of a launch gets its own on-chip memory: one byte buffer per
  space (l1, l0a, l0b, l0c, ub), sized as the device's, filled with 0xFF
  (NaN for floats) so a missing copy or a wrong tile shows as a wrong number
  (the run's one buffer per space, poisoned as far as the block's allocs reach).
  `ascend.alloc {offset}` is a view at that byte offset - two live buffers
  planned to overlap really clobber each other; an alloc without an offset
  gets its own slot (bumped, aligned). gm buffers are the host arguments, the
  workspace argument (planned gm allocs are views into it) and constants
  (read-only: writing a weight is an error).
* Kernels run block after block (block_idx 0..block_dim-1), launches in host
  program order; flags and events are checked (a wait with no set before it
  would deadlock, a kernel must end with no flag left set), alignment of tiles
  is checked at run time (ub tiles start on 32-byte blocks, cube tiles on whole
  fractals), as is the device having each DMA path.
* Every executed ascend op can be reported as a `TraceEvent` (pipe, bytes,
  shape, kernel, block, launch, stream) to a list or callback: the hook a
  simulator times from.

Host arguments (`func.func @main`): inputs carry `{onnx.name = ...}`, outputs
`{onnx.name = ..., ascend.output}` (written by the kernels), the workspace
`{ascend.workspace}`; memrefs the host returns are outputs too, named by their
result attributes.
"""

from __future__ import annotations

import math
import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    ReturnedValues,
    impl,
    impl_callable,
    impl_terminator,
    register_impls,
)
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.builtin import scalar_attr
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.scf import ScfFunctions
from xdsl.ir import Operation

from geir.dialects import ascend as a
from geir.ir.types import to_dtype
from geir.errors import InterpreterError
from geir.ir.locations import describe
from geir.target.cost_model import CostModel
from geir.target.device import DeviceSpec, load_device
from geir.dialects import graph as g
from geir.reference.graph import reference_of
from geir.dialects import attr_names

COMPILE_KERNELS = True
"""Default of run_ascend_module(compiled=...): kernel bodies as generated Python."""
POISON = 0xFF
"""Byte pattern of memory nobody wrote: NaN for f16/f32, -1 for integers."""


# ---------------------------------------------------------------------------
# Trace events: what a simulator needs to time a run.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceEvent:
    """One executed op. `pipe` is the unit (MTE1/MTE2/MTE3/FIX/M/V/S inside a
    kernel; "host" for launches and events). `detail` holds op specifics:
    copy {src, dst, transform}, mmad {m, k, n, init}, vector {kind}, flags
    {src, dst, id}, barrier {pipe}, launch {core_type, block_dim}, event {event}."""

    op: Operation
    pipe: str
    kernel: str | None
    block: int | None
    launch: int | None
    stream: int | None
    nbytes: int = 0
    shape: tuple[int, ...] = ()
    dtype: str = ""
    detail: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.op.name


# ---------------------------------------------------------------------------
# Run state.
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class Stream:
    id: int


@dataclass(eq=False)
class Event:
    id: int
    recorded: int = 0


@dataclass
class _Block:
    """On-chip state of one block of one launch."""

    kernel: str
    index: int
    count: int
    launch: int | None
    stream: int | None
    spaces: dict[str, np.ndarray] = field(default_factory=dict)
    poisoned: dict[str, int] = field(default_factory=dict)  # bytes [0, n) of a space are this block's
    next_free: dict[str, int] = field(default_factory=dict)
    slots: dict[Operation, np.ndarray] = field(default_factory=dict)
    flags: Counter = field(default_factory=Counter)


@dataclass
class _Run:
    device: DeviceSpec
    trace: Callable[[TraceEvent], None] | None = None
    workspace: np.ndarray | None = None  # uint8
    block: _Block | None = None
    launches: int = 0
    checked_paths: set = field(default_factory=set)
    compiled: bool = True  # kernels run as compiled Python (runtime/ascend_compiled.py)
    kernels: dict = field(default_factory=dict)  # kernel op -> its compiled body, checked this run
    buffers: dict[str, np.ndarray] = field(default_factory=dict)  # one byte buffer per space
    addresses: dict[str, int] = field(default_factory=dict)  # where each of them starts

    def space(self, name: str, end: int | None = None) -> np.ndarray:
        """The block's byte buffer of a space, poisoned (0xFF) in [0, end). One buffer per
        space serves every block of the run: a block sees its bytes only through its allocs,
        each of which poisons up to its end first, so each block sees fresh poisoned memory
        without paying for a device-sized buffer a block."""
        block = self.block
        assert block is not None
        buf = block.spaces.get(name)
        if buf is None:
            buf = self.buffers.get(name)
            if buf is None:
                buf = self.buffers[name] = np.empty(self.device.buffer_bytes[name], np.uint8)
                self.addresses[name] = _address(buf)
            block.spaces[name] = buf
        end = buf.size if end is None else min(end, buf.size)
        done = block.poisoned.get(name, 0)
        if end > done:
            buf[done:end] = POISON
            block.poisoned[name] = end
        return buf


def _run(interpreter: Interpreter) -> _Run:
    return interpreter.get_data(AscendFunctions, "run", lambda: _Run(load_device()))


def _block(interpreter: Interpreter, op: Operation) -> _Block:
    block = _run(interpreter).block
    if block is None:
        raise InterpreterError(f"{describe(op)} runs outside a kernel launch")
    return block


def _where(interpreter: Interpreter, op: Operation) -> str:
    return where(_run(interpreter), op)


def where(run: _Run, op: Operation) -> str:
    """The op's location, and the kernel and block running it: the prefix of every run-time error."""
    block = run.block
    return describe(op) + (f" in @{block.kernel} block {block.index}" if block else "")


def _emit(interpreter: Interpreter, op: Operation, pipe: str, stream: int | None = None, **kw) -> None:
    run = _run(interpreter)
    if run.trace is None:
        return
    b = run.block
    run.trace(TraceEvent(op, pipe, b.kernel if b else None, b.index if b else None,
                         b.launch if b else None, b.stream if b else stream, **kw))


def _value(v: Any) -> Any:
    """A Python number from an interpreter scalar (IntegerAttr / FloatAttr / numpy)."""
    if isinstance(v, IntegerAttr | FloatAttr):
        return v.value.data
    return v


def _poison(shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return np.full(n, POISON, np.uint8).view(dtype).reshape(tuple(shape))


def _view(buf: np.ndarray, offset: int, t: MemRefType) -> np.ndarray:
    dtype = to_dtype(t.element_type)
    shape = tuple(t.get_shape())
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return buf[offset : offset + n].view(dtype).reshape(shape)


def _address(x: np.ndarray) -> int:
    return x.__array_interface__["data"][0]


def _write(interpreter: Interpreter, op: Operation, dst: np.ndarray, value: np.ndarray) -> None:
    write(_run(interpreter), op, dst, value)


def write(run: _Run, op: Operation, dst: np.ndarray, value: np.ndarray) -> None:
    """Stores `value` into the view `dst` in dst's element type; a read-only (constant) or
    mismatched destination is an error naming the op."""
    try:
        np.copyto(dst, value, casting="unsafe")
    except ValueError as e:
        raise InterpreterError(f"{where(run, op)}: cannot write its destination: {e}") from None


def copy_data(op: a.CopyOp, src: np.ndarray, dst_shape: tuple[int, ...]) -> np.ndarray:
    """What `ascend.copy` writes into a destination of `dst_shape`: the source transposed,
    re-laid out, relu'd, padded or cropped as the op says."""
    data = src
    if op.transpose is not None:
        data = np.swapaxes(data, -1, -2)
    layout = a._str(op.layout)
    if layout == "nd2nz":
        data = _nd_to_nz(data, a.fractal_c0(op.dst.type.element_type))
    elif layout == "nz2nd":
        data = _nz_to_nd(data, dst_shape)
    elif layout == "nd2nc1hwc0":
        c0 = dst_shape[-1]
        padded = np.zeros((dst_shape[0] * c0, *data.shape[1:]), data.dtype)
        padded[: data.shape[0]] = data
        data = np.moveaxis(padded.reshape(dst_shape[0], c0, *data.shape[1:]), 1, -1)
    elif layout == "nc1hwc02nd":
        blocks = np.moveaxis(data, -1, 1)
        data = blocks.reshape(-1, *blocks.shape[2:])[: dst_shape[0]]
    if op.relu is not None:
        data = np.maximum(data, 0)
    if op.pad is not None and data.shape != tuple(dst_shape):
        data = _pad_or_crop(data, dst_shape)
    return data


def _dtype_name(t: MemRefType) -> str:
    return a._short(t.element_type)


# ---------------------------------------------------------------------------
# memref on numpy (views).
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SubviewSpec:
    """A `memref.subview`'s attributes, decoded once: static offsets / sizes / strides
    (DYNAMIC_INDEX where an operand gives the value), the result's shape and strides."""

    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    shape: tuple[int, ...]
    result_strides: tuple[int | None, ...] | None

    @staticmethod
    def of(op: memref.SubviewOp) -> SubviewSpec:
        t = op.result.type
        return SubviewSpec(op.static_offsets.get_values(), op.static_sizes.get_values(),
                           op.static_strides.get_values(), tuple(t.get_shape()), t.get_strides())


def subview(run: _Run, op: memref.SubviewOp, src: np.ndarray, dyn: Sequence[int],
            spec: SubviewSpec | None = None) -> np.ndarray:
    """The numpy view `op` takes of `src` (`dyn`: its dynamic offsets, sizes, strides as ints),
    with the bounds, tile alignment and stride checks."""
    spec = spec or SubviewSpec.of(op)
    values = iter(dyn)

    def fill(static):
        return [next(values) if s == DYNAMIC_INDEX else s for s in static]

    offsets, sizes, strides = fill(spec.offsets), fill(spec.sizes), fill(spec.strides)
    if not (len(offsets) == len(sizes) == len(strides) == src.ndim):
        raise InterpreterError(f"{where(run, op)}: offsets/sizes/strides do not match rank {src.ndim}")
    index = []
    for d, (o, s, st) in enumerate(zip(offsets, sizes, strides)):
        if o < 0 or s < 0 or st < 1 or (s and o + (s - 1) * st >= src.shape[d]):
            raise InterpreterError(
                f"{where(run, op)}: tile [{', '.join(map(str, offsets))}] of size "
                f"[{', '.join(map(str, sizes))}] is out of bounds of {list(src.shape)} (dim {d})"
            )
        index.append(slice(o, o + (s - 1) * st + 1 if s else o, st))
    view = src[tuple(index)]
    shape = spec.shape
    if view.shape != shape:
        drop = reduced_axes(view.shape, shape)
        if drop is None:
            raise InterpreterError(f"{where(run, op)}: a {list(view.shape)} tile cannot have type shape {list(shape)}")
        view = view.squeeze(axis=drop)
    _check_tile(run, op, view, offsets, sizes)
    _check_strides(run, op, view, spec.result_strides)
    return view


def reduced_axes(shape: tuple[int, ...], want: tuple[int, ...]) -> tuple[int, ...] | None:
    """The unit axes of a `shape` tile to drop for a `want` result (rank reduction), or None."""
    keep, j = [], 0
    for d, size in enumerate(shape):
        if j < len(want) and size == want[j]:
            keep.append(d)
            j += 1
        elif size != 1:
            break
    if j != len(want):
        return None
    return tuple(d for d in range(len(shape)) if d not in keep)


def tile_rule(op: memref.SubviewOp, offsets: Sequence[int | None], sizes: Sequence[int],
              shape: tuple[int, ...], itemsize: int) -> str | None:
    """The alignment a non-empty tile of `op` needs: "fractal" (offsets and sizes of its last
    two dims in whole 16x16 fractals), "block" (it starts on a 32-byte block of its space) or
    None (gm). `shape`: the tile's shape after rank reduction; an offset not known yet (None)
    that the rule depends on gives "unknown" (the compiled path then asks at run time)."""
    s = a.space_of(op.source.type)
    if s not in a.ON_CHIP:
        return None
    # an NC1HWC0 box in l1 ([C1, H, W, C0], load3d's source) is rows of C0: block-aligned
    box = (s == "l1" and len(offsets) == 4 and sizes[-1] == op.source.type.get_shape()[-1]
           and shape[-1] * itemsize % a.BLOCK_BYTES == 0)
    if box and offsets[-1] is None:
        return "unknown"
    box = box and offsets[-1] == 0
    if s in a.CUBE_SPACES and len(offsets) >= 2 and not box:
        return "fractal"
    return "block"


def _check_tile(run: _Run, op: memref.SubviewOp, view: np.ndarray, offsets, sizes) -> None:
    """Tiles of ub start on a 32-byte block, tiles of cube buffers on whole fractals."""
    if view.size == 0:
        return
    rule = tile_rule(op, offsets, sizes, view.shape, view.itemsize)
    if rule == "fractal":
        if any(x % a.FRACTAL for x in (*offsets[-2:], *sizes[-2:])):
            s = a.space_of(op.source.type)
            raise InterpreterError(
                f"{where(run, op)}: a {s} tile at [{', '.join(map(str, offsets))}] of size "
                f"[{', '.join(map(str, sizes))}] is not made of whole {a.FRACTAL}x{a.FRACTAL} fractals"
            )
    elif rule == "block":
        s = a.space_of(op.source.type)
        if run.block is not None and s in run.block.spaces:
            rel = _address(view) - _address(run.block.spaces[s])
            if rel % a.BLOCK_BYTES:
                raise InterpreterError(
                    f"{where(run, op)}: the {s} tile starts at byte {rel}, not on a {a.BLOCK_BYTES}-byte block"
                )


def _check_strides(run: _Run, op: memref.SubviewOp, view: np.ndarray, want: tuple[int | None, ...] | None) -> None:
    if want is None:
        return
    got = tuple(s // view.itemsize for s in view.strides)
    for d, (w, have, n) in enumerate(zip(want, got, view.shape)):
        if w is not None and n > 1 and w != have:
            raise InterpreterError(f"{where(run, op)}: the result type says strides {list(want)}, the tile has {list(got)}")


def reshape(run: _Run, op: Operation, x: np.ndarray) -> np.ndarray:
    """collapse_shape / expand_shape: a view of `x` in the result's shape, never a copy."""
    shape = tuple(op.results[0].type.get_shape())
    try:
        return np.reshape(x, shape, copy=False)
    except ValueError:
        raise InterpreterError(
            f"{where(run, op)}: a {list(x.shape)} view with strides {list(x.strides)} cannot be "
            f"reshaped to {list(shape)} without a copy"
        ) from None


@register_impls
class NumpyMemRefFunctions(InterpreterFunctions):
    """memref.subview / collapse_shape / expand_shape / cast as numpy views,
    memref.load / store as scalar accesses (the S pipe)."""

    @impl(memref.SubviewOp)
    def run_subview(self, interpreter: Interpreter, op: memref.SubviewOp, args):
        src, *dyn = args
        return (subview(_run(interpreter), op, src, [int(_value(v)) for v in dyn]),)

    def _reshape(self, interpreter, op, args):
        return (reshape(_run(interpreter), op, args[0]),)

    @impl(memref.CollapseShapeOp)
    def run_collapse_shape(self, interpreter, op, args):
        return self._reshape(interpreter, op, args)

    @impl(memref.ExpandShapeOp)
    def run_expand_shape(self, interpreter, op, args):
        return self._reshape(interpreter, op, args)

    @impl(memref.CastOp)
    def run_cast(self, interpreter, op, args):
        return (args[0],)

    @impl(memref.LoadOp)
    def run_load(self, interpreter, op: memref.LoadOp, args):
        arr, *idx = args
        value = arr[tuple(int(_value(i)) for i in idx)]
        _emit(interpreter, op, "S", nbytes=arr.itemsize, dtype=_dtype_name(op.memref.type))
        return (scalar_attr(value.item(), op.res.type, interpreter.index_bitwidth),)

    @impl(memref.StoreOp)
    def run_store(self, interpreter, op: memref.StoreOp, args):
        value, arr, *idx = args
        try:
            arr[tuple(int(_value(i)) for i in idx)] = _value(value)
        except ValueError as e:
            raise InterpreterError(f"{_where(interpreter, op)}: {e}") from None
        _emit(interpreter, op, "S", nbytes=arr.itemsize, dtype=_dtype_name(op.memref.type))
        return ()


@register_impls
class IndexArithFunctions(InterpreterFunctions):
    """arith ops that tiling index math uses and xDSL's interpreter lacks."""

    @staticmethod
    def _int2(interpreter, op, args, fn):
        lhs, rhs = (int(_value(v)) for v in args)
        return (scalar_attr(fn(lhs, rhs), op.result.type, interpreter.index_bitwidth),)

    @impl(arith.MinSIOp)
    def run_minsi(self, interpreter, op, args):
        return self._int2(interpreter, op, args, min)

    @impl(arith.MaxSIOp)
    def run_maxsi(self, interpreter, op, args):
        return self._int2(interpreter, op, args, max)

    @impl(arith.MinUIOp)
    def run_minui(self, interpreter, op, args):
        return self._int2(interpreter, op, args, min)

    @impl(arith.MaxUIOp)
    def run_maxui(self, interpreter, op, args):
        return self._int2(interpreter, op, args, max)

    @impl(arith.CeilDivSIOp)
    def run_ceildivsi(self, interpreter, op, args):
        return self._int2(interpreter, op, args, lambda x, y: -(-x // y))

    @impl(arith.CeilDivUIOp)
    def run_ceildivui(self, interpreter, op, args):
        return self._int2(interpreter, op, args, lambda x, y: -(-x // y))

    @impl(arith.DivUIOp)
    def run_divui(self, interpreter, op, args):
        return self._int2(interpreter, op, args, lambda x, y: x // y)

    @impl(arith.RemUIOp)
    def run_remui(self, interpreter, op, args):
        return self._int2(interpreter, op, args, lambda x, y: x % y)

    @impl(arith.DivfOp)
    def run_divf(self, interpreter, op, args):
        lhs, rhs = (float(_value(v)) for v in args)
        with np.errstate(all="ignore"):
            q = float(np.float64(lhs) / np.float64(rhs))
        return (FloatAttr(q, op.result.type),)


# ---------------------------------------------------------------------------
# Vector semantics (numpy, in the element type).
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
_REDUCE = {"sum": np.add.reduce, "max": np.maximum.reduce, "min": np.minimum.reduce}
_ROUND = {"rint": np.rint, "round": lambda x: np.trunc(x + np.copysign(0.5, x)),
          "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc}


def _vector_result(op: a.VectorOp, args: tuple) -> np.ndarray:
    """The value written to dst (before the cast to dst's element type)."""
    return vector_kernel(op)(args)


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
        return lambda args: fs(args[0], np.asarray(_value(args[1]), dtype=args[0].dtype))
    if isinstance(op, a.VdupOp):
        return lambda args: np.asarray(_value(args[0]), dtype=args[-1].dtype)
    if isinstance(op, a.VcmpOp):
        fc = _COMPARE[op.mode.data]
        return lambda args: fc(args[0], args[1])
    if isinstance(op, a.VselectOp):
        return lambda args: np.where(args[0], args[1], args[2])
    if isinstance(op, a.VcastOp):
        mode = op.round.data if op.round is not None else "trunc"

        def cast(args):
            x = args[0]
            if np.issubdtype(x.dtype, np.floating) and np.issubdtype(args[-1].dtype, np.integer):
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


def _nd_to_nz(x: np.ndarray, c0: int) -> np.ndarray:
    *batch, m, n = x.shape
    m1, n1 = -(-m // a.FRACTAL), -(-n // c0)
    padded = np.zeros((*batch, m1 * a.FRACTAL, n1 * c0), x.dtype)
    padded[..., :m, :n] = x
    r = padded.reshape(*batch, m1, a.FRACTAL, n1, c0)
    k = len(batch)
    return r.transpose(*range(k), k + 2, k, k + 1, k + 3)


def _nz_to_nd(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    *batch, n1, m1, m0, c0 = x.shape
    k = len(batch)
    r = x.transpose(*range(k), k + 1, k + 2, k, k + 3).reshape(*batch, m1 * m0, n1 * c0)
    return r[..., : shape[-2], : shape[-1]]


def _pad_or_crop(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`copy {pad}`: the leading part of a larger source, or a smaller source zero-extended."""
    if all(s >= d for s, d in zip(x.shape, shape)):
        return x[tuple(slice(0, d) for d in shape)]
    out = np.zeros(shape, x.dtype)
    out[tuple(slice(0, s) for s in x.shape)] = x
    return out


# ---------------------------------------------------------------------------
# The ascend ops.
# ---------------------------------------------------------------------------


def _vector_impl(op_type: type[a.VectorOp]):
    @impl(op_type)
    def run(self, interpreter: Interpreter, op: a.VectorOp, args):
        with np.errstate(all="ignore"):
            value = _vector_result(op, args)
        _write(interpreter, op, args[-1], value)
        _emit(interpreter, op, "V", nbytes=op.nbytes, shape=tuple(op.dst.type.get_shape()),
              dtype=op.dtype, detail={"kind": op.cost_kind})
        return ()

    return run


def alloc(run: _Run, op: a.AllocOp) -> np.ndarray:
    """The buffer `ascend.alloc` gives: a view at its planned offset into the workspace (gm) or
    into the block's byte buffer of its space; without an offset a poisoned gm array, or an
    on-chip slot of its own (bumped, aligned), the same for every execution in the block."""
    t = op.memref.type
    s = op.space
    offset = a._int(op.offset)
    if s == "gm":
        if offset is None:
            return _poison(t.get_shape(), to_dtype(t.element_type))
        ws = run.workspace
        if ws is None:
            raise InterpreterError(f"{describe(op)} has a workspace offset, but the host has no "
                                   f"{{{attr_names.WORKSPACE}}} argument")
        if offset + op.nbytes > ws.size:
            raise InterpreterError(f"{describe(op)}: [{offset}, {offset + op.nbytes}) is outside the "
                                   f"{ws.size}-byte workspace")
        return _view(ws, offset, t)
    block = run.block
    if offset is None:
        slot = block.slots.get(op)
        if slot is not None:
            return slot
        align = a.OFFSET_ALIGN[s]
        offset = -(-block.next_free.get(s, 0) // align) * align
        block.next_free[s] = offset + op.nbytes
    cap = run.device.buffer_bytes[s]
    if offset + op.nbytes > cap:
        raise InterpreterError(f"{where(run, op)}: {s} bytes [{offset}, {offset + op.nbytes}) exceed "
                               f"the {cap}-byte {s} of {run.device.name}")
    view = _view(run.space(s, offset + op.nbytes), offset, t)
    if op.offset is None:
        block.slots[op] = view
    return view


def check_dma_path(run: _Run, op: Operation, path: tuple[str, str]) -> None:
    """The device must have the DMA engine for src -> dst (checked once per path and run)."""
    if path not in run.checked_paths:
        try:
            CostModel(run.device).dma_engine(*path)
        except ValueError as e:
            raise InterpreterError(f"{where(run, op)}: {e}") from None
        run.checked_paths.add(path)


def flag_not_set(run: _Run, op: a.WaitFlagOp) -> InterpreterError:
    src, dst, ident = op.key
    return InterpreterError(f"{where(run, op)}: {dst} waits for flag {src} -> {dst} id {ident}, "
                            f"which is not set (the pipes would deadlock)")


def _build_ascend_functions() -> type[InterpreterFunctions]:
    body: dict[str, Any] = {}

    # -- buffers ------------------------------------------------------------

    @impl(a.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: a.AllocOp, args):
        if op.space != "gm":
            _block(interpreter, op)
        return (alloc(_run(interpreter), op),)

    @impl(a.ViewOp)
    def run_view(self, interpreter, op: a.ViewOp, args):
        (src,) = args
        if not (isinstance(src, np.ndarray) and src.flags.c_contiguous):
            raise InterpreterError(f"{describe(op)}: the source is not a contiguous gm buffer")
        return (_view(src.reshape(-1).view(np.uint8), op.byte_offset, op.memref.type),)

    @impl(a.ConstantOp)
    def run_constant(self, interpreter, op: a.ConstantOp, args):
        try:
            return (op.array(),)
        except ValueError as e:
            raise InterpreterError(f"{describe(op)}: {e}") from None

    # -- host ---------------------------------------------------------------

    @impl(a.StreamOp)
    def run_stream(self, interpreter, op: a.StreamOp, args):
        return (Stream(a._int(op.id)),)

    @impl(a.EventOp)
    def run_event(self, interpreter, op: a.EventOp, args):
        return (Event(a._int(op.id)),)

    @impl(a.EventRecordOp)
    def run_event_record(self, interpreter, op, args):
        event, stream = args
        event.recorded += 1
        _emit(interpreter, op, "host", stream.id, detail={"event": event.id})
        return ()

    @impl(a.EventWaitOp)
    def run_event_wait(self, interpreter, op, args):
        event, stream = args
        if not event.recorded:
            raise InterpreterError(f"{describe(op)}: stream {stream.id} waits for event {event.id}, which no "
                                   f"stream has recorded before (it would wait forever)")
        _emit(interpreter, op, "host", stream.id, detail={"event": event.id})
        return ()

    def launch(interpreter: Interpreter, kernel: a.KernelOp, args: tuple, stream: Stream | None, op: Operation):
        run = _run(interpreter)
        index = run.launches
        run.launches += 1
        name = kernel.sym_name.data
        count = kernel.block_count
        if run.trace is not None:
            run.trace(TraceEvent(op, "host", name, None, index, stream.id if stream else None,
                                 detail={"core_type": kernel.core_type.data, "block_dim": count}))
        outer = run.block
        body = None
        if run.compiled:
            from geir.runtime.ascend_compiled import compiled_body

            body = compiled_body(interpreter, run, kernel, args)
        try:
            for b in range(count):
                run.block = _Block(name, b, count, index, stream.id if stream else None)
                if body is not None:
                    body(interpreter, run, run.block, args)
                else:
                    interpreter.run_ssacfg_region(kernel.body, args, f"@{name}[{b}]")
                left = {k: n for k, n in run.block.flags.items() if n}
                if left:
                    flags = ", ".join(f"{s} -> {d} id {i}" for s, d, i in left)
                    raise InterpreterError(f"@{name} block {b} ended with flags set but never waited for: {flags}")
        finally:
            run.block = outer
        return ()

    @impl(a.LaunchOp)
    def run_launch(self, interpreter, op: a.LaunchOp, args):
        if _run(interpreter).block is not None:
            raise InterpreterError(f"{describe(op)}: kernels cannot launch kernels")
        return launch(interpreter, op.kernel_op(), tuple(args[1:]), args[0], op)

    @impl_callable(a.KernelOp)
    def call_kernel(self, interpreter, op: a.KernelOp, args):
        return launch(interpreter, op, tuple(args), None, op)

    @impl_terminator(a.ReturnOp)
    def run_return(self, interpreter, op, args):
        return ReturnedValues(()), ()

    @impl(a.BlockIdxOp)
    def run_block_idx(self, interpreter, op, args):
        return (scalar_attr(_block(interpreter, op).index, IndexType(), interpreter.index_bitwidth),)

    @impl(a.BlockNumOp)
    def run_block_num(self, interpreter, op, args):
        return (scalar_attr(_block(interpreter, op).count, IndexType(), interpreter.index_bitwidth),)

    # -- DMA and cube -------------------------------------------------------

    @impl(a.CopyOp)
    def run_copy(self, interpreter, op: a.CopyOp, args):
        src, dst = args
        path = (op.src_space, op.dst_space)
        check_dma_path(_run(interpreter), op, path)
        _write(interpreter, op, dst, copy_data(op, src, dst.shape))
        _emit(interpreter, op, op.pipe, nbytes=op.nbytes, shape=tuple(dst.shape), dtype=_dtype_name(op.dst.type),
              detail={"src": path[0], "dst": path[1], "transform": op.physical_transform})
        return ()

    @impl(a.MmadOp)
    def run_mmad(self, interpreter, op: a.MmadOp, args):
        x, y, c = args
        acc = c.dtype
        product = np.matmul(x.astype(acc, copy=False), y.astype(acc, copy=False))
        _write(interpreter, op, c, product if op.init is not None else c + product)
        m, k, n = op.mkn
        _emit(interpreter, op, "M", nbytes=x.nbytes + y.nbytes, shape=(m, k, n), dtype=op.dtype,
              detail={"m": m, "k": k, "n": n, "init": op.init is not None})
        return ()

    # -- sync ---------------------------------------------------------------

    @impl(a.SetFlagOp)
    def run_set_flag(self, interpreter, op: a.SetFlagOp, args):
        _block(interpreter, op).flags[op.key] += 1
        src, dst, ident = op.key
        _emit(interpreter, op, src, detail={"src": src, "dst": dst, "id": ident})
        return ()

    @impl(a.WaitFlagOp)
    def run_wait_flag(self, interpreter, op: a.WaitFlagOp, args):
        block = _block(interpreter, op)
        src, dst, ident = op.key
        if not block.flags[op.key]:
            raise flag_not_set(_run(interpreter), op)
        block.flags[op.key] -= 1
        _emit(interpreter, op, dst, detail={"src": src, "dst": dst, "id": ident})
        return ()

    @impl(a.PipeBarrierOp)
    def run_pipe_barrier(self, interpreter, op: a.PipeBarrierOp, args):
        _emit(interpreter, op, op.pipe.data, detail={"pipe": op.pipe.data})
        return ()

    body.update({k: v for k, v in locals().items() if k.startswith(("run_", "call_"))})
    for op_type in a.Ascend.operations:
        if issubclass(op_type, a.VectorOp):
            body["run_" + op_type.name.split(".", 1)[1]] = _vector_impl(op_type)
    return register_impls(type("AscendFunctions", (InterpreterFunctions,), body))


AscendFunctions = _build_ascend_functions()


@register_impls
class ReferenceFunctions(InterpreterFunctions):
    """`ascend.reference`: the graph op's numpy kernel on whole gm buffers (the lowering's
    fallback), with the kernels' shape check."""

    @impl(a.ReferenceOp)
    def run_reference(self, interpreter: Interpreter, op: a.ReferenceOp, args):
        cls = op.graph_op_type()
        n = a._int(op.num_inputs)
        kwargs = {k: v for k, v in cls.props_to_py(dict(op.attrs.data)).items() if v is not None}
        kwargs.update(a.reference_extra_kwargs(op))  # e.g. trans_data's origin format and shape
        try:
            out = reference_of(g.OPS[op.op.data])(*args[:n], **kwargs)
        except Exception as e:  # a numpy error inside a kernel
            raise InterpreterError(f"{_where(interpreter, op)} failed: {type(e).__name__}: {e}") from e
        outs = out if isinstance(out, tuple) else (out,)
        dsts = args[n:]
        if len(outs) != len(dsts):
            raise InterpreterError(f"{_where(interpreter, op)}: {op.op.data} gives {len(outs)} results for {len(dsts)} outputs")
        for dst, value in zip(dsts, outs):
            value = np.asarray(value)
            if value.shape != dst.shape:
                raise InterpreterError(f"{_where(interpreter, op)}: {op.op.data} gives shape {list(value.shape)} "
                                       f"for an output of shape {list(dst.shape)}")
            _write(interpreter, op, dst, value)
        _emit(interpreter, op, "S", nbytes=sum(x.nbytes for x in args), detail={"op": op.op.data})
        return ()


# ---------------------------------------------------------------------------
# img2col (ascend.load3d), added for convolution (lowering/templates/cube.py).
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
    zero). `outside`: (row, pixel, box row, box column) of the first entry outside the box
    instead (the tile raises Load3dOutside)."""

    take: np.ndarray | None
    shape: tuple[int, int]
    zero_rows: slice | np.ndarray | None = None
    zero_cols: slice | np.ndarray | None = None
    zeros: np.ndarray | None = None
    span: int = 0
    outside: tuple[int, int, int, int] | None = None
    clean: bool = False

    @classmethod
    def of(cls, take: np.ndarray, valid: np.ndarray, span: int) -> Im2col:
        """Zeros where not `valid`: whole rows and columns as such (a channel past `channels`,
        a pixel past `out`), the rest (the padding) entry by entry."""
        if not valid.any():
            return cls(None, valid.shape)
        rows, cols = ~valid.any(1), ~valid.any(0)
        rest = ~(valid | rows[:, None] | cols[None, :])
        return cls(take, valid.shape, _index_or_slice(rows), _index_or_slice(cols),
                   np.flatnonzero(rest) if rest.any() else None, span, clean=bool(valid.all()))

    @property
    def nbytes(self) -> int:
        parts = (self.take, self.zero_rows, self.zero_cols, self.zeros)
        return sum(x.nbytes for x in parts if isinstance(x, np.ndarray))

    def into(self, src: np.ndarray, dst: np.ndarray) -> None:
        """Gathers the tile from the flat box `src` into `dst`; numpy's ValueError or TypeError
        if it cannot (read-only, another type): the caller then writes `tile(src)`."""
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

    def tile(self, src: np.ndarray) -> np.ndarray:
        """The gathered tile as a new array."""
        tile = np.empty(self.shape, src.dtype)
        self.into(src, tile)
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
        self.channels = a._int(op.channels)
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
        return (op.dst_space, *(op.geometry(name) for name, _, _ in a.Load3dOp.GEOMETRY), a._int(op.channels))

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
        valid &= (ty >= ys[0]) & (ty < ys[1]) & (tx >= xs[0]) & (tx < xs[1])
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
            take, valid = np.ascontiguousarray(take.T), valid.T
        return Im2col.of(take, valid, span)


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
    >= `channels` and pixels past the `out` window are zero; Load3dOutside if an entry needed
    lies outside the box."""
    geometry = load3d_geometry(op)
    base, g = load3d_plan(geometry, fm.shape, ih, iw, k, oh, ow, (cols, rows) if geometry.transposed else (rows, cols))
    tile = g.tile(fm.reshape(-1)[base:])
    return tile.T if geometry.transposed else tile


_LOAD3D_CACHE: weakref.WeakKeyDictionary[a.Load3dOp, Load3dGeometry] = weakref.WeakKeyDictionary()


@register_impls
class Load3dFunctions(InterpreterFunctions):
    """`ascend.load3d`: gathers the convolution windows of the l1 box into the l0 tile;
    padding, channels past `channels` and pixels past the tile are zeros."""

    @impl(a.Load3dOp)
    def run_load3d(self, interpreter: Interpreter, op: a.Load3dOp, args):
        fm, ih, iw, dst, k, oh, ow = args
        ih, iw, k, oh, ow = (int(_value(v)) for v in (ih, iw, k, oh, ow))
        try:
            base, g = load3d_plan(load3d_geometry(op), fm.shape, ih, iw, k, oh, ow, dst.shape)
        except Load3dOutside as e:
            raise InterpreterError(f"{_where(interpreter, op)}: {e.message(k, ih, iw, fm.shape)}") from None
        src = fm.reshape(-1)[base:]  # a view (a copy of a strided box)
        try:
            g.into(src, dst)
        except (ValueError, TypeError):
            _write(interpreter, op, dst, g.tile(src))
        _emit(interpreter, op, "MTE1", nbytes=op.nbytes, shape=tuple(dst.shape), dtype=_dtype_name(op.dst.type),
              detail={"src": "l1", "dst": op.dst_space, "transform": "img2col"})
        return ()


# ---------------------------------------------------------------------------
# Running a host program on named buffers.
# ---------------------------------------------------------------------------


def make_ascend_interpreter(module: ModuleOp, listeners: tuple = ()) -> Interpreter:
    """func, arith and scf from xDSL; memref on numpy views; the ascend ops."""
    interpreter = Interpreter(module, listeners=listeners)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(ArithFunctions())
    interpreter.register_implementations(IndexArithFunctions(), override=True)
    interpreter.register_implementations(ScfFunctions())
    interpreter.register_implementations(NumpyMemRefFunctions())
    interpreter.register_implementations(AscendFunctions())
    interpreter.register_implementations(Load3dFunctions())
    interpreter.register_implementations(ReferenceFunctions())
    return interpreter


@dataclass(frozen=True)
class HostArg:
    """One argument of the host function: role is input, output or workspace."""

    index: int
    name: str
    role: str
    type: MemRefType

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.get_shape())

    @property
    def dtype(self) -> np.dtype:
        return to_dtype(self.type.element_type)


def host_function(module: ModuleOp) -> func.FuncOp:
    """The host program: `@main` (or the only function), as at graph level."""
    from geir.runtime.interpreter import main_function

    return main_function(module)


def host_args(module: ModuleOp) -> list[HostArg]:
    """The host function's arguments with their names and roles."""
    f = host_function(module)
    attrs = f.arg_attrs.data if f.arg_attrs is not None else ()
    out, counts = [], Counter()
    for i, t in enumerate(f.function_type.inputs.data):
        d = attrs[i].data if i < len(attrs) else {}
        if not isinstance(t, MemRefType) or a.space_of(t) != "gm":
            raise InterpreterError(f"host argument #{i} has type {t}; host arguments are gm memrefs")
        role = "workspace" if isinstance(d.get(attr_names.WORKSPACE), UnitAttr) else (
            "output" if isinstance(d.get(attr_names.OUTPUT), UnitAttr) else "input")
        name = d.get(attr_names.ONNX_NAME)
        name = name.data if isinstance(name, StringAttr) else f"{role}{counts[role]}"
        counts[role] += 1
        out.append(HostArg(i, name, role, t))
    if counts["workspace"] > 1:
        raise InterpreterError("the host function has more than one workspace argument")
    return out


def ascend_input_specs(module: ModuleOp) -> list[tuple[str, tuple[int, ...], np.dtype]]:
    """(name, shape, dtype) of each input, like runtime.interpreter.input_specs."""
    return [(h.name, h.shape, h.dtype) for h in host_args(module) if h.role == "input"]


def ascend_output_names(module: ModuleOp) -> list[str]:
    names = [h.name for h in host_args(module) if h.role == "output"]
    f = host_function(module)
    res = f.res_attrs.data if f.res_attrs is not None else ()
    for i in range(len(f.function_type.outputs.data)):
        n = res[i].data.get(attr_names.ONNX_NAME) if i < len(res) else None
        names.append(n.data if isinstance(n, StringAttr) else f"result{i}")
    return names


def is_ascend_module(module: ModuleOp) -> bool:
    return any(isinstance(op, a.KernelOp) for op in module.ops)


def run_ascend_module(
    module: ModuleOp,
    feeds: Mapping[str, np.ndarray],
    *,
    device: str | DeviceSpec = "ascend910b",
    trace: list | Callable[[TraceEvent], None] | None = None,
    listeners: tuple = (),
    compiled: bool | None = None,
) -> dict[str, np.ndarray]:
    """Run the host function on named inputs; returns the outputs by name.

    `trace`: a list to append a TraceEvent per executed ascend op to, or a
    callback. `device`: whose buffer sizes and DMA paths apply. `compiled`:
    run kernel bodies as compiled Python (the default, COMPILE_KERNELS) or op by
    op on xDSL's interpreter - same results, checks, errors and trace."""
    spec = load_device(device) if isinstance(device, str) else device
    hargs = host_args(module)
    inputs = [h for h in hargs if h.role == "input"]
    names = [h.name for h in inputs]
    missing = [n for n in names if n not in feeds]
    if missing:
        raise InterpreterError(f"missing input(s): {', '.join(missing)}")
    unknown = set(feeds) - set(names)
    if unknown:
        raise InterpreterError(f"unknown input(s): {', '.join(sorted(unknown))}; inputs are {names}")
    values: list[np.ndarray] = []
    workspace = None
    for h in hargs:
        if h.role == "input":
            v = np.asarray(feeds[h.name])
            if v.shape != h.shape:
                raise InterpreterError(f"input '{h.name}' has shape {list(v.shape)}, the program expects {list(h.shape)}")
            if v.dtype != h.dtype and not np.can_cast(v.dtype, h.dtype, "same_kind"):
                raise InterpreterError(f"input '{h.name}' has dtype {v.dtype}, the program expects {h.dtype}")
            values.append(np.array(v, dtype=h.dtype, order="C", copy=True))
        elif h.role == "output":
            values.append(_poison(h.shape, h.dtype))
        else:
            n = int(np.prod(h.shape, dtype=np.int64)) * h.dtype.itemsize
            workspace = np.full(n, POISON, np.uint8)
            values.append(_view(workspace, 0, h.type))
    sink = trace.append if isinstance(trace, list) else trace
    interpreter = make_ascend_interpreter(module, listeners)
    interpreter.set_data(AscendFunctions, "run", _Run(spec, sink, workspace,
                                                      compiled=COMPILE_KERNELS if compiled is None else compiled))
    f = host_function(module)
    # Per-tile matmuls are small: BLAS threads cost more than they save (and
    # thrash on a shared machine), so the interpreter runs them on one thread.
    with threadpool_limits(limits=1, user_api="blas"):
        results = interpreter.call_op(f.sym_name.data, tuple(values))
    outputs = [np.array(values[h.index]) for h in hargs if h.role == "output"]
    outputs += [np.array(r) for r in results]
    return dict(zip(ascend_output_names(module), outputs))
