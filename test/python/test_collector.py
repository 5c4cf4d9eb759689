"""The garbage collector paused while geir builds large structures (ir/collector.py): no
automatic collection inside, the collector's state as it was after, nested or not."""

from __future__ import annotations

import gc

import pytest

from geir.ir.collector import collector_paused


def test_state_is_restored_nested_or_not():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause holds
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # a collector the caller turned off stays off
    finally:
        gc.enable()


def test_state_is_restored_on_an_error():
    with pytest.raises(ValueError), collector_paused():
        raise ValueError
    assert gc.isenabled()
