// A graph.trans_data between two layouts of the same bytes in the same order is a flat byte
// copy (lowering/templates/trans_data.py same_bytes), which ascend-elide-copies makes a view:
// a globally pooled NC1HWC0 tensor [N, C1, 1, 1, C0] whose C0 divides C is its NCHW
// [N, C, 1, 1] byte for byte. With padded channels or pixels left, the conversion moves data
// and stays a layout kernel.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s --check-prefix=LOWER
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend,ascend-elide-copies | filecheck %s

// C = 32 = 2 x 16 (f16), H = W = 1: the same 128 bytes in the same order.
// LOWER-LABEL: ascend.kernel @k1_back(
// LOWER-SAME:    template = "layout", geir.byte_copies = [array<i64: 1, 0, 0, 0, 128>], layout_conversion
// LOWER-NOT:     ascend.vtranspose
// CHECK-LABEL: func.func @pooled(
// CHECK:         %[[P:.*]] = ascend.alloc {offset = 0 : i64} : memref<2x2x1x1x16xf16, "gm">
// CHECK-NEXT:    ascend.launch @k0_pool
// CHECK-NEXT:    %[[T:.*]] = ascend.view %[[P]][0] : memref<2x2x1x1x16xf16, "gm"> to memref<2x32x1x1xf16, "gm">
// CHECK-NEXT:    ascend.launch @k2_relu on %{{.*}}(%[[T]], %r)
// CHECK-NOT:     ascend.launch @k1_back
func.func @pooled(%x: tensor<2x2x4x4x16xf16, #graph.format<NC1HWC0, NCHW, [2, 32, 4, 4]>>) -> tensor<2x32x1x1xf16> {
  %p = graph.global_avg_pool %x : (tensor<2x2x4x4x16xf16, #graph.format<NC1HWC0, NCHW, [2, 32, 4, 4]>>) -> tensor<2x2x1x1x16xf16, #graph.format<NC1HWC0, NCHW, [2, 32, 1, 1]>> loc("pool")
  %t = graph.trans_data %p {src_format = "NC1HWC0", dst_format = "NCHW"} : (tensor<2x2x1x1x16xf16, #graph.format<NC1HWC0, NCHW, [2, 32, 1, 1]>>) -> tensor<2x32x1x1xf16> loc("back")
  %r = graph.relu %t : (tensor<2x32x1x1xf16>) -> tensor<2x32x1x1xf16> loc("relu")
  func.return %r : tensor<2x32x1x1xf16>
}

// -----

// C = 40: the last C1 block has 8 padding lanes the NCHW side does not hold.
// LOWER-LABEL: ascend.kernel @k1_back(
// LOWER-NOT:     geir.byte_copies
// LOWER-SAME:    layout_conversion
// CHECK-LABEL: func.func @padded_channels(
// CHECK:         ascend.launch @k1_back
func.func @padded_channels(%x: tensor<2x3x4x4x16xf16, #graph.format<NC1HWC0, NCHW, [2, 40, 4, 4]>>) -> tensor<2x40x1x1xf16> {
  %p = graph.global_avg_pool %x : (tensor<2x3x4x4x16xf16, #graph.format<NC1HWC0, NCHW, [2, 40, 4, 4]>>) -> tensor<2x3x1x1x16xf16, #graph.format<NC1HWC0, NCHW, [2, 40, 1, 1]>> loc("pool")
  %t = graph.trans_data %p {src_format = "NC1HWC0", dst_format = "NCHW"} : (tensor<2x3x1x1x16xf16, #graph.format<NC1HWC0, NCHW, [2, 40, 1, 1]>>) -> tensor<2x40x1x1xf16> loc("back")
  %r = graph.relu %t : (tensor<2x40x1x1xf16>) -> tensor<2x40x1x1xf16> loc("relu")
  func.return %r : tensor<2x40x1x1xf16>
}

// -----

// H = W = 2: NC1HWC0 keeps C0 innermost, NCHW the pixels: a transpose.
// LOWER-LABEL: ascend.kernel @k0_back(
// LOWER-NOT:     geir.byte_copies
// LOWER:         ascend.vtranspose
// CHECK-LABEL: func.func @pixels(
// CHECK:         ascend.launch @k0_back
func.func @pixels(%x: tensor<2x2x2x2x16xf16, #graph.format<NC1HWC0, NCHW, [2, 32, 2, 2]>>) -> tensor<2x32x2x2xf16> {
  %t = graph.trans_data %x {src_format = "NC1HWC0", dst_format = "NCHW"} : (tensor<2x2x2x2x16xf16, #graph.format<NC1HWC0, NCHW, [2, 32, 2, 2]>>) -> tensor<2x32x2x2xf16> loc("back")
  %r = graph.relu %t : (tensor<2x32x2x2xf16>) -> tensor<2x32x2x2xf16> loc("relu")
  func.return %r : tensor<2x32x2x2xf16>
}
