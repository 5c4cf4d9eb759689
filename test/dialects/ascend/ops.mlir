// Round trip of every ascend op: custom form, reprinted form and generic form.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

!gm = memref<16x32xf32, "gm">
!ub = memref<16x32xf32, "ub">
!ubh = memref<16x32xf16, "ub">
!ubi = memref<16x32xi32, "ub">
!mask = memref<16x32xi1, "ub">
!ubt = memref<32x16xf32, "ub">
!col = memref<16x8xf32, "ub">
!red = memref<16x1xf32, strided<[8, 1]>, "ub">

// CHECK-LABEL: ascend.kernel @vector_ops(
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector"} {
ascend.kernel @vector_ops(%x: !gm, %y: !gm) attributes {block_dim = 1 : i64, core_type = "vector"} {
  // CHECK-NEXT: %i = ascend.block_idx
  // CHECK-NEXT: %n = ascend.block_num
  // CHECK-NEXT: %a = ascend.alloc : memref<16x32xf32, "ub">
  %i = ascend.block_idx
  %n = ascend.block_num
  %a = ascend.alloc : !ub
  %b = ascend.alloc : !ub
  %c = ascend.alloc : !ub
  %h = ascend.alloc : !ubh
  %k = ascend.alloc : !ubi
  %m = ascend.alloc : !mask
  %t = ascend.alloc : !ubt
  %r = ascend.alloc : !col
  %s = arith.constant 2.000000e+00 : f32
  ascend.copy %x, %a : !gm to !ub
  ascend.copy %y, %b : !gm to !ub
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  // CHECK: ascend.vexp %a, %c : memref<16x32xf32, "ub">
  // CHECK-NEXT: ascend.vlog %a, %c
  // CHECK-NEXT: ascend.vsqrt %a, %c
  // CHECK-NEXT: ascend.vrsqrt %a, %c
  // CHECK-NEXT: ascend.vrec %a, %c
  // CHECK-NEXT: ascend.vabs %a, %c
  // CHECK-NEXT: ascend.vneg %a, %c
  // CHECK-NEXT: ascend.vrelu %a, %c
  // CHECK-NEXT: ascend.vtanh %a, %c
  // CHECK-NEXT: ascend.vsigmoid %a, %c
  // CHECK-NEXT: ascend.verf %a, %c
  // CHECK-NEXT: ascend.vsin %a, %c
  // CHECK-NEXT: ascend.vcos %a, %c
  // CHECK-NEXT: ascend.vfloor %a, %c
  // CHECK-NEXT: ascend.vceil %a, %c
  // CHECK-NEXT: ascend.vround %a, %c
  // CHECK-NEXT: ascend.vsign %a, %c
  // CHECK-NEXT: ascend.vcopy %a, %c
  ascend.vexp %a, %c : !ub
  ascend.vlog %a, %c : !ub
  ascend.vsqrt %a, %c : !ub
  ascend.vrsqrt %a, %c : !ub
  ascend.vrec %a, %c : !ub
  ascend.vabs %a, %c : !ub
  ascend.vneg %a, %c : !ub
  ascend.vrelu %a, %c : !ub
  ascend.vtanh %a, %c : !ub
  ascend.vsigmoid %a, %c : !ub
  ascend.verf %a, %c : !ub
  ascend.vsin %a, %c : !ub
  ascend.vcos %a, %c : !ub
  ascend.vfloor %a, %c : !ub
  ascend.vceil %a, %c : !ub
  ascend.vround %a, %c : !ub
  ascend.vsign %a, %c : !ub
  ascend.vcopy %a, %c : !ub
  // CHECK-NEXT: ascend.vadd %a, %b, %c : memref<16x32xf32, "ub">
  // CHECK-NEXT: ascend.vsub %a, %b, %c
  // CHECK-NEXT: ascend.vmul %a, %b, %c
  // CHECK-NEXT: ascend.vdiv %a, %b, %c
  // CHECK-NEXT: ascend.vmax %a, %b, %c
  // CHECK-NEXT: ascend.vmin %a, %b, %c
  ascend.vadd %a, %b, %c : !ub
  ascend.vsub %a, %b, %c : !ub
  ascend.vmul %a, %b, %c : !ub
  ascend.vdiv %a, %b, %c : !ub
  ascend.vmax %a, %b, %c : !ub
  ascend.vmin %a, %b, %c : !ub
  // CHECK-NEXT: ascend.vadds %a, %s, %c : memref<16x32xf32, "ub">, f32, memref<16x32xf32, "ub">
  // CHECK-NEXT: ascend.vmuls %a, %s, %c
  // CHECK-NEXT: ascend.vmaxs %a, %s, %c
  // CHECK-NEXT: ascend.vmins %a, %s, %c
  // CHECK-NEXT: ascend.vlrelu %a, %s, %c
  // CHECK-NEXT: ascend.vdup %s, %c : f32, memref<16x32xf32, "ub">
  ascend.vadds %a, %s, %c : !ub, f32, !ub
  ascend.vmuls %a, %s, %c : !ub, f32, !ub
  ascend.vmaxs %a, %s, %c : !ub, f32, !ub
  ascend.vmins %a, %s, %c : !ub, f32, !ub
  ascend.vlrelu %a, %s, %c : !ub, f32, !ub
  ascend.vdup %s, %c : f32, !ub
  // CHECK-NEXT: ascend.vcmp %a, %b, %m {mode = "lt"} : memref<16x32xf32, "ub">, memref<16x32xf32, "ub">, memref<16x32xi1, "ub">
  // CHECK-NEXT: ascend.vand %m, %m, %m : memref<16x32xi1, "ub">
  // CHECK-NEXT: ascend.vor %m, %m, %m
  // CHECK-NEXT: ascend.vnot %m, %m
  // CHECK-NEXT: ascend.vselect %m, %a, %b, %c : memref<16x32xi1, "ub">, memref<16x32xf32, "ub">, memref<16x32xf32, "ub">, memref<16x32xf32, "ub">
  ascend.vcmp %a, %b, %m {mode = "lt"} : !ub, !ub, !mask
  ascend.vand %m, %m, %m : !mask
  ascend.vor %m, %m, %m : !mask
  ascend.vnot %m, %m : !mask
  ascend.vselect %m, %a, %b, %c : !mask, !ub, !ub, !ub
  // CHECK-NEXT: ascend.vcast %a, %h : memref<16x32xf32, "ub">, memref<16x32xf16, "ub">
  // CHECK-NEXT: ascend.vcast %a, %k {round = "floor"} : memref<16x32xf32, "ub">, memref<16x32xi32, "ub">
  ascend.vcast %a, %h : !ub, !ubh
  ascend.vcast %a, %k {round = "floor"} : !ub, !ubi
  // CHECK-NEXT: %r1 = memref.subview %r[0, 0] [16, 1] [1, 1]
  // CHECK-NEXT: ascend.vreduce %a, %r1 {kind = "sum", axes = array<i64: 1>} : memref<16x32xf32, "ub">, memref<16x1xf32, strided<[8, 1]>, "ub">
  // CHECK-NEXT: ascend.vreduce %a, %r1 {kind = "max"}
  // CHECK-NEXT: ascend.vbrcb %r1, %c : memref<16x1xf32, strided<[8, 1]>, "ub">, memref<16x32xf32, "ub">
  // CHECK-NEXT: ascend.vtranspose %a, %t : memref<16x32xf32, "ub">, memref<32x16xf32, "ub">
  // CHECK-NEXT: ascend.vtranspose %a, %t {perm = array<i64: 1, 0>}
  %r1 = memref.subview %r[0, 0] [16, 1] [1, 1] : !col to !red
  ascend.vreduce %a, %r1 {kind = "sum", axes = array<i64: 1>} : !ub, !red
  ascend.vreduce %a, %r1 {kind = "max"} : !ub, !red
  ascend.vbrcb %r1, %c : !red, !ub
  ascend.vtranspose %a, %t : !ub, !ubt
  ascend.vtranspose %a, %t {perm = array<i64: 1, 0>} : !ub, !ubt
  // CHECK-NEXT: ascend.pipe_barrier V
  ascend.pipe_barrier V
  ascend.set_flag V -> MTE3 id 7
  ascend.wait_flag V -> MTE3 id 7
  // CHECK: ascend.copy %c, %y : memref<16x32xf32, "ub"> to memref<16x32xf32, "gm">
  ascend.copy %c, %y : !ub to !gm
  // CHECK-NEXT: ascend.return
  ascend.return
}

