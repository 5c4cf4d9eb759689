// ascend-plan-memory on the workspace: exact offsets (512-byte aligned) and lifetimes for
// small host programs on one stream. Every !t buffer is 4096 bytes.
// RUN: geir-opt %s --split-input-file -p ascend-plan-memory | filecheck %s
// RUN: geir-opt %s --split-input-file -p ascend-plan-memory,ascend-plan-memory | filecheck %s
// RUN: geir-opt %s --split-input-file -p ascend-plan-memory,ascend-check-memory | filecheck %s
// RUN: geir-opt %s --split-input-file -p 'ascend-plan-memory{reuse=false}' | filecheck %s --check-prefix=NOREUSE

!t = memref<16x64xf32, "gm">
!u = memref<16x64xf32, "ub">

// The on-chip buffer of the kernel gets its offset too.
// CHECK:       ascend.kernel @copy
// CHECK-NEXT:    %b = ascend.alloc {offset = 0 : i64} : memref<16x64xf32, "ub">
ascend.kernel @copy(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector", template = "data"} {
  %b = ascend.alloc : !u
  ascend.copy %x, %b : !t to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %b, %y : !u to !t
  ascend.return
}

// A straight line: each buffer dies at the launch after its producer, so two slots
// alternate. `live` is [first launch, last launch] in host program order.
// CHECK-LABEL: func.func @straight(
// CHECK-SAME:    %workspace: memref<8192xi8, "gm"> {ascend.workspace})
// CHECK-SAME:    attributes {ascend.workspace_size = 8192 : i64, ascend.memory_plan = {strategy = "best", lower_bound = 8192 : i64, no_reuse = 12288 : i64}}
// CHECK:         %a = ascend.alloc {offset = 0 : i64, live = array<i64: 0, 1>}
// CHECK:         %b = ascend.alloc {offset = 4096 : i64, live = array<i64: 1, 2>}
// CHECK:         %c = ascend.alloc {offset = 0 : i64, live = array<i64: 2, 3>}
// Without reuse: one after the other, in program order (the workspace argument is added).
// NOREUSE-LABEL: func.func @straight(
// NOREUSE-SAME:    %workspace: memref<12288xi8, "gm"> {ascend.workspace})
// NOREUSE-SAME:    ascend.memory_plan = {strategy = "none", lower_bound = 8192 : i64, no_reuse = 12288 : i64}
// NOREUSE:         %a = ascend.alloc {offset = 0 : i64, live = array<i64: 0, 1>}
// NOREUSE:         %b = ascend.alloc {offset = 4096 : i64, live = array<i64: 1, 2>}
// NOREUSE:         %c = ascend.alloc {offset = 8192 : i64, live = array<i64: 2, 3>}
func.func @straight(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}) {
  %s = ascend.stream 0
  %a = ascend.alloc : !t
  ascend.launch @copy on %s(%x, %a) : (!t, !t)
  %b = ascend.alloc : !t
  ascend.launch @copy on %s(%a, %b) : (!t, !t)
  %c = ascend.alloc : !t
  ascend.launch @copy on %s(%b, %c) : (!t, !t)
  ascend.launch @copy on %s(%c, %y) : (!t, !t)
  func.return
}

// -----

!t = memref<16x64xf32, "gm">
ascend.kernel @one(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
ascend.kernel @two(%x: !t, %y: !t, %z: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}

// A diamond: %a feeds two branches, so %a, %b and %c are live together at launch 2 (the
// lower bound, 3 x 4096); %d takes %a's bytes once both branches have read it. The old
// sequential offsets are replaced.
// CHECK-LABEL: func.func @diamond(
// CHECK-SAME:    %ws: memref<12288xi8, "gm"> {ascend.workspace})
// CHECK-SAME:    ascend.memory_plan = {strategy = "best", lower_bound = 12288 : i64, no_reuse = 16384 : i64}
// CHECK:         %a = ascend.alloc {offset = 0 : i64, live = array<i64: 0, 2>}
// CHECK:         %b = ascend.alloc {offset = 4096 : i64, live = array<i64: 1, 3>}
// CHECK:         %c = ascend.alloc {offset = 8192 : i64, live = array<i64: 2, 3>}
// CHECK:         %d = ascend.alloc {offset = 0 : i64, live = array<i64: 3, 4>}
func.func @diamond(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}, %ws: memref<16384xi8, "gm"> {ascend.workspace}) {
  %s = ascend.stream 0
  %a = ascend.alloc {offset = 0 : i64} : !t
  ascend.launch @one on %s(%x, %a) : (!t, !t)
  %b = ascend.alloc {offset = 4096 : i64} : !t
  ascend.launch @one on %s(%a, %b) : (!t, !t)
  %c = ascend.alloc {offset = 8192 : i64} : !t
  ascend.launch @one on %s(%a, %c) : (!t, !t)
  %d = ascend.alloc {offset = 12288 : i64} : !t
  ascend.launch @two on %s(%b, %c, %d) : (!t, !t, !t)
  ascend.launch @one on %s(%d, %y) : (!t, !t)
  func.return
}

// -----

