// convert-graph-to-ascend of a shape-range program (driver/shape_ranges.py): the argument marked
// geir.extent holds the run-time size of an input's dim, whose rows no op mixes; every kernel
// whose outputs hold that dim - at their axis 0, or under other axes - takes it after its
// outputs and runs only the tiles of the real rows (lowering/templates/common.py, Extent).
// RUN: geir-opt %s --split-input-file -p convert-graph-to-ascend | filecheck %s

// Rows: 64 rows of 256 in 4 tiles of 16 rows, one per block; the tiles that run are
// ceil(n * 256 / 4096), and a block past them skips its tile.
// CHECK-LABEL: ascend.kernel @k0_relu(
// CHECK-SAME:    %x: memref<64x256xf32, "gm">, %y: memref<64x256xf32, "gm">, %extent: memref<1xi64, "gm">)
// CHECK-SAME:    attributes {block_dim = 4 : i64, core_type = "vector", geir.extent, template = "row"}
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %[[RAW:.*]] = memref.load %extent[%c0] : memref<1xi64, "gm">
// CHECK-NEXT:    %n = arith.index_cast %[[RAW]] : i64 to index
// CHECK:         %[[BLOCK:.*]] = ascend.block_idx
// CHECK:         %[[ELEMS:.*]] = arith.muli %n, %c256 : index
// CHECK-NEXT:    %[[UP:.*]] = arith.addi %[[ELEMS]], %c4095 : index
// CHECK-NEXT:    %[[TILES:.*]] = arith.divui %[[UP]], %c4096 : index
// CHECK-NEXT:    %[[RUNS:.*]] = arith.minui %[[TILES]], %c4 : index
// CHECK:         %[[MINE:.*]] = arith.cmpi ult, %[[BLOCK]], %[[RUNS]] : index
// CHECK-NEXT:    scf.if %[[MINE]] {
// CHECK:           ascend.vrelu
// CHECK:       func.func @rows(%x: memref<64x256xf32, "gm"> {onnx.name = "x"}, %n: memref<1xi64, "gm"> {onnx.name = "batch.extent", geir.extent = {{\[\[}}"x", 0 : i64]], geir.range = [1 : i64, 64 : i64]}, %y: memref<64x256xf32, "gm"> {onnx.name = "y", ascend.output})
// CHECK:         ascend.launch @k0_relu on %stream(%x, %y, %n)
func.func @rows(%x: tensor<64x256xf32> {onnx.name = "x"}, %n: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["x", 0 : i64]], geir.range = [1 : i64, 64 : i64]}) -> (tensor<64x256xf32> {onnx.name = "y"}) {
  %y = graph.relu %x : (tensor<64x256xf32>) -> tensor<64x256xf32>
  func.return %y : tensor<64x256xf32>
}

// -----

// A convolution: its tiles are (image, pixel tile) pairs - T full ones and an edge one per image
// (a tiling priced at the range's 8, 1 and 3 images) - each class dealt to the blocks in a loop
// whose trip count is min(n, 8) times its tiles per image.
// CHECK-LABEL: ascend.kernel @k0_conv(
// CHECK-SAME:    %y: memref<8x32x32x32xf32, "gm">, %extent: memref<1xi64, "gm">) attributes {{{.*}}geir.extent, template = "conv"}
// CHECK:         %n = arith.index_cast
// CHECK:         %[[IMAGES:.*]] = arith.minui %n, %c8 : index
// CHECK-NEXT:    %[[TILES:.*]] = arith.muli %[[IMAGES]], %c{{[0-9]+}} : index
// CHECK-NEXT:    %[[EDGES:.*]] = arith.minui %n, %c8 : index
// CHECK-NEXT:    scf.for %{{.*}} = %block to %[[TILES]] step %c{{[0-9]+}} {
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[EDGES]] step %c{{[0-9]+}} {
// CHECK:         ascend.launch @k0_conv on %stream(%x, %w, %y, %n)
func.func @conv(%x: tensor<8x16x32x32xf32> {onnx.name = "x"}, %w: tensor<32x16x3x3xf32> {onnx.name = "w"}, %n: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["x", 0 : i64]], geir.range = [1 : i64, 8 : i64]}) -> (tensor<8x32x32x32xf32> {onnx.name = "y"}) {
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x16x32x32xf32>, tensor<32x16x3x3xf32>) -> tensor<8x32x32x32xf32>
  func.return %y : tensor<8x32x32x32xf32>
}

