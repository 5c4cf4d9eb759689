// graph-infer-symbolic-shapes refuses what it cannot prove for every size in the ranges, one
// error per chunk, naming the op and the dims.
// RUN: not geir-opt %s --split-input-file -p graph-infer-symbolic-shapes -o /dev/null 2>&1 | filecheck %s

// A Reshape with the top of the range baked in (TorchScript's nn.MultiheadAttention).
// CHECK: error: 'graph.reshape' at "baked": the element counts of the target [512, 12, 64] and of the operand [seq, 768]: 393216 and 768*seq (seq: 1~512) are not proven equal over the ranges
func.func @baked(%x: tensor<512x768xf32> {onnx.name = "x"}, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 0]], geir.range = [1, 512]}) {
  %t = graph.constant dense<[512, 12, 64]> : tensor<3xi64>
  %0 = graph.reshape %x, %t : (tensor<512x768xf32>, tensor<3xi64>) -> tensor<512x12x64xf32> loc("baked")
  func.return
}

// -----
// A symbol against a static size: seq broadcasts against 512 only at 1 or 512.
// CHECK-NEXT: error: 'graph.add' at "pos": operands dim -2: seq (1~512) and 512 are not proven equal over the ranges (seq (1~512) broadcasts only at 1)
func.func @static_size(%x: tensor<512x64xf32> {onnx.name = "x"}, %p: tensor<512x64xf32> {onnx.name = "p"}, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 0]], geir.range = [1, 512]}) {
  %0 = graph.add %x, %p : (tensor<512x64xf32>, tensor<512x64xf32>) -> tensor<512x64xf32> loc("pos")
  func.return
}

// -----
// Two symbols are two sizes, even with one range.
// CHECK-NEXT: error: 'graph.add' at "mix": operands dim -1: a (1~8) and b (1~8) are not proven equal over the ranges (a (1~8) broadcasts only at 1)
func.func @two_symbols(%x: tensor<8xf32> {onnx.name = "x"}, %y: tensor<8xf32> {onnx.name = "y"},
                       %a: tensor<1xi64> {onnx.name = "a.extent", geir.extent = [["x", 0]], geir.range = [1, 8]},
                       %b: tensor<1xi64> {onnx.name = "b.extent", geir.extent = [["y", 0]], geir.range = [1, 8]}) {
  %0 = graph.add %x, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> loc("mix")
  func.return
}

// -----
// A contraction over a symbol against a static size.
// CHECK-NEXT: error: 'graph.matmul' at "mm": the contracted dims: k (1~64) and 64 are not proven equal over the ranges
func.func @contracted(%x: tensor<4x64xf32> {onnx.name = "x"}, %w: tensor<64x8xf32> {onnx.name = "w"}, %k: tensor<1xi64> {onnx.name = "k.extent", geir.extent = [["x", 1]], geir.range = [1, 64]}) {
  %0 = graph.matmul %x, %w : (tensor<4x64xf32>, tensor<64x8xf32>) -> tensor<4x8xf32> loc("mm")
  func.return
}

// -----
// A -1 that is not an exact quotient for every size (the graph typed with `?` as parsed).
// CHECK-NEXT: error: 'graph.reshape' at "r": the -1 of [-1, 7]: 4*seq (seq: 1~16) elements over 7 is not exact for every size in the ranges
func.func @inexact(%x: tensor<?x4xf32> {onnx.name = "x"}, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 0]], geir.range = [1, 16]}) {
  %t = graph.constant dense<[-1, 7]> : tensor<2xi64>
  %0 = graph.reshape %x, %t : (tensor<?x4xf32>, tensor<2xi64>) -> tensor<?x7xf32> loc("r")
  func.return
}

