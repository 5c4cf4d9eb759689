"""Dynamic shapes (driver/dynamic_shapes.py): ATC's options parsed and checked. Gears
(driver/gears.py): one static program per gear, each matching onnxruntime; the offline model
holding every gear with the weights once; the workspace the largest gear's. Shape ranges
(driver/shape_ranges.py, runtime/shape_ranges.py): one program at the upper bound whose
kernels run the real rows only, matching onnxruntime at every size in the range."""

import io
import json
import warnings
import zipfile

import numpy as np
import onnxruntime as ort
import pytest
import torch

import geir
from geir.driver.dynamic_shapes import ShapeOptionError, format_input_shape, parse_input_shape, plan_shapes
from geir.driver.gear_padding import Carried, padding_plan
from geir.driver.gears import GearedModel
from geir.driver.shape_ranges import RangeModel
from geir.dialects import attr_names
from geir.dialects.ascend import KernelOp
from geir.errors import GeirError
from geir.frontend.builder import GraphBuilder
from geir.runtime.report import memory_stats
from geir.testing.transformer import block_reference, dynamic_block_onnx

FP32 = {"precision_mode": "must_keep_origin_dtype"}


def _export(model, inputs, names, dynamic_axes) -> bytes:
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model.eval(), inputs, f, dynamo=False, input_names=names, output_names=["y"],
                          dynamic_axes=dynamic_axes, opset_version=17)
    return f.getvalue()


@pytest.fixture(scope="module")
def cnn() -> bytes:
    """A small CNN exported with a dynamic batch axis."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
                            torch.nn.MaxPool2d(2), torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
                            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))
    return _export(m, (torch.randn(2, 3, 32, 32),), ["x"], {"x": {0: "batch"}, "y": {0: "batch"}})


@pytest.fixture(scope="module")
def block() -> bytes:
    """The transformer block (nn.MultiheadAttention, LayerNorm, GELU MLP) exported by the
    TorchScript exporter with a dynamic batch axis. (Its sequence axis cannot be dynamic:
    the exporter bakes nn.MultiheadAttention's sequence length into a Reshape, and
    onnxruntime fails on any other length too.)"""
    return _export(block_reference(64, 4), (torch.randn(2, 16, 64),), ["x"], {"x": {0: "batch"}, "y": {0: "batch"}})


@pytest.fixture(scope="module")
def block_dynamo() -> bytes:
    """The same block exported by torch's dynamo exporter with dynamic batch and sequence."""
    return dynamic_block_onnx(64, 4)


def _ort(model: bytes, feeds):
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def test_cnn_gears_each_match_onnxruntime(cnn):
    cm = geir.compile(cnn, input_shape="x:-1,3,32,32", dynamic_batch_size="1,2,4,8", **FP32)
    assert isinstance(cm, GearedModel) and len(cm.programs) == 4
    assert cm.input_specs() == [("x", (-1, 3, 32, 32), np.dtype(np.float32))]
    rng = np.random.default_rng(0)
    for batch in (1, 2, 4, 8):
        x = rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)
        y = cm.run({"x": x})["y"]
        np.testing.assert_allclose(y, _ort(cnn, {"x": x}), rtol=1e-4, atol=1e-5)
    with pytest.raises(GeirError, match=r"input shapes x:3,3,32,32 match no gear; the model was compiled for "
                                        r"x:1,3,32,32 \| x:2,3,32,32 \| x:4,3,32,32 \| x:8,3,32,32"):
        cm.run({"x": np.zeros((3, 3, 32, 32), np.float32)})


def test_transformer_batch_gears_match_onnxruntime(block):
    cm = geir.compile(block, input_shape="x:-1,16,64", dynamic_batch_size="1,2,4,8", **FP32)
    rng = np.random.default_rng(1)
    for batch in (1, 2, 4, 8):
        x = rng.standard_normal((batch, 16, 64)).astype(np.float32)
        np.testing.assert_allclose(cm.run({"x": x})["y"], _ort(block, {"x": x}), rtol=1e-4, atol=1e-4)


def test_transformer_gears_over_batch_and_sequence_match_onnxruntime(block_dynamo):
    cm = geir.compile(block_dynamo, input_shape="x:-1,-1,64", dynamic_dims="1,16;2,32;4,8;8,16", **FP32)
    assert cm.input_specs() == [("x", (-1, -1, 64), np.dtype(np.float32))]
    rng = np.random.default_rng(1)
    for batch, seq in ((1, 16), (2, 32), (4, 8), (8, 16)):
        x = rng.standard_normal((batch, seq, 64)).astype(np.float32)
        np.testing.assert_allclose(cm.run({"x": x})["y"], _ort(block_dynamo, {"x": x}), rtol=1e-4, atol=1e-4)


