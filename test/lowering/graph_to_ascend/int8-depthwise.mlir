// convert-graph-to-ascend on an int8 depthwise convolution (ShuffleNet's 3x3 ones) with a
// per-channel requantize: the vector depthwise kernel (lowering/templates/cube/depthwise.py).
// It moves the box and the weights in int8 (32 channels: a 32-byte block), pads with the
// input's zero point (offset_x), converts them to f32 for the taps (exact for int8), converts
// the window sums to i32 to add the i32 bias, back to f32 once, and requantizes in f32 as the
// graph does. No FIX stage, no gm scratch for an i32 tile.
// RUN: geir-opt %s --split-input-file -p graph-fuse,convert-graph-to-ascend | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_dw(
// CHECK-SAME:    %b: memref<40xi32, "gm">, %s: memref<1x40x1x1xf32, "gm">, %z: memref<i8, "gm">, %q: memref<1x40x14x14xi8, "gm">)
// CHECK-SAME:    attributes {block_dim = 28 : i64, core_type = "vector", template = "depthwise"}
// CHECK:         %xt = ascend.alloc {{.*}} : memref<3x30x32xi8, "ub">
// CHECK:         %bias = ascend.alloc {{.*}} : memref<1x1x32xi32, "ub">
// CHECK-NEXT:    %bb = ascend.alloc {{.*}} : memref<1x14x32xi32, "ub">
// CHECK-NEXT:    %acci = ascend.alloc {{.*}} : memref<1x14x32xi32, "ub">
// CHECK-NEXT:    %[[ZP:.*]] = arith.constant -128 : i8
// CHECK:         ascend.copy %{{.*}}, %bias : memref<1x1x32xi32, strided<[40, 40, 1]>, "gm"> to memref<1x1x32xi32, "ub">
// CHECK:         ascend.vdup %[[ZP]], %xt : i8, memref<3x30x32xi8, "ub">
// CHECK:         ascend.vcast %xt, %xtf : memref<3x30x32xi8, "ub">, memref<3x30x32xf32, "ub">
// CHECK-NEXT:    ascend.vcast %wt, %wtf : memref<9x1x32xi8, "ub">, memref<9x1x32xf32, "ub">
// CHECK:         ascend.vmul %{{.*}}, %wb, %[[ACC:.*]] : memref<1x14x32xf32, strided<[1920, 64, 1]>, "ub">, memref<1x14x32xf32, "ub">, memref<1x14x32xf32, "ub">
// CHECK-COUNT-8: ascend.vadd %[[ACC]], %tmp, %[[ACC]] : memref<1x14x32xf32, "ub">
// CHECK-NEXT:    ascend.vcast %[[ACC]], %acci {round = "rint"} : memref<1x14x32xf32, "ub">, memref<1x14x32xi32, "ub">
// CHECK-NEXT:    ascend.vbrcb %bias, %bb : memref<1x1x32xi32, "ub">, memref<1x14x32xi32, "ub">
// CHECK-NEXT:    ascend.vadd %acci, %bb, %acci : memref<1x14x32xi32, "ub">
// CHECK-NEXT:    ascend.vcast %acci, %[[ACC]] : memref<1x14x32xi32, "ub">, memref<1x14x32xf32, "ub">
// CHECK-NEXT:    %[[RAW:.*]] = memref.subview %v0
// CHECK-NEXT:    ascend.vtranspose %{{.*}}, %[[RAW]] : memref<14x32xf32, "ub">, memref<32x14xf32, strided<[16, 1]>, "ub">
// CHECK-NEXT:    ascend.vbrcb %{{.*}}, %[[SCALE:.*]] : memref<32x1xf32, strided<[8, 1]>, "ub">, memref<32x16xf32, "ub">
// CHECK-NEXT:    ascend.vmul %v0, %[[SCALE]], %v0 : memref<32x16xf32, "ub">
// CHECK-NEXT:    ascend.vround %v0, %v0
// CHECK-NEXT:    ascend.vadds %v0, %{{.*}}, %v0
// CHECK-NEXT:    ascend.vmaxs %v0, %{{.*}}, %v0
// CHECK-NEXT:    ascend.vmins %v0, %{{.*}}, %v0
// CHECK-NEXT:    %[[OUT:.*]] = memref.subview %out0
// CHECK-NEXT:    ascend.vcast %v0, %[[OUT]] {round = "rint"} : memref<32x16xf32, "ub">, memref<32x16xi8, strided<[32, 1]>, "ub">
// CHECK-NOT:     ascend.mmad
func.func @dw(%x: tensor<1x40x28x28xi8> {onnx.name = "x"}, %w: tensor<40x1x3x3xi8> {onnx.name = "w"}) -> (tensor<1x40x14x14xi8> {onnx.name = "y"}) {
  %b = graph.constant dense<1000> : tensor<40xi32>
  %s = graph.constant dense<0.0039> : tensor<1x40x1x1xf32>
  %z = graph.constant dense<-128> : tensor<i8>
  %y = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, group = 40 : i64, offset_x = -128 : i64} : (tensor<1x40x28x28xi8>, tensor<40x1x3x3xi8>, tensor<40xi32>) -> tensor<1x40x14x14xi32> loc("dw")
  %q = graph.requantize %y, %s, %z : (tensor<1x40x14x14xi32>, tensor<1x40x1x1xf32>, tensor<i8>) -> tensor<1x40x14x14xi8> loc("q")
  func.return %q : tensor<1x40x14x14xi8>
}

// -----

// Not taken: the biased i32 sum itself is the output (no f32 value to requantize or
// dequantize), which the cube kernel computes and writes in i32.
// CHECK-LABEL: ascend.kernel @k0_dw(
// CHECK-SAME:    core_type = "mix", template = "conv"
// CHECK:         ascend.mmad
// CHECK-NOT:     ascend.vtranspose
func.func @dw(%x: tensor<1x40x28x28xi8> {onnx.name = "x"}, %w: tensor<40x1x3x3xi8> {onnx.name = "w"}) -> (tensor<1x40x14x14xi32> {onnx.name = "y"}) {
  %b = graph.constant dense<1000> : tensor<40xi32>
  %y = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, group = 40 : i64, offset_x = -128 : i64} : (tensor<1x40x28x28xi8>, tensor<40x1x3x3xi8>, tensor<40xi32>) -> tensor<1x40x14x14xi32> loc("dw")
  func.return %y : tensor<1x40x14x14xi32>
}
