// Malformed IR: one message with file:line:col and a caret, exit code 1, no traceback.
// RUN: %python %S/Inputs/expect_exit.py 1 geir-opt %s 2>&1 | filecheck %s
// RUN: not geir-opt < %s 2>&1 | filecheck %s --check-prefix=STDIN

// CHECK:      geir-opt: error: {{.*}}opt-malformed.mlir:[[# @LINE + 6]]:22: operand expected
// CHECK-NEXT:   %0 = graph.add %x, : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:                      ^
// CHECK-NOT:  Traceback
// STDIN:      geir-opt: error: <stdin>:{{[0-9]+}}:22: operand expected
func.func @f(%x: tensor<2xf32>) {
  %0 = graph.add %x, : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return
}
