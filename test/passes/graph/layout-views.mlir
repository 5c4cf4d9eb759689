// graph-layout across reshape, flatten, transpose and concat: ops that rearrange elements run
// on ND (a trans_data in front when the blocked format pays for itself elsewhere); a concat
// keeps NC1HWC0 when every block of its result lies in one operand.
// RUN: geir-opt %s -p graph-layout --split-input-file --elide-resources | filecheck %s

// A residual block in NC1HWC0 down to the global pooling; flatten needs ND: one trans_data of
// the pooled 64 values, not of the 3.2 MB activations.
// CHECK-LABEL: func.func @gap_flatten(
// CHECK:         %g = graph.global_avg_pool %a : (tensor<1x4x112x112x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 112, 112]>>) -> tensor<1x4x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 1, 1]>>
// CHECK-NEXT:    %0 = graph.trans_data %g {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<1x4x1x1x16xf32, #graph.format<NC1HWC0, NCHW, [1, 64, 1, 1]>>) -> tensor<1x64x1x1xf32>
// CHECK-NEXT:    %f = graph.flatten %0 : (tensor<1x64x1x1xf32>) -> tensor<1x64xf32>
// CHECK-NEXT:    %fc = graph.constant dense_resource<__elided__> : tensor<4x1x16x16xf32, #graph.format<FRACTAL_NZ, ND, [10, 64]>>
// CHECK-NEXT:    %y = graph.gemm %f, %fc {trans_b = 1 : i64} : (tensor<1x64xf32>, tensor<4x1x16x16xf32, #graph.format<FRACTAL_NZ, ND, [10, 64]>>) -> tensor<1x10xf32>
func.func @gap_flatten(%x: tensor<1x64x112x112xf32>) -> tensor<1x10xf32> {
  %w = graph.constant dense<0.01> : tensor<64x64x3x3xf32>
  %c1 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x112x112xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x112x112xf32>
  %r1 = graph.relu %c1 : (tensor<1x64x112x112xf32>) -> tensor<1x64x112x112xf32>
  %c2 = graph.conv %r1, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x112x112xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x112x112xf32>
  %a = graph.add %c2, %r1 : (tensor<1x64x112x112xf32>, tensor<1x64x112x112xf32>) -> tensor<1x64x112x112xf32>
  %g = graph.global_avg_pool %a : (tensor<1x64x112x112xf32>) -> tensor<1x64x1x1xf32>
  %f = graph.flatten %g : (tensor<1x64x1x1xf32>) -> tensor<1x64xf32>
  %fc = graph.constant dense<0.01> : tensor<10x64xf32>
  %y = graph.gemm %f, %fc {trans_b = 1 : i64} : (tensor<1x64xf32>, tensor<10x64xf32>) -> tensor<1x10xf32>
  func.return %y : tensor<1x10xf32>
}

// -----
// A transpose of H and W between convs: converting 512 KB twice around it costs more than the
// convs re-laying it out in-kernel, so the value stays ND.
// CHECK-LABEL: func.func @transpose(
// CHECK-NOT:     graph.trans_data
// CHECK:         %r1 = graph.relu %c1 : (tensor<1x32x64x64xf32>) -> tensor<1x32x64x64xf32>
// CHECK-NEXT:    %t = graph.transpose %r1 {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x32x64x64xf32>) -> tensor<1x32x64x64xf32>
func.func @transpose(%x: tensor<1x32x64x64xf32>) -> tensor<1x32x64x64xf32> {
  %w = graph.constant dense<0.01> : tensor<32x32x3x3xf32>
  %c1 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x64x64xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x64x64xf32>
  %r1 = graph.relu %c1 : (tensor<1x32x64x64xf32>) -> tensor<1x32x64x64xf32>
  %t = graph.transpose %r1 {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x32x64x64xf32>) -> tensor<1x32x64x64xf32>
  %c2 = graph.conv %t, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x64x64xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x64x64xf32>
  %c3 = graph.conv %r1, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x64x64xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x64x64xf32>
  %s = graph.add %c2, %c3 : (tensor<1x32x64x64xf32>, tensor<1x32x64x64xf32>) -> tensor<1x32x64x64xf32>
  func.return %s : tensor<1x32x64x64xf32>
}

// -----
// A concat along H keeps NC1HWC0 whatever the channel count (24 is not a multiple of C0).
// CHECK-LABEL: func.func @concat_h(
// CHECK:         %cat = graph.concat %a, %b {axis = 2 : i64} : (tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 24, 8, 8]>>, tensor<1x2x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 24, 8, 8]>>) -> tensor<1x2x16x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 24, 16, 8]>>
// CHECK-NEXT:    %c = graph.conv %cat, %{{w(_1)?}} {{.*}} : (tensor<1x2x16x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 24, 16, 8]>>, {{.*}}) -> tensor<1x24x16x8xf32>
func.func @concat_h(%x: tensor<1x24x8x8xf32>) -> tensor<1x24x16x8xf32> {
  %w = graph.constant dense<0.01> : tensor<24x24x3x3xf32>
  %a = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x24x8x8xf32>, tensor<24x24x3x3xf32>) -> tensor<1x24x8x8xf32>
  %b = graph.conv %a, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x24x8x8xf32>, tensor<24x24x3x3xf32>) -> tensor<1x24x8x8xf32>
  %cat = graph.concat %a, %b {axis = 2 : i64} : (tensor<1x24x8x8xf32>, tensor<1x24x8x8xf32>) -> tensor<1x24x16x8xf32>
  %c = graph.conv %cat, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x24x16x8xf32>, tensor<24x24x3x3xf32>) -> tensor<1x24x16x8xf32>
  func.return %c : tensor<1x24x16x8xf32>
}

// -----
// Reshape -> softmax -> reshape between two convs: all ND, the convs re-lay out in-kernel
// (and keep plain weights: FRACTAL_Z is for NC1HWC0 feature maps).
// CHECK-LABEL: func.func @reshape_between(
// CHECK-NOT:     #graph.format
// CHECK:         %r = graph.reshape %c1, %shape : (tensor<1x64x32x32xf32>, tensor<3xi64>) -> tensor<1x64x1024xf32>
// CHECK:         %c2 = graph.conv %r2, %w : (tensor<1x64x32x32xf32>, tensor<64x64x1x1xf32>) -> tensor<1x64x32x32xf32>
// CHECK-NOT:     #graph.format
// CHECK:         func.return
func.func @reshape_between(%x: tensor<1x64x32x32xf32>) -> tensor<1x64x32x32xf32> {
  %w = graph.constant dense<0.01> : tensor<64x64x1x1xf32>
  %c1 = graph.conv %x, %w : (tensor<1x64x32x32xf32>, tensor<64x64x1x1xf32>) -> tensor<1x64x32x32xf32>
  %shape = graph.constant dense<[1, 64, 1024]> : tensor<3xi64>
  %r = graph.reshape %c1, %shape : (tensor<1x64x32x32xf32>, tensor<3xi64>) -> tensor<1x64x1024xf32>
  %sm = graph.softmax %r {axis = -1 : i64} : (tensor<1x64x1024xf32>) -> tensor<1x64x1024xf32>
  %back = graph.constant dense<[1, 64, 32, 32]> : tensor<4xi64>
  %r2 = graph.reshape %sm, %back : (tensor<1x64x1024xf32>, tensor<4xi64>) -> tensor<1x64x32x32xf32>
  %c2 = graph.conv %r2, %w : (tensor<1x64x32x32xf32>, tensor<64x64x1x1xf32>) -> tensor<1x64x32x32xf32>
  func.return %c2 : tensor<1x64x32x32xf32>
}
