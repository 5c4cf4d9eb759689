// Verifier errors of the shape ops, one per `// -----` chunk; each names the op,
// its location and the rule it breaks, then shows the op in generic form.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.reshape' at "reshape": cannot reshape [2, 3, 4] (24 elements) to [5, 5]
// CHECK-NEXT: note: see current operation: %0 = "graph.reshape"
func.func @reshape_count(%x: tensor<2x3x4xf32>) {
  %s = graph.constant dense<[5, 5]> : tensor<2xi64>
  %0 = graph.reshape %x, %s : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<5x5xf32> loc("reshape")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.reshape' at "reshape": shape [-1, -1] has more than one -1
// CHECK-NEXT: note: see current operation: %0 = "graph.reshape"
func.func @reshape_two_unknown(%x: tensor<2x3x4xf32>) {
  %s = graph.constant dense<[-1, -1]> : tensor<2xi64>
  %0 = graph.reshape %x, %s : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32> loc("reshape")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.reshape' at "reshape": result #0 has type tensor<4x6xf32>, but the operands imply tensor<6x4xf32>
// CHECK-NEXT: note: see current operation: %0 = "graph.reshape"
func.func @reshape_result(%x: tensor<2x3x4xf32>) {
  %s = graph.constant dense<[-1, 4]> : tensor<2xi64>
  %0 = graph.reshape %x, %s : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<4x6xf32> loc("reshape")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.reshape' at "reshape": changes the element count
// CHECK-NEXT: note: see current operation: %0 = "graph.reshape"
func.func @reshape_runtime_count(%x: tensor<2x3x4xf32>, %s: tensor<2xi64>) {
  %0 = graph.reshape %x, %s : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<5x5xf32> loc("reshape")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.transpose' at "transpose": perm [0, 2, 2] is not a permutation of 3 dims
// CHECK-NEXT: note: see current operation: %0 = "graph.transpose"
func.func @transpose_perm(%x: tensor<2x3x4xf32>) {
  %0 = graph.transpose %x {perm = array<i64: 0, 2, 2>} : (tensor<2x3x4xf32>) -> tensor<2x4x4xf32> loc("transpose")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.transpose' at "transpose": perm [1, 0] is not a permutation of 3 dims
// CHECK-NEXT: note: see current operation: %0 = "graph.transpose"
func.func @transpose_perm_length(%x: tensor<2x3x4xf32>) {
  %0 = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2xf32> loc("transpose")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.transpose' at "transpose": result #0 has type tensor<4x3x2xf32>, but the operands imply tensor<4x2x3xf32>
// CHECK-NEXT: note: see current operation: %0 = "graph.transpose"
func.func @transpose_result(%x: tensor<2x3x4xf32>) {
  %0 = graph.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32> loc("transpose")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.squeeze' at "squeeze": cannot squeeze non-unit dims [1] of [1, 3, 1]
// CHECK-NEXT: note: see current operation: %0 = "graph.squeeze"
func.func @squeeze_non_unit(%x: tensor<1x3x1xf32>) {
  %0 = graph.squeeze %x {axes = array<i64: 1>} : (tensor<1x3x1xf32>) -> tensor<1x1xf32> loc("squeeze")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.squeeze' at "squeeze": axis 3 is out of range for rank 3
// CHECK-NEXT: note: see current operation: %0 = "graph.squeeze"
func.func @squeeze_axis(%x: tensor<1x3x1xf32>) {
  %0 = graph.squeeze %x {axes = array<i64: 3>} : (tensor<1x3x1xf32>) -> tensor<1x3x1xf32> loc("squeeze")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.unsqueeze' at "unsqueeze": repeated axes [0, 0]
// CHECK-NEXT: note: see current operation: %0 = "graph.unsqueeze"
func.func @unsqueeze_repeated(%x: tensor<3xf32>) {
  %0 = graph.unsqueeze %x {axes = array<i64: 0, 0>} : (tensor<3xf32>) -> tensor<1x1x3xf32> loc("unsqueeze")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.unsqueeze' at "unsqueeze": requires attribute 'axes'
// CHECK-NEXT: note: see current operation: %0 = "graph.unsqueeze"
func.func @unsqueeze_without_axes(%x: tensor<3xf32>) {
  %0 = graph.unsqueeze %x : (tensor<3xf32>) -> tensor<1x3xf32> loc("unsqueeze")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.flatten' at "flatten": axis 3 out of range for rank 2
// CHECK-NEXT: note: see current operation: %0 = "graph.flatten"
func.func @flatten_axis(%x: tensor<2x3xf32>) {
  %0 = graph.flatten %x {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<6x1xf32> loc("flatten")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.concat' at "concat": shapes [2, 3] and [3, 3] differ outside axis 1
// CHECK-NEXT: note: see current operation: %0 = "graph.concat"
func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32> loc("concat")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.concat' at "concat": axis 2 is out of range for rank 2
// CHECK-NEXT: note: see current operation: %0 = "graph.concat"
func.func @concat_axis(%a: tensor<2x3xf32>) {
  %0 = graph.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32> loc("concat")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.concat' at "concat": operands must have equal rank
// CHECK-NEXT: note: see current operation: %0 = "graph.concat"
func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  %0 = graph.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x3xf32> loc("concat")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.concat' at "concat": requires attribute 'axis'
// CHECK-NEXT: note: see current operation: %0 = "graph.concat"
func.func @concat_without_axis(%a: tensor<2x3xf32>) {
  %0 = graph.concat %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32> loc("concat")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.split' at "split": split sizes [3, 8] do not add up to dim 10
// CHECK-NEXT: note: see current operation: %0, %1 = "graph.split"
func.func @split_sizes(%x: tensor<2x10xf32>) {
  %s = graph.constant dense<[3, 8]> : tensor<2xi64>
  %0, %1 = graph.split %x, %s {axis = 1 : i64} : (tensor<2x10xf32>, tensor<2xi64>) -> (tensor<2x3xf32>, tensor<2x8xf32>) loc("split")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.split' at "split": cannot split dim 10 into 3 equal parts
// CHECK-NEXT: note: see current operation: %0, %1, %2 = "graph.split"
func.func @split_equal(%x: tensor<2x10xf32>) {
  %0, %1, %2 = graph.split %x {axis = 1 : i64} : (tensor<2x10xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x4xf32>) loc("split")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.split' at "split": infers 3 results but declares 2
// CHECK-NEXT: note: see current operation: %0, %1 = "graph.split"
func.func @split_result_count(%x: tensor<2x10xf32>) {
  %0, %1 = graph.split %x {axis = 1 : i64, num_outputs = 3 : i64} : (tensor<2x10xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) loc("split")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 7]]:3: 'graph.slice' at "slice": slice step must not be 0
// CHECK-NEXT: note: see current operation: %0 = "graph.slice"
func.func @slice_zero_step(%x: tensor<10xf32>) {
  %b = graph.constant dense<0> : tensor<1xi64>
  %e = graph.constant dense<5> : tensor<1xi64>
  %a = graph.constant dense<0> : tensor<1xi64>
  %z = graph.constant dense<0> : tensor<1xi64>
  %0 = graph.slice %x, %b, %e, %a, %z : (tensor<10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xf32> loc("slice")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 5]]:3: 'graph.slice' at "slice": starts, ends, axes and steps must have equal length
// CHECK-NEXT: note: see current operation: %0 = "graph.slice"
func.func @slice_lengths(%x: tensor<10x10xf32>) {
  %b = graph.constant dense<[0, 0]> : tensor<2xi64>
  %e = graph.constant dense<5> : tensor<1xi64>
  %0 = graph.slice %x, %b, %e : (tensor<10x10xf32>, tensor<2xi64>, tensor<1xi64>) -> tensor<5x10xf32> loc("slice")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 6]]:3: 'graph.slice' at "slice": axis 1 is out of range for rank 1
// CHECK-NEXT: note: see current operation: %0 = "graph.slice"
func.func @slice_axis(%x: tensor<10xf32>) {
  %b = graph.constant dense<0> : tensor<1xi64>
  %e = graph.constant dense<5> : tensor<1xi64>
  %a = graph.constant dense<1> : tensor<1xi64>
  %0 = graph.slice %x, %b, %e, %a : (tensor<10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xf32> loc("slice")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.gather' at "gather": indices must be integers
// CHECK-NEXT: note: see current operation: %0 = "graph.gather"
func.func @gather_float_indices(%x: tensor<5x6xf32>, %i: tensor<2xf32>) {
  %0 = graph.gather %x, %i : (tensor<5x6xf32>, tensor<2xf32>) -> tensor<2x6xf32> loc("gather")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.gather' at "gather": axis -3 is out of range for rank 2
// CHECK-NEXT: note: see current operation: %0 = "graph.gather"
func.func @gather_axis(%x: tensor<5x6xf32>, %i: tensor<2xi64>) {
  %0 = graph.gather %x, %i {axis = -3 : i64} : (tensor<5x6xf32>, tensor<2xi64>) -> tensor<2x6xf32> loc("gather")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.gather_elements' at "gather_elements": indices must have the rank of data
// CHECK-NEXT: note: see current operation: %0 = "graph.gather_elements"
func.func @gather_elements_rank(%x: tensor<5x6xf32>, %i: tensor<2xi64>) {
  %0 = graph.gather_elements %x, %i : (tensor<5x6xf32>, tensor<2xi64>) -> tensor<2xf32> loc("gather_elements")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.pad' at "pad": pads [1, 1, 1] need two values per axis
// CHECK-NEXT: note: see current operation: %0 = "graph.pad"
func.func @pad_length(%x: tensor<2x3xf32>) {
  %p = graph.constant dense<[1, 1, 1]> : tensor<3xi64>
  %0 = graph.pad %x, %p : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<4x4xf32> loc("pad")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.pad' at "pad": unknown pad mode 'mirror'
// CHECK-NEXT: note: see current operation: %0 = "graph.pad"
func.func @pad_mode(%x: tensor<2x3xf32>) {
  %p = graph.constant dense<[0, 0, 0, 0]> : tensor<4xi64>
  %0 = graph.pad %x, %p {mode = "mirror"} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<2x3xf32> loc("pad")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.tile' at "tile": repeats [2, 2, 2] must have one value per dim of [2, 3]
// CHECK-NEXT: note: see current operation: %0 = "graph.tile"
func.func @tile_repeats(%x: tensor<2x3xf32>) {
  %r = graph.constant dense<[2, 2, 2]> : tensor<3xi64>
  %0 = graph.tile %x, %r : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<4x6xf32> loc("tile")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.expand' at "expand": shapes [2, 3] and [4, 3] do not broadcast
// CHECK-NEXT: note: see current operation: %0 = "graph.expand"
func.func @expand_shape(%x: tensor<2x3xf32>) {
  %s = graph.constant dense<[4, 3]> : tensor<2xi64>
  %0 = graph.expand %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3xf32> loc("expand")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.shape' at "shape": result #0 has type tensor<2xi64>, but the operands imply tensor<3xi64>
// CHECK-NEXT: note: see current operation: %0 = "graph.shape"
func.func @shape_result(%x: tensor<2x3x4xf32>) {
  %0 = graph.shape %x : (tensor<2x3x4xf32>) -> tensor<2xi64> loc("shape")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.size' at "size": result #0 has type tensor<1xi64>, but the operands imply tensor<i64>
// CHECK-NEXT: note: see current operation: %0 = "graph.size"
func.func @size_result(%x: tensor<2x3xf32>) {
  %0 = graph.size %x : (tensor<2x3xf32>) -> tensor<1xi64> loc("size")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.constant_of_shape' at "cos": result #0 has type tensor<2x3xf32>, but the operands imply tensor<2x3xi32>
// CHECK-NEXT: note: see current operation: %0 = "graph.constant_of_shape"
func.func @constant_of_shape_type() {
  %s = graph.constant dense<[2, 3]> : tensor<2xi64>
  %0 = graph.constant_of_shape %s {value = dense<1> : tensor<1xi32>} : (tensor<2xi64>) -> tensor<2x3xf32> loc("cos")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 6]]:3: 'graph.range' at "range": delta must not be 0
// CHECK-NEXT: note: see current operation: %0 = "graph.range"
func.func @range_zero_delta() {
  %a = graph.constant dense<0> : tensor<i64>
  %b = graph.constant dense<5> : tensor<i64>
  %d = graph.constant dense<0> : tensor<i64>
  %0 = graph.range %a, %b, %d : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<5xi64> loc("range")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.depth_to_space' at "d2s": channels 6 not divisible by blocksize^2 = 4
// CHECK-NEXT: note: see current operation: %0 = "graph.depth_to_space"
func.func @depth_to_space_channels(%x: tensor<1x6x2x2xf32>) {
  %0 = graph.depth_to_space %x {blocksize = 2 : i64} : (tensor<1x6x2x2xf32>) -> tensor<1x1x4x4xf32> loc("d2s")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.depth_to_space' at "d2s": input must have rank 4, got [8, 2, 2]
// CHECK-NEXT: note: see current operation: %0 = "graph.depth_to_space"
func.func @depth_to_space_rank(%x: tensor<8x2x2xf32>) {
  %0 = graph.depth_to_space %x {blocksize = 2 : i64} : (tensor<8x2x2xf32>) -> tensor<2x4x4xf32> loc("d2s")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.space_to_depth' at "s2d": spatial dims 5x4 not divisible by blocksize 2
// CHECK-NEXT: note: see current operation: %0 = "graph.space_to_depth"
func.func @space_to_depth_spatial(%x: tensor<1x2x5x4xf32>) {
  %0 = graph.space_to_depth %x {blocksize = 2 : i64} : (tensor<1x2x5x4xf32>) -> tensor<1x8x2x2xf32> loc("s2d")
  func.return
}