// -----

// A sum over the ranged dim mixes its rows (the driver refuses such a range; here the lowering
// meets one): no kernel takes the extent, so the relu's padding rows are computed too.
// CHECK-LABEL: ascend.kernel @k0_relu(
// CHECK-SAME:    %x: memref<8x256xf32, "gm">, %r: memref<8x256xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector", template = "row"}
// CHECK-NOT:     memref.load
// CHECK-LABEL: ascend.kernel @k1_reduce_sum(
// CHECK-SAME:    %y: memref<256xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector", template = "row"}
// CHECK:         ascend.launch @k0_relu on %stream(%x, %r)
// CHECK-NEXT:    ascend.launch @k1_reduce_sum on %stream(%r, %y)
func.func @mixed(%x: tensor<8x256xf32> {onnx.name = "x"}, %n: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["x", 0 : i64]], geir.range = [1 : i64, 8 : i64]}) -> (tensor<256xf32> {onnx.name = "y"}) {
  %r = graph.relu %x : (tensor<8x256xf32>) -> tensor<8x256xf32>
  %y = graph.reduce_sum %r {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<8x256xf32>) -> tensor<256xf32>
  func.return %y : tensor<256xf32>
}

// -----

// The transpose's output holds the dim at axis 1, not 0: it computes every row, and says why
// (geir-compile prints the line). The sigmoid's holds it at axis 0 and takes the extent.
// CHECK-LABEL: ascend.kernel @k0_transpose(
// CHECK-SAME:    %y: memref<256x8xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector", template = "data", geir.all_rows = "the data template takes no extent (of data movement, only a gather skips rows)"}
// CHECK-LABEL: ascend.kernel @k1_sigmoid(
// CHECK-SAME:    %z: memref<8x256xf32, "gm">, %extent: memref<1xi64, "gm">) attributes {block_dim = 1 : i64, core_type = "vector", geir.extent, template = "row"}
// CHECK:         ascend.launch @k0_transpose on %stream(%x, %y)
// CHECK-NEXT:    ascend.launch @k1_sigmoid on %stream(%x, %z, %n)
func.func @transposed(%x: tensor<8x256xf32> {onnx.name = "x"}, %n: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["x", 0 : i64]], geir.range = [1 : i64, 8 : i64]}) -> (tensor<256x8xf32> {onnx.name = "y"}, tensor<8x256xf32> {onnx.name = "z"}) {
  %y = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<8x256xf32>) -> tensor<256x8xf32>
  %z = graph.sigmoid %x : (tensor<8x256xf32>) -> tensor<8x256xf32>
  func.return %y, %z : tensor<256x8xf32>, tensor<8x256xf32>
}

// -----

// Attention: the work items run batch row outermost, so the real ones come first - n * H
// items of the 4 * H (one query tile, one key tile each); a block past them runs none.
// CHECK-LABEL: ascend.kernel @k0_attn(
// CHECK-SAME:    %y: memref<4x2x16x8xf32, "gm">, %extent: memref<1xi64, "gm">
// CHECK-SAME:    geir.extent, template = "attention"
// CHECK:         %n = arith.index_cast
// CHECK:         %[[ITEMS:.*]] = arith.muli %n, %c2 : index
// CHECK-NEXT:    scf.for %{{.*}} = %block to %[[ITEMS]] step %c8 {
// CHECK:         ascend.launch @k0_attn on %stream(%q, %k, %v, %y, %n,
func.func @attention(%q: tensor<4x2x16x8xf32> {onnx.name = "q"}, %k: tensor<4x2x16x8xf32> {onnx.name = "k"}, %v: tensor<4x2x16x8xf32> {onnx.name = "v"}, %n: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["q", 0 : i64], ["k", 0 : i64], ["v", 0 : i64]], geir.range = [1 : i64, 4 : i64]}) -> (tensor<4x2x16x8xf32> {onnx.name = "y"}) {
  %y = graph.attention %q, %k, %v {scale = 0.35 : f32, causal = 0 : i64} : (tensor<4x2x16x8xf32>, tensor<4x2x16x8xf32>, tensor<4x2x16x8xf32>) -> tensor<4x2x16x8xf32> loc("attn")
  func.return %y : tensor<4x2x16x8xf32>
}

// -----

