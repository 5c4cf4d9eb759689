"""Compiled kernels: each `ascend.kernel` body as one generated Python function.

xDSL's interpreter runs an op by generic dispatch (operand lookup in scoped
dicts, an impl lookup, attribute decoding inside the impl): some 18 us an op,
and ResNet-50 executes 260k of them. A kernel is launched block_dim times and
its tile loops run the same few ops thousands of times, so its body is
translated once into Python source:

* SSA values are local variables; `index` and `i1` values are Python ints and
  bools (other scalars keep the interpreter's IntegerAttr / FloatAttr);
* arith on index is inline Python, `scf.for` a Python for-loop, `scf.if` an if,
  `set_flag` / `wait_flag` inline updates of the block's flag counter;
* `memref.subview` with static sizes is an inline numpy slice behind a guard
  (bounds, fractal alignment, the source's strides as last checked); views of
  block-invariant buffers at static offsets are taken once per block, those a
  loop takes of a launch- (block-) invariant buffer once per offset and launch
  (block), kept in a dict;
* alloc, copy, mmad, load3d, vector ops, ... are closures over their decoded
  attributes; load3d's gathers are indexed by box-relative geometry (see
  `ascend_semantics.Load3dGeometry`) and shared by the kernel's load3d ops of
  one geometry.

Checks and messages stay the interpreter's: where a guard fails the generated
code calls the function the interpreter calls (runtime/ascend_machine.py:
`subview`, `alloc`, `write`, `flag_not_set`, ...), which raises the same error;
values come from the same semantics (runtime/ascend_semantics.py). Trace
events and listener calls are made for the same ops in the same order
(listeners see index values as ints). An op without a compiled form runs through the interpreter
(`Interpreter.run_op`); a kernel the translation does not cover (a CFG body,
scf.while, a loop over a non-index type) runs op by op on xDSL's path.

The code is cached on the kernel op together with a fingerprint of its body
(ops, operands, properties, attributes, types), compared once per run: a kernel
rewritten in place is compiled again.
"""

from __future__ import annotations

import linecache
import threading
from functools import partial
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, FloatAttr, IndexType, IntegerAttr, IntegerType, MemRefType
from xdsl.interpreter import Interpreter
from xdsl.interpreters.builtin import scalar_attr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsTerminator

from geir.dialects import ascend as a
from geir.dialects import formats
from geir.errors import InterpreterError
from geir.ir.collector import collector_paused
from geir.ir.types import to_dtype
from geir.runtime import ascend_machine as machine
from geir.runtime import ascend_semantics as semantics
from geir.runtime.kernel_args import written_args

_CACHE_ATTR = "_geir_compiled"
_CODE: dict[str, Any] = {}
"""Source -> code object: kernels of one structure (a network's repeated blocks) differ only
in the namespace their code runs in, and Python's compiler is half the cost of a kernel."""
_CODE_ENTRIES = 512
_CODE_LOCK = threading.Lock()
"""The ranks of a multi-device run compile kernels in threads: two evicting at once would
both pick the same oldest entry."""


class _Unsupported(Exception):
    """The kernel has a construct with no compiled form: it runs on xDSL's path."""


class _NotNative(Exception):
    """This op has no inline form: it runs through the interpreter."""


def _code(source: str, kernel_name: str) -> Any:
    """The code object of a kernel's `source`, compiled once per process (of the last
    `_CODE_ENTRIES` sources)."""
    with _CODE_LOCK:
        code = _CODE.get(source)
        if code is not None:
            return code
        filename = f"<ascend kernel @{kernel_name} {len(_CODE) + 1}:{hash(source) & 0xFFFFFFFF:08x}>"
        try:
            code = compile(source, filename, "exec")
        except (SyntaxError, RecursionError, MemoryError):  # e.g. loops nested too deep for Python
            raise _Unsupported from None
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        if len(_CODE) >= _CODE_ENTRIES:  # the oldest goes, with its lines for tracebacks
            linecache.cache.pop(_CODE.pop(next(iter(_CODE))).co_filename, None)
        _CODE[source] = code
        return code


# ---------------------------------------------------------------------------
# Entry point (called by the interpreter's launch).
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CompiledKernel:
    """`fn(interpreter, run, block, args, LM)` runs one block (LM: a list of `launch_memos`
    Nones, one per launch); `memref_args`: the arguments the code is specialised for, as
    (position, static shape)."""

    fn: Callable[..., None]
    memref_args: tuple[tuple[int, tuple[int, ...]], ...]
    arity: int
    launch_memos: int  # values the same for every block of a launch, kept in a list per launch
    source: str
    im2col: tuple[semantics.Load3dGeometry, ...] = ()  # its load3d ops' gathers (held as long as it is)
    written: frozenset[int] = frozenset()  # the arguments it writes (kept with the code: the overflow check's)

    def accepts(self, args: Sequence[Any]) -> bool:
        if len(args) != self.arity:
            return False
        for i, shape in self.memref_args:
            x = args[i]
            if not isinstance(x, np.ndarray) or x.shape != shape:
                return False
        return True


def compiled_body(interpreter: Interpreter, run: machine.RunState, kernel: a.KernelOp, args: Sequence[Any],
                  probe: bool = False):
    """The compiled body of `kernel` for these launch arguments, or None to run it on xDSL's
    interpreter. Compiled once per kernel op and kept on it while its body is unchanged.
    `probe`: the block probe of a timing-only run instead (`compile_kernel`; None when the
    kernel has none)."""
    entry = run.kernels.get((kernel, probe), False)
    if entry is False:
        entry = run.kernels[kernel, probe] = (
            compile_kernel(kernel, bitwidth=interpreter.index_bitwidth, probe=True) if probe else
            compile_kernel(kernel, listened_ops(interpreter.listeners), run.trace is not None, interpreter.index_bitwidth))
    if entry is None or not entry.accepts(args):
        return None
    return partial(entry.fn, LM=[None] * entry.launch_memos)


def listened_ops(listeners: Sequence[Interpreter.Listener]) -> bool | frozenset[type]:
    """The ops the generated code calls the listeners around: none (False), every op (True),
    or the op classes every listener names in its `LISTENS_TO` (the simulator's recorder
    needs its ops that touch buffers, launches and allocs - not the index arithmetic and views
    that are most of a tile loop)."""
    if not listeners:
        return False
    wanted = [getattr(listener, "LISTENS_TO", None) for listener in listeners]
    if any(w is None for w in wanted):
        return True
    return frozenset().union(*wanted)


