"""The services' upkeep of CPython's heap: survivors frozen, a full collection now and then."""

from __future__ import annotations

import asyncio
import gc

import pytest

from drover.runtime import pyheap


class _Cycle:
    def __init__(self) -> None:
        self.me = self


async def test_survivors_are_frozen_and_a_full_collection_unfreezes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pyheap, "FREEZE_EVERY", 0.01)
    monkeypatch.setattr(pyheap, "FULL_COLLECT_EVERY", 3600.0)
    before = gc.get_threshold()
    try:
        pyheap.tune()
        assert gc.get_threshold()[0] == pyheap.GEN0_THRESHOLD
        stop = asyncio.Event()
        task = asyncio.create_task(pyheap.maintain(stop))
        kept = [_Cycle() for _ in range(100)]
        await asyncio.sleep(0.05)
        assert gc.get_freeze_count() >= len(kept)
        # A cycle alive at a freeze and dead later is found by the next full collection.
        del kept
        monkeypatch.setattr(pyheap, "FULL_COLLECT_EVERY", 0.0)
        await asyncio.sleep(0.05)
        stop.set()
        await task
        assert not any(isinstance(o, _Cycle) for o in gc.get_objects())
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
