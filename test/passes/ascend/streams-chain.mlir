// A chain stays on one stream and needs no events.
// RUN: geir-opt %s -p 'ascend-assign-streams,ascend-insert-events' | filecheck %s
// RUN: geir-opt %s -p 'ascend-assign-streams{max-streams=8},ascend-insert-events,ascend-assign-streams{max-streams=8},ascend-insert-events' | filecheck %s

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

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %stream = ascend.stream 0
// CHECK-NOT:     ascend.stream 1
// CHECK-NOT:     ascend.event
// CHECK:         ascend.launch @un on %stream(%x, %a)
// CHECK-NEXT:    ascend.launch @un on %stream(%a, %b)
// CHECK-NEXT:    ascend.launch @bin on %stream(%b, %a, %c)
// CHECK-NEXT:    ascend.launch @un on %stream(%c, %y)
// CHECK-NEXT:    func.return
func.func @main(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output},
                %ws: memref<3072xi8, "gm"> {ascend.workspace}) {
  %stream = ascend.stream 0
  %a = ascend.alloc {offset = 0 : i64} : !t
  %b = ascend.alloc {offset = 1024 : i64} : !t
  %c = ascend.alloc {offset = 2048 : i64} : !t
  ascend.launch @un on %stream(%x, %a) : (!t, !t)
  ascend.launch @un on %stream(%a, %b) : (!t, !t)
  ascend.launch @bin on %stream(%b, %a, %c) : (!t, !t, !t)
  ascend.launch @un on %stream(%c, %y) : (!t, !t)
  func.return
}
