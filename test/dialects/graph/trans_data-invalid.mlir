// Verifier errors of graph.trans_data and of format encodings, one per `// -----` chunk.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.trans_data' at "t": src_format is NC1HWC0 but the operand is a plain tensor
func.func @plain_source(%x: tensor<1x20x4x4xf32>) {
  %a = graph.trans_data %x {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<1x20x4x4xf32>) -> tensor<1x20x4x4xf32> loc("t")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.trans_data' at "t": src_format 'NCDHW' is not a format; formats: ND, NCHW, NHWC, NC1HWC0, FRACTAL_Z, FRACTAL_NZ
func.func @unknown_format(%x: tensor<1x20x4x4xf32>) {
  %a = graph.trans_data %x {src_format = "NCDHW", dst_format = "ND"} : (tensor<1x20x4x4xf32>) -> tensor<1x20x4x4xf32> loc("t")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.trans_data' at "t": NC1HWC0 needs a 4-D tensor, got [20, 4]
func.func @rank(%x: tensor<20x4xf32>) {
  %a = graph.trans_data %x {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<20x4xf32>) -> tensor<20x4xf32> loc("t")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.trans_data' at "t": result must be tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>, got tensor<1x20x4x4xf32>
func.func @result_type(%x: tensor<1x20x4x4xf32>) {
  %a = graph.trans_data %x {src_format = "NCHW", dst_format = "NC1HWC0"} : (tensor<1x20x4x4xf32>) -> tensor<1x20x4x4xf32> loc("t")
  func.return
}

// -----
// The storage shape must follow from the origin shape and C0 (here 16 for f32, not 32).
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.relu' at "r": operand #0: type tensor<1x1x4x4x32xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>> should have the storage shape [1, 2, 4, 4, 16]
func.func @storage_shape(%x: tensor<1x1x4x4x32xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) {
  %a = graph.relu %x : (tensor<1x1x4x4x32xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) -> tensor<1x1x4x4x32xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>> loc("r")
  func.return
}

// -----
// CHECK: error: #graph.format: storage NCHW equals the origin: use a plain tensor
func.func @same_as_origin(%x: tensor<1x20x4x4xf32, #graph.format<NCHW, NCHW, [1, 20, 4, 4]>>) {
  %a = graph.relu %x : (tensor<1x20x4x4xf32, #graph.format<NCHW, NCHW, [1, 20, 4, 4]>>) -> tensor<1x20x4x4xf32, #graph.format<NCHW, NCHW, [1, 20, 4, 4]>> loc("r")
  func.return
}

// -----
// An op that rearranges elements takes plain tensors only.
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.transpose' at "t": takes plain tensors only, but operand #0 has a format encoding; convert with graph.trans_data first
func.func @nd_only(%x: tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) {
  %a = graph.transpose %x {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) -> tensor<1x20x4x4xf32> loc("t")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.add' at "a": operands must share one format, got FRACTAL_NZ, NC1HWC0; convert with graph.trans_data first
func.func @mixed(%x: tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>, %y: tensor<1x20x1x1x16x16xf32, #graph.format<FRACTAL_NZ, ND, [1, 20, 4, 4]>>) {
  %a = graph.add %x, %y : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>, tensor<1x20x1x1x16x16xf32, #graph.format<FRACTAL_NZ, ND, [1, 20, 4, 4]>>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>> loc("a")
  func.return
}

// -----
// A plain operand of an op on storage arrays must be a scalar.
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.mul' at "m": operands must share one format, got NC1HWC0, ND; convert with graph.trans_data first
func.func @plain_operand(%x: tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>, %y: tensor<1x20x4x4xf32>) {
  %a = graph.mul %x, %y : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>, tensor<1x20x4x4xf32>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>> loc("m")
  func.return
}

// -----
// Broadcasting over C would read the padding of a blocked operand.
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.mul' at "m": cannot run on its operands' format: operand [1, 1, 4, 4] broadcasts over axis 1, which NC1HWC0 blocks
func.func @broadcast_blocked(%x: tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>, %y: tensor<1x1x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 1, 4, 4]>>) {
  %a = graph.mul %x, %y : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>, tensor<1x1x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 1, 4, 4]>>) -> tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>> loc("m")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.relu' at "r": result #0 must be tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>: the format of its operands
func.func @result_format(%x: tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) {
  %a = graph.relu %x : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) -> tensor<1x20x4x4xf32> loc("r")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.concat' at "c": cannot run on its operands' format: a concat along C needs channel counts that are multiples of C0 = 16
func.func @concat_c(%x: tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) {
  %a = graph.concat %x, %x {axis = 1 : i64} : (tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>, tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>) -> tensor<1x3x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 40, 4, 4]>> loc("c")
  func.return
}

// -----
// FRACTAL_Z is for group = 1.
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.conv' at "c": operand #1 is FRACTAL_Z; it may be ND; convert with graph.trans_data first
func.func @grouped(%x: tensor<1x32x4x4xf32>, %w: tensor<9x2x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [32, 16, 3, 3]>>) {
  %a = graph.conv %x, %w {group = 2 : i64} : (tensor<1x32x4x4xf32>, tensor<9x2x16x16xf32, #graph.format<FRACTAL_Z, NCHW, [32, 16, 3, 3]>>) -> tensor<1x32x2x2xf32> loc("c")
  func.return
}

// -----
// CHECK: error: {{.*}}:[[# @LINE + 2]]:3: 'graph.max_pool' at "p": runs on plain or NC1HWC0 tensors, not FRACTAL_NZ
func.func @pool_nz(%x: tensor<1x1x1x1x16x16xf32, #graph.format<FRACTAL_NZ, ND, [1, 1, 4, 4]>>) {
  %a = graph.max_pool %x {kernel_shape = array<i64: 2, 2>} : (tensor<1x1x1x1x16x16xf32, #graph.format<FRACTAL_NZ, ND, [1, 1, 4, 4]>>) -> tensor<1x1x1x1x16x16xf32, #graph.format<FRACTAL_NZ, ND, [1, 1, 3, 3]>> loc("p")
  func.return
}
