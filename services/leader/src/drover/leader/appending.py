"""Appends by the active leader: fenced by its lease epoch."""

from __future__ import annotations

import asyncio
import logging

from drover.runtime.store import EventStore, FencedError, NewEvent, RecordedEvent

log = logging.getLogger("drover.leader")


async def append_as_leader(
    store: EventStore, items: list[NewEvent], lease: tuple[str, int], stop: asyncio.Event, what: str
) -> list[RecordedEvent] | None:
    """Append `items` under the lease. Fenced (a newer leader leads): stop this one. Any other
    failure (Postgres away, a concurrent register) is logged; None, and the caller tries again on
    its next pass."""
    try:
        return await asyncio.to_thread(store.append, items, fence=lease)
    except FencedError:
        log.error("fenced: a newer leader leads; stepping down")
        stop.set()
    except Exception as e:
        log.warning("%s: %s; retrying", what, e)
    return None
