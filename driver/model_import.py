"""A model as the graph dialect, whatever form it is given in (geir.compile, geir.quantize).

`model` is an onnx.ModelProto, a path, ONNX bytes, a torch.nn.Module with `example_inputs`
(traced to its ATen graph, or captured by torch.export, and imported by frontend/fx.py; or, with
`torch_frontend="onnx"`, exported to ONNX by the TorchScript exporter; torch is optional), a
torch.export.ExportedProgram (its torch.export.Dims are shape ranges: geir.compile compiles them
at their tops, the importer computing the sizes its views read from the inputs'), graph-level
MLIR (a ModuleOp or a `.mlir` file), or a GraphBuilder (frontend/builder.py: its finished
module).
"""

from __future__ import annotations

import contextlib
import linecache
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import onnx
from xdsl.dialects.builtin import ModuleOp

from geir.dialects import make_context
from geir.errors import GeirError


TORCH_FRONTENDS = ("fx", "onnx")
"""How a torch.nn.Module is imported: traced (or torch.export) + the ATen importer, or ONNX."""


def torch_module(model: Any) -> bool:
    try:
        import torch
    except ImportError:
        return False
    return isinstance(model, torch.nn.Module)


def exported_program(model: Any) -> bool:
    """`model` is a torch.export.ExportedProgram (torch being imported implies it)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.export.ExportedProgram)


def _user_dims(ep: Any) -> dict[str, list[Any]]:
    """Per user input of an ExportedProgram, its dims: an int, or the sympy symbol of a
    symbolic dim (torch.export.Dim); a derived dim (`2 * batch`) is refused."""
    import sympy

    names = set(ep.graph_signature.user_inputs)
    dims = {}
    for node in ep.graph.nodes:
        if node.op != "placeholder" or node.name not in names:
            continue
        val = node.meta.get("val")
        if not hasattr(val, "shape"):
            raise GeirError(f"the ExportedProgram's input '{node.name}' is not a tensor; geir compiles tensor inputs")
        dims[node.name] = []
        for axis, d in enumerate(val.shape):
            if isinstance(d, int):
                dims[node.name].append(d)
                continue
            expr = d.node.expr
            if not isinstance(expr, sympy.Symbol):
                raise GeirError(f"the ExportedProgram's input '{node.name}' dim {axis} is {expr}, derived from "
                                f"another dim; geir's shape ranges take a dim of its own (torch.export.Dim)")
            dims[node.name].append(expr)
    return dims


def exported_input_shape(ep: Any) -> str | None:
    """The input_shape of an ExportedProgram's symbolic dims (`x:1~8,3,64,64`), each ranged by
    its torch.export.Dim's min and max (from 1: a dim of size 0 has no program), or None when
    every dim is static. A dim without a max is an error: the range's top sizes the memory plan."""
    from geir.driver.dynamic_shapes import format_input_shape

    dims = _user_dims(ep)
    shapes: dict[str, list[int | tuple[int, int]]] = {}
    for name, shape in dims.items():
        sizes = shapes[name] = []
        for axis, d in enumerate(shape):
            if isinstance(d, int):
                sizes.append(d)
                continue
            vr = ep.range_constraints.get(d)
            if vr is None or not vr.upper.is_Integer:  # torch's int_oo: no max
                raise GeirError(f"the ExportedProgram's input '{name}' dim {axis} ({d}) has no upper bound: export "
                                f"it with torch.export.Dim(..., max=N), or give input_shape (a range lo~hi, or "
                                f"gears)")
            sizes.append((max(int(vr.lower), 1), int(vr.upper)))
    return format_input_shape(shapes) if any(not isinstance(d, int) for shape in dims.values() for d in shape) else None


def exported_dim_params(ep: Any) -> dict[str, list[str | None]]:
    """Per user input of an ExportedProgram, the symbol of each dim (None: a static dim):
    inputs sharing a torch.export.Dim share a symbol, so a shape range makes them one dim."""
    return {name: [None if isinstance(d, int) else str(d) for d in shape] for name, shape in _user_dims(ep).items()}


