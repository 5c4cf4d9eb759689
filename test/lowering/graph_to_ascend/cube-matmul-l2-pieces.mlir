// convert-graph-to-ascend, cube kernels: a matmul whose gm footprint (operands and result)
// is over the device's L2 (910B: 192 MiB) runs as launches over blocks of its result - ranges
// of its columns, and of its rows too when the lhs is itself large - one after another, when
// the cost model says the re-reads each block's L2 serves pay for the launches
// (tiling.l2_pieces). Each launch's kernel says its block (`geir.l2_block`: first row, rows,
// first column, columns). Shapes: LLaMA-2-7B's prefill at 1 x 2048, and at 8 x 4096.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// The SwiGLU kernel (two 4096 x 11008 weights, a 287 MB footprint): two kernels of 5504
// columns (152 MB each). The second one's tiles start at column 5504 of both weights and of
// the result; the partner product's scratch has the whole result's shape and is the
// chain's: allocated once, passed to both launches.
// CHECK-LABEL: ascend.kernel @k0_gate_proj_n0(
// CHECK-SAME:    %partner: memref<2048x11008xf16, "gm">) attributes {block_dim = 24 : i64, core_type = "mix", geir.scratch = 1 : i64, template = "matmul", geir.l2_block = array<i64: 0, 2048, 0, 5504>}
// CHECK:         scf.for %{{.*}} = %block to %c344 step %c24 {
// CHECK:           %[[N0:.*]] = arith.muli %{{.*}}, %c128 : index
// CHECK-NEXT:      ascend.wait_flag MTE1 -> MTE2 id 0
// CHECK:           memref.subview %bu[0, %[[N0]]] [320, 128]
// CHECK:       ascend.kernel @k0_gate_proj_n1(
// CHECK-SAME:    %partner: memref<2048x11008xf16, "gm">) attributes {block_dim = 24 : i64, core_type = "mix", geir.scratch = 1 : i64, template = "matmul", geir.l2_block = array<i64: 0, 2048, 5504, 5504>}
// CHECK:         scf.for %{{.*}} = %block to %c344 step %c24 {
// CHECK:           %[[T:.*]] = arith.muli %{{.*}}, %c128 : index
// CHECK-NEXT:      %[[N1:.*]] = arith.addi %c5504, %[[T]] : index
// CHECK:           memref.subview %bu[0, %[[N1]]] [320, 128]
// CHECK:           memref.subview %bg[0, %[[N1]]] [320, 128]
// CHECK:       func.func @swiglu(
// CHECK:         %[[S:.*]] = ascend.alloc {offset = 0 : i64} : memref<2048x11008xf16, "gm">
// CHECK-NEXT:    ascend.launch @k0_gate_proj_n0 on %stream(%x, %wg, %wu, %y, %[[S]])
// CHECK-NEXT:    ascend.launch @k0_gate_proj_n1 on %stream(%x, %wg, %wu, %y, %[[S]])
// CHECK-NEXT:    func.return
func.func @swiglu(%x: tensor<2048x4096xf16> {onnx.name = "x"}, %wg: tensor<4096x11008xf16> {onnx.name = "wg"}, %wu: tensor<4096x11008xf16> {onnx.name = "wu"}) -> (tensor<2048x11008xf16> {onnx.name = "y"}) {
  %y = graph.fusion "cube+vector" (%x, %wg, %wu) attributes {graph.pattern = "matmul-epilogue"} : (tensor<2048x4096xf16>, tensor<4096x11008xf16>, tensor<4096x11008xf16>) -> tensor<2048x11008xf16> {
  ^bb0(%a: tensor<2048x4096xf16>, %bg: tensor<4096x11008xf16>, %bu: tensor<4096x11008xf16>):
    %g = graph.matmul %a, %bg : (tensor<2048x4096xf16>, tensor<4096x11008xf16>) -> tensor<2048x11008xf16> loc("gate_proj")
    %s = graph.sigmoid %g : (tensor<2048x11008xf16>) -> tensor<2048x11008xf16> loc("act/sigmoid")
    %silu = graph.mul %g, %s : (tensor<2048x11008xf16>, tensor<2048x11008xf16>) -> tensor<2048x11008xf16> loc("act/mul")
    %u = graph.matmul %a, %bu : (tensor<2048x4096xf16>, tensor<4096x11008xf16>) -> tensor<2048x11008xf16> loc("up_proj")
    %p = graph.mul %silu, %u : (tensor<2048x11008xf16>, tensor<2048x11008xf16>) -> tensor<2048x11008xf16> loc("mlp/mul")
    graph.yield %p : tensor<2048x11008xf16>
  } loc(fused["gate_proj", "act/sigmoid", "act/mul", "up_proj", "mlp/mul"])
  func.return %y : tensor<2048x11008xf16>
}

