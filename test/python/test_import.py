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


# ---------------------------------------------------------------------------
# Opsets 22 and 23: RMSNormalization, and nothing else changed for the converted ops.
# ---------------------------------------------------------------------------


def _rms_model(shape, scale_shape, opset=23, **attrs) -> onnx.ModelProto:
    scale = np.random.default_rng(1).standard_normal(scale_shape).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("RMSNormalization", ["x", "scale"], ["y"], name="rms", **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        [numpy_helper.from_array(scale, "scale")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("shape,scale_shape,attrs", [
    ((2, 16, 64), (64,), {}),
    ((2, 16, 64), (64,), {"epsilon": 1e-6}),
    ((2, 5, 8, 16), (8, 16), {"axis": 2}),
    ((2, 5, 8, 16), (5, 8, 16), {"axis": -3, "epsilon": 1e-3}),
    ((4, 32), (1,), {"axis": 0}),
    ((2, 5, 8), (5, 1), {}),  # onnxruntime broadcasts the scale to x, not only to the row
])
def test_rms_normalization_opset23_matches_onnxruntime(shape, scale_shape, attrs):
    from geir.dialects import graph as g
    from geir.testing.suite import assert_close, ort_run

    model = _rms_model(shape, scale_shape, **attrs)
    module = import_model(model)
    (op,) = [op for op in module.walk() if isinstance(op, g.RmsNormOp)]
    assert loc_names(op.location) == ["rms"]
    assert op.attrs() == {"axis": attrs.get("axis", -1), "epsilon": pytest.approx(attrs.get("epsilon", 1e-5))}
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 3
    assert_close(run_module(module, {"x": x})["y"], ort_run(model, {"x": x})[0], "rms_norm")


@pytest.mark.parametrize("opset,attrs,message", [
    (23, {"stash_type": 0}, r"node 'rms' \(RMSNormalization, opset 23\): stash_type other than float32"),
    (22, {}, r"node 'rms' \(RMSNormalization, opset 22\): RMSNormalization exists from opset 23 on"),
    (24, {}, "opset 24 is not supported"),
])
def test_rms_normalization_rejections_are_clear(opset, attrs, message):
    with pytest.raises(OnnxImportError, match=message):
        import_model(_rms_model((2, 8), (8,), opset=opset, **attrs))


def test_opsets_22_and_23_change_only_types_of_the_converted_ops():
    """MAX_OPSET went from 21 to 23 after comparing, op by op, each converted op's schema at
    23 with its opset-21 one: the versions 22 and 23 add element types (bfloat16; float4e2m1)
    and keep every attribute (name, type, default), input and output. A converter written for
    the opset-21 semantics is right at 23; an op that changes beyond types needs a look."""
    from geir.frontend.onnx import CONVERTERS, MAX_OPSET

    def signature(schema):
        attrs = {k: (a.type, a.required, a.default_value.SerializeToString()) for k, a in schema.attributes.items()}
        ios = [(p.name, p.option, p.is_homogeneous) for p in (*schema.inputs, *schema.outputs)]
        return attrs, ios, (schema.min_input, schema.max_input, schema.min_output, schema.max_output)

    assert MAX_OPSET == 23
    changed = []
    for op in sorted(CONVERTERS):
        new = onnx.defs.get_schema(op, MAX_OPSET)
        if new.since_version <= 21:
            continue
        if op == "RMSNormalization":  # new in 23, converted for its own semantics
            continue
        changed.append(op)
        assert signature(new) == signature(onnx.defs.get_schema(op, 21)), op
    assert "Cast" in changed and "Conv" in changed  # the comparison did run over the changed ops