!t = memref<16x64xf32, "gm">
!c = memref<48x64xf32, "gm">
ascend.kernel @one(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
ascend.kernel @cat(%a: !t, %b: !t, %c: !t, %y: !c) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
ascend.kernel @head(%x: !c, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}

// A concat of three branches: its 12288-byte output is live with all three inputs, the peak
// (24576). The 4096-byte result after it fits in the bytes the branches left.
// CHECK-LABEL: func.func @concat(
// CHECK-SAME:    ascend.memory_plan = {strategy = "best", lower_bound = 24576 : i64, no_reuse = 28672 : i64}
// CHECK:         %a = ascend.alloc {offset = 0 : i64, live = array<i64: 0, 3>}
// CHECK:         %b = ascend.alloc {offset = 4096 : i64, live = array<i64: 1, 3>}
// CHECK:         %c = ascend.alloc {offset = 8192 : i64, live = array<i64: 2, 3>}
// CHECK:         %cat = ascend.alloc {offset = 12288 : i64, live = array<i64: 3, 4>}
// CHECK:         %h = ascend.alloc {offset = 0 : i64, live = array<i64: 4, 5>}
func.func @concat(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}) {
  %s = ascend.stream 0
  %a = ascend.alloc : !t
  ascend.launch @one on %s(%x, %a) : (!t, !t)
  %b = ascend.alloc : !t
  ascend.launch @one on %s(%x, %b) : (!t, !t)
  %c = ascend.alloc : !t
  ascend.launch @one on %s(%x, %c) : (!t, !t)
  %cat = ascend.alloc : !c
  ascend.launch @cat on %s(%a, %b, %c, %cat) : (!t, !t, !t, !c)
  %h = ascend.alloc : !t
  ascend.launch @head on %s(%cat, %h) : (!c, !t)
  ascend.launch @one on %s(%h, %y) : (!t, !t)
  func.return
}

// -----

!t = memref<16x64xf32, "gm">
!h = memref<16x64xf16, "gm">
!u = memref<16x64xf32, "ub">

// Elementwise kernels (template "eltwise"/"row": tiles read each element before writing it).
ascend.kernel @relu(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector", template = "eltwise"} {
  %b = ascend.alloc : !u
  ascend.copy %x, %b : !t to !u
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  ascend.vrelu %b, %b : !u
  ascend.set_flag V -> MTE3 id 0
  ascend.wait_flag V -> MTE3 id 0
  ascend.copy %b, %y : !u to !t
  ascend.return
}
ascend.kernel @add(%x: !t, %y: !t, %z: !t) attributes {block_dim = 1 : i64, core_type = "vector", template = "row"} {
  %a = ascend.alloc : !u
  %b = ascend.alloc : !u
  ascend.copy %x, %a : !t to !u
  ascend.copy %y, %b : !t to !u
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  ascend.vadd %a, %b, %a : !u
  ascend.set_flag V -> MTE3 id 0
  ascend.wait_flag V -> MTE3 id 0
  ascend.copy %a, %z : !u to !t
  ascend.return
}
// Not elementwise: a kernel without an elementwise template.
ascend.kernel @shuffle(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector", template = "data"} {
  ascend.return
}

// In place: a chain of elementwise kernels, each input dying at its kernel, runs in one
// buffer; the buffers written over an input are marked `inplace`.
// CHECK-LABEL: func.func @inplace_chain(
// CHECK-SAME:    ascend.memory_plan = {strategy = "best", lower_bound = 4096 : i64, no_reuse = 12288 : i64}
// CHECK:         %a = ascend.alloc {offset = 0 : i64, live = array<i64: 0, 1>}
// CHECK:         %b = ascend.alloc {offset = 0 : i64, live = array<i64: 1, 2>, inplace}
// CHECK:         %c = ascend.alloc {offset = 0 : i64, live = array<i64: 2, 3>, inplace}
func.func @inplace_chain(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}) {
  %s = ascend.stream 0
  %a = ascend.alloc : !t
  ascend.launch @relu on %s(%x, %a) : (!t, !t)
  %b = ascend.alloc : !t
  ascend.launch @relu on %s(%a, %b) : (!t, !t)
  %c = ascend.alloc : !t
  ascend.launch @relu on %s(%b, %c) : (!t, !t)
  ascend.launch @shuffle on %s(%c, %y) : (!t, !t)
  func.return
}

// -----

!t = memref<16x64xf32, "gm">
!u = memref<16x64xf32, "ub">
ascend.kernel @relu(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector", template = "eltwise"} {
  %b = ascend.alloc : !u
  ascend.copy %x, %b : !t to !u
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  ascend.vrelu %b, %b : !u
  ascend.set_flag V -> MTE3 id 0
  ascend.wait_flag V -> MTE3 id 0
  ascend.copy %b, %y : !u to !t
  ascend.return
}
ascend.kernel @add(%x: !t, %y: !t, %z: !t) attributes {block_dim = 1 : i64, core_type = "vector", template = "row"} {
  %a = ascend.alloc : !u
  %b = ascend.alloc : !u
  ascend.copy %x, %a : !t to !u
  ascend.copy %y, %b : !t to !u
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  ascend.vadd %a, %b, %a : !u
  ascend.set_flag V -> MTE3 id 0
  ascend.wait_flag V -> MTE3 id 0
  ascend.copy %a, %z : !u to !t
  ascend.return
}
ascend.kernel @shuffle(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector", template = "data"} {
  ascend.return
}

