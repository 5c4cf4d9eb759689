"""A compile cache on disk: a program compiled once is loaded by the next process.

    cm = geir.compile(model, cache_dir="~/.cache/geir")      # or GEIR_CACHE_DIR=...; torch.compile's
                                                              # options={"cache_dir": ...} too
    cm.cache_hit                                              # True when it came from the cache

The key is a SHA-256 of what decides the program:
- the model, before it is imported where that can be done exactly (`source_key`: a hit then
  skips the import too): an ONNX model's serialized bytes; a torch module's traced record
  (`torch_key`); for any other model (a GraphBuilder, MLIR, an ONNX file with external data,
  a module torch's tracer refuses), the imported graph-level module's text with its weights
  elided, plus every constant's bytes;
- the compile options;
- the device's figures;
- geir's and xDSL's versions.

Changing any of them misses the cache. The value is the final program, pickled, as torch
inductor's FX graph cache keeps its artifacts. The reason is speed: parsing a lowered program
back from MLIR text takes most of what compiling it takes (ResNet-50: 7.7 s of xDSL's parser
for 14,000 ops against an 11.5 s compile), and unpickling it takes a few percent of that. A
pickle runs code when it is loaded, so the directory must be the user's own, as inductor's
is. Never point it at files from elsewhere; `geir.load` of an `.om` is the format for sharing.
A program too deeply nested to pickle is compiled and not cached (the `geir.cache` logger
says so).
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import os
import pickle
import sys
import tempfile
import threading
from importlib import metadata
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from geir.ir.collector import collector_paused

_log = logging.getLogger("geir.cache")
ENV = "GEIR_CACHE_DIR"
FORMAT = 1
"""Bumped when what an entry holds changes."""

_DEEP_STACK = 256 << 20
"""Stack of the thread that (un)pickles a long program: pickle recurses along xDSL's op lists."""


def cache_dir(option: str | os.PathLike | None) -> Path | None:
    """The directory to use: the option, else $GEIR_CACHE_DIR, else None (no cache)."""
    path = option if option is not None else os.environ.get(ENV) or None
    return Path(path).expanduser() if path else None


def source_key(model: Any, import_options: dict[str, Any], example_inputs: Any = None) -> bytes | None:
    """The bytes an ONNX model is (a ModelProto serialized, ONNX bytes, an .onnx file whose
    weights are inside it) or a torch module's `torch_key`, with the import options; None for
    another model: its key is then taken from the imported module (`key`)."""
    import onnx

    if _torch_module(model):
        data = torch_key(model, example_inputs) if example_inputs is not None else None
        if data is None:
            return None
    elif isinstance(model, onnx.ModelProto):
        data = model.SerializeToString()
    elif isinstance(model, bytes):
        data = model
    elif isinstance(model, str | os.PathLike) and Path(model).suffix == ".onnx" and Path(model).is_file():
        data = Path(model).read_bytes()
        proto = onnx.ModelProto()
        proto.ParseFromString(data)
        if any(t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer):
            return None  # the weights are in other files
    else:
        return None
    return hashlib.sha256(data).digest() + repr(sorted(import_options.items())).encode()


