"""Shape-only weights from ONNX (`weights=False`, geir-compile --no-weights) and the value
passes compute from them (ir/shape_only.py): no bytes read or held, the same program."""

import json
import os
import zipfile

import numpy as np
import onnx
import pytest

import geir
from geir.dialects import graph as g
from geir.errors import GeirError, InterpreterError, OnnxImportError
from geir.frontend.onnx import import_model, is_weight
from geir.ir.shape_only import ShapeOnly, is_shape_only
from xdsl.dialects.builtin import f32

from geir.ir.types import tensor
from geir.passes.graph.utils import constant
from geir.testing.suite import light_model


def _zeros(shape, dtype=np.float32, name="w"):
    return ShapeOnly.of(shape, dtype, [name])


def test_arithmetic_computes_nothing():
    w = _zeros((4096, 11008), np.float32, "up")
    scale = np.linspace(1, 2, 11008, dtype=np.float32)
    y = (w * scale).astype(np.float16)
    assert is_shape_only(y) and y.shape == (4096, 11008) and y.dtype == np.float16
    assert y.strides == (0, 0), "a broadcast view of one element, not 90 MB of zeros"
    assert y.sources == ("up",)
    assert is_shape_only(w.T) and w.T.shape == (11008, 4096) and w.reshape(-1).sources == ("up",)
    assert (w > 0).dtype == np.bool_ and (w + 1).dtype == np.float32


def test_other_functions_mark_their_result():
    a, b = _zeros((2, 3), name="a"), _zeros((3, 4), name="b")
    m = a @ b  # a generalised ufunc: computed on the zeros, then marked
    assert is_shape_only(m) and m.shape == (2, 4) and m.sources == ("a", "b")
    c = np.concatenate([a, np.ones((1, 3), np.float32)])
    assert is_shape_only(c) and c.shape == (3, 3) and c.sources == ("a",)
    s = a.sum(axis=0)
    assert is_shape_only(s) and s.shape == (3,)
    plain = np.ones((2, 3)) * 2
    assert not is_shape_only(plain)
    with pytest.raises(ValueError, match="cannot be written in place"):
        np.add(np.ones((2, 3), np.float32), a, out=np.empty((2, 3), np.float32))


def test_constant_of_a_shape_only_value_is_a_placeholder():
    """What every value pass builds its new weights with (passes/graph/utils.constant)."""
    op = constant(_zeros((8, 8), name="fc.weight") * 2, loc=None, name="w_scaled")
    assert op.placeholder_name == "fc.weight/w_scaled" and op.output.name_hint == "w_scaled"
    assert len(op.value.data.data) == 4, "one element stored"
    assert is_shape_only(op.array()) and op.array().sources == ("fc.weight/w_scaled",)
    real = constant(np.ones((2, 2), np.float32), loc=None)
    assert real.placeholder_name is None and not is_shape_only(real.array())


def test_placeholder_op():
    op = g.ConstantOp.placeholder("emb", tensor([32000, 4096], f32))
    assert op.placeholder_name == "emb" and op.array().shape == (32000, 4096)


def test_which_initializers_are_weights(tmp_path):
    """Larger than shape data: never read. Smaller: read when its bytes are there, else a
    placeholder - and a converter that needs its values says so."""
    assert is_weight(onnx.numpy_helper.from_array(np.zeros((33, 32), np.float32), "w"))
    assert not is_weight(onnx.numpy_helper.from_array(np.array([1, -1], np.int64), "shape"))
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 4, 4])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 1, 8, 8])
    resize = onnx.helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", mode="nearest")
    scales = onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    model = onnx.helper.make_model(onnx.helper.make_graph([resize], "g", [x], [y], [scales]),
                                   opset_imports=[onnx.helper.make_opsetid("", 19)])
    path = tmp_path / "resize.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="resize.data", size_threshold=0)
    module = import_model(path, weights=False)  # the scales' bytes are there: read
    assert "geir.placeholder" not in str(module)
    os.remove(tmp_path / "resize.data")
    with pytest.raises(OnnxImportError, match=r"node 'up' \(Resize, opset 19\): .* must be a constant: it is "
                                              r"computed from 'scales', imported without its values"):
        import_model(path, weights=False)


@pytest.fixture(scope="module")
def squeezenet_files(tmp_path_factory):
    """light SqueezeNet saved with its weights in external data, and the same model with them."""
    model = light_model("light_squeezenet")
    d = tmp_path_factory.mktemp("squeezenet")
    copy = onnx.ModelProto()
    copy.CopyFrom(model)  # onnx.save moves the tensors it writes outside into the proto's external data
    onnx.save(copy, str(d / "m.onnx"), save_as_external_data=True, location="m.data")
    return model, d


def test_onnx_without_its_external_data(squeezenet_files):
    """The weights file is gone: a full import says how to go on without it; a shape-only
    compile reads nothing, and its program times exactly like the program with weights."""
    model, d = squeezenet_files
    os.rename(d / "m.data", d / "away.data")
    try:
        with pytest.raises(OnnxImportError, match=r"cannot be read: .*weights=False, geir-compile --no-weights"):
            import_model(d / "m.onnx")
        shape_only = geir.compile(d / "m.onnx", weights=False)
    finally:
        os.rename(d / "away.data", d / "m.data")
    full = geir.compile(model)
    assert shape_only.shape_only and not full.shape_only
    _, timed = shape_only.profile(shape_only.random_inputs(floats=False), mode="timing")
    _, reference = full.profile(full.random_inputs(floats=False), mode="timing")
    assert json.dumps(timed, sort_keys=True) == json.dumps(reference, sort_keys=True)
    assert timed["memory"]["constant_bytes"] > 1 << 20  # the weights are counted, not held

    with pytest.raises(InterpreterError, match="shape-only weight.*time it without data"):
        shape_only.run(shape_only.random_inputs())
    om = d / "shape_only.om"
    shape_only.save(om)
    # what it holds is the program and the biases (1,024 elements and less: shape data size)
    with zipfile.ZipFile(om) as z:
        held = z.getinfo("weights.bin").file_size
    assert held < timed["memory"]["constant_bytes"] / 20, "the offline model holds no weights"
    loaded = geir.load(om)
    _, again = loaded.profile(loaded.random_inputs(floats=False), mode="timing")
    assert again["latency_us"] == reference["latency_us"]
    assert again["peak_memory_bytes"] == reference["peak_memory_bytes"]


def test_shape_only_needs_onnx(squeezenet_files):
    module = import_model(squeezenet_files[1] / "m.onnx")
    with pytest.raises(GeirError, match="this model is MLIR"):
        geir.compile(module, weights=False)
