"""geir: a graph compiler for Ascend-style NPUs, built on xDSL.

    import geir
    compiled = geir.compile("model.onnx", device="ascend910b", opt_level=3)
    outputs = compiled.run({"input": x})
"""

from geir.api import CompiledModel, compile, load, quantize  # noqa: A004 - the API's name, as in torch.compile

__all__ = ["CompiledModel", "compile", "load", "quantize"]
