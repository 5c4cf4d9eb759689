"""graph-assign-precision: the element type every float op computes in (GE's precision_mode).

Decides, per op, the type it computes in from the mode, op_info's white / black / gray lists
(with a modify_mixlist applied) and keep_dtype (target/precision.py has the modes' meanings),
then rewrites the graph to it:

* an op that changes type is rebuilt on operands of the new type (its result type is inferred
  again); its operands tied to the compute type (same element type as its result in the
  model: data, weights, bias, clip bounds) change with it, the others (indices, shapes,
  conditions) do not;
* a `graph.cast` goes in only where a value's type differs from what its user computes in, one
  per value and type however many users; a cast of a constant is folded into a constant of the
  new type (weights stored in fp16 / bf16: half the bytes);
* a widening cast followed by a cast back (f16 -> f32 -> f16) is cancelled: the value
  round-trips exactly; a model's own casts to a type its input already has disappear;
* the function's arguments and results keep the model's types: the casts at the ends are
  where the program converts.

Gray ops (mixed-precision modes) follow their inputs: one is lowered when every input it
computes on that is not a constant comes from a lowered value. The decision is iterated to a
fixed point over the whole function, so it does not depend on the order the ops are listed in.

Run before graph-fuse and graph-layout (fusion and the cost model then see the new types:
fp16 tiles hold twice the elements); the pipelines run it first whatever the -O level, as a
choice of numerics rather than an optimisation (`must_keep_origin_dtype` leaves the graph
unchanged).

Under `force_fp32` / `cube_fp16in_fp32out` a cube op reads its operands rounded to fp16 and
computes in fp32: the device's numbers (fp16 products accumulated in f32 in L0C, written as f32
by the FIX pipe, no fp16 rounding of the result, so no fp16 overflow), but geir's cube kernels
write the type they read, so the op stays an f32 one and is priced at the f32 cube rate (a
pessimistic latency; weights are stored rounded, in f32).
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from geir.dialects import attr_names
from geir.dialects import formats
from geir.dialects import graph as g
from geir.ir.locations import loc_names, name_loc
from geir.ir.shape_only import is_shape_only
from geir.ir.types import is_float, is_narrow, to_dtype, to_element_type
from geir.passes.graph.utils import constant, splat
from geir.target import op_info
from geir.target.device import dtype_name
from geir.target.precision import ALWAYS_KEPT, DEFAULT_MODE, KeepDtype, MixLists, Mode, PrecisionError, mode_named, op_class_named

def element(name: str) -> Attribute:
    """The MLIR element type of a dtype name (f16, bf16, f32)."""
    return to_element_type({"f16": np.float16, "f32": np.float32, "bf16": ml_dtypes.bfloat16}[name])


def _lowerable(t: Attribute) -> bool:
    """A type a mode may change: a float tensor other than f64 (no kernel computes f64)."""
    return isinstance(t, TensorType) and is_float(t.element_type) and dtype_name(to_dtype(t.element_type)) != "f64"


def compute_type(op: Operation) -> Attribute | None:
    """The element type `op` computes in: its first float result's, else (a comparison) its
    first float operand's; None if it computes on no float tensor."""
    for v in (*op.results, *op.operands):
        if _lowerable(v.type):
            return v.type.element_type
    return None


def tied_operands(types: list[Attribute], elt: Attribute) -> list[int]:
    """The operands (of these types, as in the model) that carry an op's compute type: float
    operands of that type."""
    return [i for i, t in enumerate(types) if _lowerable(t) and t.element_type == elt]


def supports(op: Operation, elt: Attribute) -> bool:
    """Whether the kernel template that builds `op` computes in `elt` (op_info); an op no
    template takes runs the reference fallback, which computes in any type."""
    info = op_info.template_of(op)
    return info is None or dtype_name(to_dtype(elt)) in info.dtypes


@dataclass(frozen=True)
class Decision:
    """What an op computes in: `elt`, and whether its result goes back to `out` right after
    (the cube's fp16-in, fp32-out)."""

    elt: Attribute
    out: Attribute | None = None


