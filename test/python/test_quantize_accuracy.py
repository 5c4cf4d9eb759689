"""INT8 calibration on a real task: a small CNN trained on scikit-learn's digits (8x8 images,
bundled with scikit-learn: no download), calibrated by each method on 200 training samples and
judged by its top-1 accuracy on a held-back split, fp32 against int8. `pytest -s` prints the
table. The int8 model runs as the QDQ graph in the graph interpreter (fake quantization, the
int8 numerics); one method also runs compiled end to end, where it must agree with it."""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
import torch
from sklearn import datasets

import geir
from geir.dialects import graph as g
from geir.dialects.traits import Contraction
from geir.driver.calibration import METHODS
from geir.runtime.interpreter import run_module

BATCH = 20  # the exported model's batch: the held-back split is 18 of them
TEST, CALIBRATION = 360, 200
MAX_DROP = {"entropy": 0.5, "percentile": 0.5, "minmax": 2.0, "mse": 2.0}  # top-1 points


@pytest.fixture(scope="module")
def digits():
    """(onnx bytes, calibration samples, test images, test labels): the CNN trained with a fixed
    seed on all but the held-back split."""
    data = datasets.load_digits()
    images = (data.images / 16.0).astype(np.float32)[:, None]  # [1797, 1, 8, 8] in [0, 1]
    order = np.random.default_rng(0).permutation(len(images))
    test, train = order[:TEST], order[TEST:]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        net = torch.nn.Sequential(
            torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(8, 16, 3, padding=1, stride=2), torch.nn.ReLU(),
            torch.nn.Flatten(), torch.nn.Linear(16 * 4 * 4, 10),
        )
        optimizer = torch.optim.Adam(net.parameters(), 1e-2)
        x, y = torch.from_numpy(images[train]), torch.from_numpy(data.target[train])
        for _ in range(8):
            for batch in torch.randperm(len(train)).split(64):
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(net(x[batch]), y[batch]).backward()
                optimizer.step()
        f = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(net.eval(), (torch.zeros(BATCH, 1, 8, 8),), f, dynamo=False, opset_version=17,
                              input_names=["x"])
    finally:
        torch.set_num_threads(threads)
    return f.getvalue(), images[train[:CALIBRATION]], images[test], data.target[test]


def logits(run, images: np.ndarray) -> np.ndarray:
    return np.concatenate([next(iter(run({"x": images[i: i + BATCH]}).values()))
                           for i in range(0, len(images), BATCH)])


def top1(scores: np.ndarray, labels: np.ndarray) -> float:
    return 100.0 * float(np.mean(scores.argmax(axis=1) == labels))


def test_int8_accuracy_per_method(digits):
    model, calibration, images, labels = digits
    float_module = geir.compile(model, opt_level=0, lower=False).module
    fp32 = logits(lambda feeds: run_module(float_module, feeds), images)
    base = top1(fp32, labels)
    assert base >= 90.0, f"the float CNN should learn the digits (top-1 {base:.2f}%)"
    rows = [("fp32", base, 0.0, "")]
    for method in METHODS:
        qdq, table = geir.quantize(model, {"x": calibration}, method=method, progress=False)
        assert sorted(table.layers) == ["/0/Conv", "/2/Conv", "/5/Gemm"] and table.method == method
        int8 = logits(lambda feeds: run_module(qdq, feeds), images)
        assert 0 < np.max(np.abs(int8 - fp32)) < np.max(np.abs(fp32)) * 0.2  # quantized, and close
        acc = top1(int8, labels)
        rows.append((method, acc, base - acc, f"{np.mean(int8.argmax(1) == fp32.argmax(1)) * 100:.2f}%"))
    print(f"\ndigits, top-1 on {TEST} held-back images (calibration: {CALIBRATION} training samples)")
    print(f"{'model':<12}{'top-1':>8}{'drop':>8}{'same argmax as fp32':>22}")
    for name, acc, drop, same in rows:
        print(f"{name:<12}{acc:>7.2f}%{drop:>7.2f} {same:>21}")
    for name, acc, drop, _ in rows[1:]:
        assert drop <= MAX_DROP[name], f"{name}: int8 top-1 {acc:.2f}% drops {drop:.2f} points from fp32's {base:.2f}%"


