"""An alloc's service checks, run by the agent (Nomad's checks hook): each http or tcp check
of its nomad services every interval (the first after half of one), within its timeout; the
latest result of each, served by `GET /v1/client/allocation/:id/checks`; the alloc's runner
told when a status changes (its deployment health waits on them), and a task restarted when a
check of its service keeps failing (check_restart)."""

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
    OUTPUT_HTTP_OK,
    OUTPUT_LIMIT,
    OUTPUT_TCP_OK,
    STATUS_FAILURE,
    STATUS_SUCCESS,
    CheckSpec,
    RestartWatch,
    Threshold,
    alloc_checks,
    http_status_ok,
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


class AllocChecks:
    def __init__(self, runner: AllocRunner, on_change: Callable[[], None]) -> None:
        self.runner = runner
        self.on_change = on_change
        self.specs = alloc_checks(runner.alloc, runner.tg)
        now = int(time.time())
        self.results = {s.id: s.stub(runner.alloc, now) for s in self.specs}
        self.thresholds = {
            s.id: Threshold(s.check.success_before_passing, s.check.failures_before_critical)
            for s in self.specs
        }
        self.watches = {
            s.id: RestartWatch(s.check.check_restart.limit, s.check.check_restart.grace)
            for s in self.specs
            if s.check.check_restart is not None and s.check.check_restart.limit > 0
        }
        self._tasks: list[asyncio.Task[None]] = []
        self._http: httpx.AsyncClient | None = None

    def start(self) -> None:
        if self.specs and not self._tasks:
            self._http = httpx.AsyncClient(follow_redirects=True)
            self._tasks = [asyncio.create_task(self._observe(s)) for s in self.specs]

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks = []
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def passing(self) -> bool | None:
        """Whether every check that tells health passes (None: the alloc has none)."""
        judged = [r for r in self.results.values() if r.mode == MODE_HEALTHINESS]
        if not judged:
            return None
        return all(r.status == STATUS_SUCCESS for r in judged)

    def listing(self) -> dict[str, object]:
        """The latest results by check ID, as Nomad's client answers them."""
        return {i: r.to_api() for i, r in self.results.items()}

    async def _observe(self, spec: CheckSpec) -> None:
        interval = (spec.check.interval or _DEFAULT_INTERVAL) / SECOND
        await asyncio.sleep(interval / 2)
        while True:
            try:
                await self._run(spec)
            except Exception:
                log.exception("alloc %s: check %s", self.runner.alloc.id, spec.check.name)
            await asyncio.sleep(interval)

    async def _run(self, spec: CheckSpec) -> None:
        ok, code, output = await self._query(spec)
        status = self.thresholds[spec.id].observe(ok)
        before = self.results[spec.id].status
        self.results[spec.id] = self.results[spec.id].model_copy(
            update={"status": status, "status_code": code, "output": output, "timestamp": int(time.time())}
        )
        if status != before:
            log.info("alloc %s: check %r is %s", self.runner.alloc.id, spec.check.name, status)
            self.on_change()
        await self._restart_if_unhealthy(spec, status)

    async def _query(self, spec: CheckSpec) -> tuple[bool, int, str]:
        """Run the check once: whether it passed, the HTTP status (0 for tcp), its output."""
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
        assert self._http is not None
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
        name = spec.task or spec.check.task_name
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