// CHECK-LABEL: ascend.kernel @cube_ops(
// CHECK-SAME:    attributes {block_dim = 4 : i64, core_type = "cube"} {
ascend.kernel @cube_ops(%a: memref<2x2x16x16xf16, "gm">, %b: memref<32x32xf16, "gm">,
                        %q: memref<32x32xi8, "gm">, %c: memref<32x32xf16, "gm">,
                        %d: memref<2x2x16x16xf32, "gm">) attributes {core_type = "cube", block_dim = 4 : i64} {
  %a1 = ascend.alloc {offset = 0 : i64} : memref<32x32xf16, "l1">
  %b1 = ascend.alloc {offset = 2048 : i64} : memref<32x32xf16, "l1">
  %q1 = ascend.alloc {offset = 4096 : i64} : memref<32x32xi8, "l1">
  %c1 = ascend.alloc {offset = 5120 : i64} : memref<32x32xf32, "l1">
  %a0 = ascend.alloc {offset = 0 : i64} : memref<32x32xf16, "l0a">
  %q0 = ascend.alloc {offset = 2048 : i64} : memref<32x32xi8, "l0a">
  %b0 = ascend.alloc {offset = 0 : i64} : memref<32x32xf16, "l0b">
  %p0 = ascend.alloc {offset = 2048 : i64} : memref<32x32xi8, "l0b">
  %c0 = ascend.alloc {offset = 0 : i64} : memref<32x32xf32, "l0c">
  %i0 = ascend.alloc {offset = 4096 : i64} : memref<32x32xi32, "l0c">
  // CHECK: ascend.copy %a, %a1 {layout = "nz2nd"} : memref<2x2x16x16xf16, "gm"> to memref<32x32xf16, "l1">
  ascend.copy %a, %a1 {layout = "nz2nd"} : memref<2x2x16x16xf16, "gm"> to memref<32x32xf16, "l1">
  ascend.copy %b, %b1 : memref<32x32xf16, "gm"> to memref<32x32xf16, "l1">
  ascend.copy %q, %q1 : memref<32x32xi8, "gm"> to memref<32x32xi8, "l1">
  ascend.set_flag MTE2 -> MTE1 id 0
  ascend.wait_flag MTE2 -> MTE1 id 0
  // CHECK: ascend.copy %a1, %a0 : memref<32x32xf16, "l1"> to memref<32x32xf16, "l0a">
  // CHECK-NEXT: ascend.copy %b1, %b0 {transpose} : memref<32x32xf16, "l1"> to memref<32x32xf16, "l0b">
  ascend.copy %a1, %a0 : memref<32x32xf16, "l1"> to memref<32x32xf16, "l0a">
  ascend.copy %b1, %b0 {transpose} : memref<32x32xf16, "l1"> to memref<32x32xf16, "l0b">
  ascend.copy %q1, %q0 : memref<32x32xi8, "l1"> to memref<32x32xi8, "l0a">
  ascend.copy %q1, %p0 : memref<32x32xi8, "l1"> to memref<32x32xi8, "l0b">
  ascend.set_flag MTE1 -> M id 0
  ascend.wait_flag MTE1 -> M id 0
  // CHECK: ascend.mmad %a0, %b0, %c0 {init}
  // CHECK-NEXT: ascend.mmad %q0, %p0, %i0 {init} : memref<32x32xi8, "l0a">, memref<32x32xi8, "l0b">, memref<32x32xi32, "l0c">
  // CHECK-NEXT: ascend.pipe_barrier M
  ascend.mmad %a0, %b0, %c0 {init} : memref<32x32xf16, "l0a">, memref<32x32xf16, "l0b">, memref<32x32xf32, "l0c">
  ascend.mmad %q0, %p0, %i0 {init} : memref<32x32xi8, "l0a">, memref<32x32xi8, "l0b">, memref<32x32xi32, "l0c">
  ascend.pipe_barrier M
  ascend.set_flag M -> FIX id 0
  ascend.wait_flag M -> FIX id 0
  // CHECK: ascend.copy %c0, %c {relu} : memref<32x32xf32, "l0c"> to memref<32x32xf16, "gm">
  // CHECK-NEXT: ascend.copy %c0, %d {layout = "nd2nz"} : memref<32x32xf32, "l0c"> to memref<2x2x16x16xf32, "gm">
  // CHECK-NEXT: ascend.copy %c0, %c1 : memref<32x32xf32, "l0c"> to memref<32x32xf32, "l1">
  ascend.copy %c0, %c {relu} : memref<32x32xf32, "l0c"> to memref<32x32xf16, "gm">
  ascend.copy %c0, %d {layout = "nd2nz"} : memref<32x32xf32, "l0c"> to memref<2x2x16x16xf32, "gm">
  ascend.copy %c0, %c1 : memref<32x32xf32, "l0c"> to memref<32x32xf32, "l1">
  ascend.pipe_barrier ALL
  ascend.return
}

