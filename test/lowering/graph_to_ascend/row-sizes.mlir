// convert-graph-to-ascend: the row template at row lengths of large models. A row is held
// whole in ub, so the buffers per row decide what fits (192 KiB of ub on the 910B):
// - temporaries broadcast from a row's statistic (vbrcb of the mean, of the variance, of the
//   softmax's max and sum) go back to the pool as soon as they are read, so a LayerNorm of
//   8192-element rows (hidden 8192) needs the row, one temporary and gamma and beta (4 x 32
//   KiB), not seven row buffers (it fell back to the reference kernel);
// - when whole rows fit once but not twice, the kernel is single-buffered instead of giving
//   up (softmax over 16384-element rows, 96 rows: 48 blocks of two tiles).
// RUN: geir-opt %s --split-input-file -p 'convert-graph-to-ascend{double-buffer=true},ascend-plan-memory' | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_ln(
// CHECK-SAME:    template = "row"
// CHECK:         %c1 = ascend.alloc {offset = 0 : i64} : memref<1x8192xf32, "ub">
// CHECK-NEXT:    %c2 = ascend.alloc {offset = 32768 : i64} : memref<1x8192xf32, "ub">
// CHECK:         %b1 = ascend.alloc {offset = 65536 : i64} : memref<1x8192xf32, "ub">
// CHECK-NEXT:    %b2 = ascend.alloc {{.*}} : memref<1x8xf32, "ub">
// CHECK:         %b3 = ascend.alloc {{.*}} : memref<1x8192xf32, "ub">
// CHECK-NOT:     ascend.alloc {{.*}} : memref<1x8192xf32
// CHECK:         ascend.vbrcb %{{.*}}, %b3
// CHECK-NEXT:    ascend.vsub %b1, %b3, %b1
// CHECK-NEXT:    ascend.vmul %b1, %b1, %b3
// CHECK:         ascend.vdiv %b1, %b3, %b1
// CHECK-NEXT:    ascend.vmul %b1, %c1, %b1
// CHECK-NEXT:    ascend.vadd %b1, %c2, %b1
// CHECK-NOT:     ascend.reference
func.func @layer_norm_8192(%x: tensor<4x8192xf32>, %g: tensor<8192xf32>, %b: tensor<8192xf32>) -> tensor<4x8192xf32> {
  %y = graph.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x8192xf32>, tensor<8192xf32>, tensor<8192xf32>) -> tensor<4x8192xf32> loc("ln")
  func.return %y : tensor<4x8192xf32>
}

// -----

// One slot: no s1b buffers; the 48 blocks loop over their two rows one at a time.
// CHECK-LABEL: ascend.kernel @k0_softmax(
// CHECK-SAME:    block_dim = 48 : i64
// CHECK-SAME:    template = "row"
// CHECK:         %b1 = ascend.alloc {{.*}} : memref<1x16384xf32, "ub">
// CHECK-NEXT:    %b2 = ascend.alloc {{.*}} : memref<1x8xf32, "ub">
// CHECK-NEXT:    %b3 = ascend.alloc {{.*}} : memref<1x16384xf32, "ub">
// CHECK-NOT:     s1b
// CHECK:         scf.for
// CHECK:         ascend.vsub %b1, %b3, %b1
// CHECK-NEXT:    ascend.vexp %b1, %b1
// CHECK-NOT:     ascend.reference
func.func @softmax_16384(%x: tensor<96x16384xf32>) -> tensor<96x16384xf32> {
  %y = graph.softmax %x {axis = -1 : i64} : (tensor<96x16384xf32>) -> tensor<96x16384xf32> loc("softmax")
  func.return %y : tensor<96x16384xf32>
}
