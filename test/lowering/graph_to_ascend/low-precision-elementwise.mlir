// convert-graph-to-ascend, row kernels of elementwise ops in f16 and bf16. f16 computes in
// f16, one rounding per instruction. bf16 has no vector arithmetic on the 910B: each input
// tile arrives in a bf16 staging buffer, one vcast makes it f32, the chain runs in f32 and
// one vcast rounds each output back to bf16 before it is stored.
// RUN: geir-opt %s --split-input-file -p graph-fuse,convert-graph-to-ascend | filecheck %s

// Tiles are sized in bytes: an f16 tile holds twice the elements of an f32 one in the same
// ub; a bf16 tile needs its f32 buffer and its bf16 staging buffer, so it holds 2/3 of them.
// CHECK-LABEL: ascend.kernel @k0_add(
// CHECK-SAME:    %x: memref<48x65536xf32, "gm">
// CHECK:         ascend.alloc {offset = 0 : i64} : memref<12288xf32, "ub">
func.func @add(%x: tensor<48x65536xf32>, %y: tensor<48x65536xf32>) -> tensor<48x65536xf32> {
  %z = graph.add %x, %y : (tensor<48x65536xf32>, tensor<48x65536xf32>) -> tensor<48x65536xf32> loc("add")
  func.return %z : tensor<48x65536xf32>
}

// -----

// CHECK-LABEL: ascend.kernel @k0_add(
// CHECK-SAME:    %x: memref<48x65536xf16, "gm">
// CHECK:         ascend.alloc {offset = 0 : i64} : memref<24576xf16, "ub">
// CHECK-NOT:     ascend.vcast
// CHECK:         ascend.vadd %{{.*}} : memref<24576xf16
func.func @add(%x: tensor<48x65536xf16>, %y: tensor<48x65536xf16>) -> tensor<48x65536xf16> {
  %z = graph.add %x, %y : (tensor<48x65536xf16>, tensor<48x65536xf16>) -> tensor<48x65536xf16> loc("add")
  func.return %z : tensor<48x65536xf16>
}

// -----

// CHECK-LABEL: ascend.kernel @k0_add(
// CHECK-SAME:    %x: memref<48x65536xbf16, "gm">
// CHECK:         ascend.alloc {offset = 0 : i64} : memref<8192xf32, "ub">
// CHECK-NEXT:    ascend.alloc {offset = 32768 : i64} : memref<8192xbf16, "ub">
// CHECK:         ascend.vcast %{{.*}} : memref<8192xbf16, "ub">, memref<8192xf32, "ub">
// CHECK:         ascend.vadd %{{.*}} : memref<8192xf32, "ub">
// CHECK-NEXT:    ascend.vcast %{{.*}} : memref<8192xf32, "ub">, memref<8192xbf16, "ub">
func.func @add(%x: tensor<48x65536xbf16>, %y: tensor<48x65536xbf16>) -> tensor<48x65536xbf16> {
  %z = graph.add %x, %y : (tensor<48x65536xbf16>, tensor<48x65536xbf16>) -> tensor<48x65536xbf16> loc("add")
  func.return %z : tensor<48x65536xbf16>
}

// -----

// f16: a broadcast add, a constant scale (an f16 immediate of vmuls) and a sigmoid, in place.
// CHECK-LABEL: ascend.kernel @k0_add(
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", template = "row"}
// CHECK:         %[[HALF:.*]] = arith.constant 5.000000e-01 : f16
// CHECK:         ascend.copy %x, %[[X:.*]] : memref<8x200xf16, "gm"> to memref<8x200xf16, strided<[208, 1]>, "ub">
// CHECK:         ascend.vbrcb %{{.*}}, %[[YB:.*]] : memref<1x200xf16, strided<[208, 1]>, "ub">, memref<8x200xf16, strided<[208, 1]>, "ub">
// CHECK-NEXT:    ascend.vadd %[[X]], %[[YB]], %[[X]] : memref<8x200xf16, strided<[208, 1]>, "ub">
// CHECK-NEXT:    ascend.vmuls %[[X]], %[[HALF]], %[[X]] : memref<8x200xf16, strided<[208, 1]>, "ub">, f16, memref<8x200xf16, strided<[208, 1]>, "ub">
// CHECK-NEXT:    ascend.vsigmoid %[[X]], %[[X]] : memref<8x200xf16, strided<[208, 1]>, "ub">
// CHECK:         ascend.copy %[[X]], %c : memref<8x200xf16, strided<[208, 1]>, "ub"> to memref<8x200xf16, "gm">
func.func @chain(%x: tensor<8x200xf16>, %y: tensor<200xf16>) -> tensor<8x200xf16> {
  %h = graph.constant dense<5.000000e-01> : tensor<f16>
  %a = graph.add %x, %y : (tensor<8x200xf16>, tensor<200xf16>) -> tensor<8x200xf16> loc("add")
  %b = graph.mul %a, %h : (tensor<8x200xf16>, tensor<f16>) -> tensor<8x200xf16> loc("half")
  %c = graph.sigmoid %b : (tensor<8x200xf16>) -> tensor<8x200xf16> loc("sig")
  func.return %c : tensor<8x200xf16>
}

