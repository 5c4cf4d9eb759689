"""Timing-only simulation (CompiledModel.profile(mode="timing"), geir-run --timing-only): the
same trace without data, so the same report to the last digit; memoised launches; shape-only
weights refused by a full run and timed without one. The suite's light models are compared
in test_lowering.py (each is compiled there already)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import geir
from geir.errors import GeirError
from geir.models import CONFIGS
from geir.runtime.ascend_interpreter import run_ascend_module
from geir.runtime.simulator import Recorded, Recorder, RepeatedBlock, SimulationError, record, simulate
from geir.testing.suite import timing_reports

LAYERS = 4


def tiny(layers: int = LAYERS, **kw):
    config = dataclasses.replace(CONFIGS["tiny"], layers=layers)
    return geir.models.llama(config, batch=2, seq=16, dtype="f16", cache="inplace", max_len=32, **kw)


@pytest.mark.parametrize("program", ["prefill", "decode"])
def test_tiny_llama_timing_only_report_equals_the_full_one(program):
    cm = geir.compile(getattr(tiny(), program), opt_level=3)
    feeds = cm.random_inputs()
    full, timing, unmemoised = timing_reports(cm.module, feeds)
    assert full["kernel_count"] > 0 and full["latency_us"] > 0
    assert timing == full
    assert unmemoised == full  # every launch run, without data


def test_repeated_layers_run_once():
    """Layers 1..3 launch the kernels of layer 0 again: each such launch replays it."""
    cm = geir.compile(tiny().decode, opt_level=3)
    feeds = cm.random_inputs()
    _, records = record(cm.module, feeds, timing=True)
    launches = [r.event for r in records if r.event.pipe == "host" and "block_dim" in r.event.detail]
    replayed = [e for e in launches if "replays" in e.detail]
    per_layer = (len(launches) - len(geir.compile(tiny(layers=1).decode, opt_level=3).profile(mode="timing")[1]["kernels"])) // (LAYERS - 1)
    assert per_layer > 0
    assert len(replayed) >= (LAYERS - 1) * per_layer
    first = {e.launch: e for e in launches}
    for e in replayed:  # a replay names an earlier launch of a kernel with its structure
        assert e.detail["replays"] < e.launch and "replays" not in first[e.detail["replays"]].detail
    kernel_ops = {r.event.launch for r in records if r.event.pipe != "host"}
    assert not kernel_ops & {e.launch for e in replayed}  # and runs none of its ops


def test_blocks_like_an_earlier_one_are_probed_not_run():
    """A timing-only run probes each block (its checks, no events) and runs in full only the
    blocks whose events no earlier block had; the others are kept as RepeatedBlocks."""
    cm = geir.compile(tiny(layers=1).prefill, opt_level=3)
    feeds = cm.random_inputs()
    rec = Recorder(compact=True)
    taken: list[bool] = []

    def repeats(*args):
        taken.append(rec.repeated(*args))
        return taken[-1]

    run_ascend_module(cm.module, feeds, trace=rec, listeners=(rec,), timing=True, repeats=repeats)
    rec.close()
    repeated = [r for r in rec.records if isinstance(r, RepeatedBlock)]
    full_blocks = {(r.event.launch, r.event.block) for r in rec.records
                   if isinstance(r, Recorded) and r.event.pipe != "host"}
    assert sum(taken) == len(repeated) > len(full_blocks) > 0
    assert not full_blocks & {(r.launch, r.block) for r in repeated}
    _, full = record(cm.module, feeds)  # every block of a full run reports its events
    assert simulate(rec.records).latency_us == simulate(full).latency_us


def test_a_programmed_recording_keeps_programs_not_events_and_times_the_same():
    """`record(..., programs=True)` (what `profile` records) keeps each distinct block as its
    replay program: no event of a kernel block is kept, and the timing, the timeline and the
    races are those of the recording that keeps every distinct block's events."""
    from geir.runtime.report import build_report
    from geir.runtime.simulator import ProgrammedBlock

    cm = geir.compile(tiny(layers=2).prefill, opt_level=3)
    feeds = cm.random_inputs()
    _, events = record(cm.module, feeds, timing=True, compact=True)
    _, programmed = record(cm.module, feeds, timing=True, compact=True, programs=True)
    assert not [r for r in programmed if isinstance(r, Recorded) and r.event.pipe != "host"]
    blocks = [r for r in programmed if isinstance(r, ProgrammedBlock)]
    assert len(blocks) == len({(r.event.launch, r.event.block) for r in events
                               if isinstance(r, Recorded) and r.event.pipe != "host"}) > 0
    assert all(isinstance(r.records, ProgrammedBlock) for r in programmed if isinstance(r, RepeatedBlock))
    want, got = simulate(events), simulate(programmed)
    assert build_report(got, cm.module) == build_report(want, cm.module)
    assert got.timeline == want.timeline and got.races == want.races
    with pytest.raises(SimulationError, match=r"programmed for ascend910b is timed on ascend910b only "
                                              r"\(asked for ascend310p\): record it again"):
        simulate(programmed, device="ascend310p")