// -----

// The LM head (a 4096 x 32000 weight, 393 MB with the result): three kernels of 10672,
// 10672 and 10656 columns.
// CHECK-LABEL: ascend.kernel @k0_lm_head_n0(
// CHECK:       ascend.kernel @k0_lm_head_n1(
// CHECK:         arith.addi %c10672,
// CHECK:       ascend.kernel @k0_lm_head_n2(
// CHECK:         arith.addi %c21344,
// CHECK:       func.func @lm_head(
// CHECK-NEXT:    %stream = ascend.stream 0
// CHECK-NEXT:    ascend.launch @k0_lm_head_n0 on %stream(%x, %w, %y)
// CHECK-NEXT:    ascend.launch @k0_lm_head_n1 on %stream(%x, %w, %y)
// CHECK-NEXT:    ascend.launch @k0_lm_head_n2 on %stream(%x, %w, %y)
// CHECK-NEXT:    func.return
func.func @lm_head(%x: tensor<2048x4096xf16> {onnx.name = "x"}, %w: tensor<4096x32000xf16> {onnx.name = "w"}) -> (tensor<2048x32000xf16> {onnx.name = "y"}) {
  %y = graph.matmul %x, %w : (tensor<2048x4096xf16>, tensor<4096x32000xf16>) -> tensor<2048x32000xf16> loc("lm_head")
  func.return %y : tensor<2048x32000xf16>
}

// -----

// A decode step's LM head is as far over L2, but it reads each weight once (one row of
// tiles): nothing for L2 to serve, so one kernel.
// CHECK-LABEL: ascend.kernel @k0_lm_head(
// CHECK-NOT:   ascend.kernel
// CHECK:       func.func @lm_head_decode(
// CHECK-COUNT-1: ascend.launch @k0_lm_head on
// CHECK-NOT:     ascend.launch
func.func @lm_head_decode(%x: tensor<1x4096xf16> {onnx.name = "x"}, %w: tensor<4096x32000xf16> {onnx.name = "w"}) -> (tensor<1x32000xf16> {onnx.name = "y"}) {
  %y = graph.matmul %x, %w : (tensor<1x4096xf16>, tensor<4096x32000xf16>) -> tensor<1x32000xf16> loc("lm_head")
  func.return %y : tensor<1x32000xf16>
}

// -----

// A footprint L2 holds (q_proj: 67 MB): one kernel.
// CHECK-LABEL: ascend.kernel @k0_q_proj(
// CHECK-NOT:   ascend.kernel
// CHECK:       func.func @q_proj(
// CHECK-COUNT-1: ascend.launch @k0_q_proj on
// CHECK-NOT:     ascend.launch
func.func @q_proj(%x: tensor<2048x4096xf16> {onnx.name = "x"}, %w: tensor<4096x4096xf16> {onnx.name = "w"}) -> (tensor<2048x4096xf16> {onnx.name = "y"}) {
  %y = graph.matmul %x, %w : (tensor<2048x4096xf16>, tensor<4096x4096xf16>) -> tensor<2048x4096xf16> loc("q_proj")
  func.return %y : tensor<2048x4096xf16>
}

// -----