def test_gears_share_the_weights_and_the_largest_workspace(cnn, tmp_path):
    geared = geir.compile(cnn, input_shape="x:-1,3,32,32", dynamic_batch_size="1,8", **FP32)
    single = geir.compile(cnn, input_shape="x:8,3,32,32", **FP32)
    stats = [memory_stats(p.module) for p in geared.programs]
    mem = geared.memory()
    assert mem["workspace_bytes"] == max(s["workspace_bytes"] for s in stats) == memory_stats(single.module)[
        "workspace_bytes"]
    assert mem["peak_memory_bytes"] == memory_stats(single.module)["peak_memory_bytes"]
    assert mem["separate_models_bytes"] == sum(s["peak_memory_bytes"] for s in stats) > mem["peak_memory_bytes"]
    geared.save(tmp_path / "g.om")
    single.save(tmp_path / "s.om")
    text = zipfile.ZipFile(tmp_path / "g.om").read("program.mlir").decode()
    assert text.count("builtin.module @gear_") == 2
    # the weights are in the file once: as many blobs, of as many bytes, as one program's
    blobs = [json.loads(zipfile.ZipFile(tmp_path / f).read("manifest.json"))["weights"] for f in ("g.om", "s.om")]
    assert len(blobs[0]) == len(blobs[1]) > 0
    assert sum(n for _, n in blobs[0].values()) == sum(n for _, n in blobs[1].values())
    loaded = geir.load(tmp_path / "g.om")
    assert isinstance(loaded, GearedModel) and loaded.gears == geared.gears
    x = np.random.default_rng(2).standard_normal((8, 3, 32, 32)).astype(np.float32)
    np.testing.assert_array_equal(loaded.run({"x": x})["y"], geared.run({"x": x})["y"])


def test_gear_report_per_gear(cnn):
    cm = geir.compile(cnn, input_shape="x:-1,3,32,32", dynamic_batch_size="1,4")
    rows = cm.gear_report()
    assert [r["gear"] for r in rows] == ["x:1,3,32,32", "x:4,3,32,32"]
    assert all(r["latency_us"] > 0 and r["peak_memory_bytes"] > 0 and r["compile_seconds"] > 0 for r in rows)
    assert rows[1]["peak_memory_bytes"] > rows[0]["peak_memory_bytes"]
    _, report = cm.profile(cm.random_inputs(gear=1))
    assert report["gear"] == "x:4,3,32,32"


def test_a_static_input_shape_fixes_the_dynamic_dims(cnn):
    cm = geir.compile(cnn, input_shape="x:3,3,32,32", **FP32)
    assert not isinstance(cm, GearedModel)
    assert cm.input_specs() == [("x", (3, 3, 32, 32), np.dtype(np.float32))]
    x = np.random.default_rng(3).standard_normal((3, 3, 32, 32)).astype(np.float32)
    np.testing.assert_allclose(cm.run({"x": x})["y"], _ort(cnn, {"x": x}), rtol=1e-4, atol=1e-5)


def test_the_plan_of_each_gear_option():
    batch = plan_shapes("x:-1,3,224,224;m:-1,1", dynamic_batch_size="1, 2,4")
    assert batch.gears[1] == {"x": (2, 3, 224, 224), "m": (2, 1)} and batch.option == "dynamic_batch_size"
    image = plan_shapes("img:1,3,-1,-1", dynamic_image_size="224,224;448,320")
    assert image.gears == ({"img": (1, 3, 224, 224)}, {"img": (1, 3, 448, 320)})
    dims = plan_shapes("x:-1,-1,64;mask:-1,1,1,-1", dynamic_dims="1,16,1,16;2,32,2,32")
    assert dims.gears[1] == {"x": (2, 32, 64), "mask": (2, 1, 1, 32)} and dims.dynamic == {"x": (0, 1), "mask": (0, 3)}
    static = plan_shapes("x:8,3,224,224")
    assert not static.geared and not static.ranged and static.gears == ({"x": (8, 3, 224, 224)},)
    ranged = plan_shapes("x:1~8,3,224,224;mask:1~8,1~128")
    assert ranged.ranged and not ranged.geared and ranged.gears == ({"x": (8, 3, 224, 224), "mask": (8, 128)},)
    assert ranged.ranges == {"x": {0: (1, 8)}, "mask": {0: (1, 8), 1: (1, 128)}}
    assert plan_shapes() is None


@pytest.mark.parametrize("text", ["x:1~8,3,224,224;mask:1~8,1~128", "x:-1,3;y:4", "a:b:2,2", "s:"])
def test_input_shape_text_is_written_as_it_is_read(text):
    assert format_input_shape(parse_input_shape(text)) == text


@pytest.mark.parametrize("kwargs, message", [
    ({"dynamic_batch_size": "1,2"}, "dynamic_batch_size needs input_shape with -1"),
    ({"input_shape": "x:2,8", "dynamic_batch_size": "1,2"}, "'x:2,8' has none"),
    ({"input_shape": "x:-1,8", "dynamic_batch_size": "1,2", "dynamic_dims": "1;2"},
     "dynamic_batch_size and dynamic_dims are mutually exclusive"),
    ({"input_shape": "x:-1,8", "dynamic_batch_size": "4"}, r"lists 1 gear\(s\); give 2 to 100"),
    ({"input_shape": "x:-1,8", "dynamic_batch_size": ",".join(map(str, range(1, 102)))}, "lists 101 gear"),
    ({"input_shape": "x:-1,8", "dynamic_batch_size": "1,2,1"}, "lists a gear twice"),
    ({"input_shape": "x:-1,8", "dynamic_batch_size": "1,0"}, "has a size below 1"),
    ({"input_shape": "x:-1,8", "dynamic_batch_size": "1,x"}, "'x' is not a list of sizes"),
    ({"input_shape": "x:8,-1", "dynamic_batch_size": "1,2"}, "-1 must be the first dim of 'x'"),
    ({"input_shape": "x:-1,8,8", "dynamic_image_size": "8,8;16,16"}, "must give 'x' two -1 dims, not 1"),
    ({"input_shape": "x:-1,-1", "dynamic_dims": "1,8;2"}, r"gear '2' gives 1 size\(s\); input_shape has 2"),
    ({"input_shape": "x:-1,8"}, "gives 'x' a -1 and no gear option: give the dim a range lo~hi"),
    ({"input_shape": "x:0~8,8"}, "range 0~8 of dim 0 starts below 1"),
    ({"input_shape": "x:1~8,8", "dynamic_batch_size": "1,2"}, "gives 'x' a range; with dynamic_batch_size"),
    ({"input_shape": "x:8~1,8"}, "is not a size, -1 or a range"),
    ({"input_shape": "x:-2,8"}, "'-2' is not a size"),
    ({"input_shape": "x=2,8"}, "expected NAME:D,D"),
    ({"input_shape": "x:1;x:2"}, "names 'x' twice"),
    ({"input_shape": " ; "}, "input_shape is empty"),
])
def test_bad_options_are_one_clear_error(kwargs, message):
    with pytest.raises(ShapeOptionError, match=message):
        plan_shapes(**kwargs)


