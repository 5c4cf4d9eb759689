"""A `torch.export.ExportedProgram` into the graph dialect, as exported when it can be.

    from geir.frontend.fx_export import import_exported
    module = import_exported(torch.export.export(model.eval(), example_inputs))

torch.export's graph keeps the composite ops a model calls (`aten.linear`, `aten.conv2d`,
`aten.batch_norm`, `aten.scaled_dot_product_attention`, in-place `aten.relu_`, ...). Core ATen
decomposes them, but `ExportedProgram.run_decompositions()` is a second trace of the whole
program: 0.2-0.4 s of a suite model's 0.3-0.6 s capture, the largest part of the FX path's
compile time (bench/torch_frontend.py). So a program whose every op has a converter - the
core-ATen ones of frontend/fx.py and the composite ones below - imports as exported, and the
others are decomposed first: an op without a converter here, training-mode batch norm or
dropout, grouped-query attention, an in-place op on a tensor that has views, a program that
mutates its inputs or buffers. Each composite converter builds what torch's decomposition of
the op would, in the form graph-simplify leaves it (a linear is a matmul by the transposed
weight plus the bias, of a 2-d input one graph.gemm, as ONNX writes them), so both roads give
the same kernels, and `decompose=True` takes the second one always.

`import_traced` imports the same graph traced without torch.export's program around it
(driver/model_import.py `trace_module`, what geir.compile does with a module): as it is, or
not at all, leaving that module to torch.export and `import_exported`.
"""

from __future__ import annotations

import logging
import math
import operator
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from geir.dialects import graph as g
from geir.frontend.fx import (ATEN, FxImporter, FxImportError, aten, decompositions, import_aten_graph,
                              size_node, target_name)
from geir.ir.types import to_dtype


_log = logging.getLogger("geir.torch")


class NeedsDecomposition(Exception):
    """A composite op this importer does not take as it is (training-mode batch norm, ...):
    the program is imported through torch's decomposition instead."""


def import_exported(ep: Any, *, weights: bool = True, name: str = "main", decompose: bool = False,
                    verify: bool = True, fold_batch_norm: bool = False, sizes: Mapping[Any, int] | None = None):
    """The verified (`verify`, `fold_batch_norm`: as import_aten_graph's) graph-dialect module
    of a `torch.export.ExportedProgram`: parameters,
    buffers and lifted constants become constants, user inputs the function's arguments (named
    as the program names them), user outputs its results. Imported as exported when every op
    has a converter (see the module doc), else - or with `decompose=True` - decomposed to core
    ATen first; the "geir.torch" logger says which, and why (DEBUG). `sizes`: the program's
    symbolic dims (torch.export.Dim's sympy symbols) at the sizes to compile."""
    why = "decompose=True" if decompose else _why_not_as_exported(ep)
    if why is None:
        try:
            module = _import_program(ep, weights, name, verify, fold_batch_norm, sizes)
            _log.debug("imported the program as exported")
            return module
        except NeedsDecomposition as e:
            why = str(e)
        except (FxImportError, TypeError) as e:  # a converter's limit; TypeError: an argument spelled
            why = str(e)                          # as torch's schema allows but the converter does not
    _log.debug("decomposing the program to core ATen first: %s", why)
    try:
        with warnings.catch_warnings():  # torch's deprecation notes about its own internals
            warnings.simplefilter("ignore", FutureWarning)
            from torch.export import default_decompositions

            ep = ep.run_decompositions(decompositions(default_decompositions()))
    except Exception as e:  # torch's own decomposition failing: say so, not a traceback
        raise FxImportError(f"torch could not decompose the program to core ATen: {e}") from None
    return _import_program(ep, weights, name, verify, fold_batch_norm, sizes)


def import_traced(gm: Any, inputs: dict[int, str], constants: dict[int, tuple[str, Any]], *,
                  weights: bool = True, name: str = "main", verify: bool = True, fold_batch_norm: bool = False):
    """The module of a graph traced from a torch.nn.Module (driver/model_import.py
    `trace_module`: torch.export's graph without its program), imported as exported (and
    verified, as `import_exported`'s `verify` says); None
    where it needs torch.export's program and its decomposition instead (an op without a
    converter, a tensor attribute torch.export would lift, an input or buffer the forward
    mutates: the in-place converters refuse a graph input), with the reason logged (DEBUG)."""
    why = _unconverted(gm.graph)
    if why is None and any(n.op == "get_attr" for n in gm.graph.nodes):
        why = "the forward reads a tensor attribute"
    if why is None:
        try:
            module = import_aten_graph(gm, inputs, constants, weights=weights, name=name, verify=verify,
                                       fold_batch_norm=fold_batch_norm)
            _log.debug("imported the traced graph as it is")
            return module
        except (NeedsDecomposition, FxImportError, TypeError) as e:  # as import_exported's
            why = str(e)
    _log.debug("capturing the module with torch.export instead: %s", why)
    return None


