// ascend-elide-copies: kernels marked geir.byte_copies (they only move contiguous runs of
// bytes unchanged) lose their launches; buffers become ascend.view of each other.
// RUN: geir-opt %s --split-input-file -p ascend-elide-copies | filecheck %s
// The plan and its proof see the views' lifetimes.
// RUN: geir-opt %s --split-input-file -p ascend-elide-copies,ascend-plan-memory,ascend-check-memory | filecheck %s --check-prefix=PLAN
// A planned host is left alone: its buffers may already share bytes.
// RUN: geir-opt %s --split-input-file -p ascend-plan-memory,ascend-elide-copies | filecheck %s --check-prefix=PLANNED

!t = memref<16x64xf32, "gm">
!h = memref<8x64xf32, "gm">
!c = memref<32x64xf32, "gm">
!u = memref<16x64xf32, "ub">

// A producer: reads %x, writes %y.
ascend.kernel @fill(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %b = ascend.alloc : !u
  ascend.copy %x, %b : !t to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %b, %y : !u to !t
  ascend.return
}
// A reshape: all of %x to all of %y.
ascend.kernel @reshape(%x: !t, %y: memref<1024xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector", geir.byte_copies = [array<i64: 1, 0, 0, 0, 4096>]} {
  %b = ascend.alloc : !u
  %y2 = memref.expand_shape %y [[0, 1]] output_shape [16, 64] : memref<1024xf32, "gm"> into !t
  ascend.copy %x, %b : !t to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %b, %y2 : !u to !t
  ascend.return
}
// The second half of %x's rows.
ascend.kernel @rows(%x: !t, %y: !h) attributes {block_dim = 1 : i64, core_type = "vector", geir.byte_copies = [array<i64: 1, 0, 0, 2048, 2048>]} {
  %b = ascend.alloc : memref<8x64xf32, "ub">
  %x2 = memref.subview %x[8, 0] [8, 64] [1, 1] : !t to memref<8x64xf32, strided<[64, 1], offset: 512>, "gm">
  ascend.copy %x2, %b : memref<8x64xf32, strided<[64, 1], offset: 512>, "gm"> to memref<8x64xf32, "ub">
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %b, %y : memref<8x64xf32, "ub"> to !h
  ascend.return
}
ascend.kernel @use_h(%x: !h, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %b = ascend.alloc : memref<8x64xf32, "ub">
  ascend.copy %x, %b : !h to memref<8x64xf32, "ub">
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  %y2 = memref.subview %y[0, 0] [8, 64] [1, 1] : !t to memref<8x64xf32, strided<[64, 1]>, "gm">
  ascend.copy %b, %y2 : memref<8x64xf32, "ub"> to memref<8x64xf32, strided<[64, 1]>, "gm">
  ascend.return
}
ascend.kernel @use_flat(%x: memref<1024xf32, "gm">, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %b = ascend.alloc : !u
  %x2 = memref.expand_shape %x [[0, 1]] output_shape [16, 64] : memref<1024xf32, "gm"> into !t
  ascend.copy %x2, %b : !t to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %b, %y : !u to !t
  ascend.return
}

