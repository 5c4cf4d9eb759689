"""The PyTorch frontend without ONNX: the core-ATen importer (frontend/fx.py), geir.compile of a
torch.nn.Module (traced to ATen, or through torch.export), and torch.compile(backend="geir")
(driver/torch_backend.py). Numbers are checked against eager torch in fp32."""

import numpy as np
import pytest
import torch

import geir
from geir.dialects import ascend as a
from geir.dialects import graph as g
from geir.errors import GeirError
from geir.frontend.fx import FxImportError
from geir.driver.torch_backend import geir_pieces, step_report
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


@pytest.fixture
def new_pieces():
    """The pieces compiled since the test started (earlier tests' may still be alive)."""
    before = geir_pieces()  # held, so no new piece can take one's id
    return lambda: [p for p in geir_pieces() if not any(p is q for q in before)]


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
    # the stem's conv, its batch norm folded in (FxImporter.batch_norm_fold), located at both nodes' lines
    assert "graph.conv" in imported and 'loc(fused["conv2d"("' in imported and "torch_models.py" in imported


@pytest.mark.parametrize("name", TORCH_MODELS)
def test_exported_program_imports_as_exported_like_decomposed(name, caplog):
    """Each suite model's torch.export program has a converter for every op, so it skips torch's
    decomposition (frontend/fx_export.py); the decomposed road gives as many kernels and the
    same numbers."""
    import logging

    from geir.frontend.fx_export import import_exported

    model, inputs = torch_model(name)
    ep = torch.export.export(model.eval(), tuple(inputs))
    with caplog.at_level(logging.DEBUG, logger="geir.torch"):
        direct = import_exported(ep)
    assert "imported the program as exported" in caplog.text, caplog.text
    decomposed = import_exported(ep, decompose=True)
    compiled = [geir.compile(m, **FP32) for m in (direct, decomposed)]
    assert _kernels(compiled[0]) == _kernels(compiled[1]) > 0
    feeds = {n: t.numpy() for (n, _, _), t in zip(compiled[0].input_specs(), inputs)}
    outs = [list(cm.run(feeds).values()) for cm in compiled]
    for x, y, r in zip(*outs, _eager(model, inputs)):
        np.testing.assert_allclose(x, y, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(x, r.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", TORCH_MODELS)
def test_traced_module_imports_as_its_exported_program_does(name, caplog, monkeypatch):
    """geir.compile traces a module without torch.export's program around the trace
    (driver/model_import.py trace_module): the same module, weights and locations included."""
    import logging

    from geir.driver import model_import
    from geir.ir.text import print_module

    model, inputs = torch_model(name)
    with caplog.at_level(logging.DEBUG, logger="geir.torch"):
        traced = model_import.import_torch(model, inputs)
    assert "imported the traced graph as it is" in caplog.text, caplog.text
    monkeypatch.setattr(model_import, "trace_module", lambda *_: None)
    exported = model_import.import_torch(model, inputs)
    assert print_module(traced, debuginfo=True) == print_module(exported, debuginfo=True)


class _CountsCalls(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls.add_(1)
        return x * 2


class _TensorAttribute(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.tensor([1.0, 2.0, 3.0])  # neither a parameter nor a buffer

    def forward(self, x):
        return x * self.scale


class _VarArgs(torch.nn.Module):
    def forward(self, *xs):
        return xs[0] + xs[1]


@pytest.mark.parametrize("cls, n_inputs, why", [
    (_CountsCalls, 1, "node 'add_': an in-place op on a program input, parameter or buffer"),
    (_TensorAttribute, 1, "the trace failed"),
    (_VarArgs, 2, "the inputs are not the forward's positional parameters"),
])
def test_module_the_trace_does_not_take_goes_through_torch_export(cls, n_inputs, why, caplog):
    import logging

    inputs = tuple(torch.randn(2, 3) for _ in range(n_inputs))
    with caplog.at_level(logging.DEBUG, logger="geir.torch"):
        cm = geir.compile(cls(), example_inputs=inputs, opt_level=1, lower=False,
                          precision_mode="must_keep_origin_dtype")
    assert f"capturing the module with torch.export instead: {why}" in caplog.text, caplog.text
    feeds = {n: t.numpy() for (n, _, _), t in zip(cm.input_specs(), inputs)}
    out = list(cm.run(feeds).values())[-1]  # after the mutated buffer torch.export returns first
    np.testing.assert_allclose(out, _eager(cls(), inputs)[0].numpy(), rtol=RTOL, atol=ATOL)


class _ReadsBatchCount(torch.nn.BatchNorm1d):
    """A batch norm whose eval forward reads the counter torch's reads in training only."""

    def forward(self, x):
        return super().forward(x) + self.num_batches_tracked.float()


def test_batch_norm_counters_are_left_out_of_the_trace_unless_read(caplog):
    import logging

    from geir.driver.model_import import _capture, trace_module

    model, inputs = torch_model("resnet")
    with _capture():
        _, _, constants = trace_module(model.eval(), inputs)
    names = [n for n, _ in constants.values()]
    assert any(n.endswith("running_var") for n in names)
    assert not any(n.endswith("num_batches_tracked") for n in names)
    # a forward that reads one anyway: the trace holds it as an attribute, so torch.export captures it
    model = _ReadsBatchCount(3).eval()
    model.num_batches_tracked.fill_(7)
    x = torch.randn(4, 3)
    with _capture():
        gm, _, _ = trace_module(model, (x,))
    assert any(n.op == "get_attr" for n in gm.graph.nodes)
    with caplog.at_level(logging.DEBUG, logger="geir.torch"):
        cm = geir.compile(model, example_inputs=(x,), opt_level=1, lower=False,
                          precision_mode="must_keep_origin_dtype")
    assert "torch.export instead: the forward reads a tensor attribute" in caplog.text, caplog.text
    out = next(iter(cm.run({"x": x.numpy()}).values()))
    np.testing.assert_allclose(out, _eager(model, (x,))[0].numpy(), rtol=RTOL, atol=ATOL)


class _ConvBatchNorms(torch.nn.Module):
    """conv -> bn -> relu, a biased conv -> bn, and a conv whose result a residual add reads too."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8)
        self.c2, self.b2 = torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8)
        self.c3, self.b3 = torch.nn.Conv2d(8, 8, 1), torch.nn.BatchNorm2d(8)
        for bn in (self.b1, self.b2, self.b3):  # running statistics and affine parameters away from 0 / 1
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.5, 0.5)

    def forward(self, x):
        y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        z = self.c3(y)
        return self.b3(z) + z


@pytest.mark.parametrize("options, kept", [
    ({}, 1),  # folded as read but the third, whose conv's result the add reads too
    ({"disable_passes": ["graph-simplify"]}, 3),  # the pipeline keeps batch norms: the import does
    ({"opt_level": 0}, 3),
])
def test_conv_batch_norm_pairs_fold_as_read_where_simplify_would(options, kept):
    torch.manual_seed(0)
    model, x = _ConvBatchNorms().eval(), torch.randn(2, 3, 8, 8)
    cm = geir.compile(model, example_inputs=(x,), keep_stages=True, **{**FP32, **options})
    imported = cm.stages["01_import"]
    assert sum(isinstance(op, g.BatchNormOp) for op in imported.walk()) == kept
    assert sum(isinstance(op, g.ConvOp) for op in imported.walk()) == 3
    if kept == 1:  # the folded convs stand for both nodes; no parameter of theirs is left behind
        text = cm.mlir("01_import")
        assert 'fused["conv2d"(' in text and '"batch_norm"(' in text
        assert "b1.running_mean" not in text and "c1.weight_folded" in text and "c3.weight_folded" not in text
    out = next(iter(cm.run({"x": x.numpy()}).values()))
    np.testing.assert_allclose(out, _eager(model, (x,))[0].numpy(), rtol=RTOL, atol=ATOL)


def test_conv_batch_norm_pairs_stay_with_shape_only_weights():
    from geir.driver.model_import import import_torch

    model = _ConvBatchNorms().eval()
    module = import_torch(model, (torch.randn(2, 3, 8, 8),), weights=False, fold_batch_norm=True)
    assert sum(isinstance(op, g.BatchNormOp) for op in module.walk()) == 3  # no values to fold


def test_linear_imports_as_onnx_writes_it():
    from geir.driver.model_import import import_torch

    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).eval()
    x = torch.randn(3, 6)
    module = import_torch(model, (x,))
    gemms = [op for op in module.walk() if isinstance(op, g.GemmOp)]
    assert len(gemms) == 2 and all(op.attrs()["trans_b"] == 1 for op in gemms)
    assert not any(isinstance(op, g.TransposeOp | g.MatMulOp) for op in module.walk())
    cm = geir.compile(model, example_inputs=(x,), **FP32)
    out = next(iter(cm.run({"input": x.numpy()}).values()))
    np.testing.assert_allclose(out, _eager(model, (x,))[0].numpy(), rtol=RTOL, atol=ATOL)
    # of a 3-d input, one matmul over its leading dims (no view to 2-d and back), the bias added
    x = torch.randn(2, 3, 6)
    module = import_torch(model, (x,))
    assert sum(isinstance(op, g.MatMulOp) for op in module.walk()) == 2
    assert not any(isinstance(op, g.ReshapeOp | g.GemmOp) for op in module.walk())
    cm = geir.compile(model, example_inputs=(x,), **FP32)
    out = next(iter(cm.run({"input": x.numpy()}).values()))
    np.testing.assert_allclose(out, _eager(model, (x,))[0].numpy(), rtol=RTOL, atol=ATOL)


class _InPlaceThroughAView(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        y.view(-1)[:5].relu_()  # y changes through a view of it
        z = y + 1
        z.add_(y)  # on a tensor without views; the program is decomposed for the relu_ above
        return z


def test_in_place_op_through_a_view_is_decomposed_and_matches_eager(caplog):
    import logging

    x = torch.randn(3, 4)
    with caplog.at_level(logging.DEBUG, logger="geir.torch"):
        cm = geir.compile(_InPlaceThroughAView(), example_inputs=(x,), opt_level=1, lower=False,
                          precision_mode="must_keep_origin_dtype")
    assert "an in-place op on a tensor that has views" in caplog.text, caplog.text
    out = next(iter(cm.run({"x": x.numpy()}).values()))
    np.testing.assert_allclose(out, _eager(_InPlaceThroughAView(), (x,))[0].numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", ["mobilenet", "llama"])
def test_fx_and_onnx_paths_agree_on_kernels_and_numbers(name):
    """No more kernels on the FX path (LLaMA: core ATen's view / mm / bmm forms canonicalized
    to what the recognisers and the head split take, graph-canonicalize)."""
    model, inputs = torch_model(name)
    fx = geir.compile(model, example_inputs=inputs, **FP32)
    ox = geir.compile(model, example_inputs=inputs, torch_frontend="onnx", **FP32)
    feeds_fx = {fx.input_specs()[0][0]: inputs[0].numpy()}
    feeds_ox = {ox.input_specs()[0][0]: inputs[0].numpy()}
    for a, b in zip(fx.run(feeds_fx).values(), ox.run(feeds_ox).values()):
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


def test_graph_break_pieces_run_in_order(new_pieces):
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
    assert len([p for p in new_pieces() if p.calls]) >= 2


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


class SmallCNN(torch.nn.Module):
    """Two convolutions (one strided), ReLU, a global mean, a linear classifier."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.c2(torch.relu(self.c1(x)))).mean((2, 3)))


def _sgd_steps(model, inputs, target, steps, loss_of, pieces, profile=False):
    """`steps` SGD steps of `model` with geir's forward and backward. Before each step an eager
    copy takes the same weights; the step's loss and every parameter's gradient must match the
    copy's (fp32: loss to 1e-5, each gradient to 1e-4 of its norm). Comparing at the same
    weights keeps the check tight: two fp32 trajectories drift apart on their own (measured
    on the tiny LLaMA, lr 0.05: the losses of independent runs differ by up to 9e-5 of the loss
    after 10 steps, the first step's gradients by 2e-6)."""
    import copy

    eager = copy.deepcopy(model)
    fn = torch.compile(model, backend="geir", options={**FP32, "profile": profile})
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(steps):
        eager.load_state_dict(model.state_dict())
        opt.zero_grad()
        eager.zero_grad()
        loss = loss_of(fn(*inputs), target)
        loss.backward()
        ref = loss_of(eager(*inputs), target)
        ref.backward()
        np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-5, err_msg=f"step {step}")
        for (name, p), q in zip(model.named_parameters(), eager.parameters()):
            err = float((p.grad - q.grad).norm() / max(float(q.grad.norm()), 1e-12))
            assert err < 1e-4, (step, name, err)
        opt.step()
    return {piece.kind: piece for piece in pieces()}


def test_training_small_cnn_matches_eager_for_20_sgd_steps(new_pieces):
    torch.manual_seed(0)
    x, target = torch.randn(4, 1, 8, 8), torch.randint(0, 10, (4,))
    pieces = _sgd_steps(SmallCNN(), (x,), target, 20, torch.nn.functional.cross_entropy, new_pieces,
                        profile=True)
    fw, bw = pieces["forward"], pieces["backward"]
    assert fw.calls == bw.calls == 20 and fw.recompiles == [] and len(fw.programs) == len(bw.programs) == 1
    assert _kernels(fw.compiled) > 0 and _kernels(bw.compiled) > 0  # geir's kernels both ways
    assert fw.last_report["latency_us"] > 0 and bw.last_report["latency_us"] > 0  # both graphs timed
    step = step_report(new_pieces(), batch=4)  # the step: the two graphs one after the other
    assert step["forward"] is fw.last_report and step["backward"] is bw.last_report
    assert step["latency_us"] == fw.last_report["latency_us"] + bw.last_report["latency_us"]
    assert step["kernel_count"] == fw.last_report["kernel_count"] + bw.last_report["kernel_count"]
    assert step["samples_per_s"] == pytest.approx(4e6 / step["latency_us"])


def test_step_report_needs_a_profiled_training_step(new_pieces):
    fn = torch.compile(SmallCNN(), backend="geir", options={**FP32, "profile": True})
    with torch.no_grad():
        fn(torch.randn(2, 1, 8, 8))  # inference: a forward piece only
    with pytest.raises(GeirError, match="no profiled training step"):
        step_report(new_pieces())


def test_training_tiny_llama_matches_eager_for_20_sgd_steps(new_pieces):
    model, (ids,) = torch_model("llama")
    model.train()

    def loss_of(outputs, target):
        logits = outputs[0]
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))

    pieces = _sgd_steps(model, (ids,), torch.roll(ids, -1, 1), 20, loss_of, new_pieces)
    assert pieces["backward"].calls == 20 and _kernels(pieces["backward"].compiled) > 0


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
            d = torch.nn.functional.hardsigmoid(x) + torch.nn.functional.silu(x) + torch.nn.functional.hardswish(x)
            e = torch.nn.functional.gelu(x, approximate="tanh") * (n > 1)  # i64 compared, bool * f32
            f = torch.nn.functional.pad(x[:, 1:5], (1, 2), value=0.25)[:, :6]
            return a + b + c + d + e + f + torch.maximum(x, x * 0.5)

    x, n = torch.randn(3, 6) * 2, torch.arange(18).reshape(3, 6)
    cm = geir.compile(Ops(), example_inputs=(x, n), opt_level=1, lower=False, precision_mode="must_keep_origin_dtype")
    out = next(iter(cm.run({"x": x.numpy(), "n": n.numpy()}).values()))
    np.testing.assert_allclose(out, _eager(Ops(), (x, n))[0].numpy(), rtol=RTOL, atol=ATOL)


def test_dynamic_batch_compiles_one_program_per_shape_without_dynamo_recompiles(new_pieces):
    model, _ = torch_model("resnet")
    fn = torch.compile(model, backend="geir", dynamic=True, options=FP32)
    with torch.no_grad():
        for batch in (2, 3, 4, 3):  # torch specialises 0 and 1, so the symbolic graph starts at 2
            x = torch.randn(batch, 3, 64, 64)
            np.testing.assert_allclose(fn(x).numpy(), _eager(model, (x,))[0].numpy(), rtol=RTOL, atol=ATOL)
    piece, = new_pieces()  # one graph from dynamo: no recompile after the first
    assert piece.dynamic and piece.calls == 4 and piece.recompiles == []
    shapes = [next(e[0] for e in key if isinstance(e, tuple)) for key in piece.programs]
    assert sorted(shape[0] for shape in shapes) == [2, 3, 4]  # one static program per batch


def test_dynamic_batch_from_1_is_one_graph_when_torch_does_not_specialise_size_1(new_pieces):
    """Batches 1..4 in one dynamo graph: torch's own setting that keeps size 1 symbolic
    (`backed_size_oblivious`) is all it takes; without it batch 1 is a graph of its own."""
    import torch.fx.experimental._config as fx_config

    model, _ = torch_model("resnet")
    with fx_config.patch(backed_size_oblivious=True), torch.no_grad():
        fn = torch.compile(model, backend="geir", dynamic=True, options=FP32)
        for batch in (1, 2, 3, 4):
            x = torch.randn(batch, 3, 64, 64)
            np.testing.assert_allclose(fn(x).numpy(), _eager(model, (x,))[0].numpy(), rtol=RTOL, atol=ATOL)
    piece, = new_pieces()
    assert piece.dynamic and piece.calls == 4 and piece.recompiles == [] and len(piece.programs) == 4


def test_dynamo_recompile_names_the_failed_guard(new_pieces, caplog):
    model, _ = torch_model("mobilenet")
    fn = torch.compile(model, backend="geir", dynamic=False, options=FP32)
    with torch.no_grad(), caplog.at_level("INFO", logger="geir.torch"):
        fn(torch.randn(2, 3, 64, 64))
        fn(torch.randn(3, 3, 64, 64))  # another batch, static shapes: a size guard fails
    first, second = new_pieces()
    assert first.guard_failure is None
    assert "size mismatch at index 0. expected 2, actual 3" in second.guard_failure
    assert "dynamo compiles again" in caplog.text


class BatchNormCNN(torch.nn.Module):
    """Conv, batch norm (batch statistics in training, running statistics updated), ReLU, a
    global mean and a classifier."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 8, 3, padding=1, bias=False)  # a bias before BN has no gradient
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.c1(x))).mean((2, 3)))


def test_training_with_batch_norm_matches_eager(new_pieces):
    import copy

    torch.manual_seed(0)
    x, target = torch.randn(4, 1, 8, 8), torch.randint(0, 10, (4,))
    model = BatchNormCNN()
    before = copy.deepcopy(model)
    _sgd_steps(model, (x,), target, 5, torch.nn.functional.cross_entropy, new_pieces)
    # the running statistics: five steps' updates, as eager's from the same start
    eager = before
    opt = torch.optim.SGD(eager.parameters(), lr=0.05)
    for _ in range(5):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(eager(x), target).backward()
        opt.step()
    np.testing.assert_allclose(model.bn.running_mean, eager.bn.running_mean, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(model.bn.running_var, eager.bn.running_var, rtol=1e-4, atol=1e-6)


def test_training_with_layer_norm_matches_eager(new_pieces):
    from geir.testing.transformer import block_reference

    model = block_reference(32, 4).train()  # nn.MultiheadAttention (dropout 0), LayerNorm, GELU MLP
    torch.manual_seed(1)
    x = torch.randn(2, 8, 32)

    def loss_of(y, target):
        return torch.nn.functional.mse_loss(y, target)

    pieces = _sgd_steps(model, (x,), torch.randn(2, 8, 32), 3, loss_of, new_pieces)
    assert pieces["backward"].calls == 3


def test_training_through_max_pool_says_what_is_missing():
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.MaxPool2d(2))
    fn = torch.compile(model, backend="geir", options=FP32)
    with pytest.raises(Exception, match=r"result 1 of 'max_pool2d_with_indices' \(aten\.max_pool2d_with_indices"
                                        r"\.default\) is used; geir does not compute it \(max-pool indices"):
        fn(torch.randn(2, 1, 8, 8)).sum().backward()


def test_one_sided_clamp_in_bf16():
    """A missing clamp bound is the dtype's extreme: ml_dtypes' for bfloat16 (numpy has none)."""

    class Clamp(torch.nn.Module):
        def forward(self, x):
            return torch.clamp(x, min=-0.5) + torch.clamp(x, max=0.25)

    x = torch.randn(4, 8).to(torch.bfloat16)
    cm = geir.compile(Clamp(), example_inputs=(x,), opt_level=1, lower=False)
    out = next(iter(cm.run({"x": geir.frontend.fx.to_numpy(x)}).values()))
    np.testing.assert_array_equal(out.astype(np.float32), _eager(Clamp(), (x,))[0].float().numpy())


@pytest.mark.parametrize("mode", ["must_keep_origin_dtype", "force_fp16"])
def test_sdpa_with_a_fully_masked_row_matches_eager(mode):
    """scaled_dot_product_attention's softmax is _safe_softmax: a query row whose keys are all
    masked gives 0, not NaN. geir keeps it as graph.safe_softmax through its kernel; without
    a mask it is recognised as one graph.attention."""

    class Sdpa(torch.nn.Module):
        def forward(self, q, k, v, mask):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask) + \
                torch.nn.functional.scaled_dot_product_attention(k, q, v)

    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 4, 16, 32)
    mask = torch.rand(2, 1, 16, 16) > 0.3
    mask[0, 0, 5] = False  # query 5 of batch 0 sees no key
    masked_only = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert masked_only[0, :, 5].abs().max() == 0  # eager: the row is zeros
    cm = geir.compile(Sdpa(), example_inputs=(q, k, v, mask), opt_level=3, precision_mode=mode)
    fused = [op for name in cm.stages if name.endswith("_fuse") for op in cm.stages[name].walk()]
    assert sum(isinstance(op, g.AttentionOp) for op in fused) == 1
    assert sum(isinstance(op, g.SafeSoftmaxOp) for op in fused) == 1
    out = next(iter(cm.run({"q": q.numpy(), "k": k.numpy(), "v": v.numpy(), "mask": mask.numpy()}).values()))
    tol = (RTOL, ATOL) if mode == "must_keep_origin_dtype" else (2e-2, 2e-2)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, _eager(Sdpa(), (q, k, v, mask))[0].numpy(), rtol=tol[0], atol=tol[1])


def test_training_through_sdpa_matches_eager(new_pieces):
    """AOTAutograd keeps attention's backward as one fused op
    (_scaled_dot_product_flash_attention_for_cpu_backward); geir writes its gradients as
    matmuls of the saved probabilities: a boolean mask and a causal one, gradients equal."""

    class Attn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.o = torch.nn.Linear(32, 32), torch.nn.Linear(32, 32)

        def forward(self, x, k, v, mask):
            y = torch.nn.functional.scaled_dot_product_attention(self.q(x), k, v, attn_mask=mask)
            z = torch.nn.functional.scaled_dot_product_attention(self.q(x), self.o(k), v, is_causal=True)
            return (self.o(y) ** 2).mean() + z.mean()

    torch.manual_seed(0)
    model = Attn()
    x, k, v = torch.randn(3, 2, 4, 16, 32)
    mask = torch.rand(2, 1, 16, 16) > 0.3
    loss = torch.compile(model, backend="geir", options=FP32)(x, k, v, mask)
    loss.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    ref = model(x, k, v, mask)
    ref.backward()
    assert len(new_pieces()) == 2  # the forward and the backward, both geir's
    np.testing.assert_allclose(loss.item(), ref.item(), rtol=RTOL)
    for got, p in zip(grads, model.parameters()):
        np.testing.assert_allclose(got.numpy(), p.grad.numpy(), rtol=RTOL, atol=ATOL * p.grad.abs().max().item())


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_backward_from_a_real_log_sum_exp(causal):
    """The same backward op given the forward's log-sum-exp ([B, H, S], eager's kernel) rather
    than the probabilities the decomposed forward saves: P is recomputed with the mask or
    the causal band."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from geir.frontend.fx import import_aten_graph

    torch.manual_seed(0)
    q, k, v, d_out = torch.randn(4, 2, 3, 8, 16)
    mask = torch.where(torch.rand(8, 8) > 0.3, 0.0, float("-inf"))
    mask[:, 0] = 0.0
    if causal:
        mask = torch.zeros(8, 8)  # the band alone
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, is_causal=causal,
                                                                          attn_mask=None if causal else mask)
    assert lse.dim() == 3

    def backward(d_out, q, k, v, out, lse, mask):
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
            d_out, q, k, v, out, lse, 0.0, causal, attn_mask=None if causal else mask)

    args = (d_out, q, k, v, out, lse, mask)
    gm = make_fx(backward, tracing_mode="fake")(*args)
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    cm = geir.compile(import_aten_graph(gm, dict(enumerate(names)), {}), **FP32)
    got = list(cm.run({n: a.contiguous().numpy() for n, a in zip(names, args)}).values())
    for g_, r in zip(got, backward(*args)):
        np.testing.assert_allclose(g_, r.numpy(), rtol=RTOL, atol=1e-4)


