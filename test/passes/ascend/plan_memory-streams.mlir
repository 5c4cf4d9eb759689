// ascend-plan-memory with two streams: a buffer lives until every user on every stream is
// done, as the events order them. Every !t buffer is 4096 bytes.
// RUN: geir-opt %s --split-input-file -p ascend-plan-memory,ascend-check-memory | filecheck %s

!t = memref<16x64xf32, "gm">
ascend.kernel @one(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
ascend.kernel @two(%x: !t, %y: !t, %z: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}

// %a's last user (launch 1) runs on stream 1, concurrently with launch 2 on stream 0, so
// %c may not take %a's bytes although launch 1 comes first in host order (on one stream it
// would: the lower bound there is 8192). %d starts after the join (event 1): %a and %c are
// done, and it reuses %a's bytes.
// CHECK-LABEL: func.func @fork_join(
// CHECK-SAME:    ascend.memory_plan = {strategy = "best", lower_bound = 12288 : i64, no_reuse = 16384 : i64}
// CHECK:         %a = ascend.alloc {offset = 0 : i64, live = array<i64: 0, 1>}
// CHECK:         %b = ascend.alloc {offset = 4096 : i64, live = array<i64: 1, 3>}
// CHECK:         %c = ascend.alloc {offset = 8192 : i64, live = array<i64: 2, 3>}
// CHECK:         %d = ascend.alloc {offset = 0 : i64, live = array<i64: 3, 4>}
func.func @fork_join(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}) {
  %s0 = ascend.stream 0
  %s1 = ascend.stream 1
  %e0 = ascend.event 0
  %e1 = ascend.event 1
  %a = ascend.alloc : !t
  %b = ascend.alloc : !t
  %c = ascend.alloc : !t
  %d = ascend.alloc : !t
  ascend.launch @one on %s0(%x, %a) : (!t, !t)
  ascend.event_record %e0 on %s0
  ascend.event_wait %e0 on %s1
  ascend.launch @one on %s1(%a, %b) : (!t, !t)
  ascend.launch @one on %s0(%x, %c) : (!t, !t)
  ascend.event_record %e1 on %s1
  ascend.event_wait %e1 on %s0
  ascend.launch @two on %s0(%b, %c, %d) : (!t, !t, !t)
  ascend.launch @one on %s0(%d, %y) : (!t, !t)
  func.return
}

// -----

!t = memref<16x64xf32, "gm">
ascend.kernel @one(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}

// Two independent chains on two streams with no event between them: every buffer of one
// stream conflicts with every buffer of the other, while each chain alternates two slots
// of its own (4 x 4096; no launch has all four live, so the lower bound comes from the
// clique %a, %b, %p, %r). An event makes stream 1 wait for all of stream 0 before %q, so %q
// may then reuse the bytes of stream 0's dead buffers.
// CHECK-LABEL: func.func @parallel(
// CHECK-SAME:    ascend.memory_plan = {strategy = "best", lower_bound = 16384 : i64, no_reuse = 24576 : i64}
// CHECK:         %a = ascend.alloc {offset = 0 : i64, live = array<i64: 0, 2>}
// CHECK:         %b = ascend.alloc {offset = 8192 : i64, live = array<i64: 2, 4>}
// CHECK:         %c = ascend.alloc {offset = 0 : i64, live = array<i64: 4, 6>}
// CHECK:         %p = ascend.alloc {offset = 4096 : i64, live = array<i64: 1, 3>}
// CHECK:         %q = ascend.alloc {offset = 0 : i64, live = array<i64: 7, 8>}
// CHECK:         %r = ascend.alloc {offset = 12288 : i64, live = array<i64: 3, 5>}
func.func @parallel(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}, %z: !t {onnx.name = "z", ascend.output}) {
  %s0 = ascend.stream 0
  %s1 = ascend.stream 1
  %e = ascend.event 0
  %a = ascend.alloc : !t
  %b = ascend.alloc : !t
  %c = ascend.alloc : !t
  %p = ascend.alloc : !t
  %q = ascend.alloc : !t
  %r = ascend.alloc : !t
  ascend.launch @one on %s0(%x, %a) : (!t, !t)
  ascend.launch @one on %s1(%x, %p) : (!t, !t)
  ascend.launch @one on %s0(%a, %b) : (!t, !t)
  ascend.launch @one on %s1(%p, %r) : (!t, !t)
  ascend.launch @one on %s0(%b, %c) : (!t, !t)
  ascend.launch @one on %s1(%r, %z) : (!t, !t)
  ascend.launch @one on %s0(%c, %y) : (!t, !t)
  ascend.event_record %e on %s0
  ascend.event_wait %e on %s1
  ascend.launch @one on %s1(%x, %q) : (!t, !t)
  ascend.launch @one on %s1(%q, %z) : (!t, !t)
  func.return
}
