// A verifier error on parsed IR starts with the file, line and column of the op
// (as upstream's FileLineColLoc), then names the op and its own location if any.
// RUN: not geir-opt %s --split-input-file 2>&1 | filecheck %s

// CHECK:      geir-opt: error: {{.*}}opt-verify-location.mlir:[[# @LINE + 3]]:3: 'func.return': Expected arguments to have the same types as the function output types
// CHECK-NEXT:   note: see current operation: "func.return"(%x, %x)
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x, %x : tensor<2xf32>, tensor<2xf32>
}

// -----
// CHECK:      geir-opt: error: {{.*}}opt-verify-location.mlir:[[# @LINE + 2]]:3: 'graph.neg' at "neg": result #0 has type tensor<3xf32>
func.func @g(%x: tensor<2xf32>) {
  %a = graph.neg %x : (tensor<2xf32>) -> tensor<3xf32> loc("neg")
  func.return
}