// A range over the sequence: q's rows and k's and v's keys hold it (axis 2). Every query
// attends to every key, so the kernel takes the size as `%keys` and masks the padded keys of a
// tile that holds one: key c of the tile from k0 gets NEG when c + k0 + 1 - n >= 1 (one key
// tile here), on each of the block's two vector cores for its rows of the tile. 40 positions
// are no whole number of 16s: the dim is computed whole (common.key_quantum), so every query
// tile runs - the kernels after it read its padded rows, and an attention after them may
// read those as keys.
// CHECK-LABEL: ascend.kernel @k0_attn(
// CHECK-SAME:    %y: memref<1x2x40x8xf32, "gm">, %keys: memref<1xi64, "gm">
// CHECK-SAME:    geir.key_extent
// CHECK-NOT:     geir.extent,
// CHECK:         %[[RAW:.*]] = memref.load %keys[%c0] : memref<1xi64, "gm">
// CHECK-NEXT:    %n_keys = arith.index_cast %[[RAW]] : i64 to index
// CHECK:         scf.for %{{.*}} = %block
// CHECK-NOT:       scf.if
// CHECK:           ascend.sub_block 0 {
// CHECK:             ascend.vmuls %[[S:.*]], %{{.*}}, %[[S]] : memref<8x40xf32
// CHECK-NEXT:        %[[PAD:.*]] = arith.cmpi ult, %n_keys, %c40 : index
// CHECK-NEXT:        scf.if %[[PAD]] {
// CHECK-NEXT:          %[[SHIFT:.*]] = arith.subi %c1, %n_keys : index
// CHECK-NEXT:          %[[I64:.*]] = arith.index_cast %[[SHIFT]] : index to i64
// CHECK-NEXT:          %[[F32:.*]] = arith.sitofp %[[I64]] : i64 to f32
// CHECK-NEXT:          ascend.vadds %kcol, %[[F32]], %krow
// CHECK-NEXT:          ascend.vmins %krow
// CHECK-NEXT:          ascend.vmaxs %krow
// CHECK-NEXT:          ascend.vmuls %krow
// CHECK-NEXT:          ascend.vbrcb %krow, %[[T:.*]] :
// CHECK-NEXT:          ascend.vadd %[[S]], %[[T]], %[[S]]
// CHECK-NEXT:        }
// CHECK-NEXT:        ascend.vmaxs %[[S]]
// CHECK:           ascend.sub_block 1 {
// CHECK:             arith.cmpi ult, %n_keys, %c40 : index
// CHECK:         ascend.launch @k0_attn on %stream(%q, %k, %v, %y, %n,
func.func @keys(%q: tensor<1x2x40x8xf32> {onnx.name = "q"}, %k: tensor<1x2x40x8xf32> {onnx.name = "k"}, %v: tensor<1x2x40x8xf32> {onnx.name = "v"}, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["q", 2 : i64], ["k", 2 : i64], ["v", 2 : i64]], geir.range = [1 : i64, 40 : i64]}) -> (tensor<1x2x40x8xf32> {onnx.name = "y"}) {
  %y = graph.attention %q, %k, %v {scale = 0.35 : f32, causal = 0 : i64} : (tensor<1x2x40x8xf32>, tensor<1x2x40x8xf32>, tensor<1x2x40x8xf32>) -> tensor<1x2x40x8xf32> loc("attn")
  func.return %y : tensor<1x2x40x8xf32>
}

// -----