@pytest.mark.parametrize("shape, message", [
    ("y:2,3,32,32", "input_shape names 'y', which is not a graph input; the inputs are x"),
    ("x:2,4,32,32", "input_shape gives 'x' dim 1 size 4; the model fixes it at 3"),
    ("x:2,3,32", "input_shape gives 'x' 3 dims; the model's has 4"),
])
def test_an_input_shape_that_contradicts_the_model_is_an_error(cnn, shape, message):
    with pytest.raises(GeirError, match=message):
        geir.compile(cnn, input_shape=shape)


def test_a_dynamic_model_without_shapes_says_how_to_give_them(cnn):
    with pytest.raises(GeirError, match="graph input 'x' has a dynamic dimension 'batch'; geir compiles static "
                                        "shapes: give it one with input_shape"):
        geir.compile(cnn)


def test_input_shape_needs_a_model_with_dynamic_dims():
    # graph-level IR has its shapes; a torch module or ExportedProgram takes gears and ranges
    # (test_torch_shapes.py)
    b = geir.GraphBuilder("main")
    b.output("y", b.relu(b.input("x", (2, 3), "f32")))
    with pytest.raises(GeirError, match="input_shape and gears set the dynamic input dims of an ONNX model, a torch "
                                        "module or an ExportedProgram; this model's shapes are fixed"):
        geir.compile(b, input_shape="x:-1,3", dynamic_batch_size="1,2")


# -- padding to the next larger gear (driver/gear_padding.py) ----------------------------------


def test_cnn_pads_every_batch_between_gears(cnn, tmp_path):
    cm = geir.compile(cnn, input_shape="x:-1,3,32,32", dynamic_batch_size="1,2,4,8", pad_to_gear=True, **FP32)
    assert cm.padding == {(("x", 0),): {"y": Carried(0)}} and cm.unpadded == {}
    assert cm.padded_gear({"x": (5, 3, 32, 32)}) == (3, {(("x", 0),): 5})
    for batch in range(1, 9):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 32, 32)).astype(np.float32)
        np.testing.assert_allclose(cm.run({"x": x})["y"], _ort(cnn, {"x": x}), rtol=1e-4, atol=1e-5)
    with pytest.raises(GeirError, match="x:9,3,32,32 fit no gear, even padded"):
        cm.run({"x": np.zeros((9, 3, 32, 32), np.float32)})
    cm.save(tmp_path / "p.om")
    loaded = geir.load(tmp_path / "p.om")
    x = np.random.default_rng(9).standard_normal((3, 3, 32, 32)).astype(np.float32)
    np.testing.assert_array_equal(loaded.run({"x": x})["y"], cm.run({"x": x})["y"])


def test_transformer_pads_its_batch_not_its_sequence(block_dynamo):
    """nn.MultiheadAttention runs sequence-first ([S * B, E] rows): the batch is interleaved
    with the sequence, and still pads exactly. The sequence does not: padded keys would join
    every real query's softmax."""
    cm = geir.compile(block_dynamo, input_shape="x:-1,-1,64", dynamic_dims="1,16;8,16;1,32;8,32", pad_to_gear=True,
                      **FP32)
    assert list(cm.padding) == [(("x", 0),)]
    (why,) = cm.unpadded.values()
    assert why.startswith("padding x dim 1 is not exact: 'graph.matmul' at ") and "padded columns" in why
    for batch, seq in ((3, 16), (5, 32), (8, 32)):
        x = np.random.default_rng(batch).standard_normal((batch, seq, 64)).astype(np.float32)
        np.testing.assert_allclose(cm.run({"x": x})["y"], _ort(block_dynamo, {"x": x}), rtol=1e-4, atol=1e-4)
    with pytest.raises(GeirError, match="x:3,20,64 match no gear and cannot be padded: padding x dim 1 is not exact"):
        cm.run({"x": np.zeros((3, 20, 64), np.float32)})


def test_pad_to_gear_with_nothing_to_pad_is_an_error(block_dynamo):
    with pytest.raises(GeirError, match="padding x dim 1 is not exact"):
        geir.compile(block_dynamo, input_shape="x:2,-1,64", dynamic_dims="16;32", pad_to_gear=True)
    with pytest.raises(GeirError, match="pad_to_gear pads an input to the next larger gear: give gears"):
        geir.compile(block_dynamo, input_shape="x:2,16,64", pad_to_gear=True)


def _plan(build, shape):
    b = GraphBuilder()
    x = b.input("x", shape)
    b.output("y", build(b, x))
    plan, refused = padding_plan(b.finish(), ["x"], ["y"], [(("x", 0),)])
    return plan.get((("x", 0),), {}).get("y"), next(iter(refused.values()), None)


