"""The modeled device: per-chip specs loaded from JSON and the one cost model.

A device is one JSON file in ``runtime/devices/`` (format: docs/device.md). Every figure in it
carries the published source it was read from (ascend-hardware.md); ``DeviceSpec.sources`` keeps
them next to the values. ``CostModel`` turns the figures into cycles and microseconds; the
compiler (fusion, layout, tiling) and the simulator both price work through it, so what the
compiler predicts is what the simulator measures.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from geir.errors import GeirError

DEVICES_DIR = Path(__file__).parent / "devices"
DEFAULT_DEVICE = "ascend910b"

SPACES = ("gm", "l1", "l0a", "l0b", "l0c", "ub")

# The DMA engine (pipe) of each path of the Da Vinci core. A path is possible on a device only if
# its file gives it a rate; this table only says which pipe carries it.
DMA_ENGINES: Mapping[tuple[str, str], str] = MappingProxyType({
    ("gm", "ub"): "MTE2", ("gm", "l1"): "MTE2", ("gm", "l0a"): "MTE2", ("gm", "l0b"): "MTE2",
    ("l1", "l0a"): "MTE1", ("l1", "l0b"): "MTE1", ("l1", "ub"): "MTE1",
    ("ub", "gm"): "MTE3", ("ub", "l1"): "MTE3", ("l1", "gm"): "MTE3",
    ("l0c", "gm"): "FIX", ("l0c", "l1"): "FIX", ("l0c", "ub"): "FIX",
})

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
    """No device of that name in runtime/devices/."""


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
    buffer_bytes: Mapping[str, int]   # l1, l0a, l0b, l0c, ub per core
    l2_bytes: int
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


# --- loading -----------------------------------------------------------------------------------

# field -> (value kind, is a group of figures in the file)
_FIELDS: dict[str, tuple[str, bool]] = {
    "name": ("str", False), "soc_version": ("str", False), "split_cube_vector": ("bool", False),
    "cube_cores": ("count", False), "vector_cores": ("count", False),
    "vector_per_cube": ("count", False), "cube_clock_hz": ("pos", False),
    "vector_clock_hz": ("pos", False), "buffer_bytes": ("count", True),
    "l2_bytes": ("count", False), "hbm_bytes": ("count", False),
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
    need("alignment_bytes", values["alignment_bytes"], SPACES)
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
    """Names of the devices shipped in runtime/devices/."""
    return sorted(p.stem for p in DEVICES_DIR.glob("*.json"))


def load_device(name_or_path: str | Path = DEFAULT_DEVICE) -> DeviceSpec:
    """Load a device by name (``runtime/devices/<name>.json``) or from a JSON file path.

    Raises ``UnknownDeviceError`` for an unknown name (listing the known ones) and
    ``DeviceFileError`` for a malformed file (naming the field)."""
    text = str(name_or_path)
    looks_like_path = isinstance(name_or_path, Path) or text.endswith(".json") or "/" in text
    path = Path(text) if looks_like_path else DEVICES_DIR / f"{text}.json"
    if not path.is_file():
        if looks_like_path:
            raise DeviceFileError(f"{text}: no such device file")
        raise UnknownDeviceError(f"unknown device '{text}'; known devices: "
                                 f"{', '.join(list_devices())} (or pass a path to a .json file)")
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise DeviceFileError(f"{path}: cannot read device file: {e}") from e
    return _parse(data, str(path))


# --- the cost model ----------------------------------------------------------------------------

Bound = Literal["cube", "vector", "dma", "launch"]


@dataclass(frozen=True)
class KernelEstimate:
    """Roofline-style estimate of one kernel launch, in microseconds."""

    total_us: float
    bound: Bound            # the largest term
    cube_us: float
    vector_us: float
    dma_us: float           # max of HBM time and per-core MTE time
    launch_us: float        # launch overhead + block dispatch


def _ceil_div(a: float, b: float) -> int:
    return math.ceil(a / b)


class CostModel:
    """The one cost model of geir. Every method returns cycles of the clock it names (cube clock
    for cube, MTE and FIX work; vector clock for vector work) unless it says microseconds."""

    def __init__(self, spec: DeviceSpec | str = DEFAULT_DEVICE):
        self.spec = load_device(spec) if isinstance(spec, str) else spec

    # -- conversions ----------------------------------------------------------------------------

    def cycles_to_us(self, cycles: float, clock: Literal["cube", "vector"] = "cube") -> float:
        """Cycles at ``cube_clock_hz`` (or ``vector_clock_hz``) in microseconds."""
        hz = self.spec.cube_clock_hz if clock == "cube" else self.spec.vector_clock_hz
        return cycles / hz * 1e6

    # -- DMA ------------------------------------------------------------------------------------

    def dma_engine(self, src: str, dst: str) -> str:
        """The pipe ("MTE2" | "MTE1" | "MTE3" | "FIX") that moves data from ``src`` to ``dst``;
        ValueError if the device has no such path (e.g. gm->l0c, ub->l0a)."""
        for space in (src, dst):
            if space not in SPACES:
                raise ValueError(f"unknown memory space '{space}'; spaces: {', '.join(SPACES)}")
        if (src, dst) not in self.spec.dma_bytes_per_cycle:
            paths = ", ".join(f"{s}->{d}" for s, d in self.spec.dma_bytes_per_cycle)
            raise ValueError(f"no DMA path {src}->{dst} on {self.spec.name}; paths: {paths}")
        return DMA_ENGINES[src, dst]

    def dma_block_bytes(self) -> int:
        """The unit DMA engines move: a 32-byte block (UB / L1 alignment, Ascend C docs)."""
        return self.spec.alignment_bytes["ub"]

    def dma_bytes(self, nbytes: int, run_bytes: int | None = None) -> int:
        """Bytes the engine moves to carry ``nbytes`` of data in contiguous runs of
        ``run_bytes`` (None: one run). DMA moves whole blocks, so a copy that re-lays data
        out in runs shorter than a block (an ND feature map interleaved into NC1HWC0's C0
        lanes: one element per run) moves a block per run; runs of a block or more (a
        matrix's ND2NZ fractal rows) cost nothing extra."""
        block = self.dma_block_bytes()
        if not run_bytes or run_bytes >= block or nbytes <= 0:
            return nbytes
        return _ceil_div(nbytes, run_bytes) * block

    def dma_cycles(self, nbytes: int, src: str, dst: str) -> int:
        """One copy moving ``nbytes``: ceil(nbytes / rate) + start-up, where rate is the path's
        ``dma_bytes_per_cycle`` (KPP/PTO: gm->ub 128, gm->l1 256, ub->gm 64, ...) and start-up
        the engine's ``dma_startup_cycles`` (an assumption); a re-laying copy moves
        ``dma_bytes``. Zero bytes cost nothing."""
        engine = self.dma_engine(src, dst)
        if nbytes <= 0:
            return 0
        rate = self.spec.dma_bytes_per_cycle[src, dst]
        return _ceil_div(nbytes, rate) + self.spec.dma_startup_cycles[engine]

    # -- cube -----------------------------------------------------------------------------------

    def cube_fractal(self, dtype: Any) -> tuple[int, int, int]:
        """(m, k, n) of one cube step: 16x16x16, or 16x32x16 for int8 (INI, PTO)."""
        name = dtype_name(dtype)
        if name not in self.spec.cube_fractal_k:
            raise ValueError(f"the cube of {self.spec.name} has no dtype '{name}'; "
                             f"dtypes: {', '.join(self.spec.cube_fractal_k)}")
        return 16, self.spec.cube_fractal_k[name], 16

    def cube_macs_per_cycle(self, dtype: Any) -> float:
        """MACs per cycle per cube core: 16*k*16 x fractals/cycle (fp16: 4096; fp32: 1024)."""
        fm, fk, fn = self.cube_fractal(dtype)
        return fm * fk * fn * self.spec.cube_fractals_per_cycle[dtype_name(dtype)]

    def mmad_cycles(self, m: int, k: int, n: int, dtype: Any = "f16") -> int:
        """One mmad (l0a x l0b -> l0c): ceil(m/16)*ceil(k/fk)*ceil(n/16) fractals (fk = 16, or 32
        for int8) / ``cube_fractals_per_cycle`` (1; fp32 0.25), plus ``mmad_startup_cycles``.
        A 16x16x16 fp16 mmad is 1 cycle, fp32 4 cycles (with the shipped start-up of 0)."""
        fm, fk, fn = self.cube_fractal(dtype)
        if min(m, k, n) <= 0:
            return 0
        fractals = _ceil_div(m, fm) * _ceil_div(k, fk) * _ceil_div(n, fn)
        rate = self.spec.cube_fractals_per_cycle[dtype_name(dtype)]
        return _ceil_div(fractals, rate) + self.spec.mmad_startup_cycles

    def peak_cube_flops(self, dtype: Any = "f16") -> float:
        """cube_cores x MACs/cycle x 2 x cube clock (910B2 fp16: 24 x 4096 x 2 x 1.8 GHz)."""
        return self.spec.cube_cores * self.cube_macs_per_cycle(dtype) * 2 * self.spec.cube_clock_hz

    # -- vector ---------------------------------------------------------------------------------

    def vector_class(self, op_kind: str) -> str:
        """The throughput row ("binary", "unary") that prices ``op_kind``."""
        cls = self.spec.vector_op_classes.get(op_kind, op_kind)
        if cls not in self.spec.vector_bytes_per_cycle:
            kinds = sorted({*self.spec.vector_bytes_per_cycle, *self.spec.vector_op_classes})
            raise ValueError(f"unknown vector op kind '{op_kind}'; kinds: {', '.join(kinds)}")
        return cls

    def vector_cycles(self, op_kind: str, nbytes: int, dtype: Any = "f16") -> int:
        """One vector instruction over ``nbytes`` (of its largest operand; for a cast, the wider
        side): ceil(nbytes / 256) repeats x (256 / bytes_per_cycle) cycles per repeat, plus
        ``vector_startup_cycles`` (PTO: 6). bytes_per_cycle is ``vector_bytes_per_cycle`` of the
        kind's class and dtype (binary 128, unary fp16 256). Zero bytes cost nothing."""
        rates = self.spec.vector_bytes_per_cycle[self.vector_class(op_kind)]
        name = dtype_name(dtype)
        if name not in rates:
            raise ValueError(f"the vector unit of {self.spec.name} has no {op_kind} rate for "
                             f"'{name}'; dtypes: {', '.join(rates)}")
        if nbytes <= 0:
            return 0
        repeat = self.spec.vector_repeat_bytes
        repeats = _ceil_div(nbytes, repeat)
        return math.ceil(repeats * repeat / rates[name]) + self.spec.vector_startup_cycles

    # -- whole kernels ----------------------------------------------------------------------------

    def hbm_time_us(self, nbytes: int) -> float:
        """Moving ``nbytes`` at the device's ``hbm_bytes_per_s`` (910B2: 1.6 TB/s)."""
        return nbytes / self.spec.hbm_bytes_per_s * 1e6

    def launch_overhead_us(self) -> float:
        """Fixed cost of one kernel launch (fitted parameter, 5.9 us; no official figure)."""
        return self.spec.launch_overhead_us

    def kernel_estimate(
        self,
        *,
        cube_macs: int = 0,
        cube_dtype: Any = "f16",
        vector_bytes: Mapping[str | tuple[str, Any], int] | None = None,
        vector_dtype: Any = "f16",
        hbm_read_bytes: int = 0,
        hbm_write_bytes: int = 0,
        block_dim: int = 1,
        mte_bytes: Mapping[tuple[str, str], int] | None = None,
    ) -> KernelEstimate:
        """Roofline estimate of one kernel: max(cube, vector, dma) + launch.

        - ``block_dim`` blocks run in waves of ``cube_cores`` (a kernel with cube work: each block
          is one cube core + ``vector_per_cube`` vector cores, as a mix kernel) or of
          ``vector_cores`` (a vector-only kernel); each core does 1/block_dim (1/(block_dim *
          vector_per_cube) for vector work in a mix kernel) of the work per wave.
        - cube: MACs per block / ``cube_macs_per_cycle`` x waves, at the cube clock.
        - vector: ``vector_cycles`` of each kind's bytes per vector core x waves, at the vector
          clock; ``vector_bytes`` maps an op kind (priced in ``vector_dtype``) or a (kind, dtype)
          pair to total bytes.
        - dma: max of the HBM time of all bytes read and written (``hbm_bytes_per_s``) and the
          per-core MTE time: each engine's ``dma_cycles`` of its per-core share x waves, engines
          in parallel. ``mte_bytes`` gives total bytes per (src, dst) path; by default reads go
          gm->l1 (cube work) or gm->ub, writes ub->gm (vector work) or l0c->gm.
        - launch: ``launch_overhead_us`` + waves x ``block_dispatch_cycles``.
        The bound is the largest of the four terms. L2 hits are not modeled.
        """
        spec = self.spec
        if block_dim <= 0:
            raise ValueError(f"block_dim must be positive, got {block_dim}")
        has_cube = cube_macs > 0
        waves = _ceil_div(block_dim, spec.cube_cores if has_cube else spec.vector_cores)
        vec_units = block_dim * (spec.vector_per_cube if has_cube else 1)

        cube_cycles = (_ceil_div(cube_macs / block_dim, self.cube_macs_per_cycle(cube_dtype))
                       * waves if has_cube else 0)
        vec_cycles = 0
        for key, nbytes in (vector_bytes or {}).items():
            kind, dtype = key if isinstance(key, tuple) else (key, vector_dtype)
            vec_cycles += self.vector_cycles(kind, _ceil_div(nbytes, vec_units), dtype) * waves

        if mte_bytes is None:
            has_vector = bool(vector_bytes)
            mte_bytes = {("gm", "l1") if has_cube else ("gm", "ub"): hbm_read_bytes,
                         ("ub", "gm") if has_vector else ("l0c", "gm"): hbm_write_bytes}
        engine_cycles: dict[str, int] = {}
        for (src, dst), nbytes in mte_bytes.items():
            units = vec_units if "ub" in (src, dst) else block_dim
            cycles = self.dma_cycles(_ceil_div(nbytes, units), src, dst) * waves
            engine = self.dma_engine(src, dst)
            engine_cycles[engine] = engine_cycles.get(engine, 0) + cycles

        terms: dict[Bound, float] = {
            "cube": self.cycles_to_us(cube_cycles),
            "vector": self.cycles_to_us(vec_cycles, "vector"),
            "dma": max(self.hbm_time_us(hbm_read_bytes + hbm_write_bytes),
                       self.cycles_to_us(max(engine_cycles.values(), default=0))),
            "launch": self.launch_overhead_us()
            + self.cycles_to_us(waves * spec.block_dispatch_cycles),
        }
        work = max(terms["cube"], terms["vector"], terms["dma"])
        bound = max(terms, key=terms.__getitem__)
        return KernelEstimate(total_us=work + terms["launch"], bound=bound,
                              cube_us=terms["cube"], vector_us=terms["vector"],
                              dma_us=terms["dma"], launch_us=terms["launch"])

    def roofline_bound_us(self, total_cube_flops: float, compulsory_hbm_bytes: int,
                          dtype: Any = "f16") -> float:
        """Lower bound on a whole program: max(flops / ``peak_cube_flops(dtype)``, compulsory
        bytes / ``hbm_bytes_per_s``) in microseconds (no launch overhead)."""
        return max(total_cube_flops / self.peak_cube_flops(dtype) * 1e6,
                   self.hbm_time_us(compulsory_hbm_bytes))
