"""Compare the outputs saved by geir-run with onnxruntime's.

usage: compare_ort.py MODEL.onnx OUTPUTS.npz NAME=INPUT.npy...
"""

import sys

import numpy as np
import onnxruntime as ort

model, saved = sys.argv[1], np.load(sys.argv[2])
feeds = {k: np.load(v) for k, v in (a.split("=", 1) for a in sys.argv[3:])}
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
names = [o.name for o in session.get_outputs()]
failed = False
for name, want in zip(names, session.run(None, feeds)):
    ok = np.allclose(saved[name], want, rtol=1e-4, atol=1e-5)
    print(f"{name}: {'matches' if ok else 'DIFFERS from'} onnxruntime")
    failed |= not ok
sys.exit(failed)
