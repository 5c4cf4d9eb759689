"""Multi-stream scheduling: ascend-assign-streams, ascend-insert-events and the simulator's
check for races between kernels on different streams (issue 9).

The lit tests (test/passes/ascend/streams*.mlir) show what the passes write; here: the
dependency analysis, the race checker on programs with a missing event, numerics before and
after the passes, and random DAGs compiled end to end with several streams (and memory reuse
once ascend-plan-memory is registered) that must run race-free and match the graph
interpreter."""

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from xdsl.dialects.builtin import TensorType

from geir.dialects import ascend as a
from geir.dialects import formats as L
from geir.errors import GeirError
from geir.dialects import make_context
from geir.ir.text import parse_module
from geir.frontend.onnx import import_model
from geir.passes.ascend.assign_streams import (
    assign,
    host_launches,
    kernel_effects,
    launch_dependencies,
    workspace_arg,
)
from geir.passes.ascend.insert_events import needed_waits
from geir.driver.registry import build_passes, get_all_passes
from geir.runtime.ascend_interpreter import ascend_input_specs, run_ascend_module
from geir.runtime.interpreter import random_inputs, run_module
from geir.runtime.simulator import StreamRaceError, profile, record, stream_races
from geir.testing.suite import assert_close

LIT = Path(__file__).resolve().parents[1] / "passes" / "ascend"


def run_passes(module, spec: str):
    from xdsl.passes import PassPipeline

    PassPipeline(build_passes(spec, get_all_passes())).apply(make_context(), module)
    module.verify()
    return module


def lit_module(name: str):
    """The input of a lit test (its RUN lines are comments)."""
    return parse_module((LIT / name).read_text(), make_context())


def only(module, fn_name: str):
    """A module with the kernels and just one host function (the interpreter runs @main)."""
    from xdsl.dialects import func

    for op in list(module.ops):
        if isinstance(op, func.FuncOp) and op.sym_name.data != fn_name:
            op.detach()
            op.erase()
    return module


def feeds_for(module, seed=0):
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(s).astype(d) for n, s, d in ascend_input_specs(module)}


def main_fn(module):
    from xdsl.dialects import func

    return next(op for op in module.ops if isinstance(op, func.FuncOp))


# ---------------------------------------------------------------------------
# The analysis.
# ---------------------------------------------------------------------------


def test_kernel_effects_come_from_the_body():
    module = lit_module("streams-diamond.mlir")
    kernels = {k.sym_name.data: k for k in module.ops if isinstance(k, a.KernelOp)}
    assert kernel_effects(kernels["un"]) == ((True, False), (False, True))
    assert kernel_effects(kernels["bin"]) == ((True, False), (True, False), (False, True))


def test_dependencies_over_bytes_include_reuse():
    """@reuse: %c reuses %a's bytes (WAR with the reader of %a), %f reuses %e's (WAW)."""
    fn = main_fn(only(lit_module("streams-events.mlir"), "reuse"))
    deps = launch_dependencies(host_launches(fn), workspace_arg(fn))
    assert deps == [set(), {0}, {0, 1}, {1, 2}, set(), {4}, {5}]
    #               a      b    c: WAW a, WAR b  y   e   f: WAW e  z


def test_assignment_of_a_chain_and_of_independent_work():
    chain = [set(), {0}, {1}, {2}]
    assert assign(chain, [1.0] * 4, 4) == [0, 0, 0, 0]
    fork = [set(), set(), set(), {0, 1, 2}]
    assert assign(fork, [1.0] * 4, 4) == [0, 1, 2, 0]
    assert assign(fork, [1.0] * 4, 1) == [0, 0, 0, 0]
    # over the limit, a launch joins the stream where it can start first
    assert assign(fork, [5.0, 1.0, 1.0, 1.0], 2) == [0, 1, 1, 0]


def test_needed_waits_drop_implied_ones():
    # 0 (s0) -> 1 (s1) -> 2 (s2), and 2 also reads 0: the wait for 0 is implied through 1
    assert needed_waits([set(), {0}, {0, 1}], [0, 1, 2]) == [[], [0], [1]]
    # of two producers on one stream only the last needs a wait
    assert needed_waits([set(), set(), {0, 1}], [0, 0, 1]) == [[], [], [1]]
    # a second consumer on the same stream is already ordered by the first one's wait
    assert needed_waits([set(), {0}, {0}], [0, 1, 1]) == [[], [0], []]


# ---------------------------------------------------------------------------
# The race checker.
# ---------------------------------------------------------------------------


def test_a_missing_event_is_a_race_naming_both_kernels():
    module = run_passes(only(lit_module("streams-diamond.mlir"), "diamond"), "ascend-assign-streams")
    assert len({a.int_value(op.properties["id"]) for op in module.walk() if isinstance(op, a.StreamOp)}) == 2
    with pytest.raises(StreamRaceError) as err:
        profile(module, feeds_for(module))
    text = str(err.value)
    # @un (launch 2) on stream 1 reads %a, written by launch 0 on stream 0, with no event
    assert "@un (launch 0, stream 0) and @un (launch 2, stream 1)" in text
    assert "%a bytes [0, 1024) (read-after-write)" in text
    assert "@un (launch 2, stream 1) and @bin (launch 3, stream 0)" in text


