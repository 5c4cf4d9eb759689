"""convert-graph-to-ascend: bufferize a graph program and lower each kernel to the ascend dialect.

Every `func.func` of tensors becomes a host function of gm buffers:

* graph inputs are the host's input arguments and graph outputs its output arguments
  (`{onnx.name, ascend.output}`), written in place by the kernel that produces them;
* constants become `ascend.constant` buffers, each intermediate tensor an `ascend.alloc` in gm,
  laid out one after the other (512-byte aligned) in the `{ascend.workspace}` argument - one
  buffer per tensor for now; a memory-planning pass will reuse them;
* each `graph.fusion` and each op left on its own becomes one `ascend.kernel`, built by the
  first template of `lowering/templates` that takes it (cube, trans_data, vector, data) and
  launched in program order on stream 0. A fusion no template takes as a whole is split: its
  trans_data ops become kernels of their own, the runs of ops between them are tried whole
  again, else one kernel per op; an op no template takes yet becomes a kernel running
  `ascend.reference` (its numpy semantics), marked `fallback` so reports can count them.

Ops whose operands are all known at compile time (shape arithmetic, small constant
expressions) are evaluated here and become constants, as GE folds them before building
kernels.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, OpResult, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import Pure

from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.dialects import formats as L
from geir.dialects.traits import Collective, Contraction, DataMovement, ShapeComputation, ValueGenerator, ViewLike
from geir.ir.types import UnsupportedTypeError, to_dtype
from geir.ir.locations import describe, fused_loc, loc_names
from geir.lowering.kernel_cache import KernelCache
from geir.lowering.templates import build_kernel
from geir.lowering.templates.common import (KernelBuilder, KernelChain, KernelRequest, Extent, LoweringError, gm_type,
                                            KEY_QUANTA, key_quantum, round_up)
from geir.lowering.templates.data import build_copy
from geir.passes.graph.padded_dims import Carried, PaddingError, carry
from geir.target.cost_model import CostModel
from geir.target.device import DEFAULT_DEVICE, MAX_TENSOR_BYTES, load_device
from geir.reference.graph import reference_of
from geir.dialects import attr_names

FOLD_LIMIT = 1 << 16
"""Largest result (elements) evaluated at compile time; shape ops are always folded."""


# ---------------------------------------------------------------------------
# The fallback kernel.
# ---------------------------------------------------------------------------


def reference_kernel(req: KernelRequest) -> a.KernelOp:
    """One `ascend.reference` over whole gm buffers for a single op (`fallback` kernel)."""
    (op,) = req.ops
    assert isinstance(op, g.GraphOp)
    kb = KernelBuilder(req, "vector", 1)
    ins = [kb.inputs[req.inputs.index(v)] for v in op.operands]
    attrs = dict(op.properties)
    if isinstance(op, g.TransDataOp):  # gm buffers carry no encoding: pass origin and shape
        kw = op.kernel_kwargs()
        attrs["extra.origin_format"] = StringAttr(kw["origin_format"])
        attrs["extra.shape"] = DenseArrayBase.from_list(i64, list(kw["shape"]))
    kb.emit(a.ReferenceOp.get(op.name, ins, kb.outputs, attrs))
    return kb.finish(**{attr_names.FALLBACK: UnitAttr()})


def is_fallback(kernel: a.KernelOp) -> bool:
    return attr_names.FALLBACK in kernel.attributes


def fallback_ops(module: ModuleOp) -> list[str]:
    """Graph op names of the fallback kernels of a lowered module (one entry per kernel)."""
    return [ref.op.data for k in module.ops if isinstance(k, a.KernelOp) and is_fallback(k)
            for ref in k.walk() if isinstance(ref, a.ReferenceOp)]


# ---------------------------------------------------------------------------
# Lowering one function.
# ---------------------------------------------------------------------------


def _check_types(op: Operation) -> None:
    for v in (*op.operands, *op.results):
        t = v.type
        if not hasattr(t, "get_shape"):
            continue
        if any(d < 0 for d in t.get_shape()):
            raise LoweringError(f"{describe(op)}: dynamic shape {t} cannot be lowered to ascend: kernels "
                                f"need static shapes (graph-bind-symbols plans a symbolic dim at its range's top)")
        try:
            to_dtype(t.element_type)
        except UnsupportedTypeError:
            raise LoweringError(f"{describe(op)}: element type {t.element_type} has no ascend "
                                f"kernels (supported: float, integer and i1 types)") from None


def _symbol(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_")[:40] or "op"


@dataclass
class _FunctionLowering:
    """The state of lowering one graph function: the buffer of each value, the host body."""

    pass_: ConvertGraphToAscend
    module: ModuleOp
    fn: func.FuncOp
    names: set[str]

    def __post_init__(self) -> None:
        self.spec = load_device(self.pass_.device)
        self.cost = CostModel(self.spec)
        self.tilings: dict[tuple, object] = {}  # cube tilings priced in this run (tiling.py conv_tiling)
        self.kernel_cache = KernelCache()  # a layer's kernels, cloned for the layers like it
        self.buffers: dict[SSAValue, SSAValue] = {}
        self.known: dict[SSAValue, np.ndarray] = {}
        self.kernels: list[a.KernelOp] = []
        self.host_ops: list[Operation] = []
        self.workspace_ops: list[a.AllocOp] = []
        self.workspace_bytes = 0
        self.count = 0
        self.rows: dict[SSAValue, Carried] = {}  # a shape range's dim: where each value holds it
        self.extent: SSAValue | None = None      # the host argument with its run-time size
        self.range_lo = 1                        # and the least size it takes
        self.quantum: int | None = 1             # its positions computed in multiples of (Extent.quantum; None: all)
        self.key_feeders: set[SSAValue] = set()  # values upstream of an attention's keys: computed in quanta
        # an attention whose keys hold a range's dim: the size's host argument, and whether its
        # query rows hold the dim too (request.key_extent)
        self.masked_keys: dict[Operation, tuple[SSAValue, bool]] = {}
        self.key_args: dict[str, SSAValue] = {}  # a kernel that masks padded keys: the size's host argument
        several = sum(isinstance(f, func.FuncOp) and not f.is_declaration for f in self.module.ops) > 1
        self.prefix = f"{_symbol(self.fn.sym_name.data)}_" if several else ""

    # -- buffers ----------------------------------------------------------------------------

    def _constant(self, value: SSAValue, array: np.ndarray) -> SSAValue:
        op = a.ConstantOp.from_array(np.asarray(array))
        if value.name_hint:
            op.memref.name_hint = value.name_hint
        shape_only = isinstance(value, OpResult) and value.op.attributes.get(attr_names.PLACEHOLDER)
        if shape_only is not None:  # a shape-only weight stays one: runs refuse its numbers
            op.attributes[attr_names.PLACEHOLDER] = shape_only
        self.host_ops.append(op)
        return op.memref

    def buffer(self, value: SSAValue) -> SSAValue:
        """The gm buffer of a graph value (a constant is materialised at its first use)."""
        buf = self.buffers.get(value)
        if buf is None:
            array = self.known.get(value)
            if array is None:
                array = g.constant_value_of(value)
            if array is None:
                raise LoweringError(f"value {value.name_hint or ''} of type {value.type} has no buffer "
                                    f"(an elided constant?)")
            buf = self.buffers[value] = self._constant(value, array.reshape(value.type.get_shape()))
        return buf

    def _workspace(self, value: SSAValue) -> SSAValue:
        t = gm_type(value)
        offset = round_up(self.workspace_bytes, a.OFFSET_ALIGN["gm"])
        op = a.AllocOp.get(t, offset)
        if value.name_hint:
            op.memref.name_hint = value.name_hint
        self.workspace_bytes = offset + a.nbytes_of(t)
        self.host_ops.append(op)
        self.buffers[value] = op.memref
        return op.memref

    def result_buffer(self, value: SSAValue) -> SSAValue:
        return self.buffers.get(value) or self._workspace(value)

    # -- compile-time evaluation ------------------------------------------------------------

    def _fold(self, op: Operation) -> bool:
        """Evaluate an op whose operands are known; True if it became constants."""
        if not isinstance(op, g.GraphOp) or isinstance(op, g.FusionOp) or not op.has_trait(Pure):
            return False
        if any(d < 0 for v in (*op.operands, *op.results) for d in v.type.get_shape()):
            return False
        if op.has_trait(ShapeComputation):
            x = op.operands[0].type
            args = [np.broadcast_to(np.zeros((), to_dtype(x.element_type)), x.get_shape())]
        else:
            args = []
            for v in op.operands:
                known = self.known.get(v)
                if known is None:
                    known = g.constant_value_of(v)
                if known is None:
                    return False
                args.append(known)
            size = sum(int(np.prod(r.type.get_shape())) for r in op.results)
            if not op.has_trait(ValueGenerator) and size > FOLD_LIMIT:
                return False
            if any(math.prod(r.type.get_shape()) * np.dtype(to_dtype(r.type.element_type)).itemsize
                   > MAX_TENSOR_BYTES for r in op.results):
                return False  # a generator too large for any device is never allocated here
        out = reference_of(op)(*args, **op.kernel_kwargs())
        outs = out if isinstance(out, tuple) else (out,)
        for r, value in zip(op.results, outs):
            self.known[r] = np.asarray(value, dtype=to_dtype(r.type.element_type)).reshape(r.type.get_shape())
            dst = self.buffers.pop(r, None)
            if dst is not None:  # a graph output: copy the constant into it
                self._copy(op, r, dst)
        return True

    # -- kernels ----------------------------------------------------------------------------

    def _name(self, op: Operation, base: str | None = None, location: Attribute | None = None) -> str:
        names = loc_names(location or op.location)
        if base is None:
            base = _symbol(names[0]) if names else _symbol(op.name.split(".", 1)[-1])
        name = f"{self.prefix}k{self.count}_{base}"
        self.count += 1
        while name in self.names:
            name += "_"
        self.names.add(name)
        return name

    def _request(self, op: Operation, ops: list[Operation], inputs: list[SSAValue], outputs: list[SSAValue],
                 kind: str, base: str | None = None, location: Attribute | None = None) -> KernelRequest:
        location = location or op.location
        name = self._name(op, base, location)
        keys = next((self.masked_keys[o] for o in ops if o in self.masked_keys), None)
        if keys is not None:
            self.key_args[name] = keys[0]
        extent = self._extent(outputs)
        return KernelRequest(
            name=name, ops=ops, inputs=inputs, outputs=outputs, kind=kind,
            device=self.spec, cost=self.cost, double_buffer=self.pass_.double_buffer, location=location,
            extent=extent if isinstance(extent, Extent) else None,
            key_extent=None if keys is None else "queries" if keys[1] else "keys",
            tilings=self.tilings)

    def _extent(self, outputs: Sequence[SSAValue]) -> Extent | str | None:
        """The shape range's dim in the outputs (passes/graph/padded_dims.py), if every output
        holds it alike: the same groups of positions once its axes through the dim's are
        flattened to rows - the real rows are each group's first ones. In a range program, why
        not otherwise (a line for the kernel that computes every row); None without a range."""
        if self.extent is None:
            return None
        forms, groups, axes = set(), set(), set()
        for v in outputs:
            c = self.rows.get(v)
            if c is None:
                return "an output does not hold the range's dim (nothing to skip)"
            shape = L.logical_shape(v.type)
            forms.add((shape[c.axis] // (c.outer * c.inner), c.inner))
            groups.add(math.prod(shape[:c.axis]) * c.outer)
            axes.add(c.axis - len(shape) if c.outer == 1 else 0)
        if len(forms) != 1:
            return "its outputs hold the range's dim in different layouts"
        count, inner = forms.pop()
        quantum = priced = count if self.quantum is None else self.quantum
        if not any(v in self.key_feeders for v in outputs):
            quantum = 1  # no attention reads these rows as keys: past n they may hold anything
        if quantum >= count:
            return (f"an attention reads these rows as keys, computed in whole key quanta ({KEY_QUANTA} "
                    f"positions dividing the range's top): here all {count}")
        return Extent(count, inner, self.range_lo, groups.pop() if len(groups) == 1 else 0, quantum,
                      frozenset(axes), priced)

    def _rows_of_range(self, host: Block) -> None:
        """The host argument of the first shape-range dim (attr_names.EXTENT) whose rows every
        op keeps apart, and where each value holds that dim; and, for every dim, the attentions
        whose keys hold it (their kernels mask the padded keys with its size). A dim some op
        mixes (none should: the driver proved the graph pads exactly) leaves every kernel
        computing all its rows."""
        fn = self.fn
        attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
        names = {d.data[attr_names.ONNX_NAME].data: i for i, d in enumerate(attrs) if attr_names.ONNX_NAME in d.data}
        for i, d in enumerate(attrs):
            positions = d.data.get(attr_names.EXTENT)
            if positions is None:
                continue
            seeds = {}
            for pos in positions.data:
                name, axis = pos.data[0].data, pos.data[1].value.data
                if name not in names:
                    raise LoweringError(f"argument #{i} of @{fn.sym_name.data} is the extent of input '{name}', "
                                        f"which is not an argument")
                seeds[fn.body.block.args[names[name]]] = Carried(axis)
            masked: list[tuple[Operation, bool]] = []
            try:
                rows = carry(fn.body.block, seeds, masked)
            except PaddingError:
                continue
            self.masked_keys.update((op, (host.args[i], queries)) for op, queries in masked)
            if self.extent is not None:
                continue
            self.rows, self.extent = rows, host.args[i]
            bounds = d.data.get(attr_names.RANGE)
            if bounds is not None:
                self.range_lo = bounds.data[0].value.data
            if masked:  # some attention reads the dim as keys: what feeds them is computed in whole key tiles
                self.quantum = key_quantum(bounds.data[1].value.data) if bounds is not None else None
                self.key_feeders = _upstream_of_keys(fn.body.block, [op for op, _ in masked])

    def _launch(self, kernel: a.KernelOp | KernelChain, args: Sequence[SSAValue], outputs: Sequence[SSAValue]
                ) -> None:
        """A launch of the kernel writing `outputs` on `args` and its scratch; a chain's kernels
        one after the other, each given the chain's shared buffers (allocated once) before its
        own scratch."""
        chain = kernel if isinstance(kernel, KernelChain) else KernelChain((kernel,), 0)
        shared = self._scratch(chain.kernels[0], stop=chain.shared)
        for k in chain.kernels:
            self.names.add(k.sym_name.data)
            self.kernels.append(k)
            own = self._scratch(k, start=chain.shared)
            extent = [self.extent] if attr_names.EXTENT in k.attributes else []
            if self.extent is not None and not extent and attr_names.KEY_EXTENT not in k.attributes:
                k.attributes[attr_names.ALL_ROWS] = StringAttr(self._all_rows_reason(k, outputs))
            keys = self.key_args.get(k.sym_name.data)
            if keys is not None and attr_names.KEY_EXTENT not in k.attributes:
                raise LoweringError(f"kernel @{k.sym_name.data}: its attention's keys hold a shape range's dim, "
                                    f"but its template does not mask the padded keys; give the sizes as gears")
            extent += [keys] if keys is not None else []
            self.host_ops.append(a.LaunchOp.get(k.sym_name.data, self.stream, [*args, *extent, *shared, *own]))

    def _all_rows_reason(self, kernel: a.KernelOp, outputs: Sequence[SSAValue]) -> str:
        """Why a range program's kernel computes every row of the range's dim (one line)."""
        why = self._extent(outputs)
        if isinstance(why, str):
            return why
        template = kernel.attributes.get(attr_names.TEMPLATE)
        t = template.data if isinstance(template, StringAttr) else "reference"
        if t in ("conv", "pool", "attention"):
            return f"the {t} template takes the extent only where the dim leads its outputs (a batch)"
        if t in ("matmul", "row"):
            return f"the {t} template's tiles here do not start at the dim's groups of rows, so none is skipped whole"
        return f"the {t} template takes no extent (of data movement, only a gather skips rows)"

    def _scratch(self, kernel: a.KernelOp, start: int = 0, stop: int | None = None) -> list[SSAValue]:
        """Workspace buffers for the kernel's own gm arguments (`geir.scratch`), those from
        `start` up to `stop`."""
        count = kernel.attributes.get(attr_names.SCRATCH)
        types = kernel.function_type.inputs.data[-count.value.data:] if count else ()
        types = types[start:stop]
        out = []
        for t in types:
            offset = round_up(self.workspace_bytes, a.OFFSET_ALIGN["gm"])
            op = a.AllocOp.get(t, offset)
            op.memref.name_hint = f"{kernel.sym_name.data}_scratch"
            self.workspace_bytes = offset + a.nbytes_of(t)
            self.host_ops.append(op)
            out.append(op.memref)
        return out

    def lower_op(self, op: Operation) -> None:
        if isinstance(op, g.ConstantOp) or self._fold(op):
            return
        _check_types(op)
        if isinstance(op, g.FusionOp):
            self.lower_fusion(op)
            return
        if isinstance(op, g.KvCacheWriteOp) and self._cache_write(op):
            return
        if not isinstance(op, g.GraphOp):
            raise LoweringError(f"{describe(op)} cannot be lowered to ascend (not a graph op)")
        if _empty(op.results):
            for r in op.results:  # nothing to compute: the buffers exist, no kernel fills them
                self.result_buffer(r)
            return
        inputs = list(op.operands)
        outputs = list(op.results)
        req = self._request(op, [op], inputs, outputs, _kind_of(op))
        kernel = self.kernel_cache.build(req, build_kernel)
        if kernel is None and any(L.is_formatted(v.type) for v in (*inputs, *outputs)) \
                and not isinstance(op, g.TransDataOp):
            self.count -= 1
            self.names.discard(req.name)
            self._plain_fallback(op)
            return
        kernel = kernel or reference_kernel(req)
        if _ambiguous(outputs):
            _tag_outputs(kernel, outputs)
        args = [self.buffer(v) for v in inputs]
        args += [self.result_buffer(v) for v in outputs]
        self._launch(kernel, args, outputs)

    def _cache_write(self, op: g.KvCacheWriteOp) -> bool:
        """The rows of a KV-cache write, into the cache's own buffer when the function updates
        that argument in place (`self.updated`), else into the result after a copy of the
        cache. False if the kv_cache template does not take it (the fallback runs it whole)."""
        cache, update, position = op.operands
        result = op.results[0]
        req = self._request(op, [op], [update, position], [result], "data")
        kernel = self.kernel_cache.build(req, build_kernel)
        if kernel is None:
            self.count -= 1
            self.names.discard(req.name)
            return False
        out = self._cache_out(op, result)
        self._launch(kernel, [self.buffer(update), self.buffer(position), out], [result])
        return True

    def _cache_out(self, op: g.KvCacheWriteOp, result: SSAValue) -> SSAValue:
        """The buffer a cache write writes its rows into: the cache's own when the function
        updates it in place, else the result's after a copy of the cache. Records the run-time
        limit of a position that is a function argument (attr_names.MAX_POSITION)."""
        cache, update, position = op.operands
        position = _outer(position)
        if isinstance(position, BlockArgument) and position.owner is self.fn.body.block:
            axis = op.attrs()["axis"]
            room = cache.type.get_shape()[axis] - update.type.get_shape()[axis]
            self.max_position[position.index] = min(room, self.max_position.get(position.index, room))
        out = self.result_buffer(result)
        if result not in self.updated:
            self._copy(op, cache, out)
        return out

    def _plain_fallback(self, op: g.GraphOp) -> None:
        """An op on formatted tensors no template takes: its numpy semantics are on logical
        arrays, so it runs on plain copies - trans_data kernels to its operands' origin
        formats, the fallback, and trans_data kernels back to its results' formats."""
        plain_ins = []
        for v in op.operands:
            if L.is_formatted(v.type):
                conv = g.TransDataOp.build_op([v], src_format=L.storage_of(v.type), dst_format=L.origin_of(v.type))
                # located at the producer: its buffer is the producer's tensor (geir-compare)
                conv.location = v.owner.location if isinstance(v.owner, Operation) else op.location
                self.lower_op(conv)
                v = conv.results[0]
            plain_ins.append(v)
        clone = type(op).create(operands=plain_ins, result_types=[L.logical_type(r.type) for r in op.results],
                                properties=dict(op.properties), attributes=dict(op.attributes))
        clone.location = op.location
        for r, plain in zip(op.results, clone.results):
            if not L.is_formatted(r.type):
                self.buffers[plain] = self.result_buffer(r)
        self.lower_op(clone)
        for r, plain in zip(op.results, clone.results):
            if L.is_formatted(r.type):
                back = g.TransDataOp.build_op([plain], [r.type], src_format=L.origin_of(r.type),
                                              dst_format=L.storage_of(r.type))
                self.buffers[back.results[0]] = self.result_buffer(r)
                back.location = op.location
                self.lower_op(back)

    def lower_fusion(self, fusion: g.FusionOp) -> None:
        block = fusion.body.block
        for arg, operand in zip(block.args, fusion.inputs):
            self.buffers[arg] = self.buffer(operand)
        body = fusion.inner_ops()
        consts = [op.results[0] for op in body if isinstance(op, g.ConstantOp)]
        ops = [op for op in body if not isinstance(op, g.ConstantOp)]
        for op in ops:
            _check_types(op)
        yielded = list(fusion.yield_op().values)
        if _empty(fusion.outputs):
            for r in fusion.outputs:
                self.result_buffer(r)
            return
        # Each result's buffer; a yielded value computed in the body is written there in place,
        # one that already has a buffer (a block argument, a constant, a value yielded twice)
        # is written there by the kernel too (or copied, if the fusion is split).
        outs = []
        for value, result in zip(yielded, fusion.outputs):
            placed = value in self.buffers or isinstance(value.owner, g.ConstantOp)
            buf = self.result_buffer(result)
            if not placed:
                self.buffers[value] = buf
            outs.append(buf)
        read = [c for c in consts if c in yielded or any(u.operation in ops for u in c.uses)]
        inputs = [*block.args, *read]
        req = self._request(fusion, ops, inputs, yielded, fusion.kind.data)
        kernel = self.kernel_cache.build(req, build_kernel)
        if kernel is not None:
            if all(isinstance(v, OpResult) and v.op in ops for v in yielded) and _ambiguous(yielded):
                _tag_outputs(kernel, yielded)
            for value, result in zip(yielded, fusion.outputs):  # a fused cache write's rows
                if isinstance(write := value.owner, g.KvCacheWriteOp):
                    self._cache_out(write, result)
            self._launch(kernel, [self.buffer(v) for v in inputs] + outs, yielded)
            return
        # No template takes the fusion as a whole. Its trans_data ops (graph-layout converts
        # where formats change, inside fusions too) become kernels of their own; in the runs of
        # ops between them, the longest runs a template takes become one kernel each, the rest
        # one kernel per op. Values cross the pieces through gm.
        self.count -= 1
        self.names.discard(req.name)
        runs: list[list[Operation]] = [[]]
        for op in ops:
            if isinstance(op, g.TransDataOp):
                runs += [[op], []]
            else:
                runs[-1].append(op)
        for run in runs:
            self._lower_run(fusion, run)
        for value, buf in zip(yielded, outs):
            if self.buffer(value) is not buf:
                self._copy(fusion, value, buf)

    def _lower_run(self, fusion: g.FusionOp, ops: list[Operation]) -> None:
        """Ops of a split fusion, in order: from each op, the longest run of two or more that a
        template takes whole is one kernel; an op that starts no such run is lowered alone."""
        i = 0
        while i < len(ops):
            best, end = None, i
            for j in range(i + 2, len(ops) + 1):
                piece = self._try_piece(fusion, ops[i:j])
                if piece is None:
                    break
                best, end = piece, j
            if best is None:
                self.lower_op(ops[i])
                i += 1
                continue
            kernel, inputs, outputs = best
            # the name the probes gave it (each probe took the same next name, then freed it;
            # the launch takes it again)
            self.count += 1
            _tag_outputs(kernel, outputs)
            self._launch(kernel, [self.buffer(v) for v in inputs] + [self.result_buffer(v) for v in outputs], outputs)
            i = end

    def _try_piece(self, fusion: g.FusionOp, ops: list[Operation]
                   ) -> tuple[a.KernelOp | KernelChain, list[SSAValue], list[SSAValue]] | None:
        """Ops of a split fusion as one kernel located at their nodes, with its inputs and
        outputs; None if no template takes them. Nothing is launched, and the kernel's name is
        left free (a longer run may take it)."""
        inside = set(ops)
        defined = {r for op in ops for r in op.results}
        inputs = list(dict.fromkeys(v for op in ops for v in op.operands if v not in defined))
        outputs = [r for op in ops for r in op.results if any(u.operation not in inside for u in r.uses)]
        kinds = {_kind_of(op) for op in ops}
        kind = fusion.kind.data if "cube" in kinds else "vector" if "vector" in kinds else "data"
        location = fused_loc(n for op in ops for n in loc_names(op.location))
        req = self._request(fusion, ops, inputs, outputs, kind, location=location)
        kernel = self.kernel_cache.build(req, build_kernel)
        self.count -= 1
        self.names.discard(req.name)
        return None if kernel is None else (kernel, inputs, outputs)

    def _copy(self, at: Operation, value: SSAValue, dst: SSAValue) -> None:
        if _empty([value]):
            return
        req = self._request(at, [], [value], [value], "data", "copy")
        self._launch(build_copy(req), [self.buffer(value), dst], [value])

    # -- the function -----------------------------------------------------------------------

    def run(self) -> func.FuncOp:
        fn = self.fn
        ret = fn.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        arg_attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
        res_attrs = fn.res_attrs.data if fn.res_attrs is not None else ()

        types, attrs, hints = [], [], []
        for i, arg in enumerate(fn.body.block.args):
            _check_value(arg, f"argument #{i} of @{fn.sym_name.data}")
            types.append(gm_type(arg))
            attrs.append(arg_attrs[i] if i < len(arg_attrs) else DictionaryAttr({}))
            hints.append(arg.name_hint)
        n_in = len(types)
        self.updated = _updated_in_place(fn)
        self.max_position: dict[int, int] = {}
        for i, value in enumerate(ret.arguments):
            _check_value(value, f"result #{i} of @{fn.sym_name.data}")
            d = dict(res_attrs[i].data) if i < len(res_attrs) else {}
            d[attr_names.OUTPUT] = UnitAttr()
            if value in self.updated:
                d[attr_names.UPDATES] = IntegerAttr(self.updated[value], i64)
            types.append(gm_type(value))
            attrs.append(DictionaryAttr(d))
            hints.append(value.name_hint)
        host = Block(arg_types=types)
        for arg, hint in zip(host.args, hints):
            arg.name_hint = hint
        for arg, harg in zip(fn.body.block.args, host.args):
            self.buffers[arg] = harg
        self._rows_of_range(host)
        # Outputs are written in place by their producer, unless the value already has a
        # buffer (an input, a constant, another output): then a copy kernel fills them.
        copies: list[tuple[SSAValue, SSAValue]] = []
        for value, harg in zip(ret.arguments, host.args[n_in:]):
            if value in self.buffers or isinstance(value.owner, g.ConstantOp):
                copies.append((value, harg))
            else:
                self.buffers[value] = harg

        stream = a.StreamOp.get(0)
        stream.results[0].name_hint = "stream"
        self.stream = stream.results[0]
        self.host_ops.append(stream)
        for op in list(fn.body.block.ops)[:-1]:
            self.lower_op(op)
        for value, harg in copies:
            self._copy(ret, value, harg)
        for i, limit in self.max_position.items():
            attrs[i] = DictionaryAttr({**attrs[i].data, attr_names.MAX_POSITION: IntegerAttr(limit, i64)})

        if self.workspace_bytes:
            ws = host.insert_arg(a.memref_type([round_up(self.workspace_bytes, a.OFFSET_ALIGN["gm"])],
                                               IntegerType(8), "gm"), len(host.args))
            ws.name_hint = "workspace"
            types.append(ws.type)
            attrs.append(DictionaryAttr({attr_names.WORKSPACE: UnitAttr()}))
        for op in self.host_ops:
            host.add_op(op)
        host.add_op(func.ReturnOp())
        new = func.FuncOp(fn.sym_name.data, FunctionType.from_lists(types, []), Region(host))
        new.arg_attrs = ArrayAttr(attrs)
        new.location = fn.location
        return new


