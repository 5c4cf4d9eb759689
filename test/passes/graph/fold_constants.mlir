// graph-fold-constants: ops whose operands are all constants become constants.
// RUN: geir-opt %s --split-input-file -p graph-fold-constants | filecheck %s
// Idempotent: a second run changes nothing.
// RUN: geir-opt %s --split-input-file -p graph-fold-constants,graph-fold-constants | filecheck %s
// RUN: geir-opt %s --split-input-file -p 'graph-fold-constants{max-bytes=64}' | filecheck %s --check-prefix=LIMIT

// A chain folds in one walk; the result keeps the last op's location and the
// constants that only fed folded ops are gone.
// CHECK-LABEL: func.func @chain() -> tensor<2xf32> {
// CHECK-NEXT:    %m = graph.constant dense<[1.600000e+01, 3.600000e+01]> : tensor<2xf32> loc("mul")
// CHECK-NEXT:    func.return %m : tensor<2xf32>
func.func @chain() -> tensor<2xf32> {
  %a = graph.constant dense<[1.0, 2.0]> : tensor<2xf32> loc("a")
  %b = graph.constant dense<[3.0, 4.0]> : tensor<2xf32> loc("b")
  %s = graph.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("add")
  %m = graph.mul %s, %s : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("mul")
  func.return %m : tensor<2xf32>
}

// -----

// An op with a non-constant operand stays; its constant operand folds.
// CHECK-LABEL: func.func @mixed(
// CHECK-NEXT:    %n = graph.constant dense<[-1.000000e+00, -2.000000e+00]> : tensor<2xf32> loc("neg")
// CHECK-NEXT:    %s = graph.add %x, %n : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("add")
// CHECK-NEXT:    func.return %s
func.func @mixed(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = graph.constant dense<[1.0, 2.0]> : tensor<2xf32> loc("a")
  %n = graph.neg %a : (tensor<2xf32>) -> tensor<2xf32> loc("neg")
  %s = graph.add %x, %n : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("add")
  func.return %s : tensor<2xf32>
}

// -----

// max-bytes: the 64x64xf32 fill (16 KiB) folds by default (stored as one
// element, a splat), not with max-bytes=64; the 4-element one folds both times.
// CHECK-LABEL: func.func @limit()
// CHECK-NEXT:    %big = graph.constant dense<1.000000e+00> : tensor<64x64xf32> loc("big")
// CHECK-NEXT:    %small = graph.constant dense<2.000000e+00> : tensor<4xf32> loc("small")
// CHECK-NEXT:    func.return %small, %big
// LIMIT-LABEL: func.func @limit()
// LIMIT-NEXT:    %shape = graph.constant dense<64> : tensor<2xi64> loc("shape")
// LIMIT-NEXT:    %big = graph.constant_of_shape %shape {{.*}} -> tensor<64x64xf32> loc("big")
// LIMIT-NEXT:    %small = graph.constant dense<2.000000e+00> : tensor<4xf32> loc("small")
// LIMIT-NEXT:    func.return %small, %big
func.func @limit() -> (tensor<4xf32>, tensor<64x64xf32>) {
  %shape = graph.constant dense<[64, 64]> : tensor<2xi64> loc("shape")
  %four = graph.constant dense<[4]> : tensor<1xi64> loc("four")
  %big = graph.constant_of_shape %shape {value = dense<1.0> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<64x64xf32> loc("big")
  %small = graph.constant_of_shape %four {value = dense<2.0> : tensor<1xf32>} : (tensor<1xi64>) -> tensor<4xf32> loc("small")
  func.return %small, %big : tensor<4xf32>, tensor<64x64xf32>
}

// -----

// Every result of a multi-result op; graph outputs stay outputs.
// CHECK-LABEL: func.func @split()
// CHECK-NEXT:    %p = graph.constant dense<[1, 2]> : tensor<2xi64> loc("split")
// CHECK-NEXT:    %q = graph.constant dense<3> : tensor<1xi64> loc("split")
// CHECK-NEXT:    func.return %q, %p : tensor<1xi64>, tensor<2xi64>
func.func @split() -> (tensor<1xi64>, tensor<2xi64>) {
  %a = graph.constant dense<[1, 2, 3]> : tensor<3xi64> loc("a")
  %p, %q = graph.split %a {axis = 0 : i64, num_outputs = 2 : i64} : (tensor<3xi64>) -> (tensor<2xi64>, tensor<1xi64>) loc("split")
  func.return %q, %p : tensor<1xi64>, tensor<2xi64>
}

// -----

// Left alone: a constant without data (an elided blob), and an op the kernel
// rejects (index out of range: the interpreter reports it with its location).
// CHECK-LABEL: func.func @not_foldable()
// CHECK:         %n = graph.neg %w
// CHECK:         %g = graph.gather %a, %i
// CHECK:         func.return %n, %g
func.func @not_foldable() -> (tensor<32xf32>, tensor<1xf32>) {
  %w = graph.constant dense_resource<__elided__> : tensor<32xf32> loc("w")
  %n = graph.neg %w : (tensor<32xf32>) -> tensor<32xf32> loc("neg")
  %a = graph.constant dense<[1.0, 2.0]> : tensor<2xf32> loc("a")
  %i = graph.constant dense<[5]> : tensor<1xi64> loc("i")
  %g = graph.gather %a, %i {axis = 0 : i64} : (tensor<2xf32>, tensor<1xi64>) -> tensor<1xf32> loc("gather")
  func.return %n, %g : tensor<32xf32>, tensor<1xf32>
}

// -----

// A shape-only weight (frontend/builder.py's placeholder) is not evaluated: what is computed
// from it is shape-only too - a splat of 0 marked with the weight's name and the result's -
// whatever the other operands hold; an op with a non-constant operand stays.
// CHECK-LABEL: func.func @shape_only(
// CHECK-NEXT:    %m = graph.constant {geir.placeholder = "w/t/m"} dense<0.000000e+00> : tensor<3x2xf32> loc("mul")
// CHECK-NEXT:    %y = graph.add %x, %m
// CHECK-NEXT:    func.return %m, %y
func.func @shape_only(%x: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %w = graph.constant {geir.placeholder = "w"} dense<0.0> : tensor<2x3xf32> loc("w")
  %t = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32> loc("transpose")
  %s = graph.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32> loc("s")
  %m = graph.mul %t, %s : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32> loc("mul")
  %y = graph.add %x, %m : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32> loc("add")
  func.return %m, %y : tensor<3x2xf32>, tensor<3x2xf32>
}
