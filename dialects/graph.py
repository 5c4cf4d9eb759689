"""The graph dialect: tensor-level operators with ONNX / GE semantics.

Every op is declared by a short class: its operand names (`x`, `w`, `b?` - a
trailing `?` marks an optional trailing operand), its attributes with their
kinds and ONNX defaults, and a shape function. The `graph_op` decorator turns
that into an xDSL operation with

* one property per attribute (printed in the attribute dictionary),
* named accessors for the operands,
* a verifier that checks operand counts, attribute values and that the declared
  result types equal the inferred ones (so a wrong IR is a clear error), and
* a custom form `graph.conv %x, %w {...} : (tensor<..>, tensor<..>) -> tensor<..>`.

Operand counts are kept in one variadic operand list: ONNX optional inputs are
trailing, and the importer materialises any optional input that is missing in
the middle, so position alone says which operand is which and the generic form
stays plain MLIR.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BytesAttr,
    DenseArrayBase,
    IntegerType,
    Signedness,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    Float4E2M1FNType,
    Float6E2M3FNType,
    Float6E3M2FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, OpResult, Operation, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, HasParent, IsolatedFromAbove, IsTerminator, OpTrait, Pure
from xdsl.utils.exceptions import VerifyException

from geir.dialects import attr_names, formats
from geir.ir.locations import loc_names
from geir.ir.shape_only import ShapeOnly
from geir.dialects.traits import (
    Collective,
    Contraction,
    DataMovement,
    Elementwise,
    Normalization,
    Reduction,
    RowMixing,
    RowSoftmax,
    ShapeComputation,
    ValueGenerator,
    ViewLike,
)
from geir.ir.types import (
    NARROW_INT_TYPES,
    array_from_dense,
    i1,
    is_float,
    tensor,
    to_dtype,
    to_element_type,
)


class ShapeError(ValueError):
    """An op's operands and attributes do not define a valid result."""


# ---------------------------------------------------------------------------
# Attribute kinds: how a Python value maps to an MLIR attribute and back.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AttrKind:
    default: Any = None
    optional: bool = False
    constr: ClassVar[type[Attribute]] = Attribute

    describe: ClassVar[str] = "an attribute"

    def accepts(self, attr: Attribute) -> bool:
        return isinstance(attr, self.constr)

    def to_attr(self, value: Any) -> Attribute:
        raise NotImplementedError

    def to_py(self, attr: Attribute) -> Any:
        raise NotImplementedError


class Ints(AttrKind):
    constr = DenseArrayBase
    describe = "an array<i64: ...>"

    def accepts(self, attr):
        return isinstance(attr, DenseArrayBase) and attr.elt_type == i64

    def to_attr(self, value):
        return DenseArrayBase.from_list(i64, [int(v) for v in value])

    def to_py(self, attr):
        return tuple(attr.get_values())


class Int(AttrKind):
    constr = IntegerAttr
    describe = "an i64 integer"

    def accepts(self, attr):
        return isinstance(attr, IntegerAttr) and attr.type == i64

    def to_attr(self, value):
        return IntegerAttr(int(value), i64)

    def to_py(self, attr):
        return attr.value.data


class Float(AttrKind):
    constr = FloatAttr
    describe = "a float"

    def to_attr(self, value):
        return FloatAttr(float(value), f32)

    def to_py(self, attr):
        return attr.value.data


class Str(AttrKind):
    constr = StringAttr
    describe = "a string"

    def to_attr(self, value):
        return StringAttr(value)

    def to_py(self, attr):
        return attr.data


class ElemType(AttrKind):
    """An element type (Cast's `to`); the Python value is a numpy dtype."""

    constr = TypeAttribute
    describe = "an element type"

    def to_attr(self, value):
        return value if isinstance(value, Attribute) else to_element_type(value)

    def to_py(self, attr):
        return to_dtype(attr)


class Dense(AttrKind):
    """A small dense elements attribute (ConstantOfShape's `value`)."""

    constr = DenseIntOrFPElementsAttr
    describe = "a dense elements attribute"

    def to_attr(self, value):
        from geir.ir.types import dense_from_array

        return dense_from_array(np.asarray(value))

    def to_py(self, attr):
        return array_from_dense(attr)


# ---------------------------------------------------------------------------
# The op base class and the decorator that declares an op from its table.
# ---------------------------------------------------------------------------


class GraphOp(IRDLOperation):
    """Base of all graph ops with positional operands and inferred results."""

    OPERANDS: ClassVar[tuple[str, ...]] = ()
    VARIADIC: ClassVar[bool] = False  # all operands are one list (concat, sum, ...)
    ATTRS: ClassVar[dict[str, AttrKind]] = {}
    NUM_RESULTS: ClassVar[int | None] = 1  # None: variadic (split)
    LAYOUT: ClassVar[str] = "nd"  # which format encodings it takes: dialects/formats.py
    TRAITS: ClassVar[tuple[OpTrait, ...]] = ()  # its families (dialects/traits.py), besides Pure
    PURE: ClassVar[bool] = True  # False: it has effects (a collective), so no Pure trait

    inputs = var_operand_def()  # tensors; checked by verify_ with a clear message

    # -- construction -------------------------------------------------------

    @classmethod
    def build_op(
        cls,
        inputs: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute] | None = None,
        **attrs: Any,
    ):
        """Build from Python attribute values; results are inferred if not given."""
        values = [SSAValue.get(v) for v in inputs]
        props = cls.attrs_to_props(attrs)
        if result_types is None:
            py = cls.props_to_py(props)
            types, consts = _logical_operands(values)
            result_types = cls.infer(types, py, consts)
            if result_types is None:
                raise ShapeError(f"{cls.name}: cannot infer the result type; give it explicitly")
            result_types = formats.result_types(cls, [v.type for v in values], py, result_types)
        op = cls.create(operands=values, result_types=list(result_types), properties=props)
        return op

    @classmethod
    def attrs_to_props(cls, attrs: dict[str, Any]) -> dict[str, Attribute]:
        unknown = set(attrs) - set(cls.ATTRS)
        if unknown:
            raise ValueError(f"{cls.name}: unknown attributes {sorted(unknown)}")
        props: dict[str, Attribute] = {}
        for key, kind in cls.ATTRS.items():
            value = attrs.get(key, kind.default)
            if value is None:
                if not kind.optional:
                    raise ValueError(f"{cls.name}: attribute '{key}' is required")
                continue
            props[key] = value if isinstance(value, Attribute) and not isinstance(kind, ElemType) else kind.to_attr(value)
        return props

    @classmethod
    def props_to_py(cls, props: dict[str, Attribute]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, kind in cls.ATTRS.items():
            attr = props.get(key)
            out[key] = kind.default if attr is None else kind.to_py(attr)
        return out

    # -- access -------------------------------------------------------------

    def attrs(self) -> dict[str, Any]:
        """The op's attributes as Python values (ints, tuples, floats, str, dtype)."""
        return self.props_to_py(self.properties)

    def kernel_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the op's numpy kernel: its attributes that are set."""
        return {k: v for k, v in self.attrs().items() if v is not None}

    @classmethod
    def arity(cls) -> tuple[int, int | None]:
        if cls.VARIADIC:
            return (1, None)
        required = sum(1 for n in cls.OPERANDS if not n.endswith("?"))
        return (required, len(cls.OPERANDS))

    # -- shape inference and verification ----------------------------------

    @classmethod
    def infer(
        cls, types: list[TensorType], attrs: dict[str, Any], consts: list[np.ndarray | None]
    ) -> list[TensorType] | None:
        """Result types from operand types, attributes and constant operands.

        Returns None when the result depends on a non-constant operand value."""
        raise NotImplementedError

    def verify_(self) -> None:
        lo, hi = self.arity()
        n = len(self.inputs)
        if n < lo or (hi is not None and n > hi):
            want = f"{lo}" if lo == hi else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
            raise VerifyException(f"'{self.name}' expects {want} operand{'s' if want != '1' else ''}, got {n}")
        for i, v in enumerate(self.inputs):
            if not isinstance(v.type, TensorType):
                raise VerifyException(f"'{self.name}' operand #{i} must be a tensor, got {v.type}")
        for i, r in enumerate(self.results):
            if not isinstance(r.type, TensorType):
                raise VerifyException(f"'{self.name}' result #{i} must be a tensor, got {r.type}")
        if self.NUM_RESULTS is not None and len(self.results) != self.NUM_RESULTS:
            raise VerifyException(
                f"'{self.name}' expects {self.NUM_RESULTS} result(s), got {len(self.results)}"
            )
        for key, kind in self.ATTRS.items():
            attr = self.properties.get(key)
            if attr is None:
                if not kind.optional and kind.default is None:
                    raise VerifyException(f"'{self.name}' requires attribute '{key}'")
            elif not kind.accepts(attr):
                raise VerifyException(f"'{self.name}' attribute '{key}' must be {kind.describe}, got {attr}")
        extra = set(self.properties) - set(self.ATTRS)
        if extra:
            raise VerifyException(f"'{self.name}' has unknown attributes {sorted(extra)}")
        # Shapes are inferred on the logical types; the encodings are checked on their own.
        error = formats.check_op(self)
        if error is not None:
            raise VerifyException(f"'{self.name}' {error}")
        if self.is_symbolic():  # `?` dims: checked in the symbols of the ranges instead
            from geir.dialects.symbolic_shapes import verify_op

            error = verify_op(self)
            if error is not None:
                raise VerifyException(f"'{self.name}' {error}")
            return
        types, consts = _logical_operands(self.inputs)
        try:
            inferred = self.infer(types, self.attrs(), consts)
        except ShapeError as e:
            raise VerifyException(f"'{self.name}': {e}") from None
        if inferred is None:
            return
        declared = [formats.logical_type(r.type) for r in self.results]
        if len(inferred) != len(declared):
            raise VerifyException(
                f"'{self.name}' infers {len(inferred)} results but declares {len(declared)}"
            )
        for i, (want, got) in enumerate(zip(inferred, declared)):
            if want != got:
                raise VerifyException(
                    f"'{self.name}' result #{i} has type {got}, but the operands imply {want}"
                )

    def is_symbolic(self) -> bool:
        """Whether an operand or result has a dynamic dim (`?`: passes/graph/symbolic_shapes.py)."""
        return attr_names.DIMS in self.attributes or any(
            isinstance(v.type, TensorType) and DYNAMIC_INDEX in v.type.get_shape()
            for v in (*self.inputs, *self.results))

    # -- custom syntax ------------------------------------------------------

    def print(self, printer: Printer) -> None:
        if self.inputs:
            printer.print_string(" ")
            printer.print_list(self.inputs, printer.print_operand)
        if self.properties:
            printer.print_string(" ")
            printer.print_attr_dict(self.properties)
        if self.attributes:
            printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" : ")
        printer.print_function_type([v.type for v in self.inputs], [r.type for r in self.results])

    @classmethod
    def parse(cls, parser: Parser):
        pos = parser.pos
        operands = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand
        ) or []
        props = parser.parse_optional_attr_dict()
        attributes = {}
        if parser.parse_optional_keyword("attributes"):
            attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ftype = parser.parse_function_type()
        values = parser.resolve_operands(operands, ftype.inputs.data, pos)
        return cls.create(
            operands=values,
            result_types=list(ftype.outputs.data),
            properties=props,
            attributes=attributes,
        )


_SETTINGS = ("OPERANDS", "VARIADIC", "ATTRS", "NUM_RESULTS", "FLOAT_ONLY", "RESULT_BOOL", "LAYOUT", "TRAITS", "PURE")


def graph_op(cls: type[GraphOp]) -> type[GraphOp]:
    """Declare an op: add a property per attribute kind, operand accessors,
    result definitions and the Pure trait, then make it an IRDL op."""
    # IRDL accepts class-level settings only as annotated ClassVar constants.
    for klass in cls.__mro__:
        if issubclass(klass, GraphOp):
            notes = dict(klass.__dict__.get("__annotations__", {}))
            notes.update({key: ClassVar[Any] for key in _SETTINGS if key in klass.__dict__})
            klass.__annotations__ = notes
    for key in cls.ATTRS:
        # Kinds and presence are checked by GraphOp.verify_, whose messages name
        # the attribute; IRDL's generic ones do not.
        setattr(cls, key, opt_prop_def(Attribute))
    if cls.NUM_RESULTS is None:
        cls.outputs = var_result_def()  # tensors; checked by verify_
    elif cls.NUM_RESULTS == 1:
        cls.output = result_def()
    if "traits" not in cls.__dict__:
        cls.traits = traits_def(*((Pure(),) if cls.PURE else ()), *cls.TRAITS)
    for index, raw in enumerate(cls.OPERANDS):
        name = raw.rstrip("?")
        if name in cls.ATTRS:
            raise TypeError(f"{cls.__name__}: operand '{name}' clashes with an attribute")

        def getter(self, index=index):
            return self.inputs[index] if index < len(self.inputs) else None

        setattr(cls, name, property(getter))
    return irdl_op_definition(cls)


# ---------------------------------------------------------------------------
# Shape helpers.
# ---------------------------------------------------------------------------


def constant_value_of(value: SSAValue) -> np.ndarray | None:
    """The array of a value defined by graph.constant, else None (for a formatted
    constant: its storage array)."""
    owner = value.owner
    if isinstance(owner, ConstantOp):
        return owner.array_or_none()
    return None


def _logical_operands(values: Sequence[SSAValue]) -> tuple[list[Attribute], list[np.ndarray | None]]:
    """Logical operand types and constant values for shape inference (a formatted
    constant's storage array is not its value: None)."""
    types = [formats.logical_type(v.type) for v in values]
    consts = [None if formats.is_formatted(v.type) else constant_value_of(v) for v in values]
    return types, consts


def _elt(t: TensorType) -> Attribute:
    return t.element_type


def _shape(t: TensorType) -> tuple[int, ...]:
    return tuple(t.get_shape())


