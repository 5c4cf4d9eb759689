// graph-assign-precision: the type every float op computes in, from GE's precision mode. Casts go
// only where a value's type differs from what its user computes in (one per value and type);
// constants are converted instead of cast; the function keeps the model's argument and result
// types. Each RUN line is one mode; the lists (keep_dtype, modify_mixlist) and the errors are in
// assign-precision-lists.mlir.
// RUN: geir-opt %s --split-input-file -p 'graph-assign-precision{mode=force_fp16}' | filecheck %s --check-prefix=FP16
// RUN: geir-opt %s --split-input-file -p 'graph-assign-precision{mode=allow_mix_precision}' | filecheck %s --check-prefix=MIX
// RUN: geir-opt %s --split-input-file -p 'graph-assign-precision{mode=allow_fp32_to_fp16}' | filecheck %s --check-prefix=CUBE
// RUN: geir-opt %s --split-input-file -p 'graph-assign-precision{mode=force_fp32}' | filecheck %s --check-prefix=FP32
// RUN: geir-opt %s --split-input-file -p 'graph-assign-precision{mode=must_keep_origin_dtype}' | filecheck %s --check-prefix=KEEP
// RUN: geir-opt %s --split-input-file -p 'graph-assign-precision{mode=allow_mix_precision_bf16}' | filecheck %s --check-prefix=MIXBF
// RUN: geir-opt %s --split-input-file -p 'graph-assign-precision{mode=allow_fp32_to_bf16}' | filecheck %s --check-prefix=CUBEBF
// The default mode is force_fp16, and a second run changes nothing more.
// RUN: geir-opt %s --split-input-file -p 'graph-assign-precision,graph-assign-precision' | filecheck %s --check-prefix=FP16

