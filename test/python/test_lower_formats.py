"""Kernels on formatted tensors (docs/lowering.md, "Formatted tensors: pools and trans_data"):
`graph.trans_data` kernels (lowering/templates/trans_data.py) and the pool / LRN / global pool
templates reading and writing NC1HWC0 (lowering/templates/vector/), run tile by tile by the
ascend interpreter against the graph-level reference on the unlowered module.

Formatted function arguments are fed as storage arrays filled at random, padding lanes
included: a conversion to a blocked format must still write zero padding, and a pool's real
lanes must not depend on the padding lanes.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from xdsl.dialects import memref
from xdsl.dialects.builtin import IntegerType, TensorType, f16, f32
from xdsl.printer import Printer

from geir.dialects import ascend as a
from geir.dialects import formats as L
from geir.dialects import graph as g
from geir.dialects import make_context
from geir.ir.text import parse_module
from geir.lowering.graph_to_ascend import ConvertGraphToAscend, fallback_ops
from geir.driver.registry import build_passes
from geir.runtime.ascend_interpreter import run_ascend_module
from geir.runtime.interpreter import input_specs, random_inputs, run_module
from geir.testing.suite import assert_close, reference_run
from geir.dialects import attr_names

CTX = make_context()
ELTS = {"f32": f32, "f16": f16, "i8": IntegerType(8)}


def lower(text: str, **options):
    """(graph module, lowered module) of a function's text."""
    graph = parse_module(text, CTX)
    lowered = parse_module(text, CTX)
    ConvertGraphToAscend(**options).apply(CTX, lowered)
    lowered.verify()
    return graph, lowered


def kernels(module) -> list[a.KernelOp]:
    return [k for k in module.ops if isinstance(k, a.KernelOp)]


def run_both(text: str, seed: int = 0, device: str = "ascend910b", **options):
    """(lowered module, ascend outputs, graph reference outputs) on the same random feeds."""
    graph, lowered = lower(text, device=device, **options)
    feeds = random_inputs(graph, seed=seed)
    return lowered, run_ascend_module(lowered, feeds, device=device), run_module(graph, feeds)


# ---------------------------------------------------------------------------
# graph.trans_data
# ---------------------------------------------------------------------------


def trans_data_text(shape, elt, src: str, dst: str, origin: str = L.ND) -> str:
    """A function converting an operand stored `src` (of logical `shape`, `origin` order)."""
    logical = TensorType(elt, shape)
    tin = logical if src in (L.ND, origin) else L.format_type(logical, src, origin)
    tout = L.trans_data_type(tin, src, dst)
    return (f"func.func @main(%x: {tin}) -> {tout} {{\n"
            f'  %y = graph.trans_data %x {{src_format = "{src}", dst_format = "{dst}"}} : ({tin}) -> {tout}\n'
            f"  func.return %y : {tout}\n}}")


IMAGE_PAIRS = [  # (src, dst, origin)
    (L.NCHW, L.NC1HWC0, L.NCHW), (L.NC1HWC0, L.NCHW, L.NCHW), (L.ND, L.NC1HWC0, L.ND),
    (L.NC1HWC0, L.ND, L.NCHW), (L.NCHW, L.NHWC, L.NCHW), (L.NHWC, L.NCHW, L.NCHW),
    (L.NHWC, L.NC1HWC0, L.NHWC), (L.NC1HWC0, L.NHWC, L.NHWC), (L.NCHW, L.FRACTAL_Z, L.NCHW),
    (L.FRACTAL_Z, L.NCHW, L.NCHW), (L.NC1HWC0, L.FRACTAL_Z, L.NCHW), (L.FRACTAL_Z, L.NC1HWC0, L.NCHW),
    (L.NC1HWC0, L.NC1HWC0, L.NCHW),
]
IMAGE_SHAPES = [[1, 3, 5, 7], [2, 40, 7, 9], [1, 16, 3, 3], [1, 1000, 1, 1], [20, 33, 3, 3]]


def check_conversion(text: str, **options) -> list[a.KernelOp]:
    lowered, ours, ref = run_both(text, **options)
    assert fallback_ops(lowered) == []
    ks = kernels(lowered)
    assert ks and all(attr_names.LAYOUT_CONVERSION in k.attributes for k in ks)
    for name, want in ref.items():  # data movement only: bit for bit, zero padding included
        np.testing.assert_array_equal(ours[name], want, err_msg=name)
    return ks


