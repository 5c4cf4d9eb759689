// ascend-insert-events on streams assigned by hand: the events are derived again from the
// data, redundant waits are removed and ids renumbered from 0; the write-after-read and
// write-after-write orderings of reused memory get events too.
// RUN: geir-opt %s -p ascend-insert-events | filecheck %s
// RUN: geir-opt %s -p ascend-insert-events,ascend-insert-events | filecheck %s

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

// %b waits for %a; %c needs both, but its wait for %a (event 5 a second time) is implied by
// the wait for %b, whose stream already waited for %a: removed. Ids 5, 2, 9 become 0, 1, 2 in
// program order, and the unused event 7 goes away.
// CHECK-LABEL: func.func @redundant(
// CHECK-NEXT:    %s0 = ascend.stream 0
// CHECK-NEXT:    %s1 = ascend.stream 1
// CHECK-NEXT:    %s2 = ascend.stream 2
// CHECK-NEXT:    %event0 = ascend.event 0
// CHECK-NEXT:    %event1 = ascend.event 1
// CHECK-NEXT:    %event2 = ascend.event 2
// CHECK-NOT:     ascend.event
// CHECK:         ascend.launch @un on %s0(%x, %a)
// CHECK-NEXT:    ascend.event_record %event0 on %s0
// CHECK-NEXT:    ascend.event_wait %event0 on %s1
// CHECK-NEXT:    ascend.launch @un on %s1(%a, %b)
// CHECK-NEXT:    ascend.event_record %event1 on %s1
// CHECK-NEXT:    ascend.event_wait %event1 on %s2
// CHECK-NEXT:    ascend.launch @bin on %s2(%b, %a, %c)
// CHECK-NEXT:    ascend.event_record %event2 on %s2
// CHECK-NEXT:    ascend.event_wait %event2 on %s0
// CHECK-NEXT:    ascend.launch @bin on %s0(%c, %x, %y)
// CHECK-NEXT:    func.return
func.func @redundant(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output},
                     %ws: memref<3072xi8, "gm"> {ascend.workspace}) {
  %s0 = ascend.stream 0
  %s1 = ascend.stream 1
  %s2 = ascend.stream 2
  %e5 = ascend.event 5
  %e2 = ascend.event 2
  %e9 = ascend.event 9
  %e7 = ascend.event 7
  %a = ascend.alloc {offset = 0 : i64} : !t
  %b = ascend.alloc {offset = 1024 : i64} : !t
  %c = ascend.alloc {offset = 2048 : i64} : !t
  ascend.launch @un on %s0(%x, %a) : (!t, !t)
  ascend.event_record %e5 on %s0
  ascend.event_wait %e5 on %s1
  ascend.launch @un on %s1(%a, %b) : (!t, !t)
  ascend.event_record %e2 on %s1
  ascend.event_wait %e5 on %s2
  ascend.event_wait %e2 on %s2
  ascend.launch @bin on %s2(%b, %a, %c) : (!t, !t, !t)
  ascend.event_record %e9 on %s2
  ascend.event_wait %e9 on %s0
  ascend.launch @bin on %s0(%c, %x, %y) : (!t, !t, !t)
  func.return
}

