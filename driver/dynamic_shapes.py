"""ATC's dynamic-shape options, parsed and checked: which static shapes to compile.

    input_shape="x:-1,3,224,224;mask:1,-1"     a shape per named input; -1 a dynamic dim
    dynamic_batch_size="1,2,4,8"               gears: each -1 (a batch dim) takes one value
    dynamic_image_size="224,224;448,448"       gears: the two -1 dims (H, W) take one pair
    dynamic_dims="1,16;2,32"                   gears: all -1 dims, in input_shape's order

`plan_shapes` turns them into a list of gears, each a dict input name -> static shape; an
input_shape without -1 is one static shape for the model's dynamic dims (one "gear", no
gear options). The rules are ATC's: the three gear options are mutually exclusive, each
needs input_shape with a -1, 2 to 100 gears, every gear giving every -1 a positive size.
A range (`x:1~8,3,224,224`) without a gear option asks for one program for every size in it
(shape ranges, driver/shape_ranges.py): compiled at the upper bound, memory planned for it, its
kernels told the real size at run time. A -1 without a gear option has no upper bound to plan
memory for: that is an error asking for a range.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from geir.errors import GeirError

GEAR_OPTIONS = ("dynamic_batch_size", "dynamic_image_size", "dynamic_dims")
MIN_GEARS, MAX_GEARS = 2, 100
"""ATC's limits on the number of gears."""
DYNAMIC = -1


class ShapeOptionError(GeirError):
    """A dynamic-shape option that is malformed or contradicts another."""


Shapes = dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class ShapePlan:
    """What to compile: one static program per gear (a single entry: a static input_shape)."""

    gears: tuple[Shapes, ...]
    option: str | None
    """The gear option the gears came from (None: a static input_shape)."""
    dynamic: dict[str, tuple[int, ...]]
    """Per input, the positions of its -1 dims (the dims a gear sets)."""
    ranges: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)
    """Per input, its ranged dims: axis -> (lo, hi). The one gear is then every range's hi."""

    @property
    def geared(self) -> bool:
        return self.option is not None

    @property
    def ranged(self) -> bool:
        return bool(self.ranges)


def parse_input_shape(text: str) -> dict[str, list[int | tuple[int, int]]]:
    """`"x:-1,3,224,224;mask:1,-1"` -> {name: dims}; a dim is a size, -1 or a range (lo, hi)
    from `lo~hi`. A name may itself hold ':' (the last one separates the dims)."""
    shapes: dict[str, list[int | tuple[int, int]]] = {}
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        name, sep, dims = part.rpartition(":")
        if not sep or not name:
            raise ShapeOptionError(f"input_shape '{part}': expected NAME:D,D,... (e.g. x:-1,3,224,224)")
        if name in shapes:
            raise ShapeOptionError(f"input_shape names '{name}' twice")
        parsed: list[int | tuple[int, int]] = []
        for d in (d.strip() for d in dims.split(",")) if dims.strip() else ():
            parsed.append(_dim(d, name))
        shapes[name] = parsed
    if not shapes:
        raise ShapeOptionError("input_shape is empty: expected NAME:D,D,...[;NAME:D,...]")
    return shapes


def format_input_shape(shapes: Mapping[str, Sequence[int | tuple[int, int]]]) -> str:
    """`parse_input_shape`'s inverse: {name: dims} -> `"x:1~8,3,224,224;mask:1,-1"`."""
    return ";".join(f"{name}:" + ",".join(f"{d[0]}~{d[1]}" if isinstance(d, tuple) else str(d) for d in dims)
                    for name, dims in shapes.items())


def _dim(text: str, name: str) -> int | tuple[int, int]:
    lo, sep, hi = text.partition("~")
    try:
        if sep:
            rng = (int(lo), int(hi))
            if not 0 <= rng[0] <= rng[1]:
                raise ValueError
            return rng
        value = int(text)
    except ValueError:
        raise ShapeOptionError(f"input_shape '{name}': '{text}' is not a size, -1 or a range lo~hi "
                               f"(0 <= lo <= hi)") from None
    if value < DYNAMIC:
        raise ShapeOptionError(f"input_shape '{name}': '{text}' is not a size, -1 or a range lo~hi")
    return value