@pytest.mark.parametrize("build, carried", [
    (lambda b, x: b.relu(b.add(x, np.ones((1, 6), np.float32))), Carried(0)),
    (lambda b, x: b.softmax(x, axis=1), Carried(0)),
    (lambda b, x: b.reduce_sum(x, axes=[1], keepdims=0), Carried(0)),
    (lambda b, x: b.matmul(x, np.ones((6, 3), np.float32)), Carried(0)),
    (lambda b, x: b.transpose(x, perm=[1, 0]), Carried(1)),
    # [4, 6] -> [24]: the rows merge with the columns, the real ones still a prefix of 6 each
    (lambda b, x: b.reshape(x, np.array([24])), Carried(0, inner=6)),
    # [4, 6] -> [6, 4] -> [24]: sequence-first, the batch interleaved under 6 outer rows
    (lambda b, x: b.reshape(b.transpose(x, perm=[1, 0]), np.array([24])), Carried(0, outer=6)),
])
def test_ops_that_keep_rows_apart(build, carried):
    assert _plan(build, [4, 6]) == (carried, None)


@pytest.mark.parametrize("build, why", [
    (lambda b, x: b.reduce_mean(x, axes=[0], keepdims=1), "reduces or normalises over it"),
    (lambda b, x: b.softmax(x, axis=0), "reduces or normalises over it"),
    (lambda b, x: b.matmul(b.transpose(x, perm=[1, 0]), x), "contracts over it"),
    (lambda b, x: b.add(x, np.arange(24, dtype=np.float32).reshape(4, 6)), "varies along it but does not hold it"),
    (lambda b, x: b.concat(x, x, axis=0), "joins or splits along it"),
    (lambda b, x: b.reshape(x, np.array([2, 12])), "splitting it across dims"),
])
def test_ops_that_mix_rows_are_refused(build, why):
    carried, reason = _plan(build, [4, 6])
    assert carried is None and why in reason and reason.startswith("padding x dim 0 is not exact: 'graph.")


def test_an_attention_over_the_dim_is_exact_only_with_its_keys_masked():
    """q's rows and k's and v's keys hold the dim: each query row is computed alone, but its
    softmax would take the padded keys. Exact for a shape range, whose attention kernel masks
    them with the run-time size; refused for pad-to-gear, and with a mask operand."""
    b = GraphBuilder()
    x = b.input("x", [1, 2, 8, 4])
    m = b.input("m", [1, 1, 8, 8])
    b.output("y", b.attention(x, x, x, scale=0.5))
    b.output("z", b.attention(x, x, x, m, scale=0.5))
    module = b.finish()
    dim = (("x", 2),)
    plan, refused = padding_plan(module, ["x", "m"], ["y", "z"], [dim])
    assert "attends across it (a padded key would join the real queries' softmax)" in refused[dim]
    plan, refused = padding_plan(module, ["x", "m"], ["y", "z"], [dim], masked_keys=True)
    assert "attends across it with a mask" in refused[dim]
    plan, refused = padding_plan(module, ["x", "m"], ["y", "z"], [(("m", 2),)], masked_keys=True)
    assert refused[(("m", 2),)].endswith("takes a mask that holds it")
    b = GraphBuilder()
    x = b.input("x", [1, 2, 8, 4])
    b.output("y", b.attention(x, x, x, scale=0.5))
    plan, refused = padding_plan(b.finish(), ["x"], ["y"], [dim], masked_keys=True)
    assert not refused and plan[dim]["y"] == Carried(2)


def test_the_interpreter_runs_a_geared_module_by_its_inputs(cnn, tmp_path):
    """The top-level module of a geared offline model (its ascend.gears op and a program per
    gear) runs as one: the interpreter takes the program whose input shapes the feeds have."""
    from geir.driver.om import read_program
    from geir.runtime.ascend_interpreter import InterpreterError, run_ascend_module

    cm = geir.compile(cnn, input_shape="x:-1,3,32,32", dynamic_batch_size="1,2", **FP32)
    cm.save(tmp_path / "g.om")
    _, module = read_program(tmp_path / "g.om")
    x = np.random.default_rng(4).standard_normal((2, 3, 32, 32)).astype(np.float32)
    np.testing.assert_array_equal(run_ascend_module(module, {"x": x})["y"], cm.run({"x": x})["y"])
    with pytest.raises(InterpreterError, match=r"input shapes \{'x': \(3, 3, 32, 32\)\} match no program of"):
        run_ascend_module(module, {"x": np.zeros((3, 3, 32, 32), np.float32)})


def test_each_dim_is_analysed_where_it_is_largest(block_dynamo):
    """Gears (1, 32) and (8, 16): the largest gear by elements has batch 1, which would not tell
    the batch's axis apart; the batch is analysed on (8, 16), the sequence on (1, 32)."""
    cm = geir.compile(block_dynamo, input_shape="x:-1,-1,64", dynamic_dims="1,32;8,16", pad_to_gear=True, **FP32)
    assert list(cm.padding) == [(("x", 0),)] and list(cm.unpadded) == [(("x", 1),)]
    x = np.random.default_rng(5).standard_normal((3, 16, 64)).astype(np.float32)
    np.testing.assert_allclose(cm.run({"x": x})["y"], _ort(block_dynamo, {"x": x}), rtol=1e-4, atol=1e-4)


# -- shape ranges (driver/shape_ranges.py) -------------------------------------------------------


@pytest.fixture(scope="module")
def cnn_range(cnn):
    return geir.compile(cnn, input_shape="x:1~8,3,32,32", **FP32)


