// convert-graph-to-ascend, the attention kernel's first key tile: O = O * alpha + P V starts
// from O = 0, so the first tile's P V is O itself. When the item's tile count is static, that
// tile's P V is copied from the scratch straight into O, once the vector unit is done with the
// previous item's O (V -> MTE2 id 6); O is not zeroed, and the tiles after it rescale and add.
// A causal item (a run-time count of visible tiles) keeps the zeroed O: test/lowering/
// graph_to_ascend/attention.mlir.
// RUN: geir-opt %s -p 'convert-graph-to-ascend' | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_attn(
// CHECK:         %pv = ascend.alloc
// CHECK-NEXT:    %[[O:.*]] = ascend.alloc {{.*}} : memref<16x64xf32, "ub">
// CHECK:         scf.for
// CHECK:           ascend.wait_flag MTE3 -> V id 7
// CHECK-NEXT:      ascend.vdup %{{.*}}, %m
// CHECK-NEXT:      ascend.vdup %{{.*}}, %l
// CHECK-NOT:       ascend.vdup
// The first tile's update: no vector op on O.
// CHECK:           ascend.wait_flag FIX -> MTE2 id 2
// CHECK-NEXT:      ascend.set_flag V -> MTE2 id 6
// CHECK-NEXT:      ascend.wait_flag V -> MTE2 id 6
// CHECK-NEXT:      %[[PV0:.*]] = memref.subview %pv_ws
// CHECK-NEXT:      ascend.copy %[[PV0]], %[[O]]
// CHECK-NEXT:      ascend.set_flag MTE2 -> FIX id 2
// CHECK-NEXT:      ascend.set_flag MTE2 -> V id 6
// CHECK-NEXT:      ascend.wait_flag MTE2 -> V id 6
// The second tile's: O = O * alpha + P V.
// CHECK:           ascend.wait_flag FIX -> MTE2 id 3
// CHECK:           ascend.copy %{{.*}}, %pv
// CHECK:           ascend.vmul %[[O]], %t, %[[O]]
// CHECK-NEXT:      ascend.vadd %[[O]], %pv, %[[O]]
// CHECK:           ascend.vdiv %{{.*}}, %{{.*}}, %{{.*}} : memref<16x64xf32, "ub">
func.func @main(%q: tensor<1x2x64x64xf16> {onnx.name = "q"}, %k: tensor<1x2x128x64xf16> {onnx.name = "k"}, %v: tensor<1x2x128x64xf16> {onnx.name = "v"}) -> (tensor<1x2x64x64xf16> {onnx.name = "o"}) {
  %o = graph.attention %q, %k, %v {scale = 0.125 : f32, causal = 0 : i64} : (tensor<1x2x64x64xf16>, tensor<1x2x128x64xf16>, tensor<1x2x128x64xf16>) -> tensor<1x2x64x64xf16> loc("attn")
  func.return %o : tensor<1x2x64x64xf16>
}
