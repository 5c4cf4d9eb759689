"""The ONNX spatial operators: Resize and Upsample into graph.resize; CenterCropPad, LpPool,
LpNormalization, MeanVarianceNormalization and GroupNormalization decomposed into the graph
ops their definitions spell out (docs/graph.md, "Spatial ops").

Resize's sizes or scales (and roi) must be known at import: constants, or graph inputs frozen
to a value; its `axes` and `keep_aspect_ratio_policy` are resolved here into a scale and an
output size for every axis, computed as onnx's reference does (a size from scales is
floor(scale * size); a scale from sizes is their ratio in float64). Opset 10 and Upsample are
the asymmetric transformation with nearest rounding down (an integer upsampling factor:
each pixel repeated); opset 10 nearest downsampling, whose rounding that opset does not
define, is rejected.

Converters take the importer (frontend/onnx.py) and use its public methods only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geir.dialects import graph as g

_RESIZE_ATTRS = {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                 "extrapolation_value", "antialias", "axes", "keep_aspect_ratio_policy"}


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def _known(im, value, what: str) -> np.ndarray | None:
    """An optional input's value (None when absent or empty); a runtime value is an error."""
    if value is None:
        return None
    array = im.require_const(value, what)
    return None if array.size == 0 else np.asarray(array)


def _resize_plan(im, shape: list[int], scales, sizes, axes, policy: str) -> tuple[list[float], list[int]]:
    """Every axis's scale and output size, as onnx's reference computes them."""
    rank = len(shape)
    if axes is None:
        axes = list(range(rank))
    axes = [int(a) + rank if int(a) < 0 else int(a) for a in axes]
    if len(set(axes)) != len(axes) or any(not 0 <= a < rank for a in axes):
        raise im.error(f"axes {axes} must be distinct axes of the rank-{rank} input")
    if (scales is None) == (sizes is None):
        raise im.error("exactly one of scales and sizes must be given")
    given = scales if scales is not None else sizes
    if given.ndim != 1 or given.size != len(axes):
        raise im.error(f"{'scales' if scales is not None else 'sizes'} has {given.size} values for {len(axes)} axes")
    if scales is not None:
        full = [1.0] * rank
        for i, a in enumerate(axes):
            full[a] = float(np.float32(scales[i]))
        if any(not s > 0 for s in full):
            raise im.error(f"scales {[float(s) for s in scales]} must be positive")
        out = (np.array(full, np.float64) * np.array(shape)).astype(np.int64)
        return full, [int(n) for n in out]
    out = list(shape)
    for i, a in enumerate(axes):
        out[a] = int(sizes[i])
    if any(n <= 0 for n in out) or any(n == 0 for n in shape):
        raise im.error(f"sizes {[int(s) for s in sizes]} and the input's shape {shape} must be positive")
    full = [out[i] / shape[i] for i in range(rank)]
    if policy != "stretch":
        pick = {"not_larger": min, "not_smaller": max}.get(policy)
        if pick is None:
            raise im.error(f"keep_aspect_ratio_policy '{policy}' is not stretch, not_larger or not_smaller")
        scale = pick(full[a] for a in axes)
        full = [scale if i in axes else 1.0 for i in range(rank)]
        out = [int(scale * shape[i] + 0.5) if i in axes else shape[i] for i in range(rank)]
    return full, out


