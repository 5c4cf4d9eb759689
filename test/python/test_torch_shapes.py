"""A torch.export.ExportedProgram through geir.compile, and torch dims into the dynamic-shape
machinery: a torch.export.Dim (or input_shape's `lo~hi` on a torch module) is a shape range,
compiled once at its top (a RangeModel); gears give a torch module one static program per
size; torch.compile's dynamic_mode="range" makes dynamo's marked dims ranges. Outputs are
checked against eager torch at sizes across each range."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import geir
from geir.driver.shape_ranges import RangeModel
from geir.errors import GeirError
from geir.testing.torch_models import torch_model

torch = pytest.importorskip("torch")
from torch.export import Dim, export  # noqa: E402

FP32 = {"precision_mode": "must_keep_origin_dtype"}
RTOL, ATOL = 1e-4, 1e-5


def _names(model, inputs) -> list[str]:
    return list(inspect.signature(model.forward).parameters)[:len(inputs)]


def _at(inputs, axis: int, size: int) -> list:
    """The model's example inputs with dim `axis` at `size` (token ids stay in the vocabulary)."""
    out = []
    for x in inputs:
        shape = list(x.shape)
        shape[axis] = size
        out.append(torch.randint(0, 32, shape) if x.dtype == torch.int64 else torch.randn(shape))
    return out


def _check(cm, model, names, inputs) -> None:
    got = list(cm.run({n: x.numpy() for n, x in zip(names, inputs)}).values())
    with torch.no_grad():
        want = torch.utils._pytree.tree_leaves(model(*inputs))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == tuple(w.shape)
        np.testing.assert_allclose(g, w.numpy(), rtol=RTOL, atol=ATOL)


def test_static_exported_program_compiles_as_its_module_does():
    model, inputs = torch_model("resnet")
    ep = export(model.eval(), tuple(inputs))
    cm = geir.compile(ep, **FP32)
    assert not isinstance(cm, RangeModel) and cm.input_specs()[0][1] == tuple(inputs[0].shape)
    _check(cm, model, ["x"], inputs)
    assert "graph.shape" not in cm.mlir("01_import")  # static: every view's target a constant


@pytest.mark.parametrize("name,axis,hi", [("resnet", 0, 8), ("unet", 0, 4), ("transformer", 0, 8),
                                          ("transformer", 1, 32), ("llama", 0, 4)])
