// convert-graph-to-ascend, the vector depthwise kernel in f16 and bf16: 16 channels (a
// 32-byte block of a 2-byte type) per tile. f16 multiplies and adds in f16; bf16 moves its
// box and weights in bf16 (copies, vdup, vtranspose), converts them to f32 for the taps (the
// vector unit has no bf16 arithmetic) and converts the result back before storing it.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_dw(
// CHECK-SAME:    attributes {block_dim = 42 : i64, core_type = "vector", template = "depthwise"}
// CHECK:         %xt = ascend.alloc {{.*}} : memref<3x30x16xf16, "ub">
// CHECK-NEXT:    %acc = ascend.alloc {{.*}} : memref<14x16xf16, "ub">
// CHECK-NOT:     ascend.vcast
// CHECK:         ascend.vtranspose %{{.*}}, %wt {perm = array<i64: 2, 1, 0>} : memref<16x1x9xf16, strided<[16, 16, 1]>, "ub">, memref<9x1x16xf16, "ub">
// CHECK-NEXT:    %{{.*}} = memref.subview %xt
// CHECK-NEXT:    %[[W0:.*]] = memref.subview %wt[0, 0, 0] [1, 1, 16] [1, 1, 1]
// CHECK-NEXT:    ascend.vbrcb %[[W0]], %wb
// CHECK-NEXT:    ascend.vmul %{{.*}}, %wb, %{{.*}} : memref<1x14x16xf16, strided<[960, 32, 1]>, "ub">, memref<1x14x16xf16, "ub">, memref<1x14x16xf16, "ub">
// CHECK-NOT:     ascend.vcast
// CHECK:         ascend.vtranspose %acc, %{{.*}} : memref<14x16xf16, "ub">, memref<16x14xf16, strided<[16, 1]>, "ub">
func.func @dw(%x: tensor<1x40x28x28xf16> {onnx.name = "x"}, %w: tensor<40x1x3x3xf16> {onnx.name = "w"}) -> (tensor<1x40x14x14xf16> {onnx.name = "y"}) {
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, group = 40 : i64} : (tensor<1x40x28x28xf16>, tensor<40x1x3x3xf16>) -> tensor<1x40x14x14xf16> loc("dw")
  func.return %y : tensor<1x40x14x14xf16>
}

// -----

// CHECK-LABEL: ascend.kernel @k0_dw(
// CHECK-SAME:    attributes {block_dim = 42 : i64, core_type = "vector", template = "depthwise"}
// CHECK-NEXT:    %v0 = ascend.alloc {{.*}} : memref<16x16xf32, "ub">
// CHECK-NEXT:    %out0 = ascend.alloc {{.*}} : memref<16x16xbf16, "ub">
// CHECK-NEXT:    %box = ascend.alloc {{.*}} : memref<16x3x32xbf16, "ub">
// CHECK-NEXT:    %xt = ascend.alloc {{.*}} : memref<3x30x16xbf16, "ub">
// CHECK-NEXT:    %acc = ascend.alloc {{.*}} : memref<14x16xf32, "ub">
// CHECK-NEXT:    %tmp = ascend.alloc {{.*}} : memref<1x14x16xf32, "ub">
// CHECK-NEXT:    %wb = ascend.alloc {{.*}} : memref<1x14x16xf32, "ub">
// CHECK-NEXT:    %wl = ascend.alloc {{.*}} : memref<16x1x16xbf16, "ub">
// CHECK-NEXT:    %wt = ascend.alloc {{.*}} : memref<9x1x16xbf16, "ub">
// CHECK-NEXT:    %xtf = ascend.alloc {{.*}} : memref<3x30x16xf32, "ub">
// CHECK-NEXT:    %wtf = ascend.alloc {{.*}} : memref<9x1x16xf32, "ub">
// CHECK:         ascend.copy %{{.*}}, %box {pad} : memref<16x2x28xbf16
// CHECK:         ascend.vdup %{{.*}}, %xt : bf16, memref<3x30x16xbf16, "ub">
// CHECK-NEXT:    %{{.*}} = memref.subview %box
// CHECK-NEXT:    %{{.*}} = memref.subview %xt
// CHECK-NEXT:    ascend.vtranspose %{{.*}}, %{{.*}} {perm = array<i64: 1, 2, 0>} : memref<16x2x28xbf16
// CHECK-NEXT:    %{{.*}} = memref.subview %wl
// CHECK-NEXT:    ascend.vtranspose %{{.*}}, %wt {perm = array<i64: 2, 1, 0>} : memref<16x1x9xbf16, strided<[16, 16, 1]>, "ub">, memref<9x1x16xbf16, "ub">
// CHECK-NEXT:    ascend.vcast %xt, %xtf : memref<3x30x16xbf16, "ub">, memref<3x30x16xf32, "ub">
// CHECK-NEXT:    ascend.vcast %wt, %wtf : memref<9x1x16xbf16, "ub">, memref<9x1x16xf32, "ub">
// CHECK-NEXT:    %{{.*}} = memref.subview %xtf
// CHECK-NEXT:    %[[W0:.*]] = memref.subview %wtf[0, 0, 0] [1, 1, 16] [1, 1, 1]
// CHECK-NEXT:    ascend.vbrcb %[[W0]], %wb : memref<1x1x16xf32, strided<[16, 16, 1]>, "ub">, memref<1x14x16xf32, "ub">
// CHECK-NEXT:    ascend.vmul %{{.*}}, %wb, %{{.*}} : memref<1x14x16xf32, strided<[960, 32, 1]>, "ub">, memref<1x14x16xf32, "ub">, memref<1x14x16xf32, "ub">
// CHECK:         ascend.vtranspose %acc, %{{.*}} : memref<14x16xf32, "ub">, memref<16x14xf32, strided<[16, 1]>, "ub">
// CHECK:         ascend.vcast %{{.*}}, %[[OUT:.*]] : memref<16x16xf32, "ub">, memref<16x16xbf16, "ub">
// CHECK:         ascend.copy %[[OUT]], %{{.*}} {pad} : memref<16x16xbf16, "ub"> to memref<16x14xbf16, strided<[196, 1], offset: ?>, "gm">
func.func @dw(%x: tensor<1x40x28x28xbf16> {onnx.name = "x"}, %w: tensor<40x1x3x3xbf16> {onnx.name = "w"}) -> (tensor<1x40x14x14xbf16> {onnx.name = "y"}) {
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, group = 40 : i64} : (tensor<1x40x28x28xbf16>, tensor<40x1x3x3xbf16>) -> tensor<1x40x14x14xbf16> loc("dw")
  func.return %y : tensor<1x40x14x14xbf16>
}
