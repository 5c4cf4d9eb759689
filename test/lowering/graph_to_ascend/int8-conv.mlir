// convert-graph-to-ascend on int8 convolutions (docs/quantization.md "Kernels").
// RUN: geir-opt %s --split-input-file -p graph-fuse,convert-graph-to-ascend | filecheck %s

// conv(i8) -> dequantize (per channel) -> relu -> quantize: one mix kernel writing int8.
// The cube multiplies i8 x i8 into an i32 l0c (K in fractals of 32), load3d pads with the
// input's zero point (offset_x), FIX stages the i32 tile in the kernel's own gm scratch
// (no output has its type), the epilogue converts it to f32, adds the i32 bias, scales,
// divides by the output scale, rounds half to even, adds the zero point, saturates and
// converts to i8. The relu is no pass of its own: with a positive scale it is the clamp's
// lower bound, max(-128, zero point) = -5.
// CHECK-LABEL: ascend.kernel @{{.*}}k0_fusion(
// CHECK-SAME:    %q: memref<1x32x8x8xi8, "gm">, %acc: memref<32x64xi32, "gm">)
// CHECK-SAME:    core_type = "mix", geir.scratch = 1 : i64, template = "conv"
// CHECK-DAG:     ascend.alloc {{.*}} : memref<{{[0-9]+}}x{{[0-9]+}}xi8, "l0a">
// CHECK-DAG:     ascend.alloc {{.*}} : memref<{{[0-9]+}}x{{[0-9]+}}xi8, "l0b">
// CHECK-DAG:     ascend.alloc {{.*}} : memref<{{[0-9]+}}x{{[0-9]+}}xi32, "l0c">
// CHECK:         %[[LO:.*]] = arith.constant -5.000000e+00 : f32
// CHECK:         ascend.load3d {{.*}} channels = 8 : i64, pad_value = -3 : i64} : memref<{{.*}}xi8, "l1"> to memref<{{.*}}xi8, "l0b">
// CHECK:         ascend.mmad {{.*}} : memref<{{.*}}xi8, "l0a">, memref<{{.*}}xi8, "l0b">, memref<{{.*}}xi32, "l0c">
// CHECK:         ascend.copy %l0c, {{.*}} : memref<{{.*}}xi32, "l0c"> to memref<{{.*}}xi32, {{.*}}"gm">
// CHECK:         ascend.vcast {{.*}} : memref<{{.*}}xi32, {{.*}}"ub">, memref<{{.*}}xf32, {{.*}}"ub">
// CHECK:         ascend.vadd
// CHECK-NEXT:    ascend.vmul
// CHECK-NEXT:    ascend.vdiv
// CHECK-NEXT:    ascend.vround
// CHECK-NEXT:    ascend.vadds
// CHECK-NEXT:    ascend.vmaxs %{{.*}}, %[[LO]], %{{.*}} :
// CHECK-NEXT:    ascend.vmins
// CHECK:         ascend.vcast {{.*}} {round = "rint"} : memref<{{.*}}xf32, {{.*}}"ub">, memref<{{.*}}xi8, {{.*}}"ub">
// CHECK:         ascend.launch @{{.*}}k0_fusion
// CHECK-NOT:     ascend.launch
func.func @conv_dq_relu_q(%x: tensor<1x8x8x8xi8>, %w: tensor<32x8x3x3xi8>) -> tensor<1x32x8x8xi8> {
  %b = graph.constant dense<-40> : tensor<32xi32>
  %s = graph.constant dense<0.01> : tensor<1x32x1x1xf32>
  %s2 = graph.constant dense<0.03> : tensor<f32>
  %z2 = graph.constant dense<-5> : tensor<i8>
  %y = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, offset_x = -3 : i64} : (tensor<1x8x8x8xi8>, tensor<32x8x3x3xi8>, tensor<32xi32>) -> tensor<1x32x8x8xi32>
  %d = graph.dequantize %y, %s : (tensor<1x32x8x8xi32>, tensor<1x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %r = graph.relu %d : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %q = graph.quantize %r, %s2, %z2 : (tensor<1x32x8x8xf32>, tensor<f32>, tensor<i8>) -> tensor<1x32x8x8xi8>
  func.return %q : tensor<1x32x8x8xi8>
}

// -----
// The same with a zero point of 0 (symmetric): the result is only stored, and the store's
// vcast rounds half to even itself, so there is no vround either (clamping to integer bounds
// before rounding gives what clamping after does). The relu is the clamp's bound 0.
// CHECK-LABEL: ascend.kernel @{{.*}}k0_fusion(
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         ascend.vmul
// CHECK-NEXT:    ascend.vdiv
// CHECK-NEXT:    ascend.vmaxs %{{.*}}, %[[ZERO]], %{{.*}} :
// CHECK-NEXT:    ascend.vmins
// CHECK-NEXT:    memref.subview %out0
// CHECK-NEXT:    ascend.vcast {{.*}} {round = "rint"} : memref<{{.*}}xf32, {{.*}}"ub">, memref<{{.*}}xi8, {{.*}}"ub">
func.func @conv_dq_relu_q_symmetric(%x: tensor<1x8x8x8xi8>, %w: tensor<32x8x3x3xi8>) -> tensor<1x32x8x8xi8> {
  %s = graph.constant dense<0.01> : tensor<1x32x1x1xf32>
  %s2 = graph.constant dense<0.03> : tensor<f32>
  %z2 = graph.constant dense<0> : tensor<i8>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xi8>, tensor<32x8x3x3xi8>) -> tensor<1x32x8x8xi32>
  %d = graph.dequantize %y, %s : (tensor<1x32x8x8xi32>, tensor<1x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %r = graph.relu %d : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %q = graph.quantize %r, %s2, %z2 : (tensor<1x32x8x8xf32>, tensor<f32>, tensor<i8>) -> tensor<1x32x8x8xi8>
  func.return %q : tensor<1x32x8x8xi8>
}

