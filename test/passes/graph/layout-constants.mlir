// graph-layout converts constant weights at compile time: no trans_data runs on them. The blobs
// show GE's element order: FRACTAL_Z puts W[n, c, h, w] at [c1*kh*kw + h*kw + w, n / 16, n % 16,
// c % C0]; FRACTAL_NZ puts B[m, k] at [k / C0, m / 16, m % 16, k % C0]; padding is zero.
// RUN: geir-opt %s -p graph-layout | filecheck %s

// CHECK-LABEL: func.func @weights(
// CHECK-NEXT:    %w = graph.constant dense_resource<w> : tensor<1x1x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [2, 1, 1, 1]>>
// CHECK-NEXT:    %c = graph.conv %x, %w : (tensor<1x1x4x4xf32>, tensor<1x1x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [2, 1, 1, 1]>>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %b = graph.constant dense_resource<b> : tensor<1x1x16x16xf32, #graph.format<FRACTAL_NZ, ND, [2, 3]>>
// CHECK-NEXT:    %y = graph.matmul %m, %b : (tensor<2x2xf32>, tensor<1x1x16x16xf32, #graph.format<FRACTAL_NZ, ND, [2, 3]>>) -> tensor<2x3xf32>
// CHECK-NOT:     graph.trans_data
// W[0, 0] = 1.0 at element 0, W[1, 0] = 2.0 at element 16 (the next n row of the fractal).
// CHECK:         w: "0x040000000000803F{{(0{120})}}00000040{{(0{1912})}}"
// B rows [1, 2, 3] and [4, 5, 6] at elements 0..2 and 16..18.
// CHECK-NEXT:    b: "0x040000000000803F0000004000004040{{(0{104})}}000080400000A0400000C040{{(0{1896})}}"
func.func @weights(%x: tensor<1x1x4x4xf32>, %m: tensor<2x2xf32>) -> (tensor<1x2x4x4xf32>, tensor<2x3xf32>) {
  %w = graph.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %c = graph.conv %x, %w : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %b = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %y = graph.matmul %m, %b : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %c, %y : tensor<1x2x4x4xf32>, tensor<2x3xf32>
}
