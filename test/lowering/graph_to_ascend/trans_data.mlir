// convert-graph-to-ascend: graph.trans_data kernels (lowering/templates/trans_data.py). A conversion
// is a transpose of the fine index space (the blocked dims split into blocks): a box of it is
// one strided gm tile per side - DMA in (`pad`: zero past the real channels / rows), vtranspose
// in ub into the destination's order, DMA out (`pad`: the padding lanes dropped). Every such
// kernel is marked `layout_conversion`; pairs without a kernel stay the reference fallback.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// NCHW -> NC1HWC0 with C = 3: one C0 block of which 3 lanes are real. The [3, 64] channel
// rows are copied with pad into a [16, 64] tile (rows 3..15 zero), vtransposed to [64, 16]
// (pixels x lanes) and written as the [1, 64, 16] slab.
// CHECK-LABEL: ascend.kernel @k0_to5hd(
// CHECK-SAME:    %x: memref<1x3x8x8xf32, "gm">, %y: memref<1x1x8x8x16xf32, "gm">)
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", template = "layout", layout_conversion}
// CHECK-NOT:     ascend.reference
// CHECK-DAG:     %[[IN:[a-z_0-9]+]] = ascend.alloc {offset = 0 : i64} : memref<16x64xf32, "ub">
// CHECK-DAG:     %[[OUT:[a-z_0-9]+]] = ascend.alloc {offset = 4096 : i64} : memref<1x64x16xf32, "ub">
// CHECK-DAG:     %[[X:[a-z_0-9]+]] = memref.collapse_shape %x {{.*}} into memref<3x64xf32, "gm">
// CHECK-DAG:     %[[Y:[a-z_0-9]+]] = memref.collapse_shape %y {{.*}} into memref<1x64x16xf32, "gm">
// CHECK:         ascend.copy %[[X]], %[[IN]] {pad} : memref<3x64xf32, "gm"> to memref<16x64xf32, "ub">
// CHECK-NEXT:    ascend.set_flag MTE2 -> V id 0
// CHECK-NEXT:    ascend.wait_flag MTE2 -> V id 0
// CHECK-NEXT:    %[[T:[a-z_0-9]+]] = memref.collapse_shape %[[OUT]] {{.*}} into memref<64x16xf32, "ub">
// CHECK-NEXT:    ascend.vtranspose %[[IN]], %[[T]] {perm = array<i64: 1, 0>}
// CHECK-NEXT:    ascend.set_flag V -> MTE3 id 0
// CHECK-NEXT:    ascend.wait_flag V -> MTE3 id 0
// CHECK-NEXT:    ascend.copy %[[OUT]], %[[Y]] : memref<1x64x16xf32, "ub"> to memref<1x64x16xf32, "gm">
// CHECK:         ascend.return
func.func @to_5hd_c3(%x: tensor<1x3x8x8xf32>) -> tensor<1x1x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 3, 8, 8]>> {
  %y = graph.trans_data %x {src_format = "NCHW", dst_format = "NC1HWC0"} : (tensor<1x3x8x8xf32>) -> tensor<1x1x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 3, 8, 8]>> loc("to5hd")
  func.return %y : tensor<1x1x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 3, 8, 8]>>
}

// -----

