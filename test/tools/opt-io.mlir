// Input from a file, `-` or stdin; output to stdout or -o; locations and the
// generic form on request.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt < %s | filecheck %s
// RUN: geir-opt - < %s | filecheck %s
// RUN: geir-opt %s -o %t.mlir && filecheck %s < %t.mlir
// RUN: geir-opt %s --no-debuginfo | filecheck %s --check-prefix=NOLOC
// RUN: geir-opt %s --generic | filecheck %s --check-prefix=GENERIC

// CHECK:      %a = graph.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("add")
// CHECK-NEXT: %m = graph.mul %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc(fused["mul", "scale"])
// CHECK-NEXT: func.return %m : tensor<2x3xf32>
// NOLOC:      %a = graph.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>{{$}}
// NOLOC-NOT:  loc(
// GENERIC:    %a = "graph.add"(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("add")
func.func @main(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xf32> {
  %a = graph.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("add")
  %m = graph.mul %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc(fused["mul", "scale"])
  func.return %m : tensor<2x3xf32>
}
