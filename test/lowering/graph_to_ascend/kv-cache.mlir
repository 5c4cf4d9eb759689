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
