"""Write small ONNX models for import-elementwise.test: make_elementwise_onnx.py CASE OUT.onnx [CASE OUT.onnx ...]"""

from functools import partial

import numpy as np
from onnx import TensorProto, helper

from onnx_cases import const, main, vi, model as _model

model = partial(_model, opset=22)

F, I32, U8, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.UINT8, TensorProto.INT64


def unary(op, name, opset=22, **attrs):
    return lambda: model([helper.make_node(op, ["x"], ["y"], name=name, **attrs)],
                         [vi("x", [2, 3])], [vi("y", [2, 3])], opset=opset)


CASES = {
    "acos": unary("Acos", "acos"),
    "tan": unary("Tan", "tan"),
    "sinh": unary("Sinh", "sinh"),
    "swish": unary("Swish", "swish", opset=24, alpha=0.5),
    "swiglu": lambda: model([helper.make_node("SwiGLU", ["a", "b"], ["y"], name="swiglu")],
                            [vi("a", [2, 3]), vi("b", [2, 3])], [vi("y", [2, 3])], opset=28),
    "swiglu_broadcast": lambda: model([helper.make_node("SwiGLU", ["a", "b"], ["y"], name="swiglu")],
                                      [vi("a", [2, 3]), vi("b", [3])], [vi("y", [2, 3])], opset=28),
    "is_inf": lambda: model([helper.make_node("IsInf", ["x"], ["y"], name="isinf", detect_negative=0)],
                            [vi("x", [4])], [vi("y", [4], TensorProto.BOOL)], opset=20),
    "is_nan": lambda: model([helper.make_node("IsNaN", ["x"], ["y"], name="isnan")],
                            [vi("x", [4])], [vi("y", [4], TensorProto.BOOL)], opset=20),
    "bitwise_xor": lambda: model([helper.make_node("BitwiseXor", ["a", "b"], ["y"], name="xor")],
                                 [vi("a", [2, 3], I32), vi("b", [3], I32)], [vi("y", [2, 3], I32)], opset=18),
    "bitwise_and_float": lambda: model([helper.make_node("BitwiseAnd", ["a", "b"], ["y"], name="and")],
                                       [vi("a", [3]), vi("b", [3])], [vi("y", [3])], opset=18),
    "bit_shift": lambda: model([helper.make_node("BitShift", ["a", "b"], ["y"], name="shl", direction="LEFT")],
                               [vi("a", [3], U8), vi("b", [3], U8)], [vi("y", [3], U8)], opset=11),
    "bitcast": lambda: model([helper.make_node("BitCast", ["x"], ["y"], name="bc", to=I32)],
                             [vi("x", [3])], [vi("y", [3], I32)], opset=26),
    "bitcast_width": lambda: model([helper.make_node("BitCast", ["x"], ["y"], name="bc", to=TensorProto.INT16)],
                                   [vi("x", [3])], [vi("y", [3], TensorProto.INT16)], opset=26),
    "cumsum": lambda: model([helper.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum", exclusive=1, reverse=1)],
                            [vi("x", [2, 3])], [vi("y", [2, 3])], [const("axis", np.array(-1, np.int64))], opset=14),
    "cumsum_runtime_axis": lambda: model(
        [helper.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum")],
        [vi("x", [2, 3]), vi("axis", [], I64)], [vi("y", [2, 3])], opset=14),
    "cumprod": lambda: model([helper.make_node("CumProd", ["x", "axis"], ["y"], name="cumprod")],
                             [vi("x", [2, 3])], [vi("y", [2, 3])], [const("axis", np.array(0, np.int32))], opset=26),
    "hardmax": unary("Hardmax", "hardmax", opset=13),
    "hardmax_opset11": lambda: model([helper.make_node("Hardmax", ["x"], ["y"], name="hardmax", axis=1)],
                                     [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], opset=11),
    "trilu": lambda: model([helper.make_node("Trilu", ["x", "k"], ["y"], name="trilu", upper=0)],
                           [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], [const("k", np.array(1, np.int64))], opset=14),
    "trilu_runtime_k": lambda: model([helper.make_node("Trilu", ["x", "k"], ["y"], name="trilu")],
                                     [vi("x", [3, 4]), vi("k", [], I64)], [vi("y", [3, 4])], opset=14),
    "hann": lambda: model([helper.make_node("HannWindow", ["n"], ["y"], name="hann", periodic=0)],
                          [], [vi("y", [4])], [const("n", np.array(4, np.int64))], opset=17),
    "hann_runtime_size": lambda: model([helper.make_node("HannWindow", ["n"], ["y"], name="hann")],
                                       [vi("n", [], I64)], [vi("y", [4])], opset=17),
    # A window's expanded form: Range up to Cast(size) of a graph input, no static shape.
    "range_of_size_input": lambda: model(
        [helper.make_node("Cast", ["n"], ["nf"], name="cast", to=F),
         helper.make_node("Range", ["zero", "nf", "one"], ["y"], name="range")],
        [vi("n", [], I64)], [vi("y", None)],
        [const("zero", np.array(0, np.float32)), const("one", np.array(1, np.float32))], opset=17),
}

if __name__ == "__main__":
    main(CASES)
