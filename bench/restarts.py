"""Job restart benchmark: a durable restart of a 5,000-alloc job on `drover sim` nodes.

Every service runs as its own process on embedded NATS and PostgreSQL; --nodes simulated nodes
run a --count-alloc service job (mock driver, no deployments: MaxParallel 0), and the sim
restarts a task --restart-delay after its signal, as an agent would. The job is restarted in
batches of --batch-size with no BatchWait. Reported, read from the event log and the allocs'
task events:

- `total_s`: the restart's start request to its completion (the restart's complete event).
- `control_plane_ms_per_batch` (p50, max): from a batch's last alloc running again (the latest
  "Started" after its "Restart Signaled" among the batch's allocs) to the next batch's signal.
  Split into `client_report_ms` (that Started to the log's record of the status report that
  carried it: the sim's report batching and the API's append) and `report_to_signal_ms` (that
  record to the next signal: the job restart watcher's part), itself split into `seen_done_ms`
  (to the job restart watcher's "batch done") and `done_to_signal_ms` (batch done to the next signal).
- `signal_to_running_ms_per_batch`: a batch's signal to its last alloc running again (the
  client's side: the alloc feed, the restart delay).
- `leader_cpu_s`: the leader process's CPU seconds during the restart (every leader loop it
  runs; only the job restart watcher has work then), beside the API's and the sim's.

    python -m bench.restarts --out bench/out/restarts.json [--nodes 1000 --count 5000
        --batch-size 500 --restart-delay 0.05]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

import httpx
from sqlalchemy import text

from bench import report
from bench.pipeline import cpu_seconds
from bench.scheduler import run_case
from bench.servers import Servers, start
from drover.control.leader.jobrestartwatcher import SIGNALED, started_after
from drover.model.alloc import TaskState
from drover.model.events import AllocsClientUpdated, JobRestartSignaled, JobRestartUpdated
from drover.model.jobrestart import request_id
from drover.runtime.store import EventStore

JOB = "restartme"
MS = 1e6  # ns per ms


def job_body(count: int) -> dict[str, Any]:
    task = {"Name": "t", "Driver": "mock", "Config": {}, "Resources": {"CPU": 100, "MemoryMB": 64}}
    # No deployment (MaxParallel 0): none starts to block or cancel the restart.
    group = {"Name": "g", "Count": count, "Tasks": [task], "Update": {"MaxParallel": 0}}
    return {"Job": {"ID": JOB, "Type": "service", "Datacenters": ["dc1"], "TaskGroups": [group]}}


def count_allocs(store: EventStore, sql: str) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(text(sql), {"job": JOB}).scalar_one())


def wait_for(what: str, fn: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not fn():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench.restarts: {what} not in {timeout:.0f}s")
        time.sleep(0.5)


def follow(http: httpx.Client, rid: str, timeout: float) -> dict[str, Any]:
    """The restart once it has ended, followed with blocking queries as a CLI attaches."""
    index, deadline = 0, time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = http.get(f"/v1/job/{JOB}/restart/{rid}", params={"index": index, "wait": "5s"})
        r.raise_for_status()
        index = int(r.headers.get("X-Nomad-Index", index))
        doc: dict[str, Any] = r.json()
        if doc["Status"] not in ("running", "paused"):
            return doc
    raise SystemExit(f"bench.restarts: restart {rid} not ended in {timeout:.0f}s")


def restarted_at(states: dict[str, TaskState], req: str) -> int | None:
    """When the tasks the request `req` signalled all run again (the latest Started), or None."""
    started = [started_after(ts, req) for ts in states.values()]
    if any(at == 0 for at in started) or not any(started):
        return None
    return max(at for at in started if at)


def timeline(store: EventStore, after: int, rid: str) -> dict[str, Any]:
    """From the log past `after`: each batch's signal time and allocs, when it was seen done,
    when the restart ended, and per alloc when it ran again (the Started event's time) and when
    the report that said so was recorded."""
    signals: dict[int, tuple[int, list[str]]] = {}
    done: dict[int, int] = {}
    ended = 0
    running: dict[str, tuple[int, float]] = {}
    while rows := store.read(after, 500):
        after = rows[-1].position
        for rec in rows:
            event = rec.event
            if isinstance(event, JobRestartSignaled) and event.restart_id == rid:
                signals[event.batch_number] = (event.at, event.alloc_ids())
            elif isinstance(event, JobRestartUpdated) and event.restart_id == rid:
                if event.batch_done_at:
                    done[max(signals)] = event.batch_done_at
                if event.status:
                    ended = event.at
            elif isinstance(event, AllocsClientUpdated) and rec.recorded_at is not None:
                for u in event.updates:
                    if u.id in running or not u.task_states:
                        continue
                    at = restarted_at(u.task_states, request_id(rid, u.id))
                    if at is not None:
                        running[u.id] = (at, rec.recorded_at.timestamp() * 1e9)
    return {"signals": signals, "done": done, "ended": ended, "running": running}


def spread(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "max": None}
    return {"p50": round(statistics.median(values), 1), "max": round(max(values), 1)}


def per_batch(t: dict[str, Any]) -> dict[str, Any]:
    """The batches' gaps (ms): the control plane's part between batches, split, and the
    client's part within a batch."""
    signals, done, running = t["signals"], t["done"], t["running"]
    overhead, report_ms, after_report, seen_ms, signal_ms, within = [], [], [], [], [], []
    for n in sorted(signals):
        at, ids = signals[n]
        if not all(a in running for a in ids):
            continue  # a batch not seen running again (the restart stopped short)
        last = max((running[a] for a in ids), key=lambda x: x[0])
        within.append((last[0] - at) / MS)
        if n + 1 not in signals:
            continue
        nxt = signals[n + 1][0]
        overhead.append((nxt - last[0]) / MS)
        report_ms.append((last[1] - last[0]) / MS)
        after_report.append((nxt - last[1]) / MS)
        if n in done:
            seen_ms.append((done[n] - last[1]) / MS)
            signal_ms.append((nxt - done[n]) / MS)
    return {
        "control_plane_ms_per_batch": spread(overhead),
        "client_report_ms": spread(report_ms),
        "report_to_signal_ms": spread(after_report),
        "seen_done_ms": spread(seen_ms),
        "done_to_signal_ms": spread(signal_ms),
        "signal_to_running_ms_per_batch": spread(within),
        "control_plane_ms_each_batch": [round(x, 1) for x in overhead],
    }


def signalled_once(http: httpx.Client, rid: str) -> int:
    """How many of the job's allocs hold exactly one "Restart Signaled" for their request."""
    once = 0
    for a in http.get(f"/v1/job/{JOB}/allocations").json():
        req = request_id(rid, a["ID"])
        for ts in (a.get("TaskStates") or {}).values():
            hits = [e for e in ts.get("Events") or [] if e["Type"] == SIGNALED]
            once += [(e.get("Details") or {}).get("restart_id") for e in hits] == [req]
    return once


def run(servers: Servers, args: argparse.Namespace, result: dict[str, Any]) -> None:
    cluster, store = servers.cluster, servers.store
    http = cluster.http
    stats = servers.tmp / "sim.json"
    sim = subprocess.Popen(
        [sys.executable, "-m", "drover.client.sim", "--api", str(http.base_url), "--nodes", str(args.nodes),
         "--racks", "50", "--restart-delay", str(args.restart_delay), "--stats", str(stats),
         "--data-dir", str(servers.tmp / "sim")],
        env=cluster.env(),
    )  # fmt: skip
    try:
        wait_for(
            "the sim's nodes", lambda: count_allocs(store, "SELECT count(*) FROM nodes") >= args.nodes, 300
        )
        t0 = time.monotonic()
        http.put("/v1/jobs", json=job_body(args.count)).raise_for_status()
        running = "SELECT count(*) FROM allocs WHERE job_id = :job AND client_status = 'running'"
        wait_for("the job's allocs running", lambda: count_allocs(store, running) >= args.count, 300)
        result["job_running_s"] = round(time.monotonic() - t0, 2)
        time.sleep(2.0)  # the placement's tail (status reports, evals) settles
        with store.engine.connect() as conn:
            before = int(conn.exec_driver_sql("SELECT coalesce(max(position), 0) FROM events").scalar_one())
        pids = {
            "leader": cluster.procs["leader"][0].pid,
            "api": cluster.procs["api"][0].pid,
            "sim": sim.pid,
        }
        cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
        wall0 = time.time_ns()
        body = {"BatchSize": args.batch_size, "BatchWait": 0}
        r = http.put(f"/v1/job/{JOB}/restart", json=body)
        r.raise_for_status()
        rid = r.json()["RestartID"]
        ended = follow(http, rid, 600)
        observed = (time.time_ns() - wall0) / 1e9
        cpu = {name: round(cpu_seconds(pid) - cpu0[name], 2) for name, pid in pids.items()}
        t = timeline(store, before, rid)
        result.update(
            {
                "status": ended["Status"],
                "status_description": ended["StatusDescription"],
                "batches": ended["BatchNumber"],
                "allocs_restarted": len(ended["RestartedAllocs"]),
                "allocs_signalled_once": signalled_once(http, rid),
                "total_s": round((t["ended"] - wall0) / 1e9, 2) if t["ended"] else None,
                "total_observed_s": round(observed, 2),
                **per_batch(t),
                "leader_cpu_s": cpu["leader"],
                "cpu_s_during_restart": cpu,
            }
        )
    finally:
        sim.terminate()
        sim.wait(timeout=60)
    if stats.exists():
        sim_stats = json.loads(stats.read_text())
        sim_stats.pop("last_beat", None)
        result["sim"] = sim_stats


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/restarts.json")
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--restart-delay", type=float, default=0.05)
    args = ap.parse_args()
    # How fast this host was for the run (bench/pipeline.py's reference).
    reference = run_case(5000, 50, 1000, [], repeats=5)["ms_per_eval"]
    result: dict[str, Any] = {
        "benchmark": "restarts",
        "nodes": args.nodes,
        "count": args.count,
        "batch_size": args.batch_size,
        "restart_delay_s": args.restart_delay,
        "host_reference_eval_ms": reference,
        "targets": {
            "control_plane_ms_per_batch": "< 100 (p50 and max)",
            "report_to_signal_ms": "< 100 (p50 and max)",
            "total_s": "< 15",
        },
    }
    servers = start("drover-restarts-", workers=1)
    try:
        run(servers, args, result)
    finally:
        servers.stop()
    report.write(result, args.out)


if __name__ == "__main__":
    main()
