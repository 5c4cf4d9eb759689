// convert-graph-to-ascend, pool kernels in f16 and bf16: 16 lanes (a 32-byte block of a
// 2-byte type) per plane row. f16 takes its windows in f16. bf16 builds its plane in bf16 -
// DMA, vdup of the pad value, vtranspose: moves of bits - converts it to f32 for the
// windows (the vector unit has no bf16 vmax / vadd) and the result back to bf16.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_mp(
// CHECK-SAME:    template = "pool"
// CHECK:         %plane = ascend.alloc {{.*}} : memref<1x15x16x16xf16, "ub">
// CHECK-NEXT:    %acc = ascend.alloc {{.*}} : memref<1x7x7x16xf16, "ub">
// CHECK-NOT:     ascend.vcast
// CHECK:         ascend.vmax %{{.*}} : memref<1x7x7x8xf16
// CHECK-NOT:     ascend.vcast
// CHECK:         ascend.copy %{{.*}}, %y : memref<1x8x7x7xf16
func.func @mp(%x: tensor<1x8x14x14xf16>) -> tensor<1x8x7x7xf16> {
  %y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x14x14xf16>) -> tensor<1x8x7x7xf16> loc("mp")
  func.return %y : tensor<1x8x7x7xf16>
}

// -----

// CHECK-LABEL: ascend.kernel @k0_mp(
// CHECK-SAME:    template = "pool"
// CHECK-NEXT:    %[[NEG_INF:.*]] = arith.constant 0xff80 : bf16
// CHECK-NEXT:    %rows = ascend.alloc {{.*}} : memref<1x16x15x16xbf16, "ub">
// CHECK-NEXT:    %plane = ascend.alloc {{.*}} : memref<1x15x16x16xbf16, "ub">
// CHECK-NEXT:    %acc = ascend.alloc {{.*}} : memref<1x7x7x16xf32, "ub">
// CHECK-NEXT:    %out = ascend.alloc {{.*}} : memref<1x16x7x16xbf16, "ub">
// CHECK-NEXT:    %planef = ascend.alloc {{.*}} : memref<1x15x16x16xf32, "ub">
// CHECK-NEXT:    %accb = ascend.alloc {{.*}} : memref<1x7x7x16xbf16, "ub">
// CHECK:         ascend.vdup %[[NEG_INF]], %[[P:.*]] : bf16, memref<1x15x16x8xbf16, strided<[3840, 256, 16, 1]>, "ub">
// CHECK:         ascend.vtranspose %{{.*}} {perm = array<i64: 0, 2, 3, 1>} : memref<1x8x14x14xbf16
// CHECK-NEXT:    %[[PF:.*]] = memref.subview %planef
// CHECK-NEXT:    ascend.vcast %[[P]], %[[PF]] : memref<1x15x16x8xbf16, strided<[3840, 256, 16, 1]>, "ub">, memref<1x15x16x8xf32, strided<[3840, 256, 16, 1]>, "ub">
// CHECK:         ascend.vmax %{{.*}} : memref<1x7x7x8xf32
// CHECK:         ascend.vcast %[[A:.*]], %[[AB:.*]] : memref<1x7x7x8xf32, strided<[784, 112, 16, 1]>, "ub">, memref<1x7x7x8xbf16, strided<[784, 112, 16, 1]>, "ub">
// CHECK-NEXT:    %{{.*}} = memref.subview %out
// CHECK-NEXT:    ascend.vtranspose %[[AB]], %{{.*}} {perm = array<i64: 0, 3, 1, 2>} : memref<1x7x7x8xbf16
func.func @mp(%x: tensor<1x8x14x14xbf16>) -> tensor<1x8x7x7xbf16> {
  %y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x14x14xbf16>) -> tensor<1x8x7x7xbf16> loc("mp")
  func.return %y : tensor<1x8x7x7xbf16>
}

// -----

// An average: the mask and the divisors in f32 as well.
// CHECK-LABEL: ascend.kernel @k0_ap(
// CHECK:         %mask = ascend.alloc {{.*}} : memref<1x15x16x16xf32, "ub">
// CHECK-NEXT:    %cnt = ascend.alloc {{.*}} : memref<1x7x7x16xf32, "ub">
// CHECK:         ascend.vdiv %[[A:.*]], %{{.*}}, %[[A]] : memref<1x7x7x8xf32, strided<[784, 112, 16, 1]>, "ub">
// CHECK-NEXT:    %{{.*}} = memref.subview %accb
// CHECK-NEXT:    ascend.vcast %[[A]], %{{.*}} : memref<1x7x7x8xf32, strided<[784, 112, 16, 1]>, "ub">, memref<1x7x7x8xbf16
func.func @ap(%x: tensor<1x8x14x14xbf16>) -> tensor<1x8x7x7xbf16> {
  %y = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x14x14xbf16>) -> tensor<1x8x7x7xbf16> loc("ap")
  func.return %y : tensor<1x8x7x7xbf16>
}

// -----

// NC1HWC0 (C0 = 16): the rows go into the bf16 plane by DMA, whole; one vcast makes the
// plane f32, one makes the result bf16, which is stored as it lies.
// CHECK-LABEL: ascend.kernel @k0_mp5(
// CHECK:         ascend.copy %{{.*}}, %plane : memref<2x8x8x16xbf16, "gm"> to memref<2x8x8x16xbf16, "ub">
// CHECK:         ascend.vcast %plane, %planef : memref<2x8x8x16xbf16, "ub">, memref<2x8x8x16xf32, "ub">
// CHECK:         ascend.vmax %acc, %{{.*}}, %acc : memref<2x4x4x16xf32, "ub">
// CHECK:         ascend.vcast %acc, %accb : memref<2x4x4x16xf32, "ub">, memref<2x4x4x16xbf16, "ub">
// CHECK:         ascend.copy %accb, %{{.*}} : memref<2x4x4x16xbf16, "ub"> to memref<2x4x4x16xbf16, "gm">
func.func @mp5(%x: tensor<1x2x8x8x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>) -> tensor<1x2x4x4x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 32, 4, 4]>> {
  %y = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x8x8x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>) -> tensor<1x2x4x4x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 32, 4, 4]>> loc("mp5")
  func.return %y : tensor<1x2x4x4x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 32, 4, 4]>>
}
