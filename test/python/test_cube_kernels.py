"""Cube kernels (lowering/templates/cube/) run on the ascend interpreter against the graph
kernels' numpy semantics.

Each case builds graph ops on block arguments, asks `cube.try_build` for the kernel through
a KernelRequest, wraps it in a one-launch host function and runs it with real per-space
buffers: a wrong tile index, a missing copy or a missing pad is a wrong number. Shapes are
chosen off the 16-grid (edge tiles in M, N, K, channels, pixels), with batches, transposes,
groups, strides, pads, dilations, depthwise on both units, and fused epilogues.

Tolerances: fp32 runs the cube in fp32 mode and only the summation order differs from numpy
(rtol 1e-4, atol 1e-5, the suite's). fp16 is compared with the float64 result of the same
f16 inputs under the standard rounding-error bound: the cube multiplies f16 x f16 exactly into
an f32 accumulator (K additions, each off by at most 2^-24 of the partial sum) and rounds the
result, then each epilogue step, to f16 (2^-11 each); the vector depthwise kernel accumulates
in f16. Every partial sum and intermediate is bounded by the same computation on |inputs|, so

    |y - ref| <= (steps x 2^-11 + K x u_acc) x f(|inputs|)

elementwise, with steps = the ops of the fusion + 1 and u_acc = 2^-24 (cube) or 2^-11 (vector).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Block, Region

from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.ir.types import tensor, to_element_type
from geir.ir.locations import name_loc
from geir.ir.text import parse_module
from geir.lowering.templates import cube
from geir.lowering.templates.cube import tiling as cube_tiling
from geir.lowering.templates.common import KernelRequest, gm_type
from geir.runtime import simulator
from geir.runtime.ascend_interpreter import run_ascend_module
from geir.target.cost_model import CostModel
from geir.target.device import load_device
from geir.reference.graph import reference_of
from geir.dialects import make_context

DEVICE = load_device("ascend910b")
COST = CostModel(DEVICE)
RNG = np.random.default_rng(7)


class Case:
    """Graph ops on named inputs, lowered to one cube kernel."""

    def __init__(self, dtype=np.float32):
        self.dtype = np.dtype(dtype)
        self.block = Block()
        self.names: list[str] = []
        self.feeds: dict[str, np.ndarray] = {}
        self.values = []
        self.ops = []

    def input(self, name: str, array: np.ndarray):
        array = np.asarray(array, self.dtype)
        arg = self.block.insert_arg(tensor(array.shape, to_element_type(array.dtype)), len(self.block.args))
        arg.name_hint = name
        self.names.append(name)
        self.feeds[name] = array
        self.values.append(arg)
        return arg

    def constant(self, name: str, array: np.ndarray):
        """A small constant cloned into a fusion: a kernel input whose value is known."""
        op = g.ConstantOp.from_array(np.asarray(array, self.dtype))
        op.results[0].name_hint = name
        self.names.append(name)
        self.feeds[name] = np.asarray(array, self.dtype)
        self.values.append(op.results[0])
        return op.results[0]

    def op(self, cls, inputs, **attrs):
        op = cls.build_op(inputs, **attrs)
        op.location = name_loc(f"n{len(self.ops)}")
        self.ops.append(op)
        return op.results[0]

    def request(self, outputs, double_buffer=True, kind="cube+vector") -> KernelRequest:
        return KernelRequest(name="k0", ops=self.ops, inputs=self.values, outputs=list(outputs), kind=kind,
                             device=DEVICE, cost=COST, double_buffer=double_buffer, location=self.ops[0].location)

    def build(self, outputs, **kw):
        req = self.request(outputs, **kw)
        kernel = cube.try_build(req)
        assert kernel is not None, "cube.try_build declined the request"
        args = [gm_type(v) for v in (*self.values, *outputs)]
        host = Block(arg_types=args)
        stream = a.StreamOp.get(0)
        # the kernel's own gm buffers, poisoned (unplanned): a read before a write shows
        allocs = [a.AllocOp.get(t) for t in kernel.function_type.inputs.data[len(args):]]
        launch = a.LaunchOp.get("k0", stream, [*host.args, *(op.memref for op in allocs)])
        host.add_ops([stream, *allocs, launch, func.ReturnOp()])
        fn = func.FuncOp("main", FunctionType.from_lists(args, []), Region(host))
        attrs = [DictionaryAttr({"onnx.name": StringAttr(n)}) for n in self.names]
        attrs += [DictionaryAttr({"onnx.name": StringAttr(f"out{i}"), "ascend.output": UnitAttr()})
                  for i in range(len(outputs))]
        fn.arg_attrs = ArrayAttr(attrs)
        module = ModuleOp([kernel, fn])
        module.verify()
        return module, kernel

    def run(self, outputs, **kw):
        module, kernel = self.build(outputs, **kw)
        out = run_ascend_module(module, self.feeds)
        return [out[f"out{i}"] for i in range(len(outputs))], kernel

    def reference(self, value, absolute: bool = False):
        """The graph kernels' result for `value` (float64 for fp16 cases); `absolute`: on the
        inputs' absolute values (the magnitude that bounds every partial sum)."""
        env = dict(zip(self.values, (self.feeds[n] for n in self.names)))
        if absolute:
            env = {k: np.abs(v) for k, v in env.items()}
        wide = self.dtype == np.float16
        if wide:
            env = {k: v.astype(np.float64) for k, v in env.items()}
        for op in self.ops:
            kwargs = {k: v for k, v in op.attrs().items() if v is not None}
            env[op.results[0]] = reference_of(op)(*(env[v] for v in op.operands), **kwargs)
        return env[value]


U16, U32 = 2.0 ** -11, 2.0 ** -24  # unit roundoff of f16 and f32


def check(case: Case, outputs, k: int = 1, **kw):
    got, kernel = case.run(outputs, **kw)
    for v, y in zip(outputs, got):
        ref = case.reference(v)
        assert y.shape == ref.shape
        if case.dtype == np.float16:
            u_acc = U16 if kernel.core_type.data == "vector" else U32
            bound = ((len(case.ops) + 1) * U16 + k * u_acc) * case.reference(v, absolute=True)
            err = np.abs(y.astype(np.float64) - ref)
            worst = np.unravel_index(np.argmax(err - bound), err.shape)
            assert np.all(err <= bound), f"fp16 error {err[worst]:.3g} over the rounding bound {bound[worst]:.3g} at {worst}"
        else:
            np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5 * max(1.0, math.sqrt(k)))
    return kernel


def rand(*shape):
    return RNG.standard_normal(shape)


# ---------------------------------------------------------------------------
# img2col: the hand-written program of test/dialects/ascend/load3d.mlir.
# ---------------------------------------------------------------------------


