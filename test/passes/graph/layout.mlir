// graph-layout: formats chosen by the cost model, propagated through layout-agnostic ops,
// trans_data inserted only where a conversion pays for itself, weights converted at compile time.
// RUN: geir-opt %s -p graph-layout --split-input-file --elide-resources | filecheck %s

// A conv chain: the convs read and write NC1HWC0 between them, relu and the residual add run
// on NC1HWC0 storage, the weights of convs reading NC1HWC0 become FRACTAL_Z constants (its K
// order). The 3-channel input is read as it is (padding it to C0 = 16 costs more than it
// saves), so the first conv keeps plain weights (read as the [Cout, K] matrix they are), and
// the 1-channel result is written ND: no trans_data at all.
// CHECK-LABEL: func.func @chain(
// CHECK-SAME:    %x: tensor<1x3x32x32xf32>) -> tensor<1x1x32x32xf32> {
// CHECK-NEXT:    %w1 = graph.constant dense<1.000000e-01> : tensor<32x3x3x3xf32>
// CHECK-NEXT:    %c1 = graph.conv %x, %w1 {{.*}} : (tensor<1x3x32x32xf32>, tensor<32x3x3x3xf32>) -> tensor<1x2x32x32x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 32, 32]>>
// CHECK-NEXT:    %r1 = graph.relu %c1 : (tensor<1x2x32x32x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 32, 32]>>) -> tensor<1x2x32x32x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 32, 32]>>
// CHECK-NEXT:    %w2 = graph.constant dense<1.000000e-01> : tensor<18x2x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [32, 32, 3, 3]>>
// CHECK-NEXT:    %c2 = graph.conv %r1, %w2 {{.*}} -> tensor<1x2x32x32x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 32, 32]>>
// CHECK-NEXT:    %a = graph.add %c2, %r1 : {{.*}} -> tensor<1x2x32x32x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 32, 32]>>
// CHECK-NEXT:    %w3 = graph.constant dense_resource<__elided__> : tensor<2x1x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [1, 32, 1, 1]>>
// CHECK-NEXT:    %c3 = graph.conv %a, %w3 : ({{.*}}) -> tensor<1x1x32x32xf32>
// CHECK-NEXT:    func.return %c3 : tensor<1x1x32x32xf32>
// CHECK-NOT:     graph.trans_data
func.func @chain(%x: tensor<1x3x32x32xf32>) -> tensor<1x1x32x32xf32> {
  %w1 = graph.constant dense<0.1> : tensor<32x3x3x3xf32>
  %c1 = graph.conv %x, %w1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x32x32xf32>, tensor<32x3x3x3xf32>) -> tensor<1x32x32x32xf32>
  %r1 = graph.relu %c1 : (tensor<1x32x32x32xf32>) -> tensor<1x32x32x32xf32>
  %w2 = graph.constant dense<0.1> : tensor<32x32x3x3xf32>
  %c2 = graph.conv %r1, %w2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x32x32xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x32x32xf32>
  %a = graph.add %c2, %r1 : (tensor<1x32x32x32xf32>, tensor<1x32x32x32xf32>) -> tensor<1x32x32x32xf32>
  %w3 = graph.constant dense<0.1> : tensor<1x32x1x1xf32>
  %c3 = graph.conv %a, %w3 : (tensor<1x32x32x32xf32>, tensor<1x32x1x1xf32>) -> tensor<1x1x32x32xf32>
  func.return %c3 : tensor<1x1x32x32xf32>
}

