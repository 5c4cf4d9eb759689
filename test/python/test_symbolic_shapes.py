"""Symbolic dims (ir/symbolic.py) and their inference on imported models
(passes/graph/symbolic_shapes.py); the per-op-family rules are lit tests
(test/passes/graph/infer-symbolic-shapes*.mlir)."""

import io
import os
import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX

import geir
from geir.dialects import attr_names, make_context
from geir.errors import GeirError
from geir.frontend.onnx import import_model
from geir.driver.shape_ranges import RangeDim, add_extent_args
from geir.ir import symbolic as sy
from geir.ir.symbolic import Sym
from geir.dialects.symbolic_shapes import shapes_of_attr
from geir.ir.text import parse_module
from geir.passes.graph.bind_symbols import BindSymbolsPass
from geir.passes.graph.symbolic_shapes import InferSymbolicShapesPass, infer_function
from geir.testing.suite import assert_pass_keeps_numerics, lit_chunks
from geir.testing.transformer import block_reference, dynamic_block_onnx

NAMES = ("batch", "seq", "h")
RANGES = {"batch": (1, 8), "seq": (1, 512), "h": (3, 5)}


def polynomials():
    """Random polynomials of degree <= 2 over NAMES, with small coefficients."""
    monomial = st.lists(st.sampled_from(NAMES), max_size=2)
    term = st.tuples(monomial, st.integers(-6, 6))

    def build(terms):
        out = 0
        for names, c in terms:
            t = c
            for n in names:
                t = t * Sym.symbol(n)
            out = out + t
        return out

    return st.lists(term, max_size=4).map(build)


values = st.fixed_dictionaries({n: st.integers(lo, hi) for n, (lo, hi) in RANGES.items()})


@settings(max_examples=200, deadline=None)
@given(polynomials(), polynomials(), values)
def test_the_arithmetic_is_the_integers(a, b, at):
    """Sums, differences and products evaluate as the integers do, and print/parse round-trips."""
    ev = lambda d: sy.evaluate(d, at)  # noqa: E731
    assert ev(a + b) == ev(a) + ev(b)
    assert ev(a - b) == ev(a) - ev(b)
    assert ev(a * b) == ev(a) * ev(b)
    assert sy.parse(str(a)) == a
    lo, hi = sy.bounds(a, RANGES)
    assert lo <= ev(a) <= hi


@settings(max_examples=200, deadline=None)
@given(polynomials(), st.sampled_from([2, 3, Sym.symbol("seq"), 4 * Sym.symbol("batch")]))
def test_an_exact_quotient_is_found_and_an_inexact_one_refused(a, b):
    assert sy.div(a * b, b) == a
    assert sy.div(a * b + 1, b) is None


def test_equal_means_equal_for_every_size_in_the_ranges():
    seq, batch = Sym.symbol("seq"), Sym.symbol("batch")
    assert sy.proven_equal(seq * 12 * 64, seq * 768, RANGES)
    assert not sy.proven_equal(seq, 512, RANGES)  # seq may be 1..511
    assert not sy.proven_equal(seq, batch, RANGES)
    assert sy.proven_equal(Sym.symbol("k"), 64, {"k": (64, 64)})  # a range of one size
    assert str(batch * seq * 4 + seq + 1) == "4*batch*seq + seq + 1"
    assert sy.canonical(seq - seq) == 0 and isinstance(seq - seq, int)


def _symbolic(model: bytes, shapes, dims):
    module = import_model(model, input_shapes=shapes)
    add_extent_args(module, dims)
    fn = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    infer_function(fn)
    module.verify()
    return fn


