// convert-graph-to-ascend: graph.attention is one `mix` kernel (lowering/templates/attention.py),
// the FlashAttention idea. Per (batch, head, query tile) on a block: Q goes to l0a once, then the
// key tiles run as a five-stage software pipeline (`scf.for %i` over pairs of iterations after a
// static fill; iteration i runs, oldest tile first: the O update of tile i-4, P V of tile i-3,
// the softmax of tile i-2, the scores of tile i-1, the K load of tile i). Every hand-off buffer
// has two slots (the tile's parity) with a flag id each: S = Q K^T on the cube (K^T by MTE1's
// transposing load), FIX stages S in the block's scratch slot `s_ws` (the 910B has no l0c -> ub
// path), the vector unit scales it, adds the causal band on the diagonal tile and runs the
// online softmax, P goes back through `p_ws` into l1 / l0a for P V on the cube, whose f32 tile
// comes through `pv_ws` to rescale and accumulate O in ub; finally O / l, cast to f16, stored.
// No barrier between items: credit flags (id 7) hand Q's buffers, O and the statistics on, so
// the next item's loads overlap this one's last tiles. No [S, L] buffer.
// RUN: geir-opt %s -p 'convert-graph-to-ascend' | filecheck %s
// RUN: geir-opt %s -p 'convert-graph-to-ascend' | filecheck %s --check-prefix=NOSCORES

// NOSCORES-NOT: 256x256

