"""Running a shape-range program (driver/shape_ranges.py) on inputs of any size in its ranges.

The program is compiled at each range's upper bound. Each range has an extent argument
(attr_names.EXTENT: the input dims it sizes; attr_names.RANGE: [lo, hi]) that no caller
feeds: the runtime reads each dim's size off the inputs, checks it is in the range, zero-pads
those inputs to the upper bound, passes the size as the extent, and crops each output that
holds the dim (attr_names.EXTENT_ROWS on the output: [extent, axis, inner, outer]) back to
the real rows. Both interpreters run a program this way, so geir-run and an offline model
take any size in the ranges (geir-compare compares one tensor by tensor at the tops only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr

from geir.dialects import attr_names
from geir.errors import GeirError
from geir.passes.graph.padded_dims import Carried


class RangeError(GeirError):
    """Inputs outside a shape-range program's ranges."""


@dataclass(frozen=True)
class Range:
    """One ranged dim of a program: its extent argument and the input dims it sizes."""

    name: str                                  # the extent argument's input name
    positions: tuple[tuple[str, int], ...]     # (input name, axis)
    lo: int
    hi: int

    def describe(self) -> str:
        return f"{' and '.join(f'{n} dim {a}' for n, a in self.positions)} ({self.lo}~{self.hi})"


def ranges_of(names: Sequence[str], attrs: Sequence[DictionaryAttr]) -> list[Range]:
    """The ranges of a function from its argument names and attributes."""
    out = []
    for name, d in zip(names, attrs):
        positions = d.data.get(attr_names.EXTENT)
        if positions is None:
            continue
        bounds = d.data.get(attr_names.RANGE)
        lo, hi = (x.value.data for x in bounds.data) if isinstance(bounds, ArrayAttr) else (1, 0)
        out.append(Range(name, tuple((p.data[0].data, p.data[1].value.data) for p in positions.data), lo, hi))
    return out


def crops_of(attrs: DictionaryAttr) -> list[tuple[str, Carried]]:
    """(extent name, where the output holds it) of each range an output holds."""
    rows = attrs.data.get(attr_names.EXTENT_ROWS)
    if rows is None:
        return []
    return [(r.data[0].data, Carried(*(x.value.data for x in r.data[1:]))) for r in rows.data]


def bind(ranges: Sequence[Range], upper: Mapping[str, tuple[int, ...]], feeds: Mapping[str, np.ndarray],
         timing: bool = False) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The feeds as the program takes them - ranged inputs zero-padded to the upper bound,
    every extent filled in - and each range's size. A range none of whose inputs is fed
    (a timing-only run leaves float inputs out) runs at its upper bound."""
    ranged = {p: r for r in ranges for p in r.positions}
    for name, value in feeds.items():
        if name in upper and any((name, a) in ranged for a in range(len(upper[name]))):
            shape = np.shape(value)
            if len(shape) != len(upper[name]):
                raise RangeError(f"input '{name}' has {len(shape)} dims; the program's has {len(upper[name])}")
            for a, (d, u) in enumerate(zip(shape, upper[name])):
                if (name, a) not in ranged and d != u:
                    raise RangeError(f"input '{name}' dim {a} is {d}; the program fixes it at {u}")
    sizes: dict[str, int] = {}
    for r in ranges:
        if r.name in feeds:
            raise RangeError(f"'{r.name}' is the size of {r.describe()}: the runtime reads it off those inputs; "
                             f"do not feed it")
        seen = {np.shape(feeds[n])[a] for n, a in r.positions if n in feeds and a < np.ndim(feeds[n])}
        if len(seen) > 1:
            raise RangeError(f"{r.describe()} is one dim; the inputs give it sizes {sorted(seen)}")
        size = seen.pop() if seen else r.hi
        if not r.lo <= size <= r.hi:
            raise RangeError(f"{r.describe()} is {size}, outside the range the program was compiled for")
        sizes[r.name] = size
    out = dict(feeds)
    for name, value in feeds.items():
        widths = [(0, r.hi - np.shape(value)[a]) if (r := ranged.get((name, a))) else (0, 0)
                  for a in range(np.ndim(value))]
        if any(w for _, w in widths):
            out[name] = np.zeros(upper[name], np.asarray(value).dtype) if timing else np.pad(np.asarray(value), widths)
    for r in ranges:
        out[r.name] = np.array([sizes[r.name]], np.int64)
    return out, sizes


def crop(outputs: dict[str, np.ndarray], crops: Mapping[str, list[tuple[str, Carried]]], sizes: Mapping[str, int],
         ranges: Sequence[Range]) -> dict[str, np.ndarray]:
    """Each output holding a range cut back to the range's real rows."""
    hi = {r.name: r.hi for r in ranges}
    for name, held in crops.items():
        for extent, where in held:
            if name in outputs and sizes.get(extent, hi.get(extent)) != hi.get(extent):
                outputs[name] = where.crop(outputs[name], sizes[extent])
    return outputs
