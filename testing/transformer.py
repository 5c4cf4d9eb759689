"""PyTorch transformer blocks exported with the TorchScript ONNX exporter.

The TorchScript exporter is what most deployed ONNX files come from: it
decomposes LayerNorm (opset < 17) into ReduceMean/Sub/Pow/Sqrt/Div, computes
reshape targets with Shape/Gather/Concat and leaves Identity/Dropout behind,
which is exactly the work graph simplification and fusion must remove.
torch is imported lazily; it is part of the test extra.
"""

from __future__ import annotations

import io
import warnings
from functools import cache

import onnx


def _block_class():
    import torch

    class Block(torch.nn.Module):
        """Post-norm encoder block: MHA + residual + LN, GELU MLP + residual + LN."""

        def __init__(self, d_model: int, heads: int):
            super().__init__()
            self.attn = torch.nn.MultiheadAttention(d_model, heads, batch_first=True)
            self.ln1 = torch.nn.LayerNorm(d_model)
            self.ln2 = torch.nn.LayerNorm(d_model)
            self.ff = torch.nn.Sequential(
                torch.nn.Linear(d_model, 4 * d_model), torch.nn.GELU(), torch.nn.Linear(4 * d_model, d_model)
            )

        def forward(self, x):
            a, _ = self.attn(x, x, x, need_weights=False)
            x = self.ln1(x + a)
            return self.ln2(x + self.ff(x))

    return Block


def block_reference(d_model: int, heads: int, seed: int = 0):
    """The torch Block (`_block_class`) with seeded weights, in eval mode: the reference of
    geir.models.transformer_block, whose weights take its state dict's names."""
    import torch

    torch.manual_seed(seed)
    return _block_class()(d_model, heads).eval()


def dynamic_block_onnx(d_model: int, heads: int, seed: int = 0) -> bytes:
    """`block_reference` exported by torch's dynamo exporter with dynamic batch and sequence
    axes (`batch`, `seq`). The TorchScript exporter bakes nn.MultiheadAttention's sequence
    length into a Reshape, so only this export keeps the sequence dynamic."""
    import torch

    batch, seq = torch.export.Dim("batch", min=1, max=64), torch.export.Dim("seq", min=2, max=4096)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(block_reference(d_model, heads, seed), (torch.randn(2, 16, d_model),),
                                    dynamo=True, input_names=["x"], output_names=["y"],
                                    dynamic_shapes=({0: batch, 1: seq},), verbose=False)
    return program.model_proto.SerializeToString()


@cache
def transformer_onnx(
    layers: int = 1, d_model: int = 64, heads: int = 4, seq: int = 16, batch: int = 1, opset: int = 14, seed: int = 0
) -> onnx.ModelProto:
    """A stack of `layers` blocks exported with the TorchScript exporter."""
    import torch

    torch.manual_seed(seed)
    block = _block_class()
    model = torch.nn.Sequential(*[block(d_model, heads) for _ in range(layers)]).eval()
    x = torch.randn(batch, seq, d_model)
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), f, dynamo=False, opset_version=opset, input_names=["x"], output_names=["y"])
    return onnx.load_from_string(f.getvalue())


