"""Index arithmetic and the loops of a cube kernel: K in chunks, output tiles by static size
class, distributed over the blocks.

Every tile of a static size class gets its own loop, so all shapes stay static: an edge tile
is a class of its own (`tile_grid`), and so is a remainder chunk of K (`chunks`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.ir import SSAValue

from geir.lowering.templates.common import KernelBuilder

Index = int | SSAValue
"""An index: a Python int when known (the builder folds constant index arithmetic), else an
SSA value."""


def clamp_start(kb: KernelBuilder, pos: Index, before: int, size: int, extent: int) -> Index:
    """clamp(pos - before, 0, extent - size) for pos >= 0: where a box of `size` that must
    cover [pos - before, ...) ∩ [0, extent) starts."""
    return kb.min(kb.sub(kb.max(pos, before), before), extent - size)


def chunks(kb: KernelBuilder, extent: int, step: int, slots: int,
           body: Callable[[Index, int, int, bool], None], start: int = 0) -> None:
    """body(offset, size, slot, first) over [0, extent) in chunks of `step`: the first chunk
    on its own (it initialises the accumulator), the full ones in a loop unrolled by `slots`
    (slot (start + i) % slots, so each ping-pong buffer keeps static flag ids), the
    remainder last."""
    full, rem = divmod(extent, step)
    if full == 0:
        body(0, rem, start % slots, True)
        return
    body(0, step, start % slots, True)
    rest = full - 1  # chunks 1 .. full-1
    groups, left = divmod(rest, slots)
    if groups == 1:
        for u in range(slots):
            body((1 + u) * step, step, (start + 1 + u) % slots, False)
    elif groups > 1:
        with kb.loop(step, step + groups * slots * step, slots * step) as i:
            for u in range(slots):
                body(kb.add(i, u * step), step, (start + 1 + u) % slots, False)
    for u in range(left):
        j = 1 + groups * slots + u
        body(j * step, step, (start + j) % slots, False)
    if rem:
        body(full * step, rem, (start + full) % slots, False)


def first_step_slot(chunk_slot: int, steps: int, slots: int) -> int:
    """The l0 slot of the first step of the chunk in l1 slot `chunk_slot` when the l0 ping-pong
    runs on across the chunks of `steps` steps each (chunk c, in slot c % slots, starts at step
    c * steps): with an odd count, restarting at slot 0 would make a chunk's first copy into
    l0 wait for the cube to finish the step before it, which used the same slot."""
    return chunk_slot * steps % slots


@dataclass(frozen=True)
class TileDim:
    """A dim of `extent` in tiles of `tile`, its first at `start` (a kernel of the rows or
    columns [start, start + extent) of a larger result: tiling.l2_pieces)."""

    extent: int
    tile: int
    start: int = 0


Class = (tuple[Sequence[int], Callable[[list[Index]], None]]
         | tuple[Sequence[int], Callable[[list[Index]], None], Index]
         | tuple[Sequence[int], Callable[[list[Index]], None], Index, Callable[[Index], Index]])
"""(grid counts, body) of a class of tiles; a third item: how many of its tiles run (at run time,
those holding a shape range's real rows: the first ones, the limited dim being outermost); a
fourth: which tile of the grid the i-th of those is (the real rows are the first of each group)."""

Real = tuple[int, Index | None] | tuple[int, Index | None, int]
"""The tiles of a grid that hold a shape range's real rows: (d, rows) - the first `rows` of grid
dim d, every dim before d having one tile - or (d, rows, split) - the first `rows` of each
group, a group being one tile of the dims before d and one of `split` equal parts of dim d."""


def distribute(kb: KernelBuilder, blocks: int, classes: Sequence[Class]) -> None:
    """Run `body(index)` for every multi-index of each class's grid `counts`, the item t of the
    whole sequence on block t % blocks: a loop per class, its lower bound shifted by the
    class's position in the sequence so the blocks stay balanced."""
    base = 0
    for counts, body, *limit in classes:
        count = math.prod(counts)
        if count == 0:
            continue
        run = limit[0] if limit else count
        remap = limit[1] if len(limit) > 1 else None  # the i-th tile that runs is tile remap(i)

        def index(i: Index, counts=counts, remap=remap) -> list[Index]:
            if remap is not None:
                i = remap(i)
            live = [c for c in counts if c > 1]
            parts = iter(kb.delinearize(i, live) if len(live) > 1 else [i] * len(live))
            return [next(parts) if c > 1 else 0 for c in counts]

        if blocks == 1 and count == 1 and not limit:
            body(index(0))
        elif blocks == 1:
            with kb.loop(0, run, 1) as i:
                body(index(i))
        else:
            shift = (blocks - base % blocks) % blocks
            start = kb.remui(kb.add(kb.block_idx(), shift), blocks) if shift else kb.block_idx()
            with kb.loop(start, run, blocks) as i:
                body(index(i))
        base += count


def tile_grid(kb: KernelBuilder, dims: Sequence[TileDim], blocks: int,
              body: Callable[[list[Index], list[int]], None], real: Real | None = None) -> None:
    """body(offsets, sizes) for every tile of the grid `dims`, grouped by static size class
    (full tiles / the remainder, per dim), distributed over the blocks; `real`: see grid_classes."""
    distribute(kb, blocks, grid_classes(kb, dims, body, real))


def grid_classes(kb: KernelBuilder, dims: Sequence[TileDim], body: Callable[[list[Index], list[int]], None],
                 real: Real | None = None) -> list[Class]:
    """The static size classes of the grid `dims` as `distribute` takes them (several grids'
    classes may share one distribution: a kernel of several products). `real`: only the tiles
    holding a shape range's real rows run (see Real; `rows` a run-time value from
    KernelBuilder.real_rows or real_groups). Every tile runs when the groups are not whole
    tiles of dim d."""
    if real is not None and len(real) == 3:
        return _grouped_classes(kb, dims, body, *real)
    if real is not None and (real[1] is None or any(x.extent > x.tile for x in dims[:real[0]])):
        real = None
    per_dim = []
    for d in dims:
        full, rem = divmod(d.extent, d.tile)
        opts = []
        if full:
            opts.append((full, d.tile, d.start))
        if rem:
            opts.append((1, rem, d.start + full * d.tile))
        per_dim.append(opts)
    classes: list[Class] = []
    for cls in itertools.product(*per_dim):
        def run(idx: list[Index], cls=cls) -> None:
            body([kb.add(off, kb.mul(j, d.tile)) for j, d, (_, _, off) in zip(idx, dims, cls)],
                 [size for _, size, _ in cls])

        counts = [c for c, _, _ in cls]
        if real is None:
            classes.append((counts, run))
            continue
        d, rows = real
        c, size, off = cls[d]
        runs = kb.mul(kb.limited(c, size, off, rows), math.prod(counts[d + 1:]))
        classes.append((counts, run, runs))
    return classes


def _grouped_classes(kb: KernelBuilder, dims: Sequence[TileDim], body: Callable[[list[Index], list[int]], None],
                     d: int, rows: Index | None, split: int) -> list[Class]:
    """The grid's classes when its real rows are the first `rows` of each group (Real): in a
    class, the i-th tile that runs is the j-th of group g, j < the group's real tiles; tiles
    are numbered group-major, so its index in the class's grid is g * (its tiles per group)
    + j, with the dims after d inside."""
    dim = dims[d]
    group = dim.extent // split if split > 0 and dim.extent % split == 0 else 0
    if rows is None or not group or group % dim.tile or dim.start % group or any(x.tile > 1 for x in dims[:d]):
        return grid_classes(kb, dims, body)  # a tile across two groups: every tile runs
    per_group = group // dim.tile
    groups = math.prod(x.extent for x in dims[:d]) * split
    real = kb.limited(per_group, dim.tile, 0, rows)  # the tiles of a group that hold real rows
    classes: list[Class] = []
    for counts, run in grid_classes(kb, dims, body):  # dim d has whole tiles: classes of the dims after it
        inner = math.prod(counts[d + 1:])
        live = kb.mul(real, inner)

        def remap(i: Index, live=live, inner=inner) -> Index:
            return kb.group_major(i, live, per_group * inner)

        classes.append((counts, run, kb.mul(live, groups), remap))
    return classes
