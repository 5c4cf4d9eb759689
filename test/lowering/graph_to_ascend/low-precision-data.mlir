// convert-graph-to-ascend, data movement kernels in f16 and bf16: copies and vtranspose move
// bits, so bf16 moves as f16 does - no conversion - with 16 elements to a 32-byte ub block.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_transpose(
// CHECK-SAME:    template = "data"
// CHECK-NEXT:    %in_ub = ascend.alloc {offset = 0 : i64} : memref<2x3x32xf16, "ub">
// CHECK-NEXT:    %out_ub = ascend.alloc {offset = 384 : i64} : memref<2x20x16xf16, "ub">
// CHECK:         ascend.vtranspose %{{.*}} {perm = array<i64: 0, 2, 1>} : memref<2x3x20xf16, strided<[96, 32, 1]>, "ub">, memref<2x20x3xf16, strided<[320, 16, 1]>, "ub">
func.func @transpose(%x: tensor<2x3x4x5xf16>) -> tensor<2x4x5x3xf16> {
  %y = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xf16>) -> tensor<2x4x5x3xf16> loc("transpose")
  func.return %y : tensor<2x4x5x3xf16>
}

// -----

// CHECK-LABEL: ascend.kernel @k0_transpose(
// CHECK-SAME:    template = "data"
// CHECK-NEXT:    %in_ub = ascend.alloc {offset = 0 : i64} : memref<2x3x32xbf16, "ub">
// CHECK-NEXT:    %out_ub = ascend.alloc {offset = 384 : i64} : memref<2x20x16xbf16, "ub">
// CHECK-NOT:     ascend.vcast
// CHECK:         ascend.vtranspose %{{.*}} {perm = array<i64: 0, 2, 1>} : memref<2x3x20xbf16, strided<[96, 32, 1]>, "ub">, memref<2x20x3xbf16, strided<[320, 16, 1]>, "ub">
// CHECK-NOT:     ascend.vcast
// CHECK:         ascend.return
func.func @transpose(%x: tensor<2x3x4x5xbf16>) -> tensor<2x4x5x3xbf16> {
  %y = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xbf16>) -> tensor<2x4x5x3xbf16> loc("transpose")
  func.return %y : tensor<2x4x5x3xbf16>
}

// -----

// A channel concat: each part through ub into its rows of the result (48 and 80 bf16).
// CHECK-LABEL: ascend.kernel @k0_concat(
// CHECK-SAME:    template = "data"
// CHECK:         ascend.copy %{{.*}}, %in_ub : memref<2x48xbf16, "gm"> to memref<2x48xbf16, "ub">
// CHECK:         ascend.copy %in_ub, %{{.*}} : memref<2x48xbf16, "ub"> to memref<2x48xbf16, strided<[128, 1]>, "gm">
// CHECK:         ascend.copy %in_ub_1, %{{.*}} : memref<2x80xbf16, "ub"> to memref<2x80xbf16, strided<[128, 1], offset: 48>, "gm">
func.func @concat(%a: tensor<2x3x4x4xbf16>, %b: tensor<2x5x4x4xbf16>) -> tensor<2x8x4x4xbf16> {
  %y = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3x4x4xbf16>, tensor<2x5x4x4xbf16>) -> tensor<2x8x4x4xbf16> loc("concat")
  func.return %y : tensor<2x8x4x4xbf16>
}