// matmul (white), bias add and relu (gray), softmax (black), tanh (gray).
// force_fp16: everything in f16, one cast at each end, the weights stored in f16 (a splat stays
// a splat). allow_mix_precision: the matmul is white, the add and relu follow it, softmax is
// black and stays f32, tanh follows the softmax. allow_fp32_to_fp16: only the cube op.
// force_fp32: the matmul reads its operands rounded to f16 (the weights stored rounded) and
// computes in f32, as the cube with L0C and FIX: no f16 rounding of its result. must_keep: unchanged.
// FP16-LABEL: func.func @mlp(
// FP16-NEXT:    %x_f16 = graph.cast %x {to = f16} : (tensor<8x64xf32>) -> tensor<8x64xf16> loc("x")
// FP16-NEXT:    %w_f16 = graph.constant dense<5.000000e-01> : tensor<64x32xf16> loc("w")
// FP16-NEXT:    %b_f16 = graph.constant dense_resource<b_f16> : tensor<32xf16> loc("b")
// FP16-NEXT:    %y = graph.matmul %x_f16, %w_f16 : (tensor<8x64xf16>, tensor<64x32xf16>) -> tensor<8x32xf16> loc("mm")
// FP16-NEXT:    %z = graph.add %y, %b_f16 : (tensor<8x32xf16>, tensor<32xf16>) -> tensor<8x32xf16> loc("bias")
// FP16-NEXT:    %r = graph.relu %z : (tensor<8x32xf16>) -> tensor<8x32xf16> loc("relu")
// FP16-NEXT:    %s = graph.softmax %r {axis = -1 : i64} : (tensor<8x32xf16>) -> tensor<8x32xf16> loc("softmax")
// FP16-NEXT:    %t = graph.tanh %s : (tensor<8x32xf16>) -> tensor<8x32xf16> loc("tanh")
// FP16-NEXT:    %t_f32 = graph.cast %t {to = f32} : (tensor<8x32xf16>) -> tensor<8x32xf32> loc("tanh")
// FP16-NEXT:    func.return %t_f32 : tensor<8x32xf32>
// MIX-LABEL: func.func @mlp(
// MIX-NEXT:    %x_f16 = graph.cast %x {to = f16} : (tensor<8x64xf32>) -> tensor<8x64xf16> loc("x")
// MIX-NEXT:    %w_f16 = graph.constant dense<5.000000e-01> : tensor<64x32xf16> loc("w")
// MIX-NEXT:    %b_f16 = graph.constant dense_resource<b_f16> : tensor<32xf16> loc("b")
// MIX-NEXT:    %y = graph.matmul %x_f16, %w_f16 : (tensor<8x64xf16>, tensor<64x32xf16>) -> tensor<8x32xf16> loc("mm")
// MIX-NEXT:    %z = graph.add %y, %b_f16 : (tensor<8x32xf16>, tensor<32xf16>) -> tensor<8x32xf16> loc("bias")
// MIX-NEXT:    %r = graph.relu %z : (tensor<8x32xf16>) -> tensor<8x32xf16> loc("relu")
// MIX-NEXT:    %r_f32 = graph.cast %r {to = f32} : (tensor<8x32xf16>) -> tensor<8x32xf32> loc("relu")
// MIX-NEXT:    %s = graph.softmax %r_f32 {axis = -1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("softmax")
// MIX-NEXT:    %t = graph.tanh %s : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("tanh")
// MIX-NEXT:    func.return %t : tensor<8x32xf32>
// CUBE-LABEL: func.func @mlp(
// CUBE-NEXT:    %x_f16 = graph.cast %x {to = f16} : (tensor<8x64xf32>) -> tensor<8x64xf16> loc("x")
// CUBE-NEXT:    %w_f16 = graph.constant dense<5.000000e-01> : tensor<64x32xf16> loc("w")
// CUBE-NEXT:    %b = graph.constant dense_resource<b> : tensor<32xf32> loc("b")
// CUBE-NEXT:    %y = graph.matmul %x_f16, %w_f16 : (tensor<8x64xf16>, tensor<64x32xf16>) -> tensor<8x32xf16> loc("mm")
// CUBE-NEXT:    %y_f32 = graph.cast %y {to = f32} : (tensor<8x32xf16>) -> tensor<8x32xf32> loc("mm")
// CUBE-NEXT:    %z = graph.add %y_f32, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32> loc("bias")
// CUBE-NEXT:    %r = graph.relu %z : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("relu")
// CUBE-NEXT:    %s = graph.softmax %r {axis = -1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("softmax")
// CUBE-NEXT:    %t = graph.tanh %s : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("tanh")
// CUBE-NEXT:    func.return %t : tensor<8x32xf32>
// The bf16 modes: the same decisions, bf16 for f16.
// MIXBF-LABEL: func.func @mlp(
// MIXBF-NEXT:    %x_bf16 = graph.cast %x {to = bf16} : (tensor<8x64xf32>) -> tensor<8x64xbf16> loc("x")
// MIXBF-NEXT:    %w_bf16 = graph.constant dense<5.000000e-01> : tensor<64x32xbf16> loc("w")
// MIXBF-NEXT:    %b_bf16 = graph.constant dense_resource<b_bf16> : tensor<32xbf16> loc("b")
// MIXBF-NEXT:    %y = graph.matmul %x_bf16, %w_bf16 : (tensor<8x64xbf16>, tensor<64x32xbf16>) -> tensor<8x32xbf16> loc("mm")
// MIXBF-NEXT:    %z = graph.add %y, %b_bf16 : (tensor<8x32xbf16>, tensor<32xbf16>) -> tensor<8x32xbf16> loc("bias")
// MIXBF-NEXT:    %r = graph.relu %z : (tensor<8x32xbf16>) -> tensor<8x32xbf16> loc("relu")
// MIXBF-NEXT:    %r_f32 = graph.cast %r {to = f32} : (tensor<8x32xbf16>) -> tensor<8x32xf32> loc("relu")
// MIXBF-NEXT:    %s = graph.softmax %r_f32 {axis = -1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("softmax")
// MIXBF-NEXT:    %t = graph.tanh %s : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("tanh")
// MIXBF-NEXT:    func.return %t : tensor<8x32xf32>
// CUBEBF-LABEL: func.func @mlp(
// CUBEBF-NEXT:    %x_bf16 = graph.cast %x {to = bf16} : (tensor<8x64xf32>) -> tensor<8x64xbf16> loc("x")
// CUBEBF-NEXT:    %w_bf16 = graph.constant dense<5.000000e-01> : tensor<64x32xbf16> loc("w")
// CUBEBF-NEXT:    %b = graph.constant dense_resource<b> : tensor<32xf32> loc("b")
// CUBEBF-NEXT:    %y = graph.matmul %x_bf16, %w_bf16 : (tensor<8x64xbf16>, tensor<64x32xbf16>) -> tensor<8x32xbf16> loc("mm")
// CUBEBF-NEXT:    %y_f32 = graph.cast %y {to = f32} : (tensor<8x32xbf16>) -> tensor<8x32xf32> loc("mm")
// CUBEBF-NEXT:    %z = graph.add %y_f32, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32> loc("bias")
// CUBEBF-NEXT:    %r = graph.relu %z : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("relu")
// CUBEBF-NEXT:    %s = graph.softmax %r {axis = -1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("softmax")
// CUBEBF-NEXT:    %t = graph.tanh %s : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("tanh")
// CUBEBF-NEXT:    func.return %t : tensor<8x32xf32>
// FP32-LABEL: func.func @mlp(
// FP32-NEXT:    %x_f16 = graph.cast %x {to = f16} : (tensor<8x64xf32>) -> tensor<8x64xf16> loc("x")
// FP32-NEXT:    %x_f16_f32 = graph.cast %x_f16 {to = f32} : (tensor<8x64xf16>) -> tensor<8x64xf32> loc("x")
// FP32-NEXT:    %w_f16_f32 = graph.constant dense<5.000000e-01> : tensor<64x32xf32> loc("w")
// FP32-NEXT:    %b = graph.constant dense_resource<b> : tensor<32xf32> loc("b")
// FP32-NEXT:    %y = graph.matmul %x_f16_f32, %w_f16_f32 : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32> loc("mm")
// FP32-NEXT:    %z = graph.add %y, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32> loc("bias")
// FP32-NEXT:    %r = graph.relu %z : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("relu")
// FP32-NEXT:    %s = graph.softmax %r {axis = -1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("softmax")
// FP32-NEXT:    %t = graph.tanh %s : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("tanh")
// FP32-NEXT:    func.return %t : tensor<8x32xf32>
// KEEP-LABEL: func.func @mlp(
// KEEP-NEXT:    %w = graph.constant dense<5.000000e-01> : tensor<64x32xf32> loc("w")
// KEEP-NEXT:    %b = graph.constant dense_resource<b> : tensor<32xf32> loc("b")
// KEEP-NEXT:    %y = graph.matmul %x, %w : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32> loc("mm")
// KEEP-NEXT:    %z = graph.add %y, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32> loc("bias")
// KEEP-NEXT:    %r = graph.relu %z : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("relu")
// KEEP-NEXT:    %s = graph.softmax %r {axis = -1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("softmax")
// KEEP-NEXT:    %t = graph.tanh %s : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("tanh")
// KEEP-NEXT:    func.return %t : tensor<8x32xf32>
func.func @mlp(%x: tensor<8x64xf32>) -> tensor<8x32xf32> {
  %w = graph.constant dense<0.5> : tensor<64x32xf32> loc("w")
  %b = graph.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]> : tensor<32xf32> loc("b")
  %y = graph.matmul %x, %w : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32> loc("mm")
  %z = graph.add %y, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32> loc("bias")
  %r = graph.relu %z : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("relu")
  %s = graph.softmax %r {axis = -1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("softmax")
  %t = graph.tanh %s : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("tanh")
  func.return %t : tensor<8x32xf32>
}

