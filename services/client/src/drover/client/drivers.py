"""Task drivers on the client: `mock` (in-process, Nomad's mock driver config) and `raw_exec`
(a real process under the executor, its output in rotated log files); `docker` is
drover.client.dockerdriver. A driver starts a task and hands back
a handle to wait on and to stop (the task's kill_signal, SIGINT by default as Nomad's executor
sends, then SIGKILL after its kill_timeout). Neither mounts volumes: the runner hands host
volume paths to the task in its environment."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from drover.client.logrotate import log_indexes
from drover.control.client.taskenv import TaskDirs
from drover.control.client.volumes import HostVolumeMount
from drover.model.alloc import Allocation
from drover.model.durations import SECOND, parse_duration
from drover.model.job import Job, LogConfig, Task
from drover.model.node import Node


@dataclass
class ExitResult:
    exit_code: int
    signal: int = 0
    message: str = ""
    oom_killed: bool = False


@dataclass
class ExecResult:
    """A command run where a task runs (a script check, a template's change script): its exit
    code and last output (stdout and stderr together), whether it outlived its timeout, or why
    it did not run (`error`)."""

    exit_code: int = 0
    output: bytes = b""
    timed_out: bool = False
    error: str = ""


@dataclass
class TaskContext:
    """What a driver that isolates its task needs beyond the task (docker): the alloc, its job
    and node, the alloc's directory, the task's host volume mounts, and a way to add a task
    event ("Downloading image")."""

    alloc: Allocation
    job: Job
    node: Node
    alloc_dir: Path
    mounts: list[HostVolumeMount] = field(default_factory=list)
    emit: Callable[..., None] = lambda kind, message, **details: None


class StartError(Exception):
    def __init__(self, message: str, recoverable: bool = False) -> None:
        super().__init__(message)
        self.recoverable = recoverable


class TaskHandle(Protocol):
    async def wait(self) -> ExitResult: ...
    async def stop(self, kill_timeout: float) -> None: ...
    async def send(self, signal_name: str) -> None:
        """Send the task a signal by name ("SIGHUP"), as Nomad's driver Signal does."""
        ...

    def state(self) -> dict[str, Any]: ...


class Driver(Protocol):
    name: str

    @property
    def container_dirs(self) -> TaskDirs | None:
        """Where the task sees its directories, for a driver that mounts them (None: the host's)."""

    async def start(
        self, task: Task, task_dir: Path, log_dir: Path, env: dict[str, str], ctx: TaskContext | None = None
    ) -> TaskHandle: ...


# --- mock ---
class MockHandle:
    def __init__(self, run_for: float, exit_code: int, kill_after: float) -> None:
        self.kill_after = kill_after
        self._result: asyncio.Future[ExitResult] = asyncio.get_running_loop().create_future()
        self._runner = asyncio.create_task(self._run(run_for, exit_code))

    async def _run(self, run_for: float, exit_code: int) -> None:
        if run_for <= 0:
            return  # runs until stopped
        await asyncio.sleep(run_for)
        if not self._result.done():
            self._result.set_result(ExitResult(exit_code))

    async def wait(self) -> ExitResult:
        return await asyncio.shield(self._result)

    async def stop(self, kill_timeout: float) -> None:
        # kill_after: the task takes that long to die (the agent waits at most kill_timeout).
        if self.kill_after > 0:
            await asyncio.sleep(min(self.kill_after, kill_timeout))
        self._runner.cancel()
        if not self._result.done():
            self._result.set_result(ExitResult(0 if self.kill_after <= kill_timeout else 137, signal.SIGTERM))

    async def send(self, signal_name: str) -> None:
        """Nomad's mock driver takes signals and does nothing with them."""

    def state(self) -> dict[str, Any]:
        return {}


class MockDriver:
    name = "mock"
    container_dirs = None

    async def start(
        self, task: Task, task_dir: Path, log_dir: Path, env: dict[str, str], ctx: TaskContext | None = None
    ) -> TaskHandle:
        cfg = task.config

        def seconds(key: str) -> float:
            return parse_duration(cfg.get(key, 0)) / SECOND

        if seconds("start_block_for") > 0:
            await asyncio.sleep(seconds("start_block_for"))
        if cfg.get("start_error"):
            raise StartError(str(cfg["start_error"]), bool(cfg.get("start_error_recoverable", False)))
        return MockHandle(seconds("run_for"), int(cfg.get("exit_code", 0)), seconds("kill_after"))


# --- raw_exec ---
# How long past the kill timeout the agent waits for the executor before killing it too.
EXECUTOR_GRACE = 5.0


def kill_signal(name: str) -> str:
    """The signal a task's `kill_signal` names ("SIGTERM", "term"...; "" for SIGINT), by its
    name; raises StartError when there is no such signal."""
    sig = name.strip().upper() or "SIGINT"
    sig = sig if sig.startswith("SIG") else f"SIG{sig}"
    if sig not in signal.Signals.__members__:
        raise StartError(f"unknown kill_signal {name!r}")
    return sig


def process_start_time(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (/proc/<pid>/stat's 22nd field);
    None if there is no such process. With the pid, it names one process: pids are reused (a
    host that starts many processes wraps its pid_max within minutes)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name (2nd field) is in parentheses and may hold spaces: split after it.
    return int(stat.rsplit(b")", 1)[1].split()[19])


def group_members(pgid: int) -> list[int]:
    """The live processes of process group `pgid` (from /proc)."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            out.append(int(entry.name))
    return out


class ProcessHandle:
    """A task's executor, leading its own process group with the task in it. Started here (our
    child) or re-attached after an agent restart (not our child: watched by polling, exit code
    read from the exit file). It is known by its pid and start time, so a pid reused by
    another process after the executor's end is never taken for it nor signalled."""

    def __init__(
        self,
        pid: int,
        exit_file: Path,
        proc: asyncio.subprocess.Process | None = None,
        start_time: int | None = None,
    ) -> None:
        self.pid = pid
        self.exit_file = exit_file
        self.proc = proc
        self.start_time = start_time if start_time is not None else process_start_time(pid)

    def _alive(self) -> bool:
        return self.start_time is not None and process_start_time(self.pid) == self.start_time

    def signal(self, sig: int) -> None:
        """Send `sig` to the executor's process group, if the executor still runs."""
        if self._alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)

    async def send(self, signal_name: str) -> None:
        """The signal to the task's processes: every member of the executor's group but the
        executor itself (which takes SIGTERM and SIGINT as its orders to stop the task)."""
        sig = signal.Signals[kill_signal(signal_name)]
        if not self._alive():
            return
        for pid in await asyncio.to_thread(group_members, self.pid):
            if pid != self.pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)

    async def wait(self) -> ExitResult:
        if self.proc is not None:
            await self.proc.wait()
        else:
            while self._alive():
                await asyncio.sleep(0.2)
        try:
            code = int(self.exit_file.read_text())
        except (OSError, ValueError):
            return ExitResult(-1, message="the executor died without an exit code")
        return ExitResult(code if code >= 0 else 128 - code, signal=-code if code < 0 else 0)

    async def stop(self, kill_timeout: float) -> None:
        """Tell the executor to stop the task (it sends the kill signal, then SIGKILL after the
        kill timeout); an executor that outlives that by EXECUTOR_GRACE is killed with its group."""
        if self._alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGTERM)
        waiter = asyncio.create_task(self.wait())
        try:
            await asyncio.wait_for(asyncio.shield(waiter), kill_timeout + EXECUTOR_GRACE)
        except TimeoutError:
            self.signal(signal.SIGKILL)
            await waiter

    def state(self) -> dict[str, Any]:
        return {"pid": self.pid, "start_time": self.start_time, "exit_file": str(self.exit_file)}


