// ascend.reference, the lowering's fallback: a graph op's numpy semantics on whole gm buffers.
// Round trip in the custom and the generic form (errors: reference-invalid.mlir).
// RUN: geir-opt %s --split-input-file | filecheck %s
// RUN: geir-opt %s --split-input-file --generic | geir-opt --split-input-file | filecheck %s

!x = memref<1x8x4x4xf32, "gm">
// CHECK-LABEL: ascend.kernel @lrn(
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", fallback}
// CHECK-NEXT:    ascend.reference "graph.lrn" ins(%x : memref<1x8x4x4xf32, "gm">) outs(%y : memref<1x8x4x4xf32, "gm">) {size = 3 : i64, alpha = 2.000000e-04 : f32}
ascend.kernel @lrn(%x: !x, %y: !x) attributes {block_dim = 1 : i64, core_type = "vector", fallback} {
  ascend.reference "graph.lrn" ins(%x : !x) outs(%y : !x) {size = 3 : i64, alpha = 2.0e-04 : f32}
  ascend.return
}

// -----

// Several inputs and outputs; no attributes.
// CHECK-LABEL: ascend.kernel @split(
// CHECK-NEXT:    ascend.reference "graph.split" ins(%x : memref<4x2xf32, "gm">, %s : memref<2xi64, "gm">) outs(%a : memref<2x2xf32, "gm">, %b : memref<2x2xf32, "gm">)
// CHECK-NEXT:    ascend.return
ascend.kernel @split(%x: memref<4x2xf32, "gm">, %s: memref<2xi64, "gm">, %a: memref<2x2xf32, "gm">, %b: memref<2x2xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector", fallback} {
  ascend.reference "graph.split" ins(%x : memref<4x2xf32, "gm">, %s : memref<2xi64, "gm">) outs(%a : memref<2x2xf32, "gm">, %b : memref<2x2xf32, "gm">)
  ascend.return
}

