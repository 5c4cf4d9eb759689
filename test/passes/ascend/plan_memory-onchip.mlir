// On-chip plans: inside each kernel, the buffers of each space get offsets from their
// lifetimes in the kernel (spans of top-level ops; a loop is one op), aligned to 32 bytes
// in ub/l1 and 512 in l0a/l0b/l0c. Buffers with disjoint spans share bytes only when flags
// order the pipes of the first before the pipes of the second.
// RUN: geir-opt %s --split-input-file -p ascend-plan-memory,ascend-check-memory | filecheck %s

!g = memref<64x256xf32, "gm">
!u = memref<64x256xf32, "ub">
!gv = memref<96x256xf32, "gm">
!v = memref<96x256xf32, "ub">

// Two phases. The first double-buffers 64 KiB tiles (%ping and %pong are separate allocs,
// live for the whole loop, so they never share); after the loop the top-level waits order
// MTE3 (the last reader of both) before MTE2, and MTE2 before V, so the 96 KiB %big of the
// second phase reuses their bytes: 128 KiB in all, where 224 KiB would not fit the 192 KiB
// of ub. The lowering's offsets (here sequential) are replaced.
// CHECK-LABEL: ascend.kernel @phases(
// CHECK:         %ping = ascend.alloc {offset = 0 : i64} : memref<64x256xf32, "ub">
// CHECK-NEXT:    %pong = ascend.alloc {offset = 65536 : i64} : memref<64x256xf32, "ub">
// CHECK-NEXT:    %big = ascend.alloc {offset = 0 : i64} : memref<96x256xf32, "ub">
ascend.kernel @phases(%x: !g, %y: !g, %z: !gv, %w: !gv) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %ping = ascend.alloc {offset = 0 : i64} : !u
  %pong = ascend.alloc {offset = 65536 : i64} : !u
  %big = ascend.alloc {offset = 131072 : i64} : !v
  ascend.set_flag MTE3 -> MTE2 id 0
  ascend.set_flag MTE3 -> MTE2 id 1
  scf.for %i = %c0 to %c2 step %c1 {
    ascend.wait_flag MTE3 -> MTE2 id 0
    ascend.copy %x, %ping : !g to !u
    ascend.set_flag MTE2 -> V id 0
    ascend.wait_flag MTE2 -> V id 0
    ascend.vrelu %ping, %ping : !u
    ascend.set_flag V -> MTE3 id 0
    ascend.wait_flag V -> MTE3 id 0
    ascend.copy %ping, %y : !u to !g
    ascend.set_flag MTE3 -> MTE2 id 0
    ascend.wait_flag MTE3 -> MTE2 id 1
    ascend.copy %x, %pong : !g to !u
    ascend.set_flag MTE2 -> V id 1
    ascend.wait_flag MTE2 -> V id 1
    ascend.vrelu %pong, %pong : !u
    ascend.set_flag V -> MTE3 id 1
    ascend.wait_flag V -> MTE3 id 1
    ascend.copy %pong, %y : !u to !g
    ascend.set_flag MTE3 -> MTE2 id 1
  }
  ascend.wait_flag MTE3 -> MTE2 id 0
  ascend.wait_flag MTE3 -> MTE2 id 1
  ascend.copy %z, %big : !gv to !v
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  ascend.vexp %big, %big : !v
  ascend.set_flag V -> MTE3 id 0
  ascend.wait_flag V -> MTE3 id 0
  ascend.copy %big, %w : !v to !gv
  ascend.return
}

// -----

!g = memref<64x64xf32, "gm">
!u = memref<64x64xf32, "ub">

// Two transfers through ub, one after the other (the lowering's data kernels): the flags
// order %a's copy-in (MTE2) before its copy-out (MTE3), and MTE3 before the next copy-in, so
// %b takes %a's bytes.
// CHECK-LABEL: ascend.kernel @ordered(
// CHECK:         %a = ascend.alloc {offset = 0 : i64}
// CHECK-NEXT:    %b = ascend.alloc {offset = 0 : i64}
ascend.kernel @ordered(%x: !g, %y: !g) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc : !u
  %b = ascend.alloc : !u
  ascend.copy %x, %a : !g to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %a, %y : !u to !g
  ascend.set_flag MTE3 -> MTE2 id 0
  ascend.wait_flag MTE3 -> MTE2 id 0
  ascend.copy %x, %b : !g to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %b, %y : !u to !g
  ascend.return
}

// No flag between the transfers: %b's copy (MTE2) could start while MTE3 still reads %a,
// so %b gets its own bytes although %a's span has ended.
// CHECK-LABEL: ascend.kernel @unordered(
// CHECK:         %a = ascend.alloc {offset = 0 : i64}
// CHECK-NEXT:    %b = ascend.alloc {offset = 16384 : i64}
ascend.kernel @unordered(%x: !g, %y: !g) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc : !u
  %b = ascend.alloc : !u
  ascend.copy %x, %a : !g to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %a, %y : !u to !g
  ascend.copy %x, %b : !g to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %b, %y : !u to !g
  ascend.return
}

// -----

!a = memref<32x32xf16, "gm">
!c = memref<32x32xf32, "gm">

// A cube kernel: l1 buffers pack at 32-byte alignment, l0 buffers at 512 (every l0 buffer
// is whole 512-byte fractals); each space is planned on its own from offset 0.
// CHECK-LABEL: ascend.kernel @cube(
// CHECK:         %a1 = ascend.alloc {offset = 0 : i64} : memref<32x32xf16, "l1">
// CHECK-NEXT:    %b1 = ascend.alloc {offset = 2048 : i64} : memref<32x32xf16, "l1">
// CHECK-NEXT:    %a0 = ascend.alloc {offset = 0 : i64} : memref<32x32xf16, "l0a">
// CHECK-NEXT:    %b0 = ascend.alloc {offset = 0 : i64} : memref<32x32xf16, "l0b">
// CHECK-NEXT:    %c0 = ascend.alloc {offset = 0 : i64} : memref<32x32xf32, "l0c">
ascend.kernel @cube(%a: !a, %b: !a, %c: !c) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a1 = ascend.alloc : memref<32x32xf16, "l1">
  %b1 = ascend.alloc : memref<32x32xf16, "l1">
  %a0 = ascend.alloc : memref<32x32xf16, "l0a">
  %b0 = ascend.alloc : memref<32x32xf16, "l0b">
  %c0 = ascend.alloc : memref<32x32xf32, "l0c">
  ascend.copy %a, %a1 : !a to memref<32x32xf16, "l1">
  ascend.copy %b, %b1 : !a to memref<32x32xf16, "l1">
  ascend.set_flag MTE2 -> MTE1 id 0
  ascend.wait_flag MTE2 -> MTE1 id 0
  ascend.copy %a1, %a0 : memref<32x32xf16, "l1"> to memref<32x32xf16, "l0a">
  ascend.copy %b1, %b0 : memref<32x32xf16, "l1"> to memref<32x32xf16, "l0b">
  ascend.set_flag MTE1 -> M id 0
  ascend.wait_flag MTE1 -> M id 0
  ascend.mmad %a0, %b0, %c0 {init} : memref<32x32xf16, "l0a">, memref<32x32xf16, "l0b">, memref<32x32xf32, "l0c">
  ascend.set_flag M -> FIX id 0
  ascend.wait_flag M -> FIX id 0
  ascend.copy %c0, %c : memref<32x32xf32, "l0c"> to !c
  ascend.return
}
