// Round trip of the graph ops for neural networks: convolutions, pooling,
// normalisation, softmax, gemm and matmul.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: func.func @conv(
// CHECK-SAME:    %x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<8xf32>, %dw: tensor<4x1x3x3xf32>) {
func.func @conv(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<8xf32>, %dw: tensor<4x1x3x3xf32>) {
  // CHECK-NEXT: %plain = graph.conv %x, %w : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  %plain = graph.conv %x, %w : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  // CHECK-NEXT: %bias = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %bias = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  // CHECK-NEXT: %strided = graph.conv %x, %w {pads = array<i64: 1, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x4x3xf32>
  %strided = graph.conv %x, %w {pads = array<i64: 1, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x4x3xf32>
  // CHECK-NEXT: %dilated = graph.conv %x, %w {dilations = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x4x4xf32>
  %dilated = graph.conv %x, %w {dilations = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x4x4xf32>
  // CHECK-NEXT: %depthwise = graph.conv %x, %dw {group = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
  %depthwise = graph.conv %x, %dw {group = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @conv_1d_3d(
// CHECK-SAME:    %x1: tensor<2x3x10xf16>, %w1: tensor<6x3x4xf16>, %x3: tensor<1x2x4x4x4xf32>, %w3: tensor<2x2x2x2x2xf32>) {
func.func @conv_1d_3d(%x1: tensor<2x3x10xf16>, %w1: tensor<6x3x4xf16>, %x3: tensor<1x2x4x4x4xf32>, %w3: tensor<2x2x2x2x2xf32>) {
  // CHECK-NEXT: %conv1d = graph.conv %x1, %w1 {strides = array<i64: 2>} : (tensor<2x3x10xf16>, tensor<6x3x4xf16>) -> tensor<2x6x4xf16>
  %conv1d = graph.conv %x1, %w1 {strides = array<i64: 2>} : (tensor<2x3x10xf16>, tensor<6x3x4xf16>) -> tensor<2x6x4xf16>
  // CHECK-NEXT: %conv3d = graph.conv %x3, %w3 : (tensor<1x2x4x4x4xf32>, tensor<2x2x2x2x2xf32>) -> tensor<1x2x3x3x3xf32>
  %conv3d = graph.conv %x3, %w3 : (tensor<1x2x4x4x4xf32>, tensor<2x2x2x2x2xf32>) -> tensor<1x2x3x3x3xf32>
  // CHECK-NEXT: func.return
  func.return
}

// conv_transpose weights are [C, M/group, *K].
// CHECK-LABEL: func.func @conv_transpose(
// CHECK-SAME:    %x: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<2xf32>, %wg: tensor<4x1x2x2xf32>) {
func.func @conv_transpose(%x: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<2xf32>, %wg: tensor<4x1x2x2xf32>) {
  // CHECK-NEXT: %up = graph.conv_transpose %x, %w, %b {strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x11x11xf32>
  %up = graph.conv_transpose %x, %w, %b {strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x11x11xf32>
  // CHECK-NEXT: %padded = graph.conv_transpose %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, output_padding = array<i64: 1, 1>} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x10x10xf32>
  %padded = graph.conv_transpose %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, output_padding = array<i64: 1, 1>} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x10x10xf32>
  // CHECK-NEXT: %grouped = graph.conv_transpose %x, %wg {group = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<4x1x2x2xf32>) -> tensor<1x2x6x6xf32>
  %grouped = graph.conv_transpose %x, %wg {group = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<4x1x2x2xf32>) -> tensor<1x2x6x6xf32>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @pools(
// CHECK-SAME:    %x: tensor<1x3x7x7xf32>) {
func.func @pools(%x: tensor<1x3x7x7xf32>) {
  // CHECK-NEXT: %max = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
  %max = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
  // CHECK-NEXT: %max_ceil = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  %max_ceil = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-NEXT: %max_dilated = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 2, 2>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  %max_dilated = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 2, 2>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  // CHECK-NEXT: %avg = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64} : (tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  %avg = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64} : (tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  // CHECK-NEXT: %avg_ceil = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 3, 3>, ceil_mode = 1 : i64} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
  %avg_ceil = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 3, 3>, ceil_mode = 1 : i64} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
  // CHECK-NEXT: %global_avg = graph.global_avg_pool %x : (tensor<1x3x7x7xf32>) -> tensor<1x3x1x1xf32>
  %global_avg = graph.global_avg_pool %x : (tensor<1x3x7x7xf32>) -> tensor<1x3x1x1xf32>
  // CHECK-NEXT: %global_max = graph.global_max_pool %x : (tensor<1x3x7x7xf32>) -> tensor<1x3x1x1xf32>
  %global_max = graph.global_max_pool %x : (tensor<1x3x7x7xf32>) -> tensor<1x3x1x1xf32>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @norms(
// CHECK-SAME:    %x: tensor<2x3x4x4xf32>, %c: tensor<3xf32>, %seq: tensor<2x5x8xf32>, %h: tensor<8xf32>, %hw: tensor<5x8xf32>, %seq16: tensor<2x5x8xf16>, %h16: tensor<1x8xf16>, %row: tensor<2x1x8xf32>, %pos: tensor<1xi64>, %pos0: tensor<i64>) {
func.func @norms(%x: tensor<2x3x4x4xf32>, %c: tensor<3xf32>, %seq: tensor<2x5x8xf32>, %h: tensor<8xf32>, %hw: tensor<5x8xf32>, %seq16: tensor<2x5x8xf16>, %h16: tensor<1x8xf16>, %row: tensor<2x1x8xf32>, %pos: tensor<1xi64>, %pos0: tensor<i64>) {
  // CHECK-NEXT: %batch_norm = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 1.000000e-03 : f32} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  %batch_norm = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 1.000000e-03 : f32} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  // CHECK-NEXT: %batch_norm_default = graph.batch_norm %x, %c, %c, %c, %c : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  %batch_norm_default = graph.batch_norm %x, %c, %c, %c, %c : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  // CHECK-NEXT: %instance_norm = graph.instance_norm %x, %c, %c : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  %instance_norm = graph.instance_norm %x, %c, %c : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  // CHECK-NEXT: %layer_norm = graph.layer_norm %seq, %h, %h {epsilon = 1.000000e-05 : f32} : (tensor<2x5x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  %layer_norm = graph.layer_norm %seq, %h, %h {epsilon = 1.000000e-05 : f32} : (tensor<2x5x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  // CHECK-NEXT: %layer_norm_2d = graph.layer_norm %seq, %hw {axis = 1 : i64} : (tensor<2x5x8xf32>, tensor<5x8xf32>) -> tensor<2x5x8xf32>
  %layer_norm_2d = graph.layer_norm %seq, %hw {axis = 1 : i64} : (tensor<2x5x8xf32>, tensor<5x8xf32>) -> tensor<2x5x8xf32>
  // CHECK-NEXT: %rms_norm = graph.rms_norm %seq, %h {epsilon = 1.000000e-06 : f32} : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  %rms_norm = graph.rms_norm %seq, %h {epsilon = 1.0e-06 : f32} : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  // CHECK-NEXT: %rms_norm_2d = graph.rms_norm %seq, %hw {axis = -2 : i64} : (tensor<2x5x8xf32>, tensor<5x8xf32>) -> tensor<2x5x8xf32>
  %rms_norm_2d = graph.rms_norm %seq, %hw {axis = -2 : i64} : (tensor<2x5x8xf32>, tensor<5x8xf32>) -> tensor<2x5x8xf32>
  // CHECK-NEXT: %rms_norm_f16 = graph.rms_norm %seq16, %h16 : (tensor<2x5x8xf16>, tensor<1x8xf16>) -> tensor<2x5x8xf16>
  %rms_norm_f16 = graph.rms_norm %seq16, %h16 : (tensor<2x5x8xf16>, tensor<1x8xf16>) -> tensor<2x5x8xf16>
  // CHECK-NEXT: %rope = graph.rotary_embedding %seq, %hw, %hw : (tensor<2x5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<2x5x8xf32>
  %rope = graph.rotary_embedding %seq, %hw, %hw : (tensor<2x5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<2x5x8xf32>
  // CHECK-NEXT: %rope_pairs = graph.rotary_embedding %seq, %seq, %seq {interleaved = 1 : i64} : (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %rope_pairs = graph.rotary_embedding %seq, %seq, %seq {interleaved = 1 : i64} : (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  // CHECK-NEXT: %cache = graph.kv_cache_write %seq, %row, %pos : (tensor<2x5x8xf32>, tensor<2x1x8xf32>, tensor<1xi64>) -> tensor<2x5x8xf32>
  %cache = graph.kv_cache_write %seq, %row, %pos : (tensor<2x5x8xf32>, tensor<2x1x8xf32>, tensor<1xi64>) -> tensor<2x5x8xf32>
  // CHECK-NEXT: %cache_rows = graph.kv_cache_write %seq, %seq, %pos0 {axis = 1 : i64} : (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<i64>) -> tensor<2x5x8xf32>
  %cache_rows = graph.kv_cache_write %seq, %seq, %pos0 {axis = 1 : i64} : (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<i64>) -> tensor<2x5x8xf32>
  // CHECK-NEXT: %lrn = graph.lrn %x {size = 3 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 2.000000e+00 : f32} : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %lrn = graph.lrn %x {size = 3 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 2.000000e+00 : f32} : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  // CHECK-NEXT: %lrn_default = graph.lrn %x {size = 5 : i64} : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %lrn_default = graph.lrn %x {size = 5 : i64} : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:    %x: tensor<2x10xf32>, %y: tensor<2x3x4xf16>) {
func.func @softmax(%x: tensor<2x10xf32>, %y: tensor<2x3x4xf16>) {
  // CHECK-NEXT: %softmax = graph.softmax %x : (tensor<2x10xf32>) -> tensor<2x10xf32>
  %softmax = graph.softmax %x : (tensor<2x10xf32>) -> tensor<2x10xf32>
  // CHECK-NEXT: %softmax_axis = graph.softmax %y {axis = 1 : i64} : (tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
  %softmax_axis = graph.softmax %y {axis = 1 : i64} : (tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
  // CHECK-NEXT: %safe_softmax = graph.safe_softmax %y {axis = -1 : i64} : (tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
  %safe_softmax = graph.safe_softmax %y {axis = -1 : i64} : (tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
  // CHECK-NEXT: %log_softmax = graph.log_softmax %x {axis = -1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  %log_softmax = graph.log_softmax %x {axis = -1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  // CHECK-NEXT: %log_softmax_axis0 = graph.log_softmax %y {axis = 0 : i64} : (tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
  %log_softmax_axis0 = graph.log_softmax %y {axis = 0 : i64} : (tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @gemm(
// CHECK-SAME:    %a: tensor<4x8xf32>, %at: tensor<8x4xf32>, %b: tensor<8x16xf32>, %bt: tensor<16x8xf32>, %c: tensor<16xf32>) {
func.func @gemm(%a: tensor<4x8xf32>, %at: tensor<8x4xf32>, %b: tensor<8x16xf32>, %bt: tensor<16x8xf32>, %c: tensor<16xf32>) {
  // CHECK-NEXT: %gemm = graph.gemm %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %gemm = graph.gemm %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  // CHECK-NEXT: %gemm_c = graph.gemm %a, %bt, %c {trans_b = 1 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %gemm_c = graph.gemm %a, %bt, %c {trans_b = 1 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // CHECK-NEXT: %gemm_all = graph.gemm %at, %bt, %c {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_a = 1 : i64, trans_b = 1 : i64} : (tensor<8x4xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %gemm_all = graph.gemm %at, %bt, %c {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_a = 1 : i64, trans_b = 1 : i64} : (tensor<8x4xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // CHECK-NEXT: func.return
  func.return
}

// matmul follows numpy: batch dims broadcast, 1-D operands are promoted.
// CHECK-LABEL: func.func @matmul(
// CHECK-SAME:    %a: tensor<2x1x4x8xf32>, %b: tensor<3x8x5xf32>, %v: tensor<8xf32>, %m: tensor<8x5xf32>) {
func.func @matmul(%a: tensor<2x1x4x8xf32>, %b: tensor<3x8x5xf32>, %v: tensor<8xf32>, %m: tensor<8x5xf32>) {
  // CHECK-NEXT: %batched = graph.matmul %a, %b : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32>
  %batched = graph.matmul %a, %b : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32>
  // CHECK-NEXT: %vec_mat = graph.matmul %v, %m : (tensor<8xf32>, tensor<8x5xf32>) -> tensor<5xf32>
  %vec_mat = graph.matmul %v, %m : (tensor<8xf32>, tensor<8x5xf32>) -> tensor<5xf32>
  // CHECK-NEXT: %mat_vec = graph.matmul %a, %v : (tensor<2x1x4x8xf32>, tensor<8xf32>) -> tensor<2x1x4xf32>
  %mat_vec = graph.matmul %a, %v : (tensor<2x1x4x8xf32>, tensor<8xf32>) -> tensor<2x1x4xf32>
  // CHECK-NEXT: %dot = graph.matmul %v, %v : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  %dot = graph.matmul %v, %v : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  // CHECK-NEXT: func.return
  func.return
}
