"""The ascend dialect: buffers, DMA, cube, vector and sync of the Da Vinci core.

Hardware level, buffer semantics. Data lives in builtin memrefs whose memory
space is a string, `"gm" | "l1" | "l0a" | "l0b" | "l0c" | "ub" | "bt" | "fb"` (an attribute upstream
MLIR accepts as a memory space, so every stage parses in mlir-opt); every op says which unit runs
it (its pipe) and what it moves, so the interpreter can execute it with numpy
and a simulator can time it from the IR alone. docs/ascend.md is the reference.

* Host program: a `func.func` taking the gm buffers. It creates streams and
  events (`ascend.stream`, `ascend.event`), launches kernels on streams
  (`ascend.launch`) and orders streams with `ascend.event_record/wait`.
  Weights are `ascend.constant` buffers in gm, workspace buffers
  `ascend.alloc` in gm.
* Kernels: `ascend.kernel` symbols with a core type (cube, vector, mix) and a
  block dim; the body runs once per block (`ascend.block_idx`) and is made of
  `ascend.alloc` (on-chip buffers, with a planned byte `offset`),
  `memref.subview` tiles, `scf.for` loops, `ascend.copy` (DMA; the engine
  follows from the spaces), `ascend.mmad` (cube), `ascend.v*` (vector, on ub)
  and `ascend.set_flag / wait_flag / pipe_barrier` between pipes.
* Cube buffers (l1, l0a, l0b, l0c) hold logical 2-D tiles whose last two dims
  are whole 16x16 fractals; the physical fractal (NZ) arrangement is implied
  and never spelled out. ub buffers are row-major, every row on a 32-byte block.

Ops take their sources first and the destination last (`ascend.copy %src,
%dst`, `ascend.vadd %a, %b, %dst`, `ascend.mmad %a, %b, %c`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Iterable, Sequence
from typing import ClassVar

import numpy as np

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DYNAMIC_INDEX,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    f16,
    f32,
    i64,
)
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    OpResult,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    attr_def,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    CallableOpInterface,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    Pure,
    SymbolOpInterface,
    SymbolTable,
    SymbolUserOpInterface,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from geir.ir.types import UnsupportedTypeError, is_float, to_dtype
from geir.ir.locations import describe
from types import MappingProxyType
from geir.dialects import attr_names

# ---------------------------------------------------------------------------
# Hardware vocabulary.
# ---------------------------------------------------------------------------

SPACES = ("gm", "l1", "l0a", "l0b", "l0c", "ub", "bt", "fb")
"""bt, the cube's bias table, and fb, the FIX pipe's buffer of quantization parameters, are
small buffers filled from l1 (`ascend.mmad`'s bias, `ascend.copy`'s quant)."""

# The DMA engine (pipe) of each path of the Da Vinci core. A path is possible on a device only if
# its file gives it a rate; this table only says which pipe carries it.
DMA_ENGINES: Mapping[tuple[str, str], str] = MappingProxyType({
    ("gm", "ub"): "MTE2", ("gm", "l1"): "MTE2", ("gm", "l0a"): "MTE2", ("gm", "l0b"): "MTE2",
    ("l1", "l0a"): "MTE1", ("l1", "l0b"): "MTE1", ("l1", "ub"): "MTE1", ("l1", "bt"): "MTE1", ("l1", "fb"): "MTE1",
    ("ub", "gm"): "MTE3", ("ub", "l1"): "MTE3", ("l1", "gm"): "MTE3",
    ("l0c", "gm"): "FIX", ("l0c", "l1"): "FIX", ("l0c", "ub"): "FIX",
})


CUBE_SPACES = frozenset({"l1", "l0a", "l0b", "l0c", "bt", "fb"})
VECTOR_SPACES = frozenset({"ub"})
ON_CHIP = CUBE_SPACES | VECTOR_SPACES

PIPES = ("S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX")
CORE_TYPES = ("cube", "vector", "mix", "hccl")
CORE_PIPES = {
    "cube": frozenset({"S", "M", "MTE1", "MTE2", "FIX"}),
    "vector": frozenset({"S", "V", "MTE2", "MTE3"}),
    "mix": frozenset(PIPES),
    "hccl": frozenset(),
}
"""The pipes of each core type (910B: AIC has no V/MTE3, AIV no M/MTE1/FIX). An `hccl` kernel
is a collective task: it takes no AI core, its one collective op runs on the links."""

HCCL = "hccl"
HCCL_PIPE = "HCCL"
"""The pipe a collective's trace event names: the links, not a pipe of an AI core."""

COPY_PIPES = DMA_ENGINES
"""(src space, dst space) -> pipe of every DMA path. The
dialect accepts every path of the table; a device without a path (e.g. l1->ub
on the 910B) rejects it when the program runs."""

BLOCK_BYTES = 32
"""ub/l1 rows start on 32-byte blocks (DMA bursts and vector repeats)."""
OFFSET_ALIGN = {"gm": 512, "l1": 32, "ub": 32, "l0a": 512, "l0b": 512, "l0c": 512, "bt": 32, "fb": 32}
"""Byte alignment of a planned `offset` per space (GE workspace: 512 B)."""
FRACTAL = 16
"""Rows (and, but for 1-byte types, columns) of one cube fractal."""
L0_BYTES = 512
"""One fractal: an l0 buffer is a whole number of them."""
FLAG_IDS = 8
"""Event ids 0..7 of set_flag / wait_flag per core."""


def fractal_c0(element_type: Attribute) -> int:
    """Columns of a fractal: 32 for 1-byte types, else 16 (GE's C0)."""
    return 32 if to_dtype(element_type).itemsize == 1 else 16


# ---------------------------------------------------------------------------
# Attributes and types.
# ---------------------------------------------------------------------------


class Space(StrEnum):
    GM = "gm"
    L1 = "l1"
    L0A = "l0a"
    L0B = "l0b"
    L0C = "l0c"
    UB = "ub"
    BT = "bt"
    FB = "fb"


SPACE_NAMES = frozenset(s.value for s in Space)
_SPACE_LIST = ", ".join(f'"{s.value}"' for s in Space)


@irdl_attr_definition
class StreamType(ParametrizedAttribute, TypeAttribute):
    """`!ascend.stream`: an in-order queue of kernel launches."""

    name = "ascend.stream"


@irdl_attr_definition
class EventType(ParametrizedAttribute, TypeAttribute):
    """`!ascend.event`: recorded on one stream, waited for on another."""

    name = "ascend.event"


def space(name: str) -> StringAttr:
    """The memory space attribute of `name`: the string itself (`memref<16xf16, "ub">`).
    Upstream MLIR takes an integer, string or dictionary as a memref memory space (or a
    registered dialect's attribute); a string reads as what it is."""
    return StringAttr(Space(name).value)


def memref_type(
    shape: Sequence[int], element_type: Attribute, space_name: str, layout: Attribute | None = None
) -> MemRefType:
    """`memref<shape x elt, [layout,] "space_name">`."""
    return _memref_type(tuple(shape), element_type, space_name, layout or NoneAttr())


@functools.lru_cache(maxsize=4096)
def _memref_type(shape: tuple[int, ...], element_type: Attribute, space_name: str, layout: Attribute) -> MemRefType:
    # attributes are immutable values, and building one verifies its parameters: a kernel
    # template asks for the same few types hundreds of times
    return MemRefType(element_type, list(shape), layout, space(space_name))


def space_of(t: Attribute) -> str | None:
    """The ascend memory space of a memref type, else None."""
    if isinstance(t, MemRefType) and isinstance(t.memory_space, StringAttr) and t.memory_space.data in SPACE_NAMES:
        return t.memory_space.data
    return None


def nbytes_of(t: MemRefType) -> int:
    return math.prod(t.get_shape()) * to_dtype(t.element_type).itemsize


def subview(
    source: SSAValue | Operation,
    offsets: Sequence[SSAValue | int],
    sizes: Sequence[int],
    strides: Sequence[int] | None = None,
    *,
    reduce_rank: bool = False,
) -> memref.SubviewOp:
    """A `memref.subview` tile of `source` at (SSA or constant) offsets with
    static sizes; the result type (strided layout, same space) is inferred."""
    source = SSAValue.get(source)
    strides = tuple(strides) if strides is not None else (1,) * len(sizes)
    t = source.type
    assert isinstance(t, MemRefType)
    static = tuple(o if isinstance(o, int) else None for o in offsets)  # what the type depends on
    sizes = tuple(sizes)
    result = _subview_type(t, static, sizes, strides, reduce_rank)
    dynamic = [SSAValue.get(o) for o in offsets if not isinstance(o, int)]
    return memref.SubviewOp(source, dynamic, [], [], _i64_array(tuple(DYNAMIC_INDEX if o is None else o for o in static)),
                            _i64_array(sizes), _i64_array(strides), result)


@functools.lru_cache(maxsize=4096)
def _i64_array(values: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, values)


@functools.lru_cache(maxsize=4096)
def _subview_type(t: MemRefType, offsets: tuple[int | None, ...], sizes: tuple[int, ...],
                  strides: tuple[int, ...], reduce_rank: bool) -> MemRefType:
    """The result type of a subview at `offsets` (None: an SSA value, a dynamic offset, as
    infer_result_type reads any offset that is not an int)."""
    return memref.SubviewOp.infer_result_type(t, list(offsets), list(sizes), list(strides), reduce_rank=reduce_rank)


# ---------------------------------------------------------------------------
# Shared checks.
# ---------------------------------------------------------------------------


def _fail(op: Operation, message: str):
    raise VerifyException(f"'{op.name}' {message}")


def enclosing_kernel(op: Operation) -> KernelOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, KernelOp):
        parent = parent.parent_op()
    return parent


def _kernel_of(op: Operation) -> KernelOp:
    kernel = enclosing_kernel(op)
    if kernel is None:
        _fail(op, "must be inside an ascend.kernel")
    return kernel


def _needs_units(op: Operation, spaces: Iterable[str], pipes: Iterable[str] = ()) -> None:
    """The enclosing kernel's core type must have the buffers and pipes used."""
    kernel = _kernel_of(op)
    core = kernel.core_type.data
    if core not in CORE_TYPES:
        return  # the kernel reports it
    have = CORE_PIPES[core]
    for s in spaces:
        if (s in CUBE_SPACES and core == "vector") or (s in VECTOR_SPACES and core == "cube"):
            _fail(op, f"uses {s}, which a {core} kernel (@{kernel.sym_name.data}) does not have")
    for p in pipes:
        if p not in have:
            _fail(op, f"uses pipe {p}, which a {core} kernel (@{kernel.sym_name.data}) does not have; "
                      f"its pipes are {', '.join(q for q in PIPES if q in have)}")


def _memref(op: Operation, value: SSAValue, what: str, spaces: Iterable[str] | None = None) -> tuple[str, MemRefType]:
    t = value.type
    if not isinstance(t, MemRefType):
        _fail(op, f"{what} must be a memref, got {t}")
    s = space_of(t)
    if s is None:
        _fail(op, f"{what} {t} needs an ascend memory space ({_SPACE_LIST})")
    spaces = tuple(spaces) if spaces is not None else None
    if spaces is not None and s not in spaces:
        _fail(op, f"{what} must be in {' or '.join(spaces)}, got {s}")
    if any(d < 0 for d in t.get_shape()):
        _fail(op, f"{what} {t} must have a static shape")
    try:
        to_dtype(t.element_type)
    except UnsupportedTypeError as e:
        _fail(op, f"{what}: {e}")
    return s, t


def _check_rows(op: Operation, t: MemRefType, what: str) -> None:
    """ub/l1 operands: innermost dim contiguous, every row on a 32-byte block."""
    strides = t.get_strides()
    if strides is None:
        _fail(op, f"{what} {t} must have a strided layout")
    shape = t.get_shape()
    item = to_dtype(t.element_type).itemsize
    _check_inner(op, t, what)
    for d, (size, stride) in enumerate(zip(shape[:-1], strides[:-1])):
        if size > 1 and stride is not None and (stride * item) % BLOCK_BYTES:
            _fail(op, f"{what} {t}: rows must start on {BLOCK_BYTES}-byte blocks, but dim {d} "
                      f"steps {stride * item} bytes")


def _check_fractal(op: Operation, t: MemRefType, what: str) -> None:
    """l0 operands: the last two dims are whole fractals."""
    shape = t.get_shape()
    if len(shape) < 2:
        _fail(op, f"{what} {t} must have at least 2 dimensions (fractal tiles)")
    if shape[-2] % FRACTAL or shape[-1] % FRACTAL:
        _fail(op, f"{what} {t}: the last two dims must be multiples of {FRACTAL} (whole fractals)")


def _check_inner(op: Operation, t: MemRefType, what: str) -> None:
    strides = t.get_strides()
    shape = t.get_shape()
    if strides is None or (shape and shape[-1] > 1 and strides[-1] not in (1, None)):
        _fail(op, f"{what} {t} must be contiguous in its innermost dimension (DMA moves rows)")


def _check_operand(op: Operation, t: MemRefType, s: str, what: str) -> None:
    """DMA operands: gm rows contiguous, ub/l1 rows on blocks, l0 whole fractals."""
    if s in ("ub", "l1", "bt", "fb"):
        _check_rows(op, t, what)
    elif s in ("l0a", "l0b", "l0c"):
        _check_fractal(op, t, what)
    else:
        _check_inner(op, t, what)


