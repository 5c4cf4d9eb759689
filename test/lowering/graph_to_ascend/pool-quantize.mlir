// convert-graph-to-ascend on graph-fuse's "pool-quantize" groups: an f16 pool whose one reader
// quantizes it is one pool kernel that quantizes its result tile before it leaves, as the graph
// does: the f16 result in f32 (exact), vdiv by the scale's tile, vround, + zero point, the
// clamp; the integers back in f16 (exact), transposed to NCHW rows, vcast {round = "rint"} to
// int8 and copied out. No f16 map is written, unless it is read in float too (then both are).
// RUN: geir-opt %s --split-input-file -p graph-fuse,convert-graph-to-ascend | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_fusion(
// CHECK-SAME:    %q: memref<1x24x6x6xi8, "gm">)
// CHECK-SAME:    core_type = "vector", template = "pool"
// CHECK:         %acc = ascend.alloc {{.*}} : memref<2x6x6x16xf16, "ub">
// CHECK:         %outq = ascend.alloc {{.*}} : memref<2x16x6x32xi8, "ub">
// CHECK-NEXT:    %accf = ascend.alloc {{.*}} : memref<2x6x6x16xf32, "ub">
// CHECK-NEXT:    %qscale = ascend.alloc {{.*}} : memref<2x6x6x16xf32, "ub">
// CHECK-NEXT:    %[[SCALE:.*]] = arith.constant 5.000000e-02 : f32
// CHECK-NEXT:    %[[ZP:.*]] = arith.constant -1.280000e+02 : f32
// CHECK-NEXT:    %[[MAX:.*]] = arith.constant 1.270000e+02 : f32
// CHECK:         ascend.vmax
// CHECK:         ascend.vcast %[[ACC:.*]], %[[W:.*]] : memref<{{.*}}xf16, {{.*}}"ub">, memref<{{.*}}xf32, {{.*}}"ub">
// CHECK-NEXT:    ascend.vdup %[[SCALE]], %[[S:.*]] : f32,
// CHECK-NEXT:    ascend.vdiv %[[W]], %[[S]], %[[W]]
// CHECK-NEXT:    ascend.vround %[[W]], %[[W]]
// CHECK-NEXT:    ascend.vadds %[[W]], %[[ZP]], %[[W]]
// CHECK-NEXT:    ascend.vmaxs %[[W]], %[[ZP]], %[[W]]
// CHECK-NEXT:    ascend.vmins %[[W]], %[[MAX]], %[[W]]
// CHECK-NEXT:    ascend.vcast %[[W]], %[[ACC]]
// CHECK:         ascend.vtranspose %[[ACC]], %[[OUT:.*]] {perm
// CHECK:         ascend.vcast %[[OUT]], %[[OQ:.*]] {round = "rint"} : memref<{{.*}}xf16, {{.*}}"ub">, memref<{{.*}}xi8, {{.*}}"ub">
// CHECK:         ascend.copy %{{.*}}, %{{.*}} : memref<2x12x6x6xi8, {{.*}}"ub"> to memref<2x12x6x6xi8, "gm">
// CHECK-NOT:     ascend.kernel
func.func @max_pool_quantize(%x: tensor<1x24x13x13xf16>) -> tensor<1x24x6x6xi8> {
  %s = graph.constant dense<0.05> : tensor<f32>
  %z = graph.constant dense<-128> : tensor<i8>
  %p = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x24x13x13xf16>) -> tensor<1x24x6x6xf16>
  %c = graph.cast %p {to = f32} : (tensor<1x24x6x6xf16>) -> tensor<1x24x6x6xf32>
  %q = graph.quantize %c, %s, %z : (tensor<1x24x6x6xf32>, tensor<f32>, tensor<i8>) -> tensor<1x24x6x6xi8>
  func.return %q : tensor<1x24x6x6xi8>
}

