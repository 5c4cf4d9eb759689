"""graph-tensor-parallel: one rank's share of a model split over `ranks` devices (Megatron-style).

Tensor parallelism splits the weights of matrix products across devices so that each device
holds and computes 1/n of them, with one all-reduce per pair of products:

* a *column* product `x @ W` (W [K, N] a constant, x the same on every rank) keeps columns of
  W: its result is split along its last axis (a fused QKV projection followed by a split into
  q, k and v keeps a block of each of the three: `groups`);
* the split result flows through the ops that keep it split - elementwise ops, a reshape that
  splits the axis into heads, transposes, attention over the heads, rotary embeddings, norms
  and softmaxes over other axes - to a *row* product `h @ W2` contracting the split axis,
  which keeps the matching rows of W2: its result is each rank's partial sum, and an
  `graph.all_reduce` over all ranks makes it whole.

Which products are column ones is decided on the graph, not by names: every product with a
constant weight starts as one, the split is propagated forward (`_Propagation`), and a
product whose split reaches an op that cannot keep it (a norm over the split axis, a reshape
that mixes it, a dim the ranks do not divide) is made whole again; this repeats until nothing
fails. Values used both split and whole (a replicated k beside split heads) are sliced on the
rank, which moves no data between devices. A graph output may stay split: its result attribute
`geir.shard = array<i64: axis, groups>` tells the caller to concatenate the ranks' parts.

QKV and gate/up products become column ones, the output and down projections row ones, and
attention runs on each rank's heads - Megatron's split - because that is what propagates, and
a model that splits otherwise (a vocabulary-split output projection) is split as well as it
can be. Attention whose heads (or key/value heads) the ranks do not divide is an error.

    geir-opt model.mlir -p 'graph-tensor-parallel{ranks=2 rank=0}'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, ModuleOp, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from geir.dialects import attr_names
from geir.dialects import graph as g
from geir.dialects.traits import Elementwise, Normalization, RowMixing, RowSoftmax
from geir.errors import GeirError
from geir.ir.locations import describe, loc_names
from geir.passes.graph.utils import constant, entry_attrs, set_signature


class TensorParallelError(GeirError):
    """A model that cannot be split as asked (heads the ranks do not divide, bad options)."""


@dataclass(frozen=True)
class Shard:
    """A value of which each rank holds 1 / ranks along `axis`: the axis is `groups` equal
    groups, and each rank holds the same block of each group (groups = 1: one block)."""

    axis: int
    groups: int = 1
    replicas: int = 1  # ranks holding the same block (key/value heads fewer than the ranks)

    def indices(self, size: int, ranks: int, rank: int) -> np.ndarray:
        ranks, rank = ranks // self.replicas, rank // self.replicas
        group, part = size // self.groups, size // (self.groups * ranks)
        return np.concatenate([np.arange(k * group + rank * part, k * group + (rank + 1) * part)
                               for k in range(self.groups)])


class _Fail(Exception):
    """The op cannot keep its operands' split (the reason in the message)."""


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def _const(v: SSAValue) -> np.ndarray | None:
    return g.constant_value_of(v)


def _is_weight(v: SSAValue) -> bool:
    return isinstance(v.owner, g.ConstantOp) and len(_shape(v)) == 2


# ---------------------------------------------------------------------------
# Propagation: which values are split, which products are row ones.
# ---------------------------------------------------------------------------


@dataclass
class _Result:
    shards: dict[SSAValue, Shard]
    rows: set[Operation]                               # row products (an all-reduce after each)
    slices: dict[tuple[Operation, int], Shard]         # whole operands sliced on the rank
    failed: dict[Operation, str]                       # column products to make whole, and why
    regroup: dict[Operation, int]                      # column products to retry with groups
    column: dict[Operation, int]                       # the column products (their groups)


