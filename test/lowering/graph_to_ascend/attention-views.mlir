// convert-graph-to-ascend of graph-fuse's attention fusion (lowering/templates/attention.py): the
// attention kernel reads q, k, v with strided DMA straight from the qkv projection - rows of one
// head 3 * H * D apart, the head's column h * D (+ H * D for k, + 2 * H * D for v) - and writes
// its output into [B, S, H * D] rows H * D apart at column h * D: no split, head or merge kernel.
// RUN: geir-opt %s --split-input-file -p 'graph-fuse,convert-graph-to-ascend' | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_split(%qkv: memref<2x16x48xf32, "gm">
// CHECK-SAME:    template = "attention"
// CHECK:         %[[QKV:.*]] = memref.collapse_shape %qkv {{.*}} into memref<32x48xf32, "gm">
// CHECK-NEXT:    %[[Y:.*]] = memref.collapse_shape %y {{.*}} into memref<32x16xf32, "gm">
// A work item: b = bh / H, h = bh % H; q's first row b * S, column h * D; k's and v's columns
// are H * D and 2 * H * D further.
// CHECK:         scf.for %[[BH:.*]] = %block
// CHECK-NEXT:      %[[B:.*]] = arith.divui %[[BH]], %c2
// CHECK-NEXT:      %[[H:.*]] = arith.remui %[[BH]], %c2
// CHECK-NEXT:      %[[QR:.*]] = arith.muli %[[B]], %c16
// CHECK-NEXT:      %[[QC:.*]] = arith.muli %[[H]], %c8
// CHECK:           %[[KC:.*]] = arith.addi %c16, %{{.*}}
// CHECK:           %[[VC:.*]] = arith.addi %c32, %{{.*}}
// CHECK-NEXT:      ascend.wait_flag MTE1 -> MTE2 id 7
// CHECK-NEXT:      %[[QT:.*]] = memref.subview %[[QKV]][%[[QR]], %[[QC]]] [16, 8] [1, 1]
// CHECK-NEXT:      ascend.copy %[[QT]], %q1 {pad} : memref<16x8xf32, strided<[48, 1], offset: ?>, "gm"> to memref<16x16xf32, "l1">
// CHECK:           memref.subview %[[QKV]][%{{.*}}, %[[KC]]] [16, 8] [1, 1]
// CHECK-NEXT:      ascend.copy %{{.*}}, %k1s0 {pad} : memref<16x8xf32, strided<[48, 1], offset: ?>, "gm"> to memref<16x16xf32, "l1">
// CHECK:           memref.subview %[[QKV]][%{{.*}}, %[[VC]]] [16, 8] [1, 1]
// CHECK-NEXT:      ascend.copy %{{.*}}, %v1s0 {pad} : memref<16x8xf32, strided<[48, 1], offset: ?>, "gm"> to memref<16x16xf32, "l1">
// The output: each of the block's two vector cores stores its 8 of the item's 16 rows.
// CHECK:           ascend.sub_block 0 {
// CHECK:             %[[OT:.*]] = memref.subview %[[Y]][%[[OR:.*]], %[[OC:.*]]] [8, 8] [1, 1]
// CHECK-NEXT:        ascend.copy %o, %[[OT]] : memref<8x8xf32, "ub"> to memref<8x8xf32, strided<[16, 1], offset: ?>, "gm">
// CHECK:           ascend.sub_block 1 {
// CHECK-NEXT:        %[[OR1:.*]] = arith.addi %[[OR]], %c8
// CHECK:             %[[OT1:.*]] = memref.subview %[[Y]][%[[OR1]], %[[OC]]] [8, 8] [1, 1]
// CHECK-NEXT:        ascend.copy %o, %[[OT1]] : memref<8x8xf32, "ub"> to memref<8x8xf32, strided<[16, 1], offset: ?>, "gm">
// CHECK-NOT:     ascend.kernel
// CHECK:         ascend.launch @k0_split
// CHECK-NOT:     ascend.launch
func.func @qkv_split(%qkv: tensor<2x16x48xf32>) -> tensor<2x16x16xf32> {
  %sizes = graph.constant dense<16> : tensor<3xi64> loc("sizes")
  %heads = graph.constant dense<[2, 16, 2, 8]> : tensor<4xi64> loc("heads")
  %merged = graph.constant dense<[2, 16, 16]> : tensor<3xi64> loc("merged")
  %q, %k, %v = graph.split %qkv, %sizes {axis = -1 : i64} : (tensor<2x16x48xf32>, tensor<3xi64>) -> (tensor<2x16x16xf32>, tensor<2x16x16xf32>, tensor<2x16x16xf32>) loc("split")
  %qh = graph.reshape %q, %heads : (tensor<2x16x16xf32>, tensor<4xi64>) -> tensor<2x16x2x8xf32> loc("q_heads")
  %qt = graph.transpose %qh {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32> loc("q_t")
  %kh = graph.reshape %k, %heads : (tensor<2x16x16xf32>, tensor<4xi64>) -> tensor<2x16x2x8xf32> loc("k_heads")
  %kt = graph.transpose %kh {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32> loc("k_t")
  %vh = graph.reshape %v, %heads : (tensor<2x16x16xf32>, tensor<4xi64>) -> tensor<2x16x2x8xf32> loc("v_heads")
  %vt = graph.transpose %vh {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32> loc("v_t")
  %o = graph.attention %qt, %kt, %vt {scale = 0.35 : f32, causal = 1 : i64} : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> loc("attn")
  %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x16x8xf32>) -> tensor<2x16x2x8xf32> loc("merge")
  %y = graph.reshape %ot, %merged : (tensor<2x16x2x8xf32>, tensor<3xi64>) -> tensor<2x16x16xf32> loc("merged")
  func.return %y : tensor<2x16x16xf32>
}

// -----

// q through a transpose of its last two dims: d is strided, DMA cannot read it as rows. The
// template refuses the fusion; its pieces lower separately - the transpose as a data kernel,
// then the attention writing through the head merge.
// CHECK-LABEL: ascend.kernel @k0_q_t(
// CHECK-SAME:    template = "data"
// CHECK:       ascend.kernel @k1_attn(
// CHECK-SAME:    template = "attention"
// CHECK:         ascend.copy %o, %{{.*}} : memref<8x16xf32, "ub"> to memref<8x16xf32, strided<[32, 1], offset: ?>, "gm">
// CHECK-NOT:   ascend.kernel
func.func @strided_d(%x: tensor<1x2x16x16xf32>, %k: tensor<1x2x16x16xf32>, %v: tensor<1x2x16x16xf32>) -> tensor<1x16x32xf32> {
  %merged = graph.constant dense<[1, 16, 32]> : tensor<3xi64> loc("merged")
  %q = graph.transpose %x {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32> loc("q_t")
  %a = graph.attention %q, %k, %v {scale = 0.25 : f32, causal = 0 : i64} : (tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32> loc("attn")
  %m = graph.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x16x16xf32>) -> tensor<1x16x2x16xf32> loc("merge")
  %y = graph.reshape %m, %merged : (tensor<1x16x2x16xf32>, tensor<3xi64>) -> tensor<1x16x32xf32> loc("merged")
  func.return %y : tensor<1x16x32xf32>
}

// -----

// The dynamo exporter's sequence-first heads: q, k, v are [S, B, E] slices of one [S, B, 3E]
// projection seen as [S, B * H, D] (b and h not one stride apart: data.py's Merged view)
// and then as [B, H, S, D]. One kernel reads them: a head's rows are the sequence, B * 3E
// apart, its column b * 3E + h * D; the output [S * B, E] rows are written at column
// (b * H + h) * D of [S, B * E].
// CHECK-LABEL: ascend.kernel @k0_q(%qkv: memref<16x2x48xf32, "gm">
// CHECK-SAME:    template = "attention"
// CHECK:         %[[QKV:.*]] = memref.collapse_shape %qkv {{.*}} into memref<16x96xf32, "gm">
// CHECK:         %[[Y:.*]] = memref.expand_shape %{{.*}} output_shape [16, 32] : memref<512xf32, "gm"> into memref<16x32xf32, "gm">
// CHECK:         scf.for %[[BH:.*]] = %block
// CHECK-NEXT:      %[[B:.*]] = arith.divui %[[BH]], %c2
// CHECK-NEXT:      %[[H:.*]] = arith.remui %[[BH]], %c2
// CHECK-NEXT:      %[[QB:.*]] = arith.muli %[[B]], %c48
// CHECK-NEXT:      %[[QH:.*]] = arith.muli %[[H]], %c8
// CHECK-NEXT:      %[[QC:.*]] = arith.addi %[[QB]], %[[QH]]
// CHECK:           %[[QT:.*]] = memref.subview %[[QKV]][0, %[[QC]]] [16, 8] [1, 1] : memref<16x96xf32, "gm"> to memref<16x8xf32, strided<[96, 1], offset: ?>, "gm">
// CHECK-NEXT:      ascend.copy %[[QT]], %q1
// CHECK:           %[[OC:.*]] = arith.muli %[[BH]], %c8
// CHECK-NEXT:      ascend.sub_block 0 {
// CHECK:             %[[OT:.*]] = memref.subview %[[Y]][0, %[[OC]]] [8, 8] [1, 1]
// CHECK-NEXT:        ascend.copy %o, %[[OT]] : memref<8x8xf32, "ub"> to memref<8x8xf32, strided<[32, 1], offset: ?>, "gm">
// CHECK:           ascend.sub_block 1 {
// CHECK:             %[[OT1:.*]] = memref.subview %[[Y]][8, %[[OC]]] [8, 8] [1, 1]
// CHECK-NOT:     ascend.kernel
// CHECK:         ascend.launch @k0_q
// CHECK-NOT:     ascend.launch
func.func @sequence_first(%qkv: tensor<16x2x48xf32>) -> tensor<32x16xf32> {
  %s0 = graph.constant dense<0> : tensor<1xi64> loc("s0")
  %s1 = graph.constant dense<16> : tensor<1xi64> loc("s1")
  %s2 = graph.constant dense<32> : tensor<1xi64> loc("s2")
  %s3 = graph.constant dense<48> : tensor<1xi64> loc("s3")
  %ax = graph.constant dense<2> : tensor<1xi64> loc("ax")
  %bh = graph.constant dense<[16, 4, 8]> : tensor<3xi64> loc("bh")
  %heads = graph.constant dense<[2, 2, 16, 8]> : tensor<4xi64> loc("heads")
  %rows = graph.constant dense<[32, 16]> : tensor<2xi64> loc("rows")
  %q = graph.slice %qkv, %s0, %s1, %ax : (tensor<16x2x48xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<16x2x16xf32> loc("q")
  %k = graph.slice %qkv, %s1, %s2, %ax : (tensor<16x2x48xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<16x2x16xf32> loc("k")
  %v = graph.slice %qkv, %s2, %s3, %ax : (tensor<16x2x48xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<16x2x16xf32> loc("v")
  %qm = graph.reshape %q, %bh : (tensor<16x2x16xf32>, tensor<3xi64>) -> tensor<16x4x8xf32> loc("q_bh")
  %qt = graph.transpose %qm {perm = array<i64: 1, 0, 2>} : (tensor<16x4x8xf32>) -> tensor<4x16x8xf32> loc("q_t")
  %qh = graph.reshape %qt, %heads : (tensor<4x16x8xf32>, tensor<4xi64>) -> tensor<2x2x16x8xf32> loc("q_heads")
  %km = graph.reshape %k, %bh : (tensor<16x2x16xf32>, tensor<3xi64>) -> tensor<16x4x8xf32> loc("k_bh")
  %kt = graph.transpose %km {perm = array<i64: 1, 0, 2>} : (tensor<16x4x8xf32>) -> tensor<4x16x8xf32> loc("k_t")
  %kh = graph.reshape %kt, %heads : (tensor<4x16x8xf32>, tensor<4xi64>) -> tensor<2x2x16x8xf32> loc("k_heads")
  %vm = graph.reshape %v, %bh : (tensor<16x2x16xf32>, tensor<3xi64>) -> tensor<16x4x8xf32> loc("v_bh")
  %vt = graph.transpose %vm {perm = array<i64: 1, 0, 2>} : (tensor<16x4x8xf32>) -> tensor<4x16x8xf32> loc("v_t")
  %vh = graph.reshape %vt, %heads : (tensor<4x16x8xf32>, tensor<4xi64>) -> tensor<2x2x16x8xf32> loc("v_heads")
  %o = graph.attention %qh, %kh, %vh {scale = 0.35 : f32, causal = 0 : i64} : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> loc("attn")
  %ot = graph.transpose %o {perm = array<i64: 2, 0, 1, 3>} : (tensor<2x2x16x8xf32>) -> tensor<16x2x2x8xf32> loc("merge")
  %y = graph.reshape %ot, %rows : (tensor<16x2x2x8xf32>, tensor<2xi64>) -> tensor<32x16xf32> loc("rows")
  func.return %y : tensor<32x16xf32>
}
