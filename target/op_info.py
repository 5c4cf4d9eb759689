"""Op info: what each kernel template of the target takes (GE's ops-info library).

GE describes every kernel by an op-info entry - the formats and dtypes of its inputs and
outputs, and whether the op may be computed in a lower precision (`precision_reduce`) - and
both the graph passes (format selection, mixed precision, fusion) and the kernel builder read
it. geir does the same: this module is the one place that says

* which graph ops each template builds a kernel for (`TEMPLATES`, `template_of`): fusion only
  groups what a template will take, and the lowering dispatches on it;
* which storage formats the cube kernels read and write (`cube_formats`, `cube_takes`):
  graph-layout offers only those, and the cube template builds exactly those;
* which element types each template computes in (`KernelInfo.dtypes`);
* how an op's precision may be reduced under GE's mixed-precision modes (`precision_of`):
  white (lowered to fp16 / bf16), black (kept in fp32), gray (follows its inputs).

A template may still reject a request it is listed for (a shape no tiling serves, a
combination the emitter does not handle); that is the template's own check, and the op then
runs the reference fallback. What is listed here is what the passes may plan for.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from xdsl.ir import Attribute, Operation

from geir.dialects import formats as F
from geir.dialects import graph as g
from geir.dialects.traits import Contraction, Normalization, RowSoftmax
from geir.target.device import dtype_name

# ---------------------------------------------------------------------------
# Templates and the ops they take.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelInfo:
    """One kernel template: the graph ops it builds kernels for and the element types it
    computes in (names as in the device file: f16, bf16, f32, i8, i32, ...)."""

    template: str
    ops: frozenset[type[Operation]]
    dtypes: frozenset[str]

    def takes(self, op: Operation | type[Operation]) -> bool:
        return (op if isinstance(op, type) else type(op)) in self.ops

    def takes_type(self, element_type: Attribute) -> bool:
        """The template computes in this element type (an xDSL type: f16, bf16, ...)."""
        return dtype_name(element_type) in self.dtypes


_VECTOR_DTYPES = frozenset({"f16", "bf16", "f32", "i1", "i8", "i16", "i32", "i64"})
"""What the vector templates take. bf16 is among them although the 910B's vector unit has no
bf16 arithmetic (ascend.BF16_VECTOR_OPS): the templates load bf16, compute in f32 and store
bf16 (lowering/templates/common.py, compute_type)."""

CUBE = KernelInfo(
    "cube", frozenset({g.ConvOp, g.MatMulOp, g.GemmOp}),
    # fp16 / bf16 inputs accumulate in f32 in L0C (the FIX copy rounds back), int8 x int8 in
    # i32 (the result is the i32 accumulator; a fused dequantize / requantize epilogue turns
    # it into float or int8); f32 runs the cube at 1/4 rate. uint8 operands are not taken:
    # graph-fold-qdq retypes uint8 activations to int8 (docs/quantization.md).
    frozenset({"f16", "bf16", "f32", "i8"}))

ROW = KernelInfo(
    "row", frozenset({
        # elementwise, one vector instruction each
        g.ReluOp, g.SigmoidOp, g.TanhOp, g.ErfOp, g.ExpOp, g.LogOp, g.SqrtOp, g.ReciprocalOp, g.NegOp,
        g.AbsOp, g.SignOp, g.FloorOp, g.CeilOp, g.RoundOp, g.SinOp, g.CosOp, g.LogicalNotOp,
        g.AddOp, g.SubOp, g.MulOp, g.DivOp, g.LogicalAndOp, g.LogicalOrOp, g.MaxOp, g.MinOp, g.SumOp,
        g.MeanOp, g.EqualOp, g.LessOp, g.GreaterOp, g.LessOrEqualOp, g.GreaterOrEqualOp, g.LogicalXorOp,
        g.WhereOp, g.ClipOp, g.PReluOp, g.PowOp, g.ExpandOp, g.BatchNormOp, g.CastOp,
        g.QuantizeOp, g.DequantizeOp, g.RequantizeOp,
        # elementwise, a short sequence of instructions
        g.SoftplusOp, g.SoftsignOp, g.LeakyReluOp, g.EluOp, g.SeluOp, g.CeluOp, g.HardSigmoidOp,
        g.HardSwishOp, g.GeluOp, g.ShrinkOp, g.MishOp, g.ThresholdedReluOp,
        # reductions and the row ops built on them
        g.ReduceSumOp, g.ReduceMeanOp, g.ReduceMaxOp, g.ReduceMinOp, g.ReduceSumSquareOp, g.ReduceL1Op,
        g.ReduceL2Op, g.ReduceLogSumOp, g.ReduceLogSumExpOp, g.SoftmaxOp, g.SafeSoftmaxOp, g.LogSoftmaxOp,
        g.LayerNormOp, g.RmsNormOp, g.InstanceNormOp, g.GlobalAvgPoolOp, g.GlobalMaxPoolOp,
        # row ops that mix a row's elements
        g.RotaryEmbeddingOp,
        # integer bitwise ops and float tests (vand / vor / vnot, vcmp)
        g.BitwiseAndOp, g.BitwiseOrOp, g.BitwiseXorOp, g.BitwiseNotOp, g.IsNanOp, g.IsInfOp,
        # views ride along inside any kernel
        g.ReshapeOp, g.FlattenOp, g.SqueezeOp, g.UnsqueezeOp, g.IdentityOp, g.DropoutOp,
    }),
    _VECTOR_DTYPES)

# What the row template's rule for an op costs, as (throughput class, passes over the op's
# largest tensor): graph-fuse's cost model prices a fusion with it. Ops not listed: one "unary"
# or "binary" pass (by arity); reductions one "reduce" pass.
VECTOR_PASSES: dict[type[Operation], tuple[tuple[str, int], ...]] = {
    g.SoftmaxOp: (("reduce", 2), ("binary", 2), ("unary", 1)),
    g.SafeSoftmaxOp: (("reduce", 2), ("binary", 2), ("unary", 1)),  # + two clamps of row statistics
    g.LogSoftmaxOp: (("reduce", 2), ("binary", 2), ("unary", 2)),
    g.LayerNormOp: (("reduce", 2), ("binary", 4), ("unary", 1)),
    g.RmsNormOp: (("reduce", 1), ("binary", 3), ("unary", 1)),
    g.RotaryEmbeddingOp: (("binary", 3), ("unary", 1)),
    g.InstanceNormOp: (("reduce", 2), ("binary", 4), ("unary", 1)),
    g.BatchNormOp: (("binary", 2),),
    g.ClipOp: (("binary", 2),),
    g.PReluOp: (("compare", 1), ("select", 1)),
    g.BitwiseXorOp: (("binary", 3), ("unary", 1)),
    g.IsNanOp: (("compare", 1),),
    g.IsInfOp: (("compare", 2), ("binary", 1)),
    g.WhereOp: (("select", 1),),
    g.CastOp: (("cast", 1),),
    # divide, round, + zero point, clamp (2), convert / convert, - zero point, * scale
    g.QuantizeOp: (("binary", 4), ("unary", 1), ("cast", 1)),
    g.DequantizeOp: (("cast", 1), ("binary", 2)),
    # convert / convert, * scale, round, + zero point, clamp (2)
    g.RequantizeOp: (("cast", 2), ("binary", 4), ("unary", 1)),
    g.ExpandOp: (("broadcast", 1),),
    g.SigmoidOp: (("unary", 2), ("binary", 1)),
    g.ErfOp: (("unary", 1), ("binary", 4)),
    g.GeluOp: (("unary", 2), ("binary", 5)),
    g.TransposeOp: (("transpose", 1),),
}

# Ops whose row rule computes a 16-bit tensor in f32 (RMSNorm: its statistics and the divide,
# stash_type 1): their passes are priced over the f32 bytes, plus a "cast" pass each way.
VECTOR_IN_F32: frozenset[type[Operation]] = frozenset({g.RmsNormOp})

POOL = KernelInfo("pool", frozenset({g.MaxPoolOp, g.AvgPoolOp}), frozenset({"f16", "bf16", "f32", "i8"}))

LRN = KernelInfo("lrn", frozenset({g.LrnOp}), frozenset({"f16", "bf16", "f32"}))

DATA = KernelInfo(
    "data", frozenset({
        g.TransposeOp, g.SliceOp, g.ConcatOp, g.SplitOp, g.PadOp, g.DepthToSpaceOp, g.SpaceToDepthOp,
        g.TileOp, g.ExpandOp, g.GatherOp,
        g.ReshapeOp, g.FlattenOp, g.SqueezeOp, g.UnsqueezeOp, g.IdentityOp, g.DropoutOp,
    }),
    # bytes are moved, not computed: any element type
    _VECTOR_DTYPES | {"f64", "u8", "u16", "u32", "u64"})

KV_CACHE = KernelInfo(
    # rows of a KV cache written at a run-time position (the scalar pipe reads it): bytes move
    "kv_cache", frozenset({g.KvCacheWriteOp}), _VECTOR_DTYPES | {"f64", "u8", "u16", "u32", "u64"})

TRANS_DATA = KernelInfo("trans_data", frozenset({g.TransDataOp}), _VECTOR_DTYPES)

ATTENTION = KernelInfo(
    "attention", frozenset({g.AttentionOp, g.CausalMaskOp}),
    # the cube's two products (scores, probabilities x v) in the input type with an f32
    # accumulator, the online softmax in f32 on the vector unit (lowering/templates/attention.py);
    # a causal_mask only as the mask of the attention it feeds (its band is computed in the
    # kernel), alone it runs the reference fallback
    frozenset({"f16", "bf16", "f32"}))

COLLECTIVE = KernelInfo(
    # an hccl task: the links move the bytes, any element type (reductions: numeric ones)
    "collective", frozenset({g.AllReduceOp, g.AllGatherOp, g.ReduceScatterOp, g.AllToAllOp, g.SendOp, g.RecvOp}),
    _VECTOR_DTYPES | {"f64", "u8", "u16", "u32", "u64"})

TEMPLATES: tuple[KernelInfo, ...] = (COLLECTIVE, CUBE, TRANS_DATA, ATTENTION, ROW, POOL, LRN, KV_CACHE, DATA)
"""Every template, in the order the lowering tries them."""


def template_of(op: Operation) -> KernelInfo | None:
    """The first template that takes `op` (as the lowering tries them), if any."""
    return next((t for t in TEMPLATES if t.takes(op)), None)


def vector_takes(op: Operation) -> bool:
    """Some vector-unit template (row, pool, lrn) builds kernels for `op`."""
    return any(t.takes(op) for t in (ROW, POOL, LRN))


# ---------------------------------------------------------------------------
# Storage formats of the cube kernels.
# ---------------------------------------------------------------------------


def cube_formats(op: g.GraphOp, i: int, matmul_nz: bool = True) -> tuple[str, ...]:
    """The storage formats operand `i` (the result if i == number of operands) of a conv /
    matmul / gemm kernel can take, the kernel's native one last: those the op accepts
    (dialects/formats.py) that the value's rank allows. Grouped and depthwise convs read and
    write ND only (no kernel takes them blocked).

    An int8 convolution reads its feature map as NC1HWC0 with C0 = 32 and its weights as
    int8 FRACTAL_Z (16 x 32 fractals), as load3d and the int8 cube want them, and writes
    its i32 result (and the dequantized or requantized outputs of its epilogue) in ND - a
    pointwise window reads an ND feature map as the matrix it is, so ND is its native
    input (ConvPlan.matrix_fm). Other int8 contractions read and write ND."""
    n = len(op.operands)
    if isinstance(op, g.ConvOp) and op.attrs()["group"] != 1:
        return (F.ND,)
    if g.is_integer_contraction(op):
        if i == n and fix_requantized(op) is not None:
            return (F.ND, F.NC1HWC0)
        if not isinstance(op, g.ConvOp) or i not in (0, 1) or len(F.logical_shape(op.operands[i].type)) != 4:
            return (F.ND,)
        if i == 1:
            return (F.ND, F.FRACTAL_Z)
        return (F.NC1HWC0, F.ND) if pointwise(op) else (F.ND, F.NC1HWC0)
    v = op.results[0] if i == n else op.operands[i]
    rank = len(F.logical_shape(v.type))
    # FRACTAL_NZ only on matrices: the matmul kernels read and write fractals of one matrix
    # (a batch of them, or a [B, S, K] activation folded to [B * S, K] rows, they take in ND)
    return tuple(f for f in F.slot_formats(op, None if i == n else i)
                 if f == F.ND or (rank == 4 if f in F.FOUR_D else matmul_nz and rank == 2))


def fix_requantized(op: g.GraphOp) -> list[g.GraphOp] | None:
    """The ops after an int8 convolution that the FIX pipe computes on its way out of l0c
    when they requantize its i32 result straight to int8 - its one reader a graph.requantize
    in the same block, then at most a graph.relu of the int8 result read by nothing else -
    or None. The FIX copy writes that int8 result in ND or NC1HWC0 (C0 = 32) as the kernel
    likes (lowering/templates/cube/fix_quant.py), so the result may take either format."""
    if not isinstance(op, g.ConvOp) or not g.is_integer_contraction(op) or op.attrs()["group"] != 1:
        return None
    if len(F.logical_shape(op.results[0].type)) != 4:
        return None
    uses = list(op.results[0].uses)
    if len(uses) != 1 or not isinstance(rq := uses[0].operation, g.RequantizeOp) or uses[0].index != 0:
        return None
    chain = [rq]
    readers = list(rq.results[0].uses)
    if len(readers) == 1 and isinstance(relu := readers[0].operation, g.ReluOp) and relu.parent is rq.parent:
        chain.append(relu)
    return chain


def pointwise(op: g.ConvOp) -> bool:
    """A window of one pixel at stride 1 without padding: output pixel p reads input pixel p,
    so an image's [C, pixels] is the product's [K, pixels] matrix as it lies and the conv
    kernel reads an ND map as that matrix (lowering/templates/cube ConvPlan.matrix_fm)."""
    attrs = op.attrs()
    kernel = F.logical_shape(op.operands[1].type)[2:]
    return all(k == 1 for k in kernel) and set(attrs.get("strides") or (1,)) == {1} and not any(attrs.get("pads") or ())


def native_formats(op: g.GraphOp, matmul_nz: bool = True) -> tuple[str, ...]:
    """Per operand, then the result: the format a cube kernel reads / writes natively."""
    return tuple(cube_formats(op, i, matmul_nz)[-1] for i in range(len(op.operands) + 1))


def cube_takes(op: g.GraphOp, formats: tuple[str, ...]) -> bool:
    """Whether the cube kernels take a conv / matmul / gemm with these operand and result
    formats: an NC1HWC0 feature map is read in FRACTAL_Z's K order (c1, kh, kw, c0), so it
    needs FRACTAL_Z weights; a FRACTAL_NZ result is written as the fractals L0C holds, with
    no epilogue after it (a gemm's C input, ops after it in its fusion)."""
    if isinstance(op, g.ConvOp):
        return not (formats[0] == F.NC1HWC0 and formats[1] != F.FRACTAL_Z)
    return formats[-1] != F.FRACTAL_NZ or not _has_epilogue(op)


def _has_epilogue(op: g.GraphOp) -> bool:
    if isinstance(op, g.GemmOp) and len(op.operands) > 2:
        return True
    return isinstance(op.parent_op(), g.FusionOp) and any(
        not isinstance(use.operation, g.YieldOp) for use in op.results[0].uses)


# ---------------------------------------------------------------------------
# Precision (GE's precision_reduce flag).
# ---------------------------------------------------------------------------


class Precision(Enum):
    WHITE = "white"  # may be computed in fp16 / bf16: the cube's own work
    BLACK = "black"  # kept in fp32: range or accumulation error matters
    GRAY = "gray"    # follows its inputs


_BLACK = frozenset({
    # exp/log/pow overflow or lose range in fp16; sums over many elements lose precision
    g.ExpOp, g.LogOp, g.PowOp, g.SoftplusOp, g.ReduceSumOp, g.ReduceMeanOp, g.ReduceProdOp,
    g.ReduceSumSquareOp, g.ReduceL1Op, g.ReduceL2Op, g.ReduceLogSumOp, g.ReduceLogSumExpOp,
    g.SoftmaxOp, g.SafeSoftmaxOp, g.LogSoftmaxOp, g.LayerNormOp, g.InstanceNormOp, g.BatchNormOp,
    g.LrnOp, g.GlobalAvgPoolOp, g.AvgPoolOp,
    # running sums / products accumulate; cosh / sinh overflow as exp does (ONNX CumSum ...)
    g.CumSumOp, g.CumProdOp, g.CoshOp, g.SinhOp,
})


def precision_of(op: Operation | type[Operation]) -> Precision:
    """How an op's precision may be reduced in GE's mixed-precision modes: contractions and
    attention (which keeps its softmax in fp32 whatever its inputs) are white, the range- and accumulation-sensitive ops above black, everything else gray."""
    kind = op if isinstance(op, type) else type(op)
    if kind.has_trait(Contraction) or ATTENTION.takes(kind):  # attention: its softmax is fp32 inside
        return Precision.WHITE
    if kind in _BLACK or kind.has_trait(Normalization) or kind.has_trait(RowSoftmax):
        return Precision.BLACK
    return Precision.GRAY
