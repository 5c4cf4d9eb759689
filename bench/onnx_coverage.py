"""ONNX coverage: every node conformance case of the installed onnx, run by geir.

Each case (`onnx.backend.test.case.node.collect_testcases()`, those with data) is run
twice: at the graph level (import + the graph interpreter, the dialect's numpy reference
semantics) and at O3 (`geir.compile(..., opt_level=3, precision_mode="must_keep_origin_dtype")`,
the lowered program on the ascend interpreter), and compared with the outputs onnx ships
at the case's own rtol / atol. Each run ends as one of

    pass      the outputs match
    rejected  a GeirError: geir refuses the model with a clear message (grouped by reason,
              names and numbers stripped, so one missing feature is one line)
    mismatch  geir ran it and an output differs (shape, dtype or values)
    crash     any other exception: a geir bug
    timeout   longer than --timeout seconds (signal.alarm, per run)

and the tables give them per op type (the op a case tests: an `_expanded` case counts
for the op it expands) and in total, with the share of all cases that pass at O3.

    python bench/onnx_coverage.py [--jobs 2] [--timeout 60] [--ops Cast,Shape] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import re
import signal
import sys
import time
import warnings

import numpy as np

STATUSES = ("pass", "rejected", "mismatch", "crash", "timeout")
LEVELS = ("graph", "O3")


class CaseTimeout(BaseException):
    """Raised by the alarm; a BaseException so no `except Exception` in geir swallows it."""


def conformance_cases() -> list:
    """The node conformance cases that ship inputs and outputs, in onnx's (stable) order."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # onnx's case generators overflow casts on purpose
        return [c for c in collect_testcases() if c.data_sets]


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
        if b.dtype.kind == "V":  # ml_dtypes' bfloat16 and friends: compared as float32
            a, b = a.astype(np.float32), b.astype(np.float32)
        if b.dtype.kind in "fc":
            ok = np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = np.array_equal(a, b)
        if not ok:
            return f"output {i}: values differ"
    return None


def reason_of(message: str) -> str:
    """A rejection's reason without the names and numbers of the case, to group by."""
    text = message.splitlines()[0] if message else ""
    text = re.sub(r"node '[^']*' \([^)]*\)", "node", text)
    text = re.sub(r"'[^']*'", "'_'", text)
    text = re.sub(r"\[[^\]]*\]", "[_]", text)
    text = re.sub(r"\b\d+\b", "N", text)
    return text[:110]


def _run_graph(model, feeds: dict) -> list:
    from geir.frontend.onnx import import_model
    from geir.runtime.interpreter import run_module

    return list(run_module(import_model(model), feeds).values())


def _run_o3(model, feeds: dict) -> list:
    import geir

    compiled = geir.compile(model, opt_level=3, precision_mode="must_keep_origin_dtype")
    return list(compiled.run(feeds).values())


RUNNERS = {"graph": _run_graph, "O3": _run_o3}


def run_level(level: str, case, timeout: int) -> tuple[str, str]:
    """(status, detail) of one case at one level."""
    from geir.errors import GeirError

    inputs, expected = case.data_sets[0]

    def on_alarm(signum, frame):
        raise CaseTimeout()

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(timeout)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            ours = RUNNERS[level](case.model, feeds_of(case.model, inputs))
    except CaseTimeout:
        return "timeout", f"> {timeout} s"
    except GeirError as e:
        return "rejected", str(e)
    except Exception as e:  # noqa: BLE001 - any other exception is a geir bug: counted, not fatal
        return "crash", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    finally:
        signal.alarm(0)
    try:
        diff = compare(ours, expected, case.rtol, case.atol)
    except Exception as e:  # noqa: BLE001 - an output numpy cannot compare is a mismatch
        diff = f"{type(e).__name__}: {e}"
    return ("mismatch", diff) if diff else ("pass", "")


_CASES: list = []
_OPS: list = []


def _init_worker() -> None:
    global _CASES, _OPS
    _CASES = conformance_cases()
    by_name = {c.name: c for c in _CASES}
    _OPS = [op_of(c, by_name) for c in _CASES]


def run_case(index: int, timeout: int) -> dict:
    case = _CASES[index]
    result = {"name": case.name, "op": _OPS[index]}
    for level in LEVELS:
        t0 = time.perf_counter()
        status, detail = run_level(level, case, timeout)
        result[level] = status
        result[f"{level}_detail"] = detail
        result[f"{level}_s"] = round(time.perf_counter() - t0, 3)
    return result


def _run_case_star(args) -> dict:
    return run_case(*args)


def run_all(indices: list[int], jobs: int, timeout: int) -> list[dict]:
    work = [(i, timeout) for i in indices]
    if jobs <= 1:
        return [run_case(*w) for w in work]
    with multiprocessing.get_context("fork").Pool(jobs, initializer=_init_worker, maxtasksperchild=50) as pool:
        return list(pool.imap(_run_case_star, work, chunksize=4))


def print_tables(results: list[dict], top: int) -> None:
    per_op: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in results:
        per_op[r["op"]]["cases"] += 1
        per_op[r["op"]]["graph pass"] += r["graph"] == "pass"
        per_op[r["op"]][r["O3"]] += 1
    cols = ["cases", "graph pass", *STATUSES]
    print(f"\nPer op type (O3 status; the {top} with most cases, then the rest summed)")
    print(f"{'op':<28}" + "".join(f"{c:>11}" for c in cols))
    ordered = sorted(per_op.items(), key=lambda kv: (-kv[1]["cases"], kv[0]))
    rest = collections.Counter()
    for op, counts in ordered[top:]:
        rest.update(counts)
    rows = ordered[:top] + ([(f"({len(ordered) - top} other ops)", rest)] if len(ordered) > top else [])
    for op, counts in rows:
        print(f"{op:<28}" + "".join(f"{counts[c]:>11}" for c in cols))

    for level in LEVELS:
        totals = collections.Counter(r[level] for r in results)
        print(f"\nTotal at {level}: " + ", ".join(f"{s} {totals[s]}" for s in STATUSES))
        for status in ("rejected", "mismatch", "crash"):
            groups = collections.defaultdict(list)
            for r in results:
                if r[level] == status:
                    key = reason_of(r[f"{level}_detail"]) if status != "mismatch" else r[f"{level}_detail"].split(":")[-1].strip()
                    groups[key].append(r["name"])
            if not groups:
                continue
            print(f"  {status} at {level}, by reason:")
            for key, names in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:25]:
                print(f"    {len(names):>5}  {key}   (e.g. {', '.join(names[:2])})")
    passed = sum(r["O3"] == "pass" for r in results)
    print(f"\nPass at O3: {passed} of {len(results)} cases = {100 * passed / max(len(results), 1):.1f}%")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per case and level")
    ap.add_argument("--ops", default="", help="comma-separated op types to run (default: all)")
    ap.add_argument("--top", type=int, default=40, help="op types listed one by one")
    ap.add_argument("--json", default="", help="write the per-case results here")
    args = ap.parse_args(argv)

    _init_worker()
    wanted = set(filter(None, args.ops.split(",")))
    indices = [i for i, op in enumerate(_OPS) if not wanted or op in wanted]
    t0 = time.perf_counter()
    results = run_all(indices, args.jobs, args.timeout)
    print(f"{len(results)} node conformance cases of onnx (opsets up to "
          f"{__import__('onnx').defs.onnx_opset_version()}) in {time.perf_counter() - t0:.0f} s")
    print_tables(results, args.top)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
