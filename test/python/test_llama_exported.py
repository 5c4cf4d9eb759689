"""The tiny LLaMA (testing/llama.py: HF's modules, random weights) exported by both PyTorch
exporters, compiled at O3: the recognisers find its RMSNorms, rotations and attentions, and
the prefill and a decode step (ONNX's past / present form) match torch and onnxruntime in
fp32 and in fp16 (force_fp16: cosine >= 0.999)."""

from __future__ import annotations

import numpy as np
import pytest

import geir
from geir.dialects import graph as g
from geir.models import CONFIGS
from geir.testing.suite import assert_matches, ort_run

torch = pytest.importorskip("torch")

from geir.testing.llama import export_decode_onnx, export_onnx, llama_reference  # noqa: E402 - needs torch

TINY = CONFIGS["tiny"]  # 2 layers, hidden 64, 4 heads, 2 kv heads (GQA), head dim 16
PAST = 8


@pytest.fixture(scope="module")
def model():
    return llama_reference(TINY, seed=4)


def _feeds(proto, rng) -> dict[str, np.ndarray]:
    feeds = {}
    for i in proto.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        if i.name == "input_ids":
            feeds[i.name] = rng.integers(0, TINY.vocab, shape).astype(np.int64)
        elif i.name == "position_ids":
            feeds[i.name] = np.full(shape, PAST, np.int64)
        else:
            feeds[i.name] = (0.5 * rng.standard_normal(shape)).astype(np.float32)
    return feeds


def _torch(model, feeds) -> list[np.ndarray]:
    with torch.no_grad():
        if "position_ids" not in feeds:
            return [model(torch.from_numpy(feeds["input_ids"]))[0].numpy()]
        past = tuple((torch.from_numpy(feeds[f"past_key_values.{i}.key"]),
                      torch.from_numpy(feeds[f"past_key_values.{i}.value"])) for i in range(TINY.layers))
        logits, presents = model(torch.from_numpy(feeds["input_ids"]), past_key_values=past,
                                 position_ids=torch.from_numpy(feeds["position_ids"]))
        return [logits.numpy(), *(t.numpy() for kv in presents for t in kv)]


@pytest.mark.parametrize("program", ["prefill", "decode"])
@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_exported_tiny_llama_matches_torch_and_onnxruntime(model, dynamo, program):
    proto = export_onnx(model, batch=2, seq=8, dynamo=dynamo) if program == "prefill" else \
        export_decode_onnx(model, batch=2, past=PAST, dynamo=dynamo)
    feeds = _feeds(proto, np.random.default_rng(6))
    want = _torch(model, feeds)
    ort = ort_run(proto, feeds)
    for a, b in zip(ort, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)  # the two references agree
    for mode in ("must_keep_origin_dtype", "force_fp16"):
        cm = geir.compile(proto, opt_level=3, precision_mode=mode)
        got = list(cm.run(feeds).values())
        assert len(got) == len(want)
        for i, (a, b) in enumerate(zip(got, want)):
            assert_matches(a, b, mode, f"{program} output {i} ({mode})")
        ops = [op for op in cm.graph_module().walk() if isinstance(op, g.GraphOp)]
        count = {cls: sum(isinstance(op, cls) for op in ops)
                 for cls in (g.RmsNormOp, g.RotaryEmbeddingOp, g.AttentionOp, g.SoftmaxOp)}
        assert count == {g.RmsNormOp: 2 * TINY.layers + 1, g.RotaryEmbeddingOp: 2 * TINY.layers,
                         g.AttentionOp: TINY.layers, g.SoftmaxOp: 0}, (mode, count)
