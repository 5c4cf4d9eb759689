// convert-graph-to-ascend: elementwise chains with broadcasting (the row template).
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s
// RUN: geir-opt %s --split-input-file -p 'convert-graph-to-ascend{double-buffer=false}' | filecheck %s --check-prefix=SINGLE

// One tile: (x + b) * 0.5 -> relu with b [C, 1] broadcast over [N, C, W]. The canonical
// space is [2, 16, 40]; b is loaded as its [1, 16, 1] tile (rows padded to 8 f32 = 32
// bytes) and broadcast with vbrcb; the scalar 0.5 folds into vmuls; the chain runs in place.
// CHECK-LABEL: ascend.kernel @k0_add(
// CHECK-SAME:    %xa: memref<2x16x40xf32, "gm">, %ba: memref<16x1xf32, "gm">, %half: memref<f32, "gm">, %r: memref<2x16x40xf32, "gm">)
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", template = "row"}
// CHECK-DAG:     %[[X:.*]] = ascend.alloc {offset = 0 : i64} : memref<2x16x40xf32, "ub">
// CHECK-DAG:     %[[B:.*]] = ascend.alloc {offset = 5120 : i64} : memref<1x16x8xf32, "ub">
// CHECK-DAG:     %[[T:.*]] = ascend.alloc {offset = 5632 : i64} : memref<2x16x40xf32, "ub">
// CHECK-DAG:     %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK:         %[[BG:.*]] = memref.expand_shape %ba {{\[}}[0 : i64, 1 : i64], [2 : i64]] output_shape [1, 16, 1]
// CHECK:         ascend.set_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:    ascend.wait_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:    ascend.copy %xa, %[[X]]
// CHECK-NEXT:    %[[BV:.*]] = memref.subview %[[B]][0, 0, 0] [1, 16, 1] [1, 1, 1]
// CHECK-NEXT:    ascend.copy %[[BG]], %[[BV]]
// CHECK-NEXT:    ascend.set_flag MTE2 -> V id 0
// CHECK-NEXT:    ascend.wait_flag MTE2 -> V id 0
// CHECK-NEXT:    ascend.vbrcb %[[BV]], %[[T]] : memref<1x16x1xf32, strided<[128, 8, 1]>, "ub">, memref<2x16x40xf32, "ub">
// CHECK-NEXT:    ascend.vadd %[[X]], %[[T]], %[[X]]
// CHECK-NEXT:    ascend.vmuls %[[X]], %[[HALF]], %[[X]]
// CHECK-NEXT:    ascend.vrelu %[[X]], %[[X]]
// CHECK-NEXT:    ascend.set_flag V -> MTE3 id 0
// CHECK-NEXT:    ascend.wait_flag V -> MTE3 id 0
// CHECK-NEXT:    ascend.copy %[[X]], %r
// CHECK-NEXT:    ascend.set_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:    ascend.wait_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:    ascend.return
// CHECK-NEXT:  } loc(fused["add", "mul", "relu"])
// CHECK-LABEL: func.func @chain(
// CHECK-SAME:    %x: memref<2x16x40xf32, "gm"> {onnx.name = "x"}, %b: memref<16x1xf32, "gm"> {onnx.name = "b"}, %y: memref<2x16x40xf32, "gm"> {onnx.name = "y", ascend.output})
// CHECK-NEXT:    %stream = ascend.stream 0
// CHECK-NEXT:    %half = ascend.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    ascend.launch @k0_add on %stream(%x, %b, %half, %y)
// CHECK-NEXT:    func.return
func.func @chain(%x: tensor<2x16x40xf32> {onnx.name = "x"}, %b: tensor<16x1xf32> {onnx.name = "b"}) -> (tensor<2x16x40xf32> {onnx.name = "y"}) {
  %y = graph.fusion "vector" (%x, %b) : (tensor<2x16x40xf32>, tensor<16x1xf32>) -> tensor<2x16x40xf32> {
  ^bb0(%xa: tensor<2x16x40xf32>, %ba: tensor<16x1xf32>):
    %half = graph.constant dense<0.5> : tensor<f32>
    %s = graph.add %xa, %ba : (tensor<2x16x40xf32>, tensor<16x1xf32>) -> tensor<2x16x40xf32> loc("add")
    %m = graph.mul %s, %half : (tensor<2x16x40xf32>, tensor<f32>) -> tensor<2x16x40xf32> loc("mul")
    %r = graph.relu %m : (tensor<2x16x40xf32>) -> tensor<2x16x40xf32> loc("relu")
    graph.yield %r : tensor<2x16x40xf32>
  } loc(fused["add", "mul", "relu"])
  func.return %y : tensor<2x16x40xf32>
}

// -----

