"""The differential oracle: a model through every stage of geir, against onnxruntime.

`check(model, feeds)` compiles the model at each optimisation level (and precision mode),
runs every stage's program in the interpreter with geir-compare's machinery
(driver/compare.py) and compares each tensor with onnxruntime's. What it can find:

* **mismatch**: a tensor worse than its precision's tier (fp32: CLOSE, rtol 1e-4 /
  atol 1e-5; f16: SIMILAR) - reported as the first divergent stage and op;
* **crash**: a compile or run failure that is not a `GeirError` (geir's own bug);
* **rejected**: a `GeirError` - geir declines the model with a message; counted by reason;
* **race** / **bound**: the final program's profile (highest level checked) shows a race, or
  a `*bound*` figure of the report above the figure it bounds (runtime/report.check_bounds).

`shrink` cuts a mismatching model down to what still mismatches: the ancestors of the first
divergent tensor, then that node alone on onnxruntime's values of its inputs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper
from xdsl.dialects.builtin import ModuleOp

from geir.driver.compare import (
    Reference,
    error_text,
    StageResult,
    Thresholds,
    Verdict,
    compare_stage,
    compile_stages,
    onnx_reference,
)

FP32 = "must_keep_origin_dtype"
LEVELS = (0, 1, 2, 3)


@dataclass(frozen=True)
class Finding:
    kind: str          # "mismatch", "crash" or "rejected"
    level: int
    precision: str
    stage: str
    detail: str        # the error, or "node 'x' (tensor 't', @kernel): DIFFERENT, ..."
    node: str = ""
    tensor: str = ""

    @property
    def reason(self) -> str:
        """The detail without names and numbers, to count rejections by kind."""
        text = re.sub(r"'[^']*'", "'_'", self.detail)
        return re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "N", text)

    def __str__(self) -> str:
        return f"{self.kind} at O{self.level} ({self.precision}), stage {self.stage}: {self.detail}"


INTERNAL = "internal error: "


def _mismatch(stage: StageResult, level: int, precision: str) -> Finding | None:
    """The stage's first tensor beyond its tier: its dtype's (geir-compare's), or SIMILAR for
    every tensor in a low-precision mode (an f32 output cast from f16 is no closer than f16)."""
    if precision == FP32:
        bad = stage.first_beyond_tier()
    else:
        bad = stage.first(Verdict.DIFFERENT)
    if bad is None:
        return None
    m = bad.metrics
    return Finding("mismatch", level, precision, stage.name,
                   f"node '{bad.node}' (tensor '{bad.tensor}', {bad.op}, {bad.precision}): {m.verdict.name}, "
                   f"max abs err {m.max_abs_err:.3g}, cosine {m.cosine:.6f}", bad.node, bad.tensor)


def _failure(stage: str, error: str, level: int, precision: str) -> Finding:
    return Finding("crash" if INTERNAL in error else "rejected", level, precision, stage, error)


def check(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], levels: Sequence[int] = LEVELS,
          precisions: Sequence[str] = (FP32,)) -> list[Finding]:
    """Every (level, precision)'s first finding; empty when geir agrees with onnxruntime
    everywhere. A stage whose program is the same text as one already compared (O1's
    import is O3's) is not run again. A model onnxruntime cannot run is the generator's
    bug: that raises."""
    ref = onnx_reference(model, feeds)
    th = Thresholds()
    found = []
    seen: dict[str, Finding | None] = {}
    for precision in precisions:
        for level in levels:
            modules, failed = compile_stages(model, opt_level=level, precision_mode=precision)
            finding = None
            for name, module in modules.items():
                text = str(module)
                if text not in seen:
                    stage = compare_stage(name, module, feeds, ref, th)
                    seen[text] = (_failure(name, stage.error, level, precision) if stage.error
                                  else _mismatch(stage, level, precision))
                finding = seen[text]
                if finding is not None:
                    break
            if finding is None and failed:
                finding = _failure(*failed, level, precision)
            if finding is None and level == max(levels) and modules:
                finding = _report_finding(list(modules.values())[-1], feeds, level, precision)
            if finding is not None:
                found.append(finding)
                if finding.kind == "rejected":
                    return found  # the same model is rejected the same way everywhere
    return found


def _report_finding(module: ModuleOp, feeds: Mapping[str, np.ndarray], level: int, precision: str) -> Finding | None:
    """The profile of the final program: a race, or a bound its own figures break."""
    from geir.runtime.report import build_report, check_bounds
    from geir.runtime.simulator import profile

    stage = "profile"
    try:
        _, sim = profile(module, dict(feeds))
        report = build_report(sim, module)
    except Exception as e:  # noqa: BLE001 - classified like a stage's failure
        return _failure(stage, error_text(e), level, precision)
    if report["race_count"]:
        return Finding("race", level, precision, stage, "; ".join(map(str, sim.races[:3])))
    broken = check_bounds(report)
    if broken:
        return Finding("bound", level, precision, stage, "; ".join(broken[:3]))
    return None


# ---------------------------------------------------------------------------
# Shrinking.
# ---------------------------------------------------------------------------


def subgraph(model: onnx.ModelProto, keep: Sequence[onnx.NodeProto], outputs: Sequence[str]) -> onnx.ModelProto:
    """The model with only the nodes `keep` (a topologically ordered subset, closed under
    producers), the inputs and initializers they read, and `outputs` as its outputs."""
    used = {i for n in keep for i in n.input} | set(outputs)
    graph = helper.make_graph(
        list(keep), model.graph.name, [i for i in model.graph.input if i.name in used],
        [helper.make_empty_tensor_value_info(o) for o in outputs],
        initializer=[t for t in model.graph.initializer if t.name in used])
    return _typed(helper.make_model(graph, opset_imports=model.opset_import, ir_version=model.ir_version))


def _typed(m: onnx.ModelProto) -> onnx.ModelProto:
    """Output types from shape inference (ONNX wants typed graph outputs)."""
    inferred = onnx.shape_inference.infer_shapes(m)
    typed = {v.name: v for v in inferred.graph.value_info}
    for o in m.graph.output:
        if o.name in typed:
            o.CopyFrom(typed[o.name])
    return m


def _ancestors(nodes: Sequence[onnx.NodeProto], tensors: Sequence[str]) -> list[onnx.NodeProto]:
    producer = {o: i for i, n in enumerate(nodes) for o in n.output}
    keep, todo = set(), list(tensors)
    while todo:
        i = producer.get(todo.pop())
        if i is not None and i not in keep:
            keep.add(i)
            todo.extend(x for x in nodes[i].input if x)
    return [n for i, n in enumerate(nodes) if i in keep]


def isolate(model: onnx.ModelProto, tensor: str, feeds: Mapping[str, np.ndarray], ref: Reference) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The node that makes `tensor`, alone: every input it reads that is not a constant
    becomes a graph input, fed with onnxruntime's value of it."""
    node = next(n for n in model.graph.node if tensor in n.output)
    inits = {t.name: t for t in model.graph.initializer}
    values = {**feeds, **ref.values}
    feeds = {n: values[n] for n in node.input if n and n not in inits}
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
              for n, v in feeds.items()]
    graph = helper.make_graph([node], model.graph.name, inputs,
                              [helper.make_empty_tensor_value_info(o) for o in node.output if o],
                              initializer=[inits[n] for n in node.input if n in inits])
    return _typed(helper.make_model(graph, opset_imports=model.opset_import, ir_version=model.ir_version)), feeds


def shrink(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], finding: Finding
           ) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A smaller model that still mismatches at the finding's level and precision: the node
    alone if that suffices; else greedily drop every node (with what depends on it) whose
    removal keeps a mismatch, the divergent tensor an output throughout."""
    if finding.kind != "mismatch" or not finding.tensor:
        return model, dict(feeds)
    levels, precisions = (finding.level,), (finding.precision,)

    def fails(m: onnx.ModelProto, f: Mapping[str, np.ndarray]) -> bool:
        return any(x.kind == "mismatch" for x in check(m, f, levels, precisions))

    alone, alone_feeds = isolate(model, finding.tensor, feeds, onnx_reference(model, feeds))
    if fails(alone, alone_feeds):
        return alone, alone_feeds
    nodes = list(model.graph.node)
    target = finding.tensor
    changed = True
    while changed:
        changed = False
        for victim in list(nodes):
            if target in victim.output:
                continue
            rest = _without(nodes, victim)
            if not any(target in n.output for n in rest):
                continue
            read = {i for n in rest for i in n.input}
            outs = [target] + [o for n in rest for o in n.output if o and o not in read and o != target]
            cand = subgraph(model, _ancestors(rest, outs), outs)
            cand_feeds = {i.name: feeds[i.name] for i in cand.graph.input}
            if fails(cand, cand_feeds):
                nodes, changed = list(cand.graph.node), True
                break
    read = {i for n in nodes for i in n.input}
    outs = [target] + [o for n in nodes for o in n.output if o and o not in read and o != target]
    final = subgraph(model, nodes, outs)
    return final, {i.name: feeds[i.name] for i in final.graph.input}


def _without(nodes: Sequence[onnx.NodeProto], victim: onnx.NodeProto) -> list[onnx.NodeProto]:
    """`nodes` without `victim` and everything that reads (transitively) what it makes."""
    dead = set(victim.output)
    out = []
    for n in nodes:
        if n is victim or dead & set(n.input):
            dead.update(n.output)
        else:
            out.append(n)
    return out
