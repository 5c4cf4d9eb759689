"""Differential fuzzing of the ascend level: random valid programs, checked by every oracle.

`generate(seed)` builds a module of one to three `ascend.kernel`s and a host `@main` that
launches them in a chain (sometimes a fork), intermediates in gm workspace buffers, on one
stream or two, with the lowering's own builder (`KernelBuilder`):

* **vector kernels**: per block a tile loop (`scf.for`, or unrolled; a partial last round of
  double buffering under `scf.if`) over rows of gm tensors; each tile is loaded into ub
  (MTE2), run through a random chain of vector ops (V) and sometimes a scalar step (S),
  stored (MTE3); single or double buffered; sometimes a second phase after
  `pipe_barrier ALL` computing a second output, starting with a `vdup` prologue;
* **cube kernels**: a matmul per output tile, K in steps: gm -> l1 (MTE2) -> l0a / l0b
  (MTE1) -> mmad (M) -> l0c -> gm (FIX), with l1 and l0 single or double buffered and l1
  holding one K step or the whole K row.

Every cross-pipe dependency - each read after a write and each reuse of a buffer (write
after read) - gets its own flag (src, dst, id), and every producer -> consumer pair across
streams an event unless one orders it already, so the programs are race-free by
construction; `FlagGuard` records what each flag guards. The oracles (`check`):

1. the interpreter's outputs equal a numpy evaluation of the generated semantics (`Program.
   expected`; exact unless an inexact op such as vexp ran, see `Program.rtol`);
2. after `ascend-plan-memory`, `check_memory_plan` accepts the plan, and the simulator
   finds no race and keeps `time_us >= lower_bound_us` for every kernel;
3. mutations are caught: removing the set_flag / wait_flag ops of any one guarding flag
   makes the simulator report a race in that kernel (every flag, except those that guard
   no reuse - `FlagGuard.redundant` says why); removing an event is a stream race; giving
   two buffers that are live together one offset (gm, and on chip) makes the checker raise;
   removing a barrier the plan relies on races and makes the checker raise; and a random
   aliasing of two buffers is rejected by the checker or shown safe by a run.

`run_campaign(n, seed)` runs n programs and returns the counts (docs/fuzzing-ascend.md).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    UnknownLoc,
    f16,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.lowering.templates.common import KernelBuilder
from geir.passes.ascend.check_memory import KernelFlow, MemoryPlanError, check_memory_plan
from geir.passes.ascend.plan_memory import PlanMemory
from geir.runtime.ascend_interpreter import run_ascend_module
from geir.runtime.simulator import Recorder, StreamRaceError, simulate
from geir.target.device import DEFAULT_DEVICE, DeviceSpec, load_device

i32 = IntegerType(32)
ELEMENT_TYPES: dict[str, Attribute] = {"f32": f32, "f16": f16, "i32": i32}
DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32}
FLOAT_RTOL = {"f32": 1e-5, "f16": 2e-3}
"""Relative tolerance of a float output once an inexact op (vexp) has run: the model and the
interpreter may round transcendentals (and sums of their results) differently."""


# ---------------------------------------------------------------------------
# What a program is.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FlagGuard:
    """One flag of one kernel and the dependency it orders. `redundant` is why removing it
    cannot race (the buffer it guards is never reused in a block), or None."""

    kernel: str
    key: tuple[str, str, int]
    guards: str
    redundant: str | None = None


@dataclass
class Program:
    seed: int
    module: ModuleOp
    feeds: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    rtol: dict[str, float]                       # per output; 0: exact
    guards: list[FlagGuard]
    phases: list[Phases]                         # two-phase kernels (their pipe_barrier ALL)
    live_chip: list[tuple[str, str, str]]        # (kernel, buffer, buffer) live at one op
    live_gm: list[tuple[str, str]]               # gm buffers live at one launch
    launches: list[tuple[str, list[str], list[str]]]  # (kernel, inputs, outputs) in host order
    events: list[tuple[int, str, str]]          # (event id, producer, consumer) on two streams
    values: dict[str, np.ndarray]                # the model's value of every host tensor
    kinds: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Phases:
    """The ub buffers of a two-phase vector kernel, by name. Phase 0 ends by draining
    MTE3 -> MTE2, so without the barrier between the phases only phase 1's prologue (V,
    before any flag) is unordered after phase 0: it races phase 0's stores (MTE3 reading
    `stored`) if the plan lets them share bytes."""

    kernel: str
    first: tuple[str, ...]
    second: tuple[str, ...]
    stored: tuple[str, ...]
    prologue: str | None


@dataclass
class _Request:
    """What KernelBuilder reads of the lowering's KernelRequest."""

    name: str
    arg_types: list[MemRefType]
    inputs: list
    outputs: list
    device: DeviceSpec
    location: Attribute


def _builder(name: str, ins: Sequence[MemRefType], outs: Sequence[MemRefType], names: Sequence[str],
             core: str, block_dim: int, device: DeviceSpec) -> KernelBuilder:
    req = _Request(name, [*ins, *outs], [None] * len(ins), [None] * len(outs), device, UnknownLoc())
    return KernelBuilder(req, core, block_dim, arg_names=list(names))


def _gm(shape: Sequence[int], dt: str) -> MemRefType:
    return a.memref_type(list(shape), ELEMENT_TYPES[dt], "gm")


# ---------------------------------------------------------------------------
# Vector kernels.
# ---------------------------------------------------------------------------

BINARY = {"vadd": (a.VaddOp, np.add), "vsub": (a.VsubOp, np.subtract), "vmul": (a.VmulOp, np.multiply),
          "vmax": (a.VmaxOp, np.maximum), "vmin": (a.VminOp, np.minimum)}
WITH_SCALAR = {"vadds": (a.VaddsOp, np.add), "vmuls": (a.VmulsOp, np.multiply),
               "vmaxs": (a.VmaxsOp, np.maximum), "vmins": (a.VminsOp, np.minimum)}
UNARY = {"vabs": (a.VabsOp, np.abs), "vneg": (a.VnegOp, np.negative),
         "vrelu": (a.VreluOp, lambda x: np.maximum(x, np.zeros((), x.dtype))),
         "vcopy": (a.VcopyOp, np.copy), "vexp": (a.VexpOp, np.exp)}
INEXACT = frozenset({"vexp"})