def _outer(value: SSAValue) -> SSAValue:
    """A fusion's block argument as the fusion's operand (other values as they are)."""
    if isinstance(value, BlockArgument) and isinstance(owner := value.owner.parent_op(), g.FusionOp):
        return owner.inputs[value.index]
    return value


def _cache_write_of(value: SSAValue) -> g.KvCacheWriteOp | None:
    """The kv_cache_write that computes a value: its own, or the one a fusion yields for it."""
    op = value.owner
    if isinstance(op, g.FusionOp):
        op = op.yield_op().values[value.index].owner
    return op if isinstance(op, g.KvCacheWriteOp) else None


def _updated_in_place(fn: func.FuncOp) -> dict[SSAValue, int]:
    """Results that are an argument updated in place, with its index: a kv_cache_write (alone
    or in a fusion) whose cache is an argument nothing else reads, returned once. The runtime
    then passes one buffer for the argument and the result (attr_names.UPDATES). A fused
    write's own result is in the map too, for when the fusion is lowered in pieces."""
    returned = Counter(fn.body.block.last_op.operands)
    out = {}
    for value, times in returned.items():
        op = _cache_write_of(value)
        if op is None or times != 1:
            continue
        cache = _outer(op.operands[0])
        if isinstance(cache, BlockArgument) and cache.owner is fn.body.block and len(list(cache.uses)) == 1 \
                and cache not in returned:
            out[value] = out[op.results[0]] = cache.index
    return out


