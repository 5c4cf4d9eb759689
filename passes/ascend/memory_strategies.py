"""Offset assignment for buffers with lifetimes: the strategies of `ascend-plan-memory`.

The problem (dynamic storage allocation): buffer i has `sizes[i]` bytes and conflicts with
the buffers in `neighbours[i]` (their lifetimes meet: on one stream, their live intervals
overlap; across streams, no event orders one before the other). Give every buffer an offset
so that no two conflicting buffers share a byte, with the smallest peak (the largest
offset + size). Sizes are already rounded to the alignment, so offsets built from sums of
sizes are aligned too. It is NP-hard; these are the heuristics compilers use, and a search:

* `best-fit` - onnxruntime's memory pattern planner: buffers in program order (first use),
  each into the smallest gap between the conflicting buffers already placed, else on top.
* `greedy-size` - TFLite's "greedy by size" (Pisarchyk & Lee, *Efficient Memory Management
  for Deep Neural Net Inference*, 2020): largest first, each into the best-fitting gap.
* `ge` - GE's hybrid assigner: run several assigners, keep the smallest plan (here
  best-fit, greedy-size and TFLite's "greedy by breadth").
* `best` - `ge`, then on each connected part of the conflict graph whose peak is above the
  lower bound: an exact constraint search at the bound (offsets as bitmasks of slots of the
  sizes' gcd, most constrained buffer first), more orders, exact searches just below the
  best plan, a squeaky wheel (buffers that end above the bound move earlier) and repacked
  windows around the buffers above the peak. Budgets count nodes and rounds, not time, so a
  plan reproduces; it keeps the minimum, so it is never worse than `ge`. Where the exact
  search proves the bound unreachable, `Plan.bound` says so.

`place` is the step the heuristics share: buffers in some order, each in a gap its placed
neighbours leave. The lower bound (`Problem.bound`) is the largest total of bytes live at
one moment - no plan is below it. Pure functions over numpy arrays; the IR side is in
plan_memory.py.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

STRATEGIES = ("best-fit", "greedy-size", "ge", "best")


@dataclass(frozen=True)
class Problem:
    """Buffers to place: sizes, conflicts, program-order positions and the lower bound.

    `starts[i]` / `ends[i]` are positions of the first / last use in program order (they
    order the heuristics; conflicts come from `neighbours` only). `bound` is the largest
    total of bytes live at one moment."""

    sizes: np.ndarray
    neighbours: tuple[np.ndarray, ...]
    starts: np.ndarray
    ends: np.ndarray
    bound: int
    _lists: list[list[int]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", np.asarray(self.sizes, dtype=np.int64))
        object.__setattr__(self, "starts", np.asarray(self.starts, dtype=np.int64))
        object.__setattr__(self, "ends", np.asarray(self.ends, dtype=np.int64))
        object.__setattr__(self, "_lists", [nb.tolist() for nb in self.neighbours])

    def __len__(self) -> int:
        return len(self.sizes)

    @cached_property
    def unit(self) -> int:
        """The gcd of the sizes: every offset the strategies give is a multiple of it."""
        return max(1, int(np.gcd.reduce(self.sizes))) if len(self.sizes) else 1

    @classmethod
    def from_intervals(cls, sizes: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> Problem:
        """Buffers live over [start, end] (inclusive) of one timeline: conflicts are
        overlapping intervals (one sweep), the bound the peak of the live bytes."""
        sizes = np.asarray(sizes, dtype=np.int64)
        starts = np.asarray(starts, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        n = len(sizes)
        order = np.lexsort((np.arange(n), starts))
        edges: list[tuple[int, int]] = []
        active: list[tuple[int, int]] = []  # heap of (end, buffer)
        live: set[int] = set()
        for i in order.tolist():
            while active and active[0][0] < starts[i]:
                live.discard(heapq.heappop(active)[1])
            edges.extend((j, i) for j in live)
            live.add(i)
            heapq.heappush(active, (int(ends[i]), i))
        return cls(sizes, adjacency(n, edges), starts, ends, interval_bound(sizes, starts, ends))

    @classmethod
    def from_conflicts(cls, sizes: Sequence[int], starts: Sequence[int], ends: Sequence[int],
                       edges: Sequence[tuple[int, int]] | np.ndarray, bound: int) -> Problem:
        """Buffers with an explicit conflict graph (several streams) and a known bound."""
        return cls(np.asarray(sizes, dtype=np.int64), adjacency(len(sizes), edges), starts, ends, int(bound))


def adjacency(n: int, edges: Sequence[tuple[int, int]] | np.ndarray) -> tuple[np.ndarray, ...]:
    """Neighbour arrays of an undirected graph on n nodes."""
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if not len(e):
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(n))
    both = np.concatenate([e, e[:, ::-1]])
    both = both[np.lexsort((both[:, 1], both[:, 0]))]
    cuts = np.searchsorted(both[:, 0], np.arange(n + 1))
    return tuple(both[cuts[i]:cuts[i + 1], 1] for i in range(n))


def clique_bound(sizes: np.ndarray, neighbours: Sequence[np.ndarray], floor: int = 0) -> int:
    """The heaviest clique a greedy search finds (buffers that pairwise conflict need
    disjoint bytes). Seeds whose neighbourhood cannot beat the best so far are skipped; on
    one stream the interval bound is already exact, this tightens it across streams."""
    sizes = np.asarray(sizes, dtype=np.int64)
    best = max(floor, int(sizes.max()) if len(sizes) else 0)
    reach = np.array([int(sizes[i]) + int(sizes[nb].sum()) for i, nb in enumerate(neighbours)], dtype=np.int64)
    for v in np.argsort(-reach, kind="stable").tolist():
        if reach[v] <= best:
            break
        cand = set(neighbours[v].tolist())
        total = int(sizes[v])
        for u in sorted(cand, key=lambda u: (-int(sizes[u]), u)):
            if u in cand:
                total += int(sizes[u])
                cand &= set(neighbours[u].tolist())
        best = max(best, total)
    return best


def interval_bound(sizes: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> int:
    """The most bytes live at one position of a timeline."""
    if not len(sizes):
        return 0
    hi = int(max(ends.max(), starts.max())) + 2
    delta = np.zeros(hi + 1, dtype=np.int64)
    np.add.at(delta, starts, sizes)
    np.add.at(delta, ends + 1, -sizes)
    return int(np.cumsum(delta).max())


# ---------------------------------------------------------------------------
# Placement.
# ---------------------------------------------------------------------------


def place(p: Problem, order: Sequence[int], best_fit: bool = True, cap: int | None = None) -> list[int] | None:
    """Offsets from placing buffers in `order`, each at the smallest (best fit) or lowest
    (first fit) gap between its placed neighbours that holds it, else just above them.
    With `cap`, None as soon as a buffer ends above it (for searches)."""
    sizes, nbrs = p.sizes.tolist(), p._lists
    off = [-1] * len(sizes)
    for i in order:
        s = sizes[i]
        ranges = sorted((off[j], off[j] + sizes[j]) for j in nbrs[i] if off[j] >= 0)
        cur, pick, best_gap = 0, -1, None
        for lo, hi in ranges:
            gap = lo - cur
            if gap >= s:
                if not best_fit:
                    pick = cur
                    break
                if best_gap is None or gap < best_gap:
                    best_gap, pick = gap, cur
            if hi > cur:
                cur = hi
        if pick < 0:
            pick = cur
        if cap is not None and pick + s > cap:
            return None
        off[i] = pick
    return off


def peak(p: Problem, offsets: Sequence[int]) -> int:
    """Bytes the plan needs: the highest end of a buffer."""
    if not len(p):
        return 0
    return int((np.asarray(offsets, dtype=np.int64) + p.sizes).max())


def check(p: Problem, offsets: Sequence[int]) -> None:
    """Raise ValueError if two conflicting buffers overlap or an offset is negative."""
    off = np.asarray(offsets, dtype=np.int64)
    if len(off) != len(p) or (off < 0).any():
        raise ValueError("every buffer needs a non-negative offset")
    for i, nb in enumerate(p.neighbours):
        clash = nb[(off[nb] < off[i] + p.sizes[i]) & (off[i] < off[nb] + p.sizes[nb])]
        if len(clash):
            raise ValueError(f"buffers {i} and {int(clash[0])} conflict and overlap")


# ---------------------------------------------------------------------------
# Orders.
# ---------------------------------------------------------------------------


def _order(*keys: np.ndarray) -> list[int]:
    """Indices sorted by the keys, the first key most significant, the index last."""
    n = len(keys[0])
    return np.lexsort((np.arange(n), *reversed(keys))).tolist()


def program_order(p: Problem) -> list[int]:
    return _order(p.starts, -p.sizes)


def size_order(p: Problem) -> list[int]:
    return _order(-p.sizes, p.starts)


def breadth_order(p: Problem) -> list[int]:
    """TFLite's greedy by breadth: buffers of the busiest moments first, larger first. The
    breadth of a buffer is the most bytes live at a position of its interval."""
    n = len(p)
    if not n:
        return []
    hi = int(p.ends.max()) + 2
    delta = np.zeros(hi + 1, dtype=np.int64)
    np.add.at(delta, p.starts, p.sizes)
    np.add.at(delta, p.ends + 1, -p.sizes)
    load = np.cumsum(delta)
    breadth = np.array([load[s:e + 1].max() for s, e in zip(p.starts.tolist(), p.ends.tolist())], dtype=np.int64)
    return _order(-breadth, -p.sizes, p.starts)


def duration_order(p: Problem) -> list[int]:
    return _order(-(p.ends - p.starts), -p.sizes, p.starts)


def area_order(p: Problem) -> list[int]:
    return _order(-(p.ends - p.starts + 1) * p.sizes, p.starts)


# ---------------------------------------------------------------------------
# Strategies.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    offsets: list[int]
    peak: int
    strategy: str
    bound: int = 0
    """A lower bound for the problem: at least Problem.bound, more where a search proved it."""


def _plan(p: Problem, order: list[int], best_fit: bool, name: str) -> Plan:
    off = place(p, order, best_fit)
    assert off is not None
    return Plan(off, peak(p, off), name, p.bound)


def best_fit(p: Problem) -> Plan:
    """onnxruntime: program order, best-fitting gap."""
    return _plan(p, program_order(p), True, "best-fit")


def greedy_size(p: Problem) -> Plan:
    """TFLite greedy by size: largest first, best-fitting gap."""
    return _plan(p, size_order(p), True, "greedy-size")


def greedy_breadth(p: Problem) -> Plan:
    """TFLite greedy by breadth."""
    return _plan(p, breadth_order(p), True, "greedy-breadth")


def ge(p: Problem) -> Plan:
    """GE's hybrid assigner: several assigners, the smallest plan (the first on ties)."""
    return min((best_fit(p), greedy_size(p), greedy_breadth(p)), key=lambda pl: pl.peak)


