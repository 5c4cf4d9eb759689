// Verifier errors of the elementwise ops, one per `// -----` chunk; each names the op,
// its location and the rule it breaks, then shows the op in generic form.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.add' at "add": result #0 has type tensor<2x4xf32>, but the operands imply tensor<2x3xf32>
// CHECK-NEXT: note: see current operation: %0 = "graph.add"
func.func @result_shape(%x: tensor<2x3xf32>, %y: tensor<3xf32>) {
  %0 = graph.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x4xf32> loc("add")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.mul' at "mul": shapes [2, 3] and [4] do not broadcast
// CHECK-NEXT: note: see current operation: %0 = "graph.mul"
func.func @no_broadcast(%x: tensor<2x3xf32>, %y: tensor<4xf32>) {
  %0 = graph.mul %x, %y : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32> loc("mul")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.sub' at "sub": operands must have one element type, got {{f32, f16|f16, f32}}
// CHECK-NEXT: note: see current operation: %0 = "graph.sub"
func.func @element_types_differ(%x: tensor<2xf32>, %y: tensor<2xf16>) {
  %0 = graph.sub %x, %y : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32> loc("sub")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.relu' at "relu": expects 1 operand, got 2
// CHECK-NEXT: note: see current operation: %0 = "graph.relu"
func.func @too_many_operands(%x: tensor<2xf32>) {
  %0 = graph.relu %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("relu")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.div' at "div": expects 2 operands, got 1
// CHECK-NEXT: note: see current operation: %0 = "graph.div"
func.func @too_few_operands(%x: tensor<2xf32>) {
  %0 = graph.div %x : (tensor<2xf32>) -> tensor<2xf32> loc("div")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.sum' at "sum": expects at least 1 operands, got 0
// CHECK-NEXT: note: see current operation: %0 = "graph.sum"
func.func @variadic_without_operands() {
  %0 = graph.sum : () -> tensor<2xf32> loc("sum")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.sigmoid' at "sigmoid": operand must have a floating-point element type, got i32
// CHECK-NEXT: note: see current operation: %0 = "graph.sigmoid"
func.func @float_only(%x: tensor<2xi32>) {
  %0 = graph.sigmoid %x : (tensor<2xi32>) -> tensor<2xi32> loc("sigmoid")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.logical_not' at "not": operand must be a tensor of i1
// CHECK-NEXT: note: see current operation: %0 = "graph.logical_not"
func.func @not_of_float(%x: tensor<2xf32>) {
  %0 = graph.logical_not %x : (tensor<2xf32>) -> tensor<2xf32> loc("not")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.less' at "less": result #0 has type tensor<2xf32>, but the operands imply tensor<2xi1>
// CHECK-NEXT: note: see current operation: %0 = "graph.less"
func.func @compare_result_not_bool(%x: tensor<2xf32>) {
  %0 = graph.less %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("less")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.where' at "where": condition must be a tensor of i1
// CHECK-NEXT: note: see current operation: %0 = "graph.where"
func.func @where_condition_not_bool(%c: tensor<2xf32>, %x: tensor<2xf32>) {
  %0 = graph.where %c, %x, %x : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("where")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.where' at "where": the two branches must have one element type, got {{f32, i32|i32, f32}}
// CHECK-NEXT: note: see current operation: %0 = "graph.where"
func.func @where_branches_differ(%c: tensor<2xi1>, %x: tensor<2xf32>, %y: tensor<2xi32>) {
  %0 = graph.where %c, %x, %y : (tensor<2xi1>, tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32> loc("where")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.clip' at "clip": clip bounds must be scalars, got tensor<2xf32>
// CHECK-NEXT: note: see current operation: %0 = "graph.clip"
func.func @clip_bound_not_scalar(%x: tensor<4xf32>, %lo: tensor<2xf32>) {
  %0 = graph.clip %x, %lo : (tensor<4xf32>, tensor<2xf32>) -> tensor<4xf32> loc("clip")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.prelu' at "prelu": slope [2, 3] does not broadcast to [3]
// CHECK-NEXT: note: see current operation: %0 = "graph.prelu"
func.func @prelu_slope_too_big(%x: tensor<3xf32>, %s: tensor<2x3xf32>) {
  %0 = graph.prelu %x, %s : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<3xf32> loc("prelu")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.cast' at "cast": requires attribute 'to'
// CHECK-NEXT: note: see current operation: %0 = "graph.cast"
func.func @cast_without_to(%x: tensor<2xf32>) {
  %0 = graph.cast %x : (tensor<2xf32>) -> tensor<2xf16> loc("cast")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.cast' at "cast": result #0 has type tensor<2xf16>, but the operands imply tensor<2xi32>
// CHECK-NEXT: note: see current operation: %0 = "graph.cast"
func.func @cast_result_type(%x: tensor<2xf32>) {
  %0 = graph.cast %x {to = i32} : (tensor<2xf32>) -> tensor<2xf16> loc("cast")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.leaky_relu' at "leaky_relu": attribute 'alpha' must be a float, got 1 : i64
// CHECK-NEXT: note: see current operation: %0 = "graph.leaky_relu"
func.func @attribute_of_wrong_kind(%x: tensor<2xf32>) {
  %0 = graph.leaky_relu %x {alpha = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32> loc("leaky_relu")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.relu' at "relu": property 'alpha' is not defined by the operation 'graph.relu'. Use the dictionary attribute to add arbitrary information to the operation.
// CHECK-NEXT: note: see current operation: %0 = "graph.relu"
func.func @unknown_attribute(%x: tensor<2xf32>) {
  %0 = graph.relu %x {alpha = 1.000000e+00 : f32} : (tensor<2xf32>) -> tensor<2xf32> loc("relu")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 5]]:3: 'graph.dropout' at "dropout": training_mode dropout is not supported at inference
// CHECK-NEXT: note: see current operation: %0 = "graph.dropout"
func.func @dropout_in_training(%x: tensor<2xf32>) {
  %r = graph.constant dense<5.000000e-01> : tensor<f32>
  %t = graph.constant dense<true> : tensor<i1>
  %0 = graph.dropout %x, %r, %t : (tensor<2xf32>, tensor<f32>, tensor<i1>) -> tensor<2xf32> loc("dropout")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.relu' at "relu": operand #0 must be a tensor, got f32
// CHECK-NEXT: note: see current operation: %0 = "graph.relu"
func.func @operand_not_a_tensor(%x: f32) {
  %0 = graph.relu %x : (f32) -> f32 loc("relu")
  func.return
}
