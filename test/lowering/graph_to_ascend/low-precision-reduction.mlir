// convert-graph-to-ascend, row kernels that reduce - softmax, rms_norm, layer_norm,
// reduce_sum - in f16 and bf16. f16 reduces and divides in f16, but rms_norm normalises in
// f32 (its stash_type) and casts back before the scale. bf16 converts its tiles to f32 once
// (x, and the scale and bias of a norm), computes the whole op in f32 and rounds once.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_softmax(
// CHECK-NOT:     ascend.vcast
// CHECK:         ascend.vreduce %[[X:.*]], %[[M:.*]] {kind = "max", axes = array<i64: 1>} : memref<16x40xf16, strided<[48, 1]>, "ub">, memref<16x1xf16, strided<[16, 1]>, "ub">
// CHECK-NEXT:    %[[MB:.*]] = memref.subview
// CHECK-NEXT:    ascend.vbrcb %[[M]], %[[MB]] :
// CHECK-NEXT:    ascend.vsub %[[X]], %[[MB]], %[[X]] : memref<16x40xf16, strided<[48, 1]>, "ub">
// CHECK-NEXT:    ascend.vexp %[[X]], %[[X]] : memref<16x40xf16, strided<[48, 1]>, "ub">
// CHECK:         ascend.vreduce %[[X]], %{{.*}} {kind = "sum", axes = array<i64: 1>} : memref<16x40xf16
// CHECK-NOT:     ascend.vcast
// CHECK:         ascend.copy %[[X]], %{{.*}} : memref<16x40xf16, strided<[48, 1]>, "ub"> to memref<16x40xf16, "gm">
func.func @softmax(%x: tensor<2x8x40xf16>) -> tensor<2x8x40xf16> {
  %y = graph.softmax %x {axis = -1 : i64} : (tensor<2x8x40xf16>) -> tensor<2x8x40xf16> loc("softmax")
  func.return %y : tensor<2x8x40xf16>
}

// -----

// CHECK-LABEL: ascend.kernel @k0_softmax(
// CHECK-NEXT:    %[[X:.*]] = ascend.alloc {offset = 0 : i64} : memref<16x40xf32, "ub">
// CHECK-NEXT:    %[[XS:.*]] = ascend.alloc {offset = 2560 : i64} : memref<16x48xbf16, "ub">
// CHECK:         ascend.copy %{{.*}}, %[[XV:.*]] : memref<16x40xbf16, "gm"> to memref<16x40xbf16, strided<[48, 1]>, "ub">
// CHECK:         ascend.vcast %[[XV]], %[[X]] : memref<16x40xbf16, strided<[48, 1]>, "ub">, memref<16x40xf32, "ub">
// CHECK-NEXT:    %[[M:.*]] = memref.subview
// CHECK-NEXT:    ascend.vreduce %[[X]], %[[M]] {kind = "max", axes = array<i64: 1>} : memref<16x40xf32, "ub">, memref<16x1xf32, strided<[8, 1]>, "ub">
// CHECK:         ascend.vexp %[[X]], %[[X]] : memref<16x40xf32, "ub">
// CHECK:         ascend.vreduce %[[X]], %{{.*}} {kind = "sum", axes = array<i64: 1>} : memref<16x40xf32, "ub">
// CHECK:         ascend.vdiv %[[X]], %{{.*}}, %[[X]] : memref<16x40xf32, "ub">
// CHECK-NEXT:    %[[OUT:.*]] = memref.subview %[[XS]]
// CHECK-NEXT:    ascend.vcast %[[X]], %[[OUT]] : memref<16x40xf32, "ub">, memref<16x40xbf16, strided<[48, 1]>, "ub">
// CHECK:         ascend.copy %[[OUT]], %{{.*}} : memref<16x40xbf16, strided<[48, 1]>, "ub"> to memref<16x40xbf16, "gm">
func.func @softmax(%x: tensor<2x8x40xbf16>) -> tensor<2x8x40xbf16> {
  %y = graph.softmax %x {axis = -1 : i64} : (tensor<2x8x40xbf16>) -> tensor<2x8x40xbf16> loc("softmax")
  func.return %y : tensor<2x8x40xbf16>
}

// -----

