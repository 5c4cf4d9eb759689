"""A shape range compiled as several range programs (buckets), the inputs' sizes choosing one.

    cm = geir.compile("llama.onnx", input_shape="input_ids:8,1~4096", range_buckets="auto")
    cm.run({"input_ids": ids})    # the bucket whose range holds ids' sequence length
    cm.bucket_report()            # per bucket: its range, latency at its top, peak memory

One shape-range program (driver/shape_ranges.py) is planned for the range's top: at 8 x 4096
positions a LLaMA-2-7B layer's projections split over L2 into a launch per batch row, and at
64 positions each launch still reads all the weights, 8 times the static program's reads
(docs/dynamic-shapes.md). Buckets cut the range into parts, each an ordinary range program
planned for its own top - `range_buckets="256,1024"` over 1~4096 compiles 1~256, 257~1024
and 1025~4096 - so a size runs a program planned at most one bucket's span above it.

- `range_buckets` lists the tops of every bucket but the last (the range's own top), each
  above the range's bottom and below its top, ascending; with several ranged dims it names
  the one it splits (`"seq:256,1024"`, the dim's symbol: its dim_param, else input_axis).
- `"auto"` splits the widest ranged dim (largest hi / lo) at hi / 4, hi / 16, ... down to
  AUTO_FLOOR. A part whose top is at most 4x its bottom keeps the plan of its top close to
  each size's: the LLaMA-2-7B layer at 8 x 1~4096 was +93% over the static program at 16
  positions as one range and -9% in the part 1~256 (docs/dynamic-shapes.md). Below 256 a
  part would cost one more compile for little: packed tiles already hold several batch rows'
  positions there. A range too narrow to split is one program, as without the option.

The buckets share the weights and one workspace (one runs at a time: the top bucket's is
the largest), as gears do (driver/gears.py); the offline model holds them under
`ascend.gears {option = "range_buckets"}`, and a run takes the first program whose ranges
hold the inputs' sizes (runtime/ascend_interpreter.py `gear_of`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from geir.driver.dynamic_shapes import MAX_GEARS, ShapeOptionError
from geir.driver.shape_ranges import RangeDim, RangeModel
from geir.errors import GeirError

OPTION = "range_buckets"
AUTO_FACTOR = 4
"""`auto`: each bucket's top is the next one's divided by this."""
AUTO_FLOOR = 256
"""`auto`: no bucket top below this."""


def bucket_tops(text: str, dims: list[RangeDim]) -> tuple[int, list[int]]:
    """(the index in `dims` of the dim to split, the tops of its buckets but the last) of
    the option's text; no tops: a range too narrow for `auto` to split."""
    text = str(text).strip()
    if text == "auto":
        i = max(range(len(dims)), key=lambda j: dims[j].hi / dims[j].lo)
        tops, top = [], dims[i].hi // AUTO_FACTOR
        while top >= max(AUTO_FLOOR, dims[i].lo):
            tops.append(top)
            top //= AUTO_FACTOR
        return i, sorted(tops)
    symbol, sep, values = text.rpartition(":")
    if sep:
        named = [j for j, d in enumerate(dims) if d.symbol == symbol.strip()]
        if not named:
            raise ShapeOptionError(f"{OPTION} '{text}': no ranged dim is named '{symbol.strip()}' (the ranged dims: "
                                   f"{', '.join(d.symbol for d in dims)})")
        i = named[0]
    elif len(dims) > 1:
        raise ShapeOptionError(f"{OPTION} '{text}': the model has {len(dims)} ranged dims "
                               f"({', '.join(d.symbol for d in dims)}); name the one to split (e.g. "
                               f"\"{dims[0].symbol}:{values}\")")
    else:
        i = 0
    try:
        tops = [int(v) for v in values.split(",") if v.strip()]
    except ValueError:
        raise ShapeOptionError(f"{OPTION} '{text}': expected \"auto\" or the buckets' tops, e.g. \"256,1024\"") from None
    dim = dims[i]
    if not tops:
        raise ShapeOptionError(f"{OPTION} '{text}' lists no bucket top")
    if tops != sorted(set(tops)):
        raise ShapeOptionError(f"{OPTION} '{text}': the tops must be ascending, each once")
    if tops[0] < dim.lo or tops[-1] >= dim.hi:
        raise ShapeOptionError(f"{OPTION} '{text}': each top must lie in {dim.lo}~{dim.hi - 1} (the range of "
                               f"{dim.describe()}, below its top)")
    if len(tops) + 1 > MAX_GEARS:
        raise ShapeOptionError(f"{OPTION} '{text}' makes {len(tops) + 1} buckets; at most {MAX_GEARS}")
    return i, tops


def split_dims(dims: list[RangeDim], index: int, tops: list[int]) -> list[list[RangeDim]]:
    """Per bucket, the range dims: dim `index` cut at `tops`, the others whole."""
    dim = dims[index]
    bounds = list(zip([dim.lo] + [t + 1 for t in tops], tops + [dim.hi]))
    return [[dataclasses.replace(d, lo=lo, hi=hi) if j == index else d for j, d in enumerate(dims)]
            for lo, hi in bounds]


