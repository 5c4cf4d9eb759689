// Invalid graph.constant ops, one per `// -----` chunk: verifier errors name the
// op and its location; parser errors give file:line:col.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.constant' at "c": value type tensor<2xf32> differs from result type tensor<3xf32>
// CHECK-NEXT: note: see current operation: %0 = "graph.constant"
func.func @result_type_differs() {
  %0 = "graph.constant"() <{value = dense<1.000000e+00> : tensor<2xf32>}> : () -> tensor<3xf32> loc("c")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.constant' at "c": Unexpected attribute 1.000000e+00 : f32
// CHECK-NEXT: note: see current operation: %0 = "graph.constant"
func.func @value_not_dense() {
  %0 = "graph.constant"() <{value = 1.000000e+00 : f32}> : () -> tensor<f32> loc("c")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}constant-invalid.mlir:{{[0-9]+}}:{{[0-9]+}}: graph.constant expects a dense or dense_resource value
// CHECK-NEXT: {{.*}}
// CHECK-NEXT: ^
func.func @custom_value_not_dense() {
  %0 = graph.constant 1.000000e+00 : f32
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.constant': result 'output' at position 0 does not verify:
// CHECK-NEXT: vector<2xf32> should be of base attribute tensor
// CHECK-NEXT: note: see current operation: %0 = "graph.constant"
func.func @vector_value() {
  %0 = graph.constant dense<1.000000e+00> : vector<2xf32>
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}constant-invalid.mlir: resource 'w' holds 8 bytes, tensor<4xf32> needs 16
func.func @blob_too_short() {
  %w = graph.constant dense_resource<w> : tensor<4xf32>
  func.return
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F00000040"
    }
  }
#-}

// -----
// CHECK-NEXT: error: {{.*}}constant-invalid.mlir:{{[0-9]+}}:{{[0-9]+}}: Shape mismatch in dense literal. Expected [2] shape from the type, but got [3] shape.
// CHECK-NEXT: {{.*}}
// CHECK-NEXT: ^
func.func @literal_count() {
  %0 = graph.constant dense<[1, 2, 3]> : tensor<2xi32>
  func.return
}