// Not in place: %b's input %a is read again later (it does not die at launch 1), and the
// non-elementwise @shuffle may read any element after writing others. %c = %a + %b takes
// %a's bytes (both inputs die at launch 2; the first one is chosen).
// CHECK-LABEL: func.func @not_inplace(
// CHECK:         %a = ascend.alloc {offset = 0 : i64, live = array<i64: 0, 2>}
// CHECK:         %b = ascend.alloc {offset = 4096 : i64, live = array<i64: 1, 2>}
// CHECK:         %c = ascend.alloc {offset = 0 : i64, live = array<i64: 2, 3>, inplace}
// CHECK:         %d = ascend.alloc {offset = 4096 : i64, live = array<i64: 3, 4>}
// CHECK-NOT:     inplace
func.func @not_inplace(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}) {
  %s = ascend.stream 0
  %a = ascend.alloc : !t
  ascend.launch @relu on %s(%x, %a) : (!t, !t)
  %b = ascend.alloc : !t
  ascend.launch @relu on %s(%a, %b) : (!t, !t)
  %c = ascend.alloc : !t
  ascend.launch @add on %s(%a, %b, %c) : (!t, !t, !t)
  %d = ascend.alloc : !t
  ascend.launch @shuffle on %s(%c, %d) : (!t, !t)
  ascend.launch @relu on %s(%d, %y) : (!t, !t)
  func.return
}

// -----

!t = memref<16x64xf32, "gm">
ascend.kernel @one(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}

// Kept apart: %a is marked exclusive and %r is used by the host (returned), so both live
// for the whole program and share bytes with nothing - without them the chain would need
// two slots (8192 bytes), with them four. %b and %d alternate with %c.
// CHECK-LABEL: func.func @apart(
// CHECK-SAME:    ascend.memory_plan = {strategy = "best", lower_bound = 16384 : i64, no_reuse = 20480 : i64}
// CHECK:         %a = ascend.alloc {offset = 0 : i64, exclusive, live = array<i64: 0, 4>}
// CHECK:         %b = ascend.alloc {offset = 8192 : i64, live = array<i64: 1, 2>}
// CHECK:         %c = ascend.alloc {offset = 12288 : i64, live = array<i64: 2, 3>}
// CHECK:         %d = ascend.alloc {offset = 8192 : i64, live = array<i64: 3, 4>}
// CHECK:         %r = ascend.alloc {offset = 4096 : i64, live = array<i64: 0, 4>}
func.func @apart(%x: !t {onnx.name = "x"}) -> !t {
  %s = ascend.stream 0
  %a = ascend.alloc {exclusive} : !t
  ascend.launch @one on %s(%x, %a) : (!t, !t)
  %b = ascend.alloc : !t
  ascend.launch @one on %s(%a, %b) : (!t, !t)
  %c = ascend.alloc : !t
  ascend.launch @one on %s(%b, %c) : (!t, !t)
  %d = ascend.alloc : !t
  ascend.launch @one on %s(%c, %d) : (!t, !t)
  %r = ascend.alloc : !t
  ascend.launch @one on %s(%d, %r) : (!t, !t)
  func.return %r : !t
}

// -----

!t = memref<16x64xf32, "gm">
ascend.kernel @one(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
ascend.kernel @send(%x: !t) attributes {block_dim = 1 : i64, core_type = "hccl"} {
  ascend.send %x {peer = 1 : i64} : !t
  ascend.return
}

// A pipeline stage: what a send reads may still be in flight when the next micro-batch's run
// starts, so %a lives for the whole program (launches 0-4) and shares bytes with nothing,
// though its last use is the send (launch 1): %c cannot take its place, as it would
// without the send (8192 bytes).
// CHECK-LABEL: func.func @sent(
// CHECK-SAME:    ascend.memory_plan = {strategy = "best", lower_bound = 12288 : i64, no_reuse = 12288 : i64}
// CHECK:         %a = ascend.alloc {offset = 0 : i64, live = array<i64: 0, 4>}
// CHECK:         %b = ascend.alloc {offset = 4096 : i64, live = array<i64: 2, 3>}
// CHECK:         %c = ascend.alloc {offset = 8192 : i64, live = array<i64: 3, 4>}
func.func @sent(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}) {
  %s = ascend.stream 0
  %h = ascend.stream 1
  %a = ascend.alloc : !t
  ascend.launch @one on %s(%x, %a) : (!t, !t)
  %e = ascend.event 0
  ascend.event_record %e on %s
  ascend.event_wait %e on %h
  ascend.launch @send on %h(%a) : (!t)
  %b = ascend.alloc : !t
  ascend.launch @one on %s(%x, %b) : (!t, !t)
  %c = ascend.alloc : !t
  ascend.launch @one on %s(%b, %c) : (!t, !t)
  ascend.launch @one on %s(%c, %y) : (!t, !t)
  func.return
}
