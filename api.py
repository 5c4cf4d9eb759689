"""The Python API: `geir.compile(model, ...)`, `geir.load(path)` (driver/compile.py) and
`geir.quantize(model, calibration_data, ...)` (driver/quantize.py).

    import geir
    cm = geir.compile("model.onnx", device="ascend910b", opt_level=3)
    outputs = cm.run({"x": x})
    print(cm.mlir("03_fuse"))
"""

from geir.driver import quantize as _quantize
from geir.driver.compile import CompiledModel, compile, default_latency_of, load  # noqa: A004 - as torch.compile


def quantize(model, calibration_data, method: str = _quantize.DEFAULT_METHOD,
             percentile: float = _quantize.DEFAULT_PERCENTILE, skip=(), progress: bool = True, *, table=None,
             example_inputs=None, tolerance: float | None = None, device: str = "ascend910b"):
    """Calibrate `model` for int8 and return (its QDQ graph module, the calibration table):
    driver/quantize.py's `quantize`, with an accuracy-driven fallback (`tolerance`) priced by
    the modeled latency on `device`."""
    latency_of = default_latency_of(device) if tolerance is not None else None
    return _quantize.quantize(model, calibration_data, method, percentile, skip, progress, table=table,
                              example_inputs=example_inputs, tolerance=tolerance, latency_of=latency_of)


__all__ = ["CompiledModel", "compile", "load", "quantize"]
