// convert-graph-to-ascend on graph-fuse's "lrn-quantize" groups: an f16 LRN whose result a
// quantize reads is one LRN kernel that quantizes a copy of its result tile in f32 before it
// leaves, as the graph does (vcast to f32, vdiv by the scale's tile, vround, + zero point, the
// clamp, vcast {round = "rint"} to int8). No f16 map is written, unless it is read in float
// too (then both are).
// RUN: geir-opt %s --split-input-file -p graph-fuse,convert-graph-to-ascend | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_fusion(
// CHECK-SAME:    %q: memref<1x64x14x14xi8, "gm">)
// CHECK-SAME:    core_type = "vector", template = "lrn"
// CHECK:         %acc0 = ascend.alloc {{.*}} : memref<64x64xf16, "ub">
// CHECK-NEXT:    %accf0 = ascend.alloc {{.*}} : memref<64x56xf32, "ub">
// CHECK-NEXT:    %qscale0 = ascend.alloc {{.*}} : memref<64x56xf32, "ub">
// CHECK-NEXT:    %outq0 = ascend.alloc {{.*}} : memref<64x64xi8, "ub">
// CHECK:         %[[SCALE:.*]] = arith.constant 7.812500e-03 : f32
// CHECK-NEXT:    %[[ZP:.*]] = arith.constant -1.280000e+02 : f32
// CHECK-NEXT:    %[[MAX:.*]] = arith.constant 1.270000e+02 : f32
// CHECK:         ascend.vexp
// CHECK-NEXT:    ascend.vdiv %{{.*}}, %[[ACC:.*]], %[[ACC]] : memref<64x49xf16
// CHECK-NEXT:    %[[W:.*]] = memref.subview %accf0
// CHECK-NEXT:    ascend.vcast %[[ACC]], %[[W]] : memref<64x49xf16, {{.*}}"ub">, memref<64x49xf32, {{.*}}"ub">
// CHECK-NEXT:    %[[S:.*]] = memref.subview %qscale0
// CHECK-NEXT:    ascend.vdup %[[SCALE]], %[[S]]
// CHECK-NEXT:    ascend.vdiv %[[W]], %[[S]], %[[W]]
// CHECK-NEXT:    ascend.vround %[[W]], %[[W]]
// CHECK-NEXT:    ascend.vadds %[[W]], %[[ZP]], %[[W]]
// CHECK-NEXT:    ascend.vmaxs %[[W]], %[[ZP]], %[[W]]
// CHECK-NEXT:    ascend.vmins %[[W]], %[[MAX]], %[[W]]
// CHECK-NEXT:    %[[OQ:.*]] = memref.subview %outq0
// CHECK-NEXT:    ascend.vcast %[[W]], %[[OQ]] {round = "rint"} : memref<64x49xf32, {{.*}}"ub">, memref<64x49xi8, {{.*}}"ub">
// CHECK:         ascend.copy %{{.*}}, %{{.*}} : memref<1x64x49xi8, {{.*}}"ub"> to memref<1x64x49xi8, {{.*}}"gm">
// CHECK-NOT:     ascend.kernel
func.func @lrn_quantize(%x: tensor<1x64x14x14xf16>) -> tensor<1x64x14x14xi8> {
  %s = graph.constant dense<0.0078125> : tensor<f32>
  %z = graph.constant dense<-128> : tensor<i8>
  %l = graph.lrn %x {size = 5 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<1x64x14x14xf16>) -> tensor<1x64x14x14xf16>
  %c = graph.cast %l {to = f32} : (tensor<1x64x14x14xf16>) -> tensor<1x64x14x14xf32>
  %q = graph.quantize %c, %s, %z : (tensor<1x64x14x14xf32>, tensor<f32>, tensor<i8>) -> tensor<1x64x14x14xi8>
  func.return %q : tensor<1x64x14x14xi8>
}

// -----

// The f32 result returned too: the kernel stores the int8 tile and the f32 one (an f32 LRN
// quantizes a vcopy of its result).
// CHECK-LABEL: ascend.kernel @k0_fusion(
// CHECK-SAME:    %l: memref<1x64x14x14xf32, "gm">, %q: memref<1x64x14x14xi8, "gm">)
// CHECK-SAME:    template = "lrn"
// CHECK:         ascend.vexp
// CHECK:         ascend.vcopy %{{.*}}, %[[W:.*]] : memref<64x49xf32
// CHECK:         ascend.vcast %[[W]], %{{.*}} {round = "rint"}
// CHECK:         ascend.copy %{{.*}}, %{{.*}} : memref<1x64x49xi8, {{.*}}"ub"> to memref<1x64x49xi8, {{.*}}"gm">
// CHECK-NEXT:    %{{.*}} = memref.expand_shape %acc
// CHECK-NEXT:    %{{.*}} = memref.subview
// CHECK-NEXT:    %{{.*}} = memref.subview
// CHECK-NEXT:    ascend.copy %{{.*}}, %{{.*}} : memref<1x64x49xf32, {{.*}}"ub"> to memref<1x64x49xf32, {{.*}}"gm">
// CHECK-NOT:     ascend.kernel
func.func @lrn_quantize_kept(%x: tensor<1x64x14x14xf32>) -> (tensor<1x64x14x14xf32>, tensor<1x64x14x14xi8>) {
  %s = graph.constant dense<0.0078125> : tensor<f32>
  %z = graph.constant dense<0> : tensor<i8>
  %l = graph.lrn %x {size = 5 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<1x64x14x14xf32>) -> tensor<1x64x14x14xf32>
  %q = graph.quantize %l, %s, %z : (tensor<1x64x14x14xf32>, tensor<f32>, tensor<i8>) -> tensor<1x64x14x14xi8>
  func.return %l, %q : tensor<1x64x14x14xf32>, tensor<1x64x14x14xi8>
}

// -----

// A scale per channel: the LRN and the quantize stay two kernels.
// CHECK-LABEL: ascend.kernel @k0_lrn(
// CHECK-SAME:    template = "lrn"
// CHECK:       ascend.kernel @k1_fusion(
// CHECK-NOT:     template = "lrn"
func.func @lrn_per_channel_scale(%x: tensor<1x64x14x14xf16>) -> tensor<1x64x14x14xi8> {
  %s = graph.constant dense<0.0078125> : tensor<1x64x1x1xf32>
  %z = graph.constant dense<0> : tensor<i8>
  %l = graph.lrn %x {size = 5 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<1x64x14x14xf16>) -> tensor<1x64x14x14xf16>
  %c = graph.cast %l {to = f32} : (tensor<1x64x14x14xf16>) -> tensor<1x64x14x14xf32>
  %q = graph.quantize %c, %s, %z : (tensor<1x64x14x14xf32>, tensor<1x64x1x1xf32>, tensor<i8>) -> tensor<1x64x14x14xi8>
  func.return %q : tensor<1x64x14x14xi8>
}
