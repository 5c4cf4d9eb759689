"""The ascend interpreter: runs ascend programs with numpy on real buffers.

Built on xDSL's interpreter: func, arith and scf run on xDSL's own
implementations; memrefs and ascend ops run here, one `@impl` per op. Kernel
bodies normally run as Python compiled from them once
(runtime/ascend_compiled.py); both ways keep their state in, and make every
check through, runtime/ascend_machine.py (memory, tiles, flags, trace events)
and compute what runtime/ascend_semantics.py says each op computes, so both
give the same results, errors and trace. Decisions:

* A memref value is a numpy array; a `memref.subview` is a numpy *view*, so a
  tile aliases its buffer exactly as on the device. (xDSL's memref
  implementations use ShapedArray and are not registered.)
* Each block of a launch gets its own poisoned on-chip memory, allocs at
  planned offsets really alias (see runtime/ascend_machine.py).
* Kernels run block after block (block_idx 0..block_dim-1), launches in host
  program order; flags and events are checked (a wait with no set before it
  would deadlock, a kernel must end with no flag left set), alignment of tiles
  is checked at run time, as is the device having each DMA path.
* Every executed ascend op can be reported as a `TraceEvent` (pipe, bytes,
  shape, kernel, block, launch, stream) to a list or callback: the hook a
  simulator times from.

Host arguments (`func.func @main`): inputs carry `{onnx.name = ...}`, outputs
`{onnx.name = ..., ascend.output}` (written by the kernels), the workspace
`{ascend.workspace}`; memrefs the host returns are outputs too, named by their
result attributes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from threadpoolctl import threadpool_limits
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, MemRefType, ModuleOp, StringAttr, UnitAttr
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
from geir.dialects import attr_names
from geir.errors import InterpreterError
from geir.ir.locations import describe
from geir.ir.types import to_dtype
from geir.reference.graph import reference_of
from geir.runtime.ascend_compiled import compiled_body
from geir.runtime.ascend_machine import (
    POISON,
    BlockState,
    RunState,
    TraceEvent,
    alloc,
    check_dma_path,
    check_writable,
    constant_buffer,
    element_name,
    enter_sub_block,
    flag_not_set,
    int_value,
    leave_sub_block,
    poisoned,
    reshape,
    scalar_value,
    subview,
    untouched,
    view_at,
    where,
    write,
)
from geir.reference.collectives import CollectiveError, require
from geir.runtime.ascend_semantics import Load3dOutside, copy_data, load3d_geometry, load3d_plan, vector_kernel
from geir.runtime.interpreter import main_function, module_ranges
from geir.runtime.launch_memo import arg_extents, launch_key, moves
from geir.runtime.overflow import OverflowWatch
from geir.runtime.shape_ranges import bind, crop, crops_of
from geir.target.device import DeviceSpec, load_device

COMPILE_KERNELS = True
"""Default of run_ascend_module(compiled=...): kernel bodies as generated Python."""


# ---------------------------------------------------------------------------
# Run state (runtime/ascend_machine.py) as the interpreter holds it.
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class Stream:
    id: int


@dataclass(eq=False)
class Event:
    id: int
    recorded: int = 0


def _run(interpreter: Interpreter) -> RunState:
    return interpreter.get_data(AscendFunctions, "run", lambda: RunState(load_device()))


def _block(interpreter: Interpreter, op: Operation) -> BlockState:
    block = _run(interpreter).block
    if block is None:
        raise InterpreterError(f"{describe(op)} runs outside a kernel launch")
    return block


def _where(interpreter: Interpreter, op: Operation) -> str:
    return where(_run(interpreter), op)


def _write(interpreter: Interpreter, op: Operation, dst: np.ndarray, value: np.ndarray) -> None:
    write(_run(interpreter), op, dst, value)


def _timing(interpreter: Interpreter, op: Operation, dst: np.ndarray) -> bool:
    """A timing-only run: the op computes nothing (a read-only destination is still its
    error, as when it writes)."""
    run = _run(interpreter)
    if run.timing:
        check_writable(run, op, dst)
    return run.timing


def _emit(interpreter: Interpreter, op: Operation, pipe: str, stream: int | None = None, **kw) -> None:
    run = _run(interpreter)
    if run.trace is None:
        return
    b = run.block
    run.trace(TraceEvent(op, pipe, b.kernel if b else None, b.index if b else None,
                         b.launch if b else None, b.stream if b else stream, **kw))


# ---------------------------------------------------------------------------
# memref on numpy (views).
# ---------------------------------------------------------------------------


@register_impls
class NumpyMemRefFunctions(InterpreterFunctions):
    """memref.subview / collapse_shape / expand_shape / cast as numpy views,
    memref.load / store as scalar accesses (the S pipe)."""

    @impl(memref.SubviewOp)
    def run_subview(self, interpreter: Interpreter, op: memref.SubviewOp, args):
        src, *dyn = args
        return (subview(_run(interpreter), op, src, [int(scalar_value(v)) for v in dyn]),)

    @impl(memref.CollapseShapeOp)
    def run_collapse_shape(self, interpreter, op, args):
        return (reshape(_run(interpreter), op, args[0]),)

    @impl(memref.ExpandShapeOp)
    def run_expand_shape(self, interpreter, op, args):
        return (reshape(_run(interpreter), op, args[0]),)

    @impl(memref.CastOp)
    def run_cast(self, interpreter, op, args):
        return (args[0],)

    @impl(memref.LoadOp)
    def run_load(self, interpreter, op: memref.LoadOp, args):
        arr, *idx = args
        value = arr[tuple(int(scalar_value(i)) for i in idx)]
        _emit(interpreter, op, "S", nbytes=arr.itemsize, dtype=element_name(op.memref.type))
        return (scalar_attr(value.item(), op.res.type, interpreter.index_bitwidth),)

    @impl(memref.StoreOp)
    def run_store(self, interpreter, op: memref.StoreOp, args):
        value, arr, *idx = args
        try:
            arr[tuple(int(scalar_value(i)) for i in idx)] = scalar_value(value)
        except ValueError as e:
            raise InterpreterError(f"{_where(interpreter, op)}: {e}") from None
        _emit(interpreter, op, "S", nbytes=arr.itemsize, dtype=element_name(op.memref.type))
        return ()


@register_impls
class IndexArithFunctions(InterpreterFunctions):
    """arith ops that tiling index math uses and xDSL's interpreter lacks."""

    @staticmethod
    def _int2(interpreter, op, args, fn):
        lhs, rhs = (int(scalar_value(v)) for v in args)
        return (scalar_attr(fn(lhs, rhs), op.result.type, interpreter.index_bitwidth),)

    @impl(arith.SIToFPOp)
    def run_sitofp(self, interpreter, op, args):  # a run-time count as a vector operand (attention's keys)
        return (float(int(scalar_value(args[0]))),)

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
        lhs, rhs = (float(scalar_value(v)) for v in args)
        with np.errstate(all="ignore"):
            q = float(np.float64(lhs) / np.float64(rhs))
        return (FloatAttr(q, op.result.type),)


