// graph-fuse options: max-ops (GE's max_fusion_ops) and disable=<pattern,...>.
// RUN: geir-opt %s --split-input-file -p 'graph-recognize-layer-norm,graph-fuse{max-ops=3}' --no-debuginfo | filecheck %s --check-prefix=MAX
// RUN: geir-opt %s --split-input-file -p 'graph-fuse{disable=conv-epilogue,elementwise}' --no-debuginfo | filecheck %s --check-prefix=OFF
// RUN: geir-opt %s --split-input-file -p 'graph-fuse{disable=elementwise}' --no-debuginfo | filecheck %s --check-prefix=CONV
// RUN: geir-opt %s --split-input-file -p 'graph-recognize-layer-norm,graph-fuse{disable=layernorm}' --no-debuginfo | filecheck %s --check-prefix=LN
// RUN: geir-opt %s --split-input-file -p 'graph-fuse{disable=attention}' | filecheck %s --check-prefix=ATT
// RUN: not geir-opt %s -p 'graph-fuse{disable=epilogue}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not geir-opt %s -p 'graph-fuse{max-ops=0}' 2>&1 | filecheck %s --check-prefix=BAD-MAX

// BAD: geir-opt: error: invalid options for pass 'graph-fuse': unknown pattern(s) epilogue in disable; patterns: attention, projections, cache-write, pool-quantize, lrn-quantize, conv-epilogue, matmul-epilogue, layernorm, reduction, elementwise, data
// BAD-MAX: geir-opt: error: invalid options for pass 'graph-fuse': max-ops must be at least 1, got 0

// Seven elementwise ops with at most three per kernel: 3 + 3 + 1.
// MAX-LABEL: func.func @chain(
// MAX-NEXT:    %c = graph.fusion "vector" (%x)
// MAX-NEXT:    ^bb0
// MAX-NEXT:      graph.exp
// MAX-NEXT:      graph.tanh
// MAX-NEXT:      graph.sigmoid
// MAX-NEXT:      graph.yield
// MAX-NEXT:    }
// MAX-NEXT:    %f = graph.fusion "vector" (%c)
// MAX-NEXT:    ^bb0
// MAX-NEXT:      graph.neg
// MAX-NEXT:      graph.abs
// MAX-NEXT:      graph.sqrt
// MAX-NEXT:      graph.yield
// MAX-NEXT:    }
// MAX-NEXT:    %g = graph.exp %f
// OFF-LABEL: func.func @chain(
// OFF-NOT:     graph.fusion
// OFF:         func.return
func.func @chain(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %a = graph.exp %x : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("a")
  %b = graph.tanh %a : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("b")
  %c = graph.sigmoid %b : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("c")
  %d = graph.neg %c : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("d")
  %e = graph.abs %d : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("e")
  %f = graph.sqrt %e : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("f")
  %g = graph.exp %f : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("g")
  func.return %g : tensor<4x16xf32>
}

// -----

// MAX-LABEL: func.func @conv_relu(
// MAX:         graph.fusion "cube+vector"
// OFF-LABEL: func.func @conv_relu(
// OFF-NEXT:    graph.constant
// OFF-NEXT:    %c = graph.conv
// OFF-NEXT:    %r = graph.relu %c
// OFF-NEXT:    func.return %r
// CONV-LABEL: func.func @conv_relu(
// CONV:         %r = graph.fusion "cube+vector" (%x, %w) attributes {graph.pattern = "conv-epilogue"}
func.func @conv_relu(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = graph.constant dense<0.1> : tensor<4x4x3x3xf32> loc("w")
  %c = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> loc("conv")
  %r = graph.relu %c : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("relu")
  func.return %r : tensor<1x4x8x8xf32>
}

// -----

// disable=layernorm: no fusion anchors on the graph.layer_norm (graph-recognize-layer-norm
// made it); it stays a kernel of its own.
// LN-LABEL: func.func @layernorm(
// LN-NEXT:    %y_scale = graph.constant
// LN-NEXT:    %y = graph.layer_norm %x, %y_scale
// LN-NEXT:    func.return %y
// MAX-LABEL: func.func @layernorm(
// MAX-NEXT:    %y_scale = graph.constant dense<1.000000e+00> : tensor<32xf32>
// MAX-NEXT:    %y = graph.fusion "vector" (%x, %y_scale) attributes {graph.pattern = "layernorm"}
// MAX-NEXT:    ^bb0
// MAX-NEXT:      graph.layer_norm
// MAX-NEXT:      graph.yield
func.func @layernorm(%x: tensor<1x8x32xf32>) -> tensor<1x8x32xf32> {
  %eps = graph.constant dense<1.0e-05> : tensor<f32> loc("ln/eps")
  %mean = graph.reduce_mean %x {axes = array<i64: -1>} : (tensor<1x8x32xf32>) -> tensor<1x8x1xf32> loc("ln/mean")
  %d = graph.sub %x, %mean : (tensor<1x8x32xf32>, tensor<1x8x1xf32>) -> tensor<1x8x32xf32> loc("ln/sub")
  %sq = graph.mul %d, %d : (tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x8x32xf32> loc("ln/square")
  %var = graph.reduce_mean %sq {axes = array<i64: -1>} : (tensor<1x8x32xf32>) -> tensor<1x8x1xf32> loc("ln/var")
  %ve = graph.add %var, %eps : (tensor<1x8x1xf32>, tensor<f32>) -> tensor<1x8x1xf32> loc("ln/add_eps")
  %sd = graph.sqrt %ve : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32> loc("ln/sqrt")
  %y = graph.div %d, %sd : (tensor<1x8x32xf32>, tensor<1x8x1xf32>) -> tensor<1x8x32xf32> loc("ln/div")
  func.return %y : tensor<1x8x32xf32>
}

// -----

// disable=attention: the score matmul keeps its softmax epilogue; the second matmul is alone.
// ATT-LABEL: func.func @attention(
// ATT:         %p = graph.fusion "cube+vector" (%k, %q) attributes {graph.pattern = "matmul-epilogue"}
// ATT:         } loc(fused["k_t", "qk", "scale_mul", "softmax"])
// ATT-NEXT:    %o = graph.matmul %p, %v
// With max-ops=3 the attention chain (5 ops) cannot form; the score matmul takes 3 ops.
// MAX-LABEL: func.func @attention(
// MAX-NEXT:    %ss = graph.fusion "cube+vector" (%k, %q) attributes {graph.pattern = "matmul-epilogue"}
// MAX:         %p = graph.softmax %ss
// MAX-NEXT:    %o = graph.matmul %p, %v
func.func @attention(%q: tensor<1x4x16x8xf32>, %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> {
  %scale = graph.constant dense<0.353553385> : tensor<f32> loc("scale")
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x16x8xf32>) -> tensor<1x4x8x16xf32> loc("k_t")
  %s = graph.matmul %q, %kt : (tensor<1x4x16x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x16x16xf32> loc("qk")
  %ss = graph.mul %s, %scale : (tensor<1x4x16x16xf32>, tensor<f32>) -> tensor<1x4x16x16xf32> loc("scale_mul")
  %p = graph.softmax %ss : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("softmax")
  %o = graph.matmul %p, %v : (tensor<1x4x16x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> loc("pv")
  func.return %o : tensor<1x4x16x8xf32>
}
