// A kernel whose buffers cannot fit its space is an error naming the kernel, the space,
// the bytes the best plan needs and the bytes the device has.
// RUN: not geir-opt %s --split-input-file -p ascend-plan-memory 2>&1 | filecheck %s
// RUN: not geir-opt %s --split-input-file -p 'ascend-plan-memory{device=ascend310p}' 2>&1 | filecheck %s --check-prefix=P310

!g = memref<70x256xf32, "gm">
!u = memref<70x256xf32, "ub">

// Three 70 KiB buffers live at once (a binary op and its result): 210 KiB > 192 KiB. The
// 310P's ub has 256 KiB, where the kernel fits.
// CHECK: geir-opt: error: kernel 'k3_conv1' needs 210 KiB of ub, the device has 192 KiB (215040 > 196608 bytes on ascend910b; 3 buffers, at least 210 KiB live at once): use smaller tiles
// P310-NOT: error
// P310: ascend.kernel @k3_conv1
ascend.kernel @k3_conv1(%x: !g, %y: !g) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc : !u
  %b = ascend.alloc : !u
  %c = ascend.alloc : !u
  ascend.copy %x, %a : !g to !u
  ascend.copy %y, %b : !g to !u
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  ascend.vadd %a, %b, %c : !u
  ascend.set_flag V -> MTE3 id 0
  ascend.wait_flag V -> MTE3 id 0
  ascend.copy %c, %y : !u to !g
  ascend.return
}

// -----

// The cube side: two 48 KiB l0a buffers used in one loop (so live together) need 96 KiB of
// the 64 KiB l0a.
// CHECK: geir-opt: error: kernel 'big_l0a' needs 96 KiB of l0a, the device has 64 KiB
!a = memref<96x256xf16, "gm">
!l = memref<96x256xf16, "l0a">
ascend.kernel @big_l0a(%x: !a) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %p = ascend.alloc : !l
  %q = ascend.alloc : !l
  %b = ascend.alloc : memref<256x16xf16, "l0b">
  %c = ascend.alloc : memref<96x16xf32, "l0c">
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    ascend.mmad %p, %b, %c {init} : !l, memref<256x16xf16, "l0b">, memref<96x16xf32, "l0c">
    ascend.mmad %q, %b, %c : !l, memref<256x16xf16, "l0b">, memref<96x16xf32, "l0c">
  }
  ascend.return
}

// -----

// The device's memory: two 24 GiB intermediates live together (a 48 GiB workspace), 8 GiB
// of input and 8 GiB of output: 64 GiB plus the weight, more than the 910B's 64 GiB HBM.
// CHECK: geir-opt: error: @main needs 64.0 GiB of device memory (workspace 48.0 GiB, weights and constants 64 bytes, inputs and outputs 16.0 GiB), the ascend910b has 64.0 GiB: compile for a smaller batch or sequence
!big = memref<2147483648xf32, "gm">
!half = memref<6442450944xf32, "gm">
ascend.kernel @k(%x: !big, %w: memref<16xf32, "gm">, %y: !half) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
ascend.kernel @k2(%x: !half, %y: !half, %z: !big) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
func.func @main(%x: !big {onnx.name = "x"}, %z: !big {onnx.name = "z", ascend.output}) {
  %s = ascend.stream 0
  %w = ascend.constant dense<1.0> : tensor<16xf32>
  %a = ascend.alloc : !half
  ascend.launch @k on %s(%x, %w, %a) : (!big, memref<16xf32, "gm">, !half)
  %b = ascend.alloc : !half
  ascend.launch @k on %s(%x, %w, %b) : (!big, memref<16xf32, "gm">, !half)
  ascend.launch @k2 on %s(%a, %b, %z) : (!half, !half, !big)
  func.return
}

// -----

// An output that updates an input in place (a static KV cache) is the input's bytes: a
// 40 GiB cache and its in-place output need 40 GiB, not 80, so the program fits.
// CHECK-LABEL: func.func @cache_step(
// CHECK-NOT:   error
!cache = memref<10737418240xf32, "gm">
ascend.kernel @write(%c: !cache) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
func.func @cache_step(%c: !cache {onnx.name = "past"}, %o: !cache {onnx.name = "present", ascend.output, ascend.updates = 0 : i64}) {
  %s = ascend.stream 0
  ascend.launch @write on %s(%c) : (!cache)
  func.return
}
