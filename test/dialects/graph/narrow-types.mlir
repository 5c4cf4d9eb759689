// Round trip of the narrow element types (docs/precision.md, "Narrow element types"):
// graph.cast with saturate / round_mode, graph.quantize / dequantize on float8, int4, int2.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: func.func @narrow(
func.func @narrow(%x: tensor<4xf32>, %s: tensor<f32>, %z4: tensor<i4>, %z8: tensor<f8E5M2>) {
  // CHECK-NEXT: %q = graph.cast %x {to = f8E4M3FN, saturate = 0 : i64} : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
  %q = graph.cast %x {to = f8E4M3FN, saturate = 0 : i64} : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
  // CHECK-NEXT: %e = graph.cast %x {to = f8E8M0FNU, round_mode = "nearest"} : (tensor<4xf32>) -> tensor<4xf8E8M0FNU>
  %e = graph.cast %x {to = f8E8M0FNU, round_mode = "nearest"} : (tensor<4xf32>) -> tensor<4xf8E8M0FNU>
  // CHECK-NEXT: %i = graph.quantize %x, %s, %z4 : (tensor<4xf32>, tensor<f32>, tensor<i4>) -> tensor<4xi4>
  %i = graph.quantize %x, %s, %z4 : (tensor<4xf32>, tensor<f32>, tensor<i4>) -> tensor<4xi4>
  // CHECK-NEXT: %f = graph.quantize %x, %s, %z8 {saturate = 0 : i64} : (tensor<4xf32>, tensor<f32>, tensor<f8E5M2>) -> tensor<4xf8E5M2>
  %f = graph.quantize %x, %s, %z8 {saturate = 0 : i64} : (tensor<4xf32>, tensor<f32>, tensor<f8E5M2>) -> tensor<4xf8E5M2>
  // CHECK-NEXT: %d = graph.dequantize %f, %s : (tensor<4xf8E5M2>, tensor<f32>) -> tensor<4xf32>
  %d = graph.dequantize %f, %s : (tensor<4xf8E5M2>, tensor<f32>) -> tensor<4xf32>
  // CHECK-NEXT: %c = graph.constant dense<[-8, 7, -1, 0]> : tensor<4xi4>
  %c = graph.constant dense<[-8, 7, -1, 0]> : tensor<4xi4>
  // CHECK-NEXT: %u = graph.constant dense<[0, 3, 1, 2]> : tensor<4xui2>
  %u = graph.constant dense<[0, 3, 1, 2]> : tensor<4xui2>
  func.return
}
