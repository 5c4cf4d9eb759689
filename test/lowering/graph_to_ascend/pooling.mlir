// convert-graph-to-ascend: pooling. Channels go innermost in groups of 8 f32 (32 bytes, the
// C0 of NC1HWC0) with vtranspose; each kernel offset of the window is a strided subview of the
// padded plane, combined with vmax / vadd; an average divides by the window sums of a 0/1
// mask plane; global pools are row reductions over H*W.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// max_pool 3x3 stride 2 pad 1 on [1, 16, 8, 8] -> [1, 16, 4, 4]: two channel groups of 8 in
// one tile; the plane is [2, 9, 10, 8] (rows 0 and columns 0, 9 are padding, filled with
// -inf), the input rows go to plane[:, 1:9, 1:9, :]; window (i, j) is plane[:, i::2, j::2, :].
// CHECK-LABEL: ascend.kernel @k0_maxpool(
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", template = "pool"}
// CHECK-DAG:     %[[ROWS:.*]] = ascend.alloc {offset = 0 : i64} : memref<2x8x9x8xf32, "ub">
// CHECK-DAG:     %[[PLANE:.*]] = ascend.alloc {offset = 4608 : i64} : memref<2x9x10x8xf32, "ub">
// CHECK-DAG:     %[[ACC:.*]] = ascend.alloc {offset = 10368 : i64} : memref<2x4x4x8xf32, "ub">
// CHECK-DAG:     %[[OUT:.*]] = ascend.alloc {offset = 11392 : i64} : memref<2x8x4x8xf32, "ub">
// CHECK-DAG:     %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// CHECK:         %[[X1:.*]] = memref.collapse_shape %x {{.*}} into memref<16x8x8xf32, "gm">
// CHECK-NEXT:    %[[X:.*]] = memref.expand_shape %[[X1]] {{.*}} into memref<2x8x8x8xf32, "gm">
// CHECK:         %[[R:.*]] = memref.subview %[[ROWS]][0, 0, 0, 0] [2, 8, 8, 8] [1, 1, 1, 1]
// CHECK-NEXT:    ascend.copy %[[X]], %[[R]]
// CHECK-NEXT:    ascend.set_flag MTE2 -> V id 0
// CHECK-NEXT:    ascend.wait_flag MTE2 -> V id 0
// CHECK-NEXT:    ascend.vdup %[[NEGINF]], %[[PLANE]] : f32, memref<2x9x10x8xf32, "ub">
// CHECK-NEXT:    %[[R2:.*]] = memref.subview %[[ROWS]]
// CHECK-NEXT:    %[[IN:.*]] = memref.subview %[[PLANE]][0, 1, 1, 0] [2, 8, 8, 8] [1, 1, 1, 1]
// CHECK-NEXT:    ascend.vtranspose %[[R2]], %[[IN]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:    %[[W00:.*]] = memref.subview %[[PLANE]][0, 0, 0, 0] [2, 4, 4, 8] [1, 2, 2, 1]
// CHECK-NEXT:    ascend.vcopy %[[W00]], %[[ACC]]
// CHECK-NEXT:    %[[W01:.*]] = memref.subview %[[PLANE]][0, 0, 1, 0] [2, 4, 4, 8] [1, 2, 2, 1]
// CHECK-NEXT:    ascend.vmax %[[ACC]], %[[W01]], %[[ACC]]
// CHECK-COUNT-7: ascend.vmax %[[ACC]]
// CHECK:         %[[O:.*]] = memref.subview %[[OUT]][0, 0, 0, 0] [2, 8, 4, 4] [1, 1, 1, 1]
// CHECK-NEXT:    ascend.vtranspose %[[ACC]], %[[O]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    ascend.set_flag V -> MTE3 id 0
// CHECK-NEXT:    ascend.wait_flag V -> MTE3 id 0
// CHECK:         ascend.copy %{{.*}}, %{{.*}} : memref<2x8x4x4xf32, strided<[256, 32, 8, 1]>, "ub"> to memref<2x8x4x4xf32, "gm">
func.func @maxpool(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32> {
  %y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32> loc("maxpool")
  func.return %y : tensor<1x16x4x4xf32>
}

// -----

// avg_pool 2x2 stride 2, count_include_pad = 0, pad 1 at the end: the divisor is the sum of
// the windows over a mask plane that is 1 on the input and 0 on the padding.
// CHECK-LABEL: ascend.kernel @k0_avgpool(
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         ascend.vdup %[[ZERO]], %{{.*}}
// CHECK:         ascend.vtranspose
// CHECK:         ascend.vcopy
// CHECK-COUNT-3: ascend.vadd
// CHECK:         ascend.vdup %[[ZERO]], %[[MASK:.*]] :
// CHECK-NEXT:    %[[VALID:.*]] = memref.subview %[[MASK]][0, 0, 0, 0] [1, 5, 5, 8] [1, 1, 1, 1]
// CHECK-NEXT:    ascend.vdup %[[ONE]], %[[VALID]]
// CHECK:         ascend.vcopy
// CHECK-COUNT-3: ascend.vadd
// CHECK:         ascend.vbrcb
// CHECK-NEXT:    ascend.vdiv
// CHECK-NEXT:    %{{.*}} = memref.subview
// CHECK-NEXT:    ascend.vtranspose
func.func @avgpool(%x: tensor<1x16x5x5xf32>) -> tensor<1x16x3x3xf32> {
  %y = graph.avg_pool %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x16x5x5xf32>) -> tensor<1x16x3x3xf32> loc("avgpool")
  func.return %y : tensor<1x16x3x3xf32>
}

