// convert-graph-to-ascend of a shape-range program whose matmul is over L2 (a device with a
// 1 MiB L2, written by the first RUN line): a sequence range under the batch, so the row
// groups are the batch rows and the matmul is planned with its batch (cube `_unfolded`).
// Its L2 row ranges are then the same positions of every batch row - positions 0~255,
// 256~511, 512~767 and 768~1023 of both - not whole batch rows: at a small size the real rows
// are all in the first range. Each piece runs the real rows of its own range,
// clamp(n - first, 0, rows); a later one says that it has none at n <= its first position
// (`geir.live_above` = [its extent argument, first]), and the host does not launch it then
// (test/python/test_l2_pieces.py times it).
// RUN: %python -c "import json, sys; s = json.load(open(sys.argv[1])); s['name']['value'] = 'small-l2'; s['l2_bytes']['value'] = 1 << 20; s['launch_overhead_us']['value'] = 0.1; s['hbm_bytes_per_s']['value'] = 0.1e12; json.dump(s, open(sys.argv[2], 'w'))" %S/../../../target/devices/ascend910b.json %t.json
// RUN: geir-opt %s -p 'convert-graph-to-ascend{device="%t.json"}' | filecheck %s

// CHECK-LABEL: ascend.kernel @k0_fc_n0(
// CHECK-SAME:    attributes {block_dim = 8 : i64, core_type = "cube", geir.extent, geir.packed_rows = array<i64: 64>, template = "matmul", geir.l2_block = array<i64: 0, 256, 0, 512>}
// CHECK:         %n = arith.index_cast
// CHECK:         %[[P0:.*]] = arith.maxui %n, %c0 : index
// CHECK-NEXT:    %{{.*}} = arith.minui %[[P0]], %c256 : index
// CHECK:       ascend.kernel @k0_fc_n1(
// CHECK-SAME:    attributes {block_dim = 8 : i64, core_type = "cube", geir.extent, geir.live_above = array<i64: 3, 256>, geir.packed_rows = array<i64: 64>, template = "matmul", geir.l2_block = array<i64: 256, 256, 0, 512>}
// CHECK:         %n = arith.index_cast
// CHECK:         %[[PAST:.*]] = arith.maxui %n, %c256 : index
// CHECK-NEXT:    %[[FROM:.*]] = arith.subi %[[PAST]], %c256 : index
// CHECK-NEXT:    %[[REAL:.*]] = arith.minui %[[FROM]], %c256 : index
// CHECK-NEXT:    %{{.*}} = arith.addi %[[REAL]], %c63 : index
// CHECK:       ascend.kernel @k0_fc_n2(
// CHECK-SAME:    geir.live_above = array<i64: 3, 512>, {{.*}}geir.l2_block = array<i64: 512, 256, 0, 512>}
// CHECK:       ascend.kernel @k0_fc_n3(
// CHECK-SAME:    geir.live_above = array<i64: 3, 768>, {{.*}}geir.l2_block = array<i64: 768, 256, 0, 512>}
// CHECK:       func.func @seq(
// CHECK:         ascend.launch @k0_fc_n0 on %stream(%x, %w, %y, %n)
// CHECK-NEXT:    ascend.launch @k0_fc_n1 on %stream(%x, %w, %y, %n)
// CHECK-NEXT:    ascend.launch @k0_fc_n2 on %stream(%x, %w, %y, %n)
// CHECK-NEXT:    ascend.launch @k0_fc_n3 on %stream(%x, %w, %y, %n)
func.func @seq(%x: tensor<2x1024x512xf16> {onnx.name = "x"}, %w: tensor<512x512xf16> {onnx.name = "w"}, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 1 : i64]], geir.range = [1 : i64, 1024 : i64]}) -> (tensor<2x1024x512xf16> {onnx.name = "y"}) {
  %y = graph.matmul %x, %w : (tensor<2x1024x512xf16>, tensor<512x512xf16>) -> tensor<2x1024x512xf16> loc("fc")
  func.return %y : tensor<2x1024x512xf16>
}
