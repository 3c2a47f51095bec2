"""How the API runs a command (drover.control): the reads it makes and its append in one trip
to a worker thread (a hop back to a busy event loop between the read and the append would be
waited for under load), again from the read if a stream moved meanwhile, with the request's
trace context in the events' metadata."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from drover.control.change import Change
from drover.control.errors import Conflict
from drover.model.events import NewEvent
from drover.runtime.store import ConcurrencyError, EventStore, RecordedEvent
from drover.runtime.store.queries import Reads
from drover.runtime.telemetry import inject, tracer

log = logging.getLogger("drover.api")
_tracer = tracer("drover.api")
C = TypeVar("C", bound=Change)
# Times a command is decided again when a stream it expected moved meanwhile.
ATTEMPTS = 5


def traced(events: list[NewEvent]) -> list[NewEvent]:
    """Events carrying the current trace context in their log metadata."""
    meta = inject()
    return [NewEvent(e.event, e.expected_version, {**e.metadata, **meta}) for e in events]


class Commands:
    def __init__(self, store: EventStore, reads: Reads) -> None:
        self.store = store
        self.reads = reads

    async def run(self, decide: Callable[[Reads], C], span: str = "", what: str = "") -> tuple[C, list[int]]:
        """Decide and append: the change, and the positions of its events (the log's position
        alone when it writes nothing). `span` names a trace span around it; `what`, the change
        in the debug log."""
        # The thread runs in a copy of this task's context: the span is the request's child.
        return await asyncio.to_thread(self._run, decide, span, what)

    def _run(self, decide: Callable[[Reads], C], span: str, what: str) -> tuple[C, list[int]]:
        # The command's reads (and the index of one that writes nothing) on one connection.
        with self.reads.held():
            return self._attempts(decide, span, what)

    def _attempts(self, decide: Callable[[Reads], C], span: str, what: str) -> tuple[C, list[int]]:
        for _ in range(ATTEMPTS):
            try:
                if not span:
                    change = decide(self.reads)
                    return change, self._append(change, what)
                with _tracer.start_as_current_span(span) as current:
                    change = decide(self.reads)
                    if change.evals:
                        current.set_attribute("eval.id", change.evals[0].id)
                    return change, self._append(change, what)
            except ConcurrencyError:
                continue
        raise Conflict("job was modified concurrently; try again")

    def _append(self, change: Change, what: str) -> list[int]:
        if not change.events:
            return [self.reads.index()]
        t0 = time.perf_counter()
        recorded: list[RecordedEvent] = self.store.append(traced(change.events))
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s at %d: append took %.0f ms", what or f"appended {recorded[0].event.type}",
                      recorded[-1].position, (time.perf_counter() - t0) * 1000)  # fmt: skip
        return [r.position for r in recorded]
