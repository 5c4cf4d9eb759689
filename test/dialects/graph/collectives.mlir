// Round trip of the graph collectives (they are not pure: no pass folds or erases one).
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: func.func @collectives(
// CHECK-NEXT:    %s = graph.all_reduce %x {ranks = array<i64: 0, 1>, reduction = "sum"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %g = graph.all_gather %x {ranks = array<i64: 0, 1>, axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %r = graph.reduce_scatter %x {ranks = array<i64: 0, 1>, axis = 0 : i64, reduction = "max"} : (tensor<4x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    %a = graph.all_to_all %x {ranks = array<i64: 0, 1>, split_axis = 0 : i64, concat_axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<2x16xf32>
func.func @collectives(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>, tensor<2x8xf32>, tensor<2x16xf32>) {
  %s = graph.all_reduce %x {ranks = array<i64: 0, 1>, reduction = "sum"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = graph.all_gather %x {ranks = array<i64: 0, 1>, axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x16xf32>
  %r = graph.reduce_scatter %x {ranks = array<i64: 0, 1>, axis = 0 : i64, reduction = "max"} : (tensor<4x8xf32>) -> tensor<2x8xf32>
  %a = graph.all_to_all %x {ranks = array<i64: 0, 1>, split_axis = 0 : i64, concat_axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<2x16xf32>
  func.return %s, %g, %r, %a : tensor<4x8xf32>, tensor<4x16xf32>, tensor<2x8xf32>, tensor<2x16xf32>
}

// CHECK-LABEL: func.func @point_to_point(
// CHECK-NEXT:    graph.send %x {peer = 1 : i64} : (tensor<4x8xf32>) -> ()
// CHECK-NEXT:    %y = graph.recv {peer = 1 : i64} : () -> tensor<2x8xf16>
func.func @point_to_point(%x: tensor<4x8xf32>) -> tensor<2x8xf16> {
  graph.send %x {peer = 1 : i64} : (tensor<4x8xf32>) -> ()
  %y = graph.recv {peer = 1 : i64} : () -> tensor<2x8xf16>
  func.return %y : tensor<2x8xf16>
}
