// graph-transpose-into-attention: a row permutation moves across a projection into the
// attention's addressing (the dynamo exporter's sequence-first nn.MultiheadAttention).
// RUN: geir-opt %s --split-input-file -p graph-transpose-into-attention | filecheck %s
// RUN: geir-opt %s --split-input-file -p graph-transpose-into-attention,graph-transpose-into-attention | filecheck %s

// The q/k/v side: the projection reads x in its own row order; the transpose moves after
// it, where the attention reads through it.
// CHECK-LABEL: func.func @qkv(
// CHECK-NEXT:    %m = graph.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("proj")
// CHECK-NEXT:    %m_1 = graph.transpose %m {perm = array<i64: 1, 0, 2>} : (tensor<2x4x8xf32>) -> tensor<4x2x8xf32> loc("t")
// CHECK-NEXT:    %s = graph.constant
// CHECK-NEXT:    %h = graph.reshape %m_1, %s
// CHECK-NOT:     graph.transpose %x
func.func @qkv(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x2x4x4xf32> {
  %t = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x4x8xf32>) -> tensor<4x2x8xf32> loc("t")
  %m = graph.matmul %t, %w : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32> loc("proj")
  %s = graph.constant dense<[4, 4, 4]> : tensor<3xi64>
  %h = graph.reshape %m, %s : (tensor<4x2x8xf32>, tensor<3xi64>) -> tensor<4x4x4xf32>
  %ht = graph.transpose %h {perm = array<i64: 1, 0, 2>} : (tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s4 = graph.constant dense<[2, 2, 4, 4]> : tensor<4xi64>
  %q = graph.reshape %ht, %s4 : (tensor<4x4x4xf32>, tensor<4xi64>) -> tensor<2x2x4x4xf32>
  %o = graph.attention %q, %q, %q {scale = 5.000000e-01 : f32} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  func.return %o : tensor<2x2x4x4xf32>
}

// -----

// The output side: the permutation of the projection's rows moves before it, into the
// attention's written view; the projection's result is reshaped to what the transpose gave.
// CHECK-LABEL: func.func @out(
// CHECK:         %o = graph.attention
// CHECK-NEXT:    %p = graph.transpose %o {perm = array<i64: 2, 0, 1, 3>}
// CHECK-NEXT:    %s = graph.constant
// CHECK-NEXT:    %r = graph.reshape %p, %s : (tensor<4x2x2x4xf32>, tensor<2xi64>) -> tensor<8x8xf32>
// CHECK-NEXT:    %r_rows_shape = graph.constant dense<[4, 2, 8]> : tensor<3xi64> loc("t")
// CHECK-NEXT:    %r_rows = graph.reshape %r, %r_rows_shape {allowzero = 0 : i64} : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<4x2x8xf32> loc("t")
// CHECK-NEXT:    %r_permuted = graph.transpose %r_rows {perm = array<i64: 1, 0, 2>} : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32> loc("t")
// CHECK-NEXT:    %r_permuted_rows_shape = graph.constant dense<8> : tensor<2xi64> loc("t")
// CHECK-NEXT:    %r_permuted_rows = graph.reshape %r_permuted, %r_permuted_rows_shape {allowzero = 0 : i64} : (tensor<2x4x8xf32>, tensor<2xi64>) -> tensor<8x8xf32> loc("t")
// CHECK-NEXT:    %y = graph.gemm %r_permuted_rows, %w, %c {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a = 0 : i64, trans_b = 1 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32> loc("gemm")
// CHECK-NEXT:    %t_shape = graph.constant dense<[2, 4, 8]> : tensor<3xi64> loc("t")
// CHECK-NEXT:    %t = graph.reshape %y, %t_shape {allowzero = 0 : i64} : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<2x4x8xf32> loc("t")
// CHECK-NEXT:    func.return %t
func.func @out(%q: tensor<2x2x4x4xf32>, %w: tensor<8x8xf32>, %c: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %o = graph.attention %q, %q, %q {scale = 5.000000e-01 : f32} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = graph.transpose %o {perm = array<i64: 2, 0, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<4x2x2x4xf32>
  %s = graph.constant dense<[8, 8]> : tensor<2xi64>
  %r = graph.reshape %p, %s : (tensor<4x2x2x4xf32>, tensor<2xi64>) -> tensor<8x8xf32>
  %y = graph.gemm %r, %w, %c {trans_b = 1 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32> loc("gemm")
  %s3 = graph.constant dense<[4, 2, 8]> : tensor<3xi64>
  %v = graph.reshape %y, %s3 : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<4x2x8xf32>
  %t = graph.transpose %v {perm = array<i64: 1, 0, 2>} : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32> loc("t")
  func.return %t : tensor<2x4x8xf32>
}

// -----

// Not rewritten: the product is also returned (the transpose would be a kernel there), the
// transpose moves the last axis (not a row permutation), the weight is batched.
// CHECK-LABEL: func.func @kept_qkv(
// CHECK-NEXT:    %t = graph.transpose %x
// CHECK-NEXT:    %m = graph.matmul %t, %w
// CHECK:         %u = graph.transpose %x {perm = array<i64: 0, 2, 1>}
// CHECK-NEXT:    %n = graph.matmul %u, %v
// CHECK:         %b = graph.transpose %x {perm = array<i64: 1, 0, 2>}
// CHECK-NEXT:    %bm = graph.matmul %b, %wb
func.func @kept_qkv(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>, %v: tensor<4x8xf32>, %wb: tensor<4x8x8xf32>) -> (tensor<4x2x8xf32>, tensor<2x2x4x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x4x4xf32>) {
  %t = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x4x8xf32>) -> tensor<4x2x8xf32>
  %m = graph.matmul %t, %w : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32>
  %s4 = graph.constant dense<[2, 2, 4, 4]> : tensor<4xi64>
  %q = graph.reshape %m, %s4 : (tensor<4x2x8xf32>, tensor<4xi64>) -> tensor<2x2x4x4xf32>
  %o = graph.attention %q, %q, %q {scale = 5.000000e-01 : f32} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %u = graph.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %n = graph.matmul %u, %v : (tensor<2x8x4xf32>, tensor<4x8xf32>) -> tensor<2x8x8xf32>
  %s8 = graph.constant dense<[2, 2, 8, 4]> : tensor<4xi64>
  %q2 = graph.reshape %n, %s8 : (tensor<2x8x8xf32>, tensor<4xi64>) -> tensor<2x2x8x4xf32>
  %o2 = graph.attention %q2, %q2, %q2 {scale = 5.000000e-01 : f32} : (tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x8x4xf32>
  %b = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x4x8xf32>) -> tensor<4x2x8xf32>
  %bm = graph.matmul %b, %wb : (tensor<4x2x8xf32>, tensor<4x8x8xf32>) -> tensor<4x2x8xf32>
  %q3 = graph.reshape %bm, %s4 : (tensor<4x2x8xf32>, tensor<4xi64>) -> tensor<2x2x4x4xf32>
  %o3 = graph.attention %q3, %q3, %q3 {scale = 5.000000e-01 : f32} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  func.return %m, %o, %o2, %o3 : tensor<4x2x8xf32>, tensor<2x2x4x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x4x4xf32>
}

// -----

// Not rewritten: the projection's input is no attention's result; a gemm's c with a value
// per row (the rows would need it permuted too).
// CHECK-LABEL: func.func @kept_out(
// CHECK-NEXT:    %y = graph.gemm %r, %w
// CHECK-NEXT:    %s3 = graph.constant
// CHECK-NEXT:    %v = graph.reshape %y, %s3
// CHECK-NEXT:    %t = graph.transpose %v
// CHECK:         %y2 = graph.gemm %r2, %w, %c
// CHECK-NEXT:    %v2 = graph.reshape %y2, %s3
// CHECK-NEXT:    %t2 = graph.transpose %v2
func.func @kept_out(%r: tensor<8x8xf32>, %w: tensor<8x8xf32>, %q: tensor<2x2x4x4xf32>, %c: tensor<8x1xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %y = graph.gemm %r, %w {trans_b = 1 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %s3 = graph.constant dense<[4, 2, 8]> : tensor<3xi64>
  %v = graph.reshape %y, %s3 : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<4x2x8xf32>
  %t = graph.transpose %v {perm = array<i64: 1, 0, 2>} : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32>
  %o = graph.attention %q, %q, %q {scale = 5.000000e-01 : f32} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = graph.transpose %o {perm = array<i64: 2, 0, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<4x2x2x4xf32>
  %s = graph.constant dense<[8, 8]> : tensor<2xi64>
  %r2 = graph.reshape %p, %s : (tensor<4x2x2x4xf32>, tensor<2xi64>) -> tensor<8x8xf32>
  %y2 = graph.gemm %r2, %w, %c {trans_b = 1 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x1xf32>) -> tensor<8x8xf32>
  %v2 = graph.reshape %y2, %s3 : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<4x2x8xf32>
  %t2 = graph.transpose %v2 {perm = array<i64: 1, 0, 2>} : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32>
  func.return %t, %t2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}
