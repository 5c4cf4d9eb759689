"""graph-quantize: a calibrated float graph becomes a QDQ graph (int8 post-training quantization).

For every quantizable layer the calibration table names (by its node name, the op location's
first name) and `skip` does not:

    y = conv(x, w, b)
      => y = conv(dequantize(quantize(x, s, z), s, z), dequantize(w_q, s_w), b)

* the data input gets the table's per-tensor scale s and int8 zero point z;
* the constant weights are quantized here, symmetric per output channel: s_w = max|w| / 127
  over each channel (1 for a channel of zeros), w_q = round_half_even(w / s_w) in int8, s_w
  shaped to broadcast against w: [M, 1, 1, 1] for conv weights, [N] for a matmul's [K, N]
  columns, [N, 1] or [N] for a gemm's b as trans_b lays it out;
* a constant bias per output channel becomes int32 at the accumulator's scale s * s_w
  (`dequantize(b_q, s * s_w)`, as onnxruntime's quantize_static writes it): the QDQ graph then
  computes what the int8 kernel does, which adds it to the int32 accumulator; another bias
  (a gemm's [M, N] c, alpha or beta != 1) stays float.

Quantizable: a conv (any group, depthwise included), a gemm, or a matmul whose right operand
is a float constant and whose data input is not a constant or already a dequantize. Anything
else (a matmul of two activations, a layer already in QDQ form) is left as it is. The result
runs in the graph interpreter as fake quantization with the int8 numerics, and is the form
graph-fold-qdq turns into int8 contractions (docs/quantization.md).

The calibration table is JSON, written by `geir.quantize` (driver/quantize.py):

    {"version": 1, "method": "entropy", "percentile": 99.99,
     "layers": {"conv1": {"input": "x", "scale": 0.0123, "zero_point": 0,
                          "min": -1.7, "max": 1.5, "threshold": 1.56}, ...}}

`scale` (positive) and `zero_point` (an int8) are what the pass reads; the rest says where
they came from. A table or a `skip` name that names no op of the graph is an error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from geir.dialects import graph as g
from geir.errors import GeirError
from geir.ir.locations import loc_names
from geir.ir.types import is_float
from geir.passes.graph.utils import constant, hint

TABLE_VERSION = 1


class QuantizeError(GeirError):
    pass


# ---------------------------------------------------------------------------
# The calibration table
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LayerRange:
    """One layer's input activation parameters, and what they were measured from."""

    scale: float
    zero_point: int
    info: dict[str, Any] = field(default_factory=dict)  # input name, min, max, threshold


@dataclass(frozen=True)
class CalibrationTable:
    method: str
    layers: dict[str, LayerRange]
    percentile: float | None = None
    float_layers: tuple[str, ...] = ()  # what an accuracy-driven fallback kept in float
    search: Any = field(default=None, compare=False, repr=False)  # that search (driver/sensitivity.py)

    def to_json(self) -> str:
        doc: dict[str, Any] = {"version": TABLE_VERSION, "method": self.method}
        if self.percentile is not None:
            doc["percentile"] = self.percentile
        if self.float_layers:
            doc["float_layers"] = list(self.float_layers)
        doc["layers"] = {name: {**r.info, "scale": r.scale, "zero_point": r.zero_point}
                         for name, r in self.layers.items()}
        return json.dumps(doc, indent=1) + "\n"

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> CalibrationTable:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise QuantizeError(f"cannot read calibration table {path}: {e.strerror}") from None
        return cls.from_json(text, str(path))

    @classmethod
    def from_json(cls, text: str, source: str = "calibration table") -> CalibrationTable:
        def bad(why: str) -> QuantizeError:
            return QuantizeError(f"{source}: {why}")

        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise bad(f"not valid JSON: {e}") from None
        if not isinstance(doc, dict):
            raise bad("a calibration table is a JSON object")
        if doc.get("version") != TABLE_VERSION:
            raise bad(f"version {doc.get('version')!r}; this geir reads version {TABLE_VERSION}")
        if not isinstance(doc.get("method"), str):
            raise bad("'method' (a string) is missing")
        layers = doc.get("layers")
        if not isinstance(layers, dict):
            raise bad("'layers' (an object: layer name -> scale, zero_point) is missing")
        parsed = {}
        for name, entry in layers.items():
            if not isinstance(entry, dict):
                raise bad(f"layer '{name}': an object with scale and zero_point expected")
            scale, zero = entry.get("scale"), entry.get("zero_point")
            if isinstance(scale, bool) or not isinstance(scale, int | float) or not (math.isfinite(scale) and scale > 0):
                raise bad(f"layer '{name}': scale must be a positive number, got {scale!r}")
            if isinstance(zero, bool) or not isinstance(zero, int) or not -128 <= zero <= 127:
                raise bad(f"layer '{name}': zero_point must be an int8 integer, got {zero!r}")
            info = {k: v for k, v in entry.items() if k not in ("scale", "zero_point")}
            parsed[name] = LayerRange(float(scale), zero, info)
        kept = doc.get("float_layers", [])
        if not isinstance(kept, list) or not all(isinstance(n, str) for n in kept):
            raise bad("'float_layers' must be a list of layer names")
        return cls(doc["method"], parsed, doc.get("percentile"), tuple(kept))


