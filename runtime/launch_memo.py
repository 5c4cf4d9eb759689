"""Memoised launches of a timing-only run: a kernel launched again with the same signature
is not run again; its trace is the first launch's, moved to where its arguments are.

A 40-layer decoder launches each of some twenty kernels 40 times; the layers' kernels are
distinct ops with equal bodies. A timing-only run (nothing computed) records the same events
for two launches when everything the events depend on is equal:

* the kernel body's structure - ops, operand wiring, properties, attributes, types
  (`body_key`; the kernel's name and location are not part of it);
* the block count, and per argument its type, shape, strides and dtype (a scalar argument:
  its value);
* how the arguments overlap each other (two arguments over the same bytes at the same
  relative offset: an in-place update is not a copy);
* the contents of small integer arguments (a KV-cache position, token ids: a kernel may read
  them into addresses or trip counts).

The second launch then reports one host event naming the first (`replays`) and, for each of
the first launch's gm arguments, where its bytes now are (`moves`): the simulator reuses the
first launch's block timings and moves its gm footprint (runtime/simulator.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.ir import Block, SSAValue

from geir.dialects import ascend as a
from geir.runtime.ascend_machine import address, byte_extent

_BODY_ATTR = "_geir_body_key"
SMALL_INTEGERS = 64
"""Integer arguments of at most this many elements are part of the signature by value."""


def body_key(kernel: a.KernelOp) -> tuple:
    """The body's structure; kernels with equal keys have equal bodies up to renaming
    (cached on the op with the body's ops it was computed from)."""
    ops = tuple(kernel.body.walk())
    cached = getattr(kernel, _BODY_ATTR, None)
    if cached is not None and cached[0] == ops:
        return cached[1]
    number: dict[SSAValue, int] = {}
    parts: list[Any] = []

    def block(b: Block) -> None:
        parts.append(("block", tuple(arg.type for arg in b.args)))
        for arg in b.args:
            number[arg] = len(number)
        for op in b.ops:
            parts.append((op.name, tuple(number.get(v, -1) for v in op.operands),
                          tuple(sorted(op.properties.items())), tuple(sorted(op.attributes.items())),
                          tuple(r.type for r in op.results), len(op.regions)))
            for r in op.results:
                number[r] = len(number)
            for region in op.regions:
                for inner in region.blocks:
                    block(inner)
                parts.append("end")

    for b in kernel.body.blocks:
        block(b)
    key = tuple(parts)
    setattr(kernel, _BODY_ATTR, (ops, key))
    return key


def launch_key(kernel: a.KernelOp, args: Sequence[Any]) -> tuple:
    """The signature of one launch: equal keys record equal events (module docstring)."""
    shapes: list[Any] = []
    spans: list[tuple[int, int, int] | None] = []
    for i, x in enumerate(args):
        if isinstance(x, np.ndarray):
            shapes.append((x.shape, x.strides, x.dtype.str))
            if x.dtype.kind in "iu" and x.size <= SMALL_INTEGERS:
                shapes.append(x.tobytes())
            spans.append((*byte_extent(x), address(x)) if x.size else None)
        else:
            shapes.append(("scalar", getattr(getattr(x, "value", None), "data", x)))
            spans.append(None)
    overlaps = []
    for i, p in enumerate(spans):
        for j in range(i + 1, len(spans)):
            q = spans[j]
            if p is not None and q is not None and p[0] < q[1] and q[0] < p[1]:
                overlaps.append((i, j, q[2] - p[2]))
    return body_key(kernel), kernel.block_count, tuple(shapes), tuple(overlaps)


def arg_extents(args: Sequence[Any]) -> tuple[tuple[int, int] | None, ...]:
    """[lo, hi) of each array argument (None for scalars and empty arrays)."""
    return tuple(byte_extent(x) if isinstance(x, np.ndarray) and x.size else None for x in args)


def moves(first: Sequence[tuple[int, int] | None], now: Sequence[tuple[int, int] | None]) -> tuple:
    """(lo, hi, new lo) of each argument of the first launch: where its bytes are now."""
    return tuple((f[0], f[1], n[0]) for f, n in zip(first, now) if f is not None and n is not None)