def _symbol_sizes(ep: Any, input_shapes: Mapping[str, Sequence[int]]) -> dict[Any, int]:
    """Each symbolic dim of an ExportedProgram at the size input_shape gives it (a gear, or a
    shape range's top): geir's programs have static shapes."""
    dims = _user_dims(ep)
    unknown = sorted(set(input_shapes) - set(dims))
    if unknown:
        raise GeirError(f"input_shape names {', '.join(repr(n) for n in unknown)}; the ExportedProgram's inputs are "
                        f"{', '.join(dims)}")
    sizes: dict[Any, int] = {}
    for name, shape in dims.items():
        size = tuple(input_shapes.get(name, ()))
        if name not in input_shapes and any(not isinstance(d, int) for d in shape):
            raise GeirError(f"input_shape gives no shape for '{name}', whose dims are {[str(d) for d in shape]}")
        if name not in input_shapes:
            continue
        if len(size) != len(shape) or any(isinstance(d, int) and d != s for d, s in zip(shape, size)):
            raise GeirError(f"input_shape gives '{name}' the shape {list(size)}; the ExportedProgram's is "
                            f"{[str(d) for d in shape]} (only its symbolic dims may be set)")
        for d, s in zip(shape, size):
            if not isinstance(d, int) and sizes.setdefault(d, s) != s:
                raise GeirError(f"input_shape gives the ExportedProgram's dim {d} two sizes, {sizes[d]} and {s} "
                                f"(inputs sharing a torch.export.Dim have one size)")
    return sizes


def export_with_ranges(model: Any, example_inputs: Sequence[Any] | None,
                       ranges: Mapping[str, Mapping[int, tuple[int, int]]]) -> Any:
    """A torch module as an ExportedProgram whose ranged dims (input_shape's `lo~hi`) are
    torch.export.Dims: its views then compute their sizes from the inputs', as shape ranges
    need (a trace at fixed sizes writes them as numbers). Positions given the same range share
    one Dim (a batch that several inputs have). Traced at the ranges' tops."""
    import torch

    tops = {}
    for name, axes in ranges.items():
        shape = dict(enumerate(_input_shapes(model, example_inputs).get(name, ())))
        shape.update({axis: hi for axis, (lo, hi) in axes.items()})
        tops[name] = tuple(shape[i] for i in range(len(shape)))
    inputs = _shaped_inputs(model, example_inputs, tops)
    names = list(_input_shapes(model, inputs))
    dims: dict[tuple[int, int], Any] = {}
    spec = {}
    for name in names:
        axes = ranges.get(name, {})
        spec[name] = {axis: dims.setdefault(rng, torch.export.Dim(f"d{len(dims)}", min=rng[0], max=rng[1]))
                      for axis, rng in axes.items()} or None
    try:
        with _capture():
            return torch.export.export(model.eval(), inputs, dynamic_shapes=spec)
    except Exception as e:  # noqa: BLE001 - a range the model's code does not allow: torch's words
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise GeirError(f"torch.export could not export the module with input_shape's ranges as torch.export.Dims: "
                        f"{first}") from None


def _input_shapes(model: Any, example_inputs: Sequence[Any] | None) -> dict[str, tuple[int, ...]]:
    """A torch module's example inputs' shapes by the forward's parameter names."""
    import inspect

    if example_inputs is None:
        raise GeirError("a torch.nn.Module needs example_inputs to be captured (torch.export)")
    try:
        names = list(inspect.signature(model.forward).parameters)[:len(example_inputs)]
    except (TypeError, ValueError):
        names = []
    return {n: tuple(getattr(x, "shape", ())) for n, x in zip(names, example_inputs)}


def _shaped_inputs(model: Any, example_inputs: Sequence[Any] | None,
                   input_shapes: Mapping[str, Sequence[int]]) -> tuple[Any, ...]:
    """A torch module's example inputs at the sizes input_shape gives (a gear, or a shape
    range's top), by the forward's parameter names: zeros where a size changes (the capture
    reads shapes and dtypes only)."""
    import torch

    inputs = list(example_inputs or ())
    names = list(_input_shapes(model, example_inputs))
    unknown = sorted(set(input_shapes) - set(names))
    if unknown:
        raise GeirError(f"input_shape names {', '.join(repr(n) for n in unknown)}; the module's inputs are "
                        f"{', '.join(names) or 'not named (its forward has no signature Python can read)'}")
    for i, name in enumerate(names):
        x = inputs[i]
        size = tuple(input_shapes.get(name, getattr(x, "shape", ())))
        if not isinstance(x, torch.Tensor) or tuple(x.shape) == size:
            continue
        if len(size) != x.dim():
            raise GeirError(f"input_shape gives '{name}' {len(size)} dims; its example input has {x.dim()}")
        inputs[i] = torch.zeros(size, dtype=x.dtype)
    return tuple(inputs)


