// convert-graph-to-ascend: a matmul whose blocks each compute several output tiles along N
// takes them as one work item sharing the lhs panel (lowering/templates/cube/tiling.py
// `_matmul_groups`, matmul_kernel.py `_item`). The panel [mt, K] is held whole in l1: the
// item's first tile loads it chunk by chunk beside its own rhs chunks, the others read it;
// the next item waits for the last MTE1 read of it (MTE1 -> MTE2 id 2). Where two [mt, nt]
// accumulators fit, l0c has two slots (FIX -> M ids 0 and 1), so FIX drains one tile while
// the cube fills the next. Not taken: a transposed lhs, a matmul one tile wide.
// RUN: geir-opt %s --split-input-file -p 'convert-graph-to-ascend' | filecheck %s

// 512 x 1536 in 128 x 128 tiles: 24 items of two tiles, one per block.
// CHECK-LABEL: ascend.kernel @k0_proj(
// CHECK-SAME:    block_dim = 24 : i64, core_type = "cube"
// CHECK-NEXT:    %[[PANEL:l1a]] = ascend.alloc {{.*}} : memref<128x768xf16, "l1">
// CHECK-NEXT:    %l1b0 = ascend.alloc {{.*}} : memref<192x128xf16, "l1">
// CHECK-NEXT:    %l1b1 = ascend.alloc {{.*}} : memref<192x128xf16, "l1">
// CHECK:         %[[C0:l0c0]] = ascend.alloc {{.*}} : memref<128x128xf32, "l0c">
// CHECK-NEXT:    %[[C1:l0c1]] = ascend.alloc {{.*}} : memref<128x128xf32, "l0c">
// CHECK:         ascend.set_flag MTE1 -> MTE2 id 2
// CHECK-NEXT:    ascend.set_flag FIX -> M id 0
// CHECK-NEXT:    ascend.set_flag FIX -> M id 1
// CHECK:         scf.for
// The first tile: the panel's first chunk comes with the rhs chunk.
// CHECK:           ascend.wait_flag MTE1 -> MTE2 id 2
// CHECK:           %[[P0:.*]] = memref.subview %[[PANEL]][0, 0] [128, 192]
// CHECK:           ascend.copy %{{.*}}, %[[P0]] : memref<128x192xf16, strided<[768, 1], offset: ?>, "gm"> to memref<128x192xf16, strided<[768, 1]>, "l1">
// CHECK:           ascend.copy %{{.*}}, %l1b0
// CHECK:           ascend.wait_flag FIX -> M id 0
// CHECK-NEXT:      ascend.mmad %{{.*}}, %{{.*}}, %[[C0]] {init}
// CHECK:           memref.subview %[[PANEL]][0, 576] [128, 192]
// CHECK:           ascend.copy %[[C0]], %{{.*}} : memref<128x128xf32, "l0c"> to memref<128x128xf16
// CHECK-NEXT:      ascend.set_flag FIX -> M id 0
// The second tile reads the panel: nothing from gm lands in it; its rhs chunks only.
// CHECK-NOT:       ascend.copy %{{.*}} to memref<128x192xf16, strided<[768, 1]{{.*}}, "l1">
// CHECK:           memref.subview %[[PANEL]][0, 0] [128, 96]
// CHECK:           ascend.wait_flag FIX -> M id 1
// CHECK-NEXT:      ascend.mmad %{{.*}}, %{{.*}}, %[[C1]] {init}
// CHECK-NOT:       ascend.copy %{{.*}} to memref<128x192xf16, strided<[768, 1]{{.*}}, "l1">
// CHECK:           ascend.copy %[[C1]], %{{.*}} : memref<128x128xf32, "l0c"> to memref<128x128xf16
// CHECK-NEXT:      ascend.set_flag FIX -> M id 1
// CHECK-NEXT:      ascend.set_flag MTE1 -> MTE2 id 2
// CHECK-NEXT:    }
// CHECK:         ascend.wait_flag MTE1 -> MTE2 id 2
// CHECK-NEXT:    ascend.wait_flag FIX -> M id 0
// CHECK-NEXT:    ascend.wait_flag FIX -> M id 1
func.func @main(%a: tensor<512x768xf16> {onnx.name = "a"}, %b: tensor<768x1536xf16> {onnx.name = "b"}) -> (tensor<512x1536xf16> {onnx.name = "y"}) {
  %y = graph.matmul %a, %b : (tensor<512x768xf16>, tensor<768x1536xf16>) -> tensor<512x1536xf16> loc("proj")
  func.return %y : tensor<512x1536xf16>
}

// -----

// A transposed lhs is staged per chunk, as it lies: no panel, one l0c.
// CHECK-LABEL: ascend.kernel @k0_fc_t(
// CHECK-NOT:     flag MTE1 -> MTE2 id 2
// CHECK:         %l1a0 = ascend.alloc {{.*}} : memref<192x128xf16, "l1">
// CHECK-NEXT:    %l1a1 = ascend.alloc {{.*}} : memref<192x128xf16, "l1">
// CHECK:         %l0c = ascend.alloc {{.*}} "l0c">
// CHECK-NOT:     ascend.alloc {{.*}} "l0c">
// CHECK-NOT:     flag MTE1 -> MTE2 id 2
// CHECK:         ascend.return
func.func @main(%a: tensor<768x512xf16> {onnx.name = "a"}, %b: tensor<768x1536xf16> {onnx.name = "b"}, %c: tensor<1536xf16> {onnx.name = "c"}) -> (tensor<512x1536xf16> {onnx.name = "y"}) {
  %y = graph.gemm %a, %b, %c {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a = 1 : i64, trans_b = 0 : i64} : (tensor<768x512xf16>, tensor<768x1536xf16>, tensor<1536xf16>) -> tensor<512x1536xf16> loc("fc_t")
  func.return %y : tensor<512x1536xf16>
}

// -----

// One tile wide (N = 128): each block takes one tile, loading its own lhs chunks.
// CHECK-LABEL: ascend.kernel @k0_narrow(
// CHECK:         %l1a0 = ascend.alloc
// CHECK-NEXT:    %l1a1 = ascend.alloc
// CHECK-NOT:     flag MTE1 -> MTE2 id 2
// CHECK:         ascend.return
func.func @main(%a: tensor<512x768xf16> {onnx.name = "a"}, %b: tensor<768x128xf16> {onnx.name = "b"}) -> (tensor<512x128xf16> {onnx.name = "y"}) {
  %y = graph.matmul %a, %b : (tensor<512x768xf16>, tensor<768x128xf16>) -> tensor<512x128xf16> loc("narrow")
  func.return %y : tensor<512x128xf16>
}
