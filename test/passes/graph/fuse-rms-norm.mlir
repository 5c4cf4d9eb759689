// graph-fuse with graph.rms_norm: the `layernorm` pattern anchors on every op of the
// Normalization trait, so an RMSNorm fuses with its neighbours as a LayerNorm does - the
// residual Add before it, elementwise ops after it - in one vector kernel.
// RUN: geir-opt %s --split-input-file -p graph-recognize-rms-norm,graph-fuse | filecheck %s
// RUN: geir-opt %s --split-input-file -p graph-recognize-rms-norm,graph-fuse,graph-fuse | filecheck %s

// A decomposed RMSNorm becomes graph.rms_norm (located at all six nodes), in one vector kernel
// with the residual Add before it.
// CHECK-LABEL: func.func @add_rms_norm(
// CHECK-NEXT:    %w = graph.constant dense<1.500000e+00> : tensor<64xf32>
// CHECK-NEXT:    %y = graph.fusion "vector" (%x, %r, %w) attributes {graph.pattern = "layernorm"}
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<1x8x64xf32>, %[[R:.*]]: tensor<1x8x64xf32>, %[[W:.*]]: tensor<64xf32>):
// CHECK-NEXT:      %[[H:.*]] = graph.add %[[X]], %[[R]] {{.*}} loc("residual")
// CHECK-NEXT:      %[[Y:.*]] = graph.rms_norm %[[H]], %[[W]] {axis = 2 : i64, epsilon = 1.000000e-06 : f32} : {{.*}} loc(fused["rms/pow", "rms/mean", "rms/add_eps", "rms/sqrt", "rms/div", "rms/mul"])
// CHECK-NEXT:      graph.yield %[[Y]]
// CHECK-NEXT:    } loc(fused["residual", "rms/pow", "rms/mean", "rms/add_eps", "rms/sqrt", "rms/div", "rms/mul"])
// CHECK-NEXT:    func.return %y
func.func @add_rms_norm(%x: tensor<1x8x64xf32>, %r: tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
  %two = graph.constant dense<2.0> : tensor<f32> loc("rms/two")
  %eps = graph.constant dense<1.0e-06> : tensor<f32> loc("rms/eps")
  %w = graph.constant dense<1.5> : tensor<64xf32> loc("rms/weight")
  %h = graph.add %x, %r : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32> loc("residual")
  %sq = graph.pow %h, %two : (tensor<1x8x64xf32>, tensor<f32>) -> tensor<1x8x64xf32> loc("rms/pow")
  %ms = graph.reduce_mean %sq {axes = array<i64: -1>} : (tensor<1x8x64xf32>) -> tensor<1x8x1xf32> loc("rms/mean")
  %me = graph.add %ms, %eps : (tensor<1x8x1xf32>, tensor<f32>) -> tensor<1x8x1xf32> loc("rms/add_eps")
  %s = graph.sqrt %me : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32> loc("rms/sqrt")
  %n = graph.div %h, %s : (tensor<1x8x64xf32>, tensor<1x8x1xf32>) -> tensor<1x8x64xf32> loc("rms/div")
  %y = graph.mul %w, %n : (tensor<64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32> loc("rms/mul")
  func.return %y : tensor<1x8x64xf32>
}

// -----

// An imported rms_norm with the residual Add before it and a SiLU after it: one kernel.
// CHECK-LABEL: func.func @add_rms_norm_silu(
// CHECK-NEXT:    %y = graph.fusion "vector" (%x, %r, %w) attributes {graph.pattern = "layernorm"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.rms_norm
// CHECK-NEXT:      graph.sigmoid
// CHECK-NEXT:      graph.mul
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    } loc(fused["residual", "rms", "sigmoid", "silu"])
// CHECK-NEXT:    func.return %y
func.func @add_rms_norm_silu(%x: tensor<16x256xf32>, %r: tensor<16x256xf32>, %w: tensor<256xf32>) -> tensor<16x256xf32> {
  %h = graph.add %x, %r : (tensor<16x256xf32>, tensor<16x256xf32>) -> tensor<16x256xf32> loc("residual")
  %n = graph.rms_norm %h, %w {epsilon = 1.0e-06 : f32} : (tensor<16x256xf32>, tensor<256xf32>) -> tensor<16x256xf32> loc("rms")
  %s = graph.sigmoid %n : (tensor<16x256xf32>) -> tensor<16x256xf32> loc("sigmoid")
  %y = graph.mul %n, %s : (tensor<16x256xf32>, tensor<16x256xf32>) -> tensor<16x256xf32> loc("silu")
  func.return %y : tensor<16x256xf32>
}

