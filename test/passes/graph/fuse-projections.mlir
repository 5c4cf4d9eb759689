// graph-fuse's `projections` pattern: matmuls of one lhs, each split into heads, in one kernel.
// RUN: geir-opt %s --split-input-file -p graph-fuse | filecheck %s
// RUN: geir-opt %s --split-input-file -p "graph-fuse{disable=projections}" | filecheck %s --check-prefix=OFF

// LLaMA's q / k / v after the input norm (GQA 4:2): each product is reshaped to
// [B, S, H, D] and transposed to [B, H, S, D]. One fusion takes the three chains and
// returns the three head-split results.
// CHECK-LABEL: func.func @qkv(
// CHECK-NEXT:    %q, %k, %v = graph.fusion "cube+vector" (%x, %wq, %wk, %wv) attributes {graph.pattern = "projections"}
// CHECK:         } loc(fused["q_proj", "q/reshape", "q/transpose", "k_proj", "k/reshape", "k/transpose", "v_proj", "v/reshape", "v/transpose"])
// CHECK-NEXT:    func.return %q, %k, %v
// Switched off, each projection is its own head-split kernel.
// OFF-LABEL: func.func @qkv(
// OFF-COUNT-3:   graph.fusion "cube+vector" {{.*}} attributes {graph.pattern = "matmul-epilogue"}
func.func @qkv(%x: tensor<1x32x64xf16>, %wq: tensor<64x64xf16>, %wk: tensor<64x32xf16>, %wv: tensor<64x32xf16>) -> (tensor<1x4x32x16xf16>, tensor<1x2x32x16xf16>, tensor<1x2x32x16xf16>) {
  %sq = graph.constant dense<[1, 32, 4, 16]> : tensor<4xi64>
  %skv = graph.constant dense<[1, 32, 2, 16]> : tensor<4xi64>
  %q0 = graph.matmul %x, %wq : (tensor<1x32x64xf16>, tensor<64x64xf16>) -> tensor<1x32x64xf16> loc("q_proj")
  %q1 = graph.reshape %q0, %sq : (tensor<1x32x64xf16>, tensor<4xi64>) -> tensor<1x32x4x16xf16> loc("q/reshape")
  %q = graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x4x16xf16>) -> tensor<1x4x32x16xf16> loc("q/transpose")
  %k0 = graph.matmul %x, %wk : (tensor<1x32x64xf16>, tensor<64x32xf16>) -> tensor<1x32x32xf16> loc("k_proj")
  %k1 = graph.reshape %k0, %skv : (tensor<1x32x32xf16>, tensor<4xi64>) -> tensor<1x32x2x16xf16> loc("k/reshape")
  %k = graph.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x2x16xf16>) -> tensor<1x2x32x16xf16> loc("k/transpose")
  %v0 = graph.matmul %x, %wv : (tensor<1x32x64xf16>, tensor<64x32xf16>) -> tensor<1x32x32xf16> loc("v_proj")
  %v1 = graph.reshape %v0, %skv : (tensor<1x32x32xf16>, tensor<4xi64>) -> tensor<1x32x2x16xf16> loc("v/reshape")
  %v = graph.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x2x16xf16>) -> tensor<1x2x32x16xf16> loc("v/transpose")
  func.return %q, %k, %v : tensor<1x4x32x16xf16>, tensor<1x2x32x16xf16>, tensor<1x2x32x16xf16>
}

// -----

