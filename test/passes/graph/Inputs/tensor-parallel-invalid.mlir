// Errors of graph-tensor-parallel (tensor-parallel.mlir runs this file with ranks=2).

// CHECK: attention 'attn': tensor parallel 2 does not divide its 3 heads
func.func @f(%q: tensor<1x3x4x8xf32>, %k: tensor<1x3x4x8xf32>, %v: tensor<1x3x4x8xf32>) -> tensor<1x3x4x8xf32> {
  %a = graph.attention %q, %k, %v {scale = 1.0 : f32, causal = 0 : i64} : (tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32>) -> tensor<1x3x4x8xf32> loc("attn")
  func.return %a : tensor<1x3x4x8xf32>
}

// -----
// CHECK: attention 'gqa': its 3 key/value heads neither divide nor are divided by tensor parallel 2
func.func @f(%q: tensor<1x6x4x8xf32>, %k: tensor<1x3x4x8xf32>, %v: tensor<1x3x4x8xf32>) -> tensor<1x6x4x8xf32> {
  %a = graph.attention %q, %k, %v {scale = 1.0 : f32, causal = 0 : i64} : (tensor<1x6x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32>) -> tensor<1x6x4x8xf32> loc("gqa")
  func.return %a : tensor<1x6x4x8xf32>
}
