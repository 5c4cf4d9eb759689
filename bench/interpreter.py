"""Interpreter speed: wall time of ascend-level execution beside onnxruntime's.

For each model: compile at O2 (one stream), run the lowered program on the
ascend interpreter (per tile, real buffers per memory space) and onnxruntime
single-threaded on the same inputs, in this one run; prints both and the ratio.

    python bench/interpreter.py [--models light_resnet50,light_squeezenet] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import geir
from geir.testing.suite import LIGHT_MODELS, light_model


def _session(model):
    """onnxruntime single-threaded, default optimisations (its real speed)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(LIGHT_MODELS))
    ap.add_argument("--repeat", type=int, default=1, help="runs per model (the best is reported)")
    args = ap.parse_args(argv)
    print(f"{'model':<22}{'geir ascend s':>14}{'onnxruntime s':>15}{'ratio':>9}")
    for name in args.models.split(","):
        model = light_model(name)
        compiled = geir.compile(model, opt_level=2, streams=1)
        feeds = compiled.random_inputs(seed=0)
        ours = best_of(lambda: compiled.run(feeds), args.repeat)
        session = _session(model)  # created once: session creation is not execution
        session.run(None, feeds)  # warm-up
        theirs = best_of(lambda: session.run(None, feeds), max(args.repeat, 3))
        print(f"{name:<22}{ours:>14.3f}{theirs:>15.4f}{ours / theirs:>9.0f}x")


if __name__ == "__main__":
    main()
