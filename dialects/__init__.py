"""geir's dialects: graph (tensor ops with ONNX / GE semantics), ascend (the hardware level),
the formats and op families they share, and the context that reads them all."""

from __future__ import annotations

from xdsl.context import Context


def make_context() -> Context:
    """A context with every dialect geir reads and writes: xDSL's builtin, func, arith, scf
    and memref, and geir's graph and ascend."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.memref import MemRef
    from xdsl.dialects.scf import Scf

    from geir.dialects.ascend import Ascend
    from geir.dialects.graph import Graph

    ctx = Context(allow_unregistered=False)
    for d in (Builtin, Func, Arith, Scf, MemRef, Graph, Ascend):
        ctx.load_dialect(d)
    return ctx
