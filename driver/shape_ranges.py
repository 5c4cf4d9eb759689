"""A model compiled for every size in a range of its dynamic dims (ATC's `input_shape` with
`lo~hi`): one program, run at any size in the range.

    cm = geir.compile("model.onnx", input_shape="x:1~8,3,224,224")
    cm.run({"x": x})              # x's batch anywhere in 1..8
    cm.profile({"x": x})          # timed at x's own batch

The program is compiled at each range's upper bound, so its memory plan holds the largest
size (GE's upper-bound estimate). Each range is one dim of the model - positions that share
a `dim_param` in the ONNX model (x's and mask's `batch`) are one - and it gets one more graph
argument, its extent (a `tensor<1xi64>` marked `geir.extent` with the positions it sizes). The
lowering follows that dim through the graph (passes/graph/padded_dims.py), and every kernel
whose outputs hold it row by row takes the extent and runs only the tiles of the real rows:
its tile loops' trip counts are computed at run time, so the modeled time is the actual
size's. At run time the inputs are zero-padded to the upper bound (the rows no kernel reads
for a real row), the extent is filled in, and the outputs are cropped to the real rows.

A range is compiled only if no op lets a real row see another row of its dim - the same proof
as pad-to-gear's (driver/gear_padding.py). A dim that some op mixes (a sequence dim under a
softmax over keys) is refused, naming the op and why: give its sizes as gears instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, IntegerAttr, ModuleOp, StringAttr, TensorType, i64

from geir.dialects import attr_names
from geir.driver.dynamic_shapes import ShapePlan, format_input_shape
from geir.driver.gear_padding import Carried
from geir.errors import GeirError


@dataclass(frozen=True)
class RangeDim:
    """One dynamic dim of the model: its (input, axis) positions and its range."""

    positions: tuple[tuple[str, int], ...]
    lo: int
    hi: int
    symbol: str
    """The model's dim_param, else `input_axis`: names the extent argument."""

    @property
    def extent_name(self) -> str:
        return f"{self.symbol}.extent"

    def describe(self) -> str:
        return f"{' and '.join(f'{n} dim {a}' for n, a in self.positions)} ({self.symbol}: {self.lo}~{self.hi})"


def range_dims(plan: ShapePlan, dim_params: Mapping[str, list[str | None]]) -> list[RangeDim]:
    """The plan's ranged positions as dims: those sharing a dim_param are one dim (their
    ranges must agree), any other is a dim of its own."""
    groups: dict[str, list[tuple[str, int, tuple[int, int]]]] = {}
    for name, axes in plan.ranges.items():
        params = dim_params.get(name) or []
        for axis, rng in axes.items():
            symbol = params[axis] if axis < len(params) and params[axis] else f"{name}_{axis}"
            groups.setdefault(symbol, []).append((name, axis, rng))
    dims = []
    for symbol, members in groups.items():
        ranges = {rng for _, _, rng in members}
        if len(ranges) > 1:
            listed = ", ".join(f"{n} dim {a} {lo}~{hi}" for n, a, (lo, hi) in members)
            raise GeirError(f"input_shape gives the model's dim '{symbol}' different ranges: {listed}")
        (lo, hi), = ranges
        dims.append(RangeDim(tuple((n, a) for n, a, _ in members), lo, hi, symbol))
    return dims


def onnx_dim_params(model: Any) -> dict[str, list[str | None]]:
    """Per graph input of an ONNX model (a path, bytes or ModelProto), the dim_param of each
    dim (None: a fixed or unnamed dim); {} for anything else."""
    import onnx

    try:
        if isinstance(model, onnx.ModelProto):
            proto = model
        elif isinstance(model, bytes):
            proto = onnx.load_from_string(model)
        else:
            proto = onnx.load(str(model), load_external_data=False)
    except Exception:  # noqa: BLE001 - the importer reports a bad model with its own message
        return {}
    inits = {t.name for t in proto.graph.initializer}
    return {vi.name: [d.dim_param or None for d in vi.type.tensor_type.shape.dim]
            for vi in proto.graph.input if vi.name not in inits}


