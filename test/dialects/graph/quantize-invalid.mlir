// Verifier errors of the quantized forms, one per `// -----` chunk.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.quantize' at "q": zero point must be one of i8, ui8, i16, ui16, i4, ui4, i2, ui2, f8E4M3FN, f8E4M3FNUZ, f8E5M2, f8E5M2FNUZ, f4E2M1FN, f6E2M3FN, f6E3M2FN, got i32
func.func @zero_point_type(%x: tensor<4xf32>, %s: tensor<f32>, %z: tensor<i32>) {
  %0 = graph.quantize %x, %s, %z : (tensor<4xf32>, tensor<f32>, tensor<i32>) -> tensor<4xi32> loc("q")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.quantize' at "q": operand must have a floating-point element type, got i8
func.func @quantize_int(%x: tensor<4xi8>, %s: tensor<f32>, %z: tensor<i8>) {
  %0 = graph.quantize %x, %s, %z : (tensor<4xi8>, tensor<f32>, tensor<i8>) -> tensor<4xi8> loc("q")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.quantize' at "q": quantize parameters [[3], []] do not broadcast to [2, 4]
func.func @per_channel_wrong_axis(%x: tensor<2x4xf32>, %s: tensor<3xf32>, %z: tensor<i8>) {
  %0 = graph.quantize %x, %s, %z : (tensor<2x4xf32>, tensor<3xf32>, tensor<i8>) -> tensor<2x4xi8> loc("q")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.quantize' at "q": quantize parameters [[2, 1], []] do not broadcast to [4]
func.func @params_grow_x(%x: tensor<4xf32>, %s: tensor<2x1xf32>, %z: tensor<i8>) {
  %0 = graph.quantize %x, %s, %z : (tensor<4xf32>, tensor<2x1xf32>, tensor<i8>) -> tensor<2x4xi8> loc("q")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.quantize' at "q": result #0 has type tensor<4xui8>, but the operands imply tensor<4xi8>
func.func @result_type(%x: tensor<4xf32>, %s: tensor<f32>, %z: tensor<i8>) {
  %0 = graph.quantize %x, %s, %z : (tensor<4xf32>, tensor<f32>, tensor<i8>) -> tensor<4xui8> loc("q")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.dequantize' at "dq": dequantize takes a quantized or int32 tensor, got f32
func.func @dequantize_float(%x: tensor<4xf32>, %s: tensor<f32>) {
  %0 = graph.dequantize %x, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32> loc("dq")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.dequantize' at "dq": zero point type ui8 differs from the input's i8
func.func @zero_point_mismatch(%x: tensor<4xi8>, %s: tensor<f32>, %z: tensor<ui8>) {
  %0 = graph.dequantize %x, %s, %z : (tensor<4xi8>, tensor<f32>, tensor<ui8>) -> tensor<4xf32> loc("dq")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.dequantize' at "dq": scale must have a floating-point element type, got i32
func.func @integer_scale(%x: tensor<4xi8>, %s: tensor<i32>) {
  %0 = graph.dequantize %x, %s : (tensor<4xi8>, tensor<i32>) -> tensor<4xi32> loc("dq")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.conv' at "conv": an integer convolution takes int8 / uint8 operands, got i8, f32
func.func @mixed_conv(%x: tensor<1x4x8x8xi8>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv %x, %w : (tensor<1x4x8x8xi8>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> loc("conv")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.conv' at "conv": an integer convolution's bias must be i32, got i8
func.func @int8_bias(%x: tensor<1x4x8x8xi8>, %w: tensor<8x4x3x3xi8>, %b: tensor<8xi8>) {
  %0 = graph.conv %x, %w, %b : (tensor<1x4x8x8xi8>, tensor<8x4x3x3xi8>, tensor<8xi8>) -> tensor<1x8x6x6xi32> loc("conv")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.conv' at "conv": result #0 has type tensor<1x8x6x6xi8>, but the operands imply tensor<1x8x6x6xi32>
func.func @int8_result(%x: tensor<1x4x8x8xi8>, %w: tensor<8x4x3x3xi8>) {
  %0 = graph.conv %x, %w : (tensor<1x4x8x8xi8>, tensor<8x4x3x3xi8>) -> tensor<1x8x6x6xi8> loc("conv")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.conv' at "conv": offset_x applies to int8 / uint8 inputs only
func.func @float_offset(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv %x, %w {offset_x = 3 : i64} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> loc("conv")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.gemm' at "gemm": an integer gemm takes alpha = beta = 1
func.func @int8_alpha(%a: tensor<4x8xi8>, %b: tensor<8x2xi8>) {
  %0 = graph.gemm %a, %b {alpha = 2.0 : f32} : (tensor<4x8xi8>, tensor<8x2xi8>) -> tensor<4x2xi32> loc("gemm")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.matmul' at "mm": an integer matmul takes int8 / uint8 operands, got i16, i8
func.func @int16_matmul(%a: tensor<4x8xi16>, %b: tensor<8x2xi8>) {
  %0 = graph.matmul %a, %b : (tensor<4x8xi16>, tensor<8x2xi8>) -> tensor<4x2xi32> loc("mm")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.requantize' at "rq": requantize takes an i32 accumulator, got i16
func.func @requantize_acc_type(%acc: tensor<4xi16>, %s: tensor<f32>, %z: tensor<i8>) {
  %0 = graph.requantize %acc, %s, %z : (tensor<4xi16>, tensor<f32>, tensor<i8>) -> tensor<4xi8> loc("rq")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.requantize' at "rq": requantize scale must be f32, got f16
func.func @requantize_f16_scale(%acc: tensor<4xi32>, %s: tensor<f16>, %z: tensor<i8>) {
  %0 = graph.requantize %acc, %s, %z : (tensor<4xi32>, tensor<f16>, tensor<i8>) -> tensor<4xi8> loc("rq")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.requantize' at "rq": requantize zero point must be a one-element i8 or ui8 tensor (per tensor), got tensor<i16>
func.func @requantize_zero_point_type(%acc: tensor<4xi32>, %s: tensor<f32>, %z: tensor<i16>) {
  %0 = graph.requantize %acc, %s, %z : (tensor<4xi32>, tensor<f32>, tensor<i16>) -> tensor<4xi16> loc("rq")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.requantize' at "rq": requantize zero point must be a one-element i8 or ui8 tensor (per tensor), got tensor<1x4x1x1xi8>
func.func @requantize_per_channel_zero_point(%acc: tensor<2x4x3x3xi32>, %s: tensor<1x4x1x1xf32>, %z: tensor<1x4x1x1xi8>) {
  %0 = graph.requantize %acc, %s, %z : (tensor<2x4x3x3xi32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xi8>) -> tensor<2x4x3x3xi8> loc("rq")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.requantize' at "rq": requantize parameters [[1, 3, 1, 1], []] do not broadcast to [2, 4, 3, 3]
func.func @requantize_scale_shape(%acc: tensor<2x4x3x3xi32>, %s: tensor<1x3x1x1xf32>, %z: tensor<i8>) {
  %0 = graph.requantize %acc, %s, %z : (tensor<2x4x3x3xi32>, tensor<1x3x1x1xf32>, tensor<i8>) -> tensor<2x4x3x3xi8> loc("rq")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.requantize' at "rq": result #0 has type tensor<4xi8>, but the operands imply tensor<4xui8>
func.func @requantize_result_type(%acc: tensor<4xi32>, %s: tensor<f32>, %z: tensor<ui8>) {
  %0 = graph.requantize %acc, %s, %z : (tensor<4xi32>, tensor<f32>, tensor<ui8>) -> tensor<4xi8> loc("rq")
  func.return
}
