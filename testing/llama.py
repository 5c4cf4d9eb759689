"""A LLaMA decoder in plain torch, written like Hugging Face's `LlamaForCausalLM` (the same
module and parameter names, the same math), for tests and recogniser work: no `transformers`
package needed.

    model = llama_reference(TINY, seed=0)          # random weights, eval mode
    logits, present = model(input_ids)             # prefill: present[i] = (k, v) of layer i
    logits, present = model(next_ids, past_key_values=present, position_ids=pos)   # decode
    proto = export_onnx(model, batch=1, seq=8, dynamo=False)   # or dynamo=True

`model.state_dict()` has HF's names (`model.layers.0.self_attn.q_proj.weight`), so
`geir.models.llama(config, weights=model.state_dict())` builds the same model in geir.
torch is imported lazily; it is part of the test extra.
"""

from __future__ import annotations

import io
import warnings
from typing import Any

from geir.models.llama import LlamaConfig


def _classes():
    import torch
    from torch import nn

    class LlamaRMSNorm(nn.Module):
        def __init__(self, hidden: int, eps: float):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden))
            self.variance_epsilon = eps

        def forward(self, x):
            dtype = x.dtype
            x = x.to(torch.float32)
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
            return self.weight * x.to(dtype)

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def repeat_kv(x, n_rep: int):
        b, kv, s, d = x.shape
        if n_rep == 1:
            return x
        return x[:, :, None, :, :].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)

    class LlamaRotaryEmbedding(nn.Module):
        def __init__(self, dim: int, theta: float):
            super().__init__()
            inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
            self.register_buffer("inv_freq", inv_freq, persistent=False)

        def forward(self, x, position_ids):
            freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :]
            emb = torch.cat((freqs, freqs), dim=-1)
            return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    class LlamaAttention(nn.Module):
        def __init__(self, c: LlamaConfig):
            super().__init__()
            self.heads, self.kv_heads, self.head_dim = c.heads, c.kv_heads, c.hidden // c.heads
            self.q_proj = nn.Linear(c.hidden, c.heads * self.head_dim, bias=False)
            self.k_proj = nn.Linear(c.hidden, c.kv_heads * self.head_dim, bias=False)
            self.v_proj = nn.Linear(c.hidden, c.kv_heads * self.head_dim, bias=False)
            self.o_proj = nn.Linear(c.heads * self.head_dim, c.hidden, bias=False)

        def forward(self, x, cos, sin, past=None):
            b, s, _ = x.shape
            q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
            k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
            v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            if past is not None:
                k = torch.cat((past[0], k), dim=2)
                v = torch.cat((past[1], v), dim=2)
            present = (k, v)
            n_rep = self.heads // self.kv_heads
            k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
            scores = torch.matmul(q, k.transpose(2, 3)) * self.head_dim ** -0.5
            if s > 1:  # prefill: causal; a decode step attends to the whole past
                total = k.shape[2]  # (a comparison, not torch.triu: exported, it folds to a constant)
                later = torch.arange(total)[None, :] > torch.arange(s)[:, None] + (total - s)
                # both branches typed: a Python float would make TorchScript's Where f64
                zero = torch.zeros((), dtype=scores.dtype)
                lowest = torch.full((), torch.finfo(scores.dtype).min, dtype=scores.dtype)
                scores = scores + torch.where(later, lowest, zero)
            probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
            out = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, -1)
            return self.o_proj(out), present

    class LlamaMLP(nn.Module):
        def __init__(self, c: LlamaConfig):
            super().__init__()
            self.gate_proj = nn.Linear(c.hidden, c.ffn, bias=False)
            self.up_proj = nn.Linear(c.hidden, c.ffn, bias=False)
            self.down_proj = nn.Linear(c.ffn, c.hidden, bias=False)

        def forward(self, x):
            return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))

    class LlamaDecoderLayer(nn.Module):
        def __init__(self, c: LlamaConfig):
            super().__init__()
            self.self_attn = LlamaAttention(c)
            self.mlp = LlamaMLP(c)
            self.input_layernorm = LlamaRMSNorm(c.hidden, c.norm_eps)
            self.post_attention_layernorm = LlamaRMSNorm(c.hidden, c.norm_eps)

        def forward(self, x, cos, sin, past=None):
            a, present = self.self_attn(self.input_layernorm(x), cos, sin, past)
            x = x + a
            return x + self.mlp(self.post_attention_layernorm(x)), present

    class LlamaModel(nn.Module):
        def __init__(self, c: LlamaConfig):
            super().__init__()
            self.embed_tokens = nn.Embedding(c.vocab, c.hidden)
            self.layers = nn.ModuleList(LlamaDecoderLayer(c) for _ in range(c.layers))
            self.norm = LlamaRMSNorm(c.hidden, c.norm_eps)
            self.rotary_emb = LlamaRotaryEmbedding(c.hidden // c.heads, c.rope_theta)

    class LlamaForCausalLM(nn.Module):
        def __init__(self, c: LlamaConfig):
            super().__init__()
            self.config = c
            self.model = LlamaModel(c)
            self.lm_head = nn.Linear(c.hidden, c.vocab, bias=False)

        def forward(self, input_ids, past_key_values=None, position_ids=None):
            x = self.model.embed_tokens(input_ids)
            b, s = input_ids.shape
            if position_ids is None:
                start = 0 if past_key_values is None else past_key_values[0][0].shape[2]
                position_ids = torch.arange(start, start + s).expand(b, s)
            cos, sin = self.model.rotary_emb(x, position_ids)
            presents = []
            for i, layer in enumerate(self.model.layers):
                x, present = layer(x, cos, sin, None if past_key_values is None else past_key_values[i])
                presents.append(present)
            return self.lm_head(self.model.norm(x)), tuple(presents)

    return LlamaForCausalLM


def llama_reference(config: LlamaConfig, seed: int = 0, std: float = 0.2) -> Any:
    """The torch model of `config` with seeded random weights (normal, `std`; the norms' scales
    around 1 so they matter), in eval mode."""
    import torch

    torch.manual_seed(seed)
    model = _classes()(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layernorm.weight") or name == "model.norm.weight":
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.normal_(0, std)
    return model


def export_onnx(model: Any, batch: int = 1, seq: int = 8, *, dynamo: bool = False, opset: int = 17,
                seed: int = 0, dynamic_seq: bool = False) -> Any:
    """The model's prefill (input_ids -> logits) exported with the TorchScript exporter
    (`dynamo=False`) or the dynamo exporter, as an onnx.ModelProto: the decomposed forms the
    recognisers are written against. `dynamic_seq`: the TorchScript export's sequence axis
    is a dim_param `seq` (for shape ranges and gears)."""
    import onnx
    import torch

    class Prefill(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids):
            return self.inner(input_ids)[0]

    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab, (batch, seq), generator=g)
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            program = torch.onnx.export(Prefill(model).eval(), (ids,), dynamo=True, opset_version=max(opset, 18),
                                        input_names=["input_ids"], output_names=["logits"], verbose=False)
            return program.model_proto
        axes = {"input_ids": {1: "seq"}, "logits": {1: "seq"}} if dynamic_seq else None
        torch.onnx.export(Prefill(model).eval(), (ids,), f, dynamo=False, opset_version=opset,
                          input_names=["input_ids"], output_names=["logits"], dynamic_axes=axes)
    return onnx.load_from_string(f.getvalue())


def export_decode_onnx(model: Any, batch: int = 1, past: int = 8, *, dynamo: bool = False, opset: int = 17) -> Any:
    """One decode step of the model (`input_ids` [batch, 1], `position_ids` [batch, 1] and
    `past_key_values.<i>.key` / `.value` [batch, kv_heads, past, head_dim] -> `logits` and
    `present.<i>.key` / `.value`, ONNX's concat form) exported with either exporter."""
    import onnx
    import torch

    c = model.config
    layers = c.layers

    class Decode(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, position_ids, *flat):
            pasts = tuple((flat[2 * i], flat[2 * i + 1]) for i in range(layers))
            logits, presents = self.inner(input_ids, past_key_values=pasts, position_ids=position_ids)
            return (logits, *(t for kv in presents for t in kv))

    cache = (batch, c.kv_heads, past, c.hidden // c.heads)
    args = (torch.zeros(batch, 1, dtype=torch.int64), torch.full((batch, 1), past, dtype=torch.int64),
            *(torch.zeros(cache) for _ in range(2 * layers)))
    names = [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    outs = ["logits", *(n.replace("past_key_values", "present") for n in names)]
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            program = torch.onnx.export(Decode(model).eval(), args, dynamo=True, opset_version=max(opset, 18),
                                        input_names=["input_ids", "position_ids", *names], output_names=outs,
                                        verbose=False)
            return program.model_proto
        torch.onnx.export(Decode(model).eval(), args, f, dynamo=False, opset_version=opset,
                          input_names=["input_ids", "position_ids", *names], output_names=outs)
    return onnx.load_from_string(f.getvalue())
