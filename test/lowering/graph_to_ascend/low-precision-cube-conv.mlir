// convert-graph-to-ascend, cube convolution kernels in f16 and bf16: load3d gathers 2-byte
// windows, the cube accumulates in f32, FIX rounds the tile to the result's type; the bias
// and the activation run on the vector unit in f16, in f32 for bf16.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// f16: the staged tile and the per-channel bias in f16 tiles, the program in f16.
// CHECK-LABEL: ascend.kernel @k0_f(
// CHECK-SAME:    attributes {block_dim = 12 : i64, core_type = "mix", template = "conv"}
// CHECK:         %[[V0:.*]] = ascend.alloc {offset = 0 : i64} : memref<16x16xf16, "ub">
// CHECK:         ascend.load3d {{.*}} : memref<8x3x16xf16, "l1"> to memref<48x16xf16, "l0b">
// CHECK:         ascend.mmad {{.*}} : memref<16x48xf16, "l0a">, memref<48x16xf16, "l0b">, memref<16x16xf32, "l0c">
// CHECK:         ascend.copy %l0c, %{{.*}} {pad} : memref<16x16xf32, "l0c"> to memref<16x12xf16, strided<[144, 1], offset: ?>, "gm">
// The tile's channels 0-7 on the block's first vector core (8-15 on the second).
// CHECK:         ascend.sub_block 0 {
// CHECK-NEXT:      ascend.wait_flag FIX -> MTE2 id 0
// CHECK-NEXT:      %[[W0:.*]] = memref.subview %[[V0]][0, 0] [8, 16]
// CHECK:           %[[T:.*]] = memref.subview %{{.*}} [8, 12]
// CHECK-NEXT:      ascend.copy %[[T]], %[[W0]] {pad}
// CHECK:           ascend.vadd %[[W0]], %{{.*}}, %[[W0]] : memref<8x16xf16, strided<[16, 1]>, "ub">
// CHECK-NEXT:      ascend.vsigmoid %[[W0]], %[[W0]] : memref<8x16xf16, strided<[16, 1]>, "ub">
// CHECK:           ascend.copy %[[W0]], %[[T]] {pad} : memref<8x16xf16, strided<[16, 1]>, "ub"> to memref<8x12xf16
// CHECK:         ascend.sub_block 1 {
func.func @conv_f16(%x: tensor<1x8x12x12xf16>, %w: tensor<16x8x3x3xf16>, %b: tensor<16xf16>) -> tensor<1x16x12x12xf16> {
  %r = graph.fusion "cube+vector" (%x, %w, %b) : (tensor<1x8x12x12xf16>, tensor<16x8x3x3xf16>, tensor<16xf16>) -> tensor<1x16x12x12xf16> {
  ^bb0(%a: tensor<1x8x12x12xf16>, %k: tensor<16x8x3x3xf16>, %c: tensor<16xf16>):
    %y = graph.conv %a, %k, %c {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x12x12xf16>, tensor<16x8x3x3xf16>, tensor<16xf16>) -> tensor<1x16x12x12xf16> loc("conv")
    %s = graph.sigmoid %y : (tensor<1x16x12x12xf16>) -> tensor<1x16x12x12xf16> loc("sig")
    graph.yield %s : tensor<1x16x12x12xf16>
  } loc("f")
  func.return %r : tensor<1x16x12x12xf16>
}

// -----

