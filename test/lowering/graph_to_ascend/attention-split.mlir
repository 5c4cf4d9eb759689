// convert-graph-to-ascend: flash decoding. A decode step of few heads (5 on 24 cube cores:
// tensor parallel 8 of a 40-head model) over a long cache (8192 rows) splits the keys into
// parts, one work item each (20 blocks), and a second kernel combines the parts' results: the
// chain shares its two buffers (each part's O and log-sum-exp), allocated once and passed to
// both launches, in order on one stream. Items that fill the cores, causal attention and a
// cache too short to pay the second launch (the same 5 heads over 4096 rows) stay one kernel.
// RUN: geir-opt %s --split-input-file -p 'convert-graph-to-ascend' | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_decode_5_heads(
// CHECK-SAME:    %y: memref<1x5x1x128xf16, "gm">, %o_part: memref<5x512xf32, "gm">, %lse_part: memref<5x32xf32, "gm">, %s_ws
// CHECK-SAME:    attributes {block_dim = 20 : i64, core_type = "mix", geir.scratch = 5 : i64, template = "attention"}
// CHECK:         ascend.vlog
// CHECK-LABEL: ascend.kernel @k0_decode_5_heads_combine(
// CHECK-SAME:    %y: memref<1x5x1x128xf16, "gm">, %o_part: memref<5x512xf32, "gm">, %lse_part: memref<5x32xf32, "gm">)
// CHECK-SAME:    attributes {block_dim = 5 : i64, core_type = "vector", geir.scratch = 2 : i64, template = "attention"}
// CHECK-COUNT-4: ascend.vexp
// CHECK-NOT:     ascend.vexp
// CHECK:         ascend.vcast
// CHECK-LABEL: func.func @main(
// CHECK:         %[[O:.*]] = ascend.alloc {{.*}} : memref<5x512xf32, "gm">
// CHECK-NEXT:    %[[LSE:.*]] = ascend.alloc {{.*}} : memref<5x32xf32, "gm">
// CHECK:         ascend.launch @k0_decode_5_heads on %[[S:.*]](%q, %k, %v, %y, %[[O]], %[[LSE]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NEXT:    ascend.launch @k0_decode_5_heads_combine on %[[S]](%q, %k, %v, %y, %[[O]], %[[LSE]])
func.func @main(%q: tensor<1x5x1x128xf16>, %k: tensor<1x5x8192x128xf16>, %v: tensor<1x5x8192x128xf16>) -> tensor<1x5x1x128xf16> {
  %y = graph.attention %q, %k, %v {scale = 0.088388 : f32, causal = 0 : i64} : (tensor<1x5x1x128xf16>, tensor<1x5x8192x128xf16>, tensor<1x5x8192x128xf16>) -> tensor<1x5x1x128xf16> loc("decode_5_heads")
  func.return %y : tensor<1x5x1x128xf16>
}

// -----

// The same 5 heads over 4096 rows: one kernel pays less than the parts and the combine's
// launch. Its key tiles are 128 keys, one DMA each for K and V into l1; the cube takes a tile
// in steps of 64 keys (what l0b holds twice, for K^T and V), each step's scores written to
// its columns of the [16, 128] l0c tile, and FIX writes the tile once.
// CHECK-LABEL: ascend.kernel @k0_decode_4096(
// CHECK-SAME:    attributes {block_dim = 5 : i64, core_type = "mix", geir.scratch = 3 : i64, template = "attention"}
// CHECK:         %k1s0 = ascend.alloc {{.*}} : memref<128x128xf16, "l1">
// CHECK:         %kt0s0 = ascend.alloc {{.*}} : memref<128x64xf16, "l0b">
// CHECK:         %v0s0 = ascend.alloc {{.*}} : memref<64x128xf16, "l0b">
// CHECK:         %scs0 = ascend.alloc {{.*}} : memref<16x128xf32, "l0c">
// CHECK:         ascend.copy %{{.*}}, %k1s0 : memref<128x128xf16, strided<[128, 1], offset: ?>, "gm"> to memref<128x128xf16, "l1">
// CHECK:         memref.subview %k1s0[0, 0] [64, 128]
// CHECK:         ascend.mmad %q0, %kt0s0, %{{.*}} {init} : {{.*}} memref<16x64xf32, strided<[128, 1]>, "l0c">
// CHECK:         memref.subview %k1s0[64, 0] [64, 128]
// CHECK:         ascend.mmad %q0, %kt0s0, %{{.*}} {init} : {{.*}} memref<16x64xf32, strided<[128, 1], offset: 64>, "l0c">
// CHECK:         ascend.copy %scs0, %{{.*}} : memref<16x128xf32, "l0c"> to memref<1x128xf32
// CHECK-NOT:   _combine
func.func @main(%q: tensor<1x5x1x128xf16>, %k: tensor<1x5x4096x128xf16>, %v: tensor<1x5x4096x128xf16>) -> tensor<1x5x1x128xf16> {
  %y = graph.attention %q, %k, %v {scale = 0.088388 : f32, causal = 0 : i64} : (tensor<1x5x1x128xf16>, tensor<1x5x4096x128xf16>, tensor<1x5x4096x128xf16>) -> tensor<1x5x1x128xf16> loc("decode_4096")
  func.return %y : tensor<1x5x1x128xf16>
}

