"""Docker driver benchmark: --count docker allocs started on one agent.

Every service runs as its own process on embedded NATS and PostgreSQL, with one real agent
(`drover-client`, the docker driver on this machine's engine). One service job of --count
allocs, each a container of drover/httpd:local (deploy/images) serving on a dynamic port, is
registered; reported:

- `containers_per_s`: allocs whose task is running, per second, from the register to the
  last one's task start (`first_start_s`, `last_start_s` from the register);
- `agent_cpu_ms_per_container`: the agent process's CPU (user + system) from the register
  until every task runs, per container; `dockerd_cpu_s` beside it (the engine's own, with
  containerd and its shims: what starting a container costs outside Drover);
- `stop_s`: `job stop` to the last container removed.

    python -m bench.docker --out bench/out/docker.json [--count 100]
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time
from typing import Any

from bench import report
from bench.pipeline import cpu_seconds, tree_cpu_seconds
from bench.servers import start
from deploy.images import ensure

JOB = "dockerbench"
S = 1_000_000_000


def job_body(count: int) -> dict[str, Any]:
    task = {
        "Name": "web",
        "Driver": "docker",
        "Config": {
            "image": "drover/httpd:local",
            "command": "serve",
            "args": ["${NOMAD_PORT_http}"],
            "ports": ["http"],
        },
        "Resources": {"CPU": 20, "MemoryMB": 16},
        "KillTimeout": 1 * S,
    }
    group = {
        "Name": "g",
        "Count": count,
        "Tasks": [task],
        "Networks": [{"DynamicPorts": [{"Label": "http"}]}],
        "Update": {"MaxParallel": 0},
    }
    return {"Job": {"ID": JOB, "Type": "service", "Datacenters": ["dc1"], "TaskGroups": [group]}}


def pid_of(name: str) -> int | None:
    out = subprocess.run(["pidof", name], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/docker.json")
    ap.add_argument("--count", type=int, default=100)
    args = ap.parse_args()
    import docker

    engine = docker.from_env(timeout=300)
    ensure(["httpd"], client=engine, say=lambda line: print(line, file=sys.stderr))
    result: dict[str, Any] = {
        "benchmark": "docker",
        "count": args.count,
        "engine_version": engine.version()["Version"],
    }
    servers = start("drover-docker-")
    c = servers.cluster
    config = servers.tmp / "agent.hcl"
    config.write_text(
        'client { network_interface = "lo" }\nplugin "docker" { config { gc { image = false } } }\n'
    )
    agent = subprocess.Popen(
        [sys.executable, "-m", "drover.client", "--api", str(c.http.base_url), "--data-dir",
         str(servers.tmp / "agent"), "--name", "bench", "--config", str(config)],
        env=c.env(), stdout=subprocess.DEVNULL, stderr=open(servers.tmp / "agent.log", "wb"),  # noqa: SIM115
    )  # fmt: skip
    node_id = ""
    try:
        c.wait(lambda: [n for n in c.get("/v1/nodes") if n["Status"] == "ready"], 60)
        node_id = c.get("/v1/nodes")[0]["ID"]
        dockerd = [p for p in (pid_of("dockerd"), pid_of("containerd")) if p]
        cpu0, engine0 = cpu_seconds(agent.pid), sum(tree_cpu_seconds(p) for p in dockerd)
        t0 = time.time_ns()
        c.put("/v1/jobs", job_body(args.count))

        def starts() -> list[int] | None:
            allocs = c.get(f"/v1/job/{JOB}/allocations")
            times = [
                a["TaskStates"]["web"]["StartedAt"] for a in allocs if a.get("TaskStates", {}).get("web")
            ]
            at = [int(_ns(t)) for t in times if t and not str(t).startswith("0001")]
            return at if len(at) >= args.count else None

        at = c.wait(starts, 600, interval=0.5)
        agent_cpu = cpu_seconds(agent.pid) - cpu0
        engine_cpu = sum(tree_cpu_seconds(p) for p in dockerd) - engine0
        first, last = (min(at) - t0) / S, (max(at) - t0) / S
        result.update(
            {
                "first_start_s": round(first, 2),
                "last_start_s": round(last, 2),
                "containers_per_s": round(args.count / last, 1),
                "agent_cpu_ms_per_container": round(agent_cpu * 1000 / args.count, 1),
                "agent_cpu_s": round(agent_cpu, 2),
                "dockerd_cpu_s": round(engine_cpu, 2),
            }
        )
        t1 = time.monotonic()
        c.http.delete(f"/v1/job/{JOB}").raise_for_status()
        label = f"com.hashicorp.nomad.node_id={node_id}"
        c.wait(
            lambda: not engine.containers.list(all=True, filters={"label": label}, ignore_removed=True),
            600,
            interval=0.5,
        )
        result["stop_s"] = round(time.monotonic() - t1, 2)
    finally:
        agent.terminate()
        agent.wait(30)
        if node_id:
            for cont in engine.containers.list(
                all=True, filters={"label": f"com.hashicorp.nomad.node_id={node_id}"}
            ):
                with contextlib.suppress(Exception):
                    cont.remove(force=True)
        servers.stop()
    report.write(result, args.out)


def _ns(value: Any) -> int:
    """A task state's StartedAt (ns, or Nomad's RFC 3339 text) in ns since the epoch."""
    if isinstance(value, int):
        return value
    from drover.client.dockerlogs import parse_timestamp

    return parse_timestamp(str(value).encode())


if __name__ == "__main__":
    main()
