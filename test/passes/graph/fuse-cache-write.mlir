// graph-fuse's `cache-write` pattern: a rotation whose only reader is a KV-cache write joins
// the write (the kv_cache template rotates the rows on their way into the cache), and so does
// a rotation by the same angles of rows of the same length (the layer's q).
// RUN: geir-opt %s --split-input-file -p graph-fuse | filecheck %s
// RUN: geir-opt %s --split-input-file -p "graph-fuse{disable=cache-write}" | filecheck %s --check-prefix=OFF

// CHECK-LABEL: func.func @rotated_k(
// CHECK-NEXT:    %kc = graph.fusion "vector" (%x, %cos, %sin, %k, %pos) attributes {graph.pattern = "cache-write"}
// CHECK:           graph.rotary_embedding
// CHECK-NEXT:      graph.kv_cache_write
// CHECK:         } loc(fused["rotary_k", "k_write"])
// CHECK-NEXT:    func.return %kc
// OFF-LABEL: func.func @rotated_k(
// OFF-NOT:       graph.fusion
// OFF:           func.return
func.func @rotated_k(%k: tensor<1x2x16x64xf16>, %x: tensor<1x2x1x64xf16>, %cos: tensor<1x1x1x64xf16>, %sin: tensor<1x1x1x64xf16>, %pos: tensor<1xi64>) -> tensor<1x2x16x64xf16> {
  %r = graph.rotary_embedding %x, %cos, %sin {interleaved = 0 : i64} : (tensor<1x2x1x64xf16>, tensor<1x1x1x64xf16>, tensor<1x1x1x64xf16>) -> tensor<1x2x1x64xf16> loc("rotary_k")
  %kc = graph.kv_cache_write %k, %r, %pos : (tensor<1x2x16x64xf16>, tensor<1x2x1x64xf16>, tensor<1xi64>) -> tensor<1x2x16x64xf16> loc("k_write")
  func.return %kc : tensor<1x2x16x64xf16>
}

// -----

// The rotated rows are also returned: the rotation stays a kernel of its own, the write too.
// CHECK-LABEL: func.func @rotated_k_returned(
// CHECK-NOT:     graph.fusion
// CHECK:         func.return %kc, %r
func.func @rotated_k_returned(%k: tensor<1x2x16x64xf16>, %x: tensor<1x2x1x64xf16>, %cos: tensor<1x1x1x64xf16>, %sin: tensor<1x1x1x64xf16>, %pos: tensor<1xi64>) -> (tensor<1x2x16x64xf16>, tensor<1x2x1x64xf16>) {
  %r = graph.rotary_embedding %x, %cos, %sin {interleaved = 0 : i64} : (tensor<1x2x1x64xf16>, tensor<1x1x1x64xf16>, tensor<1x1x1x64xf16>) -> tensor<1x2x1x64xf16> loc("rotary_k")
  %kc = graph.kv_cache_write %k, %r, %pos : (tensor<1x2x16x64xf16>, tensor<1x2x1x64xf16>, tensor<1xi64>) -> tensor<1x2x16x64xf16> loc("k_write")
  func.return %kc, %r : tensor<1x2x16x64xf16>, tensor<1x2x1x64xf16>
}

// -----

// V's write: its update is no rotation (a projection's transpose): nothing joins.
// CHECK-LABEL: func.func @value_write(
// CHECK-NOT:     graph.fusion
// CHECK:         func.return %vc
func.func @value_write(%v: tensor<1x2x16x64xf16>, %x: tensor<1x1x2x64xf16>, %pos: tensor<1xi64>) -> tensor<1x2x16x64xf16> {
  %t = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x1x2x64xf16>) -> tensor<1x2x1x64xf16> loc("v_transpose")
  %vc = graph.kv_cache_write %v, %t, %pos : (tensor<1x2x16x64xf16>, tensor<1x2x1x64xf16>, tensor<1xi64>) -> tensor<1x2x16x64xf16> loc("v_write")
  func.return %vc : tensor<1x2x16x64xf16>
}

// -----

