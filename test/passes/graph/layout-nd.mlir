// graph-layout: what must stay ND. Weights are still converted (at compile time, for free);
// activations keep their plain layout where a blocked format is impossible or does not pay.
// RUN: geir-opt %s -p graph-layout --split-input-file --elide-resources | filecheck %s
// RUN: geir-opt %s -p 'graph-layout{min-channels=1}' --split-input-file --elide-resources | filecheck %s --check-prefix=COST

// The first conv's 3 input channels: NC1HWC0 would pad them to 16 (5.3x the bytes). Below
// min-channels (4) they never get a blocked format; with min-channels=1 the cost model alone
// keeps them ND too (reading NCHW inside the conv is cheaper than a trans_data kernel). The
// weights stay plain as well: FRACTAL_Z pads K per channel block (16 x 7 x 7 = 784 for 3
// channels), plain weights once (3 x 7 x 7 = 147 -> 160), 4.9x fewer cube steps.
// CHECK-LABEL: func.func @first_conv(
// CHECK-NEXT:    %w = graph.constant dense<1.000000e-02> : tensor<64x3x7x7xf32>
// CHECK-NEXT:    %c = graph.conv %x, %w {{.*}} : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>) -> tensor<1x64x112x112xf32>
// CHECK-NEXT:    %r = graph.relu %c : (tensor<1x64x112x112xf32>) -> tensor<1x64x112x112xf32>
// COST-LABEL:  func.func @first_conv(
// COST:          graph.conv %x, %w {{.*}} : (tensor<1x3x224x224xf32>, {{.*}}) -> tensor<1x64x112x112xf32>
// COST-NOT:      graph.trans_data
func.func @first_conv(%x: tensor<1x3x224x224xf32>) -> tensor<1x64x112x112xf32> {
  %w = graph.constant dense<0.01> : tensor<64x3x7x7xf32>
  %c = graph.conv %x, %w {pads = array<i64: 3, 3, 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>) -> tensor<1x64x112x112xf32>
  %r = graph.relu %c : (tensor<1x64x112x112xf32>) -> tensor<1x64x112x112xf32>
  func.return %r : tensor<1x64x112x112xf32>
}

// -----
// A concat along C of 24 + 8 channels: the blocks of the result would straddle its operands,
// so the concat runs on ND and the convs around it read and write ND.
// CHECK-LABEL: func.func @unaligned_concat(
// CHECK:         %a = graph.conv %x, %w1 : ({{.*}}) -> tensor<1x24x16x16xf32>
// CHECK:         %b = graph.conv %x, %w2 : ({{.*}}) -> tensor<1x8x16x16xf32>
// CHECK-NEXT:    %cat = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x24x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x32x16x16xf32>
// CHECK:         %c = graph.conv %cat, %w3 {{.*}} : (tensor<1x32x16x16xf32>, {{.*}}) -> tensor<1x16x16x16xf32>
func.func @unaligned_concat(%x: tensor<1x32x16x16xf32>) -> tensor<1x16x16x16xf32> {
  %w1 = graph.constant dense<0.01> : tensor<24x32x1x1xf32>
  %a = graph.conv %x, %w1 : (tensor<1x32x16x16xf32>, tensor<24x32x1x1xf32>) -> tensor<1x24x16x16xf32>
  %w2 = graph.constant dense<0.01> : tensor<8x32x1x1xf32>
  %b = graph.conv %x, %w2 : (tensor<1x32x16x16xf32>, tensor<8x32x1x1xf32>) -> tensor<1x8x16x16xf32>
  %cat = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x24x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x32x16x16xf32>
  %w3 = graph.constant dense<0.01> : tensor<16x32x3x3xf32>
  %c = graph.conv %cat, %w3 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x16x16xf32>, tensor<16x32x3x3xf32>) -> tensor<1x16x16x16xf32>
  func.return %c : tensor<1x16x16x16xf32>
}