// The sequence under the batch (x's axis 1): the outputs' rows are 2 groups of 256, the first
// n of each real. The matmul's 64-row tiles lie inside a group (the tiling takes only row
// tiles that divide it): of the 4 row tiles x 2 column tiles of a group, min(ceil(n / 64), 4)
// x 2 run, and the i-th that runs is tile (i / live) * 8 + i % live of the grid. The relu's
// tiles of 4096 elements (64 rows) likewise. Packing tiles (the next case) would not pay here:
// the 2 x 2 tiles at 32 positions or fewer already fit the blocks.
// CHECK-LABEL: ascend.kernel @k0_proj(
// CHECK-SAME:    %h: memref<2x256x64xf32, "gm">, %extent: memref<1xi64, "gm">) attributes {{{.*}}geir.extent, template = "matmul"}
// CHECK:         %n = arith.index_cast
// CHECK-NOT:     scf.if
// CHECK:         %[[UP:.*]] = arith.addi %n, %c63 : index
// CHECK-NEXT:    %[[TILES:.*]] = arith.divui %[[UP]], %c64 : index
// CHECK-NEXT:    %[[REAL:.*]] = arith.minui %[[TILES]], %c4 : index
// CHECK-NEXT:    %[[LIVE:.*]] = arith.muli %[[REAL]], %c2 : index
// CHECK-NEXT:    %[[RUNS:.*]] = arith.muli %[[LIVE]], %c2 : index
// CHECK-NEXT:    scf.for %[[I:.*]] = %block to %[[RUNS]] step %c16 {
// CHECK-NEXT:      %[[G:.*]] = arith.divui %[[I]], %[[LIVE]] : index
// CHECK-NEXT:      %[[BASE:.*]] = arith.muli %[[G]], %c8 : index
// CHECK-NEXT:      %[[J:.*]] = arith.remui %[[I]], %[[LIVE]] : index
// CHECK-NEXT:      %{{.*}} = arith.addi %[[BASE]], %[[J]] : index
// CHECK-LABEL: ascend.kernel @k1_act(
// CHECK:         %[[ELEMS:.*]] = arith.muli %n, %c64 : index
// CHECK-NEXT:    %[[UP:.*]] = arith.addi %[[ELEMS]], %c4095 : index
// CHECK-NEXT:    %[[TILES:.*]] = arith.divui %[[UP]], %c4096 : index
// CHECK-NEXT:    %[[LIVE:.*]] = arith.minui %[[TILES]], %c4 : index
// CHECK-NEXT:    %[[RUNS:.*]] = arith.muli %[[LIVE]], %c2 : index
// CHECK:         arith.cmpi ult, %block, %[[RUNS]] : index
// CHECK:           %[[G:.*]] = arith.divui %block, %[[LIVE]] : index
// CHECK-NEXT:      %[[BASE:.*]] = arith.muli %[[G]], %c4 : index
// CHECK-NEXT:      %[[J:.*]] = arith.remui %block, %[[LIVE]] : index
// CHECK-NEXT:      %{{.*}} = arith.addi %[[BASE]], %[[J]] : index
// CHECK:         ascend.launch @k0_proj on %stream(%x, %w, %h, %n)
// CHECK-NEXT:    ascend.launch @k1_act on %stream(%h, %y, %n)
func.func @under(%x: tensor<2x256x64xf32> {onnx.name = "x"}, %w: tensor<64x64xf32> {onnx.name = "w"}, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 1 : i64]], geir.range = [1 : i64, 256 : i64]}) -> (tensor<2x256x64xf32> {onnx.name = "y"}) {
  %h = graph.matmul %x, %w : (tensor<2x256x64xf32>, tensor<64x64xf32>) -> tensor<2x256x64xf32> loc("proj")
  %y = graph.relu %h : (tensor<2x256x64xf32>) -> tensor<2x256x64xf32> loc("act")
  func.return %y : tensor<2x256x64xf32>
}

// -----

