// --split-input-file: every `// -----` chunk is its own module; results are
// separated by `// -----`, a failing chunk reports its error and the others
// still run; the exit code is 1 if any chunk failed. Line numbers are those of
// the whole file.
// RUN: not geir-opt %s --split-input-file -p cse 2>&1 | filecheck %s

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @first
func.func @first(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = graph.neg %x : (tensor<2xf32>) -> tensor<2xf32>
  func.return %a : tensor<2xf32>
}

// -----
// CHECK:      // -----
// CHECK-NEXT: geir-opt: error: {{.*}}opt-split-input-file.mlir:[[# @LINE + 3]]:18: expected 1 operand types but had 0
// CHECK:      // -----
func.func @broken(%x: tensor<2xf32>) {
  %a = graph.neg : (tensor<2xf32>) -> tensor<2xf32>
}

// -----
// CHECK-NEXT: geir-opt: error: {{.*}}opt-split-input-file.mlir:[[# @LINE + 3]]:3: 'graph.neg' at "neg": result #0 has type tensor<3xf32>, but the operands imply tensor<2xf32>
// CHECK:      // -----
func.func @invalid(%x: tensor<2xf32>) {
  %a = graph.neg %x : (tensor<2xf32>) -> tensor<3xf32> loc("neg")
  func.return
}

// -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @last
// CHECK-NEXT:     %a = graph.abs %x
// CHECK-NEXT:     func.return %a
func.func @last(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = graph.abs %x : (tensor<2xf32>) -> tensor<2xf32>
  %b = graph.abs %x : (tensor<2xf32>) -> tensor<2xf32>
  func.return %a : tensor<2xf32>
}
