"""graph.attention end to end: its reference against torch's scaled_dot_product_attention, the
attention kernel (lowering/templates/attention.py) in the ascend interpreter against the
reference at small and odd sizes, and exported PyTorch attentions compiled at O3 (the
recogniser, then the kernel) against onnxruntime.

Tolerances: f32 1e-5 (the kernel's online softmax differs from the reference's by rounding);
f16 / bf16 a cosine of at least 0.999 (the kernel rounds P to the input type before P V)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import geir
from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.dialects import make_context
from geir.ir.text import parse_module
from geir.lowering.graph_to_ascend import ConvertGraphToAscend, fallback_ops
from geir.models import CONFIGS
from geir.reference.graph import reference_of
from geir.runtime.ascend_interpreter import run_ascend_module
from geir.runtime.interpreter import random_inputs, run_module
from geir.runtime.simulator import profile

CTX = make_context()
ATTENTION = reference_of(g.AttentionOp)


def _sdpa(q, k, v, mask=None, causal=False, scale=None):
    t = [torch.from_numpy(np.ascontiguousarray(x)) for x in (q, k, v)]
    group = q.shape[1] // k.shape[1]
    kk, vv = (x.repeat_interleave(group, 1) for x in t[1:])
    s, l = q.shape[2], k.shape[2]
    m = None if mask is None else torch.from_numpy(mask)
    if causal:  # the decode / prefix offset: query i sees keys j <= i + (L - S)
        tri = torch.ones(s, l, dtype=torch.bool).tril(l - s)
        m = torch.zeros(s, l).masked_fill(~tri, float("-inf")) + (0 if m is None else m)
    return F.scaled_dot_product_attention(t[0], kk, vv, attn_mask=m, scale=scale).numpy()


@pytest.mark.parametrize("b,h,hkv,s,l,d,causal,mask", [
    (2, 4, 4, 5, 5, 8, False, None),
    (2, 4, 2, 7, 7, 16, True, None),          # GQA, causal
    (2, 4, 1, 1, 9, 16, True, None),          # decode: one query over a cache
    (2, 4, 2, 3, 9, 8, True, (2, 1, 1, 9)),   # prefix offset and a padding mask
    (1, 2, 2, 6, 6, 8, False, (6, 6)),        # a bias
])
def test_reference_matches_torch(b, h, hkv, s, l, d, causal, mask):
    rng = np.random.default_rng(0)
    q = rng.standard_normal((b, h, s, d), dtype=np.float32)
    k = rng.standard_normal((b, hkv, l, d), dtype=np.float32)
    v = rng.standard_normal((b, hkv, l, d), dtype=np.float32)
    m = None if mask is None else np.where(rng.random(mask) < 0.3, -1e4, 0).astype(np.float32)
    scale = 1 / math.sqrt(d)
    got = ATTENTION(q, k, v, m, scale=scale, causal=int(causal))
    np.testing.assert_allclose(got, _sdpa(q, k, v, m, causal, scale), rtol=1e-5, atol=1e-5)


def _text(b, h, hkv, s, l, d, dv, elt, causal, mask):
    q, k = f"tensor<{b}x{h}x{s}x{d}x{elt}>", f"tensor<{b}x{hkv}x{l}x{d}x{elt}>"
    v, o = f"tensor<{b}x{hkv}x{l}x{dv}x{elt}>", f"tensor<{b}x{h}x{s}x{dv}x{elt}>"
    args = f'%q: {q} {{onnx.name = "q"}}, %k: {k} {{onnx.name = "k"}}, %v: {v} {{onnx.name = "v"}}'
    ops, types = "%q, %k, %v", f"{q}, {k}, {v}"
    if mask:
        mt = "tensor<" + "x".join(map(str, mask)) + f"x{elt}>"
        args, ops, types = args + f', %m: {mt} {{onnx.name = "m"}}', ops + ", %m", types + ", " + mt
    return f'''func.func @main({args}) -> ({o} {{onnx.name = "y"}}) {{
  %y = graph.attention {ops} {{scale = {1 / math.sqrt(d)} : f32, causal = {int(causal)} : i64}} : ({types}) -> {o} loc("attn")
  func.return %y : {o}
}}'''


def _run(text, mask_shape=None):
    graph, lowered = parse_module(text, CTX), parse_module(text, CTX)
    ConvertGraphToAscend().apply(CTX, lowered)
    lowered.verify()
    feeds = random_inputs(graph, seed=0)
    if mask_shape:
        m = feeds["m"]
        feeds["m"] = np.where(np.random.default_rng(1).random(m.shape) < 0.3, -1e4, 0).astype(m.dtype)
    got = next(iter(run_ascend_module(lowered, feeds).values()))
    want = next(iter(run_module(graph, feeds).values()))
    return lowered, np.asarray(got, np.float64), np.asarray(want, np.float64)


def _cosine(x, y):
    return float(np.dot(x.ravel(), y.ravel()) / (np.linalg.norm(x) * np.linalg.norm(y)))


CASES = [
    # b, h, hkv, s, l, d, dv, causal, mask
    (1, 2, 2, 20, 20, 16, 16, False, None),
    (2, 4, 2, 37, 37, 64, 64, True, None),          # S not a multiple of the tile, GQA
    (1, 2, 1, 130, 130, 80, 80, True, None),        # D = 80, several query and key tiles
    (1, 2, 2, 200, 200, 128, 128, False, None),     # D = 128
    (2, 4, 1, 1, 300, 64, 64, True, None),          # decode: S = 1 over a cache of 300
    (2, 2, 2, 37, 53, 24, 40, True, (2, 1, 1, 53)),  # prefix offset, padding mask, Dv != D
    (2, 2, 2, 50, 70, 32, 32, False, (1, 1, 50, 70)),  # a bias per query and key
]


@pytest.mark.parametrize("b,h,hkv,s,l,d,dv,causal,mask", CASES)
@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_kernel_matches_reference(b, h, hkv, s, l, d, dv, causal, mask, elt):
    lowered, got, want = _run(_text(b, h, hkv, s, l, d, dv, elt, causal, mask), mask)
    kernels = [k for k in lowered.ops if isinstance(k, a.KernelOp)]
    assert [k.attributes["template"].data for k in kernels] == ["attention"]
    assert fallback_ops(lowered) == []
    if elt == "f32":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        assert _cosine(got, want) >= 0.999


def test_kernel_bf16():
    _, got, want = _run(_text(1, 2, 2, 130, 130, 128, 128, "bf16", True, None))
    assert _cosine(got, want) >= 0.999


@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_query_tile_spanning_several_key_tiles(monkeypatch, elt):
    """One causal query tile of 64 rows over key tiles of 16: the band on each of the four
    diagonal tiles (with two only, rows 32.. would see later keys)."""
    from geir.lowering.templates import attention

    monkeypatch.setattr(attention, "TILE_CHOICES", (64,))
    monkeypatch.setattr(attention, "KEY_CHOICES", (16,))
    lowered, got, want = _run(_text(1, 2, 2, 64, 64, 16, 16, elt, True, None))
    kernel = next(k for k in lowered.ops if isinstance(k, a.KernelOp))
    assert kernel.body.block.args[-3].type.get_shape()[1] == 16  # the S scratch: key tiles of 16
    if elt == "f32":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        assert _cosine(got, want) >= 0.999


@pytest.mark.parametrize("b,h,hkv,s,l,d,elt,mask", [
    (1, 5, 5, 1, 3000, 128, "f16", None),            # a decode step; the last tile 184 keys (64 + 64 + 56)
    (2, 4, 2, 3, 1000, 128, "f16", (2, 1, 3, 1000)),  # GQA, three query rows, a padding mask
    (1, 2, 2, 1, 2000, 64, "f32", None),             # f32: steps of what l0b holds of f32
])
def test_key_tiles_in_cube_steps(b, h, hkv, s, l, d, elt, mask):
    """A key tile larger than l0a / l0b hold: K and V come into l1 a tile at a time and the cube
    takes the tile in steps (scores into the step's columns of the l0c tile, P V accumulated
    over the steps); the outputs are the graph's."""
    lowered, got, want = _run(_text(b, h, hkv, s, l, d, d, elt, False, mask), mask)
    kernel = next(k for k in lowered.ops if isinstance(k, a.KernelOp))
    shapes = {op.memref.name_hint: op.memref.type.get_shape() for op in kernel.walk() if isinstance(op, a.AllocOp)}
    assert shapes["kt0s0"][1] < shapes["k1s0"][0]  # a cube step is part of the key tile
    if elt == "f32":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    else:
        assert _cosine(got, want) >= 0.999


