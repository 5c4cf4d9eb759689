// ascend-check-memory proves a plan safe or names what is wrong: two buffers live at the
// same time that share bytes (counting concurrent streams), a buffer outside its space, an
// `inplace` mark that is not legal.
// RUN: not geir-opt %s --split-input-file -p ascend-check-memory 2>&1 | filecheck %s

!t = memref<16x64xf32, "gm">
ascend.kernel @one(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}

// A safe plan passes unchanged.
// CHECK-LABEL: func.func @safe(
// CHECK:         %b = ascend.alloc {offset = 4096 : i64}
func.func @safe(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}, %ws: memref<8192xi8, "gm"> {ascend.workspace}) {
  %s = ascend.stream 0
  %a = ascend.alloc {offset = 0 : i64} : !t
  %b = ascend.alloc {offset = 4096 : i64} : !t
  %c = ascend.alloc {offset = 0 : i64} : !t
  ascend.launch @one on %s(%x, %a) : (!t, !t)
  ascend.launch @one on %s(%a, %b) : (!t, !t)
  ascend.launch @one on %s(%b, %c) : (!t, !t)
  ascend.launch @one on %s(%c, %y) : (!t, !t)
  func.return
}

// -----

!t = memref<16x64xf32, "gm">
ascend.kernel @one(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}

// CHECK: error: gm buffers %a at "relu1" and %b at "relu2" are live at the same time (launches 0..1 and launches 1..2) and share bytes [2048, 4096) of the workspace
func.func @overlap(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}, %ws: memref<8192xi8, "gm"> {ascend.workspace}) {
  %s = ascend.stream 0
  %a = ascend.alloc {offset = 0 : i64} : !t loc("relu1")
  %b = ascend.alloc {offset = 2048 : i64} : !t loc("relu2")
  ascend.launch @one on %s(%x, %a) : (!t, !t)
  ascend.launch @one on %s(%a, %b) : (!t, !t)
  ascend.launch @one on %s(%b, %y) : (!t, !t)
  func.return
}

// -----

!t = memref<16x64xf32, "gm">
ascend.kernel @one(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}

// Launch 1 (stream 1, last user of %a) and launch 2 (stream 0, first user of %c) are not
// ordered by any event: %c may not reuse %a's bytes.
// CHECK: error: gm buffers %a and %c are live at the same time (launches 0..1 on streams 0, 1 and launches 2..3 on stream 0) and share bytes [0, 4096) of the workspace
func.func @streams(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}, %ws: memref<12288xi8, "gm"> {ascend.workspace}) {
  %s0 = ascend.stream 0
  %s1 = ascend.stream 1
  %e = ascend.event 0
  %a = ascend.alloc {offset = 0 : i64} : !t
  %b = ascend.alloc {offset = 4096 : i64} : !t
  %c = ascend.alloc {offset = 0 : i64} : !t
  ascend.launch @one on %s0(%x, %a) : (!t, !t)
  ascend.event_record %e on %s0
  ascend.event_wait %e on %s1
  ascend.launch @one on %s1(%a, %b) : (!t, !t)
  ascend.launch @one on %s0(%x, %c) : (!t, !t)
  ascend.launch @one on %s0(%c, %y) : (!t, !t)
  func.return
}

// -----

!t = memref<16x64xf32, "gm">
ascend.kernel @one(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}

// CHECK: error: gm buffer %b at [8192, 12288) lies outside the 8192-byte workspace
func.func @outside(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}, %ws: memref<8192xi8, "gm"> {ascend.workspace}) {
  %s = ascend.stream 0
  %b = ascend.alloc {offset = 8192 : i64} : !t
  ascend.launch @one on %s(%x, %b) : (!t, !t)
  ascend.launch @one on %s(%b, %y) : (!t, !t)
  func.return
}

// -----

!t = memref<16x64xf32, "gm">
!u = memref<16x64xf32, "ub">
ascend.kernel @relu(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector", template = "eltwise"} {
  %b = ascend.alloc {offset = 0 : i64} : !u
  ascend.copy %x, %b : !t to !u
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  ascend.vrelu %b, %b : !u
  ascend.set_flag V -> MTE3 id 0
  ascend.wait_flag V -> MTE3 id 0
  ascend.copy %b, %y : !u to !t
  ascend.return
}
ascend.kernel @two(%x: !t, %y: !t, %z: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}

// In place is legal only where the input dies: %a is read again by launch 2.
// CHECK: error: gm buffers %a and %b are live at the same time (launches 0..2 and launches 1..2) and share bytes [0, 4096) of the workspace
func.func @bad_inplace(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}, %ws: memref<4096xi8, "gm"> {ascend.workspace}) {
  %s = ascend.stream 0
  %a = ascend.alloc {offset = 0 : i64} : !t
  %b = ascend.alloc {offset = 0 : i64, inplace} : !t
  ascend.launch @relu on %s(%x, %a) : (!t, !t)
  ascend.launch @relu on %s(%a, %b) : (!t, !t)
  ascend.launch @two on %s(%a, %b, %y) : (!t, !t, !t)
  func.return
}

// -----

!g = memref<64x64xf32, "gm">
!u = memref<64x64xf32, "ub">

// CHECK: error: kernel 'unordered': ub buffers %a and %b are live at the same time and overlap at [0, 16384)
ascend.kernel @unordered(%x: !g, %y: !g) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc {offset = 0 : i64} : !u
  %b = ascend.alloc {offset = 0 : i64} : !u
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

!g = memref<64x64xf32, "gm">
!u = memref<64x64xf32, "ub">

// CHECK: error: kernel 'too_far' needs 208 KiB of ub, the device has 192 KiB (212992 > 196608 bytes on ascend910b)
ascend.kernel @too_far(%x: !g) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc {offset = 196608 : i64} : !u
  ascend.copy %x, %a : !g to !u
  ascend.return
}
