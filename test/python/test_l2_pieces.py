"""A matmul over L2 split into launches over ranges of its columns (tiling.l2_pieces): the
pieces compute what one kernel computes, and the split is taken only where the cost model
says it pays. The device's L2 is made small here (a device file with another `l2_bytes`, and
a short launch so that the small shapes of a test can pay for a second launch); at the
deployment sizes of LLaMA-2-7B the default device splits (lit:
cube-matmul-l2-pieces.mlir)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import geir
from geir.dialects import ascend as a
from geir.dialects import attr_names
from geir.models import CONFIGS
from geir.target.device import DEVICES_DIR


def _device(tmp_path, l2_bytes: int, launch_overhead_us: float = 0.1, hbm_bytes_per_s: float = 0.1e12) -> str:
    spec = json.loads((DEVICES_DIR / "ascend910b.json").read_text())
    spec["name"]["value"] = "ascend910b-small-l2"
    spec["l2_bytes"]["value"] = l2_bytes
    spec["launch_overhead_us"]["value"] = launch_overhead_us
    spec["hbm_bytes_per_s"]["value"] = hbm_bytes_per_s
    path = tmp_path / "small_l2.json"
    path.write_text(json.dumps(spec))
    return str(path)


def _launches(cm) -> list[str]:
    return [op.kernel.root_reference.data for op in cm.module.walk() if isinstance(op, a.LaunchOp)]


def _blocks(cm, name: str = "") -> list[tuple[int, int, int, int]]:
    """(first row, rows, first column, columns) of each launched piece whose name holds `name`."""
    kernels = {k.sym_name.data: k for k in cm.module.walk() if isinstance(k, a.KernelOp)}
    return [tuple(kernels[n].attributes[attr_names.L2_BLOCK].get_values()) for n in _launches(cm)
            if name in n and attr_names.L2_BLOCK in kernels[n].attributes]


def _tile_the_result(blocks: list[tuple[int, int, int, int]], rows: int, cols: int) -> bool:
    """The blocks cover [rows, cols] once each, row ranges outer."""
    seen = np.zeros((rows, cols), np.int64)
    for r0, nr, c0, nc in blocks:
        seen[r0:r0 + nr, c0:c0 + nc] += 1
    return bool((seen == 1).all()) and [b[0] for b in blocks] == sorted(b[0] for b in blocks)


def _matmul_model(m: int = 1024, k: int = 2048, n: int = 2048) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float16), "w")
    b = numpy_helper.from_array(rng.standard_normal(n).astype(np.float16), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"], name="fc"),
             helper.make_node("Add", ["xw", "b"], ["xb"], name="bias"),
             helper.make_node("Relu", ["xb"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "fc", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [m, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [m, n])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_matmul_over_l2_runs_as_column_pieces_with_the_same_numbers(tmp_path):
    """With a 6 MiB L2, the [1024, 2048] x [2048, 2048] matmul (16 MiB of operands and
    result; its epilogue with it) runs as launches over column ranges, each holding an lhs
    panel per work item (the tiling's groups); each writes its columns, so the output is what
    one kernel writes, and it matches onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    model = _matmul_model()
    x = np.random.default_rng(1).standard_normal((1024, 2048)).astype(np.float16)
    whole = geir.compile(model)
    split = geir.compile(model, device=_device(tmp_path, 6 << 20, hbm_bytes_per_s=1.6e12))
    assert len(_launches(whole)) == 1
    pieces = _launches(split)
    assert len(pieces) >= 2 and all(p.endswith(f"_n{i}") for i, p in enumerate(pieces)), pieces
    assert {b[:2] for b in _blocks(split)} == {(0, 1024)} and _tile_the_result(_blocks(split), 1024, 2048)
    got = split.run({"x": x})["y"]
    np.testing.assert_allclose(got.astype(np.float32), whole.run({"x": x})["y"].astype(np.float32), rtol=2e-3, atol=2e-3)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)


