"""Overflow detection: which kernel launch first turned finite numbers into inf / NaN.

GE's overflow detection on the device reads the cores' overflow status after each task; here
the ascend interpreter asks the same question of each kernel launch (`OverflowWatch`, hooked
into the launch both ways of running a kernel share, so the per-op interpreter and the
compiled form agree by construction):

* whether every float buffer the kernel only reads (runtime/kernel_args.py) is *in range*:
  finite and below its dtype's finite max. A kernel fed inf, NaN or saturated values only
  passes them on: the origin is upstream, so such a launch is not counted. Writable inputs
  are checked before the launch (it may overwrite them in place), read-only ones (weights)
  only after an overflow: they cannot change;
* after it, in each float buffer it writes, the elements that are inf or NaN (`overflowed`)
  and those at exactly ±max of the dtype (`saturated`: what a saturating conversion leaves,
  65504 in f16).

Each is one vectorised check (min and max) per buffer and launch, never per instruction;
only a buffer out of range is counted element by element. A launch with any overflowed or
saturated element becomes a `LaunchOverflow`; `overflow_summary` says in one line where the
first one happened and which of GE's precision modes avoids it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.ir import Operation

from geir.dialects import ascend as a
from geir.ir.locations import loc_names
from geir.ir.types import UnsupportedTypeError, to_element_type
from geir.runtime.ascend_machine import RunState
from geir.runtime.kernel_args import written_args

BF16_MAX = (2 - 2**-7) * 2.0**127
"""bfloat16's finite max (numpy's finfo does not know the ml_dtypes type)."""


@functools.cache
def float_max(dtype: np.dtype) -> float | None:
    """The largest finite value of a float dtype (f16, bf16, f32, f64); None for other dtypes."""
    if dtype.kind == "f":
        return float(np.finfo(dtype).max)
    if dtype.name == "bfloat16":
        return BF16_MAX
    return None


def dtype_name(dtype: np.dtype) -> str:
    """How reports name an element type: as the ascend ops print it ("f16", "f32", "i32"), else
    numpy's name."""
    try:
        return a.short_type_name(to_element_type(dtype))
    except UnsupportedTypeError:
        return "bf16" if dtype.name == "bfloat16" else dtype.name


def is_low_precision(dtype: np.dtype) -> bool:
    """f16 and bf16: the types GE's precision modes compute in to save time, at a loss of
    range (f16) or precision (both)."""
    return dtype.itemsize == 2 and float_max(dtype) is not None


def in_range(x: np.ndarray, limit: float) -> bool:
    """Every element finite and |x| < limit. Two reductions and no temporary array: NaN makes
    max() NaN, which compares false."""
    return x.size == 0 or bool(x.max() < limit) and bool(x.min() > -limit)


@dataclass(frozen=True)
class LaunchOverflow:
    """One launch whose outputs overflowed (inf / NaN from in-range inputs) or saturated."""

    kernel: str
    launch: int
    nodes: tuple[str, ...]  # the ONNX nodes of the kernel's location (else the launch's)
    dtype: str              # element type of the outputs counted ("f16", "bf16", "f32")
    overflowed: int
    saturated: int


@dataclass
class _Pending:
    """A launch under watch: its float outputs, and the read-only inputs (weights) still to
    check, known before it runs."""

    kernel: a.KernelOp
    site: Operation
    index: int
    outputs: list[np.ndarray]
    constants: list[np.ndarray]