def int_value(attr: Attribute | None) -> int | None:
    """The integer of an IntegerAttr, None when the attribute is absent."""
    return None if attr is None else attr.value.data  # type: ignore[union-attr]


def _str(attr: Attribute | None) -> str | None:
    return None if attr is None else attr.data  # type: ignore[union-attr]


def _split_props(cls: type[IRDLOperation], attrs: dict[str, Attribute]) -> tuple[dict, dict]:
    names = set(cls.get_irdl_definition().properties)
    return ({k: v for k, v in attrs.items() if k in names}, {k: v for k, v in attrs.items() if k not in names})


def _print_attr_dict(printer: Printer, op: Operation, skip: Iterable[str] = ()) -> None:
    printer.print_op_attributes({**op.properties, **op.attributes}, reserved_attr_names=tuple(skip))


# ---------------------------------------------------------------------------
# Buffers.
# ---------------------------------------------------------------------------


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A buffer in one memory space. On chip (inside a kernel) it is per block;
    in gm (in the host program) it is a workspace buffer. `offset` (bytes from
    the start of the space, or of the workspace for gm) is written by memory
    planning; without it the buffer gets its own slot.

        %b = ascend.alloc {offset = 0 : i64} : memref<16x256xf16, "ub">

    Rules: static shape, identity layout; ub/l1: the innermost dim is a whole
    number of 32-byte blocks; l0a/l0b/l0c: the last two dims are whole 16x16
    fractals (so the size is a multiple of 512 B); offsets aligned as
    `OFFSET_ALIGN`. A kernel plans all or none of the buffers of one space.
    """

    name = "ascend.alloc"
    offset = opt_prop_def(IntegerAttr)
    memref = result_def(MemRefType)

    @classmethod
    def get(cls, t: MemRefType, offset: int | None = None) -> AllocOp:
        props = {} if offset is None else {"offset": IntegerAttr(offset, i64)}
        return cls.create(result_types=[t], properties=props)

    @property
    def space(self) -> str:
        return space_of(self.memref.type) or ""

    @property
    def nbytes(self) -> int:
        return nbytes_of(self.memref.type)

    def verify_(self) -> None:
        t = self.memref.type
        s = space_of(t)
        if s is None:
            _fail(self, f"result {t} needs an ascend memory space ({_SPACE_LIST})")
        if any(d < 0 for d in t.get_shape()):
            _fail(self, f"result {t} must have a static shape")
        if not isinstance(t.layout, NoneAttr):
            _fail(self, f"result {t} must have the identity layout (take tiles with memref.subview)")
        try:
            item = to_dtype(t.element_type).itemsize
        except UnsupportedTypeError as e:
            _fail(self, str(e))
        shape = t.get_shape()
        if s == "gm":
            if enclosing_kernel(self) is not None:
                _fail(self, "of a gm buffer belongs in the host program, not in a kernel")
        else:
            _needs_units(self, [s])
        if s in ("ub", "l1", "bt", "fb"):
            inner = (shape[-1] if shape else 1) * item
            if inner % BLOCK_BYTES:
                _fail(self, f"{t}: the innermost dim is {inner} bytes, not a multiple of the "
                            f"{BLOCK_BYTES}-byte block of {s}")
        elif s in ("l0a", "l0b", "l0c"):
            _check_fractal(self, t, "result")
            if self.nbytes % L0_BYTES:
                _fail(self, f"{t} is {self.nbytes} bytes, not a multiple of {L0_BYTES}")
        off = int_value(self.offset)
        if off is not None:
            if off < 0 or off % OFFSET_ALIGN[s]:
                _fail(self, f"offset {off} must be a non-negative multiple of {OFFSET_ALIGN[s]} in {s}")

    def print(self, printer: Printer) -> None:
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.memref.type)

    @classmethod
    def parse(cls, parser: Parser) -> AllocOp:
        props, attrs = _split_props(cls, parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls.create(result_types=[t], properties=props, attributes=attrs)


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A weight in gm: the result is a read-only gm memref of the value's shape
    and element type. Large values print as dense_resource blobs.

        %w = ascend.constant dense<...> : tensor<64x64xf16>
    """

    name = "ascend.constant"
    value = prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    memref = result_def(MemRefType)
    traits = traits_def(Pure())

    @classmethod
    def from_array(cls, array) -> ConstantOp:
        from geir.ir.types import dense_from_array

        attr = dense_from_array(array)
        return cls.create(properties={"value": attr}, result_types=[cls.memref_type_of(attr)])

    @staticmethod
    def memref_type_of(value: Attribute) -> MemRefType:
        t = value.get_type()  # type: ignore[attr-defined]
        return memref_type(t.get_shape(), t.element_type, "gm")

    def data(self):
        """The value as numpy, not copied: a splat (one element stored, a placeholder weight's
        zeros) is a broadcast view of its element."""
        from geir.ir.types import array_from_dense

        if not isinstance(self.value, DenseIntOrFPElementsAttr):
            raise ValueError(f"constant {self.value.resource_handle.data!r} has no data (an elided or missing blob)")
        return array_from_dense(self.value)

    def array(self):
        """The buffer's contents, contiguous as kernels address them (a splat expanded)."""
        data = self.data()
        return np.ascontiguousarray(data).reshape(data.shape)  # a scalar stays 0-d

    @property
    def is_placeholder(self) -> bool:
        """A shape-only weight: its zeros stand for data never given (frontend/builder.py)."""
        from geir.dialects import attr_names

        return attr_names.PLACEHOLDER in self.attributes

    def verify_(self) -> None:
        want = self.memref_type_of(self.value)
        if self.memref.type != want:
            _fail(self, f"result type {self.memref.type} must be {want} (the value's shape and type in gm)")
        if enclosing_kernel(self) is not None:
            _fail(self, "belongs in the host program, not in a kernel")

    def print(self, printer: Printer) -> None:
        from geir.ir.text import print_constant_op

        print_constant_op(printer, self, self.value, self.memref)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attributes = parser.parse_optional_attr_dict()
        value = parser.parse_attribute()  # `dense<...> : tensor<...>`
        if not isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr) or not isinstance(
            value.get_type(), TensorType
        ):
            parser.raise_error("ascend.constant expects a dense or dense_resource value of tensor type")
        return cls.create(
            properties={"value": value}, result_types=[cls.memref_type_of(value)], attributes=attributes
        )


@irdl_op_definition
class ViewOp(IRDLOperation):
    """Bytes of a gm buffer seen as another buffer: the result starts `offset` bytes into the
    source and has its own (identity-layout) shape and element type. A host op: no kernel
    runs, no byte moves - this is how a reshape or a contiguous slice costs nothing, and how
    a concat's operands are written straight into the concat's buffer (GE's no-task ops and
    continuous inputs).

        %q = ascend.view %qkv[65536] : memref<3x128x256xf32, "gm"> to memref<128x256xf32, "gm">

    Rules: both gm, identity layout (the source is a whole buffer or a view, so its bytes are
    contiguous); the result lies inside the source; the offset is a multiple of the
    32-byte DMA block.
    """

    name = "ascend.view"
    source = operand_def(MemRefType)
    offset = prop_def(IntegerAttr)
    memref = result_def(MemRefType)
    traits = traits_def(Pure())

    @classmethod
    def get(cls, source: SSAValue, t: MemRefType, offset: int = 0) -> ViewOp:
        return cls.create(operands=[source], result_types=[t], properties={"offset": IntegerAttr(offset, i64)})

    @property
    def byte_offset(self) -> int:
        return self.offset.value.data

    def verify_(self) -> None:
        _check_host(self)
        src, t = self.source.type, self.memref.type
        for what, x in (("source", src), ("result", t)):
            if space_of(x) != "gm":
                _fail(self, f"{what} {x} must be in gm (views of on-chip buffers are memref.subview)")
            if not isinstance(x.layout, NoneAttr):
                _fail(self, f"{what} {x} must have the identity layout")
            if any(d < 0 for d in x.get_shape()):
                _fail(self, f"{what} {x} must have a static shape")
        off = self.byte_offset
        if off < 0 or off % BLOCK_BYTES:
            _fail(self, f"offset {off} must be a non-negative multiple of {BLOCK_BYTES} bytes")
        if off + nbytes_of(t) > nbytes_of(src):
            _fail(self, f"bytes [{off}, {off + nbytes_of(t)}) of the result lie outside the source's "
                        f"{nbytes_of(src)} bytes")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        printer.print_string(f"[{self.byte_offset}]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" to ")
        printer.print_attribute(self.memref.type)

    @classmethod
    def parse(cls, parser: Parser) -> ViewOp:
        source = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        offset = parser.parse_integer(allow_boolean=False, allow_negative=True)
        parser.parse_punctuation("]")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src_t = parser.parse_type()
        parser.parse_keyword("to")
        t = parser.parse_type()
        (src,) = parser.resolve_operands([source], [src_t], parser.pos)
        op = cls.get(src, t, offset)
        op.attributes.update(attrs)
        return op


VIEW_OPS = (memref.SubviewOp, memref.CollapseShapeOp, memref.ExpandShapeOp, memref.ReinterpretCastOp,
            memref.CastOp, ViewOp)
"""Ops whose result is (some of) the bytes of their first operand: one buffer, seen anew."""


def byte_copies(kernel: Operation) -> list[tuple[int, int, int, int, int]] | None:
    """The (dst, dst_offset, src, src_offset, bytes) runs of a kernel marked attr_names.BYTE_COPIES."""
    attr = kernel.attributes.get(attr_names.BYTE_COPIES)
    if not isinstance(attr, ArrayAttr):
        return None
    runs = [tuple(x.get_values()) for x in attr.data if isinstance(x, DenseArrayBase)]
    return runs if len(runs) == len(attr.data) and all(len(r) == 5 for r in runs) else None


def view_root(value: SSAValue) -> tuple[SSAValue, int]:
    """The buffer behind a chain of `ascend.view`s and the byte offset into it."""
    offset = 0
    while isinstance(value, OpResult) and isinstance(value.op, ViewOp):
        offset += value.op.byte_offset
        value = value.op.source
    return value, offset


# ---------------------------------------------------------------------------
# Host program: streams, events, launches.
# ---------------------------------------------------------------------------


def _check_host(op: Operation) -> None:
    if enclosing_kernel(op) is not None:
        _fail(op, "belongs in the host program, not in a kernel")


class _IdOp(IRDLOperation):
    """`%s = ascend.stream 0`: a numbered handle created by the host."""

    RESULT: ClassVar[type[TypeAttribute]]

    def verify_(self) -> None:
        _check_host(self)
        if int_value(self.properties["id"]) < 0:
            _fail(self, "id must be >= 0")

    @classmethod
    def get(cls, ident: int):
        return cls.create(result_types=[cls.RESULT()], properties={"id": IntegerAttr(ident, i64)})

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {int_value(self.properties['id'])}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        ident = parser.parse_integer(allow_boolean=False, allow_negative=False)
        attrs = parser.parse_optional_attr_dict()
        return cls.create(result_types=[cls.RESULT()], properties={"id": IntegerAttr(ident, i64)}, attributes=attrs)


@irdl_op_definition
class StreamOp(_IdOp):
    """Creates stream `id`. Launches on one stream run in order.

        %s = ascend.stream 0
    """

    name = "ascend.stream"
    RESULT: ClassVar = StreamType
    id = prop_def(IntegerAttr)
    stream = result_def(StreamType)


@irdl_op_definition
class EventOp(_IdOp):
    """Creates event `id`, to be recorded on one stream and waited for on another.

        %e = ascend.event 0
    """

    name = "ascend.event"
    RESULT: ClassVar = EventType
    id = prop_def(IntegerAttr)
    event = result_def(EventType)


class _EventStreamOp(IRDLOperation):
    def verify_(self) -> None:
        _check_host(self)

    @classmethod
    def get(cls, event: SSAValue | Operation, stream: SSAValue | Operation):
        return cls.create(operands=[SSAValue.get(event), SSAValue.get(stream)])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operands[0])
        printer.print_string(" on ")
        printer.print_operand(self.operands[1])
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        event = parser.resolve_operand(parser.parse_unresolved_operand(), EventType())
        parser.parse_keyword("on")
        stream = parser.resolve_operand(parser.parse_unresolved_operand(), StreamType())
        attrs = parser.parse_optional_attr_dict()
        return cls.create(operands=[event, stream], attributes=attrs)


@irdl_op_definition
class EventRecordOp(_EventStreamOp):
    """Records `event` on `stream` once the work queued before it is done.

        ascend.event_record %e on %s0
    """

    name = "ascend.event_record"
    event = operand_def(EventType)
    stream = operand_def(StreamType)


@irdl_op_definition
class EventWaitOp(_EventStreamOp):
    """Work queued on `stream` after this waits until `event` is recorded.

        ascend.event_wait %e on %s1
    """

    name = "ascend.event_wait"
    event = operand_def(EventType)
    stream = operand_def(StreamType)


_SYMBOLS_ATTR = "_geir_symbols"


