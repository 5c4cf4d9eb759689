"""convert-graph-to-ascend end to end: every model of the numeric suite, lowered to the ascend
dialect and run by the ascend interpreter (per-tile numpy on real per-space buffers), gives the
graph-level reference's outputs (and onnxruntime's) within the suite's tolerances.

Light models and transformers are lowered as the compiler would (graph-simplify, graph-fuse,
then the lowering) and, for the transformers, also straight from the importer; backend cases
straight from the importer (one op or a few each). Every op of the light models and the
transformers has a template: a fallback kernel there fails the test (it would compare the
reference with itself). Backend cases may hold ops no template handles yet; those run as
`ascend.reference` fallback kernels, and each test prints how many there are.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context

from geir.dialects import ascend as a
from geir.dialects import formats as L
from geir.dialects import graph as g
from geir.dialects.traits import Collective
from geir.ir.types import to_dtype
from geir.errors import GeirError
from geir.dialects import make_context
from geir.ir.text import parse_module
from geir.lowering.graph_to_ascend import ConvertGraphToAscend, fallback_ops
from geir.lowering.templates.common import LoweringError
from geir.frontend.onnx import import_model
from geir.driver.registry import get_all_passes
from geir.runtime.ascend_interpreter import ascend_input_specs, run_ascend_module
from geir.runtime.interpreter import input_specs, main_function, random_inputs, run_module
from geir.runtime.simulator import record
from geir.reference.collectives import run_ranks
from geir.testing.suite import LIGHT_MODELS, assert_close, backend_cases, light_model, lit_chunks, ort_run, timing_reports

from test_onnx_suite import LEFT_OUT

PIPELINE = ("graph-simplify", "graph-fuse")


def _passes(names: tuple[str, ...]) -> list:
    known = get_all_passes()
    return [known[n]()() for n in names if n in known]


def lower(module, passes: tuple[str, ...] = (), **options) -> dict:
    """Run the graph passes and the lowering in place; returns timing and kernel counts."""
    ctx: Context = make_context()
    start = time.perf_counter()
    for p in _passes(passes):
        p.apply(ctx, module)
    ConvertGraphToAscend(**options).apply(ctx, module)
    module.verify()
    kernels = [k for k in module.ops if isinstance(k, a.KernelOp)]
    return {"lower_s": time.perf_counter() - start, "kernels": len(kernels),
            "fallback": Counter(fallback_ops(module))}


def run_and_compare(name: str, module, feeds: dict, references: list[dict], passes=(),
                    fallback_ok: bool = False, timing: bool = False, **options) -> None:
    """Lower, run and compare with each reference; `timing`: the run is recorded too, and
    a timing-only run of the program must give its report (test_timing_only.py: without memo)."""
    info = lower(module, passes, **options)
    if not fallback_ok:
        assert not info["fallback"], f"{name}: ops lowered to fallback kernels: {dict(info['fallback'])}"
    assert [n for n, _, _ in ascend_input_specs(module)] == list(feeds)
    start = time.perf_counter()
    ours, records = record(module, feeds) if timing else (run_ascend_module(module, feeds), None)
    run_s = time.perf_counter() - start
    if timing:
        full, timed = timing_reports(module, feeds, full_records=records, unmemoised=False)
        assert timed == full, f"{name}: the timing-only report differs from the full run's"
    for ref in references:
        assert list(ours) == list(ref)
        for out, want in ref.items():
            assert_close(ours[out], np.asarray(want), f"{name}:{out}")
    fb = info["fallback"]
    print(f"\n{name}: {info['kernels']} kernels, {sum(fb.values())} fallback {dict(fb)}, "
          f"lower {info['lower_s']:.2f}s, run {run_s:.2f}s")


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model(name):
    model = light_model(name)
    module = import_model(model)
    feeds = random_inputs(module, seed=1)
    graph = run_module(module, feeds)
    ort = dict(zip(graph, ort_run(model, feeds)))
    run_and_compare(name, module, feeds, [graph, ort], PIPELINE, timing=True)


@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("passes", [PIPELINE, ()], ids=["fused", "unfused"])
def test_transformer(layers, passes):
    from geir.testing.transformer import transformer_onnx

    model = transformer_onnx(layers)
    module = import_model(model)
    feeds = random_inputs(module, seed=2)
    graph = run_module(module, feeds)
    ort = dict(zip(graph, ort_run(model, feeds)))
    run_and_compare(f"transformer x{layers}", module, feeds, [graph, ort], passes, timing=layers == 2)


CASES = [c for c in backend_cases() if c.name not in LEFT_OUT]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_backend_case(case):
    module = import_model(case.model_path)
    feeds = {name: value for (name, _, _), value in zip(input_specs(module), case.inputs())}
    graph = run_module(module, feeds)
    expected = dict(zip(graph, case.outputs()))
    run_and_compare(case.name, module, feeds, [graph, expected], fallback_ok=True)


def test_single_buffered_model_matches():
    """double-buffer=false builds other tiles (one slot may take all of ub): same numbers."""
    model = light_model("light_squeezenet")
    module = import_model(model)
    feeds = random_inputs(module, seed=3)
    graph = run_module(module, feeds)
    run_and_compare("squeezenet single-buffered", module, feeds, [graph], PIPELINE, double_buffer=False)


def test_other_device():
    """The 310P (one AI core type, 256 KiB ub, 8 cores) gets its own tiles and runs the same."""
    model = light_model("light_squeezenet")
    module = import_model(model)
    feeds = random_inputs(module, seed=4)
    graph = run_module(module, feeds)
    info = lower(module, PIPELINE, device="ascend310p")
    ours = run_ascend_module(module, feeds, device="ascend310p")
    for out, want in graph.items():
        assert_close(ours[out], want, f"310p:{out}")
    assert info["kernels"] > 0


def test_wrong_tile_is_a_wrong_number():
    """The interpreter really executes the tiles: shifting one tile's copy breaks the result."""
    from geir.ir.text import parse_module

    module = parse_module(
        """
        func.func @main(%x: tensor<4x256x1024xf32> {onnx.name = "x"}) -> (tensor<4x256x1024xf32> {onnx.name = "y"}) {
          %y = graph.relu %x : (tensor<4x256x1024xf32>) -> tensor<4x256x1024xf32>
          func.return %y : tensor<4x256x1024xf32>
        }
        """
    , make_context())
    feeds = random_inputs(module, seed=5)
    lower(module)
    assert_close(run_ascend_module(module, feeds)["y"], np.maximum(feeds["x"], 0), "relu")
    # drop the first copy out of the kernel: part of y is never written
    kernel = next(k for k in module.ops if isinstance(k, a.KernelOp))
    store = next(op for op in kernel.walk() if isinstance(op, a.CopyOp) and op.dst_space == "gm")
    store.detach()
    store.erase()
    with pytest.raises(AssertionError):
        assert_close(run_ascend_module(module, feeds)["y"], np.maximum(feeds["x"], 0), "relu")


