"""Drover on a three-server NATS JetStream cluster (issue 44, part 1): every service is given
the three servers' URLs, the streams and buckets keep three replicas, and the loss of any one
server - the one a service was connected to included - loses no job: what was registered before,
during and after is placed, once each, and the server brought back rejoins."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest

from drover.runtime.bus import EVALS_STREAM, EVENTS_STREAM, server_urls
from drover.runtime.embedded import NATS_USER, EmbeddedNatsCluster
from drover.runtime.settings import Settings

from .cluster import Cluster, job_json

pytestmark = pytest.mark.cluster


@pytest.fixture
def nats_cluster(tmp_path: Path, nats_server: object) -> Iterator[EmbeddedNatsCluster]:
    # The session's NATS password (its file is in DROVER_NATS_PASSWORD_FILE): the services
    # read the same settings whichever NATS they are given.
    creds = Settings().nats_credentials()
    password = creds.password.get_secret_value() if creds is not None else ""
    cluster = EmbeddedNatsCluster(tmp_path / "nats", 3, user=NATS_USER, password=password)
    cluster.start()
    yield cluster
    cluster.stop()


def _replicas(url: str, password: str) -> dict[str, int]:
    async def read() -> dict[str, int]:
        nc = await nats.connect(server_urls(url), user=NATS_USER, password=password)
        try:
            js = nc.jetstream()
            return {
                name: (await js.stream_info(name)).config.num_replicas or 1
                for name in (EVENTS_STREAM, EVALS_STREAM, "KV_drover-members")
            }
        finally:
            await nc.close()

    return asyncio.run(read())


def _running(c: Cluster, job_id: str) -> int:
    return len([a for a in c.get(f"/v1/job/{job_id}/allocations") if a["ClientStatus"] == "running"])


def test_the_loss_of_one_nats_server_of_three_loses_no_job(
    nats_cluster: EmbeddedNatsCluster, database_url: str, tmp_path: Path
) -> None:
    (tmp_path / "logs").mkdir()
    c = Cluster(database_url, nats_cluster.url, tmp_path / "logs").start()
    sim = subprocess.Popen(
        [sys.executable, "-m", "drover.client.sim", "--api", str(c.http.base_url), "--nodes", "4",
         "--data-dir", str(tmp_path / "sim")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=c.env(),
    )  # fmt: skip
    try:
        c.wait(lambda: len(c.get("/v1/nodes")) == 4, timeout=60)
        c.put("/v1/jobs", job_json("before", 4, rolling=False))
        c.wait(lambda: _running(c, "before") == 4, timeout=60, describe=c.logs)
        password = nats_cluster.servers[0].password
        assert _replicas(nats_cluster.url, password) == {
            EVENTS_STREAM: 3,
            EVALS_STREAM: 3,
            "KV_drover-members": 3,
        }

        # Each server in turn: killed, a job registered while it is down, then brought back.
        for i, server in enumerate(nats_cluster.servers):
            assert server.proc is not None
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait()
            c.put("/v1/jobs", job_json(f"during-{i}", 3, rolling=False))
            c.wait(lambda i=i: _running(c, f"during-{i}") == 3, timeout=60, describe=c.logs)
            server.start()
        c.put("/v1/jobs", job_json("after", 2, rolling=False))
        c.wait(lambda: _running(c, "after") == 2, timeout=60, describe=c.logs)

        # Placed once each: no eval ran twice into a second set of allocs.
        allocs = c.get("/v1/allocations")
        by_job: dict[str, int] = {}
        for a in allocs:
            by_job[a["JobID"]] = by_job.get(a["JobID"], 0) + 1
        assert by_job == {"before": 4, "during-0": 3, "during-1": 3, "during-2": 3, "after": 2}
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.wait(timeout=30)
        c.stop()
