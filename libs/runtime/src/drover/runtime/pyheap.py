"""CPython's heap and its cyclic collector, tuned for services that hold the cluster in memory
(not the cluster's garbage collection: that is drover.gc).

A replica keeps hundreds of thousands of long-lived objects; with CPython's default thresholds
every full collection walks all of them, and scheduling a large job triggers several (measured:
100 evals of 1,000 placements on 5,000 nodes took 19.6 s with the defaults, 11.4 s with this).
So: collect the young generation less often, and every few seconds move what survived into the
permanent generation (gc.freeze), which collections skip. Objects freed by reference counting
are freed as always; only a reference cycle that was alive at a freeze and dies later waits,
until the periodic full collection (which unfreezes first) finds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time

GEN0_THRESHOLD = 100_000
FREEZE_EVERY = 5.0
FULL_COLLECT_EVERY = 600.0


def tune() -> None:
    gc.set_threshold(GEN0_THRESHOLD, 50, 100)
    gc.freeze()


async def maintain(stop: asyncio.Event) -> None:
    """Freeze survivors every FREEZE_EVERY seconds; unfreeze and collect everything every
    FULL_COLLECT_EVERY seconds."""
    last_full = time.monotonic()
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), FREEZE_EVERY)
        if time.monotonic() - last_full >= FULL_COLLECT_EVERY:
            gc.unfreeze()
            gc.collect()
            last_full = time.monotonic()
        gc.freeze()