// -----
// A strided window over a symbolic image size: the output size is a floor.
// CHECK-NEXT: error: 'graph.conv' at "c": spatial dim 2: the window's output size over h (8~64) with stride 2 is a floor, not a polynomial of the symbols
func.func @strided(%x: tensor<1x3x64x64xf32> {onnx.name = "x"}, %w: tensor<8x3x3x3xf32> {onnx.name = "w"}, %h: tensor<1xi64> {onnx.name = "h.extent", geir.extent = [["x", 2]], geir.range = [8, 64]}) {
  %0 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x64x64xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x32x32xf32> loc("c")
  func.return
}

// -----
// A split of a symbol in equal parts that do not divide it.
// CHECK-NEXT: error: 'graph.split' at "s": seq (1~16) in 2 equal parts is not exact for every size in the ranges
func.func @split(%x: tensor<16x4xf32> {onnx.name = "x"}, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 0]], geir.range = [1, 16]}) {
  %0:2 = graph.split %x {axis = 0 : i64, num_outputs = 2 : i64} : (tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) loc("s")
  func.return
}

// -----
// A strided slice over a symbol.
// CHECK-NEXT: error: 'graph.slice' at "sl": axis 0: a step of 2 over seq (1~16) is not a polynomial of the symbols
func.func @strided_slice(%x: tensor<16x4xf32> {onnx.name = "x"}, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 0]], geir.range = [1, 16]}) {
  %s = graph.constant dense<0> : tensor<1xi64>
  %e = graph.constant dense<16> : tensor<1xi64>
  %a = graph.constant dense<0> : tensor<1xi64>
  %st = graph.constant dense<2> : tensor<1xi64>
  %0 = graph.slice %x, %s, %e, %a, %st : (tensor<16x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x4xf32> loc("sl")
  func.return
}

// -----
// A squeeze of a symbol that may be more than 1.
// CHECK-NEXT: error: 'graph.squeeze' at "sq": squeezed dim 0: b (1~4) and 1 are not proven equal over the ranges
func.func @squeeze(%x: tensor<?x4xf32> {onnx.name = "x"}, %b: tensor<1xi64> {onnx.name = "b.extent", geir.extent = [["x", 0]], geir.range = [1, 4]}) {
  %0 = graph.squeeze %x {axes = array<i64: 0>} : (tensor<?x4xf32>) -> tensor<4xf32> loc("sq")
  func.return
}

// -----
// An op without a symbolic rule over a symbol.
// CHECK-NEXT: error: 'graph.top_k' at "tk": no symbolic shape rule for this op, and an operand's shape holds a symbol
func.func @no_rule(%x: tensor<8x16xf32> {onnx.name = "x"}, %b: tensor<1xi64> {onnx.name = "b.extent", geir.extent = [["x", 0]], geir.range = [1, 8]}) {
  %0:2 = graph.top_k %x {k = 4 : i64, axis = -1 : i64} : (tensor<8x16xf32>) -> (tensor<8x4xf32>, tensor<8x4xi64>) loc("tk")
  func.return
}

// -----
// A `?` that no extent argument names.
// CHECK-NEXT: error: argument 'x' dim 0 is dynamic, but no extent argument names it (geir.extent)
func.func @unnamed(%x: tensor<?x4xf32> {onnx.name = "x"}, %b: tensor<1xi64> {onnx.name = "b.extent", geir.extent = [["x", 1]], geir.range = [1, 4]}) {
  func.return
}

// -----
// A transposed conv over a symbolic spatial dim: its output size has no rule.
// CHECK-NEXT: error: 'graph.conv_transpose' at "deconv": only its batch dim may be symbolic (its output size over a symbolic channel or spatial dim has no rule)
func.func @deconv_spatial(%x: tensor<1x4x5x5xf32> {onnx.name = "x"}, %w: tensor<4x2x3x3xf32> {onnx.name = "w"},
                          %h: tensor<1xi64> {onnx.name = "h.extent", geir.extent = [["x", 2]], geir.range = [1, 5]}) {
  %0 = graph.conv_transpose %x, %w : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x7x7xf32> loc("deconv")
  func.return
}
