// graph-layout converts constant weights at compile time: no trans_data runs on them. The blobs
// show GE's element order: FRACTAL_Z puts W[n, c, h, w] at [c1*kh*kw + h*kw + w, n / 16, n % 16,
// c % C0]; FRACTAL_NZ puts B[m, k] at [k / C0, m / 16, m % 16, k % C0]; padding is zero.
// (FRACTAL_Z is for convs reading NC1HWC0, here the output of %p.)
// RUN: geir-opt %s -p graph-layout | filecheck %s

// CHECK-LABEL: func.func @weights(
// CHECK:         %p = graph.conv %x, %w0 {{.*}} -> tensor<1x1x64x64x16xf32, #graph.format<NC1HWC0, NCHW, [1, 16, 64, 64]>>
// CHECK-NEXT:    %w = graph.constant dense_resource<w> : tensor<1x1x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [2, 16, 1, 1]>>
// CHECK-NEXT:    %c = graph.conv %p, %w : (tensor<1x1x64x64x16xf32, #graph.format<NC1HWC0, NCHW, [1, 16, 64, 64]>>, tensor<1x1x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [2, 16, 1, 1]>>) -> tensor<1x2x64x64xf32>
// CHECK-NEXT:    %b = graph.constant dense_resource<b> : tensor<1x1x16x16xf32, #graph.format<FRACTAL_NZ, ND, [2, 3]>>
// CHECK-NEXT:    %y = graph.matmul %m, %b : (tensor<2x2xf32>, tensor<1x1x16x16xf32, #graph.format<FRACTAL_NZ, ND, [2, 3]>>) -> tensor<2x3xf32>
// CHECK-NOT:     graph.trans_data
// W[0, 0] = 1.0 at element 0, W[1, 0] = 2.0 at element 16 (the next n row of the fractal).
// CHECK:         w: "0x040000000000803F{{(0{120})}}00000040{{(0{1912})}}"
// B rows [1, 2, 3] and [4, 5, 6] at elements 0..2 and 16..18.
// CHECK-NEXT:    b: "0x040000000000803F0000004000004040{{(0{104})}}000080400000A0400000C040{{(0{1896})}}"
func.func @weights(%x: tensor<1x16x64x64xf32>, %m: tensor<2x2xf32>) -> (tensor<1x2x64x64xf32>, tensor<2x3xf32>) {
  %w0 = graph.constant dense<0.5> : tensor<16x16x3x3xf32>
  %p = graph.conv %x, %w0 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x64x64xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x64x64xf32>
  %w = graph.constant dense<[[[[1.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]]], [[[2.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]]]]> : tensor<2x16x1x1xf32>
  %c = graph.conv %p, %w : (tensor<1x16x64x64xf32>, tensor<2x16x1x1xf32>) -> tensor<1x2x64x64xf32>
  %b = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %y = graph.matmul %m, %b : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %c, %y : tensor<1x2x64x64xf32>, tensor<2x3xf32>
}
