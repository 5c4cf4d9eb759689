"""geir.quantize, geir.compile(quantize="int8") and geir-compile --quantize: the forms of
calibration data (all giving the same table, shards merged exactly), the table and graph-quantize
agreeing, skip, the progress bar, and one clear error for each bad input."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import geir
from geir.driver.model_import import import_graph
from geir.errors import GeirError
from geir.ir.text import print_module
from geir.passes.graph.quantize import CalibrationTable, insert_qdq, is_quantized
from geir.passes.graph.simplify import simplify
from geir.runtime.interpreter import run_module
from geir.testing.suite import lit_chunks
from geir.tools import geir_compile

BATCH = 2
SHAPE = (BATCH, 3, 6, 6)


@pytest.fixture(scope="module")
def model() -> onnx.ModelProto:
    """conv -> relu -> flatten -> gemm (trans_b) -> matmul by a constant, node names conv, gemm, mm."""
    rng = np.random.default_rng(0)

    def init(name, shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["g"], name="gemm", transB=1),
        helper.make_node("MatMul", ["g", "w3"], ["y"], name="mm"),
    ]
    graph = helper.make_graph(
        nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (BATCH, 5))],
        [init("w", (4, 3, 3, 3)), init("b", (4,)), init("w2", (16, 144)), init("b2", (16,)), init("w3", (16, 5))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def samples() -> np.ndarray:
    """12 calibration samples, each a whole input of the model."""
    return np.random.default_rng(1).standard_normal((12, *SHAPE)).astype(np.float32)


def _table(model, data, **kwargs) -> CalibrationTable:
    return geir.quantize(model, data, progress=False, **kwargs)[1]


def test_every_form_of_calibration_data_gives_the_same_table(model, samples, tmp_path):
    """Stacked samples, rows of the batch, per-sample dicts, one .npz, a directory of shards of
    different sizes (merged): the statistics, so the tables, are the same exactly."""
    reference = _table(model, {"x": samples})
    assert sorted(reference.layers) == ["conv", "gemm", "mm"]
    np.savez(tmp_path / "all.npz", x=samples)
    shards = tmp_path / "shards"
    shards.mkdir()
    np.savez(shards / "0.npz", x=samples[:1])
    np.savez(shards / "1.npz", x=samples[1:8].reshape(-1, *SHAPE[1:]))  # rows, run BATCH at a time
    np.savez(shards / "2.npz", x=samples[8:])
    for data in ({"x": samples.reshape(-1, *SHAPE[1:])}, [{"x": s} for s in samples], tmp_path / "all.npz",
                 str(shards)):
        assert _table(model, data) == reference


def test_quantized_graph_is_what_graph_quantize_makes_of_the_table(model, samples, tmp_path):
    path = tmp_path / "table.json"
    qdq, table = geir.quantize(model, {"x": samples}, method="percentile", percentile=99.9, progress=False,
                               table=path)
    assert CalibrationTable.load(path) == table and table.method == "percentile" and table.percentile == 99.9
    again = import_graph(model)
    simplify(again)
    insert_qdq(again, CalibrationTable.load(path))
    assert print_module(again) == print_module(qdq)
    feeds = {"x": samples[0]}
    ours, ref = run_module(qdq, feeds)["y"], run_module(import_graph(model), feeds)["y"]
    assert 0 < np.max(np.abs(ours - ref)) < 0.05 * np.max(np.abs(ref))  # fake quantization, close


def test_skip_keeps_a_layer_in_float(model, samples):
    qdq, table = geir.quantize(model, {"x": samples}, skip=["gemm"], progress=False)
    assert sorted(table.layers) == ["conv", "mm"]
    assert is_quantized(qdq)


def test_compile_quantizes_as_a_stage(model, samples, tmp_path):
    compiled = geir.compile(model, opt_level=1, lower=False, quantize="int8", calibration_data={"x": samples},
                            calibration_method="minmax", calibration_table=tmp_path / "t.json",
                            precision_mode="must_keep_origin_dtype")
    assert compiled.stage_names == ["01_import", "01_quantize", "02_simplify"]
    assert CalibrationTable.load(tmp_path / "t.json") == _table(model, {"x": samples}, method="minmax")
    qdq, _ = geir.quantize(model, {"x": samples}, method="minmax", progress=False)
    feeds = {"x": samples[3]}
    np.testing.assert_allclose(compiled.run(feeds)["y"], run_module(qdq, feeds)["y"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "data,message",
    [
        ({"y": np.zeros((2, *SHAPE), np.float32)}, r"no data for input\(s\) 'x'; 'y' is not an input; "
                                                    r"the model's inputs are 'x'"),
        ({"x": np.zeros((2, 3, 5, 5), np.float32)}, r"input 'x' has shape \[2, 3, 5, 5\]; give samples of the "
                                                     r"model's input shape \[2, 3, 6, 6\]"),
        ([{"x": np.zeros((1, 3, 6, 6), np.float32)}], r"\(sample 0\): input 'x' has shape \[1, 3, 6, 6\], "
                                                       r"the model's is \[2, 3, 6, 6\]"),
        ({"x": np.zeros((0, *SHAPE), np.float32)}, "the calibration set is empty"),
        ([], "the calibration set is empty"),
        ({"x": np.zeros((2, *SHAPE), np.int64) + 1j}, "input 'x' has dtype complex128"),
        (42, "calibration data of type int: give a dict"),
    ],
)
def test_bad_calibration_data_is_an_error(model, data, message):
    with pytest.raises(GeirError, match=message):
        geir.quantize(model, data, progress=False)


def test_bad_files_are_errors(model, tmp_path):
    with pytest.raises(GeirError, match="no such file or directory"):
        geir.quantize(model, tmp_path / "nope.npz", progress=False)
    with pytest.raises(GeirError, match="holds no .npz file"):
        geir.quantize(model, tmp_path, progress=False)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(GeirError, match="cannot read .*bad.npz"):
        geir.quantize(model, tmp_path / "bad.npz", progress=False)


def test_bad_options_are_errors(model, samples):
    data = {"x": samples}
    with pytest.raises(GeirError, match="unknown calibration method 'kl'; methods: minmax, percentile, entropy, mse"):
        geir.quantize(model, data, method="kl")
    with pytest.raises(GeirError, match="skip: no op of the graph is named 'nope'"):
        geir.quantize(model, data, skip=["nope"], progress=False)
    with pytest.raises(GeirError, match="unknown calibration method"):
        geir.compile(model, quantize="int8", calibration_data=data, calibration_method="kl")
    with pytest.raises(GeirError, match="unknown type 'int4'"):
        geir.compile(model, quantize="int4", calibration_data=data)
    with pytest.raises(GeirError, match="needs calibration_data"):
        geir.compile(model, quantize="int8")
    with pytest.raises(GeirError, match="calibration_data given without quantize"):
        geir.compile(model, calibration_data=data)


def test_a_quantized_model_is_not_quantized_again(model, samples):
    qdq, _ = geir.quantize(model, {"x": samples}, progress=False)
    with pytest.raises(GeirError, match="already quantized"):
        geir.quantize(qdq, {"x": samples}, progress=False)
    with pytest.raises(GeirError, match="already quantized"):
        geir.compile(qdq, quantize="int8", calibration_data={"x": samples})


# ---------------------------------------------------------------------------
# geir-compile
# ---------------------------------------------------------------------------


@pytest.fixture
def files(model, samples, tmp_path):
    onnx.save(model, str(tmp_path / "m.onnx"))
    np.savez(tmp_path / "calib.npz", x=samples)
    return tmp_path


def _cli(capsys, *args) -> tuple[int, str, str]:
    code = geir_compile.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_compiles_int8_and_writes_the_table(files, capsys, samples, model):
    code, out, err = _cli(capsys, files / "m.onnx", "-o", files / "m.om", "--quantize", "int8",
                          "--calibration-data", files / "calib.npz", "--calibration-method", "mse",
                          "--calibration-table", files / "t.json", "--precision-mode", "must_keep_origin_dtype")
    assert code == 0, err
    assert err == ""  # no progress bar when stderr is not a terminal
    assert CalibrationTable.load(files / "t.json") == _table(model, {"x": samples}, method="mse")
    # the CLI's program is the API's; both requantize the conv's output on its FIX pipe (the
    # gemm's quantize moves before the flatten: graph-fold-qdq), one multiply by the scale the
    # FIX holds where the QDQ graph rounds twice, so against the graph: close, not equal
    api = geir.compile(model, quantize="int8", calibration_data={"x": samples}, calibration_method="mse",
                       precision_mode="must_keep_origin_dtype")
    got = geir.load(files / "m.om").run({"x": samples[5]})["y"]
    np.testing.assert_array_equal(got, api.run({"x": samples[5]})["y"])
    qdq, _ = geir.quantize(model, {"x": samples}, method="mse", progress=False)
    want = run_module(qdq, {"x": samples[5]})["y"]
    cos = float(np.dot(got.ravel(), want.ravel()) / np.linalg.norm(got) / np.linalg.norm(want))
    assert cos > 0.999 and np.abs(got - want).max() <= 0.05 * np.abs(want).max(), (cos, np.abs(got - want).max())


@pytest.mark.parametrize(
    "args,message",
    [
        (["--quantize", "int8", "--calibration-data", "{d}/calib.npz", "--calibration-method", "kl"],
         "unknown calibration method 'kl'"),
        (["--quantize", "int8"], "needs calibration_data"),
        (["--calibration-data", "{d}/calib.npz"], "go with --quantize int8"),
        (["--quantize", "int8", "--calibration-data", "{d}/nope"], "no such file or directory: .*nope"),
        (["--quantize", "int8", "--calibration-data", "{d}/wrong.npz"], r"\(wrong.npz\): no data for input\(s\) 'x'"),
    ],
)
def test_cli_errors_are_one_line(files, capsys, args, message):
    np.savez(files / "wrong.npz", image=np.zeros((1, *SHAPE), np.float32))
    code, _, err = _cli(capsys, files / "m.onnx", "-o", files / "m.om", *(a.format(d=files) for a in args))
    assert code == 1
    assert re.fullmatch(rf"geir-compile: error: .*{message}.*\n", err), err


def test_cli_refuses_to_quantize_a_quantized_model(files, capsys, samples, model):
    qdq, _ = geir.quantize(model, {"x": samples}, progress=False)
    (files / "q.mlir").write_text(print_module(qdq))
    code, _, err = _cli(capsys, files / "q.mlir", "-o", files / "m.om", "--quantize", "int8",
                        "--calibration-data", files / "calib.npz")
    assert code == 1 and err.startswith("geir-compile: error: the model is already quantized"), err


def _terminal(text: str) -> list[str]:
    """The lines a terminal shows for text with save / restore cursor and clear-to-end codes."""
    lines, line, col, saved = [], [], 0, 0
    for token in re.split(r"(\x1b7|\x1b8|\x1b\[K|\n|\r)", text):
        if token == "\x1b7":
            saved = col
        elif token == "\x1b8":
            col = saved
        elif token == "\x1b[K":
            del line[col:]
        elif token == "\r":
            col = 0
        elif token == "\n":
            lines.append("".join(line))
            line, col = [], 0
        else:
            line[col: col + len(token)] = token
            col += len(token)
    return lines + (["".join(line)] if line else [])


def test_cli_shows_a_progress_bar_on_a_terminal(files):
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "geir.tools.geir_compile", str(files / "m.onnx"), "-o",
                             str(files / "m.om"), "-O1", "--quantize", "int8", "--calibration-data",
                             str(files / "calib.npz")], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait() == 0
    raw = b"".join(chunks).decode()
    assert " calibrating [" + "#" * 30 + "] 12/12" in raw  # drawn, to the end
    lines = _terminal(raw.replace("\r\n", "\n"))
    assert re.fullmatch(r"geir-compile: 01_quantize \.\.\. \d+\.\d\d s", lines[1]), lines  # then erased


def test_cli_tolerance_prints_the_trade_off(files, capsys):
    """--tolerance: the fallback search's table (candidates, cosine, modeled latency, the chosen
    one starred) before the compile summary, and the float layers in the written table."""
    code, out, err = _cli(capsys, files / "m.onnx", "-o", files / "m.om", "--quantize", "int8",
                          "--calibration-data", files / "calib.npz", "--tolerance", "1.0",
                          "--calibration-table", files / "t.json")
    assert code == 0, err
    assert "int8 fallback search: output cosine >= 1" in out
    chosen = [line for line in out.splitlines() if line.startswith("*")]
    assert len(chosen) == 1 and " 1.000000  yes " in chosen[0], out
    table = CalibrationTable.load(files / "t.json")
    assert table.float_layers and sorted(table.float_layers) == sorted(table.layers)
    code, out, err = _cli(capsys, files / "m.onnx", "-o", files / "m.om", "--tolerance", "0.9")
    assert code == 1 and "go with --quantize int8" in err


# ---------------------------------------------------------------------------
# graph-quantize's lit cases, run: the QDQ graph is the float graph up to int8 rounding
# ---------------------------------------------------------------------------

LIT_DIR = os.path.join(os.path.dirname(__file__), "..", "passes", "graph")


@pytest.mark.parametrize("chunk", [pytest.param(c, id=i) for i, c in lit_chunks(LIT_DIR, "quantize")])
def test_lit_case_weights_and_biases_within_half_a_step(chunk):
    """graph-quantize's lit cases, run: every constant the pass quantized (weights per channel,
    biases at the accumulator's scale) dequantizes to within half a quantization step of the
    float constant it replaced, and a data input inside its calibrated range comes back from
    quantize -> dequantize within half a step."""
    from xdsl.context import Context

    from geir.dialects import graph as g
    from geir.dialects import make_context
    from geir.ir.text import parse_module
    from geir.passes.graph.quantize import QuantizePass
    from geir.reference.graph import dequantize, quantize

    module = parse_module(chunk, make_context())
    contractions = {op: [g.constant_value_of(v) for v in op.operands] for op in module.walk()
                    if isinstance(op, g.ConvOp | g.GemmOp | g.MatMulOp)}
    QuantizePass(table=os.path.join(LIT_DIR, "Inputs", "quantize-table.json")).apply(Context(), module)
    module.verify()
    checked = 0
    for op, before in contractions.items():
        for value, old in zip(op.operands, before):
            dq = value.owner
            if old is None or not isinstance(dq, g.DequantizeOp):
                continue
            q, scale = (g.constant_value_of(v) for v in dq.operands[:2])
            back = dequantize(q, scale)
            assert np.all(np.abs(back - old) <= np.broadcast_to(scale, old.shape) / 2 + 1e-7), op.location
            checked += 1
        x = op.operands[0].owner
        if isinstance(x, g.DequantizeOp) and isinstance(x.operands[0].owner, g.QuantizeOp):
            s, z = g.constant_value_of(x.operands[1]), g.constant_value_of(x.operands[2])
            lo, hi = (np.iinfo(np.int8).min - int(z)) * float(s), (np.iinfo(np.int8).max - int(z)) * float(s)
            values = np.linspace(lo, hi, 1001, dtype=np.float32)
            assert np.abs(dequantize(quantize(values, s, z), s, z) - values).max() <= float(s) / 2 + 1e-6
            checked += 1
    assert checked >= 2


def _int8_case(rng, name: str, nodes: list, shape: tuple, weights: dict, constants=()):
    """The model of `nodes` reading x of `shape` (weights: name -> shape, seeded normal * 0.3;
    `constants`: further initializers), calibrated by minmax on 8 seeded samples: (the samples,
    the QDQ graph, the table, the int8 program, its simplified stage)."""
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), w) for w, s in weights.items()]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [*inits, *constants])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    data = {"x": rng.standard_normal((8, *shape)).astype(np.float32)}
    qdq, table = geir.quantize(model, data, method="minmax", progress=False)
    compiled = geir.compile(model, quantize="int8", calibration_data=data, calibration_method="minmax")
    simplified = next(m for s, m in compiled.stages.items() if s.endswith("simplify"))
    return data, qdq, table, compiled, simplified


def _within_two_steps(compiled, qdq, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """No fallback kernel, and the program's output within two steps of the QDQ graph's (a
    step: the output's range over 127); (program's, graph's) output."""
    assert not [k for k in compiled.module.walk() if k.name == "ascend.kernel" and "fallback" in k.attributes]
    got, want = compiled.run({"x": x})["y"], run_module(qdq, {"x": x})["y"]
    step = float(np.abs(want).max()) / 127  # about one step of the output's range
    assert np.abs(got - want).max() <= 2 * step, (np.abs(got - want).max(), step)
    return got, want


def test_a_max_pool_between_int8_convs_runs_in_int8():
    """conv -> relu -> max pool -> conv, calibrated: the pool's quantize moves before it and folds
    into the first conv's requantize (graph-fold-qdq), so the pool is int8 and no kernel of its
    own quantizes; the compiled program stays within one quantization step of the QDQ graph."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("MaxPool", ["r1"], ["p"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["p", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    data, qdq, table, compiled, simplified = _int8_case(
        np.random.default_rng(4), "pooled", nodes, (2, 8, 12, 12), {"w1": (32, 8, 3, 3), "w2": (32, 32, 3, 3)})
    assert "shares" not in table.layers["conv2"].info  # the pool's input is no layer's: its own range
    pools = [op for op in simplified.walk() if op.name == "graph.max_pool"]
    assert len(pools) == 1 and str(pools[0].results[0].type.element_type) == "i8"
    assert not [op for op in simplified.walk() if op.name == "graph.quantize"
                and getattr(op.inputs[0].owner, "name", None) == "graph.max_pool"]
    got, want = _within_two_steps(compiled, qdq, data["x"][5])
    cos = float(np.dot(got.ravel(), want.ravel()) / np.linalg.norm(got) / np.linalg.norm(want))
    assert cos > 0.999, cos


def _inception_module(rng, pool: str):
    """`_int8_case` of an Inception module in small: a concat of two convs (3x3, 1x1; relu) read
    by a 1x1 conv and, through a 3x3 `pool` (ONNX op type), by another; their outputs joined."""
    nodes = [helper.make_node("Conv", ["x", "wa"], ["a"], name="conv_a", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["ra"], name="relu_a"),
             helper.make_node("Conv", ["x", "wb"], ["b"], name="conv_b"),
             helper.make_node("Relu", ["b"], ["rb"], name="relu_b"),
             helper.make_node("Concat", ["ra", "rb"], ["cat"], name="concat", axis=1),
             helper.make_node("Conv", ["cat", "w1"], ["y1"], name="conv_1x1"),
             helper.make_node(pool, ["cat"], ["p"], name="pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["p", "w2"], ["y2"], name="conv_pool"),
             helper.make_node("Concat", ["y1", "y2"], ["y"], name="out", axis=1)]
    return _int8_case(rng, "module", nodes, (2, 8, 10, 10),
                      {"wa": (32, 8, 3, 3), "wb": (32, 8, 1, 1), "w1": (32, 64, 1, 1), "w2": (32, 64, 1, 1)})


def test_a_pool_branch_shares_its_input_s_parameters_and_runs_in_int8():
    """Inception's module in small: a concat of two int8 convs read by a 1x1 conv and, through a
    3x3 max pool, by another 1x1 conv. The pooled layer takes the concat reader's scale and zero
    point (the table says which: "shares"), so graph-fold-qdq moves its quantize before the
    pool, where it is the 1x1 conv's: the pool runs in int8 on the concat, which its convs
    write requantized - no quantize kernel, no float concat; within two output steps of the
    QDQ graph."""
    data, qdq, table, compiled, simplified = _inception_module(np.random.default_rng(5), "MaxPool")
    shared, own = table.layers["conv_pool"], table.layers["conv_1x1"]
    assert shared.info["shares"] == "conv_1x1" and (shared.scale, shared.zero_point) == (own.scale, own.zero_point)
    assert shared.info["max"] <= own.info["max"]  # its own range, measured, within the shared one
    pools = [op for op in simplified.walk() if op.name == "graph.max_pool"]
    assert len(pools) == 1 and str(pools[0].results[0].type.element_type) == "i8"
    cats = [op for op in simplified.walk() if op.name == "graph.concat" and op.results[0].name_hint != "y"]
    assert cats and all(str(c.results[0].type.element_type) == "i8" for c in cats)
    assert not [op for op in simplified.walk() if op.name == "graph.quantize"
                and getattr(op.inputs[0].owner, "name", None) in ("graph.concat", "graph.max_pool")]
    _within_two_steps(compiled, qdq, data["x"][3])


def test_a_concat_read_by_an_average_pool_too_is_written_in_int8_by_its_producers():
    """Inception-v2's module in small: the concat of two int8 convs is read by a 1x1 conv and,
    through a 3x3 average pool, by another. The pool reads the float concat, so the concat
    stays; the 1x1 conv's quantize moves onto its operands (graph-fold-qdq), so the two convs
    write it requantized too: no kernel reads the float concat back to quantize it. Within two
    output steps of the QDQ graph."""
    data, qdq, _, compiled, simplified = _inception_module(np.random.default_rng(7), "AveragePool")
    cats = sorted(str(op.results[0].type.element_type) for op in simplified.walk()
                  if op.name == "graph.concat" and op.results[0].name_hint != "y")
    assert cats == ["f32", "i8"]  # the pool's float concat, the 1x1 conv's int8 one
    assert not [op for op in simplified.walk() if op.name == "graph.quantize"
                and getattr(op.inputs[0].owner, "name", None) == "graph.concat"]
    _within_two_steps(compiled, qdq, data["x"][4])


def test_a_channel_shuffle_between_int8_convs_moves_int8():
    """ShuffleNet's unit in small: a group conv -> relu -> channel shuffle (reshape, transpose,
    reshape) -> depthwise conv, calibrated. graph-fold-qdq moves the depthwise conv's
    quantize before the shuffle (exact: quantizing commutes with moving elements), where it
    folds into the group conv's requantize: the shuffle moves int8 and no kernel quantizes;
    within two output steps of the QDQ graph."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], name="gconv", group=4),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Reshape", ["r", "s5"], ["a"], name="split_groups"),
             helper.make_node("Transpose", ["a"], ["t"], name="shuffle", perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["t", "s4"], ["y0"], name="merge_groups"),
             helper.make_node("Conv", ["y0", "w2"], ["y"], name="dwconv", group=32, pads=[1, 1, 1, 1])]
    data, qdq, _, compiled, simplified = _int8_case(
        np.random.default_rng(6), "shuffle", nodes, (2, 16, 8, 8), {"w1": (32, 4, 1, 1), "w2": (32, 1, 3, 3)},
        [numpy_helper.from_array(np.array([2, 4, 8, 8, 8], np.int64), "s5"),
         numpy_helper.from_array(np.array([2, 32, 8, 8], np.int64), "s4")])
    shuffles = [op for op in simplified.walk() if op.name == "graph.transpose"]
    assert len(shuffles) == 1 and str(shuffles[0].results[0].type.element_type) == "i8"
    quantizes = [op for op in simplified.walk() if op.name == "graph.quantize"]
    assert [type(q.inputs[0].owner).__name__ for q in quantizes] == ["Block"]  # the graph input's only
    _within_two_steps(compiled, qdq, data["x"][2])