// -----

// 24 heads fill the cores: one kernel.
// CHECK-LABEL: ascend.kernel @k0_decode_24_heads(
// CHECK-SAME:    attributes {block_dim = 24 : i64, core_type = "mix", geir.scratch = 3 : i64, template = "attention"}
// CHECK-NOT:   _combine
func.func @main(%q: tensor<1x24x1x128xf16>, %k: tensor<1x24x4096x128xf16>, %v: tensor<1x24x4096x128xf16>) -> tensor<1x24x1x128xf16> {
  %y = graph.attention %q, %k, %v {scale = 0.088388 : f32, causal = 0 : i64} : (tensor<1x24x1x128xf16>, tensor<1x24x4096x128xf16>, tensor<1x24x4096x128xf16>) -> tensor<1x24x1x128xf16> loc("decode_24_heads")
  func.return %y : tensor<1x24x1x128xf16>
}

// -----

// Causal over two query rows: not split (a part would need each query's band). One query
// row sees every key, causal or not, so a causal decode step of one row may split.
// CHECK-LABEL: ascend.kernel @k0_causal_5_heads(
// CHECK-SAME:    attributes {block_dim = 5 : i64, core_type = "mix", geir.scratch = 3 : i64, template = "attention"}
// CHECK-NOT:   _combine
func.func @main(%q: tensor<1x5x2x128xf16>, %k: tensor<1x5x4096x128xf16>, %v: tensor<1x5x4096x128xf16>) -> tensor<1x5x2x128xf16> {
  %y = graph.attention %q, %k, %v {scale = 0.088388 : f32, causal = 1 : i64} : (tensor<1x5x2x128xf16>, tensor<1x5x4096x128xf16>, tensor<1x5x4096x128xf16>) -> tensor<1x5x2x128xf16> loc("causal_5_heads")
  func.return %y : tensor<1x5x2x128xf16>
}

// -----

// CHECK-LABEL: ascend.kernel @k0_causal_one_row(
// CHECK-SAME:    attributes {block_dim = 20 : i64, core_type = "mix", geir.scratch = 5 : i64, template = "attention"}
// CHECK-LABEL: ascend.kernel @k0_causal_one_row_combine(
func.func @main(%q: tensor<1x5x1x128xf16>, %k: tensor<1x5x8192x128xf16>, %v: tensor<1x5x8192x128xf16>) -> tensor<1x5x1x128xf16> {
  %y = graph.attention %q, %k, %v {scale = 0.088388 : f32, causal = 1 : i64} : (tensor<1x5x1x128xf16>, tensor<1x5x8192x128xf16>, tensor<1x5x8192x128xf16>) -> tensor<1x5x1x128xf16> loc("causal_one_row")
  func.return %y : tensor<1x5x1x128xf16>
}

// -----

// 256 keys: a part's saving is less than the second launch costs.
// CHECK-LABEL: ascend.kernel @k0_short_cache(
// CHECK-SAME:    attributes {block_dim = 5 : i64, core_type = "mix", geir.scratch = 3 : i64, template = "attention"}
// CHECK-NOT:   _combine
func.func @main(%q: tensor<1x5x1x128xf16>, %k: tensor<1x5x256x128xf16>, %v: tensor<1x5x256x128xf16>) -> tensor<1x5x1x128xf16> {
  %y = graph.attention %q, %k, %v {scale = 0.088388 : f32, causal = 0 : i64} : (tensor<1x5x1x128xf16>, tensor<1x5x256x128xf16>, tensor<1x5x256x128xf16>) -> tensor<1x5x1x128xf16> loc("short_cache")
  func.return %y : tensor<1x5x1x128xf16>
}

// -----

// Dv = 20: a part's f32 results would not start on a 32-byte block of the combine's rows.
// CHECK-LABEL: ascend.kernel @k0_odd_head_dim(
// CHECK-SAME:    attributes {block_dim = 5 : i64, core_type = "mix", geir.scratch = 3 : i64, template = "attention"}
// CHECK-NOT:   _combine
func.func @main(%q: tensor<1x5x1x20xf16>, %k: tensor<1x5x8192x20xf16>, %v: tensor<1x5x8192x20xf16>) -> tensor<1x5x1x20xf16> {
  %y = graph.attention %q, %k, %v {scale = 0.2236 : f32, causal = 0 : i64} : (tensor<1x5x1x20xf16>, tensor<1x5x8192x20xf16>, tensor<1x5x8192x20xf16>) -> tensor<1x5x1x20xf16> loc("odd_head_dim")
  func.return %y : tensor<1x5x1x20xf16>
}
