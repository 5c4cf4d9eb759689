"""The model suite every numeric test and benchmark runs on.

* the `light` models shipped in the onnx package, their ConstantOfShape weights
  replaced by seeded random arrays (tools.models.randomize_light_weights);
* the backend test cases in `pytorch-converted`, `pytorch-operator` and
  `simple`, with their shipped inputs and expected outputs.

Tolerances are the foundation issue's: fp32 rtol 1e-4, atol 1e-5.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import onnx
from onnx import numpy_helper
from geir.dialects import make_context
from geir.ir.types import BF16

RTOL, ATOL = 1e-4, 1e-5
DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
LIGHT_MODELS = (
    "light_bvlc_alexnet", "light_densenet121", "light_inception_v1", "light_inception_v2",
    "light_resnet50", "light_shufflenet", "light_squeezenet", "light_vgg19", "light_zfnet512",
)
BACKEND_SETS = ("pytorch-converted", "pytorch-operator", "simple")


@dataclass(frozen=True)
class Case:
    name: str
    model_path: str

    @property
    def data_dir(self) -> str:
        return os.path.join(os.path.dirname(self.model_path), "test_data_set_0")

    def model(self) -> onnx.ModelProto:
        return onnx.load(self.model_path)

    def inputs(self) -> list[np.ndarray]:
        return [_tensor(f) for f in sorted(glob.glob(os.path.join(self.data_dir, "input_*.pb")))]

    def outputs(self) -> list[np.ndarray]:
        return [_tensor(f) for f in sorted(glob.glob(os.path.join(self.data_dir, "output_*.pb")))]


def _tensor(path: str) -> np.ndarray:
    return numpy_helper.to_array(onnx.load_tensor(path))


def backend_cases() -> list[Case]:
    cases = []
    for s in BACKEND_SETS:
        for d in sorted(glob.glob(os.path.join(DATA, s, "*"))):
            if os.path.isfile(os.path.join(d, "model.onnx")):
                cases.append(Case(f"{s}/{os.path.basename(d)}", os.path.join(d, "model.onnx")))
    return cases


# Bounded: tests walk the models in order, and nine models' weights (imported, run and
# compiled) do not fit in a CI machine's memory at once.
@lru_cache(maxsize=2)
def light_model(name: str, seed: int = 0) -> onnx.ModelProto:
    from geir.testing.models import load_light_model

    return load_light_model(name, seed)


def with_batch(model: onnx.ModelProto, batch: int) -> onnx.ModelProto:
    """A copy of `model` whose data inputs and outputs have `batch` as their first dim.

    The light models are exported for batch 1 and flatten their features with
    `Reshape(x, [1, -1])`: a reshape of a batch-dependent tensor whose constant target
    starts with 1 gets 0 there (ONNX: copy the input's dim), so the batch flows through.
    Shapes are inferred again."""
    m = onnx.ModelProto.FromString(model.SerializeToString())
    graph = m.graph
    weights = {t.name for t in graph.initializer}
    data = [v for v in graph.input if v.name not in weights]
    for v in [*data, *graph.output]:
        v.type.tensor_type.shape.dim[0].dim_value = batch
    consts = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            consts[node.output[0]] = next(a.t for a in node.attribute if a.name == "value")
    derived = {v.name for v in data}
    for node in graph.node:
        if not any(i in derived for i in node.input):
            continue
        derived.update(node.output)
        if node.op_type == "Reshape" and node.input[0] in derived and node.input[1] in consts:
            target = consts[node.input[1]]
            dims = numpy_helper.to_array(target).copy()
            if dims.size and dims[0] == 1:
                dims[0] = 0
                target.CopyFrom(numpy_helper.from_array(dims, target.name))
    del graph.value_info[:]
    return onnx.shape_inference.infer_shapes(m)


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's outputs, single-threaded, basic optimisations only."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def assert_close(actual: np.ndarray, expected: np.ndarray, what: str = "", rtol=RTOL, atol=ATOL) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def cosine(actual: np.ndarray, expected: np.ndarray) -> float:
    """geir-compare's cosine (NaN / inf must sit where the reference has them), on arrays scaled
    by the reference's largest finite value: some backend cases hold values near 1e200, whose
    squares would overflow."""
    from geir.driver.compare import compare_arrays

    finite = np.abs(np.where(np.isfinite(expected), expected, 0))
    scale = float(finite.max(initial=0.0)) or 1.0
    return compare_arrays(np.asarray(actual, np.float64) / scale, np.asarray(expected, np.float64) / scale).cosine


def assert_matches(actual: np.ndarray, expected: np.ndarray, mode: str, what: str = "") -> None:
    """An output of a model compiled in precision `mode` against the fp32 reference: fp32's
    tolerances for must_keep_origin_dtype, else cosine similarity >= the mode's bar
    (target/precision.py); integer and bool outputs exactly."""
    from geir.target.precision import mode_named

    bar = mode_named(mode).min_cosine
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if bar is None:
        assert_close(actual, expected, what)
    elif not np.issubdtype(expected.dtype, np.floating):
        assert np.array_equal(actual, expected), f"{what}: {expected.dtype} outputs differ"
    else:
        cos = cosine(actual, expected)
        assert cos >= bar, f"{what}: cosine {cos:.6f} < {bar} ({mode})"


@lru_cache(maxsize=2)
def reference_run(key: str):
    """(module, feeds, outputs) of a suite model imported and run before any pass.

    `key`: a light model name, a backend case name (its shipped inputs), or
    `transformerN` (the TorchScript block stacked N times); cached, so several
    pipelines over one model import and run it once (the last two keys are kept). Tests must not mutate the
    module (clone it)."""
    from geir.frontend.onnx import import_model
    from geir.runtime.interpreter import input_specs, random_inputs, run_module

    if key.startswith("transformer"):
        from geir.testing.transformer import transformer_onnx

        module = import_model(transformer_onnx(int(key.removeprefix("transformer"))))
        feeds = random_inputs(module, seed=1)
    elif key in LIGHT_MODELS:
        module = import_model(light_model(key))
        feeds = random_inputs(module, seed=1)
    else:
        case = next(c for c in backend_cases() if c.name == key)
        module = import_model(case.model_path)
        feeds = {n: v for (n, _, _), v in zip(input_specs(module), case.inputs())}
    return module, feeds, run_module(module, feeds)


def lit_chunks(directory: str, prefix: str):
    """(id, chunk) for every `// -----` chunk of the lit files `prefix*.mlir` in directory."""
    for stem in sorted(os.listdir(directory)):
        if stem.startswith(prefix) and stem.endswith(".mlir"):
            with open(os.path.join(directory, stem)) as f:
                for i, chunk in enumerate(f.read().split("\n// -----\n")):
                    yield f"{stem}:{i}", chunk


def assert_pass_keeps_numerics(chunk: str, module_pass) -> None:
    """Run a lit chunk before and after `module_pass`: the interpreter's outputs agree."""
    from xdsl.context import Context

    from geir.ir.text import parse_module
    from geir.runtime.interpreter import random_inputs, run_module

    module = parse_module(chunk, make_context())
    feeds = random_inputs(module, seed=3)
    before = run_module(module, feeds)
    module_pass.apply(Context(), module)
    module.verify()
    after = run_module(module, feeds)
    for name, value in before.items():
        # a 16-bit result may differ in its last places when the pass computes the same formula
        # in another order or width (one rounding instead of several): 2 ulps of f16 / bf16
        tol = {np.dtype(np.float16): 2.0 ** -9, BF16: 2.0 ** -6}.get(value.dtype)
        if tol is None:
            assert_close(after[name], value, name)
        else:
            assert_close(after[name].astype(np.float32), value.astype(np.float32), name, rtol=tol, atol=tol)


def timing_reports(module, feeds: dict, device: str = "ascend910b", full_records=None,
                   unmemoised: bool = True) -> tuple[dict, ...]:
    """The report of a lowered program timed from a full run (`full_records`, when the caller
    recorded it: `simulator.record`), from a timing-only run and (`unmemoised`) from a
    timing-only run without memoised launches (runtime/simulator.py), each from its own
    recording (the timing-only ones compacted and programmed, as `profile` records them: the
    full run's keeps every event): they must be equal."""
    from geir.runtime.report import build_report
    from geir.runtime.simulator import record, simulate

    reports = []
    for timing, memo in ((False, True), (True, True), (True, False))[:3 if unmemoised else 2]:
        records = full_records if not timing and full_records is not None else \
            record(module, feeds, device=device, timing=timing, memo=memo, compact=timing, programs=timing)[1]
        reports.append(build_report(simulate(records, device=device), module))
    return tuple(reports)