// -----

// bf16: the same chain in f32 (the scale an f32 immediate), between one vcast per input and
// one per output; the rows of the bf16 staging buffers are 208 wide (32-byte blocks of 16),
// those of the f32 buffers 200 (blocks of 8).
// CHECK-LABEL: ascend.kernel @k0_add(
// CHECK-SAME:    attributes {block_dim = 1 : i64, core_type = "vector", template = "row"}
// CHECK-NEXT:    %[[X:.*]] = ascend.alloc {offset = 0 : i64} : memref<8x200xf32, "ub">
// CHECK-NEXT:    %[[XS:.*]] = ascend.alloc {offset = 6400 : i64} : memref<8x208xbf16, "ub">
// CHECK-NEXT:    %[[Y:.*]] = ascend.alloc {offset = 9728 : i64} : memref<1x200xf32, "ub">
// CHECK-NEXT:    %[[YS:.*]] = ascend.alloc {offset = 10528 : i64} : memref<1x208xbf16, "ub">
// CHECK-NEXT:    %[[YB:.*]] = ascend.alloc {offset = 10944 : i64} : memref<8x200xf32, "ub">
// CHECK:         %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK:         ascend.copy %x, %[[XV:.*]] : memref<8x200xbf16, "gm"> to memref<8x200xbf16, strided<[208, 1]>, "ub">
// CHECK:         ascend.copy %{{.*}}, %[[YV:.*]] : memref<1x200xbf16, "gm"> to memref<1x200xbf16, strided<[208, 1]>, "ub">
// CHECK:         ascend.vcast %[[XV]], %[[X]] : memref<8x200xbf16, strided<[208, 1]>, "ub">, memref<8x200xf32, "ub">
// CHECK-NEXT:    ascend.vcast %[[YV]], %[[Y]] : memref<1x200xbf16, strided<[208, 1]>, "ub">, memref<1x200xf32, "ub">
// CHECK-NEXT:    ascend.vbrcb %[[Y]], %[[YB]] : memref<1x200xf32, "ub">, memref<8x200xf32, "ub">
// CHECK-NEXT:    ascend.vadd %[[X]], %[[YB]], %[[X]] : memref<8x200xf32, "ub">
// CHECK-NEXT:    ascend.vmuls %[[X]], %[[HALF]], %[[X]] : memref<8x200xf32, "ub">, f32, memref<8x200xf32, "ub">
// CHECK-NEXT:    ascend.vsigmoid %[[X]], %[[X]] : memref<8x200xf32, "ub">
// CHECK-NEXT:    %[[OUT:.*]] = memref.subview %[[XS]][0, 0] [8, 200] [1, 1]
// CHECK-NEXT:    ascend.vcast %[[X]], %[[OUT]] : memref<8x200xf32, "ub">, memref<8x200xbf16, strided<[208, 1]>, "ub">
// CHECK:         ascend.copy %[[OUT]], %c : memref<8x200xbf16, strided<[208, 1]>, "ub"> to memref<8x200xbf16, "gm">
func.func @chain(%x: tensor<8x200xbf16>, %y: tensor<200xbf16>) -> tensor<8x200xbf16> {
  %h = graph.constant dense<5.000000e-01> : tensor<bf16>
  %a = graph.add %x, %y : (tensor<8x200xbf16>, tensor<200xbf16>) -> tensor<8x200xbf16> loc("add")
  %b = graph.mul %a, %h : (tensor<8x200xbf16>, tensor<bf16>) -> tensor<8x200xbf16> loc("half")
  %c = graph.sigmoid %b : (tensor<8x200xbf16>) -> tensor<8x200xbf16> loc("sig")
  func.return %c : tensor<8x200xbf16>
}
