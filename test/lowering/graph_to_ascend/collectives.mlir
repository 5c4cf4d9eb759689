// A graph collective lowers to an hccl kernel (one ascend collective over the whole buffers),
// launched on a stream of its own with events around it; graph-simplify never folds one, even
// of a constant (its result depends on the other ranks).
// RUN: geir-opt %s --split-input-file -p 'graph-simplify,convert-graph-to-ascend,ascend-assign-streams,ascend-insert-events' | filecheck %s
// RUN: geir-opt %s --split-input-file -p 'graph-simplify' | filecheck %s --check-prefix=SIMPLIFY

// CHECK:       ascend.kernel @k1_all_reduce(%y: memref<4x16xf32, "gm">, %z: memref<4x16xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl", template = "collective"} {
// CHECK-NEXT:    ascend.all_reduce %y, %z {ranks = array<i64: 0, 1>, reduction = "sum"} : memref<4x16xf32, "gm">, memref<4x16xf32, "gm">
// CHECK-NEXT:    ascend.return
// CHECK-LABEL: func.func @main(
// CHECK:         ascend.launch @k0_matmul on %stream(
// CHECK-NEXT:    ascend.event_record %event0 on %stream
// CHECK:         ascend.event_wait %event0 on %stream1
// CHECK-NEXT:    ascend.launch @k1_all_reduce on %stream1(
// CHECK-NEXT:    ascend.event_record %event1 on %stream1
// CHECK-NEXT:    ascend.event_wait %event1 on %stream
// CHECK-NEXT:    ascend.launch @k2_relu on %stream(
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %z = graph.all_reduce %y {ranks = array<i64: 0, 1>, reduction = "sum"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = graph.relu %z : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %r : tensor<4x16xf32>
}

// -----
// SIMPLIFY-LABEL: func.func @constant_operand(
// SIMPLIFY:         %[[S:.*]] = graph.all_gather %{{.*}} {ranks = array<i64: 0, 1>, axis = 0 : i64}
// SIMPLIFY-NEXT:    func.return %[[S]]
func.func @constant_operand() -> tensor<4xf32> {
  %c = graph.constant dense<1.0> : tensor<2xf32>
  %s = graph.all_gather %c {ranks = array<i64: 0, 1>, axis = 0 : i64} : (tensor<2xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// -----
// A pipeline stage's recv and send: hccl kernels around the stage's own kernel.
// CHECK:       ascend.kernel @k0_recv(%r: memref<4x8xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl", template = "collective"} {
// CHECK-NEXT:    ascend.recv %r {peer = 0 : i64} : memref<4x8xf32, "gm">
// CHECK:       ascend.kernel @k2_send(%y: memref<4x8xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl", template = "collective"} {
// CHECK-NEXT:    ascend.send %y {peer = 2 : i64} : memref<4x8xf32, "gm">
// CHECK-LABEL: func.func @stage(
// CHECK:         ascend.launch @k0_recv on %stream1(
// CHECK:         ascend.launch @k1_relu on %stream(
// CHECK:         ascend.launch @k2_send on %stream1(
func.func @stage() {
  %r = graph.recv {peer = 0 : i64} : () -> tensor<4x8xf32>
  %y = graph.relu %r : (tensor<4x8xf32>) -> tensor<4x8xf32>
  graph.send %y {peer = 2 : i64} : (tensor<4x8xf32>) -> ()
  func.return
}