def components(p: Problem) -> list[np.ndarray]:
    """Connected parts of the conflict graph (they are planned independently)."""
    n = len(p)
    parent = np.arange(n)

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, nb in enumerate(p._lists):
        for j in nb:
            if j > i:
                ri, rj = find(i), find(j)
                if ri != rj:
                    parent[max(ri, rj)] = min(ri, rj)
    roots = np.array([find(i) for i in range(n)], dtype=np.int64)
    order = np.argsort(roots, kind="stable")
    cuts = np.flatnonzero(np.diff(roots[order])) + 1
    return [part for part in np.split(order, cuts) if len(part)]


def subproblem(p: Problem, part: np.ndarray) -> Problem:
    """The buffers `part` of p, renumbered, with p's bound."""
    index = np.full(len(p), -1, dtype=np.int64)
    index[part] = np.arange(len(part))
    nbrs = tuple(index[p.neighbours[i]][index[p.neighbours[i]] >= 0] for i in part.tolist())
    return Problem(p.sizes[part], nbrs, p.starts[part], p.ends[part], p.bound)


@dataclass
class SearchBudget:
    """How hard `best` works on one connected part: nodes of the exact search at the lower
    bound and of each one a step below the best plan, squeaky-wheel rounds, and the window
    sizes and nodes of the window repacking. Node counts, not time, so plans reproduce."""

    exact_nodes: int = 20000
    step_nodes: int = 3000
    rounds: int = 100
    windows: tuple[int, ...] = (8, 16)
    window_nodes: int = 2000
    window_nodes_total: int = 100000
    seed: int = 0


