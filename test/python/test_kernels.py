"""Check every kernel of geir.runtime.kernels against onnxruntime.

Each case runs one single-node ONNX model through onnxruntime and compares
with the NumPy kernel of the same op (values, shape and dtype).

The last section checks the ascend data kernels of chains of views, transposes
and slices (lowering/templates/data.py) through the ascend interpreter against numpy.
"""

import math
import re

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxruntime as ort  # noqa: E402 - the test extra's numeric reference

from geir.dialects import graph as g  # noqa: E402
from geir.reference import graph as K  # noqa: E402

RNG = np.random.default_rng(0)
I64_MAX = np.iinfo(np.int64).max
I64_MIN = np.iinfo(np.int64).min

# ONNX op names whose kernel name is not the plain snake_case of the op.
KERNEL_NAME = {
    "Not": "logical_not",
    "And": "logical_and",
    "Or": "logical_or",
    "Xor": "logical_xor",
    "PRelu": "prelu",
    "MatMul": "matmul",
    "LRN": "lrn",
    "AveragePool": "avg_pool",
    "GlobalAveragePool": "global_avg_pool",
    "BatchNormalization": "batch_norm",
    "InstanceNormalization": "instance_norm",
    "LayerNormalization": "layer_norm",
    "RMSNormalization": "rms_norm",
}


def snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def i64(*v):
    return np.array(v, dtype=np.int64)