def test_cnn_range_matches_onnxruntime_at_every_batch(cnn, cnn_range):
    cm = cnn_range
    assert isinstance(cm, RangeModel) and cm.ranges() == "x:1~8,3,32,32"
    assert cm.input_specs() == [("x", (-1, 3, 32, 32), np.dtype(np.float32))]
    for batch in range(1, 9):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 32, 32)).astype(np.float32)
        y = cm.run({"x": x})["y"]
        assert y.shape == (batch, 10)
        np.testing.assert_allclose(y, _ort(cnn, {"x": x}), rtol=1e-4, atol=1e-5)


def test_a_range_program_is_planned_for_its_upper_bound_and_timed_at_the_actual_size(cnn, cnn_range):
    """Every kernel takes the batch's extent and runs the tiles of the real images only: the
    modeled time follows the batch, the memory is the upper bound's."""
    kernels = [op for op in cnn_range.module.walk() if isinstance(op, KernelOp)]
    assert kernels and all(attr_names.EXTENT in k.attributes for k in kernels)
    static = geir.compile(cnn, input_shape="x:8,3,32,32", **FP32)
    assert memory_stats(cnn_range.module)["workspace_bytes"] == memory_stats(static.module)["workspace_bytes"]
    runs = {}
    for batch in (1, 8):
        _, report = cnn_range.profile(cnn_range.random_inputs(sizes={"batch": batch}), mode="timing")
        assert report["shape_range"] == {"batch": {"size": batch, "range": [1, 8]}}
        runs[batch] = {k["name"]: k for k in report["kernels"]}
    _, at8 = static.profile(mode="timing")
    assert sum(k["time_us"] for k in runs[8].values()) == pytest.approx(sum(k["time_us"] for k in at8["kernels"]),
                                                                        rel=0.02)
    # the convs compute one image instead of eight; the kernels but the last (whose one tile of
    # 16 rows holds every batch) move a fraction of the bytes, from HBM or L2 (the weights are
    # read whole)
    convs = [n for n in runs[1] if "Conv" in n]
    assert len(convs) == 2 and all(runs[1][n]["cube_flops"] * 8 == runs[8][n]["cube_flops"] > 0 for n in convs)
    *rest, gemm = runs[1]

    def moved(batch: int, name: str) -> int:
        return runs[batch][name]["hbm_bytes"] + runs[batch][name]["l2_hit_bytes"]

    assert all(moved(1, n) * 6 < moved(8, n) for n in rest)
    assert moved(1, gemm) == moved(8, gemm)


def test_transformer_batch_range_matches_onnxruntime(block):
    cm = geir.compile(block, input_shape="x:1~8,16,64", **FP32)
    for batch in range(1, 9):
        x = np.random.default_rng(batch).standard_normal((batch, 16, 64)).astype(np.float32)
        np.testing.assert_allclose(cm.run({"x": x})["y"], _ort(block, {"x": x}), rtol=1e-4, atol=1e-4)


def test_the_dynamo_block_batch_range_runs_the_real_rows_in_every_kernel(block_dynamo):
    """The dynamo export runs nn.MultiheadAttention sequence-first inside the batch-first
    block. graph-transpose-into-attention moves the transposes around its projections into
    the attention's addressing, so every kernel holds the batch at its outputs' axis 0 and
    takes the extent (the attention too), no data kernel is left, and each batch 1..8
    matches onnxruntime."""
    cm = geir.compile(block_dynamo, input_shape="x:1~8,16,64", **FP32)
    kernels = [k for k in cm.program.module.ops if isinstance(k, KernelOp)]
    assert [k.attributes["template"].data for k in kernels] == ["matmul", "attention", "matmul", "row", "matmul",
                                                                "matmul"]  # the last with its norm epilogue
    assert all(attr_names.EXTENT in k.attributes for k in kernels)
    for batch in range(1, 9):
        x = np.random.default_rng(batch).standard_normal((batch, 16, 64)).astype(np.float32)
        np.testing.assert_allclose(cm.run({"x": x})["y"], _ort(block_dynamo, {"x": x}), rtol=1e-4, atol=1e-4)


def test_a_sequence_range_masks_the_padded_keys(block_dynamo):
    """A range over the dynamo block's sequence: graph.attention's query rows and keys hold it,
    so the proof (on the recognised graph) accepts it only because the attention kernel masks
    the padded keys with the run-time size (`geir.key_extent`). The sequence sits under the
    batch, and every kernel takes its extent: the first positions of each batch row run (n
    rounded up to the key quantum, common.key_quantum, in the kernels whose rows the attention
    reads as keys; the real ones in the kernels after it), the attention's key tiles past n do
    not. A top of 24 positions is one quantum (no quantum of 16 or more divides it): the
    kernels before the attention compute every position (and say why), the attention and the
    kernels after it take the size. With the
    batch ranged too, the kernels take the batch's extent. Each size matches onnxruntime
    (without the mask, size 5 is 0.53 off; without the quantum, `wide` gives NaNs: its last
    key tile would read rows no kernel wrote, which the interpreter poisons)."""
    seq = geir.compile(block_dynamo, input_shape="x:2,1~24,64", **FP32)
    both = geir.compile(block_dynamo, input_shape="x:1~4,1~32,64", **FP32)
    # two batch rows of up to 256 positions, computed in 32s (the top holds 8 quanta): tiles
    # of the second batch row run while tiles of the first are skipped
    wide = geir.compile(block_dynamo, input_shape="x:2,1~256,64", **FP32)
    for cm in (seq, both, wide):
        kernels = [k for k in cm.program.module.ops if isinstance(k, KernelOp)]
        masked = [k.attributes["template"].data for k in kernels if attr_names.KEY_EXTENT in k.attributes]
        assert masked == ["attention"]
        whole = [k for k in kernels if attr_names.ALL_ROWS in k.attributes]
        assert all(k in whole or attr_names.EXTENT in k.attributes or attr_names.KEY_EXTENT in k.attributes
                   for k in kernels)
        if cm is seq:  # the kernels before the attention compute the one quantum whole, those after take n
            assert any(attr_names.EXTENT in k.attributes for k in kernels)
            assert any("reads these rows as keys" in k.attributes[attr_names.ALL_ROWS].data for k in whole)
        else:
            assert whole == []
    long = geir.compile(block_dynamo, input_shape="x:1,1~160,64", **FP32)  # query tiles past n are skipped
    cases = ((seq, 2, 1), (seq, 2, 5), (seq, 2, 17), (seq, 2, 24), (both, 1, 9), (both, 3, 31), (long, 1, 40),
             (long, 1, 160), (wide, 2, 1), (wide, 2, 77), (wide, 2, 128), (wide, 2, 130), (wide, 2, 256))
    for cm, batch, size in cases:
        x = np.random.default_rng(size).standard_normal((batch, size, 64)).astype(np.float32)
        np.testing.assert_allclose(cm.run({"x": x})["y"], _ort(block_dynamo, {"x": x}), rtol=1e-4, atol=1e-4)


