"""ONNX RNN / GRU / LSTM unrolled at import (frontend/onnx_rnn.py), against onnxruntime (onnx's
reference evaluator for the batchwise layout, which onnxruntime's CPU kernels lack) at the
graph level and O3: each direction, both layouts, biases, initial states, peepholes,
GRU's linear_before_reset, clip, non-default activations; one layer at a deployment size."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import geir
from geir.errors import OnnxImportError
from geir.frontend.onnx import import_model
from geir.runtime.interpreter import run_module

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def _model(kind, seq, batch, inp, hidden, *, direction="forward", layout=0, bias=True, init=True,
           peepholes=False, seed=0, **attrs):
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    gates = GATES[kind]
    weights = {"W": rng.standard_normal((dirs, gates * hidden, inp)) / np.sqrt(inp),
               "R": rng.standard_normal((dirs, gates * hidden, hidden)) / np.sqrt(hidden)}
    names = ["X", "W", "R", "B" if bias else "", "", "h0" if init else ""]
    if bias:
        weights["B"] = rng.standard_normal((dirs, 2 * gates * hidden)) * 0.1
    if kind == "LSTM":
        names += ["c0" if init else "", "P" if peepholes else ""]
        if peepholes:
            weights["P"] = rng.standard_normal((dirs, 3 * hidden)) * 0.1
    while names and not names[-1]:
        names.pop()
    state = [batch, dirs, hidden] if layout else [dirs, batch, hidden]
    vi = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)  # noqa: E731
    inputs = [vi("X", [batch, seq, inp] if layout else [seq, batch, inp])]
    inputs += [vi(n, state) for n in ("h0", "c0") if n in names]
    outs = ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else [])
    node = helper.make_node(kind, names, outs, name="rnn", hidden_size=hidden, direction=direction,
                            layout=layout, **attrs)
    graph = helper.make_graph([node], "g", inputs, [vi(o, None) for o in outs],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    feeds = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
             for i in inputs}
    return model, feeds


def _check(model, feeds, levels=("graph", 3), tol=2e-5):
    batchwise = any(a.name == "layout" and a.i for a in model.graph.node[0].attribute)
    if batchwise:  # onnxruntime's CPU kernels take layout 0 only: onnx's reference evaluator
        from onnx.reference import ReferenceEvaluator

        want = ReferenceEvaluator(model).run(None, feeds)
    else:
        want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for level in levels:
        if level == "graph":
            got = list(run_module(import_model(model), feeds).values())
        else:
            cm = geir.compile(model, opt_level=level, precision_mode="must_keep_origin_dtype")
            got = list(cm.run(feeds).values())
        for g_, w_ in zip(got, want):
            np.testing.assert_allclose(g_, w_, rtol=tol, atol=tol, err_msg=f"at {level}")


@pytest.mark.parametrize("kind, kwargs", [
    ("RNN", dict(direction="bidirectional")),
    ("RNN", dict(direction="reverse", layout=1)),
    ("RNN", dict(direction="forward", activations=["Relu"], clip=2.0)),
    ("GRU", dict(direction="forward", linear_before_reset=0)),
    ("GRU", dict(direction="bidirectional", linear_before_reset=1, layout=1)),
    ("GRU", dict(direction="reverse", bias=False, init=False)),
    ("GRU", dict(direction="forward", linear_before_reset=1, clip=0.5)),
    ("LSTM", dict(direction="forward", peepholes=True)),
    ("LSTM", dict(direction="bidirectional", layout=1, peepholes=True)),
    ("LSTM", dict(direction="bidirectional", peepholes=True, clip=0.5)),
    ("LSTM", dict(direction="reverse", activations=["HardSigmoid", "Tanh", "Softsign"],
                  activation_alpha=[0.3], activation_beta=[0.4])),
])
def test_recurrent_layer_matches_onnxruntime(kind, kwargs):
    model, feeds = _model(kind, seq=5, batch=3, inp=4, hidden=6, **kwargs)
    _check(model, feeds)


def test_lstm_at_deployment_size():
    """A 16-step LSTM at batch 8, input and hidden 512 (the input projection of all steps is one
    cube matmul; each step one recurrent matmul) at O3."""
    model, feeds = _model("LSTM", seq=16, batch=8, inp=512, hidden=512)
    _check(model, feeds, levels=(3,), tol=1e-4)


@pytest.mark.parametrize("kwargs, message", [
    (dict(input_forget=1), "input_forget=1 (coupled input and forget gates) is not supported"),
    (dict(activations=["Sigmoid", "Gelu", "Tanh"]), "activation 'Gelu' is not supported"),
])
def test_what_geir_does_not_take_is_one_error(kwargs, message):
    model, _ = _model("LSTM", seq=2, batch=1, inp=2, hidden=2, **kwargs)
    with pytest.raises(OnnxImportError) as info:
        import_model(model)
    assert str(info.value) == f"node 'rnn' (LSTM, opset 14): {message}"