def add_extent_args(module: ModuleOp, dims: list[RangeDim]) -> ModuleOp:
    """One more argument of the main function per dim: its run-time size, a tensor<1xi64>
    named `<symbol>.extent`, marked with the positions it sizes (attr_names.EXTENT)."""
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp) and not op.is_declaration)
    block = fn.body.block
    attrs = list(fn.arg_attrs.data) if fn.arg_attrs is not None else [DictionaryAttr({}) for _ in block.args]
    for dim in dims:
        arg = block.insert_arg(TensorType(i64, [1]), len(block.args))
        arg.name_hint = dim.symbol.replace(".", "_")
        attrs.append(DictionaryAttr({
            attr_names.ONNX_NAME: StringAttr(dim.extent_name),
            attr_names.EXTENT: ArrayAttr([ArrayAttr([StringAttr(n), IntegerAttr(a, i64)]) for n, a in dim.positions]),
            attr_names.RANGE: ArrayAttr([IntegerAttr(dim.lo, i64), IntegerAttr(dim.hi, i64)]),
        }))
    fn.function_type = FunctionType.from_lists(list(block.arg_types), list(fn.function_type.outputs.data))
    fn.arg_attrs = ArrayAttr(attrs)
    return module


def mark_crops(module: ModuleOp, dims: list[RangeDim], crops: dict[RangeDim, dict[str, Carried | None]]) -> None:
    """Write on each output of the lowered program where it holds each range's dim
    (attr_names.EXTENT_ROWS): the runtime crops it to the real rows."""
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp) and not op.is_declaration)
    attrs = list(fn.arg_attrs.data)
    for i, d in enumerate(attrs):
        name = d.data.get(attr_names.ONNX_NAME)
        if attr_names.OUTPUT not in d.data or name is None:
            continue
        rows = [ArrayAttr([StringAttr(dim.extent_name), *(IntegerAttr(x, i64) for x in (c.axis, c.inner, c.outer))])
                for dim in dims if (c := crops[dim].get(name.data)) is not None]
        if rows:
            attrs[i] = DictionaryAttr({**d.data, attr_names.EXTENT_ROWS: ArrayAttr(rows)})
    fn.arg_attrs = ArrayAttr(attrs)


class RangeModel:
    """One program for every size in its dims' ranges (see the module docstring); it runs as
    any CompiledModel does, the runtime padding the inputs and cropping the outputs
    (runtime/shape_ranges.py)."""

    def __init__(self, program: Any, dims: list[RangeDim]):
        self.program = program
        self.dims = dims

    def __getattr__(self, name: str):  # module, options, stages, report, mlir, memory ... as the program's
        if name in ("program", "dims"):  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.program, name)

    def _extents(self) -> set[str]:
        return {d.extent_name for d in self.dims}

    def input_specs(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        """Every input's shape, -1 at a ranged dim (the extents are the runtime's)."""
        ranged = {p for d in self.dims for p in d.positions}
        return [(n, tuple(-1 if (n, i) in ranged else s for i, s in enumerate(shape)), dt)
                for n, shape, dt in self.program.input_specs() if n not in self._extents()]

    def ranges(self) -> str:
        """input_shape's text for the inputs, ranges as lo~hi."""
        rng = {p: d for d in self.dims for p in d.positions}
        return format_input_shape({n: [(rng[n, i].lo, rng[n, i].hi) if (n, i) in rng else s for i, s in enumerate(shape)]
                                   for n, shape, _ in self.program.input_specs() if n not in self._extents()})

    def random_inputs(self, seed: int = 0, *, floats: bool = True, sizes: Mapping[str, int] | None = None
                      ) -> dict[str, np.ndarray]:
        """Seeded random inputs with each dim at `sizes[symbol]` (default: its upper bound)."""
        feeds = self.program.random_inputs(seed, floats=floats)
        for dim in self.dims:
            size = (sizes or {}).get(dim.symbol, dim.hi)
            for n, a in dim.positions:
                if n in feeds:
                    feeds[n] = np.take(feeds[n], np.arange(size), axis=a)
        return feeds

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self.program.run(feeds)

    def profile(self, feeds: Mapping[str, np.ndarray] | None = None, *, mode: str = "full"):
        """(outputs, report) at the inputs' sizes (without inputs: every dim at its upper
        bound, seeded random inputs); the report's `shape_range` says the sizes."""
        feeds = self.random_inputs() if feeds is None else feeds
        outputs, report = self.program.profile(feeds, mode=mode)
        shapes = {n: np.shape(v) for n, v in feeds.items()}
        report["shape_range"] = {
            d.symbol: {"size": next((shapes[n][a] for n, a in d.positions if n in shapes), d.hi), "range": [d.lo, d.hi]}
            for d in self.dims}
        return outputs, report
