"""The log's last position, read from the event loop: what proves an answer kept in memory is
still current (drover.api.fresh).

One query at a time on one connection of its own, and never a query already under way for a
caller that came after it started: such a query may have read the log before the caller's own
write committed. Callers that come while one runs share the next one, so under load a round
trip serves many requests (a read index, as a Raft leader batches its own). A caller that can
wait (a heartbeat) may let the next round gather callers for a while before it starts."""

from __future__ import annotations

import asyncio
import contextlib

import psycopg

from drover.runtime.store.eventstore import LAST_POSITION


class LogHead:
    def __init__(self, conninfo: str) -> None:
        self.conninfo = conninfo
        self._conn: psycopg.AsyncConnection[tuple[int]] | None = None
        self._next: asyncio.Future[int] | None = None
        self._running = False
        self._closed = False
        self._gathering: asyncio.TimerHandle | None = None

    async def position(self, gather: float = 0.0) -> int:
        """The log's last position, read after this call began; raises psycopg.Error or OSError
        when PostgreSQL cannot be reached. `gather`: seconds the read may wait for other
        callers to share it (a caller with none starts it at once)."""
        if self._closed:
            raise psycopg.OperationalError("the log's head is closed")
        loop = asyncio.get_running_loop()
        if self._next is None:
            self._next = loop.create_future()
        if not self._running:
            if gather <= 0:
                self._start()
            elif self._gathering is None:
                self._gathering = loop.call_later(gather, self._start)
        return await asyncio.shield(self._next)

    def _start(self) -> None:
        if self._gathering is not None:
            self._gathering.cancel()
            self._gathering = None
        if not self._running:
            self._running = True
            asyncio.get_running_loop().create_task(self._rounds())

    async def _rounds(self) -> None:
        due: asyncio.Future[int] | None = None
        try:
            while self._next is not None:
                due, self._next = self._next, None
                try:
                    due.set_result(await self._read())
                except Exception as e:
                    await self._drop()
                    due.set_exception(e)
                    due.exception()  # a round no caller waits on any more is not an error
        finally:
            self._running = False
            # Cancelled (the loop stopping): no caller is left waiting on a round never made.
            for waiting in (due, self._next):
                if waiting is not None and not waiting.done():
                    waiting.cancel()

    async def _read(self) -> int:
        if self._closed:
            raise psycopg.OperationalError("the log's head is closed")
        if self._conn is None or self._conn.closed:
            self._conn = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
        cursor = await self._conn.execute(LAST_POSITION, prepare=True)
        row = await cursor.fetchone()
        return int(row[0]) if row is not None else 0

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error, OSError):
                await conn.close()

    async def close(self) -> None:
        self._closed = True
        if self._gathering is not None:
            self._start()  # its callers are answered (refused), not left waiting
        await self._drop()
