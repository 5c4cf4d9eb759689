// A small valid module (input of the tool tests): %a and %b are common subexpressions.
func.func @main(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xf32> {
  %a = graph.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("add_a")
  %b = graph.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("add_b")
  %m = graph.mul %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc(fused["mul", "scale"])
  %s = graph.softmax %m : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("softmax")
  func.return %s : tensor<2x3xf32>
}
