// convert-graph-to-ascend, the cast op to and from bf16 and f16. vcast converts bf16 to and
// from f32 only: a cast to bf16 rounds through an f32 value (f16 -> f32 is exact), and a
// bf16 result computed in f32 is rounded to bf16 and converted back - the cast's one
// rounding - before the ops after it read it; a bf16 source is already f32 in ub.
// RUN: geir-opt %s --split-input-file -p graph-fuse,convert-graph-to-ascend | filecheck %s

// f32 -> bf16 -> f16 in one kernel: the bf16 value rounded (vcast to bf16), back in f32 for
// the next cast, then stored as bf16.
// CHECK-LABEL: ascend.kernel @k0_to_bf16(
// CHECK-SAME:    template = "row"
// CHECK-NEXT:    %[[X:.*]] = ascend.alloc {offset = 0 : i64} : memref<800xf32, "ub">
// CHECK-NEXT:    %[[B:.*]] = ascend.alloc {offset = 3200 : i64} : memref<800xf32, "ub">
// CHECK-NEXT:    %[[N:.*]] = ascend.alloc {offset = 6400 : i64} : memref<800xbf16, "ub">
// CHECK-NEXT:    %[[H:.*]] = ascend.alloc {offset = 8000 : i64} : memref<800xf16, "ub">
// CHECK:         ascend.vcast %[[X]], %[[N]] : memref<800xf32, "ub">, memref<800xbf16, "ub">
// CHECK-NEXT:    ascend.vcast %[[N]], %[[B]] : memref<800xbf16, "ub">, memref<800xf32, "ub">
// CHECK-NEXT:    ascend.vcast %[[B]], %[[H]] : memref<800xf32, "ub">, memref<800xf16, "ub">
// CHECK-NEXT:    ascend.vcast %[[B]], %[[N]] : memref<800xf32, "ub">, memref<800xbf16, "ub">
// CHECK:         ascend.copy %[[N]], %{{.*}} : memref<800xbf16, "ub"> to memref<800xbf16, "gm">
// CHECK-NEXT:    ascend.copy %[[H]], %{{.*}} : memref<800xf16, "ub"> to memref<800xf16, "gm">
// bf16 -> i32: the bf16 tile converted to f32, then truncated to i32 (as ONNX Cast).
// CHECK-LABEL: ascend.kernel @k1_to_i32(
// CHECK:         ascend.vcast %{{.*}}, %[[F:.*]] : memref<800xbf16, "ub">, memref<800xf32, "ub">
// CHECK-NEXT:    ascend.vcast %[[F]], %{{.*}} : memref<800xf32, "ub">, memref<800xi32, "ub">
func.func @casts(%x: tensor<8x100xf32>) -> (tensor<8x100xbf16>, tensor<8x100xf16>, tensor<8x100xi32>) {
  %b = graph.cast %x {to = bf16} : (tensor<8x100xf32>) -> tensor<8x100xbf16> loc("to_bf16")
  %h = graph.cast %b {to = f16} : (tensor<8x100xbf16>) -> tensor<8x100xf16> loc("to_f16")
  %i = graph.cast %b {to = i32} : (tensor<8x100xbf16>) -> tensor<8x100xi32> loc("to_i32")
  func.return %b, %h, %i : tensor<8x100xbf16>, tensor<8x100xf16>, tensor<8x100xi32>
}

// -----

// f16 -> bf16: through f32 (exact), then rounded to bf16.
// CHECK-LABEL: ascend.kernel @k0_f16_to_bf16(
// CHECK:         ascend.vcast %{{.*}}, %[[W:.*]] : memref<800xf16, "ub">, memref<800xf32, "ub">
// CHECK-NEXT:    ascend.vcast %[[W]], %[[N:.*]] : memref<800xf32, "ub">, memref<800xbf16, "ub">
// CHECK-NEXT:    ascend.vcast %[[N]], %{{.*}} : memref<800xbf16, "ub">, memref<800xf32, "ub">
func.func @from_f16(%x: tensor<8x100xf16>) -> tensor<8x100xbf16> {
  %b = graph.cast %x {to = bf16} : (tensor<8x100xf16>) -> tensor<8x100xbf16> loc("f16_to_bf16")
  func.return %b : tensor<8x100xbf16>
}

// -----

// f32 -> f16 and back: one vcast each, as before bf16.
// CHECK-LABEL: ascend.kernel @k0_down(
// CHECK:         ascend.vcast %{{.*}}, %[[H:.*]] : memref<800xf32, "ub">, memref<800xf16, "ub">
// CHECK-NEXT:    ascend.vcast %[[H]], %{{.*}} : memref<800xf16, "ub">, memref<800xf32, "ub">
func.func @f16(%x: tensor<8x100xf32>) -> tensor<8x100xf32> {
  %h = graph.cast %x {to = f16} : (tensor<8x100xf32>) -> tensor<8x100xf16> loc("down")
  %y = graph.cast %h {to = f32} : (tensor<8x100xf16>) -> tensor<8x100xf32> loc("up")
  func.return %y : tensor<8x100xf32>
}