def test_a_probe_that_foresees_other_events_than_the_block_reports_is_an_error():
    """The recorder checks each block that runs in full against its probe's key."""
    cm = geir.compile(tiny(layers=1).decode, opt_level=3)
    rec = Recorder(compact=True)

    def wrong(launch, block, key, gm):
        return rec.repeated(launch, block, key[1:], gm)  # one event less than the block's

    with pytest.raises(SimulationError, match=r"block 0: its probe foresaw \d+ events, the block reported \d+"):
        run_ascend_module(cm.module, cm.random_inputs(), trace=rec, listeners=(rec,), timing=True, repeats=wrong)
        rec.close()


def test_shape_only_weights_time_as_random_ones_and_refuse_a_full_run():
    real = geir.compile(tiny(weights="random").decode, opt_level=3)
    shape_only = geir.compile(tiny(weights="shape-only").decode, opt_level=3)
    feeds = real.random_inputs()
    _, want = real.profile(feeds)
    out, got = shape_only.profile({k: v for k, v in feeds.items() if v.dtype.kind in "iu"}, mode="timing")
    assert out is None
    for key in ("latency_us", "kernel_count"):
        assert got[key] == want[key], key
    # (constant bytes differ: random RMSNorm weights are ones, which CSE makes one constant)
    for key in ("workspace_bytes", "intermediate_bytes", "io_bytes"):
        assert got["memory"][key] == want["memory"][key], key
    assert [k["time_us"] for k in got["kernels"]] == [k["time_us"] for k in want["kernels"]]
    for run in (lambda: shape_only.run(feeds), lambda: shape_only.profile(feeds)):
        with pytest.raises(GeirError, match=r"shape-only weight\(s\) \(model\.embed_tokens\.weight.*"
                                            r"profile\(mode=\"timing\"\), geir-run --profile --timing-only"):
            run()
    graph_level = geir.compile(tiny(weights="shape-only").decode, lower=False)
    with pytest.raises(GeirError, match="shape-only weights.*profile\\(mode=\"timing\"\\)"):
        graph_level.run(feeds)


def test_timing_only_needs_no_float_inputs_and_returns_no_outputs():
    cm = geir.compile(tiny().prefill, opt_level=3)
    ints = {k: v for k, v in cm.random_inputs().items() if v.dtype.kind in "iu"}
    assert run_ascend_module(cm.module, ints, timing=True) is None
    floats = {n for n, _, d in cm.input_specs() if np.dtype(d).kind == "f"}
    assert floats  # the KV caches
    with pytest.raises(GeirError, match="missing input"):
        cm.run(ints)


def test_bad_profile_mode_is_named():
    cm = geir.compile(tiny(layers=1).decode, opt_level=3)
    with pytest.raises(GeirError, match="profile mode 'fast': expected one of full, timing"):
        cm.profile(mode="fast")


def test_geir_run_timing_only(tmp_path, capsys):
    from geir.tools.geir_run import main

    path = tmp_path / "decode.mlir"
    geir.compile(tiny(layers=2, weights="shape-only").decode, opt_level=3).save(path)
    assert main([str(path), "--timing-only"]) == 0
    out = capsys.readouterr().out
    assert "outputs: none (a timing-only run computes nothing)" in out
    assert "simulate (timing only)" in out and "latency" in out
    assert "float16" not in out.split("outputs:")[0].split("inputs:")[1]  # float inputs need no values
    assert main([str(path)]) == 1
    assert "--timing-only" in capsys.readouterr().err
    assert main([str(path), "--timing-only", "--output", str(tmp_path / "o.npz")]) == 1
    assert "--timing-only computes no outputs" in capsys.readouterr().err
