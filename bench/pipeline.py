"""Pipeline benchmark: the whole control plane, every service its own process, on embedded NATS
JetStream and PostgreSQL.

5,000 nodes are registered; then 100 jobs x 1,000 allocs are submitted at once while small probe
jobs (count 10) are registered every half second. Reported: placements/s from the first big
register to the last of their allocs committed (commit times read from the log), p50/p99
register-to-placed latency of the probes under that load (and the p50 of their register request
alone), CPU seconds per process during the load, and the peak RSS of every service; and how
fast the host was (`host_reference_eval_ms`: bench/scheduler.py's 5,000-node, 1,000-alloc eval).

--garbage writes bench/gc.py's log to collect (1,000 finished batch jobs, 10,000 complete evals,
100,000 complete allocs on 500 down nodes, older than every threshold; bench/garbage.py) before
the services start, and sets the collector's interval to a day, so none of it goes unless
forced. --force-gc sends PUT /v1/system/gc as the load starts and reports the collection
(`gc`): its core eval complete, timed from the PUT and against the load's last commit, and
whether the garbage is all gone (`garbage.left`).

    python -m bench.pipeline --out bench/out/pipeline.json [--nodes 5000 --jobs 100 --count 1000]
        [--large-evals N] [--submit-over SECONDS] [--no-probes]
        [--stages] [--log-level DEBUG --timeline probes.json] [--garbage] [--force-gc]

bench/events.py runs this load with event stream subscribers beside it (`run` and its `Hooks`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Connection, text

from bench import garbage, report, stages
from bench.report import percentile
from bench.scheduler import run_case
from bench.servers import Servers, start
from tests.cluster import job_json, node_auth, node_json


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """CPU of a process and all its descendants so far, the exited ones included (Postgres
    runs a backend process per connection)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime, stime, and cutime, cstime: what its reaped children used.
        total += sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        todo += children.get(p, [])
    return total


