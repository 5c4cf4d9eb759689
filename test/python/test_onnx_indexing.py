"""The ONNX indexing ops (frontend/onnx_indexing.py) against onnxruntime (or onnx's reference
evaluator where onnxruntime has no kernel), at the graph level (the reference semantics) and
at O3 (the lowered program: fallback kernels, or the elementwise / gather kernels OneHot and
Compress become); and the empty-set reductions ONNX 18 defines."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import geir
from geir.dialects import graph as g
from geir.errors import GeirError
from geir.frontend.onnx import import_model
from geir.runtime.interpreter import run_module

F, F16, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64
RNG = np.random.default_rng(0)


def _model(node, inputs, outputs, inits=(), opset=18):
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
                              initializer=[numpy_helper.from_array(v, n) for n, v in inits])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = max(8, helper.find_min_ir_version_for(list(m.opset_import)))
    return m


def _ort(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _check(model, feeds, expected=None, exact=True, o3=True):
    """geir at the graph level and at O3 give `expected` (default: onnxruntime's outputs)."""
    expected = _ort(model, feeds) if expected is None else expected
    runs = [list(run_module(import_model(model), dict(feeds)).values())]
    if o3:
        compiled = geir.compile(model, opt_level=3, precision_mode="must_keep_origin_dtype")
        runs.append(list(compiled.run(dict(feeds)).values()))
    for got in runs:
        assert len(got) == len(expected)
        for g_, e in zip(got, expected):
            assert g_.dtype == e.dtype and g_.shape == e.shape
            if exact and e.size > 1 << 20:  # a deployment-size cache: assert_array_equal takes 10 s
                assert np.array_equal(g_, e)
            elif exact:
                np.testing.assert_array_equal(g_, e)
            else:
                np.testing.assert_allclose(g_, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_elements(reduction):
    """Negative indices; repeated ones with a reduction combine in order."""
    data = RNG.standard_normal((4, 6)).astype(np.float32)
    indices = np.array([[0, -1, 2], [5, 1, -6], [3, 3, 0]], np.int64)
    if reduction == "none":
        indices = np.array([[0, -1, 2], [5, 1, -5], [3, 2, 4]], np.int64)  # distinct per row
    updates = RNG.standard_normal((3, 3)).astype(np.float32)
    node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction=reduction)
    model = _model(node, [("x", F, [4, 6]), ("i", I64, [3, 3]), ("u", F, [3, 3])], [("y", F, [4, 6])])
    _check(model, {"x": data, "i": indices, "u": updates})


def test_scatter_repeated_index_without_reduction_keeps_the_last_update():
    """ONNX leaves repeated indices with reduction none undefined; geir writes them in order
    (the last wins), as onnx's reference evaluator does."""
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"])
    model = _model(node, [("x", F, [4, 2]), ("i", I64, [3, 1]), ("u", F, [3, 2])], [("y", F, [4, 2])])
    feeds = {"x": np.zeros((4, 2), np.float32), "i": np.array([[1], [3], [1]], np.int64),
             "u": np.arange(6, dtype=np.float32).reshape(3, 2)}
    expected = ReferenceEvaluator(model).run(None, feeds)
    assert expected[0][1].tolist() == [4, 5]
    _check(model, feeds, expected)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd(reduction):
    data = RNG.standard_normal((5, 3, 4)).astype(np.float32)
    indices = np.array([[[0, 1], [4, -1]], [[2, 0], [4, -1] if reduction != "none" else [1, 2]]], np.int64)
    updates = RNG.standard_normal((2, 2, 4)).astype(np.float32)
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)
    model = _model(node, [("x", F, [5, 3, 4]), ("i", I64, [2, 2, 2]), ("u", F, [2, 2, 4])], [("y", F, [5, 3, 4])])
    _check(model, {"x": data, "i": indices, "u": updates})