def test_the_dynamo_blocks_shapes_are_proven_in_batch_and_seq():
    """The dynamo export computes its reshape targets from Shape ops: every one is inferred
    in the symbols, and the block's output is [batch, seq, 64] - the same dims as its input,
    proven, not assumed."""
    fn = _symbolic(dynamic_block_onnx(64, 4), {"x": [8, 128, 64]},
                   [RangeDim((("x", 0),), 1, 8, "batch"), RangeDim((("x", 1),), 1, 128, "seq")])
    assert fn.function_type.outputs.data[0].get_shape() == (DYNAMIC_INDEX, DYNAMIC_INDEX, 64)
    out = fn.body.block.last_op.operands[0].owner
    assert shapes_of_attr(out.attributes[attr_names.DIMS]) == [(Sym.symbol("batch"), Sym.symbol("seq"), 64)]
    reshapes = [op for op in fn.body.walk() if op.name == "graph.reshape" and attr_names.DIMS in op.attributes]
    assert len(reshapes) >= 8
    scores = [shapes_of_attr(op.attributes[attr_names.DIMS])[0] for op in fn.body.walk() if op.name == "graph.softmax"]
    assert scores == [(Sym.symbol("batch"), 4, Sym.symbol("seq"), Sym.symbol("seq"))]


def test_a_range_over_a_baked_sequence_is_refused_at_the_reshape():
    """TorchScript's nn.MultiheadAttention bakes the sequence length into a Reshape, so the
    exported model is valid at that length only (onnxruntime fails at any other): a sequence
    range over it is refused at that node, before any lowering. (Padded to the top, the
    program used to run it, right only because the baked length was the range's top.)"""
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(block_reference(64, 4), (torch.randn(2, 16, 64),), f, dynamo=False, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "batch", 1: "seq"}}, opset_version=17)
    with pytest.raises(GeirError, match=r"shape range: 'graph.reshape' at \"/attn/Reshape_\d+\": the element counts "
                                        r"of the target \[16, 8, 16\] and of the operand \[seq, 2, 64\]: 2048 and "
                                        r"128\*seq \(seq: 1~16\) are not proven equal over the ranges; give the sizes "
                                        r"as gears \(dynamic_batch_size, dynamic_dims\), or export the model with the "
                                        r"dim symbolic there"):
        geir.compile(f.getvalue(), input_shape="x:2,1~16,64")
    # switched off, the range is planned at its top unproven (it runs there: the baked length is the top)
    cm = geir.compile(f.getvalue(), input_shape="x:2,1~16,64", disable_passes=("graph-infer-symbolic-shapes",))
    assert "01_symbolic_shapes" not in cm.program.compile_seconds


def test_a_range_program_keeps_its_symbolic_stage(tmp_path):
    """The range pipeline's stages: the import at the tops, the symbolic graph, the tops again."""
    cm = geir.compile(dynamic_block_onnx(64, 4), input_shape="x:1~4,16,64", keep_stages=True)
    names = list(cm.program.stages)
    assert names[:3] == ["01_import", "01_symbolic_shapes", "01_bind_symbols"]
    text = str(cm.program.stages["01_symbolic_shapes"])
    assert "tensor<?x16x64xf32>" in text and '"batch"' in text
    assert "?" not in str(cm.program.stages["01_bind_symbols"]).split("{", 1)[0]
    assert attr_names.DIMS not in str(cm.program.stages["01_bind_symbols"])


LIT_DIR = os.path.join(os.path.dirname(__file__), "..", "passes", "graph")


class _InferThenBind:
    """graph-infer-symbolic-shapes then graph-bind-symbols: the static program again."""

    def apply(self, ctx, module) -> None:
        InferSymbolicShapesPass().apply(ctx, module)
        module.verify()
        BindSymbolsPass().apply(ctx, module)


@pytest.mark.parametrize("chunk_id, chunk",
                         [pytest.param(i, c, id=i) for i, c in lit_chunks(LIT_DIR, "infer-symbolic-shapes")])
def test_lit_cases_keep_numerics_or_are_refused(chunk_id, chunk):
    """Each lit chunk of graph-infer-symbolic-shapes: a valid one runs the same before and after
    the symbolic round trip (the pass only retypes); an invalid one is one GeirError."""
    if "-invalid" in chunk_id:
        module = parse_module(chunk, make_context())
        with pytest.raises(GeirError):
            InferSymbolicShapesPass().apply(Context(), module)
        return
    assert_pass_keeps_numerics(chunk, _InferThenBind())