def _why_not_as_exported(ep: Any) -> str | None:
    sig = ep.graph_signature
    if sig.buffers_to_mutate or sig.user_inputs_to_mutate:
        return "the program mutates its inputs or buffers"
    return _unconverted(ep.graph)


def _unconverted(graph: Any) -> str | None:
    for n in graph.nodes:
        if n.op == "call_function" and n.target is not operator.getitem and _name(n) not in ATEN and not size_node(n):
            return f"node '{n.name}' ({_name(n)}) has no converter"
    return None


def _import_program(ep: Any, weights: bool, name: str, verify: bool = True, fold_batch_norm: bool = False,
                    sizes: Mapping[Any, int] | None = None):
    from torch.export.graph_signature import InputKind

    inputs: dict[int, str] = {}
    constants: dict[int, tuple[str, Any]] = {}
    state = {**ep.state_dict, **ep.constants}
    for i, spec in enumerate(ep.graph_signature.input_specs):
        if spec.kind == InputKind.USER_INPUT:
            inputs[i] = spec.arg.name
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            constants[i] = (spec.target, state[spec.target])
        else:
            raise FxImportError(f"exported input '{spec.arg.name}' of kind {spec.kind.name} is not supported")
    return import_aten_graph(ep.graph_module, inputs, constants, weights=weights, name=name, verify=verify,
                             fold_batch_norm=fold_batch_norm, sizes=sizes)


def _name(node: Any) -> str:
    return target_name(node.target)


def _core(name: str):
    """The core-ATen converter a composite op's conversion reuses."""
    return ATEN[f"aten.{name}"]


def _int_list(v: Any, n: int) -> list[int]:
    return [int(x) for x in v] * (n if len(v) == 1 else 1) if isinstance(v, list | tuple) else [int(v)] * n


# ---------------------------------------------------------------------------
# Layers
# ---------------------------------------------------------------------------


