// convert-graph-to-ascend: a data kernel of several transposing transfers at the size of the
// seed's TransformerBlock (batch 8, sequence 128, hidden 768, 8 heads): the q/k/v head split.
// Each transfer double-buffers two 48 KiB boxes in and out of ub (192 KiB, all of ub); the
// transfers run one after the other and share those bytes, which only holds if the next
// transfer's vector pipe waits for the last store of the one before: a `pipe_barrier ALL`
// between them. Without it ascend-plan-memory could not share the bytes ("needs 384 KiB of
// ub, the device has 192 KiB") and the model did not compile at O2/O3.
// RUN: geir-opt %s -p convert-graph-to-ascend,ascend-plan-memory | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_heads(
// CHECK:         %in_ub0 = ascend.alloc {offset = 0 : i64} : memref<128x1x96xf32, "ub">
// CHECK-NEXT:    %out_ub0 = ascend.alloc {offset = 49152 : i64} : memref<1x128x96xf32, "ub">
// CHECK-NEXT:    %in_ub1 = ascend.alloc {offset = 98304 : i64} : memref<128x1x96xf32, "ub">
// CHECK-NEXT:    %out_ub1 = ascend.alloc {offset = 147456 : i64} : memref<1x128x96xf32, "ub">
// CHECK:         %in_ub0_1 = ascend.alloc {offset = 0 : i64} : memref<128x96xf32, "ub">
// CHECK:         %out_ub0_1 = ascend.alloc {offset = 49152 : i64} : memref<96x128xf32, "ub">
// CHECK:         %in_ub1_1 = ascend.alloc {offset = 98304 : i64} : memref<128x96xf32, "ub">
// CHECK:         %out_ub1_1 = ascend.alloc {offset = 147456 : i64} : memref<96x128xf32, "ub">
// CHECK:         %in_ub0_2 = ascend.alloc {offset = 0 : i64} : memref<128x1x96xf32, "ub">
// CHECK:         ascend.vtranspose %in_ub0, %out_ub0 {perm = array<i64: 1, 0, 2>}
// CHECK:         ascend.pipe_barrier ALL
// CHECK:         scf.if
// CHECK:         ascend.vtranspose %in_ub0_1, %out_ub0_1 {perm = array<i64: 1, 0>}
// CHECK:         ascend.pipe_barrier ALL
// CHECK:         scf.if
// CHECK:         ascend.vtranspose %in_ub0_2, %out_ub0_2 {perm = array<i64: 1, 0, 2>}
// CHECK-NOT:     ascend.pipe_barrier
// CHECK:         ascend.return
func.func @qkv_heads(%qkv: tensor<3x128x8x768xf32>) -> (tensor<8x8x128x96xf32>, tensor<8x8x96x128xf32>, tensor<8x8x128x96xf32>) {
  %r:3 = graph.fusion "data" (%qkv) : (tensor<3x128x8x768xf32>) -> (tensor<8x8x128x96xf32>, tensor<8x8x96x128xf32>, tensor<8x8x128x96xf32>) {
  ^bb0(%x: tensor<3x128x8x768xf32>):
    %c0 = graph.constant dense<0> : tensor<1xi64> loc("c0")
    %c1 = graph.constant dense<1> : tensor<1xi64> loc("c1")
    %c2 = graph.constant dense<2> : tensor<1xi64> loc("c2")
    %c3 = graph.constant dense<3> : tensor<1xi64> loc("c3")
    %rows = graph.constant dense<[128, 64, 96]> : tensor<3xi64> loc("rows")
    %heads = graph.constant dense<[8, 8, 128, 96]> : tensor<4xi64> loc("heads")
    %q0 = graph.slice %x, %c0, %c1, %c0 : (tensor<3x128x8x768xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x128x8x768xf32> loc("q_slice")
    %k0 = graph.slice %x, %c1, %c2, %c0 : (tensor<3x128x8x768xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x128x8x768xf32> loc("k_slice")
    %v0 = graph.slice %x, %c2, %c3, %c0 : (tensor<3x128x8x768xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x128x8x768xf32> loc("v_slice")
    %q1 = graph.reshape %q0, %rows : (tensor<1x128x8x768xf32>, tensor<3xi64>) -> tensor<128x64x96xf32> loc("q_rows")
    %k1 = graph.reshape %k0, %rows : (tensor<1x128x8x768xf32>, tensor<3xi64>) -> tensor<128x64x96xf32> loc("k_rows")
    %v1 = graph.reshape %v0, %rows : (tensor<1x128x8x768xf32>, tensor<3xi64>) -> tensor<128x64x96xf32> loc("v_rows")
    %q2 = graph.transpose %q1 {perm = array<i64: 1, 0, 2>} : (tensor<128x64x96xf32>) -> tensor<64x128x96xf32> loc("q_t")
    %k2 = graph.transpose %k1 {perm = array<i64: 1, 0, 2>} : (tensor<128x64x96xf32>) -> tensor<64x128x96xf32> loc("k_t")
    %v2 = graph.transpose %v1 {perm = array<i64: 1, 0, 2>} : (tensor<128x64x96xf32>) -> tensor<64x128x96xf32> loc("v_t")
    %q = graph.reshape %q2, %heads : (tensor<64x128x96xf32>, tensor<4xi64>) -> tensor<8x8x128x96xf32> loc("q")
    %k3 = graph.reshape %k2, %heads : (tensor<64x128x96xf32>, tensor<4xi64>) -> tensor<8x8x128x96xf32> loc("k_heads")
    %v = graph.reshape %v2, %heads : (tensor<64x128x96xf32>, tensor<4xi64>) -> tensor<8x8x128x96xf32> loc("v")
    %k = graph.transpose %k3 {perm = array<i64: 0, 1, 3, 2>} : (tensor<8x8x128x96xf32>) -> tensor<8x8x96x128xf32> loc("k")
    graph.yield %q, %k, %v : tensor<8x8x128x96xf32>, tensor<8x8x96x128xf32>, tensor<8x8x128x96xf32>
  } loc("heads")
  func.return %r#0, %r#1, %r#2 : tensor<8x8x128x96xf32>, tensor<8x8x96x128xf32>, tensor<8x8x128x96xf32>
}
