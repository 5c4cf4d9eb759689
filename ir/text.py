"""MLIR text in and out, with weights as resource blobs.

Constants keep their bytes in dense attributes in memory. In text, small ones
are literals (`dense<[1, 2]>`), large ones `dense_resource<name>` with the
bytes in the file's `{-# dialect_resources: {builtin: {...}} #-}` section in
MLIR's blob encoding ("0x" + 4-byte little-endian alignment + data), so a
printed module parses back to the same bits. With `elide=True` large
constants print as `dense_resource<__elided__>` and no blobs are written
(MLIR's convention for dumps).

xDSL keeps parsed blobs in a process-wide store on the builtin dialect; we
move them into the constants right after parsing and leave the store empty,
so nothing leaks between modules.

Both forms go through upstream MLIR (`mlir-opt --allow-unregistered-dialect`) and back:
the generic form keeps the blobs, and the parser reads upstream's location aliases
defined after the module. The parser also remembers where each op starts
(`source_location`, for verifier errors) and points a "not registered" error at the
name itself.
"""

from __future__ import annotations

import io
import re
import weakref
from collections.abc import Mapping

import numpy as np
from xdsl.context import Context
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser
from xdsl.utils.lexer import Span
from xdsl.printer import Printer

from geir.ir.types import array_from_dense, is_float_dtype, is_narrow_float_dtype, to_dtype

LITERAL_LIMIT = 16
"""Constants with more elements than this print as resource blobs."""

ELIDED = "__elided__"


# ---------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------


class _ResourceCollector:
    """The blobs of one printed file; equal bytes are one blob (a weight shared by the gears
    of a geared model, or two equal constants), under the first name given them."""

    def __init__(self, elide: bool):
        self.elide = elide
        self.blobs: dict[str, DenseIntOrFPElementsAttr] = {}
        self.names: set[str] = set()
        self.by_blob: dict[tuple[int, bytes], str] = {}

    def add(self, hint: str | None, attr: DenseIntOrFPElementsAttr) -> str:
        if self.elide:
            return ELIDED
        blob = (_alignment(attr), attr.data.data)
        if blob in self.by_blob:
            return self.by_blob[blob]
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint or "cst") or "cst"
        if not (base[0].isalpha() or base[0] == "_"):
            base = "_" + base
        name, n = base, 0
        while name in self.names:
            n += 1
            name = f"{base}_{n}"
        self.names.add(name)
        self.blobs[name] = attr
        self.by_blob[blob] = name
        return name


def _alignment(attr: DenseIntOrFPElementsAttr) -> int:
    return max(to_dtype(attr.get_type().element_type).itemsize, 1)


def encode_blob(attr: DenseIntOrFPElementsAttr) -> str:
    return "0x" + _alignment(attr).to_bytes(4, "little").hex().upper() + attr.data.data.hex().upper()


def decode_blob(blob: str) -> bytes:
    # 8 hex digits of alignment, then the data.
    return bytes.fromhex(blob[10:])


def print_constant_value(printer: Printer, value: Attribute, hint: str | None = None) -> None:
    """Print a graph.constant value: literal, resource handle or hex."""
    if isinstance(value, DenseResourceAttr):
        printer.print_string(f"dense_resource<{value.resource_handle.data}>")
        return
    assert isinstance(value, DenseIntOrFPElementsAttr)
    count = len(value)
    array = array_from_dense(value)
    stored = np.frombuffer(value.data.data, dtype=array.dtype)  # one element for a splat: never expanded
    floating = is_float_dtype(array.dtype) or is_narrow_float_dtype(array.dtype)
    if floating and count and not np.isfinite(stored.astype(np.float32)).all():
        # xDSL reads `dense<0xFF800000>` as an integer, not as float bits: print the bytes.
        if count > LITERAL_LIMIT and getattr(printer, "_geir_resources", None) is not None:
            printer.print_string(f"dense_resource<{printer._geir_resources.add(hint, value)}>")
            return
        data = stored[:1].tobytes() if _is_splat(value) else value.data.data
        printer.print_string(f'dense<"0x{data.hex().upper()}">')
        return
    if count <= LITERAL_LIMIT:
        value.print_without_type(printer)
        return
    if _is_splat(value):
        first = stored[0].item()
        printer.print_string("dense<")
        value._print_one_elem(first, printer)  # noqa: SLF001 - xDSL's element printer
        printer.print_string(">")
        return
    collector: _ResourceCollector | None = getattr(printer, "_geir_resources", None)
    if collector is None:
        printer.print_string(f'dense<"0x{value.data.data.hex().upper()}">')
        return
    printer.print_string(f"dense_resource<{collector.add(hint, value)}>")


