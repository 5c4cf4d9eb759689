"""End to end, graph.rms_norm: ONNX RMSNormalization (opset 23) and the decomposed RMSNorms
the PyTorch exporters write compile at O0-O3 and match onnxruntime; from O2 the decomposed
form is one graph.rms_norm fused with the residual Add before it, lowered as a row kernel
(never the reference fallback), also at LLaMA's sizes (rows of 4096 and 8192, 2048 tokens).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context

import geir
from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.frontend.onnx import import_model
from geir.lowering.graph_to_ascend import fallback_ops
from geir.passes.graph.recognize_rms_norm import RecognizeRmsNorm
from geir.runtime.interpreter import run_module
from geir.testing.suite import assert_close, ort_run

EPS = 1e-6
FORMS = ("onnx", "div", "rsqrt_div", "reciprocal")
"""onnx: RMSNormalization; div: x / Sqrt(mean(x^2) + eps); rsqrt_div: x * Div(1, Sqrt(...)),
then weight * n (LLaMA through the TorchScript exporter, opset 17); reciprocal:
Reciprocal(Sqrt(...)) * x, x squared as Mul(x, x) (the dynamo exporter)."""


def rms_block(form: str, batch: int, seq: int, hidden: int, seed: int = 0) -> onnx.ModelProto:
    """y = RMSNorm(x + r) * weight over the last axis, in one of FORMS."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32), "weight")]

    def const(name, value, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.array(value, dtype), name))
        return name

    nodes = [helper.make_node("Add", ["x", "r"], ["h"], name="residual")]
    node = lambda op, ins, out, **kw: nodes.append(helper.make_node(op, ins, [out], name=out, **kw))  # noqa: E731
    opset = {"onnx": 23, "div": 18, "rsqrt_div": 17, "reciprocal": 23}[form]
    if form == "onnx":
        node("RMSNormalization", ["h", "weight"], "y", epsilon=EPS)
    else:
        if form == "reciprocal":
            node("Mul", ["h", "h"], "sq")
        else:
            node("Pow", ["h", const("two", 2.0)], "sq")
        if opset >= 18:
            node("ReduceMean", ["sq", const("axes", [-1], np.int64)], "ms", keepdims=1)
        else:
            node("ReduceMean", ["sq"], "ms", axes=[-1], keepdims=1)
        node("Add", ["ms", const("eps", EPS)], "ms_eps")
        node("Sqrt", ["ms_eps"], "rms")
        if form == "div":
            node("Div", ["h", "rms"], "n")
            node("Mul", ["n", "weight"], "y")
        elif form == "rsqrt_div":
            node("Div", [const("one", 1.0), "rms"], "inv")
            node("Mul", ["h", "inv"], "n")
            node("Mul", ["weight", "n"], "y")
        else:
            node("Reciprocal", ["rms"], "inv")
            node("Mul", ["inv", "h"], "n")
            node("Mul", ["n", "weight"], "y")
    shape = [batch, seq, hidden]
    graph = helper.make_graph(
        nodes, f"rms_{form}",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("x", "r")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def feeds_for(batch: int, seq: int, hidden: int, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {n: (s * rng.standard_normal((batch, seq, hidden))).astype(np.float32) for n, s in (("x", 2.0), ("r", 0.5))}


@pytest.mark.parametrize("level", (0, 1, 2, 3))
@pytest.mark.parametrize("form", FORMS)
def test_compiles_at_every_level_and_matches_onnxruntime(form, level):
    model = rms_block(form, 2, 16, 256)
    feeds = feeds_for(2, 16, 256)
    cm = geir.compile(model, opt_level=level, precision_mode="must_keep_origin_dtype")
    assert not fallback_ops(cm.module)
    assert_close(cm.run(feeds)["y"], ort_run(model, feeds)[0], f"{form} O{level}")


@pytest.mark.parametrize("form", FORMS)
def test_one_rms_norm_fused_with_the_residual_add(form):
    """From O2 every form is one graph.rms_norm, located at all its nodes, in one vector
    fusion with the residual Add; the lowering makes it one row kernel."""
    cm = geir.compile(rms_block(form, 2, 16, 256), opt_level=2, precision_mode="must_keep_origin_dtype")
    fused = next(m for name, m in cm.stages.items() if name.endswith("_fuse"))
    (norm,) = [op for op in fused.walk() if isinstance(op, g.RmsNormOp)]
    fusion = norm.parent_op()
    assert isinstance(fusion, g.FusionOp) and fusion.attributes[attr_names.PATTERN].data == "layernorm"
    assert [type(op) for op in fusion.inner_ops() if not isinstance(op, g.ConstantOp)] == [g.AddOp, g.RmsNormOp]
    nodes = {n.name for n in rms_block(form, 2, 16, 256).graph.node}
    from geir.ir.locations import loc_names

    assert set(loc_names(fusion.location)) == nodes
    kernels = [k for k in cm.module.ops if isinstance(k, a.KernelOp)]
    assert len(kernels) == 1 and kernels[0].attributes[attr_names.TEMPLATE].data == "row"


@pytest.mark.parametrize("form", FORMS[1:])
def test_recognition_keeps_the_interpreters_outputs(form):
    module = import_model(rms_block(form, 2, 16, 256))
    feeds = feeds_for(2, 16, 256)
    before = run_module(module, feeds)
    RecognizeRmsNorm().apply(Context(), module)
    module.verify()
    assert sum(isinstance(op, g.RmsNormOp) for op in module.walk()) == 1
    assert_close(run_module(module, feeds)["y"], before["y"], form)


@pytest.mark.parametrize("hidden,run", [(4096, True), (8192, False)])
def test_llama_sizes_are_row_kernels(hidden, run):
    """2048 tokens of LLaMA-7B / -70B hidden states: the fused residual Add + RMSNorm is one
    row kernel at O3 (whole rows in ub), not the fallback; at 4096 it runs and matches."""
    model = rms_block("rsqrt_div", 1, 2048, hidden)
    cm = geir.compile(model, opt_level=3, precision_mode="must_keep_origin_dtype")
    assert not fallback_ops(cm.module)
    kernels = [k for k in cm.module.ops if isinstance(k, a.KernelOp)]
    assert [k.attributes[attr_names.TEMPLATE].data for k in kernels] == ["row"]
    if run:
        feeds = feeds_for(1, 2048, hidden)
        assert_close(cm.run(feeds)["y"], ort_run(model, feeds)[0], f"hidden {hidden}")
