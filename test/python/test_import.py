"""The importer's Python API: input forms, external data, clear errors."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from geir.errors import OnnxImportError
from geir.ir.locations import loc_names
from geir.frontend.onnx import import_model
from geir.runtime.interpreter import run_module


def _gemm_model(n: int = 64) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((n, n)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, n])],
        [w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_model_with_external_data_loads(tmp_path):
    model = _gemm_model()
    w = numpy_helper.to_array(model.graph.initializer[0])  # before save_model rewrites it in place
    path = tmp_path / "model.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    assert (tmp_path / "weights.bin").stat().st_size == 64 * 64 * 4
    module = import_model(path)
    x = np.ones((2, 64), np.float32)
    np.testing.assert_allclose(run_module(module, {"x": x})["y"], x @ w, rtol=1e-5)


def test_external_data_is_read_by_the_importer_not_into_the_proto(tmp_path, monkeypatch):
    """Shape inference serialises the proto (protobuf's limit is 2 GB): a model file's weights
    stay outside it and are read tensor by tensor, as for a 13B model's."""
    from geir.testing.transformer import block_onnx

    in_memory = block_onnx(2, 8, 64, 4, seed=3)
    on_disk = block_onnx(2, 8, 64, 4, seed=3, weights_file=str(tmp_path / "weights.bin"))
    onnx.save(on_disk, str(tmp_path / "model.onnx"))
    external = (tmp_path / "weights.bin").stat().st_size
    assert external == 64 * (3 * 64 + 64 + 4 * 64 + 4 * 64) * 4  # the four matrices
    sizes = []
    infer = onnx.shape_inference.infer_shapes
    monkeypatch.setattr(onnx.shape_inference, "infer_shapes",
                        lambda proto, **kw: sizes.append(proto.ByteSize()) or infer(proto, **kw))
    module = import_model(tmp_path / "model.onnx")
    assert sizes and sizes[0] < external // 10  # no weight matrix went through shape inference
    x = np.random.default_rng(0).standard_normal((2, 8, 64)).astype(np.float32)
    np.testing.assert_array_equal(run_module(module, {"x": x})["y"], run_module(import_model(in_memory), {"x": x})["y"])


@pytest.mark.parametrize("form", ["proto", "path", "str", "bytes"])
def test_every_input_form(tmp_path, form):
    model = _gemm_model(16)
    path = tmp_path / "m.onnx"
    onnx.save_model(model, str(path))
    arg = {"proto": model, "path": path, "str": str(path), "bytes": model.SerializeToString()}[form]
    module = import_model(arg)
    op = next(op for op in module.walk() if op.name == "graph.matmul")
    assert loc_names(op.location) == ["mm"]


def test_not_onnx_is_a_clear_error(tmp_path):
    path = tmp_path / "garbage.onnx"
    path.write_bytes(b"\x00garbage")
    with pytest.raises(OnnxImportError, match="not a valid ONNX model"):
        import_model(path)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(OnnxImportError, match="no such file"):
        import_model(tmp_path / "nope.onnx")


def test_weights_are_not_python_lists():
    module = import_model(_gemm_model(32))
    const = next(op for op in module.walk() if op.name == "graph.constant")
    array = const.array()
    assert isinstance(array, np.ndarray) and array.shape == (32, 32)
    assert not array.flags.writeable  # a view of the attribute's bytes, not a copy
