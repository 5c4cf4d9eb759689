// Round trip of the elementwise, integer and scan graph ops (frontend/onnx_elementwise.py):
// custom form, reprinted form and generic form.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: func.func @float_ops(
func.func @float_ops(%x: tensor<2x3xf32>) {
  // CHECK-NEXT: %acos = graph.acos %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %acos = graph.acos %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %acosh = graph.acosh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %acosh = graph.acosh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %asin = graph.asin %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %asin = graph.asin %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %asinh = graph.asinh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %asinh = graph.asinh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %atan = graph.atan %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %atan = graph.atan %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %atanh = graph.atanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %atanh = graph.atanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %tan = graph.tan %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %tan = graph.tan %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %cosh = graph.cosh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %cosh = graph.cosh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sinh = graph.sinh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sinh = graph.sinh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %nan = graph.is_nan %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %nan = graph.is_nan %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %inf = graph.is_inf %x {detect_negative = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %inf = graph.is_inf %x {detect_negative = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %bits = graph.bitcast %x {to = i32} : (tensor<2x3xf32>) -> tensor<2x3xi32>
  %bits = graph.bitcast %x {to = i32} : (tensor<2x3xf32>) -> tensor<2x3xi32>
  // CHECK-NEXT: %cs = graph.cum_sum %x {axis = 1 : i64, exclusive = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %cs = graph.cum_sum %x {axis = 1 : i64, exclusive = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %cp = graph.cum_prod %x {axis = -2 : i64, reverse = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %cp = graph.cum_prod %x {axis = -2 : i64, reverse = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// CHECK-LABEL: func.func @integer_ops(
func.func @integer_ops(%a: tensor<2x3xui8>, %b: tensor<3xui8>) {
  // CHECK-NEXT: %and = graph.bitwise_and %a, %b : (tensor<2x3xui8>, tensor<3xui8>) -> tensor<2x3xui8>
  %and = graph.bitwise_and %a, %b : (tensor<2x3xui8>, tensor<3xui8>) -> tensor<2x3xui8>
  // CHECK-NEXT: %or = graph.bitwise_or %a, %b : (tensor<2x3xui8>, tensor<3xui8>) -> tensor<2x3xui8>
  %or = graph.bitwise_or %a, %b : (tensor<2x3xui8>, tensor<3xui8>) -> tensor<2x3xui8>
  // CHECK-NEXT: %xor = graph.bitwise_xor %a, %b : (tensor<2x3xui8>, tensor<3xui8>) -> tensor<2x3xui8>
  %xor = graph.bitwise_xor %a, %b : (tensor<2x3xui8>, tensor<3xui8>) -> tensor<2x3xui8>
  // CHECK-NEXT: %not = graph.bitwise_not %a : (tensor<2x3xui8>) -> tensor<2x3xui8>
  %not = graph.bitwise_not %a : (tensor<2x3xui8>) -> tensor<2x3xui8>
  // CHECK-NEXT: %shl = graph.bit_shift %a, %b {direction = "LEFT"} : (tensor<2x3xui8>, tensor<3xui8>) -> tensor<2x3xui8>
  %shl = graph.bit_shift %a, %b {direction = "LEFT"} : (tensor<2x3xui8>, tensor<3xui8>) -> tensor<2x3xui8>
  // CHECK-NEXT: %s8 = graph.bitcast %a {to = i8} : (tensor<2x3xui8>) -> tensor<2x3xi8>
  %s8 = graph.bitcast %a {to = i8} : (tensor<2x3xui8>) -> tensor<2x3xi8>
  func.return
}
