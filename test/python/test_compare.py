"""geir-compare's engine (driver/compare.py): verdicts (f16 / bf16 ones by cosine and SQNR),
every stage against onnxruntime, a deliberately broken pass found at the op it breaks, and an
f16 program's overflow found at the op that overflowed."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.passes import ModulePass

import geir
import geir.driver.pipelines as pipelines
import geir.driver.registry as registry
from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.errors import GeirError
from geir.ir.locations import loc_names
from geir.driver.compare import Thresholds, Verdict, compare_arrays, compare_model, stage_names
from geir.runtime.kernel_args import written_args
from geir.testing.suite import light_model
from geir.testing.transformer import transformer_onnx

# ---------------------------------------------------------------------------
# Verdicts.
# ---------------------------------------------------------------------------


def test_verdicts_and_metrics():
    rng = np.random.default_rng(0)
    ref = rng.standard_normal(1000).astype(np.float32)
    equal = compare_arrays(ref.copy(), ref)
    assert equal.verdict is Verdict.EQUAL and equal.max_abs_err == 0 and equal.sqnr_db == math.inf
    close = compare_arrays(ref * np.float32(1 + 1e-6), ref)
    assert close.verdict is Verdict.CLOSE and close.cosine > 0.999999
    similar = compare_arrays(ref + 0.01 * rng.standard_normal(1000).astype(np.float32), ref)
    assert similar.verdict is Verdict.SIMILAR and 30 < similar.sqnr_db < 50
    different = compare_arrays(-ref, ref)
    assert different.verdict is Verdict.DIFFERENT and different.cosine == pytest.approx(-1)
    assert compare_arrays(ref[:10], ref).verdict is Verdict.DIFFERENT  # shape
    # NaN where the reference has NaN is not a difference; NaN elsewhere is.
    nan_ref = ref.copy()
    nan_ref[3] = np.nan
    assert compare_arrays(nan_ref.copy(), nan_ref).verdict is Verdict.EQUAL
    assert compare_arrays(nan_ref, ref).verdict is Verdict.DIFFERENT
    # The thresholds decide: a looser atol makes the noisy array CLOSE.
    loose = compare_arrays(ref + 0.01 * rng.standard_normal(1000).astype(np.float32), ref, Thresholds(atol=0.1))
    assert loose.verdict is Verdict.CLOSE


def test_integer_and_zero_tensors():
    assert compare_arrays(np.arange(6), np.arange(6)).verdict is Verdict.EQUAL
    assert compare_arrays(np.zeros(4, np.float32), np.zeros(4, np.float32)).cosine == 1.0
    zero_vs_one = compare_arrays(np.zeros(4, np.float32), np.ones(4, np.float32))
    assert zero_vs_one.verdict is Verdict.DIFFERENT and zero_vs_one.cosine == 0.0


def test_low_precision_tensors_are_judged_by_cosine_and_sqnr():
    """fp32 tolerances say nothing about f16 / bf16: such a tensor is EQUAL, SIMILAR or
    DIFFERENT, never CLOSE, even when it would pass allclose."""
    rng = np.random.default_rng(0)
    ref = rng.standard_normal(1000).astype(np.float32)
    half = compare_arrays(ref.astype(np.float16), ref)
    assert half.verdict is Verdict.SIMILAR and half.low_precision and half.sqnr_db > 60
    assert compare_arrays(ref.astype(np.float16), ref, Thresholds(atol=1.0)).verdict is Verdict.SIMILAR
    assert compare_arrays(ref, ref.astype(np.float16).astype(np.float32), Thresholds(atol=1.0)).verdict is Verdict.CLOSE
    assert compare_arrays(ref.astype(np.float16), ref.astype(np.float16)).verdict is Verdict.EQUAL
    noisy = compare_arrays((ref + 0.3 * rng.standard_normal(1000)).astype(np.float16), ref)
    assert noisy.verdict is Verdict.DIFFERENT and noisy.sqnr_db < 30


def test_overflow_is_inf_or_nan_where_the_reference_is_finite():
    ref = np.array([1.0, 2.0, np.inf, np.nan, 5.0], np.float32)
    x = np.array([1.0, np.inf, np.inf, np.nan, np.nan], np.float16)
    m = compare_arrays(x, ref)
    assert m.verdict is Verdict.DIFFERENT and m.overflow == 2  # not where the reference is inf / NaN too
    assert compare_arrays(ref.copy(), ref).overflow == 0


def _matmul(dtype) -> onnx.ModelProto:
    """y = MatMul(x[16, 1024], w = 300), unnamed: "MatMul:y"."""
    elem = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "mm",
                              [helper.make_tensor_value_info("x", elem, [16, 1024])],
                              [helper.make_tensor_value_info("y", elem, [16, 16])],
                              [numpy_helper.from_array(np.full((1024, 16), 300, dtype), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_f16_program_against_the_f32_model_names_the_op_that_overflowed():
    """The model compiled in f16 (every stage) compared with onnxruntime on the f32 model: every
    row carries both dtypes, the first overflow is the MatMul at the first stage."""
    import json

    stages = geir.compile(_matmul(np.float16)).stages
    report = compare_model(_matmul(np.float32), {"x": np.full((16, 1024), 300, np.float32)}, compiled=stages)
    rows = [c for s in report.stages for c in s.comparisons]
    assert rows and all((c.dtype, c.ref_dtype, c.precision) == ("f16", "f32", "f16 vs f32") for c in rows)
    first = report.first_overflow()
    assert (first.stage, first.node, first.op, first.metrics.overflow) == ("01_import", "MatMul:y", "graph.matmul", 256)
    assert report.first_divergence() is first
    text = report.format()
    assert ("first overflow: stage 01_import, node 'MatMul:y' (tensor 'y', graph.matmul, f16): 256 inf/NaN where "
            "onnxruntime's f32 is finite") in text
    lowered = next(c for c in rows if c.op.startswith("@"))
    assert re.search(rf"\S+ +y +MatMul:y +{lowered.op} +f16 vs f32 +DIFFERENT +inf +nan +-inf", text)
    data = json.loads(json.dumps(report.to_json(), allow_nan=False))  # strict JSON: no bare inf / nan
    assert data["first_overflow"]["node"] == "MatMul:y" and data["first_overflow"]["overflow"] == 256
    assert data["stages"][0]["comparisons"][0]["sqnr_db"] == "-inf"
    # Small inputs: every f16 tensor is SIMILAR, which is all f16 can be; nothing overflows.
    small = np.random.default_rng(0).standard_normal((16, 1024)).astype(np.float32) * 0.01
    report = compare_model(_matmul(np.float32), {"x": small}, compiled=stages)
    assert {c.verdict for s in report.stages for c in s.comparisons} == {Verdict.SIMILAR}
    assert report.first_overflow() is None and report.first_beyond_tier() is None
    assert "first overflow" not in report.format() and "beyond CLOSE" not in report.format()
    assert "every compared tensor is EQUAL or CLOSE (SIMILAR for f16 / bf16 and int8 stages)" in report.format("diverging")


def test_storage_buffers_are_read_back_in_logical_order():
    """gm buffers carry no format encoding: a buffer with a blocked storage shape of the
    reference's shape is converted back to it."""
    from geir.dialects import formats
    from geir.driver.compare import _as_logical

    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 20, 5, 7)).astype(np.float32)
    nc1hwc0 = formats.to_physical(x, formats.NC1HWC0, formats.NCHW)
    assert nc1hwc0.shape == (1, 2, 5, 7, 16)
    np.testing.assert_array_equal(_as_logical(nc1hwc0, x.shape), x)
    m = rng.standard_normal((3, 40, 24)).astype(np.float32)
    np.testing.assert_array_equal(_as_logical(formats.to_physical(m, formats.FRACTAL_NZ), m.shape), m)
    assert _as_logical(x, x.shape) is x
    assert _as_logical(x.reshape(20, 35), x.shape) is None  # same size, no format: not this tensor