def compile_kernel(kernel: a.KernelOp, listen: bool | frozenset[type] = False, traced: bool = False,
                   bitwidth: int = 64, probe: bool = False) -> CompiledKernel | None:
    """`kernel`'s body as a Python function (cached on the op), or None if it has a construct
    without a compiled form. `listen`: the code calls interpreter listeners around each op
    (or each op of these classes, `listened_ops`);
    `traced`: it reports flag and barrier trace events (the other ops report their own).

    `probe`: the block probe of a timing-only run (`BlockState.probe_key`): the block's
    checks, with no listener and no trace event, each op that would report one appending
    (op id, bytes) - the element of the simulator's `block_key` its event would make - and
    each op touching gm its operands to `probe_gm`. None when an op of the body could report
    an event the probe cannot foresee (an ascend op run through the interpreter, an im2col
    gather)."""
    fingerprint = _fingerprint(kernel)
    cache = getattr(kernel, _CACHE_ATTR, None)
    if cache is None or cache[0] != fingerprint:
        cache = (fingerprint, {})
        setattr(kernel, _CACHE_ATTR, cache)
    key = (listen, traced, bitwidth, probe)
    if key not in cache[1]:
        # Building makes thousands of long-lived objects; the collector's full passes over
        # the (large) IR heap they trigger would double the time.
        with collector_paused():
            try:
                cache[1][key] = _Codegen(kernel, False if probe else listen, traced and not probe, bitwidth,
                                         probe).build()
            except _Unsupported:
                cache[1][key] = None
    return cache[1][key]


def held_bytes(module: Operation) -> int:
    """Bytes of the im2col index arrays the compiled kernels of `module` hold (each kernel's
    load3d gathers, kept on the kernel op with its code and freed with it)."""
    seen: dict[int, semantics.Load3dGeometry] = {}
    for op in module.walk():
        cache = getattr(op, _CACHE_ATTR, None) if isinstance(op, a.KernelOp) else None
        for entry in (cache[1].values() if cache else ()):
            for geometry in (entry.im2col if entry is not None else ()):
                seen[id(geometry)] = geometry
    return sum(g.nbytes for g in seen.values())


def _fingerprint(kernel: a.KernelOp) -> list:
    """Everything the generated code depends on, in order: block structure, ops, operands,
    properties, attributes, result and argument types. Equal lists (compared by identity
    first) mean the same body."""
    out: list = []
    add, extend = out.append, out.extend

    def block(b: Block) -> None:
        # Walked once a run for every kernel, so the walk reads xDSL's fields directly: the
        # operand tuple is replaced whenever an operand changes (the same tuple: the same
        # operands), and the ops are a linked list.
        add(b)
        for arg in b.args:
            add(arg.type)
        op = b.first_op
        while op is not None:
            add(op)
            add(op._operands)
            extend(op.properties.values())
            extend(op.attributes.values())
            for r in op.results:
                add(r.type)
            for region in op.regions:
                add(region)
                for inner in region.blocks:
                    block(inner)
                add(None)
            op = op._next_op
        add(None)

    for b in kernel.body.blocks:
        block(b)
    return out


# ---------------------------------------------------------------------------
# Helpers the generated code calls.
# ---------------------------------------------------------------------------


def _will(interpreter: Interpreter, op: Operation, args: tuple) -> None:
    for listener in interpreter.listeners:
        listener.will_interpret_op(op, args)


def _did(interpreter: Interpreter, op: Operation, results: tuple) -> None:
    for listener in interpreter.listeners:
        listener.did_interpret_op(op, results)


def _poison(run: machine.RunState, ends: tuple[tuple[str, int], ...]) -> None:
    """A block's start: its buffers of each space poisoned as far as its planned allocs reach
    (spaces the device lacks are left to the allocs, which raise the error)."""
    sizes = run.device.buffer_bytes
    for space, end in ends:
        if space in sizes:
            run.space(space, end)


def _misaligned(run: machine.RunState, block: machine.BlockState, space: str, view: np.ndarray) -> bool:
    """Whether a non-empty tile of an on-chip buffer starts off a 32-byte block (the
    interpreter's subview then raises the error)."""
    return space in block.spaces and (machine.address(view) - run.addresses[space]) % a.BLOCK_BYTES != 0


def _constant(run: machine.RunState, op: a.ConstantOp) -> np.ndarray:
    return machine.constant_buffer(op)


def _is_index(t: Any) -> bool:
    return isinstance(t, IndexType)


def _is_i1(t: Any) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def _to_interpreter(t: Any, bitwidth: int) -> Callable[[Any], Any] | None:
    """Our value of type t -> the xDSL interpreter's (None: the same)."""
    if _is_index(t):
        return lambda v: scalar_attr(v, IndexType(), bitwidth)
    if _is_i1(t):
        return lambda v: IntegerAttr.from_bool(bool(v))
    return None


def _from_interpreter(t: Any) -> Callable[[Any], Any] | None:
    """The xDSL interpreter's value of type t -> ours (None: the same)."""
    if _is_index(t):
        return lambda v: v.value.data if isinstance(v, IntegerAttr) else int(v)
    if _is_i1(t):
        return lambda v: bool(v.value.data) if isinstance(v, IntegerAttr) else bool(v)
    return None


# ---------------------------------------------------------------------------
# Closures over one op's decoded attributes.
# ---------------------------------------------------------------------------


def _alloc_fn(op: a.AllocOp):
    """An on-chip alloc at a planned offset: the view into the block's buffer of its space,
    as `alloc` makes it; anything else (gm, unplanned, too big) is `alloc` itself."""
    t = op.memref.type
    space, offset, nbytes = op.space, machine.planned_offset(op), op.nbytes
    dtype, shape = to_dtype(t.element_type), tuple(t.get_shape())
    alloc = machine.alloc
    if space == "gm" or offset is None or DYNAMIC_INDEX in shape:
        return lambda R, B: alloc(R, op)
    end = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize  # as view_at
    stop = offset + nbytes  # as alloc's capacity check and poisoning

    def alloc_at(R, B):
        if B.poisoned.get(space, 0) >= stop:
            buf = B.spaces[space]
        elif stop <= R.device.buffer_bytes[space]:
            buf = R.space(space, stop)  # the block's first reach that far: poisons
        else:
            return alloc(R, op)  # raises the interpreter's error
        return buf[offset:end].view(dtype).reshape(shape)

    return alloc_at


