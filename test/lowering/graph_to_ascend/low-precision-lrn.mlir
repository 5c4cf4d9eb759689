// convert-graph-to-ascend, LRN kernels in f16 and bf16. f16 squares and sums in f16. bf16
// converts its [C, pixels] tile to f32 once (rows 40 wide, not 48), computes the window sums
// and the power in f32 and converts the result back to bf16 before it leaves.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_lrn(
// CHECK-SAME:    template = "lrn"
// CHECK-NEXT:    %x_1 = ascend.alloc {offset = 0 : i64} : memref<12x48xf16, "ub">
// CHECK-NEXT:    %sq = ascend.alloc {offset = 1152 : i64} : memref<16x48xf16, "ub">
// CHECK-NEXT:    %acc = ascend.alloc {offset = 2688 : i64} : memref<12x48xf16, "ub">
// CHECK-NOT:     ascend.vcast
// CHECK:         ascend.vdiv %{{.*}} : memref<12x36xf16, strided<[48, 1]>, "ub">
// CHECK-NOT:     ascend.vcast
// CHECK:         ascend.return
func.func @lrn(%x: tensor<1x12x6x6xf16>) -> tensor<1x12x6x6xf16> {
  %y = graph.lrn %x {size = 5 : i64, alpha = 1.0e-04 : f64, beta = 7.5e-01 : f64, bias = 1.0 : f64} : (tensor<1x12x6x6xf16>) -> tensor<1x12x6x6xf16> loc("lrn")
  func.return %y : tensor<1x12x6x6xf16>
}

// -----

// CHECK-LABEL: ascend.kernel @k0_lrn(
// CHECK-SAME:    template = "lrn"
// CHECK-NEXT:    %x_1 = ascend.alloc {offset = 0 : i64} : memref<12x48xbf16, "ub">
// CHECK-NEXT:    %sq = ascend.alloc {offset = 1152 : i64} : memref<16x40xf32, "ub">
// CHECK-NEXT:    %acc = ascend.alloc {offset = 3712 : i64} : memref<12x40xf32, "ub">
// CHECK-NEXT:    %xf = ascend.alloc {offset = 5632 : i64} : memref<12x40xf32, "ub">
// CHECK-NEXT:    %accb = ascend.alloc {offset = 7552 : i64} : memref<12x48xbf16, "ub">
// CHECK:         ascend.copy %{{.*}} : memref<1x12x36xbf16, "gm"> to memref<1x12x36xbf16, strided<[576, 48, 1]>, "ub">
// CHECK:         ascend.vcast %{{.*}} : memref<12x36xbf16, strided<[48, 1]>, "ub">, memref<12x36xf32, strided<[40, 1]>, "ub">
// CHECK:         ascend.vmul %{{.*}} : memref<12x36xf32, strided<[40, 1]>, "ub">
// CHECK:         ascend.vexp %{{.*}} : memref<12x36xf32, strided<[40, 1]>, "ub">
// CHECK-NEXT:    ascend.vdiv %{{.*}} : memref<12x36xf32, strided<[40, 1]>, "ub">
// CHECK-NEXT:    %{{.*}} = memref.subview %accb
// CHECK-NEXT:    ascend.vcast %{{.*}} : memref<12x36xf32, strided<[40, 1]>, "ub">, memref<12x36xbf16, strided<[48, 1]>, "ub">
// CHECK:         ascend.copy %{{.*}} : memref<1x12x36xbf16, strided<[576, 48, 1]>, "ub"> to memref<1x12x36xbf16, "gm">
func.func @lrn(%x: tensor<1x12x6x6xbf16>) -> tensor<1x12x6x6xbf16> {
  %y = graph.lrn %x {size = 5 : i64, alpha = 1.0e-04 : f64, beta = 7.5e-01 : f64, bias = 1.0 : f64} : (tensor<1x12x6x6xbf16>) -> tensor<1x12x6x6xbf16> loc("lrn")
  func.return %y : tensor<1x12x6x6xbf16>
}

// -----

// NC1HWC0: the lanes are vtransposed to channel rows in bf16 (bits), converted, computed,
// converted back and vtransposed to lanes.
// CHECK-LABEL: ascend.kernel @k0_lrn(
// CHECK:         ascend.vtranspose %lanes, %{{.*}} {perm = array<i64: 0, 1, 3, 2>} : memref<1x2x36x16xbf16, "ub">
// CHECK-NEXT:    %{{.*}} = memref.subview %x_1
// CHECK-NEXT:    %{{.*}} = memref.subview %xf
// CHECK-NEXT:    ascend.vcast %{{.*}} : memref<32x36xbf16, strided<[48, 1]>, "ub">, memref<32x36xf32, strided<[40, 1]>, "ub">
// CHECK:         ascend.vcast %{{.*}} : memref<32x36xf32, strided<[40, 1]>, "ub">, memref<32x36xbf16, strided<[48, 1]>, "ub">
// CHECK:         ascend.vtranspose %{{.*}}, %lanes {perm = array<i64: 0, 1, 3, 2>} : memref<1x2x16x36xbf16, strided<[1536, 768, 48, 1]>, "ub">, memref<1x2x36x16xbf16, "ub">
func.func @lrn5(%x: tensor<1x2x6x6x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 20, 6, 6]>>) -> tensor<1x2x6x6x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 20, 6, 6]>> {
  %y = graph.lrn %x {size = 5 : i64, alpha = 1.0e-04 : f64, beta = 7.5e-01 : f64, bias = 1.0 : f64} : (tensor<1x2x6x6x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 20, 6, 6]>>) -> tensor<1x2x6x6x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 20, 6, 6]>> loc("lrn")
  func.return %y : tensor<1x2x6x6x16xbf16, #graph.format<NC1HWC0, NCHW, [1, 20, 6, 6]>>
}