def best(p: Problem, budget: SearchBudget | None = None, enough: int = 0) -> Plan:
    """`ge`, then a search on each connected part whose peak is above the lower bound (the
    parts are independent: a buffer's gap depends on its neighbours only), or above `enough`
    when that is higher (a plan that fits is all on-chip planning needs). `Plan.bound` is
    the lower bound, raised where the exact search proved the bound itself unreachable."""
    budget = budget or SearchBudget()
    base = ge(p)
    target = max(p.bound, enough)
    if base.peak <= target or not len(p):
        return Plan(base.offsets, base.peak, "best", p.bound)
    offsets = list(base.offsets)
    proved = p.bound
    for part in components(p):
        idx = part.tolist()
        start = [offsets[i] for i in idx]
        if max(o + int(p.sizes[i]) for o, i in zip(start, idx)) <= target:
            continue
        off, lower = _improve(subproblem(p, part), start, budget, target)
        proved = max(proved, lower)
        for i, o in zip(idx, off):
            offsets[i] = o
    total = peak(p, offsets)
    if total > base.peak:  # never worse than ge
        return Plan(base.offsets, base.peak, "best", proved)
    return Plan(offsets, total, "best", proved)


def _improve(p: Problem, start: list[int], budget: SearchBudget, target: int) -> tuple[list[int], int]:
    """A plan for one connected part at or below `target` if the search finds one (else the
    lowest it finds), and a lower bound for the part: an exact search at the target, more
    orders, exact searches one step below the best plan while they succeed, a squeaky wheel,
    repacked windows."""
    best_off, best_peak = start, peak(p, start)
    unit = p.unit

    def consider(off: list[int] | None) -> bool:
        nonlocal best_off, best_peak
        if off is not None and peak(p, off) < best_peak:
            best_off, best_peak = off, peak(p, off)
        return best_peak <= target

    lower = p.bound
    status, off = _solve_exact(p, range(len(p)), [-1] * len(p), target, budget.exact_nodes)
    if consider(off):
        return best_off, lower
    if status == "unsat":
        lower = max(lower, target + unit)
    for order in (size_order(p), program_order(p), breadth_order(p), duration_order(p), area_order(p)):
        for fit in (True, False):
            if consider(place(p, order, fit, cap=best_peak - 1)):
                return best_off, lower

    def descend() -> bool:
        """Exact searches just below the best plan: a loose cap is easy to meet."""
        nonlocal lower
        while best_peak - unit >= lower:
            status, off = _solve_exact(p, range(len(p)), [-1] * len(p), best_peak - unit, budget.step_nodes)
            if status == "unsat":
                lower = best_peak
            if off is None:
                return False
            if consider(off):
                return True
        return True

    if descend():
        return best_off, lower
    # Squeaky wheel: buffers that end above the target gain priority and move earlier.
    rng = np.random.default_rng(budget.seed)
    prio = -p.sizes.astype(np.float64) / max(1, int(p.sizes.max()))
    for r in range(budget.rounds):
        off = place(p, np.lexsort((np.arange(len(p)), prio)).tolist(), True)
        if consider(off):
            return best_off, lower
        tops = np.asarray(off) + p.sizes
        over = tops > target
        prio[over] -= 1.0 + (tops[over] - target) / max(1, target)
        if r % 4 == 3:
            prio += rng.uniform(0, 0.05, len(p))
    consider(_repack_windows(p, list(best_off), budget, target))
    return best_off, lower


