// convert-graph-to-ascend: graph.attention is one `mix` kernel (lowering/templates/attention.py),
// the FlashAttention idea. Per (batch, head, query tile) on a block: Q goes to l0a once, the
// loop over key tiles (`scf.for %j`, two tiles an iteration on the l1 slots 0 / 1, each
// prefetching the next) computes S = Q K^T on the cube (K^T by MTE1's transposing load), FIX
// stages S in the block's scratch tile `s_ws` (the 910B has no l0c -> ub path), the vector unit
// scales it and runs the online softmax (row max, alpha = exp(m - m'), P = exp(S - m'), row sum),
// P goes back through `p_ws` into l1 / l0a for P V on the cube, whose f32 tile comes through
// `pv_ws` to rescale and accumulate O in ub; finally O / l, cast to f16, stored. Causal: the
// diagonal tile after the loop adds the band built from the `c - r` tile. No [S, L] buffer.
// RUN: geir-opt %s -p 'convert-graph-to-ascend' | filecheck %s
// RUN: geir-opt %s -p 'convert-graph-to-ascend' | filecheck %s --check-prefix=NOSCORES

// NOSCORES-NOT: 256x256

// CHECK-LABEL: ascend.kernel @k0_attn(
// CHECK-SAME:    %s_ws: memref<512x32xf32, "gm">, %p_ws: memref<512x32xf16, "gm">, %pv_ws: memref<512x64xf32, "gm">)
// CHECK-SAME:    attributes {block_dim = 16 : i64, core_type = "mix", geir.scratch = 3 : i64, template = "attention"}
// CHECK:         %[[Q0:.*]] = ascend.alloc {{.*}} : memref<32x64xf16, "l0a">
// CHECK:         %[[KT:.*]] = ascend.alloc {{.*}} : memref<64x32xf16, "l0b">
// CHECK:         %[[SC:.*]] = ascend.alloc {{.*}} : memref<32x32xf32, "l0c">
// CHECK:         %[[DM:dm]] = ascend.alloc {{.*}} : memref<32x32xf32, "ub">
// CHECK:         scf.for
// CHECK:           ascend.copy %{{.*}}, %[[Q0]] : memref<32x64xf16, "l1"> to memref<32x64xf16, "l0a">
// CHECK:           scf.for %j = %c0 to %{{.*}} step %c2 {
// CHECK:             scf.if
// CHECK:               ascend.wait_flag MTE1 -> MTE2 id 1
// CHECK:               ascend.set_flag MTE2 -> MTE1 id 1
// CHECK:             ascend.wait_flag MTE2 -> MTE1 id 0
// CHECK-NEXT:        ascend.copy %k1s0, %[[KT]] {transpose} : memref<32x64xf16, "l1"> to memref<64x32xf16, "l0b">
// CHECK:             ascend.mmad %[[Q0]], %[[KT]], %[[SC]] {init}
// CHECK:             ascend.copy %[[SC]], %{{.*}} : memref<32x32xf32, "l0c"> to memref<32x32xf32, strided<[32, 1], offset: ?>, "gm">
// CHECK:             ascend.vmuls
// CHECK:             ascend.vreduce %{{.*}} {kind = "max"}
// CHECK-NEXT:        ascend.vmax
// CHECK-NEXT:        ascend.vsub
// CHECK-NEXT:        ascend.vexp
// CHECK-NEXT:        ascend.vcopy
// CHECK-NEXT:        ascend.vbrcb
// CHECK-NEXT:        ascend.vsub
// CHECK-NEXT:        ascend.vexp
// CHECK-NEXT:        ascend.vreduce %{{.*}} {kind = "sum"}
// CHECK-NEXT:        ascend.vmul
// CHECK-NEXT:        ascend.vadd
// CHECK:             ascend.vcast %{{.*}} : memref<32x32xf32, strided<[64, 1]>, "ub">, memref<32x32xf16, strided<[64, 1]>, "ub">
// CHECK:             ascend.copy %{{.*}} : memref<32x32xf16, strided<[64, 1]>, "ub"> to memref<32x32xf16, strided<[32, 1], offset: ?>, "gm">
// CHECK:             ascend.copy %{{.*}}, %p1 : memref<32x32xf16, strided<[32, 1], offset: ?>, "gm"> to memref<32x32xf16, "l1">
// CHECK:             ascend.copy %p1, %p0
// CHECK-NEXT:        ascend.copy %v1s0, %v0
// CHECK-NEXT:        ascend.set_flag MTE1 -> MTE2 id 0
// CHECK:             ascend.mmad %p0, %v0, %pvc {init}
// CHECK:             ascend.copy %pvc, %{{.*}} : memref<32x64xf32, "l0c"> to memref<32x64xf32, strided<[64, 1], offset: ?>, "gm">
// CHECK:             ascend.vbrcb %{{.*}}, %s
// CHECK-NEXT:        ascend.vmul %o_1, %s, %o_1
// CHECK-NEXT:        ascend.vadd %o_1, %t, %o_1
// The second tile of the iteration, on slot 1.
// CHECK:             ascend.copy %k1s1, %[[KT]] {transpose}
// The diagonal tile after the loop: the causal band from the c - r tile.
// CHECK:           scf.if
// CHECK:             ascend.copy %k1s3, %[[KT]] {transpose}
// CHECK:             ascend.vadds %[[DM]], {{.*}}
// CHECK-NEXT:        ascend.vmins
// CHECK-NEXT:        ascend.vmaxs
// CHECK-NEXT:        ascend.vmuls
// CHECK-NEXT:        ascend.vadd
// CHECK-NEXT:        ascend.vmaxs
// CHECK:           ascend.vdiv %o_1, %s, %o_1
// CHECK-NEXT:      ascend.vcast %o_1, %pe
// CHECK:           ascend.copy %pe, %{{.*}} : memref<32x64xf16, "ub"> to memref<32x64xf16, strided<[64, 1], offset: ?>, "gm">
// CHECK:         ascend.return
// CHECK:       func.func @main(
// CHECK:         ascend.launch @k0_attn
func.func @main(%q: tensor<1x2x256x64xf16> {onnx.name = "q"}, %k: tensor<1x1x256x64xf16> {onnx.name = "k"}, %v: tensor<1x1x256x64xf16> {onnx.name = "v"}) -> (tensor<1x2x256x64xf16> {onnx.name = "o"}) {
  %o = graph.attention %q, %k, %v {scale = 0.125 : f32, causal = 1 : i64} : (tensor<1x2x256x64xf16>, tensor<1x1x256x64xf16>, tensor<1x1x256x64xf16>) -> tensor<1x2x256x64xf16> loc("attn")
  func.return %o : tensor<1x2x256x64xf16>
}
