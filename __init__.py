"""geir: a graph compiler for Ascend-style NPUs, built on xDSL.

    import geir
    compiled = geir.compile("model.onnx", device="ascend910b", opt_level=3)
    outputs = compiled.run({"input": x})

    b = geir.GraphBuilder("main")                       # or build the graph in Python
    progs = geir.models.llama("tiny", batch=1, seq=16)  # model builders on it
"""

from geir import models
from geir.api import CompiledModel, compile, load, quantize  # noqa: A004 - the API's name, as in torch.compile
from geir.frontend.builder import GraphBuilder

__all__ = ["CompiledModel", "GraphBuilder", "compile", "load", "models", "quantize"]