def lookup_symbol(op: Operation, ref: SymbolRefAttr) -> Operation | None:
    """`SymbolTable.lookup_symbol` for a flat reference, through an index of the nearest
    symbol table's top-level symbols kept on that op: a program launches its ~2,000 kernels
    by name, and a scan of the table per launch made verifying it quadratic. An entry is
    trusted while its op is still in that table under that name; any other outcome rebuilds
    the index (kernels added, renamed or erased by a pass)."""
    if ref.nested_references.data:
        return SymbolTable.lookup_symbol(op, ref)
    anchor = op.parent_op()
    while anchor is not None and not anchor.has_trait(SymbolTable):
        anchor = anchor.parent_op()
    if anchor is None:
        return SymbolTable.lookup_symbol(op, ref)
    name = ref.root_reference.data
    index = getattr(anchor, _SYMBOLS_ATTR, None)
    found = index.get(name) if index is not None else None
    if found is not None and found.parent_op() is anchor and _sym_name(found) == name:
        return found
    index = {}
    for o in anchor.regions[0].block.ops:
        sym = _sym_name(o)
        if sym is not None:
            index.setdefault(sym, o)
    setattr(anchor, _SYMBOLS_ATTR, index)
    return index.get(name)


def _sym_name(op: Operation) -> str | None:
    interface = op.get_trait(SymbolOpInterface)
    if interface is None:
        return None
    attr = interface.get_sym_attr_name(op)
    return attr.data if attr is not None else None


class LaunchSymbolUser(SymbolUserOpInterface):
    def verify(self, op: Operation) -> None:
        assert isinstance(op, LaunchOp)
        kernel = lookup_symbol(op, op.kernel)
        if kernel is None:
            _fail(op, f"launches {op.kernel}, which is not defined")
        if not isinstance(kernel, KernelOp):
            _fail(op, f"launches {op.kernel}, which is not an ascend.kernel")
        want = list(kernel.function_type.inputs.data)
        got = [a.type for a in op.args]
        if want != got:
            _fail(op, f"passes ({', '.join(map(str, got))}) to @{kernel.sym_name.data}, "
                      f"which takes ({', '.join(map(str, want))})")


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Queues kernel @kernel on a stream; it runs `block_dim` blocks (the
    kernel's attribute) on as many AI cores as there are.

        ascend.launch @add on %s(%x, %y, %z) : (memref<...>, memref<...>, memref<...>)
    """

    name = "ascend.launch"
    kernel = prop_def(SymbolRefAttr)
    stream = operand_def(StreamType)
    args = var_operand_def()
    traits = traits_def(LaunchSymbolUser())

    @classmethod
    def get(cls, kernel: str, stream: SSAValue | Operation, args: Sequence[SSAValue | Operation]) -> LaunchOp:
        return cls.create(
            operands=[SSAValue.get(stream), *(SSAValue.get(a) for a in args)],
            properties={"kernel": SymbolRefAttr(kernel)},
        )

    def kernel_op(self) -> KernelOp:
        kernel = lookup_symbol(self, self.kernel)
        assert isinstance(kernel, KernelOp)
        return kernel

    def verify_(self) -> None:
        _check_host(self)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.kernel)
        printer.print_string(" on ")
        printer.print_operand(self.stream)
        printer.print_string("(")
        printer.print_list(self.args, printer.print_operand)
        printer.print_string(")")
        _print_attr_dict(printer, self, skip=("kernel",))
        printer.print_string(" : (")
        printer.print_list([a.type for a in self.args], printer.print_attribute)
        printer.print_string(")")

    @classmethod
    def parse(cls, parser: Parser) -> LaunchOp:
        kernel = parser.parse_attribute()
        if not isinstance(kernel, SymbolRefAttr):
            parser.raise_error("ascend.launch expects a kernel symbol (@name)")
        parser.parse_keyword("on")
        stream = parser.resolve_operand(parser.parse_unresolved_operand(), StreamType())
        pos = parser.pos
        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        props, attrs = _split_props(cls, parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        values = parser.resolve_operands(args, types, pos)
        return cls.create(operands=[stream, *values], properties={"kernel": kernel, **props}, attributes=attrs)


# ---------------------------------------------------------------------------
# Kernels.
# ---------------------------------------------------------------------------


class KernelCallable(CallableOpInterface):
    @classmethod
    def get_callable_region(cls, op: Operation) -> Region:
        assert isinstance(op, KernelOp)
        return op.body

    @classmethod
    def get_argument_types(cls, op: Operation) -> tuple[Attribute, ...]:
        assert isinstance(op, KernelOp)
        return op.function_type.inputs.data

    @classmethod
    def get_result_types(cls, op: Operation) -> tuple[Attribute, ...]:
        return ()


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A device kernel: its body runs once per block 0..block_dim-1 on an AI
    core of `core_type` (cube: AIC with l1/l0 and pipes MTE1/MTE2/M/FIX;
    vector: AIV with ub and MTE2/V/MTE3; mix: both). Arguments are gm memrefs
    and scalars.

        ascend.kernel @add(%x: memref<...>, %z: memref<...>) attributes {block_dim = 4 : i64, core_type = "vector"} {
          %i = ascend.block_idx
          ...
          ascend.return
        }

    The verifier checks, per kernel, that every wait_flag has a set_flag of the
    same (src, dst, id) before it in program order.
    """

    name = "ascend.kernel"
    body = region_def("single_block")
    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    core_type = prop_def(StringAttr)
    block_dim = prop_def(IntegerAttr)
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface(), KernelCallable(), HasParent(ModuleOp))

    _RESERVED: ClassVar = ("sym_name", "function_type", "arg_attrs")

    @classmethod
    def get(cls, name: str, arg_types: Sequence[Attribute], core_type: str, block_dim: int) -> KernelOp:
        """An empty kernel (a body block with the arguments, no terminator yet)."""
        return cls.create(
            properties={
                "sym_name": StringAttr(name),
                "function_type": FunctionType.from_lists(list(arg_types), []),
                "core_type": StringAttr(core_type),
                "block_dim": IntegerAttr(block_dim, i64),
            },
            regions=[Region(Block(arg_types=list(arg_types)))],
        )

    @property
    def block_count(self) -> int:
        return int_value(self.block_dim)

    def verify_(self) -> None:
        core = self.core_type.data
        if core not in CORE_TYPES:
            _fail(self, f"core_type must be one of {', '.join(CORE_TYPES)}, got '{core}'")
        if int_value(self.block_dim) < 1:
            _fail(self, f"block_dim must be >= 1, got {int_value(self.block_dim)}")
        if self.function_type.outputs.data:
            _fail(self, "returns nothing: kernels write their results to gm buffers")
        block = self.body.block
        if tuple(block.arg_types) != self.function_type.inputs.data:
            _fail(self, "entry block arguments must match the function type")
        for i, t in enumerate(block.arg_types):
            if isinstance(t, MemRefType) and space_of(t) != "gm":
                _fail(self, f"argument #{i} {t} must be a gm memref (kernels receive gm buffers)")
        if not isinstance(block.last_op, ReturnOp):
            _fail(self, "body must end with ascend.return")
        if core == HCCL:
            body = [op for op in block.ops if not isinstance(op, ReturnOp)]
            if len(body) != 1 or not isinstance(body[0], CollectiveOp) or int_value(self.block_dim) != 1:
                _fail(self, f"@{self.sym_name.data}: an hccl kernel is one collective op and block_dim 1")
        self._verify_body()

    def _verify_body(self) -> None:
        """One walk: set/wait pairing and all-or-none memory plans per space."""
        sets: set[tuple[str, str, int]] = set()
        planned: dict[str, tuple[bool, AllocOp]] = {}
        for op in self.body.walk():
            if isinstance(op, SetFlagOp):
                sets.add(op.key)
            elif isinstance(op, WaitFlagOp) and op.key not in sets:
                src, dst, ident = op.key
                _fail(self, f"@{self.sym_name.data}: {describe(op)} {src} -> {dst} id {ident} has no "
                            f"ascend.set_flag {src} -> {dst} id {ident} before it in the kernel")
            elif isinstance(op, AllocOp):
                has = op.offset is not None
                seen = planned.setdefault(op.space, (has, op))
                if seen[0] != has:
                    _fail(self, f"@{self.sym_name.data}: some {op.space} buffers have an offset and some "
                                f"do not; memory planning sets all of them")

    def print(self, printer: Printer) -> None:
        attrs = {k: v for k, v in sorted(self.properties.items()) if k not in self._RESERVED}
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            {**attrs, **self.attributes},
            arg_attrs=self.arg_attrs,
            reserved_attr_names=self._RESERVED,
            print_empty_outputs=False,
        )

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name, inputs, outputs, region, extra, arg_attrs, _res = parse_func_op_like(
            parser, reserved_attr_names=cls._RESERVED
        )
        if outputs:
            parser.raise_error("ascend.kernel returns nothing")
        props, attrs = _split_props(cls, dict(extra.data) if extra is not None else {})
        props.update({"sym_name": StringAttr(name), "function_type": FunctionType.from_lists(inputs, [])})
        if arg_attrs is not None:
            props["arg_attrs"] = arg_attrs
        return cls.create(properties=props, attributes=attrs, regions=[region])


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """Ends a kernel body."""

    name = "ascend.return"
    traits = traits_def(IsTerminator(), HasParent(KernelOp))
    assembly_format = "attr-dict"


@irdl_op_definition
class SubBlockOp(IRDLOperation):
    """What one vector core of a mix kernel's block runs. On the 910B a mix block is one AIC
    and `vector_per_cube` (2) AIVs, each with its own ub, V, MTE2 (gm -> ub) and MTE3 (Ascend
    C's GetSubBlockIdx): the body runs once, on AIV `index`, beside the other AIVs' bodies and
    the AIC's code. Its ub buffers are that core's own (each core's at the same offsets). Only
    vector-side work goes in: vector ops, copies into and out of ub, scalar code, flags. A flag
    the AIC sets for the AIVs is set once per AIV, and each body waits for its own.

        ascend.set_flag FIX -> MTE2 id 0
        ascend.sub_block 1 {
          ascend.wait_flag FIX -> MTE2 id 0
          ...
        }
    """

    name = "ascend.sub_block"
    index = prop_def(IntegerAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    @classmethod
    def get(cls, index: int) -> SubBlockOp:
        return cls.create(properties={"index": IntegerAttr(index, i64)}, regions=[Region(Block())])

    @property
    def sub_index(self) -> int:
        return int_value(self.index)

    def verify_(self) -> None:
        kernel = _kernel_of(self)
        if kernel.core_type.data != "mix":
            _fail(self, f"is a vector core of a mix kernel's block; @{kernel.sym_name.data} is "
                        f"{kernel.core_type.data}")
        if self.sub_index < 0:
            _fail(self, f"index must be >= 0, got {self.sub_index}")
        for op in self.body.walk():
            if isinstance(op, SubBlockOp):
                _fail(self, "cannot hold another ascend.sub_block")
            if isinstance(op, SetFlagOp | WaitFlagOp | PipeBarrierOp):
                continue
            pipe = getattr(op, "pipe", None)
            if not isinstance(pipe, str):
                continue
            if pipe in ("M", "MTE1", "FIX") or (pipe == "MTE2" and not (
                    isinstance(op, CopyOp) and op.dst_space == "ub")):
                _fail(self, f"holds {describe(op)} on {pipe}: a vector core runs V, MTE3 and MTE2 "
                            f"into ub only (the cube's work stays outside)")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.sub_index}")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=True)

    @classmethod
    def parse(cls, parser: Parser) -> SubBlockOp:
        index = parser.parse_integer()
        extra = parser.parse_optional_attr_dict_with_keyword()
        attrs = dict(extra.data) if extra is not None else {}
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        op = cls.create(properties={"index": IntegerAttr(index, i64)}, attributes=attrs, regions=[region])
        return op


class _BlockValueOp(IRDLOperation):
    def verify_(self) -> None:
        _kernel_of(self)

    @classmethod
    def get(cls):
        return cls.create(result_types=[IndexType()])

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        return cls.create(result_types=[IndexType()], attributes=parser.parse_optional_attr_dict())


@irdl_op_definition
class BlockIdxOp(_BlockValueOp):
    """The index of the block running the kernel, 0..block_dim-1.

        %i = ascend.block_idx
    """

    name = "ascend.block_idx"
    result = result_def(IndexType)
    traits = traits_def(Pure())


@irdl_op_definition
class BlockNumOp(_BlockValueOp):
    """The kernel's block_dim, as an index.

        %n = ascend.block_num
    """

    name = "ascend.block_num"
    result = result_def(IndexType)
    traits = traits_def(Pure())


# ---------------------------------------------------------------------------
# DMA.
# ---------------------------------------------------------------------------

LAYOUTS = ("nd2nz", "nz2nd", "nd2nc1hwc0", "nc1hwc02nd", "nc1hwc0")
BLOCKED_SRC = frozenset({"nz2nd", "nc1hwc02nd", "nc1hwc0"})
"""Layouts whose source is already blocked (fractal / NC1HWC0) in gm."""
BLOCKED_DST = frozenset({"nd2nz", "nd2nc1hwc0", "nc1hwc0"})