// A reshape and a slice of whole rows: their outputs become views of their inputs; the
// reshape and slice kernels are gone with their launches.
// CHECK:       ascend.kernel @fill
// CHECK-NOT:   ascend.kernel @reshape
// CHECK-NOT:   ascend.kernel @rows
// CHECK:       ascend.kernel @use_h
// CHECK-LABEL: func.func @views(
// CHECK:         %a = ascend.alloc : memref<16x64xf32, "gm">
// CHECK-NEXT:    ascend.launch @fill on %s(%x, %a)
// CHECK-NEXT:    %r = ascend.view %a[0] : memref<16x64xf32, "gm"> to memref<1024xf32, "gm">
// CHECK-NEXT:    ascend.launch @use_flat on %s(%r, %y)
// CHECK-NEXT:    %h = ascend.view %a[2048] : memref<16x64xf32, "gm"> to memref<8x64xf32, "gm">
// CHECK-NEXT:    ascend.launch @use_h on %s(%h, %z)
// CHECK-NEXT:    func.return
// One buffer is left to place.
// PLAN-LABEL:  func.func @views(
// PLAN:          ascend.memory_plan = {strategy = "best", lower_bound = 4096 : i64, no_reuse = 4096 : i64}
func.func @views(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}, %z: !t {onnx.name = "z", ascend.output}) {
  %s = ascend.stream 0
  %a = ascend.alloc : !t
  ascend.launch @fill on %s(%x, %a) : (!t, !t)
  %r = ascend.alloc : memref<1024xf32, "gm">
  ascend.launch @reshape on %s(%a, %r) : (!t, memref<1024xf32, "gm">)
  ascend.launch @use_flat on %s(%r, %y) : (memref<1024xf32, "gm">, !t)
  %h = ascend.alloc : !h
  ascend.launch @rows on %s(%a, %h) : (!t, !h)
  ascend.launch @use_h on %s(%h, %z) : (!h, !t)
  func.return
}

// -----

!t = memref<16x64xf32, "gm">
!c = memref<32x64xf32, "gm">
!d = memref<48x64xf32, "gm">
!u = memref<16x64xf32, "ub">
ascend.kernel @fill(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %b = ascend.alloc : !u
  ascend.copy %x, %b : !t to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %b, %y : !u to !t
  ascend.return
}
// concat along rows: %a to the first 4096 bytes of %c, %b to the next.
ascend.kernel @cat(%a: !t, %b: !t, %c: !c) attributes {block_dim = 1 : i64, core_type = "vector", geir.byte_copies = [array<i64: 2, 0, 0, 0, 4096>, array<i64: 2, 4096, 1, 0, 4096>]} {
  %u = ascend.alloc : !u
  %lo = memref.subview %c[0, 0] [16, 64] [1, 1] : !c to memref<16x64xf32, strided<[64, 1]>, "gm">
  %hi = memref.subview %c[16, 0] [16, 64] [1, 1] : !c to memref<16x64xf32, strided<[64, 1], offset: 1024>, "gm">
  ascend.copy %a, %u : !t to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %u, %lo : !u to memref<16x64xf32, strided<[64, 1]>, "gm">
  ascend.set_flag MTE3 -> MTE2 id 0
  ascend.wait_flag MTE3 -> MTE2 id 0
  ascend.copy %b, %u : !t to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %u, %hi : !u to memref<16x64xf32, strided<[64, 1], offset: 1024>, "gm">
  ascend.return
}
// concat of a 32-row and a 16-row tensor.
ascend.kernel @cat2(%a: !c, %b: !t, %c: !d) attributes {block_dim = 1 : i64, core_type = "vector", geir.byte_copies = [array<i64: 2, 0, 0, 0, 8192>, array<i64: 2, 8192, 1, 0, 4096>]} {
  %u = ascend.alloc : !u
  %hi = memref.subview %c[32, 0] [16, 64] [1, 1] : !d to memref<16x64xf32, strided<[64, 1], offset: 2048>, "gm">
  ascend.copy %b, %u : !t to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %u, %hi : !u to memref<16x64xf32, strided<[64, 1], offset: 2048>, "gm">
  %u2 = ascend.alloc : memref<32x64xf32, "ub">
  %lo = memref.subview %c[0, 0] [32, 64] [1, 1] : !d to memref<32x64xf32, strided<[64, 1]>, "gm">
  ascend.copy %a, %u2 : !c to memref<32x64xf32, "ub">
  ascend.set_flag MTE2 -> MTE3 id 1
  ascend.wait_flag MTE2 -> MTE3 id 1
  ascend.copy %u2, %lo : memref<32x64xf32, "ub"> to memref<32x64xf32, strided<[64, 1]>, "gm">
  ascend.return
}
ascend.kernel @use(%x: !d, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : !u
  %x2 = memref.subview %x[0, 0] [16, 64] [1, 1] : !d to memref<16x64xf32, strided<[64, 1]>, "gm">
  ascend.copy %x2, %u : memref<16x64xf32, strided<[64, 1]>, "gm"> to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %u, %y : !u to !t
  ascend.return
}

