"""Template re-render benchmark: services changing under templates that watch them.

Every service runs as its own process on embedded NATS and PostgreSQL, with `drover sim`'s
--nodes nodes. A service job of --count allocs, each registering the nomad service `web` on
its port (the sim registers its running allocs' services, as an agent does), is placed; then
--watchers template watchers each render `{{ range nomadService "web" }}...{{ end }}` as the
agent's template hook does (drover.client.templatesources: a blocking query on
/v1/service/web; drover.template renders it). One service changes (one registration removed
by `DELETE /v1/service/web/:id`) and each watcher's time until its output no longer holds it
is taken. Reported: from the request, the p50 and p99 of the blocking queries' answers and of
the renders (every watcher renders in this one process, so the renders queue on its CPU), and
the API's CPU while the watchers caught up.

    python -m bench.templates --out bench/out/templates.json [--nodes 200 --count 1000 --watchers 100]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from typing import Any

import httpx

from bench import report
from bench.pipeline import cpu_seconds
from bench.report import percentile
from bench.servers import start
from drover.client.templatesources import TemplateSources
from drover.control.client.templatedata import CachedData
from drover.template import Call, parse

JOB = "web"
TEMPLATE = '{{ range nomadService "web" }}{{ .Address }}:{{ .Port }}\n{{ end }}'


def job_body(count: int) -> dict[str, Any]:
    task = {"Name": "t", "Driver": "mock", "Config": {}, "Resources": {"CPU": 10, "MemoryMB": 16}}
    group = {
        "Name": "g",
        "Count": count,
        "Tasks": [task],
        "Networks": [{"DynamicPorts": [{"Label": "http"}]}],
        "Services": [{"Name": "web", "PortLabel": "http", "Provider": "nomad"}],
        "Update": {"MaxParallel": 0},
    }
    return {"Job": {"ID": JOB, "Type": "service", "Datacenters": ["dc1"], "TaskGroups": [group]}}


async def _watch(
    base: str,
    ready: asyncio.Event,
    go: asyncio.Event,
    want: int,
    seen: list[tuple[float, float]],
    stop: asyncio.Event,
) -> None:
    """One template: rendered once, then again each time the service changes, until its output
    has `want` lines (the time of that render kept)."""
    template = parse(TEMPLATE, name="proxy.conf")
    async with httpx.AsyncClient(base_url=base, timeout=httpx.Timeout(120.0, connect=10.0)) as http:
        sources = TemplateSources(http, "default")
        await sources.fetch(("service", "web"))

        def lines() -> int:
            call = Call(nomad=CachedData(sources.values, "default"))
            return template.render(call).text.count("\n")

        lines()
        ready.set()
        await go.wait()
        while not stop.is_set():
            changed = await sources.changed([("service", "web")], stop)
            woke = time.monotonic()
            if changed and lines() == want:
                seen.append((woke, time.monotonic()))
                return


async def run(base: str, watchers: int, count: int, api_pid: int) -> dict[str, Any]:
    stop, go = asyncio.Event(), asyncio.Event()
    readies = [asyncio.Event() for _ in range(watchers)]
    seen: list[tuple[float, float]] = []
    tasks = [asyncio.create_task(_watch(base, r, go, count - 1, seen, stop)) for r in readies]
    await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 300)
    go.set()
    await asyncio.sleep(1.0)  # every watcher back in its blocking query
    cpu0 = cpu_seconds(api_pid)
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        one = (await http.get("/v1/service/web")).json()[0]
        t0 = time.monotonic()
        r = await http.delete(f"/v1/service/web/{one['ID']}")
        r.raise_for_status()
    try:
        await asyncio.wait_for(asyncio.gather(*tasks), 300)
    finally:
        stop.set()
    api_cpu = cpu_seconds(api_pid) - cpu0
    woke = [(w - t0) * 1000 for w, _ in seen]
    rendered = [(r - t0) * 1000 for _, r in seen]

    def spread(values: list[float]) -> dict[str, float]:
        return {"p50": round(percentile(values, 0.5), 1), "p99": round(percentile(values, 0.99), 1)}

    return {
        "watchers_rerendered": len(seen),
        # The blocking query answered with the change (the servers' part)...
        "woken_ms": spread(woke),
        # ... and the template rendered again from it (all watchers share this process's CPU).
        "rerendered_ms": spread(rendered),
        "api_cpu_s": round(api_cpu, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/templates.json")
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--watchers", type=int, default=100)
    args = ap.parse_args()
    result: dict[str, Any] = {
        "benchmark": "templates",
        "nodes": args.nodes,
        "count": args.count,
        "watchers": args.watchers,
    }
    servers = start("drover-templates-", workers=1)
    c = servers.cluster
    sim = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "drover.client.sim",
            "--api",
            str(c.http.base_url),
            "--nodes",
            str(args.nodes),
        ],
        env=c.env(),
    )
    try:
        c.wait(lambda: len(c.get("/v1/nodes")) >= args.nodes, 300, interval=0.5)
        c.put("/v1/jobs", job_body(args.count))
        t0 = time.monotonic()
        c.wait(lambda: len(c.get("/v1/service/web")) >= args.count, 600, interval=0.5)
        result["registered_s"] = round(time.monotonic() - t0, 2)
        api_pid = c.procs["api"][0].pid
        result.update(asyncio.run(run(str(c.http.base_url), args.watchers, args.count, api_pid)))
    finally:
        sim.terminate()
        sim.wait(timeout=60)
        servers.stop()
    report.write(result, args.out)


if __name__ == "__main__":
    main()
