// convert-graph-to-ascend, cube+vector fusions: a transformer's first MLP
// layer, x @ W + b and the TorchScript exporter's exact GELU
// (x * 0.5 * (1 + erf(x / sqrt 2))), as one mix kernel.
// RUN: geir-opt %s -p convert-graph-to-ascend | filecheck %s

// The batch of x folds into the rows of one [16, 64] x [64, 256] product. The
// scalar constants of the fusion become immediates (x / c is x * (1 / c));
// the bias (the add's left operand) is one row broadcast over the tile. Three
// ub tiles suffice: values are written in place once their last reader ran.
// CHECK-LABEL: ascend.kernel @{{(ffn_)?}}k0_fc1(
// CHECK-SAME:    %b: memref<256xf32, "gm">, %s2: memref<f32, "gm">, %one: memref<f32, "gm">, %half: memref<f32, "gm">, %y: memref<1x16x256xf32, "gm">)
// CHECK-SAME:    attributes {block_dim = 16 : i64, core_type = "mix", template = "matmul"} {
// CHECK:         %l0c = ascend.alloc {offset = 0 : i64} : memref<16x16xf32, "l0c">
// CHECK-NEXT:    %v0 = ascend.alloc {offset = 0 : i64} : memref<16x16xf32, "ub">
// CHECK-NEXT:    %v1 = ascend.alloc {offset = 1024 : i64} : memref<16x16xf32, "ub">
// CHECK-NEXT:    %s0 = ascend.alloc {offset = 2048 : i64} : memref<1x16xf32, "ub">
// CHECK-DAG:     %[[RSQRT2:.*]] = arith.constant 0.707106769 : f32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG:     %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK:         %[[X:.*]] = memref.collapse_shape %x {{.*}} into memref<16x64xf32, "gm">
// CHECK:         %[[B:.*]] = memref.expand_shape %b {{.*}} into memref<1x256xf32, "gm">
// CHECK:         scf.for
// CHECK:           ascend.mmad %l0a0, %l0b0, %l0c {init} : memref<16x64xf32, "l0a">, memref<64x16xf32, "l0b">, memref<16x16xf32, "l0c">
// CHECK:           ascend.copy %l0c, %[[T:.*]] : memref<16x16xf32, "l0c"> to memref<16x16xf32, strided<[256, 1], offset: ?>, "gm">
// The tile's rows are split between the block's two vector cores, each told by its own flag
// that FIX is done: rows 0-7 on core 0 (flag ids 0), rows 8-15 on core 1 (ids 1), each on the
// same ub buffers (its own ub).
// CHECK:           ascend.set_flag FIX -> MTE2 id 0
// CHECK-NEXT:      ascend.sub_block 0 {
// CHECK-NEXT:        ascend.wait_flag FIX -> MTE2 id 0
// CHECK-NEXT:        %[[A:.*]] = memref.subview %v0[0, 0] [8, 16]
// CHECK-NEXT:        %[[R:.*]] = memref.subview %v1[0, 0] [8, 16]
// CHECK-NEXT:        ascend.wait_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:        %[[T0:.*]] = memref.subview %{{.*}}[0, %{{.*}}] [8, 16]
// CHECK-NEXT:        ascend.copy %[[T0]], %[[A]]
// CHECK-NEXT:        %[[BT:.*]] = memref.subview %[[B]][0, %{{.*}}] [1, 16] [1, 1]
// CHECK-NEXT:        ascend.copy %[[BT]], %s0 : memref<1x16xf32, strided<[256, 1], offset: ?>, "gm"> to memref<1x16xf32, "ub">
// CHECK-NEXT:        ascend.set_flag MTE2 -> V id 0
// CHECK-NEXT:        ascend.wait_flag MTE2 -> V id 0
// CHECK-NEXT:        ascend.vbrcb %s0, %[[R]]
// CHECK-NEXT:        ascend.vadd %[[R]], %[[A]], %[[R]]
// CHECK-NEXT:        ascend.vmuls %[[R]], %[[RSQRT2]], %[[A]]
// CHECK-NEXT:        ascend.verf %[[A]], %[[A]]
// CHECK-NEXT:        ascend.vadds %[[A]], %[[ONE]], %[[A]]
// CHECK-NEXT:        ascend.vmul %[[R]], %[[A]], %[[R]]
// CHECK-NEXT:        ascend.vmuls %[[R]], %[[HALF]], %[[R]]
// CHECK-NEXT:        ascend.set_flag V -> MTE3 id 0
// CHECK-NEXT:        ascend.wait_flag V -> MTE3 id 0
// CHECK-NEXT:        ascend.copy %[[R]], %[[T0]]
// CHECK-NEXT:        ascend.set_flag MTE3 -> MTE2 id 0
// CHECK-NEXT:      }
// CHECK-NEXT:      ascend.set_flag FIX -> MTE2 id 0
// CHECK-NEXT:      ascend.sub_block 1 {
// CHECK-NEXT:        ascend.wait_flag FIX -> MTE2 id 0
// CHECK:             ascend.wait_flag MTE3 -> MTE2 id 1
// CHECK-NEXT:        %[[T1:.*]] = memref.subview %{{.*}}[8, %{{.*}}] [8, 16]
// CHECK:             ascend.set_flag MTE2 -> V id 1
// CHECK:             ascend.verf
// CHECK:             ascend.set_flag MTE3 -> MTE2 id 1
// CHECK-NEXT:      }
// CHECK:       func.func @ffn(
// CHECK:         ascend.launch @{{(ffn_)?}}k0_fc1 on %stream(%x, %w, %b, %s2, %one, %half, %y)
func.func @ffn(%x: tensor<1x16x64xf32> {onnx.name = "x"}) -> (tensor<1x16x256xf32> {onnx.name = "y"}) {
  %w = graph.constant dense<1.000000e-02> : tensor<64x256xf32> loc("w")
  %b = graph.constant dense<5.000000e-01> : tensor<256xf32> loc("b")
  %y = graph.fusion "cube+vector" (%x, %w, %b) attributes {graph.pattern = "matmul-epilogue"} : (tensor<1x16x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<1x16x256xf32> {
  ^bb0(%x_1: tensor<1x16x64xf32>, %w_1: tensor<64x256xf32>, %b_1: tensor<256xf32>):
    %s2 = graph.constant dense<1.41421354> : tensor<f32> loc("sqrt2")
    %one = graph.constant dense<1.000000e+00> : tensor<f32> loc("one")
    %half = graph.constant dense<5.000000e-01> : tensor<f32> loc("half")
    %m = graph.matmul %x_1, %w_1 : (tensor<1x16x64xf32>, tensor<64x256xf32>) -> tensor<1x16x256xf32> loc("fc1")
    %a = graph.add %b_1, %m : (tensor<256xf32>, tensor<1x16x256xf32>) -> tensor<1x16x256xf32> loc("bias")
    %d = graph.div %a, %s2 : (tensor<1x16x256xf32>, tensor<f32>) -> tensor<1x16x256xf32> loc("div")
    %e = graph.erf %d : (tensor<1x16x256xf32>) -> tensor<1x16x256xf32> loc("erf")
    %p = graph.add %e, %one : (tensor<1x16x256xf32>, tensor<f32>) -> tensor<1x16x256xf32> loc("add1")
    %q = graph.mul %a, %p : (tensor<1x16x256xf32>, tensor<1x16x256xf32>) -> tensor<1x16x256xf32> loc("mul")
    %y_1 = graph.mul %q, %half : (tensor<1x16x256xf32>, tensor<f32>) -> tensor<1x16x256xf32> loc("mul_half")
    graph.yield %y_1 : tensor<1x16x256xf32>
  } loc(fused["fc1", "bias", "div", "erf", "add1", "mul", "mul_half"])
  func.return %y : tensor<1x16x256xf32>
}
