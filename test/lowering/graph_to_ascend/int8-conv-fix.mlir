// convert-graph-to-ascend on int8 convolutions whose epilogue the FIX pipe computes
// (lowering/templates/cube/fix_quant.py): a requantize to int8 or a dequantize to f16, with a
// relu. The kernel is a cube kernel with no vector work; the conv's i32 bias initialises l0c
// from the bias table (bt) and the scales reach the FIX copy through the fixpipe buffer (fb).
// RUN: geir-opt %s --split-input-file -p graph-fuse,convert-graph-to-ascend | filecheck %s

// requantize (per channel) -> relu on the int8 result. The scales and the bias go to l1 once
// (MTE2); each tile moves its 16 rows of them into bt and fb (MTE1) once the tile before has
// read them (M -> MTE1 id 3 after the first mmad, FIX -> MTE1 id 0 after the FIX copy).
// CHECK-LABEL: ascend.kernel @{{.*}}k0_fusion(
// CHECK-SAME:    %b: memref<32xi32, "gm">, %s: memref<1x32x1x1xf32, "gm">, %z: memref<i8, "gm">, %r: memref<1x32x8x8xi8, "gm">)
// CHECK-SAME:    core_type = "cube", template = "conv"
// CHECK:         %scale_l1 = ascend.alloc {{.*}} : memref<32xf32, "l1">
// CHECK-NEXT:    %quant = ascend.alloc {{.*}} : memref<16xf32, "fb">
// CHECK-NEXT:    %bias_l1 = ascend.alloc {{.*}} : memref<32xi32, "l1">
// CHECK-NEXT:    %bias = ascend.alloc {{.*}} : memref<16xi32, "bt">
// CHECK:         %[[S:.*]] = memref.collapse_shape %s {{.*}} into memref<32xf32, "gm">
// CHECK-NEXT:    ascend.copy %[[S]], %scale_l1 : memref<32xf32, "gm"> to memref<32xf32, "l1">
// CHECK-NEXT:    ascend.copy %b, %bias_l1 : memref<32xi32, "gm"> to memref<32xi32, "l1">
// CHECK-NEXT:    ascend.set_flag MTE2 -> MTE1 id 3
// CHECK-NEXT:    ascend.wait_flag MTE2 -> MTE1 id 3
// CHECK-NEXT:    ascend.set_flag FIX -> MTE1 id 0
// CHECK-NEXT:    ascend.set_flag M -> MTE1 id 3
// CHECK:         scf.for
// CHECK:         ascend.wait_flag M -> MTE1 id 3
// CHECK-NEXT:    %[[BR:.*]] = memref.subview %bias_l1[%[[ROW:.*]]] [16] [1]
// CHECK-NEXT:    ascend.copy %[[BR]], %bias : memref<16xi32, strided<[1], offset: ?>, "l1"> to memref<16xi32, "bt">
// CHECK-NEXT:    ascend.wait_flag FIX -> MTE1 id 0
// CHECK-NEXT:    %[[SR:.*]] = memref.subview %scale_l1[%[[ROW]]] [16] [1]
// CHECK-NEXT:    ascend.copy %[[SR]], %quant : memref<16xf32, strided<[1], offset: ?>, "l1"> to memref<16xf32, "fb">
// CHECK:         ascend.load3d {{.*}} pad_value = -3 : i64}
// CHECK:         ascend.mmad %l0a0, %l0b0, %l0c, %bias {init, bias_axis = 0 : i64} : {{.*}}, memref<16x16xi32, "l0c">, memref<16xi32, "bt">
// CHECK-NEXT:    ascend.set_flag M -> MTE1 id 3
// CHECK:         ascend.wait_flag M -> FIX id 0
// CHECK-NEXT:    %[[OUT:.*]] = memref.subview
// CHECK-NEXT:    ascend.copy %l0c, %[[OUT]], %quant {relu, pad, quant_axis = 0 : i64, zero_point = 0 : i64} : memref<16x16xi32, "l0c"> to memref<16x8xi8, {{.*}}"gm"> quant memref<16xf32, "fb">
// CHECK-NEXT:    ascend.set_flag FIX -> MTE1 id 0
// CHECK-NOT:     ascend.v{{[a-z]+}}
// CHECK:         ascend.wait_flag M -> MTE1 id 3
// CHECK-NEXT:    ascend.wait_flag FIX -> MTE1 id 0
// CHECK-NEXT:    ascend.return
func.func @requantize_relu(%x: tensor<1x8x8x8xi8>, %w: tensor<32x8x3x3xi8>) -> tensor<1x32x8x8xi8> {
  %b = graph.constant dense<-40> : tensor<32xi32>
  %s = graph.constant dense<0.01> : tensor<1x32x1x1xf32>
  %z = graph.constant dense<0> : tensor<i8>
  %y = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, offset_x = -3 : i64} : (tensor<1x8x8x8xi8>, tensor<32x8x3x3xi8>, tensor<32xi32>) -> tensor<1x32x8x8xi32>
  %q = graph.requantize %y, %s, %z : (tensor<1x32x8x8xi32>, tensor<1x32x1x1xf32>, tensor<i8>) -> tensor<1x32x8x8xi8>
  %r = graph.relu %q : (tensor<1x32x8x8xi8>) -> tensor<1x32x8x8xi8>
  func.return %r : tensor<1x32x8x8xi8>
}

