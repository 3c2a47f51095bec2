"""Alloc and task runners: run an alloc's tasks through their drivers, restart them locally per
the group's restart block (drover.control.client.restarttracker), stop them when the servers say so, and
keep task states and the alloc's client status for the agent to report."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from drover.client.drivers import ExitResult, StartError, TaskHandle, driver_for
from drover.client.health import HealthTracker
from drover.client.statefile import write_atomically
from drover.control.client.restarttracker import DONE, RESTART, RestartTracker
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
    TaskEvent,
    TaskState,
)
from drover.model.defaults import HEALTH_CHECK_MANUAL, default_restart_policy
from drover.model.drivers import config_problems
from drover.model.durations import SECOND
from drover.model.job import Job, Task, TaskGroup
from drover.model.validation.dispatch import decode_payload, dispatch_payload_path

log = logging.getLogger("drover.client")
DEFAULT_KILL_TIMEOUT = 5.0


class TaskRunner:
    def __init__(self, alloc: AllocRunner, task: Task, reattach: TaskHandle | None = None) -> None:
        self.alloc = alloc
        self.task = task
        self.state = TaskState(state=TASK_STATE_PENDING)
        self.handle: TaskHandle | None = reattach
        self.stopping = asyncio.Event()
        self.rng = random.Random()
        self.restart_now = asyncio.Event()
        # An operator restart accepted and not yet carried out: saved with the agent's state and
        # cleared in the same write as the new process's handle, so an agent killed in between
        # carries it out when it is back, and one killed after it does not do it again.
        self.restart_pending = ""

    def _event(self, kind: str, message: str = "", **details: str) -> None:
        event = TaskEvent(
            type=kind, time=time.time_ns(), message=message, display_message=message or kind, details=details
        )
        self.state = self.state.model_copy(update={"events": [*self.state.events, event][-10:]})
        self.alloc.changed()

    def _set(self, **update: Any) -> None:
        self.state = self.state.model_copy(update=update)
        self.alloc.changed()

    def _fail(self, kind: str, message: str) -> None:
        self._event(kind, message)
        self._set(state=TASK_STATE_DEAD, failed=True, finished_at=time.time_ns())

    async def run(self) -> None:
        job, tg = self.alloc.job, self.alloc.tg
        policy = self.task.restart_policy or tg.restart_policy or default_restart_policy(job.type)
        tracker = RestartTracker(policy, job.type)
        driver = driver_for(self.task.driver, self.alloc.drivers)
        if driver is None:
            self._fail("Driver Failure", f'driver "{self.task.driver}" is not enabled on this client')
            return
        problems = config_problems(self.task.driver, self.task.config)
        if problems:
            self._fail("Failed Validation", "; ".join(problems))
            return
        if self.handle is None:
            self._event("Received", "Task received by client")
            if self.restart_pending:
                # Accepted before the agent stopped and not carried out: this start is the restart.
                self._event("Restart Signaled", "User requested restart", restart_id=self.restart_pending)
            try:
                self.alloc.write_payload(self.task)
            except OSError as e:
                self._fail("Setup Failure", f"failed to write the dispatch payload: {e}")
                return
        while not self.stopping.is_set():
            if self.handle is None:
                try:
                    self.handle = await driver.start(
                        self.task,
                        self.alloc.task_dir(self.task),
                        self.alloc.log_dir,
                        self.alloc.env(self.task),
                    )
                except StartError as e:
                    self._event("Driver Failure", str(e))
                    decision = tracker.on_start_error(e.recoverable, time.time_ns(), self.rng)
                    if decision.action != RESTART:
                        self._fail("Not Restarting", decision.reason)
                        return
                    if not await self._pause(decision.delay):
                        return
                    continue
                self._event("Started", "Task started by client")
                self._set(state=TASK_STATE_RUNNING, started_at=self.state.started_at or time.time_ns())
                self.restart_pending = ""
            self.alloc.persist()
            result = await self._wait_or_stop(self.handle)
            self.handle = None
            if result is None:  # stopped by the agent
                self._event("Killed", "Task successfully killed")
                self._set(state=TASK_STATE_DEAD, finished_at=time.time_ns())
                return
            self._event("Terminated", f"Exit Code: {result.exit_code}", exit_code=str(result.exit_code))
            if self.restart_now.is_set():
                # Asked for: again at once, not counted against the restart block.
                self.restart_now.clear()
                self._event("Restarting", "Task restarting in 0s")
                self._set(
                    state=TASK_STATE_PENDING, restarts=self.state.restarts + 1, last_restart=time.time_ns()
                )
                continue
            decision = tracker.on_exit(time.time_ns(), result.exit_code, self.rng)
            if decision.action == DONE:
                self._set(state=TASK_STATE_DEAD, failed=False, finished_at=time.time_ns())
                return
            if decision.action != RESTART:
                self._fail("Not Restarting", decision.reason)
                return
            self._event("Restarting", f"{decision.reason}; restarting in {decision.delay / SECOND:.3g}s")
            self._set(state=TASK_STATE_PENDING, restarts=self.state.restarts + 1, last_restart=time.time_ns())
            if not await self._pause(decision.delay):
                return

    async def _pause(self, delay_ns: int) -> bool:
        """Wait out a restart delay; False when stopped meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), delay_ns / SECOND)
        if self.stopping.is_set():
            self._event("Killed", "Task successfully killed")
            self._set(state=TASK_STATE_DEAD, finished_at=time.time_ns())
            return False
        return True

    async def _wait_or_stop(self, handle: TaskHandle) -> ExitResult | None:
        waiter = asyncio.ensure_future(handle.wait())
        stopper = asyncio.ensure_future(self.stopping.wait())
        done, _ = await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if waiter in done:
            stopper.cancel()
            return waiter.result()
        kill_timeout = self.task.kill_timeout / SECOND if self.task.kill_timeout > 0 else DEFAULT_KILL_TIMEOUT
        self._event("Killing", f"Sent interrupt. Waiting {kill_timeout:g}s before force killing")
        await handle.stop(kill_timeout)
        with contextlib.suppress(Exception):
            await waiter
        return None

    def running(self) -> bool:
        return self.handle is not None and self.state.state == TASK_STATE_RUNNING

    async def restart(self, request_id: str = "") -> None:
        """Run the task again now (an operator asked), without counting against the restart
        block: stop it as for a kill, then start it again."""
        if self.handle is None:
            self.restart_pending = ""
            return
        self.signal_restart(request_id)
        await self.kill_for_restart()

    def signal_restart(self, request_id: str) -> None:
        self.restart_pending = request_id
        self._event("Restart Signaled", "User requested restart", restart_id=request_id)
        self.restart_now.set()

    async def kill_for_restart(self) -> None:
        if self.handle is None:
            return
        kill_timeout = self.task.kill_timeout / SECOND if self.task.kill_timeout > 0 else DEFAULT_KILL_TIMEOUT
        await self.handle.stop(kill_timeout)


