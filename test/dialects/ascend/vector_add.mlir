// A vector kernel: z = x + y for 64x256 f16, 2 blocks of 32 rows, each in
// 16-row tiles through ub (one tile per scf.for step), with the pipe flags a
// single-buffered loop needs. Run by test/python/test_ascend_interpreter.py.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

!gm = memref<64x256xf16, "gm">
!tile = memref<16x256xf16, strided<[256, 1], offset: ?>, "gm">
!ub = memref<16x256xf16, "ub">

// CHECK-LABEL: ascend.kernel @add(
// CHECK-SAME:    %x: memref<64x256xf16, "gm">, %y: memref<64x256xf16, "gm">, %z: memref<64x256xf16, "gm">)
// CHECK-SAME:    attributes {block_dim = 2 : i64, core_type = "vector"} {
ascend.kernel @add(%x: !gm, %y: !gm, %z: !gm) attributes {core_type = "vector", block_dim = 2 : i64} {
  // CHECK-NEXT: %block = ascend.block_idx
  %block = ascend.block_idx
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %base = arith.muli %block, %c32 : index
  // CHECK: %xu = ascend.alloc {offset = 0 : i64} : memref<16x256xf16, "ub">
  %xu = ascend.alloc {offset = 0 : i64} : !ub
  %yu = ascend.alloc {offset = 8192 : i64} : !ub
  %zu = ascend.alloc {offset = 16384 : i64} : !ub
  // CHECK: ascend.set_flag MTE3 -> MTE2 id 0
  ascend.set_flag MTE3 -> MTE2 id 0
  scf.for %i = %c0 to %c32 step %c16 {
    %row = arith.addi %base, %i : index
    // CHECK: memref.subview %x[%row, 0] [16, 256] [1, 1]
    %xt = memref.subview %x[%row, 0] [16, 256] [1, 1] : !gm to !tile
    %yt = memref.subview %y[%row, 0] [16, 256] [1, 1] : !gm to !tile
    %zt = memref.subview %z[%row, 0] [16, 256] [1, 1] : !gm to !tile
    // CHECK: ascend.wait_flag MTE3 -> MTE2 id 0
    ascend.wait_flag MTE3 -> MTE2 id 0
    // CHECK-NEXT: ascend.copy %xt, %xu : memref<16x256xf16, strided<[256, 1], offset: ?>, "gm"> to memref<16x256xf16, "ub">
    ascend.copy %xt, %xu : !tile to !ub
    ascend.copy %yt, %yu : !tile to !ub
    ascend.set_flag MTE2 -> V id 0
    ascend.wait_flag MTE2 -> V id 0
    // CHECK: ascend.vadd %xu, %yu, %zu : memref<16x256xf16, "ub">
    ascend.vadd %xu, %yu, %zu : !ub
    ascend.set_flag V -> MTE3 id 0
    ascend.wait_flag V -> MTE3 id 0
    // CHECK: ascend.copy %zu, %zt : memref<16x256xf16, "ub"> to memref<16x256xf16, strided<[256, 1], offset: ?>, "gm">
    ascend.copy %zu, %zt : !ub to !tile
    ascend.set_flag MTE3 -> MTE2 id 0
  }
  ascend.wait_flag MTE3 -> MTE2 id 0
  // CHECK: ascend.return
  ascend.return
}

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %x: memref<64x256xf16, "gm"> {onnx.name = "x"}
// CHECK-SAME:    %z: memref<64x256xf16, "gm"> {onnx.name = "z", ascend.output})
func.func @main(%x: !gm {onnx.name = "x"}, %y: !gm {onnx.name = "y"}, %z: !gm {onnx.name = "z", ascend.output}) {
  // CHECK-NEXT: %s = ascend.stream 0
  %s = ascend.stream 0
  // CHECK-NEXT: ascend.launch @add on %s(%x, %y, %z) : (memref<64x256xf16, "gm">, memref<64x256xf16, "gm">, memref<64x256xf16, "gm">)
  ascend.launch @add on %s(%x, %y, %z) : (!gm, !gm, !gm)
  func.return
}