# ---------------------------------------------------------------------------
# The ascend ops.
# ---------------------------------------------------------------------------


@register_impls
class AscendFunctions(InterpreterFunctions):
    """Buffers, host ops (streams, events, launches), kernel values, DMA, the cube and flags."""

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
        return (view_at(src.reshape(-1).view(np.uint8), op.byte_offset, op.memref.type),)

    @impl(a.ConstantOp)
    def run_constant(self, interpreter, op: a.ConstantOp, args):
        return (constant_buffer(op),)

    # -- host ---------------------------------------------------------------

    @impl(a.StreamOp)
    def run_stream(self, interpreter, op: a.StreamOp, args):
        return (Stream(int_value(op.id)),)

    @impl(a.EventOp)
    def run_event(self, interpreter, op: a.EventOp, args):
        return (Event(int_value(op.id)),)

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

    @impl(a.GearsOp)
    def run_gears(self, interpreter, op: a.GearsOp, args):
        # the verifier keeps it at module level, where run_ascend_module selects a program
        raise InterpreterError(f"{describe(op)}: selects a whole program; run the module holding it")

    @impl(a.LaunchOp)
    def run_launch(self, interpreter, op: a.LaunchOp, args):
        if _run(interpreter).block is not None:
            raise InterpreterError(f"{describe(op)}: kernels cannot launch kernels")
        return self.launch(interpreter, op.kernel_op(), tuple(args[1:]), args[0], op)

    @impl_callable(a.KernelOp)
    def call_kernel(self, interpreter, op: a.KernelOp, args):
        return self.launch(interpreter, op, tuple(args), None, op)

    @staticmethod
    def launch(interpreter: Interpreter, kernel: a.KernelOp, args: tuple, stream: Stream | None, op: Operation):
        """Runs the kernel's blocks one after the other: its compiled body when it has one
        (runtime/ascend_compiled.py), else op by op."""
        live = kernel.attributes.get(attr_names.LIVE_ABOVE)
        if live is not None:  # the host knows n: a kernel with no real row at n is not launched
            at, above = live.get_values()
            if int(np.asarray(args[at]).reshape(-1)[0]) <= above:
                return ()
        run = _run(interpreter)
        index = run.launches
        run.launches += 1
        name = kernel.sym_name.data
        count = kernel.block_count
        detail = {"core_type": kernel.core_type.data, "block_dim": count}
        if run.memo is not None:  # timing only: a launch like an earlier one is not run again
            key = launch_key(kernel, args)
            first = run.memo.get(key)
            if first is not None:
                detail.update(replays=first[0], moves=moves(first[1], arg_extents(args)))
            else:
                run.memo[key] = (index, arg_extents(args))
        if run.trace is not None:
            run.trace(TraceEvent(op, "host", name, None, index, stream.id if stream else None, detail=detail))
        if "replays" in detail:
            return ()
        outer = run.block
        body = compiled_body(interpreter, run, kernel, args) if run.compiled else None
        probe = compiled_body(interpreter, run, kernel, args, probe=True) if body and run.repeats else None
        watched = run.overflow.start(run, kernel, op, index, args) if run.overflow is not None else None
        sid = stream.id if stream else None
        try:
            for b in range(count):
                if probe is not None and AscendFunctions.probed(run, probe, interpreter, name, b, count, index, sid,
                                                                args):
                    continue
                run.block = BlockState(name, b, count, index, sid)
                if body is not None:
                    body(interpreter, run, run.block, args)
                else:
                    interpreter.run_ssacfg_region(kernel.body, args, f"@{name}[{b}]")
                _flags_left(run.block)
        finally:
            run.block = outer
        if watched is not None:
            run.overflow.finish(watched)
        return ()

    @staticmethod
    def probed(run: RunState, probe, interpreter: Interpreter, name: str, b: int, count: int, index: int,
               stream: int | None, args: tuple) -> bool:
        """Timing only: runs block `b`'s probe (ascend_compiled.compile_kernel: every check,
        no trace event) and offers it to `run.repeats`, which takes it when an earlier block
        reported the same events (True: the block is done; False: it runs in full)."""
        run.block = block = BlockState(name, b, count, index, stream)
        trace, run.trace = run.trace, None
        try:
            probe(interpreter, run, block, args)
        finally:
            run.trace = trace
        _flags_left(block)
        return run.repeats(index, b, block.probe_key, block.probe_gm)

    @impl_terminator(a.ReturnOp)
    def run_return(self, interpreter, op, args):
        return ReturnedValues(()), ()

    @impl(a.BlockIdxOp)
    def run_block_idx(self, interpreter, op, args):
        return (scalar_attr(_block(interpreter, op).index, IndexType(), interpreter.index_bitwidth),)

    @impl(a.BlockNumOp)
    def run_block_num(self, interpreter, op, args):
        return (scalar_attr(_block(interpreter, op).count, IndexType(), interpreter.index_bitwidth),)

    @impl(a.SubBlockOp)
    def run_sub_block(self, interpreter, op, args):
        # one vector core's code: run in program order on that core's ub (the simulator times
        # each core's ops on that core's pipes, runtime/simulator.py `sub_block_of`)
        run = _run(interpreter)
        enter_sub_block(run, op.sub_index)
        try:
            interpreter.run_ssacfg_region(op.body, (), f"sub_block {op.sub_index}")
        finally:
            leave_sub_block(run, op.sub_index)
        return ()

    # -- DMA and cube -------------------------------------------------------

    @impl(a.CopyOp)
    def run_copy(self, interpreter, op: a.CopyOp, args):
        src, dst, *quant = args
        path = (op.src_space, op.dst_space)
        check_dma_path(_run(interpreter), op, path)
        if not _timing(interpreter, op, dst):
            _write(interpreter, op, dst, copy_data(op, src, dst.shape, quant[0] if quant else None, dst.dtype))
        _emit(interpreter, op, op.pipe, nbytes=op.nbytes, shape=tuple(dst.shape), dtype=element_name(op.dst.type),
              detail={"src": path[0], "dst": path[1], "transform": op.physical_transform})
        return ()

    @impl(a.MmadOp)
    def run_mmad(self, interpreter, op: a.MmadOp, args):
        x, y, c, *bias = args
        acc = c.dtype
        if not _timing(interpreter, op, c):
            product = np.matmul(x.astype(acc, copy=False), y.astype(acc, copy=False))
            if bias:
                product += bias[0].reshape((-1, 1) if int_value(op.bias_axis) == 0 else (1, -1))
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


