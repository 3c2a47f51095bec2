"""An alloc's service checks, run by the agent (Nomad's checks hook and script check hook):
each http or tcp check of its nomad services every interval (the first after half of one),
within its timeout, and each script check in its task (through the task's driver) once the task
runs and every interval after; the latest result of each, served by
`GET /v1/client/allocation/:id/checks`; the alloc's runner told when a status changes (its
deployment health waits on them), and a task restarted when a check of its service keeps
failing (check_restart). An in-place update of the alloc's job changes its checks (`update`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import httpx

from drover.control.client.checks import (
    MODE_HEALTHINESS,
    OUTPUT_DEADLINE,
    OUTPUT_HTTP_OK,
    OUTPUT_LIMIT,
    OUTPUT_TCP_OK,
    STATUS_FAILURE,
    CheckQueryResult,
    CheckSpec,
    RestartWatch,
    Threshold,
    alloc_checks,
    http_status_ok,
    script_command,
    script_result,
)
from drover.model.alloc import TASK_STATE_RUNNING
from drover.model.durations import SECOND
from drover.model.services import CHECK_HTTP

if TYPE_CHECKING:
    from drover.client.runner import AllocRunner

log = logging.getLogger("drover.client.checks")
# A check without an interval or timeout (Nomad's validation refuses those) runs at these.
_DEFAULT_INTERVAL = 10 * SECOND
_DEFAULT_TIMEOUT = 2 * SECOND
# How often a script check looks whether its task runs (again) before its next run.
_TASK_POLL = 0.2


class AllocChecks:
    def __init__(self, runner: AllocRunner, on_change: Callable[[], None]) -> None:
        self.runner = runner
        self.on_change = on_change
        self.specs: dict[str, CheckSpec] = {}
        self.results: dict[str, CheckQueryResult] = {}
        self.thresholds: dict[str, Threshold] = {}
        self.watches: dict[str, RestartWatch] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._started = False
        self._http: httpx.AsyncClient | None = None
        for spec in alloc_checks(runner.alloc, runner.tg):
            self._add(spec)

    def _add(self, spec: CheckSpec) -> None:
        """Track a check from its first result on (pending until it runs)."""
        check = spec.check
        self.specs[spec.id] = spec
        self.results[spec.id] = spec.stub(self.runner.alloc, int(time.time()))
        self.thresholds[spec.id] = Threshold(check.success_before_passing, check.failures_before_critical)
        restart = check.check_restart
        if restart is not None and restart.limit > 0:
            self.watches[spec.id] = RestartWatch(restart.limit, restart.grace, restart.ignore_warnings)
        if self._started:
            self._tasks[spec.id] = asyncio.create_task(self._observe(spec.id))

    def _drop(self, check_id: str) -> None:
        self.specs.pop(check_id, None)
        self.results.pop(check_id, None)
        self.thresholds.pop(check_id, None)
        self.watches.pop(check_id, None)
        task = self._tasks.pop(check_id, None)
        if task is not None:
            task.cancel()

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._tasks = {i: asyncio.create_task(self._observe(i)) for i in self.specs}

    def update(self) -> None:
        """The checks of the runner's alloc and group as they are now (an in-place update, as
        Nomad's hooks update theirs): a check gone or redefined (a new check ID) stops, a new one
        starts pending, one unchanged goes on with its results (its service as now defined)."""
        specs = {s.id: s for s in alloc_checks(self.runner.alloc, self.runner.tg)}
        changed = False
        for check_id, old in list(self.specs.items()):
            new = specs.get(check_id)
            if new is None or (new.check, new.task) != (old.check, old.task):
                self._drop(check_id)
                changed = True
        for check_id, spec in specs.items():
            if check_id in self.specs:
                self.specs[check_id] = spec
            else:
                self._add(spec)
                changed = True
        if changed:
            log.info("alloc %s: checks updated (%d)", self.runner.alloc.id, len(specs))
            self.on_change()

    async def stop(self) -> None:
        tasks, self._tasks = list(self._tasks.values()), {}
        self._started = False
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def passing(self) -> bool | None:
        """Whether every check that tells health passes (None: the alloc has none)."""
        judged = [s for s in self.specs.values() if s.mode == MODE_HEALTHINESS]
        if not judged:
            return None
        return all(s.passing(self.results[s.id].status) for s in judged)

    def listing(self) -> dict[str, object]:
        """The latest results by check ID, as Nomad's client answers them."""
        return {i: r.to_api() for i, r in self.results.items()}

    async def _observe(self, check_id: str) -> None:
        spec = self.specs[check_id]
        interval = (spec.check.interval or _DEFAULT_INTERVAL) / SECOND
        # A script check runs as soon as its task does (Nomad's tasklet), the others half an
        # interval in.
        await asyncio.sleep(0 if spec.script else interval / 2)
        while True:
            spec = self.specs[check_id]
            if spec.script and not self._task_running(spec.check_task):
                await asyncio.sleep(_TASK_POLL)
                continue
            try:
                await self._run(spec)
            except Exception:
                log.exception("alloc %s: check %s", self.runner.alloc.id, spec.check.name)
            await asyncio.sleep(interval)

    def _task_running(self, name: str) -> bool:
        tr = self.runner.tasks.get(name)
        return tr is not None and tr.running()

    async def _run(self, spec: CheckSpec) -> None:
        if spec.script:
            status, output = await self._script(spec)
            code = 0
        else:
            ok, code, output = await self._query(spec)
            status = self.thresholds[spec.id].observe(ok)
        if spec.id not in self.specs:  # dropped by an update meanwhile
            return
        before = self.results[spec.id].status
        self.results[spec.id] = self.results[spec.id].model_copy(
            update={"status": status, "status_code": code, "output": output, "timestamp": int(time.time())}
        )
        if status != before:
            log.info("alloc %s: check %r is %s", self.runner.alloc.id, spec.check.name, status)
            self.on_change()
        await self._restart_if_unhealthy(spec, status)

    async def _script(self, spec: CheckSpec) -> tuple[str, str]:
        """Run a script check once in its task: its status and output."""
        tr = self.runner.tasks[spec.check_task]
        timeout = (spec.check.timeout or _DEFAULT_TIMEOUT) / SECOND
        result = await tr.exec(script_command(spec.check, tr.replace_env), timeout)
        if result.timed_out:
            log.warning("alloc %s: script check %r timed out", self.runner.alloc.id, spec.check.name)
        return script_result(
            result.exit_code, result.output, OUTPUT_DEADLINE if result.timed_out else result.error
        )

    async def _query(self, spec: CheckSpec) -> tuple[bool, int, str]:
        """Run an http or tcp check once: whether it passed, the HTTP status (0 for tcp), its
        output."""
        timeout = (spec.check.timeout or _DEFAULT_TIMEOUT) / SECOND
        try:
            host, port = spec.target(self.runner.alloc.allocated_resources)
        except ValueError as e:
            return False, 0, str(e)
        if spec.check.type != CHECK_HTTP:
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
            except (OSError, TimeoutError) as e:
                return False, 0, f"dial tcp {host}:{port}: {e or type(e).__name__}"
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return True, 0, OUTPUT_TCP_OK
        if self._http is None:
            self._http = httpx.AsyncClient(follow_redirects=True)
        headers = [(k, v) for k, values in spec.check.header.items() for v in values]
        try:
            r = await self._http.request(
                spec.check.method or "GET", spec.url(host, port), headers=headers,
                content=spec.check.body or None, timeout=timeout,
            )  # fmt: skip
        except httpx.HTTPError as e:
            return False, 0, f"nomad: {e or type(e).__name__}"
        if r.status_code == 200:
            return True, 200, OUTPUT_HTTP_OK
        return http_status_ok(r.status_code), r.status_code, r.text[:OUTPUT_LIMIT]

    async def _restart_if_unhealthy(self, spec: CheckSpec, status: str) -> None:
        watch = self.watches.get(spec.id)
        name = spec.check_task
        tr = self.runner.tasks.get(name) if name else None
        if watch is None or tr is None or self.runner.stopped or tr.state.state != TASK_STATE_RUNNING:
            return
        started = max(tr.state.started_at, tr.state.last_restart)
        if watch.observe(status, time.time_ns(), started):
            log.info(
                "alloc %s: restarting task %s: check %r unhealthy",
                self.runner.alloc.id,
                name,
                spec.check.name,
            )
            await tr.restart_unhealthy(f'healthcheck: check "{spec.check.name}" unhealthy')
            self.thresholds[spec.id] = Threshold(
                spec.check.success_before_passing, spec.check.failures_before_critical, status=STATUS_FAILURE
            )