def test_packed_tiles_hold_several_batch_rows():
    """A sequence range under the batch: a matmul's row tiles lie inside one batch row's
    positions, and a tile computes all its rows however few are real. Packed tiles hold
    segments of several batch rows (`geir.packed_rows`: r = mt / 2, mt / 4, ... where the
    tiling's prices say it pays): each batch row's real rows, rounded up to the least r, are
    its whole tiles and then a segment per bit of the rest - the out-projection, the FFN's
    first mix kernel with its epilogue, and the head-split q / k / v projection, whose packed
    groups are batch entries (its rows are computed in key quanta of 32, so only r = 32 runs).
    The FFN's second product takes the residual Add + LayerNorm as a norm epilogue, whose work
    items are whole rows: it does not pack (it computes its tiles' padding rows, and is still
    faster than the product and the row kernel it replaces: 67.4 against 74.9 us at 1 position,
    130.4 against 130.8 at 256). Sizes below, at and past one tile's rows match onnxruntime; at
    a size that is a multiple of a kernel's least r, the kernel computes the static program's
    FLOPs, no padding rows (with tiles inside one batch row, up to 4x)."""
    data = dynamic_block_onnx(256, 4)
    cm = geir.compile(data, input_shape="x:8,1~256,256", **FP32)
    packed = {k.sym_name.data.split("_", 1)[1]: (k.core_type.data, list(k.attributes[attr_names.PACKED_ROWS].get_values()))
              for k in cm.program.module.ops if isinstance(k, KernelOp) and attr_names.PACKED_ROWS in k.attributes}
    assert packed == {"node_MatMul_4": ("cube", [32]), "node_Gemm_109": ("cube", [32, 64]),
                      "node_MatMul_88": ("mix", [16, 32])}
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for size in (1, 16, 17, 32, 33, 64, 65, 100, 129, 200, 256):
        x = np.random.default_rng(size).standard_normal((8, size, 256)).astype(np.float32)
        np.testing.assert_allclose(cm.run({"x": x})["y"], sess.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)
    by_least = {16: ["node_MatMul_88"], 32: ["node_Gemm_109", "node_MatMul_4"]}
    for size in (16, 32, 64, 80, 96, 192):
        names = [n for least, ns in by_least.items() if size % least == 0 for n in ns]
        _, ranged = cm.profile({"x": np.zeros((8, size, 256), np.float32)}, mode="timing")
        _, static = geir.compile(data, input_shape=f"x:8,{size},256", **FP32).profile(mode="timing")
        flops = [{k["name"].split("_", 1)[1]: k["cube_flops"] for k in r["kernels"]} for r in (ranged, static)]
        assert {n: flops[0][n] for n in names} == {n: flops[1][n] for n in names}, size
        assert ranged["race_count"] == 0  # each group's FIX copy and epilogue waits for the tile's product


def test_packed_tiles_hold_several_batch_rows_of_a_gated_product():
    """SwiGLU's gated product (gate and up share the lhs; the partner's result is staged for
    the epilogue) packs too: each group's partner rows are staged and each group's epilogue
    runs on its own rows. The tiny LLaMA at 8 x 1~256 positions: both layers' gate kernels
    pack, sizes around each key's bound match onnxruntime, at 64 positions each gate kernel
    computes the static program's FLOPs (the tiles inside one group: 4x) and the simulator
    finds no race between the staged partner rows and the product after them."""
    from geir.models import CONFIGS
    from geir.testing.llama import export_onnx, llama_reference

    data = export_onnx(llama_reference(CONFIGS["tiny"], seed=0), batch=8, seq=32, dynamic_seq=True).SerializeToString()
    cm = geir.compile(data, input_shape="input_ids:8,1~256", **FP32)
    gates = {k.sym_name.data.split("_", 1)[1]: list(k.attributes[attr_names.PACKED_ROWS].get_values())
             for k in cm.program.module.ops if isinstance(k, KernelOp) and "gate_proj" in k.sym_name.data
             and attr_names.PACKED_ROWS in k.attributes}
    assert sorted(gates) == ["inner_layers_0_mlp_gate_proj_MatMul", "inner_layers_1_mlp_gate_proj_MatMul"]
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for size in (1, 32, 33, 64, 65, 256):
        ids = np.random.default_rng(size).integers(0, CONFIGS["tiny"].vocab, (8, size)).astype(np.int64)
        np.testing.assert_allclose(cm.run({"input_ids": ids})["logits"], sess.run(None, {"input_ids": ids})[0],
                                   rtol=1e-4, atol=1e-4)
    _, ranged = cm.profile({"input_ids": np.zeros((8, 64), np.int64)}, mode="timing")
    _, static = geir.compile(data, input_shape="input_ids:8,64", **FP32).profile(mode="timing")
    flops = [{k["name"].split("_", 1)[1]: k["cube_flops"] for k in r["kernels"]} for r in (ranged, static)]
    assert {n: flops[0][n] for n in gates} == {n: flops[1][n] for n in gates}
    assert ranged["race_count"] == 0


