"""graph-fuse keeps the numerics of the whole model suite, hides no requested value, keeps
every original node name, is idempotent, and every lit case keeps its numerics.

Each suite model is imported and run unfused once (cached); every pipeline - graph-fuse on
the raw import and, when graph-simplify is registered, graph-simplify then graph-fuse - runs on
a clone and must give the unfused outputs within the suite's tolerance.
"""

from __future__ import annotations

import os

import onnx
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr

from geir.dialects import graph as g
from geir.ir.locations import loc_names
from geir.ir.text import print_module
from geir.frontend.onnx import import_model
from geir.passes.graph.fuse import FusePass
from geir.passes.graph.recognize_layer_norm import RecognizeLayerNorm
from geir.passes.graph.recognize_rms_norm import RecognizeRmsNorm
from geir.passes.graph.recognize_rotary import RecognizeRotaryPass
from geir.passes.graph.recognize_attention import RecognizeAttention
from geir.passes.graph.transpose_into_attention import TransposeIntoAttentionPass
from geir.driver.pipelines import RECOGNIZERS
from geir.driver.registry import get_all_passes
from geir.runtime.interpreter import random_inputs, run_module
from geir.testing.suite import LIGHT_MODELS, assert_close, assert_pass_keeps_numerics, lit_chunks, reference_run, backend_cases, ort_run
from geir.dialects import attr_names

CTX = Context()
PASSES = get_all_passes()
FUSE = (*RECOGNIZERS, "graph-fuse")  # the pipeline's fuse stage
PIPELINES = [
    pytest.param(FUSE, id="fuse"),
    pytest.param(("graph-simplify", *FUSE), id="simplify+fuse"),
]


def run_pipeline(module: ModuleOp, pipeline: tuple[str, ...]) -> ModuleOp:
    out = module.clone()
    for name in pipeline:
        PASSES[name]()().apply(CTX, out)
    out.verify()
    return out


def fusions(module: ModuleOp) -> list[g.FusionOp]:
    return [op for op in module.walk() if isinstance(op, g.FusionOp)]


def node_names(module: ModuleOp) -> set[str]:
    return {n for op in module.walk() if not isinstance(op, g.ConstantOp) for n in loc_names(op.location)}


def check_model(key: str, pipeline: tuple[str, ...]) -> ModuleOp:
    module, feeds, expected = reference_run(key)
    out = run_pipeline(module, pipeline)
    got = run_module(out, feeds)
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        assert_close(got[name], value, f"{key} ({','.join(pipeline)}) {name}")
    return out


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_numerics(name, pipeline):
    out = check_model(name, pipeline)
    assert fusions(out), f"{name}: nothing fused"
    for f in fusions(out):
        ops = [op for op in f.inner_ops() if not isinstance(op, g.ConstantOp)]
        assert len(ops) >= 2 or len(loc_names(f.location)) >= 2, f"{name}: a fusion of one node"


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("layers", [1, 2])
def test_transformer_numerics(layers, pipeline):
    out = check_model(f"transformer{layers}", pipeline)
    patterns = [f.attributes["graph.pattern"].data for f in fusions(out)]
    # graph-recognize-attention (one of RECOGNIZERS) makes each layer's attention one op once
    # graph-simplify has folded TorchScript's shape arithmetic and scales; the `attention`
    # pattern fuses it with the head split and merge around it (one kernel), or fuses the
    # decomposed attentions it does not recognise
    attentions = [op for op in out.walk() if isinstance(op, g.AttentionOp)]
    simplified = "graph-simplify" in pipeline
    assert len(attentions) == (layers if simplified else 0)
    assert patterns.count("attention") == layers
    for op in attentions:
        fusion = op.parent_op()
        assert isinstance(fusion, g.FusionOp) and fusion.attributes["graph.pattern"].data == "attention"
        inner = [x for x in fusion.inner_ops() if not isinstance(x, g.ConstantOp)]
        assert any(isinstance(x, g.TransposeOp) for x in inner[inner.index(op) + 1:]), "the head merge"
    # each Add + LayerNorm: a kernel of its own, or the epilogue of the matmul before it
    assert patterns.count("layernorm") + patterns.count("norm-epilogue") == 2 * layers
    layer_norms = [op for op in out.walk() if isinstance(op, g.LayerNormOp)]
    assert len(layer_norms) == 2 * layers and all(isinstance(op.parent_op(), g.FusionOp) for op in layer_norms)


def _importable_cases():
    from test_onnx_suite import LEFT_OUT  # cases geir rejects on purpose

    return [c.name for c in backend_cases() if c.name not in LEFT_OUT]


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("case", _importable_cases())
def test_backend_case_numerics(case, pipeline):
    check_model(case, pipeline)


