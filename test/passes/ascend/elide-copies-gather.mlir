// ascend-elide-copies on what Gather and Slice lower to: which become views, which stay kernels.
// Constant-index gathers reach the lowering as slices (graph-canonicalize), so the pipeline
// here is the one O3 runs. A launch may pass one constant twice (CSE merges a slice's equal
// starts and axes): eliding it erases that constant once (it crashed: "Cannot detach a
// toplevel operation").
// RUN: geir-opt %s --split-input-file -p graph-canonicalize,convert-graph-to-ascend,ascend-elide-copies | filecheck %s
// RUN: geir-opt %s --split-input-file -p graph-canonicalize,convert-graph-to-ascend,ascend-elide-copies,ascend-plan-memory,ascend-check-memory | filecheck %s --check-prefix=PLAN

// A gather with negative, unordered indices stays a kernel; the slice of its whole axis into
// the graph output is elided: the gather writes straight into %y through a view, and the
// slice's constants (%s passed twice, as starts and as axes) are gone.
// CHECK-LABEL: func.func @gather_then_whole_slice(
// CHECK:         %t = ascend.view %x[0] : memref<1x13x33xf32, "gm"> to memref<13x33x1xf32, "gm">
// CHECK-NEXT:    %i = ascend.constant dense<[-3, -9, -13, -10, 8]> : tensor<5xi64>
// CHECK-NEXT:    %g = ascend.view %y[0] : memref<5x33x1xf32, "gm"> to memref<5x33x1xf32, "gm">
// CHECK-NEXT:    ascend.launch @k1_g on %stream(%t, %i, %g)
// CHECK-NEXT:    func.return
// PLAN-LABEL:  func.func @gather_then_whole_slice(
// PLAN:          ascend.memory_plan
func.func @gather_then_whole_slice(%x: tensor<1x13x33xf32>) -> tensor<5x33x1xf32> {
  %i = graph.constant dense<[-3, -9, -13, -10, 8]> : tensor<5xi64> loc("i")
  %s = graph.constant dense<0> : tensor<1xi64> loc("s")
  %e = graph.constant dense<5> : tensor<1xi64> loc("e")
  %st = graph.constant dense<1> : tensor<1xi64> loc("st")
  %t = graph.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<1x13x33xf32>) -> tensor<13x33x1xf32> loc("t")
  %g = graph.gather %t, %i {axis = 0 : i64} : (tensor<13x33x1xf32>, tensor<5xi64>) -> tensor<5x33x1xf32> loc("g")
  %y = graph.slice %g, %s, %e, %s, %st : (tensor<5x33x1xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5x33x1xf32> loc("y")
  func.return %y : tensor<5x33x1xf32>
}

// -----

