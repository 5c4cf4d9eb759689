// graph-fuse step 5, norm epilogues: a normalisation group that reads the product of one
// matmul, over rows that are the product's N, joins the matmul's kernel when every block
// computing whole rows (and so reading the whole rhs) costs less than the launch and the round
// trip it saves (lowering/templates/cube/norm_epilogue.py).
// RUN: geir-opt %s --split-input-file -p graph-fuse | filecheck %s
// RUN: geir-opt %s --split-input-file -p "graph-fuse{disable=norm-epilogue}" | filecheck %s --check-prefix=OFF

// A post-LN block's out-projection (K = N = hidden) and its residual Add + LayerNorm: one kernel.
// CHECK-LABEL: func.func @out_projection(
// CHECK-NEXT:    %n = graph.fusion "cube+vector" (%a, %wo, %x, %g, %b) attributes {graph.pattern = "norm-epilogue"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[Y:.*]] = graph.matmul
// CHECK-NEXT:      %[[H:.*]] = graph.add %{{.*}}, %[[Y]]
// CHECK-NEXT:      %[[N:.*]] = graph.layer_norm %[[H]]
// CHECK-NEXT:      graph.yield %[[N]]
// CHECK-NEXT:    } loc(fused["out_proj", "residual", "norm"])
// CHECK-NEXT:    func.return %n
// OFF-LABEL:   func.func @out_projection(
// OFF-NEXT:      %y = graph.matmul %a, %wo
// OFF-NEXT:      %n = graph.fusion "vector" (%x, %y, %g, %b) attributes {graph.pattern = "layernorm"}
func.func @out_projection(%a: tensor<2x128x768xf16>, %wo: tensor<768x768xf16>, %x: tensor<2x128x768xf16>, %g: tensor<768xf16>, %b: tensor<768xf16>) -> tensor<2x128x768xf16> {
  %y = graph.matmul %a, %wo : (tensor<2x128x768xf16>, tensor<768x768xf16>) -> tensor<2x128x768xf16> loc("out_proj")
  %h = graph.add %x, %y : (tensor<2x128x768xf16>, tensor<2x128x768xf16>) -> tensor<2x128x768xf16> loc("residual")
  %n = graph.layer_norm %h, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x128x768xf16>, tensor<768xf16>, tensor<768xf16>) -> tensor<2x128x768xf16> loc("norm")
  func.return %n : tensor<2x128x768xf16>
}

// -----

// An FFN's down projection (K = 4 x N) at 1024 rows: every block would read the whole 4.7 MB
// rhs, which costs more than the launch saved. The Add + LayerNorm stays a kernel of its own.
// CHECK-LABEL: func.func @down_projection(
// CHECK-NEXT:    %y = graph.matmul %a, %wd
// CHECK-NEXT:    %n = graph.fusion "vector" (%x, %y, %g, %b) attributes {graph.pattern = "layernorm"}
func.func @down_projection(%a: tensor<8x128x3072xf16>, %wd: tensor<3072x768xf16>, %x: tensor<8x128x768xf16>, %g: tensor<768xf16>, %b: tensor<768xf16>) -> tensor<8x128x768xf16> {
  %y = graph.matmul %a, %wd : (tensor<8x128x3072xf16>, tensor<3072x768xf16>) -> tensor<8x128x768xf16> loc("down_proj")
  %h = graph.add %x, %y : (tensor<8x128x768xf16>, tensor<8x128x768xf16>) -> tensor<8x128x768xf16> loc("residual")
  %n = graph.layer_norm %h, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<8x128x768xf16>, tensor<768xf16>, tensor<768xf16>) -> tensor<8x128x768xf16> loc("norm")
  func.return %n : tensor<8x128x768xf16>
}

// -----

// At a deployment size (batch 8, sequence 512: 4096 rows) a work item holds at most the rows
// whose lhs panel fits half of L1, so there are more items than blocks and each reads the whole
// rhs. The out-projection's 1.2 MB rhs read ~26 times still costs less than the round trip saved.
// CHECK-LABEL: func.func @out_projection_4096_rows(
// CHECK-NEXT:    %n = graph.fusion "cube+vector" (%a, %wo, %x, %g, %b) attributes {graph.pattern = "norm-epilogue"}
func.func @out_projection_4096_rows(%a: tensor<8x512x768xf16>, %wo: tensor<768x768xf16>, %x: tensor<8x512x768xf16>, %g: tensor<768xf16>, %b: tensor<768xf16>) -> tensor<8x512x768xf16> {
  %y = graph.matmul %a, %wo : (tensor<8x512x768xf16>, tensor<768x768xf16>) -> tensor<8x512x768xf16> loc("out_proj")
  %h = graph.add %x, %y : (tensor<8x512x768xf16>, tensor<8x512x768xf16>) -> tensor<8x512x768xf16> loc("residual")
  %n = graph.layer_norm %h, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<8x512x768xf16>, tensor<768xf16>, tensor<768xf16>) -> tensor<8x512x768xf16> loc("norm")
  func.return %n : tensor<8x512x768xf16>
}

