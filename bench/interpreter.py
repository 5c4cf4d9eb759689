"""Interpreter speed: wall time of ascend-level execution beside onnxruntime's.

For each model: compile at O2 (one stream), run the lowered program on the
ascend interpreter (per tile, real buffers per memory space) and onnxruntime
single-threaded on the same inputs, in this one run; prints both and the ratio.

`first s` is the first run, which also translates each kernel to Python once
(runtime/ascend_compiled.py); `geir s` the best of the `--repeat` runs after it,
the figure the ratio uses (onnxruntime's session creation is not timed either).
`--xdsl` adds the same program run op by op on xDSL's interpreter. `--overflow`
adds the best run with the overflow check on (runtime/overflow.py, as geir-run and
the report run) and its cost over `geir s`. `index MB`: the im2col index arrays the
compiled kernels hold after the runs (each load3d geometry's gathers, freed with
the program).

    python bench/interpreter.py [--models light_resnet50,light_squeezenet] [--repeat 3] [--xdsl] [--overflow]
"""

from __future__ import annotations

import argparse
import time

import geir
from geir.runtime.ascend_compiled import held_bytes
from geir.runtime.ascend_interpreter import run_ascend_module
from geir.testing.suite import LIGHT_MODELS, light_model


def _session(model):
    """onnxruntime single-threaded, default optimisations (its real speed)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def best_of(fn, repeat: int) -> float:
    return min(timed(fn) for _ in range(max(repeat, 1)))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(LIGHT_MODELS))
    ap.add_argument("--repeat", type=int, default=3, help="timed runs after the first (the best is reported)")
    ap.add_argument("--xdsl", action="store_true", help="also time the op-by-op run on xDSL's interpreter")
    ap.add_argument("--overflow", action="store_true", help="also time runs with the overflow check")
    args = ap.parse_args(argv)
    xdsl = f"{'xdsl s':>9}" if args.xdsl else ""
    overflow = f"{'overflow s':>11}{'cost':>7}" if args.overflow else ""
    print(f"{'model':<22}{'first s':>9}{'geir s':>9}{overflow}{xdsl}{'onnxruntime s':>15}{'ratio':>8}{'index MB':>10}")
    for name in args.models.split(","):
        model = light_model(name)
        compiled = geir.compile(model, opt_level=2, streams=1)
        feeds = compiled.random_inputs(seed=0)
        first = timed(lambda: compiled.run(feeds))
        ours = best_of(lambda: compiled.run(feeds), args.repeat)
        held = held_bytes(compiled.module) / 1e6
        if args.overflow:  # runs without and with the check alternate: a busy machine slows both alike
            plain, checked = [], []
            for _ in range(max(args.repeat, 1)):
                plain.append(timed(lambda: compiled.run(feeds)))
                checked.append(timed(lambda: run_ascend_module(compiled.module, feeds, overflow=[])))
            ours = min(ours, *plain)
            overflow = f"{min(checked):>11.3f}{100 * (min(checked) / ours - 1):>+6.1f}%"
        if args.xdsl:
            slow = timed(lambda: run_ascend_module(compiled.module, feeds, compiled=False))
            xdsl = f"{slow:>9.3f}"
        session = _session(model)  # created once: session creation is not execution
        session.run(None, feeds)  # warm-up
        theirs = best_of(lambda: session.run(None, feeds), max(args.repeat, 3))
        print(f"{name:<22}{first:>9.3f}{ours:>9.3f}{overflow}{xdsl}{theirs:>15.4f}{ours / theirs:>7.0f}x{held:>10.1f}")


if __name__ == "__main__":
    main()
