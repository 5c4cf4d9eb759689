// convert-graph-to-ascend, cube kernels: a projection split into heads.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// A decoder's q projection: matmul, reshape to [B, S, H, D], transpose to [B, H, S, D].
// The transpose is the kernel's output pattern: each [16, 16] tile (one head here: the
// tiling takes nt a multiple or a divisor of D) is written by its FIX copy to the head's
// rows of the output seen as [B * H * S, D] - row (b * H + h) * S + s, column d - and no
// data kernel follows.
// CHECK-LABEL: ascend.kernel @k0_q_proj(
// CHECK-SAME:    %t: memref<1x4x32x16xf16, "gm">) attributes {block_dim = 8 : i64, core_type = "cube", template = "matmul"}
// CHECK:         %[[OUT:.*]] = memref.collapse_shape %t {{\[}}[0 : i64, 1 : i64, 2 : i64], [3 : i64]] : memref<1x4x32x16xf16, "gm"> into memref<128x16xf16, "gm">
// CHECK:         scf.for %[[T:.*]] = %block to %c8 step %c8 {
// CHECK-NEXT:      %[[M:.*]] = arith.divui %[[T]], %c4 : index
// CHECK-NEXT:      %[[N:.*]] = arith.remui %[[T]], %c4 : index
// CHECK-NEXT:      %[[M0:.*]] = arith.muli %[[M]], %c16 : index
// CHECK-NEXT:      %[[N0:.*]] = arith.muli %[[N]], %c16 : index
// CHECK:           ascend.mmad %l0a0, %l0b0, %l0c {init}
// CHECK:           ascend.wait_flag M -> FIX id 0
// CHECK-NEXT:      %[[H:.*]] = arith.divui %[[N0]], %c16 : index
// CHECK-NEXT:      %[[HS:.*]] = arith.muli %[[H]], %c32 : index
// CHECK-NEXT:      %[[ROW:.*]] = arith.addi %[[HS]], %[[M0]] : index
// CHECK-NEXT:      %[[D0:.*]] = arith.remui %[[N0]], %c16 : index
// CHECK-NEXT:      %[[DST:.*]] = memref.subview %[[OUT]][%[[ROW]], %[[D0]]] [16, 16] [1, 1]
// CHECK-NEXT:      ascend.copy %l0c, %[[DST]] : memref<16x16xf32, "l0c"> to memref<16x16xf16, strided<[16, 1], offset: ?>, "gm">
// CHECK-NEXT:      ascend.set_flag FIX -> M id 0
// CHECK-NEXT:    }
// CHECK-NOT:   ascend.kernel
// CHECK:       ascend.launch @k0_q_proj on %stream(%x, %w, %s, %y)
// CHECK-NOT:   ascend.launch
func.func @heads(%x: tensor<1x32x64xf16> {onnx.name = "x"}, %w: tensor<64x64xf16> {onnx.name = "w"}) -> (tensor<1x4x32x16xf16> {onnx.name = "q"}) {
  %y = graph.fusion "cube+vector" (%x, %w) attributes {graph.pattern = "matmul-epilogue"} : (tensor<1x32x64xf16>, tensor<64x64xf16>) -> tensor<1x4x32x16xf16> {
  ^bb0(%a: tensor<1x32x64xf16>, %b: tensor<64x64xf16>):
    %m = graph.matmul %a, %b : (tensor<1x32x64xf16>, tensor<64x64xf16>) -> tensor<1x32x64xf16> loc("q_proj")
    %s = graph.constant dense<[1, 32, 4, 16]> : tensor<4xi64>
    %r = graph.reshape %m, %s : (tensor<1x32x64xf16>, tensor<4xi64>) -> tensor<1x32x4x16xf16> loc("q_reshape")
    %t = graph.transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x4x16xf16>) -> tensor<1x4x32x16xf16> loc("q_transpose")
    graph.yield %t : tensor<1x4x32x16xf16>
  } loc("q_proj")
  func.return %y : tensor<1x4x32x16xf16>
}

// -----

// Heads of 8 columns (half a fractal): the FIX copies cannot split the accumulator there.
// The fusion is split: the matmul kernel writes [B, S, H, D], a data kernel transposes it.
// CHECK-LABEL: ascend.kernel @k0_q_proj(
// CHECK-SAME:    %r: memref<1x32x8x8xf16, "gm">) attributes {{{.*}}template = "matmul"
// CHECK:       ascend.kernel @k1_q_transpose(%r: memref<1x32x8x8xf16, "gm">, %t: memref<1x8x32x8xf16, "gm">)
// CHECK-SAME:    template = "data"
func.func @narrow_heads(%x: tensor<1x32x64xf16> {onnx.name = "x"}, %w: tensor<64x64xf16> {onnx.name = "w"}) -> (tensor<1x8x32x8xf16> {onnx.name = "q"}) {
  %y = graph.fusion "cube+vector" (%x, %w) attributes {graph.pattern = "matmul-epilogue"} : (tensor<1x32x64xf16>, tensor<64x64xf16>) -> tensor<1x8x32x8xf16> {
  ^bb0(%a: tensor<1x32x64xf16>, %b: tensor<64x64xf16>):
    %m = graph.matmul %a, %b : (tensor<1x32x64xf16>, tensor<64x64xf16>) -> tensor<1x32x64xf16> loc("q_proj")
    %s = graph.constant dense<[1, 32, 8, 8]> : tensor<4xi64>
    %r = graph.reshape %m, %s : (tensor<1x32x64xf16>, tensor<4xi64>) -> tensor<1x32x8x8xf16> loc("q_reshape")
    %t = graph.transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x8x8xf16>) -> tensor<1x8x32x8xf16> loc("q_transpose")
    graph.yield %t : tensor<1x8x32x8xf16>
  } loc("q_proj")
  func.return %y : tensor<1x8x32x8xf16>
}

// -----

// Not a head split: [B, S, H, D] to [B, H, D, S] moves D too. Split as above.
// CHECK-LABEL: ascend.kernel @k0_k_proj(
// CHECK:       ascend.kernel @k1_k_transpose(
// CHECK-SAME:    template = "data"
func.func @other_perm(%x: tensor<1x32x64xf16> {onnx.name = "x"}, %w: tensor<64x64xf16> {onnx.name = "w"}) -> (tensor<1x4x16x32xf16> {onnx.name = "k"}) {
  %y = graph.fusion "cube+vector" (%x, %w) attributes {graph.pattern = "matmul-epilogue"} : (tensor<1x32x64xf16>, tensor<64x64xf16>) -> tensor<1x4x16x32xf16> {
  ^bb0(%a: tensor<1x32x64xf16>, %b: tensor<64x64xf16>):
    %m = graph.matmul %a, %b : (tensor<1x32x64xf16>, tensor<64x64xf16>) -> tensor<1x32x64xf16> loc("k_proj")
    %s = graph.constant dense<[1, 32, 4, 16]> : tensor<4xi64>
    %r = graph.reshape %m, %s : (tensor<1x32x64xf16>, tensor<4xi64>) -> tensor<1x32x4x16xf16> loc("k_reshape")
    %t = graph.transpose %r {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x32x4x16xf16>) -> tensor<1x4x16x32xf16> loc("k_transpose")
    graph.yield %t : tensor<1x4x16x32xf16>
  } loc("k_proj")
  func.return %y : tensor<1x4x16x32xf16>
}
