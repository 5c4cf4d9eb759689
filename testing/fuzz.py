"""Random valid ONNX models for differential testing (NNSmith's idea, on geir's op set).

A model is grown node by node over a pool of values whose shape, dtype and *value range*
the generator tracks: the shape so every node is valid (onnx's strict shape inference checks
each one as it is added), the range so inputs stay finite (exp only of bounded values, log
and sqrt only of positive ones, division only by values bounded away from zero).

Randomness comes from a `Draw`: `SeededDraw` (numpy, one model per seed: what the bench's
long campaigns use) or `HypothesisDraw` (hypothesis's choices, so a failing model shrinks to
a small one). The same code path makes both.

The op menu covers what geir's importer supports and exporters emit: elementwise chains with
broadcasting, conv / pool / matmul / gemm with random shapes, strides, pads, dilations and
groups, reductions over random axes, reshape / transpose / slice / concat / split / pad /
squeeze / flatten, softmax and the normalisations, an f16 tail (Cast then f16 ops), and
where/compare on graph inputs. Shapes favour the awkward: channels not a multiple of 16,
size-1 dims, odd spatial sizes, batch > 1.

Continuity is kept on purpose: ops whose output jumps on an input's last bit (floor, round,
comparisons, argmax) only read graph inputs, which both sides hold exactly; anything else
would make a legitimate one-ulp difference look like a wrong answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSETS = (13, 17, 18, 21)
DIMS = (1, 2, 3, 4, 5, 7, 8, 16, 17, 24, 31, 33)
MAX_ELEMENTS = 1 << 13  # per value: the interpreter runs every tile in numpy
INPUT_RANGE = 2.0       # graph inputs are uniform in [-2, 2]


class Draw(Protocol):
    """Where a generator's choices come from."""

    def int(self, lo: int, hi: int) -> int: ...   # inclusive
    def choice(self, seq: Sequence[Any]) -> Any: ...
    def bool(self) -> bool: ...


class SeededDraw:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def int(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))

    def choice(self, seq: Sequence[Any]) -> Any:
        return seq[int(self.rng.integers(len(seq)))]

    def bool(self) -> bool:
        return bool(self.rng.integers(2))


class HypothesisDraw:
    """Choices from hypothesis's `st.data()`: small integers and early elements shrink first."""

    def __init__(self, data: Any):
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def int(self, lo: int, hi: int) -> int:
        return self.data.draw(self.st.integers(lo, hi))

    def choice(self, seq: Sequence[Any]) -> Any:
        return seq[self.data.draw(self.st.integers(0, len(seq) - 1))]

    def bool(self) -> bool:
        return self.data.draw(self.st.booleans())


# ---------------------------------------------------------------------------
# Values and the model being grown.
# ---------------------------------------------------------------------------


@dataclass
class Value:
    name: str
    shape: tuple[int, ...]
    dtype: int                 # TensorProto element type
    lo: float = -math.inf      # a bound on every element (finite for float values)
    hi: float = math.inf
    exact: bool = False        # a graph input: both sides hold the same bits
    varied: bool = False       # no two elements equal by construction (KEEPS_VARIED)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def bound(self) -> float:
        return max(abs(self.lo), abs(self.hi))


