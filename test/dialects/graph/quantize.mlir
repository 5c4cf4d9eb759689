// Round trip of the quantized forms: graph.quantize / graph.dequantize (per tensor and
// per channel, int8 and uint8, int32 accumulators), graph.requantize and the int8
// contractions (int32 result).
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: func.func @qdq(
func.func @qdq(%x: tensor<2x4x3x3xf32>, %s: tensor<f32>, %zu: tensor<ui8>, %zs: tensor<i8>, %sc: tensor<1x4x1x1xf32>, %zc: tensor<1x4x1x1xi8>, %h: tensor<2x4x3x3xf16>, %sh: tensor<f16>) {
  // CHECK-NEXT: %u = graph.quantize %x, %s, %zu : (tensor<2x4x3x3xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x4x3x3xui8>
  %u = graph.quantize %x, %s, %zu : (tensor<2x4x3x3xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x4x3x3xui8>
  // CHECK-NEXT: %c = graph.quantize %x, %sc, %zc : (tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xi8>) -> tensor<2x4x3x3xi8>
  %c = graph.quantize %x, %sc, %zc : (tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xi8>) -> tensor<2x4x3x3xi8>
  // CHECK-NEXT: %dq = graph.dequantize %u, %s, %zu : (tensor<2x4x3x3xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x4x3x3xf32>
  %dq = graph.dequantize %u, %s, %zu : (tensor<2x4x3x3xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x4x3x3xf32>
  // CHECK-NEXT: %dqc = graph.dequantize %c, %sc : (tensor<2x4x3x3xi8>, tensor<1x4x1x1xf32>) -> tensor<2x4x3x3xf32>
  %dqc = graph.dequantize %c, %sc : (tensor<2x4x3x3xi8>, tensor<1x4x1x1xf32>) -> tensor<2x4x3x3xf32>
  // CHECK-NEXT: %qh = graph.quantize %h, %sh, %zs : (tensor<2x4x3x3xf16>, tensor<f16>, tensor<i8>) -> tensor<2x4x3x3xi8>
  %qh = graph.quantize %h, %sh, %zs : (tensor<2x4x3x3xf16>, tensor<f16>, tensor<i8>) -> tensor<2x4x3x3xi8>
  // CHECK-NEXT: %dqh = graph.dequantize %qh, %sh, %zs : (tensor<2x4x3x3xi8>, tensor<f16>, tensor<i8>) -> tensor<2x4x3x3xf16>
  %dqh = graph.dequantize %qh, %sh, %zs : (tensor<2x4x3x3xi8>, tensor<f16>, tensor<i8>) -> tensor<2x4x3x3xf16>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @requantize(
func.func @requantize(%acc: tensor<2x4x3x3xi32>, %s: tensor<f32>, %sc: tensor<1x4x1x1xf32>, %z: tensor<i8>, %zu: tensor<1xui8>) {
  // CHECK-NEXT: %y = graph.requantize %acc, %s, %z : (tensor<2x4x3x3xi32>, tensor<f32>, tensor<i8>) -> tensor<2x4x3x3xi8>
  %y = graph.requantize %acc, %s, %z : (tensor<2x4x3x3xi32>, tensor<f32>, tensor<i8>) -> tensor<2x4x3x3xi8>
  // CHECK-NEXT: %yc = graph.requantize %acc, %sc, %zu : (tensor<2x4x3x3xi32>, tensor<1x4x1x1xf32>, tensor<1xui8>) -> tensor<2x4x3x3xui8>
  %yc = graph.requantize %acc, %sc, %zu : (tensor<2x4x3x3xi32>, tensor<1x4x1x1xf32>, tensor<1xui8>) -> tensor<2x4x3x3xui8>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @int8_contractions(
func.func @int8_contractions(%x: tensor<1x4x8x8xui8>, %w: tensor<8x4x3x3xi8>, %b: tensor<8xi32>, %a: tensor<2x16x32xi8>, %m: tensor<32x8xi8>, %a2: tensor<16x32xui8>, %m2: tensor<8x32xi8>, %c: tensor<8xi32>, %sc: tensor<1x8x1x1xf32>) {
  // CHECK-NEXT: %acc = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, offset_x = 128 : i64} : (tensor<1x4x8x8xui8>, tensor<8x4x3x3xi8>, tensor<8xi32>) -> tensor<1x8x8x8xi32>
  %acc = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, offset_x = 128 : i64} : (tensor<1x4x8x8xui8>, tensor<8x4x3x3xi8>, tensor<8xi32>) -> tensor<1x8x8x8xi32>
  // CHECK-NEXT: %y = graph.dequantize %acc, %sc : (tensor<1x8x8x8xi32>, tensor<1x8x1x1xf32>) -> tensor<1x8x8x8xf32>
  %y = graph.dequantize %acc, %sc : (tensor<1x8x8x8xi32>, tensor<1x8x1x1xf32>) -> tensor<1x8x8x8xf32>
  // CHECK-NEXT: %mm = graph.matmul %a, %m : (tensor<2x16x32xi8>, tensor<32x8xi8>) -> tensor<2x16x8xi32>
  %mm = graph.matmul %a, %m : (tensor<2x16x32xi8>, tensor<32x8xi8>) -> tensor<2x16x8xi32>
  // CHECK-NEXT: %gm = graph.gemm %a2, %m2, %c {trans_b = 1 : i64} : (tensor<16x32xui8>, tensor<8x32xi8>, tensor<8xi32>) -> tensor<16x8xi32>
  %gm = graph.gemm %a2, %m2, %c {trans_b = 1 : i64} : (tensor<16x32xui8>, tensor<8x32xi8>, tensor<8xi32>) -> tensor<16x8xi32>
  // CHECK-NEXT: func.return
  func.return
}
