// graph-recognize-layer-norm: the TorchScript exporter's decomposed LayerNorm (ReduceMean, Sub,
// Pow 2 or Mul, ReduceMean, Add eps, Sqrt, Div, then Mul gamma and Add beta) becomes one
// graph.layer_norm located at every node it replaces; anything else is left as it is.
// RUN: geir-opt %s --split-input-file -p graph-recognize-layer-norm | filecheck %s
// The rewrite is a fixed point: running it twice changes nothing more.
// RUN: geir-opt %s --split-input-file -p graph-recognize-layer-norm,graph-recognize-layer-norm | filecheck %s

// Pow 2, gamma and beta: one layer_norm with both, the exponent and eps constants gone.
// CHECK-LABEL: func.func @pow_gamma_beta(
// CHECK-NEXT:    %gamma = graph.constant dense<1.500000e+00> : tensor<32xf32>
// CHECK-NEXT:    %beta = graph.constant dense<5.000000e-01> : tensor<32xf32>
// CHECK-NEXT:    %y = graph.layer_norm %x, %gamma, %beta {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : {{.*}} loc(fused["ln/mean", "ln/sub", "ln/pow", "ln/var", "ln/add_eps", "ln/sqrt", "ln/div", "ln/mul", "ln/add"])
// CHECK-NEXT:    func.return %y
func.func @pow_gamma_beta(%x: tensor<1x8x32xf32>) -> tensor<1x8x32xf32> {
  %two = graph.constant dense<2.0> : tensor<f32> loc("ln/two")
  %eps = graph.constant dense<1.0e-05> : tensor<f32> loc("ln/eps")
  %gamma = graph.constant dense<1.5> : tensor<32xf32> loc("ln/gamma")
  %beta = graph.constant dense<0.5> : tensor<32xf32> loc("ln/beta")
  %mean = graph.reduce_mean %x {axes = array<i64: -1>} : (tensor<1x8x32xf32>) -> tensor<1x8x1xf32> loc("ln/mean")
  %d = graph.sub %x, %mean : (tensor<1x8x32xf32>, tensor<1x8x1xf32>) -> tensor<1x8x32xf32> loc("ln/sub")
  %sq = graph.pow %d, %two : (tensor<1x8x32xf32>, tensor<f32>) -> tensor<1x8x32xf32> loc("ln/pow")
  %var = graph.reduce_mean %sq {axes = array<i64: -1>} : (tensor<1x8x32xf32>) -> tensor<1x8x1xf32> loc("ln/var")
  %ve = graph.add %var, %eps : (tensor<1x8x1xf32>, tensor<f32>) -> tensor<1x8x1xf32> loc("ln/add_eps")
  %sd = graph.sqrt %ve : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32> loc("ln/sqrt")
  %n = graph.div %d, %sd : (tensor<1x8x32xf32>, tensor<1x8x1xf32>) -> tensor<1x8x32xf32> loc("ln/div")
  %m = graph.mul %n, %gamma : (tensor<1x8x32xf32>, tensor<32xf32>) -> tensor<1x8x32xf32> loc("ln/mul")
  %y = graph.add %m, %beta : (tensor<1x8x32xf32>, tensor<32xf32>) -> tensor<1x8x32xf32> loc("ln/add")
  func.return %y : tensor<1x8x32xf32>
}

// -----

// d * d, no gamma or beta, over the last two axes: gamma is a constant of ones, axis 1.
// CHECK-LABEL: func.func @mul_two_axes(
// CHECK-NEXT:    %y_scale = graph.constant dense<1.000000e+00> : tensor<8x32xf32>
// CHECK-NEXT:    %y = graph.layer_norm %x, %y_scale {axis = 1 : i64, epsilon = 1.000000e-05 : f32}
// CHECK-NEXT:    func.return %y
func.func @mul_two_axes(%x: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  %eps = graph.constant dense<1.0e-05> : tensor<f32> loc("eps")
  %mean = graph.reduce_mean %x {axes = array<i64: 1, 2>} : (tensor<2x8x32xf32>) -> tensor<2x1x1xf32> loc("mean")
  %d = graph.sub %x, %mean : (tensor<2x8x32xf32>, tensor<2x1x1xf32>) -> tensor<2x8x32xf32> loc("sub")
  %sq = graph.mul %d, %d : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32> loc("square")
  %var = graph.reduce_mean %sq {axes = array<i64: 1, 2>} : (tensor<2x8x32xf32>) -> tensor<2x1x1xf32> loc("var")
  %ve = graph.add %var, %eps : (tensor<2x1x1xf32>, tensor<f32>) -> tensor<2x1x1xf32> loc("add_eps")
  %sd = graph.sqrt %ve : (tensor<2x1x1xf32>) -> tensor<2x1x1xf32> loc("sqrt")
  %y = graph.div %d, %sd : (tensor<2x8x32xf32>, tensor<2x1x1xf32>) -> tensor<2x8x32xf32> loc("div")
  func.return %y : tensor<2x8x32xf32>
}