def machine_cpu_seconds() -> float:
    """CPU time used by the whole machine (every core, not idle) so far."""
    parts = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = parts[3] + parts[4]
    return (sum(parts[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def placed_allocs(conn: Connection, jobs: list[str]) -> int:
    """Allocs of `jobs` that are to run."""
    return int(
        conn.execute(
            text("SELECT count(*) FROM allocs WHERE job_id = ANY(:jobs) AND desired_status = 'run'"),
            {"jobs": jobs},
        ).scalar_one()
    )


class Hooks:
    """What another benchmark runs beside the pipeline's load (bench/events.py): no-ops here."""

    def loading(self, servers: Servers) -> None:
        """The nodes are registered; the load and its CPU counts start when this returns."""

    def processes(self) -> list[tuple[str, int]]:
        """Processes of its own whose CPU during the load is reported beside the services'."""
        return []

    def loaded(self, servers: Servers, result: dict[str, Any]) -> None:
        """Every alloc is placed and `result` holds the load's figures; the servers still run."""


def parser(out: str = "bench/out/pipeline.json") -> argparse.ArgumentParser:
    """The pipeline's options (bench/events.py adds its own)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=out)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument(
        "--large-evals",
        type=int,
        help="DROVER_LARGE_EVALS for the broker: large evals out at once (default: the broker's)",
    )
    ap.add_argument(
        "--submit-over",
        type=float,
        default=0.0,
        help="spread the big jobs' registers evenly over this many seconds (default: all at once, "
        "the issue's load; a spread load shows probe latency on a machine that is not saturated)",
    )
    ap.add_argument(
        "--probes",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="register the count-10 probe jobs during the load (--no-probes: the big jobs alone, "
        "which the large lane's whole depth serves)",
    )
    ap.add_argument(
        "--stages",
        action="store_true",
        help="log at DEBUG and report where the probes' time went, stage by stage (bench.stages; "
        "DEBUG logging costs the services some CPU)",
    )
    ap.add_argument(
        "--ha", action="store_true", help="on three NATS servers and a PostgreSQL primary with its standby"
    )
    ap.add_argument("--timeline", help="write each probe's wall-clock register/placed times here (JSON)")
    ap.add_argument(
        "--log-level", default="INFO", help="the services' DROVER_LOG_LEVEL (DEBUG logs stage timings)"
    )
    ap.add_argument(
        "--garbage",
        action="store_true",
        help="seed the log with bench/gc.py's 100,000 allocs, 10,000 evals and 1,000 jobs to collect "
        "before the services start; the collector's own passes wait a day",
    )
    ap.add_argument(
        "--force-gc", action="store_true", help="PUT /v1/system/gc as the load starts and time the collection"
    )
    ap.add_argument("--gc-wait", type=float, default=600.0, help="seconds to wait after the load for it")
    return ap


def run(args: argparse.Namespace, hooks: Hooks | None = None) -> dict[str, Any]:
    """One run of the load on fresh servers; its figures."""
    hooks = hooks or Hooks()

    # This host's speed varies 2-3x from one hour to the next: the scheduling core's time for
    # one 1,000-alloc eval on 5,000 nodes (bench/scheduler.py's case), measured before the
    # servers start, says how fast it was for this run.
    reference = run_case(5000, 50, 1000, [], repeats=5)["ms_per_eval"]
    seeded: dict[str, Any] = {}
    servers = start(
        seed=(lambda s: seeded.update(garbage.seed(s))) if args.garbage else None,
        workers=args.workers,
        planners=1,
        ha=args.ha,
        env={
            "DROVER_LOG_LEVEL": "DEBUG" if args.stages else args.log_level,
            **({"DROVER_LARGE_EVALS": str(args.large_evals)} if args.large_evals else {}),
            # The garbage is older than every threshold: a periodic pass would collect it.
            **({"DROVER_GC_INTERVAL": "86400"} if args.garbage else {}),
        },
    )
    cluster, store = servers.cluster, servers.store
    base = str(cluster.http.base_url)
    result: dict[str, Any] = {
        "benchmark": "pipeline",
        "nodes": args.nodes,
        "jobs": args.jobs,
        "count": args.count,
        "submit_over_s": args.submit_over,
        "large_evals": args.large_evals,
        "host_reference_eval_ms": reference,
        "force_gc": args.force_gc,
        "ha": args.ha,
        **({"garbage": seeded} if args.garbage else {}),
    }
    registered: list[str] = []
    beating = threading.Event()

    def heartbeat() -> None:
        # The nodes' clients: every node beats every 3 s (batched), as `drover sim` does; the
        # shortest TTL handed out is 10 s, so none is missed.
        with httpx.Client(base_url=base, timeout=60, auth=node_auth()) as h:
            while not beating.wait(3.0):
                if registered:
                    h.put("/v1/drover/heartbeats", json={"NodeIDs": list(registered)}).raise_for_status()

    beater = threading.Thread(target=heartbeat, daemon=True)
    beater.start()
    try:
        t0 = time.monotonic()
        with ThreadPoolExecutor(8) as pool:

            def reg(i: int) -> None:
                with httpx.Client(base_url=base, timeout=60) as h:
                    for k in range(i, args.nodes, 8):
                        r = h.put(
                            "/v1/drover/node/register",
                            json={"Node": node_json(f"node-{k:05d}", cpu=4000, mem=8192)},
                        )
                        r.raise_for_status()
                        registered.append(f"node-{k:05d}")

            list(pool.map(reg, range(8)))
        result["node_register_s"] = round(time.monotonic() - t0, 2)
        hooks.loading(servers)

        probe_latencies: list[float] = []
        register_latencies: list[float] = []
        timeline: list[dict[str, Any]] = []
        stop = threading.Event()

        def probes() -> None:
            i = 0
            with httpx.Client(base_url=base, timeout=60) as h:
                while not stop.is_set():
                    jid = f"probe-{i}"
                    i += 1
                    start, wall = time.monotonic(), time.time()
                    h.put("/v1/jobs", json=job_json(jid, 10, cpu=50, mem=32)).raise_for_status()
                    register_latencies.append(time.monotonic() - start)
                    entry = {"job": jid, "start": wall, "registered": time.time()}
                    index = 0
                    while not stop.is_set():
                        # A blocking query, as a Nomad client waits: it returns once the index moves.
                        r = h.get(f"/v1/job/{jid}/allocations", params={"index": index, "wait": "5s"})
                        index = int(r.headers.get("X-Nomad-Index", index))
                        if sum(1 for a in r.json() if a["DesiredStatus"] == "run") >= 10:
                            probe_latencies.append(time.monotonic() - start)
                            timeline.append({**entry, "placed": time.time()})
                            break
                    time.sleep(0.2)

        prober = threading.Thread(target=probes)
        with store.engine.connect() as conn:
            before = int(conn.exec_driver_sql("SELECT coalesce(max(position), 0) FROM events").scalar_one())
        services = [
            (f"{svc}-{i}", p.pid) for svc, procs in cluster.procs.items() for i, p in enumerate(procs)
        ] + hooks.processes()
        # Beside the services: the servers (Postgres with its backends) and this driver (its
        # heartbeats and probes; its own threads, not the services it started).
        server_pids = servers.server_pids()
        cpu0 = {name: cpu_seconds(pid) for name, pid in services}
        cpu0 |= {name: tree_cpu_seconds(pid) for name, pid in server_pids}
        cpu0["bench"] = cpu_seconds(os.getpid())
        machine0 = machine_cpu_seconds()
        forced = time.time()
        if args.force_gc:
            httpx.put(f"{base}/v1/system/gc", timeout=60).raise_for_status()
        wall0 = time.time()
        if args.probes:
            prober.start()

        def submit(k: int) -> None:
            with httpx.Client(base_url=base, timeout=60) as h:
                for j in range(k, args.jobs, 10):
                    if args.submit_over:
                        # Spread evenly: job j is due at j/jobs of the way through.
                        time.sleep(max(0.0, wall0 + args.submit_over * j / args.jobs - time.time()))
                    h.put(
                        "/v1/jobs", json=job_json(f"big-{j:03d}", args.count, cpu=100, mem=64)
                    ).raise_for_status()

        with ThreadPoolExecutor(10) as pool:
            list(pool.map(submit, range(10)))
        submitted_s = time.time() - wall0
        want = args.jobs * args.count
        deadline = time.monotonic() + 1800
        placed = 0
        big_jobs = [f"big-{j:03d}" for j in range(args.jobs)]
        while time.monotonic() < deadline:
            with store.engine.connect() as conn:
                # Evals are few, allocs many: counting 100,000 allocs every second would be
                # load on the server under test. Allocs are counted once the evals are done.
                pending = int(
                    conn.execute(
                        text(
                            "SELECT count(*) FROM evals WHERE job_id = ANY(:jobs) "
                            "AND status NOT IN ('complete', 'failed', 'canceled')"
                        ),
                        {"jobs": big_jobs},
                    ).scalar_one()
                )
                if not pending:
                    placed = placed_allocs(conn, big_jobs)
            if placed >= want:
                break
            time.sleep(1.0)
        cpu = {name: round(cpu_seconds(pid) - cpu0[name], 1) for name, pid in services}
        cpu |= {name: round(tree_cpu_seconds(pid) - cpu0[name], 1) for name, pid in server_pids}
        cpu["bench"] = round(cpu_seconds(os.getpid()) - cpu0["bench"], 1)
        with store.engine.connect() as conn:
            placed = placed_allocs(conn, big_jobs)
        cpu["machine"] = round(machine_cpu_seconds() - machine0, 1)
        stop.set()
        if args.probes:
            prober.join(timeout=30)
        with store.engine.connect() as conn:
            last_commit = conn.execute(
                text(
                    "SELECT max(recorded_at) FROM events WHERE position > :p AND type = 'PlanApplied' "
                    "AND data->>'JobID' LIKE 'big-%'"
                ),
                {"p": before},
            ).scalar_one()
        duration = last_commit.timestamp() - wall0
        if args.force_gc:
            gc_deadline = time.monotonic() + args.gc_wait
            while time.monotonic() < gc_deadline:
                with store.engine.connect() as conn:
                    if garbage.forced_done(conn) is not None:
                        break
                time.sleep(0.5)
            with store.engine.connect() as conn:
                result["gc"] = garbage.collection(conn, before, forced, last_commit.timestamp())
        if args.garbage:
            with store.engine.connect() as conn:
                seeded["left"] = garbage.left(conn)
            seeded["left_total"] = sum(seeded["left"].values())
            seeded["collected_all"] = seeded["left_total"] == 0
        result.update(
            {
                "allocs_placed": placed,
                "submit_all_s": round(submitted_s, 2),
                "first_register_to_last_commit_s": round(duration, 2),
                "placements_per_s": round(placed / duration, 1),
                "probe_jobs": len(probe_latencies),
                "probe_register_to_placed_ms": {
                    "p50": round(statistics.median(probe_latencies) * 1000, 1) if probe_latencies else None,
                    "p99": round(percentile(probe_latencies, 0.99) * 1000, 1) if probe_latencies else None,
                },
                # The part of it the register request itself took (its append waits on the log).
                "probe_register_request_ms_p50": (
                    round(statistics.median(register_latencies) * 1000, 1) if register_latencies else None
                ),
                "cpu_s_during_load": cpu,
                "peak_rss_mb": {
                    f"{svc}-{i}": round(peak_rss_mb(p.pid), 1)
                    for svc, procs in cluster.procs.items()
                    for i, p in enumerate(procs)
                    if p.poll() is None
                },
                "targets": {
                    "placements_per_s": ">= 5000",
                    "probe_p50_ms": "< 50",
                    "rss_mb_at_1M_allocs": "< 1500",
                },
            }
        )
        with store.engine.connect() as conn:
            # Must be 0: a node missed would add node-update evals and replacements to the load.
            result["nodes_missed"] = int(
                conn.execute(
                    text(
                        "SELECT count(*) FROM events WHERE type = 'NodeStatusUpdated' "
                        "AND data->>'Status' IN ('down', 'disconnected')"
                    )
                ).scalar_one()
            )
        hooks.loaded(servers, result)
    finally:
        beating.set()
        servers.stop(keep=True)
        try:
            if args.stages:
                result["probe_stages_ms"] = stages.summary(stages.split(servers.tmp / "logs", timeline))
        finally:
            servers.remove()
    if args.timeline:
        Path(args.timeline).write_text(json.dumps(timeline, indent=1))
    return result


def main() -> None:
    args = parser().parse_args()
    report.write(run(args), args.out)


if __name__ == "__main__":
    main()
