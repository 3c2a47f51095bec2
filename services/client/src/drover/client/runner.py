"""The alloc runner: run an alloc's tasks (drover.client.taskrunner) in their lifecycle order
(drover.control.client.lifecycle: prestart, main, poststart, poststop), kill the live ones when
a task fails for good, the leader ends or only sidecars are left (leader first, sidecars last,
after the group's shutdown_delay), stop them when the servers say so, judge deployment health,
and keep the alloc's client status for the agent to report."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from drover.client.checkrunner import AllocChecks
from drover.client.drivers import Driver, TaskHandle
from drover.client.health import HealthTracker
from drover.client.statefile import write_atomically
from drover.client.taskrunner import TaskRunner
from drover.control.client.lifecycle import (
    OPEN,
    POSTSTOP,
    Coordinator,
    Kill,
    ephemeral_hooks,
    kill_decision,
    kill_waves,
)
from drover.control.client.taskenv import TaskDirs
from drover.model.alloc import (
    ALLOC_CLIENT_COMPLETE,
    ALLOC_CLIENT_FAILED,
    ALLOC_CLIENT_PENDING,
    ALLOC_CLIENT_RUNNING,
    TASK_STATE_DEAD,
    TASK_STATE_PENDING,
    TASK_STATE_RUNNING,
    Allocation,
    AllocDeploymentStatus,
)
from drover.model.defaults import HEALTH_CHECK_CHECKS, HEALTH_CHECK_MANUAL
from drover.model.durations import SECOND
from drover.model.job import Job, Task, TaskGroup
from drover.model.node import Node
from drover.model.validation.dispatch import decode_payload, dispatch_payload_path

log = logging.getLogger("drover.client")
# Every lifecycle stage, each with the gate its waiting tasks start through.
STAGES = sorted({stage for stages in OPEN.values() for stage in stages})


@dataclass
class ClientContext:
    """What an alloc runner knows of its agent: where allocs live, the drivers enabled, the
    node as fingerprinted (attributes, host volumes), the region and the kill timeout cap."""

    data_dir: Path
    drivers: set[str]
    node: Node = field(default_factory=Node)
    region: str = "global"
    max_kill_timeout: int = 30 * SECOND
    docker: Driver | None = None  # the agent's docker driver, when enabled
    api: httpx.AsyncClient | None = None  # the servers' API (templates read services and variables)


class AllocRunner:
    def __init__(
        self,
        alloc: Allocation,
        job: Job,
        client: ClientContext,
        on_change: Callable[[AllocRunner], None],
        persist: Callable[[], None],
        reattach: dict[str, TaskHandle] | None = None,
        restore: bool = False,
    ) -> None:
        """`reattach`: handles of tasks still running from before the agent's restart;
        `restore`: the alloc ran here before that restart (its tasks that ended stay ended)."""
        self.alloc = alloc
        self.job = job
        tg = job.lookup_task_group(alloc.task_group)
        self.tg: TaskGroup = tg if tg is not None else TaskGroup(name=alloc.task_group)
        self.client = client
        self.dir = client.data_dir / "allocs" / alloc.id
        self.log_dir = self.dir / "alloc" / "logs"
        self._on_change = on_change
        self._persist = persist
        self.gates = {stage: asyncio.Event() for stage in STAGES}
        self.coordinator = Coordinator.of(self.tg.tasks)
        self.tasks = {t.name: TaskRunner(self, t, (reattach or {}).get(t.name)) for t in self.tg.tasks}
        for name, tr in self.tasks.items():
            known = alloc.task_states.get(name)
            # Re-attached: the task goes on where the servers last heard of it (restarts, events).
            if known is not None and (tr.handle is not None or (restore and known.state == TASK_STATE_DEAD)):
                tr.state = known
                tr.ended_before = tr.handle is None
        if restore:
            self.coordinator.restore(self._states())
        self.main: asyncio.Task[None] | None = None
        self._runs: set[asyncio.Task[None]] = set()
        self._restarts: set[asyncio.Task[None]] = set()
        self.stopped = False
        # The servers asked the alloc to stop without its shutdown delays (alloc stop -no-shutdown-delay).
        self.no_shutdown_delay = False
        self._killing: asyncio.Task[None] | None = None
        # The last operator restart request acted on (each is acted on once, across agent restarts).
        self.restart_handled = ""
        # Deployment health, judged here and reported with the alloc's status.
        self.health: AllocDeploymentStatus | None = None
        self._health = self._health_tracker()
        self._health_timer: asyncio.TimerHandle | None = None
        # The nomad services' checks (their results served to the API; health waits on them).
        self.checks = AllocChecks(self, self.changed)

    # --- the alloc directory (Nomad's layout) ---
    def task_dir(self, task: Task) -> Path:
        """The task's working directory (raw_exec runs there): <alloc>/<task>."""
        return self.dir / task.name

    def dirs(self, task: Task) -> TaskDirs:
        root = self.task_dir(task)
        return TaskDirs(str(self.dir / "alloc"), str(root / "local"), str(root / "secrets"))

    def build_dirs(self, task: Task) -> None:
        """alloc/{data,logs,tmp} shared by the tasks, <task>/{local,secrets,tmp} each's own."""
        for sub in ("data", "logs", "tmp"):
            (self.dir / "alloc" / sub).mkdir(parents=True, exist_ok=True)
        root = self.task_dir(task)
        for sub in ("local", "tmp"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        (root / "secrets").mkdir(mode=0o700, parents=True, exist_ok=True)

    def write_payload(self, task: Task) -> None:
        """A dispatched job's payload, written whole into the file its task's dispatch_payload
        names under the task's local dir, as Nomad's dispatch hook does."""
        file = task.dispatch_payload.file if task.dispatch_payload is not None else ""
        if not self.job.dispatched or not file:
            return
        rel = dispatch_payload_path(task.name, file)
        payload = decode_payload(self.job.payload or "")
        if rel is None or payload is None:  # refused at register; a job from elsewhere
            raise OSError(f"dispatch_payload file {file!r} or the payload is not valid")
        path = self.dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, payload)

    def _health_tracker(self) -> HealthTracker | None:
        """A tracker when the alloc belongs to a deployment whose health is not yet known."""
        upd, a = self.tg.update, self.alloc
        if not a.deployment_id or upd is None or not upd.rolling() or upd.health_check == HEALTH_CHECK_MANUAL:
            return None
        if a.deployment_status is not None and a.deployment_status.healthy is not None:
            return None
        return HealthTracker(
            upd.min_healthy_time,
            time.time_ns() + upd.healthy_deadline,
            upd.healthy_deadline,
            lifecycles=ephemeral_hooks(self.tg.tasks),
        )

    def _judge_health(self) -> None:
        assert self._health is not None
        if self._health_timer is not None:
            self._health_timer.cancel()
            self._health_timer = None
        now = time.time_ns()
        upd = self.tg.update
        by_checks = upd is not None and upd.health_check == HEALTH_CHECK_CHECKS
        verdict = self._health.update(self._states(), now, self.checks.passing() if by_checks else None)
        if verdict.healthy is not None:
            self.health = AllocDeploymentStatus(healthy=verdict.healthy, timestamp=now)
            log.info("alloc %s is %s", self.alloc.id, "healthy" if verdict.healthy else "unhealthy")
            if not verdict.healthy:
                for tr in self.tasks.values():
                    tr._event("Alloc Unhealthy", verdict.reason)
        elif verdict.wake_at and not self.stopped:
            self._health_timer = asyncio.get_running_loop().call_later(
                max(0.0, (verdict.wake_at - now) / SECOND), self.changed
            )

    def _states(self) -> dict[str, Any]:
        return {n: tr.state for n, tr in self.tasks.items()}

    def changed(self) -> None:
        if self.main is not None:
            self._coordinate()
        if self._health is not None and self.health is None and not self.stopped:
            self._judge_health()
        self._on_change(self)

    def _coordinate(self) -> None:
        """Open the gates of the lifecycle stages that may start now, and kill the live tasks
        when a task's end says so."""
        states = self._states()
        opened = self.coordinator.update(states)
        for stage, gate in self.gates.items():
            if stage in opened:
                gate.set()
            else:
                gate.clear()
        if self._killing is None and not self.stopped and (kill := kill_decision(self.tg.tasks, states)):
            log.info("alloc %s: %s; killing its live tasks", self.alloc.id, kill.message())
            self._killing = asyncio.create_task(self._kill_tasks(kill))

    async def _kill_tasks(self, kill: Kill | None) -> None:
        """Kill every task but the poststop ones: each live one told why (`kill`), after the
        group's shutdown_delay; the leader first, then the others, then the sidecars."""
        if kill is not None:
            details = {"failed_sibling": kill.failed_sibling} if kill.failed_sibling else {}
            for tr in self.tasks.values():
                if tr.stage != POSTSTOP and tr.state.state != TASK_STATE_DEAD:
                    tr.emit(kill.event, kill.message(), **details)
        delay = self.tg.shutdown_delay or 0
        if (
            delay > 0
            and not self.no_shutdown_delay
            and any(tr.handle is not None for tr in self.tasks.values())
        ):
            await asyncio.sleep(delay / SECOND)
        for wave in kill_waves(self.tg.tasks):
            await asyncio.gather(*(self.tasks[name].kill() for name in wave))

    def persist(self) -> None:
        self._persist()

    def update(self, alloc: Allocation, job: Job) -> None:
        """Take an update of the alloc from the servers (Nomad's alloc runner Update: an
        in-place update of its job, a canary promoted): its services are registered as now
        defined (the registrar reads the alloc and group), its checks change with theirs, each
        task goes on under its new definition, and its deployment health is judged anew when
        it joined another deployment. What would change a task's setup is a destructive update
        (a new alloc), so the same tasks are there."""
        tg = job.lookup_task_group(alloc.task_group)
        if self.stopped or tg is None or {t.name for t in tg.tasks} != set(self.tasks):
            return
        joined = alloc.deployment_id != self.alloc.deployment_id
        self.alloc, self.job, self.tg = alloc, job, tg
        for task in tg.tasks:
            self.tasks[task.name].task = task
        self.checks.update()
        if joined:
            if self._health_timer is not None:
                self._health_timer.cancel()
                self._health_timer = None
            self.health = None
            self._health = self._health_tracker()
        self.changed()

    def start(self) -> None:
        self.main = asyncio.create_task(self._run())
        self.checks.start()
        self.changed()

    async def _run(self) -> None:
        for tr in self.tasks.values():
            self._spawn(tr)
        await self._wait_runs()

    def _spawn(self, tr: TaskRunner) -> None:
        tr.run_task = asyncio.create_task(tr.run_and_end())
        self._runs.add(tr.run_task)

    async def _wait_runs(self) -> None:
        while self._runs:
            done, _ = await asyncio.wait(self._runs, return_when=asyncio.FIRST_COMPLETED)
            self._runs -= done
        if self._killing is not None:
            await self._killing
        self.changed()

    def _chosen(
        self, task: str, tasks: list[str] | None, all_tasks: bool
    ) -> tuple[list[TaskRunner], list[TaskRunner]]:
        """The running tasks an operator restart runs again, and the finished ones it starts anew."""
        named = tasks or ([task] if task else [])
        chosen = [self.tasks[t] for t in named if t in self.tasks] if named else list(self.tasks.values())
        again = []
        if all_tasks and not named:
            again = [
                tr for tr in self.tasks.values() if tr.state.state == TASK_STATE_DEAD and not tr.state.failed
            ]
        return [tr for tr in chosen if tr.running()], again

    def accept_restart(
        self, request_id: str, task: str = "", all_tasks: bool = False, tasks: list[str] | None = None
    ) -> None:
        """Take an operator's restart on: mark what it runs again, for the agent to save before
        carrying it out (`restart`)."""
        self.restart_handled = request_id
        running, again = self._chosen(task, tasks, all_tasks)
        for tr in running + again:
            tr.restart_pending = request_id

    async def restart(
        self, request_id: str, task: str = "", all_tasks: bool = False, tasks: list[str] | None = None
    ) -> None:
        """An operator's restart: the named task (or `tasks`), else the running ones; with
        `all_tasks` also the tasks that have finished run again."""
        if self.stopped:
            return
        running, again = self._chosen(task, tasks, all_tasks)
        log.info(
            "alloc %s: restarting %s",
            self.alloc.id,
            ", ".join(tr.task.name for tr in running + again) or "nothing",
        )
        if all_tasks and not tasks and not task:
            # Every task runs again: in lifecycle order, and a kill already done is forgotten.
            self.coordinator.restart()
            if self._killing is not None and self._killing.done():
                self._killing = None
        for tr in again:
            tr.restart_pending = request_id  # run() signals it: this start is the restart
            tr.ended_before = False
            tr.stopping.clear()
            tr.state = tr.state.model_copy(update={"state": TASK_STATE_PENDING})
            self._spawn(tr)
        if again and self.main is not None and self.main.done():
            self.main = asyncio.create_task(self._wait_runs())
        self.changed()
        await asyncio.gather(*(tr.restart(request_id) for tr in running))

    def pending_restarts(self) -> dict[str, str]:
        return {name: tr.restart_pending for name, tr in self.tasks.items() if tr.restart_pending}

    def resume_restarts(self, pending: dict[str, str]) -> None:
        """After the agent's own restart, before `start`: carry out the restarts it accepted and
        had not finished. A task still running its old process is restarted; one not running
        any more starts anew in run(), and that start is its restart."""
        for name, request_id in pending.items():
            tr = self.tasks.get(name)
            if tr is None:
                continue
            tr.restart_pending = request_id
            if tr.handle is not None:
                tr.signal_restart(request_id)
                self._restarts.add(task := asyncio.create_task(tr.kill_for_restart()))
                task.add_done_callback(self._restarts.discard)

    async def stop(self, no_shutdown_delay: bool = False, destroy: bool = False) -> None:
        """Stop the alloc: kill its tasks in order, then let its poststop tasks run (`destroy`:
        kill those too, without delays, as for an alloc collected)."""
        self.stopped = True
        self.no_shutdown_delay = self.no_shutdown_delay or no_shutdown_delay or destroy
        await self.checks.stop()
        if self._health_timer is not None:
            self._health_timer.cancel()
        if destroy:
            for tr in self.tasks.values():
                tr.stopping.set()
        elif self.main is not None and not self.main.done():
            await self._kill_tasks(None)
        if self.main is not None:
            await self.main

    def finished(self) -> bool:
        """Whether every task of the alloc has ended here (nothing left to run or stop)."""
        return self.main is not None and self.main.done()

    def client_status(self) -> str:
        """Nomad's: failed if a task failed, else running if one runs, else pending if one is
        yet to run (a poststop task waits for the others), else complete."""
        states = [tr.state for tr in self.tasks.values()]
        if any(s.state == TASK_STATE_DEAD and s.failed for s in states):
            return ALLOC_CLIENT_FAILED
        if any(s.state == TASK_STATE_RUNNING for s in states):
            return ALLOC_CLIENT_RUNNING
        if not states or any(s.state == TASK_STATE_PENDING for s in states):
            return ALLOC_CLIENT_PENDING
        return ALLOC_CLIENT_COMPLETE

    def handles(self) -> dict[str, dict[str, Any]]:
        return {
            name: tr.handle.state()
            for name, tr in self.tasks.items()
            if tr.handle is not None and tr.handle.state()
        }
