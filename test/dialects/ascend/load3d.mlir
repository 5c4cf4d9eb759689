// A convolution on the cube with img2col: y = conv(x, w), x [1, 3, 6, 6] f32,
// w [16, 3, 3, 3] (given flattened, [16, 27]), pads 1, stride 1 -> y as
// [16, 36] (Cout x pixels). The feature map sits in l1 as a [C, H, W] box
// (rows padded to 32 bytes), `ascend.load3d` expands its 3x3 windows into the
// [K, pixels] im2col tile of l0b (K = 27 padded to 32, 36 pixels padded to
// 48, zeros beyond), the weights are l0a, and the FIX pipe writes back only the
// valid [16, 36] part of l0c (`pad`). Run by test/python/test_cube_kernels.py.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

!x = memref<1x3x6x6xf32, "gm">
!w = memref<16x27xf32, "gm">
!y = memref<16x36xf32, "gm">
!fm = memref<3x6x8xf32, "l1">
!wl1 = memref<16x32xf32, "l1">
!l0a = memref<16x32xf32, "l0a">
!l0b = memref<32x48xf32, "l0b">
!l0c = memref<16x48xf32, "l0c">

// CHECK-LABEL: ascend.kernel @conv(
ascend.kernel @conv(%x: !x, %w: !w, %y: !y) attributes {core_type = "cube", block_dim = 1 : i64} {
  %c0 = arith.constant 0 : index
  %fm = ascend.alloc {offset = 0 : i64} : !fm
  %wl1 = ascend.alloc {offset = 1024 : i64} : !wl1
  %a = ascend.alloc {offset = 0 : i64} : !l0a
  %b = ascend.alloc {offset = 0 : i64} : !l0b
  %c = ascend.alloc {offset = 0 : i64} : !l0c
  %img = memref.subview %x[0, 0, 0, 0] [1, 3, 6, 6] [1, 1, 1, 1] : !x to memref<3x6x6xf32, strided<[36, 6, 1]>, "gm">
  // CHECK: ascend.copy %img, %fm {pad} : memref<3x6x6xf32, strided<[36, 6, 1]>, "gm"> to memref<3x6x8xf32, "l1">
  ascend.copy %img, %fm {pad} : memref<3x6x6xf32, strided<[36, 6, 1]>, "gm"> to !fm
  ascend.copy %w, %wl1 {pad} : !w to !wl1
  ascend.set_flag MTE2 -> MTE1 id 0
  ascend.wait_flag MTE2 -> MTE1 id 0
  ascend.copy %wl1, %a : !wl1 to !l0a
  // CHECK: ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, out = array<i64: 6, 6>, channels = 3 : i64} : memref<3x6x8xf32, "l1"> to memref<32x48xf32, "l0b">
  ascend.load3d %fm[%c0, %c0], %b[%c0, %c0, %c0] {image = array<i64: 6, 6>, kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, out = array<i64: 6, 6>, channels = 3 : i64} : !fm to !l0b
  ascend.set_flag MTE1 -> M id 0
  ascend.wait_flag MTE1 -> M id 0
  // CHECK: ascend.mmad %a, %b, %c {init}
  ascend.mmad %a, %b, %c {init} : !l0a, !l0b, !l0c
  ascend.set_flag M -> FIX id 0
  ascend.wait_flag M -> FIX id 0
  // CHECK: ascend.copy %c, %y {pad} : memref<16x48xf32, "l0c"> to memref<16x36xf32, "gm">
  ascend.copy %c, %y {pad} : !l0c to !y
  ascend.return
}

// CHECK-LABEL: func.func @main(
func.func @main(%x: !x {onnx.name = "x"}, %w: !w {onnx.name = "w"}, %y: !y {onnx.name = "y", ascend.output}) {
  %s = ascend.stream 0
  // CHECK: ascend.launch @conv on %s(%x, %w, %y)
  ascend.launch @conv on %s(%x, %w, %y) : (!x, !w, !y)
  func.return
}