class RangeBuckets:
    """One shape-range program per bucket, smallest first (see the module docstring)."""

    def __init__(self, buckets: list[RangeModel], option: str, compile_seconds: list[float] | None = None):
        self.buckets = buckets
        self.option = option
        self.compile_seconds = compile_seconds or [0.0] * len(buckets)

    @property
    def programs(self) -> list[RangeModel]:
        return self.buckets

    @property
    def dims(self) -> list[RangeDim]:
        """The ranges the buckets cover together."""
        first, last = self.buckets[0].dims, self.buckets[-1].dims
        return [dataclasses.replace(d, lo=f.lo) for f, d in zip(first, last)]

    def __getattr__(self, name: str):  # module, options, stages, mlir, ... as the top bucket's
        if name in ("buckets", "option", "compile_seconds"):
            raise AttributeError(name)
        return getattr(self.buckets[-1], name)

    def ranges(self) -> str:
        """input_shape's text of the whole range."""
        return RangeModel(self.buckets[-1].program, self.dims).ranges()

    def input_specs(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        return self.buckets[-1].input_specs()

    def bucket_of(self, shapes: Mapping[str, tuple[int, ...]]) -> int:
        """The first bucket whose ranges hold `shapes`; an error listing the buckets if none."""
        for i, bucket in enumerate(self.buckets):
            if all(self._holds(bucket, n, s) for n, s in shapes.items()):
                return i
        given = ";".join(f"{n}:{','.join(map(str, s))}" for n, s in shapes.items())
        raise GeirError(f"input shapes {given} lie in no bucket of {self.ranges()} "
                        f"({' | '.join(b.ranges() for b in self.buckets)})")

    @staticmethod
    def _holds(bucket: RangeModel, name: str, shape: tuple[int, ...]) -> bool:
        spec = next((s for n, s, _ in bucket.input_specs() if n == name), None)
        if spec is None:
            return True  # not an input of the model: the program's own error names it
        dims = {p: d for d in bucket.dims for p in d.positions}
        return len(spec) == len(shape) and all(
            d.lo <= x <= d.hi if (d := dims.get((name, a))) is not None else x == s
            for a, (x, s) in enumerate(zip(shape, spec)))

    def _bucket(self, feeds: Mapping[str, np.ndarray]) -> RangeModel:
        return self.buckets[self.bucket_of({n: tuple(np.shape(v)) for n, v in feeds.items()})]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self._bucket(feeds).run(feeds)

    def profile(self, feeds: Mapping[str, np.ndarray] | None = None, *, mode: str = "full"):
        """(outputs, report) of the bucket the inputs' sizes select (without inputs: the top
        bucket at the range's top); the report's `bucket` names its range."""
        bucket = self.buckets[-1] if feeds is None else self._bucket(feeds)
        outputs, report = bucket.profile(feeds, mode=mode)
        report["bucket"] = bucket.ranges()
        return outputs, report

    def random_inputs(self, seed: int = 0, *, floats: bool = True, sizes: Mapping[str, int] | None = None
                      ) -> dict[str, np.ndarray]:
        """Seeded random inputs with each dim at `sizes[symbol]` (default: its upper bound)."""
        return RangeModel(self.buckets[-1].program, self.dims).random_inputs(seed, floats=floats, sizes=sizes)

    def memory(self) -> dict[str, int]:
        """Device memory: the weights once, the largest bucket's workspace (one runs at a
        time); and what separate programs would take."""
        from geir.driver.gears import shared_memory

        return shared_memory(self.buckets)

    def bucket_report(self, mode: str = "timing") -> list[dict[str, Any]]:
        """Per bucket: its range, modeled latency at its top, peak memory, compile seconds."""
        rows = []
        for bucket, seconds in zip(self.buckets, self.compile_seconds):
            _, report = bucket.profile(mode=mode)
            rows.append({"bucket": bucket.ranges(), "latency_us": report["latency_us"],
                         "peak_memory_bytes": report["peak_memory_bytes"], "compile_seconds": seconds})
        return rows

    def manifest(self) -> dict:
        """What an offline model's manifest records of the buckets (driver/om.py)."""
        return {"option": OPTION, "text": self.option, "ranges": [b.ranges() for b in self.buckets]}

    @classmethod
    def from_manifest(cls, manifest: dict, programs: list) -> RangeBuckets:
        """The buckets of an offline model: a loaded CompiledModel per bucket, each told its
        ranges by its program (the extent arguments)."""
        from geir.runtime.interpreter import module_ranges

        buckets = []
        for program in programs:
            dims = [RangeDim(r.positions, r.lo, r.hi, r.name.removesuffix(".extent"))
                    for r in module_ranges(program.module)]
            buckets.append(RangeModel(program, dims))
        return cls(buckets, manifest.get("text", "auto"))

    def save(self, path) -> None:
        """An offline model holding every bucket, each weight once (driver/om.py)."""
        from pathlib import Path

        from geir.driver.om import save_om

        if Path(path).suffix != ".om":
            raise GeirError(f"range buckets are saved as one offline model (.om), not {Path(path).suffix or path}")
        save_om(self, path, gears=self)
