"""The audit subscriber (drover.audit) against real NATS and PostgreSQL: every event of the log is
in its trail exactly once, equal to the log, across redeliveries, kill -9 of the subscriber and a
NATS restart; events sent without their body, and those gone from the stream, are read from the
log."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import psycopg
import pytest
from nats.js import JetStreamContext

from drover.audit.subscriber import Counts, build
from drover.audit.trail import Trail
from drover.model import Node
from drover.model.events import NodeRegistered, NodeStatusUpdated
from drover.runtime.bus import BODY_HEADER, BODY_IN_LOG, EVENTS_STREAM
from drover.runtime.embedded import EmbeddedNats
from drover.runtime.relay import Relay
from drover.runtime.store import EventStore, libpq_url

from .cluster import nats_credentials

pytestmark = pytest.mark.cluster  # the subscriber and a relay as processes


def trail_rows(conninfo: str, log_id: str) -> list[tuple[int, str, object]]:
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute(
            "SELECT position, type, event FROM audit_trail WHERE log_id = %s ORDER BY position", (log_id,)
        ).fetchall()
    return [(int(r[0]), str(r[1]), r[2]) for r in rows]


def log_rows(conninfo: str) -> list[tuple[int, str, object]]:
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute("SELECT position, type, data FROM events ORDER BY position").fetchall()
    return [(int(r[0]), str(r[1]), r[2]) for r in rows]


def trail_count(conninfo: str) -> int:
    with psycopg.connect(conninfo) as conn:
        exists = conn.execute("SELECT to_regclass('audit_trail') IS NOT NULL").fetchone()
        if not exists or not exists[0]:
            return 0
        row = conn.execute("SELECT count(*) FROM audit_trail").fetchone()
    return int(row[0]) if row else 0


async def until(cond: Callable[[], bool | Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if not isinstance(got, bool):
            got = await got
        if got:
            return
        assert time.monotonic() < deadline, f"{what} not met in {timeout} s"
        await asyncio.sleep(0.05)


def append_nodes(store: EventStore, prefix: str, n: int, chunk: int = 50) -> None:
    for i in range(0, n, chunk):
        store.append([NodeRegistered(node=Node(id=f"{prefix}-{j}")) for j in range(i, min(n, i + chunk))])


async def test_redeliveries_and_bodies_in_the_log(
    store: EventStore, database_url: str, nats_url: str, js_fresh: JetStreamContext
) -> None:
    """Every message delivered twice (the durable consumer deleted and made again, so the whole
    stream comes again) leaves one row per event; an event relayed without its body is recorded
    with the log's."""
    js = js_fresh
    conninfo = libpq_url(database_url)
    big = Node(id="big", meta={"blob": "x" * 5000})
    append_nodes(store, "n", 40)
    store.append([NodeRegistered(node=big)])
    store.append([NodeStatusUpdated(node_id="n-1", status="down") for _ in range(9)])
    # A body over 4 kB goes by the log: the relay, not NATS, sets this limit here.
    await Relay(store, js, conninfo, max_body=4096).pump()
    msg = await js.get_msg(EVENTS_STREAM, seq=(await js.stream_info(EVENTS_STREAM)).state.first_seq + 40)
    assert msg.headers is not None and msg.headers[BODY_HEADER] == BODY_IN_LOG and not msg.data
    log_id = store.log_id()

    async def run_once(counts: Counts) -> None:
        trail = Trail(conninfo, conninfo)
        await trail.ensure()
        broker = build(
            nats_url, trail, credentials=nats_credentials(), durable="audit-test", ack_wait=2.0, counts=counts
        )
        await broker.start()
        try:
            await until(lambda: counts.recorded + counts.repeated >= 50, 30, "every message handled")
        finally:
            await broker.stop()
            await trail.close()

    first = Counts()
    await run_once(first)
    assert (first.recorded, first.repeated, first.failed) == (50, 0, 0)
    await js.delete_consumer(EVENTS_STREAM, "audit-test")
    again = Counts()
    await run_once(again)
    assert (again.recorded, again.repeated, again.failed) == (0, 50, 0)
    assert trail_rows(conninfo, log_id) == log_rows(conninfo)
    assert trail_rows(conninfo, log_id)[40][2]["Node"]["Meta"]["blob"] == "x" * 5000  # type: ignore[index]


