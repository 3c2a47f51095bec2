"""`drover sim`: one process hosting thousands of simulated nodes.

Nodes are spread over datacenters and racks (meta.rack) as asked and advertise whatever
drivers they are told (docker included), each with a host network of its own address
(10.0.0.0/8, aliased "default") and the default dynamic port range, so port placement runs as
on real nodes; they register, heartbeat in batches at the TTLs the
servers hand out, and run their allocs as the mock driver would (run_for, exit_code,
start_error; anything else runs until stopped), following every node's allocs with one
blocking query. An operator's restart request on a running alloc is acted on once, as the
agent does: its tasks are signalled, and --restart-delay later they start again. The nomad
services of a running alloc are registered, at its node's address, and removed when it ends.
Every node registers with the one secret the simulator keeps in --data-dir (its requests
carry it, as an agent's carry its node's): run again, it speaks for the same nodes.

    drover sim --nodes 5000 --datacenters 2 --racks 50 --drivers mock,docker --api URL
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import resource
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from drover.client.identity import NodeSecretAuth, intro_token, load_or_create_secret
from drover.client.simbeats import NodeBeats
from drover.client.simnodes import sim_node
from drover.client.simtasks import SimTasks
from drover.control.client.services import alloc_registrations
from drover.model.alloc import Allocation
from drover.model.durations import SECOND, parse_duration
from drover.model.job import TaskGroup
from drover.model.serviceregistration import ServiceRegistration
from drover.model.services import SERVICE_PROVIDER_NOMAD
from drover.runtime.service import run_loop
from drover.runtime.telemetry import setup_logging
from drover.runtime.tls import client_tls_options

log = logging.getLogger("drover.sim")
BATCH = 1000
# A status report is one event in the log, relayed whole as one NATS message (1 MB at most):
# a report is cut after about 2,000 task events (~180 bytes each there). 1,000 allocs with 6
# events each (restarted once) came to 1.1 MB, and the relay could not pass it on.
REPORT_EVENTS = 2000


@dataclass
class Stats:
    allocs_started: int = 0
    allocs_finished: int = 0
    allocs_restarted: int = 0
    started: float = field(default_factory=time.monotonic)


class Simulator:
    def __init__(
        self,
        api: str,
        nodes: list[dict[str, Any]],
        prefix: str,
        secret_id: str,
        restart_delay: float = 0.05,
    ) -> None:
        self.http = httpx.AsyncClient(
            base_url=api,
            timeout=httpx.Timeout(60.0, connect=5.0),
            auth=NodeSecretAuth(secret_id, intro_token(os.environ)),
            **client_tls_options(api, os.environ),  # an https API: NOMAD_CACERT and the rest
        )
        self.secret_id = secret_id
        self.nodes = nodes
        self.prefix = prefix
        self.beats = NodeBeats(self.http, secret_id)
        self.stats = Stats()
        self.allocs: dict[str, str] = {}  # alloc id -> what this sim last said of it
        self.tasks: dict[str, SimTasks] = {}  # alloc id -> its tasks' states
        # From a restart request's signal to its tasks running again (s).
        self.restart_delay = restart_delay
        self.jobs: dict[tuple[str, str, int], dict[str, Any]] = {}
        self.updates: dict[str, dict[str, Any]] = {}
        self._timers: set[asyncio.Task[None]] = set()
        self.judging: set[str] = set()  # allocs whose deployment health is still to be told
        self.datacenters = {n["ID"]: n.get("Datacenter", "dc1") for n in nodes}
        # Nomad service registrations: each running alloc's, and what is still to be sent.
        self.registered: dict[str, list[str]] = {}
        self.to_register: dict[str, ServiceRegistration] = {}
        self.to_deregister: list[str] = []
        # Per running alloc: the AllocModifyIndex and deployment it was last run for.
        self.versions: dict[str, tuple[int, str]] = {}

    async def job(self, ns: str, job_id: str, version: int) -> dict[str, Any] | None:
        key = (ns, job_id, version)
        if key not in self.jobs:
            r = await self.http.get(f"/v1/job/{quote(job_id, safe='')}/versions", params={"namespace": ns})
            if r.status_code != 200:
                return None
            for j in r.json().get("Versions", []):
                self.jobs[(j.get("Namespace", "default"), j["ID"], j.get("Version", 0))] = j
        return self.jobs.get(key)

    def _report(self, alloc_id: str, status: str, healthy: bool | None = None) -> None:
        """Queue the alloc's status and its tasks' states for the next batch."""
        now = time.time_ns()
        self.allocs[alloc_id] = status
        update: dict[str, Any] = {
            "ID": alloc_id,
            "ClientStatus": status,
            "TaskStates": self.tasks[alloc_id].to_api(),
            "At": now,
        }
        if healthy is None and status == "failed" and alloc_id in self.judging:
            healthy = False
        if healthy is not None:
            self.judging.discard(alloc_id)
            update["DeploymentStatus"] = {"Healthy": healthy, "Timestamp": now}
        self.updates[alloc_id] = update

    def _register(self, a: dict[str, Any], group: dict[str, Any] | None, names: list[str]) -> None:
        """Queue the registrations of a started alloc's nomad services (its group's and its
        tasks'), as the agent makes them."""
        if group is None:
            return
        specs = [*(group.get("Services") or [])]
        specs.extend(s for t in group.get("Tasks", []) for s in t.get("Services") or [])
        if not any(spec.get("Provider") == SERVICE_PROVIDER_NOMAD for spec in specs):
            return
        alloc, tg = Allocation.model_validate(a), TaskGroup.model_validate(group)
        node = alloc.node_id
        work = alloc_registrations(
            alloc, tg, node, self.datacenters.get(node, ""), alloc_running=True, running_tasks=names
        )
        for problem in work.problems:
            log.warning("alloc %s: cannot register %s", alloc.id, problem)
        self.registered[alloc.id] = [r.id for r in work.registrations]
        self.to_register.update((r.id, r) for r in work.registrations)

    def _deregister(self, alloc_id: str) -> None:
        self.versions.pop(alloc_id, None)
        for service_id in self.registered.pop(alloc_id, []):
            if self.to_register.pop(service_id, None) is None:
                self.to_deregister.append(service_id)

    def _later(self, after: float, fn: Callable[[], None]) -> None:
        async def fire() -> None:
            await asyncio.sleep(after)
            fn()

        timer = asyncio.create_task(fire())
        self._timers.add(timer)
        timer.add_done_callback(self._timers.discard)

    def _arm_finish(self, alloc_id: str) -> None:
        """With run_for, the alloc's run ends that long from now, unless restarted meanwhile."""
        tasks = self.tasks[alloc_id]
        if tasks.run_for > 0:
            run = tasks.run
            self._later(tasks.run_for, lambda: self._finish(alloc_id, run))

    def _finish(self, alloc_id: str, run: int) -> None:
        tasks = self.tasks[alloc_id]
        if self.allocs.get(alloc_id) == "running" and tasks.run == run:
            failed = tasks.exit_code != 0
            tasks.finish(time.time_ns(), tasks.exit_code, failed=failed)
            self._report(alloc_id, "failed" if failed else "complete")
            self._deregister(alloc_id)
            self.stats.allocs_finished += 1

    def _healthy(self, alloc_id: str) -> None:
        # Mock tasks that are still running after min_healthy_time are healthy.
        if self.allocs.get(alloc_id) == "running" and alloc_id in self.judging:
            self._report(alloc_id, "running", healthy=True)

    def _restart_if_asked(self, alloc_id: str, request: dict[str, Any]) -> None:
        """Signal the tasks an operator's request names (once per request ID); they start
        again restart_delay later."""
        chosen = self.tasks[alloc_id].signal(request, time.time_ns())
        if chosen:
            self._report(alloc_id, "running")
            self._later(self.restart_delay, lambda: self._restarted(alloc_id, chosen))

    def _restarted(self, alloc_id: str, chosen: list[str]) -> None:
        if self.allocs.get(alloc_id) != "running":
            return  # stopped or finished meanwhile
        self.tasks[alloc_id].restarted(chosen, time.time_ns())
        self._report(alloc_id, "running")
        self.stats.allocs_restarted += 1
        self._arm_finish(alloc_id)

    async def follow_allocs(self, stop: asyncio.Event) -> None:
        index = 0
        while not stop.is_set():
            try:
                r = await self.http.get(
                    "/v1/drover/allocs/changes",
                    params={"index": index, "wait": "30s", "node_prefix": self.prefix},
                )
                r.raise_for_status()
                index = int(r.headers.get("X-Nomad-Index", index))
                for a in r.json():
                    await self._sync(a)
            except httpx.HTTPError as e:
                log.warning("following allocs failed: %s", e)
                await asyncio.sleep(1.0)

    async def _sync(self, a: dict[str, Any]) -> None:
        aid = a["ID"]
        said = self.allocs.get(aid)
        if a["DesiredStatus"] != "run":
            if said in ("running", "pending"):
                self.tasks[aid].finish(time.time_ns(), None)
                self._report(aid, "complete")
                self._deregister(aid)
            return
        if said == "running":
            self._restart_if_asked(aid, a.get("RestartRequest") or {})
            if a.get("AllocModifyIndex", 0) > self.versions.get(aid, (0, ""))[0]:
                await self._update(a)
        if said is not None or a["ClientStatus"] in ("complete", "failed", "lost"):
            return
        group = await self._group(a)
        specs = [t for t in (group or {}).get("Tasks", [])]
        names = [t["Name"] for t in specs] or ["task"]
        config: dict[str, Any] = specs[0].get("Config") or {} if specs else {}
        judged = self._judged(a, group)
        self.versions[aid] = (a.get("AllocModifyIndex", 0), a.get("DeploymentID") or "")
        # A request already there was made before this run of the alloc: not for it.
        tasks = self.tasks[aid] = SimTasks(
            names,
            restart_handled=(a.get("RestartRequest") or {}).get("ID") or "",
            run_for=parse_duration(config["run_for"]) / SECOND if config.get("run_for") else 0.0,
            exit_code=int(config.get("exit_code", 0)),
        )
        now = time.time_ns()
        if config.get("start_error"):
            tasks.start(now, failed=True)
            self._report(aid, "failed")
            return
        tasks.start(now)
        self._report(aid, "running")
        self._register(a, group, names)
        self.stats.allocs_started += 1
        if judged:
            self._judge(aid, group)
        self._arm_finish(aid)

    async def _group(self, a: dict[str, Any]) -> dict[str, Any] | None:
        job = await self.job(a.get("Namespace", "default"), a["JobID"], a.get("JobVersion", 0))
        return next((g for g in (job or {}).get("TaskGroups", []) if g["Name"] == a["TaskGroup"]), None)

    def _judged(self, a: dict[str, Any], group: dict[str, Any] | None) -> bool:
        """Whether the alloc's deployment health is for this client to tell."""
        update = (group or {}).get("Update") or {}
        return (
            bool(a.get("DeploymentID"))
            and update.get("MaxParallel", 0) > 0
            and update.get("HealthCheck") != "manual"
            and (a.get("DeploymentStatus") or {}).get("Healthy") is None
        )

    def _judge(self, aid: str, group: dict[str, Any] | None) -> None:
        """Healthy after min_healthy_time, should its tasks still run then."""
        self.judging.add(aid)
        min_healthy = int(((group or {}).get("Update") or {}).get("MinHealthyTime", 0)) / SECOND
        self._later(min_healthy, lambda: self._healthy(aid))

    async def _update(self, a: dict[str, Any]) -> None:
        """A running alloc the servers changed (an in-place update, as the agent's runner takes
        it): its services registered as its job version now defines them, and its health told
        again for a deployment it joined."""
        aid = a["ID"]
        deployment = self.versions.get(aid, (0, ""))[1]
        self.versions[aid] = (a.get("AllocModifyIndex", 0), a.get("DeploymentID") or "")
        group = await self._group(a)
        if group is None:
            return
        before = set(self.registered.pop(aid, []))
        self._register(a, group, self.tasks[aid].names)
        for service_id in before - set(self.registered.get(aid, [])):
            if self.to_register.pop(service_id, None) is None:
                self.to_deregister.append(service_id)
        if (a.get("DeploymentID") or "") != deployment and self._judged(a, group):
            self._judge(aid, group)

    async def report(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.2)
            if not self.updates:
                continue
            queued, self.updates = list(self.updates.values()), {}
            for chunk in report_chunks(queued):
                try:
                    r = await self.http.put("/v1/drover/allocs/status", json={"Updates": chunk})
                    if r.status_code not in (200, 404):
                        r.raise_for_status()
                except httpx.HTTPError as e:
                    log.warning("alloc status report failed: %s", e)
                    for u in chunk:
                        self.updates.setdefault(u["ID"], u)
            await self._send_services()

    async def _send_services(self) -> None:
        """Register and deregister what is queued, in one request (again later if it fails)."""
        if not self.to_register and not self.to_deregister:
            return
        regs, self.to_register = self.to_register, {}
        gone, self.to_deregister = self.to_deregister, []
        body = {"Services": [r.to_api() for r in regs.values()], "Deregister": gone}
        try:
            r = await self.http.put("/v1/drover/services", json=body)
            if r.status_code not in (200, 404):  # 404: an alloc collected meanwhile
                r.raise_for_status()
        except httpx.HTTPError as e:
            log.warning("service registration failed: %s", e)
            self.to_register = {**regs, **self.to_register}
            self.to_deregister = [*gone, *self.to_deregister]