def _reshape_fn(op: Operation):
    """collapse_shape / expand_shape: numpy's reshape without a copy; when it cannot, the
    interpreter's `reshape` raises its error."""
    shape = tuple(op.results[0].type.get_shape())
    reshape, np_reshape = machine.reshape, np.reshape

    def reshape_view(R, x):
        try:
            return np_reshape(x, shape, copy=False)
        except ValueError:
            return reshape(R, op, x)

    return reshape_view


def _copy_fn(op: a.CopyOp):
    """A plain copy is one assignment (copyto's unsafe casting); a `{pad}` copy of a smaller
    source writes it into the destination's leading part and zeroes the rest in place; any
    other goes through `copy_data` (transposes, layouts, relu)."""
    path = (op.src_space, op.dst_space)
    pipe = a.COPY_PIPES.get(path)
    if pipe is None:
        raise _NotNative
    nbytes, dtype, transform = op.nbytes, machine.element_name(op.dst.type), op.physical_transform
    copy_data, write, check_path, TE = semantics.copy_data, machine.write, machine.check_dma_path, machine.TraceEvent
    pad_slices, writable = formats.pad_slices, machine.check_writable

    detail = {"src": path[0], "dst": path[1], "transform": transform}  # one per op: events share it

    def traced(R, B, dst):
        R.trace(TE(op, pipe, B.kernel, B.index, B.launch, B.stream, nbytes, tuple(dst.shape), dtype, detail))

    def store(R, dst, data):
        try:
            dst[...] = data
        except ValueError:  # e.g. a read-only dst: the interpreter's error
            write(R, op, dst, data)

    if op.quant is not None:  # the FIX pipe's quantization: always copy_data's way
        def fix_quant(R, B, src, dst, quant):
            if path not in R.checked_paths:
                check_path(R, op, path)
            if R.timing:
                writable(R, op, dst)
            else:
                store(R, dst, copy_data(op, src, dst.shape, quant, dst.dtype))
            if R.trace is not None:
                traced(R, B, dst)

        return fix_quant

    if not op.properties and not op.attributes:
        def copy(R, B, src, dst):
            if path not in R.checked_paths:
                check_path(R, op, path)
            if R.timing:
                writable(R, op, dst)
            else:
                try:
                    dst[...] = src  # copyto(casting="unsafe") without its dispatch: half the time
                except ValueError:
                    write(R, op, dst, src)
            if R.trace is not None:
                traced(R, B, dst)

        return copy

    slabs: dict[tuple, tuple | None] = {}  # (src shape, dst shape) -> formats.pad_slices
    padded = not op.attributes and set(op.properties) == {"pad"}
    blocked = _blocked_into(op)

    def copy_general(R, B, src, dst):
        if path not in R.checked_paths:
            check_path(R, op, path)
        if R.timing:
            writable(R, op, dst)
            if R.trace is not None:
                traced(R, B, dst)
            return
        if padded:
            key = (src.shape, dst.shape)
            cut = slabs.get(key, False)
            if cut is False:
                cut = slabs[key] = pad_slices(*key)
            if cut is not None and dst.flags.writeable:
                head, zero = cut
                dst[head] = src
                for part in zero:
                    dst[part] = 0
                if R.trace is not None:
                    traced(R, B, dst)
                return
        if blocked is not None and dst.flags.writeable and blocked(src, dst):
            if R.trace is not None:
                traced(R, B, dst)
            return
        store(R, dst, copy_data(op, src, dst.shape))
        if R.trace is not None:
            traced(R, B, dst)

    return copy_general


def _blocked_into(op: a.CopyOp):
    """For the two re-laying copies every formatted conv runs per tile - FRACTAL weights into
    l1 (`nz2nd`) and l0c rows out as NC1HWC0 blocks (`nd2nc1hwc0`, maybe cropped and relu'd
    by FIX) - a function writing `copy_data`'s result straight through a view of the
    destination (no temporaries; dialects/formats.py's `nz_view`, `c0_blocks_into`); it
    returns False for shapes it does not take (the caller then goes `copy_data`'s way). None
    for any other copy."""
    layout = semantics.copy_layout(op)
    if op.transpose is not None or layout not in ("nz2nd", "nd2nc1hwc0"):
        return None
    relu = op.relu is not None
    nz_view, c0_blocks_into, maximum = formats.nz_view, formats.c0_blocks_into, np.maximum

    if layout == "nz2nd":
        if relu or op.pad is not None:
            return None

        def nz2nd(src, dst):  # src [K1, M1, 16, C0] -> dst [M1 * 16, K1 * C0]
            if src.ndim != 4 or dst.ndim != 2:
                return False
            k1, m1, m0, c0 = src.shape
            if dst.shape != (m1 * m0, k1 * c0):
                return False
            view = nz_view(dst, c0)
            if view.shape != src.shape:
                return False
            view[...] = src
            return True

        return nz2nd

    def nd2nc1hwc0(src, dst):  # src [rows, cols] -> dst [C1, cols', C0], leading part (pad)
        if src.ndim != 2 or dst.ndim != 3:
            return False
        c1, cols, c0 = dst.shape
        if src.shape[1] < cols or (op.pad is None and src.shape != (c1 * c0, cols)):
            return False
        data = src[:c1 * c0, :cols]
        c0_blocks_into(maximum(data, 0) if relu else data, dst)
        return True

    return nd2nc1hwc0


def _mmad_fn(op: a.MmadOp):
    init = op.init is not None
    m, k, n = op.mkn
    dtype = op.dtype
    write, TE, matmul, add, writable = machine.write, machine.TraceEvent, np.matmul, np.add, machine.check_writable
    bias_shape = (-1, 1) if machine.int_value(op.bias_axis) == 0 else (1, -1)

    def mmad(R, B, x, y, c, bias=None):
        if R.timing:
            writable(R, op, c)
        else:
            acc = c.dtype
            xa = x if x.dtype == acc else x.astype(acc)
            ya = y if y.dtype == acc else y.astype(acc)
            try:
                if init:  # the product straight into l0c (the same BLAS call, no temporary)
                    matmul(xa, ya, out=c)
                else:
                    add(c, matmul(xa, ya), out=c)
                if bias is not None:  # the bias table initialised c
                    add(c, bias.reshape(bias_shape), out=c)
            except (ValueError, TypeError):  # e.g. a read-only c: the interpreter's error
                p = matmul(xa, ya)
                if bias is not None:
                    p = p + bias.reshape(bias_shape)
                write(R, op, c, p if init else c + p)
        tr = R.trace
        if tr is not None:
            tr(TE(op, "M", B.kernel, B.index, B.launch, B.stream, x.nbytes + y.nbytes, (m, k, n), dtype,
                  {"m": m, "k": k, "n": n, "init": init}))

    return mmad


