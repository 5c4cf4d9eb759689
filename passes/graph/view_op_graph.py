"""view-op-graph: the graph as Graphviz DOT (MLIR's pass of that name); the IR is unchanged.

A node per op of every function, labelled with the op and the ONNX nodes it came from (its
location); an edge per use, labelled with the value's shape, dtype and storage format (or
memory space); each graph.fusion is a cluster of its ops, labelled with its kind, so the
edges go from op to op across fusion boundaries. Other ops with regions are one node. The
DOT goes to stderr, as MLIR's does, or to `output`:

    geir-opt model.mlir --view-op-graph=model.dot -o /dev/null && dot -Tsvg model.dot -o model.svg
    geir-opt model.mlir -p 'graph-fuse,view-op-graph' 2> fused.dot
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, ShapedType, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.dialects import formats
from geir.dialects import graph as g
from geir.ir.locations import loc_names

MAX_NAMES = 60
"""Characters of the ONNX node names shown on a node (a fused location can list dozens)."""


@dataclass(frozen=True)
class ViewOpGraph(ModulePass):
    """Write the ops and their edges as Graphviz DOT (fusions as clusters, shapes, dtypes
    and formats on the edges) to stderr or to `output`; the IR is unchanged."""

    name = "view-op-graph"

    output: str = "-"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        text = op_graph_dot(op)
        if self.output == "-":
            sys.stdout.flush()  # keep the IR and the graph in order on a shared terminal
            sys.stderr.write(text)
            sys.stderr.flush()
        else:
            with open(self.output, "w", encoding="utf-8") as f:
                f.write(text)


def op_graph_dot(module: ModuleOp) -> str:
    """The DOT text of every `func.func` in `module`, one cluster per function."""
    return _Dot().module(module)


class _Dot:
    def __init__(self) -> None:
        self.lines = ["digraph G {", '  node [shape=box, fontname="Helvetica", fontsize=11];',
                      '  edge [fontname="Helvetica", fontsize=9];']
        self.source: dict[SSAValue, str] = {}  # the node each value comes from
        self.edges: list[str] = []  # at the top level: an edge inside a cluster pulls its nodes in
        self.count = 0

    def module(self, module: ModuleOp) -> str:
        for f in module.ops:
            if isinstance(f, func.FuncOp) and f.body.blocks:
                self.function(f)
        self.lines += self.edges
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    def new_id(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def function(self, f: func.FuncOp) -> None:
        self.lines.append(f"  subgraph {self.new_id('cluster_')} {{")
        self.lines.append(f"    label={_quote('@' + f.sym_name.data)}; style=dashed;")
        arg_names = f.arg_attrs.data if f.arg_attrs is not None else ()
        for i, arg in enumerate(f.args):
            onnx = arg_names[i].data.get(attr_names.ONNX_NAME) if i < len(arg_names) else None
            label = onnx.data if isinstance(onnx, StringAttr) else f"%{arg.name_hint or i}"
            self.source[arg] = node = self.new_id("arg")
            self.lines.append(f"    {node} [label={_quote(label)}, shape=ellipse];")
        self.block(f.body.block, "    ")
        self.lines.append("  }")

    def block(self, block: Block, indent: str) -> None:
        for op in block.ops:
            if isinstance(op, g.FusionOp):
                self.fusion(op, indent)
            elif not isinstance(op, g.YieldOp):
                self.node(op, indent)

    def fusion(self, op: g.FusionOp, indent: str) -> None:
        self.lines.append(f"{indent}subgraph {self.new_id('cluster_')} {{")
        label = f"{op.name} \"{op.kind.data}\""
        self.lines.append(f"{indent}  label={_quote(label)}; style=rounded; color=steelblue;")
        for arg, operand in zip(op.body.block.args, op.inputs):
            self.source[arg] = self.source.get(operand, "")
        self.block(op.body.block, indent + "  ")
        self.lines.append(f"{indent}}}")
        for result, yielded in zip(op.results, op.yield_op().operands):
            self.source[result] = self.source.get(yielded, "")

    def node(self, op: Operation, indent: str) -> None:
        node = self.new_id("op")
        label = op.name + "".join(f" @{p.root_reference.data}" for p in op.properties.values()
                                  if isinstance(p, SymbolRefAttr))
        names = ", ".join(loc_names(op.location))
        if names:
            label += "\n" + (names if len(names) <= MAX_NAMES else names[: MAX_NAMES - 3] + "...")
        style = ", shape=note" if isinstance(op, g.ConstantOp | a.ConstantOp) else ""
        self.lines.append(f"{indent}{node} [label={_quote(label)}{style}];")
        for value in op.operands:
            if self.source.get(value):
                self.edges.append(f"  {self.source[value]} -> {node} [label={_quote(type_label(value.type))}];")
        for result in op.results:
            self.source[result] = node


def type_label(t: Attribute) -> str:
    """`1x4x56x56x16 f32 NC1HWC0`, `64x16 f16 ub`, or the type itself."""
    if not isinstance(t, ShapedType):
        return str(t)
    shape = "x".join("?" if d < 0 else str(d) for d in t.get_shape()) or "scalar"
    where = a.space_of(t) if isinstance(t, MemRefType) else formats.storage_of(t)
    text = f"{shape} {a.short_type_name(t.element_type)}"
    return text if where in (None, formats.ND) else f"{text} {where}"


def _quote(text: str) -> str:
    """A DOT string: quotes and backslashes escaped, line breaks as \\n."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