// q's rotation by the same angles joins: one kernel rotates q to its output and K into the
// cache (CANN's ApplyRotaryPosEmb of q and k).
// CHECK-LABEL: func.func @rotated_q_and_k(
// CHECK-NEXT:    %rq, %kc = graph.fusion "vector" (%q, %cos, %sin, %x, %k, %pos) attributes {graph.pattern = "cache-write"}
// CHECK:           graph.rotary_embedding
// CHECK-NEXT:      graph.rotary_embedding
// CHECK-NEXT:      graph.kv_cache_write
// CHECK:         } loc(fused["rotary_q", "rotary_k", "k_write"])
// CHECK-NEXT:    func.return %kc, %rq
func.func @rotated_q_and_k(%k: tensor<1x2x16x64xf16>, %q: tensor<1x4x1x64xf16>, %x: tensor<1x2x1x64xf16>, %cos: tensor<1x1x1x64xf16>, %sin: tensor<1x1x1x64xf16>, %pos: tensor<1xi64>) -> (tensor<1x2x16x64xf16>, tensor<1x4x1x64xf16>) {
  %rq = graph.rotary_embedding %q, %cos, %sin {interleaved = 0 : i64} : (tensor<1x4x1x64xf16>, tensor<1x1x1x64xf16>, tensor<1x1x1x64xf16>) -> tensor<1x4x1x64xf16> loc("rotary_q")
  %r = graph.rotary_embedding %x, %cos, %sin {interleaved = 0 : i64} : (tensor<1x2x1x64xf16>, tensor<1x1x1x64xf16>, tensor<1x1x1x64xf16>) -> tensor<1x2x1x64xf16> loc("rotary_k")
  %kc = graph.kv_cache_write %k, %r, %pos : (tensor<1x2x16x64xf16>, tensor<1x2x1x64xf16>, tensor<1xi64>) -> tensor<1x2x16x64xf16> loc("k_write")
  func.return %kc, %rq : tensor<1x2x16x64xf16>, tensor<1x4x1x64xf16>
}

// -----

// Near misses: a rotation by other angles (its own sin), and one of rows of another length,
// stay kernels of their own; K's rotation still joins its write.
// CHECK-LABEL: func.func @other_rotations(
// CHECK-NEXT:    %rq = graph.rotary_embedding %q, %cos, %sin2
// CHECK-NEXT:    %rw = graph.rotary_embedding %w, %cos, %sin
// CHECK-NEXT:    %kc = graph.fusion "vector" (%x, %cos, %sin, %k, %pos) attributes {graph.pattern = "cache-write"}
// CHECK:         } loc(fused["rotary_k", "k_write"])
func.func @other_rotations(%k: tensor<1x2x16x64xf16>, %q: tensor<1x4x1x64xf16>, %w: tensor<1x4x2x64xf16>, %x: tensor<1x2x1x64xf16>, %cos: tensor<1x1x1x64xf16>, %sin: tensor<1x1x1x64xf16>, %sin2: tensor<1x1x1x64xf16>, %pos: tensor<1xi64>) -> (tensor<1x2x16x64xf16>, tensor<1x4x1x64xf16>, tensor<1x4x2x64xf16>) {
  %rq = graph.rotary_embedding %q, %cos, %sin2 {interleaved = 0 : i64} : (tensor<1x4x1x64xf16>, tensor<1x1x1x64xf16>, tensor<1x1x1x64xf16>) -> tensor<1x4x1x64xf16> loc("rotary_q")
  %rw = graph.rotary_embedding %w, %cos, %sin {interleaved = 0 : i64} : (tensor<1x4x2x64xf16>, tensor<1x1x1x64xf16>, tensor<1x1x1x64xf16>) -> tensor<1x4x2x64xf16> loc("rotary_w")
  %r = graph.rotary_embedding %x, %cos, %sin {interleaved = 0 : i64} : (tensor<1x2x1x64xf16>, tensor<1x1x1x64xf16>, tensor<1x1x1x64xf16>) -> tensor<1x2x1x64xf16> loc("rotary_k")
  %kc = graph.kv_cache_write %k, %r, %pos : (tensor<1x2x16x64xf16>, tensor<1x2x1x64xf16>, tensor<1xi64>) -> tensor<1x2x16x64xf16> loc("k_write")
  func.return %kc, %rq, %rw : tensor<1x2x16x64xf16>, tensor<1x4x1x64xf16>, tensor<1x4x2x64xf16>
}
