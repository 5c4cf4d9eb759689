// xDSL's cse and dce on graph ops (geir registers them as they are; no
// graph-dce is needed): graph ops are Pure, so dce removes unused ops and
// constants, and never a value func.return uses; cse merges equal constants
// (same bytes) and equal ops on the same operands.
// RUN: geir-opt %s -p dce | filecheck %s --check-prefix=DCE
// RUN: geir-opt %s -p cse,dce | filecheck %s --check-prefix=CSE

// DCE-LABEL: func.func @main(
// DCE-NEXT:    %w = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32> loc("w")
// DCE-NEXT:    %v = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32> loc("v")
// DCE-NEXT:    %a = graph.add %x, %w
// DCE-NEXT:    %b = graph.add %x, %v
// DCE-NEXT:    %out = graph.constant dense<3.000000e+00> : tensor<2xf32> loc("out")
// DCE-NEXT:    func.return %a, %b, %out, %x
// CSE-LABEL: func.func @main(
// CSE-NEXT:    %w = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32> loc("w")
// CSE-NEXT:    %a = graph.add %x, %w
// CSE-NEXT:    %out = graph.constant dense<3.000000e+00> : tensor<2xf32> loc("out")
// CSE-NEXT:    func.return %a, %a, %out, %x
func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %w = graph.constant dense<[1.0, 2.0]> : tensor<2xf32> loc("w")
  %v = graph.constant dense<[1.0, 2.0]> : tensor<2xf32> loc("v")
  %unused = graph.constant dense<[5.0, 6.0]> : tensor<2xf32> loc("unused")
  %a = graph.add %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("a")
  %b = graph.add %x, %v : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("b")
  %d1 = graph.exp %x : (tensor<2xf32>) -> tensor<2xf32> loc("dead1")
  %d2 = graph.mul %d1, %unused : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("dead2")
  %out = graph.constant dense<3.0> : tensor<2xf32> loc("out")
  func.return %a, %b, %out, %x : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