def torch_key(model: Any, example_inputs: Any) -> bytes | None:
    """What a torch module computes on inputs like `example_inputs`, found without the FX
    capture (whose first call in a process takes ~1.5 s, most of a small model's compile):
    torch's tracer runs the forward once and records every ATen op it runs, so every Python
    branch taken, helper called and module setting (a stride, an eps) is in the record. The key
    is that record as text, the structure of the inputs and outputs, the bytes of every tensor
    of the state dict (the record's inputs, in its order) and of every tensor constant, the
    compiled code of every Python function the forward ran outside torch (a branch the trace
    does not take, such as `if torch.jit.is_tracing()`, is in its function's code), and the
    torch and Python versions.
    Two modules with the same key compute the same function on inputs of these shapes, so
    one's program is exact for the other; an edit of their code misses. None when the module
    cannot be traced (it is then keyed by its imported graph).

    The record is the flat graph torch's ONNX exporter traces (`torch.jit._get_trace_graph`,
    the module's state as inputs), not a `torch.jit.trace` ScriptModule: that builds a script
    module per submodule, three quarters of a trace's time, and the trace function below sees
    every Python call it makes."""
    import warnings

    import torch
    from torch.utils._pytree import tree_structure

    inputs = tuple(example_inputs)
    torch_dir = os.path.dirname(torch.__file__)
    codes: dict[Any, None] = {}

    def called(frame, _event, _arg):  # a trace function sees Python calls only, not torch's C calls
        if not frame.f_code.co_filename.startswith(torch_dir):
            codes.setdefault(frame.f_code)
        # no local trace: no line events

    tracer = sys.gettrace()
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # TracerWarnings: what a trace cannot see, export rejects
            sys.settrace(called)
            try:
                graph, outputs = torch.jit._get_trace_graph(model.eval(), inputs)
            finally:
                sys.settrace(tracer)
    except Exception as e:  # noqa: BLE001 - any failure to trace: fall back to the imported graph
        _log.info("the torch tracer failed (%s): keyed by the imported graph", str(e).strip().splitlines()[:1])
        return None
    h = hashlib.sha256()
    h.update(f"torch {_version('torch')} python {sys.version}\0".encode())
    h.update(str(graph).encode())
    # the graph's inputs and outputs are flat: the structure (a dict's keys, a None) is not in it
    h.update(f"\0{tree_structure(inputs)}\0{tree_structure(outputs)}\0".encode())
    for code in codes:
        h.update(marshal.dumps(code))
    # the graph's inputs after the model's own, in this order (what the tracer flattens)
    tensors = list(torch.jit._unique_state_dict(model, keep_vars=True).items())
    tensors += [("", node.t("value")) for node in graph.findAllNodes("prim::Constant")
                if node.hasAttribute("value") and node.kindOf("value") == "t"]
    for name, t in tensors:
        h.update(f"\0{name} {t.dtype} {tuple(t.shape)}\0".encode())
        if t.device.type == "meta":
            return None
        h.update(t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy())
    return h.digest()


def _torch_module(model: Any) -> bool:
    torch = sys.modules.get("torch")  # a torch module implies torch is imported
    return torch is not None and isinstance(model, torch.nn.Module)


def key(source: ModuleOp | bytes, options: dict[str, Any], device: Any) -> str:
    """The entry of a model (`source_key`'s bytes, or the imported graph-level module) compiled
    with `options` on `device` (see the module doc)."""
    from geir.ir.text import print_module

    h = hashlib.sha256()
    kind = "source" if isinstance(source, bytes) else "graph"
    for part in (f"geir-cache {FORMAT} {kind}", _version(__name__.partition(".")[0]), _version("xdsl"), repr(sorted(options.items())),
                 repr(device)):
        h.update(part.encode())
        h.update(b"\0")
    if isinstance(source, bytes):
        h.update(source)
        return h.hexdigest()
    h.update(print_module(source, elide=True).encode())
    for op in source.walk():
        value = op.properties.get("value")
        data = getattr(getattr(value, "data", None), "data", None)
        if isinstance(data, bytes):
            h.update(data)
    return h.hexdigest()


def load(directory: Path, entry: str) -> tuple[ModuleOp, list[str]] | None:
    """(program, unavailable passes) of an entry, or None when there is none or it cannot be
    read (then it is compiled again and rewritten)."""
    path = directory / f"{entry}.pkl"
    if not path.is_file():
        return None
    try:
        data = path.read_bytes()
        return _deep(lambda: pickle.loads(data))
    except Exception as e:  # a truncated or stale entry: compile again
        _log.info("cache entry %s unreadable (%s): compiling again", path.name, e)
        return None


def store(directory: Path, entry: str, program: ModuleOp, unavailable: list[str]) -> None:
    """Write an entry atomically (another process may be writing the same one)."""
    try:
        data = _deep(lambda: pickle.dumps((program, list(unavailable)), protocol=pickle.HIGHEST_PROTOCOL))
    except RecursionError:
        _log.info("program too deeply nested to pickle: not cached")
        return
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, directory / f"{entry}.pkl")


def _deep(fn):
    """fn() in a thread with a deep stack and a high recursion limit (pickle recurses along
    the linked op lists of a long block), without the garbage collector; restored afterwards."""
    result: list = []
    error: list = []

    def run():
        try:
            result.append(fn())
        except BaseException as e:  # noqa: BLE001 - handed back to the caller's thread
            error.append(e)

    old_limit, old_stack = sys.getrecursionlimit(), threading.stack_size()
    sys.setrecursionlimit(max(old_limit, 200_000))
    threading.stack_size(_DEEP_STACK)
    # A program is tens of thousands of objects, none of them garbage: the collector's full
    # passes they trigger walk the whole heap (torch's, the IR's) and were 80% of a load.
    try:
        with collector_paused():
            try:
                worker = threading.Thread(target=run)
                worker.start()
            finally:
                threading.stack_size(old_stack)
            worker.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if error:
        raise error[0]
    return result[0]


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"
