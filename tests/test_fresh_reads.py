"""Reads served from memory while the log proves them current (drover.api.fresh), against a real
PostgreSQL: the log's head read after the request came (drover.runtime.loghead), an answer
served only when this process has heard every commit up to it and none changed the answer's
key; a read after another process's write still shows it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import psycopg
import pytest
from fastapi.testclient import TestClient

from drover.api.app import create_app
from drover.api.fresh import Fresh
from drover.model.events import NodeEligibilityUpdated, NodeStatusUpdated
from drover.runtime.embedded import free_port
from drover.runtime.loghead import LogHead
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, libpq_url
from drover.runtime.watches import ChangeIndex, node_key

from .cluster import node_auth, node_json


def _touch(store: EventStore, node_id: str, eligibility: str = "ineligible") -> int:
    """A commit that changes node `node_id`, as another API process would make it."""
    return store.append([NodeEligibilityUpdated(node_id=node_id, eligibility=eligibility)])[-1].position


@pytest.mark.parametrize(
    ("case", "heard", "served"),
    [
        # Nothing committed since the answer was read.
        ("nothing-committed", "nothing", True),
        # Every commit up to the head heard, none of them the answer's key's.
        ("another-key-changed", "other", True),
        # The key changed after the answer was read.
        ("its-key-changed", "key", False),
        # A commit this process has not heard of yet (its NOTIFY on the way): it may be the key's.
        ("a-commit-not-heard-yet", "none", False),
        # Notifications missed (the LISTEN connection away): everything may have changed.
        ("forgotten", "forget", False),
        # A category's change (too many allocs to name) counts for every key of it.
        ("its-category-changed", "category", False),
    ],
)
async def test_a_kept_answer_is_served_only_while_the_log_proves_it_current(
    store: EventStore, database_url: str, case: str, heard: str, served: bool
) -> None:
    changes = ChangeIndex(floor=store.last_position())
    fresh = Fresh(LogHead(libpq_url(database_url)), changes)
    key = node_key("n0")
    kept_at = store.last_position()
    fresh.keep("read", key, kept_at, b"answer")
    assert (await fresh.index()) == kept_at and fresh.get("read", key, kept_at) is not None
    position = kept_at if heard == "nothing" else _touch(store, "n1" if heard == "other" else "n0")
    if heard == "other":
        changes.note(position, [node_key("n1")])
    elif heard == "key":
        changes.note(position, [key])
    elif heard == "forget":
        changes.forget(position)
    elif heard == "category":
        changes.note(position, [], ["node"])
    now = await fresh.index()
    found = None if now is None else fresh.get("read", key, now)
    assert (found is not None) == served, (case, now, changes.index)
    if served:
        assert now == position and found is not None and found.value == b"answer"
    await fresh.close()


async def test_the_head_is_read_after_each_caller_came_and_shared_by_those_waiting(
    store: EventStore, database_url: str
) -> None:
    head = LogHead(libpq_url(database_url))
    reads = 0
    real = head._read

    async def counted() -> int:
        nonlocal reads
        reads += 1
        return await real()

    head._read = counted  # type: ignore[method-assign]
    assert await head.position() == store.last_position()
    # A write, then a read of the head: it shows the write (never a round begun before it).
    for _ in range(5):
        position = _touch(store, "n0")
        assert await head.position() == position
    # Many callers at once share a few rounds.
    reads = 0
    positions = await asyncio.gather(*(head.position() for _ in range(50)))
    assert set(positions) == {store.last_position()} and 1 <= reads <= 2
    # Callers that may wait (heartbeats) gather into one round over its window...
    reads = 0

    async def later(delay: float) -> int:
        await asyncio.sleep(delay)
        return await head.position(gather=0.2)

    await asyncio.gather(*(later(i * 0.02) for i in range(5)))
    assert reads == 1
    # ... and one that may not starts the round at once, for those gathering too.
    reads = 0
    t0 = time.monotonic()
    await asyncio.gather(head.position(gather=30), head.position())
    assert reads == 1 and time.monotonic() - t0 < 5
    await head.close()


async def test_the_head_says_when_postgres_is_out_of_reach_and_comes_back(
    store: EventStore, database_url: str
) -> None:
    head = LogHead(libpq_url(database_url))
    assert await head.position() == store.last_position()
    with store.engine.connect() as conn:
        conn.exec_driver_sql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    # The connection it held is gone: one call fails (or reconnects), the next reads again.
    with pytest.raises(psycopg.Error):
        await head.position()
    assert await head.position() == store.last_position()
    await head.close()
    unreachable = LogHead(f"postgresql://nobody@127.0.0.1:{free_port()}/none?connect_timeout=2")
    with pytest.raises((psycopg.Error, OSError)):
        await unreachable.position()
    await unreachable.close()


@pytest.fixture
def client(database_url: str, nats_url: str) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, nats_url=nats_url)
    with TestClient(create_app(settings, EventStore(database_url))) as c:
        c.auth = node_auth()
        yield c


def test_a_read_after_another_process_s_write_shows_it(client: TestClient, store: EventStore) -> None:
    """Another API process's write is known here only by its NOTIFY, which may come after the
    next read: that read must still show the write, with an index at least the write's."""
    assert client.put("/v1/drover/node/register", json={"Node": node_json("n0")}).status_code == 200
    eligibility = "eligible"
    for _ in range(40):
        assert client.get("/v1/node/n0").status_code == 200  # kept
        eligibility = "ineligible" if eligibility == "eligible" else "eligible"
        position = _touch(store, "n0", eligibility)
        r = client.get("/v1/node/n0")
        assert int(r.headers["X-Nomad-Index"]) >= position
        assert r.json()["SchedulingEligibility"] == eligibility
    # With nothing written, the answer kept is served: the same bytes at the same index.
    first = client.get("/v1/node/n0")
    again = client.get("/v1/node/n0")
    assert (first.content, first.headers["X-Nomad-Index"]) == (again.content, again.headers["X-Nomad-Index"])
    # A job unknown (404) is kept too, until the job is registered through the store's log.
    assert client.get("/v1/job/later").status_code == 404
    assert client.get("/v1/job/later").status_code == 404


def test_a_heartbeat_brings_back_a_node_marked_down_meanwhile(client: TestClient, store: EventStore) -> None:
    """A beat of a node kept as ready writes nothing; once the leader (another process) marks
    it down, the next beat must see it and bring it back, at once."""
    assert client.put("/v1/drover/node/register", json={"Node": node_json("n0")}).status_code == 200
    for _ in range(10):
        for _ in range(3):
            before = store.last_position()
            r = client.put("/v1/drover/node/n0/heartbeat")
            assert r.status_code == 200 and r.json()["Index"] == before, r.text  # nothing written
        down = store.append([NodeStatusUpdated(node_id="n0", status="down", at=time.time_ns())])[-1].position
        r = client.put("/v1/drover/node/n0/heartbeat")
        assert r.status_code == 200 and r.json()["Index"] > down, r.text
        assert client.get("/v1/node/n0").json()["Status"] == "ready"
