// Diamonds: the two sides of a fork run on two streams, joined by events.
// RUN: geir-opt %s -p 'ascend-assign-streams,ascend-insert-events' | filecheck %s

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

// A symmetric diamond: %b continues %a's stream (first in program order), %c takes a new
// one; the join continues the first side. Two events: the fork and the join.
// CHECK-LABEL: func.func @diamond(
// CHECK-NEXT:    %stream = ascend.stream 0
// CHECK-NEXT:    %stream1 = ascend.stream 1
// CHECK-NEXT:    %event0 = ascend.event 0
// CHECK-NEXT:    %event1 = ascend.event 1
// CHECK-NOT:     ascend.event 2
// CHECK:         ascend.launch @un on %stream(%x, %a)
// CHECK-NEXT:    ascend.event_record %event0 on %stream
// CHECK-NEXT:    ascend.launch @un on %stream(%a, %b)
// CHECK-NEXT:    ascend.event_wait %event0 on %stream1
// CHECK-NEXT:    ascend.launch @un on %stream1(%a, %c)
// CHECK-NEXT:    ascend.event_record %event1 on %stream1
// CHECK-NEXT:    ascend.event_wait %event1 on %stream
// CHECK-NEXT:    ascend.launch @bin on %stream(%b, %c, %y)
// CHECK-NEXT:    func.return
func.func @diamond(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output},
                   %ws: memref<3072xi8, "gm"> {ascend.workspace}) {
  %stream = ascend.stream 0
  %a = ascend.alloc {offset = 0 : i64} : !t
  %b = ascend.alloc {offset = 1024 : i64} : !t
  %c = ascend.alloc {offset = 2048 : i64} : !t
  ascend.launch @un on %stream(%x, %a) : (!t, !t)
  ascend.launch @un on %stream(%a, %b) : (!t, !t)
  ascend.launch @un on %stream(%a, %c) : (!t, !t)
  ascend.launch @bin on %stream(%b, %c, %y) : (!t, !t, !t)
  func.return
}

// A skewed diamond: the longer side (%c1 -> %c2) is the critical path, so it keeps %a's
// stream although %b comes first, and the join follows it.
// CHECK-LABEL: func.func @skewed(
// CHECK:         ascend.launch @un on %stream(%x, %a)
// CHECK-NEXT:    ascend.event_record %event0 on %stream
// CHECK-NEXT:    ascend.event_wait %event0 on %stream1
// CHECK-NEXT:    ascend.launch @un on %stream1(%a, %b)
// CHECK-NEXT:    ascend.event_record %event1 on %stream1
// CHECK-NEXT:    ascend.launch @un on %stream(%a, %c1)
// CHECK-NEXT:    ascend.launch @un on %stream(%c1, %c2)
// CHECK-NEXT:    ascend.event_wait %event1 on %stream
// CHECK-NEXT:    ascend.launch @bin on %stream(%b, %c2, %y)
// CHECK-NEXT:    func.return
func.func @skewed(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output},
                  %ws: memref<4096xi8, "gm"> {ascend.workspace}) {
  %stream = ascend.stream 0
  %a = ascend.alloc {offset = 0 : i64} : !t
  %b = ascend.alloc {offset = 1024 : i64} : !t
  %c1 = ascend.alloc {offset = 2048 : i64} : !t
  %c2 = ascend.alloc {offset = 3072 : i64} : !t
  ascend.launch @un on %stream(%x, %a) : (!t, !t)
  ascend.launch @un on %stream(%a, %b) : (!t, !t)
  ascend.launch @un on %stream(%a, %c1) : (!t, !t)
  ascend.launch @un on %stream(%c1, %c2) : (!t, !t)
  ascend.launch @bin on %stream(%b, %c2, %y) : (!t, !t, !t)
  func.return
}
