"""Leader election for single-active services (plan applier, leader loops, garbage collector):
a Postgres advisory lock held on a dedicated connection. The lock goes with the session, so a dead
leader's lock is released at once and a standby polling for it takes over; the new leader
then takes a new lease epoch (EventStore.acquire_lease) that fences the old one's appends.
`leadership` does all of it, and `run_as_leader` is a single-active service's whole `run`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import psycopg
from nats.aio.client import Client
from nats.js import JetStreamContext

from drover.runtime.bus import close, connect_streams
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, libpq_url

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


# What a single-active service does while it leads: with the store, NATS and its lease epoch.
Lead = Callable[[EventStore, Client, JetStreamContext, int], Awaitable[None]]


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
    (`leadership`), then `lead` until `stop` (or until fenced); close everything after."""
    store = EventStore(settings.database_url)
    try:
        nc, js = await connect_streams(settings.nats_url, role)
        conninfo = libpq_url(settings.database_url)
        async with leadership(store, conninfo, key, lease, stop, role=role, logger=logger) as epoch:
            try:
                if epoch is not None:
                    await lead(store, nc, js, epoch)
            finally:
                await close(nc)
    finally:
        store.close()
