// convert-graph-to-ascend, cube kernels: a gated matmul (SwiGLU) and several projections of
// one lhs (LLaMA's q / k / v), each one kernel; what is neither is split.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// silu(x W_gate) * (x W_up): per output tile the kernel computes the partner product (up)
// first and FIX stages it in the kernel's own gm scratch (%partner), then the gate product,
// which FIX stages in the output; the epilogue loads both tiles and writes the product.
// CHECK-LABEL: ascend.kernel @k0_gate_proj(
// CHECK-SAME:    %p: memref<1x40x96xf16, "gm">, %partner: memref<40x96xf16, "gm">) attributes {block_dim = 18 : i64, core_type = "mix", geir.scratch = 1 : i64, template = "matmul"}
// CHECK:         %[[OUT:.*]] = memref.collapse_shape %p
// CHECK:         scf.for
// CHECK:           %[[BU:.*]] = memref.subview %bu[0, %[[N0:.*]]] [64, 16]
// CHECK-NEXT:      ascend.copy %[[BU]], %l1b0
// CHECK:           ascend.mmad %l0a0, %l0b0, %l0c {init}
// CHECK:           ascend.wait_flag M -> FIX id 0
// CHECK-NEXT:      %[[PT:.*]] = memref.subview %partner[%[[M0:.*]], %[[N0]]] [16, 16]
// CHECK-NEXT:      ascend.copy %l0c, %[[PT]]
// CHECK-NEXT:      ascend.set_flag FIX -> M id 0
// CHECK:           %[[BG:.*]] = memref.subview %bg[0, %[[N0]]] [64, 16]
// CHECK-NEXT:      ascend.copy %[[BG]], %l1b0
// CHECK:           ascend.mmad %l0a0, %l0b0, %l0c {init}
// CHECK:           %[[YT:.*]] = memref.subview %[[OUT]][%[[M0]], %[[N0]]] [16, 16]
// CHECK-NEXT:      ascend.copy %l0c, %[[YT]]
// The epilogue, its rows 0-7 on the block's first vector core (rows 8-15 on the second).
// CHECK:           ascend.sub_block 0 {
// CHECK-NEXT:        ascend.wait_flag FIX -> MTE2 id 0
// CHECK-NEXT:        %[[V0:.*]] = memref.subview %v0[0, 0] [8, 16]
// CHECK-NEXT:        %[[V1:.*]] = memref.subview %v1[0, 0] [8, 16]
// CHECK-NEXT:        %[[V2:.*]] = memref.subview %v2[0, 0] [8, 16]
// CHECK:             %[[Y0:.*]] = memref.subview %[[OUT]][%[[M0]], %[[N0]]] [8, 16]
// CHECK-NEXT:        ascend.copy %[[Y0]], %[[V0]]
// CHECK-NEXT:        %[[PT2:.*]] = memref.subview %partner[%[[M0]], %[[N0]]] [8, 16]
// CHECK-NEXT:        ascend.copy %[[PT2]], %[[V1]]
// CHECK:             ascend.vsigmoid %[[V0]], %[[V2]]
// CHECK-NEXT:        ascend.vmul %[[V0]], %[[V2]], %[[V0]]
// CHECK-NEXT:        ascend.vmul %[[V0]], %[[V1]], %[[V0]]
// CHECK:             ascend.copy %[[V0]], %[[Y0]]
// CHECK:           ascend.sub_block 1 {
// CHECK:       func.func @swiglu(
// CHECK:         %[[S:.*]] = ascend.alloc {offset = 0 : i64} : memref<40x96xf16, "gm">
// CHECK-NEXT:    ascend.launch @k0_gate_proj on %stream(%x, %wg, %wu, %y, %[[S]])
// CHECK-NOT:     ascend.launch
func.func @swiglu(%x: tensor<1x40x64xf16> {onnx.name = "x"}, %wg: tensor<64x96xf16> {onnx.name = "wg"}, %wu: tensor<64x96xf16> {onnx.name = "wu"}) -> (tensor<1x40x96xf16> {onnx.name = "y"}) {
  %y = graph.fusion "cube+vector" (%x, %wg, %wu) attributes {graph.pattern = "matmul-epilogue"} : (tensor<1x40x64xf16>, tensor<64x96xf16>, tensor<64x96xf16>) -> tensor<1x40x96xf16> {
  ^bb0(%a: tensor<1x40x64xf16>, %bg: tensor<64x96xf16>, %bu: tensor<64x96xf16>):
    %g = graph.matmul %a, %bg : (tensor<1x40x64xf16>, tensor<64x96xf16>) -> tensor<1x40x96xf16> loc("gate_proj")
    %s = graph.sigmoid %g : (tensor<1x40x96xf16>) -> tensor<1x40x96xf16> loc("act/sigmoid")
    %silu = graph.mul %g, %s : (tensor<1x40x96xf16>, tensor<1x40x96xf16>) -> tensor<1x40x96xf16> loc("act/mul")
    %u = graph.matmul %a, %bu : (tensor<1x40x64xf16>, tensor<64x96xf16>) -> tensor<1x40x96xf16> loc("up_proj")
    %p = graph.mul %silu, %u : (tensor<1x40x96xf16>, tensor<1x40x96xf16>) -> tensor<1x40x96xf16> loc("mlp/mul")
    graph.yield %p : tensor<1x40x96xf16>
  } loc(fused["gate_proj", "act/sigmoid", "act/mul", "up_proj", "mlp/mul"])
  func.return %y : tensor<1x40x96xf16>
}

