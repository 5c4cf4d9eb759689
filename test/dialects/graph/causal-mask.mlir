// Round trip of graph.causal_mask: the additive causal mask of `queries` rows at a run-time
// position (query i sees key j <= i + position + offset), of the fill's element type.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: func.func @causal_mask(
func.func @causal_mask(%pos: tensor<1xi64>, %p32: tensor<1x1xi32>) {
  %fill = graph.constant dense<-6.550400e+04> : tensor<f16>
  %low = graph.constant dense<-3.40282347e+38> : tensor<1xf32>
  // CHECK:      %m = graph.causal_mask %pos, %fill {queries = 4 : i64, keys = 8 : i64, offset = 0 : i64} : (tensor<1xi64>, tensor<f16>) -> tensor<1x1x4x8xf16>
  %m = graph.causal_mask %pos, %fill {queries = 4 : i64, keys = 8 : i64, offset = 0 : i64} : (tensor<1xi64>, tensor<f16>) -> tensor<1x1x4x8xf16>
  // CHECK-NEXT: %n = graph.causal_mask %p32, %low {queries = 1 : i64, keys = 9 : i64, offset = 3 : i64} : (tensor<1x1xi32>, tensor<1xf32>) -> tensor<1x1x1x9xf32>
  %n = graph.causal_mask %p32, %low {queries = 1 : i64, keys = 9 : i64, offset = 3 : i64} : (tensor<1x1xi32>, tensor<1xf32>) -> tensor<1x1x1x9xf32>
  func.return
}