def _load3d_fn(op: a.Load3dOp, geometry: semantics.Load3dGeometry):
    """A repeated call is a dict hit on `geometry.calls` (the kernel's load3d ops of one
    geometry share it) and one gather; a launch asks for a few distinct tiles thousands of
    times."""
    dst_space = op.dst_space
    nbytes, dtype = op.nbytes, machine.element_name(op.dst.type)
    write, TE, plan, outside = machine.write, machine.TraceEvent, semantics.load3d_plan, semantics.Load3dOutside
    calls = geometry.calls
    pad = op.padding_value

    def load3d(R, B, fm, ih, iw, dst, k, oh, ow):
        found = calls.get((ih, iw, k, oh, ow, fm.shape, dst.shape))
        if found is None:
            try:
                found = plan(geometry, fm.shape, ih, iw, k, oh, ow, dst.shape)
            except outside as e:
                raise InterpreterError(f"{machine.where(R, op)}: {e.message(k, ih, iw, fm.shape)}") from None
        base, g = found
        if R.timing:
            machine.check_writable(R, op, dst)
        else:
            src = fm.reshape(-1)[base:]  # a view (a copy of a strided box)
            try:
                g.into(src, dst, pad)
            except (ValueError, TypeError):  # e.g. a read-only destination: the interpreter's error
                write(R, op, dst, g.tile(src, pad))
        tr = R.trace
        if tr is not None:
            tr(TE(op, "MTE1", B.kernel, B.index, B.launch, B.stream, nbytes, tuple(dst.shape), dtype,
                  {"src": "l1", "dst": dst_space, "transform": "img2col"}))

    return load3d


def _vector_fn(op: a.VectorOp):
    fn = semantics.vector_kernel(op)
    nbytes, shape, dtype, kind = op.nbytes, tuple(op.dst.type.get_shape()), op.dtype, op.cost_kind
    write, TE, errstate = machine.write, machine.TraceEvent, np.errstate
    detail = {"kind": kind}  # one per op: events share it

    def vector(R, B, args):
        dst = args[-1]
        if R.timing:
            machine.check_writable(R, op, dst)
        else:
            with errstate(all="ignore"):
                value = fn(args)
            try:
                dst[...] = value  # as copyto(casting="unsafe")
            except ValueError:
                write(R, op, dst, value)
        tr = R.trace
        if tr is not None:
            tr(TE(op, "V", B.kernel, B.index, B.launch, B.stream, nbytes, shape, dtype, detail))

    return vector


def _load_fn(op: memref.LoadOp, bitwidth: int):
    t = op.res.type
    dtype = machine.element_name(op.memref.type)
    native = _is_index(t) or _is_i1(t)
    TE = machine.TraceEvent

    def load(R, B, arr, idx):
        value = arr[idx]
        tr = R.trace
        if tr is not None:
            tr(TE(op, "S", B.kernel, B.index, B.launch, B.stream, arr.itemsize, (), dtype))
        item = value.item()
        if native:
            return bool(item) if _is_i1(t) else item
        return scalar_attr(item, t, bitwidth)

    return load


def _store_fn(op: memref.StoreOp):
    dtype = machine.element_name(op.memref.type)
    TE = machine.TraceEvent

    def store(R, B, value, arr, idx):
        try:
            arr[idx] = machine.scalar_value(value)
        except ValueError as e:
            raise InterpreterError(f"{machine.where(R, op)}: {e}") from None
        tr = R.trace
        if tr is not None:
            tr(TE(op, "S", B.kernel, B.index, B.launch, B.stream, arr.itemsize, (), dtype))

    return store


def _fallback_fn(op: Operation, bitwidth: int):
    """Runs `op` through the interpreter (which calls the listeners), converting index / i1
    values to and from the interpreter's attributes."""
    ins = [_to_interpreter(v.type, bitwidth) for v in op.operands]
    outs = [_from_interpreter(r.type) for r in op.results]

    def run_op(I, args):
        values = I.run_op(op, tuple(v if c is None else c(v) for c, v in zip(ins, args)))
        return tuple(v if c is None else c(v) for c, v in zip(outs, values))

    return run_op


def _subview_slow(op: memref.SubviewOp, spec: machine.SubviewSpec, strides: list):
    """The interpreter's subview (all checks, its error messages); remembers the source
    strides it accepted, which the inline guard compares against."""
    subview = machine.subview

    def slow(R, src, dyn):
        view = subview(R, op, src, dyn, spec)
        strides[0] = src.strides
        return view

    return slow


# ---------------------------------------------------------------------------
# Code generation.
# ---------------------------------------------------------------------------

_INDEX_BINARY = {
    arith.AddiOp: "{0} + {1}",
    arith.SubiOp: "{0} - {1}",
    arith.MuliOp: "{0} * {1}",
    arith.AndIOp: "{0} & {1}",
    arith.OrIOp: "{0} | {1}",
    arith.XOrIOp: "{0} ^ {1}",
    # as the interpreter's IndexArithFunctions
    arith.DivUIOp: "{0} // {1}",
    arith.RemUIOp: "{0} % {1}",
    arith.CeilDivSIOp: "-(-{0} // {1})",
    arith.CeilDivUIOp: "-(-{0} // {1})",
    arith.MinSIOp: "{0} if {0} <= {1} else {1}",
    arith.MinUIOp: "{0} if {0} <= {1} else {1}",
    arith.MaxSIOp: "{0} if {0} >= {1} else {1}",
    arith.MaxUIOp: "{0} if {0} >= {1} else {1}",
}
_CMPI = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "<", 7: "<=", 8: ">", 9: ">="}


