"""Precision modes end to end (target/precision.py, passes/graph/assign_precision.py).

Outputs of a model compiled in a mode are judged against the fp32 reference (the backend
cases' shipped outputs, onnxruntime in fp32) by the mode's cosine bar (`Mode.min_cosine`):
0.9999 for the modes that lower the cube alone or follow the mix lists, 0.999 for force_fp16
and the bf16 modes; must_keep_origin_dtype by fp32's tolerances. The bench (bench/precision.py)
runs every light model and transformer block in every mode; these tests run the backend cases
in the fp16 modes, two models and a transformer block.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
from xdsl.dialects import func

import geir
from geir.dialects import make_context
from geir.errors import GeirError
from geir.frontend.onnx import import_model
from geir.ir.text import parse_module
from geir.passes.graph.assign_precision import AssignPrecisionPass
from geir.runtime.interpreter import random_inputs, run_module
from geir.testing.suite import assert_matches, backend_cases, light_model, lit_chunks, ort_run
from test_onnx_suite import LEFT_OUT

CASES = [c for c in backend_cases() if c.name not in LEFT_OUT]


def assert_similar(ours: dict[str, np.ndarray], expected: list[np.ndarray], mode: str, what: str) -> None:
    assert len(ours) == len(expected)
    for (name, a), b in zip(ours.items(), expected):
        assert a.dtype == b.dtype, f"{what}:{name}: {a.dtype} vs {b.dtype}"
        assert_matches(a, b, mode, f"{what}:{name}")


@pytest.mark.parametrize("mode", ["force_fp16", "allow_mix_precision", "allow_fp32_to_fp16", "allow_mix_precision_bf16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_backend_case_in_mode(case, mode):
    cm = geir.compile(case.model_path, precision_mode=mode)
    feeds = {name: value for (name, _, _), value in zip(cm.input_specs(), case.inputs())}
    assert_similar(cm.run(feeds), case.outputs(), mode, case.name)


@pytest.mark.parametrize("mode", ["force_fp16", "allow_mix_precision", "allow_mix_precision_bf16", "must_keep_origin_dtype"])
def test_light_model_in_mode(mode):
    model = light_model("light_squeezenet")
    cm = geir.compile(model, precision_mode=mode)
    feeds = cm.random_inputs(seed=1)
    assert_similar(cm.run(feeds), ort_run(model, feeds), mode, "light_squeezenet")


@pytest.mark.parametrize("mode", ["force_fp16", "allow_mix_precision", "allow_fp32_to_fp16", "force_fp32",
                                  "allow_mix_precision_bf16", "allow_fp32_to_bf16", "must_keep_origin_dtype"])
def test_transformer_in_mode(mode):
    from geir.testing.transformer import transformer_onnx

    model = transformer_onnx(1)
    cm = geir.compile(model, precision_mode=mode)
    feeds = cm.random_inputs(seed=2)
    assert_similar(cm.run(feeds), ort_run(model, feeds), mode, "transformer x1")


LIT_DIR = os.path.join(os.path.dirname(__file__), "..", "passes", "graph")


@pytest.mark.parametrize("mode", ["force_fp16", "allow_mix_precision", "allow_fp32_to_fp16", "force_fp32"])
@pytest.mark.parametrize("key, chunk", list(lit_chunks(LIT_DIR, "assign-precision")), ids=lambda x: x[:30])
def test_lit_chunk_keeps_numerics_within_the_modes_bar(key, chunk, mode):
    """Every function of the pass's lit files, before and after the pass on the graph
    interpreter: outputs within the mode's cosine bar of the fp32 ones."""
    module = parse_module(chunk, make_context())
    feeds = random_inputs(module, seed=3)
    before = run_module(module, feeds)
    AssignPrecisionPass(mode=mode).apply(make_context(), module)
    module.verify()
    assert_similar(run_module(module, feeds), list(before.values()), mode, key)


def test_force_fp16_halves_the_weights_and_speeds_the_cube():
    """The same model in force_fp16 and in fp32: weights stored in half the bytes, the cube at
    its fp16 rate (4x fp32's) and half the bytes moved: a lower modeled latency."""
    model = light_model("light_squeezenet")
    reports = {}
    for mode in ("force_fp16", "must_keep_origin_dtype"):
        _, reports[mode] = geir.compile(model, precision_mode=mode).profile()
    fp16, fp32 = reports["force_fp16"], reports["must_keep_origin_dtype"]
    # the report says what each kernel computes in
    assert set(fp32["precision"]) == {"f32"} and fp16["precision"]["f16"] > fp16["precision"].get("f32", 0)
    assert all(k["dtypes"]["writes"] == ["f32"] for k in fp32["kernels"])
    assert fp16["memory"]["constant_bytes"] <= 0.51 * fp32["memory"]["constant_bytes"]
    assert fp16["peak_memory_bytes"] < 0.6 * fp32["peak_memory_bytes"]
    assert fp16["latency_us"] < fp32["latency_us"]


