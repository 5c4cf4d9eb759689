// convert-graph-to-ascend: a depthwise convolution large enough that the cost
// model prefers the vector unit (lowering/templates/cube/depthwise.py).
// RUN: geir-opt %s -p convert-graph-to-ascend | filecheck %s

// Per tile of 8 channels x 2 output rows: the 5 input rows arrive as [C, rows,
// W], vtranspose puts them channel-innermost into a zeroed box padded by one
// column on each side, and each of the 9 taps is a stride-2 view of that box
// (rows stay on 32-byte blocks whatever the shift) times the tap's weights
// broadcast over the pixels. The sum is transposed back to [C, pixels] and
// stored. The first row tile reads 4 rows (one is padding) - a static class of
// its own; the interior tiles share one loop.
// CHECK-LABEL: ascend.kernel @{{.*}}k0_dw(
// CHECK-SAME:    attributes {block_dim = 35 : i64, core_type = "vector", template = "depthwise"} {
// CHECK-NEXT:    %v0 = ascend.alloc {offset = 0 : i64} : memref<8x32xf32, "ub">
// CHECK-NEXT:    %box = ascend.alloc {offset = 1024 : i64} : memref<8x5x32xf32, "ub">
// CHECK-NEXT:    %xt = ascend.alloc {offset = 6144 : i64} : memref<5x30x8xf32, "ub">
// CHECK-NEXT:    %acc = ascend.alloc {offset = 10944 : i64} : memref<28x8xf32, "ub">
// CHECK-NEXT:    %tmp = ascend.alloc {offset = 11840 : i64} : memref<2x14x8xf32, "ub">
// CHECK-NEXT:    %wb = ascend.alloc {offset = 12736 : i64} : memref<2x14x8xf32, "ub">
// CHECK-NEXT:    %wl = ascend.alloc {offset = 13632 : i64} : memref<8x1x16xf32, "ub">
// CHECK-NEXT:    %wt = ascend.alloc {offset = 14144 : i64} : memref<9x1x8xf32, "ub">
// CHECK:         %[[X:.*]] = memref.collapse_shape %x {{.*}} into memref<40x28x28xf32, "gm">
// CHECK-NEXT:    %[[W:.*]] = memref.collapse_shape %w {{.*}} into memref<40x1x9xf32, "gm">
// CHECK-NEXT:    %[[Y:.*]] = memref.collapse_shape %y {{.*}} into memref<40x196xf32, "gm">
// CHECK-NEXT:    %[[ACC:.*]] = memref.expand_shape %acc {{.*}} into memref<2x14x8xf32, "ub">
// CHECK-NEXT:    ascend.set_flag MTE3 -> MTE2 id 0
// First row tile: input rows 0..3 land one row down in the padded box.
// CHECK-NEXT:    scf.for %[[T:.*]] = %block to %c5 step %c35 {
// CHECK-NEXT:      %[[C0:.*]] = arith.muli %[[T]], %c8 : index
// CHECK-NEXT:      ascend.wait_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:      %[[BOX:.*]] = memref.subview %[[X]][%[[C0]], 0, 0] [8, 4, 28] [1, 1, 1]
// CHECK-NEXT:      ascend.copy %[[BOX]], %box {pad} : memref<8x4x28xf32, strided<[784, 28, 1], offset: ?>, "gm"> to memref<8x5x32xf32, "ub">
// CHECK-NEXT:      %[[WS:.*]] = memref.subview %[[W]][%[[C0]], 0, 0] [8, 1, 9] [1, 1, 1]
// CHECK-NEXT:      ascend.copy %[[WS]], %wl {pad}
// CHECK-NEXT:      ascend.set_flag MTE2 -> V id 0
// CHECK-NEXT:      ascend.wait_flag MTE2 -> V id 0
// CHECK-NEXT:      ascend.vdup %{{.*}}, %xt : f32, memref<5x30x8xf32, "ub">
// CHECK-NEXT:      %[[B:.*]] = memref.subview %box[0, 0, 0] [8, 4, 28] [1, 1, 1]
// CHECK-NEXT:      %[[XT:.*]] = memref.subview %xt[1, 1, 0] [4, 28, 8] [1, 1, 1]
// CHECK-NEXT:      ascend.vtranspose %[[B]], %[[XT]] {perm = array<i64: 1, 2, 0>}
// CHECK-NEXT:      %[[WL:.*]] = memref.subview %wl[0, 0, 0] [8, 1, 9] [1, 1, 1]
// CHECK-NEXT:      ascend.vtranspose %[[WL]], %wt {perm = array<i64: 2, 1, 0>}
// CHECK-NEXT:      %[[TAP0:.*]] = memref.subview %xt[0, 0, 0] [2, 14, 8] [2, 2, 1] : memref<5x30x8xf32, "ub"> to memref<2x14x8xf32, strided<[480, 16, 1]>, "ub">
// CHECK-NEXT:      %[[W0:.*]] = memref.subview %wt[0, 0, 0] [1, 1, 8] [1, 1, 1]
// CHECK-NEXT:      ascend.vbrcb %[[W0]], %wb
// CHECK-NEXT:      ascend.vmul %[[TAP0]], %wb, %[[ACC]]
// CHECK-NEXT:      %[[TAP1:.*]] = memref.subview %xt[0, 1, 0] [2, 14, 8] [2, 2, 1]
// CHECK-NEXT:      %[[W1:.*]] = memref.subview %wt[1, 0, 0] [1, 1, 8] [1, 1, 1]
// CHECK-NEXT:      ascend.vbrcb %[[W1]], %wb
// CHECK-NEXT:      ascend.vmul %[[TAP1]], %wb, %tmp
// CHECK-NEXT:      ascend.vadd %[[ACC]], %tmp, %[[ACC]]
// CHECK-COUNT-7:   ascend.vadd %[[ACC]], %tmp, %[[ACC]]
// CHECK-NEXT:      %[[RAW:.*]] = memref.subview %v0[0, 0] [8, 28] [1, 1]
// CHECK-NEXT:      ascend.vtranspose %acc, %[[RAW]] : memref<28x8xf32, "ub">, memref<8x28xf32, strided<[32, 1]>, "ub">
// CHECK-NEXT:      ascend.set_flag V -> MTE3 id 0
// CHECK-NEXT:      ascend.wait_flag V -> MTE3 id 0
// CHECK-NEXT:      %[[YT:.*]] = memref.subview %[[Y]][%[[C0]], 0] [8, 28] [1, 1]
// CHECK-NEXT:      ascend.copy %v0, %[[YT]] {pad} : memref<8x32xf32, "ub"> to memref<8x28xf32, strided<[196, 1], offset: ?>, "gm">
// CHECK-NEXT:      ascend.set_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:    }
// The six interior row tiles of each channel tile: all 5 rows, no padding row.
// CHECK:         scf.for
// CHECK:           memref.subview %[[X]][%{{.*}}, %{{.*}}, 0] [8, 5, 28] [1, 1, 1]
// CHECK:           memref.subview %xt[0, 1, 0] [5, 28, 8] [1, 1, 1]
// CHECK:           ascend.set_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:    }
// CHECK-NEXT:    ascend.wait_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:    ascend.return
func.func @dw(%x: tensor<1x40x28x28xf32> {onnx.name = "x"}, %w: tensor<40x1x3x3xf32> {onnx.name = "w"}) -> (tensor<1x40x14x14xf32> {onnx.name = "y"}) {
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, group = 40 : i64} : (tensor<1x40x28x28xf32>, tensor<40x1x3x3xf32>) -> tensor<1x40x14x14xf32> loc("dw")
  func.return %y : tensor<1x40x14x14xf32>
}
