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

// -----

// Scalars out of matmul operands: the attention's q * s @ transpose(k) * s
// becomes one scale by s * s after the product (the transpose now feeds the
// matmul); one side, a scale on the left of the mul, and a div by a rank-0
// constant (a factor 1/t) each leave one mul after the product.
// CHECK-LABEL: func.func @scalar_out_of_matmul(
// CHECK-NEXT:    %kt = graph.transpose %k
// CHECK-NEXT:    %qk_unscaled = graph.matmul %q, %kt : (tensor<2x4x3xf32>, tensor<2x3x4xf32>) -> tensor<2x4x4xf32> loc(fused["mq", "mk", "qk"])
// CHECK-NEXT:    %s_product = graph.constant dense<0.124999993> : tensor<1xf32> loc(fused["mq", "mk", "qk"])
// CHECK-NEXT:    %qk = graph.mul %qk_unscaled, %s_product : (tensor<2x4x4xf32>, tensor<1xf32>) -> tensor<2x4x4xf32> loc(fused["mq", "mk", "qk"])
// CHECK-NEXT:    %one_unscaled = graph.matmul %q, %w : {{.*}} loc(fused["m3", "one"])
// CHECK-NEXT:    %three_product = graph.constant dense<3.000000e+00> : tensor<1x1xf32> loc(fused["m3", "one"])
// CHECK-NEXT:    %one = graph.mul %one_unscaled, %three_product
// CHECK-NEXT:    %d_unscaled = graph.matmul %q, %w : {{.*}} loc(fused["div", "d"])
// CHECK-NEXT:    %t_product = graph.constant dense<2.500000e-01> : tensor<f32> loc(fused["div", "d"])
// CHECK-NEXT:    %d = graph.mul %d_unscaled, %t_product
// CHECK-NEXT:    func.return %qk, %one, %d
func.func @scalar_out_of_matmul(%q: tensor<2x4x3xf32>, %k: tensor<2x4x3xf32>, %w: tensor<3x5xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x5xf32>, tensor<2x4x5xf32>) {
  %s = graph.constant dense<0.353553385> : tensor<1xf32> loc("s")
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x3xf32>) -> tensor<2x3x4xf32> loc("kt")
  %qs = graph.mul %q, %s : (tensor<2x4x3xf32>, tensor<1xf32>) -> tensor<2x4x3xf32> loc("mq")
  %ks = graph.mul %kt, %s : (tensor<2x3x4xf32>, tensor<1xf32>) -> tensor<2x3x4xf32> loc("mk")
  %qk = graph.matmul %qs, %ks : (tensor<2x4x3xf32>, tensor<2x3x4xf32>) -> tensor<2x4x4xf32> loc("qk")
  %three = graph.constant dense<3.0> : tensor<1x1xf32> loc("three")
  %w3 = graph.mul %three, %w : (tensor<1x1xf32>, tensor<3x5xf32>) -> tensor<3x5xf32> loc("m3")
  %one = graph.matmul %q, %w3 : (tensor<2x4x3xf32>, tensor<3x5xf32>) -> tensor<2x4x5xf32> loc("one")
  %t = graph.constant dense<4.0> : tensor<f32> loc("t")
  %qt = graph.div %q, %t : (tensor<2x4x3xf32>, tensor<f32>) -> tensor<2x4x3xf32> loc("div")
  %d = graph.matmul %qt, %w : (tensor<2x4x3xf32>, tensor<3x5xf32>) -> tensor<2x4x5xf32> loc("d")
  func.return %qk, %one, %d : tensor<2x4x4xf32>, tensor<2x4x5xf32>, tensor<2x4x5xf32>
}

// -----

// A constant operand only the matmul reads takes the scales (0.5 / 4): no op
// is added. A weight with another user is not copied: the mul comes after.
// CHECK-LABEL: func.func @scalar_into_weight(
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %v_scaled = graph.constant dense<{{\[\[}}1.250000e-01, 2.500000e-01], [3.750000e-01, 5.000000e-01]]> : tensor<2x2xf32> loc(fused["mh", "div", "mm"])
// CHECK-NEXT:    %a = graph.matmul %x, %v_scaled : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32> loc(fused["mh", "div", "mm"])
// CHECK-NEXT:    %b_unscaled = graph.matmul %x, %w
// CHECK-NEXT:    %h_product = graph.constant dense<5.000000e-01>
// CHECK-NEXT:    %b = graph.mul %b_unscaled, %h_product
// CHECK-NEXT:    %r = graph.relu %w
// CHECK-NEXT:    func.return %a, %b, %r
func.func @scalar_into_weight(%x: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x2xf32>) {
  %h = graph.constant dense<0.5> : tensor<1xf32> loc("h")
  %four = graph.constant dense<4.0> : tensor<1xf32> loc("four")
  %v = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32> loc("v")
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32> loc("w")
  %xh = graph.mul %x, %h : (tensor<3x2xf32>, tensor<1xf32>) -> tensor<3x2xf32> loc("mh")
  %v4 = graph.div %v, %four : (tensor<2x2xf32>, tensor<1xf32>) -> tensor<2x2xf32> loc("div")
  %a = graph.matmul %xh, %v4 : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32> loc("mm")
  %xh2 = graph.mul %x, %h : (tensor<3x2xf32>, tensor<1xf32>) -> tensor<3x2xf32> loc("mh2")
  %b = graph.matmul %xh2, %w : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32> loc("shared")
  %r = graph.relu %w : (tensor<2x2xf32>) -> tensor<2x2xf32> loc("r")
  func.return %a, %b, %r : tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x2xf32>
}

// -----

