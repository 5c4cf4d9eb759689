"""Import small torch modules (traced, or through torch.export) with the ATen importer
(frontend/fx.py, frontend/fx_export.py) and write each graph-dialect module with locations, or its error, to
OUT/CASE.mlir (one process: importing torch takes seconds).

    python fx_import.py OUT CASE...
"""

import os
import sys

import torch
from torch import nn
from torch.nn import functional as F

from geir.driver.model_import import import_torch
from geir.errors import GeirError
from geir.ir.text import print_module


class ConvBn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        y = F.relu(self.bn(self.conv(x)))
        return self.fc(y.mean((2, 3)))


class Attention(nn.Module):
    """Scaled scores, a softmax, a causal mask with where, a residual: the transformer ops."""

    def forward(self, q, k):
        s = q @ k.transpose(-1, -2) * 0.5
        mask = torch.ones(4, 4, dtype=torch.bool).tril()
        return torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1) + 1


class Flip(nn.Module):
    def forward(self, x):
        return torch.flip(x, [1]) + 1


class Branch(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent: torch.export cannot capture it
            return x + 1
        return x - 1


class StridedConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, stride=2, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


class Sdpa(nn.Module):
    """F.scaled_dot_product_attention: torch.export writes its softmax as _safe_softmax."""

    def forward(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class InPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.act(self.conv(x))
        y += 1
        return y * 2


class InPlaceView(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        y = self.conv(x)
        y.view(-1).relu_()  # mutates y through its view
        return y + 1


def halves_swapped(x):
    half = x.shape[-1] // 2
    return torch.cat((x[..., half:], x[..., :half]), dim=-1)


class Helper(nn.Module):
    """A forward that calls a plain function (LLaMA's rotate_half): its ops are located at the
    function's own lines, the innermost of the model's frames."""

    def forward(self, x):
        return halves_swapped(x) * 2


def training_graph(model, inputs, kind="backward"):
    """AOTAutograd's forward or backward graph of `model` (core ATen, with geir's table as the
    backend uses it), imported: the forward's inputs are the parameters and the inputs, the
    backward's the forward's saved tensors and the output's gradient."""
    from torch._decomp import core_aten_decompositions
    from torch._functorch.aot_autograd import aot_module_simplified

    from geir.frontend.fx import decompositions, import_aten_graph

    graphs = {}

    def backend(gm, example_inputs):
        def keep(kind):
            def compiler(g, _inputs):
                graphs[kind] = g
                return g
            return compiler
        return aot_module_simplified(gm, example_inputs, fw_compiler=keep("forward"), bw_compiler=keep("backward"),
                                     decompositions=decompositions(core_aten_decompositions()))

    torch._dynamo.reset()  # each case its own static graph (a second case would be traced dynamic)
    torch.compile(model, backend=backend, dynamic=False)(*inputs).sum().backward()
    graph = graphs[kind]
    names = [n.name for n in graph.graph.nodes if n.op == "placeholder"]
    return import_aten_graph(graph, dict(enumerate(names)), {})


CASES = {
    "convbn": (ConvBn, (torch.randn(1, 3, 8, 8),)),
    "attention": (Attention, (torch.randn(2, 4, 8), torch.randn(2, 4, 8))),
    "flip": (Flip, (torch.randn(2, 3),)),
    "branch": (Branch, (torch.randn(2, 3),)),
    "hardswish": (lambda: nn.Sequential(nn.Hardswish(), nn.Hardsigmoid()), (torch.randn(2, 3),)),
    "layer_norm": (lambda: nn.LayerNorm(8), (torch.randn(2, 8),)),
    "inplace": (InPlace, (torch.randn(1, 3, 6, 6),)),
    "inplace_view": (InPlaceView, (torch.randn(1, 3, 6, 6),)),
    "helper": (Helper, (torch.randn(2, 8),)),
    "sdpa": (Sdpa, (*torch.randn(3, 1, 2, 4, 8), torch.ones(1, 1, 4, 4, dtype=torch.bool))),
}


class Flat(nn.Module):
    """A view whose first size is the input's batch (`x.shape[0]`)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 2)

    def forward(self, x):
        return self.fc(x.reshape(x.shape[0], -1))


class Positions(nn.Module):
    def forward(self, x):
        return x + torch.arange(x.shape[1])


def exported(case: str) -> str:
    """An ExportedProgram whose input dim is a torch.export.Dim, imported at size 8 (a shape
    range's top); `_static`: exported without the Dim."""
    from torch.export import Dim, export

    from geir.driver.model_import import import_graph

    model, x, axis = (Positions(), torch.randn(2, 5), 1) if case.startswith("symbolic_arange") else \
        (Flat(), torch.randn(2, 3, 4), 0)
    dims = None if case.endswith("_static") else {"x": {axis: Dim("n", min=1, max=8)}}
    ep = export(model.eval(), (x,), dynamic_shapes=dims)
    shape = [8 if i == axis else d for i, d in enumerate(x.shape)] if dims else list(x.shape)
    try:
        module = import_graph(ep, input_shapes={"x": shape})
    except GeirError as e:
        return f"error: {e}\n"
    return print_module(module, elide=True)


def text(case: str) -> str:
    if case.startswith("symbolic_"):
        return exported(case)
    if case == "conv_backward":
        torch.manual_seed(0)
        x = torch.randn(1, 2, 8, 8, requires_grad=True)  # 8 -> 4 at stride 2: the transpose needs output padding 1
        return print_module(training_graph(StridedConv(), (x,)), elide=True)
    if case == "batch_norm_train":  # batch statistics, running statistics updated
        x = torch.randn(4, 3, 2, 2, requires_grad=True)
        return print_module(training_graph(nn.BatchNorm2d(3).train(), (x,), "forward"), elide=True)
    if case == "layer_norm_train":  # the mean and 1 / std the backward takes
        x = torch.randn(2, 8, requires_grad=True)
        return print_module(training_graph(nn.LayerNorm(8).train(), (x,), "forward"), elide=True)
    folded = case.endswith("_folded")  # as geir.compile imports it for graph-simplify
    cls, inputs = CASES[case.removesuffix("_folded")]
    try:
        module = import_torch(cls().eval(), inputs, fold_batch_norm=folded)
    except GeirError as e:
        return f"error: {e}\n"
    return print_module(module, debuginfo=True)


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for case in sys.argv[2:]:
        with open(os.path.join(out, f"{case}.mlir"), "w") as f:
            f.write(text(case))
