// Round trip of graph.fusion (a region holding one fused kernel) and graph.yield.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// A fused kernel: explicit operands become block arguments, graph.yield gives the results.
// CHECK-LABEL: func.func @fused(
// CHECK-SAME:    %x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x6x6xf32> {
func.func @fused(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x6x6xf32> {
  // CHECK-NEXT: %r = graph.fusion "cube+vector" (%x, %w, %b) : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32> {
  %r = graph.fusion "cube+vector" (%x, %w, %b) : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32> {
  // CHECK-NEXT: ^bb0(%a: tensor<1x4x8x8xf32>, %k: tensor<8x4x3x3xf32>, %c: tensor<8xf32>):
  ^bb0(%a: tensor<1x4x8x8xf32>, %k: tensor<8x4x3x3xf32>, %c: tensor<8xf32>):
    // CHECK-NEXT: %conv = graph.conv %a, %k, %c : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32>
    %conv = graph.conv %a, %k, %c : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32>
    // CHECK-NEXT: %relu = graph.relu %conv : (tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
    %relu = graph.relu %conv : (tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
    // CHECK-NEXT: graph.yield %relu : tensor<1x8x6x6xf32>
    graph.yield %relu : tensor<1x8x6x6xf32>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return %r : tensor<1x8x6x6xf32>
  func.return %r : tensor<1x8x6x6xf32>
}

// Several results, and every kind.
// CHECK-LABEL: func.func @kinds(
// CHECK-SAME:    %x: tensor<4xf32>) {
func.func @kinds(%x: tensor<4xf32>) {
  // CHECK-NEXT: %p, %q = graph.fusion "vector" (%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %p, %q = graph.fusion "vector" (%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK-NEXT: ^bb0(%a: tensor<4xf32>):
  ^bb0(%a: tensor<4xf32>):
    // CHECK-NEXT: %e = graph.exp %a : (tensor<4xf32>) -> tensor<4xf32>
    %e = graph.exp %a : (tensor<4xf32>) -> tensor<4xf32>
    // CHECK-NEXT: %n = graph.neg %a : (tensor<4xf32>) -> tensor<4xf32>
    %n = graph.neg %a : (tensor<4xf32>) -> tensor<4xf32>
    // CHECK-NEXT: graph.yield %e, %n : tensor<4xf32>, tensor<4xf32>
    graph.yield %e, %n : tensor<4xf32>, tensor<4xf32>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: %m = graph.fusion "cube" (%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32> {
  %m = graph.fusion "cube" (%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32> {
  // CHECK-NEXT: ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    // CHECK-NEXT: %d = graph.matmul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
    %d = graph.matmul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
    // CHECK-NEXT: graph.yield %d : tensor<f32>
    graph.yield %d : tensor<f32>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: %t = graph.fusion "data" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  %t = graph.fusion "data" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: ^bb0(%a: tensor<4xf32>):
  ^bb0(%a: tensor<4xf32>):
    // CHECK-NEXT: %i = graph.identity %a : (tensor<4xf32>) -> tensor<4xf32>
    %i = graph.identity %a : (tensor<4xf32>) -> tensor<4xf32>
    // CHECK-NEXT: graph.yield %i : tensor<4xf32>
    graph.yield %i : tensor<4xf32>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}
