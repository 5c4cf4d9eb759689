// --split-input-file: blank lines after a `// -----` marker keep their line
// numbers (an error in the chunk is reported at its line in the whole file).
// RUN: not geir-opt %s --split-input-file 2>&1 | filecheck %s

// CHECK:      builtin.module {
// CHECK:      // -----
// CHECK-NEXT: geir-opt: error: {{.*}}opt-split-input-file-lines.mlir:[[# @LINE + 11]]:18: expected 1 operand types but had 0
func.func @first() {
  func.return
}

// -----


// Two blank lines above, a comment here.

func.func @broken(%x: tensor<2xf32>) {
  %a = graph.neg : (tensor<2xf32>) -> tensor<2xf32>
}
