"""Where a model builder's weights come from: a state dict, seeded random values, or
shape-only placeholders (no bytes: frontend/builder.py's `weight(name, shape=..., dtype=...)`).

Names and shapes are the PyTorch module's (`model.layers.0.self_attn.q_proj.weight`, a
Linear's weight [out, in]); a Linear's weight goes into the graph transposed to [in, out],
as the PyTorch exporters store it for MatMul, under the same name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from geir.errors import GraphBuildError
from geir.frontend.builder import GraphBuilder

MODES = ("random", "shape-only")
"""The weight sources named by a string; a mapping is a state dict."""


class Weights:
    """The weights of one model: `value(b, name, shape)` puts one into builder `b`. Every name
    asked for is recorded, so `check_used()` can reject a state dict with names the model
    does not have (a typo, another model's dict)."""

    def __init__(self, source: None | str | Mapping[str, Any], dtype: np.dtype, seed: int = 0):
        if source is None:
            source = "random"
        if isinstance(source, str) and source not in MODES:
            raise GraphBuildError(f"weights '{source}' is not a weight source: give a state dict (a mapping of "
                                  f"names to arrays), None, or one of {', '.join(MODES)}")
        if not isinstance(source, str | Mapping):
            raise GraphBuildError(f"weights must be a state dict (a mapping of names to arrays), None, or one of "
                                  f"{', '.join(MODES)}; got a {type(source).__name__}")
        self.source = source
        self.dtype = dtype
        self.rng = np.random.default_rng(seed)
        self.cache: dict[str, np.ndarray] = {}  # one random draw per name, shared by programs
        self.asked: set[str] = set()

    @property
    def shape_only(self) -> bool:
        return self.source == "shape-only"

    def array(self, name: str, shape: tuple[int, ...], init: str) -> np.ndarray:
        """The weight `name` of the torch `shape`, as an array of the model's dtype. `init`
        says how a random one is drawn: "linear" (normal / sqrt(fan in)), "embedding"
        (normal), "ones" (a norm's scale), "zeros" (a bias)."""
        self.asked.add(name)
        if name in self.cache:
            return self.cache[name]
        if isinstance(self.source, Mapping):
            if name not in self.source:
                raise GraphBuildError(f"the state dict has no weight '{name}' (shape {list(shape)})")
            try:
                array = np.asarray(self.source[name], dtype=np.float32)
            except (TypeError, ValueError, RuntimeError) as e:
                raise GraphBuildError(f"weight '{name}' is not an array: {e}") from None
            if array.shape != shape:
                raise GraphBuildError(f"weight '{name}' has shape {list(array.shape)}; the model needs {list(shape)}")
        elif init == "ones":
            array = np.ones(shape, np.float32)
        elif init == "zeros":
            array = np.zeros(shape, np.float32)
        else:
            scale = 1.0 / np.sqrt(shape[-1]) if init == "linear" else 1.0
            array = self.rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)
        self.cache[name] = array = array.astype(self.dtype)
        return array

    def value(self, b: GraphBuilder, name: str, shape: tuple[int, ...], init: str = "linear",
              transpose: bool = False) -> SSAValue:
        """Weight `name` (torch `shape`) in builder `b`: transposed for a Linear's MatMul."""
        if self.shape_only:
            self.asked.add(name)
            return b.weight(name, shape=shape[::-1] if transpose else shape, dtype=self.dtype)
        array = self.array(name, shape, init)
        return b.weight(name, np.ascontiguousarray(array.T) if transpose else array)

    def check_used(self) -> None:
        """A state dict's names the model never asked for are an error (`ignore`: buffers
        such as rotary tables that are not weights)."""
        if not isinstance(self.source, Mapping):
            return
        extra = sorted(n for n in self.source if n not in self.asked and not n.endswith("rotary_emb.inv_freq"))
        if extra:
            more = f" and {len(extra) - 5} more" if len(extra) > 5 else ""
            raise GraphBuildError(f"the state dict has weights the model does not use: {extra[:5]}{more}")