class AllocRunner:
    def __init__(
        self,
        alloc: Allocation,
        job: Job,
        data_dir: Path,
        drivers: set[str],
        on_change: Callable[[AllocRunner], None],
        persist: Callable[[], None],
        reattach: dict[str, TaskHandle] | None = None,
    ) -> None:
        self.alloc = alloc
        self.job = job
        tg = job.lookup_task_group(alloc.task_group)
        self.tg: TaskGroup = tg if tg is not None else TaskGroup(name=alloc.task_group)
        self.dir = data_dir / "allocs" / alloc.id
        self.log_dir = self.dir / "alloc" / "logs"
        self.drivers = drivers
        self._on_change = on_change
        self._persist = persist
        self.tasks = {t.name: TaskRunner(self, t, (reattach or {}).get(t.name)) for t in self.tg.tasks}
        for name, tr in self.tasks.items():
            # Re-attached: the task goes on where the servers last heard of it (restarts, events).
            if tr.handle is not None and name in alloc.task_states:
                tr.state = alloc.task_states[name]
        self.main: asyncio.Task[None] | None = None
        self._runs: set[asyncio.Task[None]] = set()
        self._restarts: set[asyncio.Task[None]] = set()
        self.stopped = False
        # The last operator restart request acted on (each is acted on once, across agent restarts).
        self.restart_handled = ""
        # Deployment health, judged here and reported with the alloc's status.
        self.health: AllocDeploymentStatus | None = None
        self._health = self._health_tracker()
        self._health_timer: asyncio.TimerHandle | None = None

    def task_dir(self, task: Task) -> Path:
        return self.dir / task.name

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

    def env(self, task: Task) -> dict[str, str]:
        a = self.alloc
        return {
            **task.env,
            "NOMAD_ALLOC_ID": a.id,
            "NOMAD_ALLOC_NAME": a.name,
            "NOMAD_ALLOC_INDEX": str(a.index()),
            "NOMAD_JOB_NAME": a.job_id,
            "NOMAD_GROUP_NAME": a.task_group,
            "NOMAD_TASK_NAME": task.name,
            "NOMAD_ALLOC_DIR": str(self.dir / "alloc"),
            "NOMAD_TASK_DIR": str(self.task_dir(task)),
        }

    def _health_tracker(self) -> HealthTracker | None:
        """A tracker when the alloc belongs to a deployment whose health is not yet known."""
        upd, a = self.tg.update, self.alloc
        if not a.deployment_id or upd is None or not upd.rolling() or upd.health_check == HEALTH_CHECK_MANUAL:
            return None
        if a.deployment_status is not None and a.deployment_status.healthy is not None:
            return None
        return HealthTracker(
            upd.min_healthy_time, time.time_ns() + upd.healthy_deadline, upd.healthy_deadline
        )

    def _judge_health(self) -> None:
        assert self._health is not None
        if self._health_timer is not None:
            self._health_timer.cancel()
            self._health_timer = None
        now = time.time_ns()
        verdict = self._health.update({n: tr.state for n, tr in self.tasks.items()}, now)
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

    def changed(self) -> None:
        if self._health is not None and self.health is None and not self.stopped:
            self._judge_health()
        self._on_change(self)

    def persist(self) -> None:
        self._persist()

    def start(self) -> None:
        self.main = asyncio.create_task(self._run())
        self.changed()

    async def _run(self) -> None:
        self._runs |= {asyncio.create_task(tr.run()) for tr in self.tasks.values()}
        await self._wait_runs()

    async def _wait_runs(self) -> None:
        while self._runs:
            done, _ = await asyncio.wait(self._runs, return_when=asyncio.FIRST_COMPLETED)
            self._runs -= done
            # One task failed for good: the alloc has failed; the others are stopped.
            if any(tr.state.failed for tr in self.tasks.values()) and not self.stopped:
                for tr in self.tasks.values():
                    tr.stopping.set()
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
        for tr in again:
            tr.restart_pending = request_id  # run() signals it: this start is the restart
            self._runs.add(asyncio.create_task(tr.run()))
        if again and self.main is not None and self.main.done():
            self.main = asyncio.create_task(self._wait_runs())
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

    async def stop(self) -> None:
        self.stopped = True
        if self._health_timer is not None:
            self._health_timer.cancel()
        for tr in self.tasks.values():
            tr.stopping.set()
        if self.main is not None:
            await self.main

    def finished(self) -> bool:
        """Whether every task of the alloc has ended here (nothing left to run or stop)."""
        return self.main is not None and self.main.done()

    def client_status(self) -> str:
        states = [tr.state for tr in self.tasks.values()]
        if any(s.state == TASK_STATE_DEAD and s.failed for s in states):
            return ALLOC_CLIENT_FAILED
        if not states or any(s.state == TASK_STATE_PENDING for s in states):
            return ALLOC_CLIENT_PENDING
        if any(s.state == TASK_STATE_RUNNING for s in states):
            return ALLOC_CLIENT_RUNNING
        return ALLOC_CLIENT_COMPLETE

    def handles(self) -> dict[str, dict[str, Any]]:
        return {
            name: tr.handle.state()
            for name, tr in self.tasks.items()
            if tr.handle is not None and tr.handle.state()
        }
