// Verifier errors of ascend.load3d and of copy {pad}, one case per chunk.
// RUN: not geir-opt %s --split-input-file 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.load3d': source must be in l1, got ub
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "mix"} {
  %c0 = arith.constant 0 : index
  %fm = ascend.alloc : memref<3x6x8xf32, "ub">
  %b = ascend.alloc : memref<32x48xf32, "l0b">
  ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, out = array<i64: 6, 6>, channels = 3 : i64} : memref<3x6x8xf32, "ub"> to memref<32x48xf32, "l0b">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.load3d': destination must be in l0a or l0b, got l0c
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c0 = arith.constant 0 : index
  %fm = ascend.alloc : memref<3x6x8xf32, "l1">
  %b = ascend.alloc : memref<32x48xf32, "l0c">
  ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, out = array<i64: 6, 6>, channels = 3 : i64} : memref<3x6x8xf32, "l1"> to memref<32x48xf32, "l0c">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.load3d': source memref<18x8xf32, "l1"> must be a feature-map box [C, H, W] or NC1HWC0 [C1, H, W, C0]
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c0 = arith.constant 0 : index
  %fm = ascend.alloc : memref<18x8xf32, "l1">
  %b = ascend.alloc : memref<32x48xf32, "l0b">
  ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, out = array<i64: 6, 6>, channels = 3 : i64} : memref<18x8xf32, "l1"> to memref<32x48xf32, "l0b">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.load3d': copies f16 to f32; img2col keeps the element type
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c0 = arith.constant 0 : index
  %fm = ascend.alloc : memref<3x6x16xf16, "l1">
  %b = ascend.alloc : memref<32x48xf32, "l0b">
  ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, out = array<i64: 6, 6>, channels = 3 : i64} : memref<3x6x16xf16, "l1"> to memref<32x48xf32, "l0b">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.load3d': strides must be 2 integers >= 1, got [0, 1]
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c0 = arith.constant 0 : index
  %fm = ascend.alloc : memref<3x6x8xf32, "l1">
  %b = ascend.alloc : memref<32x48xf32, "l0b">
  ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 0, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, out = array<i64: 6, 6>, channels = 3 : i64} : memref<3x6x8xf32, "l1"> to memref<32x48xf32, "l0b">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.load3d': pads must be 4 integers >= 0, got [1, 1]
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c0 = arith.constant 0 : index
  %fm = ascend.alloc : memref<3x6x8xf32, "l1">
  %b = ascend.alloc : memref<32x48xf32, "l0b">
  ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1>, out = array<i64: 6, 6>, channels = 3 : i64} : memref<3x6x8xf32, "l1"> to memref<32x48xf32, "l0b">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.load3d': channels = 4 must be in 1..3 (the source's channels)
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c0 = arith.constant 0 : index
  %fm = ascend.alloc : memref<3x6x8xf32, "l1">
  %b = ascend.alloc : memref<32x48xf32, "l0b">
  ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, out = array<i64: 6, 6>, channels = 4 : i64} : memref<3x6x8xf32, "l1"> to memref<32x48xf32, "l0b">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.load3d': out [7, 7] has 49 pixels, more than the 48 of the destination
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c0 = arith.constant 0 : index
  %fm = ascend.alloc : memref<3x6x8xf32, "l1">
  %b = ascend.alloc : memref<32x48xf32, "l0b">
  ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, out = array<i64: 7, 7>, channels = 3 : i64} : memref<3x6x8xf32, "l1"> to memref<32x48xf32, "l0b">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': with pad fills a destination at least as large as the source, got [16, 40] -> [16, 32]
ascend.kernel @k(%x: memref<16x40xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %t = ascend.alloc : memref<16x32xf32, "l1">
  ascend.copy %x, %t {pad} : memref<16x40xf32, "gm"> to memref<16x32xf32, "l1">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': with pad writes a destination no larger than the source, got [16, 32] -> [16, 40]
ascend.kernel @k(%y: memref<16x40xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c = ascend.alloc : memref<16x32xf32, "l0c">
  ascend.copy %c, %y {pad} : memref<16x32xf32, "l0c"> to memref<16x40xf32, "gm">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.copy': pad applies to gm -> l1/ub (zero fill) and l0c/ub -> gm (crop), not l1 -> l0a
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a = ascend.alloc : memref<16x32xf32, "l1">
  %b = ascend.alloc : memref<16x32xf32, "l0a">
  ascend.copy %a, %b {pad} : memref<16x32xf32, "l1"> to memref<16x32xf32, "l0a">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': pad cannot be combined with transpose or a fractal (nd2nz / nz2nd) layout change
ascend.kernel @k(%x: memref<16x16xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %t = ascend.alloc : memref<16x16xf32, "l1">
  ascend.copy %x, %t {pad, layout = "nd2nz"} : memref<16x16xf32, "gm"> to memref<16x16xf32, "l1">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.load3d': source memref<1x6x6x8xf32, "l1">: an NC1HWC0 box ends in C0 = 16
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c0 = arith.constant 0 : index
  %fm = ascend.alloc : memref<1x6x6x8xf32, "l1">
  %b = ascend.alloc : memref<32x48xf32, "l0b">
  ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, out = array<i64: 6, 6>, channels = 3 : i64} : memref<1x6x6x8xf32, "l1"> to memref<32x48xf32, "l0b">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.load3d': channels = 17 must be in 1..16 (the source's channels)
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c0 = arith.constant 0 : index
  %fm = ascend.alloc : memref<1x6x6x16xf32, "l1">
  %b = ascend.alloc : memref<32x48xf32, "l0b">
  ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, out = array<i64: 6, 6>, channels = 17 : i64} : memref<1x6x6x16xf32, "l1"> to memref<32x48xf32, "l0b">
  ascend.return
}
