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


def test_a_string_that_is_no_path_is_a_clear_error(tmp_path):
    """MLIR text given where a path goes: one line, not the OSError a name longer than the
    file system allows raises; geir.load says the same of a missing program."""
    import geir
    from geir.errors import GeirError

    text = "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n" + " " * 300 + "func.return %x : tensor<4xf32>\n}"
    with pytest.raises(OnnxImportError, match=r"no such file: 'func.func @main.*is no path \(MLIR text: give geir.compile"):
        geir.compile(text)
    for name in ("nope.mlir", text):
        with pytest.raises(GeirError, match="no such file"):
            geir.load(tmp_path / name if name == "nope.mlir" else name)


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
    (29, {}, r"opset 29 is not supported \(geir imports opsets 6 to 28\)"),
])
def test_rms_normalization_rejections_are_clear(opset, attrs, message):
    with pytest.raises(OnnxImportError, match=message):
        import_model(_rms_model((2, 8), (8,), opset=opset, **attrs))


def _schema_versions(op: str, first: int, last: int) -> list[int]:
    """The versions of op's schema that begin in first..last."""
    versions = set()
    for opset in range(first, last + 1):
        try:
            since = onnx.defs.get_schema(op, opset).since_version
        except onnx.defs.SchemaError:
            continue
        if since >= first:
            versions.add(since)
    return sorted(versions)


def _signature(schema):
    """Everything of a schema but its docs and element types."""
    attrs = {k: (a.type, a.required, a.default_value.SerializeToString()) for k, a in schema.attributes.items()}
    ios = [(p.name, p.option, p.is_homogeneous) for p in (*schema.inputs, *schema.outputs)]
    return attrs, ios, (schema.min_input, schema.max_input, schema.min_output, schema.max_output)


def test_opset_changes_list_every_new_schema_of_the_converted_ops():
    """OPSET_CHANGES (frontend/onnx_opsets.py) holds each schema version after 21 of each
    converted op, and a version that changes more than element types and docs names the
    attribute it adds: an onnx release that changes a converted op fails here until the
    table - and the converter - say how geir takes it."""
    from geir.frontend.onnx import CONVERTERS, MAX_OPSET
    from geir.frontend.onnx_opsets import OPSET_CHANGES

    assert MAX_OPSET == 28
    for op in sorted(CONVERTERS):
        versions = _schema_versions(op, 22, MAX_OPSET)
        table = OPSET_CHANGES.get(op, ())
        assert [c.since for c in table] == versions, op
        for change in table:
            new = _signature(onnx.defs.get_schema(op, change.since))
            if change.since == _schema_versions(op, 1, change.since)[0]:
                continue  # the op's first schema (RMSNormalization, 23)
            old_attrs, old_ios, old_counts = _signature(onnx.defs.get_schema(op, change.since - 1))
            new_attrs, new_ios, new_counts = new
            # inputs a change names in `adds` (the converter checks them) are its only new ones
            kept = [io for io in new_ios if io[0] not in change.adds]
            assert kept == old_ios and (new_counts == old_counts or set(new_ios) != set(kept)), (op, change.since)
            added = set(new_attrs) - set(old_attrs) - set(change.adds)
            assert added == ({change.attribute} if change.attribute else set()), (op, change.since)
            assert {k: v for k, v in new_attrs.items() if k in old_attrs} == old_attrs, (op, change.since)
    assert [c.since for c in OPSET_CHANGES["Cast"]] == [23, 24, 25, 28]  # the loop did compare


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_modes_match_onnx_reference(mode):
    """Opset 28's mode: CRD becomes reshape + transpose + reshape, at the graph level and O3."""
    import geir
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("SpaceToDepth", ["x"], ["y"], name="s2d", blocksize=2, mode=mode)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12, 2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 6)).astype(np.float32)
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
    np.testing.assert_array_equal(run_module(import_model(model), {"x": x})["y"], expected)
    compiled = geir.compile(model, opt_level=3, precision_mode="must_keep_origin_dtype")
    np.testing.assert_array_equal(compiled.run({"x": x})["y"], expected)