def test_formatted_values_are_compared_logically():
    """After graph-layout, values stored as NC1HWC0 are converted before comparing."""
    from geir.dialects import formats

    model = light_model("light_squeezenet")
    cm = geir.compile(model, opt_level=3, lower=False, precision_mode="must_keep_origin_dtype")
    stage = next(s for s in cm.stages if s.endswith("_layout"))
    formatted = [op for op in cm.stages[stage].walk()
                 if any(formats.is_formatted(r.type) for r in op.results) and op.name != "graph.trans_data"]
    assert formatted, "graph-layout chose no blocked format"
    report = compare_model(model, compiled={stage: cm.stages[stage]})
    (result,) = report.stages
    assert result.error is None and result.unmapped == 0
    assert max(c.verdict for c in result.comparisons) <= Verdict.CLOSE


# ---------------------------------------------------------------------------
# Every stage against onnxruntime.
# ---------------------------------------------------------------------------


def _assert_all_close(report, last_node: str) -> None:
    for stage in report.stages:
        assert stage.error is None, f"{stage.name}: {stage.error}"
        assert stage.comparisons, f"{stage.name}: nothing compared"
        bad = [c for c in stage.comparisons if c.verdict > Verdict.CLOSE]
        assert not bad, f"{stage.name}: {[(c.node, c.verdict.name) for c in bad]}"
        assert last_node in {c.node for c in stage.comparisons}, f"{stage.name}: the model output is not compared"
    assert report.first_divergence() is None
    assert report.first_divergence(Verdict.SIMILAR) is None


