// graph.constant: small values print as literals, splats stay splats, large
// values are resource blobs that round-trip bit for bit (custom and generic
// form), and --elide-resources drops the blobs.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | filecheck %s --check-prefix=GENERIC
// RUN: geir-opt %s --generic | geir-opt | filecheck %s
// RUN: geir-opt %s --elide-resources | filecheck %s --check-prefix=ELIDED
// RUN: geir-opt %s --elide-resources | geir-opt | filecheck %s --check-prefix=ELIDED

// CHECK-LABEL: func.func @literals()
// CHECK-NEXT: %i = graph.constant dense<[1, -2, 3]> : tensor<3xi64>
// CHECK-NEXT: %f = graph.constant dense<{{\[\[}}1.500000e+00, -2.000000e+00], [0.000000e+00, 3.250000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT: %h = graph.constant dense<[1.000000e+00, 6.550400e+04]> : tensor<2xf16>
// CHECK-NEXT: %b = graph.constant dense<[true, false, true]> : tensor<3xi1>
// CHECK-NEXT: %u = graph.constant dense<[0, 255]> : tensor<2xui8>
// CHECK-NEXT: %s = graph.constant dense<4.200000e+01> : tensor<f32>
// CHECK-NEXT: %p = graph.constant dense<0.345584184> : tensor<f32>
// CHECK-NEXT: %sp = graph.constant dense<7> : tensor<4xi32>
// ELIDED-LABEL: func.func @literals()
// ELIDED: %sp = graph.constant dense<7> : tensor<4xi32>
func.func @literals() {
  %i = graph.constant dense<[1, -2, 3]> : tensor<3xi64>
  %f = graph.constant dense<[[1.5, -2.0], [0.0, 3.25]]> : tensor<2x2xf32>
  %h = graph.constant dense<[1.0, 65504.0]> : tensor<2xf16>
  %b = graph.constant dense<[true, false, true]> : tensor<3xi1>
  %u = graph.constant dense<[0, 255]> : tensor<2xui8>
  %s = graph.constant dense<42.0> : tensor<f32>
  %p = graph.constant dense<0.345584184> : tensor<f32>
  %sp = graph.constant dense<7> : tensor<4xi32>
  func.return
}

// A large splat stays a splat, never a blob.
// CHECK-LABEL: func.func @splat()
// CHECK-NEXT: %big_splat = graph.constant dense<1.500000e+00> : tensor<64x64xf32>
// ELIDED-LABEL: func.func @splat()
// ELIDED-NEXT: %big_splat = graph.constant dense<1.500000e+00> : tensor<64x64xf32>
func.func @splat() -> tensor<64x64xf32> {
  %big_splat = graph.constant dense<1.5> : tensor<64x64xf32>
  func.return %big_splat : tensor<64x64xf32>
}

// Blobs are named after the value; a hex literal becomes a blob too.
// CHECK-LABEL: func.func @blobs()
// CHECK-NEXT: %w = graph.constant dense_resource<w> : tensor<4x5xf32>
// CHECK-NEXT: %idx = graph.constant dense_resource<idx> : tensor<18xi64>
// CHECK-NEXT: %half = graph.constant dense_resource<half> : tensor<17xf16>
// CHECK-NEXT: %hex = graph.constant dense_resource<hex> : tensor<20xi8>
// CHECK-NEXT: %0 = graph.constant dense_resource<cst> : tensor<17xi8>
// CHECK-NEXT: %1 = graph.constant dense_resource<cst_1> : tensor<17xi8>
// ELIDED-LABEL: func.func @blobs()
// ELIDED-NEXT: %w = graph.constant dense_resource<__elided__> : tensor<4x5xf32>
// ELIDED-NEXT: %idx = graph.constant dense_resource<__elided__> : tensor<18xi64>
// ELIDED-NEXT: %half = graph.constant dense_resource<__elided__> : tensor<17xf16>
// ELIDED-NEXT: %hex = graph.constant dense_resource<__elided__> : tensor<20xi8>
// The generic form names the same blobs (printed below like the custom form's).
// GENERIC-LABEL: "func.func"() <{sym_name = "blobs"
// GENERIC-NEXT: %w = "graph.constant"() <{value = dense_resource<w> : tensor<4x5xf32>}> : () -> tensor<4x5xf32>
// GENERIC-NEXT: %idx = "graph.constant"() <{value = dense_resource<idx> : tensor<18xi64>}> : () -> tensor<18xi64>
// GENERIC-NEXT: %half = "graph.constant"() <{value = dense_resource<half> : tensor<17xf16>}> : () -> tensor<17xf16>
// GENERIC-NEXT: %hex = "graph.constant"() <{value = dense_resource<hex> : tensor<20xi8>}> : () -> tensor<20xi8>
func.func @blobs() {
  %w = graph.constant dense_resource<weights> : tensor<4x5xf32>
  %idx = graph.constant dense_resource<idx> : tensor<18xi64>
  %half = graph.constant dense_resource<half> : tensor<17xf16>
  %hex = graph.constant dense<"0x0102030405060708090A0B0C0D0E0F1011121314"> : tensor<20xi8>
  %0 = graph.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]> : tensor<17xi8>
  %1 = graph.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17]> : tensor<17xi8>
  func.return
}

// The resource section, with MLIR's blob encoding: alignment, then the bytes.
// CHECK:      {-#
// CHECK-NEXT:   dialect_resources: {
// CHECK-NEXT:     builtin: {
// CHECK-NEXT:       w: "0x04000000000000000000803F0000004000004040000080400000A0400000C0400000E040000000410000104100002041000030410000404100005041000060410000704100008041000088410000904100009841",
// CHECK-NEXT:       idx: "0x08000000F8FFFFFFFFFFFFFFF9FFFFFFFFFFFFFFFAFFFFFFFFFFFFFFFBFFFFFFFFFFFFFFFCFFFFFFFFFFFFFFFDFFFFFFFFFFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF0000000000000000010000000000000002000000000000000300000000000000040000000000000005000000000000000600000000000000070000000000000008000000000000000900000000000000",
// CHECK-NEXT:       half: "0x02000000000000340038003A003C003D003E003F004080400041804100428042004380430044",
// CHECK-NEXT:       hex: "0x010000000102030405060708090A0B0C0D0E0F1011121314",
// CHECK-NEXT:       cst: "0x01000000000102030405060708090A0B0C0D0E0F10",
// CHECK-NEXT:       cst_1: "0x01000000000102030405060708090A0B0C0D0E0F11"
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: #-}
// ELIDED-NOT: dialect_resources
// GENERIC:      dialect_resources: {
// GENERIC-NEXT:   builtin: {
// GENERIC-NEXT:     w: "0x04000000000000000000803F
{-#
  dialect_resources: {
    builtin: {
      weights: "0x04000000000000000000803F0000004000004040000080400000A0400000C0400000E040000000410000104100002041000030410000404100005041000060410000704100008041000088410000904100009841",
      idx: "0x08000000F8FFFFFFFFFFFFFFF9FFFFFFFFFFFFFFFAFFFFFFFFFFFFFFFBFFFFFFFFFFFFFFFCFFFFFFFFFFFFFFFDFFFFFFFFFFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF0000000000000000010000000000000002000000000000000300000000000000040000000000000005000000000000000600000000000000070000000000000008000000000000000900000000000000",
      half: "0x02000000000000340038003A003C003D003E003F004080400041804100428042004380430044"
    }
  }
#-}
