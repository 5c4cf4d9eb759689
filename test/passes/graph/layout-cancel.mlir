// graph-layout plans from the logical program: conversions already in the input are undone
// first, so inverse pairs (and chains) never survive, and running the pass twice is running it once.
// RUN: geir-opt %s -p graph-layout --split-input-file | filecheck %s
// RUN: geir-opt %s -p graph-layout,graph-layout --split-input-file | filecheck %s

// NCHW -> NC1HWC0 -> NCHW cancels; NCHW -> NHWC -> NC1HWC0 ... -> ND with only elementwise ops
// between has nothing blocked to serve and disappears too.
// CHECK-LABEL: func.func @pairs(
// CHECK-NEXT:    %r = graph.relu %x : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
// CHECK-NEXT:    %e = graph.exp %r : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
// CHECK-NEXT:    func.return %e : tensor<1x32x8x8xf32>
func.func @pairs(%x: tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32> {
  %a = graph.trans_data %x {src_format = "NCHW", dst_format = "NC1HWC0"} : (tensor<1x32x8x8xf32>) -> tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>
  %b = graph.trans_data %a {src_format = "NC1HWC0", dst_format = "NCHW"} : (tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>) -> tensor<1x32x8x8xf32>
  %r = graph.relu %b : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %c = graph.trans_data %r {src_format = "NCHW", dst_format = "NHWC"} : (tensor<1x32x8x8xf32>) -> tensor<1x8x8x32xf32, #graph.format<NHWC, NCHW, [1, 32, 8, 8]>>
  %d = graph.trans_data %c {src_format = "NHWC", dst_format = "NC1HWC0"} : (tensor<1x8x8x32xf32, #graph.format<NHWC, NCHW, [1, 32, 8, 8]>>) -> tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>
  %e = graph.exp %d : (tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>) -> tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>
  %f = graph.trans_data %e {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>) -> tensor<1x32x8x8xf32>
  func.return %f : tensor<1x32x8x8xf32>
}

// -----
// Two convs back to back, as GE first sees them: conv1's NC1HWC0 -> NCHW and conv2's NCHW ->
// NC1HWC0 would be an inverse pair; here the value simply stays NC1HWC0. A constant that was
// already converted is converted back and then again (same bytes) for conv2, which reads
// NC1HWC0; conv1 reads the plain input and takes it plain.
// CHECK-LABEL: func.func @back_to_back(
// CHECK-NEXT:    %w = graph.constant dense<1.000000e-02> : tensor<32x32x3x3xf32>
// CHECK-NEXT:    %w_1 = graph.constant dense<1.000000e-02> : tensor<18x2x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [32, 32, 3, 3]>>
// CHECK-NEXT:    %c1 = graph.conv %x, %w {{.*}} -> tensor<1x2x64x64x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 64, 64]>>
// CHECK-NEXT:    %c2 = graph.conv %c1, %w_1 {{.*}} : (tensor<1x2x64x64x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 64, 64]>>, {{.*}}) -> tensor<1x32x64x64xf32>
// CHECK-NEXT:    func.return %c2
func.func @back_to_back(%x: tensor<1x32x64x64xf32>) -> tensor<1x32x64x64xf32> {
  %w = graph.constant dense<0.01> : tensor<18x2x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [32, 32, 3, 3]>>
  %c1 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x64x64xf32>, tensor<18x2x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [32, 32, 3, 3]>>) -> tensor<1x32x64x64xf32>
  %c2 = graph.conv %c1, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x64x64xf32>, tensor<18x2x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [32, 32, 3, 3]>>) -> tensor<1x32x64x64xf32>
  func.return %c2 : tensor<1x32x64x64xf32>
}
