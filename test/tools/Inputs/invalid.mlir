// Verifies but for one op: the product's result type is wrong.
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %a = graph.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("relu")
  %m = graph.mul %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x4xf32> loc(fused["mul", "scale"])
  func.return %m : tensor<2x4xf32>
}
