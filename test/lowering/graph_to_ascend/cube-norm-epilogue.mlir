// convert-graph-to-ascend, a matmul kernel with a norm epilogue (graph-fuse's norm-epilogue):
// each work item computes whole rows of the product (every N tile of its 16 rows, sharing the
// lhs panel), FIX stages them in the kernel's gm scratch, and once the FIX pipe is done the
// block's two vector cores (`ascend.sub_block` 0 and 1, the 910B's AIVs) each run the row
// template's Add + LayerNorm over half of those rows, double-buffered. Each core loads the
// norm's weights once, before the item loop, into its own ub.
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_out_proj(
// CHECK-SAME:    %r: memref<1x80x256xf32, "gm">, %product: memref<1x80x256xf32, "gm">) attributes {block_dim = 5 : i64, core_type = "mix", geir.scratch = 1 : i64, template = "matmul"}
// CHECK:         %[[RES:.*]] = memref.collapse_shape %x1
// CHECK-NEXT:    %[[STAGED:.*]] = memref.collapse_shape %product
// CHECK:         %[[OUT:.*]] = memref.collapse_shape %r
// CHECK-NEXT:    ascend.sub_block 0 {
// CHECK-NEXT:      ascend.copy %{{.*}}, %wc0
// CHECK-NEXT:      ascend.copy %{{.*}}, %wc0_1
// CHECK:         ascend.sub_block 1 {
// CHECK-NEXT:      ascend.copy %{{.*}}, %wc1
// CHECK-NEXT:      ascend.copy %{{.*}}, %wc1_1
// CHECK:         %[[TO:.*]] = memref.collapse_shape %product
// CHECK:         scf.for %[[ITEM:.*]] = %block to %c5 step %c5 {
// CHECK-NEXT:      %[[ROW:.*]] = arith.muli %[[ITEM]], %c16
// CHECK:           ascend.mmad {{.*}} {init}
// CHECK:           %[[T0:.*]] = memref.subview %[[TO]][%[[ROW]], 0] [16, 128]
// CHECK-NEXT:      ascend.copy %l0c0, %[[T0]]
// CHECK:           %[[T1:.*]] = memref.subview %[[TO]][%[[ROW]], 128] [16, 128]
// CHECK-NEXT:      ascend.copy %l0c1, %[[T1]]
// CHECK-NEXT:      ascend.set_flag FIX -> M id 1
// CHECK-NEXT:      ascend.set_flag MTE1 -> MTE2 id 2
// Vector core 0: rows ROW .. ROW + 7, in tiles of 4 rows.
// CHECK-NEXT:      ascend.set_flag FIX -> MTE2 id 0
// CHECK-NEXT:      ascend.sub_block 0 {
// CHECK-NEXT:        ascend.wait_flag FIX -> MTE2 id 0
// CHECK:             scf.for %[[T:.*]] = %c0 to %c2 step %c2 {
// CHECK:               %[[FIRST:.*]] = arith.addi %{{.*}}, %[[ROW]]
// CHECK-NEXT:          %[[X:.*]] = memref.subview %[[RES]][%[[FIRST]], 0] [4, 256]
// CHECK-NEXT:          ascend.copy %[[X]], %w0b1
// CHECK-NEXT:          %[[Y:.*]] = memref.subview %[[STAGED]][%[[FIRST]], 0] [4, 256]
// CHECK-NEXT:          ascend.copy %[[Y]], %w0b2
// CHECK:               ascend.vadd %w0b1, %w0b2, %w0b1
// CHECK:               ascend.vreduce
// CHECK:               ascend.vsqrt
// CHECK:               ascend.vdiv
// CHECK:               ascend.vbrcb %wc0, %w0b2
// CHECK:               %[[Z:.*]] = memref.subview %[[OUT]][%[[FIRST]], 0] [4, 256]
// CHECK-NEXT:          ascend.copy %w0b1, %[[Z]]
// CHECK:               ascend.copy %w1b1
// CHECK-NEXT:          ascend.set_flag MTE3 -> MTE2 id 1
// CHECK-NEXT:        }
// CHECK-NEXT:        ascend.wait_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:        ascend.wait_flag MTE3 -> MTE2 id 1
// CHECK-NEXT:      }
// Vector core 1: rows ROW + 8 .. ROW + 15, the same buffers in its own ub, its own weights.
// CHECK-NEXT:      ascend.set_flag FIX -> MTE2 id 0
// CHECK-NEXT:      ascend.sub_block 1 {
// CHECK-NEXT:        ascend.wait_flag FIX -> MTE2 id 0
// CHECK-NEXT:        %[[HALF:.*]] = arith.addi %[[ROW]], %c8
// CHECK:             scf.for
// CHECK:               arith.addi %{{.*}}, %[[HALF]]
// CHECK:               ascend.copy %{{.*}}, %w0b1
// CHECK:               ascend.vbrcb %wc1, %w0b2
// CHECK:         }
// CHECK:       func.func @out_projection(
// CHECK:         %[[S:.*]] = ascend.alloc {offset = 0 : i64} : memref<1x80x256xf32, "gm">
// CHECK-NEXT:    ascend.launch @k0_out_proj on %stream(%a, %wo, %x, %g, %b, %n, %[[S]])
// CHECK-NOT:     ascend.launch
func.func @out_projection(%a: tensor<1x80x256xf32> {onnx.name = "a"}, %wo: tensor<256x256xf32> {onnx.name = "wo"}, %x: tensor<1x80x256xf32> {onnx.name = "x"}, %g: tensor<256xf32> {onnx.name = "g"}, %b: tensor<256xf32> {onnx.name = "b"}) -> (tensor<1x80x256xf32> {onnx.name = "n"}) {
  %n = graph.fusion "cube+vector" (%a, %wo, %x, %g, %b) attributes {graph.pattern = "norm-epilogue"} : (tensor<1x80x256xf32>, tensor<256x256xf32>, tensor<1x80x256xf32>, tensor<256xf32>, tensor<256xf32>) -> tensor<1x80x256xf32> {
  ^bb0(%a1: tensor<1x80x256xf32>, %w1: tensor<256x256xf32>, %x1: tensor<1x80x256xf32>, %g1: tensor<256xf32>, %b1: tensor<256xf32>):
    %y = graph.matmul %a1, %w1 : (tensor<1x80x256xf32>, tensor<256x256xf32>) -> tensor<1x80x256xf32> loc("out_proj")
    %h = graph.add %x1, %y : (tensor<1x80x256xf32>, tensor<1x80x256xf32>) -> tensor<1x80x256xf32> loc("residual")
    %r = graph.layer_norm %h, %g1, %b1 {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<1x80x256xf32>, tensor<256xf32>, tensor<256xf32>) -> tensor<1x80x256xf32> loc("norm")
    graph.yield %r : tensor<1x80x256xf32>
  } loc(fused["out_proj", "residual", "norm"])
  func.return %n : tensor<1x80x256xf32>
}

// -----

// The product is also an output: not a norm epilogue. The lowering splits the fusion: the
// matmul with the Add as its elementwise epilogue, then the LayerNorm's row kernel.
// CHECK-LABEL: ascend.kernel @k0_out_proj(
// CHECK-NOT:     geir.scratch
// CHECK-SAME:    geir.outputs = {{\[}}[0 : i64, "out_proj"], [0 : i64, "residual"]]
// CHECK:       ascend.kernel @k1_norm(
// CHECK-SAME:    template = "row"
// CHECK:       func.func @product_out(
func.func @product_out(%a: tensor<1x80x256xf32> {onnx.name = "a"}, %wo: tensor<256x256xf32> {onnx.name = "wo"}, %x: tensor<1x80x256xf32> {onnx.name = "x"}, %g: tensor<256xf32> {onnx.name = "g"}, %b: tensor<256xf32> {onnx.name = "b"}) -> (tensor<1x80x256xf32> {onnx.name = "y"}, tensor<1x80x256xf32> {onnx.name = "n"}) {
  %p, %n = graph.fusion "cube+vector" (%a, %wo, %x, %g, %b) attributes {graph.pattern = "norm-epilogue"} : (tensor<1x80x256xf32>, tensor<256x256xf32>, tensor<1x80x256xf32>, tensor<256xf32>, tensor<256xf32>) -> (tensor<1x80x256xf32>, tensor<1x80x256xf32>) {
  ^bb0(%a1: tensor<1x80x256xf32>, %w1: tensor<256x256xf32>, %x1: tensor<1x80x256xf32>, %g1: tensor<256xf32>, %b1: tensor<256xf32>):
    %y = graph.matmul %a1, %w1 : (tensor<1x80x256xf32>, tensor<256x256xf32>) -> tensor<1x80x256xf32> loc("out_proj")
    %h = graph.add %x1, %y : (tensor<1x80x256xf32>, tensor<1x80x256xf32>) -> tensor<1x80x256xf32> loc("residual")
    %r = graph.layer_norm %h, %g1, %b1 {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<1x80x256xf32>, tensor<256xf32>, tensor<256xf32>) -> tensor<1x80x256xf32> loc("norm")
    graph.yield %y, %r : tensor<1x80x256xf32>, tensor<1x80x256xf32>
  } loc(fused["out_proj", "residual", "norm"])
  func.return %p, %n : tensor<1x80x256xf32>, tensor<1x80x256xf32>
}

// -----

// In a shape-range program (a batch of 1 to 4 here) the kernel takes the extent and its item
// loop runs the items of the real rows: ceil(n * 80 / 16) of the 20, each normalised by the
// vector cores as above. One kernel, no row kernel after it.
// CHECK-LABEL: ascend.kernel @k0_out_proj(
// CHECK-SAME:    %r: memref<4x80x256xf32, "gm">, %extent: memref<1xi64, "gm">, %product: memref<4x80x256xf32, "gm">)
// CHECK-SAME:    attributes {block_dim = 20 : i64, core_type = "mix", geir.scratch = 1 : i64, geir.extent, template = "matmul"}
// CHECK:         %[[RAW:.*]] = memref.load %extent[%c0]
// CHECK-NEXT:    %n = arith.index_cast %[[RAW]] : i64 to index
// CHECK:         %[[ROWS:.*]] = arith.muli %n, %c80 : index
// CHECK-NEXT:    %[[UP:.*]] = arith.addi %[[ROWS]], %c15 : index
// CHECK-NEXT:    %[[ITEMS:.*]] = arith.divui %[[UP]], %c16 : index
// CHECK-NEXT:    %[[LIVE:.*]] = arith.minui %[[ITEMS]], %c20 : index
// CHECK-NEXT:    scf.for %{{.*}} = %block to %[[LIVE]] step %c20 {
// CHECK:           ascend.mmad
// CHECK:           ascend.sub_block 0 {
// CHECK:             ascend.vsqrt
// CHECK:           ascend.sub_block 1 {
// CHECK:       func.func @ranged(
// CHECK:         ascend.launch @k0_out_proj on %stream(%a, %wo, %x, %g, %b, %n, %e, %{{.*}})
// CHECK-NOT:     ascend.launch
func.func @ranged(%a: tensor<4x80x256xf32> {onnx.name = "a"}, %wo: tensor<256x256xf32> {onnx.name = "wo"}, %x: tensor<4x80x256xf32> {onnx.name = "x"}, %g: tensor<256xf32> {onnx.name = "g"}, %b: tensor<256xf32> {onnx.name = "b"}, %e: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["a", 0 : i64], ["x", 0 : i64]], geir.range = [1 : i64, 4 : i64]}) -> (tensor<4x80x256xf32> {onnx.name = "n"}) {
  %n = graph.fusion "cube+vector" (%a, %wo, %x, %g, %b) attributes {graph.pattern = "norm-epilogue"} : (tensor<4x80x256xf32>, tensor<256x256xf32>, tensor<4x80x256xf32>, tensor<256xf32>, tensor<256xf32>) -> tensor<4x80x256xf32> {
  ^bb0(%a1: tensor<4x80x256xf32>, %w1: tensor<256x256xf32>, %x1: tensor<4x80x256xf32>, %g1: tensor<256xf32>, %b1: tensor<256xf32>):
    %y = graph.matmul %a1, %w1 : (tensor<4x80x256xf32>, tensor<256x256xf32>) -> tensor<4x80x256xf32> loc("out_proj")
    %h = graph.add %x1, %y : (tensor<4x80x256xf32>, tensor<4x80x256xf32>) -> tensor<4x80x256xf32> loc("residual")
    %r = graph.layer_norm %h, %g1, %b1 {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x80x256xf32>, tensor<256xf32>, tensor<256xf32>) -> tensor<4x80x256xf32> loc("norm")
    graph.yield %r : tensor<4x80x256xf32>
  } loc(fused["out_proj", "residual", "norm"])
  func.return %n : tensor<4x80x256xf32>
}
