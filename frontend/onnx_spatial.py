"""The ONNX spatial operators: Resize and Upsample into graph.resize (docs/onnx.md).

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


SPATIAL_CONVERTERS = {
    "Resize": _resize,
    "Upsample": _upsample,
}