// bf16: the same kernel; the staged tile and the bias arrive in bf16 staging tiles (the
// bias's column padded to a 32-byte row of 16) and are converted to f32 first; the result
// is converted back into a bf16 tile for MTE3.
// CHECK-LABEL: ascend.kernel @k0_f(
// CHECK-SAME:    attributes {block_dim = 12 : i64, core_type = "mix", template = "conv"}
// CHECK:         %[[V0:.*]] = ascend.alloc {offset = 0 : i64} : memref<16x16xf32, "ub">
// CHECK-NEXT:    %[[V1:.*]] = ascend.alloc {offset = 1024 : i64} : memref<16x16xf32, "ub">
// CHECK-NEXT:    %[[S0:.*]] = ascend.alloc {offset = 2048 : i64} : memref<16x8xf32, "ub">
// CHECK-NEXT:    %[[IN0:.*]] = ascend.alloc {offset = 2560 : i64} : memref<16x16xbf16, "ub">
// CHECK-NEXT:    %[[IN1:.*]] = ascend.alloc {offset = 3072 : i64} : memref<16x16xbf16, "ub">
// CHECK-NEXT:    %[[OUT0:.*]] = ascend.alloc {offset = 3584 : i64} : memref<16x16xbf16, "ub">
// CHECK:         ascend.load3d {{.*}} : memref<8x3x16xbf16, "l1"> to memref<48x16xbf16, "l0b">
// CHECK:         ascend.mmad {{.*}} : memref<16x48xbf16, "l0a">, memref<48x16xbf16, "l0b">, memref<16x16xf32, "l0c">
// CHECK:         ascend.copy %l0c, %{{.*}} {pad} : memref<16x16xf32, "l0c"> to memref<16x12xbf16, strided<[144, 1], offset: ?>, "gm">
// CHECK:         ascend.sub_block 0 {
// CHECK-NEXT:      ascend.wait_flag FIX -> MTE2 id 0
// CHECK-NEXT:      %[[W0:.*]] = memref.subview %[[V0]][0, 0] [8, 16]
// CHECK-NEXT:      %[[W1:.*]] = memref.subview %[[V1]][0, 0] [8, 16]
// CHECK:           %[[T:.*]] = memref.subview %{{.*}} [8, 12]
// CHECK-NEXT:      %[[I0:.*]] = memref.subview %[[IN0]][0, 0] [8, 16]
// CHECK-NEXT:      ascend.copy %[[T]], %[[I0]] {pad} : memref<8x12xbf16, strided<[144, 1], offset: ?>, "gm"> to memref<8x16xbf16, strided<[16, 1]>, "ub">
// CHECK:           %[[C:.*]] = memref.subview %[[S0]][0, 0] [8, 8]
// CHECK-NEXT:      %[[B:.*]] = memref.subview %[[IN1]][0, 0] [8, 8] [1, 1]
// CHECK-NEXT:      ascend.copy %{{.*}}, %[[B]] {pad} : memref<8x1xbf16, strided<[1, 1]>, "gm"> to memref<8x8xbf16, strided<[16, 1]>, "ub">
// CHECK:           ascend.vcast %[[I0]], %[[W0]] : memref<8x16xbf16, strided<[16, 1]>, "ub">, memref<8x16xf32, strided<[16, 1]>, "ub">
// CHECK-NEXT:      ascend.vcast %[[B]], %[[C]] : memref<8x8xbf16, strided<[16, 1]>, "ub">, memref<8x8xf32, strided<[8, 1]>, "ub">
// CHECK-NEXT:      ascend.vbrcb %{{.*}}, %[[W1]] : memref<8x1xf32, strided<[8, 1]>, "ub">, memref<8x16xf32, strided<[16, 1]>, "ub">
// CHECK-NEXT:      ascend.vadd %[[W0]], %[[W1]], %[[W0]] : memref<8x16xf32, strided<[16, 1]>, "ub">
// CHECK-NEXT:      ascend.vsigmoid %[[W0]], %[[W0]] : memref<8x16xf32, strided<[16, 1]>, "ub">
// CHECK-NEXT:      %[[O0:.*]] = memref.subview %[[OUT0]][0, 0] [8, 16]
// CHECK-NEXT:      ascend.vcast %[[W0]], %[[O0]] : memref<8x16xf32, strided<[16, 1]>, "ub">, memref<8x16xbf16, strided<[16, 1]>, "ub">
// CHECK:           ascend.copy %[[O0]], %[[T]] {pad} : memref<8x16xbf16, strided<[16, 1]>, "ub"> to memref<8x12xbf16
// CHECK:         ascend.sub_block 1 {
func.func @conv_bf16(%x: tensor<1x8x12x12xbf16>, %w: tensor<16x8x3x3xbf16>, %b: tensor<16xbf16>) -> tensor<1x16x12x12xbf16> {
  %r = graph.fusion "cube+vector" (%x, %w, %b) : (tensor<1x8x12x12xbf16>, tensor<16x8x3x3xbf16>, tensor<16xbf16>) -> tensor<1x16x12x12xbf16> {
  ^bb0(%a: tensor<1x8x12x12xbf16>, %k: tensor<16x8x3x3xbf16>, %c: tensor<16xbf16>):
    %y = graph.conv %a, %k, %c {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x12x12xbf16>, tensor<16x8x3x3xbf16>, tensor<16xbf16>) -> tensor<1x16x12x12xbf16> loc("conv")
    %s = graph.sigmoid %y : (tensor<1x16x12x12xbf16>) -> tensor<1x16x12x12xbf16> loc("sig")
    graph.yield %s : tensor<1x16x12x12xbf16>
  } loc("f")
  func.return %r : tensor<1x16x12x12xbf16>
}

