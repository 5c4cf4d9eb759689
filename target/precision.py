"""GE's precision modes, its keep_dtype lines and mix lists: what each float op computes in.

ATC's `--precision_mode` says which element type every floating-point op of a model is
computed in; `--keep_dtype` pins ops at their original type and `--modify_mixlist` edits the
white / black / gray lists of the mixed-precision modes. The meanings, as GE documents them
for Atlas A2 (910B) inference:

| mode | cube ops (conv, matmul, gemm) | other float ops |
|---|---|---|
| `force_fp16` (ATC's inference default) | fp16 | fp16 where the kernel takes fp16 |
| `allow_fp32_to_fp16` | fp16 | fp32 kept where the kernel takes fp32 |
| `allow_fp32_to_bf16` | bf16 | fp32 kept where the kernel takes fp32 |
| `allow_mix_precision`, `allow_mix_precision_fp16` | white: fp16 | black fp32, gray follows its inputs |
| `allow_mix_precision_bf16` | white: bf16 | black fp32, gray follows its inputs |
| `must_keep_origin_dtype` | as the model | as the model |
| `force_fp32`, `cube_fp16in_fp32out` | fp16 in, fp32 out | fp32 |

Lowering is from fp32: an fp16 / bf16 model stays as it is except under `force_fp16` (every
float op fp16) and `force_fp32` (every float op fp32, the cube still reading fp16). f64 is
never touched (no kernel computes it). The per-op decision, the casts and the constants are
the graph pass's (passes/graph/assign_precision.py); this module holds the facts it reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.ir import Operation

from geir.dialects import graph as g
from geir.errors import GeirError
from geir.target.op_info import Precision, precision_of


class PrecisionError(GeirError):
    """A precision option that cannot be honoured: an unknown mode, a keep_dtype line naming
    no op, a malformed mix list."""


@dataclass(frozen=True)
class Mode:
    """One of GE's precision modes: `low` is the type ops are lowered to (None: nothing is
    lowered); `policy` says which ops: every one ("force"), the cube's ("cube"), the white
    list's with gray ops following ("mix"), none ("keep"), or everything raised to fp32 with the
    cube reading fp16 ("fp32")."""

    name: str
    low: str | None
    policy: str
    min_cosine: float | None
    """The cosine similarity an output keeps against the fp32 model: what a run in this mode
    is judged by (geir-compile's output check, the tests); None: fp32 tolerances."""


MODES: dict[str, Mode] = {m.name: m for m in (
    Mode("force_fp16", "f16", "force", 0.999),
    Mode("allow_fp32_to_fp16", "f16", "cube", 0.9999),
    Mode("allow_fp32_to_bf16", "bf16", "cube", 0.999),
    Mode("allow_mix_precision", "f16", "mix", 0.9999),
    Mode("allow_mix_precision_fp16", "f16", "mix", 0.9999),
    Mode("allow_mix_precision_bf16", "bf16", "mix", 0.999),
    Mode("must_keep_origin_dtype", None, "keep", None),
    Mode("force_fp32", "f16", "fp32", 0.9999),
    Mode("cube_fp16in_fp32out", "f16", "fp32", 0.9999),
)}

ALWAYS_KEPT = frozenset({g.QuantizeOp, g.DequantizeOp, g.RequantizeOp})
"""Ops that compute in their own type in every mode: a quantization scale rounded to fp16 moves
values across rounding boundaries (whole quantization steps off), so quantize / dequantize /
requantize keep their scale's type (fp32), as the device keeps an fp32 dequantization scale."""

DEFAULT_MODE = "force_fp16"
"""ATC's default for inference; `must_keep_origin_dtype` gives exact fp32 back."""


def mode_named(name: str) -> Mode:
    try:
        return MODES[name]
    except KeyError:
        raise PrecisionError(f"unknown precision mode '{name}'; modes: {', '.join(MODES)}") from None


# ---------------------------------------------------------------------------
# Op types as GE names them (ONNX's names) and the graph ops they are.
# ---------------------------------------------------------------------------


def _normal(name: str) -> str:
    # ONNX spells some types out where the graph op abbreviates: BatchNormalization is
    # graph.batch_norm (BatchNormOp), GlobalAveragePool is GlobalAvgPoolOp.
    return name.lower().replace("_", "").replace("normalization", "norm").replace("average", "avg")


def _graph_op_classes() -> dict[str, type[g.GraphOp]]:
    classes = {}
    for obj in vars(g).values():
        if isinstance(obj, type) and issubclass(obj, g.GraphOp) and obj.__name__.endswith("Op") \
                and not obj.__name__.startswith("_") and obj is not g.GraphOp:
            classes[_normal(obj.__name__.removesuffix("Op"))] = obj
    return classes


def op_class_named(type_name: str) -> type[g.GraphOp]:
    """The graph op of an ONNX op type ("MatMul", "BatchNormalization", "LRN")."""
    kind = _graph_op_classes().get(_normal(type_name))
    if kind is None:
        raise PrecisionError(f"'{type_name}' is not an op type geir knows")
    return kind


# ---------------------------------------------------------------------------
# The mix lists and GE's modify_mixlist.
# ---------------------------------------------------------------------------

_LISTS = {"white-list": Precision.WHITE, "black-list": Precision.BLACK, "gray-list": Precision.GRAY}


@dataclass(frozen=True)
class MixLists:
    """op_info's white / black / gray lists with a modify_mixlist applied: `override` maps an
    op class to the list it was moved to."""

    override: dict[type[Operation], Precision] = field(default_factory=dict)

    def of(self, op: Operation) -> Precision:
        return self.override.get(type(op), precision_of(op))

    @staticmethod
    def parse(text: str, source: str = "modify_mixlist") -> MixLists:
        """GE's JSON: `{"black-list": {"to-add": [...], "to-remove": [...]}, "white-list": ...,
        "gray-list": ...}`. Removing a type puts it on the gray list (GE: a removed op follows
        its inputs); a type added to two lists, or removed from a list it is not on, is an
        error."""
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise PrecisionError(f"{source}: not valid JSON: {e}") from None
        if not isinstance(doc, dict):
            raise PrecisionError(f"{source}: expected a JSON object with {', '.join(_LISTS)}")
        override: dict[type[Operation], Precision] = {}
        added: dict[type[Operation], str] = {}
        for key, edits in doc.items():
            if key not in _LISTS:
                raise PrecisionError(f"{source}: unknown key '{key}'; keys: {', '.join(_LISTS)}")
            if not isinstance(edits, dict) or not set(edits) <= {"to-add", "to-remove"}:
                raise PrecisionError(f"{source}: '{key}' must be an object with \"to-add\" and/or \"to-remove\" lists")
            for verb in ("to-remove", "to-add"):
                names = edits.get(verb, [])
                if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                    raise PrecisionError(f"{source}: '{key}'.'{verb}' must be a list of op type names")
                for name in names:
                    try:
                        kind = op_class_named(name)
                    except PrecisionError as e:
                        raise PrecisionError(f"{source}: {key} {verb}: {e}") from None
                    if verb == "to-add":
                        if kind in added and added[kind] != key:
                            raise PrecisionError(f"{source}: '{name}' is added to both the {added[kind]} and the {key}")
                        added[kind] = key
                        override[kind] = _LISTS[key]
                    else:
                        if precision_of(kind) is not _LISTS[key]:
                            raise PrecisionError(f"{source}: '{name}' is not on the {key} "
                                                 f"(it is {precision_of(kind).value})")
                        override.setdefault(kind, Precision.GRAY)
        return MixLists(override)

    @staticmethod
    def load(path: str | Path) -> MixLists:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise PrecisionError(f"cannot read modify_mixlist file {path}: {e.strerror}") from None
        return MixLists.parse(text, str(path))


# ---------------------------------------------------------------------------
# keep_dtype: op names and `OpType::X` lines.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class KeepDtype:
    """GE's keep_dtype: ops kept at their original type, by node name or `OpType::X`."""

    names: frozenset[str] = frozenset()
    types: frozenset[type[Operation]] = frozenset()
    lines: tuple[str, ...] = ()

    @staticmethod
    def parse(lines: tuple[str, ...] | list[str]) -> KeepDtype:
        names, types, kept = set(), set(), []
        for raw in lines:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            kept.append(line)
            if line.startswith("OpType::"):
                try:
                    types.add(op_class_named(line.removeprefix("OpType::")))
                except PrecisionError as e:
                    raise PrecisionError(f"keep_dtype line '{line}': {e}") from None
            else:
                names.add(line)
        return KeepDtype(frozenset(names), frozenset(types), tuple(kept))

    @staticmethod
    def read(path: str | Path) -> tuple[str, ...]:
        """The lines of a keep_dtype file, comments and blank lines dropped."""
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise PrecisionError(f"cannot read keep_dtype file {path}: {e.strerror}") from None
        return tuple(s.strip() for s in text.splitlines() if s.strip() and not s.strip().startswith("#"))
