// ascend.sub_block: what one vector core of a mix kernel's block runs (the 910B's two AIVs
// per AIC). Round trip in the custom and the generic form.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: ascend.kernel @halves(
// CHECK:         ascend.set_flag FIX -> MTE2 id 0
// CHECK-NEXT:    ascend.sub_block 0 {
// CHECK-NEXT:      ascend.wait_flag FIX -> MTE2 id 0
// CHECK-NEXT:      %[[A:.*]] = memref.subview %s[0, 0] [16, 64]
// CHECK-NEXT:      ascend.copy %[[A]], %u
// CHECK-NEXT:      ascend.set_flag MTE2 -> V id 0
// CHECK-NEXT:      ascend.wait_flag MTE2 -> V id 0
// CHECK-NEXT:      ascend.vmuls %u, %{{.*}}, %u
// CHECK-NEXT:    }
// CHECK-NEXT:    ascend.set_flag FIX -> MTE2 id 0
// CHECK-NEXT:    ascend.sub_block 1 attributes {note = "the second AIV"} {
// CHECK-NEXT:      ascend.wait_flag FIX -> MTE2 id 0
// CHECK-NEXT:      %[[B:.*]] = memref.subview %s[16, 0] [16, 64]
// CHECK-NEXT:      ascend.copy %[[B]], %u
// CHECK:         }
// CHECK-NEXT:    ascend.return
ascend.kernel @halves(%s: memref<32x64xf32, "gm">) attributes {core_type = "mix", block_dim = 1 : i64} {
  %u = ascend.alloc : memref<16x64xf32, "ub">
  %two = arith.constant 2.0 : f32
  ascend.set_flag FIX -> MTE2 id 0
  ascend.sub_block 0 {
    ascend.wait_flag FIX -> MTE2 id 0
    %a = memref.subview %s[0, 0] [16, 64] [1, 1] : memref<32x64xf32, "gm"> to memref<16x64xf32, strided<[64, 1]>, "gm">
    ascend.copy %a, %u : memref<16x64xf32, strided<[64, 1]>, "gm"> to memref<16x64xf32, "ub">
    ascend.set_flag MTE2 -> V id 0
    ascend.wait_flag MTE2 -> V id 0
    ascend.vmuls %u, %two, %u : memref<16x64xf32, "ub">, f32, memref<16x64xf32, "ub">
  }
  ascend.set_flag FIX -> MTE2 id 0
  ascend.sub_block 1 attributes {note = "the second AIV"} {
    ascend.wait_flag FIX -> MTE2 id 0
    %b = memref.subview %s[16, 0] [16, 64] [1, 1] : memref<32x64xf32, "gm"> to memref<16x64xf32, strided<[64, 1], offset: 1024>, "gm">
    ascend.copy %b, %u : memref<16x64xf32, strided<[64, 1], offset: 1024>, "gm"> to memref<16x64xf32, "ub">
  }
  ascend.return
}