# ---------------------------------------------------------------------------
# Quantizable layers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Layer:
    """A contraction with a float data input and constant float weights."""

    op: Operation
    name: str
    channel_axis: int  # of the weights: the output channel


def _is_float_tensor(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType) and is_float(v.type.element_type)


def _weight_channel_axis(op: Operation) -> int | None:
    """The output channel axis of op's constant weights, if op is a quantizable contraction."""
    w = g.constant_value_of(op.operands[1])
    if w is None:
        return None
    if isinstance(op, g.ConvOp):
        return 0
    if isinstance(op, g.GemmOp):
        return 0 if op.attrs()["trans_b"] else 1
    if isinstance(op, g.MatMulOp) and w.ndim >= 2:
        return w.ndim - 1
    return None


def layer_of(op: Operation) -> Layer | None:
    if not isinstance(op, g.ConvOp | g.GemmOp | g.MatMulOp):
        return None
    x, w = op.operands[0], op.operands[1]
    names = loc_names(op.location)
    if not names or not (_is_float_tensor(x) and _is_float_tensor(w)):
        return None
    if isinstance(x.owner, g.ConstantOp | g.DequantizeOp):  # folded away, or already quantized
        return None
    axis = _weight_channel_axis(op)
    return None if axis is None else Layer(op, names[0], axis)


def quantizable_layers(module: ModuleOp) -> list[Layer]:
    """Every quantizable layer, in program order."""
    return [layer for op in module.walk() if (layer := layer_of(op)) is not None]


def is_quantized(module: ModuleOp) -> bool:
    return any(isinstance(op, g.QuantizeOp | g.DequantizeOp | g.RequantizeOp) for op in module.walk())


# ---------------------------------------------------------------------------
# The rewrite
# ---------------------------------------------------------------------------


