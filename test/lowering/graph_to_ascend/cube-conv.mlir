// convert-graph-to-ascend, cube kernels: convolutions with pads, strides,
// dilations and groups, a depthwise one and a 1-D one.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// Per (image, group) the weights [Mg, C/g * 3 * 3] are the left matrix, as they
// lie in gm (l0a); the feature map is a [C/g, rows, W] box of the image in l1,
// and load3d expands its windows into the [K, pixels] im2col tile of l0b. The
// output tile [Mg, pixels] is a contiguous slab of the NCHW result. A tile of
// 2 output rows reads 2 * 2 + 2 * 2 + 1 - 2 = 7 input rows starting at
// clamp(oh * 2 - 2, 0, 17 - 7).
// CHECK-LABEL: ascend.kernel @{{(conv_)?}}k0_conv(
// CHECK-SAME:    attributes {block_dim = 16 : i64, core_type = "cube", template = "conv"} {
// CHECK-NEXT:    %l1w0 = ascend.alloc {offset = 0 : i64} : memref<16x48xf16, "l1">
// CHECK-NEXT:    %l1w1 = ascend.alloc {offset = 1536 : i64} : memref<16x48xf16, "l1">
// CHECK-NEXT:    %l1fm0 = ascend.alloc {offset = 3072 : i64} : memref<4x7x32xf16, "l1">
// CHECK-NEXT:    %l1fm1 = ascend.alloc {offset = 4864 : i64} : memref<4x7x32xf16, "l1">
// CHECK-NEXT:    %l0a0 = ascend.alloc {offset = 0 : i64} : memref<16x48xf16, "l0a">
// CHECK-NEXT:    %l0a1 = ascend.alloc {offset = 1536 : i64} : memref<16x48xf16, "l0a">
// CHECK-NEXT:    %l0b0 = ascend.alloc {offset = 0 : i64} : memref<48x16xf16, "l0b">
// CHECK-NEXT:    %l0b1 = ascend.alloc {offset = 1536 : i64} : memref<48x16xf16, "l0b">
// CHECK-NEXT:    %l0c = ascend.alloc {offset = 0 : i64} : memref<16x16xf32, "l0c">
// CHECK:         %[[X:.*]] = memref.collapse_shape %x {{.*}} into memref<16x17x17xf16, "gm">
// CHECK-NEXT:    %[[W:.*]] = memref.collapse_shape %w {{.*}} into memref<32x36xf16, "gm">
// CHECK-NEXT:    %[[Y:.*]] = memref.collapse_shape %y {{.*}} into memref<64x64xf16, "gm">
// CHECK:         scf.for %[[T:.*]] = %block to %c16 step %c16 {
// CHECK-NEXT:      %[[NG:.*]] = arith.divui %[[T]], %c4 : index
// CHECK-NEXT:      %[[R:.*]] = arith.remui %[[T]], %c4 : index
// CHECK-NEXT:      %[[OH:.*]] = arith.muli %[[R]], %c2 : index
// CHECK-NEXT:      %[[N:.*]] = arith.divui %[[NG]], %c2 : index
// CHECK-NEXT:      %[[G:.*]] = arith.remui %[[NG]], %c2 : index
// CHECK-NEXT:      %[[Y0:.*]] = arith.muli %[[OH]], %c2 : index
// CHECK-NEXT:      %[[Y1:.*]] = arith.maxui %[[Y0]], %c2 : index
// CHECK-NEXT:      %[[Y2:.*]] = arith.subi %[[Y1]], %c2 : index
// CHECK-NEXT:      %[[IH:.*]] = arith.minui %[[Y2]], %c10 : index
// CHECK:           ascend.wait_flag MTE1 -> MTE2 id 0
// CHECK-NEXT:      %[[BOX:.*]] = memref.subview %[[X]][%{{.*}}, %[[IH]], 0] [4, 7, 17] [1, 1, 1]
// CHECK-NEXT:      ascend.copy %[[BOX]], %l1fm0 {pad} : memref<4x7x17xf16, strided<[289, 17, 1], offset: ?>, "gm"> to memref<4x7x32xf16, "l1">
// CHECK-NEXT:      %[[WT:.*]] = memref.subview %[[W]][%{{.*}}, 0] [16, 36] [1, 1]
// CHECK-NEXT:      ascend.copy %[[WT]], %l1w0 {pad} : memref<16x36xf16, strided<[36, 1], offset: ?>, "gm"> to memref<16x48xf16, "l1">
// CHECK-NEXT:      ascend.set_flag MTE2 -> MTE1 id 0
// CHECK-NEXT:      ascend.wait_flag MTE2 -> MTE1 id 0
// CHECK-NEXT:      ascend.wait_flag M -> MTE1 id 0
// CHECK-NEXT:      ascend.copy %l1w0, %l0a0 : memref<16x48xf16, "l1"> to memref<16x48xf16, "l0a">
// CHECK-NEXT:      ascend.load3d %l1fm0[%[[IH]], %c0], %l0b0[%c0, %[[OH]], %c0] {image = array<i64: 17, 17>, kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>, pads = array<i64: 2, 2, 1, 1>, out = array<i64: 2, 8>, channels = 4 : i64} : memref<4x7x32xf16, "l1"> to memref<48x16xf16, "l0b">
// CHECK-NEXT:      ascend.set_flag MTE1 -> M id 0
// CHECK-NEXT:      ascend.wait_flag MTE1 -> M id 0
// CHECK-NEXT:      ascend.wait_flag FIX -> M id 0
// CHECK-NEXT:      ascend.mmad %l0a0, %l0b0, %l0c {init} : memref<16x48xf16, "l0a">, memref<48x16xf16, "l0b">, memref<16x16xf32, "l0c">
// CHECK-NEXT:      ascend.set_flag M -> MTE1 id 0
// CHECK-NEXT:      ascend.set_flag MTE1 -> MTE2 id 0
// CHECK:           ascend.set_flag M -> FIX id 0
// CHECK-NEXT:      ascend.wait_flag M -> FIX id 0
// CHECK-NEXT:      %[[YT:.*]] = memref.subview %[[Y]][%{{.*}}, %{{.*}}] [16, 16] [1, 1]
// CHECK-NEXT:      ascend.copy %l0c, %[[YT]] : memref<16x16xf32, "l0c"> to memref<16x16xf16, strided<[64, 1], offset: ?>, "gm">
// CHECK-NEXT:      ascend.set_flag FIX -> M id 0
// CHECK-NEXT:    }
func.func @conv(%x: tensor<2x8x17x17xf16> {onnx.name = "x"}, %w: tensor<32x4x3x3xf16> {onnx.name = "w"}) -> (tensor<2x32x8x8xf16> {onnx.name = "y"}) {
  %y = graph.conv %x, %w {pads = array<i64: 2, 2, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>, group = 2 : i64} : (tensor<2x8x17x17xf16>, tensor<32x4x3x3xf16>) -> tensor<2x32x8x8xf16> loc("conv")
  func.return %y : tensor<2x32x8x8xf16>
}