def _gear_list(option: str, text: str, arity: int | None) -> list[tuple[int, ...]]:
    """The gears of a gear option: `"1,2,4"` (batch: one value per gear) or `"a,b;c,d"`."""
    sep = "," if option == "dynamic_batch_size" else ";"
    gears = []
    for part in (p.strip() for p in str(text).split(sep)):
        if not part:
            continue
        try:
            values = tuple(int(v) for v in part.split(",")) if sep == ";" else (int(part),)
        except ValueError:
            raise ShapeOptionError(f"{option} '{text}': '{part}' is not a list of sizes") from None
        if any(v < 1 for v in values):
            raise ShapeOptionError(f"{option} '{text}': gear '{part}' has a size below 1")
        if arity is not None and len(values) != arity:
            raise ShapeOptionError(f"{option}: gear '{part}' gives {len(values)} size(s); input_shape has "
                                   f"{arity} dynamic dim(s) (-1) for it to set")
        gears.append(values)
    if not MIN_GEARS <= len(gears) <= MAX_GEARS:
        raise ShapeOptionError(f"{option} lists {len(gears)} gear(s); give {MIN_GEARS} to {MAX_GEARS}")
    if len(set(gears)) != len(gears):
        raise ShapeOptionError(f"{option} '{text}' lists a gear twice")
    return gears


def plan_shapes(input_shape: str | None = None, dynamic_batch_size: str | None = None,
                dynamic_image_size: str | None = None, dynamic_dims: str | None = None) -> ShapePlan | None:
    """The shapes to compile, or None when no option is given (the model's own shapes)."""
    given = {k: v for k, v in (("dynamic_batch_size", dynamic_batch_size), ("dynamic_image_size", dynamic_image_size),
                               ("dynamic_dims", dynamic_dims)) if v not in (None, "")}
    if len(given) > 1:
        raise ShapeOptionError(f"{' and '.join(given)} are mutually exclusive: give one gear option")
    if not input_shape:
        if given:
            raise ShapeOptionError(f"{next(iter(given))} needs input_shape with -1 for the dims the gears set "
                                   f"(e.g. input_shape=\"x:-1,3,224,224\")")
        return None
    shapes = parse_input_shape(input_shape)
    dynamic = {n: tuple(i for i, d in enumerate(dims) if d == DYNAMIC) for n, dims in shapes.items()}
    dynamic = {n: pos for n, pos in dynamic.items() if pos}
    ranged = [n for n, dims in shapes.items() if any(isinstance(d, tuple) for d in dims)]
    if not given:
        if dynamic:
            name = next(iter(dynamic))
            raise ShapeOptionError(
                f"input_shape gives '{name}' a -1 and no gear option: give the dim a range lo~hi (its upper bound "
                f"sizes the memory plan), or list its sizes as gears (dynamic_batch_size, dynamic_image_size or "
                f"dynamic_dims)")
        ranges = {n: {i: d for i, d in enumerate(dims) if isinstance(d, tuple)} for n, dims in shapes.items()}
        ranges = {n: r for n, r in ranges.items() if r}
        for n, r in ranges.items():
            for i, (lo, hi) in r.items():
                if lo < 1:
                    raise ShapeOptionError(f"input_shape '{n}': range {lo}~{hi} of dim {i} starts below 1")
        upper = {n: tuple(d[1] if isinstance(d, tuple) else d for d in dims) for n, dims in shapes.items()}
        return ShapePlan((_static(upper),), None, {}, ranges)
    option, text = next(iter(given.items()))
    if ranged:
        raise ShapeOptionError(f"input_shape gives '{ranged[0]}' a range; with {option} its dynamic dims are -1")
    if not dynamic:
        raise ShapeOptionError(f"{option} needs input_shape with -1 for the dims the gears set; '{input_shape}' "
                               f"has none")
    if option == "dynamic_batch_size":
        for n, pos in dynamic.items():
            if pos != (0,):
                raise ShapeOptionError(f"dynamic_batch_size sets the batch: input_shape's -1 must be the first dim "
                                       f"of '{n}', and its only one")
        arity = 1
    elif option == "dynamic_image_size":
        for n, pos in dynamic.items():
            if len(pos) != 2:
                raise ShapeOptionError(f"dynamic_image_size sets height and width: input_shape must give '{n}' "
                                       f"two -1 dims, not {len(pos)}")
        arity = 2
    else:
        arity = sum(len(pos) for pos in dynamic.values())
    gears = []
    for values in _gear_list(option, text, arity):
        gear = {}
        at = 0
        for n, dims in shapes.items():
            dims = list(dims)
            for i in dynamic.get(n, ()):
                dims[i] = values[at if option == "dynamic_dims" else dynamic[n].index(i)]
                at += 1
            gear[n] = tuple(dims)
        gears.append(gear)
    return ShapePlan(tuple(gears), option, dynamic)


def _static(shapes: dict[str, list]) -> Shapes:
    return {n: tuple(int(d) for d in dims) for n, dims in shapes.items()}


def describe(gear: Shapes) -> str:
    """`x:8,3,224,224;mask:8,128`: a gear as input_shape writes it."""
    return ";".join(f"{n}:{','.join(str(d) for d in s)}" for n, s in gear.items())
