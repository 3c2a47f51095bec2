"""Drover against its servers as containers (testcontainers, the images of deploy/images):
PostgreSQL takes the migration and an append with text beyond ASCII, read back as text (the
cluster is UTF8: an SQL_ASCII one makes psycopg hand back bytes); NATS takes Drover's streams,
a publish and its consumption, the duplicate window and the work queue; the relay carries the
log from the one to the other."""

from __future__ import annotations

import json
from collections.abc import Iterator

import psycopg
import pytest

from drover.model import Job, Resources, Task, TaskGroup
from drover.model.canonicalize import canonicalize
from drover.model.events import JobRegistered, decode_event
from drover.runtime.bus import (
    EVALS_STREAM,
    EVALS_SUBJECT,
    EVENTS_STREAM,
    EVENTS_SUBJECT_PREFIX,
    MSG_ID_HEADER,
    POSITION_HEADER,
    close,
    connect,
    connect_streams,
    ensure_streams,
    position_of,
)
from drover.runtime.relay import Relay
from drover.runtime.store import EventStore, libpq_url, migrate
from drover.runtime.store.migrate import SCHEMA_HEAD, check_schema

from .containers import LOOPBACK, Served, container_nats, container_postgres, host_bindings  # noqa: F401

# Letters from three scripts, a combining accent and an emoji: each a multi-byte UTF-8 sequence.
TEXT = "Zoë Ångström — 東京 — Ελλάδα — e\u0301 — 🚀"


def job() -> Job:
    return canonicalize(
        Job(
            id="utf8",
            meta={"owner": TEXT},
            task_groups=[
                TaskGroup(
                    name="g",
                    tasks=[Task(name="t", driver="mock", resources=Resources(cpu=100, memory_mb=64))],
                )
            ],
        )
    )


@pytest.fixture(scope="module")
def migrated(container_postgres: Served) -> str:  # noqa: F811 - the fixture imported above
    migrate(container_postgres.url)
    return container_postgres.url


@pytest.fixture
def store(migrated: str) -> Iterator[EventStore]:
    s = EventStore(migrated)
    yield s
    s.close()


def test_the_servers_are_published_on_loopback_only(
    container_postgres: Served,  # noqa: F811
    container_nats: Served,  # noqa: F811
) -> None:
    for served in (container_postgres, container_nats):
        bindings = host_bindings(served.container)
        assert bindings and all(ip == LOOPBACK for ip, _ in bindings), bindings
        assert any(f"{LOOPBACK}:{port}/" in served.url + "/" for _, port in bindings)


def test_migration_brings_the_container_database_to_this_code(migrated: str) -> None:
    check_schema(migrated)  # raises at another migration
    with psycopg.connect(libpq_url(migrated)) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == (SCHEMA_HEAD,)
        assert conn.execute("SHOW server_encoding").fetchone() == ("UTF8",)
        assert conn.execute("SELECT to_regclass('events') IS NOT NULL").fetchone() == (True,)
    migrate(migrated)  # a second run changes nothing
    check_schema(migrated)


def test_an_event_beyond_ascii_is_appended_and_read_back_as_text(store: EventStore) -> None:
    before = store.last_position()
    [recorded] = store.append([JobRegistered(job=job())])
    assert recorded.position == before + 1
    [read] = [r for r in store.read(before) if r.position == recorded.position]
    assert isinstance(read.event, JobRegistered) and read.event.job.meta == {"owner": TEXT}
    [(_, kind, data, _)] = [r for r in store.read_raw(before) if r[0] == recorded.position]
    assert kind == "JobRegistered" and isinstance(data, str)
    assert json.loads(data)["Job"]["Meta"] == {"owner": TEXT}
    # The projection too, as the API reads it.
    state = store.replay()
    projected = state.job("default", "utf8")
    assert projected is not None and projected.meta == {"owner": TEXT}


async def test_streams_publish_and_consume_on_the_container_nats(container_nats: Served) -> None:  # noqa: F811
    nc, js = await connect_streams(container_nats.url, "test-containers")
    try:
        await ensure_streams(js)  # again: the streams exist and are updated in place
        names = {info.config.name for info in await js.streams_info()}
        assert {EVENTS_STREAM, EVALS_STREAM} <= names
        await js.purge_stream(EVENTS_STREAM)

        # An event as the relay publishes it; a second publish with its message ID is dropped.
        subject = EVENTS_SUBJECT_PREFIX + "JobRegistered"
        headers = {POSITION_HEADER: "1", MSG_ID_HEADER: "log:1"}
        first = await js.publish(subject, TEXT.encode(), headers=headers)
        again = await js.publish(subject, TEXT.encode(), headers=headers)
        assert not first.duplicate and again.duplicate and again.seq == first.seq
        sub = await js.pull_subscribe(subject, durable=None, stream=EVENTS_STREAM)
        [msg] = await sub.fetch(1, timeout=5)
        assert msg.data.decode() == TEXT and position_of(msg.headers) == 1
        await msg.ack()

        # An eval on the work queue: a worker's pull consumer takes it, and once acked it is gone.
        await js.purge_stream(EVALS_STREAM)
        await js.publish(EVALS_SUBJECT, b'{"ID": "e1"}', headers={MSG_ID_HEADER: "eval:e1"})
        workers = await js.pull_subscribe(EVALS_SUBJECT, durable="workers", stream=EVALS_STREAM)
        [work] = await workers.fetch(1, timeout=5)
        assert json.loads(work.data) == {"ID": "e1"}
        await work.ack_sync()
        assert (await js.stream_info(EVALS_STREAM)).state.messages == 0
    finally:
        await close(nc)


async def test_the_relay_carries_the_container_log_to_the_container_stream(
    store: EventStore,
    migrated: str,
    container_nats: Served,  # noqa: F811
) -> None:
    nc = await connect(container_nats.url, "test-relay")
    try:
        js = nc.jetstream()
        await ensure_streams(js)
        await js.purge_stream(EVENTS_STREAM)
        store.append([JobRegistered(job=job())])
        relay = Relay(store, js, libpq_url(migrated))
        while await relay.pump():
            pass
        info = await js.stream_info(EVENTS_STREAM)
        seqs = range(info.state.first_seq, info.state.last_seq + 1)
        positions = [position_of((await js.get_msg(EVENTS_STREAM, seq=seq)).headers) for seq in seqs]
        assert positions == list(range(1, store.last_position() + 1))
        last = await js.get_msg(EVENTS_STREAM, seq=info.state.last_seq)
        event = decode_event(last.data)  # as a replica reads it
        assert isinstance(event, JobRegistered) and event.job.meta == {"owner": TEXT}
    finally:
        await close(nc)