@pytest.mark.parametrize("correction", [0, 1, 3])
def test_var_and_var_mean_match_eager(correction):
    class Stats(torch.nn.Module):
        def forward(self, x):
            v, m = torch.var_mean(x, dim=(0, 2), correction=correction, keepdim=True)
            return v + m, torch.var(x, dim=-1, correction=correction), torch.var(x)

    x = torch.randn(3, 4, 5) * 2 + 1
    cm = geir.compile(Stats(), example_inputs=(x,), **FP32)
    got = list(cm.run({cm.input_specs()[0][0]: x.numpy()}).values())
    for g_, want in zip(got, Stats()(x)):
        np.testing.assert_allclose(g_, want.numpy(), rtol=1e-5, atol=1e-6)


def test_torchscript_export_failure_is_one_clear_error():
    """torch_frontend="onnx" on a module the TorchScript exporter cannot trace (this encoder
    layer's attention): torch's message, no traceback; the default FX path takes it."""
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, norm_first=True).eval()
    x = torch.randn(2, 8, 16)
    with pytest.raises(GeirError, match=r"torch\.onnx\.export \(TorchScript\) could not export the model: .*is_causal"):
        geir.compile(layer, example_inputs=(x,), torch_frontend="onnx")
    cm = geir.compile(layer, example_inputs=(x,), **FP32)
    out = next(iter(cm.run({cm.input_specs()[0][0]: x.numpy()}).values()))
    np.testing.assert_allclose(out, _eager(layer, (x,))[0].numpy(), rtol=RTOL, atol=ATOL)
