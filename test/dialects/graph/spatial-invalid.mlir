// Verifier errors of the spatial ops, one per `// -----` chunk.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.resize' at "rs": sizes [1, 2, 8] and scales [1.0, 1.0, 2.0, 1.5] must have the input's rank 4
// CHECK-NEXT: note: see current operation: %0 = "graph.resize"
func.func @resize_rank(%x: tensor<1x2x4x4xf32>) {
  %0 = graph.resize %x {sizes = array<i64: 1, 2, 8>, scales = array<f64: 1.0, 1.0, 2.0, 1.5>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x8xf32> loc("rs")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.resize' at "rs": tf_crop_and_resize needs a roi of 2 x rank = 8 values
// CHECK-NEXT: note: see current operation: %0 = "graph.resize"
func.func @resize_roi(%x: tensor<1x2x4x4xf32>) {
  %0 = graph.resize %x {sizes = array<i64: 1, 2, 8, 8>, scales = array<f64: 1.0, 1.0, 2.0, 2.0>, coordinate_transformation_mode = "tf_crop_and_resize"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32> loc("rs")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.resize' at "rs": result #0 has type tensor<1x2x8x6xf32>, but the operands imply tensor<1x2x8x8xf32>
// CHECK-NEXT: note: see current operation: %0 = "graph.resize"
func.func @resize_result(%x: tensor<1x2x4x4xf32>) {
  %0 = graph.resize %x {sizes = array<i64: 1, 2, 8, 8>, scales = array<f64: 1.0, 1.0, 2.0, 2.0>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x6xf32> loc("rs")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.grid_sample' at "gs": grid [1, 3, 5, 3] must be [N, spatial.., 2] for x [1, 2, 4, 4]
// CHECK-NEXT: note: see current operation: %0 = "graph.grid_sample"
func.func @grid_sample_grid(%x: tensor<1x2x4x4xf32>, %grid: tensor<1x3x5x3xf32>) {
  %0 = graph.grid_sample %x, %grid : (tensor<1x2x4x4xf32>, tensor<1x3x5x3xf32>) -> tensor<1x2x3x5xf32> loc("gs")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.col2im' at "c2i": 10 columns, but the image holds [3, 3] blocks
// CHECK-NEXT: note: see current operation: %0 = "graph.col2im"
func.func @col2im_columns(%cols: tensor<1x8x10xf32>) {
  %0 = graph.col2im %cols {image_shape = array<i64: 4, 4>, block_shape = array<i64: 2, 2>} : (tensor<1x8x10xf32>) -> tensor<1x2x4x4xf32> loc("c2i")
  func.return
}