def test_load3d_program_is_a_convolution():
    text = (Path(__file__).resolve().parents[1] / "dialects" / "ascend" / "load3d.mlir").read_text()
    module = parse_module(text, make_context())
    module.verify()
    x = rand(1, 3, 6, 6).astype(np.float32)
    w = rand(16, 3, 3, 3).astype(np.float32)
    y = run_ascend_module(module, {"x": x, "w": w.reshape(16, 27)})["y"]
    ref = reference_of(g.ConvOp)(x, w, pads=(1, 1, 1, 1)).reshape(16, 36)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# matmul / gemm.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("m,k,n", [(16, 16, 16), (37, 50, 23), (64, 300, 96), (1, 512, 1000), (200, 40, 130)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_matmul(m, k, n, dtype):
    c = Case(dtype)
    y = c.op(g.MatMulOp, [c.input("a", rand(m, k)), c.input("b", rand(k, n))])
    check(c, [y], k)


@pytest.mark.parametrize("a_shape,b_shape", [
    ((3, 20, 33), (3, 33, 17)),         # batched
    ((2, 3, 20, 33), (33, 40)),         # batch on the left only: one tall matrix
    ((20, 33), (4, 33, 18)),            # batch on the right only
    ((2, 1, 17, 24), (1, 3, 24, 19)),   # broadcast batch dims
    ((33,), (33, 20)),                  # 1-D on the left
    ((20, 33), (33,)),                  # 1-D on the right
])
def test_batched_matmul(a_shape, b_shape):
    c = Case()
    y = c.op(g.MatMulOp, [c.input("a", rand(*a_shape)), c.input("b", rand(*b_shape))])
    check(c, [y], a_shape[-1])


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gemm_transposes(trans_a, trans_b, dtype):
    m, k, n = 45, 70, 38
    c = Case(dtype)
    a_ = c.input("a", rand(k, m) if trans_a else rand(m, k))
    b_ = c.input("b", rand(n, k) if trans_b else rand(k, n))
    y = c.op(g.GemmOp, [a_, b_], trans_a=trans_a, trans_b=trans_b)
    check(c, [y], k)


@pytest.mark.parametrize("c_shape", [(38,), (1, 38), (45, 1), (45, 38), ()])
def test_gemm_alpha_beta_bias(c_shape):
    c = Case()
    a_, b_ = c.input("a", rand(45, 70)), c.input("b", rand(38, 70))
    bias = c.input("c", rand(*c_shape)) if c_shape else c.constant("c", np.array(0.75))
    y = c.op(g.GemmOp, [a_, b_, bias], alpha=0.5, beta=2.0, trans_b=1)
    kernel = check(c, [y], 70)
    assert kernel.core_type.data == "mix"


# ---------------------------------------------------------------------------
# Convolution.
# ---------------------------------------------------------------------------

