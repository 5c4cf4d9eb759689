"""Symbolic dims: integer polynomials over named sizes (`batch`, `seq`), each with a range.

A dim of a symbolic shape is an `int` or a `Sym`: a sum of terms, each an integer times a
product of symbols (`12*seq`, `batch*seq`, `seq + 1`). That is closed under what shapes do
to dims - products (a reshape's merge), sums (a concat, a pad), exact quotients (a reshape's
`-1`, a split into equal parts) - and two dims are proven equal when their polynomials are
(after `canonical`, equal polynomials have equal terms). What is not a polynomial - the
floor of `(h - 1) / 2` - is not a Sym: `div` says so by returning None and the caller
refuses the op.

A Sym whose terms are all constant is never built: `canonical` returns the int, so a static
dim is always an int and the static code paths see ints.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Union

Monomial = tuple[str, ...]  # sorted symbol names, repeated for powers; () is the constant term


class Sym:
    """An integer polynomial over symbols (immutable, hashable; see the module docstring)."""

    __slots__ = ("terms",)

    def __init__(self, terms: Mapping[Monomial, int]):
        self.terms: tuple[tuple[Monomial, int], ...] = tuple(sorted((m, c) for m, c in terms.items() if c))

    @staticmethod
    def symbol(name: str) -> Sym:
        return Sym({(name,): 1})

    # -- arithmetic ---------------------------------------------------------

    def _dict(self) -> dict[Monomial, int]:
        return dict(self.terms)

    def __add__(self, other: Dim) -> Dim:
        out = self._dict()
        for m, c in _terms(other):
            out[m] = out.get(m, 0) + c
        return canonical(Sym(out))

    __radd__ = __add__

    def __neg__(self) -> Dim:
        return canonical(Sym({m: -c for m, c in self.terms}))

    def __sub__(self, other: Dim) -> Dim:
        return self + (-other)

    def __rsub__(self, other: Dim) -> Dim:
        return (-self) + other

    def __mul__(self, other: Dim) -> Dim:
        out: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in _terms(other):
                m = tuple(sorted(m1 + m2))
                out[m] = out.get(m, 0) + c1 * c2
        return canonical(Sym(out))

    __rmul__ = __mul__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sym) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(self.terms)

    def __repr__(self) -> str:
        return f"Sym({self})"

    def __str__(self) -> str:
        parts = []
        for m, c in sorted(self.terms, key=lambda t: (-len(t[0]), t[0])):  # the constant last
            body = "*".join(m)
            text = str(abs(c)) if not m else (body if abs(c) == 1 else f"{abs(c)}*{body}")
            parts.append(("- " if c < 0 else "+ ") + text)
        out = " ".join(parts)
        return out[2:] if out.startswith("+ ") else "-" + out[2:]

    def symbols(self) -> set[str]:
        return {s for m, _ in self.terms for s in m}


Dim = Union[int, Sym]


def _terms(d: Dim) -> tuple[tuple[Monomial, int], ...]:
    return d.terms if isinstance(d, Sym) else (((), int(d)),) if d else ()


def canonical(d: Dim) -> Dim:
    """An int when `d` has no symbol, else `d`."""
    if isinstance(d, Sym) and all(not m for m, _ in d.terms):
        return sum((c for _, c in d.terms), 0)
    return d


def is_static(d: Dim) -> bool:
    return not isinstance(d, Sym)


def div(a: Dim, b: Dim) -> Dim | None:
    """a / b when it is exact as polynomials (every term of a divisible by a single-term b),
    else None. A multi-term divisor is exact only when a is a multiple of it by an int."""
    if b == 0:
        return None
    bt = _terms(b)
    if not isinstance(a, Sym) and not isinstance(b, Sym):
        return a // b if a % b == 0 else None
    if len(bt) == 1:
        (bm, bc), = bt
        out: dict[Monomial, int] = {}
        for m, c in _terms(a):
            rest = list(m)
            for s in bm:
                if s not in rest:
                    return None
                rest.remove(s)
            if c % bc:
                return None
            out[tuple(rest)] = c // bc
        return canonical(Sym(out))
    at = dict(_terms(a))
    (m0, c0) = bt[0]
    if c0 == 0 or at.get(m0, 0) % c0:
        return None
    k = at.get(m0, 0) // c0
    return k if a == b * k else None


def bounds(d: Dim, ranges: Mapping[str, tuple[int, int]]) -> tuple[int, int]:
    """The least and greatest value of `d` over the symbols' ranges (symbols are positive)."""
    lo = hi = 0
    for m, c in _terms(d):
        small = math.prod(ranges[s][0] for s in m)
        large = math.prod(ranges[s][1] for s in m)
        lo += c * (small if c > 0 else large)
        hi += c * (large if c > 0 else small)
    return lo, hi


def evaluate(d: Dim, values: Mapping[str, int]) -> int:
    return sum(c * math.prod(values[s] for s in m) for m, c in _terms(d))


def proven_equal(a: Dim, b: Dim, ranges: Mapping[str, tuple[int, int]]) -> bool:
    """Whether a == b for every size in the ranges: equal polynomials, or a difference that
    the ranges pin to 0 (a symbol whose range is one size)."""
    return a == b or bounds(a - b, ranges) == (0, 0)


def proven_one(d: Dim, ranges: Mapping[str, tuple[int, int]]) -> bool:
    return proven_equal(d, 1, ranges)


def describe(d: Dim, ranges: Mapping[str, tuple[int, int]]) -> str:
    """`d` with its symbols' ranges: `seq (1~512)`, `12*seq (seq: 1~512)`."""
    if not isinstance(d, Sym):
        return str(d)
    names = sorted(d.symbols())
    if len(d.terms) == 1 and d.terms[0] == ((names[0],), 1):
        lo, hi = ranges[names[0]]
        return f"{d} ({lo}~{hi})"
    return f"{d} ({', '.join(f'{s}: {ranges[s][0]}~{ranges[s][1]}' for s in names)})"


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|([-+*]))")


def parse(text: str) -> Dim:
    """A dim written as `str` prints it: ints, symbols, `*`, `+` and `-` (ValueError otherwise)."""
    pos, tokens = 0, []
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"bad symbolic dim '{text}' at '{text[pos:]}'")
        tokens.append(m.group(1) or m.group(2) or m.group(3))
        pos = m.end()
    total: Dim = 0
    sign, term, want_factor = 1, 1, True
    for tok in tokens + ["+"]:
        if want_factor:
            if tok == "-" and term == 1:
                sign = -sign
                continue
            if tok in "+*":
                raise ValueError(f"bad symbolic dim '{text}'")
            term = term * (int(tok) if tok.isdigit() else Sym.symbol(tok))
            want_factor = False
        elif tok == "*":
            want_factor = True
        elif tok in "+-":
            total = total + sign * term
            sign, term, want_factor = (1 if tok == "+" else -1), 1, True
        else:
            raise ValueError(f"bad symbolic dim '{text}'")
    return canonical(total) if isinstance(total, Sym) else total


def symbol_name(text: str) -> str:
    """A model's dim name as a symbol: characters other than letters, digits and `_` become
    `_` (a leading digit gets one first)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text)
    return name if name and not name[0].isdigit() else "_" + name
