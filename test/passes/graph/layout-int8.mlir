// graph-layout on int8 convolutions: load3d reads an int8 feature map as NC1HWC0 with C0 = 32
// and the int8 cube its weights as FRACTAL_Z of 16 x 32 fractals; the i32 result stays ND.
// RUN: geir-opt %s -p graph-layout --split-input-file --elide-resources | filecheck %s

// A 3x3 window over a large int8 map: reading it as ND would interleave it into C0 lanes one
// element per DMA block in every tile, so one trans_data pays for itself; the weights are
// converted at compile time.
// CHECK-LABEL: func.func @window(
// CHECK:         %[[T:.*]] = graph.trans_data %x {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<8x64x56x56xi8>) -> tensor<8x2x56x56x32xi8, #graph.format<NC1HWC0, NCHW, [8, 64, 56, 56]>>
// CHECK:         graph.constant {{.*}} : tensor<18x4x16x32xi8, #graph.format<FRACTAL_Z, NCHW, [64, 64, 3, 3]>>
// CHECK:         %y = graph.conv %[[T]], {{.*}} -> tensor<8x64x56x56xi32>
func.func @window(%x: tensor<8x64x56x56xi8>) -> tensor<8x64x56x56xi32> {
  %w = graph.constant dense<3> : tensor<64x64x3x3xi8>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, offset_x = -128 : i64} : (tensor<8x64x56x56xi8>, tensor<64x64x3x3xi8>) -> tensor<8x64x56x56xi32>
  func.return %y : tensor<8x64x56x56xi32>
}

// -----

// A pointwise window reads the ND map as the [K, pixels] matrix it is: nothing to convert.
// CHECK-LABEL: func.func @pointwise(
// CHECK-NOT:     graph.trans_data
// CHECK:         %y = graph.conv %x, %w{{.*}} : (tensor<8x64x56x56xi8>, tensor<256x64x1x1xi8>) -> tensor<8x256x56x56xi32>
func.func @pointwise(%x: tensor<8x64x56x56xi8>) -> tensor<8x256x56x56xi32> {
  %w = graph.constant dense<3> : tensor<256x64x1x1xi8>
  %y = graph.conv %x, %w : (tensor<8x64x56x56xi8>, tensor<256x64x1x1xi8>) -> tensor<8x256x56x56xi32>
  func.return %y : tensor<8x256x56x56xi32>
}

// -----

// A small map: the trans_data's launch costs more than interleaving the map in the kernel.
// CHECK-LABEL: func.func @small(
// CHECK-NOT:     graph.trans_data
// CHECK:         %y = graph.conv %x, %w{{.*}} : (tensor<1x16x14x14xi8>, tensor<16x16x3x3xi8>) -> tensor<1x16x14x14xi32>
func.func @small(%x: tensor<1x16x14x14xi8>) -> tensor<1x16x14x14xi32> {
  %w = graph.constant dense<3> : tensor<16x16x3x3xi8>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x14x14xi8>, tensor<16x16x3x3xi8>) -> tensor<1x16x14x14xi32>
  func.return %y : tensor<1x16x14x14xi32>
}