// -----

// The up product is also returned: not a partner (the kernel would have to write it too).
// The fusion is split: the gate kernel writes silu, the up kernel writes u and, in its
// epilogue, the product.
// CHECK-LABEL: ascend.kernel @k0_gate_proj(
// CHECK-NOT:     %partner
// CHECK-SAME:    %silu: memref<1x40x96xf16, "gm">) attributes
// CHECK:       ascend.kernel @k1_up_proj({{.*}}%u: memref<1x40x96xf16, "gm">, %p: memref<1x40x96xf16, "gm">) attributes
// CHECK:       func.func @escapes(
// CHECK-COUNT-2: ascend.launch
// CHECK-NOT:     ascend.launch
func.func @escapes(%x: tensor<1x40x64xf16> {onnx.name = "x"}, %wg: tensor<64x96xf16> {onnx.name = "wg"}, %wu: tensor<64x96xf16> {onnx.name = "wu"}) -> (tensor<1x40x96xf16> {onnx.name = "y"}, tensor<1x40x96xf16> {onnx.name = "u"}) {
  %y, %up = graph.fusion "cube+vector" (%x, %wg, %wu) attributes {graph.pattern = "matmul-epilogue"} : (tensor<1x40x64xf16>, tensor<64x96xf16>, tensor<64x96xf16>) -> (tensor<1x40x96xf16>, tensor<1x40x96xf16>) {
  ^bb0(%a: tensor<1x40x64xf16>, %bg: tensor<64x96xf16>, %bu: tensor<64x96xf16>):
    %g = graph.matmul %a, %bg : (tensor<1x40x64xf16>, tensor<64x96xf16>) -> tensor<1x40x96xf16> loc("gate_proj")
    %s = graph.sigmoid %g : (tensor<1x40x96xf16>) -> tensor<1x40x96xf16> loc("act/sigmoid")
    %silu = graph.mul %g, %s : (tensor<1x40x96xf16>, tensor<1x40x96xf16>) -> tensor<1x40x96xf16> loc("act/mul")
    %u = graph.matmul %a, %bu : (tensor<1x40x64xf16>, tensor<64x96xf16>) -> tensor<1x40x96xf16> loc("up_proj")
    %p = graph.mul %silu, %u : (tensor<1x40x96xf16>, tensor<1x40x96xf16>) -> tensor<1x40x96xf16> loc("mlp/mul")
    graph.yield %p, %u : tensor<1x40x96xf16>, tensor<1x40x96xf16>
  } loc(fused["gate_proj", "act/sigmoid", "act/mul", "up_proj", "mlp/mul"])
  func.return %y, %up : tensor<1x40x96xf16>, tensor<1x40x96xf16>
}

