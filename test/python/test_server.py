"""The 8-NPU server model (target/server.py, target/servers/): its figures with sources, and the
cost of each collective under the ring and mesh algorithms, against the formulas of
docs/multi-device.md."""

import json

import pytest

from geir.errors import GeirError
from geir.target.device import DeviceFileError
from geir.target.server import SERVERS_DIR, Collectives, UnknownServerError, list_servers, load_server

SERVER = load_server("atlas800t_a2")
ALPHA, BW = SERVER.link_latency_us, SERVER.link_bytes_per_s
HBM = SERVER.device.hbm_bytes_per_s


def test_the_atlas_800t_a2():
    assert "atlas800t_a2" in list_servers()
    assert (SERVER.devices, SERVER.topology, SERVER.device.name) == (8, "full_mesh", "ascend910b")
    assert BW == 56e9
    assert set(SERVER.sources) == {"name", "device", "devices", "topology", "link_bytes_per_s", "link_latency_us"}
    assert SERVER.sources["link_latency_us"] == "assumption (geir)"


@pytest.mark.parametrize("p", [2, 4, 8])
def test_ring_and_mesh_formulas(p):
    n = 64 << 20
    chunk = n / p
    step = ALPHA + chunk / BW * 1e6
    ring, mesh = Collectives(SERVER, p, "ring"), Collectives(SERVER, p, "mesh")
    assert ring.all_gather_us(n) == pytest.approx((p - 1) * step)
    assert mesh.all_gather_us(n) == pytest.approx(step)
    # reduce-scatter adds the local sums: per ring step two chunks read and one written, the
    # mesh's one sum of p - 1 received chunks and the local one
    assert ring.reduce_scatter_us(n) == pytest.approx((p - 1) * (step + 3 * chunk / HBM * 1e6))
    assert mesh.reduce_scatter_us(n) == pytest.approx(step + (p + 1) * chunk / HBM * 1e6)
    for c in (ring, mesh):
        assert c.all_reduce_us(n) == pytest.approx(c.reduce_scatter_us(n) + c.all_gather_us(n))
    assert mesh.all_reduce_us(n) < ring.all_reduce_us(n) if p > 2 else mesh.all_reduce_us(n) == pytest.approx(
        ring.all_reduce_us(n))


def test_auto_picks_mesh_on_a_full_mesh_and_two_ranks_agree():
    assert Collectives(SERVER, 8).algorithm == "mesh"
    n = 1 << 20
    assert Collectives(SERVER, 2, "ring").all_reduce_us(n) == pytest.approx(Collectives(SERVER, 2, "mesh").all_reduce_us(n))
    one = Collectives(SERVER, 1)
    assert one.all_reduce_us(n) == one.all_gather_us(n) == one.all_to_all_us(n) == 0
    assert Collectives(SERVER, 2).send_us(n) == pytest.approx(ALPHA + n / BW * 1e6)


@pytest.mark.parametrize("p", [2, 4, 8])
def test_one_shot_all_reduce_on_small_buffers(p):
    """Where every rank links to every other, an all-reduce may send the whole buffer over each
    link in one step and sum the p buffers locally: one latency instead of two, p times the
    bytes per link. The cheaper form is priced; a decode step's 10 KiB takes one-shot, 64 MiB
    two-shot."""
    mesh = Collectives(SERVER, p, "mesh")
    small, large = 10 << 10, 64 << 20
    forms = mesh.all_reduce_forms(small)
    assert forms["one-shot"] == pytest.approx(ALPHA + small / BW * 1e6 + (p + 1) * small / HBM * 1e6)
    assert forms["two-shot"] == pytest.approx(mesh.reduce_scatter_us(small) + mesh.all_gather_us(small))
    assert mesh.all_reduce_form(small) == "one-shot" and mesh.all_reduce_us(small) == forms["one-shot"]
    assert mesh.all_reduce_form(large) == "two-shot"
    assert mesh.all_reduce_us(large) == pytest.approx(mesh.reduce_scatter_us(large) + mesh.all_gather_us(large))


def test_a_ring_all_reduces_in_two_shots():
    """Past two ranks a ring has no direct link to every peer, so no one-shot form."""
    ring = Collectives(SERVER, 8, "ring")
    assert set(ring.all_reduce_forms(1024)) == {"two-shot"} and ring.all_reduce_form(1024) == "two-shot"
    assert set(Collectives(SERVER, 2, "ring").all_reduce_forms(1024)) == {"two-shot", "one-shot"}


def test_large_messages_are_link_bound():
    """1 GiB all-gathered over 8 ranks by mesh: each rank receives 7/8 GiB over 7 links at once,
    1/8 GiB per link at 56 GB/s."""
    c = Collectives(SERVER, 8, "mesh")
    assert c.all_gather_us(1 << 30) == pytest.approx((1 << 30) / 8 / BW * 1e6, rel=1e-3)


@pytest.mark.parametrize("ranks, algorithm, message", [
    (9, "auto", "9 ranks on atlas800t_a2: it has 8 devices"),
    (0, "auto", "0 ranks on atlas800t_a2"),
    (4, "tree", "collective algorithm 'tree': expected one of auto, ring, mesh"),
])
def test_bad_collective_options(ranks, algorithm, message):
    with pytest.raises(GeirError, match=message):
        Collectives(SERVER, ranks, algorithm)


def test_a_ring_server_has_no_mesh(tmp_path):
    data = json.loads((SERVERS_DIR / "atlas800t_a2.json").read_text())
    data["topology"]["value"] = "ring"
    path = tmp_path / "ring.json"
    path.write_text(json.dumps(data))
    ring = load_server(path)
    assert Collectives(ring, 8).algorithm == "ring"
    with pytest.raises(GeirError, match="the mesh algorithm needs a full mesh; atlas800t_a2's links are a ring"):
        Collectives(ring, 8, "mesh")
    del data["link_latency_us"]["source"]
    path.write_text(json.dumps(data))
    with pytest.raises(DeviceFileError, match="field 'link_latency_us' must be an object with a 'value' and a 'source'"):
        load_server(path)


def test_unknown_server():
    with pytest.raises(UnknownServerError, match="unknown server 'dgx'; known servers: atlas800t_a2"):
        load_server("dgx")
