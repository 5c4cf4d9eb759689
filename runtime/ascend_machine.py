"""The modeled device an ascend program runs on: run and block state, memory, tiles, checks.

Both ways of running a kernel - op by op on xDSL's interpreter (runtime/ascend_interpreter.py)
and as Python compiled from its body (runtime/ascend_compiled.py) - keep their state here and
make every check through the functions here, so both give the same results, errors and trace:

* A memref value is a numpy array; a `memref.subview` is a numpy *view* (`subview`), so a
  tile aliases its buffer exactly as on the device.
* Each block of a launch gets its own on-chip memory: one byte buffer per space (l1, l0a,
  l0b, l0c, ub), sized as the device's, filled with 0xFF (NaN for floats) so a missing copy
  or a wrong tile shows as a wrong number (the run's one buffer per space, poisoned as far as
  the block's allocs reach: `RunState.space`). `ascend.alloc {offset}` is a view at that byte
  offset - two live buffers planned to overlap really clobber each other; an alloc without an
  offset gets its own slot (bumped, aligned). gm buffers are the host arguments, the
  workspace argument (planned gm allocs are views into it) and constants (read-only: writing
  a weight is an error, `write`).
* Alignment of tiles is checked at run time (ub tiles start on 32-byte blocks, cube tiles on
  whole fractals), as is the device having each DMA path (`check_dma_path`) and a wait
  having a flag set before it (`flag_not_set`).
* Every executed ascend op can be reported as a `TraceEvent` (pipe, bytes, shape, kernel,
  block, launch, stream) to a list or callback: the hook a simulator times from.
"""

from __future__ import annotations

import mmap
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, FloatAttr, IntegerAttr, MemRefType
from xdsl.ir import Attribute, Operation

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.errors import InterpreterError
from geir.ir.locations import describe
from geir.ir.types import to_dtype
from geir.target.cost_model import CostModel
from geir.target.device import DeviceSpec

POISON = 0xFF
"""Byte pattern of memory nobody wrote: NaN for f16, bf16 and f32 (all exponent bits set,
a nonzero mantissa), -1 for integers."""


# ---------------------------------------------------------------------------
# Trace events: what a simulator needs to time a run.
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
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


def element_name(t: MemRefType) -> str:
    """The element type's name in trace events and the cost model ("f16", "i8", ...)."""
    return a.short_type_name(t.element_type)  # the dialect's one definition (private there; see MmadOp.dtype)


# ---------------------------------------------------------------------------
# Run state.
# ---------------------------------------------------------------------------


@dataclass
class BlockState:
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
    sub_ub: dict[int, np.ndarray] = field(default_factory=dict)  # vector core i >= 1's ub bytes (`enter_sub_block`)
    parked_ub: tuple[int, np.ndarray] | None = None  # core 0's ub bytes while core i's code runs
    probe_key: list = field(default_factory=list)  # a probed block: its events' block_key elements
    probe_gm: list = field(default_factory=list)   # ... and (op, operands) of its ops touching gm


@dataclass
class RunState:
    device: DeviceSpec
    trace: Callable[[TraceEvent], None] | None = None
    workspace: np.ndarray | None = None  # uint8
    block: BlockState | None = None
    launches: int = 0
    checked_paths: set = field(default_factory=set)
    compiled: bool = True  # kernels run as compiled Python (runtime/ascend_compiled.py)
    kernels: dict = field(default_factory=dict)  # kernel op -> its compiled body, checked this run
    buffers: dict[str, np.ndarray] = field(default_factory=dict)  # one byte buffer per space
    addresses: dict[str, int] = field(default_factory=dict)  # where each of them starts
    overflow: Any = None  # a runtime/overflow.py OverflowWatch: each launch's outputs checked for inf/NaN
    timing: bool = False  # timing only: ops are checked and traced, no data is moved or computed
    memo: dict | None = None  # timing only: launch signature -> the launch that ran it (runtime/launch_memo.py)
    repeats: Callable[..., bool] | None = None  # timing only: takes a probed block (see `launch`)

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
                self.addresses[name] = address(buf)
            block.spaces[name] = buf
        end = buf.size if end is None else min(end, buf.size)
        done = block.poisoned.get(name, 0)
        if end > done:
            buf[done:end] = POISON
            block.poisoned[name] = end
        return buf


