// Errors of graph-pipeline-stage (pipeline-stage.mlir runs this file with stages=3).

// CHECK: pipeline_stages=3 needs 2 cut(s), but the graph has 1 place(s) to cut (where at most 4 tensors cross, between its layers): use at most 2 stages
func.func @two_layers(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = graph.constant dense<1.0> : tensor<8x8xf32>
  %a = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %b = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  func.return %b : tensor<4x8xf32>
}
