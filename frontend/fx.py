"""PyTorch FX graphs at the core-ATen level into the graph dialect, without ONNX.

    from geir.frontend.fx import import_aten_graph
    module = import_aten_graph(gm, inputs, constants={0: weight, ...})   # torch.compile's path

The graph is what AOTAutograd or `ExportedProgram.run_decompositions()` produce - functional
core-ATen ops (`aten.convolution.default`, `aten.addmm.default`, ...) with a FakeTensor in each
node's `meta["val"]` - or a torch.export program as exported (frontend/fx_export.py adds the
composite ops it keeps). `FxImporter` is a GraphBuilder (frontend/builder.py), like the ONNX
importer: each ATen op is one converter in `ATEN` calling `build`, so the dialect infers and
checks every result type, and each result is checked against torch's own (`meta["val"]`).

Each op is located at its FX node's name (`convolution_3`), with the Python line of the
model that made it (the node's stack trace) as the location's child, so errors, dumps and
geir-compare's tables name the user's code. A node whose op has no converter is one error
naming the op, its overload and that line. Parameters and buffers are constants (with their
bytes, or shape-only placeholders: `weights=False`), user inputs the function's arguments.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import FileLineColLoc, FusedLoc, IntAttr, NameLoc, NoneAttr, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue

from geir.dialects import graph as g
from geir.errors import GeirError
from geir.frontend.builder import GraphBuilder, value_hint
from geir.ir.locations import name_loc
from geir.ir.types import BF16, is_float_dtype, to_dtype, to_element_type


class FxImportError(GeirError):
    """A torch graph geir cannot import: the node, its ATen op and overload, its source line."""


Converter = Callable[..., Any]
ATEN: dict[str, Converter] = {}
"""`aten.<op>.<overload>` -> converter(importer, node, *args, **kwargs): the graph values of
the node's result (one value, or a tuple for a multi-result op)."""


CONVOLUTIONS = frozenset({"aten.convolution.default", "aten.conv1d.default", "aten.conv2d.default",
                          "aten.conv3d.default"})
"""The ATen ops a graph.conv is imported from (a batch norm after one may be folded into it)."""


def aten(*names: str) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for name in names:
            ATEN[name] = fn
        return fn
    return register


