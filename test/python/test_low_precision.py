"""f16 and bf16 through the stack: element types and weights in the IR, the reference
semantics at the declared dtype, every kernel template against the graph interpreter at the
same dtype and against an f32 reference, and the simulator's dtype rates."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, ModuleOp
from xdsl.ir import Block, Region

from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.dialects import make_context
from geir.ir.text import print_module, parse_module
from geir.runtime.ascend_interpreter import run_ascend_module
from geir.ir.types import (
    BF16,
    array_from_dense,
    dense_from_array,
    is_float,
    is_float_dtype,
    is_low_precision,
    to_dtype,
    to_element_type,
)

RNG = np.random.default_rng(0)
LOW = [np.dtype(np.float16), BF16]
LOW_IDS = ["f16", "bf16"]


def bits(x: np.ndarray) -> np.ndarray:
    """The bytes of an array, to compare NaNs and signed zeros exactly."""
    return np.ascontiguousarray(x).view(np.uint8)


# ---------------------------------------------------------------------------
# Element types and weights (ir/types.py, ir/text.py).
# ---------------------------------------------------------------------------


def test_bf16_is_an_element_type():
    assert to_element_type(ml_dtypes.bfloat16) == BFloat16Type()
    assert to_dtype(BFloat16Type()) == BF16
    assert is_float(BFloat16Type()) and is_float(Float16Type()) and is_float(Float32Type())
    # numpy does not count ml_dtypes' bfloat16 as floating; geir's helper does
    assert not np.issubdtype(BF16, np.floating)
    assert is_float_dtype(BF16) and is_float_dtype(np.float16) and not is_float_dtype(np.int16)
    assert is_low_precision(BF16) and is_low_precision(np.float16) and not is_low_precision(np.float32)


@pytest.mark.parametrize("dtype", LOW, ids=LOW_IDS)
def test_dense_attribute_keeps_the_bits(dtype):
    x = np.array([[1.5, -2.0, np.inf], [np.nan, -0.0, 3.1416]]).astype(dtype)
    attr = dense_from_array(x)
    assert attr.get_type().element_type == to_element_type(dtype)
    np.testing.assert_array_equal(bits(array_from_dense(attr)), bits(x))


def _constants_module(arrays: list[np.ndarray]) -> ModuleOp:
    block = Block()
    ops = [g.ConstantOp.from_array(x) for x in arrays]
    for op in ops:
        block.add_op(op)
    block.add_op(func.ReturnOp(*(op.output for op in ops)))
    fn = func.FuncOp("main", ([], [op.output.type for op in ops]), Region(block))
    return ModuleOp([fn])


@pytest.mark.parametrize("dtype", LOW, ids=LOW_IDS)
def test_weights_round_trip_through_mlir_text(dtype):
    """Large weights print as resource blobs, small ones as literals, splats as one value,
    non-finite ones as hex: each parses back to the same bits."""
    arrays = [
        RNG.standard_normal((8, 8)).astype(dtype),          # a resource blob
        np.array([1.5, -2.0], dtype),                        # a literal
        np.array([np.inf, np.nan, 1.0], dtype),              # non-finite: hex
        np.full(40, 0.1, dtype),                             # a splat
        np.array([-np.inf] * 20, dtype),                     # a non-finite blob
    ]
    text = print_module(_constants_module(arrays))
    assert "dense_resource<" in text and "dense<\"0x" in text
    module = parse_module(text, make_context())
    consts = [op for op in module.walk() if isinstance(op, g.ConstantOp)]
    for op, x in zip(consts, arrays, strict=True):
        y = op.array()
        assert y.dtype == x.dtype and y.shape == x.shape
        np.testing.assert_array_equal(bits(y), bits(x))


# ---------------------------------------------------------------------------
# The ascend dialect at run time (runtime/ascend_*.py): bf16 buffers and conversions.
# ---------------------------------------------------------------------------

PROGRAMS = Path(__file__).resolve().parents[1] / "dialects" / "ascend"


def _parse(text: str) -> ModuleOp:
    module = parse_module(text, make_context())
    module.verify()
    return module


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "interpreted"])
def test_hand_written_bf16_program(compiled):
    """test/dialects/ascend/bf16.mlir: bf16 x bf16 accumulated in f32, rounded to nearest even
    (relu on the way) by the FIX copy; and the vector kernel's vcast / vmuls in f32 / vcast,
    vcopy, vdup, vbrcb and vtranspose on bf16."""
    module = _parse((PROGRAMS / "bf16.mlir").read_text())
    a_, b_, x = (RNG.standard_normal(s).astype(BF16) for s in ((16, 32), (32, 16), (16, 32)))
    out = run_ascend_module(module, {"a": a_, "b": b_, "x": x}, compiled=compiled)
    assert out["y"].dtype == BF16 and out["t"].dtype == BF16
    product = np.maximum(a_.astype(np.float32) @ b_.astype(np.float32), 0)
    np.testing.assert_array_equal(bits(out["y"]), bits(product.astype(BF16)))
    np.testing.assert_array_equal(bits(out["t"]), bits((x.astype(np.float32) * 2).astype(BF16).T))


_UNWRITTEN = """
ascend.kernel @k(%x: memref<8x16xf32, "gm">, %y: memref<8x16xbf16, "gm">, %z: memref<8x16xbf16, "gm">)
    attributes {block_dim = 1 : i64, core_type = "vector"} {
  %f = ascend.alloc {offset = 0 : i64} : memref<8x16xf32, "ub">
  %h = ascend.alloc {offset = 512 : i64} : memref<8x16xbf16, "ub">
  %u = ascend.alloc {offset = 1024 : i64} : memref<8x16xbf16, "ub">
  ascend.copy %x, %f : memref<8x16xf32, "gm"> to memref<8x16xf32, "ub">
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  ascend.vcast %f, %h : memref<8x16xf32, "ub">, memref<8x16xbf16, "ub">
  ascend.set_flag V -> MTE3 id 0
  ascend.wait_flag V -> MTE3 id 0
  ascend.copy %h, %y : memref<8x16xbf16, "ub"> to memref<8x16xbf16, "gm">
  ascend.copy %u, %z : memref<8x16xbf16, "ub"> to memref<8x16xbf16, "gm">
  ascend.return
}
func.func @main(%x: memref<8x16xf32, "gm"> {onnx.name = "x"}, %y: memref<8x16xbf16, "gm"> {onnx.name = "y", ascend.output},
                %z: memref<8x16xbf16, "gm"> {onnx.name = "z", ascend.output}) {
  %s = ascend.stream 0
  ascend.launch @k on %s(%x, %y, %z) : (memref<8x16xf32, "gm">, memref<8x16xbf16, "gm">, memref<8x16xbf16, "gm">)
  func.return
}
"""


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "interpreted"])
def test_vcast_to_bf16_rounds_to_nearest_even_and_unwritten_bf16_is_nan(compiled):
    x = RNG.standard_normal((8, 16)).astype(np.float32) * 100
    x[0, :6] = [1.00390625, 1.01171875, -1.00390625, np.inf, np.nan, 3.4e38]  # ties to even, specials
    out = run_ascend_module(_parse(_UNWRITTEN), {"x": x}, compiled=compiled)
    np.testing.assert_array_equal(bits(out["y"]), bits(x.astype(BF16)))
    assert np.isnan(out["z"].astype(np.float32)).all()  # ub nobody wrote: 0xFFFF, a bf16 NaN


def test_f16_vreduce_accumulates_in_f32():
    """A sum of f16 along a strided axis: numpy would add in f16 (0.1 * 4096 lands near
    256 after rounding at every step), the model accumulates in f32 as the reference does."""
    from xdsl.dialects.builtin import DenseArrayBase, StringAttr, i64

    from geir.runtime.ascend_semantics import vector_kernel

    src = a.AllocOp.get(a.memref_type([4096, 16], Float16Type(), "ub"))
    dst = a.AllocOp.get(a.memref_type([1, 16], Float16Type(), "ub"))
    op = a.VreduceOp.create(operands=[src.memref, dst.memref],
                            properties={"kind": StringAttr("sum"), "axes": DenseArrayBase.from_list(i64, [0])})
    x = np.full((4096, 16), 0.1, np.float16)
    got = vector_kernel(op)((x, np.empty((1, 16), np.float16))).astype(np.float16)
    np.testing.assert_array_equal(got, np.full((1, 16), x.astype(np.float32).sum(0)[0], np.float16))

