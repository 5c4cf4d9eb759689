"""Quantized ONNX models: the quantized operators one by one against onnxruntime, and suite models
quantized by onnxruntime's own `quantize_static` (QDQ and QOperator formats) compiled by geir and
compared with onnxruntime's int8 execution (docs/quantization.md)."""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnx.version_converter
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import geir
from geir.dialects import graph as g
from geir.dialects.traits import Contraction
from geir.errors import OnnxImportError
from geir.passes.graph.simplify import simplify
from geir.frontend.onnx import import_model
from geir.runtime.interpreter import run_module
from geir.testing.suite import light_model

# ---------------------------------------------------------------------------
# One op at a time: geir's graph interpreter on the imported model against onnxruntime.
# ---------------------------------------------------------------------------


def _model(nodes, inputs, outputs, inits=(), opset=21, ms=False):
    graph = helper.make_graph(nodes, "q", inputs, outputs, initializer=list(inits))
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("com.microsoft", 1)] if ms else [])
    m = helper.make_model(graph, opset_imports=imports)
    m.ir_version = 9
    return m


def _ort(model, feeds, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def _geir(model, feeds):
    return list(run_module(import_model(model), feeds).values())


def _spec(model, feeds):
    """The onnx package's reference evaluator: the operator specs' exact int32 products. Used
    where a uint8 activation meets int8 weights: on an x86 CPU without VNNI onnxruntime's u8s8
    kernel adds pairs of products in int16 (VPMADDUBSW) and saturates, which its quantization
    docs warn about (reduce_range), so its results there depend on the CPU."""
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, feeds)


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


RNG = np.random.default_rng(7)


@pytest.mark.parametrize("zp_type,axis", [(np.uint8, None), (np.int8, None), (np.int8, 1), (np.uint8, 0)])
def test_quantize_dequantize_linear(zp_type, axis):
    x = (RNG.standard_normal((3, 4, 5)) * 4).astype(np.float32)
    x.flat[:4] = [0.5, 1.5, 2.5, -2.5]  # halves: rounded to even
    x.flat[4:6] = [1e6, -1e6]           # saturated
    n = {None: 1, 0: 3, 1: 4}[axis]
    scale = np.linspace(0.05, 0.2, n).astype(np.float32).reshape(() if axis is None else (n,))
    zp = np.asarray(np.arange(n) * 3 + (128 if zp_type is np.uint8 else -5), zp_type).reshape(scale.shape)
    kw = {} if axis is None else {"axis": axis}
    m = _model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], **kw),
                helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], **kw)],
               [_vi("x", TensorProto.FLOAT, x.shape)],
               [_vi("q", helper.np_dtype_to_tensor_dtype(np.dtype(zp_type)), x.shape), _vi("y", TensorProto.FLOAT, x.shape)],
               [_init("s", scale), _init("z", zp)])
    ref = _ort(m, {"x": x})
    got = _geir(m, {"x": x})
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[1], ref[1])


def test_dequantize_int32_and_opset23_output_dtype():
    from onnx.reference import ReferenceEvaluator

    q = RNG.integers(-1000, 1000, (6,), dtype=np.int32)
    m = _model([helper.make_node("DequantizeLinear", ["q", "s"], ["y"], output_dtype=TensorProto.FLOAT16)],
               [_vi("q", TensorProto.INT32, [6])], [_vi("y", TensorProto.FLOAT16, [6])],
               [_init("s", np.float32(0.01))], opset=23)
    ref = ReferenceEvaluator(m).run(None, {"q": q})[0]
    got = _geir(m, {"q": q})[0]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, ref)


def _conv_integer_model(x_zp, w, w_zp, w_const=True, pads=(1, 1, 1, 1)):
    inits = [_init("xz", np.uint8(x_zp)), _init("wz", w_zp)]
    inputs = [_vi("x", TensorProto.UINT8, [2, 3, 6, 6])]
    if w_const:
        inits.append(_init("w", w))
    else:
        inputs.append(_vi("w", helper.np_dtype_to_tensor_dtype(w.dtype), list(w.shape)))
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=list(pads), strides=[1, 2])
    return _model([node], inputs, [_vi("y", TensorProto.INT32, None)], inits)