@dataclass
class Builder:
    draw: Draw
    opset: int
    values: list[Value] = field(default_factory=list)
    inputs: list[Value] = field(default_factory=list)
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: list[onnx.TensorProto] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)  # the op type of each node, for coverage
    consumed: set[str] = field(default_factory=set)
    _n: int = 0
    _rng: np.random.Generator | None = None

    def name(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    @property
    def rng(self) -> np.random.Generator:
        """Constant data: seeded from the draw, so one model's constants are one choice."""
        if self._rng is None:
            self._rng = np.random.default_rng(self.draw.int(0, 2**31 - 1))
        return self._rng

    def const(self, array: np.ndarray, prefix: str = "w") -> str:
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def ints(self, values: Sequence[int], prefix: str = "i") -> str:
        return self.const(np.asarray(values, dtype=np.int64), prefix)

    def weight(self, shape: Sequence[int], fan_in: int) -> tuple[str, float]:
        """Uniform weights scaled by 1/sqrt(fan_in); returns the name and the largest |w|."""
        scale = 1.0 / math.sqrt(max(fan_in, 1))
        w = self.rng.uniform(-scale, scale, size=tuple(shape)).astype(np.float32)
        return self.const(w), scale

    def pick(self, ok: Callable[[Value], bool] = lambda v: True) -> Value | None:
        """A value to read: recent ones first (chains grow deep), any that passes `ok`."""
        cands = [v for v in self.values if ok(v)]
        if not cands:
            return None
        if len(cands) > 1 and self.draw.bool():
            return cands[-1]
        return self.draw.choice(cands)

    def add(self, op: str, inputs: Sequence[str], n_out: int = 1, **attrs: Any) -> list[str]:
        """Append a node and return its output names (shapes filled in by `infer`)."""
        outs = [self.name("t") for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=self.name(f"{op.lower()}_"), **attrs))
        self.ops.append(op)
        self.consumed.update(inputs)
        return outs

    def model(self, outputs: Sequence[Value]) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, "fuzz",
            [helper.make_tensor_value_info(v.name, v.dtype, list(v.shape)) for v in self.inputs],
            [helper.make_tensor_value_info(v.name, v.dtype, list(v.shape)) for v in outputs],
            initializer=self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)], ir_version=8)

    def infer(self, outs: Sequence[str]) -> list[tuple[tuple[int, ...], int]]:
        """Shapes and dtypes of the new outputs, from onnx's strict shape inference of the model
        so far (which also proves the node valid)."""
        inferred = onnx.shape_inference.infer_shapes(self.model([]), strict_mode=True, data_prop=True)
        info = {v.name: v.type.tensor_type for v in inferred.graph.value_info}
        got = []
        for o in outs:
            t = info[o]
            got.append((tuple(int(d.dim_value) for d in t.shape.dim), t.elem_type))
        return got


FLOAT = TensorProto.FLOAT
F16 = TensorProto.FLOAT16


def _emit(b: Builder, op: str, inputs: Sequence[str], ranges: Sequence[tuple[float, float]],
          **attrs: Any) -> list[Value] | None:
    """Add a node whose outputs have the given value ranges; None (and no node) if any
    output would be empty or too large."""
    outs = b.add(op, inputs, len(ranges), **attrs)
    shapes = b.infer(outs)
    if any(math.prod(s) == 0 or math.prod(s) > MAX_ELEMENTS for s, _ in shapes):
        b.nodes.pop()
        b.ops.pop()
        return None
    varied = op in KEEPS_VARIED and all(v.varied for v in b.values if v.name in inputs)
    made = [Value(o, s, t, lo, hi, varied=varied) for o, (s, t), (lo, hi) in zip(outs, shapes, ranges)]
    b.values.extend(made)
    return made


KEEPS_VARIED = {"Sigmoid", "Tanh", "Neg", "Softsign", "Erf", "Exp", "Log", "Sqrt", "Reciprocal", "Add", "Sub",
                "Mul", "Div", "Conv", "MatMul", "Gemm", "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
                "Slice", "Concat", "Split", "Cast"}
"""Ops whose output varies wherever their (activation) inputs do. A normalisation reads only
such values: over a row of equal values its result is exact in real arithmetic (x - mean = 0)
but not in f32 (the mean is one ulp off, then divided by sqrt(eps)), so a degenerate row would
turn legitimate rounding into a 'mismatch'. Saturating ops (relu, clip, max), broadcasts
(expand, tile), pads and pools can make rows equal."""


# ---------------------------------------------------------------------------
# The op menu: each takes the builder and adds a node (or returns None: not applicable).
# ---------------------------------------------------------------------------


def _is_float(v: Value) -> bool:
    return v.dtype in (FLOAT, F16)


def _f32(v: Value) -> bool:
    return v.dtype == FLOAT


def _sig(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(x, 60.0), -60.0)))


UNARY: dict[str, Callable[[float, float], tuple[float, float]] | None] = {
    "Relu": lambda lo, hi: (max(lo, 0.0), max(hi, 0.0)),
    "Sigmoid": lambda lo, hi: (_sig(lo), _sig(hi)),
    "Tanh": lambda lo, hi: (math.tanh(lo), math.tanh(hi)),
    "Abs": lambda lo, hi: (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi))),
    "Neg": lambda lo, hi: (-hi, -lo),
    "Softsign": lambda lo, hi: (lo / (1 + abs(lo)), hi / (1 + abs(hi))),
    "Sin": lambda lo, hi: (-1.0, 1.0),
    "Cos": lambda lo, hi: (-1.0, 1.0),
    "Erf": lambda lo, hi: (math.erf(lo), math.erf(hi)),
    "Softplus": lambda lo, hi: (math.log1p(math.exp(min(lo, 30))), max(hi, 0) + math.log(2.0)),
    "Elu": lambda lo, hi: (max(lo, -1.0), hi),
    "LeakyRelu": lambda lo, hi: (min(lo, 0.01 * lo), hi),
    "HardSigmoid": lambda lo, hi: (0.0, 1.0),
    "HardSwish": lambda lo, hi: (-0.375, max(hi, 0.0)),
    "Mish": lambda lo, hi: (-0.31, max(hi, 0.0)),
}