SPLIT_CASES = [
    # b, h, hkv, s, l, d, dv, mask: few heads over a long cache (flash decoding's parts)
    (1, 1, 1, 2, 4096, 128, 128, None),
    (1, 4, 2, 1, 4096, 128, 128, (1, 1, 1, 4096)),     # GQA, a padding mask
    (2, 2, 1, 3, 6000, 128, 64, (2, 1, 3, 6000)),       # batch 2, three query rows, Dv != D, a last part shorter
]


@pytest.mark.parametrize("b,h,hkv,s,l,d,dv,mask", SPLIT_CASES)
@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_split_keys_and_their_combine_match_the_reference(b, h, hkv, s, l, d, dv, mask, elt):
    lowered, got, want = _run(_text(b, h, hkv, s, l, d, dv, elt, False, mask), mask)
    kernels = [k for k in lowered.ops if isinstance(k, a.KernelOp)]
    assert [(k.sym_name.data, k.core_type.data) for k in kernels] == [("k0_attn", "mix"), ("k0_attn_combine", "vector")]
    assert kernels[0].block_count > b * h  # the parts fill the cores the heads left idle
    if elt == "f32":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    else:
        assert _cosine(got, want) >= 0.999


@pytest.mark.parametrize("elt", ["f32", "f16"])
@pytest.mark.parametrize("causal,mask", [(True, None), (False, (1, 1, 1, 2048))])
def test_grouped_query_decode_reads_each_kv_head_once(elt, causal, mask):
    """8 query heads on 2 kv heads, one query row: a work item holds a kv head's 4 query heads
    as its rows, so the kernel's HBM traffic is K and V once (plus the parts' hand-offs), not
    4 times; the outputs are the graph's."""
    text = _text(1, 8, 2, 1, 2048, 128, 128, elt, causal, mask)
    graph, lowered = parse_module(text, CTX), parse_module(text, CTX)
    ConvertGraphToAscend().apply(CTX, lowered)
    feeds = random_inputs(graph, seed=0)
    if mask:
        feeds["m"] = np.where(np.arange(2048) < 1500, 0, -np.inf).astype(feeds["m"].dtype).reshape(mask)
    out, sim = profile(lowered, feeds)
    got = np.asarray(next(iter(out.values())), np.float64)
    want = np.asarray(next(iter(run_module(graph, feeds).values())), np.float64)
    if elt == "f32":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    else:
        assert _cosine(got, want) >= 0.999
    kv = 2 * 2 * 2048 * 128 * (4 if elt == "f32" else 2)
    attention = sim.kernels[0]
    assert kv <= attention.hbm_bytes < 1.5 * kv, (attention.hbm_bytes, kv)


