// convert-graph-to-ascend: inference batch_norm is a per-channel scale and shift,
// a = scale / sqrt(var + eps) and b = bias - mean * a, then y = x * a + b.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// [64, 16, 8, 8]: the canonical space is [N, C, H*W] = [64, 16, 64] and the tiles are
// [4, 16, 64] (16 of them, one per block). The parameters span only C, which no tile cuts,
// so they are loaded and turned into a and b once, before the tile loop (flag id 2).
// CHECK-LABEL: ascend.kernel @k0_bn(
// CHECK-SAME:    attributes {block_dim = 16 : i64, core_type = "vector", template = "row"}
// CHECK-COUNT-4: ascend.copy %{{.*}}, %{{.*}} : memref<1x16x1xf32, "gm"> to memref<1x16x1xf32, strided<[128, 8, 1]>, "ub">
// CHECK-NEXT:    ascend.set_flag MTE2 -> V id 2
// CHECK-NEXT:    ascend.wait_flag MTE2 -> V id 2
// CHECK-NEXT:    %[[A:.*]] = memref.subview
// CHECK-NEXT:    ascend.vadds %[[VAR:.*]], %[[EPS:.*]], %[[A]]
// CHECK-NEXT:    ascend.vsqrt %[[A]], %[[A]]
// CHECK-NEXT:    ascend.vdiv %[[SCALE:.*]], %[[A]], %[[A]]
// CHECK-NEXT:    %[[B:.*]] = memref.subview
// CHECK-NEXT:    ascend.vmul %[[MEAN:.*]], %[[A]], %[[B]]
// CHECK-NEXT:    ascend.vsub %[[BIAS:.*]], %[[B]], %[[B]]
// CHECK:         ascend.copy %{{.*}}, %[[X:.*]] : memref<4x16x64xf32, strided<[1024, 64, 1], offset: ?>, "gm"> to memref<4x16x64xf32, "ub">
// CHECK-NEXT:    ascend.set_flag MTE2 -> V id 0
// CHECK-NEXT:    ascend.wait_flag MTE2 -> V id 0
// CHECK-NEXT:    ascend.vbrcb %[[A]], %[[AB:.*]] : memref<1x16x1xf32, strided<[128, 8, 1]>, "ub">, memref<4x16x64xf32, "ub">
// CHECK-NEXT:    ascend.vmul %[[X]], %[[AB]], %[[X]]
// CHECK-NEXT:    ascend.vbrcb %[[B]], %[[BB:.*]] :
// CHECK-NEXT:    ascend.vadd %[[X]], %[[BB]], %[[X]]
// CHECK-LABEL: func.func @bn(
// CHECK-COUNT-4: ascend.constant
// CHECK-NEXT:    ascend.launch @k0_bn
func.func @bn(%x: tensor<64x16x8x8xf32>) -> tensor<64x16x8x8xf32> {
  %scale = graph.constant dense<1.5> : tensor<16xf32>
  %bias = graph.constant dense<0.25> : tensor<16xf32>
  %mean = graph.constant dense<0.1> : tensor<16xf32>
  %var = graph.constant dense<2.0> : tensor<16xf32>
  %y = graph.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f32} : (tensor<64x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<64x16x8x8xf32> loc("bn")
  func.return %y : tensor<64x16x8x8xf32>
}

// -----

// One tile: no loop, nothing to hoist; the same ops run per tile.
// CHECK-LABEL: ascend.kernel @k0_bn(
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", template = "row"}
// CHECK-NOT:     id 2
// CHECK:         ascend.vadds
// CHECK-NEXT:    ascend.vsqrt
// CHECK-NEXT:    ascend.vdiv
func.func @small(%x: tensor<1x4x3x3xf32>, %scale: tensor<4xf32>, %bias: tensor<4xf32>, %mean: tensor<4xf32>, %var: tensor<4xf32>) -> tensor<1x4x3x3xf32> {
  %y = graph.batch_norm %x, %scale, %bias, %mean, %var : (tensor<1x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32> loc("bn")
  func.return %y : tensor<1x4x3x3xf32>
}