// NCHW -> NC1HWC0 with C = 40 (f16): the box spans all three C1 blocks, so the partial one
// needs no piece of its own - the [40, 16] rows come with pad into [48, 16], seen as
// [3, 16, 16] (C1, C0, HW) and transposed to [3, 16, 16] (C1, HW, C0).
// CHECK-LABEL: ascend.kernel @k0_to5hd(
// CHECK-SAME:    layout_conversion
// CHECK-NOT:     ascend.reference
// CHECK:         ascend.copy %{{.*}}, %[[IN:[a-z_0-9]+]] {pad} : memref<40x16xf16, "gm"> to memref<48x16xf16, "ub">
// CHECK:         %[[V:[a-z_0-9]+]] = memref.expand_shape %[[IN]] {{.*}} output_shape [3, 16, 16] : memref<48x16xf16, "ub"> into memref<3x16x16xf16, "ub">
// CHECK-NEXT:    ascend.vtranspose %[[V]], %[[OUT:[a-z_0-9]+]] {perm = array<i64: 0, 2, 1>} : memref<3x16x16xf16, "ub">
// CHECK:         ascend.copy %[[OUT]], %{{.*}} : memref<3x16x16xf16, "ub"> to memref<3x16x16xf16, "gm">
// CHECK-NOT:     ascend.copy
// CHECK:         ascend.return
func.func @to_5hd_c40(%x: tensor<1x40x4x4xf16>) -> tensor<1x3x4x4x16xf16, #graph.format<NC1HWC0, NCHW, [1, 40, 4, 4]>> {
  %y = graph.trans_data %x {src_format = "NCHW", dst_format = "NC1HWC0"} : (tensor<1x40x4x4xf16>) -> tensor<1x3x4x4x16xf16, #graph.format<NC1HWC0, NCHW, [1, 40, 4, 4]>> loc("to5hd")
  func.return %y : tensor<1x3x4x4x16xf16, #graph.format<NC1HWC0, NCHW, [1, 40, 4, 4]>>
}

// -----

// NC1HWC0 -> NCHW, C = 40: the reverse; the last copy writes only the 40 real channel rows
// of the [48, 16] tile (pad on ub -> gm drops the padding lanes).
// CHECK-LABEL: ascend.kernel @k0_from5hd(
// CHECK-SAME:    layout_conversion
// CHECK-NOT:     ascend.reference
// CHECK:         ascend.copy %{{.*}}, %[[IN:[a-z_0-9]+]] : memref<3x16x16xf16, "gm"> to memref<3x16x16xf16, "ub">
// CHECK:         %[[V:[a-z_0-9]+]] = memref.expand_shape %[[OUT:[a-z_0-9]+]] {{.*}} into memref<3x16x16xf16, "ub">
// CHECK-NEXT:    ascend.vtranspose %[[IN]], %[[V]] {perm = array<i64: 0, 2, 1>}
// CHECK:         ascend.copy %[[OUT]], %{{.*}} {pad} : memref<48x16xf16, "ub"> to memref<40x16xf16, "gm">
func.func @from_5hd(%x: tensor<1x3x4x4x16xf16, #graph.format<NC1HWC0, NCHW, [1, 40, 4, 4]>>) -> tensor<1x40x4x4xf16> {
  %y = graph.trans_data %x {src_format = "NC1HWC0", dst_format = "NCHW"} : (tensor<1x3x4x4x16xf16, #graph.format<NC1HWC0, NCHW, [1, 40, 4, 4]>>) -> tensor<1x40x4x4xf16> loc("from5hd")
  func.return %y : tensor<1x40x4x4xf16>
}

// -----

// The CNNs' classifier conversion, NC1HWC0 [1, 63, 1, 1, 16] -> [1, 1000, 1, 1]: with H = W = 1
// both sides hold the channels in the same order, so there is no vtranspose: the ub tile is
// re-viewed flat and written back with the padding lanes dropped.
// CHECK-LABEL: ascend.kernel @k0_classifier(
// CHECK-SAME:    layout_conversion
// CHECK:         %[[IN:[a-z_0-9]+]] = ascend.alloc {offset = 0 : i64} : memref<63x16xf32, "ub">
// CHECK:         %[[FLAT:[a-z_0-9]+]] = memref.collapse_shape %[[IN]] {{.*}} into memref<1008xf32, "ub">
// CHECK:         ascend.copy %{{.*}}, %[[IN]] : memref<63x16xf32, "gm"> to memref<63x16xf32, "ub">
// CHECK-NEXT:    ascend.set_flag MTE2 -> MTE3 id 0
// CHECK-NEXT:    ascend.wait_flag MTE2 -> MTE3 id 0
// CHECK-NEXT:    ascend.copy %[[FLAT]], %{{.*}} {pad} : memref<1008xf32, "ub"> to memref<1000xf32, "gm">
// CHECK-NOT:     ascend.vtranspose
// CHECK:         ascend.return
func.func @classifier(%x: tensor<1x63x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 1000, 1, 1]>>) -> tensor<1x1000x1x1xf32> {
  %y = graph.trans_data %x {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<1x63x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 1000, 1, 1]>>) -> tensor<1x1000x1x1xf32> loc("classifier")
  func.return %y : tensor<1x1000x1x1xf32>
}

