"""Pictures of a compiled graph: view-op-graph's DOT renders with Graphviz, and the ONNX export
(a node per kernel, named by its ONNX nodes) passes onnx.checker and names every kernel."""

from __future__ import annotations

import subprocess

import onnx
import pytest
from conftest import require_tool

import geir
from geir.dialects import graph as g
from geir.driver.graph_onnx import graph_onnx
from geir.errors import GeirError
from geir.ir.locations import loc_names
from geir.passes.graph.view_op_graph import op_graph_dot
from geir.testing.suite import light_model
from geir.testing.transformer import transformer_onnx

MODELS = {"light_squeezenet": lambda: light_model("light_squeezenet"), "transformer": lambda: transformer_onnx(1)}


@pytest.fixture(scope="module", params=list(MODELS))
def compiled(request):
    return request.param, MODELS[request.param](), geir.compile(MODELS[request.param]())


def test_op_graph_renders_with_graphviz(compiled, tmp_path):
    _, _, cm = compiled
    module = cm.graph_module()
    dot = op_graph_dot(module)
    fusions = sum(isinstance(op, g.FusionOp) for op in module.walk())
    assert fusions and dot.count('label="graph.fusion ') == fusions
    path = tmp_path / "graph.dot"
    path.write_text(dot)
    run = subprocess.run([require_tool("dot", "graphviz"), "-Tsvg", str(path)], capture_output=True, text=True)
    assert run.returncode == 0 and not run.stderr, run.stderr
    assert run.stdout.count('class="cluster"') == fusions + 1  # and the function's


def test_graph_export_names_kernels_by_onnx_nodes(compiled, tmp_path):
    _, model, cm = compiled
    path = tmp_path / "graph.onnx"
    cm.export_graph(path)
    exported = onnx.load(str(path))
    onnx.checker.check_model(exported, full_check=True)
    module = cm.graph_module()
    main = module.body.block.first_op
    kernels = [op for op in main.body.block.ops if not isinstance(op, g.ConstantOp)][:-1]  # not func.return
    nodes = [n for n in exported.graph.node if n.op_type != "Identity"]
    assert len(nodes) == len(kernels)
    # a node, or a graph input for the precision cast of that input
    onnx_names = {n.name for n in model.graph.node} | {i.name for i in model.graph.input}
    for node, op in zip(nodes, kernels):
        assert node.name == ", ".join(loc_names(op.location))
        assert set(node.name.split(", ")) <= onnx_names, node.name
    fused = [n for n in nodes if any(a.name == "kind" for a in n.attribute)]
    assert len(fused) == sum(isinstance(op, g.FusionOp) for op in kernels) > 0
    assert all("+" in n.op_type for n in fused if len(n.name.split(", ")) > 1)
    weights = {t.name for t in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in weights]
    assert [i.name for i in exported.graph.input[: len(inputs)]] == inputs
    assert [o.name for o in exported.graph.output] == [o.name for o in model.graph.output]


def test_graph_export_needs_graph_level_ir(tmp_path):
    cm = geir.compile(MODELS["transformer"]())
    cm.save(tmp_path / "m.om")
    with pytest.raises(GeirError, match="no graph-level stage"):
        geir.load(tmp_path / "m.om").export_graph(tmp_path / "g.onnx")
    with pytest.raises(GeirError, match="needs graph-level IR"):
        graph_onnx(cm.module)
