"""The modeled device: per-chip specs loaded from JSON.

A device is one JSON file in ``target/devices/`` (format: docs/device.md). Every figure in it
carries the published source it was read from; ``DeviceSpec.sources`` keeps them next to the
values. ``target.cost_model.CostModel`` turns the figures into cycles and microseconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from geir.dialects.ascend import DMA_ENGINES
from geir.errors import GeirError

DEVICES_DIR = Path(__file__).parent / "devices"
DEFAULT_DEVICE = "ascend910b"

MAX_TENSOR_BYTES = 64 * 2**30
"""The largest tensor geir materialises: 64 GiB, the device memory (`hbm_bytes`) of the largest
device it models (ascend910b.json). A larger tensor fits no modeled device, so the importer
rejects a node whose output is larger, from its shape, and constant folding never allocates
one (test_device.py keeps it equal to the largest device file's figure)."""


DTYPE_BYTES: Mapping[str, int] = MappingProxyType({
    "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i1": 1, "i8": 1, "u8": 1,
    "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8,
})
_DTYPE_ALIASES = {
    "fp16": "f16", "float16": "f16", "half": "f16", "bfloat16": "bf16", "fp32": "f32",
    "float32": "f32", "float": "f32", "float64": "f64", "int8": "i8", "si8": "i8", "uint8": "u8",
    "ui8": "u8", "int16": "i16", "si16": "i16", "uint16": "u16", "int32": "i32", "si32": "i32",
    "uint32": "u32", "int64": "i64", "si64": "i64", "uint64": "u64", "bool": "i1",
}


def dtype_name(dtype: Any) -> str:
    """Canonical short name ("f16", "bf16", "f32", "i8", ...) of a dtype given as a string
    ("fp16", "float16"), a numpy dtype/type, or an xDSL type (printed as "f16")."""
    if not isinstance(dtype, str):
        try:
            dtype = np.dtype(dtype).name
        except TypeError:
            dtype = str(dtype)
    dtype = dtype.lower()
    return _DTYPE_ALIASES.get(dtype, dtype)


class DeviceFileError(GeirError, ValueError):
    """A device file is unreadable, or a field is missing or invalid."""


class UnknownDeviceError(GeirError, ValueError):
    """No device of that name in target/devices/."""


@dataclass(frozen=True)
class DeviceSpec:
    """The published figures of one chip. Units are in the field names; "per core" figures are
    per cube core (l1, l0*) or per vector core (ub). ``sources`` maps each field (groups as
    ``"group.entry"``, e.g. ``"dma_bytes_per_cycle.gm->ub"``) to where its figure was read."""

    name: str
    soc_version: str
    split_cube_vector: bool           # True: separate AIC/AIV cores (910B); False: one AI core
    cube_cores: int
    vector_cores: int
    vector_per_cube: int              # vector cores paired with each cube core in a mix kernel
    cube_clock_hz: float
    vector_clock_hz: float
    buffer_bytes: Mapping[str, int]   # l1, l0a, l0b, l0c, ub (bt, fb) per core
    l2_bytes: int
    l2_bytes_per_s: float             # L2 read bandwidth, shared by all cores
    hbm_bytes: int
    hbm_bytes_per_s: float
    dma_bytes_per_cycle: Mapping[tuple[str, str], float]
    dma_startup_cycles: Mapping[str, int]        # per engine
    cube_fractal_k: Mapping[str, int]            # per dtype; m and n fractals are 16
    cube_fractals_per_cycle: Mapping[str, float]  # per dtype
    mmad_startup_cycles: int
    vector_lanes: int
    vector_repeat_bytes: int
    vector_startup_cycles: int
    vector_bytes_per_cycle: Mapping[str, Mapping[str, float]]  # class -> dtype -> bytes/cycle
    vector_op_classes: Mapping[str, str]         # op kind -> throughput class
    alignment_bytes: Mapping[str, int]           # per memory space
    flag_ids_per_core: int
    pipes: tuple[str, ...]
    launch_overhead_us: float
    block_dispatch_cycles: int
    sources: Mapping[str, str]

    def __hash__(self) -> int:
        return hash((self.name, self.soc_version))

    def align(self, nbytes: int, space: str) -> int:
        """``nbytes`` rounded up to the alignment of ``space``."""
        a = self.alignment_bytes[space]
        return -(-nbytes // a) * a

    @property
    def fix_quantizes(self) -> bool:
        """The FIX pipe quantizes: the device has the bias table and the fixpipe buffer and
        the MTE1 copies that fill them (the 910B; the 310P file has neither)."""
        return all(path in self.dma_bytes_per_cycle for path in (("l1", "bt"), ("l1", "fb")))


# --- loading -----------------------------------------------------------------------------------

# field -> (value kind, is a group of figures in the file)
_FIELDS: dict[str, tuple[str, bool]] = {
    "name": ("str", False), "soc_version": ("str", False), "split_cube_vector": ("bool", False),
    "cube_cores": ("count", False), "vector_cores": ("count", False),
    "vector_per_cube": ("count", False), "cube_clock_hz": ("pos", False),
    "vector_clock_hz": ("pos", False), "buffer_bytes": ("count", True),
    "l2_bytes": ("count", False), "l2_bytes_per_s": ("pos", False), "hbm_bytes": ("count", False),
    "hbm_bytes_per_s": ("pos", False), "dma_bytes_per_cycle": ("pos", True),
    "dma_startup_cycles": ("int_map", False), "cube_fractal_k": ("count_map", False),
    "cube_fractals_per_cycle": ("pos_map", False), "mmad_startup_cycles": ("int", False),
    "vector_lanes": ("count", False), "vector_repeat_bytes": ("count", False),
    "vector_startup_cycles": ("int", False), "vector_bytes_per_cycle": ("pos_map", True),
    "vector_op_classes": ("str_map", False), "alignment_bytes": ("count", True),
    "flag_ids_per_core": ("count", False), "pipes": ("str_list", False),
    "launch_overhead_us": ("num", False), "block_dispatch_cycles": ("int", False),
}
assert set(_FIELDS) | {"sources"} == {f.name for f in fields(DeviceSpec)}

_KIND_TEXT = {
    "str": "a string", "bool": "true or false", "int": "an integer >= 0",
    "count": "an integer > 0", "num": "a number >= 0", "pos": "a number > 0",
    "str_list": "a list of strings", "int_map": "an object of integers >= 0",
    "count_map": "an object of integers > 0", "pos_map": "an object of numbers > 0",
    "str_map": "an object of strings",
}


def _valid(kind: str, v: Any) -> bool:
    is_num = isinstance(v, (int, float)) and not isinstance(v, bool)
    match kind:
        case "str": return isinstance(v, str)
        case "bool": return isinstance(v, bool)
        case "int": return isinstance(v, int) and not isinstance(v, bool) and v >= 0
        case "count": return isinstance(v, int) and not isinstance(v, bool) and v > 0
        case "num": return is_num and v >= 0
        case "pos": return is_num and v > 0
        case "str_list": return isinstance(v, list) and all(isinstance(x, str) for x in v)
    if not isinstance(v, dict) or not v:
        return False
    return all(_valid(kind.removesuffix("_map"), x) for x in v.values())


def _figure(raw: Any, where: str, kind: str, file: str, sources: dict[str, str]) -> Any:
    if not isinstance(raw, dict) or "value" not in raw:
        raise DeviceFileError(f"{file}: field '{where}' must be an object with a 'value'")
    for key in ("unit", "source"):
        if not isinstance(raw.get(key), str):
            raise DeviceFileError(f"{file}: field '{where}' has no '{key}' string")
    if not _valid(kind, raw["value"]):
        raise DeviceFileError(
            f"{file}: field '{where}': value must be {_KIND_TEXT[kind]}, got {raw['value']!r}")
    sources[where] = raw["source"]
    return raw["value"]


def _parse(data: Any, file: str) -> DeviceSpec:
    if not isinstance(data, dict):
        raise DeviceFileError(f"{file}: a device file is one JSON object")
    unknown = sorted(k for k in data if k not in _FIELDS and not k.startswith("_"))
    if unknown:
        raise DeviceFileError(f"{file}: unknown field(s) {', '.join(unknown)}")
    sources: dict[str, str] = {}
    values: dict[str, Any] = {}
    for key, (kind, group) in _FIELDS.items():
        if key not in data:
            raise DeviceFileError(f"{file}: missing field '{key}'")
        raw = data[key]
        if not group:
            values[key] = _figure(raw, key, kind, file, sources)
            continue
        if not isinstance(raw, dict) or not raw or "value" in raw:
            raise DeviceFileError(f"{file}: field '{key}' must be an object of figures")
        values[key] = {sub: _figure(fig, f"{key}.{sub}", kind, file, sources)
                       for sub, fig in raw.items()}

    def need(key: str, present: Iterable[str], required: Iterable[str]) -> None:
        missing = sorted(set(required) - set(present))
        if missing:
            raise DeviceFileError(f"{file}: field '{key}' lacks {', '.join(missing)}")

    need("buffer_bytes", values["buffer_bytes"], ("l1", "l0a", "l0b", "l0c", "ub"))
    need("alignment_bytes", values["alignment_bytes"], ("gm", *values["buffer_bytes"]))  # the spaces it has
    need("vector_bytes_per_cycle", values["vector_bytes_per_cycle"], ("binary", "unary"))
    need("cube_fractal_k", values["cube_fractal_k"], values["cube_fractals_per_cycle"])
    need("cube_fractals_per_cycle", values["cube_fractals_per_cycle"], values["cube_fractal_k"])
    dma: dict[tuple[str, str], float] = {}
    for path, rate in values["dma_bytes_per_cycle"].items():
        src, _, dst = path.partition("->")
        if (src, dst) not in DMA_ENGINES:
            raise DeviceFileError(
                f"{file}: field 'dma_bytes_per_cycle.{path}': not a DMA path; known paths: "
                + ", ".join(f"{s}->{d}" for s, d in DMA_ENGINES))
        dma[src, dst] = rate
    need("dma_startup_cycles", values["dma_startup_cycles"], {DMA_ENGINES[p] for p in dma})
    for kind, cls in values["vector_op_classes"].items():
        if cls not in values["vector_bytes_per_cycle"]:
            raise DeviceFileError(f"{file}: field 'vector_op_classes': '{kind}' maps to "
                                  f"'{cls}', which vector_bytes_per_cycle does not define")

    frozen = {k: MappingProxyType(v) if isinstance(v, dict) else v for k, v in values.items()}
    frozen["dma_bytes_per_cycle"] = MappingProxyType(dma)
    frozen["vector_bytes_per_cycle"] = MappingProxyType(
        {k: MappingProxyType(v) for k, v in values["vector_bytes_per_cycle"].items()})
    frozen["pipes"] = tuple(values["pipes"])
    return DeviceSpec(**frozen, sources=MappingProxyType(sources))


def list_devices() -> list[str]:
    """Names of the devices shipped in target/devices/."""
    return sorted(p.stem for p in DEVICES_DIR.glob("*.json"))


def read_spec_file(name_or_path: str | Path, directory: Path, what: str, known: list[str],
                   unknown: type[GeirError]) -> tuple[Any, Path]:
    """The JSON of a spec file given by name (`directory`/<name>.json) or path, and its path: an
    unknown name raises `unknown` listing the `known` ones; a missing or unreadable file a
    DeviceFileError."""
    text = str(name_or_path)
    looks_like_path = isinstance(name_or_path, Path) or text.endswith(".json") or "/" in text
    path = Path(text) if looks_like_path else directory / f"{text}.json"
    if not path.is_file():
        if looks_like_path:
            raise DeviceFileError(f"{text}: no such {what} file")
        raise unknown(f"unknown {what} '{text}'; known {what}s: {', '.join(known)} (or pass a path to a .json file)")
    try:
        return json.loads(path.read_text()), path
    except (OSError, json.JSONDecodeError) as e:
        raise DeviceFileError(f"{path}: cannot read {what} file: {e}") from e


def load_device(name_or_path: str | Path = DEFAULT_DEVICE) -> DeviceSpec:
    """Load a device by name (``target/devices/<name>.json``) or from a JSON file path.

    Raises ``UnknownDeviceError`` for an unknown name (listing the known ones) and
    ``DeviceFileError`` for a malformed file (naming the field)."""
    data, path = read_spec_file(name_or_path, DEVICES_DIR, "device", list_devices(), UnknownDeviceError)
    return _parse(data, str(path))


# --- the cost model ----------------------------------------------------------------------------
