"""The PyTorch frontend without ONNX: the core-ATen importer (frontend/fx.py), geir.compile of a
torch.nn.Module through torch.export, and torch.compile(backend="geir")
(driver/torch_backend.py). Numbers are checked against eager torch in fp32."""

import numpy as np
import pytest
import torch

import geir
from geir.dialects import ascend as a
from geir.errors import GeirError
from geir.frontend.fx import FxImportError
from geir.driver.torch_backend import geir_pieces
from geir.testing.torch_models import TORCH_MODELS, torch_model

FP32 = {"opt_level": 3, "precision_mode": "must_keep_origin_dtype"}
RTOL, ATOL = 1e-4, 1e-5


def _kernels(cm) -> int:
    return sum(isinstance(op, a.KernelOp) for op in cm.module.walk())


def _flat(x):
    return [y for e in x for y in _flat(e)] if isinstance(x, tuple | list) else [x]


def _eager(model, inputs):
    with torch.no_grad():
        return _flat(model(*inputs))


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("name", TORCH_MODELS)
def test_torch_compile_matches_eager(name):
    model, inputs = torch_model(name)
    fn = torch.compile(model, backend="geir", options=FP32)  # found through the entry point
    with torch.no_grad():
        out = _flat(fn(*inputs))
    ref = _eager(model, inputs)
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        assert o.shape == r.shape and o.dtype == r.dtype
        np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=RTOL, atol=ATOL)
    piece = geir_pieces()[-1]
    assert piece.calls == 1 and piece.recompiles == []
    assert _kernels(piece.compiled) > 0  # lowered to kernels, not run at graph level


def test_compile_module_takes_the_fx_path_by_default():
    model, inputs = torch_model("resnet")
    cm = geir.compile(model, example_inputs=inputs, **FP32)
    (name, shape, _), = cm.input_specs()
    assert name == "x" and tuple(shape) == tuple(inputs[0].shape)
    out = next(iter(cm.run({"x": inputs[0].numpy()}).values()))
    np.testing.assert_allclose(out, _eager(model, inputs)[0].numpy(), rtol=RTOL, atol=ATOL)
    imported = cm.mlir("01_import")
    assert "graph.conv" in imported and 'loc("convolution"("' in imported and "torch_models.py" in imported


def test_fx_and_onnx_paths_agree_on_kernels_and_numbers():
    model, inputs = torch_model("mobilenet")
    fx = geir.compile(model, example_inputs=inputs, **FP32)
    ox = geir.compile(model, example_inputs=inputs, torch_frontend="onnx", **FP32)
    feeds_fx = {fx.input_specs()[0][0]: inputs[0].numpy()}
    feeds_ox = {ox.input_specs()[0][0]: inputs[0].numpy()}
    a, b = next(iter(fx.run(feeds_fx).values())), next(iter(ox.run(feeds_ox).values()))
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    assert 0 < _kernels(fx) <= _kernels(ox)


def test_bf16_and_fp16_weights_import():
    model, inputs = torch_model("transformer")
    for dtype in (torch.float16, torch.bfloat16):
        m = model.to(dtype)
        x = inputs[0].to(dtype)
        cm = geir.compile(m, example_inputs=(x,), opt_level=1, lower=False)
        out = next(iter(cm.run({"x": geir.frontend.fx.to_numpy(x)}).values()))
        ref = _eager(m, (x,))[0].float().numpy()
        cos = float(np.dot(out.astype(np.float32).ravel(), ref.ravel())
                    / np.linalg.norm(out.astype(np.float32)) / np.linalg.norm(ref))
        assert cos > 0.999, (dtype, cos)


def test_parameter_change_recompiles_with_its_cause():
    model, inputs = torch_model("resnet")
    fn = torch.compile(model, backend="geir", options=FP32)
    with torch.no_grad():
        fn(*inputs)
        model.fc.bias.add_(1.0)  # in place: the compiled constants are stale
        out = fn(*inputs)
    np.testing.assert_allclose(out.numpy(), _eager(model, inputs)[0].numpy(), rtol=RTOL, atol=ATOL)
    piece = geir_pieces()[-1]
    assert piece.calls == 2
    assert piece.recompiles == ["parameter or buffer changed: fc.bias"]