def test_compiled_int8_agrees_with_the_qdq_graph(digits):
    """geir.compile(quantize="int8") end to end (fp32 kernels: must_keep_origin_dtype) on the
    whole held-back split. The kernels compute what the graph interpreter computes on the
    folded graph (graph-fold-qdq's requantize at a scale the FIX pipe holds): the logits equal
    to fp32 rounding except where an activation lies on a rounding tie, which the FIX rounds
    away from zero. Against the QDQ graph itself: the same predictions, an activation moving
    one step where it lies near a rounding boundary (docs/quantization.md, Numerics), which
    moves a logit by at most one step of the classifier's input times its largest weight."""
    model, calibration, images, labels = digits
    compiled = geir.compile(model, quantize="int8", calibration_data={"x": calibration},
                            calibration_method="entropy", precision_mode="must_keep_origin_dtype")
    assert "01_quantize" in compiled.stage_names
    qdq, table = geir.quantize(model, {"x": calibration}, method="entropy", progress=False)
    ours, reference = logits(compiled.run, images), logits(lambda feeds: run_module(qdq, feeds), images)
    folded = logits(lambda feeds: run_module(compiled.stages["02_simplify"], feeds), images)
    close = np.isclose(ours, folded, rtol=1e-4, atol=1e-4)
    assert close.mean() > 0.99, f"{(~close).sum()} of {close.size} logits differ from the folded graph's"
    assert np.mean(ours.argmax(axis=1) == reference.argmax(axis=1)) >= 0.995
    weights = {i.name: numpy_helper.to_array(i) for i in onnx.load_from_string(model).graph.initializer}
    step = table.layers["/5/Gemm"].scale * np.abs(weights["5.weight"]).max()
    diff = np.abs(ours - reference)
    print(f"\ncompiled vs QDQ graph: max |diff| {diff.max():.3g}, mean {diff.mean():.3g}, one step {step:.3g}; "
          f"vs the folded graph: {(~close).sum()} of {close.size} logits beyond 1e-4")
    # a few of the classifier's inputs move a step each (and earlier layers' moves reach them)
    assert diff.max() <= 4 * step and diff.mean() <= 0.5 * step


@pytest.mark.parametrize("tolerance", [0.9, 0.999996, 1.0])
def test_accuracy_driven_fallback(digits, tolerance):
    """geir.quantize(tolerance=cos): the layers kept in float meet the tolerance on the
    evaluation samples, are the fewest along the sensitivity order or cheaper by modeled
    latency, are named in the table and stay float in the QDQ graph; the trade-off table lists
    the candidates."""
    from geir.driver.sensitivity import cosine
    from geir.passes.graph.quantize import CalibrationTable

    model, calibration, images, labels = digits
    qdq, table = geir.quantize(model, {"x": calibration[:40]}, method="minmax", progress=False, tolerance=tolerance)
    search = table.search
    assert search.chosen.cosine >= tolerance and search.chosen.float_layers == table.float_layers
    order = sorted(search.sensitivity, key=lambda n: (search.sensitivity[n], n))
    fewest = min(len(c.float_layers) for c in search.candidates if c.cosine >= tolerance)
    assert table.float_layers == tuple(order[:len(table.float_layers)]) or any(
        "cost" in c.strategy and c is search.chosen for c in search.candidates)
    if "cost" not in search.chosen.strategy:
        assert len(table.float_layers) == fewest
    if tolerance == 1.0:  # only every layer in float reaches 1 exactly
        assert sorted(table.float_layers) == sorted(search.sensitivity)
    if tolerance == 0.9:
        assert table.float_layers == ()
    from geir.ir.locations import loc_names
    layers = [op for op in qdq.walk() if op.has_trait(Contraction)]
    in_float = {n for op in layers if not isinstance(op.operands[0].owner, g.DequantizeOp) for n in loc_names(op.location)}
    assert set(table.float_layers) <= in_float and len(layers) == 3
    assert not (set(search.sensitivity) - set(table.float_layers)) & in_float
    text = search.format()
    assert "int8 fallback search: output cosine >=" in text and "*" in text
    assert CalibrationTable.from_json(table.to_json()).float_layers == table.float_layers
    # the chosen set's cosine is what the QDQ graph computes on the evaluation samples
    float_module = geir.compile(model, opt_level=0, lower=False).module
    evals = [{"x": calibration[i:i + BATCH]} for i in range(0, 40, BATCH)]
    ours = [o for f in evals for o in run_module(qdq, f).values()]
    ref = [o for f in evals for o in run_module(float_module, f).values()]
    assert abs(cosine(ours, ref) - search.chosen.cosine) < 1e-6


def test_tolerance_is_a_cosine(digits):
    from geir.driver.calibration import CalibrationError

    model, calibration, _, _ = digits
    with pytest.raises(CalibrationError, match=r"tolerance 1.5: the outputs' cosine to the float model, in \(0, 1\]"):
        geir.quantize(model, {"x": calibration[:20]}, progress=False, tolerance=1.5)
