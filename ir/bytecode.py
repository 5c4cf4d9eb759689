"""A binary form of a module that loads without a parser: what an offline model's loader reads.

MLIR text is the form people and tools read, and the form a program is checked in; parsing it
back costs most of an offline model's load (a ResNet-50 program is ~16k ops, seconds of
lexing). This form holds the same module as

* a JSON table of strings (op, property and attribute names) and one of attributes, each
  attribute once, its parts by index into the table before it;
* one little-endian int32 array of the ops, in order (below).

Loading builds each attribute with its class's generic constructor and each op with
`Operation.create`: no lexing, and nothing in the file is ever run (no pickle). A
`ParametrizedAttribute` is its name and its parameters; a `Data` attribute one of the kinds
`_DATA` lists; any other attribute is its MLIR text, parsed alone.

The op stream, recursively: an op is `name, location, #operands, operand values...,
#results, (type, name)..., #properties, (name, attr)..., #attributes, (name, attr)...,
#successors, blocks..., #regions, regions...`; a region is `#blocks, (#args, (type, name)...)
per block`, then `#ops, ops...` per block. Values are numbered as they are defined - block
arguments when their region starts, an op's results after its regions - and blocks as their
region starts, so a value is always defined before its uses are read. A module that uses a
value before its definition in that order (possible across blocks of a CFG region) cannot
be written: `BytecodeError`.

`weights`: a large `BytesAttr` (a constant's bytes) can live outside the form, by name
(`encode(..., external=)` / `decode(..., blobs=)`): the offline model keeps them in its
weights file.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DictionaryAttr,
    FloatData,
    IntAttr,
    ModuleOp,
    Signedness,
    SignednessAttr,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Block, Operation, ParametrizedAttribute, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException, ParseError

from geir.ir.collector import collector_paused

MAGIC = b"geir-ir\0"
VERSION = 1


class BytecodeError(ValueError):
    """A module this form cannot hold, or bytes that are not this form."""


# -- writing ------------------------------------------------------------------------------


class _Writer:
    def __init__(self, external: Mapping[bytes, str]):
        self.external = external
        self.strings: dict[str, int] = {}
        self.attrs: list = []
        self.attr_ids: dict[object, int] = {}
        self.keep: list[Attribute] = []  # the unhashable ones keyed by id: alive while ids are keys
        self.values: dict[SSAValue, int] = {}
        self.blocks: dict[Block, int] = {}
        self.out: list[int] = []

    def string(self, s: str) -> int:
        i = self.strings.get(s)
        if i is None:
            i = self.strings[s] = len(self.strings)
        return i

    def name(self, v: SSAValue) -> int:
        return -1 if v.name_hint is None else self.string(v.name_hint)

    def attr(self, a: Attribute) -> int:
        try:
            key: object = a
            i = self.attr_ids.get(a)
        except TypeError:  # a parameter xDSL holds as a list (a fused location's): once per object
            key = id(a)
            self.keep.append(a)
            i = self.attr_ids.get(key)
        if i is not None:
            return i
        self.attrs.append(self._entry(a))
        i = self.attr_ids[key] = len(self.attrs) - 1
        return i

    def _entry(self, a: Attribute) -> list:
        t = type(a)
        if isinstance(a, ParametrizedAttribute):
            return ["p", a.name, [self.attr(p) for p in a.parameters]]
        if t is IntAttr:
            return ["i", a.data]
        if t is StringAttr:
            return ["s", a.data]
        if t is BytesAttr:
            name = self.external.get(a.data)
            return ["w", name] if name is not None else ["b", a.data.hex()]
        if t is FloatData:
            return ["f", float(a.data).hex()]
        if t is ArrayAttr:
            return ["a", [self.attr(x) for x in a.data]]
        if t is DictionaryAttr:
            return ["d", [[k, self.attr(v)] for k, v in a.data.items()]]
        if t is SignednessAttr:
            return ["g", a.data.name]
        return ["t", str(a)]

    def op(self, op: Operation) -> None:
        out = self.out
        out.append(self.string(op.name))
        out.append(-1 if _unknown(op.location) else self.attr(op.location))
        self.refs(self.values, op.operands, f"'{op.name}' uses a value before its definition in program order")
        out.append(len(op.results))
        for r in op.results:
            out += (self.attr(r.type), self.name(r))
        for table in (op.properties, op.attributes):
            out.append(len(table))
            for k, v in table.items():
                out += (self.string(k), self.attr(v))
        self.refs(self.blocks, op.successors, f"'{op.name}' branches to a block outside its region")
        out.append(len(op.regions))
        for r in op.regions:
            self.region(r)
        for r in op.results:
            self.values[r] = len(self.values)

    def refs(self, numbers: Mapping, items, missing: str) -> None:
        """The count of `items` (values or blocks), then each one's number; one not numbered
        yet raises `missing`."""
        self.out.append(len(items))
        for x in items:
            i = numbers.get(x)
            if i is None:
                raise BytecodeError(missing)
            self.out.append(i)

    def region(self, region: Region) -> None:
        out = self.out
        blocks = list(region.blocks)
        out.append(len(blocks))
        for b in blocks:
            self.blocks[b] = len(self.blocks)
            out.append(len(b.args))
            for arg in b.args:
                out += (self.attr(arg.type), self.name(arg))
                self.values[arg] = len(self.values)
        for b in blocks:
            ops = list(b.ops)
            out.append(len(ops))
            for op in ops:
                self.op(op)


def _unknown(loc: Attribute | None) -> bool:
    return loc is None or isinstance(loc, UnknownLoc)


def encode(module: ModuleOp, external: Mapping[bytes, str] | None = None) -> bytes:
    """The module's binary form. `external`: bytes of constants kept elsewhere, by name."""
    w = _Writer(external or {})
    w.op(module)
    head = json.dumps({"version": VERSION, "strings": list(w.strings), "attrs": w.attrs},
                      separators=(",", ":")).encode()
    ops = np.asarray(w.out, dtype="<i4").tobytes()
    return MAGIC + len(head).to_bytes(8, "little") + head + ops