def nc1hwc0_shape(shape: Sequence[int], element_type: Attribute) -> tuple[int, ...]:
    """NC1HWC0 slab of a channels-first tile [C, *R]: [ceil(C/C0), *R, C0]."""
    c0 = fractal_c0(element_type)
    return (-(-shape[0] // c0), *shape[1:], c0)


def nz_shape(shape: Sequence[int], element_type: Attribute) -> tuple[int, ...]:
    """FRACTAL_NZ storage shape of an ND [..., M, N] matrix: [..., N1, M1, 16, C0]
    (zero-padded to whole fractals)."""
    c0 = fractal_c0(element_type)
    *batch, m, n = shape
    return (*batch, -(-n // c0), -(-m // FRACTAL), FRACTAL, c0)


@irdl_op_definition
class CopyOp(IRDLOperation):
    """A DMA from `src` to `dst`. The engine (pipe) follows from the spaces:

        gm -> ub, gm -> l1 (and gm -> l0a/l0b where a chip has it)   MTE2
        l1 -> l0a, l1 -> l0b (l1 -> ub)                               MTE1
        l0c -> gm, l0c -> l1 (l0c -> ub)                              FIX
        ub -> gm (ub -> l1, l1 -> gm)                                 MTE3

    Shapes and element types match, except:
    * `transpose` (MTE1 only, 2-D): dst is src transposed (LoadData transpose);
    * FIX may convert the element type (f32 -> f16, i32 -> i32) and apply `relu`;
    * FIX quantizes with `quant` (a 1-D f32 vector in fb: one scale, or one per element
      along `quant_axis` of the 2-D source): an i32 accumulator to f16
      (`f16(acc * scale)`, the hardware's DEQF16 / VDEQF16) or to int8 / uint8
      (`saturate(round(acc * scale + zero_point))`, REQ8 / VREQ8); `relu` then applies to
      the result. The FIX reads a scale as a 19-bit float (8 exponent, 10 mantissa bits: the
      low 13 bits of an f32's mantissa are dropped) and rounds half away from zero
      (`fix_quantize`);
    * `layout = "nd2nz"`: src [.., M, N] is stored as FRACTAL_NZ [.., N1, M1, 16, C0]
      in dst (zero-padded); `"nz2nd"`: the reverse (cropped to dst).
    * `layout = "nd2nc1hwc0"`: a channels-first tile [C, *R] (an l0c [Cout, pixels] tile,
      a ub tile, a gm [C, H, W] box) is stored as the NC1HWC0 slab [C1, *R, C0]
      (dst[c1, .., c0] = src[c1 * C0 + c0, ..], zero past C); `"nc1hwc02nd"`: the reverse
      (the padding lanes dropped); `"nc1hwc0"`: both sides are NC1HWC0 boxes [C1, H, W, C0]
      already - l1's native feature-map format for `load3d` - so a plain copy (which may
      `pad`).
    * `pad` (edge tiles, same rank): gm -> l1/ub (MTE2) may fill a larger dst, which is
      zero beyond src (ND2NZ / DataCopyPad padding); l0c -> gm (FIX) and ub -> gm (MTE3)
      may write a smaller dst, the leading part of src (Fixpipe mSize/nSize, DataCopyPad).

        ascend.copy %x_gm, %x_ub : memref<16x256xf16, strided<[256, 1], offset: ?>, "gm">
                                   to memref<16x256xf16, "ub">

    Cube buffers are physically fractal: a plain gm -> l1 copy of an ND tile is
    the engine's ND2NZ, an l0c -> gm copy its NZ2ND (`physical_transform`).
    """

    name = "ascend.copy"
    src = operand_def(MemRefType)
    dst = operand_def(MemRefType)
    quant = opt_operand_def(MemRefType)
    transpose = opt_prop_def(UnitAttr)
    relu = opt_prop_def(UnitAttr)
    layout = opt_prop_def(StringAttr)
    pad = opt_prop_def(UnitAttr)
    quant_axis = opt_prop_def(IntegerAttr)
    zero_point = opt_prop_def(IntegerAttr)

    @classmethod
    def get(
        cls,
        src: SSAValue | Operation,
        dst: SSAValue | Operation,
        *,
        transpose: bool = False,
        relu: bool = False,
        layout: str | None = None,
        pad: bool = False,
        quant: SSAValue | Operation | None = None,
        quant_axis: int | None = None,
        zero_point: int | None = None,
    ) -> CopyOp:
        props: dict[str, Attribute] = {}
        if transpose:
            props["transpose"] = UnitAttr()
        if relu:
            props["relu"] = UnitAttr()
        if pad:
            props["pad"] = UnitAttr()
        if layout is not None:
            props["layout"] = StringAttr(layout)
        if quant_axis is not None:
            props["quant_axis"] = IntegerAttr(quant_axis, i64)
        if zero_point is not None:
            props["zero_point"] = IntegerAttr(zero_point, i64)
        operands = [SSAValue.get(src), SSAValue.get(dst), *([SSAValue.get(quant)] if quant is not None else [])]
        return cls.create(operands=operands, properties=props)

    # -- what a simulator needs ---------------------------------------------

    @property
    def src_space(self) -> str:
        return space_of(self.src.type) or ""

    @property
    def dst_space(self) -> str:
        return space_of(self.dst.type) or ""

    @property
    def pipe(self) -> str:
        return COPY_PIPES[self.src_space, self.dst_space]

    @property
    def nbytes(self) -> int:
        """Bytes moved: the larger of the two sides (they differ when FIX converts the type or
        a layout change pads) - except into gm, where the engine writes dst's elements and no
        more (FIX's mSize x nSize rows of an l0c tile, DataCopyPad's blocks of a ub tile: the
        16-row fractal a one-row tile occupies in l0c is not written), at the wider type."""
        src, dst = self.src.type, self.dst.type
        if self.dst_space == "gm" and self.src_space != "gm":
            item = max(to_dtype(src.element_type).itemsize, to_dtype(dst.element_type).itemsize)
            return math.prod(dst.get_shape()) * item
        return max(nbytes_of(src), nbytes_of(dst))

    @property
    def gm_bytes(self) -> int:
        """Bytes of gm the copy reads or writes (0 on chip): what it moves through L2 / HBM.
        Into gm only dst's elements of dst's type: a FIX copy converting i32 to int8 reads
        4 bytes of l0c per element (its engine time, `nbytes`) but writes 1."""
        if self.dst_space == "gm" and self.src_space != "gm":
            return nbytes_of(self.dst.type)
        if "gm" in (self.src_space, self.dst_space):
            return self.nbytes
        return 0

    @property
    def physical_transform(self) -> str | None:
        """The format change the engine performs ("nd2nz", "nz2nd" or None),
        given that cube buffers are fractal in hardware."""
        s, d = self.src_space, self.dst_space
        layout = _str(self.layout)
        src_nz = s in CUBE_SPACES or layout in BLOCKED_SRC
        dst_nz = d in CUBE_SPACES or layout in BLOCKED_DST
        if src_nz == dst_nz:
            return None
        return "nd2nz" if dst_nz else "nz2nd"

    @property
    def relayout(self) -> tuple[int, int] | None:
        """(bytes of the plain side, bytes per contiguous run) of a copy that re-lays data
        out; None for one that keeps the layout. A matrix's ND2NZ / NZ2ND moves fractal
        rows: C0 elements (or the whole row of a narrower matrix). Interleaving channels
        into C0 lanes - rows [C, ..] to or from NC1HWC0 blocks, or an ND [C, H, W]
        feature-map box into l1, where the cube reads it as NC1HWC0 - moves one element per
        run. What that costs: CostModel.dma_bytes."""
        transform = self.physical_transform
        if transform is None:
            return None
        plain = (self.src if transform == "nd2nz" else self.dst).type
        item = to_dtype(plain.element_type).itemsize
        shape = plain.get_shape()
        if _str(self.layout) in ("nd2nc1hwc0", "nc1hwc02nd") or len(shape) == 3:
            return nbytes_of(plain), item
        return nbytes_of(plain), min(shape[-1], fractal_c0(plain.element_type)) * item

    def verify_(self) -> None:
        s, st = _memref(self, self.src, "source")
        d, dt = _memref(self, self.dst, "destination")
        if (s, d) not in COPY_PIPES:
            paths = ", ".join(f"{a}->{b}" for a, b in COPY_PIPES)
            _fail(self, f"has no DMA path {s} -> {d}; paths: {paths}")
        pipe = COPY_PIPES[s, d]
        _needs_units(self, [x for x in (s, d) if x != "gm"], [pipe])
        layout = _str(self.layout)
        if layout is not None and layout not in LAYOUTS:
            _fail(self, f"layout must be one of {', '.join(LAYOUTS)}, got '{layout}'")
        if self.transpose is not None and pipe != "MTE1":
            _fail(self, f"transpose is done by MTE1 (l1 -> l0a/l0b), not by {pipe} ({s} -> {d})")
        if self.relu is not None and pipe != "FIX":
            _fail(self, f"relu is done by the FIX pipe (from l0c), not by {pipe} ({s} -> {d})")
        if self.transpose is not None and layout is not None:
            _fail(self, "cannot both transpose and change the layout")
        if self.pad is not None and (self.transpose is not None or layout in ("nd2nz", "nz2nd")):
            _fail(self, "pad cannot be combined with transpose or a fractal (nd2nz / nz2nd) layout change")
        # element types
        se, de = st.element_type, dt.element_type
        if self.quant is not None or self.quant_axis is not None or self.zero_point is not None:
            self._verify_quant(pipe, st, dt)
        elif se != de:
            allowed = pipe == "FIX" and (
                (is_float(se) and is_float(de)) or (isinstance(se, IntegerType) and isinstance(de, IntegerType))
            )
            if not allowed:
                _fail(self, f"copies {se} to {de}; only the FIX pipe (from l0c) converts element types")
        # shapes
        ss, ds = tuple(st.get_shape()), tuple(dt.get_shape())
        if self.transpose is not None:
            if len(ss) != 2 or ds != ss[::-1]:
                _fail(self, f"with transpose needs a 2-D source and the transposed destination, got {list(ss)} -> {list(ds)}")
        elif layout == "nd2nz":
            if len(ss) < 2 or ds != nz_shape(ss, de):
                _fail(self, f"nd2nz of {list(ss)} needs a destination of shape {list(nz_shape(ss, de)) if len(ss) >= 2 else '[.., N1, M1, 16, C0]'}, got {list(ds)}")
        elif layout == "nz2nd":
            if len(ds) < 2 or ss != nz_shape(ds, se):
                _fail(self, f"nz2nd to {list(ds)} needs a source of shape {list(nz_shape(ds, se)) if len(ds) >= 2 else '[.., N1, M1, 16, C0]'}, got {list(ss)}")
        elif layout == "nd2nc1hwc0":
            blocked = nc1hwc0_shape(ss, de) if ss else ()
            if not ss or (ds != blocked if self.pad is None else ds[:1] + ds[-1:] != blocked[:1] + blocked[-1:]):
                _fail(self, f"nd2nc1hwc0 of {list(ss)} needs a destination of shape "
                            f"{list(blocked) if ss else '[C1, .., C0]'}{' (up to pad)' if self.pad else ''}, got {list(ds)}")
            if self.pad is not None:
                self._verify_pad(s, d, blocked, ds)
        elif layout == "nc1hwc02nd":
            if not ds or len(ss) != len(ds) + 1 or ss[:1] + ss[-1:] != nc1hwc0_shape(ds[:1], se):
                _fail(self, f"nc1hwc02nd to {list(ds)} needs a source of shape "
                            f"{list(nc1hwc0_shape(ds, se)) if ds else '[C1, .., C0]'}"
                            f"{' (up to pad)' if self.pad else ''}, got {list(ss)}")
            logical = (ds[0], *ss[1:-1])
            if self.pad is not None:
                self._verify_pad(s, d, logical, ds)
            elif logical != ds:
                _fail(self, f"nc1hwc02nd to {list(ds)} needs a source of shape {list(nc1hwc0_shape(ds, se))}, got {list(ss)}")
        elif layout == "nc1hwc0" and (len(ss) != 4 or ss[-1] != fractal_c0(se) or ds[-1:] != ss[-1:]):
            _fail(self, f"nc1hwc0 copies NC1HWC0 boxes [C1, H, W, {fractal_c0(se)}], got {list(ss)} -> {list(ds)}")
        elif self.pad is not None:
            self._verify_pad(s, d, ss, ds)
        elif ss != ds:
            _fail(self, f"source shape {list(ss)} and destination shape {list(ds)} differ")
        _check_operand(self, st, s, "source")
        _check_operand(self, dt, d, "destination")

    def _verify_quant(self, pipe: str, st: MemRefType, dt: MemRefType) -> None:
        """FIX quantization: i32 to f16 or an 8-bit integer by a scale vector in fb."""
        if self.quant is None:
            _fail(self, "quant_axis and zero_point need a quant operand")
        if pipe != "FIX":
            _fail(self, f"quantization is done by the FIX pipe (from l0c), not by {pipe}")
        qs, qt = _memref(self, self.quant, "quant", ["fb"])
        _needs_units(self, [qs])
        if qt.element_type != f32 or len(qt.get_shape()) != 1:
            _fail(self, f"quant must be a 1-D f32 vector, got {qt}")
        se, de = st.element_type, dt.element_type
        if short_type_name(se) != "i32" or not (de == f16 or (isinstance(de, IntegerType) and de.width.data == 8)):
            _fail(self, f"quantizes i32 to f16, i8 or ui8, got {se} to {de}")
        n = qt.get_shape()[0]
        axis = int_value(self.quant_axis)
        shape = st.get_shape()
        if axis is None:
            if n != 1:
                _fail(self, f"a quant vector of {n} scales needs quant_axis (0: rows, 1: columns)")
        elif len(shape) != 2 or axis not in (0, 1) or shape[axis] != n:
            _fail(self, f"quant of {n} scales along axis {axis} does not match the source {list(shape)}")
        zp = int_value(self.zero_point)
        if zp is not None:
            lo, hi = _value_range(de)
            if is_float(de) or not lo <= zp <= hi:
                _fail(self, f"zero_point {zp} is not a value of {de}")

    def _verify_pad(self, s: str, d: str, ss: tuple[int, ...], ds: tuple[int, ...]) -> None:
        """`pad`: zero-fill a larger on-chip dst from gm, or write the leading part of
        an on-chip src to a smaller gm dst (edge tiles)."""
        if len(ss) != len(ds):
            _fail(self, f"with pad needs equal ranks, got {list(ss)} -> {list(ds)}")
        if s == "gm" and d in ("l1", "ub"):
            if any(x > y for x, y in zip(ss, ds)):
                _fail(self, f"with pad fills a destination at least as large as the source, got {list(ss)} -> {list(ds)}")
        elif d == "gm" and s in ("l0c", "ub"):
            if any(x < y for x, y in zip(ss, ds)):
                _fail(self, f"with pad writes a destination no larger than the source, got {list(ss)} -> {list(ds)}")
        else:
            _fail(self, f"pad applies to gm -> l1/ub (zero fill) and l0c/ub -> gm (crop), not {s} -> {d}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" to ")
        printer.print_attribute(self.dst.type)
        if self.quant is not None:
            printer.print_string(" quant ")
            printer.print_attribute(self.quant.type)

    @classmethod
    def parse(cls, parser: Parser) -> CopyOp:
        pos = parser.pos
        operands = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        props, attrs = _split_props(cls, parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        types = [parser.parse_type()]
        parser.parse_keyword("to")
        types.append(parser.parse_type())
        if parser.parse_optional_keyword("quant") is not None:
            types.append(parser.parse_type())
        values = parser.resolve_operands(operands, types, pos)
        return cls.create(operands=values, properties=props, attributes=attrs)


FIX_SCALE_MASK = np.uint32(0xFFFFE000)
"""The bits of an f32 scale the FIX pipe keeps: sign, exponent and the top 10 mantissa bits
(its quantization parameter holds a 19-bit float; PTO's reference model of the word)."""


def fix_scale(scale: np.ndarray) -> np.ndarray:
    """f32 scales as the FIX pipe reads them: the low 13 mantissa bits dropped."""
    return (np.ascontiguousarray(scale, np.float32).view(np.uint32) & FIX_SCALE_MASK).view(np.float32)


def fix_scale_nearest(scale: np.ndarray) -> np.ndarray:
    """The f32 scales the FIX pipe holds exactly (10 mantissa bits) nearest to `scale`, ties to
    even: a compiler that picks these loses half an ulp of the 19-bit float, not a whole one."""
    bits = np.ascontiguousarray(scale, np.float32).view(np.uint32).astype(np.uint64)
    bits = bits + np.uint64(0xFFF) + ((bits >> np.uint64(13)) & np.uint64(1))
    return (bits.astype(np.uint32) & FIX_SCALE_MASK).view(np.float32).reshape(np.shape(scale))


# ---------------------------------------------------------------------------
# Cube.
# ---------------------------------------------------------------------------

MMAD_TYPES = {("f16", "f32"), ("bf16", "f32"), ("f32", "f32"), ("i8", "i32")}
"""(input element type, accumulator element type) of the cube: f16 and bf16 accumulate in
f32 (rounded back by the FIX copy out of l0c), f32 runs at a quarter of the rate."""


def short_type_name(elt: Attribute) -> str:
    """An element type as the ascend ops print it (si32 -> i32)."""
    return str(elt).replace("si", "i")


@irdl_op_definition
class MmadOp(IRDLOperation):
    """Cube matrix multiply on fractal tiles: c = a x b (`init`) or c += a x b.

        ascend.mmad %a, %b, %c {init} : memref<MxKxf16, l0a>, memref<KxNxf16, l0b>, memref<MxNxf32, l0c>

    a [M, K] in l0a, b [K, N] in l0b, c [M, N] in l0c; f16 x f16 -> f32,
    bf16 x bf16 -> f32, f32 x f32 -> f32 or i8 x i8 -> i32; M and N multiples of 16, K of
    16 (32 for i8). Tiles are logical row-major matrices; the fractal layout is implied.

    With `init`, a `bias` in bt (a 1-D vector of c's element type, along `bias_axis` of c:
    0 for its M rows, 1 for its N columns) initialises c instead of zero: c = bias + a x b
    (the cube's bias table; Ascend C's Mmad with a bias tensor).

        ascend.mmad %a, %b, %c, %bias {init, bias_axis = 0 : i64} : ..., memref<64xi32, "bt">
    """

    name = "ascend.mmad"
    a = operand_def(MemRefType)
    b = operand_def(MemRefType)
    c = operand_def(MemRefType)
    bias = opt_operand_def(MemRefType)
    init = opt_prop_def(UnitAttr)
    bias_axis = opt_prop_def(IntegerAttr)

    PIPE: ClassVar[str] = "M"

    @property
    def pipe(self) -> str:
        return self.PIPE

    @classmethod
    def get(cls, a, b, c, *, init: bool = False, bias: SSAValue | Operation | None = None,
            bias_axis: int | None = None) -> MmadOp:
        props: dict[str, Attribute] = {"init": UnitAttr()} if init else {}
        if bias_axis is not None:
            props["bias_axis"] = IntegerAttr(bias_axis, i64)
        extra = [SSAValue.get(bias)] if bias is not None else []
        return cls.create(operands=[SSAValue.get(a), SSAValue.get(b), SSAValue.get(c), *extra], properties=props)

    @property
    def mkn(self) -> tuple[int, int, int]:
        m, k = self.a.type.get_shape()
        return m, k, self.b.type.get_shape()[1]

    @property
    def dtype(self) -> str:
        """Input element type name (f16, bf16, f32, i8), for the cost model."""
        return short_type_name(self.a.type.element_type)

    def verify_(self) -> None:
        _, at = _memref(self, self.a, "a", ["l0a"])
        _, bt = _memref(self, self.b, "b", ["l0b"])
        _, ct = _memref(self, self.c, "c", ["l0c"])
        _needs_units(self, ["l0a"], ["M"])
        shapes = [tuple(t.get_shape()) for t in (at, bt, ct)]
        if any(len(s) != 2 for s in shapes):
            _fail(self, f"operands must be 2-D, got {', '.join(str(list(s)) for s in shapes)}")
        (m, k), (k2, n), (m2, n2) = shapes
        if k != k2 or m != m2 or n != n2:
            _fail(self, f"shapes do not chain: a {[m, k]} x b {[k2, n]} -> c {[m2, n2]}")
        ae, be, ce = (short_type_name(t.element_type) for t in (at, bt, ct))
        if ae != be or (ae, ce) not in MMAD_TYPES:
            kinds = ", ".join(f"{i} x {i} -> {o}" for i, o in sorted(MMAD_TYPES))
            _fail(self, f"computes {ae} x {be} -> {ce}; the cube does {kinds}")
        fk = 32 if ae == "i8" else FRACTAL
        if m % FRACTAL or n % FRACTAL or k % fk:
            _fail(self, f"M={m}, K={k}, N={n}: M and N must be multiples of {FRACTAL} and K of {fk}")
        if self.bias is not None or self.bias_axis is not None:
            self._verify_bias(ct)

    def _verify_bias(self, ct: MemRefType) -> None:
        if self.bias is None or self.init is None:
            _fail(self, "a bias (and bias_axis) initialises c: it needs the bias operand and init")
        bs, bt = _memref(self, self.bias, "bias", ["bt"])
        _needs_units(self, [bs])
        axis = int_value(self.bias_axis)
        shape = ct.get_shape()
        if bt.element_type != ct.element_type or len(bt.get_shape()) != 1:
            _fail(self, f"bias must be a 1-D vector of c's element type {ct.element_type}, got {bt}")
        if axis not in (0, 1) or bt.get_shape()[0] != shape[axis]:
            _fail(self, f"a bias of {bt.get_shape()[0]} along axis {axis} does not match c {list(shape)}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_list([v.type for v in self.operands], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> MmadOp:
        pos = parser.pos
        operands = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        props, attrs = _split_props(cls, parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        values = parser.resolve_operands(operands, types, pos)
        return cls.create(operands=values, properties=props, attributes=attrs)


# ---------------------------------------------------------------------------
# Cube: img2col (load3d). Added for convolution (lowering/templates/cube/conv_kernel.py).
# ---------------------------------------------------------------------------


def _value_range(elt: Attribute) -> tuple[float, float]:
    """The integers an element type holds (a float type: no bound checked here)."""
    if is_float(elt):
        return -math.inf, math.inf
    dtype = to_dtype(elt)
    bits = dtype.itemsize * 8
    return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if dtype.kind == "i" else (0, 2 ** bits - 1)


def _ints(attr: Attribute | None) -> tuple[int, ...]:
    return tuple(attr.get_values()) if attr is not None else ()  # type: ignore[union-attr]


@irdl_op_definition
class Load3dOp(IRDLOperation):
    """img2col on MTE1 (the Da Vinci LoadData 3D): expands the convolution windows of a
    feature-map box in l1 into an im2col tile of l0b (or l0a), so a convolution is a
    plain `mmad` of the weights by that tile.

        ascend.load3d %fm[%ih, %iw], %col[%k, %oh, %ow] {image = array<i64: 56, 56>,
            kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>,
            pads = array<i64: 1, 1, 1, 1>, out = array<i64: 2, 56>, channels = 64 : i64}
            : memref<64x4x64xf16, "l1"> to memref<64x112xf16, "l0b">

    `src` [C, Hs, Ws] (l1) holds channels 0..C-1 of the image rows ih.. and columns iw..
    (`image` [H, W] is the whole feature map; outside it lies the zero padding `pads`
    [top, left, bottom, right]). The tile covers the output pixels of an `out` [OHt, OWt]
    window at (oh, ow), row-major, and the K rows k.. of the im2col matrix, where row
    k = (c * KH + kh) * KW + kw (the weight [M, C, KH, KW] flattened). In l0b, dst [K, N]:
    dst[i, j] = x[c, (oh + j / OWt) * SH - top + kh * DH, (ow + j % OWt) * SW - left + kw * DW]
    with (c, kh, kw) of row k + i; in l0a, dst [N, K] is its transpose. Entries in the
    padding, for channels >= `channels` or pixels j >= OHt * OWt are zero; any other
    position must lie in the box (checked when the program runs).

    An NC1HWC0 box `src` [C1, Hs, Ws, C0] (the hardware's native l1 feature map) orders K
    as (c1, kh, kw, c0), row k = ((c1 * KH + kh) * KW + kw) * C0 + c0 with channel
    c = c1 * C0 + c0: the order of FRACTAL_Z weights, whose [Cout, K] matrix that is.

    `pad_value` (optional, an integer of the element type's range) is what the padding
    holds instead of zero: the device's Load3D padding-value register (Ascend C
    `SetLoadDataPaddingValue`). An int8 convolution pads with the input's zero point
    (graph.conv's `offset_x`); channels past `channels` and pixels past `out` stay zero.
    """

    name = "ascend.load3d"
    src = operand_def(MemRefType)
    ih = operand_def(IndexType)
    iw = operand_def(IndexType)
    dst = operand_def(MemRefType)
    k = operand_def(IndexType)
    oh = operand_def(IndexType)
    ow = operand_def(IndexType)
    image = prop_def(DenseArrayBase)
    kernel = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    out = prop_def(DenseArrayBase)
    channels = prop_def(IntegerAttr)
    pad_value = opt_prop_def(IntegerAttr)

    PIPE: ClassVar[str] = "MTE1"
    GEOMETRY: ClassVar[tuple[tuple[str, int, int], ...]] = (
        # property, length, minimum value
        ("image", 2, 1), ("kernel", 2, 1), ("strides", 2, 1), ("dilations", 2, 1), ("pads", 4, 0), ("out", 2, 1),
    )

    @classmethod
    def get(cls, src, origin: Sequence[SSAValue], dst, start: Sequence[SSAValue], *, image: Sequence[int],
            kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int], pads: Sequence[int],
            out: Sequence[int], channels: int, pad_value: int = 0) -> Load3dOp:
        """`origin` = (ih, iw) of src[:, 0, 0]; `start` = (k, oh, ow) of the tile; a nonzero
        `pad_value` fills the padding."""
        arrays = dict(image=image, kernel=kernel, strides=strides, dilations=dilations, pads=pads, out=out)
        props: dict[str, Attribute] = {k: DenseArrayBase.from_list(i64, list(v)) for k, v in arrays.items()}
        props["channels"] = IntegerAttr(channels, i64)
        if pad_value:
            props["pad_value"] = IntegerAttr(int(pad_value), i64)
        return cls.create(operands=[SSAValue.get(src), *map(SSAValue.get, origin), SSAValue.get(dst),
                                    *map(SSAValue.get, start)], properties=props)

    def geometry(self, name: str) -> tuple[int, ...]:
        return _ints(self.properties.get(name))

    @property
    def padding_value(self) -> int:
        """What the padding holds (0 unless `pad_value` says otherwise)."""
        return int_value(self.pad_value) if self.pad_value is not None else 0

    @property
    def pipe(self) -> str:
        return self.PIPE

    @property
    def src_space(self) -> str:
        return "l1"

    @property
    def dst_space(self) -> str:
        return space_of(self.dst.type) or ""

    @property
    def nbytes(self) -> int:
        """Bytes written to l0 (what MTE1 moves)."""
        return nbytes_of(self.dst.type)

    def verify_(self) -> None:
        _, st = _memref(self, self.src, "source", ["l1"])
        d, dt = _memref(self, self.dst, "destination", ["l0a", "l0b"])
        _needs_units(self, ["l1", d], ["MTE1"])
        rank = len(st.get_shape())
        if rank not in (3, 4):
            _fail(self, f"source {st} must be a feature-map box [C, H, W] or NC1HWC0 [C1, H, W, C0]")
        if rank == 4 and st.get_shape()[3] != fractal_c0(st.element_type):
            _fail(self, f"source {st}: an NC1HWC0 box ends in C0 = {fractal_c0(st.element_type)}")
        _check_rows(self, st, "source")
        if len(dt.get_shape()) != 2:
            _fail(self, f"destination {dt} must be a 2-D im2col tile")
        _check_fractal(self, dt, "destination")
        if st.element_type != dt.element_type:
            _fail(self, f"copies {st.element_type} to {dt.element_type}; img2col keeps the element type")
        for name, length, least in self.GEOMETRY:
            values = self.geometry(name)
            if len(values) != length or any(v < least for v in values):
                _fail(self, f"{name} must be {length} integers >= {least}, got {list(values)}")
        channels = int_value(self.channels)
        most = st.get_shape()[0] * (st.get_shape()[3] if rank == 4 else 1)
        if not 1 <= channels <= most:
            _fail(self, f"channels = {channels} must be in 1..{most} (the source's channels)")
        oht, owt = self.geometry("out")
        pixels = dt.get_shape()[1] if d == "l0b" else dt.get_shape()[0]
        if oht * owt > pixels:
            _fail(self, f"out [{oht}, {owt}] has {oht * owt} pixels, more than the {pixels} of the destination")
        if self.pad_value is not None:
            lo, hi = _value_range(st.element_type)
            if not lo <= self.padding_value <= hi:
                _fail(self, f"pad_value = {self.padding_value} is not a {short_type_name(st.element_type)} "
                            f"(range {lo}..{hi})")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.src)
        printer.print_string("[")
        printer.print_list((self.ih, self.iw), printer.print_operand)
        printer.print_string("], ")
        printer.print_operand(self.dst)
        printer.print_string("[")
        printer.print_list((self.k, self.oh, self.ow), printer.print_operand)
        printer.print_string("]")
        order = [name for name, _, _ in self.GEOMETRY] + ["channels", "pad_value"]
        props = {k: self.properties[k] for k in order if k in self.properties}
        printer.print_op_attributes({**props, **self.attributes})
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" to ")
        printer.print_attribute(self.dst.type)

    @classmethod
    def parse(cls, parser: Parser) -> Load3dOp:
        def operand_with_indices():
            operand = parser.parse_unresolved_operand()
            indices = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
            return operand, indices

        pos = parser.pos
        src, origin = operand_with_indices()
        parser.parse_punctuation(",")
        dst, start = operand_with_indices()
        if len(origin) != 2 or len(start) != 3:
            parser.raise_error("ascend.load3d expects %src[%ih, %iw], %dst[%k, %oh, %ow]", pos, parser.pos)
        props, attrs = _split_props(cls, parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        src_t = parser.parse_type()
        parser.parse_keyword("to")
        dst_t = parser.parse_type()
        index = IndexType()
        values = parser.resolve_operands([src, *origin, dst, *start], [src_t, index, index, dst_t, index, index, index], pos)
        return cls.create(operands=values, properties=props, attributes=attrs)


# ---------------------------------------------------------------------------
# Vector ops on ub.
# ---------------------------------------------------------------------------

REDUCE_KINDS = ("sum", "max", "min")
COMPARE_MODES = ("eq", "ne", "lt", "le", "gt", "ge")
ROUND_MODES = ("rint", "round", "floor", "ceil", "trunc")


class VectorOp(IRDLOperation):
    """Base of the vector ops: sources first, the destination last; memref
    operands in ub, scalars (arith values) of the element type.

        ascend.vadd %a, %b, %c : memref<16x256xf16, "ub">
        ascend.vadds %a, %s, %c : memref<16x256xf16, "ub">, f16, memref<16x256xf16, "ub">

    (one type when all operands have it). `cost_kind` is the cost model's
    vector op kind (binary, unary, reduce, ...).
    """

    PIPE: ClassVar[str] = "V"
    COST_KIND: ClassVar[str] = "unary"
    FLOAT_ONLY: ClassVar[bool] = False
    MOVES_BITS: ClassVar[bool] = False
    """The instruction moves elements without computing on them (copy, dup, broadcast,
    transpose): it takes any element type, bf16 included (`BF16_VECTOR_OPS`)."""
    SCALARS: ClassVar[tuple[int, ...]] = ()
    """Positions of scalar operands."""

    @classmethod
    def get(cls, *operands: SSAValue | Operation, **props: Attribute):
        return cls.create(operands=[SSAValue.get(v) for v in operands], properties=props)

    @property
    def pipe(self) -> str:
        return self.PIPE

    @property
    def cost_kind(self) -> str:
        """The cost model's vector op kind (binary, unary, reduce, ...)."""
        return self.COST_KIND

    @property
    def dst(self) -> SSAValue:
        return self.operands[-1]

    @property
    def srcs(self) -> tuple[SSAValue, ...]:
        return tuple(self.operands[:-1])

    @property
    def vectors(self) -> list[SSAValue]:
        return [v for i, v in enumerate(self.operands) if i not in self.SCALARS]

    @property
    def nbytes(self) -> int:
        """Bytes of the largest vector operand (what the cost model prices)."""
        return max(nbytes_of(v.type) for v in self.vectors)

    @property
    def dtype(self) -> str:
        """Element type of the widest vector operand."""
        widest = max(self.vectors, key=lambda v: to_dtype(v.type.element_type).itemsize)
        return short_type_name(widest.type.element_type)

    def verify_(self) -> None:
        types = []
        for i, v in enumerate(self.operands):
            if i in self.SCALARS:
                continue
            _, t = _memref(self, v, f"operand #{i}", ["ub"])
            _check_rows(self, t, f"operand #{i}")
            types.append(t)
        _needs_units(self, ["ub"], ["V"])
        dst = self.dst.type
        for i in self.SCALARS:
            st = self.operands[i].type
            if st != dst.element_type:
                _fail(self, f"scalar operand #{i} has type {st}, the vectors {dst.element_type}")
        if self.FLOAT_ONLY and not is_float(dst.element_type):
            _fail(self, f"needs a floating-point element type, got {dst.element_type}")
        if not self.MOVES_BITS and not isinstance(self, _CastBase) \
                and any(isinstance(t.element_type, BFloat16Type) for t in types):
            _fail(self, "the vector unit has no bf16 arithmetic: compute in f32 "
                        "(ascend.vcast bf16 <-> f32 around it)")
        self.check(types)

    def check(self, types: list[MemRefType]) -> None:
        """Elementwise default: every vector operand has dst's shape and type."""
        dst = types[-1]
        for i, t in enumerate(types[:-1]):
            if t.get_shape() != dst.get_shape() or t.element_type != dst.element_type:
                _fail(self, f"source {t} must have the destination's shape and type {dst}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        types = [v.type for v in self.operands]
        if all(t == types[0] for t in types):
            printer.print_attribute(types[0])
        else:
            printer.print_list(types, printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser):
        pos = parser.pos
        operands = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        props, attrs = _split_props(cls, parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(types) == 1:
            types = types * len(operands)
        values = parser.resolve_operands(operands, types, pos)
        return cls.create(operands=values, properties=props, attributes=attrs)


def _vector_op(name: str, doc: str, operands: Sequence[str], *, cost: str, float_only: bool = False,
               moves_bits: bool = False, base: type[VectorOp] = VectorOp, **body) -> type[VectorOp]:
    """Declare a vector op: one operand per name (`*name` marks a scalar)."""
    ns: dict = {"name": f"ascend.{name}", "__doc__": doc, "__module__": __name__,
                "COST_KIND": cost, "FLOAT_ONLY": float_only, "MOVES_BITS": moves_bits,
                "SCALARS": tuple(i for i, o in enumerate(operands) if o.startswith("*"))}
    notes = {"COST_KIND": ClassVar[str], "FLOAT_ONLY": ClassVar[bool], "MOVES_BITS": ClassVar[bool],
             "SCALARS": ClassVar[tuple]}
    for o in operands:
        ns[o.lstrip("*")] = operand_def() if o.startswith("*") else operand_def(MemRefType)
    ns.update(body)
    ns["__annotations__"] = notes
    return irdl_op_definition(type(name.capitalize() + "Op", (base,), ns))


_UNARY = ("src", "dst")
_BINARY = ("lhs", "rhs", "dst")
_WITH_SCALAR = ("src", "*scalar", "dst")

# One class per instruction, so an editor finds each (cost: the CostModel's throughput class).
VexpOp = _vector_op("vexp", "exp(x)", _UNARY, cost="unary", float_only=True)
VlogOp = _vector_op("vlog", "Natural logarithm.", _UNARY, cost="unary", float_only=True)
VsqrtOp = _vector_op("vsqrt", "Square root.", _UNARY, cost="unary", float_only=True)
VrsqrtOp = _vector_op("vrsqrt", "1 / sqrt(x)", _UNARY, cost="unary", float_only=True)
VrecOp = _vector_op("vrec", "1 / x", _UNARY, cost="unary", float_only=True)
VabsOp = _vector_op("vabs", "|x|", _UNARY, cost="unary")
VnegOp = _vector_op("vneg", "-x", _UNARY, cost="unary")
VreluOp = _vector_op("vrelu", "max(x, 0)", _UNARY, cost="unary")
VtanhOp = _vector_op("vtanh", "Hyperbolic tangent.", _UNARY, cost="unary", float_only=True)
VsigmoidOp = _vector_op("vsigmoid", "1 / (1 + exp(-x))", _UNARY, cost="unary", float_only=True)
VerfOp = _vector_op("verf", "Gauss error function.", _UNARY, cost="unary", float_only=True)
VsinOp = _vector_op("vsin", "Sine.", _UNARY, cost="unary", float_only=True)
VcosOp = _vector_op("vcos", "Cosine.", _UNARY, cost="unary", float_only=True)
VfloorOp = _vector_op("vfloor", "Round down (stays float).", _UNARY, cost="unary", float_only=True)
VceilOp = _vector_op("vceil", "Round up (stays float).", _UNARY, cost="unary", float_only=True)
VroundOp = _vector_op("vround", "Round half to even (stays float).", _UNARY, cost="unary", float_only=True)
VsignOp = _vector_op("vsign", "sign(x)", _UNARY, cost="unary")
VnotOp = _vector_op("vnot", "Logical not (i1) / bitwise not (integers).", _UNARY, cost="unary")
VaddOp = _vector_op("vadd", "a + b", _BINARY, cost="binary")
VsubOp = _vector_op("vsub", "a - b", _BINARY, cost="binary")
VmulOp = _vector_op("vmul", "a * b", _BINARY, cost="binary")
VdivOp = _vector_op("vdiv", "a / b (integers truncate)", _BINARY, cost="binary")
VmaxOp = _vector_op("vmax", "max(a, b)", _BINARY, cost="binary")
VminOp = _vector_op("vmin", "min(a, b)", _BINARY, cost="binary")
VandOp = _vector_op("vand", "Logical and (i1) / bitwise and.", _BINARY, cost="binary")
VorOp = _vector_op("vor", "Logical or (i1) / bitwise or.", _BINARY, cost="binary")
VaddsOp = _vector_op("vadds", "x + s", _WITH_SCALAR, cost="unary")
VmulsOp = _vector_op("vmuls", "x * s", _WITH_SCALAR, cost="unary")
VmaxsOp = _vector_op("vmaxs", "max(x, s)", _WITH_SCALAR, cost="unary")
VminsOp = _vector_op("vmins", "min(x, s)", _WITH_SCALAR, cost="unary")
VlreluOp = _vector_op("vlrelu", "x if x >= 0 else s * x (leaky relu)", _WITH_SCALAR, cost="unary")


class _DupBase(VectorOp):
    def check(self, types):
        pass


class _CompareBase(VectorOp):
    def check(self, types):
        lhs, rhs, dst = types
        if lhs != rhs and (lhs.get_shape() != rhs.get_shape() or lhs.element_type != rhs.element_type):
            _fail(self, f"compares {lhs} with {rhs}; they need one shape and type")
        if dst.get_shape() != lhs.get_shape() or dst.element_type != IntegerType(1):
            _fail(self, f"destination must be an i1 mask of shape {list(lhs.get_shape())}, got {dst}")
        mode = _str(self.properties.get("mode"))
        if mode not in COMPARE_MODES:
            _fail(self, f"mode must be one of {', '.join(COMPARE_MODES)}, got {mode!r}")


class _SelectBase(VectorOp):
    def check(self, types):
        mask, lhs, rhs, dst = types
        if mask.element_type != IntegerType(1) or mask.get_shape() != dst.get_shape():
            _fail(self, f"mask must be i1 of the destination's shape, got {mask}")
        VectorOp.check(self, [lhs, rhs, dst])


class _CastBase(VectorOp):

    def check(self, types):
        src, dst = types
        if src.get_shape() != dst.get_shape():
            _fail(self, f"source {list(src.get_shape())} and destination {list(dst.get_shape())} shapes differ")
        pair = {short_type_name(src.element_type), short_type_name(dst.element_type)}
        if "bf16" in pair and pair != {"bf16", "f32"} and len(pair) > 1:
            _fail(self, f"converts {src.element_type} to {dst.element_type}; bf16 converts to and from f32 only")
        mode = _str(self.properties.get("round"))
        if mode is not None:
            if mode not in ROUND_MODES:
                _fail(self, f"round must be one of {', '.join(ROUND_MODES)}, got '{mode}'")
            if not (is_float(src.element_type) and isinstance(dst.element_type, IntegerType)):
                _fail(self, "round applies to float -> integer casts only")


class _ReduceBase(VectorOp):
    def reduce_axes(self) -> tuple[int, ...]:
        rank = len(self.src.type.get_shape())
        axes = self.properties.get("axes")
        raw = tuple(axes.get_values()) if axes is not None else (-1,)
        return tuple(sorted({a % rank for a in raw})) if rank else ()

    def check(self, types):
        src, dst = types
        shape = src.get_shape()
        kind = _str(self.properties.get("kind"))
        if kind not in REDUCE_KINDS:
            _fail(self, f"kind must be one of {', '.join(REDUCE_KINDS)}, got {kind!r}")
        axes = self.properties.get("axes")
        raw = tuple(axes.get_values()) if axes is not None else (-1,)
        if not shape or any(not -len(shape) <= a < len(shape) for a in raw):
            _fail(self, f"axes {list(raw)} out of range for rank {len(shape)}")
        red = self.reduce_axes()
        want = tuple(1 if i in red else d for i, d in enumerate(shape))
        if tuple(dst.get_shape()) != want or dst.element_type != src.element_type:
            _fail(self, f"reducing {list(shape)} over {list(red)} gives {list(want)} {src.element_type} "
                        f"(dims kept as 1), got {dst}")


class _BroadcastBase(VectorOp):
    def check(self, types):
        src, dst = types
        ss, ds = src.get_shape(), dst.get_shape()
        if len(ss) != len(ds) or any(a not in (1, b) for a, b in zip(ss, ds)) or src.element_type != dst.element_type:
            _fail(self, f"cannot broadcast {src} to {dst}: same rank and type, dims 1 or equal")


class _TransposeBase(VectorOp):
    def permutation(self) -> tuple[int, ...]:
        rank = len(self.src.type.get_shape())
        perm = self.properties.get("perm")
        if perm is not None:
            return tuple(perm.get_values())
        return (*range(rank - 2), rank - 1, rank - 2) if rank >= 2 else tuple(range(rank))

    def check(self, types):
        src, dst = types
        ss = src.get_shape()
        perm = self.permutation()
        if sorted(perm) != list(range(len(ss))):
            _fail(self, f"perm {list(perm)} is not a permutation of {len(ss)} dims")
        want = tuple(ss[p] for p in perm)
        if tuple(dst.get_shape()) != want or dst.element_type != src.element_type:
            _fail(self, f"transposing {list(ss)} by {list(perm)} gives {list(want)}, got {dst}")


VdupOp = _vector_op("vdup", "Fills dst with a scalar.", ("*scalar", "dst"), cost="dup", moves_bits=True,
                    base=_DupBase)
VcopyOp = _vector_op("vcopy", "ub -> ub copy on the vector pipe.", _UNARY, cost="copy", moves_bits=True)
VcmpOp = _vector_op("vcmp", "i1 mask of `lhs <mode> rhs` (mode: eq, ne, lt, le, gt, ge).",
                    _BINARY, cost="compare", base=_CompareBase, mode=prop_def(StringAttr))
VselectOp = _vector_op("vselect", "mask ? lhs : rhs", ("mask", "lhs", "rhs", "dst"), cost="select",
                       base=_SelectBase)
VcastOp = _vector_op("vcast", "Element type conversion; `round` (float -> int): rint, round, floor, ceil, "
                     "trunc (default trunc, as ONNX Cast).", _UNARY, cost="cast", base=_CastBase,
                     round=opt_prop_def(StringAttr))
VreduceOp = _vector_op("vreduce", "sum / max / min over `axes` (default: the last), keeping them as 1.",
                       _UNARY, cost="reduce", base=_ReduceBase, kind=prop_def(StringAttr),
                       axes=opt_prop_def(DenseArrayBase))
VbrcbOp = _vector_op("vbrcb", "Broadcast: src dims of 1 repeat to dst's (same rank).", _UNARY,
                     cost="broadcast", moves_bits=True, base=_BroadcastBase)
VtransposeOp = _vector_op("vtranspose", "Permutes dims (`perm`, default: swap the last two).", _UNARY,
                          cost="transpose", moves_bits=True, base=_TransposeBase, perm=opt_prop_def(DenseArrayBase))
SCALAR_FORMS: dict[type[VectorOp], type[VectorOp]] = {
    VaddOp: VaddsOp, VmulOp: VmulsOp, VmaxOp: VmaxsOp, VminOp: VminsOp,
}
"""The instruction that takes a scalar second operand, per binary instruction."""


# ---------------------------------------------------------------------------
# Pipe synchronisation inside a kernel.
# ---------------------------------------------------------------------------


class _FlagOp(IRDLOperation):
    """`ascend.set_flag MTE2 -> V id 0`."""

    @classmethod
    def get(cls, src: str, dst: str, ident: int = 0):
        return cls.create(properties={"src": StringAttr(src), "dst": StringAttr(dst), "id": IntegerAttr(ident, i64)})

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.src.data, self.dst.data, int_value(self.id))

    def verify_(self) -> None:
        src, dst, ident = self.key
        for p in (src, dst):
            if p not in PIPES:
                _fail(self, f"unknown pipe '{p}'; pipes: {', '.join(PIPES)}")
        if src == dst:
            _fail(self, f"needs two different pipes, got {src} -> {dst} (use ascend.pipe_barrier {src})")
        if not 0 <= ident < FLAG_IDS:
            _fail(self, f"event id {ident} must be in 0..{FLAG_IDS - 1}")
        _needs_units(self, [], [src, dst])

    def print(self, printer: Printer) -> None:
        src, dst, ident = self.key
        printer.print_string(f" {src} -> {dst} id {ident}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        src = parser.parse_identifier()
        parser.parse_punctuation("->")
        dst = parser.parse_identifier()
        parser.parse_keyword("id")
        ident = parser.parse_integer(allow_boolean=False)
        attrs = parser.parse_optional_attr_dict()
        op = cls.get(src, dst, ident)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class SetFlagOp(_FlagOp):
    """Pipe `src` signals pipe `dst` (flag `id`, 0-7) once its queued work is done.

        ascend.set_flag MTE2 -> V id 0
    """

    name = "ascend.set_flag"
    src = prop_def(StringAttr)
    dst = prop_def(StringAttr)
    id = prop_def(IntegerAttr)


@irdl_op_definition
class WaitFlagOp(_FlagOp):
    """Pipe `dst` waits for the matching set_flag of pipe `src`.

        ascend.wait_flag MTE2 -> V id 0
    """

    name = "ascend.wait_flag"
    src = prop_def(StringAttr)
    dst = prop_def(StringAttr)
    id = prop_def(IntegerAttr)


@irdl_op_definition
class PipeBarrierOp(IRDLOperation):
    """Later work of `pipe` waits until its earlier work is done (`ALL`: every pipe).

        ascend.pipe_barrier V
    """

    name = "ascend.pipe_barrier"
    pipe = prop_def(StringAttr)

    @classmethod
    def get(cls, pipe: str) -> PipeBarrierOp:
        return cls.create(properties={"pipe": StringAttr(pipe)})

    def verify_(self) -> None:
        p = self.pipe.data
        if p not in (*PIPES, "ALL"):
            _fail(self, f"unknown pipe '{p}'; pipes: {', '.join(PIPES)}, ALL")
        _needs_units(self, [], [] if p == "ALL" else [p])

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.pipe.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> PipeBarrierOp:
        op = cls.get(parser.parse_identifier())
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


# ---------------------------------------------------------------------------
# Reference fallback: a graph op's numpy semantics over whole gm buffers.
# ---------------------------------------------------------------------------


def reference_extra_kwargs(op: ReferenceOp) -> dict[str, object]:
    """Kernel arguments of an `ascend.reference` beyond its graph op's attributes, stored
    under `extra.` keys (trans_data's origin format and logical shape)."""
    out: dict[str, object] = {}
    for key, attr in op.attrs.data.items():
        if key.startswith("extra."):
            if isinstance(attr, StringAttr):
                out[key[6:]] = attr.data
            elif isinstance(attr, DenseArrayBase):
                out[key[6:]] = tuple(attr.get_values())
    return out


@irdl_op_definition
class ReferenceOp(IRDLOperation):
    """Runs graph op `op` (its numpy semantics, reference/graph.py) on whole gm
    buffers: the lowering's fallback for an op no kernel template handles yet.
    Not a hardware instruction - a kernel holding one is marked `fallback`, so
    reports can count them (the goal is none).

        ascend.reference "graph.lrn" ins(%x : memref<1x8x4x4xf32, "gm">)
                                     outs(%y : memref<1x8x4x4xf32, "gm">) {size = 3 : i64}

    The trailing dictionary holds the graph op's attributes (checked against
    the op's attribute kinds); ins are read, outs written, all in gm.
    """

    name = "ascend.reference"
    args = var_operand_def(MemRefType)
    op = prop_def(StringAttr)
    num_inputs = prop_def(IntegerAttr)
    attrs = prop_def(DictionaryAttr)

    @classmethod
    def get(cls, op_name: str, ins: Sequence[SSAValue], outs: Sequence[SSAValue],
            attrs: dict[str, Attribute] | None = None) -> ReferenceOp:
        return cls.create(operands=[*ins, *outs], properties={
            "op": StringAttr(op_name), "num_inputs": IntegerAttr(len(ins), i64),
            "attrs": DictionaryAttr(dict(attrs or {}))})

    @property
    def ins(self) -> tuple[SSAValue, ...]:
        return tuple(self.args[: int_value(self.num_inputs)])

    @property
    def outs(self) -> tuple[SSAValue, ...]:
        return tuple(self.args[int_value(self.num_inputs):])

    @property
    def pipe(self) -> str:
        return "S"

    def graph_op_type(self):
        from geir.dialects import graph as g

        cls = g.OPS.get(self.op.data)
        return cls if isinstance(cls, type) and issubclass(cls, g.GraphOp) else None

    def verify_(self) -> None:
        _kernel_of(self)
        cls = self.graph_op_type()
        if cls is None:
            _fail(self, f"'{self.op.data}' is not a graph op")
        n = int_value(self.num_inputs)
        if not 0 <= n <= len(self.args) or n == len(self.args):
            _fail(self, f"needs inputs and at least one output, got {n} of {len(self.args)} operands as inputs")
        for i, v in enumerate(self.args):
            _memref(self, v, f"operand #{i}", ["gm"])
        for key, value in self.attrs.data.items():
            kind = cls.ATTRS.get(key)
            if kind is None and key.startswith("extra."):
                continue
            if kind is None:
                _fail(self, f"'{self.op.data}' has no attribute '{key}'")
            if not kind.accepts(value):
                _fail(self, f"attribute '{key}' of '{self.op.data}' must be {kind.describe}, got {value}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.op.data)
        for word, values in (("ins", self.ins), ("outs", self.outs)):
            printer.print_string(f" {word}(")
            printer.print_list(values, lambda v: (printer.print_operand(v), printer.print_string(" : "),
                                                  printer.print_attribute(v.type)))
            printer.print_string(")")
        if self.attrs.data:
            printer.print_string(" ")
            printer.print_attr_dict(self.attrs.data)
        printer.print_op_attributes(self.attributes, print_keyword=True)

    @classmethod
    def parse(cls, parser: Parser) -> ReferenceOp:
        op_name = parser.parse_str_literal()
        groups = []
        for word in ("ins", "outs"):
            parser.parse_keyword(word)
            pos = parser.pos

            def one():
                operand = parser.parse_unresolved_operand()
                parser.parse_punctuation(":")
                return operand, parser.parse_type()

            items = parser.parse_comma_separated_list(parser.Delimiter.PAREN, one)
            groups.append(parser.resolve_operands([o for o, _ in items], [t for _, t in items], pos))
        attrs = parser.parse_optional_attr_dict()
        extra = parser.parse_optional_attr_dict_with_keyword()
        op = cls.get(op_name, groups[0], groups[1], attrs)
        if extra is not None:
            op.attributes.update(extra.data)
        return op


# ---------------------------------------------------------------------------
# Collectives between devices (HCCL).
# ---------------------------------------------------------------------------

COLLECTIVE_REDUCTIONS = ("sum", "max", "min", "prod")


class CollectiveOp(IRDLOperation):
    """Base of the collectives: gm buffers in, then out, among the device ranks `ranks` (the
    group, in its order; a rank runs the op only if it is one of them). The op is the whole
    body of an `hccl` kernel, launched on a stream like any kernel: a collective is a task on
    a stream (HCCL's), ordered by the stream and events, that takes no AI core. Its data moves
    over the server's links (target/server.py prices it); docs/multi-device.md.

        ascend.all_reduce %x, %y {ranks = array<i64: 0, 1>, reduction = "sum"}
            : memref<8x64xf16, "gm">, memref<8x64xf16, "gm">
    """

    args = var_operand_def(MemRefType)
    NUM_INS: ClassVar[int] = 1
    NUM_OUTS: ClassVar[int] = 1
    KIND: ClassVar[str] = ""

    @property
    def ins(self) -> tuple[SSAValue, ...]:
        return tuple(self.args[:self.NUM_INS])

    @property
    def outs(self) -> tuple[SSAValue, ...]:
        return tuple(self.args[self.NUM_INS:])

    @property
    def group(self) -> tuple[int, ...]:
        return tuple(self.ranks.get_values())

    @property
    def nbytes(self) -> int:
        """The bytes per rank the cost model prices: the buffer of an all-reduce or a send,
        the gathered output of an all-gather, a reduce-scatter's input, an all-to-all's send
        buffer (target/server.py's convention)."""
        return nbytes_of(self.args[0].type if self.KIND != "all_gather" else self.args[-1].type)

    def verify_(self) -> None:
        kernel = _kernel_of(self)
        if kernel.core_type.data != HCCL:
            _fail(self, f"runs in an hccl kernel, not in @{kernel.sym_name.data} (core_type "
                        f"'{kernel.core_type.data}')")
        if len(self.args) != self.NUM_INS + self.NUM_OUTS:
            _fail(self, f"takes {self.NUM_INS} input and {self.NUM_OUTS} output buffer(s), got {len(self.args)}")
        types = [_memref(self, v, f"operand #{i}", ["gm"])[1] for i, v in enumerate(self.args)]
        if len({t.element_type for t in types}) > 1:
            _fail(self, f"needs one element type, got {', '.join(str(t.element_type) for t in types)}")
        group = self.group
        if not group or len(set(group)) != len(group) or min(group) < 0:
            _fail(self, f"ranks must be distinct ranks >= 0, got {list(group)}")
        self.verify_shapes([tuple(t.get_shape()) for t in types], len(group))

    def verify_shapes(self, shapes: list[tuple[int, ...]], p: int) -> None:
        if shapes[0] != shapes[1]:
            _fail(self, f"output {list(shapes[1])} must have the input's shape {list(shapes[0])}")

    def _axis(self, name: str, rank: int) -> int:
        axis = int_value(getattr(self, name))
        if not -rank <= axis < rank:
            _fail(self, f"{name} {axis} is out of range for rank {rank}")
        return axis % rank

    def _reduction(self) -> None:
        if self.reduction.data not in COLLECTIVE_REDUCTIONS:
            _fail(self, f"reduction must be one of {', '.join(COLLECTIVE_REDUCTIONS)}, got '{self.reduction.data}'")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.args, printer.print_operand)
        printer.print_string(" ")
        printer.print_attr_dict(dict(self.properties))
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" : ")
        printer.print_list([v.type for v in self.args], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser):
        pos = parser.pos
        operands = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        props = parser.parse_optional_attr_dict()
        extra = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        op = cls.create(operands=parser.resolve_operands(operands, types, pos), properties=props)
        if extra is not None:
            op.attributes.update(extra.data)
        return op


def _along(op: CollectiveOp, small: tuple[int, ...], large: tuple[int, ...], axis: int, p: int,
           what: str) -> None:
    want = tuple(d * p if i == axis else d for i, d in enumerate(small))
    if len(small) != len(large) or large != want:
        _fail(op, f"{what}: {list(large)} must be {list(small)} with dim {axis} times {p} ranks")


@irdl_op_definition
class AllReduceOp(CollectiveOp):
    """Every rank's buffer reduced elementwise (`reduction`) over the group, the result on
    every rank."""

    name = "ascend.all_reduce"
    KIND: ClassVar[str] = "all_reduce"
    ranks = prop_def(DenseArrayBase)
    reduction = prop_def(StringAttr)

    def verify_shapes(self, shapes, p):
        super().verify_shapes(shapes, p)
        self._reduction()


@irdl_op_definition
class AllGatherOp(CollectiveOp):
    """The ranks' buffers concatenated along `axis` in the group's order, on every rank."""

    name = "ascend.all_gather"
    KIND: ClassVar[str] = "all_gather"
    ranks = prop_def(DenseArrayBase)
    axis = prop_def(IntegerAttr)

    def verify_shapes(self, shapes, p):
        _along(self, shapes[0], shapes[1], self._axis("axis", len(shapes[0])), p, "output")


@irdl_op_definition
class ReduceScatterOp(CollectiveOp):
    """The ranks' buffers reduced, then split along `axis`: the group's i-th rank keeps the
    i-th part."""

    name = "ascend.reduce_scatter"
    KIND: ClassVar[str] = "reduce_scatter"
    ranks = prop_def(DenseArrayBase)
    axis = prop_def(IntegerAttr)
    reduction = prop_def(StringAttr)

    def verify_shapes(self, shapes, p):
        _along(self, shapes[1], shapes[0], self._axis("axis", len(shapes[1])), p, "input")
        self._reduction()


@irdl_op_definition
class AllToAllOp(CollectiveOp):
    """Each rank splits its buffer along `split_axis` into one part per rank and sends the
    i-th part to the group's i-th rank; each concatenates what it receives along
    `concat_axis` in the group's order."""

    name = "ascend.all_to_all"
    KIND: ClassVar[str] = "all_to_all"
    ranks = prop_def(DenseArrayBase)
    split_axis = prop_def(IntegerAttr)
    concat_axis = prop_def(IntegerAttr)

    def verify_shapes(self, shapes, p):
        x, y = shapes
        split, concat = self._axis("split_axis", len(x)), self._axis("concat_axis", len(x))
        if x[split] % p:
            _fail(self, f"split_axis dim {x[split]} does not divide among {p} ranks")
        part = tuple(d // p if i == split else d for i, d in enumerate(x))
        _along(self, part, y, concat, p, "output")


class _PointToPointOp(CollectiveOp):
    """A send or a receive between this rank and `peer`; the k-th send from a rank to a peer
    meets the peer's k-th receive from it."""

    NUM_OUTS: ClassVar[int] = 0

    @property
    def group(self) -> tuple[int, ...]:
        return (int_value(self.peer),)

    def verify_shapes(self, shapes, p):
        pass


@irdl_op_definition
class SendOp(_PointToPointOp):
    """The buffer sent to rank `peer` (buffered: the send ends when the data has left)."""

    name = "ascend.send"
    KIND: ClassVar[str] = "send"
    peer = prop_def(IntegerAttr)


@irdl_op_definition
class RecvOp(_PointToPointOp):
    """The buffer filled with what rank `peer` sends."""

    name = "ascend.recv"
    KIND: ClassVar[str] = "recv"
    NUM_INS: ClassVar[int] = 0
    NUM_OUTS: ClassVar[int] = 1
    peer = prop_def(IntegerAttr)


POINT_TO_POINT = (SendOp.KIND, RecvOp.KIND)
"""The collectives between two ranks (the others are among a group)."""


# ---------------------------------------------------------------------------
# Gears: one program per input shape, chosen at run time.
# ---------------------------------------------------------------------------


@irdl_op_definition
class GearsOp(IRDLOperation):
    """The run-time selection of a geared model (driver/gears.py): the top-level module holds
    one program module per gear (`builtin.module @gear_0 { ... }`) and this op, which lists
    them; a run takes the program whose host function's input shapes the inputs have. With
    option "range_buckets" (driver/range_buckets.py) each program is a shape-range program
    over a part of the range, and a run takes the first whose ranges hold the inputs' sizes.

        ascend.gears {option = "dynamic_batch_size", programs = [@gear_0, @gear_1]}

    Verified: each program is a sibling module with one host function; the programs take the
    same inputs (count, element types, ranks), no two of the same shapes; 2 to 100 of them
    (ATC's limits); a range bucket has a shape range (an extent argument)."""

    name = "ascend.gears"
    programs = attr_def(ArrayAttr)
    option = attr_def(StringAttr)
    assembly_format = "attr-dict"

    MIN: ClassVar[int] = 2
    MAX: ClassVar[int] = 100

    def program_modules(self) -> list[ModuleOp]:
        parent = self.parent_op()
        by_name = {op.sym_name.data: op for op in (parent.ops if isinstance(parent, ModuleOp) else ())
                   if isinstance(op, ModuleOp) and op.sym_name is not None}
        out = []
        for ref in self.programs.data:
            if not isinstance(ref, SymbolRefAttr) or ref.nested_references.data:
                _fail(self, f"programs must be module symbols (@gear_0), got {ref}")
            if ref.root_reference.data not in by_name:
                _fail(self, f"program @{ref.root_reference.data} is not a module beside this op")
            out.append(by_name[ref.root_reference.data])
        return out

    def input_types(self, module: ModuleOp) -> list[MemRefType]:
        """The input arguments' types of a program's host function."""
        from xdsl.dialects import func

        hosts = [op for op in module.ops if isinstance(op, func.FuncOp)]
        if len(hosts) != 1:
            _fail(self, f"program @{module.sym_name.data} must hold one host function, not {len(hosts)}")
        types = hosts[0].function_type.inputs.data
        attrs = hosts[0].arg_attrs.data if hosts[0].arg_attrs is not None else [DictionaryAttr({})] * len(types)
        return [t for t, d in zip(types, attrs)  # the inputs, not the outputs or the workspace
                if attr_names.OUTPUT not in d.data and attr_names.WORKSPACE not in d.data]

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), ModuleOp):
            _fail(self, "belongs in the top-level module, beside its programs")
        modules = self.program_modules()
        if not self.MIN <= len(modules) <= self.MAX:
            _fail(self, f"lists {len(modules)} program(s); a geared model has {self.MIN} to {self.MAX}")
        signatures = [self.input_types(m) for m in modules]
        first = signatures[0]
        for m, types in zip(modules[1:], signatures[1:]):
            if len(types) != len(first) or any(
                    a_.element_type != b_.element_type or len(a_.get_shape()) != len(b_.get_shape())
                    for a_, b_ in zip(types, first)):
                _fail(self, f"program @{m.sym_name.data} takes other inputs than @{modules[0].sym_name.data} "
                            f"(count, element types or ranks)")
        if self.option.data == "range_buckets":
            for m in modules:
                host = next(op for op in m.ops if isinstance(op, func.FuncOp))
                if not any(attr_names.EXTENT in d.data for d in (host.arg_attrs.data if host.arg_attrs else ())):
                    _fail(self, f"program @{m.sym_name.data} has no shape range (no argument marked "
                                f"{attr_names.EXTENT}): a range bucket is a shape-range program")
        shapes = [tuple(tuple(t.get_shape()) for t in types) for types in signatures]
        for i, s in enumerate(shapes):
            if s in shapes[:i]:
                _fail(self, f"programs @{modules[shapes.index(s)].sym_name.data} and @{modules[i].sym_name.data} "
                            f"take the same shapes")


# ---------------------------------------------------------------------------
# The dialect.
# ---------------------------------------------------------------------------

ATTRIBUTES = [StreamType, EventType]


def _all_ops() -> list[type[Operation]]:
    ops: list[type[Operation]] = []
    for value in list(globals().values()):
        if (
            isinstance(value, type)
            and issubclass(value, IRDLOperation)
            and getattr(value, "name", "").startswith("ascend.")
            and value not in ops
        ):
            ops.append(value)
    return ops


OPS: dict[str, type[Operation]] = {op.name: op for op in _all_ops()}

BF16_VECTOR_OPS: frozenset[type[VectorOp]] = frozenset(
    op for op in OPS.values() if isinstance(op, type) and issubclass(op, VectorOp)
    and (op.MOVES_BITS or issubclass(op, _CastBase)))
"""The vector instructions that take bf16 on the 910B (dav-c220: Ascend C's Add, Exp,
ReduceSum, Compare, Select, ... take half / float; its Cast converts bfloat16 <-> float):
those that move elements, and vcast to and from f32. Kernels compute bf16 in f32."""
Ascend = Dialect("ascend", list(OPS.values()), ATTRIBUTES)


def is_ascend_module(module: ModuleOp) -> bool:
    """A lowered program: it has kernels, or a host function of gm buffers (a program whose
    every value is empty launches nothing)."""
    return any(isinstance(op, KernelOp) for op in module.ops) or any(
        isinstance(f, func.FuncOp) and any(isinstance(t, MemRefType) for t in f.function_type.inputs.data)
        for f in module.ops)