class RawExecDriver:
    name = "raw_exec"
    container_dirs = None

    async def start(
        self, task: Task, task_dir: Path, log_dir: Path, env: dict[str, str], ctx: TaskContext | None = None
    ) -> TaskHandle:
        cfg = task.config
        sig = kill_signal(task.kill_signal)
        kill_timeout = task.kill_timeout / SECOND if task.kill_timeout > 0 else 5.0
        command = str(cfg["command"])
        args = [str(a) for a in cfg.get("args", [])]
        work_dir = Path(cfg["work_dir"]) if cfg.get("work_dir") else task_dir
        work_dir.mkdir(parents=True, exist_ok=True)
        task_dir.mkdir(parents=True, exist_ok=True)
        log_dir.mkdir(parents=True, exist_ok=True)
        exit_file = task_dir / "exit-code"
        exit_file.unlink(missing_ok=True)
        logs = task.log_config or LogConfig()
        for log_type in ("stdout", "stderr"):
            # There before the task is started (as logmon's are): a reader sees empty logs, not none.
            if not logs.disabled and not log_indexes(log_dir, task.name, log_type):
                (log_dir / f"{task.name}.{log_type}.0").touch()
        # The executor's own complaints (Nomad's executor.out); the task's output goes to the logs.
        own = open(task_dir / "executor.out", "ab")  # noqa: SIM115 - handed to the child
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "drover.client.executor", "--exit-file", str(exit_file),
                "--log-dir", str(log_dir), "--task", task.name, "--max-files", str(logs.max_files),
                "--max-file-size-mb", str(logs.max_file_size_mb), *(["--no-logs"] if logs.disabled else []),
                "--kill-signal", sig, "--kill-timeout", str(kill_timeout), "--", command, *args,
                cwd=work_dir, env={**os.environ, **env}, stdin=asyncio.subprocess.DEVNULL,
                stdout=own, stderr=own, start_new_session=True,
            )  # fmt: skip
        except OSError as e:
            raise StartError(f"failed to start the executor: {e}", recoverable=True) from e
        finally:
            own.close()
        return ProcessHandle(proc.pid, exit_file, proc)

    @staticmethod
    def reattach(state: dict[str, Any]) -> ProcessHandle:
        # A handle saved without its start time (an older agent's) is taken for the process
        # running under its pid now.
        start_time = state.get("start_time")
        return ProcessHandle(int(state["pid"]), Path(state["exit_file"]), start_time=start_time)


async def exec_process(
    command: list[str], cwd: Path, env: dict[str, str], timeout: float, keep: int
) -> ExecResult:
    """`command` as a process of its own group beside a raw_exec task (Nomad's executor
    ExecScript): the task's environment, its working directory, the last `keep` bytes of its
    output; killed with its group when it outlives `timeout`."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *command, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    except OSError as e:
        return ExecResult(error=str(e))
    tail = bytearray()

    async def drain() -> None:
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            tail.extend(chunk)
            del tail[:-keep]
        await proc.wait()

    try:
        await asyncio.wait_for(drain(), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        return ExecResult(exit_code=-1, output=bytes(tail), timed_out=True)
    code = proc.returncode if proc.returncode is not None else -1
    return ExecResult(exit_code=code, output=bytes(tail))


def driver_for(name: str, enabled: set[str], docker: Driver | None = None) -> Driver | None:
    """The enabled driver of that name (the agent's one docker driver, when it has one)."""
    if name not in enabled:
        return None
    if name == "docker":
        return docker
    return {"mock": MockDriver(), "raw_exec": RawExecDriver()}.get(name)  # type: ignore[return-value]