def test_a_part_whose_keys_are_all_masked_weighs_nothing():
    """A decode step at position 100 of a 4096-row cache: the keys past it are -inf, so every
    part after the first sees no key; its log-sum-exp is about -1e30 and its weight 0."""
    text = _text(1, 2, 2, 1, 4096, 64, 64, "f32", False, (1, 1, 1, 4096))
    graph, lowered = parse_module(text, CTX), parse_module(text, CTX)
    ConvertGraphToAscend().apply(CTX, lowered)
    assert any(k.sym_name.data.endswith("_combine") for k in lowered.ops if isinstance(k, a.KernelOp))
    feeds = random_inputs(graph, seed=0)
    feeds["m"] = np.where(np.arange(4096) <= 100, 0, -np.inf).astype(np.float32).reshape(1, 1, 1, 4096)
    got = next(iter(run_ascend_module(lowered, feeds).values()))
    want = next(iter(run_module(graph, feeds).values()))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_decode_step_whose_attention_splits_matches_the_reference_end_to_end():
    """A small LLaMA (2 heads, 1 kv head) decoding at row 3000 of a 4096-row cache: each
    layer's attention is a chain of two kernels through the whole pipeline (streams, events,
    memory plan); outputs and the updated cache equal the graph's, and a timing-only profile
    times the chain as a full run does."""
    config = dataclasses.replace(CONFIGS["tiny"], hidden=128, heads=2, kv_heads=1, max_seq=4096)
    progs = geir.models.llama(config, batch=1, seq=1, dtype="f32", cache="inplace", max_len=4096)
    cm = geir.compile(progs.decode, precision_mode="must_keep_origin_dtype")
    kernels = [k.sym_name.data for k in cm.module.walk() if isinstance(k, a.KernelOp)]
    assert sum(n.endswith("_combine") for n in kernels) == config.layers
    feeds = cm.random_inputs(0)
    for name in ("cache_position", "position_ids"):
        feeds[name] = np.full_like(feeds[name], 3000)
    got, full = cm.profile(feeds)
    want = run_module(progs.decode, feeds)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5, err_msg=name)
    _, timed = cm.profile(feeds, mode="timing")
    assert timed["latency_us"] == full["latency_us"]