def test_exported_dim_is_a_shape_range(name, axis, hi):
    model, inputs = torch_model(name)
    model.eval()
    names = _names(model, inputs)
    dim = Dim("d", min=1, max=hi)
    ep = export(model, tuple(inputs), dynamic_shapes={n: {axis: dim} for n in names})
    cm = geir.compile(ep, **FP32)
    assert isinstance(cm, RangeModel)  # one program, at the top, for every size in 1..hi
    (d,) = cm.dims
    assert (d.lo, d.hi) == (1, hi) and {a for _, a in d.positions} == {axis}
    assert cm.program.input_specs()[0][1][axis] == hi
    for size in sorted({1, hi // 2 + 1, hi}):
        _check(cm, model, names, _at(inputs, axis, size))


def test_module_range_is_exported_with_a_dim():
    model, inputs = torch_model("resnet")
    cm = geir.compile(model, example_inputs=inputs, input_shape="x:1~8,3,64,64", **FP32)
    assert isinstance(cm, RangeModel) and cm.program.input_specs()[0][1] == (8, 3, 64, 64)
    # the flatten's first size is read from the input, not written as 8
    assert "graph.shape" in cm.program.mlir("01_import")
    for size in (1, 5):
        _check(cm, model, ["x"], _at(inputs, 0, size))


def test_module_gears_are_one_static_program_each():
    model, inputs = torch_model("resnet")
    cm = geir.compile(model, example_inputs=inputs, input_shape="x:-1,3,64,64", dynamic_batch_size="1,4", **FP32)
    assert [p.input_specs()[0][1][0] for p in cm.programs] == [1, 4]
    for size in (1, 4):
        _check(cm, model, ["x"], _at(inputs, 0, size))


def test_dim_without_a_top_is_one_clear_error():
    model, inputs = torch_model("resnet")
    ep = export(model.eval(), tuple(inputs), dynamic_shapes={"x": {0: Dim("batch")}})
    with pytest.raises(GeirError, match=r"input 'x' dim 0 \(s\d+\) has no upper bound: export it with "
                                        r"torch.export.Dim\(\.\.\., max=N\), or give input_shape"):
        geir.compile(ep)


def test_symbolic_size_outside_a_view_names_the_op_and_line():
    model, inputs = torch_model("llama")  # its positions are torch.arange(start, start + s)
    model.eval()
    ep = export(model, tuple(inputs), dynamic_shapes={"input_ids": {1: Dim("s", min=1, max=16)}})
    with pytest.raises(GeirError, match=r"node 'arange' \(aten.arange.start_step\) at .*llama.py:\d+ `.*arange.*`: "
                                        r"'aten.arange.start_step' takes a size computed from a symbolic dim"):
        geir.compile(ep, **FP32)


@pytest.mark.parametrize("shape,message", [
    ("y:1~8,3,64,64", r"input_shape names 'y'; the ExportedProgram's inputs are x"),
    ("x:1~8,3,32,64", r"input_shape gives 'x' the shape \[8, 3, 32, 64\]; the ExportedProgram's is "
                      r"\['s\d+', '3', '64', '64'\] \(only its symbolic dims may be set\)"),
])
def test_input_shape_must_fit_the_exported_program(shape, message):
    model, inputs = torch_model("resnet")
    ep = export(model.eval(), tuple(inputs), dynamic_shapes={"x": {0: Dim("batch", min=1, max=8)}})
    with pytest.raises(GeirError, match=message):
        geir.compile(ep, input_shape=shape, **FP32)


# -- torch.compile: dynamic_mode="range" -------------------------------------------------------


@pytest.mark.parametrize("name", ["resnet", "transformer", "llama"])
def test_marked_dims_compile_one_range_program(name):
    from geir.driver.torch_backend import geir_pieces

    model, inputs = torch_model(name)
    model.eval()
    torch._dynamo.reset()
    fn = torch.compile(model, backend="geir", options={**FP32, "dynamic_mode": "range"})
    with torch.no_grad():
        for size in (8, 2, 5, 3):
            xs = _at(inputs, 0, size)
            for x in xs:
                torch._dynamo.mark_dynamic(x, 0, min=2, max=8)
            got = torch.utils._pytree.tree_leaves(fn(*xs))
            want = torch.utils._pytree.tree_leaves(model(*xs))
            for g, w in zip(got, want):
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=RTOL, atol=ATOL)
    piece = geir_pieces()[-1]
    assert piece.calls == 4 and piece.recompiles == [] and len(piece.programs) == 1  # one compile for 2..8
    assert isinstance(piece.compiled, RangeModel) and piece.compiled.dims[0].hi == 8


def test_range_mode_needs_a_marked_max():
    model, inputs = torch_model("transformer")
    torch._dynamo.reset()
    fn = torch.compile(model.eval(), backend="geir", dynamic=True, options={**FP32, "dynamic_mode": "range"})
    with pytest.raises(GeirError, match=r"dynamic_mode=\"range\": input 'x' dim \d \(s\d+\) has no upper bound: mark "
                                        r"it with torch._dynamo.mark_dynamic\(x, dim, max=N\)"), torch.no_grad():
        fn(*inputs)


def test_unknown_dynamic_mode_is_one_clear_error():
    model, inputs = torch_model("transformer")
    torch._dynamo.reset()
    fn = torch.compile(model.eval(), backend="geir", options={"dynamic_mode": "ranges"})
    with pytest.raises(Exception, match=r"dynamic_mode must be \"gears\" .* or \"range\" .*, not 'ranges'"), \
            torch.no_grad():
        fn(*inputs)


def test_training_with_symbolic_sizes_is_one_clear_error():
    # AOTAutograd's forward saves the batch (an int) for the backward: not a tensor of the program
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    torch._dynamo.reset()
    fn = torch.compile(model, backend="geir", options=FP32)
    x = torch.randn(6, 8)
    torch._dynamo.mark_dynamic(x, 0, min=2, max=8)
    with pytest.raises(GeirError, match=r"output \d+ \(6\) is a size, which a training forward saves for its backward "
                                        r"when sizes are symbolic: geir compiles training steps at static shapes"):
        fn(x).square().mean().backward()
