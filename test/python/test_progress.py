"""Progress on a terminal: geir-compile prints one quiet line per stage (its name when it
starts, its time when it ends) when stderr is a terminal, geir-run one per step (load, run),
and nothing otherwise (the lit tests compile-mlir.test and run-mlir.test check the pipe)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import geir

MODEL = Path(__file__).resolve().parents[1] / "tools" / "Inputs" / "model.mlir"


def _stderr_on_a_terminal(args: list[str]) -> tuple[int, str]:
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the other end is closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(), b"".join(chunks).decode().replace("\r\n", "\n")


def test_compile_shows_a_line_per_stage_on_a_terminal(tmp_path):
    code, err = _stderr_on_a_terminal([sys.executable, "-m", "geir.tools.geir_compile", str(MODEL), "-o",
                                       str(tmp_path / "m.om")])
    assert code == 0, err
    stages = geir.compile(str(MODEL)).stage_names
    lines = err.splitlines()
    assert len(lines) == len(stages), err
    for line, stage in zip(lines, stages):
        assert re.fullmatch(rf"geir-compile: {stage} \.\.\. \d+\.\d\d s", line), line


def test_compile_reports_stages_to_a_callback():
    seen = []
    cm = geir.compile(str(MODEL), progress=lambda stage, seconds: seen.append((stage, seconds)))
    assert [s for s, t in seen if t is None] == cm.stage_names
    assert [(s, t) for s, t in seen if t is not None] == list(cm.compile_seconds.items())


def test_run_shows_its_steps_on_a_terminal():
    code, err = _stderr_on_a_terminal([sys.executable, "-m", "geir.tools.geir_run", str(MODEL)])
    assert code == 0, err
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert re.fullmatch(r"geir-run: parse \.\.\. \d+\.\d\d s", lines[0]), lines[0]
    assert re.fullmatch(r"geir-run: interpret \.\.\. \d+\.\d\d s", lines[1]), lines[1]