def test_range_opset27_counts_float16_in_float32():
    """Opset 27's stash_type (default 1): a float16 range is start + i * delta in float32,
    rounded once; in float16 `i * delta` would round before the add (58 values, most off)."""
    from onnx.reference import ReferenceEvaluator

    inits = [numpy_helper.from_array(np.array(v, np.float16), n) for n, v in (("s", 100.1), ("l", 140.1), ("d", 0.7))]
    graph = helper.make_graph([helper.make_node("Range", ["s", "l", "d"], ["y"], name="range")], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [58])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 27)])
    y = run_module(import_model(model), {})["y"]
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, ReferenceEvaluator(model).run(None, {})[0])


@pytest.mark.parametrize("opset,node,message", [
    (28, helper.make_node("Range", ["s", "l", "d"], ["y"], name="range", stash_type=TensorProto.DOUBLE),
     r"node 'range' \(Range, opset 28\): attribute stash_type=11 is not supported \(opset 27 adds float16, "
     r"bfloat16 and stash_type\); geir honours 1"),
    (26, helper.make_node("Range", ["s", "l", "d"], ["y"], name="range", stash_type=1),
     r"node 'range' \(Range, opset 26\): attribute 'stash_type' exists from opset 27 on"),
])
def test_opset_change_rejections_are_clear(opset, node, message):
    inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("s", 0), ("l", 4), ("d", 1))]
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    with pytest.raises(OnnxImportError, match=message):
        import_model(model)


# ---------------------------------------------------------------------------
# f16 and bf16: graph inputs, outputs, initializers, constants, Cast and CastLike.
# ---------------------------------------------------------------------------


