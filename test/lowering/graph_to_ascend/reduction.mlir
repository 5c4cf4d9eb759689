// convert-graph-to-ascend: reductions keep whole rows in a tile and reduce them with vreduce
// into a [rows, 8] f32 buffer used through its [rows, 1] view (one 32-byte block per row).
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// reduce_mean over the last axis without keepdims: [6, 40] rows, 1/40 folded into vmuls; the
// [6] result is stored from the [6, 1] view.
// CHECK-LABEL: ascend.kernel @k0_mean(
// CHECK-SAME:    %x: memref<2x3x40xf32, "gm">, %y: memref<2x3xf32, "gm">)
// CHECK-DAG:     %[[X:.*]] = ascend.alloc {offset = 0 : i64} : memref<6x40xf32, "ub">
// CHECK-DAG:     %[[R:.*]] = ascend.alloc {offset = 960 : i64} : memref<6x8xf32, "ub">
// CHECK-DAG:     %[[INV:.*]] = arith.constant 2.500000e-02 : f32
// CHECK:         %[[XG:.*]] = memref.collapse_shape %x {{\[}}[0 : i64, 1 : i64], [2 : i64]] : memref<2x3x40xf32, "gm"> into memref<6x40xf32, "gm">
// CHECK:         %[[YG:.*]] = memref.expand_shape %{{.*}} output_shape [6, 1] : memref<6xf32, "gm"> into memref<6x1xf32, "gm">
// CHECK:         ascend.copy %[[XG]], %[[X]]
// CHECK:         %[[RV:.*]] = memref.subview %[[R]][0, 0] [6, 1] [1, 1] : memref<6x8xf32, "ub"> to memref<6x1xf32, strided<[8, 1]>, "ub">
// CHECK-NEXT:    ascend.vreduce %[[X]], %[[RV]] {kind = "sum", axes = array<i64: 1>}
// CHECK-NEXT:    ascend.vmuls %[[RV]], %[[INV]], %[[RV]]
// CHECK:         ascend.copy %[[RV]], %[[YG]]
func.func @mean(%x: tensor<2x3x40xf32>) -> tensor<2x3xf32> {
  %y = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<2x3x40xf32>) -> tensor<2x3xf32> loc("mean")
  func.return %y : tensor<2x3xf32>
}

// -----

// reduce_max over the middle axis with keepdims: the canonical space [2, 3, 40] keeps the
// reduced dim whole in the tile; vreduce over axis 1.
// CHECK-LABEL: ascend.kernel @k0_max(
// CHECK:         ascend.vreduce %{{.*}}, %{{.*}} {kind = "max", axes = array<i64: 1>} : memref<2x3x40xf32, "ub">, memref<2x1x40xf32, "ub">
func.func @max(%x: tensor<2x3x40xf32>) -> tensor<2x1x40xf32> {
  %y = graph.reduce_max %x {axes = array<i64: 1>} : (tensor<2x3x40xf32>) -> tensor<2x1x40xf32> loc("max")
  func.return %y : tensor<2x1x40xf32>
}

// -----

// reduce_l2 and reduce_log_sum_exp are built from vmul/vexp/vlog around vreduce; reduce_sum
// over every axis is one row.
// CHECK-LABEL: ascend.kernel @k0_l2(
// CHECK:         ascend.vmul %[[X:.*]], %[[X]], %[[SQ:.*]] :
// CHECK:         ascend.vreduce %[[SQ]], %[[R:.*]] {kind = "sum", axes = array<i64: 1>}
// CHECK-NEXT:    ascend.vsqrt %[[R]], %[[R]]
// CHECK-LABEL: ascend.kernel @k1_lse(
// CHECK:         ascend.vreduce %[[X:.*]], %[[M:.*]] {kind = "max", axes = array<i64: 1>}
// CHECK-NEXT:    ascend.vbrcb %[[M]], %[[MB:.*]] :
// CHECK-NEXT:    ascend.vsub %[[X]], %[[MB]], %[[E:.*]] :
// CHECK-NEXT:    ascend.vexp %[[E]], %[[E]]
// CHECK:         ascend.vreduce %[[E]], %[[S:.*]] {kind = "sum", axes = array<i64: 1>}
// CHECK-NEXT:    ascend.vlog %[[S]], %[[S]]
// CHECK-NEXT:    ascend.vadd %[[S]], %[[M]], %[[S]]
// CHECK-LABEL: ascend.kernel @k2_sum(
// CHECK:         ascend.vreduce %{{.*}}, %{{.*}} {kind = "sum", axes = array<i64: 0>} : memref<240xf32, "ub">, memref<1xf32, strided<[1]>, "ub">
func.func @others(%x: tensor<6x40xf32>) -> (tensor<6x1xf32>, tensor<6x1xf32>, tensor<1x1xf32>) {
  %a = graph.reduce_l2 %x {axes = array<i64: 1>} : (tensor<6x40xf32>) -> tensor<6x1xf32> loc("l2")
  %b = graph.reduce_log_sum_exp %x {axes = array<i64: 1>} : (tensor<6x40xf32>) -> tensor<6x1xf32> loc("lse")
  %c = graph.reduce_sum %x : (tensor<6x40xf32>) -> tensor<1x1xf32> loc("sum")
  func.return %a, %b, %c : tensor<6x1xf32>, tensor<6x1xf32>, tensor<1x1xf32>
}

// -----

// A reduction fused with its elementwise prologue and epilogue (x * x -> mean over H*W ->
// + 1e-5 -> sqrt): one kernel, the square never leaves ub.
// CHECK-LABEL: ascend.kernel @k0_sq(
// CHECK:         ascend.vmul %[[X:.*]], %[[X]], %[[X]]
// CHECK-NEXT:    %[[R:.*]] = memref.subview
// CHECK-NEXT:    ascend.vreduce %[[X]], %[[R]] {kind = "sum", axes = array<i64: 1>} : memref<8x64xf32, "ub">, memref<8x1xf32, strided<[8, 1]>, "ub">
// CHECK-NEXT:    ascend.vmuls %[[R]]
// CHECK-NEXT:    ascend.vadds %[[R]]
// CHECK-NEXT:    ascend.vsqrt %[[R]], %[[R]]
// CHECK-LABEL: func.func @rms(
// CHECK:         ascend.launch @k0_sq
// CHECK-NEXT:    func.return
func.func @rms(%x: tensor<1x8x8x8xf32>) -> tensor<1x8x1x1xf32> {
  %y = graph.fusion "vector" (%x) : (tensor<1x8x8x8xf32>) -> tensor<1x8x1x1xf32> {
  ^bb0(%a: tensor<1x8x8x8xf32>):
    %eps = graph.constant dense<1.0e-05> : tensor<f32>
    %s = graph.mul %a, %a : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> loc("sq")
    %m = graph.reduce_mean %s {axes = array<i64: 2, 3>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x1x1xf32> loc("mean")
    %e = graph.add %m, %eps : (tensor<1x8x1x1xf32>, tensor<f32>) -> tensor<1x8x1x1xf32> loc("eps")
    %r = graph.sqrt %e : (tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32> loc("sqrt")
    graph.yield %r : tensor<1x8x1x1xf32>
  } loc(fused["sq", "mean", "eps", "sqrt"])
  func.return %y : tensor<1x8x1x1xf32>
}