class _Codegen:
    """Writes one kernel's Python source, op by op, with the constants it refers to in a
    namespace (ops, closures, attributes)."""

    def __init__(self, kernel: a.KernelOp, listen: bool | frozenset[type], traced: bool, bitwidth: int,
                 probe: bool = False):
        self.kernel = kernel
        self.listen = listen
        self.listened = tuple(listen) if isinstance(listen, frozenset) else None
        self.traced = traced
        self.probe = probe
        self.bitwidth = bitwidth
        self.ns: dict[str, Any] = {"TE": machine.TraceEvent, "W": _will, "D": _did, "MISALIGNED": _misaligned,
                                   "NOT_SET": machine.flag_not_set, "POISON": _poison,
                                   "SUB_ENTER": machine.enter_sub_block, "SUB_LEAVE": machine.leave_sub_block}
        self.flags: dict[tuple[str, str, int], str] = {}
        self.refs: dict[int, str] = {}
        self.lines: list[str] = []
        self.depth = 1
        self.loops = 0  # loop nesting (0: ops run at most once a block)
        self.names: dict[SSAValue, str] = {}
        self.shapes: dict[SSAValue, tuple[int, ...] | None] = {}  # runtime shape, when fixed
        self.fixed: set[SSAValue] = set()  # the same Python object for a whole block
        self.memos = 0
        self.tables: list[str] = []  # prologue lines binding the subview tables (see `table`)
        self.invariant: set[SSAValue] = set()  # the same Python object for a whole launch
        self.launch_memos = 0
        self.poison: dict[str, int] = {}  # space -> end of the planned allocs kept per launch
        self.load3d: dict[tuple, semantics.Load3dGeometry] = {}  # one per im2col geometry
        self.count = 0

    # -- bookkeeping ----------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def const(self, obj: Any, hint: str) -> str:
        key = id(obj)
        name = self.refs.get(key)
        if name is None:
            name = self.refs[key] = f"{hint}{len(self.refs)}"
            self.ns[name] = obj
        return name

    def define(self, v: SSAValue) -> str:
        self.count += 1
        name = self.names[v] = f"v{self.count}"
        t = v.type
        self.shapes[v] = tuple(t.get_shape()) if isinstance(t, MemRefType) and DYNAMIC_INDEX not in t.get_shape() else None
        if self.loops == 0:
            self.fixed.add(v)
        return name

    def name(self, v: SSAValue) -> str:
        return self.names[v]

    def tuple_of(self, values: Sequence[SSAValue]) -> str:
        return "(" + "".join(f"{self.name(v)}, " for v in values) + ")"

    # -- the kernel -------------------------------------------------------------

    def build(self) -> CompiledKernel:
        body = self.kernel.body
        if len(body.blocks) != 1:
            raise _Unsupported
        block = body.block
        args = [self.define(arg) for arg in block.args]
        self.invariant.update(block.args)
        memref_args = tuple((i, self.shapes[arg]) for i, arg in enumerate(block.args)
                            if isinstance(arg.type, MemRefType) and self.shapes[arg] is not None)
        self.line(f"{''.join(f'{n}, ' for n in args)}= args" if args else "pass")
        for arg, n in zip(block.args, args):
            if _is_index(arg.type) or _is_i1(arg.type):
                self.line(f"{n} = {self.const(_from_interpreter(arg.type), 'CONV')}({n})")
        self.line("fl = B.flags")
        self.line("bi = B.index")
        if self.traced:
            self.line("tr, kn, la, sn = R.trace, B.kernel, B.launch, B.stream")
        if self.probe:
            self.line("ks, gl = B.probe_key.append, B.probe_gm.append")
        memo_at = len(self.lines)
        term = self.ops(block)
        if not isinstance(term, a.ReturnOp):
            raise _Unsupported
        self.terminator(term)
        prologue = [f"    POISON(R, {tuple(sorted(self.poison.items()))!r})"] if self.poison else []
        if self.memos:
            prologue.append(f"    M = [None] * {self.memos}")
        self.lines[memo_at:memo_at] = prologue + self.tables
        source = "def kernel(I, R, B, args, LM):\n" + "\n".join(self.lines) + "\n"
        exec(_code(source, self.kernel.sym_name.data), self.ns)
        return CompiledKernel(self.ns["kernel"], memref_args, len(block.args), self.launch_memos, source,
                              tuple(self.load3d.values()), frozenset(written_args(self.kernel)))

    def ops(self, block: Block) -> Operation | None:
        """Emits the ops of `block` but its terminator, which it returns."""
        term = None
        for op in block.ops:
            if op is block.last_op and op.has_trait(IsTerminator):
                term = op
                break
            self.op(op)
        return term

    def op(self, op: Operation) -> None:
        emit = self.emitter(op)
        mark, count = len(self.lines), self.count
        if emit is not None:
            try:
                listens = self.listens(op)
                if listens:
                    self.line(f"W(I, {self.const(op, 'OP')}, {self.tuple_of(op.operands)})")
                emit(op)
                if listens:
                    self.line(f"D(I, {self.const(op, 'OP')}, {self.tuple_of(op.results)})")
                if self.probe:
                    self.probed(op)
                return
            except _Unsupported:
                raise
            except Exception:  # _NotNative, or attributes the closures cannot decode: the interpreter's way
                del self.lines[mark:]
                self.count = count
                for r in op.results:
                    self.invariant.discard(r)
                    self.fixed.discard(r)
        self.fallback(op)

    def terminator(self, op: Operation) -> None:
        """The listener calls a terminator gets (its values are moved by its parent)."""
        if self.listens(op):
            ref = self.const(op, "OP")
            self.line(f"W(I, {ref}, {self.tuple_of(op.operands)})")
            self.line(f"D(I, {ref}, ())")

    def listens(self, op: Operation) -> bool:
        """Whether the code calls the listeners around `op` (`listened_ops`)."""
        return bool(self.listen) and (self.listened is None or isinstance(op, self.listened))

    def probed(self, op: Operation) -> None:
        """A probe's record of an op (see `compile_kernel`): the `block_key` element of the
        event it would report, and its operands when one of them is in gm."""
        if isinstance(op, a.Load3dOp):
            raise _Unsupported
        if not isinstance(op, _REPORTING):
            return
        ref = self.const(op, "OP")
        if isinstance(op, a.MmadOp):
            x, y = op.operands[0], op.operands[1]
            sx, sy = self.shapes.get(x), self.shapes.get(y)
            if sx is None or sy is None:
                self.line(f"ks((id({ref}), {self.name(x)}.nbytes + {self.name(y)}.nbytes))")
                nbytes = None
            else:
                nbytes = sum(int(np.prod(sh, dtype=np.int64)) * to_dtype(v.type.element_type).itemsize
                             for sh, v in ((sx, x), (sy, y)))
        elif isinstance(op, memref.LoadOp | memref.StoreOp):
            self.line(f"ks((id({ref}), {self.name(op.memref)}.itemsize))")
            nbytes = None
        else:
            nbytes = op.nbytes if isinstance(op, a.CopyOp | a.VectorOp) else 0
        if nbytes is not None:
            self.line(f"ks({self.const((id(op), nbytes), 'KEY')})")
        if any(isinstance(v.type, MemRefType) and (a.space_of(v.type) or "gm") == "gm" for v in op.operands):
            self.line(f"gl(({ref}, {self.tuple_of(op.operands)}))")

    def emitter(self, op: Operation) -> Callable[[Operation], None] | None:
        if isinstance(op, a.VectorOp):
            return self.e_vector
        return getattr(self, _EMITTERS.get(type(op), ""), None)

    # -- fallback -------------------------------------------------------------

    def fallback(self, op: Operation) -> None:
        if op.regions or op.has_trait(IsTerminator):
            raise _Unsupported
        if self.probe and type(op) in _ASCEND_OPS:  # it may report an event the probe cannot foresee
            raise _Unsupported
        call = f"{self.const(_fallback_fn(op, self.bitwidth), 'FB')}(I, {self.tuple_of(op.operands)})"
        if op.results:
            results = [self.define(r) for r in op.results]
            for r in op.results:
                self.shapes[r] = None  # whatever the interpreter made
            self.line(f"{''.join(f'{n}, ' for n in results)}= {call}")
        else:
            self.line(call)

    # -- arith and scf --------------------------------------------------------

    def e_constant(self, op: arith.ConstantOp) -> None:
        t, value = op.result.type, op.value
        if _is_index(t) and isinstance(value, IntegerAttr):
            literal = repr(value.value.data)
        elif _is_i1(t) and isinstance(value, IntegerAttr):
            literal = repr(bool(value.value.data))
        elif isinstance(value, IntegerAttr | FloatAttr):  # as the interpreter: the attribute itself
            self.line(f"{self.define(op.result)} = {self.const(value, 'K')}")
            return
        else:
            raise _NotNative
        self.define(op.result)
        self.names[op.result] = f"({literal})" if literal.startswith("-") else literal

    def e_index_binary(self, op: Operation) -> None:
        if not all(_is_index(v.type) for v in (*op.operands, *op.results)):
            raise _NotNative
        lhs, rhs = (self.name(v) for v in op.operands)
        self.line(f"{self.define(op.results[0])} = {_INDEX_BINARY[type(op)].format(lhs, rhs)}")

    def e_cmpi(self, op: arith.CmpiOp) -> None:
        predicate = op.predicate.value.data
        if not (_is_index(op.lhs.type) and _is_index(op.rhs.type)) or predicate not in _CMPI:
            raise _NotNative
        lhs, rhs = self.name(op.lhs), self.name(op.rhs)
        if predicate >= 6:  # unsigned: compare the two's-complement bit patterns
            mask = (1 << self.bitwidth) - 1
            lhs, rhs = f"({lhs} & {mask})", f"({rhs} & {mask})"
        self.line(f"{self.define(op.result)} = {lhs} {_CMPI[predicate]} {rhs}")

    def e_select(self, op: arith.SelectOp) -> None:
        if not _is_i1(op.cond.type):
            raise _NotNative
        c, t, f = (self.name(v) for v in op.operands)
        self.line(f"{self.define(op.result)} = {t} if {c} else {f}")

    def e_for(self, op: scf.ForOp) -> None:
        if not all(_is_index(v.type) for v in (op.lb, op.ub, op.step)) or len(op.body.blocks) != 1:
            raise _Unsupported
        body = op.body.block
        lb, ub, step = self.name(op.lb), self.name(op.ub), self.name(op.step)
        inits = [self.name(v) for v in op.iter_args]
        self.loops += 1
        iv, *carried = (self.define(arg) for arg in body.args)
        for n, init in zip(carried, inits):
            self.line(f"{n} = {init}")
        self.line(f"for {iv} in range({lb}, {ub}, {step}):")
        self.depth += 1
        mark = len(self.lines)
        term = self.ops(body)
        if not isinstance(term, scf.YieldOp):
            raise _Unsupported
        self.terminator(term)
        if carried:
            self.line(f"{''.join(f'{n}, ' for n in carried)}= {self.tuple_of(term.operands)}")
        if len(self.lines) == mark:
            self.line("pass")
        self.depth -= 1
        self.loops -= 1
        for r, n in zip(op.results, carried):
            self.line(f"{self.define(r)} = {n}")

    def e_if(self, op: scf.IfOp) -> None:
        if not _is_i1(op.cond.type):
            raise _Unsupported
        # Not a loop: what a branch at the kernel's top level defines is defined once a block.
        results = [self.define(r) for r in op.results]
        self.line(f"if {self.name(op.cond)}:")
        self.branch(op.true_region, results)
        if op.false_region.blocks:
            self.line("else:")
            self.branch(op.false_region, results)

    def e_sub_block(self, op: a.SubBlockOp) -> None:
        # one vector core's code, inline in program order on that core's ub (the simulator
        # puts its ops on that core's pipes)
        if len(op.body.blocks) != 1:
            raise _Unsupported
        if op.sub_index:
            self.line(f"SUB_ENTER(R, {op.sub_index})")
        if self.ops(op.body.block) is not None:
            raise _Unsupported
        if op.sub_index:
            self.line(f"SUB_LEAVE(R, {op.sub_index})")

    def branch(self, region, results: list[str]) -> None:
        self.depth += 1
        mark = len(self.lines)
        if len(region.blocks) > 1:
            raise _Unsupported
        if region.blocks:
            term = self.ops(region.block)
            if not isinstance(term, scf.YieldOp):
                raise _Unsupported
            self.terminator(term)
            if results:
                self.line(f"{''.join(f'{n}, ' for n in results)}= {self.tuple_of(term.operands)}")
        if len(self.lines) == mark:
            self.line("pass")
        self.depth -= 1

    # -- memref ---------------------------------------------------------------

    def memo(self, op: Operation) -> str | None:
        """Where a view op's result is kept: `LM[k]` when its operands are the same for every
        block of the launch, `M[k]` when they are the same all block long and the op is in a
        loop, else None (taken each time). Kept at its first execution, so an error comes
        when it would."""
        if all(v in self.invariant for v in op.operands):
            k, self.launch_memos = self.launch_memos, self.launch_memos + 1
            self.invariant.update(op.results)
            self.fixed.update(op.results)
            return f"LM[{k}]"
        if self.loops and all(v in self.fixed for v in op.operands):
            k, self.memos = self.memos, self.memos + 1
            self.fixed.update(op.results)
            return f"M[{k}]"
        return None

    def memoized(self, op: Operation, result: str, call: str) -> None:
        """`result = call`, or its memo (see `memo`)."""
        slot = self.memo(op)
        if slot is None:
            self.line(f"{result} = {call}")
        else:
            self.line(f"{result} = {slot}")
            self.line(f"if {result} is None: {result} = {slot} = {call}")

    def e_subview(self, op: memref.SubviewOp) -> None:
        src, dyn = self.name(op.source), [self.name(v) for v in op.operands[1:]]
        shape = self.shapes.get(op.source)
        strides: list = [None]
        spec = machine.SubviewSpec.of(op)
        slow = f"{self.const(_subview_slow(op, spec, strides), 'SV')}(R, {src}, ({''.join(f'{d}, ' for d in dyn)}))"
        res = self.define(op.result)
        fast = None if shape is None else self._subview_guard(op, spec, shape, dyn)
        slot = self.memo(op)
        table = self.table(op) if slot is None else None
        if slot is not None:  # the same tile all block / launch long: taken at its first execution
            self.line(f"{res} = {slot}")
            self.line(f"if {res} is None:")
            self.depth += 1
        elif table is not None:  # a tile of a fixed buffer: taken once for each offset
            key = dyn[0] if len(dyn) == 1 else f"({''.join(f'{d}, ' for d in dyn)})"
            self.line(f"{res} = {table}.get({key})")
            self.line(f"if {res} is None:")
            self.depth += 1
        if fast is None:
            self.line(f"{res} = {slow}")
        else:
            conds, index, space = fast
            if spec.result_strides is not None:
                conds.append(f"{src}.strides == {self.const(strides, 'ST')}[0]")
            if conds:
                self.line(f"if {' and '.join(conds)}:")
                self.depth += 1
            self.line(f"{res} = {src}[{index}]")
            if space is not None:
                self.line(f"if MISALIGNED(R, B, {space!r}, {res}): {res} = {slow}")
            if conds:
                self.depth -= 1
                self.line(f"else: {res} = {slow}")
        if slot is not None:
            self.line(f"{slot} = {res}")
            self.depth -= 1
        elif table is not None:
            self.line(f"{table}[{key}] = {res}")
            self.depth -= 1

    def table(self, op: memref.SubviewOp) -> str | None:
        """Where the tiles a subview in a loop takes of a buffer fixed all launch (block) long
        are kept by their dynamic operands, or None: a dict per launch (block), so a tile
        loop takes each of its tiles once; its checks passed when it was taken."""
        if not self.loops or len(op.operands) < 2:
            return None
        name = f"T{len(self.tables)}"
        if op.source in self.invariant:
            k, self.launch_memos = self.launch_memos, self.launch_memos + 1
            self.tables.append(f"    {name} = LM[{k}]\n    if {name} is None: {name} = LM[{k}] = {{}}")
        elif op.source in self.fixed:
            self.tables.append(f"    {name} = {{}}")
        else:
            return None
        return name

    def _subview_guard(self, op: memref.SubviewOp, spec: machine.SubviewSpec, shape: tuple[int, ...], dyn: list[str]):
        """(conditions, numpy index, space whose 32-byte blocks the tile must start on or None)
        under which the inline slice is the interpreter's subview; None when only the
        interpreter's function can tell (dynamic sizes, a check that fails whatever the
        offsets, a rule that depends on the offsets)."""
        values = iter(dyn)

        def fill(static):
            return [next(values) if x == DYNAMIC_INDEX else x for x in static]

        offsets, sizes, strides = fill(spec.offsets), fill(spec.sizes), fill(spec.strides)
        if not all(isinstance(x, int) for x in (*sizes, *strides)):
            return None
        if not (len(offsets) == len(sizes) == len(strides) == len(shape)):
            return None
        drop = machine.reduced_axes(tuple(sizes), spec.shape)
        if drop is None:
            return None
        conds: list[str] = []
        index = []
        for d, (o, n, st) in enumerate(zip(offsets, sizes, strides)):
            if n < 0 or st < 1:
                return None
            top = shape[d] - 1 - (n - 1) * st if n else None  # the largest offset in bounds
            span = (n - 1) * st + 1 if n else 0
            step = f":{st}" if st != 1 else ""
            if isinstance(o, int):
                if o < 0 or (top is not None and o > top):
                    return None
                index.append(str(o) if d in drop else f"{o}:{o + span}{step}")
            else:
                conds.append(f"0 <= {o}" if top is None else f"0 <= {o} <= {top}")
                index.append(o if d in drop else f"{o}:{o} + {span}{step}")
        index_text = ", ".join(index) + ("," if len(index) == 1 else "")
        if not all(sizes):  # an empty tile: no alignment to check
            return conds, index_text, None
        itemsize = to_dtype(op.source.type.element_type).itemsize
        rule = machine.tile_rule(op, [o if isinstance(o, int) else None for o in offsets], sizes, spec.shape, itemsize)
        if rule == "fractal":
            for x in (*offsets[-2:], *sizes[-2:]):
                if isinstance(x, int):
                    if x % a.FRACTAL:
                        return None
                else:
                    conds.append(f"{x} % {a.FRACTAL} == 0")
        elif rule == "block":
            return conds, index_text, a.space_of(op.source.type)
        elif rule is not None:
            return None
        return conds, index_text, None

    def e_reshape(self, op: Operation) -> None:
        call = f"{self.const(_reshape_fn(op), 'RESHAPE')}(R, {self.name(op.operands[0])})"
        self.memoized(op, self.define(op.results[0]), call)

    def e_cast(self, op: memref.CastOp) -> None:
        res = self.define(op.results[0])
        self.shapes[op.results[0]] = self.shapes.get(op.operands[0])
        if op.operands[0] in self.fixed:
            self.fixed.add(op.results[0])
        if op.operands[0] in self.invariant:
            self.invariant.add(op.results[0])
        self.line(f"{res} = {self.name(op.operands[0])}")

    def e_load(self, op: memref.LoadOp) -> None:
        fn = self.const(_load_fn(op, self.bitwidth), "LOAD")
        arr, *idx = (self.name(v) for v in op.operands)
        self.line(f"{self.define(op.res)} = {fn}(R, B, {arr}, ({''.join(f'{i}, ' for i in idx)}))")

    def e_store(self, op: memref.StoreOp) -> None:
        fn = self.const(_store_fn(op), "STORE")
        value, arr, *idx = (self.name(v) for v in op.operands)
        self.line(f"{fn}(R, B, {value}, {arr}, ({''.join(f'{i}, ' for i in idx)}))")

    # -- ascend ---------------------------------------------------------------

    def e_alloc(self, op: a.AllocOp) -> None:
        res = self.define(op.memref)
        call = f"{self.const(_alloc_fn(op), 'ALLOC')}(R, B)"
        space, offset, shape = op.space, machine.planned_offset(op), self.shapes[op.memref]
        if space == "gm" or offset is None or shape is None:
            self.line(f"{res} = {call}")
            return
        # A planned on-chip buffer: the same view of the run's buffer for every block; the
        # prologue poisons the bytes of all of them a block (see _Run.space).
        self.poison[space] = max(self.poison.get(space, 0), offset + op.nbytes)
        self.memoized(op, res, call)

    def e_aconstant(self, op: a.ConstantOp) -> None:
        self.line(f"{self.define(op.memref)} = {self.const(_constant, 'CONST')}(R, {self.const(op, 'OP')})")

    def e_block_idx(self, op: Operation) -> None:
        self.line(f"{self.define(op.results[0])} = bi")

    def e_block_num(self, op: Operation) -> None:
        self.line(f"{self.define(op.results[0])} = B.count")

    def e_copy(self, op: a.CopyOp) -> None:
        fn = self.const(_copy_fn(op), "COPY")
        self.line(f"{fn}(R, B, {', '.join(self.name(v) for v in op.operands)})")

    def e_mmad(self, op: a.MmadOp) -> None:
        fn = self.const(_mmad_fn(op), "MMAD")
        self.line(f"{fn}(R, B, {', '.join(self.name(v) for v in op.operands)})")

    def e_load3d(self, op: a.Load3dOp) -> None:
        key = semantics.Load3dGeometry.key_of(op)
        geometry = self.load3d.get(key)
        if geometry is None:
            geometry = self.load3d[key] = semantics.Load3dGeometry(op)
        fn = self.const(_load3d_fn(op, geometry), "LOAD3D")
        self.line(f"{fn}(R, B, {', '.join(self.name(v) for v in op.operands)})")

    def e_vector(self, op: a.VectorOp) -> None:
        fn = self.const(_vector_fn(op), "VEC")
        self.line(f"{fn}(R, B, {self.tuple_of(op.operands)})")

    def e_set_flag(self, op: a.SetFlagOp) -> None:
        src, dst, ident = op.key
        key = self.flag_key(op.key)
        self.line(f"fl[{key}] += 1")
        if self.traced:
            detail = self.const({"src": src, "dst": dst, "id": ident}, "DT")  # one per op: events share it
            self.line(f"tr(TE({self.const(op, 'OP')}, {src!r}, kn, bi, la, sn, detail={detail}))")

    def e_wait_flag(self, op: a.WaitFlagOp) -> None:
        src, dst, ident = op.key
        key = self.flag_key(op.key)
        ref = self.const(op, "OP")
        self.line(f"if not fl[{key}]: raise NOT_SET(R, {ref})")
        self.line(f"fl[{key}] -= 1")
        if self.traced:
            detail = self.const({"src": src, "dst": dst, "id": ident}, "DT")
            self.line(f"tr(TE({ref}, {dst!r}, kn, bi, la, sn, detail={detail}))")

    def flag_key(self, key: tuple[str, str, int]) -> str:
        name = self.flags.get(key)
        if name is None:
            name = self.flags[key] = f"F{len(self.flags)}"
            self.ns[name] = key
        return name

    def e_pipe_barrier(self, op: a.PipeBarrierOp) -> None:
        pipe = op.pipe.data
        if self.traced:
            detail = self.const({"pipe": pipe}, "DT")
            self.line(f"tr(TE({self.const(op, 'OP')}, {pipe!r}, kn, bi, la, sn, detail={detail}))")
        elif self.listen:
            self.line("pass")