@pytest.mark.parametrize("batch_dims, indices", [
    (0, np.array([[1, -1], [0, 2]], np.int64)),
    (0, np.array([[[2]], [[-3]]], np.int64)),
    (1, np.array([[[1], [0]], [[2], [2]], [[-1], [0]]], np.int64)),
])
def test_gather_nd(batch_dims, indices):
    data = RNG.standard_normal((3, 3, 4)).astype(np.float32)
    node = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims)
    out = ReferenceEvaluator(_model(node, [("x", F, [3, 3, 4]), ("i", I64, list(indices.shape))],
                                    [("y", F, None)], opset=13)).run(None, {"x": data, "i": indices})[0]
    model = _model(node, [("x", F, [3, 3, 4]), ("i", I64, list(indices.shape))], [("y", F, list(out.shape))], opset=13)
    _check(model, {"x": data, "i": indices})
    # constant indices: a graph.gather at the linear positions
    model = _model(node, [("x", F, [3, 3, 4])], [("y", F, list(out.shape))], [("i", indices)], opset=13)
    assert not any(isinstance(op, g.GatherNdOp) for op in import_model(model).walk())
    _check(model, {"x": data}, [out])


@pytest.mark.parametrize("largest, axis", [(1, -1), (0, -1), (1, 0), (0, 0)])
def test_top_k_ties_take_the_lower_index_first(largest, axis):
    x = RNG.integers(0, 4, (6, 8)).astype(np.float32)  # many equal values
    k = 3
    shape = [6, k] if axis == -1 else [k, 8]
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)
    model = _model(node, [("x", F, [6, 8])], [("v", F, shape), ("i", I64, shape)],
                   [("k", np.array([k], np.int64))], opset=11)
    _check(model, {"x": x})


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij, bjk -> bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk", [(3, 4), (4, 2)]),
    ("ii->i", [(4, 4)]),
    ("...ij->...ji", [(2, 3, 4)]),
    ("i...,...j->i...j", [(3, 2, 4), (2, 4, 5)]),
    ("bi...,bj...->b...ij", [(2, 3, 4), (2, 5, 4)]),
    ("i,i", [(5,), (5,)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ij->", [(3, 4)]),
    ("bij,bjk->kbi", [(2, 3, 4), (2, 4, 5)]),
    ("abc,cd->dba", [(2, 3, 4), (4, 5)]),
    ("ij,kj->", [(3, 4), (2, 4)]),
    ("...ij,...jk", [(2, 1, 3, 4), (2, 5, 4, 2)]),  # '...' broadcasts: graph.einsum
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),  # three operands: graph.einsum
    ("ij,jk->ik", [(2, 3), (3, 4), "int32"]),  # integers: graph.einsum
])
def test_einsum(equation, shapes):
    """Decomposed into reduce_sum / transpose / reshape / matmul where it can be, else
    graph.einsum: the same values either way."""
    dtype = np.float32
    if shapes[-1] == "int32":
        shapes, dtype = shapes[:-1], np.int32
    xs = {f"x{i}": (RNG.standard_normal(s) * 4).astype(dtype) for i, s in enumerate(shapes)}
    out = np.einsum(equation.replace(" ", ""), *xs.values())
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("Einsum", list(xs), ["y"], equation=equation)
    model = _model(node, [(n, elem, list(v.shape)) for n, v in xs.items()], [("y", elem, list(out.shape))], opset=12)
    _check(model, xs, exact=False)
    decomposed = not any(isinstance(op, g.EinsumOp) for op in import_model(model).walk())
    broadcast = equation.startswith("...ij,")
    assert decomposed == (dtype == np.float32 and "ii" not in equation and len(shapes) < 3 and not broadcast)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(axis):
    """Negative indices count from depth's end; out-of-range ones give a row of off values."""
    indices = np.array([[0, -1, 3], [7, -5, 2]], np.int64)
    shape = [2, 3]
    shape.insert(axis % 3, 4)
    node = helper.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=axis)
    model = _model(node, [("i", I64, [2, 3])], [("y", F, shape)],
                   [("depth", np.array(4, np.int64)), ("values", np.array([-2, 5], np.float32))], opset=11)
    _check(model, {"i": indices})