def _has_shapes(module: ModuleOp, input_shapes: Mapping[str, Sequence[int]]) -> bool:
    from geir.runtime.interpreter import input_specs

    shapes = {name: tuple(shape) for name, shape, _ in input_specs(module)}
    return all(shapes.get(n) == tuple(s) for n, s in input_shapes.items())


def _lazy_graph_modules():
    """torch.export writes its graphs' Python code (`GraphModule.recompile`) several times per
    capture; the importer reads the graph, never runs that code. A lazy graph module writes it
    on its first call only: 10% of a capture of the test models (torch's own switch, private;
    without it the capture is as before)."""
    try:
        from torch.fx._lazy_graph_module import _use_lazy_graph_module

        return _use_lazy_graph_module(True)
    except (ImportError, TypeError):  # another torch: its switch moved or changed
        return contextlib.nullcontext()


@contextlib.contextmanager
def _user_lines_only():
    """torch.export records each node's whole Python stack, symbolized and formatted (some 70
    frames a node); the importer reads one frame of it, the model's own line
    (frontend/fx.py `source_line`: the innermost frame outside torch). With torch's traces
    off (`torch.fx.config.do_not_emit_stack_traces`) each node gets that frame alone, found by
    walking the live frames outward - the same line, at a fraction of the capture's time
    (bench/torch_frontend.py). Where this torch lacks the switch or the hook, its own traces
    are kept."""
    try:
        import torch.fx.config as fx_config
        from torch.fx.proxy import TracerBase

        create = TracerBase.create_node
        fx_config.do_not_emit_stack_traces  # noqa: B018 - the switch must exist
    except (ImportError, AttributeError):
        yield
        return
    torch_dir = os.path.dirname(os.path.dirname(fx_config.__file__)) + os.sep

    def create_node(self, *args, **kwargs):
        node = create(self, *args, **kwargs)
        if node.op == "call_function" and not node.stack_trace:  # placeholders are the tracer's own
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename.startswith(torch_dir):
                frame = frame.f_back
            if frame is not None and frame.f_code.co_filename != __file__:  # not made by the model's code
                code = frame.f_code
                line = linecache.getline(code.co_filename, frame.f_lineno).strip()
                node.stack_trace = f'  File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}\n    {line}'
        return node

    before = fx_config.do_not_emit_stack_traces
    fx_config.do_not_emit_stack_traces = True
    TracerBase.create_node = create_node
    try:
        yield
    finally:
        TracerBase.create_node = create
        fx_config.do_not_emit_stack_traces = before


def trace_module(model: Any, example_inputs: Sequence[Any]) -> tuple[Any, dict, dict] | None:
    """The module's pre-dispatch ATen graph, traced on fake tensors without torch.export's
    wrapping: (graph module, {placeholder: input name}, {placeholder: (name, tensor)}).

    torch.export runs this same trace (make_fx over the module called with its parameters and
    buffers as arguments) inside layers a static eval-mode graph does not need: a torch-function
    mode over every call, the program's signature and verification. Traced directly, the graph
    is the same, op for op and name for name, in some 60% of the time (bench/torch_frontend.py).
    The inputs are named as torch.export names them, by the forward's parameters. None where
    torch.export is needed: an input that is not a tensor, a forward taking `*args`, or a trace
    that fails (torch.export then says why, in its words)."""
    import inspect

    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    def instead(why: str) -> None:
        logging.getLogger("geir.torch").debug("capturing the module with torch.export instead: %s", why)

    if not all(isinstance(x, torch.Tensor) for x in example_inputs):
        return instead("an example input is not a tensor")
    try:
        params = list(inspect.signature(model.forward).parameters.values())[:len(example_inputs)]
    except (TypeError, ValueError):  # a forward without a signature Python can read
        return instead("the forward's signature cannot be read")
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(params) < len(example_inputs) or any(p.kind not in positional for p in params):
        return instead("the inputs are not the forward's positional parameters")
    unread = _unread_buffers(model)
    state = {n: t for n, t in (*model.named_parameters(), *model.named_buffers()) if n not in unread}
    names = list(state)

    def forward(*args):
        return torch.func.functional_call(model, dict(zip(names, args[:len(names)])), args[len(names):])

    try:
        # an inference graph: no autograd records, nor version counters, while tracing (the graph
        # is the same as with gradients on; 9% of a CNN's trace against torch.no_grad)
        with torch.inference_mode():
            gm = make_fx(forward, tracing_mode="fake", pre_dispatch=True)(*state.values(), *example_inputs)
    except Exception as e:  # noqa: BLE001 - a data-dependent branch, ...: torch.export's message says it better
        return instead(f"the trace failed: {type(e).__name__}")
    inputs = {len(names) + i: p.name for i, p in enumerate(params)}
    return gm, inputs, {i: (n, state[n]) for i, n in enumerate(names)}


