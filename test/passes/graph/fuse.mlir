// graph-fuse: the fusion patterns. Each function is one pattern; the fused kernel keeps every
// original node in its fused location, small constants (scalars, shapes, <= 16 elements) are
// cloned into the body and larger ones (weights) are passed in.
// RUN: geir-opt %s --split-input-file -p graph-recognize-layer-norm,graph-fuse | filecheck %s
// RUN: geir-opt %s --split-input-file -p graph-recognize-layer-norm,graph-fuse,graph-fuse | filecheck %s

// Conv + bias + BatchNorm (not folded) + residual Add + ReLU: one cube+vector kernel.
// CHECK-LABEL: func.func @conv_bn_add_relu(
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %r = graph.fusion "cube+vector" (%x, %w, %res) attributes {graph.pattern = "conv-epilogue"}
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<1x4x8x8xf32>, %[[W:.*]]: tensor<4x4x3x3xf32>, %[[RES:.*]]: tensor<1x4x8x8xf32>):
// CHECK-COUNT-5:   graph.constant {{.*}} : tensor<4xf32>
// CHECK-NEXT:      %[[C:.*]] = graph.conv %[[X]], %[[W]], %b
// CHECK-NEXT:      %[[N:.*]] = graph.batch_norm %[[C]]
// CHECK-NEXT:      %[[A:.*]] = graph.add %[[N]], %[[RES]]
// CHECK-NEXT:      %[[R:.*]] = graph.relu %[[A]]
// CHECK-NEXT:      graph.yield %[[R]] : tensor<1x4x8x8xf32>
// CHECK-NEXT:    } loc(fused["conv", "bn", "add", "relu"])
// CHECK-NEXT:    func.return %r
func.func @conv_bn_add_relu(%x: tensor<1x4x8x8xf32>, %res: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = graph.constant dense<0.1> : tensor<4x4x3x3xf32> loc("w")
  %b = graph.constant dense<0.5> : tensor<4xf32> loc("b")
  %scale = graph.constant dense<1.5> : tensor<4xf32> loc("scale")
  %shift = graph.constant dense<0.25> : tensor<4xf32> loc("shift")
  %mean = graph.constant dense<0.1> : tensor<4xf32> loc("mean")
  %var = graph.constant dense<2.0> : tensor<4xf32> loc("var")
  %c = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32> loc("conv")
  %n = graph.batch_norm %c, %scale, %shift, %mean, %var : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32> loc("bn")
  %a = graph.add %n, %res : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("add")
  %r = graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("relu")
  func.return %r : tensor<1x4x8x8xf32>
}

// -----

