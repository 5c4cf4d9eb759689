// Verifier errors of ascend.load3d's pad_value, one case per chunk.
// RUN: not geir-opt %s --split-input-file 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.load3d': pad_value = 300 is not a i8 (range -128..127)
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c0 = arith.constant 0 : index
  %fm = ascend.alloc : memref<3x6x32xi8, "l1">
  %b = ascend.alloc : memref<32x48xi8, "l0b">
  ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, out = array<i64: 6, 6>, channels = 3 : i64, pad_value = 300 : i64} : memref<3x6x32xi8, "l1"> to memref<32x48xi8, "l0b">
  ascend.return
}
