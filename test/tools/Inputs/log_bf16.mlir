func.func @main(%x: tensor<4x8xbf16> {onnx.name = "x"}) -> (tensor<4x8xbf16> {onnx.name = "y"}) {
  %y = graph.log %x : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  func.return %y : tensor<4x8xbf16>
}
