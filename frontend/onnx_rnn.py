"""ONNX's recurrent layers - RNN, GRU, LSTM - unrolled over the sequence at import.

A device program is a fixed sequence of kernels, so the recurrence is written out step by
step in graph ops (as frontend/onnx_control_flow.py does for Scan): the input projection of
every step at once (one [seq * batch, input] x [input, gates * hidden] matmul for the cube),
then per step the recurrent matmul, the gates (slices of the step's pre-activations), their
activations and the state update, in each direction; Y stacks the steps' hidden states.
Gate orders and equations are ONNX's: RNN one gate; GRU z, r, h (`linear_before_reset`
selects where r applies); LSTM i, o, f, c with optional peepholes P (i, o, f). `clip` bounds
the gates' pre-activations (not the cell state LSTM's h reads, as onnxruntime does). `sequence_lens` must be a constant equal to the sequence length
for every batch entry (shorter sequences would need per-entry masking; an error), and LSTM's
`input_forget` must be 0.

Converters take the importer (frontend/onnx.py) and use its public methods only.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from geir.dialects import graph as g
from geir.frontend.onnx_control_flow import MAX_ITERATIONS, stack
from geir.ir.types import to_dtype

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_DEFAULT_ACTIVATIONS = {"RNN": ("Tanh",), "GRU": ("Sigmoid", "Tanh"), "LSTM": ("Sigmoid", "Tanh", "Tanh")}


def _activation(im, name: str, alpha: float | None, beta: float | None):
    """x -> activation(x) in graph ops, for ONNX's activation names."""

    def scalar(x: SSAValue, v: float) -> SSAValue:
        return im.constant(np.array(v, to_dtype(x.type.element_type)))

    def plain(cls, **attrs):
        return lambda x: im.op(cls, [x], **attrs)

    key = name.lower()
    if key == "tanh":
        return plain(g.TanhOp)
    if key == "sigmoid":
        return plain(g.SigmoidOp)
    if key == "relu":
        return plain(g.ReluOp)
    if key == "softsign":
        return plain(g.SoftsignOp)
    if key == "softplus":
        return plain(g.SoftplusOp)
    if key == "leakyrelu":
        return plain(g.LeakyReluOp, alpha=0.01 if alpha is None else alpha)
    if key == "thresholdedrelu":
        return plain(g.ThresholdedReluOp, alpha=1.0 if alpha is None else alpha)
    if key == "elu":
        return plain(g.EluOp, alpha=1.0 if alpha is None else alpha)
    if key == "hardsigmoid":
        return plain(g.HardSigmoidOp, alpha=0.2 if alpha is None else alpha, beta=0.5 if beta is None else beta)
    if key == "affine":
        return lambda x: im.op(g.AddOp, [im.op(g.MulOp, [x, scalar(x, 1.0 if alpha is None else alpha)]),
                                          scalar(x, 0.0 if beta is None else beta)])
    if key == "scaledtanh":
        return lambda x: im.op(g.MulOp, [im.op(g.TanhOp, [im.op(g.MulOp, [x, scalar(x, 1.0 if beta is None else beta)])]),
                                          scalar(x, 1.0 if alpha is None else alpha)])
    raise im.error(f"activation '{name}' is not supported")


def _slice_last(im, x: SSAValue, index: int, size: int) -> SSAValue:
    ints = lambda v: im.constant(np.array([v], np.int64))  # noqa: E731
    return im.op(g.SliceOp, [x, ints(index * size), ints((index + 1) * size), ints(-1)])


def _take(im, x: SSAValue, index: int, axis: int = 0) -> SSAValue:
    return im.op(g.GatherOp, [x, im.constant(np.array(index, np.int64))], axis=axis)


