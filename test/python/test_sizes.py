"""The size sweep: models compile at the sizes users deploy, not only the small ones.

Every suite model at batch 8, and the TorchScript transformer block at hidden
256 / 768 / 1024, sequence 16 / 128 / 512 and batch 1 / 8, compile - at batch 8 at O0 and O3,
the block at batch 1 at O2 (O1 is O0's kernels on a simplified graph, which O2 and O3 compile
too; O2's fused ND kernels are O3's without the layouts; batch 8 exercises every size-dependent
tiling harder than batch 1; at batch 1 test_lowering compiles and runs each suite model's
fused ND kernels, test_plan_memory compiles each at O3, and the fuzz campaign runs small shapes
at every level): every kernel's
tiles fit every on-chip buffer (ascend-plan-memory checks each kernel against the device),
and no template gives up on a size and leaves its op to the reference fallback. A sample
runs and matches onnxruntime. Larger sizes (batch 32-64, sequence 2048-4096, hidden
4096-8192) are in bench/sizes.py.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import geir
from geir.lowering.graph_to_ascend import fallback_ops
from geir.target.precision import DEFAULT_MODE
from geir.testing.suite import LIGHT_MODELS, assert_matches, light_model, ort_run, with_batch

LEVELS = (0, 3)
LEVELS_AT_BATCH_1 = (2,)
HIDDEN = (256, 768, 1024)
SEQUENCE = (16, 128, 512)
BATCH = (1, 8)


def transformer(hidden: int, seq: int, batch: int):
    """The seed's block (post-LN MHA, GELU FFN of 4 x hidden), exported afresh (uncached:
    the sweep would otherwise hold 18 models' weights)."""
    from geir.testing.transformer import transformer_onnx

    heads = 8 if hidden % 8 == 0 and hidden >= 512 else 4
    return transformer_onnx.__wrapped__(1, d_model=hidden, heads=heads, seq=seq, batch=batch, opset=17)


def fallbacks_of_plain_ops(cm) -> Counter:
    """Fallback kernels of ops some template takes at small sizes (a size the template gave
    up on); ops no template takes at all (ArgMax, ConvTranspose) are not the sweep's concern."""
    no_template = {"graph.arg_max", "graph.arg_min", "graph.conv_transpose"}
    return Counter(op for op in fallback_ops(cm.module) if op not in no_template)


def compile_all_levels(model, batch: int) -> None:
    for level in LEVELS if batch > 1 else LEVELS_AT_BATCH_1:
        cm = geir.compile(model, opt_level=level)
        assert not fallbacks_of_plain_ops(cm), f"O{level}: {dict(fallbacks_of_plain_ops(cm))}"


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_suite_model_compiles_at_every_level(name):
    compile_all_levels(with_batch(light_model(name), 8), 8)


@pytest.mark.parametrize("batch", BATCH)
@pytest.mark.parametrize("seq", SEQUENCE)
@pytest.mark.parametrize("hidden", HIDDEN)
def test_transformer_block_compiles_at_every_level(hidden, seq, batch):
    compile_all_levels(transformer(hidden, seq, batch), batch)


@pytest.mark.parametrize("hidden, seq, batch, level", [
    (768, 128, 8, 3),   # the seed's TransformerBlock input: it did not compile at O2/O3
    (768, 512, 2, 2),
    (1024, 512, 1, 3),
])
def test_transformer_block_matches_onnxruntime(hidden, seq, batch, level):
    model = transformer(hidden, seq, batch)
    x = np.random.default_rng(0).standard_normal((batch, seq, hidden)).astype(np.float32)
    expected = ort_run(model, {"x": x})[0]
    # the default precision (force_fp16) at the sizes it is deployed at: judged by its bar
    assert_matches(geir.compile(model, opt_level=level).run({"x": x})["y"], expected, DEFAULT_MODE, f"O{level}")


@pytest.mark.parametrize("name", ["light_squeezenet", "light_resnet50"])
def test_suite_model_at_batch_8_matches_onnxruntime(name):
    model = with_batch(light_model(name), 8)
    cm = geir.compile(model, opt_level=3)
    (spec,) = [v for v in model.graph.input if v.name not in {t.name for t in model.graph.initializer}]
    shape = [d.dim_value for d in spec.type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    expected = ort_run(model, {spec.name: x})[0]
    (out,) = cm.run({spec.name: x}).values()
    assert_matches(out, expected, DEFAULT_MODE, name)
