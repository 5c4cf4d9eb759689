// convert-graph-to-ascend: a decode step of grouped-query attention takes the query heads that
// share a kv head as the rows of one work item, so each kv head's K and V are read once, not
// once per query head: 8 query heads on 2 kv heads load q as [4, 128] tiles (4 rows, one per
// head), and over a 4096-row cache the two items then split the keys over the cube cores
// (flash decoding; over 2048 rows the two items alone cost less than a split). Left
// per head: a mask that differs per head (the rows would need different mask rows) and more
// than one query row (the rows would mix heads and positions).
// RUN: geir-opt %s --split-input-file -p 'convert-graph-to-ascend' | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_gqa_decode(
// CHECK-SAME:    %o_part: memref<8x{{[0-9]+}}xf32, "gm">
// CHECK:         ascend.copy %{{.*}}, %q1 {pad} : memref<4x128xf16, strided<[128, 1], offset: ?>, "gm"> to memref<16x128xf16, "l1">
// CHECK-NOT:     ascend.copy %{{.*}}, %q1 {pad} : memref<1x128xf16
// CHECK-LABEL: ascend.kernel @k0_gqa_decode_combine(
func.func @main(%q: tensor<1x8x1x128xf16>, %k: tensor<1x2x4096x128xf16>, %v: tensor<1x2x4096x128xf16>) -> tensor<1x8x1x128xf16> {
  %y = graph.attention %q, %k, %v {scale = 0.088388 : f32, causal = 1 : i64} : (tensor<1x8x1x128xf16>, tensor<1x2x4096x128xf16>, tensor<1x2x4096x128xf16>) -> tensor<1x8x1x128xf16> loc("gqa_decode")
  func.return %y : tensor<1x8x1x128xf16>
}

// -----

// A mask per head: one item per query head.
// CHECK-LABEL: ascend.kernel @k0_mask_per_head(
// CHECK-NOT:     memref<4x128xf16, strided
// CHECK:         ascend.copy %{{.*}}, %q1 {pad} : memref<1x128xf16
func.func @main(%q: tensor<1x8x1x128xf16>, %k: tensor<1x2x2048x128xf16>, %v: tensor<1x2x2048x128xf16>, %m: tensor<1x8x1x2048xf16>) -> tensor<1x8x1x128xf16> {
  %y = graph.attention %q, %k, %v, %m {scale = 0.088388 : f32, causal = 0 : i64} : (tensor<1x8x1x128xf16>, tensor<1x2x2048x128xf16>, tensor<1x2x2048x128xf16>, tensor<1x8x1x2048xf16>) -> tensor<1x8x1x128xf16> loc("mask_per_head")
  func.return %y : tensor<1x8x1x128xf16>
}

// -----

// Two query rows: one item per query head (and its two rows).
// CHECK-LABEL: ascend.kernel @k0_two_rows(
// CHECK-NOT:     memref<4x128xf16, strided
// CHECK:         ascend.copy %{{.*}}, %q1 {pad} : memref<2x128xf16
func.func @main(%q: tensor<1x8x2x128xf16>, %k: tensor<1x2x2048x128xf16>, %v: tensor<1x2x2048x128xf16>) -> tensor<1x8x2x128xf16> {
  %y = graph.attention %q, %k, %v {scale = 0.088388 : f32, causal = 1 : i64} : (tensor<1x8x2x128xf16>, tensor<1x2x2048x128xf16>, tensor<1x2x2048x128xf16>) -> tensor<1x8x2x128xf16> loc("two_rows")
  func.return %y : tensor<1x8x2x128xf16>
}
