// convert-graph-to-ascend: softmax, log_softmax and layer_norm are row kernels - a reduction,
// a broadcast back over the row (vbrcb), elementwise ops - on tiles that hold whole rows.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// softmax over the last axis of [2, 8, 40]: tile [16, 40] (rows collapsed), exp(x - max) /
// sum, in place in the input buffer.
// CHECK-LABEL: ascend.kernel @k0_softmax(
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", template = "row"}
// CHECK-DAG:     %[[X:.*]] = ascend.alloc {offset = 0 : i64} : memref<16x40xf32, "ub">
// CHECK-DAG:     %[[M:.*]] = ascend.alloc {offset = 2560 : i64} : memref<16x8xf32, "ub">
// CHECK-DAG:     %[[MB:.*]] = ascend.alloc {offset = 3072 : i64} : memref<16x40xf32, "ub">
// CHECK:         ascend.copy %{{.*}}, %[[X]] : memref<16x40xf32, "gm"> to memref<16x40xf32, "ub">
// CHECK:         %[[MV:.*]] = memref.subview %[[M]][0, 0] [16, 1] [1, 1]
// CHECK-NEXT:    ascend.vreduce %[[X]], %[[MV]] {kind = "max", axes = array<i64: 1>}
// CHECK-NEXT:    ascend.vbrcb %[[MV]], %[[MB]]
// CHECK-NEXT:    ascend.vsub %[[X]], %[[MB]], %[[X]]
// CHECK-NEXT:    ascend.vexp %[[X]], %[[X]]
// CHECK-NEXT:    %[[SV:.*]] = memref.subview
// CHECK-NEXT:    ascend.vreduce %[[X]], %[[SV]] {kind = "sum", axes = array<i64: 1>}
// CHECK-NEXT:    ascend.vbrcb %[[SV]], %[[SB:.*]] :
// CHECK-NEXT:    ascend.vdiv %[[X]], %[[SB]], %[[X]]
// CHECK:         ascend.copy %[[X]], %{{.*}} : memref<16x40xf32, "ub"> to memref<16x40xf32, "gm">
func.func @softmax(%x: tensor<2x8x40xf32>) -> tensor<2x8x40xf32> {
  %y = graph.softmax %x {axis = -1 : i64} : (tensor<2x8x40xf32>) -> tensor<2x8x40xf32> loc("softmax")
  func.return %y : tensor<2x8x40xf32>
}

// -----

// safe_softmax (PyTorch's: an all -inf row gives 0): softmax with the row max clamped to the
// lowest finite f16 (x - max is then -inf, exp 0, not NaN) and the row sum to at least 1.
// CHECK-LABEL: ascend.kernel @k0_safe_softmax(
// CHECK-DAG:     %[[LOW:.*]] = arith.constant -6.550400e+04 : f16
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1.000000e+00 : f16
// CHECK:         ascend.vreduce %[[X:.*]], %[[M:.*]] {kind = "max", axes = array<i64: 1>}
// CHECK-NEXT:    ascend.vmaxs %[[M]], %[[LOW]], %[[M]]
// CHECK:         ascend.vbrcb %[[M]], %[[MB:.*]] :
// CHECK-NEXT:    ascend.vsub %[[X]], %[[MB]], %[[X]]
// CHECK-NEXT:    ascend.vexp %[[X]], %[[X]]
// CHECK:         ascend.vreduce %[[X]], %[[S:.*]] {kind = "sum", axes = array<i64: 1>}
// CHECK-NEXT:    ascend.vmaxs %[[S]], %[[ONE]], %[[S]]
// CHECK:         ascend.vbrcb %[[S]], %[[SB:.*]] :
// CHECK-NEXT:    ascend.vdiv %[[X]], %[[SB]], %[[X]]
func.func @safe_softmax(%x: tensor<2x8x40xf16>) -> tensor<2x8x40xf16> {
  %y = graph.safe_softmax %x {axis = -1 : i64} : (tensor<2x8x40xf16>) -> tensor<2x8x40xf16> loc("safe_softmax")
  func.return %y : tensor<2x8x40xf16>
}

// -----

// log_softmax over axis 1 of NCHW: the canonical space is [N, C, H*W] and the reduction runs
// over the middle dim of the tile, the inner dim stays contiguous (36 f32 padded to 40).
// CHECK-LABEL: ascend.kernel @k0_logsoftmax(
// CHECK:         ascend.vreduce %{{.*}}, %{{.*}} {kind = "max", axes = array<i64: 1>} : memref<2x10x36xf32, strided<[400, 40, 1]>, "ub">, memref<2x1x36xf32, strided<[40, 40, 1]>, "ub">
// CHECK:         ascend.vsub
// CHECK:         ascend.vexp
// CHECK:         ascend.vreduce %{{.*}}, %{{.*}} {kind = "sum", axes = array<i64: 1>} : memref<2x10x36xf32, strided<[400, 40, 1]>, "ub">, memref<2x1x36xf32, strided<[40, 40, 1]>, "ub">
// CHECK-NEXT:    ascend.vlog
// CHECK:         ascend.vbrcb
// CHECK-NEXT:    ascend.vsub
func.func @logsoftmax(%x: tensor<2x10x6x6xf32>) -> tensor<2x10x6x6xf32> {
  %y = graph.log_softmax %x {axis = 1 : i64} : (tensor<2x10x6x6xf32>) -> tensor<2x10x6x6xf32> loc("logsoftmax")
  func.return %y : tensor<2x10x6x6xf32>
}

