"""A model compiled for several devices of a server: one program per rank.

    dm = geir.compile(model, tensor_parallel=4)          # 4 ranks of an atlas800t_a2
    dm.run({"x": x})                 # the ranks run together, exchanging real data
    outputs, report = dm.profile()   # one clock: per device latency, memory, link time
    dm.write_trace("trace.json")     # Chrome trace, one process per device
    pp = geir.compile(model, pipeline_stages=2, micro_batches=4)   # stage s on device s

Each rank's program is the model compiled with `graph-tensor-parallel{ranks=N rank=r}`
after simplification (passes/graph/tensor_parallel.py): its share of the weights, its
attention heads, an all-reduce after each row product; or, for a pipeline, with
`graph-pipeline-stage{stages=P stage=s}` (passes/graph/pipeline_stages.py): stage s's layers,
receiving from s - 1 and sending to s + 1, run once per micro-batch. The ranks run on threads of one
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
    """One CompiledModel per rank: a tensor-parallel share, or a pipeline stage."""

    programs: list[Any]
    server: str = DEFAULT_SERVER
    compile_seconds: dict[str, float] = field(default_factory=dict)
    kind: str = "tensor"
    """"tensor": each rank a share of every layer; "pipeline": rank s runs stage s's layers."""
    micro_batches: int = 1
    """Pipeline: a run's inputs are this many micro-batches along axis 0, each the size the
    model was compiled for; each stage runs them one after the other."""
    stored: dict[str, dict] | None = None
    """A loaded model's split inputs and outputs (its manifest's): its stages are not kept."""
    _last: tuple[list[Any], list[dict[str, Any]]] | None = None

    @property
    def unavailable(self) -> list[str]:
        return self.programs[0].unavailable

    def manifest(self) -> dict:
        """What an offline model's manifest records of the ranks (driver/om.py)."""
        return {"kind": self.kind, "count": self.ranks, "server": self.server, "micro_batches": self.micro_batches,
                "input_shards": {n: list(v) for n, v in self.input_shards().items()},
                "output_shards": {n: list(v) for n, v in self.shards().items()}}

    @classmethod
    def from_manifest(cls, ranks: dict, programs: list) -> DistributedModel:
        return cls(programs, ranks.get("server", DEFAULT_SERVER), kind=ranks["kind"],
                   micro_batches=ranks.get("micro_batches", 1),
                   stored={k: {n: tuple(v) for n, v in ranks.get(k, {}).items()}
                           for k in ("input_shards", "output_shards")})

    def save(self, path) -> None:
        """One offline model holding every rank's program (driver/om.py)."""
        from pathlib import Path

        from geir.driver.om import save_om

        if Path(path).suffix != ".om":
            raise GeirError(f"a multi-device model is saved as one offline model (.om), not {Path(path).suffix or path}")
        save_om(self, path, ranks=self)

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
        """The inputs of the whole model (a split input: all ranks' blocks together; a
        pipeline's: each stage's, once)."""
        if self.kind == "pipeline":
            seen: dict[str, Any] = {}
            for p in self.programs:
                for spec in p.input_specs():
                    seen.setdefault(spec[0], spec)
            return list(seen.values())
        split = self.input_shards() if self.kind == "tensor" else {}
        out = []
        for name, shape, dtype in self.programs[0].input_specs():
            if name in split:
                axis, _ = split[name]
                shape = tuple(d * self.ranks if i == axis else d for i, d in enumerate(shape))
            out.append((name, shape, dtype))
        return out

    def random_inputs(self, seed: int = 0, *, floats: bool = True) -> dict[str, np.ndarray]:
        whole: dict[str, np.ndarray] = {}
        for p in self.programs if self.kind == "pipeline" else self.programs[:1]:
            whole.update({n: v for n, v in p.random_inputs(seed, floats=floats).items() if n not in whole})
        rng = np.random.default_rng(seed)
        for name, shape, dtype in self.input_specs():  # a split input at its whole size
            if name in whole and whole[name].shape != tuple(shape):
                whole[name] = rng.standard_normal(shape).astype(dtype)
        return whole

    def output_names(self) -> list[str]:
        if self.kind == "pipeline":  # each stage returns the outputs it computes
            return [n for p in self.programs for n in p.output_names()]
        return self.programs[0].output_names()

    def _own(self, rank: int, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The inputs stage `rank` reads."""
        names = {n for n, _, _ in self.programs[rank].input_specs()}
        return {n: v for n, v in feeds.items() if n in names}

    def micro_batch_inputs(self, feeds: Mapping[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
        """The micro-batches of a run's inputs: each input split along axis 0 into
        `micro_batches` parts of the compiled size."""
        specs = {n: s for n, s, _ in self.input_specs()}
        m = self.micro_batches
        out: list[dict[str, np.ndarray]] = [{} for _ in range(m)]
        for name, value in feeds.items():
            value = np.asarray(value)
            want = specs.get(name)
            if want is None or not want or value.shape[1:] != tuple(want[1:]) or value.shape[0] != m * want[0]:
                raise GeirError(f"input '{name}' has shape {list(value.shape)}: a run of {m} micro-batch(es) takes "
                                f"{[m * want[0], *want[1:]] if want else '?'} (axis 0: micro-batches of {want[0] if want else '?'})")
            for i, part in enumerate(np.split(value, m)):
                out[i][name] = part
        return out

    def _stage_outputs(self, per_rank: Sequence[Sequence[Mapping[str, np.ndarray]]]) -> dict[str, np.ndarray]:
        """Each stage's outputs of each micro-batch, joined along axis 0."""
        out: dict[str, np.ndarray] = {}
        for runs in per_rank:
            for name in (runs[0] if runs else {}):
                out[name] = np.concatenate([r[name] for r in runs], axis=0) if len(runs) > 1 else runs[0][name]
        return out

    def _split_graph(self):
        graph = self.programs[0].stages[next(n for n in self.stage_names if n.endswith("_tensor_parallel"))]
        return graph, next(op for op in graph.ops if isinstance(op, func.FuncOp) and not op.is_declaration)

    def shards(self) -> dict[str, tuple[int, int]]:
        """Outputs each rank returns a block of: name -> (axis, groups)."""
        if self.kind != "tensor":
            return {}
        if self.stored is not None:
            return dict(self.stored["output_shards"])
        _, fn = self._split_graph()
        attrs = fn.res_attrs.data if fn.res_attrs is not None else ()
        out: dict[str, tuple[int, int]] = {}
        for i, shard in _shards(attrs).items():
            name = attrs[i].data.get(attr_names.ONNX_NAME)
            out[name.data if isinstance(name, StringAttr) else f"result{i}"] = shard
        return out

    def input_shards(self) -> dict[str, tuple[int, int]]:
        """Inputs each rank takes a block of (a KV cache beside split heads): name -> (axis, groups)."""
        if self.kind != "tensor":
            return {}
        if self.stored is not None:
            return dict(self.stored["input_shards"])
        from geir.runtime.interpreter import input_specs

        graph, fn = self._split_graph()
        names = [name for name, _, _ in input_specs(graph)]
        return {names[i]: shard for i, shard in _shards(fn.arg_attrs.data if fn.arg_attrs is not None else ()).items()}

    def rank_inputs(self, feeds: Mapping[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
        """Each rank's inputs: a split input's block for its rank, the others whole."""
        from geir.passes.graph.tensor_parallel import Shard

        split = self.input_shards()
        out = []
        for r in range(self.ranks):
            mine = {}
            for name, value in feeds.items():
                if name in split:
                    axis, groups = split[name]
                    value = np.asarray(value)
                    value = np.take(value, Shard(axis, groups).indices(value.shape[axis], self.ranks, r), axis=axis)
                mine[name] = value
            out.append(mine)
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

        if self.kind == "pipeline":
            parts = self.micro_batch_inputs(feeds)
            return self._stage_outputs(run_ranks(self.ranks, lambda r: [self.programs[r].run(self._own(r, f))
                                                                        for f in parts]))
        parts = self.rank_inputs(feeds)
        return self.gather(run_ranks(self.ranks, lambda r: self.programs[r].run(parts[r])))

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
            if self.kind == "pipeline" and self.micro_batches > 1:
                feeds = {n: np.concatenate([v] * self.micro_batches) for n, v in feeds.items()}
        modules = [p.module for p in self.programs]
        if self.kind == "pipeline":
            runs = self.micro_batch_inputs(feeds)
            per_rank = [[self._own(r, f) for f in runs] for r in range(self.ranks)]
        else:
            parts = self.rank_inputs(feeds)
            same = all(p is self.programs[0] for p in self.programs) and not self.input_shards()
            per_rank = [parts[0]] * self.ranks if same else parts  # one program, one input: one recording
        outputs, sims = profile_ranks(modules, per_rank, server=self.server, timing=mode == "timing")
        reports = [build_report(sim, m) for sim, m in zip(sims, modules)]
        self._last = (sims, reports)
        latency = max(sim.latency_us for sim in sims)
        coll = [sum(k.exec_us for k in sim.kernels if k.collective is not None) for sim in sims]
        report = {
            "server": self.server, "kind": self.kind, "tensor_parallel": self.ranks if self.kind == "tensor" else 1, "latency_us": latency,
            "collective_us": coll, "link_share": [c / latency if latency else 0.0 for c in coll],
            "peak_memory_bytes": [r.get("peak_memory_bytes") for r in reports],
            "ranks": reports,
        }
        if self.kind == "pipeline":
            report.update(pipeline_figures(sims, self.micro_batches, self.input_specs()))
        if mode != "full":
            return None, report
        whole = self._stage_outputs(outputs) if self.kind == "pipeline" else self.gather(outputs)
        return whole, report

    def write_trace(self, path: str) -> None:
        """The last profile's Chrome trace: one process per device."""
        from geir.runtime.trace import write_trace_ranks

        if self._last is None:
            self.profile()
        write_trace_ranks(self._last[0], path)


def _shards(attrs) -> dict[int, tuple[int, int]]:
    """Position -> (axis, groups) of the argument or result attributes carrying `geir.shard`."""
    out = {}
    for i, d in enumerate(attrs):
        shard = d.data.get(attr_names.SHARD)
        if shard is not None:
            axis, groups = shard.get_values()
            out[i] = (axis, groups)
    return out


def busy_us(sim) -> float:
    """The time the device is working on compute kernels (not collectives): the union of
    their intervals from launch to end (a launch's overhead is the device's work too)."""
    spans = sorted((k.start_us, k.end_us) for k in sim.kernels if k.collective is None and k.end_us > k.start_us)
    total, end = 0.0, float("-inf")
    for a, b in spans:
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def pipeline_figures(sims, micro_batches: int, specs) -> dict[str, Any]:
    """The pipeline's throughput and bubble: measured on the timeline - the fraction of the
    devices' time (from the start to the last device's end) no compute kernel is executing -
    and the formula's (p - 1) / (m + p - 1) for p stages and m micro-batches (equal stages,
    transfers free)."""
    latency = max(s.latency_us for s in sims)
    p, m = len(sims), micro_batches
    busy = [busy_us(s) for s in sims]
    samples = m * (specs[0][1][0] if specs and specs[0][1] else 1)
    return {
        "pipeline_stages": p, "micro_batches": m, "samples": samples,
        "throughput_per_s": samples / latency * 1e6 if latency else 0.0,
        "stage_busy_us": busy,
        "bubble_measured": 1.0 - sum(busy) / (p * latency) if latency else 0.0,
        "bubble_formula": (p - 1) / (m + p - 1),
    }


def check_ranks(ranks: int, server: str, what: str = "tensor_parallel") -> None:
    from geir.target.server import load_server

    spec = load_server(server)
    if ranks > spec.devices:
        raise GeirError(f"{what}={ranks} needs more devices than {spec.name} has ({spec.devices})")


__all__ = ["DistributedModel", "DEFAULT_SERVER", "busy_us", "check_ranks", "pipeline_figures"]
