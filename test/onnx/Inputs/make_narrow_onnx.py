"""Models of the narrow element types for import-narrow-types.test: make_narrow_onnx.py CASE OUT.onnx [CASE OUT.onnx ...]"""

from functools import partial

import ml_dtypes
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from onnx_cases import main, vi, model as _model

model = partial(_model, opset=21, min_ir=10)

F = TensorProto.FLOAT


CASES = {
    # float8: f32 -> e4m3fn without saturation, back to f32
    "fp8_cast": lambda: model(
        [helper.make_node("Cast", ["x"], ["q"], name="to_f8", to=TensorProto.FLOAT8E4M3FN, saturate=0),
         helper.make_node("Cast", ["q"], ["y"], name="from_f8", to=F)],
        [vi("x", [4])], [vi("y", [4])],
    ),
    # a float8 graph input (e5m2) quantized weights: DequantizeLinear
    "fp8_input": lambda: model(
        [helper.make_node("DequantizeLinear", ["x", "s"], ["y"], name="dq")],
        [vi("x", [2, 3], TensorProto.FLOAT8E5M2)], [vi("y", [2, 3])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "s")],
    ),
    # an int4 weight (packed two a byte in the file) dequantized per axis
    "int4_weight": lambda: model(
        [helper.make_node("DequantizeLinear", ["w", "s", "z"], ["y"], name="dq", axis=0)],
        [], [vi("y", [2, 3])],
        [numpy_helper.from_array(np.array([[-8, 7, 1], [2, -3, 0]], ml_dtypes.int4), "w"),
         numpy_helper.from_array(np.array([0.5, 0.25], np.float32), "s"),
         numpy_helper.from_array(np.array([1, -1], ml_dtypes.int4), "z")],
    ),
    # QuantizeLinear to uint4, blocked along axis 1 by 2 (opset 21)
    "uint4_blocked": lambda: model(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q", axis=1, block_size=2)],
        [vi("x", [2, 3]), vi("s", [2, 2])], [vi("y", [2, 3], TensorProto.UINT4)],
        [numpy_helper.from_array(np.array([[1, 2], [3, 4]], ml_dtypes.uint4), "z")],
    ),
    # float8e8m0 with round_mode (opset 24)
    "e8m0_nearest": lambda: model(
        [helper.make_node("Cast", ["x"], ["y"], name="cast", to=TensorProto.FLOAT8E8M0, round_mode="nearest")],
        [vi("x", [4])], [vi("y", [4], TensorProto.FLOAT8E8M0)], opset=24,
    ),
    # complex has no element type in geir
    "cast_complex": lambda: model(
        [helper.make_node("Cast", ["x"], ["y"], name="cast", to=TensorProto.COMPLEX64)],
        [vi("x", [4])], [vi("y", [4], TensorProto.COMPLEX64)],
    ),
    # blocked quantization whose scale does not block x
    "bad_block": lambda: model(
        [helper.make_node("DequantizeLinear", ["x", "s"], ["y"], name="dq", axis=1, block_size=2)],
        [vi("x", [2, 4], TensorProto.INT4), vi("s", [2, 3])], [vi("y", [2, 4])],
    ),
}

if __name__ == "__main__":
    main(CASES)
