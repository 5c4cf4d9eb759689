// convert-graph-to-ascend, cube matmul kernels in f16 and bf16: the cube multiplies 2-byte
// operands and accumulates in f32 in l0c; the FIX copy rounds each tile to the result's type
// on its way out. The epilogue computes in f16 on the vector unit, in f32 for bf16 (the
// vector unit has no bf16 arithmetic: vcast in, vcast out).
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// Tiles take bytes, not elements: with K = 4096 the l1 chunk of K and the l0 step hold twice
// as many f16 / bf16 elements as f32 ones in the same bytes - an f32 product of these shapes
// takes the same [64, 48] output tiles (block_dim 12: M = 2 x 64, N = 5 x 48 + 16) with
// [64, 512] l1 chunks and [64, 128] l0 steps (test_low_precision.py makes the same
// comparison) - while l0c stays f32. N is 256 (was 128): at N = 128 the tiling, pricing
// re-reads at the L2 bandwidth, picks [48, 32] tiles for f16 but [64, 32] for f32.
// CHECK-LABEL: ascend.kernel @k0_mm(
// CHECK-SAME:    %a: memref<128x4096xf16, "gm">, %b: memref<4096x256xf16, "gm">
// CHECK-SAME:    attributes {block_dim = 12 : i64, core_type = "cube", template = "matmul"}
// CHECK-NEXT:    ascend.alloc {offset = 0 : i64} : memref<64x1024xf16, "l1">
// CHECK:         ascend.alloc {offset = 0 : i64} : memref<64x256xf16, "l0a">
// CHECK:         ascend.alloc {offset = 0 : i64} : memref<64x48xf32, "l0c">
// CHECK:         ascend.mmad %{{.*}} : memref<64x256xf16, "l0a">, memref<256x48xf16, "l0b">, memref<64x48xf32, "l0c">
// CHECK:         ascend.copy %l0c, %{{.*}} : memref<64x48xf32, "l0c"> to memref<64x48xf16, strided<[256, 1], offset: ?>, "gm">
func.func @mm_f16(%a: tensor<128x4096xf16>, %b: tensor<4096x256xf16>) -> tensor<128x256xf16> {
  %y = graph.matmul %a, %b : (tensor<128x4096xf16>, tensor<4096x256xf16>) -> tensor<128x256xf16> loc("mm")
  func.return %y : tensor<128x256xf16>
}

// -----

// CHECK-LABEL: ascend.kernel @k0_mm(
// CHECK-SAME:    %a: memref<128x4096xbf16, "gm">, %b: memref<4096x256xbf16, "gm">
// CHECK-SAME:    attributes {block_dim = 12 : i64, core_type = "cube", template = "matmul"}
// CHECK-NEXT:    ascend.alloc {offset = 0 : i64} : memref<64x1024xbf16, "l1">
// CHECK:         ascend.alloc {offset = 0 : i64} : memref<64x256xbf16, "l0a">
// CHECK:         ascend.alloc {offset = 0 : i64} : memref<64x48xf32, "l0c">
// CHECK:         ascend.mmad %{{.*}} : memref<64x256xbf16, "l0a">, memref<256x48xbf16, "l0b">, memref<64x48xf32, "l0c">
// CHECK:         ascend.copy %l0c, %{{.*}} : memref<64x48xf32, "l0c"> to memref<64x48xbf16, strided<[256, 1], offset: ?>, "gm">
func.func @mm_bf16(%a: tensor<128x4096xbf16>, %b: tensor<4096x256xbf16>) -> tensor<128x256xbf16> {
  %y = graph.matmul %a, %b : (tensor<128x4096xbf16>, tensor<4096x256xbf16>) -> tensor<128x256xbf16> loc("mm")
  func.return %y : tensor<128x256xbf16>
}

// -----

