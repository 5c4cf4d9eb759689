// Round trip of the elementwise graph ops: custom form, reprinted form and generic form.
// RUN: geir-opt %s | filecheck %s
// RUN: geir-opt %s | geir-opt | filecheck %s
// RUN: geir-opt %s --generic | geir-opt | filecheck %s

// CHECK-LABEL: func.func @unary_float(
// CHECK-SAME:    %x: tensor<2x3xf32>) {
func.func @unary_float(%x: tensor<2x3xf32>) {
  // CHECK-NEXT: %relu = graph.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %relu = graph.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sigmoid = graph.sigmoid %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sigmoid = graph.sigmoid %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %tanh = graph.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %tanh = graph.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %erf = graph.erf %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %erf = graph.erf %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %exp = graph.exp %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %exp = graph.exp %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %log = graph.log %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %log = graph.log %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sqrt = graph.sqrt %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sqrt = graph.sqrt %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %reciprocal = graph.reciprocal %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %reciprocal = graph.reciprocal %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %neg = graph.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %neg = graph.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %abs = graph.abs %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %abs = graph.abs %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sign = graph.sign %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sign = graph.sign %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %floor = graph.floor %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %floor = graph.floor %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %ceil = graph.ceil %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %ceil = graph.ceil %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %round = graph.round %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %round = graph.round %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sin = graph.sin %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sin = graph.sin %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %cos = graph.cos %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %cos = graph.cos %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %softplus = graph.softplus %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %softplus = graph.softplus %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %softsign = graph.softsign %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %softsign = graph.softsign %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %identity = graph.identity %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %identity = graph.identity %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %hard_swish = graph.hard_swish %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %hard_swish = graph.hard_swish %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %mish = graph.mish %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %mish = graph.mish %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: func.return
  func.return
}

// Attributes print only when given; a value equal to the default is kept.
// CHECK-LABEL: func.func @unary_attributes(
// CHECK-SAME:    %x: tensor<4xf16>) {
func.func @unary_attributes(%x: tensor<4xf16>) {
  // CHECK-NEXT: %leaky_relu = graph.leaky_relu %x {alpha = 2.000000e-01 : f32} : (tensor<4xf16>) -> tensor<4xf16>
  %leaky_relu = graph.leaky_relu %x {alpha = 2.000000e-01 : f32} : (tensor<4xf16>) -> tensor<4xf16>
  // CHECK-NEXT: %leaky_relu_default = graph.leaky_relu %x : (tensor<4xf16>) -> tensor<4xf16>
  %leaky_relu_default = graph.leaky_relu %x : (tensor<4xf16>) -> tensor<4xf16>
  // CHECK-NEXT: %elu = graph.elu %x {alpha = 5.000000e-01 : f32} : (tensor<4xf16>) -> tensor<4xf16>
  %elu = graph.elu %x {alpha = 5.000000e-01 : f32} : (tensor<4xf16>) -> tensor<4xf16>
  // CHECK-NEXT: %selu = graph.selu %x {alpha = 1.500000e+00 : f32, gamma = 1.000000e+00 : f32} : (tensor<4xf16>) -> tensor<4xf16>
  %selu = graph.selu %x {alpha = 1.500000e+00 : f32, gamma = 1.000000e+00 : f32} : (tensor<4xf16>) -> tensor<4xf16>
  // CHECK-NEXT: %celu = graph.celu %x {alpha = 1.000000e+00 : f32} : (tensor<4xf16>) -> tensor<4xf16>
  %celu = graph.celu %x {alpha = 1.000000e+00 : f32} : (tensor<4xf16>) -> tensor<4xf16>
  // CHECK-NEXT: %hard_sigmoid = graph.hard_sigmoid %x {alpha = 1.666660e-01 : f32, beta = 5.000000e-01 : f32} : (tensor<4xf16>) -> tensor<4xf16>
  %hard_sigmoid = graph.hard_sigmoid %x {alpha = 1.666660e-01 : f32, beta = 5.000000e-01 : f32} : (tensor<4xf16>) -> tensor<4xf16>
  // CHECK-NEXT: %gelu = graph.gelu %x {approximate = "tanh"} : (tensor<4xf16>) -> tensor<4xf16>
  %gelu = graph.gelu %x {approximate = "tanh"} : (tensor<4xf16>) -> tensor<4xf16>
  // CHECK-NEXT: %shrink = graph.shrink %x {bias = 1.000000e-01 : f32, lambd = 2.500000e-01 : f32} : (tensor<4xf16>) -> tensor<4xf16>
  %shrink = graph.shrink %x {bias = 1.000000e-01 : f32, lambd = 2.500000e-01 : f32} : (tensor<4xf16>) -> tensor<4xf16>
  // CHECK-NEXT: %thresholded_relu = graph.thresholded_relu %x {alpha = 2.000000e+00 : f32} : (tensor<4xf16>) -> tensor<4xf16>
  %thresholded_relu = graph.thresholded_relu %x {alpha = 2.000000e+00 : f32} : (tensor<4xf16>) -> tensor<4xf16>
  // CHECK-NEXT: func.return
  func.return
}