// -----

// Gray ops follow their inputs: relu, sigmoid and add_low only see the matmul's f16 result and
// are lowered under allow_mix_precision; add_mixed also sees neg of the f32 argument and stays
// f32. @gray_order_b is the same graph listed in another order: the same decisions.
// FP16-LABEL: func.func @gray_order_a(
// FP16-NEXT:    %x_f16 = graph.cast %x {to = f16} : (tensor<8x64xf32>) -> tensor<8x64xf16> loc("x")
// FP16-NEXT:    %w_f16 = graph.cast %w {to = f16} : (tensor<64x64xf32>) -> tensor<64x64xf16> loc("w")
// FP16-NEXT:    %m = graph.matmul %x_f16, %w_f16 : (tensor<8x64xf16>, tensor<64x64xf16>) -> tensor<8x64xf16> loc("mm")
// FP16-NEXT:    %r = graph.relu %m : (tensor<8x64xf16>) -> tensor<8x64xf16> loc("relu")
// FP16-NEXT:    %n = graph.neg %x_f16 : (tensor<8x64xf16>) -> tensor<8x64xf16> loc("neg")
// FP16-NEXT:    %s = graph.sigmoid %r : (tensor<8x64xf16>) -> tensor<8x64xf16> loc("sigmoid")
// FP16-NEXT:    %a = graph.add %s, %r : (tensor<8x64xf16>, tensor<8x64xf16>) -> tensor<8x64xf16> loc("add_low")
// FP16-NEXT:    %b = graph.add %a, %n : (tensor<8x64xf16>, tensor<8x64xf16>) -> tensor<8x64xf16> loc("add_mixed")
// FP16-NEXT:    %b_f32 = graph.cast %b {to = f32} : (tensor<8x64xf16>) -> tensor<8x64xf32> loc("add_mixed")
// FP16-NEXT:    func.return %b_f32 : tensor<8x64xf32>
// MIX-LABEL: func.func @gray_order_a(
// MIX-NEXT:    %x_f16 = graph.cast %x {to = f16} : (tensor<8x64xf32>) -> tensor<8x64xf16> loc("x")
// MIX-NEXT:    %w_f16 = graph.cast %w {to = f16} : (tensor<64x64xf32>) -> tensor<64x64xf16> loc("w")
// MIX-NEXT:    %m = graph.matmul %x_f16, %w_f16 : (tensor<8x64xf16>, tensor<64x64xf16>) -> tensor<8x64xf16> loc("mm")
// MIX-NEXT:    %r = graph.relu %m : (tensor<8x64xf16>) -> tensor<8x64xf16> loc("relu")
// MIX-NEXT:    %n = graph.neg %x : (tensor<8x64xf32>) -> tensor<8x64xf32> loc("neg")
// MIX-NEXT:    %s = graph.sigmoid %r : (tensor<8x64xf16>) -> tensor<8x64xf16> loc("sigmoid")
// MIX-NEXT:    %a = graph.add %s, %r : (tensor<8x64xf16>, tensor<8x64xf16>) -> tensor<8x64xf16> loc("add_low")
// MIX-NEXT:    %a_f32 = graph.cast %a {to = f32} : (tensor<8x64xf16>) -> tensor<8x64xf32> loc("add_low")
// MIX-NEXT:    %b = graph.add %a_f32, %n : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32> loc("add_mixed")
// MIX-NEXT:    func.return %b : tensor<8x64xf32>
// CUBE-LABEL: func.func @gray_order_a(
// CUBE-NEXT:    %x_f16 = graph.cast %x {to = f16} : (tensor<8x64xf32>) -> tensor<8x64xf16> loc("x")
// CUBE-NEXT:    %w_f16 = graph.cast %w {to = f16} : (tensor<64x64xf32>) -> tensor<64x64xf16> loc("w")
// CUBE-NEXT:    %m = graph.matmul %x_f16, %w_f16 : (tensor<8x64xf16>, tensor<64x64xf16>) -> tensor<8x64xf16> loc("mm")
// CUBE-NEXT:    %m_f32 = graph.cast %m {to = f32} : (tensor<8x64xf16>) -> tensor<8x64xf32> loc("mm")
// CUBE-NEXT:    %r = graph.relu %m_f32 : (tensor<8x64xf32>) -> tensor<8x64xf32> loc("relu")
// CUBE-NEXT:    %n = graph.neg %x : (tensor<8x64xf32>) -> tensor<8x64xf32> loc("neg")
// CUBE-NEXT:    %s = graph.sigmoid %r : (tensor<8x64xf32>) -> tensor<8x64xf32> loc("sigmoid")
// CUBE-NEXT:    %a = graph.add %s, %r : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32> loc("add_low")
// CUBE-NEXT:    %b = graph.add %a, %n : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32> loc("add_mixed")
// CUBE-NEXT:    func.return %b : tensor<8x64xf32>
func.func @gray_order_a(%x: tensor<8x64xf32>, %w: tensor<64x64xf32>) -> tensor<8x64xf32> {
  %m = graph.matmul %x, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32> loc("mm")
  %r = graph.relu %m : (tensor<8x64xf32>) -> tensor<8x64xf32> loc("relu")
  %n = graph.neg %x : (tensor<8x64xf32>) -> tensor<8x64xf32> loc("neg")
  %s = graph.sigmoid %r : (tensor<8x64xf32>) -> tensor<8x64xf32> loc("sigmoid")
  %a = graph.add %s, %r : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32> loc("add_low")
  %b = graph.add %a, %n : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32> loc("add_mixed")
  func.return %b : tensor<8x64xf32>
}