@dataclass(frozen=True)
class VOp:
    """One step of a tile body: `kind` of the values at `args` (indices into the tile's
    values: the loaded inputs first, then each step's result), with a scalar."""

    kind: str            # a BINARY / WITH_SCALAR / UNARY name, "dup" (vdup + binary), "colreduce"
    args: tuple[int, ...]
    scalar: int = 0
    sub: str = ""        # dup: the binary op; colreduce: one of ascend.REDUCE_KINDS


@dataclass
class VectorSpec:
    dtype: str
    rows: int
    cols: int
    tile_rows: int
    tiles_per_block: int
    block_dim: int
    slots: int
    loop: bool
    n_inputs: int
    phases: list[list[VOp]]          # one body per phase (phase k writes output k)
    prologue: int | None = None      # phase 2 starts with a vdup of this scalar into a buffer
    poke: bool = False               # a scalar step: each tile's out[0, 1] = out[0, 0] (memref.load/store)


def random_body(rng: random.Random, dtype: str, n_inputs: int, n_ops: int, const: bool = False) -> list[VOp]:
    """A chain of vector ops reading every loaded input (so each MTE2 -> V flag guards a read),
    each step reading earlier values (mostly the latest). `const`: value n_inputs is the
    prologue's constant buffer, read by the first step."""
    body: list[VOp] = []
    unary = [k for k in UNARY if dtype != "i32" or k != "vexp"]
    n = n_inputs + (1 if const else 0)
    if n >= 2:
        body.append(VOp(rng.choice(list(BINARY)), (0, n - 1)))
        if n == 3:
            body.append(VOp(rng.choice(list(BINARY)), (n, 1)))
    for _ in range(n_ops - len(body)):
        last = n + len(body) - 1
        pick = lambda: last if rng.random() < 0.6 else rng.randrange(last + 1)  # noqa: E731
        r = rng.random()
        if r < 0.3:
            body.append(VOp(rng.choice(list(BINARY)), (pick(), pick())))
        elif r < 0.55:
            body.append(VOp(rng.choice(list(WITH_SCALAR)), (pick(),), rng.choice([-2, -1, 2, 3])))
        elif r < 0.8:
            body.append(VOp(rng.choice(unary), (pick(),)))
        elif r < 0.9:
            body.append(VOp("dup", (pick(),), rng.choice([-1, 2, 3]), rng.choice(list(BINARY))))
        else:
            body.append(VOp("colreduce", (pick(),), sub=rng.choice(a.REDUCE_KINDS)))
    if not body:
        body.append(VOp(rng.choice(unary), (0,)))
    return body


