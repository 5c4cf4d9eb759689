// An int8 cube kernel whose FIX pipe requantizes: c = saturate(round((a x b + bias) *
// scale + zero_point)) as int8, relu'd, for a 32x64 by 64x32 int8 product. The bias goes
// l1 -> bt and initialises l0c with the first mmad; the per-column scales go l1 -> fb and
// the FIX copy l0c -> gm reads them. Run by test/python/test_ascend_interpreter.py.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

!a = memref<32x64xi8, "gm">
!b = memref<64x32xi8, "gm">
!bias = memref<32xi32, "gm">
!scale = memref<32xf32, "gm">
!out = memref<32x32xi8, "gm">

// CHECK-LABEL: ascend.kernel @requant(
ascend.kernel @requant(%a: !a, %b: !b, %bias: !bias, %scale: !scale, %c: !out) attributes {core_type = "cube", block_dim = 1 : i64} {
  %a1 = ascend.alloc {offset = 0 : i64} : memref<32x64xi8, "l1">
  %b1 = ascend.alloc {offset = 2048 : i64} : memref<64x32xi8, "l1">
  %bias1 = ascend.alloc {offset = 4096 : i64} : memref<32xi32, "l1">
  %scale1 = ascend.alloc {offset = 4224 : i64} : memref<32xf32, "l1">
  // CHECK: %bt = ascend.alloc {offset = 0 : i64} : memref<32xi32, "bt">
  %bt = ascend.alloc {offset = 0 : i64} : memref<32xi32, "bt">
  // CHECK-NEXT: %fb = ascend.alloc {offset = 0 : i64} : memref<32xf32, "fb">
  %fb = ascend.alloc {offset = 0 : i64} : memref<32xf32, "fb">
  %a0 = ascend.alloc {offset = 0 : i64} : memref<32x64xi8, "l0a">
  %b0 = ascend.alloc {offset = 0 : i64} : memref<64x32xi8, "l0b">
  %c0 = ascend.alloc {offset = 0 : i64} : memref<32x32xi32, "l0c">
  ascend.copy %a, %a1 : !a to memref<32x64xi8, "l1">
  ascend.copy %b, %b1 : !b to memref<64x32xi8, "l1">
  ascend.copy %bias, %bias1 : !bias to memref<32xi32, "l1">
  ascend.copy %scale, %scale1 : !scale to memref<32xf32, "l1">
  ascend.set_flag MTE2 -> MTE1 id 0
  ascend.wait_flag MTE2 -> MTE1 id 0
  // CHECK: ascend.copy %bias1, %bt : memref<32xi32, "l1"> to memref<32xi32, "bt">
  ascend.copy %bias1, %bt : memref<32xi32, "l1"> to memref<32xi32, "bt">
  // CHECK-NEXT: ascend.copy %scale1, %fb : memref<32xf32, "l1"> to memref<32xf32, "fb">
  ascend.copy %scale1, %fb : memref<32xf32, "l1"> to memref<32xf32, "fb">
  ascend.copy %a1, %a0 : memref<32x64xi8, "l1"> to memref<32x64xi8, "l0a">
  ascend.copy %b1, %b0 : memref<64x32xi8, "l1"> to memref<64x32xi8, "l0b">
  ascend.set_flag MTE1 -> M id 0
  ascend.wait_flag MTE1 -> M id 0
  // CHECK: ascend.mmad %a0, %b0, %c0, %bt {init, bias_axis = 1 : i64} : memref<32x64xi8, "l0a">, memref<64x32xi8, "l0b">, memref<32x32xi32, "l0c">, memref<32xi32, "bt">
  ascend.mmad %a0, %b0, %c0, %bt {init, bias_axis = 1 : i64} : memref<32x64xi8, "l0a">, memref<64x32xi8, "l0b">, memref<32x32xi32, "l0c">, memref<32xi32, "bt">
  ascend.set_flag M -> FIX id 0
  ascend.wait_flag M -> FIX id 0
  // CHECK: ascend.copy %c0, %c, %fb {relu, quant_axis = 1 : i64, zero_point = 3 : i64} : memref<32x32xi32, "l0c"> to memref<32x32xi8, "gm"> quant memref<32xf32, "fb">
  ascend.copy %c0, %c, %fb {relu, quant_axis = 1 : i64, zero_point = 3 : i64} : memref<32x32xi32, "l0c"> to !out quant memref<32xf32, "fb">
  ascend.return
}

// CHECK-LABEL: func.func @main(
func.func @main(%a: !a {onnx.name = "a"}, %b: !b {onnx.name = "b"}, %bias: !bias {onnx.name = "bias"},
                %scale: !scale {onnx.name = "scale"}, %c: !out {onnx.name = "c", ascend.output}) {
  %s = ascend.stream 0
  ascend.launch @requant on %s(%a, %b, %bias, %scale, %c) : (!a, !b, !bias, !scale, !out)
  func.return
}
