"""Fleet benchmark: `drover sim` hosting 50,000 nodes across several processes against the HA
topology of docs/deployment.md (three NATS servers, a PostgreSQL primary with its synchronous
standby), every service its own process.

The simulators register their nodes and beat; once every node is registered the leader's and
the API's CPU are read over --beat-seconds of heartbeats alone (the leader's heartbeater: its
timers and the down-marking it never has to do). Then --jobs jobs of --count allocs are
registered at once and placed on the fleet while it beats; then the nodes beat --hold seconds
more and the simulators stop. Reported: the registration time, heartbeats/s, the leader's and
the API's CPU while the fleet only beats, placements/s (first register to the last plan
committed), and the nodes marked down while they beat (the target: none).

    python -m bench.fleet --out bench/out/fleet.json [--nodes 50000 --sims 4 --single]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from bench import report
from bench.pipeline import cpu_seconds, placed_allocs, tree_cpu_seconds
from bench.servers import Servers, start
from tests.cluster import job_json


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/fleet.json")
    ap.add_argument("--nodes", type=int, default=50000)
    ap.add_argument("--sims", type=int, default=4, help="simulator processes sharing the nodes")
    ap.add_argument("--jobs", type=int, default=10)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--beat-seconds", type=float, default=60.0, help="heartbeats alone, CPU read")
    ap.add_argument("--hold", type=float, default=30.0, help="seconds of beating after placement")
    ap.add_argument("--per-second", type=float, default=1000.0, help="DROVER_HEARTBEAT_MAX_PER_SECOND")
    ap.add_argument("--single", action="store_true", help="one NATS and one PostgreSQL, not HA")
    return ap


def node_count(servers: Servers) -> int:
    with servers.store.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM nodes")).scalar_one())


def start_sims(servers: Servers, args: argparse.Namespace) -> list[subprocess.Popen[bytes]]:
    """--sims simulators, each its share of the nodes under a prefix of its own."""
    share = -(-args.nodes // args.sims)
    sims = []
    for i in range(args.sims):
        n = min(share, args.nodes - i * share)
        argv = [sys.executable, "-m", "drover.client.sim", "--api", str(servers.cluster.http.base_url),
                "--nodes", str(n), "--prefix", f"f{i}-", "--datacenters", "2", "--racks", "50",
                "--stats", str(servers.tmp / f"sim-{i}.json"), "--data-dir", str(servers.tmp / f"sim-{i}")]  # fmt: skip
        log = (servers.tmp / "logs" / f"sim-{i}.log").open("wb")
        sims.append(subprocess.Popen(argv, env=servers.cluster.env(), stdout=log, stderr=subprocess.STDOUT))
    return sims


def place(servers: Servers, args: argparse.Namespace) -> dict[str, Any]:
    """Register the jobs at once; placements/s from the first register to the last plan."""
    base = str(servers.cluster.http.base_url)
    jobs = [f"fleet-{j:02d}" for j in range(args.jobs)]
    with servers.store.engine.connect() as conn:
        before = int(conn.execute(text("SELECT coalesce(max(position), 0) FROM events")).scalar_one())
    wall0 = time.time()

    def submit(job: str) -> None:
        with httpx.Client(base_url=base, timeout=60) as h:
            h.put("/v1/jobs", json=job_json(job, args.count, cpu=100, mem=64)).raise_for_status()

    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(submit, jobs))
    want, placed, deadline = args.jobs * args.count, 0, time.monotonic() + 900
    while placed < want and time.monotonic() < deadline:
        time.sleep(1.0)
        with servers.store.engine.connect() as conn:
            placed = placed_allocs(conn, jobs)
    with servers.store.engine.connect() as conn:
        last = conn.execute(
            text(
                "SELECT max(recorded_at) FROM events WHERE position > :p AND type = 'PlanApplied' "
                "AND data->>'JobID' LIKE 'fleet-%'"
            ),
            {"p": before},
        ).scalar_one()
    duration = last.timestamp() - wall0 if last is not None else float("nan")
    return {"allocs": want, "placed": placed, "seconds": round(duration, 2),
            "placements_per_s": round(placed / duration, 1)}  # fmt: skip


def downs_while_beating(servers: Servers, since: float, until: float) -> int:
    """Nodes marked down between the simulators' start and their stop."""
    with servers.store.engine.connect() as conn:
        return int(
            conn.execute(
                text(
                    "SELECT count(DISTINCT data->>'NodeID') FROM events WHERE type = 'NodeStatusUpdated' "
                    "AND data->>'Status' = 'down' AND recorded_at BETWEEN to_timestamp(:a) AND to_timestamp(:b)"
                ),
                {"a": since, "b": until},
            ).scalar_one()
        )


