"""graph.kv_cache_write: a decode step writes its new K/V rows into a cache of fixed maximum
length, in place when the cache is an argument nothing else reads - the step's cost does
not grow with the cache - and a position past the end is a clear error."""

from __future__ import annotations

import numpy as np
import pytest

import geir
from geir.dialects import attr_names
from geir.dialects import make_context
from geir.ir.text import parse_module
from geir.runtime.interpreter import run_module

DECODE = """
func.func @main(%k: tensor<{B}x{H}x{L}x{D}x{T}> {{onnx.name = "past_k"}}, %knew: tensor<{B}x{H}x{N}x{D}x{T}> {{onnx.name = "k_new"}},
                %pos: tensor<1xi64> {{onnx.name = "position"}}, %q: tensor<{B}x{H}x{N}x{D}x{T}> {{onnx.name = "q"}})
    -> (tensor<{B}x{H}x{L}x{D}x{T}> {{onnx.name = "present_k"}}, tensor<{B}x{H}x{N}x{L}x{T}> {{onnx.name = "scores"}}) {{
  %kc = graph.kv_cache_write %k, %knew, %pos : (tensor<{B}x{H}x{L}x{D}x{T}>, tensor<{B}x{H}x{N}x{D}x{T}>, tensor<1xi64>) -> tensor<{B}x{H}x{L}x{D}x{T}> loc("k_write")
  %kt = graph.transpose %kc {{perm = array<i64: 0, 1, 3, 2>}} : (tensor<{B}x{H}x{L}x{D}x{T}>) -> tensor<{B}x{H}x{D}x{L}x{T}> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<{B}x{H}x{N}x{D}x{T}>, tensor<{B}x{H}x{D}x{L}x{T}>) -> tensor<{B}x{H}x{N}x{L}x{T}> loc("qk")
  func.return {ret}
}}
"""


def decode_module(B=2, H=2, L=16, D=64, N=1, T="f16", keep_old=False):
    ret = "%kc, %s : tensor<{B}x{H}x{L}x{D}x{T}>, tensor<{B}x{H}x{N}x{L}x{T}>"
    text = DECODE.format(B=B, H=H, L=L, D=D, N=N, T=T, ret=ret.format(B=B, H=H, L=L, D=D, N=N, T=T))
    if keep_old:  # the old cache read again after the write: no update in place
        text = text.replace("%s = graph.matmul %q, %kt", "%s = graph.matmul %q, %kt_old").replace(
            '%kt = graph.transpose %kc', '%kt_old = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : '
            f'(tensor<{B}x{H}x{L}x{D}x{T}>) -> tensor<{B}x{H}x{D}x{L}x{T}>\n  %kt = graph.transpose %kc')
    return parse_module(text, make_context())


def write_kernels(cm) -> list[str]:
    """The templates of the kernels at the cache write (the write; a copy of the cache if not
    in place)."""
    from geir.ir.locations import loc_names

    return [k.attributes[attr_names.TEMPLATE].data for k in cm.module.walk()
            if k.name == "ascend.kernel" and loc_names(k.location) == ["k_write"]]


@pytest.mark.parametrize("level", [0, 3])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_decode_steps_update_the_cache_in_place(level, dtype):
    np_t = np.float32 if dtype == "f32" else np.float16
    mode = "must_keep_origin_dtype" if dtype == "f32" else "force_fp16"
    cm = geir.compile(decode_module(T=dtype), opt_level=level, precision_mode=mode)
    assert write_kernels(cm) == ["kv_cache"]  # no copy of the cache
    rng = np.random.default_rng(0)
    cache = np.zeros((2, 2, 16, 64), np_t)
    expected = cache.copy()
    for step in range(3):
        new = rng.standard_normal((2, 2, 1, 64)).astype(np_t)
        q = rng.standard_normal((2, 2, 1, 64)).astype(np_t)
        out = cm.run({"past_k": cache, "k_new": new, "position": np.array([step]), "q": q})
        expected[:, :, step] = new[:, :, 0]
        np.testing.assert_array_equal(out["present_k"], expected)
        scores = q.astype(np.float32) @ expected.astype(np.float32).transpose(0, 1, 3, 2)
        np.testing.assert_allclose(out["scores"], scores, rtol=2e-3, atol=2e-3)
        cache = out["present_k"]