def _convolution(im: FxImporter, node, x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    if isinstance(padding, str):  # torch's decomposition works the pads out
        raise NeedsDecomposition(f"node '{node.name}': padding '{padding}'")
    n = len(w.type.get_shape()) - 2
    return _core("convolution.default")(im, node, x, w, b, _int_list(stride, n), _int_list(padding, n),
                                        _int_list(dilation, n), transposed, _int_list(output_padding, n), int(groups))


def _conv(im: FxImporter, node, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _convolution(im, node, input, weight, bias, stride, padding, dilation, False, 0, groups)


def _conv_transpose(im: FxImporter, node, input, weight, bias=None, stride=1, padding=0, output_padding=0,
                    groups=1, dilation=1):
    return _convolution(im, node, input, weight, bias, stride, padding, dilation, True, output_padding, groups)


for _n in (1, 2, 3):
    aten(f"aten.conv{_n}d.default")(_conv)
    aten(f"aten.conv_transpose{_n}d.input")(_conv_transpose)


@aten("aten.linear.default")
def _linear(im: FxImporter, node, x, w, b=None):
    """As torch's ONNX exporter writes it: of a 2-d x one gemm with the weight transposed
    (trans_b); else x times the transposed weight over its leading dims, plus the bias - what
    graph-canonicalize makes of torch's decomposition (x flattened to 2-d, the product, the
    bias, the view back), without the rewrites."""
    if len(x.type.get_shape()) == 2:
        return im.op(g.GemmOp, [x, w] + ([b] if b is not None else []), trans_b=1)
    y = im.op(g.MatMulOp, [x, im.op(g.TransposeOp, [w], perm=[1, 0])])
    return im.op(g.AddOp, [y, b]) if b is not None else y


@aten("aten.batch_norm.default")
def _batch_norm(im: FxImporter, node, x, w, b, mean, var, training, momentum, eps, cudnn_enabled=True):
    if training or mean is None or var is None:  # batch statistics: torch's functional form
        raise NeedsDecomposition(f"node '{node.name}': batch norm with batch statistics")
    return _core("_native_batch_norm_legit_no_training.default")(im, node, x, w, b, mean, var, momentum, eps)[0]


@aten("aten.layer_norm.default")
def _layer_norm(im: FxImporter, node, x, shape, w=None, b=None, eps=1e-5, cudnn_enable=True):
    return _core("native_layer_norm.default")(im, node, x, shape, w, b, eps)[0]


@aten("aten.dropout.default", "aten.feature_dropout.default")
def _dropout(im: FxImporter, node, x, p, train):
    if train and p > 0:
        raise NeedsDecomposition(f"node '{node.name}': dropout in training")
    return x


@aten("aten.softmax.int", "aten.log_softmax.int")
def _softmax(im: FxImporter, node, x, dim, dtype=None):
    x = im.cast(x, im.result_dtype())  # `dtype`: computed in it
    core = "_log_softmax.default" if "log" in _name(node) else "_softmax.default"
    return _core(core)(im, node, x, dim)


@aten("aten.to.dtype", "aten.to.dtype_layout", "aten.type_as.default")
def _to(im: FxImporter, node, x, *args, **kwargs):
    return im.cast(x, im.result_dtype())


aten("aten.unflatten.int")(_core("view.default"))


@aten("aten.chunk.default")
def _chunk(im: FxImporter, node, x, chunks, dim=0):
    n = x.type.get_shape()[dim]
    return _core("split.Tensor")(im, node, x, math.ceil(n / chunks), dim)


@aten("aten.masked_fill.Scalar")
def _masked_fill(im: FxImporter, node, x, mask, value):
    return _core("where.self")(im, node, mask, value, x)


# ---------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------


@aten("aten.scaled_dot_product_attention.default")
def _sdpa(im: FxImporter, node, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
          enable_gqa=False):
    """torch's math form: (q sqrt(s)) (k^T sqrt(s)) plus the mask (a boolean one as 0 / -inf,
    a causal one lower-triangular), a safe softmax (a fully masked row gives 0), times v."""
    qs, ks = q.type.get_shape(), k.type.get_shape()
    if dropout_p > 0 or enable_gqa or len(qs) != len(ks) or qs[:-2] != ks[:-2]:
        raise NeedsDecomposition(f"node '{node.name}': attention with dropout or grouped-query heads")
    dt = to_dtype(q.type.element_type)
    s = math.sqrt(1 / math.sqrt(qs[-1]) if scale is None else scale)
    rank = len(qs)
    kt = im.op(g.TransposeOp, [k], perm=[*range(rank - 2), rank - 1, rank - 2])
    scores = im.op(g.MatMulOp, [im.op(g.MulOp, [q, im.scalar(s, dt)]), im.op(g.MulOp, [kt, im.scalar(s, dt)])])
    if is_causal:
        attn_mask = im.constant(np.tril(np.ones((qs[-2], ks[-2]), np.bool_)))
    if attn_mask is not None:
        if to_dtype(attn_mask.type.element_type) == np.bool_:
            attn_mask = im.op(g.WhereOp, [attn_mask, im.scalar(0.0, dt), im.scalar(-np.inf, dt)])
        scores = im.op(g.AddOp, [scores, im.cast(attn_mask, dt)])
    probs = im.op(g.SafeSoftmaxOp, [scores], axis=rank - 1)
    return im.op(g.MatMulOp, [probs, v])


# ---------------------------------------------------------------------------
# In-place ops: the functional op's value, which the mutated tensor's later uses read
# ---------------------------------------------------------------------------

ALIASING = frozenset(f"aten.{op}" for op in (
    "view.default", "reshape.default", "flatten.using_ints", "unflatten.int", "permute.default", "t.default",
    "transpose.int", "expand.default", "expand_as.default", "slice.Tensor", "select.int", "narrow.default",
    "unsqueeze.default", "squeeze.dim", "squeeze.dims", "squeeze.default", "alias.default", "detach.default",
    "contiguous.default", "to.dtype", "to.dtype_layout", "type_as.default", "dropout.default",
    "feature_dropout.default", "split.Tensor", "split_with_sizes.default", "chunk.default", "unbind.int",
    "view_as.default", "as_strided.default", "diagonal.default", "movedim.int"))
"""Ops whose result may share its input's storage: an in-place op on either side of one would
change the other, which a value-per-node import does not see (so such a program is decomposed)."""

INPLACE = ("relu_.default", "sigmoid_.default", "tanh_.default", "silu_.default", "gelu_.default",
           "hardswish_.default", "hardsigmoid_.default", "hardtanh_.default", "leaky_relu_.default",
           "clamp_.default", "add_.Tensor", "sub_.Tensor", "mul_.Tensor", "div_.Tensor")
"""In-place ATen ops torch.export keeps (`nn.ReLU(inplace=True)`, `x += y`), by overload."""


def _inplace(functional: str):
    def convert(im: FxImporter, node, x, *args, **kwargs):
        target = node.args[0]
        if target.op == "placeholder":
            raise NeedsDecomposition(f"node '{node.name}': an in-place op on a program input, parameter or buffer")
        if not _owns_its_storage(target, node):
            raise NeedsDecomposition(f"node '{node.name}': an in-place op on a tensor that has views")
        value = ATEN[functional](im, node, x, *args, **kwargs)
        # torch.export's tracer already points every later use of the tensor at this node (its
        # newest name); the target is rebound too, for a graph whose later uses name the target
        im.env[target] = value
        return value
    return convert


def _owns_its_storage(target: Any, node: Any) -> bool:
    """`target` (the mutated node) is a fresh tensor no other node views."""
    if target.op != "call_function" or target.target is operator.getitem or _name(target) in ALIASING:
        return False
    return not any(_name(u) in ALIASING for u in target.users if u is not node)


for _op in INPLACE:
    _base, _overload = _op.split(".")
    aten(f"aten.{_op}")(_inplace(f"aten.{_base.removesuffix('_')}.{_overload}"))
