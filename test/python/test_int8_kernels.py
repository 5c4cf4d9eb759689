"""int8 cube kernels (docs/quantization.md "Kernels"): int8 x int8 convolutions, matmuls and
gemms accumulated in int32 on the cube, with a fused dequantize / requantize epilogue.

Each case is graph-level MLIR compiled by `geir.compile` (must_keep_origin_dtype: the
precision mode leaves the int8 graph alone) and run on the ascend interpreter against the
graph interpreter's numpy semantics: int32 results exactly, dequantized floats within f32
rounding, requantized int8 within one step and equal on >= 99% of the elements (a value on a
rounding boundary may round the other way after a differently ordered f32 product).
"""

from __future__ import annotations

import numpy as np
import pytest

from xdsl.dialects.builtin import IntegerType

import geir
from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.ir.text import parse_module
from geir.dialects import make_context
from geir.lowering.graph_to_ascend import is_fallback
from geir.runtime.interpreter import run_module

RNG = np.random.default_rng(11)


def _t(shape, elt: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{elt}>" if shape else f"tensor<{elt}>"


def _dense(array: np.ndarray, elt: str) -> str:
    return f"graph.constant dense<{np.array2string(array, separator=', ', threshold=10**9).replace(chr(10), '')}> : {_t(array.shape, elt)}"


def _compile(text: str):
    module = parse_module(text, make_context(), "int8")
    return geir.compile(module, precision_mode="must_keep_origin_dtype")


def _run(model, feeds):
    out = model.run(feeds)
    ref = run_module(model.stages["01_import"], feeds)
    return out["output0"], ref["output0"]


def _kernels(model) -> list[a.KernelOp]:
    return [op for op in model.module.ops if isinstance(op, a.KernelOp)]


def _int8(shape) -> np.ndarray:
    return RNG.integers(-128, 128, shape).astype(np.int8)


def _conv_text(x, w, out, attrs: str, tail: str, result: str, consts: str = "", bias: int | None = None) -> str:
    b = ""
    if bias is not None:
        consts += f"  %b = {_dense(RNG.integers(-3000, 3000, bias).astype(np.int32), 'i32')}\n"
        b = ", %b"
    bt = f", {_t((bias,), 'i32')}" if bias is not None else ""
    return f"""func.func @main(%x: {_t(x, 'i8')} {{onnx.name = "x"}}, %w: {_t(w, 'i8')} {{onnx.name = "w"}}) -> {result} {{
{consts}  %y = graph.conv %x, %w{b} {attrs} : ({_t(x, 'i8')}, {_t(w, 'i8')}{bt}) -> {_t(out, 'i32')}
{tail}}}
"""


CONVS = [
    # x, w, attributes, output
    ((1, 5, 9, 11), (20, 5, 3, 3), "{pads = array<i64: 1, 1, 1, 1>, offset_x = -7 : i64}", (1, 20, 9, 11)),
    ((2, 5, 9, 11), (20, 5, 3, 3), "{pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, offset_x = 5 : i64}",
     (2, 20, 5, 6)),
    ((2, 40, 7, 7), (33, 40, 1, 1), "{}", (2, 33, 7, 7)),
    ((1, 3, 12, 12), (16, 3, 5, 5), "{pads = array<i64: 2, 2, 2, 2>, offset_x = 100 : i64}", (1, 16, 12, 12)),
]


@pytest.mark.parametrize("x,w,attrs,out", CONVS)
def test_int8_conv_exact(x, w, attrs, out):
    tail = f"  func.return %y : {_t(out, 'i32')}\n"
    model = _compile(_conv_text(x, w, out, attrs, tail, _t(out, "i32")))
    got, ref = _run(model, {"x": _int8(x), "w": _int8(w)})
    assert got.dtype == np.int32 and np.array_equal(got, ref)
    kernels = _kernels(model)
    assert len(kernels) == 1 and not is_fallback(kernels[0])
    assert kernels[0].attributes[attr_names.TEMPLATE].data == "conv"


def test_pointwise_conv_reads_the_feature_map_as_a_matrix():
    """A 1x1 window at stride 1 without padding: the [C, H * W] image is the product's
    [K, pixels] matrix, copied in whole rows (no load3d, no per-element interleave), and
    the result stays exact."""
    x, w, out = (2, 40, 7, 7), (33, 40, 1, 1), (2, 33, 7, 7)
    model = _compile(_conv_text(x, w, out, "{}", f"  func.return %y : {_t(out, 'i32')}\n", _t(out, "i32")))
    got, ref = _run(model, {"x": _int8(x), "w": _int8(w)})
    assert np.array_equal(got, ref)
    (kernel,) = _kernels(model)
    assert not any(isinstance(op, a.Load3dOp) for op in kernel.walk())
    # the feature map's copies: [channels, pixels] tiles of the [N * C, H * W] view (stride 49)
    fm_loads = [op for op in kernel.walk() if isinstance(op, a.CopyOp) and op.pipe == "MTE2"
                and op.src.type.get_strides()[0] == 7 * 7]
    assert fm_loads
    for op in fm_loads:  # each channel's pixels are one run (ND2NZ), not one element per DMA block
        rows, pixels = op.src.type.get_shape()
        assert op.relayout == (rows * pixels, min(pixels, 32))


def _dequantize_relu_quantize(zero_point: int):
    """conv(i8) with an i32 bias -> dequantize (per channel) -> relu -> quantize (scale 0.05,
    `zero_point`), compiled and run on random int8 data: (model, its output, the graph's)."""
    x, w, out = (2, 5, 9, 11), (20, 5, 3, 3), (2, 20, 9, 11)
    sc = (RNG.random(20) * 0.002 + 0.0005).astype(np.float32).reshape(1, 20, 1, 1)
    consts = (f"  %s = {_dense(sc, 'f32')}\n  %s2 = graph.constant dense<0.05> : tensor<f32>\n"
              f"  %z2 = graph.constant dense<{zero_point}> : tensor<i8>\n")
    f32t, i8t = _t(out, "f32"), _t(out, "i8")
    tail = (f"  %d = graph.dequantize %y, %s : ({_t(out, 'i32')}, {_t(sc.shape, 'f32')}) -> {f32t}\n"
            f"  %r = graph.relu %d : ({f32t}) -> {f32t}\n"
            f"  %q = graph.quantize %r, %s2, %z2 : ({f32t}, tensor<f32>, tensor<i8>) -> {i8t}\n"
            f"  func.return %q : {i8t}\n")
    text = _conv_text(x, w, out, "{pads = array<i64: 1, 1, 1, 1>, offset_x = 3 : i64}", tail, i8t, consts, bias=20)
    model = _compile(text)
    return (model, *_run(model, {"x": _int8(x), "w": _int8(w)}))


def test_int8_conv_bias_dequantize_relu_quantize_is_one_kernel():
    model, got, ref = _dequantize_relu_quantize(-5)
    diff = np.abs(got.astype(np.int32) - ref.astype(np.int32))
    assert got.dtype == np.int8 and diff.max() <= 1 and np.mean(diff == 0) >= 0.99
    assert len(np.unique(ref)) > 20  # the scales leave a real range of values
    kernels = _kernels(model)
    assert len(kernels) == 1 and kernels[0].core_type.data == "mix"
    body = [type(op) for op in kernels[0].walk()]
    assert a.VdivOp in body and a.VroundOp in body and a.Load3dOp in body


def test_a_relu_before_a_requantize_is_the_clamp_bound():
    """conv -> dequantize -> relu -> quantize at a zero point the FIX pipe cannot clamp at (it
    relus at 0): the vector epilogue's relu is the clamp's lower bound max(-128, zero point),
    not a vector pass; the kernel's int8 output equals the graph's bit for bit."""
    model, got, ref = _dequantize_relu_quantize(-5)
    np.testing.assert_array_equal(got, ref)
    assert (ref == -5).mean() > 0.2 and len(np.unique(ref)) > 20  # the relu and the range both matter
    (kernel,) = _kernels(model)
    body = {type(op) for op in kernel.walk()}
    assert kernel.core_type.data == "mix" and a.VreluOp not in body and a.VroundOp in body


def _fix_requantized(acc: np.ndarray, scale: np.ndarray, zero_point: int, relu: bool) -> np.ndarray:
    """What the FIX pipe writes, modeled independently of the runtime: the scale read as a
    19-bit float (the f32's low 13 mantissa bits dropped), half away from zero, saturated."""
    held = (np.ascontiguousarray(scale, np.float32).view(np.uint32) & 0xFFFFE000).view(np.float32)
    t = acc.astype(np.float32) * held + np.float32(zero_point)
    r = np.clip(np.sign(t) * np.floor(np.abs(t) + np.float32(0.5)), -128, 127)
    return (np.maximum(r, 0) if relu else r).astype(np.int8)


def test_requantize_with_a_relu_rides_on_the_fix_pipe():
    """conv(i8) + i32 bias -> dequantize (per channel) -> relu -> quantize (zero point 0):
    graph-fold-qdq makes it requantize -> relu, which the FIX pipe computes on its way out of
    l0c (the bias from the bias table, the scales from the fixpipe buffer): a cube kernel with
    no vector work, equal to a model of the FIX's arithmetic bit for bit and within one step
    of the graph's f32 arithmetic on >= 99% of the elements."""
    x, w, out = (2, 5, 9, 11), (20, 5, 3, 3), (2, 20, 9, 11)
    sc = (RNG.random(20) * 0.002 + 0.0005).astype(np.float32).reshape(1, 20, 1, 1)
    bias = RNG.integers(-3000, 3000, 20).astype(np.int32)
    consts = (f"  %s = {_dense(sc, 'f32')}\n  %s2 = graph.constant dense<0.05> : tensor<f32>\n"
              "  %z2 = graph.constant dense<0> : tensor<i8>\n"
              f"  %b = {_dense(bias, 'i32')}\n")
    f32t, i8t, i32t = _t(out, "f32"), _t(out, "i8"), _t(out, "i32")
    conv = (f'func.func @main(%x: {_t(x, "i8")} {{onnx.name = "x"}}, %w: {_t(w, "i8")} {{onnx.name = "w"}}) -> RESULT {{\n'
            f"{consts}  %y = graph.conv %x, %w, %b {{pads = array<i64: 1, 1, 1, 1>, offset_x = 3 : i64}} : "
            f"({_t(x, 'i8')}, {_t(w, 'i8')}, {_t((20,), 'i32')}) -> {i32t}\n")
    tail = (f"  %d = graph.dequantize %y, %s : ({i32t}, {_t(sc.shape, 'f32')}) -> {f32t}\n"
            f"  %r = graph.relu %d : ({f32t}) -> {f32t}\n"
            f"  %q = graph.quantize %r, %s2, %z2 : ({f32t}, tensor<f32>, tensor<i8>) -> {i8t}\n"
            f"  func.return %q : {i8t}\n}}\n")
    feeds = {"x": _int8(x), "w": _int8(w)}
    model = _compile(conv.replace("RESULT", i8t) + tail)
    got, ref = _run(model, feeds)
    acc = run_module(parse_module(conv.replace("RESULT", i32t) + f"  func.return %y : {i32t}\n}}\n",
                                  make_context(), "acc"), feeds)["output0"]
    # graph-fold-qdq's requantize scale: s / s2, the nearest the FIX holds (dialects/ascend.py)
    combined = a.fix_scale_nearest((sc.astype(np.float64) / np.float64(np.float32(0.05))).astype(np.float32))
    np.testing.assert_array_equal(got, _fix_requantized(acc, combined, 0, relu=True))
    diff = np.abs(got.astype(np.int32) - ref.astype(np.int32))
    assert diff.max() <= 1 and np.mean(diff == 0) >= 0.99
    assert (ref == 0).mean() > 0.2 and len(np.unique(ref)) > 20
    (kernel,) = _kernels(model)
    assert kernel.core_type.data == "cube"
    assert not any(isinstance(op, a.VectorOp) for op in kernel.walk())
    (fix,) = [op for op in kernel.walk() if isinstance(op, a.CopyOp) and op.quant is not None]
    assert fix.relu is not None and a.space_of(fix.quant.type) == "fb" and fix.dst.type.element_type == IntegerType(8)
    assert any(op.bias is not None for op in kernel.walk() if isinstance(op, a.MmadOp))


@pytest.mark.parametrize("per_group,fix", [(28, False), (32, True)])
def test_grouped_conv_takes_the_fix_stage_only_on_aligned_groups(per_group, fix):
    """A grouped int8 conv (ShuffleNet's 1x1 group convs: 4 groups) with an i32 bias and a
    per-channel requantize: a tile's rows start at group * (channels / group), so its slice of
    the l1 bias and scale vectors lies on a 32-byte block only when a group's channels are a
    multiple of 16. 28 channels a group keep the vector epilogue (the FIX stage's MTE1 copies
    would start mid-block: the interpreter refused the program before); 32 take the FIX
    stage. Either way within one step of the graph on >= 99% of the elements."""
    groups, cin = 4, 24
    m = groups * per_group
    x, w, out = (1, cin, 14, 14), (m, cin // groups, 1, 1), (1, m, 14, 14)
    sc = (RNG.random(m) * 0.002 + 0.0005).astype(np.float32).reshape(1, m, 1, 1)
    bias = RNG.integers(-300, 300, m).astype(np.int32)
    f32t, i8t, i32t = _t(out, "f32"), _t(out, "i8"), _t(out, "i32")
    text = f"""func.func @main(%x: {_t(x, 'i8')} {{onnx.name = "x"}}, %w: {_t(w, 'i8')} {{onnx.name = "w"}}) -> {i8t} {{
  %s = {_dense(sc, 'f32')}
  %s2 = graph.constant dense<0.05> : tensor<f32>
  %z2 = graph.constant dense<0> : tensor<i8>
  %b = {_dense(bias, 'i32')}
  %y = graph.conv %x, %w, %b {{group = {groups} : i64}} : ({_t(x, 'i8')}, {_t(w, 'i8')}, {_t((m,), 'i32')}) -> {i32t}
  %d = graph.dequantize %y, %s : ({i32t}, {_t(sc.shape, 'f32')}) -> {f32t}
  %r = graph.relu %d : ({f32t}) -> {f32t}
  %q = graph.quantize %r, %s2, %z2 : ({f32t}, tensor<f32>, tensor<i8>) -> {i8t}
  func.return %q : {i8t}
}}
"""
    model = _compile(text)
    got, ref = _run(model, {"x": _int8(x), "w": _int8(w)})
    diff = np.abs(got.astype(np.int32) - ref.astype(np.int32))
    assert diff.max() <= 1 and np.mean(diff == 0) >= 0.99 and len(np.unique(ref)) > 20
    quantizing = [op for k in _kernels(model) for op in k.walk() if isinstance(op, a.CopyOp) and op.quant is not None]
    assert bool(quantizing) == fix


def test_uint8_conv_is_not_taken_by_the_cube():
    text = """func.func @main(%x: tensor<1x4x6x6xui8> {onnx.name = "x"}, %w: tensor<8x4x3x3xi8> {onnx.name = "w"}) -> tensor<1x8x6x6xi32> {
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, offset_x = 128 : i64} : (tensor<1x4x6x6xui8>, tensor<8x4x3x3xi8>) -> tensor<1x8x6x6xi32>
  func.return %y : tensor<1x8x6x6xi32>
}
"""
    model = _compile(text)
    feeds = {"x": RNG.integers(0, 256, (1, 4, 6, 6)).astype(np.uint8), "w": _int8((8, 4, 3, 3))}
    got, ref = _run(model, feeds)
    assert np.array_equal(got, ref)
    assert all(is_fallback(k) for k in _kernels(model))


def _matmul_text(m, k, n, trans_b=False, gemm_c=False, dequant=False) -> tuple[str, tuple]:
    wshape = (n, k) if trans_b else (k, n)
    consts, extra = "", ""
    if gemm_c:
        consts += f"  %c = {_dense(RNG.integers(-5000, 5000, n).astype(np.int32), 'i32')}\n"
    attrs = " {trans_b = 1 : i64}" if trans_b else ""
    if gemm_c or trans_b:
        c = ", %c" if gemm_c else ""
        ct = f", {_t((n,), 'i32')}" if gemm_c else ""
        line = f"  %y = graph.gemm %x, %w{c}{attrs} : ({_t((m, k), 'i8')}, {_t(wshape, 'i8')}{ct}) -> {_t((m, n), 'i32')}\n"
    else:
        line = f"  %y = graph.matmul %x, %w : ({_t((m, k), 'i8')}, {_t(wshape, 'i8')}) -> {_t((m, n), 'i32')}\n"
    result = _t((m, n), "i32")
    if dequant:
        sc = (RNG.random(n) * 0.01 + 0.001).astype(np.float32)
        consts += f"  %s = {_dense(sc, 'f32')}\n"
        extra = f"  %d = graph.dequantize %y, %s : ({result}, {_t((n,), 'f32')}) -> {_t((m, n), 'f32')}\n"
        result = _t((m, n), "f32")
    ret = "%d" if dequant else "%y"
    text = f"""func.func @main(%x: {_t((m, k), 'i8')} {{onnx.name = "x"}}, %w: {_t(wshape, 'i8')} {{onnx.name = "w"}}) -> {result} {{
{consts}{line}{extra}  func.return {ret} : {result}
}}
"""
    return text, wshape


@pytest.mark.parametrize("m,k,n,trans_b,gemm_c", [
    (37, 70, 50, False, False), (64, 256, 96, False, False), (16, 33, 17, True, True), (100, 300, 64, False, True)])
def test_int8_matmul_gemm_exact(m, k, n, trans_b, gemm_c):
    text, wshape = _matmul_text(m, k, n, trans_b, gemm_c)
    model = _compile(text)
    got, ref = _run(model, {"x": _int8((m, k)), "w": _int8(wshape)})
    assert got.dtype == np.int32 and np.array_equal(got, ref)
    kernels = _kernels(model)
    assert len(kernels) == 1 and kernels[0].attributes[attr_names.TEMPLATE].data == "matmul"


def test_int8_matmul_per_column_dequantize():
    m, k, n = 45, 130, 70
    text, wshape = _matmul_text(m, k, n, dequant=True)
    model = _compile(text)
    got, ref = _run(model, {"x": _int8((m, k)), "w": _int8(wshape)})
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=0)
    kernels = _kernels(model)
    assert len(kernels) == 1 and kernels[0].core_type.data == "mix"
    assert attr_names.SCRATCH in kernels[0].attributes  # the i32 tile staged in the kernel's own gm


def test_int8_matmul_runs_the_cube_at_twice_the_f16_rate():
    m, k, n = 256, 1024, 256
    int8, _ = _matmul_text(m, k, n)
    f16 = int8.replace("xi8>", "xf16>").replace("xi32>", "xf16>")
    times = {}
    for name, text in (("i8", int8), ("f16", f16)):
        model = _compile(text)
        _, report = model.profile()
        times[name] = report["pipe_busy_us"]["M"]
    assert 0.4 <= times["i8"] / times["f16"] <= 0.6, times


def test_memory_plan_counts_int8_and_int32_bytes():
    text, _ = _matmul_text(64, 128, 96, dequant=True)
    model = _compile(text)
    allocs = {op.memref.name_hint: a.nbytes_of(op.memref.type) for op in model.module.walk() if isinstance(op, a.AllocOp)
              and a.space_of(op.memref.type) == "gm"}
    scratch = [v for k, v in allocs.items() if k and k.endswith("_scratch")]
    assert scratch == [64 * 96 * 4]  # the i32 staging in int32 bytes
    x = next(op for op in model.module.walk() if isinstance(op, a.KernelOp)).body.block.args[0]
    assert a.nbytes_of(x.type) == 64 * 128  # int8 operands in one byte each


def test_load3d_pad_value_fills_the_padding_only():
    """The semantics both interpreters share: padding entries hold pad_value, channels past
    `channels` and K rows past the windows stay zero."""
    from geir.runtime.ascend_semantics import load3d_tile

    text = open(__file__.replace("python/test_int8_kernels.py", "dialects/ascend/load3d-pad-value.mlir")).read()
    module = parse_module(text, make_context(), "load3d")
    op = next(o for o in module.walk() if isinstance(o, a.Load3dOp))
    fm = RNG.integers(1, 100, (3, 6, 32)).astype(np.int8)  # no zeros, no -3 in the image
    tile = load3d_tile(op, fm, 0, 0, 0, 0, 0, 32, 48)
    image = fm[:, :, :6]
    padded = np.pad(image, ((0, 0), (1, 1), (1, 1)), constant_values=-3)
    for k in range(27):  # (c, kh, kw) rows against the padded image
        c, kh, kw = k // 9, k // 3 % 3, k % 3
        assert np.array_equal(tile[k, :36], padded[c, kh:kh + 6, kw:kw + 6].reshape(-1))
    assert not tile[27:].any() and not tile[:, 36:].any()


def test_deployment_size_conv_is_one_int8_cube_kernel():
    """A ResNet stage's 3x3 conv, 256 -> 256 channels on 56x56 at batch 8, with its
    dequantize -> relu -> requantize: compiled (running it is the bench's job, it takes
    minutes) into one cube kernel at int8 whose FIX pipe requantizes. At this size graph-layout
    converts the map to NC1HWC0 (C0 = 32) and the weights (an input here) to int8 FRACTAL_Z,
    each by a layout kernel, rather than interleave the map in every l1 box."""
    x, w, out = (8, 256, 56, 56), (256, 256, 3, 3), (8, 256, 56, 56)
    consts = ("  %s = graph.constant dense<0.001> : tensor<1x256x1x1xf32>\n"
              "  %s2 = graph.constant dense<0.05> : tensor<f32>\n  %z2 = graph.constant dense<0> : tensor<i8>\n")
    f32t, i8t = _t(out, "f32"), _t(out, "i8")
    tail = (f"  %d = graph.dequantize %y, %s : ({_t(out, 'i32')}, tensor<1x256x1x1xf32>) -> {f32t}\n"
            f"  %r = graph.relu %d : ({f32t}) -> {f32t}\n"
            f"  %q = graph.quantize %r, %s2, %z2 : ({f32t}, tensor<f32>, tensor<i8>) -> {i8t}\n"
            f"  func.return %q : {i8t}\n")
    model = _compile(_conv_text(x, w, out, "{pads = array<i64: 1, 1, 1, 1>, offset_x = 3 : i64}", tail, i8t, consts))
    kernels = _kernels(model)
    convs = [k for k in kernels if attr_names.LAYOUT_CONVERSION not in k.attributes]
    assert len(convs) == 1 and convs[0].core_type.data == "cube"
    assert any(isinstance(op, a.CopyOp) and op.quant is not None for op in convs[0].walk())
    mmads = [op for op in convs[0].walk() if isinstance(op, a.MmadOp)]
    assert mmads and all(op.dtype == "i8" for op in mmads)
    fm, weights = (arg.type.get_shape() for arg in convs[0].body.block.args[:2])
    assert fm == (8, 8, 56, 56, 32) and weights == (72, 16, 16, 32)  # NC1HWC0 and FRACTAL_Z, C0 = 32
    assert len(kernels) == 3


ROW_QDQ = """func.func @main(%x: tensor<2x16x10x10xf32> {onnx.name = "x"}, %a: tensor<2x16x10x10xi8> {onnx.name = "a"}) -> tensor<2x16x10x10xi8> {
  %m = graph.constant dense<0.5> : tensor<f32>
  %s = graph.constant dense<0.02> : tensor<f32>
  %z = graph.constant dense<1> : tensor<i8>
  %sa = graph.constant dense<0.03> : tensor<1x16x1x1xf32>
  %za = graph.constant dense<-2> : tensor<1x16x1x1xi8>
  %y = graph.mul %x, %m : (tensor<2x16x10x10xf32>, tensor<f32>) -> tensor<2x16x10x10xf32>
  %da = graph.dequantize %a, %sa, %za : (tensor<2x16x10x10xi8>, tensor<1x16x1x1xf32>, tensor<1x16x1x1xi8>) -> tensor<2x16x10x10xf32>
  %t = graph.add %y, %da : (tensor<2x16x10x10xf32>, tensor<2x16x10x10xf32>) -> tensor<2x16x10x10xf32>
  %r = graph.relu %t : (tensor<2x16x10x10xf32>) -> tensor<2x16x10x10xf32>
  %q = graph.quantize %r, %s, %z : (tensor<2x16x10x10xf32>, tensor<f32>, tensor<i8>) -> tensor<2x16x10x10xi8>
  func.return %q : tensor<2x16x10x10xi8>
}
"""


def test_row_kernel_fuses_quantize_and_dequantize_with_elementwise_ops():
    """A graph input's quantize after a scale, with an int8 residual dequantized per channel
    (zero points too): one row kernel, equal to the reference."""
    model = _compile(ROW_QDQ)
    feeds = {"x": (RNG.standard_normal((2, 16, 10, 10)) * 3).astype(np.float32), "a": _int8((2, 16, 10, 10))}
    got, ref = _run(model, feeds)
    assert got.dtype == np.int8 and np.array_equal(got, ref)
    kernels = _kernels(model)
    assert len(kernels) == 1 and kernels[0].attributes[attr_names.TEMPLATE].data == "row"


def test_int8_conv_epilogue_with_a_float_residual():
    """conv(i8) -> dequantize -> add(float residual) -> relu -> quantize in one kernel."""
    x, w, out = (1, 8, 10, 10), (24, 8, 3, 3), (1, 24, 10, 10)
    f32t, i8t = _t(out, "f32"), _t(out, "i8")
    text = f"""func.func @main(%x: {_t(x, 'i8')} {{onnx.name = "x"}}, %w: {_t(w, 'i8')} {{onnx.name = "w"}}, %res: {f32t} {{onnx.name = "res"}}) -> {i8t} {{
  %s = graph.constant dense<0.002> : tensor<f32>
  %s2 = graph.constant dense<0.04> : tensor<f32>
  %z2 = graph.constant dense<3> : tensor<i8>
  %y = graph.conv %x, %w {{pads = array<i64: 1, 1, 1, 1>, offset_x = -1 : i64}} : ({_t(x, 'i8')}, {_t(w, 'i8')}) -> {_t(out, 'i32')}
  %d = graph.dequantize %y, %s : ({_t(out, 'i32')}, tensor<f32>) -> {f32t}
  %t = graph.add %d, %res : ({f32t}, {f32t}) -> {f32t}
  %r = graph.relu %t : ({f32t}) -> {f32t}
  %q = graph.quantize %r, %s2, %z2 : ({f32t}, tensor<f32>, tensor<i8>) -> {i8t}
  func.return %q : {i8t}
}}
"""
    model = _compile(text)
    feeds = {"x": _int8(x), "w": _int8(w), "res": RNG.standard_normal(out).astype(np.float32)}
    got, ref = _run(model, feeds)
    diff = np.abs(got.astype(np.int32) - ref.astype(np.int32))
    assert diff.max() <= 1 and np.mean(diff == 0) >= 0.99
    kernels = _kernels(model)
    assert len(kernels) == 1 and kernels[0].attributes[attr_names.TEMPLATE].data == "conv"


def test_a_projection_shortcut_writes_its_dequantized_product():
    """A residual block's projection in int8 (ResNet's first block of a stage, force_fp16):
    conv_a and conv_b of the same map, each dequantized and cast to f16, added, relu,
    quantized. Each conv dequantizes its own accumulator on its FIX pipe (graph-fuse
    `dequantizes_product`): two conv kernels, the shortcut's writing f16, no int32 tensor
    through HBM and no vector kernel of its own. Equal to a model of the FIX's f16 results
    and the f16 epilogue (epilogue.py `_half_program`: the add and relu in f16 as the graph's,
    the quantize as x * f16(1 / scale)) bit for bit, within one step of the graph (whose f16
    dequantized values the FIX's 19-bit scales move by their last bit, and whose quantize
    divides in f32) on >= 98%."""
    x, w, out = (2, 16, 14, 14), (64, 16, 1, 1), (2, 64, 14, 14)
    i32t, f32t, f16t, i8t = _t(out, "i32"), _t(out, "f32"), _t(out, "f16"), _t(out, "i8")
    sa = (RNG.random(64) * 1e-4 + 5e-5).astype(np.float32).reshape(1, 64, 1, 1)
    sb = (RNG.random(64) * 1e-4 + 5e-5).astype(np.float32).reshape(1, 64, 1, 1)
    lines = []
    for k, s in (("a", sa), ("b", sb)):
        lines += [f"  %s{k} = {_dense(s, 'f32')}",
                  f"  %c{k} = graph.conv %x, %w{k} : ({_t(x, 'i8')}, {_t(w, 'i8')}) -> {i32t}",
                  f"  %d{k} = graph.dequantize %c{k}, %s{k} : ({i32t}, tensor<1x64x1x1xf32>) -> {f32t}",
                  f"  %h{k} = graph.cast %d{k} {{to = f16}} : ({f32t}) -> {f16t}"]
    text = f"""func.func @main(%x: {_t(x, 'i8')} {{onnx.name = "x"}}, %wa: {_t(w, 'i8')} {{onnx.name = "wa"}}, %wb: {_t(w, 'i8')} {{onnx.name = "wb"}}) -> {i8t} {{
  %s = graph.constant dense<0.05> : tensor<f32>
  %z = graph.constant dense<-128> : tensor<i8>
{chr(10).join(lines)}
  %t = graph.add %ha, %hb : ({f16t}, {f16t}) -> {f16t}
  %r = graph.relu %t : ({f16t}) -> {f16t}
  %r32 = graph.cast %r {{to = f32}} : ({f16t}) -> {f32t}
  %q = graph.quantize %r32, %s, %z : ({f32t}, tensor<f32>, tensor<i8>) -> {i8t}
  func.return %q : {i8t}
}}
"""
    model = _compile(text)
    feeds = {"x": _int8(x), "wa": _int8(w), "wb": _int8(w)}
    got, ref = _run(model, feeds)
    # the model of the kernels: each FIX pipe's f16 (its 19-bit scale), then the f16 epilogue
    held = lambda s: (s.view(np.uint32) & 0xFFFFE000).view(np.float32)  # noqa: E731
    acc = {k: np.einsum("nchw,oc->nohw", feeds["x"].astype(np.int64), feeds[f"w{k}"][:, :, 0, 0].astype(np.int64))
           for k in "ab"}
    h = [(acc[k].astype(np.float32) * held(s)).astype(np.float16) for k, s in (("a", sa), ("b", sb))]
    t = np.maximum(h[0] + h[1], np.float16(0)) * np.float16(1 / 0.05)
    np.testing.assert_array_equal(got, np.minimum(np.rint(t) + np.float16(-128), np.float16(127)).astype(np.int8))
    diff = np.abs(got.astype(np.int32) - ref.astype(np.int32))
    assert diff.max() <= 1 and np.mean(diff == 0) >= 0.98 and len(np.unique(ref)) > 50
    kernels = _kernels(model)
    assert [k.attributes[attr_names.TEMPLATE].data for k in kernels] == ["conv", "conv"]
    written = [arg.type.element_type for k in kernels for arg in k.body.block.args]
    assert IntegerType(32) not in written, written


def test_a_requantized_map_is_written_blocked_for_the_next_conv():
    """conv 3x3 -> requantize -> relu -> conv 3x3 -> requantize at 2 x 64 x 56 x 56: the FIX pipe
    of the first conv writes its int8 result as NC1HWC0 (C0 = 32), which the second conv's
    load3d reads as it lies - no layout kernel between the two (graph-layout,
    op_info.fix_requantized); the output is the FIX arithmetic's bit for bit."""
    x, w = (2, 64, 56, 56), (64, 64, 3, 3)
    xt, wt, i32t, i8t = _t(x, "i8"), _t(w, "i8"), _t(x, "i32"), _t(x, "i8")
    s1 = (RNG.random(64) * 0.01 + 0.01).astype(np.float32).reshape(1, 64, 1, 1)
    s2 = (RNG.random(64) * 0.02 + 0.01).astype(np.float32).reshape(1, 64, 1, 1)
    text = f"""func.func @main(%x: {xt} {{onnx.name = "x"}}, %w: {wt} {{onnx.name = "w"}}) -> {i8t} {{
  %s1 = {_dense(s1, 'f32')}
  %s2 = {_dense(s2, 'f32')}
  %z = graph.constant dense<0> : tensor<i8>
  %a = graph.conv %x, %w {{pads = array<i64: 1, 1, 1, 1>, offset_x = 1 : i64}} : ({xt}, {wt}) -> {i32t}
  %q = graph.requantize %a, %s1, %z : ({i32t}, tensor<1x64x1x1xf32>, tensor<i8>) -> {i8t}
  %r = graph.relu %q : ({i8t}) -> {i8t}
  %b = graph.conv %r, %w {{pads = array<i64: 1, 1, 1, 1>}} : ({i8t}, {wt}) -> {i32t}
  %y = graph.requantize %b, %s2, %z : ({i32t}, tensor<1x64x1x1xf32>, tensor<i8>) -> {i8t}
  func.return %y : {i8t}
}}
"""
    model = _compile(text)
    feeds = {"x": _int8(x), "w": RNG.integers(-3, 4, w).astype(np.int8)}
    got, ref = _run(model, feeds)
    # each layer as the FIX pipe computes it (the graph's f32 arithmetic differs by one step on
    # a few elements per layer, and the second conv spreads those of the first)
    conv = lambda offset: parse_module(  # noqa: E731
        f'func.func @main(%x: {xt} {{onnx.name = "x"}}, %w: {wt} {{onnx.name = "w"}}) -> {i32t} {{\n'
        f"  %a = graph.conv %x, %w {{pads = array<i64: 1, 1, 1, 1>, offset_x = {offset} : i64}} : ({xt}, {wt}) -> {i32t}\n"
        f"  func.return %a : {i32t}\n}}\n", make_context(), "conv")
    q1 = _fix_requantized(run_module(conv(1), feeds)["output0"], s1, 0, relu=True)
    want = _fix_requantized(run_module(conv(0), {"x": q1, "w": feeds["w"]})["output0"], s2, 0, relu=False)
    np.testing.assert_array_equal(got, want)
    assert np.abs(got.astype(np.int32) - ref.astype(np.int32)).max() <= 2 and len(np.unique(ref)) > 50
    convs = [k for k in _kernels(model) if k.attributes[attr_names.TEMPLATE].data == "conv"]
    assert [k.core_type.data for k in convs] == ["cube", "cube"]
    first_fix = [op for op in convs[0].walk() if isinstance(op, a.CopyOp) and op.quant is not None]
    assert first_fix and all(op.layout is not None and op.layout.data == "nd2nc1hwc0" for op in first_fix)
    layout_kernels = [k for k in _kernels(model) if attr_names.LAYOUT_CONVERSION in k.attributes]
    assert len(layout_kernels) == 1  # the graph input's conversion only
    assert convs[1].body.block.args[0].type.get_shape() == (2, 2, 56, 56, 32)


def test_an_int8_channel_concat_is_the_convs_input_load():
    """concat(a, b) of int8 maps along whole blocks of channels, then an int8 conv: one conv
    kernel reading each operand as a segment of its input (graph-fuse's channel concat), no
    kernel moving the concat; int32 results exact."""
    a_, b_, w = (2, 32, 9, 9), (2, 64, 9, 9), (16, 96, 3, 3)
    out = (2, 16, 9, 9)
    cat = _t((2, 96, 9, 9), "i8")
    text = f"""func.func @main(%a: {_t(a_, 'i8')} {{onnx.name = "a"}}, %b: {_t(b_, 'i8')} {{onnx.name = "b"}}, %w: {_t(w, 'i8')} {{onnx.name = "w"}}) -> {_t(out, 'i32')} {{
  %c = graph.concat %a, %b {{axis = 1 : i64}} : ({_t(a_, 'i8')}, {_t(b_, 'i8')}) -> {cat}
  %y = graph.conv %c, %w {{pads = array<i64: 1, 1, 1, 1>, offset_x = 2 : i64}} : ({cat}, {_t(w, 'i8')}) -> {_t(out, 'i32')}
  func.return %y : {_t(out, 'i32')}
}}
"""
    model = _compile(text)
    got, ref = _run(model, {"a": _int8(a_), "b": _int8(b_), "w": _int8(w)})
    assert got.dtype == np.int32 and np.array_equal(got, ref)
    (kernel,) = _kernels(model)
    assert kernel.attributes[attr_names.TEMPLATE].data == "conv"


@pytest.mark.parametrize("pool, attrs, zp, out", [
    ("max_pool", "kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>", -128, (3, 40, 7, 7)),
    ("avg_pool", "kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>", 0,
     (3, 40, 8, 8)),
    ("avg_pool", "kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, count_include_pad = 1 : i64, "
                 "pads = array<i64: 0, 0, 1, 1>", 5, (3, 40, 15, 15)),
])
def test_a_quantized_pool_is_one_pool_kernel_equal_to_the_graph(pool, attrs, zp, out):
    """pool(f16) -> cast f32 -> quantize (graph-fuse's pool-quantize): one pool kernel that
    quantizes its result tile in f32 as the graph does, so the int8 map is bit for bit that of
    the pool kernel and the quantize kernel it replaces, values on rounding boundaries included
    (the f16 inputs take every half step of the scale) - and the graph's for a max pool. An
    average's f16 window sums round differently from the graph's (the pool kernel's own
    numerics): within one step."""
    x = (3, 40, 15, 15)
    f16t, f32t, i8t = _t(out, "f16"), _t(out, "f32"), _t(out, "i8")
    text = f"""func.func @main(%x: {_t(x, 'f16')} {{onnx.name = "x"}}) -> {i8t} {{
  %s = graph.constant dense<0.03125> : tensor<f32>
  %z = graph.constant dense<{zp}> : tensor<i8>
  %p = graph.{pool} %x {{{attrs}}} : ({_t(x, 'f16')}) -> {f16t}
  %c = graph.cast %p {{to = f32}} : ({f16t}) -> {f32t}
  %q = graph.quantize %c, %s, %z : ({f32t}, tensor<f32>, tensor<i8>) -> {i8t}
  func.return %q : {i8t}
}}
"""
    model = _compile(text)
    module = parse_module(text, make_context(), "int8")
    split = geir.compile(module, precision_mode="must_keep_origin_dtype", disable_fusions=("pool-quantize",))
    feeds = {"x": (RNG.integers(-3000, 3000, x) / 64).astype(np.float16)}  # past int8's range too
    got, ref = _run(model, feeds)
    assert got.dtype == np.int8 and np.array_equal(got, split.run(feeds)["output0"])
    assert np.array_equal(got, ref) if pool == "max_pool" else np.abs(got.astype(int) - ref).max() <= 1
    assert got.min() == -128 and got.max() == 127
    assert [k.attributes[attr_names.TEMPLATE].data for k in _kernels(model)] == ["pool"]
    assert len(_kernels(split)) == 2


@pytest.mark.parametrize("pool, elt, attrs", [
    ("max_pool", "f16", "kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>"),
    ("avg_pool", "f32", "kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>"),
])
def test_a_quantized_pool_read_in_float_too_writes_both_results(pool, elt, attrs):
    """pool -> [cast f32 ->] quantize, the pool's result returned in float too (Inception-v2's
    stem pool: a module's convs read it in int8, its pool branch in float): one pool kernel
    writing the float and the int8 map, each bit for bit what the pool kernel and the quantize
    kernel it replaces write."""
    x, out = (3, 40, 15, 15), (3, 40, 7, 7) if pool == "max_pool" else (3, 40, 8, 8)
    ft, f32t, i8t = _t(out, elt), _t(out, "f32"), _t(out, "i8")
    cast = f"  %c = graph.cast %p {{to = f32}} : ({ft}) -> {f32t}\n" if elt == "f16" else ""
    text = f"""func.func @main(%x: {_t(x, elt)} {{onnx.name = "x"}}) -> ({ft}, {i8t}) {{
  %s = graph.constant dense<0.03125> : tensor<f32>
  %z = graph.constant dense<-3> : tensor<i8>
  %p = graph.{pool} %x {{{attrs}}} : ({_t(x, elt)}) -> {ft}
{cast}  %q = graph.quantize {"%c" if cast else "%p"}, %s, %z : ({f32t}, tensor<f32>, tensor<i8>) -> {i8t}
  func.return %p, %q : {ft}, {i8t}
}}
"""
    model = _compile(text)
    split = geir.compile(parse_module(text, make_context(), "int8"), precision_mode="must_keep_origin_dtype",
                         disable_fusions=("pool-quantize",))
    feeds = {"x": (RNG.integers(-3000, 3000, x) / 64).astype(np.dtype(elt.replace("f", "float")))}
    got, want = model.run(feeds), split.run(feeds)
    assert got["output1"].dtype == np.int8 and got["output0"].dtype == feeds["x"].dtype
    assert all(np.array_equal(got[k], want[k]) for k in ("output0", "output1"))
    assert got["output1"].min() == -128 and got["output1"].max() == 127
    assert [k.attributes[attr_names.TEMPLATE].data for k in _kernels(model)] == ["pool"]
    assert len(_kernels(split)) == 2


def test_a_global_pool_flattened_for_the_classifier_quantizes_its_own_result():
    """avg_pool over the whole image -> cast f32 -> reshape [N, C] -> quantize (the classifier
    input of an int8 CNN): a reshape keeps the plain result's bytes in their order, so the pool
    kernel quantizes on the way out and writes [N, C] int8 - bit for bit what the pool kernel and
    the quantize kernel it replaces write, within one step of the graph."""
    x, p, q = (3, 64, 7, 7), (3, 64, 1, 1), (3, 64)
    text = f"""func.func @main(%x: {_t(x, 'f16')} {{onnx.name = "x"}}) -> {_t(q, 'i8')} {{
  %s = graph.constant dense<0.03125> : tensor<f32>
  %z = graph.constant dense<-128> : tensor<i8>
  %shape = graph.constant dense<[3, 64]> : tensor<2xi64>
  %p = graph.avg_pool %x {{kernel_shape = array<i64: 7, 7>}} : ({_t(x, 'f16')}) -> {_t(p, 'f16')}
  %c = graph.cast %p {{to = f32}} : ({_t(p, 'f16')}) -> {_t(p, 'f32')}
  %r = graph.reshape %c, %shape : ({_t(p, 'f32')}, tensor<2xi64>) -> {_t(q, 'f32')}
  %q = graph.quantize %r, %s, %z : ({_t(q, 'f32')}, tensor<f32>, tensor<i8>) -> {_t(q, 'i8')}
  func.return %q : {_t(q, 'i8')}
}}
"""
    model = _compile(text)
    module = parse_module(text, make_context(), "int8")
    split = geir.compile(module, precision_mode="must_keep_origin_dtype", disable_fusions=("pool-quantize",))
    feeds = {"x": (RNG.integers(-300, 3000, x) / 64).astype(np.float16)}
    got, ref = _run(model, feeds)
    assert got.dtype == np.int8 and got.shape == q and np.array_equal(got, split.run(feeds)["output0"])
    assert np.abs(got.astype(int) - ref).max() <= 1
    assert [k.attributes[attr_names.TEMPLATE].data for k in _kernels(model)] == ["pool"]
    assert len(_kernels(split)) == 2


DW_TAILS = {
    "requantize": ("i8", "  %z = graph.constant dense<-128> : tensor<i8>\n"
                         "  %q = graph.requantize %y, %s, %z : ({i32t}, {st}, tensor<i8>) -> {ot}\n"),
    "dequantize_relu": ("f32", "  %d = graph.dequantize %y, %s : ({i32t}, {st}) -> {ot}\n"
                               "  %q = graph.relu %d : ({ot}) -> {ot}\n"),
}


@pytest.mark.parametrize("tail", sorted(DW_TAILS))
@pytest.mark.parametrize("stride", [1, 2])
def test_an_int8_depthwise_conv_runs_on_the_vector_unit_equal_to_the_graph(tail, stride):
    """A depthwise int8 conv (ShuffleNet's 3x3 ones: padded with the input's zero point, an
    i32 bias) with a per-channel requantize or dequantize: the vector kernel, which multiplies
    and adds in f32 (exact for int8), adds the bias in i32 and requantizes in f32 as the graph
    does - bit for bit the graph's, where the cube's FIX pipe differs on rounding ties. Biases
    past 2^24 (where an f32 add would round) and scales that keep the outputs in range."""
    x, w = (2, 64, 14, 14), (64, 1, 3, 3)
    out = (2, 64, 14 // stride, 14 // stride)
    bias = RNG.integers(-40000, 40000, 64).astype(np.int32)
    bias[:4] = [2**25 + 3, -(2**26) - 7, 2**24 + 1, 2**30 - 5]
    sc = (RNG.random(64) * 0.004 + 0.002).astype(np.float32).reshape(1, 64, 1, 1)
    sc[0, :4, 0, 0] = [2.0**-19, 2.0**-20, 2.0**-18, 2.0**-24]
    elt, ops = DW_TAILS[tail]
    i32t, ot, st = _t(out, "i32"), _t(out, elt), _t(sc.shape, "f32")
    text = f"""func.func @main(%x: {_t(x, 'i8')} {{onnx.name = "x"}}, %w: {_t(w, 'i8')} {{onnx.name = "w"}}) -> {ot} {{
  %b = {_dense(bias, 'i32')}
  %s = {_dense(sc, 'f32')}
  %y = graph.conv %x, %w, %b {{pads = array<i64: 1, 1, 1, 1>, strides = array<i64: {stride}, {stride}>, group = 64 : i64, offset_x = -128 : i64}} : ({_t(x, 'i8')}, {_t(w, 'i8')}, {_t((64,), 'i32')}) -> {i32t}
{ops.format(i32t=i32t, ot=ot, st=st)}  func.return %q : {ot}
}}
"""
    model = _compile(text)
    got, ref = _run(model, {"x": _int8(x), "w": _int8(w)})
    assert got.dtype == ref.dtype and np.array_equal(got, ref)
    assert len(np.unique(ref)) > 100  # the scales leave a real range of values
    (kernel,) = _kernels(model)
    assert (kernel.attributes[attr_names.TEMPLATE].data, kernel.core_type.data) == ("depthwise", "vector")
    body = [op for op in kernel.walk() if isinstance(op, a.VaddOp)]
    assert any(op.dst.type.element_type == IntegerType(32) for op in body)  # the bias, in i32


def test_an_int8_depthwise_conv_with_its_i32_result_stays_on_the_cube():
    """Nothing to requantize or dequantize: the i32 accumulator is the output, which the cube
    writes exactly; the vector kernel computes in f32 and is not taken."""
    x, w, out = (1, 64, 14, 14), (64, 1, 3, 3), (1, 64, 14, 14)
    text = _conv_text(x, w, out, "{pads = array<i64: 1, 1, 1, 1>, group = 64 : i64, offset_x = -128 : i64}",
                      f"  func.return %y : {_t(out, 'i32')}\n", _t(out, "i32"), bias=64)
    model = _compile(text)
    got, ref = _run(model, {"x": _int8(x), "w": _int8(w)})
    assert np.array_equal(got, ref)
    assert [k.attributes[attr_names.TEMPLATE].data for k in _kernels(model)] == ["conv"]


@pytest.mark.parametrize("elt", ["f16", "f32"])
@pytest.mark.parametrize("keep", [False, True])
def test_an_lrn_read_in_int8_quantizes_its_own_result(elt, keep):
    """lrn -> [cast f32 ->] quantize (Inception-v1's first LRN, read by a conv in int8; `keep`:
    its float result returned too): one LRN kernel quantizing its result tile, each map bit for
    bit what the LRN kernel and the quantize kernel it replaces write."""
    x = (2, 40, 15, 15)
    ft, f32t, i8t = _t(x, elt), _t(x, "f32"), _t(x, "i8")
    cast = f"  %c = graph.cast %l {{to = f32}} : ({ft}) -> {f32t}\n" if elt == "f16" else ""
    result, ret = (f"({ft}, {i8t})", f"%l, %q : {ft}, {i8t}") if keep else (i8t, f"%q : {i8t}")
    text = f"""func.func @main(%x: {ft} {{onnx.name = "x"}}) -> {result} {{
  %s = graph.constant dense<0.0078125> : tensor<f32>
  %z = graph.constant dense<-3> : tensor<i8>
  %l = graph.lrn %x {{size = 5 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32}} : ({ft}) -> {ft}
{cast}  %q = graph.quantize {"%c" if cast else "%l"}, %s, %z : ({f32t}, tensor<f32>, tensor<i8>) -> {i8t}
  func.return {ret}
}}
"""
    model = _compile(text)
    split = geir.compile(parse_module(text, make_context(), "int8"), precision_mode="must_keep_origin_dtype",
                         disable_fusions=("lrn-quantize",))
    feeds = {"x": RNG.standard_normal(x).astype(np.dtype(elt.replace("f", "float")))}
    got, want = model.run(feeds), split.run(feeds)
    assert sorted(got) == sorted(want) and all(np.array_equal(got[k], want[k]) for k in got)
    q = got["output1" if keep else "output0"]
    assert q.dtype == np.int8 and q.min() == -128 and q.max() == 127
    assert [k.attributes[attr_names.TEMPLATE].data for k in _kernels(model)] == ["lrn"]
    assert len(_kernels(split)) == 2
