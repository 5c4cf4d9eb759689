// graph-fuse step 4, norm prologues: a normalisation group whose norm only the matmuls of one
// cube group read, as their lhs, joins that group when repeating the norm on every block of
// the cube kernel costs less than the launch it saves (lowering/templates/cube/prologue.py).
// RUN: geir-opt %s --split-input-file -p graph-fuse | filecheck %s
// RUN: geir-opt %s --split-input-file -p "graph-fuse{disable=norm-prologue}" | filecheck %s --check-prefix=OFF

// A decode step: Add + RMSNorm before a projection of one row. The norm's group joins the
// matmul's kernel as its prologue: one kernel yields the residual sum and the product.
// CHECK-LABEL: func.func @decode_step(
// CHECK-NEXT:    %h, %y = graph.fusion "cube+vector" (%x, %r, %w, %q) attributes {graph.pattern = "norm-prologue"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[H:.*]] = graph.add
// CHECK-NEXT:      %[[N:.*]] = graph.rms_norm %[[H]]
// CHECK-NEXT:      %[[Y:.*]] = graph.matmul %[[N]]
// CHECK-NEXT:      graph.yield %[[H]], %[[Y]]
// CHECK-NEXT:    } loc(fused["residual", "norm", "q_proj"])
// CHECK-NEXT:    func.return %h, %y
// OFF-LABEL:   func.func @decode_step(
// OFF-NEXT:      %h, %n = graph.fusion "vector" (%x, %r, %w) attributes {graph.pattern = "layernorm"}
// OFF:           %y = graph.matmul %n, %q
func.func @decode_step(%x: tensor<1x1x256xf16>, %r: tensor<1x1x256xf16>, %w: tensor<256xf16>, %q: tensor<256x512xf16>) -> (tensor<1x1x256xf16>, tensor<1x1x512xf16>) {
  %h = graph.add %x, %r : (tensor<1x1x256xf16>, tensor<1x1x256xf16>) -> tensor<1x1x256xf16> loc("residual")
  %n = graph.rms_norm %h, %w {epsilon = 1.0e-06 : f32} : (tensor<1x1x256xf16>, tensor<256xf16>) -> tensor<1x1x256xf16> loc("norm")
  %y = graph.matmul %n, %q : (tensor<1x1x256xf16>, tensor<256x512xf16>) -> tensor<1x1x512xf16> loc("q_proj")
  func.return %h, %y : tensor<1x1x256xf16>, tensor<1x1x512xf16>
}

// -----

// SwiGLU after the post-attention norm: the gated matmul (both products, one kernel) takes the
// norm as its prologue too.
// CHECK-LABEL: func.func @swiglu(
// CHECK-NEXT:    %h, %p = graph.fusion "cube+vector" (%x, %r, %w, %wg, %wu) attributes {graph.pattern = "norm-prologue"}
// CHECK:         } loc(fused["residual", "norm", "gate_proj", "act/sigmoid", "act/mul", "up_proj", "mlp/mul"])
func.func @swiglu(%x: tensor<1x1x256xf16>, %r: tensor<1x1x256xf16>, %w: tensor<256xf16>, %wg: tensor<256x512xf16>, %wu: tensor<256x512xf16>) -> (tensor<1x1x256xf16>, tensor<1x1x512xf16>) {
  %h = graph.add %x, %r : (tensor<1x1x256xf16>, tensor<1x1x256xf16>) -> tensor<1x1x256xf16> loc("residual")
  %n = graph.rms_norm %h, %w {epsilon = 1.0e-06 : f32} : (tensor<1x1x256xf16>, tensor<256xf16>) -> tensor<1x1x256xf16> loc("norm")
  %g = graph.matmul %n, %wg : (tensor<1x1x256xf16>, tensor<256x512xf16>) -> tensor<1x1x512xf16> loc("gate_proj")
  %sg = graph.sigmoid %g : (tensor<1x1x512xf16>) -> tensor<1x1x512xf16> loc("act/sigmoid")
  %silu = graph.mul %g, %sg : (tensor<1x1x512xf16>, tensor<1x1x512xf16>) -> tensor<1x1x512xf16> loc("act/mul")
  %u = graph.matmul %n, %wu : (tensor<1x1x256xf16>, tensor<256x512xf16>) -> tensor<1x1x512xf16> loc("up_proj")
  %p = graph.mul %silu, %u : (tensor<1x1x512xf16>, tensor<1x1x512xf16>) -> tensor<1x1x512xf16> loc("mlp/mul")
  func.return %h, %p : tensor<1x1x256xf16>, tensor<1x1x512xf16>
}