def _norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise ShapeError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise ShapeError(f"shapes {' and '.join(str(list(s)) for s in shapes)} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _broadcasts_to(shape: Sequence[int], x: Sequence[int]) -> bool:
    """`shape` broadcasts to x one way (ONNX's unidirectional broadcasting: x is not widened)."""
    try:
        return broadcast_shapes(shape, x) == tuple(x)
    except ShapeError:
        return False


def _same_elt(types: Sequence[TensorType], what: str = "operands") -> Attribute:
    elts = list(dict.fromkeys(t.element_type for t in types))
    if len(elts) != 1:
        raise ShapeError(f"{what} must have one element type, got {', '.join(map(str, elts))}")
    return elts[0]


def _require_float(t: TensorType, what: str = "operand") -> None:
    if not is_float(t.element_type):
        raise ShapeError(f"{what} must have a floating-point element type, got {t.element_type}")


def _const_ints(consts, index: int) -> tuple[int, ...] | None:
    c = consts[index] if index < len(consts) else None
    return None if c is None else tuple(int(v) for v in np.asarray(c).reshape(-1))


def _spatial(attrs, key, n, default):
    v = attrs.get(key)
    if v is None:
        return (default,) * n
    if len(v) != n:
        raise ShapeError(f"'{key}' needs {n} values for {n} spatial dims, got {len(v)}")
    return tuple(v)


def _pads(attrs, n):
    p = attrs.get("pads")
    if p is None:
        return (0,) * n, (0,) * n
    if len(p) != 2 * n:
        raise ShapeError(f"'pads' needs {2 * n} values for {n} spatial dims, got {len(p)}")
    if any(v < 0 for v in p):
        raise ShapeError(f"'pads' must not be negative, got {list(p)}")
    return tuple(p[:n]), tuple(p[n:])


def pool_output_shape(in_spatial, kernel, pads_b, pads_e, strides, dilations, ceil):
    out = []
    for size, k, pb, pe, s, d in zip(in_spatial, kernel, pads_b, pads_e, strides, dilations):
        if k < 1 or s < 1 or d < 1:
            raise ShapeError("kernel, strides and dilations must be positive")
        span = d * (k - 1) + 1
        num = size + pb + pe - span
        if num < 0:
            raise ShapeError(f"window of extent {span} exceeds padded input of size {size + pb + pe}")
        o = (-(-num // s) if ceil else num // s) + 1
        if ceil and (o - 1) * s >= size + pb:
            o -= 1  # the last window would start in the end padding
        out.append(o)
    return tuple(out)


# ---------------------------------------------------------------------------
# Op categories.
# ---------------------------------------------------------------------------


class _Unary(GraphOp):
    OPERANDS = ("x",)
    TRAITS = (Elementwise(),)
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types, attrs, consts):
        if cls.FLOAT_ONLY:
            _require_float(types[0])
        return [types[0]]


class _Binary(GraphOp):
    """Binary op with multidirectional (numpy) broadcasting."""

    OPERANDS = ("lhs", "rhs")
    TRAITS = (Elementwise(),)
    RESULT_BOOL: ClassVar[bool] = False

    @classmethod
    def infer(cls, types, attrs, consts):
        elt = _same_elt(types)
        shape = broadcast_shapes(_shape(types[0]), _shape(types[1]))
        return [tensor(shape, i1 if cls.RESULT_BOOL else elt)]


class _Variadic(GraphOp):
    VARIADIC = True
    TRAITS = (Elementwise(),)

    @classmethod
    def infer(cls, types, attrs, consts):
        elt = _same_elt(types)
        return [tensor(broadcast_shapes(*map(_shape, types)), elt)]


class _Reduce(GraphOp):
    OPERANDS = ("x",)
    ATTRS = {"axes": Ints(optional=True), "keepdims": Int(1), "noop_with_empty_axes": Int(0)}
    TRAITS = (Reduction(),)

    def reduced_axes(self) -> tuple[int, ...]:
        rank = len(formats.logical_shape(self.inputs[0].type))
        a = self.attrs()
        if not a["axes"]:
            return () if a["noop_with_empty_axes"] else tuple(range(rank))
        return tuple(sorted(ax % rank for ax in a["axes"]))

    @classmethod
    def infer(cls, types, attrs, consts):
        shape = _shape(types[0])
        axes = attrs["axes"]
        if not axes:
            if attrs["noop_with_empty_axes"]:
                return [types[0]]
            axes = tuple(range(len(shape)))
        norm = {_norm_axis(a, len(shape), "reduction axis") for a in axes}
        if len(norm) != len(axes):
            raise ShapeError(f"repeated reduction axes {list(axes)}")
        keep = attrs["keepdims"]
        out = [1 if i in norm else d for i, d in enumerate(shape) if keep or i not in norm]
        return [tensor(out, _elt(types[0]))]


def _unary(name: str, doc: str, float_only: bool = True, traits: tuple[OpTrait, ...] = (), **attrs: AttrKind):
    cls = type(
        _camel(name) + "Op",
        (_Unary,),
        {"name": f"graph.{name}", "__doc__": doc, "ATTRS": attrs, "FLOAT_ONLY": float_only,
         "TRAITS": (*_Unary.TRAITS, *traits), "__module__": __name__},
    )
    return graph_op(cls)


def _binary(name: str, doc: str, result_bool: bool = False, **attrs: AttrKind):
    cls = type(
        _camel(name) + "Op",
        (_Binary,),
        {"name": f"graph.{name}", "__doc__": doc, "RESULT_BOOL": result_bool, "ATTRS": attrs,
         "__module__": __name__},
    )
    return graph_op(cls)


def _variadic(name: str, doc: str):
    cls = type(_camel(name) + "Op", (_Variadic,), {"name": f"graph.{name}", "__doc__": doc, "__module__": __name__})
    return graph_op(cls)


def _reduce(name: str, doc: str):
    cls = type(_camel(name) + "Op", (_Reduce,), {"name": f"graph.{name}", "__doc__": doc, "__module__": __name__})
    return graph_op(cls)


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


# Elementwise unary ops (ONNX semantics, result type = operand type).
ReluOp = _unary("relu", "max(x, 0)", float_only=False)
SigmoidOp = _unary("sigmoid", "1 / (1 + exp(-x))")
TanhOp = _unary("tanh", "Hyperbolic tangent.")
ErfOp = _unary("erf", "Gauss error function.")
ExpOp = _unary("exp", "Exponential.")
LogOp = _unary("log", "Natural logarithm.")
SqrtOp = _unary("sqrt", "Square root.")
ReciprocalOp = _unary("reciprocal", "1 / x")
NegOp = _unary("neg", "-x", float_only=False)
AbsOp = _unary("abs", "|x|", float_only=False)
SignOp = _unary("sign", "sign(x)", float_only=False)
FloorOp = _unary("floor", "Round down.")
CeilOp = _unary("ceil", "Round up.")
RoundOp = _unary("round", "Round half to even.")
SinOp = _unary("sin", "Sine.")
CosOp = _unary("cos", "Cosine.")
SoftplusOp = _unary("softplus", "log(1 + exp(x))")
SoftsignOp = _unary("softsign", "x / (1 + |x|)")
IdentityOp = _unary("identity", "The operand itself.", float_only=False, traits=(ViewLike(),))
LeakyReluOp = _unary("leaky_relu", "x if x >= 0 else alpha * x", alpha=Float(0.01))
EluOp = _unary("elu", "x if x >= 0 else alpha * (exp(x) - 1)", alpha=Float(1.0))
SeluOp = _unary(
    "selu", "Scaled ELU.", alpha=Float(1.67326319217681884765625), gamma=Float(1.05070102214813232421875)
)
CeluOp = _unary("celu", "Continuously differentiable ELU.", alpha=Float(1.0))
HardSigmoidOp = _unary("hard_sigmoid", "max(0, min(1, alpha * x + beta))", alpha=Float(0.2), beta=Float(0.5))
HardSwishOp = _unary("hard_swish", "x * hard_sigmoid(x) with alpha 1/6, beta 0.5")
GeluOp = _unary("gelu", "Gaussian error linear unit (exact or tanh approximation).", approximate=Str("none"))
ShrinkOp = _unary("shrink", "Soft/hard shrinkage.", float_only=False, bias=Float(0.0), lambd=Float(0.5))
MishOp = _unary("mish", "x * tanh(softplus(x))")
ThresholdedReluOp = _unary("thresholded_relu", "x if x > alpha else 0", alpha=Float(1.0))


# ---------------------------------------------------------------------------
# Elementwise, integer and scan ops (ONNX Acos ... Sinh, IsNaN / IsInf, the Bitwise
# family, BitShift, BitCast, CumSum / CumProd; docs/onnx.md "Elementwise, integer and scan
# ops"). The float ones without a vector instruction run the reference fallback.
# ---------------------------------------------------------------------------

AcosOp = _unary("acos", "Arccosine.")
AcoshOp = _unary("acosh", "Inverse hyperbolic cosine.")
AsinOp = _unary("asin", "Arcsine.")
AsinhOp = _unary("asinh", "Inverse hyperbolic sine.")
AtanOp = _unary("atan", "Arctangent.")
AtanhOp = _unary("atanh", "Inverse hyperbolic tangent.")
TanOp = _unary("tan", "Tangent.")
CoshOp = _unary("cosh", "Hyperbolic cosine.")
SinhOp = _unary("sinh", "Hyperbolic sine.")


def _require_integer(t: TensorType, what: str = "operand") -> None:
    if not isinstance(t.element_type, IntegerType) or t.element_type.width.data == 1:
        raise ShapeError(f"{what} must have an integer element type, got {t.element_type}")


class _FloatTest(GraphOp):
    """A float operand in, an i1 mask of the same shape out."""

    OPERANDS = ("x",)
    TRAITS = (Elementwise(),)

    @classmethod
    def infer(cls, types, attrs, consts):
        _require_float(types[0])
        return [tensor(_shape(types[0]), i1)]


@graph_op
class IsNanOp(_FloatTest):
    """x is NaN."""

    name = "graph.is_nan"


@graph_op
class IsInfOp(_FloatTest):
    """x is +inf (detect_positive) or -inf (detect_negative)."""

    name = "graph.is_inf"
    ATTRS = {"detect_positive": Int(1), "detect_negative": Int(1)}


class _BitwiseBinary(_Binary):
    @classmethod
    def infer(cls, types, attrs, consts):
        for t in types:
            _require_integer(t)
        return super().infer(types, attrs, consts)


def _bitwise(name: str, doc: str, **attrs: AttrKind):
    cls = type(_camel(name) + "Op", (_BitwiseBinary,),
               {"name": f"graph.{name}", "__doc__": doc, "ATTRS": attrs, "__module__": __name__})
    return graph_op(cls)


BitwiseAndOp = _bitwise("bitwise_and", "lhs & rhs (integers)")
BitwiseOrOp = _bitwise("bitwise_or", "lhs | rhs (integers)")
BitwiseXorOp = _bitwise("bitwise_xor", "lhs ^ rhs (integers)")


@graph_op
class BitShiftOp(_BitwiseBinary):
    """lhs shifted by rhs bits (`direction` LEFT or RIGHT; a signed right shift is
    arithmetic); a shift by a negative amount or by the width or more gives 0 (-1 for a right
    shift of a negative lhs), as ONNX BitShift-28 says."""

    name = "graph.bit_shift"
    ATTRS = {"direction": Str("RIGHT")}

    @classmethod
    def infer(cls, types, attrs, consts):
        if attrs["direction"] not in ("LEFT", "RIGHT"):
            raise ShapeError(f"direction must be LEFT or RIGHT, got {attrs['direction']!r}")
        return super().infer(types, attrs, consts)


@graph_op
class BitwiseNotOp(GraphOp):
    """~x (integers)."""

    name = "graph.bitwise_not"
    TRAITS = (Elementwise(),)
    OPERANDS = ("x",)

    @classmethod
    def infer(cls, types, attrs, consts):
        _require_integer(types[0])
        return [types[0]]


def _bit_width(elt: Attribute) -> int:
    return np.dtype(to_dtype(elt)).itemsize * 8


@graph_op
class BitCastOp(GraphOp):
    """The operand's bits seen as element type `to`, of the same width (little endian)."""

    name = "graph.bitcast"
    TRAITS = (Elementwise(),)
    OPERANDS = ("x",)
    ATTRS = {"to": ElemType()}

    @classmethod
    def infer(cls, types, attrs, consts):
        to = to_element_type(attrs["to"])
        src = _elt(types[0])
        if to == i1 and src != i1:
            raise ShapeError(f"bitcast from {src} to i1 is not supported (a byte other than 0 or 1 is no i1)")
        if _bit_width(src) != _bit_width(to):
            raise ShapeError(f"bitcast from {src} to {to}: widths differ ({_bit_width(src)} vs {_bit_width(to)} bits)")
        return [tensor(_shape(types[0]), to)]


class _Cumulative(GraphOp):
    OPERANDS = ("x",)
    ATTRS = {"axis": Int(0), "exclusive": Int(0), "reverse": Int(0)}

    @classmethod
    def infer(cls, types, attrs, consts):
        t = types[0]
        if isinstance(_elt(t), IntegerType) and _elt(t).width.data == 1:
            raise ShapeError("operand must be a number tensor, got i1")
        if not _shape(t):
            raise ShapeError("operand must have rank >= 1")
        _norm_axis(attrs["axis"], len(_shape(t)))
        return [t]


@graph_op
class CumSumOp(_Cumulative):
    """Running sum along `axis` (`exclusive`: without the element itself; `reverse`: from
    the end)."""

    name = "graph.cum_sum"


@graph_op
class CumProdOp(_Cumulative):
    """Running product along `axis` (`exclusive`: without the element itself; `reverse`:
    from the end)."""

    name = "graph.cum_prod"


@graph_op
class LogicalNotOp(GraphOp):
    """Logical negation of a boolean tensor."""

    name = "graph.logical_not"
    TRAITS = (Elementwise(),)
    OPERANDS = ("x",)

    @classmethod
    def infer(cls, types, attrs, consts):
        if types[0].element_type != i1:
            raise ShapeError("operand must be a tensor of i1")
        return [types[0]]


# Binary ops with broadcasting.
AddOp = _binary("add", "lhs + rhs")
SubOp = _binary("sub", "lhs - rhs")
MulOp = _binary("mul", "lhs * rhs")
DivOp = _binary("div", "lhs / rhs (integer division truncates)")
ModOp = _binary("mod", "Remainder (attribute fmod selects C fmod semantics).", fmod=Int(0))
EqualOp = _binary("equal", "lhs == rhs", result_bool=True)
LessOp = _binary("less", "lhs < rhs", result_bool=True)
GreaterOp = _binary("greater", "lhs > rhs", result_bool=True)
LessOrEqualOp = _binary("less_or_equal", "lhs <= rhs", result_bool=True)
GreaterOrEqualOp = _binary("greater_or_equal", "lhs >= rhs", result_bool=True)
LogicalAndOp = _binary("logical_and", "Boolean and.", result_bool=True)
LogicalOrOp = _binary("logical_or", "Boolean or.", result_bool=True)
LogicalXorOp = _binary("logical_xor", "Boolean xor.", result_bool=True)


@graph_op
class PowOp(GraphOp):
    """lhs ** rhs; the result has the base's element type (ONNX Pow)."""

    name = "graph.pow"
    TRAITS = (Elementwise(),)
    OPERANDS = ("lhs", "rhs")

    @classmethod
    def infer(cls, types, attrs, consts):
        return [tensor(broadcast_shapes(_shape(types[0]), _shape(types[1])), _elt(types[0]))]


@graph_op
class PReluOp(GraphOp):
    """x if x >= 0 else slope * x; slope broadcasts to x (unidirectionally)."""

    name = "graph.prelu"
    TRAITS = (Elementwise(),)
    OPERANDS = ("x", "slope")

    @classmethod
    def infer(cls, types, attrs, consts):
        _same_elt(types)
        x = _shape(types[0])
        if broadcast_shapes(x, _shape(types[1])) != x:
            raise ShapeError(f"slope {list(_shape(types[1]))} does not broadcast to {list(x)}")
        return [types[0]]


SumOp = _variadic("sum", "Elementwise sum of all operands, with broadcasting.")
MeanOp = _variadic("mean", "Elementwise mean of all operands, with broadcasting.")
MaxOp = _variadic("max", "Elementwise maximum of all operands, with broadcasting.")
MinOp = _variadic("min", "Elementwise minimum of all operands, with broadcasting.")


@graph_op
class WhereOp(GraphOp):
    """cond ? x : y with broadcasting."""

    name = "graph.where"
    TRAITS = (Elementwise(),)
    OPERANDS = ("cond", "x", "y")

    @classmethod
    def infer(cls, types, attrs, consts):
        if types[0].element_type != i1:
            raise ShapeError("condition must be a tensor of i1")
        elt = _same_elt(types[1:], "the two branches")
        return [tensor(broadcast_shapes(*map(_shape, types)), elt)]


@graph_op
class ClipOp(GraphOp):
    """min(max(x, min), max); bounds are optional scalar operands."""

    name = "graph.clip"
    TRAITS = (Elementwise(),)
    OPERANDS = ("x", "min?", "max?")

    @classmethod
    def infer(cls, types, attrs, consts):
        _same_elt(types)
        for t in types[1:]:
            if math.prod(_shape(t)) != 1:
                raise ShapeError(f"clip bounds must be scalars, got {t}")
        return [types[0]]


@graph_op
class CastOp(GraphOp):
    """Element type conversion (ONNX Cast). To a float8 type, `saturate` (absent: 1) clamps
    what is out of range, infinities included, to the type's largest finite value; 0 gives
    NaN (e5m2: infinity). To float8e8m0, `round_mode` ("up" when absent, "down", "nearest")
    chooses the power of two. Both are stored only where they can change the result."""

    name = "graph.cast"
    TRAITS = (Elementwise(),)
    OPERANDS = ("x",)
    ATTRS = {"to": ElemType(), "saturate": Int(optional=True), "round_mode": Str(optional=True)}

    @classmethod
    def infer(cls, types, attrs, consts):
        return [tensor(_shape(types[0]), _narrow_cast_target(attrs))]


# --- Narrow element types (float8, float6, float4, int4, int2): cast / quantize / dequantize -
# geir stores these types and converts to and from them; it computes nothing in them
# (docs/precision.md, "Narrow element types").

SATURATING_TYPES = (Float8E4M3FNType(), Float8E4M3FNUZType(), Float8E5M2Type(), Float8E5M2FNUZType(),
                    Float8E8M0FNUType())
"""The cast targets ONNX's `saturate` applies to (float8; e8m0 with its `round_mode`)."""

ROUND_MODES = ("up", "down", "nearest")

NARROW_QUANT_TYPES = (*NARROW_INT_TYPES, Float8E4M3FNType(), Float8E4M3FNUZType(), Float8E5M2Type(),
                      Float8E5M2FNUZType(), Float4E2M1FNType(), Float6E2M3FNType(), Float6E3M2FNType())
"""The narrow types a tensor is quantized to (QuantizeLinear's int4 / uint4 / int2 / uint2,
float8, float6 and float4e2m1); a float one rounds as graph.cast to it (saturate applies to
float8)."""


def _narrow_cast_target(attrs) -> Attribute:
    to = to_element_type(attrs["to"])
    if attrs.get("saturate") is not None and to not in SATURATING_TYPES:
        raise ShapeError(f"saturate applies to a float8 target, not {to}")
    mode = attrs.get("round_mode")
    if mode is not None and (mode not in ROUND_MODES or to != Float8E8M0FNUType()):
        raise ShapeError(f"round_mode {mode!r}: only 'up', 'down' or 'nearest', and only to f8E8M0FNU")
    return to


def _quantized_type(t: Attribute) -> bool:
    return t in QUANT_TYPES or t in NARROW_QUANT_TYPES

# --- end of the narrow element types ---------------------------------------------------------


INT8_TYPES = (IntegerType(8), IntegerType(8, Signedness.UNSIGNED))
"""What an integer contraction multiplies: int8 / uint8 (GE's quantized Conv2D / MatMul)."""

ACC_TYPE = IntegerType(32)
"""What an integer contraction accumulates in and returns (int32, as the cube's L0C)."""


QUANT_TYPES = (*INT8_TYPES, IntegerType(16), IntegerType(16, Signedness.UNSIGNED))
"""The integer types a tensor is quantized to (ONNX QuantizeLinear's 8- and 16-bit ones)."""


def _quant_params(types: Sequence[TensorType], what: str) -> tuple[int, ...]:
    """Checks scale (float) and zero point against x; the shape they broadcast to (x's)."""
    _require_float(types[1], "scale")
    x = _shape(types[0])
    try:
        fits = broadcast_shapes(*map(_shape, types)) == x
    except ShapeError:
        fits = False
    if not fits:
        raise ShapeError(f"{what} parameters {[list(_shape(t)) for t in types[1:]]} do not broadcast to {list(x)}")
    return x


@graph_op
class QuantizeOp(GraphOp):
    """saturate(round_half_even(x / scale) + zero_point) in the zero point's integer type
    (ONNX QuantizeLinear); to a float8 / float4 zero point type, x / scale + zero_point cast to
    it as graph.cast (`saturate`, absent: 1, for float8). scale and zero_point broadcast to x like a binary op's operands: a
    per-tensor pair is scalars, a per-channel one is shaped along its axis (e.g. [1, C, 1, 1];
    the importer reshapes ONNX's 1-D ones)."""

    name = "graph.quantize"
    TRAITS = (Elementwise(),)
    OPERANDS = ("x", "scale", "zero_point")
    ATTRS = {"saturate": Int(optional=True)}

    @classmethod
    def infer(cls, types, attrs, consts):
        _require_float(types[0])
        shape = _quant_params(types, "quantize")
        zp = types[2].element_type
        if not _quantized_type(zp):
            raise ShapeError(f"zero point must be one of {', '.join(map(str, (*QUANT_TYPES, *NARROW_QUANT_TYPES)))}, "
                             f"got {zp}")
        if attrs.get("saturate") is not None and zp not in SATURATING_TYPES:
            raise ShapeError(f"saturate applies to a float8 zero point, not {zp}")
        return [tensor(shape, zp)]


@graph_op
class DequantizeOp(GraphOp):
    """(x - zero_point) * scale in the scale's float type (ONNX DequantizeLinear); x is a
    quantized tensor or an int32 accumulator (zero point absent or zero). Parameters broadcast
    to x as for graph.quantize."""

    name = "graph.dequantize"
    TRAITS = (Elementwise(),)
    OPERANDS = ("x", "scale", "zero_point?")

    @classmethod
    def infer(cls, types, attrs, consts):
        x = types[0].element_type
        if not _quantized_type(x) and x != ACC_TYPE:
            raise ShapeError(f"dequantize takes a quantized or int32 tensor, got {x}")
        if len(types) > 2 and types[2].element_type != x:
            raise ShapeError(f"zero point type {types[2].element_type} differs from the input's {x}")
        return [tensor(_quant_params(types, "dequantize"), types[1].element_type)]


@graph_op
class RequantizeOp(GraphOp):
    """An int32 accumulator straight to int8, as the FIX pipe writes it:

        t = f32(acc) * scale                              (one f32 multiply)
        y = saturate(round_half_even(t) + zero_point)     (in the zero point's type)

    i.e. quantize(dequantize(acc, scale), 1.0, zero_point). scale is f32, per tensor or per
    channel (broadcasting to acc as graph.quantize's parameters do); zero_point is an i8 / ui8
    one-element tensor (per tensor). graph-fold-qdq makes it from dequantize -> quantize."""

    name = "graph.requantize"
    TRAITS = (Elementwise(),)
    OPERANDS = ("acc", "scale", "zero_point")

    @classmethod
    def infer(cls, types, attrs, consts):
        acc, scale, zp = (t.element_type for t in types)
        if acc != ACC_TYPE:
            raise ShapeError(f"requantize takes an {ACC_TYPE} accumulator, got {acc}")
        if scale != f32:
            raise ShapeError(f"requantize scale must be f32, got {scale}")
        if zp not in INT8_TYPES or math.prod(_shape(types[2])) != 1:
            raise ShapeError(f"requantize zero point must be a one-element i8 or ui8 tensor (per tensor), got {types[2]}")
        return [tensor(_quant_params(types, "requantize"), zp)]


@graph_op
class DropoutOp(GraphOp):
    """Dropout at inference: the identity (ratio and training_mode are ignored)."""

    name = "graph.dropout"
    TRAITS = (ViewLike(),)
    OPERANDS = ("x", "ratio?", "training_mode?")

    @classmethod
    def infer(cls, types, attrs, consts):
        if consts[2:] and consts[2] is not None and bool(np.asarray(consts[2]).reshape(-1)[0]):
            raise ShapeError("training_mode dropout is not supported at inference")
        return [types[0]]


# ---------------------------------------------------------------------------
# Convolution, matrix products, normalisation.
# ---------------------------------------------------------------------------

_CONV_ATTRS = {
    "pads": Ints(optional=True),
    "strides": Ints(optional=True),
    "dilations": Ints(optional=True),
    "group": Int(1),
}


def _check_bias(types, index, channels):
    if len(types) > index and _shape(types[index]) != (channels,):
        raise ShapeError(f"bias must have shape [{channels}], got {list(_shape(types[index]))}")


def is_integer_contraction(op: Operation) -> bool:
    """A conv / matmul / gemm on int8 operands (int32 result)."""
    return bool(op.has_trait(Contraction)) and any(
        isinstance(v.type, TensorType) and v.type.element_type in INT8_TYPES for v in op.operands[:2])


def _contraction_elt(types: Sequence[TensorType], what: str, attrs: dict[str, Any] | None = None) -> Attribute:
    """The result element type of a contraction: the operands' type, or int32 for int8 / uint8
    operands (the accumulator: the two products may mix int8 and uint8, a bias is int32)."""
    elts = [t.element_type for t in types[:2]]
    if not any(e in INT8_TYPES for e in elts):
        if attrs and attrs.get("offset_x") is not None:
            raise ShapeError("offset_x applies to int8 / uint8 inputs only")
        return _same_elt(types)
    if not all(e in INT8_TYPES for e in elts):
        raise ShapeError(f"an integer {what} takes int8 / uint8 operands, got {', '.join(map(str, elts))}")
    for t in types[2:]:
        if t.element_type != ACC_TYPE:
            raise ShapeError(f"an integer {what}'s bias must be {ACC_TYPE}, got {t.element_type}")
    return ACC_TYPE


@graph_op
class ConvOp(GraphOp):
    """N-d convolution (ONNX Conv): x [N, C, *S], w [M, C/group, *K], b [M].

    On int8 / uint8 x and w it is GE's quantized Conv2D: products accumulate exactly in int32,
    the bias is int32, the result int32, and the padding holds `offset_x` (the input's zero
    point, so that padding adds nothing once the zero point's share is taken off through the
    bias; docs/quantization.md)."""

    name = "graph.conv"
    TRAITS = (Contraction(),)
    OPERANDS = ("x", "w", "b?")
    ATTRS = {**_CONV_ATTRS, "offset_x": Int(optional=True)}

    @classmethod
    def infer(cls, types, attrs, consts):
        elt = _contraction_elt(types, "convolution", attrs)
        x, w = _shape(types[0]), _shape(types[1])
        if len(x) < 3 or len(w) != len(x):
            raise ShapeError(f"input {list(x)} and weight {list(w)} must both have rank >= 3 and equal rank")
        n = len(x) - 2
        g = attrs["group"]
        if g < 1 or x[1] % g or w[0] % g:
            raise ShapeError(f"group {g} must divide the {x[1]} input and {w[0]} output channels")
        if w[1] * g != x[1]:
            raise ShapeError(f"weight expects {w[1] * g} input channels (group {g}), input has {x[1]}")
        _check_bias(types, 2, w[0])
        pb, pe = _pads(attrs, n)
        spatial = pool_output_shape(
            x[2:], w[2:], pb, pe, _spatial(attrs, "strides", n, 1), _spatial(attrs, "dilations", n, 1), False
        )
        return [tensor((x[0], w[0], *spatial), elt)]


@graph_op
class ConvTransposeOp(GraphOp):
    """N-d transposed convolution: x [N, C, *S], w [C, M/group, *K], b [M]."""

    name = "graph.conv_transpose"
    TRAITS = (Contraction(),)
    OPERANDS = ("x", "w", "b?")
    ATTRS = {**_CONV_ATTRS, "output_padding": Ints(optional=True)}

    @classmethod
    def infer(cls, types, attrs, consts):
        elt = _same_elt(types)
        x, w = _shape(types[0]), _shape(types[1])
        if len(x) < 3 or len(w) != len(x):
            raise ShapeError(f"input {list(x)} and weight {list(w)} must both have rank >= 3 and equal rank")
        n = len(x) - 2
        g = attrs["group"]
        if w[0] != x[1] or x[1] % g:
            raise ShapeError(f"weight {list(w)} does not match {x[1]} input channels with group {g}")
        m = w[1] * g
        _check_bias(types, 2, m)
        pb, pe = _pads(attrs, n)
        s = _spatial(attrs, "strides", n, 1)
        d = _spatial(attrs, "dilations", n, 1)
        op = _spatial(attrs, "output_padding", n, 0)
        spatial = tuple(
            s[i] * (x[2 + i] - 1) + op[i] + (w[2 + i] - 1) * d[i] + 1 - pb[i] - pe[i] for i in range(n)
        )
        if any(v < 1 for v in spatial):
            raise ShapeError(f"output spatial shape {list(spatial)} is empty")
        return [tensor((x[0], m, *spatial), elt)]


def matmul_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    if not a or not b:
        raise ShapeError("matmul operands must have rank >= 1")
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        raise ShapeError(f"contraction dims differ: {list(a)} x {list(b)}")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


@graph_op
class MatMulOp(GraphOp):
    """Matrix product with numpy semantics (batched, broadcast, 1-D promotion); int8 / uint8
    operands give the exact int32 product."""

    name = "graph.matmul"
    TRAITS = (Contraction(),)
    OPERANDS = ("lhs", "rhs")

    @classmethod
    def infer(cls, types, attrs, consts):
        elt = _contraction_elt(types, "matmul")
        return [tensor(matmul_shape(_shape(types[0]), _shape(types[1])), elt)]


@graph_op
class GemmOp(GraphOp):
    """alpha * op(a) @ op(b) + beta * c, op = optional transpose (ONNX Gemm). On int8 / uint8
    a and b: the exact int32 product plus an int32 c, alpha = beta = 1."""

    name = "graph.gemm"
    TRAITS = (Contraction(),)
    OPERANDS = ("a", "b", "c?")
    ATTRS = {"alpha": Float(1.0), "beta": Float(1.0), "trans_a": Int(0), "trans_b": Int(0)}

    @classmethod
    def infer(cls, types, attrs, consts):
        elt = _contraction_elt(types, "gemm")
        if elt == ACC_TYPE and (attrs["alpha"] != 1.0 or attrs["beta"] != 1.0):
            raise ShapeError("an integer gemm takes alpha = beta = 1")
        a, b = _shape(types[0]), _shape(types[1])
        if len(a) != 2 or len(b) != 2:
            raise ShapeError(f"operands must be matrices, got {list(a)} and {list(b)}")
        m, k = (a[1], a[0]) if attrs["trans_a"] else a
        k2, n = (b[1], b[0]) if attrs["trans_b"] else b
        if k != k2:
            raise ShapeError(f"contraction dims differ: {k} and {k2}")
        if len(types) > 2 and broadcast_shapes(_shape(types[2]), (m, n)) != (m, n):
            raise ShapeError(f"c {list(_shape(types[2]))} does not broadcast to [{m}, {n}]")
        return [tensor((m, n), elt)]


@graph_op
class BatchNormOp(GraphOp):
    """Inference batch normalisation over axis 1."""

    name = "graph.batch_norm"
    TRAITS = (Elementwise(),)
    OPERANDS = ("x", "scale", "bias", "mean", "var")
    ATTRS = {"epsilon": Float(1e-5)}

    @classmethod
    def infer(cls, types, attrs, consts):
        elt = _same_elt(types)
        x = _shape(types[0])
        if len(x) < 2:
            raise ShapeError("input must have rank >= 2")
        for t in types[1:]:
            if _shape(t) != (x[1],):
                raise ShapeError(f"parameters must have shape [{x[1]}], got {list(_shape(t))}")
        return [tensor(x, elt)]


@graph_op
class InstanceNormOp(GraphOp):
    """Instance normalisation over the spatial dims."""

    name = "graph.instance_norm"
    TRAITS = (Reduction(),)

    def reduced_axes(self) -> tuple[int, ...]:
        return tuple(range(2, len(formats.logical_shape(self.inputs[0].type))))
    OPERANDS = ("x", "scale", "bias")
    ATTRS = {"epsilon": Float(1e-5)}

    @classmethod
    def infer(cls, types, attrs, consts):
        _same_elt(types)
        x = _shape(types[0])
        if len(x) < 3:
            raise ShapeError("input must have rank >= 3")
        for t in types[1:]:
            if _shape(t) != (x[1],):
                raise ShapeError(f"parameters must have shape [{x[1]}], got {list(_shape(t))}")
        return [types[0]]


class _RowNorm(GraphOp):
    """Normalises the dims from `axis` on (a row) with statistics of the row."""

    TRAITS = (Normalization(),)

    def reduced_axes(self) -> tuple[int, ...]:
        rank = len(formats.logical_shape(self.inputs[0].type))
        return tuple(range(self.attrs()["axis"] % rank, rank))


@graph_op
class LayerNormOp(_RowNorm):
    """Layer normalisation over the dims from `axis` on; scale/bias broadcast to them."""

    name = "graph.layer_norm"
    OPERANDS = ("x", "scale", "bias?")
    ATTRS = {"axis": Int(-1), "epsilon": Float(1e-5)}

    @classmethod
    def infer(cls, types, attrs, consts):
        _same_elt(types)
        x = _shape(types[0])
        axis = _norm_axis(attrs["axis"], len(x))
        norm = x[axis:]
        for t in types[1:]:
            if broadcast_shapes(_shape(t), norm) != norm:
                raise ShapeError(f"parameter {list(_shape(t))} does not broadcast to {list(norm)}")
        return [types[0]]


@graph_op
class RmsNormOp(_RowNorm):
    """RMS normalisation (ONNX RMSNormalization, opset 23) over the dims from `axis` on:
    x / sqrt(mean(x * x) + epsilon) * scale. The scale broadcasts to x (ONNX: unidirectional
    broadcasting, as onnxruntime takes it; usually it has the normalised shape). The
    statistics are computed in at least fp32 and the normalised x is cast back to x's type
    before the scale (ONNX stash_type 1, the only one the importer takes: a 16-bit x is
    normalised in fp32)."""

    name = "graph.rms_norm"
    OPERANDS = ("x", "scale")
    ATTRS = {"axis": Int(-1), "epsilon": Float(1e-5)}

    @classmethod
    def infer(cls, types, attrs, consts):
        _same_elt(types)
        _require_float(types[0])
        x, scale = _shape(types[0]), _shape(types[1])
        if not x:
            raise ShapeError("input must have rank >= 1")
        _norm_axis(attrs["axis"], len(x))
        if not _broadcasts_to(scale, x):
            raise ShapeError(f"scale {list(scale)} does not broadcast to the input shape {list(x)}")
        return [types[0]]


@graph_op
class RotaryEmbeddingOp(GraphOp):
    """Rotary position embedding (RoPE) of the last axis: y = x * cos + rotate(x) * sin, with
    rotate(x) = concat(-x2, x1) of the row's halves x1, x2 (`interleaved` 0: GPT-NeoX / HF
    LLaMA's rotate_half), or of its even / odd elements, y[2i] = x[2i] cos - x[2i+1] sin,
    y[2i+1] = x[2i+1] cos + x[2i] sin (`interleaved` 1: GPT-J / Meta LLaMA's complex form).
    cos and sin hold one angle per element of the row (each angle twice: the halves' or the
    pairs'), broadcast to x's shape - the form the PyTorch exporters write, so a recognised
    rotation computes exactly what it replaced. The ONNX RotaryEmbedding op (opset 23), whose
    caches hold each angle once, is imported onto it with the caches widened."""

    name = "graph.rotary_embedding"
    OPERANDS = ("x", "cos", "sin")
    ATTRS = {"interleaved": Int(0)}
    TRAITS = (RowMixing(),)

    def reduced_axes(self) -> tuple[int, ...]:
        return (len(formats.logical_shape(self.inputs[0].type)) - 1,)

    @classmethod
    def infer(cls, types, attrs, consts):
        _same_elt(types)
        _require_float(types[0])
        x = _shape(types[0])
        if not x or x[-1] % 2:
            raise ShapeError(f"the rotated axis must have an even size, got shape {list(x)}")
        if attrs["interleaved"] not in (0, 1):
            raise ShapeError(f"interleaved must be 0 or 1, got {attrs['interleaved']}")
        for what, t in zip(("cos", "sin"), types[1:]):
            if not _broadcasts_to(_shape(t), x):
                raise ShapeError(f"{what} {list(_shape(t))} does not broadcast to the input shape {list(x)}")
        return [types[0]]


@graph_op
class AttentionOp(GraphOp):
    """Scaled dot-product attention in one op: softmax(scale * q @ k^T + mask) @ v.

    q [B, H, S, D], k [B, Hkv, L, D], v [B, Hkv, L, Dv] -> [B, H, S, Dv]. Grouped-query
    attention when Hkv divides H: query head h reads kv head h // (H / Hkv) (never
    materialised). `mask` (optional) is additive, of q's element type, and broadcasts to
    [B, H, S, L] (a padding mask [B, 1, 1, L], a bias [1, 1, S, L]). `causal` = 1: query i
    sees keys j <= i + (L - S) (the offset of a decode step or a prefix), the others are
    -inf. 16-bit inputs: the scores and the softmax are computed in fp32 (the reference
    rounds once; the kernel rounds the probabilities to the input type before P @ v, as
    FlashAttention does)."""

    name = "graph.attention"
    OPERANDS = ("q", "k", "v", "mask?")
    ATTRS = {"scale": Float(), "causal": Int(0)}

    @classmethod
    def infer(cls, types, attrs, consts):
        elt = _same_elt(types, "q, k, v and mask")
        _require_float(types[0], "q")
        q, k, v = (_shape(t) for t in types[:3])
        for what, s in (("q", q), ("k", k), ("v", v)):
            if len(s) != 4:
                raise ShapeError(f"{what} must be [batch, heads, seq, head_dim], got {list(s)}")
        b, h, sq, d = q
        if k[0] != b or v[0] != b:
            raise ShapeError(f"batch sizes differ: q {b}, k {k[0]}, v {v[0]}")
        if k[1] != v[1]:
            raise ShapeError(f"k and v must have the same number of heads, got {k[1]} and {v[1]}")
        if k[1] < 1 or h % k[1]:
            raise ShapeError(f"the kv heads ({k[1]}) must divide the query heads ({h})")
        if k[3] != d:
            raise ShapeError(f"q and k head dims differ: {d} and {k[3]}")
        if k[2] != v[2]:
            raise ShapeError(f"k and v sequence lengths differ: {k[2]} and {v[2]}")
        if attrs["causal"] not in (0, 1):
            raise ShapeError(f"causal must be 0 or 1, got {attrs['causal']}")
        if attrs["causal"] and k[2] < sq:
            raise ShapeError(f"causal attention needs at least as many keys as queries, got {k[2]} < {sq}")
        if len(types) > 3:
            scores = (b, h, sq, k[2])
            m = _shape(types[3])
            try:
                fits = len(m) <= 4 and broadcast_shapes(m, scores) == scores
            except ShapeError:
                fits = False
            if not fits:
                raise ShapeError(f"mask {list(m)} does not broadcast to the scores {list(scores)}")
        return [tensor((b, h, sq, v[3]), elt)]


@graph_op
class CausalMaskOp(GraphOp):
    """The additive causal mask of queries at a run-time position: [1, 1, queries, keys] of
    `fill`'s type, 0 where key j <= query i + position + offset and `fill` (a large negative
    one-element constant) elsewhere. A static KV cache's prefill and decode steps attend over
    the whole cache with it (query i sits at row position + i); graph-recognize-attention
    builds one for each graph.attention whose mask is that comparison, and the attention
    kernel then computes the band itself and skips the key tiles no query sees."""

    name = "graph.causal_mask"
    TRAITS = (ValueGenerator(),)
    OPERANDS = ("position", "fill")
    ATTRS = {"queries": Int(), "keys": Int(), "offset": Int(0)}

    @classmethod
    def infer(cls, types, attrs, consts):
        if not isinstance(_elt(types[0]), IntegerType) or math.prod(_shape(types[0])) != 1:
            raise ShapeError(f"position must be one integer, got {types[0]}")
        _require_float(types[1], "fill")
        if math.prod(_shape(types[1])) != 1:
            raise ShapeError(f"fill must be one value, got {types[1]}")
        if attrs["queries"] < 1 or attrs["keys"] < 1:
            raise ShapeError(f"queries and keys must be positive, got {attrs['queries']} and {attrs['keys']}")
        return [tensor((1, 1, attrs["queries"], attrs["keys"]), _elt(types[1]))]


class _AxisOp(GraphOp):
    OPERANDS = ("x",)
    ATTRS = {"axis": Int(-1)}
    TRAITS = (RowSoftmax(),)

    def reduced_axes(self) -> tuple[int, ...]:
        return (self.attrs()["axis"] % len(formats.logical_shape(self.inputs[0].type)),)

    @classmethod
    def infer(cls, types, attrs, consts):
        _require_float(types[0])
        _norm_axis(attrs["axis"], len(_shape(types[0])))
        return [types[0]]


@graph_op
class SoftmaxOp(_AxisOp):
    """Softmax along one axis (ONNX opset-13 semantics)."""

    name = "graph.softmax"


@graph_op
class SafeSoftmaxOp(_AxisOp):
    """Softmax along one axis where a row that is -inf throughout gives zeros, not NaN
    (PyTorch's `_safe_softmax`: scaled_dot_product_attention's softmax, so that a fully
    masked query row attends to nothing)."""

    name = "graph.safe_softmax"


@graph_op
class LogSoftmaxOp(_AxisOp):
    """Log-softmax along one axis (ONNX opset-13 semantics)."""

    name = "graph.log_softmax"


@graph_op
class LrnOp(GraphOp):
    """Local response normalisation across channels."""

    name = "graph.lrn"
    OPERANDS = ("x",)
    ATTRS = {"size": Int(), "alpha": Float(1e-4), "beta": Float(0.75), "bias": Float(1.0)}

    @classmethod
    def infer(cls, types, attrs, consts):
        _require_float(types[0])
        if attrs["size"] < 1:
            raise ShapeError("size must be positive")
        return [types[0]]


# ---------------------------------------------------------------------------
# Pooling.
# ---------------------------------------------------------------------------


class _Pool(GraphOp):
    OPERANDS = ("x",)

    @classmethod
    def infer(cls, types, attrs, consts):
        x = _shape(types[0])
        if len(x) < 3:
            raise ShapeError(f"input must have rank >= 3, got {list(x)}")
        n = len(x) - 2
        k = attrs["kernel_shape"]
        if len(k) != n:
            raise ShapeError(f"'kernel_shape' needs {n} values, got {len(k)}")
        pb, pe = _pads(attrs, n)
        spatial = pool_output_shape(
            x[2:], k, pb, pe, _spatial(attrs, "strides", n, 1), _spatial(attrs, "dilations", n, 1), bool(attrs["ceil_mode"])
        )
        return [tensor((*x[:2], *spatial), _elt(types[0]))]


@graph_op
class MaxPoolOp(_Pool):
    """N-d max pooling."""

    name = "graph.max_pool"
    ATTRS = {
        "kernel_shape": Ints(),
        "pads": Ints(optional=True),
        "strides": Ints(optional=True),
        "dilations": Ints(optional=True),
        "ceil_mode": Int(0),
    }


@graph_op
class AvgPoolOp(_Pool):
    """N-d average pooling."""

    name = "graph.avg_pool"
    ATTRS = {
        "kernel_shape": Ints(),
        "pads": Ints(optional=True),
        "strides": Ints(optional=True),
        "dilations": Ints(optional=True),
        "ceil_mode": Int(0),
        "count_include_pad": Int(0),
    }


class _GlobalPool(GraphOp):
    OPERANDS = ("x",)
    TRAITS = (Reduction(),)

    def reduced_axes(self) -> tuple[int, ...]:
        return tuple(range(2, len(formats.logical_shape(self.inputs[0].type))))

    @classmethod
    def infer(cls, types, attrs, consts):
        x = _shape(types[0])
        if len(x) < 3:
            raise ShapeError(f"input must have rank >= 3, got {list(x)}")
        return [tensor((*x[:2], *([1] * (len(x) - 2))), _elt(types[0]))]


@graph_op
class GlobalAvgPoolOp(_GlobalPool):
    """Mean over all spatial dims."""

    name = "graph.global_avg_pool"


@graph_op
class GlobalMaxPoolOp(_GlobalPool):
    """Maximum over all spatial dims."""

    name = "graph.global_max_pool"


# ---------------------------------------------------------------------------
# Reductions.
# ---------------------------------------------------------------------------

ReduceSumOp = _reduce("reduce_sum", "Sum over axes.")
ReduceMeanOp = _reduce("reduce_mean", "Mean over axes.")
ReduceMaxOp = _reduce("reduce_max", "Maximum over axes.")
ReduceMinOp = _reduce("reduce_min", "Minimum over axes.")
ReduceProdOp = _reduce("reduce_prod", "Product over axes.")
ReduceL1Op = _reduce("reduce_l1", "Sum of absolute values over axes.")
ReduceL2Op = _reduce("reduce_l2", "Euclidean norm over axes.")
ReduceSumSquareOp = _reduce("reduce_sum_square", "Sum of squares over axes.")
ReduceLogSumOp = _reduce("reduce_log_sum", "log(sum) over axes.")
ReduceLogSumExpOp = _reduce("reduce_log_sum_exp", "log(sum(exp)) over axes.")


class _ArgReduce(GraphOp):
    OPERANDS = ("x",)
    ATTRS = {"axis": Int(0), "keepdims": Int(1), "select_last_index": Int(0)}
    TRAITS = (Reduction(),)

    def reduced_axes(self) -> tuple[int, ...]:
        return (self.attrs()["axis"] % len(formats.logical_shape(self.inputs[0].type)),)

    @classmethod
    def infer(cls, types, attrs, consts):
        x = _shape(types[0])
        a = _norm_axis(attrs["axis"], len(x))
        out = [1 if i == a else d for i, d in enumerate(x) if attrs["keepdims"] or i != a]
        return [tensor(out, i64)]


@graph_op
class ArgMaxOp(_ArgReduce):
    """Index of the maximum along an axis (i64)."""

    name = "graph.arg_max"


@graph_op
class ArgMinOp(_ArgReduce):
    """Index of the minimum along an axis (i64)."""

    name = "graph.arg_min"


# ---------------------------------------------------------------------------
# Data movement and shape manipulation.
# ---------------------------------------------------------------------------


@graph_op
class ConcatOp(GraphOp):
    """Concatenation along an axis."""

    name = "graph.concat"
    TRAITS = (DataMovement(),)
    VARIADIC = True
    ATTRS = {"axis": Int()}

    @classmethod
    def infer(cls, types, attrs, consts):
        elt = _same_elt(types)
        shapes = [_shape(t) for t in types]
        rank = len(shapes[0])
        if any(len(s) != rank for s in shapes):
            raise ShapeError("operands must have equal rank")
        a = _norm_axis(attrs["axis"], rank)
        for s in shapes[1:]:
            if s[:a] != shapes[0][:a] or s[a + 1 :] != shapes[0][a + 1 :]:
                raise ShapeError(f"shapes {list(shapes[0])} and {list(s)} differ outside axis {a}")
        out = list(shapes[0])
        out[a] = sum(s[a] for s in shapes)
        return [tensor(out, elt)]


@graph_op
class SplitOp(GraphOp):
    """Split along an axis into parts given by `split` (an operand) or equal parts."""

    name = "graph.split"
    TRAITS = (DataMovement(),)
    OPERANDS = ("x", "split?")
    ATTRS = {"axis": Int(0), "num_outputs": Int(optional=True)}
    NUM_RESULTS = None

    @classmethod
    def infer(cls, types, attrs, consts):
        x = _shape(types[0])
        a = _norm_axis(attrs["axis"], len(x))
        sizes = _const_ints(consts, 1)
        if len(types) > 1 and sizes is None:
            return None
        if sizes is None:
            n = attrs["num_outputs"]
            if n is None:
                return None  # equal parts, one per declared result: checked by verify_
            chunk = -(-x[a] // n)
            sizes = tuple(min(chunk, x[a] - i * chunk) for i in range(n))
        if sum(sizes) != x[a] or any(s < 0 for s in sizes):
            raise ShapeError(f"split sizes {list(sizes)} do not add up to dim {x[a]}")
        return [tensor([*x[:a], s, *x[a + 1 :]], _elt(types[0])) for s in sizes]

    def verify_(self) -> None:
        super().verify_()
        if len(self.inputs) == 1 and self.attrs()["num_outputs"] is None:
            x = _shape(self.inputs[0].type)
            a = _norm_axis(self.attrs()["axis"], len(x))
            n = len(self.results)
            if n == 0 or x[a] % n:
                raise VerifyException(f"'{self.name}' cannot split dim {x[a]} into {n} equal parts")
            want = tensor([*x[:a], x[a] // n, *x[a + 1 :]], _elt(self.inputs[0].type))
            if any(r.type != want for r in self.results):
                raise VerifyException(f"'{self.name}' results must all be {want}")


@graph_op
class SliceOp(GraphOp):
    """ONNX Slice: starts/ends/axes/steps are i64 operands (usually constants)."""

    name = "graph.slice"
    TRAITS = (DataMovement(),)
    OPERANDS = ("data", "starts", "ends", "axes?", "steps?")

    @classmethod
    def infer(cls, types, attrs, consts):
        x = list(_shape(types[0]))
        starts, ends = _const_ints(consts, 1), _const_ints(consts, 2)
        axes = _const_ints(consts, 3) if len(types) > 3 else tuple(range(len(starts or ())))
        steps = _const_ints(consts, 4) if len(types) > 4 else (1,) * len(starts or ())
        if starts is None or ends is None or axes is None or steps is None:
            return None
        if not len(starts) == len(ends) == len(axes) == len(steps):
            raise ShapeError("starts, ends, axes and steps must have equal length")
        for s, e, a, st in zip(starts, ends, axes, steps):
            a = _norm_axis(a, len(x))
            if st == 0:
                raise ShapeError("slice step must not be 0")
            x[a] = len(range(x[a])[slice(s, e, st)])
        return [tensor(x, _elt(types[0]))]


@graph_op
class KvCacheWriteOp(GraphOp):
    """A KV cache with `update` written at `position` along `axis` (GE's ref-data /
    scatter-update for incremental decoding): the result is `cache` whose rows
    position .. position + n - 1 of `axis` hold `update` (n rows), the rest unchanged.

    `position` is one integer (a 1-element tensor, usually a graph input: the decode step).
    When the cache is a function argument read only here and the result is returned, the
    lowering updates the argument in place (the output is marked `ascend.updates`): a step
    writes n rows, it never copies the cache. A position whose rows pass the cache's end is a
    run-time error."""

    name = "graph.kv_cache_write"
    TRAITS = (DataMovement(),)
    OPERANDS = ("cache", "update", "position")
    ATTRS = {"axis": Int(-2)}

    @classmethod
    def infer(cls, types, attrs, consts):
        cache, update, position = (_shape(t) for t in types)
        _same_elt(types[:2], "cache and update")
        if not isinstance(_elt(types[2]), IntegerType) or math.prod(position) != 1:
            raise ShapeError(f"position must be one integer, got {types[2]}")
        axis = _norm_axis(attrs["axis"], len(cache))
        if len(update) != len(cache) or any(u != c for i, (u, c) in enumerate(zip(update, cache)) if i != axis):
            raise ShapeError(f"update {list(update)} must match the cache {list(cache)} except along axis {axis}")
        if update[axis] > cache[axis]:
            raise ShapeError(f"update has {update[axis]} rows along axis {axis}, more than the cache's {cache[axis]}")
        pos = consts[2]
        if pos is not None and not 0 <= int(np.asarray(pos).reshape(-1)[0]) <= cache[axis] - update[axis]:
            raise ShapeError(f"position {int(np.asarray(pos).reshape(-1)[0])} with {update[axis]} row(s) passes "
                             f"the cache's maximum length {cache[axis]}")
        return [types[0]]


@graph_op
class GatherOp(GraphOp):
    """Gather slices of `data` along an axis at integer `indices`."""

    name = "graph.gather"
    TRAITS = (DataMovement(),)
    OPERANDS = ("data", "indices")
    ATTRS = {"axis": Int(0)}

    @classmethod
    def infer(cls, types, attrs, consts):
        x = _shape(types[0])
        a = _norm_axis(attrs["axis"], len(x))
        if is_float(types[1].element_type):
            raise ShapeError("indices must be integers")
        return [tensor((*x[:a], *_shape(types[1]), *x[a + 1 :]), _elt(types[0]))]


@graph_op
class GatherElementsOp(GraphOp):
    """Gather single elements along an axis; the result has the indices' shape."""

    name = "graph.gather_elements"
    TRAITS = (DataMovement(),)
    OPERANDS = ("data", "indices")
    ATTRS = {"axis": Int(0)}

    @classmethod
    def infer(cls, types, attrs, consts):
        x, idx = _shape(types[0]), _shape(types[1])
        _norm_axis(attrs["axis"], len(x))
        if len(idx) != len(x):
            raise ShapeError("indices must have the rank of data")
        return [tensor(idx, _elt(types[0]))]


# ---------------------------------------------------------------------------
# Indexing: scatter, gather_nd, top_k, einsum, reverse_sequence, tensor_scatter
# (frontend/onnx_indexing.py). No kernel template takes them: each lowers to the
# reference fallback kernel (docs/graph.md, "Indexing ops").
# ---------------------------------------------------------------------------

SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")


def _integer_indices(t: TensorType, what: str = "indices") -> None:
    if not isinstance(_elt(t), IntegerType):
        raise ShapeError(f"{what} must be integers, got {_elt(t)}")


def _scatter_reduction(attrs) -> None:
    if attrs["reduction"] not in SCATTER_REDUCTIONS:
        raise ShapeError(f"reduction '{attrs['reduction']}' is not one of {', '.join(SCATTER_REDUCTIONS)}")


@graph_op
class ScatterElementsOp(GraphOp):
    """`data` with `updates` written element by element at `indices` along `axis`
    (ONNX ScatterElements): out[..., indices[i..j..], ...] = updates[i..j..], or combined
    with the element there by `reduction` (add, mul, max, min). Negative indices count
    from the end; with reduction none a repeated index keeps the last update (the order
    onnx's reference writes them in)."""

    name = "graph.scatter_elements"
    TRAITS = (DataMovement(),)
    OPERANDS = ("data", "indices", "updates")
    ATTRS = {"axis": Int(0), "reduction": Str("none")}

    @classmethod
    def infer(cls, types, attrs, consts):
        x, idx, upd = (_shape(t) for t in types)
        _integer_indices(types[1])
        _same_elt([types[0], types[2]], "data and updates")
        _scatter_reduction(attrs)
        axis = _norm_axis(attrs["axis"], len(x))
        if len(idx) != len(x) or idx != upd:
            raise ShapeError(f"indices {list(idx)} and updates {list(upd)} must have one shape of the rank "
                             f"of data {list(x)}")
        if any(i > d for k, (i, d) in enumerate(zip(idx, x)) if k != axis):
            raise ShapeError(f"indices {list(idx)} pass data {list(x)} in a dim other than axis {axis}")
        return [types[0]]


@graph_op
class ScatterNdOp(GraphOp):
    """`data` with slices of `updates` written at the index tuples of `indices` (ONNX
    ScatterND): indices [..., k] address data's first k dims, updates is
    indices.shape[:-1] + data.shape[k:]; `reduction` combines as in scatter_elements
    (none: a repeated index keeps the last update)."""

    name = "graph.scatter_nd"
    TRAITS = (DataMovement(),)
    OPERANDS = ("data", "indices", "updates")
    ATTRS = {"reduction": Str("none")}

    @classmethod
    def infer(cls, types, attrs, consts):
        x, idx, upd = (_shape(t) for t in types)
        _integer_indices(types[1])
        _same_elt([types[0], types[2]], "data and updates")
        _scatter_reduction(attrs)
        if not idx or not 1 <= idx[-1] <= len(x):
            raise ShapeError(f"indices {list(idx)} must end in a dim of 1 to the rank of data {list(x)}")
        want = (*idx[:-1], *x[idx[-1]:])
        if upd != want:
            raise ShapeError(f"updates {list(upd)} must have shape {list(want)} (indices' leading dims, then "
                             f"data's dims after the {idx[-1]} indexed)")
        return [types[0]]


@graph_op
class GatherNdOp(GraphOp):
    """Slices of `data` at the index tuples of `indices` (ONNX GatherND): indices [..., k]
    address data's dims batch_dims .. batch_dims + k - 1 within each of the first
    `batch_dims` dims (which data and indices share); negative indices count from the end."""

    name = "graph.gather_nd"
    TRAITS = (DataMovement(),)
    OPERANDS = ("data", "indices")
    ATTRS = {"batch_dims": Int(0)}

    @classmethod
    def infer(cls, types, attrs, consts):
        x, idx = _shape(types[0]), _shape(types[1])
        _integer_indices(types[1])
        b = attrs["batch_dims"]
        if not 0 <= b < min(len(x), len(idx)):
            raise ShapeError(f"batch_dims {b} must be below the ranks of data {list(x)} and indices {list(idx)}")
        if x[:b] != idx[:b]:
            raise ShapeError(f"the {b} batch dim(s) of data {list(x)} and indices {list(idx)} differ")
        k = idx[-1]
        if not 1 <= k <= len(x) - b:
            raise ShapeError(f"indices {list(idx)} end in {k}; it must be 1 to data's rank minus batch_dims "
                             f"({len(x) - b})")
        return [tensor((*idx[:-1], *x[b + k:]), _elt(types[0]))]


@graph_op
class TopKOp(GraphOp):
    """The k largest (or smallest) elements along `axis` and their int64 indices (ONNX TopK
    with k a constant): sorted (largest first, or smallest first), equal values in index
    order - the lower index first."""

    name = "graph.top_k"
    OPERANDS = ("x",)
    ATTRS = {"k": Int(), "axis": Int(-1), "largest": Int(1), "sorted": Int(1)}
    NUM_RESULTS = None

    @classmethod
    def infer(cls, types, attrs, consts):
        x = list(_shape(types[0]))
        axis = _norm_axis(attrs["axis"], len(x))
        k = attrs["k"]
        if not 0 <= k <= x[axis]:
            raise ShapeError(f"k {k} must be 0 to the size {x[axis]} of axis {axis}")
        x[axis] = k
        return [tensor(x, _elt(types[0])), tensor(x, i64)]

    def verify_(self) -> None:
        super().verify_()
        if len(self.results) != 2:
            raise VerifyException(f"'{self.name}' expects 2 results (values, indices), got {len(self.results)}")


def einsum_terms(equation: str, ranks: Sequence[int]) -> tuple[list[str], str]:
    """The input terms and the output term of an einsum equation, each a string of labels
    with '.' standing for one broadcast (ellipsis) dim, expanded to the operands' ranks; an
    implicit output is the ellipsis dims, then the labels used once, in alphabetical order."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ShapeError(f"equation '{equation}' has {len(terms)} input term(s) for {len(ranks)} operand(s)")
    ell = 0
    out_terms = []
    for term, rank in zip(terms, ranks):
        letters = term.replace("...", "")
        if not all(c.isalpha() for c in letters) or term.count("...") > 1:
            raise ShapeError(f"equation '{equation}': term '{term}' must be letters and at most one '...'")
        n = rank - len(letters)
        if n < 0 or (n and "..." not in term):
            raise ShapeError(f"equation '{equation}': term '{term}' does not fit an operand of rank {rank}")
        ell = max(ell, n)
        out_terms.append(term.replace("...", "." * n))
    if arrow:
        letters = rhs.replace("...", "")
        if not all(c.isalpha() for c in letters) or len(set(letters)) != len(letters):
            raise ShapeError(f"equation '{equation}': output '{rhs}' must be distinct letters and '...'")
        if any(c not in lhs for c in letters):
            raise ShapeError(f"equation '{equation}': output label(s) not in the inputs")
        if ell and "..." not in rhs:
            raise ShapeError(f"equation '{equation}': the output must keep the '...' dims")
        out = rhs.replace("...", "." * ell)
    else:
        counts = {c: lhs.count(c) for c in lhs if c.isalpha()}
        out = "." * ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    return out_terms, out


@graph_op
class EinsumOp(GraphOp):
    """Einstein summation over the operands by `equation` (ONNX Einsum, numpy's einsum
    semantics: '...' broadcasts, a repeated label in one term takes the diagonal)."""

    name = "graph.einsum"
    VARIADIC = True
    ATTRS = {"equation": Str()}

    @classmethod
    def infer(cls, types, attrs, consts):
        shapes = [_shape(t) for t in types]
        elt = _same_elt(types)
        terms, out = einsum_terms(attrs["equation"], [len(s) for s in shapes])
        sizes: dict[str, int] = {}
        ell: list[int] = []
        for term, shape in zip(terms, shapes):
            n = term.count(".")
            ell_shape = shape[term.index("."):term.index(".") + n] if n else ()
            try:
                ell = list(broadcast_shapes(ell, ell_shape))
            except ShapeError:
                raise ShapeError(f"the '...' dims {list(ell)} and {list(ell_shape)} do not broadcast") from None
            for c, d in zip(term, shape):
                if c == ".":
                    continue
                if sizes.setdefault(c, d) != d:
                    if 1 in (sizes[c], d):  # numpy broadcasts a size-1 label dim
                        sizes[c] = max(sizes[c], d)
                    else:
                        raise ShapeError(f"label '{c}' has sizes {sizes[c]} and {d}")
        it = iter(ell)
        return [tensor([next(it) if c == "." else sizes[c] for c in out], elt)]


@graph_op
class ReverseSequenceOp(GraphOp):
    """Each batch entry b's first `sequence_lens[b]` elements along `time_axis` reversed,
    the rest kept (ONNX ReverseSequence)."""

    name = "graph.reverse_sequence"
    TRAITS = (DataMovement(),)
    OPERANDS = ("x", "sequence_lens")
    ATTRS = {"batch_axis": Int(1), "time_axis": Int(0)}

    @classmethod
    def infer(cls, types, attrs, consts):
        x, lens = _shape(types[0]), _shape(types[1])
        _integer_indices(types[1], "sequence_lens")
        if len(x) < 2:
            raise ShapeError(f"the input must have rank 2 or more, got {list(x)}")
        b, t = attrs["batch_axis"], attrs["time_axis"]
        if {b, t} not in ({0, 1},):
            raise ShapeError(f"batch_axis {b} and time_axis {t} must be 0 and 1 in some order")
        if lens != (x[b],):
            raise ShapeError(f"sequence_lens {list(lens)} must be [{x[b]}], one length per batch entry")
        return [types[0]]


@graph_op
class TensorScatterOp(GraphOp):
    """A cache with `update` written along `axis` at each batch entry's `write_indices`
    (0 if absent) (ONNX TensorScatter, opset 24): update differs from the cache only along
    `axis`; mode linear: rows must fit (past the end is a run-time error), circular: the
    row index wraps modulo the cache length."""

    name = "graph.tensor_scatter"
    TRAITS = (DataMovement(),)
    OPERANDS = ("cache", "update", "write_indices?")
    ATTRS = {"axis": Int(-2), "mode": Str("linear")}

    @classmethod
    def infer(cls, types, attrs, consts):
        cache, update = _shape(types[0]), _shape(types[1])
        _same_elt(types[:2], "cache and update")
        if attrs["mode"] not in ("linear", "circular"):
            raise ShapeError(f"mode '{attrs['mode']}' is not linear or circular")
        if len(cache) < 2:
            raise ShapeError(f"the cache must have rank 2 or more, got {list(cache)}")
        axis = _norm_axis(attrs["axis"], len(cache))
        if axis == 0:
            raise ShapeError("axis must not be the batch axis 0")
        if len(update) != len(cache) or any(u != c for i, (u, c) in enumerate(zip(update, cache)) if i != axis) \
                or update[axis] > cache[axis]:
            raise ShapeError(f"update {list(update)} must match the cache {list(cache)} except along axis {axis}, "
                             f"and have at most its rows")
        if len(types) > 2:
            _integer_indices(types[2], "write_indices")
            if _shape(types[2]) != (cache[0],):
                raise ShapeError(f"write_indices {list(_shape(types[2]))} must be [{cache[0]}], one per batch entry")
        return [types[0]]


def reshape_target(in_shape: Sequence[int], target: Sequence[int], allowzero: bool) -> tuple[int, ...]:
    out = [in_shape[i] if (d == 0 and not allowzero) else d for i, d in enumerate(target)]
    if out.count(-1) > 1:
        raise ShapeError(f"shape {list(target)} has more than one -1")
    total = math.prod(in_shape)
    if -1 in out:
        rest = math.prod(d for d in out if d != -1)
        if rest == 0 or total % rest:
            raise ShapeError(f"cannot reshape {list(in_shape)} to {list(target)}")
        out[out.index(-1)] = total // rest
    if math.prod(out) != total or any(d < 0 for d in out):
        raise ShapeError(f"cannot reshape {list(in_shape)} ({total} elements) to {list(target)}")
    return tuple(out)


@graph_op
class ReshapeOp(GraphOp):
    """Reshape to the shape given by an i64 operand (0 copies, -1 infers)."""

    name = "graph.reshape"
    TRAITS = (ViewLike(),)
    OPERANDS = ("data", "shape")
    ATTRS = {"allowzero": Int(0)}

    @classmethod
    def infer(cls, types, attrs, consts):
        target = _const_ints(consts, 1)
        if target is None:
            return None
        return [tensor(reshape_target(_shape(types[0]), target, bool(attrs["allowzero"])), _elt(types[0]))]

    def verify_(self) -> None:
        super().verify_()
        if not self.is_symbolic() and math.prod(_shape(self.inputs[0].type)) != math.prod(_shape(self.output.type)):
            raise VerifyException(f"'{self.name}' changes the element count")


@graph_op
class FlattenOp(GraphOp):
    """Flatten to 2-D at `axis`."""

    name = "graph.flatten"
    TRAITS = (ViewLike(),)
    OPERANDS = ("x",)
    ATTRS = {"axis": Int(1)}

    @classmethod
    def infer(cls, types, attrs, consts):
        x = _shape(types[0])
        a = attrs["axis"]
        if not -len(x) <= a <= len(x):
            raise ShapeError(f"axis {a} out of range for rank {len(x)}")
        a = a + len(x) if a < 0 else a
        return [tensor((math.prod(x[:a]), math.prod(x[a:])), _elt(types[0]))]


@graph_op
class SqueezeOp(GraphOp):
    """Remove size-1 dims (all of them if `axes` is absent)."""

    name = "graph.squeeze"
    TRAITS = (ViewLike(),)
    OPERANDS = ("x",)
    ATTRS = {"axes": Ints(optional=True)}

    @classmethod
    def infer(cls, types, attrs, consts):
        x = _shape(types[0])
        axes = attrs["axes"]
        if axes is None:
            drop = {i for i, d in enumerate(x) if d == 1}
        else:
            drop = {_norm_axis(a, len(x)) for a in axes}
            if any(x[i] != 1 for i in drop):
                raise ShapeError(f"cannot squeeze non-unit dims {sorted(drop)} of {list(x)}")
        return [tensor([d for i, d in enumerate(x) if i not in drop], _elt(types[0]))]


@graph_op
class UnsqueezeOp(GraphOp):
    """Insert size-1 dims at `axes` (positions in the result)."""

    name = "graph.unsqueeze"
    TRAITS = (ViewLike(),)
    OPERANDS = ("x",)
    ATTRS = {"axes": Ints()}

    @classmethod
    def infer(cls, types, attrs, consts):
        x = list(_shape(types[0]))
        rank = len(x) + len(attrs["axes"])
        axes = sorted(_norm_axis(a, rank) for a in attrs["axes"])
        if len(set(axes)) != len(axes):
            raise ShapeError(f"repeated axes {list(attrs['axes'])}")
        for a in axes:
            x.insert(a, 1)
        return [tensor(x, _elt(types[0]))]


@graph_op
class TransposeOp(GraphOp):
    """Permute dims (reverse them if `perm` is absent)."""

    name = "graph.transpose"
    TRAITS = (DataMovement(),)
    OPERANDS = ("x",)
    ATTRS = {"perm": Ints(optional=True)}

    @classmethod
    def infer(cls, types, attrs, consts):
        x = _shape(types[0])
        perm = attrs["perm"] or tuple(reversed(range(len(x))))
        if sorted(perm) != list(range(len(x))):
            raise ShapeError(f"perm {list(perm)} is not a permutation of {len(x)} dims")
        return [tensor([x[p] for p in perm], _elt(types[0]))]

    def permutation(self) -> tuple[int, ...]:
        """The order of the operand's dims (reversed when `perm` is absent), over its logical
        shape (a formatted tensor's origin shape)."""
        t = self.operands[0].type
        rank = len(formats.logical_shape(t) if formats.is_formatted(t) else t.get_shape())
        return tuple(int(p) for p in (self.attrs()["perm"] or reversed(range(rank))))

    def swaps_last_two(self) -> bool:
        """Only the last two dims trade places: a matmul reads such an operand transposed (a
        gemm's trans flags, the cube kernel's transposed load)."""
        perm = self.permutation()
        rank = len(perm)
        return rank >= 2 and perm == (*range(rank - 2), rank - 1, rank - 2)


@graph_op
class ExpandOp(GraphOp):
    """Broadcast to a shape given by an i64 operand (bidirectional)."""

    name = "graph.expand"
    TRAITS = (Elementwise(),)
    OPERANDS = ("x", "shape")

    @classmethod
    def infer(cls, types, attrs, consts):
        target = _const_ints(consts, 1)
        if target is None:
            return None
        return [tensor(broadcast_shapes(_shape(types[0]), target), _elt(types[0]))]


@graph_op
class TileOp(GraphOp):
    """Repeat the input along each dim."""

    name = "graph.tile"
    TRAITS = (DataMovement(),)
    OPERANDS = ("x", "repeats")

    @classmethod
    def infer(cls, types, attrs, consts):
        reps = _const_ints(consts, 1)
        if reps is None:
            return None
        x = _shape(types[0])
        if len(reps) != len(x):
            raise ShapeError(f"repeats {list(reps)} must have one value per dim of {list(x)}")
        return [tensor([d * r for d, r in zip(x, reps)], _elt(types[0]))]


@graph_op
class PadOp(GraphOp):
    """Pad with begin/end amounts per dim (operand `pads`), mode constant/reflect/edge/wrap."""

    name = "graph.pad"
    TRAITS = (DataMovement(),)
    OPERANDS = ("x", "pads", "constant_value?", "axes?")
    ATTRS = {"mode": Str("constant")}

    @classmethod
    def infer(cls, types, attrs, consts):
        if attrs["mode"] not in ("constant", "reflect", "edge", "wrap"):
            raise ShapeError(f"unknown pad mode '{attrs['mode']}'")
        pads = _const_ints(consts, 1)
        x = list(_shape(types[0]))
        axes = _const_ints(consts, 3) if len(types) > 3 else tuple(range(len(x)))
        if pads is None or axes is None:
            return None
        if len(pads) != 2 * len(axes):
            raise ShapeError(f"pads {list(pads)} need two values per axis")
        for i, a in enumerate(axes):
            a = _norm_axis(a, len(x))
            x[a] += pads[i] + pads[i + len(axes)]
            if x[a] < 0:
                raise ShapeError("negative padded size")
        return [tensor(x, _elt(types[0]))]


@graph_op
class ShapeOp(GraphOp):
    """The input's shape as an i64 vector (dims start..end)."""

    name = "graph.shape"
    TRAITS = (ShapeComputation(),)
    OPERANDS = ("x",)
    ATTRS = {"start": Int(0), "end": Int(optional=True)}

    @classmethod
    def infer(cls, types, attrs, consts):
        r = len(_shape(types[0]))
        n = len(range(r)[slice(attrs["start"], attrs["end"])])
        return [tensor([n], i64)]


@graph_op
class SizeOp(GraphOp):
    """The input's element count as an i64 scalar."""

    name = "graph.size"
    TRAITS = (ShapeComputation(),)
    OPERANDS = ("x",)

    @classmethod
    def infer(cls, types, attrs, consts):
        return [tensor([], i64)]


@graph_op
class ConstantOfShapeOp(GraphOp):
    """A tensor of the shape given by an i64 operand, filled with `value`."""

    name = "graph.constant_of_shape"
    TRAITS = (ValueGenerator(),)
    OPERANDS = ("shape",)
    ATTRS = {"value": Dense(optional=True)}

    @classmethod
    def infer(cls, types, attrs, consts):
        v = attrs["value"]
        elt = _elt_of_array(v) if v is not None else f32
        shape = _const_ints(consts, 0)
        return None if shape is None else [tensor(shape, elt)]


def _elt_of_array(a: np.ndarray) -> Attribute:
    return to_element_type(a.dtype)


@graph_op
class RangeOp(GraphOp):
    """start, start + delta, ... below limit (scalar operands)."""

    name = "graph.range"
    TRAITS = (ValueGenerator(),)
    OPERANDS = ("start", "limit", "delta")

    @classmethod
    def infer(cls, types, attrs, consts):
        elt = _same_elt(types)
        if any(c is None for c in consts):
            return None
        s, l, d = (np.asarray(c).reshape(-1)[0] for c in consts)
        if d == 0:
            raise ShapeError("delta must not be 0")
        return [tensor([max(int(np.ceil((l - s) / d)), 0)], elt)]


@graph_op
class DepthToSpaceOp(GraphOp):
    """Rearrange channel blocks into spatial blocks (DCR or CRD)."""

    name = "graph.depth_to_space"
    TRAITS = (DataMovement(),)
    OPERANDS = ("x",)
    ATTRS = {"blocksize": Int(), "mode": Str("DCR")}

    @classmethod
    def infer(cls, types, attrs, consts):
        n, c, h, w = _rank4(types[0])
        b = attrs["blocksize"]
        if b < 1 or c % (b * b):
            raise ShapeError(f"channels {c} not divisible by blocksize^2 = {b * b}")
        return [tensor((n, c // (b * b), h * b, w * b), _elt(types[0]))]


@graph_op
class SpaceToDepthOp(GraphOp):
    """Rearrange spatial blocks into channels."""

    name = "graph.space_to_depth"
    TRAITS = (DataMovement(),)
    OPERANDS = ("x",)
    ATTRS = {"blocksize": Int()}

    @classmethod
    def infer(cls, types, attrs, consts):
        n, c, h, w = _rank4(types[0])
        b = attrs["blocksize"]
        if b < 1 or h % b or w % b:
            raise ShapeError(f"spatial dims {h}x{w} not divisible by blocksize {b}")
        return [tensor((n, c * b * b, h // b, w // b), _elt(types[0]))]


# ---------------------------------------------------------------------------
# Resize (ONNX Resize / Upsample): separable interpolation, one axis at a time.
# ---------------------------------------------------------------------------


class F64s(AttrKind):
    """An array<f64: ...> (Resize's scales: a ratio of sizes is kept exactly)."""

    constr = DenseArrayBase
    describe = "an array<f64: ...>"

    def accepts(self, attr):
        return isinstance(attr, DenseArrayBase) and attr.elt_type == f64

    def to_attr(self, value):
        return DenseArrayBase.from_list(f64, [float(v) for v in value])

    def to_py(self, attr):
        return tuple(float(v) for v in attr.get_values())


RESIZE_MODES = ("nearest", "linear", "cubic")
RESIZE_COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                           "asymmetric", "tf_crop_and_resize")
RESIZE_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@graph_op
class ResizeOp(GraphOp):
    """Resize x to `sizes` (every axis), sampling source coordinates from `scales` by the
    coordinate transformation and interpolating by `mode` (ONNX Resize-19 semantics with the
    axes, keep_aspect_ratio_policy and the scales / sizes inputs resolved by the importer).
    Separable: each axis with a scale other than 1 is one weighted sum of a few taps
    (`resize_taps`)."""

    name = "graph.resize"
    OPERANDS = ("x",)
    ATTRS = {
        "sizes": Ints(),
        "scales": F64s(),
        "mode": Str("nearest"),
        "coordinate_transformation_mode": Str("half_pixel"),
        "nearest_mode": Str("round_prefer_floor"),
        "cubic_coeff_a": Float(-0.75),
        "exclude_outside": Int(0),
        "extrapolation_value": Float(0.0),
        "antialias": Int(0),
        "roi": F64s(optional=True),  # 2 * rank: starts then ends (tf_crop_and_resize)
    }

    @classmethod
    def infer(cls, types, attrs, consts):
        x = _shape(types[0])
        sizes, scales, roi = attrs["sizes"], attrs["scales"], attrs["roi"]
        if len(sizes) != len(x) or len(scales) != len(x):
            raise ShapeError(f"sizes {list(sizes)} and scales {list(scales)} must have the input's rank {len(x)}")
        if any(s < 0 for s in sizes) or any(not s > 0 for s in scales):
            raise ShapeError(f"sizes {list(sizes)} must be >= 0 and scales {list(scales)} > 0")
        if attrs["mode"] not in RESIZE_MODES:
            raise ShapeError(f"mode '{attrs['mode']}' is not one of {', '.join(RESIZE_MODES)}")
        ctm = attrs["coordinate_transformation_mode"]
        if ctm not in RESIZE_COORDINATE_MODES:
            raise ShapeError(f"coordinate_transformation_mode '{ctm}' is not one of {', '.join(RESIZE_COORDINATE_MODES)}")
        if attrs["nearest_mode"] not in RESIZE_NEAREST_MODES:
            raise ShapeError(f"nearest_mode '{attrs['nearest_mode']}' is not one of {', '.join(RESIZE_NEAREST_MODES)}")
        if attrs["antialias"] and attrs["mode"] == "nearest":
            raise ShapeError("antialias applies to linear and cubic modes, not nearest")
        if ctm == "tf_crop_and_resize" and (roi is None or len(roi) != 2 * len(x)):
            raise ShapeError(f"tf_crop_and_resize needs a roi of 2 x rank = {2 * len(x)} values")
        return [tensor(sizes, _elt(types[0]))]


def resize_taps(attrs: dict[str, Any], in_shape: Sequence[int], axis: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """How graph.resize computes one axis: output i = sum_k coeffs[i, k] * x[idx[i, k]] along
    it (idx clamped into the input), then `extrapolation_value` where mask[i] (mask None: no
    such place); None when the axis is left as it is."""
    n_in, n_out, scale = in_shape[axis], attrs["sizes"][axis], attrs["scales"][axis]
    ctm, roi, rank = attrs["coordinate_transformation_mode"], attrs["roi"], len(in_shape)
    start, end = (roi[axis], roi[axis + rank]) if roi is not None else (0.0, 1.0)
    if math.isclose(scale, 1.0) and n_out == n_in and (ctm != "tf_crop_and_resize" or (
            math.isclose(start, 0.0) and math.isclose(end, 1.0))):
        return None
    y = np.arange(n_out, dtype=np.float64)
    out_w = scale * n_in
    mask = None
    if ctm == "align_corners":
        x = np.zeros(n_out) if out_w == 1 else y * (n_in - 1) / (out_w - 1)
    elif ctm == "asymmetric":
        x = y / scale
    elif ctm == "tf_crop_and_resize":
        # roi is a float32 input: its difference and its start's scaling round in float32
        lo, hi = np.float32(start), np.float32(end)
        if out_w == 1:
            x = np.full(n_out, (hi - lo) * np.float32(n_in - 1) / np.float32(2), dtype=np.float64)
        else:
            x = y * (hi - lo) * (n_in - 1) / (out_w - 1)
        x = x + lo * np.float32(n_in - 1)
        mask = (x < 0) | (x > n_in - 1)
    elif ctm == "pytorch_half_pixel":
        x = np.full(n_out, -0.5) if out_w == 1 else (y + 0.5) / scale - 0.5
    elif ctm == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    else:  # half_pixel_symmetric
        x = n_in / 2 * (1 - n_out / out_w) + (y + 0.5) / scale - 0.5
    base = np.floor(x)
    # the fraction is in (0, 1]: an integer coordinate is the right-hand tap of the pixel left of it
    whole = x == base
    ratio = np.where(whole, 1.0, x - base)
    left = np.where(whole, base - 1, base)
    mode, a = attrs["mode"], attrs["cubic_coeff_a"]
    if mode == "nearest":
        right = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5,
                 "floor": whole, "ceil": np.ones(n_out, bool)}[attrs["nearest_mode"]] | whole
        first, coeffs = 0, np.stack([~right, right], axis=1).astype(np.float64)
    elif attrs["antialias"]:
        # a kernel stretched by 1 / scale when downsampling, normalised to sum 1
        s = min(scale, 1.0)
        first = int(np.floor(-(1 if mode == "linear" else 2) / s) + 1)
        t = np.abs((np.arange(first, 2 - first)[None, :] - ratio[:, None]) * s)
        coeffs = np.clip(1 - t, 0, 1) if mode == "linear" else _cubic_kernel(t, a)
        coeffs = coeffs / coeffs.sum(axis=1, keepdims=True)
    elif mode == "linear":
        first, coeffs = 0, np.stack([1 - ratio, ratio], axis=1)
    else:
        r1, q = ratio + 1, 1 - ratio
        first, coeffs = -1, np.stack([((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a,
                                      ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1,
                                      ((a + 2) * q - (a + 3)) * q * q + 1,
                                      ((a * (q + 1) - 5 * a) * (q + 1) + 8 * a) * (q + 1) - 4 * a], axis=1)
    idx = left[:, None].astype(np.int64) + first + np.arange(coeffs.shape[1])[None, :]
    if attrs["exclude_outside"]:
        coeffs = np.where((idx < 0) | (idx >= n_in), 0.0, coeffs)
        total = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    return np.clip(idx, 0, n_in - 1), coeffs, mask


@graph_op
class GridSampleOp(GraphOp):
    """Sample x [N, C, D1..Dr] at the normalised coordinates of grid [N, O1..Or, r] (x first:
    the last spatial dim), interpolating by `mode` and reading outside by `padding_mode`
    (ONNX GridSample-20)."""

    name = "graph.grid_sample"
    OPERANDS = ("x", "grid")
    ATTRS = {"mode": Str("linear"), "padding_mode": Str("zeros"), "align_corners": Int(0)}

    @classmethod
    def infer(cls, types, attrs, consts):
        x, grid = _shape(types[0]), _shape(types[1])
        _require_float(types[1], "grid")
        if len(x) < 3 or len(grid) != len(x) or grid[0] != x[0] or grid[-1] != len(x) - 2:
            raise ShapeError(f"grid {list(grid)} must be [N, spatial.., {len(x) - 2}] for x {list(x)}")
        if attrs["mode"] not in RESIZE_MODES:
            raise ShapeError(f"mode '{attrs['mode']}' is not one of {', '.join(RESIZE_MODES)}")
        if attrs["padding_mode"] not in ("zeros", "border", "reflection"):
            raise ShapeError(f"padding_mode '{attrs['padding_mode']}' is not zeros, border or reflection")
        return [tensor((x[0], x[1], *grid[1:-1]), _elt(types[0]))]


def unpool_shape(x: Sequence[int], attrs: dict[str, Any]) -> tuple[int, ...]:
    """MaxUnpool's inferred output: each spatial dim (in - 1) * stride - pads + kernel."""
    k = attrs["kernel_shape"]
    n = len(k)
    strides = attrs["strides"] or (1,) * n
    pads = attrs["pads"] or (0,) * (2 * n)
    return (x[0], x[1], *((x[2 + i] - 1) * strides[i] - pads[i] - pads[n + i] + k[i] for i in range(n)))


@graph_op
class MaxUnpoolOp(GraphOp):
    """Scatter x to the flat positions `indices` (MaxPool's) of a zero tensor of the unpooled
    shape, placed at the origin of `output_shape` when that is given (onnx's reference)."""

    name = "graph.max_unpool"
    OPERANDS = ("x", "indices")
    ATTRS = {"kernel_shape": Ints(), "strides": Ints(optional=True), "pads": Ints(optional=True),
             "output_shape": Ints(optional=True)}

    @classmethod
    def infer(cls, types, attrs, consts):
        x, idx = _shape(types[0]), _shape(types[1])
        if idx != x or is_float(types[1].element_type):
            raise ShapeError(f"indices must be integers of x's shape {list(x)}")
        if len(x) != len(attrs["kernel_shape"]) + 2:
            raise ShapeError(f"kernel_shape {list(attrs['kernel_shape'])} must have a size per spatial dim of {list(x)}")
        inferred = unpool_shape(x, attrs)
        out = attrs["output_shape"] or inferred
        if len(out) != len(x) or any(o < i for o, i in zip(out, inferred)):
            raise ShapeError(f"output_shape {list(out)} must hold the unpooled shape {list(inferred)}")
        return [tensor(out, _elt(types[0]))]


@graph_op
class Col2ImOp(GraphOp):
    """Sum the columns x [N, C * prod(block_shape), L] back into an image [N, C, image_shape..]
    (each column a block, blocks in row-major order; overlaps add up)."""

    name = "graph.col2im"
    OPERANDS = ("x",)
    ATTRS = {"image_shape": Ints(), "block_shape": Ints(), "strides": Ints(optional=True),
             "pads": Ints(optional=True), "dilations": Ints(optional=True)}

    @classmethod
    def infer(cls, types, attrs, consts):
        x = _shape(types[0])
        image, block = attrs["image_shape"], attrs["block_shape"]
        n = len(image)
        if len(x) != 3 or len(block) != n or n == 0:
            raise ShapeError(f"x {list(x)} must be [N, C * prod(block), L] with block_shape of image_shape's rank")
        k = math.prod(block)
        if x[1] % k:
            raise ShapeError(f"{x[1]} rows are not a multiple of the block's {k} elements")
        if x[2] != math.prod(col2im_blocks(attrs)):
            raise ShapeError(f"{x[2]} columns, but the image holds {list(col2im_blocks(attrs))} blocks")
        return [tensor((x[0], x[1] // k, *image), _elt(types[0]))]


def col2im_blocks(attrs: dict[str, Any]) -> tuple[int, ...]:
    image, block = attrs["image_shape"], attrs["block_shape"]
    n = len(image)
    strides = attrs["strides"] or (1,) * n
    dil = attrs["dilations"] or (1,) * n
    pads = attrs["pads"] or (0,) * (2 * n)
    return tuple((image[i] + pads[i] + pads[n + i] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(n))


@graph_op
class RoiAlignOp(GraphOp):
    """Average (or max) of bilinear samples over each bin of each region of interest: x
    [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R] -> [R, C, out_h, out_w]
    (ONNX RoiAlign-16)."""

    name = "graph.roi_align"
    OPERANDS = ("x", "rois", "batch_indices")
    ATTRS = {"mode": Str("avg"), "output_height": Int(1), "output_width": Int(1), "sampling_ratio": Int(0),
             "spatial_scale": Float(1.0), "coordinate_transformation_mode": Str("half_pixel")}

    @classmethod
    def infer(cls, types, attrs, consts):
        n, c, h, w = _rank4(types[0])
        rois, idx = _shape(types[1]), _shape(types[2])
        if len(rois) != 2 or rois[1] != 4 or idx != (rois[0],) or is_float(types[2].element_type):
            raise ShapeError(f"rois {list(rois)} must be [R, 4] and batch_indices {list(idx)} R integers")
        if attrs["mode"] not in ("avg", "max"):
            raise ShapeError(f"mode '{attrs['mode']}' is not avg or max")
        if attrs["coordinate_transformation_mode"] not in ("half_pixel", "output_half_pixel"):
            raise ShapeError("coordinate_transformation_mode must be half_pixel or output_half_pixel")
        if attrs["output_height"] < 1 or attrs["output_width"] < 1 or attrs["sampling_ratio"] < 0:
            raise ShapeError("output_height / output_width must be >= 1 and sampling_ratio >= 0")
        return [tensor((rois[0], c, attrs["output_height"], attrs["output_width"]), _elt(types[0]))]


@graph_op
class DeformConvOp(GraphOp):
    """2-d convolution whose every tap reads x at its own offset position (bilinear, zero
    outside), times a mask (ONNX DeformConv-19): offset [N, offset_group * kH * kW * 2, oH, oW]
    ((dy, dx) per tap), mask [N, offset_group * kH * kW, oH, oW]."""

    name = "graph.deform_conv"
    OPERANDS = ("x", "w", "offset", "b?", "mask?")
    ATTRS = {"group": Int(1), "offset_group": Int(1), "pads": Ints(optional=True), "strides": Ints(optional=True),
             "dilations": Ints(optional=True)}

    @classmethod
    def infer(cls, types, attrs, consts):
        _same_elt(types)
        n, c, h, w = _rank4(types[0])
        oc, cg, kh, kw = _rank4(types[1])
        group, og = attrs["group"], attrs["offset_group"]
        if group < 1 or og < 1 or c != cg * group or oc % group or c % og:
            raise ShapeError(f"x's {c} channels, the weight {[oc, cg, kh, kw]}, group {group} and offset_group {og} disagree")
        pads = attrs["pads"] or (0, 0, 0, 0)
        sh, sw = attrs["strides"] or (1, 1)
        dh, dw = attrs["dilations"] or (1, 1)
        oh = (h + pads[0] + pads[2] - (kh - 1) * dh - 1) // sh + 1
        ow = (w + pads[1] + pads[3] - (kw - 1) * dw - 1) // sw + 1
        if _shape(types[2]) != (n, og * kh * kw * 2, oh, ow):
            raise ShapeError(f"offset {list(_shape(types[2]))} must be {[n, og * kh * kw * 2, oh, ow]}")
        if len(types) > 3 and _shape(types[3]) != (oc,):
            raise ShapeError(f"bias {list(_shape(types[3]))} must be [{oc}]")
        if len(types) > 4 and _shape(types[4]) != (n, og * kh * kw, oh, ow):
            raise ShapeError(f"mask {list(_shape(types[4]))} must be {[n, og * kh * kw, oh, ow]}")
        return [tensor((n, oc, oh, ow), _elt(types[0]))]


def _cubic_kernel(t: np.ndarray, a: float) -> np.ndarray:
    near = (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
    far = a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _rank4(t: TensorType) -> tuple[int, int, int, int]:
    s = _shape(t)
    if len(s) != 4:
        raise ShapeError(f"input must have rank 4, got {list(s)}")
    return s  # type: ignore[return-value]


# ---------------------------------------------------------------------------
# Constants: the weights of the model.
# ---------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A constant tensor. The value is a dense attribute whose bytes are the
    array (a numpy view, never a list); large ones print as dense_resource blobs.

        %w = graph.constant dense<...> : tensor<64x3x7x7xf32>
    """

    name = "graph.constant"
    value = prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    output = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())

    @staticmethod
    def from_array(array: np.ndarray) -> ConstantOp:
        from geir.ir.types import dense_from_array

        attr = dense_from_array(array)
        return ConstantOp.create(properties={"value": attr}, result_types=[attr.get_type()])

    @staticmethod
    def placeholder(name: str, type_: TensorType) -> ConstantOp:
        """A shape-only weight `name` of `type_`: a splat of 0 marked `geir.placeholder`
        (the name keeps CSE from merging two of them); it holds no bytes."""
        attr = DenseIntOrFPElementsAttr(type_, BytesAttr(np.zeros(1, to_dtype(type_.element_type)).tobytes()))
        return ConstantOp.create(properties={"value": attr}, result_types=[type_],
                                 attributes={attr_names.PLACEHOLDER: StringAttr(name)})

    @property
    def placeholder_name(self) -> str | None:
        """The weight's name if it is shape-only, else None."""
        name = self.attributes.get(attr_names.PLACEHOLDER)
        return name.data if isinstance(name, StringAttr) else None

    def array_or_none(self) -> np.ndarray | None:
        """The value as a read-only array (a shape-only weight's: ir/shape_only.py's
        ShapeOnly zeros), None for a resource without data."""
        if isinstance(self.value, DenseIntOrFPElementsAttr):
            name = self.placeholder_name
            if name is not None:
                t = self.value.get_type()
                return ShapeOnly.of(t.get_shape(), to_dtype(t.element_type), [name])
            return array_from_dense(self.value)
        return None

    def array(self) -> np.ndarray:
        a = self.array_or_none()
        if a is None:
            raise ValueError(
                f"constant {self.value.resource_handle.data!r} has no data (an elided or missing resource blob)"
            )
        return a

    def verify_(self) -> None:
        if self.value.get_type() != self.output.type:
            raise VerifyException(
                f"'graph.constant' value type {self.value.get_type()} differs from result type {self.output.type}"
            )

    def print(self, printer: Printer) -> None:
        from geir.ir.text import print_constant_op

        print_constant_op(printer, self, self.value, self.output)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        # The value carries its type: `dense<...> : tensor<...>`.
        attributes = parser.parse_optional_attr_dict()
        start = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr):
            parser.raise_error("graph.constant expects a dense or dense_resource value", start, start + 1)
        return cls.create(properties={"value": value}, result_types=[value.get_type()], attributes=attributes)


# ---------------------------------------------------------------------------
# Layout: graph.trans_data and the format rules of every op (dialects/formats.py).
# ---------------------------------------------------------------------------


@graph_op
class TransDataOp(GraphOp):
    """Convert a tensor between formats (GE's TransData): ND, NCHW, NHWC, NC1HWC0,
    FRACTAL_Z, FRACTAL_NZ. The logical tensor is unchanged; the data is reordered, blocked
    channels are zero-padded, and the padding is dropped on the way back.

        %y = graph.trans_data %x {src_format = "NCHW", dst_format = "NC1HWC0"}
             : (tensor<1x3x8x8xf32>) -> tensor<1x1x8x8x16xf32, #graph.format<NC1HWC0, NCHW, [1, 3, 8, 8]>>
    """

    name = "graph.trans_data"
    OPERANDS = ("x",)
    ATTRS = {"src_format": Str(), "dst_format": Str()}
    LAYOUT = "trans_data"

    @classmethod
    def infer(cls, types, attrs, consts):
        for key in ("src_format", "dst_format"):
            if attrs[key] not in formats.FORMATS:
                raise ShapeError(f"{key} '{attrs[key]}' is not a format; formats: {', '.join(formats.FORMATS)}")
        return [types[0]]

    def verify_(self) -> None:
        super().verify_()
        a = self.attrs()
        error = formats.trans_data_error(self.x.type, a["src_format"], a["dst_format"])
        if error is not None:
            raise VerifyException(f"'{self.name}' {error}")
        want = formats.trans_data_type(self.x.type, a["src_format"], a["dst_format"])
        if self.output.type != want:
            raise VerifyException(f"'{self.name}' result must be {want}, got {self.output.type}")

    def kernel_kwargs(self) -> dict[str, Any]:
        a = self.attrs()
        t = self.x.type
        return {**a, "origin_format": formats.trans_origin(t, a["src_format"], a["dst_format"]),
                "shape": formats.logical_shape(t)}


def _set_layout(kind: str, *classes: type[GraphOp]) -> None:
    for cls in classes:
        cls.LAYOUT = kind


# Elementwise ops run on storage arrays; pooling, batch_norm and lrn work per channel over
# H and W, so they keep NC1HWC0; cube ops take the fractal formats of their operands.
_set_layout(
    "elementwise", _Unary, _Binary, _Variadic, LogicalNotOp, PowOp, PReluOp, WhereOp, ClipOp,
    CastOp, DropoutOp,
)
_set_layout("propagate", MaxPoolOp, AvgPoolOp, GlobalAvgPoolOp, GlobalMaxPoolOp, BatchNormOp, LrnOp)
_set_layout("concat", ConcatOp)
# per logical element, in the accumulator's format: NC1HWC0 i32 (C0 = 16) to NC1HWC0 int8 (C0 =
# 32), as an int8 conv's FIX pipe writes it (dialects/formats.py check_op)
_set_layout("requantize", RequantizeOp)
_set_layout("conv", ConvOp)
_set_layout("matmul", MatMulOp)
_set_layout("gemm", GemmOp)

# Op families, for passes that classify ops (fusion, layout, lowering).
ELEMENTWISE_CLASSES: tuple[type[GraphOp], ...] = (_Unary, _Binary, _Variadic)
REDUCE_CLASSES: tuple[type[GraphOp], ...] = (_Reduce,)


# ---------------------------------------------------------------------------
# Fusion: the unit that becomes one kernel.
# ---------------------------------------------------------------------------


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates a graph.fusion body with the fused kernel's results."""

    name = "graph.yield"
    values = var_operand_def(TensorType)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(FusionOp), Pure()))

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[list(values)])

    def print(self, printer: Printer) -> None:
        if self.values:
            printer.print_string(" ")
            printer.print_list(self.values, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list([v.type for v in self.values], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> YieldOp:
        operands = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand
        ) or []
        types = []
        if operands:
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        return cls(*parser.resolve_operands(operands, types, parser.pos))


FUSION_KINDS = ("cube", "vector", "cube+vector", "data")
"""cube: only cube work (conv/matmul); vector: elementwise, reductions, pooling;
cube+vector: a cube op with vector epilogue/prologue; data: pure data movement."""


@irdl_op_definition
class FusionOp(IRDLOperation):
    """A group of graph ops that becomes one kernel.

    Isolated from above: the body's block arguments are the explicit operands,
    graph.yield gives the results. The location is a fused location listing
    every original node.

        %r = graph.fusion "cube+vector" (%x, %w) : (tensor<..>, tensor<..>) -> tensor<..> {
        ^bb0(%a: tensor<..>, %b: tensor<..>):
          %c = graph.conv %a, %b {...} : ...
          %y = graph.relu %c : ...
          graph.yield %y : tensor<..>
        }
    """

    name = "graph.fusion"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    kind = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), Pure())

    def yield_op(self) -> YieldOp:
        last = self.body.block.last_op
        assert isinstance(last, YieldOp)
        return last

    def inner_ops(self) -> list[Operation]:
        return [op for op in self.body.block.ops if not isinstance(op, YieldOp)]

    def verify_(self) -> None:
        if self.kind.data not in FUSION_KINDS:
            raise VerifyException(f"'graph.fusion' kind must be one of {', '.join(FUSION_KINDS)}, got '{self.kind.data}'")
        block = self.body.block
        if [a.type for a in block.args] != [v.type for v in self.inputs]:
            raise VerifyException("'graph.fusion' block arguments must match its operand types")
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("'graph.fusion' body must end with graph.yield")
        if [v.type for v in last.values] != [r.type for r in self.outputs]:
            raise VerifyException("'graph.fusion' yielded types must match its result types")

    def print(self, printer: Printer) -> None:
        printer.print_string(f' "{self.kind.data}" ')
        printer.print_operands(self.inputs)
        extra = {k: v for k, v in self.properties.items() if k != "kind"}
        if extra or self.attributes:
            printer.print_op_attributes({**extra, **self.attributes}, print_keyword=True)
        printer.print_string(" : ")
        printer.print_function_type([v.type for v in self.inputs], [r.type for r in self.outputs])
        printer.print_string(" ")
        printer.print_region(self.body)

    @classmethod
    def parse(cls, parser: Parser) -> FusionOp:
        kind = parser.parse_str_literal()
        pos = parser.pos
        operands = parser.parse_op_args_list()
        attributes = {}
        if parser.parse_optional_keyword("attributes"):
            attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ftype = parser.parse_function_type()
        values = parser.resolve_operands(operands, ftype.inputs.data, pos)
        body = parser.parse_region()
        return cls.create(
            operands=values,
            result_types=list(ftype.outputs.data),
            properties={"kind": StringAttr(kind)},
            attributes=attributes,
            regions=[body],
        )


# ---------------------------------------------------------------------------
# Collectives between device ranks (tensor parallelism, docs/multi-device.md).
# ---------------------------------------------------------------------------

COLLECTIVE_REDUCTIONS = ("sum", "max", "min", "prod")


class _CollectiveOp(GraphOp):
    """One tensor of this rank exchanged with the other `ranks` of its group (HCCL's
    semantics, reference/collectives.py). Not pure: the result depends on the other ranks,
    so no pass folds, merges or erases one, and the op runs only in a multi-device run."""

    OPERANDS = ("x",)
    TRAITS = (Collective(),)
    PURE = False

    @classmethod
    def _group(cls, attrs) -> int:
        ranks = attrs["ranks"]
        if not ranks or len(set(ranks)) != len(ranks) or min(ranks) < 0:
            raise ShapeError(f"ranks must be distinct ranks >= 0, got {list(ranks)}")
        if "reduction" in attrs and attrs["reduction"] not in COLLECTIVE_REDUCTIONS:
            raise ShapeError(f"reduction must be one of {', '.join(COLLECTIVE_REDUCTIONS)}, "
                             f"got '{attrs['reduction']}'")
        return len(ranks)


@graph_op
class AllReduceOp(_CollectiveOp):
    """x reduced elementwise over the group's ranks; every rank gets the result."""

    name = "graph.all_reduce"
    ATTRS = {"ranks": Ints(), "reduction": Str("sum")}

    @classmethod
    def infer(cls, types, attrs, consts):
        cls._group(attrs)
        return [types[0]]


@graph_op
class AllGatherOp(_CollectiveOp):
    """The ranks' x concatenated along `axis` in the group's order, on every rank."""

    name = "graph.all_gather"
    ATTRS = {"ranks": Ints(), "axis": Int(0)}

    @classmethod
    def infer(cls, types, attrs, consts):
        p = cls._group(attrs)
        shape = list(_shape(types[0]))
        axis = _norm_axis(attrs["axis"], len(shape))
        shape[axis] *= p
        return [TensorType(_elt(types[0]), shape)]


@graph_op
class ReduceScatterOp(_CollectiveOp):
    """The ranks' x reduced, then split along `axis`: the group's i-th rank keeps part i."""

    name = "graph.reduce_scatter"
    ATTRS = {"ranks": Ints(), "axis": Int(0), "reduction": Str("sum")}

    @classmethod
    def infer(cls, types, attrs, consts):
        p = cls._group(attrs)
        shape = list(_shape(types[0]))
        axis = _norm_axis(attrs["axis"], len(shape))
        if shape[axis] % p:
            raise ShapeError(f"dim {axis} ({shape[axis]}) does not divide among {p} ranks")
        shape[axis] //= p
        return [TensorType(_elt(types[0]), shape)]


@graph_op
class AllToAllOp(_CollectiveOp):
    """x split along `split_axis` into one part per rank, part i sent to the group's i-th
    rank; what each rank receives is concatenated along `concat_axis` in the group's order."""

    name = "graph.all_to_all"
    ATTRS = {"ranks": Ints(), "split_axis": Int(0), "concat_axis": Int(0)}

    @classmethod
    def infer(cls, types, attrs, consts):
        p = cls._group(attrs)
        shape = list(_shape(types[0]))
        split, concat = (_norm_axis(attrs[k], len(shape)) for k in ("split_axis", "concat_axis"))
        if shape[split] % p:
            raise ShapeError(f"dim {split} ({shape[split]}) does not divide among {p} ranks")
        shape[split] //= p
        shape[concat] *= p
        return [TensorType(_elt(types[0]), shape)]


@graph_op
class SendOp(GraphOp):
    """x sent to device rank `peer` (a pipeline stage's activations to the next stage). Not
    pure, no result; the k-th send to a peer meets the peer's k-th recv from this rank."""

    name = "graph.send"
    OPERANDS = ("x",)
    ATTRS = {"peer": Int()}
    NUM_RESULTS = 0
    TRAITS = (Collective(),)
    PURE = False

    @classmethod
    def infer(cls, types, attrs, consts):
        _check_peer(attrs)
        return []


@graph_op
class RecvOp(GraphOp):
    """The tensor device rank `peer` sends (its type is the result's: what the matching send
    sends must have it)."""

    name = "graph.recv"
    OPERANDS = ()
    ATTRS = {"peer": Int()}
    TRAITS = (Collective(),)
    PURE = False

    @classmethod
    def infer(cls, types, attrs, consts):
        _check_peer(attrs)
        return None  # the result type is declared: nothing to infer it from


def _check_peer(attrs) -> None:
    if attrs["peer"] < 0:
        raise ShapeError(f"peer must be a rank >= 0, got {attrs['peer']}")


# ---------------------------------------------------------------------------
# The dialect.
# ---------------------------------------------------------------------------


def _all_ops() -> list[type[Operation]]:
    ops: list[type[Operation]] = []
    for value in list(globals().values()):
        if (
            isinstance(value, type)
            and issubclass(value, IRDLOperation)
            and getattr(value, "name", "").startswith("graph.")
            and value.__module__ == __name__
            and value not in ops
        ):
            ops.append(value)
    return ops


OPS: dict[str, type[Operation]] = {}

Graph = Dialect("graph", [], [])


def _finish() -> None:
    global Graph
    ops = _all_ops()
    OPS.update({op.name: op for op in ops})
    Graph = Dialect("graph", ops, [formats.FormatAttr])


_finish()


def node_output(value: OpResult) -> tuple[int, list[str]]:
    """The ONNX node output `value` holds, as (output index, node names): its op's result,
    except that a conversion the compiler inserted - a precision cast or a layout trans_data,
    located at the producer of what it converts - holds that producer's output. (A model's own
    Cast is located at its own node, so it holds its own output.)"""
    op = value.op
    names = loc_names(op.location)
    while isinstance(op, CastOp | TransDataOp) and isinstance(op.operands[0], OpResult):
        src = op.operands[0]
        if isinstance(src.op, FusionOp):  # the value the fusion yields as this result
            inner = src.op.yield_op().values[src.index]
            if not isinstance(inner, OpResult):
                break
            src = inner
        if loc_names(src.op.location) != names:
            break
        value, op = src, src.op
    return value.index, names
