// ascend.load3d's pad_value (the Load3D padding-value register, Ascend C
// SetLoadDataPaddingValue): an int8 convolution pads with the input's zero point.
// Round trip (test_int8_kernels.py runs it: the padding holds the value).
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: ascend.kernel @int8_conv(
// CHECK: ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, out = array<i64: 6, 6>, channels = 3 : i64, pad_value = -3 : i64} : memref<3x6x32xi8, "l1"> to memref<32x48xi8, "l0b">
ascend.kernel @int8_conv() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c0 = arith.constant 0 : index
  %fm = ascend.alloc : memref<3x6x32xi8, "l1">
  %b = ascend.alloc : memref<32x48xi8, "l0b">
  ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, out = array<i64: 6, 6>, channels = 3 : i64, pad_value = -3 : i64} : memref<3x6x32xi8, "l1"> to memref<32x48xi8, "l0b">
  ascend.return
}
