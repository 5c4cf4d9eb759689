// Round trip of the spatial ops: resize (scales / sizes for every axis), grid_sample,
// max_unpool, col2im, roi_align, deform_conv.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: func.func @spatial(
func.func @spatial(%x: tensor<1x2x4x4xf32>, %grid: tensor<1x3x5x2xf32>, %i: tensor<1x2x4x4xi64>, %cols: tensor<1x8x9xf32>, %rois: tensor<3x4xf32>, %b: tensor<3xi64>, %w: tensor<6x1x2x2xf32>, %off: tensor<1x16x3x3xf32>) {
  // CHECK-NEXT: %0 = graph.resize %x {sizes = array<i64: 1, 2, 8, 6>, scales = array<f64: 1.000000e+00, 1.000000e+00, 2.000000e+00, 1.500000e+00>, mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x6xf32>
  %0 = graph.resize %x {sizes = array<i64: 1, 2, 8, 6>, scales = array<f64: 1.0, 1.0, 2.0, 1.5>, mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x6xf32>
  // CHECK-NEXT: %1 = graph.grid_sample %x, %grid {mode = "nearest", padding_mode = "border"} : (tensor<1x2x4x4xf32>, tensor<1x3x5x2xf32>) -> tensor<1x2x3x5xf32>
  %1 = graph.grid_sample %x, %grid {mode = "nearest", padding_mode = "border"} : (tensor<1x2x4x4xf32>, tensor<1x3x5x2xf32>) -> tensor<1x2x3x5xf32>
  // CHECK-NEXT: %2 = graph.max_unpool %x, %i {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>) -> tensor<1x2x8x8xf32>
  %2 = graph.max_unpool %x, %i {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>) -> tensor<1x2x8x8xf32>
  // CHECK-NEXT: %3 = graph.col2im %cols {image_shape = array<i64: 4, 4>, block_shape = array<i64: 2, 2>} : (tensor<1x8x9xf32>) -> tensor<1x2x4x4xf32>
  %3 = graph.col2im %cols {image_shape = array<i64: 4, 4>, block_shape = array<i64: 2, 2>} : (tensor<1x8x9xf32>) -> tensor<1x2x4x4xf32>
  // CHECK-NEXT: %4 = graph.roi_align %x, %rois, %b {mode = "max", output_height = 2 : i64, output_width = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x2x2x3xf32>
  %4 = graph.roi_align %x, %rois, %b {mode = "max", output_height = 2 : i64, output_width = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x2x2x3xf32>
  // CHECK-NEXT: %5 = graph.deform_conv %x, %w, %off {group = 2 : i64, offset_group = 2 : i64} : (tensor<1x2x4x4xf32>, tensor<6x1x2x2xf32>, tensor<1x16x3x3xf32>) -> tensor<1x6x3x3xf32>
  %5 = graph.deform_conv %x, %w, %off {group = 2 : i64, offset_group = 2 : i64} : (tensor<1x2x4x4xf32>, tensor<6x1x2x2xf32>, tensor<1x16x3x3xf32>) -> tensor<1x6x3x3xf32>
  func.return
}