// Concat of a concat (DenseNet): every producer writes into the last buffer, which is
// allocated first; the inner concat's buffer is a view of it, its inputs views of that.
// CHECK:       ascend.kernel @fill
// CHECK-NOT:   ascend.kernel @cat
// CHECK:       ascend.kernel @use
// CHECK-LABEL: func.func @chain(
// Each concat's buffer names its elided kernel, so geir-compare still checks its tensor.
// CHECK-NEXT:    %d = ascend.alloc {geir.elided = "cat2"} : memref<48x64xf32, "gm">
// CHECK-NEXT:    %c = ascend.view %d[0] {geir.elided = "cat"} : memref<48x64xf32, "gm"> to memref<32x64xf32, "gm">
// CHECK-NEXT:    %s = ascend.stream 0
// CHECK-NEXT:    %a = ascend.view %c[0] : memref<32x64xf32, "gm"> to memref<16x64xf32, "gm">
// CHECK-NEXT:    ascend.launch @fill on %s(%x, %a)
// CHECK-NEXT:    %b = ascend.view %c[4096] : memref<32x64xf32, "gm"> to memref<16x64xf32, "gm">
// CHECK-NEXT:    ascend.launch @fill on %s(%x, %b)
// CHECK-NEXT:    %e = ascend.view %d[8192] : memref<48x64xf32, "gm"> to memref<16x64xf32, "gm">
// CHECK-NEXT:    ascend.launch @fill on %s(%a, %e)
// CHECK-NEXT:    ascend.launch @use on %s(%d, %y)
// CHECK-NEXT:    func.return
// PLAN-LABEL:  func.func @chain(
// PLAN:          ascend.memory_plan = {strategy = "best", lower_bound = 12288 : i64, no_reuse = 12288 : i64}
func.func @chain(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}) {
  %s = ascend.stream 0
  %a = ascend.alloc : !t
  ascend.launch @fill on %s(%x, %a) : (!t, !t)
  %b = ascend.alloc : !t
  ascend.launch @fill on %s(%x, %b) : (!t, !t)
  %c = ascend.alloc : !c
  ascend.launch @cat on %s(%a, %b, %c) : (!t, !t, !c)
  %e = ascend.alloc : !t
  ascend.launch @fill on %s(%a, %e) : (!t, !t)
  %d = ascend.alloc : !d
  ascend.launch @cat2 on %s(%c, %e, %d) : (!c, !t, !d)
  ascend.launch @use on %s(%d, %y) : (!d, !t)
  func.return
}

// -----

!t = memref<16x64xf32, "gm">
!c = memref<32x64xf32, "gm">
!u = memref<16x64xf32, "ub">
ascend.kernel @fill(%x: !t, %y: !t) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %b = ascend.alloc : !u
  ascend.copy %x, %b : !t to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %b, %y : !u to !t
  ascend.return
}
ascend.kernel @cat(%a: !t, %b: !t, %c: !c) attributes {block_dim = 1 : i64, core_type = "vector", geir.byte_copies = [array<i64: 2, 0, 0, 0, 4096>, array<i64: 2, 4096, 1, 0, 4096>]} {
  %u = ascend.alloc : !u
  %lo = memref.subview %c[0, 0] [16, 64] [1, 1] : !c to memref<16x64xf32, strided<[64, 1]>, "gm">
  %hi = memref.subview %c[16, 0] [16, 64] [1, 1] : !c to memref<16x64xf32, strided<[64, 1], offset: 1024>, "gm">
  ascend.copy %a, %u : !t to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %u, %lo : !u to memref<16x64xf32, strided<[64, 1]>, "gm">
  ascend.set_flag MTE3 -> MTE2 id 0
  ascend.wait_flag MTE3 -> MTE2 id 0
  ascend.copy %b, %u : !t to !u
  ascend.set_flag MTE2 -> MTE3 id 0
  ascend.wait_flag MTE2 -> MTE3 id 0
  ascend.copy %u, %hi : !u to memref<16x64xf32, strided<[64, 1], offset: 1024>, "gm">
  ascend.return
}

