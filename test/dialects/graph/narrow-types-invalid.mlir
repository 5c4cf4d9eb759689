// Verifier errors of the narrow element types' attributes, one per `// -----` chunk.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.cast' at "c": saturate applies to a float8 target, not f16
func.func @saturate_f16(%x: tensor<4xf32>) {
  %0 = graph.cast %x {to = f16, saturate = 0 : i64} : (tensor<4xf32>) -> tensor<4xf16> loc("c")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.cast' at "c": round_mode 'up': only 'up', 'down' or 'nearest', and only to f8E8M0FNU
func.func @round_mode_f8(%x: tensor<4xf32>) {
  %0 = graph.cast %x {to = f8E4M3FN, round_mode = "up"} : (tensor<4xf32>) -> tensor<4xf8E4M3FN> loc("c")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.quantize' at "q": saturate applies to a float8 zero point, not i4
func.func @quantize_saturate_i4(%x: tensor<4xf32>, %s: tensor<f32>, %z: tensor<i4>) {
  %0 = graph.quantize %x, %s, %z {saturate = 0 : i64} : (tensor<4xf32>, tensor<f32>, tensor<i4>) -> tensor<4xi4> loc("q")
  func.return
}
