"""graph-layout: choose a storage format per tensor, insert graph.trans_data where formats
change, cancel inverse pairs and convert constant weights at compile time.

Ascend's cube reads 16-channel blocks: GE stores convolution activations as NC1HWC0,
convolution weights as FRACTAL_Z and matrices as FRACTAL_NZ (dialects/formats.py). This pass
does GE's format selection in four steps, on the logical program (it first strips any
formats and trans_data already there, so it is idempotent):

1. **Clusters.** Ops that can run in a blocked format without reordering data tie their
   operands' and results' formats together: elementwise ops (on storage arrays, scalars
   aside), pooling / batch_norm / lrn (per channel over H, W), concats whose blocks each lie
   in one operand (along C only when every channel count is a multiple of C0). A graph.fusion
   ties each operand to its block argument and each result to what the body yields, so
   clusters run through fusion bodies. A cluster is one value of the union-find; each gets
   one label, ND or its blocked candidate: NC1HWC0 for 4-D float tensors with at least
   `min-channels` channels touched by a conv, FRACTAL_NZ for matrices touched by a matmul /
   gemm, when every op in the cluster can run in it.
2. **Anchors.** conv, matmul and gemm read and write each operand in a format of their own
   choosing (conv: x ND/NC1HWC0, w ND/FRACTAL_Z, result ND/NC1HWC0; matmul, gemm: ND or
   FRACTAL_NZ each). Reading or writing a non-native format costs a re-layout inside the
   kernel; reading another cluster's format costs a trans_data.
3. **Costs and search.** Everything is priced with the device cost model
   (target.cost_model.CostModel, as graph-fuse): each op's work in the bytes of its formats
   (NC1HWC0 pads C to C0, and a conv's K with it), each trans_data as a vector kernel (read,
   reorder, write, launch - inside a fusion body too: no template takes a trans_data with other
   ops, so the lowering splits the fusion there), each in-kernel re-layout as that kernel's
   work without a launch. Labels start at the blocked candidate (GE's
   choice); a cluster flips when that lowers the total of every term that depends on it (on
   a tie it goes ND: a blocked format must pay for itself), until nothing flips. So a
   conversion that costs more than it saves is not made (the 3-channel input of the first
   conv, a tensor whose only blocked consumer is one conv).
4. **Materialisation.** Values take their cluster's format; a trans_data is inserted after
   a value for each other format its readers need (once per value and format); constants
   are converted at compile time (per-channel constants first get the result's rank).
   Neighbours that share a blocked format share it directly, so the inverse pairs GE inserts
   and then cancels never appear; pairs in the input are stripped with everything else.

Function arguments and results stay plain: the model's interface does not change.
docs/layout.md documents the formats, the rules and the cost model.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.dialects import formats as L
from geir.target import op_info
from geir.ir.types import is_float, to_dtype, to_element_type
from geir.passes.graph.fuse import op_work, role_of
from geir.passes.graph.utils import constant
from geir.target.cost_model import CostModel
from geir.target.device import DEFAULT_DEVICE, dtype_name

PROPAGATING = ("elementwise", "propagate", "concat")
MAX_ROUNDS = 8
EPS_US = 1e-9

# ---------------------------------------------------------------------------
# Cost model.
# ---------------------------------------------------------------------------


def _nbytes(t: TensorType, fmt: str = L.ND) -> int:
    """Bytes of the logical type `t` stored in `fmt`."""
    shape = tuple(t.get_shape())
    origin = L.NCHW if fmt in L.FOUR_D else L.ND
    phys = L.physical_shape(fmt, origin, shape, L.c0_of(t.element_type))
    return math.prod(phys) * to_dtype(t.element_type).itemsize


def _aligned(t: TensorType, rank: int) -> TensorType:
    """`t` with leading 1s up to `rank` (how a broadcast operand is stored)."""
    shape = tuple(t.get_shape())
    return TensorType(t.element_type, (1,) * (rank - len(shape)) + shape)


def _vdtype(t: TensorType) -> str:
    name = dtype_name(to_dtype(t.element_type))
    return {"f64": "f32", "i1": "i8", "u8": "i8", "i64": "i32", "u64": "i32", "u32": "i32", "u16": "i16"}.get(name, name)


class LayoutCosts:
    """Prices formats with the device cost model. Prices are microseconds of kernel work
    without the launch overhead, except that of a standalone trans_data, which is a kernel."""

    VECTOR_TILE_BYTES = 16 * 1024
    """Bytes of the largest tensor per vector core before a kernel is split (as graph-fuse)."""

    def __init__(self, device: str = DEFAULT_DEVICE):
        self.model = CostModel(device)
        self.spec = self.model.spec
        self._cache: dict[tuple, float] = {}
        # the device's FIX pipe quantizes (its scales reach it through l1 -> fb): an int8
        # conv's requantized result may then be written blocked (op_info.fix_requantized)
        self.fix_quantizes = self.spec.fix_quantizes

    def _vector_block_dim(self, largest: int) -> int:
        return max(1, min(self.spec.vector_cores, -(-largest // self.VECTOR_TILE_BYTES)))

    def relayout_us(self, t: TensorType, src: str, dst: str, in_kernel: bool) -> float:
        """Reordering the logical type `t` from `src` to `dst`: a vector transpose pass,
        reading `src` bytes and writing `dst` bytes in HBM; a kernel of its own (a
        trans_data, with its launch) unless `in_kernel`."""
        if src == dst:
            return 0.0
        return self.relayout_bytes_us(_nbytes(t, src), _nbytes(t, dst), _vdtype(t), in_kernel)

    def relayout_bytes_us(self, src_bytes: int, dst_bytes: int, dtype: str, in_kernel: bool) -> float:
        key = ("relayout", src_bytes, dst_bytes, dtype, in_kernel)
        if key not in self._cache:
            largest = max(src_bytes, dst_bytes)
            est = self.model.kernel_estimate(
                vector_bytes={("transpose", dtype): largest}, hbm_read_bytes=src_bytes,
                hbm_write_bytes=dst_bytes, block_dim=self._vector_block_dim(largest))
            self._cache[key] = est.total_us - (est.launch_us if in_kernel else 0.0)
        return self._cache[key]

    def op_us(self, op: Operation, fmt: str, tied: tuple[int, ...]) -> float:
        """A propagating op's kernel with its tied operands and results in `fmt`: its vector
        passes (graph-fuse's op_work) over the padded bytes, and its HBM traffic."""
        key = ("op", op, fmt)
        if key not in self._cache:
            res = op.results[0].type
            scale = _nbytes(res, fmt) / max(_nbytes(res), 1)
            work = op_work(op, role_of(op), standalone=True)
            vector = {k: int(n * scale) for k, n in work.vector.items()}
            rank = len(res.get_shape())
            reads = sum(_nbytes(_aligned(v.type, rank), fmt) if i in tied else _nbytes(v.type)
                        for i, v in enumerate(op.operands))
            writes = sum(_nbytes(r.type, fmt) for r in op.results)
            est = self.model.kernel_estimate(
                vector_bytes=vector, hbm_read_bytes=reads, hbm_write_bytes=writes,
                block_dim=self._vector_block_dim(max(reads, writes)))
            self._cache[key] = est.total_us - est.launch_us
        return self._cache[key]

    def anchor_us(self, op: Operation, formats: tuple[str, ...], natives: tuple[str, ...]) -> float:
        """A cube op's kernel with its operands and result (last) in `formats`: cube work in
        16x16 fractals (a conv's K = Cin*kh*kw in FRACTAL_Z order, Cin padded to C0), HBM
        traffic in those formats, and the in-kernel re-layout of every operand / result not in
        its `natives` format."""
        key = ("anchor", op, formats, natives)
        if key not in self._cache:
            self._cache[key] = self._kernel_us(op, formats) + self.penalty_us(op, formats, natives)
        return self._cache[key]

    def _kernel_us(self, op: Operation, formats: tuple[str, ...]) -> float:
        *ins, out = formats
        types = [v.type for v in op.operands]
        res = op.results[0].type
        dtype = _vdtype(res) if _vdtype(res) in op_info.CUBE.dtypes else "f32"
        c0 = L.c0_of(res.element_type)
        if g.is_integer_contraction(op):  # int8 operands, an i32 accumulator: the int8 cube, K in C0 = 32
            dtype, c0 = "i8", L.c0_of(types[0].element_type)
        out_shape = tuple(res.get_shape())
        if op.LAYOUT == "conv":
            c = types[0].get_shape()[1]
            m, cg, kh, kw = types[1].get_shape()
            pixels = out_shape[0] * math.prod(out_shape[2:])
            if op.attrs()["group"] == 1 and ins[1] == L.FRACTAL_Z:  # K in FRACTAL_Z order: (C1, kh, kw, C0)
                macs = pixels * _round(m, 16) * _round(c, c0) * kh * kw
            elif op.attrs()["group"] == 1:  # plain weights: K = (c, kh, kw), padded once
                macs = pixels * _round(m, 16) * _round(c * kh * kw, 16)
            else:  # channel groups share the C0 lanes: no padding per group
                macs = pixels * m * cg * kh * kw
        else:
            a, b = (tuple(t.get_shape()) for t in types[:2])
            if op.LAYOUT == "gemm":
                mm, k = (a[1], a[0]) if op.attrs()["trans_a"] else a
                nn = b[0] if op.attrs()["trans_b"] else b[1]
                batch = 1
            else:
                a2 = (1, *a) if len(a) == 1 else a
                b2 = (*b, 1) if len(b) == 1 else b
                mm, k, nn = a2[-2], a2[-1], b2[-1]
                batch = math.prod(g.broadcast_shapes(a2[:-2], b2[:-2]))
            macs = batch * _round(mm, 16) * _round(k, c0) * _round(nn, 16)
        reads = sum(_nbytes(t, f) for t, f in zip(types, ins))
        writes = _nbytes(res, out)
        block_dim = max(1, min(self.spec.cube_cores, -(-math.prod(out_shape) // 256)))
        est = self.model.kernel_estimate(cube_macs=macs, cube_dtype=dtype, hbm_read_bytes=reads,
                                         hbm_write_bytes=writes, block_dim=block_dim)
        return est.total_us - est.launch_us

    def penalty_us(self, op: Operation, formats: tuple[str, ...], natives: tuple[str, ...]) -> float:
        """The in-kernel re-layout of each operand / result a cube op reads or writes in a
        format other than its native one."""
        n = len(op.operands)
        total = 0.0
        for i, (f, native) in enumerate(zip(formats, natives)):
            if f == native or (op.LAYOUT == "conv" and i == 1):
                # plain conv weights are read as the [Cout, K] matrix they are: the copy's
                # ND2NZ moves whole fractal rows, at full rate (CostModel.dma_bytes)
                continue
            t = L.logical_type(op.results[0].type if i == n else op.operands[i].type)
            if i == n and self.fix_quantizes and op_info.fix_requantized(op) is not None:
                continue  # the FIX copy writes the requantized int8 result in either format
            if i == n:
                total += self.relayout_us(t, native, f, True)
            elif op.LAYOUT == "conv" and g.is_integer_contraction(op):
                # an ND map through load3d; a pointwise window reads either form as it lies
                total += self.box_relayout_us(t) if f == L.ND else 0.0
            else:
                total += self.relayout_us(t, f, native, True)
        return total

    def box_relayout_us(self, t: TensorType) -> float:
        """An ND int8 feature map read by load3d: each l1 box copy interleaves it into C0
        lanes one element per DMA block (ascend.CopyOp.relayout, CostModel.dma_bytes)."""
        key = ("box", t)
        if key not in self._cache:
            item = to_dtype(t.element_type).itemsize
            moved = self.model.dma_bytes(_nbytes(t), item)
            est = self.model.kernel_estimate(hbm_read_bytes=moved, block_dim=self.spec.cube_cores)
            self._cache[key] = est.total_us - est.launch_us
        return self._cache[key]


def _round(x: int, m: int) -> int:
    return -(-x // m) * m


# ---------------------------------------------------------------------------
# The plan.
# ---------------------------------------------------------------------------


def _walk(block: Block) -> Iterator[Operation]:
    """Ops of a block in order, each graph.fusion followed by its body."""
    for op in block.ops:
        yield op
        if isinstance(op, g.FusionOp):
            yield from _walk(op.body.block)


def _static_float(t) -> bool:
    return isinstance(t, TensorType) and all(d >= 0 for d in t.get_shape()) and is_float(t.element_type)


def cube_type(t) -> bool:
    """A static tensor the cube computes on: f16 or f32 (f64 has no cube)."""
    return _static_float(t) and _vdtype(t) in op_info.CUBE.dtypes and to_dtype(t.element_type).itemsize in (2, 4)


def _static_int8(t) -> bool:
    return isinstance(t, TensorType) and all(d >= 0 for d in t.get_shape()) and t.element_type in g.INT8_TYPES


def _int8_max_pool(op: Operation) -> bool:
    """An int8 max pool (graph-fold-qdq moves quantizes before max pools): it runs blocked as
    its float form does, in int8's C0 = 32 lanes."""
    return isinstance(op, g.MaxPoolOp) and _static_int8(op.operands[0].type) and _static_int8(op.results[0].type)


@dataclass(eq=False)
class Anchor:
    """A cube op: per operand (then the result) the formats it may take and its native one."""

    op: g.GraphOp
    slots: list[tuple[str, ...]]
    natives: tuple[str, ...]
    choice: tuple[str, ...] = ()

    def values(self) -> list[SSAValue]:
        return [*self.op.operands, self.op.results[0]]


@dataclass(eq=False)
class Cluster:
    """Values that share one format: linked by propagating ops and fusion boundaries."""

    values: list[SSAValue] = field(default_factory=list)
    ops: list[tuple[Operation, tuple[int, ...]]] = field(default_factory=list)  # op, tied operands
    anchors: list[Anchor] = field(default_factory=list)
    candidate: str = L.ND
    label: str = L.ND


class Planner:
    """Formats for the values of one function body, fusion bodies included."""

    def __init__(self, body: Block, costs: LayoutCosts, min_channels: int, matmul_nz: bool):
        self.costs = costs
        self.min_channels = min_channels
        self.matmul_nz = matmul_nz
        self.top = body
        self.parent: dict[SSAValue, SSAValue] = {}
        self.producer: dict[SSAValue, str] = {}  # "prop", "link", "anchor" or "nd"
        self.nd_reads: set[SSAValue] = set()
        self.tied: dict[Operation, tuple[int, ...]] = {}
        self.anchors: dict[Operation, Anchor] = {}
        self.const_args: dict[BlockArgument, SSAValue] = {}
        self.values: list[SSAValue] = []
        # an int8 conv's requantize (and relu) that the FIX pipe computes: they write their
        # int8 result in the conv result's format (op_info.fix_requantized)
        self.fix_int8: set[Operation] = set()
        if costs.fix_quantizes:
            for op in _walk(body):
                self.fix_int8.update(op_info.fix_requantized(op) or ())
        for v in body.args:
            self._value(v, "nd")
        self._build(body)
        self.clusters = self._clusters()

    # -- union-find ----------------------------------------------------------

    def find(self, v: SSAValue) -> SSAValue:
        root = v
        while (up := self.parent.get(root, root)) is not root:
            root = up
        while v is not root:
            self.parent[v], v = root, self.parent.get(v, v)
        return root

    def union(self, a: SSAValue, b: SSAValue) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[rb] = ra

    # -- building ------------------------------------------------------------

    def _build(self, block: Block) -> None:
        for op in _walk(block):
            if isinstance(op, (g.ConstantOp, g.YieldOp)):
                continue
            if isinstance(op, g.FusionOp):
                for arg, v in zip(op.body.block.args, op.inputs):
                    if isinstance(v.owner, g.ConstantOp):
                        self.const_args[arg] = v  # a weight passed in: converted like a constant
                    else:
                        self._value(arg, "link")
                        self.union(arg, v)
                for r, v in zip(op.outputs, op.yield_op().values):
                    self._value(r, "link")
                    self.union(r, v)
                continue
            kind = getattr(op, "LAYOUT", "nd")
            if (kind in PROPAGATING or op in self.fix_int8) and (tied := self._tied(op)) is not None:
                self.tied[op] = tied
                self._value(op.results[0], "prop")
                for i, v in enumerate(op.operands):
                    if i not in tied:
                        self._read_nd(v)
                    elif not self.is_const(v):
                        self.union(op.results[0], v)
                continue
            if op_info.CUBE.takes(op) and (anchor := self._anchor(op)) is not None:
                self.anchors[op] = anchor
                self._value(op.results[0], "anchor")
                continue
            for v in op.operands:
                self._read_nd(v)
            for r in op.results:
                self._value(r, "nd")

    def is_const(self, v: SSAValue) -> bool:
        """A graph.constant, or a fusion block argument whose operand is one."""
        return isinstance(v.owner, g.ConstantOp) or v in self.const_args

    def _value(self, v: SSAValue, producer: str) -> None:
        self.producer[v] = producer
        self.values.append(v)

    def _read_nd(self, v: SSAValue) -> None:
        if not self.is_const(v):
            self.nd_reads.add(v)

    def _tied(self, op: Operation) -> tuple[int, ...] | None:
        """The operands that share a propagating op's format, if it can run in a blocked
        format at all; None makes it an ND op."""
        if len(op.results) != 1 or not (_static_float(op.results[0].type) or op in self.fix_int8
                                        or _int8_max_pool(op)):
            return None
        if op.LAYOUT == "propagate":
            tied = (0,)
        elif op.LAYOUT == "concat":
            tied = tuple(range(len(op.operands)))
        else:
            tied = tuple(i for i, v in enumerate(op.operands) if not L.is_scalar(v.type))
        if not tied or not all(_static_float(op.operands[i].type) or op in self.fix_int8 or _int8_max_pool(op)
                               for i in tied):
            return None
        return tied if self._op_formats(op, tied) else None

    def _op_formats(self, op: Operation, tied: tuple[int, ...]) -> tuple[str, ...]:
        """The blocked formats a propagating op can run in."""
        res = op.results[0].type
        ins = [op.operands[i] for i in tied]
        rank = len(res.get_shape())
        if op in self.fix_int8:  # the FIX copy writes the conv's requantized int8 result blocked
            return (L.NC1HWC0,) if rank == 4 else ()
        if any(not self.is_const(v) and len(v.type.get_shape()) != rank for v in ins):
            return ()  # a non-constant operand of another rank cannot share the storage
        out = []
        for fmt in (L.NC1HWC0, L.FRACTAL_NZ):
            if fmt == L.FRACTAL_NZ and (not self.matmul_nz or rank < 2):
                continue
            if op.LAYOUT == "propagate":
                ok = fmt == L.NC1HWC0 and rank == 4
            elif op.LAYOUT == "concat":
                ok = L.concat_fits(fmt, [v.type for v in ins], op.attrs()["axis"]) is None
            else:
                ok = L.elementwise_fits(fmt, res, [v.type for v in ins]) is None
            if ok:
                out.append(fmt)
        return tuple(out)

    def _anchor(self, op: g.GraphOp) -> Anchor | None:
        values = [*op.operands, op.results[0]]
        if g.is_integer_contraction(op):
            if not (isinstance(op, g.ConvOp) and all(_static_int8(v.type) for v in values[:2])):
                return None
        elif not all(cube_type(v.type) for v in values):
            return None
        if op.LAYOUT == "conv" and any(len(v.type.get_shape()) != 4 for v in values[:2]):
            return None  # 1-D / 3-D convolutions stay ND
        slots = []
        for i, v in enumerate(values):
            capable = op_info.cube_formats(op, i, self.matmul_nz)
            slots.append(tuple(f for f in capable if f != L.NC1HWC0 or v.type.get_shape()[1] >= self.min_channels))
        if all(s == (L.ND,) for s in slots):
            return None
        return Anchor(op, slots, op_info.native_formats(op, self.matmul_nz))

    def _capable(self, t: TensorType, fmt: str) -> bool:
        rank = len(t.get_shape())
        if fmt in (L.NC1HWC0, L.FRACTAL_Z):
            return rank == 4
        if fmt == L.FRACTAL_NZ:
            return self.matmul_nz and rank >= 2
        return True

    def _clusters(self) -> dict[SSAValue, Cluster]:
        clusters: dict[SSAValue, Cluster] = {}
        for v in self.values:
            clusters.setdefault(self.find(v), Cluster()).values.append(v)
        for op, tied in self.tied.items():
            clusters[self.find(op.results[0])].ops.append((op, tied))
        wanted: dict[SSAValue, list[str]] = {}
        for a in self.anchors.values():
            for v, native in zip(a.values(), a.natives):
                if self.is_const(v):
                    continue
                c = clusters[self.find(v)]
                if a not in c.anchors:
                    c.anchors.append(a)
                if native != L.ND:
                    wanted.setdefault(self.find(v), []).append(native)
        for root, c in clusters.items():
            for fmt in dict.fromkeys(wanted.get(root, ())):
                if self._cluster_can_be(c, fmt):
                    c.candidate = c.label = fmt
                    break
        return clusters

    def _cluster_can_be(self, c: Cluster, fmt: str) -> bool:
        for v in c.values:
            t = v.type
            quantized = _static_int8(t) or (t.element_type == g.ACC_TYPE and v.owner in self.anchors)
            if not (_static_float(t) or (fmt == L.NC1HWC0 and quantized)) or not self._capable(t, fmt):
                return False
            if fmt == L.NC1HWC0 and t.get_shape()[1] < self.min_channels:
                return False
        if fmt == L.FRACTAL_Z and c.ops:
            return False
        return all(fmt in self._op_formats(op, tied) for op, tied in c.ops)

    # -- costs ------------------------------------------------------------------

    def label(self, v: SSAValue) -> str:
        if self.is_const(v):
            return L.ND
        c = self.clusters.get(self.find(v))
        return c.label if c is not None else L.ND

    def best(self, a: Anchor) -> tuple[float, tuple[str, ...]]:
        """The cheapest formats for a cube op given the labels of its neighbours: its kernel
        plus a trans_data for each operand / result whose cluster has another format."""
        n = len(a.op.operands)
        best: tuple[float, tuple[str, ...]] | None = None
        for combo in itertools.product(*a.slots):
            if not op_info.cube_takes(a.op, combo):
                continue
            t = self.costs.anchor_us(a.op, combo, a.natives)
            for i, (v, f) in enumerate(zip(a.values(), combo)):
                if not self.is_const(v):
                    have = self.label(v)
                    src, dst = (f, have) if i == n else (have, f)
                    t += self.costs.relayout_us(v.type, src, dst, False)
            if best is None or t < best[0] - EPS_US:
                best = (t, combo)
        assert best is not None
        return best

    def local_us(self, c: Cluster) -> float:
        """Every term of the modeled total that depends on the label of `c`."""
        fmt = c.label
        total = sum(self.costs.op_us(op, fmt, tied) for op, tied in c.ops)
        if fmt != L.ND:
            for v in c.values:
                if self.producer[v] == "nd":
                    total += self.costs.relayout_us(v.type, L.ND, fmt, False)
                if v in self.nd_reads:
                    total += self.costs.relayout_us(v.type, fmt, L.ND, False)
        return total + sum(self.best(a)[0] for a in c.anchors)

    def solve(self) -> None:
        """Coordinate descent from GE's choice (every candidate blocked): a cluster flips
        when that lowers the terms that depend on it, until no cluster flips. A blocked
        format must pay for itself: on a tie the cluster goes (and stays) ND."""
        order = list({id(c): c for v in self.values if (c := self.clusters[self.find(v)]).candidate != L.ND}.values())
        for _ in range(MAX_ROUNDS):
            changed = False
            for c in order:
                current = self.local_us(c)
                keep = c.label
                c.label = L.ND if keep != L.ND else c.candidate
                margin = EPS_US if c.label == L.ND else -EPS_US
                if self.local_us(c) < current + margin:
                    changed = True
                else:
                    c.label = keep
            if not changed:
                break
        for a in self.anchors.values():
            a.choice = self.best(a)[1]

    # -- materialisation ----------------------------------------------------

    def materialize(self) -> None:
        """Retype values, insert a trans_data after a value for each other format its
        readers need, convert constants. Uses are collected first: retyping replaces values."""
        uses = {v: [(u.operation, u.index, self.wanted(u.operation, u.index)) for u in v.uses] for v in self.values}
        readers = [(op, i, v, self.wanted(op, i)) for op in _walk(self.top)
                   for i, v in enumerate(op.operands) if self.is_const(v)]
        labels = {v: self.label(v) for v in self.values}
        versions: dict[SSAValue, dict[str, SSAValue]] = {}
        for v in self.values:
            fmt = self.written(v)
            new = v if fmt == L.ND else Rewriter.replace_value_with_new_type(v, L.format_type(v.type, fmt))
            versions[v] = {fmt: new}
        for v in self.values:
            for user, index, want in uses[v]:
                if want not in versions[v]:
                    versions[v][want] = self._convert(labels[v], versions[v], want)
                user.operands[index] = versions[v][want]
        cache: dict[tuple, SSAValue] = {}
        for user, index, v, want in readers:
            if want != L.ND:
                user.operands[index] = self._constant(v, want, user, cache)
        for fusion in {arg.block.parent_op() for arg in self.const_args}:
            _drop_unused_args(fusion)
        for op in {self.const_args.get(v, v).owner for _, _, v, _ in readers}:
            if op.parent is not None and not op.results[0].uses:
                Rewriter.erase_op(op)

    def written(self, v: SSAValue) -> str:
        """The format `v`'s producer writes: a cube op its choice, an ND op ND, the rest
        (propagating ops, fusion boundaries) the label."""
        producer = self.producer[v]
        if producer == "anchor":
            return self.anchors[v.owner].choice[-1]
        return L.ND if producer == "nd" else self.label(v)

    def wanted(self, user: Operation, index: int) -> str:
        """The format `user` reads its operand `index` in."""
        if isinstance(user, g.FusionOp):
            arg = user.body.block.args[index]
            return L.ND if arg in self.const_args else self.label(arg)
        if isinstance(user, g.YieldOp):
            return self.label(user.parent_op().outputs[index])
        if user in self.tied:
            return self.label(user.results[0]) if index in self.tied[user] else L.ND
        if user in self.anchors:
            return self.anchors[user].choice[index]
        return L.ND

    def _convert(self, label: str, have: dict[str, SSAValue], want: str) -> SSAValue:
        src_fmt = label if label in have else next(iter(have))
        src = have[src_fmt]
        td = g.TransDataOp.build_op([src], src_format=src_fmt, dst_format=want)
        if isinstance(src, BlockArgument):
            # named after the value's producer, as GE names its TransData nodes
            fusion = src.block.parent_op()
            if isinstance(fusion, g.FusionOp) and isinstance(fusion.operands[src.index].owner, Operation):
                td.location = fusion.operands[src.index].owner.location
            Rewriter.insert_op(td, InsertPoint.at_start(src.block))
        else:
            td.location = src.owner.location
            Rewriter.insert_op(td, InsertPoint.after(src.owner))
        parent = td.parent_op()
        if isinstance(parent, g.FusionOp) and parent.kind.data == "cube":
            parent.properties["kind"] = StringAttr("cube+vector")  # a vector re-layout inside
        return td.output

    def _constant(self, v: SSAValue, fmt: str, user: Operation, cache: dict) -> SSAValue:
        """The constant `v` stored as `fmt`, converted now (for an elementwise reader first
        given the result's rank: per-channel [C, 1, 1] -> [1, C, 1, 1]). A weight passed into
        a fusion is converted outside and passed in as a new operand."""
        outer = self.const_args.get(v, v)
        array = g.constant_value_of(outer)
        rank = len(L.logical_shape(user.results[0].type)) if user in self.tied else array.ndim
        if array.ndim < rank:
            array = array.reshape((1,) * (rank - array.ndim) + array.shape)
        key = (outer.owner, fmt, array.shape)
        if key not in cache:
            op = formatted_constant(array, fmt, outer.owner.location, outer.name_hint)
            shape_only = outer.owner.attributes.get(attr_names.PLACEHOLDER)
            if shape_only is not None:  # still a shape-only weight, in its new format
                op.attributes[attr_names.PLACEHOLDER] = shape_only
            Rewriter.insert_op(op, InsertPoint.after(outer.owner))
            cache[key] = op.output
        new = cache[key]
        if v not in self.const_args:
            return new
        fusion = v.block.parent_op()
        key = (fusion, new)
        if key not in cache:
            fusion.operands = (*fusion.operands, new)
            cache[key] = v.block.insert_arg(new.type, len(v.block.args))
            cache[key].name_hint = v.name_hint
        return cache[key]


def _drop_unused_args(fusion: g.FusionOp) -> None:
    """Remove the block arguments (and operands) a fusion no longer reads."""
    block = fusion.body.block
    keep = [i for i, arg in enumerate(block.args) if arg.uses]
    if len(keep) == len(block.args):
        return
    operands = fusion.operands
    for arg in [a for a in block.args if not a.uses]:
        block.erase_arg(arg)
    fusion.operands = [operands[i] for i in keep]


def formatted_constant(array: np.ndarray, fmt: str, loc, name: str | None = None) -> g.ConstantOp:
    """A graph.constant of the logical `array` stored as `fmt` (converted now; a splat of 0
    stays one element)."""
    origin = L.NCHW if fmt in L.FOUR_D else L.ND
    t = L.format_type(TensorType(to_element_type(array.dtype), array.shape), fmt, origin)
    if array.size > 1 and not any(array.strides) and not array.reshape(-1)[:1].view(np.uint8).any():
        data = array.reshape(-1)[:1].tobytes()  # a splat of 0 (a placeholder weight): its padding is 0 too
    else:
        data = np.ascontiguousarray(L.to_physical(array, fmt, origin)).tobytes()
    op = g.ConstantOp.create(properties={"value": DenseIntOrFPElementsAttr(t, BytesAttr(data))}, result_types=[t])
    op.location = loc
    op.output.name_hint = name
    return op


# ---------------------------------------------------------------------------
# Strip: back to the logical program (what the planner starts from).
# ---------------------------------------------------------------------------


def strip_layout(body: Block) -> bool:
    """Remove every format and graph.trans_data from a function body (fusion bodies
    included): values get their logical types, formatted constants their logical arrays.
    True if anything changed."""
    ops = list(_walk(body))
    changed = False
    for op in ops:
        blocks = [op.body.block] if isinstance(op, g.FusionOp) else []
        for v in [*op.results, *(a for b in blocks for a in b.args)]:
            if L.is_formatted(v.type):
                if isinstance(op, g.ConstantOp):
                    array = L.logical_array(g.constant_value_of(v), v.type)
                    new = constant(array, op.location, v.name_hint)
                    Rewriter.insert_op(new, InsertPoint.after(op))
                    v.replace_all_uses_with(new.output)
                else:
                    Rewriter.replace_value_with_new_type(v, L.logical_type(v.type))
                changed = True
    for op in ops:
        if isinstance(op, g.TransDataOp):
            op.output.replace_all_uses_with(op.x)
            Rewriter.erase_op(op)
            changed = True
        elif isinstance(op, g.ConstantOp) and L.is_formatted(op.output.type):
            Rewriter.erase_op(op)
    return changed


# ---------------------------------------------------------------------------
# What the layout costs at run time.
# ---------------------------------------------------------------------------


@dataclass
class LayoutReport:
    """The layout conversions a program does at run time, priced by the cost model:
    graph.trans_data ops (a kernel each: the lowering gives one inside a fusion body a kernel of
    its own too; `in_kernel` counts those) and the re-layouts inside cube kernels that read or
    write a format other than their native one."""

    standalone: int = 0
    in_kernel: int = 0
    trans_data_bytes: int = 0  # read + written by every trans_data
    trans_data_us: float = 0.0
    relayout_us: float = 0.0  # inside cube kernels
    ops: list[tuple[str, str, tuple[int, ...]]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return self.standalone + self.in_kernel

    @property
    def conversion_us(self) -> float:
        return self.trans_data_us + self.relayout_us


def layout_report(module: ModuleOp, device: str = DEFAULT_DEVICE) -> LayoutReport:
    """The run-time layout conversions of a (graph-level) module; weights converted at
    compile time are not counted."""
    costs = LayoutCosts(device)
    report = LayoutReport()
    for op in module.walk():
        if isinstance(op, g.TransDataOp):
            inside = isinstance(op.parent_op(), g.FusionOp)
            a = op.attrs()
            t = L.logical_type(op.x.type)
            report.standalone += not inside
            report.in_kernel += inside
            report.trans_data_bytes += _nbytes(t, a["src_format"]) + _nbytes(t, a["dst_format"])
            report.trans_data_us += costs.relayout_us(t, a["src_format"], a["dst_format"], False)
            report.ops.append((a["src_format"], a["dst_format"], L.logical_shape(op.x.type)))
        elif op_info.CUBE.takes(op):
            values = [*op.operands, op.results[0]]
            if not all(cube_type(L.logical_type(v.type)) for v in values):
                continue
            formats = tuple(L.storage_of(v.type) for v in values)
            report.relayout_us += costs.penalty_us(op, formats, op_info.native_formats(op))
    return report


# ---------------------------------------------------------------------------
# The pass.
# ---------------------------------------------------------------------------


def _plain_signature(f: func.FuncOp) -> bool:
    ft = f.function_type
    return not any(L.is_formatted(t) for t in (*ft.inputs.data, *ft.outputs.data))


@dataclass(frozen=True)
class LayoutPass(ModulePass):
    """Choose storage formats (NC1HWC0, FRACTAL_Z, FRACTAL_NZ) by the cost model.

    graph.trans_data goes where formats change and pays for itself; constant weights are
    converted at compile time."""

    name = "graph-layout"

    device: str = DEFAULT_DEVICE
    """The device whose cost model prices formats and conversions."""
    min_channels: int = 4
    """4-D tensors with fewer channels are never stored as NC1HWC0 (C0 = 16 would pad them
    at least 4x); above it the cost model decides."""
    matmul_nz: bool = True
    """Store matmul / gemm operands as FRACTAL_NZ (false: matmuls read ND natively)."""

    def __post_init__(self) -> None:
        if self.min_channels < 0:
            raise ValueError(f"min-channels must be >= 0, got {self.min_channels}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        costs = LayoutCosts(self.device)
        for f in [f for f in op.walk() if isinstance(f, func.FuncOp)]:
            if not f.body.blocks or not _plain_signature(f):
                continue
            body = f.body.blocks[0]
            strip_layout(body)
            planner = Planner(body, costs, self.min_channels, self.matmul_nz)
            planner.solve()
            planner.materialize()
