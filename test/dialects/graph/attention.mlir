// Round trip of graph.attention: plain, causal, grouped-query (2 kv heads for 4 query heads),
// an additive padding mask [B, 1, 1, L], a decode step (S = 1 over a cache of 9) and a
// value head dim other than the query's.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: func.func @attention(
func.func @attention(%q: tensor<2x4x5x8xf32>, %k: tensor<2x4x5x8xf32>, %v: tensor<2x4x5x8xf32>,
                     %kg: tensor<2x2x9x8xf32>, %vg: tensor<2x2x9x6xf32>, %m: tensor<2x1x1x9xf32>,
                     %qd: tensor<2x4x1x8xf16>, %kd: tensor<2x2x9x8xf16>, %vd: tensor<2x2x9x8xf16>) {
  // CHECK-NEXT: %plain = graph.attention %q, %k, %v {scale = 0.353553385 : f32} : (tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>) -> tensor<2x4x5x8xf32>
  %plain = graph.attention %q, %k, %v {scale = 0.35355339 : f32} : (tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>) -> tensor<2x4x5x8xf32>
  // CHECK-NEXT: %causal = graph.attention %q, %k, %v {scale = 1.250000e-01 : f32, causal = 1 : i64} : (tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>) -> tensor<2x4x5x8xf32>
  %causal = graph.attention %q, %k, %v {scale = 0.125 : f32, causal = 1 : i64} : (tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>) -> tensor<2x4x5x8xf32>
  // CHECK-NEXT: %gqa = graph.attention %q, %kg, %vg, %m {scale = 1.250000e-01 : f32, causal = 1 : i64} : (tensor<2x4x5x8xf32>, tensor<2x2x9x8xf32>, tensor<2x2x9x6xf32>, tensor<2x1x1x9xf32>) -> tensor<2x4x5x6xf32>
  %gqa = graph.attention %q, %kg, %vg, %m {scale = 0.125 : f32, causal = 1 : i64} : (tensor<2x4x5x8xf32>, tensor<2x2x9x8xf32>, tensor<2x2x9x6xf32>, tensor<2x1x1x9xf32>) -> tensor<2x4x5x6xf32>
  // CHECK-NEXT: %decode = graph.attention %qd, %kd, %vd {scale = 1.250000e-01 : f32, causal = 1 : i64} : (tensor<2x4x1x8xf16>, tensor<2x2x9x8xf16>, tensor<2x2x9x8xf16>) -> tensor<2x4x1x8xf16>
  %decode = graph.attention %qd, %kd, %vd {scale = 0.125 : f32, causal = 1 : i64} : (tensor<2x4x1x8xf16>, tensor<2x2x9x8xf16>, tensor<2x2x9x8xf16>) -> tensor<2x4x1x8xf16>
  // CHECK-NEXT: func.return
  func.return
}
