// --generic keeps --elide-resources: a large constant prints as
// dense_resource<__elided__> in the generic form as in the custom one, and as a
// resource blob without it (the generic form reads back to the same bits).
// RUN: geir-opt %s --generic --elide-resources | filecheck %s
// RUN: geir-opt %s --generic | filecheck %s --check-prefix=BLOB
// RUN: geir-opt %s --generic | geir-opt | filecheck %s --check-prefix=ROUND

// CHECK:      %w = "graph.constant"() <{value = dense_resource<__elided__> : tensor<32xf32>}> : () -> tensor<32xf32>
// CHECK-NOT:  dialect_resources
// BLOB:       %w = "graph.constant"() <{value = dense_resource<w> : tensor<32xf32>}> : () -> tensor<32xf32>
// BLOB:       dialect_resources: {
// BLOB-NEXT:    builtin: {
// BLOB-NEXT:      w: "0x0400000000000000
// ROUND:      %w = graph.constant dense_resource<w> : tensor<32xf32>
// ROUND:      w: "0x0400000000000000
func.func @main() -> tensor<32xf32> {
  %w = graph.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]> : tensor<32xf32>
  func.return %w : tensor<32xf32>
}
