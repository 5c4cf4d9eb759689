// graph-canonicalize: algebraic simplification (the rule table is in passes/graph/canonicalize.py).
// RUN: geir-opt %s --split-input-file -p graph-canonicalize | filecheck %s --check-prefixes=CHECK,SAFE
// RUN: geir-opt %s --split-input-file -p graph-canonicalize,graph-canonicalize | filecheck %s --check-prefixes=CHECK,SAFE
// RUN: geir-opt %s --split-input-file -p 'graph-canonicalize{fast-math=true}' | filecheck %s --check-prefixes=CHECK,FAST
// RUN: geir-opt %s --split-input-file -p 'graph-canonicalize{fast-math=true},graph-canonicalize{fast-math=true}' | filecheck %s --check-prefixes=CHECK,FAST

// Ops that return their operand: identity, dropout, cast/reshape/expand to the
// same type, concat of one input, the identity transpose, a whole-tensor slice.
// CHECK-LABEL: func.func @no_ops(
// CHECK-NEXT:    %r = graph.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("relu")
// CHECK-NEXT:    func.return %r
func.func @no_ops(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = graph.identity %x : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("identity")
  %b = graph.dropout %a : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("dropout")
  %c = graph.cast %b {to = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("cast")
  %s = graph.constant dense<[2, 3]> : tensor<2xi64> loc("s")
  %d = graph.reshape %c, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32> loc("reshape")
  %e = graph.expand %d, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32> loc("expand")
  %f = graph.concat %e {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("concat")
  %g = graph.transpose %f {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("transpose")
  %st = graph.constant dense<[0, 0]> : tensor<2xi64> loc("st")
  %en = graph.constant dense<[9223372036854775807, 3]> : tensor<2xi64> loc("en")
  %h = graph.slice %g, %st, %en : (tensor<2x3xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x3xf32> loc("slice")
  %r = graph.relu %h : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("relu")
  func.return %r : tensor<2x3xf32>
}

// -----

// Left alone: a no-op whose result is a graph output (it would alias the
// input), a cast that changes the type, a slice that reverses (same shape,
// other data), a transpose of a square matrix (same type, not the identity).
// CHECK-LABEL: func.func @no_ops_kept(
// CHECK-NEXT:    %a = graph.identity %x
// CHECK-NEXT:    %b = graph.cast %x {to = f16}
// CHECK:         %c = graph.slice %x
// CHECK-NEXT:    %d = graph.transpose %x {perm = array<i64: 1, 0>}
// CHECK-NEXT:    func.return %a, %b, %c, %d
func.func @no_ops_kept(%x: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3x3xf16>, tensor<3x3xf32>, tensor<3x3xf32>) {
  %a = graph.identity %x : (tensor<3x3xf32>) -> tensor<3x3xf32> loc("identity")
  %b = graph.cast %x {to = f16} : (tensor<3x3xf32>) -> tensor<3x3xf16> loc("cast")
  %st = graph.constant dense<[-1]> : tensor<1xi64> loc("st")
  %en = graph.constant dense<[-9223372036854775807]> : tensor<1xi64> loc("en")
  %ax = graph.constant dense<[0]> : tensor<1xi64> loc("ax")
  %sp = graph.constant dense<[-1]> : tensor<1xi64> loc("sp")
  %c = graph.slice %x, %st, %en, %ax, %sp : (tensor<3x3xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3x3xf32> loc("reverse")
  %d = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x3xf32>) -> tensor<3x3xf32> loc("transpose")
  func.return %a, %b, %c, %d : tensor<3x3xf32>, tensor<3x3xf16>, tensor<3x3xf32>, tensor<3x3xf32>
}

// -----

// x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1, x ** 1 (constants exactly 0 / 1
// everywhere, broadcasting leaves the type unchanged).
// CHECK-LABEL: func.func @neutral(
// CHECK-NEXT:    %r = graph.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("relu")
// CHECK-NEXT:    func.return %r
func.func @neutral(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %zero = graph.constant dense<0.0> : tensor<3xf32> loc("zero")
  %nzero = graph.constant dense<-0.0> : tensor<1x3xf32> loc("nzero")
  %one = graph.constant dense<1.0> : tensor<1xf32> loc("one")
  %a = graph.add %x, %zero : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("add")
  %b = graph.add %nzero, %a : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("add_l")
  %c = graph.sub %b, %zero : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("sub")
  %d = graph.mul %c, %one : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32> loc("mul")
  %e = graph.mul %one, %d : (tensor<1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("mul_l")
  %f = graph.div %e, %one : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32> loc("div")
  %g = graph.pow %f, %one : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32> loc("pow")
  %r = graph.relu %g : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("relu")
  func.return %r : tensor<2x3xf32>
}

// -----

// Left alone: a constant that is not 0 everywhere, 1 * x that broadcasts x to
// a bigger shape, 0 - x (not x - 0), and x + 0 whose result is a graph output.
// CHECK-LABEL: func.func @neutral_kept(
// CHECK:         %a = graph.add %x, %c
// CHECK-NEXT:    %b = graph.mul %ones, %a : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %d = graph.sub %zero, %b
// CHECK-NEXT:    %e = graph.add %d, %zero
// CHECK-NEXT:    func.return %e
func.func @neutral_kept(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %c = graph.constant dense<[0.0, 0.0, 1.0]> : tensor<3xf32> loc("c")
  %ones = graph.constant dense<1.0> : tensor<2x3xf32> loc("ones")
  %zero = graph.constant dense<0.0> : tensor<1xf32> loc("zero")
  %a = graph.add %x, %c : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("add")
  %b = graph.mul %ones, %a : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("broadcast")
  %d = graph.sub %zero, %b : (tensor<1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("zero_minus")
  %e = graph.add %d, %zero : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32> loc("output")
  func.return %e : tensor<2x3xf32>
}

// -----

// Transposes compose (the composed op carries both names); a pair that
// cancels disappears.
// CHECK-LABEL: func.func @transposes(
// CHECK-NEXT:    %b = graph.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32> loc(fused["t1", "t2"])
// CHECK-NEXT:    %d = graph.relu %x
// CHECK-NEXT:    func.return %b, %d
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<4x3x2xf32>, tensor<2x3x4xf32>) {
  %a = graph.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32> loc("t1")
  %b = graph.transpose %a {perm = array<i64: 1, 0, 2>} : (tensor<3x4x2xf32>) -> tensor<4x3x2xf32> loc("t2")
  %c = graph.transpose %a {perm = array<i64: 2, 0, 1>} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32> loc("t3")
  %d = graph.relu %c : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32> loc("relu")
  func.return %b, %d : tensor<4x3x2xf32>, tensor<2x3x4xf32>
}

// -----

// Reshape-like chains become one reshape to the static result shape; an
// unsqueeze / squeeze pair that restores the shape disappears.
// CHECK-LABEL: func.func @reshapes(
// CHECK-NEXT:    %b_shape = graph.constant dense<[6, 4]> : tensor<2xi64> loc(fused["flatten", "reshape"])
// CHECK-NEXT:    %b = graph.reshape %x, %b_shape {allowzero = 0 : i64} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32> loc(fused["flatten", "reshape"])
// CHECK-NEXT:    %d = graph.relu %x
// CHECK-NEXT:    func.return %b, %d
func.func @reshapes(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<2x3x4xf32>) {
  %a = graph.flatten %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32> loc("flatten")
  %s = graph.constant dense<[6, -1]> : tensor<2xi64> loc("s")
  %b = graph.reshape %a, %s : (tensor<2x12xf32>, tensor<2xi64>) -> tensor<6x4xf32> loc("reshape")
  %u = graph.unsqueeze %x {axes = array<i64: 0, 3>} : (tensor<2x3x4xf32>) -> tensor<1x2x3x1x4xf32> loc("unsqueeze")
  %c = graph.squeeze %u {axes = array<i64: 0, 3>} : (tensor<1x2x3x1x4xf32>) -> tensor<2x3x4xf32> loc("squeeze")
  %d = graph.relu %c : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32> loc("relu")
  func.return %b, %d : tensor<6x4xf32>, tensor<2x3x4xf32>
}

// -----

// neg(neg(x)) always; log(exp(x)) only with fast-math (exp overflows).
// x ** 2 becomes x * x.
// CHECK-LABEL: func.func @inverses(
// SAFE-NEXT:     %e = graph.exp %x
// SAFE-NEXT:     %l = graph.log %e
// SAFE-NEXT:     %p = graph.mul %l, %l : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("pow")
// FAST-NEXT:     %p = graph.mul %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("pow")
// CHECK-NEXT:    %r = graph.relu %x
// CHECK-NEXT:    func.return %p, %r
func.func @inverses(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = graph.exp %x : (tensor<4xf32>) -> tensor<4xf32> loc("exp")
  %l = graph.log %e : (tensor<4xf32>) -> tensor<4xf32> loc("log")
  %two = graph.constant dense<2.0> : tensor<f32> loc("two")
  %p = graph.pow %l, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32> loc("pow")
  %n1 = graph.neg %x : (tensor<4xf32>) -> tensor<4xf32> loc("neg1")
  %n2 = graph.neg %n1 : (tensor<4xf32>) -> tensor<4xf32> loc("neg2")
  %r = graph.relu %n2 : (tensor<4xf32>) -> tensor<4xf32> loc("relu")
  func.return %p, %r : tensor<4xf32>, tensor<4xf32>
}

// -----

// x * 0, x - x, x / x: floats only with fast-math (NaN and Inf change);
// integers always, except x / x (0 / 0).
// CHECK-LABEL: func.func @absorbing(
// SAFE-NEXT:     %zero = graph.constant
// SAFE-NEXT:     %a = graph.mul %x, %zero
// SAFE-NEXT:     %b = graph.sub %x, %x
// SAFE-NEXT:     %c = graph.div %x, %x
// FAST-NEXT:     %a = graph.constant dense<0.000000e+00> : tensor<2x4xf32> loc("mul")
// FAST-NEXT:     %b = graph.constant dense<0.000000e+00> : tensor<4xf32> loc("sub")
// FAST-NEXT:     %c = graph.constant dense<1.000000e+00> : tensor<4xf32> loc("div")
// CHECK-NEXT:    %d = graph.constant dense<0> : tensor<4xi64> loc("imul")
// CHECK-NEXT:    %e = graph.constant dense<0> : tensor<4xi64> loc("isub")
// CHECK-NEXT:    %f = graph.div %i, %i
// CHECK-NEXT:    func.return %a, %b, %c, %d, %e, %f
func.func @absorbing(%x: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) {
  %zero = graph.constant dense<0.0> : tensor<2x1xf32> loc("zero")
  %izero = graph.constant dense<0> : tensor<1xi64> loc("izero")
  %a = graph.mul %x, %zero : (tensor<4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32> loc("mul")
  %b = graph.sub %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("sub")
  %c = graph.div %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("div")
  %d = graph.mul %izero, %i : (tensor<1xi64>, tensor<4xi64>) -> tensor<4xi64> loc("imul")
  %e = graph.sub %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64> loc("isub")
  %f = graph.div %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64> loc("idiv")
  func.return %a, %b, %c, %d, %e, %f : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>
}

// -----

// gather of consecutive constant indices is a slice; a 0-D index also squeezes.
// Non-consecutive indices stay a gather.
// CHECK-LABEL: func.func @gathers(
// CHECK:         %a_starts = graph.constant dense<1> : tensor<1xi64> loc("run")
// CHECK-NEXT:    %a_ends = graph.constant dense<3> : tensor<1xi64> loc("run")
// CHECK-NEXT:    %a_axes = graph.constant dense<0> : tensor<1xi64> loc("run")
// CHECK-NEXT:    %a = graph.slice %x, %a_starts, %a_ends, %a_axes : {{.*}} -> tensor<2x4xf32> loc("run")
// CHECK-NEXT:    %b_starts = graph.constant dense<0> : tensor<1xi64> loc("one")
// CHECK-NEXT:    %b_ends = graph.constant dense<1> : tensor<1xi64> loc("one")
// CHECK-NEXT:    %b_axes = graph.constant dense<0> : tensor<1xi64> loc("one")
// CHECK-NEXT:    %b_slice = graph.slice %x, %b_starts, %b_ends, %b_axes : {{.*}} -> tensor<1x4xf32> loc("one")
// CHECK-NEXT:    %b = graph.squeeze %b_slice {axes = array<i64: 0>} : (tensor<1x4xf32>) -> tensor<4xf32> loc("one")
// CHECK-NEXT:    %c = graph.gather %x, %gaps {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<2x4xf32> loc("gaps")
// CHECK-NEXT:    func.return %a, %b, %c
func.func @gathers(%x: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>) {
  %run = graph.constant dense<[1, 2]> : tensor<2xi64> loc("run_idx")
  %one = graph.constant dense<-3> : tensor<i64> loc("one_idx")
  %gaps = graph.constant dense<[0, 2]> : tensor<2xi64> loc("gaps_idx")
  %a = graph.gather %x, %run {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<2x4xf32> loc("run")
  %b = graph.gather %x, %one {axis = 0 : i64} : (tensor<3x4xf32>, tensor<i64>) -> tensor<4xf32> loc("one")
  %c = graph.gather %x, %gaps {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<2x4xf32> loc("gaps")
  func.return %a, %b, %c : tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>
}

// -----

// Core ATen's nn.Linear on a 3-D input (view, mm, view, the bias between): the matmul of the
// unflattened input, the bias added before the view back, the views composed away. A
// reshape that changes the last dim is not a flattening of rows and stays.
// CHECK-LABEL: func.func @linear_views(
// CHECK:         %mm = graph.matmul %x, %w : (tensor<2x8x64xf32>, tensor<64x32xf32>) -> tensor<2x8x32xf32> loc(fused["mm", "view"])
// CHECK-NEXT:    %b = graph.add %mm, %bias : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32> loc("addmm")
// CHECK:         %y = graph.reshape %b, %{{.*}} : (tensor<2x8x32xf32>, tensor<3xi64>) -> tensor<2x8x32xf32>
// CHECK-NEXT:    %r = graph.reshape %x, %sr : (tensor<2x8x64xf32>, tensor<2xi64>) -> tensor<32x32xf32> loc("regroup")
// CHECK-NEXT:    %m2 = graph.matmul %r, %w2 : (tensor<32x32xf32>, tensor<32x16xf32>) -> tensor<32x16xf32> loc("mm_2")
func.func @linear_views(%x: tensor<2x8x64xf32>, %w: tensor<64x32xf32>, %bias: tensor<32xf32>, %w2: tensor<32x16xf32>) -> (tensor<2x8x32xf32>, tensor<32x16xf32>) {
  %s2 = graph.constant dense<[16, 64]> : tensor<2xi64> loc("s2")
  %s3 = graph.constant dense<[2, 8, 32]> : tensor<3xi64> loc("s3")
  %sr = graph.constant dense<[32, 32]> : tensor<2xi64> loc("sr")
  %v = graph.reshape %x, %s2 : (tensor<2x8x64xf32>, tensor<2xi64>) -> tensor<16x64xf32> loc("view")
  %mm = graph.matmul %v, %w : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32> loc("mm")
  %b = graph.add %mm, %bias : (tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32> loc("addmm")
  %y = graph.reshape %b, %s3 : (tensor<16x32xf32>, tensor<3xi64>) -> tensor<2x8x32xf32> loc("view_1")
  %r = graph.reshape %x, %sr : (tensor<2x8x64xf32>, tensor<2xi64>) -> tensor<32x32xf32> loc("regroup")
  %m2 = graph.matmul %r, %w2 : (tensor<32x32xf32>, tensor<32x16xf32>) -> tensor<32x16xf32> loc("mm_2")
  func.return %y, %m2 : tensor<2x8x32xf32>, tensor<32x16xf32>
}

// -----

// Core ATen's 4-D matmul (expand, view, bmm, view): the batched matmul of the 4-D operands; a
// right operand whose batch dims are split otherwise (GQA's repeated heads, [2, 2, 2] for
// [2, 4]) is reshaped to the left's. A row op on a reshape of something other than a matmul,
// and a bmm whose operands merge dims other than the batch ones, stay.
// CHECK-LABEL: func.func @bmm_views(
// CHECK:         %[[KV:.*]] = graph.reshape %kv, %{{.*}} : (tensor<2x2x2x16x8xf32>, tensor<4xi64>) -> tensor<2x4x16x8xf32> loc("view_k")
// CHECK-NEXT:    %[[S:.*]] = graph.matmul %q, %[[KV]] : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32> loc(fused["bmm", "view_q"])
// CHECK:         %vy = graph.reshape %y, %s2 : (tensor<2x8x32xf32>, tensor<2xi64>) -> tensor<16x32xf32> loc("view_y")
// CHECK-NEXT:    %a = graph.add %vy, %row : (tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32> loc("add")
// CHECK-NEXT:    %t = graph.reshape %q, %k3 : (tensor<2x4x8x16xf32>, tensor<3xi64>) -> tensor<8x16x8xf32> loc("tview")
// CHECK-NEXT:    %bt = graph.matmul %t, %u : (tensor<8x16x8xf32>, tensor<8x8x8xf32>) -> tensor<8x16x8xf32> loc("bmm_t")
func.func @bmm_views(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x2x16x8xf32>, %y: tensor<2x8x32xf32>, %row: tensor<32xf32>, %u: tensor<8x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<16x32xf32>, tensor<8x16x8xf32>) {
  %s3 = graph.constant dense<[8, 8, 16]> : tensor<3xi64> loc("s3")
  %k3 = graph.constant dense<[8, 16, 8]> : tensor<3xi64> loc("k3")
  %s4 = graph.constant dense<[2, 4, 8, 8]> : tensor<4xi64> loc("s4")
  %s2 = graph.constant dense<[16, 32]> : tensor<2xi64> loc("s2")
  %vq = graph.reshape %q, %s3 : (tensor<2x4x8x16xf32>, tensor<3xi64>) -> tensor<8x8x16xf32> loc("view_q")
  %vk = graph.reshape %kv, %k3 : (tensor<2x2x2x16x8xf32>, tensor<3xi64>) -> tensor<8x16x8xf32> loc("view_k")
  %bmm = graph.matmul %vq, %vk : (tensor<8x8x16xf32>, tensor<8x16x8xf32>) -> tensor<8x8x8xf32> loc("bmm")
  %s = graph.reshape %bmm, %s4 : (tensor<8x8x8xf32>, tensor<4xi64>) -> tensor<2x4x8x8xf32> loc("view_s")
  %vy = graph.reshape %y, %s2 : (tensor<2x8x32xf32>, tensor<2xi64>) -> tensor<16x32xf32> loc("view_y")
  %a = graph.add %vy, %row : (tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32> loc("add")
  %t = graph.reshape %q, %k3 : (tensor<2x4x8x16xf32>, tensor<3xi64>) -> tensor<8x16x8xf32> loc("tview")
  %bt = graph.matmul %t, %u : (tensor<8x16x8xf32>, tensor<8x8x8xf32>) -> tensor<8x16x8xf32> loc("bmm_t")
  func.return %s, %a, %bt : tensor<2x4x8x8xf32>, tensor<16x32xf32>, tensor<8x16x8xf32>
}

// -----

// torch.export's bmm of probabilities and V: only the left operand is a view of 4-D [2, 4, ...];
// the plain 3-D right operand is split the same way, so the matmul is 4-D as the attention
// recogniser wants. A right operand of batch 1 (broadcast over the 8) stays.
// CHECK-LABEL: func.func @bmm_one_view(
// CHECK:         %[[V:.*]] = graph.reshape %v, %{{.*}} : (tensor<8x8x16xf32>, tensor<4xi64>) -> tensor<2x4x8x16xf32> loc("bmm")
// CHECK-NEXT:    %[[O:.*]] = graph.matmul %p, %[[V]] : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> loc(fused["bmm", "view_p"])
// CHECK:         graph.reshape %[[O]], %{{.*}} : (tensor<2x4x8x16xf32>, tensor<3xi64>) -> tensor<8x8x16xf32> loc("bmm")
// CHECK:         %b1 = graph.matmul %vp, %w : (tensor<8x8x8xf32>, tensor<1x8x16xf32>) -> tensor<8x8x16xf32> loc("bmm_b1")
func.func @bmm_one_view(%p: tensor<2x4x8x8xf32>, %v: tensor<8x8x16xf32>, %w: tensor<1x8x16xf32>) -> (tensor<8x8x16xf32>, tensor<8x8x16xf32>) {
  %s3 = graph.constant dense<[8, 8, 8]> : tensor<3xi64> loc("s3")
  %vp = graph.reshape %p, %s3 : (tensor<2x4x8x8xf32>, tensor<3xi64>) -> tensor<8x8x8xf32> loc("view_p")
  %bmm = graph.matmul %vp, %v : (tensor<8x8x8xf32>, tensor<8x8x16xf32>) -> tensor<8x8x16xf32> loc("bmm")
  %b1 = graph.matmul %vp, %w : (tensor<8x8x8xf32>, tensor<1x8x16xf32>) -> tensor<8x8x16xf32> loc("bmm_b1")
  func.return %bmm, %b1 : tensor<8x8x16xf32>, tensor<8x8x16xf32>
}

// -----

// A constant right operand whose batch slices are all equal (a weight expanded per batch and
// folded) is its first slice, broadcast; one whose slices differ stays.
// CHECK-LABEL: func.func @broadcast_weight(
// CHECK:         %differ = graph.constant
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32> loc("same")
// CHECK-NEXT:    %a = graph.matmul %x, %[[W]] : (tensor<3x4x2xf32>, tensor<2x2xf32>) -> tensor<3x4x2xf32> loc("a")
// CHECK-NEXT:    %b = graph.matmul %x, %differ : (tensor<3x4x2xf32>, tensor<3x2x2xf32>) -> tensor<3x4x2xf32> loc("b")
func.func @broadcast_weight(%x: tensor<3x4x2xf32>) -> (tensor<3x4x2xf32>, tensor<3x4x2xf32>) {
  %same = graph.constant dense<[[[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 4.0]]]> : tensor<3x2x2xf32> loc("same")
  %differ = graph.constant dense<[[[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 5.0]]]> : tensor<3x2x2xf32> loc("differ")
  %a = graph.matmul %x, %same : (tensor<3x4x2xf32>, tensor<3x2x2xf32>) -> tensor<3x4x2xf32> loc("a")
  %b = graph.matmul %x, %differ : (tensor<3x4x2xf32>, tensor<3x2x2xf32>) -> tensor<3x4x2xf32> loc("b")
  func.return %a, %b : tensor<3x4x2xf32>, tensor<3x4x2xf32>
}
