"""The ranks of a multi-device run and the collectives they meet in (HCCL's semantics).

Each rank's program runs in its own thread (`run_ranks`); a collective blocks its rank until
every member of its group has reached it, then each member takes its share of the combined
data. Collectives match by order: the k-th collective a rank calls among a group meets the
k-th of every other member of that group (as HCCL's communicators order their operations), so
the members must call them in the same order with agreeing kinds, shapes and dtypes; a
disagreement, a rank that fails, and a rank that finishes without joining are one error each,
naming the collective and the ranks.

Results are bit-identical on every member: the reduction sums the members' arrays in the
group's order (f16 and bf16 in f32, rounded once). Sends are buffered (a send returns once its data is posted; its recv takes it).

The graph interpreter (reference/graph.py) and the ascend interpreter both call the
collectives of `current()`, the communicator and rank of the calling thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from geir.errors import GeirError

T = TypeVar("T")

REDUCTIONS = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}

_WAIT_S = 0.5  # how often a waiting rank looks for a failed or finished member


class CollectiveError(GeirError):
    """Ranks that do not meet: a mismatch, a failed rank, a collective outside a run."""


class PeerFailed(CollectiveError):
    """This rank waited for one that failed: a consequence, the failed rank's error is the cause."""


@dataclass
class _Meeting:
    what: str                              # e.g. "all_reduce #3 of ranks [0, 1]"
    members: tuple[int, ...]
    signature: dict[int, tuple] = field(default_factory=dict)
    payloads: dict[int, Any] = field(default_factory=dict)
    results: dict[int, Any] | None = None
    taken: int = 0


class Communicator:
    """The collectives of `world` ranks (one per thread of `run_ranks`)."""

    def __init__(self, world: int) -> None:
        if world < 1:
            raise CollectiveError(f"a run needs at least one rank, got {world}")
        self.world = world
        self._cv = threading.Condition()
        self._meetings: dict[tuple, _Meeting] = {}
        self._seq: dict[tuple, int] = {}
        self._mail: dict[tuple, np.ndarray] = {}
        self._done: set[int] = set()
        self._failed: dict[int, BaseException] = {}

    # -- the collectives ----------------------------------------------------------------------

    def all_reduce(self, rank: int, x: np.ndarray, ranks: Sequence[int], reduction: str = "sum") -> np.ndarray:
        fn = _reduction(reduction)

        def combine(xs: list[np.ndarray]) -> list[np.ndarray]:
            return [_reduce(fn, xs)] * len(xs)

        return self._meet(rank, "all_reduce", ranks, x, (reduction,), combine)

    def all_gather(self, rank: int, x: np.ndarray, ranks: Sequence[int], axis: int = 0) -> np.ndarray:
        def combine(xs):
            out = np.concatenate(xs, axis=axis)
            return [out] * len(xs)

        return self._meet(rank, "all_gather", ranks, x, (axis,), combine)

    def reduce_scatter(self, rank: int, x: np.ndarray, ranks: Sequence[int], axis: int = 0,
                       reduction: str = "sum") -> np.ndarray:
        fn = _reduction(reduction)
        if x.shape[axis] % len(ranks):
            raise CollectiveError(f"rank {rank}: reduce_scatter of {list(x.shape)} along axis {axis} does not divide "
                                  f"among {len(ranks)} ranks")

        def combine(xs):
            return np.split(_reduce(fn, xs), len(xs), axis=axis)

        return self._meet(rank, "reduce_scatter", ranks, x, (axis, reduction), combine)

    def all_to_all(self, rank: int, x: np.ndarray, ranks: Sequence[int], split_axis: int = 0,
                   concat_axis: int = 0) -> np.ndarray:
        if x.shape[split_axis] % len(ranks):
            raise CollectiveError(f"rank {rank}: all_to_all of {list(x.shape)} along axis {split_axis} does not "
                                  f"divide among {len(ranks)} ranks")

        def combine(xs):
            pieces = [np.split(y, len(xs), axis=split_axis) for y in xs]
            return [np.concatenate([p[i] for p in pieces], axis=concat_axis) for i in range(len(xs))]

        return self._meet(rank, "all_to_all", ranks, x, (split_axis, concat_axis), combine)

    def send(self, rank: int, x: np.ndarray, peer: int) -> None:
        self._check_peer(rank, peer, "send to")
        with self._cv:
            key = ("p2p", rank, peer, self._next(("send", rank, peer)))
            self._mail[key] = np.array(x, copy=True)
            self._cv.notify_all()

    def recv(self, rank: int, peer: int, shape: Sequence[int] | None = None, dtype: Any = None) -> np.ndarray:
        self._check_peer(rank, peer, "recv from")
        with self._cv:
            n = self._next(("recv", peer, rank))
            key = ("p2p", peer, rank, n)
            what = f"recv #{n} of rank {rank} from rank {peer}"
            while key not in self._mail:
                self._check_alive(what, (peer,))
                self._cv.wait(_WAIT_S)
            x = self._mail.pop(key)
        if shape is not None and (x.shape != tuple(shape) or x.dtype != np.dtype(dtype)):
            raise CollectiveError(f"{what}: rank {peer} sent {list(x.shape)} {x.dtype}, the buffer is "
                                  f"{list(shape)} {np.dtype(dtype)}")
        return x

    # -- the ranks ----------------------------------------------------------------------------

    def finished(self, rank: int, error: BaseException | None = None) -> None:
        with self._cv:
            if error is None:
                self._done.add(rank)
            else:
                self._failed[rank] = error
            self._cv.notify_all()

    def _check_peer(self, rank: int, peer: int, verb: str) -> None:
        if not 0 <= peer < self.world or peer == rank:
            raise CollectiveError(f"rank {rank} cannot {verb} rank {peer} (ranks 0..{self.world - 1})")

    def _next(self, key: tuple) -> int:
        n = self._seq.get(key, 0)
        self._seq[key] = n + 1
        return n

    def _check_alive(self, what: str, waiting_for: Sequence[int]) -> None:
        for r in waiting_for:
            if r in self._failed:
                raise PeerFailed(f"{what}: rank {r} failed ({type(self._failed[r]).__name__})")
            if r in self._done:
                raise CollectiveError(f"{what}: rank {r} finished its program without joining it")

    def _meet(self, rank: int, kind: str, ranks: Sequence[int], x: np.ndarray, attrs: tuple,
              combine: Callable[[list[Any]], list[Any]]) -> Any:
        members = tuple(int(r) for r in ranks)
        if len(set(members)) != len(members) or any(not 0 <= r < self.world for r in members):
            raise CollectiveError(f"rank {rank}: {kind} over ranks {list(members)}: ranks must be distinct, "
                                  f"in 0..{self.world - 1}")
        if rank not in members:
            raise CollectiveError(f"rank {rank} calls {kind} over ranks {list(members)}, which it is not one of")
        if len(members) == 1:
            return combine([x])[0]
        with self._cv:
            n = self._next(("group", rank, members))
            key = (members, n)
            what = f"{kind} #{n} of ranks {list(members)}"
            m = self._meetings.setdefault(key, _Meeting(what, members))
            sig = (kind, x.shape, x.dtype.str, attrs)
            other = next(iter(m.signature.items()), None)
            if other is not None and other[1] != sig:
                raise CollectiveError(f"{what}: rank {rank} calls {_show(sig)}, rank {other[0]} {_show(other[1])}")
            m.signature[rank], m.payloads[rank] = sig, x
            if len(m.payloads) == len(members):
                outs = combine([m.payloads[r] for r in members])
                m.results = dict(zip(members, outs))
                self._cv.notify_all()
            while m.results is None:
                self._check_alive(what, [r for r in members if r not in m.payloads])
                self._cv.wait(_WAIT_S)
            m.taken += 1
            if m.taken == len(members):
                del self._meetings[key]
            return m.results[rank]


