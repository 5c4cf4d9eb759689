// ascend.gears: the run-time selection of a geared model - one program module per gear beside
// it; geir-run takes the program whose input shapes its inputs have. The verifier rejects
// programs that are not sibling modules, that take other inputs, that repeat a shape, or too
// few (test/dialects/ascend/invalid.mlir).
// RUN: geir-opt %s --split-input-file | filecheck %s
// RUN: geir-opt %s --split-input-file | geir-opt --split-input-file | filecheck %s
// RUN: geir-opt %s --split-input-file --generic | mlir-opt-22 --allow-unregistered-dialect --split-input-file | filecheck %s --check-prefix=UPSTREAM
// RUN: %python -c "import numpy as np; np.save('%t.x4.npy', np.ones((4, 8), np.float32))"
// RUN: geir-run %s --input x=%t.x4.npy | filecheck %s --check-prefix=RAN

// CHECK:      builtin.module @gear_0 {
// CHECK:      builtin.module @gear_1 {
// CHECK:      ascend.gears {option = "dynamic_batch_size", programs = [@gear_0, @gear_1]}
// UPSTREAM:   "ascend.gears"() {option = "dynamic_batch_size", programs = [@gear_0, @gear_1]} : () -> ()
// RAN:        model: {{.*}}gears.mlir gear 1 (x:4,8)
builtin.module @gear_0 {
  func.func @main(%x: memref<1x8xf32, "gm"> {onnx.name = "x"}, %y: memref<1x8xf32, "gm"> {ascend.output, onnx.name = "y"}) {
    func.return
  }
}
builtin.module @gear_1 {
  func.func @main(%x: memref<4x8xf32, "gm"> {onnx.name = "x"}, %y: memref<4x8xf32, "gm"> {ascend.output, onnx.name = "y"}) {
    func.return
  }
}
ascend.gears {option = "dynamic_batch_size", programs = [@gear_0, @gear_1]}