def _recurrent(kind: str):
    def convert(im, ins, attrs):
        x, w, r, b, seq_lens, h0 = (list(ins) + [None] * 6)[:6]
        c0, peep = (list(ins) + [None] * 8)[6:8] if kind == "LSTM" else (None, None)
        gates = _GATES[kind]
        hidden = attrs.get("hidden_size") or r.type.get_shape()[-1]
        direction = attrs.get("direction", b"forward")
        direction = direction.decode() if isinstance(direction, bytes) else direction
        dirs = 2 if direction == "bidirectional" else 1
        layout = attrs.get("layout", 0)
        if kind == "LSTM" and attrs.get("input_forget", 0):
            raise im.error("input_forget=1 (coupled input and forget gates) is not supported")
        if w.type.get_shape()[:2] != (dirs, gates * hidden) or r.type.get_shape() != (dirs, gates * hidden, hidden):
            raise im.error(f"W {list(w.type.get_shape())} and R {list(r.type.get_shape())} do not fit "
                           f"{dirs} direction(s) of {gates} gate(s) of hidden size {hidden}")
        dt = to_dtype(x.type.element_type)
        if layout:  # [batch, seq, input] -> [seq, batch, input]; states [batch, dirs, h] -> [dirs, batch, h]
            x = im.op(g.TransposeOp, [x], perm=(1, 0, 2))
            h0 = None if h0 is None else im.op(g.TransposeOp, [h0], perm=(1, 0, 2))
            c0 = None if c0 is None else im.op(g.TransposeOp, [c0], perm=(1, 0, 2))
        seq, batch, _ = x.type.get_shape()
        if seq > MAX_ITERATIONS:
            raise im.error(f"a sequence of {seq} steps; geir unrolls at most {MAX_ITERATIONS}")
        if seq_lens is not None:
            lens = im.require_const(seq_lens, "sequence_lens")
            if np.any(lens != seq):
                raise im.error(f"sequence_lens {lens.tolist()} shorter than the sequence ({seq}) is not supported")
        names = list(attrs.get("activations") or [])
        names = [n.decode() if isinstance(n, bytes) else n for n in names]
        per_dir = len(_DEFAULT_ACTIVATIONS[kind])
        if not names:
            names = list(_DEFAULT_ACTIVATIONS[kind]) * dirs
        if len(names) != per_dir * dirs:
            raise im.error(f"{len(names)} activations given, {kind} takes {per_dir} per direction")
        alphas = list(attrs.get("activation_alpha") or [])
        betas = list(attrs.get("activation_beta") or [])
        clip = attrs.get("clip")

        def act(i: int):
            fn = _activation(im, names[i], alphas[i] if i < len(alphas) else None, betas[i] if i < len(betas) else None)
            if clip is None or (kind == "LSTM" and i % per_dir == 2):  # h(Ct) takes the cell unclipped
                return fn
            lo, hi = im.constant(np.array(-clip, dt)), im.constant(np.array(clip, dt))
            return lambda v: fn(im.op(g.ClipOp, [v, lo, hi]))

        ys, last_h, last_c = [], [], []
        for d in range(dirs):
            f, gg, hh = (act(d * per_dir + k) if k < per_dir else None for k in range(3))
            wd, rd = _take(im, w, d), _take(im, r, d)  # [G*h, in], [G*h, h]
            xw = im.op(g.MatMulOp, [x, im.op(g.TransposeOp, [wd], perm=(1, 0))])  # [seq, batch, G*h]
            rt = im.op(g.TransposeOp, [rd], perm=(1, 0))  # [h, G*h]
            wb = rb = None
            if b is not None:
                bd = _take(im, b, d)
                wb, rb = _slice_last(im, bd, 0, gates * hidden), _slice_last(im, bd, 1, gates * hidden)
                if kind != "GRU":  # GRU keeps Rb_h apart (linear_before_reset); the others add both
                    xw = im.op(g.AddOp, [xw, im.op(g.AddOp, [wb, rb])])
                else:
                    xw = im.op(g.AddOp, [xw, wb])
            h = _take(im, h0, d) if h0 is not None else im.constant(np.zeros((batch, hidden), dt))
            c = None
            if kind == "LSTM":
                c = _take(im, c0, d) if c0 is not None else im.constant(np.zeros((batch, hidden), dt))
            p = None if peep is None else _take(im, peep, d)
            steps = range(seq - 1, -1, -1) if (direction == "reverse" or d == 1) else range(seq)
            out = {}
            for t in steps:
                xt = _take(im, xw, t)  # [batch, G*h]
                if kind == "RNN":
                    h = f(im.op(g.AddOp, [xt, im.op(g.MatMulOp, [h, rt])]))
                elif kind == "GRU":
                    h = _gru_step(im, xt, h, rt, rb, hidden, f, gg, attrs.get("linear_before_reset", 0), dt)
                else:
                    h, c = _lstm_step(im, xt, h, c, rt, p, hidden, f, gg, hh)
                out[t] = h
            ys.append(stack(im, [out[t] for t in range(seq)], 0))  # [seq, batch, h]
            last_h.append(h)
            last_c.append(c)
        y = stack(im, ys, 1)  # [seq, dirs, batch, h]
        states = [stack(im, last_h, 0)] + ([stack(im, last_c, 0)] if kind == "LSTM" else [])  # [dirs, batch, h]
        if layout:
            y = im.op(g.TransposeOp, [y], perm=(2, 0, 1, 3))
            states = [im.op(g.TransposeOp, [v], perm=(1, 0, 2)) for v in states]
        return [y, *states]

    return convert


