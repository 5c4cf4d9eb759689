// convert-graph-to-ascend: a chain of views, transposes and constant slices whose every output is
// a strided view of one input is one data kernel: each output is composed as (offset, shape,
// strides) of the input, read as one strided subview (the input viewed as a row-major shape
// that has the view as a subview) and written by one transfer, with a vtranspose in ub when
// the destination order differs from the source's.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// The TorchScript attention's q/k/v split (in-projection [S=4, B=1, 3E=96], 2 heads of 16):
// unsqueeze, the 3 to the front, squeeze, three slices on axis 0, per-head reshape and
// transpose, reshape to [1, H, S, D]. q[h, s, d] = x[s, 0, h*16 + d]: the input seen as
// [S, 3*H, D] = [4, 6, 16], each output its [4, 2, 16] subview at head 0, 2, 4, transposed
// (1, 0, 2) in ub. One kernel, three transfers, nothing between them in gm; a permuting
// transfer is no byte copy (no geir.byte_copies).
// CHECK-LABEL: ascend.kernel @k0_unsqueeze(
// CHECK-SAME:    %a: memref<4x1x96xf32, "gm">
// CHECK-SAME:    %o0: memref<1x2x4x16xf32, "gm">, %o1: memref<1x2x4x16xf32, "gm">, %o2: memref<1x2x4x16xf32, "gm">)
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", template = "data",
// CHECK-SAME:    geir.outputs = {{\[}}[0 : i64, "q"], [0 : i64, "k"], [0 : i64, "v"]]} {
// CHECK:         %[[X:.*]] = memref.expand_shape %{{.*}} output_shape [4, 6, 16] : memref<4x96xf32, "gm"> into memref<4x6x16xf32, "gm">
// CHECK-NEXT:    %[[Q:.*]] = memref.subview %[[X]][0, 0, 0] [4, 2, 16] [1, 1, 1] : memref<4x6x16xf32, "gm"> to memref<4x2x16xf32, strided<[96, 16, 1]>, "gm">
// CHECK-NEXT:    %[[QO:.*]] = memref.collapse_shape %o0 {{.*}} into memref<2x4x16xf32, "gm">
// CHECK-NEXT:    %[[K:.*]] = memref.subview %[[X]][0, 2, 0] [4, 2, 16] [1, 1, 1] : memref<4x6x16xf32, "gm"> to memref<4x2x16xf32, strided<[96, 16, 1], offset: 32>, "gm">
// CHECK-NEXT:    %[[KO:.*]] = memref.collapse_shape %o1 {{.*}} into memref<2x4x16xf32, "gm">
// CHECK-NEXT:    %[[V:.*]] = memref.subview %[[X]][0, 4, 0] [4, 2, 16] [1, 1, 1] : memref<4x6x16xf32, "gm"> to memref<4x2x16xf32, strided<[96, 16, 1], offset: 64>, "gm">
// CHECK-NEXT:    %[[VO:.*]] = memref.collapse_shape %o2 {{.*}} into memref<2x4x16xf32, "gm">
// CHECK:         ascend.copy %[[Q]], %in_ub
// CHECK:         ascend.vtranspose %in_ub, %out_ub {perm = array<i64: 1, 0, 2>}
// CHECK:         ascend.copy %out_ub, %[[QO]]
// CHECK:         ascend.copy %[[K]], %in_ub_1
// CHECK:         ascend.vtranspose %in_ub_1, %out_ub_1 {perm = array<i64: 1, 0, 2>}
// CHECK:         ascend.copy %out_ub_1, %[[KO]]
// CHECK:         ascend.copy %[[V]], %in_ub_2
// CHECK:         ascend.vtranspose %in_ub_2, %out_ub_2 {perm = array<i64: 1, 0, 2>}
// CHECK:         ascend.copy %out_ub_2, %[[VO]]
// CHECK-NEXT:    ascend.set_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:    ascend.wait_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:    ascend.return
// CHECK:       func.func @qkv(
// CHECK:         ascend.launch @k0_unsqueeze on %stream(%x, {{.*}}, %q, %k, %v)
// CHECK-NOT:     ascend.launch
// CHECK:         func.return
func.func @qkv(%x: tensor<4x1x96xf32>) -> (tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>) {
  %q, %k, %v = graph.fusion "data" (%x) : (tensor<4x1x96xf32>) -> (tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>) {
  ^bb0(%a: tensor<4x1x96xf32>):
    %s5 = graph.constant dense<[1, 4, 1, 3, 32]> : tensor<5xi64>
    %c0 = graph.constant dense<0> : tensor<1xi64>
    %c1 = graph.constant dense<1> : tensor<1xi64>
    %c2 = graph.constant dense<2> : tensor<1xi64>
    %c3 = graph.constant dense<3> : tensor<1xi64>
    %s3 = graph.constant dense<[4, 2, 16]> : tensor<3xi64>
    %s4 = graph.constant dense<[1, 2, 4, 16]> : tensor<4xi64>
    %r = graph.reshape %a, %s5 : (tensor<4x1x96xf32>, tensor<5xi64>) -> tensor<1x4x1x3x32xf32> loc("unsqueeze")
    %t = graph.transpose %r {perm = array<i64: 3, 1, 2, 0, 4>} : (tensor<1x4x1x3x32xf32>) -> tensor<3x4x1x1x32xf32> loc("transpose")
    %sq = graph.squeeze %t {axes = array<i64: 3>} : (tensor<3x4x1x1x32xf32>) -> tensor<3x4x1x32xf32> loc("squeeze")
    %g0 = graph.slice %sq, %c0, %c1, %c0 : (tensor<3x4x1x32xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x1x32xf32> loc("gather_q")
    %g1 = graph.slice %sq, %c1, %c2, %c0 : (tensor<3x4x1x32xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x1x32xf32> loc("gather_k")
    %g2 = graph.slice %sq, %c2, %c3, %c0 : (tensor<3x4x1x32xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x1x32xf32> loc("gather_v")
    %h0 = graph.reshape %g0, %s3 : (tensor<1x4x1x32xf32>, tensor<3xi64>) -> tensor<4x2x16xf32> loc("heads_q")
    %p0 = graph.transpose %h0 {perm = array<i64: 1, 0, 2>} : (tensor<4x2x16xf32>) -> tensor<2x4x16xf32> loc("perm_q")
    %h1 = graph.reshape %g1, %s3 : (tensor<1x4x1x32xf32>, tensor<3xi64>) -> tensor<4x2x16xf32> loc("heads_k")
    %p1 = graph.transpose %h1 {perm = array<i64: 1, 0, 2>} : (tensor<4x2x16xf32>) -> tensor<2x4x16xf32> loc("perm_k")
    %h2 = graph.reshape %g2, %s3 : (tensor<1x4x1x32xf32>, tensor<3xi64>) -> tensor<4x2x16xf32> loc("heads_v")
    %p2 = graph.transpose %h2 {perm = array<i64: 1, 0, 2>} : (tensor<4x2x16xf32>) -> tensor<2x4x16xf32> loc("perm_v")
    %o0 = graph.reshape %p0, %s4 : (tensor<2x4x16xf32>, tensor<4xi64>) -> tensor<1x2x4x16xf32> loc("q")
    %o1 = graph.reshape %p1, %s4 : (tensor<2x4x16xf32>, tensor<4xi64>) -> tensor<1x2x4x16xf32> loc("k")
    %o2 = graph.reshape %p2, %s4 : (tensor<2x4x16xf32>, tensor<4xi64>) -> tensor<1x2x4x16xf32> loc("v")
    graph.yield %o0, %o1, %o2 : tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>
  } loc(fused["unsqueeze", "transpose", "squeeze", "gather_q", "gather_k", "gather_v", "heads_q", "perm_q", "heads_k", "perm_k", "heads_v", "perm_v", "q", "k", "v"])
  func.return %q, %k, %v : tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>
}

// -----

// A transpose of a slice with step 2 on the outer axis: the subview of the input as it lies
// reads every second [6, 32] plane, the vtranspose puts the 6 in front.
// CHECK-LABEL: ascend.kernel @k0_slice(
// CHECK:         %[[S:.*]] = memref.subview %a[0, 0, 0] [3, 6, 32] [2, 1, 1] : memref<5x6x32xf32, "gm"> to memref<3x6x32xf32, strided<[384, 32, 1]>, "gm">
// CHECK:         ascend.copy %[[S]], %in_ub
// CHECK:         ascend.vtranspose %in_ub, %out_ub {perm = array<i64: 1, 0, 2>} : memref<3x6x32xf32, "ub">, memref<6x3x32xf32, "ub">
// CHECK:         ascend.copy %out_ub, %t
// CHECK:       func.func @slice_transpose(
// CHECK:         ascend.launch @k0_slice
// CHECK-NOT:     ascend.launch
func.func @slice_transpose(%x: tensor<5x6x32xf32>) -> tensor<6x3x32xf32> {
  %y = graph.fusion "data" (%x) : (tensor<5x6x32xf32>) -> tensor<6x3x32xf32> {
  ^bb0(%a: tensor<5x6x32xf32>):
    %starts = graph.constant dense<0> : tensor<1xi64>
    %ends = graph.constant dense<5> : tensor<1xi64>
    %axes = graph.constant dense<0> : tensor<1xi64>
    %steps = graph.constant dense<2> : tensor<1xi64>
    %s = graph.slice %a, %starts, %ends, %axes, %steps : (tensor<5x6x32xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3x6x32xf32> loc("slice")
    %t = graph.transpose %s {perm = array<i64: 1, 0, 2>} : (tensor<3x6x32xf32>) -> tensor<6x3x32xf32> loc("transpose")
    graph.yield %t : tensor<6x3x32xf32>
  } loc(fused["slice", "transpose"])
  func.return %y : tensor<6x3x32xf32>
}

// -----

// A chain that stays one run of the input's bytes (two outer slices and a reshape) is a plain
// transfer of the run, marked geir.byte_copies [out arg 6 at 0 <- arg 0 at byte 768, 512 bytes]
// for ascend-elide-copies.
// CHECK-LABEL: ascend.kernel @k0_rows(
// CHECK-SAME:    geir.byte_copies = [array<i64: 6, 0, 0, 768, 512>]
// CHECK:         memref.subview %{{.*}}[192] [128] [1] : memref<512xf32, "gm"> to memref<128xf32, strided<[1], offset: 192>, "gm">
// CHECK-NOT:     ascend.vtranspose
// CHECK:         ascend.return
func.func @rows(%x: tensor<8x4x16xf32>) -> tensor<2x64xf32> {
  %y = graph.fusion "data" (%x) : (tensor<8x4x16xf32>) -> tensor<2x64xf32> {
  ^bb0(%a: tensor<8x4x16xf32>):
    %c1 = graph.constant dense<1> : tensor<1xi64>
    %c2 = graph.constant dense<2> : tensor<1xi64>
    %c3 = graph.constant dense<3> : tensor<1xi64>
    %c6 = graph.constant dense<6> : tensor<1xi64>
    %shape = graph.constant dense<[2, 64]> : tensor<2xi64>
    %s = graph.slice %a, %c2, %c6 : (tensor<8x4x16xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x4x16xf32> loc("rows")
    %t = graph.slice %s, %c1, %c3 : (tensor<4x4x16xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4x16xf32> loc("rows_again")
    %r = graph.reshape %t, %shape : (tensor<2x4x16xf32>, tensor<2xi64>) -> tensor<2x64xf32> loc("flat")
    graph.yield %r : tensor<2x64xf32>
  } loc(fused["rows", "rows_again", "flat"])
  func.return %y : tensor<2x64xf32>
}

// -----

// Not taken: a slice every second element of the innermost axis stays the innermost source
// dim after the transpose, and DMA moves rows; the fusion splits as before (the slice is the
// reference fallback, the transpose a data kernel of its own).
// CHECK-LABEL: ascend.kernel @k0_slice(
// CHECK-SAME:    fallback
// CHECK:         ascend.reference "graph.slice"
// CHECK-LABEL: ascend.kernel @k1_transpose(
// CHECK-SAME:    template = "data"
// CHECK:       func.func @strided_rows(
// CHECK:         ascend.launch @k0_slice
// CHECK:         ascend.launch @k1_transpose
func.func @strided_rows(%x: tensor<4x8x16xf32>) -> tensor<8x4x8xf32> {
  %y = graph.fusion "data" (%x) : (tensor<4x8x16xf32>) -> tensor<8x4x8xf32> {
  ^bb0(%a: tensor<4x8x16xf32>):
    %starts = graph.constant dense<0> : tensor<1xi64>
    %ends = graph.constant dense<16> : tensor<1xi64>
    %axes = graph.constant dense<2> : tensor<1xi64>
    %steps = graph.constant dense<2> : tensor<1xi64>
    %s = graph.slice %a, %starts, %ends, %axes, %steps : (tensor<4x8x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x8x8xf32> loc("slice")
    %t = graph.transpose %s {perm = array<i64: 1, 0, 2>} : (tensor<4x8x8xf32>) -> tensor<8x4x8xf32> loc("transpose")
    graph.yield %t : tensor<8x4x8xf32>
  } loc(fused["slice", "transpose"])
  func.return %y : tensor<8x4x8xf32>
}

// -----

// Not taken: [6, 4, 8] -> [24, 8] after the transpose merges two dims that are not one run
// (numpy would copy), so the transpose and the slice after it stay two kernels (the
// transpose writes the reshape's buffer, the slice is a byte copy of its first rows).
// CHECK-LABEL: ascend.kernel @k0_transpose(
// CHECK:         ascend.vtranspose
// CHECK-LABEL: ascend.kernel @k1_slice(
// CHECK-SAME:    geir.byte_copies
// CHECK:       func.func @reshape_copy(
// CHECK:         ascend.launch @k0_transpose
// CHECK:         ascend.launch @k1_slice
func.func @reshape_copy(%x: tensor<4x6x8xf32>) -> tensor<12x8xf32> {
  %y = graph.fusion "data" (%x) : (tensor<4x6x8xf32>) -> tensor<12x8xf32> {
  ^bb0(%a: tensor<4x6x8xf32>):
    %shape = graph.constant dense<[24, 8]> : tensor<2xi64>
    %starts = graph.constant dense<0> : tensor<1xi64>
    %ends = graph.constant dense<12> : tensor<1xi64>
    %t = graph.transpose %a {perm = array<i64: 1, 0, 2>} : (tensor<4x6x8xf32>) -> tensor<6x4x8xf32> loc("transpose")
    %r = graph.reshape %t, %shape : (tensor<6x4x8xf32>, tensor<2xi64>) -> tensor<24x8xf32> loc("reshape")
    %s = graph.slice %r, %starts, %ends, %starts : (tensor<24x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<12x8xf32> loc("slice")
    graph.yield %s : tensor<12x8xf32>
  } loc(fused["transpose", "reshape", "slice"])
  func.return %y : tensor<12x8xf32>
}