// -----
// dequantize (one scale) -> cast to f16 -> relu, no bias: the scale goes to fb once, before the
// tiles; the first mmad of a tile initialises l0c to zero; FIX writes f16.
// CHECK-LABEL: ascend.kernel @{{.*}}k0_fusion(
// CHECK-SAME:    core_type = "cube", template = "conv"
// CHECK:         %quant = ascend.alloc {{.*}} : memref<8xf32, "fb">
// CHECK-NOT:     "bt"
// CHECK:         %[[Q:.*]] = memref.subview %quant[0] [1] [1]
// CHECK-NEXT:    %[[S:.*]] = memref.subview %scale_l1[0] [1] [1]
// CHECK-NEXT:    ascend.copy %[[S]], %[[Q]] : memref<1xf32, strided<[1]>, "l1"> to memref<1xf32, strided<[1]>, "fb">
// CHECK:         scf.for
// CHECK:         ascend.mmad %l0a0, %l0b0, %l0c {init} :
// CHECK:         ascend.copy %l0c, %{{.*}}, %[[Q]] {relu, pad} : memref<16x16xi32, "l0c"> to memref<16x8xf16, {{.*}}"gm"> quant memref<1xf32, strided<[1]>, "fb">
// CHECK-NOT:     ascend.v{{[a-z]+}}
// CHECK:         ascend.return
func.func @dequantize_f16_relu(%x: tensor<1x8x8x8xi8>, %w: tensor<32x8x3x3xi8>) -> tensor<1x32x8x8xf16> {
  %s = graph.constant dense<0.01> : tensor<f32>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xi8>, tensor<32x8x3x3xi8>) -> tensor<1x32x8x8xi32>
  %d = graph.dequantize %y, %s : (tensor<1x32x8x8xi32>, tensor<f32>) -> tensor<1x32x8x8xf32>
  %h = graph.cast %d {to = f16} : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf16>
  %r = graph.relu %h : (tensor<1x32x8x8xf16>) -> tensor<1x32x8x8xf16>
  func.return %r : tensor<1x32x8x8xf16>
}

// -----
// Not for the FIX pipe: the accumulator is an output too (the epilogue runs on the vector
// unit: requantize is vmul, vround, clamp).
// CHECK-LABEL: ascend.kernel @{{.*}}k0_fusion(
// CHECK-SAME:    core_type = "mix"
// CHECK-NOT:     quant memref
// CHECK:         ascend.vmul
// CHECK-NEXT:    ascend.vround
// CHECK-NEXT:    ascend.vadds
// CHECK-NEXT:    ascend.vmaxs
// CHECK-NEXT:    ascend.vmins
// CHECK-NOT:     quant memref
// CHECK:         ascend.return
func.func @accumulator_read_twice(%x: tensor<1x8x8x8xi8>, %w: tensor<32x8x3x3xi8>) -> (tensor<1x32x8x8xi8>, tensor<1x32x8x8xi32>) {
  %s = graph.constant dense<0.01> : tensor<1x32x1x1xf32>
  %z = graph.constant dense<4> : tensor<i8>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xi8>, tensor<32x8x3x3xi8>) -> tensor<1x32x8x8xi32>
  %q = graph.requantize %y, %s, %z : (tensor<1x32x8x8xi32>, tensor<1x32x1x1xf32>, tensor<i8>) -> tensor<1x32x8x8xi8>
  func.return %q, %y : tensor<1x32x8x8xi8>, tensor<1x32x8x8xi32>
}

