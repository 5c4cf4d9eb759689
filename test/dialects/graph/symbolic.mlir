// Ops with symbolic dims verify and round-trip: `?` in the types, geir.dims the expressions
// in the extents' symbols; a range of one size proves a symbol equal to a static size.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s

// CHECK-LABEL: func.func @heads(
// CHECK:         %0 = graph.reshape %x, %t attributes {geir.dims = [["batch", "seq", 12 : i64, 64 : i64]]} : (tensor<?x?x768xf32>, tensor<4xi64>) -> tensor<?x?x12x64xf32>
// CHECK-NEXT:    %1 = graph.transpose %0 {perm = array<i64: 0, 2, 1, 3>} attributes {geir.dims = [["batch", 12 : i64, "seq", 64 : i64]]} : (tensor<?x?x12x64xf32>) -> tensor<?x12x?x64xf32>
// CHECK-NEXT:    %2 = graph.matmul %r, %w attributes {geir.dims = [[4 : i64, 8 : i64]]} : (tensor<4x?xf32>, tensor<64x8xf32>) -> tensor<4x8xf32>
func.func @heads(%x: tensor<?x?x768xf32> {onnx.name = "x"}, %t: tensor<4xi64>, %r: tensor<4x?xf32> {onnx.name = "r"}, %w: tensor<64x8xf32>,
                 %batch: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["x", 0]], geir.range = [1, 8]},
                 %seq: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 1]], geir.range = [1, 512]},
                 %k: tensor<1xi64> {onnx.name = "k.extent", geir.extent = [["r", 1]], geir.range = [64, 64]}) {
  %0 = graph.reshape %x, %t attributes {geir.dims = [["batch", "seq", 12, 64]]} : (tensor<?x?x768xf32>, tensor<4xi64>) -> tensor<?x?x12x64xf32>
  %1 = graph.transpose %0 {perm = array<i64: 0, 2, 1, 3>} attributes {geir.dims = [["batch", 12, "seq", 64]]} : (tensor<?x?x12x64xf32>) -> tensor<?x12x?x64xf32>
  %2 = graph.matmul %r, %w attributes {geir.dims = [[4, 8]]} : (tensor<4x?xf32>, tensor<64x8xf32>) -> tensor<4x8xf32>
  func.return
}
