"""Models the tools run by default: the `light` models shipped inside the onnx package.

The light models keep their architecture but store (almost) every weight as a
`ConstantOfShape` node filled with 0.02, so their outputs are nearly uniform.
`randomize_light_weights` turns those nodes into seeded random initializers,
scaled by the role of the tensor, so that runs give informative, finite outputs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import onnx
from onnx import helper, numpy_helper

DEFAULT_MODEL = "light_resnet50"


def light_model_path(name: str = DEFAULT_MODEL) -> str:
    """Path of a light model (`light_resnet50`, `light_vgg19`, ...) in the onnx package."""
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", f"{name}.onnx")


def load_light_model(name: str = DEFAULT_MODEL, seed: int = 0) -> onnx.ModelProto:
    return randomize_light_weights(onnx.load(light_model_path(name)), seed)


# Ops whose output is the same tensor seen through another shape: the role of a
# weight is decided by the op that finally consumes it.
_PASS_THROUGH = {"Unsqueeze", "Reshape", "Squeeze", "Identity", "Flatten", "Cast"}


def randomize_light_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """A copy of `model` whose constant-shape `ConstantOfShape` nodes of a float
    type become initializers with seeded random values:

    * conv / gemm / matmul weights: normal / sqrt(fan_in) (activations stay O(1)
      through light_resnet50: its softmax peaks near 0.4, not at 1.0),
    * batch-norm scale and variance: uniform(0.5, 1.5) (variance stays positive),
    * batch-norm mean, biases and added tensors: normal * 0.05,
    * multiplied tensors (scales): uniform(0.5, 1.5).
    """
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    rng = np.random.default_rng(seed)
    consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    consts.update(_constant_nodes(graph))
    consumers = _consumers(graph)

    keep: list[onnx.NodeProto] = []
    added: list[tuple[str, np.ndarray]] = []
    for node in graph.node:
        shape = consts.get(node.input[0]) if node.op_type == "ConstantOfShape" and node.input else None
        dtype = _fill_dtype(node)
        if shape is None or dtype is None or not np.issubdtype(dtype, np.floating):
            keep.append(node)
            continue
        shape = tuple(int(d) for d in np.asarray(shape).reshape(-1))
        role = _role(node.output[0], consumers)
        values = _random(rng, role, shape).astype(dtype, copy=False)
        added.append((node.output[0], values))

    del graph.node[:]
    graph.node.extend(keep)
    for name, values in added:  # built in place: extending with made protos copies every byte again
        t = graph.initializer.add()
        t.name, t.data_type = name, helper.np_dtype_to_tensor_dtype(values.dtype)
        t.dims.extend(values.shape)
        t.raw_data = values.tobytes()
    _drop_unused_initializers(graph)
    if model.ir_version < 4:  # before IR 4 every initializer is also a graph input
        graph.input.extend(
            helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(values.dtype), list(values.shape))
            for name, values in added
        )
    return model


def _constant_nodes(graph: onnx.GraphProto) -> Iterator[tuple[str, np.ndarray]]:
    for node in graph.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    yield node.output[0], numpy_helper.to_array(a.t)


def _fill_dtype(node: onnx.NodeProto) -> np.dtype | None:
    for a in node.attribute:
        if a.name == "value":
            return numpy_helper.to_array(a.t).dtype
    return np.dtype(np.float32)  # ONNX default: float 0.0


def _consumers(graph: onnx.GraphProto) -> dict[str, list[tuple[onnx.NodeProto, int]]]:
    out: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node in graph.node:
        for i, name in enumerate(node.input):
            out.setdefault(name, []).append((node, i))
    return out


def _role(name: str, consumers, depth: int = 0) -> str:
    """How a tensor is used, from its first consumer (seen through reshapes):
    `weight` ([M, C, *K] or [N, K]), `weight_kn` ([K, N]), `scale`, `var` or `shift`."""
    for node, index in consumers.get(name, []):
        op = node.op_type
        if op in _PASS_THROUGH and index == 0 and depth < 4:
            return _role(node.output[0], consumers, depth + 1)
        if op in ("Conv", "ConvTranspose") and index == 1:
            return "weight"
        if op == "Gemm" and index == 1:
            trans_b = any(a.name == "transB" and a.i for a in node.attribute)
            return "weight" if trans_b else "weight_kn"
        if op == "MatMul" and index == 1:
            return "weight_kn"
        if op == "BatchNormalization":
            return {1: "scale", 4: "var"}.get(index, "shift")
        if op == "Mul":
            return "scale"
        return "shift"
    return "shift"


def _random(rng: np.random.Generator, role: str, shape: tuple[int, ...]) -> np.ndarray:
    # scaled in place (the same float64 values as a product, without a second 1 GB array:
    # VGG-19 has 143M weights); the draws stay those every figure was measured with
    if role.startswith("weight") and len(shape) >= 2:
        fan_in = shape[-2] if role == "weight_kn" else int(np.prod(shape[1:]))
        x = rng.standard_normal(shape)
        x *= np.sqrt(1.0 / max(fan_in, 1))
        return x
    if role in ("scale", "var"):
        return rng.uniform(0.5, 1.5, shape)
    x = rng.standard_normal(shape)
    x *= 0.05
    return x


def _drop_unused_initializers(graph: onnx.GraphProto) -> None:
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    unused = {t.name for t in graph.initializer if t.name not in used}
    if not unused:
        return
    for field in (graph.initializer, graph.input):  # deleted in place: a copy moves every weight byte
        for i in reversed([i for i, t in enumerate(field) if t.name in unused]):
            del field[i]