# O2 lowers plain tensors; O3 adds layout (formatted tensors) and streams.
OPT_LEVELS = (2, 3)


@pytest.mark.parametrize("opt_level", OPT_LEVELS)
def test_light_model_every_stage_is_close(opt_level):
    model = light_model("light_squeezenet")
    report = compare_model(model, opt_level=opt_level, precision_mode="must_keep_origin_dtype")
    assert [s.name for s in report.stages] == stage_names(opt_level=opt_level, precision_mode="must_keep_origin_dtype")
    _assert_all_close(report, model.graph.node[-1].name)
    levels = {s.name.split("_", 1)[1]: s for s in report.stages}
    assert levels["import"].level == "graph" and levels["lower"].level == "ascend"
    # Every node output but the dropout mask, at import; fusion keeps only kernel outputs,
    # and every one of them is still found after layout (formats converted back).
    assert len(levels["import"].comparisons) == report.tensors - 1
    assert len(levels["fuse"].comparisons) < len(levels["simplify"].comparisons)
    if "layout" in levels:
        assert len(levels["layout"].comparisons) == len(levels["fuse"].comparisons)
    # Every buffer a kernel writes maps to an ONNX tensor (a trans_data graph-layout put in the
    # classifier fusion is a kernel of its own, named after the value's producer); a fusion
    # the lowering splits gives more.
    assert levels["lower"].unmapped == 0
    assert len(levels["lower"].comparisons) >= len(levels["fuse"].comparisons)


@pytest.mark.parametrize("opt_level", OPT_LEVELS)
def test_transformer_every_stage_is_close(opt_level):
    model = transformer_onnx()
    report = compare_model(model, opt_level=opt_level, precision_mode="must_keep_origin_dtype")
    _assert_all_close(report, model.graph.node[-1].name)
    assert {s.name.split("_", 1)[1] for s in report.stages} >= {"import", "simplify", "fuse", "lower"}


# ---------------------------------------------------------------------------
# A broken pass is found at the op it breaks.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SwapSub(ModulePass):
    """Broken on purpose: swaps the operands of the first graph.sub (x - mean becomes mean - x)."""

    name = "test-swap-sub"

    def apply(self, ctx, op):
        for o in op.walk():
            if isinstance(o, g.SubOp) and o.operands[0] is not o.operands[1]:
                lhs, rhs = o.operands
                o.operands = [rhs, lhs]
                return