// CHECK-LABEL: ascend.kernel @k0_attn(
// Two scratch slots per block (16 blocks x 2 x 32 rows).
// CHECK-SAME:    %s_ws: memref<1024x32xf32, "gm">, %p_ws: memref<1024x32xf16, "gm">, %pv_ws: memref<1024x64xf32, "gm">)
// CHECK-SAME:    attributes {block_dim = 16 : i64, core_type = "mix", geir.scratch = 3 : i64, template = "attention"}
// CHECK:         %k1s0 = ascend.alloc {{.*}} : memref<32x64xf16, "l1">
// CHECK-NEXT:    %k1s1 = ascend.alloc {{.*}} : memref<32x64xf16, "l1">
// CHECK:         %[[Q0:q0]] = ascend.alloc {{.*}} : memref<32x64xf16, "l0a">
// CHECK:         %kt0s0 = ascend.alloc {{.*}} : memref<64x32xf16, "l0b">
// CHECK-NEXT:    %kt0s1 = ascend.alloc {{.*}} : memref<64x32xf16, "l0b">
// CHECK:         %scs0 = ascend.alloc {{.*}} : memref<32x32xf32, "l0c">
// CHECK-NEXT:    %scs1 = ascend.alloc {{.*}} : memref<32x32xf32, "l0c">
// Each of the block's two vector cores holds its 16 of an item's 32 rows in its own ub.
// CHECK:         %ss0 = ascend.alloc {{.*}} : memref<16x32xf32, "ub">
// CHECK-NEXT:    %ss1 = ascend.alloc {{.*}} : memref<16x32xf32, "ub">
// CHECK:         %[[DM:dm]] = ascend.alloc {{.*}} : memref<16x32xf32, "ub">
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[M16:.*]] = arith.constant -1.600000e+01 : f32
// The free flags of every slot are set once, before the work items: the AIC's own, its credits
// to each of the block's two vector cores (P's scratch slot read: MTE3 may write it again),
// then on each core (`ascend.sub_block`) the core's own and its credits to the AIC (S's and
// P V's scratch slots read), and the core's c - r tile of the band, in its own ub.
// CHECK:         ascend.set_flag MTE1 -> MTE2 id 0
// CHECK:         ascend.set_flag MTE1 -> MTE2 id 1
// CHECK:         ascend.set_flag MTE1 -> MTE2 id 7
// CHECK-NEXT:    ascend.set_flag M -> MTE1 id 7
// CHECK-NEXT:    ascend.set_flag MTE2 -> MTE3 id 0
// CHECK-NEXT:    ascend.set_flag MTE2 -> MTE3 id 0
// CHECK:         ascend.sub_block 0 {
// CHECK:           ascend.set_flag MTE3 -> V id 7
// CHECK:           ascend.set_flag MTE2 -> FIX id 0
// CHECK:           memref.store %{{.*}}, %[[DM]][%c0, %c0]
// CHECK:         ascend.sub_block 1 {
// CHECK:           ascend.set_flag MTE2 -> FIX id 0
// CHECK:           memref.store %{{.*}}, %[[DM]][%c0, %c0]
// CHECK:         scf.for
// Q into l1 once the previous item's copy to l0a is done, into l0a once its mmads are; each
// core's 16 of the item's 32 rows of O and of the statistics reset once its result is stored.
// CHECK:           ascend.wait_flag MTE1 -> MTE2 id 7
// CHECK:           ascend.copy %{{.*}}, %q1 :
// CHECK:           ascend.wait_flag M -> MTE1 id 7
// CHECK-NEXT:      ascend.copy %q1, %[[Q0]] : memref<32x64xf16, "l1"> to memref<32x64xf16, "l0a">
// CHECK-NEXT:      ascend.set_flag MTE1 -> MTE2 id 7
// CHECK:           ascend.sub_block 0 {
// CHECK-NEXT:        ascend.wait_flag MTE3 -> V id 7
// CHECK:             ascend.vdup {{.*}}, %m : f32, memref<16x8xf32, "ub">
// CHECK:           ascend.sub_block 1 {
// CHECK-NEXT:        ascend.wait_flag MTE3 -> V id 7
// The fill: tile 0's K load, then its scores while tile 1's K loads. FIX writes S into the
// scratch once both cores have read the slot, and tells each.
// CHECK:           scf.if
// CHECK-NEXT:        ascend.wait_flag MTE1 -> MTE2 id 0
// CHECK:             ascend.copy %{{.*}}, %k1s0
// CHECK:           ascend.mmad %[[Q0]], %kt0s0, %scs0 {init}
// CHECK:             ascend.wait_flag MTE2 -> FIX id 0
// CHECK-NEXT:        ascend.wait_flag MTE2 -> FIX id 0
// CHECK-NEXT:        ascend.copy %scs0, %{{.*}} : memref<32x32xf32, "l0c"> to memref<32x32xf32, strided<[32, 1], offset: ?>, "gm">
// CHECK-NEXT:        ascend.set_flag FIX -> M id 0
// CHECK-NEXT:        ascend.set_flag FIX -> MTE2 id 0
// CHECK-NEXT:        ascend.set_flag FIX -> MTE2 id 0
// CHECK:           scf.for %i = %c4 to %{{.*}} step %c2 {
// Stage 4, tile i-4 (slot 0), on each core: its rows of P V from the scratch, O = O * alpha + P V.
// CHECK:             scf.if
// CHECK-NEXT:          ascend.sub_block 0 {
// CHECK:                 ascend.wait_flag FIX -> MTE2 id 2
// CHECK:                 ascend.copy %{{.*}}, %[[PV:.*]] : memref<16x64xf32, strided<[64, 1], offset: ?>, "gm"> to memref<16x64xf32, "ub">
// CHECK:                 ascend.vbrcb %{{.*}}, %[[T:.*]] :
// CHECK-NEXT:            ascend.wait_flag MTE2 -> V id 5
// CHECK-NEXT:            ascend.vmul %[[O:.*]], %[[T]], %[[O]]
// CHECK-NEXT:            ascend.vadd %[[O]], %[[PV]], %[[O]]
// CHECK:               ascend.sub_block 1 {
// CHECK:                 ascend.wait_flag FIX -> MTE2 id 2
// CHECK:                 ascend.vadd
// Stage 3, tile i-3 (slot 1): once both cores have written their rows of P, P into l1 / l0a,
// V into l0b, P V on the cube, FIX to the scratch.
// CHECK:             scf.if
// CHECK-NEXT:          ascend.wait_flag MTE3 -> MTE2 id 3
// CHECK-NEXT:          ascend.wait_flag MTE3 -> MTE2 id 3
// CHECK:               ascend.copy %{{.*}}, %p1s1
// CHECK-NEXT:          ascend.set_flag MTE2 -> MTE3 id 1
// CHECK-NEXT:          ascend.set_flag MTE2 -> MTE3 id 1
// CHECK:               ascend.copy %p1s1, %p0s1
// CHECK:               ascend.copy %v1s1, %v0s1
// CHECK:               ascend.mmad %p0s1, %v0s1, %pvcs1 {init}
// CHECK:               ascend.copy %pvcs1, %{{.*}} : memref<32x64xf32, "l0c"> to memref<32x64xf32, strided<[64, 1], offset: ?>, "gm">
// Stage 2, tile i-2 (slot 0): V into l1 (the AIC's MTE2); on each core its rows of S into ub,
// the band on the diagonal tile (core 1's rows are 16 further on: c - r - 16), the softmax.
// CHECK:             scf.if
// CHECK:               ascend.copy %{{.*}}, %v1s0
// CHECK:               ascend.sub_block 0 {
// CHECK:                 ascend.copy %{{.*}}, %[[S:.*]] : memref<16x32xf32, strided<[32, 1], offset: ?>, "gm"> to memref<16x32xf32, "ub">
// CHECK:                 ascend.vmuls %[[S]]
// CHECK:                 scf.if
// CHECK-NEXT:              ascend.vadds %[[DM]], %[[ZERO]], %{{.*}} :
// CHECK-NEXT:              ascend.vmins
// CHECK-NEXT:              ascend.vmaxs
// CHECK-NEXT:              ascend.vmuls
// CHECK-NEXT:              ascend.vadd
// CHECK-NEXT:            }
// CHECK-NEXT:            ascend.vmaxs
// CHECK:                 ascend.vreduce %[[S]], %{{.*}} {kind = "max"}
// CHECK-NEXT:            ascend.vmax
// CHECK-NEXT:            ascend.vsub
// CHECK-NEXT:            ascend.vexp
// CHECK-NEXT:            ascend.vcopy
// CHECK-NEXT:            ascend.vbrcb
// CHECK-NEXT:            ascend.vsub
// CHECK-NEXT:            ascend.vexp
// CHECK-NEXT:            ascend.vreduce %{{.*}} {kind = "sum"}
// CHECK-NEXT:            ascend.vmul
// CHECK-NEXT:            ascend.vadd
// CHECK:                 ascend.wait_flag MTE3 -> V id 0
// CHECK-NEXT:            ascend.vcast %[[S]], %{{.*}} : memref<16x32xf32, "ub">, memref<16x32xf16, strided<[64, 1]>, "ub">
// CHECK:                 ascend.copy %{{.*}} : memref<16x32xf16, strided<[64, 1]>, "ub"> to memref<16x32xf16, strided<[32, 1], offset: ?>, "gm">
// CHECK-NEXT:            ascend.set_flag MTE3 -> V id 0
// CHECK-NEXT:            ascend.set_flag MTE3 -> MTE2 id 2
// CHECK:               ascend.sub_block 1 {
// CHECK:                 scf.if
// CHECK-NEXT:              ascend.vadds %[[DM]], %[[M16]], %{{.*}} :
// CHECK:                 ascend.set_flag MTE3 -> MTE2 id 2
// Stage 1, tile i-1 (slot 1): the scores.
// CHECK:             scf.if
// CHECK:               ascend.copy %k1s1, %kt0s1 {transpose} : memref<32x64xf16, "l1"> to memref<64x32xf16, "l0b">
// CHECK:               ascend.mmad %[[Q0]], %kt0s1, %scs1 {init}
// Stage 0, tile i (slot 0): the K load.
// CHECK:             scf.if
// CHECK:               ascend.copy %{{.*}}, %k1s0
// The second iteration of the pair, slots swapped.
// CHECK:             ascend.mmad %p0s0, %v0s0, %pvcs0 {init}
// CHECK:           }
// out = O / l, cast to f16 and stored, each core its 16 rows (core 1's 16 rows further on).
// CHECK:           ascend.sub_block 0 {
// CHECK:             ascend.vdiv %o_1, %t, %o_1 : memref<16x64xf32, "ub">
// CHECK-NEXT:        ascend.wait_flag MTE3 -> V id 0
// CHECK-NEXT:        ascend.vcast %o_1, %pes0
// CHECK:             ascend.copy %pes0, %{{.*}} : memref<16x64xf16, "ub"> to memref<16x64xf16, strided<[64, 1], offset: ?>, "gm">
// CHECK-NEXT:        ascend.set_flag MTE3 -> V id 0
// CHECK-NEXT:        ascend.set_flag MTE3 -> V id 7
// CHECK-NEXT:      }
// CHECK-NEXT:      ascend.sub_block 1 {
// CHECK-NEXT:        arith.addi %{{.*}}, %c16
// CHECK:             ascend.set_flag MTE3 -> V id 7
// CHECK-NEXT:      }
// CHECK-NEXT:      ascend.set_flag M -> MTE1 id 7
// CHECK-NOT:       ascend.pipe_barrier
// The credits waited for at the end: the AIC's, each core's to the AIC, then each core's own.
// CHECK:         ascend.wait_flag MTE1 -> MTE2 id 0
// CHECK:         ascend.wait_flag MTE2 -> FIX id 0
// CHECK-NEXT:    ascend.wait_flag MTE2 -> FIX id 0
// CHECK:         ascend.sub_block 1 {
// CHECK:           ascend.wait_flag MTE3 -> V id 7
// CHECK:         ascend.return
// CHECK:       func.func @main(
// CHECK:         ascend.launch @k0_attn
func.func @main(%q: tensor<1x2x256x64xf16> {onnx.name = "q"}, %k: tensor<1x1x256x64xf16> {onnx.name = "k"}, %v: tensor<1x1x256x64xf16> {onnx.name = "v"}) -> (tensor<1x2x256x64xf16> {onnx.name = "o"}) {
  %o = graph.attention %q, %k, %v {scale = 0.125 : f32, causal = 1 : i64} : (tensor<1x2x256x64xf16>, tensor<1x1x256x64xf16>, tensor<1x1x256x64xf16>) -> tensor<1x2x256x64xf16> loc("attn")
  func.return %o : tensor<1x2x256x64xf16>
}
