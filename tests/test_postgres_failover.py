"""Drover on PostgreSQL with automatic failover (issue 44, part 2): a pg_auto_failover formation
of a primary and a synchronous standby (drover.runtime.embeddedha), reached through one
multi-host URL with `target_session_attrs=read-write`. The primary's machine lost (its keeper
and server killed with -9): the standby is promoted, every append acknowledged before is there,
the services reconnect and place what is registered after, and a leader holding the lease epoch
of before the failover cannot append once a new leader took the lease on the new primary.

Needs Debian's postgresql-15-auto-failover (`.ci/run` installs it); without it these tests skip,
except under CI, where they fail."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from drover.model import Node
from drover.model.events import NodeRegistered
from drover.runtime import embeddedha
from drover.runtime.embeddedha import PgAutoFailover
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, FencedError, NewEvent, migrate

from .cluster import Cluster, job_json

if not embeddedha.available() and os.environ.get("CI") != "true":
    pytest.skip("no pg_auto_failover (apt-get install postgresql-15-auto-failover)", allow_module_level=True)

pytestmark = pytest.mark.cluster
LEASE = "failover-test"


@pytest.fixture
def formation(tmp_path: Path, postgres: object) -> Iterator[PgAutoFailover]:
    # The session's PostgreSQL password (DROVER_DATABASE_PASSWORD_FILE): the services read the
    # same settings whichever server they are given.
    f = PgAutoFailover(tmp_path / "pg", _password())
    try:
        f.start()
        migrate(_url(f))
        yield f
    finally:
        f.stop()


def _password() -> str:
    return Path(Settings().database_password_file).read_text().strip()


def _url(f: PgAutoFailover) -> str:
    return make_url(f.url).set(password=_password()).render_as_string(hide_password=False)


def _registered(node_id: str) -> list[NewEvent]:
    return [NewEvent(NodeRegistered(node=Node(id=node_id)))]


def _fail_over(f: PgAutoFailover, store: EventStore) -> float:
    """Kill the primary; seconds until an append is accepted again."""
    old = f.primary()
    assert old is not None
    f.kill(old)
    killed = time.monotonic()
    while True:
        try:
            store.append(_registered(f"after-{old}"))
            return time.monotonic() - killed
        except Exception:
            assert time.monotonic() - killed < 60, "no primary after 60 s"
            time.sleep(0.25)


def test_an_old_lease_epoch_cannot_append_after_a_failover(formation: PgAutoFailover) -> None:
    store = EventStore(_url(formation))
    try:
        epoch = store.acquire_lease(LEASE, "old-leader")
        store.append(_registered("before"), fence=(LEASE, epoch))
        acknowledged = store.last_position()
        failover = _fail_over(formation, store)
        assert failover < 30, f"failover took {failover:.1f} s"
        # Acknowledged before the failover: on the new primary (the standby was synchronous).
        assert store.stream_version("node:before") == 1 and store.last_position() > acknowledged
        newer = EventStore(_url(formation))
        try:
            assert newer.acquire_lease(LEASE, "new-leader") == epoch + 1
        finally:
            newer.close()
        before = store.last_position()
        with pytest.raises(FencedError):
            store.append(_registered("fenced"), fence=(LEASE, epoch))
        assert store.last_position() == before
    finally:
        store.close()


def test_the_services_ride_a_failover_and_place_what_comes_after(formation: PgAutoFailover, nats_url: str,
                                                                 tmp_path: Path, js_fresh: object) -> None:  # fmt: skip
    (tmp_path / "logs").mkdir()
    # Standbys as drover up runs them: a leader losing its lock connection steps down and exits.
    c = Cluster(_url(formation), nats_url, tmp_path / "logs", planners=2, leaders=2, gcs=2).start()
    sim = subprocess.Popen(
        [sys.executable, "-m", "drover.client.sim", "--api", str(c.http.base_url), "--nodes", "3",
         "--data-dir", str(tmp_path / "sim")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=c.env(),
    )  # fmt: skip
    try:
        c.wait(lambda: len(c.get("/v1/nodes")) == 3, timeout=60)
        c.put("/v1/jobs", job_json("before", 3, rolling=False))
        c.wait(lambda: _running(c, "before") == 3, timeout=60, describe=c.logs)
        old = formation.primary()
        assert old is not None
        formation.kill(old)
        killed = time.monotonic()
        while (r := c.http.put("/v1/jobs", json=job_json("after", 2, rolling=False))).status_code != 200:
            assert r.status_code == 503, r.text  # PostgreSQL out of reach: said so, nothing kept
            assert time.monotonic() - killed < 60, c.logs()
            time.sleep(0.5)
        c.wait(lambda: _running(c, "after") == 2, timeout=90, describe=c.logs)
        assert _running(c, "before") == 3
        formation.revive(old)
        formation.wait_healthy()
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.wait(timeout=30)
        c.stop()


def _running(c: Cluster, job_id: str) -> int:
    return len([a for a in c.get(f"/v1/job/{job_id}/allocations") if a["ClientStatus"] == "running"])
