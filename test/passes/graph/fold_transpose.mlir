// graph-fold-transpose: transposes into gemm flags and pre-transposed weights,
// pads into conv / pool pads, per-channel mul / add into a conv's weights.
// RUN: geir-opt %s --split-input-file -p graph-fold-transpose | filecheck %s
// RUN: geir-opt %s --split-input-file -p graph-fold-transpose,graph-fold-transpose | filecheck %s
// -inf cannot be written as an f32 literal, so the max_pool case computes it:
// RUN: geir-opt %s --split-input-file -p graph-fold-constants,graph-fold-transpose | filecheck %s --check-prefix=FOLDED

// gemm of 2-D transposes: the flags flip (a transpose with another user stays for it).
// CHECK-LABEL: func.func @gemm_flags(
// CHECK-NEXT:    %tb = graph.transpose %b
// CHECK-NEXT:    %g = graph.gemm %a, %b {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a = 1 : i64, trans_b = 0 : i64} : (tensor<3x4xf32>, tensor<3x5xf32>) -> tensor<4x5xf32> loc(fused["ta", "tb", "gemm"])
// CHECK-NEXT:    %r = graph.relu %tb
// CHECK-NEXT:    func.return %g, %r
func.func @gemm_flags(%a: tensor<3x4xf32>, %b: tensor<3x5xf32>) -> (tensor<4x5xf32>, tensor<5x3xf32>) {
  %ta = graph.transpose %a {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32> loc("ta")
  %tb = graph.transpose %b : (tensor<3x5xf32>) -> tensor<5x3xf32> loc("tb")
  %g = graph.gemm %ta, %tb {trans_b = 1 : i64} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<4x5xf32> loc("gemm")
  %r = graph.relu %tb : (tensor<5x3xf32>) -> tensor<5x3xf32> loc("relu")
  func.return %g, %r : tensor<4x5xf32>, tensor<5x3xf32>
}

// -----

// matmul: a transposed constant weight is pre-transposed; 2-D operands become
// a gemm with trans_b; a batched non-constant transpose stays.
// CHECK-LABEL: func.func @matmuls(
// CHECK-NEXT:    %w_t = graph.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32> loc("wt")
// CHECK-NEXT:    %a = graph.matmul %x, %w_t : (tensor<2x4x3xf32>, tensor<3x2xf32>) -> tensor<2x4x2xf32> loc(fused["wt", "mm_const"])
// CHECK-NEXT:    %b = graph.gemm %y, %z {{{.*}} trans_a = 0 : i64, trans_b = 1 : i64} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<4x5xf32> loc(fused["zt", "mm_2d"])
// CHECK-NEXT:    %ut = graph.transpose %u
// CHECK-NEXT:    %c = graph.matmul %x, %ut
// CHECK-NEXT:    func.return %a, %b, %c
func.func @matmuls(%x: tensor<2x4x3xf32>, %y: tensor<4x3xf32>, %z: tensor<5x3xf32>, %u: tensor<2x5x3xf32>) -> (tensor<2x4x2xf32>, tensor<4x5xf32>, tensor<2x4x5xf32>) {
  %w = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32> loc("w")
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32> loc("wt")
  %a = graph.matmul %x, %wt : (tensor<2x4x3xf32>, tensor<3x2xf32>) -> tensor<2x4x2xf32> loc("mm_const")
  %zt = graph.transpose %z {perm = array<i64: 1, 0>} : (tensor<5x3xf32>) -> tensor<3x5xf32> loc("zt")
  %b = graph.matmul %y, %zt : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32> loc("mm_2d")
  %ut = graph.transpose %u {perm = array<i64: 0, 2, 1>} : (tensor<2x5x3xf32>) -> tensor<2x3x5xf32> loc("ut")
  %c = graph.matmul %x, %ut : (tensor<2x4x3xf32>, tensor<2x3x5xf32>) -> tensor<2x4x5xf32> loc("mm_3d")
  func.return %a, %b, %c : tensor<2x4x2xf32>, tensor<4x5xf32>, tensor<2x4x5xf32>
}

// -----

// Zero spatial padding into conv and avg_pool(count_include_pad=1) pads,
// the integer minimum into an integer max_pool.
// CHECK-LABEL: func.func @pads(
// CHECK:         %c = graph.conv %x, %w {pads = array<i64: 1, 2, 1, 2>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x6x8xf32> loc(fused["pad", "conv"])
// CHECK-NEXT:    %a = graph.avg_pool %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 2, 1, 2>, ceil_mode = 0 : i64, count_include_pad = 1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x5x7xf32> loc(fused["pad", "avg"])
// CHECK-NEXT:    %m = graph.max_pool %i {kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 0 : i64} : (tensor<1x2x4x4xi32>) -> tensor<1x2x5x5xi32> loc(fused["pad_min", "max"])
// CHECK-NEXT:    func.return %c, %a, %m
func.func @pads(%x: tensor<1x2x4x4xf32>, %i: tensor<1x2x4x4xi32>) -> (tensor<1x3x6x8xf32>, tensor<1x2x5x7xf32>, tensor<1x2x5x5xi32>) {
  %p = graph.constant dense<[0, 0, 1, 2, 0, 0, 1, 2]> : tensor<8xi64> loc("p")
  %w = graph.constant dense<1.0> : tensor<3x2x1x1xf32> loc("w")
  %xp = graph.pad %x, %p : (tensor<1x2x4x4xf32>, tensor<8xi64>) -> tensor<1x2x6x8xf32> loc("pad")
  %c = graph.conv %xp, %w : (tensor<1x2x6x8xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x6x8xf32> loc("conv")
  %a = graph.avg_pool %xp {kernel_shape = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<1x2x6x8xf32>) -> tensor<1x2x5x7xf32> loc("avg")
  %p2 = graph.constant dense<[1, 1, 1, 1]> : tensor<4xi64> loc("p2")
  %axes = graph.constant dense<[2, 3]> : tensor<2xi64> loc("axes")
  %min = graph.constant dense<-2147483648> : tensor<i32> loc("min")
  %ip = graph.pad %i, %p2, %min, %axes : (tensor<1x2x4x4xi32>, tensor<4xi64>, tensor<i32>, tensor<2xi64>) -> tensor<1x2x6x6xi32> loc("pad_min")
  %m = graph.max_pool %ip {kernel_shape = array<i64: 2, 2>} : (tensor<1x2x6x6xi32>) -> tensor<1x2x5x5xi32> loc("max")
  func.return %c, %a, %m : tensor<1x3x6x8xf32>, tensor<1x2x5x7xf32>, tensor<1x2x5x5xi32>
}

// -----

// A float max_pool takes a -inf pad (computed here: in FOLDED it is a constant,
// in the plain run the pad value is not a constant and the pad stays).
// CHECK-LABEL: func.func @max_pool_ninf(
// CHECK:         %xn = graph.pad %x, %p, %ninf
// CHECK-NEXT:    %m = graph.max_pool %xn
// FOLDED-LABEL: func.func @max_pool_ninf(
// FOLDED-NEXT:    %m = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 0 : i64} : {{.*}} loc(fused["pad", "max"])
// FOLDED-NEXT:    func.return %m
func.func @max_pool_ninf(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x5x5xf32> {
  %p = graph.constant dense<[0, 0, 1, 1, 0, 0, 1, 1]> : tensor<8xi64> loc("p")
  %zero = graph.constant dense<0.0> : tensor<f32> loc("zero")
  %ninf = graph.log %zero : (tensor<f32>) -> tensor<f32> loc("ninf")
  %xn = graph.pad %x, %p, %ninf : (tensor<1x2x4x4xf32>, tensor<8xi64>, tensor<f32>) -> tensor<1x2x6x6xf32> loc("pad")
  %m = graph.max_pool %xn {kernel_shape = array<i64: 2, 2>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x5x5xf32> loc("max")
  func.return %m : tensor<1x2x5x5xf32>
}

// -----

// Left alone: a pad value of 1 before a conv, zero padding before
// avg_pool(count_include_pad=0) and before max_pool, padding of the channel
// dim, reflect padding, and ceil_mode pooling.
// CHECK-LABEL: func.func @pads_kept(
// CHECK:         %c = graph.conv %x1, %w
// CHECK:         %a = graph.avg_pool %x0
// CHECK-NEXT:    %m = graph.max_pool %x0
// CHECK:         %cc = graph.conv %xc, %w3
// CHECK-NEXT:    %xr = graph.pad %x, %p {mode = "reflect"}
// CHECK-NEXT:    %r = graph.avg_pool %xr
// CHECK-NEXT:    func.return %c, %a, %m, %cc, %r
func.func @pads_kept(%x: tensor<1x2x4x4xf32>) -> (tensor<1x3x6x6xf32>, tensor<1x2x5x5xf32>, tensor<1x2x5x5xf32>, tensor<1x3x4x4xf32>, tensor<1x2x3x3xf32>) {
  %p = graph.constant dense<[0, 0, 1, 1, 0, 0, 1, 1]> : tensor<8xi64> loc("p")
  %one = graph.constant dense<1.0> : tensor<f32> loc("one")
  %w = graph.constant dense<1.0> : tensor<3x2x1x1xf32> loc("w")
  %x1 = graph.pad %x, %p, %one : (tensor<1x2x4x4xf32>, tensor<8xi64>, tensor<f32>) -> tensor<1x2x6x6xf32> loc("pad_one")
  %c = graph.conv %x1, %w : (tensor<1x2x6x6xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x6x6xf32> loc("conv_one")
  %x0 = graph.pad %x, %p : (tensor<1x2x4x4xf32>, tensor<8xi64>) -> tensor<1x2x6x6xf32> loc("pad")
  %a = graph.avg_pool %x0 {kernel_shape = array<i64: 2, 2>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x5x5xf32> loc("avg_exclude")
  %m = graph.max_pool %x0 {kernel_shape = array<i64: 2, 2>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x5x5xf32> loc("max_zero")
  %pc = graph.constant dense<[0, 1, 0, 0, 0, 0, 0, 0]> : tensor<8xi64> loc("pc")
  %xc = graph.pad %x, %pc : (tensor<1x2x4x4xf32>, tensor<8xi64>) -> tensor<1x3x4x4xf32> loc("pad_channel")
  %w3 = graph.constant dense<1.0> : tensor<3x3x1x1xf32> loc("w3")
  %cc = graph.conv %xc, %w3 : (tensor<1x3x4x4xf32>, tensor<3x3x1x1xf32>) -> tensor<1x3x4x4xf32> loc("conv_channel")
  %xr = graph.pad %x, %p {mode = "reflect"} : (tensor<1x2x4x4xf32>, tensor<8xi64>) -> tensor<1x2x6x6xf32> loc("pad_reflect")
  %r = graph.avg_pool %xr {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32> loc("avg_reflect")
  func.return %c, %a, %m, %cc, %r : tensor<1x3x6x6xf32>, tensor<1x2x5x5xf32>, tensor<1x2x5x5xf32>, tensor<1x3x4x4xf32>, tensor<1x2x3x3xf32>
}

// -----

// CHECK-LABEL: func.func @ceil_mode(
// CHECK-NEXT:    %p = graph.constant
// CHECK-NEXT:    %xp = graph.pad %x, %p
// CHECK-NEXT:    %a = graph.avg_pool %xp
func.func @ceil_mode(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32> {
  %p = graph.constant dense<[0, 0, 0, 0, 0, 0, 1, 1]> : tensor<8xi64> loc("p")
  %xp = graph.pad %x, %p : (tensor<1x1x4x4xf32>, tensor<8xi64>) -> tensor<1x1x5x5xf32> loc("pad")
  %a = graph.avg_pool %xp {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64, count_include_pad = 1 : i64} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32> loc("avg_ceil")
  func.return %a : tensor<1x1x3x3xf32>
}

// -----

// conv -> mul [C,1,1] -> add [1,C,1,1]: scaled filters and bias, one conv
// with the three names. Not when the conv result has another user.
// CHECK-LABEL: func.func @channel_affine(
// CHECK:         %w_folded = graph.constant dense<{{\[\[\[\[}}2.000000e+00]], {{\[\[}}2.000000e+00]]], {{\[\[\[}}3.000000e+00]], {{\[\[}}3.000000e+00]]]]> : tensor<2x2x1x1xf32> loc(fused["conv", "mul", "add"])
// CHECK-NEXT:    %c_bias_folded = graph.constant dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32> loc(fused["conv", "mul", "add"])
// CHECK-NEXT:    %a = graph.conv %x, %w_folded, %c_bias_folded {group = 1 : i64} : {{.*}} loc(fused["conv", "mul", "add"])
// CHECK-NEXT:    %c2 = graph.conv %x, %w
// CHECK-NEXT:    %m2 = graph.mul %c2, %s
// CHECK-NEXT:    %r = graph.add %m2, %c2
// CHECK-NEXT:    func.return %a, %r
func.func @channel_affine(%x: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = graph.constant dense<1.0> : tensor<2x2x1x1xf32> loc("w")
  %s = graph.constant dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32> loc("s")
  %t = graph.constant dense<[[[[1.0]], [[-1.0]]]]> : tensor<1x2x1x1xf32> loc("t")
  %c = graph.conv %x, %w : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32> loc("conv")
  %m = graph.mul %c, %s : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32> loc("mul")
  %a = graph.add %t, %m : (tensor<1x2x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> loc("add")
  %c2 = graph.conv %x, %w : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32> loc("conv2")
  %m2 = graph.mul %c2, %s : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32> loc("mul2")
  %r = graph.add %m2, %c2 : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> loc("two_users")
  func.return %a, %r : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}
