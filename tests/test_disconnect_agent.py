"""Disconnects with a real agent: the agent process is frozen (SIGSTOP) so its node misses its
heartbeats while its tasks' state survives, then thawed (SIGCONT). Two jobs run on it, both
tolerating a disconnect (disconnect.lost_after):

- "stay" (replace true, reconcile keep_original, lost_after 60 s): unknown, a replacement runs
  elsewhere meanwhile; back in time, the original is kept and the replacement stopped.
- "expire" (replace false, lost_after 5 s): unknown with no replacement until lost_after expires,
  then lost and replaced elsewhere; on the agent's return the original is stopped.
"""

from __future__ import annotations

import signal
from typing import Any

from drover.model.durations import SECOND as S

from .cluster import Cluster
from .test_client import AGENT_START, Agents, agents, allocs, cluster, service_job  # noqa: F401 - fixtures


def tolerant_job(job_id: str, disconnect: dict[str, Any]) -> dict[str, Any]:
    job = service_job(job_id, {"Driver": "mock", "Config": {"run_for": "10m"}}, Disconnect=disconnect)
    job["Job"]["Update"] = {"MaxParallel": 0}
    return job


def live(c: Cluster, job_id: str) -> list[tuple[str, str, str]]:
    return sorted(
        (a["ID"], a["NodeID"], a["ClientStatus"])
        for a in allocs(c, job_id)
        if a["DesiredStatus"] == "run" and a["ClientStatus"] not in ("complete", "failed", "lost")
    )


def table(c: Cluster) -> list[tuple[str, str, str, str, str]]:
    return [
        (j, a["ID"][:8], a["NodeID"][:8], a["DesiredStatus"], a["ClientStatus"])
        for j in ("stay", "expire")
        for a in allocs(c, j)
    ]


def test_a_frozen_agent_disconnects_then_keeps_or_loses_its_allocs_per_the_disconnect_block(
    cluster: Cluster,  # noqa: F811
    agents: Agents,  # noqa: F811
) -> None:
    c = cluster
    agents.start("a1")
    a1 = agents.node_id("a1")
    c.wait(
        lambda: [n for n in c.get("/v1/nodes") if n["ID"] == a1 and n["Status"] == "ready"],
        timeout=AGENT_START,
    )
    c.put(
        "/v1/jobs", tolerant_job("stay", {"LostAfter": 60 * S, "Replace": True, "Reconcile": "keep_original"})
    )
    c.put("/v1/jobs", tolerant_job("expire", {"LostAfter": 5 * S, "Replace": False}))
    (stay,) = c.wait(lambda: [a for a in live(c, "stay") if a[2] == "running"], timeout=15)
    (expire,) = c.wait(lambda: [a for a in live(c, "expire") if a[2] == "running"], timeout=15)
    agents.start("a2")
    a2 = agents.node_id("a2")
    c.wait(
        lambda: [n for n in c.get("/v1/nodes") if n["ID"] == a2 and n["Status"] == "ready"],
        timeout=AGENT_START,
    )

    agents.procs["a1"].send_signal(signal.SIGSTOP)
    try:
        c.wait(lambda: c.get(f"/v1/node/{a1}")["Status"] == "disconnected", timeout=15)
        c.wait(
            lambda: c.get(f"/v1/allocation/{stay[0]}")["ClientStatus"] == "unknown", describe=lambda: table(c)
        )
        # stay: replaced at once, elsewhere; expire: unknown, not replaced yet
        c.wait(
            lambda: [a for a in live(c, "stay") if a[1] == a2 and a[2] == "running"],
            timeout=20,
            describe=lambda: table(c),
        )
        assert c.get(f"/v1/allocation/{expire[0]}")["ClientStatus"] == "unknown"
        assert [a[0] for a in live(c, "expire")] == [expire[0]], table(c)

        # expire: lost at lost_after, then replaced elsewhere (max-disconnect-timeout)
        c.wait(
            lambda: c.get(f"/v1/allocation/{expire[0]}")["ClientStatus"] == "lost",
            timeout=20,
            describe=lambda: table(c),
        )
        c.wait(lambda: [a for a in live(c, "expire") if a[1] == a2 and a[2] == "running"], timeout=20)
        triggers = {e["TriggeredBy"] for e in c.get("/v1/job/expire/evaluations")}
        assert "max-disconnect-timeout" in triggers
    finally:
        agents.procs["a1"].send_signal(signal.SIGCONT)

    # Back within stay's lost_after: the original is kept, the replacement stopped.
    c.wait(lambda: c.get(f"/v1/node/{a1}")["Status"] == "ready", timeout=15)
    c.wait(lambda: live(c, "stay") == [stay], timeout=20, describe=lambda: table(c))
    replacement = [a for a in allocs(c, "stay") if a["ID"] != stay[0]]
    assert len(replacement) == 1 and replacement[0]["DesiredStatus"] == "stop"
    assert {e["TriggeredBy"] for e in c.get("/v1/job/stay/evaluations")} >= {"node-update", "reconnect"}
    # expire stays replaced: the agent stops the lost original (the client has the last word on
    # its status, as in Nomad: complete) and the replacement runs on
    original = c.wait(
        lambda: (a := c.get(f"/v1/allocation/{expire[0]}"))["ClientStatus"] == "complete" and a, timeout=15
    )
    assert original["DesiredStatus"] == "stop"
    (now,) = live(c, "expire")
    assert now[1] == a2 and now[0] != expire[0]