def test_old_cache_read_again_is_copied_not_overwritten():
    cm = geir.compile(decode_module(keep_old=True), opt_level=3)
    rng = np.random.default_rng(1)
    cache = rng.standard_normal((2, 2, 16, 64)).astype(np.float16)
    new, q = (rng.standard_normal((2, 2, 1, 64)).astype(np.float16) for _ in range(2))
    feeds = {"past_k": cache, "k_new": new, "position": np.array([7]), "q": q}
    out = cm.run(feeds)
    expected = run_module(decode_module(keep_old=True), feeds)
    np.testing.assert_array_equal(out["present_k"], expected["present_k"])
    np.testing.assert_allclose(out["scores"], expected["scores"], rtol=2e-3, atol=2e-3)
    assert sorted(write_kernels(cm)) == ["data", "kv_cache"]  # the cache copied into the result first


@pytest.mark.parametrize("position", [16, -1])
def test_position_past_the_cache_is_a_clear_error(position):
    feeds = {"past_k": np.zeros((2, 2, 16, 64), np.float16), "k_new": np.zeros((2, 2, 1, 64), np.float16),
             "position": np.array([position]), "q": np.zeros((2, 2, 1, 64), np.float16)}
    with pytest.raises(geir.errors.InterpreterError, match="KV-cache position past the cache's maximum length: "
                                                           "positions 0 to 15 fit"):
        geir.compile(decode_module(), opt_level=3).run(feeds)
    with pytest.raises(geir.errors.InterpreterError, match='"k_write".*passes the cache.s maximum length 16'):
        run_module(decode_module(), feeds)


def test_step_cost_does_not_grow_with_the_cache():
    """LLaMA-7B's cache (32 heads x 128) at 512 and 4096 positions: the write kernel moves
    the same bytes and takes the same modeled time, and the program holds no second cache."""
    times, peaks = {}, {}
    for length in (512, 4096):
        module = decode_module(B=1, H=32, L=length, D=128)
        cm = geir.compile(module, opt_level=3)
        _, report = cm.profile()
        write = next(k for k in report["kernels"] if k["nodes"] == ["k_write"])
        times[length] = (write["time_us"], write["hbm_bytes"])
        cache_bytes = 32 * length * 128 * 2
        peaks[length] = report["peak_memory_bytes"] - cache_bytes
    assert times[512] == times[4096]
    assert times[4096][1] <= 2 * 32 * 128 * 2 + 64  # the new row read and written, the position
    # everything but the cache: the transposed keys and scores grow with the length, a second
    # cache would add 32 MiB at 4096
    assert peaks[4096] < 32 * 4096 * 128 * 2


ROTATED = """
func.func @main(%k: tensor<{B}x{H}x{L}x{D}x{T}> {{onnx.name = "past_k"}}, %x: tensor<{B}x{H}x{N}x{D}x{T}> {{onnx.name = "k_new"}},
                %cos: tensor<1x1x{R}x{D}x{T}> {{onnx.name = "cos"}}, %sin: tensor<1x1x{R}x{D}x{T}> {{onnx.name = "sin"}},
                %pos: tensor<1xi64> {{onnx.name = "position"}}) -> {results} {{
  %r = graph.rotary_embedding %x, %cos, %sin {{interleaved = {I} : i64}} : (tensor<{B}x{H}x{N}x{D}x{T}>, tensor<1x1x{R}x{D}x{T}>, tensor<1x1x{R}x{D}x{T}>) -> tensor<{B}x{H}x{N}x{D}x{T}> loc("rotary_k")
  %kc = graph.kv_cache_write %k, %r, %pos : (tensor<{B}x{H}x{L}x{D}x{T}>, tensor<{B}x{H}x{N}x{D}x{T}>, tensor<1xi64>) -> tensor<{B}x{H}x{L}x{D}x{T}> loc("k_write")
  func.return {ret}
}}
"""