// -----
// Insertion: a large NC1HWC0 tensor read by two convs and by flatten (ND only). One trans_data
// for the flatten is cheaper than both convs and its producer re-laying out 6.4 MB in-kernel.
// The weights are kept twice: plain for the conv reading ND, FRACTAL_Z for those reading NC1HWC0.
// CHECK-LABEL: func.func @insert(
// CHECK:         %w = graph.constant {{.*}} : tensor<32x32x1x1xf32>
// CHECK-NEXT:    %[[WZ:w.*]] = graph.constant {{.*}} #graph.format<FRACTAL_Z, NCHW, [32, 32, 1, 1]>>
// CHECK:         %r = graph.relu %c : {{.*}} -> tensor<1x2x224x224x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 224, 224]>>
// CHECK-NEXT:    %0 = graph.trans_data %r {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<1x2x224x224x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 224, 224]>>) -> tensor<1x32x224x224xf32>
// CHECK-NEXT:    %a = graph.conv %r, %[[WZ]] : (tensor<1x2x224x224x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 224, 224]>>, {{.*}}) -> tensor<1x32x224x224xf32>
// CHECK-NEXT:    %b = graph.conv %r, %[[WZ]] : (tensor<1x2x224x224x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 224, 224]>>, {{.*}}) -> tensor<1x32x224x224xf32>
// CHECK-NEXT:    %f = graph.flatten %0 : (tensor<1x32x224x224xf32>) -> tensor<1x1605632xf32>
func.func @insert(%x: tensor<1x32x224x224xf32>) -> (tensor<1x32x224x224xf32>, tensor<1x32x224x224xf32>, tensor<1x1605632xf32>) {
  %w = graph.constant dense<0.01> : tensor<32x32x1x1xf32>
  %c = graph.conv %x, %w : (tensor<1x32x224x224xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x224x224xf32>
  %r = graph.relu %c : (tensor<1x32x224x224xf32>) -> tensor<1x32x224x224xf32>
  %a = graph.conv %r, %w : (tensor<1x32x224x224xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x224x224xf32>
  %b = graph.conv %r, %w : (tensor<1x32x224x224xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x224x224xf32>
  %f = graph.flatten %r : (tensor<1x32x224x224xf32>) -> tensor<1x1605632xf32>
  func.return %a, %b, %f : tensor<1x32x224x224xf32>, tensor<1x32x224x224xf32>, tensor<1x1605632xf32>
}

// -----
// The same graph at 56x56 (800 KB): the in-kernel re-layouts are cheaper than a trans_data
// kernel's launch, so the tensor stays ND and nothing is inserted.
// CHECK-LABEL: func.func @no_insert(
// CHECK-NOT:     graph.trans_data
// CHECK:         %r = graph.relu %c : (tensor<1x32x56x56xf32>) -> tensor<1x32x56x56xf32>
func.func @no_insert(%x: tensor<1x32x56x56xf32>) -> (tensor<1x32x56x56xf32>, tensor<1x32x56x56xf32>, tensor<1x100352xf32>) {
  %w = graph.constant dense<0.01> : tensor<32x32x1x1xf32>
  %c = graph.conv %x, %w : (tensor<1x32x56x56xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x56x56xf32>
  %r = graph.relu %c : (tensor<1x32x56x56xf32>) -> tensor<1x32x56x56xf32>
  %a = graph.conv %r, %w : (tensor<1x32x56x56xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x56x56xf32>
  %b = graph.conv %r, %w : (tensor<1x32x56x56xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x56x56xf32>
  %f = graph.flatten %r : (tensor<1x32x56x56xf32>) -> tensor<1x100352xf32>
  func.return %a, %b, %f : tensor<1x32x56x56xf32>, tensor<1x32x56x56xf32>, tensor<1x100352xf32>
}

// -----
// Propagation through pooling and a concat along C of whole C0 blocks (32 + 16 channels).
// CHECK-LABEL: func.func @pool_concat(
// CHECK:         %p = graph.max_pool %c1 {{.*}} : (tensor<1x2x16x16x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 16, 16]>>) -> tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>
// CHECK:         %c2 = graph.conv %p, %w2 : {{.*}} -> tensor<1x1x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 16, 8, 8]>>
// CHECK-NEXT:    %cat = graph.concat %p, %c2 {axis = 1 : i64} : (tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>, tensor<1x1x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 16, 8, 8]>>) -> tensor<1x3x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 48, 8, 8]>>
// CHECK:         %c3 = graph.conv %cat, %w3 {{.*}} : (tensor<1x3x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 48, 8, 8]>>, tensor<27x1x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [16, 48, 3, 3]>>) -> tensor<1x16x8x8xf32>
// CHECK-NOT:     graph.trans_data
func.func @pool_concat(%x: tensor<1x32x16x16xf32>) -> tensor<1x16x8x8xf32> {
  %w1 = graph.constant dense<0.01> : tensor<32x32x3x3xf32>
  %c1 = graph.conv %x, %w1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x16x16xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x16x16xf32>
  %p = graph.max_pool %c1 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x32x16x16xf32>) -> tensor<1x32x8x8xf32>
  %w2 = graph.constant dense<0.01> : tensor<16x32x1x1xf32>
  %c2 = graph.conv %p, %w2 : (tensor<1x32x8x8xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x8x8xf32>
  %cat = graph.concat %p, %c2 {axis = 1 : i64} : (tensor<1x32x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x48x8x8xf32>
  %w3 = graph.constant dense<0.01> : tensor<16x48x3x3xf32>
  %c3 = graph.conv %cat, %w3 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x48x8x8xf32>, tensor<16x48x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %c3 : tensor<1x16x8x8xf32>
}

// -----
// A per-channel constant [C, 1, 1] is given the result's rank and stored as NC1HWC0 at compile
// time; a scalar stays a plain scalar (it broadcasts over any storage).
// CHECK-LABEL: func.func @per_channel(
// CHECK:         %s = graph.constant dense<2.000000e+00> : tensor<1x2x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 1, 1]>>
// CHECK-NEXT:    %m = graph.mul %c1, %s : (tensor<1x2x16x16x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 16, 16]>>, tensor<1x2x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 1, 1]>>) -> tensor<1x2x16x16x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 16, 16]>>
// CHECK-NEXT:    %h = graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    %a = graph.add %m, %h : (tensor<1x2x16x16x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 16, 16]>>, tensor<f32>) -> tensor<1x2x16x16x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 16, 16]>>
func.func @per_channel(%x: tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32> {
  %w = graph.constant dense<0.01> : tensor<32x32x3x3xf32>
  %c1 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x16x16xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x16x16xf32>
  %s = graph.constant dense<2.0> : tensor<32x1x1xf32>
  %m = graph.mul %c1, %s : (tensor<1x32x16x16xf32>, tensor<32x1x1xf32>) -> tensor<1x32x16x16xf32>
  %h = graph.constant dense<0.5> : tensor<f32>
  %a = graph.add %m, %h : (tensor<1x32x16x16xf32>, tensor<f32>) -> tensor<1x32x16x16xf32>
  %c2 = graph.conv %a, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x16x16xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x16x16xf32>
  func.return %c2 : tensor<1x32x16x16xf32>
}

// -----
// Matrices: the constant weight becomes FRACTAL_NZ; the activation is read as it is (a
// trans_data would cost a launch and the same work).
// CHECK-LABEL: func.func @matmul(
// CHECK-NEXT:    %w = graph.constant dense<1.000000e-02> : tensor<4x16x16x16xf32, #graph.format<FRACTAL_NZ, ND, [256, 64]>>
// CHECK-NEXT:    %y = graph.matmul %x, %w : (tensor<4x128x256xf32>, tensor<4x16x16x16xf32, #graph.format<FRACTAL_NZ, ND, [256, 64]>>) -> tensor<4x128x64xf32>
// CHECK-NEXT:    %b = graph.constant dense<1.000000e-02> : tensor<16x4x16x16xf32, #graph.format<FRACTAL_NZ, ND, [64, 256]>>
// CHECK-NEXT:    %z = graph.gemm %x2, %b {trans_b = 1 : i64} : (tensor<128x256xf32>, tensor<16x4x16x16xf32, #graph.format<FRACTAL_NZ, ND, [64, 256]>>) -> tensor<128x64xf32>
func.func @matmul(%x: tensor<4x128x256xf32>, %x2: tensor<128x256xf32>) -> (tensor<4x128x64xf32>, tensor<128x64xf32>) {
  %w = graph.constant dense<0.01> : tensor<256x64xf32>
  %y = graph.matmul %x, %w : (tensor<4x128x256xf32>, tensor<256x64xf32>) -> tensor<4x128x64xf32>
  %b = graph.constant dense<0.01> : tensor<64x256xf32>
  %z = graph.gemm %x2, %b {trans_b = 1 : i64} : (tensor<128x256xf32>, tensor<64x256xf32>) -> tensor<128x64xf32>
  func.return %y, %z : tensor<4x128x64xf32>, tensor<128x64xf32>
}
