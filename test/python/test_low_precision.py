"""f16 and bf16 through the stack: element types and weights in the IR, the reference
semantics at the declared dtype, every kernel template against the graph interpreter at the
same dtype and against an f32 reference, and the simulator's dtype rates."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, ModuleOp
from xdsl.ir import Block, Region

from geir.dialects import graph as g
from geir.dialects import make_context
from geir.ir.text import print_module, parse_module
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
