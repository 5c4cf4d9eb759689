// ascend.gears {option = "range_buckets"}: a shape range compiled as several range programs
// (driver/range_buckets.py), each with its extent argument over a part of the range; a run
// takes the first program whose ranges hold the inputs' sizes - x's 3 rows lie in 1~4, 6 in
// 5~8 - and one that none holds is an error naming the buckets. A bucket without a shape
// range is rejected (test/dialects/ascend/invalid.mlir).
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: %python -c "import numpy as np; np.save('%t.x3.npy', np.ones((3, 8), np.float32)); np.save('%t.x6.npy', np.ones((6, 8), np.float32)); np.save('%t.x9.npy', np.ones((9, 8), np.float32))"
// RUN: geir-run %s --input x=%t.x3.npy | filecheck %s --check-prefix=LOW
// RUN: geir-run %s --input x=%t.x6.npy | filecheck %s --check-prefix=HIGH
// RUN: not geir-run %s --input x=%t.x9.npy 2>&1 | filecheck %s --check-prefix=NONE

// CHECK:      builtin.module @gear_0 {
// CHECK:      builtin.module @gear_1 {
// CHECK:      ascend.gears {option = "range_buckets", programs = [@gear_0, @gear_1]}
// LOW:        model: {{.*}}gears-range-buckets.mlir bucket 0 (x:1~4,8)
// LOW:        y  3x8  float32
// HIGH:       model: {{.*}}gears-range-buckets.mlir bucket 1 (x:5~8,8)
// HIGH:       y  6x8  float32
// NONE:       geir-run: error: input shapes x:9,8 match no bucket of {{.*}} (x:1~4,8 | x:5~8,8)
builtin.module @gear_0 {
  func.func @main(%x: memref<4x8xf32, "gm"> {onnx.name = "x"}, %n: memref<1xi64, "gm"> {onnx.name = "batch.extent", geir.extent = [["x", 0 : i64]], geir.range = [1 : i64, 4 : i64]}, %y: memref<4x8xf32, "gm"> {ascend.output, onnx.name = "y", geir.extent_rows = [["batch.extent", 0 : i64, 1 : i64, 1 : i64]]}) {
    func.return
  }
}
builtin.module @gear_1 {
  func.func @main(%x: memref<8x8xf32, "gm"> {onnx.name = "x"}, %n: memref<1xi64, "gm"> {onnx.name = "batch.extent", geir.extent = [["x", 0 : i64]], geir.range = [5 : i64, 8 : i64]}, %y: memref<8x8xf32, "gm"> {ascend.output, onnx.name = "y", geir.extent_rows = [["batch.extent", 0 : i64, 1 : i64, 1 : i64]]}) {
    func.return
  }
}
ascend.gears {option = "range_buckets", programs = [@gear_0, @gear_1]}
