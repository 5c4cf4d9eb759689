// convert-graph-to-ascend: pooling and LRN on NC1HWC0 tensors (graph-layout's activations).
// The C0 lanes are already innermost, as the ND pool template puts them with vtranspose: a
// tile is (n, c1) slabs x a band of output rows; one DMA writes the input rows into the
// padded plane [slabs, rows, Wp, C0] (vdup fills only its border), each window offset is a
// strided view combined with vmax / vadd, and the result tile goes out as it is - no
// transposes. Global pools reduce H*W and keep the lanes; LRN transposes [C1, pixels, C0] to
// channel rows [C1 * C0, pixels] for its window sum over channels.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// max_pool 3x3 stride 2 pad 1 on [1, 20, 8, 8] stored [1, 2, 8, 8, 16]: both C1 slabs in one
// tile; the plane is [2, 9, 10, 16]: the DMA fills rows 1..8, columns 1..8; vdup -inf the top
// row and the left and right columns (the windows never reach a bottom padding row).
// CHECK-LABEL: ascend.kernel @k0_maxpool(
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", template = "pool"}
// CHECK-NOT:     ascend.reference
// CHECK-DAG:     %[[NEGINF:[a-z_0-9]+]] = arith.constant 0xff800000 : f32
// CHECK-DAG:     %[[PLANE:[a-z_0-9]+]] = ascend.alloc {offset = 0 : i64} : memref<2x9x10x16xf32, "ub">
// CHECK-DAG:     %[[ACC:[a-z_0-9]+]] = ascend.alloc {offset = 11520 : i64} : memref<2x4x4x16xf32, "ub">
// CHECK-DAG:     %[[X:[a-z_0-9]+]] = memref.collapse_shape %x {{.*}} into memref<2x8x8x16xf32, "gm">
// CHECK-DAG:     %[[Y:[a-z_0-9]+]] = memref.collapse_shape %y {{.*}} into memref<2x4x4x16xf32, "gm">
// CHECK:         %[[IN:[a-z_0-9]+]] = memref.subview %[[PLANE]][0, 1, 1, 0] [2, 8, 8, 16] [1, 1, 1, 1]
// CHECK-NEXT:    ascend.copy %[[X]], %[[IN]] : memref<2x8x8x16xf32, "gm"> to
// CHECK-NEXT:    ascend.set_flag MTE2 -> V id 0
// CHECK-NEXT:    ascend.wait_flag MTE2 -> V id 0
// CHECK-NEXT:    %[[TOP:[a-z_0-9]+]] = memref.subview %[[PLANE]][0, 0, 0, 0] [2, 1, 10, 16] [1, 1, 1, 1]
// CHECK-NEXT:    ascend.vdup %[[NEGINF]], %[[TOP]]
// CHECK-NEXT:    %[[LEFT:[a-z_0-9]+]] = memref.subview %[[PLANE]][0, 1, 0, 0] [2, 8, 1, 16] [1, 1, 1, 1]
// CHECK-NEXT:    ascend.vdup %[[NEGINF]], %[[LEFT]]
// CHECK-NEXT:    %[[RIGHT:[a-z_0-9]+]] = memref.subview %[[PLANE]][0, 1, 9, 0] [2, 8, 1, 16] [1, 1, 1, 1]
// CHECK-NEXT:    ascend.vdup %[[NEGINF]], %[[RIGHT]]
// CHECK-NEXT:    %[[W00:[a-z_0-9]+]] = memref.subview %[[PLANE]][0, 0, 0, 0] [2, 4, 4, 16] [1, 2, 2, 1]
// CHECK-NEXT:    ascend.vcopy %[[W00]], %[[ACC]]
// CHECK-NEXT:    %[[W01:[a-z_0-9]+]] = memref.subview %[[PLANE]][0, 0, 1, 0] [2, 4, 4, 16] [1, 2, 2, 1]
// CHECK-NEXT:    ascend.vmax %[[ACC]], %[[W01]], %[[ACC]]
// CHECK-COUNT-7: ascend.vmax %[[ACC]]
// CHECK-NEXT:    ascend.set_flag V -> MTE3 id 0
// CHECK-NEXT:    ascend.wait_flag V -> MTE3 id 0
// CHECK-NEXT:    ascend.copy %[[ACC]], %[[Y]] : memref<2x4x4x16xf32, "ub"> to memref<2x4x4x16xf32, "gm">
// CHECK-NOT:     ascend.vtranspose
// CHECK:         ascend.return
func.func @maxpool(%x: tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 8, 8]>>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>> {
  %y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 8, 8]>>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>> loc("maxpool")
  func.return %y : tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>
}

// -----

