// convert-graph-to-ascend, cube kernels: batched matmuls.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// Batch dims broadcast (numpy): the result batch (i, j) reads A[i, j] and
// B[0, j]. Each operand is a stack of matrices in gm; a tile's row in it is
// its batch index times the rows of one matrix.
// CHECK-LABEL: ascend.kernel @{{(batched_)?}}k0_bmm(
// CHECK-SAME:    attributes {block_dim = 24 : i64, core_type = "cube", template = "matmul"}
// CHECK:         %[[A:.*]] = memref.collapse_shape %a {{.*}} into memref<120x33xf32, "gm">
// CHECK-NEXT:    %[[B:.*]] = memref.collapse_shape %b {{.*}} into memref<99x19xf32, "gm">
// CHECK-NEXT:    %[[Y:.*]] = memref.collapse_shape %y {{.*}} into memref<120x19xf32, "gm">
// CHECK:         scf.for %[[T:.*]] = %block to %c6 step %c24 {
// CHECK-NEXT:      %[[I:.*]] = arith.divui %[[T]], %c3 : index
// CHECK-NEXT:      %[[J:.*]] = arith.remui %[[T]], %c3 : index
// CHECK-NEXT:      %[[AROW:.*]] = arith.muli %[[T]], %c20 : index
// CHECK-NEXT:      %[[BROW:.*]] = arith.muli %[[J]], %c33 : index
// CHECK-NEXT:      ascend.wait_flag MTE1 -> MTE2 id 0
// CHECK-NEXT:      %[[AT:.*]] = memref.subview %[[A]][%[[AROW]], 0] [16, 33] [1, 1]
// CHECK-NEXT:      ascend.copy %[[AT]], %l1a0 {pad} : memref<16x33xf32, strided<[33, 1], offset: ?>, "gm"> to memref<16x48xf32, "l1">
// CHECK-NEXT:      %[[BT:.*]] = memref.subview %[[B]][%[[BROW]], 0] [33, 16] [1, 1]
// CHECK-NEXT:      ascend.copy %[[BT]], %l1b0 {pad} : memref<33x16xf32, strided<[19, 1], offset: ?>, "gm"> to memref<48x16xf32, "l1">
// fp32 inputs run the cube in fp32 mode.
// CHECK:           ascend.mmad %l0a0, %l0b0, %l0c {init} : memref<16x48xf32, "l0a">, memref<48x16xf32, "l0b">, memref<16x16xf32, "l0c">
// CHECK:           %[[YT:.*]] = memref.subview %[[Y]][%{{.*}}, 0] [16, 16] [1, 1]
// CHECK-NEXT:      ascend.copy %l0c, %[[YT]] : memref<16x16xf32, "l0c">
func.func @batched(%a: tensor<2x3x20x33xf32> {onnx.name = "a"}, %b: tensor<1x3x33x19xf32> {onnx.name = "b"}) -> (tensor<2x3x20x19xf32> {onnx.name = "y"}) {
  %y = graph.matmul %a, %b : (tensor<2x3x20x33xf32>, tensor<1x3x33x19xf32>) -> tensor<2x3x20x19xf32> loc("bmm")
  func.return %y : tensor<2x3x20x19xf32>
}

// -----

// A batch of left matrices times one right matrix (x @ W of a transformer) is
// one tall [32, 64] x [64, 96] product: its 2 x 6 tiles of 16 x 16 go to 12
// blocks, each tile a row block of the stacked x.
// CHECK-LABEL: ascend.kernel @{{(tall_)?}}k0_proj(
// CHECK-SAME:    block_dim = 12 : i64
// CHECK:         %[[X:.*]] = memref.collapse_shape %x {{.*}} into memref<32x64xf16, "gm">
// CHECK:         scf.for %[[T:.*]] = %block to %c12 step %c12 {
// CHECK-NEXT:      %[[I:.*]] = arith.divui %[[T]], %c6 : index
// CHECK-NEXT:      %[[J:.*]] = arith.remui %[[T]], %c6 : index
// CHECK-NEXT:      %[[M0:.*]] = arith.muli %[[I]], %c16 : index
// CHECK-NEXT:      %[[N0:.*]] = arith.muli %[[J]], %c16 : index
// CHECK-NEXT:      ascend.wait_flag MTE1 -> MTE2 id 0
// CHECK-NEXT:      memref.subview %[[X]][%[[M0]], 0] [16, 64] [1, 1]
// CHECK:           memref.subview %w[0, %[[N0]]] [64, 16] [1, 1]
// CHECK:           ascend.mmad
// CHECK:         ascend.return
func.func @tall(%x: tensor<2x16x64xf16> {onnx.name = "x"}, %w: tensor<64x96xf16> {onnx.name = "w"}) -> (tensor<2x16x96xf16> {onnx.name = "y"}) {
  %y = graph.matmul %x, %w : (tensor<2x16x64xf16>, tensor<64x96xf16>) -> tensor<2x16x96xf16> loc("proj")
  func.return %y : tensor<2x16x96xf16>
}