// -----

// q and k projections of one lhs (GQA 4:2), each split into heads: one cube kernel. Each
// part has its own tile loop (q: 2 x 4 tiles, k: 2 x 2), distributed over the blocks
// together - k's loop starts where q's left off (block + 4 mod 12) - and writes its own output,
// seen as [B * H * S, D], at row (b * H + h) * S + s.
// CHECK-LABEL: ascend.kernel @k0_q_proj(
// CHECK-SAME:    %q2: memref<1x4x32x16xf16, "gm">, %k2: memref<1x2x32x16xf16, "gm">) attributes {block_dim = 12 : i64, core_type = "cube", template = "matmul"
// CHECK:         %[[Q:.*]] = memref.collapse_shape %q2 {{.*}} into memref<128x16xf16, "gm">
// CHECK-NEXT:    %[[K:.*]] = memref.collapse_shape %k2 {{.*}} into memref<64x16xf16, "gm">
// CHECK:         scf.for %{{.*}} = %block to %c8 step %c12 {
// CHECK:           memref.subview %bq[0, %{{.*}}] [64, 16]
// CHECK:           memref.subview %[[Q]][%{{.*}}, %{{.*}}] [16, 16]
// CHECK:         }
// CHECK-NEXT:    %[[SHIFT:.*]] = arith.addi %block, %c4 : index
// CHECK-NEXT:    %[[START:.*]] = arith.remui %[[SHIFT]], %c12 : index
// CHECK-NEXT:    scf.for %{{.*}} = %[[START]] to %c4 step %c12 {
// CHECK:           memref.subview %bk[0, %{{.*}}] [64, 16]
// CHECK:           memref.subview %[[K]][%{{.*}}, %{{.*}}] [16, 16]
// CHECK:         }
// CHECK:       ascend.launch @k0_q_proj on %stream(%x, %wq, %wk, %sq, %skv, %q, %k)
// CHECK-NOT:   ascend.launch
func.func @qkv(%x: tensor<1x32x64xf16> {onnx.name = "x"}, %wq: tensor<64x64xf16> {onnx.name = "wq"}, %wk: tensor<64x32xf16> {onnx.name = "wk"}) -> (tensor<1x4x32x16xf16> {onnx.name = "q"}, tensor<1x2x32x16xf16> {onnx.name = "k"}) {
  %q, %k = graph.fusion "cube+vector" (%x, %wq, %wk) attributes {graph.pattern = "projections"} : (tensor<1x32x64xf16>, tensor<64x64xf16>, tensor<64x32xf16>) -> (tensor<1x4x32x16xf16>, tensor<1x2x32x16xf16>) {
  ^bb0(%a: tensor<1x32x64xf16>, %bq: tensor<64x64xf16>, %bk: tensor<64x32xf16>):
    %sq = graph.constant dense<[1, 32, 4, 16]> : tensor<4xi64>
    %skv = graph.constant dense<[1, 32, 2, 16]> : tensor<4xi64>
    %q0 = graph.matmul %a, %bq : (tensor<1x32x64xf16>, tensor<64x64xf16>) -> tensor<1x32x64xf16> loc("q_proj")
    %q1 = graph.reshape %q0, %sq : (tensor<1x32x64xf16>, tensor<4xi64>) -> tensor<1x32x4x16xf16> loc("q/reshape")
    %q2 = graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x4x16xf16>) -> tensor<1x4x32x16xf16> loc("q/transpose")
    %k0 = graph.matmul %a, %bk : (tensor<1x32x64xf16>, tensor<64x32xf16>) -> tensor<1x32x32xf16> loc("k_proj")
    %k1 = graph.reshape %k0, %skv : (tensor<1x32x32xf16>, tensor<4xi64>) -> tensor<1x32x2x16xf16> loc("k/reshape")
    %k2 = graph.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x2x16xf16>) -> tensor<1x2x32x16xf16> loc("k/transpose")
    graph.yield %q2, %k2 : tensor<1x4x32x16xf16>, tensor<1x2x32x16xf16>
  } loc(fused["q_proj", "q/reshape", "q/transpose", "k_proj", "k/reshape", "k/transpose"])
  func.return %q, %k : tensor<1x4x32x16xf16>, tensor<1x2x32x16xf16>
}

