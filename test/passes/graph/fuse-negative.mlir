// graph-fuse must leave these alone (or fuse only the legal part).
// RUN: geir-opt %s --split-input-file -p graph-fuse --no-debuginfo | filecheck %s

// A transpose feeding two matmuls: absorbing it into either kernel would compute it twice.
// CHECK-LABEL: func.func @shared_transpose(
// CHECK-NOT:     graph.fusion
// CHECK:         %t = graph.transpose %x
// CHECK-NEXT:    %m1 = graph.matmul %t, %w1
// CHECK-NEXT:    %m2 = graph.matmul %t, %w2
func.func @shared_transpose(%x: tensor<64x16xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>) {
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<64x16xf32>) -> tensor<16x64xf32> loc("transpose")
  %m1 = graph.matmul %t, %w1 : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32> loc("matmul1")
  %m2 = graph.matmul %t, %w2 : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32> loc("matmul2")
  func.return %m1, %m2 : tensor<16x32xf32>, tensor<16x32xf32>
}

// -----

// exp feeds a conv and a relu: it is computed once, in the relu's kernel, which yields it for
// the conv (a vector op is not a conv prologue).
// CHECK-LABEL: func.func @shared_producer(
// CHECK:         %e, %r = graph.fusion "vector" (%x)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[E:.*]] = graph.exp
// CHECK-NEXT:      %[[R:.*]] = graph.relu %[[E]]
// CHECK-NEXT:      graph.yield %[[E]], %[[R]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %c = graph.conv %e, %w
// CHECK-NOT:     graph.exp
// CHECK:         func.return %c, %r
func.func @shared_producer(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %w = graph.constant dense<0.1> : tensor<4x4x3x3xf32> loc("w")
  %e = graph.exp %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("exp")
  %c = graph.conv %e, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> loc("conv")
  %r = graph.relu %e : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("relu")
  func.return %c, %r : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// -----

// exp -> max_pool -> add and exp -> add: fusing exp with add would put the pool (outside)
// on a path that leaves the kernel and comes back. Only add + relu fuse.
// CHECK-LABEL: func.func @cycle_through_pool(
// CHECK-NEXT:    %e = graph.exp %x
// CHECK-NEXT:    %p = graph.max_pool %e
// CHECK-NEXT:    %r = graph.fusion "vector" (%e, %p)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.relu
func.func @cycle_through_pool(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %e = graph.exp %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("exp")
  %p = graph.max_pool %e {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("pool")
  %a = graph.add %e, %p : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("add")
  %r = graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("relu")
  func.return %r : tensor<1x4x8x8xf32>
}

// -----

// A 65536-element f32 row is 256 KiB: no tile of exp + row sum + div fits the 192 KiB UB.
// CHECK-LABEL: func.func @huge_row(
// CHECK-NOT:     graph.fusion
// CHECK:         func.return
func.func @huge_row(%x: tensor<2x65536xf32>) -> tensor<2x65536xf32> {
  %e = graph.exp %x : (tensor<2x65536xf32>) -> tensor<2x65536xf32> loc("exp")
  %s = graph.reduce_sum %e {axes = array<i64: 1>} : (tensor<2x65536xf32>) -> tensor<2x1xf32> loc("sum")
  %d = graph.div %e, %s : (tensor<2x65536xf32>, tensor<2x1xf32>) -> tensor<2x65536xf32> loc("div")
  func.return %d : tensor<2x65536xf32>
}

// -----

// Softmax over a 4096-element matmul row: 16 accumulator rows need 256 KiB of L0C (128 KiB),
// so the matmul and the softmax stay apart; a 2048-element row (exactly 128 KiB) fuses.
// CHECK-LABEL: func.func @long_softmax_row(
// CHECK-NEXT:    %m = graph.matmul %x, %w
// CHECK-NEXT:    %s = graph.softmax %m
// CHECK-NEXT:    %s2 = graph.fusion "cube+vector" (%x, %w2) attributes {graph.pattern = "matmul-epilogue"}
func.func @long_softmax_row(%x: tensor<16x64xf32>, %w: tensor<64x4096xf32>, %w2: tensor<64x2048xf32>) -> (tensor<16x4096xf32>, tensor<16x2048xf32>) {
  %m = graph.matmul %x, %w : (tensor<16x64xf32>, tensor<64x4096xf32>) -> tensor<16x4096xf32> loc("matmul")
  %s = graph.softmax %m : (tensor<16x4096xf32>) -> tensor<16x4096xf32> loc("softmax")
  %m2 = graph.matmul %x, %w2 : (tensor<16x64xf32>, tensor<64x2048xf32>) -> tensor<16x2048xf32> loc("matmul2")
  %s2 = graph.softmax %m2 : (tensor<16x2048xf32>) -> tensor<16x2048xf32> loc("softmax2")
  func.return %s, %s2 : tensor<16x4096xf32>, tensor<16x2048xf32>
}

// -----

// A row sum followed by a column max reduces two different rows: not one kernel.
// CHECK-LABEL: func.func @different_rows(
// CHECK-NEXT:    %r = graph.fusion "vector" (%x) attributes {graph.pattern = "reduction"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      graph.exp
// CHECK-NEXT:      graph.reduce_sum
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %c = graph.reduce_max %r
func.func @different_rows(%x: tensor<8x16xf32>) -> tensor<1x1xf32> {
  %e = graph.exp %x : (tensor<8x16xf32>) -> tensor<8x16xf32> loc("exp")
  %r = graph.reduce_sum %e {axes = array<i64: 1>} : (tensor<8x16xf32>) -> tensor<8x1xf32> loc("rows")
  %c = graph.reduce_max %r {axes = array<i64: 0>} : (tensor<8x1xf32>) -> tensor<1x1xf32> loc("cols")
  func.return %c : tensor<1x1xf32>
}

// -----

// Integer arithmetic is shape computation for the host, not a kernel.
// CHECK-LABEL: func.func @integers(
// CHECK-NOT:     graph.fusion
// CHECK:         func.return
func.func @integers(%i: tensor<4xi64>, %j: tensor<4xi64>) -> tensor<4xi64> {
  %a = graph.add %i, %j : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64> loc("add")
  %b = graph.mul %a, %a : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64> loc("mul")
  func.return %b : tensor<4xi64>
}

// -----

// A head merge ([B, H, S, D] -> [B, S, H, D]) before a matmul: the cube kernel reads an
// operand through views and a transpose of its last two dims only, so the transpose stays out
// of the matmul's fusion (the lowering would split it off again; an attention writing its
// heads merged takes it). The reshape after it is a view and joins.
// CHECK-LABEL: func.func @head_merge_before_matmul(
// CHECK-NEXT:    %t = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT:    %r = graph.fusion "cube+vector" (%t, %w) attributes {graph.pattern = "matmul-epilogue"}
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      graph.constant
// CHECK-NEXT:      graph.reshape
// CHECK-NEXT:      graph.matmul
// CHECK-NEXT:      graph.relu
func.func @head_merge_before_matmul(%x: tensor<2x4x16x8xf32>, %w: tensor<32x32xf32>) -> tensor<2x16x32xf32> {
  %merged = graph.constant dense<[2, 16, 32]> : tensor<3xi64> loc("merged_shape")
  %t = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x16x8xf32>) -> tensor<2x16x4x8xf32> loc("merge")
  %y = graph.reshape %t, %merged : (tensor<2x16x4x8xf32>, tensor<3xi64>) -> tensor<2x16x32xf32> loc("merged")
  %p = graph.matmul %y, %w : (tensor<2x16x32xf32>, tensor<32x32xf32>) -> tensor<2x16x32xf32> loc("proj")
  %r = graph.relu %p : (tensor<2x16x32xf32>) -> tensor<2x16x32xf32> loc("relu")
  func.return %r : tensor<2x16x32xf32>
}

// -----

// The transpose the cube does read through (the last two dims of the right operand) joins.
// CHECK-LABEL: func.func @transposed_rhs(
// CHECK-NEXT:    %r = graph.fusion "cube+vector" (%w, %x) attributes {graph.pattern = "matmul-epilogue"}
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      graph.transpose
// CHECK-NEXT:      graph.matmul
func.func @transposed_rhs(%x: tensor<16x32xf32>, %w: tensor<64x32xf32>) -> tensor<16x64xf32> {
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<64x32xf32>) -> tensor<32x64xf32> loc("wt")
  %p = graph.matmul %x, %wt : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32> loc("proj")
  %r = graph.relu %p : (tensor<16x64xf32>) -> tensor<16x64xf32> loc("relu")
  func.return %r : tensor<16x64xf32>
}
