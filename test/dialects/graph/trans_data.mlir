// Round trip of graph.trans_data and of tensors with a #graph.format encoding: the shape is
// the storage shape, the encoding keeps the storage format, the origin format and the origin
// (logical) shape; ops verify on the logical types.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: func.func @formats(
// CHECK-SAME:    %x: tensor<1x20x4x4xf32>, %w: tensor<33x20x3x3xf16>, %m: tensor<2x20x37xf32>)
func.func @formats(%x: tensor<1x20x4x4xf32>, %w: tensor<33x20x3x3xf16>, %m: tensor<2x20x37xf32>) -> (tensor<1x20x4x4xf32>, tensor<1x4x4x20xf32, #graph.format<NHWC, NCHW, [1, 20, 4, 4]>>, tensor<18x3x16x16xf16, #graph.format<FRACTAL_Z, NCHW, [33, 20, 3, 3]>>, tensor<2x3x2x16x16xf32, #graph.format<FRACTAL_NZ, ND, [2, 20, 37]>>) {
  // CHECK-NEXT: %a = graph.trans_data %x {src_format = "NCHW", dst_format = "NC1HWC0"} : (tensor<1x20x4x4xf32>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>
  %a = graph.trans_data %x {src_format = "NCHW", dst_format = "NC1HWC0"} : (tensor<1x20x4x4xf32>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>
  // CHECK-NEXT: %s = graph.constant dense<2.000000e+00> : tensor<1x2x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 1, 1]>>
  %s = graph.constant dense<2.0> : tensor<1x2x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 1, 1]>>
  // CHECK-NEXT: %b = graph.mul %a, %s : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>, tensor<1x2x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 1, 1]>>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>
  %b = graph.mul %a, %s : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>, tensor<1x2x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 1, 1]>>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>
  // CHECK-NEXT: %p = graph.max_pool %b {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>
  %p = graph.max_pool %b {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>
  // CHECK-NEXT: %c = graph.trans_data %p {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) -> tensor<1x20x4x4xf32>
  %c = graph.trans_data %p {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) -> tensor<1x20x4x4xf32>
  // CHECK-NEXT: %h = graph.trans_data %p {src_format = "NC1HWC0", dst_format = "NHWC"} : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) -> tensor<1x4x4x20xf32, #graph.format<NHWC, NCHW, [1, 20, 4, 4]>>
  %h = graph.trans_data %p {src_format = "NC1HWC0", dst_format = "NHWC"} : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) -> tensor<1x4x4x20xf32, #graph.format<NHWC, NCHW, [1, 20, 4, 4]>>
  // CHECK-NEXT: %z = graph.trans_data %w {src_format = "NCHW", dst_format = "FRACTAL_Z"} : (tensor<33x20x3x3xf16>) -> tensor<18x3x16x16xf16, #graph.format<FRACTAL_Z, NCHW, [33, 20, 3, 3]>>
  %z = graph.trans_data %w {src_format = "NCHW", dst_format = "FRACTAL_Z"} : (tensor<33x20x3x3xf16>) -> tensor<18x3x16x16xf16, #graph.format<FRACTAL_Z, NCHW, [33, 20, 3, 3]>>
  // CHECK-NEXT: %n = graph.trans_data %m {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<2x20x37xf32>) -> tensor<2x3x2x16x16xf32, #graph.format<FRACTAL_NZ, ND, [2, 20, 37]>>
  %n = graph.trans_data %m {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<2x20x37xf32>) -> tensor<2x3x2x16x16xf32, #graph.format<FRACTAL_NZ, ND, [2, 20, 37]>>
  func.return %c, %h, %z, %n : tensor<1x20x4x4xf32>, tensor<1x4x4x20xf32, #graph.format<NHWC, NCHW, [1, 20, 4, 4]>>, tensor<18x3x16x16xf16, #graph.format<FRACTAL_Z, NCHW, [33, 20, 3, 3]>>, tensor<2x3x2x16x16xf32, #graph.format<FRACTAL_NZ, ND, [2, 20, 37]>>
}

// Cube ops with fractal operands; C0 is 32 for 1-byte types.
// CHECK-LABEL: func.func @cube(
func.func @cube(%x: tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>, %w: tensor<18x1x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [16, 32, 3, 3]>>, %a: tensor<64x128xf16>, %b: tensor<2x8x16x16xf16, #graph.format<FRACTAL_NZ, ND, [128, 32]>>, %i: tensor<1x40x2x2xi8>) -> (tensor<1x16x6x6xf32>, tensor<2x4x16x16xf16, #graph.format<FRACTAL_NZ, ND, [64, 32]>>, tensor<1x2x2x2x32xi8, #graph.format<NC1HWC0, NCHW, [1, 40, 2, 2]>>) {
  // CHECK-NEXT: %c = graph.conv %x, %w : (tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>, tensor<18x1x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [16, 32, 3, 3]>>) -> tensor<1x16x6x6xf32>
  %c = graph.conv %x, %w : (tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 32, 8, 8]>>, tensor<18x1x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [16, 32, 3, 3]>>) -> tensor<1x16x6x6xf32>
  // CHECK-NEXT: %y = graph.matmul %a, %b : (tensor<64x128xf16>, tensor<2x8x16x16xf16, #graph.format<FRACTAL_NZ, ND, [128, 32]>>) -> tensor<2x4x16x16xf16, #graph.format<FRACTAL_NZ, ND, [64, 32]>>
  %y = graph.matmul %a, %b : (tensor<64x128xf16>, tensor<2x8x16x16xf16, #graph.format<FRACTAL_NZ, ND, [128, 32]>>) -> tensor<2x4x16x16xf16, #graph.format<FRACTAL_NZ, ND, [64, 32]>>
  // CHECK-NEXT: %j = graph.trans_data %i {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<1x40x2x2xi8>) -> tensor<1x2x2x2x32xi8, #graph.format<NC1HWC0, NCHW, [1, 40, 2, 2]>>
  %j = graph.trans_data %i {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<1x40x2x2xi8>) -> tensor<1x2x2x2x32xi8, #graph.format<NC1HWC0, NCHW, [1, 40, 2, 2]>>
  func.return %c, %y, %j : tensor<1x16x6x6xf32>, tensor<2x4x16x16xf16, #graph.format<FRACTAL_NZ, ND, [64, 32]>>, tensor<1x2x2x2x32xi8, #graph.format<NC1HWC0, NCHW, [1, 40, 2, 2]>>
}
