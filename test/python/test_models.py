"""The model builders (geir.models): a tiny LLaMA against its torch reference (testing/llama.py,
HF's module and weight names) through prefill and a decode step, in fp32 and fp16 at O0 and O3;
the TransformerBlock against testing/transformer.py's torch Block; the graph forms the
recognisers look for; shape-only weights; and every bad configuration."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import geir
from geir.dialects import graph as g
from geir.errors import GeirError, GraphBuildError
from geir.frontend.builder import is_placeholder
from geir.ir.text import print_module
from geir.models import CONFIGS, LlamaConfig

torch = pytest.importorskip("torch")

from geir.testing.llama import llama_reference  # noqa: E402 - needs torch
from geir.testing.transformer import block_reference  # noqa: E402

EXACT = {"precision_mode": "must_keep_origin_dtype"}
TINY = CONFIGS["tiny"]  # 2 layers, hidden 64, 4 heads, 2 kv heads (GQA), ffn 128, vocab 128
BATCH, SEQ = 2, 8


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def tiny():
    """The torch model, its prefill and one decode step on seeded tokens, and the feeds."""
    model = llama_reference(TINY, seed=0)
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, TINY.vocab, (BATCH, SEQ), generator=gen)
    nxt = torch.randint(0, TINY.vocab, (BATCH, 1), generator=gen)
    pos = torch.full((BATCH, 1), SEQ)
    with torch.no_grad():
        logits, present = model(ids)
        step_logits, step_present = model(nxt, past_key_values=present, position_ids=pos)
    prefill = {"logits": logits.numpy()}
    decode = {"logits": step_logits.numpy()}
    feeds = {"input_ids": nxt.numpy(), "position_ids": pos.numpy()}
    for i, ((k, v), (k2, v2)) in enumerate(zip(present, step_present)):
        prefill.update({f"present.{i}.key": k.numpy(), f"present.{i}.value": v.numpy()})
        decode.update({f"present.{i}.key": k2.numpy(), f"present.{i}.value": v2.numpy()})
        feeds.update({f"past_key_values.{i}.key": k.numpy(), f"past_key_values.{i}.value": v.numpy()})
    return model, {"input_ids": ids.numpy()}, prefill, feeds, decode


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_tiny_llama_matches_torch(tiny, dtype, opt_level):
    """fp32 (must_keep_origin_dtype): every output within 1e-4; fp16 weights in the default
    force_fp16: cosine >= 0.999 for the logits and every present K / V."""
    model, prefill_feeds, prefill_want, decode_feeds, decode_want = tiny
    progs = geir.models.llama(TINY, batch=BATCH, seq=SEQ, weights=model.state_dict(), dtype=dtype)
    assert progs.past == SEQ
    options = EXACT if dtype == "f32" else {}
    for module, feeds, want in ((progs.prefill, prefill_feeds, prefill_want),
                                (progs.decode, decode_feeds, decode_want)):
        if dtype == "f16":
            feeds = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in feeds.items()}
        got = geir.compile(module, opt_level=opt_level, **options).run(feeds)
        assert list(got) == list(want)  # logits, then present.<i>.key / .value
        for name, ref in want.items():
            if dtype == "f32":
                np.testing.assert_allclose(got[name], ref, rtol=1e-4, atol=1e-4, err_msg=name)
            else:
                assert got[name].shape == ref.shape
                assert _cosine(got[name], ref) >= 0.999, name


def test_mha_without_grouping_matches_torch():
    """kv_heads == heads: no repeat_kv ops, and still the torch model (interpreter, fp32)."""
    from geir.runtime.interpreter import run_module

    config = dataclasses.replace(TINY, layers=1, kv_heads=4)
    model = llama_reference(config, seed=3)
    ids = torch.randint(0, config.vocab, (1, 5), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = model(ids)[0].numpy()
    progs = geir.models.llama(config, batch=1, seq=5, weights=model.state_dict(), dtype="f32")
    assert not _count(progs.prefill, g.ExpandOp)
    np.testing.assert_allclose(run_module(progs.prefill, {"input_ids": ids.numpy()})["logits"], want,
                               rtol=1e-4, atol=1e-4)


def _count(module, cls) -> int:
    return sum(isinstance(op, cls) for op in module.walk())


def test_the_graph_has_the_exporters_decomposed_forms():
    """What the recognisers look for, per layer: RMSNorm ops, RoPE's half rotation on Q and K
    (2 slices, a neg, a concat each), GQA's unsqueeze / expand / reshape on K and V, the
    causal mask added in the prefill only, softmax in f32 between casts for f16, SwiGLU's
    x * sigmoid(x); the decode step gathers the RoPE tables and concatenates the cache."""
    progs = geir.models.llama(TINY, batch=1, seq=4, weights="shape-only")
    layers = TINY.layers
    for module, decode in ((progs.prefill, False), (progs.decode, True)):
        assert _count(module, g.RmsNormOp) == 2 * layers + 1
        assert _count(module, g.NegOp) == 2 * layers and _count(module, g.SliceOp) == 4 * layers + (0 if decode else 2)
        assert _count(module, g.ExpandOp) == 2 * layers  # 4 heads over 2 kv heads
        assert _count(module, g.SoftmaxOp) == layers and _count(module, g.CastOp) == 2 * layers
        assert _count(module, g.SigmoidOp) == layers
        assert _count(module, g.GatherOp) == 1 + (2 if decode else 0)  # the embedding (+ cos, sin rows)
        assert _count(module, g.ConcatOp) == 2 * layers + (2 * layers if decode else 0)  # rotate_half (+ cache)
        adds = _count(module, g.AddOp)
        assert adds == 2 * layers + 2 * layers + (0 if decode else layers)  # rope, residuals (+ mask)
    text = print_module(progs.decode, elide=True)
    assert 'graph.concat %past_key_values.0.key, ' in text and "loc(\"/model/layers.0/self_attn/key_cache/Concat\")" in text


def test_shape_only_llama_holds_no_weight_bytes_and_compiles():
    progs = geir.models.llama(TINY, batch=1, seq=4, weights="shape-only")
    weights = [op for op in progs.prefill.walk() if isinstance(op, g.ConstantOp) and is_placeholder(op)]
    assert len(weights) == 2 + 9 * TINY.layers + 1  # embedding, lm_head; 7 projections + 2 norms a layer; norm
    assert all(len(op.value.data.data) == 2 for op in weights)  # one f16 element each
    cm = geir.compile(progs.decode, opt_level=3)
    assert cm.shape_only
    with pytest.raises(GeirError, match="shape-only weight"):  # no numbers to compute with
        cm.run(cm.random_inputs())
    assert cm.report["kernel_count"] > 0  # timed without data (test_timing_only.py)


def test_transformer_block_matches_torch():
    """geir.models.transformer_block with the torch Block's state dict, fp32 at O0 and O3
    (testing/transformer.py's Block: post-LN MHA and a GELU MLP of 4 x hidden)."""
    block = block_reference(32, 4, seed=2)
    x = np.random.default_rng(0).standard_normal((2, 6, 32), dtype=np.float32)
    with torch.no_grad():
        want = block(torch.from_numpy(x)).numpy()
    module = geir.models.transformer_block(2, 6, 32, 128, 4, "f32", weights=block.state_dict())
    for level in (0, 3):
        got = geir.compile(module, opt_level=level, **EXACT).run({"x": x})["y"]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("make, message", [
    (lambda: geir.models.llama("llama-5b"), r"unknown LLaMA config 'llama-5b'; known: llama-7b"),
    (lambda: LlamaConfig(2, 64, 5, 5, 128, 128), r"5 heads do not divide hidden 64"),
    (lambda: LlamaConfig(2, 64, 4, 3, 128, 128), r"3 kv_heads do not divide 4 heads"),
    (lambda: LlamaConfig(2, 64, 0, 1, 128, 128), r"heads must be a positive number, got 0"),
    (lambda: LlamaConfig(2, 30, 10, 10, 128, 128), r"head dim 3 is odd; RoPE rotates halves"),
    (lambda: LlamaConfig(2, 64, 4, 4, 128, 128, max_seq=2.5), r"max_seq must be an int"),
    (lambda: geir.models.llama(TINY, seq=256), r"positions up to 257 exceed max_seq 256"),
    (lambda: geir.models.llama(TINY, batch=0), r"batch must be a positive int"),
    (lambda: geir.models.llama(TINY, dtype="i32"), r"dtype int32 is not a floating-point type"),
    (lambda: geir.models.llama(TINY, weights="zeros"), r"weights 'zeros' is not a weight source"),
    (lambda: geir.models.llama(TINY, weights={}), r"the state dict has no weight 'model.embed_tokens.weight'"),
    (lambda: geir.models.transformer_block(heads=7), r"7 heads do not divide hidden 768"),
    (lambda: geir.models.transformer_block(2, 4, 32, 64, 4, "f32", weights=block_reference(32, 4).state_dict()),
     r"weight 'ff.0.weight' has shape \[128, 32\]; the model needs \[64, 32\]"),
])
def test_bad_configurations_are_clear_errors(make, message):
    with pytest.raises(GraphBuildError, match=message):
        make()


def test_a_state_dict_with_foreign_weights_is_rejected():
    state = dict(llama_reference(TINY).state_dict())
    state["model.layers.7.mlp.gate_proj.weight"] = state["model.layers.0.mlp.gate_proj.weight"]
    with pytest.raises(GraphBuildError, match=r"weights the model does not use: \['model.layers.7.mlp"):
        geir.models.llama(TINY, batch=1, seq=4, weights=state)


@pytest.mark.parametrize("dynamo", [False, True])
def test_the_reference_exports_with_both_exporters(tiny, dynamo):
    """testing/llama.py's export (what the recognisers are tested on) imports into geir and
    computes the torch model's logits (fp32, the graph interpreter)."""
    from geir.frontend.onnx import import_model
    from geir.runtime.interpreter import run_module
    from geir.testing.llama import export_onnx

    model = tiny[0]
    proto = export_onnx(model, batch=1, seq=6, dynamo=dynamo)
    ids = np.random.default_rng(5).integers(0, TINY.vocab, (1, 6))
    with torch.no_grad():
        want = model(torch.from_numpy(ids))[0].numpy()
    got = run_module(import_model(proto), {"input_ids": ids})["logits"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# -- the static cache (cache="inplace") -------------------------------------------------------

MAX_LEN = 32


def _static_run(model, dtype: str, opt_level: int, steps: int = 3) -> tuple[list[np.ndarray], list[np.ndarray], object]:
    """(geir's logits, torch's logits, the decode program) of a prefill then `steps` decode
    steps, geir with the static cache carried from step to step."""
    gen = torch.Generator().manual_seed(2)
    ids = torch.randint(0, TINY.vocab, (BATCH, SEQ), generator=gen)
    tokens = [torch.randint(0, TINY.vocab, (BATCH, 1), generator=gen) for _ in range(steps)]
    with torch.no_grad():
        logits, past = model(ids)
        want = [logits.numpy()]
        for t, nxt in enumerate(tokens):
            logits, past = model(nxt, past_key_values=past, position_ids=torch.full((BATCH, 1), SEQ + t))
            want.append(logits.numpy())
    progs = geir.models.llama(TINY, batch=BATCH, seq=SEQ, weights=model.state_dict(), dtype=dtype,
                              cache="inplace", max_len=MAX_LEN)
    options = EXACT if dtype == "f32" else {}
    prefill = geir.compile(progs.prefill, opt_level=opt_level, **options)
    decode = geir.compile(progs.decode, opt_level=opt_level, **options)
    np_type = np.float32 if dtype == "f32" else np.float16
    caches = {f"past_key_values.{i}.{kind}": np.zeros((BATCH, TINY.kv_heads, MAX_LEN, TINY.head_dim), np_type)
              for i in range(TINY.layers) for kind in ("key", "value")}
    out = prefill.run({"input_ids": ids.numpy(), "cache_position": np.array([0]),
                       "position_ids": np.tile(np.arange(SEQ), (BATCH, 1)), **caches})
    got = [out["logits"]]
    for t, nxt in enumerate(tokens):
        caches = {name.replace("present", "past_key_values"): v for name, v in out.items() if name != "logits"}
        out = decode.run({"input_ids": nxt.numpy(), "cache_position": np.array([SEQ + t]),
                          "position_ids": np.full((BATCH, 1), SEQ + t), **caches})
        got.append(out["logits"])
    return got, want, decode


@pytest.mark.parametrize("dtype, opt_level", [("f32", 0), ("f32", 3), ("f16", 3)])
def test_static_cache_llama_matches_torch(tiny, dtype, opt_level):
    """A prefill and three decode steps through a 32-row static cache updated in place: the
    logits of every step against torch's (which concatenates its cache)."""
    got, want, _ = _static_run(tiny[0], dtype, opt_level)
    for step, (a, b) in enumerate(zip(got, want)):
        if dtype == "f32":
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4, err_msg=f"step {step}")
        else:
            assert _cosine(a, b) >= 0.999, f"step {step}"


def test_static_cache_is_updated_in_place_and_attention_is_one_op(tiny):
    """At O3 every present is its past argument updated in place (no copy kernel at a cache
    write), and each layer's attention over the whole cache is one graph.attention."""
    from geir.dialects import attr_names
    from geir.runtime.ascend_interpreter import host_args

    _, _, decode = _static_run(tiny[0], "f32", 3, steps=1)
    presents = [h for h in host_args(decode.module) if h.name.startswith("present")]
    assert len(presents) == 2 * TINY.layers and all(h.updates is not None for h in presents)
    writes = [k for k in decode.module.walk() if k.name == "ascend.kernel"
              and "cache/Write" in str(k.location)]
    assert {k.attributes[attr_names.TEMPLATE].data for k in writes} == {"kv_cache"}
    assert sum(isinstance(op, g.AttentionOp) for op in decode.graph_module().walk()) == TINY.layers


def test_static_cache_position_past_the_end_is_a_clear_error(tiny):
    progs = geir.models.llama(TINY, batch=1, seq=SEQ, dtype="f32", cache="inplace", max_len=MAX_LEN)
    decode = geir.compile(progs.decode, opt_level=3)
    feeds = decode.random_inputs()
    feeds["cache_position"] = np.array([MAX_LEN])
    with pytest.raises(geir.errors.InterpreterError, match="'cache_position' = 32 is a KV-cache position past "
                                                           "the cache's maximum length: positions 0 to 31 fit"):
        decode.run(feeds)
    full = geir.models.llama(TINY, seq=TINY.max_seq, cache="inplace", max_len=TINY.max_seq, weights="shape-only")
    assert full.max_len == TINY.max_seq  # a prompt as long as the model's context: the decode step is within it
    with pytest.raises(GraphBuildError, match="positions up to 257 exceed max_seq 256"):
        geir.models.llama(TINY, seq=TINY.max_seq)  # the concat form's step would be position 256
    with pytest.raises(GraphBuildError, match="max_len must be an int from seq 8 to max_seq 256"):
        geir.models.llama(TINY, seq=SEQ, cache="inplace", max_len=1000)
    with pytest.raises(GraphBuildError, match="cache must be 'concat' or 'inplace'"):
        geir.models.llama(TINY, cache="paged")


def test_llm_report_of_a_static_cache_llama():
    """The LLM figures (models/llm_report.py) of the tiny LLaMA with shape-only weights: the KV
    cache and weight bytes as the configuration says, the decode step's HBM bound as every byte
    it must move once (weights; of the embedding table the tokens' rows; the whole cache), the
    throughputs from the latency."""
    from geir.models.llm_report import format_llm_report, llm_report
    from geir.target.device import load_device

    progs = geir.models.llama(TINY, batch=BATCH, seq=SEQ, weights="shape-only", cache="inplace", max_len=MAX_LEN)
    reports = progs.report()
    cache = 2 * TINY.layers * BATCH * MAX_LEN * TINY.kv_heads * TINY.head_dim * 2  # K and V, f16
    layer = 2 * TINY.hidden + 2 * TINY.hidden ** 2 + 2 * TINY.hidden * TINY.kv_heads * TINY.head_dim \
        + 3 * TINY.hidden * TINY.ffn  # two norms, q / o, k / v, gate / up / down
    weights = 2 * (TINY.layers * layer + TINY.hidden + 2 * TINY.vocab * TINY.hidden)  # + final norm, table, lm_head
    for kind, r in reports.items():
        assert r["kv_cache_bytes"] == cache and r["fits"], kind
        assert weights <= r["weight_bytes"] <= weights * 1.1, kind  # and the RoPE tables, the mask
        tokens = BATCH * (SEQ if kind == "prefill" else 1)
        assert r["tokens_per_s"] == pytest.approx(tokens / (r["latency_ms"] / 1e3))
        assert r["x_bound"] == pytest.approx(r["latency_ms"] / max(r["hbm_bound_ms"], r["cube_bound_ms"]))
    decode = reports["decode"]
    moved = weights - 2 * (TINY.vocab - BATCH) * TINY.hidden + cache  # the table's rows of the batch's tokens
    bandwidth = load_device("ascend910b").hbm_bytes_per_s
    # and the ids, the logits, the RoPE rows and the mask: under 2%
    assert decode["hbm_bound_ms"] * 1e-3 * bandwidth == pytest.approx(moved, rel=0.02)
    assert decode["ms_per_token"] == decode["latency_ms"] and decode["bound"] == "hbm"
    text = format_llm_report(reports)
    assert f"prefill {BATCH}x{SEQ}: time to first token" in text and "ms per token" in text and "(fits)" in text
    with pytest.raises(GeirError, match="kind must be one of prefill, decode"):
        llm_report(None, "generate", 1, 1)
    with pytest.raises(GraphBuildError, match="unknown program"):
        progs.report(programs=("train",))
