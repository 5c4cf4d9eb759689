// Verifier errors of graph.fusion and graph.yield, one per `// -----` chunk.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.fusion' at "f": kind must be one of cube, vector, cube+vector, data, got 'scalar'
// CHECK-NEXT: note: see current operation: %r = "graph.fusion"
func.func @unknown_kind(%x: tensor<4xf32>) {
  %r = graph.fusion "scalar" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    graph.yield %a : tensor<4xf32>
  } loc("f")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.fusion' at "f": block arguments must match its operand types
// CHECK-NEXT: note: see current operation: %r = "graph.fusion"
func.func @block_arguments(%x: tensor<4xf32>) {
  %r = graph.fusion "vector" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<2xf32>):
    %e = graph.exp %a : (tensor<2xf32>) -> tensor<2xf32>
    graph.yield %e : tensor<2xf32>
  } loc("f")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.fusion' at "f": yielded types must match its result types
// CHECK-NEXT: note: see current operation: %r = "graph.fusion"
func.func @yield_types(%x: tensor<4xf32>) {
  %r = graph.fusion "vector" (%x) : (tensor<4xf32>) -> tensor<4xf16> {
  ^bb0(%a: tensor<4xf32>):
    graph.yield %a : tensor<4xf32>
  } loc("f")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.fusion' at "f": body must end with graph.yield
// CHECK-NEXT: note: see current operation: %r = "graph.fusion"
func.func @no_yield(%x: tensor<4xf32>) {
  %r = graph.fusion "vector" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = graph.exp %a : (tensor<4xf32>) -> tensor<4xf32>
  } loc("f")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.fusion' at "f": Operation using value defined out of its IsolatedFromAbove parent
// CHECK-NEXT: note: see current operation: %r = "graph.fusion"
func.func @captures_a_value(%x: tensor<4xf32>) {
  %r = graph.fusion "vector" () : () -> tensor<4xf32> {
    %e = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    graph.yield %e : tensor<4xf32>
  } loc("f")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 5]]:5: 'graph.exp' at "inner": result #0 has type tensor<5xf32>, but the operands imply tensor<4xf32>
// CHECK-NEXT: note: see current operation: %e = "graph.exp"
func.func @invalid_inner_op(%x: tensor<4xf32>) {
  %r = graph.fusion "vector" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = graph.exp %a : (tensor<4xf32>) -> tensor<5xf32> loc("inner")
    graph.yield %a : tensor<4xf32>
  } loc("f")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.yield': expects parent op 'graph.fusion'
// CHECK-NEXT: note: see current operation: "graph.yield"
func.func @yield_outside_fusion(%x: tensor<4xf32>) {
  graph.yield %x : tensor<4xf32>
}
