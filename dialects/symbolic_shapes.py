"""Symbolic shapes of graph ops: each dim an int or a polynomial of the model's dynamic dims
(ir/symbolic.py), proven for every size in their ranges.

A dynamic dim is declared by its extent argument (docs/dynamic-shapes.md): a `tensor<1xi64>`
function argument named `<symbol>.extent`, with the input positions it sizes
(`geir.extent = [["x", 0], ["mask", 0]]`) and its range (`geir.range = [1, 8]`). The rules
here give an op's result shapes from its operands' as integer polynomials of the symbols: a
reshape's merge is a product, a concat a sum, a reshape's `-1` an exact quotient, a slice to
a symbolic end (`seq` read off a Shape) that end. Small integer tensors - the shape
arithmetic exporters emit (Shape, Gather, Concat, Unsqueeze, Mul) - are followed by value, so
a reshape target computed from a Shape is symbolic too.

Where an op expects two dims equal (a broadcast, a contraction, a concat's other axes, a
reshape's element count), the rules prove it for every size in the ranges or refuse the op,
naming the dims: `seq (1~512)` against `512` is not proven (a model that baked the top of the
range into a Reshape), `batch` against `seq` neither. A dim that is not a polynomial of the
symbols (a strided window over a symbolic image size) is refused too.

An op with symbolic dims has `?` there in its types and the expressions in `geir.dims` (one
list per result); `verify_op` is its verifier (GraphOp.verify_ calls it for such an op).
graph-infer-symbolic-shapes (passes/graph/symbolic_shapes.py) runs the rules over a function
and writes them; graph-bind-symbols gives each symbol its range's top again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

from geir.dialects import attr_names, formats
from geir.dialects.traits import Elementwise, Normalization, RowMixing, RowSoftmax, ViewLike
from geir.errors import GeirError
from geir.ir import symbolic as sy
from geir.ir.locations import describe as describe_op
from geir.ir.symbolic import Dim, Sym

Shape = tuple[Dim, ...]
Ranges = dict[str, tuple[int, int]]

VALUE_ELEMENTS = 64
"""Largest integer tensor followed by value (shape arithmetic is a few dims)."""


class SymbolicShapeError(GeirError):
    """An op whose shapes are not proven for every size in the ranges."""


class _Refused(Exception):
    """A rule's reason to refuse an op; SymbolicShapeError adds the op."""


# ---------------------------------------------------------------------------
# The symbols of a function: its extent arguments.
# ---------------------------------------------------------------------------


@dataclass
class Symbols:
    ranges: Ranges = field(default_factory=dict)
    positions: dict[tuple[str, int], str] = field(default_factory=dict)  # (input, axis) -> symbol


def function_symbols(fn: func.FuncOp) -> Symbols:
    """The symbols declared by the extent arguments of `fn`."""
    out = Symbols()
    for attrs in (fn.arg_attrs.data if fn.arg_attrs is not None else ()):
        extent, rng, name = (attrs.data.get(k) for k in (attr_names.EXTENT, attr_names.RANGE, attr_names.ONNX_NAME))
        if extent is None or rng is None or name is None:
            continue
        symbol = sy.symbol_name(name.data.removesuffix(".extent"))
        lo, hi = (int(a.value.data) for a in rng.data)
        out.ranges[symbol] = (lo, hi)
        for pos in extent.data:
            input_name, axis = pos.data
            out.positions[input_name.data, int(axis.value.data)] = symbol
    return out


def argument_shapes(fn: func.FuncOp, symbols: Symbols) -> dict[SSAValue, Shape]:
    """Each argument's symbolic shape: its extent's symbols at their positions, the type's
    sizes elsewhere (a `?` no extent sizes is an error)."""
    attrs = list(fn.arg_attrs.data) if fn.arg_attrs is not None else []
    out: dict[SSAValue, Shape] = {}
    for i, arg in enumerate(fn.body.block.args):
        t = formats.logical_type(arg.type) if isinstance(arg.type, TensorType) else None
        if t is None:
            continue
        name = attrs[i].data.get(attr_names.ONNX_NAME) if i < len(attrs) else None
        dims: list[Dim] = []
        for axis, size in enumerate(t.get_shape()):
            symbol = symbols.positions.get((name.data, axis)) if name is not None else None
            if symbol is not None:
                dims.append(Sym.symbol(symbol))
            elif size == DYNAMIC_INDEX:
                what = f"'{name.data}'" if name is not None else f"#{i}"
                raise SymbolicShapeError(f"argument {what} dim {axis} is dynamic, but no extent argument "
                                         f"names it (geir.extent)")
            else:
                dims.append(size)
        out[arg] = tuple(dims)
    return out