_ASCEND_OPS = frozenset(a.Ascend.operations)
"""The ops whose interpreter functions report trace events (other dialects' report none)."""

_REPORTING = (a.CopyOp, a.MmadOp, a.VectorOp, memref.LoadOp, memref.StoreOp, a.SetFlagOp, a.WaitFlagOp,
              a.PipeBarrierOp)
"""The compiled ops that report a trace event (load3d does too; a probe does not take it)."""

_EMITTERS: dict[type[Operation], str] = {
    arith.ConstantOp: "e_constant",
    arith.CmpiOp: "e_cmpi",
    arith.SelectOp: "e_select",
    scf.ForOp: "e_for",
    scf.IfOp: "e_if",
    memref.SubviewOp: "e_subview",
    memref.CollapseShapeOp: "e_reshape",
    memref.ExpandShapeOp: "e_reshape",
    memref.CastOp: "e_cast",
    memref.LoadOp: "e_load",
    memref.StoreOp: "e_store",
    a.AllocOp: "e_alloc",
    a.ConstantOp: "e_aconstant",
    a.BlockIdxOp: "e_block_idx",
    a.BlockNumOp: "e_block_num",
    a.CopyOp: "e_copy",
    a.MmadOp: "e_mmad",
    a.Load3dOp: "e_load3d",
    a.SetFlagOp: "e_set_flag",
    a.WaitFlagOp: "e_wait_flag",
    a.PipeBarrierOp: "e_pipe_barrier",
    a.SubBlockOp: "e_sub_block",
    **{t: "e_index_binary" for t in _INDEX_BINARY},
}