// Several products of one lhs (LLaMA-2-13B's q / k / v at 1 x 2048, three 5120 x 5120
// weights, a 241 MB footprint): launches of consecutive groups of whole products, each
// group one kernel writing its own products' outputs (here q and k, then v).
// CHECK-LABEL: ascend.kernel @k0_q_proj_n0(
// CHECK:         memref.subview %bq
// CHECK:         memref.subview %bk
// CHECK-NOT:     memref.subview %bv
// CHECK:       ascend.kernel @k0_q_proj_n1(
// CHECK-NOT:     memref.subview %bq
// CHECK-NOT:     memref.subview %bk
// CHECK:         memref.subview %bv
// CHECK:       func.func @qkv(
// CHECK:         ascend.launch @k0_q_proj_n0 on %stream(%x, %wq, %wk, %wv, %s, %q, %k, %v)
// CHECK-NEXT:    ascend.launch @k0_q_proj_n1 on %stream(%x, %wq, %wk, %wv, %s, %q, %k, %v)
// CHECK-NEXT:    func.return
func.func @qkv(%x: tensor<1x2048x5120xf16> {onnx.name = "x"}, %wq: tensor<5120x5120xf16> {onnx.name = "wq"}, %wk: tensor<5120x5120xf16> {onnx.name = "wk"}, %wv: tensor<5120x5120xf16> {onnx.name = "wv"}) -> (tensor<1x40x2048x128xf16> {onnx.name = "q"}, tensor<1x40x2048x128xf16> {onnx.name = "k"}, tensor<1x40x2048x128xf16> {onnx.name = "v"}) {
  %q, %k, %v = graph.fusion "cube+vector" (%x, %wq, %wk, %wv) attributes {graph.pattern = "projections"} : (tensor<1x2048x5120xf16>, tensor<5120x5120xf16>, tensor<5120x5120xf16>, tensor<5120x5120xf16>) -> (tensor<1x40x2048x128xf16>, tensor<1x40x2048x128xf16>, tensor<1x40x2048x128xf16>) {
  ^bb0(%a: tensor<1x2048x5120xf16>, %bq: tensor<5120x5120xf16>, %bk: tensor<5120x5120xf16>, %bv: tensor<5120x5120xf16>):
    %s = graph.constant dense<[1, 2048, 40, 128]> : tensor<4xi64>
    %q0 = graph.matmul %a, %bq : (tensor<1x2048x5120xf16>, tensor<5120x5120xf16>) -> tensor<1x2048x5120xf16> loc("q_proj")
    %q1 = graph.reshape %q0, %s : (tensor<1x2048x5120xf16>, tensor<4xi64>) -> tensor<1x2048x40x128xf16> loc("q/reshape")
    %q2 = graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2048x40x128xf16>) -> tensor<1x40x2048x128xf16> loc("q/transpose")
    %k0 = graph.matmul %a, %bk : (tensor<1x2048x5120xf16>, tensor<5120x5120xf16>) -> tensor<1x2048x5120xf16> loc("k_proj")
    %k1 = graph.reshape %k0, %s : (tensor<1x2048x5120xf16>, tensor<4xi64>) -> tensor<1x2048x40x128xf16> loc("k/reshape")
    %k2 = graph.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2048x40x128xf16>) -> tensor<1x40x2048x128xf16> loc("k/transpose")
    %v0 = graph.matmul %a, %bv : (tensor<1x2048x5120xf16>, tensor<5120x5120xf16>) -> tensor<1x2048x5120xf16> loc("v_proj")
    %v1 = graph.reshape %v0, %s : (tensor<1x2048x5120xf16>, tensor<4xi64>) -> tensor<1x2048x40x128xf16> loc("v/reshape")
    %v2 = graph.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2048x40x128xf16>) -> tensor<1x40x2048x128xf16> loc("v/transpose")
    graph.yield %q2, %k2, %v2 : tensor<1x40x2048x128xf16>, tensor<1x40x2048x128xf16>, tensor<1x40x2048x128xf16>
  } loc(fused["q_proj", "q/reshape", "q/transpose", "k_proj", "k/reshape", "k/transpose", "v_proj", "v/reshape", "v/transpose"])
  func.return %q, %k, %v : tensor<1x40x2048x128xf16>, tensor<1x40x2048x128xf16>, tensor<1x40x2048x128xf16>
}

// -----