def _attention_us(report: dict, name: str) -> float:
    (kernel,) = [k for k in report["kernels"] if k["name"] == name]
    return kernel["time_us"]


@pytest.mark.parametrize("batch,seq,max_len", [(2, 40, 128), (1, 64, 64)])
def test_a_static_cache_prefill_computes_its_causal_band_from_the_position(batch, seq, max_len):
    """A prefill over a static cache masks cache row j for query i unless j <= position + i
    (the builder's Where(LessOrEqual) mask): graph-recognize-attention makes it one
    graph.causal_mask per layer, fused into the attention kernel, which reads the position and
    skips the key tiles no query of a tile sees. At every position the outputs and the cache
    equal the graph's, no kernel computes the mask, and the attention takes less time at
    position 0 (each query tile's keys up to its own rows) than at the cache's last rows."""
    config = dataclasses.replace(CONFIGS["tiny"], layers=1, max_seq=max_len)
    progs = geir.models.llama(config, batch=batch, seq=seq, dtype="f32", cache="inplace", max_len=max_len)
    cm = geir.compile(progs.prefill, precision_mode="must_keep_origin_dtype")
    kernels = [k for k in cm.module.walk() if isinstance(k, a.KernelOp)]
    assert fallback_ops(cm.module) == []
    (attention,) = [k.sym_name.data for k in kernels if k.attributes["template"].data == "attention"]
    assert not any("cache_mask" in k.sym_name.data for k in kernels)  # no kernel of the mask's own
    times = {}
    for position in sorted({0, min(5, max_len - seq), max_len - seq}):
        feeds = cm.random_inputs(position)
        feeds["cache_position"] = np.array([position], np.int64)
        feeds["position_ids"] = np.broadcast_to(position + np.arange(seq), (batch, seq)).copy()
        got, report = cm.profile({k: v.copy() for k, v in feeds.items()})
        want = run_module(progs.prefill, feeds)
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5, err_msg=f"{name} at {position}")
        times[position] = _attention_us(report, attention)
    if max_len > seq:
        assert times[0] < times[max_len - seq]


def test_mask_along_keys_runs_the_fallback():
    """A mask broadcast along the keys is not tiled: the reference fallback, right numbers."""
    lowered, got, want = _run(_text(1, 2, 2, 8, 8, 16, 16, "f32", False, (1, 2, 8, 1)), (1, 2, 8, 1))
    assert len(fallback_ops(lowered)) == 1
    np.testing.assert_allclose(got, want, rtol=1e-6)


class _Sdpa(torch.nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class _HfGqa(torch.nn.Module):
    """Hugging Face's eager attention: repeat_kv, q k^T / sqrt(d) + a triangular mask, softmax."""

    def forward(self, q, k, v, mask):
        b, hkv, l, d = k.shape
        k = k[:, :, None].expand(b, hkv, 2, l, d).reshape(b, hkv * 2, l, d)
        v = v[:, :, None].expand(b, hkv, 2, l, d).reshape(b, hkv * 2, l, d)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
        w = w + torch.full((q.shape[2], l), float("-inf")).triu(1) + mask
        return torch.matmul(F.softmax(w, dim=-1), v)


@pytest.mark.parametrize("model,dynamo", [(_Sdpa, False), (_HfGqa, True), (_HfGqa, False)])
def test_exported_attention_at_o3(tmp_path, model, dynamo):
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 4, 24, 32), dtype=np.float32)
    heads = 2 if model is _HfGqa else 4
    k = rng.standard_normal((2, heads, 24, 32), dtype=np.float32)
    v = rng.standard_normal((2, heads, 24, 32), dtype=np.float32)
    args = [q, k, v] + ([np.where(rng.random((2, 1, 1, 24)) < 0.2, -1e4, 0).astype(np.float32)]
                        if model is _HfGqa else [])
    path = tmp_path / "attention.onnx"
    torch.onnx.export(model().eval(), tuple(map(torch.from_numpy, args)), str(path), dynamo=dynamo,
                      opset_version=18 if dynamo else 17)
    sess = ort.InferenceSession(str(path))
    feeds = {i.name: x for i, x in zip(sess.get_inputs(), args)}
    want = sess.run(None, feeds)[0]
    exact = geir.compile(str(path), opt_level=3, precision_mode="must_keep_origin_dtype")
    templates = [k.attributes.get("template") for k in exact.module.ops if isinstance(k, a.KernelOp)]
    assert [t.data for t in templates if t is not None] == ["attention"]
    np.testing.assert_allclose(next(iter(exact.run(feeds).values())), want, rtol=1e-5, atol=1e-5)
    fp16 = geir.compile(str(path), opt_level=3)
    assert _cosine(np.asarray(next(iter(fp16.run(feeds).values())), np.float64), want) >= 0.999