def _resize(im, ins, attrs):
    unknown = sorted(set(attrs) - _RESIZE_ATTRS)
    if unknown:
        raise im.error(f"attribute(s) {unknown} are not supported")
    x = ins[0]
    shape = list(x.type.get_shape())
    a = {k: _text(v) for k, v in attrs.items()}
    mode = a.get("mode", "nearest")
    if im.opset < 11:
        scales = _known(im, ins[1] if len(ins) > 1 else None, "scales")
        sizes, roi = None, None
        a.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    else:
        ins = list(ins) + [None] * (4 - len(ins))
        roi = _known(im, ins[1], "roi")
        scales = _known(im, ins[2], "scales")
        sizes = _known(im, ins[3], "sizes")
    if mode not in g.RESIZE_MODES or (im.opset < 11 and mode == "cubic"):
        raise im.error(f"mode '{mode}' is not nearest, linear or cubic (cubic from opset 11)")
    axes = a.pop("axes", None)
    full, out = _resize_plan(im, shape, scales, sizes, axes, a.pop("keep_aspect_ratio_policy", "stretch"))
    if im.opset < 11 and mode == "nearest" and any(s < 1 for s in full):
        raise im.error("nearest downsampling at opset 10 rounds as each runtime chooses; "
                       "re-export at opset 11 or later, which names the rounding (nearest_mode)")
    ctm = a.get("coordinate_transformation_mode", "half_pixel")
    kwargs: dict[str, Any] = {k: v for k, v in a.items() if k in g.ResizeOp.ATTRS}
    if ctm == "tf_crop_and_resize":
        rank = len(shape)
        if roi is None:
            raise im.error("tf_crop_and_resize needs the roi input")
        names = list(range(rank)) if axes is None else [int(v) % rank for v in axes]
        if roi.size != 2 * len(names):
            raise im.error(f"roi has {roi.size} values; tf_crop_and_resize needs 2 per resized axis ({2 * len(names)})")
        full_roi = [0.0] * rank + [1.0] * rank
        for i, ax in enumerate(names):
            full_roi[ax], full_roi[rank + ax] = float(roi[i]), float(roi[len(names) + i])
        kwargs["roi"] = full_roi
    return im.build(g.ResizeOp, [x], sizes=out, scales=full, **kwargs)


