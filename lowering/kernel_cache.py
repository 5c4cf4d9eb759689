"""Kernels built once per distinct request and cloned for its repeats.

A 32-layer decoder asks the templates for the same ~15 kernels 32 times: the layers' requests
differ only in their names, locations and the gm buffers the host passes. Building a kernel
(tiling it, emitting thousands of ops, verifying them) is most of the lowering's time, so a
request whose `request_key` equals an earlier one's gets a clone of the kernel built for it,
renamed and relocated - the same IR the templates would have built again.

The key holds everything a template may look at (lowering/templates/common.py's request and
what the templates read through it):

* the request's kind, options, shape-range extent and masked keys;
* each op of the request: its name, operand wiring (an input's position, or an earlier op's
  result), properties, attributes, result types, and the uses of each result (inside: which
  op and operand; outside: how many, and by which op names) - templates follow use chains;
* each input: its type, whether it is a block argument, a constant or another op's result,
  its uses, and the contents of a constant a template may read: a vector (one dim above 1: a
  per-channel scale or zero point, a slice's starts) or one of at most `SMALL_ELEMENTS`.
  Templates fold scalars and read such vectors; a weight (two dims above 1) they pass to
  the kernel and never read (lowering/templates/common.py, `KernelRequest`) - so layers
  with distinct weights share their kernels;
* each output: where it comes from (an input, an op's result).

A request with an op holding regions, or reading a value the request does not list, is never
cached (None key). The argument names a template gives the kernel (the graph values' names)
are the new request's in the clone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import BlockArgument, Operation, SSAValue

from geir.dialects import graph as g
from geir.lowering.templates.common import KernelChain, KernelRequest

SMALL_ELEMENTS = 1024
"""Constants of at most this many elements, and vectors of any length, are part of a
request's key by their bytes."""


def request_key(req: KernelRequest) -> tuple | None:
    """What the kernel built for `req` depends on (module docstring), or None: not cached."""
    where: dict[SSAValue, tuple] = {}
    for i, v in enumerate(req.inputs):
        where.setdefault(v, ("in", i))
    inside = {op: j for j, op in enumerate(req.ops)}
    parts: list = [req.kind, req.double_buffer, req.extent, req.key_extent]
    for v in req.inputs:
        parts.append((v.type, _origin(v), _uses(v, inside)))
    for j, op in enumerate(req.ops):
        if op.regions:
            return None
        operands = tuple(where.get(v) for v in op.operands)
        if None in operands:
            return None
        parts.append((op.name, operands, tuple(sorted(op.properties.items())),
                      tuple(sorted(op.attributes.items())),
                      tuple((r.type, _uses(r, inside)) for r in op.results)))
        for k, r in enumerate(op.results):
            where.setdefault(r, ("op", j, k))
    outputs = tuple(where.get(v) for v in req.outputs)
    if None in outputs:
        return None
    parts.append(outputs)
    return tuple(parts)


def _uses(v: SSAValue, inside: dict[Operation, int]) -> tuple:
    """The uses of a value: inside the request by (op, operand), outside by user op names."""
    ins, outs = [], []
    for u in v.uses:
        j = inside.get(u.operation)
        if j is None:
            outs.append(u.operation.name)
        else:
            ins.append((j, u.index))
    return tuple(sorted(ins)), tuple(sorted(outs))


def _origin(v: SSAValue) -> tuple:
    if isinstance(v, BlockArgument):
        return ("arg",)
    owner = v.owner
    if isinstance(owner, g.ConstantOp):
        arr = owner.array_or_none()
        if arr is None:
            return ("constant", None)
        arr = np.asarray(arr)
        if arr.size > SMALL_ELEMENTS and sum(d > 1 for d in arr.shape) > 1:
            return ("constant", "tensor")  # a weight: templates pass it, never read it
        digest = hashlib.blake2b(np.ascontiguousarray(arr).tobytes(), digest_size=16).digest()
        return ("constant", arr.dtype.str, arr.shape, digest)
    return ("result", owner.name, v.index)


class KernelCache:
    """`build(req, builder)`: the builder's kernel for the first request of each key, a
    renamed clone of it for the others (None when the builder took nothing)."""

    def __init__(self) -> None:
        self._built: dict[tuple, tuple[KernelRequest, object]] = {}

    def build(self, req: KernelRequest, builder: Callable[[KernelRequest], object]):
        key = request_key(req)
        if key is None:
            return builder(req)
        entry = self._built.get(key, False)
        if entry is False:
            kernel = builder(req)
            if kernel is not None:
                for k in _kernels(kernel):
                    setattr(k, _ORIGIN, object())
            # a pristine copy: callers tag the kernel they are given (its outputs' order)
            self._built[key] = (req, None if kernel is None else _clone(kernel))
            return kernel
        first, kernel = entry
        if kernel is None:
            return None
        return _renamed(_clone(kernel), first, req)


_ORIGIN = "_geir_kernel_origin"
_CLONE = "_geir_kernel_clone"


def origin(op: Operation) -> object | None:
    """The token of the kernel a template built that `op` is (None: not from this cache)."""
    return getattr(op, _ORIGIN, None)


def clone_of(op: Operation) -> object | None:
    """The origin token of the kernel `op` is a clone of (None: not a clone): a module that
    holds that kernel verified holds this one verified too."""
    return getattr(op, _CLONE, None)


def _kernels(kernel) -> tuple:
    return kernel.kernels if isinstance(kernel, KernelChain) else (kernel,)


def _clone(kernel):
    if isinstance(kernel, KernelChain):
        return KernelChain(tuple(_clone(k) for k in kernel.kernels), kernel.shared)
    copy = kernel.clone()
    setattr(copy, _CLONE, getattr(kernel, _CLONE, None) or origin(kernel))
    return copy


def _renamed(kernel, first: KernelRequest, req: KernelRequest):
    old = _default_names(first)
    new = _default_names(req)
    for k in _kernels(kernel):
        name = k.sym_name.data
        k.sym_name = StringAttr(req.name + name[len(first.name):] if name.startswith(first.name) else name)
        k.location = req.location
        for arg, was, now in zip(k.body.block.args, old, new):
            if arg.name_hint == was:
                arg.name_hint = now
    return kernel


def _default_names(req: KernelRequest) -> list[str]:
    """The names `KernelBuilder` gives a kernel's arguments by default."""
    return ([v.name_hint or f"in{i}" for i, v in enumerate(req.inputs)]
            + [v.name_hint or f"out{i}" for i, v in enumerate(req.outputs)])