class _Propagation:
    def __init__(self, fn: func.FuncOp, ranks: int, column: dict[Operation, int]):
        self.fn, self.n, self.column = fn, ranks, column

    def run(self) -> _Result:
        res = _Result({}, set(), {}, {}, {}, {})
        source: dict[SSAValue, frozenset[Operation]] = {}
        for op in self.fn.body.block.ops:
            if op in self.column and op.operands[0] not in res.shards:  # (a split lhs: a row product)
                out = op.results[0]
                shard = Shard(len(_shape(out)) - 1, self.column[op])
                if _shape(out)[-1] % (shard.groups * self.n):
                    res.failed[op] = f"{self.n} ranks do not divide its {_shape(out)[-1]} columns"
                    continue
                res.shards[out], source[out] = shard, frozenset({op})
                res.column[op] = shard.groups
                continue
            split = [(i, res.shards[v]) for i, v in enumerate(op.operands) if v in res.shards]
            if not split or isinstance(op, func.ReturnOp):
                continue
            origin = frozenset().union(*(source[op.operands[i]] for i, _ in split))
            try:
                outs = self.rule(op, dict(split), res)
            except _Fail as e:
                for c in origin:
                    res.failed.setdefault(c, f"{describe(op)}: {e}")
                continue
            except _Regroup as e:
                for c in origin:
                    res.regroup[c] = e.groups
                continue
            for r, s in zip(op.results, outs):
                if s is None:
                    continue
                if _shape(r)[s.axis] % (s.groups * self.n):
                    for c in origin:
                        res.failed.setdefault(c, f"{describe(op)}: {self.n} ranks do not divide dim {s.axis} "
                                                 f"({_shape(r)[s.axis]})")
                    break
                res.shards[r], source[r] = s, origin
        return res

    # -- the rules, by op ---------------------------------------------------------------------

    def rule(self, op: Operation, split: dict[int, Shard], res: _Result) -> list[Shard | None]:
        if isinstance(op, g.MatMulOp):
            return self.matmul(op, split, res)
        if isinstance(op, g.ReshapeOp):
            return [self.reshape(op, split[0])]
        if isinstance(op, g.TransposeOp):
            perm = op.attrs()["perm"]
            return [Shard(list(perm).index(split[0].axis), split[0].groups)]
        if isinstance(op, g.SplitOp):
            return self.split_op(op, split)
        if isinstance(op, g.AttentionOp):
            return [self.aligned(op, split, res, allowed=(0, 1), ops=op.operands)]
        if op.has_trait(Elementwise) or isinstance(op, g.RotaryEmbeddingOp):
            s = self.aligned(op, split, res)
            if isinstance(op, g.RotaryEmbeddingOp) and s.axis == len(_shape(op.results[0])) - 1:
                raise _Fail("a rotary embedding mixes its last axis")
            return [s]
        if op.has_trait(Normalization) or op.has_trait(RowSoftmax) or op.has_trait(RowMixing):
            if set(split) != {0}:
                raise _Fail("its parameters are split")
            s = split[0]
            if s.axis in op.reduced_axes():
                raise _Fail(f"it reduces the split axis {s.axis}")
            return [s]
        if isinstance(op, g.KvCacheWriteOp):  # the cache and the update split alike, not along the rows
            s = self.aligned(op, {i: x for i, x in split.items() if i < 2}, res, ops=op.operands[:2])
            if s.axis == op.attrs()["axis"] % len(_shape(op.results[0])):
                raise _Fail("it writes rows along the split axis")
            return [s]
        if isinstance(op, g.ConcatOp):
            s = self.aligned(op, split, res)
            if s.axis == op.attrs()["axis"] % len(_shape(op.results[0])):
                raise _Fail("it concatenates along the split axis")
            return [s]
        raise _Fail("it has no tensor-parallel rule")

    def aligned(self, op: Operation, split: dict[int, Shard], res: _Result, allowed: Sequence[int] | None = None,
                ops: Sequence[SSAValue] | None = None) -> Shard:
        """One split shared by the operands (aligned from the right, as they broadcast); a
        whole operand with the full dim there is sliced on the rank, one of size 1 is
        broadcast."""
        rank = len(_shape(op.results[0]))
        from_end = {-(len(_shape(op.operands[i])) - s.axis) for i, s in split.items()}
        groups = {s.groups for s in split.values()}
        if len(from_end) != 1 or len(groups) != 1:
            raise _Fail("its operands are split along different axes")
        end, k = from_end.pop(), groups.pop()
        axis = rank + end
        if allowed is not None and axis not in allowed:
            raise _Fail(f"it cannot be split along axis {axis}")
        for i, v in enumerate(ops if ops is not None else op.operands):
            if i in split or v is None:
                continue
            shape = _shape(v)
            if len(shape) >= -end and shape[end] != 1:
                if isinstance(op, g.AttentionOp) and i in (1, 2) and self.n % shape[end] == 0:
                    # fewer key/value heads than ranks: each is kept by the ranks of its query heads
                    res.slices[(op, i)] = Shard(len(shape) + end, 1, self.n // shape[end])
                    continue
                if shape[end] % (k * self.n):
                    raise _Fail(f"operand #{i}'s dim {len(shape) + end} ({shape[end]}) does not divide among "
                                f"{self.n} ranks")
                res.slices[(op, i)] = Shard(len(shape) + end, k)
        return Shard(axis, k)

    def matmul(self, op: g.MatMulOp, split: dict[int, Shard], res: _Result) -> list[Shard | None]:
        lhs, rhs = (len(_shape(v)) for v in op.operands)
        out = len(_shape(op.results[0]))
        if set(split) == {0} and split[0].axis == lhs - 1 and rhs >= 2:
            # contracting the split axis: a row product, partial sums all-reduced
            res.rows.add(op)
            res.slices[(op, 1)] = Shard(rhs - 2, split[0].groups)
            return [None]
        if set(split) == {0} and split[0].axis < lhs - 1:  # rows or batch of lhs: the rhs broadcasts
            s = split[0]
            if s.axis < lhs - 2:
                end = s.axis - lhs
                if rhs >= -end and _shape(op.operands[1])[end] != 1:
                    res.slices[(op, 1)] = Shard(rhs + end, s.groups)
            return [Shard(out - (lhs - s.axis), s.groups)]
        if set(split) == {1} and split[1].axis == rhs - 1:
            return [Shard(out - 1, split[1].groups)]
        if set(split) == {0, 1} and split[0].axis < lhs - 2 and split[0] == Shard(
                split[1].axis + lhs - rhs, split[0].groups):
            return [Shard(out - (lhs - split[0].axis), split[0].groups)]
        raise _Fail("its operands are split in a way no rule keeps")

    def reshape(self, op: g.ReshapeOp, s: Shard) -> Shard:
        if s.groups != 1:
            raise _Fail("a grouped split cannot be reshaped")
        if _const(op.operands[1]) is None:
            raise _Fail("its target shape is not a constant")
        src, dst = _shape(op.operands[0]), _shape(op.results[0])
        # the dims before the axis must keep their product, and the axis must lead a group of
        # dims with the same product on both sides (it splits into heads x head_dim or merges)
        before = math.prod(src[:s.axis])
        acc, j = 1, 0
        while j < len(dst) and acc < before:
            acc *= dst[j]
            j += 1
        while j < len(dst) - 1 and dst[j] == 1 and src[s.axis] != 1:  # size-1 dims keep no block
            j += 1
        if acc != before or j >= len(dst):
            raise _Fail(f"it moves the split axis {s.axis} across other dims")
        if dst[j] % self.n:
            raise _Fail(f"{self.n} ranks do not divide its dim {j} ({dst[j]})")
        # the block of the axis each rank holds must be a block of dim j: src[axis] * rest == dst[j] * rest'
        src_rest = math.prod(src[s.axis:])
        dst_rest = math.prod(dst[j:])
        if src_rest != dst_rest or (src[s.axis] % dst[j] and dst[j] % src[s.axis]):
            raise _Fail(f"it mixes the split axis {s.axis} with other dims")
        if src[s.axis] < dst[j] and math.prod(dst[j + 1:]) * dst[j] != math.prod(src[s.axis:]):
            raise _Fail(f"it mixes the split axis {s.axis} with other dims")
        return Shard(j)

    def split_op(self, op: g.SplitOp, split: dict[int, Shard]) -> list[Shard | None]:
        if set(split) != {0}:
            raise _Fail("its sizes are split")
        s = split[0]
        axis = op.attrs()["axis"] % len(_shape(op.operands[0]))
        if axis != s.axis:
            return [s] * len(op.results)
        sizes = {_shape(r)[axis] for r in op.results}
        if len(sizes) == 1 and len(op.results) == s.groups:
            return [Shard(axis)] * len(op.results)
        if s.groups == 1 and len(sizes) == 1 and len(op.results) > 1:
            raise _Regroup(len(op.results))
        raise _Fail(f"it splits the split axis {axis} in parts the ranks' blocks do not match")


class _Regroup(Exception):
    def __init__(self, groups: int):
        self.groups = groups


def plan(fn: func.FuncOp, ranks: int) -> _Result:
    """The split of `fn` over `ranks` devices: column products grow from every product with a
    constant weight until nothing fails (module docstring)."""
    column = {op: 1 for op in fn.body.block.ops
              if isinstance(op, g.MatMulOp) and _is_weight(op.operands[1])}
    for _ in range(len(column) + 8):
        res = _Propagation(fn, ranks, column).run()
        if not res.failed and not res.regroup:
            return res
        for op in res.failed:
            column.pop(op, None)
        for op, k in res.regroup.items():
            if op in column and column[op] == 1:
                column[op] = k
            else:
                column.pop(op, None)
    raise TensorParallelError("the tensor-parallel split does not settle")  # pragma: no cover - bounded above


# ---------------------------------------------------------------------------
# The rewrite: rank `rank`'s program.
# ---------------------------------------------------------------------------


def _attention_heads(fn: func.FuncOp, ranks: int) -> None:
    """Each rank takes whole query heads, and whole key/value heads or a share of one."""
    for op in fn.body.block.ops:
        if isinstance(op, g.AttentionOp):
            heads, kv = _shape(op.operands[0])[1], _shape(op.operands[1])[1]
            names = loc_names(op.location)
            where = f"attention '{names[-1]}'" if names else describe(op)
            if heads % ranks:
                raise TensorParallelError(f"{where}: tensor parallel {ranks} does not divide its {heads} heads")
            if kv % ranks and ranks % kv:
                raise TensorParallelError(f"{where}: its {kv} key/value heads neither divide nor are divided by "
                                          f"tensor parallel {ranks}")


class _Rewrite:
    def __init__(self, fn: func.FuncOp, ranks: int, rank: int, res: _Result):
        self.fn, self.n, self.rank, self.res = fn, ranks, rank, res
        self.new: dict[SSAValue, SSAValue] = {}

    def sliced(self, at: Operation, v: SSAValue, s: Shard) -> SSAValue:
        """`v` (whole) cut to this rank's block along s: a constant is cut at compile time, a
        function argument every use cuts alike is given cut (`shard_args`)."""
        if v in self.args:
            return self.args[v]
        shape = _shape(v)
        idx = s.indices(shape[s.axis], self.n, self.rank)
        owner = v.owner
        if isinstance(owner, g.ConstantOp):
            name = owner.placeholder_name
            new_shape = tuple(len(idx) if i == s.axis else d for i, d in enumerate(shape))
            if name is not None:
                c = g.ConstantOp.placeholder(f"{name}/rank{self.rank}", TensorType(v.type.element_type, new_shape))
                c.location = owner.location
                c.output.name_hint = v.name_hint
            else:
                c = constant(np.take(_const(v), idx, axis=s.axis), owner.location, v.name_hint)
            at.parent.insert_op_before(c, at)
            return c.output
        lo = int(idx[0])
        if s.groups == 1:
            starts = constant(np.array([lo], np.int64), at.location)
            ends = constant(np.array([lo + len(idx)], np.int64), at.location)
            axes = constant(np.array([s.axis], np.int64), at.location)
            cut = g.SliceOp.build_op([v, starts.output, ends.output, axes.output])
            extra = [starts, ends, axes]
        else:
            index = constant(idx.astype(np.int64), at.location)
            cut = g.GatherOp.build_op([v, index.output], axis=s.axis)
            extra = [index]
        cut.location = at.location
        for c in (*extra, cut):
            at.parent.insert_op_before(c, at)
        return cut.results[0]

    def shard_args(self) -> None:
        """A function argument whose every use takes this rank's block along one split (a KV
        cache beside split heads) is given as that block: the caller passes each rank its
        block (`geir.shard` on the argument) instead of every rank the whole."""
        block = self.fn.body.block
        attrs = entry_attrs(self.fn.arg_attrs, len(block.args))
        self.orig_attrs = dict(zip(block.args, attrs))
        for arg in list(block.args):
            wants = {self.res.slices.get((use.operation, use.index)) for use in arg.uses}
            if len(wants) != 1 or None in wants or not arg.uses:
                continue
            s = wants.pop()
            if s.replicas != 1:
                continue
            shape = [len(s.indices(d, self.n, self.rank)) if i == s.axis else d for i, d in enumerate(_shape(arg))]
            new = block.insert_arg(TensorType(arg.type.element_type, shape), arg.index)
            new.name_hint = arg.name_hint
            self.args[arg] = new
            self.arg_shards[new] = s
        # the replaced arguments go once the ops using them are rebuilt (finish)

    def apply(self) -> None:
        res = self.res
        self.args: dict[SSAValue, SSAValue] = {}
        self.arg_shards: dict[SSAValue, Shard] = {}
        self.shard_args()
        cuts_of: dict[Operation, dict[int, Shard]] = {}
        for (o, i), s in res.slices.items():
            cuts_of.setdefault(o, {})[i] = s
        for op in list(self.fn.body.block.ops):
            if isinstance(op, func.ReturnOp):
                continue
            changed = [v in self.new for v in op.operands]
            cuts = cuts_of.get(op, {})
            column = op in res.column
            if not any(changed) and not cuts and not column and op not in res.rows:
                continue
            operands = [self.new.get(v, v) for v in op.operands]
            for i, s in cuts.items():
                operands[i] = self.sliced(op, op.operands[i], s)
            if column:
                w = op.operands[1]
                operands[1] = self.sliced(op, w, Shard(len(_shape(w)) - 1, res.shards[op.results[0]].groups))
            props = dict(op.properties)
            if isinstance(op, g.ReshapeOp) and op.results[0] in res.shards:
                operands[1] = self.local_shape(op, res.shards[op.results[0]])
            if isinstance(op, g.SplitOp) and len(operands) > 1 and operands[1] is not None:
                sizes = [_shape(r)[op.attrs()["axis"] % len(_shape(op.operands[0]))] for r in op.results]
                div = self.n if op.results[0] in res.shards and res.shards[op.results[0]].axis == \
                    op.attrs()["axis"] % len(_shape(op.operands[0])) else 1
                c = constant(np.array([s // div for s in sizes], np.int64), op.location)
                op.parent.insert_op_before(c, op)
                operands[1] = c.output
            new = type(op).build_op(operands, **props)
            new.location = op.location
            new.attributes.update(op.attributes)
            op.parent.insert_op_before(new, op)
            for old, r in zip(op.results, new.results):
                r.name_hint = old.name_hint
                self.new[old] = r
            if op in res.rows:
                reduced = g.AllReduceOp.build_op([new.results[0]], ranks=list(range(self.n)), reduction="sum")
                reduced.location = op.location
                op.parent.insert_op_after(reduced, new)
                reduced.results[0].name_hint = op.results[0].name_hint
                self.new[op.results[0]] = reduced.results[0]
        self.finish()

    def local_shape(self, op: g.ReshapeOp, s: Shard) -> SSAValue:
        shape = [d // self.n if i == s.axis else d for i, d in enumerate(_shape(op.results[0]))]
        c = constant(np.array(shape, np.int64), op.location)
        op.parent.insert_op_before(c, op)
        return c.output

    def finish(self) -> None:
        block = self.fn.body.block
        ret = block.last_op
        assert isinstance(ret, func.ReturnOp)
        for i, v in enumerate(ret.operands):
            if v in self.new:
                ret.operands[i] = self.new[v]
        old_attrs = entry_attrs(self.fn.res_attrs, len(ret.operands))
        attrs = []
        for v, d in zip(ret.operands, old_attrs):
            entries = dict(d.data)
            orig = next((o for o, n in self.new.items() if n is v), v)
            s = self.res.shards.get(orig) or self.arg_shards.get(v)
            if s is not None:
                entries[attr_names.SHARD] = DenseArrayBase.from_list(i64, [s.axis, s.groups])
            attrs.append(DictionaryAttr(entries))
        for op in reversed(list(block.ops)):  # the whole ops replaced, now unused
            if op is not ret and all(not r.uses for r in op.results) and op.results and (
                    any(r in self.new for r in op.results) or isinstance(op, g.ConstantOp)):
                op.detach()
                op.erase()
        source = {new: old for old, new in self.args.items()}
        arg_attrs = []
        for arg in block.args:
            if arg in self.args:
                continue
            d = dict(self.orig_attrs[source.get(arg, arg)].data)
            if arg in self.arg_shards:
                s = self.arg_shards[arg]
                d[attr_names.SHARD] = DenseArrayBase.from_list(i64, [s.axis, s.groups])
            arg_attrs.append(DictionaryAttr(d))
        for old in self.args:
            block.erase_arg(old)
        set_signature(self.fn, arg_attrs, attrs)


def split_function(fn: func.FuncOp, ranks: int, rank: int) -> None:
    _attention_heads(fn, ranks)
    res = plan(fn, ranks)
    _Rewrite(fn, ranks, rank, res).apply()


@dataclass(frozen=True)
class TensorParallel(ModulePass):
    """Keep rank `rank`'s share of every function split over `ranks` devices (module docstring)."""

    name = "graph-tensor-parallel"

    ranks: int = 2
    """Devices the matrix products are split over."""
    rank: int = 0
    """The device whose program this is (0 .. ranks - 1)."""

    def __post_init__(self) -> None:
        if self.ranks < 1:
            raise TensorParallelError(f"tensor parallel needs at least one rank, got {self.ranks}")
        if not 0 <= self.rank < self.ranks:
            raise TensorParallelError(f"rank {self.rank} is not one of 0..{self.ranks - 1}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.ranks == 1:
            return
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                split_function(fn, self.ranks, self.rank)