def _with_pass_after(monkeypatch, stage: str, pass_cls) -> None:
    """Register `pass_cls` and append it to `stage` of every pipeline built from now on."""
    all_passes = registry.get_all_passes
    monkeypatch.setattr(registry, "get_all_passes", lambda: {**all_passes(), pass_cls.name: lambda: pass_cls})
    build = pipelines.build_pipeline

    def broken(opts):
        p = build(opts)
        p.stages = [(n, [*specs, pass_cls.name] if n.endswith("_" + stage) else specs) for n, specs in p.stages]
        return p

    monkeypatch.setattr(pipelines, "build_pipeline", broken)


def test_broken_pass_is_found_at_the_op_it_breaks(monkeypatch):
    model = transformer_onnx()
    _with_pass_after(monkeypatch, "simplify", SwapSub)
    report = compare_model(model, opt_level=3, stages=["import", "simplify", "fuse"], precision_mode="must_keep_origin_dtype")
    first = report.first_divergence()
    assert first is not None
    assert (first.stage, first.node, first.op) == ("02_simplify", "/0/ln1/Sub", "graph.sub")
    assert first.metrics.cosine == pytest.approx(-1, abs=1e-6)
    assert report.stages[0].first(Verdict.SIMILAR) is None  # the import is fine
    text = report.format("diverging")
    assert "first divergence: stage 02_simplify, node '/0/ln1/Sub'" in text
    assert "01_import" not in text.split("stages (")[0]  # only diverging rows in the table


def test_broken_kernel_is_found_at_the_ascend_level():
    """A conv weight negated in the lowered program: the first divergent tensor is the
    output of the kernel that reads it (the last ONNX node of its fused location)."""
    model = light_model("light_squeezenet")
    cm = geir.compile(model, opt_level=2, precision_mode="must_keep_origin_dtype")
    stage = next(s for s in cm.stages if s.endswith("_lower"))
    lowered = cm.stages[stage].clone()
    host = next(op for op in lowered.ops if not isinstance(op, a.KernelOp))
    kernels = {k.sym_name.data: k for k in lowered.ops if isinstance(k, a.KernelOp)}
    launches = [op for op in host.walk() if isinstance(op, a.LaunchOp)]

    def conv_weight(launch):
        return next((v.owner for v in launch.operands
                     if isinstance(v.owner, a.ConstantOp) and len(v.type.get_shape()) == 4), None)

    launch = next(op for op in launches[4:] if conv_weight(op) is not None)
    weight = conv_weight(launch)
    negated = a.ConstantOp.from_array(-weight.array())
    host.body.block.insert_op_before(negated, weight)
    weight.results[0].replace_all_uses_with(negated.results[0])
    weight.detach()
    kernel = kernels[launch.kernel_op().sym_name.data]
    assert written_args(kernel)  # the kernel's outputs are found by walking its body
    expected = max(loc_names(kernel.location), key=lambda n: [x.name for x in model.graph.node].index(n))

    report = compare_model(model, compiled={"01_import": cm.stages["01_import"], stage: lowered})
    first = report.first_divergence()
    assert first is not None and first.stage == stage
    assert first.node == expected and first.op == "@" + kernel.sym_name.data
    assert report.stages[0].first(Verdict.SIMILAR) is None


def test_stage_selection_and_errors():
    model = transformer_onnx()
    report = compare_model(model, stages=["simplify"], opt_level=1, lower=False)
    assert [s.name for s in report.stages] == ["02_simplify"]
    with pytest.raises(GeirError, match="no stage 'nope'; stages are 01_import, 02_simplify"):
        compare_model(model, stages=["nope"], opt_level=1, lower=False)
    with pytest.raises(GeirError, match="unknown option"):
        compare_model(model, fusoin=True)
