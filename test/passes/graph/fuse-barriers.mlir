// graph-fuse barriers: a function result or a value tapped with the unit attribute `graph.keep`
// is never hidden inside a fusion - the fused kernel still produces it (graph.yield) - and a
// decomposed LayerNorm whose intermediates are needed outside is fused but not replaced.
// RUN: geir-opt %s --split-input-file -p graph-recognize-layer-norm,graph-fuse | filecheck %s

// The conv result is also a function result: the kernel yields it besides the ReLU.
// CHECK-LABEL: func.func @returned_intermediate(
// CHECK:         %c, %r = graph.fusion "cube+vector" (%x, %w)
// CHECK:           %[[C:.*]] = graph.conv
// CHECK-NEXT:      %[[R:.*]] = graph.relu %[[C]]
// CHECK-NEXT:      graph.yield %[[C]], %[[R]] : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
// CHECK:         func.return %r, %c
func.func @returned_intermediate(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %w = graph.constant dense<0.1> : tensor<4x4x3x3xf32> loc("w")
  %c = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> loc("conv")
  %r = graph.relu %c : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("relu")
  func.return %r, %c : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// -----

// exp carries graph.keep: it is yielded although nothing outside reads it.
// CHECK-LABEL: func.func @keep_tap(
// CHECK-NEXT:    %e, %y = graph.fusion "vector" (%x) attributes {graph.pattern = "elementwise"}
// CHECK:           %[[E:.*]] = graph.exp %{{.*}} attributes {graph.keep}
// CHECK:           graph.yield %[[E]], %{{.*}} : tensor<4x16xf32>, tensor<4x16xf32>
// CHECK:         func.return %y
func.func @keep_tap(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = graph.exp %x attributes {graph.keep} : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("exp")
  %t = graph.tanh %e : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("tanh")
  %y = graph.mul %t, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> loc("mul")
  func.return %y : tensor<4x16xf32>
}

// -----

// The variance is tapped: no graph.layer_norm replaces the ops; they fuse as a reduction
// kernel that also yields the variance.
// CHECK-LABEL: func.func @keep_in_layernorm(
// CHECK:         %var, %n = graph.fusion "vector" (%x) attributes {graph.pattern = "reduction"}
// CHECK-NOT:       graph.layer_norm
// CHECK:           %[[V:.*]] = graph.reduce_mean %{{.*}} attributes {graph.keep}
// CHECK:           graph.yield %[[V]], %{{.*}} : tensor<1x8x1xf32>, tensor<1x8x32xf32>
// CHECK:         } loc(fused["ln/mean", "ln/sub", "ln/pow", "ln/var", "ln/add_eps", "ln/sqrt", "ln/div"])
// CHECK-NEXT:    func.return %n
func.func @keep_in_layernorm(%x: tensor<1x8x32xf32>) -> tensor<1x8x32xf32> {
  %two = graph.constant dense<2.0> : tensor<f32> loc("ln/two")
  %eps = graph.constant dense<1.0e-05> : tensor<f32> loc("ln/eps")
  %mean = graph.reduce_mean %x {axes = array<i64: -1>} : (tensor<1x8x32xf32>) -> tensor<1x8x1xf32> loc("ln/mean")
  %d = graph.sub %x, %mean : (tensor<1x8x32xf32>, tensor<1x8x1xf32>) -> tensor<1x8x32xf32> loc("ln/sub")
  %sq = graph.pow %d, %two : (tensor<1x8x32xf32>, tensor<f32>) -> tensor<1x8x32xf32> loc("ln/pow")
  %var = graph.reduce_mean %sq {axes = array<i64: -1>} attributes {graph.keep} : (tensor<1x8x32xf32>) -> tensor<1x8x1xf32> loc("ln/var")
  %ve = graph.add %var, %eps : (tensor<1x8x1xf32>, tensor<f32>) -> tensor<1x8x1xf32> loc("ln/add_eps")
  %sd = graph.sqrt %ve : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32> loc("ln/sqrt")
  %n = graph.div %d, %sd : (tensor<1x8x32xf32>, tensor<1x8x1xf32>) -> tensor<1x8x32xf32> loc("ln/div")
  func.return %n : tensor<1x8x32xf32>
}

// -----

// The mean is a function result (what onnxruntime's LayerNorm fusion once dropped): the
// LayerNorm is not replaced and the kernel still produces the mean.
// CHECK-LABEL: func.func @layernorm_mean_returned(
// CHECK:         %mean, %n = graph.fusion "vector" (%x) attributes {graph.pattern = "reduction"}
// CHECK-NOT:       graph.layer_norm
// CHECK:           %[[M:.*]] = graph.reduce_mean
// CHECK:           graph.yield %[[M]], %{{.*}} : tensor<1x8x1xf32>, tensor<1x8x32xf32>
// CHECK:         func.return %n, %mean
func.func @layernorm_mean_returned(%x: tensor<1x8x32xf32>) -> (tensor<1x8x32xf32>, tensor<1x8x1xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32> loc("ln/two")
  %eps = graph.constant dense<1.0e-05> : tensor<f32> loc("ln/eps")
  %mean = graph.reduce_mean %x {axes = array<i64: -1>} : (tensor<1x8x32xf32>) -> tensor<1x8x1xf32> loc("ln/mean")
  %d = graph.sub %x, %mean : (tensor<1x8x32xf32>, tensor<1x8x1xf32>) -> tensor<1x8x32xf32> loc("ln/sub")
  %sq = graph.mul %d, %d : (tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x8x32xf32> loc("ln/square")
  %var = graph.reduce_mean %sq {axes = array<i64: -1>} : (tensor<1x8x32xf32>) -> tensor<1x8x1xf32> loc("ln/var")
  %ve = graph.add %var, %eps : (tensor<1x8x1xf32>, tensor<f32>) -> tensor<1x8x1xf32> loc("ln/add_eps")
  %sd = graph.sqrt %ve : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32> loc("ln/sqrt")
  %n = graph.div %d, %sd : (tensor<1x8x32xf32>, tensor<1x8x1xf32>) -> tensor<1x8x32xf32> loc("ln/div")
  func.return %n, %mean : tensor<1x8x32xf32>, tensor<1x8x1xf32>
}