// -----

// A residual add fused with layer_norm over the last axis (what graph-fuse builds for a
// transformer block): gamma and beta do not depend on the tile, so with several tiles they
// are loaded once before the tile loop (flag id 2); per tile: add, mean, d = x - mean,
// var = mean(d * d), d / sqrt(var + eps) * gamma + beta - every row-sized temporary (the
// broadcast mean, d * d, the broadcast variance, gamma and beta) in one buffer, each given
// back as soon as it is read, so long rows fit ub.
// CHECK-LABEL: ascend.kernel @k0_residual(
// CHECK-SAME:    attributes {block_dim = 32 : i64, core_type = "vector", template = "row"}
// CHECK:         ascend.copy %{{.*}}, %[[G:.*]] : memref<1x512xf32, "gm"> to memref<1x512xf32, "ub">
// CHECK-NEXT:    ascend.copy %{{.*}}, %[[B:.*]] : memref<1x512xf32, "gm"> to memref<1x512xf32, "ub">
// CHECK-NEXT:    ascend.set_flag MTE2 -> V id 2
// CHECK-NEXT:    ascend.wait_flag MTE2 -> V id 2
// CHECK:         ascend.copy %{{.*}}, %[[X:.*]] : memref<8x512xf32, strided<[512, 1], offset: ?>, "gm"> to memref<8x512xf32, "ub">
// CHECK:         ascend.copy %{{.*}}, %[[R:.*]] : memref<8x512xf32, strided<[512, 1], offset: ?>, "gm"> to memref<8x512xf32, "ub">
// CHECK:         ascend.vadd %[[X]], %[[R]], %[[X]]
// CHECK-NEXT:    %[[MEAN:.*]] = memref.subview
// CHECK-NEXT:    ascend.vreduce %[[X]], %[[MEAN]] {kind = "sum", axes = array<i64: 1>}
// CHECK-NEXT:    ascend.vmuls %[[MEAN]]
// CHECK-NEXT:    ascend.vbrcb %[[MEAN]], %[[MB:.*]] :
// CHECK-NEXT:    ascend.vsub %[[X]], %[[MB]], %[[X]]
// CHECK-NEXT:    ascend.vmul %[[X]], %[[X]], %[[MB]] :
// CHECK-NEXT:    %[[VAR:.*]] = memref.subview
// CHECK-NEXT:    ascend.vreduce %[[MB]], %[[VAR]] {kind = "sum", axes = array<i64: 1>}
// CHECK-NEXT:    ascend.vmuls %[[VAR]]
// CHECK-NEXT:    ascend.vadds %[[VAR]]
// CHECK-NEXT:    ascend.vsqrt %[[VAR]], %[[VAR]]
// CHECK-NEXT:    ascend.vbrcb %[[VAR]], %[[MB]] :
// CHECK-NEXT:    ascend.vdiv %[[X]], %[[MB]], %[[X]]
// CHECK-NEXT:    ascend.vbrcb %[[G]], %[[MB]] : memref<1x512xf32, "ub">, memref<8x512xf32, "ub">
// CHECK-NEXT:    ascend.vmul %[[X]], %[[MB]], %[[X]]
// CHECK-NEXT:    ascend.vbrcb %[[B]], %[[MB]] : memref<1x512xf32, "ub">, memref<8x512xf32, "ub">
// CHECK-NEXT:    ascend.vadd %[[X]], %[[MB]], %[[X]]
func.func @add_layernorm(%x: tensor<4x64x512xf32>, %r: tensor<4x64x512xf32>, %g: tensor<512xf32>, %b: tensor<512xf32>) -> tensor<4x64x512xf32> {
  %y = graph.fusion "vector" (%x, %r, %g, %b) : (tensor<4x64x512xf32>, tensor<4x64x512xf32>, tensor<512xf32>, tensor<512xf32>) -> tensor<4x64x512xf32> {
  ^bb0(%xa: tensor<4x64x512xf32>, %ra: tensor<4x64x512xf32>, %ga: tensor<512xf32>, %ba: tensor<512xf32>):
    %h = graph.add %xa, %ra : (tensor<4x64x512xf32>, tensor<4x64x512xf32>) -> tensor<4x64x512xf32> loc("residual")
    %n = graph.layer_norm %h, %ga, %ba {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x64x512xf32>, tensor<512xf32>, tensor<512xf32>) -> tensor<4x64x512xf32> loc("ln")
    graph.yield %n : tensor<4x64x512xf32>
  } loc(fused["residual", "ln"])
  func.return %y : tensor<4x64x512xf32>
}
