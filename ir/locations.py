"""Locations that name model nodes.

Each op imported from ONNX carries `loc("node_name")`; fusion keeps every
original name in a fused location, so diagnostics, dumps and profiles can
always point back at the model.
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import FusedLoc, NameLoc, NoneAttr, StringAttr
from xdsl.ir import Attribute, Operation


def name_loc(name: str) -> NameLoc:
    return NameLoc(StringAttr(name), NoneAttr())


def fused_loc(names: Iterable[str]) -> Attribute:
    locs = [name_loc(n) for n in dict.fromkeys(names)]
    if len(locs) == 1:
        return locs[0]
    return FusedLoc(locs, NoneAttr())


def loc_names(loc: Attribute) -> list[str]:
    """Every node name in a location (a name, a fused list, nested)."""
    if isinstance(loc, NameLoc):
        return [loc.desc.data]
    if isinstance(loc, FusedLoc):
        return [n for sub in loc.locations for n in loc_names(sub)]
    return []


def describe(op: Operation) -> str:
    """`graph.conv at "resnet/conv1"` - how diagnostics name an op."""
    names = loc_names(op.location)
    where = f' at "{", ".join(names)}"' if names else ""
    return f"'{op.name}'{where}"