// -----

// The graph of @gray_order_a with the ops in another topological order and the adds' operands
// swapped: the same casts and types.
// MIX-LABEL: func.func @gray_order_b(
// MIX-NEXT:    %x_f16 = graph.cast %x {to = f16} : (tensor<8x64xf32>) -> tensor<8x64xf16> loc("x")
// MIX-NEXT:    %w_f16 = graph.cast %w {to = f16} : (tensor<64x64xf32>) -> tensor<64x64xf16> loc("w")
// MIX-NEXT:    %n = graph.neg %x : (tensor<8x64xf32>) -> tensor<8x64xf32> loc("neg")
// MIX-NEXT:    %m = graph.matmul %x_f16, %w_f16 : (tensor<8x64xf16>, tensor<64x64xf16>) -> tensor<8x64xf16> loc("mm")
// MIX-NEXT:    %r = graph.relu %m : (tensor<8x64xf16>) -> tensor<8x64xf16> loc("relu")
// MIX-NEXT:    %s = graph.sigmoid %r : (tensor<8x64xf16>) -> tensor<8x64xf16> loc("sigmoid")
// MIX-NEXT:    %a = graph.add %r, %s : (tensor<8x64xf16>, tensor<8x64xf16>) -> tensor<8x64xf16> loc("add_low")
// MIX-NEXT:    %a_f32 = graph.cast %a {to = f32} : (tensor<8x64xf16>) -> tensor<8x64xf32> loc("add_low")
// MIX-NEXT:    %b = graph.add %n, %a_f32 : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32> loc("add_mixed")
// MIX-NEXT:    func.return %b : tensor<8x64xf32>
func.func @gray_order_b(%x: tensor<8x64xf32>, %w: tensor<64x64xf32>) -> tensor<8x64xf32> {
  %n = graph.neg %x : (tensor<8x64xf32>) -> tensor<8x64xf32> loc("neg")
  %m = graph.matmul %x, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32> loc("mm")
  %r = graph.relu %m : (tensor<8x64xf32>) -> tensor<8x64xf32> loc("relu")
  %s = graph.sigmoid %r : (tensor<8x64xf32>) -> tensor<8x64xf32> loc("sigmoid")
  %a = graph.add %r, %s : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32> loc("add_low")
  %b = graph.add %n, %a : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32> loc("add_mixed")
  func.return %b : tensor<8x64xf32>
}

