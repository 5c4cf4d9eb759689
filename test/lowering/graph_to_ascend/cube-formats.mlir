// convert-graph-to-ascend on graph-layout's storage formats: convolutions reading
// NC1HWC0 feature maps and FRACTAL_Z weights, writing NC1HWC0; a matmul reading
// FRACTAL_NZ weights; an op no template takes on formatted tensors.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// NCHW input, FRACTAL_Z weights, NC1HWC0 result with a bias epilogue: the copy into
// l1 re-lays the [C, rows, W] box out as NC1HWC0 [C1, rows, W, C0]; the weights
// arrive as whole fractals (FRACTAL_Z is the NZ form of the [Cout, K] matrix, K in
// (c1, kh, kw, c0) order) and load3d reads the NC1HWC0 box in that order; the FIX
// pipe writes the fractal rows as NC1HWC0 blocks; the epilogue runs on those blocks
// in ub as they lie ([C1, pixels, C0] tiles, no re-layout), the bias re-laid out to
// [C1, 1, C0] and broadcast over the pixels. A tile is 16 output channels x one output
// row of 8 pixels (a box of 3 input rows), 2 x 8 = 16 tiles over 16 blocks - the tiling
// prices re-reads of the box rows and weights at the L2 bandwidth, so small tiles win;
// FIX writes the 8 valid pixels of the 16-row l0c fractal ({pad}) as a [1, 8, 16] block.
// CHECK-LABEL: ascend.kernel @k0_conv(
// CHECK-SAME:    %w: memref<18x2x16x16xf16, "gm">
// CHECK-SAME:    %y: memref<1x2x8x8x16xf16, "gm">
// CHECK-SAME:    attributes {block_dim = 16 : i64, core_type = "mix", template = "conv"}
// CHECK:         %l1fm0 = ascend.alloc {{.*}} : memref<2x3x8x16xf16, "l1">
// CHECK:         %v0 = ascend.alloc {{.*}} : memref<1x8x16xf16, "ub">
// CHECK:         %s0 = ascend.alloc {{.*}} : memref<1x1x16xf16, "ub">
// CHECK:         %[[Y:.*]] = memref.collapse_shape %y {{.*}} into memref<2x64x16xf16, "gm">
// CHECK:         ascend.copy %{{.*}}, %l1fm0 {layout = "nd2nc1hwc0"} : memref<32x3x8xf16, {{.*}}"gm"> to memref<2x3x8x16xf16, "l1">
// CHECK:         %[[WT:.*]] = memref.subview %w[0, %{{.*}}, 0, 0] [18, 1, 16, 16] [1, 1, 1, 1]
// CHECK-NEXT:    ascend.copy %[[WT]], %l1w0 {layout = "nz2nd"} : memref<18x1x16x16xf16, {{.*}} to memref<16x288xf16, "l1">
// CHECK:         ascend.load3d %l1fm0[%{{.*}}, %c0], %l0b0[%c0, %{{.*}}, %c0] {{{.*}}out = array<i64: 1, 8>, channels = 32 : i64} : memref<2x3x8x16xf16, "l1"> to memref<96x16xf16, "l0b">
// CHECK:         %[[T:.*]] = memref.subview %[[Y]][%{{.*}}, %{{.*}}, 0] [1, 8, 16] [1, 1, 1]
// CHECK-NEXT:    ascend.copy %l0c, %[[T]] {layout = "nd2nc1hwc0", pad} : memref<16x16xf32, "l0c"> to memref<1x8x16xf16, {{.*}}"gm">
// CHECK-NOT:     nc1hwc02nd
// CHECK:         ascend.copy %[[T]], %v0 : memref<1x8x16xf16, {{.*}}"gm"> to memref<1x8x16xf16, "ub">
// CHECK:         ascend.copy %{{.*}}, %s0 {layout = "nd2nc1hwc0"} : memref<16x1xf16, {{.*}}"gm"> to memref<1x1x16xf16, "ub">
// CHECK:         ascend.vbrcb %s0, %v1 : memref<1x1x16xf16, "ub">, memref<1x8x16xf16, "ub">
// CHECK-NEXT:    ascend.vadd %v0, %v1, %v0 : memref<1x8x16xf16, "ub">
// CHECK-NEXT:    ascend.set_flag V -> MTE3
// CHECK-NEXT:    ascend.wait_flag V -> MTE3
// CHECK-NEXT:    ascend.copy %v0, %[[T]] : memref<1x8x16xf16, "ub"> to memref<1x8x16xf16, {{.*}}"gm">
// NC1HWC0 in, NCHW out: the box is copied as it lies (l1's native format).
// CHECK-LABEL: ascend.kernel @k1_conv(
// CHECK:         ascend.copy %{{.*}}, %l1fm0 {layout = "nc1hwc0"} : memref<2x3x8x16xf16, strided<[1024, 128, 16, 1], offset: ?>, "gm"> to memref<2x3x8x16xf16, "l1">
// CHECK:         ascend.load3d %l1fm0
// CHECK:         ascend.copy %l0c, %{{.*}} {pad} : memref<16x16xf32, "l0c"> to memref<16x8xf16, {{.*}}"gm">
// CHECK-NOT:     ascend.reference
func.func @main(%x: tensor<1x32x8x8xf16>) -> tensor<1x32x8x8xf16> {
  %w = graph.constant dense<5.000000e-01> : tensor<18x2x16x16xf16, #graph.format<FRACTAL_Z, NCHW, [32, 32, 3, 3]>>
  %b = graph.constant dense<2.500000e-01> : tensor<32xf16>
  %y = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x8x8xf16>, tensor<18x2x16x16xf16, #graph.format<FRACTAL_Z, NCHW, [32, 32, 3, 3]>>, tensor<32xf16>) -> tensor<1x2x8x8x16xf16, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>
  %w3 = graph.constant dense<5.000000e-01> : tensor<18x2x16x16xf16, #graph.format<FRACTAL_Z, NCHW, [32, 32, 3, 3]>>
  %y3 = graph.conv %y, %w3 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x8x8x16xf16, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>, tensor<18x2x16x16xf16, #graph.format<FRACTAL_Z, NCHW, [32, 32, 3, 3]>>) -> tensor<1x32x8x8xf16>
  func.return %y3 : tensor<1x32x8x8xf16>
}