def _flags_left(block: BlockState) -> None:
    left = {k: n for k, n in block.flags.items() if n}
    if left:
        flags = ", ".join(f"{s} -> {d} id {i}" for s, d, i in left)
        raise InterpreterError(f"@{block.kernel} block {block.index} ended with flags set but never waited for: {flags}")


@register_impls
class VectorFunctions(InterpreterFunctions):
    """The vector instructions: each computes its value (ascend_semantics.vector_kernel) and
    writes it to its last operand in dst's element type (`run_vector`)."""

    @staticmethod
    def run_vector(interpreter: Interpreter, op: a.VectorOp, args):
        if not _timing(interpreter, op, args[-1]):
            with np.errstate(all="ignore"):
                value = vector_kernel(op)(args)
            _write(interpreter, op, args[-1], value)
        _emit(interpreter, op, "V", nbytes=op.nbytes, shape=tuple(op.dst.type.get_shape()),
              dtype=op.dtype, detail={"kind": op.cost_kind})
        return ()

    @impl(a.VexpOp)
    def run_vexp(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VlogOp)
    def run_vlog(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VsqrtOp)
    def run_vsqrt(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VrsqrtOp)
    def run_vrsqrt(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VrecOp)
    def run_vrec(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VabsOp)
    def run_vabs(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VnegOp)
    def run_vneg(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VreluOp)
    def run_vrelu(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VtanhOp)
    def run_vtanh(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VsigmoidOp)
    def run_vsigmoid(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VerfOp)
    def run_verf(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VsinOp)
    def run_vsin(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VcosOp)
    def run_vcos(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VfloorOp)
    def run_vfloor(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VceilOp)
    def run_vceil(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VroundOp)
    def run_vround(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VsignOp)
    def run_vsign(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VnotOp)
    def run_vnot(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VaddOp)
    def run_vadd(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VsubOp)
    def run_vsub(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VmulOp)
    def run_vmul(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VdivOp)
    def run_vdiv(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VmaxOp)
    def run_vmax(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VminOp)
    def run_vmin(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VandOp)
    def run_vand(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VorOp)
    def run_vor(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VaddsOp)
    def run_vadds(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VmulsOp)
    def run_vmuls(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VmaxsOp)
    def run_vmaxs(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VminsOp)
    def run_vmins(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VlreluOp)
    def run_vlrelu(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VdupOp)
    def run_vdup(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VcopyOp)
    def run_vcopy(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VcmpOp)
    def run_vcmp(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VselectOp)
    def run_vselect(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VcastOp)
    def run_vcast(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VreduceOp)
    def run_vreduce(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VbrcbOp)
    def run_vbrcb(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)

    @impl(a.VtransposeOp)
    def run_vtranspose(self, interpreter, op, args):
        return self.run_vector(interpreter, op, args)


