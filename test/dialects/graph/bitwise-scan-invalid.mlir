// Verifier errors of the elementwise, integer and scan ops, one per `// -----` chunk.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.bitwise_and' at "and": operand must have an integer element type, got f32
// CHECK-NEXT: note: see current operation: %0 = "graph.bitwise_and"
func.func @float_bitwise(%x: tensor<2xf32>) {
  %0 = graph.bitwise_and %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("and")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.bit_shift' at "shift": direction must be LEFT or RIGHT, got 'UP'
// CHECK-NEXT: note: see current operation: %0 = "graph.bit_shift"
func.func @bad_direction(%x: tensor<2xi32>) {
  %0 = graph.bit_shift %x, %x {direction = "UP"} : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32> loc("shift")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.bitcast' at "bc": bitcast from f32 to f16: widths differ (32 vs 16 bits)
// CHECK-NEXT: note: see current operation: %0 = "graph.bitcast"
func.func @bitcast_width(%x: tensor<2xf32>) {
  %0 = graph.bitcast %x {to = f16} : (tensor<2xf32>) -> tensor<2xf16> loc("bc")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.cum_sum' at "cs": axis 2 is out of range for rank 2
// CHECK-NEXT: note: see current operation: %0 = "graph.cum_sum"
func.func @cumsum_axis(%x: tensor<2x3xf32>) {
  %0 = graph.cum_sum %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("cs")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.is_nan' at "nan": operand must have a floating-point element type, got i32
// CHECK-NEXT: note: see current operation: %0 = "graph.is_nan"
func.func @is_nan_int(%x: tensor<2xi32>) {
  %0 = graph.is_nan %x : (tensor<2xi32>) -> tensor<2xi1> loc("nan")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.acos' at "acos": operand must have a floating-point element type, got i32
// CHECK-NEXT: note: see current operation: %0 = "graph.acos"
func.func @acos_int(%x: tensor<2xi32>) {
  %0 = graph.acos %x : (tensor<2xi32>) -> tensor<2xi32> loc("acos")
  func.return
}