def test_a_matmul_whose_lhs_is_over_l2_runs_as_blocks_of_rows_and_columns(tmp_path):
    """With a 2 MiB L2 the lhs of a [2048, 1024] x [1024, 2048] matmul (4 MiB) is itself over
    L2, so ranges of columns alone would re-read all of it per column tile: the launches are
    blocks of 4 (or 5) row ranges times column ranges, row ranges outer (the fewest row ranges
    whose lhs rows take at most half of L2, or one more). The output is what one kernel
    writes, and it matches onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    model = _matmul_model(2048, 1024, 2048)
    x = np.random.default_rng(1).standard_normal((2048, 1024)).astype(np.float16)
    split = geir.compile(model, device=_device(tmp_path, 2 << 20))
    blocks = _blocks(split)
    assert len({b[0] for b in blocks}) in (4, 5) and len({b[2] for b in blocks}) >= 2, blocks
    assert _tile_the_result(blocks, 2048, 2048)
    got = split.run({"x": x})["y"]
    whole = geir.compile(model).run({"x": x})["y"]
    np.testing.assert_allclose(got.astype(np.float32), whole.astype(np.float32), rtol=2e-3, atol=2e-3)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)


def test_a_shape_range_over_l2_pieces_runs_the_real_rows_of_each(tmp_path):
    """The matmul of the test above with its rows a shape range 1~2048: the same blocks of
    rows and columns, each piece bounding its tile loop by the real rows in its own row range
    (a piece past them runs none), and each size matches onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    model = _matmul_model(2048, 1024, 2048)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "rows"
    model.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "rows"
    ranged = geir.compile(model, input_shape="x:1~2048,1024", device=_device(tmp_path, 2 << 20))
    program = ranged.program
    blocks = _blocks(program)
    assert len({b[0] for b in blocks}) in (4, 5) and _tile_the_result(blocks, 2048, 2048)
    kernels = [k for k in program.module.walk() if isinstance(k, a.KernelOp)]
    assert all(attr_names.EXTENT in k.attributes for k in kernels)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for rows in (1, 600, 2048):
        x = np.random.default_rng(rows).standard_normal((rows, 1024)).astype(np.float16)
        got = ranged.run({"x": x})["y"]
        np.testing.assert_allclose(got.astype(np.float32), sess.run(None, {"x": x})[0].astype(np.float32),
                                   rtol=1e-2, atol=1e-2)


