"""Check an ONNX file with onnx.checker and print its inputs, nodes and outputs, one a line.

usage: onnx_nodes.py FILE.onnx
"""

import sys

import onnx

model = onnx.load(sys.argv[1])
onnx.checker.check_model(model, full_check=True)
weights = {t.name for t in model.graph.initializer}
print("inputs:", ", ".join(i.name for i in model.graph.input if i.name not in weights))
print("weights:", ", ".join(sorted(weights)))
for n in model.graph.node:
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
    text = ", ".join(f"{k}={v.decode() if isinstance(v, bytes) else v}" for k, v in attrs.items() if k == "kind")
    print(f"node {n.domain}:{n.op_type} '{n.name}' ({', '.join(n.input)}) -> ({', '.join(n.output)}) {text}".rstrip())
print("outputs:", ", ".join(o.name for o in model.graph.output))