// The same over 8 batch rows of 256 positions (f16, K = 512, N = 256): tiles of 128 rows
// inside a group would run 8 x 2 tiles (8 x 128 rows) at 64 positions or fewer, with as many
// reads of w. The tiling's prices say packing pays (matmul_kernel.py `_packings`) for 64-row
// and 32-row segments (`geir.packed_rows`), so each group's real rows n, rounded up to 32, are
// its whole tiles of 128 rows, then a 64-row segment if n holds bit 64 and a 32-row one if it
// holds bit 32: tiles packing two groups' 64-row segments, and tiles packing four groups'
// 32-row ones - their lhs loaded and their result written per group, FIX taking each group's
// rows of l0c. No branch: each class's tile count is computed at run time (none when its bit
// is clear), and the three classes share the blocks.
// CHECK-LABEL: ascend.kernel @k0_proj(
// CHECK-SAME:    attributes {block_dim = 24 : i64, core_type = "cube", geir.extent, geir.packed_rows = array<i64: 32, 64>, template = "matmul"}
// CHECK:         %n = arith.index_cast
// CHECK:         %[[UP:.*]] = arith.addi %n, %c31 : index
// CHECK-NEXT:    %[[UNITS:.*]] = arith.divui %[[UP]], %c32 : index
// CHECK-NEXT:    %[[ROWS:.*]] = arith.muli %[[UNITS]], %c32 : index
// CHECK-NEXT:    %[[TAIL:.*]] = arith.remui %[[ROWS]], %c128 : index
// CHECK-NEXT:    %[[WHOLE:.*]] = arith.subi %[[ROWS]], %[[TAIL]] : index
// CHECK:         %[[B32:.*]] = arith.remui %[[ROWS]], %c64 : index
// CHECK-NEXT:    %[[BIT32:.*]] = arith.divui %[[B32]], %c32 : index
// CHECK-NEXT:    %[[RUN32:.*]] = arith.muli %[[BIT32]], %c2 : index
// CHECK-NEXT:    %[[AT32:.*]] = arith.subi %[[ROWS]], %[[B32]] : index
// CHECK:         %[[B64:.*]] = arith.remui %[[ROWS]], %c128 : index
// CHECK-NEXT:    %[[BIT64:.*]] = arith.divui %[[B64]], %c64 : index
// CHECK-NEXT:    %[[RUN64:.*]] = arith.muli %[[BIT64]], %c4 : index
// CHECK-NEXT:    %[[AT64:.*]] = arith.subi %[[ROWS]], %[[B64]] : index
// CHECK-NOT:     scf.if
// CHECK:         scf.for %{{.*}} = %block to %{{.*}} step %c24 {
// CHECK:           ascend.copy %l0c, %{{.*}} : memref<128x128xf32, "l0c">
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %c24 {
// CHECK-NEXT:      %[[Q:.*]] = arith.divui %[[I]], %c2 : index
// CHECK-NEXT:      %[[CT:.*]] = arith.remui %[[I]], %c2 : index
// CHECK-NEXT:      %[[COL:.*]] = arith.muli %[[CT]], %c128 : index
// CHECK-NEXT:      ascend.wait_flag MTE1 -> MTE2 id 0
// CHECK-NEXT:      scf.for %[[J:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:        %[[T:.*]] = arith.muli %[[Q]], %c4 : index
// CHECK-NEXT:        %[[G:.*]] = arith.addi %[[T]], %[[J]] : index
// CHECK-NEXT:        %[[B:.*]] = arith.divui %[[G]], %c8 : index
// CHECK-NEXT:        %[[P:.*]] = arith.remui %[[G]], %c8 : index
// CHECK-NEXT:        %[[S:.*]] = arith.muli %[[P]], %c256 : index
// CHECK-NEXT:        %[[R:.*]] = arith.addi %[[S]], %[[AT32]] : index
// CHECK-NEXT:        %[[AT:.*]] = arith.muli %[[J]], %c32 : index
// CHECK-NEXT:        %[[A:.*]] = memref.subview %l1a0[%[[AT]], 0] [32, 128] [1, 1]
// CHECK-NEXT:        %[[X:.*]] = memref.subview %{{.*}}[%[[R]], 0] [32, 128] [1, 1] : memref<2048x512xf16, "gm">
// CHECK-NEXT:        ascend.copy %[[X]], %[[A]]
// CHECK-NEXT:      }
// CHECK:           ascend.mmad %l0a0, %l0b0, %l0c {init} : memref<128x128xf16, "l0a">, memref<128x128xf16, "l0b">, memref<128x128xf32, "l0c">
// CHECK:           ascend.wait_flag M -> FIX id 0
// CHECK-NEXT:      scf.for %[[J:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:        %[[T:.*]] = arith.muli %[[Q]], %c4 : index
// CHECK-NEXT:        %[[G:.*]] = arith.addi %[[T]], %[[J]] : index
// CHECK-NEXT:        %[[B:.*]] = arith.divui %[[G]], %c8 : index
// CHECK-NEXT:        %[[P:.*]] = arith.remui %[[G]], %c8 : index
// CHECK-NEXT:        %[[S:.*]] = arith.muli %[[P]], %c256 : index
// CHECK-NEXT:        %[[R:.*]] = arith.addi %[[S]], %[[AT32]] : index
// CHECK-NEXT:        %[[AT:.*]] = arith.muli %[[J]], %c32 : index
// CHECK-NEXT:        %[[C:.*]] = memref.subview %l0c[%[[AT]], 0] [32, 128] [1, 1]
// CHECK-NEXT:        %[[Y:.*]] = arith.muli %[[B]], %c2048 : index
// CHECK-NEXT:        %[[H:.*]] = arith.addi %[[Y]], %[[R]] : index
// CHECK-NEXT:        %[[D:.*]] = memref.subview %{{.*}}[%[[H]], %[[COL]]] [32, 128] [1, 1] : memref<2048x256xf16, "gm">
// CHECK-NEXT:        ascend.copy %[[C]], %[[D]]
// CHECK-NEXT:      }
// CHECK-NEXT:      ascend.set_flag FIX -> M id 0
// CHECK-NEXT:    }
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c24 {
// CHECK:           scf.for %{{.*}} = %c0 to %c2 step %c1 {
// CHECK:             %{{.*}} = arith.addi %{{.*}}, %[[AT64]] : index
// CHECK:             %{{.*}} = memref.subview %l1a0[%{{.*}}, 0] [64, 128] [1, 1]
// CHECK:           ascend.set_flag FIX -> M id 0
// CHECK-NEXT:    }
// CHECK-NEXT:    ascend.wait_flag MTE1 -> MTE2 id 0
func.func @packed(%x: tensor<8x256x512xf16> {onnx.name = "x"}, %w: tensor<512x256xf16> {onnx.name = "w"}, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 1 : i64]], geir.range = [1 : i64, 256 : i64]}) -> (tensor<8x256x256xf16> {onnx.name = "y"}) {
  %h = graph.matmul %x, %w : (tensor<8x256x512xf16>, tensor<512x256xf16>) -> tensor<8x256x256xf16> loc("proj")
  func.return %h : tensor<8x256x256xf16>
}