def block_onnx(batch: int, seq: int, hidden: int, heads: int, ffn: int | None = None, layers: int = 1,
               seed: int = 0, opset: int = 17, weights_file: str | None = None) -> onnx.ModelProto:
    """The seed's TransformerBlock (the same math as `_block_class`: post-LN multi-head
    attention with a fused QKV projection, a GELU MLP of `ffn` = 4 x hidden) written
    directly as ONNX nodes, for any size: the TorchScript exporter runs the model on an
    example input, which at batch 32, sequence 2048, hidden 4096 takes minutes and tens of
    GB (the score matrices). Weights are seeded normal / sqrt(fan_in) float32.

    `weights_file`: the matrices go to that file as ONNX external data (save the model in
    the same directory), so models past protobuf's 2 GB limit (hidden 8192) can be built."""
    import os

    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    if hidden % heads:
        raise ValueError(f"{heads} heads do not divide hidden {hidden}")
    ffn = ffn or 4 * hidden
    dh = hidden // heads
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    sink = open(weights_file, "wb") if weights_file else None  # noqa: SIM115 - closed below

    def weight(name: str, shape: tuple[int, ...], fan_in: int | None = None) -> str:
        scale = 1.0 / np.sqrt(fan_in) if fan_in else 0.02
        values = rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)
        if sink is None or values.size < 4096:
            inits.append(numpy_helper.from_array(values, name))
            return name
        t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=shape)
        offset = sink.tell()
        values.tofile(sink)
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", os.path.basename(weights_file)), ("offset", offset),
                           ("length", values.nbytes)):
            t.external_data.add(key=key, value=str(value))
        inits.append(t)
        return name

    def const(name: str, values) -> str:
        inits.append(numpy_helper.from_array(np.asarray(values), name))
        return name

    def node(op: str, ins: list[str], name: str, **attrs) -> str:
        nodes.append(helper.make_node(op, ins, [name], name=name, **attrs))
        return name

    split = const("qkv_split", np.array([hidden] * 3, dtype=np.int64))
    heads_shape = const("heads_shape", np.array([batch, seq, heads, dh], dtype=np.int64))
    merged_shape = const("merged_shape", np.array([batch, seq, hidden], dtype=np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(dh), dtype=np.float32))
    half, one, rsqrt2 = (const(n, np.array(v, dtype=np.float32)) for n, v in
                         (("half", 0.5), ("one", 1.0), ("rsqrt2", 1.0 / np.sqrt(2.0))))
    x = "x"
    for i in range(layers):
        p = f"l{i}"

        def linear(v: str, n_in: int, n_out: int, name: str) -> str:
            y = node("MatMul", [v, weight(f"{p}.{name}.w", (n_in, n_out), n_in)], f"{p}/{name}")
            return node("Add", [y, weight(f"{p}.{name}.b", (n_out,))], f"{p}/{name}_bias")

        def layer_norm(v: str, name: str) -> str:
            g = const(f"{p}.{name}.g", np.ones(hidden, dtype=np.float32))
            b = const(f"{p}.{name}.b", np.zeros(hidden, dtype=np.float32))
            return node("LayerNormalization", [v, g, b], f"{p}/{name}", axis=-1, epsilon=1e-5)

        qkv = linear(x, hidden, 3 * hidden, "qkv")
        nodes.append(helper.make_node("Split", [qkv, split], [f"{p}/q", f"{p}/k", f"{p}/v"], name=f"{p}/split", axis=-1))
        q, k, v = (node("Reshape", [f"{p}/{n}", heads_shape], f"{p}/{n}_heads") for n in "qkv")
        q = node("Transpose", [q], f"{p}/q_t", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], f"{p}/k_t", perm=[0, 2, 3, 1])
        v = node("Transpose", [v], f"{p}/v_t", perm=[0, 2, 1, 3])
        s = node("Mul", [node("MatMul", [q, k], f"{p}/scores"), scale], f"{p}/scaled")
        a = node("MatMul", [node("Softmax", [s], f"{p}/softmax", axis=-1), v], f"{p}/context")
        a = node("Reshape", [node("Transpose", [a], f"{p}/merge", perm=[0, 2, 1, 3]), merged_shape], f"{p}/merged")
        x1 = layer_norm(node("Add", [x, linear(a, hidden, hidden, "out")], f"{p}/residual1"), "ln1")
        h = linear(x1, hidden, ffn, "ff1")
        erf = node("Erf", [node("Mul", [h, rsqrt2], f"{p}/gelu_scaled")], f"{p}/gelu_erf")
        h = node("Mul", [node("Mul", [h, node("Add", [erf, one], f"{p}/gelu_1p")], f"{p}/gelu_mul"), half], f"{p}/gelu")
        x = layer_norm(node("Add", [x1, linear(h, ffn, hidden, "ff2")], f"{p}/residual2"), "ln2")
    if sink is not None:
        sink.close()
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(
        nodes, "transformer_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, seq, hidden])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
