"""Rotary position embedding: graph.rotary_embedding from both PyTorch exporters' rotate_half
(and GPT-J's interleaved form), and from ONNX's RotaryEmbedding op, computed by the row
template's rule against torch / onnx's reference."""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import geir
from geir.dialects import graph as g
from geir.lowering.graph_to_ascend import fallback_ops
from geir.reference.graph import rotary_embedding
from geir.testing.suite import assert_matches

torch = pytest.importorskip("torch")


def _rope_module(interleaved: bool):
    class Rope(torch.nn.Module):
        """q * cos + rotate(q) * sin, as HF LLaMA (rotate_half) and GPT-J (rotate_every_two)."""

        def forward(self, q, cos, sin):
            if interleaved:
                rot = torch.stack((-q[..., 1::2], q[..., 0::2]), dim=-1).flatten(-2)
            else:
                half = q.shape[-1] // 2
                rot = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
            return q * cos + rot * sin

    return Rope()


def _export(module, args, dynamo: bool) -> onnx.ModelProto:
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            program = torch.onnx.export(module, args, dynamo=True, opset_version=18, verbose=False)
            return program.model_proto
        torch.onnx.export(module, args, f, dynamo=False, opset_version=17)
    return onnx.load_from_string(f.getvalue())


def _angles(seq: int, dim: int, interleaved: bool) -> tuple[np.ndarray, np.ndarray]:
    inv = 1.0 / 10000 ** (np.arange(0, dim, 2) / dim)
    freqs = np.outer(np.arange(seq), inv)
    wide = np.repeat(freqs, 2, axis=-1) if interleaved else np.concatenate([freqs, freqs], -1)
    return np.cos(wide).astype(np.float32), np.sin(wide).astype(np.float32)


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
@pytest.mark.parametrize("interleaved", [False, True], ids=["halves", "interleaved"])
def test_exported_rotation_is_one_op_and_matches_torch(interleaved, dynamo):
    q = torch.randn(2, 4, 24, 64)
    cos, sin = (torch.from_numpy(a) for a in _angles(24, 64, interleaved))
    module = _rope_module(interleaved)
    model = _export(module, (q, cos, sin), dynamo)
    expected = module(q, cos, sin).numpy()
    feeds = {i.name: v.numpy() for i, v in zip(model.graph.input, (q, cos, sin))}
    for mode in ("must_keep_origin_dtype", "force_fp16"):
        cm = geir.compile(model, opt_level=3, precision_mode=mode)
        (out,) = cm.run(feeds).values()
        assert_matches(out, expected, mode, mode)
        graph_ops = [op for op in cm.graph_module().walk() if isinstance(op, g.GraphOp)]
        assert any(isinstance(op, g.RotaryEmbeddingOp) for op in graph_ops)
        assert not any(isinstance(op, (g.SliceOp, g.NegOp, g.ConcatOp)) for op in graph_ops)
        # halves: the row template's rule; interleaved: its own reference kernel
        assert (fallback_ops(cm.module) == []) != interleaved, fallback_ops(cm.module)


