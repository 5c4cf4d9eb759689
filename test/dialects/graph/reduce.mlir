// Round trip of the reductions.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// Every reduction with axes, keepdims and the default (all axes, keep dims).
// CHECK-LABEL: func.func @reduce(
// CHECK-SAME:    %x: tensor<2x3x4xf32>) {
func.func @reduce(%x: tensor<2x3x4xf32>) {
  // CHECK-NEXT: %sum = graph.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %sum = graph.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  // CHECK-NEXT: %mean = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %mean = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %max = graph.reduce_max %x {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %max = graph.reduce_max %x {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  // CHECK-NEXT: %min = graph.reduce_min %x : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  %min = graph.reduce_min %x : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  // CHECK-NEXT: %prod = graph.reduce_prod %x {keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<f32>
  %prod = graph.reduce_prod %x {keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<f32>
  // CHECK-NEXT: %l1 = graph.reduce_l1 %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %l1 = graph.reduce_l1 %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  // CHECK-NEXT: %l2 = graph.reduce_l2 %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %l2 = graph.reduce_l2 %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  // CHECK-NEXT: %sum_square = graph.reduce_sum_square %x {axes = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<1x3x4xf32>
  %sum_square = graph.reduce_sum_square %x {axes = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<1x3x4xf32>
  // CHECK-NEXT: %log_sum = graph.reduce_log_sum %x {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %log_sum = graph.reduce_log_sum %x {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %log_sum_exp = graph.reduce_log_sum_exp %x {axes = array<i64: -2, -1>} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  %log_sum_exp = graph.reduce_log_sum_exp %x {axes = array<i64: -2, -1>} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  // CHECK-NEXT: func.return
  func.return
}

// Empty axes reduce everything, unless noop_with_empty_axes is set.
// CHECK-LABEL: func.func @reduce_empty_axes(
// CHECK-SAME:    %x: tensor<2x3xi32>) {
func.func @reduce_empty_axes(%x: tensor<2x3xi32>) {
  // CHECK-NEXT: %all = graph.reduce_sum %x {axes = array<i64>} : (tensor<2x3xi32>) -> tensor<1x1xi32>
  %all = graph.reduce_sum %x {axes = array<i64>} : (tensor<2x3xi32>) -> tensor<1x1xi32>
  // CHECK-NEXT: %noop = graph.reduce_sum %x {axes = array<i64>, noop_with_empty_axes = 1 : i64} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %noop = graph.reduce_sum %x {axes = array<i64>, noop_with_empty_axes = 1 : i64} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK-NEXT: %noop_absent = graph.reduce_max %x {noop_with_empty_axes = 1 : i64} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %noop_absent = graph.reduce_max %x {noop_with_empty_axes = 1 : i64} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK-NEXT: func.return
  func.return
}

// arg_max / arg_min return i64 indices.
// CHECK-LABEL: func.func @arg_reduce(
// CHECK-SAME:    %x: tensor<2x3x4xf16>) {
func.func @arg_reduce(%x: tensor<2x3x4xf16>) {
  // CHECK-NEXT: %arg_max = graph.arg_max %x : (tensor<2x3x4xf16>) -> tensor<1x3x4xi64>
  %arg_max = graph.arg_max %x : (tensor<2x3x4xf16>) -> tensor<1x3x4xi64>
  // CHECK-NEXT: %arg_max_last = graph.arg_max %x {axis = -1 : i64, keepdims = 0 : i64, select_last_index = 1 : i64} : (tensor<2x3x4xf16>) -> tensor<2x3xi64>
  %arg_max_last = graph.arg_max %x {axis = -1 : i64, keepdims = 0 : i64, select_last_index = 1 : i64} : (tensor<2x3x4xf16>) -> tensor<2x3xi64>
  // CHECK-NEXT: %arg_min = graph.arg_min %x {axis = 1 : i64} : (tensor<2x3x4xf16>) -> tensor<2x1x4xi64>
  %arg_min = graph.arg_min %x {axis = 1 : i64} : (tensor<2x3x4xf16>) -> tensor<2x1x4xi64>
  // CHECK-NEXT: %arg_min_drop = graph.arg_min %x {axis = 1 : i64, keepdims = 0 : i64} : (tensor<2x3x4xf16>) -> tensor<2x4xi64>
  %arg_min_drop = graph.arg_min %x {axis = 1 : i64, keepdims = 0 : i64} : (tensor<2x3x4xf16>) -> tensor<2x4xi64>
  // CHECK-NEXT: func.return
  func.return
}
