"""The compile cache (driver/compile_cache.py), measured as users meet it: each model is
compiled by a fresh process with an empty cache directory (an ONNX model from its .onnx file,
as geir-compile takes it), then by a second fresh process
with the entry the first one wrote. Both are timed inside the process, from the call to
`geir.compile` to its return, so interpreter start-up and imports are not counted. The
script prints the two times, the second over the first, and the second's split between the
import (done only where the key is computed from the imported graph: not for an .onnx file
or a torch module that torch.jit can trace, which are keyed before import) and the key + load. The two programs' outputs on the same
input must be equal.

    python bench/compile_cache.py [--models light_resnet50,light_squeezenet,torch:resnet] [-O 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
import numpy as np
import geir
spec, cache, opt = sys.argv[1], sys.argv[2], int(sys.argv[3])
if spec.startswith("torch:"):
    from geir.testing.torch_models import torch_model
    model, inputs = torch_model(spec[6:])
    kwargs = {"example_inputs": inputs}
else:  # an .onnx file the parent wrote (the suite's models get their random weights in memory)
    model, kwargs = spec, {}
t0 = time.perf_counter()
cm = geir.compile(model, opt_level=opt, cache_dir=cache, **kwargs)
seconds = time.perf_counter() - t0
out = cm.run(cm.random_inputs(seed=0))
print(json.dumps({"seconds": seconds, "hit": cm.cache_hit, "stages": cm.compile_seconds,
                  "checksum": [float(np.asarray(v, np.float64).sum()) for v in out.values()]}))
"""


def run(spec: str, cache: str, opt: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, spec, cache, str(opt)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="light_resnet50,light_squeezenet,torch:resnet,torch:llama")
    p.add_argument("-O", dest="opt_level", type=int, default=3)
    args = p.parse_args()
    print("| model | first compile s | second (cache hit) s | second / first | of which import s | key + load s |")
    print("|---|---|---|---|---|---|")
    for spec in args.models.split(","):
        with tempfile.TemporaryDirectory() as cache:
            source = spec
            if not spec.startswith("torch:"):
                import onnx

                from geir.testing.models import load_light_model

                source = f"{cache}/{spec}.onnx"
                onnx.save(load_light_model(spec), source)
            cold = run(source, cache, args.opt_level)
            warm = run(source, cache, args.opt_level)
        assert not cold["hit"] and warm["hit"], (cold["hit"], warm["hit"])
        assert cold["checksum"] == warm["checksum"], "the cached program computes something else"
        imported = sum(v for k, v in warm["stages"].items() if k != "cached")
        print(f"| {spec} | {cold['seconds']:.2f} | {warm['seconds']:.2f} | {warm['seconds'] / cold['seconds']:.1%} | "
              f"{imported:.2f} | {warm['stages']['cached']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
