// graph-assign-precision's lists: keep_dtype pins ops (by node name or OpType::X) at their
// original type whatever the mode; modify_mixlist (GE's JSON) moves op types between the white,
// black and gray lists of the allow_mix_precision modes. Every malformed option is one error.
// RUN: geir-opt %s -p 'graph-assign-precision{mode=force_fp16 keep-dtype="relu"}' | filecheck %s --check-prefix=KEEP-NAME
// RUN: geir-opt %s -p 'graph-assign-precision{mode=force_fp16 keep-dtype="OpType::MatMul"}' | filecheck %s --check-prefix=KEEP-TYPE
// RUN: geir-opt %s -p 'graph-assign-precision{mode=allow_mix_precision modify-mixlist="%S/Inputs/mixlist-softmax-white.json"}' | filecheck %s --check-prefix=WHITE
// RUN: geir-opt %s -p 'graph-assign-precision{mode=allow_mix_precision modify-mixlist="%S/Inputs/mixlist-matmul-gray.json"}' | filecheck %s --check-prefix=GRAY
// Without a list: the matmul and relu in f16, the softmax (black) in f32.
// RUN: geir-opt %s -p 'graph-assign-precision{mode=allow_mix_precision}' | filecheck %s --check-prefix=MIX

// RUN: not geir-opt %s -p 'graph-assign-precision{mode=fp8}' 2>&1 | filecheck %s --check-prefix=ERR-MODE
// RUN: not geir-opt %s -p 'graph-assign-precision{keep-dtype="nosuchop","OpType::Conv","relu"}' 2>&1 | filecheck %s --check-prefix=ERR-KEEP
// RUN: not geir-opt %s -p 'graph-assign-precision{keep-dtype="OpType::Frob"}' 2>&1 | filecheck %s --check-prefix=ERR-KEEP-TYPE
// RUN: not geir-opt %s -p 'graph-assign-precision{mode=allow_mix_precision modify-mixlist="%S/Inputs/mixlist-both-lists.json"}' 2>&1 | filecheck %s --check-prefix=ERR-BOTH
// RUN: not geir-opt %s -p 'graph-assign-precision{mode=allow_mix_precision modify-mixlist="%S/Inputs/mixlist-malformed.json"}' 2>&1 | filecheck %s --check-prefix=ERR-JSON
// RUN: not geir-opt %s -p 'graph-assign-precision{mode=allow_mix_precision modify-mixlist="%S/Inputs/mixlist-unknown-op.json"}' 2>&1 | filecheck %s --check-prefix=ERR-OP
// RUN: not geir-opt %s -p 'graph-assign-precision{mode=allow_mix_precision modify-mixlist="%S/Inputs/no-such-file.json"}' 2>&1 | filecheck %s --check-prefix=ERR-FILE
// RUN: not geir-opt %s -p 'graph-assign-precision{mode=force_fp16 modify-mixlist="%S/Inputs/mixlist-matmul-gray.json"}' 2>&1 | filecheck %s --check-prefix=ERR-MODE-LIST
// After graph-fuse the decisions would come too late for the kernels: rejected.
// RUN: not geir-opt %s -p 'graph-fuse,graph-assign-precision' 2>&1 | filecheck %s --check-prefix=ERR-FUSED

// keep_dtype "relu": the relu between two f16 ops computes in f32, with a cast on each side.
// KEEP-NAME:      %y = graph.matmul %x_f16, %w_f16 : (tensor<8x64xf16>, tensor<64x32xf16>) -> tensor<8x32xf16>
// KEEP-NAME-NEXT: %y_f32 = graph.cast %y {to = f32} : (tensor<8x32xf16>) -> tensor<8x32xf32> loc("mm")
// KEEP-NAME-NEXT: %r = graph.relu %y_f32 : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("relu")
// KEEP-NAME-NEXT: %r_f16 = graph.cast %r {to = f16} : (tensor<8x32xf32>) -> tensor<8x32xf16> loc("relu")
// KEEP-NAME-NEXT: %s = graph.softmax %r_f16 {axis = -1 : i64} : (tensor<8x32xf16>) -> tensor<8x32xf16>

// keep_dtype "OpType::MatMul": the matmul and its weights stay f32; what follows is f16.
// KEEP-TYPE:      %w = graph.constant dense<5.000000e-01> : tensor<64x32xf32> loc("w")
// KEEP-TYPE-NEXT: %y = graph.matmul %x, %w : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32> loc("mm")
// KEEP-TYPE-NEXT: %y_f16 = graph.cast %y {to = f16}
// KEEP-TYPE-NEXT: %r = graph.relu %y_f16 : (tensor<8x32xf16>) -> tensor<8x32xf16>

// Softmax moved from the black list to the white one: computed in f16, the cast after it.
// WHITE:      %s = graph.softmax %r {axis = -1 : i64} : (tensor<8x32xf16>) -> tensor<8x32xf16> loc("softmax")
// WHITE-NEXT: %s_f32 = graph.cast %s {to = f32}
// WHITE-NEXT: func.return %s_f32

// MatMul removed from the white list is gray: its input is the f32 argument, so nothing changes.
// GRAY-NOT:   graph.cast
// GRAY:       %y = graph.matmul %x, %w : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32> loc("mm")
// GRAY-NOT:   graph.cast

// MIX:      %y = graph.matmul %x_f16, %w_f16 : (tensor<8x64xf16>, tensor<64x32xf16>) -> tensor<8x32xf16> loc("mm")
// MIX-NEXT: %r = graph.relu %y : (tensor<8x32xf16>) -> tensor<8x32xf16> loc("relu")
// MIX-NEXT: %r_f32 = graph.cast %r {to = f32}
// MIX-NEXT: %s = graph.softmax %r_f32 {axis = -1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("softmax")

// ERR-MODE: error: unknown precision mode 'fp8'; modes: force_fp16, allow_fp32_to_fp16,
// ERR-KEEP: error: keep_dtype: no op of the graph is named by 'nosuchop', 'OpType::Conv'
// ERR-KEEP-TYPE: error: keep_dtype line 'OpType::Frob': 'Frob' is not an op type geir knows
// ERR-BOTH: error: {{.*}}mixlist-both-lists.json: 'Relu' is added to both the white-list and the black-list
// ERR-JSON: error: {{.*}}mixlist-malformed.json: not valid JSON: Expecting ',' delimiter: line 2 column 1
// ERR-OP: error: {{.*}}mixlist-unknown-op.json: black-list to-add: 'Frobnicate' is not an op type geir knows
// ERR-FILE: error: cannot read modify_mixlist file {{.*}}no-such-file.json: No such file or directory
// ERR-MODE-LIST: error: modify_mixlist applies to the allow_mix_precision modes, not 'force_fp16'
// ERR-FUSED: error: graph-assign-precision runs before graph-fuse: the function has fusions
func.func @lists(%x: tensor<8x64xf32>) -> tensor<8x32xf32> {
  %w = graph.constant dense<0.5> : tensor<64x32xf32> loc("w")
  %y = graph.matmul %x, %w : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32> loc("mm")
  %r = graph.relu %y : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("relu")
  %s = graph.softmax %r {axis = -1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("softmax")
  func.return %s : tensor<8x32xf32>
}