def _low_precision_model(elem: int, dtype) -> onnx.ModelProto:
    """x + w, times a Constant, through Cast to f16 and CastLike back to x's type; and a
    ConstantOfShape of x's shape in x's type."""
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3).astype(dtype), "w")
    c = numpy_helper.from_array(np.array([0.5, 1.0, 2.0], dtype))
    nodes = [
        helper.make_node("Constant", [], ["c"], value=c, name="c"),
        helper.make_node("Add", ["x", "w"], ["a"], name="add"),
        helper.make_node("Mul", ["a", "c"], ["m"], name="mul"),
        helper.make_node("Cast", ["m"], ["h"], to=TensorProto.FLOAT16, name="to_f16"),
        helper.make_node("CastLike", ["h", "x"], ["y"], name="like_x"),
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("ConstantOfShape", ["s"], ["z"], value=numpy_helper.from_array(np.array([1.25], dtype))),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", elem, [2, 3])],
        [helper.make_tensor_value_info("y", elem, [2, 3]), helper.make_tensor_value_info("z", elem, [2, 3]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT16, [2, 3])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


@pytest.mark.parametrize("elem", [TensorProto.FLOAT16, TensorProto.BFLOAT16], ids=["f16", "bf16"])
def test_low_precision_model_imports_with_its_types(elem):
    from geir.dialects import graph as g

    dtype = helper.tensor_dtype_to_np_dtype(elem)
    name = "f16" if elem == TensorProto.FLOAT16 else "bf16"
    module = import_model(_low_precision_model(elem, dtype))
    text = str(module)
    assert f"%x: tensor<2x3x{name}>" in text and f"tensor<2x3x{name}> {{onnx.name = \"y\"}}" in text
    consts = [op.array() for op in module.walk() if isinstance(op, g.ConstantOp)]
    assert [c.dtype for c in consts] == [dtype, dtype]  # the initializer and the Constant node
    casts = [op for op in module.walk() if isinstance(op, g.CastOp)]
    assert [str(op.results[0].type.element_type) for op in casts] == ["f16", name]  # CastLike is a cast
    x = np.array([[1, 2, 3], [4, 5, 6]], dtype)
    out = run_module(module, {"x": x})
    want = ((x.astype(np.float32) + np.arange(6).reshape(2, 3)) * [0.5, 1, 2])
    assert out["y"].dtype == dtype and out["h"].dtype == np.float16 and out["z"].dtype == dtype
    np.testing.assert_array_equal(out["y"].astype(np.float32), want)
    np.testing.assert_array_equal(out["z"].astype(np.float32), np.full((2, 3), 1.25))


def test_casts_to_and_from_bf16_and_f16_match_onnxruntime():
    """Round to nearest even, inf and NaN kept, values past the range to inf: onnxruntime's
    casts (outputs in f32: onnxruntime hands no bf16 array to numpy)."""
    from geir.testing.suite import ort_run

    nodes = [
        helper.make_node("Cast", ["x"], ["b"], to=TensorProto.BFLOAT16),
        helper.make_node("Cast", ["b"], ["yb"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
        helper.make_node("CastLike", ["h", "b"], ["hb"]),  # f16 -> bf16
        helper.make_node("Cast", ["hb"], ["yhb"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["b"], ["bh"], to=TensorProto.FLOAT16),  # bf16 -> f16
        helper.make_node("Cast", ["bh"], ["ybh"], to=TensorProto.FLOAT),
    ]
    outs = ["yb", "yhb", "ybh"]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [512])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, [512]) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    x = (np.random.default_rng(0).standard_normal(512) * np.logspace(-8, 6, 512)).astype(np.float32)
    x[:5] = [np.inf, -np.inf, np.nan, 1.00390625, 1.01171875]  # two ties: to even
    ours = run_module(import_model(model), {"x": x})
    for name, theirs in zip(outs, ort_run(model, {"x": x})):
        np.testing.assert_array_equal(ours[name], theirs, err_msg=name)


@pytest.mark.parametrize("nodes,inputs,inits,message", [
    ([("Identity", ["x"], {})], [("x", TensorProto.COMPLEX64)], [],
     "graph input 'x' has unsupported element type COMPLEX64"),
    ([("Cast", ["x"], {"to": TensorProto.COMPLEX128})], [("x", TensorProto.FLOAT)], [],
     r"node 'n0' \(Cast, opset 21\) has unsupported element type COMPLEX128"),
    ([("Identity", ["w"], {})], [], ["w"], "initializer 'w' has unsupported element type COMPLEX64"),
    ([("Constant", [], {"value": "c64"})], [], [],
     r"node 'n0' \(Constant, opset 21\) has unsupported element type COMPLEX64"),
])
def test_unsupported_element_types_are_clear_errors(nodes, inputs, inits, message):
    # float8 / int4 and the other narrow types import (test_onnx_narrow_types.py); complex does not
    c64 = np.array([1, 2j], np.complex64)
    made = [helper.make_node(op, ins, ["y"], name=f"n{i}",
                             **{k: numpy_helper.from_array(c64) if v == "c64" else v for k, v in attrs.items()})
            for i, (op, ins, attrs) in enumerate(nodes)]
    graph = helper.make_graph(made, "g", [helper.make_tensor_value_info(n, t, [2]) for n, t in inputs],
                              [onnx.ValueInfoProto(name="y")], [numpy_helper.from_array(c64, n) for n in inits])
    with pytest.raises(OnnxImportError, match=message):
        import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))


# ---------------------------------------------------------------------------
# Invalid graphs and tensors no device holds: one clear error at import.
# ---------------------------------------------------------------------------


def _graph_model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def test_a_cycle_through_geir_compile_names_the_node_and_the_path():
    import geir

    model = _graph_model(
        [helper.make_node("Relu", ["x"], ["r"], name="relu0"),
         helper.make_node("Add", ["r", "c"], ["a"], name="add"),
         helper.make_node("Mul", ["a", "x"], ["b"], name="mul"),
         helper.make_node("Neg", ["b"], ["c"], name="neg")],
        [_vi("x", [4])], [_vi("c", [4])])
    with pytest.raises(OnnxImportError) as info:
        geir.compile(model)
    assert str(info.value) == ("node 'add' (Add, opset 17): input 'c' depends on the node's own output: the graph "
                               "has a cycle 'add' -> 'a' -> 'mul' -> 'b' -> 'neg' -> 'c' -> 'add'")


def test_a_node_reading_a_later_value_is_out_of_order_not_a_cycle():
    model = _graph_model(
        [helper.make_node("Neg", ["r"], ["y"], name="neg"), helper.make_node("Relu", ["x"], ["r"], name="relu")],
        [_vi("x", [4])], [_vi("y", [4])])
    with pytest.raises(OnnxImportError, match=r"node 'neg' \(Neg, opset 17\): input 'r' is written by node 'relu' "
                                              r"\(Relu\), which comes after it; ONNX lists nodes in topological order"):
        import_model(model)


def test_a_node_output_may_not_rename_a_graph_input_or_an_initializer():
    w = numpy_helper.from_array(np.ones(4, np.float32), "w")
    for name, what in (("x", "a graph input"), ("w", "an initializer")):
        model = _graph_model([helper.make_node("Relu", ["x"], [name], name="relu")],
                             [_vi("x", [4])], [_vi(name, [4])], [w])
        with pytest.raises(OnnxImportError, match=f"output '{name}' is already {what}; an ONNX value has one producer"):
            import_model(model)


def test_tensor_limit_is_the_largest_modeled_device_memory():
    from geir.target.device import MAX_TENSOR_BYTES, list_devices, load_device

    assert MAX_TENSOR_BYTES == max(load_device(d).hbm_bytes for d in list_devices())


def test_tile_of_a_constant_past_the_limit_is_rejected_and_one_at_it_imports():
    from geir.target.device import MAX_TENSOR_BYTES

    def tile(repeats: int) -> onnx.ModelProto:
        return _graph_model(
            [helper.make_node("Tile", ["one", "repeats"], ["y"], name="tile")], [], [_vi("y", [repeats], TensorProto.INT8)],
            [numpy_helper.from_array(np.ones(1, np.int8), "one"),
             numpy_helper.from_array(np.array([repeats], np.int64), "repeats")])

    import_model(tile(MAX_TENSOR_BYTES))  # exactly the limit: imported, nothing allocated
    with pytest.raises(OnnxImportError, match=r"node 'tile' \(Tile, opset 17\): output 'y' would hold 68719476737 "
                                              r"elements of i8 \(64 GiB\), more than geir's tensor limit"):
        import_model(tile(MAX_TENSOR_BYTES + 1))


def test_folding_never_allocates_past_the_limit_whatever_max_bytes_says(monkeypatch):
    """A ConstantOfShape of 10^15 elements in graph IR (no importer to stop it): neither
    graph-fold-constants nor the lowering's evaluation of generators runs its kernel (numpy
    would try to allocate 3.55 PiB); the memory planner then rejects the program against
    the device."""
    from xdsl.context import Context

    from geir.dialects import graph as g
    from geir.dialects import make_context
    from geir.driver.registry import build_passes, get_all_passes
    from geir.errors import GeirError
    from geir.ir.text import parse_module
    from geir.lowering import graph_to_ascend
    from geir.passes.graph import fold_constants

    evaluated = []

    def spy(real):
        def reference_of(op):
            evaluated.append(op.name)
            return real(op)
        return reference_of

    monkeypatch.setattr(fold_constants, "reference_of", spy(fold_constants.reference_of))
    monkeypatch.setattr(graph_to_ascend, "reference_of", spy(graph_to_ascend.reference_of))
    text = """
func.func @main() -> (tensor<1000000000000000xf32> {onnx.name = "y"}) {
  %s = graph.constant dense<1000000000000000> : tensor<1xi64>
  %y = graph.constant_of_shape %s {value = dense<1.0> : tensor<1xf32>} : (tensor<1xi64>) -> tensor<1000000000000000xf32>
  func.return %y : tensor<1000000000000000xf32>
}
"""
    module = parse_module(text, make_context())
    fold_constants.FoldConstantsPass(max_bytes=2**62).apply(Context(), module)
    assert any(isinstance(op, g.ConstantOfShapeOp) for op in module.walk())
    with pytest.raises(GeirError, match="needs 3725290.3 GiB of device memory"):
        for p in build_passes("convert-graph-to-ascend,ascend-plan-memory", get_all_passes()):
            p.apply(Context(), module)
    assert evaluated == []


def _dropout_model(training_init=None, ratio=0.5) -> onnx.ModelProto:
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])]
    inits = [numpy_helper.from_array(np.array(ratio, np.float32), "r")]
    if training_init is None:
        inputs.append(helper.make_tensor_value_info("t", TensorProto.BOOL, []))
    else:
        inits.append(numpy_helper.from_array(np.array(training_init), "t"))
    graph = helper.make_graph([helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="drop")], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_dropout_training_mode_is_known_or_an_error():
    """A runtime training_mode could ask for random dropout, which the identity would not do."""
    with pytest.raises(OnnxImportError, match=r"^node 'drop' \(Dropout, opset 13\): training_mode must be a "
                                              r"constant; it is graph input 't': freeze it"):
        import_model(_dropout_model())
    with pytest.raises(OnnxImportError, match=r"training mode \(random dropout\) is not supported"):
        import_model(_dropout_model(), freeze={"t": True})
    x = np.arange(4, dtype=np.float32)
    for model in (_dropout_model(training_init=False), _dropout_model(training_init=True, ratio=0.0)):
        np.testing.assert_array_equal(run_module(import_model(model), {"x": x})["y"], x)
