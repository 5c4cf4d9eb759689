"""What the lit tests' ONNX model generators share: value infos, a model at an opset, a
constant, and the command line, `make_X.py CASE OUT.onnx [CASE OUT.onnx ...]` (a lit file
writes all its models in one process)."""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def model(nodes, inputs, outputs, inits=(), opset=17, value_info=(), min_ir=8):
    """A single-graph model at `opset` of the default domain, at the lowest IR version that
    opset allows (not below `min_ir`)."""
    g = helper.make_graph(nodes, "test", inputs, outputs, list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    try:
        m.ir_version = min(onnx.IR_VERSION, max(min_ir, helper.find_min_ir_version_for(list(m.opset_import))))
    except ValueError:  # an opset newer than the installed onnx knows: its newest IR
        m.ir_version = onnx.IR_VERSION
    return m


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def main(cases, argv=None):
    args = sys.argv[1:] if argv is None else argv
    if not args or len(args) % 2:
        sys.exit(f"usage: {sys.argv[0]} CASE OUT.onnx [CASE OUT.onnx ...]; cases: {', '.join(cases)}")
    for case, out in zip(args[::2], args[1::2]):
        onnx.save(cases[case](), out)