// CHECK-LABEL: ascend.kernel @mix_ops(
ascend.kernel @mix_ops(%x: !gm) attributes {block_dim = 1 : i64, core_type = "mix"} {
  %l = ascend.alloc : memref<16x32xf32, "l1">
  %u = ascend.alloc : !ub
  ascend.copy %x, %l : !gm to memref<16x32xf32, "l1">
  ascend.copy %x, %u : !gm to !ub
  // CHECK: ascend.set_flag MTE2 -> M id 1
  ascend.set_flag MTE2 -> M id 1
  ascend.wait_flag MTE2 -> M id 1
  ascend.set_flag S -> V id 2
  ascend.wait_flag S -> V id 2
  ascend.return
}

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %ws: memref<2048xi8, "gm"> {ascend.workspace}
func.func @main(%x: !gm {onnx.name = "x"}, %y: !gm {onnx.name = "y", ascend.output}, %ws: memref<2048xi8, "gm"> {ascend.workspace}) {
  // CHECK-NEXT: %w = ascend.constant dense<1.000000e+00> : tensor<16x32xf32>
  // CHECK-NEXT: %v = ascend.constant dense<[1, 2]> : tensor<2xi32>
  // CHECK-NEXT: %tmp = ascend.alloc {offset = 0 : i64} : memref<16x32xf32, "gm">
  // CHECK-NEXT: %rows = ascend.view %tmp[1024] : memref<16x32xf32, "gm"> to memref<8x32xf32, "gm">
  // CHECK-NEXT: %s0 = ascend.stream 0
  // CHECK-NEXT: %s1 = ascend.stream 1
  // CHECK-NEXT: %e = ascend.event 0
  %w = ascend.constant dense<1.000000e+00> : tensor<16x32xf32>
  %v = ascend.constant dense<[1, 2]> : tensor<2xi32>
  %tmp = ascend.alloc {offset = 0 : i64} : !gm
  %rows = ascend.view %tmp[1024] : !gm to memref<8x32xf32, "gm">
  %s0 = ascend.stream 0
  %s1 = ascend.stream 1
  %e = ascend.event 0
  // CHECK-NEXT: ascend.launch @vector_ops on %s0(%x, %tmp) : (memref<16x32xf32, "gm">, memref<16x32xf32, "gm">)
  // CHECK-NEXT: ascend.event_record %e on %s0
  // CHECK-NEXT: ascend.event_wait %e on %s1
  // CHECK-NEXT: ascend.launch @vector_ops on %s1(%tmp, %y)
  // CHECK-NEXT: ascend.launch @mix_ops on %s1(%w) : (memref<16x32xf32, "gm">)
  ascend.launch @vector_ops on %s0(%x, %tmp) : (!gm, !gm)
  ascend.event_record %e on %s0
  ascend.event_wait %e on %s1
  ascend.launch @vector_ops on %s1(%tmp, %y) : (!gm, !gm)
  ascend.launch @mix_ops on %s1(%w) : (!gm)
  func.return
}