// -----
// Not for the FIX pipe: a dequantized f32 result (the FIX pipe dequantizes to f16 only).
// CHECK-LABEL: ascend.kernel @{{.*}}k0_fusion(
// CHECK-SAME:    core_type = "mix"
// CHECK-NOT:     quant memref
// CHECK:         ascend.vmul
// CHECK-NOT:     quant memref
// CHECK:         ascend.return
func.func @dequantize_f32(%x: tensor<1x8x8x8xi8>, %w: tensor<32x8x3x3xi8>) -> tensor<1x32x8x8xf32> {
  %s = graph.constant dense<0.01> : tensor<1x32x1x1xf32>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xi8>, tensor<32x8x3x3xi8>) -> tensor<1x32x8x8xi32>
  %d = graph.dequantize %y, %s : (tensor<1x32x8x8xi32>, tensor<1x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  func.return %d : tensor<1x32x8x8xf32>
}

// -----
// Not for the FIX pipe: a grouped conv whose groups are 28 channels wide (ShuffleNet's 1x1
// group convs). A tile's rows start at group * 28 + a multiple of 16, and its slice of the l1
// bias and scale vectors would not start on a 32-byte block; the vector epilogue requantizes.
// At 32 channels a group the FIX pipe does.
// CHECK-LABEL: ascend.kernel @{{.*}}k0_fusion(
// CHECK-SAME:    core_type = "mix"
// CHECK-NOT:     quant memref
// CHECK:         ascend.vmul
// CHECK-NOT:     quant memref
// CHECK:         ascend.return
// CHECK-LABEL: ascend.kernel @{{.*}}k1_fusion(
// CHECK-SAME:    core_type = "cube"
// CHECK:         ascend.copy {{.*}} quant memref
func.func @grouped(%x: tensor<1x24x8x8xi8>, %w: tensor<112x6x1x1xi8>, %w2: tensor<128x6x1x1xi8>) -> (tensor<1x112x8x8xi8>, tensor<1x128x8x8xi8>) {
  %s = graph.constant dense<0.01> : tensor<1x112x1x1xf32>
  %s2 = graph.constant dense<0.01> : tensor<1x128x1x1xf32>
  %z = graph.constant dense<0> : tensor<i8>
  %b = graph.constant dense<7> : tensor<112xi32>
  %b2 = graph.constant dense<7> : tensor<128xi32>
  %y = graph.conv %x, %w, %b {group = 4 : i64} : (tensor<1x24x8x8xi8>, tensor<112x6x1x1xi8>, tensor<112xi32>) -> tensor<1x112x8x8xi32>
  %q = graph.requantize %y, %s, %z : (tensor<1x112x8x8xi32>, tensor<1x112x1x1xf32>, tensor<i8>) -> tensor<1x112x8x8xi8>
  %y2 = graph.conv %x, %w2, %b2 {group = 4 : i64} : (tensor<1x24x8x8xi8>, tensor<128x6x1x1xi8>, tensor<128xi32>) -> tensor<1x128x8x8xi32>
  %q2 = graph.requantize %y2, %s2, %z : (tensor<1x128x8x8xi32>, tensor<1x128x1x1xf32>, tensor<i8>) -> tensor<1x128x8x8xi8>
  func.return %q, %q2 : tensor<1x112x8x8xi8>, tensor<1x128x8x8xi8>
}

