"""Write a model whose one MatMul overflows in f16, for the overflow tests.

usage: make_overflow_model.py OUT.onnx [--dtype f16|f32] [--input-npy FILE.npy]

y[16, 16] = MatMul(x[16, 1024], w[1024, 16]) with w = 300 everywhere, one unnamed node (the
importer calls it "MatMul:y"). --input-npy saves x = 300 everywhere: each y is 300 * 300 *
1024 = 9.2e7, past f16's finite max (65504) and well inside f32's.
"""

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

K = 1024


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--dtype", choices=("f16", "f32"), default="f16")
    p.add_argument("--input-npy")
    args = p.parse_args()
    dtype, elem = (np.float16, TensorProto.FLOAT16) if args.dtype == "f16" else (np.float32, TensorProto.FLOAT)
    w = numpy_helper.from_array(np.full((K, 16), 300, dtype), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "overflow",
        [helper.make_tensor_value_info("x", elem, [16, K])],
        [helper.make_tensor_value_info("y", elem, [16, 16])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="geir-test")
    onnx.checker.check_model(model)
    onnx.save(model, args.out)
    if args.input_npy:
        np.save(args.input_npy, np.full((16, K), 300, dtype))


if __name__ == "__main__":
    main()
