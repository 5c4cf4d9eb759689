// convert-graph-to-ascend: data movement. Every data kernel is a sequence of tiled box
// transfers gm -> ub (MTE2) -> gm (MTE3), with a vtranspose in between when dims move.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// concat along C of NCHW tensors: each input is a [N, C_i * H * W] view copied into the
// output's [N, C * H * W] view at its offset, one transfer after the other (the second
// reuses the ub bytes of the first). With two images the pieces are not one run of bytes
// each, so the kernel has no geir.byte_copies (the attributes end with the template).
// CHECK-LABEL: ascend.kernel @k0_concat(
// CHECK-SAME:    %a: memref<2x3x4x4xf32, "gm">, %b: memref<2x5x4x4xf32, "gm">, %y: memref<2x8x4x4xf32, "gm">)
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", template = "data"}
// CHECK:         %in_ub = ascend.alloc {offset = 0 : i64} : memref<2x48xf32, "ub">
// CHECK:         %in_ub_1 = ascend.alloc {offset = 0 : i64} : memref<2x80xf32, "ub">
// CHECK:         %[[Y:.*]] = memref.collapse_shape %y {{.*}} into memref<2x128xf32, "gm">
// CHECK-NEXT:    %[[A:.*]] = memref.collapse_shape %a {{.*}} into memref<2x48xf32, "gm">
// CHECK-NEXT:    %[[YA:.*]] = memref.subview %[[Y]][0, 0] [2, 48] [1, 1]
// CHECK-NEXT:    %[[B:.*]] = memref.collapse_shape %b {{.*}} into memref<2x80xf32, "gm">
// CHECK-NEXT:    %[[YB:.*]] = memref.subview %[[Y]][0, 48] [2, 80] [1, 1]
// CHECK:         ascend.copy %[[A]], %in_ub
// CHECK-NEXT:    ascend.set_flag MTE2 -> MTE3 id 0
// CHECK-NEXT:    ascend.wait_flag MTE2 -> MTE3 id 0
// CHECK-NEXT:    ascend.copy %in_ub, %[[YA]]
// CHECK:         ascend.copy %[[B]], %in_ub_1
// CHECK:         ascend.copy %in_ub_1, %[[YB]]
func.func @concat(%a: tensor<2x3x4x4xf32>, %b: tensor<2x5x4x4xf32>) -> tensor<2x8x4x4xf32> {
  %y = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3x4x4xf32>, tensor<2x5x4x4xf32>) -> tensor<2x8x4x4xf32> loc("concat")
  func.return %y : tensor<2x8x4x4xf32>
}

// -----

// split into three along the last axis: the input's [6, 12] view is read at column offsets
// 0, 4 and 8.
// CHECK-LABEL: ascend.kernel @k0_split(
// CHECK:         memref.subview %{{.*}}[0, 0] [6, 4] [1, 1]
// CHECK:         memref.subview %{{.*}}[0, 4] [6, 4] [1, 1]
// CHECK:         memref.subview %{{.*}}[0, 8] [6, 4] [1, 1]
func.func @split(%x: tensor<6x12xf32>) -> (tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>) {
  %a, %b, %c = graph.split %x {axis = 1 : i64, num_outputs = 3 : i64} : (tensor<6x12xf32>) -> (tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>) loc("split")
  func.return %a, %b, %c : tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>
}

// -----