def _empty(values: Sequence[SSAValue]) -> bool:
    """Every value has no elements (a zero-size dim): a kernel would have nothing to write."""
    return bool(values) and all(math.prod(L.logical_shape(v.type)) == 0 for v in values)


def _check_value(value: SSAValue, what: str) -> None:
    t = value.type
    if not hasattr(t, "get_shape"):
        raise LoweringError(f"{what} has type {t}; only tensors can be lowered to ascend")
    if any(d < 0 for d in t.get_shape()):
        raise LoweringError(f"{what} has a dynamic shape {t}; kernels need static shapes (graph-bind-symbols "
                            f"plans a symbolic dim at its range's top)")
    try:
        to_dtype(t.element_type)
    except UnsupportedTypeError:
        raise LoweringError(f"{what} has element type {t.element_type}, which has no ascend kernels") from None


def _ambiguous(outputs: Sequence[SSAValue]) -> bool:
    """Whether the kernel's node names and output shapes may not say which node output each
    output argument holds (geir-compare would guess): several outputs, or one that holds a
    node's output other than its first (a precision cast of a split's second part)."""
    return len(outputs) > 1 or any(isinstance(v, OpResult) and g.node_output(v)[0] != 0 for v in outputs)


def _tag_outputs(kernel: a.KernelOp | KernelChain, outputs: Sequence[SSAValue]) -> None:
    """Record which node output (index, node names: graph.node_output) each output argument
    holds (on every kernel of a chain: they all take the outputs)."""
    tags = [g.node_output(v) if isinstance(v, OpResult) else (0, []) for v in outputs]
    for k in kernel.kernels if isinstance(kernel, KernelChain) else (kernel,):
        k.attributes[attr_names.OUTPUTS] = ArrayAttr(
            [ArrayAttr([IntegerAttr(index, i64), *map(StringAttr, names)]) for index, names in tags])


