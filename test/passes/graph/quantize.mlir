// graph-quantize: the calibration table's per-tensor int8 parameters on the data input of each
// conv / gemm / matmul with constant weights, the weights quantized per output channel.
// RUN: geir-opt %s -p 'graph-quantize{table="%S/Inputs/quantize-table.json"}' | filecheck %s
// RUN: geir-opt %s -p 'graph-quantize{table="%S/Inputs/quantize-table.json" skip="gemm","dw"}' | filecheck %s --check-prefix=SKIP
// An already quantized graph is left as it is, though the table names its conv.
// RUN: geir-opt %S/Inputs/quantize-qdq.mlir -p 'graph-quantize{table="%S/Inputs/quantize-table-qdq.json"}' | filecheck %S/Inputs/quantize-qdq.mlir
// Invalid tables and names: one clear error each.
// RUN: not geir-opt %s -p 'graph-quantize' 2>&1 | filecheck %s --check-prefix=ERR-NONE
// RUN: not geir-opt %s -p 'graph-quantize{table="%S/Inputs/no-such-table.json"}' 2>&1 | filecheck %s --check-prefix=ERR-FILE
// RUN: not geir-opt %s -p 'graph-quantize{table="%S/Inputs/mixlist-malformed.json"}' 2>&1 | filecheck %s --check-prefix=ERR-JSON
// RUN: not geir-opt %s -p 'graph-quantize{table="%S/Inputs/quantize-table-bad-version.json"}' 2>&1 | filecheck %s --check-prefix=ERR-VERSION
// RUN: not geir-opt %s -p 'graph-quantize{table="%S/Inputs/quantize-table-bad-scale.json"}' 2>&1 | filecheck %s --check-prefix=ERR-SCALE
// RUN: not geir-opt %s -p 'graph-quantize{table="%S/Inputs/quantize-table-unknown-layer.json"}' 2>&1 | filecheck %s --check-prefix=ERR-LAYER
// RUN: not geir-opt %s -p 'graph-quantize{table="%S/Inputs/quantize-table.json" skip="nosuch"}' 2>&1 | filecheck %s --check-prefix=ERR-SKIP

// ERR-NONE: error: graph-quantize needs a calibration table: graph-quantize{table=FILE.json}
// ERR-FILE: error: cannot read calibration table {{.*}}no-such-table.json: No such file or directory
// ERR-JSON: error: {{.*}}mixlist-malformed.json: not valid JSON: Expecting ',' delimiter
// ERR-VERSION: error: {{.*}}quantize-table-bad-version.json: version 7; this geir reads version 1
// ERR-SCALE: error: {{.*}}quantize-table-bad-scale.json: layer 'conv': scale must be a positive number, got -1.0
// ERR-LAYER: error: calibration table: no op of the graph is named 'nosuchlayer'
// ERR-SKIP: error: skip: no op of the graph is named 'nosuch'