def _solve_exact(p: Problem, window: Sequence[int], off: list[int], cap: int, max_nodes: int
                 ) -> tuple[str, list[int] | None]:
    """Offsets for the buffers of `window` below `cap`, the others fixed at `off` (-1: not
    placed, ignored): a constraint search. Offsets are multiples of the sizes' gcd, so each
    buffer's possible offsets are a bitmask of slots; placing one removes the overlapping
    slots of its unplaced neighbours; the buffer with the fewest slots left goes next, at its
    lowest slot first. Returns ("sat", offsets with the window placed), ("unsat", None) when
    the search proved no plan exists, or ("unknown", None) when `max_nodes` ran out."""
    sizes, nbrs, g = p.sizes.tolist(), p._lists, p.unit
    slots = cap // g
    inw = set(window)
    length = {i: sizes[i] // g for i in window}
    dom: dict[int, int] = {}
    for i in window:
        if length[i] > slots:
            return "unsat", None
        d = (1 << (slots - length[i] + 1)) - 1
        for j in nbrs[i]:
            if j not in inw and off[j] >= 0:
                d &= ~_span(off[j] // g - length[i] + 1, (off[j] + sizes[j]) // g - 1)
        if not d:
            return "unsat", None
        dom[i] = d
    assigned: dict[int, int] = {}
    free = set(window)
    heap = [(d.bit_count(), -length[i], i) for i, d in dom.items()]  # lazy: stale entries skipped
    heapq.heapify(heap)
    nodes = 0
    exhausted = False

    def pick() -> int:
        while True:
            c, _, i = heap[0]
            if i in free and dom[i].bit_count() == c:
                return i
            heapq.heappop(heap)

    def dfs() -> bool:
        nonlocal nodes, exhausted
        if not free:
            return True
        i = pick()
        d = dom[i]
        free.discard(i)
        while d:
            if nodes >= max_nodes:
                exhausted = True
                break
            nodes += 1
            t = (d & -d).bit_length() - 1
            d &= d - 1
            saved, ok = [], True
            for k in nbrs[i]:
                if k in free:
                    m = _span(t - length[k] + 1, t + length[i] - 1)
                    if dom[k] & m:
                        saved.append((k, dom[k]))
                        dom[k] &= ~m
                        if not dom[k]:
                            ok = False
                            break
                        heapq.heappush(heap, (dom[k].bit_count(), -length[k], k))
            if ok:
                assigned[i] = t
                if dfs():
                    return True
                del assigned[i]
            for k, v in saved:
                dom[k] = v
                heapq.heappush(heap, (v.bit_count(), -length[k], k))
            if exhausted:
                break
        free.add(i)
        heapq.heappush(heap, (dom[i].bit_count(), -length[i], i))
        return False

    if dfs():
        out = list(off)
        for i, t in assigned.items():
            out[i] = t * g
        return "sat", out
    return ("unknown" if exhausted else "unsat"), None


def _span(lo: int, hi: int) -> int:
    """Bitmask of slots lo..hi (clipped at 0)."""
    lo = max(lo, 0)
    return ((1 << (hi - lo + 1)) - 1) << lo if hi >= lo else 0


def _repack_windows(p: Problem, off: list[int], budget: SearchBudget, target: int) -> list[int]:
    """Large neighbourhood search: to bring the peak one step down, re-place a window around
    each buffer above it - the buffer and its nearest neighbours in program order, the rest
    fixed - with the exact search; repeat while it succeeds."""
    sizes = p.sizes.tolist()
    nodes_left = budget.window_nodes_total
    while peak(p, off) > target and nodes_left > 0:
        cap = peak(p, off) - p.unit
        trial = list(off)
        above = sorted((i for i in range(len(p)) if trial[i] + sizes[i] > cap), key=lambda i: (p.starts[i], i))
        for v in above:
            if trial[v] + sizes[v] <= cap:
                continue
            for k in budget.windows:
                nodes_left -= budget.window_nodes
                window = _window(p, v, k)
                status, sol = _solve_exact(p, window, [-1 if i in window else o for i, o in enumerate(trial)],
                                           cap, budget.window_nodes)
                if sol is not None:
                    trial = sol
                    break
            else:
                return off
        off = trial
    return off


def _window(p: Problem, v: int, k: int) -> list[int]:
    """v and up to k - 1 buffers near it: neighbours, then their neighbours, nearest in
    program order first."""
    mid = (p.starts[v] + p.ends[v]) / 2

    def dist(i: int) -> float:
        return abs((p.starts[i] + p.ends[i]) / 2 - mid)

    picked, seen, layer = [v], {v}, [v]
    while len(picked) < k and layer:
        nxt = sorted({j for i in layer for j in p._lists[i] if j not in seen}, key=lambda j: (dist(j), j))
        for j in nxt[: k - len(picked)]:
            picked.append(j)
            seen.add(j)
        layer = nxt
    return picked


def no_reuse(p: Problem) -> Plan:
    """Every buffer its own bytes, in program order (what reuse=false lays out)."""
    off, cur = [0] * len(p), 0
    for i in program_order(p):
        off[i] = cur
        cur += int(p.sizes[i])
    return Plan(off, cur, "none")


STRATEGY_FUNCTIONS: dict[str, Callable[[Problem], Plan]] = {
    "best-fit": best_fit,
    "greedy-size": greedy_size,
    "ge": ge,
    "best": best,
}


def solve(p: Problem, strategy: str) -> Plan:
    """The plan of one named strategy (see STRATEGIES)."""
    try:
        fn = STRATEGY_FUNCTIONS[strategy]
    except KeyError:
        raise ValueError(f"unknown memory strategy '{strategy}'; known: {', '.join(STRATEGIES)}") from None
    return fn(p)