@pytest.mark.parametrize("case", ["int8_weights", "uint8_weights_zp", "weights_not_constant", "wide_weights"])
def test_conv_integer(case):
    x = RNG.integers(0, 256, (2, 3, 6, 6), dtype=np.uint8)
    if case == "int8_weights":
        w, wz, const = RNG.integers(-128, 128, (4, 3, 3, 3), dtype=np.int8), np.int8(0), True
    elif case == "uint8_weights_zp":  # w - zw fits int8: folded into the weights
        wz = np.uint8(128)
        w = RNG.integers(0, 256, (4, 3, 3, 3), dtype=np.uint8)
        const = True
    elif case == "weights_not_constant":
        w, wz, const = RNG.integers(-128, 128, (4, 3, 3, 3), dtype=np.int8), np.int8(3), False
    else:  # uint8 weights far from their zero point: exact on int32 values
        w, wz, const = RNG.integers(0, 256, (4, 3, 3, 3), dtype=np.uint8), np.uint8(0), True
    m = _conv_integer_model(37, w, wz, const)
    feeds = {"x": x} if const else {"x": x, "w": w}
    ref = _ort(m, feeds)[0]
    module = import_model(m)
    got = list(run_module(module, feeds).values())[0]
    np.testing.assert_array_equal(got, ref)
    int8_conv = [op for op in module.walk() if isinstance(op, g.ConvOp) and g.is_integer_contraction(op)]
    assert bool(int8_conv) == (case in ("int8_weights", "uint8_weights_zp"))


@pytest.mark.parametrize("b_const", [True, False])
def test_matmul_integer(b_const):
    a = RNG.integers(0, 256, (2, 5, 8), dtype=np.uint8)
    b = RNG.integers(-128, 128, (8, 6), dtype=np.int8)
    inits = [_init("az", np.uint8(120)), _init("bz", np.int8(0))]
    inputs = [_vi("a", TensorProto.UINT8, list(a.shape))]
    if b_const:
        inits.append(_init("b", b))
    else:
        inputs.append(_vi("b", TensorProto.INT8, list(b.shape)))
    m = _model([helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])], inputs,
               [_vi("y", TensorProto.INT32, None)], inits)
    feeds = {"a": a} if b_const else {"a": a, "b": b}
    np.testing.assert_array_equal(_geir(m, feeds)[0], _spec(m, feeds)[0])


def test_qlinear_conv_and_matmul():
    x = RNG.integers(0, 256, (1, 4, 7, 7), dtype=np.uint8)
    w = RNG.integers(-127, 128, (6, 4, 3, 3), dtype=np.int8)
    conv = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["c"],
                            pads=[1, 1, 1, 1])
    flat = helper.make_node("Flatten", ["c"], ["f"])
    mm = helper.make_node("QLinearMatMul", ["f", "ys", "yz", "m", "ms", "mz", "zs", "zz"], ["y"])
    inits = [
        _init("xs", np.float32(0.02)), _init("xz", np.uint8(128)), _init("w", w),
        _init("ws", np.linspace(0.01, 0.03, 6).astype(np.float32)), _init("wz", np.zeros(6, np.int8)),
        _init("ys", np.float32(0.5)), _init("yz", np.uint8(100)), _init("b", RNG.integers(-500, 500, 6).astype(np.int32)),
        _init("m", RNG.integers(-127, 128, (294, 10), dtype=np.int8)), _init("ms", np.float32(0.01)),
        _init("mz", np.int8(0)), _init("zs", np.float32(0.3)), _init("zz", np.uint8(128)),
    ]
    m = _model([conv, flat, mm], [_vi("x", TensorProto.UINT8, [1, 4, 7, 7])], [_vi("y", TensorProto.UINT8, None)],
               inits, opset=13)
    ref = _spec(m, {"x": x})[0].astype(int)
    got = _geir(m, {"x": x})[0].astype(int)
    assert np.abs(got - ref).max() <= 1
    assert (got == ref).mean() >= 0.99


def test_dynamic_quantize_linear():
    x = (RNG.standard_normal((4, 9)) * 3 + 1).astype(np.float32)
    m = _model([helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])], [_vi("x", TensorProto.FLOAT, [4, 9])],
               [_vi("y", TensorProto.UINT8, [4, 9]), _vi("s", TensorProto.FLOAT, []), _vi("z", TensorProto.UINT8, [])])
    ref = _ort(m, {"x": x})
    got = _geir(m, {"x": x})
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-7)
    np.testing.assert_array_equal(got[2], ref[2])
    assert np.abs(got[0].astype(int) - ref[0].astype(int)).max() <= 1


def test_bad_quantized_nodes_are_clear_errors():
    x = _vi("x", TensorProto.FLOAT, [2, 4])
    blocked = _model([helper.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=1, block_size=2, name="qb")], [x],
                     [_vi("y", TensorProto.UINT8, [2, 4])], [_init("s", np.ones((2, 3), np.float32))])
    with pytest.raises(OnnxImportError, match=r"node 'qb' \(QuantizeLinear, opset 21\): blocked quantization: scale "
                                              r"of shape \[2, 3\] does not block x of shape \[2, 4\] along axis 1 by "
                                              r"block_size 2 \(expected \[2, 2\]\)"):
        import_model(blocked, check_shapes=False)
    contrib = _model([helper.make_node("QLinearSoftmax", ["x"], ["y"], domain="com.microsoft", name="qs")], [x],
                     [_vi("y", TensorProto.FLOAT, [2, 4])], ms=True)
    with pytest.raises(OnnxImportError, match=r"node 'qs' \(QLinearSoftmax, opset 21, domain com.microsoft\)"):
        import_model(contrib)