// -----

// The residual stream: h feeds the RMSNorm and the next residual Add (torch.rsqrt spelled
// Reciprocal(Sqrt), weight * n). The second Add is the norm's epilogue, after which every user
// of h is inside, so the first Add joins too: one kernel yielding the norm and the new stream.
// CHECK-LABEL: func.func @residual_stream(
// CHECK-NEXT:    %y, %z = graph.fusion "vector" (%x, %r, %w) attributes {graph.pattern = "layernorm"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[H:.*]] = graph.add
// CHECK-NEXT:      %[[Y:.*]] = graph.rms_norm %[[H]], %{{.*}} {axis = 1 : i64, epsilon = 1.000000e-06 : f32}
// CHECK-NEXT:      %[[Z:.*]] = graph.add %[[H]], %[[Y]]
// CHECK-NEXT:      graph.yield %[[Y]], %[[Z]]
// CHECK-NEXT:    } loc(fused["residual", "rms/square", "rms/mean", "rms/add_eps", "rms/sqrt", "rms/rsqrt", "rms/mul", "rms/scale", "residual2"])
// CHECK-NEXT:    func.return %y, %z
func.func @residual_stream(%x: tensor<16x256xf32>, %r: tensor<16x256xf32>, %w: tensor<256xf32>) -> (tensor<16x256xf32>, tensor<16x256xf32>) {
  %eps = graph.constant dense<1.0e-06> : tensor<f32> loc("rms/eps")
  %h = graph.add %x, %r : (tensor<16x256xf32>, tensor<16x256xf32>) -> tensor<16x256xf32> loc("residual")
  %sq = graph.mul %h, %h : (tensor<16x256xf32>, tensor<16x256xf32>) -> tensor<16x256xf32> loc("rms/square")
  %ms = graph.reduce_mean %sq {axes = array<i64: -1>} : (tensor<16x256xf32>) -> tensor<16x1xf32> loc("rms/mean")
  %me = graph.add %ms, %eps : (tensor<16x1xf32>, tensor<f32>) -> tensor<16x1xf32> loc("rms/add_eps")
  %s = graph.sqrt %me : (tensor<16x1xf32>) -> tensor<16x1xf32> loc("rms/sqrt")
  %inv = graph.reciprocal %s : (tensor<16x1xf32>) -> tensor<16x1xf32> loc("rms/rsqrt")
  %n = graph.mul %h, %inv : (tensor<16x256xf32>, tensor<16x1xf32>) -> tensor<16x256xf32> loc("rms/mul")
  %y = graph.mul %w, %n : (tensor<256xf32>, tensor<16x256xf32>) -> tensor<16x256xf32> loc("rms/scale")
  %z = graph.add %h, %y : (tensor<16x256xf32>, tensor<16x256xf32>) -> tensor<16x256xf32> loc("residual2")
  func.return %y, %z : tensor<16x256xf32>, tensor<16x256xf32>
}

// -----