def _upstream_of_keys(block: Block, attentions: Sequence[Operation]) -> set[SSAValue]:
    """Every value an attention's keys (and values) are computed from, through the function's
    ops; a fusion holding the attention counts whole (its outputs and inner values too), as
    does each fusion upstream of it (its inner values: a kernel's outputs are yielded ones)."""
    def top(op: Operation) -> Operation:
        while op.parent_block() is not block and op.parent_op() is not None:
            op = op.parent_op()
        return op

    seen: set[SSAValue] = set()
    stack: list[SSAValue] = []
    for att in attentions:
        holder = top(att)
        if holder is att:
            stack += list(att.operands[1:3])
        else:
            stack += list(holder.results)
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, OpResult):
            for inner in v.op.walk():
                seen.update(inner.results)
            stack += list(v.op.operands)
    return seen


def _kind_of(op: Operation) -> str:
    """The kind of the kernel one op becomes (KernelRequest.kind)."""
    if op.has_trait(Collective):
        return "collective"
    if op.has_trait(Contraction):
        return "cube"
    if op.has_trait(ViewLike) or op.has_trait(DataMovement) or isinstance(op, g.ExpandOp):
        return "data"
    return "vector"


# ---------------------------------------------------------------------------
# The pass.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvertGraphToAscend(ModulePass):
    """Bufferize each graph function into a host function of gm buffers and lower every fusion
    and op left alone to an ascend kernel (tiled through the device's buffers), launched in
    program order on one stream."""

    name = "convert-graph-to-ascend"

    device: str = DEFAULT_DEVICE
    """The device whose buffer sizes, core counts and costs shape the kernels."""
    double_buffer: bool = True
    """Ping-pong the DMA buffers of the tile loops so copies overlap compute."""

    def __post_init__(self) -> None:
        load_device(self.device)  # an unknown device is an option error

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fns = [f for f in op.ops if isinstance(f, func.FuncOp) and not f.is_declaration]
        names = {k.sym_name.data for k in op.ops if isinstance(k, a.KernelOp)}
        for fn in fns:
            lowering = _FunctionLowering(self, op, fn, names)
            host = lowering.run()
            for kernel in lowering.kernels:
                op.body.block.insert_op_before(kernel, fn)
            op.body.block.insert_op_before(host, fn)
            fn.detach()
            fn.erase(safe_erase=False)
