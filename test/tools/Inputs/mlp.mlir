// Two MLP layers (input of compile-ranks.test): a tensor-parallel pair each, or a pipeline
// stage each.
func.func @main(%x: tensor<4x8xf32> {onnx.name = "x"}) -> (tensor<4x8xf32> {onnx.name = "y"}) {
  %w1 = graph.constant dense<0.25> : tensor<8x16xf32>
  %w2 = graph.constant dense<0.125> : tensor<16x8xf32>
  %w3 = graph.constant dense<0.5> : tensor<8x16xf32>
  %w4 = graph.constant dense<-0.125> : tensor<16x8xf32>
  %h1 = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("fc1")
  %a1 = graph.relu %h1 : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("relu1")
  %y1 = graph.matmul %a1, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("fc2")
  %h2 = graph.matmul %y1, %w3 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("fc3")
  %a2 = graph.relu %h2 : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("relu2")
  %y = graph.matmul %a2, %w4 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("fc4")
  func.return %y : tensor<4x8xf32>
}
