// Verifier errors of the collectives (collectives.mlir runs this file).

// CHECK: 'ascend.all_reduce': runs in an hccl kernel, not in @k (core_type 'vector')
ascend.kernel @k(%x: memref<8x64xf16, "gm">, %y: memref<8x64xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.all_reduce %x, %y {ranks = array<i64: 0, 1>, reduction = "sum"} : memref<8x64xf16, "gm">, memref<8x64xf16, "gm">
  ascend.return
}

// -----
// CHECK: 'ascend.kernel': @k: an hccl kernel is one collective op and block_dim 1
ascend.kernel @k(%x: memref<8x64xf16, "gm">, %y: memref<8x64xf16, "gm">) attributes {block_dim = 2 : i64, core_type = "hccl"} {
  ascend.all_reduce %x, %y {ranks = array<i64: 0, 1>, reduction = "sum"} : memref<8x64xf16, "gm">, memref<8x64xf16, "gm">
  ascend.return
}

// -----
// CHECK: 'ascend.all_reduce': output [8, 32] must have the input's shape [8, 64]
ascend.kernel @k(%x: memref<8x64xf16, "gm">, %y: memref<8x32xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl"} {
  ascend.all_reduce %x, %y {ranks = array<i64: 0, 1>, reduction = "sum"} : memref<8x64xf16, "gm">, memref<8x32xf16, "gm">
  ascend.return
}

// -----
// CHECK: 'ascend.all_reduce': reduction must be one of sum, max, min, prod, got 'mean'
ascend.kernel @k(%x: memref<8x64xf16, "gm">, %y: memref<8x64xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl"} {
  ascend.all_reduce %x, %y {ranks = array<i64: 0, 1>, reduction = "mean"} : memref<8x64xf16, "gm">, memref<8x64xf16, "gm">
  ascend.return
}

// -----
// CHECK: 'ascend.all_reduce': ranks must be distinct ranks >= 0, got [0, 0]
ascend.kernel @k(%x: memref<8x64xf16, "gm">, %y: memref<8x64xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl"} {
  ascend.all_reduce %x, %y {ranks = array<i64: 0, 0>, reduction = "sum"} : memref<8x64xf16, "gm">, memref<8x64xf16, "gm">
  ascend.return
}

// -----
// CHECK: 'ascend.all_gather': output: [8, 64] must be [8, 64] with dim 0 times 2 ranks
ascend.kernel @k(%x: memref<8x64xf32, "gm">, %y: memref<8x64xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl"} {
  ascend.all_gather %x, %y {ranks = array<i64: 0, 1>, axis = 0 : i64} : memref<8x64xf32, "gm">, memref<8x64xf32, "gm">
  ascend.return
}

// -----
// CHECK: 'ascend.all_to_all': split_axis dim 7 does not divide among 2 ranks
ascend.kernel @k(%x: memref<7x64xf32, "gm">, %y: memref<7x64xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl"} {
  ascend.all_to_all %x, %y {ranks = array<i64: 0, 1>, split_axis = 0 : i64, concat_axis = 0 : i64} : memref<7x64xf32, "gm">, memref<7x64xf32, "gm">
  ascend.return
}

// -----
// CHECK: 'ascend.send': operand #0 must be in gm, got ub
ascend.kernel @k(%x: memref<8x64xf16, "ub">) attributes {block_dim = 1 : i64, core_type = "hccl"} {
  ascend.send %x {peer = 1 : i64} : memref<8x64xf16, "ub">
  ascend.return
}

// -----
// CHECK: 'ascend.all_reduce': needs one element type, got f16, f32
ascend.kernel @k(%x: memref<8x64xf16, "gm">, %y: memref<8x64xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl"} {
  ascend.all_reduce %x, %y {ranks = array<i64: 0, 1>, reduction = "sum"} : memref<8x64xf16, "gm">, memref<8x64xf32, "gm">
  ascend.return
}