// -----

// k's product has a bias Add (vector work): not one kernel. The fusion is split: q's
// head-split kernel, k's matmul with the bias, k's transpose.
// CHECK-LABEL: ascend.kernel @k0_q_proj(
// CHECK-SAME:    %q2: memref<1x4x32x16xf16, "gm">) attributes
// CHECK:       ascend.kernel @k1_k_proj(
// CHECK:       ascend.kernel @k2_k_transpose(
// CHECK:       func.func @biased(
// CHECK-COUNT-3: ascend.launch
// CHECK-NOT:     ascend.launch
func.func @biased(%x: tensor<1x32x64xf16> {onnx.name = "x"}, %wq: tensor<64x64xf16> {onnx.name = "wq"}, %wk: tensor<64x32xf16> {onnx.name = "wk"}, %bias: tensor<32xf16> {onnx.name = "bias"}) -> (tensor<1x4x32x16xf16> {onnx.name = "q"}, tensor<1x2x32x16xf16> {onnx.name = "k"}) {
  %q, %k = graph.fusion "cube+vector" (%x, %wq, %wk, %bias) attributes {graph.pattern = "projections"} : (tensor<1x32x64xf16>, tensor<64x64xf16>, tensor<64x32xf16>, tensor<32xf16>) -> (tensor<1x4x32x16xf16>, tensor<1x2x32x16xf16>) {
  ^bb0(%a: tensor<1x32x64xf16>, %bq: tensor<64x64xf16>, %bk: tensor<64x32xf16>, %b: tensor<32xf16>):
    %sq = graph.constant dense<[1, 32, 4, 16]> : tensor<4xi64>
    %skv = graph.constant dense<[1, 32, 2, 16]> : tensor<4xi64>
    %q0 = graph.matmul %a, %bq : (tensor<1x32x64xf16>, tensor<64x64xf16>) -> tensor<1x32x64xf16> loc("q_proj")
    %q1 = graph.reshape %q0, %sq : (tensor<1x32x64xf16>, tensor<4xi64>) -> tensor<1x32x4x16xf16> loc("q/reshape")
    %q2 = graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x4x16xf16>) -> tensor<1x4x32x16xf16> loc("q/transpose")
    %k0 = graph.matmul %a, %bk : (tensor<1x32x64xf16>, tensor<64x32xf16>) -> tensor<1x32x32xf16> loc("k_proj")
    %kb = graph.add %k0, %b : (tensor<1x32x32xf16>, tensor<32xf16>) -> tensor<1x32x32xf16> loc("k/bias")
    %k1 = graph.reshape %kb, %skv : (tensor<1x32x32xf16>, tensor<4xi64>) -> tensor<1x32x2x16xf16> loc("k/reshape")
    %k2 = graph.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x2x16xf16>) -> tensor<1x2x32x16xf16> loc("k/transpose")
    graph.yield %q2, %k2 : tensor<1x4x32x16xf16>, tensor<1x2x32x16xf16>
  } loc(fused["q_proj", "q/reshape", "q/transpose", "k_proj", "k/bias", "k/reshape", "k/transpose"])
  func.return %q, %k : tensor<1x4x32x16xf16>, tensor<1x2x32x16xf16>
}

// -----