// -----
// The f16 result read in float too (Inception-v2's stem pool): the kernel writes both. The
// transposed f16 tile stays for its store; a copy of it in f32 is quantized (its own f32 tile
// and scale, in the transposed shape) and converted to int8.
// CHECK-LABEL: ascend.kernel @k0_fusion(
// CHECK-SAME:    %p: memref<1x24x6x6xf16, "gm">, %q: memref<1x24x6x6xi8, "gm">)
// CHECK-SAME:    core_type = "vector", template = "pool"
// CHECK:         %out = ascend.alloc {{.*}} : memref<2x16x6x16xf16, "ub">
// CHECK-NEXT:    %outq = ascend.alloc {{.*}} : memref<2x16x6x32xi8, "ub">
// CHECK-NEXT:    %accf = ascend.alloc {{.*}} : memref<2x16x6x16xf32, "ub">
// CHECK-NEXT:    %qscale = ascend.alloc {{.*}} : memref<2x16x6x16xf32, "ub">
// CHECK:         ascend.vtranspose %{{.*}}, %[[OUT:.*]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    %[[W:.*]] = memref.subview %accf
// CHECK-NEXT:    %[[S:.*]] = memref.subview %qscale
// CHECK-NEXT:    ascend.vcast %[[OUT]], %[[W]] : memref<2x12x6x6xf16, {{.*}}"ub">, memref<2x12x6x6xf32, {{.*}}"ub">
// CHECK-NEXT:    ascend.vdup %{{.*}}, %[[S]]
// CHECK-NEXT:    ascend.vdiv %[[W]], %[[S]], %[[W]]
// CHECK-NEXT:    ascend.vround %[[W]], %[[W]]
// CHECK-NEXT:    ascend.vadds %[[W]]
// CHECK-NEXT:    ascend.vmaxs %[[W]]
// CHECK-NEXT:    ascend.vmins %[[W]]
// CHECK-NEXT:    %[[OQ:.*]] = memref.subview %outq
// CHECK-NEXT:    ascend.vcast %[[W]], %[[OQ]] {round = "rint"} : memref<2x12x6x6xf32, {{.*}}"ub">, memref<2x12x6x6xi8, {{.*}}"ub">
// CHECK:         ascend.copy %{{.*}}, %{{.*}} : memref<2x12x6x6xi8, {{.*}}"ub"> to memref<2x12x6x6xi8, "gm">
// CHECK-NEXT:    %[[F:.*]] = memref.subview %out
// CHECK-NEXT:    ascend.copy %[[F]], %{{.*}} : memref<2x12x6x6xf16, {{.*}}"ub"> to memref<2x12x6x6xf16, "gm">
// CHECK-NOT:     ascend.kernel
func.func @max_pool_quantize_kept(%x: tensor<1x24x13x13xf16>) -> (tensor<1x24x6x6xf16>, tensor<1x24x6x6xi8>) {
  %s = graph.constant dense<0.05> : tensor<f32>
  %z = graph.constant dense<-128> : tensor<i8>
  %p = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x24x13x13xf16>) -> tensor<1x24x6x6xf16>
  %c = graph.cast %p {to = f32} : (tensor<1x24x6x6xf16>) -> tensor<1x24x6x6xf32>
  %q = graph.quantize %c, %s, %z : (tensor<1x24x6x6xf32>, tensor<f32>, tensor<i8>) -> tensor<1x24x6x6xi8>
  func.return %p, %q : tensor<1x24x6x6xf16>, tensor<1x24x6x6xi8>
}