def _decisions(module) -> dict[str, str]:
    """Each op's node name and result type after the pass (casts by what they convert)."""
    out = {}
    for op in module.walk():
        if op.results and op.location is not None and not isinstance(op, func.FuncOp):
            key = f"{op.name}@{op.location}:{[str(o.type) for o in op.operands]}"
            out[key] = ",".join(str(r.type) for r in op.results)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_gray_ops_do_not_depend_on_the_order_of_the_ops(seed):
    """The transformer block's ops shuffled into another topological order: the same types
    for every op under allow_mix_precision."""
    from geir.testing.transformer import transformer_onnx

    model = transformer_onnx(1)
    reference = import_model(model)
    shuffled = import_model(model)
    block = next(op for op in shuffled.walk() if isinstance(op, func.FuncOp)).body.block
    ops = list(block.ops)
    rng = random.Random(seed)
    placed: set = set()
    order = []
    pending = ops[:-1]  # the return stays last
    while pending:
        ready = [op for op in pending if all(v.owner in placed or v.owner not in ops for v in op.operands)]
        pick = rng.choice(ready)
        order.append(pick)
        placed.add(pick)
        pending.remove(pick)
    assert order != ops[:-1] or seed == 0
    for op in order:
        op.detach()
        block.insert_op_before(op, ops[-1])
    shuffled.verify()
    ctx = make_context()
    for module in (reference, shuffled):
        AssignPrecisionPass(mode="allow_mix_precision").apply(ctx, module)
        module.verify()
    assert _decisions(reference) == _decisions(shuffled)


@pytest.mark.parametrize("mode", ["force_fp16", "allow_mix_precision", "allow_fp32_to_fp16", "force_fp32",
                                  "allow_mix_precision_bf16", "allow_fp32_to_bf16"])
def test_the_pass_keeps_the_graph_interpreters_outputs(mode):
    """graph-assign-precision alone, on the graph interpreter: outputs within the mode's bar of
    the fp32 graph's (the lowering's own error is not in this figure)."""
    from geir.testing.transformer import transformer_onnx

    module = import_model(transformer_onnx(1))
    feeds = random_inputs(module, seed=3)
    before = run_module(module, feeds)
    AssignPrecisionPass(mode=mode).apply(make_context(), module)
    module.verify()
    assert_similar(run_module(module, feeds), list(before.values()), mode, "transformer x1 graph")


@pytest.mark.parametrize("kwargs, message", [
    ({"precision_mode": "fp8"}, "unknown precision mode 'fp8'"),
    ({"keep_dtype": ["no_such_node"]}, "no op of the graph is named by 'no_such_node'"),
    ({"keep_dtype": ["OpType::Frobnicate"]}, "'Frobnicate' is not an op type geir knows"),
])
def test_bad_precision_options_are_clear_errors(kwargs, message):
    with pytest.raises(GeirError, match=message):
        geir.compile(light_model("light_squeezenet"), opt_level=1, lower=False, **kwargs)


def test_bad_mix_lists_are_clear_errors(tmp_path):
    both = tmp_path / "both.json"
    both.write_text('{"white-list": {"to-add": ["Relu"]}, "black-list": {"to-add": ["Relu"]}}')
    broken = tmp_path / "broken.json"
    broken.write_text('{"black-list": ')
    with pytest.raises(GeirError, match="'Relu' is added to both the white-list and the black-list"):
        geir.compile(light_model("light_squeezenet"), precision_mode="allow_mix_precision", modify_mixlist=both)
    with pytest.raises(GeirError, match="not valid JSON"):
        geir.compile(light_model("light_squeezenet"), precision_mode="allow_mix_precision", modify_mixlist=broken)
    good = tmp_path / "good.json"
    good.write_text('{"black-list": {"to-add": ["Relu"]}}')
    with pytest.raises(GeirError, match="applies to the allow_mix_precision modes, not 'force_fp16'"):
        geir.compile(light_model("light_squeezenet"), modify_mixlist=str(good))


def test_keep_dtype_file_and_mixlist_change_the_compiled_graph(tmp_path):
    keep = tmp_path / "keep.cfg"
    keep.write_text("# GE's keep_dtype file: a node name or OpType::X per line\nOpType::Conv\n")
    cm = geir.compile(light_model("light_squeezenet"), opt_level=1, lower=False, keep_dtype=str(keep))
    convs = [op for op in cm.module.walk() if op.name == "graph.conv"]
    assert convs and all(str(op.results[0].type).endswith("xf32>") for op in convs)
    relus = [op for op in cm.module.walk() if op.name == "graph.relu"]
    assert relus and all(str(op.results[0].type).endswith("xf16>") for op in relus)
