// graph-recognize-rms-norm: a decomposed RMSNorm (Pow 2 or Mul, ReduceMean, Add eps, Sqrt, Div
// - or a reciprocal square root and Mul - then Mul scale) becomes one graph.rms_norm located
// at every node it replaces; anything else is left as it is.
// RUN: geir-opt %s --split-input-file -p graph-recognize-rms-norm | filecheck %s
// The rewrite is a fixed point: running it twice changes nothing more.
// RUN: geir-opt %s --split-input-file -p graph-recognize-rms-norm,graph-recognize-rms-norm | filecheck %s

// Pow 2, Div, scale: one rms_norm with the scale, the exponent and eps constants gone.
// CHECK-LABEL: func.func @pow_div_scale(
// CHECK-NEXT:    %w = graph.constant dense<1.500000e+00> : tensor<32xf32>
// CHECK-NEXT:    %y = graph.rms_norm %x, %w {axis = 2 : i64, epsilon = 1.000000e-06 : f32} : (tensor<1x8x32xf32>, tensor<32xf32>) -> tensor<1x8x32xf32> loc(fused["rms/pow", "rms/mean", "rms/add_eps", "rms/sqrt", "rms/div", "rms/mul"])
// CHECK-NEXT:    func.return %y
func.func @pow_div_scale(%x: tensor<1x8x32xf32>) -> tensor<1x8x32xf32> {
  %two = graph.constant dense<2.0> : tensor<f32> loc("rms/two")
  %eps = graph.constant dense<1.0e-06> : tensor<f32> loc("rms/eps")
  %w = graph.constant dense<1.5> : tensor<32xf32> loc("rms/weight")
  %sq = graph.pow %x, %two : (tensor<1x8x32xf32>, tensor<f32>) -> tensor<1x8x32xf32> loc("rms/pow")
  %ms = graph.reduce_mean %sq {axes = array<i64: -1>} : (tensor<1x8x32xf32>) -> tensor<1x8x1xf32> loc("rms/mean")
  %me = graph.add %ms, %eps : (tensor<1x8x1xf32>, tensor<f32>) -> tensor<1x8x1xf32> loc("rms/add_eps")
  %r = graph.sqrt %me : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32> loc("rms/sqrt")
  %n = graph.div %x, %r : (tensor<1x8x32xf32>, tensor<1x8x1xf32>) -> tensor<1x8x32xf32> loc("rms/div")
  %y = graph.mul %n, %w : (tensor<1x8x32xf32>, tensor<32xf32>) -> tensor<1x8x32xf32> loc("rms/mul")
  func.return %y : tensor<1x8x32xf32>
}

// -----

