"""Compile-time scaling: import + verify + print for synthetic graphs and the light models,
and each light model from its .onnx file to an offline model and back.

Prints seconds per op for each graph and the ratio of the largest to the
smallest per-op time across the synthetic sizes (near-linear growth keeps it
below 2). Then, per light model, `geir.compile(path, opt_level=3)` with the seconds of every
stage (its `progress` callback), `save("m.om")` and `geir.load` of it - beside it the load of
the same file without its binary form (`text load`: parsing and verifying the program text,
as version-3 files load) -, the program's ops, and the file's size over its weights'. Everything
is measured in this one run, side by side.

    python bench/compile_time.py [--sizes 1000,10000,50000] [--no-pipeline] [--models resnet50,vgg19]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import zipfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from geir.dialects import make_context
from geir.ir.text import parse_module, print_module
from geir.frontend.onnx import import_model
from geir.testing.suite import LIGHT_MODELS, light_model

C = 8  # channels of the synthetic network: weights stay small, op count is what grows


def synthetic_model(n_ops: int, seed: int = 0) -> onnx.ModelProto:
    """A residual CNN of about n_ops nodes: blocks of Conv, Add(bias), Relu, Mul(scale), Add(skip)."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    x = "x"
    for b in range(max(n_ops // 5, 1)):
        w, bias, scale = f"w{b}", f"b{b}", f"s{b}"
        inits += [
            numpy_helper.from_array(rng.standard_normal((C, C, 1, 1)).astype(np.float32) * 0.3, w),
            numpy_helper.from_array(rng.standard_normal((1, C, 1, 1)).astype(np.float32) * 0.1, bias),
            numpy_helper.from_array(rng.uniform(0.5, 1.5, (1, C, 1, 1)).astype(np.float32), scale),
        ]
        nodes += [
            helper.make_node("Conv", [x, w], [f"c{b}"], name=f"blk{b}/conv"),
            helper.make_node("Add", [f"c{b}", bias], [f"a{b}"], name=f"blk{b}/bias"),
            helper.make_node("Relu", [f"a{b}"], [f"r{b}"], name=f"blk{b}/relu"),
            helper.make_node("Mul", [f"r{b}", scale], [f"m{b}"], name=f"blk{b}/scale"),
            helper.make_node("Add", [f"m{b}", x], [f"y{b}"], name=f"blk{b}/skip"),
        ]
        x = f"y{b}"
    graph = helper.make_graph(
        nodes,
        "synthetic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 8, 8])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, C, 8, 8])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def measure(model: onnx.ModelProto) -> tuple[int, dict[str, float]]:
    t0 = time.perf_counter()
    module = import_model(model)
    t1 = time.perf_counter()
    module.verify()
    t2 = time.perf_counter()
    text = print_module(module)
    t3 = time.perf_counter()
    parse_module(text, make_context())
    t4 = time.perf_counter()
    n = sum(1 for _ in module.walk()) - 2  # minus module and func
    return n, {"import": t1 - t0, "verify": t2 - t1, "print": t3 - t2, "parse": t4 - t3}


def pipeline_row(name: str, folder: Path) -> dict:
    """One light model from its .onnx file through `geir.compile` (O3), `save` and `geir.load`."""
    import geir

    path = folder / f"{name}.onnx"
    onnx.save(light_model(name), str(path))
    stages: dict[str, float] = {}
    t0 = time.perf_counter()
    cm = geir.compile(str(path), opt_level=3,
                      progress=lambda stage, s: s is not None and stages.__setitem__(stage, s))
    t1 = time.perf_counter()
    om = folder / f"{name}.om"
    cm.save(om)
    t2 = time.perf_counter()
    geir.load(om)
    t3 = time.perf_counter()
    geir.load(_text_only(om, folder / f"{name}.v3.om"))
    t4 = time.perf_counter()
    ops = sum(1 for _ in cm.module.walk())
    return {"name": name, "stages": stages, "compile": t1 - t0, "save": t2 - t1, "load": t3 - t2,
            "load_text": t4 - t3, "ops": ops, "om_mb": om.stat().st_size / 1e6,
            "weights_mb": _member_size(om, "weights.bin") / 1e6}


def _member_size(om: Path, member: str) -> int:
    with zipfile.ZipFile(om) as z:
        return z.getinfo(member).file_size


def _text_only(om: Path, out: Path) -> Path:
    """The offline model as version 3 wrote it (no program.bin): loading parses and verifies
    the text, for the side-by-side load column."""
    from geir.driver import om as om_format

    with zipfile.ZipFile(om) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        manifest = json.loads(src.read(om_format.MANIFEST))
        z.writestr(om_format.MANIFEST, json.dumps({**manifest, "version": 3}))
        for member in (om_format.PROGRAM, om_format.WEIGHTS):
            z.writestr(member, src.read(member))
    return out


def print_pipeline(rows: list[dict]) -> None:
    names = list(dict.fromkeys(k for r in rows for k in r["stages"]))
    short = [n.split("_", 1)[-1] for n in names]
    print("\nONNX file -> offline model, O3 (seconds; every stage, then save and load):")
    print(f"{'model':<20}" + "".join(f"{s:>13}" for s in short)
          + f"{'compile':>9}{'save':>7}{'to .om':>8}{'load':>7}{'text load':>10}{'ops':>8}{'.om MB':>8}"
          + f"{'/ weights':>10}")
    for r in rows:
        print(f"{r['name']:<20}" + "".join(f"{r['stages'].get(n, 0.0):>13.2f}" for n in names)
              + f"{r['compile']:>9.2f}{r['save']:>7.2f}{r['compile'] + r['save']:>8.2f}{r['load']:>7.2f}"
              f"{r['load_text']:>10.2f}{r['ops']:>8}{r['om_mb']:>8.1f}{r['om_mb'] / r['weights_mb']:>10.3f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--no-pipeline", action="store_true", help="skip the ONNX -> offline model table")
    ap.add_argument("--models", default=",".join(LIGHT_MODELS), help="the light models of both tables")
    args = ap.parse_args(argv)
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        rows.append((f"synthetic-{size}", *measure(synthetic_model(size)), True))
    models = [m if m.startswith("light_") else f"light_{m}" for m in args.models.split(",") if m]
    for name in models:
        rows.append((name, *measure(light_model(name)), False))

    print(f"{'graph':<22}{'ops':>7}{'import s':>10}{'verify s':>10}{'print s':>9}{'parse s':>9}"
          f"{'imp+ver+print us/op':>22}{'all us/op':>11}")
    per_op = []
    for name, n, t, synthetic in rows:
        core = (t["import"] + t["verify"] + t["print"]) / n * 1e6
        total = sum(t.values()) / n * 1e6
        if synthetic:
            per_op.append(core)
        print(f"{name:<22}{n:>7}{t['import']:>10.3f}{t['verify']:>10.3f}{t['print']:>9.3f}{t['parse']:>9.3f}"
              f"{core:>22.1f}{total:>11.1f}")
    print(f"\nlargest / smallest per-op time (import+verify+print, synthetic): {max(per_op) / min(per_op):.2f}")
    if not args.no_pipeline:
        import geir

        geir.compile(light_model(LIGHT_MODELS[0]), opt_level=3)  # the first compile of a process pays its imports
        with tempfile.TemporaryDirectory() as tmp:
            print_pipeline([pipeline_row(name, Path(tmp)) for name in models])


if __name__ == "__main__":
    main()