// gemm: the scales go into alpha (2 * 0.5 * 3), beta and c untouched.
// CHECK-LABEL: func.func @scalar_into_gemm_alpha(
// CHECK-NEXT:    %g = graph.gemm %a, %b, %c {alpha = 3.000000e+00 : f32, beta = 5.000000e-01 : f32, trans_a = 0 : i64, trans_b = 1 : i64} : {{.*}} loc(fused["ma", "mb", "gemm"])
// CHECK-NEXT:    func.return %g
func.func @scalar_into_gemm_alpha(%a: tensor<4x3xf32>, %b: tensor<5x3xf32>, %c: tensor<5xf32>) -> tensor<4x5xf32> {
  %h = graph.constant dense<0.5> : tensor<1xf32> loc("h")
  %three = graph.constant dense<3.0> : tensor<f32> loc("three")
  %as = graph.mul %a, %h : (tensor<4x3xf32>, tensor<1xf32>) -> tensor<4x3xf32> loc("ma")
  %bs = graph.mul %b, %three : (tensor<5x3xf32>, tensor<f32>) -> tensor<5x3xf32> loc("mb")
  %g = graph.gemm %as, %bs, %c {alpha = 2.0 : f32, beta = 0.5 : f32, trans_b = 1 : i64} : (tensor<4x3xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<4x5xf32> loc("gemm")
  func.return %g : tensor<4x5xf32>
}

// -----

// Left alone: a scale that is not a constant, a per-column [1,3] scale (not a
// scalar), a scaled operand with a second user, a one-element scale whose
// broadcast grows the operand's rank, a graph.keep tap, a div of the scalar by
// the operand, a div by 0, and f16 / integer products.
// CHECK-LABEL: func.func @scalar_kept(
// CHECK-NEXT:    %xv = graph.mul %x, %v
// CHECK-NEXT:    %a = graph.matmul %xv, %w
// CHECK-NEXT:    %c = graph.constant
// CHECK-NEXT:    %xc = graph.mul %x, %c
// CHECK-NEXT:    %b = graph.matmul %xc, %w
// CHECK-NEXT:    %s = graph.constant
// CHECK-NEXT:    %xs = graph.mul %x, %s
// CHECK-NEXT:    %u = graph.matmul %xs, %w
// CHECK-NEXT:    %r = graph.relu %xs
// CHECK-NEXT:    %s3 = graph.constant
// CHECK-NEXT:    %x3 = graph.mul %x, %s3
// CHECK-NEXT:    %g = graph.matmul %x3, %w
// CHECK-NEXT:    %xk = graph.mul %x, %s attributes {graph.keep}
// CHECK-NEXT:    %k = graph.matmul %xk, %w
// CHECK-NEXT:    %sx = graph.div %s, %x
// CHECK-NEXT:    %i = graph.matmul %sx, %w
// CHECK-NEXT:    %z = graph.constant
// CHECK-NEXT:    %xz = graph.div %x, %z
// CHECK-NEXT:    %dz = graph.matmul %xz, %w
// CHECK:         %hs = graph.mul %h, %s16
// CHECK-NEXT:    %f16 = graph.matmul %hs, %h16
// CHECK:         %ns = graph.mul %n, %two
// CHECK-NEXT:    %int = graph.matmul %ns, %n
func.func @scalar_kept(%x: tensor<2x3xf32>, %v: tensor<2x3xf32>, %w: tensor<3x2xf32>, %h: tensor<2x2xf16>, %h16: tensor<2x2xf16>, %n: tensor<2x2xi32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x3xf32>, tensor<1x2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf16>, tensor<2x2xi32>) {
  %xv = graph.mul %x, %v : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("nonconst")
  %a = graph.matmul %xv, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("a")
  %c = graph.constant dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf32> loc("c")
  %xc = graph.mul %x, %c : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32> loc("per_column")
  %b = graph.matmul %xc, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("b")
  %s = graph.constant dense<2.0> : tensor<1xf32> loc("s")
  %xs = graph.mul %x, %s : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32> loc("two_users")
  %u = graph.matmul %xs, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("u")
  %r = graph.relu %xs : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("r")
  %s3 = graph.constant dense<2.0> : tensor<1x1x1xf32> loc("s3")
  %x3 = graph.mul %x, %s3 : (tensor<2x3xf32>, tensor<1x1x1xf32>) -> tensor<1x2x3xf32> loc("grows")
  %g = graph.matmul %x3, %w : (tensor<1x2x3xf32>, tensor<3x2xf32>) -> tensor<1x2x2xf32> loc("g")
  %xk = graph.mul %x, %s attributes {graph.keep} : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32> loc("tap")
  %k = graph.matmul %xk, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("k")
  %sx = graph.div %s, %x : (tensor<1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("inverse")
  %i = graph.matmul %sx, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("i")
  %z = graph.constant dense<0.0> : tensor<1xf32> loc("z")
  %xz = graph.div %x, %z : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32> loc("by_zero")
  %dz = graph.matmul %xz, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("dz")
  %s16 = graph.constant dense<0.5> : tensor<1xf16> loc("s16")
  %hs = graph.mul %h, %s16 : (tensor<2x2xf16>, tensor<1xf16>) -> tensor<2x2xf16> loc("half")
  %f16 = graph.matmul %hs, %h16 : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16> loc("f16")
  %two = graph.constant dense<2> : tensor<1xi32> loc("two")
  %ns = graph.mul %n, %two : (tensor<2x2xi32>, tensor<1xi32>) -> tensor<2x2xi32> loc("integer")
  %int = graph.matmul %ns, %n : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi32> loc("int")
  func.return %a, %b, %u, %r, %g, %k, %i, %dz, %f16, %int : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x3xf32>, tensor<1x2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf16>, tensor<2x2xi32>
}