def print_constant_op(printer: Printer, op, value: Attribute, result) -> None:
    """The custom form shared by graph.constant and ascend.constant, attributes first as in
    MLIR's arith.constant: ` [{...}] <value> : <value type>`."""
    if op.attributes:
        printer.print_op_attributes(op.attributes)
    printer.print_string(" ")
    print_constant_value(printer, value, result.name_hint)
    printer.print_string(" : ")
    printer.print_attribute(value.get_type())


def _is_splat(value: DenseIntOrFPElementsAttr) -> bool:
    t = value.get_type()
    if len(value.data.data) == to_dtype(t.element_type).itemsize:
        return True  # stored as one element (a placeholder weight): do not expand it to check
    a = array_from_dense(value).reshape(-1)
    return bool(a.size) and bool(np.all(a.view(np.uint8).reshape(a.size, -1) == a[:1].view(np.uint8)))


class _Printer(Printer):
    """xDSL's printer, with a constant's large `value` as a resource blob (or elided) in
    the generic form too, where xDSL would print every byte inline."""

    _constant: tuple[Attribute, str | None] | None = None  # (value, name hint) of the op printing
    _memo: dict[Attribute, str] | None = None  # _MEMO's attributes -> their text

    def print_op_with_default_format(self, op) -> None:
        outer = self._constant
        value = op.properties.get("value")
        self._constant = (value, op.results[0].name_hint if op.results else None) if value is not None else None
        try:
            super().print_op_with_default_format(op)
        finally:
            self._constant = outer

    def print_attribute(self, attribute: Attribute) -> None:
        if type(attribute) in _MEMO:  # printed once, then its text (a program repeats its types)
            if self._memo is None:
                self._memo = {}
            text = self._memo.get(attribute)
            if text is None:
                stream, column = self.stream, self._current_column
                self.stream = io.StringIO()
                try:
                    super().print_attribute(attribute)
                    text = self._memo[attribute] = self.stream.getvalue()
                finally:
                    self.stream, self._current_column = stream, column
            self.print_string(text)
            return
        constant, self._constant = self._constant, None  # attributes inside print as usual
        try:
            if constant is not None and attribute is constant[0] and isinstance(attribute, DenseIntOrFPElementsAttr):
                print_constant_value(self, attribute, constant[1])
                self.print_string(" : ")
                self.print_attribute(attribute.get_type())
            else:
                super().print_attribute(attribute)
        finally:
            self._constant = constant


_MEMO = frozenset({MemRefType, TensorType, IntegerType, IndexType, IntegerAttr, StridedLayoutAttr})
"""Attributes whose text depends on nothing but themselves (no resource, no alias), printed
once per printer: a lowered program spells its memref types thousands of times."""