// Many tiles: x [4, 256, 1024] f32 (4 MiB) with a per-channel bias. A channel row of 4 KiB
// fits ub, the image does not: tiles are [1, 11, 1024] (dim 0 one at a time, dim 1 cut to
// what fits two slots), 4 x 23 of them two per block on 46 of the 48 vector cores, plus the
// [1, 3, 1024] tails (rows 253..255) on the last blocks, through subviews of the same
// buffers. The bias tile depends on the tile, so it is loaded per tile. With double
// buffering each block runs two tiles per iteration on the buffers of slots 0 and 1 (flag
// ids 0 and 1, set before the loop, waited for after it).
// CHECK-LABEL: ascend.kernel @k0_add(
// CHECK-SAME:    attributes {block_dim = 48 : i64, core_type = "vector", template = "row"}
// CHECK-DAG:     %s0b1 = ascend.alloc {offset = 0 : i64} : memref<1x11x1024xf32, "ub">
// CHECK-DAG:     %s0b2 = ascend.alloc {offset = 45056 : i64} : memref<1x11x8xf32, "ub">
// CHECK-DAG:     %s1b1 = ascend.alloc {offset = 90464 : i64} : memref<1x11x1024xf32, "ub">
// CHECK:         %[[MAIN:.*]] = arith.cmpi ult, %block, %c46 : index
// CHECK-NEXT:    scf.if %[[MAIN]] {
// CHECK-NEXT:      ascend.set_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:      ascend.set_flag MTE3 -> MTE2 id 1
// CHECK-NEXT:      %[[START:.*]] = arith.muli %block, %c2 : index
// CHECK-NEXT:      %[[END:.*]] = arith.addi %[[START]], %c2 : index
// CHECK-NEXT:      scf.for %t = %[[START]] to %[[END]] step %c2 {
// CHECK-NEXT:        ascend.wait_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:        %[[N:.*]] = arith.divui %t, %c23 : index
// CHECK-NEXT:        %[[CT:.*]] = arith.remui %t, %c23 : index
// CHECK-NEXT:        %[[C:.*]] = arith.muli %[[CT]], %c11 : index
// CHECK-NEXT:        %[[XT:.*]] = memref.subview %xa[%[[N]], %[[C]], 0] [1, 11, 1024] [1, 1, 1]
// CHECK-NEXT:        ascend.copy %[[XT]], %s0b1
// CHECK:             ascend.set_flag MTE2 -> V id 0
// CHECK-NEXT:        ascend.wait_flag MTE2 -> V id 0
// CHECK-NEXT:        ascend.vbrcb
// CHECK-NEXT:        ascend.vadd %s0b1, %s0b3, %s0b1
// CHECK-NEXT:        ascend.vrelu %s0b1, %s0b1
// CHECK-NEXT:        ascend.set_flag V -> MTE3 id 0
// CHECK-NEXT:        ascend.wait_flag V -> MTE3 id 0
// CHECK-NEXT:        %[[YT:.*]] = memref.subview %r[%[[N]], %[[C]], 0] [1, 11, 1024] [1, 1, 1]
// CHECK-NEXT:        ascend.copy %s0b1, %[[YT]]
// CHECK-NEXT:        ascend.set_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:        %[[T1:.*]] = arith.addi %t, %c1 : index
// CHECK-NEXT:        ascend.wait_flag MTE3 -> MTE2 id 1
// CHECK:             ascend.copy %{{.*}}, %s1b1
// CHECK:             ascend.set_flag MTE2 -> V id 1
// CHECK-NEXT:        ascend.wait_flag MTE2 -> V id 1
// CHECK:             ascend.vadd %s1b1, %s1b3, %s1b1
// CHECK:             ascend.set_flag MTE3 -> MTE2 id 1
// CHECK-NEXT:      }
// CHECK-NEXT:      ascend.wait_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:      ascend.wait_flag MTE3 -> MTE2 id 1
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[TAIL:.*]] = arith.cmpi uge, %block, %c44 : index
// CHECK-NEXT:    scf.if %[[TAIL]] {
// CHECK:           memref.subview %s0b1[0, 0, 0] [1, 3, 1024] [1, 1, 1]
// CHECK:           memref.subview %xa[%{{.*}}, 253, 0] [1, 3, 1024] [1, 1, 1]
// CHECK:         ascend.return
// Without double buffering one set of buffers may take all of ub: [1, 22, 1024] tiles (a
// 48th of the tensor, rounded up), 4 x 11 of them on blocks 0-43, one each (no loop), and
// each image's [1, 14, 1024] tail on a block of its own, 44-47: every block runs one tile.
// SINGLE-LABEL: ascend.kernel @k0_add(%xa: memref<4x256x1024xf32, "gm">
// SINGLE-SAME:   block_dim = 48
// SINGLE:        %b1 = ascend.alloc {offset = 0 : i64} : memref<1x22x1024xf32, "ub">
// SINGLE-NOT:    id 1
// SINGLE-NOT:    scf.for
// SINGLE:        arith.cmpi ult, %block, %c44
// SINGLE:        memref.subview %xa[%{{.*}}, %{{.*}}, 0] [1, 22, 1024] [1, 1, 1]
// SINGLE:        arith.cmpi uge, %block, %c44
// SINGLE:        memref.subview %xa[%{{.*}}, 242, 0] [1, 14, 1024] [1, 1, 1]
// SINGLE:        ascend.return
func.func @wide(%x: tensor<4x256x1024xf32>, %b: tensor<256x1xf32>) -> tensor<4x256x1024xf32> {
  %y = graph.fusion "vector" (%x, %b) : (tensor<4x256x1024xf32>, tensor<256x1xf32>) -> tensor<4x256x1024xf32> {
  ^bb0(%xa: tensor<4x256x1024xf32>, %ba: tensor<256x1xf32>):
    %s = graph.add %xa, %ba : (tensor<4x256x1024xf32>, tensor<256x1xf32>) -> tensor<4x256x1024xf32> loc("add")
    %r = graph.relu %s : (tensor<4x256x1024xf32>) -> tensor<4x256x1024xf32> loc("relu")
    graph.yield %r : tensor<4x256x1024xf32>
  } loc(fused["add", "relu"])
  func.return %y : tensor<4x256x1024xf32>
}