def test_reuse_without_events_races_write_after_read():
    module = only(lit_module("streams-events.mlir"), "reuse")
    races = stream_races(record(module, feeds_for(module))[1])
    kinds = {(r.first, r.second): (r.kind, r.buffer) for r in races}
    assert kinds["@un (launch 1, stream 1)", "@un (launch 2, stream 0)"] == ("write-after-read", "%c bytes [0, 1024)")
    assert kinds["@un (launch 4, stream 0)", "@un (launch 5, stream 1)"] == ("write-after-write", "%f bytes [0, 1024)")


def test_disjoint_halves_do_not_race():
    """@slices without events: the kernels writing the two halves of %c on two streams do not
    race (the bytes are disjoint); the reader of the whole buffer races with the other half."""
    module = only(lit_module("streams-events.mlir"), "slices")
    races = stream_races(record(module, feeds_for(module))[1])
    assert [(r.first, r.second, r.kind) for r in races] == [
        ("@fill_bot (launch 1, stream 1)", "@un (launch 2, stream 0)", "read-after-write")]
    assert races[0].buffer == "%c bytes [512, 1024)"


@pytest.mark.parametrize("name", ["reuse", "slices"])
def test_windows_of_addresses_find_the_same_races_and_bytes(monkeypatch, name):
    """A long run's segments are walked a window of gm addresses at a time (`address_windows`):
    with windows of one segment each, the same races on the same bytes, and the same bytes of
    the graph touched, as in one window."""
    from geir.runtime import simulator

    module = only(lit_module("streams-events.mlir"), name)
    recs = record(module, feeds_for(module))[1]
    ordered = run_passes(module.clone(), "ascend-insert-events")
    ordered_recs = record(ordered, feeds_for(ordered))[1]
    whole = [str(r) for r in stream_races(recs)]
    touched = simulator.simulate(ordered_recs).io_bytes_touched
    monkeypatch.setattr(simulator, "WINDOW_ENDS", 1)
    segs = [seg for rw in simulator.launch_segments(recs).values() for seg in rw if len(seg[0])]
    assert len(simulator.address_windows(segs)) > 2
    assert whole and [str(r) for r in stream_races(recs)] == whole
    assert simulator.simulate(ordered_recs).io_bytes_touched == touched > 0


def test_with_events_the_run_is_race_free_and_numerically_unchanged():
    for file, fn in [("streams-diamond.mlir", "diamond"), ("streams-diamond.mlir", "skewed"),
                     ("streams-inception.mlir", "main"), ("streams-events.mlir", "reuse"),
                     ("streams-events.mlir", "redundant"), ("streams-events.mlir", "slices")]:
        before = only(lit_module(file), fn)
        feeds = feeds_for(before)
        want = run_ascend_module(before.clone(), feeds)  # program order, one launch at a time
        after = run_passes(before, "ascend-insert-events" if file == "streams-events.mlir"
                           else "ascend-assign-streams,ascend-insert-events")
        got, sim = profile(after, feeds)
        assert sim.races == []
        assert list(got) == list(want)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])
        # ordering through a third stream (the @redundant case) counts as ordered
        assert stream_races(record(after, feeds)[1]) == []


def test_streams_shorten_the_inception_block():
    module = only(lit_module("streams-inception.mlir"), "main")
    feeds = feeds_for(module)
    _, one = profile(run_passes(module.clone(), "ascend-assign-streams{max-streams=1},ascend-insert-events"), feeds)
    _, four = profile(run_passes(module.clone(), "ascend-assign-streams,ascend-insert-events"), feeds)
    assert len(one.streams) == 1 and len(four.streams) == 4
    # nine kernels in series vs. the input, the three-kernel tower and the concat
    assert four.latency_us < 0.6 * one.latency_us


def test_passes_are_idempotent():
    module = lit_module("streams-inception.mlir")
    once = run_passes(module.clone(), "ascend-assign-streams,ascend-insert-events")
    twice = run_passes(once.clone(), "ascend-assign-streams,ascend-insert-events")
    assert str(once) == str(twice)


def test_bad_options():
    with pytest.raises(GeirError, match="max-streams"):
        build_passes("ascend-assign-streams{max-streams=0}", get_all_passes())


# ---------------------------------------------------------------------------
# Random DAGs, end to end.
# ---------------------------------------------------------------------------

WIDTH = 32
UNARY = ("Relu", "Sigmoid", "Tanh", "Neg", "Abs")
BINARY = ("Add", "Mul", "Sub", "Max")


