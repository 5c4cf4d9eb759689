"""A model compiled for several devices of a server: one program per rank.

    dm = geir.compile(model, tensor_parallel=4)          # 4 ranks of an atlas800t_a2
    dm.run({"x": x})                 # the ranks run together, exchanging real data
    outputs, report = dm.profile()   # one clock: per device latency, memory, link time
    dm.write_trace("trace.json")     # Chrome trace, one process per device

Each rank's program is the model compiled with `graph-tensor-parallel{ranks=N rank=r}`
after simplification (passes/graph/tensor_parallel.py): its share of the weights, its
attention heads, an all-reduce after each row product. The ranks run on threads of one
process and meet at their collectives (reference/collectives.py); the simulator times them on
one clock, each rank on its own device of the server and each collective priced by the
server's links (runtime/simulator.py `simulate_ranks`, target/server.py). An output a rank
returns split (`geir.shard`) is concatenated from the ranks' blocks (docs/multi-device.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr

from geir.dialects import attr_names
from geir.errors import GeirError

DEFAULT_SERVER = "atlas800t_a2"


@dataclass
class DistributedModel:
    """One CompiledModel per rank of a tensor-parallel split."""

    programs: list[Any]
    server: str = DEFAULT_SERVER
    compile_seconds: dict[str, float] = field(default_factory=dict)
    _last: tuple[list[Any], list[dict[str, Any]]] | None = None

    @property
    def ranks(self) -> int:
        return len(self.programs)

    @property
    def options(self):
        return self.programs[0].options

    @property
    def module(self):
        """Rank 0's final program (each rank's: `programs[r].module`)."""
        return self.programs[0].module

    @property
    def stage_names(self) -> list[str]:
        return self.programs[0].stage_names

    def input_specs(self):
        return self.programs[0].input_specs()

    def output_names(self) -> list[str]:
        return self.programs[0].output_names()

    def random_inputs(self, seed: int = 0, *, floats: bool = True) -> dict[str, np.ndarray]:
        return self.programs[0].random_inputs(seed, floats=floats)

    def shards(self) -> dict[str, tuple[int, int]]:
        """Outputs each rank returns a block of: name -> (axis, groups)."""
        graph = self.programs[0].stages[next(n for n in self.stage_names if n.endswith("_tensor_parallel"))]
        fn = next(op for op in graph.ops if isinstance(op, func.FuncOp) and not op.is_declaration)
        out: dict[str, tuple[int, int]] = {}
        for i, d in enumerate(fn.res_attrs.data if fn.res_attrs is not None else ()):
            shard = d.data.get(attr_names.SHARD)
            name = d.data.get(attr_names.ONNX_NAME)
            if shard is not None:
                axis, groups = shard.get_values()
                out[name.data if isinstance(name, StringAttr) else f"result{i}"] = (axis, groups)
        return out

    def gather(self, parts: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """The whole outputs from each rank's: a split one concatenated block by block."""
        shards = self.shards()
        out = {}
        for name in parts[0]:
            if name not in shards:
                out[name] = parts[0][name]
                continue
            axis, groups = shards[name]
            pieces = [np.split(p[name], groups, axis=axis) for p in parts]
            out[name] = np.concatenate([pieces[r][k] for k in range(groups) for r in range(len(parts))], axis=axis)
        return out

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run the ranks together on the same inputs; the whole outputs."""
        from geir.reference.collectives import run_ranks

        return self.gather(run_ranks(self.ranks, lambda r: self.programs[r].run(dict(feeds))))

    def profile(self, feeds: Mapping[str, np.ndarray] | None = None, *,
                mode: str = "full") -> tuple[dict[str, np.ndarray] | None, dict[str, Any]]:
        """Run and time the ranks on one clock: (whole outputs, report). The report holds
        `latency_us` (the last device to finish), `ranks` (each device's own report, as
        CompiledModel.profile's), and per device the time its collectives took
        (`collective_us`) and their share of its latency (`link_share`)."""
        from geir.runtime.report import build_report
        from geir.runtime.simulator import profile_ranks

        if feeds is None:
            feeds = self.random_inputs(floats=mode == "full")
        modules = [p.module for p in self.programs]
        outputs, sims = profile_ranks(modules, [dict(feeds)] * self.ranks, server=self.server,
                                      timing=mode == "timing")
        reports = [build_report(sim, m) for sim, m in zip(sims, modules)]
        self._last = (sims, reports)
        latency = max(sim.latency_us for sim in sims)
        coll = [sum(k.exec_us for k in sim.kernels if k.collective is not None) for sim in sims]
        report = {
            "server": self.server, "tensor_parallel": self.ranks, "latency_us": latency,
            "collective_us": coll, "link_share": [c / latency if latency else 0.0 for c in coll],
            "peak_memory_bytes": [r.get("peak_memory_bytes") for r in reports],
            "ranks": reports,
        }
        whole = self.gather(outputs) if mode == "full" else None
        return whole, report

    def write_trace(self, path: str) -> None:
        """The last profile's Chrome trace: one process per device."""
        from geir.runtime.trace import write_trace_ranks

        if self._last is None:
            self.profile()
        write_trace_ranks(self._last[0], path)


def check_ranks(tensor_parallel: int, server: str) -> None:
    from geir.target.server import load_server

    spec = load_server(server)
    if tensor_parallel > spec.devices:
        raise GeirError(f"tensor_parallel {tensor_parallel} needs more devices than {spec.name} has "
                        f"({spec.devices})")


__all__ = ["DistributedModel", "DEFAULT_SERVER", "check_ranks"]