func.func @convs(%x: tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = graph.constant dense<[[[[127.0]], [[-63.5]]], [[[254.0]], [[2.0]]], [[[0.0]], [[0.0]]], [[[-12.7]], [[1.27]]]]> : tensor<4x2x1x1xf32> loc("w")
  %b = graph.constant dense<[0.5, 0.25, 0.0, -1.0]> : tensor<4xf32> loc("b")
  %y = graph.conv %x, %w, %b : (tensor<1x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32> loc("conv")
  %r = graph.relu %y : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> loc("relu")
  %wd = graph.constant dense<[[[[1.27]]], [[[2.54]]], [[[-3.81]]], [[[0.0]]]]> : tensor<4x1x1x1xf32> loc("wd")
  %d = graph.conv %r, %wd {group = 4 : i64} : (tensor<1x4x4x4xf32>, tensor<4x1x1x1xf32>) -> tensor<1x4x4x4xf32> loc("dw")
  func.return %d : tensor<1x4x4x4xf32>
}
// CHECK-LABEL: func.func @convs(
// The data input: per tensor, zero point 0 (a signed activation).
// CHECK:      %x_scale = graph.constant dense<3.125000e-02> : tensor<f32> loc("conv")
// CHECK-NEXT: %x_zero_point = graph.constant dense<0> : tensor<i8> loc("conv")
// CHECK-NEXT: %x_q = graph.quantize %x, %x_scale, %x_zero_point : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xi8> loc("conv")
// CHECK-NEXT: %x_dq = graph.dequantize %x_q, %x_scale, %x_zero_point : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xf32> loc("conv")
// The weights: int8, one scale per output channel (max|w| / 127; 1 for a channel of zeros).
// CHECK-NEXT: %w_q = graph.constant dense<{{\[}}{{\[}}{{\[}}[127]], {{\[}}[-64]]], {{\[}}{{\[}}[127]], {{\[}}[1]]], {{\[}}{{\[}}[0]], {{\[}}[0]]], {{\[}}{{\[}}[-127]], {{\[}}[13]]]]> : tensor<4x2x1x1xi8> loc("conv")
// CHECK-NEXT: %w_scale = graph.constant dense<{{\[}}{{\[}}{{\[}}[1.000000e+00]]], {{\[}}{{\[}}[2.000000e+00]]], {{\[}}{{\[}}[1.000000e+00]]], {{\[}}{{\[}}[1.000000e-01]]]]> : tensor<4x1x1x1xf32> loc("conv")
// CHECK-NEXT: %w_dq = graph.dequantize %w_q, %w_scale : (tensor<4x2x1x1xi8>, tensor<4x1x1x1xf32>) -> tensor<4x2x1x1xf32> loc("conv")
// The bias: int32 at the accumulator's scale x_scale * w_scale (0.5 / 0.03125 = 16, ...).
// CHECK-NEXT: %b_q = graph.constant dense<[16, 4, 0, -320]> : tensor<4xi32> loc("conv")
// CHECK-NEXT: %b_scale = graph.constant dense<[3.125000e-02, 6.250000e-02, 3.125000e-02, 3.125000e-03]> : tensor<4xf32> loc("conv")
// CHECK-NEXT: %b_dq = graph.dequantize %b_q, %b_scale : (tensor<4xi32>, tensor<4xf32>) -> tensor<4xf32> loc("conv")
// CHECK-NEXT: %y = graph.conv %x_dq, %w_dq, %b_dq : (tensor<1x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32> loc("conv")
// After the ReLU: [0, T] on 256 levels, zero point -128. A depthwise conv, per channel too.
// CHECK:      %r_zero_point = graph.constant dense<-128> : tensor<i8> loc("dw")
// CHECK:      %wd_scale = graph.constant dense<{{\[}}{{\[}}{{\[}}[1.000000e-02]]], {{\[}}{{\[}}[2.000000e-02]]], {{\[}}{{\[}}[3.000000e-02]]], {{\[}}{{\[}}[1.000000e+00]]]]> : tensor<4x1x1x1xf32> loc("dw")
// CHECK:      %d = graph.conv %r_dq, %wd_dq {group = 4 : i64}
// The float weights are gone.
// CHECK-NOT:  tensor<4x2x1x1xf32> loc("w")

func.func @products(%f: tensor<2x3xf32>, %h: tensor<2x4xf32>, %k: tensor<4x2xf32>) -> (tensor<2x4xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %wb = graph.constant dense<[[1.27, 0.0, 0.0], [0.0, -2.54, 0.0], [0.0, 0.0, 12.7], [0.127, 0.0, 0.0]]> : tensor<4x3xf32> loc("wb")
  %c = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32> loc("c")
  %g = graph.gemm %f, %wb, %c {trans_b = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x4xf32> loc("gemm")
  %wm = graph.constant dense<[[1.27, 0.0], [0.0, 2.54], [0.0, 0.0], [-1.27, 0.0]]> : tensor<4x2xf32> loc("wm")
  %m = graph.matmul %h, %wm : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32> loc("mm")
  %a = graph.matmul %h, %k : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32> loc("mm_act")
  func.return %g, %m, %a : tensor<2x4xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}
// CHECK-LABEL: func.func @products(
// gemm with trans_b: b is [N, K], one scale per row: [N, 1].
// CHECK:      %f_q = graph.quantize %f, %f_scale, %f_zero_point : (tensor<2x3xf32>, tensor<f32>, tensor<i8>) -> tensor<2x3xi8> loc("gemm")
// CHECK:      %wb_q = graph.constant dense<{{\[}}[127, 0, 0], [0, -127, 0], [0, 0, 127], [127, 0, 0]]> : tensor<4x3xi8> loc("gemm")
// CHECK-NEXT: %wb_scale = graph.constant dense<{{\[}}[1.000000e-02], [2.000000e-02], [1.000000e-01], [1.000000e-03]]> : tensor<4x1xf32> loc("gemm")
// c per column: int32 at f_scale * wb_scale (1 / 0.000625 = 1600, ...).
// CHECK:      %c_q = graph.constant dense<[1600, 1600, 480, 64000]> : tensor<4xi32> loc("gemm")
// CHECK:      %g = graph.gemm %f_dq, %wb_dq, %c_dq {trans_b = 1 : i64}
// matmul [K, N] weights: one scale per column, [N].
// CHECK:      %wm_q = graph.constant dense<{{\[}}[127, 0], [0, 127], [0, 0], [-127, 0]]> : tensor<4x2xi8> loc("mm")
// CHECK-NEXT: %wm_scale = graph.constant dense<[1.000000e-02, 2.000000e-02]> : tensor<2xf32> loc("mm")
// CHECK:      %m = graph.matmul %h_dq, %wm_dq
// A matmul of two activations is left alone, though the table names it.
// CHECK-NEXT: %a = graph.matmul %h, %k : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32> loc("mm_act")

// SKIP-LABEL: func.func @convs(
// SKIP:       %x_q = graph.quantize
// SKIP-NOT:   %r_q = graph.quantize
// SKIP:       %d = graph.conv %r, %wd {group = 4 : i64}
// SKIP-LABEL: func.func @products(
// SKIP-NOT:   %f_q = graph.quantize
// SKIP:       %g = graph.gemm %f, %wb, %c
// SKIP:       %m = graph.matmul %h_dq, %wm_dq