// x * x, no scale, over the last two axes: the scale is a constant of ones, axis 1.
// CHECK-LABEL: func.func @mul_two_axes(
// CHECK-NEXT:    %y_scale = graph.constant dense<1.000000e+00> : tensor<8x32xf32>
// CHECK-NEXT:    %y = graph.rms_norm %x, %y_scale {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : {{.*}} loc(fused["square", "mean", "add_eps", "sqrt", "div"])
// CHECK-NEXT:    func.return %y
func.func @mul_two_axes(%x: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  %eps = graph.constant dense<1.0e-05> : tensor<f32> loc("eps")
  %sq = graph.mul %x, %x : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32> loc("square")
  %ms = graph.reduce_mean %sq {axes = array<i64: 1, 2>} : (tensor<2x8x32xf32>) -> tensor<2x1x1xf32> loc("mean")
  %me = graph.add %eps, %ms : (tensor<f32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32> loc("add_eps")
  %r = graph.sqrt %me : (tensor<2x1x1xf32>) -> tensor<2x1x1xf32> loc("sqrt")
  %y = graph.div %x, %r : (tensor<2x8x32xf32>, tensor<2x1x1xf32>) -> tensor<2x8x32xf32> loc("div")
  func.return %y : tensor<2x8x32xf32>
}

// -----

// torch.rsqrt as the TorchScript exporter writes it, Div(1, Sqrt), then x * rsqrt and
// weight * n (LlamaRMSNorm): the scale on either side.
// CHECK-LABEL: func.func @rsqrt_div(
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %y = graph.rms_norm %x, %w {axis = 1 : i64, epsilon = 1.000000e-06 : f32} : {{.*}} loc(fused["pow", "mean", "add_eps", "sqrt", "rsqrt", "mul", "scale"])
// CHECK-NEXT:    func.return %y
func.func @rsqrt_div(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %two = graph.constant dense<2.0> : tensor<f32> loc("two")
  %one = graph.constant dense<1.0> : tensor<f32> loc("one")
  %eps = graph.constant dense<1.0e-06> : tensor<f32> loc("eps")
  %w = graph.constant dense<0.5> : tensor<64xf32> loc("weight")
  %sq = graph.pow %x, %two : (tensor<16x64xf32>, tensor<f32>) -> tensor<16x64xf32> loc("pow")
  %ms = graph.reduce_mean %sq {axes = array<i64: 1>} : (tensor<16x64xf32>) -> tensor<16x1xf32> loc("mean")
  %me = graph.add %ms, %eps : (tensor<16x1xf32>, tensor<f32>) -> tensor<16x1xf32> loc("add_eps")
  %r = graph.sqrt %me : (tensor<16x1xf32>) -> tensor<16x1xf32> loc("sqrt")
  %inv = graph.div %one, %r : (tensor<f32>, tensor<16x1xf32>) -> tensor<16x1xf32> loc("rsqrt")
  %n = graph.mul %x, %inv : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32> loc("mul")
  %y = graph.mul %w, %n : (tensor<64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32> loc("scale")
  func.return %y : tensor<16x64xf32>
}

// -----

// torch.rsqrt as the dynamo exporter writes it, Reciprocal(Sqrt), then rsqrt * x.
// CHECK-LABEL: func.func @rsqrt_reciprocal(
// CHECK:         %y = graph.rms_norm %x, %w {axis = 1 : i64, epsilon = 1.000000e-06 : f32} : {{.*}} loc(fused["square", "mean", "add_eps", "sqrt", "reciprocal", "mul", "scale"])
// CHECK-NEXT:    func.return %y
func.func @rsqrt_reciprocal(%x: tensor<16x64xf32>, %w: tensor<64xf32>) -> tensor<16x64xf32> {
  %eps = graph.constant dense<1.0e-06> : tensor<f32> loc("eps")
  %sq = graph.mul %x, %x : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32> loc("square")
  %ms = graph.reduce_mean %sq {axes = array<i64: -1>} : (tensor<16x64xf32>) -> tensor<16x1xf32> loc("mean")
  %me = graph.add %ms, %eps : (tensor<16x1xf32>, tensor<f32>) -> tensor<16x1xf32> loc("add_eps")
  %r = graph.sqrt %me : (tensor<16x1xf32>) -> tensor<16x1xf32> loc("sqrt")
  %inv = graph.reciprocal %r : (tensor<16x1xf32>) -> tensor<16x1xf32> loc("reciprocal")
  %n = graph.mul %inv, %x : (tensor<16x1xf32>, tensor<16x64xf32>) -> tensor<16x64xf32> loc("mul")
  %y = graph.mul %n, %w : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32> loc("scale")
  func.return %y : tensor<16x64xf32>
}

// -----

// (ms + eps) ** -0.5 then x * that; a graph.keep tap on the result stays on the rms_norm.
// CHECK-LABEL: func.func @pow_minus_half(
// CHECK-NEXT:    %y_scale = graph.constant dense<1.000000e+00> : tensor<64xf32>
// CHECK-NEXT:    %y = graph.rms_norm %x, %y_scale {axis = 1 : i64, epsilon = 1.000000e-05 : f32} attributes {graph.keep} : {{.*}} loc(fused["square", "mean", "add_eps", "rsqrt", "mul"])
// CHECK-NEXT:    func.return %y
func.func @pow_minus_half(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %eps = graph.constant dense<1.0e-05> : tensor<f32> loc("eps")
  %half = graph.constant dense<-0.5> : tensor<f32> loc("minus_half")
  %sq = graph.mul %x, %x : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32> loc("square")
  %ms = graph.reduce_mean %sq {axes = array<i64: -1>} : (tensor<16x64xf32>) -> tensor<16x1xf32> loc("mean")
  %me = graph.add %ms, %eps : (tensor<16x1xf32>, tensor<f32>) -> tensor<16x1xf32> loc("add_eps")
  %inv = graph.pow %me, %half : (tensor<16x1xf32>, tensor<f32>) -> tensor<16x1xf32> loc("rsqrt")
  %y = graph.mul %x, %inv attributes {graph.keep} : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32> loc("mul")
  func.return %y : tensor<16x64xf32>
}

// -----

// Left alone: the mean over a leading axis (not a row), keepdims=0, Pow 3, and no eps.
// CHECK-LABEL: func.func @not_rms_norms(
// CHECK-NOT:     graph.rms_norm
// CHECK:         func.return
func.func @not_rms_norms(%x: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32> loc("two")
  %three = graph.constant dense<3.0> : tensor<f32> loc("three")
  %eps = graph.constant dense<1.0e-05> : tensor<f32> loc("eps")
  %s0 = graph.pow %x, %two : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32> loc("lead/pow")
  %m0 = graph.reduce_mean %s0 {axes = array<i64: 0>} : (tensor<8x32xf32>) -> tensor<1x32xf32> loc("lead/mean")
  %e0 = graph.add %m0, %eps : (tensor<1x32xf32>, tensor<f32>) -> tensor<1x32xf32> loc("lead/add_eps")
  %q0 = graph.sqrt %e0 : (tensor<1x32xf32>) -> tensor<1x32xf32> loc("lead/sqrt")
  %y0 = graph.div %x, %q0 : (tensor<8x32xf32>, tensor<1x32xf32>) -> tensor<8x32xf32> loc("lead/div")
  %s1 = graph.mul %x, %x : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("flat/square")
  %m1 = graph.reduce_mean %s1 {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<8x32xf32>) -> tensor<8xf32> loc("flat/mean")
  %e1 = graph.add %m1, %eps : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32> loc("flat/add_eps")
  %q1 = graph.sqrt %e1 : (tensor<8xf32>) -> tensor<8xf32> loc("flat/sqrt")
  %c1 = graph.constant dense<[8, 1]> : tensor<2xi64> loc("flat/shape")
  %r1 = graph.reshape %q1, %c1 : (tensor<8xf32>, tensor<2xi64>) -> tensor<8x1xf32> loc("flat/reshape")
  %y1 = graph.div %x, %r1 : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32> loc("flat/div")
  %s2 = graph.pow %x, %three : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32> loc("cube/pow")
  %m2 = graph.reduce_mean %s2 {axes = array<i64: -1>} : (tensor<8x32xf32>) -> tensor<8x1xf32> loc("cube/mean")
  %e2 = graph.add %m2, %eps : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32> loc("cube/add_eps")
  %q2 = graph.sqrt %e2 : (tensor<8x1xf32>) -> tensor<8x1xf32> loc("cube/sqrt")
  %y2 = graph.div %x, %q2 : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32> loc("cube/div")
  %s3 = graph.mul %x, %x : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("noeps/square")
  %m3 = graph.reduce_mean %s3 {axes = array<i64: -1>} : (tensor<8x32xf32>) -> tensor<8x1xf32> loc("noeps/mean")
  %q3 = graph.sqrt %m3 : (tensor<8x1xf32>) -> tensor<8x1xf32> loc("noeps/sqrt")
  %y3 = graph.div %x, %q3 : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32> loc("noeps/div")
  func.return %y0, %y1, %y2, %y3 : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Left alone: the mean square is also used by another op (the rewrite would lose it).
// CHECK-LABEL: func.func @mean_used_elsewhere(
// CHECK-NOT:     graph.rms_norm
// CHECK:         func.return %y, %z
func.func @mean_used_elsewhere(%x: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x1xf32>) {
  %eps = graph.constant dense<1.0e-05> : tensor<f32> loc("eps")
  %sq = graph.mul %x, %x : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("square")
  %ms = graph.reduce_mean %sq {axes = array<i64: -1>} : (tensor<8x32xf32>) -> tensor<8x1xf32> loc("mean")
  %me = graph.add %ms, %eps : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32> loc("add_eps")
  %r = graph.sqrt %me : (tensor<8x1xf32>) -> tensor<8x1xf32> loc("sqrt")
  %y = graph.div %x, %r : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32> loc("div")
  %z = graph.exp %ms : (tensor<8x1xf32>) -> tensor<8x1xf32> loc("exp")
  func.return %y, %z : tensor<8x32xf32>, tensor<8x1xf32>
}

// -----

// Left alone: the root mean square is a function result.
// CHECK-LABEL: func.func @rms_returned(
// CHECK-NOT:     graph.rms_norm
// CHECK:         func.return %y, %r
func.func @rms_returned(%x: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x1xf32>) {
  %eps = graph.constant dense<1.0e-05> : tensor<f32> loc("eps")
  %sq = graph.mul %x, %x : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("square")
  %ms = graph.reduce_mean %sq {axes = array<i64: -1>} : (tensor<8x32xf32>) -> tensor<8x1xf32> loc("mean")
  %me = graph.add %ms, %eps : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32> loc("add_eps")
  %r = graph.sqrt %me : (tensor<8x1xf32>) -> tensor<8x1xf32> loc("sqrt")
  %y = graph.div %x, %r : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32> loc("div")
  func.return %y, %r : tensor<8x32xf32>, tensor<8x1xf32>
}

// -----

// Left alone: the square is tapped with graph.keep. The scale Mul after a tapped
// normalisation is not absorbed: the tap stays on the rms_norm, the Mul after it.
// CHECK-LABEL: func.func @keep_tapped(
// CHECK:         graph.pow %x, %two attributes {graph.keep}
// CHECK:         %n = graph.rms_norm %x, %n_scale {axis = 1 : i64, epsilon = 1.000000e-05 : f32} attributes {graph.keep}
// CHECK-NEXT:    %z = graph.mul %n, %w
// CHECK-NEXT:    func.return %y, %z
func.func @keep_tapped(%x: tensor<8x32xf32>, %w: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32> loc("two")
  %eps = graph.constant dense<1.0e-05> : tensor<f32> loc("eps")
  %sq = graph.pow %x, %two attributes {graph.keep} : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32> loc("pow")
  %ms = graph.reduce_mean %sq {axes = array<i64: -1>} : (tensor<8x32xf32>) -> tensor<8x1xf32> loc("mean")
  %me = graph.add %ms, %eps : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32> loc("add_eps")
  %r = graph.sqrt %me : (tensor<8x1xf32>) -> tensor<8x1xf32> loc("sqrt")
  %y = graph.div %x, %r : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32> loc("div")
  %s2 = graph.pow %x, %two : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32> loc("b/pow")
  %m2 = graph.reduce_mean %s2 {axes = array<i64: -1>} : (tensor<8x32xf32>) -> tensor<8x1xf32> loc("b/mean")
  %e2 = graph.add %m2, %eps : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32> loc("b/add_eps")
  %r2 = graph.sqrt %e2 : (tensor<8x1xf32>) -> tensor<8x1xf32> loc("b/sqrt")
  %n = graph.div %x, %r2 attributes {graph.keep} : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32> loc("b/div")
  %z = graph.mul %n, %w : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32> loc("b/mul")
  func.return %y, %z : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Left alone: the tail of a LayerNorm whose mean is needed (graph-recognize-layer-norm left it
// alone): d / sqrt(mean(d * d) + eps) of d = x - mean(x) fuses with its mean as one kernel.
// CHECK-LABEL: func.func @layer_norm_tail(
// CHECK-NOT:     graph.rms_norm
// CHECK:         func.return %n, %mean
func.func @layer_norm_tail(%x: tensor<1x8x32xf32>) -> (tensor<1x8x32xf32>, tensor<1x8x1xf32>) {
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