// -----

// A big max_pool (ResNet's stem: [1, 64, 112, 112], 3x3 stride 2 pad 1) is tiled by channel
// group and band of output rows: the first band starts in the top padding (its plane rows
// begin at 1), the following bands read input rows 2 * 5 * b - 1.. in an scf.for over the
// tiles of each block, the last band is shorter (56 = 11 * 5 + 1).
// CHECK-LABEL: ascend.kernel @k0_stem(
// CHECK-SAME:    attributes {block_dim = {{[0-9]+}} : i64, core_type = "vector", template = "pool"}
// CHECK:         memref.subview %{{.*}}[%{{.*}}, 0, 0, 0] [1, 8, 10, 112] [1, 1, 1, 1]
// CHECK:         memref.subview %{{.*}}[0, 1, 1, 0] [1, 10, 112, 8] [1, 1, 1, 1]
// CHECK:         scf.for
// CHECK:           memref.subview %{{.*}}[%{{.*}}, 0, %{{.*}}, 0] [1, 8, 11, 112] [1, 1, 1, 1]
// CHECK:           memref.subview %{{.*}}[0, 0, 1, 0] [1, 11, 112, 8] [1, 1, 1, 1]
// CHECK:         memref.subview %{{.*}}[0, 0, 0, 0] [1, 1, 56, 8] [1, 2, 2, 1]
func.func @stem(%x: tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32> {
  %y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32> loc("stem")
  func.return %y : tensor<1x64x56x56xf32>
}

// -----

// Global pools reduce each channel's H*W row.
// CHECK-LABEL: ascend.kernel @k0_gap(
// CHECK:         ascend.vreduce %{{.*}}, %{{.*}} {kind = "sum", axes = array<i64: 1>} : memref<32x49xf32, strided<[56, 1]>, "ub">, memref<32x1xf32, strided<[8, 1]>, "ub">
// CHECK-NEXT:    ascend.vmuls
// CHECK-LABEL: ascend.kernel @k1_gmp(
// CHECK:         ascend.vreduce %{{.*}}, %{{.*}} {kind = "max", axes = array<i64: 1>}
func.func @global(%x: tensor<1x32x7x7xf32>) -> (tensor<1x32x1x1xf32>, tensor<1x32x1x1xf32>) {
  %a = graph.global_avg_pool %x : (tensor<1x32x7x7xf32>) -> tensor<1x32x1x1xf32> loc("gap")
  %m = graph.global_max_pool %x : (tensor<1x32x7x7xf32>) -> tensor<1x32x1x1xf32> loc("gmp")
  func.return %a, %m : tensor<1x32x1x1xf32>, tensor<1x32x1x1xf32>
}
