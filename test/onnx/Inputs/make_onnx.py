"""Write small ONNX models for the importer's lit tests: make_onnx.py CASE OUT.onnx [CASE OUT.onnx ...]"""

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from onnx_cases import const, main, vi, model

F = TensorProto.FLOAT


def _loop_model(trips):
    """y = x + 0 + 1 + ... + (trips - 1) as a Loop with one carried value and a scan output."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Cast", ["i"], ["i_f"], name="as_float", to=F),
         helper.make_node("Add", ["y_in", "i_f"], ["y_out"], name="acc"),
         helper.make_node("Identity", ["y_out"], ["scan_out"], name="emit")],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("y_in", [2])],
        [vi("cond_out", [], TensorProto.BOOL), vi("y_out", [2]), vi("scan_out", [2])])
    return model([helper.make_node("Loop", ["m", "", "x"], ["y", "ys"], name="loop", body=body)],
                 [vi("x", [2])], [vi("y", [2]), vi("ys", [trips, 2])], [const("m", np.array(trips, np.int64))],
                 opset=21)


CASES = {
    # Conv with auto_pad SAME_UPPER: explicit pads, odd total at the end.
    "conv_same_upper": lambda: model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv1", auto_pad="SAME_UPPER", strides=[2, 2])],
        [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 4, 4])],
        [const("w", np.ones((4, 3, 4, 4), np.float32))],
    ),
    # Softmax before opset 13 flattens at `axis`: reshape + softmax + reshape.
    "softmax_opset11": lambda: model(
        [helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1)],
        [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], opset=11,
    ),
    # Slice before opset 10 takes attributes; they become constant operands.
    "slice_opset9": lambda: model(
        [helper.make_node("Slice", ["x"], ["y"], name="sl", starts=[1], ends=[3], axes=[1])],
        [vi("x", [2, 5])], [vi("y", [2, 2])], opset=9,
    ),
    # Clip with only `max`: the missing min is materialised (trailing optional operands).
    "clip_max_only": lambda: model(
        [helper.make_node("Clip", ["x", "", "hi"], ["y"], name="clip")],
        [vi("x", [4])], [vi("y", [4])], [const("hi", np.array(6.0, np.float32))],
    ),
    # Opset 6 legacy broadcast: B aligned at axis 1 of A.
    "add_legacy_broadcast": lambda: model(
        [helper.make_node("Add", ["a", "b"], ["y"], name="add", broadcast=1, axis=1)],
        [vi("a", [2, 3, 4]), vi("b", [3])], [vi("y", [2, 3, 4])], opset=6,
    ),
    # ReduceMean with axes as an input (opset 18) becomes the axes attribute.
    "reduce_axes_input": lambda: model(
        [helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="rm", keepdims=0)],
        [vi("x", [2, 3, 4])], [vi("y", [2, 4])], [const("axes", np.array([1], np.int64))], opset=18,
    ),
    # Split into equal parts with num_outputs (opset 18): sizes become a constant operand.
    "split_num_outputs": lambda: model(
        [helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=1, num_outputs=2)],
        [vi("x", [2, 6])], [vi("a", [2, 3]), vi("b", [2, 3])], opset=18,
    ),
    # Reshape whose target comes from Shape/Gather/Concat arithmetic (TorchScript style).
    "reshape_computed": lambda: model(
        [
            helper.make_node("Shape", ["x"], ["s"], name="shape"),
            helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
            helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"], name="unsq"),
            helper.make_node("Concat", ["n1", "minus1"], ["target"], name="concat", axis=0),
            helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
        ],
        [vi("x", [2, 3, 4])], [vi("y", [2, 12])],
        [const("zero", np.array(0, np.int64)), const("ax0", np.array([0], np.int64)),
         const("minus1", np.array([-1], np.int64))],
    ),
    # RMSNormalization (opset 23) over the last two axes: one graph.rms_norm.
    "rms_norm_opset23": lambda: model(
        [helper.make_node("RMSNormalization", ["x", "scale"], ["y"], name="rms", axis=-2, epsilon=1e-6)],
        [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], [const("scale", np.full((3, 4), 0.5, np.float32))], opset=23,
    ),
    # Rejections.
    "dynamic_input": lambda: model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", ["N", 4])], [vi("y", ["N", 4])]
    ),
    "opset5": lambda: model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [4])], [vi("y", [4])], opset=5),
    "opset29": lambda: model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [4])], [vi("y", [4])], opset=29),
    "rms_norm_stash_type": lambda: model(
        [helper.make_node("RMSNormalization", ["x", "scale"], ["y"], name="rms", stash_type=0)],
        [vi("x", [2, 4])], [vi("y", [2, 4])], [const("scale", np.ones(4, np.float32))], opset=23,
    ),
    "dropout_mask_used": lambda: model(
        [helper.make_node("Dropout", ["x"], ["y", "mask"], name="drop")],
        [vi("x", [4])], [vi("y", [4]), vi("mask", [4], TensorProto.BOOL)], opset=12,
    ),
    "conv_channel_mismatch": lambda: model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv_bad")],
        [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])],
        [const("w", np.ones((4, 2, 1, 1), np.float32))],
    ),
    "string_input": lambda: model(
        [helper.make_node("Identity", ["x"], ["y"], name="id")],
        [vi("x", [2], TensorProto.STRING)], [vi("y", [2], TensorProto.STRING)],
    ),
    "custom_domain": lambda: helper.make_model(
        helper.make_graph([helper.make_node("Foo", ["x"], ["y"], name="foo", domain="com.acme")], "t",
                          [vi("x", [2])], [vi("y", [2])]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.acme", 1)],
    ),
    # Invalid models (each must be one clear error): two nodes write 'y'.
    "duplicate_output": lambda: model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu"), helper.make_node("Neg", ["x"], ["y"], name="neg")],
        [vi("x", [4])], [vi("y", [4])],
    ),
    # A graph input with a negative dimension.
    "negative_dim": lambda: model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2, -3])], [vi("y", [2, -3])],
    ),
    # add reads b, which relu computes from add's output.
    "cycle": lambda: model(
        [helper.make_node("Add", ["x", "b"], ["a"], name="add"), helper.make_node("Relu", ["a"], ["b"], name="relu")],
        [vi("x", [4])], [vi("b", [4])],
    ),
    # add reads b, which nothing produces.
    "missing_input": lambda: model(
        [helper.make_node("Add", ["x", "b"], ["y"], name="add")], [vi("x", [4])], [vi("y", [4])],
    ),
    # ConstantOfShape of 10^15 float32 elements: 3.55 PiB.
    "constant_of_shape_huge": lambda: model(
        [helper.make_node("ConstantOfShape", ["shape"], ["y"], name="fill")], [], [vi("y", [10**15])],
        [const("shape", np.array([10**15], np.int64))],
    ),
    # Range of 2^40 int64 elements (8 TiB): from constants, so folding would allocate it.
    "range_huge": lambda: model(
        [helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="range")], [], [vi("y", [2**40], TensorProto.INT64)],
        [const("start", np.array(0, np.int64)), const("limit", np.array(2**40, np.int64)),
         const("delta", np.array(1, np.int64))],
    ),
    # Expand of a constant to 2^20 x 2^20 float32 (4 TiB).
    "expand_huge": lambda: model(
        [helper.make_node("Expand", ["one", "shape"], ["y"], name="expand")], [], [vi("y", [2**20, 2**20])],
        [const("one", np.ones((1, 1), np.float32)), const("shape", np.array([2**20, 2**20], np.int64))],
    ),
    # What opsets 22-28 changed (frontend/onnx_opsets.py), one model per rule.
    "relu_opset28": lambda: model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [4])], [vi("y", [4])], opset=28),
    "cast_round_mode": lambda: model(
        [helper.make_node("Cast", ["x"], ["y"], name="cast", to=TensorProto.FLOAT16, round_mode="down")],
        [vi("x", [4])], [vi("y", [4], TensorProto.FLOAT16)], opset=24,
    ),
    "cast_to_e8m0": lambda: model(
        [helper.make_node("Cast", ["x"], ["y"], name="cast", to=TensorProto.FLOAT8E8M0)],
        [vi("x", [4])], [vi("y", [4], TensorProto.FLOAT8E8M0)], opset=24,
    ),
    "castlike_round_mode_opset23": lambda: model(
        [helper.make_node("CastLike", ["x", "like"], ["y"], name="castlike", round_mode="up")],
        [vi("x", [4]), vi("like", [1], TensorProto.FLOAT16)], [vi("y", [4], TensorProto.FLOAT16)], opset=23,
    ),
    "int2_input": lambda: model(
        [helper.make_node("Identity", ["x"], ["y"], name="id")],
        [vi("x", [4], TensorProto.INT2)], [vi("y", [4], TensorProto.INT2)], opset=25,
    ),
    "float6_cast": lambda: model(
        [helper.make_node("Cast", ["x"], ["y"], name="cast", to=TensorProto.FLOAT6E2M3)],
        [vi("x", [4])], [vi("y", [4], TensorProto.FLOAT6E2M3)], opset=28,
    ),
    "range_f16": lambda: model(
        [helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="range")], [],
        [vi("y", [4], TensorProto.FLOAT16)],
        [const("start", np.array(2048, np.float16)), const("limit", np.array(2052, np.float16)),
         const("delta", np.array(1, np.float16))], opset=27,
    ),
    "range_f16_stash_f16": lambda: model(
        [helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="range", stash_type=TensorProto.FLOAT16)],
        [], [vi("y", [4], TensorProto.FLOAT16)],
        [const("start", np.array(0, np.float16)), const("limit", np.array(4, np.float16)),
         const("delta", np.array(1, np.float16))], opset=27,
    ),
    # Attention (25): a sliding window (a constant mask); (24) a static cache's valid lengths.
    "attention_window": lambda: model(
        [helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn", left_window_size=1, right_window_size=0)],
        [vi("q", [1, 1, 3, 4]), vi("k", [1, 1, 3, 4]), vi("v", [1, 1, 3, 4])], [vi("y", [1, 1, 3, 4])], opset=25,
    ),
    "attention_window_opset24": lambda: model(
        [helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn", left_window_size=1)],
        [vi("q", [1, 1, 3, 4]), vi("k", [1, 1, 3, 4]), vi("v", [1, 1, 3, 4])], [vi("y", [1, 1, 3, 4])], opset=24,
    ),
    "attention_nonpad": lambda: model(
        [helper.make_node("Attention", ["q", "k", "v", "", "", "", "len"], ["y"], name="attn", is_causal=1)],
        [vi("q", [2, 1, 1, 4]), vi("k", [2, 1, 6, 4]), vi("v", [2, 1, 6, 4]), vi("len", [2], TensorProto.INT64)],
        [vi("y", [2, 1, 1, 4])], opset=24,
    ),
    "attention_nonpad_opset23": lambda: model(
        [helper.make_node("Attention", ["q", "k", "v", "", "", "", "len"], ["y"], name="attn")],
        [vi("q", [2, 1, 1, 4]), vi("k", [2, 1, 6, 4]), vi("v", [2, 1, 6, 4]), vi("len", [2], TensorProto.INT64)],
        [vi("y", [2, 1, 1, 4])], opset=23,
    ),
    # Control flow: If on a constant condition, Loop and Scan with static trip counts.
    "if_const": lambda: model(
        [helper.make_node("Constant", [], ["c"], name="c", value=numpy_helper.from_array(np.array(False))),
         helper.make_node("If", ["c"], ["y"], name="if",
                          then_branch=helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="then_relu")],
                                                        "then", [], [vi("t", [4])]),
                          else_branch=helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="else_neg")],
                                                        "else", [], [vi("e", [4])]))],
        [vi("x", [4])], [vi("y", [4])], opset=21,
    ),
    "if_runtime": lambda: model(
        [helper.make_node("If", ["c"], ["y"], name="if",
                          then_branch=helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [vi("t", [4])]),
                          else_branch=helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", [4])]))],
        [vi("c", [], TensorProto.BOOL), vi("x", [4])], [vi("y", [4])], opset=21,
    ),
    "loop_static": lambda: _loop_model(3),
    "loop_too_long": lambda: _loop_model(5000),
    "scan_reverse": lambda: model(
        [helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], name="scan", num_scan_inputs=1,
                          scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1],
                          body=helper.make_graph([helper.make_node("Add", ["s_in", "x_t"], ["s_out"], name="acc"),
                                                  helper.make_node("Identity", ["s_out"], ["y_t"], name="emit")],
                                                 "body", [vi("s_in", [2]), vi("x_t", [2])], [vi("s_out", [2]), vi("y_t", [2])]))],
        [vi("s0", [2]), vi("xs", [2, 3])], [vi("s", [2]), vi("ys", [2, 3])], opset=21,
    ),
    "scan_opset8": lambda: model(
        [helper.make_node("Scan", ["", "s0", "xs"], ["s", "ys"], name="scan", num_scan_inputs=1,
                          body=helper.make_graph([helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
                                                  helper.make_node("Identity", ["s_out"], ["y_t"])],
                                                 "body", [vi("s_in", [2]), vi("x_t", [2])], [vi("s_out", [2]), vi("y_t", [2])]))],
        [vi("s0", [1, 2]), vi("xs", [1, 3, 2])], [vi("s", [1, 2]), vi("ys", [1, 3, 2])], opset=8,
    ),
    # Ops onnx defines by a function: expanded at import unless geir converts them itself.
    "causal_conv_function": lambda: model(
        [helper.make_node("CausalConvWithState", ["x", "w"], ["y", "state"], name="cconv", activation="silu")],
        [vi("x", [1, 2, 5]), vi("w", [2, 1, 3])], [vi("y", [1, 2, 5]), vi("state", [1, 2, 2])], opset=27,
    ),
    "swiglu_missing_input": lambda: model(
        [helper.make_node("SwiGLU", ["a"], ["y"], name="swiglu")], [vi("a", [2, 4])], [vi("y", [2, 4])], opset=28,
    ),
    "gelu_converted": lambda: model(
        [helper.make_node("Gelu", ["x"], ["y"], name="gelu")], [vi("x", [4])], [vi("y", [4])], opset=20,
    ),
    "nms_no_function": lambda: model(
        [helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["sel"], name="nms")],
        [vi("boxes", [1, 6, 4]), vi("scores", [1, 1, 6])], [vi("sel", [3, 3], TensorProto.INT64)], opset=21,
    ),
    # Recurrent layers, unrolled: a 2-step GRU; sequence_lens shorter than the sequence.
    "gru_two_steps": lambda: model(
        [helper.make_node("GRU", ["x", "w", "r"], ["y", "y_h"], name="gru", hidden_size=3)],
        [vi("x", [2, 1, 4])], [vi("y", [2, 1, 1, 3]), vi("y_h", [1, 1, 3])],
        [const("w", np.ones((1, 9, 4), np.float32)), const("r", np.ones((1, 9, 3), np.float32))], opset=14,
    ),
    "rnn_short_sequence": lambda: model(
        [helper.make_node("RNN", ["x", "w", "r", "", "lens"], ["y"], name="rnn", hidden_size=3)],
        [vi("x", [4, 2, 4])], [vi("y", [4, 1, 2, 3])],
        [const("w", np.ones((1, 3, 4), np.float32)), const("r", np.ones((1, 3, 3), np.float32)),
         const("lens", np.array([4, 3], np.int32))], opset=14,
    ),
    "space_to_depth_crd": lambda: model(
        [helper.make_node("SpaceToDepth", ["x"], ["y"], name="s2d", blocksize=2, mode="CRD")],
        [vi("x", [1, 3, 4, 6])], [vi("y", [1, 12, 2, 3])], opset=28,
    ),
    "space_to_depth_mode_opset27": lambda: model(
        [helper.make_node("SpaceToDepth", ["x"], ["y"], name="s2d", blocksize=2, mode="CRD")],
        [vi("x", [1, 3, 4, 6])], [vi("y", [1, 12, 2, 3])], opset=27,
    ),
    # A reduction whose axes are a graph input: geir-compile --freeze axes=1 (compile-freeze.test).
    "reduce_axes_graph_input": lambda: model(
        [helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum", keepdims=0)],
        [vi("x", [2, 3]), vi("axes", [1], TensorProto.INT64)], [vi("y", [2])], opset=18,
    ),
    "mod_fmod0_float": lambda: model(
        [helper.make_node("Mod", ["a", "b"], ["y"], name="mod", fmod=0)],
        [vi("a", [4]), vi("b", [4])], [vi("y", [4])], opset=28,
    ),
}

if __name__ == "__main__":
    main(CASES)