def random_dag(seed: int, nodes: int = 16) -> onnx.ModelProto:
    """A random branchy DAG on [4, 32] f32 tensors: unary and binary elementwise ops, matmuls
    by constant weights, and concats of 2-4 values (each followed by a matmul back to 32
    columns). Operands are drawn with a bias to recent values, so chains, forks and joins all
    occur; every value nobody reads is a graph output."""
    rng = np.random.default_rng(seed)
    values = ["x", "y"]
    used: set[str] = set()
    graph_nodes, inits = [], []

    def pick() -> str:
        back = min(len(values), int(rng.geometric(0.3)))
        v = values[-back] if rng.random() < 0.8 else values[int(rng.integers(len(values)))]
        used.add(v)
        return v

    def weight(rows: int) -> str:
        w = f"w{len(inits)}"
        arr = (rng.standard_normal((rows, WIDTH)) / np.sqrt(rows)).astype(np.float32)
        inits.append(onnx.numpy_helper.from_array(arr, w))
        return w

    for k in range(nodes):
        out = f"v{k}"
        kind = rng.choice(["unary", "binary", "matmul", "concat"], p=[0.35, 0.25, 0.2, 0.2])
        if kind == "unary":
            graph_nodes.append(helper.make_node(str(rng.choice(UNARY)), [pick()], [out], name=f"n{k}"))
        elif kind == "binary":
            graph_nodes.append(helper.make_node(str(rng.choice(BINARY)), [pick(), pick()], [out], name=f"n{k}"))
        elif kind == "matmul":
            graph_nodes.append(helper.make_node("MatMul", [pick(), weight(WIDTH)], [out], name=f"n{k}"))
        else:
            parts = list(dict.fromkeys(pick() for _ in range(int(rng.integers(2, 5)))))
            if len(parts) < 2:
                parts.append("x" if parts[0] != "x" else "y")
            graph_nodes.append(helper.make_node("Concat", parts, [f"c{k}"], axis=1, name=f"n{k}_cat"))
            graph_nodes.append(helper.make_node("MatMul", [f"c{k}", weight(WIDTH * len(parts))], [out], name=f"n{k}"))
        values.append(out)
    outs = [v for v in values[2:] if v not in used] or [values[-1]]
    t = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [4, WIDTH])  # noqa: E731
    graph = helper.make_graph(graph_nodes, f"dag{seed}", [t("x"), t("y")], [t(o) for o in outs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def compile_dag(seed: int, spec_tail: str, fuse: bool):
    module = import_model(random_dag(seed, nodes=12 + 2 * (seed % 8)))
    feeds = random_inputs(module, seed)
    want = run_module(module.clone(), feeds)
    front = "graph-simplify," + ("graph-fuse," if fuse else "") + "convert-graph-to-ascend,"
    return run_passes(module, front + spec_tail), feeds, want


def check_dag(module, feeds, want):
    got, sim = profile(module, feeds)   # raises StreamRaceError on a race
    assert sim.races == []
    for name, ref in want.items():
        assert_close(got[name], ref, name)
    return sim


PLAN = "ascend-plan-memory{reuse=true}"


@pytest.mark.parametrize("seed", range(12))
def test_random_dags_run_race_free(seed):
    """Streams, events and (when the planner is there) memory reuse: no race, same outputs;
    and every event is needed: without any one of its waits the run races."""
    streams = 2 + seed % 3
    spec = f"ascend-assign-streams{{max-streams={streams}}},ascend-insert-events" + f",{PLAN}"
    module, feeds, want = compile_dag(seed, spec, fuse=seed % 2 == 0)
    sim = check_dag(module, feeds, want)
    assert 1 < len(sim.streams) <= streams
    waits = [op for op in module.walk() if isinstance(op, a.EventWaitOp)]
    assert waits
    victim = waits[int(np.random.default_rng(seed).integers(len(waits)))]
    victim.detach()
    victim.erase()
    with pytest.raises(StreamRaceError):
        profile(module, feeds)


@pytest.mark.parametrize("seed", range(12, 18))
def test_random_dags_planned_before_streams(seed):
    """Memory planned on one stream, then streams: insert-events orders the reuse (WAR/WAW)."""
    module, feeds, want = compile_dag(seed, f"{PLAN},ascend-assign-streams{{max-streams=4}},ascend-insert-events",
                                      fuse=True)
    check_dag(module, feeds, want)


def test_inception_v1_on_four_streams():
    """A real branchy model through the O3 pipeline (memory reuse on) with four streams:
    race-free and the graph interpreter's outputs, with the formats graph-layout chose."""
    import geir
    from geir.testing.suite import light_model

    compiled = geir.compile(light_model("light_inception_v1"), streams=4, precision_mode="must_keep_origin_dtype")
    assert any(L.storage_of(v.type) == L.NC1HWC0 for op in compiled.stages["04_layout"].walk() for v in op.results
               if isinstance(v.type, TensorType))
    graph = compiled.stages["01_import"]
    feeds = random_inputs(graph, 0)
    want = run_module(graph.clone(), feeds)
    got, sim = profile(compiled.module, feeds)
    assert len(sim.streams) == 4
    assert any(isinstance(op, a.EventWaitOp) for op in compiled.module.walk())
    for name, ref in want.items():
        assert_close(got[name], ref, name)