// A concat that is the graph output: its inputs are written straight into the output.
// PLANNED-LABEL: func.func @into_output(
// PLANNED:         ascend.launch @cat
// CHECK-LABEL: func.func @into_output(
// CHECK-NEXT:    %s = ascend.stream 0
// CHECK-NEXT:    %a = ascend.view %y[0] : memref<32x64xf32, "gm"> to memref<16x64xf32, "gm">
// CHECK-NEXT:    ascend.launch @fill on %s(%x, %a)
// CHECK-NEXT:    %b = ascend.view %y[4096] : memref<32x64xf32, "gm"> to memref<16x64xf32, "gm">
// CHECK-NEXT:    ascend.launch @fill on %s(%x, %b)
// CHECK-NEXT:    func.return
func.func @into_output(%x: !t {onnx.name = "x"}, %y: !c {onnx.name = "y", ascend.output}) {
  %s = ascend.stream 0
  %a = ascend.alloc : !t
  ascend.launch @fill on %s(%x, %a) : (!t, !t)
  %b = ascend.alloc : !t
  ascend.launch @fill on %s(%x, %b) : (!t, !t)
  ascend.launch @cat on %s(%a, %b, %y) : (!t, !t, !c)
  func.return
}

// What must stay: a concat of a graph input (its bytes are the caller's), of one buffer
// twice, of a buffer written after the concat; a kernel without geir.byte_copies.
// CHECK-LABEL: func.func @kept(
// CHECK:         ascend.launch @cat on %s(%x, %a, %z1)
// CHECK:         ascend.launch @cat on %s(%a, %a, %z2)
// CHECK:         ascend.launch @cat on %s(%a, %b, %z3)
// CHECK:         ascend.launch @fill on %s(%x, %b)
// CHECK:         ascend.launch @fill on %s(%a, %y)
// CHECK-NOT:     ascend.view
func.func @kept(%x: !t {onnx.name = "x"}, %y: !t {onnx.name = "y", ascend.output}, %z1: !c {onnx.name = "z1", ascend.output}, %z2: !c {onnx.name = "z2", ascend.output}, %z3: !c {onnx.name = "z3", ascend.output}) {
  %s = ascend.stream 0
  %a = ascend.alloc : !t
  ascend.launch @fill on %s(%x, %a) : (!t, !t)
  ascend.launch @cat on %s(%x, %a, %z1) : (!t, !t, !c)
  ascend.launch @cat on %s(%a, %a, %z2) : (!t, !t, !c)
  %b = ascend.alloc : !t
  ascend.launch @cat on %s(%a, %b, %z3) : (!t, !t, !c)
  ascend.launch @fill on %s(%x, %b) : (!t, !t)
  ascend.launch @fill on %s(%a, %y) : (!t, !t)
  func.return
}

// A host with events (streams assigned) is left alone: the pass reasons in program order.
// CHECK-LABEL: func.func @streams(
// CHECK:         ascend.launch @cat
func.func @streams(%x: !t {onnx.name = "x"}, %y: !c {onnx.name = "y", ascend.output}) {
  %s = ascend.stream 0
  %s1 = ascend.stream 1
  %e = ascend.event 0
  %a = ascend.alloc : !t
  ascend.launch @fill on %s(%x, %a) : (!t, !t)
  %b = ascend.alloc : !t
  ascend.launch @fill on %s1(%x, %b) : (!t, !t)
  ascend.event_record %e on %s1
  ascend.event_wait %e on %s
  ascend.launch @cat on %s(%a, %b, %y) : (!t, !t, !c)
  func.return
}
