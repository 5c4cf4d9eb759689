// Verifier errors of the graph collectives, one per `// -----` chunk.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: 'graph.all_reduce': ranks must be distinct ranks >= 0, got [1, 1]
func.func @f(%x: tensor<4xf32>) {
  %0 = graph.all_reduce %x {ranks = array<i64: 1, 1>, reduction = "sum"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----
// CHECK: 'graph.all_reduce': reduction must be one of sum, max, min, prod, got 'avg'
func.func @f(%x: tensor<4xf32>) {
  %0 = graph.all_reduce %x {ranks = array<i64: 0, 1>, reduction = "avg"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----
// CHECK: 'graph.reduce_scatter': dim 0 (5) does not divide among 2 ranks
func.func @f(%x: tensor<5xf32>) {
  %0 = graph.reduce_scatter %x {ranks = array<i64: 0, 1>, axis = 0 : i64} : (tensor<5xf32>) -> tensor<2xf32>
  func.return
}

// -----
// CHECK: 'graph.all_gather': result #0 has type tensor<4xf32>, but the operands imply tensor<8xf32>
func.func @f(%x: tensor<4xf32>) {
  %0 = graph.all_gather %x {ranks = array<i64: 0, 1>, axis = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----
// CHECK: 'graph.send': peer must be a rank >= 0, got -1
func.func @f(%x: tensor<4xf32>) {
  graph.send %x {peer = -1 : i64} : (tensor<4xf32>) -> ()
  func.return
}
