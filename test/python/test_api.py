"""The Python API: input forms, options, stages, save/load."""

from __future__ import annotations

import numpy as np
import pytest

import geir
from geir.errors import GeirError
from geir.runtime.interpreter import random_inputs
from geir.testing.suite import assert_close, light_model, ort_run


@pytest.fixture(scope="module")
def squeezenet():
    return light_model("light_squeezenet")


def test_compile_and_run_matches_onnxruntime(squeezenet):
    cm = geir.compile(squeezenet, opt_level=1, lower=False)
    feeds = {n: np.random.default_rng(0).standard_normal(s).astype(d) for n, s, d in cm.input_specs()}
    out = cm.run(feeds)
    assert_close(next(iter(out.values())), ort_run(squeezenet, feeds)[0], "squeezenet")


def test_stages_are_named_and_printable(squeezenet):
    cm = geir.compile(squeezenet, opt_level=1, lower=False)
    assert cm.stage_names[:2] == ["01_import", "02_simplify"]
    assert "graph.conv" in cm.mlir("import")
    assert "dense_resource<__elided__>" in cm.mlir("02_simplify")
    with pytest.raises(GeirError, match="no stage 'nope'"):
        cm.mlir("nope")


def test_lowered_stages_rebuilt_on_demand_print_as_copied_ones(squeezenet):
    """driver/stages.py: a lowered stage is not copied as it finishes but replayed when first
    looked at; the replay must be the very IR the compile produced (the passes are
    deterministic: memory plan, streams and events included), and looking must not change
    the program."""
    model = squeezenet
    copied = geir.compile(model, opt_level=3, keep_stages=True)
    lazy = geir.compile(model, opt_level=3)
    final = lazy.mlir()
    assert lazy.graph_module() is lazy.stages["05_layout"]  # a graph stage: no replay
    assert [n for n in lazy.stage_names if lazy.stages.is_lowered(n)] == ["06_lower", "07_elide_copies", "08_streams",
                                                                         "09_plan_memory"]
    assert lazy.stages.held() == [*lazy.stage_names[:5], "09_plan_memory"]  # the last one is live
    for stage in copied.stage_names:
        assert lazy.mlir(stage) == copied.mlir(stage), stage
    assert lazy.mlir() == final


def test_opt_level_0_imports_only(squeezenet):
    cm = geir.compile(squeezenet, opt_level=0, lower=False, precision_mode="must_keep_origin_dtype")
    assert cm.stage_names == ["01_import"]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"fusoin": False}, "unknown option"),
        ({"opt_level": 7}, "opt_level must be"),
        ({"device": "gpu9000"}, "unknown device"),
        ({"disable_passes": ["graph-nonsense"]}, "unknown pass name"),
        ({"disable_fusions": ["norm"]}, "unknown fusion pattern.*norm; patterns: attention"),
    ],
)
def test_bad_options_are_errors(squeezenet, kwargs, message):
    with pytest.raises(GeirError, match=message):
        geir.compile(squeezenet, **kwargs)


def test_disable_pass_removes_it(squeezenet):
    cm = geir.compile(squeezenet, opt_level=1, lower=False, disable_passes=["graph-simplify"], precision_mode="must_keep_origin_dtype")
    assert cm.stage_names == ["01_import"]


def test_disable_fusions_leaves_the_patterns_out():
    """A decode step's norms are the projections' prologues; switched off, each Add + RMSNorm
    is a kernel of its own (two a layer, and the final norm), and the graph-fuse stage says so."""
    import dataclasses

    from geir.models import CONFIGS, llama

    progs = llama(dataclasses.replace(CONFIGS["tiny"], layers=2), batch=1, seq=1, dtype="f16", cache="inplace",
                  max_len=32)

    def launches(cm):
        return sum(op.name == "ascend.launch" for op in cm.module.walk())

    on, off = geir.compile(progs.decode), geir.compile(progs.decode, disable_fusions=("norm-prologue",))
    assert launches(off) == launches(on) + 5
    from geir.driver.pipelines import build_pipeline

    specs = [spec for _, stage in build_pipeline(off.options).stages for spec in stage]
    assert "graph-fuse{max-ops=32 disable=norm-prologue}" in specs


