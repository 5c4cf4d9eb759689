// convert-graph-to-ascend: bufferization and the host function.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// Graph inputs are the host's input arguments, graph outputs its output arguments written in
// place by their producer; constants become ascend.constant buffers (materialised before their
// first use); each intermediate an ascend.alloc in the workspace, one after the other at
// 512-byte aligned offsets; the kernels are launched in program order on stream 0.
// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %x: memref<4x100xf32, "gm"> {onnx.name = "x"},
// CHECK-SAME:    %y: memref<4x100xf32, "gm"> {onnx.name = "y", ascend.output},
// CHECK-SAME:    %workspace: memref<4096xi8, "gm"> {ascend.workspace})
// CHECK-NEXT:    %stream = ascend.stream 0
// CHECK-NEXT:    %e = ascend.alloc {offset = 0 : i64} : memref<4x100xf32, "gm">
// CHECK-NEXT:    ascend.launch @k0_exp on %stream(%x, %e)
// CHECK-NEXT:    %w = ascend.constant dense<2.000000e+00> : tensor<100xf32>
// CHECK-NEXT:    %m = ascend.alloc {offset = 2048 : i64} : memref<4x100xf32, "gm">
// CHECK-NEXT:    ascend.launch @k1_mul on %stream(%e, %w, %m)
// CHECK-NEXT:    ascend.launch @k2_add on %stream(%m, %x, %y)
// CHECK-NEXT:    func.return
func.func @main(%x: tensor<4x100xf32> {onnx.name = "x"}) -> (tensor<4x100xf32> {onnx.name = "y"}) {
  %w = graph.constant dense<2.0> : tensor<100xf32> loc("w")
  %e = graph.exp %x : (tensor<4x100xf32>) -> tensor<4x100xf32> loc("exp")
  %m = graph.mul %e, %w : (tensor<4x100xf32>, tensor<100xf32>) -> tensor<4x100xf32> loc("mul")
  %y = graph.add %m, %x : (tensor<4x100xf32>, tensor<4x100xf32>) -> tensor<4x100xf32> loc("add")
  func.return %y : tensor<4x100xf32>
}

// -----

// An output that already has a buffer - a graph input, a constant, a value returned twice -
// is filled by a copy kernel after the others.
// CHECK-LABEL: ascend.kernel @k0_relu(
// CHECK-LABEL: ascend.kernel @k1_copy(
// CHECK-LABEL: ascend.kernel @k2_copy(
// CHECK-LABEL: ascend.kernel @k3_copy(
// CHECK-LABEL: func.func @outputs(
// CHECK-SAME:    %x: memref<8xf32, "gm">, %r: memref<8xf32, "gm"> {ascend.output}, %[[R2:.*]]: memref<8xf32, "gm"> {ascend.output}, %[[X2:.*]]: memref<8xf32, "gm"> {ascend.output}, %[[C:.*]]: memref<8xf32, "gm"> {ascend.output})
// CHECK:         ascend.launch @k0_relu on %stream(%x, %r)
// CHECK-NEXT:    ascend.launch @k1_copy on %stream(%r, %[[R2]])
// CHECK-NEXT:    ascend.launch @k2_copy on %stream(%x, %[[X2]])
// CHECK-NEXT:    %[[CONST:.*]] = ascend.constant dense<1.000000e+00> : tensor<8xf32>
// CHECK-NEXT:    ascend.launch @k3_copy on %stream(%[[CONST]], %[[C]])
func.func @outputs(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %c = graph.constant dense<1.0> : tensor<8xf32>
  %r = graph.relu %x : (tensor<8xf32>) -> tensor<8xf32> loc("relu")
  func.return %r, %r, %x, %c : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Ops whose operands are known at compile time (shape arithmetic) are evaluated here: the
// reshape's target shape comes from graph.shape of a static tensor, no kernel computes it.
// CHECK-LABEL: ascend.kernel @k0_reshape(
// CHECK-NOT:     ascend.kernel
// CHECK-LABEL: func.func @shapes(
// CHECK:         %s = ascend.constant dense<[2, 12]> : tensor<2xi64>
// CHECK-NEXT:    ascend.launch @k0_reshape on %stream(%x, %s, %y)
func.func @shapes(%x: tensor<2x3x4xf32>, %t: tensor<2x12xf32>) -> tensor<2x12xf32> {
  %s = graph.shape %t : (tensor<2x12xf32>) -> tensor<2xi64> loc("shape")
  %y = graph.reshape %x, %s : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32> loc("reshape")
  func.return %y : tensor<2x12xf32>
}

// -----

// A fusion no template takes as a whole (a transpose inside a vector chain) becomes one
// kernel per op, its intermediates in the workspace; the fusion's result is written in place.
// CHECK-LABEL: ascend.kernel @k0_t(
// CHECK-SAME:    template = "data"
// CHECK-LABEL: ascend.kernel @k1_a(
// CHECK-SAME:    template = "row"
// CHECK-LABEL: func.func @split(
// CHECK:         %t = ascend.alloc {offset = 0 : i64} : memref<8x4xf32, "gm">
// CHECK-NEXT:    ascend.launch @k0_t on %stream(%x, %t)
// CHECK-NEXT:    ascend.launch @k1_a on %stream(%t, %b, %{{.*}})
func.func @split(%x: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %y = graph.fusion "vector" (%x, %b) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32> {
  ^bb0(%xa: tensor<4x8xf32>, %ba: tensor<8x4xf32>):
    %t = graph.transpose %xa {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32> loc("t")
    %a = graph.add %t, %ba : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32> loc("a")
    graph.yield %a : tensor<8x4xf32>
  } loc(fused["t", "a"])
  func.return %y : tensor<8x4xf32>
}

// -----

// An op no template handles yet runs its numpy semantics in one ascend.reference over whole gm
// buffers, in a kernel marked `fallback` (reports count them).
// CHECK-LABEL: ascend.kernel @k0_argmax(
// CHECK-SAME:    %x: memref<3x5xf32, "gm">, %y: memref<3x1xi64, "gm">)
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", fallback}
// CHECK-NEXT:    ascend.reference "graph.arg_max" ins(%x : memref<3x5xf32, "gm">) outs(%y : memref<3x1xi64, "gm">) {axis = 1 : i64}
// CHECK-NEXT:    ascend.return
func.func @fallback(%x: tensor<3x5xf32>) -> tensor<3x1xi64> {
  %y = graph.arg_max %x {axis = 1 : i64} : (tensor<3x5xf32>) -> tensor<3x1xi64> loc("argmax")
  func.return %y : tensor<3x1xi64>
}