// -----

// bf16 on NC1HWC0 (C0 = 16 for a 2-byte type) with FRACTAL_Z weights: FIX writes NC1HWC0
// blocks and the epilogue runs on them as they lie, [C1, pixels, C0] tiles converted to f32
// and back. A tile is one C1 block of 16 output channels x one output row of 8 pixels (the
// l1 box [2, 3, 8, 16]: 3 input rows), 2 x 8 = 16 tiles over 16 blocks - the tiling prices
// the re-reads of the feature map and weights at the L2 bandwidth, so small tiles win; FIX
// writes the row's 8 valid pixels of the 16-row l0c fractal ({pad}) into [1, 8, 16] blocks.
// CHECK-LABEL: ascend.kernel @k0_conv(
// CHECK-SAME:    %y: memref<1x2x8x8x16xbf16, "gm">
// CHECK-SAME:    attributes {block_dim = 16 : i64, core_type = "mix", template = "conv"}
// CHECK:         ascend.alloc {{.*}} : memref<2x3x8x16xbf16, "l1">
// CHECK:         %[[V0:.*]] = ascend.alloc {offset = 0 : i64} : memref<1x8x16xf32, "ub">
// CHECK:         %[[IN0:.*]] = ascend.alloc {offset = 1088 : i64} : memref<1x8x16xbf16, "ub">
// CHECK-NEXT:    %[[IN1:.*]] = ascend.alloc {offset = 1344 : i64} : memref<1x1x16xbf16, "ub">
// CHECK-NEXT:    %[[OUT0:.*]] = ascend.alloc {offset = 1376 : i64} : memref<1x8x16xbf16, "ub">
// CHECK:         ascend.copy %l0c, %[[T:.*]] {layout = "nd2nc1hwc0", pad} : memref<16x16xf32, "l0c"> to memref<1x8x16xbf16
// CHECK:         ascend.copy %[[T]], %[[IN0]] : memref<1x8x16xbf16
// CHECK:         ascend.copy %{{.*}}, %[[IN1]] {layout = "nd2nc1hwc0"} : memref<16x1xbf16
// CHECK:         ascend.vcast %[[IN0]], %[[V0]] : memref<1x8x16xbf16, "ub">, memref<1x8x16xf32, "ub">
// CHECK:         ascend.vadd %[[V0]], %{{.*}}, %[[V0]] : memref<1x8x16xf32, "ub">
// CHECK-NEXT:    ascend.vcast %[[V0]], %[[OUT0]] : memref<1x8x16xf32, "ub">, memref<1x8x16xbf16, "ub">
// CHECK:         ascend.copy %[[OUT0]], %[[T]] : memref<1x8x16xbf16, "ub">
func.func @main(%x: tensor<1x32x8x8xbf16>) -> tensor<1x2x8x8x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>> {
  %w = graph.constant dense<5.000000e-01> : tensor<18x2x16x16xbf16, #graph.format<FRACTAL_Z, NCHW, [32, 32, 3, 3]>>
  %b = graph.constant dense<2.500000e-01> : tensor<32xbf16>
  %y = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x8x8xbf16>, tensor<18x2x16x16xbf16, #graph.format<FRACTAL_Z, NCHW, [32, 32, 3, 3]>>, tensor<32xbf16>) -> tensor<1x2x8x8x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>> loc("conv")
  func.return %y : tensor<1x2x8x8x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>
}
