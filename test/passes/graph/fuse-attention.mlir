// graph-fuse: the `attention` pattern anchored on graph.attention (graph-recognize-attention's op)
// takes the views, transposes, constant slices and split parts its q, k, v are read through and
// the transposes and views its result is written through; the attention kernel reads through
// them with strided DMA (test/lowering/graph_to_ascend/attention-views.mlir).
// RUN: geir-opt %s --split-input-file -p graph-fuse | filecheck %s

// The TransformerBlock's head split (Split of the qkv projection, Reshape + Transpose per head)
// and head merge (Transpose + Reshape): one fusion reading qkv, writing [B, S, H * D].
// CHECK-LABEL: func.func @qkv_split(
// CHECK-NEXT:    %y = graph.fusion "cube+vector" (%qkv) attributes {graph.pattern = "attention"}
// CHECK:           graph.split
// CHECK-COUNT-3:   graph.transpose
// CHECK-NEXT:      %o = graph.attention %qt, %kt, %vt
// CHECK-NEXT:      %ot = graph.transpose %o
// CHECK-NEXT:      %[[Y:.*]] = graph.reshape %ot
// CHECK-NEXT:      graph.yield %[[Y]] : tensor<2x16x16xf32>
// CHECK-NEXT:    } loc(fused["split", "q_heads", "q_t", "k_heads", "k_t", "v_heads", "v_t", "attn", "merge", "merged"])
// CHECK-NEXT:    func.return %y
func.func @qkv_split(%qkv: tensor<2x16x48xf32>) -> tensor<2x16x16xf32> {
  %sizes = graph.constant dense<16> : tensor<3xi64> loc("sizes")
  %heads = graph.constant dense<[2, 16, 2, 8]> : tensor<4xi64> loc("heads")
  %merged = graph.constant dense<[2, 16, 16]> : tensor<3xi64> loc("merged")
  %q, %k, %v = graph.split %qkv, %sizes {axis = -1 : i64} : (tensor<2x16x48xf32>, tensor<3xi64>) -> (tensor<2x16x16xf32>, tensor<2x16x16xf32>, tensor<2x16x16xf32>) loc("split")
  %qh = graph.reshape %q, %heads : (tensor<2x16x16xf32>, tensor<4xi64>) -> tensor<2x16x2x8xf32> loc("q_heads")
  %qt = graph.transpose %qh {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32> loc("q_t")
  %kh = graph.reshape %k, %heads : (tensor<2x16x16xf32>, tensor<4xi64>) -> tensor<2x16x2x8xf32> loc("k_heads")
  %kt = graph.transpose %kh {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32> loc("k_t")
  %vh = graph.reshape %v, %heads : (tensor<2x16x16xf32>, tensor<4xi64>) -> tensor<2x16x2x8xf32> loc("v_heads")
  %vt = graph.transpose %vh {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32> loc("v_t")
  %o = graph.attention %qt, %kt, %vt {scale = 0.35 : f32, causal = 1 : i64} : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> loc("attn")
  %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x16x8xf32>) -> tensor<2x16x2x8xf32> loc("merge")
  %y = graph.reshape %ot, %merged : (tensor<2x16x2x8xf32>, tensor<3xi64>) -> tensor<2x16x16xf32> loc("merged")
  func.return %y : tensor<2x16x16xf32>
}

// -----

// A split part also used outside (v is returned): the split stays out (the kernel writes
// nothing but the attention's result); the per-head views of every part still come in.
// CHECK-LABEL: func.func @split_part_used_outside(
// CHECK:         %q, %k, %v = graph.split %qkv
// CHECK-NEXT:    %y = graph.fusion "cube+vector" (%q, %k, %v) attributes {graph.pattern = "attention"}
// CHECK-NOT:       graph.split
// CHECK:           graph.attention
// CHECK:         } loc(fused["q_heads", "q_t", "k_heads", "k_t", "v_heads", "v_t", "attn", "merge", "merged"])
// CHECK-NEXT:    func.return %y, %v
func.func @split_part_used_outside(%qkv: tensor<2x16x48xf32>) -> (tensor<2x16x16xf32>, tensor<2x16x16xf32>) {
  %sizes = graph.constant dense<16> : tensor<3xi64> loc("sizes")
  %heads = graph.constant dense<[2, 16, 2, 8]> : tensor<4xi64> loc("heads")
  %merged = graph.constant dense<[2, 16, 16]> : tensor<3xi64> loc("merged")
  %q, %k, %v = graph.split %qkv, %sizes {axis = -1 : i64} : (tensor<2x16x48xf32>, tensor<3xi64>) -> (tensor<2x16x16xf32>, tensor<2x16x16xf32>, tensor<2x16x16xf32>) loc("split")
  %qh = graph.reshape %q, %heads : (tensor<2x16x16xf32>, tensor<4xi64>) -> tensor<2x16x2x8xf32> loc("q_heads")
  %qt = graph.transpose %qh {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32> loc("q_t")
  %kh = graph.reshape %k, %heads : (tensor<2x16x16xf32>, tensor<4xi64>) -> tensor<2x16x2x8xf32> loc("k_heads")
  %kt = graph.transpose %kh {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32> loc("k_t")
  %vh = graph.reshape %v, %heads : (tensor<2x16x16xf32>, tensor<4xi64>) -> tensor<2x16x2x8xf32> loc("v_heads")
  %vt = graph.transpose %vh {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32> loc("v_t")
  %o = graph.attention %qt, %kt, %vt {scale = 0.35 : f32, causal = 1 : i64} : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> loc("attn")
  %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x16x8xf32>) -> tensor<2x16x2x8xf32> loc("merge")
  %y = graph.reshape %ot, %merged : (tensor<2x16x2x8xf32>, tensor<3xi64>) -> tensor<2x16x16xf32> loc("merged")
  func.return %y, %v : tensor<2x16x16xf32>, tensor<2x16x16xf32>
}

// -----

// LLaMA's form, negative cases: q's transpose is also returned (needed twice: left out), k is
// scaled by a Mul first (elementwise: the kernel does not compute on its operands, left out),
// and the attention's result is returned besides the head merge (written once: nothing after
// it comes in). Only v's transpose joins the attention.
// CHECK-LABEL: func.func @left_out(
// CHECK:         %qt = graph.transpose %q
// CHECK:         %kt = graph.transpose %k
// CHECK:         %ks = graph.mul %kt
// CHECK:         %o = graph.fusion "cube+vector" (%v, %qt, %ks) attributes {graph.pattern = "attention"}
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      %vt = graph.transpose
// CHECK-NEXT:      %[[O:.*]] = graph.attention
// CHECK-NEXT:      graph.yield %[[O]]
// CHECK-NEXT:    } loc(fused["v_t", "attn"])
// CHECK-NEXT:    %ot = graph.transpose %o
// CHECK:         func.return %ot, %o, %qt
func.func @left_out(%q: tensor<1x16x4x8xf32>, %k: tensor<1x16x2x8xf32>, %v: tensor<1x16x2x8xf32>) -> (tensor<1x16x4x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) {
  %s = graph.constant dense<0.5> : tensor<1xf32> loc("s")
  %qt = graph.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x16x8xf32> loc("q_t")
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x2x8xf32>) -> tensor<1x2x16x8xf32> loc("k_t")
  %ks = graph.mul %kt, %s : (tensor<1x2x16x8xf32>, tensor<1xf32>) -> tensor<1x2x16x8xf32> loc("k_scale")
  %vt = graph.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x2x8xf32>) -> tensor<1x2x16x8xf32> loc("v_t")
  %o = graph.attention %qt, %ks, %vt {scale = 0.35 : f32, causal = 1 : i64} : (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x16x8xf32> loc("attn")
  %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x16x8xf32>) -> tensor<1x16x4x8xf32> loc("merge")
  func.return %ot, %o, %qt : tensor<1x16x4x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>
}

// -----

// graph.attention with nothing to read or write through stays alone (no fusion of one node).
// CHECK-LABEL: func.func @alone(
// CHECK-NOT:     graph.fusion
// CHECK:         graph.attention %q, %k, %v
func.func @alone(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32> {
  %o = graph.attention %q, %k, %v {scale = 0.35 : f32, causal = 0 : i64} : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32> loc("attn")
  func.return %o : tensor<1x2x16x8xf32>
}

// -----

// A graph.causal_mask that only the attention reads joins its fusion (the kernel computes the
// band from the position); one that two attentions read stays outside both, and so does the
// mask of an attention whose mask is any other value.
// CHECK-LABEL: func.func @position_mask(
// CHECK-NEXT:    %o = graph.fusion "cube+vector" (%pos, %q, %k, %v) attributes {graph.pattern = "attention"}
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      %fill = graph.constant
// CHECK-NEXT:      %m = graph.causal_mask %pos_1, %fill
// CHECK-NEXT:      %o_1 = graph.attention %q_1, %k_1, %v_1, %m
// CHECK:         } loc(fused["attn", "mask"])
func.func @position_mask(%q: tensor<1x2x16x8xf16>, %k: tensor<1x2x32x8xf16>, %v: tensor<1x2x32x8xf16>, %pos: tensor<1xi64>) -> tensor<1x2x16x8xf16> {
  %fill = graph.constant dense<-6.550400e+04> : tensor<f16>
  %m = graph.causal_mask %pos, %fill {queries = 16 : i64, keys = 32 : i64, offset = 0 : i64} : (tensor<1xi64>, tensor<f16>) -> tensor<1x1x16x32xf16> loc(fused["attn", "mask"])
  %o = graph.attention %q, %k, %v, %m {scale = 0.35 : f32, causal = 0 : i64} : (tensor<1x2x16x8xf16>, tensor<1x2x32x8xf16>, tensor<1x2x32x8xf16>, tensor<1x1x16x32xf16>) -> tensor<1x2x16x8xf16> loc("attn")
  func.return %o : tensor<1x2x16x8xf16>
}

// -----

// CHECK-LABEL: func.func @shared_position_mask(
// CHECK-NEXT:    %fill = graph.constant
// CHECK-NEXT:    %m = graph.causal_mask %pos, %fill
// CHECK-NEXT:    %o1 = graph.attention %q, %k, %v, %m
// CHECK-NEXT:    %o2 = graph.attention %o1, %k, %v, %m
// CHECK-NEXT:    func.return %o2
func.func @shared_position_mask(%q: tensor<1x2x16x8xf16>, %k: tensor<1x2x32x8xf16>, %v: tensor<1x2x32x8xf16>, %pos: tensor<1xi64>) -> tensor<1x2x16x8xf16> {
  %fill = graph.constant dense<-6.550400e+04> : tensor<f16>
  %m = graph.causal_mask %pos, %fill {queries = 16 : i64, keys = 32 : i64, offset = 0 : i64} : (tensor<1xi64>, tensor<f16>) -> tensor<1x1x16x32xf16>
  %o1 = graph.attention %q, %k, %v, %m {scale = 0.35 : f32, causal = 0 : i64} : (tensor<1x2x16x8xf16>, tensor<1x2x32x8xf16>, tensor<1x2x32x8xf16>, tensor<1x1x16x32xf16>) -> tensor<1x2x16x8xf16>
  %o2 = graph.attention %o1, %k, %v, %m {scale = 0.35 : f32, causal = 0 : i64} : (tensor<1x2x16x8xf16>, tensor<1x2x32x8xf16>, tensor<1x2x32x8xf16>, tensor<1x1x16x32xf16>) -> tensor<1x2x16x8xf16>
  func.return %o2 : tensor<1x2x16x8xf16>
}