// A decode step's q and v projections, V's heads written into its cache (graph-fuse takes
// the cache write into `projections`): the kernel reads the position once on the scalar
// pipe, sees the cache as [B * H * L, D] and writes head h's row at h * L + position; the
// cache is updated in place (`ascend.updates`), no kv_cache kernel follows.
// CHECK-LABEL: ascend.kernel @k0_q_proj(
// CHECK-SAME:    %w: memref<1x2x256x16xf16, "gm">) attributes {block_dim = 6 : i64, core_type = "cube", template = "matmul"
// CHECK:         %[[C:.*]] = memref.collapse_shape %w {{.*}} into memref<512x16xf16, "gm">
// CHECK:         %[[P:.*]] = memref.load %p[%{{.*}}] : memref<1xi64, "gm">
// CHECK-NEXT:    %[[POS:.*]] = arith.index_cast %[[P]] : i64 to index
// CHECK:         memref.subview %bv[0, %[[N0:.*]]] [64, 16]
// CHECK:         %[[H:.*]] = arith.divui %[[N0]], %c16 : index
// CHECK-NEXT:    %[[HL:.*]] = arith.muli %[[H]], %c256 : index
// CHECK-NEXT:    %[[ROW:.*]] = arith.addi %[[HL]], %[[POS]] : index
// CHECK:         memref.subview %[[C]][%[[ROW]], %{{.*}}] [1, 16] [1, 1]
// CHECK-LABEL: func.func @qv_decode(
// CHECK-SAME:    %vn: memref<1x2x256x16xf16, "gm"> {onnx.name = "present_v", ascend.output, ascend.updates = 3 : i64})
// CHECK-COUNT-1: ascend.launch
// CHECK-NOT:     ascend.launch
func.func @qv_decode(%x: tensor<1x1x64xf16> {onnx.name = "x"}, %wq: tensor<64x64xf16> {onnx.name = "wq"}, %wv: tensor<64x32xf16> {onnx.name = "wv"}, %vc: tensor<1x2x256x16xf16> {onnx.name = "past_v"}, %pos: tensor<1xi64> {onnx.name = "position"}) -> (tensor<1x4x1x16xf16> {onnx.name = "q"}, tensor<1x2x256x16xf16> {onnx.name = "present_v"}) {
  %q, %vn = graph.fusion "cube+vector" (%x, %wq, %wv, %vc, %pos) attributes {graph.pattern = "projections"} : (tensor<1x1x64xf16>, tensor<64x64xf16>, tensor<64x32xf16>, tensor<1x2x256x16xf16>, tensor<1xi64>) -> (tensor<1x4x1x16xf16>, tensor<1x2x256x16xf16>) {
  ^bb0(%a: tensor<1x1x64xf16>, %bq: tensor<64x64xf16>, %bv: tensor<64x32xf16>, %c: tensor<1x2x256x16xf16>, %p: tensor<1xi64>):
    %sq = graph.constant dense<[1, 1, 4, 16]> : tensor<4xi64>
    %sv = graph.constant dense<[1, 1, 2, 16]> : tensor<4xi64>
    %q0 = graph.matmul %a, %bq : (tensor<1x1x64xf16>, tensor<64x64xf16>) -> tensor<1x1x64xf16> loc("q_proj")
    %q1 = graph.reshape %q0, %sq : (tensor<1x1x64xf16>, tensor<4xi64>) -> tensor<1x1x4x16xf16> loc("q/reshape")
    %q2 = graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x1x4x16xf16>) -> tensor<1x4x1x16xf16> loc("q/transpose")
    %v0 = graph.matmul %a, %bv : (tensor<1x1x64xf16>, tensor<64x32xf16>) -> tensor<1x1x32xf16> loc("v_proj")
    %v1 = graph.reshape %v0, %sv : (tensor<1x1x32xf16>, tensor<4xi64>) -> tensor<1x1x2x16xf16> loc("v/reshape")
    %v2 = graph.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x1x2x16xf16>) -> tensor<1x2x1x16xf16> loc("v/transpose")
    %w = graph.kv_cache_write %c, %v2, %p : (tensor<1x2x256x16xf16>, tensor<1x2x1x16xf16>, tensor<1xi64>) -> tensor<1x2x256x16xf16> loc("v_write")
    graph.yield %q2, %w : tensor<1x4x1x16xf16>, tensor<1x2x256x16xf16>
  } loc(fused["q_proj", "q/reshape", "q/transpose", "v_proj", "v/reshape", "v/transpose", "v_write"])
  func.return %q, %vn : tensor<1x4x1x16xf16>, tensor<1x2x256x16xf16>
}
