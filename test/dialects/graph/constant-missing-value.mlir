// A generic graph.constant without its value is a verifier error, not a crash.
// RUN: not geir-opt %s 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.constant' at "c": property 'value' expected in operation 'graph.constant'
// CHECK-NEXT: note: see current operation: %0 = "graph.constant"() : () -> tensor<2xf32>
func.func @missing_value() {
  %0 = "graph.constant"() : () -> tensor<2xf32> loc("c")
  func.return
}
