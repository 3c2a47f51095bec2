"""Stand-in clients for CLI tests: nodes registered through the API and kept alive by
heartbeats, whose allocs are reported running and healthy at once (so deployments end, an in-place update's
too), and stopped allocs complete. Nothing runs; the servers see what real agents would report."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx

from .cluster import node_auth, node_json


class StandInClients:
    def __init__(self, base_url: str, node_ids: list[str], *, mem: int = 8192) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=10, auth=node_auth())
        self.node_ids = list(node_ids)
        for node_id in self.node_ids:
            self.register(node_id, mem=mem)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def register(self, node_id: str, *, mem: int = 8192) -> None:
        r = self.http.put("/v1/drover/node/register", json={"Node": node_json(node_id, mem=mem)})
        r.raise_for_status()
        if node_id not in self.node_ids:
            self.node_ids.append(node_id)

    def _run(self) -> None:
        beat = 0.0
        while not self.stop.is_set():
            try:
                if time.monotonic() - beat > 2:
                    self.http.put("/v1/drover/heartbeats", json={"NodeIDs": self.node_ids})
                    beat = time.monotonic()
                updates = [u for a in self.http.get("/v1/allocations").json() if (u := _update(a))]
                if updates:
                    self.http.put("/v1/drover/allocs/status", json={"Updates": updates})
            except httpx.HTTPError:
                pass  # the API restarting: try again
            self.stop.wait(0.1)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.http.close()


def _update(a: dict[str, Any]) -> dict[str, Any] | None:
    now = time.time_ns()
    unjudged = a.get("DeploymentID") and (a.get("DeploymentStatus") or {}).get("Healthy") is None
    if a["DesiredStatus"] == "run" and (a["ClientStatus"] == "pending" or unjudged):
        update: dict[str, Any] = {"ID": a["ID"], "ClientStatus": "running"}
        if unjudged:
            update["DeploymentStatus"] = {"Healthy": True, "Timestamp": now}
        return update
    if a["DesiredStatus"] != "run" and a["ClientStatus"] in ("pending", "running"):
        return {"ID": a["ID"], "ClientStatus": "complete"}
    return None
