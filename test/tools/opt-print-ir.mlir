// --print-ir-after-all dumps the module to stderr after every pass (MLIR's
// banner); --print-ir-after-change only after the passes that changed it.
// RUN: geir-opt %s -p 'cse,dce' --print-ir-after-all -o /dev/null 2>&1 | filecheck %s --check-prefix=ALL
// RUN: geir-opt %s -p 'cse,dce' --print-ir-after-change -o /dev/null 2>&1 | filecheck %s --check-prefix=CHANGE
// RUN: geir-opt %s -p 'cse,dce' --print-ir-after-all --no-debuginfo 2>/dev/null | filecheck %s --check-prefix=OUT

// ALL:      // -----// IR Dump After cse //----- //
// ALL-NEXT: builtin.module {
// ALL:        %a = graph.add %x, %y
// ALL-NOT:    %b = graph.add
// ALL:        %m = graph.mul %a, %a
// ALL:      // -----// IR Dump After dce //----- //
// ALL-NEXT: builtin.module {

// CHANGE:     // -----// IR Dump After cse //----- //
// CHANGE:       %m = graph.mul %a, %a
// CHANGE-NOT: IR Dump After dce

// The output itself is unchanged by the dumps and follows the print options.
// OUT:      %m = graph.mul %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>{{$}}
// OUT-NOT:  IR Dump
func.func @main(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xf32> {
  %a = graph.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("add_a")
  %b = graph.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("add_b")
  %m = graph.mul %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("mul")
  func.return %m : tensor<2x3xf32>
}