def _gru_step(im, xt, h, rt, rb, hidden, f, gg, linear_before_reset, dt):
    """z, r, h gates: Ht = (1 - z) * h~ + z * Ht-1."""
    ints = lambda v: im.constant(np.array([v], np.int64))  # noqa: E731
    # R_h multiplies r * Ht-1 unless linear_before_reset: then Ht-1 R^T needs z and r's columns only
    width = 3 if linear_before_reset else 2
    r_cols = rt if linear_before_reset else im.op(g.SliceOp, [rt, ints(0), ints(2 * hidden), ints(-1)])
    hr = im.op(g.MatMulOp, [h, r_cols])  # [batch, width * h]
    if rb is not None:
        hr = im.op(g.AddOp, [hr, rb if width == 3 else _slice_last(im, rb, 0, 2 * hidden)])
    z = f(im.op(g.AddOp, [_slice_last(im, xt, 0, hidden), _slice_last(im, hr, 0, hidden)]))
    r = f(im.op(g.AddOp, [_slice_last(im, xt, 1, hidden), _slice_last(im, hr, 1, hidden)]))
    if linear_before_reset:  # r * (Ht-1 R_h^T + Rb_h)
        cand = im.op(g.MulOp, [r, _slice_last(im, hr, 2, hidden)])
    else:  # (r * Ht-1) R_h^T + Rb_h
        cand = im.op(g.MatMulOp, [im.op(g.MulOp, [r, h]), _slice_last(im, rt, 2, hidden)])
        if rb is not None:
            cand = im.op(g.AddOp, [cand, _slice_last(im, rb, 2, hidden)])
    ht = gg(im.op(g.AddOp, [_slice_last(im, xt, 2, hidden), cand]))
    one = im.constant(np.array(1, dt))
    return im.op(g.AddOp, [im.op(g.MulOp, [im.op(g.SubOp, [one, z]), ht]), im.op(g.MulOp, [z, h])])


def _lstm_step(im, xt, h, c, rt, p, hidden, f, gg, hh):
    """i, o, f, c gates (ONNX's order), peepholes P = (i, o, f)."""
    pre = im.op(g.AddOp, [xt, im.op(g.MatMulOp, [h, rt])])  # [batch, 4h]
    gate = lambda k: _slice_last(im, pre, k, hidden)  # noqa: E731
    peep = lambda k, state, x: x if p is None else im.op(g.AddOp, [x, im.op(g.MulOp, [_slice_last(im, p, k, hidden), state])])  # noqa: E731
    i = f(peep(0, c, gate(0)))
    fg = f(peep(2, c, gate(2)))
    cand = gg(gate(3))
    c = im.op(g.AddOp, [im.op(g.MulOp, [fg, c]), im.op(g.MulOp, [i, cand])])
    o = f(peep(1, c, gate(1)))
    return im.op(g.MulOp, [o, hh(c)]), c


RNN_CONVERTERS = {kind: _recurrent(kind) for kind in _GATES}