// relu, neg, abs, sign, identity and shrink also take integers.
// CHECK-LABEL: func.func @unary_int(
// CHECK-SAME:    %i: tensor<5xi32>, %b: tensor<5xi1>) {
func.func @unary_int(%i: tensor<5xi32>, %b: tensor<5xi1>) {
  // CHECK-NEXT: %relu = graph.relu %i : (tensor<5xi32>) -> tensor<5xi32>
  %relu = graph.relu %i : (tensor<5xi32>) -> tensor<5xi32>
  // CHECK-NEXT: %neg = graph.neg %i : (tensor<5xi32>) -> tensor<5xi32>
  %neg = graph.neg %i : (tensor<5xi32>) -> tensor<5xi32>
  // CHECK-NEXT: %abs = graph.abs %i : (tensor<5xi32>) -> tensor<5xi32>
  %abs = graph.abs %i : (tensor<5xi32>) -> tensor<5xi32>
  // CHECK-NEXT: %sign = graph.sign %i : (tensor<5xi32>) -> tensor<5xi32>
  %sign = graph.sign %i : (tensor<5xi32>) -> tensor<5xi32>
  // CHECK-NEXT: %identity = graph.identity %b : (tensor<5xi1>) -> tensor<5xi1>
  %identity = graph.identity %b : (tensor<5xi1>) -> tensor<5xi1>
  // CHECK-NEXT: %shrink = graph.shrink %i : (tensor<5xi32>) -> tensor<5xi32>
  %shrink = graph.shrink %i : (tensor<5xi32>) -> tensor<5xi32>
  // CHECK-NEXT: %not = graph.logical_not %b : (tensor<5xi1>) -> tensor<5xi1>
  %not = graph.logical_not %b : (tensor<5xi1>) -> tensor<5xi1>
  // CHECK-NEXT: func.return
  func.return
}

// Binary ops broadcast like numpy.
// CHECK-LABEL: func.func @binary(
// CHECK-SAME:    %x: tensor<2x3xf32>, %row: tensor<3xf32>, %col: tensor<2x1xf32>, %s: tensor<f32>) {
func.func @binary(%x: tensor<2x3xf32>, %row: tensor<3xf32>, %col: tensor<2x1xf32>, %s: tensor<f32>) {
  // CHECK-NEXT: %add = graph.add %x, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %add = graph.add %x, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sub = graph.sub %col, %row : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %sub = graph.sub %col, %row : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %mul = graph.mul %x, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %mul = graph.mul %x, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %div = graph.div %s, %x : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %div = graph.div %s, %x : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %mod = graph.mod %x, %col {fmod = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %mod = graph.mod %x, %col {fmod = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %pow = graph.pow %x, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %pow = graph.pow %x, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %prelu = graph.prelu %x, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %prelu = graph.prelu %x, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: func.return
  func.return
}

// Pow keeps the base's element type, whatever the exponent's.
// CHECK-LABEL: func.func @pow_mixed(
// CHECK-SAME:    %x: tensor<4xf32>, %e: tensor<i64>) -> tensor<4xf32> {
func.func @pow_mixed(%x: tensor<4xf32>, %e: tensor<i64>) -> tensor<4xf32> {
  // CHECK-NEXT: %pow = graph.pow %x, %e : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  %pow = graph.pow %x, %e : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  // CHECK-NEXT: func.return %pow : tensor<4xf32>
  func.return %pow : tensor<4xf32>
}