# ---------------------------------------------------------------------------
# The analysis.
# ---------------------------------------------------------------------------


@dataclass
class Analysis:
    """Symbolic shapes of values, and the values of small integer tensors (object arrays of
    dims) where they are known."""

    ranges: Ranges
    shapes: dict[SSAValue, Shape] = field(default_factory=dict)
    values: dict[SSAValue, np.ndarray] = field(default_factory=dict)
    fold: Callable[[Operation, list[np.ndarray]], tuple[np.ndarray, ...] | None] | None = None
    """Evaluates an op on integer arrays (the reference kernels), for values no symbol reaches."""

    def shape(self, v: SSAValue) -> Shape:
        s = self.shapes.get(v)
        if s is None:
            s = tuple(formats.logical_type(v.type).get_shape())
            if DYNAMIC_INDEX in s:
                raise _Refused(f"an operand has a dynamic type {v.type} but no symbolic shape")
        return s

    def value(self, v: SSAValue) -> np.ndarray | None:
        return self.values.get(v)

    def ints(self, v: SSAValue | None, what: str) -> list[Dim]:
        """The elements of an integer operand the rule needs, or a refusal."""
        a = self.value(v) if v is not None else None
        if a is None:
            raise _Refused(f"its {what} is computed from tensor values, not from shapes")
        return [sy.canonical(d) for d in a.reshape(-1)]

    # -- proofs -------------------------------------------------------------

    def equal(self, a: Dim, b: Dim) -> bool:
        return sy.proven_equal(a, b, self.ranges)

    def require_equal(self, a: Dim, b: Dim, what: str) -> Dim:
        if not self.equal(a, b):
            raise _Refused(f"{what}: {self.show(a)} and {self.show(b)} are not proven equal over the ranges")
        return b if isinstance(a, Sym) and not isinstance(b, Sym) else a

    def show(self, d: Dim) -> str:
        return sy.describe(d, self.ranges)

    def broadcast(self, *shapes: Shape, what: str = "operands") -> Shape:
        rank = max((len(s) for s in shapes), default=0)
        out: list[Dim] = []
        for i in range(rank):
            dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
            kept = [d for d in dims if not sy.proven_one(d, self.ranges)]
            if not kept:
                out.append(1)
                continue
            first = kept[0]
            for d in kept[1:]:
                if not self.equal(first, d):
                    ones = [x for x in (first, d) if isinstance(x, Sym) and sy.bounds(x, self.ranges)[0] <= 1]
                    why = f" ({self.show(ones[0])} broadcasts only at 1)" if ones else ""
                    raise _Refused(f"{what} dim {i - rank}: {self.show(first)} and {self.show(d)} are not proven "
                                   f"equal over the ranges{why}")
            out.append(next((d for d in kept if not isinstance(d, Sym)), first))
        return tuple(out)

    # -- the walk -----------------------------------------------------------

    def run_op(self, op: Operation) -> list[Shape]:
        """The symbolic result shapes of `op` (its values recorded too), or SymbolicShapeError."""
        try:
            shapes = result_shapes(self, op)
        except _Refused as e:
            raise SymbolicShapeError(f"{describe_op(op)}: {e}") from None
        for r, s in zip(op.results, shapes):
            self.shapes[r] = s
        values = _result_values(self, op) if _small_ints(op) else None
        if values is not None:
            for r, v in zip(op.results, values):
                if v is not None:
                    self.values[r] = v
        return shapes


def _is_graph_op(op: Operation) -> bool:
    """A graph-dialect op with positional operands and Python attributes (dialects/graph.py's
    GraphOp; named, not imported: that module's verifier imports this one)."""
    return op.name.startswith("graph.") and hasattr(op, "attrs") and hasattr(op, "inputs")


