"""Reschedule timelines measured from the API (Nomad's reschedule block), with real agents running mock tasks
that fail at once: constant 5 s x 2, exponential 5 s capped at 10 s, fibonacci 5 s, attempts 0,
and the batch default. All five jobs run side by side in one cluster."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from drover.model.durations import SECOND as S

from .cluster import Cluster
from .test_client import AGENT_START, ENV, Agents, agents  # noqa: F401 - the agents fixture


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, env=ENV).start()
    yield c
    c.stop()


def failing_job(
    job_id: str, job_type: str = "service", reschedule: dict[str, Any] | None = None
) -> dict[str, Any]:
    group: dict[str, Any] = {
        "Name": "g",
        "Count": 1,
        "Tasks": [
            {
                "Name": "t",
                "Driver": "mock",
                "Config": {"run_for": "100ms", "exit_code": 1},
                "Resources": {"CPU": 100, "MemoryMB": 32},
            }
        ],
        # fail the alloc at the first exit: the timeline is the servers' reschedule policy
        "RestartPolicy": {"Attempts": 0, "Interval": 600 * S, "Delay": S, "Mode": "fail"},
    }
    if reschedule is not None:
        group["ReschedulePolicy"] = reschedule
    job: dict[str, Any] = {"ID": job_id, "Datacenters": ["dc1"], "Type": job_type, "TaskGroups": [group]}
    if job_type == "service":
        job["Update"] = {"MaxParallel": 0}  # no deployment to wait for
    return {"Job": job}


def _ns(rfc3339: str) -> int:
    head, _, frac = rfc3339.rstrip("Z").partition(".")
    base = datetime.fromisoformat(head + "+00:00").timestamp()
    return int(base) * S + int((frac + "000000000")[:9])


def timeline(c: Cluster, job_id: str) -> list[float]:
    """Seconds from each alloc's failure to its replacement's creation, in order."""
    allocs = {a["ID"]: c.get(f"/v1/allocation/{a['ID']}") for a in c.get(f"/v1/job/{job_id}/allocations")}
    out = []
    for a in sorted(allocs.values(), key=lambda a: a["CreateTime"]):
        prev = allocs.get(a.get("PreviousAllocation") or "")
        if prev is None:
            continue
        failed_at = _ns(prev["TaskStates"]["t"]["FinishedAt"])
        out.append(round((a["CreateTime"] - failed_at) / S, 2))
    return out


def test_reschedule_timelines(cluster: Cluster, agents: Agents) -> None:  # noqa: F811
    c = cluster
    for name in ("a1", "a2"):
        agents.start(name)
    c.wait(lambda: len([n for n in c.get("/v1/nodes") if n["Status"] == "ready"]) == 2, timeout=AGENT_START)
    policy = {"Interval": 3600 * S, "Delay": 5 * S}
    jobs = {
        "constant": failing_job(
            "constant", reschedule={**policy, "Attempts": 2, "Unlimited": False, "DelayFunction": "constant"}
        ),
        "exponential": failing_job(
            "exponential",
            reschedule={**policy, "Unlimited": True, "DelayFunction": "exponential", "MaxDelay": 10 * S},
        ),
        "fibonacci": failing_job(
            "fibonacci",
            reschedule={**policy, "Unlimited": True, "DelayFunction": "fibonacci", "MaxDelay": 3600 * S},
        ),
        "never": failing_job("never", reschedule={**policy, "Attempts": 0, "Unlimited": False}),
        "batch": failing_job("batch", job_type="batch"),  # batch default: 1 attempt after 5 s
    }
    for body in jobs.values():
        c.put("/v1/jobs", body)
    # fibonacci's fourth replacement comes 5 + 5 + 10 + 15 = 35 s after the first failure
    c.wait(lambda: len(timeline(c, "fibonacci")) >= 4, timeout=80, interval=1.0)
    want = {
        "constant": [5, 5],
        "exponential": [5, 10, 10],
        "fibonacci": [5, 5, 10, 15],
        "never": [],
        "batch": [5],
    }
    for job_id, delays in want.items():
        got = (
            timeline(c, job_id)[: len(delays)]
            if job_id in ("exponential", "fibonacci")
            else timeline(c, job_id)
        )
        print(f"reschedule timeline {job_id}: {got}")
        assert len(got) == len(delays), (job_id, got)
        for expected, measured in zip(delays, got, strict=True):
            assert expected - 0.2 <= measured <= expected + 3.0, (job_id, got)
    # the first replacement avoids the node its alloc failed on (later ones may find every node
    # penalized), and replacements carry their reschedule history
    chain = sorted(c.get("/v1/job/constant/allocations"), key=lambda a: a["CreateTime"])
    assert chain[1]["NodeID"] != chain[0]["NodeID"]
    last = c.get(f"/v1/allocation/{chain[-1]['ID']}")
    assert len(last["RescheduleTracker"]["Events"]) == 2
    # the follow-up evals that waited are visible with their WaitUntil
    evals = c.get("/v1/job/constant/evaluations")
    assert sum(1 for e in evals if e.get("WaitUntil")) >= 2