// f16 with a bias and a relu after it: FIX rounds the f32 tile to f16 and stages it in the
// output; the epilogue adds the broadcast bias and applies the relu in f16.
// CHECK-LABEL: ascend.kernel @k0_f(
// CHECK-SAME:    attributes {block_dim = 20 : i64, core_type = "mix", template = "matmul"}
// CHECK:         ascend.alloc {offset = 0 : i64} : memref<16x16xf32, "l0c">
// CHECK-NEXT:    %[[V0:.*]] = ascend.alloc {offset = 0 : i64} : memref<16x16xf16, "ub">
// CHECK-NEXT:    %[[V1:.*]] = ascend.alloc {offset = 512 : i64} : memref<16x16xf16, "ub">
// CHECK-NEXT:    %[[S0:.*]] = ascend.alloc {offset = 1024 : i64} : memref<1x16xf16, "ub">
// CHECK:         ascend.mmad %{{.*}} : memref<16x96xf16, "l0a">, memref<96x16xf16, "l0b">, memref<16x16xf32, "l0c">
// CHECK:         ascend.copy %l0c, %{{.*}} : memref<16x16xf32, "l0c"> to memref<16x16xf16, strided<[80, 1], offset: ?>, "gm">
// Rows 0-7 on the block's first vector core (8-15 on the second).
// CHECK:         ascend.sub_block 0 {
// CHECK-NEXT:      ascend.wait_flag FIX -> MTE2 id 0
// CHECK-NEXT:      %[[W0:.*]] = memref.subview %[[V0]][0, 0] [8, 16]
// CHECK-NEXT:      %[[W1:.*]] = memref.subview %[[V1]][0, 0] [8, 16]
// CHECK:           %[[STAGED:.*]] = memref.subview %{{.*}} [8, 16]
// CHECK-NEXT:      ascend.copy %[[STAGED]], %[[W0]]
// CHECK:           ascend.wait_flag MTE2 -> V id 0
// CHECK-NEXT:      ascend.vbrcb %[[S0]], %[[W1]] : memref<1x16xf16, "ub">, memref<8x16xf16, strided<[16, 1]>, "ub">
// CHECK-NEXT:      ascend.vadd %[[W0]], %[[W1]], %[[W0]] : memref<8x16xf16, strided<[16, 1]>, "ub">
// CHECK-NEXT:      ascend.vrelu %[[W0]], %[[W0]] : memref<8x16xf16, strided<[16, 1]>, "ub">
// CHECK-NEXT:      ascend.set_flag V -> MTE3 id 0
// CHECK-NEXT:      ascend.wait_flag V -> MTE3 id 0
// CHECK-NEXT:      ascend.copy %[[W0]], %[[STAGED]] : memref<8x16xf16, strided<[16, 1]>, "ub"> to memref<8x16xf16, strided<[80, 1], offset: ?>, "gm">
// CHECK:         ascend.sub_block 1 {
func.func @mm_bias_relu_f16(%a: tensor<64x96xf16>, %b: tensor<96x80xf16>, %c: tensor<80xf16>) -> tensor<64x80xf16> {
  %y = graph.fusion "cube+vector" (%a, %b, %c) : (tensor<64x96xf16>, tensor<96x80xf16>, tensor<80xf16>) -> tensor<64x80xf16> {
  ^bb0(%x: tensor<64x96xf16>, %w: tensor<96x80xf16>, %bias: tensor<80xf16>):
    %m = graph.matmul %x, %w : (tensor<64x96xf16>, tensor<96x80xf16>) -> tensor<64x80xf16> loc("mm")
    %s = graph.add %m, %bias : (tensor<64x80xf16>, tensor<80xf16>) -> tensor<64x80xf16> loc("bias")
    %r = graph.relu %s : (tensor<64x80xf16>) -> tensor<64x80xf16> loc("relu")
    graph.yield %r : tensor<64x80xf16>
  } loc("f")
  func.return %y : tensor<64x80xf16>
}

// -----

