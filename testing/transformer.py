"""PyTorch transformer blocks exported with the TorchScript ONNX exporter.

The TorchScript exporter is what most deployed ONNX files come from: it
decomposes LayerNorm (opset < 17) into ReduceMean/Sub/Pow/Sqrt/Div, computes
reshape targets with Shape/Gather/Concat and leaves Identity/Dropout behind,
which is exactly the work graph simplification and fusion must remove.
torch is imported lazily; it is part of the test extra.
"""

from __future__ import annotations

import io
import warnings
from functools import cache

import onnx


def _block_class():
    import torch

    class Block(torch.nn.Module):
        """Post-norm encoder block: MHA + residual + LN, GELU MLP + residual + LN."""

        def __init__(self, d_model: int, heads: int):
            super().__init__()
            self.attn = torch.nn.MultiheadAttention(d_model, heads, batch_first=True)
            self.ln1 = torch.nn.LayerNorm(d_model)
            self.ln2 = torch.nn.LayerNorm(d_model)
            self.ff = torch.nn.Sequential(
                torch.nn.Linear(d_model, 4 * d_model), torch.nn.GELU(), torch.nn.Linear(4 * d_model, d_model)
            )

        def forward(self, x):
            a, _ = self.attn(x, x, x, need_weights=False)
            x = self.ln1(x + a)
            return self.ln2(x + self.ff(x))

    return Block


@cache
def transformer_onnx(
    layers: int = 1, d_model: int = 64, heads: int = 4, seq: int = 16, batch: int = 1, opset: int = 14, seed: int = 0
) -> onnx.ModelProto:
    """A stack of `layers` blocks exported with the TorchScript exporter."""
    import torch

    torch.manual_seed(seed)
    block = _block_class()
    model = torch.nn.Sequential(*[block(d_model, heads) for _ in range(layers)]).eval()
    x = torch.randn(batch, seq, d_model)
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), f, dynamo=False, opset_version=opset, input_names=["x"], output_names=["y"])
    return onnx.load_from_string(f.getvalue())
