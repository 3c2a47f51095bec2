"""Dispatched jobs end to end: every service as its own process and a real agent running a
raw_exec task that reads its dispatched payload from the file its dispatch_payload block names;
the child's eval and its links; the parent's summary counting its children pending, running
and dead."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drover.model.durations import SECOND as S

from .cluster import Cluster
from .evals import NO_LINKS, links
from .test_client import AGENT_START, ENV, Agents, agents, allocs  # noqa: F401 - the agents fixture

# Seconds a child has to be placed and run (or finish) on a loaded host.
RUN = 60


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    # TTLs of 10-20 s: a busy host must not miss the agent's node mid-test (its allocs lost).
    c = Cluster(database_url, nats_url, tmp_path, env={**ENV, "DROVER_HEARTBEAT_MIN_TTL": "10"})
    yield c.start()
    c.stop()


def render_job(out: Path) -> dict[str, Any]:
    """A parameterized batch job whose task copies its payload (local/input.bin) to
    `out`/<alloc ID>, and then, if the payload starts with "wait", sleeps."""
    script = (
        f'cp local/input.bin {out}/"$NOMAD_ALLOC_ID"; '
        'if [ "$(head -c 4 local/input.bin)" = "wait" ]; then exec sleep 120; fi'
    )
    task = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", script]},
        "Resources": {"CPU": 100, "MemoryMB": 32},
        "KillTimeout": 2 * S,
        "DispatchPayload": {"File": "input.bin"},
    }
    return {
        "Job": {
            "ID": "render",
            "Type": "batch",
            "Datacenters": ["dc1"],
            "ParameterizedJob": {"Payload": "required", "MetaOptional": ["size"]},
            "TaskGroups": [{"Name": "g", "Tasks": [task], "RestartPolicy": {"Attempts": 0, "Mode": "fail"}}],
        }
    }


def dispatch(c: Cluster, payload: bytes, **body: Any) -> dict[str, Any]:
    return c.put("/v1/job/render/dispatch", {"Payload": base64.b64encode(payload).decode(), **body})


def children(c: Cluster) -> dict[str, int]:
    """The parent's children counts, the same in its summary and in its list stub (read one
    after the other: a child changing in between is read again)."""
    for _ in range(50):
        summary = c.get("/v1/job/render/summary")["Children"]
        (stub,) = [j for j in c.get("/v1/jobs") if j["ID"] == "render"]
        if stub["JobSummary"]["Children"] == summary:
            return summary
        time.sleep(0.1)
    raise AssertionError(f"the summary says {summary}, the job list {stub['JobSummary']['Children']}")


def test_a_dispatched_payload_reaches_the_task_and_the_parent_counts_its_children(
    cluster: Cluster,
    agents: Agents,  # noqa: F811
    tmp_path: Path,
) -> None:
    c = cluster
    agents.start("a1", "--enable-raw-exec")
    node_id = agents.node_id("a1")
    c.wait(
        lambda: [n for n in c.get("/v1/nodes") if n["ID"] == node_id and n["Status"] == "ready"],
        timeout=AGENT_START,
    )
    out = tmp_path / "out"
    out.mkdir()
    registered = c.put("/v1/jobs", render_job(out))
    assert registered["EvalID"] == "" and c.get("/v1/job/render/evaluations") == []

    # Every byte value, as the task reads it from its local dir.
    payload = bytes(range(256)) * 4
    first = dispatch(c, payload, Meta={"size": "large"})
    child = first["DispatchedJobID"]
    (alloc,) = c.wait(lambda: [a for a in allocs(c, child) if a["ClientStatus"] == "complete"], timeout=RUN)
    assert (out / alloc["ID"]).read_bytes() == payload
    assert (tmp_path / "a1" / "allocs" / alloc["ID"] / "t" / "local" / "input.bin").read_bytes() == payload
    evaluation = c.get(f"/v1/evaluation/{first['EvalID']}")
    assert (evaluation["JobID"], evaluation["TriggeredBy"], evaluation["Status"], evaluation["Type"]) == (
        child,
        "job-register",
        "complete",
        "batch",
    )
    assert links(evaluation) == NO_LINKS
    assert alloc["EvalID"] == first["EvalID"] and alloc["JobID"] == child
    c.wait(lambda: c.get(f"/v1/job/{child}")["Status"] == "dead", timeout=RUN)
    assert c.get("/v1/job/render")["Status"] == "running"  # the parameterized job itself runs on
    assert children(c) == {"Pending": 0, "Running": 0, "Dead": 1}

    # A child that keeps running, and one that cannot be placed while the node is ineligible.
    running = dispatch(c, b"wait for it")["DispatchedJobID"]
    c.wait(lambda: [a for a in allocs(c, running) if a["ClientStatus"] == "running"], timeout=RUN)
    c.put(f"/v1/node/{node_id}/eligibility", {"Eligibility": "ineligible"})
    held = dispatch(c, b"later")
    evaluation = c.wait(
        lambda: (e := c.get(f"/v1/evaluation/{held['EvalID']}"))["Status"] == "complete" and e, timeout=RUN
    )
    blocked = c.get(f"/v1/evaluation/{evaluation['BlockedEval']}")
    assert (blocked["Status"], blocked["PreviousEval"], blocked["JobID"]) == (
        "blocked",
        evaluation["ID"],
        held["DispatchedJobID"],
    )
    assert c.get(f"/v1/job/{held['DispatchedJobID']}")["Status"] == "pending"
    assert children(c) == {"Pending": 1, "Running": 1, "Dead": 1}

    # Eligible again: the held child runs and finishes; stopping the running one ends it.
    c.put(f"/v1/node/{node_id}/eligibility", {"Eligibility": "eligible"})
    c.wait(
        lambda: [a for a in allocs(c, held["DispatchedJobID"]) if a["ClientStatus"] == "complete"],
        timeout=RUN,
    )
    assert c.http.delete(f"/v1/job/{running}").status_code == 200
    c.wait(
        lambda: children(c) == {"Pending": 0, "Running": 0, "Dead": 3},
        timeout=RUN,
        describe=lambda: children(c),
    )