// Memory reuse: %c takes %a's bytes after %b (on the other stream) read them, and %f takes
// %e's bytes. Writing %c must wait for the read on stream 1 (write-after-read) and writing
// %f for the write of %e on stream 0 (write-after-write), although no data flows.
// CHECK-LABEL: func.func @reuse(
// CHECK:         ascend.launch @un on %s0(%x, %a)
// CHECK-NEXT:    ascend.event_record %event0 on %s0
// CHECK-NEXT:    ascend.event_wait %event0 on %s1
// CHECK-NEXT:    ascend.launch @un on %s1(%a, %b)
// CHECK-NEXT:    ascend.event_record %event1 on %s1
// CHECK-NEXT:    ascend.event_wait %event1 on %s0
// CHECK-NEXT:    ascend.launch @un on %s0(%x, %c)
// CHECK-NEXT:    ascend.event_record %event2 on %s0
// CHECK-NEXT:    ascend.event_wait %event2 on %s1
// CHECK-NEXT:    ascend.launch @bin on %s1(%b, %c, %y)
// CHECK-NEXT:    ascend.launch @un on %s0(%x, %e)
// CHECK-NEXT:    ascend.event_record %event3 on %s0
// CHECK-NEXT:    ascend.event_wait %event3 on %s1
// CHECK-NEXT:    ascend.launch @un on %s1(%x, %f)
// CHECK-NEXT:    ascend.launch @un on %s1(%f, %z)
// CHECK-NEXT:    func.return
func.func @reuse(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}, %z: !t {onnx.name = "z", ascend.output},
                 %ws: memref<3072xi8, "gm"> {ascend.workspace}) {
  %s0 = ascend.stream 0
  %s1 = ascend.stream 1
  %a = ascend.alloc {offset = 0 : i64} : !t
  %b = ascend.alloc {offset = 1024 : i64} : !t
  %c = ascend.alloc {offset = 0 : i64} : !t
  %e = ascend.alloc {offset = 2048 : i64} : !t
  %f = ascend.alloc {offset = 2048 : i64} : !t
  ascend.launch @un on %s0(%x, %a) : (!t, !t)
  ascend.launch @un on %s1(%a, %b) : (!t, !t)
  ascend.launch @un on %s0(%x, %c) : (!t, !t)
  ascend.launch @bin on %s1(%b, %c, %y) : (!t, !t, !t)
  ascend.launch @un on %s0(%x, %e) : (!t, !t)
  ascend.launch @un on %s1(%x, %f) : (!t, !t)
  ascend.launch @un on %s1(%f, %z) : (!t, !t)
  func.return
}

// Streams that share nothing need no events; the kernels reading the same input do not
// depend on each other.
// CHECK-LABEL: func.func @independent(
// CHECK-NOT:     ascend.event
// CHECK:         func.return
func.func @independent(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}, %z: !t {onnx.name = "z", ascend.output}) {
  %s0 = ascend.stream 0
  %s1 = ascend.stream 1
  ascend.launch @un on %s0(%x, %y) : (!t, !t)
  ascend.launch @un on %s1(%x, %z) : (!t, !t)
  func.return
}

// Two kernels write the two halves of one buffer (views with static layouts) on two streams:
// disjoint bytes, no event between them; the kernel reading the whole buffer waits for the
// other stream's half.
!top = memref<8x16xf32, strided<[16, 1]>, "gm">
!bot = memref<8x16xf32, strided<[16, 1], offset: 128>, "gm">
!h = memref<8x16xf32, "ub">
ascend.kernel @fill_top(%x: !top, %y: !top) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %b = ascend.alloc {offset = 0 : i64} : !h
  ascend.copy %x, %b : !top to !h
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %b, %y : !h to !top
  ascend.return
}
ascend.kernel @fill_bot(%x: !bot, %y: !bot) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %b = ascend.alloc {offset = 0 : i64} : !h
  ascend.copy %x, %b : !bot to !h
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %b, %y : !h to !bot
  ascend.return
}

// CHECK-LABEL: func.func @slices(
// CHECK-NEXT:    %s0 = ascend.stream 0
// CHECK-NEXT:    %s1 = ascend.stream 1
// CHECK-NEXT:    %event0 = ascend.event 0
// CHECK-NOT:     ascend.event 1
// CHECK:         ascend.launch @fill_top on %s0(%xt, %ct)
// CHECK-NEXT:    ascend.launch @fill_bot on %s1(%xb, %cb)
// CHECK-NEXT:    ascend.event_record %event0 on %s1
// CHECK-NEXT:    ascend.event_wait %event0 on %s0
// CHECK-NEXT:    ascend.launch @un on %s0(%c, %y)
func.func @slices(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output},
                  %ws: memref<1024xi8, "gm"> {ascend.workspace}) {
  %s0 = ascend.stream 0
  %s1 = ascend.stream 1
  %c = ascend.alloc {offset = 0 : i64} : !t
  %xt = memref.subview %x[0, 0] [8, 16] [1, 1] : !t to !top
  %xb = memref.subview %x[8, 0] [8, 16] [1, 1] : !t to !bot
  %ct = memref.subview %c[0, 0] [8, 16] [1, 1] : !t to !top
  %cb = memref.subview %c[8, 0] [8, 16] [1, 1] : !t to !bot
  ascend.launch @fill_top on %s0(%xt, %ct) : (!top, !top)
  ascend.launch @fill_bot on %s1(%xb, %cb) : (!bot, !bot)
  ascend.launch @un on %s0(%c, %y) : (!t, !t)
  func.return
}
