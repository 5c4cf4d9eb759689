// A name that is not registered (op, type) is pointed at by its own span, not at
// the token after it (which may be on the next line).
// RUN: not geir-opt %s --split-input-file 2>&1 | filecheck %s

// CHECK:      geir-opt: error: {{.*}}opt-unregistered.mlir:[[# @LINE + 4]]:8: Operation graph.bogus_op is not registered
// CHECK-NEXT:   %a = graph.bogus_op
// CHECK-NEXT:        ^^^^^^^^^^^^^^{{$}}
func.func @custom() {
  %a = graph.bogus_op
  func.return
}

// -----
// CHECK:      geir-opt: error: {{.*}}opt-unregistered.mlir:[[# @LINE + 4]]:8: Operation graph.bogus_op is not registered
// CHECK-NEXT:   %a = "graph.bogus_op"() : () -> tensor<2xf32>
// CHECK-NEXT:        ^^^^^^^^^^^^^^^^{{$}}
func.func @generic() {
  %a = "graph.bogus_op"() : () -> tensor<2xf32>
  func.return
}

// -----
// CHECK:      geir-opt: error: {{.*}}opt-unregistered.mlir:[[# @LINE + 3]]:21: 'foo.bar' is not registered
// CHECK-NEXT:   func.func @type(%x: !foo.bar) {
// CHECK-NEXT:                       ^^^^^^^^{{$}}
func.func @type(%x: !foo.bar) {
  func.return
}
