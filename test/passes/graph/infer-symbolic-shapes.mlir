// graph-infer-symbolic-shapes: shapes in the symbols of the extent arguments, one op family
// per chunk; `?` marks a symbolic dim, geir.dims says which. graph-bind-symbols gives each
// symbol its range's top again.
// RUN: geir-opt %s --split-input-file -p graph-infer-symbolic-shapes | filecheck %s
// RUN: geir-opt %s --split-input-file -p graph-infer-symbolic-shapes,graph-infer-symbolic-shapes | filecheck %s
// RUN: geir-opt %s --split-input-file -p graph-infer-symbolic-shapes,graph-bind-symbols | filecheck %s --check-prefix=BOUND

// Elementwise: numpy broadcasting, a static 1 against a symbol. x and mask share `batch`.
// CHECK-LABEL: func.func @elementwise(
// CHECK-SAME:    %x: tensor<?x?x768xf32>
// CHECK-SAME:    %mask: tensor<?x?x1xf32>
// CHECK:         %0 = graph.add %x, %b attributes {geir.dims = [["batch", "seq", 768 : i64]]} : (tensor<?x?x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
// CHECK-NEXT:    %1 = graph.mul %0, %mask attributes {geir.dims = [["batch", "seq", 768 : i64]]} : (tensor<?x?x768xf32>, tensor<?x?x1xf32>) -> tensor<?x?x768xf32>
// CHECK-NEXT:    %2 = graph.relu %1 attributes {geir.dims = [["batch", "seq", 768 : i64]]}
// BOUND-LABEL: func.func @elementwise(
// BOUND-SAME:    %x: tensor<8x512x768xf32>
// BOUND-SAME:    %mask: tensor<8x512x1xf32>
// BOUND:         %0 = graph.add %x, %b : (tensor<8x512x768xf32>, tensor<768xf32>) -> tensor<8x512x768xf32>
// BOUND-NOT:     geir.dims
func.func @elementwise(%x: tensor<8x512x768xf32> {onnx.name = "x"}, %mask: tensor<8x512x1xf32> {onnx.name = "mask"},
                       %b: tensor<768xf32> {onnx.name = "b"},
                       %batch: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["x", 0], ["mask", 0]], geir.range = [1, 8]},
                       %seq: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 1], ["mask", 1]], geir.range = [1, 512]}) -> tensor<8x512x768xf32> {
  %0 = graph.add %x, %b : (tensor<8x512x768xf32>, tensor<768xf32>) -> tensor<8x512x768xf32>
  %1 = graph.mul %0, %mask : (tensor<8x512x768xf32>, tensor<8x512x1xf32>) -> tensor<8x512x768xf32>
  %2 = graph.relu %1 : (tensor<8x512x768xf32>) -> tensor<8x512x768xf32>
  func.return %2 : tensor<8x512x768xf32>
}

// -----