@register_impls
class ReferenceFunctions(InterpreterFunctions):
    """`ascend.reference`: the graph op's numpy kernel on whole gm buffers (the lowering's
    fallback), with the kernels' shape check."""

    @impl(a.ReferenceOp)
    def run_reference(self, interpreter: Interpreter, op: a.ReferenceOp, args):
        n = len(op.ins)
        timing = [_timing(interpreter, op, dst) for dst in args[n:]]  # every destination checked
        if not any(timing):
            self._compute(interpreter, op, args)
        _emit(interpreter, op, "S", nbytes=sum(x.nbytes for x in args), detail={"op": op.op.data})
        return ()


    @staticmethod
    def _compute(interpreter: Interpreter, op: a.ReferenceOp, args) -> None:
        cls = op.graph_op_type()
        n = len(op.ins)
        kwargs = {k: v for k, v in cls.props_to_py(dict(op.attrs.data)).items() if v is not None}
        kwargs.update(a.reference_extra_kwargs(op))  # e.g. trans_data's origin format and shape
        try:
            out = reference_of(cls)(*args[:n], **kwargs)
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


@register_impls
class Load3dFunctions(InterpreterFunctions):
    """`ascend.load3d`: gathers the convolution windows of the l1 box into the l0 tile;
    channels past `channels` and pixels past the tile are zeros, the padding holds the op's
    pad value."""

    @impl(a.Load3dOp)
    def run_load3d(self, interpreter: Interpreter, op: a.Load3dOp, args):
        fm, ih, iw, dst, k, oh, ow = args
        ih, iw, k, oh, ow = (int(scalar_value(v)) for v in (ih, iw, k, oh, ow))
        try:
            base, g = load3d_plan(load3d_geometry(op), fm.shape, ih, iw, k, oh, ow, dst.shape)
        except Load3dOutside as e:
            raise InterpreterError(f"{_where(interpreter, op)}: {e.message(k, ih, iw, fm.shape)}") from None
        src = fm.reshape(-1)[base:]  # a view (a copy of a strided box)
        pad = op.padding_value
        if not _timing(interpreter, op, dst):
            try:
                g.into(src, dst, pad)
            except (ValueError, TypeError):
                _write(interpreter, op, dst, g.tile(src, pad))
        _emit(interpreter, op, "MTE1", nbytes=op.nbytes, shape=tuple(dst.shape), dtype=element_name(op.dst.type),
              detail={"src": "l1", "dst": op.dst_space, "transform": "img2col"})
        return ()


