"""A task runner: one task of an alloc, as Nomad's task runner runs it - wait until its
lifecycle stage may start, run its prestart hooks (task directories, dispatch payload, host
volumes, environment, artifacts), start it through its driver, and restart it locally per its
restart block (drover.control.client.restarttracker) until it is done, failed or killed; a
kill waits its shutdown_delay, then sends its kill signal and SIGKILL after its kill_timeout."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from drover.client import artifacts
from drover.client.dockerdriver import DockerHandle
from drover.client.drivers import (
    Driver,
    ExecResult,
    ExitResult,
    StartError,
    TaskContext,
    TaskHandle,
    driver_for,
    exec_process,
)
from drover.client.tasktemplates import Change as TemplateChange
from drover.client.tasktemplates import TaskTemplates, TemplateError, missing_words, script_command
from drover.client.templatesources import Dep, TemplateSources
from drover.control.client.lifecycle import task_stage
from drover.control.client.restarttracker import DONE, RESTART, RestartTracker
from drover.control.client.taskenv import interpolate, interpolation_maps, replace_env, task_env
from drover.control.client.volumes import HostVolumeMount, VolumeError, host_volume_mounts, volume_env
from drover.model.alloc import TASK_STATE_DEAD, TASK_STATE_PENDING, TASK_STATE_RUNNING, TaskEvent, TaskState
from drover.model.defaults import DEFAULT_KILL_TIMEOUT, default_restart_policy
from drover.model.drivers import config_problems
from drover.model.durations import SECOND, format_duration
from drover.model.job import Task
from drover.model.taskfiles import Template

if TYPE_CHECKING:
    from drover.client.runner import AllocRunner

log = logging.getLogger("drover.client")
EVENTS_KEPT = 10
# The most of a command's output kept when it runs in the task (the executor's CheckBufSize).
EXEC_OUTPUT_KEPT = 4 * 1024


class PrestartError(Exception):
    """A prestart hook failed: its task event type, the message, and whether the restart
    policy applies (else the task fails at once)."""

    def __init__(self, kind: str, message: str, recoverable: bool) -> None:
        super().__init__(message)
        self.kind = kind
        self.recoverable = recoverable


class TaskRunner:
    def __init__(self, alloc: AllocRunner, task: Task, reattach: TaskHandle | None = None) -> None:
        self.alloc = alloc
        self.task = task
        self.stage = task_stage(task)
        self.state = TaskState(state=TASK_STATE_PENDING)
        self.handle: TaskHandle | None = reattach
        self.stopping = asyncio.Event()
        self.rng = random.Random()
        self.restart_now = asyncio.Event()
        # An operator restart accepted and not yet carried out: saved with the agent's state and
        # cleared in the same write as the new process's handle, so an agent killed in between
        # carries it out when it is back, and one killed after it does not do it again.
        self.restart_pending = ""
        # Ended before the agent's restart (its state restored from the servers): not run again.
        self.ended_before = False
        self.run_task: asyncio.Task[None] | None = None
        self._set_up = False
        self._fetched: set[int] = set()  # artifacts already fetched (by index), as Nomad's hook keeps
        self.templates: TaskTemplates | None = None
        self._template_env: dict[str, str] = {}
        self._template_watch: asyncio.Task[None] | None = None
        # The environment and working directory the task was started with (commands run
        # beside it see the same); None for a task re-attached after the agent's restart.
        self.env: dict[str, str] | None = None
        self.work_dir: Path | None = None

    # --- state and events ---
    def _event(self, kind: str, message: str = "", **details: str) -> None:
        event = TaskEvent(
            type=kind, time=time.time_ns(), message=message, display_message=message or kind, details=details
        )
        self.state = self.state.model_copy(update={"events": [*self.state.events, event][-EVENTS_KEPT:]})
        self.alloc.changed()

    def _set(self, **update: Any) -> None:
        self.state = self.state.model_copy(update=update)
        self.alloc.changed()

    def _fail(self, kind: str, message: str) -> None:
        self._event(kind, message)
        self._set(state=TASK_STATE_DEAD, failed=True, finished_at=time.time_ns())

    def _killed(self) -> None:
        if self.state.state != TASK_STATE_DEAD:
            self._event("Killed", "Task successfully killed")
            self._set(state=TASK_STATE_DEAD, finished_at=time.time_ns())

    def emit(self, kind: str, message: str, **details: str) -> None:
        """An event the alloc runner tells this task of (why it is killed)."""
        self._event(kind, message, **details)

    def kill_timeout(self) -> float:
        """The task's kill_timeout (s), capped at the client's max_kill_timeout."""
        own = self.task.kill_timeout / SECOND if self.task.kill_timeout > 0 else DEFAULT_KILL_TIMEOUT / SECOND
        return min(own, self.alloc.client.max_kill_timeout / SECOND)

    # --- the run loop ---
    def _driver(self) -> Driver | None:
        driver = driver_for(self.task.driver, self.alloc.client.drivers, self.alloc.client.docker)
        if driver is None:
            self._fail("Driver Failure", f'driver "{self.task.driver}" is not enabled on this client')
            return None
        problems = config_problems(self.task.driver, self.task.config)
        if problems:
            self._fail("Failed Validation", "; ".join(problems))
            return None
        return driver

    async def run_and_end(self) -> None:
        """run(), and whatever watched for the task (its templates' data) ended with it."""
        try:
            await self.run()
        finally:
            if self._template_watch is not None:
                self._template_watch.cancel()

    async def run(self) -> None:
        job, tg = self.alloc.job, self.alloc.tg
        policy = self.task.restart_policy or tg.restart_policy or default_restart_policy(job.type)
        tracker = RestartTracker(policy, job.type, self.task.lifecycle)
        if self.ended_before:
            return
        driver = self._driver()
        if driver is None:
            return
        if self.handle is None:
            self._event("Received", "Task received by client")
            if self.restart_pending:
                # Accepted before the agent stopped and not carried out: this start is the restart.
                self._event("Restart Signaled", "User requested restart", restart_id=self.restart_pending)
        while not self.stopping.is_set():
            if self.handle is None:
                started = await self._start(driver, tracker)
                if started is None:
                    return
                if not started:
                    continue
            assert self.handle is not None
            self.alloc.persist()
            result = await self._wait_or_stop(self.handle)
            self.handle = None
            if result is None:  # stopped by the agent
                self._killed()
                return
            if not await self._after_exit(result, tracker):
                return
        self._killed()

    async def _start(self, driver: Driver, tracker: RestartTracker) -> bool | None:
        """Start the task once its stage may: True when started, False to try again (after the
        restart delay), None when done (failed, or killed before it could start)."""
        if not await self._wait_gate():
            self._killed()
            return None
        try:
            task, env, ctx = await self._prestart(driver)
            task_dir = self.alloc.task_dir(self.task)
            self.handle = await driver.start(task, task_dir, self.alloc.log_dir, env, ctx)
            self.env = env
            self.work_dir = Path(task.config["work_dir"]) if task.config.get("work_dir") else task_dir
        except PrestartError as e:
            self._event(e.kind, str(e))
            recoverable = e.recoverable
        except StartError as e:
            self._event("Driver Failure", str(e))
            recoverable = e.recoverable
        else:
            self._event("Started", "Task started by client")
            self._watch_templates()
            self._set(state=TASK_STATE_RUNNING, started_at=self.state.started_at or time.time_ns())
            self.restart_pending = ""
            return True
        decision = tracker.on_start_error(recoverable, time.time_ns(), self.rng)
        if decision.action != RESTART:
            self._fail("Not Restarting", decision.reason)
            return None
        return False if await self._restart_after(decision.reason, decision.delay) else None

    async def _after_exit(self, result: ExitResult, tracker: RestartTracker) -> bool:
        """The task exited by itself: whether it runs again (after its restart delay)."""
        self._terminated(result)
        if self.restart_now.is_set():
            # Asked for: again at once, not counted against the restart block.
            self.restart_now.clear()
            self._event("Restarting", "Task restarting in 0s")
            self._set(state=TASK_STATE_PENDING, restarts=self.state.restarts + 1, last_restart=time.time_ns())
            return True
        decision = tracker.on_exit(time.time_ns(), result.exit_code, self.rng)
        if decision.action == DONE:
            self._set(state=TASK_STATE_DEAD, failed=False, finished_at=time.time_ns())
            return False
        if decision.action != RESTART:
            self._fail("Not Restarting", decision.reason)
            return False
        return await self._restart_after(decision.reason, decision.delay)

    def _terminated(self, result: ExitResult) -> None:
        """Nomad's Terminated event: "Exit Code: 137, Exit Message: \"OOM Killed\"" and its details."""
        parts = [f"Exit Code: {result.exit_code}"]
        details = {"exit_code": str(result.exit_code)}
        if result.signal:
            parts.append(f"Signal: {result.signal}")
            details["signal"] = str(result.signal)
        if result.message:
            parts.append(f"Exit Message: {json.dumps(result.message)}")
            details["exit_message"] = result.message
        if result.oom_killed:
            details["oom_killed"] = "true"
        self._event("Terminated", ", ".join(parts), **details)

    async def _restart_after(self, reason: str, delay: int) -> bool:
        """Count a restart and wait out its delay; False when killed meanwhile."""
        self._event("Restarting", f"{reason}; restarting in {delay / SECOND:.3g}s")
        self._set(state=TASK_STATE_PENDING, restarts=self.state.restarts + 1, last_restart=time.time_ns())
        return await self._pause(delay)

    async def _wait_gate(self) -> bool:
        """Wait until the task's lifecycle stage may start; False when killed first."""
        gate = self.alloc.gates[self.stage]
        while not gate.is_set() and not self.stopping.is_set():
            opened = asyncio.ensure_future(gate.wait())
            stopped = asyncio.ensure_future(self.stopping.wait())
            await asyncio.wait({opened, stopped}, return_when=asyncio.FIRST_COMPLETED)
            opened.cancel()
            stopped.cancel()
        return not self.stopping.is_set()

    async def _pause(self, delay_ns: int) -> bool:
        """Wait out a restart delay; False when stopped meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), delay_ns / SECOND)
        if self.stopping.is_set():
            self._killed()
            return False
        return True

    # --- prestart hooks ---
    async def _prestart(self, driver: Driver) -> tuple[Task, dict[str, str], TaskContext]:
        """The task as its driver gets it (config interpolated, kill_timeout capped), its
        environment (its directories as the driver's task sees them) and what else the driver
        is told, once its directories, payload, volumes and artifacts are in place."""
        ar, task = self.alloc, self.task
        if not self._set_up:
            self._event("Task Setup", "Building Task Directory")
            try:
                ar.build_dirs(task)
                ar.write_payload(task)
            except OSError as e:
                raise PrestartError("Setup Failure", f"failed to build the task directory: {e}", False) from e
            self._set_up = True
        try:
            mounts, env = self._task_env(driver)
        except VolumeError as e:
            raise PrestartError("Setup Failure", str(e), False) from e
        maps = interpolation_maps(env, ar.client.node, ar.client.region)
        await self._fetch_artifacts(maps)
        if task.templates:
            # After the artifacts, as Nomad's hooks run (a template's source may be one).
            env.update(await self._render_templates(env))
            maps = interpolation_maps(env, ar.client.node, ar.client.region)
        driven = task.model_copy(
            update={
                "config": interpolate(task.config, *maps),
                "kill_timeout": int(self.kill_timeout() * SECOND),
            }
        )
        ctx = TaskContext(ar.alloc, ar.job, ar.client.node, ar.dir, mounts, self._event)
        return driven, env, ctx

    def _task_env(self, driver: Driver) -> tuple[list[HostVolumeMount], dict[str, str]]:
        """The task's host volume mounts and its environment (Nomad's), its directories as the
        driver's task sees them. Raises VolumeError."""
        ar, task = self.alloc, self.task
        mounts = host_volume_mounts(task, ar.tg, ar.client.node.host_volumes, ar.alloc.name)
        dirs = driver.container_dirs or ar.dirs(task)
        env = task_env(ar.alloc, ar.job, task, ar.client.node, dirs, ar.client.region, volume_env(mounts))
        return mounts, env

    async def _render_templates(self, env: dict[str, str]) -> dict[str, str]:
        """The task's templates rendered and written (drover.client.tasktemplates), waiting while
        what one reads is missing; the variables its `env` templates add."""
        ar = self.alloc
        if self.templates is None:
            if ar.client.api is None:
                raise PrestartError("Template", "templates need the agent's connection to the servers", False)
            sources = TemplateSources(ar.client.api, ar.alloc.namespace)
            self.templates = TaskTemplates(
                self.task,
                ar.task_dir(self.task),
                sources,
                ar.alloc.namespace,
                lambda m: self._event("Template", m),
            )
        self._template_env = dict(env)

        def waiting(missing: list[Dep]) -> None:
            self._event(
                "Template", "Missing: " + ", ".join(missing_words(d, ar.client.region) for d in missing)
            )

        try:
            added = await self.templates.render_all(env, waiting, self.stopping)
        except (TemplateError, OSError) as e:
            raise PrestartError("Template", f"Template failed: {e}", False) from e
        except httpx.HTTPError as e:
            raise PrestartError("Template", f"Template failed to read its data: {e}", True) from e
        if added is None:
            raise PrestartError("Template", "killed while its templates waited for data", False)
        return added

    def _watch_templates(self) -> None:
        """Once the task runs: its templates rendered again when what they read changes."""
        if self.templates is None or self._template_watch is not None:
            return
        watch = self.templates.watch(self._template_env, self.stopping, self._template_changed)
        self._template_watch = asyncio.create_task(watch)

    async def _template_changed(self, change: TemplateChange) -> None:
        """A re-rendered template's change_mode, as Nomad's template hook applies it."""
        handle = self.handle
        if handle is None:
            return
        if change.restart:
            self.restart_pending = ""
            self._event("Restart Signaled", "Template with change_mode restart re-rendered")
            self.restart_now.set()
            await self.kill_for_restart()
            return
        for sig in change.signals:
            self._event("Signaling", "Template re-rendered", signal=sig)
            try:
                await handle.send(sig)
            except Exception as e:
                self._event("Signaling", f"Template failed to send signal {sig}: {e}")
        for template in change.scripts:
            await self._template_script(handle, template)

    async def _template_script(self, handle: TaskHandle, template: Template) -> None:
        script = template.change_script
        assert script is not None
        result = await self.exec(script_command(template), (script.timeout or 5 * SECOND) / SECOND)
        why = result.error or ("timed out" if result.timed_out else f"exit code {result.exit_code}")
        if not result.error and not result.timed_out and result.exit_code == 0:
            self._event(
                "Template", f"Template ran script {script.command} with arguments {script.args} on change"
            )
            return
        self._event(
            "Template", f"Template failed to run script {script.command} with arguments {script.args}: {why}"
        )
        if script.fail_on_error:
            self._event("Killing", "Template script failed, task is being killed")
            self.stopping.set()

    async def _fetch_artifacts(self, maps: tuple[Any, ...]) -> None:
        todo = [(i, a) for i, a in enumerate(self.task.artifacts) if i not in self._fetched]
        if not todo:
            return
        self._event("Downloading Artifacts", "Client is downloading artifacts")
        ar = self.alloc
        for i, art in todo:
            try:
                fetch = artifacts.resolve(art, maps, ar.task_dir(self.task), ar.dir / "alloc")
                await artifacts.fetch(fetch, ar.dir)
            except (artifacts.ArtifactError, httpx.HTTPError, OSError) as e:
                message = f'failed to download artifact "{art.getter_source}": {e}'
                raise PrestartError("Failed Artifact Download", message, True) from e
            self._fetched.add(i)

    # --- commands run where the task runs ---
    def replace_env(self, text: str) -> str:
        """`text` with the task's environment interpolated (`${NOMAD_TASK_DIR}`...)."""
        env = self._exec_env()
        return replace_env(text, *interpolation_maps(env, self.alloc.client.node, self.alloc.client.region))

    def _exec_env(self) -> dict[str, str]:
        if self.env is None:  # re-attached: the task's own environment (templates' aside)
            driver = driver_for(self.task.driver, self.alloc.client.drivers, self.alloc.client.docker)
            try:
                self.env = self._task_env(driver)[1] if driver is not None else {}
            except VolumeError:
                self.env = {}
        return self.env

    async def exec(self, command: list[str], timeout: float) -> ExecResult:
        """Run `command` where the task runs, as its driver's Exec does (a script check, a
        template's change script): in its container for docker, else a process with the
        task's environment in its working directory."""
        handle = self.handle
        if handle is None or self.state.state != TASK_STATE_RUNNING:
            return ExecResult(error="task is not running")
        if isinstance(handle, DockerHandle):
            return await handle.exec(command, timeout)
        if self.task.driver == "mock":
            return ExecResult(error="the mock driver does not run commands")
        cwd = self.work_dir or self.alloc.task_dir(self.task)
        env = {**os.environ, **self._exec_env()}
        return await exec_process(command, cwd, env, timeout, EXEC_OUTPUT_KEPT)

    # --- stopping ---
    async def _wait_or_stop(self, handle: TaskHandle) -> ExitResult | None:
        waiter = asyncio.ensure_future(handle.wait())
        stopper = asyncio.ensure_future(self.stopping.wait())
        done, _ = await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if waiter in done:
            stopper.cancel()
            return waiter.result()
        if not await self._shutdown_delay(waiter):
            kill_timeout = self.kill_timeout()
            self._event("Killing", f"Sent interrupt. Waiting {kill_timeout:g}s before force killing")
            await handle.stop(kill_timeout)
        with contextlib.suppress(Exception):
            await waiter
        return None

    async def _shutdown_delay(self, waiter: asyncio.Future[ExitResult]) -> bool:
        """The task's shutdown_delay before it is killed (skipped when the alloc's stop said
        so); True when the task exited meanwhile."""
        delay = self.task.shutdown_delay
        if not delay:
            return False
        if self.alloc.no_shutdown_delay:
            message = f"Skipping shutdown_delay of {format_duration(delay)} before killing the task."
            self._event("Skipping shutdown delay", message)
            return False
        message = f"Waiting for shutdown_delay of {format_duration(delay)} before killing the task."
        self._event("Waiting for shutdown delay", message)
        self._set(state=TASK_STATE_PENDING)
        done, _ = await asyncio.wait({waiter}, timeout=delay / SECOND)
        return bool(done)

    async def kill(self) -> None:
        """Stop the task and wait until it has ended."""
        self.stopping.set()
        if self.run_task is not None and not self.run_task.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self.run_task)

    # --- operator restarts ---
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

    async def restart_unhealthy(self, reason: str) -> None:
        """Run the task again now because a check of its service failed (check_restart)."""
        if self.handle is None:
            return
        self._event("Restart Signaled", reason)
        self.restart_now.set()
        await self.kill_for_restart()

    def signal_restart(self, request_id: str) -> None:
        self.restart_pending = request_id
        self._event("Restart Signaled", "User requested restart", restart_id=request_id)
        self.restart_now.set()

    async def kill_for_restart(self) -> None:
        if self.handle is None:
            return
        await self.handle.stop(self.kill_timeout())
