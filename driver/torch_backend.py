"""`torch.compile(model, backend="geir", options={...})`: PyTorch's compiler interface into geir.

    import torch
    fn = torch.compile(model, backend="geir", options={"opt_level": 3})
    with torch.no_grad():
        y = fn(x)                       # torch tensors in and out; numbers from geir's interpreter
    geir_pieces()[-1].last_report      # the modeled device's report of the last call (profile=True)

The backend is registered under the entry-point group torch discovers
(`torch_dynamo_backends` in pyproject.toml), so no import is needed. Dynamo hands it each graph
it captured (several when the model has graph breaks: each piece is compiled, and Python runs
between them as usual); AOTAutograd decomposes the graph to core ATen; frontend/fx.py imports it
and `geir.compile` compiles it. Parameters and buffers are constants of the program (GE's
graphs hold their weights too): each call checks they are still the tensors compiled, at the
same version, and recompiles - counted, with the reason - when one changed.

Options are geir.compile's (device, opt_level, precision_mode, fusion, ...), plus `profile`
(run through the modeled device's profiler and keep its report). An unknown option is an
error. Only inference graphs: a call that needs gradients (an input that requires grad, with
grad mode on) is an error saying to use torch.no_grad().
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from geir.errors import GeirError

_PIECES: list[weakref.ref] = []


@dataclass
class GeirPiece:
    """One graph dynamo captured and geir compiled: the compiled model, how often it ran,
    the recompiles and why, the report of the last profiled call."""

    graph: Any                      # the core-ATen FX graph
    inputs: dict[int, str]          # placeholder -> input name
    constants: dict[int, str]       # placeholder -> parameter / buffer name
    options: dict[str, Any]
    profile: bool = False
    compiled: Any = None            # geir.CompiledModel
    calls: int = 0
    recompiles: list[str] = field(default_factory=list)
    last_report: dict | None = None
    _versions: dict[int, tuple[int, int]] = field(default_factory=dict)

    def compile(self, args: Sequence[Any]) -> None:
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        from geir.driver.compile import compile as geir_compile
        from geir.frontend.fx import import_aten_graph

        with unset_fake_temporarily():  # AOTAutograd compiles under a fake mode; the weights are real
            module = import_aten_graph(self.graph, self.inputs,
                                       {i: (n, args[i]) for i, n in self.constants.items()})
            self.compiled = geir_compile(module, **self.options)
        self._versions = {i: (id(args[i]), args[i]._version) for i in self.constants}

    def __call__(self, *args: Any) -> list:
        import torch

        changed = [self.constants[i] for i, v in self._versions.items() if (id(args[i]), args[i]._version) != v]
        if changed:
            self.recompiles.append(f"parameter or buffer changed: {', '.join(changed)}")
            self.compile(args)
        self.calls += 1
        feeds = {name: _numpy(args[i]) for i, name in self.inputs.items()}
        if self.profile:
            outputs, self.last_report = self.compiled.profile(feeds)
        else:
            outputs = self.compiled.run(feeds)
        return [torch.from_numpy(np.ascontiguousarray(v)) for v in outputs.values()]


def geir_pieces() -> list[GeirPiece]:
    """The pieces compiled in this process that are still alive, oldest first."""
    live = [p() for p in _PIECES]
    return [p for p in live if p is not None]


def geir_backend(gm: Any, example_inputs: Sequence[Any], options: Mapping[str, Any] | None = None) -> Any:
    """The dynamo backend (see the module doc)."""
    import torch
    from torch._decomp import core_aten_decompositions
    from torch._functorch.aot_autograd import aot_module_simplified

    options = dict(options or {})
    profile = bool(options.pop("profile", False))
    if torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in example_inputs):
        raise GeirError("torch.compile(backend='geir') compiles inference graphs: call the model under "
                        "torch.no_grad() or torch.inference_mode()")
    # Parameters and buffers dynamo lifted to graph inputs are marked static: geir's constants.
    static = {i for i, t in enumerate(example_inputs)
              if isinstance(t, torch.nn.Parameter) or getattr(t, "_dynamo_static_input_type", None) is not None}
    names = _placeholder_names(gm)

    def forward_compiler(aten_gm: Any, fake_inputs: Sequence[Any]) -> Any:
        if len(fake_inputs) != len(example_inputs):
            raise GeirError(f"the ATen graph takes {len(fake_inputs)} inputs, dynamo's {len(example_inputs)}")
        inputs = {i: names[i] for i in range(len(example_inputs)) if i not in static}
        piece = GeirPiece(aten_gm, inputs, {i: names[i] for i in static}, options, profile)
        piece.compile(example_inputs)
        _PIECES.append(weakref.ref(piece))

        def run(args: Sequence[Any]) -> list:
            return piece(*args)

        run._boxed_call = True  # AOTAutograd passes the arguments as one list
        run.piece = piece
        return run

    return aot_module_simplified(gm, example_inputs, fw_compiler=forward_compiler,
                                 decompositions=core_aten_decompositions())


def _placeholder_names(gm: Any) -> list[str]:
    """Names for dynamo's graph inputs: its placeholders' (`l_x_`, `l_self_modules_fc_parameters_weight_`)
    made readable (`x`, `fc.weight`)."""
    out = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        name = node.name.removeprefix("l_").removesuffix("_")
        for old, new in (("self_modules_", ""), ("_modules_", "."), ("_parameters_", "."), ("_buffers_", ".")):
            name = name.replace(old, new)
        out.append(name)
    return out


def _numpy(t: Any) -> np.ndarray:
    from geir.frontend.fx import to_numpy

    return to_numpy(t)