@register_impls
class CollectiveFunctions(InterpreterFunctions):
    """The collectives of an hccl kernel: this rank meets the others of its group through
    the run's communicator (runtime/communicator.py). A timing-only run exchanges nothing;
    its event is the same."""

    @staticmethod
    def _collective(interpreter: Interpreter, op: a.CollectiveOp, args, exchange) -> tuple:
        timing = [_timing(interpreter, op, dst) for dst in args[len(op.ins):]]
        if not any(timing) and not _run(interpreter).timing:
            try:
                comm, rank = require(op.name)
                out = exchange(comm, rank, *[np.asarray(x) for x in args])
            except CollectiveError as e:
                raise InterpreterError(f"{_where(interpreter, op)}: {e}") from None
            if out is not None:
                _write(interpreter, op, args[-1], out)
        _emit(interpreter, op, a.HCCL_PIPE, nbytes=op.nbytes, shape=tuple(args[0].shape),
              dtype=element_name(op.args[0].type),
              detail={"collective": op.KIND, "ranks": op.group})
        return ()

    @impl(a.AllReduceOp)
    def run_all_reduce(self, interpreter, op: a.AllReduceOp, args):
        return self._collective(interpreter, op, args, lambda c, r, x, y: c.all_reduce(
            r, x, op.group, op.reduction.data))

    @impl(a.AllGatherOp)
    def run_all_gather(self, interpreter, op: a.AllGatherOp, args):
        return self._collective(interpreter, op, args, lambda c, r, x, y: c.all_gather(
            r, x, op.group, a.int_value(op.axis) % x.ndim))

    @impl(a.ReduceScatterOp)
    def run_reduce_scatter(self, interpreter, op: a.ReduceScatterOp, args):
        return self._collective(interpreter, op, args, lambda c, r, x, y: c.reduce_scatter(
            r, x, op.group, a.int_value(op.axis) % x.ndim, op.reduction.data))

    @impl(a.AllToAllOp)
    def run_all_to_all(self, interpreter, op: a.AllToAllOp, args):
        return self._collective(interpreter, op, args, lambda c, r, x, y: c.all_to_all(
            r, x, op.group, a.int_value(op.split_axis) % x.ndim, a.int_value(op.concat_axis) % x.ndim))

    @impl(a.SendOp)
    def run_send(self, interpreter, op: a.SendOp, args):
        return self._collective(interpreter, op, args, lambda c, r, x: c.send(r, x, a.int_value(op.peer)))

    @impl(a.RecvOp)
    def run_recv(self, interpreter, op: a.RecvOp, args):
        return self._collective(interpreter, op, args, lambda c, r, y: c.recv(
            r, a.int_value(op.peer), y.shape, y.dtype))


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
    interpreter.register_implementations(VectorFunctions())
    interpreter.register_implementations(Load3dFunctions())
    interpreter.register_implementations(ReferenceFunctions())
    interpreter.register_implementations(CollectiveFunctions())
    return interpreter