class _Assigner:
    def __init__(self, mode: Mode, lists: MixLists, keep: KeepDtype):
        self.mode, self.lists, self.keep = mode, lists, keep
        self.low = element(mode.low) if mode.low else None
        self.f32 = element("f32")
        self.f16 = element("f16")

    # -- decisions -----------------------------------------------------------------------------

    def kept(self, op: Operation) -> bool:
        return type(op) in self.keep.types or not self.keep.names.isdisjoint(loc_names(op.location))

    def fixed(self, op: Operation, elt: Attribute) -> Decision | None:
        """The decision that does not depend on other ops (None: a gray op of a mix mode)."""
        mode, low = self.mode, self.low
        if self.kept(op) or mode.policy == "keep" or type(op) in ALWAYS_KEPT:
            return Decision(elt)
        cube = op_info.CUBE.takes(op)
        if mode.policy == "force":
            return Decision(low if supports(op, low) else elt)
        if mode.policy == "fp32":
            if cube:
                # an fp16 / bf16 model's cube op reads values fp32 holds exactly: plain fp32
                if elt == self.f32 and supports(op, self.f16):
                    return Decision(self.f16, self.f32)
            return Decision(self.f32 if supports(op, self.f32) else elt)
        if elt != self.f32:  # the other modes only lower fp32
            return Decision(elt)
        if mode.policy == "cube":
            return Decision(low if cube and supports(op, low) else elt)
        kind = self.lists.of(op)
        if kind is op_info.Precision.WHITE:
            return Decision(low if supports(op, low) else elt)
        if kind is op_info.Precision.BLACK:
            return Decision(elt)
        return None

    def decide(self, ops: list[Operation]) -> dict[Operation, Decision]:
        decisions: dict[Operation, Decision] = {}
        gray: list[tuple[Operation, Attribute]] = []
        for op in ops:
            elt = compute_type(op)
            if elt is None or isinstance(op, g.ConstantOp):
                continue
            d = self.fixed(op, elt)
            if d is None:
                gray.append((op, elt))
                decisions[op] = Decision(elt)
            else:
                decisions[op] = d

        def is_low(v: SSAValue) -> bool:
            if isinstance(v, BlockArgument):
                return v.type.element_type == self.low
            d = decisions.get(v.owner)
            return d is not None and d.out is None and d.elt == self.low

        # Gray ops follow their inputs, to a fixed point: a gray op is lowered when every
        # non-constant input it computes on is low (and it has one). Starting from "not
        # lowered" and only ever lowering, the loop ends; its result is the least fixed point,
        # the same whatever order the ops are visited in.
        changed = True
        while changed:
            changed = False
            for op, elt in gray:
                if decisions[op].elt == self.low:
                    continue
                inputs = [op.operands[i] for i in tied_operands([v.type for v in op.operands], elt)
                          if not isinstance(op.operands[i].owner, g.ConstantOp)]
                if inputs and all(is_low(v) for v in inputs) and supports(op, self.low):
                    decisions[op] = Decision(self.low)
                    changed = True
        return decisions

    # -- rewriting -----------------------------------------------------------------------------

    def run(self, fn: func.FuncOp) -> None:
        block = fn.body.block
        ops = list(block.ops)
        for op in ops:
            if isinstance(op, g.FusionOp):
                raise PrecisionError("graph-assign-precision runs before graph-fuse: the function has fusions")
            if any(formats.is_formatted(v.type) for v in (*op.operands, *op.results)):
                raise PrecisionError("graph-assign-precision runs before graph-layout: the function has formatted tensors")
        decisions = self.decide(ops)
        self.casts: dict[tuple[SSAValue, Attribute], SSAValue] = {}
        self.orphans: set[Operation] = set()  # ops a rewrite may have left unused
        self.arg_casts: dict[Block, Operation] = {}
        original = {op: [v.type for v in op.operands] for op in ops}
        computes = {op: compute_type(op) for op in ops}
        for op in ops:
            if isinstance(op, g.ConstantOp):
                continue
            if isinstance(op, func.ReturnOp):
                for i, (v, t) in enumerate(zip(op.operands, fn.function_type.outputs.data)):
                    op.operands[i] = self.cast(v, t.element_type, op) if v.type != t else v
                continue
            d = decisions.get(op)
            elt = computes[op]
            if isinstance(op, g.CastOp):
                self.recast(op, d)
            elif d is not None and d.out is not None:
                self.round_through(op, d, original[op])
            elif d is not None and d.elt != elt and self.retype(op, elt, d, original[op]):
                continue
            else:
                self.restore(op, original[op])
        for op in reversed(list(block.ops)):
            if isinstance(op, g.ConstantOp | g.CastOp) and not op.results[0].uses and op in self.orphans:
                Rewriter.erase_op(op)

    def restore(self, op: Operation, types: list[Attribute]) -> None:
        """Give a kept op its operands at their original types back."""
        for i, (v, t) in enumerate(zip(op.operands, types)):
            if v.type != t:
                op.operands[i] = self.cast(v, t.element_type, op)

    def round_through(self, op: Operation, d: Decision, types: list[Attribute]) -> None:
        """The cube's fp16 in, fp32 out: the operands rounded to `d.elt` and back, the op in
        `d.out`. The products of fp16 values accumulate in f32 and nothing of the result is
        rounded to fp16, as L0C and the FIX pipe do (geir's cube kernels write the type they
        read, so the op stays an f32 one: priced at the f32 cube rate, a pessimistic figure)."""
        for i, (v, t) in enumerate(zip(op.operands, types)):
            if _lowerable(t) and t.element_type != d.elt:
                op.operands[i] = self.cast(self.cast(v, d.elt, op), d.out, op)
            elif v.type != t:
                op.operands[i] = self.cast(v, t.element_type, op)

    def retype(self, op: Operation, elt: Attribute, d: Decision, types: list[Attribute]) -> bool:
        """Rebuild `op` computing in `d.elt`; False (op untouched) if its result type does not
        follow its operands that way."""
        tied = set(tied_operands(types, elt))
        inputs = [self.cast(v, d.elt if i in tied else t.element_type, op) if (i in tied or v.type != t) else v
                  for i, (v, t) in enumerate(zip(op.operands, types))]
        try:
            new = type(op).build_op(inputs, None, **op.properties)
        except Exception:  # noqa: BLE001 - any op whose inference rejects the type stays as it is
            new = None
        want = [d.elt if _lowerable(r.type) and r.type.element_type == elt else r.type.element_type for r in op.results]
        if new is None or [r.type.element_type for r in new.results] != want:
            for v in inputs:
                if v.owner is not op and not v.uses and isinstance(v.owner, g.CastOp | g.ConstantOp):
                    self.orphans.add(v.owner)
            if new is not None:
                new.erase()
            return False
        new.properties = dict(op.properties)  # as written: build_op spells out defaults
        new.attributes.update(op.attributes)
        new.location = op.location
        for r, nr in zip(op.results, new.results):
            nr.name_hint = r.name_hint
        Rewriter.replace_op(op, new)
        return True

    def recast(self, op: g.CastOp, d: Decision | None) -> None:
        """A model's Cast: its target follows the decision; a cast to its input's type goes. A
        cast from or to a narrow type (float8, int4, ...: docs/precision.md) stays as written:
        no mode moves a value into or out of one."""
        if is_narrow(op.operands[0].type.element_type) or is_narrow(op.results[0].type.element_type):
            return
        to = d.elt if d is not None and _lowerable(op.results[0].type) else op.results[0].type.element_type
        x = op.operands[0]
        if x.type.element_type == to and x.type == op.results[0].type.__class__(to, op.results[0].type.get_shape()):
            Rewriter.replace_op(op, [], [x])
            return
        if to != op.results[0].type.element_type:
            new = g.CastOp.build_op([x], None, to=to)
            new.attributes.update(op.attributes)
            new.location = op.location
            new.results[0].name_hint = op.results[0].name_hint
            Rewriter.replace_op(op, new)

    def cast(self, v: SSAValue, elt: Attribute, user: Operation) -> SSAValue:
        """`v` as `elt`: itself, a folded constant, the input of a widening cast, or one
        graph.cast per value and type."""
        if v.type.element_type == elt:
            return v
        key = (v, elt)
        if key in self.casts:
            return self.casts[key]
        owner = v.owner
        if isinstance(owner, g.CastOp) and _widens(owner):
            # x -> wider -> elt is x -> elt: the wider type held x exactly
            out = self.cast(owner.operands[0], elt, user)
            self.orphans.add(owner)
        elif isinstance(owner, g.ConstantOp) and owner.array_or_none() is not None:
            new = _converted_constant(owner, elt)
            Rewriter.insert_op(new, InsertPoint.after(owner))
            self.orphans.add(owner)
            out = new.results[0]
        else:
            new = g.CastOp.build_op([v], None, to=elt)
            if isinstance(v, BlockArgument):
                # argument casts in argument order, before everything else; located at the
                # graph input (the user's node would claim its output is the input's cast)
                new.location = _argument_location(v, user)
                last = self.arg_casts.get(v.owner)
                Rewriter.insert_op(new, InsertPoint.after(last) if last else InsertPoint.at_start(v.owner))
                self.arg_casts[v.owner] = new
            else:
                new.location = owner.location
                Rewriter.insert_op(new, InsertPoint.after(owner))
            if v.name_hint:
                new.results[0].name_hint = f"{v.name_hint}_{dtype_name(to_dtype(elt))}"
            out = new.results[0]
        self.casts[key] = out
        return out


