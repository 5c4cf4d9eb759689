// convert-graph-to-ascend, trans_data kernels in bf16: C0 is 16 for any 2-byte type, so
// bf16 blocks its channels as f16 does (trans_data.mlir) - DMA with pad and vtranspose move
// bits, nothing is converted.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// NCHW -> NC1HWC0, C = 40: [40, 16] channel rows padded to [48, 16], transposed per block.
// CHECK-LABEL: ascend.kernel @k0_to5hd(
// CHECK-SAME:    template = "layout", layout_conversion
// CHECK-NEXT:    %in_ub = ascend.alloc {offset = 0 : i64} : memref<48x16xbf16, "ub">
// CHECK-NEXT:    %out_ub = ascend.alloc {offset = 1536 : i64} : memref<3x16x16xbf16, "ub">
// CHECK-NOT:     ascend.vcast
// CHECK:         ascend.copy %{{.*}}, %in_ub {pad} : memref<40x16xbf16, "gm"> to memref<48x16xbf16, "ub">
// CHECK:         ascend.vtranspose %{{.*}}, %out_ub {perm = array<i64: 0, 2, 1>} : memref<3x16x16xbf16, "ub">
// CHECK:         ascend.copy %out_ub, %{{.*}} : memref<3x16x16xbf16, "ub"> to memref<3x16x16xbf16, "gm">
// CHECK-NOT:     ascend.vcast
// CHECK:         ascend.return
func.func @to5hd(%x: tensor<1x40x4x4xbf16>) -> tensor<1x3x4x4x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 40, 4, 4]>> {
  %y = graph.trans_data %x {src_format = "NCHW", dst_format = "NC1HWC0"} : (tensor<1x40x4x4xbf16>) -> tensor<1x3x4x4x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 40, 4, 4]>> loc("to5hd")
  func.return %y : tensor<1x3x4x4x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 40, 4, 4]>>
}

// -----

// And back: the padding lanes dropped by the last copy.
// CHECK-LABEL: ascend.kernel @k0_from5hd(
// CHECK:         ascend.copy %{{.*}}, %in_ub : memref<3x16x16xbf16, "gm"> to memref<3x16x16xbf16, "ub">
// CHECK:         ascend.vtranspose %in_ub, %{{.*}} {perm = array<i64: 0, 2, 1>} : memref<3x16x16xbf16, "ub">
// CHECK:         ascend.copy %out_ub, %{{.*}} {pad} : memref<48x16xbf16, "ub"> to memref<40x16xbf16, "gm">
func.func @from5hd(%x: tensor<1x3x4x4x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 40, 4, 4]>>) -> tensor<1x40x4x4xbf16> {
  %y = graph.trans_data %x {src_format = "NC1HWC0", dst_format = "NCHW"} : (tensor<1x3x4x4x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 40, 4, 4]>>) -> tensor<1x40x4x4xbf16> loc("from5hd")
  func.return %y : tensor<1x40x4x4xbf16>
}