// -----

// A FRACTAL_NZ right matrix [64, 40] (stored [N1 = 3, K1 = 4, 16, 16]): each l1 chunk
// takes its whole fractals, no padding copy.
// CHECK-LABEL: ascend.kernel @k0_matmul(
// CHECK-SAME:    %w: memref<3x4x16x16xf32, "gm">
// CHECK:         ascend.copy %{{.*}}, %l1b0 {layout = "nz2nd"} : memref<1x4x16x16xf32, {{.*}}"gm"> to memref<64x16xf32, "l1">
// CHECK:         ascend.mmad
// CHECK-NOT:     ascend.reference
func.func @main(%x: tensor<48x64xf32>) -> tensor<48x40xf32> {
  %w = graph.constant dense<5.000000e-01> : tensor<3x4x16x16xf32, #graph.format<FRACTAL_NZ, ND, [64, 40]>>
  %y = graph.matmul %x, %w : (tensor<48x64xf32>, tensor<3x4x16x16xf32, #graph.format<FRACTAL_NZ, ND, [64, 40]>>) -> tensor<48x40xf32>
  func.return %y : tensor<48x40xf32>
}

// -----

// A depthwise convolution on NC1HWC0 (grouped: FRACTAL_Z is for group 1) has no
// formatted kernel: it runs on plain tensors, between trans_data kernels to its
// operands' origin format and back (never a reference over storage arrays).
// CHECK-LABEL: ascend.kernel @k0_trans_data(
// CHECK-SAME:    %x: memref<1x2x8x8x16xf32, "gm">, %{{.*}}: memref<1x32x8x8xf32, "gm">)
// CHECK:       ascend.kernel @k1_conv(
// CHECK-SAME:    memref<1x32x8x8xf32, "gm">, %w: memref<32x1x3x3xf32, "gm">, %{{.*}}: memref<1x32x8x8xf32, "gm">)
// CHECK:       ascend.kernel @k2_trans_data(
// CHECK-SAME:    memref<1x32x8x8xf32, "gm">, %{{.*}}: memref<1x2x8x8x16xf32, "gm">)
// CHECK:       ascend.launch @k0_trans_data on %stream(%x, %[[P:.*]]) :
// CHECK:       ascend.launch @k1_conv on %stream(%[[P]], %w, %[[Q:.*]]) :
// CHECK-NEXT:  ascend.launch @k2_trans_data on %stream(%[[Q]], %y) :
func.func @main(%x: tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>) -> tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>> {
  %w = graph.constant dense<5.000000e-01> : tensor<32x1x3x3xf32>
  %y = graph.conv %x, %w {group = 32 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>, tensor<32x1x3x3xf32>) -> tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>
  func.return %y : tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>
}

// -----

// A 1x1 conv of stride 2 without padding over an NC1HWC0 map (ResNet's projection
// shortcut) samples one input pixel per output pixel: the box copy is a strided gm tile
// (every second row, every second pixel: one C0 block each) into an l1 box of the output
// tile's size, and load3d reads it as a stride-1 image of the output's 8 x 8.
// CHECK-LABEL: ascend.kernel @k0_conv(
// CHECK:         %l1fm0 = ascend.alloc {{.*}} : memref<2x2x8x16xf16, "l1">
// CHECK:         %[[BOX:.*]] = memref.subview %{{.*}}[0, %{{.*}}, 0, 0] [2, 2, 8, 16] [1, 2, 2, 1]
// CHECK-NEXT:    ascend.copy %[[BOX]], %l1fm0 {layout = "nc1hwc0"}
// CHECK:         ascend.load3d %l1fm0[{{.*}}] {image = array<i64: 8, 8>, kernel = array<i64: 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, out = array<i64: 2, 8>
func.func @main(%x: tensor<1x2x16x16x16xf16, #graph.format<NC1HWC0, NCHW, [1, 32, 16, 16]>>) -> tensor<1x64x8x8xf16> {
  %w = graph.constant dense<5.000000e-01> : tensor<2x4x16x16xf16, #graph.format<FRACTAL_Z, NCHW, [64, 32, 1, 1]>>
  %y = graph.conv %x, %w {strides = array<i64: 2, 2>} : (tensor<1x2x16x16x16xf16, #graph.format<NC1HWC0, NCHW, [1, 32, 16, 16]>>, tensor<2x4x16x16xf16, #graph.format<FRACTAL_Z, NCHW, [64, 32, 1, 1]>>) -> tensor<1x64x8x8xf16>
  func.return %y : tensor<1x64x8x8xf16>
}

// -----

// Padded, the same conv reads outside the image: its box stays the window (whole rows of
// the input, load3d at stride 2 with the pads), not a sampled one.
// CHECK-LABEL: ascend.kernel @k0_conv(
// CHECK-NOT:     [1, 2, 2, 1]
// CHECK:         ascend.load3d %l1fm0[{{.*}}] {image = array<i64: 16, 16>, kernel = array<i64: 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 1, 1>
func.func @main(%x: tensor<1x2x16x16x16xf16, #graph.format<NC1HWC0, NCHW, [1, 32, 16, 16]>>) -> tensor<1x64x9x9xf16> {
  %w = graph.constant dense<5.000000e-01> : tensor<2x4x16x16xf16, #graph.format<FRACTAL_Z, NCHW, [64, 32, 1, 1]>>
  %y = graph.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>} : (tensor<1x2x16x16x16xf16, #graph.format<NC1HWC0, NCHW, [1, 32, 16, 16]>>, tensor<2x4x16x16xf16, #graph.format<FRACTAL_Z, NCHW, [64, 32, 1, 1]>>) -> tensor<1x64x9x9xf16>
  func.return %y : tensor<1x64x9x9xf16>
}