def _small_ints(op: Operation) -> bool:
    return all(isinstance(t := formats.logical_type(r.type), TensorType)
               and isinstance(t.element_type, IntegerType)
               and DYNAMIC_INDEX not in t.get_shape() and math.prod(t.get_shape()) <= VALUE_ELEMENTS
               for r in op.results) and bool(op.results)


def _norm(axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise _Refused(f"axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _prod(dims: Sequence[Dim]) -> Dim:
    out: Dim = 1
    for d in dims:
        out = out * d
    return sy.canonical(out)


def _window(a: Analysis, size: Dim, k: int, stride: int, dil: int, pads: int, ceil: bool, what: str) -> Dim:
    span = size + pads - dil * (k - 1) - 1
    if not isinstance(span, Sym):
        return (-(-span // stride) if ceil else span // stride) + 1
    q = sy.div(span, stride)
    if q is None:
        raise _Refused(f"{what}: the window's output size over {a.show(size)} with stride {stride} is a floor, "
                       f"not a polynomial of the symbols")
    return q + 1


# ---------------------------------------------------------------------------
# The rules, by op family.
# ---------------------------------------------------------------------------


def result_shapes(a: Analysis, op: Operation) -> list[Shape]:
    if op.name == "graph.constant":
        return [tuple(formats.logical_type(op.results[0].type).get_shape())]
    graph_op = _is_graph_op(op) and not op.regions
    operands = [v for v in (op.inputs if graph_op else op.operands) if isinstance(v.type, TensorType)]
    ins = [a.shape(v) for v in operands]
    if graph_op:
        attrs = op.attrs()
        rule = _RULES.get(op.name)
        if rule is not None:
            return rule(a, op, ins, attrs)
        if op.has_trait(Elementwise):
            return [a.broadcast(*ins)]
        if op.has_trait(ViewLike):  # identity, dropout: the operand's shape
            return [ins[0]] * len(op.results)
        if op.has_trait(Normalization) or op.has_trait(RowSoftmax) or op.has_trait(RowMixing):
            return [ins[0]]
    if all(all(not isinstance(d, Sym) for d in s) for s in ins) and not any(
            a.value(v) is not None and any(isinstance(d, Sym) for d in a.value(v).reshape(-1)) for v in operands) \
            and all(isinstance(r.type, TensorType) and DYNAMIC_INDEX not in formats.logical_type(r.type).get_shape()
                    for r in op.results):
        return [tuple(formats.logical_type(r.type).get_shape()) for r in op.results]  # nothing symbolic reaches it
    raise _Refused("no symbolic shape rule for this op, and an operand's shape holds a symbol")


def _first(a, op, ins, attrs):
    return [ins[0]]


def _expand(a, op, ins, attrs):
    return [a.broadcast(ins[0], tuple(a.ints(op.inputs[1], "target shape")), what="expand")]


def _reshape(a, op, ins, attrs):
    x = ins[0]
    target = a.ints(op.inputs[1], "target shape")
    out = [x[i] if (d == 0 and not attrs["allowzero"]) else d for i, d in enumerate(target)]
    total = _prod(x)
    if sum(1 for d in out if d == -1) > 1:
        raise _Refused(f"the target {dims_text(target)} has more than one -1")
    if -1 in out:
        rest = _prod([d for d in out if d != -1])
        q = sy.div(total, rest) if rest != 0 else None
        if q is None:
            raise _Refused(f"the -1 of {dims_text(target)}: {a.show(total)} elements over {a.show(rest)} is not exact "
                           f"for every size in the ranges")
        out[out.index(-1)] = q
    a.require_equal(_prod(out), total,
                    f"the element counts of the target {dims_text(out)} and of the operand {dims_text(x)}")
    return [tuple(out)]


def _flatten(a, op, ins, attrs):
    x = ins[0]
    axis = attrs["axis"] + len(x) if attrs["axis"] < 0 else attrs["axis"]
    return [(_prod(x[:axis]), _prod(x[axis:]))]


def _squeeze(a, op, ins, attrs):
    x = ins[0]
    axes = attrs["axes"]
    if axes is None:
        axes = [i for i, d in enumerate(x) if a.equal(d, 1)]
    axes = {_norm(i, len(x)) for i in axes}
    for i in axes:
        a.require_equal(x[i], 1, f"squeezed dim {i}")
    return [tuple(d for i, d in enumerate(x) if i not in axes)]


def _unsqueeze(a, op, ins, attrs):
    x = list(ins[0])
    rank = len(x) + len(attrs["axes"])
    for i in sorted(_norm(i, rank) for i in attrs["axes"]):
        x.insert(i, 1)
    return [tuple(x)]


def _transpose(a, op, ins, attrs):
    x = ins[0]
    perm = attrs["perm"] if attrs["perm"] is not None else tuple(reversed(range(len(x))))
    return [tuple(x[p] for p in perm)]


def _matmul(a, op, ins, attrs):
    lhs, rhs = ins
    l2, r2 = (lhs if len(lhs) > 1 else (1, *lhs)), (rhs if len(rhs) > 1 else (*rhs, 1))
    a.require_equal(l2[-1], r2[-2], "the contracted dims")
    batch = a.broadcast(l2[:-2], r2[:-2], what="the batch dims")
    rows = (l2[-2],) if len(lhs) > 1 else ()  # a 1-D operand's promoted dim is dropped again
    cols = (r2[-1],) if len(rhs) > 1 else ()
    return [(*batch, *rows, *cols)]


def _gemm(a, op, ins, attrs):
    (m, k) = ins[0][::-1] if attrs["trans_a"] else ins[0]
    (k2, n) = ins[1][::-1] if attrs["trans_b"] else ins[1]
    a.require_equal(k, k2, "the contracted dims")
    if len(ins) > 2:
        a.broadcast(ins[2], (m, n), what="the bias")
    return [(m, n)]


def _conv(a, op, ins, attrs):
    x, w = ins[0], ins[1]
    n = len(x) - 2
    strides, dil = attrs.get("strides") or (1,) * n, attrs.get("dilations") or (1,) * n
    pads = attrs.get("pads") or (0,) * (2 * n)
    a.require_equal(x[1], w[1] * attrs["group"], "the input channels and the weight's")
    spatial = tuple(_window(a, x[2 + i], w[2 + i], strides[i], dil[i], pads[i] + pads[n + i], False,
                            f"spatial dim {2 + i}") for i in range(n))
    return [(x[0], w[0], *spatial)]


def _batch_through(a, op, ins, attrs):
    """A transposed conv or a resize: the batch carries through, the other dims must be static
    (an upsampling's output size over a symbolic spatial size has no rule yet)."""
    x = ins[0]
    if any(not isinstance(d, int) for d in x[1:]):
        raise _Refused("only its batch dim may be symbolic (its output size over a symbolic channel or spatial "
                       "dim has no rule)")
    return [(x[0], *op.results[0].type.get_shape()[1:])]


def _pool(a, op, ins, attrs):
    x = ins[0]
    ks = attrs["kernel_shape"]
    n = len(ks)
    strides, dil = attrs.get("strides") or (1,) * n, attrs.get("dilations") or (1,) * n
    pads = attrs.get("pads") or (0,) * (2 * n)
    spatial = tuple(_window(a, x[2 + i], ks[i], strides[i], dil[i], pads[i] + pads[n + i], bool(attrs["ceil_mode"]),
                            f"spatial dim {2 + i}") for i in range(n))
    return [(x[0], x[1], *spatial)]


def _global_pool(a, op, ins, attrs):
    x = ins[0]
    return [(x[0], x[1], *(1,) * (len(x) - 2))]


def _reduce(a, op, ins, attrs):
    x = ins[0]
    axes = attrs.get("axes")
    if axes is None and "axis" in attrs:
        axes = (attrs["axis"],)
    if not axes:
        axes = () if attrs.get("noop_with_empty_axes") else tuple(range(len(x)))
    axes = {_norm(i, len(x)) for i in axes}
    if attrs.get("keepdims", 1):
        return [tuple(1 if i in axes else d for i, d in enumerate(x))]
    return [tuple(d for i, d in enumerate(x) if i not in axes)]


def _attention(a, op, ins, attrs):
    q, k, v = ins[:3]
    a.require_equal(k[0], q[0], "the batch of q and k")
    a.require_equal(v[0], q[0], "the batch of q and v")
    a.require_equal(k[3], q[3], "the head dims of q and k")
    a.require_equal(v[2], k[2], "the keys of k and v")
    if len(ins) > 3:
        a.broadcast(ins[3], (q[0], q[1], q[2], k[2]), what="the mask")
    return [(q[0], q[1], q[2], v[3])]


def _concat(a, op, ins, attrs):
    axis = _norm(attrs["axis"], len(ins[0]))
    out = list(ins[0])
    for s in ins[1:]:
        for i, (d, e) in enumerate(zip(out, s)):
            if i != axis:
                out[i] = a.require_equal(d, e, f"the operands' dim {i}")
        out[axis] = out[axis] + s[axis]
    return [tuple(out)]


def _gather(a, op, ins, attrs):
    data, idx = ins
    axis = _norm(attrs["axis"], len(data))
    return [(*data[:axis], *idx, *data[axis + 1:])]


def _slice(a, op, ins, attrs):
    x = list(ins[0])
    starts = a.ints(op.inputs[1], "starts")
    ends = a.ints(op.inputs[2], "ends")
    axes = a.ints(op.inputs[3], "axes") if len(op.inputs) > 3 else list(range(len(starts)))
    steps = a.ints(op.inputs[4], "steps") if len(op.inputs) > 4 else [1] * len(starts)
    for s, e, ax, st in zip(starts, ends, axes, steps):
        if isinstance(ax, Sym) or isinstance(st, Sym):
            raise _Refused("its axes and steps must be constants")
        ax = _norm(ax, len(x))
        x[ax] = _slice_len(a, x[ax], s, e, st, ax)
    return [tuple(x)]


def _slice_len(a: Analysis, size: Dim, start: Dim, end: Dim, step: int, axis: int) -> Dim:
    if not any(isinstance(d, Sym) for d in (size, start, end)):
        return len(range(size)[slice(start, end, step)])
    if step != 1:
        raise _Refused(f"axis {axis}: a step of {step} over {a.show(size)} is not a polynomial of the symbols")

    def clamp(d: Dim) -> Dim:  # ONNX's clamping of a bound into 0..size
        if not isinstance(d, Sym) and d < 0:
            d = size + d
        if sy.bounds(d, a.ranges)[1] <= 0:
            return 0
        past = sy.bounds(d - size, a.ranges)
        if past[0] >= 0:
            return size
        if sy.bounds(d, a.ranges)[0] >= 0 and past[1] <= 0:
            return d
        raise _Refused(f"axis {axis}: the bound {a.show(d)} is not proven within 0..{a.show(size)}")

    length = clamp(end) - clamp(start)
    if sy.bounds(length, a.ranges)[0] < 0:
        raise _Refused(f"axis {axis}: the slice {a.show(start)}..{a.show(end)} of {a.show(size)} may end before "
                       f"it starts")
    return length


def _pad(a, op, ins, attrs):
    x = list(ins[0])
    pads = a.ints(op.inputs[1], "pads")
    axes = a.ints(op.inputs[3], "axes") if len(op.inputs) > 3 and op.inputs[3] is not None else list(range(len(x)))
    n = len(axes)
    for j, ax in enumerate(axes):
        ax = _norm(ax, len(x))
        x[ax] = x[ax] + pads[j] + pads[n + j]
    return [tuple(x)]


def _tile(a, op, ins, attrs):
    reps = a.ints(op.inputs[1], "repeats")
    return [tuple(d * r for d, r in zip(ins[0], reps))]


def _split(a, op, ins, attrs):
    x = ins[0]
    axis = _norm(attrs["axis"], len(x))
    n = len(op.results)
    if len(op.inputs) > 1 and op.inputs[1] is not None:
        parts = a.ints(op.inputs[1], "split sizes")
        total = parts[0]
        for p in parts[1:]:
            total = total + p
        a.require_equal(total, x[axis], "the split sizes' sum and the dim")
    else:
        part = sy.div(x[axis], n)
        if part is None:
            raise _Refused(f"{a.show(x[axis])} in {n} equal parts is not exact for every size in the ranges")
        parts = [part] * n
    return [tuple(p if i == axis else d for i, d in enumerate(x)) for p in parts]


def _shape(a, op, ins, attrs):
    n = len(range(len(ins[0]))[slice(attrs["start"], attrs["end"])])
    return [(n,)]


def _scalar(a, op, ins, attrs):
    return [()]


def _constant_of_shape(a, op, ins, attrs):
    return [tuple(a.ints(op.inputs[0], "shape"))]


def _range(a, op, ins, attrs):
    start, limit, delta = (a.ints(v, n)[0] for v, n in zip(op.inputs, ("start", "limit", "delta")))
    if not any(isinstance(d, Sym) for d in (start, limit, delta)):
        return [tuple(formats.logical_type(op.results[0].type).get_shape())]
    if delta != 1:
        raise _Refused(f"a range with step {delta} over a symbol is not a polynomial of the symbols")
    return [(limit - start,)]


def _where(a, op, ins, attrs):
    return [a.broadcast(*ins)]


def _cache(a, op, ins, attrs):
    return [ins[0]]


def _gather_elements(a, op, ins, attrs):
    return [ins[1]]


_RULES: dict[str, Callable[[Analysis, Operation, list[Shape], dict], list[Shape]]] = {
    "graph.expand": _expand, "graph.reshape": _reshape, "graph.flatten": _flatten, "graph.squeeze": _squeeze,
    "graph.unsqueeze": _unsqueeze, "graph.transpose": _transpose, "graph.matmul": _matmul, "graph.gemm": _gemm,
    "graph.conv": _conv, "graph.conv_transpose": _batch_through, "graph.resize": _batch_through,
    "graph.max_pool": _pool, "graph.avg_pool": _pool, "graph.global_avg_pool": _global_pool,
    "graph.global_max_pool": _global_pool, "graph.attention": _attention, "graph.concat": _concat,
    "graph.gather": _gather, "graph.slice": _slice, "graph.pad": _pad, "graph.tile": _tile, "graph.split": _split,
    "graph.shape": _shape, "graph.size": _scalar, "graph.constant_of_shape": _constant_of_shape,
    "graph.range": _range, "graph.where": _where, "graph.batch_norm": _first, "graph.quantize": _first,
    "graph.dequantize": _first, "graph.clip": _first, "graph.instance_norm": _first, "graph.kv_cache_write": _cache,
    "graph.tensor_scatter": _cache, "graph.scatter_elements": _cache, "graph.scatter_nd": _cache,
    "graph.gather_elements": _gather_elements,
}
for _name in ("sum", "mean", "max", "min", "prod", "l1", "l2", "log_sum", "log_sum_exp", "sum_square"):
    _RULES[f"graph.reduce_{_name}"] = _reduce
_RULES["graph.arg_max"] = _RULES["graph.arg_min"] = _reduce


def dims_text(dims: Sequence[Dim]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


# ---------------------------------------------------------------------------
# Values of small integer tensors: the shape arithmetic.
# ---------------------------------------------------------------------------


def _obj(array: np.ndarray) -> np.ndarray:
    out = np.empty(array.shape, dtype=object)
    out.reshape(-1)[:] = [int(v) for v in array.reshape(-1)]
    return out


def _result_values(a: Analysis, op: Operation) -> list[np.ndarray | None] | None:
    if op.name == "graph.constant":
        array = op.array_or_none()
        return [None if array is None else _obj(np.asarray(array))]
    if op.name == "graph.shape":
        s = a.shapes[op.inputs[0]]
        attrs = op.attrs()
        out = np.empty(len(s[attrs["start"]:attrs["end"]]), dtype=object)
        out[:] = list(s[attrs["start"]:attrs["end"]])
        return [out]
    if op.name == "graph.size":
        out = np.empty((), dtype=object)
        out[()] = _prod(a.shapes[op.inputs[0]])
        return [out]
    if not _is_graph_op(op):
        return None
    ins = [a.value(v) for v in op.inputs]
    if a.fold is not None and all(v is not None and not any(isinstance(d, Sym) for d in v.reshape(-1))
                                  for v in ins):
        out = a.fold(op, [np.asarray(v.astype(np.int64)) for v in ins])  # no symbol in reach
        return None if out is None else [_obj(v) if np.issubdtype(v.dtype, np.integer) else None for v in out]
    compute = _VALUE_RULES.get(op.name)
    if compute is None or any(v is None for v in ins[:_VALUE_ARITY.get(op.name, len(ins))]):
        return None
    try:
        out = compute(a, op, ins, op.attrs())
    except (_Refused, ValueError, IndexError, TypeError, ZeroDivisionError):
        return None
    if out is None:
        return None
    if not isinstance(out, np.ndarray):  # a 0-d operation gives the element itself
        out = np.array(out, dtype=object) if not isinstance(out, Sym) else _scalar_obj(out)
    result = np.empty(out.shape, dtype=object)
    result.reshape(-1)[:] = [sy.canonical(d) for d in out.reshape(-1)]
    return [result]


def _scalar_obj(d: Dim) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = d
    return out


def _floordiv(x: Dim, y: Dim) -> Dim:
    q = sy.div(x, y)
    if q is None:
        raise _Refused("not exact")
    return q


def _binary(fn):
    return lambda a, op, ins, attrs: np.frompyfunc(fn, 2, 1)(ins[0], ins[1])


def _equal_value(a, op, ins, attrs):
    def known(x: Dim, y: Dim) -> bool:  # a symbol is positive: never -1 (the exporters' test)
        lo, hi = sy.bounds(x - y, a.ranges)
        if (lo, hi) == (0, 0):
            return True
        if lo > 0 or hi < 0:
            return False
        raise _Refused("not decidable")

    return np.frompyfunc(known, 2, 1)(ins[0], ins[1])


def _where_value(a, op, ins, attrs):
    if not all(isinstance(c, bool | np.bool_ | int) for c in ins[0].reshape(-1)):
        return None  # a condition on a symbol that the ranges do not decide
    return np.where(np.asarray(ins[0], dtype=bool), ins[1], ins[2])


def _cast_value(a, op, ins, attrs):
    """An integer cast keeps the dims (shape arithmetic is far from any integer's limit)."""
    out = formats.logical_type(op.results[0].type).element_type
    return ins[0] if isinstance(out, IntegerType) and out.width.data > 1 else None


_VALUE_RULES: dict[str, Callable] = {
    "graph.gather": lambda a, op, ins, attrs: np.take(ins[0], np.asarray(ins[1], dtype=np.int64), axis=attrs["axis"]),
    "graph.concat": lambda a, op, ins, attrs: np.concatenate(ins, axis=attrs["axis"]),
    "graph.unsqueeze": lambda a, op, ins, attrs: ins[0].reshape(
        [d for d in formats.logical_type(op.results[0].type).get_shape()]),
    "graph.squeeze": lambda a, op, ins, attrs: ins[0].reshape(
        [d for d in formats.logical_type(op.results[0].type).get_shape()]),
    "graph.reshape": lambda a, op, ins, attrs: ins[0].reshape(
        [d for d in formats.logical_type(op.results[0].type).get_shape()]),
    "graph.flatten": lambda a, op, ins, attrs: ins[0].reshape(
        [d for d in formats.logical_type(op.results[0].type).get_shape()]),
    "graph.identity": lambda a, op, ins, attrs: ins[0],
    "graph.cast": _cast_value,
    "graph.add": _binary(lambda x, y: x + y),
    "graph.sub": _binary(lambda x, y: x - y),
    "graph.mul": _binary(lambda x, y: x * y),
    "graph.div": _binary(_floordiv),
    "graph.neg": lambda a, op, ins, attrs: np.frompyfunc(lambda x: -x, 1, 1)(ins[0]),
    "graph.equal": _equal_value,
    "graph.where": _where_value,
    "graph.slice": lambda a, op, ins, attrs: _slice_value(ins),
    "graph.reduce_prod": lambda a, op, ins, attrs: None if attrs.get("axes") not in (None, (0,)) else np.asarray(
        _prod(list(ins[0].reshape(-1))), dtype=object).reshape((1,) * (ins[0].ndim if attrs["keepdims"] else 0)),
}
_VALUE_ARITY = {"graph.gather": 2, "graph.slice": 5, "graph.reshape": 1, "graph.unsqueeze": 1, "graph.squeeze": 1}


def _slice_value(ins) -> np.ndarray | None:
    data, starts, ends = ins[0], ins[1], ins[2]
    if any(v is not None and any(isinstance(d, Sym) for d in v.reshape(-1)) for v in ins[1:]):
        return None
    axes = list(ins[3].reshape(-1)) if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
    steps = list(ins[4].reshape(-1)) if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for s, e, ax, st in zip(starts.reshape(-1), ends.reshape(-1), axes, steps):
        index[int(ax)] = slice(int(s), int(e), int(st))
    return data[tuple(index)]


# ---------------------------------------------------------------------------
# geir.dims, and the verifier.
# ---------------------------------------------------------------------------


def dims_attr(shapes: Sequence[Shape]) -> ArrayAttr:
    return ArrayAttr([ArrayAttr([StringAttr(str(d)) if isinstance(d, Sym) else IntegerAttr(d, i64) for d in s])
                      for s in shapes])


def shapes_of_attr(attr: Attribute) -> list[Shape]:
    out = []
    for s in attr.data:  # type: ignore[attr-defined]
        out.append(tuple(sy.parse(d.data) if isinstance(d, StringAttr) else int(d.value.data) for d in s.data))
    return out






def _recorded(v: SSAValue, fn: func.FuncOp | None, cache: dict) -> Shape | None:
    if isinstance(v, BlockArgument):
        if fn is None or v.block is not fn.body.block:
            return None
        if "args" not in cache:
            try:
                cache["args"] = argument_shapes(fn, function_symbols(fn))
            except SymbolicShapeError:
                cache["args"] = {}
        return cache["args"].get(v)
    attr = v.owner.attributes.get(attr_names.DIMS)
    if attr is None:
        shape = formats.logical_type(v.type).get_shape() if isinstance(v.type, TensorType) else None
        return None if shape is None or DYNAMIC_INDEX in shape else tuple(shape)
    return shapes_of_attr(attr)[v.index]


def verify_op(op: Operation) -> str | None:
    """Why an op with symbolic dims is wrong, or None: its `geir.dims` must be what the
    rules give for its operands' (recorded) dims over the function's ranges, and its types `?`
    exactly at the symbolic dims. An op whose operands' dims are not recorded (a `?` graph
    before graph-infer-symbolic-shapes) is not checked."""
    fn = op.parent_op()
    while fn is not None and not isinstance(fn, func.FuncOp):
        fn = fn.parent_op()
    cache: dict = {}
    declared_attr = op.attributes.get(attr_names.DIMS)
    try:
        declared = shapes_of_attr(declared_attr) if declared_attr is not None else None
    except (ValueError, AttributeError, TypeError):
        return f"has a malformed {attr_names.DIMS} {declared_attr}"
    if declared is not None:
        if len(declared) != len(op.results):
            return f"has {len(declared)} shapes in {attr_names.DIMS} for {len(op.results)} results"
        for i, (r, s) in enumerate(zip(op.results, declared)):
            t = formats.logical_type(r.type).get_shape()
            want = [DYNAMIC_INDEX if isinstance(d, Sym) else d for d in s]
            if list(t) != want and formats.logical_type(r.type) is r.type:
                return f"result #{i} type {r.type} does not match {attr_names.DIMS} {dims_text(s)}"
    if fn is None:
        return None
    ranges = function_symbols(fn).ranges
    unknown = sorted({n for s in declared or () for d in s if isinstance(d, Sym) for n in d.symbols()} - set(ranges))
    if unknown:
        return f"has {attr_names.DIMS} in '{unknown[0]}', which no extent argument of the function declares"
    operands = [_recorded(v, fn, cache) for v in op.operands]
    if any(s is None for s in operands) or declared is None:
        return None
    a = Analysis(ranges)
    for v, s in zip(op.operands, operands):
        a.shapes[v] = s  # values are not recorded: a rule that needs one is not re-checked
    try:
        inferred = result_shapes(a, op)
    except _Refused as e:
        if "computed from tensor values" in str(e):
            return None
        return str(e)
    for i, (want, got) in enumerate(zip(inferred, declared)):
        if len(want) != len(got) or not all(a.equal(x, y) for x, y in zip(want, got)):
            return f"result #{i} has dims {dims_text(got)}, but the operands imply {dims_text(want)}"
    return None
