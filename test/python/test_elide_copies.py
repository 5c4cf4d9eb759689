"""ascend-elide-copies on compiled models, and ascend.view in the interpreter.

The pass removes the launches of kernels that only move bytes (reshapes, contiguous slices,
concats along an outer axis) and makes their buffers views of each other. It must not change
a single output bit: the kernels that remain compute the same values into the same bytes,
only the buffers they write are now parts of bigger ones.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

import geir
from geir.dialects import ascend as a
from geir.dialects import make_context
from geir.ir.text import parse_module
from geir.runtime.ascend_interpreter import ascend_input_specs, run_ascend_module
from geir.testing.suite import light_model

CTX = make_context()


def model(name: str):
    if name == "transformer1":
        from geir.testing.transformer import transformer_onnx

        return transformer_onnx(layers=1)
    return light_model(name)


@lru_cache(maxsize=4)
def compiled(name: str, elide: bool) -> geir.api.CompiledModel:
    return geir.compile(model(name), disable_passes=() if elide else ("ascend-elide-copies",), precision_mode="must_keep_origin_dtype")


def launches(cm) -> list[a.LaunchOp]:
    return [op for op in cm.module.walk() if isinstance(op, a.LaunchOp)]


# (the transformer's one elided reshape, the attention output's, is inside graph.attention's
# kernel since graph-recognize-attention; shufflenet's channel shuffles are copies)
@pytest.mark.parametrize("name, elided", [("light_shufflenet", 3), ("light_squeezenet", 2)])
def test_elided_kernels_keep_every_output_bit(name, elided):
    from geir.runtime.simulator import check_stream_races, record, simulate

    with_views, without = compiled(name, True), compiled(name, False)
    kept = {l.kernel.root_reference.data for l in launches(with_views)}
    gone = [l for l in launches(without) if l.kernel.root_reference.data not in kept]
    assert len(gone) == elided
    kernels = {k.sym_name.data: k for k in without.module.walk() if isinstance(k, a.KernelOp)}
    assert all(a.byte_copies(kernels[l.kernel.root_reference.data]) for l in gone)
    assert any(isinstance(op, a.ViewOp) for op in with_views.module.walk())

    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(s).astype(d) for n, s, d in ascend_input_specs(with_views.module)}
    outputs, records = record(with_views.module, feeds)
    check_stream_races(records)
    simulate(records, strict=True)
    expected = without.run(feeds)
    for k, v in expected.items():
        np.testing.assert_array_equal(outputs[k], v)


def test_the_step_is_part_of_memory_reuse():
    """O3 runs it as the elide_copies stage; without memory reuse (O0, memory_reuse=False)
    every tensor keeps its own bytes, so it does not run."""
    assert any(s.endswith("elide_copies") for s in compiled("transformer1", True).stages)
    cm = geir.compile(model("transformer1"), memory_reuse=False)
    assert not any(s.endswith("elide_copies") for s in cm.stages)
    assert not any(isinstance(op, a.ViewOp) for op in cm.module.walk())


HOST = """
!t = memref<4x8xf32, "gm">
!u = memref<4x8xf32, "ub">
ascend.kernel @copy(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %b = ascend.alloc : !u
  ascend.copy %x, %b : !t to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %b, %y : !u to !t
  ascend.return
}
func.func @main(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}, %z: !t {onnx.name = "z", ascend.output}) {
  %s = ascend.stream 0
  %big = ascend.alloc : memref<2x4x8xf32, "gm">
  %lo = ascend.view %big[0] : memref<2x4x8xf32, "gm"> to !t
  %hi = ascend.view %big[128] : memref<2x4x8xf32, "gm"> to !t
  %mid = ascend.view %big[64] : memref<2x4x8xf32, "gm"> to !t
  ascend.launch @copy on %s(%x, %hi) : (!t, !t)
  ascend.launch @copy on %s(%x, %lo) : (!t, !t)
  ascend.launch @copy on %s(%mid, %y) : (!t, !t)
  ascend.launch @copy on %s(%hi, %z) : (!t, !t)
  func.return
}
"""


def test_a_view_is_the_bytes_of_its_source_from_the_offset():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = run_ascend_module(parse_module(HOST, CTX), {"x": x})
    # %mid starts 64 bytes (two rows) into %big: x's last two rows, then its first two
    np.testing.assert_array_equal(out["y"], np.concatenate([x[2:], x[:2]]))
    np.testing.assert_array_equal(out["z"], x)


def test_compare_still_checks_an_elided_concat():
    """geir-compare maps a no-task concat's buffer to the concat's tensor once its last
    producer has run: the stage after the elision compares the same tensors as the one
    before, the concats among them."""
    from geir.driver.compare import compare_model

    m = model("light_squeezenet")
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(s).astype(d) for n, s, d in ascend_input_specs(compiled("light_squeezenet", True).module)}
    report = compare_model(m, feeds, stages=["lower", "elide_copies"], precision_mode="must_keep_origin_dtype")
    lowered, elided = report.stages
    assert elided.name.endswith("elide_copies") and not elided.error
    assert {c.tensor for c in elided.comparisons} == {c.tensor for c in lowered.comparisons}
    no_task = [c for c in elided.comparisons if c.op.endswith("(no task)")]
    assert len(no_task) == 2 and all(c.node for c in no_task)
    assert report.first_divergence() is None and elided.unmapped == 0


def _gather_chain_models():
    """The three valid models that crashed ascend-elide-copies at O3 ("Cannot detach a
    toplevel operation."): constant-index gathers become slices whose equal starts and axes
    CSE merges into one constant, which the elided launch passed twice."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)

    def ints(name, v):
        return numpy_helper.from_array(np.array(v, dtype=np.int64), name)

    def floats(name, shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    def build(shape, nodes, inits):
        graph = helper.make_graph(
            nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), shape

    n = helper.make_node
    return {
        "transpose_gather_slice": build([1, 13, 33], [
            n("Transpose", ["x"], ["t"], perm=[1, 2, 0]),
            n("Gather", ["t", "i"], ["g"], axis=0),
            n("Slice", ["g", "s", "e", "a", "st"], ["y"]),
        ], [ints("i", [-3, -9, -13, -10, 8]), ints("s", [0]), ints("e", [5]), ints("a", [0]), ints("st", [1])]),
        "max_gather_reduce_gather": build([3, 8, 33], [
            n("Max", ["x", "w"], ["m"]),
            n("Gather", ["m", "i"], ["g"], axis=0),
            n("ReduceMax", ["g"], ["r"], axes=[0, 1], keepdims=1),
            n("Gather", ["r", "j"], ["y"], axis=0),
        ], [floats("w", [33]), ints("i", [-3]), ints("j", [0, -1, -1, -1, 0])]),
        "gather_norm_softmax_tile_matmul": build([3, 5, 12], [
            n("Gather", ["x", "i"], ["g"], axis=2),
            n("LayerNormalization", ["g", "sc", "b"], ["l"], axis=-1),
            n("Softmax", ["l"], ["s1"], axis=2),
            n("Tile", ["s1", "rep"], ["t"]),
            n("Softmax", ["t"], ["s2"], axis=2),
            n("Gather", ["s2", "j"], ["g2"], axis=0),
            n("Gather", ["g2", "k"], ["g3"], axis=0),
            n("MatMul", ["g3", "w"], ["y"]),
        ], [ints("i", [2, 6, -2]), floats("sc", [3]), floats("b", [3]), ints("rep", [1, 1, 2]),
            ints("j", [2, 0, 0, -1, -3]), ints("k", [-5]), floats("w", [6, 4])]),
    }


@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
@pytest.mark.parametrize("name", sorted(_gather_chain_models()))
def test_constant_index_gather_chains_compile_and_match_onnxruntime(name, opt_level):
    from geir.testing.suite import assert_close, ort_run

    m, shape = _gather_chain_models()[name]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    expected = ort_run(m, {"x": x})[0]
    cm = geir.compile(m, opt_level=opt_level, precision_mode="must_keep_origin_dtype")
    assert_close(cm.run({"x": x})["y"], expected, f"{name} O{opt_level}")
    if opt_level == 3:  # the stage that crashed ran, and elided something
        assert any(s.endswith("elide_copies") for s in cm.stages)
        assert any(isinstance(op, a.ViewOp) for op in cm.module.walk())