def eval_body(body: list[VOp], inputs: list[np.ndarray], tile_rows: int) -> np.ndarray:
    """The model: what a body computes over whole tensors (a column reduction is per tile)."""
    vals = list(inputs)
    dt = inputs[0].dtype
    with np.errstate(all="ignore"):
        for op in body:
            x = vals[op.args[0]]
            if op.kind in BINARY:
                y = BINARY[op.kind][1](x, vals[op.args[1]])
            elif op.kind in WITH_SCALAR:
                y = WITH_SCALAR[op.kind][1](x, np.asarray(op.scalar, dt))
            elif op.kind in UNARY:
                y = UNARY[op.kind][1](x)
            elif op.kind == "dup":
                y = BINARY[op.sub][1](x, np.full(x.shape, op.scalar, dt))
            else:
                r, c = x.shape
                t = x.reshape(r // tile_rows, tile_rows, c)
                wide = t.astype(np.float32) if dt == np.float16 else t
                red = getattr(np, op.sub)(wide, axis=1, keepdims=True)
                y = np.broadcast_to(red.astype(dt), t.shape).reshape(r, c)
            vals.append(np.asarray(y, dt))
    return vals[-1]


def build_vector(name: str, spec: VectorSpec, device: DeviceSpec
                 ) -> tuple[a.KernelOp, list[FlagGuard], Phases | None, list[tuple[str, str]]]:
    """The kernel, its flags, its phases (if two) and pairs of buffers live at one op."""
    dt, elt = spec.dtype, ELEMENT_TYPES[spec.dtype]
    gm = _gm([spec.rows, spec.cols], dt)
    n_out = len(spec.phases)
    names = [f"x{i}" for i in range(spec.n_inputs)] + [f"z{k}" for k in range(n_out)]
    kb = _builder(name, [gm] * spec.n_inputs, [gm] * n_out, names, "vector", spec.block_dim, device)
    tr, c = spec.tile_rows, spec.cols
    tpb = spec.tiles_per_block

    def reuse(s: int) -> str | None:
        n = len(range(s, tpb, spec.slots))
        return None if n >= 2 else f"slot {s} holds {n} tile(s) per block: its buffers are never refilled"
    guards: list[FlagGuard] = []
    phases: list[list[str]] = []
    stored: list[str] = []
    live: list[tuple[str, str]] = []
    for s in range(spec.slots):
        guards += [FlagGuard(name, ("MTE2", "V", s), f"slot {s}: V reads the tiles MTE2 loaded"),
                   FlagGuard(name, ("V", "MTE3", s), f"slot {s}: MTE3 stores the tile V computed",
                             "the scalar step waits V -> S first, and the scalar unit issues the store only "
                             "after that wait" if spec.poke else None),
                   FlagGuard(name, ("MTE3", "MTE2", s), f"slot {s}: MTE2 refills (and V rewrites) the "
                             f"buffers only after the previous tile left", reuse(s))]
        if spec.poke:
            guards.append(FlagGuard(name, ("V", "S", s), f"slot {s}: the scalar unit reads what V computed"))
    for k, body in enumerate(spec.phases):
        made: list[str] = []

        def alloc(shape: list[int], tag: str) -> SSAValue:
            v = kb.alloc(shape, elt, "ub", f"p{k}{tag}")
            made.append(v.name_hint)
            return v

        if k:
            kb.barrier("ALL")
        const = None
        if k and spec.prologue is not None:
            const = alloc([tr, c], "const")
            kb.vec(a.VdupOp, kb.scalar(spec.prologue, elt), const)
        # every slot's buffers: the loaded inputs, then one per step (its result)
        slot_bufs: list[list[SSAValue]] = []
        temps: list[SSAValue | None] = []
        for s in range(spec.slots):
            bufs = [alloc([tr, c], f"in{i}s{s}") for i in range(spec.n_inputs)]
            if const is not None:
                bufs.append(const)
            for j, op in enumerate(body):
                bufs.append(alloc([tr, c], f"v{j}s{s}"))
            slot_bufs.append(bufs)
        for j, op in enumerate(body):  # scratch of a step, shared by the slots (V runs in order)
            temps.append(alloc([1, c], f"red{j}") if op.kind == "colreduce" else
                         alloc([tr, c], f"dup{j}") if op.kind == "dup" else None)
        # The first step reads input 0 and writes its result (vreduce: its scratch) at one op.
        for bufs in slot_bufs:
            first_dst = temps[0] if body[0].kind == "colreduce" else bufs[spec.n_inputs + (const is not None)]
            live.append((bufs[0].name_hint, first_dst.name_hint))
            if not k:
                stored.append(bufs[-1].name_hint)
        phases.append(made)
        block = kb.block_idx() if spec.block_dim > 1 else None

        def one(t, s: int) -> None:
            bufs = slot_bufs[s]
            row = kb.mul(kb.add(kb.mul(block, spec.tiles_per_block) if block is not None else 0, t), tr)
            kb.wait_flag("MTE3", "MTE2", s)
            for i in range(spec.n_inputs):
                kb.copy(kb.tile(kb.args[i], [row, 0], [tr, c]), bufs[i])
            kb.sync("MTE2", "V", s)
            first = spec.n_inputs + (const is not None)
            for j, op in enumerate(body):
                dst, srcs = bufs[first + j], [bufs[x] for x in op.args]
                if op.kind in BINARY:
                    kb.vec(BINARY[op.kind][0], srcs[0], srcs[1], dst)
                elif op.kind in WITH_SCALAR:
                    kb.vec(WITH_SCALAR[op.kind][0], srcs[0], kb.scalar(op.scalar, elt), dst)
                elif op.kind in UNARY:
                    kb.vec(UNARY[op.kind][0], srcs[0], dst)
                elif op.kind == "dup":
                    kb.vec(a.VdupOp, kb.scalar(op.scalar, elt), temps[j])
                    kb.vec(BINARY[op.sub][0], srcs[0], temps[j], dst)
                else:
                    kb.vec(a.VreduceOp, srcs[0], temps[j], kind=StringAttr(op.sub),
                           axes=DenseArrayBase.from_list(i64, [0]))
                    kb.vec(a.VbrcbOp, temps[j], dst)
            if spec.poke:  # out[0, 1] = out[0, 0] on the scalar unit (which blocks later issue)
                kb.sync("V", "S", s)
                value = kb.emit(memref.LoadOp.get(bufs[-1], [kb.index(0), kb.index(0)])).res
                kb.emit(memref.StoreOp.get(value, bufs[-1], [kb.index(0), kb.index(1)]))
            kb.sync("V", "MTE3", s)
            kb.copy(bufs[-1], kb.tile(kb.args[spec.n_inputs + k], [row, 0], [tr, c]))
            kb.set_flag("MTE3", "MTE2", s)

        for s in range(spec.slots):
            kb.set_flag("MTE3", "MTE2", s)
        if spec.loop and tpb > spec.slots:
            with kb.loop(0, tpb, spec.slots, "t") as t:
                one(t, 0)
                for s in range(1, spec.slots):
                    if tpb % spec.slots:  # the last round is partial: a tail tile under scf.if
                        with kb.if_(kb.less(kb.add(t, s), tpb)):
                            one(kb.add(t, s), s)
                    else:
                        one(kb.add(t, s), s)
        else:
            for t in range(tpb):
                one(t, t % spec.slots)
        for s in range(spec.slots):
            kb.wait_flag("MTE3", "MTE2", s)
    two = Phases(name, tuple(phases[0]), tuple(phases[1]), tuple(stored),
                 "p1const" if spec.prologue is not None else None) if len(phases) == 2 else None
    return kb.finish(), guards, two, live


def eval_vector(spec: VectorSpec, inputs: list[np.ndarray]) -> list[np.ndarray]:
    outs = []
    for k, body in enumerate(spec.phases):
        vals = list(inputs)
        if k and spec.prologue is not None:
            vals.append(np.full(inputs[0].shape, spec.prologue, inputs[0].dtype))
        z = eval_body(body, vals, spec.tile_rows)
        if spec.poke:
            z = z.copy()
            z[::spec.tile_rows, 1] = z[::spec.tile_rows, 0]
        outs.append(z)
    return outs


# ---------------------------------------------------------------------------
# Cube kernels.
# ---------------------------------------------------------------------------


@dataclass
class CubeSpec:
    dtype: str            # f16 | f32 (inputs)
    out: str              # f32 | f16 (what FIX writes)
    m: int
    n: int
    k: int
    tm: int
    tn: int
    tk: int
    block_dim: int
    l1_slots: int
    l0_slots: int
    whole_k: bool         # l1 holds the tile's whole K row, l0 takes K steps of it
    loop: bool

    @property
    def tiles(self) -> int:
        return (self.m // self.tm) * (self.n // self.tn)

    @property
    def per_block(self) -> int:
        return self.tiles // self.block_dim

    @property
    def ksteps(self) -> int:
        return self.k // self.tk


def build_cube(name: str, spec: CubeSpec, device: DeviceSpec) -> tuple[a.KernelOp, list[FlagGuard], list[tuple[str, str]]]:
    dt, elt, acc = spec.dtype, ELEMENT_TYPES[spec.dtype], f32
    kb = _builder(name, [_gm([spec.m, spec.k], dt), _gm([spec.k, spec.n], dt)], [_gm([spec.m, spec.n], spec.out)],
                  ["a", "b", "c"], "cube", spec.block_dim, device)
    tm, tn, tk, ks = spec.tm, spec.tn, spec.tk, spec.ksteps
    l1k = spec.k if spec.whole_k else tk
    l1_slots = 1 if spec.whole_k else min(spec.l1_slots, ks)
    l0_slots = min(spec.l0_slots, ks)
    a1 = [kb.alloc([tm, l1k], elt, "l1", f"a1s{s}") for s in range(l1_slots)]
    b1 = [kb.alloc([l1k, tn], elt, "l1", f"b1s{s}") for s in range(l1_slots)]
    a0 = [kb.alloc([tm, tk], elt, "l0a", f"a0s{s}") for s in range(l0_slots)]
    b0 = [kb.alloc([tk, tn], elt, "l0b", f"b0s{s}") for s in range(l0_slots)]
    c0 = kb.alloc([tm, tn], acc, "l0c", "c0")
    live = [(a1[s].name_hint, b1[s].name_hint) for s in range(l1_slots)]

    # Slots alternate over the block's fills (a loop body must hold whole rounds of them),
    # so every refill of a slot has a flag of its own to wait for.
    loop = spec.loop and spec.per_block > 1 and (spec.whole_k or ks % l1_slots == 0) and ks % l0_slots == 0
    l1_fills = spec.per_block * (1 if spec.whole_k else ks)
    l0_fills = spec.per_block * ks

    def redundant(fills: int, slots: int, s: int, what: str) -> str | None:
        n = len(range(s, fills, slots))
        return None if n >= 2 else f"{what} slot {s} is filled {n} time(s) per block"

    guards = [FlagGuard(name, ("M", "FIX", 0), "FIX copies out the l0c the cube accumulated"),
              FlagGuard(name, ("FIX", "M", 0), "the next tile's mmad {init} overwrites l0c after FIX read it",
                        None if spec.per_block >= 2 else "one output tile per block: l0c is written once")]
    for s in range(l1_slots):
        guards += [FlagGuard(name, ("MTE2", "MTE1", s), f"l1 slot {s}: MTE1 reads what MTE2 loaded"),
                   FlagGuard(name, ("MTE1", "MTE2", s), f"l1 slot {s}: MTE2 refills it after MTE1 read it",
                             redundant(l1_fills, l1_slots, s, "l1"))]
    for s in range(l0_slots):
        guards += [FlagGuard(name, ("MTE1", "M", s), f"l0 slot {s}: the cube reads what MTE1 loaded"),
                   FlagGuard(name, ("M", "MTE1", s), f"l0 slot {s}: MTE1 refills it after the cube read it",
                             redundant(l0_fills, l0_slots, s, "l0"))]
    fill = Counter()

    n_cols = spec.n // tn
    block = kb.block_idx() if spec.block_dim > 1 else None

    def tile(t) -> None:
        mi, ni = kb.divui(t, n_cols), kb.remui(t, n_cols)
        m0, n0 = kb.mul(mi, tm), kb.mul(ni, tn)

        def load_l1(s: int, k0, extent: int) -> None:
            kb.wait_flag("MTE1", "MTE2", s)
            kb.copy(kb.tile(kb.args[0], [m0, k0], [tm, extent]), a1[s])
            kb.copy(kb.tile(kb.args[1], [k0, n0], [extent, tn]), b1[s])
            kb.sync("MTE2", "MTE1", s)

        if spec.whole_k:
            load_l1(0, 0, spec.k)
        for kk in range(ks):
            s1 = 0 if spec.whole_k else fill["l1"] % l1_slots
            s0 = fill["l0"] % l0_slots
            fill["l1"] += not spec.whole_k
            fill["l0"] += 1
            if not spec.whole_k:
                load_l1(s1, kk * tk, tk)
            off = kk * tk if spec.whole_k else 0
            kb.wait_flag("M", "MTE1", s0)
            kb.copy(kb.tile(a1[s1], [0, off], [tm, tk]), a0[s0])
            kb.copy(kb.tile(b1[s1], [off, 0], [tk, tn]), b0[s0])
            if not spec.whole_k or kk == ks - 1:
                kb.set_flag("MTE1", "MTE2", s1)
            kb.sync("MTE1", "M", s0)
            if kk == 0:
                kb.wait_flag("FIX", "M", 0)
            kb.emit(a.MmadOp.get(a0[s0], b0[s0], c0, init=kk == 0))
            kb.set_flag("M", "MTE1", s0)
        kb.sync("M", "FIX", 0)
        kb.copy(c0, kb.tile(kb.args[2], [m0, n0], [tm, tn]))
        kb.set_flag("FIX", "M", 0)

    for s in range(l1_slots):
        kb.set_flag("MTE1", "MTE2", s)
    for s in range(l0_slots):
        kb.set_flag("M", "MTE1", s)
    kb.set_flag("FIX", "M", 0)
    first = kb.mul(block, spec.per_block) if block is not None else 0
    if loop:
        with kb.loop(0, spec.per_block, 1, "t") as t:
            tile(kb.add(first, t))
    else:
        for t in range(spec.per_block):
            tile(kb.add(first, t))
    for s in range(l1_slots):
        kb.wait_flag("MTE1", "MTE2", s)
    for s in range(l0_slots):
        kb.wait_flag("M", "MTE1", s)
    kb.wait_flag("FIX", "M", 0)
    return kb.finish(), guards, live


def eval_cube(spec: CubeSpec, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The model: each output tile accumulates its K steps in f32, one [tm, tk] x [tk, tn]
    product a step, as the cube does (f32 sums are exact only in that order once values
    outgrow 2^24), rounded once by FIX."""
    out = np.empty((spec.m, spec.n), DTYPES[spec.out])
    with np.errstate(all="ignore"):
        for m0 in range(0, spec.m, spec.tm):
            for n0 in range(0, spec.n, spec.tn):
                acc = np.zeros((spec.tm, spec.tn), np.float32)
                for k0 in range(0, spec.k, spec.tk):
                    xs = np.ascontiguousarray(x[m0:m0 + spec.tm, k0:k0 + spec.tk], np.float32)
                    ws = np.ascontiguousarray(w[k0:k0 + spec.tk, n0:n0 + spec.tn], np.float32)
                    acc = acc + np.matmul(xs, ws)
                out[m0:m0 + spec.tm, n0:n0 + spec.tn] = acc
    return out


# ---------------------------------------------------------------------------
# Random specs and the host program.
# ---------------------------------------------------------------------------


def _divisors(n: int, choices: Sequence[int]) -> list[int]:
    return [d for d in choices if n % d == 0]


TILE_ROWS = (1, 2, 4, 8, 16)
"""Rows of a vector tile: with at most 8 blocks a row, a tile is at most 4 KiB, so a kernel's
buffers (two slots of inputs and step results) fit in ub whatever the body."""


def random_vector(rng: random.Random, dtype: str, rows: int | None, cols: int | None) -> VectorSpec:
    """A vector kernel over [rows, cols] (random when None)."""
    block = 32 // np.dtype(DTYPES[dtype]).itemsize
    if cols is None:
        cols = block * rng.choice([1, 2, 4, 8])
    slots = rng.choice([1, 2])
    if rows is None:
        tr, tpb, bd = rng.choice(TILE_ROWS), rng.choice([1, 2, 2, 3, 4, 5, 6]), rng.choice([1, 2, 3, 4])
        rows = tr * tpb * bd
    else:
        options = [(tr, tpb, rows // (tr * tpb)) for tr in _divisors(rows, TILE_ROWS)
                   for tpb in range(1, 7) if (rows // tr) % tpb == 0 and rows // (tr * tpb) <= 8]
        tr, tpb, bd = rng.choice(options)
    slots = min(slots, tpb)
    n_inputs = rng.choice([1, 2])
    phases = [random_body(rng, dtype, n_inputs, rng.randint(1, 5))]
    prologue = None
    if rng.random() < 0.3:
        prologue = rng.choice([1, 2, -3]) if rng.random() < 0.7 else None
        phases.append(random_body(rng, dtype, n_inputs, rng.randint(1, 3), const=prologue is not None))
    return VectorSpec(dtype, rows, cols, tr, tpb, bd, slots, rng.random() < 0.7, n_inputs, phases, prologue,
                      rng.random() < 0.2)


def random_cube(rng: random.Random, dtype: str, m: int | None, k: int | None) -> CubeSpec:
    tm = rng.choice(_divisors(m, [16, 32])) if m else rng.choice([16, 32])
    m = m or tm * rng.choice([1, 2])
    tk = rng.choice([d for d in _divisors(k, [16, 32]) if k // d <= 4]) if k else rng.choice([16, 32])
    k = k or tk * rng.choice([1, 2, 3])
    tn = rng.choice([16, 32])
    n = tn * rng.choice([1, 2])
    tiles = (m // tm) * (n // tn)
    bd = rng.choice(_divisors(tiles, [1, 2, 4]))
    out = "f32" if dtype == "f32" else rng.choice(["f32", "f16"])
    return CubeSpec(dtype, out, m, n, k, tm, tn, tk, bd, rng.choice([1, 2]), rng.choice([1, 2]),
                    rng.random() < 0.3, rng.random() < 0.7)


def _ints(rng: np.random.Generator, shape: Sequence[int], dt: str) -> np.ndarray:
    """Small integers: exact in every element type, so most outputs compare exactly."""
    return rng.integers(-3, 4, size=tuple(shape)).astype(DTYPES[dt])


def generate(seed: int, device: str | DeviceSpec = DEFAULT_DEVICE) -> Program:
    """A random valid program (deterministic in `seed`)."""
    spec_dev = load_device(device) if isinstance(device, str) else device
    rng = random.Random(seed)
    data = np.random.default_rng(seed)
    n_kernels = rng.choice([1, 2, 2, 3, 3])
    kernels: list[a.KernelOp] = []
    guards: list[FlagGuard] = []
    phases: list[Phases] = []
    live_chip: list[tuple[str, str, str]] = []
    feeds: dict[str, np.ndarray] = {}
    # host tensors by name; launches: (kernel, inputs, outputs)
    types: dict[str, MemRefType] = {}
    values: dict[str, np.ndarray] = {}
    launches: list[tuple[str, list[str], list[str]]] = []
    inexact: set[str] = set()  # tensors an inexact op contributed to
    produced: list[str] = []   # tensors written by a kernel, in order
    cur: str | None = None

    def host_input(shape, dt) -> str:
        nm = f"in{len(feeds)}"
        feeds[nm] = values[nm] = _ints(data, shape, dt)
        types[nm] = _gm(shape, dt)
        return nm

    two_streams = rng.random() < 0.4
    streams: list[int] = []
    for i in range(n_kernels):
        name = f"k{i}"
        if produced and rng.random() < 0.3:  # a fork (an older tensor) or a fresh chain
            cur = rng.choice([*produced[:-1], None])
        ct = types[cur] if cur else None
        shape = tuple(ct.get_shape()) if ct else None
        cdt = a.short_type_name(ct.element_type) if ct else None
        cube_ok = ct is None or (cdt in ("f16", "f32") and shape[0] in (16, 32, 48, 64)
                                 and shape[1] in (16, 32, 48, 64, 96, 128))
        if cube_ok and rng.random() < 0.4:
            dt = cdt or rng.choice(["f16", "f32"])
            spec = random_cube(rng, dt, shape[0] if shape else None, shape[1] if shape else None)
            kernel, g, live = build_cube(name, spec, spec_dev)
            x = cur or host_input([spec.m, spec.k], dt)
            w = host_input([spec.k, spec.n], dt)
            outs = [f"{name}_c"]
            types[outs[0]] = _gm([spec.m, spec.n], spec.out)
            values[outs[0]] = eval_cube(spec, values[x], values[w])
            ins = [x, w]
        else:
            dt = cdt or rng.choice(["f32", "f16", "i32"])
            spec = random_vector(rng, dt, shape[0] if shape else None, shape[1] if shape else None)
            kernel, g, ph, live = build_vector(name, spec, spec_dev)
            ins = ([cur] if cur else []) + [host_input([spec.rows, spec.cols], dt)
                                            for _ in range(spec.n_inputs - (1 if cur else 0))]
            outs = [f"{name}_z{k}" for k in range(len(spec.phases))]
            for o, v in zip(outs, eval_vector(spec, [values[x] for x in ins])):
                types[o], values[o] = _gm([spec.rows, spec.cols], dt), v
            for o, body in zip(outs, spec.phases):
                if any(op.kind in INEXACT for op in body):
                    inexact.add(o)
            phases += [ph] if ph else []
        for o in outs:
            if any(x in inexact for x in ins):
                inexact.add(o)
        kernels.append(kernel)
        guards += g
        live_chip += [(name, x, y) for x, y in live]
        launches.append((name, ins, outs))
        streams.append(rng.choice([0, 1]) if two_streams else 0)
        produced += outs
        cur = outs[0]

    # What a later kernel reads is a workspace buffer, the rest are outputs.
    consumed = {x for _, ins, _ in launches for x in ins}
    outputs = [o for o in produced if o not in consumed]
    workspace = [o for o in produced if o in consumed]
    # gm buffers passed to one launch are live together.
    live_gm = [(x, y) for _, ins, outs in launches for x in ins if x in workspace
               for y in outs if y in workspace]
    host, events = _host(types, list(feeds), outputs, workspace, launches, streams)
    module = ModuleOp([*kernels, host])
    module.verify()
    expected = {o: values[o] for o in outputs}
    rtol = {o: FLOAT_RTOL.get(a.short_type_name(types[o].element_type), 0.0) if o in inexact else 0.0
            for o in outputs}
    kinds = sorted({op.name for op in module.walk() if op.name.startswith(("ascend.", "scf.", "memref.load", "memref.store"))})
    return Program(seed, module, feeds, expected, rtol, guards, phases, live_chip, live_gm, launches=launches,
                   events=events, values=values, kinds=kinds)


def _host(types: dict[str, MemRefType], inputs: list[str], outputs: list[str], workspace: list[str],
          launches: list[tuple[str, list[str], list[str]]], streams: Sequence[int] | None = None
          ) -> tuple[func.FuncOp, list[tuple[int, str, str]]]:
    """`@main`: inputs and outputs as arguments, intermediates as gm allocs, each launch on
    its stream, and an event from a producer to a consumer on another stream wherever no
    earlier event orders them already (so each event orders a pair nothing else does).
    Returns the function and its events (id, producer, consumer)."""
    streams = list(streams) if streams is not None else [0] * len(launches)
    producer = {o: i for i, (_, _, outs) in enumerate(launches) for o in outs}
    # Vector clocks: clock[s][t] = launches of stream t that stream s is ordered after.
    clock: dict[int, dict[int, int]] = {s: {} for s in set(streams)}
    seq: list[int] = []
    after: list[dict[int, int]] = []
    records: dict[int, list[int]] = {}
    waits: dict[int, list[int]] = {}
    events: list[tuple[int, str, str]] = []
    for i, (kernel, ins, _) in enumerate(launches):
        s = streams[i]
        for p in sorted({producer[x] for x in ins if x in producer}, reverse=True):
            if streams[p] == s or clock[s].get(streams[p], 0) > seq[p]:
                continue
            e = len(events)
            events.append((e, launches[p][0], kernel))
            records.setdefault(p, []).append(e)
            waits.setdefault(i, []).append(e)
            for t, n in after[p].items():
                clock[s][t] = max(clock[s].get(t, 0), n)
        seq.append(clock[s].get(s, 0))
        clock[s][s] = seq[-1] + 1
        after.append(dict(clock[s]))
    names = inputs + outputs
    block = Block(arg_types=[types[n] for n in names])
    value: dict[str, SSAValue] = {}
    for arg, n in zip(block.args, names):
        arg.name_hint = n
        value[n] = arg
    stream_ops = {s: a.StreamOp.get(s) for s in sorted(set(streams))}
    event_ops = [a.EventOp.get(e) for e, _, _ in events]
    block.add_ops([*stream_ops.values(), *event_ops])
    for n in workspace:
        op = a.AllocOp.get(types[n])
        op.memref.name_hint = n
        block.add_op(op)
        value[n] = op.memref
    for i, (kernel, ins, outs) in enumerate(launches):
        stream = stream_ops[streams[i]]
        block.add_ops(a.EventWaitOp.get(event_ops[e], stream) for e in waits.get(i, ()))
        block.add_op(a.LaunchOp.get(kernel, stream, [value[x] for x in ins + outs]))
        block.add_ops(a.EventRecordOp.get(event_ops[e], stream) for e in records.get(i, ()))
    block.add_op(func.ReturnOp())
    attrs = [DictionaryAttr({attr_names.ONNX_NAME: StringAttr(n)}) for n in inputs]
    attrs += [DictionaryAttr({attr_names.ONNX_NAME: StringAttr(n), attr_names.OUTPUT: UnitAttr()}) for n in outputs]
    f = func.FuncOp("main", FunctionType.from_lists(block.arg_types, []), Region(block), arg_attrs=ArrayAttr(attrs))
    return f, events


# ---------------------------------------------------------------------------
# Oracles and mutations.
# ---------------------------------------------------------------------------


@dataclass
class Outcome:
    """What checking one program found. Lists hold messages; empty lists are good news,
    except `caught`."""

    seed: int
    kinds: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)     # interpreter vs the numpy model
    races: list[str] = field(default_factory=list)          # races in the race-free program
    bounds: list[str] = field(default_factory=list)         # time_us < lower_bound_us
    plan_errors: list[str] = field(default_factory=list)    # the checker rejected the planner's plan
    caught: list[str] = field(default_factory=list)         # mutations reported as they must be
    missed: list[str] = field(default_factory=list)         # mutations nothing reported
    redundant: list[str] = field(default_factory=list)      # flags that guard no reuse (not mutated)
    accepted: list[str] = field(default_factory=list)       # aliasings the checker accepted, and safe
    crash: str | None = None

    @property
    def ok(self) -> bool:
        return not (self.mismatches or self.races or self.bounds or self.plan_errors or self.missed or self.crash)


def _kernel(module: ModuleOp, name: str) -> a.KernelOp:
    return next(op for op in module.ops if isinstance(op, a.KernelOp) and op.sym_name.data == name)


def _allocs(scope: Operation) -> dict[str, a.AllocOp]:
    return {op.memref.name_hint: op for op in scope.walk() if isinstance(op, a.AllocOp)}


@contextmanager
def removed(ops: Sequence[Operation]) -> Iterator[None]:
    """The ops detached from their blocks inside the `with`, put back after it (a mutant
    without copying the program)."""
    places = [(op, op.parent_block(), op.next_op) for op in ops]
    for op in ops:
        op.detach()
    try:
        yield
    finally:
        for op, block, nxt in reversed(places):  # a later op is back before an earlier one needs it
            block.insert_op_before(op, nxt) if nxt is not None else block.add_op(op)


def flag_ops(kernel: a.KernelOp, key: tuple[str, str, int]) -> list[Operation]:
    """Every set_flag / wait_flag of `key`: without all of them the counts stay balanced, so
    the mutant still runs; only the order the flag gave is gone."""
    return [op for op in kernel.walk() if isinstance(op, a.SetFlagOp | a.WaitFlagOp) and op.key == key]


@contextmanager
def shared_offset(x: a.AllocOp, y: a.AllocOp, capacity: int) -> Iterator[bool]:
    """Inside the `with`, buffer y has buffer x's offset (or x y's, if y would not fit
    there), so the two overlap; False if neither fits."""
    ox, oy = x.offset, y.offset
    if a.int_value(ox) + y.nbytes <= capacity:
        y.properties["offset"] = ox
    elif a.int_value(oy) + x.nbytes <= capacity:
        x.properties["offset"] = oy
    else:
        yield False
        return
    try:
        yield True
    finally:
        x.properties["offset"], y.properties["offset"] = ox, oy


def alone(program: Program, module: ModuleOp, kernel: str) -> ModuleOp:
    """A module running block 0 of one (planned) kernel of the program on the model's values
    of its inputs: a flag mutation is checked without running the kernels around it. Every
    block of a generated kernel runs the same ops on its own gm tiles, and races are within
    a block, so block 0 races if any block does."""
    ins, outs = next((i, o) for k, i, o in program.launches if k == kernel)
    clone = _kernel(module, kernel).clone()
    clone.properties["block_dim"] = IntegerAttr(1, i64)
    types = dict(zip(ins + outs, clone.function_type.inputs.data))
    return ModuleOp([clone, _host(types, ins, outs, [], [(kernel, ins, outs)])[0]])


def _races(module: ModuleOp, feeds: dict[str, np.ndarray], device: DeviceSpec, compiled: bool | None = None):
    rec = Recorder()
    outputs = run_ascend_module(module, feeds, device=device, trace=rec, listeners=(rec,), compiled=compiled)
    return outputs, simulate(rec.records, device=device)


MUTANT_COMPILED = False
"""Mutants run on xDSL's interpreter path: each is run once, so compiling its kernel to
Python (runtime/ascend_compiled.py) costs more than it saves."""


def _overlap(x: a.AllocOp, y: a.AllocOp) -> bool:
    ox, oy = a.int_value(x.offset), a.int_value(y.offset)
    return ox < oy + y.nbytes and oy < ox + x.nbytes


def _context() -> Context:
    from geir.dialects import make_context

    return make_context()


ALIASINGS = 6
"""Random buffer pairs per program given one offset to see whether the checker's verdict holds."""


def check(program: Program, device: str | DeviceSpec = DEFAULT_DEVICE, *, mutate: bool = True,
          confirm_redundant: bool = False, aliasings: int = ALIASINGS) -> Outcome:
    """Run every oracle on a program (planning its memory in place) and, with `mutate`, every
    mutation. `confirm_redundant`: also remove the flags marked redundant and expect no race.
    `aliasings`: random pairs of buffers of one space made to share bytes - the checker must
    reject the plan, or the program must still be right and race-free."""
    spec = load_device(device) if isinstance(device, str) else device
    out = Outcome(program.seed, list(program.kinds))
    module = program.module
    try:
        PlanMemory(device=spec.name).apply(_context(), module)
        try:
            check_memory_plan(module, spec.name)
        except MemoryPlanError as e:
            out.plan_errors.append(str(e))
        got, sim = _races(module, program.feeds, spec)
        for name, want in program.expected.items():
            if not _same(got[name], want, program.rtol[name]):
                bad = int(np.sum(~_close(got[name], want, program.rtol[name])))
                out.mismatches.append(f"{name}: {bad} of {want.size} elements differ from the model")
        out.races += [str(r) for r in sim.races]
        out.bounds += [f"@{k.name}: time {k.time_us} us < lower bound {k.lower_bound_us} us"
                       for k in sim.kernels if k.time_us < k.lower_bound_us * (1 - 1e-9)]
        if mutate:
            _mutate(program, module, spec, out, confirm_redundant)
            _alias(program, module, spec, out, aliasings)
    except Exception as e:  # noqa: BLE001 - a crash is a finding, reported with its program
        import traceback

        out.crash = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
    return out


def _mutate(program: Program, module: ModuleOp, spec: DeviceSpec, out: Outcome, confirm_redundant: bool) -> None:
    minis: dict[str, tuple[ModuleOp, dict[str, np.ndarray]]] = {}

    def mini(kernel: str) -> tuple[ModuleOp, a.KernelOp, dict[str, np.ndarray]]:
        if kernel not in minis:
            m = alone(program, module, kernel)
            ins = next(i for k, i, _ in program.launches if k == kernel)
            minis[kernel] = (m, {x: program.values[x] for x in ins})
        m, feeds = minis[kernel]
        return m, _kernel(m, kernel), feeds

    def races(kernel: str) -> bool:
        m, _, feeds = mini(kernel)
        _, sim = _races(m, feeds, spec, compiled=MUTANT_COMPILED)
        return any(r.kernel == kernel for r in sim.races)

    seen: set[tuple[str, tuple]] = set()
    for g in program.guards:
        if (g.kernel, g.key) in seen:
            continue
        seen.add((g.kernel, g.key))
        what = f"@{g.kernel} without flag {g.key[0]} -> {g.key[1]} id {g.key[2]} ({g.guards})"
        if g.redundant is not None and not confirm_redundant:
            out.redundant.append(f"{what}: {g.redundant}")
            continue
        _, kernel, _ = mini(g.kernel)
        with removed(flag_ops(kernel, g.key)):
            raced = races(g.kernel)
        if g.redundant is not None:
            out.redundant.append(f"{what}: {g.redundant}")
            if raced:
                out.missed.append(f"{what}: marked redundant ({g.redundant}) but races")
        elif raced:
            out.caught.append(what)
        else:
            out.missed.append(f"{what}: the simulator reports no race")

    host = next(op for op in module.ops if isinstance(op, func.FuncOp))
    for e, producer, consumer in program.events:
        ops = [op for op in host.walk() if isinstance(op, a.EventRecordOp | a.EventWaitOp)
               and a.int_value(op.event.owner.properties["id"]) == e]
        what = f"event {e} (@{producer} -> @{consumer} on another stream) removed"
        with removed(ops):
            try:
                _races(module, program.feeds, spec)
                out.missed.append(what + ": no race between the streams reported")
            except StreamRaceError:
                out.caught.append(what)

    ws = host.attributes.get(attr_names.WORKSPACE_SIZE)
    pairs = [(_allocs(_kernel(module, k)), x, y) for k, x, y in program.live_chip]
    pairs += [(_allocs(host), x, y) for x, y in program.live_gm]
    for allocs, x, y in pairs:
        bx, by = allocs[x], allocs[y]
        capacity = ws.value.data if bx.space == "gm" else spec.buffer_bytes[bx.space]
        what = f"{bx.space}: %{x} and %{y} (live together) at one offset"
        with shared_offset(bx, by, capacity) as ok:
            if ok:
                _expect_plan_error(module, spec, what, out)

    for ph in program.phases:
        allocs = _allocs(_kernel(module, ph.kernel))
        shared = [(x, y) for x in ph.first for y in ph.second if _overlap(allocs[x], allocs[y])]
        if not shared:
            continue  # the barrier orders nothing the plan relies on
        racy = [(x, ph.prologue) for x in ph.stored if ph.prologue and _overlap(allocs[x], allocs[ph.prologue])]
        m, kernel, _ = mini(ph.kernel)
        what = f"@{ph.kernel} without its pipe_barrier ALL"
        with removed([op for op in kernel.walk() if isinstance(op, a.PipeBarrierOp)]):
            if racy:
                what += f" (phase 0 stores %{racy[0][0]} while the prologue fills %{racy[0][1]}, at one offset)"
                _expect_plan_error(m, spec, what, out)
                if races(ph.kernel):
                    out.caught.append(what + ": race")
                else:
                    out.missed.append(what + ": the simulator reports no race")
            else:  # every shared pair is ordered by phase 0's drain: still race-free
                what += f" ({len(shared)} buffer pairs share bytes, all ordered by the MTE3 -> MTE2 drain)"
                out.redundant.append(what)
                if races(ph.kernel):
                    out.missed.append(what + ": but it races")


def _alias(program: Program, module: ModuleOp, spec: DeviceSpec, out: Outcome, count: int) -> None:
    """Soundness of the checker: a plan it accepts is safe. Pairs of buffers of one space (on
    chip in one kernel, or gm) get one offset; the checker rejects the plan, or the whole
    program must still compute the model's outputs with no race."""
    rng = random.Random(program.seed)
    host = next(op for op in module.ops if isinstance(op, func.FuncOp))
    ws = host.attributes.get(attr_names.WORKSPACE_SIZE)
    scopes = [op for op in module.ops if isinstance(op, a.KernelOp)] + [host]
    pairs, apart = [], []
    for scope in scopes:
        by_space: dict[str, list[a.AllocOp]] = {}
        for op in scope.walk():
            if isinstance(op, a.AllocOp):
                by_space.setdefault(op.space, []).append(op)
        spans = ({b.op: (b.start, b.end) for b in KernelFlow(scope).buffers()} if isinstance(scope, a.KernelOp)
                 else {})
        for bufs in by_space.values():
            for i, x in enumerate(bufs):
                for y in bufs[i + 1:]:
                    if _overlap(x, y):
                        continue
                    (sx, ex), (sy, ey) = spans.get(x, (0, 0)), spans.get(y, (0, 0))
                    # On chip, pairs used by disjoint top-level ops are the hard cases: whether
                    # they may share depends on the flags between them.
                    (apart if ex < sy or ey < sx else pairs).append((x, y))
    chosen = rng.sample(apart, min(count, len(apart)))
    chosen += rng.sample(pairs, min(count - len(chosen), len(pairs)))
    for x, y in chosen:
        capacity = ws.value.data if x.space == "gm" else spec.buffer_bytes[x.space]
        what = f"{x.space}: %{x.memref.name_hint} and %{y.memref.name_hint} at one offset"
        with shared_offset(x, y, capacity) as ok:
            if not ok:
                continue
            try:
                check_memory_plan(module, spec.name)
            except MemoryPlanError:
                out.caught.append(what + ": rejected")
                continue
            got, sim = _races(module, program.feeds, spec)
            wrong = [n for n, want in program.expected.items() if not _same(got[n], want, program.rtol[n])]
            if sim.races or wrong:
                out.missed.append(f"{what}: the checker accepts it, but "
                                  + (f"{sim.races[0]}" if sim.races else f"output {wrong[0]} is wrong"))
            else:
                out.accepted.append(what)


def _expect_plan_error(mutant: ModuleOp, spec: DeviceSpec, what: str, out: Outcome) -> None:
    try:
        check_memory_plan(mutant, spec.name)
    except MemoryPlanError as e:
        if "live at the same time" in str(e):
            out.caught.append(what)
        else:
            out.missed.append(f"{what}: the checker raised another error: {e}")
        return
    out.missed.append(f"{what}: the memory-plan checker accepts it")


def _close(got: np.ndarray, want: np.ndarray, rtol: float) -> np.ndarray:
    g, w = got.astype(np.float64), want.astype(np.float64)
    return np.isclose(g, w, rtol=rtol, atol=0.0, equal_nan=True) | (g == w)


def _same(got: np.ndarray, want: np.ndarray, rtol: float) -> bool:
    return got.shape == want.shape and got.dtype == want.dtype and bool(_close(got, want, rtol).all())


def mutation_family(message: str) -> str:
    """Which kind of mutation a caught-mutation message is about."""
    for family, word in (("flag", "without flag"), ("barrier", "pipe_barrier"), ("event", "event "),
                         ("aliasing", ": rejected"), ("live_overlap", "(live together)")):
        if word in message:
            return family
    return "other"


def run_campaign(n: int, seed: int, device: str | DeviceSpec = DEFAULT_DEVICE, *, mutate: bool = True,
                 confirm_redundant: bool = False, aliasings: int = ALIASINGS) -> dict:
    """Generate and check programs seed, seed + 1, ..., seed + n - 1; the counts, and the
    outcomes that found something (`failures`)."""
    counts: Counter = Counter()
    kinds: Counter = Counter()
    families: Counter = Counter()
    failures: list[Outcome] = []
    start = time.perf_counter()
    for s in range(seed, seed + n):
        try:
            program = generate(s, device)
        except Exception as e:  # noqa: BLE001
            failures.append(Outcome(s, crash=f"generate: {type(e).__name__}: {e}"))
            counts["crashes"] += 1
            continue
        o = check(program, device, mutate=mutate, confirm_redundant=confirm_redundant, aliasings=aliasings)
        counts["programs"] += 1
        counts["kernels"] += sum(isinstance(op, a.KernelOp) for op in program.module.ops)
        counts["mismatches"] += len(o.mismatches)
        counts["unexpected_races"] += len(o.races)
        counts["bound_violations"] += len(o.bounds)
        counts["plan_check_failures"] += len(o.plan_errors)
        counts["mutations_caught"] += len(o.caught)
        families.update(mutation_family(m) for m in o.caught)
        counts["mutations_missed"] += len(o.missed)
        counts["redundant_flags"] += len(o.redundant)
        counts["aliasings_accepted"] += len(o.accepted)
        counts["crashes"] += o.crash is not None
        kinds.update(o.kinds)
        if not o.ok:
            failures.append(o)
    seconds = time.perf_counter() - start
    return {**{k: counts[k] for k in ("programs", "kernels", "mismatches", "unexpected_races", "bound_violations",
                                      "plan_check_failures", "mutations_caught", "mutations_missed",
                                      "redundant_flags", "aliasings_accepted", "crashes")},
            "caught_by_family": dict(sorted(families.items())),
            "op_kinds": dict(sorted(kinds.items())), "seconds": seconds,
            "programs_per_s": counts["programs"] / seconds if seconds else 0.0, "failures": failures}
