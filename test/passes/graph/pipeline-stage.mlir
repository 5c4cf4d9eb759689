// graph-pipeline-stage: the cut that balances the stages, a recv / send pair at it, each stage
// returning what it computes; a cut never falls where more than max-values tensors cross.
// RUN: geir-opt %s --split-input-file -p 'graph-pipeline-stage{stages=2 stage=0}' | filecheck %s --check-prefix=S0
// RUN: geir-opt %s --split-input-file -p 'graph-pipeline-stage{stages=2 stage=1}' | filecheck %s --check-prefix=S1
// RUN: not geir-opt %S/Inputs/pipeline-stage-invalid.mlir --split-input-file -p 'graph-pipeline-stage{stages=3 stage=0}' 2>&1 | filecheck %S/Inputs/pipeline-stage-invalid.mlir

// Four equal layers: the cut falls after the second; stage 0 sends %h2, stage 1 receives it
// and returns %y. The weights each stage uses are its own, and so are the inputs it reads
// (stage 1 reads none).
// S0-LABEL: func.func @chain(
// S0-SAME:    %x: tensor<64x256xf32>) {
// S0:         %h1 = graph.matmul %x, %w1
// S0:         %h2 = graph.matmul %{{.*}}, %w2
// S0:         %[[R:.*]] = graph.relu %h2
// S0-NEXT:    graph.send %[[R]] {peer = 1 : i64} : (tensor<64x256xf32>) -> ()
// S0-NEXT:    func.return
// S0-NOT:     %w3
// S1-LABEL: func.func @chain() -> tensor<64x256xf32> {
// S1-NOT:     %w1
// S1:         %[[R:.*]] = graph.recv {peer = 0 : i64} : () -> tensor<64x256xf32>
// S1-NEXT:    %h3 = graph.matmul %[[R]], %w3
// S1:         func.return %y : tensor<64x256xf32>
func.func @chain(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %w1 = graph.constant dense<1.0> : tensor<256x256xf32>
  %w2 = graph.constant dense<2.0> : tensor<256x256xf32>
  %w3 = graph.constant dense<3.0> : tensor<256x256xf32>
  %w4 = graph.constant dense<4.0> : tensor<256x256xf32>
  %h1 = graph.matmul %x, %w1 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %r1 = graph.relu %h1 : (tensor<64x256xf32>) -> tensor<64x256xf32>
  %h2 = graph.matmul %r1, %w2 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %r2 = graph.relu %h2 : (tensor<64x256xf32>) -> tensor<64x256xf32>
  %h3 = graph.matmul %r2, %w3 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %r3 = graph.relu %h3 : (tensor<64x256xf32>) -> tensor<64x256xf32>
  %h4 = graph.matmul %r3, %w4 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %y = graph.relu %h4 : (tensor<64x256xf32>) -> tensor<64x256xf32>
  func.return %y : tensor<64x256xf32>
}

// -----
// A heavy first layer: the cut moves off the middle of the op list to balance the time
// (stage 0: the 1024-wide products, stage 1 the two small ones), and a returned value stays
// with the stage that computes it.
// S0-LABEL: func.func @skewed(
// S0-SAME:    -> (tensor<64x1024xf32> {onnx.name = "early"})
// S0:         %big = graph.matmul
// S0:         %h1 = graph.matmul
// S0-NEXT:    graph.send %h1 {peer = 1 : i64}
// S0:         func.return %big
// S1-LABEL: func.func @skewed(
// S1-SAME:    -> (tensor<64x256xf32> {onnx.name = "y"})
// S1:         %h1 = graph.recv {peer = 0 : i64}
// S1-COUNT-2: graph.matmul
// S1-NEXT:    func.return %y
func.func @skewed(%x: tensor<64x1024xf32>) -> (tensor<64x1024xf32> {onnx.name = "early"}, tensor<64x256xf32> {onnx.name = "y"}) {
  %wb = graph.constant dense<1.0> : tensor<1024x1024xf32>
  %w1 = graph.constant dense<1.0> : tensor<1024x256xf32>
  %w2 = graph.constant dense<2.0> : tensor<256x256xf32>
  %w3 = graph.constant dense<3.0> : tensor<256x256xf32>
  %big = graph.matmul %x, %wb : (tensor<64x1024xf32>, tensor<1024x1024xf32>) -> tensor<64x1024xf32>
  %rb = graph.relu %big : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %h1 = graph.matmul %rb, %w1 : (tensor<64x1024xf32>, tensor<1024x256xf32>) -> tensor<64x256xf32>
  %h2 = graph.matmul %h1, %w2 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %y = graph.matmul %h2, %w3 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  func.return %big, %y : tensor<64x1024xf32>, tensor<64x256xf32>
}

// -----
// What must not be cut: ten equal products fan out of %m. The balanced cut (after the fifth)
// would send six tensors, more than max-values (4): the cut falls after the third, the
// most balanced place where four cross (%m and the first three products).
// S0-LABEL: func.func @fan_out(
// S0:         %a3 = graph.matmul
// S0-COUNT-4: graph.send
// S0-NOT:     graph.send
// S0-NOT:     %a4 = graph.matmul
// S1-LABEL: func.func @fan_out(
// S1-COUNT-4: graph.recv
// S1-NOT:     graph.recv
// S1:         %a4 = graph.matmul
func.func @fan_out(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %w = graph.constant dense<1.0> : tensor<256x256xf32>
  %m = graph.relu %x : (tensor<64x256xf32>) -> tensor<64x256xf32>
  %a1 = graph.matmul %m, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %a2 = graph.matmul %m, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %a3 = graph.matmul %m, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %a4 = graph.matmul %m, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %a5 = graph.matmul %m, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %a6 = graph.matmul %m, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %a7 = graph.matmul %m, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %a8 = graph.matmul %m, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %a9 = graph.matmul %m, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %a10 = graph.matmul %m, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %s = graph.sum %a1, %a2, %a3, %a4, %a5, %a6, %a7, %a8, %a9, %a10 : (tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
  func.return %s : tensor<64x256xf32>
}
