"""The one cost model of geir: a device's figures turned into cycles and microseconds.

The compiler (fusion, layout, tiling) and the simulator both price work through it, so what
the compiler predicts is what the simulator measures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from geir.dialects.ascend import DMA_ENGINES, SPACES
from geir.target.device import DEFAULT_DEVICE, DeviceSpec, dtype_name, load_device

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
        kind's class and dtype (binary 128, unary fp16 256; i1, one byte per bool, at i8's rate
        unless the device lists it). Zero bytes cost nothing."""
        rates = self.spec.vector_bytes_per_cycle[self.vector_class(op_kind)]
        name = dtype_name(dtype)
        if name == "i1" and name not in rates:  # a bool is a byte in memory: the vector unit runs it as i8
            name = "i8"
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

    # -- gm traffic through L2 -------------------------------------------------------------------

    def l2_hit_fraction(self, nbytes: float, distinct_bytes: float, footprint_bytes: float,
                        resident_bytes: float = 0.0) -> float:
        """The share of a kernel's gm reads (or of its gm writes) that L2 serves: the one L2
        rule of geir, used by the simulator and the cube and attention tilings alike (docs/device.md).

        L2 is a write-back cache that reads (MTE2) and writes (MTE3, FIX) go through. The
        first read of a byte in a kernel comes from HBM, and the first write of a byte is
        priced at HBM too (its write-back); later reads and writes of the byte (a tile loop
        reading its input again per output-channel tile, a matmul's rows per column tile, a
        scratch tile written and read back) hit L2 when the kernel's gm footprint fits in
        ``l2_bytes``, and a share l2_bytes / footprint of them when it does not (an LRU over a
        larger footprint keeps that share: an assumption). ``nbytes``: the kernel's reads (or
        writes); ``distinct_bytes``: the distinct bytes among them; ``footprint_bytes``: the
        kernel's footprint, or for its own scratch `scratch_reuse_bytes`; ``resident_bytes``:
        distinct bytes among them that an earlier kernel left in L2 (the simulator's
        `l2_resident_reads`), whose first read hits too. The tilings pass none: they price a
        kernel's first reads at HBM, as if it ran alone."""
        if nbytes <= 0:
            return 0.0
        again = max(0.0, nbytes - distinct_bytes)
        keep = min(1.0, self.spec.l2_bytes / footprint_bytes) if footprint_bytes > 0 else 1.0
        return (again * keep + min(resident_bytes, distinct_bytes)) / nbytes

    def scratch_reuse_bytes(self, scratch_bytes: float, scratch_traffic: float, traffic: float,
                            footprint_bytes: float) -> float:
        """What stands for the footprint in `l2_hit_fraction` for the touches of a kernel's own
        gm scratch (`geir.scratch`: hand-off tiles a block writes and reads back a pipeline
        stage later, in slots it writes again): the gm bytes the kernel moves between two
        touches of a scratch byte, ``scratch_bytes * traffic / scratch_traffic`` when its
        ``traffic`` interleaves evenly (an assumption), at most its footprint. An LRU keeps a
        byte whose reuse distance is under ``l2_bytes``; a footprint far over L2 with a few MiB
        of scratch in it keeps the hand-offs where the whole-kernel share would not."""
        if scratch_traffic <= 0:
            return footprint_bytes
        return min(footprint_bytes, scratch_bytes * traffic / scratch_traffic)

    def gm_cycles(self, nbytes: float, blocks: int, hit: float = 0.0) -> float:
        """Cube-clock cycles one of ``blocks`` concurrent blocks needs to move ``nbytes`` to or
        from gm at its share of the bandwidth: a share ``hit`` of them (``l2_hit_fraction``)
        at ``l2_bytes_per_s``, the rest at ``hbm_bytes_per_s``."""
        spec = self.spec
        per_cycle = spec.cube_clock_hz * max(1, blocks)
        return (nbytes * (1.0 - hit) / (spec.hbm_bytes_per_s / per_cycle)
                + nbytes * hit / (spec.l2_bytes_per_s / per_cycle))

    @staticmethod
    def wave_shares(tiles: int, blocks: int) -> list[tuple[int, int]]:
        """(rounds, blocks moving gm bytes at once) of `tiles` equal tiles dealt round-robin
        to `blocks` blocks: the full rounds at `blocks`, a last partial round at the blocks it
        still has. The blocks that have finished leave their share of the bandwidth to those
        still running, so a tile of the last round moves its bytes at ``gm_cycles(.., tail)``:
        the simulator's rule (a block is timed at the mean number of movers beside it)."""
        blocks = max(1, min(blocks, tiles))
        full, tail = divmod(tiles, blocks)
        return [(full, blocks)] + ([(1, tail)] if tail else [])

    def gm_time_us(self, read_bytes: float, write_bytes: float = 0.0, hit: float = 0.0) -> float:
        """A whole kernel's gm traffic at the device's bandwidths: the reads that miss L2 and
        the writes at ``hbm_bytes_per_s``, the hits at ``l2_bytes_per_s``."""
        return (self.hbm_time_us(read_bytes * (1.0 - hit) + write_bytes)
                + read_bytes * hit / self.spec.l2_bytes_per_s * 1e6)

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
        The bound is the largest of the four terms. The estimate does not know which bytes
        a kernel reads twice, so it prices no L2 hit (``l2_hit_fraction``).
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
