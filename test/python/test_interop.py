"""Upstream MLIR reads geir's IR and geir reads upstream's: every stage of the pipeline on two
suite models, printed in the generic form, parses and verifies in `mlir-opt-22
--allow-unregistered-dialect`; upstream's output with `--mlir-print-debuginfo` (locations as
aliases defined after the module) reads back into geir, verifies, and prints to what upstream
printed (resource names aside: geir names a blob after its value); the program inside the
transformer's .om, read back from upstream, runs to the same outputs."""

from __future__ import annotations

import hashlib
import re
import subprocess

import numpy as np
import pytest
from conftest import require_tool

import geir
from geir.dialects import make_context
from geir.driver.om import read_program
from geir.ir.text import parse_module, print_module
from geir.runtime.ascend_interpreter import run_ascend_module
from geir.testing.suite import light_model
from geir.testing.transformer import transformer_onnx

MLIR_OPT, PACKAGE = "mlir-opt-22", "mlir-22-tools"
MODELS = {"light_squeezenet": lambda: light_model("light_squeezenet"), "transformer": lambda: transformer_onnx(1)}


@pytest.fixture(scope="module", params=list(MODELS))
def compiled(request):
    return geir.compile(MODELS[request.param](), keep_stages=True)  # every stage is printed


def upstream(text: str, what: str) -> str:
    """mlir-opt's output for `text` (parsed and verified), with locations."""
    args = [require_tool(MLIR_OPT, PACKAGE), "--allow-unregistered-dialect", "--mlir-print-debuginfo", "-"]
    run = subprocess.run(args, input=text, capture_output=True, text=True)
    assert run.returncode == 0, f"{what}: {MLIR_OPT} rejects geir's IR:\n{run.stderr[:2000]}"
    return run.stdout


def blobs_by_value(text: str) -> str:
    """The text without its resource section, each `dense_resource<name>` named by its bytes."""
    body, _, resources = text.partition("{-#")
    blobs = dict(re.findall(r'^\s*([\w.$-]+): "(0x[0-9A-Fa-f]*)"', resources, re.MULTILINE))

    def by_value(m: re.Match) -> str:
        return f"dense_resource<{hashlib.sha1(blobs[m[1]].encode()).hexdigest()[:16]}>"

    return re.sub(r"dense_resource<([\w.$-]+)>", by_value, body)


def test_every_stage_round_trips_through_upstream(compiled):
    for stage, module in compiled.stages.items():
        theirs = upstream(print_module(module, generic=True), stage)
        assert re.search(r"^#loc\d* = loc\(", theirs, re.MULTILINE), "expected location aliases after the module"
        back = parse_module(theirs, make_context(), f"{stage} from {MLIR_OPT}")
        back.verify()
        again = upstream(print_module(back, generic=True), f"{stage} read back")
        assert blobs_by_value(again) == blobs_by_value(theirs), f"{stage}: geir changed upstream's IR"


def test_read_back_program_runs_the_same(tmp_path):
    """The program inside an .om, through upstream and back, runs to the same outputs."""
    cm = geir.compile(MODELS["transformer"]())
    cm.save(tmp_path / "m.om")
    _, program = read_program(tmp_path / "m.om")
    back = parse_module(upstream(print_module(program, generic=True), "program"), make_context())
    feeds = cm.random_inputs(seed=0)
    ours, theirs = cm.run(feeds), run_ascend_module(back, feeds)
    assert list(ours) == list(theirs)
    for name in ours:
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
