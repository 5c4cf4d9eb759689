// bf16 in the ascend dialect: the cube multiplies bf16 and accumulates in f32, the FIX copy
// rounds l0c's f32 to bf16 on the way out; the vector unit moves bf16 (copy, dup, broadcast,
// transpose) and converts it to and from f32 (vcast), and computes in f32 in between.
// The verifier errors for what the modeled 910B cannot do are in invalid.mlir. Run by
// test/python/test_low_precision.py.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: ascend.kernel @cube_bf16(
ascend.kernel @cube_bf16(%a: memref<16x32xbf16, "gm">, %b: memref<32x16xbf16, "gm">, %y: memref<16x16xbf16, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a1 = ascend.alloc {offset = 0 : i64} : memref<16x32xbf16, "l1">
  %b1 = ascend.alloc {offset = 1024 : i64} : memref<32x16xbf16, "l1">
  %a0 = ascend.alloc {offset = 0 : i64} : memref<16x32xbf16, "l0a">
  %b0 = ascend.alloc {offset = 0 : i64} : memref<32x16xbf16, "l0b">
  %c0 = ascend.alloc {offset = 0 : i64} : memref<16x16xf32, "l0c">
  ascend.copy %a, %a1 : memref<16x32xbf16, "gm"> to memref<16x32xbf16, "l1">
  ascend.copy %b, %b1 : memref<32x16xbf16, "gm"> to memref<32x16xbf16, "l1">
  ascend.set_flag MTE2 -> MTE1 id 0
  ascend.wait_flag MTE2 -> MTE1 id 0
  ascend.copy %a1, %a0 : memref<16x32xbf16, "l1"> to memref<16x32xbf16, "l0a">
  ascend.copy %b1, %b0 : memref<32x16xbf16, "l1"> to memref<32x16xbf16, "l0b">
  ascend.set_flag MTE1 -> M id 0
  ascend.wait_flag MTE1 -> M id 0
  // CHECK: ascend.mmad %a0, %b0, %c0 {init} : memref<16x32xbf16, "l0a">, memref<32x16xbf16, "l0b">, memref<16x16xf32, "l0c">
  ascend.mmad %a0, %b0, %c0 {init} : memref<16x32xbf16, "l0a">, memref<32x16xbf16, "l0b">, memref<16x16xf32, "l0c">
  ascend.set_flag M -> FIX id 0
  ascend.wait_flag M -> FIX id 0
  // CHECK: ascend.copy %c0, %y {relu} : memref<16x16xf32, "l0c"> to memref<16x16xbf16, "gm">
  ascend.copy %c0, %y {relu} : memref<16x16xf32, "l0c"> to memref<16x16xbf16, "gm">
  ascend.return
}

// CHECK-LABEL: ascend.kernel @vector_bf16(
ascend.kernel @vector_bf16(%x: memref<16x32xbf16, "gm">, %y: memref<32x16xbf16, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %h = ascend.alloc {offset = 0 : i64} : memref<16x32xbf16, "ub">
  %f = ascend.alloc {offset = 1024 : i64} : memref<16x32xf32, "ub">
  %t = ascend.alloc {offset = 3072 : i64} : memref<32x16xbf16, "ub">
  %c = ascend.alloc {offset = 4096 : i64} : memref<16x16xbf16, "ub">
  %one = arith.constant 1.000000e+00 : bf16
  %two = arith.constant 2.000000e+00 : f32
  ascend.copy %x, %h : memref<16x32xbf16, "gm"> to memref<16x32xbf16, "ub">
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  // CHECK:      ascend.vcast %h, %f : memref<16x32xbf16, "ub">, memref<16x32xf32, "ub">
  // CHECK-NEXT: ascend.vmuls %f, %two, %f : memref<16x32xf32, "ub">, f32, memref<16x32xf32, "ub">
  // CHECK-NEXT: ascend.vcast %f, %h : memref<16x32xf32, "ub">, memref<16x32xbf16, "ub">
  // CHECK-NEXT: ascend.vcopy %h, %h : memref<16x32xbf16, "ub">
  // CHECK-NEXT: ascend.vdup %one, %c : bf16, memref<16x16xbf16, "ub">
  // CHECK-NEXT: %c1 = memref.subview %c[0, 0] [16, 1] [1, 1]
  // CHECK-NEXT: ascend.vbrcb %c1, %c : memref<16x1xbf16, strided<[16, 1]>, "ub">, memref<16x16xbf16, "ub">
  // CHECK-NEXT: ascend.vtranspose %h, %t : memref<16x32xbf16, "ub">, memref<32x16xbf16, "ub">
  ascend.vcast %h, %f : memref<16x32xbf16, "ub">, memref<16x32xf32, "ub">
  ascend.vmuls %f, %two, %f : memref<16x32xf32, "ub">, f32, memref<16x32xf32, "ub">
  ascend.vcast %f, %h : memref<16x32xf32, "ub">, memref<16x32xbf16, "ub">
  ascend.vcopy %h, %h : memref<16x32xbf16, "ub">
  ascend.vdup %one, %c : bf16, memref<16x16xbf16, "ub">
  %c1 = memref.subview %c[0, 0] [16, 1] [1, 1] : memref<16x16xbf16, "ub"> to memref<16x1xbf16, strided<[16, 1]>, "ub">
  ascend.vbrcb %c1, %c : memref<16x1xbf16, strided<[16, 1]>, "ub">, memref<16x16xbf16, "ub">
  ascend.vtranspose %h, %t : memref<16x32xbf16, "ub">, memref<32x16xbf16, "ub">
  ascend.set_flag V -> MTE3 id 0
  ascend.wait_flag V -> MTE3 id 0
  ascend.copy %t, %y : memref<32x16xbf16, "ub"> to memref<32x16xbf16, "gm">
  ascend.return
}

// CHECK-LABEL: func.func @main(
func.func @main(%a: memref<16x32xbf16, "gm"> {onnx.name = "a"}, %b: memref<32x16xbf16, "gm"> {onnx.name = "b"},
                %x: memref<16x32xbf16, "gm"> {onnx.name = "x"},
                %y: memref<16x16xbf16, "gm"> {onnx.name = "y", ascend.output},
                %t: memref<32x16xbf16, "gm"> {onnx.name = "t", ascend.output}) {
  %s = ascend.stream 0
  ascend.launch @cube_bf16 on %s(%a, %b, %y) : (memref<16x32xbf16, "gm">, memref<32x16xbf16, "gm">, memref<16x16xbf16, "gm">)
  ascend.launch @vector_bf16 on %s(%x, %t) : (memref<16x32xbf16, "gm">, memref<32x16xbf16, "gm">)
  func.return
}