// -----
// The relu's result is returned too: it stays a pass, and the clamp loses its lower bound
// (a value >= 0 over a positive scale quantizes to >= the zero point; the quantized result is
// still only stored: no vround).
// CHECK-LABEL: ascend.kernel @{{.*}}k0_fusion(
// CHECK:         %[[MAX:.*]] = arith.constant 1.270000e+02 : f32
// CHECK:         ascend.vrelu
// CHECK-NEXT:    ascend.vdiv
// CHECK-NEXT:    ascend.vmins %{{.*}}, %[[MAX]], %{{.*}} :
// CHECK:         ascend.vcast {{.*}} {round = "rint"}
func.func @conv_dq_relu_q_relu_kept(%x: tensor<1x8x8x8xi8>, %w: tensor<32x8x3x3xi8>) -> (tensor<1x32x8x8xi8>, tensor<1x32x8x8xf32>) {
  %s = graph.constant dense<0.01> : tensor<1x32x1x1xf32>
  %s2 = graph.constant dense<0.03> : tensor<f32>
  %z2 = graph.constant dense<0> : tensor<i8>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xi8>, tensor<32x8x3x3xi8>) -> tensor<1x32x8x8xi32>
  %d = graph.dequantize %y, %s : (tensor<1x32x8x8xi32>, tensor<1x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %r = graph.relu %d : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %q = graph.quantize %r, %s2, %z2 : (tensor<1x32x8x8xf32>, tensor<f32>, tensor<i8>) -> tensor<1x32x8x8xi8>
  func.return %q, %r : tensor<1x32x8x8xi8>, tensor<1x32x8x8xf32>
}

// -----
// Per-channel zero points (a side, not one scalar): the relu stays a pass, and so does vround.
// CHECK-LABEL: ascend.kernel @{{.*}}k0_fusion(
// CHECK:         ascend.vrelu
// CHECK-NEXT:    ascend.vdiv
// CHECK-NEXT:    ascend.vround
// CHECK-NEXT:    ascend.vadd
func.func @conv_dq_relu_q_per_channel_zero_points(%x: tensor<1x8x8x8xi8>, %w: tensor<32x8x3x3xi8>) -> tensor<1x32x8x8xi8> {
  %s = graph.constant dense<0.01> : tensor<1x32x1x1xf32>
  %s2 = graph.constant dense<0.03> : tensor<1x32x1x1xf32>
  %z2 = graph.constant dense<[[[[1]], [[2]], [[3]], [[4]], [[5]], [[6]], [[7]], [[8]], [[1]], [[2]], [[3]], [[4]], [[5]], [[6]], [[7]], [[8]], [[1]], [[2]], [[3]], [[4]], [[5]], [[6]], [[7]], [[8]], [[1]], [[2]], [[3]], [[4]], [[5]], [[6]], [[7]], [[8]]]]> : tensor<1x32x1x1xi8>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xi8>, tensor<32x8x3x3xi8>) -> tensor<1x32x8x8xi32>
  %d = graph.dequantize %y, %s : (tensor<1x32x8x8xi32>, tensor<1x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %r = graph.relu %d : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %q = graph.quantize %r, %s2, %z2 : (tensor<1x32x8x8xf32>, tensor<1x32x1x1xf32>, tensor<1x32x1x1xi8>) -> tensor<1x32x8x8xi8>
  func.return %q : tensor<1x32x8x8xi8>
}

// -----
// A float conv's load3d pads with zeros: no pad value.
// CHECK-LABEL: ascend.kernel @{{.*}}k0_conv(
// CHECK:         ascend.load3d {{.*}} channels = 8 : i64} : memref<{{.*}}xf16, "l1"> to memref<{{.*}}xf16, "l0b">
func.func @float_conv(%x: tensor<1x8x8x8xf16>, %w: tensor<32x8x3x3xf16>) -> tensor<1x32x8x8xf16> {
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xf16>, tensor<32x8x3x3xf16>) -> tensor<1x32x8x8xf16>
  func.return %y : tensor<1x32x8x8xf16>
}

// -----
// A uint8 contraction is not the cube's (graph-fold-qdq retypes uint8 activations to
// int8): the reference fallback runs it.
// CHECK-LABEL: ascend.kernel @{{.*}}k0_conv(
// CHECK-SAME:    fallback
// CHECK-NOT:     ascend.mmad
// CHECK:         ascend.reference
func.func @uint8_conv(%x: tensor<1x4x6x6xui8>, %w: tensor<8x4x3x3xi8>) -> tensor<1x8x6x6xi32> {
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, offset_x = 128 : i64} : (tensor<1x4x6x6xui8>, tensor<8x4x3x3xi8>) -> tensor<1x8x6x6xi32>
  func.return %y : tensor<1x8x6x6xi32>
}