@dataclass(frozen=True)
class HostArg:
    """One argument of the host function: role is input, output or workspace."""

    index: int
    name: str
    role: str
    type: MemRefType
    updates: int | None = None
    """An output that is input argument `updates` updated in place (attr_names.UPDATES)."""
    max_position: int | None = None
    """An input read as a KV-cache position: its largest valid value (attr_names.MAX_POSITION)."""

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.get_shape())

    @property
    def dtype(self) -> np.dtype:
        return to_dtype(self.type.element_type)


def host_function(module: ModuleOp) -> func.FuncOp:
    """The host program: `@main` (or the only function), as at graph level."""
    return main_function(module)


def host_args(module: ModuleOp) -> list[HostArg]:
    """The host function's arguments with their names and roles."""
    f = host_function(module)
    attrs = f.arg_attrs.data if f.arg_attrs is not None else ()
    out, counts, named = [], Counter(), set()
    for i, t in enumerate(f.function_type.inputs.data):
        d = attrs[i].data if i < len(attrs) else {}
        if not isinstance(t, MemRefType) or a.space_of(t) != "gm":
            raise InterpreterError(f"host argument #{i} has type {t}; host arguments are gm memrefs")
        role = "workspace" if isinstance(d.get(attr_names.WORKSPACE), UnitAttr) else (
            "output" if isinstance(d.get(attr_names.OUTPUT), UnitAttr) else "input")
        name = d.get(attr_names.ONNX_NAME)
        if isinstance(name, StringAttr):
            named.add(i)
        name = name.data if isinstance(name, StringAttr) else f"{role}{counts[role]}"
        counts[role] += 1
        updates, limit = (d.get(k) for k in (attr_names.UPDATES, attr_names.MAX_POSITION))
        out.append(HostArg(i, name, role, t, *(x.value.data if isinstance(x, IntegerAttr) else None
                                               for x in (updates, limit))))
    if counts["workspace"] > 1:
        raise InterpreterError("the host function has more than one workspace argument")
    # An input without onnx.name is called by its SSA name (`%x` is "x"), as at graph
    # level, unless two names would then be equal.
    hinted = [replace(h, name=f.args[h.index].name_hint or h.name)
              if h.role == "input" and h.index not in named and f.args else h for h in out]
    return hinted if len({h.name for h in hinted}) == len(hinted) else out


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


