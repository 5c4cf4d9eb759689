// graph-layout for a device whose FIX pipe has no quantization parameters buffer (the 310P's
// device file lists no l1 -> fb path): an int8 conv's requantized result is not written
// blocked; the 3x3 conv's map is converted by a trans_data instead.
// RUN: geir-opt %s -p 'graph-layout{device=ascend310p}' --elide-resources | filecheck %s

// CHECK-LABEL: func.func @fix_requantized(
// CHECK:         %a = graph.conv {{.*}} -> tensor<8x64x56x56xi32>
// CHECK-NEXT:    %q = graph.requantize %a, {{.*}} -> tensor<8x64x56x56xi8>
// CHECK-NEXT:    %r = graph.relu %q : (tensor<8x64x56x56xi8>) -> tensor<8x64x56x56xi8>
// CHECK-NEXT:    graph.trans_data %r {src_format = "ND", dst_format = "NC1HWC0"}
func.func @fix_requantized(%x: tensor<8x64x56x56xi8>) -> tensor<8x64x56x56xi32> {
  %w = graph.constant dense<3> : tensor<64x64x3x3xi8>
  %s = graph.constant dense<0.01> : tensor<1x64x1x1xf32>
  %z = graph.constant dense<0> : tensor<i8>
  %a = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, offset_x = -128 : i64} : (tensor<8x64x56x56xi8>, tensor<64x64x3x3xi8>) -> tensor<8x64x56x56xi32>
  %q = graph.requantize %a, %s, %z : (tensor<8x64x56x56xi32>, tensor<1x64x1x1xf32>, tensor<i8>) -> tensor<8x64x56x56xi8>
  %r = graph.relu %q : (tensor<8x64x56x56xi8>) -> tensor<8x64x56x56xi8>
  %y = graph.conv %r, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x64x56x56xi8>, tensor<64x64x3x3xi8>) -> tensor<8x64x56x56xi32>
  func.return %y : tensor<8x64x56x56xi32>
}
