"""Heartbeat benchmark: `drover sim` hosting 5,000 nodes against the whole control plane.

The simulator runs for --seconds and then stops (every node falls silent at once). Reported:
heartbeats/s sustained, the CPU used by the simulator and by the leader (its heartbeater; fraction
of one core while the nodes beat), and for every node the time from its last answered heartbeat to
its down event in the log, both raw and beyond the TTL + grace it was owed (the heartbeater's
own delay), p50/p99. TTLs are scaled with DROVER_HEARTBEAT_MAX_PER_SECOND (default here 1,000/s, so
TTLs are 10-20 s rather than Nomad's 100-200 s for 5,000 nodes at 50/s).

    python -m bench.heartbeats --out bench/out/heartbeats.json [--nodes 5000 --seconds 60]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

from sqlalchemy import text

from bench import report
from bench.pipeline import cpu_seconds
from bench.report import percentile
from bench.servers import start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/heartbeats.json")
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--per-second", type=float, default=1000.0)
    args = ap.parse_args()
    grace = 10.0
    env = {"DROVER_HEARTBEAT_MAX_PER_SECOND": str(args.per_second), "DROVER_HEARTBEAT_GRACE": str(grace)}
    servers = start("drover-hb-", workers=1, env=env)
    tmp, cluster, store = servers.tmp, servers.cluster, servers.store
    stats_file = tmp / "sim.json"
    result: dict[str, Any] = {
        "benchmark": "heartbeats",
        "nodes": args.nodes,
        "max_heartbeats_per_second": args.per_second,
    }
    try:
        sim = subprocess.Popen(
            [sys.executable, "-m", "drover.client.sim", "--api", str(cluster.http.base_url), "--nodes", str(args.nodes),
             "--datacenters", "2", "--racks", "50", "--drivers", "mock,docker", "--duration", str(args.seconds),
             "--stats", str(stats_file), "--data-dir", str(tmp / "sim")],
            env=cluster.env(),
        )  # fmt: skip
        leader = cluster.procs["leader"][0].pid
        # The leader's CPU is taken over the beating window (registration takes a while first).
        while not stats_file.exists() and sim.poll() is None:
            with store.engine.connect() as conn:
                n = conn.execute(text("SELECT count(*) FROM nodes")).scalar_one()
            if n >= args.nodes:
                break
            time.sleep(0.5)
        w0, t0 = cpu_seconds(leader), time.monotonic()
        sim.wait(timeout=args.seconds + 3600)
        leader_cpu = (cpu_seconds(leader) - w0) / (time.monotonic() - t0)
        sim_end = time.time()
        sim_stats = json.loads(stats_file.read_text())
        last_beat: dict[str, list[float]] = sim_stats.pop("last_beat")
        # Now every node is silent: wait for all of them to be marked down.
        longest = max(ttl for _, ttl in last_beat.values()) + grace + 30
        deadline = time.monotonic() + longest
        down: dict[str, float] = {}
        # (the last down per node: a node marked down while beating came back and went down again)
        while time.monotonic() < deadline and len(down) < len(last_beat):
            with store.engine.connect() as conn:
                rows = conn.execute(
                    text(
                        "SELECT data->>'NodeID', max(recorded_at) FROM events WHERE type = 'NodeStatusUpdated' "
                        "AND data->>'Status' = 'down' GROUP BY 1 HAVING true"
                    )
                ).all()
            down = {r[0]: r[1].timestamp() for r in rows}
            time.sleep(1.0)
        # A node marked down before its own last answered heartbeat was missed while it beat.
        with store.engine.connect() as conn:
            downs_while = conn.execute(
                text(
                    "SELECT data->>'NodeID', recorded_at FROM events WHERE type = 'NodeStatusUpdated' "
                    "AND data->>'Status' = 'down' AND recorded_at < to_timestamp(:end)"
                ),
                {"end": sim_end},
            ).all()
        early = len(
            {r[0] for r in downs_while if r[0] in last_beat and r[1].timestamp() < last_beat[r[0]][0]}
        )
        raw = [down[n] - beat for n, (beat, _) in last_beat.items() if n in down]
        late = [down[n] - beat - ttl - grace for n, (beat, ttl) in last_beat.items() if n in down]
        result.update(
            {
                "sim": sim_stats,
                "leader_cpu_fraction_of_one_core": round(leader_cpu, 3),
                "nodes_marked_down": len(down),
                "nodes_down_while_beating": early,
                "last_heartbeat_to_down_s": {
                    "p50": round(percentile(raw, 0.5), 2),
                    "p99": round(percentile(raw, 0.99), 2),
                },
                "beyond_ttl_plus_grace_s": {
                    "p50": round(percentile(late, 0.5), 3),
                    "p99": round(percentile(late, 0.99), 3),
                },
                "targets": {
                    "sim_cpu": "< 1 core at 5,000 nodes",
                    "keeps_up": "no node marked down while beating",
                },
            }
        )
    finally:
        servers.stop()
    report.write(result, args.out)


if __name__ == "__main__":
    main()