def _upsample(im, ins, attrs):
    a = {k: _text(v) for k, v in attrs.items()}
    unknown = sorted(set(a) - {"mode", "scales"})
    if unknown:
        raise im.error(f"attribute(s) {unknown} are not supported")
    mode = a.get("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise im.error(f"mode '{mode}' is not nearest or linear")
    if "scales" in a:
        scales = np.asarray(a["scales"], np.float32)
    elif len(ins) > 1:
        scales = np.asarray(im.require_const(ins[1], "scales"), np.float32)
    else:
        raise im.error("Upsample needs scales")
    if any(not s >= 1 for s in scales.reshape(-1)):
        raise im.error(f"scales {scales.tolist()} must be >= 1 (Upsample only upsamples)")
    full, out = _resize_plan(im, list(ins[0].type.get_shape()), scales.reshape(-1), None, None, "stretch")
    return im.build(g.ResizeOp, [ins[0]], sizes=out, scales=full, mode=mode,
                    coordinate_transformation_mode="asymmetric", nearest_mode="floor")


def _scalar(im, value: float, like) -> Any:
    from geir.ir.types import to_dtype

    return im.constant(np.array(value, to_dtype(like.type.element_type)))


def _only(im, attrs, allowed: set[str]) -> dict[str, Any]:
    unknown = sorted(set(attrs) - allowed)
    if unknown:
        raise im.error(f"attribute(s) {unknown} are not supported")
    return {k: _text(v) for k, v in attrs.items()}


def _center_crop_pad(im, ins, attrs):
    """Per axis: a centred slice when the target is smaller, a centred zero pad when larger."""
    a = _only(im, attrs, {"axes"})
    x = ins[0]
    shape = list(x.type.get_shape())
    rank = len(shape)
    target = [int(v) for v in np.asarray(im.require_const(ins[1], "shape")).reshape(-1)]
    axes = [int(v) % rank for v in a.get("axes", range(rank))]
    if len(target) != len(axes) or len(set(axes)) != len(axes):
        raise im.error(f"shape {target} must give one size for each of the distinct axes {axes}")
    if any(t < 0 for t in target):
        raise im.error(f"shape {target} must not be negative")
    crop = [(ax, (shape[ax] - t) // 2, t) for ax, t in zip(axes, target) if t < shape[ax]]
    pad = [(ax, (t - shape[ax]) // 2, t - shape[ax] - (t - shape[ax]) // 2) for ax, t in zip(axes, target) if t > shape[ax]]
    if not crop and not pad:
        return im.build(g.IdentityOp, [x])
    value = x
    if crop:
        ints = lambda v: im.constant(np.array(v, np.int64))  # noqa: E731
        args = [ints([c[1] for c in crop]), ints([c[1] + c[2] for c in crop]), ints([c[0] for c in crop])]
        if not pad:
            return im.build(g.SliceOp, [value, *args])
        value = im.op(g.SliceOp, [value, *args])
    pads = [0] * (2 * rank)
    for ax, before, after in pad:
        pads[ax], pads[rank + ax] = before, after
    return im.build(g.PadOp, [value, im.constant(np.array(pads, np.int64))], mode="constant")


def _lp_normalization(im, ins, attrs):
    """x / norm, 0 where the norm is 0 (L1: sum |x|, L2: sqrt(sum x^2) along axis)."""
    a = _only(im, attrs, {"axis", "p"})
    x = ins[0]
    p = int(a.get("p", 2))
    if p not in (1, 2):
        raise im.error(f"p = {p}: LpNormalization takes p 1 or 2")
    axis = int(a.get("axis", -1))
    norm = im.op(g.ReduceL1Op if p == 1 else g.ReduceL2Op, [x], axes=(axis,), keepdims=1)
    zero = _scalar(im, 0.0, x)
    return im.build(g.WhereOp, [im.op(g.EqualOp, [norm, zero]), zero, im.op(g.DivOp, [x, norm])])


def _lp_pool(im, ins, attrs):
    """(sum over the window of |x|^p)^(1/p): an average pool of |x|^p counting the (zero)
    padding, times the window's size, as onnx's reference computes it."""
    _only(im, attrs, {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "p", "pads", "strides"})
    x = ins[0]
    p = int(attrs.get("p", 2))
    if p < 1:
        raise im.error(f"p = {p} must be >= 1")
    pool = im.pool_attrs(g.AvgPoolOp, {k: v for k, v in attrs.items() if k != "p"}, x)
    pool["count_include_pad"] = 1
    powered = im.op(g.AbsOp, [x]) if p == 1 else (
        im.op(g.MulOp, [x, x]) if p == 2 else im.op(g.PowOp, [im.op(g.AbsOp, [x]), _scalar(im, float(p), x)]))
    avg = im.op(g.AvgPoolOp, [powered], **pool)
    total = im.op(g.MulOp, [avg, _scalar(im, float(np.prod(pool["kernel_shape"])), x)])
    if p == 1:
        return im.build(g.IdentityOp, [total])
    if p == 2:
        return im.build(g.SqrtOp, [total])
    return im.build(g.PowOp, [total, _scalar(im, 1.0 / p, x)])


def _mean_variance_normalization(im, ins, attrs):
    """(x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9), its function body's order."""
    a = _only(im, attrs, {"axes"})
    x = ins[0]
    axes = tuple(int(v) for v in a.get("axes", (0, 2, 3)))
    mean = im.op(g.ReduceMeanOp, [x], axes=axes, keepdims=1)
    mean_sq = im.op(g.ReduceMeanOp, [im.op(g.MulOp, [x, x])], axes=axes, keepdims=1)
    var = im.op(g.SubOp, [mean_sq, im.op(g.MulOp, [mean, mean])])
    std = im.op(g.AddOp, [im.op(g.SqrtOp, [var]), _scalar(im, 1e-9, x)])
    return im.build(g.DivOp, [im.op(g.SubOp, [x, mean]), std])


def _group_normalization(im, ins, attrs):
    """x [N, C, ...] seen as [N, G, C/G * ...] is instance-normalised (unit scale, zero bias),
    seen back, then scaled and shifted per channel (opset 18: per group, repeated over the
    group's channels)."""
    a = _only(im, attrs, {"epsilon", "num_groups", "stash_type"})
    x, scale, bias = ins[:3]
    shape = list(x.type.get_shape())
    if len(shape) < 3:
        raise im.error(f"input of shape {shape}: GroupNormalization needs rank >= 3")
    groups = int(a["num_groups"]) if "num_groups" in a else 0
    n, c = shape[0], shape[1]
    if groups < 1 or c % groups:
        raise im.error(f"num_groups {groups} must divide the {c} channels")
    if int(a.get("stash_type", 1)) != 1:
        raise im.error("stash_type other than 1 (float32 statistics) is not supported")
    from geir.ir.types import to_dtype

    dt = to_dtype(x.type.element_type)
    flat = im.op(g.ReshapeOp, [x, im.constant(np.array([n, groups, -1], np.int64))])
    normed = im.op(g.InstanceNormOp, [flat, im.constant(np.ones(groups, dt)), im.constant(np.zeros(groups, dt))],
                   epsilon=float(a.get("epsilon", 1e-5)))
    normed = im.op(g.ReshapeOp, [normed, im.constant(np.array(shape, np.int64))])
    per = [1, c] + [1] * (len(shape) - 2)

    def channel(v, what):
        size = v.type.get_shape()
        if im.opset >= 21 and list(size) == [c]:
            pass
        elif im.opset < 21 and list(size) == [groups]:
            known = im.const_value(v)
            if known is not None:
                v = im.constant(np.repeat(np.asarray(known), c // groups))
            else:
                v = im.op(g.ExpandOp, [im.op(g.ReshapeOp, [v, im.constant(np.array([groups, 1], np.int64))]),
                                       im.constant(np.array([groups, c // groups], np.int64))])
        else:
            want = f"[{groups}] (one per group)" if im.opset < 21 else f"[{c}] (one per channel)"
            raise im.error(f"{what} has shape {list(size)}; at opset {im.opset} it must be {want}")
        return im.op(g.ReshapeOp, [v, im.constant(np.array(per, np.int64))])

    return im.build(g.AddOp, [im.op(g.MulOp, [normed, channel(scale, "scale")]), channel(bias, "bias")])


def _grid_sample(im, ins, attrs):
    a = _only(im, attrs, {"mode", "padding_mode", "align_corners"})
    mode = a.get("mode", "bilinear" if im.opset < 20 else "linear")
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode) if im.opset < 20 else mode
    if mode not in g.RESIZE_MODES:
        raise im.error(f"mode '{mode}' is not supported")
    if len(ins) != 2 or any(v is None for v in ins):
        raise im.error("GridSample takes X and grid")
    return im.build(g.GridSampleOp, list(ins), mode=mode, padding_mode=a.get("padding_mode", "zeros"),
                    align_corners=int(a.get("align_corners", 0)))


def _affine_grid(im, ins, attrs):
    """grid [N, D.., r] = base [P, r + 1] @ theta^T, the base grid the constant homogeneous
    coordinates (x first) of every output position: pixel centres, or corners with
    align_corners."""
    a = _only(im, attrs, {"align_corners"})
    theta = ins[0]
    size = [int(v) for v in np.asarray(im.require_const(ins[1], "size")).reshape(-1)]
    spatial = size[2:]
    r = len(spatial)
    n = theta.type.get_shape()[0]
    if r not in (2, 3) or list(theta.type.get_shape()) != [n, r, r + 1] or size[0] != n:
        raise im.error(f"theta {list(theta.type.get_shape())} and size {size}: need [N, 2, 3] with "
                       f"[N, C, H, W] or [N, 3, 4] with [N, C, D, H, W]")
    align = int(a.get("align_corners", 0))
    axes = []
    for d in spatial:
        if align:
            axes.append(np.linspace(-1.0, 1.0, d) if d > 1 else np.array([-1.0]))
        else:
            axes.append((np.arange(d) * 2.0 + 1.0) / d - 1.0)
    mesh = np.meshgrid(*axes, indexing="ij")  # one array per spatial dim, D first
    from geir.ir.types import to_dtype

    base = np.stack([m.reshape(-1) for m in reversed(mesh)] + [np.ones(int(np.prod(spatial)))], axis=1)
    base_c = im.constant(base.astype(to_dtype(theta.type.element_type)))
    theta_t = im.op(g.TransposeOp, [theta], perm=(0, 2, 1))
    flat = im.op(g.MatMulOp, [base_c, theta_t])
    return im.build(g.ReshapeOp, [flat, im.constant(np.array([n, *spatial, r], np.int64))])


def _max_unpool(im, ins, attrs):
    a = _only(im, attrs, {"kernel_shape", "strides", "pads"})
    kw: dict[str, Any] = {"kernel_shape": tuple(a["kernel_shape"])} if "kernel_shape" in a else {}
    if not kw:
        raise im.error("kernel_shape is required")
    for key in ("strides", "pads"):
        if key in a:
            kw[key] = tuple(a[key])
    if len(ins) > 2 and ins[2] is not None:
        kw["output_shape"] = tuple(int(v) for v in np.asarray(im.require_const(ins[2], "output_shape")).reshape(-1))
    return im.build(g.MaxUnpoolOp, list(ins[:2]), **kw)


def _col2im(im, ins, attrs):
    a = _only(im, attrs, {"strides", "pads", "dilations"})
    image = tuple(int(v) for v in np.asarray(im.require_const(ins[1], "image_shape")).reshape(-1))
    block = tuple(int(v) for v in np.asarray(im.require_const(ins[2], "block_shape")).reshape(-1))
    return im.build(g.Col2ImOp, [ins[0]], image_shape=image, block_shape=block,
                    **{k: tuple(v) for k, v in a.items()})


def _roi_align(im, ins, attrs):
    a = _only(im, attrs, {"mode", "output_height", "output_width", "sampling_ratio", "spatial_scale",
                          "coordinate_transformation_mode"})
    if im.opset < 16:
        a.setdefault("coordinate_transformation_mode", "output_half_pixel")  # RoiAlign-10's only mode
    return im.build(g.RoiAlignOp, list(ins[:3]), **a)


def _deform_conv(im, ins, attrs):
    a = _only(im, attrs, {"dilations", "group", "kernel_shape", "offset_group", "pads", "strides"})
    ins = list(ins) + [None] * (5 - len(ins))
    x, w, offset, b, mask = ins[:5]
    wshape = list(w.type.get_shape())
    if len(wshape) != 4:
        raise im.error(f"weight of shape {wshape}: only 2-d DeformConv is supported")
    if "kernel_shape" in a and list(a["kernel_shape"]) != wshape[2:]:
        raise im.error(f"kernel_shape {list(a['kernel_shape'])} differs from the weight's {wshape[2:]}")
    if mask is not None and b is None:
        from geir.ir.types import to_dtype

        b = im.constant(np.zeros(wshape[0], to_dtype(x.type.element_type)))
    kw = {k: (tuple(v) if isinstance(v, list) else int(v)) for k, v in a.items() if k != "kernel_shape"}
    return im.build(g.DeformConvOp, [v for v in (x, w, offset, b, mask) if v is not None], **kw)


SPATIAL_CONVERTERS = {
    "DeformConv": _deform_conv,
    "RoiAlign": _roi_align,
    "MaxUnpool": _max_unpool,
    "Col2Im": _col2im,
    "AffineGrid": _affine_grid,
    "GridSample": _grid_sample,
    "CenterCropPad": _center_crop_pad,
    "LpNormalization": _lp_normalization,
    "LpPool": _lp_pool,
    "MeanVarianceNormalization": _mean_variance_normalization,
    "GroupNormalization": _group_normalization,
    "Resize": _resize,
    "Upsample": _upsample,
}
