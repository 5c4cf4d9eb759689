"""graph-simplify keeps the numerics of the whole model suite, every graph
optimisation pass is idempotent on every suite model, and every rewrite shown
in the lit tests keeps the interpreter's results.

Each model is imported once; every check runs on a clone (constants are shared,
not copied). Idempotence compares the printed modules of the small models and,
for the light models with hundreds of MB of weights, the same content without
hex-printing it (`same_module`), so the file runs in well under a minute.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.pattern_rewriter import PatternRewriteWalker
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from geir.dialects import graph as g
from geir.errors import GeirError
from geir.ir.text import parse_module, print_module
from geir.frontend.onnx import import_model
from geir.passes.graph.canonicalize import CanonicalizePass
from geir.passes.graph.fold_batchnorm import FoldBatchNormPass
from geir.passes.graph.fold_qdq import FoldQdqPass
from geir.passes.graph.fold_constants import FoldConstantsPass
from geir.passes.graph.fold_shapes import FoldShapesPass
from geir.passes.graph.fold_transpose import FoldTransposePass, ScalarOutOfMatMul
from geir.passes.graph.simplify import SimplifyPass
from geir.passes.graph.view_op_graph import ViewOpGraph
from geir.runtime.interpreter import input_specs, random_inputs, run_module
from geir.testing.suite import LIGHT_MODELS, assert_close, backend_cases, light_model, ort_run
from geir.dialects import make_context

PASSES = (
    FoldConstantsPass(),
    FoldShapesPass(),
    CanonicalizePass(),
    CanonicalizePass(fast_math=True),
    FoldBatchNormPass(),
    FoldTransposePass(),
    SimplifyPass(),
)
CTX = Context()


def same_module(a: ModuleOp, b: ModuleOp) -> bool:
    """What printing would compare: ops, operands, types, attributes (weights
    included), locations and value names, without hex-printing the weights."""

    def extras(m: ModuleOp):
        return [(op.location, tuple(r.name_hint for r in op.results)) for op in m.walk()]

    return a.is_structurally_equivalent(b) and extras(a) == extras(b)


def simplified(module: ModuleOp) -> ModuleOp:
    out = module.clone()
    SimplifyPass().apply(CTX, out)
    out.verify()
    return out


def check_idempotent(module: ModuleOp, what: str, printed: bool = True) -> None:
    for p in PASSES:
        once = module.clone()
        p.apply(CTX, once)
        twice = once.clone()
        p.apply(CTX, twice)
        spec = p.pipeline_pass_spec()
        assert same_module(once, twice), f"{what}: {spec} is not idempotent"
        if printed:
            assert print_module(once) == print_module(twice), f"{what}: {spec} prints differently the second time"


def check_against(module: ModuleOp, feeds, expected, what: str) -> None:
    ours = list(run_module(module, feeds).values())
    assert len(ours) == len(expected)
    for i, (a, b) in enumerate(zip(ours, expected)):
        assert_close(a, b, f"{what} output {i}")


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model(name):
    model = light_model(name)
    module = import_model(model)
    feeds = random_inputs(module, seed=1)
    check_against(simplified(module), feeds, ort_run(model, feeds), name)
    check_idempotent(module, name, printed=False)


@pytest.mark.parametrize("layers", [1, 2])
def test_torchscript_transformer(layers):
    from geir.testing.transformer import transformer_onnx

    model = transformer_onnx(layers)
    module = import_model(model)
    feeds = random_inputs(module, seed=2)
    out = simplified(module)
    check_against(out, feeds, ort_run(model, feeds), f"transformer x{layers}")
    left = [op.name for op in out.walk() if isinstance(op, g.ShapeOp | g.GatherOp | g.ConcatOp)]
    assert not left, f"shape computations left: {left}"
    check_idempotent(module, f"transformer x{layers}")


def test_scalar_out_of_matmul_transformer(monkeypatch):
    """The TorchScript attention scales q and transpose(k) by 1/sqrt(sqrt(64)) each:
    graph-fold-transpose moves both scales after QK^T (and the GELU's * 0.5 into the
    down-projection's weight). The graph interpreter gives the unrewritten block's
    outputs, and at O3 the product and the scale are one cube kernel."""
    import geir
    from geir.ir.locations import loc_names
    from geir.passes.graph.utils import sole_user
    from geir.testing.transformer import transformer_onnx

    model = transformer_onnx(layers=1, d_model=256, heads=4, seq=128)
    module = import_model(model)
    with monkeypatch.context() as m:
        m.setattr(ScalarOutOfMatMul, "match_and_rewrite", lambda self, op, rewriter: None)
        before = simplified(module)
    after = before.clone()
    assert PatternRewriteWalker(ScalarOutOfMatMul()).rewrite_module(after)
    after.verify()
    (scores,) = [op for op in after.walk() if isinstance(op, g.MatMulOp) and isinstance(op.rhs.owner, g.TransposeOp)]
    assert not isinstance(scores.lhs.owner, g.MulOp)
    scale = sole_user(scores.output)
    assert isinstance(scale, g.MulOp) and g.constant_value_of(scale.rhs).size == 1
    scaled = [
        v.owner.location
        for op in after.walk()
        if isinstance(op, g.MatMulOp | g.GemmOp)
        for v in op.inputs
        if isinstance(v.owner, g.MulOp | g.DivOp) and any(c.owner.name == "graph.constant" for c in v.owner.inputs)
    ]
    assert not scaled, f"matmul operands still scaled by constants: {scaled}"
    feeds = random_inputs(module, seed=4)
    check_against(after, feeds, list(run_module(before, feeds).values()), "scales after QK^T")

    kernels = [op for op in geir.compile(model, precision_mode="must_keep_origin_dtype").stages["05_lower"].walk() if op.name == "ascend.kernel"]
    names = [set(loc_names(k.location)) for k in kernels]
    assert any({"/0/attn/MatMul_1", "/0/attn/Mul_1"} <= n for n in names), names
    # the transpose of k is no kernel of its own: the matmul reads it transposed, or the
    # q/k/v split's data kernel writes k transposed
    assert not any(n == {"/0/attn/Transpose_5"} for n in names), names


def _importable():
    from test_onnx_suite import LEFT_OUT

    return [c for c in backend_cases() if c.name not in LEFT_OUT]


@pytest.mark.parametrize("case", _importable(), ids=lambda c: c.name)
def test_backend_case(case):
    module = import_model(case.model_path)
    feeds = {name: value for (name, _, _), value in zip(input_specs(module), case.inputs())}
    check_against(simplified(module), feeds, case.outputs(), case.name)
    check_idempotent(module, case.name)


# ---------------------------------------------------------------------------
# The lit tests' inputs keep their numerics under their pass: every rewrite
# shown in test/passes/graph runs before and after on random inputs.
# ---------------------------------------------------------------------------

LIT_DIR = os.path.join(os.path.dirname(__file__), "..", "passes", "graph")


class _CseDce:
    """xDSL's cse then dce, as cse_dce.mlir's RUN lines use them."""

    def apply(self, ctx, module) -> None:
        CommonSubexpressionElimination().apply(ctx, module)
        DeadCodeElimination().apply(ctx, module)


LIT_PASSES = {
    "fold_constants": FoldConstantsPass(),
    "fold_shapes": FoldShapesPass(),
    "canonicalize": CanonicalizePass(fast_math=True),
    "fold_batchnorm": FoldBatchNormPass(),
    "fold_transpose": FoldTransposePass(),
    "fold_qdq": FoldQdqPass(),
    "simplify": SimplifyPass(),
    "cse_dce": _CseDce(),
    "view_op_graph": ViewOpGraph(output=os.devnull),  # changes nothing
}


def _lit_chunks():
    for stem in LIT_PASSES:
        path = os.path.join(LIT_DIR, f"{stem}.mlir")
        with open(path) as f:  # a listed file that is gone fails collection, it is not skipped
            for i, chunk in enumerate(f.read().split("\n// -----\n")):
                yield pytest.param(stem, chunk, f"{stem}:{i}", id=f"{stem}:{i}")


def _claimed_elsewhere() -> set[str]:
    """Prefixes of test/passes/graph lit files other test modules run before and after their
    pass (`lit_chunks(LIT_DIR, "fuse")` in test_fuse.py, ...)."""
    here = Path(__file__).resolve().parent
    found = set()
    for path in here.glob("test_*.py"):
        text = path.read_text()
        if '"passes", "graph"' in text:
            found.update(re.findall(r'lit_chunks\(LIT_DIR, "([^"]+)"\)', text))
    return found


def test_every_graph_pass_lit_file_is_run_for_numerics():
    """A lit file of test/passes/graph that no numerics test runs would be unchecked: each is in
    LIT_PASSES or claimed by another test module's lit_chunks prefix."""
    prefixes = _claimed_elsewhere()
    assert {"fuse", "layout"} <= prefixes
    files = sorted(f[:-5] for f in os.listdir(LIT_DIR) if f.endswith(".mlir"))
    unchecked = [f for f in files if f not in LIT_PASSES and not any(f.startswith(p) for p in prefixes)]
    assert not unchecked, f"lit files no numerics test runs: {unchecked}"


QUANTIZATION_STEPS = {"fold_qdq": 1, "simplify": 1}
"""How far these passes may move an integer output, in quantization steps (other passes: not at
all): graph-fold-qdq's requantize multiplies once where dequantize -> quantize rounded twice, so
a value on a rounding boundary moves one step (fold_qdq.mlir's @requantize_rounding_boundary)."""


NOT_RUNNABLE = {
    "fold_constants:4": "has no data",  # elided weights: the max-bytes case
    "fold_shapes:2": "dynamic shape",  # a dynamic dim stays unfolded
}


@pytest.mark.parametrize("stem,chunk,chunk_id", list(_lit_chunks()))
def test_lit_case_keeps_numerics(stem, chunk, chunk_id):
    module = parse_module(chunk, make_context())
    if chunk_id in NOT_RUNNABLE:
        # These inputs exist to show what a pass leaves alone; they cannot run.
        with pytest.raises(GeirError, match=NOT_RUNNABLE[chunk_id]):
            run_module(module, random_inputs(module, seed=3))
        return
    feeds = random_inputs(module, seed=3)
    before = run_module(module, feeds)
    LIT_PASSES[stem].apply(CTX, module)
    module.verify()
    after = run_module(module, feeds)
    for name, value in before.items():
        if np.issubdtype(value.dtype, np.integer):
            steps = QUANTIZATION_STEPS.get(stem, 0)
            assert_close(after[name].astype(np.int64), value.astype(np.int64), f"{stem} {name}", rtol=0, atol=steps)
        else:
            assert_close(after[name], value, f"{stem} {name}")
