"""Small torch models in the styles of the suite's CNNs, for the PyTorch frontend's tests and
bench (frontend/fx.py, driver/torch_backend.py): written in plain torch, random weights,
eval mode. The transformer block and the LLaMA decoder are testing/transformer.py's and
testing/llama.py's.

    model, inputs = torch_model("resnet", batch=2)     # a module and example inputs
    TORCH_MODELS                                       # the names

torch is imported lazily; it is part of the test extra.
"""

from __future__ import annotations

from typing import Any

TORCH_MODELS = ("resnet", "mobilenet", "unet", "transformer", "llama")


def _classes():
    import torch
    from torch import nn
    from torch.nn import functional as F

    class Basic(nn.Module):
        """ResNet's basic block: two 3x3 conv-bn, a projection shortcut when the shape changes."""

        def __init__(self, cin: int, cout: int, stride: int):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)), inplace=True)
            return F.relu(self.bn2(self.conv2(y)) + self.down(x))

    class ResNet(nn.Module):
        def __init__(self, classes: int = 10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
                                      nn.MaxPool2d(3, 2, 1))
            self.layers = nn.Sequential(Basic(16, 16, 1), Basic(16, 32, 2), Basic(32, 64, 2))
            self.fc = nn.Linear(64, classes)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    class Inverted(nn.Module):
        """MobileNet-v2/v3's inverted residual: expand 1x1, depthwise 3x3, project 1x1."""

        def __init__(self, cin: int, cout: int, stride: int, expand: int, act: type):
            super().__init__()
            mid = cin * expand
            self.body = nn.Sequential(
                nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), act(),
                nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid), act(),
                nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            y = self.body(x)
            return x + y if self.residual else y

    class MobileNet(nn.Module):
        def __init__(self, classes: int = 10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
            self.blocks = nn.Sequential(Inverted(16, 16, 1, 2, nn.ReLU6), Inverted(16, 24, 2, 4, nn.ReLU6),
                                        Inverted(24, 24, 1, 3, nn.Hardswish))
            self.head = nn.Sequential(nn.Linear(24, 32), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(32, classes))

        def forward(self, x):
            x = self.blocks(self.stem(x))
            return self.head(x.mean((2, 3)))

    def double_conv(cin: int, cout: int):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    class UNet(nn.Module):
        """Two levels down, a transposed-conv and a nearest-upsample way up, skips concatenated."""

        def __init__(self, cin: int = 3, classes: int = 2):
            super().__init__()
            self.d1, self.d2, self.mid = double_conv(cin, 8), double_conv(8, 16), double_conv(16, 32)
            self.up2 = nn.ConvTranspose2d(32, 16, 2, stride=2)
            self.u2 = double_conv(32, 16)
            self.u1 = double_conv(16 + 8, 8)
            self.out = nn.Conv2d(8, classes, 1)

        def forward(self, x):
            a = self.d1(x)
            b = self.d2(F.max_pool2d(a, 2))
            m = self.mid(F.max_pool2d(b, 2))
            y = self.u2(torch.cat([self.up2(m), b], 1))
            y = self.u1(torch.cat([F.interpolate(y, scale_factor=2, mode="nearest"), a], 1))
            return torch.sigmoid(self.out(y))

    return {"resnet": ResNet, "mobilenet": MobileNet, "unet": UNet}


def torch_model(name: str, batch: int = 2, seed: int = 0) -> tuple[Any, tuple]:
    """(module in eval mode with seeded random weights and batch-norm statistics, example
    inputs) of one of TORCH_MODELS."""
    import torch

    if name not in TORCH_MODELS:
        raise ValueError(f"unknown torch model '{name}' (known: {', '.join(TORCH_MODELS)})")
    torch.manual_seed(seed)
    if name == "transformer":
        from geir.testing.transformer import block_reference

        return block_reference(64, 4, seed=seed), (torch.randn(batch, 16, 64),)
    if name == "llama":
        from geir.models.llama import CONFIGS
        from geir.testing.llama import llama_reference

        model = llama_reference(CONFIGS["tiny"], seed=seed)
        return model, (torch.randint(0, CONFIGS["tiny"].vocab, (batch, 8)),)
    model = _classes()[name]()
    with torch.no_grad():  # batch-norm statistics that are not the identity
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    size = 32 if name == "unet" else 64
    return model.eval(), (torch.randn(batch, 3, size, size),)
