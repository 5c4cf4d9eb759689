// An already quantized conv (QDQ on both inputs): graph-quantize leaves it unchanged.
// CHECK-LABEL: func.func @qdq(
// CHECK-NEXT:    %s = graph.constant
// CHECK-NEXT:    %z = graph.constant
// CHECK-NEXT:    %xq = graph.quantize %x, %s, %z
// CHECK-NEXT:    %xdq = graph.dequantize %xq, %s, %z
// CHECK-NEXT:    %wq = graph.constant
// CHECK-NEXT:    %sw = graph.constant
// CHECK-NEXT:    %wdq = graph.dequantize %wq, %sw
// CHECK-NEXT:    %y = graph.conv %xdq, %wdq
// CHECK-NEXT:    func.return %y
func.func @qdq(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %s = graph.constant dense<0.5> : tensor<f32> loc("qconv")
  %z = graph.constant dense<0> : tensor<i8> loc("qconv")
  %xq = graph.quantize %x, %s, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xi8> loc("qconv")
  %xdq = graph.dequantize %xq, %s, %z : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xf32> loc("qconv")
  %wq = graph.constant dense<1> : tensor<2x2x1x1xi8> loc("qconv")
  %sw = graph.constant dense<0.25> : tensor<2x1x1x1xf32> loc("qconv")
  %wdq = graph.dequantize %wq, %sw : (tensor<2x2x1x1xi8>, tensor<2x1x1x1xf32>) -> tensor<2x2x1x1xf32> loc("qconv")
  %y = graph.conv %xdq, %wdq : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("qconv")
  func.return %y : tensor<1x2x4x4xf32>
}