def enter_sub_block(run: RunState, index: int) -> None:
    """Vector core `index` of a mix block has a ub of its own at the addresses of core 0's
    (`ascend.sub_block`). Its code runs in program order on the run's one ub buffer, so on
    entering it the bytes the block's allocs reach are exchanged with that core's, kept with
    the block (poisoned at first), and exchanged back on leaving (`leave_sub_block`). Core 0
    is the buffer itself: code outside sub-blocks pays nothing. Timing-only runs move no data."""
    block = run.block
    if index == 0 or run.timing or block is None or block.spaces.get("ub") is None:
        return
    buf, end = block.spaces["ub"], block.poisoned.get("ub", 0)
    own = block.sub_ub.get(index)
    if own is None or own.size < end:
        grown = np.full(end, POISON, np.uint8)
        if own is not None:
            grown[:own.size] = own
        own = grown
    block.parked_ub = (end, buf[:end].copy())
    buf[:end] = own[:end]


def leave_sub_block(run: RunState, index: int) -> None:
    """Core `index`'s ub bytes back to their keeping, core 0's into the buffer."""
    block = run.block
    if block is None or block.parked_ub is None or index == 0:
        return
    end, parked = block.parked_ub
    buf = block.spaces["ub"]
    block.sub_ub[index] = buf[:end].copy()
    buf[:end] = parked
    block.parked_ub = None


def where(run: RunState, op: Operation) -> str:
    """The op's location, and the kernel and block running it: the prefix of every run-time error."""
    block = run.block
    return describe(op) + (f" in @{block.kernel} block {block.index}" if block else "")


def write(run: RunState, op: Operation, dst: np.ndarray, value: np.ndarray) -> None:
    """Stores `value` into the view `dst` in dst's element type; a read-only (constant) or
    mismatched destination is an error naming the op."""
    try:
        np.copyto(dst, value, casting="unsafe")
    except ValueError as e:
        raise InterpreterError(f"{where(run, op)}: cannot write its destination: {e}") from None


def check_writable(run: RunState, op: Operation, dst: np.ndarray) -> None:
    """What `write` checks of a destination, for a timing-only run that writes nothing."""
    if not dst.flags.writeable:
        write(run, op, dst, dst)


def scalar_value(v: Any) -> Any:
    """A Python number from an interpreter scalar (IntegerAttr / FloatAttr / numpy)."""
    if isinstance(v, IntegerAttr | FloatAttr):
        return v.value.data
    return v


def int_value(attr: Attribute | None) -> int | None:
    """The integer of an optional integer attribute (an op's property)."""
    return None if attr is None else attr.value.data  # type: ignore[union-attr]


# ---------------------------------------------------------------------------
# Memory: buffers as numpy arrays.
# ---------------------------------------------------------------------------


def address(x: np.ndarray) -> int:
    """Where the first element of `x` lies in the process's memory."""
    return x.ctypes.data  # (half the time of __array_interface__, which builds a dict)


def byte_extent(x: np.ndarray) -> tuple[int, int]:
    """[lo, hi) of the bytes a non-empty numpy view spans."""
    base = address(x)
    lo = base + sum((n - 1) * s for n, s in zip(x.shape, x.strides) if s < 0)
    hi = base + sum((n - 1) * s for n, s in zip(x.shape, x.strides) if s > 0) + x.itemsize
    return lo, hi


_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)


def untouched(nbytes: int, writable: bool = True) -> np.ndarray:
    """`nbytes` zero bytes that take no memory until written: an anonymous private mapping,
    reserving nothing, whose pages the OS backs with its one zero page while they are only
    read. A splat-of-0 constant (a shape-only weight) reads as zeros without being expanded,
    and a timing-only run addresses a workspace larger than the machine's memory."""
    if nbytes <= 0:
        return np.zeros(0, np.uint8)
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
    try:
        buf = np.frombuffer(mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE,
                                      prot=prot), np.uint8)
    except (OSError, ValueError, TypeError, AttributeError):  # no such mapping here: real zeros
        buf = np.zeros(nbytes, np.uint8)
        buf.flags.writeable = writable
    return buf


def constant_buffer(op: a.ConstantOp) -> np.ndarray:
    """The gm buffer of `ascend.constant`: its value, contiguous; a splat of 0 (a shape-only
    weight, a zero bias) as `untouched` zeros, which need no memory. Read-only either way."""
    try:
        value = op.data()
    except ValueError as e:
        raise InterpreterError(f"{describe(op)}: {e}") from None
    if value.size > 1 and not any(value.strides) and not value.reshape(-1)[:1].view(np.uint8).any():
        return untouched(value.nbytes, writable=False).view(value.dtype).reshape(value.shape)
    buf = np.ascontiguousarray(value).reshape(value.shape)  # (ascontiguousarray makes a scalar 1-d)
    buf.flags.writeable = False
    return buf


