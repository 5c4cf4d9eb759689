// Verifier errors of the indexing ops, one per `// -----` chunk.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.scatter_elements' at "se": indices [2, 4] and updates [2, 3] must have one shape of the rank of data [3, 4]
// CHECK-NEXT: note: see current operation: %0 = "graph.scatter_elements"
func.func @scatter_elements_updates(%x: tensor<3x4xf32>, %i: tensor<2x4xi64>, %u: tensor<2x3xf32>) {
  %0 = graph.scatter_elements %x, %i, %u : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<2x3xf32>) -> tensor<3x4xf32> loc("se")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.scatter_elements' at "se": reduction 'sub' is not one of none, add, mul, max, min
// CHECK-NEXT: note: see current operation: %0 = "graph.scatter_elements"
func.func @scatter_elements_reduction(%x: tensor<3x4xf32>, %i: tensor<2x4xi64>, %u: tensor<2x4xf32>) {
  %0 = graph.scatter_elements %x, %i, %u {reduction = "sub"} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<3x4xf32> loc("se")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.scatter_nd' at "sn": updates [2, 16] must have shape [2, 16, 4] (indices' leading dims, then data's dims after the 1 indexed)
// CHECK-NEXT: note: see current operation: %0 = "graph.scatter_nd"
func.func @scatter_nd_updates(%c: tensor<8x16x4xf16>, %r: tensor<2x1xi64>, %u: tensor<2x16xf16>) {
  %0 = graph.scatter_nd %c, %r, %u : (tensor<8x16x4xf16>, tensor<2x1xi64>, tensor<2x16xf16>) -> tensor<8x16x4xf16> loc("sn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.scatter_nd' at "sn": indices must be integers, got f32
// CHECK-NEXT: note: see current operation: %0 = "graph.scatter_nd"
func.func @scatter_nd_float_indices(%c: tensor<8x4xf32>, %r: tensor<2x1xf32>, %u: tensor<2x4xf32>) {
  %0 = graph.scatter_nd %c, %r, %u : (tensor<8x4xf32>, tensor<2x1xf32>, tensor<2x4xf32>) -> tensor<8x4xf32> loc("sn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.gather_nd' at "gn": indices [2, 4] end in 4; it must be 1 to data's rank minus batch_dims (3)
// CHECK-NEXT: note: see current operation: %0 = "graph.gather_nd"
func.func @gather_nd_too_deep(%c: tensor<8x16x4xf16>, %r: tensor<2x4xi64>) {
  %0 = graph.gather_nd %c, %r : (tensor<8x16x4xf16>, tensor<2x4xi64>) -> tensor<2xf16> loc("gn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.gather_nd' at "gn": the 1 batch dim(s) of data [8, 16, 4] and indices [2, 1] differ
// CHECK-NEXT: note: see current operation: %0 = "graph.gather_nd"
func.func @gather_nd_batch(%c: tensor<8x16x4xf16>, %r: tensor<2x1xi64>) {
  %0 = graph.gather_nd %c, %r {batch_dims = 1 : i64} : (tensor<8x16x4xf16>, tensor<2x1xi64>) -> tensor<2x4xf16> loc("gn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.top_k' at "topk": k 5 must be 0 to the size 4 of axis 1
// CHECK-NEXT: note: see current operation: %v, %i = "graph.top_k"
func.func @top_k_too_many(%x: tensor<3x4xf32>) {
  %v, %i = graph.top_k %x {k = 5 : i64} : (tensor<3x4xf32>) -> (tensor<3x5xf32>, tensor<3x5xi64>) loc("topk")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.top_k' at "topk": result #1 has type tensor<3x2xi32>, but the operands imply tensor<3x2xi64>
// CHECK-NEXT: note: see current operation: %v, %i = "graph.top_k"
func.func @top_k_index_type(%x: tensor<3x4xf32>) {
  %v, %i = graph.top_k %x {k = 2 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi32>) loc("topk")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.einsum' at "e": label 'j' has sizes 3 and 4
// CHECK-NEXT: note: see current operation: %0 = "graph.einsum"
func.func @einsum_sizes(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  %0 = graph.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32> loc("e")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.einsum' at "e": equation 'ij,jk->ik' has 2 input term(s) for 1 operand(s)
// CHECK-NEXT: note: see current operation: %0 = "graph.einsum"
func.func @einsum_terms(%a: tensor<2x3xf32>) {
  %0 = graph.einsum %a {equation = "ij,jk->ik"} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("e")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.reverse_sequence' at "rs": sequence_lens [3] must be [4], one length per batch entry
// CHECK-NEXT: note: see current operation: %0 = "graph.reverse_sequence"
func.func @reverse_sequence_lens(%x: tensor<3x4xf32>, %l: tensor<3xi64>) {
  %0 = graph.reverse_sequence %x, %l : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x4xf32> loc("rs")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.tensor_scatter' at "ts": update [2, 1, 9, 4] must match the cache [2, 1, 8, 4] except along axis 2, and have at most its rows
// CHECK-NEXT: note: see current operation: %0 = "graph.tensor_scatter"
func.func @tensor_scatter_rows(%kv: tensor<2x1x8x4xf32>, %u: tensor<2x1x9x4xf32>) {
  %0 = graph.tensor_scatter %kv, %u : (tensor<2x1x8x4xf32>, tensor<2x1x9x4xf32>) -> tensor<2x1x8x4xf32> loc("ts")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.tensor_scatter' at "ts": write_indices [1] must be [2], one per batch entry
// CHECK-NEXT: note: see current operation: %0 = "graph.tensor_scatter"
func.func @tensor_scatter_indices(%kv: tensor<2x1x8x4xf32>, %u: tensor<2x1x1x4xf32>, %w: tensor<1xi64>) {
  %0 = graph.tensor_scatter %kv, %u, %w : (tensor<2x1x8x4xf32>, tensor<2x1x1x4xf32>, tensor<1xi64>) -> tensor<2x1x8x4xf32> loc("ts")
  func.return
}
