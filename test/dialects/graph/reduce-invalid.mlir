// Verifier errors of the reduce ops, one per `// -----` chunk; each names the op,
// its location and the rule it breaks, then shows the op in generic form.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.reduce_sum' at "sum": reduction axis 2 is out of range for rank 2
// CHECK-NEXT: note: see current operation: %0 = "graph.reduce_sum"
func.func @axis_out_of_range(%x: tensor<2x3xf32>) {
  %0 = graph.reduce_sum %x {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("sum")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.reduce_mean' at "mean": repeated reduction axes [1, -1]
// CHECK-NEXT: note: see current operation: %0 = "graph.reduce_mean"
func.func @repeated_axes(%x: tensor<2x3xf32>) {
  %0 = graph.reduce_mean %x {axes = array<i64: 1, -1>} : (tensor<2x3xf32>) -> tensor<2x1xf32> loc("mean")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.reduce_max' at "max": result #0 has type tensor<2xf32>, but the operands imply tensor<2x1xf32>
// CHECK-NEXT: note: see current operation: %0 = "graph.reduce_max"
func.func @keepdims_result(%x: tensor<2x3xf32>) {
  %0 = graph.reduce_max %x {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32> loc("max")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.reduce_min' at "min": attribute 'axes' must be an array<i64: ...>, got 1 : i64
// CHECK-NEXT: note: see current operation: %0 = "graph.reduce_min"
func.func @axes_attribute_kind(%x: tensor<2x3xf32>) {
  %0 = graph.reduce_min %x {axes = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x1xf32> loc("min")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.reduce_prod' at "prod": result #0 has type tensor<1x1xf16>, but the operands imply tensor<1x1xf32>
// CHECK-NEXT: note: see current operation: %0 = "graph.reduce_prod"
func.func @element_type(%x: tensor<2x3xf32>) {
  %0 = graph.reduce_prod %x : (tensor<2x3xf32>) -> tensor<1x1xf16> loc("prod")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.arg_max' at "arg_max": result #0 has type tensor<1x3xi32>, but the operands imply tensor<1x3xi64>
// CHECK-NEXT: note: see current operation: %0 = "graph.arg_max"
func.func @arg_max_index_type(%x: tensor<2x3xf32>) {
  %0 = graph.arg_max %x : (tensor<2x3xf32>) -> tensor<1x3xi32> loc("arg_max")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.arg_min' at "arg_min": axis -3 is out of range for rank 2
// CHECK-NEXT: note: see current operation: %0 = "graph.arg_min"
func.func @arg_min_axis(%x: tensor<2x3xf32>) {
  %0 = graph.arg_min %x {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi64> loc("arg_min")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.reduce_l2' at "l2": expects 1 operand, got 2
// CHECK-NEXT: note: see current operation: %0 = "graph.reduce_l2"
func.func @two_operands(%x: tensor<2x3xf32>) {
  %0 = graph.reduce_l2 %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<1x1xf32> loc("l2")
  func.return
}
