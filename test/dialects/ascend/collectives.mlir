// The collectives: hccl kernels round-trip in the custom and the generic form, and each
// verifier error is one message.
// RUN: geir-opt %s --split-input-file | filecheck %s
// RUN: geir-opt %s --split-input-file --generic | geir-opt --split-input-file | filecheck %s
// RUN: not geir-opt %S/Inputs/collectives-invalid.mlir --split-input-file 2>&1 | filecheck %S/Inputs/collectives-invalid.mlir

// CHECK-LABEL: ascend.kernel @all_reduce(
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "hccl"}
// CHECK-NEXT:    ascend.all_reduce %x, %y {ranks = array<i64: 0, 1, 2, 3>, reduction = "sum"} : memref<8x64xf16, "gm">, memref<8x64xf16, "gm">
ascend.kernel @all_reduce(%x: memref<8x64xf16, "gm">, %y: memref<8x64xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl"} {
  ascend.all_reduce %x, %y {ranks = array<i64: 0, 1, 2, 3>, reduction = "sum"} : memref<8x64xf16, "gm">, memref<8x64xf16, "gm">
  ascend.return
}
// CHECK-LABEL: ascend.kernel @all_gather(
// CHECK-NEXT:    ascend.all_gather %x, %y {ranks = array<i64: 0, 1>, axis = 1 : i64} : memref<8x64xf32, "gm">, memref<8x128xf32, "gm">
ascend.kernel @all_gather(%x: memref<8x64xf32, "gm">, %y: memref<8x128xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl"} {
  ascend.all_gather %x, %y {ranks = array<i64: 0, 1>, axis = 1 : i64} : memref<8x64xf32, "gm">, memref<8x128xf32, "gm">
  ascend.return
}
// CHECK-LABEL: ascend.kernel @reduce_scatter(
// CHECK-NEXT:    ascend.reduce_scatter %x, %y {ranks = array<i64: 2, 3>, axis = 0 : i64, reduction = "max"} : memref<8x64xf32, "gm">, memref<4x64xf32, "gm">
ascend.kernel @reduce_scatter(%x: memref<8x64xf32, "gm">, %y: memref<4x64xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl"} {
  ascend.reduce_scatter %x, %y {ranks = array<i64: 2, 3>, axis = 0 : i64, reduction = "max"} : memref<8x64xf32, "gm">, memref<4x64xf32, "gm">
  ascend.return
}
// CHECK-LABEL: ascend.kernel @all_to_all(
// CHECK-NEXT:    ascend.all_to_all %x, %y {ranks = array<i64: 0, 1>, split_axis = 0 : i64, concat_axis = 1 : i64} : memref<8x64xf32, "gm">, memref<4x128xf32, "gm">
ascend.kernel @all_to_all(%x: memref<8x64xf32, "gm">, %y: memref<4x128xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl"} {
  ascend.all_to_all %x, %y {ranks = array<i64: 0, 1>, split_axis = 0 : i64, concat_axis = 1 : i64} : memref<8x64xf32, "gm">, memref<4x128xf32, "gm">
  ascend.return
}
// CHECK-LABEL: ascend.kernel @send(
// CHECK-NEXT:    ascend.send %x {peer = 1 : i64} : memref<8x64xf16, "gm">
ascend.kernel @send(%x: memref<8x64xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl"} {
  ascend.send %x {peer = 1 : i64} : memref<8x64xf16, "gm">
  ascend.return
}
// CHECK-LABEL: ascend.kernel @recv(
// CHECK-NEXT:    ascend.recv %y {peer = 0 : i64} : memref<8x64xf16, "gm">
ascend.kernel @recv(%y: memref<8x64xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "hccl"} {
  ascend.recv %y {peer = 0 : i64} : memref<8x64xf16, "gm">
  ascend.return
}