def _widens(cast: g.CastOp) -> bool:
    """A float cast to a wider float type: exact (f16 / bf16 -> f32)."""
    src, dst = cast.operands[0].type, cast.results[0].type
    return _lowerable(src) and _lowerable(dst) and \
        to_dtype(dst.element_type).itemsize > to_dtype(src.element_type).itemsize


def _converted_constant(c: g.ConstantOp, elt: Attribute) -> g.ConstantOp:
    dtype = to_dtype(elt)
    ty = c.results[0].type
    attr = c.value
    array = c.array()
    name = f"{c.results[0].name_hint}_{dtype_name(dtype)}" if c.results[0].name_hint else None
    # a splat (one element stored for the whole tensor) stays one; a shape-only weight too
    # (`constant` of its ShapeOnly value: ir/shape_only.py)
    if isinstance(attr, DenseIntOrFPElementsAttr) and len(attr.data.data) == to_dtype(ty.element_type).itemsize \
            and int(np.prod(ty.get_shape())) > 1 and not is_shape_only(array):
        new = splat(float(array.reshape(-1)[0]), TensorType(elt, ty.get_shape()), c.location)
    else:
        # IEEE conversion, what graph.cast computes: a value past the type's range becomes
        # inf (an attention mask's finfo(f32).min is -inf in f16: softmax's own intent)
        with np.errstate(over="ignore"):
            new = constant(array.astype(dtype), c.location, name)
    new.results[0].name_hint = name
    return new


