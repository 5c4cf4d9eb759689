// convert-graph-to-ascend, cube kernels: a 2-D matmul with edge tiles in every dim.
// RUN: geir-opt %s -p convert-graph-to-ascend | filecheck %s
// RUN: geir-opt %s -p 'convert-graph-to-ascend{double-buffer=false}' | filecheck %s --check-prefix=SINGLE

// f16 x f16 -> f32 accumulation, rounded to f16 by the FIX pipe. [48, 32] output tiles:
// M = 100 is 2 x 48 + 4 and N = 200 is 6 x 32 + 8, so 3 x 7 = 21 tiles, one per block
// (block_dim 21) - the tiling prices reads of bytes already read (A's rows again per N tile,
// B's columns again per M tile) at the L2 bandwidth, so small tiles over many blocks win.
// K = 300 in two l1 chunks (192, then 108 padded to 112) so the second chunk's load runs
// while the cube works on the first - the pricer pipelines chunks behind the cube - each
// chunk in l0 steps of 64 (the last 48). l1 and l0a/l0b are ping-pong pairs with their own
// flag ids; the tiles are spread over the blocks, each size class (full / partial M and N)
// in a loop of its own.
// CHECK-LABEL: ascend.kernel @k0_mm(
// CHECK-SAME:    %a: memref<100x300xf16, "gm">, %b: memref<300x200xf16, "gm">, %y: memref<100x200xf16, "gm">)
// CHECK-SAME:    attributes {block_dim = 21 : i64, core_type = "cube", template = "matmul"} {
// CHECK-NEXT:    %l1a0 = ascend.alloc {offset = 0 : i64} : memref<48x192xf16, "l1">
// CHECK-NEXT:    %l1a1 = ascend.alloc {offset = 18432 : i64} : memref<48x192xf16, "l1">
// CHECK-NEXT:    %l1b0 = ascend.alloc {offset = 36864 : i64} : memref<192x32xf16, "l1">
// CHECK-NEXT:    %l1b1 = ascend.alloc {offset = 49152 : i64} : memref<192x32xf16, "l1">
// CHECK-NEXT:    %l0a0 = ascend.alloc {offset = 0 : i64} : memref<48x64xf16, "l0a">
// CHECK-NEXT:    %l0a1 = ascend.alloc {offset = 6144 : i64} : memref<48x64xf16, "l0a">
// CHECK-NEXT:    %l0b0 = ascend.alloc {offset = 0 : i64} : memref<64x32xf16, "l0b">
// CHECK-NEXT:    %l0b1 = ascend.alloc {offset = 4096 : i64} : memref<64x32xf16, "l0b">
// CHECK-NEXT:    %l0c = ascend.alloc {offset = 0 : i64} : memref<48x32xf32, "l0c">
// CHECK-NEXT:    %block = ascend.block_idx
// CHECK:         ascend.set_flag MTE1 -> MTE2 id 0
// CHECK-NEXT:    ascend.set_flag M -> MTE1 id 0
// CHECK-NEXT:    ascend.set_flag MTE1 -> MTE2 id 1
// CHECK-NEXT:    ascend.set_flag M -> MTE1 id 1
// CHECK-NEXT:    ascend.set_flag FIX -> M id 0
// The twelve full tiles (2 M tiles x 6 N tiles, row-major): block b takes tiles b, b + 21, ...
// CHECK-NEXT:    scf.for %[[T:.*]] = %block to %c12 step %c21 {
// CHECK-NEXT:      %[[TM:.*]] = arith.divui %[[T]], %c6 : index
// CHECK-NEXT:      %[[TN:.*]] = arith.remui %[[T]], %c6 : index
// CHECK-NEXT:      %[[M0:.*]] = arith.muli %[[TM]], %c48 : index
// CHECK-NEXT:      %[[N0:.*]] = arith.muli %[[TN]], %c32 : index
// The first chunk (K 0..192) into the slot-0 l1 buffers.
// CHECK-NEXT:      ascend.wait_flag MTE1 -> MTE2 id 0
// CHECK-NEXT:      %[[A:.*]] = memref.subview %a[%[[M0]], 0] [48, 192] [1, 1]
// CHECK-NEXT:      ascend.copy %[[A]], %l1a0 : memref<48x192xf16, strided<[300, 1], offset: ?>, "gm"> to memref<48x192xf16, "l1">
// CHECK-NEXT:      %[[BT:.*]] = memref.subview %b[0, %[[N0]]] [192, 32] [1, 1]
// CHECK-NEXT:      ascend.copy %[[BT]], %l1b0
// CHECK-NEXT:      ascend.set_flag MTE2 -> MTE1 id 0
// CHECK-NEXT:      ascend.wait_flag MTE2 -> MTE1 id 0
// CHECK-NEXT:      ascend.wait_flag M -> MTE1 id 0
// CHECK-NEXT:      %[[A0:.*]] = memref.subview %l1a0[0, 0] [48, 64] [1, 1]
// CHECK-NEXT:      ascend.copy %[[A0]], %l0a0
// CHECK-NEXT:      %[[B0:.*]] = memref.subview %l1b0[0, 0] [64, 32] [1, 1]
// CHECK-NEXT:      ascend.copy %[[B0]], %l0b0
// CHECK-NEXT:      ascend.set_flag MTE1 -> M id 0
// CHECK-NEXT:      ascend.wait_flag MTE1 -> M id 0
// The first step waits for l0c to be free and initialises it.
// CHECK-NEXT:      ascend.wait_flag FIX -> M id 0
// CHECK-NEXT:      ascend.mmad %l0a0, %l0b0, %l0c {init} : memref<48x64xf16, "l0a">, memref<64x32xf16, "l0b">, memref<48x32xf32, "l0c">
// CHECK-NEXT:      ascend.set_flag M -> MTE1 id 0
// The second step uses the other l0 buffers (flag id 1) and accumulates.
// CHECK-NEXT:      ascend.wait_flag M -> MTE1 id 1
// CHECK:           ascend.mmad %l0a1, %l0b1, %l0c : memref<48x64xf16, "l0a">
// CHECK-NEXT:      ascend.set_flag M -> MTE1 id 1
// CHECK:           ascend.mmad %l0a0, %l0b0, %l0c
// The first chunk's buffers are free again once its last step has read them.
// CHECK:           ascend.set_flag MTE1 -> MTE2 id 0
// The second chunk (K 192..300, zero-padded to 112) into the slot-1 buffers, flag id 1.
// CHECK-NEXT:      ascend.wait_flag MTE1 -> MTE2 id 1
// CHECK-NEXT:      %[[A1:.*]] = memref.subview %l1a1[0, 0] [48, 112] [1, 1]
// CHECK-NEXT:      %[[AS:.*]] = memref.subview %a[%[[M0]], 192] [48, 108] [1, 1]
// CHECK-NEXT:      ascend.copy %[[AS]], %[[A1]] {pad}
// CHECK:           ascend.set_flag MTE2 -> MTE1 id 1
// CHECK-NEXT:      ascend.wait_flag MTE2 -> MTE1 id 1
// The l0 ping-pong runs on across the chunks: the first chunk's three steps took l0 slots 0,
// 1, 0, so this chunk's first step takes slot 1 (restarting at 0, its copy into l0 would wait
// for the cube to finish the step before it).
// CHECK-NEXT:      ascend.wait_flag M -> MTE1 id 1
// CHECK-NEXT:      %[[A10:.*]] = memref.subview %l1a1[0, 0] [48, 64] [1, 1]
// CHECK-NEXT:      ascend.copy %[[A10]], %l0a1
// The last step (K 256..300, padded to 48) uses sub-tiles of the l0 buffers.
// CHECK:           ascend.mmad %{{.*}}, %{{.*}}, %l0c : memref<48x48xf16, strided<[64, 1]>, "l0a">, memref<48x32xf16, strided<[32, 1]>, "l0b">
// CHECK:           ascend.set_flag MTE1 -> MTE2 id 1
// FIX writes the tile back, converting f32 to f16.
// CHECK-NEXT:      ascend.set_flag M -> FIX id 0
// CHECK-NEXT:      ascend.wait_flag M -> FIX id 0
// CHECK-NEXT:      %[[YT:.*]] = memref.subview %y[%[[M0]], %[[N0]]] [48, 32] [1, 1]
// CHECK-NEXT:      ascend.copy %l0c, %[[YT]] : memref<48x32xf32, "l0c"> to memref<48x32xf16, strided<[200, 1], offset: ?>, "gm">
// CHECK-NEXT:      ascend.set_flag FIX -> M id 0
// CHECK-NEXT:    }
// The last N tile (8 columns, padded to 16) of each full M tile has a loop of its own, with
// static shapes; FIX writes back only its valid columns. Each class starts on the blocks the
// classes before it left idle: its 2 tiles on blocks 12 and 13.
// CHECK-NEXT:    %[[R1:.*]] = arith.addi %block, %c9 : index
// CHECK-NEXT:    %[[S1:.*]] = arith.remui %[[R1]], %c21 : index
// CHECK-NEXT:    scf.for %{{.*}} = %[[S1]] to %c2 step %c21 {
// CHECK:           memref.subview %b[0, 192] [192, 8] [1, 1]
// CHECK:           ascend.copy %{{.*}}, %{{.*}} {pad} : memref<48x16xf32, strided<[32, 1]>, "l0c"> to memref<48x8xf16
// CHECK:         }
// The partial M tiles (4 rows, padded to 16) of the 6 full N tiles, on blocks 14..19: FIX
// writes back only the valid rows.
// CHECK-NEXT:    %[[R2:.*]] = arith.addi %block, %c7 : index
// CHECK-NEXT:    %[[S2:.*]] = arith.remui %[[R2]], %c21 : index
// CHECK-NEXT:    scf.for %{{.*}} = %[[S2]] to %c6 step %c21 {
// CHECK:           memref.subview %a[96, 0] [4, 192] [1, 1]
// CHECK:           ascend.copy %{{.*}}, %{{.*}} {pad} : memref<16x32xf32, strided<[32, 1]>, "l0c"> to memref<4x32xf16
// CHECK:         }
// The corner tile (4 x 8) on block 20.
// CHECK-NEXT:    %[[R3:.*]] = arith.addi %block, %c1 : index
// CHECK-NEXT:    %[[S3:.*]] = arith.remui %[[R3]], %c21 : index
// CHECK-NEXT:    scf.for %{{.*}} = %[[S3]] to %c1 step %c21 {
// CHECK:           ascend.copy %{{.*}}, %{{.*}} {pad} : memref<16x16xf32, strided<[32, 1]>, "l0c"> to memref<4x8xf16
// CHECK:         }
// CHECK-NEXT:    ascend.wait_flag MTE1 -> MTE2 id 0
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
