"""Leader election for single-active services (plan applier, leader loops, garbage collector):
a Postgres advisory lock held on a dedicated connection. The lock goes with the session, so a
dead leader's lock is released at once and a standby polling for it takes over; the new leader
then takes a new lease epoch (EventStore.acquire_lease) that fences the old one's appends.
`leadership` does all of it, and `run_as_leader` is a single-active service's whole `run`: it
hands the service a `Leader`, whose appends are fenced by the epoch and which stops every loop of
the service once one of them is fenced."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

import psycopg
from nats.aio.client import Client
from nats.js import JetStreamContext

from drover.runtime.bus import close, connect_streams
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, FencedError, NewEvent, RecordedEvent, libpq_url

log = logging.getLogger("drover.election")


async def wait_for_leadership(
    conninfo: str, key: int, stop: asyncio.Event, poll: float = 0.25
) -> psycopg.AsyncConnection[object] | None:
    """Block until this process holds advisory lock `key`; the returned connection holds it.
    None if `stop` was set first."""
    while not stop.is_set():
        try:
            conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
            while not stop.is_set():
                row = await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))).fetchone()
                if row and row[0]:
                    return conn
                await asyncio.sleep(poll)
            await conn.close()
        except (psycopg.Error, OSError) as e:
            log.warning("leader election: %s", e)
            await asyncio.sleep(0.5)
    return None


async def hold_leadership(conn: psycopg.AsyncConnection[object], stop: asyncio.Event) -> None:
    """Check the lock's connection every second; losing it means another instance may lead
    now, so `stop` is set."""
    while not stop.is_set():
        try:
            await conn.execute("SELECT 1")
        except (psycopg.Error, OSError):
            log.error("lost the leader lock connection; stepping down")
            stop.set()
            return
        await asyncio.sleep(1.0)


@contextlib.asynccontextmanager
async def leadership(
    store: EventStore,
    conninfo: str,
    key: int,
    lease: str,
    stop: asyncio.Event,
    *,
    role: str,
    logger: logging.Logger,
) -> AsyncIterator[int | None]:
    """Lead: wait for advisory lock `key` (`wait_for_leadership`), take lease `lease`'s next
    epoch and yield it, the lock's connection watched meanwhile (`hold_leadership`: losing it
    sets `stop`). None if `stop` was set first. On exit the watch ends and the lock is released.
    `role` and `logger` say who leads: "<role> <host>:<pid> is the leader (epoch <n>)"."""
    conn = await wait_for_leadership(conninfo, key, stop)
    if conn is None:
        yield None
        return
    try:
        holder = f"{socket.gethostname()}:{os.getpid()}"
        epoch = await asyncio.to_thread(store.acquire_lease, lease, holder)
        logger.info("%s %s is the leader (epoch %d)", role, holder, epoch)
        holding = asyncio.create_task(hold_leadership(conn, stop))
        try:
            yield epoch
        finally:
            holding.cancel()
    finally:
        await conn.close()


@dataclass(frozen=True)
class Leader:
    """A single-active service while it leads: its appends are fenced by lease `lease`'s
    `epoch`, and `stop` ends every one of its loops - set on SIGTERM, on losing the lock, or by
    the first append fenced (a newer leader took the lease over)."""

    store: EventStore
    lease: str
    epoch: int
    stop: asyncio.Event
    role: str
    logger: logging.Logger

    @property
    def fence(self) -> tuple[str, int]:
        return (self.lease, self.epoch)

    def step_down(self) -> None:
        """Fenced: log it and stop every loop of this leader."""
        self.logger.error(
            "fenced: a newer %s leads (lease %r past epoch %d); stepping down",
            self.role,
            self.lease,
            self.epoch,
        )
        self.stop.set()

    async def append(
        self,
        items: Sequence[NewEvent],
        *,
        owned: bool = False,
        returned: threading.Event | None = None,
    ) -> list[RecordedEvent] | None:
        """Append `items` in one transaction fenced by the lease. Fenced: step down, and None.
        Any other failure is raised. `owned` as EventStore.append; `returned`, if given, is set
        by the appending thread as soon as the append returns or fails (before this resumes)."""

        def append() -> list[RecordedEvent]:
            try:
                return self.store.append(items, fence=self.fence, owned=owned)
            finally:
                if returned is not None:
                    returned.set()

        try:
            return await asyncio.to_thread(append)
        except FencedError:
            self.step_down()
            return None

    async def try_append(self, items: Sequence[NewEvent], what: str) -> list[RecordedEvent] | None:
        """`append`, any other failure (Postgres away, a concurrent write) logged as "<what>:
        <error>; retrying": None either way, and the caller tries again on its next pass - or
        ends, `stop` being set, when fenced."""
        try:
            return await self.append(items)
        except Exception as e:
            self.logger.warning("%s: %s; retrying", what, e)
            return None


# What a single-active service does while it leads: with its `Leader` and NATS.
Lead = Callable[[Leader, Client, JetStreamContext], Awaitable[None]]


async def run_as_leader(
    settings: Settings,
    stop: asyncio.Event,
    lead: Lead,
    *,
    role: str,
    key: int,
    lease: str,
    logger: logging.Logger,
) -> None:
    """A single-active service's `run`: connect, stand by until this instance leads
    (`leadership`), then `lead` until `stop` (set when fenced, too); close everything after."""
    store = EventStore(settings.database())
    try:
        nc, js = await connect_streams(settings.nats_url, role, settings.nats_credentials())
        conninfo = libpq_url(settings.database())
        async with leadership(store, conninfo, key, lease, stop, role=role, logger=logger) as epoch:
            try:
                if epoch is not None:
                    await lead(Leader(store, lease, epoch, stop, role, logger), nc, js)
            finally:
                await close(nc)
    finally:
        store.close()
