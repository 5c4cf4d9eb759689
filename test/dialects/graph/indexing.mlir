// Round trip of the indexing ops (frontend/onnx_indexing.py).
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: func.func @indexing(
func.func @indexing(%x: tensor<3x4xf32>, %i: tensor<2x4xi64>, %u: tensor<2x4xf32>, %c: tensor<8x16x4xf16>, %r: tensor<2x1xi64>, %ru: tensor<2x16x4xf16>, %a: tensor<5x2x3xf32>, %b: tensor<5x3x4xf32>, %l: tensor<4xi64>, %kv: tensor<2x1x8x4xf32>, %kvu: tensor<2x1x2x4xf32>, %w: tensor<2xi64>) {
  // CHECK-NEXT: %se = graph.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = "add"} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %se = graph.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = "add"} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
  // CHECK-NEXT: %sn = graph.scatter_nd %c, %r, %ru : (tensor<8x16x4xf16>, tensor<2x1xi64>, tensor<2x16x4xf16>) -> tensor<8x16x4xf16>
  %sn = graph.scatter_nd %c, %r, %ru : (tensor<8x16x4xf16>, tensor<2x1xi64>, tensor<2x16x4xf16>) -> tensor<8x16x4xf16>
  // CHECK-NEXT: %gn = graph.gather_nd %c, %r : (tensor<8x16x4xf16>, tensor<2x1xi64>) -> tensor<2x16x4xf16>
  %gn = graph.gather_nd %c, %r : (tensor<8x16x4xf16>, tensor<2x1xi64>) -> tensor<2x16x4xf16>
  // CHECK-NEXT: %v, %ix = graph.top_k %x {k = 2 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %v, %ix = graph.top_k %x {k = 2 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  // CHECK-NEXT: %e = graph.einsum %a, %b {equation = "bij,bjk->bik"} : (tensor<5x2x3xf32>, tensor<5x3x4xf32>) -> tensor<5x2x4xf32>
  %e = graph.einsum %a, %b {equation = "bij,bjk->bik"} : (tensor<5x2x3xf32>, tensor<5x3x4xf32>) -> tensor<5x2x4xf32>
  // CHECK-NEXT: %rs = graph.reverse_sequence %x, %l {batch_axis = 1 : i64, time_axis = 0 : i64} : (tensor<3x4xf32>, tensor<4xi64>) -> tensor<3x4xf32>
  %rs = graph.reverse_sequence %x, %l {batch_axis = 1 : i64, time_axis = 0 : i64} : (tensor<3x4xf32>, tensor<4xi64>) -> tensor<3x4xf32>
  // CHECK-NEXT: %ts = graph.tensor_scatter %kv, %kvu, %w {mode = "circular"} : (tensor<2x1x8x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi64>) -> tensor<2x1x8x4xf32>
  %ts = graph.tensor_scatter %kv, %kvu, %w {mode = "circular"} : (tensor<2x1x8x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi64>) -> tensor<2x1x8x4xf32>
  func.return
}