// CHECK-LABEL: ascend.kernel @k0_rms(
// CHECK:         ascend.vcast %[[X:.*]], %[[XF:.*]] : memref<16x64xf16, "ub">, memref<16x64xf32, "ub">
// CHECK:         ascend.vreduce %{{.*}} {kind = "sum", axes = array<i64: 1>} : memref<16x64xf32, "ub">
// CHECK:         ascend.vdiv %[[XF]], %{{.*}}, %[[XF]] : memref<16x64xf32, "ub">
// CHECK-NEXT:    ascend.vcast %[[XF]], %[[X]] : memref<16x64xf32, "ub">, memref<16x64xf16, "ub">
// CHECK-NEXT:    ascend.vbrcb %{{.*}}, %[[G:.*]] : memref<1x64xf16, "ub">, memref<16x64xf16, "ub">
// CHECK-NEXT:    ascend.vmul %[[X]], %[[G]], %[[X]] : memref<16x64xf16, "ub">
func.func @rms(%x: tensor<16x64xf16>, %g: tensor<64xf16>) -> tensor<16x64xf16> {
  %y = graph.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : (tensor<16x64xf16>, tensor<64xf16>) -> tensor<16x64xf16> loc("rms")
  func.return %y : tensor<16x64xf16>
}

// -----

// CHECK-LABEL: ascend.kernel @k0_rms(
// CHECK:         ascend.vcast %[[XS:.*]], %[[X:.*]] : memref<16x64xbf16, "ub">, memref<16x64xf32, "ub">
// CHECK-NEXT:    ascend.vcast %{{.*}}, %[[G:.*]] : memref<1x64xbf16, "ub">, memref<1x64xf32, "ub">
// CHECK:         ascend.vdiv %[[X]], %{{.*}}, %[[X]] : memref<16x64xf32, "ub">
// CHECK-NEXT:    ascend.vbrcb %[[G]], %[[GB:.*]] : memref<1x64xf32, "ub">, memref<16x64xf32, "ub">
// CHECK-NEXT:    ascend.vmul %[[X]], %[[GB]], %[[X]] : memref<16x64xf32, "ub">
// CHECK-NEXT:    ascend.vcast %[[X]], %[[XS]] : memref<16x64xf32, "ub">, memref<16x64xbf16, "ub">
// CHECK-NEXT:    ascend.set_flag V -> MTE3 id 0
func.func @rms(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>) -> tensor<16x64xbf16> {
  %y = graph.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : (tensor<16x64xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16> loc("rms")
  func.return %y : tensor<16x64xbf16>
}

// -----

// CHECK-LABEL: ascend.kernel @k0_ln(
// CHECK-COUNT-3: ascend.vcast %{{.*}} : memref<{{.*}}xbf16, "ub">, memref<{{.*}}xf32, "ub">
// CHECK-NEXT:    %[[MEAN:.*]] = memref.subview
// CHECK-NEXT:    ascend.vreduce %{{.*}}, %[[MEAN]] {kind = "sum", axes = array<i64: 1>} : memref<16x64xf32, "ub">
// CHECK:         ascend.vsqrt %{{.*}} : memref<16x1xf32, strided<[8, 1]>, "ub">
// CHECK:         ascend.vadd %{{.*}} : memref<16x64xf32, "ub">
// CHECK-NEXT:    ascend.vcast %{{.*}} : memref<16x64xf32, "ub">, memref<16x64xbf16, "ub">
func.func @ln(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>) -> tensor<16x64xbf16> {
  %y = graph.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64} : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16> loc("ln")
  func.return %y : tensor<16x64xbf16>
}

// -----

// A reduction over the middle dim: the f32 rows are 40 wide, the bf16 ones 48.
// CHECK-LABEL: ascend.kernel @k0_sum(
// CHECK:         ascend.vcast %{{.*}}, %[[X:.*]] : memref<6x10x36xbf16, strided<[480, 48, 1]>, "ub">, memref<6x10x36xf32, strided<[400, 40, 1]>, "ub">
// CHECK:         ascend.vreduce %[[X]], %[[S:.*]] {kind = "sum", axes = array<i64: 1>} : memref<6x10x36xf32, strided<[400, 40, 1]>, "ub">, memref<6x1x36xf32, strided<[40, 40, 1]>, "ub">
// CHECK:         ascend.vcast %[[S]], %[[OUT:.*]] : memref<6x1x36xf32, strided<[40, 40, 1]>, "ub">, memref<6x1x36xbf16, strided<[48, 48, 1]>, "ub">
// CHECK:         ascend.copy %[[OUT]], %y
func.func @sum(%x: tensor<6x10x36xbf16>) -> tensor<6x1x36xbf16> {
  %y = graph.reduce_sum %x {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<6x10x36xbf16>) -> tensor<6x1x36xbf16> loc("sum")
  func.return %y : tensor<6x1x36xbf16>
}
