"""The seed's TransformerBlock built with the graph builder: a post-LN encoder block (multi-head
attention with a fused QKV projection, residual, LayerNorm; a GELU MLP, residual, LayerNorm),
the same math as testing/transformer.py's torch `Block` and its ONNX form `block_onnx`.

    module = geir.models.transformer_block(batch=8, seq=128, hidden=768, ffn=3072, heads=8)
    cm = geir.compile(module, opt_level=3)

Weights take the torch Block's names (`attn.in_proj_weight`, `ff.0.weight`, ...), so a
state dict of that module reproduces it; layer i > 0 of a stack prefixes them with `<i>.`
(torch.nn.Sequential's names).
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from geir.errors import GraphBuildError
from geir.frontend.builder import GraphBuilder, parse_dtype
from geir.models.weights import Weights


def transformer_block(batch: int = 8, seq: int = 128, hidden: int = 768, ffn: int = 3072, heads: int = 8,
                      dtype: str = "f16", *, layers: int = 1, weights=None, seed: int = 0) -> ModuleOp:
    """`x` [batch, seq, hidden] -> `y`: `layers` blocks. `weights` as for geir.models.llama:
    None / "random", a state dict (the torch Block's names; with several layers those of
    torch.nn.Sequential, `0.attn.in_proj_weight`), or "shape-only"."""
    for what, v in (("batch", batch), ("seq", seq), ("hidden", hidden), ("ffn", ffn), ("heads", heads),
                    ("layers", layers)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise GraphBuildError(f"transformer_block: {what} must be a positive int, got {v!r}")
    if hidden % heads:
        raise GraphBuildError(f"transformer_block: {heads} heads do not divide hidden {hidden}")
    w = Weights(weights, parse_dtype(dtype), seed)
    b = GraphBuilder("main")
    x = b.input("x", (batch, seq, hidden), w.dtype)
    for i in range(layers):
        x = _block(b, w, x, heads, ffn, f"{i}." if layers > 1 else "", f"l{i}")
    b.output("y", x)
    w.check_used()
    return b.finish()


def _block(b: GraphBuilder, w: Weights, x: SSAValue, heads: int, ffn: int, prefix: str, p: str) -> SSAValue:
    batch, seq, hidden = x.type.get_shape()
    dh = hidden // heads

    def linear(v: SSAValue, name: str, n_in: int, n_out: int) -> SSAValue:
        weight = w.value(b, f"{prefix}{name}.weight", (n_out, n_in), transpose=True)
        bias = w.value(b, f"{prefix}{name}.bias", (n_out,), "zeros")
        return b.add(b.matmul(v, weight, name=f"{p}/{name}/MatMul"), bias, name=f"{p}/{name}/Add")

    def layer_norm(v: SSAValue, name: str) -> SSAValue:
        scale = w.value(b, f"{prefix}{name}.weight", (hidden,), "ones")
        bias = w.value(b, f"{prefix}{name}.bias", (hidden,), "zeros")
        return b.layer_norm(v, scale, bias, axis=-1, epsilon=1e-5, name=f"{p}/{name}")

    in_w = w.value(b, f"{prefix}attn.in_proj_weight", (3 * hidden, hidden), transpose=True)
    in_b = w.value(b, f"{prefix}attn.in_proj_bias", (3 * hidden,), "zeros")
    qkv = b.add(b.matmul(x, in_w, name=f"{p}/qkv/MatMul"), in_b, name=f"{p}/qkv/Add")
    q, k, v = b.split(qkv, [hidden] * 3, axis=-1, name=f"{p}/split")
    perms = {"q": (0, 2, 1, 3), "k": (0, 2, 3, 1), "v": (0, 2, 1, 3)}
    split = {}
    for name, value in (("q", q), ("k", k), ("v", v)):
        r = b.reshape(value, [batch, seq, heads, dh], name=f"{p}/{name}_heads")
        split[name] = b.transpose(r, perm=perms[name], name=f"{p}/{name}_t")
    scores = b.mul(b.matmul(split["q"], split["k"], name=f"{p}/scores"), 1.0 / math.sqrt(dh), name=f"{p}/scaled")
    ctx = b.matmul(b.softmax(scores, axis=-1, name=f"{p}/softmax"), split["v"], name=f"{p}/context")
    ctx = b.reshape(b.transpose(ctx, perm=(0, 2, 1, 3), name=f"{p}/merge"), [batch, seq, hidden], name=f"{p}/merged")
    x1 = layer_norm(b.add(x, linear(ctx, "attn.out_proj", hidden, hidden), name=f"{p}/residual1"), "ln1")
    h = b.gelu(linear(x1, "ff.0", hidden, ffn), name=f"{p}/gelu")
    return layer_norm(b.add(x1, linear(h, "ff.2", ffn, hidden), name=f"{p}/residual2"), "ln2")