# -- reading ------------------------------------------------------------------------------


_DATA = {
    "i": lambda x, r: IntAttr(x),
    "s": lambda x, r: StringAttr(x),
    "b": lambda x, r: BytesAttr(bytes.fromhex(x)),
    "f": lambda x, r: FloatData(float.fromhex(x)),
    "a": lambda x, r: ArrayAttr([r.attrs[i] for i in x]),
    "d": lambda x, r: DictionaryAttr({k: r.attrs[i] for k, i in x}),
    "g": lambda x, r: SignednessAttr(Signedness[x]),
    "w": lambda x, r: BytesAttr(r.blob(x)),
}
"""The kinds of `Data` attribute written by value, each read back by its constructor."""


class _Reader:
    def __init__(self, ctx: Context, blobs: Mapping[str, bytes | memoryview]):
        self.ctx = ctx
        self.blobs = blobs
        self.attrs: list[Attribute] = []
        self.values: list[SSAValue] = []
        self.blocks: list[Block] = []
        self.op_classes: dict[str, type[Operation]] = {}
        self.attr_classes: dict[str, type[ParametrizedAttribute]] = {}

    def blob(self, name: str) -> bytes:
        if name not in self.blobs:
            raise BytecodeError(f"constant bytes '{name}' are not in the weights")
        return bytes(self.blobs[name])

    def read_attrs(self, entries: list) -> None:
        from xdsl.parser import Parser

        for e in entries:
            kind = e[0]
            if kind == "p":
                cls = self.attr_class(e[1])
                if cls is None:
                    raise BytecodeError(f"unknown attribute '{e[1]}'")
                a = cls.new([self.attrs[i] for i in e[2]])
            elif kind == "t":
                a = Parser(self.ctx, e[1]).parse_attribute()
            else:
                a = _DATA[kind](e[1], self)
            self.attrs.append(a)

    def attr_class(self, name: str) -> type[ParametrizedAttribute]:
        cls = self.attr_classes.get(name)
        if cls is None:
            cls = _builtin_attrs().get(name)
            if cls is None and "." in name:
                cls = self.ctx.get_optional_attr(name) or self.ctx.get_optional_type(name)
            if cls is None:
                raise BytecodeError(f"unknown attribute '{name}'")
            self.attr_classes[name] = cls
        return cls

    def op_class(self, name: str) -> type[Operation]:
        cls = self.op_classes.get(name)
        if cls is None:
            cls = self.ctx.get_optional_op(name)
            if cls is None:
                raise BytecodeError(f"unknown op '{name}'")
            self.op_classes[name] = cls
        return cls

    def ops(self, stream: list[int], strings: list[str]) -> Operation:
        attrs, values, blocks = self.attrs, self.values, self.blocks
        pos = 0

        def op() -> Operation:
            nonlocal pos
            name = strings[stream[pos]]
            loc = stream[pos + 1]
            n = stream[pos + 2]
            pos += 3
            operands = [values[i] for i in stream[pos:pos + n]]
            pos += n
            n = stream[pos]
            typed = stream[pos + 1:pos + 1 + 2 * n]
            pos += 1 + 2 * n
            tables = []
            for _ in range(2):
                n = stream[pos]
                pairs = stream[pos + 1:pos + 1 + 2 * n]
                tables.append({strings[pairs[j]]: attrs[pairs[j + 1]] for j in range(0, 2 * n, 2)})
                pos += 1 + 2 * n
            n = stream[pos]
            successors = [blocks[i] for i in stream[pos + 1:pos + 1 + n]]
            pos += 1 + n
            n = stream[pos]
            pos += 1
            regions = [region() for _ in range(n)]
            new = self.op_class(name).create(operands=operands, result_types=[attrs[i] for i in typed[::2]],
                                             properties=tables[0], attributes=tables[1], successors=successors,
                                             regions=regions, location=attrs[loc] if loc >= 0 else None)
            named(new.results, typed)
            return new

        def named(defined, typed: list[int]) -> None:
            """Values just defined (results, block arguments): their names, then their numbers."""
            for v, hint in zip(defined, typed[1::2]):
                if hint >= 0:
                    v.name_hint = strings[hint]
            values.extend(defined)

        def region() -> Region:
            nonlocal pos
            n = stream[pos]
            pos += 1
            made = []
            for _ in range(n):
                k = stream[pos]
                typed = stream[pos + 1:pos + 1 + 2 * k]
                b = Block(arg_types=[attrs[i] for i in typed[::2]])
                named(b.args, typed)
                pos += 1 + 2 * k
                blocks.append(b)
                made.append(b)
            for b in made:
                k = stream[pos]
                pos += 1
                b.add_ops([op() for _ in range(k)])
            return Region(made)

        top = op()
        if pos != len(stream):
            raise BytecodeError(f"{len(stream) - pos} values after the module")
        return top