// -----

// An f16 model's own casts around an fp32 matmul: once the matmul computes in f16, the widening
// cast and the cast back cancel (f16 -> f32 -> f16 is exact) and both disappear.
// FP16-LABEL: func.func @casts(
// FP16-NEXT:    %w_f16 = graph.cast %w {to = f16} : (tensor<64x16xf32>) -> tensor<64x16xf16> loc("w")
// FP16-NEXT:    %y = graph.matmul %x, %w_f16 : (tensor<8x64xf16>, tensor<64x16xf16>) -> tensor<8x16xf16> loc("mm")
// FP16-NEXT:    func.return %y : tensor<8x16xf16>
// MIX-LABEL: func.func @casts(
// MIX-NEXT:    %w_f16 = graph.cast %w {to = f16} : (tensor<64x16xf32>) -> tensor<64x16xf16> loc("w")
// MIX-NEXT:    %y = graph.matmul %x, %w_f16 : (tensor<8x64xf16>, tensor<64x16xf16>) -> tensor<8x16xf16> loc("mm")
// MIX-NEXT:    func.return %y : tensor<8x16xf16>
// FP32-LABEL: func.func @casts(
// FP32-NEXT:    %x_f32 = graph.cast %x {to = f32} : (tensor<8x64xf16>) -> tensor<8x64xf32> loc("x")
// FP32-NEXT:    %w_f16 = graph.cast %w {to = f16} : (tensor<64x16xf32>) -> tensor<64x16xf16> loc("w")
// FP32-NEXT:    %w_f16_f32 = graph.cast %w_f16 {to = f32} : (tensor<64x16xf16>) -> tensor<64x16xf32> loc("w")
// FP32-NEXT:    %y = graph.matmul %x_f32, %w_f16_f32 : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32> loc("mm")
// FP32-NEXT:    %y_f16 = graph.cast %y {to = f16} : (tensor<8x16xf32>) -> tensor<8x16xf16> loc("mm")
// FP32-NEXT:    func.return %y_f16 : tensor<8x16xf16>
func.func @casts(%x: tensor<8x64xf16>, %w: tensor<64x16xf32>) -> tensor<8x16xf16> {
  %xf = graph.cast %x {to = f32} : (tensor<8x64xf16>) -> tensor<8x64xf32> loc("up")
  %y = graph.matmul %xf, %w : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32> loc("mm")
  %h = graph.cast %y {to = f16} : (tensor<8x16xf32>) -> tensor<8x16xf16> loc("down")
  func.return %h : tensor<8x16xf16>
}