def report_chunks(updates: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """`updates` cut into reports of at most BATCH allocs and about REPORT_EVENTS task events."""
    chunks: list[list[dict[str, Any]]] = [[]]
    weight = 0
    for u in updates:
        w = 1 + sum(len(ts.get("Events") or ()) for ts in u["TaskStates"].values())
        if chunks[-1] and (weight + w > REPORT_EVENTS or len(chunks[-1]) >= BATCH):
            chunks.append([])
            weight = 0
        chunks[-1].append(u)
        weight += w
    return [c for c in chunks if c]


def cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


async def run(args: argparse.Namespace, stop: asyncio.Event) -> dict[str, Any]:
    drivers = [d for d in args.drivers.split(",") if d]
    nodes = [
        sim_node(i, args.prefix, args.datacenters, args.racks, drivers, args.cpu, args.memory)
        for i in range(args.nodes)
    ]
    secret_id = load_or_create_secret(Path(args.data_dir) / "secret-id")
    sim = Simulator(args.api, nodes, args.prefix, secret_id, args.restart_delay)
    t0 = time.monotonic()
    # Heartbeats start with the first registration: the first nodes must not wait for the last.
    loops = [asyncio.create_task(fn(stop)) for fn in (sim.beats.heartbeat, sim.follow_allocs, sim.report)]
    await sim.beats.register(nodes)
    log.info("registered %d nodes in %.1fs", len(nodes), time.monotonic() - t0)
    cpu0, t1 = cpu_seconds(), time.monotonic()
    beats, beats0 = sim.beats, sim.beats.heartbeats
    if args.duration > 0:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), args.duration)
        stop.set()
    else:
        await stop.wait()
    for t in loops:
        t.cancel()
    elapsed = time.monotonic() - t1
    out = {
        "nodes": len(nodes),
        "seconds": round(elapsed, 1),
        "heartbeats": beats.heartbeats,
        "heartbeats_per_s": round((beats.heartbeats - beats0) / elapsed, 1),
        "heartbeat_batches": beats.batches,
        "heartbeat_errors": beats.errors,
        "heartbeat_slowest_s": round(beats.slowest_s, 2),
        "allocs_started": sim.stats.allocs_started,
        "allocs_restarted": sim.stats.allocs_restarted,
        "cpu_fraction_of_one_core": round((cpu_seconds() - cpu0) / elapsed, 3),
        "last_beat": beats.last_beat,
    }
    await sim.http.aclose()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="drover sim", description="Host many simulated nodes in one process.")
    ap.add_argument("--api", default="http://127.0.0.1:4646")
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--datacenters", type=int, default=1)
    ap.add_argument("--racks", type=int, default=50)
    ap.add_argument(
        "--drivers", default="mock", help="comma-separated driver names to advertise (e.g. mock,docker)"
    )
    ap.add_argument("--cpu", type=int, default=4000, help="MHz per node")
    ap.add_argument("--memory", type=int, default=8192, help="MB per node")
    ap.add_argument("--prefix", default="sim-", help="node ID prefix")
    ap.add_argument(
        "--data-dir", default="data/sim", help="where the nodes' secret is kept (default data/sim)"
    )
    ap.add_argument("--duration", type=float, default=0, help="seconds to run (0: until Ctrl-C)")
    ap.add_argument(
        "--restart-delay",
        type=float,
        default=0.05,
        help="seconds from a restart request's signal to its tasks running again",
    )
    ap.add_argument("--stats", type=Path, help="write the run's figures here as JSON when it ends")
    args = ap.parse_args(argv)
    setup_logging("sim")
    logging.getLogger("httpx").setLevel(logging.WARNING)

    async def amain() -> dict[str, Any]:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        return await run(args, stop)

    out = run_loop(amain())
    last_beat = out.pop("last_beat")
    print(json.dumps(out))
    if args.stats is not None:
        args.stats.write_text(json.dumps({**out, "last_beat": last_beat}))


if __name__ == "__main__":
    main()