// -----

// A gated product (SwiGLU: the up product is the partner, staged for the epilogue) packs
// too. In a packed tile the partner's product is staged group by group at each group's
// rows of %partner before FIX hands l0c back; the gate product then loads the groups' lhs
// rows again, FIX writes each group's rows, and each group's epilogue reads its own rows of
// the gate result and of %partner.
// CHECK-LABEL: ascend.kernel @k0_gate_proj(
// CHECK-SAME:    %partner: memref<2048x256xf16, "gm">) attributes {{{.*}}geir.extent, geir.packed_rows = array<i64: 16, 32>, template = "matmul"}
// CHECK:         %[[UP:.*]] = arith.addi %n, %c15 : index
// CHECK-NEXT:    %[[UNITS:.*]] = arith.divui %[[UP]], %c16 : index
// CHECK-NEXT:    %[[ROWS:.*]] = arith.muli %[[UNITS]], %c16 : index
// CHECK:         %[[B16:.*]] = arith.remui %[[ROWS]], %c32 : index
// CHECK-NEXT:    %[[BIT16:.*]] = arith.divui %[[B16]], %c16 : index
// CHECK-NEXT:    %[[RUN16:.*]] = arith.muli %[[BIT16]], %c2 : index
// CHECK-NEXT:    %[[AT16:.*]] = arith.subi %[[ROWS]], %[[B16]] : index
// CHECK-NEXT:    %[[RUNS:.*]] = arith.minui %[[RUN16]], %c2 : index
// CHECK:         scf.for %[[Q:.*]] = %{{.*}} to %[[RUNS]] step %c24 {
// CHECK:           ascend.wait_flag M -> FIX id 0
// CHECK-NEXT:      scf.for %[[J:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:        %[[T:.*]] = arith.muli %[[Q]], %c4 : index
// CHECK-NEXT:        %[[G:.*]] = arith.addi %[[T]], %[[J]] : index
// CHECK-NEXT:        %[[B:.*]] = arith.divui %[[G]], %c8 : index
// CHECK-NEXT:        %[[P:.*]] = arith.remui %[[G]], %c8 : index
// CHECK-NEXT:        %[[S:.*]] = arith.muli %[[P]], %c256 : index
// CHECK-NEXT:        %[[R:.*]] = arith.addi %[[S]], %[[AT16]] : index
// CHECK-NEXT:        %[[AT:.*]] = arith.muli %[[J]], %c16 : index
// CHECK-NEXT:        %[[U:.*]] = memref.subview %l0c[%[[AT]], 0] [16, 256] [1, 1]
// CHECK-NEXT:        %[[Y:.*]] = arith.muli %[[B]], %c2048 : index
// CHECK-NEXT:        %[[H:.*]] = arith.addi %[[Y]], %[[R]] : index
// CHECK-NEXT:        %[[SP:.*]] = memref.subview %partner[%[[H]], 0] [16, 256] [1, 1]
// CHECK-NEXT:        ascend.copy %[[U]], %[[SP]]
// CHECK-NEXT:      }
// CHECK-NEXT:      ascend.set_flag FIX -> M id 0
// CHECK-NEXT:      ascend.wait_flag MTE1 -> MTE2 id 0
// CHECK-NEXT:      scf.for %{{.*}} = %c0 to %c4 step %c1 {
// CHECK:             memref.subview %l1a0[%{{.*}}, 0] [16, 128] [1, 1]
// CHECK:           %{{.*}} = memref.subview %bg[0, 0] [128, 256] [1, 1]
// CHECK:           ascend.wait_flag M -> FIX id 0
// CHECK-NEXT:      scf.for %{{.*}} = %c0 to %c4 step %c1 {
// CHECK:             %[[GP:.*]] = memref.subview %l0c[%{{.*}}, 0] [16, 256] [1, 1]
// CHECK:             %[[D:.*]] = memref.subview %[[OUT:.*]][%{{.*}}, 0] [16, 256] [1, 1]
// CHECK-NEXT:        ascend.copy %[[GP]], %[[D]]
// CHECK-NEXT:      }
// CHECK-NEXT:      ascend.set_flag FIX -> M id 0
// CHECK-NEXT:      scf.for %{{.*}} = %c0 to %c4 step %c1 {
// CHECK:             %[[Y2:.*]] = arith.muli %{{.*}}, %c2048 : index
// CHECK-NEXT:        %[[ROW:.*]] = arith.addi %[[Y2]], %{{.*}} : index
// CHECK-NEXT:        %{{.*}} = memref.subview %[[OUT]][%[[ROW]], 0] [16, 256] [1, 1]
// CHECK-NEXT:        ascend.set_flag FIX -> MTE2 id 0
// CHECK-NEXT:        ascend.sub_block 0 {
// CHECK:               %{{.*}} = memref.subview %[[OUT]][%[[ROW]], 0] [8, 256] [1, 1]
// CHECK:               %{{.*}} = memref.subview %partner[%[[ROW]], 0] [8, 256] [1, 1]
// CHECK:               ascend.vsigmoid
func.func @packed_gated(%x: tensor<8x256x512xf16> {onnx.name = "x"}, %wg: tensor<512x256xf16> {onnx.name = "wg"}, %wu: tensor<512x256xf16> {onnx.name = "wu"}, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["x", 1 : i64]], geir.range = [1 : i64, 256 : i64]}) -> (tensor<8x256x256xf16> {onnx.name = "y"}) {
  %y = graph.fusion "cube+vector" (%x, %wg, %wu) attributes {graph.pattern = "matmul-epilogue"} : (tensor<8x256x512xf16>, tensor<512x256xf16>, tensor<512x256xf16>) -> tensor<8x256x256xf16> {
  ^bb0(%a: tensor<8x256x512xf16>, %bg: tensor<512x256xf16>, %bu: tensor<512x256xf16>):
    %g = graph.matmul %a, %bg : (tensor<8x256x512xf16>, tensor<512x256xf16>) -> tensor<8x256x256xf16> loc("gate_proj")
    %s = graph.sigmoid %g : (tensor<8x256x256xf16>) -> tensor<8x256x256xf16> loc("act/sigmoid")
    %silu = graph.mul %g, %s : (tensor<8x256x256xf16>, tensor<8x256x256xf16>) -> tensor<8x256x256xf16> loc("act/mul")
    %u = graph.matmul %a, %bu : (tensor<8x256x512xf16>, tensor<512x256xf16>) -> tensor<8x256x256xf16> loc("up_proj")
    %p = graph.mul %silu, %u : (tensor<8x256x256xf16>, tensor<8x256x256xf16>) -> tensor<8x256x256xf16> loc("mlp/mul")
    graph.yield %p : tensor<8x256x256xf16>
  } loc(fused["gate_proj", "act/sigmoid", "act/mul", "up_proj", "mlp/mul"])
  func.return %y : tensor<8x256x256xf16>
}

