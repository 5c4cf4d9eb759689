"""The IR after every stage of a compile, by name and in order (`CompiledModel.stages`).

A graph-level stage is a few thousand ops and is copied as it finishes. A lowered program is
tens of thousands (DenseNet-121 at batch 8: 40,000 ops, 2.2 s a copy, a third of its compile),
so the stages between the lowering and the last are not copied by default: the first look
at one replays its passes on a copy of the stage before it (the passes are deterministic;
test_api checks that a replayed stage prints as a copied one) and keeps the result. The last
stage is the live module itself. `keep_all=True` copies every stage as it finishes, for a
caller that will print them all (geir-compile's IR dumps).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from xdsl.dialects.builtin import ModuleOp

Replay = Callable[[ModuleOp], ModuleOp]
"""A stage's passes applied to a module (in place; returns it)."""


class Stages(Mapping[str, ModuleOp]):
    def __init__(self, keep_all: bool = False):
        self.keep_all = keep_all
        self._names: list[str] = []
        self._modules: dict[str, ModuleOp] = {}
        self._replays: dict[str, Replay] = {}
        self._lowered: dict[str, bool] = {}

    def add(self, name: str, module: ModuleOp, replay: Replay | None, *, lowered: bool) -> None:
        """Record stage `name`, whose result is `module` (which the next stage will change in
        place). A stage without a replay (the import, the calibration) is always copied."""
        self._names.append(name)
        self._lowered[name] = lowered
        if self.keep_all or not lowered or replay is None:
            self._modules[name] = module.clone()
        else:
            self._replays[name] = replay

    def finish(self, module: ModuleOp) -> None:
        """The compile is over: the last stage is `module` as it stands."""
        if self._names:
            self._modules[self._names[-1]] = module

    def held(self) -> list[str]:
        """The stages whose IR is at hand (copied, live or already replayed)."""
        return [n for n in self._names if n in self._modules]

    def is_lowered(self, name: str) -> bool:
        """Whether the stage's IR is a lowered program (known without building it)."""
        return self._lowered[name]

    def __getitem__(self, name: str) -> ModuleOp:
        if name in self._modules:
            return self._modules[name]
        if name not in self._lowered:
            raise KeyError(name)
        at = self._names.index(name)
        start = max(i for i in range(at) if self._names[i] in self._modules)
        module = self._modules[self._names[start]]
        for later in self._names[start + 1:at + 1]:
            module = self._replays[later](module.clone())
            module.verify()
            self._modules[later] = module
        return module

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    @classmethod
    def of(cls, modules: Mapping[str, ModuleOp]) -> Stages:
        """Stages that are all at hand (a loaded program)."""
        from geir.dialects.ascend import is_ascend_module

        stages = cls(keep_all=True)
        for name, module in modules.items():
            stages._names.append(name)
            stages._lowered[name] = is_ascend_module(module)
            stages._modules[name] = module
        return stages