def _onnx_rotary(x_shape, cache_shape, *, interleaved=0, rotary_dim=0, heads=0, positions=None):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
              helper.make_tensor_value_info("cos", TensorProto.FLOAT, cache_shape),
              helper.make_tensor_value_info("sin", TensorProto.FLOAT, cache_shape)]
    names = ["x", "cos", "sin"]
    if positions is not None:
        inputs.append(helper.make_tensor_value_info("pos", TensorProto.INT64, positions))
        names.append("pos")
    node = helper.make_node("RotaryEmbedding", names, ["y"], name="rope", interleaved=interleaved,
                            rotary_embedding_dim=rotary_dim, num_heads=heads)
    graph = helper.make_graph([node], "rope", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, x_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


@pytest.mark.parametrize("case", [
    dict(x_shape=[2, 4, 8, 64], cache_shape=[16, 32], positions=[2, 8]),                  # 4-D, gathered
    dict(x_shape=[2, 8, 4 * 32], cache_shape=[2, 8, 16], heads=4),                          # 3-D, per-token caches
    dict(x_shape=[1, 2, 8, 64], cache_shape=[8, 16], positions=[1, 8], rotary_dim=32),     # partial rotation
    dict(x_shape=[1, 2, 8, 64], cache_shape=[8, 32], positions=[1, 8], interleaved=1),     # interleaved
], ids=["gathered", "3d", "partial", "interleaved"])
def test_onnx_rotary_embedding_matches_onnx_reference(case):
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(0)
    model = _onnx_rotary(**case)
    feeds = {"x": rng.standard_normal(case["x_shape"]).astype(np.float32),
             "cos": rng.standard_normal(case["cache_shape"]).astype(np.float32),
             "sin": rng.standard_normal(case["cache_shape"]).astype(np.float32)}
    if "positions" in case:
        feeds["pos"] = rng.integers(0, case["cache_shape"][0], case["positions"]).astype(np.int64)
    (expected,) = ReferenceEvaluator(model).run(None, feeds)
    out = geir.compile(model, opt_level=3, precision_mode="must_keep_origin_dtype").run(feeds)["y"]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs, message", [
    (dict(x_shape=[2, 8, 128], cache_shape=[8, 64]), "a 3-D input needs num_heads"),
    (dict(x_shape=[1, 2, 8, 64], cache_shape=[8, 30], positions=[1, 8]), "not rotary_embedding_dim / 2 = 32"),
    (dict(x_shape=[1, 2, 8, 64], cache_shape=[8, 32], positions=[1, 8], rotary_dim=65), "must be even"),
])
def test_onnx_rotary_embedding_errors_name_the_node(attrs, message):
    with pytest.raises(geir.errors.GeirError, match=message) as e:
        geir.compile(_onnx_rotary(**attrs))
    assert "'rope'" in str(e.value) and "RotaryEmbedding" in str(e.value)


def test_reference_is_the_complex_rotation():
    """Both forms rotate each (x1, x2) pair by its angle, as a complex product does."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 16)).astype(np.float64)
    theta = rng.standard_normal((3, 8))
    for interleaved in (0, 1):
        if interleaved:
            z = x[:, 0::2] + 1j * x[:, 1::2]
            wide = np.repeat(theta, 2, axis=-1)
        else:
            z = x[:, :8] + 1j * x[:, 8:]
            wide = np.concatenate([theta, theta], -1)
        r = z * np.exp(1j * theta)
        y = rotary_embedding(x, np.cos(wide), np.sin(wide), interleaved=interleaved)
        got = y[:, 0::2] + 1j * y[:, 1::2] if interleaved else y[:, :8] + 1j * y[:, 8:]
        np.testing.assert_allclose(got, r, atol=1e-12)


@pytest.mark.parametrize("head_dim", [16, 48])
def test_halves_off_a_block_are_rotated_in_f32(head_dim):
    """A 16-bit head dim of 16 or 48 has halves of 16 / 48 bytes, off the vector unit's 32-byte
    blocks: the rule rotates in f32 (no fallback kernel) and matches the reference."""
    from geir.dialects import make_context
    from geir.ir.text import parse_module
    from geir.runtime.interpreter import run_module

    t = f"tensor<2x4x8x{head_dim}xf16>"
    c = f"tensor<8x{head_dim}xf16>"
    text = (f"func.func @main(%x: {t}, %cos: {c}, %sin: {c}) -> {t} {{\n"
            f"  %y = graph.rotary_embedding %x, %cos, %sin : ({t}, {c}, {c}) -> {t}\n"
            f"  func.return %y : {t}\n}}")
    rng = np.random.default_rng(3)
    cos, sin = (a.astype(np.float16) for a in _angles(8, head_dim, False))
    feeds = {"x": rng.standard_normal((2, 4, 8, head_dim)).astype(np.float16), "cos": cos, "sin": sin}
    cm = geir.compile(parse_module(text, make_context()), opt_level=3)
    assert fallback_ops(cm.module) == []
    (got,) = cm.run(feeds).values()
    (want,) = run_module(parse_module(text, make_context()), feeds).values()
    got, want = got.astype(np.float32), want.astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
