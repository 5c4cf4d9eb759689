"""The compile cache (driver/compile_cache.py): a hit loads the program another compile
wrote; anything that decides the program (the graph, its weights, an option) misses; a bad
entry is compiled again. bench/compile_cache.py measures the time across processes."""

import numpy as np
import pytest

import geir


def _model(scale: float = 1.0):
    b = geir.GraphBuilder("main")
    x = b.input("x", (8, 64), "f32")
    w = b.weight("w", (np.arange(64 * 32, dtype=np.float32).reshape(64, 32) % 7 - 3) * scale)
    b.output("y", b.relu(b.matmul(x, w, name="mm"), name="relu"))
    return b


def test_hit_loads_the_same_program(tmp_path):
    first = geir.compile(_model(), cache_dir=tmp_path)
    second = geir.compile(_model(), cache_dir=tmp_path)
    assert not first.cache_hit and second.cache_hit
    assert second.stage_names == ["01_import", "cached"]
    feeds = first.random_inputs(seed=1)
    np.testing.assert_array_equal(first.run(feeds)["y"], second.run(feeds)["y"])
    assert second.mlir() == first.mlir()  # the final program, printed, is the same
    assert len(list(tmp_path.glob("*.pkl"))) == 1


@pytest.mark.parametrize("change", ["weights", "option", "opt_level"])
def test_what_decides_the_program_misses(tmp_path, change):
    geir.compile(_model(), cache_dir=tmp_path)
    model = _model(scale=2.0) if change == "weights" else _model()
    options = {"precision_mode": "must_keep_origin_dtype"} if change == "option" else {}
    cm = geir.compile(model, opt_level=2 if change == "opt_level" else 3, cache_dir=tmp_path, **options)
    assert not cm.cache_hit
    assert len(list(tmp_path.glob("*.pkl"))) == 2


def test_environment_variable_and_keep_stages(tmp_path, monkeypatch):
    monkeypatch.setenv("GEIR_CACHE_DIR", str(tmp_path))
    geir.compile(_model())
    assert geir.compile(_model()).cache_hit
    assert not geir.compile(_model(), keep_stages=True).cache_hit  # every stage asked for: compiled


def test_unreadable_entry_is_compiled_again(tmp_path):
    geir.compile(_model(), cache_dir=tmp_path)
    entry, = tmp_path.glob("*.pkl")
    entry.write_bytes(b"not a pickle")
    cm = geir.compile(_model(), cache_dir=tmp_path)
    assert not cm.cache_hit
    assert geir.compile(_model(), cache_dir=tmp_path).cache_hit  # rewritten


def _onnx(bias: float):
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.full((16, 4), 0.5, np.float32), "w")
    b = numpy_helper.from_array(np.full((4,), bias, np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_onnx_model_is_keyed_by_its_bytes_and_skips_the_import(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(_onnx(1.0).SerializeToString())
    cache = tmp_path / "cache"
    first = geir.compile(str(path), cache_dir=cache)
    second = geir.compile(_onnx(1.0), cache_dir=cache)  # the same bytes as a ModelProto: the same entry
    assert not first.cache_hit and second.cache_hit and second.stage_names == ["cached"]
    x = {"x": np.ones((2, 16), np.float32)}
    np.testing.assert_array_equal(first.run(x)["y"], second.run(x)["y"])
    assert not geir.compile(_onnx(2.0), cache_dir=cache).cache_hit  # another weight: another model
    assert not geir.compile(str(path), cache_dir=cache, weights=False).cache_hit  # another import


def _torch_module(branch: str = "* 3.0", seed: int = 0):
    """A module whose forward has a branch torch.jit.trace does not take (`branch`)."""
    import textwrap

    import torch

    ns = {"torch": torch}
    exec(textwrap.dedent(f"""
        class Scaled(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(16, 8)

            def forward(self, x):
                y = torch.relu(self.fc(x))
                if torch.jit.is_tracing():
                    return y + 1.0
                return y {branch}
        """), ns)
    torch.manual_seed(seed)
    return ns["Scaled"](), (torch.randn(4, 16),)


def test_torch_module_is_keyed_before_its_import(tmp_path):
    model, inputs = _torch_module()
    fp32 = {"precision_mode": "must_keep_origin_dtype"}
    first = geir.compile(model, example_inputs=inputs, cache_dir=tmp_path, **fp32)
    second = geir.compile(_torch_module()[0], example_inputs=inputs, cache_dir=tmp_path, **fp32)
    assert not first.cache_hit and second.cache_hit
    assert second.stage_names == ["cached"]  # torch.export and the import skipped
    feeds = first.random_inputs(seed=1)
    out = model(torch_tensor(feeds)).detach().numpy()  # eager: the branch torch.export takes too
    result, = second.run(feeds).values()
    np.testing.assert_allclose(result, out, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("change", ["weights", "untraced branch", "input shape", "frontend"])
def test_what_decides_a_torch_program_misses(tmp_path, change):
    import torch

    model, inputs = _torch_module()
    geir.compile(model, example_inputs=inputs, cache_dir=tmp_path)
    options = {"torch_frontend": "onnx"} if change == "frontend" else {}
    model, inputs = _torch_module(branch="* 2.0" if change == "untraced branch" else "* 3.0",
                                  seed=1 if change == "weights" else 0)
    if change == "input shape":
        inputs = (torch.randn(2, 16),)
    cm = geir.compile(model, example_inputs=inputs, cache_dir=tmp_path, **options)
    assert not cm.cache_hit


def test_torch_outputs_structure_is_in_the_key(tmp_path):
    import torch

    def named(key: str):
        class Named(torch.nn.Module):  # the tracer's graph returns the tensor alone
            def forward(self, x):
                return {key: torch.relu(x)}
        return Named()

    inputs = (torch.randn(4, 16),)
    geir.compile(named("y"), example_inputs=inputs, cache_dir=tmp_path)
    hit = geir.compile(named("y"), example_inputs=inputs, cache_dir=tmp_path)
    assert hit.cache_hit and hit.stage_names == ["cached"]
    assert not geir.compile(named("z"), example_inputs=inputs, cache_dir=tmp_path).cache_hit


def test_torch_module_the_tracer_refuses_is_keyed_by_its_graph(tmp_path):
    import torch

    class Untraceable(torch.nn.Module):  # torch.export does not run the jit tracer
        def forward(self, x):
            if torch.jit.is_tracing():
                raise RuntimeError("not under the jit tracer")
            return torch.relu(x)

    inputs = (torch.randn(4, 16),)
    geir.compile(Untraceable(), example_inputs=inputs, cache_dir=tmp_path)
    cm = geir.compile(Untraceable(), example_inputs=inputs, cache_dir=tmp_path)
    assert cm.cache_hit and cm.stage_names == ["01_import", "cached"]


def torch_tensor(feeds):
    import torch

    value, = feeds.values()
    return torch.from_numpy(value)