// The SwiGLU kernel at the seeds' 8 x 4096: the lhs alone (32768 rows of 4096, 268 MB) is
// over L2, so column ranges alone would read all of it again per column tile. The fewest
// row ranges whose lhs rows take at most half of L2 are 4 (67 MB each); each of them times
// 5 column ranges of 2208 (the last 2176) is a block of 176 MB: 20 launches, row ranges
// outer, every one reading the tiles of its block only.
// CHECK-LABEL: ascend.kernel @k0_gate_proj_n0(
// CHECK-SAME:    geir.l2_block = array<i64: 0, 8192, 0, 2208>}
// CHECK:       ascend.kernel @k0_gate_proj_n4(
// CHECK-SAME:    geir.l2_block = array<i64: 0, 8192, 8832, 2176>}
// CHECK:       ascend.kernel @k0_gate_proj_n5(
// CHECK-SAME:    geir.l2_block = array<i64: 8192, 8192, 0, 2208>}
// The row tiles of the second row range start at row 8192 of the lhs and of the result.
// CHECK:         %[[T:.*]] = arith.muli %{{.*}}, %c{{[0-9]+}} : index
// CHECK-NEXT:    %[[M:.*]] = arith.addi %c8192, %[[T]] : index
// CHECK:       ascend.kernel @k0_gate_proj_n19(
// CHECK-SAME:    geir.l2_block = array<i64: 24576, 8192, 8832, 2176>}
// CHECK-NOT:   ascend.kernel @k0_gate_proj_n20(
// CHECK:       func.func @swiglu_8x4096(
// CHECK-COUNT-20: ascend.launch @k0_gate_proj_n
// CHECK-NEXT:    func.return
func.func @swiglu_8x4096(%x: tensor<32768x4096xf16> {onnx.name = "x"}, %wg: tensor<4096x11008xf16> {onnx.name = "wg"}, %wu: tensor<4096x11008xf16> {onnx.name = "wu"}) -> (tensor<32768x11008xf16> {onnx.name = "y"}) {
  %y = graph.fusion "cube+vector" (%x, %wg, %wu) attributes {graph.pattern = "matmul-epilogue"} : (tensor<32768x4096xf16>, tensor<4096x11008xf16>, tensor<4096x11008xf16>) -> tensor<32768x11008xf16> {
  ^bb0(%a: tensor<32768x4096xf16>, %bg: tensor<4096x11008xf16>, %bu: tensor<4096x11008xf16>):
    %g = graph.matmul %a, %bg : (tensor<32768x4096xf16>, tensor<4096x11008xf16>) -> tensor<32768x11008xf16> loc("gate_proj")
    %s = graph.sigmoid %g : (tensor<32768x11008xf16>) -> tensor<32768x11008xf16> loc("act/sigmoid")
    %silu = graph.mul %g, %s : (tensor<32768x11008xf16>, tensor<32768x11008xf16>) -> tensor<32768x11008xf16> loc("act/mul")
    %u = graph.matmul %a, %bu : (tensor<32768x4096xf16>, tensor<4096x11008xf16>) -> tensor<32768x11008xf16> loc("up_proj")
    %p = graph.mul %silu, %u : (tensor<32768x11008xf16>, tensor<32768x11008xf16>) -> tensor<32768x11008xf16> loc("mlp/mul")
    graph.yield %p : tensor<32768x11008xf16>
  } loc(fused["gate_proj", "act/sigmoid", "act/mul", "up_proj", "mlp/mul"])
  func.return %y : tensor<32768x11008xf16>
}

// -----

