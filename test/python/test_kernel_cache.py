"""The lowering's kernel cache (lowering/kernel_cache.py): a request like an earlier one gets
a clone of its kernel - the IR the templates would build again - and the clone's body is not
verified a second time."""

from __future__ import annotations

from pathlib import Path

from xdsl.context import Context

from geir import compile as geir_compile
from geir.dialects import ascend as a
from geir.dialects import make_context
from geir.driver.compile import verify_lowered
from geir.ir.text import parse_module
from geir.lowering import kernel_cache
from geir.lowering.graph_to_ascend import ConvertGraphToAscend
from geir.models import LlamaConfig, llama

LIT = Path(__file__).resolve().parents[1] / "lowering" / "graph_to_ascend" / "kernel-cache.mlir"


def _kernels(module) -> dict[str, a.KernelOp]:
    return {k.sym_name.data: k for k in module.ops if isinstance(k, a.KernelOp)}


def _uncached(monkeypatch) -> None:
    monkeypatch.setattr(kernel_cache.KernelCache, "build", lambda self, req, builder: builder(req))


def test_a_repeated_request_gets_a_clone_of_its_kernel():
    ctx: Context = make_context()
    module = parse_module(LIT.read_text(), ctx)
    ConvertGraphToAscend().apply(ctx, module)
    k = _kernels(module)
    assert kernel_cache.clone_of(k["k0_mul_a"]) is None and kernel_cache.clone_of(k["k2_mul_c"]) is None
    assert kernel_cache.clone_of(k["k1_mul_b"]) is kernel_cache.origin(k["k0_mul_a"]) is not None
    assert kernel_cache.clone_of(k["k3_mul_d"]) is kernel_cache.origin(k["k2_mul_c"]) is not None
    verify_lowered(module)


def test_a_clone_whose_kernel_is_not_in_the_module_is_verified(monkeypatch):
    ctx: Context = make_context()
    module = parse_module(LIT.read_text(), ctx)
    ConvertGraphToAscend().apply(ctx, module)
    k = _kernels(module)
    # the kernel k1 was cloned from is gone (with its launch): k1's body is checked
    for op in list(module.walk()):
        if isinstance(op, a.LaunchOp) and op.kernel_op() is k["k0_mul_a"]:
            op.detach()
    k["k0_mul_a"].detach()
    checked = []
    original = a.KernelOp.verify

    def verify(self, verify_nested_ops=True):
        checked.append((self.sym_name.data, verify_nested_ops))
        return original(self, verify_nested_ops)

    monkeypatch.setattr(a.KernelOp, "verify", verify)
    verify_lowered(module)
    assert ("k1_mul_b", True) in checked and ("k3_mul_d", False) in checked and ("k2_mul_c", True) in checked


def _tiny_prefill():
    cfg = LlamaConfig(layers=3, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=96, max_seq=32)
    return llama(cfg, batch=2, seq=16, dtype="f32").prefill


def test_the_cache_builds_the_same_program_as_the_templates(monkeypatch):
    """Three LLaMA layers: layers 1 and 2 are clones of layer 0's kernels, and the program is
    the one the templates build for every layer, to the character."""
    model = _tiny_prefill()
    cached = geir_compile(model)
    clones = [k for k in _kernels(cached.module).values() if kernel_cache.clone_of(k) is not None]
    assert len(clones) >= 2 * 5, [k.sym_name.data for k in clones]
    assert all("layers_0" not in k.sym_name.data for k in clones)
    _uncached(monkeypatch)
    built = geir_compile(model)
    assert str(cached.module) == str(built.module)
