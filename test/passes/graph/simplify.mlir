// graph-simplify: every graph optimisation to a fixed point, then cse and dce.
// RUN: geir-opt %s --split-input-file -p graph-simplify | filecheck %s --check-prefixes=CHECK,SAFE,ALL
// RUN: geir-opt %s --split-input-file -p graph-simplify,graph-simplify | filecheck %s --check-prefixes=CHECK,SAFE,ALL
// RUN: geir-opt %s --split-input-file -p 'graph-simplify{fast-math=true}' | filecheck %s --check-prefixes=CHECK,FAST,ALL
// RUN: geir-opt %s --split-input-file -p 'graph-simplify{max-rounds=1}' | filecheck %s --check-prefixes=CHECK,SAFE,ONE

// Identity and Dropout go, the Pad and the BatchNorm fold into the conv (one
// op with the three names), the Shape/Gather/Concat target becomes a constant.
// With fast-math x - x is 0, then x + 0 is x: the rules feed each other.
// CHECK-LABEL: func.func @pipeline(
// CHECK-NEXT:    %w_folded = graph.constant dense_resource<w_folded> : tensor<2x2x3x3xf32> loc(fused["conv", "bn"])
// CHECK-NEXT:    %c_bias = graph.constant dense<[0.000000e+00, 2.500000e-01]> : tensor<2xf32> loc(fused["conv", "bn"])
// CHECK-NEXT:    %y = graph.conv %x, %w_folded, %c_bias {pads = array<i64: 1, 1, 1, 1>, group = 1 : i64} : {{.*}} loc(fused["pad", "conv", "bn"])
// CHECK-NEXT:    %r = graph.relu %y
// CHECK-NEXT:    %t = graph.constant dense<[1, -1]> : tensor<2xi64> loc("target")
// CHECK-NEXT:    %f = graph.reshape %r, %t : (tensor<1x2x4x4xf32>, tensor<2xi64>) -> tensor<1x32xf32> loc("flatten")
// SAFE-NEXT:     %z = graph.sub %f, %f
// SAFE-NEXT:     %o = graph.add %f, %z
// SAFE-NEXT:     %e = graph.relu %o
// FAST-NEXT:     %e = graph.relu %f
// CHECK-NEXT:    func.return %e
// The filters of output channel 0 are scaled by 2.0 (0x40000000), of channel 1 by 1.5 (0x3FC00000).
// CHECK:         w_folded: "0x04000000{{(00000040)+(0000C03F)+}}"
func.func @pipeline(%x: tensor<1x2x4x4xf32>) -> tensor<1x32xf32> {
  %p = graph.constant dense<[0, 0, 1, 1, 0, 0, 1, 1]> : tensor<8xi64> loc("p")
  %w = graph.constant dense<1.0> : tensor<2x2x3x3xf32> loc("w")
  %scale = graph.constant dense<[2.0, 3.0]> : tensor<2xf32> loc("scale")
  %bias = graph.constant dense<1.0> : tensor<2xf32> loc("bias")
  %mean = graph.constant dense<0.5> : tensor<2xf32> loc("mean")
  %var = graph.constant dense<[0.0, 3.0]> : tensor<2xf32> loc("var")
  %xi = graph.identity %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("identity")
  %xp = graph.pad %xi, %p : (tensor<1x2x4x4xf32>, tensor<8xi64>) -> tensor<1x2x6x6xf32> loc("pad")
  %c = graph.conv %xp, %w : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32> loc("conv")
  %y = graph.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32> loc("bn")
  %r = graph.relu %y : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("relu")
  %s = graph.shape %r : (tensor<1x2x4x4xf32>) -> tensor<4xi64> loc("shape")
  %i0 = graph.constant dense<0> : tensor<1xi64> loc("i0")
  %n = graph.gather %s, %i0 {axis = 0 : i64} : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64> loc("batch")
  %m1 = graph.constant dense<[-1]> : tensor<1xi64> loc("m1")
  %t = graph.concat %n, %m1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64> loc("target")
  %f = graph.reshape %r, %t : (tensor<1x2x4x4xf32>, tensor<2xi64>) -> tensor<1x32xf32> loc("flatten")
  %d = graph.dropout %f : (tensor<1x32xf32>) -> tensor<1x32xf32> loc("dropout")
  %z = graph.sub %d, %d : (tensor<1x32xf32>, tensor<1x32xf32>) -> tensor<1x32xf32> loc("zero")
  %o = graph.add %d, %z : (tensor<1x32xf32>, tensor<1x32xf32>) -> tensor<1x32xf32> loc("add_zero")
  %e = graph.relu %o : (tensor<1x32xf32>) -> tensor<1x32xf32> loc("out")
  func.return %e : tensor<1x32xf32>
}

// -----

// A second round: fold-batchnorm turns this identity BatchNorm
// (a = 1 / sqrt(0.75 + 0.25) = 1, shift = 0) into x * 1 + 0, which the next
// round's canonicalize removes; max-rounds=1 stops before that.
// CHECK-LABEL: func.func @rounds(
// ALL-NEXT:      %r = graph.relu %x : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> loc("relu")
// ONE-NEXT:      %y_scale = graph.constant dense<1.000000e+00> : tensor<2x1x1xf32> loc("bn")
// ONE-NEXT:      %y_shift = graph.constant dense<0.000000e+00> : tensor<2x1x1xf32> loc("bn")
// ONE-NEXT:      %y_scaled = graph.mul %x, %y_scale
// ONE-NEXT:      %y = graph.add %y_scaled, %y_shift
// ONE-NEXT:      %r = graph.relu %y
// CHECK-NEXT:    func.return %r
func.func @rounds(%x: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %one = graph.constant dense<1.0> : tensor<2xf32> loc("one")
  %zero = graph.constant dense<0.0> : tensor<2xf32> loc("zero")
  %var = graph.constant dense<0.75> : tensor<2xf32> loc("var")
  %y = graph.batch_norm %x, %one, %zero, %zero, %var {epsilon = 0.25 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32> loc("bn")
  %r = graph.relu %y : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> loc("relu")
  func.return %r : tensor<1x2x2x2xf32>
}
