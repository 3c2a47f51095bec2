"""Chaos under load on the HA topology (issue 44's proof): 60 jobs of count 25 registered against
simulated nodes while, one after another, a NATS server of three, the PostgreSQL primary (its
standby promoted by pg_auto_failover), the planner's leader and a worker are killed with -9 (the
NATS server and the old primary brought back). Afterwards:

- every job whose register answered 200 exists and is fully placed;
- no node is over-committed; every eval is terminal or blocked; no alloc is placed twice;
- the projections equal the log replayed into them (`drover admin rebuild`'s work);
- the failover time (primary killed to the first register accepted) and the time to converge
  after the last kill are printed, against the issue's targets (30 s, 60 s).

`make chaos` runs it (it is not part of `make test`: it takes two to three minutes of the
suite's 15); .ci/run runs `make chaos` after `make test`."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import httpx
import pytest

from drover.runtime.embedded import EmbeddedNatsCluster
from drover.runtime.embeddedha import PgAutoFailover
from drover.runtime.store import EventStore

from .cluster import Cluster, job_json
from .test_nats_cluster import nats_cluster  # noqa: F401 - fixture
from .test_postgres_failover import _url, formation  # noqa: F401 - fixture

pytestmark = [pytest.mark.cluster, pytest.mark.chaos, pytest.mark.timeout(900)]

JOBS, COUNT, NODES = 60, 25, 60
TERMINAL_OR_BLOCKED = {"complete", "failed", "canceled", "blocked"}


class Registrar(threading.Thread):
    """Registers the jobs one after another, each retried until answered (a 503 while
    PostgreSQL fails over, a refused connection): `accepted` are those answered 200, with when."""

    def __init__(self, base_url: str) -> None:
        super().__init__(daemon=True)
        self.http = httpx.Client(base_url=base_url, timeout=10)
        self.accepted: dict[str, float] = {}
        self.refused: list[tuple[float, str]] = []

    def run(self) -> None:
        for i in range(JOBS):
            job_id = f"chaos-{i:02d}"
            body = job_json(job_id, COUNT, cpu=100, mem=64, rolling=False)
            while job_id not in self.accepted:
                try:
                    r = self.http.put("/v1/jobs", json=body)
                    if r.status_code == 200:
                        self.accepted[job_id] = time.monotonic()
                        break
                    self.refused.append((time.monotonic(), f"{r.status_code} {r.text[:80]}"))
                except httpx.HTTPError as e:
                    self.refused.append((time.monotonic(), type(e).__name__))
                time.sleep(0.2)
            time.sleep(0.25)


class Supervisor(threading.Thread):
    """What `drover up` (or systemd, or a container's restart policy) does for the services: one
    that exits - killed, or a leader stepping down when it lost its lock's connection - is
    started again."""

    def __init__(self, c: Cluster) -> None:
        super().__init__(daemon=True)
        self.c = c
        self.stopping = threading.Event()
        self.restarted: list[str] = []

    def run(self) -> None:
        handled: set[int] = set()
        while not self.stopping.wait(0.5):
            for service, procs in list(self.c.procs.items()):
                for p in list(procs):
                    if p.poll() is not None and p.pid not in handled:
                        handled.add(p.pid)
                        self.restarted.append(service)
                        self.c.spawn(service)


def _placed(c: Cluster, jobs: list[str]) -> bool:
    allocs = c.get("/v1/allocations")
    running = Counter(
        a["JobID"] for a in allocs if a["ClientStatus"] == "running" and a["DesiredStatus"] == "run"
    )
    return all(running[j] == COUNT for j in jobs)


def test_the_ha_topology_rides_a_kill_of_each_part_under_load(
    nats_cluster: EmbeddedNatsCluster,  # noqa: F811
    formation: PgAutoFailover,  # noqa: F811
    tmp_path: Path,
) -> None:
    (tmp_path / "logs").mkdir()
    c = Cluster(_url(formation), nats_cluster.url, tmp_path / "logs", workers=2, planners=2, leaders=2, gcs=2)
    c.start()
    supervisor = Supervisor(c)
    supervisor.start()
    sim = subprocess.Popen(
        [sys.executable, "-m", "drover.client.sim", "--api", str(c.http.base_url), "--nodes", str(NODES),
         "--data-dir", str(tmp_path / "sim")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=c.env(),
    )  # fmt: skip
    try:
        c.wait(lambda: len(c.get("/v1/nodes")) == NODES, timeout=60)
        registrar = Registrar(str(c.http.base_url))
        registrar.start()
        time.sleep(3)

        nats0 = nats_cluster.servers[0]
        assert nats0.proc is not None
        nats0.proc.send_signal(signal.SIGKILL)
        nats0.proc.wait()
        time.sleep(4)
        nats0.start()

        time.sleep(2)
        primary = formation.primary()
        assert primary is not None
        formation.kill(primary)
        killed_primary = time.monotonic()
        accepted_after = lambda: [t for t in registrar.accepted.values() if t > killed_primary]  # noqa: E731
        c.wait(accepted_after, timeout=60, interval=0.1, describe=lambda: registrar.refused[-5:])
        failover = min(accepted_after()) - killed_primary
        formation.revive(primary)

        time.sleep(2)
        c.kill("planner", 0)
        time.sleep(2)
        c.kill("worker", 0)
        last_kill = time.monotonic()

        registrar.join(timeout=180)
        assert not registrar.is_alive(), "the registrar never finished"
        jobs = sorted(registrar.accepted)
        assert len(jobs) == JOBS
        c.wait(lambda: _placed(c, jobs), timeout=120, interval=0.5, describe=c.logs)
        converged = time.monotonic() - last_kill
        print(f"\nchaos: failover {failover:.1f} s (target 30), converged {converged:.1f} s after the last kill "
              f"(target 60), {len(registrar.refused)} refused registers meanwhile, services started again: "
              f"{sorted(supervisor.restarted)}")  # fmt: skip
        _check_invariants(c, jobs)
        assert failover < 30
        assert converged < 60
    finally:
        supervisor.stopping.set()
        supervisor.join()
        sim.send_signal(signal.SIGTERM)
        sim.wait(timeout=30)
        c.stop()
    # The services stopped: the projections must equal the log replayed into them.
    store = EventStore(_url(formation))
    try:
        before = store.projection_dump()
        store.rebuild_projections()
        assert store.projection_dump() == before
    finally:
        store.close()


def _check_invariants(c: Cluster, jobs: list[str]) -> None:
    for job_id in jobs:
        assert c.get(f"/v1/job/{job_id}")["ID"] == job_id
    allocs = c.get("/v1/allocations")
    live = [a for a in allocs if a["DesiredStatus"] == "run" and a["ClientStatus"] in ("pending", "running")]
    # No alloc placed twice: one live alloc per name.
    names = Counter((a["JobID"], a["Name"]) for a in live)
    assert [n for n, k in names.items() if k > 1] == []
    # No node over-committed.
    used: dict[str, int] = defaultdict(int)
    for a in live:
        used[a["NodeID"]] += 100
    nodes = {n["ID"]: c.get(f"/v1/node/{n['ID']}") for n in c.get("/v1/nodes")}
    for node_id, cpu in used.items():
        node = nodes[node_id]
        capacity = node["NodeResources"]["Cpu"]["CpuShares"] - node["ReservedResources"]["Cpu"]["CpuShares"]
        assert cpu <= capacity, node_id
    # Every eval terminal or blocked.
    statuses = Counter(e["Status"] for e in c.get("/v1/evaluations", per_page=100_000))
    assert set(statuses) <= TERMINAL_OR_BLOCKED, statuses
