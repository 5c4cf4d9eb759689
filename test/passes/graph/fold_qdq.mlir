// graph-fold-qdq: dequantize -> conv / matmul / gemm into the int8 contraction and a
// dequantize of its int32 result; uint8 quantizes become int8; a dequantized accumulator
// quantized again becomes a requantize.
// RUN: geir-opt %s --split-input-file -p graph-fold-qdq | filecheck %s
// RUN: geir-opt %s --split-input-file -p graph-fold-qdq,graph-fold-qdq | filecheck %s
// RUN: geir-opt %s --split-input-file -p graph-fold-qdq,cse,graph-fold-qdq | filecheck %s --check-prefix=CSE

// Per-channel weights, a per-tensor int8 input with zero point 0, a float bias: the bias is
// rounded into an int32 one at the accumulator's scale sx * sw per output channel
// (1 / 0.125 = 8, -1 / 0.0625 = -16), the dequantize is all that is left after the conv.
// CHECK-LABEL: func.func @conv_float_bias(
// CHECK:         %q = graph.quantize %x, %sx, %zx
// CHECK-NEXT:    %wd_int8 = graph.constant dense_resource<wd_int8> : tensor<2x2x3x3xi8> loc("conv")
// CHECK-NEXT:    %y_bias_int32 = graph.constant dense<[8, -16]> : tensor<2xi32> loc("conv")
// CHECK-NEXT:    %y = graph.conv %q, %wd_int8, %y_bias_int32 {pads = array<i64: 1, 1, 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xi8>, tensor<2x2x3x3xi8>, tensor<2xi32>) -> tensor<1x2x4x4xi32> loc("conv")
// CHECK-NEXT:    %y_scale = graph.constant dense<{{\[\[\[\[}}1.250000e-01]], {{\[\[}}6.250000e-02]]]]> : tensor<1x2x1x1xf32> loc("conv")
// CHECK-NEXT:    %y_1 = graph.dequantize %y, %y_scale : (tensor<1x2x4x4xi32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("conv")
// CHECK-NEXT:    func.return %y_1
func.func @conv_float_bias(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %sx = graph.constant dense<0.5> : tensor<f32> loc("sx")
  %zx = graph.constant dense<0> : tensor<i8> loc("zx")
  %q = graph.quantize %x, %sx, %zx : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xi8> loc("q")
  %xd = graph.dequantize %q, %sx, %zx : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xf32> loc("dq")
  %wq = graph.constant dense<[[[[1, -2, 3], [4, 5, -6], [7, 8, 9]], [[-1, 2, 3], [4, 5, 6], [7, -8, 9]]], [[[1, 1, 1], [1, 1, 1], [1, 1, 1]], [[2, 2, 2], [2, 2, 2], [2, 2, 2]]]]> : tensor<2x2x3x3xi8> loc("wq")
  %sw = graph.constant dense<[[[[0.25]]], [[[0.125]]]]> : tensor<2x1x1x1xf32> loc("sw")
  %wd = graph.dequantize %wq, %sw : (tensor<2x2x3x3xi8>, tensor<2x1x1x1xf32>) -> tensor<2x2x3x3xf32> loc("wdq")
  %b = graph.constant dense<[1.0, -1.0]> : tensor<2xf32> loc("b")
  %y = graph.conv %xd, %wd, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32> loc("conv")
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// An input zero point (3) and an int32 bias dequantized at sx * sw: the padding holds the
// zero point (offset_x) and the bias takes off 3 * sum(w) per channel: 7 - 3 * 9, 2 - 3 * 18.
// CHECK-LABEL: func.func @conv_zero_point(
// CHECK:         %q = graph.quantize %x, %sx, %zx
// CHECK-NEXT:    %wd_int8 = graph.constant dense_resource<wd_int8> : tensor<2x1x3x3xi8>
// CHECK-NEXT:    %y_bias_int32 = graph.constant dense<[-20, -52]> : tensor<2xi32> loc("conv")
// CHECK-NEXT:    %y = graph.conv %q, %wd_int8, %y_bias_int32 {pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, offset_x = 3 : i64} : (tensor<1x1x4x4xi8>, tensor<2x1x3x3xi8>, tensor<2xi32>) -> tensor<1x2x2x2xi32>
// CHECK-NEXT:    %y_scale = graph.constant dense<1.250000e-01> : tensor<1x2x1x1xf32>
// CHECK-NEXT:    %y_1 = graph.dequantize %y, %y_scale
// CHECK-NEXT:    func.return %y_1
func.func @conv_zero_point(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %sx = graph.constant dense<0.5> : tensor<f32> loc("sx")
  %zx = graph.constant dense<3> : tensor<i8> loc("zx")
  %q = graph.quantize %x, %sx, %zx : (tensor<1x1x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x1x4x4xi8> loc("q")
  %xd = graph.dequantize %q, %sx, %zx : (tensor<1x1x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x1x4x4xf32> loc("dq")
  %wq = graph.constant dense<[[[[1, 1, 1], [1, 1, 1], [1, 1, 1]]], [[[2, 2, 2], [2, 2, 2], [2, 2, 2]]]]> : tensor<2x1x3x3xi8> loc("wq")
  %sw = graph.constant dense<0.25> : tensor<f32> loc("sw")
  %wd = graph.dequantize %wq, %sw : (tensor<2x1x3x3xi8>, tensor<f32>) -> tensor<2x1x3x3xf32> loc("wdq")
  %bq = graph.constant dense<[7, 2]> : tensor<2xi32> loc("bq")
  %sb = graph.constant dense<0.125> : tensor<f32> loc("sb")
  %bd = graph.dequantize %bq, %sb : (tensor<2xi32>, tensor<f32>) -> tensor<2xf32> loc("bdq")
  %y = graph.conv %xd, %wd, %bd {pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32> loc("conv")
  func.return %y : tensor<1x2x2x2xf32>
}

// -----

// uint8 (onnxruntime's default) becomes int8: zero point 130 - 128 = 2, in the quantize, the
// dequantize and the conv's offset_x.
// CHECK-LABEL: func.func @uint8_input(
// CHECK:         %zx_int8 = graph.constant dense<2> : tensor<i8> loc("q")
// CHECK-NEXT:    %q = graph.quantize %x, %sx, %zx_int8 : (tensor<1x1x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x1x4x4xi8> loc("q")
// CHECK-NEXT:    %wd_int8 = graph.constant
// CHECK-NEXT:    %y_bias_int32 = graph.constant dense<0> : tensor<1xi32>
// CHECK-NEXT:    %y = graph.conv %q, %wd_int8, %y_bias_int32 {pads = array<i64: 1, 1, 1, 1>, group = 1 : i64, offset_x = 2 : i64}
// CHECK-NOT:     ui8
func.func @uint8_input(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %sx = graph.constant dense<0.5> : tensor<f32> loc("sx")
  %zx = graph.constant dense<130> : tensor<ui8> loc("zx")
  %q = graph.quantize %x, %sx, %zx : (tensor<1x1x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x1x4x4xui8> loc("q")
  %xd = graph.dequantize %q, %sx, %zx : (tensor<1x1x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x1x4x4xf32> loc("dq")
  %wq = graph.constant dense<[[[[0, 1, 0], [1, -4, 1], [0, 1, 0]]]]> : tensor<1x1x3x3xi8> loc("wq")
  %sw = graph.constant dense<0.25> : tensor<f32> loc("sw")
  %wd = graph.dequantize %wq, %sw : (tensor<1x1x3x3xi8>, tensor<f32>) -> tensor<1x1x3x3xf32> loc("wdq")
  %y = graph.conv %xd, %wd {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x4x4xf32> loc("conv")
  func.return %y : tensor<1x1x4x4xf32>
}

// -----

// A matmul with [K, N] weights, per-column scales and an input zero point: the int8 matmul
// plus an int32 correction -zx * colsum(w) = [-2 * 3, -2 * -1], then the dequantize.
// CHECK-LABEL: func.func @matmul_per_column(
// CHECK:         %wd_int8 = graph.constant dense<{{\[\[}}1, 0], [1, -2], [1, 1]]> : tensor<3x2xi8> loc("mm")
// CHECK-NEXT:    %y = graph.matmul %q, %wd_int8 : (tensor<2x3xi8>, tensor<3x2xi8>) -> tensor<2x2xi32> loc("mm")
// CHECK-NEXT:    %y_bias_int32 = graph.constant dense<[-6, 2]> : tensor<2xi32> loc("mm")
// CHECK-NEXT:    %y_1 = graph.add %y, %y_bias_int32 : (tensor<2x2xi32>, tensor<2xi32>) -> tensor<2x2xi32> loc("mm")
// CHECK-NEXT:    %y_scale = graph.constant dense<[5.000000e-02, 2.500000e-02]> : tensor<2xf32> loc("mm")
// CHECK-NEXT:    %y_2 = graph.dequantize %y_1, %y_scale : (tensor<2x2xi32>, tensor<2xf32>) -> tensor<2x2xf32> loc("mm")
// CHECK-NEXT:    func.return %y_2
func.func @matmul_per_column(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %sx = graph.constant dense<0.1> : tensor<f32> loc("sx")
  %zx = graph.constant dense<2> : tensor<i8> loc("zx")
  %q = graph.quantize %x, %sx, %zx : (tensor<2x3xf32>, tensor<f32>, tensor<i8>) -> tensor<2x3xi8> loc("q")
  %xd = graph.dequantize %q, %sx, %zx : (tensor<2x3xi8>, tensor<f32>, tensor<i8>) -> tensor<2x3xf32> loc("dq")
  %wq = graph.constant dense<[[1, 0], [1, -2], [1, 1]]> : tensor<3x2xi8> loc("wq")
  %sw = graph.constant dense<[0.5, 0.25]> : tensor<2xf32> loc("sw")
  %wd = graph.dequantize %wq, %sw : (tensor<3x2xi8>, tensor<2xf32>) -> tensor<3x2xf32> loc("wdq")
  %y = graph.matmul %xd, %wd : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("mm")
  func.return %y : tensor<2x2xf32>
}

// -----

// A gemm with transposed weights (per-row scales), alpha 2 (into the scale: 0.1 * 0.5 * 2,
// 0.1 * 0.25 * 2) and a per-column float c rounded into the int32 bias at that scale; a gemm
// whose c is a whole [M, N] matrix adds it after the dequantize.
// CHECK-LABEL: func.func @gemm_trans_b(
// CHECK:         %y_bias_int32 = graph.constant dense<[5, 30]> : tensor<2xi32> loc("gemm")
// CHECK-NEXT:    %y = graph.gemm %q, %wd_int8, %y_bias_int32 {{{.*}}trans_b = 1 : i64} : (tensor<2x3xi8>, tensor<2x3xi8>, tensor<2xi32>) -> tensor<2x2xi32> loc("gemm")
// CHECK-NEXT:    %y_scale = graph.constant dense<[1.000000e-01, 5.000000e-02]> : tensor<2xf32> loc("gemm")
// CHECK-NEXT:    %y_1 = graph.dequantize %y, %y_scale
// CHECK:         %z = graph.gemm %q, %wd_int8_1 {{.*}} : (tensor<2x3xi8>, tensor<2x3xi8>) -> tensor<2x2xi32> loc("gemm_matrix_c")
// CHECK-NEXT:    %z_scale = graph.constant
// CHECK-NEXT:    %z_1 = graph.dequantize %z, %z_scale
// CHECK-NEXT:    %z_bias = graph.constant dense<{{\[\[}}5.000000e-01, 1.500000e+00], [2.500000e+00, 3.500000e+00]]> : tensor<2x2xf32> loc("gemm_matrix_c")
// CHECK-NEXT:    %z_2 = graph.add %z_1, %z_bias
// CHECK-NEXT:    func.return %y_1, %z_2
func.func @gemm_trans_b(%x: tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %sx = graph.constant dense<0.1> : tensor<f32> loc("sx")
  %zx = graph.constant dense<0> : tensor<i8> loc("zx")
  %q = graph.quantize %x, %sx, %zx : (tensor<2x3xf32>, tensor<f32>, tensor<i8>) -> tensor<2x3xi8> loc("q")
  %xd = graph.dequantize %q, %sx, %zx : (tensor<2x3xi8>, tensor<f32>, tensor<i8>) -> tensor<2x3xf32> loc("dq")
  %wq = graph.constant dense<[[1, 2, 3], [-1, 0, 1]]> : tensor<2x3xi8> loc("wq")
  %sw = graph.constant dense<[[0.5], [0.25]]> : tensor<2x1xf32> loc("sw")
  %wd = graph.dequantize %wq, %sw : (tensor<2x3xi8>, tensor<2x1xf32>) -> tensor<2x3xf32> loc("wdq")
  %c = graph.constant dense<[0.5, 1.5]> : tensor<2xf32> loc("c")
  %y = graph.gemm %xd, %wd, %c {alpha = 2.0 : f32, trans_b = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x2xf32> loc("gemm")
  %cm = graph.constant dense<[[0.5, 1.5], [2.5, 3.5]]> : tensor<2x2xf32> loc("cm")
  %z = graph.gemm %xd, %wd, %cm {trans_b = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> loc("gemm_matrix_c")
  func.return %y, %z : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// What must not fold: per-channel input parameters, weights that are not constant, uint8
// weights whose difference to the zero point leaves int8, a matmul of two activations.
// CHECK-LABEL: func.func @not_folded(
// CHECK:         %y0 = graph.conv %xc, %wd : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("per_channel_input")
// CHECK:         %y1 = graph.conv %xd, %wad : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("weights_not_constant")
// CHECK:         %y2 = graph.conv %xd, %wud : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("uint8_weights_beyond_int8")
// CHECK:         %y3 = graph.matmul %ad, %bd : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("two_activations")
// CHECK-NOT:     xi32>
func.func @not_folded(%x: tensor<1x2x4x4xf32>, %wa: tensor<2x2x1x1xi8>, %a: tensor<2x3xi8>, %b: tensor<3x2xi8>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<2x2xf32>) {
  %sc = graph.constant dense<[[[0.5]], [[0.25]]]> : tensor<2x1x1xf32> loc("sc")
  %zc = graph.constant dense<0> : tensor<2x1x1xi8> loc("zc")
  %qc = graph.quantize %x, %sc, %zc : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xi8>) -> tensor<1x2x4x4xi8> loc("qc")
  %xc = graph.dequantize %qc, %sc, %zc : (tensor<1x2x4x4xi8>, tensor<2x1x1xf32>, tensor<2x1x1xi8>) -> tensor<1x2x4x4xf32> loc("dqc")
  %s = graph.constant dense<0.5> : tensor<f32> loc("s")
  %z = graph.constant dense<0> : tensor<i8> loc("z")
  %wq = graph.constant dense<1> : tensor<2x2x1x1xi8> loc("wq")
  %wd = graph.dequantize %wq, %s, %z : (tensor<2x2x1x1xi8>, tensor<f32>, tensor<i8>) -> tensor<2x2x1x1xf32> loc("wdq")
  %y0 = graph.conv %xc, %wd : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("per_channel_input")
  %q = graph.quantize %x, %s, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xi8> loc("q")
  %xd = graph.dequantize %q, %s, %z : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xf32> loc("dq")
  %wad = graph.dequantize %wa, %s, %z : (tensor<2x2x1x1xi8>, tensor<f32>, tensor<i8>) -> tensor<2x2x1x1xf32> loc("wadq")
  %y1 = graph.conv %xd, %wad : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("weights_not_constant")
  %wu = graph.constant dense<200> : tensor<2x2x1x1xui8> loc("wu")
  %zu = graph.constant dense<0> : tensor<ui8> loc("zu")
  %wud = graph.dequantize %wu, %s, %zu : (tensor<2x2x1x1xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x2x1x1xf32> loc("wudq")
  %y2 = graph.conv %xd, %wud : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("uint8_weights_beyond_int8")
  %ad = graph.dequantize %a, %s, %z : (tensor<2x3xi8>, tensor<f32>, tensor<i8>) -> tensor<2x3xf32> loc("adq")
  %bd = graph.dequantize %b, %s, %z : (tensor<3x2xi8>, tensor<f32>, tensor<i8>) -> tensor<3x2xf32> loc("bdq")
  %y3 = graph.matmul %ad, %bd : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("two_activations")
  func.return %y0, %y1, %y2, %y3 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<2x2xf32>
}

// -----

// A per-tensor quantize of a concat read by nothing else moves onto the concat's operands
// (exact: one scale, elementwise), so each joins its producer's kernel and the concat
// moves int8.
// CHECK-LABEL: func.func @quantize_concat(
// CHECK:         %a_q = graph.quantize %a, %s, %z : (tensor<1x4x3x3xf32>, tensor<f32>, tensor<i8>) -> tensor<1x4x3x3xi8>
// CHECK-NEXT:    %b_q = graph.quantize %b, %s, %z : (tensor<1x2x3x3xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x3x3xi8>
// CHECK-NEXT:    %q = graph.concat %a_q, %b_q {axis = 1 : i64} : (tensor<1x4x3x3xi8>, tensor<1x2x3x3xi8>) -> tensor<1x6x3x3xi8>
// CHECK-NEXT:    func.return %q
func.func @quantize_concat(%a: tensor<1x4x3x3xf32>, %b: tensor<1x2x3x3xf32>) -> tensor<1x6x3x3xi8> {
  %s = graph.constant dense<0.5> : tensor<f32>
  %z = graph.constant dense<-3> : tensor<i8>
  %c = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x4x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x6x3x3xf32>
  %q = graph.quantize %c, %s, %z : (tensor<1x6x3x3xf32>, tensor<f32>, tensor<i8>) -> tensor<1x6x3x3xi8>
  func.return %q : tensor<1x6x3x3xi8>
}

// -----

// A quantize of a max pool (through the f32 cast graph-assign-precision puts before it) moves
// before the pool - both are monotone, so they commute exactly - and there it meets the
// dequantized accumulator: one requantize (relu by saturation at -128), then an int8 max pool.
// CHECK-LABEL: func.func @quantize_max_pool(
// CHECK:         %[[RQ:.*]] = graph.requantize %acc, %{{.*}}, %zy : (tensor<1x32x8x8xi32>, tensor<f32>, tensor<i8>) -> tensor<1x32x8x8xi8>
// CHECK-NEXT:    %q = graph.max_pool %[[RQ]] {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, ceil_mode = 0 : i64} : (tensor<1x32x8x8xi8>) -> tensor<1x32x4x4xi8> loc("pool")
// CHECK-NEXT:    func.return %q
func.func @quantize_max_pool(%acc: tensor<1x32x8x8xi32>) -> tensor<1x32x4x4xi8> {
  %s = graph.constant dense<0.5> : tensor<f32>
  %y = graph.dequantize %acc, %s : (tensor<1x32x8x8xi32>, tensor<f32>) -> tensor<1x32x8x8xf32>
  %h = graph.cast %y {to = f16} : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf16>
  %r = graph.relu %h : (tensor<1x32x8x8xf16>) -> tensor<1x32x8x8xf16>
  %p = graph.max_pool %r {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x32x8x8xf16>) -> tensor<1x32x4x4xf16> loc("pool")
  %f = graph.cast %p {to = f32} : (tensor<1x32x4x4xf16>) -> tensor<1x32x4x4xf32>
  %sy = graph.constant dense<0.25> : tensor<f32>
  %zy = graph.constant dense<-128> : tensor<i8>
  %q = graph.quantize %f, %sy, %zy : (tensor<1x32x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x32x4x4xi8>
  func.return %q : tensor<1x32x4x4xi8>
}

// -----

// A max pool between a dequantize and a quantize at the same parameters (onnxruntime's QDQ
// models write one so) is the int8 max pool of the quantized value; at another scale the
// pair stays (its quantize would not fold into anything).
// CHECK-LABEL: func.func @max_pool_qdq(
// CHECK-NEXT:    %s = graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    %z = graph.constant dense<-3> : tensor<i8>
// CHECK-NEXT:    %q = graph.max_pool %xq {{.*}} : (tensor<1x2x4x4xi8>) -> tensor<1x2x2x2xi8>
// CHECK:         %d2 = graph.dequantize %xq, %s, %z
// CHECK-NEXT:    %p2 = graph.max_pool %d2
// CHECK-NEXT:    %q2 = graph.quantize %p2, %s2, %z
// CHECK-NEXT:    func.return %q, %q2
func.func @max_pool_qdq(%xq: tensor<1x2x4x4xi8>) -> (tensor<1x2x2x2xi8>, tensor<1x2x2x2xi8>) {
  %s = graph.constant dense<0.5> : tensor<f32>
  %z = graph.constant dense<-3> : tensor<i8>
  %d = graph.dequantize %xq, %s, %z : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xf32>
  %p = graph.max_pool %d {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %q = graph.quantize %p, %s, %z : (tensor<1x2x2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x2x2xi8>
  %s2 = graph.constant dense<0.25> : tensor<f32>
  %d2 = graph.dequantize %xq, %s, %z : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xf32>
  %p2 = graph.max_pool %d2 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %q2 = graph.quantize %p2, %s2, %z : (tensor<1x2x2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x2x2xi8>
  func.return %q, %q2 : tensor<1x2x2x2xi8>, tensor<1x2x2x2xi8>
}

// -----

// Left alone, each pool fed by a dequantized accumulator of its own: a max pool read in float
// too, an average pool (its rounding does not commute), a quantize per channel, a negative
// scale (quantizing then reverses the order); and a max pool of a value read elsewhere too,
// where the quantize would only change places.
// CHECK-LABEL: func.func @quantize_pool_kept(
// CHECK:         %p = graph.max_pool %x
// CHECK-NEXT:    %q = graph.quantize %p, %s, %z
// CHECK:         %a = graph.avg_pool %x2
// CHECK-NEXT:    %qa = graph.quantize %a, %s, %z
// CHECK:         %p2 = graph.max_pool %x3
// CHECK-NEXT:    %qc = graph.quantize %p2, %sc, %z
// CHECK:         %p3 = graph.max_pool %x4
// CHECK-NEXT:    %qn = graph.quantize %p3, %sn, %z
// CHECK:         %p4 = graph.max_pool %y
// CHECK-NEXT:    %qy = graph.quantize %p4, %s, %z
// CHECK-NOT:     graph.requantize
func.func @quantize_pool_kept(%acc: tensor<1x2x4x4xi32>, %y: tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xi8>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xi8>, tensor<1x2x2x2xi8>, tensor<1x2x2x2xi8>, tensor<1x2x2x2xi8>, tensor<1x2x4x4xf32>) {
  %s = graph.constant dense<0.5> : tensor<f32>
  %sc = graph.constant dense<[[[[0.5]], [[0.25]]]]> : tensor<1x2x1x1xf32>
  %sn = graph.constant dense<-0.5> : tensor<f32>
  %z = graph.constant dense<0> : tensor<i8>
  %x = graph.dequantize %acc, %s : (tensor<1x2x4x4xi32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %q = graph.quantize %p, %s, %z : (tensor<1x2x2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x2x2xi8>
  %x2 = graph.dequantize %acc, %s : (tensor<1x2x4x4xi32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %a = graph.avg_pool %x2 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %qa = graph.quantize %a, %s, %z : (tensor<1x2x2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x2x2xi8>
  %x3 = graph.dequantize %acc, %s : (tensor<1x2x4x4xi32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p2 = graph.max_pool %x3 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %qc = graph.quantize %p2, %sc, %z : (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>, tensor<i8>) -> tensor<1x2x2x2xi8>
  %x4 = graph.dequantize %acc, %s : (tensor<1x2x4x4xi32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p3 = graph.max_pool %x4 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %qn = graph.quantize %p3, %sn, %z : (tensor<1x2x2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x2x2xi8>
  %p4 = graph.max_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %qy = graph.quantize %p4, %s, %z : (tensor<1x2x2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x2x2xi8>
  func.return %q, %p, %qa, %qc, %qn, %qy, %y : tensor<1x2x2x2xi8>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xi8>, tensor<1x2x2x2xi8>, tensor<1x2x2x2xi8>, tensor<1x2x2x2xi8>, tensor<1x2x4x4xf32>
}

// -----

// Inception's pool branch: a concat quantized for the 1x1 convs and max-pooled for another,
// calibrated at the concat's parameters. The pool's quantize moves before it and is the
// convs' quantize again: the pool reads the int8 concat, which (read in int8 only) takes the
// quantize onto its operands. At another scale the pool keeps its quantize.
// CHECK-LABEL: func.func @quantize_shared_pool(
// CHECK:         %qc = graph.quantize %cat, %s, %z
// CHECK-NEXT:    %[[Q:.*]] = graph.quantize %cat, %s, %z
// CHECK-NEXT:    %qp = graph.max_pool %[[Q]] {{.*}} -> tensor<1x4x2x2xi8>
// CHECK:         %p2 = graph.max_pool %cat2
// CHECK-NEXT:    %qp2 = graph.quantize %p2, %s2, %z
// CSE-LABEL:     func.func @quantize_shared_pool(
// CSE:             %a_q = graph.quantize %a, %s, %z
// CSE-NEXT:        %b_q = graph.quantize %b, %s, %z
// CSE-NEXT:        %qc = graph.concat %a_q, %b_q
// CSE-NEXT:        %qp = graph.max_pool %qc {{.*}} -> tensor<1x4x2x2xi8>
// CSE:             %p2 = graph.max_pool %cat2
// CSE-NEXT:        %qp2 = graph.quantize %p2, %s2, %z
func.func @quantize_shared_pool(%a: tensor<1x2x4x4xf32>, %b: tensor<1x2x4x4xf32>) -> (tensor<1x4x4x4xi8>, tensor<1x4x2x2xi8>, tensor<1x4x4x4xi8>, tensor<1x4x2x2xi8>) {
  %s = graph.constant dense<0.5> : tensor<f32>
  %s2 = graph.constant dense<0.25> : tensor<f32>
  %z = graph.constant dense<-128> : tensor<i8>
  %cat = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
  %qc = graph.quantize %cat, %s, %z : (tensor<1x4x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x4x4x4xi8>
  %p = graph.max_pool %cat {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>) -> tensor<1x4x2x2xf32>
  %qp = graph.quantize %p, %s, %z : (tensor<1x4x2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<1x4x2x2xi8>
  %cat2 = graph.concat %b, %a {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
  %qc2 = graph.quantize %cat2, %s, %z : (tensor<1x4x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x4x4x4xi8>
  %p2 = graph.max_pool %cat2 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>) -> tensor<1x4x2x2xf32>
  %qp2 = graph.quantize %p2, %s2, %z : (tensor<1x4x2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<1x4x2x2xi8>
  func.return %qc, %qp, %qc2, %qp2 : tensor<1x4x4x4xi8>, tensor<1x4x2x2xi8>, tensor<1x4x4x4xi8>, tensor<1x4x2x2xi8>
}

// -----

// ShuffleNet's channel shuffle between a group conv and the next: the quantize moves before
// the reshape / transpose / reshape (quantizing commutes with moving elements) and folds into
// the conv's requantize; the shuffle moves int8. Kept: a shuffle of a graph input (the
// quantize would only change places) and one whose transpose is read elsewhere too.
// CHECK-LABEL: func.func @quantize_shuffle(
// CHECK:         %[[RQ:.*]] = graph.requantize %acc
// CHECK-NEXT:    %[[A:.*]] = graph.reshape %[[RQ]], %s5 {{.*}} -> tensor<1x2x4x2x2xi8>
// CHECK-NEXT:    %[[B:.*]] = graph.transpose %[[A]] {{.*}} -> tensor<1x4x2x2x2xi8>
// CHECK-NEXT:    %q = graph.reshape %[[B]], %s4 {{.*}} -> tensor<1x8x2x2xi8>
// CHECK:         %t2 = graph.transpose %r2
// CHECK:         %q2 = graph.quantize %y2, %s, %z
// CHECK:         %t3 = graph.transpose %r3
// CHECK:         %q3 = graph.quantize %y3, %s, %z
func.func @quantize_shuffle(%acc: tensor<1x8x2x2xi32>, %x: tensor<1x8x2x2xf32>, %acc3: tensor<1x8x2x2xi32>) -> (tensor<1x8x2x2xi8>, tensor<1x8x2x2xi8>, tensor<1x8x2x2xi8>, tensor<1x4x2x2x2xf32>) {
  %s = graph.constant dense<0.5> : tensor<f32>
  %sa = graph.constant dense<0.25> : tensor<f32>
  %z = graph.constant dense<-128> : tensor<i8>
  %s5 = graph.constant dense<[1, 2, 4, 2, 2]> : tensor<5xi64>
  %s4 = graph.constant dense<[1, 8, 2, 2]> : tensor<4xi64>
  %d = graph.dequantize %acc, %sa : (tensor<1x8x2x2xi32>, tensor<f32>) -> tensor<1x8x2x2xf32>
  %r = graph.relu %d : (tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32>
  %a = graph.reshape %r, %s5 : (tensor<1x8x2x2xf32>, tensor<5xi64>) -> tensor<1x2x4x2x2xf32>
  %t = graph.transpose %a {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x4x2x2xf32>) -> tensor<1x4x2x2x2xf32>
  %y = graph.reshape %t, %s4 : (tensor<1x4x2x2x2xf32>, tensor<4xi64>) -> tensor<1x8x2x2xf32>
  %q = graph.quantize %y, %s, %z : (tensor<1x8x2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<1x8x2x2xi8>
  %r2 = graph.reshape %x, %s5 : (tensor<1x8x2x2xf32>, tensor<5xi64>) -> tensor<1x2x4x2x2xf32>
  %t2 = graph.transpose %r2 {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x4x2x2xf32>) -> tensor<1x4x2x2x2xf32>
  %y2 = graph.reshape %t2, %s4 : (tensor<1x4x2x2x2xf32>, tensor<4xi64>) -> tensor<1x8x2x2xf32>
  %q2 = graph.quantize %y2, %s, %z : (tensor<1x8x2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<1x8x2x2xi8>
  %d3 = graph.dequantize %acc3, %sa : (tensor<1x8x2x2xi32>, tensor<f32>) -> tensor<1x8x2x2xf32>
  %r3 = graph.reshape %d3, %s5 : (tensor<1x8x2x2xf32>, tensor<5xi64>) -> tensor<1x2x4x2x2xf32>
  %t3 = graph.transpose %r3 {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x4x2x2xf32>) -> tensor<1x4x2x2x2xf32>
  %y3 = graph.reshape %t3, %s4 : (tensor<1x4x2x2x2xf32>, tensor<4xi64>) -> tensor<1x8x2x2xf32>
  %q3 = graph.quantize %y3, %s, %z : (tensor<1x8x2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<1x8x2x2xi8>
  func.return %q, %q2, %q3, %t3 : tensor<1x8x2x2xi8>, tensor<1x8x2x2xi8>, tensor<1x8x2x2xi8>, tensor<1x4x2x2x2xf32>
}

// -----

// Read in float too (Inception-v2's average pool branch), the concat stays for that reader
// and the quantize still moves onto its operands, whose kernels then write both.
// CHECK-LABEL: func.func @quantize_concat_read_in_float(
// CHECK:         %ra = graph.relu %a
// CHECK-NEXT:    %rb = graph.relu %b
// CHECK-NEXT:    %c = graph.concat %ra, %rb {axis = 1 : i64} : (tensor<1x4x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x6x3x3xf32>
// CHECK-NEXT:    %ra_q = graph.quantize %ra, %s, %z : (tensor<1x4x3x3xf32>, tensor<f32>, tensor<i8>) -> tensor<1x4x3x3xi8>
// CHECK-NEXT:    %rb_q = graph.quantize %rb, %s, %z : (tensor<1x2x3x3xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x3x3xi8>
// CHECK-NEXT:    %q = graph.concat %ra_q, %rb_q {axis = 1 : i64} : (tensor<1x4x3x3xi8>, tensor<1x2x3x3xi8>) -> tensor<1x6x3x3xi8>
// CHECK-NEXT:    %p = graph.avg_pool %c
func.func @quantize_concat_read_in_float(%a: tensor<1x4x3x3xf32>, %b: tensor<1x2x3x3xf32>) -> (tensor<1x6x3x3xi8>, tensor<1x6x3x3xf32>) {
  %s = graph.constant dense<0.5> : tensor<f32>
  %z = graph.constant dense<-3> : tensor<i8>
  %ra = graph.relu %a : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %rb = graph.relu %b : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %c = graph.concat %ra, %rb {axis = 1 : i64} : (tensor<1x4x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x6x3x3xf32>
  %q = graph.quantize %c, %s, %z : (tensor<1x6x3x3xf32>, tensor<f32>, tensor<i8>) -> tensor<1x6x3x3xi8>
  %p = graph.avg_pool %c {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x6x3x3xf32>) -> tensor<1x6x3x3xf32>
  func.return %q, %p : tensor<1x6x3x3xi8>, tensor<1x6x3x3xf32>
}

// -----

// Left alone: a concat read in float too whose operands are function arguments (each would
// get a quantize kernel of its own, beside the concat's copy), and a quantize per channel
// (its scales would have to be split along the concat).
// CHECK-LABEL: func.func @quantize_concat_kept(
// CHECK:         %c = graph.concat %a, %b {axis = 1 : i64}
// CHECK-NEXT:    %q = graph.quantize %c, %s, %z
// CHECK:         %c2 = graph.concat %a, %b {axis = 1 : i64}
// CHECK-NEXT:    %q2 = graph.quantize %c2, %sc, %z
// CHECK-NOT:     graph.quantize %a
// CHECK:         func.return %q, %c, %q2
func.func @quantize_concat_kept(%a: tensor<1x4x3x3xf32>, %b: tensor<1x2x3x3xf32>) -> (tensor<1x6x3x3xi8>, tensor<1x6x3x3xf32>, tensor<1x6x3x3xi8>) {
  %s = graph.constant dense<0.5> : tensor<f32>
  %sc = graph.constant dense<[[[[0.5]], [[0.25]], [[0.5]], [[0.25]], [[0.5]], [[0.25]]]]> : tensor<1x6x1x1xf32>
  %z = graph.constant dense<-3> : tensor<i8>
  %c = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x4x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x6x3x3xf32>
  %q = graph.quantize %c, %s, %z : (tensor<1x6x3x3xf32>, tensor<f32>, tensor<i8>) -> tensor<1x6x3x3xi8>
  %c2 = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x4x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x6x3x3xf32>
  %q2 = graph.quantize %c2, %sc, %z : (tensor<1x6x3x3xf32>, tensor<1x6x1x1xf32>, tensor<i8>) -> tensor<1x6x3x3xi8>
  func.return %q, %c, %q2 : tensor<1x6x3x3xi8>, tensor<1x6x3x3xf32>, tensor<1x6x3x3xi8>
}
// -----

// A per-tensor dequantize of an int32 accumulator, quantized again: one requantize at
// s / s_y = 0.5 / 0.25 with the quantize's zero point.
// CHECK-LABEL: func.func @requantize_per_tensor(
// CHECK-NEXT:    %zy = graph.constant dense<3> : tensor<i8> loc("zy")
// CHECK-NEXT:    %q_scale = graph.constant dense<2.000000e+00> : tensor<f32> loc(fused["dq", "q"])
// CHECK-NEXT:    %q = graph.requantize %acc, %q_scale, %zy : (tensor<2x8xi32>, tensor<f32>, tensor<i8>) -> tensor<2x8xi8> loc(fused["dq", "q"])
// CHECK-NEXT:    func.return %q
func.func @requantize_per_tensor(%acc: tensor<2x8xi32>) -> tensor<2x8xi8> {
  %s = graph.constant dense<0.5> : tensor<f32> loc("s")
  %y = graph.dequantize %acc, %s : (tensor<2x8xi32>, tensor<f32>) -> tensor<2x8xf32> loc("dq")
  %sy = graph.constant dense<0.25> : tensor<f32> loc("sy")
  %zy = graph.constant dense<3> : tensor<i8> loc("zy")
  %q = graph.quantize %y, %sy, %zy : (tensor<2x8xf32>, tensor<f32>, tensor<i8>) -> tensor<2x8xi8> loc("q")
  func.return %q : tensor<2x8xi8>
}

// -----

// A conv on dequantized int8 with per-channel weights, then the next layer's quantize: the
// int8 conv (FoldContraction), then its accumulator requantized per output channel at
// sx * sw / s_y = 0.5 * [0.25, 0.125] / 0.5.
// CHECK-LABEL: func.func @requantize_per_channel(
// CHECK:         %y = graph.conv %q, %wd_int8 {pads = array<i64: 1, 1, 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xi8>, tensor<2x2x3x3xi8>) -> tensor<1x2x4x4xi32> loc("conv")
// CHECK-NEXT:    %q2_scale = graph.constant dense<{{\[\[\[\[}}2.500000e-01]], {{\[\[}}1.250000e-01]]]]> : tensor<1x2x1x1xf32> loc(fused["conv", "q2"])
// CHECK-NEXT:    %q2 = graph.requantize %y, %q2_scale, %zx : (tensor<1x2x4x4xi32>, tensor<1x2x1x1xf32>, tensor<i8>) -> tensor<1x2x4x4xi8> loc(fused["conv", "q2"])
// CHECK-NEXT:    func.return %q2
func.func @requantize_per_channel(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xi8> {
  %sx = graph.constant dense<0.5> : tensor<f32> loc("sx")
  %zx = graph.constant dense<0> : tensor<i8> loc("zx")
  %q = graph.quantize %x, %sx, %zx : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xi8> loc("q")
  %xd = graph.dequantize %q, %sx, %zx : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xf32> loc("dq")
  %wq = graph.constant dense<[[[[1, -2, 3], [4, 5, -6], [7, 8, 9]], [[-1, 2, 3], [4, 5, 6], [7, -8, 9]]], [[[1, 1, 1], [1, 1, 1], [1, 1, 1]], [[2, 2, 2], [2, 2, 2], [2, 2, 2]]]]> : tensor<2x2x3x3xi8> loc("wq")
  %sw = graph.constant dense<[[[[0.25]]], [[[0.125]]]]> : tensor<2x1x1x1xf32> loc("sw")
  %wd = graph.dequantize %wq, %sw : (tensor<2x2x3x3xi8>, tensor<2x1x1x1xf32>) -> tensor<2x2x3x3xf32> loc("wdq")
  %y = graph.conv %xd, %wd {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32> loc("conv")
  %q2 = graph.quantize %y, %sx, %zx : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xi8> loc("q2")
  func.return %q2 : tensor<1x2x4x4xi8>
}

// -----

// On a rounding boundary the one multiply may round the other way: 3 * 0.7 / 0.6 is 3.5;
// rounded twice in f32 (x * s, then / s_y) it is 3.4999998 and gives 3; the fold's scale is
// 0.7 / 0.6 as the FIX pipe holds it (10 mantissa bits: 1.16699219), so 3 times it is 3.501 and
// gives 4: one quantization step, the fold's documented error (an acc of 3 is among the
// numerics test's random inputs).
// CHECK-LABEL: func.func @requantize_rounding_boundary(
// CHECK:         %q_scale = graph.constant dense<1.16699219> : tensor<f32>
// CHECK-NEXT:    %q = graph.requantize %acc, %q_scale, %zy
func.func @requantize_rounding_boundary(%acc: tensor<2x8xi32>) -> tensor<2x8xi8> {
  %s = graph.constant dense<0.7> : tensor<f32> loc("s")
  %y = graph.dequantize %acc, %s : (tensor<2x8xi32>, tensor<f32>) -> tensor<2x8xf32> loc("dq")
  %sy = graph.constant dense<0.6> : tensor<f32> loc("sy")
  %zy = graph.constant dense<0> : tensor<i8> loc("zy")
  %q = graph.quantize %y, %sy, %zy : (tensor<2x8xf32>, tensor<f32>, tensor<i8>) -> tensor<2x8xi8> loc("q")
  func.return %q : tensor<2x8xi8>
}

// -----

// Through the f16 casts graph-assign-precision puts around a relu, at zero point -128 (the
// int8 minimum): saturation does the relu, so it goes with the casts. Likewise a uint8
// quantize at zero point 0.
// CHECK-LABEL: func.func @requantize_f16_relu_dropped(
// CHECK-NEXT:    %zy = graph.constant dense<-128> : tensor<i8> loc("zy")
// CHECK-NEXT:    %q_scale = graph.constant dense<[1.000000e+00, 5.000000e-01, 2.500000e-01, 1.250000e-01]> : tensor<4xf32> loc(fused["dq", "h", "relu", "f", "q"])
// CHECK-NEXT:    %q = graph.requantize %acc, %q_scale, %zy : (tensor<2x4xi32>, tensor<4xf32>, tensor<i8>) -> tensor<2x4xi8> loc(fused["dq", "h", "relu", "f", "q"])
// CHECK-NEXT:    %zu = graph.constant dense<0> : tensor<ui8> loc("zu")
// CHECK-NEXT:    %u_scale = graph.constant dense<4.000000e+00> : tensor<f32> loc(fused["dq2", "relu2", "u"])
// CHECK-NEXT:    %u = graph.requantize %acc, %u_scale, %zu : (tensor<2x4xi32>, tensor<f32>, tensor<ui8>) -> tensor<2x4xui8> loc(fused["dq2", "relu2", "u"])
// CHECK-NEXT:    func.return %q, %u
func.func @requantize_f16_relu_dropped(%acc: tensor<2x4xi32>) -> (tensor<2x4xi8>, tensor<2x4xui8>) {
  %s = graph.constant dense<[0.5, 0.25, 0.125, 0.0625]> : tensor<4xf32> loc("s")
  %y = graph.dequantize %acc, %s : (tensor<2x4xi32>, tensor<4xf32>) -> tensor<2x4xf32> loc("dq")
  %h = graph.cast %y {to = f16} : (tensor<2x4xf32>) -> tensor<2x4xf16> loc("h")
  %r = graph.relu %h : (tensor<2x4xf16>) -> tensor<2x4xf16> loc("relu")
  %f = graph.cast %r {to = f32} : (tensor<2x4xf16>) -> tensor<2x4xf32> loc("f")
  %sy = graph.constant dense<0.5> : tensor<f32> loc("sy")
  %zy = graph.constant dense<-128> : tensor<i8> loc("zy")
  %q = graph.quantize %f, %sy, %zy : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8> loc("q")
  %s2 = graph.constant dense<2.0> : tensor<f32> loc("s2")
  %y2 = graph.dequantize %acc, %s2 : (tensor<2x4xi32>, tensor<f32>) -> tensor<2x4xf32> loc("dq2")
  %r2 = graph.relu %y2 : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("relu2")
  %zu = graph.constant dense<0> : tensor<ui8> loc("zu")
  %u = graph.quantize %r2, %sy, %zu : (tensor<2x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x4xui8> loc("u")
  func.return %q, %u : tensor<2x4xi8>, tensor<2x4xui8>
}

// -----

// A relu at int8 zero point 0: max(quantize(x), 0) is a relu of the requantized int8 values.
// CHECK-LABEL: func.func @requantize_relu_zero_point_0(
// CHECK-NEXT:    %zy = graph.constant dense<0> : tensor<i8> loc("zy")
// CHECK-NEXT:    %q_scale = graph.constant dense<3.000000e+00> : tensor<f32> loc(fused["dq", "q"])
// CHECK-NEXT:    %q_pre_relu = graph.requantize %acc, %q_scale, %zy : (tensor<1x3x2x2xi32>, tensor<f32>, tensor<i8>) -> tensor<1x3x2x2xi8> loc(fused["dq", "q"])
// CHECK-NEXT:    %q = graph.relu %q_pre_relu : (tensor<1x3x2x2xi8>) -> tensor<1x3x2x2xi8> loc("relu")
// CHECK-NEXT:    func.return %q
func.func @requantize_relu_zero_point_0(%acc: tensor<1x3x2x2xi32>) -> tensor<1x3x2x2xi8> {
  %s = graph.constant dense<0.75> : tensor<f32> loc("s")
  %y = graph.dequantize %acc, %s : (tensor<1x3x2x2xi32>, tensor<f32>) -> tensor<1x3x2x2xf32> loc("dq")
  %r = graph.relu %y : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32> loc("relu")
  %sy = graph.constant dense<0.25> : tensor<f32> loc("sy")
  %zy = graph.constant dense<0> : tensor<i8> loc("zy")
  %q = graph.quantize %r, %sy, %zy : (tensor<1x3x2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<1x3x2x2xi8> loc("q")
  func.return %q : tensor<1x3x2x2xi8>
}

// -----

// Left alone: a dequantized value read elsewhere too, a relu at zero point 5 (neither
// saturation nor a relu of the result), a scale that is not a constant, a dequantize with a
// zero point, a quantize scale that is not positive.
// CHECK-LABEL: func.func @requantize_kept(
// CHECK-NOT:     graph.requantize
// CHECK:         %y0 = graph.dequantize %acc, %s
// CHECK-NEXT:    %q0 = graph.quantize %y0, %sy, %z
// CHECK:         %r1 = graph.relu %y1
// CHECK:         %q1 = graph.quantize %r1, %sy, %z5
// CHECK:         %y2 = graph.dequantize %acc, %sa
// CHECK-NEXT:    %q2 = graph.quantize %y2, %sy, %z
// CHECK:         %y3 = graph.dequantize %acc, %s, %za
// CHECK-NEXT:    %q3 = graph.quantize %y3, %sy, %z
// CHECK:         %y4 = graph.dequantize %acc, %s
// CHECK-NEXT:    %q4 = graph.quantize %y4, %sn, %z
// CHECK-NOT:     graph.requantize
func.func @requantize_kept(%acc: tensor<2x4xi32>, %sa: tensor<f32>) -> (tensor<2x4xi8>, tensor<2x4xf32>, tensor<2x4xi8>, tensor<2x4xi8>, tensor<2x4xi8>, tensor<2x4xi8>) {
  %s = graph.constant dense<0.5> : tensor<f32> loc("s")
  %sy = graph.constant dense<0.25> : tensor<f32> loc("sy")
  %z = graph.constant dense<0> : tensor<i8> loc("z")
  %y0 = graph.dequantize %acc, %s : (tensor<2x4xi32>, tensor<f32>) -> tensor<2x4xf32> loc("read_elsewhere")
  %q0 = graph.quantize %y0, %sy, %z : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8> loc("q0")
  %y1 = graph.dequantize %acc, %s : (tensor<2x4xi32>, tensor<f32>) -> tensor<2x4xf32> loc("dq1")
  %r1 = graph.relu %y1 : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("relu_zero_point_5")
  %z5 = graph.constant dense<5> : tensor<i8> loc("z5")
  %q1 = graph.quantize %r1, %sy, %z5 : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8> loc("q1")
  %y2 = graph.dequantize %acc, %sa : (tensor<2x4xi32>, tensor<f32>) -> tensor<2x4xf32> loc("scale_not_constant")
  %q2 = graph.quantize %y2, %sy, %z : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8> loc("q2")
  %za = graph.constant dense<2> : tensor<i32> loc("za")
  %y3 = graph.dequantize %acc, %s, %za : (tensor<2x4xi32>, tensor<f32>, tensor<i32>) -> tensor<2x4xf32> loc("dequantize_zero_point")
  %q3 = graph.quantize %y3, %sy, %z : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8> loc("q3")
  %sn = graph.constant dense<-0.25> : tensor<f32> loc("sn")
  %y4 = graph.dequantize %acc, %s : (tensor<2x4xi32>, tensor<f32>) -> tensor<2x4xf32> loc("dq4")
  %q4 = graph.quantize %y4, %sn, %z : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8> loc("negative_scale")
  func.return %q0, %y0, %q1, %q2, %q3, %q4 : tensor<2x4xi8>, tensor<2x4xf32>, tensor<2x4xi8>, tensor<2x4xi8>, tensor<2x4xi8>, tensor<2x4xi8>
}
