// view-op-graph: Graphviz DOT of the ops (op and ONNX node names), an edge per use with the
// value's shape, dtype and storage format, each graph.fusion a cluster; the IR is unchanged.
// The edges are at the top level, so a node stays in the cluster that defines it.
// RUN: geir-opt %s -p view-op-graph 2>&1 >/dev/null | filecheck %s
// RUN: geir-opt %s --view-op-graph=%t.dot | filecheck %s --check-prefix=IR
// RUN: filecheck %s < %t.dot
// RUN: geir-opt %s --view-op-graph -o /dev/null 2>&1 | filecheck %s

// CHECK:      digraph G {
// CHECK:        subgraph [[MAIN:cluster_[0-9]+]] {
// CHECK-NEXT:     label="@main"; style=dashed;
// CHECK-NEXT:     [[X:arg[0-9]+]] [label="x", shape=ellipse];
// CHECK-NEXT:     [[W:op[0-9]+]] [label="graph.constant\nw", shape=note];
// CHECK-NEXT:     [[T:op[0-9]+]] [label="graph.trans_data\nto_5hd"];
// CHECK-NEXT:     subgraph [[F:cluster_[0-9]+]] {
// CHECK-NEXT:       label="graph.fusion \"vector\""; style=rounded; color=steelblue;
// CHECK-NEXT:       [[RELU:op[0-9]+]] [label="graph.relu\nrelu"];
// CHECK-NEXT:       [[ADD:op[0-9]+]] [label="graph.add\nadd"];
// CHECK-NEXT:     }
// CHECK-NEXT:     [[BACK:op[0-9]+]] [label="graph.trans_data\nto_nchw"];
// CHECK-NEXT:     [[RET:op[0-9]+]] [label="func.return"];
// CHECK-NEXT:   }
// CHECK-DAG:    [[X]] -> [[T]] [label="1x20x4x4 f32"];
// CHECK-DAG:    [[T]] -> [[RELU]] [label="1x2x4x4x16 f32 NC1HWC0"];
// CHECK-DAG:    [[RELU]] -> [[ADD]] [label="1x2x4x4x16 f32 NC1HWC0"];
// CHECK-DAG:    [[W]] -> [[ADD]] [label="1x2x4x4x16 f32 NC1HWC0"];
// CHECK-DAG:    [[ADD]] -> [[BACK]] [label="1x2x4x4x16 f32 NC1HWC0"];
// CHECK-DAG:    [[BACK]] -> [[RET]] [label="1x20x4x4 f32"];
// CHECK:      }

// IR: %r = graph.fusion "vector" (%a, %w)
!t5 = tensor<1x2x4x4x16xf32, #graph.format<NC1HWC0, NCHW, [1, 20, 4, 4]>>
func.func @main(%x: tensor<1x20x4x4xf32> {onnx.name = "x"}) -> tensor<1x20x4x4xf32> {
  %w = graph.constant dense<1.0> : !t5 loc("w")
  %a = graph.trans_data %x {src_format = "NCHW", dst_format = "NC1HWC0"} : (tensor<1x20x4x4xf32>) -> !t5 loc("to_5hd")
  %r = graph.fusion "vector" (%a, %w) : (!t5, !t5) -> !t5 {
  ^bb0(%p: !t5, %q: !t5):
    %y = graph.relu %p : (!t5) -> !t5 loc("relu")
    %z = graph.add %y, %q : (!t5, !t5) -> !t5 loc("add")
    graph.yield %z : !t5
  }
  %b = graph.trans_data %r {src_format = "NC1HWC0", dst_format = "NCHW"} : (!t5) -> tensor<1x20x4x4xf32> loc("to_nchw")
  func.return %b : tensor<1x20x4x4xf32>
}