def rotated_module(B, H, L, D, N, R, T, interleaved=0, keep_old=False):
    cache = f"tensor<{B}x{H}x{L}x{D}x{T}>"
    results, ret = (f"({cache}, {cache})", f"%kc, %k : {cache}, {cache}") if keep_old else (cache, f"%kc : {cache}")
    text = ROTATED.format(B=B, H=H, L=L, D=D, N=N, R=R, T=T, I=interleaved, results=results, ret=ret)
    return parse_module(text, make_context())


@pytest.mark.parametrize("B,H,L,D,N,R,T", [
    (1, 5, 64, 128, 1, 1, "f16"),    # a decode step of LLaMA's head dim
    (2, 2, 32, 16, 1, 1, "f16"),     # halves of 8 f16 (off a 32-byte block): rotated in f32
    (1, 3, 40, 64, 5, 5, "f16"),     # five rows at once (a prefill), one angle row each
    (2, 2, 24, 32, 3, 3, "f32"),
])
def test_rotated_write_is_one_kernel_in_place(B, H, L, D, N, R, T):
    """A rotation whose only reader is the cache write (a decoder's K) joins it
    (graph-fuse `cache-write`): one kv_cache kernel rotates the rows on their way into the
    cache, which is updated in place; the rows are the reference's, step after step."""
    np_t = np.float32 if T == "f32" else np.float16
    module = rotated_module(B, H, L, D, N, R, T)
    cm = geir.compile(module, opt_level=3, precision_mode="must_keep_origin_dtype")
    kernels = [k.attributes[attr_names.TEMPLATE].data for k in cm.module.walk() if k.name == "ascend.kernel"]
    assert kernels == ["kv_cache"]  # the rotation inside, no copy of the cache
    rng = np.random.default_rng(3)
    cache = np.zeros((B, H, L, D), np_t)
    for step in range(0, 3 * N, N):
        angles = rng.standard_normal((1, 1, R, D // 2))
        feeds = {"past_k": cache, "k_new": rng.standard_normal((B, H, N, D)).astype(np_t),
                 "cos": np.cos(np.concatenate([angles, angles], -1)).astype(np_t),
                 "sin": np.sin(np.concatenate([angles, angles], -1)).astype(np_t), "position": np.array([step])}
        (want,), (got,) = run_module(module, feeds).values(), cm.run(feeds).values()
        tol = 1e-6 if T == "f32" else 2e-3
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
        cache = got


ROTATED_QK = """
func.func @main(%k: tensor<{B}x{H}x{L}x{D}xf16> {{onnx.name = "past_k"}}, %x: tensor<{B}x{H}x{N}x{D}xf16> {{onnx.name = "k_new"}},
                %q: tensor<{B}x{HQ}x{N}x{D}xf16> {{onnx.name = "q"}},
                %cos: tensor<1x1x{N}x{D}xf16> {{onnx.name = "cos"}}, %sin: tensor<1x1x{N}x{D}xf16> {{onnx.name = "sin"}},
                %pos: tensor<1xi64> {{onnx.name = "position"}}) -> (tensor<{B}x{H}x{L}x{D}xf16>, tensor<{B}x{HQ}x{N}x{D}xf16>) {{
  %rq = graph.rotary_embedding %q, %cos, %sin {{interleaved = 0 : i64}} : (tensor<{B}x{HQ}x{N}x{D}xf16>, tensor<1x1x{N}x{D}xf16>, tensor<1x1x{N}x{D}xf16>) -> tensor<{B}x{HQ}x{N}x{D}xf16> loc("rotary_q")
  %r = graph.rotary_embedding %x, %cos, %sin {{interleaved = 0 : i64}} : (tensor<{B}x{H}x{N}x{D}xf16>, tensor<1x1x{N}x{D}xf16>, tensor<1x1x{N}x{D}xf16>) -> tensor<{B}x{H}x{N}x{D}xf16> loc("rotary_k")
  %kc = graph.kv_cache_write %k, %r, %pos : (tensor<{B}x{H}x{L}x{D}xf16>, tensor<{B}x{H}x{N}x{D}xf16>, tensor<1xi64>) -> tensor<{B}x{H}x{L}x{D}xf16> loc("k_write")
  func.return %kc, %rq : tensor<{B}x{H}x{L}x{D}xf16>, tensor<{B}x{HQ}x{N}x{D}xf16>
}}
"""


@pytest.mark.parametrize("B,H,HQ,L,D,N", [
    (1, 8, 32, 64, 128, 1),    # a decode step of LLaMA-3-8B's heads (GQA 4:1)
    (1, 2, 4, 40, 16, 5),      # the tiny LLaMA's head dim (rotated in f32), five rows at once
])
def test_rotated_q_and_k_are_one_kernel(B, H, HQ, L, D, N):
    """q's rotation by the same angles joins K's rotation into the cache: one kv_cache kernel
    writes both, q's rows to its output and K's into the cache in place."""
    module = parse_module(ROTATED_QK.format(B=B, H=H, HQ=HQ, L=L, D=D, N=N), make_context())
    cm = geir.compile(module, opt_level=3, precision_mode="must_keep_origin_dtype")
    kernels = [k.attributes[attr_names.TEMPLATE].data for k in cm.module.walk() if k.name == "ascend.kernel"]
    assert kernels == ["kv_cache"]
    rng = np.random.default_rng(5)
    cache = np.zeros((B, H, L, D), np.float16)
    for step in range(0, 2 * N, N):
        angles = rng.standard_normal((1, 1, N, D // 2))
        feeds = {"past_k": cache, "k_new": rng.standard_normal((B, H, N, D)).astype(np.float16),
                 "q": rng.standard_normal((B, HQ, N, D)).astype(np.float16),
                 "cos": np.cos(np.concatenate([angles, angles], -1)).astype(np.float16),
                 "sin": np.sin(np.concatenate([angles, angles], -1)).astype(np.float16), "position": np.array([step])}
        want, got = run_module(module, feeds), cm.run(feeds)
        for name in want:
            np.testing.assert_allclose(got[name].astype(np.float64), want[name].astype(np.float64), rtol=2e-3, atol=2e-3)
        cache = list(got.values())[0]


@pytest.mark.parametrize("interleaved, keep_old, kernels", [
    (1, False, ["fallback", "kv_cache"]),   # GPT-J's pairs: the rotation runs on its own
    (0, True, ["data", "data", "kv_cache"]),  # the old cache returned too: the write's result a
                                              # copy of it first (and the old cache's output)
])
def test_rotated_write_other_forms(interleaved, keep_old, kernels):
    module = rotated_module(1, 2, 16, 64, 1, 1, "f16", interleaved, keep_old)
    cm = geir.compile(module, opt_level=3, precision_mode="must_keep_origin_dtype")
    found = sorted("fallback" if k.attributes.get("fallback") is not None else k.attributes[attr_names.TEMPLATE].data
                   for k in cm.module.walk() if k.name == "ascend.kernel")
    assert found == kernels
    rng = np.random.default_rng(4)
    angles = rng.standard_normal((1, 1, 1, 32))
    feeds = {"past_k": rng.standard_normal((1, 2, 16, 64)).astype(np.float16),
             "k_new": rng.standard_normal((1, 2, 1, 64)).astype(np.float16),
             "cos": np.cos(np.concatenate([angles, angles], -1)).astype(np.float16),
             "sin": np.sin(np.concatenate([angles, angles], -1)).astype(np.float16), "position": np.array([9])}
    want, got = run_module(module, feeds), cm.run(feeds)
    for name in want:
        np.testing.assert_allclose(got[name].astype(np.float64), want[name].astype(np.float64), rtol=2e-3, atol=2e-3)


PROJECTIONS = """
func.func @main(%x: tensor<{B}x{S}x{K}xf16> {{onnx.name = "x"}}, %wq: tensor<{K}x{HD}xf16> {{onnx.name = "wq"}},
                %wv: tensor<{K}x{HD}xf16> {{onnx.name = "wv"}}, %vc: tensor<{B}x{H}x{L}x{D}xf16> {{onnx.name = "past_v"}},
                %pos: tensor<1xi64> {{onnx.name = "position"}})
    -> (tensor<{B}x{H}x{S}x{D}xf16> {{onnx.name = "q"}}, tensor<{B}x{H}x{L}x{D}xf16> {{onnx.name = "present_v"}}) {{
  %shape = graph.constant dense<[{B}, {S}, {H}, {D}]> : tensor<4xi64>
  %q0 = graph.matmul %x, %wq : (tensor<{B}x{S}x{K}xf16>, tensor<{K}x{HD}xf16>) -> tensor<{B}x{S}x{HD}xf16> loc("q_proj")
  %q1 = graph.reshape %q0, %shape : (tensor<{B}x{S}x{HD}xf16>, tensor<4xi64>) -> tensor<{B}x{S}x{H}x{D}xf16> loc("q_reshape")
  %q = graph.transpose %q1 {{perm = array<i64: 0, 2, 1, 3>}} : (tensor<{B}x{S}x{H}x{D}xf16>) -> tensor<{B}x{H}x{S}x{D}xf16> loc("q_transpose")
  %v0 = graph.matmul %x, %wv : (tensor<{B}x{S}x{K}xf16>, tensor<{K}x{HD}xf16>) -> tensor<{B}x{S}x{HD}xf16> loc("v_proj")
  %v1 = graph.reshape %v0, %shape : (tensor<{B}x{S}x{HD}xf16>, tensor<4xi64>) -> tensor<{B}x{S}x{H}x{D}xf16> loc("v_reshape")
  %v = graph.transpose %v1 {{perm = array<i64: 0, 2, 1, 3>}} : (tensor<{B}x{S}x{H}x{D}xf16>) -> tensor<{B}x{H}x{S}x{D}xf16> loc("v_transpose")
  %vn = graph.kv_cache_write %vc, %v, %pos : (tensor<{B}x{H}x{L}x{D}xf16>, tensor<{B}x{H}x{S}x{D}xf16>, tensor<1xi64>) -> tensor<{B}x{H}x{L}x{D}xf16> loc("v_write")
  func.return %q, %vn : tensor<{B}x{H}x{S}x{D}xf16>, tensor<{B}x{H}x{L}x{D}xf16>
}}
"""


@pytest.mark.parametrize("B,S,K,H,D,L", [
    (1, 1, 96, 4, 32, 24),   # a decode step: one row, its heads written at the position's row
    (2, 5, 64, 2, 16, 20),   # a prefill of five rows for two sequences
])
def test_value_projection_writes_its_cache(B, S, K, H, D, L):
    """V's projection among the projections of one lhs (graph-fuse `projections`) writes its
    heads straight into the cache at the position's rows: one cube kernel, no kv_cache
    kernel, the cache updated in place; the rows are the reference's, step after step."""
    module = parse_module(PROJECTIONS.format(B=B, S=S, K=K, H=H, D=D, L=L, HD=H * D), make_context())
    cm = geir.compile(module, opt_level=3)
    kernels = [k.attributes[attr_names.TEMPLATE].data for k in cm.module.walk() if k.name == "ascend.kernel"]
    assert kernels == ["matmul"]
    rng = np.random.default_rng(5)
    wq, wv = (rng.standard_normal((K, H * D)).astype(np.float16) / 8 for _ in range(2))
    cache = np.zeros((B, H, L, D), np.float16)
    for step in range(0, 3 * S, S):
        feeds = {"x": rng.standard_normal((B, S, K)).astype(np.float16), "wq": wq, "wv": wv, "past_v": cache,
                 "position": np.array([step])}
        want, got = run_module(module, feeds), cm.run(feeds)
        for name in ("q", "present_v"):
            np.testing.assert_allclose(got[name].astype(np.float64), want[name].astype(np.float64), rtol=5e-3, atol=5e-3)
        cache = got["present_v"]