// -----

// Left alone: the mean over a leading axis (not a row), Pow 3, and a variance without eps.
// CHECK-LABEL: func.func @not_layer_norms(
// CHECK-NOT:     graph.layer_norm
// CHECK:         func.return
func.func @not_layer_norms(%x: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32> loc("two")
  %three = graph.constant dense<3.0> : tensor<f32> loc("three")
  %eps = graph.constant dense<1.0e-05> : tensor<f32> loc("eps")
  %m0 = graph.reduce_mean %x {axes = array<i64: 0>} : (tensor<8x32xf32>) -> tensor<1x32xf32> loc("lead/mean")
  %d0 = graph.sub %x, %m0 : (tensor<8x32xf32>, tensor<1x32xf32>) -> tensor<8x32xf32> loc("lead/sub")
  %s0 = graph.pow %d0, %two : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32> loc("lead/pow")
  %v0 = graph.reduce_mean %s0 {axes = array<i64: 0>} : (tensor<8x32xf32>) -> tensor<1x32xf32> loc("lead/var")
  %e0 = graph.add %v0, %eps : (tensor<1x32xf32>, tensor<f32>) -> tensor<1x32xf32> loc("lead/add_eps")
  %q0 = graph.sqrt %e0 : (tensor<1x32xf32>) -> tensor<1x32xf32> loc("lead/sqrt")
  %y0 = graph.div %d0, %q0 : (tensor<8x32xf32>, tensor<1x32xf32>) -> tensor<8x32xf32> loc("lead/div")
  %m1 = graph.reduce_mean %x {axes = array<i64: -1>} : (tensor<8x32xf32>) -> tensor<8x1xf32> loc("cube/mean")
  %d1 = graph.sub %x, %m1 : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32> loc("cube/sub")
  %s1 = graph.pow %d1, %three : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32> loc("cube/pow")
  %v1 = graph.reduce_mean %s1 {axes = array<i64: -1>} : (tensor<8x32xf32>) -> tensor<8x1xf32> loc("cube/var")
  %e1 = graph.add %v1, %eps : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32> loc("cube/add_eps")
  %q1 = graph.sqrt %e1 : (tensor<8x1xf32>) -> tensor<8x1xf32> loc("cube/sqrt")
  %y1 = graph.div %d1, %q1 : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32> loc("cube/div")
  %m2 = graph.reduce_mean %x {axes = array<i64: -1>} : (tensor<8x32xf32>) -> tensor<8x1xf32> loc("noeps/mean")
  %d2 = graph.sub %x, %m2 : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32> loc("noeps/sub")
  %s2 = graph.mul %d2, %d2 : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("noeps/square")
  %v2 = graph.reduce_mean %s2 {axes = array<i64: -1>} : (tensor<8x32xf32>) -> tensor<8x1xf32> loc("noeps/var")
  %q2 = graph.sqrt %v2 : (tensor<8x1xf32>) -> tensor<8x1xf32> loc("noeps/sqrt")
  %y2 = graph.div %d2, %q2 : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32> loc("noeps/div")
  func.return %y0, %y1, %y2 : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Left alone: d = x - mean is also used by another op (the rewrite would lose it).
// CHECK-LABEL: func.func @centered_used_elsewhere(
// CHECK-NOT:     graph.layer_norm
// CHECK:         func.return %y, %z
func.func @centered_used_elsewhere(%x: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %eps = graph.constant dense<1.0e-05> : tensor<f32> loc("eps")
  %mean = graph.reduce_mean %x {axes = array<i64: -1>} : (tensor<8x32xf32>) -> tensor<8x1xf32> loc("mean")
  %d = graph.sub %x, %mean : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32> loc("sub")
  %sq = graph.mul %d, %d : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("square")
  %var = graph.reduce_mean %sq {axes = array<i64: -1>} : (tensor<8x32xf32>) -> tensor<8x1xf32> loc("var")
  %ve = graph.add %var, %eps : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32> loc("add_eps")
  %sd = graph.sqrt %ve : (tensor<8x1xf32>) -> tensor<8x1xf32> loc("sqrt")
  %y = graph.div %d, %sd : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32> loc("div")
  %z = graph.relu %d : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("relu")
  func.return %y, %z : tensor<8x32xf32>, tensor<8x32xf32>
}
