// A fusion no template takes whole that holds a graph.trans_data (graph-layout converts where
// formats change, inside fusions too): the trans_data becomes a kernel of its own and the ops
// after it are tried as one fusion again (softmax + mul: one kernel, not two), each piece
// located at its own nodes and saying which value each output holds (`geir.outputs`:
// result index, node names), for geir-compare.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// CHECK:       ascend.kernel @k1_conv(%a: memref<1x2x4x4x16xf32, "gm">, %t: memref<1x32x4x4xf32, "gm">)
// CHECK-SAME:    template = "layout"
// CHECK:       } loc("conv")
// CHECK:       ascend.kernel @k2_softmax(%t: memref<1x32x4x4xf32, "gm">, %b: memref<1x32x4x4xf32, "gm">, %m: memref<1x32x4x4xf32, "gm">)
// CHECK-NOT:     ascend.reference
// CHECK-SAME:    geir.outputs = {{\[}}[0 : i64, "mul"]]
// CHECK:       } loc(fused["softmax", "mul"])
// CHECK-NOT:   ascend.kernel
// CHECK:       ascend.launch @k0_conv
// CHECK:       ascend.launch @k1_conv on %stream(%y, %[[T:.*]]) :
// CHECK-NEXT:  ascend.launch @k2_softmax on %stream(%[[T]], %x, %r) :
func.func @main(%x: tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32> {
  %w = graph.constant dense<5.000000e-01> : tensor<8x2x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [32, 32, 2, 2]>>
  %y = graph.conv %x, %w {pads = array<i64: 0, 1, 1, 0>} : (tensor<1x32x4x4xf32>, tensor<8x2x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [32, 32, 2, 2]>>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 4, 4]>> loc("conv")
  %r = graph.fusion "vector" (%y, %x) : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 4, 4]>>, tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32> {
  ^bb0(%a: tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 4, 4]>>, %b: tensor<1x32x4x4xf32>):
    %t = graph.trans_data %a {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 4, 4]>>) -> tensor<1x32x4x4xf32> loc("conv")
    %s = graph.softmax %t {axis = 1 : i64} : (tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32> loc("softmax")
    %m = graph.mul %s, %b : (tensor<1x32x4x4xf32>, tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32> loc("mul")
    graph.yield %m : tensor<1x32x4x4xf32>
  } loc(fused["conv", "softmax", "mul"])
  func.return %r : tensor<1x32x4x4xf32>
}

// -----
// No trans_data, and no template takes mul, add, transpose and exp at once: from each op in
// order, the longest run a template takes is one kernel (mul + add), the rest alone (the
// transpose and exp take no kernel together).
// CHECK:       ascend.kernel @k0_mul(%a: {{.*}}, %b: {{.*}}, %s: memref<4x64x32xf32, "gm">)
// CHECK-SAME:    geir.outputs = {{\[}}[0 : i64, "add"]]
// CHECK:       } loc(fused["mul", "add"])
// CHECK:       ascend.kernel @k1_transpose(
// CHECK:       } loc("transpose")
// CHECK:       ascend.kernel @k2_exp(
// CHECK:       } loc("exp")
// CHECK:       ascend.launch @k0_mul
// CHECK:       ascend.launch @k1_transpose
// CHECK:       ascend.launch @k2_exp
func.func @main(%x: tensor<4x64x32xf32>, %y: tensor<4x64x32xf32>) -> tensor<4x32x64xf32> {
  %r = graph.fusion "vector" (%x, %y) : (tensor<4x64x32xf32>, tensor<4x64x32xf32>) -> tensor<4x32x64xf32> {
  ^bb0(%a: tensor<4x64x32xf32>, %b: tensor<4x64x32xf32>):
    %m = graph.mul %a, %b : (tensor<4x64x32xf32>, tensor<4x64x32xf32>) -> tensor<4x64x32xf32> loc("mul")
    %s = graph.add %m, %a : (tensor<4x64x32xf32>, tensor<4x64x32xf32>) -> tensor<4x64x32xf32> loc("add")
    %t = graph.transpose %s {perm = array<i64: 0, 2, 1>} : (tensor<4x64x32xf32>) -> tensor<4x32x64xf32> loc("transpose")
    %e = graph.exp %t : (tensor<4x32x64xf32>) -> tensor<4x32x64xf32> loc("exp")
    graph.yield %e : tensor<4x32x64xf32>
  } loc(fused["mul", "add", "transpose", "exp"])
  func.return %r : tensor<4x32x64xf32>
}
