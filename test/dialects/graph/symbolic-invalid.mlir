// The verifier of ops with symbolic dims (`?` types, geir.dims): the dims must be what the
// operands' imply over the extents' ranges. One error per chunk.
// RUN: not geir-opt %s --split-input-file -o /dev/null 2>&1 | filecheck %s

// CHECK: error: {{.*}}:[[# @LINE + 5]]:3: 'graph.add' at "a": result #0 has dims [batch, 768], but the operands imply [seq, 768]
// CHECK-NEXT: note: see current operation
func.func @other_symbol(%x: tensor<?x768xf32> {onnx.name = "x"}, %m: tensor<?xf32> {onnx.name = "m"}, %b: tensor<768xf32>,
                        %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 0]], geir.range = [1, 512]},
                        %bn: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["m", 0]], geir.range = [1, 8]}) {
  %0 = graph.add %x, %b attributes {geir.dims = [["batch", 768]]} : (tensor<?x768xf32>, tensor<768xf32>) -> tensor<?x768xf32> loc("a")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.add' at "a": has geir.dims in 'batch', which no extent argument of the function declares
// CHECK-NEXT: note: see current operation
func.func @undeclared(%x: tensor<?x768xf32> {onnx.name = "x"}, %b: tensor<768xf32>, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 0]], geir.range = [1, 512]}) {
  %0 = graph.add %x, %b attributes {geir.dims = [["batch", 768]]} : (tensor<?x768xf32>, tensor<768xf32>) -> tensor<?x768xf32> loc("a")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.relu' at "r": result #0 type tensor<512x768xf32> does not match geir.dims [seq, 768]
// CHECK-NEXT: note: see current operation
func.func @static_type(%x: tensor<?x768xf32> {onnx.name = "x"}, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 0]], geir.range = [1, 512]}) {
  %0 = graph.relu %x attributes {geir.dims = [["seq", 768]]} : (tensor<?x768xf32>) -> tensor<512x768xf32> loc("r")
  func.return
}

// -----
// A static size where the range does not prove the symbol equal to it.
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.matmul' at "mm": the contracted dims: k (1~64) and 64 are not proven equal over the ranges
// CHECK-NEXT: note: see current operation
func.func @contracted(%x: tensor<4x?xf32> {onnx.name = "x"}, %w: tensor<64x8xf32>, %k: tensor<1xi64> {onnx.name = "k.extent", geir.extent = [["x", 1]], geir.range = [1, 64]}) {
  %0 = graph.matmul %x, %w attributes {geir.dims = [[4, 8]]} : (tensor<4x?xf32>, tensor<64x8xf32>) -> tensor<4x8xf32> loc("mm")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.relu' at "r": has a malformed geir.dims [["seq +", 768 : i64]]
// CHECK-NEXT: note: see current operation
func.func @malformed(%x: tensor<?x768xf32> {onnx.name = "x"}, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 0]], geir.range = [1, 512]}) {
  %0 = graph.relu %x attributes {geir.dims = [["seq +", 768]]} : (tensor<?x768xf32>) -> tensor<?x768xf32> loc("r")
  func.return
}

// -----
// CHECK-NEXT: error: {{.*}}:[[# @LINE + 3]]:3: 'graph.relu' at "r": has 2 shapes in geir.dims for 1 results
// CHECK-NEXT: note: see current operation
func.func @count(%x: tensor<?x768xf32> {onnx.name = "x"}, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 0]], geir.range = [1, 512]}) {
  %0 = graph.relu %x attributes {geir.dims = [["seq", 768], ["seq", 768]]} : (tensor<?x768xf32>) -> tensor<?x768xf32> loc("r")
  func.return
}
