// Verifier errors of the nn ops, one per `// -----` chunk; each names the op,
// its location and the rule it breaks, then shows the op in generic form.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.conv' at "conv": weight expects 3 input channels (group 1), input has 4
// CHECK-NEXT: note: see current operation: %0 = "graph.conv"
func.func @conv_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<8x3x3x3xf32>) {
  %0 = graph.conv %x, %w : (tensor<1x4x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32> loc("conv")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.conv' at "conv": group 3 must divide the 4 input and 6 output channels
// CHECK-NEXT: note: see current operation: %0 = "graph.conv"
func.func @conv_group(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  %0 = graph.conv %x, %w {group = 3 : i64} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32> loc("conv")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.conv' at "conv": weight expects 8 input channels (group 2), input has 4
// CHECK-NEXT: note: see current operation: %0 = "graph.conv"
func.func @conv_group_weight(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv %x, %w {group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> loc("conv")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.conv' at "conv": bias must have shape [8], got [4]
// CHECK-NEXT: note: see current operation: %0 = "graph.conv"
func.func @conv_bias(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<4xf32>) {
  %0 = graph.conv %x, %w, %b : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<4xf32>) -> tensor<1x8x6x6xf32> loc("conv")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.conv' at "conv": input [4, 8, 8] and weight [8, 4, 3, 3] must both have rank >= 3 and equal rank
// CHECK-NEXT: note: see current operation: %0 = "graph.conv"
func.func @conv_rank(%x: tensor<4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv %x, %w : (tensor<4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> loc("conv")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.conv' at "conv": 'pads' needs 4 values for 2 spatial dims, got 2
// CHECK-NEXT: note: see current operation: %0 = "graph.conv"
func.func @conv_pads_length(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv %x, %w {pads = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32> loc("conv")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.conv' at "conv": 'pads' must not be negative, got [-1, 0, 0, 0]
// CHECK-NEXT: note: see current operation: %0 = "graph.conv"
func.func @conv_negative_pads(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv %x, %w {pads = array<i64: -1, 0, 0, 0>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x5x6xf32> loc("conv")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.conv' at "conv": result #0 has type tensor<1x8x4x4xf32>, but the operands imply tensor<1x8x3x3xf32>
// CHECK-NEXT: note: see current operation: %0 = "graph.conv"
func.func @conv_result(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv %x, %w {strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x4x4xf32> loc("conv")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.conv' at "conv": window of extent 3 exceeds padded input of size 2
// CHECK-NEXT: note: see current operation: %0 = "graph.conv"
func.func @conv_kernel_too_big(%x: tensor<1x4x2x2xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv %x, %w : (tensor<1x4x2x2xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x1x1xf32> loc("conv")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.conv' at "conv": attribute 'group' must be an i64 integer, got array<i64: 1>
// CHECK-NEXT: note: see current operation: %0 = "graph.conv"
func.func @conv_group_attribute_kind(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv %x, %w {group = array<i64: 1>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> loc("conv")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.conv_transpose' at "deconv": weight [2, 4, 3, 3] does not match 4 input channels with group 1
// CHECK-NEXT: note: see current operation: %0 = "graph.conv_transpose"
func.func @conv_transpose_channels(%x: tensor<1x4x5x5xf32>, %w: tensor<2x4x3x3xf32>) {
  %0 = graph.conv_transpose %x, %w : (tensor<1x4x5x5xf32>, tensor<2x4x3x3xf32>) -> tensor<1x4x7x7xf32> loc("deconv")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.conv_transpose' at "deconv": result #0 has type tensor<1x2x10x10xf32>, but the operands imply tensor<1x2x11x11xf32>
// CHECK-NEXT: note: see current operation: %0 = "graph.conv_transpose"
func.func @conv_transpose_result(%x: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf32>) {
  %0 = graph.conv_transpose %x, %w {strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x10x10xf32> loc("deconv")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.max_pool' at "pool": requires attribute 'kernel_shape'
// CHECK-NEXT: note: see current operation: %0 = "graph.max_pool"
func.func @pool_without_kernel(%x: tensor<1x3x8x8xf32>) {
  %0 = graph.max_pool %x : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32> loc("pool")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.avg_pool' at "pool": 'kernel_shape' needs 2 values, got 1
// CHECK-NEXT: note: see current operation: %0 = "graph.avg_pool"
func.func @pool_kernel_length(%x: tensor<1x3x8x8xf32>) {
  %0 = graph.avg_pool %x {kernel_shape = array<i64: 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32> loc("pool")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.max_pool' at "pool": kernel, strides and dilations must be positive
// CHECK-NEXT: note: see current operation: %0 = "graph.max_pool"
func.func @pool_zero_stride(%x: tensor<1x3x8x8xf32>) {
  %0 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 0, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32> loc("pool")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.max_pool' at "pool": result #0 has type tensor<1x3x4x4xf32>, but the operands imply tensor<1x3x3x3xf32>
// CHECK-NEXT: note: see current operation: %0 = "graph.max_pool"
func.func @pool_result(%x: tensor<1x3x7x7xf32>) {
  %0 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32> loc("pool")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.global_avg_pool' at "gap": input must have rank >= 3, got [3, 8]
// CHECK-NEXT: note: see current operation: %0 = "graph.global_avg_pool"
func.func @global_pool_rank(%x: tensor<3x8xf32>) {
  %0 = graph.global_avg_pool %x : (tensor<3x8xf32>) -> tensor<3x1xf32> loc("gap")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.batch_norm' at "bn": parameters must have shape [3], got [4]
// CHECK-NEXT: note: see current operation: %0 = "graph.batch_norm"
func.func @batch_norm_parameter(%x: tensor<2x3x4x4xf32>, %c: tensor<3xf32>, %v: tensor<4xf32>) {
  %0 = graph.batch_norm %x, %c, %c, %c, %v : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<2x3x4x4xf32> loc("bn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.batch_norm' at "bn": expects 5 operands, got 3
// CHECK-NEXT: note: see current operation: %0 = "graph.batch_norm"
func.func @batch_norm_operands(%x: tensor<2x3x4x4xf32>, %c: tensor<3xf32>) {
  %0 = graph.batch_norm %x, %c, %c : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32> loc("bn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.instance_norm' at "in": input must have rank >= 3
// CHECK-NEXT: note: see current operation: %0 = "graph.instance_norm"
func.func @instance_norm_rank(%x: tensor<2x3xf32>, %c: tensor<3xf32>) {
  %0 = graph.instance_norm %x, %c, %c : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("in")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.layer_norm' at "ln": shapes [5] and [8] do not broadcast
// CHECK-NEXT: note: see current operation: %0 = "graph.layer_norm"
func.func @layer_norm_scale(%x: tensor<2x5x8xf32>, %s: tensor<5xf32>) {
  %0 = graph.layer_norm %x, %s : (tensor<2x5x8xf32>, tensor<5xf32>) -> tensor<2x5x8xf32> loc("ln")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.rms_norm' at "rms": scale [5] does not broadcast to the input shape [2, 5, 8]
// CHECK-NEXT: note: see current operation: %0 = "graph.rms_norm"
func.func @rms_norm_scale(%x: tensor<2x5x8xf32>, %s: tensor<5xf32>) {
  %0 = graph.rms_norm %x, %s : (tensor<2x5x8xf32>, tensor<5xf32>) -> tensor<2x5x8xf32> loc("rms")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.rms_norm' at "rms": scale [3, 5, 8] does not broadcast to the input shape [2, 5, 8]
// CHECK-NEXT: note: see current operation: %0 = "graph.rms_norm"
func.func @rms_norm_scale_rank(%x: tensor<2x5x8xf32>, %s: tensor<3x5x8xf32>) {
  %0 = graph.rms_norm %x, %s : (tensor<2x5x8xf32>, tensor<3x5x8xf32>) -> tensor<2x5x8xf32> loc("rms")
  func.return
}

// -----
// The scale broadcasts to x one way only (ONNX's unidirectional broadcasting): never to a larger result.
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.rms_norm' at "rms": scale [2, 1, 8] does not broadcast to the input shape [5, 8]
// CHECK-NEXT: note: see current operation: %0 = "graph.rms_norm"
func.func @rms_norm_scale_grows(%x: tensor<5x8xf32>, %s: tensor<2x1x8xf32>) {
  %0 = graph.rms_norm %x, %s : (tensor<5x8xf32>, tensor<2x1x8xf32>) -> tensor<5x8xf32> loc("rms")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.rms_norm' at "rms": axis 3 is out of range for rank 3
// CHECK-NEXT: note: see current operation: %0 = "graph.rms_norm"
func.func @rms_norm_axis(%x: tensor<2x5x8xf32>, %s: tensor<8xf32>) {
  %0 = graph.rms_norm %x, %s {axis = 3 : i64} : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32> loc("rms")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.rms_norm' at "rms": axis -4 is out of range for rank 3
// CHECK-NEXT: note: see current operation: %0 = "graph.rms_norm"
func.func @rms_norm_negative_axis(%x: tensor<2x5x8xf32>, %s: tensor<8xf32>) {
  %0 = graph.rms_norm %x, %s {axis = -4 : i64} : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32> loc("rms")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.rms_norm' at "rms": operand must have a floating-point element type, got i32
// CHECK-NEXT: note: see current operation: %0 = "graph.rms_norm"
func.func @rms_norm_int(%x: tensor<2x8xi32>, %s: tensor<8xi32>) {
  %0 = graph.rms_norm %x, %s : (tensor<2x8xi32>, tensor<8xi32>) -> tensor<2x8xi32> loc("rms")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.rms_norm' at "rms": expects 2 operands, got 3
// CHECK-NEXT: note: see current operation: %0 = "graph.rms_norm"
func.func @rms_norm_bias(%x: tensor<2x8xf32>, %s: tensor<8xf32>) {
  %0 = graph.rms_norm %x, %s, %s : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32> loc("rms")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.softmax' at "softmax": axis 2 is out of range for rank 2
// CHECK-NEXT: note: see current operation: %0 = "graph.softmax"
func.func @softmax_axis(%x: tensor<2x10xf32>) {
  %0 = graph.softmax %x {axis = 2 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32> loc("softmax")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.safe_softmax' at "safe_softmax": operand must have a floating-point element type, got i1
// CHECK-NEXT: note: see current operation: %0 = "graph.safe_softmax"
func.func @safe_softmax_of_bool(%x: tensor<2x10xi1>) {
  %0 = graph.safe_softmax %x : (tensor<2x10xi1>) -> tensor<2x10xi1> loc("safe_softmax")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.log_softmax' at "log_softmax": operand must have a floating-point element type, got i32
// CHECK-NEXT: note: see current operation: %0 = "graph.log_softmax"
func.func @log_softmax_of_int(%x: tensor<2x10xi32>) {
  %0 = graph.log_softmax %x : (tensor<2x10xi32>) -> tensor<2x10xi32> loc("log_softmax")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.lrn' at "lrn": size must be positive
// CHECK-NEXT: note: see current operation: %0 = "graph.lrn"
func.func @lrn_size(%x: tensor<1x3x4x4xf32>) {
  %0 = graph.lrn %x {size = 0 : i64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> loc("lrn")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.gemm' at "gemm": contraction dims differ: 8 and 16
// CHECK-NEXT: note: see current operation: %0 = "graph.gemm"
func.func @gemm_contraction(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>) {
  %0 = graph.gemm %a, %b : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("gemm")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.gemm' at "gemm": operands must be matrices, got [2, 4, 8] and [8, 16]
// CHECK-NEXT: note: see current operation: %0 = "graph.gemm"
func.func @gemm_not_matrix(%a: tensor<2x4x8xf32>, %b: tensor<8x16xf32>) {
  %0 = graph.gemm %a, %b : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("gemm")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.gemm' at "gemm": shapes [4] and [4, 16] do not broadcast
// CHECK-NEXT: note: see current operation: %0 = "graph.gemm"
func.func @gemm_c(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4xf32>) {
  %0 = graph.gemm %a, %b, %c : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<4xf32>) -> tensor<4x16xf32> loc("gemm")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.matmul' at "matmul": contraction dims differ: [4, 8] x [4, 8]
// CHECK-NEXT: note: see current operation: %0 = "graph.matmul"
func.func @matmul_contraction(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  %0 = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("matmul")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.matmul' at "matmul": shapes [2] and [3] do not broadcast
// CHECK-NEXT: note: see current operation: %0 = "graph.matmul"
func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) {
  %0 = graph.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x4xf32>) -> tensor<2x4x4xf32> loc("matmul")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.rotary_embedding' at "rope": the rotated axis must have an even size, got shape [2, 5, 7]
// CHECK-NEXT: note: see current operation: %0 = "graph.rotary_embedding"
func.func @rope_odd_row(%x: tensor<2x5x7xf32>, %c: tensor<5x7xf32>) {
  %0 = graph.rotary_embedding %x, %c, %c : (tensor<2x5x7xf32>, tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<2x5x7xf32> loc("rope")
  func.return
}

// -----
// cos / sin broadcast to x one way only: never to a larger result.
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.rotary_embedding' at "rope": sin [3, 5, 8] does not broadcast to the input shape [2, 5, 8]
// CHECK-NEXT: note: see current operation: %0 = "graph.rotary_embedding"
func.func @rope_sin_shape(%x: tensor<2x5x8xf32>, %c: tensor<5x8xf32>, %s: tensor<3x5x8xf32>) {
  %0 = graph.rotary_embedding %x, %c, %s : (tensor<2x5x8xf32>, tensor<5x8xf32>, tensor<3x5x8xf32>) -> tensor<2x5x8xf32> loc("rope")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.rotary_embedding' at "rope": interleaved must be 0 or 1, got 2
// CHECK-NEXT: note: see current operation: %0 = "graph.rotary_embedding"
func.func @rope_interleaved(%x: tensor<2x5x8xf32>, %c: tensor<5x8xf32>) {
  %0 = graph.rotary_embedding %x, %c, %c {interleaved = 2 : i64} : (tensor<2x5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<2x5x8xf32> loc("rope")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.rotary_embedding' at "rope": operands must have one element type, got f16, f32
// CHECK-NEXT: note: see current operation: %0 = "graph.rotary_embedding"
func.func @rope_types(%x: tensor<2x5x8xf16>, %c: tensor<5x8xf32>) {
  %0 = graph.rotary_embedding %x, %c, %c : (tensor<2x5x8xf16>, tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<2x5x8xf16> loc("rope")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.kv_cache_write' at "kv": update [2, 1, 4] must match the cache [2, 16, 8] except along axis 1
// CHECK-NEXT: note: see current operation: %0 = "graph.kv_cache_write"
func.func @kv_row_width(%c: tensor<2x16x8xf16>, %u: tensor<2x1x4xf16>, %p: tensor<1xi64>) {
  %0 = graph.kv_cache_write %c, %u, %p : (tensor<2x16x8xf16>, tensor<2x1x4xf16>, tensor<1xi64>) -> tensor<2x16x8xf16> loc("kv")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.kv_cache_write' at "kv": position must be one integer, got tensor<2xi64>
// CHECK-NEXT: note: see current operation: %0 = "graph.kv_cache_write"
func.func @kv_positions(%c: tensor<2x16x8xf16>, %u: tensor<2x1x8xf16>, %p: tensor<2xi64>) {
  %0 = graph.kv_cache_write %c, %u, %p : (tensor<2x16x8xf16>, tensor<2x1x8xf16>, tensor<2xi64>) -> tensor<2x16x8xf16> loc("kv")
  func.return
}

// -----
// A constant position is checked when the op is verified: the rows must fit the cache.
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 4]]:3: 'graph.kv_cache_write' at "kv": position 15 with 2 row(s) passes the cache's maximum length 16
// CHECK-NEXT: note: see current operation: %0 = "graph.kv_cache_write"
func.func @kv_constant_position(%c: tensor<2x16x8xf16>, %u: tensor<2x2x8xf16>) {
  %p = graph.constant dense<15> : tensor<1xi64>
  %0 = graph.kv_cache_write %c, %u, %p : (tensor<2x16x8xf16>, tensor<2x2x8xf16>, tensor<1xi64>) -> tensor<2x16x8xf16> loc("kv")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.kv_cache_write' at "kv": cache and update must have one element type, got f16, f32
// CHECK-NEXT: note: see current operation: %0 = "graph.kv_cache_write"
func.func @kv_types(%c: tensor<2x16x8xf16>, %u: tensor<2x1x8xf32>, %p: tensor<1xi64>) {
  %0 = graph.kv_cache_write %c, %u, %p : (tensor<2x16x8xf16>, tensor<2x1x8xf32>, tensor<1xi64>) -> tensor<2x16x8xf16> loc("kv")
  func.return
}