def weight_params(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(w_q, s_w): symmetric per-channel int8 weights and their scale, shaped to broadcast."""
    others = tuple(i for i in range(w.ndim) if i != axis)
    amax = np.abs(w.astype(np.float32)).max(axis=others, keepdims=True)
    scale = np.where(amax > 0, amax / np.float32(127), np.float32(1)).astype(np.float32)
    w_q = np.clip(np.rint(w.astype(np.float32) / scale), -127, 127).astype(np.int8)
    if axis == w.ndim - 1:  # columns: [N], as a matmul's per-column parameters are
        scale = scale.reshape(-1)
    return w_q, scale.astype(w.dtype)


def _quantize_layer(layer: Layer, params: LayerRange, rewriter: Rewriter) -> None:
    op = layer.op
    x, w_value = op.operands[0], op.operands[1]
    loc, dtype = op.location, g.constant_value_of(w_value).dtype
    s = constant(np.asarray(params.scale, dtype), loc, hint(x, "scale"))
    z = constant(np.asarray(params.zero_point, np.int8), loc, hint(x, "zero_point"))
    q = g.QuantizeOp.build_op([x, s, z])
    q.location, q.output.name_hint = loc, hint(x, "q")
    dq = g.DequantizeOp.build_op([q, s, z])
    dq.location, dq.output.name_hint = loc, hint(x, "dq")
    w_q, s_w = weight_params(g.constant_value_of(w_value), layer.channel_axis)
    wq = constant(w_q, loc, hint(w_value, "q"))
    sw = constant(s_w, loc, hint(w_value, "scale"))
    dqw = g.DequantizeOp.build_op([wq, sw])
    dqw.location, dqw.output.name_hint = loc, hint(w_value, "dq")
    new = [s, z, q, dq, wq, sw, dqw]
    bias = _int32_bias(op, params.scale, s_w)
    rest = list(op.operands[2:])
    if bias is not None:
        bq = constant(bias[0], loc, hint(rest[0], "q"))
        bs = constant(bias[1], loc, hint(rest[0], "scale"))
        dqb = g.DequantizeOp.build_op([bq, bs])
        dqb.location, dqb.output.name_hint = loc, hint(rest[0], "dq")
        new += [bq, bs, dqb]
        rest[0] = dqb.output
    rewriter.insert_op(new, InsertPoint.before(op))
    old = [v.owner for v in op.operands[1:]]
    op.operands = (dq.output, dqw.output, *rest)
    for o in old:
        if isinstance(o, Operation) and not o.results[0].uses:
            rewriter.erase_op(o)


def _int32_bias(op: Operation, x_scale: float, s_w: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """A constant bias per output channel as (int32 values, scale): at the accumulator's scale
    s_x * s_w, as quantize_static writes it, so the QDQ graph computes what the int8 kernel
    does (graph-fold-qdq adds it in int32). None for no bias, one not per channel, a gemm
    with alpha or beta != 1, or values beyond int32."""
    if len(op.operands) < 3:
        return None
    if isinstance(op, g.GemmOp) and (op.attrs()["alpha"] != 1.0 or op.attrs()["beta"] != 1.0):
        return None
    b = g.constant_value_of(op.operands[2])
    scale = (np.float32(x_scale) * np.asarray(s_w, np.float32).reshape(-1)).astype(np.float32)
    if b is None or b.ndim > 1 or b.size not in (1, scale.size) or not np.all(scale > 0):
        return None
    with np.errstate(all="ignore"):
        q = np.rint(np.broadcast_to(b.reshape(-1).astype(np.float64), scale.shape) / scale)
    if not np.all(np.isfinite(q)) or np.abs(q).max(initial=0) >= 2**31 - 2**24:
        return None
    shape = b.shape if b.size == scale.size else scale.shape
    return q.astype(np.int32).reshape(shape), scale.astype(b.dtype).reshape(shape)


def unnamed(module: ModuleOp, names: Iterable[str]) -> list[str]:
    """The names no op of the module has in its location."""
    present = {n for op in module.walk() for n in loc_names(op.location)}
    return [n for n in names if n not in present]


def insert_qdq(module: ModuleOp, table: CalibrationTable, skip: tuple[str, ...] = ()) -> list[str]:
    """Quantize every layer of the table not in `skip`; returns the names of those quantized."""
    for what, wanted in (("calibration table", table.layers), ("skip", skip)):
        unknown = unnamed(module, wanted)
        if unknown:
            raise QuantizeError(f"{what}: no op of the graph is named {', '.join(repr(n) for n in unknown)}")
    rewriter = Rewriter()
    done = []
    for layer in quantizable_layers(module):
        if layer.name in skip or layer.name not in table.layers:
            continue
        _quantize_layer(layer, table.layers[layer.name], rewriter)
        done.append(layer.name)
    return done


@dataclass(frozen=True)
class QuantizePass(ModulePass):
    """Inserts quantize -> dequantize on the data input of each calibrated conv / gemm / matmul
    (the calibration table's per-tensor int8 parameters) and quantizes their constant weights
    per output channel (int8 constant -> dequantize); layers in `skip` stay float."""

    name = "graph-quantize"

    table: str = ""
    """The calibration table (JSON, written by geir.quantize)."""
    skip: tuple[str, ...] = ()
    """Node names of layers kept in float."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.table:
            raise QuantizeError("graph-quantize needs a calibration table: graph-quantize{table=FILE.json}")
        insert_qdq(op, CalibrationTable.load(self.table), tuple(self.skip))