// -----
// An f32 average pool (must_keep_origin_dtype): the windows' sums divided by the counts, then
// the same quantize on the f32 result itself; a zero point of 0 adds nothing.
// CHECK-LABEL: ascend.kernel @k0_fusion(
// CHECK-SAME:    template = "pool"
// CHECK-NOT:     %accf
// CHECK:         ascend.vdiv %acc, %cntb, %acc : memref<2x4x4x8xf32, "ub">
// CHECK-NEXT:    ascend.vdup %{{.*}}, %qscale
// CHECK-NEXT:    ascend.vdiv %acc, %qscale, %acc
// CHECK-NEXT:    ascend.vround %acc, %acc
// CHECK-NEXT:    ascend.vmaxs %acc
// CHECK-NEXT:    ascend.vmins %acc
// CHECK:         ascend.vtranspose %acc, %[[OUT:.*]] {perm
// CHECK:         ascend.vcast %[[OUT]], %{{.*}} {round = "rint"} : memref<{{.*}}xf32, {{.*}}"ub">, memref<{{.*}}xi8, {{.*}}"ub">
// CHECK-NOT:     ascend.kernel
func.func @avg_pool_quantize(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xi8> {
  %s = graph.constant dense<0.02> : tensor<f32>
  %z = graph.constant dense<0> : tensor<i8>
  %p = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  %q = graph.quantize %p, %s, %z : (tensor<1x16x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x16x4x4xi8>
  func.return %q : tensor<1x16x4x4xi8>
}

// -----
// A scale per channel: the pool and the quantize stay two kernels (the pool template
// quantizes by one known scale).
// CHECK-LABEL: ascend.kernel @k0_max_pool(
// CHECK-SAME:    template = "pool"
// CHECK:       ascend.kernel @k1_fusion(
// CHECK-NOT:     template = "pool"
func.func @pool_per_channel_scale(%x: tensor<1x16x8x8xf16>) -> tensor<1x16x4x4xi8> {
  %s = graph.constant dense<0.02> : tensor<1x16x1x1xf32>
  %z = graph.constant dense<0> : tensor<i8>
  %mp = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf16>) -> tensor<1x16x4x4xf16>
  %c = graph.cast %mp {to = f32} : (tensor<1x16x4x4xf16>) -> tensor<1x16x4x4xf32>
  %q = graph.quantize %c, %s, %z : (tensor<1x16x4x4xf32>, tensor<1x16x1x1xf32>, tensor<i8>) -> tensor<1x16x4x4xi8>
  func.return %q : tensor<1x16x4x4xi8>
}

// -----

// A global pool flattened for the classifier (f32: quantized in place): the quantized result
// is written as the pool's [N, C, 1, 1] through a view of the [N, C] output (a reshape keeps
// the bytes' order).
// CHECK-LABEL: ascend.kernel @k0_fusion(
// CHECK-SAME:    %q: memref<2x64xi8, "gm">)
// CHECK-SAME:    core_type = "vector", template = "pool"
// CHECK:         %[[FLAT:.*]] = memref.collapse_shape %q {{.*}} into memref<128xi8, "gm">
// CHECK-NEXT:    %[[Y:.*]] = memref.expand_shape %[[FLAT]] {{.*}} output_shape [16, 8, 1, 1] : memref<128xi8, "gm"> into memref<16x8x1x1xi8, "gm">
// CHECK:         ascend.vcast %{{.*}}, %[[OQ:.*]] {round = "rint"}
// CHECK:         ascend.copy %{{.*}}, %[[Y]] : memref<16x8x1x1xi8, {{.*}}"ub"> to memref<16x8x1x1xi8, "gm">
// CHECK-NOT:     ascend.kernel
func.func @main(%x: tensor<2x64x7x7xf32> {onnx.name = "x"}) -> (tensor<2x64xi8> {onnx.name = "q"}) {
  %s = graph.constant dense<0.05> : tensor<f32>
  %zp = graph.constant dense<-128> : tensor<i8>
  %shape = graph.constant dense<[2, 64]> : tensor<2xi64>
  %p = graph.avg_pool %x {kernel_shape = array<i64: 7, 7>} : (tensor<2x64x7x7xf32>) -> tensor<2x64x1x1xf32>
  %r = graph.reshape %p, %shape : (tensor<2x64x1x1xf32>, tensor<2xi64>) -> tensor<2x64xf32>
  %q = graph.quantize %r, %s, %zp : (tensor<2x64xf32>, tensor<f32>, tensor<i8>) -> tensor<2x64xi8>
  func.return %q : tensor<2x64xi8>
}