// CHECK-LABEL: func.func @compare(
// CHECK-SAME:    %x: tensor<2x3xi64>, %y: tensor<3xi64>, %p: tensor<2x3xi1>, %q: tensor<2x1xi1>) {
func.func @compare(%x: tensor<2x3xi64>, %y: tensor<3xi64>, %p: tensor<2x3xi1>, %q: tensor<2x1xi1>) {
  // CHECK-NEXT: %equal = graph.equal %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %equal = graph.equal %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  // CHECK-NEXT: %less = graph.less %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %less = graph.less %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  // CHECK-NEXT: %greater = graph.greater %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %greater = graph.greater %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  // CHECK-NEXT: %less_or_equal = graph.less_or_equal %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %less_or_equal = graph.less_or_equal %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  // CHECK-NEXT: %greater_or_equal = graph.greater_or_equal %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %greater_or_equal = graph.greater_or_equal %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  // CHECK-NEXT: %and = graph.logical_and %p, %q : (tensor<2x3xi1>, tensor<2x1xi1>) -> tensor<2x3xi1>
  %and = graph.logical_and %p, %q : (tensor<2x3xi1>, tensor<2x1xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: %or = graph.logical_or %p, %q : (tensor<2x3xi1>, tensor<2x1xi1>) -> tensor<2x3xi1>
  %or = graph.logical_or %p, %q : (tensor<2x3xi1>, tensor<2x1xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: %xor = graph.logical_xor %p, %q : (tensor<2x3xi1>, tensor<2x1xi1>) -> tensor<2x3xi1>
  %xor = graph.logical_xor %p, %q : (tensor<2x3xi1>, tensor<2x1xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: func.return
  func.return
}

// Variadic ops take one or more operands.
// CHECK-LABEL: func.func @variadic(
// CHECK-SAME:    %a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xf32>) {
func.func @variadic(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xf32>) {
  // CHECK-NEXT: %sum = graph.sum %a, %b, %c : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %sum = graph.sum %a, %b, %c : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %mean = graph.mean %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %mean = graph.mean %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %max = graph.max %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %max = graph.max %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %min = graph.min %c, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %min = graph.min %c, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @select_clip_cast(
// CHECK-SAME:    %cond: tensor<2x1xi1>, %x: tensor<2x3xf32>, %y: tensor<f32>) {
func.func @select_clip_cast(%cond: tensor<2x1xi1>, %x: tensor<2x3xf32>, %y: tensor<f32>) {
  // CHECK-NEXT: %where = graph.where %cond, %x, %y : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %where = graph.where %cond, %x, %y : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %lo = graph.constant dense<0.000000e+00> : tensor<f32>
  %lo = graph.constant dense<0.000000e+00> : tensor<f32>
  // CHECK-NEXT: %hi = graph.constant dense<6.000000e+00> : tensor<f32>
  %hi = graph.constant dense<6.000000e+00> : tensor<f32>
  // CHECK-NEXT: %clip = graph.clip %x, %lo, %hi : (tensor<2x3xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
  %clip = graph.clip %x, %lo, %hi : (tensor<2x3xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %clip_min = graph.clip %x, %lo : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %clip_min = graph.clip %x, %lo : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %clip_none = graph.clip %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %clip_none = graph.clip %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %to_f16 = graph.cast %x {to = f16} : (tensor<2x3xf32>) -> tensor<2x3xf16>
  %to_f16 = graph.cast %x {to = f16} : (tensor<2x3xf32>) -> tensor<2x3xf16>
  // CHECK-NEXT: %to_i1 = graph.cast %x {to = i1} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %to_i1 = graph.cast %x {to = i1} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %to_ui8 = graph.cast %x {to = ui8} : (tensor<2x3xf32>) -> tensor<2x3xui8>
  %to_ui8 = graph.cast %x {to = ui8} : (tensor<2x3xf32>) -> tensor<2x3xui8>
  // CHECK-NEXT: %dropout = graph.dropout %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %dropout = graph.dropout %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %ratio = graph.constant dense<5.000000e-01> : tensor<f32>
  %ratio = graph.constant dense<5.000000e-01> : tensor<f32>
  // CHECK-NEXT: %dropout_ratio = graph.dropout %x, %ratio : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %dropout_ratio = graph.dropout %x, %ratio : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK-NEXT: func.return
  func.return
}