// Not projections: k's product gets a bias Add (epilogue work, its own matmul-epilogue
// kernel), and v's lhs is another value. q stays its own head-split kernel.
// CHECK-LABEL: func.func @not_projections(
// CHECK-NOT:     graph.pattern = "projections"
// CHECK:         func.return
func.func @not_projections(%x: tensor<1x32x64xf16>, %x2: tensor<1x32x64xf16>, %wq: tensor<64x64xf16>, %wk: tensor<64x32xf16>, %bk: tensor<32xf16>, %wv: tensor<64x32xf16>) -> (tensor<1x4x32x16xf16>, tensor<1x2x32x16xf16>, tensor<1x2x32x16xf16>) {
  %sq = graph.constant dense<[1, 32, 4, 16]> : tensor<4xi64>
  %skv = graph.constant dense<[1, 32, 2, 16]> : tensor<4xi64>
  %q0 = graph.matmul %x, %wq : (tensor<1x32x64xf16>, tensor<64x64xf16>) -> tensor<1x32x64xf16> loc("q_proj")
  %q1 = graph.reshape %q0, %sq : (tensor<1x32x64xf16>, tensor<4xi64>) -> tensor<1x32x4x16xf16> loc("q/reshape")
  %q = graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x4x16xf16>) -> tensor<1x4x32x16xf16> loc("q/transpose")
  %k0 = graph.matmul %x, %wk : (tensor<1x32x64xf16>, tensor<64x32xf16>) -> tensor<1x32x32xf16> loc("k_proj")
  %kb = graph.add %k0, %bk : (tensor<1x32x32xf16>, tensor<32xf16>) -> tensor<1x32x32xf16> loc("k/bias")
  %k1 = graph.reshape %kb, %skv : (tensor<1x32x32xf16>, tensor<4xi64>) -> tensor<1x32x2x16xf16> loc("k/reshape")
  %k = graph.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x2x16xf16>) -> tensor<1x2x32x16xf16> loc("k/transpose")
  %v0 = graph.matmul %x2, %wv : (tensor<1x32x64xf16>, tensor<64x32xf16>) -> tensor<1x32x32xf16> loc("v_proj")
  %v1 = graph.reshape %v0, %skv : (tensor<1x32x32xf16>, tensor<4xi64>) -> tensor<1x32x2x16xf16> loc("v/reshape")
  %v = graph.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x2x16xf16>) -> tensor<1x2x32x16xf16> loc("v/transpose")
  func.return %q, %k, %v : tensor<1x4x32x16xf16>, tensor<1x2x32x16xf16>, tensor<1x2x32x16xf16>
}

// -----

// V's heads go only into its cache: the write joins the projections (the kernel writes the
// heads at the position's rows), and the fusion yields the updated cache.
// CHECK-LABEL: func.func @qv_cache(
// CHECK-NEXT:    %q, %vc2 = graph.fusion "cube+vector" (%x, %wq, %wv, %vc, %pos) attributes {graph.pattern = "projections"}
// CHECK:         } loc(fused["q_proj", "q/reshape", "q/transpose", "v_proj", "v/reshape", "v/transpose", "v_write"])
// CHECK-NEXT:    func.return %q, %vc2
func.func @qv_cache(%x: tensor<1x32x64xf16>, %wq: tensor<64x64xf16>, %wv: tensor<64x32xf16>, %vc: tensor<1x2x128x16xf16>, %pos: tensor<1xi64>) -> (tensor<1x4x32x16xf16>, tensor<1x2x128x16xf16>) {
  %sq = graph.constant dense<[1, 32, 4, 16]> : tensor<4xi64>
  %skv = graph.constant dense<[1, 32, 2, 16]> : tensor<4xi64>
  %q0 = graph.matmul %x, %wq : (tensor<1x32x64xf16>, tensor<64x64xf16>) -> tensor<1x32x64xf16> loc("q_proj")
  %q1 = graph.reshape %q0, %sq : (tensor<1x32x64xf16>, tensor<4xi64>) -> tensor<1x32x4x16xf16> loc("q/reshape")
  %q = graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x4x16xf16>) -> tensor<1x4x32x16xf16> loc("q/transpose")
  %v0 = graph.matmul %x, %wv : (tensor<1x32x64xf16>, tensor<64x32xf16>) -> tensor<1x32x32xf16> loc("v_proj")
  %v1 = graph.reshape %v0, %skv : (tensor<1x32x32xf16>, tensor<4xi64>) -> tensor<1x32x2x16xf16> loc("v/reshape")
  %v = graph.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x2x16xf16>) -> tensor<1x2x32x16xf16> loc("v/transpose")
  %vc2 = graph.kv_cache_write %vc, %v, %pos : (tensor<1x2x128x16xf16>, tensor<1x2x32x16xf16>, tensor<1xi64>) -> tensor<1x2x128x16xf16> loc("v_write")
  func.return %q, %vc2 : tensor<1x4x32x16xf16>, tensor<1x2x128x16xf16>
}
