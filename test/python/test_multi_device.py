"""Several devices: the collectives' semantics, ranks run together on the interpreter, the
simulator's one clock, and tensor-parallel models equal to one device (docs/multi-device.md)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

import geir
from geir.dialects import ascend as a
from geir.dialects import make_context
from geir.errors import GeirError
from geir.ir.text import parse_module
from geir.models import llama, transformer_block
from geir.reference.collectives import CollectiveError, run_ranks
from geir.runtime.simulator import Recorded, SimulationError, profile, profile_ranks, record
from geir.target.server import Collectives, load_server
from geir.testing.suite import lit_chunks
from geir.testing.transformer import block_onnx

RNG = np.random.default_rng(0)


# ---------------------------------------------------------------------------
# The collectives (reference/collectives.py).
# ---------------------------------------------------------------------------


def test_collectives_combine_the_ranks_data():
    xs = [RNG.standard_normal((4, 6)).astype(np.float32) for _ in range(3)]

    def rank(r):
        from geir.reference.collectives import current

        comm, me = current()
        assert me == r
        out = {
            "sum": comm.all_reduce(r, xs[r], [0, 1, 2]),
            "max": comm.all_reduce(r, xs[r], [0, 1, 2], "max"),
            "gather": comm.all_gather(r, xs[r], [0, 1, 2], axis=1),
            "scatter": comm.reduce_scatter(r, np.concatenate(xs, 0), [0, 1, 2], axis=0),
            "a2a": comm.all_to_all(r, np.tile(xs[r], (3, 1)), [0, 1, 2], split_axis=0, concat_axis=1),
        }
        if r < 2:  # a sub-group: ranks 0 and 1 only
            out["pair"] = comm.all_reduce(r, xs[r], [1, 0])
        if r == 0:
            comm.send(r, xs[0] * 2, peer=2)
        if r == 2:
            out["recv"] = comm.recv(r, 0, (4, 6), np.float32)
        return out

    outs = run_ranks(3, rank)
    total = xs[0] + xs[1] + xs[2]
    for r, o in enumerate(outs):
        np.testing.assert_array_equal(o["sum"], outs[0]["sum"])  # bit-identical on every rank
        np.testing.assert_allclose(o["sum"], total, rtol=1e-6)
        np.testing.assert_array_equal(o["max"], np.maximum(np.maximum(xs[0], xs[1]), xs[2]))
        np.testing.assert_array_equal(o["gather"], np.concatenate(xs, 1))
        np.testing.assert_allclose(o["scatter"], 3 * xs[r], rtol=1e-6)  # each rank gave all of xs
        np.testing.assert_array_equal(o["a2a"], np.concatenate([xs[j] for j in range(3)], 1))
    np.testing.assert_allclose(outs[0]["pair"], xs[1] + xs[0], rtol=1e-6)
    np.testing.assert_array_equal(outs[2]["recv"], xs[0] * 2)


def test_half_precision_sums_in_f32_and_rounds_once():
    xs = [np.full(4, 2048, np.float16), np.full(4, 1, np.float16), np.full(4, 1, np.float16)]
    out = run_ranks(3, lambda r: __import__("geir.reference.collectives", fromlist=["current"]).current()[0]
                    .all_reduce(r, xs[r], [0, 1, 2]))
    # f16 step by step: 2048 + 1 = 2048 (ulp 2), + 1 = 2048; in f32 once: 2050
    assert out[0].dtype == np.float16 and out[0][0] == 2050


def test_ranks_that_disagree_are_one_error():
    def rank(r):
        from geir.reference.collectives import current

        comm, _ = current()
        return comm.all_reduce(r, np.zeros(4 if r == 0 else 5, np.float32), [0, 1])

    with pytest.raises(CollectiveError, match=r"all_reduce #0 of ranks \[0, 1\]: rank 1 calls all_reduce of \[5\]"):
        run_ranks(2, rank)


def test_a_rank_that_never_joins_is_named():
    def rank(r):
        from geir.reference.collectives import current

        comm, _ = current()
        if r == 0:
            return comm.all_reduce(r, np.zeros(2, np.float32), [0, 1])
        return None

    with pytest.raises(CollectiveError, match="rank 1 finished its program without joining it"):
        run_ranks(2, rank)


def test_a_failing_rank_raises_its_own_error():
    def rank(r):
        from geir.reference.collectives import current

        comm, _ = current()
        if r == 1:
            raise ValueError("rank 1 broke")
        return comm.all_reduce(r, np.zeros(2, np.float32), [0, 1])

    with pytest.raises(ValueError, match="rank 1 broke"):
        run_ranks(2, rank)
    assert threading.active_count() < 50  # the waiting rank ended too


def test_a_collective_outside_a_run_is_one_error():
    m = parse_module(_PROGRAM, make_context())
    with pytest.raises(GeirError, match="is a collective between devices: it runs only with its ranks"):
        geir.runtime.ascend_interpreter.run_ascend_module(m, {"x": np.zeros((4, 8), np.float32),
                                                             "w": np.zeros((8, 16), np.float32)})


# ---------------------------------------------------------------------------
# An ascend program with an all-reduce, run and timed on two ranks.
# ---------------------------------------------------------------------------

_GRAPH = """
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %z = graph.all_reduce %y {ranks = array<i64: 0, 1>, reduction = "sum"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = graph.relu %z : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %r : tensor<4x16xf32>
}
"""


def _lowered() -> str:
    cm = geir.compile(parse_module(_GRAPH, make_context()), precision_mode="must_keep_origin_dtype")
    return cm.mlir(elide=False)


_PROGRAM = _lowered()


def test_ranks_run_and_are_timed_on_one_clock():
    xs = [RNG.standard_normal((4, 8)).astype(np.float32) for _ in range(2)]
    w = RNG.standard_normal((8, 16)).astype(np.float32)
    modules = [parse_module(_PROGRAM, make_context()) for _ in range(2)]
    outs, sims = profile_ranks(modules, [{"x": xs[r], "w": w} for r in range(2)])
    want = np.maximum(xs[0] @ w + xs[1] @ w, 0)
    for o in outs:
        np.testing.assert_allclose(o["output0"], want, rtol=1e-5, atol=1e-5)
    (c0,), (c1,) = ([k for k in s.kernels if k.collective is not None] for s in sims)
    # the all-reduce starts when both ranks reach it and lasts what the link model says
    assert c0.exec_start_us == c1.exec_start_us and c0.end_us == c1.end_us
    cost = Collectives(load_server(), 2).all_reduce_us(4 * 16 * 4)
    assert c0.exec_us == pytest.approx(cost)
    assert c0.collective.algorithm == c1.collective.algorithm == "mesh one-shot"  # 256 bytes: one step
    assert c0.stream != next(k.stream for k in sims[0].kernels if k.collective is None)  # its own stream
    # a timing-only run: the same timeline, no data
    none, timed = profile_ranks(modules, [{"x": xs[r], "w": w} for r in range(2)], timing=True)
    assert none == [None, None]
    assert [s.latency_us for s in timed] == [s.latency_us for s in sims]


# Two stages of a pipeline, three micro-batches: rank 0 sends relu(x) and returns x @ x; rank
# 1 receives it and runs four matmul + tanh layers (slower than rank 0).
_STAGE0 = """
func.func @main(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %b = graph.matmul %x, %x : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %y = graph.relu %x : (tensor<64x64xf32>) -> tensor<64x64xf32>
  graph.send %y {peer = 1 : i64} : (tensor<64x64xf32>) -> ()
  func.return %b : tensor<64x64xf32>
}
"""
_STAGE1 = """
func.func @main(%w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %r = graph.recv {peer = 0 : i64} : () -> tensor<64x64xf32>
""" + "".join(f"""  %m{i} = graph.matmul %{'r' if i == 0 else f't{i - 1}'}, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %t{i} = graph.tanh %m{i} : (tensor<64x64xf32>) -> tensor<64x64xf32>
""" for i in range(4)) + """  func.return %t3 : tensor<64x64xf32>
}
"""


def test_sends_are_buffered_and_stay_in_flight_into_the_next_run():
    """A send's transfer starts when it is launched - into the receiver's staging buffer, before
    the receive is posted - unless the staging still holds the link's previous message; the
    sender's next run starts while the send is in flight, and only the kernel that overwrites
    the sent buffer waits for it."""
    def lowered(text):
        return geir.compile(parse_module(text, make_context()), precision_mode="must_keep_origin_dtype").mlir(elide=False)

    xs = [RNG.standard_normal((64, 64)).astype(np.float32) for _ in range(3)]
    w = (RNG.standard_normal((64, 64)) * 0.1).astype(np.float32)
    modules = [parse_module(lowered(t), make_context()) for t in (_STAGE0, _STAGE1)]
    outs, sims = profile_ranks(modules, [[{"x": x} for x in xs], [{"w": w}] * 3])
    for x, out in zip(xs, outs[1]):
        want = np.maximum(x, 0)
        for _ in range(4):
            want = np.tanh(want @ w)
        np.testing.assert_allclose(out["output0"], want, rtol=1e-5, atol=1e-5)
    runs = [sims[0].kernels[i:i + 3] for i in (0, 3, 6)]  # matmul, relu, send per run
    sends = [run[2] for run in runs]
    recvs = [k for k in sims[1].kernels if k.collective is not None]
    assert [s.collective.kind for s in sends] == ["send"] * 3 and [r.collective.kind for r in recvs] == ["recv"] * 3
    lo = load_server().device.launch_overhead_us
    for k in (1, 2):
        matmul, relu, _ = runs[k]
        assert matmul.start_us < sends[k - 1].end_us  # the next run computes while the send is in flight
        assert relu.start_us >= sends[k - 1].end_us - 1e-9  # but does not overwrite what it sends
    # buffered: send 1 moves its bytes at once, and the receive posted later only copies them out
    assert sends[1].exec_start_us == pytest.approx(sends[1].start_us + lo)
    assert recvs[1].start_us > sends[1].end_us
    assert recvs[1].exec_us == pytest.approx(2 * 64 * 64 * 4 / (load_server().device.hbm_bytes_per_s / 1e6))
    assert recvs[1].collective.algorithm == "staging copy"
    # the staging holds one message per link: send 2 waits until receive 1 has copied its out
    assert sends[2].exec_start_us == pytest.approx(recvs[1].end_us)
    assert sends[2].exec_start_us > sends[2].start_us + lo


def test_one_device_cannot_time_a_collective():
    m = parse_module(_PROGRAM, make_context())
    with pytest.raises(GeirError, match="all_reduce among ranks \\[0, 1\\]"):
        profile(m, {"x": np.zeros((4, 8), np.float32), "w": np.zeros((8, 16), np.float32)}, timing=True)


# ---------------------------------------------------------------------------
# Tensor parallelism: equal to one device.
# ---------------------------------------------------------------------------

_F32 = {"precision_mode": "must_keep_origin_dtype"}


def _equal_to_one_device(model, ranks: int, **options):
    one = geir.compile(model, **_F32, **options)
    dm = geir.compile(model, tensor_parallel=ranks, **_F32, **options)
    feeds = one.random_inputs()
    want, got = one.run(feeds), dm.run(feeds)
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)
    return dm


@pytest.mark.parametrize("ranks", [2, 4])
def test_tensor_parallel_transformer_block(ranks):
    dm = _equal_to_one_device(transformer_block(batch=2, seq=16, hidden=64, ffn=128, heads=4, dtype="f32"), ranks)
    graph = dm.programs[1].mlir("tensor_parallel")
    assert graph.count("graph.all_reduce") == 2  # one after attention's output projection, one after the MLP
    assert f"tensor<64x{128 // ranks}xf32>" in graph  # the rank's share of the MLP's first weight


@pytest.mark.parametrize("ranks,program,cache", [(2, "prefill", "concat"), (4, "decode", "concat"),
                                                 (2, "decode", "inplace"), (2, "prefill", "inplace")])
def test_tensor_parallel_tiny_llama(ranks, program, cache):
    # 4 heads, 2 key/value heads: at 4 ranks each key/value head serves two ranks
    p = llama("tiny", batch=2, seq=8, dtype="f32", cache=cache, max_len=16)
    dm = _equal_to_one_device(getattr(p, program), ranks)
    assert dm.shards()["logits"] == (2, 1)  # the vocabulary-split output, concatenated
    if cache == "inplace":  # each rank holds its heads' rows of the caches, in and out
        assert dm.input_shards()["past_key_values.0.key"] == (1, 1)
        assert dm.shards()["present.0.key"] == (1, 1)


@pytest.mark.parametrize("ranks", [2, 4])
def test_tensor_parallel_torchscript_block(ranks):
    _equal_to_one_device(block_onnx(2, 8, 64, 4), ranks)


def test_tensor_parallel_report_and_trace(tmp_path):
    dm = geir.compile(transformer_block(batch=2, seq=16, hidden=64, ffn=128, heads=4, dtype="f32"),
                      tensor_parallel=2, **_F32)
    _, report = dm.profile()
    assert report["tensor_parallel"] == 2 and len(report["ranks"]) == 2
    assert report["latency_us"] == max(r["latency_us"] for r in report["ranks"])
    assert all(c > 0 for c in report["collective_us"]) and all(0 < s < 1 for s in report["link_share"])
    colls = [k["collective"] for k in report["ranks"][1]["kernels"] if "collective" in k]
    assert colls and all(c["kind"] == "all_reduce" and c["ranks"] == [0, 1] for c in colls)
    assert {c["algorithm"] for c in colls} == {"mesh one-shot"}  # 2 x 16 x 64 f32: 8 KiB
    path = tmp_path / "trace.json"
    dm.write_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert sorted(names) == [0, 1] and names[1].startswith("rank 1: ")
    assert any(e.get("pid") == 1 and e.get("args", {}).get("bound") == "link" for e in events)  # its collectives


def test_tensor_parallel_errors():
    block = transformer_block(batch=1, seq=4, hidden=48, ffn=96, heads=3, dtype="f32")
    with pytest.raises(GeirError, match="tensor parallel 2 does not divide its 3 heads"):
        geir.compile(block, tensor_parallel=2, **_F32)
    with pytest.raises(GeirError, match="tensor_parallel=16 needs more devices than atlas800t_a2 has \\(8\\)"):
        geir.compile(block, tensor_parallel=16, **_F32)
    with pytest.raises(GeirError, match="give tensor_parallel or pipeline_stages too"):
        geir.compile(block, server="atlas800t_a2", **_F32)
    with pytest.raises(GeirError, match="tensor_parallel must be a positive number of devices"):
        geir.compile(block, tensor_parallel=0, **_F32)


# ---------------------------------------------------------------------------
# Pipeline stages: equal to one device, micro-batch after micro-batch.
# ---------------------------------------------------------------------------


def _pipelined_equals_one_device(model, stages: int, micro: int, **options):
    one = geir.compile(model, **_F32, **options)
    dm = geir.compile(model, pipeline_stages=stages, micro_batches=micro, **_F32, **options)
    parts = [one.random_inputs(seed) for seed in range(micro)]
    want = [one.run(f) for f in parts]
    got = dm.run({n: np.concatenate([f[n] for f in parts]) for n in parts[0]})
    assert set(got) == set(want[0])
    for name in got:
        np.testing.assert_allclose(got[name], np.concatenate([w[name] for w in want]), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    return dm


@pytest.mark.parametrize("stages", [2, 4])
def test_pipeline_transformer_block(stages):
    dm = _pipelined_equals_one_device(
        transformer_block(batch=2, seq=16, hidden=64, ffn=128, heads=4, dtype="f32", layers=4), stages, 2)
    # the cuts fall between the layers: each stage receives and sends the hidden state only
    for s, p in enumerate(dm.programs):
        graph = p.mlir("pipeline_stage")
        assert graph.count("graph.recv") == (s > 0) and graph.count("graph.send") == (s < stages - 1)
        assert graph.count("graph.layer_norm") == 2 * 4 // stages


@pytest.mark.parametrize("stages", [2, 4])
def test_pipeline_tiny_llama_and_torchscript_block(stages):
    p = llama("tiny", batch=1, seq=8, dtype="f32")  # two layers: four stages cut inside them
    _pipelined_equals_one_device(p.prefill, stages, 2)
    _pipelined_equals_one_device(block_onnx(1, 8, 64, 4, layers=4), stages, 3)


def test_pipeline_report_measures_the_bubble(tmp_path):
    dm = geir.compile(transformer_block(batch=1, seq=16, hidden=64, ffn=128, heads=4, dtype="f32", layers=4),
                      pipeline_stages=2, micro_batches=4, **_F32)
    _, report = dm.profile(mode="timing")
    assert report["bubble_formula"] == pytest.approx(1 / 5)
    # measured on the timeline: the formula's bubble plus the transfers (each stage waits for
    # its send before the next micro-batch), never less
    assert report["bubble_formula"] <= report["bubble_measured"] < 0.5
    assert report["throughput_per_s"] == pytest.approx(4 / report["latency_us"] * 1e6)
    one = geir.compile(transformer_block(batch=1, seq=16, hidden=64, ffn=128, heads=4, dtype="f32", layers=4), **_F32)
    _, alone = one.profile(mode="timing")
    assert report["latency_us"] < 4 * alone["latency_us"]  # the stages overlap
    with pytest.raises(GeirError, match=r"input 'x' has shape \[3, 16, 64\]: a run of 4 micro-batch\(es\) takes \[4, 16, 64\]"):
        dm.run({"x": np.zeros((3, 16, 64), np.float32)})


def test_a_stages_later_runs_replay_the_first_runs_launches():
    """A stage runs its program once per micro-batch: timed without data, a later run's
    launches replay the first run's (one signature table per rank), and the timeline is the
    one of recording every run in full."""
    cm = geir.compile(transformer_block(batch=1, seq=16, hidden=64, ffn=128, heads=4, dtype="f32", layers=2), **_F32)
    feeds = cm.random_inputs()
    seen: dict = {}
    _, first = record(cm.module, feeds, timing=True, memo=seen, compact=True)
    n = len(_launch_events(first))
    _, second = record(cm.module, feeds, timing=True, memo=seen, compact=True, first_launch=n)
    later = _launch_events(second)
    assert len(later) == n and all(0 <= e.detail.get("replays", -1) < n for e in later)
    _, alone = record(cm.module, feeds, timing=True, memo=True, compact=True, first_launch=n)
    assert any("replays" not in e.detail for e in _launch_events(alone))  # a table of its own
    _, [shared] = profile_ranks([cm.module], [[feeds] * 3], timing=True)
    _, [full] = profile_ranks([cm.module], [[feeds] * 3], timing=True, memo=False)
    assert [(k.name, k.start_us, k.end_us) for k in shared.kernels] == [(k.name, k.start_us, k.end_us)
                                                                         for k in full.kernels]
    assert shared.latency_us == full.latency_us


def _launch_events(records) -> list:
    return [r.event for r in records if isinstance(r, Recorded) and r.event.pipe == "host"
            and isinstance(r.event.op, a.LaunchOp)]


def test_pipeline_errors(tmp_path):
    block = transformer_block(batch=1, seq=4, hidden=32, ffn=64, heads=2, dtype="f32", layers=2)
    two = parse_module(_GRAPH.replace("graph.all_reduce %y", "graph.neg %y").replace(
        ' {ranks = array<i64: 0, 1>, reduction = "sum"}', ""), make_context())
    with pytest.raises(GeirError, match="pipeline_stages=4 needs 3 cut\\(s\\), but the graph has 2 place\\(s\\) to cut"):
        geir.compile(two, pipeline_stages=4, **_F32)
    with pytest.raises(GeirError, match="pipeline_stages=9 needs more devices than atlas800t_a2 has"):
        geir.compile(block, pipeline_stages=9, **_F32)
    device = json.loads((Path(geir.__file__).parent / "target/devices/ascend910b.json").read_text())
    device["hbm_bytes"]["value"] = 16 << 10  # 16 KiB: no stage of two fits
    path = tmp_path / "small.json"
    path.write_text(json.dumps(device))
    with pytest.raises(GeirError, match="no partition into 2 stages fits the device's 0.02 MiB: stage . of the fastest "
                                        "one needs .* MiB \\(weights and activations\\), .* MiB too much"):
        geir.compile(block, pipeline_stages=2, device=str(path), lower=False, **_F32)
    with pytest.raises(GeirError, match="micro_batches=2: a positive number of micro-batches, with pipeline_stages"):
        geir.compile(block, tensor_parallel=2, micro_batches=2, **_F32)


# ---------------------------------------------------------------------------
# Every lit case of the two passes keeps its numerics: the ranks' programs together give the
# function's outputs.
# ---------------------------------------------------------------------------

LIT_DIR = str(Path(__file__).resolve().parents[1].joinpath("passes", "graph"))


def _split_runs(chunk: str, make_pass, ranks: int) -> None:
    from xdsl.context import Context
    from xdsl.dialects import func

    from geir.dialects import attr_names
    from geir.passes.graph.tensor_parallel import Shard
    from geir.runtime.interpreter import input_specs, output_names, random_inputs, run_module

    module = parse_module(chunk, make_context())
    feeds = random_inputs(module, seed=3)
    want = run_module(module, feeds)

    def rank(r):
        m = module.clone()
        make_pass(r).apply(Context(), m)
        m.verify()
        fn = next(op for op in m.ops if isinstance(op, func.FuncOp))
        attrs = fn.arg_attrs.data if fn.arg_attrs is not None else [None] * len(fn.args)
        mine = {}
        for (name, shape, _), d in zip(input_specs(m), attrs):
            value = feeds[name]
            shard = d.data.get(attr_names.SHARD) if d is not None else None
            if shard is not None:
                axis, groups = shard.get_values()
                value = np.take(value, Shard(axis, groups).indices(value.shape[axis], ranks, r), axis=axis)
            mine[name] = value
        outs = run_module(m, mine)
        res = fn.res_attrs.data if fn.res_attrs is not None else [None] * len(outs)
        shards = {n: (d.data.get(attr_names.SHARD) if d is not None else None) for n, d in zip(output_names(m), res)}
        return outs, shards

    got: dict[str, np.ndarray] = {}
    results = run_ranks(ranks, rank)
    for name in want:
        parts = [(outs[name], shards[name]) for outs, shards in results if name in outs]
        shard = parts[0][1]
        if shard is None:
            got[name] = parts[0][0]
        else:
            axis, groups = shard.get_values()
            pieces = [np.split(p, groups, axis=axis) for p, _ in parts]
            got[name] = np.concatenate([pieces[r][k] for k in range(groups) for r in range(len(parts))], axis=axis)
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("chunk", [pytest.param(c, id=i) for i, c in lit_chunks(LIT_DIR, "tensor-parallel")])
def test_tensor_parallel_lit_chunks_keep_numerics(chunk):
    from geir.passes.graph.tensor_parallel import TensorParallel

    _split_runs(chunk, lambda r: TensorParallel(ranks=2, rank=r), 2)


@pytest.mark.parametrize("chunk", [pytest.param(c, id=i) for i, c in lit_chunks(LIT_DIR, "pipeline-stage")])
def test_pipeline_stage_lit_chunks_keep_numerics(chunk):
    from geir.passes.graph.pipeline_stages import PipelineStage

    _split_runs(chunk, lambda r: PipelineStage(stages=2, stage=r), 2)