# ---------------------------------------------------------------------------
# Suite models quantized by onnxruntime, compiled by geir, against onnxruntime's int8 run.
# ---------------------------------------------------------------------------


def _without_softmax(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model up to its logits: a trailing Softmax's probabilities are mostly 0 after an
    int8 output quantization, which would make the comparison say nothing."""
    m = onnx.ModelProto.FromString(model.SerializeToString())
    last = m.graph.node[-1]
    if last.op_type == "Softmax":
        m.graph.node.remove(last)
        for n in m.graph.node:
            for i, o in enumerate(n.output):
                if o == last.input[0]:
                    n.output[i] = m.graph.output[0].name
    return onnx.version_converter.convert_version(m, 13)  # per-axis quantization needs 13


def _data_input(model: onnx.ModelProto):
    inits = {t.name for t in model.graph.initializer}
    inp = next(i for i in model.graph.input if i.name not in inits)
    return inp.name, [d.dim_value for d in inp.type.tensor_type.shape.dim]


def _ort_quantized(name: str, fmt: str, per_channel: bool, tmp_path) -> tuple[str, str, list[int]]:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    model = _without_softmax(light_model(name))
    inp, shape = _data_input(model)
    rng = np.random.default_rng(0)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.samples = iter([{inp: rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.samples, None)

    src, dst = tmp_path / "float.onnx", tmp_path / f"{fmt}.onnx"
    onnx.save(model, src)
    quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
                    per_channel=per_channel)
    return str(dst), inp, shape


def _output_step(path: str) -> float:
    """The output's quantization step: the scale of the DequantizeLinear that produces it."""
    m = onnx.load(path)
    node = next(n for n in m.graph.node if n.output[0] == m.graph.output[0].name)
    assert node.op_type == "DequantizeLinear"
    return float(numpy_helper.to_array(next(t for t in m.graph.initializer if t.name == node.input[1])))


# Models with few weights (quantize_static's own calibration of AlexNet's or VGG's 60M+ weights
# takes a minute each, ResNet-50's 25M a minute and a half); between them: concat, LRN,
# average and global pools, gemm, per-channel weights, QDQ and QOperator (QLinearConv, QGemm,
# QLinearConcat, QLinearAveragePool). Two, for the test command's time (ShuffleNet's groups and
# channel shuffles took 90 s); bench/quantize.py runs every model.
@pytest.mark.parametrize("name,fmt,per_channel", [
    ("light_squeezenet", "qdq", True),
    ("light_inception_v1", "qoperator", True),
])
def test_onnxruntime_quantized_model(name, fmt, per_channel, tmp_path):
    """geir's compiled program against onnxruntime's int8 execution (all optimisations: its QDQ
    models run as QLinear kernels): within one output quantization step on >= 99% of the
    elements, and every conv / gemm of the model an int8 contraction."""
    path, inp, shape = _ort_quantized(name, fmt, per_channel, tmp_path)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    ref = _ort(onnx.load(path), {inp: x}, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)[0]
    compiled = geir.compile(path)
    got = next(iter(compiled.run({inp: x}).values()))
    step = _output_step(path)
    within = float((np.abs(got - ref) <= step * 1.001).mean())
    assert within >= 0.99, f"{within:.4f} of the elements within one step ({step})"
    _assert_int8_contractions(path)


def _assert_int8_contractions(path: str) -> None:
    """After graph-simplify every contraction is int8, except where onnxruntime quantized the
    weights with a zero point (as an activation: inception's classifier weights come out of a
    node), which graph-fold-qdq leaves in float (docs/quantization.md)."""
    module = import_model(onnx.load(path))
    simplify(module)
    contractions = [op for op in module.walk() if op.has_trait(Contraction)]
    floats = [op for op in contractions if not g.is_integer_contraction(op)]
    assert len(contractions) > len(floats)
    for op in floats:
        w = op.inputs[1].owner
        assert isinstance(w, g.DequantizeOp) and len(w.inputs) > 2, op
        assert np.any(g.constant_value_of(w.inputs[2])), f"{op.location} left in float"


# ---------------------------------------------------------------------------
# geir-compare on an int8 program against the float model.
# ---------------------------------------------------------------------------


def _conv_chain(coarse: str | None):
    """conv1 -> relu1 -> conv2 -> relu2 -> conv3 in float (coarse=None), or with every conv's
    input and weights quantized to int8 (QDQ), the input of the `coarse` conv at a scale 16x
    too large."""
    rng = np.random.default_rng(3)
    ws = {f"w{i}": (rng.standard_normal((8, 8 if i > 1 else 3, 3, 3)) * 0.2).astype(np.float32) for i in (1, 2, 3)}
    nodes, inits = [], []
    src = "x"
    for i in (1, 2, 3):
        xin, win = src, f"w{i}"
        if coarse is not None:
            scale = np.float32(0.05 * (16 if coarse == f"conv{i}" else 1))
            inits += [_init(f"s{i}", scale), _init(f"z{i}", np.int8(0))]
            q = ws[win]
            sw = np.abs(q).reshape(8, -1).max(axis=1) / 127
            inits += [_init(f"{win}_q", np.round(q / sw.reshape(8, 1, 1, 1)).astype(np.int8)),
                      _init(f"{win}_s", sw.astype(np.float32))]
            nodes += [helper.make_node("QuantizeLinear", [src, f"s{i}", f"z{i}"], [f"q{i}"], name=f"quant{i}"),
                      helper.make_node("DequantizeLinear", [f"q{i}", f"s{i}", f"z{i}"], [f"d{i}"], name=f"dequant{i}"),
                      helper.make_node("DequantizeLinear", [f"{win}_q", f"{win}_s"], [f"{win}_d"], axis=0,
                                       name=f"wdequant{i}")]
            xin, win = f"d{i}", f"{win}_d"
        else:
            inits.append(_init(win, ws[win]))
        nodes.append(helper.make_node("Conv", [xin, win], [f"c{i}"], pads=[1, 1, 1, 1], name=f"conv{i}"))
        src = f"c{i}"
        if i < 3:
            nodes.append(helper.make_node("Relu", [src], [f"r{i}"], name=f"relu{i}"))
            src = f"r{i}"
    return _model(nodes, [_vi("x", TensorProto.FLOAT, [1, 3, 16, 16])], [_vi(src, TensorProto.FLOAT, None)], inits,
                  opset=13)


@pytest.mark.parametrize("coarse", ["conv2", "conv3"])
def test_compare_names_the_layer_that_lost_most(coarse):
    from geir.driver.compare import compare_model

    compiled = geir.compile(_conv_chain(coarse))
    # the QDQ graph shows every layer's float output; after graph-fold-qdq the int8 program has
    # only the last (each activation is requantized from its accumulator, an int8 tensor)
    stages = {k: compiled.stages[k] for k in ("01_import", "02_simplify", "09_plan_memory")}
    report = compare_model(_conv_chain(None), compiled=stages)
    assert all(s.quantized for s in report.stages)
    for s in report.stages:  # int8 stages are judged by SIMILAR: nothing is CLOSE-only
        assert all(c.metrics.low_precision for c in s.comparisons)
    c, lost = report.most_lost()
    assert c.node == coarse and lost > 10, (c.node, lost)
    assert f"lost most to int8: node '{coarse}'" in report.format()
    assert report.to_json()["most_lost"]["node"] == coarse


def test_geir_compare_quantize_against_the_float_model(tmp_path, capsys):
    from geir.tools import geir_compare

    onnx.save(_conv_chain(None), tmp_path / "m.onnx")
    np.savez(tmp_path / "c.npz", x=np.random.default_rng(0).standard_normal((4, 1, 3, 16, 16)).astype(np.float32))
    code = geir_compare.main([str(tmp_path / "m.onnx"), "--quantize", "int8", "--calibration-data",
                              str(tmp_path / "c.npz"), "--stages", "import,quantize,plan_memory"])
    out = capsys.readouterr().out
    assert code == 0
    assert "01_import (graph" in out and "01_quantize (graph" in out and "09_plan_memory (ascend" in out
    assert re.search(r"lost most to int8: node 'conv\d' \(tensor 'c\d', graph.conv\) in stage 01_quantize", out)
    import_line = next(line for line in out.splitlines() if line.startswith("  01_import"))
    # The float stage is judged by fp32 tolerances: every tensor EQUAL or CLOSE (which of the
    # two depends on how onnxruntime's build sums a conv), none only SIMILAR.
    verdicts = dict((v, int(n)) for n, v in re.findall(r"(\d+) ([A-Z]+)", import_line.split("tensors:")[1]))
    assert "5 tensors" in import_line and set(verdicts) <= {"EQUAL", "CLOSE"} and sum(verdicts.values()) == 5, import_line


def test_int8_program_round_trips_through_an_offline_model(tmp_path):
    """An int8 program (cube kernels with their i32 scratch) saved as .om and loaded again
    computes the same bytes."""
    compiled = geir.compile(_conv_chain("conv2"))
    assert compiled.report["fallback_kernels"] == 0
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    compiled.save(tmp_path / "m.om")
    again = geir.load(tmp_path / "m.om")
    np.testing.assert_array_equal(next(iter(again.run({"x": x}).values())), next(iter(compiled.run({"x": x}).values())))
