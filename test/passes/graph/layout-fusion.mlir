// graph-layout after graph-fuse: formats run through graph.fusion boundaries (an operand and
// its block argument, a yielded value and the result share a format); a weight passed into a
// fusion is converted outside and passed in converted; a conversion a fused kernel needs
// happens inside its body (no launch of its own).
// RUN: geir-opt %s -p graph-layout --split-input-file --elide-resources | filecheck %s

// A conv-epilogue fusion between two convs: everything in NC1HWC0, the per-channel scale
// [64, 1, 1] becomes an NC1HWC0 constant [1, 64, 1, 1] passed in.
// conv1 reads the plain input, so it keeps plain weights; the others read NC1HWC0 and get a
// FRACTAL_Z copy of the same constant.
// CHECK-LABEL: func.func @fused(
// CHECK:         %w = graph.constant {{.*}} : tensor<64x64x3x3xf32> loc("w")
// CHECK-NEXT:    %[[WZ:w_1]] = graph.constant {{.*}} #graph.format<FRACTAL_Z, NCHW, [64, 64, 3, 3]>> loc("w")
// CHECK-NEXT:    %c1 = graph.conv %x, %w {{.*}} -> tensor<1x4x112x112x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 112, 112]>> loc("conv1")
// CHECK-NEXT:    %s = graph.constant dense<2.000000e+00> : tensor<1x4x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 1, 1]>> loc("scale")
// CHECK-NEXT:    %r2 = graph.fusion "cube+vector" (%c1, %s, %[[WZ]]) : (tensor<1x4x112x112x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 112, 112]>>, tensor<1x4x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 1, 1]>>, tensor<36x4x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [64, 64, 3, 3]>>) -> tensor<1x4x112x112x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 112, 112]>> {
// CHECK-NEXT:    ^bb0(%c1_1: tensor<1x4x112x112x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 112, 112]>>, %s_1: tensor<1x4x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 1, 1]>>, %[[WA:w_2]]: tensor<36x4x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [64, 64, 3, 3]>>):
// CHECK-NEXT:      %m = graph.mul %c1_1, %s_1 : {{.*}} -> tensor<1x4x112x112x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 112, 112]>> loc("mul")
// CHECK-NEXT:      %r1 = graph.relu %m
// CHECK-NEXT:      %c2 = graph.conv %r1, %[[WA]] {{.*}} -> tensor<1x4x112x112x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 112, 112]>> loc("conv2")
// CHECK-NEXT:      %a = graph.add %c2, %r1
// CHECK-NEXT:      %r2_1 = graph.relu %a
// CHECK-NEXT:      graph.yield %r2_1 : tensor<1x4x112x112x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 112, 112]>>
// CHECK-NEXT:    } loc(fused["mul", "relu1", "conv2", "add", "relu2"])
// CHECK-NEXT:    %c3 = graph.conv %r2, %[[WZ]] {{.*}} : (tensor<1x4x112x112x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 112, 112]>>, {{.*}}) -> tensor<1x64x112x112xf32> loc("conv3")
// CHECK-NOT:     graph.trans_data
func.func @fused(%x: tensor<1x64x112x112xf32>) -> tensor<1x64x112x112xf32> {
  %w = graph.constant dense<0.01> : tensor<64x64x3x3xf32> loc("w")
  %c1 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x112x112xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x112x112xf32> loc("conv1")
  %s = graph.constant dense<2.0> : tensor<64x1x1xf32> loc("scale")
  %r2 = graph.fusion "cube+vector" (%c1, %s, %w) : (tensor<1x64x112x112xf32>, tensor<64x1x1xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x112x112xf32> {
  ^bb0(%c1_1: tensor<1x64x112x112xf32>, %s_1: tensor<64x1x1xf32>, %w_1: tensor<64x64x3x3xf32>):
    %m = graph.mul %c1_1, %s_1 : (tensor<1x64x112x112xf32>, tensor<64x1x1xf32>) -> tensor<1x64x112x112xf32> loc("mul")
    %r1 = graph.relu %m : (tensor<1x64x112x112xf32>) -> tensor<1x64x112x112xf32> loc("relu1")
    %c2 = graph.conv %r1, %w_1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x112x112xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x112x112xf32> loc("conv2")
    %a = graph.add %c2, %r1 : (tensor<1x64x112x112xf32>, tensor<1x64x112x112xf32>) -> tensor<1x64x112x112xf32> loc("add")
    %r2_1 = graph.relu %a : (tensor<1x64x112x112xf32>) -> tensor<1x64x112x112xf32> loc("relu2")
    graph.yield %r2_1 : tensor<1x64x112x112xf32>
  } loc(fused["mul", "relu1", "conv2", "add", "relu2"])
  %c3 = graph.conv %r2, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x112x112xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x112x112xf32> loc("conv3")
  func.return %c3 : tensor<1x64x112x112xf32>
}

// -----
// Inside one kernel the relu feeds a conv (NC1HWC0) and a reshape (ND): the conversion for the
// reshape is a trans_data in the fusion, which becomes cube+vector (the lowering gives the
// trans_data a kernel of its own, and the planner prices its launch: at batch 8 it pays). The weight block argument
// splits in two: plain for the conv reading the plain input, FRACTAL_Z for the one reading NC1HWC0.
// CHECK-LABEL: func.func @inner(
// CHECK:         graph.fusion "cube+vector" (%x, %w, %w_1) : (tensor<8x64x56x56xf32>, tensor<64x64x3x3xf32>, tensor<36x4x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [64, 64, 3, 3]>>) -> (tensor<8x64x56x56xf32>, tensor<8x64x3136xf32>) {
// CHECK-NEXT:    ^bb0(%a: tensor<8x64x56x56xf32>, %k: tensor<64x64x3x3xf32>, %k_1: tensor<36x4x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [64, 64, 3, 3]>>):
// CHECK:           %r = graph.relu %c : {{.*}} -> tensor<8x4x56x56x16xf32, #graph.format<NC1HWC0, NCHW, [8, 64, 56, 56]>>
// CHECK-NEXT:      %0 = graph.trans_data %r {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<8x4x56x56x16xf32, #graph.format<NC1HWC0, NCHW, [8, 64, 56, 56]>>) -> tensor<8x64x56x56xf32>
// CHECK-NEXT:      %c2 = graph.conv %r, %k_1 {{.*}} : (tensor<8x4x56x56x16xf32, #graph.format<NC1HWC0, NCHW, [8, 64, 56, 56]>>, {{.*}}) -> tensor<8x64x56x56xf32>
// CHECK:           %s = graph.reshape %0, %shape : (tensor<8x64x56x56xf32>, tensor<3xi64>) -> tensor<8x64x3136xf32>
func.func @inner(%x: tensor<8x64x56x56xf32>) -> (tensor<8x64x56x56xf32>, tensor<8x64x3136xf32>) {
  %w = graph.constant dense<0.01> : tensor<64x64x3x3xf32>
  %f:2 = graph.fusion "cube" (%x, %w) : (tensor<8x64x56x56xf32>, tensor<64x64x3x3xf32>) -> (tensor<8x64x56x56xf32>, tensor<8x64x3136xf32>) {
  ^bb0(%a: tensor<8x64x56x56xf32>, %k: tensor<64x64x3x3xf32>):
    %c = graph.conv %a, %k {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x64x56x56xf32>, tensor<64x64x3x3xf32>) -> tensor<8x64x56x56xf32>
    %r = graph.relu %c : (tensor<8x64x56x56xf32>) -> tensor<8x64x56x56xf32>
    %c2 = graph.conv %r, %k {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x64x56x56xf32>, tensor<64x64x3x3xf32>) -> tensor<8x64x56x56xf32>
    %shape = graph.constant dense<[8, 64, 3136]> : tensor<3xi64>
    %s = graph.reshape %r, %shape : (tensor<8x64x56x56xf32>, tensor<3xi64>) -> tensor<8x64x3136xf32>
    graph.yield %c2, %s : tensor<8x64x56x56xf32>, tensor<8x64x3136xf32>
  }
  func.return %f#0, %f#1 : tensor<8x64x56x56xf32>, tensor<8x64x3136xf32>
}
