// Round trip of the graph ops that move data and compute shapes. Shape-like
// operands (reshape targets, slice bounds, pads, ...) are usually constants;
// the verifier then checks the result type against them.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: func.func @reshape(
// CHECK-SAME:    %x: tensor<2x3x4xf32>, %dyn: tensor<2xi64>) {
func.func @reshape(%x: tensor<2x3x4xf32>, %dyn: tensor<2xi64>) {
  // CHECK-NEXT: %shape = graph.constant dense<[6, -1]> : tensor<2xi64>
  %shape = graph.constant dense<[6, -1]> : tensor<2xi64>
  // CHECK-NEXT: %reshape = graph.reshape %x, %shape : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %reshape = graph.reshape %x, %shape : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  // CHECK-NEXT: %copy = graph.constant dense<[0, 12]> : tensor<2xi64>
  %copy = graph.constant dense<[0, 12]> : tensor<2xi64>
  // CHECK-NEXT: %reshape_copy = graph.reshape %x, %copy : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  %reshape_copy = graph.reshape %x, %copy : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  // CHECK-NEXT: %reshape_runtime = graph.reshape %x, %dyn : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  %reshape_runtime = graph.reshape %x, %dyn : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  // CHECK-NEXT: %flatten = graph.flatten %x : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %flatten = graph.flatten %x : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  // CHECK-NEXT: %flatten_axis0 = graph.flatten %x {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
  %flatten_axis0 = graph.flatten %x {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
  // CHECK-NEXT: %flatten_neg = graph.flatten %x {axis = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %flatten_neg = graph.flatten %x {axis = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @squeeze_transpose(
// CHECK-SAME:    %x: tensor<1x3x1x4xf32>) {
func.func @squeeze_transpose(%x: tensor<1x3x1x4xf32>) {
  // CHECK-NEXT: %squeeze = graph.squeeze %x {axes = array<i64: 0>} : (tensor<1x3x1x4xf32>) -> tensor<3x1x4xf32>
  %squeeze = graph.squeeze %x {axes = array<i64: 0>} : (tensor<1x3x1x4xf32>) -> tensor<3x1x4xf32>
  // CHECK-NEXT: %squeeze_all = graph.squeeze %x : (tensor<1x3x1x4xf32>) -> tensor<3x4xf32>
  %squeeze_all = graph.squeeze %x : (tensor<1x3x1x4xf32>) -> tensor<3x4xf32>
  // CHECK-NEXT: %unsqueeze = graph.unsqueeze %x {axes = array<i64: 0, -1>} : (tensor<1x3x1x4xf32>) -> tensor<1x1x3x1x4x1xf32>
  %unsqueeze = graph.unsqueeze %x {axes = array<i64: 0, -1>} : (tensor<1x3x1x4xf32>) -> tensor<1x1x3x1x4x1xf32>
  // CHECK-NEXT: %transpose = graph.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x1x4xf32>) -> tensor<1x4x3x1xf32>
  %transpose = graph.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x1x4xf32>) -> tensor<1x4x3x1xf32>
  // CHECK-NEXT: %reverse = graph.transpose %x : (tensor<1x3x1x4xf32>) -> tensor<4x1x3x1xf32>
  %reverse = graph.transpose %x : (tensor<1x3x1x4xf32>) -> tensor<4x1x3x1xf32>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @slice(
// CHECK-SAME:    %x: tensor<10x20xf32>) {
func.func @slice(%x: tensor<10x20xf32>) {
  // CHECK-NEXT: %starts = graph.constant dense<[1, 0]> : tensor<2xi64>
  %starts = graph.constant dense<[1, 0]> : tensor<2xi64>
  // CHECK-NEXT: %ends = graph.constant dense<[9, -1]> : tensor<2xi64>
  %ends = graph.constant dense<[9, -1]> : tensor<2xi64>
  // CHECK-NEXT: %slice = graph.slice %x, %starts, %ends : (tensor<10x20xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<8x19xf32>
  %slice = graph.slice %x, %starts, %ends : (tensor<10x20xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<8x19xf32>
  // CHECK-NEXT: %axes = graph.constant dense<[1, 0]> : tensor<2xi64>
  %axes = graph.constant dense<[1, 0]> : tensor<2xi64>
  // CHECK-NEXT: %steps = graph.constant dense<[2, 3]> : tensor<2xi64>
  %steps = graph.constant dense<[2, 3]> : tensor<2xi64>
  // CHECK-NEXT: %slice_steps = graph.slice %x, %starts, %ends, %axes, %steps : (tensor<10x20xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<3x4xf32>
  %slice_steps = graph.slice %x, %starts, %ends, %axes, %steps : (tensor<10x20xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<3x4xf32>
  // CHECK-NEXT: %start = graph.constant dense<-1> : tensor<1xi64>
  %start = graph.constant dense<-1> : tensor<1xi64>
  // CHECK-NEXT: %end = graph.constant dense<-9223372036854775807> : tensor<1xi64>
  %end = graph.constant dense<-9223372036854775807> : tensor<1xi64>
  // CHECK-NEXT: %step = graph.constant dense<-1> : tensor<1xi64>
  %step = graph.constant dense<-1> : tensor<1xi64>
  // CHECK-NEXT: %axis = graph.constant dense<1> : tensor<1xi64>
  %axis = graph.constant dense<1> : tensor<1xi64>
  // CHECK-NEXT: %reversed = graph.slice %x, %start, %end, %axis, %step : (tensor<10x20xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<10x20xf32>
  %reversed = graph.slice %x, %start, %end, %axis, %step : (tensor<10x20xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<10x20xf32>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @gather(
// CHECK-SAME:    %x: tensor<5x6xf32>, %i: tensor<2x3xi64>, %j: tensor<i32>, %e: tensor<5x2xi64>) {
func.func @gather(%x: tensor<5x6xf32>, %i: tensor<2x3xi64>, %j: tensor<i32>, %e: tensor<5x2xi64>) {
  // CHECK-NEXT: %gather = graph.gather %x, %i : (tensor<5x6xf32>, tensor<2x3xi64>) -> tensor<2x3x6xf32>
  %gather = graph.gather %x, %i : (tensor<5x6xf32>, tensor<2x3xi64>) -> tensor<2x3x6xf32>
  // CHECK-NEXT: %gather_1 = graph.gather %x, %i {axis = 1 : i64} : (tensor<5x6xf32>, tensor<2x3xi64>) -> tensor<5x2x3xf32>
  %gather_1 = graph.gather %x, %i {axis = 1 : i64} : (tensor<5x6xf32>, tensor<2x3xi64>) -> tensor<5x2x3xf32>
  // CHECK-NEXT: %gather_scalar = graph.gather %x, %j {axis = -1 : i64} : (tensor<5x6xf32>, tensor<i32>) -> tensor<5xf32>
  %gather_scalar = graph.gather %x, %j {axis = -1 : i64} : (tensor<5x6xf32>, tensor<i32>) -> tensor<5xf32>
  // CHECK-NEXT: %gather_elements = graph.gather_elements %x, %e {axis = 1 : i64} : (tensor<5x6xf32>, tensor<5x2xi64>) -> tensor<5x2xf32>
  %gather_elements = graph.gather_elements %x, %e {axis = 1 : i64} : (tensor<5x6xf32>, tensor<5x2xi64>) -> tensor<5x2xf32>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @concat_split(
// CHECK-SAME:    %a: tensor<2x3xf32>, %b: tensor<2x5xf32>) {
func.func @concat_split(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) {
  // CHECK-NEXT: %concat = graph.concat %a, %b, %a {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  %concat = graph.concat %a, %b, %a {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  // CHECK-NEXT: %concat_one = graph.concat %a {axis = -2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %concat_one = graph.concat %a {axis = -2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %top, %bottom = graph.split %concat_one : (tensor<2x3xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>)
  %top, %bottom = graph.split %concat_one : (tensor<2x3xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>)
  // CHECK-NEXT: %sizes = graph.constant dense<[3, 8]> : tensor<2xi64>
  %sizes = graph.constant dense<[3, 8]> : tensor<2xi64>
  // CHECK-NEXT: %first3, %last8 = graph.split %concat, %sizes {axis = 1 : i64} : (tensor<2x11xf32>, tensor<2xi64>) -> (tensor<2x3xf32>, tensor<2x8xf32>)
  %first3, %last8 = graph.split %concat, %sizes {axis = 1 : i64} : (tensor<2x11xf32>, tensor<2xi64>) -> (tensor<2x3xf32>, tensor<2x8xf32>)
  // CHECK-NEXT: %u0, %u1, %u2 = graph.split %b {axis = 1 : i64, num_outputs = 3 : i64} : (tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x1xf32>)
  %u0, %u1, %u2 = graph.split %b {axis = 1 : i64, num_outputs = 3 : i64} : (tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x1xf32>)
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @pad_tile_expand(
// CHECK-SAME:    %x: tensor<2x3xf32>, %v: tensor<3x1xf32>) {
func.func @pad_tile_expand(%x: tensor<2x3xf32>, %v: tensor<3x1xf32>) {
  // CHECK-NEXT: %pads = graph.constant dense<[1, 0, 0, 2]> : tensor<4xi64>
  %pads = graph.constant dense<[1, 0, 0, 2]> : tensor<4xi64>
  // CHECK-NEXT: %pad = graph.pad %x, %pads : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<3x5xf32>
  %pad = graph.pad %x, %pads : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<3x5xf32>
  // CHECK-NEXT: %value = graph.constant dense<1.500000e+00> : tensor<f32>
  %value = graph.constant dense<1.500000e+00> : tensor<f32>
  // CHECK-NEXT: %pad_value = graph.pad %x, %pads, %value {mode = "constant"} : (tensor<2x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<3x5xf32>
  %pad_value = graph.pad %x, %pads, %value {mode = "constant"} : (tensor<2x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<3x5xf32>
  // CHECK-NEXT: %pads_1 = graph.constant dense<[2, 1]> : tensor<2xi64>
  %pads_1 = graph.constant dense<[2, 1]> : tensor<2xi64>
  // CHECK-NEXT: %axis = graph.constant dense<-1> : tensor<1xi64>
  %axis = graph.constant dense<-1> : tensor<1xi64>
  // CHECK-NEXT: %pad_axes = graph.pad %x, %pads_1, %value, %axis {mode = "reflect"} : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>, tensor<1xi64>) -> tensor<2x6xf32>
  %pad_axes = graph.pad %x, %pads_1, %value, %axis {mode = "reflect"} : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>, tensor<1xi64>) -> tensor<2x6xf32>
  // CHECK-NEXT: %pad_edge = graph.pad %x, %pads {mode = "edge"} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<3x5xf32>
  %pad_edge = graph.pad %x, %pads {mode = "edge"} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<3x5xf32>
  // CHECK-NEXT: %repeats = graph.constant dense<[2, 3]> : tensor<2xi64>
  %repeats = graph.constant dense<[2, 3]> : tensor<2xi64>
  // CHECK-NEXT: %tile = graph.tile %x, %repeats : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x9xf32>
  %tile = graph.tile %x, %repeats : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x9xf32>
  // CHECK-NEXT: %to = graph.constant dense<[2, 3, 4]> : tensor<3xi64>
  %to = graph.constant dense<[2, 3, 4]> : tensor<3xi64>
  // CHECK-NEXT: %expand = graph.expand %v, %to : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %expand = graph.expand %v, %to : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %ones = graph.constant dense<1> : tensor<1xi64>
  %ones = graph.constant dense<1> : tensor<1xi64>
  // CHECK-NEXT: %expand_keep = graph.expand %x, %ones : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3xf32>
  %expand_keep = graph.expand %x, %ones : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3xf32>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @shape_size(
// CHECK-SAME:    %x: tensor<2x3x4xf16>) {
func.func @shape_size(%x: tensor<2x3x4xf16>) {
  // CHECK-NEXT: %shape = graph.shape %x : (tensor<2x3x4xf16>) -> tensor<3xi64>
  %shape = graph.shape %x : (tensor<2x3x4xf16>) -> tensor<3xi64>
  // CHECK-NEXT: %shape_tail = graph.shape %x {start = 1 : i64} : (tensor<2x3x4xf16>) -> tensor<2xi64>
  %shape_tail = graph.shape %x {start = 1 : i64} : (tensor<2x3x4xf16>) -> tensor<2xi64>
  // CHECK-NEXT: %shape_mid = graph.shape %x {start = -2 : i64, end = -1 : i64} : (tensor<2x3x4xf16>) -> tensor<1xi64>
  %shape_mid = graph.shape %x {start = -2 : i64, end = -1 : i64} : (tensor<2x3x4xf16>) -> tensor<1xi64>
  // CHECK-NEXT: %size = graph.size %x : (tensor<2x3x4xf16>) -> tensor<i64>
  %size = graph.size %x : (tensor<2x3x4xf16>) -> tensor<i64>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @constant_of_shape_range(
// CHECK-SAME:    ) {
func.func @constant_of_shape_range() {
  // CHECK-NEXT: %dims = graph.constant dense<[2, 3]> : tensor<2xi64>
  %dims = graph.constant dense<[2, 3]> : tensor<2xi64>
  // CHECK-NEXT: %zeros = graph.constant_of_shape %dims : (tensor<2xi64>) -> tensor<2x3xf32>
  %zeros = graph.constant_of_shape %dims : (tensor<2xi64>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sevens = graph.constant_of_shape %dims {value = dense<7> : tensor<1xi32>} : (tensor<2xi64>) -> tensor<2x3xi32>
  %sevens = graph.constant_of_shape %dims {value = dense<7> : tensor<1xi32>} : (tensor<2xi64>) -> tensor<2x3xi32>
  // CHECK-NEXT: %halves = graph.constant_of_shape %dims {value = dense<5.000000e-01> : tensor<1xf16>} : (tensor<2xi64>) -> tensor<2x3xf16>
  %halves = graph.constant_of_shape %dims {value = dense<5.000000e-01> : tensor<1xf16>} : (tensor<2xi64>) -> tensor<2x3xf16>
  // CHECK-NEXT: %start = graph.constant dense<1> : tensor<i64>
  %start = graph.constant dense<1> : tensor<i64>
  // CHECK-NEXT: %limit = graph.constant dense<10> : tensor<i64>
  %limit = graph.constant dense<10> : tensor<i64>
  // CHECK-NEXT: %delta = graph.constant dense<3> : tensor<i64>
  %delta = graph.constant dense<3> : tensor<i64>
  // CHECK-NEXT: %range = graph.range %start, %limit, %delta : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<3xi64>
  %range = graph.range %start, %limit, %delta : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<3xi64>
  // CHECK-NEXT: %fstart = graph.constant dense<1.000000e+00> : tensor<f32>
  %fstart = graph.constant dense<1.000000e+00> : tensor<f32>
  // CHECK-NEXT: %flimit = graph.constant dense<0.000000e+00> : tensor<f32>
  %flimit = graph.constant dense<0.000000e+00> : tensor<f32>
  // CHECK-NEXT: %fdelta = graph.constant dense<-2.500000e-01> : tensor<f32>
  %fdelta = graph.constant dense<-2.500000e-01> : tensor<f32>
  // CHECK-NEXT: %frange = graph.range %fstart, %flimit, %fdelta : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  %frange = graph.range %fstart, %flimit, %fdelta : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @depth_space(
// CHECK-SAME:    %x: tensor<1x8x2x3xf32>, %y: tensor<1x2x4x6xf32>) {
func.func @depth_space(%x: tensor<1x8x2x3xf32>, %y: tensor<1x2x4x6xf32>) {
  // CHECK-NEXT: %d2s = graph.depth_to_space %x {blocksize = 2 : i64} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  %d2s = graph.depth_to_space %x {blocksize = 2 : i64} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  // CHECK-NEXT: %d2s_crd = graph.depth_to_space %x {blocksize = 2 : i64, mode = "CRD"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  %d2s_crd = graph.depth_to_space %x {blocksize = 2 : i64, mode = "CRD"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  // CHECK-NEXT: %s2d = graph.space_to_depth %y {blocksize = 2 : i64} : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
  %s2d = graph.space_to_depth %y {blocksize = 2 : i64} : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
  // CHECK-NEXT: func.return
  func.return
}