F16_SOFTMAX = """func.func @main(%q: tensor<2x4x64x32xf16>, %k: tensor<2x4x64x32xf16>, %v: tensor<2x4x64x32xf16>) -> tensor<2x4x64x32xf16> {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x64x32xf16>) -> tensor<2x4x32x64xf16>
  %s = graph.matmul %q, %kt : (tensor<2x4x64x32xf16>, tensor<2x4x32x64xf16>) -> tensor<2x4x64x64xf16>
  %c = graph.constant dense<1.767767e-01> : tensor<f16>
  %ss = graph.mul %s, %c : (tensor<2x4x64x64xf16>, tensor<f16>) -> tensor<2x4x64x64xf16>
  %p = graph.softmax %ss {axis = -1 : i64} : (tensor<2x4x64x64xf16>) -> tensor<2x4x64x64xf16>
  %o = graph.matmul %p, %v : (tensor<2x4x64x64xf16>, tensor<2x4x64x32xf16>) -> tensor<2x4x64x32xf16>
  func.return %o : tensor<2x4x64x32xf16>
}"""


@pytest.mark.parametrize("mode", ["must_keep_origin_dtype", "force_fp16"])
def test_an_f16_softmax_is_fused_unless_the_model_precision_is_kept(mode):
    """graph.attention computes its softmax in f32. must_keep_origin_dtype keeps a softmax the
    model computes in f16 out of it (three kernels within one f16 ulp of the graph interpreter:
    the softmax is bit-equal, but the products' f32 sums run in the cube's K steps there and
    in numpy's BLAS order here, which depends on the CPU, so an f16 rounding may fall on
    either side); force_fp16, the default, fuses it into the one attention kernel."""
    graph = parse_module(F16_SOFTMAX, make_context())
    cm = geir.compile(graph, opt_level=3, precision_mode=mode)
    templates = [k.attributes["template"].data for k in cm.module.ops if isinstance(k, a.KernelOp)]
    feeds = cm.random_inputs(0)
    got, want = next(iter(cm.run(feeds).values())), next(iter(run_module(graph, feeds).values()))
    if mode == "must_keep_origin_dtype":
        assert templates == ["matmul", "row", "matmul"]
        np.testing.assert_array_max_ulp(got, want, maxulp=1)
    else:
        assert templates == ["attention"]
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=4e-3, atol=4e-3)


# -- the attention fusion: q, k, v read through views, the output written through the head merge --

def _t(shape, elt):
    return "tensor<" + "x".join(map(str, shape)) + f"x{elt}>"