// -----

// Depthwise: one output channel per group, zero-padded to a 16-row fractal; the
// K of one group is its 9 taps (padded to 16).
// CHECK-LABEL: ascend.kernel @{{(depthwise_)?}}k0_dw(
// CHECK-SAME:    template = "conv"
// CHECK:         ascend.copy %{{.*}}, %l1w0 {pad} : memref<1x9xf32, strided<[9, 1], offset: ?>, "gm"> to memref<16x16xf32, "l1">
// CHECK:         ascend.load3d {{.*}} channels = 1 : i64} : memref<1x{{.*}}xf32, "l1"> to memref<16x{{.*}}xf32, "l0b">
// CHECK:         ascend.mmad {{.*}} {init} : memref<16x16xf32, "l0a">
// CHECK:         ascend.copy %l0c, %{{.*}} {pad} : memref<16x{{.*}}xf32, "l0c"> to memref<1x{{.*}}xf32
func.func @depthwise(%x: tensor<1x24x14x14xf32> {onnx.name = "x"}, %w: tensor<24x1x3x3xf32> {onnx.name = "w"}) -> (tensor<1x24x14x14xf32> {onnx.name = "y"}) {
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, group = 24 : i64} : (tensor<1x24x14x14xf32>, tensor<24x1x3x3xf32>) -> tensor<1x24x14x14xf32> loc("dw")
  func.return %y : tensor<1x24x14x14xf32>
}

// -----

// A 1-D convolution is a 2-D one of height 1: the feature map is viewed as
// [N * C, 1, L] and the kernel, strides and pads get a unit first dimension.
// CHECK-LABEL: ascend.kernel @{{(conv1d_)?}}k0_c1(
// CHECK:         memref.expand_shape %{{.*}} into memref<12x1x40xf32, "gm">
// CHECK:         ascend.load3d {{.*}} {image = array<i64: 1, 40>, kernel = array<i64: 1, 5>, strides = array<i64: 1, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 2, 0, 2>, out = array<i64: 1, 20>, channels = 6 : i64}
func.func @conv1d(%x: tensor<2x6x40xf32> {onnx.name = "x"}, %w: tensor<10x6x5xf32> {onnx.name = "w"}) -> (tensor<2x10x20xf32> {onnx.name = "y"}) {
  %y = graph.conv %x, %w {pads = array<i64: 2, 2>, strides = array<i64: 2>} : (tensor<2x6x40xf32>, tensor<10x6x5xf32>) -> tensor<2x10x20xf32> loc("c1")
  func.return %y : tensor<2x10x20xf32>
}
