// convert-graph-to-ascend: a request like an earlier one (the same ops, types, folded
// constants and uses) gets a clone of the kernel built for it (lowering/kernel_cache.py),
// named after its own nodes and values; a request that differs in a folded scalar gets a
// kernel of its own. (test_kernel_cache.py checks which kernels are clones.)
// RUN: geir-opt %s -p convert-graph-to-ascend | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_mul_a(
// CHECK-SAME:    %xa: memref<2x16x40xf32, "gm">, %h: memref<f32, "gm">, %ra: memref<2x16x40xf32, "gm">)
// CHECK:         %[[HALF_A:.*]] = arith.constant 5.000000e-01 : f32
// CHECK:         ascend.vmuls %{{.*}}, %[[HALF_A]]
// CHECK:       } loc(fused["mul_a", "relu_a"])
// The same request one layer later: the same body, its own name, values and location.
// CHECK-LABEL: ascend.kernel @k1_mul_b(
// CHECK-SAME:    %xb: memref<2x16x40xf32, "gm">, %h: memref<f32, "gm">, %rb: memref<2x16x40xf32, "gm">)
// CHECK:         %[[HALF_B:.*]] = arith.constant 5.000000e-01 : f32
// CHECK:         ascend.vmuls %{{.*}}, %[[HALF_B]]
// CHECK:       } loc(fused["mul_b", "relu_b"])
// Not the same: another scalar.
// CHECK-LABEL: ascend.kernel @k2_mul_c(
// CHECK:         %[[QUARTER:.*]] = arith.constant 2.500000e-01 : f32
// CHECK:         ascend.vmuls %{{.*}}, %[[QUARTER]]
// CHECK:       } loc(fused["mul_c", "relu_c"])
// CHECK-LABEL: ascend.kernel @k3_mul_d(
// CHECK-SAME:    %xd: memref<2x16x40xf32, "gm">, %h: memref<f32, "gm">, %rd: memref<2x16x40xf32, "gm">)
// CHECK:         %[[QUARTER_D:.*]] = arith.constant 2.500000e-01 : f32
// CHECK:         ascend.vmuls %{{.*}}, %[[QUARTER_D]]
// CHECK:       } loc(fused["mul_d", "relu_d"])
// CHECK-LABEL: func.func @layers(
// CHECK:         ascend.launch @k0_mul_a on %stream(%x, %[[H0:.*]], %[[A:.*]]) :
// CHECK:         ascend.launch @k1_mul_b on %stream(%[[A]], %{{.*}}, %[[B:.*]]) :
// CHECK:         ascend.launch @k2_mul_c on %stream(%[[B]], %{{.*}}, %[[C:.*]]) :
// CHECK:         ascend.launch @k3_mul_d on %stream(%[[C]], %{{.*}}, %{{.*}}) :
func.func @layers(%x: tensor<2x16x40xf32>) -> (tensor<2x16x40xf32>, tensor<2x16x40xf32>) {
  %a = graph.fusion "vector" (%x) : (tensor<2x16x40xf32>) -> tensor<2x16x40xf32> {
  ^bb0(%xa: tensor<2x16x40xf32>):
    %h = graph.constant dense<0.5> : tensor<f32>
    %m = graph.mul %xa, %h : (tensor<2x16x40xf32>, tensor<f32>) -> tensor<2x16x40xf32> loc("mul_a")
    %ra = graph.relu %m : (tensor<2x16x40xf32>) -> tensor<2x16x40xf32> loc("relu_a")
    graph.yield %ra : tensor<2x16x40xf32>
  } loc(fused["mul_a", "relu_a"])
  %b = graph.fusion "vector" (%a) : (tensor<2x16x40xf32>) -> tensor<2x16x40xf32> {
  ^bb0(%xb: tensor<2x16x40xf32>):
    %h = graph.constant dense<0.5> : tensor<f32>
    %m = graph.mul %xb, %h : (tensor<2x16x40xf32>, tensor<f32>) -> tensor<2x16x40xf32> loc("mul_b")
    %rb = graph.relu %m : (tensor<2x16x40xf32>) -> tensor<2x16x40xf32> loc("relu_b")
    graph.yield %rb : tensor<2x16x40xf32>
  } loc(fused["mul_b", "relu_b"])
  %c = graph.fusion "vector" (%b) : (tensor<2x16x40xf32>) -> tensor<2x16x40xf32> {
  ^bb0(%xc: tensor<2x16x40xf32>):
    %h = graph.constant dense<0.25> : tensor<f32>
    %m = graph.mul %xc, %h : (tensor<2x16x40xf32>, tensor<f32>) -> tensor<2x16x40xf32> loc("mul_c")
    %rc = graph.relu %m : (tensor<2x16x40xf32>) -> tensor<2x16x40xf32> loc("relu_c")
    graph.yield %rc : tensor<2x16x40xf32>
  } loc(fused["mul_c", "relu_c"])
  %d = graph.fusion "vector" (%c) : (tensor<2x16x40xf32>) -> tensor<2x16x40xf32> {
  ^bb0(%xd: tensor<2x16x40xf32>):
    %h = graph.constant dense<0.25> : tensor<f32>
    %m = graph.mul %xd, %h : (tensor<2x16x40xf32>, tensor<f32>) -> tensor<2x16x40xf32> loc("mul_d")
    %rd = graph.relu %m : (tensor<2x16x40xf32>) -> tensor<2x16x40xf32> loc("relu_d")
    graph.yield %rd : tensor<2x16x40xf32>
  } loc(fused["mul_d", "relu_d"])
  func.return %c, %d : tensor<2x16x40xf32>, tensor<2x16x40xf32>
}
