"""ONNX coverage: every node conformance case of the installed onnx, run by geir.

Each case (`onnx.backend.test.case.node.collect_testcases()`, those with data) is run
twice (geir/testing/onnx_conformance.py): at the graph level (import + the graph
interpreter, the dialect's numpy reference semantics) and at O3
(`geir.compile(..., opt_level=3, precision_mode="must_keep_origin_dtype")`, the lowered
program on the ascend interpreter), and compared with the outputs onnx ships at the
case's own rtol / atol, as onnx's backend test runner compares (a bfloat16 output at two ulp
at least). Each run ends as one of

    pass      the outputs match
    rejected  a GeirError: geir refuses the model with a clear message (grouped by reason,
              names and numbers stripped, so one missing feature is one line)
    mismatch  geir ran it and an output differs (shape, dtype or values)
    crash     any other exception: a geir bug
    timeout   longer than --timeout seconds (signal.alarm, per run)

and the tables give them per op type (the op a case tests: an `_expanded` case counts
for the op it expands) and in total, with the share of all cases that pass at O3.

`--write-sample FILE` (with `--freeze-inputs`, as the test runs them) writes the fixed
sample test/python/test_onnx_conformance.py holds to passing: the cases passing at both levels whose name hashes to 0 mod `--every`, plus
the first passing case of each op type the hash missed (so every op that passes is in it).

`--freeze-inputs` freezes a graph input geir needs constant (a reduction's axes, Split's
sizes) to the case's value of it (`geir.compile(..., freeze=...)`) instead of rejecting.

    python bench/onnx_coverage.py [--jobs 2] [--timeout 60] [--ops Cast,Shape] [--json out.json]
                                  [--freeze-inputs]
                                  [--write-sample test/python/onnx_conformance_sample.txt --every 5]
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import re
import sys
import time
import zlib

from geir.testing.onnx_conformance import LEVELS, STATUSES, conformance_cases, op_of, reason_of, run_level

# An "unsupported ONNX operator" error names each node as "node 'n' (OpType, opset N...)".
_UNSUPPORTED_OP = re.compile(r"node '[^']*' \((\w+), opset")

_CASES: list = []
_OPS: list = []


def _init_worker() -> None:
    global _CASES, _OPS
    _CASES = conformance_cases()
    by_name = {c.name: c for c in _CASES}
    _OPS = [op_of(c, by_name) for c in _CASES]


def run_case(index: int, timeout: int, freeze_inputs: bool) -> dict:
    case = _CASES[index]
    result = {"name": case.name, "op": _OPS[index]}
    for level in LEVELS:
        t0 = time.perf_counter()
        status, detail = run_level(level, case, timeout, freeze_inputs)
        result[level] = status
        result[f"{level}_detail"] = detail
        result[f"{level}_s"] = round(time.perf_counter() - t0, 3)
    return result


def _run_case_star(args) -> dict:
    return run_case(*args)


def run_all(indices: list[int], jobs: int, timeout: int, freeze_inputs: bool) -> list[dict]:
    work = [(i, timeout, freeze_inputs) for i in indices]
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
    unsupported = collections.Counter(
        op for r in results if r["O3"] == "rejected" and r["O3_detail"].startswith("unsupported ONNX operator")
        for op in set(_UNSUPPORTED_OP.findall(r["O3_detail"])))
    if unsupported:
        print(f"\nOp types geir does not convert, by the cases (at O3) naming them ({len(unsupported)} types):")
        print("    " + ", ".join(f"{op} {n}" for op, n in unsupported.most_common(30)))
    passed = sum(r["O3"] == "pass" for r in results)
    print(f"\nPass at O3: {passed} of {len(results)} cases = {100 * passed / max(len(results), 1):.1f}%")


def sample_of(results: list[dict], every: int) -> list[str]:
    """About one in `every` of the cases passing at both levels - chosen by a hash of the
    name, so a case that starts or stops passing moves no other case in or out - plus each
    passing op's first case."""
    passing = [r for r in results if r["graph"] == r["O3"] == "pass"]
    chosen = {r["name"] for r in passing if zlib.crc32(r["name"].encode()) % every == 0}
    covered = {r["op"] for r in passing if r["name"] in chosen}
    for r in passing:
        if r["op"] not in covered:
            chosen.add(r["name"])
            covered.add(r["op"])
    return [r["name"] for r in passing if r["name"] in chosen]


def write_sample(path: str, names: list[str], every: int, total: int) -> None:
    import onnx

    with open(path, "w") as f:
        f.write(f"# onnx {onnx.__version__} node conformance cases that pass at the graph level and at O3,\n"
                f"# checked by test/python/test_onnx_conformance.py. Written by\n"
                f"#   python bench/onnx_coverage.py --freeze-inputs --write-sample {path} --every {every}\n"
                f"# the passing cases whose name's crc32 is 0 mod {every}, plus the first passing case of "
                f"each op type: "
                f"{len(names)} of {total}.\n")
        f.writelines(f"{n}\n" for n in names)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per case and level")
    ap.add_argument("--ops", default="", help="comma-separated op types to run (default: all)")
    ap.add_argument("--top", type=int, default=40, help="op types listed one by one")
    ap.add_argument("--freeze-inputs", action="store_true",
                    help="freeze a graph input geir needs constant (axes, split) to the case's value, as "
                    "geir.compile(freeze=...) does")
    ap.add_argument("--json", default="", help="write the per-case results here")
    ap.add_argument("--write-sample", default="", help="write the test's fixed sample of passing cases here")
    ap.add_argument("--every", type=int, default=5, help="the sample's stride over the passing cases")
    args = ap.parse_args(argv)

    _init_worker()
    wanted = set(filter(None, args.ops.split(",")))
    indices = [i for i, op in enumerate(_OPS) if not wanted or op in wanted]
    t0 = time.perf_counter()
    results = run_all(indices, args.jobs, args.timeout, args.freeze_inputs)
    print(f"{len(results)} node conformance cases of onnx (opsets up to "
          f"{__import__('onnx').defs.onnx_opset_version()}) in {time.perf_counter() - t0:.0f} s")
    print_tables(results, args.top)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.write_sample:
        if wanted or not args.freeze_inputs:
            ap.error("--write-sample needs every case, run as the test runs them: drop --ops, give --freeze-inputs")
        write_sample(args.write_sample, sample_of(results, args.every), args.every, len(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
