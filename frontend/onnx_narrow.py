"""ONNX's narrow element types (float8, float4e2m1, int4 / uint4, int2 / uint2): the options of
a Cast / CastLike to one of them (docs/precision.md, "Narrow element types").

The types themselves are in ir/types.py's table, so `_element_type` in frontend/onnx.py takes
them; graph.cast, graph.quantize and graph.dequantize convert to and from them. Cast's
`saturate` (opset 19) and `round_mode` (opset 24) are kept on graph.cast only where they can
change the result: saturate on a float8 target, both on float8e8m0.
"""

from __future__ import annotations

from typing import Any

from xdsl.ir import Attribute

from geir.dialects import graph as g


def cast_options(to: Attribute, attrs: dict[str, Any]) -> dict[str, Any]:
    """graph.cast's saturate / round_mode for a cast to `to` from the ONNX node's attributes
    (absent ones stay absent: saturate 1 and round_mode "up" are graph.cast's defaults)."""
    if to not in g.SATURATING_TYPES:
        return {}
    out: dict[str, Any] = {}
    if not attrs.get("saturate", 1):
        out["saturate"] = 0
    mode = attrs.get("round_mode", "up")
    if isinstance(mode, bytes):
        mode = mode.decode()
    if to == g.SATURATING_TYPES[-1] and mode != "up":  # float8e8m0
        out["round_mode"] = mode
    return out
