"""The agent's collection of alloc directories end to end (Nomad's client GC): a real agent
keeps at most gc_max_allocs allocs' directories, removing the longest-finished first, and
removes those of allocs the servers have collected."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .cluster import Cluster
from .test_client import AGENT_START, ENV, Agents, agents, allocs, service_job  # noqa: F401 - the agents fixture


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, env=ENV).start()
    yield c
    c.stop()


def test_the_agent_keeps_gc_max_allocs_and_drops_what_the_servers_forgot(
    cluster: Cluster,
    agents: Agents,  # noqa: F811
    tmp_path: Path,
) -> None:
    c = cluster
    agents.start("a1", "--enable-raw-exec", "--gc-max-allocs", "2", "--gc-interval", "1s")
    c.wait(lambda: [n for n in c.get("/v1/nodes") if n["Status"] == "ready"], timeout=AGENT_START)
    job = service_job(
        "once", {"Driver": "raw_exec", "Config": {"command": "/bin/sh", "args": ["-c", "exit 0"]}}, 4
    )
    job["Job"]["Type"] = "batch"
    c.put("/v1/jobs", job)
    done = c.wait(
        lambda: len(a := [x for x in allocs(c, "once") if x["ClientStatus"] == "complete"]) == 4 and a,
        timeout=30,
    )
    root = tmp_path / "a1" / "allocs"

    def dirs() -> set[str]:
        return {p.name for p in root.iterdir()} if root.exists() else set()

    c.wait(lambda: len(dirs()) == 2, timeout=15, describe=dirs)
    kept = dirs()
    assert kept < {a["ID"] for a in done}
    time.sleep(2.5)  # two more collections: the two kept stay
    assert dirs() == kept
    # The servers collect the finished batch job: its allocs are forgotten, and so go here.
    c.http.put("/v1/system/gc").raise_for_status()
    c.wait(lambda: not [a for a in c.get("/v1/allocations") if a["JobID"] == "once"], timeout=20)
    c.wait(lambda: dirs() == set(), timeout=15, describe=dirs)
    # The agent logs each collection after it removes the directory: wait for its lines too.
    log = tmp_path / "agent-a1.log"
    c.wait(
        lambda: (t := log.read_text()).count("the servers collected it") == 2 and t,
        timeout=10,
        describe=lambda: log.read_text()[-2000:],
    )
    assert log.read_text().count("more than 2 allocs kept") == 2
