// Inception-style: four towers of different depths from one input, joined by a concat.
// RUN: geir-opt %s -p 'ascend-assign-streams,ascend-insert-events' | filecheck %s
// RUN: geir-opt %s -p 'ascend-assign-streams{max-streams=2},ascend-insert-events' | filecheck %s --check-prefix=TWO
// RUN: geir-opt %s -p 'ascend-assign-streams{max-streams=1},ascend-insert-events' | filecheck %s --check-prefix=ONE

!t = memref<16x16xf32, "gm">
!u = memref<16x16xf32, "ub">

// y = relu(x): reads its first argument, writes the second (copied into).
ascend.kernel @un(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
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

// z = x + y
ascend.kernel @bin(%x: !t, %y: !t, %z: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc {offset = 0 : i64} : !u
  %b = ascend.alloc {offset = 1024 : i64} : !u
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

// out = a + b + c + d (a concat stand-in: reads four buffers, writes one)
ascend.kernel @cat4(%a: !t, %b: !t, %c: !t, %d: !t, %z: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc {offset = 0 : i64} : !u
  %v = ascend.alloc {offset = 1024 : i64} : !u
  ascend.copy %a, %u : !t to !u
  ascend.copy %b, %v : !t to !u
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  ascend.vadd %u, %v, %u : !u
  ascend.set_flag V -> MTE2 id 0
  ascend.wait_flag V -> MTE2 id 0
  ascend.copy %c, %v : !t to !u
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  ascend.vadd %u, %v, %u : !u
  ascend.set_flag V -> MTE2 id 0
  ascend.wait_flag V -> MTE2 id 0
  ascend.copy %d, %v : !t to !u
  ascend.set_flag MTE2 -> V id 0
  ascend.wait_flag MTE2 -> V id 0
  ascend.vadd %u, %v, %u : !u
  ascend.set_flag V -> MTE3 id 0
  ascend.wait_flag V -> MTE3 id 0
  ascend.copy %u, %z : !u to !t
  ascend.return
}

// Tower 3 (three kernels) is the critical path: it keeps the input's stream 0 and the concat
// follows it. Towers 1, 2 and 4 open streams 1-3; tower 2's second kernel continues its stream.
// The input records one event, which the three other streams wait for; the concat waits for
// the last kernel of each other tower.
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %stream = ascend.stream 0
// CHECK-NEXT:    %stream1 = ascend.stream 1
// CHECK-NEXT:    %stream2 = ascend.stream 2
// CHECK-NEXT:    %stream3 = ascend.stream 3
// CHECK-NEXT:    %event0 = ascend.event 0
// CHECK-NEXT:    %event1 = ascend.event 1
// CHECK-NEXT:    %event2 = ascend.event 2
// CHECK-NEXT:    %event3 = ascend.event 3
// CHECK-NOT:     ascend.event 4
// CHECK:         ascend.launch @un on %stream(%x, %in)
// CHECK-NEXT:    ascend.event_record %event0 on %stream
// CHECK-NEXT:    ascend.event_wait %event0 on %stream1
// CHECK-NEXT:    ascend.launch @un on %stream1(%in, %p1)
// CHECK-NEXT:    ascend.event_record %event1 on %stream1
// CHECK-NEXT:    ascend.event_wait %event0 on %stream2
// CHECK-NEXT:    ascend.launch @un on %stream2(%in, %q1)
// CHECK-NEXT:    ascend.launch @un on %stream2(%q1, %p2)
// CHECK-NEXT:    ascend.event_record %event2 on %stream2
// CHECK-NEXT:    ascend.launch @un on %stream(%in, %r1)
// CHECK-NEXT:    ascend.launch @un on %stream(%r1, %r2)
// CHECK-NEXT:    ascend.launch @un on %stream(%r2, %p3)
// CHECK-NEXT:    ascend.event_wait %event0 on %stream3
// CHECK-NEXT:    ascend.launch @un on %stream3(%in, %p4)
// CHECK-NEXT:    ascend.event_record %event3 on %stream3
// CHECK-NEXT:    ascend.event_wait %event1 on %stream
// CHECK-NEXT:    ascend.event_wait %event2 on %stream
// CHECK-NEXT:    ascend.event_wait %event3 on %stream
// CHECK-NEXT:    ascend.launch @cat4 on %stream(%p1, %p2, %p3, %p4, %y)
// CHECK-NEXT:    func.return

// With two streams the towers share them: each kernel that cannot continue its producer's
// stream joins the stream where it can start first.
// TWO-LABEL: func.func @main(
// TWO-NEXT:    %stream = ascend.stream 0
// TWO-NEXT:    %stream1 = ascend.stream 1
// TWO-NOT:     ascend.stream 2
// TWO:         ascend.launch @un on %stream(%x, %in)
// TWO:         ascend.launch @un on %stream1(%in, %p1)
// TWO:         ascend.launch @un on %stream(%in, %q1)
// TWO-NEXT:    ascend.launch @un on %stream(%q1, %p2)
// TWO:         ascend.launch @un on %stream1(%in, %r1)
// TWO-NEXT:    ascend.launch @un on %stream1(%r1, %r2)
// TWO-NEXT:    ascend.launch @un on %stream1(%r2, %p3)
// TWO:         ascend.launch @un on %stream(%in, %p4)
// TWO:         ascend.launch @cat4 on %stream1(%p1, %p2, %p3, %p4, %y)

// One stream: program order, no events.
// ONE-LABEL: func.func @main(
// ONE-NEXT:    %stream = ascend.stream 0
// ONE-NOT:     ascend.stream 1
// ONE-NOT:     ascend.event
// ONE:         ascend.launch @cat4 on %stream(
func.func @main(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output},
                %ws: memref<10240xi8, "gm"> {ascend.workspace}) {
  %stream = ascend.stream 0
  %in = ascend.alloc {offset = 0 : i64} : !t
  %p1 = ascend.alloc {offset = 1024 : i64} : !t
  %q1 = ascend.alloc {offset = 2048 : i64} : !t
  %p2 = ascend.alloc {offset = 3072 : i64} : !t
  %r1 = ascend.alloc {offset = 4096 : i64} : !t
  %r2 = ascend.alloc {offset = 5120 : i64} : !t
  %p3 = ascend.alloc {offset = 6144 : i64} : !t
  %p4 = ascend.alloc {offset = 7168 : i64} : !t
  ascend.launch @un on %stream(%x, %in) : (!t, !t)
  ascend.launch @un on %stream(%in, %p1) : (!t, !t)
  ascend.launch @un on %stream(%in, %q1) : (!t, !t)
  ascend.launch @un on %stream(%q1, %p2) : (!t, !t)
  ascend.launch @un on %stream(%in, %r1) : (!t, !t)
  ascend.launch @un on %stream(%r1, %r2) : (!t, !t)
  ascend.launch @un on %stream(%r2, %p3) : (!t, !t)
  ascend.launch @un on %stream(%in, %p4) : (!t, !t)
  ascend.launch @cat4 on %stream(%p1, %p2, %p3, %p4, %y) : (!t, !t, !t, !t, !t)
  func.return
}