// -----

// Unfused ops each become a kernel, launched in program order; the intermediate lives in
// the workspace (gm, 512-byte aligned offsets); compare/select ops produce and take i1 masks.
// CHECK-LABEL: ascend.kernel @k0_sub(
// CHECK:         ascend.vadds
// CHECK-LABEL: ascend.kernel @k1_less(
// CHECK:         ascend.vdup
// CHECK:         ascend.vcmp {{.*}} {mode = "lt"} : memref<40xf32, "ub">, memref<40xf32, "ub">, memref<40xi1, strided<[1]>, "ub">
// CHECK-LABEL: ascend.kernel @k2_where(
// CHECK:         ascend.vselect
// CHECK-LABEL: func.func @ops(
// CHECK-SAME:    %workspace: memref<1024xi8, "gm"> {ascend.workspace})
// CHECK:         %d = ascend.alloc {offset = 0 : i64} : memref<40xf32, "gm">
// CHECK-NEXT:    ascend.launch @k0_sub on %stream(%x, %one, %d)
// CHECK:         %m = ascend.alloc {offset = 512 : i64} : memref<40xi1, "gm">
// CHECK-NEXT:    ascend.launch @k1_less on %stream(%d, %zero, %m)
// CHECK-NEXT:    ascend.launch @k2_where on %stream(%m, %x, %d, %y)
func.func @ops(%x: tensor<40xf32>) -> tensor<40xf32> {
  %one = graph.constant dense<1.0> : tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %d = graph.sub %x, %one : (tensor<40xf32>, tensor<f32>) -> tensor<40xf32> loc("sub")
  %m = graph.less %d, %zero : (tensor<40xf32>, tensor<f32>) -> tensor<40xi1> loc("less")
  %y = graph.where %m, %x, %d : (tensor<40xi1>, tensor<40xf32>, tensor<40xf32>) -> tensor<40xf32> loc("where")
  func.return %y : tensor<40xf32>
}

// -----

// A 1.5 MiB add (f16, flat): double-buffered, each core takes two tiles of 8192 elements, so
// one tile's copies overlap the other's add: 96 tiles on 48 blocks, a loop of step 2 over the
// two slots' buffers. Without double buffering, one tile of 16384 a block and no loop.
// CHECK-LABEL: ascend.kernel @k0_add(%x: memref<1024x768xf16, "gm">
// CHECK-SAME:    block_dim = 48
// CHECK-DAG:     %s0b1 = ascend.alloc {offset = 0 : i64} : memref<8192xf16, "ub">
// CHECK-DAG:     %s1b1 = ascend.alloc {offset = 32768 : i64} : memref<8192xf16, "ub">
// CHECK:         scf.for %t = %{{.*}} to %{{.*}} step %c2
// SINGLE-LABEL: ascend.kernel @k0_add(%x: memref<1024x768xf16, "gm">
// SINGLE-SAME:   block_dim = 48
// SINGLE:        %b1 = ascend.alloc {offset = 0 : i64} : memref<16384xf16, "ub">
// SINGLE-NOT:    scf.for
// SINGLE:        ascend.return
func.func @two_tiles_a_core(%x: tensor<1024x768xf16>, %y: tensor<1024x768xf16>) -> tensor<1024x768xf16> {
  %s = graph.add %x, %y : (tensor<1024x768xf16>, tensor<1024x768xf16>) -> tensor<1024x768xf16> loc("add")
  func.return %s : tensor<1024x768xf16>
}
