// A cube kernel: c = a x b for 32x32x32 f16 -> f32, through l1, l0a/l0b and
// l0c in two K steps of 16 (the first mmad initialises l0c, the second
// accumulates), with the pipe flags between MTE2, MTE1, M and FIX.
// Run by test/python/test_ascend_interpreter.py.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

!in = memref<32x32xf16, "gm">
!out = memref<32x32xf32, "gm">
!l1 = memref<32x32xf16, "l1">
!l0a = memref<32x16xf16, "l0a">
!l0b = memref<16x32xf16, "l0b">
!l0c = memref<32x32xf32, "l0c">

// CHECK-LABEL: ascend.kernel @matmul(
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "cube"} {
ascend.kernel @matmul(%a: !in, %b: !in, %c: !out) attributes {core_type = "cube", block_dim = 1 : i64} {
  %a1 = ascend.alloc {offset = 0 : i64} : !l1
  %b1 = ascend.alloc {offset = 2048 : i64} : !l1
  // CHECK: %a0 = ascend.alloc {offset = 0 : i64} : memref<32x16xf16, "l0a">
  %a0 = ascend.alloc {offset = 0 : i64} : !l0a
  %b0 = ascend.alloc {offset = 0 : i64} : !l0b
  %c0 = ascend.alloc {offset = 0 : i64} : !l0c
  // CHECK: ascend.copy %a, %a1 : memref<32x32xf16, "gm"> to memref<32x32xf16, "l1">
  ascend.copy %a, %a1 : !in to !l1
  ascend.copy %b, %b1 : !in to !l1
  ascend.set_flag MTE2 -> MTE1 id 0
  ascend.wait_flag MTE2 -> MTE1 id 0
  // k = 0..16
  %ak0 = memref.subview %a1[0, 0] [32, 16] [1, 1] : !l1 to memref<32x16xf16, strided<[32, 1]>, "l1">
  %bk0 = memref.subview %b1[0, 0] [16, 32] [1, 1] : !l1 to memref<16x32xf16, strided<[32, 1]>, "l1">
  ascend.copy %ak0, %a0 : memref<32x16xf16, strided<[32, 1]>, "l1"> to !l0a
  ascend.copy %bk0, %b0 : memref<16x32xf16, strided<[32, 1]>, "l1"> to !l0b
  ascend.set_flag MTE1 -> M id 0
  ascend.wait_flag MTE1 -> M id 0
  // CHECK: ascend.mmad %a0, %b0, %c0 {init} : memref<32x16xf16, "l0a">, memref<16x32xf16, "l0b">, memref<32x32xf32, "l0c">
  ascend.mmad %a0, %b0, %c0 {init} : !l0a, !l0b, !l0c
  // l0a/l0b may be refilled once the cube has read them.
  ascend.set_flag M -> MTE1 id 0
  ascend.wait_flag M -> MTE1 id 0
  // k = 16..32
  %ak1 = memref.subview %a1[0, 16] [32, 16] [1, 1] : !l1 to memref<32x16xf16, strided<[32, 1], offset: 16>, "l1">
  %bk1 = memref.subview %b1[16, 0] [16, 32] [1, 1] : !l1 to memref<16x32xf16, strided<[32, 1], offset: 512>, "l1">
  ascend.copy %ak1, %a0 : memref<32x16xf16, strided<[32, 1], offset: 16>, "l1"> to !l0a
  ascend.copy %bk1, %b0 : memref<16x32xf16, strided<[32, 1], offset: 512>, "l1"> to !l0b
  ascend.set_flag MTE1 -> M id 1
  ascend.wait_flag MTE1 -> M id 1
  // CHECK: ascend.mmad %a0, %b0, %c0 : memref<32x16xf16, "l0a">, memref<16x32xf16, "l0b">, memref<32x32xf32, "l0c">
  ascend.mmad %a0, %b0, %c0 : !l0a, !l0b, !l0c
  ascend.set_flag M -> FIX id 0
  ascend.wait_flag M -> FIX id 0
  // CHECK: ascend.copy %c0, %c : memref<32x32xf32, "l0c"> to memref<32x32xf32, "gm">
  ascend.copy %c0, %c : !l0c to !out
  ascend.return
}

// CHECK-LABEL: func.func @main(
func.func @main(%a: !in {onnx.name = "a"}, %b: !in {onnx.name = "b"}, %c: !out {onnx.name = "c", ascend.output}) {
  %s = ascend.stream 0
  // CHECK: ascend.launch @matmul on %s(%a, %b, %c)
  ascend.launch @matmul on %s(%a, %b, %c) : (!in, !in, !out)
  func.return
}