def _unread_buffers(model: Any) -> set[str]:
    """Buffers an eval-mode forward never reads: a batch norm's num_batches_tracked (counted
    in training only). Each tensor the trace takes costs as much as an op (a fake tensor and a
    placeholder); ResNet-style CNNs carry one per batch norm. One not given stays the module's
    own, so were it read after all the trace would hold it as an attribute, and torch.export
    would capture the module instead (`import_traced`)."""
    from torch.nn.modules.batchnorm import _BatchNorm

    return {f"{prefix}.num_batches_tracked" if prefix else "num_batches_tracked"
            for prefix, m in model.named_modules() if isinstance(m, _BatchNorm) and not m.training}


def import_torch(model: Any, example_inputs: Sequence[Any] | None, weights: bool = True,
                 verify: bool = True, fold_batch_norm: bool = False) -> ModuleOp:
    """A torch.nn.Module (static shapes, eval mode) traced (`trace_module`) and imported by
    frontend/fx.py, or, where that graph does not import as it is, captured by torch.export.
    `verify=False` leaves the module-wide verification to the caller (GraphBuilder.finish);
    `fold_batch_norm` folds conv -> batch norm pairs as they are read (FxImporter.batch_norm_fold)."""
    import torch

    from geir.frontend.fx import FxImportError
    from geir.frontend.fx_export import import_exported, import_traced

    if example_inputs is None:
        raise GeirError("a torch.nn.Module needs example_inputs to be captured (torch.export)")
    inputs = tuple(example_inputs)
    with _capture(), _values_only():  # not torch.export's capture: its passes may read tensor_meta
        traced = trace_module(model.eval(), inputs)
    module = (import_traced(*traced, weights=weights, verify=verify, fold_batch_norm=fold_batch_norm)
              if traced is not None else None)
    if module is not None:
        return module
    try:
        with _capture():
            ep = torch.export.export(model, inputs)
    except Exception as e:  # torch's capture failing (a data-dependent branch, ...): its message
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise FxImportError(f"torch.export could not capture the model: {first} (torch.compile(model, "
                            f"backend=\"geir\") runs the pieces around a graph break)") from None
    return import_exported(ep, weights=weights, verify=verify, fold_batch_norm=fold_batch_norm)


@contextlib.contextmanager
def _values_only():
    """make_fx records two descriptions of each node's result: the FakeTensor (`meta["val"]`,
    what the importer reads) and, "best effort" in torch's words, a `tensor_meta` (shape,
    strides, contiguity per memory format, quantization) that nothing here reads. Its
    contiguity tests run through the trace's torch-function modes, once per parameter too:
    some 13% of a CNN's trace (bench/torch_frontend.py). Skipped while geir traces (torch's
    private function, left as it is where this torch has another)."""
    try:
        from torch.fx.experimental import proxy_tensor
    except ImportError:
        yield
        return
    extract = getattr(proxy_tensor, "_extract_tensor_metadata", None)
    if extract is None:
        yield
        return
    proxy_tensor._extract_tensor_metadata = lambda *args, **kwargs: None
    try:
        yield
    finally:
        proxy_tensor._extract_tensor_metadata = extract


@contextlib.contextmanager
def _capture():
    """How torch traces a module here: lazy graph modules, the model's lines only, and torch's
    notes about its own internals (FutureWarning) silenced."""
    import warnings

    with warnings.catch_warnings(), _lazy_graph_modules(), _user_lines_only():
        warnings.simplefilter("ignore", FutureWarning)
        yield


def to_onnx(model: Any, example_inputs: Sequence[Any] | None) -> onnx.ModelProto | str | Path | bytes:
    if isinstance(model, onnx.ModelProto | str | Path | bytes):
        return model
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and isinstance(model, torch.nn.Module):
        if example_inputs is None:
            raise GeirError("a torch.nn.Module needs example_inputs to be exported to ONNX")
        import io
        import warnings

        f = io.BytesIO()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(model.eval(), tuple(example_inputs), f, dynamo=False, opset_version=17)
        except Exception as e:  # the TorchScript exporter failing on the model: its message
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise GeirError(f"torch.onnx.export (TorchScript) could not export the model: {first} "
                            f"(the default torch_frontend=\"fx\" captures it with torch.export)") from None
        return f.getvalue()
    raise GeirError(f"cannot compile a {type(model).__name__}: give an onnx.ModelProto, a path, bytes, a "
                    f"torch.nn.Module or a torch.export.ExportedProgram")