// avg_pool 2x2 stride 2 (f16), pad 1 at the end, count_include_pad = 0: the bottom row and the
// right column of the plane are padding (vdup 0); the divisor is the window sum of a 0/1
// mask plane, all 16 lanes wide.
// CHECK-LABEL: ascend.kernel @k0_avgpool(
// CHECK-SAME:    template = "pool"
// CHECK-NOT:     ascend.reference
// CHECK-DAG:     %[[ZERO:[a-z_0-9]+]] = arith.constant 0.000000e+00 : f16
// CHECK-DAG:     %[[ONE:[a-z_0-9]+]] = arith.constant 1.000000e+00 : f16
// CHECK-DAG:     %[[PLANE:[a-z_0-9]+]] = ascend.alloc {offset = 0 : i64} : memref<1x6x6x16xf16, "ub">
// CHECK-DAG:     %[[MASK:[a-z_0-9]+]] = ascend.alloc {offset = {{[0-9]+}} : i64} : memref<1x6x6x16xf16, "ub">
// CHECK:         %[[IN:[a-z_0-9]+]] = memref.subview %[[PLANE]][0, 0, 0, 0] [1, 5, 5, 16] [1, 1, 1, 1]
// CHECK-NEXT:    ascend.copy %{{.*}}, %[[IN]]
// CHECK:         %[[BOTTOM:[a-z_0-9]+]] = memref.subview %[[PLANE]][0, 5, 0, 0] [1, 1, 6, 16] [1, 1, 1, 1]
// CHECK-NEXT:    ascend.vdup %[[ZERO]], %[[BOTTOM]]
// CHECK-NEXT:    %[[RIGHT:[a-z_0-9]+]] = memref.subview %[[PLANE]][0, 0, 5, 0] [1, 5, 1, 16] [1, 1, 1, 1]
// CHECK-NEXT:    ascend.vdup %[[ZERO]], %[[RIGHT]]
// CHECK:         ascend.vcopy
// CHECK-COUNT-3: ascend.vadd
// CHECK:         ascend.vdup %[[ZERO]], %[[MASK]]
// CHECK-NEXT:    %[[VALID:[a-z_0-9]+]] = memref.subview %[[MASK]][0, 0, 0, 0] [1, 5, 5, 16] [1, 1, 1, 1]
// CHECK-NEXT:    ascend.vdup %[[ONE]], %[[VALID]]
// CHECK:         ascend.vcopy
// CHECK-COUNT-3: ascend.vadd
// CHECK-NEXT:    ascend.vdiv
// CHECK-NEXT:    ascend.set_flag V -> MTE3 id 0
// CHECK-NEXT:    ascend.wait_flag V -> MTE3 id 0
// CHECK-NEXT:    ascend.copy %{{.*}}, %{{.*}} : memref<1x3x3x16xf16, "ub"> to memref<1x3x3x16xf16, "gm">
// CHECK-NOT:     ascend.vtranspose
func.func @avgpool(%x: tensor<1x1x5x5x16xf16, #graph.format<NC1HWC0, NCHW, [1, 16, 5, 5]>>) -> tensor<1x1x3x3x16xf16, #graph.format<NC1HWC0, NCHW, [1, 16, 3, 3]>> {
  %y = graph.avg_pool %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x1x5x5x16xf16, #graph.format<NC1HWC0, NCHW, [1, 16, 5, 5]>>) -> tensor<1x1x3x3x16xf16, #graph.format<NC1HWC0, NCHW, [1, 16, 3, 3]>> loc("avgpool")
  func.return %y : tensor<1x1x3x3x16xf16, #graph.format<NC1HWC0, NCHW, [1, 16, 3, 3]>>
}

// -----

// A big max_pool (ResNet's stem on NC1HWC0, [1, 4, 112, 112, 16]) is tiled by slab and band of
// 5 output rows over the vector cores: the first band's 10 input rows go to plane row 1 (row
// 0 is the top padding), the following bands read 11 rows from 10 * b - 1 into plane row 0,
// the last band is shorter (56 = 11 * 5 + 1).
// CHECK-LABEL: ascend.kernel @k0_stem(
// CHECK-SAME:    attributes {block_dim = {{[1-9][0-9]+}} : i64, core_type = "vector", template = "pool"}
// CHECK:         %[[X:[a-z_0-9]+]] = memref.collapse_shape %x {{.*}} into memref<4x112x112x16xf32, "gm">
// CHECK:         memref.subview %[[X]][%{{.*}}, 0, 0, 0] [1, 10, 112, 16] [1, 1, 1, 1]
// CHECK-NEXT:    memref.subview %[[PLANE:[a-z_0-9]+]][0, 1, 1, 0] [1, 10, 112, 16] [1, 1, 1, 1]
// CHECK:         memref.subview %[[X]][%{{.*}}, %{{.*}}, 0, 0] [1, 11, 112, 16] [1, 1, 1, 1]
// CHECK-NEXT:    memref.subview %[[PLANE]][0, 0, 1, 0] [1, 11, 112, 16] [1, 1, 1, 1]
// CHECK:         memref.subview %[[X]][%{{.*}}, 109, 0, 0] [1, 3, 112, 16] [1, 1, 1, 1]
// CHECK-NOT:     ascend.vtranspose
func.func @stem(%x: tensor<1x4x112x112x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 112, 112]>>) -> tensor<1x4x56x56x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 56, 56]>> {
  %y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x112x112x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 112, 112]>>) -> tensor<1x4x56x56x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 56, 56]>> loc("stem")
  func.return %y : tensor<1x4x56x56x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 56, 56]>>
}

