// convert-graph-to-ascend: graph.kv_cache_write is a kernel that reads the position once on
// the scalar pipe and copies the new rows to that row of the cache (LLaMA-7B's cache: 32 heads
// x 4096 positions x 128, f16, one new token). When the cache is an argument nothing else
// reads and the result is returned, the output is marked as that argument updated in place
// (`ascend.updates`) and the kernel writes it directly: no copy of the 32 MiB cache. The
// position input carries its largest valid value (`ascend.max_position`).
// RUN: geir-opt %s --split-input-file -p 'convert-graph-to-ascend,ascend-plan-memory' | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_k_write(
// CHECK-SAME:    %knew: memref<1x32x1x128xf16, "gm">, %pos: memref<1xi64, "gm">, %kc: memref<1x32x4096x128xf16, "gm">) attributes {block_dim = {{[0-9]+}} : i64, core_type = "vector", template = "kv_cache"}
// CHECK:         %[[P:.*]] = memref.load %pos[%{{.*}}] : memref<1xi64, "gm">
// CHECK-NEXT:    %[[ROW:.*]] = arith.index_cast %[[P]] : i64 to index
// CHECK:         ascend.copy %{{.*}}, %[[UB:.*]] : memref<32x1x128xf16, "gm"> to memref<32x1x128xf16, "ub">
// CHECK-NEXT:    ascend.set_flag MTE2 -> MTE3
// CHECK-NEXT:    ascend.wait_flag MTE2 -> MTE3
// CHECK-NEXT:    %[[DST:.*]] = memref.subview %{{.*}}[0, %[[ROW]], 0] [32, 1, 128] [1, 1, 1] : memref<32x4096x128xf16, "gm">
// CHECK-NEXT:    ascend.copy %[[UB]], %[[DST]]
// CHECK-LABEL: func.func @decode(
// CHECK-SAME:    %k: memref<1x32x4096x128xf16, "gm">, %knew: memref<1x32x1x128xf16, "gm">, %pos: memref<1xi64, "gm"> {ascend.max_position = 4095 : i64}, %kc: memref<1x32x4096x128xf16, "gm"> {ascend.output, ascend.updates = 0 : i64})
// CHECK-NEXT:    %stream = ascend.stream 0
// CHECK-NEXT:    ascend.launch @k0_k_write on %stream(%knew, %pos, %kc)
// CHECK-NEXT:    func.return
func.func @decode(%k: tensor<1x32x4096x128xf16>, %knew: tensor<1x32x1x128xf16>, %pos: tensor<1xi64>) -> tensor<1x32x4096x128xf16> {
  %kc = graph.kv_cache_write %k, %knew, %pos : (tensor<1x32x4096x128xf16>, tensor<1x32x1x128xf16>, tensor<1xi64>) -> tensor<1x32x4096x128xf16> loc("k_write")
  func.return %kc : tensor<1x32x4096x128xf16>
}

// -----

// The old cache is returned too: it cannot be updated in place, so the result is a copy of
// the cache (a data kernel) and then the rows; no `ascend.updates`.
// CHECK-LABEL: func.func @old_cache_kept(
// CHECK-SAME:    %kc: memref<1x2x16x64xf16, "gm"> {ascend.output}, %k_1: memref<1x2x16x64xf16, "gm"> {ascend.output})
// CHECK:         ascend.launch @k1_copy on %stream(%k, %kc)
// CHECK-NEXT:    ascend.launch @k0_k_write on %stream(%knew, %pos, %kc)
func.func @old_cache_kept(%k: tensor<1x2x16x64xf16>, %knew: tensor<1x2x1x64xf16>, %pos: tensor<1xi64>) -> (tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>) {
  %kc = graph.kv_cache_write %k, %knew, %pos : (tensor<1x2x16x64xf16>, tensor<1x2x1x64xf16>, tensor<1xi64>) -> tensor<1x2x16x64xf16> loc("k_write")
  func.return %kc, %k : tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>
}

// -----