def op_unary(b: Builder) -> list[Value] | None:
    v = b.pick(_is_float)
    if v is None:
        return None
    op = b.draw.choice(list(UNARY))
    if (op == "HardSwish" and b.opset < 14) or (op == "Mish" and b.opset < 18):
        op = "Relu"
    if op == "Softplus" and v.hi > 30:
        op = "Tanh"
    return _emit(b, op, [v.name], [UNARY[op](v.lo, v.hi)])


def op_domain(b: Builder) -> list[Value] | None:
    """exp / log / sqrt / reciprocal where their argument's range allows."""
    v = b.pick(_f32)
    if v is None:
        return None
    choices = []
    if v.hi <= 8:
        choices.append("Exp")
    if v.lo >= 0.1:
        choices += ["Log", "Reciprocal"]
    if v.lo >= 0:
        choices.append("Sqrt")
    if not choices:
        return None
    op = b.draw.choice(choices)
    fn = {"Exp": math.exp, "Log": math.log, "Sqrt": math.sqrt, "Reciprocal": lambda t: 1 / t}[op]
    r = tuple(sorted((fn(v.lo), fn(v.hi))))
    return _emit(b, op, [v.name], [r])


def _broadcast_shape(b: Builder, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to `shape`: some leading dims dropped, some dims set to 1."""
    drop = b.draw.int(0, len(shape)) if b.draw.bool() else 0
    return tuple(1 if b.draw.bool() and b.draw.bool() else d for d in shape[drop:])


def op_binary(b: Builder) -> list[Value] | None:
    x = b.pick(_is_float)
    if x is None:
        return None
    op = b.draw.choice(["Add", "Sub", "Mul", "Div", "Max", "Min", "Add", "Mul"])
    other = None
    if op != "Div" and b.draw.bool():  # another value of the same shape, possibly broadcast
        other = b.pick(lambda v: v is not x and v.dtype == x.dtype and
                       len(v.shape) <= len(x.shape) and
                       all(d in (1, e) for d, e in zip(v.shape, x.shape[len(x.shape) - len(v.shape):])))
    if other is None:
        shape = _broadcast_shape(b, x.shape)
        if op == "Div":
            c = b.rng.uniform(0.5, 2.0, shape) * b.rng.choice([-1, 1], shape)
            lo, hi = -2.0, 2.0   # 1/c
        else:
            c = b.rng.uniform(-1.0, 1.0, shape)
            lo, hi = -1.0, 1.0
        np_dtype = np.float16 if x.dtype == F16 else np.float32
        other = Value(b.const(c.astype(np_dtype), "c"), shape, x.dtype, lo, hi)
    first, second = (x, other) if b.draw.bool() or op == "Div" else (other, x)
    products = [a * c for a in (first.lo, first.hi) for c in (second.lo, second.hi)]
    r = {"Add": (first.lo + second.lo, first.hi + second.hi),
         "Sub": (first.lo - second.hi, first.hi - second.lo),
         "Mul": (min(products), max(products)),
         "Div": (min(products), max(products)),
         "Max": (max(first.lo, second.lo), max(first.hi, second.hi)),
         "Min": (min(first.lo, second.lo), min(first.hi, second.hi))}[op]
    return _emit(b, op, [first.name, second.name], [r])


def op_clip(b: Builder) -> list[Value] | None:
    v = b.pick(_f32)
    if v is None:
        return None
    lo = float(np.float32(b.rng.uniform(-1.5, 0.0)))
    hi = float(np.float32(b.rng.uniform(0.0, 1.5)))
    ins = [v.name, b.const(np.float32(lo), "c"), b.const(np.float32(hi), "c")]
    return _emit(b, "Clip", ins, [(lo, hi)])


def op_conv(b: Builder) -> list[Value] | None:
    x = b.pick(lambda v: _f32(v) and len(v.shape) == 4 and v.shape[1] <= 64)
    if x is None:
        return None
    n, c, h, w = x.shape
    groups = b.draw.choice([g for g in (1, 1, 1, 2, 3, c) if c % g == 0])
    cout = groups * b.draw.choice((1, 2, 3, 5, 8, 17)) if groups > 1 else b.draw.choice((1, 3, 8, 16, 17, 20, 32))
    kh, kw = b.draw.int(1, 3), b.draw.int(1, 3)
    sh, sw = b.draw.int(1, 2), b.draw.int(1, 2)
    dh, dw = (b.draw.int(1, 2), b.draw.int(1, 2)) if b.draw.bool() else (1, 1)
    pads = [b.draw.int(0, k - 1) for k in (kh, kw, kh, kw)] if b.draw.bool() else [0, 0, 0, 0]
    if (h + pads[0] + pads[2] - dh * (kh - 1) - 1) < 0 or (w + pads[1] + pads[3] - dw * (kw - 1) - 1) < 0:
        return None
    fan_in = (c // groups) * kh * kw
    wname, scale = b.weight((cout, c // groups, kh, kw), fan_in)
    ins = [x.name, wname]
    bias = 0.0
    if b.draw.bool():
        ins.append(b.const(b.rng.uniform(-0.5, 0.5, cout).astype(np.float32), "b"))
        bias = 0.5
    bound = fan_in * scale * x.bound + bias
    return _emit(b, "Conv", ins, [(-bound, bound)], kernel_shape=[kh, kw], strides=[sh, sw],
                 dilations=[dh, dw], pads=pads, group=groups)


def op_pool(b: Builder) -> list[Value] | None:
    x = b.pick(lambda v: _f32(v) and len(v.shape) == 4)
    if x is None:
        return None
    kind = b.draw.choice(["MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"])
    if kind.startswith("Global"):
        return _emit(b, kind, [x.name], [(x.lo, x.hi)])
    _, _, h, w = x.shape
    kh, kw = b.draw.int(1, min(3, h)), b.draw.int(1, min(3, w))
    attrs: dict[str, Any] = {"kernel_shape": [kh, kw], "strides": [b.draw.int(1, 2), b.draw.int(1, 2)]}
    if b.draw.bool():
        attrs["pads"] = [b.draw.int(0, k - 1) for k in (kh, kw, kh, kw)]
    if kind == "AveragePool" and attrs.get("pads") and b.draw.bool():
        attrs["count_include_pad"] = 1
    lo, hi = x.lo, x.hi
    if kind == "AveragePool" and attrs.get("count_include_pad"):
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    return _emit(b, kind, [x.name], [(lo, hi)], **attrs)


def op_matmul(b: Builder) -> list[Value] | None:
    x = b.pick(lambda v: _f32(v) and len(v.shape) >= 2 and v.shape[-1] <= 256)
    if x is None:
        return None
    k = x.shape[-1]
    if b.draw.bool():  # two activations (attention's Q.K^T shape): the other's batch broadcasts
        y = b.pick(lambda v: _f32(v) and len(v.shape) >= 2 and v.shape[-2] == k and v is not x
                   and _broadcasts(v.shape[:-2], x.shape[:-2]))
        if y is not None:
            bound = k * x.bound * y.bound
            return _emit(b, "MatMul", [x.name, y.name], [(-bound, bound)])
    nout = b.draw.choice((1, 3, 16, 17, 32, 64))
    wname, scale = b.weight((k, nout), k)
    bound = k * scale * x.bound
    return _emit(b, "MatMul", [x.name, wname], [(-bound, bound)])


def _broadcasts(a: tuple[int, ...], c: tuple[int, ...]) -> bool:
    """Whether batch dims `a` and `c` broadcast together to `c`."""
    return len(a) <= len(c) and all(d in (1, e) for d, e in zip(reversed(a), reversed(c)))


def op_gemm(b: Builder) -> list[Value] | None:
    x = b.pick(lambda v: _f32(v) and len(v.shape) == 2)
    if x is None:
        return None
    trans_a = int(b.draw.bool() and b.draw.bool())
    m, k = x.shape[::-1] if trans_a else x.shape
    nout = b.draw.choice((1, 5, 16, 33, 64))
    trans_b = int(b.draw.bool())
    wname, scale = b.weight((nout, k) if trans_b else (k, nout), k)
    alpha = float(b.draw.choice((1.0, 1.0, 0.5, 2.0)))
    beta = float(b.draw.choice((1.0, 1.0, 0.5)))
    ins = [x.name, wname]
    bias = 0.0
    if b.draw.bool():
        ins.append(b.const(b.rng.uniform(-0.5, 0.5, b.draw.choice([(nout,), (1, nout), (m, nout)])).astype(np.float32), "b"))
        bias = 0.5 * beta
    bound = alpha * k * scale * x.bound + bias
    return _emit(b, "Gemm", ins, [(-bound, bound)], transA=trans_a, transB=trans_b, alpha=alpha, beta=beta)


REDUCE = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1", "ReduceL2")


def op_reduce(b: Builder) -> list[Value] | None:
    x = b.pick(lambda v: _f32(v) and len(v.shape) >= 1)
    if x is None:
        return None
    op = b.draw.choice(REDUCE)
    r = len(x.shape)
    axes = sorted({b.draw.int(-r, r - 1) % r for _ in range(b.draw.int(1, r))})
    if b.draw.bool():
        axes = [a - r if b.draw.bool() else a for a in axes]  # negative axes too
    keep = int(b.draw.bool())
    n = math.prod(x.shape[a % r] for a in axes)
    m = x.bound
    rng = {"ReduceSum": (n * x.lo, n * x.hi), "ReduceMean": (x.lo, x.hi), "ReduceMax": (x.lo, x.hi),
           "ReduceMin": (x.lo, x.hi), "ReduceSumSquare": (0.0, n * m * m), "ReduceL1": (0.0, n * m),
           "ReduceL2": (0.0, math.sqrt(n) * m)}[op]
    axes_as_input = b.opset >= 18 or (op == "ReduceSum" and b.opset >= 13)
    if axes_as_input:
        return _emit(b, op, [x.name, b.ints(axes, "axes")], [rng], keepdims=keep)
    return _emit(b, op, [x.name], [rng], axes=axes, keepdims=keep)


def _factor(b: Builder, size: int) -> list[int]:
    """A random shape of `size` elements, rank 1-4."""
    dims, rest = [], size
    for _ in range(b.draw.int(0, 3)):
        divs = [d for d in range(2, min(rest, 64) + 1) if rest % d == 0]
        if not divs:
            break
        d = b.draw.choice(divs)
        dims.append(d)
        rest //= d
    dims.append(rest)
    order = list(range(len(dims)))
    for i in range(len(order) - 1, 0, -1):
        j = b.draw.int(0, i)
        order[i], order[j] = order[j], order[i]
    return [dims[i] for i in order]


def op_reshape(b: Builder) -> list[Value] | None:
    x = b.pick(_is_float)
    if x is None:
        return None
    kind = b.draw.choice(["Reshape", "Reshape", "Flatten", "Squeeze", "Unsqueeze"])
    if kind == "Reshape":
        shape = _factor(b, x.size)
        if len(shape) > 1 and b.draw.bool():
            shape[b.draw.int(0, len(shape) - 1)] = -1
        return _emit(b, "Reshape", [x.name, b.ints(shape, "shape")], [(x.lo, x.hi)])
    if kind == "Flatten" and x.shape:
        return _emit(b, "Flatten", [x.name], [(x.lo, x.hi)], axis=b.draw.int(-len(x.shape), len(x.shape)))
    if kind in ("Squeeze", "Flatten"):
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        if not ones or len(x.shape) == 1:
            return None
        axes = [a for a in ones if b.draw.bool()] or ones[:1]
        return _emit(b, "Squeeze", [x.name, b.ints(axes, "axes")], [(x.lo, x.hi)])
    if len(x.shape) >= 4:
        return None
    axis = b.draw.int(-len(x.shape) - 1, len(x.shape))
    return _emit(b, "Unsqueeze", [x.name, b.ints([axis], "axes")], [(x.lo, x.hi)])


def op_transpose(b: Builder) -> list[Value] | None:
    x = b.pick(lambda v: _is_float(v) and len(v.shape) >= 2)
    if x is None:
        return None
    perm = list(range(len(x.shape)))
    for i in range(len(perm) - 1, 0, -1):
        j = b.draw.int(0, i)
        perm[i], perm[j] = perm[j], perm[i]
    return _emit(b, "Transpose", [x.name], [(x.lo, x.hi)], perm=perm)


def op_slice(b: Builder) -> list[Value] | None:
    x = b.pick(lambda v: _is_float(v) and v.shape != ())
    if x is None:
        return None
    r = len(x.shape)
    axes = sorted({b.draw.int(0, r - 1) for _ in range(b.draw.int(1, r))})
    starts, ends, steps = [], [], []
    for a in axes:
        d = x.shape[a]
        step = b.draw.choice((1, 1, 1, 2, 3, -1, -2))
        if step > 0:
            s, e = b.draw.int(0, d - 1), b.draw.int(1, d)
            if e <= s:
                s, e = e - 1, s + 1
            e = e if b.draw.bool() else e - d - (0 if e < d else 0)  # negative ends too
            if e == 0:
                e = d
        else:
            s, e = b.draw.int(0, d - 1), b.draw.int(-d - 1, -1)
            if e >= s - d:
                e = -d - 1
        starts.append(s)
        ends.append(e if e != 0 else d)
        steps.append(step)
    ins = [x.name, b.ints(starts, "s"), b.ints(ends, "e"), b.ints(axes, "ax")]
    if any(s != 1 for s in steps) or b.draw.bool():
        ins.append(b.ints(steps, "st"))
    return _emit(b, "Slice", ins, [(x.lo, x.hi)])


def op_concat(b: Builder) -> list[Value] | None:
    x = b.pick(lambda v: _is_float(v) and v.shape != ())
    if x is None:
        return None
    r = len(x.shape)
    axis = b.draw.int(0, r - 1)
    same = [v for v in b.values if v.dtype == x.dtype and len(v.shape) == r and v is not x
            and all(d == e for i, (d, e) in enumerate(zip(v.shape, x.shape)) if i != axis)]
    parts = [x] + ([b.draw.choice(same)] if same and b.draw.bool() else [])
    if len(parts) == 1 or b.draw.bool():
        shape = list(x.shape)
        shape[axis] = b.draw.choice((1, 2, 3, 16))
        np_dtype = np.float16 if x.dtype == F16 else np.float32
        parts.append(Value(b.const(b.rng.uniform(-1, 1, shape).astype(np_dtype), "c"), tuple(shape), x.dtype, -1.0, 1.0))
    if b.draw.bool():
        parts.reverse()
    return _emit(b, "Concat", [p.name for p in parts], [(min(p.lo for p in parts), max(p.hi for p in parts))],
                 axis=axis - r if b.draw.bool() else axis)


def op_split(b: Builder) -> list[Value] | None:
    x = b.pick(lambda v: _is_float(v) and max(v.shape, default=0) >= 2)
    if x is None:
        return None
    axis = b.draw.choice([i for i, d in enumerate(x.shape) if d >= 2])
    d = x.shape[axis]
    if b.draw.bool():
        cut = b.draw.int(1, d - 1)
        sizes = [cut, d - cut]
        return _emit(b, "Split", [x.name, b.ints(sizes, "split")], [(x.lo, x.hi)] * 2, axis=axis)
    n = b.draw.choice([k for k in (2, 3, 4) if d % k == 0] or [1])
    if n == 1:
        return None
    count = {"num_outputs": n} if b.opset >= 18 else {}  # opset 18 requires it for equal parts
    return _emit(b, "Split", [x.name], [(x.lo, x.hi)] * n, axis=axis, **count)


def op_pad(b: Builder) -> list[Value] | None:
    x = b.pick(lambda v: _f32(v) and len(v.shape) >= 1)
    if x is None:
        return None
    r = len(x.shape)
    mode = b.draw.choice(["constant", "constant", "reflect", "edge"])
    pads = []
    for i in range(2 * r):
        d = x.shape[i % r]
        hi = (d - 1) if mode == "reflect" else 2
        pads.append(b.draw.int(0, min(hi, 2)) if b.draw.bool() else 0)
    ins = [x.name, b.ints(pads, "pads")]
    lo, hi = x.lo, x.hi
    if mode == "constant":
        value = float(np.float32(b.rng.uniform(-1, 1))) if b.draw.bool() else 0.0
        ins.append(b.const(np.float32(value), "c"))
        lo, hi = min(lo, value), max(hi, value)
    return _emit(b, "Pad", ins, [(lo, hi)], mode=mode)


def op_softmax(b: Builder) -> list[Value] | None:
    x = b.pick(lambda v: _f32(v) and v.shape != () and v.bound < 50)
    if x is None:
        return None
    op = b.draw.choice(["Softmax", "Softmax", "LogSoftmax"])
    axis = b.draw.int(-len(x.shape), len(x.shape) - 1)
    n = x.shape[axis]
    r = (0.0, 1.0) if op == "Softmax" else (-(x.hi - x.lo) - math.log(n), 0.0)
    return _emit(b, op, [x.name], [r], axis=axis)


def op_norm(b: Builder) -> list[Value] | None:
    """LayerNormalization (opset 17+), BatchNormalization and InstanceNormalization."""
    kinds = ["BatchNormalization", "InstanceNormalization"] + (["LayerNormalization"] * 2 if b.opset >= 17 else [])
    op = b.draw.choice(kinds)
    if op == "LayerNormalization":
        x = b.pick(lambda v: _f32(v) and v.varied and len(v.shape) >= 1 and v.shape[-1] >= 2)
        if x is None:
            return None
        axis = b.draw.int(max(1, len(x.shape) - 2), len(x.shape) - 1) if len(x.shape) > 1 else 0
        shape = x.shape[axis:]
        n = math.prod(shape)
        ins = [x.name, b.const(b.rng.uniform(0.5, 1.5, shape).astype(np.float32), "g"),
               b.const(b.rng.uniform(-0.5, 0.5, shape).astype(np.float32), "b")]
        bound = 1.5 * math.sqrt(n) + 0.5
        return _emit(b, op, ins, [(-bound, bound)], axis=axis, epsilon=1e-5)
    x = b.pick(lambda v: _f32(v) and len(v.shape) >= 3 and (op == "BatchNormalization" or (
        v.varied and math.prod(v.shape[2:]) >= 2)))
    if x is None:
        return None
    c = x.shape[1]
    scale = b.rng.uniform(0.5, 1.5, c).astype(np.float32)
    bias = b.rng.uniform(-0.5, 0.5, c).astype(np.float32)
    ins = [x.name, b.const(scale, "g"), b.const(bias, "b")]
    if op == "BatchNormalization":
        mean = b.rng.uniform(-0.5, 0.5, c).astype(np.float32)
        var = b.rng.uniform(0.5, 2.0, c).astype(np.float32)
        ins += [b.const(mean, "m"), b.const(var, "v")]
        bound = 1.5 * (x.bound + 0.5) / math.sqrt(0.5) + 0.5
        return _emit(b, op, ins, [(-bound, bound)], epsilon=1e-5)
    bound = 1.5 * math.sqrt(math.prod(x.shape[2:])) + 0.5
    return _emit(b, op, ins, [(-bound, bound)], epsilon=1e-5)


def op_expand(b: Builder) -> list[Value] | None:
    x = b.pick(lambda v: _is_float(v) and 1 in v.shape)
    if x is None:
        return None
    shape = [b.draw.choice((2, 3, 5)) if d == 1 and b.draw.bool() else d for d in x.shape]
    op = b.draw.choice(["Expand", "Tile"])
    if op == "Tile":
        reps = [s // d for s, d in zip(shape, x.shape)]
        return _emit(b, "Tile", [x.name, b.ints(reps, "reps")], [(x.lo, x.hi)])
    return _emit(b, "Expand", [x.name, b.ints(shape, "shape")], [(x.lo, x.hi)])


def op_on_input(b: Builder) -> list[Value] | None:
    """Discontinuous ops, on graph inputs only (both sides hold their exact bits): a
    compare feeding Where, floor / ceil / round / sign, argmax."""
    x = b.pick(lambda v: v.exact and _f32(v))
    if x is None:
        return None
    kind = b.draw.choice(["Where", "Where", "Rounding", "ArgMax"])
    if kind == "Rounding":
        op = b.draw.choice(["Floor", "Ceil", "Round", "Sign"])
        return _emit(b, op, [x.name], [(math.floor(x.lo), math.ceil(x.hi))])
    if kind == "ArgMax":
        axis = b.draw.int(0, len(x.shape) - 1)
        made = _emit(b, b.draw.choice(["ArgMax", "ArgMin"]), [x.name], [(0, x.shape[axis])],
                     axis=axis, keepdims=int(b.draw.bool()))
        if made:  # int64: feed it back into float computation through a cast
            made = _emit(b, "Cast", [made[0].name], [(0.0, float(x.shape[axis]))], to=FLOAT)
        return made
    threshold = b.const(np.float32(b.rng.uniform(-1, 1)), "c")
    cond = _emit(b, b.draw.choice(["Greater", "Less", "GreaterOrEqual", "LessOrEqual"]), [x.name, threshold], [(0, 1)])
    if not cond:
        return None
    other = b.pick(lambda v: _f32(v) and _broadcasts(v.shape, x.shape) and len(v.shape) <= len(x.shape))
    if other is None:
        return None
    return _emit(b, "Where", [cond[0].name, x.name, other.name], [(min(x.lo, other.lo), max(x.hi, other.hi))])


def op_f16(b: Builder) -> list[Value] | None:
    """Cast an f32 value to f16 (its range must fit f16 with room for what follows)."""
    x = b.pick(lambda v: _f32(v) and v.bound < 1000)
    if x is None:
        return None
    return _emit(b, "Cast", [x.name], [(x.lo, x.hi)], to=F16)


OPS: dict[str, tuple[Callable[[Builder], list[Value] | None], int]] = {
    "unary": (op_unary, 4),
    "domain": (op_domain, 2),
    "binary": (op_binary, 5),
    "clip": (op_clip, 1),
    "conv": (op_conv, 4),
    "pool": (op_pool, 2),
    "matmul": (op_matmul, 3),
    "gemm": (op_gemm, 2),
    "reduce": (op_reduce, 2),
    "reshape": (op_reshape, 2),
    "transpose": (op_transpose, 2),
    "slice": (op_slice, 2),
    "concat": (op_concat, 2),
    "split": (op_split, 1),
    "pad": (op_pad, 1),
    "softmax": (op_softmax, 2),
    "norm": (op_norm, 2),
    "expand": (op_expand, 1),
    "on_input": (op_on_input, 1),
    "f16": (op_f16, 1),
}
MENU = [name for name, (_, weight) in OPS.items() for _ in range(weight)]


# ---------------------------------------------------------------------------
# A whole model.
# ---------------------------------------------------------------------------


@dataclass
class FuzzModel:
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    ops: list[str]          # op types of the nodes, in order

    def save(self, path: str) -> None:
        """The model with its inputs (as a test_data_set next to it, the backend tests' layout)."""
        import os

        os.makedirs(os.path.join(path, "test_data_set_0"), exist_ok=True)
        onnx.save(self.model, os.path.join(path, "model.onnx"))
        for i, (name, x) in enumerate(self.feeds.items()):
            onnx.save_tensor(numpy_helper.from_array(x, name), os.path.join(path, "test_data_set_0", f"input_{i}.pb"))


def _input_shape(draw: Draw) -> tuple[int, ...]:
    if draw.bool():  # an image: N, C, H, W
        return (draw.choice((1, 1, 2, 3)), draw.choice((1, 3, 4, 8, 16, 17, 20)),
                draw.choice((1, 3, 5, 7, 8, 9, 16)), draw.choice((1, 2, 5, 7, 8, 9, 16)))
    rank = draw.int(1, 4)
    shape = [draw.choice(DIMS) for _ in range(rank)]
    while math.prod(shape) > MAX_ELEMENTS // 4:
        shape[shape.index(max(shape))] = 1
    return tuple(shape)


def generate(draw: Draw, max_nodes: int = 8, exact_inputs: bool = True) -> FuzzModel:
    """One random valid model: 1-2 graph inputs, up to `max_nodes` nodes; every value no node
    reads is a graph output (at most 4, the last made first). `exact_inputs=False` for a model
    checked in a low-precision mode: force_fp16 rounds the graph inputs to f16 before any op,
    so a comparison, rounding or argmax of them may rightly land one step away - the menu
    leaves those out."""
    menu = MENU if exact_inputs else [m for m in MENU if m != "on_input"]
    b = Builder(draw, draw.choice(OPSETS))
    for i in range(draw.int(1, 2)):
        v = Value(f"x{i}", _input_shape(draw), FLOAT, -INPUT_RANGE, INPUT_RANGE, exact=True, varied=True)
        b.inputs.append(v)
        b.values.append(v)
    target = draw.int(1, max_nodes)
    attempts = 0
    while len(b.nodes) < target and attempts < 4 * max_nodes:
        attempts += 1
        fn, _ = OPS[draw.choice(menu)]
        fn(b)
    made = [v for v in b.values if v not in b.inputs]
    if not made:  # nothing applied: one relu keeps the model non-empty
        made = _emit(b, "Relu", [b.inputs[0].name], [(0.0, INPUT_RANGE)]) or []
    leaves = [v for v in reversed(made) if v.name not in b.consumed][:4]
    model = b.model(leaves)
    onnx.checker.check_model(model, full_check=True)
    feed_rng = np.random.default_rng(draw.int(0, 2**31 - 1))
    feeds = {v.name: feed_rng.uniform(-INPUT_RANGE, INPUT_RANGE, v.shape).astype(np.float32) for v in b.inputs}
    return FuzzModel(model, feeds, list(b.ops))


def generate_seeded(seed: int, max_nodes: int = 8, exact_inputs: bool = True) -> FuzzModel:
    return generate(SeededDraw(seed), max_nodes, exact_inputs)
