// convert-graph-to-ascend, cube kernels: a 2-D matmul with edge tiles in every dim.
// RUN: geir-opt %s -p convert-graph-to-ascend | filecheck %s
// RUN: geir-opt %s -p 'convert-graph-to-ascend{double-buffer=false}' | filecheck %s --check-prefix=SINGLE

// f16 x f16 -> f32 accumulation, rounded to f16 by the FIX pipe. [64, 48] output tiles;
// K = 300 in two l1 chunks (192, then 108 padded to 112) so the second chunk's load runs
// while the cube works on the first - the pricer pipelines chunks behind the cube - each
// chunk in l0 steps of 64 (the last 48). l1 and l0a/l0b are ping-pong pairs with their own
// flag ids; the tiles are spread over the blocks, each size class (full / partial M and N)
// in a loop of its own.
// CHECK-LABEL: ascend.kernel @k0_mm(
// CHECK-SAME:    %a: memref<100x300xf16, "gm">, %b: memref<300x200xf16, "gm">, %y: memref<100x200xf16, "gm">)
// CHECK-SAME:    attributes {block_dim = 10 : i64, core_type = "cube", template = "matmul"} {
// CHECK-NEXT:    %l1a0 = ascend.alloc {offset = 0 : i64} : memref<64x192xf16, "l1">
// CHECK-NEXT:    %l1a1 = ascend.alloc {offset = 24576 : i64} : memref<64x192xf16, "l1">
// CHECK-NEXT:    %l1b0 = ascend.alloc {offset = 49152 : i64} : memref<192x48xf16, "l1">
// CHECK-NEXT:    %l1b1 = ascend.alloc {offset = 67584 : i64} : memref<192x48xf16, "l1">
// CHECK-NEXT:    %l0a0 = ascend.alloc {offset = 0 : i64} : memref<64x64xf16, "l0a">
// CHECK-NEXT:    %l0a1 = ascend.alloc {offset = 8192 : i64} : memref<64x64xf16, "l0a">
// CHECK-NEXT:    %l0b0 = ascend.alloc {offset = 0 : i64} : memref<64x48xf16, "l0b">
// CHECK-NEXT:    %l0b1 = ascend.alloc {offset = 6144 : i64} : memref<64x48xf16, "l0b">
// CHECK-NEXT:    %l0c = ascend.alloc {offset = 0 : i64} : memref<64x48xf32, "l0c">
// CHECK-NEXT:    %block = ascend.block_idx
// CHECK:         ascend.set_flag MTE1 -> MTE2 id 0
// CHECK-NEXT:    ascend.set_flag M -> MTE1 id 0
// CHECK-NEXT:    ascend.set_flag MTE1 -> MTE2 id 1
// CHECK-NEXT:    ascend.set_flag M -> MTE1 id 1
// CHECK-NEXT:    ascend.set_flag FIX -> M id 0
// The four full tiles: block b takes tiles b, b + 10, ...
// CHECK-NEXT:    scf.for %[[T:.*]] = %block to %c4 step %c10 {
// CHECK-NEXT:      %[[N0:.*]] = arith.muli %[[T]], %c48 : index
// The first chunk (K 0..192) into the slot-0 l1 buffers.
// CHECK-NEXT:      ascend.wait_flag MTE1 -> MTE2 id 0
// CHECK-NEXT:      %[[A:.*]] = memref.subview %a[0, 0] [64, 192] [1, 1]
// CHECK-NEXT:      ascend.copy %[[A]], %l1a0 : memref<64x192xf16, strided<[300, 1]>, "gm"> to memref<64x192xf16, "l1">
// CHECK-NEXT:      %[[BT:.*]] = memref.subview %b[0, %[[N0]]] [192, 48] [1, 1]
// CHECK-NEXT:      ascend.copy %[[BT]], %l1b0
// CHECK-NEXT:      ascend.set_flag MTE2 -> MTE1 id 0
// CHECK-NEXT:      ascend.wait_flag MTE2 -> MTE1 id 0
// CHECK-NEXT:      ascend.wait_flag M -> MTE1 id 0
// CHECK-NEXT:      %[[A0:.*]] = memref.subview %l1a0[0, 0] [64, 64] [1, 1]
// CHECK-NEXT:      ascend.copy %[[A0]], %l0a0
// CHECK-NEXT:      %[[B0:.*]] = memref.subview %l1b0[0, 0] [64, 48] [1, 1]
// CHECK-NEXT:      ascend.copy %[[B0]], %l0b0
// CHECK-NEXT:      ascend.set_flag MTE1 -> M id 0
// CHECK-NEXT:      ascend.wait_flag MTE1 -> M id 0
// The first step waits for l0c to be free and initialises it.
// CHECK-NEXT:      ascend.wait_flag FIX -> M id 0
// CHECK-NEXT:      ascend.mmad %l0a0, %l0b0, %l0c {init} : memref<64x64xf16, "l0a">, memref<64x48xf16, "l0b">, memref<64x48xf32, "l0c">
// CHECK-NEXT:      ascend.set_flag M -> MTE1 id 0
// The second step uses the other l0 buffers (flag id 1) and accumulates.
// CHECK-NEXT:      ascend.wait_flag M -> MTE1 id 1
// CHECK:           ascend.mmad %l0a1, %l0b1, %l0c : memref<64x64xf16, "l0a">
// CHECK-NEXT:      ascend.set_flag M -> MTE1 id 1
// CHECK:           ascend.mmad %l0a0, %l0b0, %l0c
// The first chunk's buffers are free again once its last step has read them.
// CHECK:           ascend.set_flag MTE1 -> MTE2 id 0
// The second chunk (K 192..300, zero-padded to 112) into the slot-1 buffers, flag id 1.
// CHECK-NEXT:      ascend.wait_flag MTE1 -> MTE2 id 1
// CHECK-NEXT:      %[[A1:.*]] = memref.subview %l1a1[0, 0] [64, 112] [1, 1]
// CHECK-NEXT:      %[[AS:.*]] = memref.subview %a[0, 192] [64, 108] [1, 1]
// CHECK-NEXT:      ascend.copy %[[AS]], %[[A1]] {pad}
// CHECK:           ascend.set_flag MTE2 -> MTE1 id 1
// CHECK-NEXT:      ascend.wait_flag MTE2 -> MTE1 id 1
// The last step (K 256..300, padded to 48) uses sub-tiles of the l0 buffers.
// CHECK:           ascend.mmad %{{.*}}, %{{.*}}, %l0c : memref<64x48xf16, strided<[64, 1]>, "l0a">, memref<48x48xf16, strided<[48, 1]>, "l0b">
// CHECK:           ascend.set_flag MTE1 -> MTE2 id 1
// FIX writes the tile back, converting f32 to f16.
// CHECK-NEXT:      ascend.set_flag M -> FIX id 0
// CHECK-NEXT:      ascend.wait_flag M -> FIX id 0
// CHECK-NEXT:      %[[YT:.*]] = memref.subview %y[0, %[[N0]]] [64, 48] [1, 1]
// CHECK-NEXT:      ascend.copy %l0c, %[[YT]] : memref<64x48xf32, "l0c"> to memref<64x48xf16, strided<[200, 1], offset: ?>, "gm">
// CHECK-NEXT:      ascend.set_flag FIX -> M id 0
// CHECK-NEXT:    }
// The last N tile (8 columns) has a loop of its own, with static shapes; FIX writes back
// only its valid columns.
// CHECK:         scf.for
// CHECK:           memref.subview %b[0, 192] [192, 8] [1, 1]
// CHECK:           ascend.copy %{{.*}}, %{{.*}} {pad} : memref<64x16xf32, strided<[48, 1]>, "l0c"> to memref<64x8xf16
// CHECK:         }
// The partial M tiles (36 rows, padded to 48): FIX writes back only the valid rows.
// CHECK:         scf.for
// CHECK:           ascend.copy %{{.*}}, %{{.*}} {pad} : memref<48x48xf32, strided<[48, 1]>, "l0c"> to memref<36x48xf16
// CHECK:         }
// CHECK:         scf.for
// CHECK:           ascend.copy %{{.*}}, %{{.*}} {pad} : memref<48x16xf32, strided<[48, 1]>, "l0c"> to memref<36x8xf16
// CHECK:         }
// CHECK:         ascend.wait_flag MTE1 -> MTE2 id 0
// CHECK-NEXT:    ascend.wait_flag M -> MTE1 id 0
// CHECK-NEXT:    ascend.wait_flag MTE1 -> MTE2 id 1
// CHECK-NEXT:    ascend.wait_flag M -> MTE1 id 1
// CHECK-NEXT:    ascend.wait_flag FIX -> M id 0
// CHECK-NEXT:    ascend.return
// CHECK-NEXT:  } loc("mm")
// CHECK:       func.func @main(
// CHECK:         ascend.launch @k0_mm on %stream(%a, %b, %y)

// Single-buffered: one buffer per level and flag id 0 only.
// SINGLE-LABEL: ascend.kernel @k0_mm(
// SINGLE-SAME:    core_type = "cube"
// SINGLE-NEXT:    %l1a0 = ascend.alloc {offset = 0 : i64} : memref<{{.*}}xf16, "l1">
// SINGLE-NEXT:    %l1b0 = ascend.alloc {{.*}} "l1">
// SINGLE-NEXT:    %l0a0 = ascend.alloc {{.*}} "l0a">
// SINGLE-NEXT:    %l0b0 = ascend.alloc {{.*}} "l0b">
// SINGLE-NEXT:    %l0c = ascend.alloc {{.*}} "l0c">
// SINGLE-NOT:     id 1
// SINGLE:         ascend.return

func.func @main(%a: tensor<100x300xf16> {onnx.name = "a"}, %b: tensor<300x200xf16> {onnx.name = "b"}) -> (tensor<100x200xf16> {onnx.name = "y"}) {
  %y = graph.matmul %a, %b : (tensor<100x300xf16>, tensor<300x200xf16>) -> tensor<100x200xf16> loc("mm")
  func.return %y : tensor<100x200xf16>
}
