"""ONNX control flow resolved at import (frontend/onnx_control_flow.py): If on a condition
known at compile time, Loop and Scan with static trip counts unrolled; compiled at O3 and
compared with onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import geir
from geir.testing.onnx_conformance import conformance_cases, run_level


@pytest.mark.parametrize("name", ["test_if", "test_loop11", "test_scan9_sum", "test_scan9_multi_state",
                                  "test_linear_attention_gated_expanded"])
def test_conformance_cases_pass_at_o3(name):
    """onnx's own cases: If and Loop on graph inputs frozen to the case's values, Scan with two
    states, and LinearAttention's function body (a Scan over the sequence)."""
    case = next(c for c in conformance_cases() if c.name == name)
    status, detail = run_level("O3", case, timeout=120, freeze_inputs=True)
    assert status == "pass", f"{name}: {status}: {detail}"


def _rnn_scan(batch: int, hidden: int, steps: int, seed: int = 0) -> onnx.ModelProto:
    """h_t = tanh(x_t W + h_{t-1} U + b) over a [steps, batch, hidden] sequence, as a Scan."""
    rng = np.random.default_rng(seed)
    w, u = (rng.standard_normal((2, hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
    b = (rng.standard_normal(hidden) * 0.1).astype(np.float32)
    vi = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)  # noqa: E731
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x_t", "W"], ["xw"], name="xw"),
         helper.make_node("MatMul", ["h_in", "U"], ["hu"], name="hu"),
         helper.make_node("Add", ["xw", "hu"], ["pre0"], name="add0"),
         helper.make_node("Add", ["pre0", "B"], ["pre"], name="add1"),
         helper.make_node("Tanh", ["pre"], ["h_out"], name="tanh"),
         helper.make_node("Identity", ["h_out"], ["y_t"], name="emit")],
        "cell", [vi("h_in", [batch, hidden]), vi("x_t", [batch, hidden])],
        [vi("h_out", [batch, hidden]), vi("y_t", [batch, hidden])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["h0", "xs"], ["h", "ys"], name="rnn", num_scan_inputs=1, body=body)],
        "rnn", [vi("h0", [batch, hidden]), vi("xs", [steps, batch, hidden])],
        [vi("h", [batch, hidden]), vi("ys", [steps, batch, hidden])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(u, "U"), numpy_helper.from_array(b, "B")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_scan_rnn_at_deployment_size_matches_onnxruntime():
    """A 32-step recurrent cell at batch 8, hidden 768: 32 copies of the cell, each two matmuls
    on the cube, in fp32 within 1e-4 of onnxruntime."""
    model = _rnn_scan(batch=8, hidden=768, steps=32)
    rng = np.random.default_rng(1)
    feeds = {"h0": np.zeros((8, 768), np.float32), "xs": rng.standard_normal((32, 8, 768)).astype(np.float32)}
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    cm = geir.compile(model, opt_level=3, precision_mode="must_keep_origin_dtype")
    got = list(cm.run(feeds).values())
    for g_, w_ in zip(got, want):
        np.testing.assert_allclose(g_, w_, rtol=1e-4, atol=1e-4)
