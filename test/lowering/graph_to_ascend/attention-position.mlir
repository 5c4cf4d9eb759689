// convert-graph-to-ascend, an attention whose mask is a graph.causal_mask at a run-time
// position (a static KV cache's prefill: query i sees cache rows j <= pos + i), fused with it by
// graph-fuse: the kernel reads the position once at its entry and never the [S, L] mask. Per
// work item (query tile q0 .. q0 + 31 here; key tiles of 32) it runs the key tiles any of its
// rows sees, n_run = min((q0 + pos + 32 + 31) / 32, 16), and adds the band - key c of tile j
// masked for row r when c - r > q0 + pos - 32 j, from the block's c - r tile - only on the
// tiles from n_vis = min((q0 + pos + 1) / 32, 16) on, which not every row sees whole.
// RUN: geir-opt %s --split-input-file -p 'graph-fuse,convert-graph-to-ascend' | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_attn(%pos: memref<1xi64, "gm">, %q: memref<1x2x256x64xf16, "gm">
// CHECK-SAME:    template = "attention"
// CHECK-NOT:     memref<1x1x256x512xf16
// CHECK:         %[[RAW:.*]] = memref.load %pos[%c0] : memref<1xi64, "gm">
// CHECK-NEXT:    %[[POS:.*]] = arith.index_cast %[[RAW]] : i64 to index
// CHECK:         scf.for
// CHECK:           %[[FIRST:.*]] = arith.addi %[[Q0:.*]], %[[POS]] : index
// CHECK-NEXT:      %[[A:.*]] = arith.addi %[[FIRST]], %c1 : index
// CHECK-NEXT:      %[[B:.*]] = arith.divui %[[A]], %c32 : index
// CHECK-NEXT:      %[[VIS:.*]] = arith.minui %[[B]], %c16 : index
// CHECK-NEXT:      %[[C:.*]] = arith.addi %[[FIRST]], %c63 : index
// CHECK-NEXT:      %[[D:.*]] = arith.divui %[[C]], %c32 : index
// CHECK-NEXT:      %[[TILES:.*]] = arith.minui %[[D]], %c16 : index
// The first tile's K load runs when any tile does; its band when tile 0 is past n_vis.
// CHECK:           arith.cmpi ult, %c0, %[[TILES]] : index
// CHECK:           %[[BAND0:.*]] = arith.cmpi uge, %c0, %[[VIS]] : index
// CHECK:           ascend.sub_block 0 {
// CHECK:             ascend.vmuls %ss0
// CHECK-NEXT:        scf.if %[[BAND0]] {
// CHECK-NEXT:          %[[NEG:.*]] = arith.subi %c0, %{{.*}} : index
// CHECK-NEXT:          %[[I:.*]] = arith.index_cast %[[NEG]] : index to i64
// CHECK-NEXT:          %[[F:.*]] = arith.sitofp %[[I]] : i64 to f32
// CHECK-NEXT:          ascend.vadds %dm, %[[F]], %[[T:.*]] :
// CHECK-NEXT:          ascend.vmins %[[T]]
// CHECK-NEXT:          ascend.vmaxs %[[T]]
// CHECK-NEXT:          ascend.vmuls %[[T]]
// CHECK-NEXT:          ascend.vadd %ss0, %[[T]], %ss0
// CHECK-NEXT:        }
// The steady-state loop over the rest of the item's tiles: a run-time trip count.
// CHECK:           scf.for %{{.*}} = %c4 to %{{.*}} step %c2 {
func.func @main(%q: tensor<1x2x256x64xf16> {onnx.name = "q"}, %k: tensor<1x2x512x64xf16> {onnx.name = "k"}, %v: tensor<1x2x512x64xf16> {onnx.name = "v"}, %pos: tensor<1xi64> {onnx.name = "pos"}) -> (tensor<1x2x256x64xf16> {onnx.name = "o"}) {
  %fill = graph.constant dense<-6.550400e+04> : tensor<f16>
  %m = graph.causal_mask %pos, %fill {queries = 256 : i64, keys = 512 : i64, offset = 0 : i64} : (tensor<1xi64>, tensor<f16>) -> tensor<1x1x256x512xf16> loc(fused["attn", "mask"])
  %o = graph.attention %q, %k, %v, %m {scale = 0.125 : f32, causal = 0 : i64} : (tensor<1x2x256x64xf16>, tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>, tensor<1x1x256x512xf16>) -> tensor<1x2x256x64xf16> loc("attn")
  func.return %o : tensor<1x2x256x64xf16>
}

// -----

// What the kernel does not take: a negative offset (a row could see no key). The fusion is
// split: the mask runs the reference fallback, and the attention reads it as an operand.
// CHECK-LABEL: ascend.kernel @k0_attn(%pos: memref<1xi64, "gm">, %fill: memref<f16, "gm">, %m: memref<1x1x256x512xf16, "gm">)
// CHECK-SAME:    fallback
// CHECK-NEXT:    ascend.reference "graph.causal_mask"
// CHECK:       ascend.kernel @k1_attn(%q: memref<1x2x256x64xf16, "gm">, %k: memref<1x2x512x64xf16, "gm">, %v: memref<1x2x512x64xf16, "gm">, %m: memref<1x1x256x512xf16, "gm">
func.func @main(%q: tensor<1x2x256x64xf16> {onnx.name = "q"}, %k: tensor<1x2x512x64xf16> {onnx.name = "k"}, %v: tensor<1x2x512x64xf16> {onnx.name = "v"}, %pos: tensor<1xi64> {onnx.name = "pos"}) -> (tensor<1x2x256x64xf16> {onnx.name = "o"}) {
  %fill = graph.constant dense<-6.550400e+04> : tensor<f16>
  %m = graph.causal_mask %pos, %fill {queries = 256 : i64, keys = 512 : i64, offset = -1 : i64} : (tensor<1xi64>, tensor<f16>) -> tensor<1x1x256x512xf16> loc(fused["attn", "mask"])
  %o = graph.attention %q, %k, %v, %m {scale = 0.125 : f32, causal = 0 : i64} : (tensor<1x2x256x64xf16>, tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>, tensor<1x1x256x512xf16>) -> tensor<1x2x256x64xf16> loc("attn")
  func.return %o : tensor<1x2x256x64xf16>
}