// Shape arithmetic: Shape -> Gather -> Mul -> Concat gives a reshape target in the symbols
// (the heads split as [batch, seq, 12, 64]); a -1 is the exact quotient (batch*seq rows).
// CHECK-LABEL: func.func @reshape(
// CHECK:         %heads = graph.reshape %x, %t attributes {geir.dims = [["batch", "seq", 12 : i64, 64 : i64]]} : (tensor<?x?x768xf32>, tensor<4xi64>) -> tensor<?x?x12x64xf32>
// CHECK:         %rows = graph.reshape %x, %flat attributes {geir.dims = [["batch*seq", 768 : i64]]} : (tensor<?x?x768xf32>, tensor<2xi64>) -> tensor<?x768xf32>
// CHECK:         %merged = graph.reshape %x, %m attributes {geir.dims = [["12*seq", "batch", 64 : i64]]}
// CHECK:         %f = graph.flatten %heads {axis = 2 : i64} attributes {geir.dims = [["batch*seq", 768 : i64]]}
// BOUND-LABEL: func.func @reshape(
// BOUND:         %rows = graph.reshape %x, %flat : (tensor<8x512x768xf32>, tensor<2xi64>) -> tensor<4096x768xf32>
// BOUND:         %merged = graph.reshape %x, %m : (tensor<8x512x768xf32>, tensor<3xi64>) -> tensor<6144x8x64xf32>
func.func @reshape(%x: tensor<8x512x768xf32> {onnx.name = "x"},
                   %batch: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["x", 0]], geir.range = [1, 8]},
                   %seq: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 1]], geir.range = [1, 512]}) -> (tensor<8x512x12x64xf32>, tensor<4096x768xf32>, tensor<6144x8x64xf32>, tensor<4096x768xf32>) {
  %s = graph.shape %x : (tensor<8x512x768xf32>) -> tensor<3xi64>
  %i0 = graph.constant dense<0> : tensor<1xi64>
  %i1 = graph.constant dense<1> : tensor<1xi64>
  %b = graph.gather %s, %i0 {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  %n = graph.gather %s, %i1 {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  %hd = graph.constant dense<[12, 64]> : tensor<2xi64>
  %t = graph.concat %b, %n, %hd {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<2xi64>) -> tensor<4xi64>
  %heads = graph.reshape %x, %t : (tensor<8x512x768xf32>, tensor<4xi64>) -> tensor<8x512x12x64xf32>
  %flat = graph.constant dense<[-1, 768]> : tensor<2xi64>
  %rows = graph.reshape %x, %flat : (tensor<8x512x768xf32>, tensor<2xi64>) -> tensor<4096x768xf32>
  %twelve = graph.constant dense<12> : tensor<1xi64>
  %n12 = graph.mul %n, %twelve : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %rest = graph.constant dense<[-1, 64]> : tensor<2xi64>
  %m = graph.concat %n12, %rest {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
  %merged = graph.reshape %x, %m : (tensor<8x512x768xf32>, tensor<3xi64>) -> tensor<6144x8x64xf32>
  %f = graph.flatten %heads {axis = 2 : i64} : (tensor<8x512x12x64xf32>) -> tensor<4096x768xf32>
  func.return %heads, %rows, %merged, %f : tensor<8x512x12x64xf32>, tensor<4096x768xf32>, tensor<6144x8x64xf32>, tensor<4096x768xf32>
}

// -----

// Contractions: a projection keeps the rows; the scores' product gives seq x seq; the
// attention op q's rows and v's head dim; a conv and its pools keep the batch; a range of one
// size proves a contracted dim static (k: 64~64).
// CHECK-LABEL: func.func @contractions(
// CHECK:         %p = graph.matmul %x, %w attributes {geir.dims = [["batch", "seq", 3072 : i64]]}
// CHECK-NEXT:    %s = graph.matmul %q, %kt attributes {geir.dims = [["batch", 12 : i64, "seq", "seq"]]} : (tensor<?x12x?x64xf32>, tensor<?x12x64x?xf32>) -> tensor<?x12x?x?xf32>
// CHECK-NEXT:    %a = graph.attention %q, %k, %q {{.*}}attributes {geir.dims = [["batch", 12 : i64, "seq", 64 : i64]]}
// CHECK-NEXT:    %g = graph.gemm %r, %wk {{.*}}attributes {geir.dims = [["k", 10 : i64]]} : (tensor<?x?xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
func.func @contractions(%x: tensor<8x512x768xf32> {onnx.name = "x"}, %w: tensor<768x3072xf32> {onnx.name = "w"},
                        %q: tensor<8x12x512x64xf32> {onnx.name = "q"}, %kt: tensor<8x12x64x512xf32> {onnx.name = "kt"},
                        %k: tensor<8x12x512x64xf32> {onnx.name = "k"},
                        %r: tensor<64x64xf32> {onnx.name = "r"}, %wk: tensor<64x10xf32> {onnx.name = "wk"},
                        %batch: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["x", 0], ["q", 0], ["kt", 0], ["k", 0]], geir.range = [1, 8]},
                        %seq: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 1], ["q", 2], ["kt", 3], ["k", 2]], geir.range = [1, 512]},
                        %kd: tensor<1xi64> {onnx.name = "k.extent", geir.extent = [["r", 0], ["r", 1], ["wk", 0]], geir.range = [64, 64]}) -> (tensor<8x512x3072xf32>, tensor<8x12x512x512xf32>, tensor<8x12x512x64xf32>, tensor<64x10xf32>) {
  %p = graph.matmul %x, %w : (tensor<8x512x768xf32>, tensor<768x3072xf32>) -> tensor<8x512x3072xf32>
  %s = graph.matmul %q, %kt : (tensor<8x12x512x64xf32>, tensor<8x12x64x512xf32>) -> tensor<8x12x512x512xf32>
  %a = graph.attention %q, %k, %q {causal = 1 : i64, scale = 0.125 : f32} : (tensor<8x12x512x64xf32>, tensor<8x12x512x64xf32>, tensor<8x12x512x64xf32>) -> tensor<8x12x512x64xf32>
  %g = graph.gemm %r, %wk : (tensor<64x64xf32>, tensor<64x10xf32>) -> tensor<64x10xf32>
  func.return %p, %s, %a, %g : tensor<8x512x3072xf32>, tensor<8x12x512x512xf32>, tensor<8x12x512x64xf32>, tensor<64x10xf32>
}

// -----

