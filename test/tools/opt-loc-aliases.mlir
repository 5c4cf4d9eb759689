// Location aliases defined after their use, as upstream mlir-opt prints them with
// --mlir-print-debuginfo, read back.
// RUN: geir-opt %s | filecheck %s

// CHECK:      %0 = graph.relu %arg0 : (tensor<2xf32>) -> tensor<2xf32> loc("relu")
// CHECK-NEXT: %1 = graph.neg %0 : (tensor<2xf32>) -> tensor<2xf32> loc(fused["neg", "relu"])
// CHECK-NEXT: func.return %1 : tensor<2xf32> loc("<stdin>":9:5)
module {
  func.func @main(%arg0: tensor<2xf32> loc("<stdin>":3:8)) -> tensor<2xf32> {
    %0 = "graph.relu"(%arg0) : (tensor<2xf32>) -> tensor<2xf32> loc(#loc2)
    %1 = "graph.neg"(%0) : (tensor<2xf32>) -> tensor<2xf32> loc(#loc4)
    "func.return"(%1) : (tensor<2xf32>) -> () loc(#loc5)
  } loc(#loc)
} loc(#loc)
#loc = loc("<stdin>":1:1)
#loc2 = loc("relu")
#loc3 = loc("neg")
#loc4 = loc(fused[#loc3, #loc2])
#loc5 = loc("<stdin>":9:5)
