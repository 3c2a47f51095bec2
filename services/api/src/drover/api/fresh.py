"""Answers kept in memory and served while the log proves them current: a read of a node or a job
without a PostgreSQL statement of its own, a thread hop or a pooled connection.

An answer is kept with the index it was read at, under the watch key of what it shows
(drover.runtime.watches: `node:<id>`, `job:<ns>/<id>`). It is served at index H only when

- H is the log's last position, read after the request came (drover.runtime.loghead: one
  round trip, shared by the requests that wait on it), so a read after a write - through this
  API or another - still carries an index at least the write's and shows it, as a read from
  the store does; and
- this process has heard every commit up to H (its NOTIFY, drover.api.blocking.IndexWatcher),
  and none of them changed the answer's key after the answer was read.

Otherwise the read goes to the store, and its answer is kept for the next one. What the
IndexWatcher forgets (a lost LISTEN connection, too many keys) counts as a change of every key,
so nothing is served across a gap. docs/experiments/2026-11-29-request-floor.md has the figures.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import psycopg

from drover.runtime.loghead import LogHead
from drover.runtime.watches import ChangeIndex

# Answers kept, the oldest dropped first (a node's or a job's answer is a few kB).
KEPT = 4096


@dataclass(frozen=True, slots=True)
class Kept:
    index: int  # the log's index the value was read at (or before: never after)
    value: Any


class Fresh:
    def __init__(self, head: LogHead, changes: ChangeIndex, size: int = KEPT) -> None:
        self.head = head
        self.changes = changes
        self.size = size
        self._kept: dict[tuple[Hashable, str], Kept] = {}

    def hopeful(self, kind: Hashable, keys: list[str]) -> bool:
        """Whether an answer is kept for each key that nothing heard of yet has changed: only
        then is the log's head worth reading."""
        for key in keys:
            found = self._kept.get((kind, key))
            if found is None or self.changes.changed_after((key,), found.index):
                return False
        return True

    async def index(self, gather: float = 0.0) -> int | None:
        """The log's index now, if this process has heard every commit up to it (else None:
        read from the store). PostgreSQL out of reach is None too: the store's read then says
        so as every read does. `gather`: as LogHead.position's."""
        try:
            head = await self.head.position(gather)
        except Exception:
            return None
        return head if self.changes.index >= head else None

    def get(self, kind: Hashable, key: str, index: int) -> Kept | None:
        """The answer kept for `key`, if it is current at `index` (from `index()`)."""
        found = self._kept.get((kind, key))
        if found is None or found.index > index or self.changes.changed_after((key,), found.index):
            return None
        return found

    def keep(self, kind: Hashable, key: str, index: int, value: Any) -> None:
        """`value`, read at `index` (or later: what it shows is no older than `index`)."""
        self._kept[(kind, key)] = Kept(index, value)
        while len(self._kept) > self.size:
            del self._kept[next(iter(self._kept))]

    async def close(self) -> None:
        with contextlib.suppress(psycopg.Error, OSError):
            await self.head.close()