def run_ort(op, inputs, attrs, opset, n_out):
    names, vinfos, feeds = [], [], {}
    for i, a in enumerate(inputs):
        if a is None:
            names.append("")
            continue
        name = f"in{i}"
        names.append(name)
        dt = helper.np_dtype_to_tensor_dtype(a.dtype)
        vinfos.append(helper.make_tensor_value_info(name, dt, a.shape))
        feeds[name] = a
    while names and names[-1] == "":
        names.pop()
    outs = [f"out{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, **attrs)
    graph = helper.make_graph([node], "g", vinfos, [onnx.ValueInfoProto(name=o) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def check(op, inputs, attrs=None, *, kin=None, kw=None, opset=18, n_out=1):
    """Run `op` in onnxruntime and compare with its kernel.

    kin/kw override the kernel's operands/attributes when they differ from the
    ONNX node's (e.g. reduction axes are an ONNX input but a kernel attribute).
    """
    attrs = attrs or {}
    inputs = [None if a is None else np.asarray(a) for a in inputs]
    if kin is not None:
        kin = [None if a is None else np.asarray(a) for a in kin]
    ref = run_ort(op, inputs, attrs, opset, n_out)
    fn = K.reference_of(g.OPS["graph." + KERNEL_NAME.get(op, snake(op))])
    if kw is None:
        kw = {snake(k): v for k, v in attrs.items()}
    got = fn(*(inputs if kin is None else kin), **kw)
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(ref)
    for out, r in zip(got, ref):
        assert isinstance(out, np.ndarray)
        assert out.shape == r.shape, (out.shape, r.shape)
        assert out.dtype == r.dtype, (out.dtype, r.dtype)
        if np.issubdtype(r.dtype, np.floating):
            np.testing.assert_allclose(out, r, rtol=1e-4, atol=1e-5)
        else:
            np.testing.assert_array_equal(out, r)


def case(*args, id=None, **kwargs):
    return pytest.param(args, kwargs, id=id)


# --------------------------------------------------------------------------
# Elementwise unary
# --------------------------------------------------------------------------

X = f32(3, 4, 5, scale=3.0)
POS = np.abs(X) + 0.1
HALVES = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, -0.51, 3.7], dtype=np.float32)
ERF_X = np.concatenate([np.linspace(-6, 6, 2001), np.linspace(-1e-3, 1e-3, 11)]).astype(np.float32)

UNARY = [
    case("Relu", [X]),
    case("Sigmoid", [f32(4, 50, scale=20.0)]),
    case("Tanh", [X]),
    case("Erf", [ERF_X]),
    case("Exp", [X]),
    case("Log", [POS]),
    case("Sqrt", [POS]),
    case("Reciprocal", [POS]),
    case("Neg", [X]),
    case("Neg", [i64(1, -2, 3)]),
    case("Abs", [X]),
    case("Abs", [np.array([-3, 4], np.int32)]),
    case("Not", [X > 0]),
    case("Sign", [np.append(X.ravel(), 0).astype(np.float32)]),
    case("Floor", [X]),
    case("Ceil", [X]),
    case("Round", [HALVES]),
    case("Sin", [X]),
    case("Cos", [X]),
    case("Softplus", [f32(100, scale=30.0)]),
    case("Softsign", [X]),
    case("Identity", [X]),
    case("LeakyRelu", [X]),
    case("LeakyRelu", [X], {"alpha": 0.3}),
    case("Elu", [X]),
    case("Elu", [X], {"alpha": 0.5}),
    case("Selu", [X]),
    case("Selu", [X], {"alpha": 1.5, "gamma": 2.0}),
    case("HardSigmoid", [X]),
    case("HardSigmoid", [X], {"alpha": 0.3, "beta": 0.4}),
    case("HardSwish", [X]),
    case("Gelu", [X], opset=20),
    case("Gelu", [X], {"approximate": "tanh"}, opset=20),
    case("Shrink", [X]),
    case("Shrink", [X], {"bias": 0.3, "lambd": 1.0}),
    case("Celu", [X]),
    case("Celu", [X], {"alpha": 2.0}),
    case("Mish", [f32(100, scale=10.0)]),
    case("ThresholdedRelu", [X]),
    case("ThresholdedRelu", [X], {"alpha": 0.5}),
]


@pytest.mark.parametrize("args,kwargs", UNARY)
def test_unary(args, kwargs):
    check(*args, **kwargs)


def test_erf_accuracy():
    import math

    x = np.linspace(-7, 7, 4001)
    ref = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(K._erf_f64(x), ref, rtol=1e-13, atol=1e-15)


# --------------------------------------------------------------------------
# Elementwise binary, variadic, selection, cast
# --------------------------------------------------------------------------

I32A = np.array([[7, -7, 7, -7, 0, 9], [5, -5, 13, -13, 2, 1]], np.int32)
I32B = np.array([2, 2, -2, -2, 3, -4], np.int32)
BCAST = [((3, 4, 5), (5,)), ((3, 1, 5), (4, 1)), ((), (2, 3)), ((2, 3), (2, 3)), ((), ())]

BINARY = [
    *[case(op, [f32(*sa), f32(*sb)], id=f"{op}-{sa}-{sb}") for op in ("Add", "Sub", "Mul") for sa, sb in BCAST],
    *[case("Div", [f32(*sa), POS[0, 0, :1] + f32(*sb) ** 2], id=f"Div-{sa}-{sb}") for sa, sb in BCAST],
    case("Div", [I32A, I32B], id="Div-int"),
    case("Add", [I32A, I32B], id="Add-int"),
    case("Pow", [POS, f32(5)], id="Pow-float"),
    case("Pow", [X, np.array([2, 3, 0, 1, 2], np.int64)], id="Pow-float-int"),
    case("Pow", [I32A, np.array([2, 3, 0, 1, 2, 1], np.int32)], id="Pow-int"),
    case("Mod", [I32A, I32B], id="Mod-int"),
    case("Mod", [I32A, I32B], {"fmod": 1}, id="Mod-int-fmod"),
    case("Mod", [X, np.float32(1.7) * np.sign(f32(5))], {"fmod": 1}, id="Mod-float-fmod"),
    *[
        case(op, [a, b], id=f"{op}-{a.dtype}")
        for op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual")
        for a, b in ((np.round(X), np.round(f32(5))), (I32A, I32B))
    ],
    *[case(op, [X > 0, f32(4, 5) > 0]) for op in ("And", "Or", "Xor")],
    case("PRelu", [f32(2, 3, 4, 5), f32(3, 1, 1)], id="PRelu-channel"),
    case("PRelu", [f32(2, 3, 4, 5), f32(5)], id="PRelu-last"),
    case("PRelu", [f32(2, 3), f32(1)], id="PRelu-scalar"),
]


@pytest.mark.parametrize("args,kwargs", BINARY)
def test_binary(args, kwargs):
    check(*args, **kwargs)


VARIADIC = [
    case(op, xs, id=f"{op}-{len(xs)}")
    for op in ("Sum", "Mean", "Max", "Min")
    for xs in ([f32(3, 4)], [f32(3, 4), f32(4)], [f32(2, 1, 4), f32(3, 1), f32(1)])
]
VARIADIC += [case("Max", [I32A, I32B], id="Max-int"), case("Min", [I32A, I32B, I32B], id="Min-int")]

SELECT = [
    case("Where", [f32(3, 1) > 0, f32(4), f32(3, 4)]),
    case("Clip", [X, np.float32(-0.5), np.float32(1.0)], id="Clip-both"),
    case("Clip", [X, np.float32(-0.5)], id="Clip-min"),
    case("Clip", [X, None, np.float32(0.3)], id="Clip-max"),
    case("Clip", [X], id="Clip-none"),
    case("Clip", [X, np.float32(1.0), np.float32(-1.0)], id="Clip-min-gt-max"),
    case("Clip", [I32A, np.int32(-3), np.int32(6)], id="Clip-int"),
]


@pytest.mark.parametrize("args,kwargs", VARIADIC + SELECT)
def test_variadic_select(args, kwargs):
    check(*args, **kwargs)


@pytest.mark.parametrize(
    "x,to",
    [
        (X, TensorProto.INT32),
        (X, TensorProto.INT64),
        (X, TensorProto.BOOL),
        (X, TensorProto.FLOAT16),
        (X, TensorProto.DOUBLE),
        (I32A, TensorProto.FLOAT),
        (I32A, TensorProto.UINT8),
        (X > 0, TensorProto.FLOAT),
    ],
)
def test_cast(x, to):
    check("Cast", [x], {"to": to}, kw={"to": helper.tensor_dtype_to_np_dtype(to)})


# --------------------------------------------------------------------------
# Convolution and pooling
# --------------------------------------------------------------------------


def conv_case(xs, ws, bias=True, id=None, **attrs):
    inputs = [f32(*xs), f32(*ws)] + ([f32(ws[0])] if bias else [])
    nd = len(xs) - 2
    attrs.setdefault("kernel_shape", list(ws[2:]))
    attrs.setdefault("pads", [0] * 2 * nd)
    attrs.setdefault("strides", [1] * nd)
    attrs.setdefault("dilations", [1] * nd)
    return case("Conv", inputs, attrs, id=id)


CONV = [
    conv_case((1, 3, 10, 10), (4, 3, 3, 3), pads=[1, 1, 1, 1], id="3x3-pad1"),
    conv_case((2, 3, 11, 9), (5, 3, 3, 2), bias=False, strides=[2, 2], pads=[1, 0, 2, 1], id="stride2-asym-pad"),
    conv_case((1, 2, 12, 12), (3, 2, 3, 3), dilations=[2, 3], pads=[2, 1, 2, 1], id="dilated"),
    conv_case((1, 4, 8, 8), (6, 2, 3, 3), group=2, pads=[1, 1, 1, 1], id="group2"),
    conv_case((2, 6, 9, 9), (6, 1, 3, 3), group=6, pads=[1, 1, 1, 1], strides=[2, 2], id="depthwise"),
    conv_case((1, 3, 7, 7), (6, 1, 3, 3), group=3, dilations=[2, 2], id="depthwise-mult2"),
    conv_case((1, 8, 5, 5), (4, 8, 1, 1), id="1x1"),
    conv_case((1, 8, 6, 6), (4, 8, 1, 1), strides=[2, 2], id="1x1-stride2"),
    conv_case((1, 3, 16), (4, 3, 5), pads=[2, 1], strides=[3], id="1d"),
    conv_case((2, 4, 20), (4, 2, 3), group=2, dilations=[2], id="1d-group"),
    conv_case((1, 2, 5, 6, 7), (3, 2, 3, 2, 3), pads=[1, 0, 1, 1, 1, 0], strides=[1, 2, 2], id="3d"),
    conv_case((1, 4, 5, 5, 5), (4, 1, 3, 3, 3), group=4, pads=[1] * 6, id="3d-depthwise"),
    conv_case((1, 3, 23, 23), (8, 3, 7, 7), strides=[2, 2], pads=[3, 3, 3, 3], id="7x7-stride2"),
]


def convt_case(xs, ws, bias=True, id=None, **attrs):
    inputs = [f32(*xs), f32(*ws)] + ([f32(ws[1] * attrs.get("group", 1))] if bias else [])
    nd = len(xs) - 2
    attrs.setdefault("kernel_shape", list(ws[2:]))
    attrs.setdefault("strides", [1] * nd)
    if "output_shape" not in attrs:
        attrs.setdefault("pads", [0] * 2 * nd)
    return case("ConvTranspose", inputs, attrs, id=id)


CONV_T = [
    convt_case((1, 3, 5, 5), (3, 4, 3, 3), id="basic"),
    convt_case((1, 3, 5, 6), (3, 2, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1], id="stride2"),
    convt_case((2, 4, 4, 4), (4, 3, 2, 3), bias=False, group=2, strides=[2, 1], pads=[0, 1, 1, 0], id="group2"),
    convt_case((1, 2, 4, 4), (2, 2, 3, 3), dilations=[2, 2], strides=[3, 2], pads=[1, 2, 0, 1], id="dilated"),
    convt_case((1, 3, 7), (3, 2, 4), strides=[2], pads=[1, 1], id="1d"),
    convt_case((1, 2, 3, 4, 3), (2, 2, 2, 3, 2), strides=[2, 1, 2], pads=[0, 1, 1, 0, 1, 0], id="3d"),
    convt_case((1, 3, 5, 5), (3, 2, 3, 3), strides=[2, 2], output_shape=[10, 10], id="output-shape"),
]


@pytest.mark.parametrize("args,kwargs", CONV + CONV_T)
def test_conv(args, kwargs):
    check(*args, **kwargs)


def pool_case(op, xs, kernel, id=None, dtype=np.float32, opset=18, **attrs):
    nd = len(xs) - 2
    attrs["kernel_shape"] = kernel
    attrs.setdefault("pads", [0] * 2 * nd)
    attrs.setdefault("strides", [1] * nd)
    x = f32(*xs, scale=10.0).astype(dtype)
    return case(op, [x], attrs, id=id, opset=opset)


POOL = [
    pool_case("MaxPool", (1, 3, 9, 9), [3, 3], strides=[2, 2], pads=[1, 1, 1, 1], id="max-3x3s2"),
    pool_case("MaxPool", (2, 2, 8, 7), [2, 3], strides=[2, 2], pads=[0, 1, 1, 0], id="max-asym"),
    pool_case("MaxPool", (1, 2, 10, 10), [3, 3], strides=[2, 2], ceil_mode=1, id="max-ceil"),
    pool_case("MaxPool", (1, 2, 6, 6), [3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, id="max-ceil-pad"),
    pool_case("MaxPool", (1, 2, 5, 5), [2, 2], strides=[3, 3], pads=[0, 0, 1, 1], ceil_mode=1, id="max-ceil-drop"),
    pool_case("MaxPool", (1, 2, 5, 5), [3, 3], strides=[2, 2], pads=[2, 2, 2, 2], ceil_mode=1, id="max-ceil-pad2"),
    pool_case("MaxPool", (1, 2, 10, 9), [2, 3], dilations=[2, 2], strides=[1, 2], pads=[1, 2, 1, 2], id="max-dil"),
    pool_case("MaxPool", (1, 3, 17), [4], strides=[3], pads=[1, 2], ceil_mode=1, id="max-1d"),
    pool_case("MaxPool", (1, 2, 5, 6, 7), [2, 3, 2], strides=[2, 1, 2], pads=[0, 1, 1, 1, 1, 0], id="max-3d"),
    pool_case("MaxPool", (1, 2, 7, 7), [3, 3], strides=[2, 2], pads=[1, 1, 1, 1], dtype=np.int8, id="max-int8"),
    pool_case("MaxPool", (1, 2, 7, 7), [3, 3], strides=[2, 2], pads=[1, 1, 1, 1], dtype=np.uint8, id="max-uint8"),
]
for cip in (0, 1):
    for cm in (0, 1):
        tag = f"cip{cip}-ceil{cm}"
        POOL += [
            pool_case("AveragePool", (1, 3, 9, 9), [3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                      count_include_pad=cip, ceil_mode=cm, id=f"avg-3x3s2-{tag}"),
            pool_case("AveragePool", (2, 2, 10, 7), [3, 2], strides=[3, 2], pads=[2, 0, 1, 1],
                      count_include_pad=cip, ceil_mode=cm, id=f"avg-asym-{tag}"),
            pool_case("AveragePool", (1, 2, 5, 5), [2, 2], strides=[3, 3], pads=[0, 0, 1, 1],
                      count_include_pad=cip, ceil_mode=cm, id=f"avg-drop-{tag}"),
            pool_case("AveragePool", (1, 2, 5, 5), [3, 3], strides=[2, 2], pads=[2, 2, 2, 2],
                      count_include_pad=cip, ceil_mode=cm, id=f"avg-pad2-{tag}"),
            pool_case("AveragePool", (1, 2, 10, 10), [3, 3], strides=[2, 2], pads=[1, 0, 0, 0],
                      count_include_pad=cip, ceil_mode=cm, id=f"avg-ceil-extra-{tag}"),
            pool_case("AveragePool", (1, 3, 17), [4], strides=[3], pads=[1, 2],
                      count_include_pad=cip, ceil_mode=cm, id=f"avg-1d-{tag}"),
            pool_case("AveragePool", (1, 2, 5, 6, 7), [2, 3, 2], strides=[2, 1, 2], pads=[0, 1, 1, 1, 1, 0],
                      count_include_pad=cip, ceil_mode=cm, id=f"avg-3d-{tag}"),
            pool_case("AveragePool", (1, 2, 11, 10), [3, 2], strides=[2, 2], pads=[1, 1, 1, 1], dilations=[2, 2],
                      count_include_pad=cip, ceil_mode=cm, opset=19, id=f"avg-dil-{tag}"),
        ]
POOL += [case(op, [f32(*s)], id=f"{op}-{len(s) - 2}d")
         for op in ("GlobalAveragePool", "GlobalMaxPool") for s in ((2, 3, 7), (1, 3, 5, 6), (1, 2, 3, 4, 5))]


@pytest.mark.parametrize("args,kwargs", POOL)
def test_pool(args, kwargs):
    check(*args, **kwargs)


# --------------------------------------------------------------------------
# Normalisation, softmax, matrix products
# --------------------------------------------------------------------------

NORM = [
    case("BatchNormalization", [f32(2, 3, 4, 5), f32(3), f32(3), f32(3), POS[0, 0, :3]], id="bn-4d"),
    case("BatchNormalization", [f32(4, 3), f32(3), f32(3), f32(3), POS[0, 0, :3]], {"epsilon": 1e-3}, id="bn-2d"),
    case("InstanceNormalization", [f32(2, 3, 4, 5), f32(3), f32(3)], id="in-2d"),
    case("InstanceNormalization", [f32(2, 3, 7), f32(3), f32(3)], {"epsilon": 1e-2}, id="in-1d"),
    case("LayerNormalization", [f32(2, 3, 8), f32(8), f32(8)], id="ln-last"),
    case("LayerNormalization", [f32(2, 3, 8), f32(3, 8)], {"axis": 1, "epsilon": 1e-3}, id="ln-axis1-nobias"),
    case("LayerNormalization", [f32(2, 3, 8), f32(3, 8), f32(8)], {"axis": -2}, id="ln-neg-axis"),
    case("RMSNormalization", [f32(2, 3, 8, scale=4.0), f32(8)], opset=23, id="rms-last"),
    case("RMSNormalization", [f32(2, 3, 8), f32(3, 8)], {"axis": 1, "epsilon": 1e-3}, opset=23, id="rms-axis1"),
    case("RMSNormalization", [f32(2, 3, 8), f32(3, 1)], {"axis": -1}, opset=23, id="rms-scale-bcast"),
    case("LRN", [f32(1, 7, 4, 4)], {"size": 3}, id="lrn-3"),
    case("LRN", [f32(2, 6, 3, 3)], {"size": 3, "alpha": 0.01, "beta": 0.5, "bias": 2.0}, id="lrn-3-attrs"),
    case("LRN", [f32(1, 5, 3, 3)], {"size": 5, "alpha": 1e-3}, id="lrn-5"),
    *[case(op, [f32(3, 4, 5, scale=10.0)], {"axis": a}, id=f"{op}-{a}")
      for op in ("Softmax", "LogSoftmax") for a in (0, 1, -1)],
]

MATMUL = [
    case("MatMul", [f32(3, 4), f32(4, 5)], id="2d"),
    case("MatMul", [f32(4), f32(4, 5)], id="1d-2d"),
    case("MatMul", [f32(3, 4), f32(4)], id="2d-1d"),
    case("MatMul", [f32(4), f32(4)], id="1d-1d"),
    case("MatMul", [f32(2, 1, 3, 4), f32(5, 4, 6)], id="batched-bcast"),
    *[case("Gemm", [f32(*(4, 3)[::(-1 if ta else 1)]), f32(*(3, 5)[::(-1 if tb else 1)]), c],
           {"transA": ta, "transB": tb, "alpha": al, "beta": be}, id=f"gemm-{ta}{tb}-{cid}-{al}")
      for ta in (0, 1) for tb in (0, 1)
      for cid, c in (("c5", f32(5)), ("c41", f32(4, 1)), ("c45", f32(4, 5)), ("cs", f32()))
      for al, be in ((1.0, 1.0), (0.5, 2.0))],
    case("Gemm", [f32(4, 3), f32(3, 5)], id="gemm-noc"),
]


@pytest.mark.parametrize("args,kwargs", NORM + MATMUL)
def test_norm_matmul(args, kwargs):
    check(*args, **kwargs)


# --------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------

REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("axes", [None, (1,), (-1, 0)])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce(op, axes, keepdims):
    x = POS[:, :3] if op == "ReduceLogSum" else X[:, :3] * 0.5
    inputs = [x] if axes is None else [x, i64(*axes)]
    check(op, inputs, {"keepdims": keepdims}, kin=[x], kw={"axes": axes, "keepdims": keepdims})


def test_reduce_noop_and_int():
    check("ReduceSum", [X, np.zeros(0, np.int64)], {"noop_with_empty_axes": 1},
          kin=[X], kw={"axes": (), "noop_with_empty_axes": 1})
    check("ReduceMax", [X], {"noop_with_empty_axes": 1}, kw={"axes": None, "noop_with_empty_axes": 1})
    check("ReduceMax", [I32A, i64(1)], {"keepdims": 0}, kin=[I32A], kw={"axes": (1,), "keepdims": 0})


TIES = np.array([[1, 3, 3, 0], [2, 2, 1, 1], [0, 0, 0, 0]], np.float32)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg(op, axis, keepdims, last):
    check(op, [TIES], {"axis": axis, "keepdims": keepdims, "select_last_index": last})


# --------------------------------------------------------------------------
# Data movement
# --------------------------------------------------------------------------

D = f32(4, 5, 6)
DATA = [
    case("Concat", [f32(2, 3), f32(2, 1), f32(2, 4)], {"axis": 1}, id="concat-1"),
    case("Concat", [f32(2, 3, 1), f32(2, 3, 2)], {"axis": -1}, id="concat-neg"),
    case("Split", [D, i64(1, 3)], {"axis": 0}, n_out=2, id="split-sizes"),
    case("Split", [D, i64(2, 0, 4)], {"axis": -1}, n_out=3, id="split-sizes-zero"),
    case("Split", [D], {"axis": 2, "num_outputs": 3}, n_out=3, id="split-even"),
    case("Split", [D], {"axis": 1, "num_outputs": 2}, n_out=2, id="split-uneven"),
    case("Split", [f32(7, 2)], {"num_outputs": 3}, n_out=3, id="split-uneven3"),
    case("Slice", [D, i64(1, 0), i64(3, -1)], id="slice-basic"),
    case("Slice", [D, i64(-1, 4), i64(I64_MIN, 1), i64(0, -1), i64(-1, -2)], id="slice-negstep"),
    case("Slice", [D, i64(0, -100), i64(I64_MAX, 100), i64(2, 1), i64(2, 1)], id="slice-clamp"),
    case("Slice", [D, i64(10), i64(-10), i64(1), i64(-1)], id="slice-negstep-clamp"),
    case("Slice", [D, i64(2), i64(2), i64(-3)], id="slice-empty"),
    case("Slice", [D, i64(5, -2), i64(0, 0), i64(-1, 0), i64(-2, -1)], id="slice-negstep2"),
    case("Gather", [D, i64(3, -1, 0)], {"axis": 0}, id="gather-0"),
    case("Gather", [D, np.array([[1, -2], [0, 4]], np.int64)], {"axis": 1}, id="gather-2d-idx"),
    case("Gather", [D, np.array(-1, np.int64)], {"axis": -1}, id="gather-scalar"),
    case("Gather", [D, np.array([1, 0], np.int32)], {"axis": 2}, id="gather-int32"),
    case("GatherElements", [f32(3, 4), np.array([[0, -1, 2, 1], [2, 0, 0, -3]], np.int64)], {"axis": 0},
         id="gatherel-0"),
    case("GatherElements", [f32(3, 4), np.array([[0, -1], [3, 0], [1, 1]], np.int64)], {"axis": -1},
         id="gatherel-1"),
    case("Reshape", [D, i64(0, -1)], id="reshape-0-neg1"),
    case("Reshape", [D, i64(2, 0, 3, -1)], id="reshape-mixed"),
    case("Reshape", [D, i64(30, 4)], {"allowzero": 1}, id="reshape-allowzero"),
    *[case("Flatten", [D], {"axis": a}, id=f"flatten-{a}") for a in (0, 1, 2, 3, -1)],
    case("Squeeze", [f32(1, 3, 1, 2)], id="squeeze-all"),
    case("Squeeze", [f32(1, 3, 1, 2), i64(0, -2)], kin=[None], kw={"axes": (0, -2)}, id="squeeze-axes"),
    case("Unsqueeze", [D, i64(0, -1)], kin=[None], kw={"axes": (0, -1)}, id="unsqueeze-0-neg1"),
    case("Unsqueeze", [D, i64(3, 1)], kin=[None], kw={"axes": (3, 1)}, id="unsqueeze-unsorted"),
    case("Transpose", [D], id="transpose-default"),
    case("Transpose", [D], {"perm": [1, 2, 0]}, id="transpose-perm"),
    case("Expand", [f32(3, 1), i64(2, 1, 4)], id="expand-bidir"),
    case("Expand", [f32(2, 3), i64(3)], id="expand-smaller"),
    case("Tile", [f32(2, 3), i64(2, 3)], id="tile"),
    case("Pad", [D, i64(1, 0, 2, 0, 3, 1)], id="pad-const"),
    case("Pad", [D, i64(1, -1, 2, 0, -2, 1), np.float32(2.5)], id="pad-const-value-neg"),
    case("Pad", [D, i64(2, 1), None, i64(-1)], id="pad-axes"),
    *[case("Pad", [D, i64(1, 2, 0, 2, 1, 3)], {"mode": m}, opset=19, id=f"pad-{m}")
      for m in ("reflect", "edge", "wrap")],
    case("Pad", [I32A, i64(1, 1, 0, 2), np.int32(-7)], id="pad-int"),
    case("Shape", [D], id="shape"),
    case("Shape", [D], {"start": 1}, id="shape-start"),
    case("Shape", [D], {"start": -2, "end": -1}, id="shape-neg"),
    case("Shape", [D], {"end": 10}, id="shape-clamp"),
    case("Size", [D]),
    case("ConstantOfShape", [i64(2, 3)], id="cos-default"),
    case("ConstantOfShape", [i64(2, 3)], {"value": numpy_helper.from_array(np.array([7], np.int64))},
         kw={"value": np.array([7], np.int64)}, id="cos-int"),
    case("ConstantOfShape", [np.zeros(0, np.int64)], {"value": numpy_helper.from_array(np.array([1.5], np.float32))},
         kw={"value": np.array([1.5], np.float32)}, id="cos-scalar"),
    case("Range", [np.array(1.0, np.float32), np.array(5.5, np.float32), np.array(0.7, np.float32)], id="range-f"),
    case("Range", [np.array(10, np.int64), np.array(-3, np.int64), np.array(-4, np.int64)], id="range-int-neg"),
    case("Range", [np.array(3, np.int32), np.array(3, np.int32), np.array(1, np.int32)], id="range-empty"),
    *[case("DepthToSpace", [f32(2, 8, 3, 4)], {"blocksize": 2, "mode": m}, id=f"d2s-{m}") for m in ("DCR", "CRD")],
    case("SpaceToDepth", [f32(2, 3, 4, 6)], {"blocksize": 2}),
    case("Dropout", [D], opset=13),
]


@pytest.mark.parametrize("args,kwargs", DATA)
def test_data(args, kwargs):
    args, kwargs = list(args), dict(kwargs)
    if kwargs.get("kin") == [None]:  # ONNX axes operand -> kernel attribute
        kwargs["kin"] = args[1][:1]
    check(*args, **kwargs)


# --------------------------------------------------------------------------
# f16 and bf16: the op computed in f32, rounded once to the operand's type
# --------------------------------------------------------------------------

LOW = {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}


def _lower(a, dtype):
    return a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype == np.float32 else a


def _computes_on_its_float_operands(param) -> bool:
    """A case whose result type follows its f32 operands (not Cast / Shape / Size /
    ConstantOfShape, whose result type is their own, nor a case with no f32 operand)."""
    args, kwargs = param.values
    if args[0] in ("Cast", "Shape", "Size", "ConstantOfShape"):
        return False
    inputs = list(args[1])
    kin = kwargs.get("kin")
    if kin == [None]:
        kin = inputs[1][:1]
    return any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in (inputs if kin is None else kin))


LOW_CASES = [p for p in UNARY + BINARY + VARIADIC + SELECT + CONV + CONV_T + POOL + NORM + MATMUL + DATA
             if _computes_on_its_float_operands(p)]


@pytest.mark.parametrize("low", list(LOW))
@pytest.mark.parametrize("args,kwargs", LOW_CASES)
def test_low_precision_kernels_give_the_operands_type(args, kwargs, low):
    """Every case above with its f32 operands in f16 / bf16: each float result has that type
    and is the f32 kernel's result on the same values rounded once (bf16 @ bf16 alone would
    give f32 in ml_dtypes, a bf16 sum would round at every step). The f16 softmaxes are the
    exception: they round at each vector step, as their kernel does (pinned bit for bit in
    test_low_precision), so they are within two f16 ulp (of the largest value) of the once-rounded
    result."""
    dtype = LOW[low]
    op, inputs = args[0], list(args[1])
    attrs = args[2] if len(args) > 2 else {}
    kin = kwargs.get("kin")
    if kin == [None]:
        kin = inputs[1][:1]
    operands = [None if a is None else np.asarray(a) for a in (inputs if kin is None else kin)]
    kw = kwargs.get("kw") or {snake(k): v for k, v in attrs.items()}
    fn = K.reference_of(g.OPS["graph." + KERNEL_NAME.get(op, snake(op))])
    low_in = [_lower(a, dtype) for a in operands]
    got = fn(*low_in, **kw)
    want = fn(*[a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype == dtype else a for a in low_in], **kw)
    for out, ref in zip(*(list(x) if isinstance(x, tuple) else [x] for x in (got, want)), strict=True):
        if ref.dtype != np.float32:
            assert out.dtype == ref.dtype
            continue
        assert out.dtype == dtype, (out.dtype, dtype)
        if op in ("Softmax", "LogSoftmax") and dtype == np.float16:
            np.testing.assert_allclose(out.astype(np.float32), ref, rtol=0, atol=2 * 2.0 ** -10 * np.abs(ref).max())
            continue
        np.testing.assert_array_equal(out.view(np.uint16), ref.astype(dtype).view(np.uint16))


def test_low_precision_sum_and_matmul_round_once():
    """Where numpy / ml_dtypes would not: a long bf16 sum, a bf16 matrix product."""
    x = np.full(4096, 0.1, ml_dtypes.bfloat16)
    s = K.reference_of(g.ReduceSumOp)(x, axes=None, keepdims=0)
    assert s.dtype == x.dtype and float(s) == pytest.approx(409.6, rel=2 ** -8)
    a, b = f32(8, 64).astype(ml_dtypes.bfloat16), f32(64, 8).astype(ml_dtypes.bfloat16)
    y = K.reference_of(g.MatMulOp)(a, b)
    assert y.dtype == a.dtype
    np.testing.assert_array_equal(y, (a.astype(np.float32) @ b.astype(np.float32)).astype(a.dtype))


@pytest.mark.parametrize("src,dst", [("f32", "bf16"), ("bf16", "f16"), ("f16", "bf16"), ("bf16", "f32"),
                                     ("bf16", "i32"), ("i32", "bf16")])
def test_cast_low_precision_rounds_once(src, dst):
    types = {**LOW, "f32": np.dtype(np.float32), "i32": np.dtype(np.int32)}
    x = (f32(256, scale=300.0) if src != "i32" else RNG.integers(-70000, 70000, 256)).astype(types[src])
    y = K.reference_of(g.CastOp)(x, to=types[dst])
    assert y.dtype == types[dst]
    exact = x.astype(np.float64)
    want = (np.trunc(exact) if dst == "i32" else exact).astype(np.float32).astype(types[dst])
    np.testing.assert_array_equal(y, want)


def test_every_graph_op_has_reference_semantics():
    """Each op class of the dialect has its function, named after the op (the registry is
    keyed by class; the names keep the module readable)."""
    ops = [op for op in g.OPS.values() if issubclass(op, g.GraphOp)]
    assert set(K.REFERENCE) == set(ops)
    for op_type, fn in K.REFERENCE.items():
        assert fn.__name__ == op_type.name.removeprefix("graph.")


def test_row_template_has_a_rule_for_every_op_it_takes():
    """op_info.ROW (what fusion groups for the row template) and the row template's op rules
    name the same classes: a listed op without a rule would fail at lowering, a rule for an
    unlisted op is never used. Views have no rule: they share their operand's buffer."""
    from geir.dialects.traits import ViewLike
    from geir.lowering.templates.vector import RULES
    from geir.target import op_info

    views = {op for op in op_info.ROW.ops if op.has_trait(ViewLike)}
    assert views
    assert set(RULES) == op_info.ROW.ops - views


# --------------------------------------------------------------------------
# Data kernels of the ascend lowering: chains of views, transposes and slices
# (lowering/templates/data.py), run tile by tile by the ascend interpreter.
# --------------------------------------------------------------------------

from xdsl.context import Context  # noqa: E402

from geir.dialects import ascend as A  # noqa: E402
from geir.ir.text import parse_module  # noqa: E402
from geir.lowering.graph_to_ascend import ConvertGraphToAscend  # noqa: E402
from geir.lowering.templates.data import Strided  # noqa: E402
from geir.runtime.ascend_interpreter import ascend_input_specs, run_ascend_module  # noqa: E402
from geir.dialects import make_context


def _ty(shape, elt="f32"):
    return f"tensor<{'x'.join(map(str, shape))}x{elt}>"


class _Chain:
    """The body of a graph.fusion "data" written op by op, with the result types."""

    def __init__(self, *inputs):
        self.lines, self.shapes, self.n = [], {}, 0
        for i, shape in enumerate(inputs):
            self.shapes[f"%a{i}"] = tuple(shape)

    def _new(self, shape):
        self.n += 1
        name = f"%v{self.n}"
        self.shapes[name] = tuple(shape)
        return name

    def _i64(self, values):
        name = self._new((len(values),))
        self.lines.append(f"{name} = graph.constant dense<{list(values)}> : tensor<{len(values)}xi64>")
        return name

    def reshape(self, x, shape):
        s = self._i64(shape)
        y = self._new(shape)
        self.lines.append(f"{y} = graph.reshape {x}, {s} : ({_ty(self.shapes[x])}, tensor<{len(shape)}xi64>) -> {_ty(shape)}")
        return y

    def transpose(self, x, perm):
        shape = [self.shapes[x][p] for p in perm]
        y = self._new(shape)
        self.lines.append(f"{y} = graph.transpose {x} {{perm = array<i64: {', '.join(map(str, perm))}>}} : "
                          f"({_ty(self.shapes[x])}) -> {_ty(shape)}")
        return y

    def slice(self, x, axis, start, end, step=1):
        shape = list(self.shapes[x])
        shape[axis] = len(range(start, min(end, shape[axis]), step))
        ops = [self._i64([v]) for v in (start, end, axis, step)]
        y = self._new(shape)
        self.lines.append(f"{y} = graph.slice {x}, {', '.join(ops)} : ({_ty(self.shapes[x])}, "
                          + ", ".join(["tensor<1xi64>"] * 4) + f") -> {_ty(shape)}")
        return y

    def module(self, outputs, elt="f32"):
        ins = [k for k in self.shapes if k.startswith("%a")]
        in_t = ", ".join(_ty(self.shapes[k]) for k in ins)
        out_t = ", ".join(_ty(self.shapes[v]) for v in outputs)
        args = ", ".join(f"%x{i}: {_ty(self.shapes[k])}" for i, k in enumerate(ins))
        block = ", ".join(f"{k}: {_ty(self.shapes[k])}" for k in ins)
        results = ", ".join(f"%y{i}" for i in range(len(outputs)))
        text = "\n".join([
            f"func.func @chain({args}) -> ({out_t}) {{",
            f"  {results} = graph.fusion \"data\" ({', '.join(f'%x{i}' for i in range(len(ins)))}) : ({in_t}) -> ({out_t}) {{",
            f"  ^bb0({block}):",
            *(f"    {line}" for line in self.lines),
            f"    graph.yield {', '.join(outputs)} : {out_t}",
            "  }",
            f"  func.return {results} : {out_t}",
            "}",
        ])
        return parse_module(text.replace("xf32>", f"x{elt}>"), make_context())


def _qkv(c, seq=16, heads=4, dim=16):
    """The TorchScript attention's split of [S, 1, 3E] into per-head q, k, v [1, H, S, D]."""
    e = heads * dim
    t = c.transpose(c.reshape("%a0", [1, seq, 1, 3, e]), [3, 1, 2, 0, 4])
    sq = c.reshape(t, [3, seq, 1, e])
    outs = []
    for i in range(3):
        h = c.reshape(c.slice(sq, 0, i, i + 1), [seq, heads, dim])
        outs.append(c.reshape(c.transpose(h, [1, 0, 2]), [1, heads, seq, dim]))
    return outs


def _qkv_ref(x, seq=16, heads=4, dim=16):
    e = heads * dim
    return [x[:, 0, i * e:(i + 1) * e].reshape(seq, heads, dim).transpose(1, 0, 2)[None] for i in range(3)]


def _chain_slice_step():
    c = _Chain((7, 5, 24))
    return c, [c.transpose(c.slice("%a0", 0, 1, 7, 3), [1, 0, 2])]


def _chain_split_dims():
    c = _Chain((4, 8, 6, 16))
    t = c.transpose(c.slice("%a0", 1, 2, 8, 2), [2, 0, 1, 3])       # [6, 4, 3, 16]
    return c, [c.transpose(c.reshape(t, [6, 4, 3, 4, 4]), [0, 3, 1, 2, 4])]


def _chain_two_inputs():
    c = _Chain((8, 16), (4, 32))
    return c, [c.transpose("%a0", [1, 0]), c.reshape(c.slice("%a1", 0, 1, 3), [64])]


def _chain_qkv():
    c = _Chain((16, 1, 192))
    return c, _qkv(c)


def _chain_reshape_copy():
    c = _Chain((4, 6, 8))
    r = c.reshape(c.transpose("%a0", [1, 0, 2]), [24, 8])
    return c, [c.slice(r, 0, 0, 12)]


CHAINS = [
    # (chain, numpy reference, kernels expected)
    pytest.param(_chain_qkv, lambda x: _qkv_ref(x), 1, "f32", id="qkv"),
    pytest.param(_chain_qkv, lambda x: _qkv_ref(x), 1, "f16", id="qkv-f16"),
    pytest.param(_chain_slice_step, lambda x: [x[1:7:3].transpose(1, 0, 2)], 1, "f32", id="slice-step-outer"),
    pytest.param(_chain_split_dims, lambda x: [
        x[:, 2:8:2].transpose(2, 0, 1, 3).reshape(6, 4, 3, 4, 4).transpose(0, 3, 1, 2, 4)], 1, "f32",
        id="slice-transpose-split"),
    pytest.param(_chain_two_inputs, lambda x, y: [x.T, y[1:3].reshape(64)], 1, "f32", id="two-inputs"),
    # a reshape numpy would copy: the transpose (and the reshape) and the slice stay two kernels
    pytest.param(_chain_reshape_copy, lambda x: [x.transpose(1, 0, 2).reshape(24, 8)[:12]], 2, "f32",
                 id="reshape-copy"),
]


@pytest.mark.parametrize("chain,ref,kernels,elt", CHAINS)
def test_data_chain_kernel(chain, ref, kernels, elt):
    """A chain of data ops lowers to `kernels` data kernels (no fallback) whose outputs are
    numpy's, bit for bit."""
    c, outputs = chain()
    module = c.module(outputs, elt)
    ConvertGraphToAscend().apply(Context(), module)
    module.verify()
    built = [op for op in module.walk() if isinstance(op, A.KernelOp)]
    assert len(built) == kernels
    assert all(k.attributes["template"].data == "data" for k in built)
    rng = np.random.default_rng(7)
    feeds = {name: rng.standard_normal(shape).astype(dtype) for name, shape, dtype in ascend_input_specs(module)}
    got = list(run_ascend_module(module, feeds).values())
    want = ref(*feeds.values())
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def _numpy_chain(x, steps):
    for kind, arg in steps:
        x = x.transpose(arg) if kind == "transpose" else x[arg] if kind == "slice" else x.reshape(arg)
    return x


STRIDED = [
    # (input shape, steps); "slice" takes a tuple of python slices (positive steps)
    ((128, 1, 768), [("reshape", (1, 128, 1, 3, 256)), ("transpose", (3, 1, 2, 0, 4)),
                     ("reshape", (3, 128, 1, 256)), ("slice", (slice(1, 2),)), ("reshape", (128, 4, 64)),
                     ("transpose", (1, 0, 2)), ("reshape", (1, 4, 128, 64))]),
    ((6, 8, 10), [("slice", (slice(1, 6, 2), slice(None), slice(2, 9, 3))), ("transpose", (2, 0, 1)),
                  ("reshape", (3, 3, 2, 4)), ("reshape", (9, 8))]),
    ((4, 6, 8), [("transpose", (1, 0, 2)), ("reshape", (24, 8))]),          # numpy copies
    ((4, 6, 8), [("transpose", (1, 0, 2)), ("reshape", (6, 2, 2, 2, 4))]),  # split dims: a view
    ((2, 1, 3), [("reshape", (1, 2, 3, 1)), ("transpose", (3, 2, 0, 1)), ("reshape", (3, 2))]),
    # the dynamo exporter's sequence-first attention: b and h merged though not one stride
    # apart (Merged), split back into [B, H, S, D] (Strided again)
    ((16, 4, 6 * 8), [("reshape", (1, 16, 4, 3, 16)), ("transpose", (3, 1, 2, 0, 4)),
                      ("reshape", (3, 16, 4, 16)), ("slice", (slice(1, 2),)), ("reshape", (16, 8, 8)),
                      ("transpose", (1, 0, 2)), ("reshape", (4, 2, 16, 8))]),
    # its output side: [B * S, E] rows seen sequence-first, [S * B, E] and back
    ((4, 16, 8), [("transpose", (1, 0, 2)), ("reshape", (64, 8)), ("reshape", (16, 4, 2, 4)),
                  ("transpose", (1, 2, 0, 3))]),
    ((4, 6, 8), [("transpose", (1, 0, 2)), ("reshape", (24, 8)), ("slice", (slice(4, 12),))]),  # whole blocks
    ((4, 6, 8), [("transpose", (1, 0, 2)), ("reshape", (24, 8)), ("slice", (slice(1, 3),))]),   # no runs
    ((4, 6, 8), [("transpose", (1, 0, 2)), ("reshape", (24, 8)), ("reshape", (8, 3, 8))]),     # no runs
]


@pytest.mark.parametrize("shape,steps", STRIDED)
def test_strided_view_composes_like_numpy(shape, steps):
    """After every step the view addresses the elements numpy's chain gives; it is a
    `Strided` view exactly where numpy's chain is a view (no copy so far) and a `Merged` one
    where only a reshape that copies in numpy got it there; None only where no runs describe
    it."""
    base = np.arange(math.prod(shape)).reshape(shape)
    view = Strided.of(0, shape)
    x, copied = base, False
    for kind, arg in steps:
        if kind == "transpose":
            view = view.transpose(arg)
        elif kind == "slice":
            arg = arg + (slice(None),) * (len(x.shape) - len(arg))
            offs = [s.indices(n)[0] for s, n in zip(arg, x.shape)]
            steps_ = [s.indices(n)[2] for s, n in zip(arg, x.shape)]
            view = view.slice(offs, x[arg].shape, steps_)
        else:
            view = view.reshape(arg)
        x = _numpy_chain(x, [(kind, arg)])
        copied = copied or not np.shares_memory(x, base)
        if view is None:
            assert copied
            return
        assert isinstance(view, Strided) == (not copied or _is_strided(x))
        np.testing.assert_array_equal(_elements(view), x)


def _elements(view) -> np.ndarray:
    """The input element at each index of a Strided or Merged view."""
    if isinstance(view, Strided):
        return view.offset + sum(i * t for i, t in zip(np.indices(view.shape), view.strides))
    index = np.full(view.shape, view.offset)
    for axis, (i, runs) in enumerate(zip(np.indices(view.shape), view.dims)):
        for n, t in reversed(runs):
            index = index + (i % n) * t
            i = i // n
    return index


def _is_strided(x: np.ndarray) -> bool:
    """Whether the elements `x` holds (its values: flat indices of the input) are one stride
    apart along each dim."""
    return all((d == d.flat[0]).all() for d in (np.diff(x, axis=k) for k, n in enumerate(x.shape) if n > 1))