_DTYPES = {"float32": np.float32, "float16": np.float16, "float64": np.float64, "int64": np.int64,
           "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}


def numpy_dtype(torch_dtype: Any) -> np.dtype:
    """The numpy dtype of a torch dtype (bfloat16: ml_dtypes')."""
    name = str(torch_dtype).removeprefix("torch.")
    if name == "bfloat16":
        return BF16
    if name not in _DTYPES:
        raise FxImportError(f"torch dtype {torch_dtype} has no geir element type")
    return np.dtype(_DTYPES[name])


def to_numpy(t: Any) -> np.ndarray:
    """A torch tensor's values as a numpy array (bfloat16 through its bits)."""
    import torch

    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(BF16)
    return t.contiguous().numpy()


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


def source_line(node: Any) -> tuple[str, int, str] | None:
    """(file, line, code) of the model's line that made an FX node: the innermost frame of
    the node's stack trace outside torch itself (`self.conv(x)`, not nn.Conv2d's forward)."""
    trace = node.meta.get("stack_trace") if hasattr(node, "meta") else None
    frames = _FRAME.findall(trace) if trace else []
    if not frames:
        return None
    user = [f for f in frames if not f[0].startswith(_torch_dir())]
    file, line, _fn, code = (user or frames)[-1]
    return file, int(line), code.strip()


def _torch_dir() -> str:
    import os

    import torch

    return os.path.dirname(torch.__file__) + os.sep


class FxImporter(GraphBuilder):
    """Builds the graph-dialect function of one core-ATen FX graph (see the module doc)."""

    error_type = FxImportError

    def __init__(self, name: str = "main", fold_batch_norm: bool = False, sizes: Mapping[Any, int] | None = None):
        super().__init__(name)
        self.node: Any = None  # the FX node being converted
        # a symbolic graph (torch.export.Dim): each symbol's size in this program, and the
        # input dim it is read from where a view or expand needs it as a value (`shape_operand`)
        self.sizes = dict(sizes or {})
        self.symbol_dims: dict[Any, tuple[SSAValue, int]] = {}
        self.env: dict[Any, Any] = {}  # FX node -> its graph value(s)
        self.fold_batch_norm = fold_batch_norm  # see `batch_norm_fold`
        self.weights = True  # False: constants are shape-only placeholders (`run`)
        # a constant placeholder -> (name, tensor): made a graph.constant where it is first read,
        # so the parameters of a folded batch norm never become constants
        self.lazy: dict[Any, tuple[str, Any]] = {}
        self.folded: dict[Any, Any] = {}  # a batch norm folded into its conv -> the conv's values

    # -- errors and locations ------------------------------------------------------------

    @property
    def here(self) -> str:
        if self.node is None:
            return f"graph '{self.name}'"
        where = f"node '{self.node.name}' ({target_name(self.node.target)})"
        src = source_line(self.node)
        return where + (f" at {src[0]}:{src[1]} `{src[2]}`" if src else "")

    def default_location(self) -> str:
        return self.node.name if self.node is not None else "?"

    def append(self, op: Operation, loc: str | None = None) -> Operation:
        super().append(op, loc)
        if self.node is not None and loc is None:
            op.location = self.node_location()
        return op

    def node_location(self) -> Attribute:
        """loc("convolution_3"("model.py":12:0)): the node and its line (the name alone
        where the node has no stack trace)."""
        src = source_line(self.node)
        if src is None:
            return name_loc(self.default_location())
        return NameLoc(StringAttr(self.default_location()),
                       FileLineColLoc(StringAttr(src[0]), IntAttr(src[1]), IntAttr(0)))

    # -- values --------------------------------------------------------------------------

    def op(self, cls: type[g.GraphOp], inputs: Sequence[SSAValue], **attrs: Any) -> SSAValue:
        return self.build(cls, list(inputs), **attrs)[0]

    def scalar(self, value: float | int | bool, dtype: np.dtype) -> SSAValue:
        return self.constant(np.array(value, dtype))

    def tensor_or_scalar(self, value: Any, dtype: np.dtype) -> SSAValue:
        """An operand in the node's compute type: a value (cast when torch promoted it) or a
        Python number (a 0-d constant, as torch's wrapped scalars)."""
        if isinstance(value, SSAValue):
            return self.cast(value, dtype)
        if isinstance(value, bool | int | float):
            return self.scalar(value, dtype)
        raise self.error(f"operand {value!r} ({type(value).__name__}) is not a tensor or a number")

    def cast(self, value: SSAValue, dtype: np.dtype) -> SSAValue:
        if to_dtype(value.type.element_type) == dtype:
            return value
        return self.op(g.CastOp, [value], to=to_element_type(dtype))

    def ints(self, values: Sequence[int]) -> SSAValue:
        return self.constant(np.array([int(v) for v in values], np.int64))

    def result_dtype(self) -> np.dtype:
        return numpy_dtype(self.val().dtype)

    def val(self, node: Any = None) -> Any:
        """torch's FakeTensor of a node's result (its shape and dtype)."""
        node = self.node if node is None else node
        val = node.meta.get("val")
        if val is None:
            raise self.error("the node has no example value (meta['val']): give a graph traced with fake "
                             "tensors (torch.export, AOTAutograd)")
        return val

    def shape(self, node: Any = None) -> tuple[int, ...]:
        """A node's result shape, a symbolic dim at its size in this program (`sizes`)."""
        val = self.val(node)
        try:
            return tuple(d if isinstance(d, int) else self.size_of(d.node.expr) for d in val.shape)
        except (TypeError, AttributeError):  # a SymInt of a graph given no sizes
            raise self.error(f"the result shape {list(val.shape)} is symbolic; geir compiles static shapes "
                             f"(compile with dynamic=False, or one program per shape)") from None

    def size_of(self, expr: Any) -> int:
        size = expr.xreplace(self.sizes)
        if not (isinstance(size, int) or size.is_Integer):
            raise TypeError(expr)
        return int(size)

    def shape_operand(self) -> SSAValue:
        """The node's result shape as an i64 operand (a view's or an expand's target): a
        constant, but where a dim is symbolic (a shape range's) computed from the input dim it
        comes from (graph.shape), as a dynamic ONNX graph computes it, so that shape inference
        over the range finds the target in the range's symbols."""
        dims = self.val().shape
        if all(isinstance(d, int) for d in dims):
            return self.ints(self.shape())
        pieces: list[SSAValue] = []
        run: list[int] = []
        for d in dims:
            if isinstance(d, int):
                run.append(d)
                continue
            if run:
                pieces.append(self.ints(run))
                run = []
            pieces.append(self.size_value(d.node.expr))
        if run:
            pieces.append(self.ints(run))
        return pieces[0] if len(pieces) == 1 else self.op(g.ConcatOp, pieces, axis=0)

    def size_value(self, expr: Any) -> SSAValue:
        """A 1-element i64 tensor holding a symbolic size: an input's dim, a number, or sums
        and products of them."""
        import sympy

        if expr.is_Integer:
            return self.ints([int(expr)])
        if expr.is_Symbol and expr in self.symbol_dims:
            value, axis = self.symbol_dims[expr]
            return self.op(g.ShapeOp, [value], start=axis, end=axis + 1)
        if isinstance(expr, sympy.Mul | sympy.Add) and expr.args:
            cls = g.MulOp if isinstance(expr, sympy.Mul) else g.AddOp
            values = [self.size_value(a) for a in expr.args]
            result = values[0]
            for v in values[1:]:
                result = self.op(cls, [result, v])
            return result
        raise self.error(f"the size {expr} of a symbolic dim is not an input's dim, nor sums and products of "
                         f"them; give the dim's sizes as gears")

    # -- the graph -----------------------------------------------------------------------

    def run(self, gm: Any, inputs: Mapping[int, str], constants: Mapping[int, tuple[str, Any]],
            weights: bool = True) -> None:
        """Convert `gm`'s nodes in order. Placeholder i is the function input named
        `inputs[i]`, or the constant `constants[i]` = (name, tensor); `weights=False` makes
        constants shape-only placeholders. A constant becomes a graph.constant where it is
        first read."""
        self.weights = weights
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        for i, node in enumerate(placeholders):
            self.node = None
            val = node.meta.get("val")
            if i in constants:
                if node.users:  # not a buffer nothing reads (batch norm's num_batches_tracked)
                    self.lazy[node] = constants[i]
            elif isinstance(val, int | float | bool) or (val is None and not node.users):
                continue  # a size dynamo passes as an int, already in the static shapes
            elif self.sizes and _symbolic_size(val):
                self.env[node] = SYMBOLIC_SIZE  # a symbolic size dynamo passes: views read it from the shapes
            elif i in inputs:
                if val is None or not hasattr(val, "shape"):
                    raise FxImportError(f"graph input '{node.name}' is not a tensor ({type(val).__name__}); "
                                        f"geir takes tensor inputs")
                self.node = node
                self.env[node] = self.input(inputs[i], self.shape(node), numpy_dtype(val.dtype))
                for axis, d in enumerate(val.shape):
                    if not isinstance(d, int) and d.node.expr.is_Symbol:
                        self.symbol_dims.setdefault(d.node.expr, (self.env[node], axis))
            else:
                raise FxImportError(f"placeholder {i} '{node.name}' is neither an input nor a constant")
        for node in gm.graph.nodes:
            self.node = node
            if node.op == "call_function":
                self.env[node] = self.call(node)
            elif node.op == "get_attr":
                self.env[node] = self.tensor_weight(node.target, _attr(gm, node.target), weights)
            elif node.op == "output":
                self.node = None
                outs = _flatten(node.args[0])
                for k, out in enumerate(outs):
                    if out is None:  # a backward graph's gradient of an input that needs none
                        continue
                    if isinstance(out, int) or (hasattr(out, "meta") and _symbolic_size(out.meta.get("val"))):
                        raise FxImportError(f"output {k} ({out}) is a size, which a training forward saves for its "
                                            f"backward when sizes are symbolic: geir compiles training steps at "
                                            f"static shapes (no dynamic=True nor mark_dynamic)")
                    value = self.value(out) if out in self.env or out in self.lazy else None
                    if not isinstance(value, SSAValue):
                        raise FxImportError(f"output {k} ({out}) is not a tensor of the graph")
                    self.output(f"output_{k}" if len(outs) > 1 else "output", value)
            elif node.op != "placeholder":
                raise self.error(f"FX node kind '{node.op}' is not supported (a core-ATen graph has "
                                 f"call_function nodes only)")
        self.node = None

    def tensor_weight(self, name: str, t: Any, weights: bool) -> SSAValue:
        """A torch tensor as a named weight: its values, or a shape-only placeholder."""
        if weights:
            return self.weight(name, to_numpy(t))
        return self.weight(name, shape=tuple(t.shape), dtype=numpy_dtype(t.dtype))

    def call(self, node: Any) -> Any:
        target = node.target
        if target is operator.getitem:
            seq, i = node.args
            values = self.env[seq]
            if not isinstance(values, tuple):
                raise self.error("getitem of a value that is not a tuple")
            if values[i] is None and node.users:
                raise self.error(f"result {i} of '{seq.name}' ({target_name(seq.target)}) is used; geir does not "
                                 f"compute it (max-pool indices)")
            return values[i]
        if node in self.folded:
            return self.folded.pop(node)
        if size_node(node):  # a symbolic size or a check of one: read by the views through their shapes
            return SYMBOLIC_SIZE
        name = target_name(target)
        convert = ATEN.get(name)
        if convert is None:
            raise self.error(f"ATen op '{name}' is not supported")
        self.node_name = self.claim(node.name, "node")
        self.node_op = name
        fold = self.batch_norm_fold(node) if self.fold_batch_norm and name in CONVOLUTIONS else None
        args, kwargs = (node.args, node.kwargs) if fold is None else self.folded_conv_args(node, *fold[1:])
        args = [self.arg(a) for a in args]
        kwargs = {k: self.arg(v) for k, v in kwargs.items()}
        if name not in SIZED and any(a is SYMBOLIC_SIZE for a in _flatten([args, list(kwargs.values())])):
            raise self.error(f"'{name}' takes a size computed from a symbolic dim; geir's shape ranges take views, "
                             f"reshapes and expands of such sizes: give the dim's sizes as gears")
        result = convert(self, node, *args, **kwargs)
        if isinstance(result, SSAValue):
            self.check_result(result)
            result.name_hint = value_hint(node.name)
        if fold is not None:  # the conv stands for both nodes
            bn = self.node = fold[0]
            result.owner.location = FusedLoc([result.owner.location, self.node_location()], NoneAttr())
            self.node = node
            self.folded[bn] = result if target_name(bn.target) == "aten.batch_norm.default" else (result, None, None)
        return result

    def arg(self, a: Any) -> Any:
        if isinstance(a, list | tuple):
            return type(a)(self.arg(x) for x in a)
        if hasattr(a, "op") and hasattr(a, "target"):  # an FX node
            return self.value(a)
        return a

    def value(self, node: Any) -> Any:
        """A converted node's graph value(s); a constant placeholder's graph.constant, made now
        if this is its first reader."""
        if node not in self.env and node in self.lazy:
            self.env[node] = self.tensor_weight(*self.lazy.pop(node), self.weights)
        return self.env[node]

    # -- conv -> batch norm ----------------------------------------------------------------

    def batch_norm_fold(self, conv: Any) -> tuple[Any, tuple[np.ndarray, np.ndarray], tuple[str, str]] | None:
        """(batch norm node, (weights, bias), their names): the inference batch norm a conv
        node's result goes to alone, and the conv's weights and bias with it folded in
        (graph-fold-batchnorm's arithmetic, reference/affine.py) - where the
        weights and the batch norm's parameters are constants of one dtype that nothing else
        reads (its weight and bias may be absent). Folded as the conv is read, the pair's
        parameters never become constants nor the batch norm an op: the graph graph-simplify
        would leave after a round, without the round. Only where the pipeline runs
        graph-simplify (`fold_batch_norm`), as torch's ONNX exporter folds the pair too."""
        from geir.reference.affine import batch_norm_affine, conv_weights_with_affine

        if not self.weights or len(conv.users) != 1:
            return None
        bn = next(iter(conv.users))
        params = _batch_norm_params(bn)
        weight, bias = _conv_weights(conv)
        if params is None or bn.args[0] is not conv or params[2] is None or params[3] is None:
            return None
        read = [weight, bias, *params[:4]]
        if any(p is not None and (p not in self.lazy or len(p.users) != 1) for p in read):
            return None
        w, b, scale, shift, mean, var = (to_numpy(self.lazy[p][1]) if p is not None else None for p in read)
        if len({a.dtype for a in (w, b, scale, shift, mean, var) if a is not None}) != 1:
            return None  # parameters of another precision than the conv's: the pass leaves those too
        scale = scale if scale is not None else np.ones_like(var)
        shift = shift if shift is not None else np.zeros_like(var)
        folded = conv_weights_with_affine(w, b, *batch_norm_affine(scale, shift, mean, var, params[4]))
        if folded is None:
            return None
        names = (f"{self.lazy[weight][0]}_folded",  # as the pass names them
                 f"{self.lazy[bias][0]}_folded" if bias is not None else f"{conv.name}_bias")
        for p in read:
            self.lazy.pop(p, None)
        return bn, folded, names

    def folded_conv_args(self, conv: Any, arrays: tuple[np.ndarray, np.ndarray],
                         names: tuple[str, str]) -> tuple[list, dict]:
        """The conv node's arguments and keyword arguments with these weights and bias."""
        (w, b), (w_name, b_name) = arrays, names
        args, kwargs = list(conv.args), dict(conv.kwargs)
        args[1] = self.constant(w, name=w_name, loc=w_name)
        b = self.constant(b, name=b_name, loc=b_name)
        if len(args) > 2:
            args[2] = b
        else:
            kwargs["bias"] = b
        return args, kwargs

    def check_result(self, value: SSAValue) -> None:
        """The converted value has torch's shape and dtype (a converter bug otherwise)."""
        val = self.node.meta.get("val")
        if val is None or not hasattr(val, "shape"):
            return
        want = (self.shape(), numpy_dtype(val.dtype))
        have = (tuple(value.type.get_shape()), to_dtype(value.type.element_type))
        if want != have:
            raise self.error(f"geir infers {list(have[0])} {have[1]}, torch {list(want[0])} {want[1]}")


def output_slots(gm: Any) -> list[bool]:
    """Per flattened output of an FX graph: whether it is a tensor the program returns (False:
    None, a gradient AOTAutograd does not need)."""
    out = next(n for n in gm.graph.nodes if n.op == "output")
    return [o is not None for o in _flatten(out.args[0])]


SYMBOLIC_SIZE = object()
"""The value of an FX node computing a symbolic size (`size_node`)."""

SIZED = ("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.expand.default")
"""Ops whose size arguments may be symbolic: their converters take the result's shape
(`FxImporter.shape_operand`)."""

_SIZE_CHECKS = ("aten._assert_scalar.default", "aten.sym_constrain_range_for_size.default",
                "aten.sym_constrain_range.default")


def _symbolic_size(val: Any) -> bool:
    """A node's value that is a symbolic size (a SymInt), not a tensor."""
    return hasattr(val, "node") and not hasattr(val, "shape")


def size_node(node: Any) -> bool:
    """A node of a symbolic graph that computes a size (`sym_size`, arithmetic on sizes) or
    checks one (torch.export's range asserts: the range model checks its inputs' sizes)."""
    if node.op != "call_function":
        return False
    name = target_name(node.target)
    if name in _SIZE_CHECKS:
        return True
    if hasattr(node.meta.get("val"), "shape"):
        return False
    return name == "aten.sym_size.int" or getattr(node.target, "__module__", None) == "_operator"


def target_name(target: Any) -> str:
    """An FX node target's name: `aten.<op>.<overload>` for an ATen op (its key in `ATEN`)."""
    name = getattr(target, "__name__", None) if not hasattr(target, "_schema") else None
    return name if name is not None else str(target)


def _attr(gm: Any, target: str) -> Any:
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _batch_norm_params(node: Any) -> tuple[Any, Any, Any, Any, float] | None:
    """(weight, bias, running mean, running var, eps) of an inference batch norm node (an FX
    node each, or None), None for any other node."""
    name = target_name(node.target)
    if name == "aten._native_batch_norm_legit_no_training.default":
        names = ("input", "weight", "bias", "running_mean", "running_var", "momentum", "eps")
    elif name == "aten.batch_norm.default":
        names = ("input", "weight", "bias", "running_mean", "running_var", "training", "momentum", "eps")
    else:
        return None
    args = {**dict(zip(names, node.args)), **node.kwargs}
    if args.get("training", False):
        return None
    return (args.get("weight"), args.get("bias"), args.get("running_mean"), args.get("running_var"),
            float(args.get("eps", 1e-5)))


def _conv_weights(node: Any) -> tuple[Any, Any]:
    """(weight, bias) arguments of a convolution node (the bias None if absent)."""
    bias = node.args[2] if len(node.args) > 2 else node.kwargs.get("bias")
    return node.args[1], bias


def _flatten(x: Any) -> list:
    if isinstance(x, list | tuple):
        return [y for e in x for y in _flatten(e)]
    return [x]


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------


def import_aten_graph(gm: Any, inputs: Mapping[int, str], constants: Mapping[int, tuple[str, Any]], *,
                      weights: bool = True, name: str = "main", verify: bool = True,
                      fold_batch_norm: bool = False, sizes: Mapping[Any, int] | None = None):
    """The verified graph-dialect module of a core-ATen FX graph (AOTAutograd's forward):
    placeholder i is input `inputs[i]` or constant `constants[i]` = (name, tensor).
    `verify=False`: for a caller that verifies the module itself (GraphBuilder.finish).
    `fold_batch_norm`: conv -> inference batch norm pairs are folded as they are read, for a
    pipeline that folds them anyway (FxImporter.batch_norm_fold). `sizes`: a symbolic graph's
    symbols (sympy) at the sizes to compile (a gear, a shape range's top)."""
    im = FxImporter(name, fold_batch_norm, sizes)
    im.run(gm, inputs, constants, weights)
    return im.finish(verify=verify)


KEPT = ("_safe_softmax", "hardswish", "hardsigmoid")
"""ATen ops the importer takes whole rather than decomposed: scaled dot-product attention's
softmax is one graph.safe_softmax, not softmax, any, logical_not and where; hardswish and
hardsigmoid are one op each (as ONNX's), not an add, two clamps, a mul and a div."""


ADDED = ("_native_batch_norm_legit_functional",)
"""ATen ops outside torch's core-ATen table that the importer takes decomposed: batch norm in
training mode (batch statistics, running statistics updated) is a var_mean and elementwise
ops."""


def decompositions(table: dict) -> dict:
    """A decomposition table (torch's core-ATen one) without the ops in KEPT, with those in ADDED."""
    import torch
    from torch._decomp import get_decompositions

    kept = {getattr(torch.ops.aten, name).default for name in KEPT}
    added = get_decompositions([getattr(torch.ops.aten, name) for name in ADDED])  # every overload
    return {op: fn for op, fn in {**table, **added}.items() if op not in kept}


# ---------------------------------------------------------------------------
# Converters: elementwise
# ---------------------------------------------------------------------------

_UNARY = {
    "relu": g.ReluOp, "sigmoid": g.SigmoidOp, "tanh": g.TanhOp, "exp": g.ExpOp, "sqrt": g.SqrtOp,
    "neg": g.NegOp, "erf": g.ErfOp, "abs": g.AbsOp, "log": g.LogOp, "cos": g.CosOp, "sin": g.SinOp,
    "reciprocal": g.ReciprocalOp, "floor": g.FloorOp, "ceil": g.CeilOp, "sign": g.SignOp,
    "logical_not": g.LogicalNotOp, "isnan": g.IsNanOp, "isinf": g.IsInfOp, "round": g.RoundOp,
}


def _unary(cls: type[g.GraphOp]) -> Converter:
    def convert(im: FxImporter, node, x):
        return im.op(cls, [x])
    return convert


for _name, _cls in _UNARY.items():
    aten(f"aten.{_name}.default")(_unary(_cls))


@aten("aten.rsqrt.default")
def _rsqrt(im, node, x):
    return im.op(g.ReciprocalOp, [im.op(g.SqrtOp, [x])])


@aten("aten.silu.default")
def _silu(im, node, x):
    return im.op(g.MulOp, [x, im.op(g.SigmoidOp, [x])])


@aten("aten.gelu.default")
def _gelu(im, node, x, approximate="none"):
    return im.op(g.GeluOp, [x], approximate=approximate)


@aten("aten.hardswish.default")
def _hardswish(im, node, x):
    return im.op(g.HardSwishOp, [x])


@aten("aten.hardsigmoid.default")
def _hardsigmoid(im, node, x):
    return im.op(g.HardSigmoidOp, [x], alpha=1 / 6, beta=0.5)


@aten("aten.leaky_relu.default")
def _leaky_relu(im, node, x, negative_slope=0.01):
    return im.op(g.LeakyReluOp, [x], alpha=float(negative_slope))


@aten("aten.elu.default")
def _elu(im, node, x, alpha=1.0, scale=1.0, input_scale=1.0):
    if scale != 1.0 or input_scale != 1.0:
        raise im.error("elu with scale or input_scale other than 1 is not supported")
    return im.op(g.EluOp, [x], alpha=float(alpha))


@aten("aten.clamp.default", "aten.hardtanh.default", "aten.clamp_min.default", "aten.clamp_max.default")
def _clamp(im, node, x, lo=None, hi=None):
    name = str(node.target)
    if "clamp_max" in name:
        lo, hi = None, lo
    if "hardtanh" in name:
        lo, hi = (-1.0 if lo is None else lo), (1.0 if hi is None else hi)
    dt = im.result_dtype()
    info = ml_dtypes.finfo(dt) if is_float_dtype(dt) else np.iinfo(dt)  # numpy's finfo has no bfloat16
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return im.op(g.ClipOp, [im.cast(x, dt), im.scalar(lo, dt), im.scalar(hi, dt)])


_BINARY = {  # op -> (graph op, its overloads)
    "add": (g.AddOp, ("Tensor", "Scalar")), "sub": (g.SubOp, ("Tensor", "Scalar")),
    "mul": (g.MulOp, ("Tensor", "Scalar")), "div": (g.DivOp, ("Tensor", "Scalar", "Tensor_mode", "Scalar_mode")),
    "pow": (g.PowOp, ("Tensor_Tensor", "Tensor_Scalar")), "maximum": (g.MaxOp, ("default",)),
    "minimum": (g.MinOp, ("default",)), "logical_and": (g.LogicalAndOp, ("default",)),
    "logical_or": (g.LogicalOrOp, ("default",)), "remainder": (g.ModOp, ("Tensor", "Scalar")),
}
_COMPARE = {"eq": g.EqualOp, "lt": g.LessOp, "le": g.LessOrEqualOp, "gt": g.GreaterOp, "ge": g.GreaterOrEqualOp}


def _compute_dtype(node: Any, a: Any, b: Any) -> np.dtype:
    """torch's type promotion of a comparison's operands (its result is bool): from the
    operands' example values, Python numbers as torch's wrapped scalars."""
    import torch

    def example(arg, value):
        return arg.meta["val"] if hasattr(arg, "meta") and "val" in arg.meta else value

    return numpy_dtype(torch.result_type(example(node.args[0], a), example(node.args[1], b)))


def _binary(cls: type[g.GraphOp], compare: bool = False) -> Converter:
    def convert(im: FxImporter, node, a, b, alpha=1, rounding_mode=None):
        dt = _compute_dtype(node, a, b) if compare else im.result_dtype()
        x, y = im.tensor_or_scalar(a, dt), im.tensor_or_scalar(b, dt)
        if alpha != 1:
            y = im.op(g.MulOp, [y, im.scalar(alpha, dt)])
        out = im.op(cls, [x, y], **({"fmod": 0} if cls is g.ModOp else {}))
        if rounding_mode is not None:
            if not is_float_dtype(dt):
                raise im.error(f"integer division with rounding_mode='{rounding_mode}' is not supported")
            if rounding_mode == "floor":
                out = im.op(g.FloorOp, [out])
            else:  # trunc: sign(q) * floor(|q|)
                out = im.op(g.MulOp, [im.op(g.SignOp, [out]), im.op(g.FloorOp, [im.op(g.AbsOp, [out])])])
        return out
    return convert


for _name, (_cls, _overloads) in _BINARY.items():
    for _overload in _overloads:
        aten(f"aten.{_name}.{_overload}")(_binary(_cls))
for _name, _cls in _COMPARE.items():
    for _overload in ("Tensor", "Scalar"):
        aten(f"aten.{_name}.{_overload}")(_binary(_cls, compare=True))


@aten("aten.ne.Tensor", "aten.ne.Scalar")
def _ne(im, node, a, b):
    return im.op(g.LogicalNotOp, [_binary(g.EqualOp, compare=True)(im, node, a, b)])


@aten("aten.bitwise_not.default")
def _bitwise_not(im, node, x):
    return im.op(g.LogicalNotOp if to_dtype(x.type.element_type) == np.bool_ else g.BitwiseNotOp, [x])


@aten("aten.bitwise_and.Tensor", "aten.bitwise_or.Tensor")
def _bitwise(im, node, a, b):
    logical = to_dtype(a.type.element_type) == np.bool_
    if "and" in str(node.target):
        cls = g.LogicalAndOp if logical else g.BitwiseAndOp
    else:
        cls = g.LogicalOrOp if logical else g.BitwiseOrOp
    dt = im.result_dtype()
    return im.op(cls, [im.cast(a, dt), im.cast(b, dt)])


@aten("aten.pow.Scalar")
def _pow_scalar(im, node, a, b):
    dt = im.result_dtype()
    return im.op(g.PowOp, [im.scalar(a, dt), im.cast(b, dt)])


@aten("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(im, node, a, b, alpha=1):
    return _binary(g.SubOp)(im, node, b, a if alpha == 1 else _binary(g.MulOp)(im, node, a, alpha))


@aten("aten.where.self")
def _where(im, node, cond, a, b):
    dt = im.result_dtype()
    return im.op(g.WhereOp, [im.cast(cond, np.dtype(np.bool_)) if isinstance(cond, SSAValue) else
                             im.scalar(bool(cond), np.dtype(np.bool_)), im.tensor_or_scalar(a, dt),
                             im.tensor_or_scalar(b, dt)])


@aten("aten._to_copy.default")
def _to_copy(im, node, x, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
             memory_format=None):
    return im.cast(x, im.result_dtype())


@aten("aten._assert_tensor_metadata.default", "aten._assert_async.msg", "aten._assert_scalar.default",
      "aten.sym_constrain_range_for_size.default")
def _check_only(im, node, *args, **kwargs):
    return None  # torch's run-time checks of what geir's static types already fix


@aten("aten.clone.default", "aten.alias.default", "aten.lift_fresh_copy.default", "aten.detach.default",
      "aten.contiguous.default")
def _identity(im, node, x, memory_format=None):
    return x


# ---------------------------------------------------------------------------
# Converters: reductions and normalisations
# ---------------------------------------------------------------------------


def _axes(dims: Any, rank: int) -> list[int] | None:
    if dims is None or (isinstance(dims, list | tuple) and not dims):
        return None
    dims = [dims] if isinstance(dims, int) else list(dims)
    return [d % rank if rank else 0 for d in dims]


def _reduce(cls: type[g.GraphOp]) -> Converter:
    def convert(im: FxImporter, node, x, dims=None, keepdim=False, dtype=None):
        dt = im.result_dtype()
        x = im.cast(x, dt) if cls is not g.ReduceMaxOp else x
        axes = _axes(dims, len(x.type.get_shape()))
        attrs = {"keepdims": int(bool(keepdim))}
        if axes is not None:
            attrs["axes"] = axes
        return im.op(cls, [x], **attrs)
    return convert


aten("aten.mean.dim", "aten.mean.default")(_reduce(g.ReduceMeanOp))
aten("aten.sum.dim_IntList", "aten.sum.default")(_reduce(g.ReduceSumOp))
aten("aten.amax.default")(_reduce(g.ReduceMaxOp))
aten("aten.amin.default")(_reduce(g.ReduceMinOp))


@aten("aten.var_mean.correction", "aten.var.correction")
def _var_mean(im, node, x, dims=None, correction=None, keepdim=False):
    """The variance (with Bessel's `correction`, 1 when None as torch's) and, for var_mean,
    the mean: mean((x - mean)^2) * n / (n - correction), as two passes for accuracy."""
    shape = x.type.get_shape()
    axes = _axes(dims, len(shape)) or list(range(len(shape)))
    n = int(np.prod([shape[a] for a in axes]))
    dt = to_dtype(x.type.element_type)
    mean = im.op(g.ReduceMeanOp, [x], axes=axes, keepdims=1)
    d = im.op(g.SubOp, [x, mean])
    var = im.op(g.ReduceMeanOp, [im.op(g.MulOp, [d, d])], axes=axes, keepdims=int(bool(keepdim)))
    c = 1 if correction is None else correction
    if c:
        var = im.op(g.MulOp, [var, im.scalar(n / (n - c) if n > c else float("inf"), dt)])
    if node.target.__name__.startswith("var."):
        return var
    return var, (mean if keepdim else im.op(g.ReduceMeanOp, [x], axes=axes, keepdims=0))


@aten("aten.any.dim", "aten.any.dims", "aten.any.default")
def _any(im, node, x, dims=None, keepdim=False):
    axes = _axes(dims, len(x.type.get_shape()))
    attrs = {"keepdims": int(bool(keepdim)), **({"axes": axes} if axes is not None else {})}
    m = im.op(g.ReduceMaxOp, [im.cast(x, np.dtype(np.int32))], **attrs)
    return im.cast(m, np.dtype(np.bool_))


@aten("aten.argmax.default")
def _argmax(im, node, x, dim=None, keepdim=False):
    if dim is None:
        x, dim = im.op(g.ReshapeOp, [x, im.ints([-1])]), 0
    return im.op(g.ArgMaxOp, [x], axis=dim % len(x.type.get_shape()), keepdims=int(bool(keepdim)))


@aten("aten._softmax.default")
def _softmax(im, node, x, dim, half_to_float=False):
    return im.cast(im.op(g.SoftmaxOp, [x], axis=dim % len(x.type.get_shape())), im.result_dtype())


@aten("aten._safe_softmax.default")
def _safe_softmax(im, node, x, dim, dtype=None):
    x = im.cast(x, im.result_dtype())  # `dtype`: the softmax is computed in it
    return im.op(g.SafeSoftmaxOp, [x], axis=dim % len(x.type.get_shape()))


@aten("aten._log_softmax.default")
def _log_softmax(im, node, x, dim, half_to_float=False):
    return im.cast(im.op(g.LogSoftmaxOp, [x], axis=dim % len(x.type.get_shape())), im.result_dtype())


@aten("aten.native_layer_norm.default")
def _layer_norm(im, node, x, shape, w, b, eps):
    dt = to_dtype(x.type.element_type)
    w = w if w is not None else im.constant(np.ones(shape, dt))
    out = im.op(g.LayerNormOp, [x, w] + ([b] if b is not None else []), axis=-len(shape), epsilon=float(eps))
    # the statistics a training graph saves for the backward, built only when used (-O0 runs no DCE)
    if not any(u.target is operator.getitem and u.args[1] > 0 for u in node.users):
        return out, None, None
    axes = list(range(len(x.type.get_shape()) - len(shape), len(x.type.get_shape())))
    mean = im.op(g.ReduceMeanOp, [x], axes=axes, keepdims=1)
    d = im.op(g.SubOp, [x, mean])
    var = im.op(g.ReduceMeanOp, [im.op(g.MulOp, [d, d])], axes=axes, keepdims=1)
    rstd = im.op(g.ReciprocalOp, [im.op(g.SqrtOp, [im.op(g.AddOp, [var, im.scalar(float(eps), dt)])])])
    return out, mean, rstd


@aten("aten._native_batch_norm_legit_no_training.default")
def _batch_norm(im, node, x, w, b, mean, var, momentum, eps):
    c = x.type.get_shape()[1]
    dt = to_dtype(x.type.element_type)
    w = w if w is not None else im.constant(np.ones(c, dt))
    b = b if b is not None else im.constant(np.zeros(c, dt))
    return im.op(g.BatchNormOp, [x, w, b, mean, var], epsilon=float(eps)), None, None


# ---------------------------------------------------------------------------
# Converters: shapes and indexing
# ---------------------------------------------------------------------------


@aten("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.flatten.using_ints")
def _view(im, node, x, *_):
    return im.op(g.ReshapeOp, [x, im.shape_operand()])


@aten("aten.permute.default")
def _permute(im, node, x, dims):
    rank = len(x.type.get_shape())
    return im.op(g.TransposeOp, [x], perm=[d % rank for d in dims])


@aten("aten.t.default")
def _t(im, node, x):
    return x if len(x.type.get_shape()) < 2 else im.op(g.TransposeOp, [x], perm=[1, 0])


@aten("aten.transpose.int")
def _transpose(im, node, x, a, b):
    rank = len(x.type.get_shape())
    perm = list(range(rank))
    perm[a % rank], perm[b % rank] = perm[b % rank], perm[a % rank]
    return im.op(g.TransposeOp, [x], perm=perm)


@aten("aten.expand.default")
def _expand(im, node, x, sizes, implicit=False):
    return im.op(g.ExpandOp, [x, im.shape_operand()])


@aten("aten.repeat.default")
def _repeat(im, node, x, repeats):
    rank = len(x.type.get_shape())
    if len(repeats) > rank:
        x = im.op(g.ReshapeOp, [x, im.ints((1,) * (len(repeats) - rank) + tuple(x.type.get_shape()))])
    return im.op(g.TileOp, [x, im.ints(repeats)])


@aten("aten.unsqueeze.default")
def _unsqueeze(im, node, x, dim):
    return im.op(g.UnsqueezeOp, [x], axes=[dim % (len(x.type.get_shape()) + 1)])


@aten("aten.squeeze.dims", "aten.squeeze.dim", "aten.squeeze.default")
def _squeeze(im, node, x, dims=None):
    shape = x.type.get_shape()
    axes = [d for d in (_axes(dims, len(shape)) or range(len(shape))) if shape[d] == 1]
    return im.op(g.SqueezeOp, [x], axes=axes) if axes else x


@aten("aten.cat.default")
def _cat(im, node, tensors, dim=0):
    dt = im.result_dtype()
    values = [im.cast(t, dt) for t in tensors if math.prod(t.type.get_shape())]  # torch skips empty ones
    rank = len(im.shape())
    return values[0] if len(values) == 1 else im.op(g.ConcatOp, values, axis=dim % rank)


@aten("aten.slice.Tensor")
def _slice(im, node, x, dim=0, start=None, end=None, step=1):
    n = x.type.get_shape()[dim]
    start, end = 0 if start is None else start, n if end is None else end
    start, end = max(-n, min(start, n)), max(-n, min(end, n))  # torch clamps; INT64_MAX means "to the end"
    if (start % n if n else 0, end if end >= 0 else end + n, step) == (0, n, 1):
        return x
    return im.op(g.SliceOp, [x, im.ints([start]), im.ints([end]), im.ints([dim % len(x.type.get_shape())]),
                             im.ints([step])])


@aten("aten.select.int")
def _select(im, node, x, dim, index):
    return im.op(g.GatherOp, [x, im.constant(np.array(index, np.int64))], axis=dim % len(x.type.get_shape()))


@aten("aten.split_with_sizes.default", "aten.split.Tensor")
def _split(im, node, x, sizes, dim=0):
    n = x.type.get_shape()[dim]
    if isinstance(sizes, int):
        sizes = [min(sizes, n - i) for i in range(0, n, sizes)]
    return tuple(im.build(g.SplitOp, [x, im.ints(sizes)], len(sizes), axis=dim % len(x.type.get_shape())))


@aten("aten.embedding.default")
def _embedding(im, node, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return im.op(g.GatherOp, [weight, indices], axis=0)


@aten("aten.index_select.default")
def _index_select(im, node, x, dim, index):
    return im.op(g.GatherOp, [x, index], axis=dim % len(x.type.get_shape()))


@aten("aten.index.Tensor")
def _index(im, node, x, indices):
    """x[..., i0, i1, ...] with index tensors on consecutive axes (None elsewhere): one index
    is a gather; several known ones (upsampling's arange grids) one gather of the linear
    index over the flattened axes."""
    shape = list(x.type.get_shape())
    used = [d for d, i in enumerate(indices) if i is not None]
    if not used or used != list(range(used[0], used[-1] + 1)):
        raise im.error("advanced indexing with index tensors on non-consecutive axes is not supported")
    d0 = used[0]
    if len(used) == 1:
        return im.op(g.GatherOp, [x, indices[d0]], axis=d0)
    known = [im.const_value(indices[d]) for d in used]
    if any(k is None for k in known):
        raise im.error("advanced indexing with several index tensors computed at run time is not supported")
    dims = [shape[d] for d in used]
    grids = np.broadcast_arrays(*[np.asarray(k, np.int64) % n for k, n in zip(known, dims)])
    linear = np.ravel_multi_index(tuple(grids), dims)
    flat = im.op(g.ReshapeOp, [x, im.ints(shape[:d0] + [math.prod(dims)] + shape[used[-1] + 1:])])
    return im.op(g.GatherOp, [flat, im.constant(linear.astype(np.int64))], axis=d0)


@aten("aten.constant_pad_nd.default")
def _pad(im, node, x, pad, value=0):
    rank = len(x.type.get_shape())
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):  # torch: (last dim before, after, the one before it, ...)
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    dt = to_dtype(x.type.element_type)
    return im.op(g.PadOp, [x, im.ints(begins + ends), im.scalar(value, dt)], mode="constant")


@aten("aten.index_put.default")
def _index_put(im, node, x, indices, values, accumulate=False):
    """x[idx] = values (+= with accumulate: an embedding's gradient) for one index tensor on
    the first axis: a scatter_nd of the rows."""
    if len(indices) != 1 or indices[0] is None:
        raise im.error("index_put with other than one index tensor on the first axis is not supported")
    idx = im.cast(indices[0], np.dtype(np.int64))
    rows = im.op(g.UnsqueezeOp, [idx], axes=[len(idx.type.get_shape())])
    want = tuple(idx.type.get_shape()) + tuple(x.type.get_shape()[1:])
    if tuple(values.type.get_shape()) != want:
        values = im.op(g.ExpandOp, [values, im.ints(want)])
    return im.op(g.ScatterNdOp, [x, rows, im.cast(values, to_dtype(x.type.element_type))],
                 reduction="add" if accumulate else "none")


@aten("aten.slice_scatter.default")
def _slice_scatter(im, node, x, src, dim=0, start=None, end=None, step=1):
    """x with x[start:end] along `dim` replaced by src: the parts of x around it and src, concatenated."""
    shape = x.type.get_shape()
    rank, n = len(shape), shape[dim]
    dim %= rank
    start = 0 if start is None else max(0, min(start + n if start < 0 else start, n))
    end = n if end is None else max(0, min(end + n if end < 0 else end, n))
    if step != 1:
        raise im.error(f"slice_scatter with step {step} is not supported")
    parts = []
    if start > 0:
        parts.append(im.op(g.SliceOp, [x, im.ints([0]), im.ints([start]), im.ints([dim]), im.ints([1])]))
    parts.append(im.cast(src, to_dtype(x.type.element_type)))
    if end < n:
        parts.append(im.op(g.SliceOp, [x, im.ints([end]), im.ints([n]), im.ints([dim]), im.ints([1])]))
    return parts[0] if len(parts) == 1 else im.op(g.ConcatOp, parts, axis=dim)


# ---------------------------------------------------------------------------
# Converters: tensors made from nothing (static shapes: constants)
# ---------------------------------------------------------------------------


@aten("aten.full.default", "aten.full_like.default", "aten.zeros.default", "aten.ones.default",
      "aten.zeros_like.default", "aten.ones_like.default", "aten.scalar_tensor.default", "aten.empty.memory_format")
def _full(im, node, *args, **kwargs):
    name = str(node.target)
    value = (args[1] if "full" in name else args[0] if "scalar_tensor" in name else
             1 if "ones" in name else 0)
    return im.constant(np.full(im.shape(), value, im.result_dtype()))


@aten("aten.arange.start_step", "aten.arange.default", "aten.arange.start")
def _arange(im, node, *args, **kwargs):
    nums = [a for a in args if isinstance(a, int | float)]
    start, end, step = (0, nums[0], 1) if len(nums) == 1 else (nums[0], nums[1], nums[2] if len(nums) > 2 else 1)
    return im.constant(np.arange(start, end, step).astype(im.result_dtype()))


# ---------------------------------------------------------------------------
# Converters: contractions, convolutions, pooling, resizing
# ---------------------------------------------------------------------------


@aten("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(im, node, a, b):
    return im.op(g.MatMulOp, [a, b])


@aten("aten.addmm.default")
def _addmm(im, node, bias, a, b, beta=1, alpha=1):
    dt = im.result_dtype()
    y = im.op(g.MatMulOp, [a, b])
    if alpha != 1:
        y = im.op(g.MulOp, [y, im.scalar(alpha, dt)])
    if beta != 1:
        bias = im.op(g.MulOp, [bias, im.scalar(beta, dt)])
    return im.op(g.AddOp, [y, bias])


@aten("aten.convolution.default")
def _convolution(im, node, x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    spatial = len(w.type.get_shape()) - 2
    pads = list(padding) * 2 if len(padding) == spatial else None
    if pads is None:
        raise im.error(f"padding {padding} for {spatial} spatial dims is not supported")
    attrs = {"pads": pads, "strides": list(stride), "dilations": list(dilation), "group": int(groups)}
    ins = [x, w] + ([b] if b is not None else [])
    if transposed:
        return im.op(g.ConvTransposeOp, ins, output_padding=list(output_padding), **attrs)
    return im.op(g.ConvOp, ins, **attrs)


@aten("aten.convolution_backward.default")
def _convolution_backward(im, node, grad, x, w, bias_sizes, stride, padding, dilation, transposed,
                          output_padding, groups, mask):
    """(grad_input, grad_weight, grad_bias) of a convolution, as mask asks: the input's as a
    transposed convolution of the gradient; the weight's as a convolution of the input (batch
    as channels) by the gradient, stride and dilation swapped; the bias's as a sum."""
    if transposed or groups != 1:
        raise im.error("the gradient of a transposed or grouped convolution is not supported")
    spatial = len(w.type.get_shape()) - 2
    rank = spatial + 2
    s, p, d = list(stride), list(padding), list(dilation)
    k = list(w.type.get_shape()[2:])
    g_sp, x_sp = list(grad.type.get_shape()[2:]), list(x.type.get_shape()[2:])
    outs: list[Any] = [None, None, None]
    if mask[0]:
        extra = [x_sp[i] - ((g_sp[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + 1) for i in range(spatial)]
        outs[0] = im.op(g.ConvTransposeOp, [grad, w], pads=p * 2, strides=s, dilations=d, group=1,
                        output_padding=extra)
    if mask[1]:
        swap = [1, 0] + list(range(2, rank))
        xt = im.op(g.TransposeOp, [x], perm=swap)
        gt = im.op(g.TransposeOp, [grad], perm=swap)
        r = im.op(g.ConvOp, [xt, gt], pads=p * 2, strides=d, dilations=s, group=1)
        if list(r.type.get_shape()[2:]) != k:
            axes = list(range(2, rank))
            r = im.op(g.SliceOp, [r, im.ints([0] * spatial), im.ints(k), im.ints(axes), im.ints([1] * spatial)])
        outs[1] = im.op(g.TransposeOp, [r], perm=swap)
    if mask[2]:
        outs[2] = im.op(g.ReduceSumOp, [grad], axes=[0] + list(range(2, rank)), keepdims=0)
    return tuple(outs)


@aten("aten._scaled_dot_product_flash_attention_for_cpu_backward.default")
def _sdpa_backward(im, node, d_out, q, k, v, out, lse, dropout_p, is_causal, attn_mask=None, scale=None):
    """(grad_q, grad_k, grad_v) of scaled dot-product attention (what AOTAutograd keeps for
    training through F.scaled_dot_product_attention): dV = P^T dO, dS = P * (dO V^T -
    rowsum(dO * O)), dQ = scale dS K, dK = scale dS^T Q. P, the probabilities: core ATen's
    decomposition of the forward saves them in the log-sum-exp's place ([B, H, S, L]);
    from a real log-sum-exp ([B, H, S]) they are exp(scale q k^T + mask - lse), a boolean
    mask keeping its True keys, causal keys j <= query i."""
    if dropout_p:
        raise im.error("the gradient of attention with dropout is not supported")
    qs, ks = q.type.get_shape(), k.type.get_shape()
    if qs[1] != ks[1]:
        raise im.error(f"the gradient of grouped-query attention ({qs[1]} query heads, {ks[1]} kv heads) "
                       f"is not supported")
    dt = to_dtype(q.type.element_type)
    scale = 1.0 / math.sqrt(qs[-1]) if scale is None else float(scale)
    swap = [0, 1, 3, 2]
    if len(lse.type.get_shape()) == 4:
        p = im.cast(lse, dt)
    else:
        s = im.op(g.MulOp, [im.op(g.MatMulOp, [q, im.op(g.TransposeOp, [k], perm=swap)]), im.scalar(scale, dt)])
        if attn_mask is not None:
            if to_dtype(attn_mask.type.element_type) == np.bool_:
                attn_mask = im.op(g.WhereOp, [attn_mask, im.scalar(0, dt), im.scalar(-np.inf, dt)])
            s = im.op(g.AddOp, [s, attn_mask])
        if is_causal:
            band = np.where(np.tril(np.ones((qs[2], ks[2]), bool)), 0, -np.inf).astype(dt)
            s = im.op(g.AddOp, [s, im.constant(band)])
        lse4 = im.op(g.UnsqueezeOp, [im.cast(lse, dt)], axes=[3])
        p = im.op(g.ExpOp, [im.op(g.SubOp, [s, lse4])])
    dv = im.op(g.MatMulOp, [im.op(g.TransposeOp, [p], perm=swap), d_out])
    dp = im.op(g.MatMulOp, [d_out, im.op(g.TransposeOp, [v], perm=swap)])
    rows = im.op(g.ReduceSumOp, [im.op(g.MulOp, [d_out, out])], axes=[3], keepdims=1)
    ds = im.op(g.MulOp, [im.op(g.MulOp, [p, im.op(g.SubOp, [dp, rows])]), im.scalar(scale, dt)])
    dq = im.op(g.MatMulOp, [ds, k])
    dk = im.op(g.MatMulOp, [im.op(g.TransposeOp, [ds], perm=swap), q])
    return dq, dk, dv


def _window(kernel, stride, padding, dilation, spatial: int) -> dict[str, Any]:
    def n(v, default):
        v = list(v) if isinstance(v, list | tuple) and v else ([v] if isinstance(v, int) else default)
        return v * spatial if len(v) == 1 else v
    k = n(kernel, None)
    return {"kernel_shape": k, "strides": n(stride, k), "pads": n(padding, [0]) * 2, "dilations": n(dilation, [1])}


@aten("aten.max_pool2d_with_indices.default", "aten.max_pool2d.default")
def _max_pool(im, node, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    attrs = _window(kernel, stride, padding, dilation, 2)
    out = im.op(g.MaxPoolOp, [x], ceil_mode=int(ceil_mode), **attrs)
    return (out, None) if "indices" in str(node.target) else out


@aten("aten.avg_pool2d.default")
def _avg_pool(im, node, x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None):
    if divisor_override is not None:
        raise im.error("avg_pool2d with divisor_override is not supported")
    attrs = _window(kernel, stride, padding, 1, 2)
    attrs.pop("dilations")
    return im.op(g.AvgPoolOp, [x], ceil_mode=int(ceil_mode), count_include_pad=int(count_include_pad), **attrs)


@aten("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default")
def _adaptive_avg_pool(im, node, x, output_size):
    h, w = x.type.get_shape()[2:]
    oh, ow = output_size
    if (oh, ow) == (1, 1):  # as torch decomposes it: a mean over the spatial dims
        return im.op(g.ReduceMeanOp, [x], axes=[2, 3], keepdims=1)
    if h % oh or w % ow:
        raise im.error(f"adaptive_avg_pool2d from {h}x{w} to {oh}x{ow} (not a divisor) is not supported")
    k = [h // oh, w // ow]
    return im.op(g.AvgPoolOp, [x], kernel_shape=k, strides=k, pads=[0, 0, 0, 0])


@aten("aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default")
def _upsample_nearest(im, node, x, *_args, **_kwargs):
    return im.op(g.ResizeOp, [x], **_resize(x, im.shape()), mode="nearest",
                 coordinate_transformation_mode="asymmetric", nearest_mode="floor")


@aten("aten.upsample_bilinear2d.vec", "aten.upsample_bilinear2d.default")
def _upsample_bilinear(im, node, x, output_size, align_corners, *_args, **_kwargs):
    mode = "align_corners" if align_corners else "pytorch_half_pixel"
    return im.op(g.ResizeOp, [x], **_resize(x, im.shape()), mode="linear", coordinate_transformation_mode=mode)


def _resize(x: SSAValue, out: tuple[int, ...]) -> dict[str, Any]:
    """Resize's sizes and scales (output / input per axis: torch's output_size rule)."""
    return {"sizes": list(out), "scales": [o / i for o, i in zip(out, x.type.get_shape())]}