// A rotation fused with the write (graph-fuse `cache-write`: a decoder's K): the kernel reads
// the unrotated rows and the angle rows, rotates each box in ub - the halves by vmuls -1 and
// vcopy, the angle rows broadcast over the box (vbrcb), x * cos + rot * sin - and stores it at
// the position's row of the cache, still updated in place.
// CHECK-LABEL: ascend.kernel @k0_rotary_k(
// CHECK-SAME:    template = "kv_cache"
// CHECK:         %[[P:.*]] = memref.load %p[%{{.*}}] : memref<1xi64, "gm">
// CHECK-NEXT:    %[[ROW:.*]] = arith.index_cast %[[P]] : i64 to index
// CHECK:         ascend.copy %{{.*}}, %row_ub : memref<8x1x128xf16, "gm"> to memref<8x1x128xf16, "ub">
// CHECK-NEXT:    ascend.copy %{{.*}}, %cos_row0
// CHECK-NEXT:    ascend.copy %{{.*}}, %sin_row0
// CHECK:         ascend.vbrcb %cos_row0, %cos_box0 : memref<1x1x128xf16, "ub">, memref<8x1x128xf16, "ub">
// CHECK-NEXT:    ascend.vbrcb %sin_row0, %sin_box0
// CHECK:         ascend.vmuls %{{.*}}, %{{.*}}, %{{.*}} : memref<8x1x64xf16, strided<[128, 128, 1], offset: 64>, "ub">, f16, memref<8x1x64xf16, strided<[128, 128, 1]>, "ub">
// CHECK:         ascend.vcopy
// CHECK-NEXT:    ascend.vmul %rot0, %sin_box0, %rot0
// CHECK-NEXT:    ascend.vmul %row_ub, %cos_box0, %row_ub
// CHECK-NEXT:    ascend.vadd %row_ub, %rot0, %row_ub
// CHECK:         %[[DST:.*]] = memref.subview %{{.*}}[0, %[[ROW]], 0] [8, 1, 128] [1, 1, 1] : memref<8x4096x128xf16, "gm">
// CHECK-NEXT:    ascend.copy %row_ub, %[[DST]]
// CHECK-LABEL: func.func @rotated(
// CHECK-SAME:    %pos: memref<1xi64, "gm"> {ascend.max_position = 4095 : i64}, %kc: memref<1x8x4096x128xf16, "gm"> {ascend.output, ascend.updates = 0 : i64})
// CHECK-NEXT:    %stream = ascend.stream 0
// CHECK-NEXT:    ascend.launch @k0_rotary_k on %stream(%x, %cos, %sin, %k, %pos, %kc)
// CHECK-NEXT:    func.return
func.func @rotated(%k: tensor<1x8x4096x128xf16>, %x: tensor<1x8x1x128xf16>, %cos: tensor<1x1x1x128xf16>, %sin: tensor<1x1x1x128xf16>, %pos: tensor<1xi64>) -> tensor<1x8x4096x128xf16> {
  %kc = graph.fusion "vector" (%x, %cos, %sin, %k, %pos) attributes {graph.pattern = "cache-write"} : (tensor<1x8x1x128xf16>, tensor<1x1x1x128xf16>, tensor<1x1x1x128xf16>, tensor<1x8x4096x128xf16>, tensor<1xi64>) -> tensor<1x8x4096x128xf16> {
  ^bb0(%a: tensor<1x8x1x128xf16>, %c: tensor<1x1x1x128xf16>, %s: tensor<1x1x1x128xf16>, %kk: tensor<1x8x4096x128xf16>, %p: tensor<1xi64>):
    %r = graph.rotary_embedding %a, %c, %s {interleaved = 0 : i64} : (tensor<1x8x1x128xf16>, tensor<1x1x1x128xf16>, tensor<1x1x1x128xf16>) -> tensor<1x8x1x128xf16> loc("rotary_k")
    %w = graph.kv_cache_write %kk, %r, %p : (tensor<1x8x4096x128xf16>, tensor<1x8x1x128xf16>, tensor<1xi64>) -> tensor<1x8x4096x128xf16> loc("k_write")
    graph.yield %w : tensor<1x8x4096x128xf16>
  } loc(fused["rotary_k", "k_write"])
  func.return %kc : tensor<1x8x4096x128xf16>
}

// -----