// -----
// A residual block's end in force_fp16 (ResNet's): FIX dequantizes to f16 and the vector
// program goes on in f16, as the graph's add and relu are: no f32 tile, no cast in. The
// quantize multiplies by 1 / scale (20) in f16, rounds, adds the zero point and saturates
// (the relu is its lower bound); the store's vcast makes int8. The scale is no side.
// CHECK-LABEL: ascend.kernel @{{.*}}k0_fusion(
// CHECK-SAME:    core_type = "mix"
// CHECK:         %[[INV:.*]] = arith.constant 2.000000e+01 : f16
// CHECK-NEXT:    %[[ZP:.*]] = arith.constant -1.280000e+02 : f16
// CHECK-NEXT:    %[[MAX:.*]] = arith.constant 1.270000e+02 : f16
// CHECK:         ascend.copy %l0c, %{{.*}}, %quant {pad, quant_axis = 0 : i64} : memref<16x16xi32, "l0c"> to memref<16x8xf16, {{.*}}"gm"> quant memref<16xf32, "fb">
// CHECK-NOT:     xf32, {{.*}}"ub">
// CHECK:         ascend.vadd %[[T:.*]], %{{.*}}, %[[T]] : memref<8x16xf16, strided<[16, 1]>, "ub">
// CHECK-NEXT:    ascend.vrelu %[[T]], %[[T]] : memref<8x16xf16, strided<[16, 1]>, "ub">
// CHECK-NEXT:    ascend.vmuls %[[T]], %[[INV]], %[[Q:.*]] : memref<8x16xf16, strided<[16, 1]>, "ub">, f16,
// CHECK-NEXT:    ascend.vround %[[Q]], %[[Q]]
// CHECK-NEXT:    ascend.vadds %[[Q]], %[[ZP]], %[[Q]]
// CHECK-NEXT:    ascend.vmins %[[Q]], %[[MAX]], %[[Q]]
// CHECK:         ascend.vcast %[[Q]], %{{.*}} {round = "rint"} : memref<8x16xf16, strided<[16, 1]>, "ub">, memref<8x16xi8,
// CHECK-NOT:     xf32, {{.*}}"ub">
// CHECK:         ascend.return
func.func @residual_f16(%x: tensor<1x8x8x8xi8>, %w: tensor<32x8x1x1xi8>, %res: tensor<1x32x8x8xf16>) -> (tensor<1x32x8x8xf16>, tensor<1x32x8x8xi8>) {
  %b = graph.constant dense<-40> : tensor<32xi32>
  %s = graph.constant dense<0.01> : tensor<1x32x1x1xf32>
  %s2 = graph.constant dense<0.05> : tensor<f32>
  %z2 = graph.constant dense<-128> : tensor<i8>
  %y = graph.conv %x, %w, %b {offset_x = -3 : i64} : (tensor<1x8x8x8xi8>, tensor<32x8x1x1xi8>, tensor<32xi32>) -> tensor<1x32x8x8xi32>
  %d = graph.dequantize %y, %s : (tensor<1x32x8x8xi32>, tensor<1x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %h = graph.cast %d {to = f16} : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf16>
  %t = graph.add %h, %res : (tensor<1x32x8x8xf16>, tensor<1x32x8x8xf16>) -> tensor<1x32x8x8xf16>
  %r = graph.relu %t : (tensor<1x32x8x8xf16>) -> tensor<1x32x8x8xf16>
  %r32 = graph.cast %r {to = f32} : (tensor<1x32x8x8xf16>) -> tensor<1x32x8x8xf32>
  %q = graph.quantize %r32, %s2, %z2 : (tensor<1x32x8x8xf32>, tensor<f32>, tensor<i8>) -> tensor<1x32x8x8xi8>
  func.return %r, %q : tensor<1x32x8x8xf16>, tensor<1x32x8x8xi8>
}

// -----
// A block end without a requantize (the last one, read by a float pool): the add and relu in
// f16 too, the FIX's f16 tile staged and read back as it is.
// CHECK-LABEL: ascend.kernel @{{.*}}k0_fusion(
// CHECK-SAME:    core_type = "mix"
// CHECK-NOT:     xf32, {{.*}}"ub">
// CHECK:         ascend.vadd %[[T:.*]], %{{.*}}, %[[T]] : memref<8x16xf16, strided<[16, 1]>, "ub">
// CHECK-NEXT:    ascend.vrelu %[[T]], %[[T]] : memref<8x16xf16, strided<[16, 1]>, "ub">
// CHECK-NOT:     xf32, {{.*}}"ub">
// CHECK:         ascend.return
func.func @residual_f16_out(%x: tensor<1x8x8x8xi8>, %w: tensor<32x8x1x1xi8>, %res: tensor<1x32x8x8xf16>) -> tensor<1x32x8x8xf16> {
  %s = graph.constant dense<0.01> : tensor<1x32x1x1xf32>
  %y = graph.conv %x, %w {offset_x = -3 : i64} : (tensor<1x8x8x8xi8>, tensor<32x8x1x1xi8>) -> tensor<1x32x8x8xi32>
  %d = graph.dequantize %y, %s : (tensor<1x32x8x8xi32>, tensor<1x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %h = graph.cast %d {to = f16} : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf16>
  %t = graph.add %h, %res : (tensor<1x32x8x8xf16>, tensor<1x32x8x8xf16>) -> tensor<1x32x8x8xf16>
  %r = graph.relu %t : (tensor<1x32x8x8xf16>) -> tensor<1x32x8x8xf16>
  func.return %r : tensor<1x32x8x8xf16>
}

// -----
// The same with one scale per channel: the program stays f32 and divides by the scales' tile.
// CHECK-LABEL: ascend.kernel @{{.*}}k0_fusion(
// CHECK:         ascend.vcast %{{.*}}, %{{.*}} : memref<8x8xf16, {{.*}}"ub">, memref<8x8xf32, {{.*}}"ub">
// CHECK:         ascend.vadd {{.*}} : memref<8x8xf32, {{.*}}"ub">
// CHECK:         ascend.vdiv {{.*}} : memref<8x8xf32, {{.*}}"ub">
func.func @residual_per_channel_scales(%x: tensor<1x8x8x8xi8>, %w: tensor<32x8x1x1xi8>, %res: tensor<1x32x8x8xf16>) -> (tensor<1x32x8x8xf16>, tensor<1x32x8x8xi8>) {
  %s = graph.constant dense<0.01> : tensor<1x32x1x1xf32>
  %s2 = graph.constant dense<0.05> : tensor<1x32x1x1xf32>
  %z2 = graph.constant dense<-128> : tensor<i8>
  %y = graph.conv %x, %w {offset_x = -3 : i64} : (tensor<1x8x8x8xi8>, tensor<32x8x1x1xi8>) -> tensor<1x32x8x8xi32>
  %d = graph.dequantize %y, %s : (tensor<1x32x8x8xi32>, tensor<1x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %h = graph.cast %d {to = f16} : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf16>
  %t = graph.add %h, %res : (tensor<1x32x8x8xf16>, tensor<1x32x8x8xf16>) -> tensor<1x32x8x8xf16>
  %r = graph.relu %t : (tensor<1x32x8x8xf16>) -> tensor<1x32x8x8xf16>
  %r32 = graph.cast %r {to = f32} : (tensor<1x32x8x8xf16>) -> tensor<1x32x8x8xf32>
  %q = graph.quantize %r32, %s2, %z2 : (tensor<1x32x8x8xf32>, tensor<1x32x1x1xf32>, tensor<i8>) -> tensor<1x32x8x8xi8>
  func.return %r, %q : tensor<1x32x8x8xf16>, tensor<1x32x8x8xi8>
}

// -----
// An add the graph computes in f32 (an f32 residual): the program stays f32.
// CHECK-LABEL: ascend.kernel @{{.*}}k0_fusion(
// CHECK:         ascend.vcast %{{.*}}, %{{.*}} : memref<8x8xf16, {{.*}}"ub">, memref<8x8xf32, {{.*}}"ub">
// CHECK:         ascend.vadd {{.*}} : memref<8x8xf32, {{.*}}"ub">
// CHECK-NEXT:    ascend.vdiv {{.*}} : memref<8x8xf32, {{.*}}"ub">
func.func @residual_f32(%x: tensor<1x8x8x8xi8>, %w: tensor<32x8x1x1xi8>, %res: tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xi8> {
  %s = graph.constant dense<0.01> : tensor<1x32x1x1xf32>
  %s2 = graph.constant dense<0.05> : tensor<f32>
  %z2 = graph.constant dense<-128> : tensor<i8>
  %y = graph.conv %x, %w {offset_x = -3 : i64} : (tensor<1x8x8x8xi8>, tensor<32x8x1x1xi8>) -> tensor<1x32x8x8xi32>
  %d = graph.dequantize %y, %s : (tensor<1x32x8x8xi32>, tensor<1x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %h = graph.cast %d {to = f16} : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf16>
  %h32 = graph.cast %h {to = f32} : (tensor<1x32x8x8xf16>) -> tensor<1x32x8x8xf32>
  %t = graph.add %h32, %res : (tensor<1x32x8x8xf32>, tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %q = graph.quantize %t, %s2, %z2 : (tensor<1x32x8x8xf32>, tensor<f32>, tensor<i8>) -> tensor<1x32x8x8xi8>
  func.return %q : tensor<1x32x8x8xi8>
}
