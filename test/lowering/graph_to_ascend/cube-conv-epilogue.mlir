// convert-graph-to-ascend, cube+vector fusions: convolutions with an epilogue on
// the vector unit, a relu on the FIX pipe, a channel-concat prologue.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// Conv + bias + relu (a mix kernel): FIX stages the raw tile in the output, the
// epilogue brings it back to ub with the bias column, broadcasts the bias over
// the pixels, adds, applies relu and stores; each pipe hand-over has its flag.
// The tile's channels are split between the block's two vector cores.
// CHECK-LABEL: ascend.kernel @{{(conv_bias_relu_)?}}k0_conv(
// CHECK-SAME:    %b: memref<16xf32, "gm">, %r: memref<1x16x7x7xf32, "gm">)
// CHECK-SAME:    attributes {block_dim = 7 : i64, core_type = "mix", template = "conv"} {
// CHECK:         %l0c = ascend.alloc {offset = 0 : i64} : memref<16x16xf32, "l0c">
// CHECK-NEXT:    %v0 = ascend.alloc {offset = 0 : i64} : memref<16x8xf32, "ub">
// CHECK-NEXT:    %v1 = ascend.alloc {offset = 512 : i64} : memref<16x8xf32, "ub">
// CHECK-NEXT:    %s0 = ascend.alloc {offset = 1024 : i64} : memref<16x8xf32, "ub">
// CHECK:         %[[OUT:.*]] = memref.collapse_shape %r {{.*}} into memref<16x49xf32, "gm">
// CHECK-NEXT:    %[[BIAS:.*]] = memref.expand_shape %b {{.*}} into memref<16x1xf32, "gm">
// CHECK:         ascend.sub_block 0 {
// CHECK-NEXT:      ascend.set_flag MTE3 -> MTE2 id 0
// CHECK:         ascend.sub_block 1 {
// CHECK-NEXT:      ascend.set_flag MTE3 -> MTE2 id 1
// CHECK:         ascend.load3d
// CHECK:         ascend.mmad
// CHECK:         ascend.set_flag M -> FIX id 0
// CHECK-NEXT:    ascend.wait_flag M -> FIX id 0
// CHECK-NEXT:    %[[T:.*]] = memref.subview %[[OUT]][0, %[[P:.*]]] [16, 7] [1, 1]
// CHECK-NEXT:    ascend.copy %l0c, %[[T]] {pad} : memref<16x16xf32, "l0c"> to memref<16x7xf32, strided<[49, 1], offset: ?>, "gm">
// CHECK-NEXT:    ascend.set_flag FIX -> M id 0
// Channels 0-7 on the block's first vector core, 8-15 on the second (flag ids 0 and 1).
// CHECK-NEXT:    ascend.set_flag FIX -> MTE2 id 0
// CHECK-NEXT:    ascend.sub_block 0 {
// CHECK-NEXT:      ascend.wait_flag FIX -> MTE2 id 0
// CHECK-NEXT:      %[[V0:.*]] = memref.subview %v0[0, 0] [8, 8]
// CHECK-NEXT:      %[[V1:.*]] = memref.subview %v1[0, 0] [8, 8]
// CHECK-NEXT:      ascend.wait_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:      %[[T0:.*]] = memref.subview %[[OUT]][0, %[[P]]] [8, 7] [1, 1]
// CHECK-NEXT:      ascend.copy %[[T0]], %[[V0]] {pad} : memref<8x7xf32, strided<[49, 1], offset: ?>, "gm"> to memref<8x8xf32, strided<[8, 1]>, "ub">
// CHECK-NEXT:      %[[B0:.*]] = memref.subview %[[BIAS]][0, 0] [8, 1] [1, 1]
// CHECK-NEXT:      %[[S0:.*]] = memref.subview %s0[0, 0] [8, 8] [1, 1]
// CHECK-NEXT:      ascend.copy %[[B0]], %[[S0]] {pad}
// CHECK-NEXT:      %[[COL:.*]] = memref.subview %[[S0]][0, 0] [8, 1] [1, 1]
// CHECK-NEXT:      ascend.set_flag MTE2 -> V id 0
// CHECK-NEXT:      ascend.wait_flag MTE2 -> V id 0
// CHECK-NEXT:      ascend.vbrcb %[[COL]], %[[V1]] : memref<8x1xf32, strided<[8, 1]>, "ub">, memref<8x8xf32, strided<[8, 1]>, "ub">
// CHECK-NEXT:      ascend.vadd %[[V0]], %[[V1]], %[[V0]]
// CHECK-NEXT:      ascend.vrelu %[[V0]], %[[V0]]
// CHECK-NEXT:      ascend.set_flag V -> MTE3 id 0
// CHECK-NEXT:      ascend.wait_flag V -> MTE3 id 0
// CHECK-NEXT:      ascend.copy %[[V0]], %[[T0]] {pad} : memref<8x8xf32, strided<[8, 1]>, "ub"> to memref<8x7xf32, strided<[49, 1], offset: ?>, "gm">
// CHECK-NEXT:      ascend.set_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:    }
// CHECK-NEXT:    ascend.set_flag FIX -> MTE2 id 0
// CHECK-NEXT:    ascend.sub_block 1 {
// CHECK-NEXT:      ascend.wait_flag FIX -> MTE2 id 0
// CHECK:           ascend.wait_flag MTE3 -> MTE2 id 1
// CHECK-NEXT:      %[[T1:.*]] = memref.subview %[[OUT]][8, %[[P]]] [8, 7] [1, 1]
// CHECK:           %[[B1:.*]] = memref.subview %[[BIAS]][8, 0] [8, 1] [1, 1]
// CHECK:           ascend.set_flag MTE3 -> MTE2 id 1
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK:         ascend.sub_block 0 {
// CHECK-NEXT:      ascend.wait_flag MTE3 -> MTE2 id 0
// CHECK:         ascend.sub_block 1 {
// CHECK-NEXT:      ascend.wait_flag MTE3 -> MTE2 id 1
// CHECK-NEXT:    }
// CHECK-NEXT:    ascend.return
// CHECK-NEXT:  } loc(fused["conv", "relu"])
// CHECK:       func.func @conv_bias_relu(
// CHECK:         %w = ascend.constant
// CHECK:         %b = ascend.constant
// CHECK:         ascend.launch @{{(conv_bias_relu_)?}}k0_conv on %stream(%x, %w, %b, %r)
func.func @conv_bias_relu(%x: tensor<1x8x14x14xf32> {onnx.name = "x"}) -> (tensor<1x16x7x7xf32> {onnx.name = "y"}) {
  %w = graph.constant dense<1.000000e-01> : tensor<16x8x3x3xf32> loc("w")
  %r = graph.fusion "cube+vector" (%x, %w) attributes {graph.pattern = "conv-epilogue"} : (tensor<1x8x14x14xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x7x7xf32> {
  ^bb0(%x_1: tensor<1x8x14x14xf32>, %w_1: tensor<16x8x3x3xf32>):
    %b = graph.constant dense<5.000000e-01> : tensor<16xf32> loc("b")
    %c = graph.conv %x_1, %w_1, %b {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x14x14xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x7x7xf32> loc("conv")
    %r_1 = graph.relu %c : (tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32> loc("relu")
    graph.yield %r_1 : tensor<1x16x7x7xf32>
  } loc(fused["conv", "relu"])
  func.return %r : tensor<1x16x7x7xf32>
}

// -----

// Conv + relu without a bias: the relu rides on the FIX pipe (f32 -> f16 and
// relu on the way out of l0c), so the kernel stays a pure cube kernel.
// CHECK-LABEL: ascend.kernel @{{(conv_relu_)?}}k0_conv(
// CHECK-SAME:    core_type = "cube"
// CHECK-NOT:     "ub"
// CHECK:         ascend.copy %l0c, %{{.*}} {relu, pad} : memref<16x16xf32, "l0c"> to memref<16x14xf16, strided<[196, 1], offset: ?>, "gm">
// CHECK-NOT:     ascend.v
// CHECK:         ascend.return
func.func @conv_relu(%x: tensor<1x8x14x14xf16> {onnx.name = "x"}) -> (tensor<1x16x14x14xf16> {onnx.name = "y"}) {
  %w = graph.constant dense<9.997560e-02> : tensor<16x8x1x1xf16> loc("w")
  %r = graph.fusion "cube+vector" (%x, %w) attributes {graph.pattern = "conv-epilogue"} : (tensor<1x8x14x14xf16>, tensor<16x8x1x1xf16>) -> tensor<1x16x14x14xf16> {
  ^bb0(%x_1: tensor<1x8x14x14xf16>, %w_1: tensor<16x8x1x1xf16>):
    %c = graph.conv %x_1, %w_1 : (tensor<1x8x14x14xf16>, tensor<16x8x1x1xf16>) -> tensor<1x16x14x14xf16> loc("conv")
    %r_1 = graph.relu %c : (tensor<1x16x14x14xf16>) -> tensor<1x16x14x14xf16> loc("relu")
    graph.yield %r_1 : tensor<1x16x14x14xf16>
  } loc(fused["conv", "relu"])
  func.return %r : tensor<1x16x14x14xf16>
}

// -----

// ResNet's bottleneck end: conv + bias, sum with the shortcut, relu. The
// shortcut tile comes from gm next to the staged tile; relu is in place.
// CHECK-LABEL: ascend.kernel @{{(residual_)?}}k0_conv(
// CHECK-SAME:    %s: memref<1x64x7x7xf32, "gm">, %r: memref<1x64x7x7xf32, "gm">)
// CHECK-SAME:    core_type = "mix"
// CHECK:         %[[S:.*]] = memref.collapse_shape %s {{.*}} into memref<64x49xf32, "gm">
// CHECK:         ascend.sub_block 0 {
// CHECK:           %[[V0:.*]] = memref.subview %v0[0, 0] [16, 8]
// CHECK-NEXT:      %[[V1:.*]] = memref.subview %v1[0, 0] [16, 8]
// CHECK-NEXT:      %[[V2:.*]] = memref.subview %v2[0, 0] [16, 8]
// CHECK-NEXT:      ascend.wait_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:      %[[T:.*]] = memref.subview
// CHECK-NEXT:      ascend.copy %[[T]], %[[V0]] {pad} : memref<16x7xf32
// CHECK:           %[[ST:.*]] = memref.subview %[[S]]
// CHECK-NEXT:      ascend.copy %[[ST]], %[[V2]] {pad} : memref<16x7xf32, strided<[49, 1], offset: ?>, "gm"> to memref<16x8xf32, strided<[8, 1]>, "ub">
// CHECK:           ascend.vbrcb %{{.*}}, %[[V1]]
// CHECK-NEXT:      ascend.vadd %[[V0]], %[[V1]], %[[V0]]
// CHECK-NEXT:      ascend.vadd %[[V0]], %[[V2]], %[[V0]]
// CHECK-NEXT:      ascend.vrelu %[[V0]], %[[V0]]
// CHECK:           ascend.copy %[[V0]], %[[T]] {pad}
// CHECK:         ascend.sub_block 1 {
func.func @residual(%x: tensor<1x32x7x7xf32> {onnx.name = "x"}, %s: tensor<1x64x7x7xf32> {onnx.name = "s"}) -> (tensor<1x64x7x7xf32> {onnx.name = "y"}) {
  %w = graph.constant dense<1.000000e-01> : tensor<64x32x1x1xf32> loc("w")
  %b = graph.constant dense<5.000000e-01> : tensor<64xf32> loc("b")
  %r = graph.fusion "cube+vector" (%x, %w, %b, %s) attributes {graph.pattern = "conv-epilogue"} : (tensor<1x32x7x7xf32>, tensor<64x32x1x1xf32>, tensor<64xf32>, tensor<1x64x7x7xf32>) -> tensor<1x64x7x7xf32> {
  ^bb0(%x_1: tensor<1x32x7x7xf32>, %w_1: tensor<64x32x1x1xf32>, %b_1: tensor<64xf32>, %s_1: tensor<1x64x7x7xf32>):
    %c = graph.conv %x_1, %w_1, %b_1 : (tensor<1x32x7x7xf32>, tensor<64x32x1x1xf32>, tensor<64xf32>) -> tensor<1x64x7x7xf32> loc("conv")
    %a = graph.sum %c, %s_1 : (tensor<1x64x7x7xf32>, tensor<1x64x7x7xf32>) -> tensor<1x64x7x7xf32> loc("add")
    %r_1 = graph.relu %a : (tensor<1x64x7x7xf32>) -> tensor<1x64x7x7xf32> loc("relu")
    graph.yield %r_1 : tensor<1x64x7x7xf32>
  } loc(fused["conv", "add", "relu"])
  func.return %r : tensor<1x64x7x7xf32>
}

// -----

// SqueezeNet's fire module: the conv reads its input from the two tensors of a
// channel concat, one K segment each (channels 0-15 from %pr_1, 16-31 from
// %qr_1); the second segment's weights start at column 16. The window is
// pointwise, so each segment is read as its [channels, pixels] matrix.
// CHECK-LABEL: ascend.kernel @{{(fire_)?}}k2_concat(
// CHECK-SAME:    %pr: memref<1x16x8x8xf32, "gm">, %qr: memref<1x16x8x8xf32, "gm">, %w: memref<8x32x1x1xf32, "gm">
// CHECK-SAME:    template = "conv"
// CHECK:         %[[P:.*]] = memref.collapse_shape %pr {{.*}} into memref<16x64xf32, "gm">
// CHECK-NEXT:    %[[Q:.*]] = memref.collapse_shape %qr {{.*}} into memref<16x64xf32, "gm">
// CHECK-NEXT:    %[[W:.*]] = memref.collapse_shape %w {{.*}} into memref<8x32xf32, "gm">
// CHECK:         memref.subview %[[P]][0, %{{.*}}] [16, 8] [1, 1]
// CHECK:         memref.subview %[[W]][0, 0] [8, 16] [1, 1]
// CHECK:         ascend.mmad {{.*}} {init}
// CHECK:         memref.subview %[[Q]][0, %{{.*}}] [16, 8] [1, 1]
// CHECK:         memref.subview %[[W]][0, 16] [8, 16] [1, 1]
// CHECK:         ascend.mmad
// CHECK-NOT:     {init}
// CHECK:         ascend.vrelu
func.func @fire(%p: tensor<1x16x8x8xf32> {onnx.name = "p"}, %q: tensor<1x16x8x8xf32> {onnx.name = "q"}) -> (tensor<1x8x8x8xf32> {onnx.name = "y"}) {
  %pr = graph.relu %p : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> loc("pr")
  %qr = graph.relu %q : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> loc("qr")
  %w = graph.constant dense<1.000000e-01> : tensor<8x32x1x1xf32> loc("w")
  %r = graph.fusion "cube+vector" (%pr, %qr, %w) attributes {graph.pattern = "conv-epilogue"} : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<8x32x1x1xf32>) -> tensor<1x8x8x8xf32> {
  ^bb0(%pr_1: tensor<1x16x8x8xf32>, %qr_1: tensor<1x16x8x8xf32>, %w_1: tensor<8x32x1x1xf32>):
    %b = graph.constant dense<5.000000e-01> : tensor<8xf32> loc("b")
    %cat = graph.concat %pr_1, %qr_1 {axis = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x32x8x8xf32> loc("concat")
    %c = graph.conv %cat, %w_1, %b : (tensor<1x32x8x8xf32>, tensor<8x32x1x1xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32> loc("squeeze")
    %r_1 = graph.relu %c : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> loc("relu")
    graph.yield %r_1 : tensor<1x8x8x8xf32>
  } loc(fused["concat", "squeeze", "relu"])
  func.return %r : tensor<1x8x8x8xf32>
}