def _viewed_text(form, b, h, hkv, s, d, elt, causal):
    """graph.attention whose q, k, v come through views of the function's arguments and whose
    result goes through the head merge [B, H, S, D] -> [B, S, H * D] (what graph-fuse's
    attention fusion takes), in one of the forms the models write."""
    q4, k4 = _t((b, h, s, d), elt), _t((b, hkv, s, d), elt)
    merged = _t((b, s, h * d), elt)
    lines, cst = [], []
    if form == "qkv":  # the TransformerBlock: one projection, Split, per-head Reshape + Transpose
        args = f'%qkv: {_t((b, s, 3 * h * d), elt)} {{onnx.name = "qkv"}}'
        part, heads = _t((b, s, h * d), elt), _t((b, s, h, d), elt)
        cst += [f'%sizes = graph.constant dense<{h * d}> : tensor<3xi64> loc("sizes")',
                f'%heads = graph.constant dense<[{b}, {s}, {h}, {d}]> : tensor<4xi64> loc("heads")']
        lines.append(f'%p0, %p1, %p2 = graph.split %qkv, %sizes {{axis = -1 : i64}} : '
                     f'({_t((b, s, 3 * h * d), elt)}, tensor<3xi64>) -> ({part}, {part}, {part}) loc("split")')
        for i, n in enumerate("qkv"):
            lines.append(f'%{n}h = graph.reshape %p{i}, %heads : ({part}, tensor<4xi64>) -> {heads} loc("{n}_heads")')
            lines.append(f'%{n}t = graph.transpose %{n}h {{perm = array<i64: 0, 2, 1, 3>}} : ({heads}) -> {q4} loc("{n}_t")')
    elif form == "bshd":  # LLaMA: [B, S, H, D] projections transposed, fewer kv heads
        args = ", ".join(f'%{n}: {_t((b, s, hh, d), elt)} {{onnx.name = "{n}"}}' for n, hh in (("q", h), ("k", hkv), ("v", hkv)))
        for n, hh in (("q", h), ("k", hkv), ("v", hkv)):
            lines.append(f'%{n}t = graph.transpose %{n} {{perm = array<i64: 0, 2, 1, 3>}} : '
                         f'({_t((b, s, hh, d), elt)}) -> {_t((b, hh, s, d), elt)} loc("{n}_t")')
    else:  # "slices": q and k, v as halves of the head dim of two tensors
        args = f'%x: {_t((b, h, s, 2 * d), elt)} {{onnx.name = "x"}}, %kv: {_t((b, hkv, s, 2 * d), elt)} {{onnx.name = "kv"}}'
        cst += [f'%c0 = graph.constant dense<0> : tensor<1xi64> loc("c0")',
                f'%cd = graph.constant dense<{d}> : tensor<1xi64> loc("cd")',
                f'%c2d = graph.constant dense<{2 * d}> : tensor<1xi64> loc("c2d")',
                f'%ax = graph.constant dense<3> : tensor<1xi64> loc("ax")']
        for n, src, hh, lo, hi in (("q", "x", h, "c0", "cd"), ("k", "kv", hkv, "c0", "cd"), ("v", "kv", hkv, "cd", "c2d")):
            lines.append(f'%{n}t = graph.slice %{src}, %{lo}, %{hi}, %ax : ({_t((b, hh, s, 2 * d), elt)}, '
                         f'tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> {_t((b, hh, s, d), elt)} loc("{n}_slice")')
    kv4 = k4 if form != "qkv" else q4
    lines.append(f'%o = graph.attention %qt, %kt, %vt {{scale = {1 / math.sqrt(d)} : f32, causal = {int(causal)} : i64}} : '
                 f'({q4}, {kv4}, {kv4}) -> {q4} loc("attn")')
    cst.append(f'%merged = graph.constant dense<[{b}, {s}, {h * d}]> : tensor<3xi64> loc("merged")')
    lines.append(f'%ot = graph.transpose %o {{perm = array<i64: 0, 2, 1, 3>}} : ({q4}) -> {_t((b, s, h, d), elt)} loc("merge")')
    lines.append(f'%y = graph.reshape %ot, %merged : ({_t((b, s, h, d), elt)}, tensor<3xi64>) -> {merged} loc("merged")')
    body = "\n  ".join(cst + lines)
    return f'''func.func @main({args}) -> ({merged} {{onnx.name = "y"}}) {{
  {body}
  func.return %y : {merged}
}}'''


def _fused_run(text):
    from geir.passes.graph.fuse import FusePass

    graph, lowered = parse_module(text, CTX), parse_module(text, CTX)
    FusePass().apply(CTX, lowered)
    fusions = [op for op in lowered.walk() if isinstance(op, g.FusionOp)]
    ConvertGraphToAscend().apply(CTX, lowered)
    lowered.verify()
    feeds = random_inputs(graph, seed=0)
    got = next(iter(run_ascend_module(lowered, feeds).values()))
    want = next(iter(run_module(graph, feeds).values()))
    templates = [k.attributes["template"].data for k in lowered.ops if isinstance(k, a.KernelOp)]
    return fusions, templates, np.asarray(got, np.float64), np.asarray(want, np.float64)