def stop_sims(sims: list[subprocess.Popen[bytes]], tmp: Path) -> list[dict[str, Any]]:
    for s in sims:
        s.send_signal(signal.SIGINT)
    out = []
    for i, s in enumerate(sims):
        s.wait(timeout=120)
        stats = json.loads((tmp / f"sim-{i}.json").read_text())
        stats.pop("last_beat", None)
        out.append(stats)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    env = {"DROVER_HEARTBEAT_MAX_PER_SECOND": str(args.per_second)}
    servers = start("drover-fleet-", ha=not args.single, workers=2, env=env)
    result: dict[str, Any] = {
        "benchmark": "fleet", "topology": "single" if args.single else "ha", "nodes": args.nodes,
        "sims": args.sims, "max_heartbeats_per_second": args.per_second,
    }  # fmt: skip
    sims: list[subprocess.Popen[bytes]] = []
    try:
        t0, began = time.monotonic(), time.time()
        every = [
            (f"{name}-{i}", p.pid) for name, ps in servers.cluster.procs.items() for i, p in enumerate(ps)
        ]
        every += servers.server_pids()
        reg0 = {k: tree_cpu_seconds(p) for k, p in every}
        sims = start_sims(servers, args)
        while node_count(servers) < args.nodes:
            if any(s.poll() is not None for s in sims):
                raise RuntimeError(f"a simulator exited: {[s.poll() for s in sims]}")
            if time.monotonic() - t0 > 1800:
                raise RuntimeError(f"{node_count(servers)} of {args.nodes} nodes registered in 30 min")
            time.sleep(2.0)
        result["registered_s"] = round(time.monotonic() - t0, 1)
        result["registration_cpu_s"] = {k: round(tree_cpu_seconds(p) - reg0[k], 1) for k, p in every}
        procs = {"leader": servers.cluster.procs["leader"][0].pid, "api": servers.cluster.procs["api"][0].pid}
        cpu0 = {k: cpu_seconds(p) for k, p in procs.items()}
        sims_cpu0 = sum(tree_cpu_seconds(s.pid) for s in sims)
        w0 = time.monotonic()
        time.sleep(args.beat_seconds)
        window = time.monotonic() - w0
        result["beating_alone"] = {
            "seconds": round(window, 1),
            **{f"{k}_cpu_fraction_of_one_core": round((cpu_seconds(p) - cpu0[k]) / window, 3)
               for k, p in procs.items()},
            "sims_cpu_fraction_of_one_core": round((sum(tree_cpu_seconds(s.pid) for s in sims) - sims_cpu0) / window, 3),
        }  # fmt: skip
        result["placement"] = place(servers, args)
        # This host is shared: the load average says how much else ran beside the placement.
        result["placement"]["host_load_average_1m"] = round(os.getloadavg()[0], 1)
        time.sleep(args.hold)
        stopped = time.time()
        result["sims_stats"] = stop_sims(sims, servers.tmp)
        sims = []
        stats = result["sims_stats"]
        result["heartbeats_per_s"] = round(sum(s["heartbeats_per_s"] for s in stats), 1)
        result["heartbeat_errors"] = sum(s["heartbeat_errors"] for s in stats)
        result["nodes_down_while_beating"] = downs_while_beating(servers, began, stopped)
        result["targets"] = {"nodes_down_while_beating": "= 0"}
    except BaseException:
        for s in sims:
            s.kill()
        servers.stop(keep=True)
        print(f"bench.fleet: failed; the servers' logs and data are kept in {servers.tmp}", file=sys.stderr)
        raise
    servers.stop()
    return result


def main() -> None:
    args = parser().parse_args()
    result = run(args)
    print(json.dumps(result, indent=2))
    report.write(result, args.out)


if __name__ == "__main__":
    main()
