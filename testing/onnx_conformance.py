"""onnx's node conformance cases, run by geir: bench/onnx_coverage.py runs them all,
test/python/test_onnx_conformance.py a fixed sample.

A case (`onnx.backend.test.case.node.collect_testcases()`, those with data) is one small
model with its inputs and the outputs onnx ships. `run_level` runs it at the graph level
(import + the graph interpreter, the dialect's numpy reference semantics) or at O3
(`geir.compile(..., opt_level=3, precision_mode="must_keep_origin_dtype")`, the lowered
program on the ascend interpreter), compares at the case's own rtol / atol as onnx's own
backend test runner does (which widens rtol to two ulp for a bfloat16 output) and says how it
ended:

    pass      the outputs match
    rejected  a GeirError: geir refuses the model with a clear message
    mismatch  geir ran it and an output differs (shape, dtype or values)
    crash     any other exception: a geir bug
    timeout   longer than the timeout (signal.alarm)
"""

from __future__ import annotations

import re
import signal
import warnings
from functools import lru_cache

import numpy as np

STATUSES = ("pass", "rejected", "mismatch", "crash", "timeout")
LEVELS = ("graph", "O3")


class CaseTimeout(BaseException):
    """Raised by the alarm; a BaseException so no `except Exception` in geir swallows it."""


@lru_cache(maxsize=1)
def conformance_cases() -> tuple:
    """The node conformance cases that ship inputs and outputs, in onnx's (stable) order."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # onnx's case generators overflow casts on purpose
        return tuple(c for c in collect_testcases() if c.data_sets)


def op_of(case, by_name: dict) -> str:
    """The op type a case tests: its node's, or for an expanded function the op it expands."""
    base = re.sub(r"_expanded(_ver\d+)?$", "", case.name)
    twin = by_name.get(base, case)
    nodes = twin.model.graph.node
    return nodes[0].op_type if len(nodes) == 1 else nodes[-1].op_type


def as_array(value):
    """Case data is numpy, or a TensorProto for a type numpy lacks (bfloat16, float8, ...);
    a sequence or optional value stays as it is (geir has no such types and says so)."""
    import onnx
    from onnx import numpy_helper

    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    return value if isinstance(value, (list, tuple, type(None))) else np.asarray(value)


def feeds_of(model, inputs) -> dict:
    initialized = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initialized]
    return {name: as_array(value) for name, value in zip(names, inputs)}


def compare(ours: list, expected: list, rtol: float, atol: float) -> str | None:
    """None if the outputs match as onnx's backend test compares them, else what differs."""
    if len(ours) != len(expected):
        return f"{len(ours)} outputs, expected {len(expected)}"
    for i, (a, b) in enumerate(zip(ours, expected)):
        a, b = np.asarray(a), as_array(b)
        if not isinstance(b, np.ndarray):
            return f"output {i}: expected a {type(b).__name__}, not a tensor"
        if a.shape != b.shape:
            return f"output {i}: shape {list(a.shape)}, expected {list(b.shape)}"
        if a.dtype != b.dtype:
            return f"output {i}: dtype {a.dtype}, expected {b.dtype}"
        ulps, kind, case_rtol = _ulps_16(a, b), b.dtype, rtol
        if b.dtype.name == "bfloat16":  # onnx's runner (backend/test/runner): "Two bfloat16 ULPs."
            case_rtol = max(rtol, 2.0 ** -6)
        if b.dtype.kind == "V":  # ml_dtypes' bfloat16 and friends: compared as float32
            a, b = a.astype(np.float32), b.astype(np.float32)
        if b.dtype.kind in "fc":
            ok = np.allclose(a, b, rtol=case_rtol, atol=atol, equal_nan=True)
        else:
            ok = np.array_equal(a, b)
        if not ok:
            # A 16-bit case whose tolerance is below one unit in the last place fails any
            # implementation that rounds differently; say how far off it is.
            return f"output {i}: values differ" + (f" (at most {ulps} ulp of {kind})" if ulps else "")
    return None


def _ulps_16(a: np.ndarray, b: np.ndarray) -> int | None:
    """The largest distance in units in the last place between two 16-bit float arrays
    (float16 or bfloat16, same dtype), None for other types or non-finite values."""
    if a.dtype != b.dtype or a.dtype.itemsize != 2 or a.dtype.kind not in "fV" or a.size == 0:
        return None
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    if not (np.isfinite(fa).all() and np.isfinite(fb).all()):
        return None

    def ordered(x):  # sign-magnitude bits as integers in the order of the values
        bits = x.view(np.int16).astype(np.int32)
        return np.where(bits < 0, -(bits & 0x7FFF), bits)

    return int(np.abs(ordered(a) - ordered(b)).max())


def reason_of(message: str) -> str:
    """A rejection's reason without the names and numbers of the case, to group by."""
    text = message.splitlines()[0] if message else ""
    text = re.sub(r"node '[^']*' \([^)]*\)", "node", text)
    text = re.sub(r"'[^']*'", "'_'", text)
    text = re.sub(r"\[[^\]]*\]", "[_]", text)
    text = re.sub(r"\b\d+\b", "N", text)
    return text[:110]


def _run_graph(model, feeds: dict, freeze: dict) -> list:
    from geir.frontend.onnx import import_model
    from geir.runtime.interpreter import run_module

    return list(run_module(import_model(model, freeze=freeze), feeds).values())


def _run_o3(model, feeds: dict, freeze: dict) -> list:
    import geir

    compiled = geir.compile(model, opt_level=3, precision_mode="must_keep_origin_dtype", freeze=freeze)
    return list(compiled.run(feeds).values())


# The importer's hint when a shape-deciding operand (axes, split sizes) is a graph input.
_NOT_CONSTANT = re.compile(r"must be a constant; it is graph input '([^']+)'")


def _run_freezing(level: str, model, feeds: dict, freeze_inputs: bool) -> list:
    """Run; with `freeze_inputs`, each graph input the importer needs constant is frozen to
    the case's value of it (geir.compile's freeze) and the run repeated."""
    from geir.errors import OnnxImportError

    freeze: dict = {}
    while True:
        try:
            return RUNNERS[level](model, feeds, freeze)
        except OnnxImportError as e:
            needed = _NOT_CONSTANT.search(str(e))
            if not freeze_inputs or needed is None or needed.group(1) not in feeds:
                raise
            freeze[needed.group(1)] = feeds.pop(needed.group(1))


RUNNERS = {"graph": _run_graph, "O3": _run_o3}


def run_level(level: str, case, timeout: int = 60, freeze_inputs: bool = False) -> tuple[str, str]:
    """(status, detail) of one case at one level ("graph" or "O3"); `freeze_inputs`: graph
    inputs that must be constants are frozen to the case's values of them."""
    from geir.errors import GeirError

    inputs, expected = case.data_sets[0]

    def on_alarm(signum, frame):
        raise CaseTimeout()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(timeout)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            ours = _run_freezing(level, case.model, feeds_of(case.model, inputs), freeze_inputs)
    except CaseTimeout:
        return "timeout", f"> {timeout} s"
    except GeirError as e:
        return "rejected", str(e)
    except Exception as e:  # noqa: BLE001 - any other exception is a geir bug: counted, not fatal
        return "crash", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    try:
        diff = compare(ours, expected, case.rtol, case.atol)
    except Exception as e:  # noqa: BLE001 - an output numpy cannot compare is a mismatch
        diff = f"{type(e).__name__}: {e}"
    return ("mismatch", diff) if diff else ("pass", "")
