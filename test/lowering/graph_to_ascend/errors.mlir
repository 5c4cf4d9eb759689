// convert-graph-to-ascend rejects what it cannot lower with one clear message.
// RUN: not geir-opt %s --split-input-file -p convert-graph-to-ascend 2>&1 | filecheck %s
// RUN: not geir-opt %s -p 'convert-graph-to-ascend{device=tpu}' 2>&1 | filecheck %s --check-prefix=DEVICE

// DEVICE: geir-opt: error: invalid options for pass 'convert-graph-to-ascend': unknown device 'tpu'; known devices: ascend310p, ascend910b

// CHECK: error: argument #0 of @dynamic has a dynamic shape tensor<?x4xf32>; kernels need static shapes (graph-bind-symbols plans a symbolic dim at its range's top)
func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = graph.relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32> loc("relu")
  func.return %y : tensor<?x4xf32>
}

// -----

// CHECK: error: 'graph.constant_of_shape' at "fill": dynamic shape tensor<?x?xf32> cannot be lowered to ascend: kernels need static shapes (graph-bind-symbols plans a symbolic dim at its range's top)
func.func @dynamic_inside(%s: tensor<2xi64>) -> tensor<2xi64> {
  %r = graph.constant_of_shape %s : (tensor<2xi64>) -> tensor<?x?xf32> loc("fill")
  %n = graph.shape %r : (tensor<?x?xf32>) -> tensor<2xi64> loc("shape")
  func.return %n : tensor<2xi64>
}

// -----

// CHECK: error: argument #0 of @f80 has element type f80, which has no ascend kernels
func.func @f80(%x: tensor<4xf80>) -> tensor<4xf80> {
  func.return %x : tensor<4xf80>
}

// -----

// CHECK: error: 'arith.addf' at "add" cannot be lowered to ascend (not a graph op)
func.func @foreign(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = arith.addf %x, %x : tensor<4xf32> loc("add")
  func.return %y : tensor<4xf32>
}