// -----

// ND [33, 40] -> FRACTAL_NZ [K1 = 3, M1 = 3, 16, 16]: the matrix comes with pad into [48, 48]
// (zero past row 33 and column 40), seen as [48, 3, 16] (M, K1, C0) and transposed so that
// the column blocks are outermost: [3, 48, 16] = the NZ storage seen as [K1, M1 * 16, C0].
// CHECK-LABEL: ascend.kernel @k0_tonz(
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", template = "layout", layout_conversion}
// CHECK-NOT:     ascend.reference
// CHECK:         %[[Y:[a-z_0-9]+]] = memref.collapse_shape %y {{.*}} into memref<3x48x16xf32, "gm">
// CHECK:         ascend.copy %x, %[[IN:[a-z_0-9]+]] {pad} : memref<33x40xf32, "gm"> to memref<48x48xf32, "ub">
// CHECK:         %[[V:[a-z_0-9]+]] = memref.expand_shape %[[IN]] {{.*}} into memref<48x3x16xf32, "ub">
// CHECK-NEXT:    ascend.vtranspose %[[V]], %[[OUT:[a-z_0-9]+]] {perm = array<i64: 1, 0, 2>} : memref<48x3x16xf32, "ub">, memref<3x48x16xf32, "ub">
// CHECK:         ascend.copy %[[OUT]], %[[Y]] : memref<3x48x16xf32, "ub"> to memref<3x48x16xf32, "gm">
func.func @to_nz(%x: tensor<33x40xf32>) -> tensor<3x3x16x16xf32, #graph.format<FRACTAL_NZ, ND, [33, 40]>> {
  %y = graph.trans_data %x {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<33x40xf32>) -> tensor<3x3x16x16xf32, #graph.format<FRACTAL_NZ, ND, [33, 40]>> loc("tonz")
  func.return %y : tensor<3x3x16x16xf32, #graph.format<FRACTAL_NZ, ND, [33, 40]>>
}

// -----

// FRACTAL_NZ -> ND with a batch of 2: one box per batch index, spread over two blocks; only the
// 33 real rows of each column block are read, and the [33, 40] corner of the transposed
// [48, 48] tile is written.
// CHECK-LABEL: ascend.kernel @k0_fromnz(
// CHECK-SAME:    attributes {block_dim = 2 : i64, core_type = "vector", template = "layout", layout_conversion}
// CHECK-NOT:     ascend.reference
// CHECK:         %[[B:[a-z_0-9]+]] = ascend.block_idx
// CHECK:         %[[T:[a-z_0-9]+]] = memref.subview %{{.*}}[%[[B]], 0, 0, 0] [1, 3, 33, 16] [1, 1, 1, 1]
// CHECK-NEXT:    ascend.copy %[[T]], %{{.*}} {pad} : {{.*}} to memref<1x3x48x16xf32, "ub">
// CHECK:         ascend.vtranspose %{{.*}}, %{{.*}} {perm = array<i64: 1, 0, 2>} : memref<3x48x16xf32, "ub">, memref<48x3x16xf32, "ub">
// CHECK:         %[[D:[a-z_0-9]+]] = memref.subview %y[%[[B]], 0, 0] [1, 33, 40] [1, 1, 1]
// CHECK-NEXT:    ascend.copy %{{.*}}, %[[D]] {pad} : memref<1x48x48xf32, "ub"> to memref<1x33x40xf32, {{.*}}>
func.func @from_nz(%x: tensor<2x3x3x16x16xf32, #graph.format<FRACTAL_NZ, ND, [2, 33, 40]>>) -> tensor<2x33x40xf32> {
  %y = graph.trans_data %x {src_format = "FRACTAL_NZ", dst_format = "ND"} : (tensor<2x3x3x16x16xf32, #graph.format<FRACTAL_NZ, ND, [2, 33, 40]>>) -> tensor<2x33x40xf32> loc("fromnz")
  func.return %y : tensor<2x33x40xf32>
}

// -----

// A big NCHW -> NC1HWC0 ([1, 64, 56, 56] f32, 3 MiB) is tiled over the vector cores: boxes of
// one C1 block x a band of pixels, in a per-block range of tiles with a tail.
// CHECK-LABEL: ascend.kernel @k0_big(
// CHECK-SAME:    attributes {block_dim = {{[1-9][0-9]+}} : i64, core_type = "vector", template = "layout", layout_conversion}
// CHECK:         ascend.block_idx
// CHECK:         ascend.copy %{{.*}}, %{{.*}} : memref<16x{{[0-9]+}}xf32, strided<[3136, 1], offset: ?>, "gm">
// CHECK:         ascend.vtranspose
// CHECK:         ascend.copy %{{.*}}, %{{.*}} : memref<1x{{[0-9]+}}x16xf32, "ub"> to memref<1x{{[0-9]+}}x16xf32, strided<[50176, 16, 1], offset: ?>, "gm">
func.func @big(%x: tensor<1x64x56x56xf32>) -> tensor<1x4x56x56x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 56, 56]>> {
  %y = graph.trans_data %x {src_format = "NCHW", dst_format = "NC1HWC0"} : (tensor<1x64x56x56xf32>) -> tensor<1x4x56x56x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 56, 56]>> loc("big")
  func.return %y : tensor<1x4x56x56x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 56, 56]>>
}

