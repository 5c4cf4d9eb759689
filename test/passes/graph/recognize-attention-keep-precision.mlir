// graph-recognize-attention{keep-precision=true} (must_keep_origin_dtype's): graph.attention
// computes its softmax in f32, so a softmax the model computes in f16 / bf16 stays as it is;
// one between casts to f32 and back, and an f32 one, are still taken. Without the option
// (FUSE) every one is taken.
// RUN: geir-opt %s --split-input-file -p 'graph-recognize-attention{keep-precision=true}' | filecheck %s
// RUN: geir-opt %s --split-input-file -p graph-recognize-attention | filecheck %s --check-prefix=FUSE

// CHECK-LABEL: func.func @f16_softmax(
// CHECK:         graph.matmul
// CHECK:         graph.softmax %{{.*}} : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16>
// CHECK:         graph.matmul
// CHECK-NOT:     graph.attention
// FUSE-LABEL:  func.func @f16_softmax(
// FUSE-NEXT:     %o = graph.attention %q, %k, %v {scale = 1.250000e-01 : f32, causal = 0 : i64}
// FUSE-NEXT:     func.return %o
func.func @f16_softmax(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x4x8xf16>, %v: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf16>) -> tensor<1x2x8x4xf16> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16> loc("qk")
  %c = graph.constant dense<1.250000e-01> : tensor<f16> loc("c")
  %ss = graph.mul %s, %c : (tensor<1x2x4x4xf16>, tensor<f16>) -> tensor<1x2x4x4xf16> loc("scale")
  %p = graph.softmax %ss {axis = -1 : i64} : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> loc("pv")
  func.return %o : tensor<1x2x4x8xf16>
}

// -----

// CHECK-LABEL: func.func @bf16_softmax(
// CHECK:         graph.softmax %{{.*}} : (tensor<1x2x4x4xbf16>) -> tensor<1x2x4x4xbf16>
// CHECK-NOT:     graph.attention
// FUSE-LABEL:  func.func @bf16_softmax(
// FUSE-NEXT:     %o = graph.attention %q, %k, %v {scale = 1.250000e-01 : f32, causal = 0 : i64}
func.func @bf16_softmax(%q: tensor<1x2x4x8xbf16>, %k: tensor<1x2x4x8xbf16>, %v: tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16> {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xbf16>) -> tensor<1x2x8x4xbf16> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xbf16>, tensor<1x2x8x4xbf16>) -> tensor<1x2x4x4xbf16> loc("qk")
  %c = graph.constant dense<1.250000e-01> : tensor<bf16> loc("c")
  %ss = graph.mul %s, %c : (tensor<1x2x4x4xbf16>, tensor<bf16>) -> tensor<1x2x4x4xbf16> loc("scale")
  %p = graph.softmax %ss {axis = -1 : i64} : (tensor<1x2x4x4xbf16>) -> tensor<1x2x4x4xbf16> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xbf16>, tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16> loc("pv")
  func.return %o : tensor<1x2x4x8xbf16>
}

// -----

// HF's softmax(dtype=float32).to(f16): the softmax is f32 already, as graph.attention's.
// CHECK-LABEL: func.func @f16_casts(
// CHECK-NEXT:    %o = graph.attention %q, %k, %v {scale = 1.250000e-01 : f32, causal = 0 : i64}
// CHECK-NEXT:    func.return %o
// FUSE-LABEL:  func.func @f16_casts(
// FUSE-NEXT:     %o = graph.attention %q, %k, %v {scale = 1.250000e-01 : f32, causal = 0 : i64}
func.func @f16_casts(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x4x8xf16>, %v: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf16>) -> tensor<1x2x8x4xf16> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16> loc("qk")
  %c = graph.constant dense<1.250000e-01> : tensor<f16> loc("c")
  %ss = graph.mul %s, %c : (tensor<1x2x4x4xf16>, tensor<f16>) -> tensor<1x2x4x4xf16> loc("scale")
  %up = graph.cast %ss {to = f32} : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32> loc("up")
  %p = graph.softmax %up {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sm")
  %pd = graph.cast %p {to = f16} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16> loc("down")
  %o = graph.matmul %pd, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> loc("pv")
  func.return %o : tensor<1x2x4x8xf16>
}

// -----

// CHECK-LABEL: func.func @f32_softmax(
// CHECK-NEXT:    %o = graph.attention %q, %k, %v {scale = 1.250000e-01 : f32, causal = 0 : i64}
// FUSE-LABEL:  func.func @f32_softmax(
// FUSE-NEXT:     %o = graph.attention %q, %k, %v {scale = 1.250000e-01 : f32, causal = 0 : i64}
func.func @f32_softmax(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("qk")
  %c = graph.constant dense<1.250000e-01> : tensor<f32> loc("c")
  %ss = graph.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32> loc("scale")
  %p = graph.softmax %ss {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("pv")
  func.return %o : tensor<1x2x4x8xf32>
}
