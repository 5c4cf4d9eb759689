"""What opsets 22 to 28 changed in the ONNX ops geir converts, and how the importer takes it.

One table, `OPSET_CHANGES`: for each converted op, every schema version after 21 up to
`MAX_OPSET` (the newest opset of the onnx release geir was checked against) with what it
changed, found by comparing each schema with its previous version
(`onnx.defs.get_schema(op, version)`). Three kinds of change occur:

- element types (bfloat16 in 22; float4e2m1 in 23; float8e8m0 in 24; int2 / uint2 in 25;
  float6 in 28): nothing to do here - `_element_type` in frontend/onnx.py takes every one
  ir/types.py has (all of these: the narrow ones are stored and converted, docs/precision.md)
  and rejects the others (complex, string) by name;
- documentation or a narrower type list: nothing to do;
- a new attribute: `check_opset_changes` lets through the values geir honours (`honoured`;
  None when the attribute cannot change the result on any element type geir takes) and
  rejects the rest, and an attribute used before the opset that added it, with one error
  naming the node, op type, opset and attribute. The converter then implements the honoured
  values (Range's stash_type, SpaceToDepth's mode).

A schema version missing from the table fails test_import.py, so an onnx release that
changes a converted op is looked at before MAX_OPSET moves past it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class OpsetChange:
    """One schema version of a converted op: what it changed and, for a new attribute, the
    values geir honours."""

    since: int
    change: str
    attribute: str = ""
    honoured: tuple | None = None  # None: every value (no effect on the types geir takes)
    adds: tuple[str, ...] = ()
    """Further inputs or attributes the version adds, which the converter checks itself (an
    optional input it rejects, a second attribute of a pair)."""


def _types(since: int, types: str) -> OpsetChange:
    return OpsetChange(since, f"adds element types {types}")


_BF16 = (_types(22, "bfloat16"),)
# The data-movement ops, constants and shape ops gained each new narrow type.
_NARROW = (_types(23, "float4e2m1"), _types(24, "float8e8m0"), _types(25, "int2, uint2"))

OPSET_CHANGES: dict[str, tuple[OpsetChange, ...]] = {
    **{op: _BF16 for op in (
        "AveragePool", "Conv", "ConvTranspose", "Cos", "Elu", "GlobalAveragePool", "GlobalMaxPool",
        "HardSigmoid", "HardSwish", "InstanceNormalization", "MaxPool", "Mish", "Round", "Selu", "Sin",
        "Softplus", "Softsign", "ThresholdedRelu",
    )},
    **{op: _NARROW for op in (
        "Constant", "ConstantOfShape", "Flatten", "Identity", "Pad", "Reshape", "Shape", "Size", "Squeeze",
        "Transpose", "Unsqueeze",
    )},
    # Recurrent layers (frontend/onnx_rnn.py), unrolled over the sequence.
    **{op: _BF16 for op in ("RNN", "GRU", "LSTM")},
    # Control flow (frontend/onnx_control_flow.py): the subgraphs' value types grew.
    **{op: _NARROW for op in ("If", "Loop", "Scan")},
    "Dropout": (_types(22, "float8 (4 kinds) and a bfloat16 ratio"),),
    # round_mode only rounds to float8e8m0: graph.cast keeps it there (frontend/onnx_narrow.py).
    "Cast": (
        _types(23, "float4e2m1"),
        OpsetChange(24, "adds float8e8m0 and round_mode", "round_mode"),
        _types(25, "int2, uint2"),
        _types(28, "float6e2m3, float6e3m2"),
    ),
    "CastLike": (
        _types(23, "float4e2m1"),
        OpsetChange(24, "adds float8e8m0 and round_mode", "round_mode"),
        _types(25, "int2, uint2"),
    ),
    # 23's output_dtype / precision are converted in frontend/onnx_quantized.py.
    "QuantizeLinear": (
        OpsetChange(23, "adds precision, float4e2m1 and float scales of any width", "precision"),
        _types(24, "float8e8m0 scales"), _types(25, "int2, uint2"), _types(28, "float6e2m3, float6e3m2"),
    ),
    "DequantizeLinear": (
        OpsetChange(23, "adds output_dtype and float4e2m1", "output_dtype"),
        _types(24, "float8e8m0 scales"), _types(25, "int2, uint2"), _types(28, "float6e2m3, float6e3m2"),
    ),
    "RMSNormalization": (OpsetChange(23, "new op (graph.rms_norm)"),),
    "RotaryEmbedding": (OpsetChange(23, "new op (graph.rotary_embedding)"),),
    "Attention": (
        OpsetChange(23, "new op (its function body's graph ops; graph.attention at O2 / O3)"),
        OpsetChange(24, "adds the nonpad_kv_seqlen input (a static cache's valid lengths: a padding mask "
                    "and the causal frontier per batch, built in the graph)", adds=("nonpad_kv_seqlen",)),
        OpsetChange(25, "adds left_window_size / right_window_size (sliding windows: a constant mask, or "
                    "per batch with nonpad_kv_seqlen)", "left_window_size", None, adds=("right_window_size",)),
    ),
    # float16 / bfloat16 ranges accumulate in float32 by default (stash_type 1 = FLOAT).
    "Range": (OpsetChange(27, "adds float16, bfloat16 and stash_type", "stash_type", (1,)),),
    "SpaceToDepth": (OpsetChange(28, "adds mode (DCR, the old order, or CRD)", "mode", ("DCR", "CRD")),),
    # fmod=0 on floats is A - floor(A / B) * B, numpy's mod, which graph.mod computes.
    "Mod": (OpsetChange(28, "allows fmod=0 on floats, spells out the special values"),),
    "Celu": (_types(28, "float16, bfloat16, double"),),
    "DepthToSpace": (OpsetChange(28, "documentation only"),),
    "ReduceLogSum": (OpsetChange(28, "drops the integer types"),),
    "ReduceLogSumExp": (OpsetChange(28, "drops the integer types"),),
    # Elementwise, integer and scan ops (frontend/onnx_elementwise.py).
    **{op: _BF16 for op in ("Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Tan", "Cosh", "Sinh")},
    "Swish": (OpsetChange(24, "new op (x * sigmoid(alpha * x): graph.mul, graph.sigmoid)"),),
    "SwiGLU": (OpsetChange(28, "new op (swish(A) * B: graph.mul, graph.sigmoid)"),),
    "BitCast": (OpsetChange(26, "new op (graph.bitcast)"),),
    "CumProd": (OpsetChange(26, "new op (graph.cum_prod)"),),
    # graph.bit_shift computes the signed types and the out-of-range amounts as 28 defines them.
    "BitShift": (OpsetChange(28, "adds the signed integer types, defines shifts outside [0, width)"),),
    # -- spatial ops (frontend/onnx_spatial.py) --
    "LpNormalization": (_types(22, "bfloat16"),),
    "LpPool": (_types(22, "bfloat16"),),
    "GridSample": (_types(22, "bfloat16"),),
    "MaxUnpool": (_types(22, "bfloat16"),),
    "RoiAlign": (_types(22, "bfloat16"),),
    "DeformConv": (_types(22, "bfloat16"),),
    # indexing (frontend/onnx_indexing.py)
    "TopK": (_types(24, "bfloat16"),),
    "Einsum": (_types(28, "bfloat16"),),
    "OneHot": (_types(28, "bfloat16 values"),),
    "EyeLike": (_types(22, "bfloat16"),),
    "ReverseSequence": (_types(28, "bfloat16"),),
    "Compress": (_types(28, "bfloat16"),),
    "Unique": (_types(28, "bfloat16"),),
    "TensorScatter": (OpsetChange(24, "new op (graph.tensor_scatter; graph.kv_cache_write for one position)"),),
    # Losses (frontend/onnx_losses.py); SoftmaxCrossEntropyLoss has no version after 13.
    "NegativeLogLikelihoodLoss": _BF16,
}


def check_opset_changes(op_type: str, opset: int, attrs: dict, error: Callable[[str], Exception]) -> None:
    """Raise `error(message)` if a node uses an attribute of OPSET_CHANGES that its opset
    does not have yet, or with a value geir does not honour."""
    for change in OPSET_CHANGES.get(op_type, ()):
        if not change.attribute or change.attribute not in attrs:
            continue
        name = change.attribute
        if opset < change.since:
            raise error(f"attribute '{name}' exists from opset {change.since} on")
        value = attrs[name].decode() if isinstance(attrs[name], bytes) else attrs[name]
        if change.honoured is not None and value not in change.honoured:
            honoured = ", ".join(repr(v) for v in change.honoured)
            raise error(f"attribute {name}={value!r} is not supported (opset {change.since} "
                        f"{change.change}); geir honours {honoured}")
