// graph-layout on int8 convolutions: load3d reads an int8 feature map as NC1HWC0 with C0 = 32
// and the int8 cube its weights as FRACTAL_Z of 16 x 32 fractals; the i32 result stays ND unless the FIX pipe requantizes it.
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

// -----

// An int8 conv whose i32 result the FIX pipe requantizes (its one reader a requantize, then a
// relu of the int8 result): the requantized int8 result is written blocked, NC1HWC0 with C0 =
// 32, straight into the 3x3 conv that reads it - the accumulator is NC1HWC0 (C0 = 16) and the
// per-channel scale is converted with it; no trans_data between the two convs.
// CHECK-LABEL: func.func @fix_requantized(
// CHECK:         %[[T:.*]] = graph.trans_data %x {src_format = "ND", dst_format = "NC1HWC0"}
// CHECK:         %a = graph.conv %[[T]], {{.*}} -> tensor<8x4x56x56x16xi32, #graph.format<NC1HWC0, NCHW, [8, 64, 56, 56]>>
// CHECK-NEXT:    %q = graph.requantize %a, %{{.*}}, %z : (tensor<8x4x56x56x16xi32, #graph.format<NC1HWC0, NCHW, [8, 64, 56, 56]>>, tensor<1x4x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 1, 1]>>, tensor<i8>) -> tensor<8x2x56x56x32xi8, #graph.format<NC1HWC0, NCHW, [8, 64, 56, 56]>>
// CHECK-NEXT:    %r = graph.relu %q : (tensor<8x2x56x56x32xi8, {{.*}}) -> tensor<8x2x56x56x32xi8, #graph.format<NC1HWC0, NCHW, [8, 64, 56, 56]>>
// CHECK-NOT:     graph.trans_data
// CHECK:         %y = graph.conv %r, {{.*}} -> tensor<8x64x56x56xi32>
func.func @fix_requantized(%x: tensor<8x64x56x56xi8>) -> tensor<8x64x56x56xi32> {
  %w = graph.constant dense<3> : tensor<64x64x3x3xi8>
  %s = graph.constant dense<0.01> : tensor<1x64x1x1xf32>
  %z = graph.constant dense<0> : tensor<i8>
  %a = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, offset_x = -128 : i64} : (tensor<8x64x56x56xi8>, tensor<64x64x3x3xi8>) -> tensor<8x64x56x56xi32>
  %q = graph.requantize %a, %s, %z : (tensor<8x64x56x56xi32>, tensor<1x64x1x1xf32>, tensor<i8>) -> tensor<8x64x56x56xi8>
  %r = graph.relu %q : (tensor<8x64x56x56xi8>) -> tensor<8x64x56x56xi8>
  %y = graph.conv %r, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x64x56x56xi8>, tensor<64x64x3x3xi8>) -> tensor<8x64x56x56xi32>
  func.return %y : tensor<8x64x56x56xi32>
}

// -----

// The accumulator read by something else too: the FIX pipe does not requantize it, the i32
// result stays ND and the int8 map is converted for the 3x3 conv.
// CHECK-LABEL: func.func @accumulator_read_twice(
// CHECK:         %a = graph.conv {{.*}} -> tensor<8x64x56x56xi32>
// CHECK-NEXT:    %q = graph.requantize %a, {{.*}} -> tensor<8x64x56x56xi8>
// CHECK:         graph.trans_data %q {src_format = "ND", dst_format = "NC1HWC0"}
func.func @accumulator_read_twice(%x: tensor<8x64x56x56xi8>) -> (tensor<8x64x56x56xi32>, tensor<8x64x56x56xi32>) {
  %w = graph.constant dense<3> : tensor<64x64x3x3xi8>
  %s = graph.constant dense<0.01> : tensor<1x64x1x1xf32>
  %z = graph.constant dense<0> : tensor<i8>
  %a = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, offset_x = -128 : i64} : (tensor<8x64x56x56xi8>, tensor<64x64x3x3xi8>) -> tensor<8x64x56x56xi32>
  %q = graph.requantize %a, %s, %z : (tensor<8x64x56x56xi32>, tensor<1x64x1x1xf32>, tensor<i8>) -> tensor<8x64x56x56xi8>
  %y = graph.conv %q, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x64x56x56xi8>, tensor<64x64x3x3xi8>) -> tensor<8x64x56x56xi32>
  func.return %y, %a : tensor<8x64x56x56xi32>, tensor<8x64x56x56xi32>
}

// -----

// An int8 max pool between two int8 convs (graph-fold-qdq moves a pool's quantize before it)
// runs blocked in int8's C0 = 32 lanes, tied to the requantized map the FIX pipe writes and
// to the conv that reads it: no trans_data on either side.
// CHECK-LABEL: func.func @int8_max_pool(
// CHECK:         %q = graph.requantize %a, {{.*}} -> tensor<8x2x56x56x32xi8, #graph.format<NC1HWC0, NCHW, [8, 64, 56, 56]>>
// CHECK-NEXT:    %p = graph.max_pool %q {{.*}} : (tensor<8x2x56x56x32xi8, #graph.format<NC1HWC0, NCHW, [8, 64, 56, 56]>>) -> tensor<8x2x28x28x32xi8, #graph.format<NC1HWC0, NCHW, [8, 64, 28, 28]>>
// CHECK-NOT:     graph.trans_data
// CHECK:         %y = graph.conv %p, {{.*}} -> tensor<8x64x28x28xi32>
func.func @int8_max_pool(%x: tensor<8x64x56x56xi8>) -> tensor<8x64x28x28xi32> {
  %w = graph.constant dense<3> : tensor<64x64x3x3xi8>
  %s = graph.constant dense<0.01> : tensor<1x64x1x1xf32>
  %z = graph.constant dense<-128> : tensor<i8>
  %a = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, offset_x = -128 : i64} : (tensor<8x64x56x56xi8>, tensor<64x64x3x3xi8>) -> tensor<8x64x56x56xi32>
  %q = graph.requantize %a, %s, %z : (tensor<8x64x56x56xi32>, tensor<1x64x1x1xf32>, tensor<i8>) -> tensor<8x64x56x56xi8>
  %p = graph.max_pool %q {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<8x64x56x56xi8>) -> tensor<8x64x28x28xi8>
  %y = graph.conv %p, %w {pads = array<i64: 1, 1, 1, 1>, offset_x = -128 : i64} : (tensor<8x64x28x28xi8>, tensor<64x64x3x3xi8>) -> tensor<8x64x28x28xi32>
  func.return %y : tensor<8x64x28x28xi32>
}