def _reduction(name: str):
    fn = REDUCTIONS.get(name)
    if fn is None:
        raise CollectiveError(f"unknown reduction '{name}'; one of {', '.join(REDUCTIONS)}")
    return fn


def _reduce(fn, xs: list[np.ndarray]) -> np.ndarray:
    """The members' arrays reduced in the group's order; f16 / bf16 in f32, rounded once."""
    wide = xs[0].dtype.kind == "f" and xs[0].dtype.itemsize < 4 or xs[0].dtype.name == "bfloat16"
    total = xs[0].astype(np.float32) if wide else xs[0].copy()
    for y in xs[1:]:
        fn(total, y.astype(np.float32) if wide else y, out=total)
    return total.astype(xs[0].dtype) if wide else total


def _show(sig: tuple) -> str:
    kind, shape, dtype, attrs = sig
    return f"{kind} of {list(shape)} {np.dtype(dtype)} {attrs}"


# ---------------------------------------------------------------------------
# The calling thread's rank.
# ---------------------------------------------------------------------------

_local = threading.local()


def current() -> tuple[Communicator, int] | None:
    """The communicator and rank of the calling thread (None outside `run_ranks`)."""
    return getattr(_local, "rank", None)


def require(what: str) -> tuple[Communicator, int]:
    here = current()
    if here is None:
        raise CollectiveError(f"{what} is a collective between devices: it runs only with its ranks "
                              f"(a multi-device model's run, geir.reference.collectives.run_ranks)")
    return here


def run_ranks(world: int, fn: Callable[[int], T]) -> list[T]:
    """fn(rank) for each rank of a `world`-rank run, each on its own thread with that rank's
    `current()`; the results in rank order. A rank's error is raised: the lowest failing
    rank's own error, not the waits it broke in the others (`PeerFailed`)."""
    comm = Communicator(world)
    results: list[Any] = [None] * world
    errors: dict[int, BaseException] = {}

    def body(rank: int) -> None:
        _local.rank = (comm, rank)
        try:
            results[rank] = fn(rank)
        except BaseException as e:  # noqa: BLE001 - re-raised by the caller below
            errors[rank] = e
            comm.finished(rank, e)
        else:
            comm.finished(rank)
        finally:
            _local.rank = None

    if world == 1:
        body(0)
    else:
        threads = [threading.Thread(target=body, args=(r,), name=f"geir-rank-{r}", daemon=True) for r in range(world)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if errors:
        ordered = [errors[r] for r in sorted(errors)]
        raise next((e for e in ordered if not isinstance(e, PeerFailed)), ordered[0])
    return results


__all__ = ["CollectiveError", "Communicator", "PeerFailed", "REDUCTIONS", "current", "require", "run_ranks"]