// slice with constant starts/ends/steps: the source is a strided view (rows every 2nd, the
// innermost dim contiguous - DMA moves rows).
// CHECK-LABEL: ascend.kernel @k0_slice(
// CHECK:         %[[S:.*]] = memref.subview %x[1, 2] [4, 5] [2, 1] : memref<10x8xf32, "gm"> to memref<4x5xf32, strided<[16, 1], offset: 10>, "gm">
// CHECK:         %[[U:.*]] = memref.subview %in_ub[0, 0] [4, 5] [1, 1]
// CHECK-NEXT:    ascend.copy %[[S]], %[[U]]
// CHECK:         ascend.copy %{{.*}}, %y
func.func @slice(%x: tensor<10x8xf32>) -> tensor<4x5xf32> {
  %starts = graph.constant dense<[1, 2]> : tensor<2xi64>
  %ends = graph.constant dense<[9, 7]> : tensor<2xi64>
  %axes = graph.constant dense<[0, 1]> : tensor<2xi64>
  %steps = graph.constant dense<[2, 1]> : tensor<2xi64>
  %y = graph.slice %x, %starts, %ends, %axes, %steps : (tensor<10x8xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<4x5xf32> loc("slice")
  func.return %y : tensor<4x5xf32>
}

// -----

// transpose [2, 3, 4, 5] by (0, 2, 3, 1): dims 2 and 3 stay together, so it is the transpose
// [2, 3, 20] -> [2, 20, 3] of a collapsed view, one vtranspose per box.
// CHECK-LABEL: ascend.kernel @k0_transpose(
// CHECK:         %[[X:.*]] = memref.collapse_shape %x {{.*}} into memref<2x3x20xf32, "gm">
// CHECK:         %[[Y:.*]] = memref.collapse_shape %y {{.*}} into memref<2x20x3xf32, "gm">
// CHECK:         %[[I:.*]] = memref.subview %in_ub[0, 0, 0] [2, 3, 20] [1, 1, 1] : memref<2x3x24xf32, "ub"> to memref<2x3x20xf32, strided<[72, 24, 1]>, "ub">
// CHECK-NEXT:    ascend.copy %[[X]], %[[I]]
// CHECK-NEXT:    ascend.set_flag MTE2 -> V id 0
// CHECK-NEXT:    ascend.wait_flag MTE2 -> V id 0
// CHECK-NEXT:    %[[I2:.*]] = memref.subview %in_ub
// CHECK-NEXT:    %[[O:.*]] = memref.subview %out_ub[0, 0, 0] [2, 20, 3] [1, 1, 1]
// CHECK-NEXT:    ascend.vtranspose %[[I2]], %[[O]] {perm = array<i64: 0, 2, 1>} : memref<2x3x20xf32, strided<[72, 24, 1]>, "ub">, memref<2x20x3xf32, strided<[160, 8, 1]>, "ub">
// CHECK-NEXT:    ascend.set_flag V -> MTE3 id 0
// CHECK-NEXT:    ascend.wait_flag V -> MTE3 id 0
// CHECK:         ascend.copy %{{.*}}, %[[Y]]
func.func @transpose(%x: tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32> {
  %y = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32> loc("transpose")
  func.return %y : tensor<2x4x5x3xf32>
}

// -----

// A data fusion (what graph-fuse makes of ShuffleNet's channel shuffle): the views around the
// one transpose are reshapes of the gm buffers, not copies; the transpose of [1, 2, 4, 16]
// by (0, 2, 1, 3) is the [2, 4, 16] -> [4, 2, 16] one.
// CHECK-LABEL: ascend.kernel @k0_shuffle(
// CHECK:         %[[A:.*]] = memref.expand_shape %a {{.*}} into memref<1x2x4x4x4xf32, "gm">
// CHECK-NEXT:    %[[O:.*]] = memref.expand_shape %o {{.*}} into memref<1x4x2x4x4xf32, "gm">
// CHECK-NEXT:    %[[A2:.*]] = memref.collapse_shape %[[A]] {{.*}} into memref<2x4x16xf32, "gm">
// CHECK-NEXT:    %[[O2:.*]] = memref.collapse_shape %[[O]] {{.*}} into memref<4x2x16xf32, "gm">
// CHECK:         ascend.copy %[[A2]], %in_ub
// CHECK:         ascend.vtranspose %in_ub, %out_ub {perm = array<i64: 1, 0, 2>}
// CHECK:         ascend.copy %out_ub, %[[O2]]
// CHECK-NOT:     ascend.vtranspose
// CHECK:         ascend.return
func.func @shuffle(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %y = graph.fusion "data" (%x) : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  ^bb0(%a: tensor<1x8x4x4xf32>):
    %s1 = graph.constant dense<[1, 2, 4, 4, 4]> : tensor<5xi64>
    %s2 = graph.constant dense<[1, 8, 4, 4]> : tensor<4xi64>
    %r = graph.reshape %a, %s1 : (tensor<1x8x4x4xf32>, tensor<5xi64>) -> tensor<1x2x4x4x4xf32> loc("reshape1")
    %t = graph.transpose %r {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x4x4x4xf32>) -> tensor<1x4x2x4x4xf32> loc("shuffle")
    %o = graph.reshape %t, %s2 : (tensor<1x4x2x4x4xf32>, tensor<4xi64>) -> tensor<1x8x4x4xf32> loc("reshape2")
    graph.yield %o : tensor<1x8x4x4xf32>
  } loc(fused["shuffle", "reshape1", "reshape2"])
  func.return %y : tensor<1x8x4x4xf32>
}

// -----

// pad (constant mode): the border boxes are filled with vdup (nothing read), then the input
// is moved into the interior box.
// CHECK-LABEL: ascend.kernel @k0_pad(
// CHECK:         %[[V:.*]] = arith.constant 1.500000e+00 : f32
// CHECK:         %[[TOP:.*]] = memref.subview %y[0, 0] [1, 8] [1, 1]
// CHECK-NEXT:    %[[BOTTOM:.*]] = memref.subview %y[4, 0] [1, 8] [1, 1]
// CHECK-NEXT:    %[[LEFT:.*]] = memref.subview %y[1, 0] [3, 2] [1, 1]
// CHECK-NEXT:    %[[RIGHT:.*]] = memref.subview %y[1, 6] [3, 2] [1, 1]
// CHECK-NEXT:    %[[INNER:.*]] = memref.subview %y[1, 2] [3, 4] [1, 1]
// CHECK:         ascend.vdup %[[V]], %out_ub : f32, memref<1x8xf32, "ub">
// CHECK:         ascend.copy %out_ub, %[[TOP]]
// CHECK:         ascend.copy %{{.*}}, %[[BOTTOM]]
// CHECK:         ascend.copy %{{.*}}, %[[LEFT]]
// CHECK:         ascend.copy %{{.*}}, %[[RIGHT]]
// CHECK:         ascend.copy %x, %{{.*}} : memref<3x4xf32, "gm"> to memref<3x4xf32, strided<[8, 1]>, "ub">
// CHECK:         ascend.copy %{{.*}}, %[[INNER]]
func.func @pad(%x: tensor<3x4xf32>) -> tensor<5x8xf32> {
  %pads = graph.constant dense<[1, 2, 1, 2]> : tensor<4xi64>
  %v = graph.constant dense<1.5> : tensor<f32>
  %y = graph.pad %x, %pads, %v : (tensor<3x4xf32>, tensor<4xi64>, tensor<f32>) -> tensor<5x8xf32> loc("pad")
  func.return %y : tensor<5x8xf32>
}

// -----

// gather of rows by runtime indices: per box one index read on the scalar pipe (memref.load
// from gm, negative indices wrapped), then the row copied.
// CHECK-LABEL: ascend.kernel @k0_gather(
// CHECK-SAME:    template = "gather"
// CHECK:         %[[I:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<6xi64, "gm">
// CHECK-NEXT:    %[[IX:.*]] = arith.index_cast %[[I]] : i64 to index
// CHECK-NEXT:    %[[NEG:.*]] = arith.cmpi slt, %[[IX]], %c0 : index
// CHECK-NEXT:    %[[W:.*]] = arith.addi %[[IX]], %c10 : index
// CHECK-NEXT:    %[[ROW:.*]] = arith.select %[[NEG]], %[[W]], %[[IX]] : index
// CHECK-NEXT:    memref.subview %{{.*}}[0, %[[ROW]], 0] [1, 1, 16] [1, 1, 1]
func.func @gather(%table: tensor<10x16xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3x16xf32> {
  %y = graph.gather %table, %ids {axis = 0 : i64} : (tensor<10x16xf32>, tensor<2x3xi64>) -> tensor<2x3x16xf32> loc("gather")
  func.return %y : tensor<2x3x16xf32>
}

// -----

// A lone reshape is a flat copy; a returned input is copied into its output buffer.
// Both move their bytes unchanged: geir.byte_copies (dst arg, dst offset, src arg, src
// offset, bytes) lets ascend-elide-copies make them views.
// CHECK-LABEL: ascend.kernel @k0_flat(
// CHECK-SAME:    geir.byte_copies = [array<i64: 1, 0, 0, 0, 96>]
// CHECK:         ascend.copy %{{.*}}, %in_ub : memref<24xf32, "gm"> to memref<24xf32, "ub">
// CHECK-LABEL: ascend.kernel @k1_copy(
// CHECK-LABEL: func.func @views(
// CHECK-SAME:    %x: memref<2x3x4xf32, "gm">, %y: memref<6x4xf32, "gm"> {ascend.output}, %[[Z:.*]]: memref<2x3x4xf32, "gm"> {ascend.output})
// CHECK:         ascend.launch @k0_flat on %stream(%x, %y)
// CHECK-NEXT:    ascend.launch @k1_copy on %stream(%x, %[[Z]])
func.func @views(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<2x3x4xf32>) {
  %y = graph.flatten %x {axis = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<6x4xf32> loc("flat")
  func.return %y, %x : tensor<6x4xf32>, tensor<2x3x4xf32>
}

// -----

// One image: each concat input is one run of the output's bytes, and a slice of whole
// rows is one run of its input's (argument 4: the slice bounds are arguments too).
// CHECK-LABEL: ascend.kernel @k0_cat(
// CHECK-SAME:    geir.byte_copies = [array<i64: 2, 0, 0, 0, 192>, array<i64: 2, 192, 1, 0, 320>]
// CHECK-LABEL: ascend.kernel @k1_rows(
// CHECK-SAME:    geir.byte_copies = [array<i64: 4, 0, 0, 128, 256>]
// A slice of columns is not one run: no geir.byte_copies.
// CHECK-LABEL: ascend.kernel @k2_cols(
// CHECK-NOT:     geir.byte_copies
// CHECK:         ascend.return
func.func @runs(%a: tensor<1x3x4x4xf32>, %b: tensor<1x5x4x4xf32>, %x: tensor<6x32xf32>) -> (tensor<1x8x4x4xf32>, tensor<2x32xf32>, tensor<6x8xf32>) {
  %y = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x3x4x4xf32>, tensor<1x5x4x4xf32>) -> tensor<1x8x4x4xf32> loc("cat")
  %s0 = graph.constant dense<[1]> : tensor<1xi64>
  %e0 = graph.constant dense<[3]> : tensor<1xi64>
  %ax0 = graph.constant dense<[0]> : tensor<1xi64>
  %r = graph.slice %x, %s0, %e0, %ax0 : (tensor<6x32xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x32xf32> loc("rows")
  %s1 = graph.constant dense<[8]> : tensor<1xi64>
  %e1 = graph.constant dense<[16]> : tensor<1xi64>
  %ax1 = graph.constant dense<[1]> : tensor<1xi64>
  %c = graph.slice %x, %s1, %e1, %ax1 : (tensor<6x32xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6x8xf32> loc("cols")
  func.return %y, %r, %c : tensor<1x8x4x4xf32>, tensor<2x32xf32>, tensor<6x8xf32>
}
