"""The node agent: fingerprint, register, heartbeat at the TTL the servers hand out, watch this
node's allocs (blocking queries), run them, report their status in batches, collect the
directories of terminal allocs (drover.client.allocgc) and the docker driver's unused images,
and after its own restart pick up what it was running (raw_exec tasks live on under their
executors, docker tasks in their containers). Cut off from the servers, it stops
the allocs whose group sets disconnect.stop_on_client_after once that long has passed without a
heartbeat getting through (drover.control.client.heartbeatstop)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import socket
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from drover.client.allocgc import to_collect
from drover.client.config import AgentConfig
from drover.client.dockerdriver import DockerDriver
from drover.client.dockerdriver import fingerprint as docker_fingerprint
from drover.client.drivers import RawExecDriver, TaskHandle
from drover.client.fingerprint import fingerprint
from drover.client.identity import NodeSecretAuth, intro_token, load_or_create_secret
from drover.client.logserve import LogsApp, bind, serve
from drover.client.registrar import Registrar
from drover.client.runner import AllocRunner, ClientContext
from drover.client.statefile import write_atomically
from drover.client.usage import UsageSampler
from drover.control.client.heartbeatstop import HeartbeatStop, stop_after
from drover.model.alloc import Allocation
from drover.model.durations import SECOND
from drover.model.job import Job
from drover.model.node import Node
from drover.runtime.tls import client_tls_options

log = logging.getLogger("drover.client")
REPORT_EVERY = 0.2
FINGERPRINT_EVERY = 30.0


class Agent:
    def __init__(self, cfg: AgentConfig) -> None:
        self.cfg = cfg
        self.data_dir = Path(cfg.data_dir).resolve()
        self.state_dir = self.data_dir / "client"
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.node_id = self._node_id()
        # The node's secret (Nomad's Node.SecretID): registered with, and sent on every request
        # to the servers' client endpoints; kept, so the node stays this agent's after a restart.
        self.secret_id = load_or_create_secret(self.state_dir / "secret-id")
        self.http = httpx.AsyncClient(
            base_url=cfg.api,
            timeout=httpx.Timeout(60.0, connect=5.0),
            auth=NodeSecretAuth(self.secret_id, intro_token(os.environ)),
            **client_tls_options(cfg.api, os.environ),  # an https API: NOMAD_CACERT and the rest
        )
        self.runners: dict[str, AllocRunner] = {}
        self.jobs: dict[tuple[str, str, int], Job] = {}
        self.dirty: set[str] = set()
        self.ttl = 10 * SECOND
        self._saved: dict[str, Any] = self._load_state()
        self._stopping: set[asyncio.Task[None]] = set()
        # The servers' last listing of this node's allocs: whether each one's client status is
        # terminal there (None until the first); and since when each alloc here has ended.
        self.listed: dict[str, bool] | None = None
        self.terminal_since: dict[str, float] = {}
        self._collecting = asyncio.Lock()
        # Where the API reaches this agent for logs (registered as the node's HTTPAddr).
        self.http_addr = ""
        # The node as last fingerprinted: its attributes, networks and host volumes reach tasks.
        self.node = Node(id=self.node_id)
        # When a heartbeat last got through (stop_on_client_after counts from it).
        self.heartbeat_stop = HeartbeatStop(time.monotonic_ns())
        self.docker = DockerDriver(cfg.docker, self.node_id) if "docker" in cfg.drivers else None
        self.usage: UsageSampler | None = None  # made once the node is fingerprinted
        # The nomad services of the allocs running here, registered with the servers.
        self.registrar = Registrar(self.http, self.node_id, cfg.datacenter, self.runners.values)

    # --- identity and local state ---
    def _node_id(self) -> str:
        path = self.state_dir / "node-id"
        with contextlib.suppress(FileNotFoundError):
            if node_id := path.read_text().strip():
                return node_id
        # Written whole: an agent stopped halfway must not come back as a node with no ID.
        node_id = str(uuid.uuid4())
        write_atomically(path, node_id)
        return node_id

    def _load_state(self) -> dict[str, Any]:
        path = self.state_dir / "state.json"
        try:
            loaded: dict[str, Any] = json.loads(path.read_text())
            return loaded
        except (OSError, ValueError):
            return {}

    def persist(self) -> None:
        """What runs here, written atomically: alloc ids, each raw_exec task's executor, and the
        last restart request acted on."""
        state = {
            aid: {
                "Tasks": r.handles(),
                "RestartHandled": r.restart_handled,
                "RestartPending": r.pending_restarts(),
            }
            for aid, r in self.runners.items()
            if not r.stopped
        }
        write_atomically(self.state_dir / "state.json", json.dumps(state))

    def changed(self, runner: AllocRunner) -> None:
        self.dirty.add(runner.alloc.id)

    # --- talking to the servers ---
    async def register(self, stop: asyncio.Event) -> None:
        node = fingerprint(self.node_id, self.cfg).model_copy(update={"http_addr": self.http_addr})
        self.node = node
        body = {"Node": {**node.to_api(), "SecretID": self.secret_id}}
        while not stop.is_set():
            try:
                r = await self.http.put("/v1/drover/node/register", json=body)
                if r.status_code == 200:
                    self.ttl = int(r.json()["HeartbeatTTL"])
                    self.heartbeat_stop.ok(time.monotonic_ns())
                    log.info(
                        "registered node %s (%s), heartbeat TTL %.1fs", node.id, node.name, self.ttl / SECOND
                    )
                    return
                if r.status_code == 403:
                    raise RuntimeError(
                        f"register refused: {r.text.strip()}: node {node.id} is registered with another "
                        f"secret than {self.state_dir / 'secret-id'} holds (purge the node to register it anew)"
                    )
                raise RuntimeError(f"register refused: {r.status_code} {r.text}")
            except httpx.HTTPError as e:
                log.warning("cannot reach the servers to register: %s", e)
            await asyncio.sleep(1.0)

    async def heartbeat(self, stop: asyncio.Event) -> None:
        failing = False
        while not stop.is_set():
            # Beat at half the TTL: one lost beat must not cost the node its allocs.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.ttl / SECOND / 2)
            if stop.is_set():
                return
            try:
                r = await self.http.put(f"/v1/drover/node/{self.node_id}/heartbeat")
                # Unknown (purged, collected), or known without this secret (registered before
                # nodes had secrets): register again, which says why if it is refused.
                if r.status_code in (403, 404):
                    await self.register(stop)
                    continue
                r.raise_for_status()
                self.ttl = int(r.json()["HeartbeatTTL"])
                self.heartbeat_stop.ok(time.monotonic_ns())
                if failing or r.json().get("EvalIDs"):
                    # Back after a gap: the servers may have marked our allocs unknown or lost.
                    self.dirty.update(self.runners)
                failing = False
            except httpx.HTTPError as e:
                failing = True
                log.warning("heartbeat failed: %s", e)

    async def refingerprint(self, stop: asyncio.Event) -> None:
        """Ask the docker engine again every FINGERPRINT_EVERY, as Nomad's driver fingerprint
        does, and register the node again when its health changed (an engine started after
        the agent, or gone)."""
        while self.docker is not None and not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), FINGERPRINT_EVERY)
            if stop.is_set():
                return
            info, _ = await asyncio.to_thread(docker_fingerprint, self.cfg.docker)
            known = self.node.drivers.get("docker")
            if known is None or (known.detected, known.healthy) != (info.detected, info.healthy):
                log.info("docker driver: %s", info.health_description)
                await self.register(stop)

    async def stop_when_cut_off(self, stop: asyncio.Event) -> None:
        """Stop each alloc whose group sets stop_on_client_after once no heartbeat has got
        through for that long (Nomad's heartbeat stop): by then the servers take it for lost
        and will place its replacement. Stopped, it is not started again here."""
        while not stop.is_set():
            now = time.monotonic_ns()
            timeouts = {aid: stop_after(r.tg) for aid, r in self.runners.items() if not r.stopped}
            for aid in self.heartbeat_stop.due(timeouts, now):
                log.warning(
                    "alloc %s: no heartbeat through for %.1fs (disconnect.stop_on_client_after %.1fs): stopping it",
                    aid,
                    (now - self.heartbeat_stop.last_ok) / SECOND,
                    timeouts[aid] / SECOND,
                )
                # As Nomad's heartbeat stop destroys the alloc runner: every task, no delays.
                self._stop_in_background(self.runners[aid], destroy=True)
            nxt = self.heartbeat_stop.next_due(timeouts, now)
            wait = 1.0 if nxt is None else min(1.0, max(0.05, (nxt - now) / SECOND + 0.01))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)

    def _stop_in_background(
        self, runner: AllocRunner, *, no_shutdown_delay: bool = False, destroy: bool = False
    ) -> None:
        task = asyncio.create_task(self._stop(runner, no_shutdown_delay, destroy))
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    async def job(self, alloc: Allocation) -> Job | None:
        key = (alloc.namespace, alloc.job_id, alloc.job_version)
        if key not in self.jobs:
            r = await self.http.get(
                f"/v1/job/{quote(alloc.job_id, safe='')}/versions", params={"namespace": alloc.namespace}
            )
            if r.status_code != 200:
                return None
            for doc in r.json().get("Versions", []):
                j = Job.model_validate(doc)
                self.jobs[(j.namespace, j.id, j.version)] = j
        return self.jobs.get(key)

    async def watch(self, stop: asyncio.Event) -> None:
        index = 0
        while not stop.is_set():
            try:
                r = await self.http.get(
                    f"/v1/node/{self.node_id}/allocations", params={"index": index, "wait": "30s"}
                )
                r.raise_for_status()
                index = int(r.headers.get("X-Nomad-Index", index))
                listed = [Allocation.model_validate(doc) for doc in r.json()]
                for alloc in listed:
                    await self.sync(alloc)
                self.listed = {a.id: a.client_terminal() for a in listed}
                await self.collect()
            except httpx.HTTPError as e:
                log.warning("watching allocs failed: %s", e)
                await asyncio.sleep(1.0)

    async def sync(self, alloc: Allocation) -> None:
        """Bring one alloc here in line with what the servers want."""
        runner = self.runners.get(alloc.id)
        if alloc.server_terminal():
            if runner is not None and not runner.stopped:
                log.info("stopping alloc %s (%s)", alloc.id, alloc.desired_description)
                self._stop_in_background(
                    runner, no_shutdown_delay=bool(alloc.desired_transition.no_shutdown_delay)
                )
            return
        if runner is not None:
            await self._update(runner, alloc)
            self._restart_if_asked(runner, alloc)
            return
        if alloc.client_terminal():
            return
        job = await self.job(alloc)
        if job is None:
            log.warning("alloc %s: job %s version %d not found", alloc.id, alloc.job_id, alloc.job_version)
            return
        saved = self._saved.pop(alloc.id, {})
        reattach = await self._reattach(alloc, job, saved.get("Tasks", {}))
        runner = AllocRunner(
            alloc, job, self.client_context(), self.changed, self.persist, reattach, restore=bool(saved)
        )
        # A request made before this agent ran the alloc is not for it (the servers refuse
        # restarts of tasks not running); after our own restart, what we saved says.
        req = alloc.restart_request
        runner.restart_handled = saved.get("RestartHandled", "") if saved else (req.id if req else "")
        runner.resume_restarts(saved.get("RestartPending", {}))
        self.runners[alloc.id] = runner
        log.info("running alloc %s (%s)%s", alloc.id, alloc.name, " (re-attached)" if reattach else "")
        runner.start()
        self.dirty.add(alloc.id)
        self._restart_if_asked(runner, alloc)

    async def _update(self, runner: AllocRunner, alloc: Allocation) -> None:
        """Hand the runner the alloc the servers changed (a new AllocModifyIndex: an in-place
        update to a new job version, a new deployment), with that version of its job."""
        if runner.stopped or alloc.alloc_modify_index <= runner.alloc.alloc_modify_index:
            return
        job = await self.job(alloc)
        if job is None:
            log.warning("alloc %s: job %s version %d not found", alloc.id, alloc.job_id, alloc.job_version)
            return
        if alloc.job_version != runner.alloc.job_version:
            log.info("alloc %s: updated in place to job version %d", alloc.id, alloc.job_version)
        runner.update(alloc, job)
        self.dirty.add(alloc.id)

    async def _reattach(self, alloc: Allocation, job: Job, saved: dict[str, Any]) -> dict[str, TaskHandle]:
        """Handles of the alloc's tasks still running from before this agent's restart: raw_exec
        executors by pid, docker containers by ID (a gone container is started again)."""
        out: dict[str, TaskHandle] = {}
        tg = job.lookup_task_group(alloc.task_group)
        tasks = {t.name: t for t in tg.tasks} if tg is not None else {}
        alloc_dir = self.data_dir / "allocs" / alloc.id
        for name, state in saved.items():
            if "pid" in state:
                out[name] = RawExecDriver.reattach(state)
            elif state.get("driver") == "docker" and self.docker is not None and name in tasks:
                handle = await self.docker.reattach(
                    state, tasks[name], alloc_dir / name, alloc_dir / "alloc" / "logs"
                )
                if handle is not None:
                    out[name] = handle
        return out

    def _restart_if_asked(self, runner: AllocRunner, alloc: Allocation) -> None:
        req = alloc.restart_request
        if req is None or not req.id or req.id == runner.restart_handled or runner.stopped:
            return
        runner.accept_restart(req.id, req.task_name, req.all_tasks, req.task_names)
        self.persist()
        task = asyncio.create_task(runner.restart(req.id, req.task_name, req.all_tasks, req.task_names))
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    def client_context(self) -> ClientContext:
        return ClientContext(
            data_dir=self.data_dir,
            drivers=self.cfg.drivers,
            node=self.node,
            region=self.cfg.region,
            max_kill_timeout=self.cfg.max_kill_timeout,
            docker=self.docker,
            api=self.http,
        )

    async def _stop(
        self, runner: AllocRunner, no_shutdown_delay: bool = False, destroy: bool = False
    ) -> None:
        await runner.stop(no_shutdown_delay=no_shutdown_delay, destroy=destroy)
        self.dirty.add(runner.alloc.id)
        self.persist()

    def alloc_checks(self, alloc_id: str) -> dict[str, object] | None:
        """The latest results of the alloc's service checks (None: not running here)."""
        runner = self.runners.get(alloc_id)
        return runner.checks.listing() if runner is not None else None

    # --- logs ---
    def alloc_for_logs(self, alloc_id: str) -> tuple[Path, dict[str, bool]] | None:
        """An alloc's directory here and its tasks, each with whether it has started (none
        known for an alloc only on disk, e.g. finished before this agent's restart)."""
        runner = self.runners.get(alloc_id)
        if runner is not None:
            return runner.dir, {name: bool(tr.state.started_at) for name, tr in runner.tasks.items()}
        alloc_dir = self.data_dir / "allocs" / alloc_id
        return (alloc_dir, {}) if _ALLOC_ID.fullmatch(alloc_id) and alloc_dir.is_dir() else None

    async def alloc_stats(self, alloc_id: str) -> dict[str, Any] | None:
        """The alloc's resource usage (Nomad's AllocResourceUsage); None unless it runs here."""
        runner = self.runners.get(alloc_id)
        if runner is None or runner.stopped:
            return None
        if self.usage is None:
            cpu = self.node.node_resources.cpu
            self.usage = UsageSampler(cpu.cpu_shares, cpu.total_cpu_cores)
        handles = {name: tr.handle for name, tr in runner.tasks.items() if tr.handle is not None}
        return await self.usage.alloc(alloc_id, handles)

    # --- garbage collection of alloc directories ---
    def _alloc_dirs(self) -> set[str]:
        root = self.data_dir / "allocs"
        return {p.name for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()

    async def collect(self) -> None:
        """Remove the directories of allocs the servers forgot, and of terminal ones past
        gc_max_allocs (drover.client.allocgc)."""
        async with self._collecting:
            now = time.monotonic()
            on_disk = self._alloc_dirs()
            for alloc_id in on_disk | set(self.runners):
                runner = self.runners.get(alloc_id)
                if runner is None or runner.finished():
                    self.terminal_since.setdefault(alloc_id, now)
                else:
                    self.terminal_since.pop(alloc_id, None)  # running (again)
            kept = on_disk | set(self.runners)
            for alloc_id in to_collect(kept, self.listed, self.terminal_since, self.cfg.gc_max_allocs):
                await self._destroy(
                    alloc_id, forgotten=self.listed is not None and alloc_id not in self.listed
                )
            if self.docker is not None:
                await self.docker.collect(self._containers())

    def _containers(self) -> set[str]:
        """The containers this agent's tasks own: running, or saved before its restart and not
        yet picked up."""
        owned = {
            h["container_id"]
            for r in self.runners.values()
            for h in r.handles().values()
            if "container_id" in h
        }
        for saved in self._saved.values():
            owned |= {h["container_id"] for h in saved.get("Tasks", {}).values() if "container_id" in h}
        return owned

    async def _destroy(self, alloc_id: str, forgotten: bool) -> None:
        runner = self.runners.pop(alloc_id, None)
        if runner is not None and not runner.finished():
            await runner.stop(destroy=True)
        self.terminal_since.pop(alloc_id, None)
        self.dirty.discard(alloc_id)
        self._saved.pop(alloc_id, None)
        await asyncio.to_thread(shutil.rmtree, self.data_dir / "allocs" / alloc_id, True)
        self.persist()
        why = "the servers collected it" if forgotten else f"more than {self.cfg.gc_max_allocs} allocs kept"
        log.info("collected alloc %s (%s)", alloc_id, why)

    async def alloc_gc(self, stop: asyncio.Event) -> None:
        """Collect every gc_interval (and after each listing: `watch`)."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.cfg.gc_interval / SECOND)
            if not stop.is_set():
                await self.collect()

    async def report(self, stop: asyncio.Event) -> None:
        last_full = time.monotonic()
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), REPORT_EVERY)
            if time.monotonic() - last_full > 30:
                self.dirty.update(self.runners)  # now and then say everything again
                last_full = time.monotonic()
            if not self.dirty:
                continue
            ids, self.dirty = self.dirty, set()
            updates = []
            for aid in ids:
                runner = self.runners.get(aid)
                if runner is None:
                    continue
                status = runner.client_status()
                update = {
                    "ID": aid,
                    "ClientStatus": status,
                    "ClientDescription": _describe(status),
                    "TaskStates": {n: tr.state.to_api() for n, tr in runner.tasks.items()},
                    "At": time.time_ns(),
                }
                if runner.health is not None:
                    update["DeploymentStatus"] = runner.health.to_api()
                updates.append(update)
            try:
                r = await self.http.put(
                    "/v1/drover/allocs/status", json={"NodeID": self.node_id, "Updates": updates}
                )
                if r.status_code == 404:
                    # Allocs the servers no longer know (collected): stop what still runs of
                    # them and forget them.
                    for aid in ids:
                        if aid in r.text:
                            gone = self.runners.pop(aid, None)
                            if gone is not None and not gone.stopped:
                                log.info("alloc %s is unknown to the servers: stopping it", aid)
                                task = asyncio.create_task(gone.stop(destroy=True))
                                self._stopping.add(task)
                                task.add_done_callback(self._stopping.discard)
                    self.dirty |= {a for a in ids if a in self.runners}
                    self.persist()
                else:
                    r.raise_for_status()
            except httpx.HTTPError as e:
                log.warning("status report failed: %s; will retry", e)
                self.dirty |= ids

    async def run(self, stop: asyncio.Event) -> None:
        try:
            listener = bind(self.cfg.http_addr)
            self.http_addr = _advertised(self.cfg.http_addr, listener.getsockname()[1])
        except OSError as e:
            log.error("cannot listen on %s to serve alloc logs: %s", self.cfg.http_addr, e)
            raise SystemExit(1) from None
        app = LogsApp(self.alloc_for_logs, self.alloc_checks, self.alloc_stats)
        logs = asyncio.create_task(serve(app, listener, stop))
        log.info("serving alloc logs on %s", self.http_addr)
        await self.register(stop)
        loops = [
            asyncio.create_task(fn(stop))
            for fn in (
                self.heartbeat,
                self.watch,
                self.report,
                self.alloc_gc,
                self.stop_when_cut_off,
                self.refingerprint,
                self.registrar.run,
            )
        ]
        await stop.wait()
        for t in loops:
            t.cancel()
        self.persist()
        await self.http.aclose()
        await logs


_ALLOC_ID = re.compile(r"[0-9A-Za-z-]+")


def _advertised(bind_addr: str, port: int) -> str:
    """HOST:PORT the servers reach the listener at: the bound host, or this machine's
    address when bound to every interface."""
    host = bind_addr.rpartition(":")[0].strip("[]")
    if host in ("", "0.0.0.0", "::"):
        host = socket.gethostbyname(socket.gethostname())
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _describe(status: str) -> str:
    return {
        "pending": "No tasks have started",
        "running": "Tasks are running",
        "complete": "All tasks have completed",
        "failed": "Failed tasks",
    }.get(status, "")