def import_graph(model: Any, example_inputs: Sequence[Any] | None = None,
                 freeze: Mapping[str, Any] | None = None, weights: bool = True,
                 torch_frontend: str = "fx", input_shapes: Mapping[str, Sequence[int]] | None = None,
                 verify: bool = True, fold_batch_norm: bool = False) -> ModuleOp:
    """The graph-level module of a model: imported from ONNX (`freeze`: graph inputs made
    constants first, frontend/onnx.py freeze_inputs; `weights=False`: weights as shape-only
    placeholders, none read), from a torch.nn.Module (`torch_frontend`: "fx" or "onnx") or a
    torch.export.ExportedProgram, or graph-level MLIR as it is. `input_shapes`: static shapes
    for the graph inputs' dynamic dims (ATC's input_shape): an ONNX model's, a torch module's
    (its example inputs at those sizes), an ExportedProgram's symbolic dims. The torch importer
    verifies its module unless `verify=False` (geir.compile verifies every stage itself; the
    ONNX importer leaves it to the caller always), and with `fold_batch_norm` (for a pipeline
    that runs graph-simplify) folds each conv -> inference batch norm pair as it reads it, as
    torch's ONNX exporter does."""
    from geir.frontend.builder import GraphBuilder
    from geir.frontend.onnx import import_model
    from geir.ir.text import parse_module
    from geir.dialects.ascend import is_ascend_module

    if torch_frontend not in TORCH_FRONTENDS:
        raise GeirError(f"torch_frontend must be one of {', '.join(TORCH_FRONTENDS)}, not {torch_frontend!r}")
    onnx_model = isinstance(model, onnx.ModelProto | bytes) or (
        isinstance(model, str | Path) and Path(model).suffix != ".mlir")
    if exported_program(model):
        from geir.frontend.fx_export import import_exported

        if freeze:
            raise GeirError("freeze makes ONNX graph inputs constants; an ExportedProgram's constants are its "
                            "parameters and buffers")
        if not input_shapes and exported_input_shape(model) is not None:  # geir.compile gives the ranges' tops
            raise GeirError("the ExportedProgram has symbolic dims: compile it with geir.compile (a shape range "
                            "per torch.export.Dim) or give input_shape")
        return import_exported(model, weights=weights, verify=verify, fold_batch_norm=fold_batch_norm,
                               sizes=_symbol_sizes(model, input_shapes) if input_shapes else None)
    if input_shapes and torch_module(model):  # a gear or a shape range's top: the inputs at those sizes
        example_inputs, input_shapes = _shaped_inputs(model, example_inputs, input_shapes), None
    if input_shapes and isinstance(model, ModuleOp) and _has_shapes(model, input_shapes):
        input_shapes = None  # graph-level IR at a shape range's top (the torch backend's, shape_operand's views)
    if input_shapes and not onnx_model:
        raise GeirError("input_shape and gears set the dynamic input dims of an ONNX model, a torch module or an "
                        "ExportedProgram; this model's shapes are fixed")
    if torch_frontend == "fx" and torch_module(model):
        if freeze:
            raise GeirError("freeze makes ONNX graph inputs constants; a torch module's constants are its "
                            "parameters and buffers")
        return import_torch(model, example_inputs, weights, verify, fold_batch_norm)
    if isinstance(model, str | Path) and Path(model).suffix == ".mlir":
        model = parse_module(Path(model).read_text(), make_context(), str(model))
    if isinstance(model, GraphBuilder):
        model = model.finish()
    if isinstance(model, ModuleOp):
        if freeze:
            raise GeirError("freeze makes ONNX graph inputs constants; this model is MLIR")
        if not weights:
            raise GeirError("weights=False imports an ONNX model's weights as shape-only placeholders; this model "
                            "is MLIR: give its weights as placeholders (GraphBuilder.weight(name, shape=, dtype=))")
        if is_ascend_module(model):
            raise GeirError("geir.compile takes graph-level IR; this module is already an ascend program")
        return model.clone()
    return import_model(to_onnx(model, example_inputs), freeze=freeze, weights=weights, input_shapes=input_shapes)
