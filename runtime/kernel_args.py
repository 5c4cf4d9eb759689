"""Which arguments of an `ascend.kernel` its body writes: the buffers a launch produces.

Kernel arguments carry no direction; a buffer is an output when some op of the body writes it,
directly or through a view (a DMA, load3d or vector destination, a fallback's `outs`, a scalar
store, a collective's output). geir-compare reads these buffers after each launch, the overflow check
(runtime/overflow.py) judges them against the arguments the kernel only reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import memref
from xdsl.ir import Operation, OpResult, SSAValue

from geir.dialects import ascend as a
from geir.dialects import attr_names


def written_args(kernel: Operation) -> list[int]:
    """Positions of the kernel arguments its body writes (through views); the kernel's own
    scratch buffers (`geir.scratch`) are not among them: they hold no tensor."""
    block_args = kernel.body.block.args
    scratch = kernel.attributes.get(attr_names.SCRATCH)
    if scratch is not None:
        block_args = block_args[:len(block_args) - scratch.value.data]
    args = {arg: i for i, arg in enumerate(block_args)}
    written: set[int] = set()
    for op in kernel.body.walk():
        if isinstance(op, a.CopyOp | a.Load3dOp):
            dsts: Sequence[SSAValue] = (op.dst,)
        elif isinstance(op, a.VectorOp):
            dsts = (op.operands[-1],)
        elif isinstance(op, a.ReferenceOp | a.CollectiveOp):
            dsts = op.outs
        elif isinstance(op, memref.StoreOp):
            dsts = (op.memref,)
        else:
            continue
        for v in dsts:
            while isinstance(v, OpResult) and isinstance(v.op, a.VIEW_OPS):
                v = v.op.operands[0]
            if v in args:
                written.add(args[v])
    return sorted(written)


__all__ = ["written_args"]
