// convert-graph-to-ascend, cube kernels: the l0a / l0b ping-pong runs on across a tile's l1
// chunks. K = 576 is two l1 chunks of 288, each three l0 steps of 96: the first chunk's
// steps take l0 slots 0, 1, 0 and the second's 1, 0, 1. Restarting every chunk at slot 0
// would make the second chunk's first copy into l0 wait for the cube to finish the step
// before it, which used that slot; alternating, the copy overlaps that step.
// RUN: geir-opt %s -p convert-graph-to-ascend | filecheck %s
// RUN: geir-opt %s -p 'convert-graph-to-ascend{double-buffer=false}' | filecheck %s --check-prefix=SINGLE

// CHECK-LABEL: ascend.kernel @k0_mm(
// CHECK:         scf.for
// The first chunk, in the slot-0 l1 buffers: l0 slots 0, 1, 0.
// CHECK:           ascend.wait_flag MTE1 -> MTE2 id 0
// CHECK:           ascend.wait_flag M -> MTE1 id 0
// CHECK:           ascend.mmad %l0a0, %l0b0, %l0c {init} : memref<32x96xf16, "l0a">
// CHECK:           ascend.wait_flag M -> MTE1 id 1
// CHECK:           ascend.mmad %l0a1, %l0b1, %l0c :
// CHECK:           ascend.wait_flag M -> MTE1 id 0
// CHECK:           ascend.mmad %l0a0, %l0b0, %l0c :
// CHECK-NEXT:      ascend.set_flag M -> MTE1 id 0
// CHECK-NEXT:      ascend.set_flag MTE1 -> MTE2 id 0
// The second chunk, in the slot-1 l1 buffers: l0 slots 1, 0, 1.
// CHECK-NEXT:      ascend.wait_flag MTE1 -> MTE2 id 1
// CHECK:           ascend.wait_flag MTE2 -> MTE1 id 1
// CHECK-NEXT:      ascend.wait_flag M -> MTE1 id 1
// CHECK:           ascend.copy %{{.*}}, %l0a1
// CHECK:           ascend.mmad %l0a1, %l0b1, %l0c :
// CHECK:           ascend.wait_flag M -> MTE1 id 0
// CHECK:           ascend.mmad %l0a0, %l0b0, %l0c :
// CHECK:           ascend.wait_flag M -> MTE1 id 1
// CHECK:           ascend.mmad %l0a1, %l0b1, %l0c :
// CHECK-NEXT:      ascend.set_flag M -> MTE1 id 1
// CHECK-NEXT:      ascend.set_flag MTE1 -> MTE2 id 1
// CHECK-NOT:       ascend.mmad
// CHECK:         ascend.return

// Single-buffered, one l0 slot: every step waits for the one before it (flag id 0 only).
// SINGLE-LABEL: ascend.kernel @k0_mm(
// SINGLE-NOT:     id 1
// SINGLE:         ascend.return
func.func @main(%a: tensor<64x576xf16> {onnx.name = "a"}, %b: tensor<576x128xf16> {onnx.name = "b"}) -> (tensor<64x128xf16> {onnx.name = "y"}) {
  %y = graph.matmul %a, %b : (tensor<64x576xf16>, tensor<576x128xf16>) -> tensor<64x128xf16> loc("mm")
  func.return %y : tensor<64x128xf16>
}
