"""A fixed sample of onnx's node conformance cases must keep passing, at the graph level and O3.

The sample (onnx_conformance_sample.txt beside this file) is every 5th case that passed
when it was written plus the first passing case of each op type, so coverage of any op
cannot regress unnoticed; bench/onnx_coverage.py runs all the cases and rewrites it
(`--write-sample`). A case the installed onnx no longer ships fails too: the sample is
rewritten when onnx is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import geir
from geir.errors import OnnxImportError
from geir.frontend.onnx import import_model
from geir.testing.onnx_conformance import LEVELS, conformance_cases, run_level

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
    status, detail = run_level(level, _case(name), timeout=60)
    assert status == "pass", f"{name} at {level}: {status}: {detail}"


def test_unsupported_op_case_is_one_clear_error():
    """NonZero (a data-dependent shape) is deliberately unsupported: one line naming the
    node, op type and opset, at import and from geir.compile, and `rejected` in the bench."""
    case = _case("test_nonzero_example")
    message = "unsupported ONNX operator: node 'result' (NonZero, opset 13)"
    with pytest.raises(OnnxImportError) as info:
        import_model(case.model)
    assert str(info.value) == message
    with pytest.raises(OnnxImportError) as info:
        geir.compile(case.model, opt_level=3)
    assert str(info.value) == message
    assert run_level("O3", case) == ("rejected", message)
