// convert-graph-to-ascend: the attention kernel prices its block count too. A decode step of 32
// heads has 32 work items; on 24 cube cores, 24 blocks leave 8 of them two items each, every
// block at 1/24 of HBM the whole time, so 16 blocks of two items (each at 1/16) are cheaper.
// Items that fill the cores evenly keep one block per core.
// RUN: geir-opt %s --split-input-file -p 'convert-graph-to-ascend' | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_decode_32_heads(
// CHECK-SAME:    attributes {block_dim = 16 : i64, core_type = "mix", geir.scratch = 3 : i64, template = "attention"}
func.func @main(%q: tensor<1x32x1x128xf16>, %k: tensor<1x32x512x128xf16>, %v: tensor<1x32x512x128xf16>) -> tensor<1x32x1x128xf16> {
  %y = graph.attention %q, %k, %v {scale = 0.088388 : f32, causal = 0 : i64} : (tensor<1x32x1x128xf16>, tensor<1x32x512x128xf16>, tensor<1x32x512x128xf16>) -> tensor<1x32x1x128xf16> loc("decode_32_heads")
  func.return %y : tensor<1x32x1x128xf16>
}

// -----

// CHECK-LABEL: ascend.kernel @k0_decode_48_heads(
// CHECK-SAME:    attributes {block_dim = 24 : i64, core_type = "mix", geir.scratch = 3 : i64, template = "attention"}
func.func @main(%q: tensor<1x48x1x128xf16>, %k: tensor<1x48x512x128xf16>, %v: tensor<1x48x512x128xf16>) -> tensor<1x48x1x128xf16> {
  %y = graph.attention %q, %k, %v {scale = 0.088388 : f32, causal = 0 : i64} : (tensor<1x48x1x128xf16>, tensor<1x48x512x128xf16>, tensor<1x48x512x128xf16>) -> tensor<1x48x1x128xf16> loc("decode_48_heads")
  func.return %y : tensor<1x48x1x128xf16>
}
