"""A differential fuzzing campaign: random valid ONNX models through every stage of geir at
O0..O3, each tensor compared with onnxruntime (testing/fuzz.py makes the models,
testing/differential.py is the oracle).

Model i is generate_seeded(seed + i), so any finding is reproduced by its seed alone. Prints
models run, mismatches, crashes, hangs (a model over --timeout seconds), rejections by
reason, the op kinds covered, and models per second. Each finding is shrunk (the divergent
node alone, or the fewest nodes that still mismatch) and saved under --save as a backend
test case (model.onnx + test_data_set_0/) for a regression test.

    python bench/fuzz.py [--models 10000] [--seed 0] [--jobs 2] [--levels 0,1,2,3]
                         [--max-nodes 8] [--fp16] [--save DIR] [--timeout 120] [--ascend N]

`--fp16` adds force_fp16 at O3, judged by the SIMILAR tier. `--ascend N` then runs N random
ascend programs through the race and memory-plan checkers with every mutation
(testing/fuzz_ascend.py, docs/fuzzing-ascend.md). Exit status 1 if anything was found. The CI
tests run bounded campaigns of the same code (test/python/test_fuzz.py, test_fuzz_ascend.py).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import signal
import sys
import time
from collections import Counter

import numpy as np

from geir.testing.differential import FP32, check, shrink
from geir.testing.fuzz import generate_seeded


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001 - signal handler signature
    raise _Timeout()


def run_one(args: tuple[int, tuple[int, ...], tuple[str, ...], str | None, int, int]) -> dict:
    """Generate model `seed`, check it, shrink and save what it finds."""
    seed, levels, precisions, save, timeout, max_nodes = args
    fm = generate_seeded(seed, max_nodes, exact_inputs=FP32 in precisions)
    out = {"seed": seed, "ops": fm.ops, "findings": []}
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        with np.errstate(all="ignore"):
            found = check(fm.model, fm.feeds, levels, precisions)
    except _Timeout:
        out["findings"].append(("hang", f"over {timeout} s"))
        return out
    except Exception as e:  # noqa: BLE001 - the oracle itself failed: count it as a crash
        out["findings"].append(("crash", f"oracle: {type(e).__name__}: {e}"))
        return out
    finally:
        signal.alarm(0)
    for f in found:
        out["findings"].append((f.kind, str(f) if f.kind != "rejected" else f.reason))
    bad = next((f for f in found if f.kind in ("mismatch", "crash")), None)
    if bad is not None and save:
        model, feeds = shrink(fm.model, fm.feeds, bad)
        from geir.testing.fuzz import FuzzModel

        FuzzModel(model, feeds, []).save(os.path.join(save, f"seed{seed}"))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--levels", default="0,1,2,3")
    p.add_argument("--fp16", action="store_true", help="also force_fp16 at O3 (SIMILAR tier)")
    p.add_argument("--save", default=None, help="directory for the shrunk findings")
    p.add_argument("--timeout", type=int, default=120)
    p.add_argument("--max-nodes", type=int, default=8)
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--ascend", type=int, default=0, metavar="N", help="also N random ascend programs")
    a = p.parse_args(argv)
    levels = tuple(int(x) for x in a.levels.split(","))
    work = [(a.seed + i, levels, (FP32,), a.save, a.timeout, a.max_nodes) for i in range(a.models)]
    if a.fp16:
        work += [(a.seed + i, (3,), ("force_fp16",), a.save, a.timeout, a.max_nodes) for i in range(a.models)]
    t0 = time.perf_counter()
    kinds: Counter = Counter()
    ops: Counter = Counter()
    rejected: Counter = Counter()
    findings: list[tuple[int, str, str]] = []
    with mp.Pool(a.jobs) if a.jobs > 1 else _Serial() as pool:
        for n, r in enumerate(pool.imap_unordered(run_one, work, chunksize=4), 1):
            ops.update(r["ops"])
            for kind, text in r["findings"]:
                kinds[kind] += 1
                if kind == "rejected":
                    rejected[text] += 1
                else:
                    findings.append((r["seed"], kind, text))
                    if not a.quiet:
                        print(f"seed {r['seed']}: {text}", flush=True)
            if not a.quiet and n % 100 == 0:
                print(f"... {n} runs, {time.perf_counter() - t0:.0f} s, {dict(kinds)}", flush=True)
    seconds = time.perf_counter() - t0
    print(f"\nmodels: {a.models} (seeds {a.seed}..{a.seed + a.models - 1}), levels O{',O'.join(map(str, levels))}"
          f"{' + force_fp16 at O3' if a.fp16 else ''}; {seconds:.0f} s, {len(work) / seconds:.2f} runs/s on {a.jobs} job(s)")
    for kind in ("mismatch", "crash", "hang", "rejected"):
        print(f"  {kind:9s} {kinds[kind]}")
    for text, n in rejected.most_common():
        print(f"    rejected x{n}: {text}")
    print(f"op kinds covered: {len(ops)}")
    print("  " + ", ".join(f"{op} {n}" for op, n in sorted(ops.items())))
    if findings:
        print("\nfindings:")
        for seed, kind, text in sorted(findings):
            print(f"  seed {seed} ({kind}): {text}")
    bad = bool(findings)
    if a.ascend:
        bad |= _ascend_campaign(a.ascend, a.seed)
    return 1 if bad else 0


def _ascend_campaign(n: int, seed: int) -> bool:
    """The ascend-level campaign's counts; whether it found anything."""
    from geir.testing.fuzz_ascend import run_campaign

    r = run_campaign(n, seed)
    print(f"\nascend programs: {r['programs']} ({r['kernels']} kernels), {r['seconds']:.0f} s, "
          f"{r['programs_per_s']:.1f} programs/s")
    for key in ("mismatches", "unexpected_races", "bound_violations", "plan_check_failures", "crashes",
                "mutations_caught", "mutations_missed", "redundant_flags", "aliasings_accepted"):
        print(f"  {key:20s} {r[key]}")
    print("  caught by family: " + ", ".join(f"{k} {v}" for k, v in r["caught_by_family"].items()))
    print("  op kinds: " + ", ".join(f"{k} {v}" for k, v in r["op_kinds"].items()))
    for o in r["failures"]:
        print(f"  failure: {o}")
    return bool(r["failures"])


class _Serial:
    """multiprocessing.Pool's imap_unordered, in this process."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def imap_unordered(self, fn, items, chunksize=1):  # noqa: ARG002
        return map(fn, items)


if __name__ == "__main__":
    sys.exit(main())