// -----

// A batch range over a matmul's rows: one group, whose real rows are the first ones - tiles
// past them are skipped, and nothing is left to pack.
// CHECK-LABEL: ascend.kernel @k0_proj(
// CHECK-SAME:    attributes {{{.*}}geir.extent, template = "matmul"}
// CHECK-NOT:     scf.if
// CHECK:         ascend.launch @k0_proj on %stream(%x, %w, %h, %n)
func.func @one_group(%x: tensor<8x64x64xf32> {onnx.name = "x"}, %w: tensor<64x64xf32> {onnx.name = "w"}, %n: tensor<1xi64> {onnx.name = "batch.extent", geir.extent = [["x", 0 : i64]], geir.range = [1 : i64, 8 : i64]}) -> (tensor<8x64x64xf32> {onnx.name = "y"}) {
  %h = graph.matmul %x, %w : (tensor<8x64x64xf32>, tensor<64x64xf32>) -> tensor<8x64x64xf32> loc("proj")
  func.return %h : tensor<8x64x64xf32>
}

// -----

// A sequence an attention reads as keys is computed in whole key quanta (common.key_quantum:
// 32 of 256 here, the top holding at least 8 of them) by the kernels its keys come from: the
// relu before the attention computes the first min(ceil(n / 32) * 32, 256) positions of each
// (batch, head) group. The attention runs the query tiles below that and only the key tiles
// that hold a real key: its 32-key tiles divide the quantum, so the last one reads rows some
// kernel computed, never stale ones. The relu after it feeds no keys: it computes the first
// n positions only.
// CHECK-LABEL: ascend.kernel @k0_pre(
// CHECK-SAME:    geir.extent
// CHECK:         %n = arith.index_cast
// CHECK:         %[[UP:.*]] = arith.addi %n, %c31 : index
// CHECK-NEXT:    %[[QUANTA:.*]] = arith.divui %[[UP]], %c32 : index
// CHECK-NEXT:    %[[ROWS:.*]] = arith.muli %[[QUANTA]], %c32 : index
// CHECK-NEXT:    %n_computed = arith.minui %[[ROWS]], %c256 : index
// CHECK:         arith.muli %n_computed, %c32 : index
// CHECK-LABEL: ascend.kernel @k1_attn(
// CHECK-SAME:    geir.key_extent
// CHECK:         %n_keys = arith.index_cast
// CHECK:         %[[UP:.*]] = arith.addi %n_keys, %c31 : index
// CHECK-NEXT:    %[[KEY_TILES:.*]] = arith.divui %[[UP]], %c32 : index
// CHECK-NEXT:    %[[UP:.*]] = arith.addi %n_keys, %c31 : index
// CHECK-NEXT:    %[[QUANTA:.*]] = arith.divui %[[UP]], %c32 : index
// CHECK-NEXT:    %[[ROWS:.*]] = arith.muli %[[QUANTA]], %c32 : index
// CHECK-NEXT:    %[[COMPUTED:.*]] = arith.minui %[[ROWS]], %c256 : index
// CHECK:         scf.for %{{.*}} = %block
// CHECK:           %[[Q0:.*]] = arith.muli %{{.*}}, %c64 : index
// CHECK-NEXT:      %[[GO:.*]] = arith.cmpi ult, %[[Q0]], %[[COMPUTED]] : index
// CHECK-NEXT:      scf.if %[[GO]] {
// CHECK:             %[[N:.*]] = arith.minui %c8, %[[KEY_TILES]] : index
// CHECK:             scf.for %i = %c4 to %{{.*}} step %c2 {
// CHECK-LABEL: ascend.kernel @k2_act(
// CHECK-SAME:    geir.extent
// CHECK:         %n = arith.index_cast
// CHECK-NOT:     n_computed
// CHECK:         arith.muli %n, %c32 : index
// CHECK-LABEL: func.func @quantum(
func.func @quantum(%q: tensor<2x2x256x32xf32> {onnx.name = "q"}, %k: tensor<2x2x256x32xf32> {onnx.name = "k"}, %v: tensor<2x2x256x32xf32> {onnx.name = "v"}, %n: tensor<1xi64> {onnx.name = "seq.extent", geir.extent = [["q", 2 : i64], ["k", 2 : i64], ["v", 2 : i64]], geir.range = [1 : i64, 256 : i64]}) -> (tensor<2x2x256x32xf32> {onnx.name = "y"}) {
  %kr = graph.relu %k : (tensor<2x2x256x32xf32>) -> tensor<2x2x256x32xf32> loc("pre")
  %a = graph.attention %q, %kr, %v {scale = 0.17 : f32, causal = 0 : i64} : (tensor<2x2x256x32xf32>, tensor<2x2x256x32xf32>, tensor<2x2x256x32xf32>) -> tensor<2x2x256x32xf32> loc("attn")
  %y = graph.relu %a : (tensor<2x2x256x32xf32>) -> tensor<2x2x256x32xf32> loc("act")
  func.return %y : tensor<2x2x256x32xf32>
}
