"""A fixed sample of onnx's node conformance cases must keep passing, at the graph level and O3.

The sample (onnx_conformance_sample.txt beside this file) is about one in 5 of the cases
that passed when it was written (by a hash of the name) plus the first passing case of
each op type, so coverage of any op
cannot regress unnoticed; bench/onnx_coverage.py runs all the cases and rewrites it
(`--write-sample`, with `--freeze-inputs`: a graph input geir needs constant - a reduction's
axes, Resize's scales, an If condition - is frozen to the case's value, as a user would with
geir.compile(freeze=...)). A case the installed onnx no longer ships fails too: the sample is
rewritten when onnx is.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import geir
from geir.errors import OnnxImportError
from geir.frontend.onnx import import_model
from geir.testing.onnx_conformance import LEVELS, compare, conformance_cases, run_level

SAMPLE_FILE = Path(__file__).with_name("onnx_conformance_sample.txt")
SAMPLE = [line.strip() for line in SAMPLE_FILE.read_text().splitlines() if line.strip() and not line.startswith("#")]


def _case(name: str):
    cases = {c.name: c for c in conformance_cases()}
    assert name in cases, f"{name} is not a node conformance case of the installed onnx: rewrite the sample"
    return cases[name]


def _opset(case) -> int:
    return next(i.version for i in case.model.opset_import if i.domain in ("", "ai.onnx"))


def test_sample_spans_the_ops_and_opsets():
    """The file is the sample the bench writes: well over a hundred cases, no duplicates,
    over a hundred op types, and cases of the opsets 24 to 28 geir imports since onnx 1.23."""
    from geir.testing.onnx_conformance import op_of

    assert len(SAMPLE) == len(set(SAMPLE)) > 150
    by_name = {c.name: c for c in conformance_cases()}
    assert len({op_of(_case(n), by_name) for n in SAMPLE}) > 100
    assert sum(_opset(_case(n)) > 23 for n in SAMPLE) > 20


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", SAMPLE)
def test_sample_case_passes(name, level):
    status, detail = run_level(level, _case(name), timeout=60, freeze_inputs=True)
    assert status == "pass", f"{name} at {level}: {status}: {detail}"


@pytest.mark.parametrize("name", ["test_reshape_allowzero_reordered", "test_shape_start_greater_than_end",
                                  "test_split_zero_size_splits_opset18"])
def test_zero_size_results_need_no_kernel(name):
    """A result with a zero-size dim has nothing to compute: the lowering gives it a buffer and
    launches nothing (these crashed in the data template, which viewed 0 elements as 1)."""
    status, detail = run_level("O3", _case(name), timeout=60, freeze_inputs=True)
    assert status == "pass", f"{name}: {status}: {detail}"


ATTENTION_CASES = [
    "test_attention_3d_gqa_causal", "test_attention_4d_attn_mask_bool_4d", "test_attention_4d_gqa_with_past_and_present",
    "test_attention_4d_diff_heads_with_past_and_present_mask4d", "test_attention_4d_softcap", "test_attention_4d_with_qk_matmul_bias",
    "test_attention_3d_with_past_and_present_qk_matmul_softmax", "test_attention_23_boolmask_fullymasked_row_nan_robustness",
    "test_attention_24_qk_matmul_output_mode3_softmax_precision", "test_attention_4d_causal_with_past_and_present",
    "test_attention_4d_diff_heads_mask4d_padded_kv", "test_attention_4d_gqa_causal_nonpad_decode",
    "test_attention_4d_causal_nonpad_negative_offset_structural_empty", "test_attention_local_window",
    "test_attention_bidirectional_window", "test_attention_local_window_ext_cache_rank3_head_mask",
]


@pytest.mark.parametrize("name", ATTENTION_CASES)
def test_attention_op_cases_pass_at_o3(name):
    """ONNX Attention (opset 23 to 25) imported as its function body's ops: 3-D and 4-D, GQA,
    boolean and float masks, the past, softcap, the qk_matmul_output modes, softmax_precision, a
    fully masked row, a static cache's valid lengths (nonpad_kv_seqlen: padding and the causal
    frontier per batch, a negative offset masking whole rows) and sliding windows."""
    status, detail = run_level("O3", _case(name), timeout=60)
    assert status == "pass", f"{name}: {status}: {detail}"


@pytest.mark.parametrize("level", LEVELS)
def test_an_f16_attention_computes_its_softmax_in_f16(level):
    """Attention's softmax_precision defaults to the inputs' type: in f16 each softmax step
    rounds, as geir's f16 vector kernel and graph reference do, and at O3
    (must_keep_origin_dtype) the attention is not fused into graph.attention, whose softmax is
    f32. A softmax computed in f32 and rounded once is 2 ulp off the shipped output (rtol 1e-3)."""
    status, detail = run_level(level, _case("test_attention_4d_causal_fp16"), timeout=60)
    assert status == "pass", f"{level}: {status}: {detail}"


def test_comparison_widens_bfloat16_to_two_ulp_as_onnx_runner_does():
    """onnx's backend test runner compares a bfloat16 output at rtol max(rtol, 2**-6), two
    ulp; float16 keeps the case's rtol. Below: 1.0 and its neighbours two and three ulp up."""
    import ml_dtypes

    bf16, f16 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)
    ulps = lambda dtype, n: (np.array([0x3F80 if dtype == bf16 else 0x3C00], np.uint16) + n).view(dtype)
    one = lambda dtype: np.ones(1, dtype)
    assert compare([ulps(bf16, 2)], [one(bf16)], 1e-3, 1e-7) is None
    assert compare([ulps(bf16, 3)], [one(bf16)], 1e-3, 1e-7) == "output 0: values differ (at most 3 ulp of bfloat16)"
    assert compare([ulps(f16, 2)], [one(f16)], 1e-3, 1e-7) == "output 0: values differ (at most 2 ulp of float16)"
    assert compare([ulps(f16, 1)], [one(f16)], 1e-3, 1e-7) is None


