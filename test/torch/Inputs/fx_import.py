"""Import small torch modules through torch.export and the core-ATen importer
(frontend/fx.py) and write each graph-dialect module with locations, or its error, to
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


def backward_graph(model, inputs):
    """AOTAutograd's backward graph of `model` (core ATen), imported: its inputs are the
    forward's saved tensors and the output's gradient."""
    from torch._decomp import core_aten_decompositions
    from torch._functorch.aot_autograd import aot_module_simplified

    from geir.frontend.fx import import_aten_graph

    graphs = {}

    def backend(gm, example_inputs):
        def keep(kind):
            def compiler(g, _inputs):
                graphs[kind] = g
                return g
            return compiler
        return aot_module_simplified(gm, example_inputs, fw_compiler=keep("forward"), bw_compiler=keep("backward"),
                                     decompositions=core_aten_decompositions())

    torch.compile(model, backend=backend)(*inputs).sum().backward()
    bw = graphs["backward"]
    names = [n.name for n in bw.graph.nodes if n.op == "placeholder"]
    return import_aten_graph(bw, dict(enumerate(names)), {})


CASES = {
    "convbn": (ConvBn, (torch.randn(1, 3, 8, 8),)),
    "attention": (Attention, (torch.randn(2, 4, 8), torch.randn(2, 4, 8))),
    "flip": (Flip, (torch.randn(2, 3),)),
    "branch": (Branch, (torch.randn(2, 3),)),
    "hardswish": (lambda: nn.Sequential(nn.Hardswish(), nn.Hardsigmoid()), (torch.randn(2, 3),)),
    "sdpa": (Sdpa, (*torch.randn(3, 1, 2, 4, 8), torch.ones(1, 1, 4, 4, dtype=torch.bool))),
}


def text(case: str) -> str:
    if case == "conv_backward":
        torch.manual_seed(0)
        x = torch.randn(1, 2, 8, 8, requires_grad=True)  # 8 -> 4 at stride 2: the transpose needs output padding 1
        return print_module(backward_graph(StridedConv(), (x,)), elide=True)
    cls, inputs = CASES[case]
    try:
        module = import_torch(cls().eval(), inputs)
    except GeirError as e:
        return f"error: {e}\n"
    return print_module(module, debuginfo=True)


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for case in sys.argv[2:]:
        with open(os.path.join(out, f"{case}.mlir"), "w") as f:
            f.write(text(case))