// A CNN over a batch range: convolutions, pools and the classifier keep the batch.
// CHECK-LABEL: func.func @cnn(
// CHECK:         %c = graph.conv %x, %w {{.*}}attributes {geir.dims = [["batch", 16 : i64, 16 : i64, 16 : i64]]} : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x16x16xf32>
// CHECK-NEXT:    %m = graph.max_pool %c {{.*}}attributes {geir.dims = [["batch", 16 : i64, 8 : i64, 8 : i64]]}
// CHECK-NEXT:    %p = graph.global_avg_pool %m attributes {geir.dims = [["batch", 16 : i64, 1 : i64, 1 : i64]]}
// CHECK-NEXT:    %f = graph.flatten %p {axis = 1 : i64} attributes {geir.dims = [["batch", 16 : i64]]}
// CHECK-NEXT:    %y = graph.gemm %f, %fc {{.*}}attributes {geir.dims = [["batch", 10 : i64]]}
func.func @cnn(%x: tensor<32x3x32x32xf32> {onnx.name = "x"}, %w: tensor<16x3x3x3xf32> {onnx.name = "w"}, %fc: tensor<16x10xf32> {onnx.name = "fc"},
               %batch: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["x", 0]], geir.range = [1, 32]}) -> tensor<32x10xf32> {
  %c = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<32x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<32x16x16x16xf32>
  %m = graph.max_pool %c {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<32x16x16x16xf32>) -> tensor<32x16x8x8xf32>
  %p = graph.global_avg_pool %m : (tensor<32x16x8x8xf32>) -> tensor<32x16x1x1xf32>
  %f = graph.flatten %p {axis = 1 : i64} : (tensor<32x16x1x1xf32>) -> tensor<32x16xf32>
  %y = graph.gemm %f, %fc : (tensor<32x16xf32>, tensor<16x10xf32>) -> tensor<32x10xf32>
  func.return %y : tensor<32x10xf32>
}

// -----

// Rows: reductions over other axes, softmax and norms keep the symbols; a reduction over
// the sequence drops it (keepdims keeps a 1).
// CHECK-LABEL: func.func @rows(
// CHECK:         %n = graph.layer_norm %x, %g {{.*}}attributes {geir.dims = [["batch", "seq", 768 : i64]]}
// CHECK-NEXT:    %s = graph.softmax %n {{.*}}attributes {geir.dims = [["batch", "seq", 768 : i64]]}
// CHECK-NEXT:    %m = graph.reduce_mean %s {{.*}}attributes {geir.dims = [["batch", 1 : i64, 768 : i64]]}
// CHECK-NEXT:    %r = graph.reduce_sum %s {{.*}}attributes {geir.dims = [["batch", "seq"]]}
func.func @rows(%x: tensor<8x512x768xf32> {onnx.name = "x"}, %g: tensor<768xf32> {onnx.name = "g"},
                %batch: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["x", 0]], geir.range = [1, 8]},
                %seq: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 1]], geir.range = [1, 512]}) -> (tensor<8x1x768xf32>, tensor<8x512xf32>) {
  %n = graph.layer_norm %x, %g {axis = -1 : i64} : (tensor<8x512x768xf32>, tensor<768xf32>) -> tensor<8x512x768xf32>
  %s = graph.softmax %n {axis = -1 : i64} : (tensor<8x512x768xf32>) -> tensor<8x512x768xf32>
  %m = graph.reduce_mean %s {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<8x512x768xf32>) -> tensor<8x1x768xf32>
  %r = graph.reduce_sum %s {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<8x512x768xf32>) -> tensor<8x512xf32>
  func.return %m, %r : tensor<8x1x768xf32>, tensor<8x512xf32>
}

// -----