def test_reverse_sequence():
    x = RNG.standard_normal((5, 3, 2)).astype(np.float32)
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], batch_axis=1, time_axis=0)
    model = _model(node, [("x", F, [5, 3, 2]), ("lens", I64, [3])], [("y", F, [5, 3, 2])], opset=10)
    _check(model, {"x": x, "lens": np.array([5, 0, 2], np.int64)})


def test_compress_eye_like_unique_of_constants():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    node = helper.make_node("Compress", ["x", "c"], ["y"], axis=-1)
    model = _model(node, [("x", F, [3, 4])], [("y", F, [3, 2])], [("c", np.array([0, 1, 0, 1], bool))], opset=11)
    _check(model, {"x": x})
    node = helper.make_node("EyeLike", ["x"], ["y"], k=-1, dtype=TensorProto.INT32)
    model = _model(node, [("x", F, [3, 4])], [("y", TensorProto.INT32, [3, 4])], opset=9)
    _check(model, {"x": x})
    node = helper.make_node("Unique", ["x"], ["y", "i", "inv", "n"], axis=0, sorted=1)
    data = np.array([[1, 2], [0, 1], [1, 2]], np.int64)
    model = _model(node, [], [("y", I64, [2, 2]), ("i", I64, [2]), ("inv", I64, [3]), ("n", I64, [2])],
                   [("x", data)], opset=11)
    _check(model, {})


def test_runtime_shapes_are_clear_errors():
    """A run-time condition (Compress) or k (TopK) would make the result shape data dependent."""
    node = helper.make_node("Compress", ["x", "c"], ["y"], axis=0)
    model = _model(node, [("x", F, [3]), ("c", TensorProto.BOOL, [3])], [("y", F, [None])], opset=11)
    with pytest.raises(GeirError, match=r"node 'y' \(Compress, opset 11\): condition .* must be a constant; "
                                        r"it is graph input 'c'"):
        import_model(model)
    compiled = geir.compile(model, freeze={"c": np.array([1, 0, 1], bool)})
    np.testing.assert_array_equal(compiled.run({"x": np.array([1, 2, 3], np.float32)})["y"], [1, 3])


def test_tensor_scatter():
    """Per batch entry write positions (linear, and circular wrapping past the end) against
    onnx's reference; one position for a batch of 1 is graph.kv_cache_write."""
    past = RNG.standard_normal((2, 3, 6, 4)).astype(np.float32)
    new = RNG.standard_normal((2, 3, 2, 4)).astype(np.float32)
    for mode, pos in [("linear", [0, 4]), ("circular", [5, 1])]:
        node = helper.make_node("TensorScatter", ["past", "new", "pos"], ["present"], mode=mode)
        model = _model(node, [("past", F, [2, 3, 6, 4]), ("new", F, [2, 3, 2, 4]), ("pos", I64, [2])],
                       [("present", F, [2, 3, 6, 4])], opset=24)
        feeds = {"past": past, "new": new, "pos": np.array(pos, np.int64)}
        _check(model, feeds, ReferenceEvaluator(model).run(None, feeds))
    node = helper.make_node("TensorScatter", ["past", "new", "pos"], ["present"], axis=2)
    model = _model(node, [("past", F, [1, 3, 6, 4]), ("new", F, [1, 3, 1, 4]), ("pos", I64, [1])],
                   [("present", F, [1, 3, 6, 4])], opset=24)
    feeds = {"past": past[:1], "new": new[:1, :, :1], "pos": np.array([3], np.int64)}
    _check(model, feeds, ReferenceEvaluator(model).run(None, feeds))


