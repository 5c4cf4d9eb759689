"""The graph builder (frontend/builder.py): the API, the op methods made from the dialect,
every error a user can make, shape-only placeholder weights, and that the ONNX importer
builds through the same core (the same IR for the same graph)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import geir
from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.errors import GeirError, GraphBuildError, OnnxImportError
from geir.frontend.builder import OP_METHODS, GraphBuilder, is_placeholder, method_name
from geir.frontend.onnx import import_model
from geir.ir.locations import loc_names
from geir.ir.text import print_module
from geir.runtime.interpreter import run_module

EXACT = {"precision_mode": "must_keep_origin_dtype"}


def _mlp_builder(w1: np.ndarray, b1: np.ndarray) -> GraphBuilder:
    b = GraphBuilder("main")
    x = b.input("x", (2, 4), "f32")
    w, bias = b.weight("w1", w1), b.weight("b1", b1)
    h = b.add(b.matmul(x, w, name="fc"), bias, name="fc_bias")
    b.output("y", b.relu(h, name="act"))
    return b


def test_build_run_and_compile_match_numpy():
    rng = np.random.default_rng(0)
    w1, b1 = rng.standard_normal((4, 3), dtype=np.float32), rng.standard_normal(3, dtype=np.float32)
    x = rng.standard_normal((2, 4), dtype=np.float32)
    want = np.maximum(x @ w1 + b1, 0)
    module = _mlp_builder(w1, b1).finish()
    fn = module.body.block.first_op
    assert fn.sym_name.data == "main"
    assert [d.data[attr_names.ONNX_NAME].data for d in fn.arg_attrs.data] == ["x"]
    assert [d.data[attr_names.ONNX_NAME].data for d in fn.res_attrs.data] == ["y"]
    assert [loc_names(op.location) for op in fn.body.block.ops][:-1] == [["w1"], ["b1"], ["fc"], ["fc_bias"], ["act"]]
    np.testing.assert_allclose(run_module(module, {"x": x})["y"], want, rtol=1e-6, atol=1e-6)
    # geir.compile takes the builder itself (its finished module) at every level
    for level in (0, 3):
        out = geir.compile(_mlp_builder(w1, b1), opt_level=level, **EXACT).run({"x": x})["y"]
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_op_methods_are_the_dialects_op_classes():
    graph_ops = {c for c in g.OPS.values() if isinstance(c, type) and issubclass(c, g.GraphOp)}
    assert set(OP_METHODS.values()) == graph_ops
    for name, cls in OP_METHODS.items():
        assert name == method_name(cls) and cls.name.endswith("." + name)
        assert getattr(GraphBuilder, name).__doc__.startswith(f"`{cls.name}`")


def test_operands_from_numbers_lists_and_arrays():
    b = GraphBuilder()
    x = b.input("x", (2, 6), "f16")
    y = b.mul(x, 0.5, name="half")  # a number takes the element type of the tensor operand
    r = b.reshape(y, [3, 4], name="r")  # a list of ints is an i64 constant
    s = b.split(r, [1, 3], axis=1, name="s")  # a variadic-result op returns the list
    c = b.concat(s[1], s[0], axis=1, name="c")  # a variadic-operand op takes any number
    b.output("y", b.add(c, np.ones((3, 4), np.float16), name="plus"))
    assert y.type.element_type == x.type.element_type and len(s) == 2
    feeds = {"x": np.arange(12, dtype=np.float16).reshape(2, 6)}
    z = (feeds["x"] * np.float16(0.5)).reshape(3, 4)
    want = np.concatenate([z[:, 1:], z[:, :1]], axis=1) + 1
    np.testing.assert_array_equal(run_module(b.finish(), feeds)["y"], want)


def test_dtype_names():
    b = GraphBuilder()
    for name, want in (("f16", "f16"), ("bf16", "bf16"), ("float32", "f32"), ("i64", "i64"), ("bool", "i1")):
        assert str(b.input(f"x_{name}", (1,), name).type.element_type) == want
    assert str(b.input("np", (1,), np.int32).type.element_type) == "i32"
    with pytest.raises(GraphBuildError, match="unknown element type 'f17'"):
        b.input("bad", (1,), "f17")
    with pytest.raises(GraphBuildError, match="complex128 is not supported"):
        b.input("bad2", (1,), np.complex128)


@pytest.mark.parametrize("make, message", [
    # an edge between mismatched shapes: matmul 768 vs 512
    (lambda b, x, y: b.matmul(x, b.input("w", (512, 64), "f16"), name="l0/q_proj"),
     r"node 'l0/q_proj' \(graph.matmul\): contraction dims differ: \[8, 768\] x \[512, 64\]"),
    # mismatched dtypes: f16 + f32
    (lambda b, x, y: b.add(x, b.input("x32", (8, 768), "f32"), name="res"),
     r"node 'res' \(graph.add\): operands must have one element type, got f16, f32"),
    (lambda b, x, y: b.softmax(x, axes=1, name="sm"), r"node 'sm' \(graph.softmax\): .*unknown attributes \['axes'\]"),
    (lambda b, x, y: b.relu(y, name="r"), r"node 'r' \(graph.relu\): operand #0 .* belongs to another graph"),
    (lambda b, x, y: b.output("out", y), r"output 'out' .* belongs to another graph"),
    (lambda b, x, y: b.relu(x, x, name="r2"), r"node 'r2': graph.relu takes 1 operand\(s\), got 2"),
    (lambda b, x, y: b.relu("x", name="r3"), r"node 'r3': operand 'x' is a str"),
    (lambda b, x, y: b.input("x", (1,), "f16"), r"graph 'main': input name 'x' is already used"),
    (lambda b, x, y: b.weight("x", np.zeros(2, np.float16)), r"weight name 'x' is already used"),
    (lambda b, x, y: [b.relu(x, name="n"), b.neg(x, name="n")], r"node name 'n' is already used"),
    (lambda b, x, y: [b.output("o", x), b.output("o", x)], r"output name 'o' is already used"),
    (lambda b, x, y: b.finish(), r"graph 'main' has no outputs"),
    (lambda b, x, y: [b.output("o", x), b.finish(outputs=["o", "logits"])], r"output\(s\) \['logits'\] were never set"),
    (lambda b, x, y: b.weight("w"), r"weight 'w' needs an array, or shape= and dtype="),
    (lambda b, x, y: b.weight("w", np.zeros(3), shape=(4,)), r"weight 'w' has shape \[3\], not the shape \[4\]"),
    (lambda b, x, y: b.input("neg", (2, -1)), r"input 'neg' has a negative dimension"),
    (lambda b, x, y: b.reshape(x, [5, -1], name="rs"), r"node 'rs' \(graph.reshape\): cannot reshape \[8, 768\]"),
])
def test_bad_graphs_are_clear_errors(make, message):
    other = GraphBuilder("other")
    b = GraphBuilder("main")
    x = b.input("x", (8, 768), "f16")
    with pytest.raises(GraphBuildError, match=message):
        make(b, x, other.input("y", (8, 768), "f16"))


def test_a_finished_builder_takes_no_more():
    b = _mlp_builder(np.ones((4, 3), np.float32), np.zeros(3, np.float32))
    module = b.finish()
    assert b.finish() is module  # the same module again
    with pytest.raises(GraphBuildError, match="is finished"):
        b.input("z", (1,))
    with pytest.raises(GraphBuildError, match="is finished"):
        b.relu(module.body.block.first_op.body.block.args[0])


def test_shape_only_weights_hold_no_bytes_and_compile():
    b = GraphBuilder()
    x = b.input("x", (4, 64), "f16")
    w = b.weight("big", shape=(64, 4096), dtype="f16")
    b.output("y", b.relu(b.matmul(x, w, name="mm"), name="act"))
    module = b.finish()
    const = w.owner
    assert is_placeholder(const) and len(const.value.data.data) == 2  # one f16 element: a splat
    text = print_module(module)  # with blobs: still no bytes, no resource section
    assert '{geir.placeholder = "big"} dense<0.000000e+00> : tensor<64x4096xf16>' in text
    assert "dialect_resources" not in text
    cm = geir.compile(module, opt_level=3)
    assert cm.stage_names[-1] == "09_plan_memory"
    # no numbers to compute with: a run is an error, a timing-only profile is not
    with pytest.raises(GeirError, match="shape-only weight.*time it without data"):
        cm.run({"x": np.ones((4, 64), np.float16)})
    out, report = cm.profile(mode="timing")
    assert out is None and report["kernel_count"] > 0
    # a weight with data is not a placeholder, and prints its bytes
    b2 = GraphBuilder()
    data = b2.weight("w", np.arange(64, dtype=np.float16))
    assert not is_placeholder(data.owner) and len(data.owner.value.data.data) == 128


def _matmul_add_onnx() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "w1")
    bias = numpy_helper.from_array(np.ones(3, np.float32), "b1")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc"),
             helper.make_node("Add", ["h", "b1"], ["z"], name="fc_bias"),
             helper.make_node("Relu", ["z"], ["y"], name="act")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w, bias])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_importer_and_builder_make_the_same_ir():
    """The importer is a GraphBuilder: the same graph gives the same module (names, types,
    locations), except the SSA names of the intermediate values (ONNX's value names)."""
    imported = print_module(import_model(_matmul_add_onnx()))
    built = print_module(_mlp_builder(np.arange(12, dtype=np.float32).reshape(4, 3), np.ones(3, np.float32)).finish())
    rename = {"%h": "%fc", "%z": "%fc_bias", "%y": "%act"}
    for old, new in rename.items():
        imported = imported.replace(old + " ", new + " ").replace(old + ",", new + ",")
    assert imported == built


def test_importer_errors_stay_onnx_errors():
    model = _matmul_add_onnx()
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.ones((5, 3), np.float32), "w1"))
    with pytest.raises(OnnxImportError, match=r"node 'fc' \(MatMul, opset 17\): contraction dims differ"):
        import_model(model, check_shapes=False)