// Gathers of rows of one tensor: consecutive negative indices (rows 4, 5), one negative index
// in a list (row 3) and a scalar index (row 1, then squeezed) are views at that row's offset
// (512 bytes a row); repeated indices are not one run of bytes and stay a gather kernel.
// CHECK-LABEL: func.func @gather_rows(
// CHECK:         %a = ascend.alloc {offset = 0 : i64} : memref<6x8x16xf32, "gm">
// CHECK-NEXT:    ascend.launch @k0_a on %stream(%x, %a)
// CHECK-NEXT:    %g = ascend.view %a[2048] : memref<6x8x16xf32, "gm"> to memref<2x8x16xf32, "gm">
// CHECK-NEXT:    %j = ascend.constant dense<[1, 1, -6]> : tensor<3xi64>
// CHECK-NEXT:    %h = ascend.alloc
// CHECK-NEXT:    ascend.launch @{{.*}}_h on %stream(%a, %j, %h)
// CHECK-NEXT:    %m = ascend.view %a[1536] : memref<6x8x16xf32, "gm"> to memref<1x8x16xf32, "gm">
// CHECK-NEXT:    %n_slice = ascend.view %a[512] : memref<6x8x16xf32, "gm"> to memref<1x8x16xf32, "gm">
// CHECK-NEXT:    %n = ascend.view %n_slice[0] : memref<1x8x16xf32, "gm"> to memref<8x16xf32, "gm">
// CHECK-NOT:     ascend.launch @{{.*}}_g on
// CHECK-NOT:     ascend.launch @{{.*}}_m on
// CHECK-NOT:     ascend.launch @{{.*}}_n on
// CHECK:         func.return
// PLAN-LABEL:  func.func @gather_rows(
// PLAN:          ascend.memory_plan
func.func @gather_rows(%x: tensor<6x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<3x8x16xf32>, tensor<1x8x16xf32>, tensor<8x16xf32>) {
  %i = graph.constant dense<[-2, -1]> : tensor<2xi64> loc("i")
  %j = graph.constant dense<[1, 1, -6]> : tensor<3xi64> loc("j")
  %k = graph.constant dense<[-3]> : tensor<1xi64> loc("k")
  %l = graph.constant dense<-5> : tensor<i64> loc("l")
  %a = graph.relu %x : (tensor<6x8x16xf32>) -> tensor<6x8x16xf32> loc("a")
  %g = graph.gather %a, %i {axis = 0 : i64} : (tensor<6x8x16xf32>, tensor<2xi64>) -> tensor<2x8x16xf32> loc("g")
  %h = graph.gather %a, %j {axis = 0 : i64} : (tensor<6x8x16xf32>, tensor<3xi64>) -> tensor<3x8x16xf32> loc("h")
  %m = graph.gather %a, %k {axis = 0 : i64} : (tensor<6x8x16xf32>, tensor<1xi64>) -> tensor<1x8x16xf32> loc("m")
  %n = graph.gather %a, %l {axis = 0 : i64} : (tensor<6x8x16xf32>, tensor<i64>) -> tensor<8x16xf32> loc("n")
  %r = graph.relu %g : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32> loc("r")
  %q = graph.relu %h : (tensor<3x8x16xf32>) -> tensor<3x8x16xf32> loc("q")
  %p = graph.relu %m : (tensor<1x8x16xf32>) -> tensor<1x8x16xf32> loc("p")
  %o = graph.relu %n : (tensor<8x16xf32>) -> tensor<8x16xf32> loc("o")
  func.return %r, %q, %p, %o : tensor<2x8x16xf32>, tensor<3x8x16xf32>, tensor<1x8x16xf32>, tensor<8x16xf32>
}

// -----

// Slices: of the whole tensor into a graph output (its producer writes into the output; %z
// is passed twice and erased once), of whole outer rows (a view), and of part of an inner
// axis (strided: stays a kernel, which keeps its constants, %one passed twice).
// CHECK-LABEL: func.func @slices(
// CHECK:         %a = ascend.view %w[0] : memref<4x8x16xf32, "gm"> to memref<4x8x16xf32, "gm">
// CHECK-NEXT:    ascend.launch @k0_a on %stream(%x, %a)
// CHECK-NEXT:    %z = ascend.constant dense<0> : tensor<1xi64>
// CHECK-NEXT:    %four = ascend.constant dense<4> : tensor<1xi64>
// CHECK-NEXT:    %one = ascend.constant dense<1> : tensor<1xi64>
// CHECK-NEXT:    %b = ascend.view %a[1024] : memref<4x8x16xf32, "gm"> to memref<2x8x16xf32, "gm">
// CHECK-NEXT:    %c = ascend.alloc
// CHECK-NEXT:    ascend.launch @k3_inner on %stream(%a, %z, %four, %one, %one, %c)
// CHECK-NOT:     ascend.launch @k1_whole
// CHECK-NOT:     ascend.launch @k2_outer
// CHECK:         func.return
// PLAN-LABEL:  func.func @slices(
// PLAN:          ascend.memory_plan
func.func @slices(%x: tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<2x8x16xf32>, tensor<4x4x16xf32>) {
  %z = graph.constant dense<0> : tensor<1xi64> loc("z")
  %one = graph.constant dense<1> : tensor<1xi64> loc("one")
  %four = graph.constant dense<4> : tensor<1xi64> loc("four")
  %two = graph.constant dense<2> : tensor<1xi64> loc("two")
  %a = graph.relu %x : (tensor<4x8x16xf32>) -> tensor<4x8x16xf32> loc("a")
  %w = graph.slice %a, %z, %four, %z, %one : (tensor<4x8x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x8x16xf32> loc("whole")
  %b = graph.slice %a, %two, %four, %z, %one : (tensor<4x8x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x8x16xf32> loc("outer")
  %c = graph.slice %a, %z, %four, %one, %one : (tensor<4x8x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x4x16xf32> loc("inner")
  %r = graph.relu %b : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32> loc("r")
  %q = graph.relu %c : (tensor<4x4x16xf32>) -> tensor<4x4x16xf32> loc("q")
  func.return %w, %r, %q : tensor<4x8x16xf32>, tensor<2x8x16xf32>, tensor<4x4x16xf32>
}
