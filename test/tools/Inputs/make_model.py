"""Write a small ONNX model for the tool tests.

usage: make_model.py OUT.onnx [--kind small|unsupported] [--input-npy FILE.npy] [--external-data FILE]

small:        x[1,3,8,8] -> Conv(+bias, weights of 216 floats) -> Relu -> GlobalAveragePool
              -> Flatten -> Gemm -> Softmax -> y[1,5]; node names "conv1", "relu1", ...
unsupported:  one node of an op type geir does not import.
--input-npy:  also save a seeded value for x.
--external-data: keep every initializer in FILE (beside OUT), not in the model.
"""

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def small() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.2, "conv1.w")
    b = numpy_helper.from_array(np.linspace(-0.1, 0.1, 8, dtype=np.float32), "conv1.b")
    fw = numpy_helper.from_array(rng.standard_normal((5, 8)).astype(np.float32), "fc.w")
    fb = numpy_helper.from_array(np.zeros(5, np.float32), "fc.b")
    nodes = [
        helper.make_node("Conv", ["x", "conv1.w", "conv1.b"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["g"], name="fc", transB=1),
        helper.make_node("Softmax", ["g"], ["y"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        [w, b, fw, fb],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="geir-test")


def unsupported() -> onnx.ModelProto:
    node = helper.make_node("Det", ["x"], ["y"], name="det")
    graph = helper.make_graph(
        [node],
        "unsupported",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--kind", choices=("small", "unsupported"), default="small")
    p.add_argument("--input-npy")
    p.add_argument("--external-data", metavar="FILE")
    args = p.parse_args()
    model = {"small": small, "unsupported": unsupported}[args.kind]()
    onnx.checker.check_model(model)
    if args.external_data:
        onnx.save(model, args.out, save_as_external_data=True, location=args.external_data, size_threshold=0)
    else:
        onnx.save(model, args.out)
    if args.input_npy:
        np.save(args.input_npy, np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32))


if __name__ == "__main__":
    main()