// Conv + ReLU6 (clip 0..6), conv + LeakyReLU, conv + swish (sigmoid, mul).
// CHECK-LABEL: func.func @conv_activations(
// CHECK:         %r6 = graph.fusion "cube+vector" (%x) attributes {graph.pattern = "conv-epilogue"}
// CHECK:           graph.clip
// CHECK:         } loc(fused["conv1", "relu6"])
// CHECK-NEXT:    %lr = graph.fusion "cube+vector" (%x) attributes {graph.pattern = "conv-epilogue"}
// CHECK:           graph.leaky_relu
// CHECK:         } loc(fused["conv2", "leaky"])
// CHECK-NEXT:    %sw = graph.fusion "cube+vector" (%x) attributes {graph.pattern = "conv-epilogue"}
// CHECK:         } loc(fused["conv3", "sigmoid", "swish"])
// CHECK-NEXT:    func.return %r6, %lr, %sw
func.func @conv_activations(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %w = graph.constant dense<0.1> : tensor<4x4x1x1xf32> loc("w")
  %lo = graph.constant dense<0.0> : tensor<f32> loc("lo")
  %hi = graph.constant dense<6.0> : tensor<f32> loc("hi")
  %c1 = graph.conv %x, %w : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32> loc("conv1")
  %r6 = graph.clip %c1, %lo, %hi : (tensor<1x4x8x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xf32> loc("relu6")
  %c2 = graph.conv %x, %w : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32> loc("conv2")
  %lr = graph.leaky_relu %c2 {alpha = 0.1 : f32} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("leaky")
  %c3 = graph.conv %x, %w : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32> loc("conv3")
  %sg = graph.sigmoid %c3 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("sigmoid")
  %sw = graph.mul %c3, %sg : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("swish")
  func.return %r6, %lr, %sw : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// -----

// Transpose feeding a MatMul, bias Add and the Erf-decomposed GELU x*0.5*(1+erf(x/sqrt2)).
// CHECK-LABEL: func.func @matmul_gelu(
// CHECK:         %y = graph.fusion "cube+vector" (%x, %w, %bias) attributes {graph.pattern = "matmul-epilogue"}
// CHECK:           %[[T:.*]] = graph.transpose
// CHECK-NEXT:      %[[M:.*]] = graph.matmul %[[T]]
// CHECK-NEXT:      %[[B:.*]] = graph.add %[[M]]
// CHECK-NEXT:      graph.div %[[B]]
// CHECK-NEXT:      graph.erf
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.mul %[[B]]
// CHECK-NEXT:      %[[Y:.*]] = graph.mul
// CHECK-NEXT:      graph.yield %[[Y]]
// CHECK-NEXT:    } loc(fused["transpose", "matmul", "bias_add", "gelu/div", "gelu/erf", "gelu/add", "gelu/mul", "gelu/mul_1"])
// CHECK-NEXT:    func.return %y
func.func @matmul_gelu(%x: tensor<64x16xf32>, %w: tensor<64x32xf32>) -> tensor<16x32xf32> {
  %bias = graph.constant dense<0.5> : tensor<32xf32> loc("bias")
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32> loc("sqrt2")
  %one = graph.constant dense<1.0> : tensor<f32> loc("one")
  %half = graph.constant dense<0.5> : tensor<f32> loc("half")
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<64x16xf32>) -> tensor<16x64xf32> loc("transpose")
  %m = graph.matmul %t, %w : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32> loc("matmul")
  %b = graph.add %m, %bias : (tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32> loc("bias_add")
  %d = graph.div %b, %sqrt2 : (tensor<16x32xf32>, tensor<f32>) -> tensor<16x32xf32> loc("gelu/div")
  %e = graph.erf %d : (tensor<16x32xf32>) -> tensor<16x32xf32> loc("gelu/erf")
  %a = graph.add %e, %one : (tensor<16x32xf32>, tensor<f32>) -> tensor<16x32xf32> loc("gelu/add")
  %p = graph.mul %b, %a : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32> loc("gelu/mul")
  %y = graph.mul %p, %half : (tensor<16x32xf32>, tensor<f32>) -> tensor<16x32xf32> loc("gelu/mul_1")
  func.return %y : tensor<16x32xf32>
}

// -----

// Gemm + ReLU, and a classifier Gemm + Softmax (its 10-element row fits L0C).
// CHECK-LABEL: func.func @gemm_relu_softmax(
// CHECK:         %r = graph.fusion "cube+vector" (%x, %w1, %b) attributes {graph.pattern = "matmul-epilogue"}
// CHECK:         } loc(fused["fc1", "relu"])
// CHECK-NEXT:    %s = graph.fusion "cube+vector" (%r, %w2) attributes {graph.pattern = "matmul-epilogue"}
// CHECK:         } loc(fused["fc2", "prob"])
func.func @gemm_relu_softmax(%x: tensor<2x64xf32>, %w1: tensor<64x64xf32>, %w2: tensor<10x64xf32>) -> tensor<2x10xf32> {
  %b = graph.constant dense<0.1> : tensor<64xf32> loc("b")
  %g1 = graph.gemm %x, %w1, %b : (tensor<2x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<2x64xf32> loc("fc1")
  %r = graph.relu %g1 : (tensor<2x64xf32>) -> tensor<2x64xf32> loc("relu")
  %g2 = graph.gemm %r, %w2 {trans_b = 1 : i64} : (tensor<2x64xf32>, tensor<10x64xf32>) -> tensor<2x10xf32> loc("fc2")
  %s = graph.softmax %g2 : (tensor<2x10xf32>) -> tensor<2x10xf32> loc("prob")
  func.return %s : tensor<2x10xf32>
}

// -----

// A decomposed LayerNorm becomes graph.layer_norm (located at all nine nodes), in one vector
// kernel with the residual Add before it.
// CHECK-LABEL: func.func @add_layernorm(
// CHECK:         %y = graph.fusion "vector" (%x, %r, %gamma, %beta) attributes {graph.pattern = "layernorm"}
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<1x8x32xf32>, %[[R:.*]]: tensor<1x8x32xf32>, %[[G:.*]]: tensor<32xf32>, %[[BETA:.*]]: tensor<32xf32>):
// CHECK-NEXT:      %[[H:.*]] = graph.add %[[X]], %[[R]] {{.*}} loc("residual")
// CHECK-NEXT:      %[[Y:.*]] = graph.layer_norm %[[H]], %[[G]], %[[BETA]] {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : {{.*}} loc(fused["ln/mean", "ln/sub", "ln/pow", "ln/var", "ln/add_eps", "ln/sqrt", "ln/div", "ln/mul", "ln/add"])
// CHECK-NEXT:      graph.yield %[[Y]]
// CHECK-NEXT:    } loc(fused["residual", "ln/mean", "ln/sub", "ln/pow", "ln/var", "ln/add_eps", "ln/sqrt", "ln/div", "ln/mul", "ln/add"])
// CHECK-NEXT:    func.return %y
func.func @add_layernorm(%x: tensor<1x8x32xf32>, %r: tensor<1x8x32xf32>) -> tensor<1x8x32xf32> {
  %two = graph.constant dense<2.0> : tensor<f32> loc("ln/two")
  %eps = graph.constant dense<1.0e-05> : tensor<f32> loc("ln/eps")
  %gamma = graph.constant dense<1.5> : tensor<32xf32> loc("ln/gamma")
  %beta = graph.constant dense<0.5> : tensor<32xf32> loc("ln/beta")
  %h = graph.add %x, %r : (tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x8x32xf32> loc("residual")
  %mean = graph.reduce_mean %h {axes = array<i64: -1>} : (tensor<1x8x32xf32>) -> tensor<1x8x1xf32> loc("ln/mean")
  %d = graph.sub %h, %mean : (tensor<1x8x32xf32>, tensor<1x8x1xf32>) -> tensor<1x8x32xf32> loc("ln/sub")
  %sq = graph.pow %d, %two : (tensor<1x8x32xf32>, tensor<f32>) -> tensor<1x8x32xf32> loc("ln/pow")
  %var = graph.reduce_mean %sq {axes = array<i64: -1>} : (tensor<1x8x32xf32>) -> tensor<1x8x1xf32> loc("ln/var")
  %ve = graph.add %var, %eps : (tensor<1x8x1xf32>, tensor<f32>) -> tensor<1x8x1xf32> loc("ln/add_eps")
  %sd = graph.sqrt %ve : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32> loc("ln/sqrt")
  %n = graph.div %d, %sd : (tensor<1x8x32xf32>, tensor<1x8x1xf32>) -> tensor<1x8x32xf32> loc("ln/div")
  %m = graph.mul %n, %gamma : (tensor<1x8x32xf32>, tensor<32xf32>) -> tensor<1x8x32xf32> loc("ln/mul")
  %y = graph.add %m, %beta : (tensor<1x8x32xf32>, tensor<32xf32>) -> tensor<1x8x32xf32> loc("ln/add")
  func.return %y : tensor<1x8x32xf32>
}

// -----

// Attention: MatMul(Q, K^T) -> scale -> mask Add -> Softmax -> MatMul(., V), with the K
// transpose as cube prologue: one cube+vector kernel.
// CHECK-LABEL: func.func @attention(
// CHECK-NEXT:    %o = graph.fusion "cube+vector" (%k, %q, %mask, %v) attributes {graph.pattern = "attention"}
// CHECK:           graph.transpose
// CHECK-NEXT:      graph.matmul
// CHECK-NEXT:      graph.mul
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.softmax
// CHECK-NEXT:      graph.matmul
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    } loc(fused["k_t", "qk", "scale_mul", "mask_add", "softmax", "pv"])
// CHECK-NEXT:    func.return %o
func.func @attention(%q: tensor<1x4x16x8xf32>, %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x16x8xf32>, %mask: tensor<1x1x16x16xf32>) -> tensor<1x4x16x8xf32> {
  %scale = graph.constant dense<0.353553385> : tensor<f32> loc("scale")
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x16x8xf32>) -> tensor<1x4x8x16xf32> loc("k_t")
  %s = graph.matmul %q, %kt : (tensor<1x4x16x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x16x16xf32> loc("qk")
  %ss = graph.mul %s, %scale : (tensor<1x4x16x16xf32>, tensor<f32>) -> tensor<1x4x16x16xf32> loc("scale_mul")
  %sm = graph.add %ss, %mask : (tensor<1x4x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<1x4x16x16xf32> loc("mask_add")
  %p = graph.softmax %sm : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("softmax")
  %o = graph.matmul %p, %v : (tensor<1x4x16x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> loc("pv")
  func.return %o : tensor<1x4x16x8xf32>
}

// -----

// A tree of elementwise and broadcast ops (exp is used twice inside): one vector kernel.
// CHECK-LABEL: func.func @elementwise_tree(
// CHECK-NEXT:    %e = graph.fusion "vector" (%x, %s) attributes {graph.pattern = "elementwise"}
// CHECK:         } loc(fused["exp", "scale", "add", "sigmoid", "sub"])
// CHECK-NEXT:    func.return %e
func.func @elementwise_tree(%x: tensor<4x16xf32>, %s: tensor<1x16xf32>) -> tensor<4x16xf32> {
  %a = graph.exp %x : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("exp")
  %b = graph.mul %x, %s : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32> loc("scale")
  %c = graph.add %a, %b : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> loc("add")
  %d = graph.sigmoid %c : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("sigmoid")
  %e = graph.sub %d, %a : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> loc("sub")
  func.return %e : tensor<4x16xf32>
}

// -----

// A reduction with its elementwise producer and consumers (one 64-element row).
// CHECK-LABEL: func.func @reduction(
// CHECK-NEXT:    %y = graph.fusion "vector" (%x) attributes {graph.pattern = "reduction"}
// CHECK:         } loc(fused["exp", "sum", "div", "mul"])
// CHECK-NEXT:    func.return %y
func.func @reduction(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %two = graph.constant dense<2.0> : tensor<f32> loc("two")
  %e = graph.exp %x : (tensor<4x64xf32>) -> tensor<4x64xf32> loc("exp")
  %s = graph.reduce_sum %e {axes = array<i64: 1>} : (tensor<4x64xf32>) -> tensor<4x1xf32> loc("sum")
  %d = graph.div %e, %s : (tensor<4x64xf32>, tensor<4x1xf32>) -> tensor<4x64xf32> loc("div")
  %y = graph.mul %d, %two : (tensor<4x64xf32>, tensor<f32>) -> tensor<4x64xf32> loc("mul")
  func.return %y : tensor<4x64xf32>
}

// -----

// A channel shuffle (reshape, transpose, reshape) between two pools: one data kernel.
// CHECK-LABEL: func.func @channel_shuffle(
// CHECK-NEXT:    %p = graph.max_pool %x
// CHECK-NEXT:    %r2 = graph.fusion "data" (%p) attributes {graph.pattern = "data"}
// CHECK:         } loc(fused["shuffle/reshape", "shuffle/transpose", "shuffle/reshape_1"])
// CHECK-NEXT:    %q = graph.max_pool %r2
func.func @channel_shuffle(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x2x2xf32> {
  %s1 = graph.constant dense<[1, 2, 4, 4, 4]> : tensor<5xi64> loc("s1")
  %s2 = graph.constant dense<[1, 8, 4, 4]> : tensor<4xi64> loc("s2")
  %p = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> loc("pool1")
  %r1 = graph.reshape %p, %s1 : (tensor<1x8x4x4xf32>, tensor<5xi64>) -> tensor<1x2x4x4x4xf32> loc("shuffle/reshape")
  %t = graph.transpose %r1 {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x4x4x4xf32>) -> tensor<1x4x2x4x4xf32> loc("shuffle/transpose")
  %r2 = graph.reshape %t, %s2 : (tensor<1x4x2x4x4xf32>, tensor<4xi64>) -> tensor<1x8x4x4xf32> loc("shuffle/reshape_1")
  %q = graph.max_pool %r2 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x4x4xf32>) -> tensor<1x8x2x2xf32> loc("pool2")
  func.return %q : tensor<1x8x2x2xf32>
}

// -----

// A channel Concat of whole 16-channel blocks feeding a conv is addressing in the conv's
// input load: one cube kernel. A Concat of 3 channels is not.
// CHECK-LABEL: func.func @concat_conv(
// CHECK:         %y = graph.fusion "cube" (%a, %b, %w) attributes {graph.pattern = "conv-epilogue"}
// CHECK:         } loc(fused["concat", "conv"])
// CHECK-NEXT:    %cat2 = graph.concat %a, %c
// CHECK-NEXT:    %y2 = graph.conv %cat2, %w2
func.func @concat_conv(%a: tensor<1x16x4x4xf32>, %b: tensor<1x32x4x4xf32>, %c: tensor<1x3x4x4xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) {
  %w = graph.constant dense<0.1> : tensor<8x48x1x1xf32> loc("w")
  %w2 = graph.constant dense<0.1> : tensor<8x19x1x1xf32> loc("w2")
  %cat = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<1x32x4x4xf32>) -> tensor<1x48x4x4xf32> loc("concat")
  %y = graph.conv %cat, %w : (tensor<1x48x4x4xf32>, tensor<8x48x1x1xf32>) -> tensor<1x8x4x4xf32> loc("conv")
  %cat2 = graph.concat %a, %c {axis = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x19x4x4xf32> loc("concat_unaligned")
  %y2 = graph.conv %cat2, %w2 : (tensor<1x19x4x4xf32>, tensor<8x19x1x1xf32>) -> tensor<1x8x4x4xf32> loc("conv2")
  func.return %y, %y2 : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>
}

// -----

// The same for int8: a channel Concat of int8 maps (whole blocks) is the int8 conv's input
// load (its segments); the unaligned one stays a kernel of its own.
// CHECK-LABEL: func.func @concat_conv_int8(
// CHECK:         %y = graph.fusion "cube" (%a, %b, %w) attributes {graph.pattern = "conv-epilogue"}
// CHECK:         } loc(fused["concat", "conv"])
// CHECK-NEXT:    %cat2 = graph.concat %a, %c
// CHECK-NEXT:    %y2 = graph.conv %cat2, %w2
func.func @concat_conv_int8(%a: tensor<1x16x4x4xi8>, %b: tensor<1x32x4x4xi8>, %c: tensor<1x3x4x4xi8>) -> (tensor<1x8x4x4xi32>, tensor<1x8x4x4xi32>) {
  %w = graph.constant dense<1> : tensor<8x48x1x1xi8> loc("w")
  %w2 = graph.constant dense<1> : tensor<8x19x1x1xi8> loc("w2")
  %cat = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x16x4x4xi8>, tensor<1x32x4x4xi8>) -> tensor<1x48x4x4xi8> loc("concat")
  %y = graph.conv %cat, %w : (tensor<1x48x4x4xi8>, tensor<8x48x1x1xi8>) -> tensor<1x8x4x4xi32> loc("conv")
  %cat2 = graph.concat %a, %c {axis = 1 : i64} : (tensor<1x16x4x4xi8>, tensor<1x3x4x4xi8>) -> tensor<1x19x4x4xi8> loc("concat_unaligned")
  %y2 = graph.conv %cat2, %w2 : (tensor<1x19x4x4xi8>, tensor<8x19x1x1xi8>) -> tensor<1x8x4x4xi32> loc("conv2")
  func.return %y, %y2 : tensor<1x8x4x4xi32>, tensor<1x8x4x4xi32>
}

// -----

// Attention with the scale as a Div after the mask Add, and views between the ops.
// CHECK-LABEL: func.func @attention_div(
// CHECK-NEXT:    %o = graph.fusion "cube+vector" (%q, %k, %mask, %v) attributes {graph.pattern = "attention"}
// CHECK:         } loc(fused["qk", "flat", "mask_add", "scale_div", "unflat", "softmax", "pv"])
// CHECK-NEXT:    func.return %o
func.func @attention_div(%q: tensor<4x16x8xf32>, %k: tensor<4x8x16xf32>, %v: tensor<4x16x8xf32>, %mask: tensor<1x16xf32>) -> tensor<4x16x8xf32> {
  %d = graph.constant dense<2.82842708> : tensor<1xf32> loc("sqrt_d")
  %s1 = graph.constant dense<[64, 16]> : tensor<2xi64> loc("s1")
  %s2 = graph.constant dense<[4, 16, 16]> : tensor<3xi64> loc("s2")
  %s = graph.matmul %q, %k : (tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<4x16x16xf32> loc("qk")
  %f = graph.reshape %s, %s1 : (tensor<4x16x16xf32>, tensor<2xi64>) -> tensor<64x16xf32> loc("flat")
  %m = graph.add %f, %mask : (tensor<64x16xf32>, tensor<1x16xf32>) -> tensor<64x16xf32> loc("mask_add")
  %sc = graph.div %m, %d : (tensor<64x16xf32>, tensor<1xf32>) -> tensor<64x16xf32> loc("scale_div")
  %u = graph.reshape %sc, %s2 : (tensor<64x16xf32>, tensor<3xi64>) -> tensor<4x16x16xf32> loc("unflat")
  %p = graph.softmax %u : (tensor<4x16x16xf32>) -> tensor<4x16x16xf32> loc("softmax")
  %o = graph.matmul %p, %v : (tensor<4x16x16xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32> loc("pv")
  func.return %o : tensor<4x16x8xf32>
}

// -----

// A residual block's projection shortcut in int8: two int8 convs whose dequantized products
// are added. Each conv's dequantize (and its float cast) is its own kernel's epilogue (the
// FIX pipe's), never the other group's side input: the conv left alone writes f16, not its
// int32 accumulator. An int32 graph input dequantized beside a conv stays a side input.
// CHECK-LABEL: func.func @int8_projection(
// CHECK:         %[[M:.*]] = graph.fusion "cube+vector" (%x, %w2) attributes {graph.pattern = "conv-epilogue"}
// CHECK:           graph.conv
// CHECK-NEXT:      graph.dequantize
// CHECK-NEXT:      graph.cast
// CHECK-NEXT:      graph.yield {{.*}} : tensor<1x16x8x8xf16>
// CHECK-NEXT:    } loc(fused["main", "main_dq", "main_f16"])
// CHECK-NEXT:    %q = graph.fusion "cube+vector" (%x, %w1, %[[M]]) attributes {graph.pattern = "conv-epilogue"}
// CHECK-SAME:        tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xi8>
// CHECK:         } loc(fused["short", "short_dq", "short_f16", "add", "relu", "relu_f32", "q"])
// CHECK-NEXT:    %sum2 = graph.fusion "cube+vector" (%x, %w2, %acc) attributes {graph.pattern = "conv-epilogue"}
// CHECK:         } loc(fused["conv_in", "conv_in_dq", "in_dq", "in_add"])
func.func @int8_projection(%x: tensor<1x16x8x8xi8>, %acc: tensor<1x16x8x8xi32>) -> (tensor<1x16x8x8xi8>, tensor<1x16x8x8xf32>) {
  %w1 = graph.constant dense<1> : tensor<16x16x1x1xi8> loc("w1")
  %w2 = graph.constant dense<2> : tensor<16x16x1x1xi8> loc("w2")
  %s = graph.constant dense<0.125> : tensor<f32> loc("s")
  %zp = graph.constant dense<0> : tensor<i8> loc("zp")
  %c1 = graph.conv %x, %w1 : (tensor<1x16x8x8xi8>, tensor<16x16x1x1xi8>) -> tensor<1x16x8x8xi32> loc("short")
  %d1 = graph.dequantize %c1, %s : (tensor<1x16x8x8xi32>, tensor<f32>) -> tensor<1x16x8x8xf32> loc("short_dq")
  %h1 = graph.cast %d1 {to = f16} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf16> loc("short_f16")
  %c2 = graph.conv %x, %w2 : (tensor<1x16x8x8xi8>, tensor<16x16x1x1xi8>) -> tensor<1x16x8x8xi32> loc("main")
  %d2 = graph.dequantize %c2, %s : (tensor<1x16x8x8xi32>, tensor<f32>) -> tensor<1x16x8x8xf32> loc("main_dq")
  %h2 = graph.cast %d2 {to = f16} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf16> loc("main_f16")
  %sum = graph.add %h2, %h1 : (tensor<1x16x8x8xf16>, tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf16> loc("add")
  %r = graph.relu %sum : (tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf16> loc("relu")
  %r32 = graph.cast %r {to = f32} : (tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf32> loc("relu_f32")
  %q = graph.quantize %r32, %s, %zp : (tensor<1x16x8x8xf32>, tensor<f32>, tensor<i8>) -> tensor<1x16x8x8xi8> loc("q")
  %c3 = graph.conv %x, %w2 : (tensor<1x16x8x8xi8>, tensor<16x16x1x1xi8>) -> tensor<1x16x8x8xi32> loc("conv_in")
  %d3 = graph.dequantize %c3, %s : (tensor<1x16x8x8xi32>, tensor<f32>) -> tensor<1x16x8x8xf32> loc("conv_in_dq")
  %d4 = graph.dequantize %acc, %s : (tensor<1x16x8x8xi32>, tensor<f32>) -> tensor<1x16x8x8xf32> loc("in_dq")
  %sum2 = graph.add %d3, %d4 : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> loc("in_add")
  func.return %q, %sum2 : tensor<1x16x8x8xi8>, tensor<1x16x8x8xf32>
}

// -----

// A pool a quantize reads (through a float cast) by one scale and zero point: one
// "pool-quantize" kernel (the pool template quantizes its result tile). Where the pooled map
// has another reader too (%kept, returned in float) the fusion yields both. Not where the
// scale is per channel, nor where the float cast itself has another reader.
// CHECK-LABEL: func.func @pool_quantize(
// CHECK:         %q = graph.fusion "vector" (%x) attributes {graph.pattern = "pool-quantize"}
// CHECK:           graph.max_pool
// CHECK-NEXT:      graph.cast
// CHECK-NEXT:      graph.quantize
// CHECK:         } loc(fused["pool", "pool_f32", "q"])
// CHECK-NEXT:    %kept, %kq = graph.fusion "vector" (%x) attributes {graph.pattern = "pool-quantize"}
// CHECK:           graph.avg_pool
// CHECK-NEXT:      graph.cast
// CHECK-NEXT:      graph.quantize
// CHECK-NEXT:      graph.yield %{{.*}}, %{{.*}} : tensor<1x16x4x4xf16>, tensor<1x16x4x4xi8>
// CHECK:         } loc(fused["kept", "kept_f32", "kq"])
// CHECK-NEXT:    %pc = graph.max_pool %x
// CHECK-NOT:     "pool-quantize"
// CHECK:         %wide = graph.max_pool %x
// CHECK-NOT:     "pool-quantize"
// CHECK:         func.return
func.func @pool_quantize(%x: tensor<1x16x8x8xf16>) -> (tensor<1x16x4x4xi8>, tensor<1x16x4x4xi8>, tensor<1x16x4x4xf16>, tensor<1x16x4x4xi8>, tensor<1x16x4x4xf32>, tensor<1x16x4x4xi8>) {
  %s = graph.constant dense<0.125> : tensor<f32> loc("s")
  %sc = graph.constant dense<0.125> : tensor<1x16x1x1xf32> loc("sc")
  %zp = graph.constant dense<-128> : tensor<i8> loc("zp")
  %p = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf16>) -> tensor<1x16x4x4xf16> loc("pool")
  %p32 = graph.cast %p {to = f32} : (tensor<1x16x4x4xf16>) -> tensor<1x16x4x4xf32> loc("pool_f32")
  %q = graph.quantize %p32, %s, %zp : (tensor<1x16x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x16x4x4xi8> loc("q")
  %kept = graph.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf16>) -> tensor<1x16x4x4xf16> loc("kept")
  %k32 = graph.cast %kept {to = f32} : (tensor<1x16x4x4xf16>) -> tensor<1x16x4x4xf32> loc("kept_f32")
  %kq = graph.quantize %k32, %s, %zp : (tensor<1x16x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x16x4x4xi8> loc("kq")
  %pc = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf16>) -> tensor<1x16x4x4xf16> loc("pc")
  %pc32 = graph.cast %pc {to = f32} : (tensor<1x16x4x4xf16>) -> tensor<1x16x4x4xf32> loc("pc_f32")
  %pcq = graph.quantize %pc32, %sc, %zp : (tensor<1x16x4x4xf32>, tensor<1x16x1x1xf32>, tensor<i8>) -> tensor<1x16x4x4xi8> loc("pcq")
  %wide = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf16>) -> tensor<1x16x4x4xf16> loc("wide")
  %w32 = graph.cast %wide {to = f32} : (tensor<1x16x4x4xf16>) -> tensor<1x16x4x4xf32> loc("wide_f32")
  %wq = graph.quantize %w32, %s, %zp : (tensor<1x16x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x16x4x4xi8> loc("wq")
  func.return %q, %kq, %kept, %pcq, %w32, %wq : tensor<1x16x4x4xi8>, tensor<1x16x4x4xi8>, tensor<1x16x4x4xf16>, tensor<1x16x4x4xi8>, tensor<1x16x4x4xf32>, tensor<1x16x4x4xi8>
}

// -----

// A global pool flattened for the classifier: the reshape between the cast and the quantize
// keeps the plain result's bytes in their order, so it joins the pool-quantize kernel too.
// CHECK-LABEL: func.func @pool_reshape_quantize(
// CHECK:         %q = graph.fusion "vector" (%x) attributes {graph.pattern = "pool-quantize"}
// CHECK:           graph.avg_pool
// CHECK-NEXT:      graph.cast
// CHECK-NEXT:      graph.reshape
// CHECK-NEXT:      graph.quantize
// CHECK:         } loc(fused["gap", "gap_f32", "flat", "q"])
// CHECK-NEXT:    func.return %q
func.func @pool_reshape_quantize(%x: tensor<1x64x7x7xf16>) -> tensor<1x64xi8> {
  %s = graph.constant dense<0.125> : tensor<f32> loc("s")
  %zp = graph.constant dense<-128> : tensor<i8> loc("zp")
  %shape = graph.constant dense<[1, 64]> : tensor<2xi64> loc("shape")
  %p = graph.avg_pool %x {kernel_shape = array<i64: 7, 7>} : (tensor<1x64x7x7xf16>) -> tensor<1x64x1x1xf16> loc("gap")
  %p32 = graph.cast %p {to = f32} : (tensor<1x64x1x1xf16>) -> tensor<1x64x1x1xf32> loc("gap_f32")
  %r = graph.reshape %p32, %shape : (tensor<1x64x1x1xf32>, tensor<2xi64>) -> tensor<1x64xf32> loc("flat")
  %q = graph.quantize %r, %s, %zp : (tensor<1x64xf32>, tensor<f32>, tensor<i8>) -> tensor<1x64xi8> loc("q")
  func.return %q : tensor<1x64xi8>
}

// -----

// An LRN a quantize reads (through a float cast) by one scale and zero point: one
// "lrn-quantize" kernel (the LRN template quantizes its result tile). Not where the scale is
// per channel.
// CHECK-LABEL: func.func @lrn_quantize(
// CHECK:         %q = graph.fusion "vector" (%x) attributes {graph.pattern = "lrn-quantize"}
// CHECK:           graph.lrn
// CHECK-NEXT:      graph.cast
// CHECK-NEXT:      graph.quantize
// CHECK:         } loc(fused["lrn", "lrn_f32", "q"])
// CHECK-NEXT:    %pc = graph.lrn %x
// CHECK-NOT:     "lrn-quantize"
// CHECK:         func.return
func.func @lrn_quantize(%x: tensor<1x16x8x8xf16>) -> (tensor<1x16x8x8xi8>, tensor<1x16x8x8xi8>) {
  %s = graph.constant dense<0.125> : tensor<f32> loc("s")
  %sc = graph.constant dense<0.125> : tensor<1x16x1x1xf32> loc("sc")
  %zp = graph.constant dense<-128> : tensor<i8> loc("zp")
  %l = graph.lrn %x {size = 5 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf16> loc("lrn")
  %l32 = graph.cast %l {to = f32} : (tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf32> loc("lrn_f32")
  %q = graph.quantize %l32, %s, %zp : (tensor<1x16x8x8xf32>, tensor<f32>, tensor<i8>) -> tensor<1x16x8x8xi8> loc("q")
  %pc = graph.lrn %x {size = 5 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf16> loc("pc")
  %pc32 = graph.cast %pc {to = f32} : (tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf32> loc("pc_f32")
  %pcq = graph.quantize %pc32, %sc, %zp : (tensor<1x16x8x8xf32>, tensor<1x16x1x1xf32>, tensor<i8>) -> tensor<1x16x8x8xi8> loc("pcq")
  func.return %q, %pcq : tensor<1x16x8x8xi8>, tensor<1x16x8x8xi8>
}