def poisoned(shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """A new array of POISON bytes."""
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return np.full(n, POISON, np.uint8).view(dtype).reshape(tuple(shape))


def view_at(buf: np.ndarray, offset: int, t: MemRefType) -> np.ndarray:
    """The array of type `t` at byte `offset` of the byte buffer `buf` (a view)."""
    dtype = to_dtype(t.element_type)
    shape = tuple(t.get_shape())
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return buf[offset : offset + n].view(dtype).reshape(shape)


def planned_offset(op: a.AllocOp) -> int | None:
    """The byte offset memory planning gave an `ascend.alloc` in its space, or None."""
    return int_value(op.offset)


def alloc(run: RunState, op: a.AllocOp) -> np.ndarray:
    """The buffer `ascend.alloc` gives: a view at its planned offset into the workspace (gm) or
    into the block's byte buffer of its space; without an offset a poisoned gm array, or an
    on-chip slot of its own (bumped, aligned), the same for every execution in the block."""
    t = op.memref.type
    s = op.space
    offset = planned_offset(op)
    if s == "gm":
        if offset is None:
            if run.timing:
                return view_at(untouched(op.nbytes), 0, t)
            return poisoned(t.get_shape(), to_dtype(t.element_type))
        ws = run.workspace
        if ws is None:
            raise InterpreterError(f"{describe(op)} has a workspace offset, but the host has no "
                                   f"{{{attr_names.WORKSPACE}}} argument")
        if offset + op.nbytes > ws.size:
            raise InterpreterError(f"{describe(op)}: [{offset}, {offset + op.nbytes}) is outside the "
                                   f"{ws.size}-byte workspace")
        return view_at(ws, offset, t)
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
    view = view_at(run.space(s, offset + op.nbytes), offset, t)
    if op.offset is None:
        block.slots[op] = view
    return view


# ---------------------------------------------------------------------------
# Tiles: memref views on numpy.
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


def subview(run: RunState, op: memref.SubviewOp, src: np.ndarray, dyn: Sequence[int],
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


def _check_tile(run: RunState, op: memref.SubviewOp, view: np.ndarray, offsets, sizes) -> None:
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
            rel = address(view) - address(run.block.spaces[s])
            if rel % a.BLOCK_BYTES:
                raise InterpreterError(
                    f"{where(run, op)}: the {s} tile starts at byte {rel}, not on a {a.BLOCK_BYTES}-byte block"
                )


def _check_strides(run: RunState, op: memref.SubviewOp, view: np.ndarray,
                   want: tuple[int | None, ...] | None) -> None:
    if want is None:
        return
    got = tuple(s // view.itemsize for s in view.strides)
    for d, (w, have, n) in enumerate(zip(want, got, view.shape)):
        if w is not None and n > 1 and w != have:
            raise InterpreterError(f"{where(run, op)}: the result type says strides {list(want)}, the tile has {list(got)}")


def reshape(run: RunState, op: Operation, x: np.ndarray) -> np.ndarray:
    """collapse_shape / expand_shape: a view of `x` in the result's shape, never a copy."""
    shape = tuple(op.results[0].type.get_shape())
    try:
        return np.reshape(x, shape, copy=False)
    except ValueError:
        raise InterpreterError(
            f"{where(run, op)}: a {list(x.shape)} view with strides {list(x.strides)} cannot be "
            f"reshaped to {list(shape)} without a copy"
        ) from None


# ---------------------------------------------------------------------------
# DMA paths and flags.
# ---------------------------------------------------------------------------


def check_dma_path(run: RunState, op: Operation, path: tuple[str, str]) -> None:
    """The device must have the DMA engine for src -> dst (checked once per path and run)."""
    if path not in run.checked_paths:
        try:
            CostModel(run.device).dma_engine(*path)
        except ValueError as e:
            raise InterpreterError(f"{where(run, op)}: {e}") from None
        run.checked_paths.add(path)


def flag_not_set(run: RunState, op: a.WaitFlagOp) -> InterpreterError:
    src, dst, ident = op.key
    return InterpreterError(f"{where(run, op)}: {dst} waits for flag {src} -> {dst} id {ident}, "
                            f"which is not set (the pipes would deadlock)")
