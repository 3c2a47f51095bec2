"""The leadership helper on a real PostgreSQL: one leader at a time, each with a newer lease
epoch; a standby stopped before it leads gets None; a leader whose lock connection is killed
is told to stop; a leader whose lease a newer one took over is fenced at its next append and
steps down, every loop of it stopped; the leader service's lease renamed keeps its epoch."""

from __future__ import annotations

import asyncio
import logging

import psycopg
import pytest
from alembic import command

from drover.model import Node
from drover.model.events import NodeRegistered
from drover.runtime.leader import Leader, leadership, run_as_leader
from drover.runtime.locks import PLANNER_LOCK_KEY
from drover.runtime.settings import Settings
from drover.runtime.store import ConcurrencyError, EventStore, FencedError, NewEvent, libpq_url
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


def registered(node_id: str) -> list[NewEvent]:
    return [NewEvent(NodeRegistered(node=Node(id=node_id)))]


async def test_a_fenced_append_steps_down_and_another_failure_is_retried(store: EventStore) -> None:
    stop = asyncio.Event()
    leader = Leader(store, LEASE, store.acquire_lease(LEASE, "a"), stop, "test", log)
    assert await leader.append(registered("n1")) is not None
    # Another failure (here a stream not at the version expected): raised by `append`, logged
    # and None from `try_append`; this one still leads.
    conflicting = [NewEvent(NodeRegistered(node=Node(id="n2")), expected_version=7)]
    with pytest.raises(ConcurrencyError):
        await leader.append(conflicting)
    assert await leader.try_append(conflicting, "x") is None
    assert not stop.is_set()
    store.acquire_lease(LEASE, "b")  # a newer leader
    before = store.last_position()
    assert await leader.try_append(registered("n3"), "x") is None
    assert stop.is_set()
    assert store.last_position() == before


async def test_a_fenced_append_stops_every_loop_of_the_leader(
    store: EventStore, database_url: str, nats_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Two loops of one leader append on their own; once a newer leader takes the lease over, the
    first append fenced stops both, and `run_as_leader` returns with nothing more in the log."""
    stop = asyncio.Event()
    appended: list[int] = []

    async def lead(leader: Leader, nc: object, js: object) -> None:
        async def loop(name: str) -> None:
            i = 0
            while not leader.stop.is_set():
                i += 1
                recorded = await leader.try_append(registered(f"{name}-{i}"), name)
                if recorded is not None:
                    appended.append(recorded[-1].position)
                await asyncio.sleep(0.02)

        await asyncio.gather(loop("a"), loop("b"))

    settings = Settings(database_url=database_url, nats_url=nats_url)
    running = asyncio.create_task(
        run_as_leader(settings, stop, lead, role="test", key=PLANNER_LOCK_KEY, lease=LEASE, logger=log)
    )
    async with asyncio.timeout(30):
        while len(appended) < 4:
            await asyncio.sleep(0.02)
    await asyncio.to_thread(store.acquire_lease, LEASE, "newer")
    taken_over_at = store.last_position()
    async with asyncio.timeout(10):
        await running
    assert stop.is_set()
    assert "stepping down" in caplog.text
    assert store.last_position() == taken_over_at == max(appended)


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