// -----

// global_avg_pool on [1, 64, 7, 7, 16] (DenseNet's head): a row reduction over H*W of
// [slabs, 49, 16] tiles into [slabs, 1, 16] - the C0 lanes stay.
// CHECK-LABEL: ascend.kernel @k0_gap(
// CHECK-SAME:    template = "row"
// CHECK-NOT:     ascend.reference
// CHECK:         %[[X:[a-z_0-9]+]] = memref.collapse_shape %x {{.*}} into memref<64x49x16xf32, "gm">
// CHECK:         %[[Y:[a-z_0-9]+]] = memref.collapse_shape %y {{.*}} into memref<64x1x16xf32, "gm">
// CHECK:         ascend.vreduce %{{.*}}, %{{.*}} {kind = "sum", axes = array<i64: 1>} : memref<{{[0-9]+}}x49x16xf32, "ub">, memref<{{[0-9]+}}x1x16xf32, "ub">
// CHECK-NEXT:    ascend.vmuls
func.func @gap(%x: tensor<1x64x7x7x16xf32, #graph.format<NC1HWC0, NCHW, [1, 1024, 7, 7]>>) -> tensor<1x64x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 1024, 1, 1]>> {
  %y = graph.global_avg_pool %x : (tensor<1x64x7x7x16xf32, #graph.format<NC1HWC0, NCHW, [1, 1024, 7, 7]>>) -> tensor<1x64x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 1024, 1, 1]>> loc("gap")
  func.return %y : tensor<1x64x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 1024, 1, 1]>>
}

// -----

// LRN on [1, 20, 4, 4] stored [1, 2, 4, 4, 16]: the [1, 2, 16, 16] tile (C1, pixels, C0) is
// transposed to channel rows [32, 16]; only the 20 real channels are squared into the window
// buffer (the padding lanes' squares stay 0); the result is transposed back.
// CHECK-LABEL: ascend.kernel @k0_lrn(
// CHECK-SAME:    template = "lrn"
// CHECK-NOT:     ascend.reference
// CHECK-DAG:     %[[ROWS:[a-z_0-9]+]] = ascend.alloc {{.*}} : memref<32x16xf32, "ub">
// CHECK-DAG:     %[[SQ:[a-z_0-9]+]] = ascend.alloc {{.*}} : memref<36x16xf32, "ub">
// CHECK-DAG:     %[[LANES:[a-z_0-9]+]] = ascend.alloc {{.*}} : memref<1x2x16x16xf32, "ub">
// CHECK:         ascend.copy %{{.*}}, %[[LANES]] : memref<1x2x16x16xf32, "gm"> to memref<1x2x16x16xf32, "ub">
// CHECK:         %[[V:[a-z_0-9]+]] = memref.expand_shape %[[ROWS]] {{.*}} into memref<1x2x16x16xf32, "ub">
// CHECK-NEXT:    ascend.vtranspose %[[LANES]], %[[V]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK-NEXT:    %[[REAL:[a-z_0-9]+]] = memref.subview %[[ROWS]][0, 0] [20, 16] [1, 1]
// CHECK-NEXT:    ascend.vdup %{{.*}}, %[[SQ]]
// CHECK-NEXT:    %[[MID:[a-z_0-9]+]] = memref.subview %[[SQ]][2, 0] [20, 16] [1, 1]
// CHECK-NEXT:    ascend.vmul %[[REAL]], %[[REAL]], %[[MID]]
// CHECK:         ascend.vtranspose %{{.*}}, %[[LANES]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK:         ascend.copy %[[LANES]], %{{.*}} : memref<1x2x16x16xf32, "ub"> to memref<1x2x16x16xf32, "gm">
func.func @lrn(%x: tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>> {
  %y = graph.lrn %x {size = 5 : i64, alpha = 1.0e-04 : f32, beta = 7.5e-01 : f32, bias = 1.0 : f32} : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>> loc("lrn")
  func.return %y : tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>
}

// -----

// batch_norm's per-channel parameters [C] do not line up with [C1, C0] lanes: the row
// template leaves it, and it runs on plain NCHW between two layout-conversion kernels.
// CHECK-LABEL: ascend.kernel @k0_bn(
// CHECK-SAME:    template = "layout", layout_conversion
// CHECK-LABEL: ascend.kernel @k1_bn(
// CHECK-SAME:    %in0: memref<1x20x4x4xf32, "gm">
// CHECK-SAME:    template = "row"
// CHECK-LABEL: ascend.kernel @k2_bn(
// CHECK-SAME:    template = "layout", layout_conversion
// CHECK-NOT:     ascend.reference
func.func @bn(%x: tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>, %s: tensor<20xf32>, %b: tensor<20xf32>, %m: tensor<20xf32>, %v: tensor<20xf32>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>> {
  %y = graph.batch_norm %x, %s, %b, %m, %v : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>, tensor<20xf32>, tensor<20xf32>, tensor<20xf32>, tensor<20xf32>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>> loc("bn")
  func.return %y : tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>
}