def test_save_load_round_trip(tmp_path, squeezenet):
    cm = geir.compile(squeezenet, opt_level=1, lower=False)
    path = tmp_path / "model.mlir"
    cm.save(path)
    loaded = geir.load(path)
    feeds = random_inputs(cm.module, seed=3)
    a, b = cm.run(feeds), loaded.run(feeds)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_torch_module_with_example_inputs():
    import torch  # part of the test extra
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 10))
    x = torch.randn(1, 3, 8, 8)
    cm = geir.compile(net, example_inputs=(x,), opt_level=1, lower=False, precision_mode="must_keep_origin_dtype")
    (name, _, _), = cm.input_specs()
    out = next(iter(cm.run({name: x.numpy()}).values()))
    np.testing.assert_allclose(out, net.eval()(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_a_module_without_example_inputs_is_an_error():
    import torch  # part of the test extra
    with pytest.raises(GeirError, match="example_inputs"):
        geir.compile(torch.nn.ReLU())


def test_offline_model_round_trip(tmp_path, squeezenet):
    cm = geir.compile(squeezenet, opt_level=2, streams=1)
    path = tmp_path / "model.om"
    cm.save(path)
    loaded = geir.load(path)
    assert loaded.options.device == "ascend910b" and loaded.options.opt_level == 2
    feeds = cm.random_inputs(seed=4)
    a, b = cm.run(feeds), loaded.run(feeds)
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_offline_model_holds_the_weights_as_raw_bytes(tmp_path, squeezenet):
    """weights.bin holds each weight once, raw (no hex text): the file is the weights plus the
    program (text and binary form); the binary form loads to the very program saved; version-2
    (hex blobs inside program.mlir) and version-3 files (no binary form) still load, to the same
    outputs; a weight outside weights.bin, or a binary form whose digest does not match, is a
    clear error."""
    import json
    import zipfile

    from geir.driver import om
    from geir.ir.text import print_module

    cm = geir.compile(squeezenet, opt_level=3)
    path = tmp_path / "model.om"
    cm.save(path)
    with zipfile.ZipFile(path) as z:
        manifest = json.loads(z.read(om.MANIFEST))
        sizes = {i.filename: i.file_size for i in z.infolist()}
    constants = sum(len(op.properties["value"].data.data) for op in cm.module.walk()
                    if op.name == "ascend.constant")
    assert manifest["version"] == 4 and sizes[om.WEIGHTS] <= constants + om.WEIGHT_ALIGN * len(manifest["weights"])
    assert all(offset % om.WEIGHT_ALIGN == 0 for offset, _ in manifest["weights"].values())
    assert sizes[om.BINARY] < sizes[om.PROGRAM]
    assert path.stat().st_size <= sizes[om.WEIGHTS] + sizes[om.PROGRAM] + sizes[om.BINARY] + 64 * 1024
    loaded = geir.load(path)
    assert print_module(loaded.module) == print_module(cm.module)
    feeds = cm.random_inputs(seed=1)
    want = cm.run(feeds)
    for name, got in loaded.run(feeds).items():
        np.testing.assert_array_equal(got, want[name])

    v3 = tmp_path / "v3.om"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(v3, "w") as z:
        for member in (om.PROGRAM, om.WEIGHTS):
            z.writestr(member, src.read(member))
        z.writestr(om.MANIFEST, json.dumps({**manifest, "version": 3}))
    for name, got in geir.load(v3).run(feeds).items():
        np.testing.assert_array_equal(got, want[name])

    altered = tmp_path / "altered.om"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(altered, "w") as z:
        for member in (om.MANIFEST, om.PROGRAM, om.WEIGHTS):
            z.writestr(member, src.read(member))
        binary = bytearray(src.read(om.BINARY))
        binary[-4:] = (10 ** 6).to_bytes(4, "little")  # the last op's last operand count: past every value
        z.writestr(om.BINARY, bytes(binary))
    with pytest.raises(GeirError, match="program.bin does not match the manifest's digest"):
        geir.load(altered)

    old = tmp_path / "v2.om"
    with zipfile.ZipFile(old, "w") as z:
        z.writestr(om.MANIFEST, json.dumps({**manifest, "version": 2, "weights": {}}))
        z.writestr(om.PROGRAM, print_module(cm.module))
    for name, got in geir.load(old).run(feeds).items():
        np.testing.assert_array_equal(got, want[name])

    bad = tmp_path / "bad-weights.om"
    name, (offset, size) = next(iter(manifest["weights"].items()))
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as z:
        for member in (om.PROGRAM, om.BINARY, om.WEIGHTS):
            z.writestr(member, src.read(member))
        z.writestr(om.MANIFEST, json.dumps({**manifest, "weights": {**manifest["weights"], name: [offset, 1 << 40]}}))
    with pytest.raises(GeirError, match=f"weight '{name}' lies outside weights.bin"):
        geir.load(bad)
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as z:
        for member in (om.PROGRAM, om.BINARY, om.WEIGHTS):
            z.writestr(member, src.read(member))
        z.writestr(om.MANIFEST, json.dumps({**manifest, "weights": {**manifest["weights"], name: "here"}}))
    with pytest.raises(GeirError, match=f"places weight '{name}' at 'here', not \\[offset, size\\]"):
        geir.load(bad)


def test_not_an_offline_model_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.om"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(GeirError, match="not a geir offline model"):
        geir.load(path)
