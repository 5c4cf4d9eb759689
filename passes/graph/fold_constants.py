"""graph-fold-constants: evaluate ops whose operands are all constants.

The op runs through its reference kernel (`reference.graph.REFERENCE`, the same
numerics as the interpreter), and its results become graph.constant ops at the
op's location (a result whose elements are all equal is stored as one
element, a splat). One forward walk suffices: operands are defined before their
users, so a folded result is a constant by the time its users are visited and
whole chains (Shape -> Gather -> Concat -> Reshape target) fold in one sweep.

Results larger than `max-bytes` (per result, from the declared type, checked
before anything runs) are left alone, so ConstantOfShape or Expand to a huge
shape is never materialised; whatever `max-bytes` says, nothing above
`MAX_TENSOR_BYTES` (target/device.py: the memory of the largest modeled device)
is. Constants that only fed a folded op are erased.

An op reading a shape-only weight (`geir.placeholder`, frontend/builder.py) is not
evaluated: its results are shape-only too (splats of 0 marked as placeholders), so a
transposed or re-typed placeholder costs no bytes and a run still refuses its numbers.

`fold_constants(module, max_bytes, source)` is the machinery other passes call:
`source(op)` may give the values of an op whose operands are not constants
(graph-fold-shapes answers graph.shape of a static tensor).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.traits import Pure

from geir.dialects import attr_names

from geir.dialects import graph as g
from geir.ir.types import to_dtype
from geir.passes.graph.utils import constant, nbytes, splat, static_shape
from geir.reference.graph import reference_of
from geir.target.device import MAX_TENSOR_BYTES

DEFAULT_MAX_BYTES = 16 * 2**20

Source = Callable[[Operation], "tuple[np.ndarray, ...] | None"]


def fits(op: Operation, max_bytes: int) -> bool:
    """Every result has a static type of at most `max_bytes` (and of MAX_TENSOR_BYTES)."""
    limit = min(max_bytes, MAX_TENSOR_BYTES)
    return all(static_shape(r.type) is not None and nbytes(r.type) <= limit for r in op.results)


def is_splat(a: np.ndarray) -> bool:
    """More than one element, all with the same bits (kept as one element)."""
    if a.size < 2:
        return False
    bits = np.ascontiguousarray(a).view(np.uint8).reshape(a.size, -1)
    # a folded weight is rarely a splat: a few samples decide most arrays without a whole-array compare
    sample = bits[:: max(1, a.size // 16)]
    if not np.all(sample == bits[:1]):
        return False
    return bool(np.all(bits == bits[:1]))


def evaluate(op: Operation) -> tuple[np.ndarray, ...] | None:
    """The results of a graph op whose operands are all constants, else None.

    A kernel that fails or disagrees with the declared types leaves the op
    alone: the interpreter will report it with the op's location. An op with effects (a
    collective) is never evaluated: its result depends on other devices."""
    if not isinstance(op, g.GraphOp) or not op.has_trait(Pure) or _keeps_integers(op):
        return None
    return run_reference(op, [g.constant_value_of(v) for v in op.inputs])


def value_of(v: SSAValue, max_elements: int) -> np.ndarray | None:
    """The value of `v` when everything it depends on is constants and pure graph ops, each
    result at most `max_elements` (evaluated here, the IR untouched): what a pass must read
    although it is too large to fold, as the attention recogniser reads a causal mask of a
    long sequence. None otherwise."""
    memo: dict[SSAValue, np.ndarray | None] = {}

    def value(x: SSAValue) -> np.ndarray | None:
        known = g.constant_value_of(x)
        if known is not None or x in memo:
            return known if known is not None else memo[x]
        op = x.owner
        memo[x] = None
        if not isinstance(op, g.GraphOp) or not op.has_trait(Pure) or _keeps_integers(op) or any(
                static_shape(r.type) is None or math.prod(static_shape(r.type)) > max_elements for r in op.results):
            return None
        args = [value(a) for a in op.inputs]
        outs = run_reference(op, args)
        if outs is not None:
            memo.update(zip(op.results, outs))
        return memo[x]

    return value(v)


def run_reference(op: g.GraphOp, args: list[np.ndarray | None]) -> tuple[np.ndarray, ...] | None:
    """The op's reference kernel on `args`, its results checked against the op's types."""
    if any(a is None for a in args):
        return None
    kernel = reference_of(op)
    try:
        with np.errstate(all="ignore"):
            out = kernel(*args, **op.kernel_kwargs())
    except Exception:  # noqa: BLE001 - an invalid op is the interpreter's to report
        return None
    outs = out if isinstance(out, tuple) else (out,)
    if len(outs) != len(op.results):
        return None
    values = []
    for r, v in zip(op.results, outs):
        v = np.asarray(v)
        if v.shape != static_shape(r.type):
            return None
        values.append(v.astype(to_dtype(r.type.element_type), copy=False))
    return tuple(values)


def _keeps_integers(op: Operation) -> bool:
    """A dequantize of quantized weights stays: folded, the int8 weights would be float
    constants again (4x the bytes) and graph-fold-qdq could no longer make the op int8."""
    return isinstance(op, g.DequantizeOp)


@dataclass
class FoldConstantOp(RewritePattern):
    """Replace an op by constants holding its results."""

    max_bytes: int = DEFAULT_MAX_BYTES
    source: Source | None = None

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.GraphOp) or not op.has_trait(Pure) or not fits(op, self.max_bytes):
            return
        shape_only = _shape_only(op)
        if shape_only is not None:
            new = [splat(0, r.type, op.location) for r in op.results]
            for c, r in zip(new, op.results):
                c.attributes[attr_names.PLACEHOLDER] = StringAttr(f"{shape_only}/{r.name_hint or op.name}")
                c.output.name_hint = r.name_hint
            self._replace(op, new, rewriter)
            return
        values = (self.source(op) if self.source else None) or evaluate(op)
        if values is None:
            return
        new = [
            splat(v.reshape(-1)[0], r.type, op.location) if is_splat(v) else constant(v, op.location)
            for v, r in zip(values, op.results)
        ]
        self._replace(op, new, rewriter)

    @staticmethod
    def _replace(op: Operation, new: list[g.ConstantOp], rewriter: PatternRewriter) -> None:
        operands = [v.owner for v in op.operands]
        rewriter.replace(op, new, [c.output for c in new])
        for owner in dict.fromkeys(operands):
            if isinstance(owner, g.ConstantOp) and owner.parent is not None and not owner.output.uses:
                rewriter.erase(owner)


def _shape_only(op: Operation) -> str | None:
    """The name of the first shape-only weight among the op's operands, when all its operands
    are constants and one is such a weight."""
    if _keeps_integers(op):
        return None
    names = [v.owner.attributes.get(attr_names.PLACEHOLDER) if isinstance(v.owner, g.ConstantOp) else False
             for v in op.operands]
    if not names or False in names or all(n is None for n in names):
        return None
    return next(n.data for n in names if n is not None)


def fold_constants(module: ModuleOp, max_bytes: int = DEFAULT_MAX_BYTES, source: Source | None = None) -> bool:
    """Fold everything that is constant, in one forward walk; True if anything changed."""
    walker = PatternRewriteWalker(FoldConstantOp(max_bytes, source), apply_recursively=False)
    return walker.rewrite_module(module)


@dataclass(frozen=True)
class FoldConstantsPass(ModulePass):
    """Evaluate ops whose operands are all constants (results up to max-bytes)."""

    name = "graph-fold-constants"

    max_bytes: int = DEFAULT_MAX_BYTES
    """Largest folded result in bytes; bigger results stay computed at run time."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_constants(op, self.max_bytes)