@pytest.mark.parametrize("form,b,h,hkv,s,d,causal", [
    ("qkv", 2, 2, 2, 37, 16, False),    # S not a multiple of the tile
    ("qkv", 1, 4, 4, 20, 32, True),
    ("bshd", 2, 4, 2, 24, 16, True),    # GQA
    ("slices", 2, 2, 1, 19, 16, True),  # slices of the head dim, GQA
])
@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_attention_fusion_reads_views_and_writes_the_merge(form, b, h, hkv, s, d, causal, elt):
    """graph-fuse puts the views, the attention and the head merge in one fusion, and the
    attention kernel reads q, k, v with strided DMA from the arguments and writes [B, S, H*D]:
    one kernel, no data kernel, the reference's numbers."""
    fusions, templates, got, want = _fused_run(_viewed_text(form, b, h, hkv, s, d, elt, causal))
    assert [f.attributes["graph.pattern"].data for f in fusions] == ["attention"]
    assert templates == ["attention"]
    if elt == "f32":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        assert _cosine(got, want) >= 0.999


SEQUENCE_FIRST = """func.func @main(%qkv: tensor<16x2x48xf32> {onnx.name = "qkv"}) -> (tensor<32x16xf32> {onnx.name = "y"}) {
  %s0 = graph.constant dense<0> : tensor<1xi64> loc("s0")
  %s1 = graph.constant dense<16> : tensor<1xi64> loc("s1")
  %s2 = graph.constant dense<32> : tensor<1xi64> loc("s2")
  %s3 = graph.constant dense<48> : tensor<1xi64> loc("s3")
  %ax = graph.constant dense<2> : tensor<1xi64> loc("ax")
  %bh = graph.constant dense<[16, 4, 8]> : tensor<3xi64> loc("bh")
  %heads = graph.constant dense<[2, 2, 16, 8]> : tensor<4xi64> loc("heads")
  %rows = graph.constant dense<[32, 16]> : tensor<2xi64> loc("rows")
  %q = graph.slice %qkv, %s0, %s1, %ax : (tensor<16x2x48xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<16x2x16xf32> loc("q")
  %k = graph.slice %qkv, %s1, %s2, %ax : (tensor<16x2x48xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<16x2x16xf32> loc("k")
  %v = graph.slice %qkv, %s2, %s3, %ax : (tensor<16x2x48xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<16x2x16xf32> loc("v")
  %qm = graph.reshape %q, %bh : (tensor<16x2x16xf32>, tensor<3xi64>) -> tensor<16x4x8xf32> loc("q_bh")
  %qt = graph.transpose %qm {perm = array<i64: 1, 0, 2>} : (tensor<16x4x8xf32>) -> tensor<4x16x8xf32> loc("q_t")
  %qh = graph.reshape %qt, %heads : (tensor<4x16x8xf32>, tensor<4xi64>) -> tensor<2x2x16x8xf32> loc("q_heads")
  %km = graph.reshape %k, %bh : (tensor<16x2x16xf32>, tensor<3xi64>) -> tensor<16x4x8xf32> loc("k_bh")
  %kt = graph.transpose %km {perm = array<i64: 1, 0, 2>} : (tensor<16x4x8xf32>) -> tensor<4x16x8xf32> loc("k_t")
  %kh = graph.reshape %kt, %heads : (tensor<4x16x8xf32>, tensor<4xi64>) -> tensor<2x2x16x8xf32> loc("k_heads")
  %vm = graph.reshape %v, %bh : (tensor<16x2x16xf32>, tensor<3xi64>) -> tensor<16x4x8xf32> loc("v_bh")
  %vt = graph.transpose %vm {perm = array<i64: 1, 0, 2>} : (tensor<16x4x8xf32>) -> tensor<4x16x8xf32> loc("v_t")
  %vh = graph.reshape %vt, %heads : (tensor<4x16x8xf32>, tensor<4xi64>) -> tensor<2x2x16x8xf32> loc("v_heads")
  %o = graph.attention %qh, %kh, %vh {scale = 0.35 : f32, causal = 0 : i64} : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> loc("attn")
  %ot = graph.transpose %o {perm = array<i64: 2, 0, 1, 3>} : (tensor<2x2x16x8xf32>) -> tensor<16x2x2x8xf32> loc("merge")
  %y = graph.reshape %ot, %rows : (tensor<16x2x2x8xf32>, tensor<2xi64>) -> tensor<32x16xf32> loc("rows")
  func.return %y : tensor<32x16xf32>
}"""