def gear_of(programs: Sequence[ModuleOp], shapes: Mapping[str, tuple[int, ...]]) -> int | None:
    """The first of a geared model's programs whose inputs have `shapes` (an input not named
    there matches any) - a shape-range program's (range buckets: driver/range_buckets.py)
    any size in its ranges at a ranged dim -, or None."""
    for i, program in enumerate(programs):
        specs = {h.name: tuple(h.shape) for h in host_args(program) if h.role == "input"}
        ranged = {p: r for r in module_ranges(program) for p in r.positions}
        if all((spec := specs.get(n)) is not None and len(spec) == len(s) and all(
                r.lo <= d <= r.hi if (r := ranged.get((n, a))) is not None else d == u
                for a, (d, u) in enumerate(zip(s, spec))) for n, s in shapes.items()):
            return i
    return None


def run_ascend_module(
    module: ModuleOp,
    feeds: Mapping[str, np.ndarray],
    *,
    device: str | DeviceSpec = "ascend910b",
    trace: list | Callable[[TraceEvent], None] | None = None,
    listeners: tuple = (),
    compiled: bool | None = None,
    overflow: list | None = None,
    timing: bool = False,
    memo: bool | dict = True,
    repeats: Callable[[int, int, list, list], bool] | None = None,
    first_launch: int = 0,
) -> dict[str, np.ndarray] | None:
    """Run the host function on named inputs; returns the outputs by name.

    `trace`: a list to append a TraceEvent per executed ascend op to, or a
    callback. `device`: whose buffer sizes and DMA paths apply. `compiled`:
    run kernel bodies as compiled Python (the default, COMPILE_KERNELS) or op by
    op on xDSL's interpreter - same results, checks, errors and trace. `overflow`: a list to
    append a `runtime.overflow.LaunchOverflow` to for each launch whose outputs overflowed or
    saturated from in-range inputs (checked only when given).

    `timing`: a timing-only run (docs/report.md): every op runs its checks and reports its
    trace event, nothing is moved or computed, outputs and the workspace are `untouched`
    memory (none of it resident), a float input not in `feeds` is zeros there too, and the
    result is None; `memo`: a launch whose signature an
    earlier launch had is reported as replaying it (runtime/launch_memo.py), not run - a dict
    given here holds the signatures of earlier runs too (a stage's micro-batches, recorded one
    after another with `first_launch`, replay the first run's launches);
    `repeats(launch, block, pairs, gm)`: each block of a compiled kernel is first probed (its
    checks, no events; `AscendFunctions.probed`) and runs in full only when `repeats` does not
    take it (runtime/simulator.py's `Recorder.repeated`); `first_launch`: the index of the
    first launch in trace events (the runs of a stage recorded one after another). A full
    run of a program with shape-only weights is an error: their numbers do not exist."""
    select = next((op for op in module.ops if isinstance(op, a.GearsOp)), None)
    if select is not None:  # a geared model: the program whose input shapes the feeds have
        programs = select.program_modules()
        shapes = {n: tuple(np.shape(v)) for n, v in feeds.items()}
        i = gear_of(programs, shapes)
        if i is None:
            raise InterpreterError(f"input shapes {shapes} match no program of {describe(select)}")
        return run_ascend_module(programs[i], feeds, device=device, trace=trace, listeners=listeners,
                                 compiled=compiled, overflow=overflow, timing=timing, memo=memo, repeats=repeats)
    spec = load_device(device) if isinstance(device, str) else device
    hargs = host_args(module)
    if not timing:
        shape_only = [op for op in host_function(module).walk() if isinstance(op, a.ConstantOp) and op.is_placeholder]
        if shape_only:
            names = ", ".join(op.memref.name_hint or "?" for op in shape_only[:3])
            raise InterpreterError(
                f"the program has {len(shape_only)} shape-only weight(s) ({names}{', ...' if len(shape_only) > 3 else ''}): "
                f"they have no numbers to compute with; time it without data instead "
                f"(CompiledModel.profile(mode=\"timing\"), geir-run --profile --timing-only)")
    ranges = module_ranges(module)
    sizes: dict[str, int] = {}
    if ranges:  # a shape-range program: any size in its ranges (runtime/shape_ranges.py)
        feeds, sizes = bind(ranges, {h.name: h.shape for h in hargs if h.role == "input"}, feeds, timing)
    inputs = [h for h in hargs if h.role == "input"]
    names = [h.name for h in inputs]
    missing = [h.name for h in inputs if h.name not in feeds and not (timing and h.dtype.kind not in "iub")]
    if missing:
        raise InterpreterError(f"missing input(s): {', '.join(missing)}")
    unknown = set(feeds) - set(names)
    if unknown:
        raise InterpreterError(f"unknown input(s): {', '.join(sorted(unknown))}; inputs are {names}")
    values: list[np.ndarray] = []
    workspace = None
    for h in hargs:
        if h.role == "input" and h.name not in feeds:  # timing only: a float input's values do not matter
            values.append(view_at(untouched(a.nbytes_of(h.type)), 0, h.type))
        elif h.role == "input":
            v = np.asarray(feeds[h.name])
            if v.shape != h.shape:
                raise InterpreterError(f"input '{h.name}' has shape {list(v.shape)}, the program expects {list(h.shape)}")
            if v.dtype != h.dtype and not np.can_cast(v.dtype, h.dtype, "same_kind"):
                raise InterpreterError(f"input '{h.name}' has dtype {v.dtype}, the program expects {h.dtype}")
            if h.max_position is not None and v.size and not 0 <= v.min() <= v.max() <= h.max_position:
                bad = int(v.max()) if v.max() > h.max_position else int(v.min())
                raise InterpreterError(f"input '{h.name}' = {bad} is a KV-cache position past the cache's maximum "
                                       f"length: positions 0 to {h.max_position} fit")
            values.append(np.ascontiguousarray(v, dtype=h.dtype) if timing else
                          np.array(v, dtype=h.dtype, order="C", copy=True))
        elif h.role == "output" and h.updates is not None:
            values.append(values[h.updates])  # one buffer: the program writes what changes
        elif h.role == "output":
            values.append(view_at(untouched(a.nbytes_of(h.type)), 0, h.type) if timing else poisoned(h.shape, h.dtype))
        else:
            n = a.nbytes_of(h.type)
            workspace = untouched(n) if timing else np.full(n, POISON, np.uint8)
            values.append(view_at(workspace, 0, h.type))
    sink = trace.append if isinstance(trace, list) else trace
    signatures = (memo if isinstance(memo, dict) else {} if memo else None) if timing else None
    interpreter = make_ascend_interpreter(module, listeners)
    interpreter.set_data(AscendFunctions, "run", RunState(
        spec, sink, workspace, compiled=COMPILE_KERNELS if compiled is None else compiled,
        overflow=OverflowWatch(overflow.append) if overflow is not None and not timing else None,
        timing=timing, memo=signatures, repeats=repeats if timing else None,
        launches=first_launch))
    f = host_function(module)
    # Per-tile matmuls are small: BLAS threads cost more than they save (and
    # thrash on a shared machine), so the interpreter runs them on one thread.
    # inf / NaN are the device's numbers, not Python's problem: numpy does not warn (the
    # overflow check reports them).
    with threadpool_limits(limits=1, user_api="blas"), np.errstate(all="ignore"):
        results = interpreter.call_op(f.sym_name.data, tuple(values))
    if timing:
        return None
    outputs = [np.array(values[h.index]) for h in hargs if h.role == "output"]
    outputs += [np.array(r) for r in results]
    named = dict(zip(ascend_output_names(module), outputs))
    if ranges:  # module_ranges found arg_attrs: every argument has its dictionary
        attrs = host_function(module).arg_attrs.data
        named = crop(named, {h.name: crops_of(attrs[h.index]) for h in hargs if h.role == "output"}, sizes, ranges)
    return named
