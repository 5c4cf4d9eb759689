// graph-recognize-attention: the decomposed attentions both PyTorch exporters write (after
// graph-simplify, as the pipeline runs it) become graph.attention, located at every node; the
// near-misses stay as they are.
// RUN: geir-opt %s --split-input-file -p graph-recognize-attention | filecheck %s
// RUN: geir-opt %s --split-input-file -p graph-recognize-attention,graph-recognize-attention | filecheck %s

// TorchScript F.scaled_dot_product_attention: sqrt(scale) on q and on k^T, folded into one Mul after the product by graph-simplify
func.func @sdpa_ts(%onnx__Shape: tensor<1x2x4x8xf32> {onnx.name = "onnx::Shape_0"}, %onnx__Transpose: tensor<1x2x4x8xf32> {onnx.name = "onnx::Transpose_1"}, %onnx__MatMul: tensor<1x2x4x8xf32> {onnx.name = "onnx::MatMul_2"}) -> (tensor<1x2x4x8xf32> {onnx.name = "19"}) {
  %_Transpose_output = graph.transpose %onnx__Transpose {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32> loc("/Transpose")
  %_MatMul_output_unscaled = graph.matmul %onnx__Shape, %_Transpose_output : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc(fused["/Mul", "/Mul_1", "/MatMul"])
  %_Sqrt_1_output_product = graph.constant dense<0.353553355> : tensor<1xf32> loc(fused["/Mul", "/Mul_1", "/MatMul"])
  %_MatMul_output = graph.mul %_MatMul_output_unscaled, %_Sqrt_1_output_product : (tensor<1x2x4x4xf32>, tensor<1xf32>) -> tensor<1x2x4x4xf32> loc(fused["/Mul", "/Mul_1", "/MatMul"])
  %_Softmax_output = graph.softmax %_MatMul_output {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("/Softmax")
  %v19 = graph.matmul %_Softmax_output, %onnx__MatMul : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("/MatMul_1")
  func.return %v19 : tensor<1x2x4x8xf32>
}
// CHECK-LABEL: func.func @sdpa_ts(
// CHECK-NEXT:    %v19 = graph.attention %onnx__Shape, %onnx__Transpose, %onnx__MatMul {scale = 0.353553355 : f32, causal = 0 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc(fused["/Transpose", "/Mul", "/Mul_1", "/MatMul", "/Softmax", "/MatMul_1"])
// CHECK-NEXT:    func.return %v19

// -----

// dynamo SDPA, is_causal: k^T as Reshape / Transpose / Reshape, the causal mask a constant Add of finfo.min
func.func @sdpa_causal_dyn(%q: tensor<1x2x4x8xf32> {onnx.name = "q"}, %k: tensor<1x2x4x8xf32> {onnx.name = "k"}, %v: tensor<1x2x4x8xf32> {onnx.name = "v"}) -> (tensor<1x2x4x8xf32> {onnx.name = "scaled_dot_product_attention"}) {
  %val = graph.constant dense<[[0.000000e+00, -3.40282347e+38, -3.40282347e+38, -3.40282347e+38], [0.000000e+00, 0.000000e+00, -3.40282347e+38, -3.40282347e+38], [0.000000e+00, 0.000000e+00, 0.000000e+00, -3.40282347e+38], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<4x4xf32> loc("val_25")
  %val_1 = graph.constant dense<[-1, 4, 8]> : tensor<3xi64> loc("val_35")
  %val_2 = graph.constant dense<[1, 2, 8, 4]> : tensor<4xi64> loc("val_38")
  %val_3 = graph.reshape %k, %val_1 {allowzero = 0 : i64} : (tensor<1x2x4x8xf32>, tensor<3xi64>) -> tensor<2x4x8xf32> loc("node_Reshape_36")
  %val_4 = graph.transpose %val_3 {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32> loc("node_Transpose_37")
  %val_5 = graph.reshape %val_4, %val_2 {allowzero = 0 : i64} : (tensor<2x8x4xf32>, tensor<4xi64>) -> tensor<1x2x8x4xf32> loc("node_Reshape_39")
  %val_unscaled = graph.matmul %q, %val_5 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc(fused["node_Mul_41", "node_Mul_43", "node_MatMul_44"])
  %val_product = graph.constant dense<0.353553355> : tensor<1xf32> loc(fused["node_Mul_41", "node_Mul_43", "node_MatMul_44"])
  %val_6 = graph.mul %val_unscaled, %val_product : (tensor<1x2x4x4xf32>, tensor<1xf32>) -> tensor<1x2x4x4xf32> loc(fused["node_Mul_41", "node_Mul_43", "node_MatMul_44"])
  %val_7 = graph.add %val_6, %val : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32> loc("node_Add_45")
  %val_8 = graph.softmax %val_7 {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("node_Softmax_46")
  %scaled_dot_product_attention = graph.matmul %val_8, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("node_scaled_dot_product_attention")
  func.return %scaled_dot_product_attention : tensor<1x2x4x8xf32>
}
// CHECK-LABEL: func.func @sdpa_causal_dyn(
// CHECK-NEXT:    %scaled_dot_product_attention = graph.attention %q, %k, %v {scale = 0.353553355 : f32, causal = 1 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc(fused["node_Reshape_36", "node_Transpose_37", "node_Reshape_39", "node_Mul_41", "node_Mul_43", "node_MatMul_44", "node_Add_45", "node_Softmax_46", "node_scaled_dot_product_attention"])
// CHECK-NEXT:    func.return

// -----

// TorchScript HF attention with repeat_kv (2 query heads per kv head), Div by sqrt(d), a Trilu -inf causal mask
func.func @hf_gqa_ts(%onnx__MatMul: tensor<1x2x4x8xf32> {onnx.name = "onnx::MatMul_0"}, %k: tensor<1x1x4x8xf32> {onnx.name = "k"}, %v: tensor<1x1x4x8xf32> {onnx.name = "v"}) -> (tensor<1x2x4x8xf32> {onnx.name = "89"}) {
  %_Unsqueeze_output = graph.unsqueeze %k {axes = array<i64: 2>} : (tensor<1x1x4x8xf32>) -> tensor<1x1x1x4x8xf32> loc("/Unsqueeze")
  %_Where_output = graph.constant dense<[1, 1, 2, 4, 8]> : tensor<5xi64> loc("/Where")
  %_Expand_output = graph.expand %_Unsqueeze_output, %_Where_output : (tensor<1x1x1x4x8xf32>, tensor<5xi64>) -> tensor<1x1x2x4x8xf32> loc("/Expand")
  %_Constant_5_output = graph.constant dense<[1, 2, 4, 8]> : tensor<4xi64> loc("/Constant_5")
  %_Reshape_output = graph.reshape %_Expand_output, %_Constant_5_output {allowzero = 0 : i64} : (tensor<1x1x2x4x8xf32>, tensor<4xi64>) -> tensor<1x2x4x8xf32> loc("/Reshape")
  %_Unsqueeze_1_output = graph.unsqueeze %v {axes = array<i64: 2>} : (tensor<1x1x4x8xf32>) -> tensor<1x1x1x4x8xf32> loc("/Unsqueeze_1")
  %_Expand_1_output = graph.expand %_Unsqueeze_1_output, %_Where_output : (tensor<1x1x1x4x8xf32>, tensor<5xi64>) -> tensor<1x1x2x4x8xf32> loc("/Expand_1")
  %_Reshape_1_output = graph.reshape %_Expand_1_output, %_Constant_5_output {allowzero = 0 : i64} : (tensor<1x1x2x4x8xf32>, tensor<4xi64>) -> tensor<1x2x4x8xf32> loc("/Reshape_1")
  %_Transpose_output = graph.transpose %_Reshape_output {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32> loc("/Transpose")
  %_MatMul_output = graph.matmul %onnx__MatMul, %_Transpose_output : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("/MatMul")
  %_Constant_11_output = graph.constant dense<2.82842708> : tensor<f32> loc("/Constant_11")
  %_Div_output = graph.div %_MatMul_output, %_Constant_11_output : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32> loc("/Div")
  %_Trilu_output = graph.constant dense<"0x00000000000080FF000080FF000080FF0000000000000000000080FF000080FF000000000000000000000000000080FF00000000000000000000000000000000"> : tensor<4x4xf32> loc("/Trilu")
  %_Add_output = graph.add %_Div_output, %_Trilu_output : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32> loc("/Add")
  %_Softmax_output = graph.softmax %_Add_output {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("/Softmax")
  %v89 = graph.matmul %_Softmax_output, %_Reshape_1_output : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("/MatMul_1")
  func.return %v89 : tensor<1x2x4x8xf32>
}
// CHECK-LABEL: func.func @hf_gqa_ts(
// CHECK-NEXT:    %v89 = graph.attention %onnx__MatMul, %k, %v {scale = 0.353553385 : f32, causal = 1 : i64} : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32> loc(fused["/Unsqueeze", "/Expand", "/Reshape", "/Unsqueeze_1", "/Expand_1", "/Reshape_1", "/Transpose", "/MatMul", "/Div", "/Add", "/Softmax", "/MatMul_1"])
// CHECK-NEXT:    func.return

// -----

// dynamo SDPA with enable_gqa: the repeat_kv Expand read straight by k^T's reshape
func.func @sdpa_gqa_dyn(%q: tensor<1x2x4x8xf32> {onnx.name = "q"}, %k: tensor<1x1x4x8xf32> {onnx.name = "k"}, %v: tensor<1x1x4x8xf32> {onnx.name = "v"}) -> (tensor<1x2x4x8xf32> {onnx.name = "scaled_dot_product_attention"}) {
  %val = graph.constant dense<[[0.000000e+00, -3.40282347e+38, -3.40282347e+38, -3.40282347e+38], [0.000000e+00, 0.000000e+00, -3.40282347e+38, -3.40282347e+38], [0.000000e+00, 0.000000e+00, 0.000000e+00, -3.40282347e+38], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<4x4xf32> loc("val_25")
  %val_1 = graph.constant dense<[1, 1, 2, 4, 8]> : tensor<5xi64> loc("val_36")
  %val_2 = graph.constant dense<[1, 2, 4, 8]> : tensor<4xi64> loc("val_41")
  %val_3 = graph.constant dense<[1, 2, 8, 4]> : tensor<4xi64> loc("val_56")
  %val_54_shape = graph.constant dense<[2, 4, 8]> : tensor<3xi64> loc("val_54/shape")
  %val_4 = graph.unsqueeze %k {axes = array<i64: 2>} : (tensor<1x1x4x8xf32>) -> tensor<1x1x1x4x8xf32> loc("node_Unsqueeze_34")
  %val_5 = graph.unsqueeze %v {axes = array<i64: 2>} : (tensor<1x1x4x8xf32>) -> tensor<1x1x1x4x8xf32> loc("node_Unsqueeze_35")
  %val_6 = graph.expand %val_4, %val_1 : (tensor<1x1x1x4x8xf32>, tensor<5xi64>) -> tensor<1x1x2x4x8xf32> loc("node_Expand_37")
  %val_7 = graph.expand %val_5, %val_1 : (tensor<1x1x1x4x8xf32>, tensor<5xi64>) -> tensor<1x1x2x4x8xf32> loc("node_Expand_39")
  %val_8 = graph.reshape %val_7, %val_2 {allowzero = 0 : i64} : (tensor<1x1x2x4x8xf32>, tensor<4xi64>) -> tensor<1x2x4x8xf32> loc("node_Reshape_43")
  %val_9 = graph.reshape %val_6, %val_54_shape {allowzero = 0 : i64} : (tensor<1x1x2x4x8xf32>, tensor<3xi64>) -> tensor<2x4x8xf32> loc("node_Reshape_79")
  %val_10 = graph.transpose %val_9 {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32> loc("node_Transpose_55")
  %val_11 = graph.reshape %val_10, %val_3 {allowzero = 0 : i64} : (tensor<2x8x4xf32>, tensor<4xi64>) -> tensor<1x2x8x4xf32> loc("node_Reshape_57")
  %val_unscaled = graph.matmul %q, %val_11 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc(fused["node_Mul_59", "node_Mul_61", "node_MatMul_62"])
  %val_product = graph.constant dense<0.353553355> : tensor<1xf32> loc(fused["node_Mul_59", "node_Mul_61", "node_MatMul_62"])
  %val_12 = graph.mul %val_unscaled, %val_product : (tensor<1x2x4x4xf32>, tensor<1xf32>) -> tensor<1x2x4x4xf32> loc(fused["node_Mul_59", "node_Mul_61", "node_MatMul_62"])
  %val_13 = graph.add %val_12, %val : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32> loc("node_Add_63")
  %val_14 = graph.softmax %val_13 {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("node_Softmax_64")
  %scaled_dot_product_attention = graph.matmul %val_14, %val_8 : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("node_scaled_dot_product_attention")
  func.return %scaled_dot_product_attention : tensor<1x2x4x8xf32>
}
// CHECK-LABEL: func.func @sdpa_gqa_dyn(
// CHECK-NEXT:    %scaled_dot_product_attention = graph.attention %q, %k, %v {scale = 0.353553355 : f32, causal = 1 : i64} : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32> loc(fused["node_Unsqueeze_34", "node_Unsqueeze_35", "node_Expand_37", "node_Expand_39", "node_Reshape_43", "node_Reshape_79", "node_Transpose_55", "node_Reshape_57", "node_Mul_59", "node_Mul_61", "node_MatMul_62", "node_Add_63", "node_Softmax_64", "node_scaled_dot_product_attention"])
// CHECK-NEXT:    func.return

// -----

// dynamo HF attention with a runtime padding mask [B, 1, 1, L]
func.func @hf_mask_dyn(%q: tensor<1x2x4x8xf32> {onnx.name = "q"}, %k: tensor<1x2x4x8xf32> {onnx.name = "k"}, %v: tensor<1x2x4x8xf32> {onnx.name = "v"}, %m: tensor<1x1x1x4xf32> {onnx.name = "m_0"}) -> (tensor<1x2x4x8xf32> {onnx.name = "matmul_1"}) {
  %val = graph.constant dense<2.82842708> : tensor<f32> loc("val_0")
  %transpose = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32> loc("node_transpose")
  %matmul = graph.matmul %q, %transpose : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("node_matmul")
  %div = graph.div %matmul, %val : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32> loc("node_div")
  %add = graph.add %div, %m : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32> loc("node_add")
  %val_1 = graph.softmax %add {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("node_Softmax_1")
  %matmul_1 = graph.matmul %val_1, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("node_matmul_1")
  func.return %matmul_1 : tensor<1x2x4x8xf32>
}
// CHECK-LABEL: func.func @hf_mask_dyn(
// CHECK-NEXT:    %matmul = graph.attention %q, %k, %v, %m {scale = 0.353553385 : f32, causal = 0 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf32> loc(fused["node_transpose", "node_matmul", "node_div", "node_add", "node_Softmax_1", "node_matmul_1"])
// CHECK-NEXT:    func.return

// -----

// Softmax over the query axis, not the keys.
// CHECK-LABEL: func.func @softmax_axis(
// CHECK-NOT:     graph.attention
// CHECK:         graph.softmax
func.func @softmax_axis(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("qk")
  %p = graph.softmax %s {axis = 2 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("pv")
  func.return %o : tensor<1x2x4x8xf32>
}

// -----

// A Where whose condition is not the causal triangle (the upper one).
// CHECK-LABEL: func.func @where_not_causal(
// CHECK-NOT:     graph.attention
// CHECK:         graph.softmax
func.func @where_not_causal(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("qk")
  %c = graph.constant dense<[[true, true, true, true], [false, true, true, true], [false, false, true, true], [false, false, false, true]]> : tensor<4x4xi1> loc("c")
  %n = graph.constant dense<0xFF800000> : tensor<f32> loc("n")
  %w = graph.where %c, %s, %n : (tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32> loc("where")
  %p = graph.softmax %w {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("pv")
  func.return %o : tensor<1x2x4x8xf32>
}

// -----

// The probabilities are a function result too.
// CHECK-LABEL: func.func @probs_returned(
// CHECK-NOT:     graph.attention
// CHECK:         graph.softmax
func.func @probs_returned(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("qk")
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("pv")
  func.return %o, %p : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// -----

// The scores have another user.
// CHECK-LABEL: func.func @scores_used(
// CHECK-NOT:     graph.attention
// CHECK:         graph.softmax
func.func @scores_used(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("qk")
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("pv")
  %r = graph.relu %s : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("other")
  func.return %o, %r : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// -----

// A transpose of another layout is still k^T of some k: here k's batch and heads swapped,
// and nn.MultiheadAttention's heads [B, S, H, D] transposed by (0, 2, 3, 1) below. k is made
// by a new transpose without the last swap, located at the old one.
// CHECK-LABEL: func.func @k_from_another_layout(
// CHECK-NEXT:    %0 = graph.transpose %k {perm = array<i64: 1, 0, 2, 3>} : (tensor<2x1x4x8xf32>) -> tensor<1x2x4x8xf32> loc("kt")
// CHECK-NEXT:    %o = graph.attention %q, %0, %v {{.*}} loc(fused["kt", "qk", "sm", "pv"])
func.func @k_from_another_layout(%q: tensor<1x2x4x8xf32>, %k: tensor<2x1x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {perm = array<i64: 1, 0, 3, 2>} : (tensor<2x1x4x8xf32>) -> tensor<1x2x8x4xf32> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("qk")
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("pv")
  func.return %o : tensor<1x2x4x8xf32>
}

// -----

// CHECK-LABEL: func.func @mha_heads(
// CHECK-NEXT:    %0 = graph.transpose %kh {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x8xf32>) -> tensor<1x2x4x8xf32> loc("kt")
// CHECK-NEXT:    %o = graph.attention %q, %0, %v {{.*}} loc(fused["kt", "qk", "sm", "pv"])
func.func @mha_heads(%q: tensor<1x2x4x8xf32>, %kh: tensor<1x4x2x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %kh {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x4x2x8xf32>) -> tensor<1x2x8x4xf32> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("qk")
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("pv")
  func.return %o : tensor<1x2x4x8xf32>
}

// -----

// A right operand that is no transpose (a [B, H, D, L] tensor as it is): left alone.
// CHECK-LABEL: func.func @not_transposed(
// CHECK-NOT:     graph.attention
// CHECK:         graph.softmax
func.func @not_transposed(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("qk")
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("pv")
  func.return %o : tensor<1x2x4x8xf32>
}

// -----

// HF's softmax(dtype=float32).to(f16): the Cast pair around the Softmax goes too.
// CHECK-LABEL: func.func @f16_casts(
// CHECK-NEXT:    %o = graph.attention %q, %k, %v {scale = 1.250000e-01 : f32, causal = 0 : i64} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> loc(fused["kt", "qk", "scale", "up", "sm", "down", "pv"])
// CHECK-NEXT:    func.return %o
func.func @f16_casts(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x4x8xf16>, %v: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf16>) -> tensor<1x2x8x4xf16> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16> loc("qk")
  %c = graph.constant dense<1.250000e-01> : tensor<f16> loc("c")
  %ss = graph.mul %s, %c : (tensor<1x2x4x4xf16>, tensor<f16>) -> tensor<1x2x4x4xf16> loc("scale")
  %up = graph.cast %ss {to = f32} : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32> loc("up")
  %p = graph.softmax %up {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sm")
  %pd = graph.cast %p {to = f16} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16> loc("down")
  %o = graph.matmul %pd, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> loc("pv")
  func.return %o : tensor<1x2x4x8xf16>
}

// -----

// A constant bias that is not the causal triangle (the diagonal masked too) is the mask operand, causal = 0.
// CHECK-LABEL: func.func @not_causal_constant(
// CHECK:         %o = graph.attention %q, %k, %v, %m {scale = 1.000000e+00 : f32, causal = 0 : i64}
func.func @not_causal_constant(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("qk")
  %m = graph.constant dense<[[-1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09], [0.0, -1.0e+09, -1.0e+09, -1.0e+09], [0.0, 0.0, -1.0e+09, -1.0e+09], [0.0, 0.0, 0.0, -1.0e+09]]> : tensor<4x4xf32> loc("m")
  %a = graph.add %s, %m : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32> loc("mask")
  %p = graph.softmax %a {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("pv")
  func.return %o : tensor<1x2x4x8xf32>
}

// -----

// torch.export's SDPA softmax (graph.safe_softmax: an all -inf row gives 0) with nothing masking
// the scores is the same attention; with a mask it stays (a fully masked row would give NaN).
// CHECK-LABEL: func.func @safe_softmax(
// CHECK-NEXT:    %o = graph.attention %q, %k, %v {scale = 1.000000e+00 : f32, causal = 0 : i64}
// CHECK-NEXT:    %[[KT:.*]] = graph.transpose %k
// CHECK-NEXT:    %[[S:.*]] = graph.matmul %q, %[[KT]]
// CHECK-NEXT:    %a = graph.add %[[S]], %m
// CHECK-NEXT:    %pm = graph.safe_softmax %a
// CHECK-NEXT:    %om = graph.matmul %pm, %v
func.func @safe_softmax(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<1x1x1x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("qk")
  %p = graph.safe_softmax %s {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("pv")
  %kt_1 = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32> loc("kt_1")
  %s_1 = graph.matmul %q, %kt_1 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("qk_1")
  %a = graph.add %s_1, %m : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32> loc("mask")
  %pm = graph.safe_softmax %a {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sm_1")
  %om = graph.matmul %pm, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("pv_1")
  func.return %o, %om : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// dynamo nn.MultiheadAttention (sequence first): k^T as Transpose (1, 2, 0) of k's [L, B*H, D] and a Reshape to [B, H, D, L]; k becomes a Transpose (1, 0, 2) and a Reshape to [B, H, L, D]
func.func @mha_seq_first(%q: tensor<1x2x4x8xf32> {onnx.name = "q"}, %k: tensor<4x2x8xf32> {onnx.name = "k"}, %v: tensor<1x2x4x8xf32> {onnx.name = "v"}) -> (tensor<1x2x4x8xf32> {onnx.name = "o"}) {
  %shape = graph.constant dense<[1, 2, 8, 4]> : tensor<4xi64> loc("val_5")
  %kt3 = graph.transpose %k {perm = array<i64: 1, 2, 0>} : (tensor<4x2x8xf32>) -> tensor<2x8x4xf32> loc("node_transpose_3")
  %kt = graph.reshape %kt3, %shape {allowzero = 1 : i64} : (tensor<2x8x4xf32>, tensor<4xi64>) -> tensor<1x2x8x4xf32> loc("node_view_4")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("node_MatMul_70")
  %c = graph.constant dense<0.353553355> : tensor<1xf32> loc("node_Mul_72")
  %s2 = graph.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<1xf32>) -> tensor<1x2x4x4xf32> loc("node_Mul_72")
  %p = graph.softmax %s2 {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("node_Softmax_77")
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("node_sdpa")
  func.return %o : tensor<1x2x4x8xf32>
}
// CHECK-LABEL: func.func @mha_seq_first(
// CHECK-NEXT:    %kt3_k = graph.transpose %k {perm = array<i64: 1, 0, 2>} : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32> loc("node_transpose_3")
// CHECK-NEXT:    %kt_k_shape = graph.constant dense<[1, 2, 4, 8]> : tensor<4xi64>
// CHECK-NEXT:    %kt_k = graph.reshape %kt3_k, %kt_k_shape {allowzero = 0 : i64} : (tensor<2x4x8xf32>, tensor<4xi64>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    %o = graph.attention %q, %kt_k, %v {scale = 0.353553355 : f32, causal = 0 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc(fused["node_transpose_3", "node_view_4", "node_MatMul_70", "node_Mul_72", "node_Softmax_77", "node_sdpa"])
// CHECK-NEXT:    func.return %o

// -----


// The same, but k^T's [B*H, D, L] is also returned: it cannot vanish, so nothing changes
func.func @mha_seq_first_kept(%q: tensor<1x2x4x8xf32> {onnx.name = "q"}, %k: tensor<4x2x8xf32> {onnx.name = "k"}, %v: tensor<1x2x4x8xf32> {onnx.name = "v"}) -> (tensor<1x2x4x8xf32> {onnx.name = "o"}, tensor<2x8x4xf32> {onnx.name = "kt"}) {
  %shape = graph.constant dense<[1, 2, 8, 4]> : tensor<4xi64> loc("val_5")
  %kt3 = graph.transpose %k {perm = array<i64: 1, 2, 0>} : (tensor<4x2x8xf32>) -> tensor<2x8x4xf32> loc("node_transpose_3")
  %kt = graph.reshape %kt3, %shape {allowzero = 1 : i64} : (tensor<2x8x4xf32>, tensor<4xi64>) -> tensor<1x2x8x4xf32> loc("node_view_4")
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32> loc("node_MatMul_70")
  %c = graph.constant dense<0.353553355> : tensor<1xf32> loc("node_Mul_72")
  %s2 = graph.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<1xf32>) -> tensor<1x2x4x4xf32> loc("node_Mul_72")
  %p = graph.softmax %s2 {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("node_Softmax_77")
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("node_sdpa")
  func.return %o, %kt3 : tensor<1x2x4x8xf32>, tensor<2x8x4xf32>
}
// CHECK-LABEL: func.func @mha_seq_first_kept(
// CHECK:         graph.transpose %k {perm = array<i64: 1, 2, 0>}
// CHECK:         graph.softmax
// CHECK-NOT:     graph.attention
// CHECK:         func.return %o, %kt3

// -----

// A static KV cache's mask: query i (at row pos + i + 2 here) sees cache rows j <= pos + i + 2,
// Where(LessOrEqual(j, i + 2 + pos), 0, lowest) reshaped to [1, 1, S, L], the one mask of
// every layer. Each attention gets a graph.causal_mask of its own (fusion takes a mask only
// its attention reads), located at the attention's nodes, then the mask's; the shared chain goes.
// CHECK-LABEL: func.func @position_mask(
// CHECK-NOT:     graph.less_or_equal
// CHECK-NOT:     graph.where
// CHECK:         %[[F:.*]] = graph.constant dense<-3.40282347e+38> : tensor<f32>
// CHECK:         %mask = graph.causal_mask %pos, %[[F]] {queries = 4 : i64, keys = 8 : i64, offset = 2 : i64} : (tensor<1xi64>, tensor<f32>) -> tensor<1x1x4x8xf32> loc(fused["kt", "qk", "add_mask", "sm", "pv", "mask"])
// CHECK-NEXT:    %pv = graph.attention %q, %k, %v, %mask {scale = 1.000000e+00 : f32, causal = 0 : i64}
// CHECK:         %mask_1 = graph.causal_mask %pos, %[[F]] {queries = 4 : i64, keys = 8 : i64, offset = 2 : i64}
// CHECK-NEXT:    %pv2 = graph.attention %pv, %k, %v, %mask_1
// CHECK-NOT:     graph.where
// CHECK:         func.return %pv2
func.func @position_mask(%pos: tensor<1xi64>, %q: tensor<1x2x4x8xf32>, %k: tensor<1x2x8x8xf32>, %v: tensor<1x2x8x8xf32>) -> tensor<1x2x4x8xf32> {
  %rows = graph.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
  %qrows = graph.constant dense<[[2], [3], [4], [5]]> : tensor<4x1xi64>
  %at = graph.add %qrows, %pos : (tensor<4x1xi64>, tensor<1xi64>) -> tensor<4x1xi64>
  %seen = graph.less_or_equal %rows, %at : (tensor<1x8xi64>, tensor<4x1xi64>) -> tensor<4x8xi1>
  %0 = graph.constant dense<0.000000e+00> : tensor<f32>
  %1 = graph.constant dense<-3.40282347e+38> : tensor<f32>
  %where = graph.where %seen, %0, %1 : (tensor<4x8xi1>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
  %2 = graph.constant dense<[1, 1, 4, 8]> : tensor<4xi64>
  %mask = graph.reshape %where, %2 {allowzero = 0 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<1x1x4x8xf32> loc("mask")
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> loc("kt")
  %qk = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x4x8xf32> loc("qk")
  %add_mask = graph.add %qk, %mask : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32> loc("add_mask")
  %sm = graph.softmax %add_mask {axis = -1 : i64} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("sm")
  %pv = graph.matmul %sm, %v : (tensor<1x2x4x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x4x8xf32> loc("pv")
  %kt2 = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %qk2 = graph.matmul %pv, %kt2 : (tensor<1x2x4x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x4x8xf32>
  %add2 = graph.add %mask, %qk2 : (tensor<1x1x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %sm2 = graph.softmax %add2 {axis = -1 : i64} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %pv2 = graph.matmul %sm2, %v : (tensor<1x2x4x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %pv2 : tensor<1x2x4x8xf32>
}

// -----

// Left as a mask operand: a decode step's (one query row sees every row up to the position:
// the kernel reads the mask row), a strict comparison, a fill that does not mask (-1), and
// key indices that are not 0, 1, 2, ...
// CHECK-LABEL: func.func @not_position_masks(
// CHECK-NOT:     graph.causal_mask
// CHECK:         graph.attention %q1, %k, %v, %m1
// CHECK-NOT:     graph.causal_mask
// CHECK:         graph.attention %q, %k, %v, %m2
// CHECK-NOT:     graph.causal_mask
// CHECK:         graph.attention %q, %k, %v, %m3
// CHECK-NOT:     graph.causal_mask
// CHECK:         graph.attention %q, %k, %v, %m4
// CHECK-NOT:     graph.causal_mask
func.func @not_position_masks(%pos: tensor<1xi64>, %q1: tensor<1x2x1x8xf32>, %q: tensor<1x2x4x8xf32>, %k: tensor<1x2x8x8xf32>, %v: tensor<1x2x8x8xf32>) -> (tensor<1x2x1x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %rows = graph.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
  %even = graph.constant dense<[[0, 2, 4, 6, 8, 10, 12, 14]]> : tensor<1x8xi64>
  %qrows = graph.constant dense<[[0], [1], [2], [3]]> : tensor<4x1xi64>
  %zero = graph.constant dense<0.000000e+00> : tensor<f32>
  %low = graph.constant dense<-3.40282347e+38> : tensor<f32>
  %minus1 = graph.constant dense<-1.000000e+00> : tensor<f32>
  %seen1 = graph.less_or_equal %rows, %pos : (tensor<1x8xi64>, tensor<1xi64>) -> tensor<1x8xi1>
  %w1 = graph.where %seen1, %zero, %low : (tensor<1x8xi1>, tensor<f32>, tensor<f32>) -> tensor<1x8xf32>
  %s1 = graph.constant dense<[1, 1, 1, 8]> : tensor<4xi64>
  %m1 = graph.reshape %w1, %s1 {allowzero = 0 : i64} : (tensor<1x8xf32>, tensor<4xi64>) -> tensor<1x1x1x8xf32>
  %kt1 = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %qk1 = graph.matmul %q1, %kt1 : (tensor<1x2x1x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x1x8xf32>
  %a1 = graph.add %qk1, %m1 : (tensor<1x2x1x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x2x1x8xf32>
  %p1 = graph.softmax %a1 {axis = -1 : i64} : (tensor<1x2x1x8xf32>) -> tensor<1x2x1x8xf32>
  %o1 = graph.matmul %p1, %v : (tensor<1x2x1x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x1x8xf32>
  %at = graph.add %qrows, %pos : (tensor<4x1xi64>, tensor<1xi64>) -> tensor<4x1xi64>
  %s4 = graph.constant dense<[1, 1, 4, 8]> : tensor<4xi64>
  %seen2 = graph.less %rows, %at : (tensor<1x8xi64>, tensor<4x1xi64>) -> tensor<4x8xi1>
  %w2 = graph.where %seen2, %zero, %low : (tensor<4x8xi1>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
  %m2 = graph.reshape %w2, %s4 {allowzero = 0 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<1x1x4x8xf32>
  %kt2 = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %qk2 = graph.matmul %q, %kt2 : (tensor<1x2x4x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x4x8xf32>
  %a2 = graph.add %qk2, %m2 : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %p2 = graph.softmax %a2 {axis = -1 : i64} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %o2 = graph.matmul %p2, %v : (tensor<1x2x4x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x4x8xf32>
  %seen3 = graph.less_or_equal %rows, %at : (tensor<1x8xi64>, tensor<4x1xi64>) -> tensor<4x8xi1>
  %w3 = graph.where %seen3, %zero, %minus1 : (tensor<4x8xi1>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
  %m3 = graph.reshape %w3, %s4 {allowzero = 0 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<1x1x4x8xf32>
  %kt3 = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %qk3 = graph.matmul %q, %kt3 : (tensor<1x2x4x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x4x8xf32>
  %a3 = graph.add %qk3, %m3 : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %p3 = graph.softmax %a3 {axis = -1 : i64} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %o3 = graph.matmul %p3, %v : (tensor<1x2x4x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x4x8xf32>
  %seen4 = graph.less_or_equal %even, %at : (tensor<1x8xi64>, tensor<4x1xi64>) -> tensor<4x8xi1>
  %w4 = graph.where %seen4, %zero, %low : (tensor<4x8xi1>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
  %m4 = graph.reshape %w4, %s4 {allowzero = 0 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<1x1x4x8xf32>
  %kt4 = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %qk4 = graph.matmul %q, %kt4 : (tensor<1x2x4x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x4x8xf32>
  %a4 = graph.add %qk4, %m4 : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %p4 = graph.softmax %a4 {axis = -1 : i64} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %o4 = graph.matmul %p4, %v : (tensor<1x2x4x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o1, %o2, %o3, %o4 : tensor<1x2x1x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}