def _attention_model(attrs: dict, nonpad: bool, past: bool):
    from onnx import TensorProto, helper

    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info(n, f, [1, 2, 3, 4]) for n in ("Q", "K", "V")]
    names = ["Q", "K", "V", "", "past_k" if past else "", "past_v" if past else "", "lengths" if nonpad else ""]
    if past:
        inputs += [helper.make_tensor_value_info(n, f, [1, 2, 5, 4]) for n in ("past_k", "past_v")]
    if nonpad:
        inputs.append(helper.make_tensor_value_info("lengths", TensorProto.INT64, [1]))
    node = helper.make_node("Attention", [n for n in names], ["Y"], name="attn", **attrs)
    while node.input and not node.input[-1]:
        node.input.pop()
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("Y", f, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])


@pytest.mark.parametrize("attrs, nonpad, past, message", [
    ({"left_window_size": -2}, False, False, "a window size must be -1 or >= 0, got left -2, right -1"),
    ({}, True, True, "nonpad_kv_seqlen cannot be combined with past_key / past_value"),
])
def test_attention_inputs_the_spec_forbids_are_clear_errors(attrs, nonpad, past, message):
    with pytest.raises(OnnxImportError) as info:
        import_model(_attention_model(attrs, nonpad, past), check_shapes=False)
    assert str(info.value) == f"node 'attn' (Attention, opset 25): {message}"


def test_unsupported_op_case_is_one_clear_error():
    """An op geir does not convert (Det): one line naming the node, op type and opset, at
    import and from geir.compile, and `rejected` in the bench."""
    case = _case("test_det_2d")
    message = f"unsupported ONNX operator: node 'y' (Det, opset {_opset(case)})"
    with pytest.raises(OnnxImportError) as info:
        import_model(case.model)
    assert str(info.value) == message
    with pytest.raises(OnnxImportError) as info:
        geir.compile(case.model, opt_level=3)
    assert str(info.value) == message
    assert run_level("O3", case) == ("rejected", message)


def test_data_dependent_shape_of_a_runtime_input_is_one_clear_error():
    """NonZero of a run-time input (its result shape depends on the values): one line naming
    the node, op type, opset and the way out; frozen to the case's value it folds and passes."""
    case = _case("test_nonzero_example")
    message = ("node 'result' (NonZero, opset 13): the input (NonZero's result shape depends on its values) must "
               "be a constant; it is graph input 'condition': freeze it to a value")
    with pytest.raises(OnnxImportError) as info:
        geir.compile(case.model, opt_level=3)
    assert str(info.value).startswith(message)
    status, detail = run_level("O3", case)
    assert status == "rejected" and detail.startswith(message)
    assert run_level("O3", case, freeze_inputs=True) == ("pass", "")


def test_freeze_makes_a_graph_input_a_constant():
    """A reduction's axes given as a graph input: one error naming the way out, and with
    geir.compile(freeze=...) the case passes at O3; the caller's model is left as it was."""

    from geir.testing.onnx_conformance import compare, feeds_of

    case = _case("test_reduce_sum_keepdims_example")
    with pytest.raises(OnnxImportError) as info:
        geir.compile(case.model, opt_level=3)
    assert str(info.value) == (
        "node 'reduced' (ReduceSum, opset 13): axes must be a constant; it is graph input 'axes': freeze it to a "
        "value (geir.compile(..., freeze={'axes': ...}), geir-compile --freeze axes=...)")
    feeds = feeds_of(case.model, case.data_sets[0][0])
    axes = feeds.pop("axes")
    compiled = geir.compile(case.model, opt_level=3, precision_mode="must_keep_origin_dtype", freeze={"axes": axes})
    assert [name for name, _, _ in compiled.input_specs()] == ["data"]
    assert compare(list(compiled.run(feeds).values()), case.data_sets[0][1], case.rtol, case.atol) is None
    assert [i.name for i in case.model.graph.input] == ["data", "axes"]
    assert run_level("O3", case, freeze_inputs=True) == ("pass", "")
    assert run_level("O3", case)[0] == "rejected"
    # a scalar fills the input of shape [1]; the element type is the input's (int64)
    module = import_model(case.model, freeze={"axes": np.float32(1)})
    assert "axes = array<i64: 1>" in str(module)


@pytest.mark.parametrize("freeze,message", [
    ({"nope": [1]}, r"^freeze: 'nope' is not a graph input; the inputs are \['axes', 'data'\]$"),
    ({"axes": [[0, 1], [1, 2]]}, r"^freeze: graph input 'axes' has shape \[1\]; the value given has shape \[2, 2\]$"),
])
def test_freeze_errors_are_clear(freeze, message):
    with pytest.raises(OnnxImportError, match=message):
        import_model(_case("test_reduce_sum_keepdims_example").model, freeze=freeze)