def test_a_llama_sequence_range_runs_the_real_positions():
    """The tiny LLaMA (GQA, RoPE, causal) exported with a dynamic sequence and compiled for
    2 rows of 1~256 positions: the token ids' embedding lookup pads exactly (a padded id is 0,
    a real row of the table), every kernel takes the extent - the lookup, the norm-fused
    projections writing q's and k's and v's heads, the rotary kernels - and each attention
    masks the padded keys. Each size matches onnxruntime."""
    from geir.models import CONFIGS
    from geir.testing.llama import export_onnx, llama_reference

    proto = export_onnx(llama_reference(CONFIGS["tiny"], seed=0), batch=2, seq=32, dynamic_seq=True)
    data = proto.SerializeToString()
    cm = geir.compile(data, input_shape="input_ids:2,1~256", **FP32)
    kernels = [k for k in cm.program.module.ops if isinstance(k, KernelOp)]
    plain = [k.attributes["template"].data for k in kernels
             if attr_names.EXTENT not in k.attributes and attr_names.KEY_EXTENT not in k.attributes]
    assert plain == []
    assert [k.attributes["template"].data for k in kernels if attr_names.KEY_EXTENT in k.attributes] == ["attention"] * 2
    for size in (1, 7, 129, 256):
        ids = np.random.default_rng(size).integers(0, CONFIGS["tiny"].vocab, (2, size)).astype(np.int64)
        np.testing.assert_allclose(cm.run({"input_ids": ids})["logits"], _ort(data, {"input_ids": ids}),
                                   rtol=1e-4, atol=1e-4)


def test_a_long_sequences_causal_mask_is_recognised():
    """At 4096 positions the exported causal mask ([4096, 4096] f32, 64 MiB) is too large to
    fold, so graph-recognize-attention computes it to test it for the causal triangle: the
    attention is causal with no mask operand, and a range up to 4096 is accepted (a mask
    operand would hold the padded keys' entries: refused). Sizes 5 and 300 match
    onnxruntime."""
    import dataclasses

    from geir.models import CONFIGS
    from geir.testing.llama import export_onnx, llama_reference

    config = dataclasses.replace(CONFIGS["tiny"], layers=1, max_seq=4096)
    data = export_onnx(llama_reference(config, seed=0), batch=1, seq=16, dynamic_seq=True).SerializeToString()
    cm = geir.compile(data, input_shape="input_ids:1,1~4096", **FP32)
    (attention,) = [k for k in cm.program.module.ops if isinstance(k, KernelOp)
                    and k.attributes["template"].data == "attention"]
    assert attr_names.KEY_EXTENT in attention.attributes
    for size in (5, 300):
        ids = np.random.default_rng(size).integers(0, config.vocab, (1, size)).astype(np.int64)
        np.testing.assert_allclose(cm.run({"input_ids": ids})["logits"], _ort(data, {"input_ids": ids}),
                                   rtol=1e-4, atol=1e-4)


def test_a_lookup_pads_only_at_the_callers_indices():
    """A gather of a table at indices that hold the range's dim pads exactly when the indices
    are an input (the host pads them with 0s); at indices an op computed, a padded row's
    index could be any value, and the range is refused."""
    from onnx import TensorProto, helper, numpy_helper

    table = numpy_helper.from_array(np.arange(40, dtype=np.float32).reshape(10, 4), "table")
    one = numpy_helper.from_array(np.array(1, np.int64), "one")

    def model(nodes: list) -> bytes:
        graph = helper.make_graph(nodes, "lookup", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, "seq"])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "seq", 4])], [table, one])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()

    direct = model([helper.make_node("Gather", ["table", "ids"], ["y"], name="embed")])
    cm = geir.compile(direct, input_shape="ids:2,1~16", **FP32)
    ids = np.array([[3, 1, 4], [1, 5, 9]], np.int64)
    np.testing.assert_array_equal(cm.run({"ids": ids})["y"], np.arange(40, dtype=np.float32).reshape(10, 4)[ids])
    computed = model([helper.make_node("Add", ["ids", "one"], ["next"], name="shift"),
                      helper.make_node("Gather", ["table", "next"], ["y"], name="embed")])
    with pytest.raises(GeirError, match=r"'graph.gather' at embed selects with it \(indices some op computed"):
        geir.compile(computed, input_shape="ids:2,1~16", **FP32)


