"""Range buckets (driver/range_buckets.py): a shape range compiled as several range programs,
the inputs' sizes choosing one; their options, numerics, memory and offline model."""

import re

import numpy as np
import onnxruntime as ort
import pytest

import geir
from geir.driver.dynamic_shapes import ShapeOptionError
from geir.driver.range_buckets import RangeBuckets, bucket_tops, split_dims
from geir.driver.shape_ranges import RangeDim, RangeModel
from geir.errors import GeirError
from geir.runtime.report import memory_stats

FP32 = {"precision_mode": "must_keep_origin_dtype"}
SEQ = RangeDim((("input_ids", 1),), 1, 4096, "seq")
BATCH = RangeDim((("input_ids", 0),), 1, 8, "batch")


@pytest.fixture(scope="module")
def llama():
    from geir.models import CONFIGS
    from geir.testing.llama import export_onnx, llama_reference

    return export_onnx(llama_reference(CONFIGS["tiny"], seed=0), batch=2, seq=32, dynamic_seq=True).SerializeToString()


def test_auto_cuts_the_widest_range_by_fours_down_to_256():
    assert bucket_tops("auto", [SEQ]) == (0, [256, 1024])
    assert bucket_tops("auto", [BATCH, SEQ]) == (1, [256, 1024])  # the widest: 1~4096, not 1~8
    assert bucket_tops("auto", [RangeDim(SEQ.positions, 300, 4096, "seq")]) == (0, [1024])
    assert bucket_tops("auto", [RangeDim(SEQ.positions, 1, 512, "seq")]) == (0, [])  # too narrow: one program
    assert bucket_tops("seq:64,128", [BATCH, SEQ]) == (1, [64, 128])
    parts = split_dims([BATCH, SEQ], 1, [64, 128])
    assert [[(d.lo, d.hi) for d in p] for p in parts] == [[(1, 8), (1, 64)], [(1, 8), (65, 128)], [(1, 8), (129, 4096)]]


@pytest.mark.parametrize("text, message", [
    ("64", "the model has 2 ranged dims (batch, seq); name the one to split"),
    ("len:64", "no ranged dim is named 'len'"),
    ("seq:128,64", "the tops must be ascending, each once"),
    ("seq:64,64", "the tops must be ascending, each once"),
    ("seq:4096", "each top must lie in 1~4095"),
    ("seq:a", "expected \"auto\" or the buckets' tops"),
    ("seq:", "lists no bucket top"),
])
def test_bad_bucket_tops_are_one_error_each(text, message):
    with pytest.raises(ShapeOptionError, match=re.escape(message)):
        bucket_tops(text, [BATCH, SEQ])


def test_buckets_without_a_range_are_an_error(llama):
    with pytest.raises(GeirError, match="range_buckets cuts a shape range into parts"):
        geir.compile(llama, input_shape="input_ids:2,64", range_buckets="32")


def test_buckets_run_every_size_and_share_the_weights_and_workspace(llama, tmp_path):
    """The tiny LLaMA over 2 x 1~256 positions in buckets 1~64, 65~128, 129~256: each size -
    a bucket's bottom and top - runs on its bucket and matches onnxruntime; a size runs the
    same program as the bucket's range alone would; the buckets hold the weights once and need
    the largest bucket's memory. The offline model holds every bucket and runs any size."""
    cm = geir.compile(llama, input_shape="input_ids:2,1~256", range_buckets="64,128", **FP32)
    assert isinstance(cm, RangeBuckets)
    assert [b.ranges() for b in cm.buckets] == ["input_ids:2,1~64", "input_ids:2,65~128", "input_ids:2,129~256"]
    assert cm.ranges() == "input_ids:2,1~256"
    sess = ort.InferenceSession(llama, providers=["CPUExecutionProvider"])
    for size, bucket in ((1, 0), (64, 0), (65, 1), (128, 1), (129, 2), (256, 2)):
        ids = np.random.default_rng(size).integers(0, 128, (2, size)).astype(np.int64)
        assert cm.bucket_of({"input_ids": ids.shape}) == bucket
        np.testing.assert_allclose(cm.run({"input_ids": ids})["logits"], sess.run(None, {"input_ids": ids})[0],
                                   rtol=1e-4, atol=1e-4)
    _, report = cm.profile({"input_ids": np.zeros((2, 100), np.int64)}, mode="timing")
    alone = geir.compile(llama, input_shape="input_ids:2,65~128", **FP32)
    _, own = alone.profile({"input_ids": np.zeros((2, 100), np.int64)}, mode="timing")
    assert report["bucket"] == "input_ids:2,65~128" and report["latency_us"] == own["latency_us"]
    mem = cm.memory()
    stats = [memory_stats(b.module) for b in cm.buckets]
    assert mem["peak_memory_bytes"] == stats[-1]["peak_memory_bytes"] == max(s["peak_memory_bytes"] for s in stats)
    assert mem["separate_models_bytes"] == sum(s["peak_memory_bytes"] for s in stats)
    assert [r["bucket"] for r in cm.bucket_report()] == [b.ranges() for b in cm.buckets]
    with pytest.raises(GeirError, match=r"input shapes input_ids:2,300 lie in no bucket of input_ids:2,1~256"):
        cm.run({"input_ids": np.zeros((2, 300), np.int64)})
    path = tmp_path / "b.om"
    cm.save(path)
    loaded = geir.load(path)
    assert isinstance(loaded, RangeBuckets) and [b.ranges() for b in loaded.buckets] == [b.ranges() for b in cm.buckets]
    ids = np.random.default_rng(7).integers(0, 128, (2, 100)).astype(np.int64)
    np.testing.assert_allclose(loaded.run({"input_ids": ids})["logits"], sess.run(None, {"input_ids": ids})[0],
                               rtol=1e-4, atol=1e-4)
    with pytest.raises(GeirError, match=r"saved as one offline model \(.om\)"):
        cm.save(tmp_path / "b.mlir")


def test_auto_on_a_narrow_range_is_one_range_program(llama):
    assert isinstance(geir.compile(llama, input_shape="input_ids:2,1~256", range_buckets="auto", **FP32), RangeModel)
