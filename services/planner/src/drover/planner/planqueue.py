"""The plan queue: plans waiting for the applier, smallest first with aging."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from drover.planner.applier import plan_size
from drover.scheduler.wire import PlanRequest

# Seconds a plan counts as arriving later per alloc it places or stops.
PLAN_WEIGHT = 0.001
# How a plan's worker is reached (the NATS message the plan came in).
R = TypeVar("R")


class PlanQueue(Generic[R]):
    """Plans waiting for the applier. Applied one at a time, smallest first with aging (a plan
    counts as arriving PLAN_WEIGHT later per alloc it touches): a count-10 job's plan does not
    wait behind a queued 1,000-alloc one, and a large plan is passed over for a bounded time.
    Each plan is queued with its reply (`R`): how its worker is answered."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, float, PlanRequest, R]] = []
        self._seq = 0
        self._ready = asyncio.Event()

    def __len__(self) -> int:
        return len(self._heap)

    def put(self, req: PlanRequest, reply: R) -> None:
        size = plan_size(req)
        self._seq += 1
        now = time.monotonic()
        heapq.heappush(self._heap, (now + size * PLAN_WEIGHT, self._seq, now, req, reply))
        self._ready.set()

    def take(self, may: Callable[[PlanRequest], bool]) -> tuple[PlanRequest, R, float] | None:
        """The first plan in order that `may` allows, taken out of the queue."""
        allowed = [entry for entry in self._heap if may(entry[3])]
        if not allowed:
            return None
        entry = min(allowed)
        self._heap.remove(entry)
        heapq.heapify(self._heap)
        return entry[3], entry[4], entry[2]

    async def wait(self, other: asyncio.Future[Any]) -> None:
        """Until another plan is queued or `other` is done."""
        self._ready.clear()
        ready = asyncio.ensure_future(self._ready.wait())
        try:
            await asyncio.wait({ready, other}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()

    async def get(self, timeout: float) -> tuple[PlanRequest, R, float] | None:
        """The next plan in order, waiting up to `timeout` seconds for one."""
        if not self._heap:
            self._ready.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), timeout)
        if not self._heap:
            return None
        _, _, arrived, req, reply = heapq.heappop(self._heap)
        return req, reply, arrived
