// --timing prints a wall-time table to stderr: parse, verify, each pass, print, total.
// RUN: geir-opt %s -p 'cse,dce' --timing -o /dev/null 2>&1 | filecheck %s

// CHECK:      ... Execution time report ...
// CHECK:      Total Execution Time: {{[0-9.]+}} seconds
// CHECK:      ----Wall Time----  ----Name----
// CHECK-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  parse
// CHECK-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  verify
// CHECK-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  cse
// CHECK-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  dce
// CHECK-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  print
// CHECK-NEXT: {{[0-9.]+}} (100.0%)  Total
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = graph.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
