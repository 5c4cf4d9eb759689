"""Numerics of the reference interpreter against onnxruntime on the model suite."""

from __future__ import annotations

import numpy as np
import pytest

from geir.errors import OnnxImportError
from geir.frontend.onnx import import_model
from geir.runtime.interpreter import input_specs, random_inputs, run_module
from geir.testing.suite import LIGHT_MODELS, assert_close, backend_cases, light_model, ort_run

# Backend cases geir does not import, with the reason; each must fail to import
# with a clear OnnxImportError mentioning it (so support that lands shows up here).
LEFT_OUT = {
    "simple/test_gradient_of_add": "Gradient",
    "simple/test_gradient_of_add_and_mul": "Gradient",
    **{f"simple/test_sequence_model{i}": "Sequence" for i in range(1, 9)},
    **{
        f"simple/test_strnorm_model_{s}": "StringNormalizer"
        for s in (
            "monday_casesensintive_lower", "monday_casesensintive_nochangecase", "monday_casesensintive_upper",
            "monday_empty_output", "monday_insensintive_upper_twodim", "nostopwords_nochangecase",
        )
    },
}
CASES = backend_cases()


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_matches_onnxruntime(name):
    model = light_model(name)
    module = import_model(model)
    module.verify()
    feeds = random_inputs(module, seed=1)
    ours = run_module(module, feeds)
    theirs = ort_run(model, feeds)
    assert len(ours) == len(theirs)
    for (out_name, a), b in zip(ours.items(), theirs):
        assert np.std(b) > 0, "reference output is uniform: weights were not randomised"
        assert_close(a, b, f"{name}:{out_name}")


@pytest.mark.parametrize("case", [c for c in CASES if c.name not in LEFT_OUT], ids=lambda c: c.name)
def test_backend_case_matches_expected_outputs(case):
    module = import_model(case.model_path)
    module.verify()
    feeds = {name: value for (name, _, _), value in zip(input_specs(module), case.inputs())}
    ours = list(run_module(module, feeds).values())
    expected = case.outputs()
    assert len(ours) == len(expected)
    for i, (a, b) in enumerate(zip(ours, expected)):
        assert_close(a, b, f"{case.name} output {i}")


@pytest.mark.parametrize("case", [c for c in CASES if c.name in LEFT_OUT], ids=lambda c: c.name)
def test_left_out_case_is_rejected_clearly(case):
    with pytest.raises(OnnxImportError, match=LEFT_OUT[case.name]):
        import_model(case.model_path)


def test_suite_accounting():
    """Every backend case is either run or left out with a reason; print the count."""
    names = {c.name for c in CASES}
    assert set(LEFT_OUT) <= names
    ran = len(names - set(LEFT_OUT))
    print(f"\nbackend cases: {ran} run, {len(LEFT_OUT)} left out")
    for name, reason in sorted(LEFT_OUT.items()):
        print(f"  left out {name}: unsupported {reason}")
    assert ran >= 124


@pytest.mark.parametrize("layers", [1, 2])
def test_torchscript_transformer_matches_onnxruntime(layers):
    from geir.testing.transformer import transformer_onnx

    model = transformer_onnx(layers)
    module = import_model(model)
    module.verify()
    feeds = random_inputs(module, seed=2)
    ours = run_module(module, feeds)
    assert_close(ours["y"], ort_run(model, feeds)[0], f"transformer x{layers}")