// Data movement: a transpose permutes the symbols; a concat sums them (a class token before
// the sequence: seq + 1); a slice to a symbolic end (the positions table cut to seq, the end
// read off a Shape) is that end; a gather (an embedding) takes the indices' dims; a pad
// adds; a split in two equal parts of 2*seq is exact; a slice from the first position (ONNX's
// INT64_MIN) to the last but one is seq - 1; a flatten at -1 merges the leading dims.
// CHECK-LABEL: func.func @data(
// CHECK:         %t = graph.transpose %x {{.*}}attributes {geir.dims = [["seq", "batch", 64 : i64]]}
// CHECK-NEXT:    %c = graph.concat %cls, %x {axis = 1 : i64} attributes {geir.dims = [["batch", "seq + 1", 64 : i64]]} : (tensor<?x1x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
// CHECK:         %pos = graph.slice %table, %zero, %n, %axis attributes {geir.dims = [["seq", 64 : i64]]} : (tensor<4096x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x64xf32>
// CHECK-NEXT:    %xp = graph.add %x, %pos attributes {geir.dims = [["batch", "seq", 64 : i64]]}
// CHECK-NEXT:    %e = graph.gather %table, %ids {axis = 0 : i64} attributes {geir.dims = [["batch", "seq", 64 : i64]]}
// CHECK:         %p = graph.pad %x, %pads attributes {geir.dims = [["batch", "seq + 2", 64 : i64]]}
// CHECK:         %h, %h_1 = graph.split %d {axis = 1 : i64, num_outputs = 2 : i64} attributes {geir.dims = [["batch", "seq", 64 : i64], ["batch", "seq", 64 : i64]]}
// CHECK:         %tail = graph.slice %x, %from_start, %but_last, %one attributes {geir.dims = [["batch", "seq - 1", 64 : i64]]}
// CHECK-NEXT:    %fl = graph.flatten %x {axis = -1 : i64} attributes {geir.dims = [["batch*seq", 64 : i64]]}
func.func @data(%x: tensor<8x512x64xf32> {onnx.name = "x"}, %cls: tensor<8x1x64xf32> {onnx.name = "cls"},
                %table: tensor<4096x64xf32> {onnx.name = "table"}, %ids: tensor<8x512xi64> {onnx.name = "ids"},
                %batch: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["x", 0], ["cls", 0], ["ids", 0]], geir.range = [1, 8]},
                %seq: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 1], ["ids", 1]], geir.range = [1, 512]}) {
  %t = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<8x512x64xf32>) -> tensor<512x8x64xf32>
  %c = graph.concat %cls, %x {axis = 1 : i64} : (tensor<8x1x64xf32>, tensor<8x512x64xf32>) -> tensor<8x513x64xf32>
  %n = graph.shape %x {start = 1 : i64, end = 2 : i64} : (tensor<8x512x64xf32>) -> tensor<1xi64>
  %zero = graph.constant dense<0> : tensor<1xi64>
  %axis = graph.constant dense<0> : tensor<1xi64>
  %pos = graph.slice %table, %zero, %n, %axis : (tensor<4096x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<512x64xf32>
  %xp = graph.add %x, %pos : (tensor<8x512x64xf32>, tensor<512x64xf32>) -> tensor<8x512x64xf32>
  %e = graph.gather %table, %ids {axis = 0 : i64} : (tensor<4096x64xf32>, tensor<8x512xi64>) -> tensor<8x512x64xf32>
  %pads = graph.constant dense<[0, 1, 0, 0, 1, 0]> : tensor<6xi64>
  %p = graph.pad %x, %pads : (tensor<8x512x64xf32>, tensor<6xi64>) -> tensor<8x514x64xf32>
  %d = graph.concat %x, %xp {axis = 1 : i64} : (tensor<8x512x64xf32>, tensor<8x512x64xf32>) -> tensor<8x1024x64xf32>
  %h:2 = graph.split %d {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<8x1024x64xf32>) -> (tensor<8x512x64xf32>, tensor<8x512x64xf32>)
  %from_start = graph.constant dense<-9223372036854775808> : tensor<1xi64>
  %but_last = graph.constant dense<-1> : tensor<1xi64>
  %one = graph.constant dense<1> : tensor<1xi64>
  %tail = graph.slice %x, %from_start, %but_last, %one : (tensor<8x512x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x511x64xf32>
  %fl = graph.flatten %x {axis = -1 : i64} : (tensor<8x512x64xf32>) -> tensor<4096x64xf32>
  func.return
}

// -----

// Upsampling (a U-Net's decoder): a transposed conv and a resize carry the batch through;
// their other dims are static.
// CHECK-LABEL: func.func @upsample(
// CHECK:         %up = graph.conv_transpose %x, %w attributes {geir.dims = [["batch", 2 : i64, 7 : i64, 7 : i64]]}
// CHECK:         %big = graph.resize %up {{.*}} attributes {geir.dims = [["batch", 2 : i64, 14 : i64, 14 : i64]]}
func.func @upsample(%x: tensor<8x4x5x5xf32> {onnx.name = "x"}, %w: tensor<4x2x3x3xf32> {onnx.name = "w"},
                    %batch: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["x", 0]], geir.range = [1, 8]}) -> tensor<8x2x14x14xf32> {
  %up = graph.conv_transpose %x, %w : (tensor<8x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<8x2x7x7xf32>
  %big = graph.resize %up {sizes = array<i64: 8, 2, 14, 14>, scales = array<f64: 1.0, 1.0, 2.0, 2.0>} : (tensor<8x2x7x7xf32>) -> tensor<8x2x14x14xf32>
  func.return %big : tensor<8x2x14x14xf32>
}

// -----

// What must not change: a function without extent arguments has no symbols.
// CHECK-LABEL: func.func @static(
// CHECK-NEXT:    %0 = graph.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %0
func.func @static(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