// q's rotation and K's rotation into the cache (graph-fuse's cache-write with the layer's q):
// one kv_cache kernel, q's boxes (over two blocks) to its output first, then K's boxes to the
// cache at the position.
// CHECK-LABEL: ascend.kernel @k0_rotary_q(
// CHECK-SAME:    %rq: memref<1x4x1x64xf16, "gm">, %kc: memref<1x2x16x64xf16, "gm">) attributes {block_dim = 2 : i64, core_type = "vector", template = "kv_cache"
// CHECK:         %[[Q:.*]] = memref.collapse_shape %q
// CHECK-NEXT:    %[[RQ:.*]] = memref.collapse_shape %rq
// CHECK:         %[[AT:.*]] = arith.muli %block, %c2
// CHECK-NEXT:    %[[QBOX:.*]] = memref.subview %[[Q]][%[[AT]], 0, 0] [2, 1, 64]
// CHECK:         ascend.vmuls
// CHECK:         ascend.vadd
// CHECK:         %[[QOUT:.*]] = memref.subview %[[RQ]][%[[AT]], 0, 0] [2, 1, 64]
// CHECK-NEXT:    ascend.copy %row_ub, %[[QOUT]]
// CHECK:         %[[P:.*]] = memref.load %pos
// CHECK-NEXT:    %[[ROW:.*]] = arith.index_cast %[[P]]
// CHECK:         ascend.vadd
// CHECK:         memref.subview %{{.*}}[0, %[[ROW]], 0] [2, 1, 64]
// CHECK-LABEL: func.func @rotated_q_and_k(
// CHECK:         ascend.launch @k0_rotary_q on %stream(%q, %cos, %sin, %x, %k, %pos, %rq, %kc)
// CHECK-NEXT:    func.return
func.func @rotated_q_and_k(%k: tensor<1x2x16x64xf16>, %q: tensor<1x4x1x64xf16>, %x: tensor<1x2x1x64xf16>, %cos: tensor<1x1x1x64xf16>, %sin: tensor<1x1x1x64xf16>, %pos: tensor<1xi64>) -> (tensor<1x2x16x64xf16>, tensor<1x4x1x64xf16>) {
  %rq, %kc = graph.fusion "vector" (%q, %cos, %sin, %x, %k, %pos) attributes {graph.pattern = "cache-write"} : (tensor<1x4x1x64xf16>, tensor<1x1x1x64xf16>, tensor<1x1x1x64xf16>, tensor<1x2x1x64xf16>, tensor<1x2x16x64xf16>, tensor<1xi64>) -> (tensor<1x4x1x64xf16>, tensor<1x2x16x64xf16>) {
  ^bb0(%q_1: tensor<1x4x1x64xf16>, %cos_1: tensor<1x1x1x64xf16>, %sin_1: tensor<1x1x1x64xf16>, %x_1: tensor<1x2x1x64xf16>, %k_1: tensor<1x2x16x64xf16>, %pos_1: tensor<1xi64>):
    %rq_1 = graph.rotary_embedding %q_1, %cos_1, %sin_1 {interleaved = 0 : i64} : (tensor<1x4x1x64xf16>, tensor<1x1x1x64xf16>, tensor<1x1x1x64xf16>) -> tensor<1x4x1x64xf16> loc("rotary_q")
    %r = graph.rotary_embedding %x_1, %cos_1, %sin_1 {interleaved = 0 : i64} : (tensor<1x2x1x64xf16>, tensor<1x1x1x64xf16>, tensor<1x1x1x64xf16>) -> tensor<1x2x1x64xf16> loc("rotary_k")
    %kc_1 = graph.kv_cache_write %k_1, %r, %pos_1 : (tensor<1x2x16x64xf16>, tensor<1x2x1x64xf16>, tensor<1xi64>) -> tensor<1x2x16x64xf16> loc("k_write")
    graph.yield %rq_1, %kc_1 : tensor<1x4x1x64xf16>, tensor<1x2x16x64xf16>
  } loc(fused["rotary_q", "rotary_k", "k_write"])
  func.return %kc, %rq : tensor<1x2x16x64xf16>, tensor<1x4x1x64xf16>
}