// LLaMA-2-7B's q / k / v at the seeds' 8 x 4096 (each batch's 4096 rows of 4096; heads
// split): the lhs is over L2, so the products run over 4 ranges of each batch's rows, each
// range as three launches of one product (a block of about 134 MB), row ranges outer.
// CHECK-LABEL: ascend.kernel @k0_q_proj_n0(
// CHECK-SAME:    geir.l2_block = array<i64: 0, 1024, 0, 4096>,
// CHECK:       ascend.kernel @k0_q_proj_n2(
// CHECK-SAME:    geir.l2_block = array<i64: 0, 1024, 0, 4096>,
// CHECK:       ascend.kernel @k0_q_proj_n3(
// CHECK-SAME:    geir.l2_block = array<i64: 1024, 1024, 0, 4096>,
// CHECK:       ascend.kernel @k0_q_proj_n11(
// CHECK-SAME:    geir.l2_block = array<i64: 3072, 1024, 0, 4096>,
// CHECK:       func.func @qkv_8x4096(
// CHECK:         ascend.launch @k0_q_proj_n0 on %stream(%x, %wq, %wk, %wv, %s, %q, %k, %v)
// CHECK-NEXT:    ascend.launch @k0_q_proj_n1 on %stream(%x, %wq, %wk, %wv, %s, %q, %k, %v)
// CHECK-COUNT-10: ascend.launch @k0_q_proj_n
// CHECK-NEXT:    func.return
func.func @qkv_8x4096(%x: tensor<8x4096x4096xf16> {onnx.name = "x"}, %wq: tensor<4096x4096xf16> {onnx.name = "wq"}, %wk: tensor<4096x4096xf16> {onnx.name = "wk"}, %wv: tensor<4096x4096xf16> {onnx.name = "wv"}) -> (tensor<8x32x4096x128xf16> {onnx.name = "q"}, tensor<8x32x4096x128xf16> {onnx.name = "k"}, tensor<8x32x4096x128xf16> {onnx.name = "v"}) {
  %q, %k, %v = graph.fusion "cube+vector" (%x, %wq, %wk, %wv) attributes {graph.pattern = "projections"} : (tensor<8x4096x4096xf16>, tensor<4096x4096xf16>, tensor<4096x4096xf16>, tensor<4096x4096xf16>) -> (tensor<8x32x4096x128xf16>, tensor<8x32x4096x128xf16>, tensor<8x32x4096x128xf16>) {
  ^bb0(%a: tensor<8x4096x4096xf16>, %bq: tensor<4096x4096xf16>, %bk: tensor<4096x4096xf16>, %bv: tensor<4096x4096xf16>):
    %s = graph.constant dense<[8, 4096, 32, 128]> : tensor<4xi64>
    %q0 = graph.matmul %a, %bq : (tensor<8x4096x4096xf16>, tensor<4096x4096xf16>) -> tensor<8x4096x4096xf16> loc("q_proj")
    %q1 = graph.reshape %q0, %s : (tensor<8x4096x4096xf16>, tensor<4xi64>) -> tensor<8x4096x32x128xf16> loc("q/reshape")
    %q2 = graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<8x4096x32x128xf16>) -> tensor<8x32x4096x128xf16> loc("q/transpose")
    %k0 = graph.matmul %a, %bk : (tensor<8x4096x4096xf16>, tensor<4096x4096xf16>) -> tensor<8x4096x4096xf16> loc("k_proj")
    %k1 = graph.reshape %k0, %s : (tensor<8x4096x4096xf16>, tensor<4xi64>) -> tensor<8x4096x32x128xf16> loc("k/reshape")
    %k2 = graph.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<8x4096x32x128xf16>) -> tensor<8x32x4096x128xf16> loc("k/transpose")
    %v0 = graph.matmul %a, %bv : (tensor<8x4096x4096xf16>, tensor<4096x4096xf16>) -> tensor<8x4096x4096xf16> loc("v_proj")
    %v1 = graph.reshape %v0, %s : (tensor<8x4096x4096xf16>, tensor<4xi64>) -> tensor<8x4096x32x128xf16> loc("v/reshape")
    %v2 = graph.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<8x4096x32x128xf16>) -> tensor<8x32x4096x128xf16> loc("v/transpose")
    graph.yield %q2, %k2, %v2 : tensor<8x32x4096x128xf16>, tensor<8x32x4096x128xf16>, tensor<8x32x4096x128xf16>
  } loc(fused["q_proj", "q/reshape", "q/transpose", "k_proj", "k/reshape", "k/transpose", "v_proj", "v/reshape", "v/transpose"])
  func.return %q, %k, %v : tensor<8x32x4096x128xf16>, tensor<8x32x4096x128xf16>, tensor<8x32x4096x128xf16>
}
