"""The multi-NPU server: its devices, the links between them, and what a collective costs.

    from geir.target.server import load_server, Collectives
    server = load_server("atlas800t_a2")      # 8 x ascend910b, HCCS full mesh
    c = Collectives(server, ranks=8)          # algorithm "auto": mesh on a full mesh
    c.all_reduce_us(64 << 20)                 # microseconds to all-reduce 64 MiB per rank
    c.algorithm                               # "mesh"

A server file is JSON like a device file (target/devices/): every figure {value, unit,
source, note?}. Collectives are priced with the usual step model: a step moves one chunk
over every link it uses at once, costing the link latency plus chunk / link bandwidth, and
a reduction adds the local sum of the received chunks at the device's HBM bandwidth (read
two chunks, write one; not overlapped with the transfer: an assumption). The algorithms
are the two HCCL names for a server (docs/multi-device.md gives the formulas):

- ring: p - 1 steps per phase of chunks n / p, each rank sending to its ring neighbour;
- mesh: one step per phase, each rank sending its p - 1 chunks of n / p over its p - 1
  links at once (a full mesh only).

An all-reduce whose ranks are all linked directly (a full mesh, or two ranks) takes the
cheaper of two forms: two-shot (reduce-scatter, then all-gather: two steps of n / p) and
one-shot (each rank sends its whole buffer over every link at once and sums the p buffers
itself: one step of n). One-shot saves a step's latency and moves p times the bytes per
link, so it wins on small buffers: HCCL's single-server small-count all-reduce on the 910B
(`AllReduceMeshSmallCountExecutor`, a reduce-broadcast) is this form.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geir.errors import GeirError
from geir.target.device import DeviceFileError, DeviceSpec, load_device, read_spec_file

SERVERS_DIR = Path(__file__).parent / "servers"
TOPOLOGIES = ("full_mesh", "ring")
ALGORITHMS = ("auto", "ring", "mesh")


class UnknownServerError(GeirError):
    """A server name with no file in target/servers/."""


@dataclass(frozen=True)
class ServerSpec:
    """The published figures of one server; `sources` maps each field to where it was read."""

    name: str
    device: DeviceSpec
    devices: int
    topology: str
    link_bytes_per_s: float
    link_latency_us: float
    sources: dict[str, str]


_FIELDS = {"name": str, "device": str, "devices": int, "topology": str, "link_bytes_per_s": float,
           "link_latency_us": float}


def list_servers() -> list[str]:
    return sorted(p.stem for p in SERVERS_DIR.glob("*.json"))


def load_server(name_or_path: str | Path = "atlas800t_a2") -> ServerSpec:
    """A server by name (target/servers/<name>.json) or from a JSON file's path; an unknown
    name or a malformed file is one error naming it (and the field)."""
    data, path = read_spec_file(name_or_path, SERVERS_DIR, "server", list_servers(), UnknownServerError)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    unknown = sorted(k for k in data if k not in _FIELDS and not k.startswith("_"))
    if unknown:
        raise DeviceFileError(f"{path}: unknown field(s) {', '.join(unknown)}")
    for key, kind in _FIELDS.items():
        raw = data.get(key)
        if not isinstance(raw, dict) or "value" not in raw or not isinstance(raw.get("source"), str):
            raise DeviceFileError(f"{path}: field '{key}' must be an object with a 'value' and a 'source'")
        v = raw["value"]
        ok = isinstance(v, str) if kind is str else (
            isinstance(v, int | float) and not isinstance(v, bool) and (v > 0 if kind is int else v >= 0))
        if not ok or (kind is int and not isinstance(v, int)):
            raise DeviceFileError(f"{path}: field '{key}': bad value {v!r}")
        values[key], sources[key] = v, raw["source"]
    if values["topology"] not in TOPOLOGIES:
        raise DeviceFileError(f"{path}: field 'topology': '{values['topology']}' is not one of {', '.join(TOPOLOGIES)}")
    if values["link_bytes_per_s"] <= 0:
        raise DeviceFileError(f"{path}: field 'link_bytes_per_s' must be > 0")
    values["device"] = load_device(values["device"])
    return ServerSpec(**values, sources=sources)


class Collectives:
    """What each collective costs among `ranks` devices of a server (microseconds), with
    `algorithm` "ring", "mesh" or "auto" (mesh on a full mesh, ring otherwise). Byte counts
    are per rank: an all-reduce's buffer, an all-gather's gathered output, a reduce-scatter's
    input, an all-to-all's send buffer."""

    def __init__(self, server: ServerSpec, ranks: int, algorithm: str = "auto"):
        if not isinstance(ranks, int) or not 1 <= ranks <= server.devices:
            raise GeirError(f"{ranks} ranks on {server.name}: it has {server.devices} devices")
        if algorithm not in ALGORITHMS:
            raise GeirError(f"collective algorithm '{algorithm}': expected one of {', '.join(ALGORITHMS)}")
        if algorithm == "mesh" and server.topology != "full_mesh":
            raise GeirError(f"the mesh algorithm needs a full mesh; {server.name}'s links are a {server.topology}")
        self.server, self.ranks = server, ranks
        self.algorithm = ("mesh" if server.topology == "full_mesh" else "ring") if algorithm == "auto" else algorithm

    def _step_us(self, chunk: float) -> float:
        return self.server.link_latency_us + chunk / self.server.link_bytes_per_s * 1e6

    def _sum_us(self, chunk: float, terms: int) -> float:
        """Summing `terms` received chunks into one: read them and the local one, write one."""
        return (terms + 2) * chunk / self.server.device.hbm_bytes_per_s * 1e6

    def _phase_us(self, nbytes: int, reduce: bool) -> float:
        """One scatter-reduce or gather phase over n bytes in p chunks."""
        p = self.ranks
        chunk = nbytes / p
        if p == 1:
            return 0.0
        if self.algorithm == "mesh":  # every chunk over its own link at once, then one sum of p - 1
            return self._step_us(chunk) + (self._sum_us(chunk, p - 1) if reduce else 0.0)
        return (p - 1) * (self._step_us(chunk) + (self._sum_us(chunk, 1) if reduce else 0.0))

    def send_us(self, nbytes: int) -> float:
        """Point to point (a pipeline stage's activations): one link."""
        return self._step_us(nbytes)

    def reduce_scatter_us(self, nbytes: int) -> float:
        return self._phase_us(nbytes, reduce=True)

    def all_gather_us(self, nbytes: int) -> float:
        return self._phase_us(nbytes, reduce=False)

    def all_reduce_us(self, nbytes: int) -> float:
        """The cheaper of `all_reduce_forms`."""
        return min(self.all_reduce_forms(nbytes).values())

    def all_reduce_forms(self, nbytes: int) -> dict[str, float]:
        """The all-reduce's forms this server can run and their times: "two-shot"
        (reduce-scatter, then all-gather) always; "one-shot" (one step of the whole buffer
        over every link, then a sum of p buffers) where every rank links to every other."""
        forms = {"two-shot": self.reduce_scatter_us(nbytes) + self.all_gather_us(nbytes)}
        p = self.ranks
        if p > 1 and (self.algorithm == "mesh" or p == 2):
            forms["one-shot"] = self._step_us(nbytes) + self._sum_us(nbytes, p - 1)
        return forms

    def all_reduce_form(self, nbytes: int) -> str:
        """The form `all_reduce_us` prices (ties: two-shot)."""
        forms = self.all_reduce_forms(nbytes)
        return min(forms, key=lambda f: (forms[f], f != "two-shot"))

    def all_to_all_us(self, nbytes: int) -> float:
        """Each rank sends a chunk of n / p to every other: one mesh step, or p - 1 ring steps
        (each a direct transfer on a full mesh, relayed on a ring)."""
        return self._phase_us(nbytes, reduce=False) if self.ranks > 1 else 0.0

    def algorithm_of(self, kind: str, nbytes: int) -> str:
        """What prices collective `kind` of `nbytes` per rank: the algorithm, and for an
        all-reduce its form ("mesh one-shot", "ring two-shot", ...)."""
        if kind == "all_reduce" and self.ranks > 1:
            return f"{self.algorithm} {self.all_reduce_form(nbytes)}"
        return self.algorithm

    def cost_us(self, kind: str, nbytes: int) -> float:
        """The time of collective `kind` (an ascend collective's KIND) of `nbytes` per rank."""
        fn = {"all_reduce": self.all_reduce_us, "all_gather": self.all_gather_us,
              "reduce_scatter": self.reduce_scatter_us, "all_to_all": self.all_to_all_us,
              "send": self.send_us, "recv": self.send_us}.get(kind)
        if fn is None:
            raise GeirError(f"unknown collective '{kind}'")
        return fn(nbytes)