// -----

// Integer operands (gather indices, a reshape's shape) keep their types; f64 is never lowered
// (no kernel computes it); exp is black under allow_mix_precision.
// FP16-LABEL: func.func @ints(
// FP16-NEXT:    %x_f16 = graph.cast %x {to = f16} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf16> loc("x")
// FP16-NEXT:    %g = graph.gather %x_f16, %i {axis = 1 : i64} : (tensor<2x8x16xf16>, tensor<4xi64>) -> tensor<2x4x16xf16> loc("gather")
// FP16-NEXT:    %g_f32 = graph.cast %g {to = f32} : (tensor<2x4x16xf16>) -> tensor<2x4x16xf32> loc("gather")
// FP16-NEXT:    %shape = graph.constant dense<16> : tensor<2xi64> loc("shape")
// FP16-NEXT:    %r = graph.reshape %x_f16, %shape : (tensor<2x8x16xf16>, tensor<2xi64>) -> tensor<16x16xf16> loc("reshape")
// FP16-NEXT:    %e = graph.exp %r : (tensor<16x16xf16>) -> tensor<16x16xf16> loc("exp")
// FP16-NEXT:    %e_f32 = graph.cast %e {to = f32} : (tensor<16x16xf16>) -> tensor<16x16xf32> loc("exp")
// FP16-NEXT:    %d = graph.cast %x {to = f64} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf64> loc("wide")
// FP16-NEXT:    %n = graph.neg %d : (tensor<2x8x16xf64>) -> tensor<2x8x16xf64> loc("neg64")
// FP16-NEXT:    func.return %g_f32, %e_f32, %n : tensor<2x4x16xf32>, tensor<16x16xf32>, tensor<2x8x16xf64>
// MIX-LABEL: func.func @ints(
// MIX-NEXT:    %g = graph.gather %x, %i {axis = 1 : i64} : (tensor<2x8x16xf32>, tensor<4xi64>) -> tensor<2x4x16xf32> loc("gather")
// MIX-NEXT:    %shape = graph.constant dense<16> : tensor<2xi64> loc("shape")
// MIX-NEXT:    %r = graph.reshape %x, %shape : (tensor<2x8x16xf32>, tensor<2xi64>) -> tensor<16x16xf32> loc("reshape")
// MIX-NEXT:    %e = graph.exp %r : (tensor<16x16xf32>) -> tensor<16x16xf32> loc("exp")
// MIX-NEXT:    %d = graph.cast %x {to = f64} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf64> loc("wide")
// MIX-NEXT:    %n = graph.neg %d : (tensor<2x8x16xf64>) -> tensor<2x8x16xf64> loc("neg64")
// MIX-NEXT:    func.return %g, %e, %n : tensor<2x4x16xf32>, tensor<16x16xf32>, tensor<2x8x16xf64>
func.func @ints(%x: tensor<2x8x16xf32>, %i: tensor<4xi64>) -> (tensor<2x4x16xf32>, tensor<16x16xf32>, tensor<2x8x16xf64>) {
  %g = graph.gather %x, %i {axis = 1 : i64} : (tensor<2x8x16xf32>, tensor<4xi64>) -> tensor<2x4x16xf32> loc("gather")
  %shape = graph.constant dense<[16, 16]> : tensor<2xi64> loc("shape")
  %r = graph.reshape %x, %shape : (tensor<2x8x16xf32>, tensor<2xi64>) -> tensor<16x16xf32> loc("reshape")
  %e = graph.exp %r : (tensor<16x16xf32>) -> tensor<16x16xf32> loc("exp")
  %d = graph.cast %x {to = f64} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf64> loc("wide")
  %n = graph.neg %d : (tensor<2x8x16xf64>) -> tensor<2x8x16xf64> loc("neg64")
  func.return %g, %e, %n : tensor<2x4x16xf32>, tensor<16x16xf32>, tensor<2x8x16xf64>
}