@dataclass(frozen=True)
class AssignPrecisionPass(ModulePass):
    """Sets the element type each float op computes in from GE's precision mode (force_fp16,
    allow_mix_precision, ...), keep_dtype and modify_mixlist, inserting casts only where a
    type changes and storing converted weights."""

    name = "graph-assign-precision"

    mode: str = DEFAULT_MODE
    keep_dtype: tuple[str, ...] = ()
    modify_mixlist: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mode = mode_named(self.mode)
        keep = KeepDtype.parse(self.keep_dtype)
        if self.modify_mixlist and mode.policy != "mix":
            raise PrecisionError(f"modify_mixlist applies to the allow_mix_precision modes, not '{mode.name}'")
        lists = MixLists.load(self.modify_mixlist) if self.modify_mixlist else MixLists()
        assigner = _Assigner(mode, lists, keep)
        for fn in op.walk():
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                assigner.run(fn)
        names = {n for o in op.walk() for n in loc_names(o.location)}
        kinds = {type(o) for o in op.walk()}
        missing = [line for line in keep.lines if (op_class_named(line.removeprefix("OpType::")) not in kinds
                                                  if line.startswith("OpType::") else line not in names)]
        if missing:
            raise PrecisionError(f"keep_dtype: no op of the graph is named by {', '.join(repr(m) for m in missing)}")


def _argument_location(arg: BlockArgument, user: Operation) -> Attribute:
    """The graph input's ONNX name (else its SSA name) as a location; the user's otherwise."""
    f = arg.owner.parent_op()
    attrs = getattr(f, "arg_attrs", None)
    name = None
    if attrs is not None and arg.index < len(attrs.data):
        got = attrs.data[arg.index].data.get(attr_names.ONNX_NAME)
        name = got.data if isinstance(got, StringAttr) else None
    name = name or arg.name_hint
    return name_loc(name) if name else user.location
