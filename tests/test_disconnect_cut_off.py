"""Disconnects with a real agent cut off from the servers while it runs on: a TCP proxy between
agent a1 and the API drops every connection (tests/netsplit.py), then lets them through again.
Four jobs run on a1 (a2, reached directly, takes the replacements):

- "swap" (lost_after 60 s, reconcile keep_replacement): unknown and replaced; back in time, the
  replacement is kept and the original stopped.
- "wait" (lost_after 60 s, replace false): unknown and never replaced; back, it runs on.
- "legacy" (the deprecated max_client_disconnect 60 s): as lost_after: unknown (not lost) and
  replaced; back, one of the two runs on (best_score).
- "stopper" (stop_on_client_after 3 s, a raw_exec task): the servers mark it lost at once and
  place its replacement only once the agent has surely stopped it; the agent, having had no
  heartbeat through for 3 s, stops its task itself (its process is gone) while still cut off.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drover.model.durations import SECOND as S

from .cluster import Cluster
from .netsplit import Netsplit
from .test_client import AGENT_START, Agents, agents, allocs, cluster, raw_exec_job  # noqa: F401 - fixtures
from .test_disconnect_agent import tolerant_job

STOP_AFTER = 3


@pytest.fixture
def split(cluster: Cluster) -> Iterator[Netsplit]:  # noqa: F811
    n = Netsplit(cluster.port)
    yield n
    n.close()


def task_pid(marker: str) -> int | None:
    """The pid of the one shell whose command line holds `marker` (the task), if it runs."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmd and b"drover.client.executor" not in cmd:
                return int(proc.name)
    return None


def alive(pid: int, marker: str) -> bool:
    try:
        return marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def one(c: Cluster, job_id: str) -> dict[str, Any]:
    (a,) = allocs(c, job_id)
    return a


def running_on(c: Cluster, job_id: str, node_id: str) -> list[dict[str, Any]]:
    return [
        a
        for a in allocs(c, job_id)
        if a["NodeID"] == node_id and a["DesiredStatus"] == "run" and a["ClientStatus"] == "running"
    ]


def table(c: Cluster) -> list[tuple[str, str, str, str, str, str]]:
    return [
        (j, a["ID"][:8], a["NodeID"][:8], a["DesiredStatus"], a["ClientStatus"], a["PreviousAllocation"][:8])
        for j in ("swap", "wait", "legacy", "stopper")
        for a in allocs(c, j)
    ]


def ready(c: Cluster, node_id: str) -> bool:
    return any(n["ID"] == node_id and n["Status"] == "ready" for n in c.get("/v1/nodes"))