// -----

// One constant used by a lowered op and by a black one: converted once for the first, kept as
// it is for the second (allow_mix_precision); force_fp16 converts it once for both.
// FP16-LABEL: func.func @shared_constant(
// FP16-NEXT:    %x_f16 = graph.cast %x {to = f16} : (tensor<4x8xf32>) -> tensor<4x8xf16> loc("x")
// FP16-NEXT:    %c_f16 = graph.constant dense<{{.*}}> : tensor<8xf16> loc("c")
// FP16-NEXT:    %w_f16 = graph.constant dense<1.250000e-01> : tensor<8x8xf16> loc("w")
// FP16-NEXT:    %m = graph.matmul %x_f16, %w_f16 : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16> loc("mm")
// FP16-NEXT:    %a = graph.add %m, %c_f16 : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16> loc("add_low")
// FP16-NEXT:    %a_f32 = graph.cast %a {to = f32} : (tensor<4x8xf16>) -> tensor<4x8xf32> loc("add_low")
// FP16-NEXT:    %p = graph.pow %x_f16, %c_f16 : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16> loc("pow_black")
// FP16-NEXT:    %p_f32 = graph.cast %p {to = f32} : (tensor<4x8xf16>) -> tensor<4x8xf32> loc("pow_black")
// FP16-NEXT:    func.return %a_f32, %p_f32 : tensor<4x8xf32>, tensor<4x8xf32>
// MIX-LABEL: func.func @shared_constant(
// MIX-NEXT:    %x_f16 = graph.cast %x {to = f16} : (tensor<4x8xf32>) -> tensor<4x8xf16> loc("x")
// MIX-NEXT:    %c = graph.constant dense<{{.*}}> : tensor<8xf32> loc("c")
// MIX-NEXT:    %c_f16 = graph.constant dense<{{.*}}> : tensor<8xf16> loc("c")
// MIX-NEXT:    %w_f16 = graph.constant dense<1.250000e-01> : tensor<8x8xf16> loc("w")
// MIX-NEXT:    %m = graph.matmul %x_f16, %w_f16 : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16> loc("mm")
// MIX-NEXT:    %a = graph.add %m, %c_f16 : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16> loc("add_low")
// MIX-NEXT:    %a_f32 = graph.cast %a {to = f32} : (tensor<4x8xf16>) -> tensor<4x8xf32> loc("add_low")
// MIX-NEXT:    %p = graph.pow %x, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("pow_black")
// MIX-NEXT:    func.return %a_f32, %p : tensor<4x8xf32>, tensor<4x8xf32>
func.func @shared_constant(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32> loc("c")
  %w = graph.constant dense<0.125> : tensor<8x8xf32> loc("w")
  %m = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm")
  %a = graph.add %m, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("add_low")
  %p = graph.pow %x, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("pow_black")
  func.return %a, %p : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A shape-only weight (no bytes) stays one when converted: a placeholder of the new type,
// named after the weight it comes from, not a splat of 0 that CSE could merge with another.
// FP16-LABEL: func.func @shape_only(
// FP16-NEXT:    %x_f16 = graph.cast %x {to = f16}
// FP16-NEXT:    %w_f16 = graph.constant {geir.placeholder = "fc.weight/w_f16"} dense<0.000000e+00> : tensor<8x8xf16> loc("w")
// FP16-NEXT:    %v_f16 = graph.constant {geir.placeholder = "fc2.weight/v_f16"} dense<0.000000e+00> : tensor<8x8xf16> loc("v")
// FP16-NEXT:    %m = graph.matmul %x_f16, %w_f16
// FP16-NEXT:    %n = graph.matmul %m, %v_f16
// force_fp32 rounds it through f16 (a placeholder each step, its name the path):
// FP32-LABEL: func.func @shape_only(
// FP32:         %w_f16_f32 = graph.constant {geir.placeholder = "fc.weight/w_f16/w_f16_f32"} dense<0.000000e+00> : tensor<8x8xf32> loc("w")
func.func @shape_only(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = graph.constant {geir.placeholder = "fc.weight"} dense<0.0> : tensor<8x8xf32> loc("w")
  %v = graph.constant {geir.placeholder = "fc2.weight"} dense<0.0> : tensor<8x8xf32> loc("v")
  %m = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm")
  %n = graph.matmul %m, %v : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm2")
  func.return %n : tensor<4x8xf32>
}
