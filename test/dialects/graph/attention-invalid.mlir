// Verifier errors of graph.attention, one per `// -----` chunk: head counts, head dims,
// sequence lengths, the mask's shape, the causal flag, ranks, the scale and element types.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.attention' at "attn": the kv heads (3) must divide the query heads (4)
// CHECK-NEXT: note: see current operation: %0 = "graph.attention"
func.func @heads(%q: tensor<1x4x5x8xf32>, %k: tensor<1x3x5x8xf32>, %v: tensor<1x3x5x8xf32>) {
  %0 = graph.attention %q, %k, %v {scale = 0.5 : f32} : (tensor<1x4x5x8xf32>, tensor<1x3x5x8xf32>, tensor<1x3x5x8xf32>) -> tensor<1x4x5x8xf32> loc("attn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.attention' at "attn": k and v must have the same number of heads, got 2 and 4
// CHECK-NEXT: note: see current operation: %0 = "graph.attention"
func.func @kv_heads(%q: tensor<1x4x5x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x4x5x8xf32>) {
  %0 = graph.attention %q, %k, %v {scale = 0.5 : f32} : (tensor<1x4x5x8xf32>, tensor<1x2x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> loc("attn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.attention' at "attn": q and k head dims differ: 8 and 16
// CHECK-NEXT: note: see current operation: %0 = "graph.attention"
func.func @head_dim(%q: tensor<1x4x5x8xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x8xf32>) {
  %0 = graph.attention %q, %k, %v {scale = 0.5 : f32} : (tensor<1x4x5x8xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> loc("attn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.attention' at "attn": k and v sequence lengths differ: 5 and 6
// CHECK-NEXT: note: see current operation: %0 = "graph.attention"
func.func @kv_len(%q: tensor<1x4x5x8xf32>, %k: tensor<1x4x5x8xf32>, %v: tensor<1x4x6x8xf32>) {
  %0 = graph.attention %q, %k, %v {scale = 0.5 : f32} : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x6x8xf32>) -> tensor<1x4x5x8xf32> loc("attn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.attention' at "attn": batch sizes differ: q 2, k 1, v 1
// CHECK-NEXT: note: see current operation: %0 = "graph.attention"
func.func @batch(%q: tensor<2x4x5x8xf32>, %k: tensor<1x4x5x8xf32>, %v: tensor<1x4x5x8xf32>) {
  %0 = graph.attention %q, %k, %v {scale = 0.5 : f32} : (tensor<2x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<2x4x5x8xf32> loc("attn")
  func.return
}

// -----
// A mask broadcasts to the scores [B, H, S, L]: a [S, S] one does not when L != S.
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.attention' at "attn": mask [5, 5] does not broadcast to the scores [1, 4, 5, 7]
// CHECK-NEXT: note: see current operation: %0 = "graph.attention"
func.func @mask_shape(%q: tensor<1x4x5x8xf32>, %k: tensor<1x4x7x8xf32>, %v: tensor<1x4x7x8xf32>, %m: tensor<5x5xf32>) {
  %0 = graph.attention %q, %k, %v, %m {scale = 0.5 : f32} : (tensor<1x4x5x8xf32>, tensor<1x4x7x8xf32>, tensor<1x4x7x8xf32>, tensor<5x5xf32>) -> tensor<1x4x5x8xf32> loc("attn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.attention' at "attn": q, k, v and mask must have one element type, got f32, i1
// CHECK-NEXT: note: see current operation: %0 = "graph.attention"
func.func @mask_type(%q: tensor<1x4x5x8xf32>, %k: tensor<1x4x5x8xf32>, %v: tensor<1x4x5x8xf32>, %m: tensor<1x1x5x5xi1>) {
  %0 = graph.attention %q, %k, %v, %m {scale = 0.5 : f32} : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x1x5x5xi1>) -> tensor<1x4x5x8xf32> loc("attn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.attention' at "attn": causal attention needs at least as many keys as queries, got 3 < 5
// CHECK-NEXT: note: see current operation: %0 = "graph.attention"
func.func @causal_short(%q: tensor<1x4x5x8xf32>, %k: tensor<1x4x3x8xf32>, %v: tensor<1x4x3x8xf32>) {
  %0 = graph.attention %q, %k, %v {scale = 0.5 : f32, causal = 1 : i64} : (tensor<1x4x5x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>) -> tensor<1x4x5x8xf32> loc("attn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.attention' at "attn": causal must be 0 or 1, got 2
// CHECK-NEXT: note: see current operation: %0 = "graph.attention"
func.func @causal_value(%q: tensor<1x4x5x8xf32>, %k: tensor<1x4x5x8xf32>, %v: tensor<1x4x5x8xf32>) {
  %0 = graph.attention %q, %k, %v {scale = 0.5 : f32, causal = 2 : i64} : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> loc("attn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.attention' at "attn": q must be [batch, heads, seq, head_dim], got [4, 5, 8]
// CHECK-NEXT: note: see current operation: %0 = "graph.attention"
func.func @rank(%q: tensor<4x5x8xf32>, %k: tensor<1x4x5x8xf32>, %v: tensor<1x4x5x8xf32>) {
  %0 = graph.attention %q, %k, %v {scale = 0.5 : f32} : (tensor<4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> loc("attn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.attention' at "attn": requires attribute 'scale'
// CHECK-NEXT: note: see current operation: %0 = "graph.attention"
func.func @no_scale(%q: tensor<1x4x5x8xf32>, %k: tensor<1x4x5x8xf32>, %v: tensor<1x4x5x8xf32>) {
  %0 = graph.attention %q, %k, %v : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x5x8xf32> loc("attn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.attention' at "attn": result #0 has type tensor<1x4x5x8xf32>, but the operands imply tensor<1x4x5x6xf32>
// CHECK-NEXT: note: see current operation: %0 = "graph.attention"
func.func @result(%q: tensor<1x4x5x8xf32>, %k: tensor<1x4x5x8xf32>, %v: tensor<1x4x5x6xf32>) {
  %0 = graph.attention %q, %k, %v {scale = 0.5 : f32} : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x6xf32>) -> tensor<1x4x5x8xf32> loc("attn")
  func.return
}
