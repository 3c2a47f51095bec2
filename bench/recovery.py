"""Recovery benchmark: a cluster as a new user runs it (`drover up`: embedded NATS and
PostgreSQL, every service its own process, restarted when it dies, the default settings), 60
jobs of count 25 being placed on 100 nodes, and 8 of its services killed (SIGKILL) half a second
apart while they are - the plan applier's leader, both kinds of worker, the broker, the relay, the
leader, the collector's leader, the API (`KILLS`) - the same in the same order every run.

Reported: how long after the first kill the cluster converged - every alloc placed and none of
the jobs' evals left pending or blocked - and from the first register; the evals the restarted
or surviving workers took again from a killed worker (their "delivered again" log lines, each
with its wait since the first kill); and the host's load average.

    python -m bench.recovery --out bench/out/recovery.json [--env KEY=VALUE ...]

--env passes a setting to every service (`drover up` reads DROVER_* from its environment), so
two variants can be run interleaved on one host, as docs/performance.md asks."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from bench import report
from drover.runtime.embedded import free_port
from tests.cluster import job_json, node_auth, node_json

# Which services are killed, in order: (service, which one). A worker is named by its lane
# (`drover up` gives the first of three workers the large lane), a service run with a standby
# by "leading" (the one that leads). The plan applier first: the plans it held go unanswered,
# so the workers killed next hold evals whose outcome is not committed, which other workers
# must take over.
KILLS = [
    ("planner", "leading"),
    ("worker", "small"),
    ("worker", "large"),
    ("broker", ""),
    ("relay", ""),
    ("leader", "leading"),
    ("gc", "leading"),
    ("api", ""),
]
LEADER = re.compile(r":(\d+) is the leader \(epoch (\d+)\)")
TERMINAL = ("complete", "failed", "canceled")
REDELIVERED = re.compile(r"^(\S+ \S+).*eval (\S+) of (\S+) delivered again \(delivery (\d+)\)")


def children(parent: int) -> list[tuple[int, str, str]]:
    """The live `drover.<service>` processes `parent` started: pid, service, and a worker's
    lane, oldest first."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) != parent or fields[0] == "Z":
                continue
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
            environ = (stat.parent / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"-m" not in argv:
            continue
        service = argv[argv.index(b"-m") + 1].decode().removeprefix("drover.")
        lane = next(
            (e.split(b"=", 1)[1].decode() for e in environ if e.startswith(b"DROVER_WORKER_LANE=")), ""
        )
        out.append((int(stat.parent.name), service, lane))
    return sorted(out)


def leader(logs: Path, service: str) -> int:
    """The pid of the service's leader: the one that last said so in the service's logs."""
    said = [
        (int(m.group(2)), int(m.group(1)))
        for log in logs.glob(f"{service}-*.log")
        for m in LEADER.finditer(log.read_text(errors="replace"))
    ]
    return max(said)[1]


def victim(parent: int, logs: Path, service: str, which: str) -> int:
    """The pid of one service `drover up` runs: a worker by its lane, "leading" by its logs, else
    the only one."""
    if which == "leading":
        return leader(logs, service)
    return next(pid for pid, svc, lane in children(parent) if svc == service and lane == which)


def state(h: httpx.Client, jobs: set[str]) -> tuple[int, dict[str, int]]:
    """Allocs of `jobs` to run, and their evals by status."""
    allocs = h.get("/v1/allocations").raise_for_status().json()
    placed = sum(1 for a in allocs if a["JobID"] in jobs and a["DesiredStatus"] == "run")
    statuses: dict[str, int] = {}
    for evaluation in h.get("/v1/evaluations").raise_for_status().json():
        if evaluation["JobID"] in jobs:
            statuses[evaluation["Status"]] = statuses.get(evaluation["Status"], 0) + 1
    return placed, statuses


def load() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """One run on a fresh `drover up`: its figures."""
    tmp = Path(tempfile.mkdtemp(prefix="drover-recovery-"))
    port = free_port()
    env = {
        **os.environ,
        "DROVER_DATA_DIR": str(tmp),
        "DROVER_API_PORT": str(port),
        "DROVER_LOG_LEVEL": "INFO",
        **dict(kv.split("=", 1) for kv in args.env),
    }
    up = subprocess.Popen(
        [str(Path(sys.executable).parent / "drover"), "up"],
        env=env,
        stdout=open(tmp / "up.log", "ab"),  # noqa: SIM115 - owned by the child
        stderr=subprocess.STDOUT,
    )
    result: dict[str, Any] = {"benchmark": "recovery", "env": args.env, "load_before": load()}
    beating = threading.Event()
    nodes = [f"node-{i:03d}" for i in range(args.nodes)]
    try:
        h = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
        deadline = time.monotonic() + 120
        while True:
            try:
                h.get("/v1/status/leader").raise_for_status()
                break
            except httpx.HTTPError:
                if up.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"drover up did not come up; see {tmp / 'up.log'}") from None
                time.sleep(0.5)
        for node in nodes:
            h.put("/v1/drover/node/register", json={"Node": node_json(node)}).raise_for_status()

        def heartbeat() -> None:
            # The nodes' clients: beats every 3 s (the shortest TTL is 10 s), on through the API's restart.
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10, auth=node_auth()) as hb:
                while not beating.wait(3.0):
                    with contextlib.suppress(httpx.HTTPError):
                        hb.put("/v1/drover/heartbeats", json={"NodeIDs": nodes})

        threading.Thread(target=heartbeat, daemon=True).start()
        # Every service up and its consumers made: a first job placed.
        h.put("/v1/jobs", json=job_json("warmup", 1, rolling=False)).raise_for_status()
        while state(h, {"warmup"})[0] < 1:
            time.sleep(0.2)
        time.sleep(2.0)

        jobs = [f"job-{j:02d}" for j in range(args.jobs)]
        want = args.jobs * args.count
        t0 = time.monotonic()
        with ThreadPoolExecutor(6) as pool:
            list(
                pool.map(
                    lambda jid: h.put(
                        "/v1/jobs", json=job_json(jid, args.count, cpu=100, mem=64, rolling=False)
                    ).raise_for_status(),
                    jobs,
                )
            )
        result["register_s"] = round(time.monotonic() - t0, 2)
        placed_at_kill = state(h, set(jobs))[0]
        kills = []
        first_kill_wall = time.time()
        t_kill = time.monotonic()
        for service, which in KILLS:
            pid = victim(up.pid, tmp / "logs", service, which)
            os.kill(pid, signal.SIGKILL)
            kills.append(
                {"service": service, "which": which, "pid": pid, "at_s": round(time.monotonic() - t_kill, 2)}
            )
            time.sleep(args.kill_every)
        result.update({"kills": kills, "placed_at_first_kill": placed_at_kill})

        converged, placed, statuses = None, 0, {}
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            try:
                placed, statuses = state(h, set(jobs))
            except httpx.HTTPError:
                time.sleep(0.5)  # the API restarting
                continue
            if placed >= want and not any(s not in TERMINAL for s in statuses):
                converged = time.monotonic()
                break
            time.sleep(0.5)
        result["load_after"] = load()
        redelivered = []
        for log in sorted((tmp / "logs").glob("worker-*.log")):
            for line in log.read_text(errors="replace").splitlines():
                m = REDELIVERED.match(line)
                if m and m.group(3) in jobs:
                    at = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                    redelivered.append(
                        {
                            "eval": m.group(2),
                            "delivery": int(m.group(4)),
                            "after_first_kill_s": round(at - first_kill_wall, 1),
                        }
                    )
        result.update(
            {
                "jobs": args.jobs,
                "count": args.count,
                "nodes": args.nodes,
                "allocs_placed": placed,
                "evals": statuses,
                "converged": converged is not None,
                "converged_after_first_kill_s": round(converged - t_kill, 1) if converged else None,
                "converged_after_first_register_s": round(converged - t0, 1) if converged else None,
                "redelivered": sorted(redelivered, key=lambda r: r["after_first_kill_s"]),
            }
        )
    finally:
        beating.set()
        up.send_signal(signal.SIGINT)
        try:
            up.wait(timeout=60)
        except subprocess.TimeoutExpired:
            up.kill()
        if args.keep:
            result["dir"] = str(tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/recovery.json")
    ap.add_argument("--jobs", type=int, default=60)
    ap.add_argument("--count", type=int, default=25)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--kill-every", type=float, default=0.5, help="seconds between two kills")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for convergence")
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for every service")
    ap.add_argument("--keep", action="store_true", help="keep the data directory and its logs")
    args = ap.parse_args()
    report.write(run(args), args.out)


if __name__ == "__main__":
    main()