// -----

// A prefill's 2048 rows: every block would normalise them all, which costs more than the launch
// it saves. The norm stays a kernel of its own.
// CHECK-LABEL: func.func @prefill(
// CHECK-NEXT:    %h, %n = graph.fusion "vector" (%x, %r, %w) attributes {graph.pattern = "layernorm"}
// CHECK:         } loc(fused["residual", "norm"])
// CHECK-NEXT:    %y = graph.matmul %n, %q
func.func @prefill(%x: tensor<1x2048x256xf16>, %r: tensor<1x2048x256xf16>, %w: tensor<256xf16>, %q: tensor<256x512xf16>) -> (tensor<1x2048x256xf16>, tensor<1x2048x512xf16>) {
  %h = graph.add %x, %r : (tensor<1x2048x256xf16>, tensor<1x2048x256xf16>) -> tensor<1x2048x256xf16> loc("residual")
  %n = graph.rms_norm %h, %w {epsilon = 1.0e-06 : f32} : (tensor<1x2048x256xf16>, tensor<256xf16>) -> tensor<1x2048x256xf16> loc("norm")
  %y = graph.matmul %n, %q : (tensor<1x2048x256xf16>, tensor<256x512xf16>) -> tensor<1x2048x512xf16> loc("q_proj")
  func.return %h, %y : tensor<1x2048x256xf16>, tensor<1x2048x512xf16>
}

// -----

// The normalised rows are also returned: the kernel would have to write them; left alone.
// CHECK-LABEL: func.func @norm_returned(
// CHECK-NEXT:    %n = graph.rms_norm %x, %w
// CHECK-NEXT:    %y = graph.matmul %n, %q
func.func @norm_returned(%x: tensor<1x1x256xf16>, %w: tensor<256xf16>, %q: tensor<256x512xf16>) -> (tensor<1x1x256xf16>, tensor<1x1x512xf16>) {
  %n = graph.rms_norm %x, %w {epsilon = 1.0e-06 : f32} : (tensor<1x1x256xf16>, tensor<256xf16>) -> tensor<1x1x256xf16> loc("norm")
  %y = graph.matmul %n, %q : (tensor<1x1x256xf16>, tensor<256x512xf16>) -> tensor<1x1x512xf16> loc("q_proj")
  func.return %n, %y : tensor<1x1x256xf16>, tensor<1x1x512xf16>
}

// -----

// The norm is the matmul's rhs, not its lhs: not a prologue.
// CHECK-LABEL: func.func @norm_is_rhs(
// CHECK-NEXT:    %n = graph.rms_norm %x, %w
// CHECK-NEXT:    %y = graph.matmul %a, %n
func.func @norm_is_rhs(%x: tensor<16x256xf16>, %w: tensor<256xf16>, %a: tensor<1x16xf16>) -> tensor<1x256xf16> {
  %n = graph.rms_norm %x, %w {epsilon = 1.0e-06 : f32} : (tensor<16x256xf16>, tensor<256xf16>) -> tensor<16x256xf16> loc("norm")
  %y = graph.matmul %a, %n : (tensor<1x16xf16>, tensor<16x256xf16>) -> tensor<1x256xf16> loc("mix")
  func.return %y : tensor<1x256xf16>
}
