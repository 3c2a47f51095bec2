"""The active garbage collector's work on its replica: every gc_interval the periodic core evals
(drover.control.leader.gccore.due), and each pending core eval run - its passes decided by the pure
rules (drover.control.leader.gc), what they find appended in chunks, the eval completed last. A core
eval is pending until then, so whoever leads next runs an interrupted one again. While the
cluster has scheduling work waiting, the chunks are spaced to gc_busy_rate objects a second:
collection yields to scheduling, and catches up at full speed once the cluster is quiet."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from drover.control.leader import gccore
from drover.control.leader.gc import Collection, Thresholds
from drover.model.durations import SECOND
from drover.model.evaluation import EVAL_STATUS_PENDING, EVAL_TYPE_CORE, Evaluation
from drover.model.events import EvalsCollected, EvalsUpserted, Event, NewEvent
from drover.model.state import InMemoryState
from drover.runtime.settings import Settings
from drover.runtime.store import RecordedEvent

log = logging.getLogger("drover.gc")
# Appends events; None when it failed (the caller tries again later).
Append = Callable[[list[NewEvent]], Awaitable[list[RecordedEvent] | None]]
# Waits until the replica has applied a log position.
CaughtUp = Callable[[int], Awaitable[bool]]
# Seconds between looks at what is due, unless a core eval arrives first.
PASS_EVERY = 1.0
KINDS = ("alloc", "eval", "job", "deployment", "node", "restart")
# The cluster counts as busy this long after its last pending eval (ns): a load has short gaps
# between its evals, and collecting at full speed into each of them would cost it as much.
BUSY_LINGER = SECOND


def thresholds(settings: Settings) -> Thresholds:
    def ns(seconds: float) -> int:
        return int(seconds * SECOND)

    return Thresholds(
        eval=ns(settings.eval_gc_threshold),
        batch_eval=ns(settings.batch_eval_gc_threshold),
        job=ns(settings.job_gc_threshold),
        deployment=ns(settings.deployment_gc_threshold),
        node=ns(settings.node_gc_threshold),
        restart=ns(settings.gc_restart_threshold),
    )


class Collector:
    """Core evals kept from the replica's events; `step` writes and runs what is due."""

    def __init__(
        self,
        state: InMemoryState,
        settings: Settings,
        append: Append,
        caught_up: CaughtUp,
        clock: Callable[[], int] = time.time_ns,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.state = state
        self.append = append
        self.caught_up = caught_up
        self.clock = clock
        self.interval = int(settings.gc_interval * SECOND)
        self.thresholds = thresholds(settings)
        self.chunk = settings.gc_chunk
        self.busy_rate = settings.gc_busy_rate
        self.sleep = sleep
        # Scheduling evals waiting for a worker (the broker's ready queue), and when one last was.
        self.scheduling = {e.id for e in state.evals.values() if _scheduling(e)}
        self.busy_at = clock() if self.scheduling else 0
        self.since = clock()
        self.core: dict[str, Evaluation] = {e.id: e for e in state.evals.values() if e.type == EVAL_TYPE_CORE}
        # When the last core eval of each pass was created, collected ones too.
        self.last = gccore.latest(self.core.values())
        # Set when a core eval is pending: the loop runs it at once.
        self.wake = asyncio.Event()

    def on_event(self, position: int, event: Event, meta: dict[str, Any]) -> None:
        """The replica applied `event`: keep the core evals as the state has them, and which
        scheduling evals wait for a worker."""
        for e in event.evals_made():
            if e.type != EVAL_TYPE_CORE:
                self._track(e)
                continue
            now = self.state.eval(e.id) or e
            self.core[e.id] = now
            self.last = gccore.latest([now], self.last)
            if not now.terminal_status():
                self.wake.set()
        if isinstance(event, EvalsCollected):
            for eval_id in event.evals:
                if eval_id not in self.state.evals:
                    self.core.pop(eval_id, None)

    def _track(self, e: Evaluation) -> None:
        if _scheduling(e):
            self.scheduling.add(e.id)
            self.busy_at = self.clock()
        elif e.id in self.scheduling:
            self.scheduling.discard(e.id)
            self.busy_at = self.clock()

    def busy(self) -> bool:
        """Whether the cluster has scheduling work waiting, or had within BUSY_LINGER."""
        return bool(self.scheduling) or self.clock() - self.busy_at < BUSY_LINGER

    async def pace(self, objects: int) -> None:
        """Space a chunk of `objects` to gc_busy_rate while the cluster is busy."""
        if self.busy_rate > 0 and self.busy():
            await self.sleep(objects / self.busy_rate)

    async def step(self) -> bool:
        """Write the periodic core evals that are due and run every pending one, oldest first.
        False when an append failed (the next step tries again)."""
        due = gccore.due(self.core.values(), self.last, self.clock(), self.interval, self.since)
        if due:
            recorded = await self.append([NewEvent(EvalsUpserted(evals=due))])
            if recorded is None:
                return False
            await self.caught_up(recorded[-1].position)
        pending = sorted(
            (e for e in self.core.values() if not e.terminal_status()), key=lambda e: e.create_index
        )
        for core in pending:
            if not await self.run(core):
                return False
        return True

    async def run(self, core: Evaluation) -> bool:
        """Run core eval `core`: each pass decided on the replica as its previous one left it,
        appended in chunks; then the eval done."""
        t0 = time.perf_counter()
        for name in gccore.passes(core.job_id):
            as_of = self.state.index
            found = gccore.find(self.state, core, name, self.clock(), self.thresholds)
            last = 0
            for n, events in enumerate(gccore.chunks(found, as_of, self.chunk)):
                if n:
                    await self.pace(self.chunk)
                recorded = await self.append([NewEvent(e) for e in events])
                if recorded is None:
                    return False
                last = recorded[-1].position
            if last:
                log.info("core eval %s (%s): %s", core.id, name, _counts(found))
                await self.caught_up(last)
        recorded = await self.append([NewEvent(EvalsUpserted(evals=[gccore.finished(core, self.clock())]))])
        if recorded is None:
            return False
        log.info("core eval %s (%s) done in %.0f ms", core.id, core.job_id, (time.perf_counter() - t0) * 1000)
        await self.caught_up(recorded[-1].position)
        return True

    async def loop(self, stop: asyncio.Event) -> None:
        """Steps until `stop`: at least every PASS_EVERY, at once when a core eval arrives."""
        while not stop.is_set():
            self.wake.clear()
            await self.step()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), PASS_EVERY)


def _scheduling(e: Evaluation) -> bool:
    """A scheduling eval waiting for a worker: pending, and not the collector's own."""
    return e.status == EVAL_STATUS_PENDING and e.type != EVAL_TYPE_CORE


def _counts(found: Collection) -> str:
    counts = ((kind, found.count(kind)) for kind in KINDS)
    return ", ".join(f"{n} {kind}s" for kind, n in counts if n) + " collected"
