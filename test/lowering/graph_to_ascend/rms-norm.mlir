// convert-graph-to-ascend: rms_norm is a row kernel (never the reference fallback) at the sizes
// LLaMA runs it: rows of hidden 4096 and 8192 at batch * sequence 2048. Per tile: square, sum
// over the row times 1/n, + eps, sqrt of the statistic, divide the row by it (vbrcb), times the
// scale - loaded once before the tile loop. A row-sized temporary (the square, the broadcast
// statistic) goes back to the pool as soon as it is read, so the row, one temporary and the
// scale fit ub twice (double-buffered) at 4096 and, with a residual Add fused before it,
// once at 8192.
// RUN: geir-opt %s --split-input-file -p 'convert-graph-to-ascend{double-buffer=true},ascend-plan-memory' | filecheck %s

// Hidden 4096: tiles of two rows, double-buffered over the 48 vector cores.
// CHECK-LABEL: ascend.kernel @k0_rms(
// CHECK-SAME:    attributes {block_dim = 48 : i64, core_type = "vector", template = "row"}
// CHECK:         %[[W:.*]] = ascend.alloc {offset = 0 : i64} : memref<1x4096xf32, "ub">
// CHECK:         %[[X:s0b1]] = ascend.alloc {{.*}} : memref<2x4096xf32, "ub">
// CHECK-NEXT:    %[[T:s0b2]] = ascend.alloc {{.*}} : memref<2x4096xf32, "ub">
// CHECK-NEXT:    %[[S:s0b3]] = ascend.alloc {{.*}} : memref<2x8xf32, "ub">
// CHECK-NOT:     ascend.alloc {{.*}} : memref<2x4096xf32
// CHECK:         %[[INV_N:.*]] = arith.constant 0.000244140625 : f32
// CHECK-NEXT:    %[[EPS:.*]] = arith.constant 1.000000e-06 : f32
// CHECK:         ascend.copy %{{.*}}, %[[W]] : memref<1x4096xf32, "gm"> to memref<1x4096xf32, "ub">
// CHECK-NEXT:    ascend.set_flag MTE2 -> V id 2
// CHECK-NEXT:    ascend.wait_flag MTE2 -> V id 2
// CHECK:         scf.for
// CHECK:         ascend.copy %{{.*}}, %[[X]] : memref<2x4096xf32, strided<[4096, 1], offset: ?>, "gm"> to memref<2x4096xf32, "ub">
// CHECK:         ascend.vmul %[[X]], %[[X]], %[[T]]
// CHECK-NEXT:    %[[MS:.*]] = memref.subview %[[S]][0, 0] [2, 1] [1, 1]
// CHECK-NEXT:    ascend.vreduce %[[T]], %[[MS]] {kind = "sum", axes = array<i64: 1>}
// CHECK-NEXT:    ascend.vmuls %[[MS]], %[[INV_N]], %[[MS]]
// CHECK-NEXT:    ascend.vadds %[[MS]], %[[EPS]], %[[MS]]
// CHECK-NEXT:    ascend.vsqrt %[[MS]], %[[MS]]
// CHECK-NEXT:    ascend.vbrcb %[[MS]], %[[T]]
// CHECK-NEXT:    ascend.vdiv %[[X]], %[[T]], %[[X]]
// CHECK-NEXT:    ascend.vbrcb %[[W]], %[[T]] : memref<1x4096xf32, "ub">, memref<2x4096xf32, "ub">
// CHECK-NEXT:    ascend.vmul %[[X]], %[[T]], %[[X]]
// CHECK:         ascend.copy %[[X]], %{{.*}} : memref<2x4096xf32, "ub"> to memref<2x4096xf32, strided<[4096, 1], offset: ?>, "gm">
// CHECK:         s1b1
// CHECK-NOT:     ascend.reference
func.func @rms_norm_4096(%x: tensor<2048x4096xf32>, %w: tensor<4096xf32>) -> tensor<2048x4096xf32> {
  %y = graph.rms_norm %x, %w {axis = -1 : i64, epsilon = 1.0e-06 : f32} : (tensor<2048x4096xf32>, tensor<4096xf32>) -> tensor<2048x4096xf32> loc("rms")
  func.return %y : tensor<2048x4096xf32>
}

// -----