def test_graph_break_pieces_run_in_order():
    class Branchy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)

        def forward(self, x):
            y = torch.relu(self.a(x))
            if y.sum() > 0:  # data-dependent: dynamo breaks the graph here
                y = y * 2
            return self.b(y)

    torch.manual_seed(0)
    model, x = Branchy().eval(), torch.randn(3, 8)
    fn = torch.compile(model, backend="geir", options=FP32)
    with torch.no_grad():
        out = fn(x)
    np.testing.assert_allclose(out.numpy(), _eager(model, (x,))[0].numpy(), rtol=RTOL, atol=ATOL)
    assert len([p for p in geir_pieces() if p.calls]) >= 2


def test_profile_option_keeps_the_report():
    model, inputs = torch_model("mobilenet")
    fn = torch.compile(model, backend="geir", options={**FP32, "profile": True})
    with torch.no_grad():
        fn(*inputs)
    report = geir_pieces()[-1].last_report
    assert report["latency_us"] > 0 and report["kernels"]


def test_unknown_option_is_one_clear_error():
    model, inputs = torch_model("mobilenet")
    fn = torch.compile(model, backend="geir", options={"opt_levle": 2})
    with pytest.raises(Exception, match="opt_levle"), torch.no_grad():
        fn(*inputs)


def test_training_call_says_to_use_no_grad():
    model, inputs = torch_model("mobilenet")
    fn = torch.compile(model, backend="geir", options=FP32)
    with pytest.raises(Exception, match="torch.no_grad"):
        fn(*inputs)


def test_unsupported_aten_op_names_op_overload_and_line():
    class Flip(torch.nn.Module):
        def forward(self, x):
            return torch.flip(x, [0])

    with pytest.raises(FxImportError, match=r"node 'flip' \(aten\.flip\.default\) at .*test_torch_frontend\.py:\d+ "
                                            r"`return torch\.flip\(x, \[0\]\)`: ATen op 'aten\.flip\.default'"):
        geir.compile(Flip(), example_inputs=(torch.randn(2, 2),))


def test_shape_only_weights_through_fx():
    from geir.driver.model_import import import_torch

    model, inputs = torch_model("resnet")
    module = import_torch(model, inputs, weights=False)
    cm = geir.compile(module, **FP32)
    assert cm.shape_only
    _, report = cm.profile(cm.random_inputs(), mode="timing")
    assert report["latency_us"] > 0


def test_bad_torch_frontend_name():
    model, inputs = torch_model("resnet")
    with pytest.raises(GeirError, match="torch_frontend must be one of fx, onnx"):
        geir.compile(model, example_inputs=inputs, torch_frontend="tvm")


def test_elementwise_forms_match_eager():
    """Wrapped scalars, alpha, rounding modes, comparisons with promotion, clamp with one
    bound, hardtanh / hardsigmoid / silu / gelu-tanh, a bool mask, slicing, padding."""

    class Ops(torch.nn.Module):
        def forward(self, x, n):
            a = torch.sub(x, 0.5, alpha=2) + torch.div(x, 0.3, rounding_mode="floor")
            b = torch.div(x, -0.7, rounding_mode="trunc") + torch.remainder(x, 0.4)
            c = torch.clamp(x, min=-0.2) + torch.nn.functional.hardtanh(x, -0.5, 0.5)
            d = torch.nn.functional.hardsigmoid(x) + torch.nn.functional.silu(x)
            e = torch.nn.functional.gelu(x, approximate="tanh") * (n > 1)  # i64 compared, bool * f32
            f = torch.nn.functional.pad(x[:, 1:5], (1, 2), value=0.25)[:, :6]
            return a + b + c + d + e + f + torch.maximum(x, x * 0.5)

    x, n = torch.randn(3, 6) * 2, torch.arange(18).reshape(3, 6)
    cm = geir.compile(Ops(), example_inputs=(x, n), opt_level=1, lower=False, precision_mode="must_keep_origin_dtype")
    out = next(iter(cm.run({"x": x.numpy(), "n": n.numpy()}).values()))
    np.testing.assert_allclose(out, _eager(Ops(), (x, n))[0].numpy(), rtol=RTOL, atol=ATOL)