def print_module(
    module: ModuleOp,
    stream: io.TextIOBase | None = None,
    *,
    elide: bool = False,
    debuginfo: bool = True,
    generic: bool = False,
    blobs: dict[str, bytes] | None = None,
) -> str | None:
    """Print a module with its resource section; returns the text if no stream. `blobs`: a
    dict that takes the resources' raw bytes instead (name -> data; the text then has no
    resource section and `parse_module(..., blobs=)` reads it back with them)."""
    out = io.StringIO() if stream is None else stream
    printer = _Printer(stream=out, print_debuginfo=debuginfo, print_generic_format=generic)
    collector = _ResourceCollector(elide)
    printer._geir_resources = collector  # type: ignore[attr-defined]
    body = io.StringIO()
    printer.stream = body
    printer.print_op(module)
    text = body.getvalue()
    if debuginfo:
        # Unknown locations carry nothing; MLIR prints them, we keep dumps readable.
        text = text.replace(" loc(unknown)", "")
    out.write(text)
    if blobs is not None:
        blobs.update((name, attr.data.data) for name, attr in collector.blobs.items())
    else:
        _print_resources(out, {name: encode_blob(attr) for name, attr in collector.blobs.items()})
    out.write("\n")
    return out.getvalue() if stream is None else None


def _print_resources(out, blobs: dict[str, str]) -> None:
    if not blobs:
        return
    out.write("\n\n{-#\n  dialect_resources: {\n    builtin: {\n")
    items = list(blobs.items())
    for i, (key, blob) in enumerate(items):
        sep = "," if i + 1 < len(items) else ""
        out.write(f'      {key}: "{blob}"{sep}\n')
    out.write("    }\n  }\n#-}")


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------


_UNREGISTERED = re.compile(r"(?:Operation |')([\w.$-]+)'? is not registered")
"""xDSL's message for an op, type or attribute name no dialect defines."""

_SOURCE: weakref.WeakKeyDictionary[Operation, Span] = weakref.WeakKeyDictionary()
"""Where each parsed op starts in its text (ops made later have no entry)."""


class _Parser(Parser):
    """xDSL's parser, recording where each op starts (`source_location`) and pointing a
    "not registered" error at the name it is about, not at the token after it (often on
    the next line)."""

    def raise_error(self, msg, at_position=None, end_position=None):
        unregistered = _UNREGISTERED.fullmatch(msg) if at_position is None else None
        if unregistered:
            at_position = self._name_span(unregistered[1])
        super().raise_error(msg, at_position, end_position)

    def _name_span(self, name: str) -> Span | None:
        """The span of `name`, the last token read, with its `!`/`#` sigil or its quotes."""
        text = self.lexer.input.content
        start = text.rfind(name, 0, self._current_token.span.start)
        if start < 0:
            return None
        stop = start + len(name)
        if start and text[start - 1] in '!#"':
            start -= 1
            stop += text[start] == '"'
        return Span(start, stop, self.lexer.input)

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        op = super().parse_operation()
        _SOURCE[op] = start
        return op

    def parse_optional_type(self):
        """A memref or tensor type whose text was parsed before in this input is that type
        again (attributes are values): a lowered program spells ~700 distinct memref types
        ~15,000 times, and lexing them was half of loading it."""
        tok = self._current_token
        if tok.text not in _CACHED_TYPES:
            return super().parse_optional_type()
        text = self.lexer.input.content
        end = _type_end(text, tok.span.end)
        if end is None:
            return super().parse_optional_type()
        cache = self.__dict__.setdefault("_types", {})
        key = text[tok.span.start:end]
        hit = cache.get(key)
        if hit is not None:
            self._resume_from(end)
            return hit
        parsed = super().parse_optional_type()
        if parsed is not None and self._last_end() == end:
            cache[key] = parsed
        return parsed

    def _last_end(self) -> int:
        """Where the text consumed so far ends (the next token's start, less whitespace)."""
        text, at = self.lexer.input.content, self._current_token.span.start
        while at > 0 and text[at - 1].isspace():
            at -= 1
        return at


_CACHED_TYPES = frozenset({"memref", "tensor"})


def _type_end(text: str, at: int) -> int | None:
    """The index after the `>` closing the `<` at `at` (None if there is no `<` there): `->`
    and quoted strings inside do not count."""
    if at >= len(text) or text[at] != "<":
        return None
    depth, i, n = 0, at, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i = text.find('"', i + 1)
            if i < 0:
                return None
        elif c == "<":
            depth += 1
        elif c == ">" and text[i - 1] != "-":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def source_location(op: Operation) -> str | None:
    """`file:line:col` of a parsed op's first token (upstream MLIR's FileLineColLoc), or
    None for an op that was not parsed from text."""
    span = _SOURCE.get(op)
    return None if span is None else str(span.get_location())


