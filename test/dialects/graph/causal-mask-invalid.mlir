// Verifier errors of graph.causal_mask, one per `// -----` chunk: the position, the fill, the
// sizes and the result type.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.causal_mask' at "m": position must be one integer, got tensor<2xi64>
// CHECK-NEXT: note: see current operation: %m = "graph.causal_mask"
func.func @two_positions(%pos: tensor<2xi64>) {
  %fill = graph.constant dense<-6.550400e+04> : tensor<f16>
  %m = graph.causal_mask %pos, %fill {queries = 4 : i64, keys = 8 : i64} : (tensor<2xi64>, tensor<f16>) -> tensor<1x1x4x8xf16> loc("m")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.causal_mask' at "m": position must be one integer, got tensor<1xf32>
// CHECK-NEXT: note: see current operation: %m = "graph.causal_mask"
func.func @float_position(%pos: tensor<1xf32>) {
  %fill = graph.constant dense<-6.550400e+04> : tensor<f16>
  %m = graph.causal_mask %pos, %fill {queries = 4 : i64, keys = 8 : i64} : (tensor<1xf32>, tensor<f16>) -> tensor<1x1x4x8xf16> loc("m")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.causal_mask' at "m": fill must be one value, got tensor<2xf16>
// CHECK-NEXT: note: see current operation: %m = "graph.causal_mask"
func.func @two_fills(%pos: tensor<1xi64>) {
  %fill = graph.constant dense<-6.550400e+04> : tensor<2xf16>
  %m = graph.causal_mask %pos, %fill {queries = 4 : i64, keys = 8 : i64} : (tensor<1xi64>, tensor<2xf16>) -> tensor<1x1x4x8xf16> loc("m")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.causal_mask' at "m": queries and keys must be positive, got 0 and 8
// CHECK-NEXT: note: see current operation: %m = "graph.causal_mask"
func.func @no_queries(%pos: tensor<1xi64>) {
  %fill = graph.constant dense<-6.550400e+04> : tensor<f16>
  %m = graph.causal_mask %pos, %fill {queries = 0 : i64, keys = 8 : i64} : (tensor<1xi64>, tensor<f16>) -> tensor<1x1x0x8xf16> loc("m")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.causal_mask' at "m": result #0 has type tensor<1x1x4x8xf32>, but the operands imply tensor<1x1x4x8xf16>
// CHECK-NEXT: note: see current operation: %m = "graph.causal_mask"
func.func @result_type(%pos: tensor<1xi64>) {
  %fill = graph.constant dense<-6.550400e+04> : tensor<f16>
  %m = graph.causal_mask %pos, %fill {queries = 4 : i64, keys = 8 : i64} : (tensor<1xi64>, tensor<f16>) -> tensor<1x1x4x8xf32> loc("m")
  func.return
}
