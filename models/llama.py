"""LLaMA decoders built with the graph builder: the prefill program and the decode program.

    progs = geir.models.llama("tiny", batch=1, seq=16, weights=state_dict, dtype="f32")
    cm = geir.compile(progs.prefill, precision_mode="must_keep_origin_dtype")
    out = cm.run({"input_ids": ids})        # logits, present.0.key, present.0.value, ...

The graph is what the PyTorch exporters emit for Hugging Face's LlamaForCausalLM (so the
recognisers that turn the decomposed forms back into one op find them): RMSNorm as
`graph.rms_norm`, RoPE's half rotation decomposed (slice, neg, concat, mul, add with cos / sin
tables of `max_seq` rows: the prefill slices them, a decode step gathers them at its
position), attention decomposed (matmul Q K^T, scale, the causal mask added, softmax in f32,
matmul V; grouped-query K / V repeated by unsqueeze / expand / reshape like HF's `repeat_kv`),
SwiGLU as silu(x W_gate) * (x W_up) with silu = x * sigmoid(x), the residual adds, the final
norm and the lm_head. Weights have HF's names (`model.layers.0.self_attn.q_proj.weight`).

The KV cache is ONNX's concat form (optimum's names): the prefill returns `present.<i>.key` /
`.value` of shape [batch, kv_heads, seq, head_dim]; a decode step takes one token per
sequence (`input_ids` [batch, 1], `position_ids` [batch, 1]), `past_key_values.<i>.key` /
`.value` of length `past`, and returns the presents of length past + 1. `kv_cache` is the one
function that says so.

`cache="inplace"` is the static cache (HF's StaticCache, GE's ref-data): both programs take
`past_key_values.<i>.key` / `.value` of a fixed `max_len` rows and a `cache_position` [1] (the
row of the program's first token), write their new K / V rows there with
`graph.kv_cache_write` (the cache arguments updated in place: no step copies a cache), and
attend over all `max_len` rows with a mask that hides the rows after each query's position.
`position_ids` (the RoPE rows) are then `cache_position + 0..n-1` per sequence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from geir.errors import GraphBuildError
from geir.frontend.builder import GraphBuilder, parse_dtype
from geir.models.weights import Weights


@dataclass(frozen=True)
class LlamaConfig:
    """The shape of a LLaMA model (HF's config names in brackets): `layers`
    (num_hidden_layers), `hidden` (hidden_size), `heads` (num_attention_heads), `kv_heads`
    (num_key_value_heads: fewer than heads is grouped-query attention), `ffn`
    (intermediate_size), `vocab` (vocab_size), `rope_theta`, `norm_eps` (rms_norm_eps),
    `max_seq` (max_position_embeddings: the rows of the RoPE tables)."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    rope_theta: float = 10000.0
    norm_eps: float = 1e-6
    max_seq: int = 2048

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
                raise GraphBuildError(f"LlamaConfig.{f.name} must be a positive number, got {v!r}")
            if f.type == "int" and not isinstance(v, int):
                raise GraphBuildError(f"LlamaConfig.{f.name} must be an int, got {v!r}")
        if self.hidden % self.heads:
            raise GraphBuildError(f"LlamaConfig: {self.heads} heads do not divide hidden {self.hidden}")
        if self.heads % self.kv_heads:
            raise GraphBuildError(f"LlamaConfig: {self.kv_heads} kv_heads do not divide {self.heads} heads "
                                  f"(each K/V head serves a whole group of query heads)")
        if self.head_dim % 2:
            raise GraphBuildError(f"LlamaConfig: head dim {self.head_dim} is odd; RoPE rotates halves")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


CONFIGS: dict[str, LlamaConfig] = {
    "llama-7b": LlamaConfig(32, 4096, 32, 32, 11008, 32000, 10000.0, 1e-6, 2048),
    "llama-2-7b": LlamaConfig(32, 4096, 32, 32, 11008, 32000, 10000.0, 1e-5, 4096),
    "llama-2-13b": LlamaConfig(40, 5120, 40, 40, 13824, 32000, 10000.0, 1e-5, 4096),
    "llama-3-8b": LlamaConfig(32, 4096, 32, 8, 14336, 128256, 500000.0, 1e-5, 8192),
    "tiny": LlamaConfig(2, 64, 4, 2, 128, 128, 10000.0, 1e-6, 256),
}
"""The published shapes (HF config.json of each checkpoint) and a tiny one for tests."""


def config_of(config: str | LlamaConfig) -> LlamaConfig:
    if isinstance(config, LlamaConfig):
        return config
    if isinstance(config, str) and config in CONFIGS:
        return CONFIGS[config]
    raise GraphBuildError(f"unknown LLaMA config {config!r}; known: {', '.join(CONFIGS)} (or a LlamaConfig)")


@dataclass
class LlamaPrograms:
    """The two programs of a LLaMA model, each a finished graph module with func.func @main."""

    config: LlamaConfig
    prefill: ModuleOp
    decode: ModuleOp
    batch: int
    seq: int
    past: int
    max_len: int | None = None
    """The static cache's rows (`cache="inplace"`), None for the concat form."""

    def report(self, programs: tuple[str, ...] = ("prefill", "decode"), **options) -> dict[str, dict]:
        """Compile each program (geir.compile's `options`) and time it without data: its LLM
        figures (models/llm_report.py: latency, ms per token, tokens/s, weight / KV-cache /
        workspace bytes, the HBM and cube bounds), by program name."""
        from geir.driver.compile import compile as compile_model
        from geir.models.llm_report import KINDS, llm_report

        unknown = [p for p in programs if p not in KINDS]
        if unknown:
            raise GraphBuildError(f"LlamaPrograms.report: unknown program(s) {unknown}; the programs are {KINDS}")
        return {kind: llm_report(compile_model(getattr(self, kind), **options), kind, self.batch,
                                 self.seq if kind == "prefill" else 1) for kind in programs}


def llama(config: str | LlamaConfig, *, batch: int = 1, seq: int = 128, past: int | None = None,
          weights=None, dtype: str = "f16", embeddings: bool = False, seed: int = 0,
          cache: str = "concat", max_len: int | None = None) -> LlamaPrograms:
    """The prefill program (`input_ids` [batch, seq] -> `logits` [batch, seq, vocab] and the
    presents) and the decode program (one token per sequence after `past` of them, default
    `seq`: the prefill's presents are its past). `weights`: None or "random" (seeded normal /
    sqrt(fan in), norms 1), a state dict of HF's names (torch tensors or arrays), or
    "shape-only" (placeholders: no bytes, runs compute with zeros). `embeddings`: the programs
    take `inputs_embeds` [batch, n, hidden] instead of token ids. `cache`: "concat" (ONNX's
    past / present form) or "inplace" (a static cache of `max_len` rows, default max_seq,
    updated in place; the module docstring)."""
    c = config_of(config)
    if cache not in ("concat", "inplace"):
        raise GraphBuildError(f"llama: cache must be 'concat' or 'inplace', got {cache!r}")
    max_len = c.max_seq if max_len is None else max_len
    if cache == "inplace" and (isinstance(max_len, bool) or not isinstance(max_len, int)
                               or not seq <= max_len <= c.max_seq):
        raise GraphBuildError(f"llama: max_len must be an int from seq {seq} to max_seq {c.max_seq}, got {max_len!r}")
    past = seq if past is None else past
    for what, v in (("batch", batch), ("seq", seq), ("past", past)):
        if isinstance(v, bool) or not isinstance(v, int) or v < (0 if what == "past" else 1):
            raise GraphBuildError(f"llama: {what} must be a {'non-negative' if what == 'past' else 'positive'} int, "
                                  f"got {v!r}")
    if cache == "concat" and max(seq, past + 1) > c.max_seq:  # a static cache's rows are max_len, checked above
        raise GraphBuildError(f"llama: positions up to {max(seq, past + 1)} exceed max_seq {c.max_seq} "
                              f"(the RoPE tables' rows)")
    dt = parse_dtype(dtype)
    if dt.kind != "f" and str(dt) != "bfloat16":
        raise GraphBuildError(f"llama: dtype {dt} is not a floating-point type")
    w = Weights(weights, dt, seed)
    static = max_len if cache == "inplace" else None
    prefill = _Llama(c, w, embeddings, static).program(batch, seq, None)
    decode = _Llama(c, w, embeddings, static).program(batch, 1, past)
    w.check_used()
    return LlamaPrograms(c, prefill, decode, batch, seq, past, static)


def rope_tables(c: LlamaConfig) -> dict[str, np.ndarray]:
    """{"cos": ..., "sin": ...} of every position (max_seq rows) and frequency, the halves
    repeated (HF's LlamaRotaryEmbedding: computed in f32)."""
    inv_freq = 1.0 / (c.rope_theta ** (np.arange(0, c.head_dim, 2, dtype=np.int64).astype(np.float32) / c.head_dim))
    freqs = np.arange(c.max_seq, dtype=np.float32)[:, None] * inv_freq[None, :].astype(np.float32)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return {"cos": np.cos(emb), "sin": np.sin(emb)}


def kv_cache(b: GraphBuilder, layer: int, k: SSAValue, v: SSAValue, past: int | None) -> tuple[SSAValue, SSAValue]:
    """The cache plumbing of one layer (ONNX's concat form): with a past, its K / V inputs
    come first and the new ones are concatenated on the sequence axis; either way the
    result is the layer's present output, and what attention reads."""
    present = []
    for kind, new in (("key", k), ("value", v)):
        if past is not None:
            batch, kv_heads, _, head_dim = new.type.get_shape()
            old = b.input(f"past_key_values.{layer}.{kind}", (batch, kv_heads, past, head_dim),
                          new.type.element_type)
            new = b.concat(old, new, axis=2, name=f"/model/layers.{layer}/self_attn/{kind}_cache/Concat")
        b.output(f"present.{layer}.{kind}", new)
        present.append(new)
    return present[0], present[1]


def static_kv_cache(b: GraphBuilder, layer: int, k: SSAValue, v: SSAValue, position: SSAValue,
                    max_len: int) -> tuple[SSAValue, SSAValue]:
    """The cache plumbing of one layer (a static cache): the K / V inputs of `max_len` rows, the
    new rows written at `position` (in place: each cache argument is read only by its write,
    and the result is the present output), the whole cache what attention reads."""
    present = []
    for kind, new in (("key", k), ("value", v)):
        batch, kv_heads, _, head_dim = new.type.get_shape()
        cache = b.input(f"past_key_values.{layer}.{kind}", (batch, kv_heads, max_len, head_dim), new.type.element_type)
        new = b.kv_cache_write(cache, new, position, axis=2, name=f"/model/layers.{layer}/self_attn/{kind}_cache/Write")
        b.output(f"present.{layer}.{kind}", new)
        present.append(new)
    return present[0], present[1]


class _Llama:
    """One program of the model: the layers in a builder. `max_len`: a static cache of that
    many rows (None: ONNX's concat form)."""

    def __init__(self, c: LlamaConfig, w: Weights, embeddings: bool, max_len: int | None = None):
        self.c, self.w, self.embeddings, self.max_len = c, w, embeddings, max_len

    def program(self, batch: int, n: int, past: int | None) -> ModuleOp:
        c, w = self.c, self.w
        b = self.b = GraphBuilder("main")
        dt = w.dtype
        if self.embeddings:
            h = b.input("inputs_embeds", (batch, n, c.hidden), dt)
        else:
            ids = b.input("input_ids", (batch, n), "i64")
            table = w.value(b, "model.embed_tokens.weight", (c.vocab, c.hidden), "embedding")
            h = b.gather(table, ids, axis=0, name="/model/embed_tokens/Gather")
        self.position = None
        if self.max_len is not None:  # a static cache: RoPE and the mask follow the cache position
            self.position = b.input("cache_position", (1,), "i64")
            positions = b.input("position_ids", (batch, n), "i64")
            cos, sin = self.rope(n, positions)
            mask = self.cache_mask(n)
        else:
            positions = None if past is None else b.input("position_ids", (batch, n), "i64")
            cos, sin = self.rope(n, positions)
            mask = self.causal_mask(n) if past is None else None
        for i in range(c.layers):
            h = self.layer(i, h, cos, sin, mask, past)
        h = b.rms_norm(h, w.value(b, "model.norm.weight", (c.hidden,), "ones"), epsilon=c.norm_eps,
                       name="/model/norm/RMSNorm")
        logits = b.matmul(h, w.value(b, "lm_head.weight", (c.vocab, c.hidden), transpose=True),
                          name="/lm_head/MatMul")
        b.output("logits", logits)
        # logits first, then the presents (as optimum orders them)
        b.outputs = {"logits": b.outputs.pop("logits"), **b.outputs}
        return b.finish()

    def rope(self, n: int, positions: SSAValue | None) -> tuple[SSAValue, SSAValue]:
        """The cos / sin rows of the program's positions, shaped to broadcast against
        [batch, heads, n, head_dim]: the prefill slices rows 0..n of the tables, a decode
        step gathers the rows at `position_ids` and unsqueezes the head axis."""
        b, dt = self.b, self.w.dtype
        out = []
        for kind, table in rope_tables(self.c).items():
            t = b.constant(table.astype(dt), name=f"model.rotary_emb.{kind}_cached",
                           loc=f"/model/rotary_emb/{kind}_cached")
            if positions is None:
                out.append(b.slice(t, [0], [n], [0], name=f"/model/rotary_emb/{kind}/Slice"))
            else:
                rows = b.gather(t, positions, axis=0, name=f"/model/rotary_emb/{kind}/Gather")
                out.append(b.unsqueeze(rows, axes=(1,), name=f"/model/rotary_emb/{kind}/Unsqueeze"))
        return out[0], out[1]

    def causal_mask(self, n: int) -> SSAValue:
        """[n, n]: 0 on and below the diagonal, the dtype's lowest value above (HF's mask)."""
        dt = self.w.dtype
        lowest = np.finfo(np.float32).min if str(dt) == "bfloat16" else np.finfo(dt).min
        mask = np.triu(np.full((n, n), lowest, np.float32), k=1).astype(dt)
        return self.b.constant(mask, name="causal_mask", loc="/model/causal_mask")

    def cache_mask(self, n: int) -> SSAValue:
        """[1, 1, n, max_len]: query i (at cache_position + i) sees rows 0..cache_position + i
        of the static cache (0), not the later ones (the dtype's lowest value)."""
        b, dt = self.b, self.w.dtype
        lowest = np.finfo(np.float32).min if str(dt) == "bfloat16" else np.finfo(dt).min
        rows = b.constant(np.arange(self.max_len, dtype=np.int64)[None, :], name="cache_rows", loc="/model/cache_mask")
        queries = b.add(b.constant(np.arange(n, dtype=np.int64)[:, None], name="query_offsets",
                                   loc="/model/cache_mask"), self.position, name="/model/cache_mask/Add")
        seen = b.less_or_equal(rows, queries, name="/model/cache_mask/LessOrEqual")
        mask = b.where(seen, np.zeros((), dt), np.full((), lowest, dt), name="/model/cache_mask/Where")
        return b.reshape(mask, [1, 1, n, self.max_len], name="/model/cache_mask/Reshape")

    def rotate(self, x: SSAValue, cos: SSAValue, sin: SSAValue, p: str) -> SSAValue:
        """x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x[..., d/2:], x[..., :d/2])."""
        b, half, d = self.b, self.c.head_dim // 2, self.c.head_dim
        x1 = b.slice(x, [0], [half], [3], name=f"{p}/Slice")
        x2 = b.slice(x, [half], [d], [3], name=f"{p}/Slice_1")
        rotated = b.concat(b.neg(x2, name=f"{p}/Neg"), x1, axis=-1, name=f"{p}/Concat")
        return b.add(b.mul(x, cos, name=f"{p}/Mul"), b.mul(rotated, sin, name=f"{p}/Mul_1"), name=f"{p}/Add")

    def heads(self, x: SSAValue, count: int, p: str) -> SSAValue:
        """[batch, n, count * head_dim] -> [batch, count, n, head_dim]."""
        batch, n, _ = x.type.get_shape()
        x = self.b.reshape(x, [batch, n, count, self.c.head_dim], name=f"{p}/Reshape")
        return self.b.transpose(x, perm=(0, 2, 1, 3), name=f"{p}/Transpose")

    def repeat_kv(self, x: SSAValue, p: str) -> SSAValue:
        """HF's repeat_kv: [b, kv, t, d] -> [b, kv * n_rep, t, d] by unsqueeze, expand, reshape."""
        n_rep = self.c.heads // self.c.kv_heads
        if n_rep == 1:
            return x
        batch, kv, t, d = x.type.get_shape()
        x = self.b.unsqueeze(x, axes=(2,), name=f"{p}/Unsqueeze")
        x = self.b.expand(x, [batch, kv, n_rep, t, d], name=f"{p}/Expand")
        return self.b.reshape(x, [batch, kv * n_rep, t, d], name=f"{p}/Reshape")

    def attention(self, i: int, x: SSAValue, cos, sin, mask, past) -> SSAValue:
        b, c, w = self.b, self.c, self.w
        p = f"/model/layers.{i}/self_attn"
        proj = {}
        for name, count in (("q", c.heads), ("k", c.kv_heads), ("v", c.kv_heads)):
            weight = w.value(b, f"model.layers.{i}.self_attn.{name}_proj.weight", (count * c.head_dim, c.hidden),
                             transpose=True)
            proj[name] = self.heads(b.matmul(x, weight, name=f"{p}/{name}_proj/MatMul"), count, f"{p}/{name}")
        q = self.rotate(proj["q"], cos, sin, f"{p}/rotary_q")
        k = self.rotate(proj["k"], cos, sin, f"{p}/rotary_k")
        if self.max_len is not None:
            k, v = static_kv_cache(b, i, k, proj["v"], self.position, self.max_len)
        else:
            k, v = kv_cache(b, i, k, proj["v"], past)
        k, v = self.repeat_kv(k, f"{p}/repeat_k"), self.repeat_kv(v, f"{p}/repeat_v")
        scores = b.matmul(q, b.transpose(k, perm=(0, 1, 3, 2), name=f"{p}/Transpose_k"), name=f"{p}/MatMul")
        scores = b.mul(scores, 1.0 / math.sqrt(c.head_dim), name=f"{p}/Mul")
        if mask is not None:
            scores = b.add(scores, mask, name=f"{p}/Add_mask")
        probs = self.softmax(scores, f"{p}/Softmax")
        ctx = b.transpose(b.matmul(probs, v, name=f"{p}/MatMul_1"), perm=(0, 2, 1, 3), name=f"{p}/Transpose_o")
        batch, n = ctx.type.get_shape()[:2]
        ctx = b.reshape(ctx, [batch, n, c.hidden], name=f"{p}/Reshape_o")
        wo = w.value(b, f"model.layers.{i}.self_attn.o_proj.weight", (c.hidden, c.hidden), transpose=True)
        return b.matmul(ctx, wo, name=f"{p}/o_proj/MatMul")

    def softmax(self, x: SSAValue, p: str) -> SSAValue:
        """Softmax over the keys in f32, cast back (HF: softmax(dtype=float32).to(q.dtype))."""
        b = self.b
        if self.w.dtype == np.float32:
            return b.softmax(x, axis=-1, name=p)
        y = b.softmax(b.cast(x, to=np.float32, name=f"{p}/Cast"), axis=-1, name=p)
        return b.cast(y, to=self.w.dtype, name=f"{p}/Cast_1")

    def mlp(self, i: int, x: SSAValue) -> SSAValue:
        """down(silu(x W_gate) * (x W_up)), silu(g) = g * sigmoid(g)."""
        b, c, w = self.b, self.c, self.w
        p = f"/model/layers.{i}/mlp"

        def proj(name: str, n_in: int, n_out: int, v: SSAValue) -> SSAValue:
            weight = w.value(b, f"model.layers.{i}.mlp.{name}.weight", (n_out, n_in), transpose=True)
            return b.matmul(v, weight, name=f"{p}/{name}/MatMul")

        gate = proj("gate_proj", c.hidden, c.ffn, x)
        silu = b.mul(gate, b.sigmoid(gate, name=f"{p}/act_fn/Sigmoid"), name=f"{p}/act_fn/Mul")
        return proj("down_proj", c.ffn, c.hidden, b.mul(silu, proj("up_proj", c.hidden, c.ffn, x), name=f"{p}/Mul"))

    def layer(self, i: int, h: SSAValue, cos, sin, mask, past) -> SSAValue:
        b, c, w = self.b, self.c, self.w
        p = f"/model/layers.{i}"
        x = b.rms_norm(h, w.value(b, f"model.layers.{i}.input_layernorm.weight", (c.hidden,), "ones"),
                       epsilon=c.norm_eps, name=f"{p}/input_layernorm/RMSNorm")
        h = b.add(h, self.attention(i, x, cos, sin, mask, past), name=f"{p}/Add")
        x = b.rms_norm(h, w.value(b, f"model.layers.{i}.post_attention_layernorm.weight", (c.hidden,), "ones"),
                       epsilon=c.norm_eps, name=f"{p}/post_attention_layernorm/RMSNorm")
        return b.add(h, self.mlp(i, x), name=f"{p}/Add_1")