def test_an_agent_cut_off_from_the_servers_as_each_disconnect_block_says(
    cluster: Cluster,  # noqa: F811
    agents: Agents,  # noqa: F811
    split: Netsplit,
) -> None:
    c = cluster
    agents.start("a1", "--enable-raw-exec", "--api", split.url)
    a1 = agents.node_id("a1")
    c.wait(lambda: ready(c, a1), timeout=AGENT_START)
    marker = f"cut-off-{uuid.uuid4().hex[:12]}"
    c.put("/v1/jobs", tolerant_job("swap", {"LostAfter": 60 * S, "Reconcile": "keep_replacement"}))
    c.put("/v1/jobs", tolerant_job("wait", {"LostAfter": 60 * S, "Replace": False}))
    legacy = tolerant_job("legacy", {})
    group = legacy["Job"]["TaskGroups"][0]
    del group["Disconnect"]
    group["MaxClientDisconnect"] = 60 * S
    c.put("/v1/jobs", legacy)
    stopper = raw_exec_job(
        "stopper",
        "/bin/sh",
        "-c",
        f"sleep 600; echo {marker}",
        Disconnect={"StopOnClientAfter": STOP_AFTER * S},
    )
    stopper["Job"]["Update"] = {"MaxParallel": 0}
    c.put("/v1/jobs", stopper)
    originals = {}
    for j in ("swap", "wait", "legacy", "stopper"):
        originals[j] = c.wait(lambda j=j: running_on(c, j, a1), timeout=20, describe=lambda: table(c))[0][
            "ID"
        ]
    pid = c.wait(lambda: task_pid(marker), timeout=10)
    agents.start("a2", "--enable-raw-exec")
    a2 = agents.node_id("a2")
    c.wait(lambda: ready(c, a2), timeout=AGENT_START)

    split.cut()
    cut_at = time.monotonic()
    assert alive(pid, marker)
    c.wait(lambda: c.get(f"/v1/node/{a1}")["Status"] == "disconnected", timeout=15)
    # stopper: lost on the servers at once, its replacement held back meanwhile
    lost = c.wait(
        lambda: (a := c.get(f"/v1/allocation/{originals['stopper']}"))["ClientStatus"] == "lost" and a
    )
    assert lost["DesiredStatus"] == "stop"
    assert len(allocs(c, "stopper")) == 1, table(c)
    # ...and the agent stops the task itself once no heartbeat got through for STOP_AFTER.
    c.wait(lambda: not alive(pid, marker), timeout=STOP_AFTER + 5)
    assert time.monotonic() - cut_at < STOP_AFTER + 5
    assert "stop_on_client_after" in (agents.tmp / "agent-a1.log").read_text()

    # swap and legacy: unknown and replaced on a2; wait: unknown, not replaced
    for j in ("swap", "legacy"):
        c.wait(lambda j=j: running_on(c, j, a2), timeout=20, describe=lambda: table(c))
        assert c.get(f"/v1/allocation/{originals[j]}")["ClientStatus"] == "unknown"
    c.wait(lambda: one(c, "wait")["ClientStatus"] == "unknown", describe=lambda: table(c))
    assert [a["ID"] for a in allocs(c, "wait")] == [originals["wait"]]
    # stopper's replacement comes once the agent has surely stopped it (stop_on_client_after and
    # the kill timeout, 5 s at least, after it was lost)
    (repl,) = c.wait(lambda: running_on(c, "stopper", a2), timeout=25, describe=lambda: table(c))
    (followup,) = [e for e in c.get("/v1/job/stopper/evaluations") if e["TriggeredBy"] == "alloc-failure"]
    assert followup["WaitUntil"] - lost["ModifyTime"] > (STOP_AFTER + 5 - 1) * S
    assert repl["CreateTime"] >= followup["WaitUntil"]
    c.wait(lambda: task_pid(marker), timeout=10)  # the replacement's, on a2 (its executor starts it)

    split.heal()
    c.wait(lambda: ready(c, a1), timeout=15)
    # swap: the replacement stays, the original stops
    c.wait(
        lambda: (a := c.get(f"/v1/allocation/{originals['swap']}"))["DesiredStatus"] == "stop" and a,
        timeout=20,
        describe=lambda: table(c),
    )
    assert [a["NodeID"] for a in allocs(c, "swap") if a["DesiredStatus"] == "run"] == [a2]
    # wait: back and running, never replaced
    c.wait(lambda: one(c, "wait")["ClientStatus"] == "running", timeout=20, describe=lambda: table(c))
    assert one(c, "wait")["DesiredStatus"] == "run"
    # legacy: one of original and replacement runs on
    c.wait(
        lambda: len([a for a in allocs(c, "legacy") if a["DesiredStatus"] == "run"]) == 1,
        timeout=20,
        describe=lambda: table(c),
    )
    # stopper: the agent does not start the stopped task again
    assert not alive(pid, marker)
    assert [a["NodeID"] for a in allocs(c, "stopper") if a["DesiredStatus"] == "run"] == [a2]
    assert "reconnect" in triggers(c, "swap") | triggers(c, "wait")


def triggers(c: Cluster, job_id: str) -> set[str]:
    return {e["TriggeredBy"] for e in c.get(f"/v1/job/{job_id}/evaluations")}
