"""Helpers for the tests that follow evaluations through the API: reading them, waiting for their
status, and stand-ins for node clients that report allocs running (and healthy)."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx

from .cluster import Cluster, node_auth

NO_LINKS = {"PreviousEval": "", "NextEval": "", "BlockedEval": "", "WaitUntil": 0}


def evaluation(c: Cluster, eval_id: str) -> dict[str, Any]:
    found: dict[str, Any] = c.get(f"/v1/evaluation/{eval_id}")
    return found


def wait_eval(c: Cluster, eval_id: str, status: str = "complete", timeout: float = 20.0) -> dict[str, Any]:
    """The eval once it has `status`; fails (with the job's evals) if it does not get there."""
    found: dict[str, Any] = c.wait(
        lambda: (e := evaluation(c, eval_id))["Status"] == status and e,
        timeout=timeout,
        describe=lambda: evals_of(c, evaluation(c, eval_id)["JobID"]),
    )
    return found


def evals_of(c: Cluster, job_id: str, trigger: str | None = None) -> list[dict[str, Any]]:
    """The job's evals, oldest first; only those triggered by `trigger` if given."""
    evals = sorted(c.get(f"/v1/job/{job_id}/evaluations"), key=lambda e: e["CreateIndex"])
    return [e for e in evals if trigger is None or e["TriggeredBy"] == trigger]


def wait_trigger(
    c: Cluster, job_id: str, trigger: str, n: int = 1, timeout: float = 20.0
) -> list[dict[str, Any]]:
    """The job's first `n` evals triggered by `trigger`, once there are that many."""
    found: list[dict[str, Any]] = c.wait(
        lambda: len(e := evals_of(c, job_id, trigger)) >= n and e[:n],
        timeout=timeout,
        describe=lambda: evals_of(c, job_id),
    )
    return found


def links(eval_: dict[str, Any]) -> dict[str, Any]:
    return {k: eval_[k] for k in NO_LINKS}


def settled(c: Cluster, job_id: str) -> list[dict[str, Any]]:
    """The job's evals once none is pending (each terminal, or blocked awaiting capacity) and
    nothing changed for a second: what the cluster did, counted."""
    last: list[dict[str, Any]] = []
    quiet_since = time.monotonic()

    def check() -> bool:
        nonlocal last, quiet_since
        now = evals_of(c, job_id)
        if [(e["ID"], e["Status"]) for e in now] != [(e["ID"], e["Status"]) for e in last]:
            last, quiet_since = now, time.monotonic()
        return all(e["Status"] != "pending" for e in now) and time.monotonic() - quiet_since >= 1.0

    c.wait(check, timeout=30, interval=0.1, describe=lambda: evals_of(c, job_id))
    return last


class FakeClients:
    """Stands in for the nodes' agents: every alloc the servers want running and its client has
    not reported yet is reported running - and healthy, if `healthy` - after `delay` seconds."""

    def __init__(self, base_url: str, *, healthy: bool = False, delay: float = 0.2) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=10, auth=node_auth())
        self.healthy = healthy
        self.delay = delay
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            self._report()
            time.sleep(0.1)

    def _report(self) -> None:
        pending = [
            a
            for a in self.http.get("/v1/allocations").json()
            if a["DesiredStatus"] == "run" and a["ClientStatus"] == "pending"
        ]
        if not pending:
            return
        time.sleep(self.delay)
        updates: list[dict[str, Any]] = []
        for a in pending:
            update: dict[str, Any] = {"ID": a["ID"], "ClientStatus": "running"}
            if self.healthy and a.get("DeploymentID"):
                update["DeploymentStatus"] = {"Healthy": True, "Timestamp": time.time_ns()}
            updates.append(update)
        self.http.put("/v1/drover/allocs/status", json={"Updates": updates}).raise_for_status()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.http.close()