def _mean_over_sequence() -> bytes:
    """y[batch, 8] = ReduceMean(x[batch, seq, 8], axis 1): every row of y reads every position."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0, name="pool")], "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_a_range_over_a_dim_some_op_mixes_is_refused():
    """A mean over the sequence would count the padded positions: the range is refused, naming
    the op; the batch alone is fine."""
    model = _mean_over_sequence()
    with pytest.raises(GeirError, match=r"shape range x dim 1 \(seq: 1~16\): padding x dim 1 is not exact: "
                                        r"'graph.reduce_mean' at pool reduces or normalises over it; give its sizes as gears"):
        geir.compile(model, input_shape="x:2,1~16,8")
    cm = geir.compile(model, input_shape="x:1~4,16,8", **FP32)
    x = np.random.default_rng(3).standard_normal((3, 16, 8)).astype(np.float32)
    np.testing.assert_allclose(cm.run({"x": x})["y"], _ort(model, {"x": x}), rtol=1e-5, atol=1e-5)


def test_a_kernel_that_computes_every_row_says_why(block_dynamo):
    """A sequence range whose top no key quantum divides (1~8): what the attention reads as
    keys is computed whole, and each kernel that computes every row says why in one line
    (geir-compile prints the lines); the others take the extent or (the attention) mask the
    padded keys. The sizes still match onnxruntime."""
    from geir.tools.geir_compile import _range_summary

    cm = geir.compile(block_dynamo, input_shape="x:2,1~8,64", **FP32)
    kernels = [k for k in cm.program.module.ops if isinstance(k, KernelOp)]
    marked = [k for k in kernels if attr_names.ALL_ROWS in k.attributes]
    assert all(k in marked or attr_names.EXTENT in k.attributes or attr_names.KEY_EXTENT in k.attributes
               for k in kernels)
    assert "an attention reads these rows as keys, computed in whole key quanta (64 or 32 or 16 positions " \
           "dividing the range's top): here all 8" in {k.attributes[attr_names.ALL_ROWS].data for k in marked}
    assert _range_summary(cm).count(": every row: ") == len(marked) > 0
    for size in (1, 5):
        x = np.random.default_rng(size).standard_normal((2, size, 64)).astype(np.float32)
        np.testing.assert_allclose(cm.run({"x": x})["y"], _ort(block_dynamo, {"x": x}), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, message", [
    ((9, 3, 32, 32), r"x dim 0 \(1~8\) is 9, outside the range the program was compiled for"),
    ((0, 3, 32, 32), r"x dim 0 \(1~8\) is 0, outside the range"),
    ((2, 3, 32, 16), "input 'x' dim 3 is 16; the program fixes it at 32"),
    ((2, 3, 32), "input 'x' has 3 dims; the program's has 4"),
])
def test_inputs_outside_the_range_are_one_clear_error(cnn_range, shape, message):
    with pytest.raises(GeirError, match=message):
        cnn_range.run({"x": np.zeros(shape, np.float32)})


def test_the_runtime_fills_the_extent_itself(cnn_range):
    with pytest.raises(GeirError, match="'batch.extent' is the size of x dim 0 .* do not feed it"):
        cnn_range.program.run({"x": np.zeros((2, 3, 32, 32), np.float32), "batch.extent": np.array([2])})


def test_a_range_program_saves_and_runs_from_its_offline_model(cnn_range, tmp_path):
    """The ranges live in the program (its extent argument and its outputs' attributes), so
    the offline model, geir-run and the interpreter take any size in them."""
    from geir.tools.geir_run import main as geir_run

    cnn_range.save(tmp_path / "r.om")
    loaded = geir.load(tmp_path / "r.om")
    x = np.random.default_rng(7).standard_normal((3, 3, 32, 32)).astype(np.float32)
    np.testing.assert_array_equal(loaded.run({"x": x})["y"], cnn_range.run({"x": x})["y"])
    np.save(tmp_path / "x.npy", x)
    assert geir_run([str(tmp_path / "r.om"), "--input", f"x={tmp_path / 'x.npy'}", "--output", str(tmp_path / "o.npz")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "o.npz")["y"], cnn_range.run({"x": x})["y"])


def test_positions_of_one_dim_param_share_a_range():
    from geir.driver.shape_ranges import range_dims

    plan = plan_shapes("x:1~8,16;mask:1~4,16")
    with pytest.raises(GeirError, match="input_shape gives the model's dim 'batch' different ranges: x dim 0 1~8, "
                                        "mask dim 0 1~4"):
        range_dims(plan, {"x": ["batch", None], "mask": ["batch", None]})
    dims = range_dims(plan_shapes("x:1~8,16;mask:1~8,16"), {"x": ["batch", None], "mask": ["batch", None]})
    assert [(d.positions, d.symbol) for d in dims] == [((("x", 0), ("mask", 0)), "batch")]
    # without dim_params each position is a dim of its own
    assert len(range_dims(plan_shapes("x:1~8,16;mask:1~8,16"), {})) == 2


def test_a_graph_level_range_program_runs_at_its_tops_only(cnn_range):
    """Its outputs are not cropped (only the lowered program's are): a smaller size is an error,
    not outputs with padding rows; at the top the runtime fills the extent."""
    from geir.runtime.interpreter import run_module

    graph = cnn_range.stages[cnn_range.stage_names[0]]
    x = np.random.default_rng(5).standard_normal((8, 3, 32, 32)).astype(np.float32)
    np.testing.assert_allclose(run_module(graph, {"x": x})["y"], cnn_range.run({"x": x})["y"], rtol=1e-4, atol=1e-5)
    with pytest.raises(GeirError, match=r"a graph-level shape-range program runs at its ranges' tops: x dim 0 "
                                        r"\(1~8\) is 3, not 8"):
        run_module(graph, {"x": x[:3]})