// A pre-norm layer (LLaMA): h = x + attn feeds the norm and the next residual, which comes
// after the MLP's matmul, outside the norm's kernel. The Add still joins the norm (pattern
// `side_outputs`): the kernel writes h and the normalised h (CANN's AddRmsNorm), one kernel
// and one read of h fewer than an Add kernel and a norm kernel. The next residual feeds no
// norm here (it is the output), so it is the matmul's epilogue, reading h.
// CHECK-LABEL: func.func @pre_norm(
// CHECK-NEXT:    %h, %y = graph.fusion "vector" (%x, %a, %w) attributes {graph.pattern = "layernorm"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[H:.*]] = graph.add
// CHECK-NEXT:      %[[Y:.*]] = graph.rms_norm %[[H]]
// CHECK-NEXT:      graph.yield %[[H]], %[[Y]]
// CHECK-NEXT:    } loc(fused["residual", "norm"])
// CHECK-NEXT:    %z = graph.fusion "cube+vector" (%y, %q, %h) attributes {graph.pattern = "matmul-epilogue"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[M:.*]] = graph.matmul
// CHECK-NEXT:      %[[Z:.*]] = graph.add %{{.*}}, %[[M]]
// CHECK-NEXT:      graph.yield %[[Z]]
// CHECK-NEXT:    } loc(fused["mlp", "residual2"])
func.func @pre_norm(%x: tensor<16x256xf32>, %a: tensor<16x256xf32>, %w: tensor<256xf32>, %q: tensor<256x256xf32>) -> tensor<16x256xf32> {
  %h = graph.add %x, %a : (tensor<16x256xf32>, tensor<16x256xf32>) -> tensor<16x256xf32> loc("residual")
  %y = graph.rms_norm %h, %w {epsilon = 1.0e-06 : f32} : (tensor<16x256xf32>, tensor<256xf32>) -> tensor<16x256xf32> loc("norm")
  %m = graph.matmul %y, %q : (tensor<16x256xf32>, tensor<256x256xf32>) -> tensor<16x256xf32> loc("mlp")
  %z = graph.add %h, %m : (tensor<16x256xf32>, tensor<16x256xf32>) -> tensor<16x256xf32> loc("residual2")
  func.return %z : tensor<16x256xf32>
}

// -----

// An imported rms_norm (one node) before a projection of 16 rows: the norm is the matmul
// kernel's prologue (graph-fuse step 4, fuse-norm-prologue.mlir).
// CHECK-LABEL: func.func @rms_norm_matmul(
// CHECK-NEXT:    %y = graph.fusion "cube+vector" (%x, %w, %q) attributes {graph.pattern = "norm-prologue"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      graph.rms_norm
// CHECK-NEXT:      graph.matmul
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    } loc(fused["rms", "q_proj"])
// CHECK-NEXT:    func.return %y
func.func @rms_norm_matmul(%x: tensor<16x256xf32>, %w: tensor<256xf32>, %q: tensor<256x256xf32>) -> tensor<16x256xf32> {
  %n = graph.rms_norm %x, %w {epsilon = 1.0e-06 : f32} : (tensor<16x256xf32>, tensor<256xf32>) -> tensor<16x256xf32> loc("rms")
  %y = graph.matmul %n, %q : (tensor<16x256xf32>, tensor<256x256xf32>) -> tensor<16x256xf32> loc("q_proj")
  func.return %y : tensor<16x256xf32>
}

// -----

// LLaMA's MLP: silu(x W_gate) * (x W_up), down projection, residual, the next norm. The up
// projection has the gate's lhs and only the product reads it: it joins the gate projection's
// kernel as its partner (one kernel computes both products, a gated matmul); the residual Add
// after the down projection feeds the norm, so it stays with the norm (Add+Norm), and at 16
// rows that group joins the down projection as its norm epilogue (one block holds every row).
// CHECK-LABEL: func.func @swiglu(
// CHECK-NEXT:    %p = graph.fusion "cube+vector" (%x, %wg, %wu) attributes {graph.pattern = "matmul-epilogue"}
// CHECK:         } loc(fused["gate_proj", "act/sigmoid", "act/mul", "up_proj", "mlp/mul"])
// CHECK-NEXT:    %y = graph.fusion "cube+vector" (%p, %wd, %r, %w) attributes {graph.pattern = "norm-epilogue"}
// CHECK:         } loc(fused["down_proj", "residual", "norm"])
func.func @swiglu(%x: tensor<16x64xf32>, %r: tensor<16x64xf32>, %wg: tensor<64x128xf32>, %wu: tensor<64x128xf32>, %wd: tensor<128x64xf32>, %w: tensor<64xf32>) -> tensor<16x64xf32> {
  %g = graph.matmul %x, %wg : (tensor<16x64xf32>, tensor<64x128xf32>) -> tensor<16x128xf32> loc("gate_proj")
  %sg = graph.sigmoid %g : (tensor<16x128xf32>) -> tensor<16x128xf32> loc("act/sigmoid")
  %silu = graph.mul %g, %sg : (tensor<16x128xf32>, tensor<16x128xf32>) -> tensor<16x128xf32> loc("act/mul")
  %u = graph.matmul %x, %wu : (tensor<16x64xf32>, tensor<64x128xf32>) -> tensor<16x128xf32> loc("up_proj")
  %p = graph.mul %silu, %u : (tensor<16x128xf32>, tensor<16x128xf32>) -> tensor<16x128xf32> loc("mlp/mul")
  %d = graph.matmul %p, %wd : (tensor<16x128xf32>, tensor<128x64xf32>) -> tensor<16x64xf32> loc("down_proj")
  %h = graph.add %r, %d : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32> loc("residual")
  %y = graph.rms_norm %h, %w {epsilon = 1.0e-06 : f32} : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32> loc("norm")
  func.return %y : tensor<16x64xf32>
}