// bf16: the same kernel, the pool of ub tiles in f32; the staged tile and the bias land in
// bf16 staging tiles (in0, in1) that the vector unit converts first, and the result is
// converted into a bf16 staging tile (out0) that MTE3 stores.
// CHECK-LABEL: ascend.kernel @k0_f(
// CHECK-SAME:    attributes {block_dim = 20 : i64, core_type = "mix", template = "matmul"}
// CHECK:         %[[V0:.*]] = ascend.alloc {offset = 0 : i64} : memref<16x16xf32, "ub">
// CHECK-NEXT:    %[[V1:.*]] = ascend.alloc {offset = 1024 : i64} : memref<16x16xf32, "ub">
// CHECK-NEXT:    %[[S0:.*]] = ascend.alloc {offset = 2048 : i64} : memref<1x16xf32, "ub">
// CHECK-NEXT:    %[[IN0:.*]] = ascend.alloc {offset = 2112 : i64} : memref<16x16xbf16, "ub">
// CHECK-NEXT:    %[[IN1:.*]] = ascend.alloc {offset = 2624 : i64} : memref<1x16xbf16, "ub">
// CHECK-NEXT:    %[[OUT0:.*]] = ascend.alloc {offset = 2656 : i64} : memref<16x16xbf16, "ub">
// CHECK:         ascend.mmad %{{.*}} : memref<16x96xbf16, "l0a">, memref<96x16xbf16, "l0b">, memref<16x16xf32, "l0c">
// CHECK:         ascend.copy %l0c, %{{.*}} : memref<16x16xf32, "l0c"> to memref<16x16xbf16, strided<[80, 1], offset: ?>, "gm">
// CHECK:         ascend.sub_block 0 {
// CHECK-NEXT:      ascend.wait_flag FIX -> MTE2 id 0
// CHECK-NEXT:      %[[W0:.*]] = memref.subview %[[V0]][0, 0] [8, 16]
// CHECK-NEXT:      %[[W1:.*]] = memref.subview %[[V1]][0, 0] [8, 16]
// CHECK:           %[[STAGED:.*]] = memref.subview %{{.*}} [8, 16]
// CHECK-NEXT:      %[[I0:.*]] = memref.subview %[[IN0]][0, 0] [8, 16]
// CHECK-NEXT:      ascend.copy %[[STAGED]], %[[I0]] : memref<8x16xbf16, strided<[80, 1], offset: ?>, "gm"> to memref<8x16xbf16, strided<[16, 1]>, "ub">
// CHECK:           ascend.copy %{{.*}}, %[[IN1]] : memref<1x16xbf16, strided<[80, 1], offset: ?>, "gm"> to memref<1x16xbf16, "ub">
// CHECK:           ascend.wait_flag MTE2 -> V id 0
// CHECK-NEXT:      ascend.vcast %[[I0]], %[[W0]] : memref<8x16xbf16, strided<[16, 1]>, "ub">, memref<8x16xf32, strided<[16, 1]>, "ub">
// CHECK-NEXT:      ascend.vcast %[[IN1]], %[[S0]] : memref<1x16xbf16, "ub">, memref<1x16xf32, "ub">
// CHECK-NEXT:      ascend.vbrcb %[[S0]], %[[W1]] : memref<1x16xf32, "ub">, memref<8x16xf32, strided<[16, 1]>, "ub">
// CHECK-NEXT:      ascend.vadd %[[W0]], %[[W1]], %[[W0]] : memref<8x16xf32, strided<[16, 1]>, "ub">
// CHECK-NEXT:      ascend.vrelu %[[W0]], %[[W0]] : memref<8x16xf32, strided<[16, 1]>, "ub">
// CHECK-NEXT:      %[[O0:.*]] = memref.subview %[[OUT0]][0, 0] [8, 16]
// CHECK-NEXT:      ascend.vcast %[[W0]], %[[O0]] : memref<8x16xf32, strided<[16, 1]>, "ub">, memref<8x16xbf16, strided<[16, 1]>, "ub">
// CHECK-NEXT:      ascend.set_flag V -> MTE3 id 0
// CHECK-NEXT:      ascend.wait_flag V -> MTE3 id 0
// CHECK-NEXT:      ascend.copy %[[O0]], %[[STAGED]] : memref<8x16xbf16, strided<[16, 1]>, "ub"> to memref<8x16xbf16, strided<[80, 1], offset: ?>, "gm">
// CHECK:         ascend.sub_block 1 {
func.func @mm_bias_relu_bf16(%a: tensor<64x96xbf16>, %b: tensor<96x80xbf16>, %c: tensor<80xbf16>) -> tensor<64x80xbf16> {
  %y = graph.fusion "cube+vector" (%a, %b, %c) : (tensor<64x96xbf16>, tensor<96x80xbf16>, tensor<80xbf16>) -> tensor<64x80xbf16> {
  ^bb0(%x: tensor<64x96xbf16>, %w: tensor<96x80xbf16>, %bias: tensor<80xbf16>):
    %m = graph.matmul %x, %w : (tensor<64x96xbf16>, tensor<96x80xbf16>) -> tensor<64x80xbf16> loc("mm")
    %s = graph.add %m, %bias : (tensor<64x80xbf16>, tensor<80xbf16>) -> tensor<64x80xbf16> loc("bias")
    %r = graph.relu %s : (tensor<64x80xbf16>) -> tensor<64x80xbf16> loc("relu")
    graph.yield %r : tensor<64x80xbf16>
  } loc("f")
  func.return %y : tensor<64x80xbf16>
}

// -----

// A relu right after the product rides on the FIX copy in bf16 too: no vector work at all.
// CHECK-LABEL: ascend.kernel @k0_f(
// CHECK-SAME:    attributes {block_dim = 20 : i64, core_type = "cube", template = "matmul"}
// CHECK-NOT:     "ub"
// CHECK:         ascend.copy %l0c, %{{.*}} {relu} : memref<16x16xf32, "l0c"> to memref<16x16xbf16
func.func @mm_relu_bf16(%a: tensor<64x96xbf16>, %b: tensor<96x80xbf16>) -> tensor<64x80xbf16> {
  %y = graph.fusion "cube+vector" (%a, %b) : (tensor<64x96xbf16>, tensor<96x80xbf16>) -> tensor<64x80xbf16> {
  ^bb0(%x: tensor<64x96xbf16>, %w: tensor<96x80xbf16>):
    %m = graph.matmul %x, %w : (tensor<64x96xbf16>, tensor<96x80xbf16>) -> tensor<64x80xbf16> loc("mm")
    %r = graph.relu %m : (tensor<64x80xbf16>) -> tensor<64x80xbf16> loc("relu")
    graph.yield %r : tensor<64x80xbf16>
  } loc("f")
  func.return %y : tensor<64x80xbf16>
}
