"""int8 against f16 at deployment sizes: the modeled latency of one cube kernel each way.

- conv: a ResNet stage's 3x3 conv, 256 -> 256 channels on 56x56 at batch 8; int8 with its
  dequantize -> relu -> requantize fused (one mix kernel writing int8), f16 with its relu;
- matmul: 512 x 4096 x 4096 (a 7B model's projection over 512 tokens); int8 -> int32, f16.

Both compiled by geir.compile (must_keep_origin_dtype: each runs in its own type) and run on
the modeled device: latency_us, the cube's busy time summed over the cores (pipe M), and the
pipe the kernel is bound by. The functional run computes every tile in numpy: about a
minute per int8 case.

    python bench/int8.py [--cases conv,matmul]
"""

from __future__ import annotations

import argparse
import time

import geir
from geir.dialects import make_context
from geir.ir.text import parse_module

_CONV_I8 = """func.func @main(%x: tensor<8x256x56x56xi8> {onnx.name = "x"}, %w: tensor<256x256x3x3xi8> {onnx.name = "w"}) -> tensor<8x256x56x56xi8> {
  %s = graph.constant dense<0.001> : tensor<1x256x1x1xf32>
  %s2 = graph.constant dense<0.05> : tensor<f32>
  %z2 = graph.constant dense<0> : tensor<i8>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, offset_x = 3 : i64} : (tensor<8x256x56x56xi8>, tensor<256x256x3x3xi8>) -> tensor<8x256x56x56xi32>
  %d = graph.dequantize %y, %s : (tensor<8x256x56x56xi32>, tensor<1x256x1x1xf32>) -> tensor<8x256x56x56xf32>
  %r = graph.relu %d : (tensor<8x256x56x56xf32>) -> tensor<8x256x56x56xf32>
  %q = graph.quantize %r, %s2, %z2 : (tensor<8x256x56x56xf32>, tensor<f32>, tensor<i8>) -> tensor<8x256x56x56xi8>
  func.return %q : tensor<8x256x56x56xi8>
}"""

_CONV_F16 = """func.func @main(%x: tensor<8x256x56x56xf16> {onnx.name = "x"}, %w: tensor<256x256x3x3xf16> {onnx.name = "w"}) -> tensor<8x256x56x56xf16> {
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x256x56x56xf16>, tensor<256x256x3x3xf16>) -> tensor<8x256x56x56xf16>
  %r = graph.relu %y : (tensor<8x256x56x56xf16>) -> tensor<8x256x56x56xf16>
  func.return %r : tensor<8x256x56x56xf16>
}"""


def _matmul(t: str, o: str) -> str:
    return f"""func.func @main(%x: tensor<512x4096x{t}> {{onnx.name = "x"}}, %w: tensor<4096x4096x{t}> {{onnx.name = "w"}}) -> tensor<512x4096x{o}> {{
  %y = graph.matmul %x, %w : (tensor<512x4096x{t}>, tensor<4096x4096x{t}>) -> tensor<512x4096x{o}>
  func.return %y : tensor<512x4096x{o}>
}}"""


CASES = {
    "conv": {"i8": _CONV_I8, "f16": _CONV_F16},
    "matmul": {"i8": _matmul("i8", "i32"), "f16": _matmul("f16", "f16")},
}


def run(case: str, dtype: str) -> dict:
    t0 = time.perf_counter()
    model = geir.compile(parse_module(CASES[case][dtype], make_context(), case), precision_mode="must_keep_origin_dtype")
    t1 = time.perf_counter()
    _, report = model.profile()
    kernel = report["kernels"][0]
    return {"case": case, "dtype": dtype, "kernels": len(report["kernels"]), "latency_us": report["latency_us"],
            "cube_busy_us": report["pipe_busy_us"].get("M", 0.0), "bound": kernel.get("bound_pipe"),
            "compile_s": t1 - t0, "run_s": time.perf_counter() - t1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="conv,matmul")
    args = parser.parse_args()
    print(f"{'case':8} {'dtype':5} {'kernels':>7} {'latency us':>11} {'cube busy us':>13} {'bound':>6} {'compile s':>9} {'run s':>6}")
    for case in args.cases.split(","):
        rows = [run(case, dtype) for dtype in ("i8", "f16")]
        for r in rows:
            print(f"{r['case']:8} {r['dtype']:5} {r['kernels']:7d} {r['latency_us']:11.1f} {r['cube_busy_us']:13.1f} "
                  f"{r['bound'] or '-':>6} {r['compile_s']:9.1f} {r['run_s']:6.1f}")
        print(f"{case}: int8 / f16 latency {rows[0]['latency_us'] / rows[1]['latency_us']:.2f}, "
              f"cube time {rows[0]['cube_busy_us'] / rows[1]['cube_busy_us']:.2f}")


if __name__ == "__main__":
    main()
