// convert-graph-to-ascend: rotary_embedding is a row kernel (never the reference fallback) at
// LLaMA-7B's sizes (32 heads of 128, sequence 2048): the tile holds whole rows of the head
// dim; rotate_half is a vmuls by -1 and a vcopy on the halves (subviews at offset 0 and 64),
// then x * cos + rot * sin: a tile is one head's rows, so cos / sin tiles need no broadcast.
// RUN: geir-opt %s --split-input-file -p 'convert-graph-to-ascend{double-buffer=true},ascend-plan-memory' | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_rope(
// CHECK-SAME:    attributes {block_dim = 48 : i64, core_type = "vector", template = "row"}
// CHECK:         scf.for
// CHECK:         %[[X2:.*]] = memref.subview %[[X:.*]][0, 0, 64] [{{.*}}, 64] [1, 1, 1] : memref<{{.*}}x128xf16, "ub"> to memref<{{.*}}x64xf16, strided<[{{.*}}, 128, 1], offset: 64>, "ub">
// CHECK:         ascend.vmuls %[[X2]], %{{.*}}, %{{.*}} : memref<{{.*}}x64xf16, strided<[{{.*}}, 128, 1], offset: 64>, "ub">, f16, memref<{{.*}}x64xf16, strided<[{{.*}}, 128, 1]>, "ub">
// CHECK-NEXT:    ascend.vcopy
// CHECK-NEXT:    ascend.vmul
// CHECK-NEXT:    ascend.vmul
// CHECK-NEXT:    ascend.vadd
func.func @rope(%x: tensor<1x32x2048x128xf16>, %cos: tensor<2048x128xf16>, %sin: tensor<2048x128xf16>) -> tensor<1x32x2048x128xf16> {
  %y = graph.rotary_embedding %x, %cos, %sin : (tensor<1x32x2048x128xf16>, tensor<2048x128xf16>, tensor<2048x128xf16>) -> tensor<1x32x2048x128xf16> loc("rope")
  func.return %y : tensor<1x32x2048x128xf16>
}

// -----

// The interleaved form needs strided vector operands: the row template rejects it and it runs
// in its own reference kernel (the fallback says so).
// CHECK-LABEL: ascend.kernel @k0_rope(
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", fallback}
// CHECK-NEXT:    ascend.reference "graph.rotary_embedding"
func.func @rope_pairs(%x: tensor<1x4x16x64xf32>, %cos: tensor<16x64xf32>, %sin: tensor<16x64xf32>) -> tensor<1x4x16x64xf32> {
  %y = graph.rotary_embedding %x, %cos, %sin {interleaved = 1 : i64} : (tensor<1x4x16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<1x4x16x64xf32> loc("rope")
  func.return %y : tensor<1x4x16x64xf32>
}