class OverflowWatch:
    """Checks every launch of one run (`start` before its blocks run, `finish` after them) and
    hands each launch that overflowed or saturated to `sink`."""

    def __init__(self, sink: Callable[[LaunchOverflow], None]):
        self.sink = sink
        self._written: dict[a.KernelOp, frozenset[int]] = {}

    def written(self, run: RunState, kernel: a.KernelOp) -> frozenset[int]:
        """The arguments `kernel` writes: kept with its compiled code (checked against its body
        once a run), else found once a run here (a walk of the body costs more than the check)."""
        entry = run.kernels.get(kernel)
        if entry:
            return entry.written
        written = self._written.get(kernel)
        if written is None:
            written = self._written[kernel] = frozenset(written_args(kernel))
        return written

    def start(self, run: RunState, kernel: a.KernelOp, site: Operation, index: int,
              args: Sequence[Any]) -> _Pending | None:
        """Called before the launch's blocks run (after its body is compiled). None when the
        launch cannot be an overflow's origin: it writes no float buffer, or a float buffer it
        reads is already out of range. Read-only buffers (constants) cannot change while it
        runs: they are checked only if its outputs turn out of range (weights are most of the
        bytes a launch reads; checking them every launch would double the check's cost)."""
        written = self.written(run, kernel)
        outputs, constants = [], []
        for i, x in enumerate(args):
            if not isinstance(x, np.ndarray):
                continue
            limit = float_max(x.dtype)
            if limit is None:
                continue
            if i in written:
                outputs.append(x)
            elif not x.flags.writeable:
                constants.append(x)
            elif not in_range(x, limit):
                return None
        return _Pending(kernel, site, index, outputs, constants) if outputs else None

    def finish(self, pending: _Pending) -> None:
        out_of_range = [x for x in pending.outputs if not in_range(x, float_max(x.dtype))]
        if not out_of_range or not all(in_range(x, float_max(x.dtype)) for x in pending.constants):
            return
        overflowed = sum(x.size - int(np.count_nonzero(np.isfinite(x))) for x in out_of_range)
        saturated = sum(int(np.count_nonzero(np.abs(x) == float_max(x.dtype))) for x in out_of_range)
        kernel = pending.kernel
        nodes = tuple(dict.fromkeys(loc_names(kernel.location))) or tuple(
            dict.fromkeys(loc_names(pending.site.location)))
        self.sink(LaunchOverflow(kernel.sym_name.data, pending.index, nodes, dtype_name(out_of_range[0].dtype),
                                 overflowed, saturated))


# ---------------------------------------------------------------------------
# Per kernel, and in one line.
# ---------------------------------------------------------------------------


def by_kernel(launches: Sequence[LaunchOverflow]) -> list[dict[str, Any]]:
    """One JSON-ready entry per kernel, in the order of its first overflowing launch: `kernel`,
    `nodes`, `dtype`, `overflowed` and `saturated` (summed over its launches), `launches`."""
    entries: dict[str, dict[str, Any]] = {}
    for r in launches:
        e = entries.get(r.kernel)
        if e is None:
            e = entries[r.kernel] = {"kernel": r.kernel, "nodes": list(r.nodes), "dtype": r.dtype,
                                     "overflowed": 0, "saturated": 0, "launches": []}
        e["overflowed"] += r.overflowed
        e["saturated"] += r.saturated
        e["launches"].append(r.launch)
    return list(entries.values())


def advice(dtype: str) -> str:
    """Which precision modes avoid an overflow in `dtype`: f16's range is the narrow one; bf16
    has fp32's range, so an overflow there (or in fp32) is the model's, not the precision's."""
    if dtype == "f16":
        return ("compile with precision_mode=allow_mix_precision_bf16 (bf16 has fp32's range), "
                "must_keep_origin_dtype or force_fp32 to avoid it")
    if dtype == "bf16":
        return "bf16 has fp32's range: the model overflows in fp32 too, check its inputs and weights"
    return "no precision mode avoids it: check the model's inputs and weights"


def overflow_summary(entries: Sequence[dict[str, Any]]) -> str | None:
    """One line about the first overflowing kernel (entries as `by_kernel`), or None if none:

    overflow in f16: kernel k0_MatMul_y (node MatMul:y) produced 256 inf/NaN from finite
    inputs; compile with precision_mode=... to avoid it
    """
    if not entries:
        return None
    e = entries[0]
    nodes = e["nodes"]
    where = f" ({'node' if len(nodes) == 1 else 'nodes'} {', '.join(nodes)})" if nodes else ""
    if e["overflowed"]:
        what = f"overflow in {e['dtype']}: kernel {e['kernel']}{where} produced {e['overflowed']} inf/NaN"
        if e["saturated"]:
            what += f" and {e['saturated']} saturated values"
    else:
        what = (f"saturation in {e['dtype']}: kernel {e['kernel']}{where} produced {e['saturated']} values "
                f"at {e['dtype']}'s finite max")
    more = len(entries) - 1
    tail = f" (and {more} more kernel{'s' if more > 1 else ''})" if more else ""
    return f"{what} from finite inputs; {advice(e['dtype'])}{tail}"


__all__ = ["BF16_MAX", "LaunchOverflow", "OverflowWatch", "advice", "by_kernel", "dtype_name", "float_max",
           "in_range", "is_low_precision", "overflow_summary"]
