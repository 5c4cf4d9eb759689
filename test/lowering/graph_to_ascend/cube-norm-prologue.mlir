// convert-graph-to-ascend, a cube kernel with a norm prologue (graph-fuse's norm-prologue):
// every block runs the row template's Add + RMSNorm on all the rows, stores the sum from
// block 0 alone and the normalised rows to its own copy in the kernel's gm scratch, then its
// cube tiles read the lhs from that copy.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_residual(
// CHECK-SAME:    %s: memref<1x2x64xf16, "gm">, %m: memref<1x2x96xf16, "gm">, %normed: memref<768xf16, "gm">) attributes {block_dim = 6 : i64, core_type = "mix", geir.scratch = 1 : i64, template = "matmul"
// CHECK:         %[[FIRST:.*]] = arith.cmpi ult, %block, %c1
// CHECK:         %[[SUM:.*]] = memref.collapse_shape %s
// CHECK:         %[[MINE:.*]] = arith.muli %block, %c2
// CHECK:         %[[COPIES:.*]] = memref.expand_shape %normed {{.*}} output_shape [12, 64]
// CHECK-NOT:     scf.for
// CHECK:         ascend.vadd
// CHECK:         ascend.vcast {{.*}} : memref<2x64xf16, "ub">, memref<2x64xf32, "ub">
// CHECK:         ascend.vreduce
// CHECK:         ascend.vsqrt
// CHECK:         ascend.vdiv
// CHECK:         scf.if %[[FIRST]] {
// CHECK-NEXT:      ascend.copy %{{.*}}, %[[SUM]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[TO:.*]] = memref.subview %[[COPIES]][%[[MINE]], 0] [2, 64]
// CHECK-NEXT:    ascend.copy %{{.*}}, %[[TO]]
// CHECK:         ascend.pipe_barrier ALL
// CHECK-NEXT:    %[[BASE:.*]] = arith.muli %block, %c2
// CHECK-NEXT:    %[[LHS:.*]] = memref.expand_shape %normed {{.*}} output_shape [12, 64]
// CHECK:         scf.for
// CHECK:           %[[FROM:.*]] = memref.subview %[[LHS]][%[[BASE]], 0] [2, 64]
// CHECK-NEXT:      ascend.copy %[[FROM]], %l1a0 {pad}
// CHECK:           ascend.mmad
// CHECK:       func.func @add_norm_matmul(
// CHECK:         %[[S:.*]] = ascend.alloc {offset = 0 : i64} : memref<768xf16, "gm">
// CHECK-NEXT:    ascend.launch @k0_residual on %stream(%x, %r, %w, %q, %h, %y, %[[S]])
// CHECK-NOT:     ascend.launch
func.func @add_norm_matmul(%x: tensor<1x2x64xf16> {onnx.name = "x"}, %r: tensor<1x2x64xf16> {onnx.name = "r"}, %w: tensor<64xf16> {onnx.name = "w"}, %q: tensor<64x96xf16> {onnx.name = "q"}) -> (tensor<1x2x64xf16> {onnx.name = "h"}, tensor<1x2x96xf16> {onnx.name = "y"}) {
  %h, %y = graph.fusion "cube+vector" (%x, %r, %w, %q) attributes {graph.pattern = "norm-prologue"} : (tensor<1x2x64xf16>, tensor<1x2x64xf16>, tensor<64xf16>, tensor<64x96xf16>) -> (tensor<1x2x64xf16>, tensor<1x2x96xf16>) {
  ^bb0(%a: tensor<1x2x64xf16>, %b: tensor<1x2x64xf16>, %g: tensor<64xf16>, %wq: tensor<64x96xf16>):
    %s = graph.add %a, %b : (tensor<1x2x64xf16>, tensor<1x2x64xf16>) -> tensor<1x2x64xf16> loc("residual")
    %n = graph.rms_norm %s, %g {epsilon = 1.0e-06 : f32} : (tensor<1x2x64xf16>, tensor<64xf16>) -> tensor<1x2x64xf16> loc("norm")
    %m = graph.matmul %n, %wq : (tensor<1x2x64xf16>, tensor<64x96xf16>) -> tensor<1x2x96xf16> loc("q_proj")
    graph.yield %s, %m : tensor<1x2x64xf16>, tensor<1x2x96xf16>
  } loc(fused["residual", "norm", "q_proj"])
  func.return %h, %y : tensor<1x2x64xf16>, tensor<1x2x96xf16>
}

// -----

// The normalised rows are also an output: the cube kernel does not take the norm (it is
// split: a row kernel, then the matmul reading its result).
// CHECK-LABEL: ascend.kernel @k0_norm(
// CHECK-SAME:    template = "row"
// CHECK-LABEL: ascend.kernel @k1_q_proj(
// CHECK-SAME:    core_type = "cube"
// CHECK-NOT:     geir.scratch
func.func @norm_returned(%x: tensor<1x2x64xf16> {onnx.name = "x"}, %w: tensor<64xf16> {onnx.name = "w"}, %q: tensor<64x96xf16> {onnx.name = "q"}) -> (tensor<1x2x64xf16> {onnx.name = "n"}, tensor<1x2x96xf16> {onnx.name = "y"}) {
  %n, %y = graph.fusion "cube+vector" (%x, %w, %q) attributes {graph.pattern = "norm-prologue"} : (tensor<1x2x64xf16>, tensor<64xf16>, tensor<64x96xf16>) -> (tensor<1x2x64xf16>, tensor<1x2x96xf16>) {
  ^bb0(%a: tensor<1x2x64xf16>, %g: tensor<64xf16>, %wq: tensor<64x96xf16>):
    %m = graph.rms_norm %a, %g {epsilon = 1.0e-06 : f32} : (tensor<1x2x64xf16>, tensor<64xf16>) -> tensor<1x2x64xf16> loc("norm")
    %p = graph.matmul %m, %wq : (tensor<1x2x64xf16>, tensor<64x96xf16>) -> tensor<1x2x96xf16> loc("q_proj")
    graph.yield %m, %p : tensor<1x2x64xf16>, tensor<1x2x96xf16>
  } loc(fused["norm", "q_proj"])
  func.return %n, %y : tensor<1x2x64xf16>, tensor<1x2x96xf16>
}
