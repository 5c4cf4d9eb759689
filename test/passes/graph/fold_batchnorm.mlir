// graph-fold-batchnorm: inference BatchNorm into the weights before it, else mul + add.
// BatchNorm below: a = scale / sqrt(var + eps) = [2, 1.5], shift = bias - mean * a = [0, 0.25].
// RUN: geir-opt %s --split-input-file -p graph-fold-batchnorm | filecheck %s
// RUN: geir-opt %s --split-input-file -p graph-fold-batchnorm,graph-fold-batchnorm | filecheck %s

// conv -> bn: w * a per output channel, (b - mean) * a + bias; the conv keeps
// both names and is still the graph output.
// CHECK-LABEL: func.func @conv_bn(
// CHECK-NEXT:    %w_folded = graph.constant dense<{{\[\[\[\[}}2.000000e+00]], {{\[\[}}2.000000e+00]]], {{\[\[\[}}1.500000e+00]], {{\[\[}}1.500000e+00]]]]> : tensor<2x2x1x1xf32> loc(fused["conv", "bn"])
// CHECK-NEXT:    %b_folded = graph.constant dense<[1.000000e+00, -5.000000e-01]> : tensor<2xf32> loc(fused["conv", "bn"])
// CHECK-NEXT:    %y = graph.conv %x, %w_folded, %b_folded {group = 1 : i64} : {{.*}} loc(fused["conv", "bn"])
// CHECK-NEXT:    func.return %y
func.func @conv_bn(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant dense<1.0> : tensor<2x2x1x1xf32> loc("w")
  %b = graph.constant dense<[0.5, -0.5]> : tensor<2xf32> loc("b")
  %scale = graph.constant dense<[2.0, 3.0]> : tensor<2xf32> loc("scale")
  %bias = graph.constant dense<1.0> : tensor<2xf32> loc("bias")
  %mean = graph.constant dense<0.5> : tensor<2xf32> loc("mean")
  %var = graph.constant dense<[0.0, 3.0]> : tensor<2xf32> loc("var")
  %c = graph.conv %x, %w, %b : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32> loc("conv")
  %y = graph.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32> loc("bn")
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

// Not into a conv whose result has another user (its weights stay): the
// BatchNorm becomes mul + add by [C, 1, 1] constants.
// CHECK-LABEL: func.func @conv_two_users(
// CHECK-NEXT:    %w = graph.constant dense<1.000000e+00> : tensor<2x2x1x1xf32> loc("w")
// CHECK-NEXT:    %c = graph.conv %x, %w : {{.*}} loc("conv")
// CHECK-NEXT:    %y_scale = graph.constant dense<{{\[\[\[}}2.000000e+00]], {{\[\[}}1.500000e+00]]]> : tensor<2x1x1xf32> loc("bn")
// CHECK-NEXT:    %y_shift = graph.constant dense<{{\[\[\[}}0.000000e+00]], {{\[\[}}2.500000e-01]]]> : tensor<2x1x1xf32> loc("bn")
// CHECK-NEXT:    %y_scaled = graph.mul %c, %y_scale : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32> loc("bn")
// CHECK-NEXT:    %y = graph.add %y_scaled, %y_shift : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32> loc("bn")
// CHECK-NEXT:    %r = graph.relu %c
// CHECK-NEXT:    func.return %y, %r
func.func @conv_two_users(%x: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = graph.constant dense<1.0> : tensor<2x2x1x1xf32> loc("w")
  %scale = graph.constant dense<[2.0, 3.0]> : tensor<2xf32> loc("scale")
  %bias = graph.constant dense<1.0> : tensor<2xf32> loc("bias")
  %mean = graph.constant dense<0.5> : tensor<2xf32> loc("mean")
  %var = graph.constant dense<[0.0, 3.0]> : tensor<2xf32> loc("var")
  %c = graph.conv %x, %w : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32> loc("conv")
  %y = graph.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32> loc("bn")
  %r = graph.relu %c : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> loc("relu")
  func.return %y, %r : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}

// -----

// Not into a conv with a non-constant weight either.
// CHECK-LABEL: func.func @conv_weight_arg(
// CHECK-NEXT:    %c = graph.conv %x, %w
// CHECK:         graph.mul %c
// CHECK-NEXT:    %y = graph.add
// CHECK-NEXT:    func.return %y
func.func @conv_weight_arg(%x: tensor<1x2x3x3xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32> {
  %scale = graph.constant dense<[2.0, 3.0]> : tensor<2xf32> loc("scale")
  %bias = graph.constant dense<1.0> : tensor<2xf32> loc("bias")
  %mean = graph.constant dense<0.5> : tensor<2xf32> loc("mean")
  %var = graph.constant dense<[0.0, 3.0]> : tensor<2xf32> loc("var")
  %c = graph.conv %x, %w : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32> loc("conv")
  %y = graph.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32> loc("bn")
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

// gemm (trans_b, beta = 2) -> bn: rows of b scaled, c' = beta * c * a + shift, beta = 1.
// CHECK-LABEL: func.func @gemm_bn(
// CHECK-NEXT:    %w_folded = graph.constant dense<{{\[\[}}2.000000e+00, 4.000000e+00, 6.000000e+00], [6.000000e+00, 7.500000e+00, 9.000000e+00]]> : tensor<2x3xf32> loc(fused["gemm", "bn"])
// CHECK-NEXT:    %cc_folded = graph.constant dense<[4.000000e+00, 6.250000e+00]> : tensor<2xf32> loc(fused["gemm", "bn"])
// CHECK-NEXT:    %y = graph.gemm %x, %w_folded, %cc_folded {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a = 0 : i64, trans_b = 1 : i64} : {{.*}} loc(fused["gemm", "bn"])
// CHECK-NEXT:    func.return %y
func.func @gemm_bn(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %w = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32> loc("w")
  %cc = graph.constant dense<[1.0, 2.0]> : tensor<2xf32> loc("c")
  %scale = graph.constant dense<[2.0, 3.0]> : tensor<2xf32> loc("scale")
  %bias = graph.constant dense<1.0> : tensor<2xf32> loc("bias")
  %mean = graph.constant dense<0.5> : tensor<2xf32> loc("mean")
  %var = graph.constant dense<[0.0, 3.0]> : tensor<2xf32> loc("var")
  %g = graph.gemm %x, %w, %cc {beta = 2.0 : f32, trans_b = 1 : i64} : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x2xf32> loc("gemm")
  %y = graph.batch_norm %g, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32> loc("bn")
  func.return %y : tensor<4x2xf32>
}

// -----

// 2-D matmul with a constant weight -> bn: a gemm with scaled columns and the shift as c.
// CHECK-LABEL: func.func @matmul_bn(
// CHECK-NEXT:    %w_folded = graph.constant dense<{{\[\[}}2.000000e+00, 3.000000e+00], [6.000000e+00, 6.000000e+00], [1.000000e+01, 9.000000e+00]]> : tensor<3x2xf32> loc(fused["matmul", "bn"])
// CHECK-NEXT:    %g_bias = graph.constant dense<[0.000000e+00, 2.500000e-01]> : tensor<2xf32> loc(fused["matmul", "bn"])
// CHECK-NEXT:    %y = graph.gemm %x, %w_folded, %g_bias {{.*}} loc(fused["matmul", "bn"])
// CHECK-NEXT:    func.return %y
func.func @matmul_bn(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32> loc("w")
  %scale = graph.constant dense<[2.0, 3.0]> : tensor<2xf32> loc("scale")
  %bias = graph.constant dense<1.0> : tensor<2xf32> loc("bias")
  %mean = graph.constant dense<0.5> : tensor<2xf32> loc("mean")
  %var = graph.constant dense<[0.0, 3.0]> : tensor<2xf32> loc("var")
  %g = graph.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32> loc("matmul")
  %y = graph.batch_norm %g, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32> loc("bn")
  func.return %y : tensor<4x2xf32>
}

// -----

// bn -> mul / add by per-channel constants (Caffe's BatchNorm + Scale): one
// affine map, a = [2, 1.5] * [10, 100], shift = [0, 0.25] * [10, 100] + [1, 2].
// CHECK-LABEL: func.func @scale(
// CHECK-NEXT:    %a_scale = graph.constant dense<{{\[\[\[}}2.000000e+01]], {{\[\[}}1.500000e+02]]]> : tensor<2x1x1xf32> loc(fused["bn", "mul", "add"])
// CHECK-NEXT:    %a_shift = graph.constant dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}2.700000e+01]]]> : tensor<2x1x1xf32> loc(fused["bn", "mul", "add"])
// CHECK-NEXT:    %a_scaled = graph.mul %x, %a_scale
// CHECK-NEXT:    %a = graph.add %a_scaled, %a_shift
// CHECK-NEXT:    func.return %a
func.func @scale(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %scale = graph.constant dense<[2.0, 3.0]> : tensor<2xf32> loc("scale")
  %bias = graph.constant dense<1.0> : tensor<2xf32> loc("bias")
  %mean = graph.constant dense<0.5> : tensor<2xf32> loc("mean")
  %var = graph.constant dense<[0.0, 3.0]> : tensor<2xf32> loc("var")
  %s = graph.constant dense<[[[10.0]], [[100.0]]]> : tensor<2x1x1xf32> loc("s")
  %t = graph.constant dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32> loc("t")
  %y = graph.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32> loc("bn")
  %m = graph.mul %s, %y : (tensor<2x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> loc("mul")
  %a = graph.add %m, %t : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32> loc("add")
  func.return %a : tensor<1x2x3x3xf32>
}

// -----

// Left alone: a mul that is not per channel ([3] varies along the last axis),
// and a BatchNorm with a non-constant parameter.
// CHECK-LABEL: func.func @kept(
// CHECK:         %y = graph.batch_norm %x, %scale, %bias, %mean, %var
// CHECK-NEXT:    %m = graph.mul %y, %s
// CHECK-NEXT:    func.return %m
func.func @kept(%x: tensor<1x2x3x3xf32>, %scale: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
  %bias = graph.constant dense<1.0> : tensor<2xf32> loc("bias")
  %mean = graph.constant dense<0.5> : tensor<2xf32> loc("mean")
  %var = graph.constant dense<[0.0, 3.0]> : tensor<2xf32> loc("var")
  %s = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32> loc("s")
  %y = graph.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32> loc("bn")
  %m = graph.mul %y, %s : (tensor<1x2x3x3xf32>, tensor<3xf32>) -> tensor<1x2x3x3xf32> loc("mul")
  func.return %m : tensor<1x2x3x3xf32>
}

// -----

// A shape-only conv weight (no bytes) folds into a shape-only weight named after it; the bias,
// computed from real constants, is real.
// CHECK-LABEL: func.func @conv_bn_shape_only(
// CHECK-NEXT:    %w_folded = graph.constant {geir.placeholder = "conv.weight/w_folded"} dense<0.000000e+00> : tensor<2x2x1x1xf32> loc(fused["conv", "bn"])
// CHECK-NEXT:    %b_folded = graph.constant dense<[1.000000e+00, -5.000000e-01]> : tensor<2xf32> loc(fused["conv", "bn"])
// CHECK-NEXT:    %y = graph.conv %x, %w_folded, %b_folded
func.func @conv_bn_shape_only(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant {geir.placeholder = "conv.weight"} dense<0.0> : tensor<2x2x1x1xf32> loc("w")
  %b = graph.constant dense<[0.5, -0.5]> : tensor<2xf32> loc("b")
  %scale = graph.constant dense<[2.0, 3.0]> : tensor<2xf32> loc("scale")
  %bias = graph.constant dense<1.0> : tensor<2xf32> loc("bias")
  %mean = graph.constant dense<0.5> : tensor<2xf32> loc("mean")
  %var = graph.constant dense<[0.0, 3.0]> : tensor<2xf32> loc("var")
  %c = graph.conv %x, %w, %b : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32> loc("conv")
  %y = graph.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32> loc("bn")
  func.return %y : tensor<1x2x3x3xf32>
}
