"""The collective kernel: a graph collective as an `hccl` kernel holding its ascend op.

A collective takes no AI core: the kernel is the task HCCL puts on its stream, one op over
the whole gm buffers (`ascend.all_reduce %x, %y {ranks ...}`), priced by the server's link
model when the ranks are simulated together (runtime/simulator.py).
"""

from __future__ import annotations

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, i64

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.lowering.templates.common import KernelBuilder, KernelRequest, mark

_ASCEND_OF = {
    g.AllReduceOp: (a.AllReduceOp, ("reduction",)),
    g.AllGatherOp: (a.AllGatherOp, ("axis",)),
    g.ReduceScatterOp: (a.ReduceScatterOp, ("axis", "reduction")),
    g.AllToAllOp: (a.AllToAllOp, ("split_axis", "concat_axis")),
    g.SendOp: (a.SendOp, ("peer",)),
    g.RecvOp: (a.RecvOp, ("peer",)),
}


def try_build(req: KernelRequest) -> a.KernelOp | None:
    """One graph collective over its whole buffers; None for anything else."""
    if len(req.ops) != 1 or type(op := req.ops[0]) not in _ASCEND_OF:
        return None
    if req.inputs != list(op.operands) or req.outputs != list(op.results):
        return None
    cls, keys = _ASCEND_OF[type(op)]
    attrs = op.attrs()
    props = {"ranks": DenseArrayBase.from_list(i64, list(attrs["ranks"]))} if "ranks" in attrs else {}
    for k in keys:
        v = attrs[k]
        props[k] = StringAttr(v) if isinstance(v, str) else IntegerAttr(int(v), i64)
    kb = KernelBuilder(req, a.HCCL, 1)
    kb.emit(cls.create(operands=[*kb.inputs, *kb.outputs], properties=props))
    return mark(kb.finish(), attr_names.TEMPLATE, "collective")
