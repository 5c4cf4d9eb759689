"""Which dynamic dims a geared model may pad (driver/gears.py, `pad_to_gear=True`).

An input whose dynamic dim is smaller than every gear's can run on a larger gear with zero
rows appended, its outputs cropped back - exactly, if no op lets a real row see a padded
one. `padding_plan` proves that on the graph-level module, dim by dim, with the analysis of
passes/graph/padded_dims.py (which also decides which kernels of a shape-range program
compute only the real rows), and fails naming the first op that mixes rows along the dim.
Each output then says along which axis, and by which factor, to crop.

A dim is a group of -1 positions that have the same size in every gear (x's and mask's batch).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from geir.passes.graph.padded_dims import Carried, PaddingError, carry

__all__ = ["Carried", "PaddingError", "Dim", "dims_of", "padding_plan"]

Dim = tuple[tuple[str, int], ...]
"""A padded dim: its (input name, axis) positions."""


def dims_of(gears, dynamic: dict[str, tuple[int, ...]]) -> list[Dim]:
    """The -1 positions grouped by equal size in every gear."""
    groups: dict[tuple[int, ...], list[tuple[str, int]]] = {}
    for name, axes in dynamic.items():
        for axis in axes:
            groups.setdefault(tuple(gear[name][axis] for gear in gears), []).append((name, axis))
    return [tuple(v) for v in groups.values()]


def padding_plan(module: ModuleOp, input_names: list[str], output_names: list[str], dims: list[Dim],
                 masked_keys: bool = False) -> tuple[dict[Dim, dict[str, Carried | None]], dict[Dim, str]]:
    """Per dim that pads exactly, per output: where it carries the dim (None: it does not hold
    it); and per dim that does not, why (the op that mixes its rows). `masked_keys`: an
    attention's padded keys count as exact, its kernel masking them with the run-time size
    (a shape range's; a gear has none)."""
    main = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    block = main.body.blocks[0]
    ret = block.last_op
    plan, refused = {}, {}
    for dim in dims:
        seeds = {block.args[input_names.index(name)]: Carried(axis) for name, axis in dim}
        try:
            where = carry(block, seeds, [] if masked_keys else None)
        except PaddingError as e:
            positions = ", ".join(f"{n} dim {a}" for n, a in dim)
            refused[dim] = f"padding {positions} is not exact: {e}"
            continue
        plan[dim] = {n: where.get(v) for n, v in zip(output_names, ret.operands)}
    return plan, refused