@pytest.mark.parametrize("elt", ["f32", "f16"])
@pytest.mark.parametrize("shape", IMAGE_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("src,dst,origin", IMAGE_PAIRS, ids=lambda v: v)
def test_image_conversion(src, dst, origin, shape, elt):
    check_conversion(trans_data_text(shape, ELTS[elt], src, dst, origin))


@pytest.mark.parametrize("elt", ["f32", "f16", "i8"])
@pytest.mark.parametrize("shape", [[5], [2048], [16, 16], [33, 70], [3, 17, 40], [2, 2, 300, 20]],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("src,dst", [(L.ND, L.FRACTAL_NZ), (L.FRACTAL_NZ, L.ND), (L.FRACTAL_NZ, L.FRACTAL_NZ)],
                         ids=lambda v: v)
def test_matrix_conversion(src, dst, shape, elt):
    check_conversion(trans_data_text(shape, ELTS[elt], src, dst))


@pytest.mark.parametrize("src,dst,shape,origin", [
    (L.NCHW, L.NC1HWC0, [1, 64, 56, 56], L.NCHW),
    (L.NC1HWC0, L.NCHW, [2, 100, 28, 28], L.NCHW),
    (L.ND, L.FRACTAL_NZ, [512, 1000], L.ND),
    (L.FRACTAL_NZ, L.ND, [4, 200, 300], L.ND),
], ids=lambda v: v if isinstance(v, str) else "x".join(map(str, v)))
@pytest.mark.parametrize("options", [{}, {"double_buffer": False}, {"device": "ascend310p"}],
                         ids=["910b", "single-buffer", "310p"])
def test_big_conversion_uses_the_cores(src, dst, shape, origin, options):
    """Megabytes are tiled through ub and spread over the vector cores, on either device
    (NCHW <-> NC1HWC0 boxes are vtransposed in ub; ND -> NZ boxes of one column block are
    rows of C0 elements on both sides: strided DMA only)."""
    (k,) = check_conversion(trans_data_text(shape, f32, src, dst, origin), **options)
    assert k.block_count > 1
    transposes = any(isinstance(op, a.VtransposeOp) for op in k.walk())
    assert transposes or dst == L.FRACTAL_NZ


def test_classifier_conversion_is_dma_only():
    """The pooled [1, C, 1, 1] vector keeps its channel order: no vtranspose, two DMAs."""
    (k,) = check_conversion(trans_data_text([1, 1000, 1, 1], f32, L.NC1HWC0, L.ND, L.NCHW))
    ops = list(k.walk())
    assert not any(isinstance(op, a.VtransposeOp) for op in ops)
    assert sum(isinstance(op, a.CopyOp) for op in ops) == 2


def test_pair_without_kernel_is_a_correct_fallback():
    """NC1HWC0 -> FRACTAL_NZ (NZ over H, W) stays the reference, given the logical shape; the
    kernel is still counted as layout conversion."""
    text = trans_data_text([2, 20, 5, 6], f32, L.NC1HWC0, L.FRACTAL_NZ, L.NCHW)
    lowered, ours, ref = run_both(text)
    assert fallback_ops(lowered) == ["graph.trans_data"]
    (k,) = kernels(lowered)
    assert attr_names.LAYOUT_CONVERSION in k.attributes and "fallback" in k.attributes
    for name, want in ref.items():
        np.testing.assert_array_equal(ours[name], want)


# ---------------------------------------------------------------------------
# Pools, global pools and LRN on NC1HWC0
# ---------------------------------------------------------------------------


def pool_text(op: str, shape, elt, attrs: dict) -> str:
    n, c, h, w = shape
    if op in ("global_avg_pool", "global_max_pool"):
        oh = ow = 1
    elif op == "lrn":
        oh, ow = h, w
    else:
        k, p = attrs["kernel_shape"], attrs.get("pads", [0, 0, 0, 0])
        s, d = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1])
        ceil = attrs.get("ceil_mode", 0)

        def out(x, k, d, lo, hi, s):
            span = x + lo + hi - ((k - 1) * d + 1)
            o = (-(-span // s) if ceil else span // s) + 1
            return o - 1 if ceil and (o - 1) * s >= x + lo else o

        oh, ow = out(h, k[0], d[0], p[0], p[2], s[0]), out(w, k[1], d[1], p[1], p[3], s[1])
    tin = L.format_type(TensorType(elt, shape), L.NC1HWC0, L.NCHW)
    tout = L.format_type(TensorType(elt, [n, c, oh, ow]), L.NC1HWC0, L.NCHW)

    def attr(v):
        if isinstance(v, list):
            return f"array<i64: {', '.join(map(str, v))}>"
        return f"{v} : f32" if isinstance(v, float) else f"{v} : i64"

    body = ", ".join(f"{k} = {attr(v)}" for k, v in attrs.items())
    body = f" {{{body}}}" if body else ""
    return (f"func.func @main(%x: {tin}) -> {tout} {{\n  %y = graph.{op} %x{body} : ({tin}) -> {tout}\n"
            f"  func.return %y : {tout}\n}}")


POOLS = [
    ("max_pool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ("max_pool", {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ("max_pool", {"kernel_shape": [3, 2], "pads": [0, 1, 2, 0], "strides": [1, 2], "dilations": [2, 1]}),
    ("avg_pool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}),
    ("avg_pool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2], "count_include_pad": 1}),
    ("avg_pool", {"kernel_shape": [2, 2], "pads": [0, 0, 1, 1], "strides": [2, 2], "ceil_mode": 1}),
    ("global_avg_pool", {}),
    ("global_max_pool", {}),
    ("lrn", {"size": 5, "alpha": 1e-4, "beta": 0.75, "bias": 1.0}),
    ("lrn", {"size": 4, "alpha": 2e-2, "beta": 0.5, "bias": 2.0}),
]
TEMPLATES = {"max_pool": "pool", "avg_pool": "pool", "global_avg_pool": "row", "global_max_pool": "row",
             "lrn": "lrn"}


@pytest.mark.parametrize("elt", ["f32", "f16"])
@pytest.mark.parametrize("shape", [[1, 3, 9, 9], [2, 40, 7, 11], [1, 64, 30, 30]],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("op,attrs", POOLS, ids=lambda v: v if isinstance(v, str) else "-".join(
    f"{k}{''.join(map(str, x)) if isinstance(x, list) else x}" for k, x in v.items()))
def test_pool_on_nc1hwc0(op, attrs, shape, elt):
    """One native kernel (no conversions around it, no fallback); the real lanes match the
    graph reference, whatever the padding lanes hold."""
    text = pool_text(op, shape, ELTS[elt], attrs)
    lowered, ours, ref = run_both(text, seed=1)
    (k,) = kernels(lowered)
    assert fallback_ops(lowered) == [] and k.attributes["template"].data == TEMPLATES[op]
    if shape[2] * shape[3] > 800:
        assert k.block_count > 1
    (name, want), = ref.items()
    t = result_type(text)
    got = L.logical_array(np.asarray(ours[name]), t)
    want = L.logical_array(np.asarray(want), t)
    tol = {"rtol": 1e-5, "atol": 1e-6} if elt == "f32" else {"rtol": 4e-3, "atol": 2e-3}
    assert_close(got.astype(np.float64), want.astype(np.float64), f"{op} {shape}", **tol)


@pytest.mark.parametrize("blocked", [True, False], ids=["nc1hwc0", "nchw"])
@pytest.mark.parametrize("shape", [[1, 64, 27, 27], [2, 40, 7, 11]], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("attrs", [POOLS[0][1], POOLS[1][1], POOLS[2][1]], ids=["3x3s1p1", "3x3s2ceil", "dilated"])
def test_int8_max_pool(attrs, shape, blocked):
    """An int8 max pool (graph-fold-qdq's, after a quantize moved before it) is the pool
    template's, windows compared in f16, the padding the int8 minimum: exact against the graph
    reference, whatever the padding lanes hold; an int8 average is left to the reference."""
    text = pool_text("max_pool", shape, ELTS["i8"], attrs)
    if not blocked:
        text = plain_pool_text(text)
    lowered, ours, ref = run_both(text, seed=2)
    (k,) = kernels(lowered)
    assert fallback_ops(lowered) == [] and k.attributes["template"].data == "pool"
    (name, want), = ref.items()
    t = result_type(text)
    got, want = (L.logical_array(np.asarray(x), t) for x in (ours[name], want)) if blocked else (ours[name], want)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    avg = pool_text("avg_pool", shape, ELTS["i8"], {"kernel_shape": [2, 2], "strides": [2, 2]})
    assert fallback_ops(lower(avg)[1]) == ["graph.avg_pool"]


def plain_pool_text(text: str) -> str:
    """The pool function of `text` on plain NCHW tensors."""
    return re.sub(r"tensor<([0-9x]+)xi8, #graph.format<NC1HWC0, NCHW, \[([0-9, ]+)\]>>",
                  lambda m: "tensor<" + "x".join(m.group(2).split(", ")) + "xi8>", text)


def result_type(text: str) -> TensorType:
    """The (formatted) result type of the function in `text`."""
    graph = parse_module(text, CTX)
    ret = next(op for op in graph.walk() if op.name == "func.return")
    return ret.operands[0].type


def test_global_pool_row_too_big_for_ub():
    """A global pool whose [H * W, C0] row does not fit ub (56 x 56 x 16 f32) is left by the row
    template; the lowering runs it on plain NCHW between two conversion kernels: no fallback."""
    text = pool_text("global_avg_pool", [1, 64, 56, 56], f32, {})
    lowered, ours, ref = run_both(text)
    assert fallback_ops(lowered) == []
    assert [attr_names.LAYOUT_CONVERSION in k.attributes for k in kernels(lowered)] == [True, False, True]
    (name, want), = ref.items()
    assert_close(ours[name], np.asarray(want), name)


def test_pool_padding_lanes_do_not_leak():
    """NaN in the padding lanes of an NC1HWC0 input leaves the real lanes of an LRN (whose
    window crosses channels) and of an average pool finite and right."""
    for op, attrs in (POOLS[3], POOLS[8]):
        text = pool_text(op, [1, 20, 6, 6], f32, attrs)
        graph, lowered = lower(text)
        x = L.to_physical(np.random.default_rng(2).standard_normal((1, 20, 6, 6)).astype(np.float32),
                          L.NC1HWC0, L.NCHW)
        x[:, 1, :, :, 4:] = np.nan  # channels 20..31
        feeds = {input_specs(graph)[0][0]: x}
        ref = run_module(graph, feeds)
        ours = run_ascend_module(lowered, feeds)
        t = result_type(text)
        for name, want in ref.items():
            got = L.logical_array(np.asarray(ours[name]), t)
            assert np.isfinite(got).all(), op
            assert_close(got, L.logical_array(np.asarray(want), t), op, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# The light models after graph-layout
# ---------------------------------------------------------------------------

FORMAT_OPS = {"graph.max_pool", "graph.avg_pool", "graph.global_avg_pool", "graph.global_max_pool",
              "graph.lrn", "graph.trans_data"}


@pytest.mark.parametrize("name", ["light_squeezenet", "light_bvlc_alexnet", "light_densenet121"])
def test_light_model_with_layout(name):
    """After graph-layout no pool, LRN or trans_data of the model falls back, every trans_data
    is a layout_conversion kernel, and the outputs match the graph reference. SqueezeNet and
    DenseNet run blocked; their classifiers read the NC1HWC0 map in the kernel (a trans_data
    would cost a launch more). AlexNet's maps are small enough that ND wins throughout."""
    module, feeds, expected = reference_run(name)
    module = module.clone()
    passes = build_passes("graph-simplify,graph-fuse,graph-layout,convert-graph-to-ascend")
    for p in passes[:-1]:
        p.apply(CTX, module)
    conversions = sum(isinstance(op, g.TransDataOp) for op in module.walk())
    blocked = any(L.storage_of(v.type) == L.NC1HWC0 for op in module.walk() for v in op.results
                  if isinstance(v.type, TensorType))
    assert blocked == (name != "light_bvlc_alexnet")
    passes[-1].apply(CTX, module)
    assert not FORMAT_OPS & set(fallback_ops(module))
    ks = kernels(module)
    templates = {k.attributes["template"].data for k in ks if "template" in k.attributes}
    assert {"pool"} <= templates
    assert sum(attr_names.LAYOUT_CONVERSION in k.attributes for k in ks) == conversions
    ours = run_ascend_module(module, feeds)
    for out, want in expected.items():
        assert_close(ours[out], np.asarray(want), f"{name}:{out}")


# ---------------------------------------------------------------------------
# A strided pointwise conv on NC1HWC0 reads only the pixels it samples
# ---------------------------------------------------------------------------


def buffer(v):
    """The allocation a (sub)view is of."""
    while isinstance(v.owner, memref.SubviewOp):
        v = v.owner.source
    return v


def strided_conv_text(shape, m: int, strides, pads, elt, out_blocked: bool) -> str:
    """conv(x NC1HWC0, w FRACTAL_Z 1x1) with `strides` / `pads`, its result NC1HWC0 or NCHW."""

    def show(t) -> str:
        s = io.StringIO()
        Printer(stream=s).print_attribute(t)
        return s.getvalue()

    n, c, h, w = shape
    oh, ow = (h + pads[0] + pads[2] - 1) // strides[0] + 1, (w + pads[1] + pads[3] - 1) // strides[1] + 1
    x = L.format_type(TensorType(elt, shape), L.NC1HWC0, L.NCHW)
    wt = L.format_type(TensorType(elt, [m, c, 1, 1]), L.FRACTAL_Z, L.NCHW)
    y = TensorType(IntegerType(32) if elt == ELTS["i8"] else elt, [n, m, oh, ow])  # int8 accumulates in i32
    y = L.format_type(y, L.NC1HWC0, L.NCHW) if out_blocked else y
    return f"""func.func @main(%x: {show(x)}, %w: {show(wt)}) -> {show(y)} {{
  %y = graph.conv %x, %w {{strides = array<i64: {strides[0]}, {strides[1]}>, pads = array<i64: {", ".join(map(str, pads))}>}} : ({show(x)}, {show(wt)}) -> {show(y)}
  func.return %y : {show(y)}
}}"""


@pytest.mark.parametrize("elt", ["f32", "f16", "i8"])
@pytest.mark.parametrize("shape,m,strides,out_blocked", [
    ([2, 40, 13, 11], 24, (2, 2), True), ([1, 64, 56, 56], 128, (2, 2), False), ([3, 16, 9, 20], 48, (3, 2), True),
    ([1, 32, 10, 10], 16, (2, 1), False),
], ids=lambda v: "x".join(map(str, v)) if isinstance(v, list | tuple) else str(v))
def test_strided_pointwise_conv_samples_its_box(shape, m, strides, out_blocked, elt):
    """A 1x1 conv of stride > 1 without padding copies only the sampled pixels into l1 (a
    strided gm tile, the l1 box the output tile's size) and matches the graph reference,
    whatever the padding lanes hold; with padding the box is the window, as before."""
    out_blocked = out_blocked and elt != "i8"  # an int8 conv's i32 accumulator is written plain
    for pads, samples in (((0, 0, 0, 0), True), ((1, 0, 0, 1), False)):
        text = strided_conv_text(shape, m, strides, pads, ELTS[elt], out_blocked)
        lowered, ours, ref = run_both(text, seed=3)
        (k,) = kernels(lowered)
        boxes = [op for op in k.walk() if isinstance(op, a.CopyOp) and (buffer(op.operands[1]).name_hint or "").startswith("l1fm")]
        sampled = [list(b.operands[0].owner.static_strides.get_values()) for b in boxes
                   if hasattr(b.operands[0].owner, "static_strides")]
        assert bool(sampled) and all(st == [1, *strides, 1] for st in sampled) == samples, (pads, sampled)
        (name, want), = ref.items()
        t = result_type(text)
        got = L.logical_array(np.asarray(ours[name]), t) if out_blocked else np.asarray(ours[name])
        want = L.logical_array(np.asarray(want), t) if out_blocked else np.asarray(want)
        tol = {"f32": {"rtol": 1e-5, "atol": 1e-5}, "f16": {"rtol": 4e-3, "atol": 4e-3}, "i8": {"rtol": 0, "atol": 0}}[elt]
        assert_close(got.astype(np.float64), want.astype(np.float64), f"{shape} {strides} {pads}", **tol)
