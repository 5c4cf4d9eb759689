// graph-fold-shapes: shapes of static tensors become constants and the shape
// arithmetic on them folds, so reshape targets are static.
// RUN: geir-opt %s --split-input-file -p graph-fold-shapes | filecheck %s
// RUN: geir-opt %s --split-input-file -p graph-fold-shapes,graph-fold-shapes | filecheck %s

// The TorchScript pattern: Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
// The data path stays; the target is one constant at the Concat's location.
// CHECK-LABEL: func.func @reshape_target(
// CHECK-NEXT:    %t = graph.constant dense<[2, -1]> : tensor<2xi64> loc("concat")
// CHECK-NEXT:    %r = graph.reshape %x, %t : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32> loc("reshape")
// CHECK-NEXT:    func.return %r
func.func @reshape_target(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %s = graph.shape %x : (tensor<2x3x4xf32>) -> tensor<3xi64> loc("shape")
  %i0 = graph.constant dense<0> : tensor<i64> loc("i0")
  %d0 = graph.gather %s, %i0 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64> loc("gather")
  %u0 = graph.unsqueeze %d0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64> loc("unsqueeze")
  %m1 = graph.constant dense<[-1]> : tensor<1xi64> loc("m1")
  %t = graph.concat %u0, %m1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64> loc("concat")
  %r = graph.reshape %x, %t : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32> loc("reshape")
  func.return %r : tensor<2x12xf32>
}

// -----

// Size, Range, Shape with start, Cast and float arithmetic on a dim (the
// attention scale 1/sqrt(d)).
// CHECK-LABEL: func.func @size_range(
// CHECK-NEXT:    %r = graph.constant dense<[0, 1, 2, 3, 4, 5]> : tensor<6xi64> loc("range")
// CHECK-NEXT:    %q = graph.constant dense<0.577350259> : tensor<1xf32> loc("rsqrt")
// CHECK-NEXT:    func.return %r, %q
func.func @size_range(%x: tensor<2x3xf32>) -> (tensor<6xi64>, tensor<1xf32>) {
  %n = graph.size %x : (tensor<2x3xf32>) -> tensor<i64> loc("size")
  %z = graph.constant dense<0> : tensor<i64> loc("zero")
  %o = graph.constant dense<1> : tensor<i64> loc("one")
  %r = graph.range %z, %n, %o : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<6xi64> loc("range")
  %s = graph.shape %x {start = -1 : i64} : (tensor<2x3xf32>) -> tensor<1xi64> loc("last_dim")
  %c = graph.cast %s {to = f32} : (tensor<1xi64>) -> tensor<1xf32> loc("cast")
  %q0 = graph.sqrt %c : (tensor<1xf32>) -> tensor<1xf32> loc("sqrt")
  %q = graph.reciprocal %q0 : (tensor<1xf32>) -> tensor<1xf32> loc("rsqrt")
  func.return %r, %q : tensor<6xi64>, tensor<1xf32>
}

// -----

// Left alone: the shape of a tensor with a dynamic dim.
// CHECK-LABEL: func.func @dynamic(
// CHECK-NEXT:    %s = graph.shape %x : (tensor<?x4xf32>) -> tensor<2xi64> loc("shape")
// CHECK-NEXT:    func.return %s
func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<2xi64> {
  %s = graph.shape %x : (tensor<?x4xf32>) -> tensor<2xi64> loc("shape")
  func.return %s : tensor<2xi64>
}

// -----

// Left alone: a shape result larger than max-bytes (the folder's limit applies).
// RUN: geir-opt %s --split-input-file -p 'graph-fold-shapes{max-bytes=8}' | filecheck %s --check-prefix=LIMIT
// LIMIT-LABEL: func.func @limit(
// LIMIT-NEXT:    %s = graph.shape %x : (tensor<2x3xf32>) -> tensor<2xi64> loc("shape")
// LIMIT-NEXT:    %n = graph.constant dense<6> : tensor<i64> loc("size")
// CHECK-LABEL: func.func @limit(
// CHECK-NEXT:    %s = graph.constant dense<[2, 3]> : tensor<2xi64> loc("shape")
// CHECK-NEXT:    %n = graph.constant dense<6> : tensor<i64> loc("size")
func.func @limit(%x: tensor<2x3xf32>) -> (tensor<2xi64>, tensor<i64>) {
  %s = graph.shape %x : (tensor<2x3xf32>) -> tensor<2xi64> loc("shape")
  %n = graph.size %x : (tensor<2x3xf32>) -> tensor<i64> loc("size")
  func.return %s, %n : tensor<2xi64>, tensor<i64>
}
