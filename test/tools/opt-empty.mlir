// An empty input is an empty module, as in upstream mlir-opt: empty stdin, a file of
// comments, and an empty `// -----` chunk (this file's first).
// RUN: geir-opt < /dev/null | filecheck %s --check-prefix=EMPTY
// RUN: geir-opt %s | filecheck %s --check-prefix=WHOLE
// RUN: geir-opt %s --split-input-file | filecheck %s

// EMPTY:      builtin.module {
// EMPTY-NEXT: }
// WHOLE:      builtin.module {
// WHOLE-NEXT:   func.func @f() {
// CHECK:      builtin.module {
// CHECK-NEXT: }
// CHECK-NEXT: // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @f() {

// -----
func.func @f() {
  func.return
}
