"""A model compiled for several input shapes (gears): one static program per gear.

    cm = geir.compile("model.onnx", input_shape="x:-1,3,224,224", dynamic_batch_size="1,2,4,8")
    cm.run({"x": x})              # the gear whose shapes x has exactly (else an error)
    cm.gear_report()              # per gear: modeled latency, peak memory, compile seconds
    cm.save("model.om")           # one offline model: every gear, each weight once

Each gear is compiled with every static optimisation (driver/compile.py, the gear's shapes
given to the importer). The gears share their weights (the same constants, stored once in
the offline model) and one workspace: at most one gear runs at a time, so the device needs
the largest gear's feature-map memory, not the sum (`memory()`). GE's dynamic-batch /
dynamic-image-size / dynamic-dims models work the same way (docs/dynamic-shapes.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from geir.driver.dynamic_shapes import ShapePlan, Shapes, describe
from geir.errors import GeirError


@dataclass
class GearedModel:
    """One CompiledModel per gear of `plan`, in the order the option listed them."""

    plan: ShapePlan
    programs: list[Any]
    """CompiledModel per gear."""
    compile_seconds: dict[str, float] = field(default_factory=dict)
    """Seconds per gear, keyed by the gear as input_shape writes it."""
    padding: dict | None = None
    """With pad_to_gear: per padded dim (driver/gear_padding.py), where each output holds it;
    an input that matches no gear then runs on the smallest larger one, padded and cropped."""
    unpadded: dict = field(default_factory=dict)
    """The dims pad_to_gear could not pad, and why: an input between gears along one is an error."""

    @property
    def gears(self) -> tuple[Shapes, ...]:
        return self.plan.gears

    @property
    def options(self):
        return self.programs[0].options

    @property
    def module(self):
        """The first gear's final program (each gear's: `programs[i].module`)."""
        return self.programs[0].module

    @property
    def stage_names(self) -> list[str]:
        return self.programs[0].stage_names

    @property
    def unavailable(self) -> list[str]:
        return self.programs[0].unavailable

    @property
    def shape_only(self) -> bool:
        return self.programs[0].shape_only

    def mlir(self, stage: str | None = None, *, elide: bool = True, gear: int = 0) -> str:
        return self.programs[gear].mlir(stage, elide=elide)

    def input_specs(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        """Every input's shape, -1 where the gears differ."""
        specs = []
        for name, shape, dtype in self.programs[0].input_specs():
            sizes = [g.get(name, shape) for g in self.gears]
            specs.append((name, tuple(d if all(s[i] == d for s in sizes) else -1 for i, d in enumerate(shape)),
                          dtype))
        return specs

    def output_names(self) -> list[str]:
        return self.programs[0].output_names()

    def gear_of(self, shapes: Mapping[str, tuple[int, ...]]) -> int:
        """The gear whose input shapes `shapes` has; an error listing the gears if none."""
        for i, gear in enumerate(self.gears):
            if all(tuple(shapes.get(n, ())) == s for n, s in gear.items()):
                return i
        given = describe({n: tuple(shapes[n]) for n in self.gears[0] if n in shapes})
        listed = " | ".join(describe(g) for g in self.gears)
        raise GeirError(f"input shapes {given} match no gear; the model was compiled for {listed} "
                        f"({self.plan.option})")

    def _program(self, feeds: Mapping[str, np.ndarray]):
        return self.programs[self.gear_of({n: np.shape(v) for n, v in feeds.items()})]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run the gear the inputs' shapes select; with padding, an input between gears runs
        on the smallest larger gear, zero-padded, its outputs cropped."""
        shapes = {n: tuple(np.shape(v)) for n, v in feeds.items()}
        if self.padding is None or any(all(shapes.get(n) == s for n, s in gear.items()) for gear in self.gears):
            return self._program(feeds).run(feeds)
        gear, actual = self.padded_gear(shapes)
        padded = {n: self._pad(n, np.asarray(v), gear, actual) for n, v in feeds.items()}
        outputs = self.programs[gear].run(padded)
        for dim, size in actual.items():
            for name, c in self.padding[dim].items():
                if c is not None and size != self.gears[gear][dim[0][0]][dim[0][1]]:
                    outputs[name] = c.crop(outputs[name], size)
        return outputs

    def padded_gear(self, shapes: Mapping[str, tuple[int, ...]]) -> tuple[int, dict]:
        """The gear an input between gears pads to - the smallest (fewest input elements) whose
        every padded dim is at least the input's - and the input's size of each dim."""
        actual = {}
        for dim, why in self.unpadded.items():  # these must match a gear exactly
            sizes = {shapes[n][a] for n, a in dim if n in shapes and a < len(shapes[n])}
            if sizes and not any(all(gear[n][a] in sizes for n, a in dim) for gear in self.gears):
                raise GeirError(f"input shapes {describe({n: tuple(s) for n, s in shapes.items()})} match no gear "
                                f"and cannot be padded: {why}")
        for dim in self.padding:
            sizes = {shapes[n][a] for n, a in dim if n in shapes and a < len(shapes[n])}
            if len(sizes) > 1:
                raise GeirError(f"inputs {', '.join(f'{n} dim {a}' for n, a in dim)} are one dim in every gear; "
                                f"the inputs give it sizes {sorted(sizes)}")
            if sizes:
                actual[dim] = sizes.pop()
        fits = [i for i, gear in enumerate(self.gears)
                if all(gear[n][a] >= actual[d] for d in actual for n, a in d)
                and all(self._fits(n, shapes.get(n), s) for n, s in gear.items())]
        if not fits:
            given = describe({n: tuple(shapes[n]) for n in self.gears[0] if n in shapes})
            raise GeirError(f"input shapes {given} fit no gear, even padded; the model was compiled for "
                            f"{' | '.join(describe(g) for g in self.gears)}")
        gear = min(fits, key=lambda i: (sum(math.prod(s) for s in self.gears[i].values()), i))
        return gear, actual

    def _fits(self, name: str, shape, gear_shape) -> bool:
        """Every dim of input `name` equal to the gear's, or a padded one no larger."""
        padded = {a for dim in self.padding for n, a in dim if n == name}
        return shape is not None and len(shape) == len(gear_shape) and all(
            d == gd or (i in padded and d <= gd) for i, (d, gd) in enumerate(zip(shape, gear_shape)))

    def _pad(self, name: str, value: np.ndarray, gear: int, actual: dict) -> np.ndarray:
        widths = [(0, 0)] * value.ndim
        for dim in actual:
            for n, a in dim:
                if n == name:
                    widths[a] = (0, self.gears[gear][n][a] - value.shape[a])
        return np.pad(value, widths) if any(w for _, w in widths) else value

    def profile(self, feeds: Mapping[str, np.ndarray] | None = None, *, mode: str = "full", gear: int = 0):
        """(outputs, report) of the gear the inputs select (without inputs: of gear `gear`,
        on seeded random inputs); the report names the gear."""
        program = self.programs[gear] if feeds is None else self._program(feeds)
        outputs, report = program.profile(feeds, mode=mode)
        report["gear"] = describe(self.gears[self.programs.index(program)])
        return outputs, report

    def random_inputs(self, seed: int = 0, *, floats: bool = True, gear: int = 0) -> dict[str, np.ndarray]:
        return self.programs[gear].random_inputs(seed, floats=floats)

    def memory(self) -> dict[str, int]:
        """Device memory of the geared model: the weights once, the largest gear's inputs,
        outputs and workspace (one gear runs at a time); and what separate models would take."""
        return shared_memory(self.programs)

    def gear_report(self, mode: str = "timing") -> list[dict[str, Any]]:
        """Per gear: its shapes, modeled latency, peak memory and compile seconds (a
        timing-only run on each gear unless `mode="full"`)."""
        rows = []
        for gear, program in zip(self.gears, self.programs):
            _, report = program.profile(mode=mode)
            rows.append({"gear": describe(gear), "latency_us": report["latency_us"],
                         "peak_memory_bytes": report["peak_memory_bytes"],
                         "compile_seconds": self.compile_seconds.get(describe(gear), 0.0)})
        return rows

    @property
    def report(self) -> dict[str, Any]:
        """The first gear's report (each gear's: gear_report())."""
        return self.programs[0].report

    def manifest(self) -> dict:
        """What an offline model's manifest records of the gears (driver/om.py)."""
        def dim(d):
            return [list(x) for x in d]

        return {"option": self.plan.option, "shapes": [{n: list(s) for n, s in g.items()} for g in self.gears],
                "dynamic": {n: list(p) for n, p in self.plan.dynamic.items()},
                "padding": None if self.padding is None else [
                    {"dim": dim(d), "outputs": {n: None if c is None else [c.axis, c.inner, c.outer]
                                                for n, c in outs.items()}} for d, outs in self.padding.items()],
                "unpadded": [{"dim": dim(d), "why": why} for d, why in self.unpadded.items()]}

    @classmethod
    def from_manifest(cls, gears: dict, programs: list) -> GearedModel:
        """The GearedModel of an offline model: its manifest's `gears` and a CompiledModel per gear."""
        from geir.driver.gear_padding import Carried

        def dim(d):
            return tuple((n, a) for n, a in d)

        plan = ShapePlan(tuple({n: tuple(s) for n, s in g.items()} for g in gears["shapes"]), gears["option"],
                         {n: tuple(p) for n, p in gears["dynamic"].items()})
        padding = None if gears.get("padding") is None else {
            dim(p["dim"]): {o: None if c is None else Carried(*c) for o, c in p["outputs"].items()}
            for p in gears["padding"]}
        return cls(plan, programs, padding=padding,
                   unpadded={dim(u["dim"]): u["why"] for u in gears.get("unpadded", [])})

    def save(self, path) -> None:
        """An offline model holding every gear (driver/om.py)."""
        from pathlib import Path

        from geir.driver.om import save_om

        if Path(path).suffix != ".om":
            raise GeirError(f"a geared model is saved as one offline model (.om), not {Path(path).suffix or path}")
        save_om(self, path, gears=self)


def shared_memory(programs) -> dict[str, int]:
    """Device memory of programs that share their weights and run one at a time (gears,
    range buckets): the weights once, the largest program's inputs, outputs and workspace;
    and what the programs would take as separate models."""
    from geir.runtime.report import memory_stats

    stats = [memory_stats(p.module) for p in programs]
    return {
        "constant_bytes": max(s["constant_bytes"] for s in stats),
        "workspace_bytes": max(s["workspace_bytes"] for s in stats),
        "peak_memory_bytes": max(s["peak_memory_bytes"] for s in stats),
        "separate_models_bytes": sum(s["peak_memory_bytes"] for s in stats),
    }
