"""Write a model with dynamic input dims, for the gear tests.

usage: make_dynamic_model.py OUT.onnx [--npy DIR] [--attention]

y[batch, seq, 16] = Relu(x[batch, seq, 32] @ w[32, 16] + b) + mask[batch, seq, 1]: `batch` and
`seq` are dim_params. --npy DIR saves x and mask at batch 2, seq 8 (x2.npy, m2.npy) and at
batch 3 (x3.npy, m3.npy), seeded. --attention writes a self-attention instead:
y[batch, 2, seq, 8] = softmax(x x^T / sqrt(8)) x.
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--npy")
    p.add_argument("--attention", action="store_true", help="a self-attention model instead")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    if args.attention:
        return _attention(args.out)
    w = numpy_helper.from_array(rng.standard_normal((32, 16)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"], name="mm"),
         helper.make_node("Add", ["xw", "b"], ["h"], name="bias"),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("Add", ["r", "mask"], ["y"], name="masked")],
        "dynamic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 32]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "seq", 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 16])],
        [w, b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="geir-test")
    onnx.checker.check_model(model)
    onnx.save(model, args.out)
    if args.npy:
        os.makedirs(args.npy, exist_ok=True)
        for batch in (2, 3):
            np.save(os.path.join(args.npy, f"x{batch}.npy"), rng.standard_normal((batch, 8, 32)).astype(np.float32))
            np.save(os.path.join(args.npy, f"m{batch}.npy"), rng.standard_normal((batch, 8, 1)).astype(np.float32))


def _attention(out: str) -> None:
    """Self-attention over x's heads (the form the recogniser makes graph.attention of)."""
    scale = numpy_helper.from_array(np.array(8 ** -0.5, np.float32), "scale")
    graph = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["kt"], perm=[0, 1, 3, 2], name="k_t"),
         helper.make_node("MatMul", ["x", "kt"], ["s"], name="scores"),
         helper.make_node("Mul", ["s", "scale"], ["ss"], name="scaled"),
         helper.make_node("Softmax", ["ss"], ["p"], axis=-1, name="softmax"),
         helper.make_node("MatMul", ["p", "x"], ["y"], name="pv")],
        "attention",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, "seq", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2, "seq", 8])],
        [scale],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="geir-test")
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main()