// -----

// NC1HWC0 -> FRACTAL_Z (a conv weight computed at run time): both sides are blocked in C, so
// the partial C1 block is a piece of its own whose C0 lanes are read with pad (the source's
// don't-care padding lanes must become zero in the weight).
// CHECK-LABEL: ascend.kernel @k0_tofz(
// CHECK-SAME:    layout_conversion
// CHECK-NOT:     ascend.reference
// CHECK:         ascend.vtranspose
// CHECK:         ascend.copy %{{.*}}, %{{.*}} {pad} : memref<{{.*}}x8xf32, {{.*}}"gm"> to memref<{{.*}}x16xf32, "ub">
// CHECK:         ascend.vtranspose
func.func @to_fz(%x: tensor<20x2x3x3x16xf32, #graph.format<NC1HWC0, NCHW, [20, 24, 3, 3]>>) -> tensor<18x2x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [20, 24, 3, 3]>> {
  %y = graph.trans_data %x {src_format = "NC1HWC0", dst_format = "FRACTAL_Z"} : (tensor<20x2x3x3x16xf32, #graph.format<NC1HWC0, NCHW, [20, 24, 3, 3]>>) -> tensor<18x2x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [20, 24, 3, 3]>> loc("tofz")
  func.return %y : tensor<18x2x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [20, 24, 3, 3]>>
}

// -----

// NC1HWC0 -> FRACTAL_NZ (a 4-D tensor's NZ over H, W) has no kernel: it stays the reference
// fallback, given the logical shape and origin, and is still counted as layout conversion.
// CHECK-LABEL: ascend.kernel @k0_fallback(
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", fallback, layout_conversion}
// CHECK-NEXT:    ascend.reference "graph.trans_data" ins(%x : memref<1x1x4x4x16xf32, "gm">) outs(%y : memref<1x8x1x1x16x16xf32, "gm">)
// CHECK-SAME:      src_format = "NC1HWC0", dst_format = "FRACTAL_NZ"
// CHECK-SAME:      extra.shape = array<i64: 1, 8, 4, 4>
func.func @fallback(%x: tensor<1x1x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 8, 4, 4]>>) -> tensor<1x8x1x1x16x16xf32, #graph.format<FRACTAL_NZ, NCHW, [1, 8, 4, 4]>> {
  %y = graph.trans_data %x {src_format = "NC1HWC0", dst_format = "FRACTAL_NZ"} : (tensor<1x1x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 8, 4, 4]>>) -> tensor<1x8x1x1x16x16xf32, #graph.format<FRACTAL_NZ, NCHW, [1, 8, 4, 4]>> loc("fallback")
  func.return %y : tensor<1x8x1x1x16x16xf32, #graph.format<FRACTAL_NZ, NCHW, [1, 8, 4, 4]>>
}