def test_rejections_are_clear():
    from geir.ir.text import parse_module

    dynamic = parse_module(
        "func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {\n"
        "  %y = graph.relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>\n"
        "  func.return %y : tensor<?x4xf32>\n}"
    , make_context())
    with pytest.raises(LoweringError, match="dynamic shape"):
        lower(dynamic)
    assert issubclass(LoweringError, GeirError)
    with pytest.raises(ValueError, match="unknown device"):
        ConvertGraphToAscend(device="tpu")


# ---------------------------------------------------------------------------
# Every lit case of the lowering keeps its numerics.
# ---------------------------------------------------------------------------

LIT_DIR = str(Path(__file__).resolve().parents[1] / "lowering" / "graph_to_ascend")


def _graph_chunks():
    """Graph-level chunks of the lowering's lit files (not the error cases, not the ones
    written at ascend level)."""
    for cid, chunk in lit_chunks(LIT_DIR, ""):
        if cid.startswith(("errors", "reference")) or "expected-error" in chunk:
            continue
        yield pytest.param(chunk, id=cid)


def _peers(module) -> tuple[set[int], list[tuple[str, int, tuple, np.dtype]]]:
    """A module's collectives: the ranks of its groups, and its sends / receives in order as
    (kind, peer, shape, dtype)."""
    groups, p2p = set(), []
    for op in module.walk():
        if op.has_trait(Collective) and "ranks" in op.attrs():
            groups.update(op.attrs()["ranks"])
        elif op.has_trait(Collective):
            v = op.operands[0] if isinstance(op, g.SendOp) else op.results[0]
            p2p.append((op.name, op.attrs()["peer"], tuple(v.type.get_shape()), to_dtype(v.type.element_type)))
    return groups, p2p


def _as_rank(module, feeds, run, peers):
    """`run(module, feeds)`; a module with collectives runs as one rank among its peers: each
    other member of its groups runs a copy on its own inputs, and the peer of each send /
    receive receives / sends seeded data (the same at graph and ascend level)."""
    groups, p2p = peers
    if not groups and not p2p:
        return run(module, feeds)
    others = {peer for _, peer, _, _ in p2p}
    me = min(groups) if groups else min(set(range(max(others) + 2)) - others)
    world = max(groups | others | {me}) + 1

    def rank(r):
        from geir.reference.collectives import current

        if r == me:
            return run(module, feeds)
        if r in groups:  # its own inputs, the same at both levels: float inputs scaled by rank
            return run(module.clone(), {n: v * (r + 1.5) if np.asarray(v).dtype.kind == "f" else v
                                        for n, v in feeds.items()})
        comm, _ = current()
        for i, (kind, peer, shape, dtype) in enumerate(p2p):
            if peer != r:
                continue
            if kind == g.SendOp.name:
                comm.recv(r, me)
            else:
                comm.send(r, np.random.default_rng(i).standard_normal(shape).astype(dtype), me)
        return None

    return run_ranks(world, rank)[me]


@pytest.mark.parametrize("chunk", list(_graph_chunks()))
def test_lit_chunk_keeps_numerics(chunk):
    """The lowered program gives the graph-level outputs; formatted inputs are valid tensors
    of their format (zero padding), formatted outputs are compared as logical tensors."""
    module = parse_module(chunk, make_context())
    types = main_function(module).function_type
    feeds = {}
    for (name, value), t in zip(random_inputs(module, seed=3).items(), types.inputs.data):
        feeds[name] = L.physical_array(L.logical_array(value, t), t) if L.is_formatted(t) else value
    peers = _peers(module)
    before = _as_rank(module, feeds, run_module, peers)
    ConvertGraphToAscend().apply(Context(), module)
    module.verify()
    after = _as_rank(module, feeds, run_ascend_module, peers)
    for (name, value), t in zip(before.items(), types.outputs.data):
        tol = {"rtol": 2e-2, "atol": 2e-2} if to_dtype(t.element_type).itemsize == 2 else {}
        if L.is_formatted(t):
            value, got = L.logical_array(value, t), L.logical_array(after[name], t)
        else:
            got = after[name]
        assert_close(got, value, name, **tol)
