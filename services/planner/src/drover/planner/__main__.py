"""`drover-planner`: the plan applier service. Every instance waits for leadership (a Postgres
advisory lock held on a dedicated connection); the leader takes a new lease epoch and serves
plan submissions one at a time; the others stand by."""

from __future__ import annotations

import asyncio
import logging
import os
import socket

import psycopg
from nats.aio.msg import Msg

from drover.common.bus import PLAN_SUBJECT, close, connect, ensure_streams
from drover.common.replica import Replica
from drover.common.service import run_service
from drover.common.settings import Settings
from drover.common.store import EventStore, FencedError, libpq_url
from drover.common.telemetry import extract, tracer
from drover.planner.applier import LEASE, PlanApplier
from drover.scheduler.wire import PlanResponse, decode_request, encode_response

log = logging.getLogger("drover.planner")
_tracer = tracer("drover.planner")
LEADER_LOCK_KEY = 4_646_001


async def wait_for_leadership(conninfo: str, stop: asyncio.Event) -> psycopg.AsyncConnection[object] | None:
    """Block until this process holds the leader lock; the returned connection holds it (the
    lock goes with the session, so a dead leader releases it at once)."""
    while not stop.is_set():
        try:
            conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
            while not stop.is_set():
                row = await (
                    await conn.execute("SELECT pg_try_advisory_lock(%s)", (LEADER_LOCK_KEY,))
                ).fetchone()
                if row and row[0]:
                    return conn
                await asyncio.sleep(0.25)
            await conn.close()
        except (psycopg.Error, OSError) as e:
            log.warning("leader election: %s", e)
            await asyncio.sleep(0.5)
    return None


async def run(settings: Settings, stop: asyncio.Event) -> None:
    store = EventStore(settings.database_url)
    nc = await connect(settings.nats_url, "planner")
    js = nc.jetstream()
    await ensure_streams(js)
    holder = f"{socket.gethostname()}:{os.getpid()}"
    lock_conn = await wait_for_leadership(libpq_url(settings.database_url), stop)
    if lock_conn is None:
        return
    epoch = await asyncio.to_thread(store.acquire_lease, LEASE, holder)
    log.info("planner %s is the leader (epoch %d)", holder, epoch)
    replica = Replica(store, js)
    await replica.start()
    applier = PlanApplier(store, replica, epoch)
    queue: asyncio.Queue[Msg] = asyncio.Queue()

    async def on_plan(msg: Msg) -> None:
        await queue.put(msg)

    sub = await nc.subscribe(PLAN_SUBJECT, queue="planner", cb=on_plan)

    async def watch_lock() -> None:
        # Losing the lock connection means another instance may lead now: stop serving.
        while not stop.is_set():
            try:
                await lock_conn.execute("SELECT 1")
            except (psycopg.Error, OSError):
                log.error("lost the leader lock connection; stepping down")
                stop.set()
                return
            await asyncio.sleep(1.0)

    watcher = asyncio.create_task(watch_lock())
    try:
        while not stop.is_set():
            try:
                msg = await asyncio.wait_for(queue.get(), 0.5)
            except TimeoutError:
                continue
            try:
                with _tracer.start_as_current_span("planner.apply", context=extract(msg.headers)):
                    resp = await applier.apply(decode_request(msg.data))
            except FencedError:
                log.error("fenced: a newer leader exists; stepping down")
                stop.set()
                break
            except Exception as e:
                log.exception("plan failed")
                resp = PlanResponse(full=False, error=str(e))
            try:
                await msg.respond(encode_response(resp))
            except Exception as e:  # the worker retries; a committed plan's eval is then done
                log.warning("could not answer a plan: %s", e)
    finally:
        watcher.cancel()
        await sub.unsubscribe()
        await close(nc)
        await lock_conn.close()
        store.close()


def main() -> None:
    run_service("planner", run)


if __name__ == "__main__":
    main()