@functools.cache
def _builtin_attrs() -> dict[str, type[ParametrizedAttribute]]:
    """The builtin dialect's attributes no dialect registers (locations)."""
    from xdsl.dialects import builtin

    return {c.name: c for c in vars(builtin).values()
            if isinstance(c, type) and issubclass(c, ParametrizedAttribute) and isinstance(getattr(c, "name", None), str)}


def decode(data: bytes | memoryview, ctx: Context, blobs: Mapping[str, bytes | memoryview] | None = None) -> ModuleOp:
    """The module of `encode`'s bytes, built in `ctx`, its external constants from `blobs`.
    Bytes that are not this form, or refer to ops or attributes `ctx` does not know, raise
    `BytecodeError`; the module is not verified (its writer had a verified one)."""
    data = memoryview(data)
    if bytes(data[:len(MAGIC)]) != MAGIC:
        raise BytecodeError("not a geir binary module")
    start = len(MAGIC) + 8
    size = int.from_bytes(data[len(MAGIC):start], "little")
    try:
        head = json.loads(bytes(data[start:start + size]))
        if head.get("version") != VERSION:
            raise BytecodeError(f"binary module version {head.get('version')!r}; this geir reads {VERSION}")
        stream = np.frombuffer(data[start + size:], dtype="<i4").tolist()
        r = _Reader(ctx, blobs or {})
        with collector_paused():  # tens of thousands of new objects, none of them garbage
            r.read_attrs(head["attrs"])
            module = r.ops(stream, head["strings"])
    except BytecodeError:
        raise
    except (ValueError, KeyError, IndexError, TypeError, DiagnosticException, ParseError) as e:
        raise BytecodeError(f"malformed binary module: {type(e).__name__}: {e}") from None
    if not isinstance(module, ModuleOp):
        raise BytecodeError(f"the binary form holds '{module.name}', not a module")
    return module