def test_sequence_first_heads_are_read_through_merged_views():
    """The dynamo exporter's nn.MultiheadAttention: q, k, v are [S, B, E] slices seen as
    [S, B * H, D], whose b and h are not one stride apart, and then as [B, H, S, D]. The
    views compose through that merge (data.py `Merged`): one attention kernel, no data
    kernel, the reference's numbers."""
    fusions, templates, got, want = _fused_run(SEQUENCE_FIRST)
    assert [f.attributes["graph.pattern"].data for f in fusions] == ["attention"]
    assert templates == ["attention"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_attention_fusion_the_kernel_cannot_take_runs_in_pieces():
    """q through a transpose of its last two dims (d strided: DMA moves rows): the fusion is
    formed, the attention template refuses it, and the lowering runs its pieces separately -
    the transpose as a data kernel, then the attention (writing through the head merge, which
    it can) - with the right numbers."""
    b, h, s, d = 1, 2, 16, 16
    q, x, o = _t((b, h, s, d), "f32"), _t((b, h, d, s), "f32"), _t((b, s, h * d), "f32")
    text = f'''func.func @main(%x: {x} {{onnx.name = "x"}}, %k: {q} {{onnx.name = "k"}}, %v: {q} {{onnx.name = "v"}}) -> ({o} {{onnx.name = "y"}}) {{
  %merged = graph.constant dense<[{b}, {s}, {h * d}]> : tensor<3xi64> loc("merged")
  %q = graph.transpose %x {{perm = array<i64: 0, 1, 3, 2>}} : ({x}) -> {q} loc("q_t")
  %a = graph.attention %q, %k, %v {{scale = 0.25 : f32, causal = 0 : i64}} : ({q}, {q}, {q}) -> {q} loc("attn")
  %m = graph.transpose %a {{perm = array<i64: 0, 2, 1, 3>}} : ({q}) -> {_t((b, s, h, d), "f32")} loc("merge")
  %y = graph.reshape %m, %merged : ({_t((b, s, h, d), "f32")}, tensor<3xi64>) -> {o} loc("merged")
  func.return %y : {o}
}}'''
    fusions, templates, got, want = _fused_run(text)
    assert [f.attributes["graph.pattern"].data for f in fusions] == ["attention"]
    assert templates == ["data", "attention"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_block_choices_price_fewer_blocks_of_equal_work():
    """32 items on 24 cores take two waves at least: the fewest blocks for two waves are 16,
    then 11, 8 and 7 blocks for three to five; 48 items fill the 24 cores evenly."""
    from geir.lowering.templates.attention import block_choices

    assert block_choices(32, 24) == [16, 11, 8, 7]
    assert block_choices(48, 24)[0] == 24
    assert block_choices(5, 24) == [5, 3, 2]
    assert block_choices(1, 24) == [1]


@pytest.mark.parametrize("b,h,s,l,causal", [
    (1, 8, 1024, 1024, True),     # prefill: K and V read again per query tile
    (1, 8, 1, 4096, False),       # a decode step: K and V read once
])
def test_the_tiling_estimate_is_near_the_simulated_kernel(monkeypatch, b, h, s, l, causal):
    """The attention tiling prices K / V re-reads and the S / P / P V hand-offs with the
    simulator's L2 rule (CostModel.l2_hit_fraction), so what it predicts for the kernel it
    picks is what the simulator measures, within a fifth (timing-only run; pricing every byte
    at HBM, the prefill case misses by 26%)."""
    from geir.lowering.templates import attention

    chosen = []
    original = attention.attention_tiling

    def spy(req, plan):
        chosen.append(original(req, plan))
        return chosen[-1]

    monkeypatch.setattr(attention, "attention_tiling", spy)
    text = _text(b, h, h, s, l, 128, 128, "f16", causal, None)
    graph, lowered = parse_module(text, CTX), parse_module(text, CTX)
    ConvertGraphToAscend().apply(CTX, lowered)
    _, sim = profile(lowered, random_inputs(graph, seed=0), timing=True)
    (tiling,) = chosen
    assert tiling.splits == 1
    (k,) = [r for r in sim.kernels if r.name.endswith("attn")]
    assert k.standalone_exec_us == pytest.approx(tiling.estimate_us, rel=0.2)
    if s > 1:
        assert k.l2_hit_bytes > k.hbm_bytes  # K and V come back from L2 for every query tile
