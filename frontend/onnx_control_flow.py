"""ONNX control flow, resolved at import: `If` on a condition known at compile time takes its
branch, `Loop` and `Scan` with a trip count known at compile time are unrolled.

geir's graphs are static dataflow (the device program is a fixed sequence of kernels), so a
subgraph is inlined: its nodes are converted in the enclosing graph with the subgraph's
formal inputs bound to values of this iteration, and the names it defines are dropped
afterwards (a subgraph sees the enclosing scope, never the reverse). Each unrolled iteration
is ordinary graph ops, so every pass and kernel applies to it. A condition or trip count that
depends on runtime data is one error naming the node; a graph input can be frozen to a value
(`geir.compile(..., freeze=...)`). Scan before opset 9 (batched, with sequence_lens) is an
error.

Converters take the importer (frontend/onnx.py) and use its public methods only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.ir import SSAValue

from geir.dialects import graph as g

MAX_ITERATIONS = 1024
"""The most iterations geir unrolls: each is a copy of the body in the program."""


def inline(im, body: onnx.GraphProto, args: Sequence[SSAValue]) -> list[SSAValue]:
    """Convert the nodes of `body` with its inputs bound to `args`; its output values."""
    if len(args) != len(body.input):
        raise im.error(f"the subgraph '{body.name}' takes {len(body.input)} inputs, given {len(args)}")
    outer_values, outer_node, outer_used = dict(im.values), im.node, im.used
    im.used = outer_used | {n for node in body.node for n in node.input} | {o.name for o in body.output}
    try:
        for formal, value in zip(body.input, args):
            if value is not None:  # a missing optional input of a function stays missing
                im.values[formal.name] = value
        for t in body.initializer:
            im.values[t.name] = im.constant(numpy_helper.to_array(t), name=t.name)
        for node in body.node:
            im.node = node
            im.convert(node)
        missing = [o.name for o in body.output if o.name not in im.values]
        if missing:
            raise im.error(f"subgraph '{body.name}': output(s) {missing} are produced by no node")
        return [im.values[o.name] for o in body.output]
    finally:
        im.values.clear()
        im.values.update(outer_values)
        im.node, im.used = outer_node, outer_used


def _scalar(im, value: SSAValue, what: str) -> np.ndarray:
    known = im.require_const(value, what)
    if known.size != 1:
        raise im.error(f"{what} must hold one value, got shape {list(known.shape)}")
    return known.reshape(())


def stack(im, values: list[SSAValue], axis: int) -> SSAValue:
    """The values (equal shapes) stacked along a new `axis`."""
    rank = len(values[0].type.get_shape()) + 1
    axis = axis + rank if axis < 0 else axis
    parts = [im.op(g.UnsqueezeOp, [v], axes=(axis,)) for v in values]
    return parts[0] if len(parts) == 1 else im.op(g.ConcatOp, parts, axis=axis)


def _if(im, ins, attrs):
    """The branch the (constant) condition selects, inlined."""
    cond = _scalar(im, ins[0], "the condition")
    branch = attrs["then_branch"] if bool(cond) else attrs["else_branch"]
    return inline(im, branch, [])


def _loop(im, ins, attrs):
    """Loop(M, cond, v_initial...) unrolled: the body runs while i < M and cond holds, both
    known at compile time; scan outputs are stacked along a new first axis."""
    body: onnx.GraphProto = attrs["body"]
    trips, cond, carried = (list(ins) + [None, None])[0], (list(ins) + [None, None])[1], list(ins[2:])
    limit = None if trips is None else int(_scalar(im, trips, "the trip count M"))
    go = True if cond is None else bool(_scalar(im, cond, "the loop condition"))
    n_scan = len(body.output) - 1 - len(carried)
    if n_scan < 0:
        raise im.error(f"the body has {len(body.output)} outputs, fewer than 1 + {len(carried)} carried values")
    if limit is None and cond is None:
        raise im.error("a Loop with neither a trip count nor a condition never ends")
    scans: list[list[SSAValue]] = [[] for _ in range(n_scan)]
    i = 0
    cond_value = cond if cond is not None else im.constant(np.array(True))
    while go and (limit is None or i < limit):
        if i == MAX_ITERATIONS:
            raise im.error(f"the loop runs more than {MAX_ITERATIONS} iterations; geir unrolls at most that many")
        outs = inline(im, body, [im.constant(np.array(i, np.int64)), cond_value, *carried])
        cond_value, carried = outs[0], outs[1:1 + len(carried)]
        for k, v in enumerate(outs[1 + len(carried):]):
            scans[k].append(v)
        go = bool(_scalar(im, cond_value, "the body's condition output"))
        i += 1
    if n_scan and i == 0:
        raise im.error("a Loop that runs no iteration has scan outputs of unknown shape")
    return [*carried, *(stack(im, s, 0) for s in scans)]


def _scan(im, ins, attrs):
    """Scan (opset 9 on) unrolled over its scan inputs' axis, in each one's direction; the scan
    outputs stacked along their axes in theirs."""
    if im.opset < 9:
        raise im.error("Scan before opset 9 (batched, with sequence_lens) is not supported")
    body: onnx.GraphProto = attrs["body"]
    m = attrs["num_scan_inputs"]
    states, xs = list(ins[:len(ins) - m]), list(ins[len(ins) - m:])
    k = len(body.output) - len(states)
    in_axes = list(attrs.get("scan_input_axes", [0] * m))
    in_dirs = list(attrs.get("scan_input_directions", [0] * m))
    out_axes = list(attrs.get("scan_output_axes", [0] * k))
    out_dirs = list(attrs.get("scan_output_directions", [0] * k))
    lengths = set()
    for x, axis in zip(xs, in_axes):
        shape = x.type.get_shape()
        lengths.add(shape[axis % len(shape)])
    if len(lengths) != 1:
        raise im.error(f"the scan inputs have different lengths {sorted(lengths)} along their scan axes")
    steps = lengths.pop()
    if steps > MAX_ITERATIONS:
        raise im.error(f"the scan runs {steps} iterations; geir unrolls at most {MAX_ITERATIONS}")
    if steps == 0 and k:
        raise im.error("a Scan of no iteration has scan outputs of unknown shape")
    scans: list[list[SSAValue]] = [[] for _ in range(k)]
    for t in range(steps):
        slices = [im.op(g.GatherOp, [x, im.constant(np.array(steps - 1 - t if d else t, np.int64))], axis=axis)
                  for x, axis, d in zip(xs, in_axes, in_dirs)]
        outs = inline(im, body, [*states, *slices])
        states = outs[:len(states)]
        for j, v in enumerate(outs[len(states):]):
            scans[j].append(v)
    stacked = [stack(im, s[::-1] if d else s, axis) for s, axis, d in zip(scans, out_axes, out_dirs)]
    return [*states, *stacked]


CONTROL_FLOW_CONVERTERS = {"If": _if, "Loop": _loop, "Scan": _scan}
