// convert-graph-to-ascend, the attention kernel's first key tile: O = O * alpha + P V starts
// from O = 0, so the first tile's P V is O itself. When the item's tile count is static, that
// tile's P V is copied from the scratch straight into O, once the vector unit is done with the
// previous item's O (V -> MTE2 id 6); O is not zeroed, and the tiles after it rescale and add.
// The item's 16 query rows are shared by the block's two vector cores (`ascend.sub_block`).
// A causal item (a run-time count of visible tiles) keeps the zeroed O: test/lowering/
// graph_to_ascend/attention.mlir.
// RUN: geir-opt %s -p 'convert-graph-to-ascend' | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_attn(
// Each of the block's two vector cores holds its 8 of an item's 16 rows in its own ub.
// CHECK:         %pv = ascend.alloc
// CHECK-NEXT:    %[[O:.*]] = ascend.alloc {{.*}} : memref<8x64xf32, "ub">
// CHECK:         scf.for
// Each core starts its rows: m and l, not O.
// CHECK:           ascend.sub_block 0 {
// CHECK-NEXT:        ascend.wait_flag MTE3 -> V id 7
// CHECK-NEXT:        ascend.vdup %{{.*}}, %m
// CHECK-NEXT:        ascend.vdup %{{.*}}, %l
// CHECK-NEXT:      }
// CHECK-NEXT:      ascend.sub_block 1 {
// CHECK-NEXT:        ascend.wait_flag MTE3 -> V id 7
// CHECK-NEXT:        ascend.vdup %{{.*}}, %m
// CHECK-NEXT:        ascend.vdup %{{.*}}, %l
// CHECK-NEXT:      }
// The first tile's update: the AIC tells each core that P V is in the scratch; each copies its
// rows of it into its O, and no vector op touches O.
// CHECK-NOT:       ascend.vdup
// CHECK:           ascend.set_flag FIX -> MTE2 id 2
// CHECK-NEXT:      ascend.set_flag FIX -> MTE2 id 2
// CHECK-NOT:       ascend.vdup
// CHECK:             ascend.wait_flag FIX -> MTE2 id 2
// CHECK-NEXT:        ascend.set_flag V -> MTE2 id 6
// CHECK-NEXT:        ascend.wait_flag V -> MTE2 id 6
// CHECK-NEXT:        %[[PV0:.*]] = memref.subview %pv_ws[%[[ROW:.*]], 0] [8, 64]
// CHECK-NEXT:        ascend.copy %[[PV0]], %[[O]]
// CHECK-NEXT:        ascend.set_flag MTE2 -> FIX id 2
// CHECK-NEXT:        ascend.set_flag MTE2 -> V id 6
// CHECK-NEXT:        ascend.wait_flag MTE2 -> V id 6
// CHECK-NEXT:      }
// CHECK-NEXT:      ascend.sub_block 1 {
// CHECK-NEXT:        ascend.wait_flag FIX -> MTE2 id 2
// CHECK-NEXT:        ascend.set_flag V -> MTE2 id 6
// CHECK-NEXT:        ascend.wait_flag V -> MTE2 id 6
// CHECK-NEXT:        %[[ROW1:.*]] = arith.addi %[[ROW]], %c8
// CHECK-NEXT:        %[[PV1:.*]] = memref.subview %pv_ws[%[[ROW1]], 0] [8, 64]
// CHECK-NEXT:        ascend.copy %[[PV1]], %[[O]]
// The second tile's, on each core: O = O * alpha + P V over its rows.
// CHECK:           ascend.wait_flag FIX -> MTE2 id 3
// CHECK:           ascend.copy %{{.*}}, %pv :
// CHECK:           ascend.vmul %[[O]], %t, %[[O]]
// CHECK-NEXT:      ascend.vadd %[[O]], %pv, %[[O]]
// CHECK:           ascend.vdiv %[[O]], %t, %[[O]] : memref<8x64xf32, "ub">
func.func @main(%q: tensor<1x2x64x64xf16> {onnx.name = "q"}, %k: tensor<1x2x128x64xf16> {onnx.name = "k"}, %v: tensor<1x2x128x64xf16> {onnx.name = "v"}) -> (tensor<1x2x64x64xf16> {onnx.name = "o"}) {
  %o = graph.attention %q, %k, %v {scale = 0.125 : f32, causal = 0 : i64} : (tensor<1x2x64x64xf16>, tensor<1x2x128x64xf16>, tensor<1x2x128x64xf16>) -> tensor<1x2x64x64xf16> loc("attn")
  func.return %o : tensor<1x2x64x64xf16>
}
