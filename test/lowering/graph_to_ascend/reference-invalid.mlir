// Every verifier error of ascend.reference, one case per chunk.
// RUN: not geir-opt %s --split-input-file 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.reference': 'graph.nope' is not a graph op
ascend.kernel @bad_op(%x: memref<4xf32, "gm">, %y: memref<4xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.reference "graph.nope" ins(%x : memref<4xf32, "gm">) outs(%y : memref<4xf32, "gm">)
  ascend.return
}

// -----

// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.reference': 'graph.relu' has no attribute 'alpha'
ascend.kernel @bad_attr(%x: memref<4xf32, "gm">, %y: memref<4xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.reference "graph.relu" ins(%x : memref<4xf32, "gm">) outs(%y : memref<4xf32, "gm">) {alpha = 1.0 : f32}
  ascend.return
}

// -----

// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.reference': attribute 'size' of 'graph.lrn' must be
ascend.kernel @bad_kind(%x: memref<4xf32, "gm">, %y: memref<4xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.reference "graph.lrn" ins(%x : memref<4xf32, "gm">) outs(%y : memref<4xf32, "gm">) {size = "three"}
  ascend.return
}

// -----

// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.reference': operand #1 must be in gm, got ub
ascend.kernel @not_gm(%x: memref<8xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<8xf32, "ub">
  ascend.reference "graph.relu" ins(%x : memref<8xf32, "gm">) outs(%u : memref<8xf32, "ub">)
  ascend.return
}

// -----

// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.reference': must be inside an ascend.kernel
func.func @host(%x: memref<8xf32, "gm">, %y: memref<8xf32, "gm">) {
  ascend.reference "graph.relu" ins(%x : memref<8xf32, "gm">) outs(%y : memref<8xf32, "gm">)
  func.return
}