def _is_blank(text: str) -> bool:
    r"""Text with no op: whitespace and comments. (Not the regex (?:\s|//[^\n]*)*, whose
    fullmatch backtracks exponentially over comment lines with spaces in text that has ops:
    25 s on a 27-line test file.)"""
    return all(not line.strip() or line.lstrip().startswith("//") for line in text.splitlines())


_LOC_ALIAS = re.compile(r"^(#[\w.$-]+) = loc\(.*\)[ \t]*$", re.MULTILINE)
"""A location alias definition on a line of its own, as upstream prints them."""


def hoist_location_aliases(text: str) -> str:
    """Upstream MLIR (`--mlir-print-debuginfo`) defines location aliases after the module
    that uses them (`loc(#loc3)` ... `#loc3 = loc("conv1")`); xDSL's parser wants an alias
    defined first. Move every location alias definition to the start of the first line,
    each after those it refers to, and leave its own line empty, so that line numbers in
    error messages stay those of the text."""
    defs = {m[1]: m[0].strip() for m in _LOC_ALIAS.finditer(text)}
    if not defs:
        return text
    order: list[str] = []
    placed: set[str] = set()

    def place(alias: str, seen: frozenset[str] = frozenset()) -> None:
        if alias in placed or alias in seen:  # a cycle is the parser's to report
            return
        body = defs[alias].split("=", 1)[1]
        for used in re.findall(r"#[\w.$-]+", body):
            if used in defs:
                place(used, seen | {alias})
        order.append(alias)
        placed.add(alias)

    for alias in defs:
        place(alias)
    return " ".join(defs[a] for a in order) + " " + _LOC_ALIAS.sub("", text)


def parse_module(text: str, ctx: Context, name: str = "<input>",
                 blobs: Mapping[str, bytes] | None = None) -> ModuleOp:
    """Parse MLIR text in `ctx` (geir's: `geir.dialects.make_context()`); resource blobs
    become the constants' bytes. Text with no op is an empty module, as upstream; location
    aliases may be defined after their use, as upstream prints them. `blobs`: raw bytes of
    resources the text refers to without holding them (`print_module(..., blobs=)`)."""
    if _is_blank(text):
        return ModuleOp([])
    text = hoist_location_aliases(text)
    store = _blob_store(ctx)
    store.clear()
    try:
        module = _Parser(ctx, text, name).parse_module()
        _resolve_resources(module, store, blobs or {})
    finally:
        store.clear()
    return module


def _blob_store(ctx: Context) -> dict[str, str]:
    interface = ctx.get_dialect("builtin").get_interface(OpAsmDialectInterface)
    assert interface is not None
    return interface._blob_storage  # noqa: SLF001 - xDSL keeps no other handle


def _resolve_resources(module: ModuleOp, store: dict[str, str], raw: Mapping[str, bytes]) -> None:
    """Every `value` property holding a resource handle (the dialects' constants) gets the
    blob's bytes: from the text's resource section, else from `raw`."""
    for op in module.walk():
        value = op.properties.get("value")  # not verified yet: may be missing
        if not isinstance(value, DenseResourceAttr):
            continue
        key = value.resource_handle.data
        blob = store.get(key)
        if blob:
            data = decode_blob(blob)
        elif key in raw:
            data = bytes(raw[key])
        else:
            continue  # elided: stays a handle; using its data is an error
        t = value.get_type()
        want = int(np.prod(t.get_shape(), dtype=np.int64)) * to_dtype(t.element_type).itemsize
        if len(data) != want:
            raise ValueError(
                f"resource '{value.resource_handle.data}' holds {len(data)} bytes, {t} needs {want}"
            )
        op.properties["value"] = DenseIntOrFPElementsAttr(t, BytesAttr(data))