def _sequence_model(batch: int, k: int = 1024, n: int = 2048) -> onnx.ModelProto:
    """x [batch, seq, k] x w [k, n]: a sequence under the batch."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float16), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")], "fc",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [batch, "seq", k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [batch, "seq", n])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("batch,sizes", [(8, (1, 100, 256)), (2, (1, 300, 600, 1024))])
def test_a_sequence_range_over_l2_pieces_skips_the_padding_of_each_piece(tmp_path, batch, sizes):
    """The sequence of x [batch, 1~S, 1024] (2048 rows at the top) under the batch, over a
    3 MiB L2. The range's row groups are the batch rows, so the matmul is planned with its
    batch (cube `_unfolded`): its L2 pieces are blocks of the [S, 2048] result of every batch
    row - a row range is the same positions of each (tiling.row_ranges) -, so at a small size
    the real rows are the first row range's, not one batch row in each piece. Every piece
    takes the extent and runs only its real rows; one whose rows start at position o says so
    (`geir.live_above` = [its extent argument, o]) and is not launched at n <= o. Each size
    matches onnxruntime; one position computes a tile of each batch row, not all its rows."""
    ort = pytest.importorskip("onnxruntime")
    model = _sequence_model(batch)
    top = 2048 // batch
    ranged = geir.compile(model, input_shape=f"x:{batch},1~{top},1024", device=_device(tmp_path, 3 << 20))
    program = ranged.program
    blocks = _blocks(program)
    assert len(blocks) > 1 and _tile_the_result(blocks, top, 2048), blocks
    kernels = {k.sym_name.data: k for k in program.module.walk() if isinstance(k, a.KernelOp)}
    assert all(attr_names.EXTENT in k.attributes and attr_names.ALL_ROWS not in k.attributes for k in kernels.values())
    live = {n: k.attributes.get(attr_names.LIVE_ABOVE) for n, k in kernels.items()}
    for name, (r0, _, _, _) in zip(_launches(program), blocks):
        assert (list(live[name].get_values())[1] if live[name] else 0) == r0, (name, r0)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for size in sizes:
        x = np.random.default_rng(size).standard_normal((batch, size, 1024)).astype(np.float16)
        np.testing.assert_allclose(ranged.run({"x": x})["y"].astype(np.float32),
                                   sess.run(None, {"x": x})[0].astype(np.float32), rtol=1e-2, atol=1e-2)
    _, small = ranged.profile({"x": np.zeros((batch, 1, 1024), np.float16)}, mode="timing")
    _, large = ranged.profile({"x": np.zeros((batch, top, 1024), np.float16)}, mode="timing")
    assert len(small["kernels"]) == sum(b[0] == 0 for b in blocks) and len(large["kernels"]) == len(blocks)
    assert 4 * sum(k["cube_flops"] for k in small["kernels"]) <= sum(k["cube_flops"] for k in large["kernels"])


def test_a_piece_of_each_groups_rows_is_priced_at_the_range_sizes(tmp_path, monkeypatch):
    """x [2, 1~1024, 512] x [512, 512] over a 1 MiB L2 runs as four pieces of 256 positions of
    both batch rows. The tiling of such a piece is priced at the range's sizes as each group's
    first piece - 256, 1 and 32 real rows, their tails packed (tiling `_row_tiles`) -, not at
    its 256 rows alone: at 257 of 8 x 1~1024 positions, LLaMA-2-7B's down projection's pieces
    chosen for their top ran three waves of tiles where their packed rows fill 2.1 (+18% over
    the static program; docs/dynamic-shapes.md)."""
    from geir.lowering.templates.cube import tiling as cube_tiling

    priced = []
    shape_us = cube_tiling._shape_us

    def spy(plan, pricer, tile, groups, rows, top, packs=False):
        priced.append((plan.rows, rows, packs))
        return shape_us(plan, pricer, tile, groups, rows, top, packs)

    monkeypatch.setattr(cube_tiling, "_shape_us", spy)
    cm = geir.compile(_sequence_model(2, 512, 512), input_shape="x:2,1~1024,512", device=_device(tmp_path, 1 << 20))
    assert _blocks(cm) == [(r0, 256, 0, 512) for r0 in (0, 256, 512, 768)]
    # 1 to 1024 positions: a piece's real rows at the top, the bottom and their geometric mean
    assert {rows for plan_rows, rows, packs in priced if plan_rows == 256 and packs} == {256, 1, 32}


def test_the_split_is_declined_when_launches_cost_more_than_l2_saves(tmp_path):
    """A [2048, 1024] x [1024, 2048] matmul, as large, over the same L2: its tiling holds
    lhs panels of 8 tiles, so few re-reads are left for L2 to serve and launches over column
    ranges would cost more than they save; one kernel runs (the cost model decides, not the
    footprint alone)."""
    cm = geir.compile(_matmul_model(2048, 1024, 2048),
                      device=_device(tmp_path, 6 << 20, hbm_bytes_per_s=1.6e12))
    assert len(_launches(cm)) == 1


@pytest.mark.parametrize("cache,batch,seq", [("concat", 2, 128), ("inplace", 2, 128), ("concat", 4, 256),
                                             ("inplace", 4, 256)])
def test_a_llama_layer_split_to_fit_l2_matches_torch(tmp_path, cache, batch, seq):
    """A one-layer LLaMA over a 512 KiB L2: its q / k / v kernel (three products of one lhs;
    with a static cache updated in place, V's heads written into the cache by it) runs as launches of groups
    of whole products, its SwiGLU kernel (gate and up products, the partner staged in gm
    scratch) as launches over blocks of the result that share the one scratch buffer the
    chain allocates: column ranges at 2 x 128 rows; at 4 x 256 rows (an lhs of 1 MiB, itself
    over L2) row ranges times column ranges. The logits and K / V match torch's in fp32."""
    torch = pytest.importorskip("torch")
    from geir.testing.llama import llama_reference

    config = dataclasses.replace(CONFIGS["tiny"], layers=1, hidden=256, ffn=1024, vocab=256, max_seq=2 * seq)
    model = llama_reference(config, seed=0, std=0.05)
    ids = torch.randint(0, config.vocab, (batch, seq), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want, present = model(ids)
    static = {"max_len": seq} if cache == "inplace" else {}
    progs = geir.models.llama(config, batch=batch, seq=seq, weights=model.state_dict(), dtype="f32", cache=cache,
                              **static)
    cm = geir.compile(progs.prefill, device=_device(tmp_path, 512 << 10), precision_mode="must_keep_origin_dtype")
    names = _launches(cm)
    for kernel in ("q_proj", "gate_proj") if seq == 128 else ("gate_proj",):
        pieces = [n for n in names if kernel in n]
        assert len(pieces) >= 2 and all(p.endswith(f"_n{i}") for i, p in enumerate(pieces)), names
    gate = _blocks(cm, "gate_proj")
    assert _tile_the_result(gate, batch * seq, config.ffn)
    assert len({b[0] for b in gate}) == (1 if seq == 128 else 4), gate  # the row ranges
    gated = [op for op in cm.module.walk() if isinstance(op, a.LaunchOp) and "gate_proj" in op.kernel.root_reference.data]
    assert len({op.args[-1] for op in gated}) == 1  # one partner scratch for every piece
    feeds = {"input_ids": ids.numpy()}
    if static:
        feeds.update({"cache_position": np.array([0]), "position_ids": np.tile(np.arange(seq), (batch, 1)),
                      **{f"past_key_values.0.{kv}": np.zeros((batch, config.kv_heads, seq, config.head_dim), np.float32)
                         for kv in ("key", "value")}})
    got = cm.run(feeds)
    np.testing.assert_allclose(got["logits"], want.numpy(), rtol=1e-4, atol=1e-4)
    for kv, ref in zip(("key", "value"), present[0]):  # the cache (in place), or the presents
        np.testing.assert_allclose(got[f"present.0.{kv}"], ref.numpy(), rtol=1e-4, atol=1e-4)


def test_a_llama_sequence_range_splits_its_projections_to_fit_l2(tmp_path):
    """The one-layer LLaMA above, exported with its sequence dynamic and compiled for 2 rows
    of 1~128 positions over the 512 KiB L2: as in the static program, its q / k / v kernel
    runs as launches of groups of whole products (a range program used to keep one kernel:
    LLaMA-2-7B's at 8 x 4096 took 22.7 ms where the static program's launches took 9.5), each
    taking the extent. Each size matches onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    from geir.testing.llama import export_onnx, llama_reference

    config = dataclasses.replace(CONFIGS["tiny"], layers=1, hidden=256, ffn=1024, vocab=256, max_seq=128)
    data = export_onnx(llama_reference(config, seed=0, std=0.05), batch=2, seq=32, dynamic_seq=True).SerializeToString()
    cm = geir.compile(data, input_shape="input_ids:2,1~128", device=_device(tmp_path, 512 << 10),
                      precision_mode="must_keep_origin_dtype")
    names = _launches(cm.program)
    pieces = [n for n in names if "q_proj" in n]
    assert len(pieces) >= 2 and all(p.endswith(f"_n{i}") for i, p in enumerate(pieces)), names
    kernels = [k for k in cm.program.module.walk() if isinstance(k, a.KernelOp)]
    assert all(attr_names.EXTENT in k.attributes or attr_names.KEY_EXTENT in k.attributes for k in kernels)
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for size in (1, 37, 67, 128):
        ids = np.random.default_rng(size).integers(0, config.vocab, (2, size)).astype(np.int64)
        np.testing.assert_allclose(cm.run({"input_ids": ids})["logits"], sess.run(None, {"input_ids": ids})[0],
                                   rtol=1e-4, atol=1e-4)


def test_groups_of_products_over_ranges_of_rows_compute_what_one_kernel_does(tmp_path, monkeypatch):
    """Several products of one lhs split into launches over ranges of the rows as well as
    groups of products (the seeds' 8 x 4096 q / k / v: 4 row ranges x 3 groups, cube-matmul-
    l2-pieces.mlir). Forced here at a test's size - two row ranges, one kernel's estimate
    made infinite - on a one-layer LLaMA with a static cache, so that K's and V's heads are
    written into the cache rows of each row range: the logits and the caches match torch's."""
    torch = pytest.importorskip("torch")
    from geir.lowering.templates import cube
    from geir.testing.llama import llama_reference

    halves = lambda req, plan, isz: [[(0, plan.rows // 2), (plan.rows // 2, plan.rows - plan.rows // 2)]]  # noqa: E731
    monkeypatch.setattr(cube, "row_ranges", halves)
    real = cube._l2_groups
    monkeypatch.setattr(cube, "_l2_groups", lambda req, parts, plan, pricer, whole: real(
        req, parts, plan, pricer, dataclasses.replace(whole, estimate_us=float("inf"))))
    config = dataclasses.replace(CONFIGS["tiny"], layers=1, hidden=256, ffn=1024, vocab=256)
    model = llama_reference(config, seed=0, std=0.05)
    ids = torch.randint(0, config.vocab, (2, 128), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want, present = model(ids)
    progs = geir.models.llama(config, batch=2, seq=128, weights=model.state_dict(), dtype="f32", cache="inplace",
                              max_len=128)
    cm = geir.compile(progs.prefill, device=_device(tmp_path, 512 << 10), precision_mode="must_keep_origin_dtype")
    blocks = _blocks(cm, "q_proj")
    assert len(blocks) >= 2 and {b[:2] for b in blocks} == {(0, 64), (64, 64)}, blocks  # each batch's 128 rows in halves
    feeds = {"input_ids": ids.numpy(), "cache_position": np.array([0]), "position_ids": np.tile(np.arange(128), (2, 1)),
             **{f"past_key_values.0.{kv}": np.zeros((2, config.kv_heads, 128, config.head_dim), np.float32)
                for kv in ("key", "value")}}
    got, report = cm.profile(feeds)
    np.testing.assert_allclose(got["logits"], want.numpy(), rtol=1e-4, atol=1e-4)
    for kv, ref in zip(("key", "value"), present[0]):
        np.testing.assert_allclose(got[f"present.0.{kv}"], ref.numpy(), rtol=1e-4, atol=1e-4)
    # each launch computes its own rows: half the products' cube work
    work = [k["cube_flops"] for k in report["kernels"] if "q_proj" in k["name"]]
    assert len(work) == 2 and work[0] == work[1] == 2 * 2 * 128 * config.hidden * 512 // 2, work