// -----

// The down projection's 4.7 MB rhs, read once per item of at most 32 rows (its [rows, 3072]
// panel in half of L1): 128 items, 600 MB of reads. Left alone (a per-block count of reads,
// 24, would have taken it and lost 27 us).
// CHECK-LABEL: func.func @down_projection_4096_rows(
// CHECK-NEXT:    %y = graph.matmul %a, %wd
// CHECK-NEXT:    %n = graph.fusion "vector" (%x, %y, %g, %b) attributes {graph.pattern = "layernorm"}
func.func @down_projection_4096_rows(%a: tensor<8x512x3072xf16>, %wd: tensor<3072x768xf16>, %x: tensor<8x512x768xf16>, %g: tensor<768xf16>, %b: tensor<768xf16>) -> tensor<8x512x768xf16> {
  %y = graph.matmul %a, %wd : (tensor<8x512x3072xf16>, tensor<3072x768xf16>) -> tensor<8x512x768xf16> loc("down_proj")
  %h = graph.add %x, %y : (tensor<8x512x768xf16>, tensor<8x512x768xf16>) -> tensor<8x512x768xf16> loc("residual")
  %n = graph.layer_norm %h, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<8x512x768xf16>, tensor<768xf16>, tensor<768xf16>) -> tensor<8x512x768xf16> loc("norm")
  func.return %n : tensor<8x512x768xf16>
}

// -----

// The product is returned too: the kernel would have to write it; left alone.
// CHECK-LABEL: func.func @product_returned(
// CHECK-NEXT:    %y = graph.matmul %a, %wo
// CHECK-NEXT:    %n = graph.fusion "vector" (%x, %y, %g, %b) attributes {graph.pattern = "layernorm"}
func.func @product_returned(%a: tensor<2x128x768xf16>, %wo: tensor<768x768xf16>, %x: tensor<2x128x768xf16>, %g: tensor<768xf16>, %b: tensor<768xf16>) -> (tensor<2x128x768xf16>, tensor<2x128x768xf16>) {
  %y = graph.matmul %a, %wo : (tensor<2x128x768xf16>, tensor<768x768xf16>) -> tensor<2x128x768xf16> loc("out_proj")
  %h = graph.add %x, %y : (tensor<2x128x768xf16>, tensor<2x128x768xf16>) -> tensor<2x128x768xf16> loc("residual")
  %n = graph.layer_norm %h, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x128x768xf16>, tensor<768xf16>, tensor<768xf16>) -> tensor<2x128x768xf16> loc("norm")
  func.return %y, %n : tensor<2x128x768xf16>, tensor<2x128x768xf16>
}

// -----

// The rows the norm reduces are not the product's: the product [128, 768] seen as [768, 128]
// and normalised over those 128. A block's rows of the product are not the norm's rows; left alone.
// CHECK-LABEL: func.func @other_rows(
// CHECK-NEXT:    %y = graph.matmul %a, %wo
// CHECK-NOT:     norm-epilogue
func.func @other_rows(%a: tensor<128x768xf32>, %wo: tensor<768x768xf32>, %x: tensor<768x128xf32>, %g: tensor<128xf32>, %b: tensor<128xf32>) -> tensor<768x128xf32> {
  %y = graph.matmul %a, %wo : (tensor<128x768xf32>, tensor<768x768xf32>) -> tensor<128x768xf32> loc("out_proj")
  %s = graph.constant dense<[768, 128]> : tensor<2xi64>
  %r = graph.reshape %y, %s : (tensor<128x768xf32>, tensor<2xi64>) -> tensor<768x128xf32> loc("view")
  %h = graph.add %x, %r : (tensor<768x128xf32>, tensor<768x128xf32>) -> tensor<768x128xf32> loc("residual")
  %n = graph.layer_norm %h, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<768x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<768x128xf32> loc("norm")
  func.return %n : tensor<768x128xf32>
}