// -----
// A depthwise conv stays ND, operands and result: no grouped-conv kernel reads NC1HWC0 yet
// (the formats an op may take are those its kernels take, as GE's op info says), and the
// convs around it then gain nothing from NC1HWC0 activations either; their weights stay plain
// too (FRACTAL_Z is the K order of NC1HWC0 feature maps, and plain weights are read at full
// rate as the [Cout, K] matrix they are).
// CHECK-LABEL: func.func @depthwise(
// CHECK-NOT:     #graph.format
// CHECK:         %b = graph.conv %a, %w2 {group = 32 : i64, {{.*}}} : (tensor<1x32x16x16xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x16x16xf32>
// CHECK-NOT:     #graph.format
// CHECK:         func.return
func.func @depthwise(%x: tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32> {
  %w1 = graph.constant dense<0.01> : tensor<32x32x1x1xf32>
  %a = graph.conv %x, %w1 : (tensor<1x32x16x16xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x16x16xf32>
  %w2 = graph.constant dense<0.01> : tensor<32x1x3x3xf32>
  %b = graph.conv %a, %w2 {group = 32 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x16x16xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x16x16xf32>
  %c = graph.conv %b, %w1 : (tensor<1x32x16x16xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x16x16xf32>
  func.return %c : tensor<1x32x16x16xf32>
}

// -----
// No blocked format exists: a 1-D conv, an f64 conv (no cube type), integer tensors.
// CHECK-LABEL: func.func @not_blocked(
// CHECK-NOT:     #graph.format
// CHECK:         func.return
func.func @not_blocked(%x: tensor<1x16x32xf32>, %y: tensor<1x16x8x8xf64>, %i: tensor<2x16x4x4xi32>) -> (tensor<1x16x30xf32>, tensor<1x16x8x8xf64>, tensor<2x16x4x4xi32>) {
  %w = graph.constant dense<0.01> : tensor<16x16x3xf32>
  %c = graph.conv %x, %w : (tensor<1x16x32xf32>, tensor<16x16x3xf32>) -> tensor<1x16x30xf32>
  %w64 = graph.constant dense<0.01> : tensor<16x16x1x1xf64>
  %d = graph.conv %y, %w64 : (tensor<1x16x8x8xf64>, tensor<16x16x1x1xf64>) -> tensor<1x16x8x8xf64>
  %j = graph.relu %i : (tensor<2x16x4x4xi32>) -> tensor<2x16x4x4xi32>
  func.return %c, %d, %j : tensor<1x16x30xf32>, tensor<1x16x8x8xf64>, tensor<2x16x4x4xi32>
}

// -----
// Small tensors between convs and an op that only runs on ND (softmax over C): a trans_data
// kernel would cost more than the convs re-laying out 8 KB inside their own kernels.
// CHECK-LABEL: func.func @small(
// CHECK-NOT:     graph.trans_data
// CHECK:         %c1 = graph.conv %x, %w {{.*}} -> tensor<1x32x8x8xf32>
// CHECK-NEXT:    %s = graph.softmax %c1 {axis = 1 : i64} : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
// CHECK-NEXT:    %c2 = graph.conv %s, %w {{.*}} : (tensor<1x32x8x8xf32>, {{.*}}) -> tensor<1x32x8x8xf32>
func.func @small(%x: tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32> {
  %w = graph.constant dense<0.01> : tensor<32x32x3x3xf32>
  %c1 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x8x8xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x8x8xf32>
  %s = graph.softmax %c1 {axis = 1 : i64} : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %c2 = graph.conv %s, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x8x8xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x8x8xf32>
  func.return %c2 : tensor<1x32x8x8xf32>
}

// -----
// A gemm with an epilogue (its bias, the relu fused after it) writes ND even though the next
// gemm would read FRACTAL_NZ: the cube kernel writes an NZ result only as the fractals l0c
// holds, with no epilogue (the formats an op may take are those its kernels take).
// CHECK-LABEL: func.func @nz_epilogue(
// CHECK:         %f = graph.fusion "cube+vector" {{.*}} -> tensor<1x1024xf32> {
// CHECK:         %y = graph.gemm %f, %w2 {{.*}} : (tensor<1x1024xf32>, tensor<64x63x16x16xf32, #graph.format<FRACTAL_NZ, ND, [1000, 1024]>>) -> tensor<1x1000xf32>
// CHECK-NOT:     graph.trans_data
func.func @nz_epilogue(%x: tensor<1x4096xf32>) -> tensor<1x1000xf32> {
  %w1 = graph.constant dense<0.01> : tensor<1024x4096xf32>
  %b1 = graph.constant dense<0.5> : tensor<1024xf32>
  %f = graph.fusion "cube+vector" (%x, %w1, %b1) : (tensor<1x4096xf32>, tensor<1024x4096xf32>, tensor<1024xf32>) -> tensor<1x1024xf32> {
  ^bb0(%a: tensor<1x4096xf32>, %w: tensor<1024x4096xf32>, %b: tensor<1024xf32>):
    %g = graph.gemm %a, %w, %b {trans_b = 1 : i64} : (tensor<1x4096xf32>, tensor<1024x4096xf32>, tensor<1024xf32>) -> tensor<1x1024xf32>
    %r = graph.relu %g : (tensor<1x1024xf32>) -> tensor<1x1024xf32>
    graph.yield %r : tensor<1x1024xf32>
  }
  %w2 = graph.constant dense<0.01> : tensor<1000x1024xf32>
  %y = graph.gemm %f, %w2 {trans_b = 1 : i64} : (tensor<1x1024xf32>, tensor<1000x1024xf32>) -> tensor<1x1000xf32>
  func.return %y : tensor<1x1000xf32>
}

// -----
// LLaMA's MLP on a [batch, sequence, hidden] activation: the gate and up projections, the
// fused silu(g) * u, the down projection. The matmul kernels fold a 3-D activation to
// [batch * sequence, hidden] rows and read and write it in ND, so the products, the fusion
// between them and the down projection's input stay ND: as 3-D FRACTAL_NZ tensors they would
// need trans_data kernels on both sides at run time (and the weights converted back with
// them). The 2-D weights are still converted to FRACTAL_NZ at compile time.
// CHECK-LABEL: func.func @mlp_3d(
// CHECK:         %g = graph.matmul %x, %wg : (tensor<8x128x768xf16>, tensor<128x48x16x16xf16, #graph.format<FRACTAL_NZ, ND, [768, 2048]>>) -> tensor<8x128x2048xf16>
// CHECK-NEXT:    %u = graph.matmul %x, %wu : (tensor<8x128x768xf16>, tensor<128x48x16x16xf16, #graph.format<FRACTAL_NZ, ND, [768, 2048]>>) -> tensor<8x128x2048xf16>
// CHECK-NEXT:    %h = graph.fusion "vector" (%g, %u) {{.*}} : (tensor<8x128x2048xf16>, tensor<8x128x2048xf16>) -> tensor<8x128x2048xf16>
// CHECK:         %y = graph.fusion "cube+vector" (%h, %wd) {{.*}} : (tensor<8x128x2048xf16>, tensor<48x128x16x16xf16, #graph.format<FRACTAL_NZ, ND, [2048, 768]>>) -> tensor<8x128x768xf32>
// CHECK-NOT:     graph.trans_data
// COST-LABEL:  func.func @mlp_3d(
// COST-NOT:      graph.trans_data
func.func @mlp_3d(%x: tensor<8x128x768xf16>) -> tensor<8x128x768xf32> {
  %wg = graph.constant dense<0.01> : tensor<768x2048xf16>
  %wu = graph.constant dense<0.02> : tensor<768x2048xf16>
  %wd = graph.constant dense<0.03> : tensor<2048x768xf16>
  %g = graph.matmul %x, %wg : (tensor<8x128x768xf16>, tensor<768x2048xf16>) -> tensor<8x128x2048xf16>
  %u = graph.matmul %x, %wu : (tensor<8x128x768xf16>, tensor<768x2048xf16>) -> tensor<8x128x2048xf16>
  %h = graph.fusion "vector" (%g, %u) attributes {graph.pattern = "elementwise"} : (tensor<8x128x2048xf16>, tensor<8x128x2048xf16>) -> tensor<8x128x2048xf16> {
  ^bb0(%g1: tensor<8x128x2048xf16>, %u1: tensor<8x128x2048xf16>):
    %s = graph.sigmoid %g1 : (tensor<8x128x2048xf16>) -> tensor<8x128x2048xf16>
    %silu = graph.mul %g1, %s : (tensor<8x128x2048xf16>, tensor<8x128x2048xf16>) -> tensor<8x128x2048xf16>
    %h1 = graph.mul %silu, %u1 : (tensor<8x128x2048xf16>, tensor<8x128x2048xf16>) -> tensor<8x128x2048xf16>
    graph.yield %h1 : tensor<8x128x2048xf16>
  }
  %y = graph.fusion "cube+vector" (%h, %wd) attributes {graph.pattern = "matmul-epilogue"} : (tensor<8x128x2048xf16>, tensor<2048x768xf16>) -> tensor<8x128x768xf32> {
  ^bb0(%h2: tensor<8x128x2048xf16>, %wd1: tensor<2048x768xf16>):
    %d = graph.matmul %h2, %wd1 : (tensor<8x128x2048xf16>, tensor<2048x768xf16>) -> tensor<8x128x768xf16>
    %d32 = graph.cast %d {to = f32} : (tensor<8x128x768xf16>) -> tensor<8x128x768xf32>
    graph.yield %d32 : tensor<8x128x768xf32>
  }
  func.return %y : tensor<8x128x768xf32>
}
