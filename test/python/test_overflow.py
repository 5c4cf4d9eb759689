"""Overflow detection (runtime/overflow.py): each kernel launch whose outputs turned inf / NaN
from in-range inputs, or saturated at the dtype's finite max, in the run, the report and one line.

The models are built here with onnx.helper: a MatMul of x = 300 and w = 300 over K = 1024 is
9.2e7 per element, past f16's 65504 and well inside f32's range."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import geir
from geir.dialects import ascend as a
from geir.runtime.ascend_interpreter import run_ascend_module
from geir.runtime.overflow import BF16_MAX, advice, by_kernel, dtype_name, float_max, in_range, overflow_summary
from geir.runtime.report import format_report

K = 1024
F16_MAX = 65504.0
GE_MODES = {"force_fp16", "allow_fp32_to_fp16", "allow_mix_precision", "allow_mix_precision_bf16",
            "allow_fp32_to_bf16", "must_keep_origin_dtype", "force_fp32"}
ELEM = {np.float16: TensorProto.FLOAT16, np.float32: TensorProto.FLOAT}


def model(nodes, inputs, outputs, weights=()) -> onnx.ModelProto:
    """inputs / outputs: (name, dtype, shape); weights: (name, array)."""
    graph = helper.make_graph(
        nodes, "overflow",
        [helper.make_tensor_value_info(n, ELEM[d], s) for n, d, s in inputs],
        [helper.make_tensor_value_info(n, ELEM[d], s) for n, d, s in outputs],
        [numpy_helper.from_array(a, n) for n, a in weights])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def matmul(dtype, w=None, then_relu=False) -> onnx.ModelProto:
    """y = MatMul(x[16, K], w[K, 16]) (w = 300 unless given), unnamed ("MatMul:y"); then_relu:
    z = Relu(y) after it."""
    w = np.full((K, 16), 300, dtype) if w is None else w
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    out = ("y", dtype, [16, 16])
    if then_relu:
        nodes.append(helper.make_node("Relu", ["y"], ["z"]))
        out = ("z", dtype, [16, 16])
    return model(nodes, [("x", dtype, [16, K])], [out], [("w", w)])


def big(dtype) -> dict[str, np.ndarray]:
    return {"x": np.full((16, K), 300, dtype)}


def launches(module, feeds, **kw) -> list:
    found: list = []
    run_ascend_module(module, feeds, overflow=found, **kw)
    return found


# ---------------------------------------------------------------------------
# The run and the report.
# ---------------------------------------------------------------------------


def test_an_f16_matmul_that_overflows_is_one_kernel_named_in_the_report():
    cm = geir.compile(matmul(np.float16))
    outputs, report = cm.profile(big(np.float16))
    assert np.isinf(outputs["y"]).all()
    assert report["overflow_kernels"] == 1
    (entry,) = report["overflow"]
    assert re.fullmatch(r"k\d+_MatMul_y", entry["kernel"])
    assert entry == {"kernel": entry["kernel"], "nodes": ["MatMul:y"], "dtype": "f16", "overflowed": 256,
                     "saturated": 0, "launches": [0]}
    assert report["overflow_summary"] == (
        f"overflow in f16: kernel {entry['kernel']} (node MatMul:y) produced 256 inf/NaN from finite inputs; "
        "compile with precision_mode=allow_mix_precision_bf16 (bf16 has fp32's range), must_keep_origin_dtype "
        "or force_fp32 to avoid it")
    table = format_report(report)
    assert f"overflow (1 kernel):\n  @{entry['kernel']} (MatMul:y): 256 inf/NaN, 0 saturated, f16" in table


@pytest.mark.parametrize("mode", ["must_keep_origin_dtype", "force_fp32"])
def test_the_same_model_in_f32_does_not_overflow(mode):
    """Kept in fp32, or with the cube reading fp16 and writing fp32 (force_fp32): no overflow."""
    cm = geir.compile(matmul(np.float32), precision_mode=mode)
    outputs, report = cm.profile(big(np.float32))
    assert np.allclose(outputs["y"], 300 * 300 * K)
    assert (report["overflow_kernels"], report["overflow"], report["overflow_summary"]) == (0, [], None)
    assert "overflow" not in format_report(report)


def test_the_f32_model_in_the_default_mode_overflows_and_says_so():
    """force_fp16 (the default) computes the f32 model's matmul in f16: the report names it."""
    _, report = geir.compile(matmul(np.float32)).profile(big(np.float32))
    assert report["overflow_kernels"] == 1
    assert report["overflow_summary"].startswith("overflow in f16: kernel ")
    assert "must_keep_origin_dtype" in report["overflow_summary"]


def test_a_kernel_fed_inf_only_passes_it_on():
    """The MatMul overflows; the Relu after it (its own kernel without fusion) outputs inf too,
    but its input was inf already: only the origin counts."""
    cm = geir.compile(matmul(np.float16, then_relu=True), fusion=False)
    assert sum(isinstance(op, a.LaunchOp) for op in cm.module.walk()) == 2
    found = launches(cm.module, big(np.float16))
    assert [r.nodes for r in found] == [("MatMul:y",)]
    relu = model([helper.make_node("Relu", ["x"], ["y"])], [("x", np.float16, [16, 64])],
                 [("y", np.float16, [16, 64])])
    x = np.ones((16, 64), np.float16)
    x[3, 5] = np.inf
    out = geir.compile(relu).module
    assert launches(out, {"x": x}) == []
    x[3, 5] = F16_MAX  # saturated values are out of range as inputs too
    assert launches(out, {"x": x}) == []


