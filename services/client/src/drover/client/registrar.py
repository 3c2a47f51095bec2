"""The agent's service registrations: what its allocs' nomad services should be registered as
(drover.control.client.services), sent to the servers whenever that changes - registered
once their tasks run, removed when they stop - and all of it again now and then, so that a
registration the servers lost (a report that failed, a node that was down) comes back."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable

import httpx

from drover.client.runner import AllocRunner
from drover.control.client.services import alloc_registrations, registration_diff
from drover.model.alloc import ALLOC_CLIENT_RUNNING, TASK_STATE_RUNNING
from drover.model.serviceregistration import ServiceRegistration

log = logging.getLogger("drover.client.services")
SYNC_EVERY = 0.2
RESEND_EVERY = 30.0


class Registrar:
    def __init__(
        self,
        http: httpx.AsyncClient,
        node_id: str,
        datacenter: str,
        runners: Callable[[], Iterable[AllocRunner]],
    ) -> None:
        self.http = http
        self.node_id = node_id
        self.datacenter = datacenter
        self._runners = runners
        # What the servers were last told, by registration ID.
        self.sent: dict[str, ServiceRegistration] = {}
        self._problems: set[tuple[str, str]] = set()
        # Allocs the servers answered unknown (collected): nothing of theirs is sent again.
        self._unknown: set[str] = set()

    def wanted(self) -> dict[str, ServiceRegistration]:
        """Every registration the running allocs here should have."""
        out: dict[str, ServiceRegistration] = {}
        for runner in self._runners():
            alloc, tg = runner.alloc, runner.tg
            if runner.stopped or alloc.id in self._unknown:
                continue
            running = {n for n, tr in runner.tasks.items() if tr.state.state == TASK_STATE_RUNNING}
            work = alloc_registrations(
                alloc,
                tg,
                self.node_id,
                self.datacenter,
                alloc_running=runner.client_status() == ALLOC_CLIENT_RUNNING,
                running_tasks=running,
            )
            for problem in work.problems:
                if (alloc.id, problem) not in self._problems:
                    self._problems.add((alloc.id, problem))
                    log.warning("alloc %s: cannot register %s", alloc.id, problem)
            out.update((r.id, r) for r in work.registrations)
        return out

    async def sync(self, resend: bool = False) -> None:
        want = self.wanted()
        upsert, remove = registration_diff(want, {} if resend else self.sent)
        if resend:
            remove = [i for i in self.sent if i not in want]
        if not upsert and not remove:
            return
        body = {
            "NodeID": self.node_id,
            "Services": [r.to_api() for r in upsert],
            "Deregister": remove,
        }
        r = await self.http.put("/v1/drover/services", json=body)
        if r.status_code == 404:
            # An alloc the servers no longer know (nothing was written): its registrations
            # are left out from now on, the rest sent at the next sync.
            log.info("service registration refused: %s", r.text)
            self._unknown |= {reg.alloc_id for reg in upsert if reg.alloc_id in r.text}
            return
        r.raise_for_status()
        self.sent = want

    async def run(self, stop: asyncio.Event) -> None:
        last_full = time.monotonic()
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), SYNC_EVERY)
            resend = time.monotonic() - last_full > RESEND_EVERY
            try:
                await self.sync(resend=resend)
                if resend:
                    last_full = time.monotonic()
            except httpx.HTTPError as e:
                log.warning("service registration failed: %s; will retry", e)
