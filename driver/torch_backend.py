"""`torch.compile(model, backend="geir", options={...})`: PyTorch's compiler interface into geir.

    import torch
    fn = torch.compile(model, backend="geir", options={"opt_level": 3})
    with torch.no_grad():
        y = fn(x)                       # torch tensors in and out; numbers from geir's interpreter
    geir_pieces()[-1].last_report      # the modeled device's report of the last call (profile=True)
    step_report(batch=8)               # a training step's forward and backward as one report

The backend is registered under the entry-point group torch discovers
(`torch_dynamo_backends` in pyproject.toml), so no import is needed. Dynamo hands it each graph
it captured (several when the model has graph breaks: each piece is compiled, and Python runs
between them as usual); AOTAutograd decomposes the graph to core ATen; frontend/fx.py imports it
and `geir.compile` compiles it. Parameters and buffers are constants of the program (GE's
graphs hold their weights too): each call checks they are still the tensors compiled, at the
same version, and recompiles - counted, with the reason - when one changed.

With `dynamic=True` (or `torch._dynamo.mark_dynamic`), dynamo's graph has symbolic sizes; the
piece then compiles one static program per input shape a call brings (traced again at those
sizes; GE's gears, made on demand) and keeps them in `programs`: dynamo does not recompile.
`dynamic_mode="range"` compiles one program for every size in dynamo's ranges instead (each
symbolic dim needs a max: `mark_dynamic(x, 0, max=N)`), a RangeModel (driver/shape_ranges.py).

When dynamo compiles a frame again (a guard failed: another shape without dynamic=True, a
changed global), the new piece's `guard_failure` says which guard, and the `geir.torch` logger
logs it.

Options are geir.compile's (device, opt_level, precision_mode, fusion, ...), plus `profile`
(run through the modeled device's profiler and keep its report) and `dynamic_mode` ("gears" or
"range", above). An unknown option is an
error. A call that needs gradients (an input that requires grad, with grad mode on) is a
training step: AOTAutograd's forward and backward graphs are both compiled by geir (pieces of
kind "forward" and "backward") and run as one autograd.Function, the weights as inputs.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from geir.errors import GeirError

_PIECES: list[weakref.ref] = []
_GUARD_FAILURES_SEEN: dict[Any, int] = {}  # code -> dynamo guard failures already attributed
_log = logging.getLogger("geir.torch")


@dataclass
class GeirPiece:
    """One graph dynamo captured and geir compiled: the compiled model, how often it ran,
    the recompiles and why, the report of the last profiled call."""

    graph: Any                      # the core-ATen FX graph
    inputs: dict[int, str]          # placeholder -> input name
    constants: dict[int, str]       # placeholder -> parameter / buffer name
    options: dict[str, Any]
    profile: bool = False
    dynamic: bool = False           # symbolic sizes: one program per shape seen (`programs`)
    ranged: bool = False            # dynamic_mode="range": one program for the sizes' ranges instead
    kind: str = "forward"           # or "backward" (a training step's second graph)
    slots: list[bool] = field(default_factory=list)  # per output: a tensor (else None, a gradient not needed)
    compiled: Any = None            # geir.CompiledModel (of the last call's shape)
    programs: dict[tuple, Any] = field(default_factory=dict)  # shape key -> CompiledModel
    calls: int = 0
    recompiles: list[str] = field(default_factory=list)
    last_report: dict | None = None
    guard_failure: str | None = None  # why dynamo compiled this graph again (None: its first compile)
    graph_id: int = 0               # the dynamo graph it came from: a training step's forward and backward share it
    _versions: dict[int, tuple[int, int]] = field(default_factory=dict)

    def key(self, args: Sequence[Any]) -> tuple:
        """What a program is specialised to: the inputs' shapes and dtypes (and the sizes
        dynamo passes as ints); () for a static piece."""
        if not self.dynamic or self.ranged:
            return ()
        return tuple((tuple(a.shape), str(a.dtype)) if hasattr(a, "shape") else a
                     for i, a in enumerate(args) if i not in self.constants)

    def compile(self, args: Sequence[Any]) -> None:
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        from geir.driver.compile import compile as geir_compile
        from geir.frontend.fx import import_aten_graph

        with unset_fake_temporarily():  # AOTAutograd compiles under a fake mode; the weights are real
            if self.dynamic and self.ranged:
                self.compiled = self.programs[()] = self._range_program(args)
            else:
                graph = self.graph
                if self.dynamic:  # the same ATen graph traced again at these sizes: static shapes
                    from torch.fx.experimental.proxy_tensor import make_fx

                    graph = make_fx(self.graph, tracing_mode="fake")(*args)
                    graph.graph.eliminate_dead_code()
                module = import_aten_graph(graph, self.inputs, {i: (n, args[i]) for i, n in self.constants.items()},
                                           verify=False)  # geir.compile verifies its first stage
                self.compiled = self.programs[self.key(args)] = geir_compile(module, **self.options)
        self._versions = {i: (id(args[i]), args[i]._version) for i in self.constants}

    def _range_program(self, args: Sequence[Any]) -> Any:
        """One RangeModel for every size dynamo's ranges allow (driver/shape_ranges.py): the
        graph imported at each symbol's top, its views computing their sizes from the inputs'
        (FxImporter.shape_operand), each symbol one range dim."""
        from geir.driver.compile import compile as geir_compile
        from geir.driver.dynamic_shapes import format_input_shape
        from geir.frontend.fx import import_aten_graph

        placeholders = [n for n in self.graph.graph.nodes if n.op == "placeholder"]
        tops: dict[Any, int] = {}
        shapes: dict[str, list[int | tuple[int, int]]] = {}
        params: dict[str, list[str | None]] = {}
        for i, name in self.inputs.items():
            val = placeholders[i].meta["val"]
            dims, params[name] = shapes.setdefault(name, []), []
            for d in val.shape:
                if isinstance(d, int):
                    dims.append(d)
                    params[name].append(None)
                    continue
                expr = d.node.expr
                vr = d.node.shape_env.var_to_range.get(expr)
                if not expr.is_Symbol or vr is None or not vr.upper.is_Integer:
                    raise GeirError(f"dynamic_mode=\"range\": input '{name}' dim {len(dims)} ({expr}) has no upper "
                                    f"bound: mark it with torch._dynamo.mark_dynamic(x, dim, max=N)")
                tops[expr] = int(vr.upper)
                dims.append((max(int(vr.lower), 1), int(vr.upper)))
                params[name].append(str(expr))
        module = import_aten_graph(self.graph, self.inputs, {i: (n, args[i]) for i, n in self.constants.items()},
                                   verify=False, sizes=tops)
        ranges = {"input_shape": format_input_shape(shapes), "_dim_params": params} if tops else {}
        return geir_compile(module, **ranges, **self.options)

    def __call__(self, *args: Any) -> list:
        import torch

        from geir.frontend.fx import to_numpy

        changed = [self.constants[i] for i, v in self._versions.items() if (id(args[i]), args[i]._version) != v]
        if changed:
            self.recompiles.append(f"parameter or buffer changed: {', '.join(changed)}")
            self.programs.clear()
        if self.key(args) not in self.programs:
            self.compile(args)
        self.compiled = self.programs[self.key(args)]
        self.calls += 1
        feeds = {name: to_numpy(args[i]) for i, name in self.inputs.items()}
        if self.profile:
            outputs, self.last_report = self.compiled.profile(feeds)
        else:
            outputs = self.compiled.run(feeds)
        values = iter(outputs.values())
        # np.require, not np.ascontiguousarray: that makes a 0-d result (a loss) 1-d
        return [torch.from_numpy(np.require(next(values), requirements="C")) if tensor else None
                for tensor in (self.slots or [True] * len(outputs))]


def geir_pieces() -> list[GeirPiece]:
    """The pieces compiled in this process that are still alive, oldest first."""
    live = [p() for p in _PIECES]
    return [p for p in live if p is not None]


def step_report(pieces: Sequence[GeirPiece] | None = None, batch: int | None = None) -> dict:
    """The last profiled training step as one report: the newest backward piece's last call
    and the forward piece of the same dynamo graph (AOTAutograd runs the forward, then the
    backward, one after the other). Latency, kernels, launches and HBM / L2 bytes are the
    sums of the two graphs'; `peak_memory_bytes` is the larger graph's own peak (each counts its
    inputs, outputs, constants and workspace; torch's optimizer state is not in either);
    `samples_per_s` when `batch` is given. The two reports are kept whole under "forward" and
    "backward". An error when no training step was profiled (options={"profile": True})."""
    pieces = list(geir_pieces() if pieces is None else pieces)
    backward = next((p for p in reversed(pieces) if p.kind == "backward" and p.last_report is not None), None)
    forward = backward and next((p for p in reversed(pieces) if p.kind == "forward" and
                                 p.graph_id == backward.graph_id and p.last_report is not None), None)
    if forward is None:
        raise GeirError("no profiled training step: compile with options={\"profile\": True} and run a step "
                        "that needs gradients")
    fw, bw = forward.last_report, backward.last_report
    latency = fw["latency_us"] + bw["latency_us"]
    report = {"latency_us": latency,
              **{key: fw[key] + bw[key] for key in ("kernel_count", "launch_count", "hbm_bytes", "l2_hit_bytes")},
              "peak_memory_bytes": max(fw["peak_memory_bytes"], bw["peak_memory_bytes"]),
              "steps_per_s": 1e6 / latency}
    if batch is not None:
        report["samples_per_s"] = batch * 1e6 / latency
    return {**report, "forward": fw, "backward": bw}


_GRAPHS = iter(range(1, 1 << 62))


def geir_backend(gm: Any, example_inputs: Sequence[Any], options: Mapping[str, Any] | None = None) -> Any:
    """The dynamo backend (see the module doc)."""
    import torch
    from torch._decomp import core_aten_decompositions
    from torch._functorch.aot_autograd import aot_module_simplified

    from geir.frontend.fx import decompositions, output_slots

    options = dict(options or {})
    profile = bool(options.pop("profile", False))
    dynamic_mode = options.pop("dynamic_mode", "gears")
    if dynamic_mode != "gears" and dynamic_mode != "range":
        raise GeirError(f"dynamic_mode must be \"gears\" (a static program per shape) or \"range\" (one program "
                        f"for dynamo's ranges), not {dynamic_mode!r}")
    guard_failure = _new_guard_failure()
    # A call that needs gradients: AOTAutograd splits the joint graph into a forward (which
    # also returns what the backward saves) and a backward, each compiled by geir; the weights
    # change every step, so they are inputs, not constants.
    training = torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in example_inputs)
    # Parameters and buffers dynamo lifted to graph inputs are marked static: geir's constants.
    static = set() if training else {
        i for i, t in enumerate(example_inputs)
        if isinstance(t, torch.nn.Parameter) or getattr(t, "_dynamo_static_input_type", None) is not None}
    dynamo_names = _placeholder_names(gm)
    graph_id = next(_GRAPHS)

    def compiler(kind: str) -> Any:
        def compile_graph(aten_gm: Any, fake_inputs: Sequence[Any]) -> Any:
            if kind == "forward":
                if len(fake_inputs) != len(example_inputs):
                    raise GeirError(f"the ATen graph takes {len(fake_inputs)} inputs, dynamo's {len(example_inputs)}")
                names, constants = dynamo_names, {i: dynamo_names[i] for i in static}
            else:  # the backward's inputs: saved activations and the outputs' gradients
                names, constants = [n.name for n in aten_gm.graph.nodes if n.op == "placeholder"], {}
            # dynamic=True (or mark_dynamic): sizes are symbols, passed as int inputs too; each
            # shape a call brings gets its own static program, as GE's gears.
            dynamic = any(_symbolic(t) for t in fake_inputs)
            inputs = {i: names[i] for i, t in enumerate(fake_inputs) if i not in constants and hasattr(t, "shape")}
            piece = GeirPiece(aten_gm, inputs, constants, options, profile, dynamic, dynamic_mode == "range", kind=kind,
                              slots=output_slots(aten_gm), guard_failure=guard_failure, graph_id=graph_id)
            if kind == "forward" and not dynamic:  # else on the first call (the backward's inputs are fake here)
                piece.compile(example_inputs)
            _PIECES[:] = [r for r in _PIECES if r() is not None]
            _PIECES.append(weakref.ref(piece))

            def run(args: Sequence[Any]) -> list:
                return piece(*args)

            run._boxed_call = True  # AOTAutograd passes the arguments as one list
            run.piece = piece
            return run

        return compile_graph

    return aot_module_simplified(gm, example_inputs, fw_compiler=compiler("forward"),
                                 bw_compiler=compiler("backward"), decompositions=decompositions(core_aten_decompositions()))


def _new_guard_failure() -> str | None:
    """The guard failure that made dynamo compile again, if one was recorded since the last
    compile (torch keeps them per code object, `torch._dynamo.utils.guard_failures`); logged
    on the `geir.torch` logger, as torchair's users ask for recompile causes."""
    from torch._dynamo.utils import guard_failures

    reasons = []
    for code, failures in list(guard_failures.items()):
        seen = _GUARD_FAILURES_SEEN.get(code, 0)
        reasons += failures[seen:]
        _GUARD_FAILURES_SEEN[code] = len(failures)
    if not reasons:
        return None
    reason = "; ".join(r.split("\n", 1)[0] for r in reasons)
    _log.info("dynamo compiles again: %s", reason)
    return reason


def _symbolic(t: Any) -> bool:
    import torch

    if isinstance(t, torch.SymInt):
        return True
    return hasattr(t, "shape") and any(not isinstance(d, int) for d in t.shape)


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
