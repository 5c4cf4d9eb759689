"""The LRN template: x / (bias + alpha/size * sum of x^2 over `size` neighbouring channels)
** beta, per tile [C, tr] of one image.

The squares go into a zero-padded [C + size - 1, tr] buffer and the window sum is `size`
vadds of row-shifted views of it. On NC1HWC0 the tile [C1, tr, C0] is vtransposed to
[C1 * C0, tr] first (channels as rows; the squares of the padding lanes are left zero, as
ONNX's out-of-range channels) and back before it is stored. A bf16 tile is converted to f32
after it arrives and the result back to bf16 before it leaves (the vector unit has no bf16
arithmetic).

An LRN whose result a quantize reads (graph-fuse's "lrn-quantize": NCHW, f16 / f32, float
casts, views and a quantize by one known scale and zero point) quantizes its result tile
before it leaves, as the graph does and as the pool template does (quantization.Quantize): a
copy of the tile in f32, `vdiv` by the scale, `vround`, + zero point, the clamp, `vcast {round
= "rint"}` to int8. Where the float result has other readers too, both are written.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, StringAttr, f32, i64
from xdsl.ir import Attribute, Operation, SSAValue

from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.dialects import formats
from geir.lowering.templates.common import (
    KernelBuilder,
    KernelRequest,
    block_elems,
    ceil_div,
    compute_type,
    itemsize,
    mark,
    round_up,
    shape_of,
    tile_offsets,
    tile_pieces,
)
from geir.lowering.templates.data import MIN_TILE_BYTES, slots_of, ub_view
from geir.lowering.templates.vector.quantization import Quantize, quantized_outputs
from geir.target import op_info


@dataclass(frozen=True)
class _Lrn:
    """An LRN's shape as the kernel sees it: n images of c channels x r pixels; blocked:
    stored [n, c1, r, c0]."""

    n: int
    c: int
    r: int
    c1: int
    c0: int              # 1 when not blocked (c1 = c)
    blocked: bool
    elt: Attribute
    size: int
    alpha: float
    beta: float
    bias: float
    quant: Quantize | None = None  # the result quantized before it leaves (NCHW only)

    @classmethod
    def of(cls, op: Operation) -> _Lrn | None:
        t = op.inputs[0].type
        xs = formats.logical_shape(t)
        elt = t.element_type
        blocked = formats.storage_of(t) == formats.NC1HWC0
        if formats.is_formatted(t) and not (blocked and formats.origin_of(t) == formats.NCHW):
            return None
        if len(xs) < 3 or not op_info.LRN.takes_type(elt) or math.prod(xs) == 0:
            return None
        n, c, r = xs[0], xs[1], math.prod(xs[2:])
        c1, c0 = (shape_of(op.inputs[0])[1], shape_of(op.inputs[0])[4]) if blocked else (c, 1)
        attrs = op.attrs()
        return cls(n, c, r, c1, c0, blocked, elt, attrs["size"], attrs["alpha"], attrs["beta"],
                   attrs["bias"])

    @property
    def cp(self) -> int:
        """Rows of a tile: the channels, padding lanes included."""
        return self.c1 * self.c0

    @property
    def celt(self) -> Attribute:
        """The element type the tile is computed in (common.compute_type)."""
        return compute_type(self.elt)

    def need(self, tr: int) -> int:
        """ub bytes of one slot for tiles of `tr` pixels."""
        lanes = self.c1 * tr * self.c0 if self.blocked else 0
        rows, wide = round_up(tr, block_elems(self.elt)), round_up(tr, block_elems(self.celt))
        stored = self.cp * rows + lanes                                 # x, lanes
        computed = (2 * self.cp + self.size - 1) * wide                 # sq, acc
        if self.celt != self.elt:
            stored += self.cp * rows                                    # the result converted back
            computed += self.cp * wide                                  # x converted
        n = stored * itemsize(self.elt) + computed * itemsize(self.celt)
        if self.quant:  # the result quantized, its f32 copy and the scale
            n += self.cp * round_up(tr, block_elems(self.quant.elt)) * itemsize(self.quant.elt)
            n += 2 * self.cp * round_up(tr, block_elems(f32)) * itemsize(f32)
        return n


def _tile_pixels(req: KernelRequest, L: _Lrn, slots: int) -> int | None:
    """Pixels per tile: all of an image's that fit (halved until they do), fewer when that
    leaves too few tiles for the cores; None if one pixel does not fit."""
    cap = req.device.buffer_bytes["ub"]
    tr = L.r
    while tr > 1 and L.need(tr) * slots > cap:
        tr = max(1, tr // 2)
    if L.need(tr) * slots > cap:
        return None
    want = min(req.device.vector_cores, max(1, L.n * L.cp * L.r * itemsize(L.elt) // MIN_TILE_BYTES))
    if L.n * ceil_div(L.r, tr) < want:
        tr = max(block_elems(L.elt), ceil_div(L.r, ceil_div(want, L.n)))
        tr = min(tr, L.r)
    return tr


def build_lrn(req: KernelRequest) -> a.KernelOp | None:
    """The LRN kernel of a request of one lrn, or of an lrn and the quantize of its result
    (see the module docstring), or None."""
    op, *rest = req.ops
    L = _Lrn.of(op)
    if L is None or req.inputs[0] is not op.inputs[0]:
        return None
    written = quantized_outputs(op, rest, req.outputs)
    if written is None:
        return None
    quant, _, result = written
    if quant is not None:
        if L.blocked or L.celt != L.elt:
            return None  # the quantized result leaves NCHW, computed in the LRN's own type
        L = dataclasses.replace(L, quant=quant)
    slots = slots_of(req)
    tr = _tile_pixels(req, L, slots)
    if tr is None:
        return None
    pieces = tile_pieces([L.n, L.r], [1, tr])
    most = max(math.prod(cn) for cn, _, _ in pieces)
    if most <= 1:
        slots = 1
    kb = KernelBuilder(req, "vector", max(1, min(req.device.vector_cores, most)))
    emitter = _LrnKernel(kb, L, slots, tr, result)
    for index, (counts, pext, start) in enumerate(pieces):
        emitter.pipeline(counts, pext, start, last_blocks=index > 0)
    return mark(kb.finish(), attr_names.TEMPLATE, "lrn")


@dataclass(frozen=True)
class _Buffers:
    """The ub buffers of one slot."""

    x: SSAValue              # [cp, trp] the tile, channels as rows
    sq: SSAValue             # [cp + size - 1, trp] the squares, zero-padded for the window
    acc: SSAValue            # [cp, trp] the window sums, then the result
    lanes: SSAValue | None   # [1, c1, tr, c0] the tile as NC1HWC0 stores it (blocked only)
    xf: SSAValue | None      # [cp, trp] x and the result in the compute type (bf16: f32) ...
    accb: SSAValue | None    # ... and back (only when they differ)
    accf: SSAValue | None    # [cp, tr f32] the result in f32, quantized (quant only)
    scale: SSAValue | None   # [cp, tr f32] the quantize's scale
    outq: SSAValue | None    # [cp, tr int8] the result quantized


_TO_ROWS = [0, 1, 3, 2]  # [1, c1, w, c0] <-> [1, c1, c0, w]


class _LrnKernel:
    """The LRN kernel's gm views and ub buffers, and the load / compute / store of a tile."""

    def __init__(self, kb: KernelBuilder, L: _Lrn, slots: int, tr: int, result: int = 0):
        """`result`: the output the LRN (quantized, if it is) writes; a kept float result is the other."""
        self.kb, self.L = kb, L
        if L.blocked:
            self.x = kb.view(kb.inputs[0], [L.n, L.c1, L.r, L.c0])
            self.y = kb.view(kb.outputs[0], [L.n, L.c1, L.r, L.c0])
        else:
            self.x = kb.view(kb.inputs[0], [L.n, L.c, L.r])
            self.y = kb.view(kb.outputs[result], [L.n, L.c, L.r])
        # the float result, when it is kept beside the quantized one
        self.yf = kb.view(kb.outputs[1 - result], [L.n, L.c, L.r]) if len(kb.outputs) == 2 else None
        self.trp = trp = round_up(tr, block_elems(L.elt))
        wide = round_up(tr, block_elems(L.celt))
        conv = L.celt != L.elt
        self.bufs: list[_Buffers] = []
        for s in range(slots):
            sfx = str(s) if slots > 1 else ""
            self.bufs.append(_Buffers(
                x=kb.alloc([L.cp, trp], L.elt, "ub", f"x{sfx}"),
                sq=kb.alloc([L.cp + L.size - 1, wide], L.celt, "ub", f"sq{sfx}"),
                acc=kb.alloc([L.cp, wide], L.celt, "ub", f"acc{sfx}"),
                lanes=kb.alloc([1, L.c1, tr, L.c0], L.elt, "ub", f"lanes{sfx}") if L.blocked else None,
                xf=kb.alloc([L.cp, wide], L.celt, "ub", f"xf{sfx}") if conv else None,
                accb=kb.alloc([L.cp, trp], L.elt, "ub", f"accb{sfx}") if conv else None,
                accf=kb.alloc([L.cp, round_up(tr, block_elems(f32))], f32, "ub", f"accf{sfx}") if L.quant else None,
                scale=kb.alloc([L.cp, round_up(tr, block_elems(f32))], f32, "ub", f"qscale{sfx}") if L.quant else None,
                outq=kb.alloc([L.cp, round_up(tr, block_elems(L.quant.elt))], L.quant.elt, "ub", f"outq{sfx}")
                if L.quant else None))
        self.slots = slots
        self.state: dict[int, list] = {}

    def pipeline(self, counts: list[int], pext: list[int], start: int, last_blocks: bool) -> None:
        """The tiles of one piece of the [n, r] tiling (tile_pieces)."""
        kb = self.kb
        n_t = math.prod(counts)
        per = ceil_div(n_t, min(kb.kernel.block_count, n_t))
        w = pext[1]
        self.state = {}
        kb.pipeline(n_t, per, lambda t, s: self.load(t, s, counts, pext, start),
                    lambda t, s: self.store(s, w), lambda t, s: self.compute(s, w),
                    self.slots, last_blocks=last_blocks)

    def rows_view(self, buf: SSAValue, w: int) -> SSAValue:
        """The [1, C, w] channel rows of a [C, trp] buffer ([1, C1, C0, w] when blocked): the
        image's [1, C, w] box of gm without a rank-reducing subview (C or w may be 1)."""
        kb, L = self.kb, self.L
        row = buf.type.get_shape()[-1]
        if L.blocked:
            return kb.tile(kb.view(buf, [1, L.c1, L.c0, row]), [0, 0, 0, 0], [1, L.c1, L.c0, w])
        return kb.tile(kb.view(buf, [1, L.c, row]), [0, 0, 0], [1, L.c, w])

    def result(self, s: int) -> SSAValue:
        """The buffer holding the result as stored: acc, or its conversion."""
        b = self.bufs[s]
        return b.accb if b.accb is not None else b.acc

    def lanes_view(self, s: int, w: int) -> SSAValue:
        return self.kb.tile(self.bufs[s].lanes, [0, 0, 0, 0], [1, self.L.c1, w, self.L.c0])

    def _gm_box(self, gm: SSAValue, off: list, w: int) -> SSAValue:
        L = self.L
        if L.blocked:
            return self.kb.tile(gm, [off[0], 0, off[1], 0], [1, L.c1, w, L.c0])
        return self.kb.tile(gm, [off[0], 0, off[1]], [1, L.c, w])

    def load(self, t: int | SSAValue, s: int, counts: list[int], pext: list[int], start: int) -> None:
        off = tile_offsets(self.kb, t, counts, pext, [self.L.n, self.L.r], start)
        self.state[s] = off
        w = pext[1]
        src = self._gm_box(self.x, off, w)
        self.kb.copy(src, self.lanes_view(s, w) if self.L.blocked else self.rows_view(self.bufs[s].x, w))

    def compute(self, s: int, w: int) -> None:
        kb, L = self.kb, self.L
        b = self.bufs[s]
        S = lambda v: kb.scalar(v, L.celt)  # noqa: E731
        to_rows = DenseArrayBase.from_list(i64, _TO_ROWS)
        if L.blocked:
            kb.vec(a.VtransposeOp, self.lanes_view(s, w), self.rows_view(b.x, w), perm=to_rows)
        cp, lo = L.cp, (L.size - 1) // 2
        x = b.x
        if b.xf is not None:
            kb.vec(a.VcastOp, ub_view(kb, b.x, [cp, w]), ub_view(kb, b.xf, [cp, w]))
            x = b.xf
        xv = ub_view(kb, x, [cp, w])
        sq = kb.tile(b.sq, [0, 0], [cp + L.size - 1, w])
        acc = ub_view(kb, b.acc, [cp, w])
        real = ub_view(kb, x, [L.c, w])
        kb.vec(a.VdupOp, S(0.0), sq)
        kb.vec(a.VmulOp, real, real, kb.tile(sq, [lo, 0], [L.c, w]))
        kb.vec(a.VcopyOp, kb.tile(sq, [0, 0], [cp, w]), acc)
        for j in range(1, L.size):
            kb.vec(a.VaddOp, acc, kb.tile(sq, [j, 0], [cp, w]), acc)
        kb.vec(a.VmulsOp, acc, S(L.alpha / L.size), acc)
        kb.vec(a.VaddsOp, acc, S(L.bias), acc)
        kb.vec(a.VlogOp, acc, acc)                      # (..) ** beta = exp(beta * log(..))
        kb.vec(a.VmulsOp, acc, S(L.beta), acc)
        kb.vec(a.VexpOp, acc, acc)
        kb.vec(a.VdivOp, xv, acc, acc)
        if b.accb is not None:
            kb.vec(a.VcastOp, acc, ub_view(kb, b.accb, [cp, w]))
        if L.quant:  # a copy in f32, quantized, to int8 (acc stays: a kept float result)
            wide = ub_view(kb, b.accf, [cp, w])
            kb.vec(a.VcastOp if L.celt != f32 else a.VcopyOp, acc, wide)
            L.quant.emit(kb, wide, ub_view(kb, b.scale, [cp, w]))
            kb.vec(a.VcastOp, wide, ub_view(kb, b.outq, [cp, w]), round=StringAttr("rint"))
        if L.blocked:
            kb.vec(a.VtransposeOp, self.rows_view(self.result(s), w), self.lanes_view(s, w), perm=to_rows)

    def store(self, s: int, w: int) -> None:
        if self.L.quant:
            self.kb.copy(self.rows_view(self.bufs[s].outq, w), self._gm_box(self.y, self.state[s], w))
            if self.yf is not None:
                self.kb.copy(self.rows_view(self.result(s), w), self._gm_box(self.yf, self.state[s], w))
            return
        src = self.lanes_view(s, w) if self.L.blocked else self.rows_view(self.result(s), w)
        self.kb.copy(src, self._gm_box(self.y, self.state[s], w))
