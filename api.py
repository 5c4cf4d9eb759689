"""The Python API: `geir.compile(model, ...)`, `geir.load(path)` (driver/compile.py) and
`geir.quantize(model, calibration_data, ...)` (driver/quantize.py).

    import geir
    cm = geir.compile("model.onnx", device="ascend910b", opt_level=3)
    outputs = cm.run({"x": x})
    print(cm.mlir("03_fuse"))
"""

from geir.driver.compile import CompiledModel, compile, load  # noqa: A004 - the API's name, as in torch.compile
from geir.driver.quantize import quantize

__all__ = ["CompiledModel", "compile", "load", "quantize"]