// Hidden 8192 with the residual Add fused before it (what graph-fuse builds for a LLaMA
// block; the residual stream h is a result too, CANN's AddRmsNorm): x, r, the temporary and
// the scale are four 32 KiB rows, which fit once but not twice - one slot, one row a tile.
// CHECK-LABEL: ascend.kernel @k0_residual(
// CHECK-SAME:    attributes {block_dim = 48 : i64, core_type = "vector", template = "row",
// CHECK-SAME:    geir.outputs = {{\[}}[0 : i64, "residual"], [0 : i64, "rms"]]}
// CHECK:         %[[W:c1]] = ascend.alloc {offset = 0 : i64} : memref<1x8192xf32, "ub">
// CHECK:         %[[X:b1]] = ascend.alloc {{.*}} : memref<1x8192xf32, "ub">
// CHECK-NEXT:    %[[R:b2]] = ascend.alloc {{.*}} : memref<1x8192xf32, "ub">
// CHECK-NEXT:    %[[T:b3]] = ascend.alloc {{.*}} : memref<1x8192xf32, "ub">
// CHECK-NOT:     ascend.alloc {{.*}} : memref<1x8192xf32
// CHECK-NOT:     s1b
// CHECK:         scf.for
// CHECK:         ascend.vadd %[[X]], %[[R]], %[[X]]
// CHECK-NEXT:    ascend.vmul %[[X]], %[[X]], %[[T]]
// CHECK:         ascend.vsqrt
// CHECK-NEXT:    ascend.vbrcb %{{.*}}, %[[T]]
// CHECK-NEXT:    ascend.vdiv %[[X]], %[[T]], %[[R]]
// CHECK-NEXT:    ascend.vmul %[[R]], %[[W]], %[[R]]
// CHECK:         ascend.copy %[[X]]
// CHECK:         ascend.copy %[[R]]
// CHECK-NOT:     ascend.reference
func.func @add_rms_norm_8192(%x: tensor<2048x8192xf32>, %r: tensor<2048x8192xf32>, %w: tensor<8192xf32>) -> (tensor<2048x8192xf32>, tensor<2048x8192xf32>) {
  %h, %y = graph.fusion "vector" (%x, %r, %w) : (tensor<2048x8192xf32>, tensor<2048x8192xf32>, tensor<8192xf32>) -> (tensor<2048x8192xf32>, tensor<2048x8192xf32>) {
  ^bb0(%xa: tensor<2048x8192xf32>, %ra: tensor<2048x8192xf32>, %wa: tensor<8192xf32>):
    %ha = graph.add %xa, %ra : (tensor<2048x8192xf32>, tensor<2048x8192xf32>) -> tensor<2048x8192xf32> loc("residual")
    %n = graph.rms_norm %ha, %wa {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2048x8192xf32>, tensor<8192xf32>) -> tensor<2048x8192xf32> loc("rms")
    graph.yield %ha, %n : tensor<2048x8192xf32>, tensor<2048x8192xf32>
  } loc(fused["residual", "rms"])
  func.return %h, %y : tensor<2048x8192xf32>, tensor<2048x8192xf32>
}

// -----

// fp16: the row is normalised in fp32 (vcast up, the statistic and the division in f32, vcast
// back), then scaled in fp16 - the op's stash_type 1.
// CHECK-LABEL: ascend.kernel @k0_rms(
// CHECK-SAME:    template = "row"
// CHECK:         scf.for
// CHECK:         ascend.vcast %[[X:.*]], %[[XF:.*]] : memref<1x4096xf16, "ub">, memref<1x4096xf32, "ub">
// CHECK-NEXT:    ascend.vmul %[[XF]], %[[XF]], %[[T:.*]] : memref<1x4096xf32
// CHECK:         ascend.vdiv %[[XF]], %[[T]], %[[XF]] : memref<1x4096xf32
// CHECK-NEXT:    ascend.vcast %[[XF]], %[[X]] : memref<1x4096xf32, "ub">, memref<1x4096xf16, "ub">
// CHECK-NEXT:    ascend.vmul %[[X]], %{{.*}}, %[[X]] : memref<1x4096xf16
// CHECK-NOT:     ascend.reference
func.func @rms_norm_f16(%x: tensor<64x4096xf16>, %w: tensor<4096xf16>) -> tensor<64x4096xf16> {
  %y = graph.rms_norm %x, %w {axis = -1 : i64, epsilon = 1.0e-06 : f32} : (tensor<64x4096xf16>, tensor<4096xf16>) -> tensor<64x4096xf16> loc("rms")
  func.return %y : tensor<64x4096xf16>
}

// -----

// Over the last two axes with a [8, 64] scale: the two dims are one row of 512.
// CHECK-LABEL: ascend.kernel @k0_rms(
// CHECK-SAME:    template = "row"
// CHECK:         ascend.vreduce %{{.*}}, %{{.*}} {kind = "sum", axes = array<i64: 1>} : memref<{{[0-9]+}}x512xf32
// CHECK-NOT:     ascend.reference
func.func @rms_norm_two_axes(%x: tensor<4x16x8x64xf32>, %w: tensor<8x64xf32>) -> tensor<4x16x8x64xf32> {
  %y = graph.rms_norm %x, %w {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x16x8x64xf32>, tensor<8x64xf32>) -> tensor<4x16x8x64xf32> loc("rms")
  func.return %y : tensor<4x16x8x64xf32>
}

// -----

// A scale that broadcasts to x along a kept dim (ONNX's unidirectional broadcasting, one
// factor per sequence position): the tiles cut the batch, so it is loaded once before the
// loop too, and broadcast over the rows.
// CHECK-LABEL: ascend.kernel @k0_rms(
// CHECK-SAME:    template = "row"
// CHECK:         ascend.alloc {offset = 0 : i64} : memref<1x16x8xf32, "ub">
// CHECK:         ascend.vdiv %[[X:.*]], %[[T:.*]], %[[X]] : memref<1x16x512xf32
// CHECK-NEXT:    ascend.vbrcb %{{.*}}, %[[T]] : memref<1x16x1xf32, strided<[128, 8, 1]>, "ub">, memref<1x16x512xf32, "ub">
// CHECK-NEXT:    ascend.vmul %[[X]], %[[T]], %[[X]]
// CHECK-NOT:     ascend.reference
func.func @rms_norm_row_scale(%x: tensor<4x16x512xf32>, %w: tensor<16x1xf32>) -> tensor<4x16x512xf32> {
  %y = graph.rms_norm %x, %w {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x16x512xf32>, tensor<16x1xf32>) -> tensor<4x16x512xf32> loc("rms")
  func.return %y : tensor<4x16x512xf32>
}