CONVS = [
    # x shape, w shape, attrs
    ((1, 3, 6, 6), (16, 3, 3, 3), dict(pads=(1, 1, 1, 1))),
    ((2, 5, 9, 11), (7, 5, 3, 2), dict(pads=(1, 0, 2, 1), strides=(2, 1))),
    ((1, 8, 13, 10), (12, 2, 3, 3), dict(group=4, dilations=(2, 2), pads=(2, 2, 2, 2))),
    ((1, 6, 7, 7), (6, 1, 3, 3), dict(group=6, pads=(1, 1, 1, 1))),            # depthwise
    ((1, 4, 23, 19), (40, 4, 1, 1), {}),                                      # 1x1
    ((1, 3, 29, 31), (20, 3, 7, 7), dict(pads=(3, 3, 3, 3), strides=(2, 2))),  # a first layer
    ((1, 70, 5, 5), (33, 70, 3, 3), dict(pads=(1, 1, 1, 1))),                  # channels in chunks
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONVS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_conv(x_shape, w_shape, attrs, dtype):
    c = Case(dtype)
    y = c.op(g.ConvOp, [c.input("x", rand(*x_shape)), c.input("w", rand(*w_shape))], **attrs)
    check(c, [y], math.prod(w_shape[1:]))


def test_conv_1d_with_bias():
    c = Case()
    y = c.op(g.ConvOp, [c.input("x", rand(2, 6, 40)), c.input("w", rand(10, 6, 5)), c.input("b", rand(10))],
             pads=(2, 2), strides=(2,))
    check(c, [y], 30)


def test_conv_single_buffered():
    c = Case()
    y = c.op(g.ConvOp, [c.input("x", rand(1, 20, 12, 12)), c.input("w", rand(24, 20, 3, 3))], pads=(1, 1, 1, 1))
    check(c, [y], 180, double_buffer=False)


# ---------------------------------------------------------------------------
# Epilogues (cube+vector fusions).
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_conv_bias_relu(dtype):
    c = Case(dtype)
    y = c.op(g.ConvOp, [c.input("x", rand(1, 10, 15, 15)), c.input("w", rand(24, 10, 3, 3)), c.input("b", rand(24))],
             pads=(1, 1, 1, 1), strides=(2, 2))
    z = c.op(g.ReluOp, [y])
    kernel = check(c, [z], 90)
    assert kernel.core_type.data == "mix"


def test_conv_relu_rides_on_fix():
    c = Case()
    y = c.op(g.ConvOp, [c.input("x", rand(1, 10, 15, 15)), c.input("w", rand(24, 10, 3, 3))], pads=(1, 1, 1, 1))
    z = c.op(g.ReluOp, [y])
    kernel = check(c, [z], 90)
    assert kernel.core_type.data == "cube"
    assert any(isinstance(op, a.CopyOp) and op.relu is not None for op in kernel.walk())


def test_conv_residual_sum_relu():
    """ResNet's conv + bias, sum with the shortcut, relu."""
    c = Case()
    y = c.op(g.ConvOp, [c.input("x", rand(2, 16, 9, 9)), c.input("w", rand(32, 16, 1, 1)), c.input("b", rand(32))])
    s = c.op(g.SumOp, [y, c.input("r", rand(2, 32, 9, 9))])
    z = c.op(g.ReluOp, [s])
    check(c, [z], 16)


def test_conv_two_outputs_and_a_view():
    """The conv result and relu(conv) both leave the kernel; the second through a reshape."""
    c = Case()
    y = c.op(g.ConvOp, [c.input("x", rand(1, 8, 10, 10)), c.input("w", rand(18, 8, 3, 3))], pads=(1, 1, 1, 1))
    z = c.op(g.ReluOp, [y])
    shape = c.constant("shape", np.array([1, 3, 6, 10, 10], np.int64))
    c.feeds["shape"] = np.array([1, 3, 6, 10, 10], np.int64)
    v = c.op(g.ReshapeOp, [z, shape])
    check(c, [y, v], 72)


def test_conv_channel_scale_and_batch_norm():
    c = Case()
    y = c.op(g.ConvOp, [c.input("x", rand(1, 6, 11, 11)), c.input("w", rand(20, 6, 3, 3))])
    s = c.op(g.MulOp, [y, c.input("scale", rand(1, 20, 1, 1))])
    params = [c.input(n, RNG.uniform(0.5, 1.5, 20)) for n in ("gamma", "beta", "mean", "var")]
    z = c.op(g.BatchNormOp, [s, *params], epsilon=1e-3)
    check(c, [z], 54)


def test_conv_concat_prologue():
    """SqueezeNet's fire module: the expand convs' outputs, concatenated, feed the next conv."""
    c = Case()
    x = c.op(g.ConcatOp, [c.input("p", rand(1, 16, 8, 8)), c.input("q", rand(1, 32, 8, 8))], axis=1)
    y = c.op(g.ConvOp, [x, c.input("w", rand(12, 48, 3, 3)), c.input("b", rand(12))], pads=(1, 1, 1, 1))
    z = c.op(g.ReluOp, [y])
    check(c, [z], 432)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_matmul_bias_gelu(approximate):
    c = Case()
    y = c.op(g.MatMulOp, [c.input("x", rand(1, 16, 64)), c.input("w", rand(64, 256))])
    b = c.op(g.AddOp, [c.input("b", rand(256)), y])
    z = c.op(g.GeluOp, [b], approximate=approximate)
    check(c, [z], 64)


def test_matmul_erf_gelu_chain():
    """The TorchScript exporter's GELU: x * 0.5 * (1 + erf(x / sqrt 2)), with scalar constants."""
    c = Case()
    y = c.op(g.MatMulOp, [c.input("x", rand(1, 16, 64)), c.input("w", rand(64, 256))])
    x = c.op(g.AddOp, [c.input("b", rand(256)), y])
    t = c.op(g.DivOp, [x, c.constant("sqrt2", np.array(1.4142135381698608))])
    t = c.op(g.ErfOp, [t])
    t = c.op(g.AddOp, [t, c.constant("one", np.array(1.0))])
    t = c.op(g.MulOp, [x, t])
    z = c.op(g.MulOp, [t, c.constant("half", np.array(0.5))])
    check(c, [z], 64)


@pytest.mark.parametrize("name,extra", [
    ("sigmoid", {}), ("tanh", {}), ("leaky_relu", {"alpha": 0.1}), ("hard_sigmoid", {}), ("hard_swish", {}),
])
def test_matmul_activation(name, extra):
    c = Case()
    y = c.op(g.MatMulOp, [c.input("x", rand(30, 40)), c.input("w", rand(40, 50))])
    z = c.op(g.OPS[f"graph.{name}"], [y], **extra)
    check(c, [z], 40)


def test_gemm_clip_and_sub_from_scalar():
    c = Case()
    y = c.op(g.GemmOp, [c.input("x", rand(20, 40)), c.input("w", rand(50, 40)), c.input("b", rand(50))], trans_b=1)
    y = c.op(g.ClipOp, [y, c.constant("lo", np.array(-1.0)), c.constant("hi", np.array(2.0))])
    z = c.op(g.SubOp, [c.constant("s", np.array(3.0)), y])
    check(c, [z], 40)


def test_declines_what_it_does_not_build():
    c = Case()
    y = c.op(g.MatMulOp, [c.input("x", rand(30, 40)), c.input("w", rand(40, 50))])
    z = c.op(g.SoftmaxOp, [y], axis=-1)
    assert cube.try_build(c.request([z])) is None
    c = Case()
    z = c.op(g.ReluOp, [c.input("x", rand(3, 4))])
    assert cube.try_build(c.request([z], kind="vector")) is None


# ---------------------------------------------------------------------------
# Gated matmuls: two products of one lhs combined by the epilogue (SwiGLU's silu(x W_gate) *
# (x W_up)) in one kernel; the partner product is staged in the kernel's own scratch.
# ---------------------------------------------------------------------------


def _gated(c: Case, x, wg, wu, act: str = "silu"):
    gate = c.op(g.MatMulOp, [x, wg])
    up = c.op(g.MatMulOp, [x, wu])
    if act == "silu":
        gate = c.op(g.MulOp, [gate, c.op(g.SigmoidOp, [gate])])
    elif act == "gelu":
        gate = c.op(g.GeluOp, [gate])
    return c.op(g.MulOp, [gate, up])


@pytest.mark.parametrize("lhs, k, n, act, dtype", [
    ((1, 1), 512, 96, "silu", np.float16),      # a decode step's row (GEMV), tiles of N
    ((2, 37), 50, 23, "silu", np.float32),      # batches folded into rows, edge tiles in M, N, K
    ((1, 64), 300, 130, "gelu", np.float16),    # GeGLU, several K chunks
    ((40,), 64, 48, "none", np.float32),        # a plain product of the two
])
def test_gated_matmul(lhs, k, n, act, dtype):
    c = Case(dtype)
    x = c.input("x", rand(*lhs, k))
    y = _gated(c, x, c.input("wg", rand(k, n) / math.sqrt(k)), c.input("wu", rand(k, n) / math.sqrt(k)), act)
    kernel = check(c, [y], k)
    mmads = [op for op in kernel.walk() if isinstance(op, a.MmadOp)]
    assert kernel.core_type.data == "mix" and mmads
    assert any(arg.name_hint == "partner" for arg in kernel.body.block.args)


def test_gated_matmul_transposed_weights():
    """Both right operands read transposed ([N, K] weights, as torch stores a Linear's)."""
    c = Case(np.float16)
    x = c.input("x", rand(1, 24, 80))
    wg = c.op(g.TransposeOp, [c.input("wg", rand(56, 80) / 9)], perm=(1, 0))
    wu = c.op(g.TransposeOp, [c.input("wu", rand(56, 80) / 9)], perm=(1, 0))
    check(c, [_gated(c, x, wg, wu)], 80)


def test_gated_matmul_declines():
    """Not a gated pair: two matmuls of different lhs, or a partner product that is also an
    output (the kernel would have to write it too). try_build declines; the lowering then
    splits the fusion."""
    c = Case()
    gate = c.op(g.MatMulOp, [c.input("x", rand(8, 32)), c.input("wg", rand(32, 16))])
    up = c.op(g.MatMulOp, [c.input("x2", rand(8, 32)), c.input("wu", rand(32, 16))])
    assert cube.try_build(c.request([c.op(g.MulOp, [gate, up])])) is None
    c = Case()
    x = c.input("x", rand(8, 32))
    gate = c.op(g.MatMulOp, [x, c.input("wg", rand(32, 16))])
    up = c.op(g.MatMulOp, [x, c.input("wu", rand(32, 16))])
    assert cube.try_build(c.request([c.op(g.MulOp, [gate, up]), up])) is None


# ---------------------------------------------------------------------------
# Head split: a projection whose result is reshaped to [.., S, H, D] and transposed to
# [.., H, S, D] (what a decoder's attention and rotation read) is written head by head by
# the FIX copies; no data kernel moves it again.
# ---------------------------------------------------------------------------


def _head_split(c: Case, x, w, seq: int, heads: int, d: int, batch=None, name: str = "shape"):
    y = c.op(g.MatMulOp, [x, w])
    dims = [seq, heads, d] if batch is None else [batch, seq, heads, d]
    shape = np.array(dims, np.int64)
    c.feeds[name] = shape
    y = c.op(g.ReshapeOp, [y, c.constant(name, shape)])
    perm = (1, 0, 2) if batch is None else (0, 2, 1, 3)
    return c.op(g.TransposeOp, [y], perm=perm)


@pytest.mark.parametrize("batch, seq, k, heads, d, dtype", [
    (1, 32, 64, 4, 16, np.float16),    # the tiny LLaMA's q projection: a tile of whole heads
    (2, 37, 50, 3, 32, np.float32),    # two batches, edge tiles in S and K
    (1, 20, 64, 2, 512, np.float32),   # D wider than any tile: tiles within one head
    (3, 17, 40, 5, 48, np.float16),    # N = 240: whole heads per tile and an edge tile of heads
])
def test_matmul_head_split(batch, seq, k, heads, d, dtype):
    c = Case(dtype)
    y = _head_split(c, c.input("x", rand(batch, seq, k)), c.input("w", rand(k, heads * d)), seq, heads, d, batch)
    kernel = check(c, [y], k)  # one kernel (without the split, try_build declines the transpose)
    fix = [op for op in kernel.walk() if isinstance(op, a.CopyOp) and op.operands[0].type.memory_space.data == "l0c"]
    assert fix and all(op.operands[1].type.get_shape()[-1] <= d for op in fix)  # a head's columns at most


def test_gemm_head_split():
    """A 2-D projection (gemm form) reshaped to [S, H, D]: the same writes."""
    c = Case()
    y = _head_split(c, c.input("x", rand(40, 64)), c.input("w", rand(64, 64)), 40, 4, 16)
    check(c, [y], 64)


@pytest.mark.parametrize("batch, seq, k, heads, d, dtype", [
    (1, 32, 64, (4, 2, 2), 16, np.float16),   # the tiny LLaMA's q / k / v (GQA 4:2)
    (2, 37, 50, (6, 2, 2), 32, np.float32),   # two batches, edge tiles in S and K
    (1, 1, 512, (8, 2, 2), 64, np.float16),   # a decode step's row
])
def test_projections_one_kernel(batch, seq, k, heads, d, dtype):
    """Several products of one lhs, each split into its heads (LLaMA's q / k / v): one kernel,
    each part's tiles written to its own output."""
    c = Case(dtype)
    x = c.input("x", rand(batch, seq, k))
    outs = [_head_split(c, x, c.input(f"w{i}", rand(k, h * d)), seq, h, d, batch, f"shape{i}")
            for i, h in enumerate(heads)]
    check(c, outs, k)


def test_projections_plain_outputs():
    """Products of one lhs returned as they are (no head split); a Relu on one is its FIX
    copy's (no vector work)."""
    c = Case(np.float16)
    x = c.input("x", rand(40, 72))
    y1 = c.op(g.MatMulOp, [x, c.input("wq", rand(72, 48))])
    y2 = c.op(g.ReluOp, [c.op(g.MatMulOp, [x, c.input("wk", rand(72, 16))])])
    check(c, [y1, y2], 72)


def test_projections_decline():
    """Not one kernel: products of different lhs, or a part with epilogue work."""
    c = Case()
    y1 = c.op(g.MatMulOp, [c.input("x", rand(8, 32)), c.input("w1", rand(32, 16))])
    y2 = c.op(g.MatMulOp, [c.input("x2", rand(8, 32)), c.input("w2", rand(32, 16))])
    assert cube.try_build(c.request([y1, y2])) is None
    c = Case()
    x = c.input("x", rand(8, 32))
    y1 = c.op(g.MatMulOp, [x, c.input("w1", rand(32, 16))])
    y2 = c.op(g.SigmoidOp, [c.op(g.MatMulOp, [x, c.input("w2", rand(32, 16))])])
    assert cube.try_build(c.request([y1, y2])) is None


# ---------------------------------------------------------------------------
# Norm prologues (cube/prologue.py): a decoder's Add + RMSNorm run by every block of the
# matmul kernel that reads it, each block's normalised rows in its own scratch copy.
# ---------------------------------------------------------------------------


def _add_norm(c: Case, rows, k: int, norm: str = "rms"):
    x, r = c.input("x", rand(*rows, k)), c.input("r", rand(*rows, k))
    h = c.op(g.AddOp, [x, r])
    scale = c.input("scale", 1 + rand(k) / 4)
    if norm == "rms":
        return h, c.op(g.RmsNormOp, [h, scale], epsilon=1e-6)
    return h, c.op(g.LayerNormOp, [h, scale, c.input("bias", rand(k))], epsilon=1e-5)


@pytest.mark.parametrize("rows, k, n, dtype, norm", [
    ((1, 1), 512, 96, np.float16, "rms"),      # a decode step's row, on several blocks
    ((2, 3), 200, 130, np.float32, "rms"),     # two sequences' rows, edge tiles in N and K
    ((1, 4), 64, 48, np.float32, "layer"),     # a LayerNorm (GPT-2's pre-norm) is a prologue too
])
def test_norm_prologue(rows, k, n, dtype, norm):
    c = Case(dtype)
    h, normed = _add_norm(c, rows, k, norm)
    y = c.op(g.MatMulOp, [normed, c.input("w", rand(k, n) / math.sqrt(k))])
    kernel = check(c, [h, y], k)
    assert kernel.core_type.data == "mix" and kernel.block_count > 1
    scratch = [arg for arg in kernel.body.block.args if arg.name_hint == "normed"]
    assert len(scratch) == 1 and scratch[0].type.get_shape() == (kernel.block_count * math.prod(rows) * k,)


def test_norm_prologue_of_a_gated_matmul():
    """SwiGLU's two products after the post-attention norm: the prologue, then both products
    per tile and the epilogue, whose ub buffers reuse the prologue's."""
    c = Case(np.float16)
    h, normed = _add_norm(c, (1, 2), 256)
    y = _gated(c, normed, c.input("wg", rand(256, 80) / 16), c.input("wu", rand(256, 80) / 16))
    kernel = check(c, [h, y], 256)
    names = {arg.name_hint for arg in kernel.body.block.args}
    assert {"normed", "partner"} <= names


def test_norm_prologue_of_projections():
    """LLaMA's q / k / v after the input norm: one kernel."""
    c = Case(np.float16)
    h, normed = _add_norm(c, (1, 1), 128)
    outs = [_head_split(c, normed, c.input(f"w{i}", rand(128, hd * 32) / 11), 1, hd, 32, 1, f"shape{i}")
            for i, hd in enumerate((4, 2, 2))]
    check(c, [h, *outs], 128)


def test_norm_prologue_declines():
    """Not a prologue: the normalised rows also an output, or read as the rhs. try_build
    declines; the lowering then splits the fusion."""
    c = Case()
    h, normed = _add_norm(c, (1, 2), 64)
    y = c.op(g.MatMulOp, [normed, c.input("w", rand(64, 32))])
    assert cube.try_build(c.request([h, normed, y])) is None
    c = Case()
    h, normed = _add_norm(c, (16,), 64)
    y = c.op(g.MatMulOp, [c.input("a", rand(2, 16)), normed])
    assert cube.try_build(c.request([y])) is None


# ---------------------------------------------------------------------------
# Norm epilogues (cube/norm_epilogue.py): a post-LN block's residual Add + LayerNorm run by each
# block's vector unit on the whole rows of the product its work items computed.
# ---------------------------------------------------------------------------


def _out_projection(c: Case, rows, k: int, n: int, norm: str = "layer"):
    y = c.op(g.MatMulOp, [c.input("a", rand(*rows, k)), c.input("w", rand(k, n) / math.sqrt(k))])
    h = c.op(g.AddOp, [c.input("x", rand(*rows, n)), y])
    scale = c.input("scale", 1 + rand(n) / 4)
    if norm == "rms":
        return c.op(g.RmsNormOp, [h, scale], epsilon=1e-6)
    return c.op(g.LayerNormOp, [h, scale, c.input("bias", rand(n))], epsilon=1e-5)


@pytest.mark.parametrize("rows, k, n, dtype, norm, group", [
    ((1, 80), 256, 256, np.float32, "layer", True),   # items of two N tiles; a tail item of 16 rows
    ((3, 16), 64, 64, np.float32, "layer", False),    # one N tile holds whole rows; three sequences
    ((2, 40), 96, 768, np.float32, "layer", True),    # the seed's hidden, an edge item of 8 rows
    ((1, 48), 128, 256, np.float32, "rms", True),     # an RMSNorm
])
def test_norm_epilogue(rows, k, n, dtype, norm, group):
    c = Case(dtype)
    z = _out_projection(c, rows, k, n, norm)
    kernel = check(c, [z], k)
    assert kernel.core_type.data == "mix"
    scratch = [arg for arg in kernel.body.block.args if arg.name_hint == "product"]
    assert len(scratch) == 1 and scratch[0].type.get_shape() == (*rows, n)
    l0c = [op for op in kernel.walk() if isinstance(op, a.AllocOp) and op.space == "l0c"]
    assert (l0c[0].results[0].type.get_shape()[1] < n) == group
    # the staged rows are read once the FIX pipe is done with them, and no pipe races another
    module, _ = c.build([z])
    simulator.profile(module, c.feeds, timing=True, strict=True)


def test_norm_epilogue_computes_what_the_two_kernels_do():
    """The seed's TransformerBlock in fp16 at a small size: its out- and down-projections take
    the residual Add + LayerNorms as norm epilogues, a kernel fewer each, and the outputs are
    the split program's: the same row code on the same fp16 product, whose f32 sums only
    change order with the tiling (one fp16 rounding step, at most)."""
    import geir

    model = geir.models.transformer_block(2, 64, 256, 1024, 4, dtype="f16")
    on, off = geir.compile(model), geir.compile(model, disable_fusions=("norm-epilogue",))
    kernels = [[k for k in cm.module.ops if isinstance(k, a.KernelOp)] for cm in (on, off)]
    fused = sum("product" in {x.name_hint for x in k.body.block.args} for k in kernels[0])
    assert fused == 2 and len(kernels[0]) == len(kernels[1]) - fused  # both Add + LayerNorms at 128 rows
    x = {name: RNG.standard_normal(shape).astype(dtype) for name, shape, dtype in on.input_specs()}
    for name, y in on.run(x).items():
        np.testing.assert_allclose(y, off.run(x)[name], rtol=2.0 ** -9, atol=2.0 ** -8)


def test_norm_epilogue_declines():
    """Not a norm epilogue: the product also an output, or a norm that does not follow the
    product's rows. try_build declines; the lowering then splits the fusion."""
    c = Case()
    z = _out_projection(c, (1, 32), 64, 64)
    assert cube.try_build(c.request([c.ops[0].results[0], z])) is None
    c = Case()
    y = c.op(g.MatMulOp, [c.input("a", rand(32, 64)), c.input("w", rand(64, 64))])
    t = c.op(g.TransposeOp, [y], perm=(1, 0))
    z = c.op(g.LayerNormOp, [t, c.input("scale", rand(32)), c.input("bias", rand(32))], epsilon=1e-5)
    assert cube.try_build(c.request([z])) is None


@pytest.mark.parametrize("perm, d", [((0, 2, 3, 1), 16), ((0, 2, 1, 3), 8)])
def test_head_split_declines_other_transposes(perm, d):
    """Not a head split (another permutation) or heads narrower than a fractal (16 columns):
    the transpose stays a data kernel of its own."""
    c = Case()
    y = c.op(g.MatMulOp, [c.input("x", rand(1, 32, 64)), c.input("w", rand(64, 4 * d))])
    shape = np.array([1, 32, 4, d], np.int64)
    c.feeds["shape"] = shape
    y = c.op(g.ReshapeOp, [y, c.constant("shape", shape)])
    assert cube.try_build(c.request([c.op(g.TransposeOp, [y], perm=perm)])) is None


# ---------------------------------------------------------------------------
# Long K: several l1 chunks (a loop over the ping-pong pair) of several l0 steps.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("double_buffer", [True, False])
def test_matmul_long_k(double_buffer):
    c = Case()
    y = c.op(g.MatMulOp, [c.input("a", rand(70, 5000)), c.input("b", rand(5000, 90))])
    kernel = check(c, [y], 5000, double_buffer=double_buffer)
    l1 = [op for op in kernel.walk() if isinstance(op, a.AllocOp) and op.space == "l1"]
    assert len(l1) == (4 if double_buffer else 2)


def test_conv_many_channels():
    c = Case()
    y = c.op(g.ConvOp, [c.input("x", rand(1, 1000, 6, 6)), c.input("w", rand(40, 1000, 3, 3))], pads=(1, 1, 1, 1))
    check(c, [y], 9000)


def test_batched_matmul_epilogue():
    """Sides over the batch: a bias row, a per-batch residual, a per-(batch, row) scale."""
    c = Case()
    y = c.op(g.MatMulOp, [c.input("a", rand(2, 3, 20, 33)), c.input("b", rand(1, 3, 33, 19))])
    y = c.op(g.AddOp, [y, c.input("bias", rand(19))])
    y = c.op(g.AddOp, [y, c.input("res", rand(2, 3, 20, 19))])
    y = c.op(g.MulOp, [y, c.input("scale", rand(2, 3, 20, 1))])
    check(c, [c.op(g.TanhOp, [y])], 33)


def test_matmul_1d_with_activation():
    c = Case()
    y = c.op(g.MatMulOp, [c.input("a", rand(70)), c.input("b", rand(70, 40))])
    check(c, [c.op(g.SigmoidOp, [y])], 70)


# ---------------------------------------------------------------------------
# The dialect additions on their own: load3d's semantics and errors, copy {pad}.
# ---------------------------------------------------------------------------

LOAD3D = (Path(__file__).resolve().parents[1] / "dialects" / "ascend" / "load3d.mlir").read_text()


def test_load3d_reading_outside_its_box_is_an_error():
    """A box of 5 rows starting at row 1 misses row 0, which the first output row needs."""
    text = LOAD3D.replace("[1, 3, 6, 6] [1, 1, 1, 1] : !x to memref<3x6x6xf32, strided<[36, 6, 1]>",
                          "[1, 3, 5, 6] [1, 1, 1, 1] : !x to memref<3x5x6xf32, strided<[36, 6, 1], offset: 6>")
    text = text.replace("%x[0, 0, 0, 0]", "%x[0, 0, 1, 0]")
    text = text.replace("ascend.copy %img, %fm {pad} : memref<3x6x6xf32, strided<[36, 6, 1]>",
                        "ascend.copy %img, %fm {pad} : memref<3x5x6xf32, strided<[36, 6, 1], offset: 6>")
    text = text.replace("!fm = memref<3x6x8xf32", "!fm = memref<3x5x8xf32")
    text = text.replace("ascend.load3d %fm[%c0, %c0]", "ascend.load3d %fm[%c1, %c0]")
    text = text.replace("%c0 = arith.constant 0 : index", "%c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index")
    module = parse_module(text, make_context())
    module.verify()
    from geir.errors import InterpreterError

    with pytest.raises(InterpreterError, match="reads image row 0, column .*outside the l1 box of rows 1..5"):
        run_ascend_module(module, {"x": rand(1, 3, 6, 6).astype(np.float32), "w": rand(16, 27).astype(np.float32)})


def test_load3d_tile_gathers_the_windows():
    """Row k = (c * 3 + kh) * 3 + kw, column j = (oh, ow) = divmod(j, 6), pad 1; rows past
    the 27 K rows and pixels past the 36 of the window are zero."""
    from geir.runtime.ascend_semantics import load3d_tile

    module = parse_module(LOAD3D, make_context())
    op = next(o for o in module.walk() if isinstance(o, a.Load3dOp))
    shape = tuple(op.src.type.get_shape())
    fm = np.arange(1, 1 + np.prod(shape), dtype=np.float32).reshape(shape)
    tile = load3d_tile(op, fm, 0, 0, 0, 0, 0, 32, 48)
    assert not tile[27:].any() and not tile[:, 36:].any()
    assert tile[10, 7] == fm[1, 0, 1]  # c 1, kh 0, kw 1 at output (1, 1): image (0, 1)
    assert tile[0, 0] == 0  # kh 0, kw 0 at output (0, 0) reads the top-left padding
    assert (load3d_tile(op, fm, 0, 0, 0, 0, 0, 32, 48) == tile).all()  # the cached index


def test_copy_pad_fills_and_crops():
    from geir.dialects.formats import pad_or_crop

    x = np.arange(6.0).reshape(2, 3)
    filled = pad_or_crop(x, (4, 8))
    assert filled.shape == (4, 8) and (filled[:2, :3] == x).all() and filled.sum() == x.sum()
    assert (pad_or_crop(filled, (2, 3)) == x).all()


# ---------------------------------------------------------------------------
# Depthwise convolution: on the vector unit when the cost model says so.
# ---------------------------------------------------------------------------

DEPTHWISE = [
    ((1, 6, 7, 7), (3, 3), dict(pads=(1, 1, 1, 1))),
    ((2, 20, 15, 13), (3, 3), dict(pads=(1, 1, 1, 1), strides=(2, 2))),
    ((1, 24, 16, 16), (5, 5), dict(pads=(2, 1, 2, 3), dilations=(1, 2))),
    ((1, 40, 28, 28), (3, 3), dict(pads=(1, 1, 1, 1))),
    ((1, 9, 10, 30), (1, 7), dict(pads=(0, 3, 0, 3), strides=(1, 3))),
]


@pytest.fixture
def vector_depthwise(monkeypatch):
    """Small depthwise convolutions price cheaper on the cube (more cores); take the vector
    kernel anyway."""
    real = cube.conv_tiling
    monkeypatch.setattr(cube, "conv_tiling", lambda req, plan, pricer: None if cube.is_depthwise(plan)
                        else real(req, plan, pricer))


def test_depthwise_goes_to_the_vector_unit_when_cheaper():
    c = Case()
    y = c.op(g.ConvOp, [c.input("x", rand(1, 40, 28, 28)), c.input("w", rand(40, 1, 3, 3))], group=40,
             pads=(1, 1, 1, 1))
    assert check(c, [y], 9).attributes["template"].data == "depthwise"
    c = Case()
    y = c.op(g.ConvOp, [c.input("x", rand(1, 6, 7, 7)), c.input("w", rand(6, 1, 3, 3))], group=6, pads=(1, 1, 1, 1))
    assert check(c, [y], 9).attributes["template"].data == "conv"


@pytest.mark.parametrize("x_shape,k,attrs", DEPTHWISE)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_depthwise(x_shape, k, attrs, dtype, vector_depthwise):
    c = Case(dtype)
    ch = x_shape[1]
    y = c.op(g.ConvOp, [c.input("x", rand(*x_shape)), c.input("w", rand(ch, 1, *k))], group=ch, **attrs)
    kernel = check(c, [y], k[0] * k[1])
    assert kernel.attributes["template"].data == "depthwise"
    assert kernel.core_type.data == "vector"


def test_depthwise_bias_relu6(vector_depthwise):
    c = Case()
    y = c.op(g.ConvOp, [c.input("x", rand(1, 20, 14, 14)), c.input("w", rand(20, 1, 3, 3)), c.input("b", rand(20))],
             group=20, pads=(1, 1, 1, 1))
    z = c.op(g.ClipOp, [y, c.constant("lo", np.array(0.0)), c.constant("hi", np.array(6.0))])
    kernel = check(c, [z], 9)
    assert kernel.attributes["template"].data == "depthwise"


def test_depthwise_relu(vector_depthwise):
    """A relu right after the product rides on the cube's FIX copy (plan.fold_relu_into_fix);
    the vector kernel has no FIX copy and applies it itself."""
    c = Case()
    y = c.op(g.ConvOp, [c.input("x", rand(1, 20, 14, 14)), c.input("w", rand(20, 1, 3, 3))], group=20,
             pads=(1, 1, 1, 1))
    z = c.op(g.ReluOp, [y])
    kernel = check(c, [z], 9)
    assert kernel.attributes["template"].data == "depthwise"
    assert any(isinstance(op, a.VreluOp) for op in kernel.walk())


# ---------------------------------------------------------------------------
# Storage formats (graph-layout): NC1HWC0 feature maps, FRACTAL_Z / FRACTAL_NZ weights.
# ---------------------------------------------------------------------------

FORMATTED = {
    # NCHW in (40 channels: a partial C0 block), two images, stride 2, bias + relu, then an
    # NC1HWC0 -> NC1HWC0 conv with a residual add, then NC1HWC0 -> NCHW.
    "conv_chain": """
func.func @main(%x: tensor<2x40x9x9xf32>) -> tensor<2x24x5x5xf32> {
  %w = graph.constant dense<0.0> : tensor<40x40x3x3xf32>
  %b = graph.constant dense<0.0> : tensor<40xf32>
  %y = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x40x9x9xf32>, tensor<40x40x3x3xf32>, tensor<40xf32>) -> tensor<2x40x5x5xf32>
  %r = graph.relu %y : (tensor<2x40x5x5xf32>) -> tensor<2x40x5x5xf32>
  %w2 = graph.constant dense<0.0> : tensor<40x40x3x3xf32>
  %y2 = graph.conv %r, %w2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x40x5x5xf32>, tensor<40x40x3x3xf32>) -> tensor<2x40x5x5xf32>
  %s = graph.add %y2, %r : (tensor<2x40x5x5xf32>, tensor<2x40x5x5xf32>) -> tensor<2x40x5x5xf32>
  %w3 = graph.constant dense<0.0> : tensor<24x40x1x1xf32>
  %y3 = graph.conv %s, %w3 : (tensor<2x40x5x5xf32>, tensor<24x40x1x1xf32>) -> tensor<2x24x5x5xf32>
  func.return %y3 : tensor<2x24x5x5xf32>
}""",
    "gemm_nz": """
func.func @main(%x: tensor<20x72xf32>) -> tensor<20x40xf32> {
  %w = graph.constant dense<0.0> : tensor<40x72xf32>
  %b = graph.constant dense<0.0> : tensor<40xf32>
  %y = graph.gemm %x, %w, %b {trans_b = 1 : i64} : (tensor<20x72xf32>, tensor<40x72xf32>, tensor<40xf32>) -> tensor<20x40xf32>
  func.return %y : tensor<20x40xf32>
}""",
}


def _random_weights(module: ModuleOp, seed: int = 0) -> ModuleOp:
    """Every graph.constant of `module` replaced by random values of its type."""
    rng = np.random.default_rng(seed)
    for op in list(module.walk()):
        if isinstance(op, g.ConstantOp):
            shape = tuple(op.output.type.get_shape())
            arr = (rng.standard_normal(shape) / math.sqrt(max(1, math.prod(shape[1:])))).astype(np.float32)
            new = g.ConstantOp.from_array(arr)
            op.parent_block().insert_op_before(new, op)
            op.output.replace_all_uses_with(new.output)
            op.detach()
            op.erase()
    return module


@pytest.mark.parametrize("case", sorted(FORMATTED))
def test_formatted_cube_kernels_match_the_plain_program(case):
    """graph-layout stores the tensors blocked; the lowered kernels read and write those
    formats (no fallback, no trans_data kernel between the convolutions) and compute what
    the plain program computes."""
    from geir.dialects import make_context
    from geir.lowering.graph_to_ascend import fallback_ops
    from geir.driver.registry import build_passes
    from geir.runtime.interpreter import random_inputs, run_module

    plain = _random_weights(parse_module(FORMATTED[case], make_context()))
    feeds = random_inputs(plain, seed=1)
    want = run_module(plain, feeds)
    module = plain.clone()
    ctx = make_context()
    for p in build_passes("graph-fuse,graph-layout{min-channels=1}"):
        p.apply(ctx, module)
    formats = {str(v.type.encoding) for op in module.walk() for v in op.results
               if hasattr(v.type, "encoding") and "graph.format" in str(v.type.encoding)}
    assert formats, "graph-layout chose no blocked format: the test tests nothing"
    for p in build_passes("convert-graph-to-ascend"):
        p.apply(ctx, module)
    assert fallback_ops(module) == []
    kernels = [k.sym_name.data for k in module.ops if isinstance(k, a.KernelOp)]
    assert not [k for k in kernels if "trans_data" in k], kernels
    layouts = {op.layout.data for op in module.walk() if isinstance(op, a.CopyOp) and op.layout is not None}
    assert layouts & {"nz2nd", "nc1hwc0", "nd2nc1hwc0"}, layouts
    got = run_ascend_module(module, feeds)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------
# Tiling: K chunks pipelined behind the cube.
# ---------------------------------------------------------------------------


def _simulated_us(case: Case, outputs) -> float:
    from geir.runtime.simulator import profile

    module, _ = case.build(outputs)
    _, sim = profile(module, case.feeds)
    return sim.latency_us


def test_a_lowering_run_prices_each_conv_shape_once(monkeypatch):
    """Three convs of one shape and one of another: the lowering prices two tilings, and the
    same-shape kernels get the same tiles (the same on-chip buffers)."""
    import geir
    from geir.ir.text import parse_module

    priced = []
    original = cube_tiling._conv_tiling
    monkeypatch.setattr(cube_tiling, "_conv_tiling", lambda *a: priced.append(a[1].geometry) or original(*a))
    conv = "graph.conv %{x}, %w{w} {{pads = array<i64: 1, 1, 1, 1>}} : (tensor<1x32x28x28xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x28x28xf32>"
    text = f"""func.func @main(%x: tensor<1x32x28x28xf32>, %w0: tensor<32x32x3x3xf32>, %w1: tensor<32x32x3x3xf32>,
                      %w2: tensor<32x32x3x3xf32>, %w3: tensor<64x32x1x1xf32>) -> tensor<1x64x28x28xf32> {{
  %a = {conv.format(x="x", w=0)}
  %b = {conv.format(x="a", w=1)}
  %c = {conv.format(x="b", w=2)}
  %d = graph.conv %c, %w3 : (tensor<1x32x28x28xf32>, tensor<64x32x1x1xf32>) -> tensor<1x64x28x28xf32>
  func.return %d : tensor<1x64x28x28xf32>
}}"""
    cm = geir.compile(parse_module(text, make_context()), opt_level=0, precision_mode="must_keep_origin_dtype")
    assert len(priced) == 2 and len(set(priced)) == 2
    kernels = [op for op in cm.module.walk() if isinstance(op, a.KernelOp)]
    assert len(kernels) == 4
    buffers = [[str(op.memref.type) for op in k.walk() if isinstance(op, a.AllocOp)] for k in kernels]
    assert buffers[0] == buffers[1] == buffers[2] != buffers[3]


def test_conv_chunks_pipeline_their_loads(monkeypatch):
    """A 3x3 conv whose whole K fits l1 in one chunk: one chunk per tile overlaps nothing
    (each tile starts on slot 0), so the pricer splits K and the chunks' loads run behind
    the cube. The simulator agrees it is faster than the one-chunk tiling, and the values
    are the same."""
    c = Case()
    y = c.op(g.ConvOp, [c.input("x", rand(1, 64, 28, 28)), c.input("w", rand(64, 64, 3, 3))], pads=(1, 1, 1, 1))
    kernel = check(c, [y], 576)
    l1w = next(op for op in kernel.walk() if isinstance(op, a.AllocOp) and op.memref.name_hint == "l1w0")
    kl1 = l1w.memref.type.get_shape()[1]
    assert kl1 < 576  # K in more than one chunk
    pipelined = _simulated_us(c, [y])
    monkeypatch.setattr(cube_tiling, "per_chunk", lambda total, most, slots, unit=1: [most])
    one_chunk = _simulated_us(c, [y])
    assert pipelined < one_chunk


def test_a_last_partial_round_of_tiles_moves_at_a_larger_share(monkeypatch):
    """A decode step's product [1, 2048] x [2048, 6400] is bound by its weight bytes, in more
    tiles than the cube cores: the blocks that finish first leave their share of HBM to those
    still loading (the simulator times each block at the mean number of movers beside it;
    the tiling prices a last partial round at its own blocks' share, CostModel.wave_shares).
    So the kernel is faster than at every block's static share, and the tiling's estimate is
    the simulated time, within a tenth."""
    from geir.runtime import simulator

    chosen = []
    original = cube_tiling.matmul_tiling
    monkeypatch.setattr(cube, "matmul_tiling", lambda *a: chosen.append(original(*a)) or chosen[-1])
    # one tile per work item (else it takes 20 items of 5 tiles sharing the lhs panel, one round)
    monkeypatch.setattr(cube_tiling, "GROUP_MAX", 1)
    c = Case(np.float16)
    y = c.op(g.MatMulOp, [c.input("x", rand(1, 2048)), c.input("w", rand(2048, 6400) / 32)])
    module, _ = c.build([y])
    (tiling,) = chosen
    assert tiling.tiles % tiling.blocks, "the case needs a last partial round"
    _, sim = simulator.profile(module, c.feeds, timing=True)
    (k,) = sim.kernels
    monkeypatch.setattr(simulator, "mean_concurrency", lambda spans: {})  # every block at the static share
    _, static = simulator.profile(module, c.feeds, timing=True)
    assert k.standalone_exec_us < 0.9 * static.kernels[0].standalone_exec_us
    assert k.standalone_exec_us == pytest.approx(tiling.estimate_us, rel=0.1)


@pytest.mark.parametrize("m,epilogue", [(512, False), (500, True)])
def test_matmul_work_items_share_an_lhs_panel(monkeypatch, m, epilogue):
    """Tiles along N that a block computes in turn share the lhs panel held in l1 and two l0c
    slots (tiling._matmul_groups): the product is right to the fp16 rounding bound (an edge
    row tile too, a bias + gelu epilogue too), the simulator finds no race in it, and the
    tiling's estimate is the simulated time within a fifth."""
    from geir.runtime import simulator

    chosen = []
    original = cube_tiling.matmul_tiling
    monkeypatch.setattr(cube, "matmul_tiling", lambda *a: chosen.append(original(*a)) or chosen[-1])
    c = Case(np.float16)
    y = c.op(g.MatMulOp, [c.input("x", rand(m, 768)), c.input("w", rand(768, 1536) / 16)])
    if epilogue:
        y = c.op(g.GeluOp, [c.op(g.AddOp, [c.input("b", rand(1536)), y])], approximate="tanh")
    kernel = check(c, [y], 768)
    (tiling,) = chosen
    assert tiling.group > 1
    assert sum(1 for op in kernel.walk() if isinstance(op, a.AllocOp) and op.space == "l0c") == 2
    module, _ = c.build([y])
    _, sim = simulator.profile(module, c.feeds, timing=True, strict=True)
    (k,) = sim.kernels
    assert k.standalone_exec_us == pytest.approx(tiling.estimate_us, rel=0.2)


def test_a_shape_range_kernel_takes_the_tiling_no_size_regrets_most():
    """Priced at the range's top, bottom and middle (Extent.sizes), the tiling chosen is the
    one whose worst ratio to each size's cheapest is least - not the top's cheapest, which
    leaves most cores idle at the bottom."""
    def tiling(name: str, top: float) -> cube_tiling.Tiling:
        return cube_tiling.Tiling(mt=16, nt=16, kt=16, kl1=16, blocks=1, tiles=1, estimate_us=top, er=len(name))

    chooser = cube_tiling._Cheapest()
    big = tiling("big", 10.0)       # cheapest at the top, 3x the cheapest at the bottom
    small = tiling("small!", 11.0)  # 10% over at the top, the cheapest below
    chooser.offer(big, 1, [10.0, 6.0, 8.0])
    chooser.offer(small, 1, [11.0, 2.0, 4.0])
    assert chooser.best is big and chooser.choice is small
    plain = cube_tiling._Cheapest()  # a static kernel: the cheapest, as always
    plain.offer(big, 1)
    plain.offer(small, 1)
    assert plain.choice is big
    from geir.lowering.templates.common import Extent

    assert Extent(count=32, inner=1, lo=1).sizes() == [32, 1, 6]
    assert Extent(count=8, inner=4, lo=8).sizes() == [8]


def test_a_range_s_row_groups_pack_their_tails_when_priced():
    """8 groups of 80 rows in tiles of 128: packed (matmul_kernel.py `_packings`), their
    tails share 5 tiles where each group's own would take 8; 8 x 272 rows: 2 whole tiles a
    group and one shared tile of the 16-row tails."""
    assert cube_tiling._row_tiles(8, 80, 128, packs=False) == 8
    assert cube_tiling._row_tiles(8, 80, 128, packs=True) == 5
    assert cube_tiling._row_tiles(8, 272, 128, packs=True) == 17
    assert cube_tiling._row_tiles(8, 256, 128, packs=True) == 16