@pytest.mark.parametrize("op, dtype", [("ReduceMax", np.float32), ("ReduceMin", np.float32),
                                       ("ReduceLogSumExp", np.float32), ("ReduceMax", np.int32),
                                       ("ReduceMin", np.int64)])
def test_reductions_over_an_empty_set(op, dtype):
    """ONNX 18: max / min / log-sum-exp of no elements are -inf / inf / -inf (an integer
    type's minimum / maximum)."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=1)
    model = _model(node, [("x", elem, [2, 0, 3])], [("y", elem, [2, 1, 3])], [("axes", np.array([1], np.int64))])
    feeds = {"x": np.zeros((2, 0, 3), dtype)}
    _check(model, feeds, ReferenceEvaluator(model).run(None, feeds))


def test_deployment_sizes():
    """ScatterND writing one row per batch entry into an [8, 4096, 4096] fp16 KV cache, and
    TopK k=50 over [32, 32000] logits (sampling), at O3 against onnxruntime."""
    cache = np.zeros((8, 4096, 4096), np.float16)
    cache[:, :, ::512] = 1
    rows = np.stack([np.arange(8), np.array([0, 17, 4095, 300, 1, 2048, 99, 7])], axis=1).astype(np.int64)
    new = RNG.standard_normal((8, 4096)).astype(np.float16)
    node = helper.make_node("ScatterND", ["cache", "rows", "new"], ["y"])
    model = _model(node, [("cache", F16, [8, 4096, 4096]), ("rows", I64, [8, 2]), ("new", F16, [8, 4096])],
                   [("y", F16, [8, 4096, 4096])])
    feeds = {"cache": cache, "rows": rows, "new": new}
    expected = cache.copy()
    expected[rows[:, 0], rows[:, 1]] = new
    _check(model, feeds, [expected])
    del cache, expected

    logits = RNG.standard_normal((32, 32000)).astype(np.float32)
    logits[:, 100:120] = 3.5  # ties across the top 50
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"])
    model = _model(node, [("x", F, [32, 32000])], [("v", F, [32, 50]), ("i", I64, [32, 50])],
                   [("k", np.array([50], np.int64))], opset=11)
    _check(model, {"x": logits})


def test_runtime_index_out_of_bounds_is_an_interpreter_error():
    """ONNX: an out-of-bounds index is an error; at run time geir's reference says which."""
    from geir.errors import InterpreterError

    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="sn")
    model = _model(node, [("x", F, [4, 2]), ("i", I64, [1, 1]), ("u", F, [1, 2])], [("y", F, [4, 2])])
    feeds = {"x": np.zeros((4, 2), np.float32), "i": np.array([[7]], np.int64), "u": np.ones((1, 2), np.float32)}
    with pytest.raises(InterpreterError, match="index 7 is out of bounds for size 4"):
        run_module(import_model(model), dict(feeds))
    with pytest.raises(InterpreterError, match="index 7 is out of bounds for size 4"):
        geir.compile(model, opt_level=3).run(dict(feeds))


def test_transpose_then_reshape_into_matmul_is_not_a_transposed_read():
    """The cube template reads a last-two-dims transpose feeding a matmul as a transposed
    operand; a reshape between them that moves a transposed dim into the batch is no such
    read (Einsum's decomposition writes `bik,bjk->bkij` so; it was wrong at O2 / O3)."""
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    b = RNG.standard_normal((8, 1, 5)).astype(np.float32)
    nodes = [helper.make_node("Transpose", ["a"], ["t"], perm=[0, 2, 1]), helper.make_node("Reshape", ["t", "s"], ["r"]),
             helper.make_node("MatMul", ["r", "b"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", F, [2, 3, 4]),
                                           helper.make_tensor_value_info("b", F, [8, 1, 5])],
                              [helper.make_tensor_value_info("y", F, [8, 3, 5])],
                              [numpy_helper.from_array(np.array([8, 3, 1], np.int64), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    _check(model, {"a": a, "b": b}, exact=False)
