"""The leadership helper on a real PostgreSQL: one leader at a time, each with a newer lease
epoch; a standby stopped before it leads gets None; a leader whose lock connection is killed
is told to stop; the leader service's lease renamed keeps its epoch."""

from __future__ import annotations

import asyncio
import logging

import psycopg
import pytest
from alembic import command

from drover.model import Node
from drover.model.events import NodeRegistered
from drover.runtime.leader import leadership
from drover.runtime.locks import PLANNER_LOCK_KEY
from drover.runtime.store import EventStore, FencedError, libpq_url
from drover.runtime.store.migrate import alembic_config, migrate

log = logging.getLogger("drover.test")
LEASE = "test-lease"


async def test_one_leader_at_a_time_each_with_a_newer_epoch(store: EventStore, database_url: str) -> None:
    conninfo = libpq_url(database_url)
    first_stop, second_stop = asyncio.Event(), asyncio.Event()
    epochs: list[int | None] = []
    second_leads = asyncio.Event()

    async def standby() -> None:
        async with leadership(
            store, conninfo, PLANNER_LOCK_KEY, LEASE, second_stop, role="test", logger=log
        ) as epoch:
            epochs.append(epoch)
            second_leads.set()
            await second_stop.wait()

    async with leadership(
        store, conninfo, PLANNER_LOCK_KEY, LEASE, first_stop, role="test", logger=log
    ) as epoch:
        epochs.append(epoch)
        second = asyncio.create_task(standby())
        await asyncio.sleep(1.0)  # the standby polls the lock every 0.25 s
        assert not second_leads.is_set()
    async with asyncio.timeout(5):
        await second_leads.wait()
    assert epochs == [1, 2]
    assert not first_stop.is_set()  # left of its own accord, not told to stop
    second_stop.set()
    await second


async def test_a_standby_stopped_before_it_leads_gets_none(store: EventStore, database_url: str) -> None:
    conninfo = libpq_url(database_url)
    leader_stop, standby_stop = asyncio.Event(), asyncio.Event()
    async with leadership(store, conninfo, PLANNER_LOCK_KEY, LEASE, leader_stop, role="test", logger=log):

        async def standby() -> int | None:
            async with leadership(
                store, conninfo, PLANNER_LOCK_KEY, LEASE, standby_stop, role="test", logger=log
            ) as epoch:
                return epoch

        task = asyncio.create_task(standby())
        await asyncio.sleep(0.3)
        standby_stop.set()
        async with asyncio.timeout(5):
            assert await task is None


async def test_a_leader_that_loses_its_lock_connection_is_told_to_stop(
    store: EventStore, database_url: str
) -> None:
    conninfo = libpq_url(database_url)
    stop = asyncio.Event()
    async with leadership(store, conninfo, PLANNER_LOCK_KEY, LEASE, stop, role="test", logger=log) as epoch:
        assert epoch == 1
        async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
            await conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s",
                (PLANNER_LOCK_KEY,),
            )
        async with asyncio.timeout(5):
            await stop.wait()


def test_the_leader_lease_keeps_its_epoch_across_its_rename(database_url: str) -> None:
    """Migration 0009 renames the leader service's lease from `heartbeat-watcher` to `leader`:
    the next leader takes the epoch after the old one's, and a process still appending under
    the old name is fenced."""
    command.downgrade(alembic_config(database_url), "0008")
    store = EventStore(database_url)
    try:
        store.acquire_lease("heartbeat-watcher", "old:1")
        old = store.acquire_lease("heartbeat-watcher", "old:2")
        migrate(database_url)
        assert store.acquire_lease("leader", "new:1") == old + 1
        with pytest.raises(FencedError):
            store.append([NodeRegistered(node=Node(id="n1"))], fence=("heartbeat-watcher", old))
    finally:
        store.close()