// -----

// Not gated partners: the up projection's product is also returned (the kernel would have to
// write it too), and a second matmul of another lhs. Each stays a kernel of its own; the
// product reads its output as a side, as before partners existed.
// CHECK-LABEL: func.func @swiglu_partner_escapes(
// CHECK-NEXT:    %u = graph.matmul %x, %wu
// CHECK-NEXT:    %p = graph.fusion "cube+vector" (%x, %wg, %u) attributes {graph.pattern = "matmul-epilogue"}
// CHECK:         } loc(fused["gate_proj", "act/sigmoid", "act/mul", "mlp/mul"])
func.func @swiglu_partner_escapes(%x: tensor<16x64xf32>, %wg: tensor<64x128xf32>, %wu: tensor<64x128xf32>) -> (tensor<16x128xf32>, tensor<16x128xf32>) {
  %g = graph.matmul %x, %wg : (tensor<16x64xf32>, tensor<64x128xf32>) -> tensor<16x128xf32> loc("gate_proj")
  %sg = graph.sigmoid %g : (tensor<16x128xf32>) -> tensor<16x128xf32> loc("act/sigmoid")
  %silu = graph.mul %g, %sg : (tensor<16x128xf32>, tensor<16x128xf32>) -> tensor<16x128xf32> loc("act/mul")
  %u = graph.matmul %x, %wu : (tensor<16x64xf32>, tensor<64x128xf32>) -> tensor<16x128xf32> loc("up_proj")
  %p = graph.mul %silu, %u : (tensor<16x128xf32>, tensor<16x128xf32>) -> tensor<16x128xf32> loc("mlp/mul")
  func.return %p, %u : tensor<16x128xf32>, tensor<16x128xf32>
}

// -----

// CHECK-LABEL: func.func @swiglu_other_lhs(
// CHECK-NEXT:    %u = graph.matmul %x2, %wu
// CHECK-NEXT:    %p = graph.fusion "cube+vector" (%x, %wg, %u) attributes {graph.pattern = "matmul-epilogue"}
// CHECK:         } loc(fused["gate_proj", "act/sigmoid", "act/mul", "mlp/mul"])
func.func @swiglu_other_lhs(%x: tensor<16x64xf32>, %x2: tensor<16x64xf32>, %wg: tensor<64x128xf32>, %wu: tensor<64x128xf32>) -> tensor<16x128xf32> {
  %g = graph.matmul %x, %wg : (tensor<16x64xf32>, tensor<64x128xf32>) -> tensor<16x128xf32> loc("gate_proj")
  %sg = graph.sigmoid %g : (tensor<16x128xf32>) -> tensor<16x128xf32> loc("act/sigmoid")
  %silu = graph.mul %g, %sg : (tensor<16x128xf32>, tensor<16x128xf32>) -> tensor<16x128xf32> loc("act/mul")
  %u = graph.matmul %x2, %wu : (tensor<16x64xf32>, tensor<64x128xf32>) -> tensor<16x128xf32> loc("up_proj")
  %p = graph.mul %silu, %u : (tensor<16x128xf32>, tensor<16x128xf32>) -> tensor<16x128xf32> loc("mlp/mul")
  func.return %p : tensor<16x128xf32>
}