def test_a_weight_with_inf_is_not_an_overflow():
    """Read-only inputs (weights) are checked after the launch, when its outputs are out of range."""
    w = np.ones((K, 16), np.float32)
    w[7, 3] = np.inf
    cm = geir.compile(matmul(np.float32, w=w), precision_mode="must_keep_origin_dtype")
    assert np.isinf(cm.run({"x": np.ones((16, K), np.float32)})["y"]).any()
    assert launches(cm.module, {"x": np.ones((16, K), np.float32)}) == []


def add_const(c: np.ndarray) -> onnx.ModelProto:
    return model([helper.make_node("Add", ["x", "c"], ["y"])], [("x", np.float16, [16, 64])],
                 [("y", np.float16, [16, 64])], [("c", c)])


def test_saturation_at_the_finite_max_is_counted():
    """65472 + 32 is exactly f16's max: saturated, not overflowed; 65472 + 64 rounds to inf."""
    x = {"x": np.full((16, 64), 65472, np.float16)}
    (r,) = launches(geir.compile(add_const(np.full((16, 64), 32, np.float16))).module, x)
    assert (r.nodes, r.dtype, r.overflowed, r.saturated) == (("Add:y",), "f16", 0, 16 * 64)
    line = overflow_summary(by_kernel([r]))
    assert line.startswith(f"saturation in f16: kernel {r.kernel} (node Add:y) produced 1024 values at f16's "
                           "finite max from finite inputs; compile with precision_mode=allow_mix_precision_bf16")
    both = np.where(np.arange(64) % 2 == 1, 64, 32).astype(np.float16) * np.ones((16, 1), np.float16)
    (r,) = launches(geir.compile(add_const(both)).module, x)
    assert (r.overflowed, r.saturated) == (16 * 32, 16 * 32)
    assert overflow_summary(by_kernel([r])).startswith(f"overflow in f16: kernel {r.kernel} (node Add:y) produced "
                                                       "512 inf/NaN and 512 saturated values from finite inputs")


def test_a_cast_from_f32_overflows_in_f16():
    cast = model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT16)], [("x", np.float32, [16, 64])],
                 [("y", np.float16, [16, 64])])
    x = np.ones((16, 64), np.float32)
    x[2, :3] = 1e5
    (r,) = launches(geir.compile(cast).module, {"x": x})
    assert (r.dtype, r.overflowed, r.saturated) == ("f16", 3, 0)


def test_compiled_and_per_op_interpreters_agree():
    module = geir.compile(matmul(np.float16, then_relu=True), fusion=False).module
    feeds = big(np.float16)
    compiled = launches(module, feeds, compiled=True)
    assert compiled and compiled == launches(module, feeds, compiled=False)


def test_no_check_unless_asked():
    module = geir.compile(matmul(np.float16)).module
    assert np.isinf(run_ascend_module(module, big(np.float16))["y"]).all()  # no list: no check, no error


# ---------------------------------------------------------------------------
# The pieces.
# ---------------------------------------------------------------------------


def test_ranges_and_names_of_float_types():
    assert float_max(np.dtype(np.float16)) == F16_MAX
    assert float_max(np.dtype(np.float32)) == float(np.finfo(np.float32).max)
    assert float_max(np.dtype(np.int32)) is None
    assert (dtype_name(np.dtype(np.float16)), dtype_name(np.dtype(np.float32)), dtype_name(np.dtype(np.int32))) == (
        "f16", "f32", "i32")
    x = np.array([1, -F16_MAX + 32, 2], np.float16)
    assert in_range(x, F16_MAX) and in_range(x[:0], F16_MAX)
    for bad in (np.inf, -np.inf, np.nan, F16_MAX, -F16_MAX):
        assert not in_range(np.array([1, bad], np.float16), F16_MAX)


def test_bf16_limits():
    import ml_dtypes  # a dependency (pyproject): bf16 is an element type
    bf16 = np.dtype(ml_dtypes.bfloat16)
    assert float_max(bf16) == BF16_MAX == float(ml_dtypes.finfo(bf16).max)
    assert dtype_name(bf16) == "bf16"
    assert in_range(np.array([1, 3e38], bf16), BF16_MAX)
    assert not in_range(np.array([1, np.inf], bf16), BF16_MAX)


def test_advice_names_only_ge_precision_modes():
    f16 = advice("f16")
    assert "allow_mix_precision_bf16" in f16 and "must_keep_origin_dtype" in f16
    named = set(re.findall(r"[a-z0-9]+(?:_[a-z0-9]+)+", f16)) - {"precision_mode"}
    assert named <= GE_MODES, named - GE_MODES
    for dtype in ("bf16", "f32"):  # fp32's range: no mode helps
        assert not set(re.findall(r"[a-z0-9]+(?:_[a-z0-9]+)+", advice(dtype))) & GE_MODES


def test_one_line_for_many_kernels():
    from geir.runtime.overflow import LaunchOverflow

    rs = [LaunchOverflow("k1_a", 1, ("a",), "f16", 4, 0), LaunchOverflow("k2_b", 2, (), "f32", 1, 0),
          LaunchOverflow("k1_a", 3, ("a",), "f16", 2, 1)]
    entries = by_kernel(rs)
    assert [(e["kernel"], e["overflowed"], e["saturated"], e["launches"]) for e in entries] == [
        ("k1_a", 6, 1, [1, 3]), ("k2_b", 1, 0, [2])]
    line = overflow_summary(entries)
    assert "\n" not in line
    assert line.startswith("overflow in f16: kernel k1_a (node a) produced 6 inf/NaN and 1 saturated values")
    assert line.endswith("to avoid it (and 1 more kernel)")
    assert overflow_summary([]) is None