async def test_events_gone_from_the_stream_are_read_from_the_log(
    store: EventStore, database_url: str, nats_url: str, js_fresh: JetStreamContext
) -> None:
    """The stream keeps 24 hours: what it no longer holds when the subscriber starts is copied
    from the log, and the stream's own messages then come as repeats."""
    js = js_fresh
    conninfo = libpq_url(database_url)
    append_nodes(store, "old", 30)
    relay = Relay(store, js, conninfo)
    await relay.pump()
    await js.purge_stream(EVENTS_STREAM, keep=1)  # positions 1-29 aged out
    append_nodes(store, "new", 5)
    await relay.pump()
    trail = Trail(conninfo, conninfo)
    await trail.ensure()
    assert await trail.backfill(batch=7) == 35
    assert await trail.backfill() == 0
    counts = Counts()
    broker = build(
        nats_url, trail, credentials=nats_credentials(), durable="audit-test", ack_wait=2.0, counts=counts
    )
    await broker.start()
    try:
        await until(lambda: counts.repeated >= 6, 30, "the stream's messages handled")
    finally:
        await broker.stop()
        await trail.close()
    assert (counts.recorded, counts.repeated, counts.failed) == (0, 6, 0)
    assert trail_rows(conninfo, store.log_id()) == log_rows(conninfo)


def spawn(module: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    out = open(log, "ab")  # noqa: SIM115 - owned by the child
    return subprocess.Popen([sys.executable, "-m", module], env=env, stdout=out, stderr=subprocess.STDOUT)


async def test_every_event_once_across_kill_9_and_a_nats_restart(
    store: EventStore,
    database_url: str,
    nats_server: EmbeddedNats | str,
    js_fresh: JetStreamContext,
    tmp_path: Path,
) -> None:
    if isinstance(nats_server, str):
        pytest.fail("this test restarts NATS: it needs the harness's own server, not DROVER_NATS_URL")
    conninfo = libpq_url(database_url)
    env = {
        **os.environ,
        "DROVER_DATABASE_URL": database_url,
        "DROVER_NATS_URL": nats_server.url,
        "DROVER_AUDIT_ACK_WAIT": "2",
        "DROVER_LOG_LEVEL": "INFO",
    }
    procs = [
        spawn("drover.relay", env, tmp_path / "relay.log"),
        spawn("drover.audit", env, tmp_path / "audit-0.log"),
    ]

    def logs() -> str:
        return "\n".join(f"--- {f.name}\n{f.read_text()[-3000:]}" for f in sorted(tmp_path.glob("*.log")))

    try:
        started = tmp_path / "audit-0.log"
        await until(lambda: "recording EVENTS" in started.read_text(), 60, "the subscriber started")
        # Appended while it records from the stream (it has read the log up to its start).
        appending = asyncio.create_task(asyncio.to_thread(append_nodes, store, "a", 1500, 10))
        await until(lambda: trail_count(conninfo) >= 200, 60, "the subscriber recording")
        procs[1].send_signal(signal.SIGKILL)  # mid-stream: some recorded and not yet acked
        procs[1].wait()
        killed_at = trail_count(conninfo)
        await appending
        assert killed_at < 1500, "the kill came too late to test anything"
        # Restarted while NATS is away: it reads the log, then waits for NATS.
        nats_server.stop()
        procs.append(spawn("drover.audit", env, tmp_path / "audit-1.log"))
        append_nodes(store, "b", 500)
        await asyncio.sleep(2.0)
        nats_server.start()
        restarted = tmp_path / "audit-1.log"
        await until(lambda: "recording EVENTS" in restarted.read_text(), 60, "the subscriber restarted")
        await until(lambda: trail_count(conninfo) >= 2000, 60, "what was appended while NATS was away")
        # NATS restarted under the running subscriber, with events appended meanwhile.
        nats_server.stop()
        append_nodes(store, "c", 300)  # relayed once NATS is back
        await asyncio.sleep(1.0)
        nats_server.start()
        append_nodes(store, "d", 300)
        total = store.last_position()
        assert total == 2600
        try:
            await until(lambda: trail_count(conninfo) >= total, 120, "every event recorded")
        except AssertionError as e:
            info = await js_fresh.stream_info(EVENTS_STREAM)
            consumer = await js_fresh.consumer_info(EVENTS_STREAM, "audit")
            seen = f"stream last_seq {info.state.last_seq}, consumer pending {consumer.num_pending} ack pending {consumer.num_ack_pending}"
            raise AssertionError(f"{e}: {trail_count(conninfo)} of {total}; {seen}\n{logs()}") from None
        await asyncio.sleep(2.5)  # past the ack wait: any redelivery still due has come
        assert trail_rows(conninfo, store.log_id()) == log_rows(conninfo)
        assert trail_count(conninfo) == total
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
