// graph-tensor-parallel: each rank keeps its share of the products - columns of the first of
// a pair, the matching rows of the second, one all-reduce after it - and what must stay whole
// stays whole.
// RUN: geir-opt %s --split-input-file -p 'graph-tensor-parallel{ranks=2 rank=0}' | filecheck %s --check-prefix=R0
// RUN: geir-opt %s --split-input-file -p 'graph-tensor-parallel{ranks=2 rank=1}' | filecheck %s --check-prefix=R1
// RUN: not geir-opt %S/Inputs/tensor-parallel-invalid.mlir --split-input-file -p 'graph-tensor-parallel{ranks=2 rank=0}' 2>&1 | filecheck %S/Inputs/tensor-parallel-invalid.mlir

// An MLP: W1's columns and its bias split, W2's rows, the partial sums all-reduced.
// R0-LABEL: func.func @mlp(
// R0:         %[[W1:.*]] = graph.constant dense<{{\[}}[0.000000e+00, 1.000000e+00], [4.000000e+00, 5.000000e+00]]> : tensor<2x2xf32>
// R0:         %[[H:.*]] = graph.matmul %x, %[[W1]] : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
// R0:         %[[B:.*]] = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// R0:         graph.add %[[H]], %[[B]] : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
// R0:         graph.relu
// R0:         %[[W2:.*]] = graph.constant dense<{{\[}}[1.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00]]> : tensor<2x2xf32>
// R0:         %[[P:.*]] = graph.matmul %{{.*}}, %[[W2]] : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
// R0:         %[[S:.*]] = graph.all_reduce %[[P]] {ranks = array<i64: 0, 1>, reduction = "sum"}
// R0:         func.return %[[S]] : tensor<3x2xf32>
// R1-LABEL: func.func @mlp(
// R1:         graph.constant dense<{{\[}}[2.000000e+00, 3.000000e+00], [6.000000e+00, 7.000000e+00]]> : tensor<2x2xf32>
// R1:         graph.constant dense<[3.000000e+00, 4.000000e+00]> : tensor<2xf32>
// R1:         graph.constant dense<{{\[}}[2.000000e+00, 0.000000e+00], [0.000000e+00, 2.000000e+00]]> : tensor<2x2xf32>
// R1:         graph.all_reduce
func.func @mlp(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w1 = graph.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]> : tensor<2x4xf32>
  %b1 = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %w2 = graph.constant dense<[[1.0, 0.0], [0.0, 1.0], [2.0, 0.0], [0.0, 2.0]]> : tensor<4x2xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %hb = graph.add %h, %b1 : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %a = graph.relu %hb : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %y = graph.matmul %a, %w2 : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// -----
// A norm over the split axis after the first product: it stays whole (no row product, no
// exchange); the second one, whose result is returned, keeps its columns.
// R0-LABEL: func.func @norm_between(
// R0-SAME:    -> (tensor<3x1xf32> {geir.shard = array<i64: 1, 1>})
// R0-NOT:     graph.all_reduce
// R0:         graph.matmul %x, %{{.*}} : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// R0:         graph.rms_norm
// R0:         graph.matmul %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<4x1xf32>) -> tensor<3x1xf32>
// R0-NOT:     graph.all_reduce
func.func @norm_between(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w1 = graph.constant dense<1.0> : tensor<2x4xf32>
  %s = graph.constant dense<1.0> : tensor<4xf32>
  %w2 = graph.constant dense<1.0> : tensor<4x2xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %n = graph.rms_norm %h, %s {axis = -1 : i64, epsilon = 1.0e-5 : f32} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %y = graph.matmul %n, %w2 : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// -----
// A fused QKV product split into q, k, v: each rank keeps the same block of each third
// (groups = 3), and the split sizes shrink with it.
// R0-LABEL: func.func @fused_qkv(
// R0:         graph.constant dense<{{\[}}[0.000000e+00, 2.000000e+00, 4.000000e+00]]> : tensor<1x3xf32>
// R0:         graph.split %{{.*}}, %{{.*}} {axis = -1 : i64} : (tensor<2x3xf32>, tensor<3xi64>) -> (tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
// R1-LABEL: func.func @fused_qkv(
// R1:         graph.constant dense<{{\[}}[1.000000e+00, 3.000000e+00, 5.000000e+00]]> : tensor<1x3xf32>
func.func @fused_qkv(%x: tensor<2x1xf32>) -> tensor<2x1xf32> {
  %w = graph.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]> : tensor<1x6xf32>
  %sizes = graph.constant dense<2> : tensor<3xi64>
  %wo = graph.constant dense<1.0> : tensor<2x1xf32>
  %qkv = graph.matmul %x, %w : (tensor<2x1xf32>, tensor<1x6xf32>) -> tensor<2x6xf32>
  %q, %k, %v = graph.split %qkv, %sizes {axis = -1 : i64} : (tensor<2x6xf32>, tensor<3xi64>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
  %m = graph.mul %q, %k : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %a = graph.add %m, %v : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %y = graph.matmul %a, %wo : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  func.return %y : tensor<2x1xf32>
}

// -----
// A product whose result is returned split: each rank returns its columns, marked for the
// caller to concatenate.
// R0-LABEL: func.func @split_output(
// R0-SAME:    -> (tensor<3x2xf32> {geir.shard = array<i64: 1, 1>})
// R0-NOT:     graph.all_reduce
func.func @split_output(%x: tensor<3x2xf32>) -> tensor<3x4xf32> {
  %w = graph.constant dense<1.0> : tensor<2x4xf32>
  %y = graph.matmul %x, %w : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----
// Columns the ranks do not divide (3): the product stays whole.
// R0-LABEL: func.func @indivisible(
// R0:         graph.matmul %x, %{{.*}} : (tensor<3x2xf32>, tensor<2x3xf32>) -> tensor<3x3xf32>
// R0-NOT:     graph.all_reduce
func.func @indivisible(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w1 = graph.constant dense<1.0> : tensor<2x3xf32>
  %w2 = graph.constant dense<1.0> : tensor<3x2xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x2xf32>, tensor<2x3xf32>) -> tensor<3x3xf32>
  %y = graph.matmul %h, %w2 : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}
