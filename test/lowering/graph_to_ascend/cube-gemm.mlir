// convert-graph-to-ascend, cube kernels: gemm with both transpose flags, alpha,
// beta and a bias c broadcast over the rows.
// RUN: geir-opt %s -p convert-graph-to-ascend | filecheck %s

// a [K, M] and b [N, K] arrive transposed: l1 holds them as they lie in gm and
// MTE1 transposes them on the way to l0a / l0b (LoadData transpose). alpha and
// beta * c are a vector epilogue, so the kernel is a mix kernel: FIX stages the
// product in y, MTE2 brings it and the row of c into ub, V scales, broadcasts
// and adds, MTE3 writes y - each of the block's two vector cores on half the rows.
// CHECK-LABEL: ascend.kernel @{{(gemm_)?}}k0_fc(
// CHECK-SAME:    %a: memref<70x45xf32, "gm">, %b: memref<38x70xf32, "gm">, %c: memref<38xf32, "gm">, %y: memref<45x38xf32, "gm">)
// CHECK-SAME:    attributes {block_dim = 9 : i64, core_type = "mix", template = "matmul"} {
// CHECK-NEXT:    %l1a0 = ascend.alloc {offset = 0 : i64} : memref<80x16xf32, "l1">
// CHECK:         %l1b0 = ascend.alloc {offset = 10240 : i64} : memref<16x80xf32, "l1">
// CHECK:         %l0a0 = ascend.alloc {offset = 0 : i64} : memref<16x80xf32, "l0a">
// CHECK:         %l0b0 = ascend.alloc {offset = 0 : i64} : memref<80x16xf32, "l0b">
// CHECK:         %l0c = ascend.alloc {offset = 0 : i64} : memref<16x16xf32, "l0c">
// CHECK-NEXT:    %v0 = ascend.alloc {offset = 0 : i64} : memref<16x16xf32, "ub">
// CHECK-NEXT:    %v1 = ascend.alloc {offset = 1024 : i64} : memref<16x16xf32, "ub">
// CHECK-NEXT:    %s0 = ascend.alloc {offset = 2048 : i64} : memref<1x16xf32, "ub">
// CHECK-DAG:     %[[ALPHA:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG:     %[[BETA:.*]] = arith.constant 2.000000e+00 : f32
// CHECK:         %[[C:.*]] = memref.expand_shape %c {{.*}} into memref<1x38xf32, "gm">
// Each vector core's credit for its passes (flag ids 0 and 1).
// CHECK:         ascend.sub_block 0 {
// CHECK-NEXT:      ascend.set_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:    }
// CHECK-NEXT:    ascend.sub_block 1 {
// CHECK-NEXT:      ascend.set_flag MTE3 -> MTE2 id 1
// CHECK-NEXT:    }
// CHECK:         scf.for
// CHECK:           %[[AT:.*]] = memref.subview %a[0, %[[M0:.*]]] [70, 16] [1, 1]
// CHECK-NEXT:      ascend.copy %[[AT]], %l1a0 {pad} : memref<70x16xf32, strided<[45, 1], offset: ?>, "gm"> to memref<80x16xf32, "l1">
// CHECK-NEXT:      %[[BT:.*]] = memref.subview %b[%[[N0:.*]], 0] [16, 70] [1, 1]
// CHECK-NEXT:      ascend.copy %[[BT]], %l1b0 {pad} : memref<16x70xf32, strided<[70, 1], offset: ?>, "gm"> to memref<16x80xf32, "l1">
// CHECK:           ascend.copy %l1a0, %l0a0 {transpose} : memref<80x16xf32, "l1"> to memref<16x80xf32, "l0a">
// CHECK-NEXT:      ascend.copy %l1b0, %l0b0 {transpose} : memref<16x80xf32, "l1"> to memref<80x16xf32, "l0b">
// CHECK:           ascend.mmad %l0a0, %l0b0, %l0c {init}
// CHECK:           ascend.set_flag M -> FIX id 0
// CHECK-NEXT:      ascend.wait_flag M -> FIX id 0
// CHECK-NEXT:      %[[YT:.*]] = memref.subview %y[%[[M0]], %[[N0]]] [16, 16] [1, 1]
// CHECK-NEXT:      ascend.copy %l0c, %[[YT]] : memref<16x16xf32, "l0c">
// CHECK-NEXT:      ascend.set_flag FIX -> M id 0
// The tile's rows 0-7 on the first vector core, 8-15 on the second, each told that FIX is done.
// CHECK-NEXT:      ascend.set_flag FIX -> MTE2 id 0
// CHECK-NEXT:      ascend.sub_block 0 {
// CHECK-NEXT:        ascend.wait_flag FIX -> MTE2 id 0
// CHECK-NEXT:        %[[V0:.*]] = memref.subview %v0[0, 0] [8, 16]
// CHECK-NEXT:        %[[V1:.*]] = memref.subview %v1[0, 0] [8, 16]
// CHECK-NEXT:        ascend.wait_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:        %[[Y0:.*]] = memref.subview %y[%[[M0]], %[[N0]]] [8, 16] [1, 1]
// CHECK-NEXT:        ascend.copy %[[Y0]], %[[V0]] : memref<8x16xf32, strided<[38, 1], offset: ?>, "gm"> to memref<8x16xf32, strided<[16, 1]>, "ub">
// CHECK-NEXT:        %[[CT:.*]] = memref.subview %[[C]][0, %[[N0]]] [1, 16] [1, 1]
// CHECK-NEXT:        ascend.copy %[[CT]], %s0 : memref<1x16xf32, strided<[38, 1], offset: ?>, "gm"> to memref<1x16xf32, "ub">
// CHECK-NEXT:        ascend.set_flag MTE2 -> V id 0
// CHECK-NEXT:        ascend.wait_flag MTE2 -> V id 0
// CHECK-NEXT:        ascend.vbrcb %s0, %[[V1]]
// CHECK-NEXT:        ascend.vmuls %[[V0]], %[[ALPHA]], %[[V0]]
// CHECK-NEXT:        ascend.vmuls %[[V1]], %[[BETA]], %[[V1]]
// CHECK-NEXT:        ascend.vadd %[[V0]], %[[V1]], %[[V0]]
// CHECK-NEXT:        ascend.set_flag V -> MTE3 id 0
// CHECK-NEXT:        ascend.wait_flag V -> MTE3 id 0
// CHECK-NEXT:        ascend.copy %[[V0]], %[[Y0]]
// CHECK-NEXT:        ascend.set_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:      }
// CHECK-NEXT:      ascend.set_flag FIX -> MTE2 id 0
// CHECK-NEXT:      ascend.sub_block 1 {
// CHECK-NEXT:        ascend.wait_flag FIX -> MTE2 id 0
// CHECK-NEXT:        %[[M8:.*]] = arith.addi %[[M0]], %c8
// CHECK:             ascend.wait_flag MTE3 -> MTE2 id 1
// CHECK-NEXT:        %[[Y1:.*]] = memref.subview %y[%[[M8]], %[[N0]]] [8, 16] [1, 1]
// CHECK:             ascend.set_flag MTE2 -> V id 1
// CHECK:             ascend.copy %{{.*}}, %[[Y1]]
// CHECK-NEXT:        ascend.set_flag MTE3 -> MTE2 id 1
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// The edge tiles: only the valid columns are staged, read back (zero-padded to a
// 32-byte row in ub) and stored.
// CHECK:           %[[YE:.*]] = memref.subview %y[%{{.*}}, 32] [16, 6] [1, 1]
// CHECK-NEXT:      ascend.copy %l0c, %[[YE]] {pad} : memref<16x16xf32, "l0c"> to memref<16x6xf32
// CHECK:           %[[YE0:.*]] = memref.subview %y[%{{.*}}, 32] [8, 6] [1, 1]
// CHECK-NEXT:      ascend.copy %[[YE0]], %{{.*}} {pad} : memref<8x6xf32, strided<[38, 1], offset: ?>, "gm"> to memref<8x8xf32, strided<[16, 1]>, "ub">
// CHECK:           ascend.copy %{{.*}}, %[[YE0]] {pad} : memref<8x8xf32, strided<[16, 1]>, "ub"> to memref<8x6xf32
// CHECK:         ascend.wait_flag MTE1 -> MTE2 id 1
// CHECK-NEXT:    ascend.wait_flag M -> MTE1 id 1
// CHECK-NEXT:    ascend.wait_flag FIX -> M id 0
// CHECK-NEXT:    ascend.sub_block 0 {
// CHECK-NEXT:      ascend.wait_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:    }
// CHECK-NEXT:    ascend.sub_block 1 {
// CHECK-NEXT:      ascend.wait_flag MTE3 -> MTE2 id 1
// CHECK-NEXT:    }
// CHECK-NEXT:    ascend.return
func.func @gemm(%a: tensor<70x45xf32> {onnx.name = "a"}, %b: tensor<38x70xf32> {onnx.name = "b"}, %c: tensor<38xf32> {onnx.name = "c"}) -> (tensor<45x38xf32> {onnx.name = "y"}) {
  %y = graph.gemm %a, %b, %c {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_a = 1 : i64, trans_b = 1 : i64} : (tensor<70x45xf32>, tensor<38x70xf32>, tensor<38xf32>) -> tensor<45x38xf32> loc("fc")
  func.return %y : tensor<45x38xf32>
}
