// graph-recognize-rotary: a decomposed rotary embedding (x * cos + rotate(x) * sin, with
// rotate the halves' concat(-x2, x1) or GPT-J's interleaved stack(-odd, even)) becomes one
// graph.rotary_embedding located at every node it replaces; anything else is left as it is.
// RUN: geir-opt %s --split-input-file -p graph-recognize-rotary | filecheck %s
// The rewrite is a fixed point: running it twice changes nothing more.
// RUN: geir-opt %s --split-input-file -p graph-recognize-rotary,graph-recognize-rotary | filecheck %s

// rotate_half as the TorchScript exporter writes it: slices, neg, concat, the two products.
// CHECK-LABEL: func.func @halves(
// CHECK-NEXT:    %y = graph.rotary_embedding %x, %cos, %sin {interleaved = 0 : i64} : (tensor<1x2x8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<1x2x8x64xf32> loc(fused["x1", "x2", "neg", "cat", "mul_sin", "mul_cos", "add"])
// CHECK-NEXT:    func.return %y
func.func @halves(%x: tensor<1x2x8x64xf32>, %cos: tensor<8x64xf32>, %sin: tensor<8x64xf32>) -> tensor<1x2x8x64xf32> {
  %axis = graph.constant dense<3> : tensor<1xi64>
  %zero = graph.constant dense<0> : tensor<1xi64>
  %half = graph.constant dense<32> : tensor<1xi64>
  %end = graph.constant dense<9223372036854775807> : tensor<1xi64>
  %one = graph.constant dense<1> : tensor<1xi64>
  %x1 = graph.slice %x, %zero, %half, %axis, %one : (tensor<1x2x8x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x8x32xf32> loc("x1")
  %x2 = graph.slice %x, %half, %end, %axis, %one : (tensor<1x2x8x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x8x32xf32> loc("x2")
  %n = graph.neg %x2 : (tensor<1x2x8x32xf32>) -> tensor<1x2x8x32xf32> loc("neg")
  %rot = graph.concat %n, %x1 {axis = -1 : i64} : (tensor<1x2x8x32xf32>, tensor<1x2x8x32xf32>) -> tensor<1x2x8x64xf32> loc("cat")
  %a = graph.mul %x, %cos : (tensor<1x2x8x64xf32>, tensor<8x64xf32>) -> tensor<1x2x8x64xf32> loc("mul_cos")
  %b = graph.mul %rot, %sin : (tensor<1x2x8x64xf32>, tensor<8x64xf32>) -> tensor<1x2x8x64xf32> loc("mul_sin")
  %y = graph.add %a, %b : (tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>) -> tensor<1x2x8x64xf32> loc("add")
  func.return %y : tensor<1x2x8x64xf32>
}

// -----

// The dynamo exporter's order: the products' operands swapped, the rotated product first in
// the add, slices with a negative axis; cos / sin of another shape broadcast to x.
// CHECK-LABEL: func.func @swapped_operands(
// CHECK-NEXT:    %y = graph.rotary_embedding %x, %cos, %sin {interleaved = 0 : i64} : (tensor<2x8x4x16xf16>, tensor<2x8x1x16xf16>, tensor<2x8x1x16xf16>) -> tensor<2x8x4x16xf16>
// CHECK-NEXT:    func.return %y
func.func @swapped_operands(%x: tensor<2x8x4x16xf16>, %cos: tensor<2x8x1x16xf16>, %sin: tensor<2x8x1x16xf16>) -> tensor<2x8x4x16xf16> {
  %axis = graph.constant dense<-1> : tensor<1xi64>
  %zero = graph.constant dense<0> : tensor<1xi64>
  %half = graph.constant dense<8> : tensor<1xi64>
  %end = graph.constant dense<16> : tensor<1xi64>
  %x1 = graph.slice %x, %zero, %half, %axis : (tensor<2x8x4x16xf16>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x8x4x8xf16>
  %x2 = graph.slice %x, %half, %end, %axis : (tensor<2x8x4x16xf16>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x8x4x8xf16>
  %n = graph.neg %x2 : (tensor<2x8x4x8xf16>) -> tensor<2x8x4x8xf16>
  %rot = graph.concat %n, %x1 {axis = 3 : i64} : (tensor<2x8x4x8xf16>, tensor<2x8x4x8xf16>) -> tensor<2x8x4x16xf16>
  %b = graph.mul %sin, %rot : (tensor<2x8x1x16xf16>, tensor<2x8x4x16xf16>) -> tensor<2x8x4x16xf16>
  %a = graph.mul %cos, %x : (tensor<2x8x1x16xf16>, tensor<2x8x4x16xf16>) -> tensor<2x8x4x16xf16>
  %y = graph.add %b, %a : (tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>) -> tensor<2x8x4x16xf16>
  func.return %y : tensor<2x8x4x16xf16>
}

// -----

// GPT-J's rotate_every_two: even / odd elements (step 2), stacked at a new last axis, flattened.
// CHECK-LABEL: func.func @interleaved(
// CHECK-NEXT:    %y = graph.rotary_embedding %x, %cos, %sin {interleaved = 1 : i64} : (tensor<1x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<1x8x16xf32>
// CHECK-NEXT:    func.return %y
func.func @interleaved(%x: tensor<1x8x16xf32>, %cos: tensor<8x16xf32>, %sin: tensor<8x16xf32>) -> tensor<1x8x16xf32> {
  %axis = graph.constant dense<2> : tensor<1xi64>
  %zero = graph.constant dense<0> : tensor<1xi64>
  %one = graph.constant dense<1> : tensor<1xi64>
  %end = graph.constant dense<16> : tensor<1xi64>
  %two = graph.constant dense<2> : tensor<1xi64>
  %shape = graph.constant dense<[1, 8, 16]> : tensor<3xi64>
  %even = graph.slice %x, %zero, %end, %axis, %two : (tensor<1x8x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x8x8xf32>
  %odd = graph.slice %x, %one, %end, %axis, %two : (tensor<1x8x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x8x8xf32>
  %n = graph.neg %odd : (tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  %n1 = graph.unsqueeze %n {axes = array<i64: -1>} : (tensor<1x8x8xf32>) -> tensor<1x8x8x1xf32>
  %e1 = graph.unsqueeze %even {axes = array<i64: -1>} : (tensor<1x8x8xf32>) -> tensor<1x8x8x1xf32>
  %st = graph.concat %n1, %e1 {axis = -1 : i64} : (tensor<1x8x8x1xf32>, tensor<1x8x8x1xf32>) -> tensor<1x8x8x2xf32>
  %rot = graph.reshape %st, %shape : (tensor<1x8x8x2xf32>, tensor<3xi64>) -> tensor<1x8x16xf32>
  %a = graph.mul %x, %cos : (tensor<1x8x16xf32>, tensor<8x16xf32>) -> tensor<1x8x16xf32>
  %b = graph.mul %rot, %sin : (tensor<1x8x16xf32>, tensor<8x16xf32>) -> tensor<1x8x16xf32>
  %y = graph.add %a, %b : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  func.return %y : tensor<1x8x16xf32>
}

// -----

// Near-misses, each left alone: the halves split off the middle, the halves swapped
// (concat(x1, -x2): the rotation the other way), the negation on the first half, a slice of
// another tensor, a cos that broadcasts x to a larger shape, the rotated value returned too.
// CHECK-LABEL: func.func @off_middle(
// CHECK-NOT:     graph.rotary_embedding
// CHECK:         func.return
func.func @off_middle(%x: tensor<8x64xf32>, %cos: tensor<8x64xf32>, %sin: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %axis = graph.constant dense<1> : tensor<1xi64>
  %zero = graph.constant dense<0> : tensor<1xi64>
  %cut = graph.constant dense<30> : tensor<1xi64>
  %end = graph.constant dense<64> : tensor<1xi64>
  %x1 = graph.slice %x, %zero, %cut, %axis : (tensor<8x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x30xf32>
  %x2 = graph.slice %x, %cut, %end, %axis : (tensor<8x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x34xf32>
  %n = graph.neg %x2 : (tensor<8x34xf32>) -> tensor<8x34xf32>
  %rot = graph.concat %n, %x1 {axis = 1 : i64} : (tensor<8x34xf32>, tensor<8x30xf32>) -> tensor<8x64xf32>
  %a = graph.mul %x, %cos : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %b = graph.mul %rot, %sin : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %y = graph.add %a, %b : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  func.return %y : tensor<8x64xf32>
}

// -----

// CHECK-LABEL: func.func @swapped_halves(
// CHECK-NOT:     graph.rotary_embedding
// CHECK:         func.return
func.func @swapped_halves(%x: tensor<8x64xf32>, %cos: tensor<8x64xf32>, %sin: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %axis = graph.constant dense<1> : tensor<1xi64>
  %zero = graph.constant dense<0> : tensor<1xi64>
  %half = graph.constant dense<32> : tensor<1xi64>
  %end = graph.constant dense<64> : tensor<1xi64>
  %x1 = graph.slice %x, %zero, %half, %axis : (tensor<8x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x32xf32>
  %x2 = graph.slice %x, %half, %end, %axis : (tensor<8x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x32xf32>
  %n = graph.neg %x2 : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %rot = graph.concat %x1, %n {axis = 1 : i64} : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x64xf32>
  %a = graph.mul %x, %cos : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %b = graph.mul %rot, %sin : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %y = graph.add %a, %b : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  func.return %y : tensor<8x64xf32>
}

// -----

// CHECK-LABEL: func.func @negated_first_half(
// CHECK-NOT:     graph.rotary_embedding
// CHECK:         func.return
func.func @negated_first_half(%x: tensor<8x64xf32>, %cos: tensor<8x64xf32>, %sin: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %axis = graph.constant dense<1> : tensor<1xi64>
  %zero = graph.constant dense<0> : tensor<1xi64>
  %half = graph.constant dense<32> : tensor<1xi64>
  %end = graph.constant dense<64> : tensor<1xi64>
  %x1 = graph.slice %x, %zero, %half, %axis : (tensor<8x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x32xf32>
  %x2 = graph.slice %x, %half, %end, %axis : (tensor<8x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x32xf32>
  %n = graph.neg %x1 : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %rot = graph.concat %n, %x2 {axis = 1 : i64} : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x64xf32>
  %a = graph.mul %x, %cos : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %b = graph.mul %rot, %sin : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %y = graph.add %a, %b : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  func.return %y : tensor<8x64xf32>
}

// -----

// CHECK-LABEL: func.func @other_tensor(
// CHECK-NOT:     graph.rotary_embedding
// CHECK:         func.return
func.func @other_tensor(%x: tensor<8x64xf32>, %z: tensor<8x64xf32>, %cos: tensor<8x64xf32>, %sin: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %axis = graph.constant dense<1> : tensor<1xi64>
  %zero = graph.constant dense<0> : tensor<1xi64>
  %half = graph.constant dense<32> : tensor<1xi64>
  %end = graph.constant dense<64> : tensor<1xi64>
  %x1 = graph.slice %z, %zero, %half, %axis : (tensor<8x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x32xf32>
  %x2 = graph.slice %z, %half, %end, %axis : (tensor<8x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x32xf32>
  %n = graph.neg %x2 : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %rot = graph.concat %n, %x1 {axis = 1 : i64} : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x64xf32>
  %a = graph.mul %x, %cos : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %b = graph.mul %rot, %sin : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %y = graph.add %a, %b : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  func.return %y : tensor<8x64xf32>
}

// -----

// CHECK-LABEL: func.func @cos_widens_x(
// CHECK-NOT:     graph.rotary_embedding
// CHECK:         func.return
func.func @cos_widens_x(%x: tensor<8x64xf32>, %cos: tensor<2x8x64xf32>, %sin: tensor<8x64xf32>) -> tensor<2x8x64xf32> {
  %axis = graph.constant dense<1> : tensor<1xi64>
  %zero = graph.constant dense<0> : tensor<1xi64>
  %half = graph.constant dense<32> : tensor<1xi64>
  %end = graph.constant dense<64> : tensor<1xi64>
  %x1 = graph.slice %x, %zero, %half, %axis : (tensor<8x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x32xf32>
  %x2 = graph.slice %x, %half, %end, %axis : (tensor<8x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x32xf32>
  %n = graph.neg %x2 : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %rot = graph.concat %n, %x1 {axis = 1 : i64} : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x64xf32>
  %a = graph.mul %x, %cos : (tensor<8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %b = graph.mul %rot, %sin : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %y = graph.add %a, %b : (tensor<2x8x64xf32>, tensor<8x64xf32>) -> tensor<2x8x64xf32>
  func.return %y : tensor<2x8x64xf32>
}

// -----

// CHECK-LABEL: func.func @rotation_returned(
// CHECK-NOT:     graph.rotary_embedding
// CHECK:         func.return
func.func @rotation_returned(%x: tensor<8x64xf32>, %cos: tensor<8x64xf32>, %sin: tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %axis = graph.constant dense<1> : tensor<1xi64>
  %zero = graph.constant dense<0> : tensor<1xi64>
  %half = graph.constant dense<32> : tensor<1xi64>
  %end = graph.constant dense<64> : tensor<1xi64>
  %x1 = graph.slice %x, %zero, %half, %axis : (tensor<8x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x32xf32>
  %x2 = graph.slice %x, %half, %end, %axis : (tensor<8x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x32xf32>
  %n = graph.neg %x2 : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %rot = graph.concat %n, %x1 {axis = 1 : i64} : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x64xf32>
  %a = graph.mul %x, %cos : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %b = graph.mul %rot, %sin : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %y = graph.add %a, %b : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  func.return %y, %rot : tensor<8x64xf32>, tensor<8x64xf32>
}
