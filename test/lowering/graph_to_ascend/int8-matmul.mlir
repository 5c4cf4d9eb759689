// convert-graph-to-ascend on an int8 matmul with a per-column dequantize: one mix kernel
// writing f32 (docs/quantization.md "Kernels").
// RUN: geir-opt %s -p graph-fuse,convert-graph-to-ascend | filecheck %s

// The cube: i8 l1 / l0a / l0b tiles (K in fractals of 32), i32 l0c; FIX stages the i32 tile
// in the kernel's scratch; the epilogue converts it to f32 and multiplies by the [N] scales
// broadcast over the rows (a column side): (x - 0) * scale as reference/graph.py computes it.
// CHECK-LABEL: ascend.kernel @k0_fusion(
// CHECK-SAME:    %d: memref<40x72xf32, "gm">, %acc: memref<40x72xi32, "gm">)
// CHECK-SAME:    core_type = "mix", geir.scratch = 1 : i64, template = "matmul"
// CHECK-DAG:     ascend.alloc {{.*}} : memref<{{[0-9]+}}x{{[0-9]+}}xi8, "l1">
// CHECK-DAG:     ascend.alloc {{.*}} : memref<{{[0-9]+}}x{{[0-9]+}}xi32, "l0c">
// CHECK:         ascend.mmad {{.*}} : memref<{{[0-9]+}}x{{(32|64|96|128|160|192|224|256)}}xi8, "l0a">, memref<{{.*}}xi8, "l0b">, memref<{{.*}}xi32, "l0c">
// CHECK:         ascend.copy %l0c, {{.*}} : memref<{{.*}}xi32, "l0c"> to memref<{{.*}}xi32, {{.*}}"gm">
// The epilogue's rows are split between the block's two vector cores (ascend.sub_block 0, 1).
// CHECK:         ascend.sub_block 0 {
// CHECK:           ascend.vcast {{.*}} : memref<{{.*}}xi32, {{.*}}"ub">, memref<{{.*}}xf32, {{.*}}"ub">
// CHECK:           ascend.vbrcb {{.*}} : memref<1x{{[0-9]+}}xf32, "ub">, memref<{{[0-9]+}}x{{[0-9]+}}xf32, {{.*}}"ub">
// CHECK-NEXT:      ascend.vmul
// CHECK-NOT:       ascend.vcast
// CHECK:           ascend.copy {{.*}} : memref<{{.*}}xf32, {{.*}}"ub"> to memref<{{.*}}xf32, {{.*}}"gm">
// CHECK:         ascend.sub_block 1 {
// CHECK:           ascend.vcast
// CHECK:         ascend.launch @k0_fusion
// CHECK-NOT:     ascend.launch
func.func @matmul_dq(%x: tensor<40x100xi8>, %w: tensor<100x72xi8>, %s: tensor<72xf32>) -> tensor<40x72xf32> {
  %y = graph.matmul %x, %w : (tensor<40x100xi8>, tensor<100x72xi8>) -> tensor<40x72xi32>
  %d = graph.dequantize %y, %s : (tensor<40x72xi32>, tensor<72xf32>) -> tensor<40x72xf32>
  func.return %d : tensor<40x72xf32>
}
