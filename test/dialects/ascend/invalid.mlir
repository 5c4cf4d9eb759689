// Every verifier error of the ascend dialect, one case per chunk.
// RUN: not geir-opt %s --split-input-file 2>&1 | filecheck %s

// --- buffers ---------------------------------------------------------------

// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.view': offset 48 must be a non-negative multiple of 32 bytes
func.func @f(%x: memref<4x64xf32, "gm">) {
  %v = ascend.view %x[48] : memref<4x64xf32, "gm"> to memref<2x64xf32, "gm">
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.view': bytes [768, 1280) of the result lie outside the source's 1024 bytes
func.func @f(%x: memref<4x64xf32, "gm">) {
  %v = ascend.view %x[768] : memref<4x64xf32, "gm"> to memref<2x64xf32, "gm">
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.view': result memref<2x64xf32, "ub"> must be in gm (views of on-chip buffers are memref.subview)
func.func @f(%x: memref<4x64xf32, "gm">) {
  %v = ascend.view %x[0] : memref<4x64xf32, "gm"> to memref<2x64xf32, "ub">
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.view': source memref<4x64xf32, strided<[128, 1]>, "gm"> must have the identity layout
func.func @f(%x: memref<4x64xf32, strided<[128, 1]>, "gm">) {
  %v = ascend.view %x[0] : memref<4x64xf32, strided<[128, 1]>, "gm"> to memref<2x64xf32, "gm">
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.view': belongs in the host program, not in a kernel
ascend.kernel @k(%x: memref<4x64xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %v = ascend.view %x[0] : memref<4x64xf32, "gm"> to memref<256xf32, "gm">
  ascend.return
}

// -----

// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.alloc': result memref<16x32xf32> needs an ascend memory space ("gm", "l1", "l0a", "l0b", "l0c", "ub", "bt", "fb")
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc : memref<16x32xf32>
  ascend.return
}

// -----

// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.alloc': result memref<16x32xf32, "hbm"> needs an ascend memory space ("gm", "l1", "l0a", "l0b", "l0c", "ub", "bt", "fb")
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc : memref<16x32xf32, "hbm">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.alloc': result memref<?x32xf32, "ub"> must have a static shape
ascend.kernel @k(%n: index) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = "ascend.alloc"() : () -> memref<?x32xf32, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.alloc': result memref<16x32xf32, strided<[64, 1]>, "ub"> must have the identity layout
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc : memref<16x32xf32, strided<[64, 1]>, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.alloc': memref<16x10xf16, "ub">: the innermost dim is 20 bytes, not a multiple of the 32-byte block of ub
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc : memref<16x10xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.alloc': result memref<16x8xf16, "l0a">: the last two dims must be multiples of 16 (whole fractals)
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a = ascend.alloc : memref<16x8xf16, "l0a">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.alloc': offset 16 must be a non-negative multiple of 32 in ub
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc {offset = 16 : i64} : memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.alloc': offset 256 must be a non-negative multiple of 512 in l0c
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a = ascend.alloc {offset = 256 : i64} : memref<16x16xf32, "l0c">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.alloc': uses l1, which a vector kernel (@k) does not have
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc : memref<16x16xf16, "l1">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.alloc': uses ub, which a cube kernel (@k) does not have
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a = ascend.alloc : memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.alloc': must be inside an ascend.kernel
func.func @f() {
  %a = ascend.alloc : memref<16x16xf16, "ub">
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.alloc': of a gm buffer belongs in the host program, not in a kernel
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc : memref<16x16xf16, "gm">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.constant': result type memref<2xf32> must be memref<2xf32, "gm">
func.func @f() {
  %w = "ascend.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> memref<2xf32>
  func.return
}

// --- host --------------------------------------------------------------------

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.stream': belongs in the host program, not in a kernel
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %s = ascend.stream 0
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.launch': launches @nope, which is not defined
func.func @f() {
  %s = ascend.stream 0
  ascend.launch @nope on %s() : ()
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.launch': launches @f, which is not an ascend.kernel
func.func @f() {
  %s = ascend.stream 0
  ascend.launch @f on %s() : ()
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 6]]:3: 'ascend.launch': passes (memref<16xf32, "gm">) to @k, which takes (memref<32xf32, "gm">)
ascend.kernel @k(%x: memref<32xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
func.func @f(%x: memref<16xf32, "gm">) {
  %s = ascend.stream 0
  ascend.launch @k on %s(%x) : (memref<16xf32, "gm">)
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 1]]:1: 'ascend.kernel': core_type must be one of cube, vector, mix, hccl, got 'tensor'
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "tensor"} {
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 1]]:1: 'ascend.kernel': block_dim must be >= 1, got 0
ascend.kernel @k() attributes {block_dim = 0 : i64, core_type = "vector"} {
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 1]]:1: 'ascend.kernel': argument #0 memref<16x16xf16, "ub"> must be a gm memref (kernels receive gm buffers)
ascend.kernel @k(%x: memref<16x16xf16, "ub">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 1]]:1: 'ascend.kernel': @k: 'ascend.wait_flag' MTE2 -> V id 0 has no ascend.set_flag MTE2 -> V id 0 before it in the kernel
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.set_flag MTE2 -> V id 1
  ascend.wait_flag MTE2 -> V id 0
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 1]]:1: 'ascend.kernel': @k: some ub buffers have an offset and some do not; memory planning sets all of them
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %a = ascend.alloc {offset = 0 : i64} : memref<16x16xf16, "ub">
  %b = ascend.alloc : memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.block_idx': must be inside an ascend.kernel