@pytest.mark.parametrize("key", [*LIGHT_MODELS, "transformer2"])
def test_every_node_keeps_its_name(key):
    """A fused location lists every node it replaces: no model node disappears from the IR."""
    module = reference_run(key)[0]
    out = run_pipeline(module, FUSE)
    assert node_names(module) <= node_names(out)


@pytest.mark.parametrize("key", ["light_resnet50", "light_squeezenet", "transformer2"])
def test_idempotent(key):
    once = run_pipeline(reference_run(key)[0], FUSE)
    twice = run_pipeline(once, FUSE)
    assert print_module(once, elide=True) == print_module(twice, elide=True)


# ---------------------------------------------------------------------------
# Barriers: what is asked for is never hidden inside a kernel.
# ---------------------------------------------------------------------------


def _with_outputs(model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for name in names:
        model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    return model


def test_requested_intermediates_survive_fusion():
    """onnxruntime once fused LayerNorm/Gelu even when an intermediate was a graph output and
    lost it. Here intermediates requested as outputs stay results of the fused kernels: the
    first LayerNorm is fused but not replaced, the GELU keeps its erf."""
    from geir.testing.transformer import transformer_onnx

    wanted = ["/0/ln1/ReduceMean_output_0", "/0/ff/ff.1/Erf_output_0", "/0/attn/Softmax_output_0"]
    model = _with_outputs(transformer_onnx(1), wanted)
    module = import_model(model)
    feeds = random_inputs(module, seed=4)
    expected = run_module(module, feeds)
    out = run_pipeline(module, FUSE)
    got = run_module(out, feeds)
    for name in ["y", *wanted]:
        assert_close(got[name], expected[name], name)
    for name, value in zip(["y", *wanted], ort_run(model, feeds)):
        assert_close(got[name], value, f"{name} against onnxruntime")
    # The second LayerNorm is still recognised; the first one, whose mean is an output, is not.
    assert sum(isinstance(op, g.LayerNormOp) for op in out.walk()) == 1
    ret = next(op for op in out.walk() if op.name == "func.return")
    assert all(isinstance(v.owner, g.FusionOp) for v in ret.operands[1:]), "intermediates come from fused kernels"


def test_keep_tap_is_yielded():
    """A value tapped with graph.keep is still produced by the kernel that fuses its op."""
    module = reference_run("transformer1")[0].clone()
    erf = next(op for op in module.walk() if isinstance(op, g.ErfOp))
    erf.attributes[attr_names.KEEP] = UnitAttr()
    FusePass().apply(CTX, module)
    module.verify()
    erf = next(op for op in module.walk() if isinstance(op, g.ErfOp))
    fusion = erf.parent_op()
    assert isinstance(fusion, g.FusionOp)
    assert erf.output in fusion.yield_op().values


def test_unknown_pattern_is_an_error():
    with pytest.raises(ValueError, match="unknown pattern"):
        FusePass(disable=("attention", "convolution"))


# ---------------------------------------------------------------------------
# Every lit case keeps its numerics under graph-fuse.
# ---------------------------------------------------------------------------

LIT_DIR = os.path.join(os.path.dirname(__file__), "..", "passes", "graph")


@pytest.mark.parametrize("chunk", [pytest.param(c, id=i) for i, c in lit_chunks(LIT_DIR, "fuse")])
def test_lit_case_keeps_numerics(chunk):
    assert_pass_keeps_numerics(chunk, FusePass())


# Each recogniser's lit cases (the prefixes spelled out: test_simplify.py finds them here).
RECOGNISER_CASES = [
    *(pytest.param(RecognizeLayerNorm, c, id=i) for i, c in lit_chunks(LIT_DIR, "recognize-layer-norm")),
    *(pytest.param(RecognizeRmsNorm, c, id=i) for i, c in lit_chunks(LIT_DIR, "recognize-rms-norm")),
    *(pytest.param(RecognizeRotaryPass, c, id=i) for i, c in lit_chunks(LIT_DIR, "recognize-rotary")),
    *(pytest.param(RecognizeAttention, c, id=i) for i, c in lit_chunks(LIT_DIR, "recognize-attention")),
]


@pytest.mark.parametrize("recogniser, chunk", RECOGNISER_CASES)
def test_recognition_keeps_numerics(recogniser, chunk):
    assert_pass_keeps_numerics(chunk, recogniser())


@pytest.mark.parametrize("chunk", [pytest.param(c, id=i) for i, c in lit_chunks(LIT_DIR, "transpose-into-attention")])
def test_moving_transposes_into_attention_keeps_numerics(chunk):
    assert_pass_keeps_numerics(chunk, TransposeIntoAttentionPass())