func.func @f() {
  %i = ascend.block_idx
  func.return
}

// --- DMA ---------------------------------------------------------------------

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': has no DMA path gm -> l0c; paths:
ascend.kernel @k(%x: memref<16x16xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c = ascend.alloc : memref<16x16xf32, "l0c">
  ascend.copy %x, %c : memref<16x16xf32, "gm"> to memref<16x16xf32, "l0c">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': source shape [16, 32] and destination shape [16, 16] differ
ascend.kernel @k(%x: memref<16x32xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf16, "ub">
  ascend.copy %x, %u : memref<16x32xf16, "gm"> to memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': copies f32 to f16; only the FIX pipe (from l0c) converts element types
ascend.kernel @k(%x: memref<16x16xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf16, "ub">
  ascend.copy %x, %u : memref<16x16xf32, "gm"> to memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': transpose is done by MTE1 (l1 -> l0a/l0b), not by MTE2 (gm -> ub)
ascend.kernel @k(%x: memref<16x16xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf16, "ub">
  ascend.copy %x, %u {transpose} : memref<16x16xf16, "gm"> to memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': relu is done by the FIX pipe (from l0c), not by MTE3 (ub -> gm)
ascend.kernel @k(%x: memref<16x16xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf16, "ub">
  ascend.copy %u, %x {relu} : memref<16x16xf16, "ub"> to memref<16x16xf16, "gm">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': layout must be one of nd2nz, nz2nd, nd2nc1hwc0, nc1hwc02nd, nc1hwc0, got 'nchw'
ascend.kernel @k(%x: memref<16x16xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf16, "ub">
  ascend.copy %x, %u {layout = "nchw"} : memref<16x16xf16, "gm"> to memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': nz2nd to [32, 32] needs a source of shape [2, 2, 16, 16], got [4, 16, 16]
ascend.kernel @k(%x: memref<4x16x16xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %l = ascend.alloc : memref<32x32xf16, "l1">
  ascend.copy %x, %l {layout = "nz2nd"} : memref<4x16x16xf16, "gm"> to memref<32x32xf16, "l1">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': nd2nc1hwc0 of [48, 64] needs a destination of shape [3, 64, 16], got [2, 64, 16]
ascend.kernel @k(%x: memref<2x64x16xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c = ascend.alloc : memref<48x64xf32, "l0c">
  ascend.copy %c, %x {layout = "nd2nc1hwc0"} : memref<48x64xf32, "l0c"> to memref<2x64x16xf32, "gm">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': nc1hwc02nd to [40, 64] needs a source of shape [3, 64, 16], got [3, 64, 8]
ascend.kernel @k(%x: memref<3x64x8xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<40x64xf32, "ub">
  ascend.copy %x, %u {layout = "nc1hwc02nd"} : memref<3x64x8xf32, "gm"> to memref<40x64xf32, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': nc1hwc0 copies NC1HWC0 boxes [C1, H, W, 16], got [4, 64] -> [4, 64]
ascend.kernel @k(%x: memref<4x64xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %l = ascend.alloc : memref<4x64xf32, "l1">
  ascend.copy %x, %l {layout = "nc1hwc0"} : memref<4x64xf32, "gm"> to memref<4x64xf32, "l1">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': pad cannot be combined with transpose or a fractal (nd2nz / nz2nd) layout change
ascend.kernel @k(%x: memref<30x64xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<4x2x16x16xf32, "ub">
  ascend.copy %x, %u {layout = "nd2nz", pad} : memref<30x64xf32, "gm"> to memref<4x2x16x16xf32, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.copy': with transpose needs a 2-D source and the transposed destination, got [32, 16] -> [32, 16]
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %l = ascend.alloc : memref<32x16xf16, "l1">
  %b = ascend.alloc : memref<32x16xf16, "l0b">
  ascend.copy %l, %b {transpose} : memref<32x16xf16, "l1"> to memref<32x16xf16, "l0b">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.copy': destination memref<4x8x8xf16, "ub">: rows must start on 32-byte blocks, but dim 1 steps 16 bytes
ascend.kernel @k(%x: memref<4x8x8xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<4x64xf16, "ub">
  %v = memref.expand_shape %u [[0], [1, 2]] output_shape [4, 8, 8] : memref<4x64xf16, "ub"> into memref<4x8x8xf16, "ub">
  ascend.copy %x, %v : memref<4x8x8xf16, "gm"> to memref<4x8x8xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.copy': source memref<16x16xf16, strided<[32, 2]>, "gm"> must be contiguous in its innermost dimension (DMA moves rows)
ascend.kernel @k(%x: memref<16x32xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf16, "ub">
  %t = memref.subview %x[0, 0] [16, 16] [1, 2] : memref<16x32xf16, "gm"> to memref<16x16xf16, strided<[32, 2]>, "gm">
  ascend.copy %t, %u : memref<16x16xf16, strided<[32, 2]>, "gm"> to memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': uses pipe MTE3, which a cube kernel (@k) does not have
ascend.kernel @k(%x: memref<16x16xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %l = ascend.alloc : memref<16x16xf16, "l1">
  ascend.copy %l, %x : memref<16x16xf16, "l1"> to memref<16x16xf16, "gm">
  ascend.return
}

// --- FIX quantization (ascend.copy with quant) ---------------------------------

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.copy': quantization is done by the FIX pipe (from l0c), not by MTE2
ascend.kernel @k(%x: memref<16x32xi32, "gm">) attributes {block_dim = 1 : i64, core_type = "mix"} {
  %u = ascend.alloc : memref<16x32xi8, "ub">
  %q = ascend.alloc : memref<8xf32, "fb">
  ascend.copy %x, %u, %q : memref<16x32xi32, "gm"> to memref<16x32xi8, "ub"> quant memref<8xf32, "fb">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.copy': quant must be in fb, got l1
ascend.kernel @k(%y: memref<16x16xi8, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c = ascend.alloc : memref<16x16xi32, "l0c">
  %q = ascend.alloc : memref<8xf32, "l1">
  ascend.copy %c, %y, %q : memref<16x16xi32, "l0c"> to memref<16x16xi8, "gm"> quant memref<8xf32, "l1">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.copy': quantizes i32 to f16, i8 or ui8, got f32 to f16
ascend.kernel @k(%y: memref<16x16xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c = ascend.alloc : memref<16x16xf32, "l0c">
  %q = ascend.alloc : memref<8xf32, "fb">
  ascend.copy %c, %y, %q : memref<16x16xf32, "l0c"> to memref<16x16xf16, "gm"> quant memref<8xf32, "fb">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.copy': a quant vector of 16 scales needs quant_axis (0: rows, 1: columns)
ascend.kernel @k(%y: memref<16x32xi8, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c = ascend.alloc : memref<16x32xi32, "l0c">
  %q = ascend.alloc : memref<16xf32, "fb">
  ascend.copy %c, %y, %q : memref<16x32xi32, "l0c"> to memref<16x32xi8, "gm"> quant memref<16xf32, "fb">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.copy': quant of 16 scales along axis 1 does not match the source [16, 32]
ascend.kernel @k(%y: memref<16x32xi8, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c = ascend.alloc : memref<16x32xi32, "l0c">
  %q = ascend.alloc : memref<16xf32, "fb">
  ascend.copy %c, %y, %q {quant_axis = 1 : i64} : memref<16x32xi32, "l0c"> to memref<16x32xi8, "gm"> quant memref<16xf32, "fb">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.copy': zero_point 200 is not a value of i8
ascend.kernel @k(%y: memref<16x32xi8, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c = ascend.alloc : memref<16x32xi32, "l0c">
  %q = ascend.alloc : memref<8xf32, "fb">
  %q1 = memref.subview %q[0] [1] [1] : memref<8xf32, "fb"> to memref<1xf32, strided<[1]>, "fb">
  ascend.copy %c, %y, %q1 {zero_point = 200 : i64} : memref<16x32xi32, "l0c"> to memref<16x32xi8, "gm"> quant memref<1xf32, strided<[1]>, "fb">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.copy': quant_axis and zero_point need a quant operand
ascend.kernel @k(%y: memref<16x32xi8, "gm">) attributes {block_dim = 1 : i64, core_type = "cube"} {
  %c = ascend.alloc : memref<16x32xi32, "l0c">
  ascend.copy %c, %y {zero_point = 1 : i64} : memref<16x32xi32, "l0c"> to memref<16x32xi8, "gm">
  ascend.return
}

// --- cube --------------------------------------------------------------------

// -----
// CHECK: error: {{.*}}:[[# @LINE + 6]]:3: 'ascend.mmad': a bias (and bias_axis) initialises c: it needs the bias operand and init
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a = ascend.alloc : memref<16x32xi8, "l0a">
  %b = ascend.alloc : memref<32x16xi8, "l0b">
  %c = ascend.alloc : memref<16x16xi32, "l0c">
  %t = ascend.alloc : memref<16xi32, "bt">
  ascend.mmad %a, %b, %c, %t {bias_axis = 0 : i64} : memref<16x32xi8, "l0a">, memref<32x16xi8, "l0b">, memref<16x16xi32, "l0c">, memref<16xi32, "bt">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 6]]:3: 'ascend.mmad': bias must be a 1-D vector of c's element type i32, got memref<16xf32, "bt">
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a = ascend.alloc : memref<16x32xi8, "l0a">
  %b = ascend.alloc : memref<32x16xi8, "l0b">
  %c = ascend.alloc : memref<16x16xi32, "l0c">
  %t = ascend.alloc : memref<16xf32, "bt">
  ascend.mmad %a, %b, %c, %t {init, bias_axis = 0 : i64} : memref<16x32xi8, "l0a">, memref<32x16xi8, "l0b">, memref<16x16xi32, "l0c">, memref<16xf32, "bt">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 6]]:3: 'ascend.mmad': a bias of 16 along axis 1 does not match c [16, 32]
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a = ascend.alloc : memref<16x32xi8, "l0a">
  %b = ascend.alloc : memref<32x32xi8, "l0b">
  %c = ascend.alloc : memref<16x32xi32, "l0c">
  %t = ascend.alloc : memref<16xi32, "bt">
  ascend.mmad %a, %b, %c, %t {init, bias_axis = 1 : i64} : memref<16x32xi8, "l0a">, memref<32x32xi8, "l0b">, memref<16x32xi32, "l0c">, memref<16xi32, "bt">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.alloc': uses bt, which a vector kernel (@k) does not have
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %t = ascend.alloc : memref<16xi32, "bt">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.mmad': a must be in l0a, got l0b
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a = ascend.alloc : memref<16x16xf16, "l0b">
  %b = ascend.alloc : memref<16x16xf16, "l0b">
  %c = ascend.alloc : memref<16x16xf32, "l0c">
  ascend.mmad %a, %b, %c : memref<16x16xf16, "l0b">, memref<16x16xf16, "l0b">, memref<16x16xf32, "l0c">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.mmad': shapes do not chain: a [16, 32] x b [16, 16] -> c [16, 16]
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a = ascend.alloc : memref<16x32xf16, "l0a">
  %b = ascend.alloc : memref<16x16xf16, "l0b">
  %c = ascend.alloc : memref<16x16xf32, "l0c">
  ascend.mmad %a, %b, %c : memref<16x32xf16, "l0a">, memref<16x16xf16, "l0b">, memref<16x16xf32, "l0c">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.mmad': computes f16 x f16 -> f16; the cube does bf16 x bf16 -> f32, f16 x f16 -> f32, f32 x f32 -> f32, i8 x i8 -> i32
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a = ascend.alloc : memref<16x16xf16, "l0a">
  %b = ascend.alloc : memref<16x16xf16, "l0b">
  %c = ascend.alloc : memref<16x16xf16, "l0c">
  ascend.mmad %a, %b, %c : memref<16x16xf16, "l0a">, memref<16x16xf16, "l0b">, memref<16x16xf16, "l0c">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.mmad': computes bf16 x f16 -> f32; the cube does bf16 x bf16 -> f32
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a = ascend.alloc : memref<16x16xbf16, "l0a">
  %b = ascend.alloc : memref<16x16xf16, "l0b">
  %c = ascend.alloc : memref<16x16xf32, "l0c">
  ascend.mmad %a, %b, %c : memref<16x16xbf16, "l0a">, memref<16x16xf16, "l0b">, memref<16x16xf32, "l0c">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.mmad': computes bf16 x bf16 -> bf16; the cube does bf16 x bf16 -> f32
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a = ascend.alloc : memref<16x16xbf16, "l0a">
  %b = ascend.alloc : memref<16x16xbf16, "l0b">
  %c = ascend.alloc : memref<16x16xbf16, "l0c">
  ascend.mmad %a, %b, %c : memref<16x16xbf16, "l0a">, memref<16x16xbf16, "l0b">, memref<16x16xbf16, "l0c">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.mmad': M=32, K=16, N=32: M and N must be multiples of 16 and K of 32
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  %a = ascend.alloc : memref<32x16xi8, "l0a">
  %b = ascend.alloc : memref<16x32xi8, "l0b">
  %c = ascend.alloc : memref<32x32xi32, "l0c">
  ascend.mmad %a, %b, %c : memref<32x16xi8, "l0a">, memref<16x32xi8, "l0b">, memref<32x32xi32, "l0c">
  ascend.return
}

// --- vector ------------------------------------------------------------------

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.vadd': operand #2 must be in ub, got gm
ascend.kernel @k(%x: memref<16x16xf16, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf16, "ub">
  ascend.vadd %u, %u, %x : memref<16x16xf16, "ub">, memref<16x16xf16, "ub">, memref<16x16xf16, "gm">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.vadd': source memref<16x32xf16, "ub"> must have the destination's shape and type memref<16x16xf16, "ub">
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf16, "ub">
  %v = ascend.alloc : memref<16x32xf16, "ub">
  ascend.vadd %v, %u, %u : memref<16x32xf16, "ub">, memref<16x16xf16, "ub">, memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.vexp': needs a floating-point element type, got i32
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x8xi32, "ub">
  ascend.vexp %u, %u : memref<16x8xi32, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.vadds': scalar operand #1 has type f32, the vectors f16
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf16, "ub">
  %s = arith.constant 1.0 : f32
  ascend.vadds %u, %s, %u : memref<16x16xf16, "ub">, f32, memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.vcmp': destination must be an i1 mask of shape [16, 16], got memref<16x16xf16, "ub">
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf16, "ub">
  ascend.vcmp %u, %u, %u {mode = "lt"} : memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.vcmp': mode must be one of eq, ne, lt, le, gt, ge, got 'less'
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf16, "ub">
  %m = ascend.alloc : memref<16x32xi1, "ub">
  %n = memref.subview %m[0, 0] [16, 16] [1, 1] : memref<16x32xi1, "ub"> to memref<16x16xi1, strided<[32, 1]>, "ub">
  ascend.vcmp %u, %u, %n {mode = "less"} : memref<16x16xf16, "ub">, memref<16x16xf16, "ub">, memref<16x16xi1, strided<[32, 1]>, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.vreduce': reducing [16, 16] over [1] gives [16, 1] f16 (dims kept as 1), got memref<16x16xf16, "ub">
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf16, "ub">
  ascend.vreduce %u, %u {kind = "sum"} : memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.vreduce': kind must be one of sum, max, min, got 'mean'
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf16, "ub">
  ascend.vreduce %u, %u {kind = "mean"} : memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.vbrcb': cannot broadcast memref<16x32xf16, "ub"> to memref<16x16xf16, "ub">
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf16, "ub">
  %v = ascend.alloc : memref<16x32xf16, "ub">
  ascend.vbrcb %v, %u : memref<16x32xf16, "ub">, memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.vtranspose': transposing [16, 32] by [1, 0] gives [32, 16], got memref<16x32xf16, "ub">
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %v = ascend.alloc : memref<16x32xf16, "ub">
  ascend.vtranspose %v, %v : memref<16x32xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.vcast': round applies to float -> integer casts only
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xf32, "ub">
  %v = ascend.alloc : memref<16x16xf16, "ub">
  ascend.vcast %u, %v {round = "floor"} : memref<16x16xf32, "ub">, memref<16x16xf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.vadd': the vector unit has no bf16 arithmetic: compute in f32 (ascend.vcast bf16 <-> f32 around it)
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xbf16, "ub">
  ascend.vadd %u, %u, %u : memref<16x16xbf16, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.vcmp': the vector unit has no bf16 arithmetic
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x32xbf16, "ub">
  %m = ascend.alloc : memref<16x32xi1, "ub">
  ascend.vcmp %u, %u, %m {mode = "lt"} : memref<16x32xbf16, "ub">, memref<16x32xbf16, "ub">, memref<16x32xi1, "ub">
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 4]]:3: 'ascend.vcast': converts bf16 to f16; bf16 converts to and from f32 only
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  %u = ascend.alloc : memref<16x16xbf16, "ub">
  %v = ascend.alloc : memref<16x16xf16, "ub">
  ascend.vcast %u, %v : memref<16x16xbf16, "ub">, memref<16x16xf16, "ub">
  ascend.return
}

// --- sync --------------------------------------------------------------------

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.set_flag': unknown pipe 'MTE4'; pipes: S, V, M, MTE1, MTE2, MTE3, FIX
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.set_flag MTE4 -> V id 0
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.set_flag': needs two different pipes, got V -> V (use ascend.pipe_barrier V)
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.set_flag V -> V id 0
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.wait_flag': event id 8 must be in 0..7
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.wait_flag MTE2 -> V id 8
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.set_flag': uses pipe V, which a cube kernel (@k) does not have; its pipes are S, M, MTE1, MTE2, FIX
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "cube"} {
  ascend.set_flag MTE2 -> V id 0
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.set_flag': must be inside an ascend.kernel
func.func @f() {
  ascend.set_flag MTE2 -> V id 0
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.pipe_barrier': unknown pipe 'X'; pipes: S, V, M, MTE1, MTE2, MTE3, FIX, ALL
ascend.kernel @k() attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.pipe_barrier X
  ascend.return
}

// --- gears -----------------------------------------------------------------

// -----
// CHECK: error: {{.*}}:[[# @LINE + 6]]:1: 'ascend.gears': program @gear_2 is not a module beside this op
builtin.module @gear_0 {
  func.func @main(%x: memref<1x8xf32, "gm"> {onnx.name = "x"}) {
    func.return
  }
}
ascend.gears {option = "dynamic_batch_size", programs = [@gear_0, @gear_2]}

// -----

// CHECK: error: {{.*}}:[[# @LINE + 6]]:1: 'ascend.gears': lists 1 program(s); a geared model has 2 to 100
builtin.module @gear_0 {
  func.func @main(%x: memref<1x8xf32, "gm"> {onnx.name = "x"}) {
    func.return
  }
}
ascend.gears {option = "dynamic_batch_size", programs = [@gear_0]}

// -----

// CHECK: error: {{.*}}:[[# @LINE + 11]]:1: 'ascend.gears': program @gear_1 takes other inputs than @gear_0 (count, element types or ranks)
builtin.module @gear_0 {
  func.func @main(%x: memref<1x8xf32, "gm"> {onnx.name = "x"}) {
    func.return
  }
}
builtin.module @gear_1 {
  func.func @main(%x: memref<4x8xf16, "gm"> {onnx.name = "x"}) {
    func.return
  }
}
ascend.gears {option = "dynamic_batch_size", programs = [@gear_0, @gear_1]}

// -----

// CHECK: error: {{.*}}:[[# @LINE + 11]]:1: 'ascend.gears': programs @gear_0 and @gear_1 take the same shapes
builtin.module @gear_0 {
  func.func @main(%x: memref<1x8xf32, "gm"> {onnx.name = "x"}, %y: memref<1x8xf32, "gm"> {ascend.output}) {
    func.return
  }
}
builtin.module @gear_1 {
  func.func @main(%x: memref<1x8xf32, "gm"> {onnx.name = "x"}, %y: memref<1x8xf32, "gm"> {ascend.output}) {
    func.return
  }
}
ascend.gears {option = "dynamic_batch_size", programs = [@gear_0, @gear_1]}

// -----

// CHECK: error: {{.*}}:[[# @LINE + 11]]:1: 'ascend.gears': program @gear_1 has no shape range (no argument marked geir.extent): a range bucket is a shape-range program
builtin.module @gear_0 {
  func.func @main(%x: memref<4x8xf32, "gm"> {onnx.name = "x"}, %n: memref<1xi64, "gm"> {onnx.name = "b.extent", geir.extent = [["x", 0 : i64]], geir.range = [1 : i64, 4 : i64]}) {
    func.return
  }
}
builtin.module @gear_1 {
  func.func @main(%x: memref<8x8xf32, "gm"> {onnx.name = "x"}, %n: memref<1xi64, "gm"> {onnx.name = "b.extent"}) {
    func.return
  }
}
ascend.gears {option = "range_buckets", programs = [@gear_0, @gear_1]}

// --- sub_block ----------------------------------------------------------------

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.sub_block': is a vector core of a mix kernel's block; @vec is vector
ascend.kernel @vec(%s: memref<16x64xf32, "gm">) attributes {core_type = "vector", block_dim = 1 : i64} {
  %u = ascend.alloc : memref<16x64xf32, "ub">
  ascend.sub_block 1 {
    ascend.copy %s, %u : memref<16x64xf32, "gm"> to memref<16x64xf32, "ub">
  }
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'ascend.sub_block': holds {{.*}}ascend.mmad{{.*}} on M: a vector core runs V, MTE3 and MTE2 into ub only (the cube's work stays outside)
ascend.kernel @k(%s: memref<16x16xf16, "gm">) attributes {core_type = "mix", block_dim = 1 : i64} {
  %a = ascend.alloc : memref<16x16xf16, "l0a">
  %b = ascend.alloc : memref<16x16xf16, "l0b">
  %c = ascend.alloc : memref<16x16xf32, "l0c">
  ascend.sub_block 0 {
    ascend.mmad %a, %b, %c {init} : memref<16x16xf16, "l0a">, memref<16x16xf16, "l0b">, memref<16x16xf32, "l0c">
  }
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.sub_block': holds {{.*}}ascend.copy{{.*}} on MTE2: a vector core runs V, MTE3 and MTE2 into ub only (the cube's work stays outside)
ascend.kernel @k(%s: memref<16x64xf16, "gm">) attributes {core_type = "mix", block_dim = 1 : i64} {
  %l = ascend.alloc : memref<16x64xf16, "l1">
  ascend.sub_block 0 {
    ascend.copy %s, %l : memref<16x64xf16, "gm"> to memref<16x64xf16, "l1">
  }
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 3]]:3: 'ascend.sub_block': cannot hold another ascend.sub_block
ascend.kernel @k(%s: memref<16x64xf16, "gm">) attributes {core_type = "mix", block_dim = 1 : i64} {
  %u = ascend.alloc : memref<16x64xf16, "ub">
  ascend.sub_block 0 {
    ascend.sub_block 1 {
      ascend.copy %s, %u : memref<16x64xf16, "gm"> to memref<16x64xf16, "ub">
    }
  }
  ascend.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'ascend.sub_block': must be inside an ascend.kernel
func.func @f() {
  ascend.sub_block 0 {
  }
  func.return
}
